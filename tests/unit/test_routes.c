/* SPDX-License-Identifier: MIT */
/* Routes granted by the cluster file (config/routes.h, issue 60): the
 * text form, the whole-file rules (no overlap between grants, with the
 * overlay's network, or with a node's endpoint), the carrier lookup and a
 * reload's difference. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>
#include <stdio.h>

#include "config/cluster.h"
#include "config/cluster_diff.h"
#include "config/addr.h"
#include "config/routes.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="

/* Lines 1-3, 4-6 (node a, the gateway), 7-9 (node b). */
#define C4 "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NA "[node gw]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"

static int parse_str(const char *text, struct cluster *c, struct cluster_diag *d)
{
    return cluster_parse(text, strlen(text), c, d);
}

static void route_text(const struct cluster_route *r, const char *want)
{
    char buf[CLUSTER_ROUTE_TEXT_MAX];

    assert_int_equal(cluster_route_format(r, buf, sizeof(buf)), 0);
    assert_string_equal(buf, want);
}

static void test_grants_parsed(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    assert_int_equal(parse_str(C4 NA "routes = 192.168.50.0/24, 10.1.2.3/32 fd10::/64\n"
                               "route-names = nas.cluster=192.168.50.10 lic=fd10::5\n" NB,
                               &c, &d), 0);
    assert_int_equal(c.nodes[0].n_routes, 3);
    route_text(&c.nodes[0].routes[0], "192.168.50.0/24");
    route_text(&c.nodes[0].routes[1], "10.1.2.3/32");
    route_text(&c.nodes[0].routes[2], "fd10::/64");
    assert_int_equal(c.nodes[1].n_routes, 0);
    assert_false(c.nodes[0].routed);
    assert_int_equal(c.nodes[0].n_route_names, 2);
    assert_string_equal(c.nodes[0].route_names[0].name, "nas.cluster");
    assert_string_equal(c.nodes[0].route_names[1].name, "lic");

    struct cluster_addr a;
    assert_int_equal(cluster_addr_parse("192.168.50.7", &a), 0);
    assert_true(cluster_route_holds(&c.nodes[0].routes[0], &a));
    assert_int_equal(cluster_addr_parse("192.168.51.7", &a), 0);
    assert_false(cluster_route_holds(&c.nodes[0].routes[0], &a));
    assert_int_equal(cluster_addr_parse("10.1.2.3", &a), 0);
    assert_true(cluster_route_holds(&c.nodes[0].routes[1], &a));
    assert_int_equal(cluster_addr_parse("10.1.2.4", &a), 0);
    assert_false(cluster_route_holds(&c.nodes[0].routes[1], &a));
    cluster_free(&c);
}

struct bad {
    const char *text;
    int line;
    const char *message;
};

