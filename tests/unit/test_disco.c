/* SPDX-License-Identifier: MIT */
/* Tests of discovery's decisions (overlay/disco/disco.c) with a fake clock: a
 * peer's candidates and where to aim (local first, never our own
 * addresses), which interface addresses are candidates, the schedule of
 * an attempt (punches, then the relay, then giving up), of a session
 * (pings, ENDPOINTS, probes), the pings' bookkeeping; what hints may
 * cost and which relays are used (trust.c); and the engine's
 * choices that need no network (overlay/engine/paths/path.c: which path a received
 * packet moves a peer to, the relayed MTU; a relay's refusals). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "overlay/disco/disco.h"
#include "overlay/engine/engine.h"

#define MS   (WG_NSEC_PER_SEC / 1000u)
#define SEC  WG_NSEC_PER_SEC
#define T0   (1000 * SEC)
#define WHO  7u     /* the member that reports candidates */

static struct disco_endpoint ep4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    struct disco_endpoint e = { .family = DISCO_FAMILY_IPV4, .port = port };

    e.addr[0] = a;
    e.addr[1] = b;
    e.addr[2] = c;
    e.addr[3] = d;
    return e;
}

static struct disco_endpoint ep6(const char *text, uint16_t port)
{
    struct disco_endpoint e = { .family = DISCO_FAMILY_IPV6, .port = port };

    assert_int_equal(inet_pton(AF_INET6, text, e.addr), 1);
    return e;
}

static void assert_ep(const struct disco_endpoint *got, const struct disco_endpoint *want)
{
    if (!disco_endpoint_equal(got, want))
        fail_msg("endpoint family %u port %u, expected family %u port %u (or another address)",
                 got->family, got->port, want->family, want->port);
}

/* --- candidates ------------------------------------------------------------------ */

static void test_cand_add(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint pub = ep4(100, 64, 2, 1, 51820), lan = ep4(172, 31, 1, 12, 51820);
    struct disco_endpoint bad = ep4(100, 64, 2, 1, 0), out[DISCO_CANDS_MAX];

    (void)state;
    assert_true(disco_cand_add(&s, &pub, false, WHO, T0));
    assert_false(disco_cand_add(&s, &pub, false, WHO, T0 + SEC));     /* known: refreshed */
    assert_int_equal(s.n_cand, 1);
    assert_true(s.cand[0].seen_ns == T0 + SEC);
    assert_false(disco_cand_add(&s, &bad, false, WHO, T0));           /* port 0: no endpoint */
    assert_int_equal(s.n_cand, 1);
    /* Nothing a peer says makes us aim at our own services or the LAN. */
    struct disco_endpoint refused[] = { ep4(127, 0, 0, 53, 53), ep4(169, 254, 1, 1, 51820),
                                        ep4(224, 0, 0, 251, 5353), ep4(255, 255, 255, 255, 9),
                                        ep6("::1", 51820), ep6("fe80::1", 51820),
                                        ep6("ff02::1", 51820) };
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        assert_false(disco_cand_add(&s, &refused[i], i % 2, WHO, T0));
    assert_int_equal(s.n_cand, 1);
    assert_false(disco_cand_is_local(&s, &pub));
    assert_true(disco_cand_add(&s, &lan, true, WHO, T0));
    assert_true(disco_cand_is_local(&s, &lan));
    assert_int_equal(disco_cand_local(&s, out, DISCO_CANDS_MAX), 1);
    assert_ep(&out[0], &lan);
    /* An observed one the peer reports as its own becomes local. */
    assert_false(disco_cand_add(&s, &pub, true, WHO, T0));
    assert_true(disco_cand_is_local(&s, &pub));
    assert_int_equal(disco_cand_local(&s, out, 1), 1);           /* max respected */
}

static void test_cand_full(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint e;

    (void)state;
    /* Observed ones: the oldest makes room. */
    for (unsigned i = 0; i < DISCO_OBSERVED_MAX; i++) {
        e = ep4(100, 64, 9, (uint8_t)i, 1000);
        assert_true(disco_cand_add(&s, &e, false, WHO, T0 + i * SEC));
    }
    e = ep4(100, 64, 9, 200, 1000);
    assert_true(disco_cand_add(&s, &e, false, WHO, T0 + 100 * SEC));
    assert_int_equal(s.n_cand, DISCO_OBSERVED_MAX);
    struct disco_endpoint oldest = ep4(100, 64, 9, 0, 1000), second = ep4(100, 64, 9, 1, 1000);
    bool has_oldest = false, has_second = false;
    for (unsigned i = 0; i < s.n_cand; i++) {
        has_oldest |= disco_endpoint_equal(&s.cand[i].ep, &oldest);
        has_second |= disco_endpoint_equal(&s.cand[i].ep, &second);
    }
    assert_false(has_oldest);
    assert_true(has_second);
    /* Local ones: beyond DISCO_MAX_LOCAL they are dropped. */
    for (unsigned i = 0; i < DISCO_MAX_LOCAL; i++) {
        e = ep4(10, 0, 0, (uint8_t)(i + 1), 51820);
        assert_true(disco_cand_add(&s, &e, true, WHO, T0));
    }
    e = ep4(10, 0, 0, 99, 51820);
    assert_false(disco_cand_add(&s, &e, true, WHO, T0));
    assert_int_equal(s.n_cand, DISCO_CANDS_MAX);
    /* A full set of local ones: an observed one cannot be promoted. */
    e = ep4(100, 64, 9, 200, 1000);
    assert_false(disco_cand_add(&s, &e, true, WHO, T0));
    assert_false(disco_cand_is_local(&s, &e));
}

static void test_cand_set_local(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint a[3] = { ep4(172, 31, 1, 10, 51820), ep6("fd00:dd::3", 51820),
                                   ep4(192, 168, 0, 1, 0) /* invalid: skipped */ };
    struct disco_endpoint pub = ep4(100, 64, 1, 1, 4242), b = ep4(10, 1, 1, 1, 51820);
    struct disco_endpoint out[DISCO_CANDS_MAX];

    (void)state;
    disco_cand_add(&s, &pub, false, WHO, T0);
    assert_true(disco_cand_set_local(&s, a, 3, WHO, T0));
    assert_int_equal(disco_cand_local(&s, out, DISCO_CANDS_MAX), 2);
    assert_ep(&out[0], &a[0]);
    assert_ep(&out[1], &a[1]);
    assert_false(disco_cand_set_local(&s, a, 3, WHO, T0 + SEC));      /* the same: no change */
    assert_false(disco_cand_set_local(&s, a, 2, WHO, T0 + SEC));
    assert_true(disco_cand_set_local(&s, &b, 1, WHO, T0 + SEC));      /* replaced */
    assert_int_equal(disco_cand_local(&s, out, DISCO_CANDS_MAX), 1);
    assert_ep(&out[0], &b);
    assert_false(disco_cand_is_local(&s, &a[0]));
    assert_true(s.n_cand == 2);                                  /* the observed one stays */
    assert_true(disco_cand_set_local(&s, NULL, 0, WHO, T0));          /* none any more */
    assert_int_equal(disco_cand_local(&s, out, DISCO_CANDS_MAX), 0);
}

/* Local first in the peer's order, then observed newest first; never one
 * of our own addresses (whatever the port: a stranger in our own private
 * range, or ourselves); no duplicates; max respected. */
