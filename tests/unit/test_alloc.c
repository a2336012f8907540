/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/alloc.c, the address a registering node gets:
 * the lowest of the network when nothing is taken, the lowest free one
 * whatever the order and repetitions of the taken list, never the
 * network's own address nor its broadcast address, -ENOSPC for a full
 * network and for those with no host address to give (/31, /32), and
 * IPv6 networks (/64, /120), with taken addresses of the other family
 * or outside the network making no difference. alloc_pick: the key's
 * slot first, then a free one at random, never a taken, network or
 * broadcast address; and nodes joining at once against a store whose
 * claims are compare-and-swap (an in-memory etcd): the claims they lose
 * to each other, before (the lowest free, then one of the first 32) and
 * after issue 59. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/addr.h"
#include "config/cluster.h"
#include "overlay/registry/alloc.h"

#define TAKEN_MAX 300

struct net {
    struct cluster_addr addr;
    unsigned prefix;
};

static struct net net_of(const char *text)
{
    struct net n;
    const char *why = NULL;

    assert_int_equal(cluster_prefix_parse(text, &n.addr, &n.prefix, &why), 0);
    cluster_addr_mask(&n.addr, n.prefix);
    return n;
}

static struct cluster_addr addr_of(const char *text)
{
    struct cluster_addr a;

    memset(&a, 0, sizeof(a));
    assert_int_equal(cluster_addr_parse(text, &a), 0);
    return a;
}

/* The pick for network `net` with the addresses of the NULL-ended list
 * taken; "" for -ENOSPC. */
static const char *pick(const char *net, const char *const *taken, char *buf, size_t len)
{
    struct cluster_addr list[TAKEN_MAX], out;
    struct net n = net_of(net);
    size_t count = 0;
    int r;

    for (; taken && taken[count]; count++) {
        assert_true(count < TAKEN_MAX);
        list[count] = addr_of(taken[count]);
    }
    memset(&out, 0, sizeof(out));
    r = alloc_lowest_free(&n.addr, n.prefix, list, count, &out);
    if (r == -ENOSPC)
        return "";
    assert_int_equal(r, 0);
    assert_int_equal(out.family, n.addr.family);
    assert_true(cluster_addr_in_network(&out, &n.addr, n.prefix));
    assert_int_equal(cluster_addr_format(&out, buf, len), 0);
    return buf;
}

#define LIST(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* A long taken list: the addresses fmt gives for each i from first to
 * last (counting down when last < first), NULL-ended. */
struct range {
    const char *list[TAKEN_MAX];
    char texts[TAKEN_MAX][40];
};

/* Fills r; how many addresses it holds (list[n] is the NULL). */
static size_t range_fill(struct range *r, const char *fmt, unsigned first, unsigned last)
{
    size_t n = 0;

    for (unsigned i = first;; i = first <= last ? i + 1 : i - 1) {
        assert_true(n + 1 < TAKEN_MAX);
        snprintf(r->texts[n], sizeof(r->texts[n]), fmt, i);
        r->list[n] = r->texts[n];
        n++;
        if (i == last)
            break;
    }
    r->list[n] = NULL;
    return n;
}

static void test_empty_network(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(pick("10.77.0.0/24", NULL, buf, sizeof(buf)), "10.77.0.1");
    assert_string_equal(pick("10.77.0.0/16", NULL, buf, sizeof(buf)), "10.77.0.1");
    assert_string_equal(pick("10.0.0.0/8", NULL, buf, sizeof(buf)), "10.0.0.1");
    assert_string_equal(pick("10.77.0.4/30", NULL, buf, sizeof(buf)), "10.77.0.5");
    assert_string_equal(pick("192.168.7.128/25", NULL, buf, sizeof(buf)), "192.168.7.129");
}

