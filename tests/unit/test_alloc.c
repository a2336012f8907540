/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/alloc.c, the address a registering node gets:
 * the lowest of the network when nothing is taken, the lowest free one
 * whatever the order and repetitions of the taken list, never the
 * network's own address nor its broadcast address, -ENOSPC for a full
 * network and for those with no host address to give (/31, /32), and
 * IPv6 networks (/64, /120), with taken addresses of the other family
 * or outside the network making no difference. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