static void test_targets(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint own[2] = { ep4(172, 31, 1, 11, 51820), ep6("fd00::1", 51820) };
    struct disco_endpoint lan_same = ep4(172, 31, 1, 11, 51820);   /* our address */
    struct disco_endpoint lan = ep4(172, 31, 1, 12, 51820), lan6 = ep6("fd00::2", 51820);
    struct disco_endpoint old_pub = ep4(100, 64, 2, 1, 1111), new_pub = ep4(100, 64, 2, 1, 2222);
    struct disco_endpoint own_other_port = ep4(172, 31, 1, 11, 9999);
    struct disco_endpoint locals[3] = { lan_same, lan, lan6 }, out[DISCO_CANDS_MAX];

    (void)state;
    disco_cand_add(&s, &old_pub, false, WHO, T0);
    disco_cand_add(&s, &new_pub, false, WHO, T0 + SEC);
    disco_cand_add(&s, &own_other_port, false, WHO, T0 + 2 * SEC);
    disco_cand_set_local(&s, locals, 3, WHO, T0);
    assert_int_equal(disco_targets(&s, own, 2, false, out, DISCO_CANDS_MAX), 4);
    assert_ep(&out[0], &lan);
    assert_ep(&out[1], &lan6);
    assert_ep(&out[2], &new_pub);
    assert_ep(&out[3], &old_pub);
    assert_int_equal(disco_targets(&s, own, 2, true, out, DISCO_CANDS_MAX), 2);
    assert_int_equal(disco_targets(&s, own, 2, false, out, 3), 3);
    assert_ep(&out[2], &new_pub);
    /* Without own addresses, ours are targets too. */
    assert_int_equal(disco_targets(&s, NULL, 0, false, out, DISCO_CANDS_MAX), 6);
    struct disco_state empty = { 0 };
    assert_int_equal(disco_targets(&empty, own, 2, false, out, DISCO_CANDS_MAX), 0);
}

static void test_local_usable(void **state)
{
    struct disco_endpoint overlay = ep4(10, 77, 0, 1, 0);
    static const struct {
        struct disco_endpoint ep;
        bool loopback_if, overlay_if, want;
    } cases[] = {
        { { DISCO_FAMILY_IPV4, { 172, 31, 1, 10 }, 51820 }, false, false, true },
        { { DISCO_FAMILY_IPV4, { 100, 64, 0, 3 }, 51820 }, false, false, true },
        { { DISCO_FAMILY_IPV4, { 172, 31, 1, 10 }, 51820 }, true, false, false },
        { { DISCO_FAMILY_IPV4, { 172, 31, 1, 10 }, 51820 }, false, true, false },
        { { DISCO_FAMILY_IPV4, { 127, 0, 0, 1 }, 51820 }, false, false, false },
        { { DISCO_FAMILY_IPV4, { 169, 254, 3, 4 }, 51820 }, false, false, false },
        { { DISCO_FAMILY_IPV4, { 224, 0, 0, 1 }, 51820 }, false, false, false },
        { { DISCO_FAMILY_IPV4, { 0, 1, 2, 3 }, 51820 }, false, false, false },
        { { DISCO_FAMILY_IPV4, { 10, 77, 0, 1 }, 51820 }, false, false, false },  /* overlay */
        { { DISCO_FAMILY_IPV4, { 172, 31, 1, 10 }, 0 }, false, false, false },    /* no port */
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (disco_local_usable(&cases[i].ep, cases[i].loopback_if, cases[i].overlay_if,
                               &overlay) != cases[i].want)
            fail_msg("case %zu: expected %s", i, cases[i].want ? "usable" : "refused");
    struct disco_endpoint ula = ep6("fd00:dd::3", 51820), ll = ep6("fe80::1", 51820);
    struct disco_endpoint lo6 = ep6("::1", 51820), mc6 = ep6("ff02::1", 51820);
    struct disco_endpoint glob = ep6("2001:db8::5", 51820);
    assert_true(disco_local_usable(&ula, false, false, &overlay));
    assert_true(disco_local_usable(&glob, false, false, NULL));
    assert_false(disco_local_usable(&ll, false, false, &overlay));
    assert_false(disco_local_usable(&lo6, false, false, &overlay));
    assert_false(disco_local_usable(&mc6, false, false, &overlay));
}

/* --- the schedule --------------------------------------------------------------- */

/* Ticks from `from` to `to` in 1 ms steps; returns the actions seen (or'd)
 * and counts punches; checks that disco_next never names a time in the
 * past after a tick (no busy loop) and that nothing happens before it. */
static unsigned run(struct disco_state *s, const struct disco_facts *f, uint32_t gen,
                    uint64_t from, uint64_t to, unsigned *punches)
{
    unsigned all = 0;

    for (uint64_t now = from; now <= to; now += MS) {
        uint64_t next = disco_next(s, f, gen);
        unsigned act = disco_tick(s, f, gen, now);
        if (act && next > now)
            fail_msg("acted (%#x) at %llu before its deadline %llu", act,
                     (unsigned long long)now, (unsigned long long)next);
        if (disco_next(s, f, gen) <= now)
            fail_msg("next deadline %llu not after now %llu (actions %#x)",
                     (unsigned long long)disco_next(s, f, gen), (unsigned long long)now, act);
        if (punches && (act & DISCO_DO_PUNCH))
            (*punches)++;
        all |= act;
    }
    return all;
}

static void test_attempt_punches_then_relay(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .path = DISCO_PATH_NONE, .relay_known = true };
    unsigned punches = 0, act;

    (void)state;
    assert_int_equal(disco_tick(&s, &f, 0, T0), 0);              /* no attempt: nothing */
    assert_true(disco_attempt(&s, false, T0));
    assert_false(disco_attempt(&s, false, T0 + MS));             /* one at a time */
    act = disco_tick(&s, &f, 0, T0);
    assert_int_equal(act, DISCO_DO_PUNCH);
    punches = 1;
    /* The rest of the punches, DISCO_PUNCH_INTERVAL_MS apart, before the relay. */
    act = run(&s, &f, 0, T0 + MS, T0 + (DISCO_RELAY_AFTER_MS - 1) * MS, &punches);
    assert_int_equal(act & DISCO_DO_RELAY, 0);
    assert_int_equal(punches, DISCO_PUNCH_COUNT);
    act = disco_tick(&s, &f, 0, T0 + DISCO_RELAY_AFTER_MS * MS);
    assert_int_equal(act, DISCO_DO_RELAY);
    /* Once per attempt, even if the engine did not switch. */
    act = run(&s, &f, 0, T0 + (DISCO_RELAY_AFTER_MS + 1) * MS, T0 + (DISCO_ATTEMPT_S - 1) * SEC,
              NULL);
    assert_int_equal(act, 0);
    /* The attempt ends; another may begin. */
    run(&s, &f, 0, T0 + (DISCO_ATTEMPT_S - 1) * SEC, T0 + (DISCO_ATTEMPT_S + 1) * SEC, NULL);
    assert_true(s.attempt_ns == 0);
    assert_true(disco_next(&s, &f, 0) == UINT64_MAX);
    assert_true(disco_attempt(&s, true, T0 + 20 * SEC));
    /* punched: the first went out with the initiation. */
    assert_int_equal(disco_tick(&s, &f, 0, T0 + 20 * SEC), 0);
    assert_int_equal(disco_tick(&s, &f, 0, T0 + 20 * SEC + DISCO_PUNCH_INTERVAL_MS * MS),
                     DISCO_DO_PUNCH);
}

static void test_attempt_without_relay(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .path = DISCO_PATH_NONE };
    unsigned act;

    (void)state;
    disco_attempt(&s, false, T0);
    act = run(&s, &f, 0, T0, T0 + (DISCO_ATTEMPT_S + 1) * SEC, NULL);
    assert_int_equal(act, DISCO_DO_PUNCH);                      /* never the relay */
    /* Already relayed: no turn to the relay either. */
    f.path = DISCO_PATH_RELAY;
    f.relay_known = true;
    disco_attempt(&s, false, T0 + 100 * SEC);
    act = run(&s, &f, 0, T0 + 100 * SEC, T0 + 111 * SEC, NULL);
    assert_int_equal(act, DISCO_DO_PUNCH);
}