static void test_skips_taken_in_any_order(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.1"), buf, sizeof(buf)), "10.77.0.2");
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.1", "10.77.0.2", "10.77.0.3"), buf,
                             sizeof(buf)), "10.77.0.4");
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.3", "10.77.0.1", "10.77.0.2"), buf,
                             sizeof(buf)), "10.77.0.4");
    /* A hole is filled before anything above it. */
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.9", "10.77.0.1", "10.77.0.3",
                                                  "10.77.0.2", "10.77.0.5"), buf, sizeof(buf)),
                        "10.77.0.4");
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.200"), buf, sizeof(buf)), "10.77.0.1");
    /* Carrying into the next byte. */
    static struct range big;
    range_fill(&big, "10.77.0.%u", 255, 1);            /* 10.77.0.255 .. 10.77.0.1, downwards */
    assert_string_equal(pick("10.77.0.0/16", big.list, buf, sizeof(buf)), "10.77.1.0");
    /* In a /16, x.y.0.255 and x.y.1.0 are host addresses like any other. */
    big.list[0] = "10.77.1.0";
    assert_string_equal(pick("10.77.0.0/16", big.list, buf, sizeof(buf)), "10.77.0.255");
}

static void test_duplicates(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.1", "10.77.0.1"), buf, sizeof(buf)),
                        "10.77.0.2");
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.2", "10.77.0.1", "10.77.0.2",
                                                  "10.77.0.1", "10.77.0.3", "10.77.0.3"),
                             buf, sizeof(buf)), "10.77.0.4");
    assert_string_equal(pick("10.77.0.4/30", LIST("10.77.0.5", "10.77.0.5", "10.77.0.6",
                                                  "10.77.0.6"), buf, sizeof(buf)), "");
}

static void test_never_network_or_broadcast(void **state)
{
    char buf[64];

    (void)state;
    /* The network's own address taken or not, .1 is first. */
    assert_string_equal(pick("10.77.0.0/24", LIST("10.77.0.0"), buf, sizeof(buf)), "10.77.0.1");
    /* All but the broadcast address taken: full. */
    static struct range all;
    range_fill(&all, "10.77.0.%u", 1, 254);
    assert_string_equal(pick("10.77.0.0/24", all.list, buf, sizeof(buf)), "");
    /* One freed: that one. */
    all.list[99] = "10.77.0.1";
    assert_string_equal(pick("10.77.0.0/24", all.list, buf, sizeof(buf)), "10.77.0.100");
    /* In a /30 only the two middle ones are hosts. */
    assert_string_equal(pick("10.77.0.4/30", LIST("10.77.0.5"), buf, sizeof(buf)), "10.77.0.6");
    assert_string_equal(pick("10.77.0.4/30", LIST("10.77.0.6"), buf, sizeof(buf)), "10.77.0.5");
}

