/* SPDX-License-Identifier: MIT */
/* Tests of busy polling's window (overlay/loop/busy_poll.c) on a fake clock:
 * off, opened by a packet after an idle spell, extended by the answer,
 * closed by time, never opened inside a flow, given up for others who
 * want the CPU until the next idle spell, and for a flow (bulk, or a slow
 * stream whose every gap is an idle spell) until it has ended; echoes
 * 10 ms apart keep it for as long as they last, and a request-response
 * exchange at any rate (answers are not metered), but not bulk both ways. */
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
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);
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
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);                    /* the first packet ever */
    assert_true(busy_poll_active(&bp, T0));
    assert_true(busy_poll_active(&bp, T0 + 299 * US));
    busy_poll_packet(&bp, T0 + 100 * US, BUSY_POLL_OUT);         /* the answer */
    assert_true(busy_poll_active(&bp, T0 + 399 * US));
    assert_false(busy_poll_active(&bp, T0 + 400 * US));
}

static void test_window_closes_and_reopens_after_idle(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, 300);
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, T0 + 300 * US));
    /* 0.5 ms later: no idle spell yet, the window stays shut. */
    busy_poll_packet(&bp, T0 + 500 * US, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, T0 + 500 * US));
    /* 10 ms of quiet, then the next request: a new window. */
    busy_poll_packet(&bp, T0 + 10 * MS + 500 * US, BUSY_POLL_IN);
    assert_true(busy_poll_active(&bp, T0 + 10 * MS + 600 * US));
}

static void test_bulk_flow_stops_polling(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, 300);
    for (unsigned i = 0; i < BUSY_POLL_MAX_PACKETS; i++, t += 10 * US) {
        busy_poll_packet(&bp, t, BUSY_POLL_IN);
        assert_true(busy_poll_active(&bp, t));
    }
    busy_poll_packet(&bp, t, BUSY_POLL_IN);                     /* one too many */
    assert_false(busy_poll_active(&bp, t));
    /* The flow goes on without polling however long it lasts. */
    for (unsigned i = 0; i < 10000; i++, t += 10 * US) {
        busy_poll_packet(&bp, t, BUSY_POLL_IN);
        assert_false(busy_poll_active(&bp, t));
    }
    /* A pause of a few milliseconds is no end of it... */
    t += 5 * BUSY_POLL_IDLE_NS;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, t));
    /* ...but once it has ended, the next request polls again, within
     * two buckets' time. */
    t += 2 * BUSY_POLL_FLOW_NS;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    assert_true(busy_poll_active(&bp, t));
}

/* Feeds a train of packets going one way, `burst` at a time `gap` apart,
 * for `len`; returns the time the loop would have polled, sampled every
 * 10 us. */
static uint64_t polled(struct busy_poll *bp, uint64_t from, uint64_t len, uint64_t gap, unsigned burst)
{
    uint64_t sum = 0, next = from;

    for (uint64_t t = from; t < from + len; t += 10 * US) {
        if (t >= next) {
            for (unsigned i = 0; i < burst; i++)
                busy_poll_packet(bp, t, BUSY_POLL_OUT);
            next += gap;
        }
        if (busy_poll_active(bp, t))
            sum += 10 * US;
    }
    return sum;
}

/* One slow TCP stream over a long path (20 Mbit/s: two segments read
 * every 1.2 ms, each gap an idle spell): the default
 * window would span every gap and the daemon would poll throughout. It
 * polls for its first few packets only, then sleeps between them. */
static void test_slow_stream_does_not_poll(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    assert_true(polled(&bp, T0, 2000 * MS, 1200 * US, 2) < 30 * MS);
    /* One packet every 1.5 ms, each after an idle spell: the same. */
    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    assert_true(polled(&bp, T0, 2000 * MS, 1500 * US, 1) < 60 * MS);
}

/* Echoes 10 ms apart, request and answer, keep the window open from one
 * to the next for as long as they go on: their rate never makes a flow. */
static void test_echoes_poll_for_as_long_as_they_last(void **state)
{
    struct busy_poll bp;
    uint64_t t;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (t = T0; t < T0 + 10000 * MS; t += 10 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
        assert_true(busy_poll_active(&bp, t + 10 * MS - 1));
    }
    /* After a flow, echoes poll again once it has drained. */
    polled(&bp, t, 100 * MS, 10 * US, 4);
    assert_false(busy_poll_active(&bp, t + 100 * MS));
    t += 100 * MS;
    for (unsigned i = 0; i < 20; i++, t += 10 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
    }
    assert_true(busy_poll_active(&bp, t - 1));
}