static const struct bad bads[] = {
    { C4 NA "routes = 192.168.50.1/24\n", 7,
      "bad route '192.168.50.1/24': host bits set (write the network's first address)" },
    { C4 NA "routes = 192.168.50.0\n", 7,
      "bad route '192.168.50.0': expected ADDRESS/LENGTH, as 192.168.50.0/24" },
    { C4 NA "routes = 0.0.0.0/0\n", 7, "bad route '0.0.0.0/0': length must be 1..32 for ipv4" },
    { C4 NA "routes = 192.168.50.0/33\n", 7,
      "bad route '192.168.50.0/33': length must be 1..32 for ipv4" },
    { C4 NA "routes = fd10::/129\n", 7, "bad route 'fd10::/129': length must be 1..128 for ipv6" },
    { C4 NA "routes = nas/24\n", 7, "bad route 'nas/24': not an ipv4 or ipv6 address before '/'" },
    { C4 NA "routes = ,\n", 7, "bad route ',': no prefix given" },
    { C4 NA "routes = 192.168.50.0/24\nmasquerade = maybe\n", 8,
      "bad masquerade 'maybe' (expected yes or no)" },
    { C4 NA "routes = 192.168.50.0/24\nroute-names = nas.cluster=192.168.51.10\n", 8,
      "route-name nas.cluster: its address is in none of this node's routes" },
    { C4 NA "routes = 192.168.50.0/24\nroute-names = nas\n", 8,
      "bad route-name 'nas' (expected NAME=ADDRESS, as nas=192.168.50.10)" },
    { C4 NA "routes = 192.168.50.0/24\nroute-names = n_s=192.168.50.10\n", 8,
      "bad route-name 'n_s=192.168.50.10' (expected NAME=ADDRESS, as nas=192.168.50.10)" },
    { C4 NA "masquerade = no\n", 7,
      "masquerade without routes (it says how the node forwards them)" },
    { C4 NA "routes = 10.0.1.0/24 10.0.2.0/24 10.0.3.0/24 10.0.4.0/24 10.0.5.0/24 "
      "10.0.6.0/24 10.0.7.0/24 10.0.8.0/24 10.0.9.0/24\n", 7,
      "bad route '10.0.9.0/24': too many routes for one node (at most 8)" },
    /* The overlay's own network, inside or around it. */
    { C4 NA "routes = 10.77.5.0/24\n", 7,
      "route 10.77.5.0/24 overlaps the overlay's network (its addresses are the members' own)" },
    { C4 NA "routes = 10.0.0.0/8\n", 7,
      "route 10.0.0.0/8 overlaps the overlay's network (its addresses are the members' own)" },
    /* Two grants: one node's, then two nodes'. */
    { C4 NA "routes = 192.168.0.0/16, 192.168.50.0/24\n", 7,
      "route 192.168.50.0/24 overlaps 192.168.0.0/16 granted to gw (one node carries an "
      "address)" },
    { C4 NA "routes = 192.168.50.0/24\n" NB "routes = 192.168.50.128/25\n", 11,
      "route 192.168.50.128/25 overlaps 192.168.50.0/24 granted to gw (one node carries an "
      "address)" },
    /* A node's underlay endpoint inside a grant: the tunnel into itself. */
    { C4 NA "routes = 192.168.50.0/24\n" NB "endpoint = 192.168.50.9:51820\n", 7,
      "route 192.168.50.0/24 holds node b's endpoint 192.168.50.9 (its tunnel would go into "
      "itself)" },
};

static void test_grants_refused(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
        struct cluster c;
        struct cluster_diag d;
        int r = parse_str(bads[i].text, &c, &d);
        if (r != -EINVAL || d.n != 1 || strcmp(d.items[0].message, bads[i].message))
            print_message("case %zu: r=%d n=%zu '%s'\n", i, r, d.n, d.n ? d.items[0].message : "");
        assert_int_equal(r, -EINVAL);
        assert_int_equal(d.n, 1);
        assert_int_equal(d.items[0].line, bads[i].line);
        assert_string_equal(d.items[0].message, bads[i].message);
    }
}

/* Touching is not overlapping; another family never overlaps. */
static void test_neighbours_taken(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    assert_int_equal(parse_str(C4 NA "routes = 192.168.50.0/25\n" NB
                               "routes = 192.168.50.128/25, fd77::/64\nmasquerade = no\n"
                               "[node c]\npublic-key = " K3 "\naddress = 10.77.0.3\n"
                               "endpoint = 192.168.51.1:51820\n", &c, &d), 0);
    assert_int_equal(c.nodes[1].n_routes, 2);
    assert_true(c.nodes[1].routed);
    cluster_free(&c);
}

/* More grants in the file than CLUSTER_ROUTES_TOTAL_MAX: refused. */
static void test_total_capped(void **state)
{
    char text[64 * 1024], *at = text;
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    at += sprintf(at, C4);
    for (unsigned i = 0; i < CLUSTER_ROUTES_TOTAL_MAX / CLUSTER_ROUTES_MAX + 1; i++) {
        char key[64];
        uint8_t raw[CLUSTER_KEY_LEN] = { (uint8_t)i, 1 };
        sodium_bin2base64(key, sizeof(key), raw, sizeof(raw), sodium_base64_VARIANT_ORIGINAL);
        at += sprintf(at, "[node n%u]\npublic-key = %s\naddress = 10.77.1.%u\nroutes =", i, key,
                      i + 1);
        for (unsigned k = 0; k < CLUSTER_ROUTES_MAX; k++)
            at += sprintf(at, " 172.%u.%u.0/24", 16 + i / 8, (i % 8) * 8 + k);
        at += sprintf(at, "\n");
    }
    assert_int_equal(parse_str(text, &c, &d), -EINVAL);
    assert_int_equal(d.n, 1);
    assert_string_equal(d.items[0].message, "more than 256 routes in the file");
}

