/* SPDX-License-Identifier: MIT */
/* Tests of the receiver-index table (overlay/engine/model/index.c): add, find, remove,
 * full table, and a long random run against a plain array as the model,
 * which exercises removal from the middle of probe runs; readers without
 * the lock while the table changes and grows (also under ThreadSanitizer:
 * TSAN_TESTS). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>

#include <cmocka.h>
#include <sodium.h>

#include "overlay/engine/model/index.h"

static void test_add_find_remove(void **state)
{
    (void)state;
    struct index_table t;
    struct peer *peer = (struct peer *)0x1000;
    struct noise_keypair *kp = (struct noise_keypair *)0x2000;

    assert_int_equal(index_table_init(&t, 4), 0);
    uint32_t a = index_add(&t, peer, NULL), b = index_add(&t, peer, kp);
    assert_int_not_equal(a, 0);
    assert_int_not_equal(b, 0);
    assert_int_not_equal(a, b);
    assert_ptr_equal(index_find(&t, a)->peer, peer);
    assert_null(index_find(&t, a)->keypair);
    assert_ptr_equal(index_find(&t, b)->keypair, kp);
    assert_null(index_find(&t, 0));
    index_remove(&t, a);
    assert_null(index_find(&t, a));
    assert_non_null(index_find(&t, b));
    index_remove(&t, a);            /* twice: nothing happens */
    assert_int_equal(t.used, 1);
    index_table_destroy(&t);
}

static void test_full_table_refuses(void **state)
{
    (void)state;
    struct index_table t;
    assert_int_equal(index_table_init(&t, 8), 0);
    size_t added = 0;
    while (index_add(&t, NULL, NULL))
        added++;
    /* Sized for at least 8, never more than half the slots. */
    assert_true(added >= 8);
    assert_true(2 * added <= t.cap);
    index_table_destroy(&t);
}

/* A table with few slots, so runs collide and wrap; every operation is
 * checked against a model array of the live indices. */
static void test_random_against_model(void **state)
{
    (void)state;
    enum { LIVE = 24, ROUNDS = 200000 };
    struct index_table t;
    uint32_t live[LIVE] = { 0 };
    assert_int_equal(index_table_init(&t, LIVE), 0);
    srand(7);
    for (int r = 0; r < ROUNDS; r++) {
        int i = rand() % LIVE;
        if (live[i]) {
            index_remove(&t, live[i]);
            assert_null(index_find(&t, live[i]));
            live[i] = 0;
        } else {
            live[i] = index_add(&t, (struct peer *)(uintptr_t)(i + 1), NULL);
            assert_int_not_equal(live[i], 0);
        }
        if (r % 97 == 0)
            for (int k = 0; k < LIVE; k++)
                if (live[k]) {
                    struct index_entry *e = index_find(&t, live[k]);
                    assert_non_null(e);
                    assert_ptr_equal(e->peer, (struct peer *)(uintptr_t)(k + 1));
                }
    }
    index_table_destroy(&t);
}

/* --- readers without the lock (index.h; issue 58) ------------------------------- */

enum { RD_LIVE = 12, RD_READERS = 2, RD_ROUNDS = 20000, RD_MAGIC = 0x6b657973 };

/* Stands for a keypair: retired through the qsbr as peer.c retires its
 * keypairs, and wiped when freed, so that a reader that reads one freed
 * too early sees it (in a plain build too; ASan and TSan say where). */
struct fake_kp {
    uint32_t index, magic;
    struct qsbr_node retired;
};

struct readers {
    struct index_table t;
    struct qsbr q;
    uint32_t live[RD_LIVE];   /* atomic: the indices a reader may look for */
    bool stop;                /* atomic */
    unsigned long found, bad;  /* atomic */
};

static void fake_kp_free(struct qsbr_node *n)
{
    struct fake_kp *k = (struct fake_kp *)((char *)n - offsetof(struct fake_kp, retired));

    k->index = k->magic = 0;
    free(k);
}

static struct peer *slot_peer(unsigned j)
{
    return (struct peer *)(uintptr_t)(0x1000 + 16 * j);
}

struct reader_arg {
    struct readers *r;
    unsigned k;
};

/* Looks up what the writer published, in turns: whatever it finds is
 * whole (its index, its peer), and its keypair stays readable, the same,
 * until the turn ends. */
