/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/cands.c, the candidates a registered node
 * publishes of itself (issue 30), on made-up interface lists: which
 * addresses (up, not loopback, not link-local, multicast or unspecified,
 * not the overlay's), in which order (the --endpoint first when it is an
 * IP literal, then IPv4, then IPv6, each in the interfaces' order), on
 * the listen port, no two alike, CLUSTER_CANDIDATES_MAX at most; and
 * this machine's read with getifaddrs under the same rules. */
#include <arpa/inet.h>
#include <net/if.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/addr.h"
#include "overlay/registry/cands.h"
#include "overlay/registry/record.h"

#define PORT 51820u
#define IFS_MAX 24u

/* A made-up interface list. */
struct fake_ifs {
    unsigned n;
    struct ifaddrs ifa[IFS_MAX];
    struct sockaddr_storage sa[IFS_MAX];
    char name[IFS_MAX][IFNAMSIZ];
};

static void add_if(struct fake_ifs *f, const char *name, const char *addr, unsigned flags)
{
    unsigned i = f->n++;
    struct ifaddrs *a = &f->ifa[i];

    assert_true(i < IFS_MAX);
    memset(a, 0, sizeof(*a));
    snprintf(f->name[i], IFNAMSIZ, "%s", name);
    a->ifa_name = f->name[i];
    a->ifa_flags = flags;
    if (strchr(addr, ':')) {
        struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&f->sa[i];
        s6->sin6_family = AF_INET6;
        assert_int_equal(inet_pton(AF_INET6, addr, &s6->sin6_addr), 1);
    } else {
        struct sockaddr_in *s4 = (struct sockaddr_in *)&f->sa[i];
        s4->sin_family = AF_INET;
        assert_int_equal(inet_pton(AF_INET, addr, &s4->sin_addr), 1);
    }
    a->ifa_addr = (struct sockaddr *)&f->sa[i];
    if (i)
        f->ifa[i - 1].ifa_next = a;
}

static struct cands_rules rules_of(const char *network)
{
    struct cands_rules r = { .port = PORT };
    const char *why = NULL;

    assert_int_equal(cluster_prefix_parse(network, &r.network, &r.prefix, &why), 0);
    cluster_addr_mask(&r.network, r.prefix);
    return r;
}

/* out[0..n) as "A:P A:P ...". */
static const char *text_of(const struct cluster_cand *out, unsigned n)
{
    static char text[CLUSTER_CANDIDATES_MAX * 56];
    char one[56];

    text[0] = '\0';
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(record_cand_format(&out[i], one, sizeof(one)), 0);
        strcat(text, i ? " " : "");
        strcat(text, one);
    }
    return text;
}

#define UP IFF_UP

static void test_which_addresses(void **state)
{
    struct fake_ifs f = { 0 };
    struct cands_rules r = rules_of("10.77.0.0/16");
    struct cluster_cand out[CLUSTER_CANDIDATES_MAX];
    unsigned n;

    (void)state;
    add_if(&f, "lo", "127.0.0.1", UP | IFF_LOOPBACK);
    add_if(&f, "lo", "::1", UP | IFF_LOOPBACK);
    add_if(&f, "eth0", "fe80::1", UP);               /* link-local */
    add_if(&f, "eth0", "192.168.1.7", UP);
    add_if(&f, "eth1", "169.254.3.3", UP);           /* link-local */
    add_if(&f, "eth2", "10.0.3.7", 0);                /* down */
    add_if(&f, "ddp0", "10.77.0.9", UP);             /* the overlay's own */
    add_if(&f, "eth0", "2001:db8::7", UP);
    add_if(&f, "dummy", "0.0.0.0", UP);
    add_if(&f, "eth3", "172.31.40.46", UP);
    add_if(&f, "eth3", "172.31.40.46", UP);          /* listed twice */
    add_if(&f, "lo2", "198.51.100.9", UP | IFF_LOOPBACK);   /* on a loopback interface */
    n = cands_pick(f.ifa, &r, out);
    /* IPv4 first, then IPv6; each in the interfaces' order; the port. */
    assert_string_equal(text_of(out, n), "192.168.1.7:51820 172.31.40.46:51820 "
                                         "[2001:db8::7]:51820");
    /* Nothing usable: none. */
    struct fake_ifs lo = { 0 };
    add_if(&lo, "lo", "127.0.0.1", UP | IFF_LOOPBACK);
    assert_int_equal(cands_pick(lo.ifa, &r, out), 0);
    assert_int_equal(cands_pick(NULL, &r, out), 0);
}