/* Echoes `period` apart for 10 s, each answered `answer` later, as the
 * requester's daemon sees them (reads the request, receives the answer)
 * or the responder's: after the first few, each finds the loop polling. */
static void ping_pong(uint64_t period, uint64_t answer, bool responder)
{
    enum busy_poll_way ask = responder ? BUSY_POLL_IN : BUSY_POLL_OUT;
    enum busy_poll_way reply = responder ? BUSY_POLL_OUT : BUSY_POLL_IN;
    struct busy_poll bp;
    unsigned n = 0;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (uint64_t t = T0; t < T0 + 10000 * MS; t += period, n++) {
        busy_poll_packet(&bp, t, ask);
        busy_poll_packet(&bp, t + answer, reply);
        if (n >= 4)
            assert_true(busy_poll_active(&bp, t + period - 1));
    }
}

/* A request-response exchange keeps its window at any rate: echoes 10 ms,
 * 2 ms and 0.2 ms apart (100, 500 and 5000 a second), on either side.
 * Each packet takes its turn, so none is metered as a flow's. */
static void test_ping_pong_polls_at_any_rate(void **state)
{
    (void)state;
    for (int responder = 0; responder < 2; responder++) {
        ping_pong(10 * MS, 150 * US, responder);
        ping_pong(2 * MS, 150 * US, responder);
        ping_pong(200 * US, 100 * US, responder);
    }
}

/* The packets of echoes 2 ms apart going one way, with no turns: a
 * stream, which polls for its first few packets only. */
static void test_one_way_at_pings_rate_does_not_poll(void **state)
{
    struct busy_poll bp;
    uint64_t sum = 0;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (uint64_t t = T0; t < T0 + 2000 * MS; t += 2 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_IN);
        busy_poll_packet(&bp, t + 150 * US, BUSY_POLL_IN);
        for (uint64_t u = t; u < t + 2 * MS; u += 10 * US)
            sum += busy_poll_active(&bp, u) ? 10 * US : 0;
    }
    assert_true(sum < 60 * MS);
}

/* Bulk both ways at once takes no turns: bursts of four each way in
 * turn, and the two ways mixed at random (a 32-bit LCG), a packet every
 * 10 us for a second: polled for the first few packets only. */
static void test_bulk_both_ways_does_not_poll(void **state)
{
    struct busy_poll bp;
    uint32_t lcg = 1;
    (void)state;

    for (int mixed = 0; mixed < 2; mixed++) {
        uint64_t sum = 0;
        unsigned i = 0;

        busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
        for (uint64_t t = T0; t < T0 + 1000 * MS; t += 10 * US, i++) {
            lcg = lcg * 1664525u + 1013904223u;
            bool in = mixed ? lcg >> 31 : (i / 4) % 2;

            busy_poll_packet(&bp, t, in ? BUSY_POLL_IN : BUSY_POLL_OUT);
            sum += busy_poll_active(&bp, t) ? 10 * US : 0;
        }
        assert_true(sum < 2 * MS);
    }
}

/* The receiving side of a stream: two segments in, an ack out, every
 * 300 us (10000 packets a second). Each ack follows a run of two, so it
 * answers nothing: a flow, polled for its first packets only. */
static void test_stream_and_its_acks_do_not_poll(void **state)
{
    struct busy_poll bp;
    uint64_t sum = 0;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (uint64_t t = T0; t < T0 + 1000 * MS; t += 300 * US) {
        busy_poll_packet(&bp, t, BUSY_POLL_IN);
        busy_poll_packet(&bp, t + 50 * US, BUSY_POLL_IN);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_OUT);
        for (uint64_t u = t; u < t + 300 * US; u += 10 * US)
            sum += busy_poll_active(&bp, u) ? 10 * US : 0;
    }
    assert_true(sum < 20 * MS);
}

/* The time polled between from and to, sampled every 10 us, with the
 * packets of `at` (sorted), going the ways of `way`, fed as their times
 * come. */