static void *reader(void *arg)
{
    struct reader_arg *a = arg;
    struct readers *r = a->r;
    unsigned seed = a->k, found = 0, bad = 0;

    while (!__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE)) {
        qsbr_online(&r->q, a->k);
        for (int n = 0; n < 32; n++) {
            unsigned j = rand_r(&seed) % RD_LIVE;
            uint32_t idx = __atomic_load_n(&r->live[j], __ATOMIC_ACQUIRE);
            struct index_entry *e = index_find(&r->t, idx);
            if (!e)
                continue;
            const struct fake_kp *kp = (const struct fake_kp *)index_keypair(e);
            found += kp != NULL;
            for (int spin = 0; spin < 4; spin++) {   /* a while: the writer goes on */
                bad += __atomic_load_n(&e->index, __ATOMIC_RELAXED) != idx ||
                       __atomic_load_n(&e->peer, __ATOMIC_RELAXED) != slot_peer(j);
                if (kp)
                    bad += __atomic_load_n(&kp->index, __ATOMIC_RELAXED) != idx ||
                           __atomic_load_n(&kp->magic, __ATOMIC_RELAXED) != RD_MAGIC;
                sched_yield();
            }
        }
        qsbr_offline(&r->q, a->k);
    }
    __atomic_add_fetch(&r->found, found, __ATOMIC_RELAXED);
    __atomic_add_fetch(&r->bad, bad, __ATOMIC_RELAXED);
    return NULL;
}

/* The writer, as handshakes and peer.c under the engine lock: an index
 * for a handshake, then its keypair named; an index given back and its
 * keypair retired; the table grown once; reclaimed as loop 0 does. */
static void test_readers_without_the_lock(void **state)
{
    (void)state;
    struct readers *r = calloc(1, sizeof(*r));
    struct fake_kp *kps[RD_LIVE] = { 0 };
    struct reader_arg args[RD_READERS];
    pthread_t th[RD_READERS];

    assert_non_null(r);
    assert_int_equal(index_table_init(&r->t, RD_LIVE), 0);
    r->t.qsbr = &r->q;
    for (unsigned k = 0; k < RD_READERS; k++) {
        args[k] = (struct reader_arg){ r, k + 1 };   /* loop 0 is the writer */
        assert_int_equal(pthread_create(&th[k], NULL, reader, &args[k]), 0);
    }
    srand(11);
    for (int round = 0; round < RD_ROUNDS; round++) {
        unsigned j = (unsigned)rand() % RD_LIVE;
        uint32_t old = r->live[j];
        if (old) {
            __atomic_store_n(&r->live[j], 0, __ATOMIC_RELEASE);
            index_remove(&r->t, old);
            qsbr_retire(&r->q, &kps[j]->retired, fake_kp_free);
            kps[j] = NULL;
        } else {
            uint32_t idx = index_add(&r->t, slot_peer(j), NULL);
            assert_int_not_equal(idx, 0);
            __atomic_store_n(&r->live[j], idx, __ATOMIC_RELEASE);   /* a handshake's, first */
            kps[j] = malloc(sizeof(*kps[j]));
            assert_non_null(kps[j]);
            kps[j]->index = idx;
            kps[j]->magic = RD_MAGIC;
            index_set_keypair(index_find(&r->t, idx), (struct noise_keypair *)kps[j]);
        }
        if (round == RD_ROUNDS / 2)
            assert_int_equal(index_table_reserve(&r->t, 4 * RD_LIVE), 0);
        if (round % 8 == 0)
            qsbr_reclaim(&r->q);
        if (round % 64 == 0)
            sched_yield();
    }
    __atomic_store_n(&r->stop, true, __ATOMIC_RELEASE);
    for (unsigned k = 0; k < RD_READERS; k++)
        pthread_join(th[k], NULL);
    assert_int_equal(r->bad, 0);
    assert_true(r->found > 0);
    assert_true(r->q.freed > 0);   /* retired things were freed while they read */
    qsbr_free_all(&r->q);
    for (unsigned j = 0; j < RD_LIVE; j++)
        free(kps[j]);
    index_table_destroy(&r->t);
    free(r);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_find_remove),
        cmocka_unit_test(test_full_table_refuses),
        cmocka_unit_test(test_random_against_model),
        cmocka_unit_test(test_readers_without_the_lock),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