static void test_full_small_networks(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(pick("10.77.0.4/30", LIST("10.77.0.6", "10.77.0.5"), buf, sizeof(buf)),
                        "");
    /* /31 and /32 have no host address (the cluster file refuses them;
     * the rule still says so rather than hand out a network's edge). */
    struct cluster_addr net = addr_of("10.77.0.4"), out, none[1];
    assert_int_equal(alloc_lowest_free(&net, 31, none, 0, &out), -ENOSPC);
    assert_int_equal(alloc_lowest_free(&net, 32, none, 0, &out), -ENOSPC);
    /* The last network of the space: no wrap-around to 0.0.0.0. */
    net = addr_of("255.255.255.252");
    struct cluster_addr taken[2] = { addr_of("255.255.255.253"), addr_of("255.255.255.254") };
    assert_int_equal(alloc_lowest_free(&net, 30, taken, 2, &out), -ENOSPC);
    assert_int_equal(alloc_lowest_free(&net, 30, taken, 1, &out), 0);
    assert_int_equal(cluster_addr_format(&out, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "255.255.255.254");
}

static void test_ipv6(void **state)
{
    char buf[64];

    (void)state;
    assert_string_equal(pick("fd77::/64", NULL, buf, sizeof(buf)), "fd77::1");
    assert_string_equal(pick("fd77:1:2:3::/64", LIST("fd77:1:2:3::1", "fd77:1:2:3::3"), buf,
                             sizeof(buf)), "fd77:1:2:3::2");
    assert_string_equal(pick("fd77::/120", NULL, buf, sizeof(buf)), "fd77::1");
    assert_string_equal(pick("fd77::100/120", LIST("fd77::101"), buf, sizeof(buf)),
                        "fd77::102");
    /* Carrying across a 16-bit group. */
    assert_string_equal(pick("fd77::/64", LIST("fd77::1", "fd77::ffff"), buf, sizeof(buf)),
                        "fd77::2");
    /* IPv6 has no broadcast address: a /120's last address is a host. */
    static struct range all;
    size_t n = range_fill(&all, "fd77::%x", 1, 254);
    assert_string_equal(pick("fd77::/120", all.list, buf, sizeof(buf)), "fd77::ff");
    all.list[n++] = "fd77::ff";
    all.list[n] = NULL;
    assert_string_equal(pick("fd77::/120", all.list, buf, sizeof(buf)), "");
    /* A /127 holds one host address besides its own. */
    assert_string_equal(pick("fd77::/127", NULL, buf, sizeof(buf)), "fd77::1");
    assert_string_equal(pick("fd77::/127", LIST("fd77::1"), buf, sizeof(buf)), "");
}

/* The nth free address, for joiners that lost a race: the holes count
 * in order, and past the last free one the last free one is given. */
static void test_nth_free(void **state)
{
    static const struct { unsigned nth; const char *want; } cases[] = {
        { 0, "10.1.2.2" }, { 1, "10.1.2.4" }, { 2, "10.1.2.6" }, { 3, "10.1.2.6" },
        { 1000, "10.1.2.6" },
    };
    struct net n = net_of("10.1.2.0/29");
    char buf[64];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cluster_addr taken[] = { addr_of("10.1.2.5"), addr_of("10.1.2.1"),
                                        addr_of("10.1.2.3") };
        struct cluster_addr out;
        assert_int_equal(alloc_free_nth(&n.addr, n.prefix, taken, 3, cases[i].nth, &out), 0);
        assert_int_equal(cluster_addr_format(&out, buf, sizeof(buf)), 0);
        assert_string_equal(buf, cases[i].want);
    }
    struct cluster_addr full[] = { addr_of("10.1.2.1"), addr_of("10.1.2.2"), addr_of("10.1.2.3"),
                                   addr_of("10.1.2.4"), addr_of("10.1.2.5"), addr_of("10.1.2.6") };
    struct cluster_addr out;
    assert_int_equal(alloc_free_nth(&n.addr, n.prefix, full, 6, 3, &out), -ENOSPC);
    assert_int_equal(alloc_free_nth(&n.addr, n.prefix, NULL, 0, 5, &out), 0);
    assert_int_equal(cluster_addr_format(&out, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "10.1.2.6");
}

/* alloc_pick's address for net with taken (NULL-ended), the key all
 * key_byte (endian-free: 0 names slot 0, 0xff slot UINT64_MAX mod hosts). */
static const char *pick2(const char *net, const char *const *taken, uint8_t key_byte,
                         unsigned attempt, uint64_t rnd, char *buf, size_t len)
{
    struct cluster_addr list[TAKEN_MAX], out;
    struct net n = net_of(net);
    uint8_t key[CLUSTER_KEY_LEN];
    size_t count = 0;
    int r;

    memset(key, key_byte, sizeof(key));
    for (; taken && taken[count]; count++)
        list[count] = addr_of(taken[count]);
    r = alloc_pick(&n.addr, n.prefix, list, count, key, attempt, rnd, &out);
    if (r == -ENOSPC)
        return "";
    assert_int_equal(r, 0);
    assert_true(cluster_addr_in_network(&out, &n.addr, n.prefix));
    assert_int_equal(cluster_addr_format(&out, buf, len), 0);
    return buf;
}

static void test_pick(void **state)
{
    const char *const *odd = LIST("10.1.2.5", "10.1.2.1", "10.1.2.3", "10.1.2.3", "10.9.9.9",
                                  "fd00::1");
    char b[64];

    (void)state;
    /* The key's slot when free: 0 is .1; UINT64_MAX mod 6 hosts = 3 is .4. */
    assert_string_equal(pick2("10.1.2.0/29", NULL, 0, 0, 5, b, sizeof(b)), "10.1.2.1");
    assert_string_equal(pick2("10.1.2.0/29", NULL, 0xff, 0, 5, b, sizeof(b)), "10.1.2.4");
    /* Taken, or a later attempt: the (rnd mod free)th free one. */
    assert_string_equal(pick2("10.1.2.0/29", odd, 0, 0, 0, b, sizeof(b)), "10.1.2.2");
    assert_string_equal(pick2("10.1.2.0/29", odd, 0xff, 1, 1, b, sizeof(b)), "10.1.2.4");
    assert_string_equal(pick2("10.1.2.0/29", odd, 0xff, 1, 2, b, sizeof(b)), "10.1.2.6");
    assert_string_equal(pick2("10.1.2.0/29", odd, 0xff, 1, 3, b, sizeof(b)), "10.1.2.2");
    /* Never the network's own nor broadcast: 6 hosts, rnd 5 is .6, 6 is .1. */
    assert_string_equal(pick2("10.1.2.0/29", NULL, 0, 1, 5, b, sizeof(b)), "10.1.2.6");
    assert_string_equal(pick2("10.1.2.0/29", NULL, 0, 1, 6, b, sizeof(b)), "10.1.2.1");
    assert_string_equal(pick2("10.1.2.0/29",
                              LIST("10.1.2.1", "10.1.2.2", "10.1.2.3", "10.1.2.4", "10.1.2.5",
                                   "10.1.2.6"), 0, 0, 0, b, sizeof(b)), "");
    struct cluster_addr net = addr_of("10.1.2.4"), out;
    uint8_t key[CLUSTER_KEY_LEN] = { 0 };
    assert_int_equal(alloc_pick(&net, 31, NULL, 0, key, 0, 0, &out), -ENOSPC);
    assert_int_equal(alloc_pick(&net, 32, NULL, 0, key, 1, 0, &out), -ENOSPC);
    /* The last network of the space: no wrap-around to 0.0.0.0. */
    assert_string_equal(pick2("255.255.255.252/30", LIST("255.255.255.253"), 0xff, 1, 7, b,
                              sizeof(b)), "255.255.255.254");
    /* IPv6: the last 64 bits; a /120 has 255 hosts (no broadcast). */
    assert_string_equal(pick2("fd00:1::/64", NULL, 0, 0, 0, b, sizeof(b)), "fd00:1::1");
    /* UINT64_MAX mod (2^64 - 1) hosts = 0: ::1 */
    assert_string_equal(pick2("fd00:1::/64", NULL, 0xff, 0, 0, b, sizeof(b)), "fd00:1::1");
    assert_string_equal(pick2("fd00:1::/64", NULL, 0, 1, UINT64_MAX - 1, b, sizeof(b)),
                        "fd00:1::ffff:ffff:ffff:ffff");
    assert_string_equal(pick2("fd00:1::/120", LIST("fd00:1::1"), 0, 0, 254, b, sizeof(b)),
                        "fd00:1::2");                /* 254 mod 254 free: the first free */
    assert_string_equal(pick2("fd00:1::/120", NULL, 0, 1, 254, b, sizeof(b)), "fd00:1::ff");
    assert_string_equal(pick2("fd00:1::/48", NULL, 0, 1, 41, b, sizeof(b)), "fd00:1::2a");
}

/* --- nodes joining at once ------------------------------------------------------ */

#define JOINERS_MAX 256
#define ROUNDS_MAX  64                     /* registry.c's ALLOC_TRIES */

static uint64_t xorshift(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

/* n nodes join net at once against a store whose address claims are
 * compare-and-swap (create if absent), in rounds: every node not joined
 * yet reads the store (the same snapshot: they read at once), picks, and
 * claims, the claims landing in a random order; a claim of an address
 * taken meanwhile is lost and its node tries again in the next round.
 * The claims lost in all (each a transaction etcd served for nothing, and
 * a scan more); every node ends with an address of its own. `before`:
 * the rule before issue 59, the lowest free one, after a loss one of the
 * first 32 free. */
static unsigned joins_at_once(const char *net, unsigned n, bool before, unsigned *rounds)
{
    static struct cluster_addr held[JOINERS_MAX], snap[JOINERS_MAX], want[JOINERS_MAX];
    static uint8_t keys[JOINERS_MAX][CLUSTER_KEY_LEN];
    struct net nw = net_of(net);
    unsigned attempt[JOINERS_MAX] = { 0 }, order[JOINERS_MAX], lost = 0, n_held = 0, r;
    bool done[JOINERS_MAX] = { false };
    uint64_t seed = 0x9e3779b97f4a7c15ull;

    assert_true(n <= JOINERS_MAX);
    for (unsigned i = 0; i < n; i++)
        for (unsigned b = 0; b < CLUSTER_KEY_LEN; b++)
            keys[i][b] = (uint8_t)xorshift(&seed);
    for (r = 0; n_held < n; r++) {
        unsigned m = 0;
        assert_true(r < ROUNDS_MAX);
        for (unsigned i = 0; i < n; i++) {
            if (done[i])
                continue;
            memcpy(snap, held, n_held * sizeof(*held));
            if (before)
                assert_int_equal(alloc_free_nth(&nw.addr, nw.prefix, snap, n_held,
                                                attempt[i] ? (unsigned)(xorshift(&seed) % 32)
                                                           : 0, &want[i]), 0);
            else
                assert_int_equal(alloc_pick(&nw.addr, nw.prefix, snap, n_held, keys[i],
                                            attempt[i], xorshift(&seed), &want[i]), 0);
            order[m++] = i;
        }
        for (unsigned k = m; k > 1; k--) {           /* the claims' order */
            unsigned j = (unsigned)(xorshift(&seed) % k), t = order[k - 1];
            order[k - 1] = order[j];
            order[j] = t;
        }
        for (unsigned k = 0; k < m; k++) {
            unsigned i = order[k];
            bool taken = false;
            for (unsigned h = 0; h < n_held && !taken; h++)
                taken = cluster_addr_equal(&held[h], &want[i]);
            if (taken) {
                lost++;
                attempt[i]++;
                continue;
            }
            assert_true(cluster_addr_in_network(&want[i], &nw.addr, nw.prefix));
            assert_false(cluster_addr_is_broadcast(&want[i], nw.prefix));
            held[n_held++] = want[i];
            done[i] = true;
        }
    }
    for (unsigned a = 0; a < n_held; a++)            /* all distinct */
        for (unsigned b = a + 1; b < n_held; b++)
            assert_false(cluster_addr_equal(&held[a], &held[b]));
    *rounds = r;
    return lost;
}

/* 256 nodes at once in scale's /16, and 200 in a /24 (nearly full): the
 * claims they lose to each other drop from one round after another of
 * all but one losing to a few. */
static void test_joins_at_once(void **state)
{
    static const struct { const char *net; unsigned n, most; } cases[] = {
        { "10.77.0.0/16", 256, 8 },
        { "10.77.0.0/24", 200, 150 },
        { "10.77.0.0/24", 64, 24 },
    };

    (void)state;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        unsigned r0, r1;
        unsigned was = joins_at_once(cases[c].net, cases[c].n, true, &r0);
        unsigned now = joins_at_once(cases[c].net, cases[c].n, false, &r1);
        print_message("%u nodes at once in %s: claims lost %u in %u rounds before, "
                      "%u in %u rounds now\n", cases[c].n, cases[c].net, was, r0, now, r1);
        assert_true(now <= cases[c].most);
        assert_true(now * 4 <= was);
    }
}

static void test_other_addresses_ignored(void **state)
{
    char buf[64];

    (void)state;
    /* Taken addresses of the other family or of other networks. */
    assert_string_equal(pick("10.77.0.0/24", LIST("fd77::1", "10.78.0.1", "0.0.0.1"), buf,
                             sizeof(buf)), "10.77.0.1");
    assert_string_equal(pick("fd77::/64", LIST("10.77.0.1", "::1", "fd78::1", "fd77::1"), buf,
                             sizeof(buf)), "fd77::2");
}

/* held[i]: address 10.0.0.(i+1), key byte k (0: no key), mod revision. */
static void held_set(struct alloc_held *h, unsigned i, uint8_t k, int64_t mod)
{
    char text[32];

    memset(h, 0, sizeof(*h));
    snprintf(text, sizeof(text), "10.0.0.%u", i + 1);
    assert_int_equal(cluster_addr_parse(text, &h->address), 0);
    memset(h->key, k, sizeof(h->key));
    h->key_ok = k != 0;
    h->mod_revision = mod;
}

/* Taking over an address whose key left: only one no live member holds,
 * the least recently claimed first, the nth on request (the last one when
 * fewer), a record that holds no key counts as left. */
static void test_reclaim(void **state)
{
    struct alloc_held held[5];
    uint8_t live[3][CLUSTER_KEY_LEN];

    (void)state;
    held_set(&held[0], 0, 1, 50);      /* live */
    held_set(&held[1], 1, 2, 40);      /* left */
    held_set(&held[2], 2, 3, 10);      /* live */
    held_set(&held[3], 3, 4, 30);      /* left, the oldest of those */
    held_set(&held[4], 4, 0, 45);      /* no key */
    memset(live[0], 3, CLUSTER_KEY_LEN);
    memset(live[1], 1, CLUSTER_KEY_LEN);
    memset(live[2], 9, CLUSTER_KEY_LEN);
    assert_int_equal(alloc_reclaim(held, 5, live, 3, 0), 3);
    assert_int_equal(alloc_reclaim(held, 5, live, 3, 1), 1);
    assert_int_equal(alloc_reclaim(held, 5, live, 3, 2), 4);
    assert_int_equal(alloc_reclaim(held, 5, live, 3, 31), 4);
    /* Every key live: nothing to take. */
    memset(live[2], 2, CLUSTER_KEY_LEN);
    held[3].key_ok = held[4].key_ok = true;
    memset(held[3].key, 1, CLUSTER_KEY_LEN);
    memset(held[4].key, 3, CLUSTER_KEY_LEN);
    assert_int_equal(alloc_reclaim(held, 5, live, 3, 0), -ENOENT);
    assert_int_equal(alloc_reclaim(held, 0, live, 3, 0), -ENOENT);
    /* No member at all: every record is free to take; equal revisions in
     * the order read. */
    held_set(&held[0], 0, 1, 7);
    held_set(&held[1], 1, 2, 7);
    assert_int_equal(alloc_reclaim(held, 2, live, 0, 0), 0);
    assert_int_equal(alloc_reclaim(held, 2, live, 0, 1), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_network),
        cmocka_unit_test(test_skips_taken_in_any_order),
        cmocka_unit_test(test_duplicates),
        cmocka_unit_test(test_never_network_or_broadcast),
        cmocka_unit_test(test_full_small_networks),
        cmocka_unit_test(test_ipv6),
        cmocka_unit_test(test_other_addresses_ignored),
        cmocka_unit_test(test_nth_free),
        cmocka_unit_test(test_reclaim),
        cmocka_unit_test(test_pick),
        cmocka_unit_test(test_joins_at_once),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