static void test_endpoint_first(void **state)
{
    struct fake_ifs f = { 0 };
    struct cands_rules r = rules_of("fd77::/64");
    struct cluster_cand out[CLUSTER_CANDIDATES_MAX];
    struct cluster_endpoint ep;

    (void)state;
    add_if(&f, "eth0", "192.168.1.7", UP);
    add_if(&f, "eth0", "fd77::5", UP);               /* the overlay's network */
    add_if(&f, "eth1", "203.0.113.7", UP);
    assert_int_equal(cluster_endpoint_parse("203.0.113.7:4000", &ep, NULL), 0);
    r.endpoint = &ep;
    /* The --endpoint first, on its own port; the interface with the same
     * address still comes, on the listen port. */
    assert_string_equal(text_of(out, cands_pick(f.ifa, &r, out)),
                        "203.0.113.7:4000 192.168.1.7:51820 203.0.113.7:51820");
    assert_int_equal(cluster_endpoint_parse("203.0.113.7:51820", &ep, NULL), 0);
    assert_string_equal(text_of(out, cands_pick(f.ifa, &r, out)),
                        "203.0.113.7:51820 192.168.1.7:51820");
    /* A hostname is no candidate: the interfaces alone. */
    assert_int_equal(cluster_endpoint_parse("gpu-7.example:51820", &ep, NULL), 0);
    assert_string_equal(text_of(out, cands_pick(f.ifa, &r, out)),
                        "192.168.1.7:51820 203.0.113.7:51820");
}

static void test_bounded(void **state)
{
    struct fake_ifs f = { 0 };
    struct cands_rules r = rules_of("10.77.0.0/16");
    struct cluster_cand out[CLUSTER_CANDIDATES_MAX + 1];
    struct cluster_endpoint ep;
    char addr[32];

    (void)state;
    for (unsigned i = 0; i < IFS_MAX / 2; i++) {
        snprintf(addr, sizeof(addr), "2001:db8::%u", i + 1);
        add_if(&f, "eth0", addr, UP);
        snprintf(addr, sizeof(addr), "192.168.%u.7", i);
        add_if(&f, "eth0", addr, UP);
    }
    memset(out, 0xa5, sizeof(out));
    assert_int_equal(cands_pick(f.ifa, &r, out), CLUSTER_CANDIDATES_MAX);
    /* IPv4 ones fill the list before any IPv6 one; nothing past it written. */
    assert_int_equal(out[CLUSTER_CANDIDATES_MAX - 1].addr.family, AF_INET);
    assert_int_equal(out[CLUSTER_CANDIDATES_MAX].port, 0xa5a5);
    assert_string_equal(text_of(out, 2), "192.168.0.7:51820 192.168.1.7:51820");
    assert_int_equal(cluster_endpoint_parse("[2001:db8::99]:1", &ep, NULL), 0);
    r.endpoint = &ep;
    assert_int_equal(cands_pick(f.ifa, &r, out), CLUSTER_CANDIDATES_MAX);
    assert_string_equal(text_of(out, 2), "[2001:db8::99]:1 192.168.0.7:51820");
}

/* This machine's, read as the keeper reads them: each one usable, on the
 * port, outside the overlay's network, no two alike. */
static void test_gather(void **state)
{
    struct cands_rules r = rules_of("10.77.0.0/16");
    struct cluster_cand out[CLUSTER_CANDIDATES_MAX];
    unsigned n = 0;

    (void)state;
    assert_int_equal(cands_gather(&r, out, &n), 0);
    assert_true(n <= CLUSTER_CANDIDATES_MAX);
    for (unsigned i = 0; i < n; i++) {
        assert_true(record_cand_usable(&out[i]));
        assert_int_equal(out[i].port, PORT);
        assert_false(cluster_addr_in_network(&out[i].addr, &r.network, r.prefix));
        for (unsigned k = 0; k < i; k++)
            assert_false(cluster_addr_equal(&out[i].addr, &out[k].addr));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_which_addresses),
        cmocka_unit_test(test_endpoint_first),
        cmocka_unit_test(test_bounded),
        cmocka_unit_test(test_gather),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