/* A working session ends the attempt's punches; session_began ends it. */
static void test_attempt_stops_with_session(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .path = DISCO_PATH_DIRECT, .relay_known = true };

    (void)state;
    disco_attempt(&s, false, T0);
    assert_int_equal(disco_tick(&s, &f, 0, T0), DISCO_DO_PUNCH);
    f.session = f.working = true;
    disco_session_began(&s, false, T0 + 10 * MS);
    assert_true(s.attempt_ns == 0);
    unsigned act = run(&s, &f, 0, T0 + 10 * MS, T0 + 4 * SEC, NULL);
    assert_int_equal(act & (DISCO_DO_PUNCH | DISCO_DO_RELAY), 0);
    /* A session that stopped working lets a new attempt punch again. */
    f.working = false;
    assert_true(disco_attempt(&s, false, T0 + 5 * SEC));
    assert_true(disco_tick(&s, &f, 0, T0 + 5 * SEC) & DISCO_DO_PUNCH);
}

static void test_session_pings_and_endpoints(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .session = true, .working = true, .path = DISCO_PATH_DIRECT };
    unsigned act;

    (void)state;
    assert_int_equal(disco_tick(&s, &(struct disco_facts){ 0 }, 1, T0), 0);  /* no session */
    disco_session_began(&s, false, T0);
    act = disco_tick(&s, &f, 1, T0);
    assert_int_equal(act, DISCO_DO_PING | DISCO_DO_ENDPOINTS);
    /* Pings every DISCO_PING_INTERVAL_S; ENDPOINTS every DISCO_ENDPOINTS_MAX_S
     * while nothing changed. */
    assert_int_equal(disco_tick(&s, &f, 1, T0 + DISCO_PING_INTERVAL_S * SEC - MS), 0);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + DISCO_PING_INTERVAL_S * SEC), DISCO_DO_PING);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + (DISCO_ENDPOINTS_MAX_S - 1) * SEC),
                     DISCO_DO_PING);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + DISCO_ENDPOINTS_MAX_S * SEC),
                     DISCO_DO_ENDPOINTS);
    /* Something changed: after DISCO_ENDPOINTS_MIN_S, not before. */
    uint64_t t = T0 + DISCO_ENDPOINTS_MAX_S * SEC;
    assert_int_equal(disco_tick(&s, &f, 2, t + (DISCO_ENDPOINTS_MIN_S - 1) * SEC) &
                     DISCO_DO_ENDPOINTS, 0);
    assert_true(disco_tick(&s, &f, 2, t + DISCO_ENDPOINTS_MIN_S * SEC) & DISCO_DO_ENDPOINTS);
    run(&s, &f, 2, t + DISCO_ENDPOINTS_MIN_S * SEC + MS, t + 100 * SEC, NULL);
    /* Where we see this peer changed (gen did not): the same, once (the
     * run sent the last ENDPOINTS at its end). */
    t += 100 * SEC;
    assert_true(s.endpoints_sent_ns == t);
    disco_endpoints_stale(&s);
    assert_int_equal(disco_tick(&s, &f, 2, t + (DISCO_ENDPOINTS_MIN_S - 1) * SEC) &
                     DISCO_DO_ENDPOINTS, 0);
    assert_true(disco_tick(&s, &f, 2, t + DISCO_ENDPOINTS_MIN_S * SEC) & DISCO_DO_ENDPOINTS);
    assert_false(s.endpoints_stale);
    assert_int_equal(disco_tick(&s, &f, 2, t + 2 * DISCO_ENDPOINTS_MIN_S * SEC) &
                     DISCO_DO_ENDPOINTS, 0);
}

/* A peer's own pace (spread): its pings and ENDPOINTS come spread/1024
 * of their period later than another's, so peers that began together
 * drift apart. */
static void test_schedule_spread(void **state)
{
    struct disco_state s = { .spread = 255 };
    struct disco_facts f = { .session = true, .working = true, .path = DISCO_PATH_DIRECT };
    const uint64_t ping = DISCO_PING_INTERVAL_S * SEC, ends = DISCO_ENDPOINTS_MAX_S * SEC;

    (void)state;
    disco_session_began(&s, false, T0);
    assert_int_equal(disco_tick(&s, &f, 1, T0), DISCO_DO_PING | DISCO_DO_ENDPOINTS);
    assert_int_equal(disco_next(&s, &f, 1), T0 + ping + ping / 1024 * 255);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + ping + ping / 1024 * 255 - 1), 0);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + ping + ping / 1024 * 255), DISCO_DO_PING);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + ends + ends / 1024 * 255 - 1) &
                     DISCO_DO_ENDPOINTS, 0);
    assert_true(disco_tick(&s, &f, 1, T0 + ends + ends / 1024 * 255) & DISCO_DO_ENDPOINTS);
    /* Idle: the idle period, stretched the same. */
    f.idle_ping_s = 40;
    uint64_t t = T0 + 200 * SEC;
    assert_true(disco_tick(&s, &f, 1, t) & DISCO_DO_PING);
    assert_int_equal(s.next_ping_ns, t + 40 * SEC + 40 * SEC / 1024 * 255);
}

/* A rekey keeps the schedule: no ping or ENDPOINTS out of turn; a peer
 * new or back gets both at once. */
static void test_rekey_keeps_schedule(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .session = true, .working = true, .path = DISCO_PATH_DIRECT };
    uint64_t t = T0 + DISCO_PING_INTERVAL_S * SEC / 2;

    (void)state;
    disco_session_began(&s, true, T0);     /* a "rekey" with nothing scheduled: at once */
    assert_int_equal(disco_tick(&s, &f, 1, T0), DISCO_DO_PING | DISCO_DO_ENDPOINTS);
    s.unanswered = 2;
    disco_session_began(&s, true, t);
    assert_int_equal(s.unanswered, 0);
    assert_int_equal(disco_tick(&s, &f, 1, t), 0);
    assert_int_equal(disco_tick(&s, &f, 1, T0 + DISCO_PING_INTERVAL_S * SEC), DISCO_DO_PING);
    disco_session_began(&s, false, t + SEC);
    assert_int_equal(disco_tick(&s, &f, 1, t + SEC), DISCO_DO_PING | DISCO_DO_ENDPOINTS);
}

static void test_pings_slow_down_unanswered(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .session = true, .working = true, .path = DISCO_PATH_DIRECT };
    struct disco_ping_slot slot;
    uint64_t now = T0;

    (void)state;
    disco_session_began(&s, false, now);
    for (unsigned i = 0; i < DISCO_PING_UNANSWERED_MAX; i++) {
        assert_true(disco_tick(&s, &f, 0, now) & DISCO_DO_PING);
        assert_true(s.next_ping_ns == now + DISCO_PING_INTERVAL_S * SEC);
        disco_ping_sent(&s, 100 + i, NULL, now);
        now = s.next_ping_ns;
    }
    assert_int_equal(s.unanswered, DISCO_PING_UNANSWERED_MAX);
    assert_true(disco_tick(&s, &f, 0, now) & DISCO_DO_PING);
    assert_true(s.next_ping_ns == now + DISCO_PING_SLOW_S * SEC);
    /* An answer brings the pace back. */
    disco_ping_sent(&s, 999, NULL, now);
    assert_true(disco_pong(&s, 999, now + 2 * MS, &slot));
    assert_int_equal(s.unanswered, 0);
    assert_true(s.rtt_ns == 2 * MS);
    now = s.next_ping_ns;
    assert_true(disco_tick(&s, &f, 0, now) & DISCO_DO_PING);
    assert_true(s.next_ping_ns == now + DISCO_PING_INTERVAL_S * SEC);
}

/* Relayed: probes of the direct candidates every DISCO_PROBE_INTERVAL_S,
 * the first one interval after the path was taken; direct to a public
 * address with local candidates: every DISCO_UPGRADE_INTERVAL_S. */
