/* SPDX-License-Identifier: MIT */
/* Tests of busy polling's window (overlay/loop/busy_poll.c) on a fake clock:
 * off, opened by a packet after an idle spell, extended by the answer,
 * closed by time, never opened inside a flow, and given up for a bulk
 * flow or for others who want the CPU, until the next idle spell. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "overlay/loop/busy_poll.h"

#define US 1000ull
#define MS (1000ull * US)
#define T0 (5000ull * MS)        /* any clock reading well after zero */

static void test_off_never_polls(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 0);
    busy_poll_packet(&bp, T0);
    assert_false(busy_poll_active(&bp, T0));
    assert_false(busy_poll_active(&bp, T0 + 1));
}

static void test_idle_daemon_does_not_poll(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 300);
    assert_false(busy_poll_active(&bp, 0));
    assert_false(busy_poll_active(&bp, T0));
}

static void test_request_opens_answer_extends(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 300);
    busy_poll_packet(&bp, T0);                    /* the first packet ever */
    assert_true(busy_poll_active(&bp, T0));
    assert_true(busy_poll_active(&bp, T0 + 299 * US));
    busy_poll_packet(&bp, T0 + 100 * US);         /* the answer */
    assert_true(busy_poll_active(&bp, T0 + 399 * US));
    assert_false(busy_poll_active(&bp, T0 + 400 * US));
}

static void test_window_closes_and_reopens_after_idle(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 300);
    busy_poll_packet(&bp, T0);
    assert_false(busy_poll_active(&bp, T0 + 300 * US));
    /* 0.5 ms later: no idle spell yet, the window stays shut. */
    busy_poll_packet(&bp, T0 + 500 * US);
    assert_false(busy_poll_active(&bp, T0 + 500 * US));
    /* 10 ms of quiet, then the next request: a new window. */
    busy_poll_packet(&bp, T0 + 10 * MS + 500 * US);
    assert_true(busy_poll_active(&bp, T0 + 10 * MS + 600 * US));
}

static void test_bulk_flow_stops_polling(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, 300);
    for (unsigned i = 0; i < BUSY_POLL_MAX_PACKETS; i++, t += 10 * US) {
        busy_poll_packet(&bp, t);
        assert_true(busy_poll_active(&bp, t));
    }
    busy_poll_packet(&bp, t);                     /* one too many */
    assert_false(busy_poll_active(&bp, t));
    /* The flow goes on without polling however long it lasts. */
    for (unsigned i = 0; i < 10000; i++, t += 10 * US) {
        busy_poll_packet(&bp, t);
        assert_false(busy_poll_active(&bp, t));
    }
    /* It ends; after an idle spell a request polls again. */
    t += BUSY_POLL_IDLE_NS + 1;
    busy_poll_packet(&bp, t);
    assert_true(busy_poll_active(&bp, t));
}

/* A packet of the network's upkeep (a discovery ping, a keepalive) that
 * ended an idle spell closes the window it opened; inside a window that
 * traffic opened, it changes nothing. */
static void test_upkeep_does_not_poll(void **state)
{
    struct busy_poll bp;

    (void)state;
    busy_poll_init(&bp, 300);
    busy_poll_packet(&bp, T0);
    busy_poll_unawaited(&bp);
    assert_false(busy_poll_active(&bp, T0 + 1));
    /* The next packet is no new idle spell's first: still no window. */
    busy_poll_packet(&bp, T0 + 100 * US);
    assert_false(busy_poll_active(&bp, T0 + 101 * US));
    /* After an idle spell, a request opens one; upkeep inside keeps it. */
    busy_poll_packet(&bp, T0 + 10 * MS);
    busy_poll_packet(&bp, T0 + 10 * MS + 50 * US);
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, T0 + 10 * MS + 100 * US));
}

static void test_largest_window(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_MAX);
    busy_poll_packet(&bp, T0);
    assert_true(busy_poll_active(&bp, T0 + CLUSTER_BUSY_POLL_MAX * US - 1));
    assert_false(busy_poll_active(&bp, T0 + CLUSTER_BUSY_POLL_MAX * US));
}

/* The default window spans echoes 10 ms apart (the round trips `make
 * bench` times): each opens it again after its idle spell, so the loop
 * polls from one to the next. */
static void test_default_window_spans_echoes(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (uint64_t t = T0; t < T0 + 200 * MS; t += 10 * MS) {
        busy_poll_packet(&bp, t);                 /* the request */
        busy_poll_packet(&bp, t + 100 * US);      /* its answer */
        assert_true(busy_poll_active(&bp, t + 10 * MS));
    }
}

/* Others' time on the loop's CPU (yields longer than a switch) closes the
 * window once it passes BUSY_POLL_WANTED_NS plus half the window's age:
 * the CPU is wanted, the loop sleeps. Short yields (nobody else ran) never
 * count, and the next idle spell's first packet opens a new window. */
