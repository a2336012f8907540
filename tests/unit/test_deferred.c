/* SPDX-License-Identifier: MIT */
/* Deferred crypto jobs with helpers (overlay/loop/deferred.h): an owner
 * makes batches of jobs and runs them while three helper threads claim
 * what they can. Every job must run exactly once, be finished in the
 * order it was made with its key intact, and some must have been run by
 * the helpers. Run under ASan by `make unit` too. */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/loop/deferred.h"
#include "overlay/loop/pkt.h"

#define HELPERS  3u
#define JOBS     20000u
#define NOT_RUN  0x7fffffff

static struct deferred d;
static bool stop;
static unsigned helped[HELPERS];
static struct pkt_pool race_pool;
static uint64_t made, taken;

static void *helper(void *arg)
{
    unsigned *mine = arg;

    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE))
        __atomic_add_fetch(mine, deferred_help(&d), __ATOMIC_RELAXED);
    return NULL;
}

static unsigned helped_so_far(void)
{
    unsigned n = 0;

    for (unsigned i = 0; i < HELPERS; i++)
        n += __atomic_load_n(&helped[i], __ATOMIC_RELAXED);
    return n;
}

/* n jobs made and submitted, as a loop's handlers make them (the owner
 * has not run them yet). */
static void make_batch(unsigned n)
{
    for (unsigned i = 0; i < n && made < JOBS; i++) {
        struct crypto_job *job = deferred_reserve(&d);
        struct pkt *pkt = pkt_get(&race_pool);

        assert_non_null(pkt);
        memset(pkt->in, (int)made, 200);
        pkt->len = 200;
        pkt->seg_status[0] = NOT_RUN;
        *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = pkt, .seg_size = 100,
                                    .first_counter = made++ };
        memset(job->key, (int)(job->first_counter & 0xff), sizeof(job->key));
        deferred_submit(&d);
    }
}

/* The owner runs what is left from `from` on and takes every job, each in
 * order, with its key, having run. */
static void run_and_take(unsigned from)
{
    struct crypto_job done;

    deferred_run(&d, from, d.tail);
    while (deferred_take(&d, &done)) {
        assert_int_equal(done.first_counter, taken);
        for (size_t i = 0; i < sizeof(done.key); i++)
            assert_int_equal(done.key[i], taken & 0xff);
        /* It ran (garbage fails to open), both of its messages. */
        assert_int_not_equal(done.pkt->seg_status[0], NOT_RUN);
        assert_int_not_equal(done.pkt->seg_status[0], 0);
        assert_int_not_equal(done.pkt->seg_status[1], 0);
        pkt_put(&race_pool, done.pkt);
        taken++;
    }
    assert_int_equal(deferred_count(&d), 0);
    assert_int_equal(__atomic_load_n(&d.ready, __ATOMIC_ACQUIRE), 0);
}

static void test_helped_in_order(void **state)
{
    pthread_t t[HELPERS];
    unsigned batch = 1, total_helped;

    (void)state;
    made = taken = 0;
    assert_int_equal(deferred_init(&d), 0);
    assert_int_equal(pkt_pool_init(&race_pool, DEFERRED_DEPTH, 1), 0);
    for (unsigned i = 0; i < HELPERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, helper, &helped[i]), 0);

    /* Owner and helpers race for the jobs. */
    while (made < JOBS - DEFERRED_DEPTH) {
        unsigned from = d.tail, n = batch++ % DEFERRED_DEPTH + 1;   /* 1..DEFERRED_DEPTH */
        make_batch(n < JOBS - DEFERRED_DEPTH - made ? n : JOBS - DEFERRED_DEPTH - (unsigned)made);
        run_and_take(from);
    }
    /* However busy the machine, the helpers get a turn: the last batch is
     * left to them until they took one (10 s at most). */
    unsigned from = d.tail;
    make_batch(DEFERRED_DEPTH);
    for (unsigned waited = 0; !helped_so_far() && waited < 10000; waited++)
        usleep(1000);
    run_and_take(from);

    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (unsigned i = 0; i < HELPERS; i++)
        pthread_join(t[i], NULL);
    total_helped = helped_so_far();
    assert_int_equal(taken, JOBS);
    assert_true(total_helped > 0);
    assert_true(total_helped < JOBS);
    for (unsigned s = 0; s < DEFERRED_DEPTH; s++)
        assert_int_equal(d.state[s], DEFERRED_OWNED);
    deferred_free(&d);
    pkt_pool_destroy(&race_pool);
}

/* A helper never takes a slot that is being filled or finished: only
 * READY ones. */
static void test_helper_takes_only_ready(void **state)
{
    static struct pkt_pool pool;

    (void)state;
    assert_int_equal(deferred_init(&d), 0);
    assert_int_equal(pkt_pool_init(&pool, 4, 1), 0);
    struct crypto_job *job = deferred_reserve(&d);
    struct pkt *pkt = pkt_get(&pool);
    pkt->len = 100;
    pkt->seg_status[0] = NOT_RUN;
    *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = pkt, .seg_size = 100 };
    assert_int_equal(deferred_help(&d), 0);          /* reserved, not submitted */
    assert_int_equal(pkt->seg_status[0], NOT_RUN);
    deferred_submit(&d);
    /* A helper is running it: not to be taken yet. */
    d.state[0] = DEFERRED_RUNNING;
    struct crypto_job done;
    assert_false(deferred_take(&d, &done));
    d.state[0] = DEFERRED_READY;
    assert_int_equal(deferred_help(&d), 1);          /* ready: the helper runs it */
    assert_int_not_equal(pkt->seg_status[0], NOT_RUN);
    assert_int_equal(deferred_help(&d), 0);          /* once */
    deferred_run(&d, d.head, d.tail);                /* the owner finds it done */
    assert_true(deferred_take(&d, &done));
    assert_false(deferred_take(&d, &done));
    assert_int_equal(deferred_help(&d), 0);
    pkt_put(&pool, pkt);
    deferred_free(&d);
    pkt_pool_destroy(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_helper_takes_only_ready),
        cmocka_unit_test(test_helped_in_order),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