static void test_probes(void **state)
{
    struct disco_state s = { 0 };
    struct disco_facts f = { .session = true, .working = true, .path = DISCO_PATH_RELAY };

    (void)state;
    disco_session_began(&s, false, T0);
    disco_tick(&s, &f, 0, T0);
    assert_int_equal(disco_tick(&s, &f, 0, T0 + (DISCO_PROBE_INTERVAL_S * SEC) - MS) &
                     DISCO_DO_PROBE, 0);
    assert_true(disco_tick(&s, &f, 0, T0 + DISCO_PROBE_INTERVAL_S * SEC) & DISCO_DO_PROBE);
    assert_true(s.next_probe_ns == T0 + 2 * DISCO_PROBE_INTERVAL_S * SEC);
    run(&s, &f, 0, T0 + DISCO_PROBE_INTERVAL_S * SEC + MS, T0 + 40 * SEC, NULL);

    /* Direct now, nothing better to try: no probes. */
    f.path = DISCO_PATH_DIRECT;
    disco_path_changed(&s);
    assert_int_equal(run(&s, &f, 0, T0 + 41 * SEC, T0 + 120 * SEC, NULL) & DISCO_DO_PROBE, 0);
    /* Direct to a public address, local candidates known. */
    f.can_upgrade = true;
    disco_path_changed(&s);
    uint64_t t = T0 + 121 * SEC;
    disco_tick(&s, &f, 0, t);
    assert_true(s.next_probe_ns == t + DISCO_UPGRADE_INTERVAL_S * SEC);
    assert_true(disco_tick(&s, &f, 0, t + DISCO_UPGRADE_INTERVAL_S * SEC) & DISCO_DO_PROBE);
    /* No session: no probes, pings or ENDPOINTS. */
    f.session = f.working = false;
    assert_int_equal(run(&s, &f, 0, t + 31 * SEC, t + 100 * SEC, NULL), 0);
}

/* --- pings ---------------------------------------------------------------------- */

static void test_pong_matching(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint cand = ep4(100, 64, 2, 1, 51820);
    struct disco_ping_slot slot;

    (void)state;
    disco_ping_sent(&s, 1, NULL, T0);
    disco_ping_sent(&s, 2, &cand, T0 + MS);
    assert_int_equal(s.unanswered, 1);                           /* probes do not count */
    assert_false(disco_pong(&s, 3, T0 + 2 * MS, &slot));         /* not ours */
    assert_true(s.last_pong_ns == 0);
    assert_true(disco_pong(&s, 2, T0 + 3 * MS, &slot));
    assert_true(s.last_pong_ns == T0 + 3 * MS);
    assert_true(slot.probe);
    assert_ep(&slot.to, &cand);
    assert_true(s.rtt_ns == 0);                                  /* a probe is not the path */
    assert_false(disco_pong(&s, 2, T0 + 4 * MS, &slot));         /* answered once only */
    assert_true(disco_pong(&s, 1, T0 + 5 * MS, &slot));
    assert_false(slot.probe);
    assert_true(s.rtt_ns == 5 * MS);
    assert_true(s.last_pong_ns == T0 + 5 * MS);
    /* Too old. */
    disco_ping_sent(&s, 7, NULL, T0);
    assert_false(disco_pong(&s, 7, T0 + DISCO_PING_TIMEOUT_S * SEC, &slot));
    assert_true(s.last_pong_ns == T0 + 5 * MS);
    assert_false(disco_pong(&s, 7, T0 + MS, &slot));             /* and forgotten */
    /* Lost: path pings since the last pong, unanswered for a while. */
    struct disco_state l = { 0 };
    assert_int_equal(disco_pings_lost(&l, T0), 0);
    disco_ping_sent(&l, 1, NULL, T0);
    disco_ping_sent(&l, 2, &cand, T0);                           /* probes do not count */
    assert_int_equal(disco_pings_lost(&l, T0 + (DISCO_PING_LOST_MS - 1) * MS), 0);
    assert_int_equal(disco_pings_lost(&l, T0 + DISCO_PING_LOST_MS * MS), 1);
    disco_ping_sent(&l, 3, NULL, T0 + 5 * SEC);
    assert_int_equal(disco_pings_lost(&l, T0 + 5 * SEC + 10 * MS), 1);   /* not yet */
    assert_int_equal(disco_pings_lost(&l, T0 + 6 * SEC), 2);
    assert_true(disco_pong(&l, 3, T0 + 6 * SEC, &slot));         /* an answer: none lost */
    assert_int_equal(disco_pings_lost(&l, T0 + 7 * SEC), 0);
    /* The ring keeps the latest DISCO_PINGS_MAX. */
    for (uint64_t i = 0; i <= DISCO_PINGS_MAX; i++)
        disco_ping_sent(&s, 1000 + i, NULL, T0);
    assert_false(disco_pong(&s, 1000, T0 + MS, &slot));
    assert_true(disco_pong(&s, 1000 + DISCO_PINGS_MAX, T0 + MS, &slot));
    assert_true(disco_pong(&s, 1001, T0 + MS, &slot));
}


/* --- hints: what a member's word about others may cost ------------------------------- */

/* Candidates remember who told us (the two latest), answer, expire, and
 * stop being aimed at after DISCO_CAND_TRIES_MAX sends in vain. */
static void test_cand_hints(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint x = ep4(198, 51, 100, 7, 9), y = ep4(198, 51, 100, 8, 9);
    struct disco_endpoint out[DISCO_CANDS_MAX];
    struct disco_cand *c;

    (void)state;
    disco_cand_add(&s, &x, false, 5, T0);
    c = disco_cand_get(&s, &x);
    assert_non_null(c);
    assert_true(c->informant[0] == 5 && c->informant[1] == 0);
    disco_cand_add(&s, &x, false, 6, T0);          /* a second member reports it */
    assert_true(c->informant[0] == 6 && c->informant[1] == 5);
    disco_cand_add(&s, &x, false, 6, T0);          /* again: 5 keeps its place */
    assert_true(c->informant[0] == 6 && c->informant[1] == 5);
    /* Each report lets it cost DISCO_CAND_REPORT_BYTES more, to twice that. */
    assert_int_equal(c->allowance, 2 * DISCO_CAND_REPORT_BYTES);
    assert_true(disco_cand_spend(c, DISCO_CAND_REPORT_BYTES));
    assert_true(disco_cand_spend(c, DISCO_CAND_REPORT_BYTES));
    assert_false(disco_cand_spend(c, 1));
    assert_int_equal(c->allowance, 0);
    disco_cand_add(&s, &x, false, 6, T0);
    assert_int_equal(c->allowance, DISCO_CAND_REPORT_BYTES);
    assert_null(disco_cand_get(&s, &y));
    /* Never answered: not free; answered: free for DISCO_CAND_TTL_S. */
    assert_false(disco_cand_answers(c, T0));
    c->tries = 3;
    disco_cand_answered(&s, &x, T0 + SEC);
    assert_true(disco_cand_answers(c, T0 + SEC));
    assert_int_equal(c->tries, 0);
    assert_false(disco_cand_answers(c, T0 + SEC + DISCO_CAND_TTL_S * SEC));
    disco_cand_answered(&s, &y, T0);               /* not a candidate: nothing */
    assert_int_equal(s.n_cand, 1);
    /* Tried in vain DISCO_CAND_TRIES_MAX times: no longer a target, until
     * the peer comes back. */
    disco_cand_add(&s, &y, false, 5, T0);
    assert_int_equal(disco_targets(&s, NULL, 0, false, out, DISCO_CANDS_MAX), 2);
    disco_cand_get(&s, &y)->tries = DISCO_CAND_TRIES_MAX;
    assert_int_equal(disco_targets(&s, NULL, 0, false, out, DISCO_CANDS_MAX), 1);
    assert_ep(&out[0], &x);
    disco_cand_retry(&s);
    assert_int_equal(disco_targets(&s, NULL, 0, false, out, DISCO_CANDS_MAX), 2);
    /* Not reported for DISCO_CAND_TTL_S: forgotten, unless it answered
     * within it. */
    disco_cand_answered(&s, &x, T0 + 100 * SEC);
    disco_cand_expire(&s, T0 + DISCO_CAND_TTL_S * SEC - 1);
    assert_int_equal(s.n_cand, 2);
    disco_cand_expire(&s, T0 + DISCO_CAND_TTL_S * SEC);
    assert_int_equal(s.n_cand, 1);
    assert_non_null(disco_cand_get(&s, &x));
    disco_cand_expire(&s, T0 + (100 + DISCO_CAND_TTL_S) * SEC);
    assert_int_equal(s.n_cand, 0);
}