static uint64_t polled_at(struct busy_poll *bp, const uint64_t *at, const enum busy_poll_way *way,
                          size_t n, uint64_t from, uint64_t to)
{
    uint64_t sum = 0;
    size_t i = 0;

    for (uint64_t t = from; t < to; t += 10 * US) {
        for (; i < n && at[i] <= t; i++)
            busy_poll_packet(bp, at[i], way[i]);
        if (busy_poll_active(bp, t))
            sum += 10 * US;
    }
    return sum;
}

/* The sender of one slow TCP stream over a 40 ms path (iperf3 -b 20M,
 * as tcpdump saw it at its daemon): every 52 ms, five reads of ddp0 a
 * millisecond apart, and the acks 40 ms later, 16 of them 0.3 ms apart.
 * Too sparse for a flow; but the window after the reads runs out before
 * the acks come, every time. Once the lapses outweigh the windows that
 * paid, the daemon polls for a few percent of the time (it polled 60%
 * before). */
static void test_slow_stream_lapses_hold_windows_off(void **state)
{
    enum { CYCLES = 200, PER = 21 };
    static uint64_t at[CYCLES * PER];
    static enum busy_poll_way way[CYCLES * PER];
    struct busy_poll bp;
    size_t n = 0;
    (void)state;

    for (unsigned c = 0; c < CYCLES; c++) {
        uint64_t t0 = T0 + c * 52 * MS;
        for (unsigned i = 0; i < 5; i++, n++) {
            at[n] = t0 + i * MS;
            way[n] = BUSY_POLL_OUT;
        }
        for (unsigned i = 0; i < 16; i++, n++) {
            at[n] = t0 + 40 * MS + i * 300 * US;
            way[n] = BUSY_POLL_IN;
        }
    }
    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    assert_true(polled_at(&bp, at, way, n, T0, T0 + CYCLES * 52 * MS) < CYCLES * 52 * MS / 20);
}

/* One or two exchanges that ended (their windows ran out; a tunnel's
 * first pings, one each way) hold nothing off: echoes that follow poll
 * from one to the next at once. */
static void test_two_lapses_hold_nothing_off(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (unsigned i = 0; i < 2; i++, t += 100 * MS) {   /* each runs out */
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
    }
    busy_poll_packet(&bp, t, BUSY_POLL_OUT);
    busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
    assert_true(busy_poll_active(&bp, t + 10 * MS));
}

/* Echoes 30 ms apart: a window never reaches the next one, every window
 * lapses. Soon only short windows open, which still catch each answer
 * (100 us later) but poll a small part of the time. And echoes 10 ms
 * apart that follow poll between echoes again once the hold-off ends. */
static void test_lapses_leave_short_windows_then_echoes_win_back(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0, sum = 0;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (unsigned i = 0; i < 300; i++, t += 30 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        assert_true(busy_poll_active(&bp, t + 100 * US));
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
        for (uint64_t u = t; u < t + 30 * MS; u += 10 * US)
            sum += busy_poll_active(&bp, u) ? 10 * US : 0;
    }
    assert_true(sum < 300 * 30 * MS / 10);
    /* Echoes 10 ms apart: polling between them again within the longest
     * hold-off and a few echoes. */
    for (unsigned i = 0; i < 200; i++, t += 10 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
    }
    for (unsigned i = 0; i < 20; i++, t += 10 * MS) {
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
        assert_true(busy_poll_active(&bp, t + 10 * MS - 1));
    }
}

/* Once a flow, the packets stay one until half the bucket has drained,
 * so that a stream whose rate hovers near the line does not open a window
 * every other packet. */
static void test_flow_hysteresis(void **state)
{
    struct busy_poll bp;
    uint64_t t = T0;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_DEFAULT);
    for (unsigned i = 0; i < BUSY_POLL_MAX_PACKETS + 1; i++)
        busy_poll_packet(&bp, t, BUSY_POLL_IN);                 /* a burst: a flow */
    assert_false(busy_poll_active(&bp, t));
    /* Below the line again, but more than half the bucket ahead of the
     * rate: still a flow, no window. */
    t += BUSY_POLL_FLOW_NS / 2 - 5 * MS;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, t));
    /* Half drained: an exchange again. */
    t += BUSY_POLL_FLOW_NS / 2;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
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
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);
    busy_poll_unawaited(&bp);
    assert_false(busy_poll_active(&bp, T0 + 1));
    /* The next packet is no new idle spell's first: still no window. */
    busy_poll_packet(&bp, T0 + 100 * US, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, T0 + 101 * US));
    /* After an idle spell, a request opens one; upkeep inside keeps it. */
    busy_poll_packet(&bp, T0 + 10 * MS, BUSY_POLL_IN);
    busy_poll_packet(&bp, T0 + 10 * MS + 50 * US, BUSY_POLL_IN);
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, T0 + 10 * MS + 100 * US));
}

