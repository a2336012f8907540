/* SPDX-License-Identifier: MIT */
/* Tests of the sockets' queue management (overlay/loop/codel.c) on a fake
 * clock: off says nothing; a wait below target, or above it for less than
 * an interval, says nothing; a standing wait signals once, then ever
 * closer together (interval / sqrt(count)); a wait that falls stops it;
 * coming back soon resumes near the old rate. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "overlay/loop/codel.h"

#define US 1000ull
#define MS (1000ull * US)
#define T0 (5000ull * MS)

/* Receives every `step` ns from `from` to `to` (excluded), each having
 * waited `wait`: how many signalled, and when the first and last did. */
struct run {
    unsigned signals;
    uint64_t first, last;
};

static struct run feed(struct codel *c, uint64_t from, uint64_t to, uint64_t step,
                       uint64_t wait)
{
    struct run r = { 0 };

    for (uint64_t t = from; t < to; t += step)
        if (codel_signal(c, wait, t)) {
            if (!r.signals++)
                r.first = t;
            r.last = t;
        }
    return r;
}

static void test_off_never_signals(void **state)
{
    struct codel c;
    (void)state;

    codel_init(&c, 0, CODEL_INTERVAL_NS);
    assert_int_equal(feed(&c, T0, T0 + 2000 * MS, 100 * US, 500 * MS).signals, 0);
}

static void test_short_waits_never_signal(void **state)
{
    struct codel c;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    assert_int_equal(feed(&c, T0, T0 + 2000 * MS, 100 * US, CODEL_TARGET_NS - 1).signals, 0);
}

static void test_a_spike_shorter_than_an_interval_is_not_a_queue(void **state)
{
    struct codel c;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    /* 99 ms of long waits, one short one, 99 ms more: never a whole
     * interval above target. */
    assert_int_equal(feed(&c, T0, T0 + 99 * MS, 100 * US, 50 * MS).signals, 0);
    assert_false(codel_signal(&c, 1 * MS, T0 + 99 * MS));
    assert_int_equal(feed(&c, T0 + 99 * MS + 100 * US, T0 + 198 * MS, 100 * US, 50 * MS).signals,
                     0);
}

static void test_standing_queue_signals_ever_closer(void **state)
{
    struct codel c;
    uint64_t prev = 0, gap_prev = UINT64_MAX;
    unsigned n = 0;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    for (uint64_t t = T0; t < T0 + 1000 * MS; t += 10 * US) {
        if (!codel_signal(&c, 50 * MS, t))
            continue;
        if (!n++) {
            /* The first after one whole interval above target. */
            assert_true(t >= T0 + CODEL_INTERVAL_NS);
            assert_true(t < T0 + CODEL_INTERVAL_NS + 20 * US);
        } else {
            uint64_t gap = t - prev;
            /* interval / sqrt(signals before), to the 10 µs the receives
             * come at */
            assert_true(gap <= codel_gap(CODEL_INTERVAL_NS, n - 1) + 10 * US);
            assert_true(gap + 10 * US >= codel_gap(CODEL_INTERVAL_NS, n - 1));
            assert_true(gap <= gap_prev);
            gap_prev = gap;
        }
        prev = t;
    }
    /* 900 ms after the first: the sum of 100/sqrt(k) ms, about
     * 200 sqrt(m) - 146, passes 900 near m = 27. */
    assert_in_range(n, 25, 29);
}

static void test_falling_wait_stops_signals(void **state)
{
    struct codel c;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    assert_true(feed(&c, T0, T0 + 300 * MS, 100 * US, 50 * MS).signals > 0);
    assert_false(codel_signal(&c, 1 * MS, T0 + 300 * MS));
    assert_int_equal(feed(&c, T0 + 301 * MS, T0 + 2000 * MS, 100 * US, 1 * MS).signals, 0);
}

static void test_back_soon_resumes_near_the_old_rate(void **state)
{
    struct codel c, fresh;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    codel_init(&fresh, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    /* Long enough to reach count ~20, then a dip, then the queue again. */
    assert_true(feed(&c, T0, T0 + 1000 * MS, 100 * US, 50 * MS).signals > 10);
    assert_false(codel_signal(&c, 0, T0 + 1000 * MS));
    struct run again = feed(&c, T0 + 1001 * MS, T0 + 1401 * MS, 100 * US, 50 * MS);
    struct run first = feed(&fresh, T0, T0 + 400 * MS, 100 * US, 50 * MS);
    /* Both wait an interval; the one back soon then signals faster. */
    assert_true(again.signals > first.signals);
}

static void test_a_late_read_does_not_burst(void **state)
{
    struct codel c;
    (void)state;

    codel_init(&c, CODEL_TARGET_NS, CODEL_INTERVAL_NS);
    assert_true(feed(&c, T0, T0 + 200 * MS, 100 * US, 50 * MS).signals > 0);
    /* The loop was away for a second: one signal, not a catch-up. */
    assert_true(codel_signal(&c, 50 * MS, T0 + 1200 * MS));
    assert_false(codel_signal(&c, 50 * MS, T0 + 1200 * MS + 100 * US));
}

static void test_gap_is_interval_over_root_count(void **state)
{
    (void)state;
    assert_int_equal(codel_gap(100 * MS, 1), 100 * MS);
    assert_int_equal(codel_gap(100 * MS, 0), 100 * MS);
    assert_int_equal(codel_gap(100 * MS, 4), 50 * MS);
    assert_int_equal(codel_gap(100 * MS, 100), 10 * MS);
    assert_in_range(codel_gap(100 * MS, 2), 70710000, 70720000);
    assert_true(codel_gap(100 * MS, UINT32_MAX) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_never_signals),
        cmocka_unit_test(test_short_waits_never_signal),
        cmocka_unit_test(test_a_spike_shorter_than_an_interval_is_not_a_queue),
        cmocka_unit_test(test_standing_queue_signals_ever_closer),
        cmocka_unit_test(test_falling_wait_stops_signals),
        cmocka_unit_test(test_back_soon_resumes_near_the_old_rate),
        cmocka_unit_test(test_a_late_read_does_not_burst),
        cmocka_unit_test(test_gap_is_interval_over_root_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