/* Local candidates carry whose word they are. */
static void test_cand_locals_from(void **state)
{
    struct disco_state s = { 0 };
    struct disco_endpoint l = ep4(172, 31, 1, 12, 51820);

    (void)state;
    assert_false(disco_cand_locals_from(&s, 3));
    disco_cand_set_local(&s, &l, 1, 9, T0);        /* another member's word */
    assert_false(disco_cand_locals_from(&s, 3));
    disco_cand_set_local(&s, &l, 1, 3, T0);        /* the peer's own */
    assert_true(disco_cand_locals_from(&s, 3));
}

/* A member earns DISCO_HINT_FACTOR times what it sent, up to a cap; the
 * device's bucket bounds the whole. */
static void test_credit_and_bucket(void **state)
{
    uint32_t credit = 0;
    struct disco_bucket b = { 0 };

    (void)state;
    assert_false(disco_credit_spend(&credit, 1));
    disco_credit_earn(&credit, 100);
    assert_int_equal(credit, 100 * DISCO_HINT_FACTOR);
    assert_false(disco_credit_spend(&credit, 100 * DISCO_HINT_FACTOR + 1));
    assert_int_equal(credit, 100 * DISCO_HINT_FACTOR);      /* nothing taken */
    assert_true(disco_credit_spend(&credit, 148));
    assert_int_equal(credit, 100 * DISCO_HINT_FACTOR - 148);
    disco_credit_earn(&credit, UINT32_MAX);
    assert_int_equal(credit, DISCO_HINT_CREDIT_MAX);
    /* The bucket starts full, refills at its rate, never past its burst. */
    assert_true(disco_bucket_take(&b, DISCO_UNANSWERED_BURST, T0));
    assert_false(disco_bucket_take(&b, 1, T0));
    assert_false(disco_bucket_take(&b, DISCO_UNANSWERED_BYTES_PER_SEC / 2 + 1, T0 + SEC / 2));
    assert_true(disco_bucket_take(&b, DISCO_UNANSWERED_BYTES_PER_SEC / 2, T0 + SEC / 2));
    assert_false(disco_bucket_take(&b, DISCO_UNANSWERED_BURST + 1, T0 + 100 * SEC));
    assert_true(disco_bucket_take(&b, DISCO_UNANSWERED_BURST, T0 + 100 * SEC));
}

static const bool ALL_USABLE[DISCO_RELAYS_MAX] = { true, true, true, true };

/* A claim makes a relay a candidate; it is used only once an answer came
 * through it while on trial; a trial that brings none fails it, and a
 * failed one waits while another may be tried. */
static void test_relay_trials(void **state)
{
    struct disco_relays rs = { 0 };
    bool usable[DISCO_RELAYS_MAX] = { true, true, true, true };

    (void)state;
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, T0), 0);
    disco_relay_claim(&rs, 7, T0);                 /* the hostile one claims first */
    disco_relay_claim(&rs, 8, T0 + SEC);
    disco_relay_claim(&rs, 7, T0 + 2 * SEC);       /* claiming again changes no order */
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, T0 + 2 * SEC), 7);
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 7, T0 + 2 * SEC), 8);
    usable[0] = false;                             /* 7 has no working session with us */
    assert_int_equal(disco_relay_pick(&rs, usable, 0, T0 + 2 * SEC), 8);
    /* An answer through a relay that is not on trial proves nothing. */
    assert_false(disco_relay_answered(&rs, 7, T0 + 2 * SEC));
    /* 7 on trial brings no answer: it fails, and 8 is next. */
    disco_relay_trial(&rs, 7, T0 + 3 * SEC);
    assert_int_equal(disco_relay_on_trial(&rs, T0 + 3 * SEC), 7);
    assert_int_equal(disco_relay_trial_over(&rs, T0 + 4 * SEC), 0);     /* still live */
    uint64_t over = T0 + 3 * SEC + DISCO_RELAY_TRIAL_MS * MS;
    assert_int_equal(disco_relay_on_trial(&rs, over), 0);
    assert_false(disco_relay_answered(&rs, 7, over));                   /* too late */
    assert_int_equal(disco_relay_trial_over(&rs, over), 7);
    assert_int_equal(disco_relay_trial_over(&rs, over), 0);             /* once */
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, over), 8);
    /* 8 answers within its trial: confirmed, and first from now on. */
    disco_relay_trial(&rs, 8, over);
    assert_true(disco_relay_answered(&rs, 8, over + MS));
    assert_int_equal(disco_relay_on_trial(&rs, over + MS), 0);
    assert_false(disco_relay_answered(&rs, 8, over + 2 * MS));          /* trial over */
    /* Past 7's penalty, 8 (answered through) still goes first. */
    uint64_t later = over + DISCO_RELAY_PENALTY_S * SEC;
    disco_relay_claim(&rs, 7, later);
    disco_relay_claim(&rs, 8, later);
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, later), 8);
    /* 8 in use stops carrying answers: failed; 7 is tried, not 8 again. */
    disco_relay_failed(&rs, 8, later);
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, later), 7);
    /* Only failed ones left: the oldest failure, once REKEY_TIMEOUT passed. */
    disco_relay_trial(&rs, 7, later);
    assert_int_equal(disco_relay_trial_over(&rs, later + DISCO_RELAY_TRIAL_MS * MS), 7);
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, later + DISCO_RELAY_TRIAL_MS * MS), 0);
    assert_int_equal(disco_relay_pick(&rs, ALL_USABLE, 0, later + WG_REKEY_TIMEOUT * SEC), 8);
    /* A relay that carried the peer to us is on trial as we answer
     * through it: the peer's next message through it confirms it. */
    disco_relay_trial(&rs, 9, later);
    assert_true(disco_relay_answered(&rs, 9, later + MS));
    disco_relay_forget(&rs, 9);
    assert_false(disco_relay_answered(&rs, 9, later + MS));
    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++)
        assert_true(rs.slot[i].id != 9);
}

/* The slots: a claim never pushes out a relay answered through; a failed
 * or stale one goes first; claims not renewed are forgotten. */
static void test_relay_slots(void **state)
{
    struct disco_relays rs = { 0 };

    (void)state;
    for (disco_id id = 1; id <= DISCO_RELAYS_MAX; id++) {
        disco_relay_trial(&rs, id, T0);
        assert_true(disco_relay_answered(&rs, id, T0));
    }
    disco_relay_claim(&rs, 50, T0 + SEC);          /* all answered through: no room */
    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++)
        assert_true(rs.slot[i].id != 50);
    disco_relay_failed(&rs, 2, T0 + SEC);          /* a failed one makes room */
    disco_relay_claim(&rs, 50, T0 + SEC);
    assert_true(rs.slot[DISCO_RELAYS_MAX - 1].id == 50);
    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++)
        assert_true(rs.slot[i].id != 2);
    /* Unanswered claims: the oldest makes room for a new one. */
    struct disco_relays fresh = { 0 };
    for (disco_id id = 1; id <= DISCO_RELAYS_MAX; id++)
        disco_relay_claim(&fresh, id, T0 + id * SEC);
    disco_relay_claim(&fresh, 1, T0 + 10 * SEC);   /* 1 renewed: 2 is the oldest */
    disco_relay_claim(&fresh, 60, T0 + 11 * SEC);
    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++)
        assert_true(fresh.slot[i].id != 2);
    assert_true(fresh.slot[DISCO_RELAYS_MAX - 1].id == 60);
    /* A claim not renewed for DISCO_CAND_TTL_S is not picked. */
    assert_int_equal(disco_relay_pick(&fresh, ALL_USABLE, 0, T0 + 11 * SEC), 1);
    uint64_t stale = T0 + (10 + DISCO_CAND_TTL_S) * SEC;
    disco_relay_claim(&fresh, 60, stale);
    assert_int_equal(disco_relay_pick(&fresh, ALL_USABLE, 0, stale), 60);
}