static void test_largest_window(void **state)
{
    struct busy_poll bp;
    (void)state;

    busy_poll_init(&bp, CLUSTER_BUSY_POLL_MAX);
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);
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
        busy_poll_packet(&bp, t, BUSY_POLL_OUT);                 /* the request */
        busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);      /* its answer */
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
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    for (unsigned i = 0; i < 1000; i++)           /* nobody else: 1000 short yields */
        busy_poll_yielded(&bp, t += BUSY_POLL_SWITCH_NS, BUSY_POLL_SWITCH_NS);
    assert_true(busy_poll_active(&bp, t));
    /* Someone has 30% of the time: polling goes on to the window's end. */
    for (unsigned i = 0; i < 90; i++)
        busy_poll_yielded(&bp, t += 100 * US, 30 * US);
    assert_true(busy_poll_active(&bp, t));
    /* In a new window someone has 70%: it closes within a millisecond. */
    uint64_t opened = t += 2 * BUSY_POLL_IDLE_NS;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    while (busy_poll_active(&bp, t) && t < opened + 20 * MS)
        busy_poll_yielded(&bp, t += 100 * US, 70 * US);
    assert_false(busy_poll_active(&bp, t));
    assert_true(t < opened + MS);
    /* A packet right after (no idle spell) does not reopen it... */
    busy_poll_packet(&bp, t + 100 * US, BUSY_POLL_IN);
    assert_false(busy_poll_active(&bp, t + 101 * US));
    /* ...the first after an idle spell does, with others' time at 0. */
    t += 10 * MS;
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    assert_true(busy_poll_active(&bp, t + 1));
    busy_poll_yielded(&bp, t + BUSY_POLL_WANTED_NS, BUSY_POLL_WANTED_NS);
    assert_true(busy_poll_active(&bp, t + BUSY_POLL_WANTED_NS));
    /* One long run of someone else right after it opened closes it. */
    busy_poll_yielded(&bp, t + 2 * BUSY_POLL_WANTED_NS, 2 * BUSY_POLL_WANTED_NS);
    assert_false(busy_poll_active(&bp, t + 2 * BUSY_POLL_WANTED_NS));
    /* Under always nothing closes: the daemon never sleeps. */
    busy_poll_init(&bp, BUSY_POLL_ALWAYS);
    busy_poll_packet(&bp, T0, BUSY_POLL_IN);
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
        busy_poll_packet(&bp, t, BUSY_POLL_IN);
        assert_true(busy_poll_active(&bp, t));
    }
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, t));
    t += 100 * BUSY_POLL_IDLE_NS;
    assert_true(busy_poll_active(&bp, t));
    busy_poll_packet(&bp, t, BUSY_POLL_IN);
    busy_poll_unawaited(&bp);
    assert_true(busy_poll_active(&bp, t + 1));
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
        cmocka_unit_test(test_slow_stream_does_not_poll),
        cmocka_unit_test(test_echoes_poll_for_as_long_as_they_last),
        cmocka_unit_test(test_flow_hysteresis),
        cmocka_unit_test(test_slow_stream_lapses_hold_windows_off),
        cmocka_unit_test(test_ping_pong_polls_at_any_rate),
        cmocka_unit_test(test_one_way_at_pings_rate_does_not_poll),
        cmocka_unit_test(test_bulk_both_ways_does_not_poll),
        cmocka_unit_test(test_stream_and_its_acks_do_not_poll),
        cmocka_unit_test(test_two_lapses_hold_nothing_off),
        cmocka_unit_test(test_lapses_leave_short_windows_then_echoes_win_back),
        cmocka_unit_test(test_largest_window),
        cmocka_unit_test(test_default_window_spans_echoes),
        cmocka_unit_test(test_wanted_cpu_closes_window),
        cmocka_unit_test(test_always_polls),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
