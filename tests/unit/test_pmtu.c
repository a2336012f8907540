/* SPDX-License-Identifier: MIT */
/* Tests of the path MTU search (overlay/disco/pmtu.c) on a fake clock, against a
 * simulated path that answers probes up to a size: wide paths confirm the
 * full size in one probe, narrow ones converge to within PMTU_PRECISION
 * below the path's limit in a bounded number of probes and time, the path
 * is used at base until then, lost answers are retried, the size in use
 * is confirmed and a path that narrowed falls back, the raise timer
 * finds a grown path, and round trips
 * longer than the timeout stretch it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "crypto/wg_const.h"
#include "overlay/disco/pmtu.h"

#define MS (WG_NSEC_PER_SEC / 1000u)
#define BASE 1200u
#define MAX  1420u

/* A path that carries inner packets up to `limit`, and loses the answer
 * to the first `lose` probes. Runs the search until it ends or `until`;
 * returns the probes sent and leaves the clock in *now. */
struct sim {
    uint16_t limit;
    unsigned lose, probes, id;
    uint64_t rtt;
};

static unsigned run(struct pmtu *m, struct sim *s, uint64_t *now, uint64_t until)
{
    while (*now < until && (!m->found || m->probe_size)) {
        uint64_t next = pmtu_next(m);
        if (!next || next > until)
            break;
        if (next > *now)
            *now = next;
        uint16_t size = pmtu_due(m, ++s->id, s->rtt, *now);
        if (!size)
            continue;
        s->probes++;
        if (size <= s->limit && !(s->lose && s->lose--)) {
            *now += s->rtt;
            assert_true(pmtu_acked(m, s->id, *now));
        }
    }
    return s->probes;
}

static void test_wide_path_one_probe(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1500, .rtt = MS };
    uint64_t now = 1000;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(m.current, BASE);       /* used at base until confirmed */
    assert_int_equal(run(&m, &s, &now, now + WG_NSEC_PER_SEC), 1);
    assert_true(m.found);
    assert_int_equal(m.current, MAX);
    /* Nothing more until the confirmation timer; the raise is later. */
    assert_int_equal(pmtu_next(&m), now + PMTU_CONFIRM_SEC * WG_NSEC_PER_SEC);
    assert_int_equal(m.raise_ns, now + PMTU_RAISE_SEC * WG_NSEC_PER_SEC);
    assert_int_equal(pmtu_due(&m, 99, MS, now + WG_NSEC_PER_SEC), 0);
}

static void test_narrow_path_converges(void **state)
{
    (void)state;
    for (uint16_t limit = BASE; limit <= MAX; limit += 7) {
        struct pmtu m = { 0 };
        struct sim s = { .limit = limit, .rtt = MS };
        uint64_t start = 1, now = start;

        pmtu_reset(&m, BASE, MAX, now);
        unsigned probes = run(&m, &s, &now, now + 60 * WG_NSEC_PER_SEC);
        assert_true(m.found);
        assert_true(m.current <= limit);
        if (limit < MAX)
            assert_true(m.current + PMTU_PRECISION > limit);
        /* max, then about log2(220 / 16) = 4 halvings, each at most
         * PMTU_PROBE_TRIES probes when it fails. */
        assert_true(probes <= 5 * PMTU_PROBE_TRIES);
        assert_true(now - start <= 5 * PMTU_PROBE_TRIES * PMTU_PROBE_TIMEOUT_MS * MS);
    }
}

static void test_base_until_found(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    uint64_t now = 5;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(pmtu_due(&m, 1, MS, now), MAX);
    /* The full size goes unanswered: still base meanwhile. */
    for (unsigned t = 1; t < PMTU_PROBE_TRIES; t++) {
        now = pmtu_next(&m);
        assert_int_equal(pmtu_due(&m, 1 + t, MS, now), MAX);
        assert_int_equal(m.current, BASE);
    }
    now = pmtu_next(&m);
    uint16_t next = pmtu_due(&m, 10, MS, now);
    assert_true(next > BASE && next < MAX);
    assert_int_equal(m.current, BASE);
    /* A stale answer (an earlier id) confirms nothing. */
    assert_false(pmtu_acked(&m, 2, now));
    assert_true(pmtu_acked(&m, 10, now));
    assert_int_equal(m.current, BASE);   /* the search is not over */
}