/* --- the engine's choices without a network -------------------------------------- */

struct world {
    struct device dev;
    struct cluster_node self;
    struct peer peers[3];           /* a, b: peers; r: a relay */
    struct peer *list[3];
};

static struct world *world_new(void)
{
    struct world *w = calloc(1, sizeof(*w));

    assert_non_null(w);
    w->self.address.family = AF_INET;
    w->self.address.bytes[0] = 10;
    w->dev.self = &w->self;
    w->dev.mtu = 1420;
    for (int i = 0; i < 3; i++) {
        struct peer *p = &w->peers[i];
        p->dev = &w->dev;
        snprintf(p->member.name, sizeof(p->member.name), "peer%d", i);
        memset(p->public_key, i + 1, WG_KEY_LEN);
        p->member.address.family = AF_INET;
        p->member.address.bytes[0] = 10;
        p->member.address.bytes[3] = (uint8_t)(i + 2);
        p->path.endpoint.sa.sa_family = AF_UNSPEC;
        p->id = (disco_id)(i + 1);
        w->list[i] = p;
    }
    w->dev.peers = w->list;
    w->dev.n_peers = 3;
    return w;
}

static void set_endpoint(struct peer *p, const char *addr, uint16_t port)
{
    memset(&p->path.endpoint, 0, sizeof(p->path.endpoint));
    p->path.endpoint.in4.sin_family = AF_INET;
    p->path.endpoint.in4.sin_port = htons(port);
    inet_pton(AF_INET, addr, &p->path.endpoint.in4.sin_addr);
    p->path.endpoint_proven = true;   /* as the operator gives it */
}

/* A keypair the peer can send with (no keys needed for these choices). */
static void give_session(struct peer *p, uint64_t now)
{
    p->wg.keypairs[0].birth_ns = now;
    p->wg.current = &p->wg.keypairs[0];
}

static void test_path_kinds_and_mtu(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0], *r = &w->peers[2];

    (void)state;
    assert_int_equal(path_of(a), DISCO_PATH_NONE);
    assert_false(path_usable(a));
    assert_int_equal(path_mtu(a), 1420);
    set_endpoint(a, "100.64.2.1", 51820);
    assert_int_equal(path_of(a), DISCO_PATH_DIRECT);
    assert_true(path_direct(a));
    /* A relay must be direct, with a session. */
    assert_false(path_relay_ready(r, T0));
    assert_false(path_relay_ready(NULL, T0));
    set_endpoint(r, "100.64.0.3", 51820);
    assert_false(path_relay_ready(r, T0));
    give_session(r, T0);
    assert_true(path_relay_ready(r, T0));
    /* Nor at an endpoint that never answered us (taken as WireGuard
     * roams): nothing goes there but challenges. */
    r->path.endpoint_proven = false;
    assert_false(path_relay_ready(r, T0));
    r->path.endpoint_proven = true;
    assert_false(path_relay_ready(r, T0 + WG_REJECT_AFTER_TIME * SEC));   /* expired */
    path_use_relay(a, r, T0);
    assert_int_equal(path_of(a), DISCO_PATH_RELAY);
    assert_true(a->path.via == r);
    assert_false(path_direct(a));
    assert_true(path_usable(a));
    assert_int_equal(path_mtu(a), 1420 - DISCO_RELAY_OVERHEAD);
    /* Not through itself, and not through a relayed peer. */
    path_use_relay(r, r, T0);
    assert_null(r->path.via);
    path_use_relay(r, a, T0);
    assert_false(path_relay_ready(r, T0));
    free(w);
}

/* What a received packet does to a peer's path. */
static void test_path_received(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0], *r = &w->peers[2], *r2 = &w->peers[1];
    union endpoint src, src2;
    uint32_t gen;

    (void)state;
    memset(&src, 0, sizeof(src));
    src.in4.sin_family = AF_INET;
    src.in4.sin_port = htons(51820);
    inet_pton(AF_INET, "100.64.2.1", &src.in4.sin_addr);
    src2 = src;
    src2.in4.sin_port = htons(4000);

    /* No path: a direct packet gives one (roaming). a hears where we see
     * it soon (its ENDPOINTS are stale); the others are not told: a
     * change in what we say of a third peer is no news to push to every
     * peer (disco.h). */
    gen = w->dev.disco.gen;
    path_received(a, &src, NULL, WG_INITIATION_LEN, false, T0);
    assert_int_equal(path_of(a), DISCO_PATH_DIRECT);
    /* As WireGuard roams: not proven until it answers a challenge. */
    assert_false(a->path.endpoint_proven);
    assert_int_equal(a->path.unproven.credit, WG_INITIATION_LEN);
    assert_true(a->disco.state.endpoints_stale);
    assert_false(r->disco.state.endpoints_stale);
    assert_int_equal(w->dev.disco.gen, gen);
    assert_true(a->path.last_direct_ns == T0);
    /* Through a relay that is not on trial: nothing we sent went through
     * it, so the message proves nothing of the way back. */
    path_received(a, NULL, r, 0, false, T0 + DISCO_DIRECT_STALE_S * SEC);
    assert_int_equal(path_of(a), DISCO_PATH_DIRECT);
    /* On trial, but the direct path is fresh: it stays. */
    disco_relay_trial(&a->disco.relays, r->id, T0 + SEC);
    path_received(a, NULL, r, 0, false, T0 + SEC);
    assert_int_equal(path_of(a), DISCO_PATH_DIRECT);
    /* On trial and the direct path silent for DISCO_DIRECT_STALE_S: the
     * answer through it makes it the path. */
    disco_relay_trial(&a->disco.relays, r->id, T0 + DISCO_DIRECT_STALE_S * SEC);
    path_received(a, NULL, r, 0, false, T0 + DISCO_DIRECT_STALE_S * SEC);
    assert_true(a->path.via == r);
    /* Relayed, a ddpnet peer: a direct packet from a source that never
     * answered us moves nothing, confirmed (a handshake, data) or not (a
     * probe), and says nothing of its address: a member can forge its
     * source. Its bytes are credited to it, for the challenge. */
    a->disco.speaks_disco = true;
    disco_cand_add(&a->disco.state, &(struct disco_endpoint){ .family = DISCO_FAMILY_IPV4,
                                                        .addr = { 100, 64, 2, 1 }, .port = 4000 },
                   false, WHO, T0 + 20 * SEC);
    path_received(a, &src2, NULL, 100, false, T0 + 20 * SEC);
    assert_true(a->path.via == r);
    assert_true(a->path.last_direct_ns == T0);
    assert_true(a->disco.state.cand[0].answered_ns == 0);
    path_received(a, &src2, NULL, 60, true, T0 + 20 * SEC);
    assert_true(a->path.via == r);
    assert_int_equal(a->path.unproven.credit, 160);
    assert_false(path_unproven_spend(a, &src, 1));
    assert_true(path_unproven_spend(a, &src2, 150));
    assert_false(path_unproven_spend(a, &src2, 11));
    /* It answered a challenge (on_pong): the path. From there on, a
     * direct packet that is not confirmed does not move us, though its
     * address answers; a confirmed one does. */
    path_use_direct(a, &src2, T0 + 20 * SEC);
    assert_true(a->path.endpoint_proven);
    assert_int_equal(ntohs(a->path.endpoint.in4.sin_port), 4000);
    path_use_relay(a, r, T0 + 20 * SEC);
    path_received(a, &src2, NULL, 100, false, T0 + 20 * SEC);
    assert_true(a->path.via == r);
    assert_true(a->path.last_direct_ns == T0 + 20 * SEC);
    assert_true(a->disco.state.cand[0].answered_ns == T0 + 20 * SEC);
    path_received(a, &src2, NULL, 0, true, T0 + 21 * SEC);
    assert_null(a->path.via);
    assert_int_equal(ntohs(a->path.endpoint.in4.sin_port), 4000);
    /* Relayed through r: a message through r2, which we never tried, does
     * not move us; once r2 is on trial, its answer does. */
    a->path.endpoint.sa.sa_family = AF_UNSPEC;
    disco_relay_trial(&a->disco.relays, r->id, T0 + 30 * SEC);
    path_received(a, NULL, r, 0, false, T0 + 30 * SEC);
    assert_true(a->path.via == r);
    path_received(a, NULL, r2, 0, false, T0 + 31 * SEC);
    assert_true(a->path.via == r);
    disco_relay_trial(&a->disco.relays, r2->id, T0 + 31 * SEC);
    path_received(a, NULL, r2, 0, false, T0 + 31 * SEC);
    assert_true(a->path.via == r2);
    /* The relay in use carrying answers keeps it fresh. */
    path_received(a, NULL, r2, 0, false, T0 + 40 * SEC);
    assert_true(a->disco.relays.slot[1].id == r2->id &&
                a->disco.relays.slot[1].confirmed_ns == T0 + 40 * SEC);
    /* Dropped: no path until another is tried, and r2 failed. */
    path_drop_relay(a, T0 + 41 * SEC);
    assert_null(a->path.via);
    assert_true(a->disco.relays.slot[1].failed_ns == T0 + 41 * SEC);
    assert_int_equal(w->dev.stats.relay_dropped, 1);
    /* A peer is never its own relay. */
    path_received(r2, NULL, r2, 0, false, T0 + 32 * SEC);
    assert_null(r2->path.via);
    free(w);
}

