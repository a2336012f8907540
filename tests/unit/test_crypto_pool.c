/* SPDX-License-Identifier: MIT */
/* Tests of the crypto workers (overlay/loop/crypto_pool.c): jobs come back in
 * the order they were handed out whatever order the workers finish them,
 * counters reserved on the caller's thread are used exactly once across
 * concurrent workers, and messages opened concurrently pass the replay
 * check once each, in order, and a second time never. */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/replay.h"
#include "crypto/transport.h"
#include "overlay/loop/crypto_pool.h"
#include "overlay/loop/pkt.h"

#define JOBS      48u
#define SEGS      40u
#define SEG_LEN   1380u
#define THREADS   4u
#define ROUNDS    6

struct fixture {
    struct pkt_pool pool;
    struct noise_keypair tx, rx;
    struct pkt *pkts[JOBS];
};

static void fill_segments(struct pkt *p, unsigned job)
{
    p->nseg = SEGS;
    p->stride = (uint32_t)transport_sealed_len(SEG_LEN);
    for (unsigned i = 0; i < SEGS; i++) {
        p->seg_len[i] = SEG_LEN;
        memset(pkt_seg_plain(p, i), (int)(job * SEGS + i), SEG_LEN);
    }
}

/* Takes back every job, waiting for the workers; checks the order. */
static void take_all(struct crypto_pool *cp, struct crypto_job **order, unsigned n)
{
    unsigned got = 0;
    while (got < n) {
        struct crypto_job *job = crypto_pool_take(cp);
        if (!job) {
            struct pollfd pfd = { cp->event_fd, POLLIN, 0 };
            poll(&pfd, 1, 1000);
            uint64_t v;
            (void)!read(cp->event_fd, &v, sizeof(v));
            continue;
        }
        assert_ptr_equal(job->pkt, order[got]->pkt);
        got++;
    }
}

static void seal_round(struct fixture *f, struct crypto_pool *cp)
{
    struct crypto_job *order[JOBS];
    for (unsigned j = 0; j < JOBS; j++) {
        uint64_t first;
        fill_segments(f->pkts[j], j);
        assert_int_equal(transport_reserve(&f->tx, SEGS, 1, &first), 0);
        struct crypto_job *job = crypto_pool_reserve(cp);   /* JOBS < the depth */
        assert_non_null(job);
        *job = (struct crypto_job){ .kind = CRYPTO_SEAL, .pkt = f->pkts[j],
                                    .remote_index = 7, .first_counter = first };
        memcpy(job->key, f->tx.send_key, WG_KEY_LEN);
        order[j] = job;
        crypto_pool_submit(cp, job);
    }
    /* Order checked through the pkt each slot names. */
    struct crypto_job copy[JOBS], *ptrs[JOBS];
    for (unsigned j = 0; j < JOBS; j++) {
        copy[j] = *order[j];
        ptrs[j] = &copy[j];
    }
    take_all(cp, ptrs, JOBS);
}

/* Opens what seal_round made: one job per pkt, the datagrams laid back to
 * back as a GRO receive would have them. */
static void open_round(struct fixture *f, struct crypto_pool *cp, bool expect_replay)
{
    struct crypto_job copy[JOBS], *ptrs[JOBS];
    uint32_t stride = f->pkts[0]->stride;
    for (unsigned j = 0; j < JOBS; j++) {
        struct pkt *p = f->pkts[j];
        if (!expect_replay) {
            memcpy(p->in, p->area, (size_t)SEGS * stride);
            p->len = SEGS * stride;
        }
        struct crypto_job *job = crypto_pool_reserve(cp);
        assert_non_null(job);
        *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = p, .seg_size = stride };
        memcpy(job->key, f->rx.recv_key, WG_KEY_LEN);
        copy[j] = *job;
        ptrs[j] = &copy[j];
        crypto_pool_submit(cp, job);
    }
    take_all(cp, ptrs, JOBS);
    /* Back on "the loop": replay checks in order. */
    for (unsigned j = 0; j < JOBS; j++) {
        struct pkt *p = f->pkts[j];
        for (unsigned i = 0; i < SEGS; i++) {
            assert_int_equal(p->seg_status[i], 0);
            assert_int_equal(p->seg_len[i], transport_padded_len(SEG_LEN));
            int accepted = transport_accept(&f->rx, p->seg_counter[i]);
            assert_int_equal(accepted, expect_replay ? -WG_EREPLAY : 0);
        }
    }
}

static void test_order_counters_and_replay(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    struct crypto_pool cp;
    assert_non_null(f);
    assert_int_equal(pkt_pool_init(&f->pool, JOBS, 1), 0);
    for (unsigned j = 0; j < JOBS; j++)
        f->pkts[j] = pkt_get(&f->pool);
    randombytes_buf(f->tx.send_key, WG_KEY_LEN);
    memcpy(f->rx.recv_key, f->tx.send_key, WG_KEY_LEN);
    f->tx.birth_ns = f->rx.birth_ns = 1;
    replay_init(&f->rx.replay);
    assert_int_equal(crypto_pool_start(&cp, THREADS), 0);
    assert_int_equal(cp.n_threads, THREADS);

    for (int r = 0; r < ROUNDS; r++) {
        seal_round(f, &cp);
        /* Every counter of the round, exactly once, in job order. */
        for (unsigned j = 0; j < JOBS; j++)
            for (unsigned i = 0; i < SEGS; i++) {
                const uint8_t *msg = pkt_slot(f->pkts[j], i);
                uint64_t c = 0;
                for (int b = 7; b >= 0; b--)
                    c = c << 8 | msg[8 + b];
                assert_int_equal(c, (uint64_t)r * JOBS * SEGS + j * SEGS + i);
            }
        open_round(f, &cp, false);
        for (unsigned j = 0; j < JOBS; j++)
            for (unsigned i = 0; i < SEGS; i++) {
                /* Plaintext intact after a concurrent seal and open. */
                const uint8_t *plain = f->pkts[j]->in + (size_t)i * f->pkts[j]->stride +
                                       WG_TRANSPORT_HEADER_LEN;
                for (unsigned k = 0; k < SEG_LEN; k += 97)
                    assert_int_equal(plain[k], (uint8_t)(j * SEGS + i));
            }
    }
    assert_int_equal(f->tx.send_counter, (uint64_t)ROUNDS * JOBS * SEGS);
    /* The same messages again (re-sealed contents are gone; reopen the
     * ciphertexts kept in `area`): authentic, but replays. */
    for (unsigned j = 0; j < JOBS; j++) {
        memcpy(f->pkts[j]->in, f->pkts[j]->area, (size_t)SEGS * f->pkts[j]->stride);
        f->pkts[j]->len = SEGS * f->pkts[j]->stride;
    }
    open_round(f, &cp, true);
    crypto_pool_stop(&cp);
    pkt_pool_destroy(&f->pool);
    free(f);
}

static void test_no_threads_means_inline(void **state)
{
    (void)state;
    struct crypto_pool cp;
    assert_int_equal(crypto_pool_start(&cp, 0), 0);
    assert_null(crypto_pool_reserve(&cp));
    assert_null(crypto_pool_take(&cp));
    crypto_pool_stop(&cp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_counters_and_replay),
        cmocka_unit_test(test_no_threads_means_inline),
    };
    if (crypto_core_init())
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