static void test_wanted_cpu_closes_window(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, 20000);
    busy_poll_packet(&bp, t);
    for (unsigned i = 0; i < 1000; i++)           /* nobody else: 1000 short yields */
        busy_poll_yielded(&bp, t += BUSY_POLL_SWITCH_NS, BUSY_POLL_SWITCH_NS);
    assert_true(busy_poll_active(&bp, t));
    /* Someone has 30% of the time: polling goes on to the window's end. */
    for (unsigned i = 0; i < 90; i++)
        busy_poll_yielded(&bp, t += 100 * US, 30 * US);
    assert_true(busy_poll_active(&bp, t));
    /* In a new window someone has 70%: it closes within a millisecond. */
    uint64_t opened = t += 2 * BUSY_POLL_IDLE_NS;
    busy_poll_packet(&bp, t);
    while (busy_poll_active(&bp, t) && t < opened + 20 * MS)
        busy_poll_yielded(&bp, t += 100 * US, 70 * US);
    assert_false(busy_poll_active(&bp, t));
    assert_true(t < opened + MS);
    assert_true(busy_poll_window_end(&bp) <= t);
    /* A packet right after (no idle spell) does not reopen it... */
    busy_poll_packet(&bp, t + 100 * US);
    assert_false(busy_poll_active(&bp, t + 101 * US));
    /* ...the first after an idle spell does, with others' time at 0. */
    t += 10 * MS;
    busy_poll_packet(&bp, t);
    assert_true(busy_poll_active(&bp, t + 1));
    busy_poll_yielded(&bp, t + BUSY_POLL_WANTED_NS, BUSY_POLL_WANTED_NS);
    assert_true(busy_poll_active(&bp, t + BUSY_POLL_WANTED_NS));
    /* One long run of someone else right after it opened closes it. */
    busy_poll_yielded(&bp, t + 2 * BUSY_POLL_WANTED_NS, 2 * BUSY_POLL_WANTED_NS);
    assert_false(busy_poll_active(&bp, t + 2 * BUSY_POLL_WANTED_NS));
    /* Under always nothing closes: the daemon never sleeps. */
    busy_poll_init(&bp, BUSY_POLL_ALWAYS);
    busy_poll_packet(&bp, T0);
    busy_poll_yielded(&bp, T0 + 100 * MS, 100 * MS);
    assert_true(busy_poll_active(&bp, T0 + 100 * MS));
}

/* busy-poll = always: polls before any packet, through a bulk flow, after
 * upkeep and after any idle spell; nothing a packet does turns it off. */
static void test_always_polls(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, BUSY_POLL_ALWAYS);
    assert_true(busy_poll_active(&bp, 0));
    assert_true(busy_poll_active(&bp, T0));
    for (unsigned i = 0; i < 4 * BUSY_POLL_MAX_PACKETS; i++, t += 10 * US) {
        busy_poll_packet(&bp, t);
        assert_true(busy_poll_active(&bp, t));
    }
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, t));
    t += 100 * BUSY_POLL_IDLE_NS;
    assert_true(busy_poll_active(&bp, t));
    busy_poll_packet(&bp, t);
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, t + 1));
}

/* busy_poll_window_end is the end of what busy_poll_active says, whatever
 * the state, but under always (which polls outside the windows too): the
 * readers poll until then (io_lanes.h), so they must agree. */
static void agree_over(const struct busy_poll *bp, uint64_t from, uint64_t to)
{
    for (uint64_t t = from; t < to; t += 7 * US)
        assert_int_equal(busy_poll_active(bp, t), t < busy_poll_window_end(bp));
}

static void test_window_end_agrees_with_active(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 0);
    busy_poll_packet(&bp, T0);
    agree_over(&bp, T0, T0 + MS);
    busy_poll_init(&bp, 300);
    agree_over(&bp, T0, T0 + MS);
    busy_poll_packet(&bp, T0);
    agree_over(&bp, T0, T0 + MS);
    assert_int_equal(busy_poll_window_end(&bp), T0 + 300 * US);
    busy_poll_unawaited(&bp);
    agree_over(&bp, T0, T0 + MS);
}

/* Under always the loop polls everywhere, but the windows (for the
 * readers) work as a window does: opened after an idle spell, given up
 * for a bulk flow, closed by upkeep. */
static void test_always_keeps_windows_for_readers(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, BUSY_POLL_ALWAYS);
    assert_true(busy_poll_window_end(&bp) <= T0);
    busy_poll_packet(&bp, t);
    assert_int_equal(busy_poll_window_end(&bp), t + BUSY_POLL_ALWAYS_WINDOW_US * US);
    for (unsigned i = 0; i < 2 * BUSY_POLL_MAX_PACKETS; i++)
        busy_poll_packet(&bp, t += 10 * US);
    assert_true(busy_poll_window_end(&bp) <= t);     /* a bulk flow */
    assert_true(busy_poll_active(&bp, t));
    t += 2 * BUSY_POLL_IDLE_NS;
    busy_poll_packet(&bp, t);
    busy_poll_unawaited(&bp);                        /* upkeep */
    assert_true(busy_poll_window_end(&bp) <= t);
    assert_true(busy_poll_active(&bp, t));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_off_never_polls),
        cmocka_unit_test(test_upkeep_does_not_poll),
        cmocka_unit_test(test_idle_daemon_does_not_poll),
        cmocka_unit_test(test_request_opens_answer_extends),
        cmocka_unit_test(test_window_closes_and_reopens_after_idle),
        cmocka_unit_test(test_bulk_flow_stops_polling),
        cmocka_unit_test(test_largest_window),
        cmocka_unit_test(test_default_window_spans_echoes),
        cmocka_unit_test(test_wanted_cpu_closes_window),
        cmocka_unit_test(test_always_polls),
        cmocka_unit_test(test_window_end_agrees_with_active),
        cmocka_unit_test(test_always_keeps_windows_for_readers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