/* An unproven source: what came from it pays for what goes to it, a
 * challenge a second at most, and a peer that never spoke disco gets
 * DISCO_CHALLENGES_MAX; another source starts afresh. */
static void test_unproven_credit(void **state)
{
    struct disco_unproven u = { 0 };
    struct disco_endpoint v = { .family = DISCO_FAMILY_IPV4, .addr = { 203, 0, 113, 7 },
                                .port = 40000 };
    struct disco_endpoint w = v;

    (void)state;
    w.port = 40001;
    assert_int_equal(disco_challenge_at(&u, true, 80), UINT64_MAX);   /* none known */
    disco_unproven_heard(&u, &v, 60);
    assert_int_equal(disco_challenge_at(&u, true, 80), UINT64_MAX);   /* not paid yet */
    assert_false(disco_unproven_spend(&u, &v, 80));
    disco_unproven_heard(&u, &v, 40);
    assert_int_equal(disco_challenge_at(&u, true, 80), 0);            /* at once */
    assert_false(disco_unproven_spend(&u, &w, 80));                   /* not another's */
    assert_true(disco_unproven_spend(&u, &v, 80));
    disco_challenge_sent(&u, T0);
    assert_int_equal(u.credit, 20);
    disco_unproven_heard(&u, &v, 100);
    assert_int_equal(disco_challenge_at(&u, true, 80), T0 + DISCO_CHALLENGE_MS * NS_PER_MS);
    /* A challenge whose answer could not count (a stranger promoted):
     * the next at once, paid all the same, and counted once. */
    disco_challenge_void(&u);
    assert_int_equal(disco_challenge_at(&u, true, 80), 0);
    assert_int_equal(u.challenges, 0);
    assert_true(disco_unproven_spend(&u, &v, 80));
    disco_challenge_sent(&u, T0);
    assert_int_equal(u.credit, 40);
    /* Capped. */
    for (unsigned i = 0; i < 100; i++)
        disco_unproven_heard(&u, &v, 1000);
    assert_int_equal(u.credit, DISCO_UNPROVEN_CREDIT_MAX);
    /* A stock peer: DISCO_CHALLENGES_MAX, then none. */
    for (unsigned i = 1; i < DISCO_CHALLENGES_MAX; i++)
        disco_challenge_sent(&u, T0 + i * SEC);
    assert_int_equal(disco_challenge_at(&u, false, 80), UINT64_MAX);
    assert_true(disco_challenge_at(&u, true, 80) < UINT64_MAX);
    /* Another source: what came from v is not its, and sources in turn
     * do not quicken the pace. */
    disco_unproven_heard(&u, &w, 100);
    assert_int_equal(u.credit, 100);
    assert_int_equal(u.challenges, 0);
    assert_false(disco_unproven_spend(&u, &v, 1));
    assert_int_equal(disco_challenge_at(&u, false, 80),
                     T0 + (DISCO_CHALLENGES_MAX - 1) * SEC + DISCO_CHALLENGE_MS * NS_PER_MS);
    disco_unproven_clear(&u);
    assert_int_equal(disco_challenge_at(&u, true, 0), UINT64_MAX);
}

/* A session works while the peer is heard from and, when it speaks
 * disco, answers pings; a relay must be direct and work. */
static void test_working(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0];
    struct disco_ping_slot slot;

    (void)state;
    assert_false(discovery_working(a, T0));                         /* no keypair */
    give_session(a, T0);
    assert_false(discovery_working(a, T0));                         /* never heard from */
    a->live.last_received_ns = T0;
    assert_true(discovery_working(a, T0 + SEC));
    assert_false(discovery_working(a, T0 + (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) * SEC));
    /* A disco peer whose pings go unanswered stops working sooner. */
    a->disco.speaks_disco = true;
    a->live.last_received_ns = T0 + 10 * SEC;
    disco_ping_sent(&a->disco.state, 1, NULL, T0 + 10 * SEC);
    disco_ping_sent(&a->disco.state, 2, NULL, T0 + 11 * SEC);
    assert_true(discovery_working(a, T0 + 11 * SEC + MS));
    assert_false(discovery_working(a, T0 + 12 * SEC));
    assert_true(disco_pong(&a->disco.state, 2, T0 + 12 * SEC, &slot));
    assert_true(discovery_working(a, T0 + 12 * SEC));
    /* Idle (no data for DISCO_IDLE_AFTER_S): pinged seldom, so silence
     * means less -- for as long as one idle ping interval more. */
    a->disco.state = (struct disco_state){ 0 };
    give_session(a, T0 + 100 * SEC);
    a->live.last_received_ns = T0 + 100 * SEC;
    a->live.last_data_ns = T0 + 50 * SEC;
    unsigned idle = discovery_idle_ping_s(a, T0 + 100 * SEC);
    assert_int_equal(discovery_idle_ping_s(a, T0 + 51 * SEC), 0);   /* data a moment ago */
    assert_true(idle >= 2 * DISCO_PING_INTERVAL_S && idle <= DISCO_IDLE_PING_MAX_S);
    assert_true(discovery_working(a, T0 + 100 * SEC +
                                  (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT + idle - 1) * SEC));
    assert_false(discovery_working(a, T0 + 100 * SEC +
                                   (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT + idle) * SEC));
    a->live.last_received_ns = T0 + 10 * SEC;
    /* A plain WireGuard peer is not judged by pings. */
    a->disco.speaks_disco = false;
    disco_ping_sent(&a->disco.state, 3, NULL, T0 + 13 * SEC);
    disco_ping_sent(&a->disco.state, 4, NULL, T0 + 13 * SEC);
    assert_true(discovery_working(a, T0 + 20 * SEC));
    free(w);
}

/* An idle peer is pinged less often the more peers a node has: the
 * pings a node sends its idle peers together stay at DISCO_IDLE_PEERS_PER_STEP
 * per DISCO_PING_INTERVAL_S until the interval reaches its cap, so a
 * node's idle cost grows with the peers it talks to, not with the
 * cluster; a peer that sent or got data lately is pinged at the working
 * pace; a stock WireGuard peer never. */