/* A reload that takes a grant away, or gives one, changes that node. */
static void test_diff_routes(void **state)
{
    struct cluster a, b;
    struct cluster_diff d;
    char line[128];
    (void)state;

    assert_int_equal(parse_str(C4 NA "routes = 192.168.50.0/24\n" NB, &a, NULL), 0);
    assert_int_equal(parse_str(C4 NA NB, &b, NULL), 0);
    assert_int_equal(cluster_diff(&a, &b, &d), 0);
    assert_int_equal(d.n, 1);
    assert_int_equal(d.changes[0].kind, CLUSTER_NODE_CHANGED);
    assert_int_equal(d.changes[0].what, CLUSTER_CHANGED_ROUTES);
    assert_int_equal(cluster_change_format(&d.changes[0], line, sizeof(line)), 0);
    assert_string_equal(line, "changed gw: routes");
    cluster_diff_free(&d);
    assert_int_equal(cluster_diff(&a, &a, &d), 0);
    assert_int_equal(d.n, 0);
    cluster_diff_free(&d);
    cluster_free(&a);
    cluster_free(&b);
}

/* Issue 60: a certificate's routes under the file's rules, against the
 * grants held first: the file's grant (gw's), the overlay's network, a
 * file node's endpoint, an earlier certificate's grant; what is free is
 * kept in order; each refusal reported with what it overlaps; past the
 * total cap everything is refused. */
struct refusals {
    size_t n;
    char last[200];
};

static void on_refused(void *ctx, const struct cluster_node *node, const struct cluster_route *r,
                       const char *why)
{
    struct refusals *f = ctx;
    char t[CLUSTER_ROUTE_TEXT_MAX];

    assert_int_equal(cluster_route_format(r, t, sizeof(t)), 0);
    snprintf(f->last, sizeof(f->last), "%s %s: %s", node->name, t, why);
    f->n++;
}

static void grant_of(struct cluster_node *n, const char *name, const char *routes)
{
    const char *why = NULL;
    char bad[64];

    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    assert_int_equal(cluster_routes_parse(routes, n->routes, &n->n_routes, &why, bad,
                                          sizeof(bad)), 0);
}

static void test_admit_cert_routes(void **state)
{
    struct cluster file;
    struct cluster_diag d;
    struct cluster_node held[2];
    struct refusals f = { 0 };
    size_t total = 1;
    (void)state;

    assert_int_equal(parse_str(C4 NA "routes = 192.168.50.0/24\n" NB
                               "endpoint = 203.0.113.9:51820\n", &file, &d), 0);
    grant_of(&held[0], "c1", "192.168.50.128/25, 10.20.0.0/16, 10.77.5.0/24, 203.0.113.0/24, "
                             "fd10::/64");
    assert_int_equal(cluster_routes_admit(&file, held, 0, &held[0], &total, on_refused, &f), 3);
    assert_int_equal(held[0].n_routes, 2);
    route_text(&held[0].routes[0], "10.20.0.0/16");
    route_text(&held[0].routes[1], "fd10::/64");
    assert_int_equal(total, 3);
    assert_string_equal(f.last, "c1 203.0.113.0/24: b");
    /* c2 after c1: c1's grant is held first. */
    grant_of(&held[1], "c2", "10.20.5.0/24, 172.16.0.0/12");
    assert_int_equal(cluster_routes_admit(&file, held, 1, &held[1], &total, on_refused, &f), 1);
    assert_string_equal(f.last, "c2 10.20.5.0/24: c1");
    assert_int_equal(held[1].n_routes, 1);
    route_text(&held[1].routes[0], "172.16.0.0/12");
    /* The cap: nothing more once the model holds CLUSTER_ROUTES_TOTAL_MAX. */
    total = CLUSTER_ROUTES_TOTAL_MAX;
    grant_of(&held[1], "c3", "172.31.0.0/16");
    assert_int_equal(cluster_routes_admit(&file, held, 1, &held[1], &total, on_refused, &f), 1);
    assert_int_equal(held[1].n_routes, 0);
    assert_string_equal(f.last, "c3 172.31.0.0/16: the cap on routes");
    assert_int_equal(f.n, 5);
    cluster_free(&file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grants_parsed),
        cmocka_unit_test(test_grants_refused),
        cmocka_unit_test(test_neighbours_taken),
        cmocka_unit_test(test_total_capped),
        cmocka_unit_test(test_diff_routes),
        cmocka_unit_test(test_admit_cert_routes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