static void test_lost_answers_retried(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1500, .lose = PMTU_PROBE_TRIES - 1, .rtt = MS };
    uint64_t now = 1;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(run(&m, &s, &now, now + WG_NSEC_PER_SEC * 10), PMTU_PROBE_TRIES);
    assert_int_equal(m.current, MAX);
}

static void test_raise_finds_grown_path(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1300, .rtt = MS };
    uint64_t now = 1;

    pmtu_reset(&m, BASE, MAX, now);
    run(&m, &s, &now, now + 60 * WG_NSEC_PER_SEC);
    uint16_t narrow = m.current;
    assert_true(narrow <= 1300 && narrow + PMTU_PRECISION > 1300);
    /* The path grows; before the raise timer only the size in use is
     * probed, every PMTU_CONFIRM_SEC. */
    s.limit = 1500;
    assert_int_equal(pmtu_due(&m, 1000, MS, now + WG_NSEC_PER_SEC), 0);
    unsigned confirms = 0, id = 1000;
    uint16_t size;
    for (;;) {
        now = pmtu_next(&m);
        size = pmtu_due(&m, ++id, MS, now);
        if (size != narrow)
            break;
        confirms++;
        assert_true(pmtu_acked(&m, id, now + MS));
        assert_int_equal(m.current, narrow);
    }
    assert_int_equal(confirms, PMTU_RAISE_SEC / PMTU_CONFIRM_SEC - 1);
    assert_int_equal(size, MAX);
    assert_int_equal(m.current, narrow);     /* kept while the search runs */
    assert_true(pmtu_acked(&m, id, now + MS));
    assert_int_equal(m.current, MAX);
}

static void test_narrowed_path_falls_back(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1500, .rtt = MS };
    uint64_t now = 1;

    pmtu_reset(&m, BASE, MAX, now);
    run(&m, &s, &now, now + WG_NSEC_PER_SEC);
    assert_int_equal(m.current, MAX);
    /* A route changes: the path carries 1300 from now on, and says nothing. */
    s.limit = 1300;
    uint64_t changed = now;
    now = pmtu_next(&m);
    assert_int_equal(now, changed + PMTU_CONFIRM_SEC * WG_NSEC_PER_SEC);
    for (unsigned i = 0; i < PMTU_PROBE_TRIES; i++) {
        assert_int_equal(pmtu_due(&m, 500 + i, MS, now), MAX);   /* lost */
        assert_int_equal(m.current, MAX);
        now = pmtu_next(&m);
    }
    /* Unanswered: back to base at once, and a search below MAX. */
    uint16_t size = pmtu_due(&m, 600, MS, now);
    assert_int_equal(m.current, BASE);
    assert_false(m.found);
    assert_true(size > BASE && size < MAX);
    assert_true(now - changed <= PMTU_CONFIRM_SEC * WG_NSEC_PER_SEC +
                                 PMTU_PROBE_TRIES * PMTU_PROBE_TIMEOUT_MS * MS);
    if (size <= s.limit)
        assert_true(pmtu_acked(&m, 600, now + MS));
    s.id = 600;
    run(&m, &s, &now, now + 60 * WG_NSEC_PER_SEC);
    assert_true(m.found);
    assert_true(m.current <= 1300 && m.current + PMTU_PRECISION > 1300);
}

/* A peer's own pace: its confirmations come spread/1024 of the period
 * later, and a new path keeps the spread. */
static void test_confirm_spread(void **state)
{
    (void)state;
    struct pmtu m = { .spread = 128 };
    struct sim s = { .limit = 1500, .rtt = MS };
    uint64_t now = 1;
    const uint64_t period = PMTU_CONFIRM_SEC * WG_NSEC_PER_SEC;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(m.spread, 128);
    run(&m, &s, &now, now + WG_NSEC_PER_SEC);
    assert_true(m.found);
    assert_int_equal(pmtu_next(&m), now + period + period / 1024 * 128);
    now = pmtu_next(&m);
    assert_int_equal(pmtu_due(&m, 7, MS, now), MAX);   /* the confirmation */
    assert_true(pmtu_acked(&m, 7, now + MS));
    assert_int_equal(pmtu_next(&m), now + MS + period + period / 1024 * 128);
}