static void test_idle_rate_falls_with_cluster(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0];
    static const size_t sizes[] = { 1, 2, 8, 16, 24, 64, 96, 200, 1000, 16384 };
    unsigned last = 0;

    (void)state;
    a->disco.speaks_disco = true;
    a->live.last_data_ns = 0;
    for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
        w->dev.n_peers = sizes[i];
        unsigned s = discovery_idle_ping_s(a, T0);
        assert_true(s >= last);                                  /* never faster */
        assert_true(s >= 2 * DISCO_PING_INTERVAL_S && s <= DISCO_IDLE_PING_MAX_S);
        if (s < DISCO_IDLE_PING_MAX_S)                           /* the node's total */
            assert_true(sizes[i] * DISCO_PING_INTERVAL_S <= (size_t)s * DISCO_IDLE_PEERS_PER_STEP);
        last = s;
    }
    w->dev.n_peers = 8;
    unsigned small = discovery_idle_ping_s(a, T0);
    w->dev.n_peers = 64;
    assert_true(discovery_idle_ping_s(a, T0) > small);
    /* Data lately: the working pace; long ago: idle again. */
    a->live.last_data_ns = T0 - (DISCO_IDLE_AFTER_S - 1) * SEC;
    assert_int_equal(discovery_idle_ping_s(a, T0), 0);
    a->live.last_data_ns = T0 - DISCO_IDLE_AFTER_S * SEC;
    assert_true(discovery_idle_ping_s(a, T0) > 0);
    a->disco.speaks_disco = false;
    assert_int_equal(discovery_idle_ping_s(a, T0), 0);
    w->dev.n_peers = 3;
    free(w);
}

/* A relay forwards only between members, the destination reached
 * directly and speaking disco; nothing else leaves (no loop is needed to
 * see that: each refusal is counted before anything is built). */
static void test_relay_refusals(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0], *b = &w->peers[1], *plain = &w->peers[2];
    uint8_t msg[WG_TRANSPORT_MIN_LEN] = { WG_MSG_TRANSPORT };

    (void)state;
    path_forward(&w->dev, a, NULL, msg, sizeof(msg), T0);        /* not a member */
    assert_int_equal(w->dev.stats.relay_refused, 1);
    path_forward(&w->dev, a, a, msg, sizeof(msg), T0);           /* back to the sender */
    assert_int_equal(w->dev.stats.relay_refused, 2);
    path_forward(&w->dev, a, b, msg, sizeof(msg), T0);           /* b not reached */
    assert_int_equal(w->dev.stats.relay_refused, 3);
    set_endpoint(b, "100.64.2.1", 51820);
    give_session(b, T0);
    path_forward(&w->dev, a, b, msg, sizeof(msg), T0);           /* b never spoke disco */
    assert_int_equal(w->dev.stats.relay_refused, 4);
    b->disco.speaks_disco = true;
    b->path.via = plain;                                              /* b relayed: no chains */
    path_forward(&w->dev, a, b, msg, sizeof(msg), T0);
    assert_int_equal(w->dev.stats.relay_refused, 5);
    assert_int_equal(w->dev.stats.relay_forwarded, 0);
    assert_null(w->dev.disco.fwd);
    free(w);
}

/* Disco messages a peer may not send: a RELAY that itself came through a
 * relay, one to a key outside the cluster; a RELAYED outside the data
 * path. Each is refused and counted; nothing is sent. */
static void test_disco_refusals(void **state)
{
    struct world *w = world_new();
    struct peer *a = &w->peers[0], *r = &w->peers[2];
    struct disco_msg *m = calloc(1, sizeof(*m));
    uint8_t msg[WG_TRANSPORT_MIN_LEN] = { WG_MSG_TRANSPORT };

    (void)state;
    assert_non_null(m);
    m->type = DISCO_RELAY;
    memset(m->relay.key, 2, WG_KEY_LEN);                         /* peer1's key */
    m->relay.msg = msg;
    m->relay.msg_len = sizeof(msg);
    discovery_receive(a, NULL, NULL, r, m, T0);
    assert_int_equal(w->dev.stats.relay_refused, 1);
    assert_true(a->disco.speaks_disco);                                 /* it did speak disco */
    memset(m->relay.key, 0x77, WG_KEY_LEN);                      /* no such member */
    discovery_receive(a, NULL, NULL, NULL, m, T0);
    assert_int_equal(w->dev.stats.relay_refused, 2);
    m->type = DISCO_RELAYED;
    discovery_receive(a, NULL, NULL, NULL, m, T0);
    assert_int_equal(w->dev.stats.disco_bad, 1);
    free(m);
    free(w);
}

/* Another member's introduction stands for ours for DISCO_INTRO_HEARD_S
 * on the clock, and then ours is news again (a peer back later). */
static void test_intro_heard_stands_for_ours(void **state)
{
    (void)state;
    struct disco_state s = { 0 };

    assert_true(disco_intro_news(&s, T0));
    disco_intro_heard(&s, T0);
    assert_false(disco_intro_news(&s, T0));
    assert_false(disco_intro_news(&s, T0 + DISCO_INTRO_HEARD_S * SEC - 1));
    assert_true(disco_intro_news(&s, T0 + DISCO_INTRO_HEARD_S * SEC));
    disco_intro_heard(&s, 0);       /* a clock at 0 still counts as heard */
    assert_false(disco_intro_news(&s, 0));
}

/* Keys without a peer yet: heard, they stand for DISCO_INTRO_HEARD_S;
 * the table holds DISCO_INTRO_KEYS_MAX, and a new one takes the oldest's
 * place when full. */
static void test_intro_keys_bounded(void **state)
{
    (void)state;
    static struct disco_intro_keys t;
    uint8_t key[WG_KEY_LEN] = { 0 };

    memset(&t, 0, sizeof(t));
    key[0] = 1;
    assert_true(disco_intro_key_news(&t, key, T0));
    disco_intro_key_heard(&t, key, T0);
    assert_false(disco_intro_key_news(&t, key, T0 + DISCO_INTRO_HEARD_S * SEC - 1));
    assert_true(disco_intro_key_news(&t, key, T0 + DISCO_INTRO_HEARD_S * SEC));
    for (unsigned i = 1; i < DISCO_INTRO_KEYS_MAX; i++) {
        key[1] = (uint8_t)i;
        key[2] = (uint8_t)(i >> 8);
        disco_intro_key_heard(&t, key, T0 + i);
    }
    key[1] = key[2] = 0;
    assert_false(disco_intro_key_news(&t, key, T0 + SEC));     /* all still held */
    key[0] = 2;
    disco_intro_key_heard(&t, key, T0 + SEC);                  /* full: the oldest goes */
    assert_false(disco_intro_key_news(&t, key, T0 + 2 * SEC));
    key[0] = 1;
    assert_true(disco_intro_key_news(&t, key, T0 + 2 * SEC));  /* it was the oldest */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cand_add),
        cmocka_unit_test(test_intro_heard_stands_for_ours),
        cmocka_unit_test(test_intro_keys_bounded),
        cmocka_unit_test(test_cand_full),
        cmocka_unit_test(test_cand_set_local),
        cmocka_unit_test(test_targets),
        cmocka_unit_test(test_local_usable),
        cmocka_unit_test(test_attempt_punches_then_relay),
        cmocka_unit_test(test_attempt_without_relay),
        cmocka_unit_test(test_attempt_stops_with_session),
        cmocka_unit_test(test_session_pings_and_endpoints),
        cmocka_unit_test(test_schedule_spread),
        cmocka_unit_test(test_rekey_keeps_schedule),
        cmocka_unit_test(test_idle_rate_falls_with_cluster),
        cmocka_unit_test(test_pings_slow_down_unanswered),
        cmocka_unit_test(test_probes),
        cmocka_unit_test(test_pong_matching),
        cmocka_unit_test(test_cand_hints),
        cmocka_unit_test(test_cand_locals_from),
        cmocka_unit_test(test_credit_and_bucket),
        cmocka_unit_test(test_relay_trials),
        cmocka_unit_test(test_relay_slots),
        cmocka_unit_test(test_path_kinds_and_mtu),
        cmocka_unit_test(test_path_received),
        cmocka_unit_test(test_unproven_credit),
        cmocka_unit_test(test_working),
        cmocka_unit_test(test_relay_refusals),
        cmocka_unit_test(test_disco_refusals),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