static void test_confirm_needs_nothing_at_base(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1000, .rtt = MS };
    uint64_t now = 1;

    /* A path that carries nothing above base: nothing to confirm. */
    pmtu_reset(&m, BASE, MAX, now);
    run(&m, &s, &now, now + 60 * WG_NSEC_PER_SEC);
    assert_true(m.found);
    assert_int_equal(m.current, BASE);
    now = pmtu_next(&m);
    assert_int_equal(pmtu_due(&m, 1, MS, now), 0);
    assert_true(pmtu_next(&m) > now);
}

static void test_long_rtt_stretches_timeout(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    uint64_t now = 1, rtt = 200 * MS;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(pmtu_due(&m, 1, rtt, now), MAX);
    assert_int_equal(pmtu_next(&m), now + 3 * rtt);
    /* Not due before that. */
    assert_int_equal(pmtu_due(&m, 2, rtt, now + 2 * rtt), 0);
}

static void test_base_above_max(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    uint64_t now = 1;

    /* ddp0's MTU below an outer 1280: nothing to search. */
    pmtu_reset(&m, BASE, 1100, now);
    assert_int_equal(m.current, 1100);
    assert_true(m.found);
    assert_int_equal(pmtu_due(&m, 1, MS, now), 0);
}

/* The network's word (the kernel's MTU for the destination, from ICMP):
 * tried next, and found in one probe when right. */
static void test_told_by_the_network(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1340, .rtt = MS };
    uint64_t now = 1000;

    pmtu_reset(&m, BASE, MAX, now);
    assert_int_equal(pmtu_due(&m, ++s.id, MS, now), MAX);      /* the full size: lost */
    pmtu_told(&m, 1340, now + MS);
    assert_int_equal(m.hi, 1340);
    assert_int_equal(m.probe_size, 1340);
    assert_int_equal(run(&m, &s, &now, now + WG_NSEC_PER_SEC), 1);
    assert_true(m.found);
    assert_int_equal(m.current, 1340);
    /* The network's word is not kept for long: the path may grow. */
    assert_int_equal(m.raise_ns, now + PMTU_TOLD_RAISE_SEC * WG_NSEC_PER_SEC);
    /* Said again, or larger: nothing changes. */
    pmtu_told(&m, 1340, now);
    pmtu_told(&m, 1400, now);
    assert_int_equal(m.current, 1340);
    assert_int_equal(m.probe_size, 0);
}

/* The network's word is checked like any other: wrong (the path carries
 * less still), the search goes on below it; below base, base is tried;
 * narrower than the size in use, that size stops being used at once. */
static void test_told_is_checked(void **state)
{
    (void)state;
    struct pmtu m = { 0 };
    struct sim s = { .limit = 1300, .rtt = MS };
    uint64_t now = 1000;

    pmtu_reset(&m, BASE, MAX, now);
    pmtu_told(&m, 1360, now);
    run(&m, &s, &now, now + 10 * WG_NSEC_PER_SEC);
    assert_true(m.found);
    assert_true(m.current <= 1300 && m.current > 1300 - PMTU_PRECISION);
    /* A forged "1000": base is what it can cost. */
    pmtu_told(&m, 1000, now);
    assert_int_equal(m.hi, BASE);
    assert_int_equal(m.current, BASE);
    assert_int_equal(m.probe_size, BASE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_wide_path_one_probe),
        cmocka_unit_test(test_narrow_path_converges),
        cmocka_unit_test(test_base_until_found),
        cmocka_unit_test(test_lost_answers_retried),
        cmocka_unit_test(test_raise_finds_grown_path),
        cmocka_unit_test(test_narrowed_path_falls_back),
        cmocka_unit_test(test_confirm_spread),
        cmocka_unit_test(test_confirm_needs_nothing_at_base),
        cmocka_unit_test(test_long_rtt_stretches_timeout),
        cmocka_unit_test(test_base_above_max),
        cmocka_unit_test(test_told_by_the_network),
        cmocka_unit_test(test_told_is_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
