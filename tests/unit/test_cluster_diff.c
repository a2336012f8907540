/* SPDX-License-Identifier: MIT */
/* Tests of the difference of two cluster models (config/cluster_diff.c):
 * an unchanged file, every kind of node change (added, removed, key,
 * address, endpoint, port, keepalive, from the node or from [cluster]),
 * a rename, the [cluster] settings a running node cannot take, the
 * order of the changes, and the lines they print as. Also the keys the
 * diff compares that only [node] sections have: persistent-keepalive and
 * aliases. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "config/cluster_diff.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="
#define K4 "vofb+H8p26CYyRdLZ9bDVFcOCg8L9uPQZkmy7iGBuns="

#define HEAD "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\nendpoint = 192.0.2.1:51820\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
#define NC "[node c]\npublic-key = " K3 "\naddress = 10.77.0.3\n"

struct pair {
    struct cluster old, new;
    struct cluster_diff d;
};

/* Parses both files and diffs them; the test reads p->d. */
static void diff_of(struct pair *p, const char *old, const char *new)
{
    struct cluster_diag diag;

    memset(p, 0, sizeof(*p));
    assert_int_equal(cluster_parse(old, strlen(old), &p->old, &diag), 0);
    assert_int_equal(cluster_parse(new, strlen(new), &p->new, &diag), 0);
    assert_int_equal(cluster_diff(&p->old, &p->new, &p->d), 0);
}

static void pair_free(struct pair *p)
{
    cluster_diff_free(&p->d);
    cluster_free(&p->old);
    cluster_free(&p->new);
}

/* The i-th change, as the line a person reads. */
static void assert_line(const struct pair *p, size_t i, const char *want)
{
    char buf[128];

    assert_true(i < p->d.n);
    assert_int_equal(cluster_change_format(&p->d.changes[i], buf, sizeof(buf)), 0);
    assert_string_equal(buf, want);
}

static void test_unchanged(void **state)
{
    struct pair p;

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD "# a comment, and the same nodes\n" NA NB);
    assert_int_equal(p.d.n, 0);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
}

/* Groups compare by name (each model numbers its names its own way);
 * rules are one list, taken live (issue 61). */
static void test_groups_and_rules(void **state)
{
    struct pair p;

    (void)state;
    /* the same groups, numbered otherwise: b's name comes first in the new file */
    diff_of(&p, HEAD NA "groups = train\n" NB "groups = spot\n",
            HEAD "[rules]\nallow spot -> train tcp 22\n" NA "groups = train\n" NB "groups = spot\n");
    assert_int_equal(p.d.n, 0);
    assert_true(p.d.rules);
    pair_free(&p);
    diff_of(&p, HEAD NA "groups = train\n" NB, HEAD NA "groups = train, onprem\n" NB);
    assert_int_equal(p.d.n, 1);
    assert_false(p.d.rules);     /* a new name, but no rule */
    assert_line(&p, 0, "changed a: groups");
    pair_free(&p);
    diff_of(&p, HEAD NA "[rules]\nallow any -> any icmp\n",
            HEAD NA "[rules]\nallow any -> any icmp  # pings\n");
    assert_int_equal(p.d.n, 0);
    assert_false(p.d.rules);
    pair_free(&p);
}

static void test_added_removed_in_order(void **state)
{
    struct pair p;

    (void)state;
    /* c goes, d comes, b changes: removed first, then changed, then added. */
    diff_of(&p, HEAD NA NB NC,
            HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nendpoint = 192.0.2.2:51820\n"
                    "[node d]\npublic-key = " K4 "\naddress = 10.77.0.4\n");
    assert_int_equal(p.d.n, 3);
    assert_line(&p, 0, "removed c");
    assert_null(p.d.changes[0].new_node);
    assert_string_equal(p.d.changes[0].old_node->name, "c");
    assert_line(&p, 1, "changed b: endpoint");
    assert_line(&p, 2, "added d");
    assert_null(p.d.changes[2].old_node);
    assert_string_equal(p.d.changes[2].new_node->name, "d");
    pair_free(&p);
}

static void test_each_node_change(void **state)
{
    static const struct {
        const char *new_b;
        const char *line;
        unsigned what;
    } cases[] = {
        { "[node b]\npublic-key = " K4 "\naddress = 10.77.0.2\n", "changed b: key", CLUSTER_CHANGED_KEY },
        { "[node b]\npublic-key = " K2 "\naddress = 10.77.0.9\n", "changed b: address",
          CLUSTER_CHANGED_ADDRESS },
        { "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nendpoint = b.example:51820\n",
          "changed b: endpoint", CLUSTER_CHANGED_ENDPOINT },
        { "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nport = 4000\n", "changed b: port",
          CLUSTER_CHANGED_PORT },
        { "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\npersistent-keepalive = 25\n",
          "changed b: keepalive", CLUSTER_CHANGED_KEEPALIVE },
        /* Set to what it was already (the cluster's 0): no change. */
        { "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\npersistent-keepalive = 0\n", NULL, 0 },
        { "[node b]\npublic-key = " K4 "\naddress = 10.77.0.9\nport = 4000\n",
          "changed b: key, address, port",
          CLUSTER_CHANGED_KEY | CLUSTER_CHANGED_ADDRESS | CLUSTER_CHANGED_PORT },
    };
    char new[1024];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct pair p;
        snprintf(new, sizeof(new), HEAD NA "%s", cases[i].new_b);
        diff_of(&p, HEAD NA NB, new);
        if (!cases[i].line) {
            assert_int_equal(p.d.n, 0);
        } else {
            assert_int_equal(p.d.n, 1);
            assert_int_equal(p.d.changes[0].kind, CLUSTER_NODE_CHANGED);
            assert_int_equal(p.d.changes[0].what, cases[i].what);
            assert_line(&p, 0, cases[i].line);
        }
        pair_free(&p);
    }
}

/* An endpoint that goes, one that changes port, one written differently. */
static void test_endpoint_forms(void **state)
{
    struct pair p;

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n" NB);
    assert_line(&p, 0, "changed a: endpoint");
    pair_free(&p);
    diff_of(&p, HEAD NA NB,
            HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\nendpoint = 192.0.2.1:4000\n" NB);
    assert_line(&p, 0, "changed a: endpoint");
    pair_free(&p);
}

/* [cluster]'s port and keepalive reach every node that does not set its
 * own; network, mtu and busy-poll are settings a running node cannot
 * take. */
static void test_cluster_settings(void **state)
{
    struct pair p;
    char buf[64];

    (void)state;
    diff_of(&p, HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nport = 51820\n",
            "[cluster]\nnetwork = 10.77.0.0/16\nport = 4000\npersistent-keepalive = 25\n" NA
            "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nport = 51820\n");
    assert_int_equal(p.d.n, 2);
    assert_line(&p, 0, "changed a: port, keepalive");
    assert_line(&p, 1, "changed b: keepalive");       /* its own port stayed */
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);

    diff_of(&p, HEAD NA NB, "[cluster]\nnetwork = 10.78.0.0/16\nport = 51820\nmtu = 1380\n"
                            "busy-poll = 0\nsocket-buffer = 64M\n"
                            "[node a]\npublic-key = " K1 "\naddress = 10.78.0.1\n"
                            "endpoint = 192.0.2.1:51820\n"
                            "[node b]\npublic-key = " K2 "\naddress = 10.78.0.2\n");
    assert_int_equal(p.d.settings,
                     CLUSTER_CHANGED_NETWORK | CLUSTER_CHANGED_MTU | CLUSTER_CHANGED_BUSY_POLL |
                         CLUSTER_CHANGED_SOCKET_BUFFER);
    assert_int_equal(cluster_settings_format(p.d.settings, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "network, mtu, busy-poll, socket-buffer");
    assert_int_equal(cluster_settings_format(0, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "");
    assert_int_equal(cluster_settings_format(p.d.settings, buf, 8), -ENOSPC);
    pair_free(&p);
}

/* A rename is a node removed and one added; names match whatever their case. */
static void test_rename_and_case(void **state)
{
    struct pair p;

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD NA "[node bee]\npublic-key = " K2 "\naddress = 10.77.0.2\n");
    assert_int_equal(p.d.n, 2);
    assert_line(&p, 0, "removed b");
    assert_line(&p, 1, "added bee");
    pair_free(&p);
    diff_of(&p, HEAD NA NB, HEAD NA "[node B]\npublic-key = " K2 "\naddress = 10.77.0.2\n");
    assert_int_equal(p.d.n, 0);
    pair_free(&p);
}

static void test_format_bounds(void **state)
{
    struct pair p;
    char buf[12];

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD NA "[node b]\npublic-key = " K4 "\naddress = 10.77.0.9\n");
    assert_int_equal(cluster_change_format(&p.d.changes[0], buf, sizeof(buf)), -ENOSPC);
    assert_int_equal(cluster_change_format(&p.d.changes[0], buf, 0), -ENOSPC);
    pair_free(&p);
}

/* The per-node keepalive: parsed, bounded, and falling back to [cluster]'s. */
static void test_node_keepalive_key(void **state)
{
    const char *text = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\npersistent-keepalive = 15\n"
                       NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
                       "persistent-keepalive = 0\n";
    const char *bad = HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
                      "persistent-keepalive = 70000\n";
    struct cluster c;
    struct cluster_diag diag;
    char line[256];

    (void)state;
    assert_int_equal(cluster_parse(text, strlen(text), &c, &diag), 0);
    assert_int_equal(cluster_node_keepalive(&c, &c.nodes[0]), 15);
    assert_int_equal(cluster_node_keepalive(&c, &c.nodes[1]), 0);
    cluster_free(&c);
    assert_int_equal(cluster_parse(bad, strlen(bad), &c, &diag), -EINVAL);
    assert_int_equal(diag.n, 1);
    assert_int_equal(cluster_diag_format(&diag, 0, "c.conf", line, sizeof(line)), 0);
    assert_string_equal(line, "c.conf:11: bad persistent-keepalive '70000' (expected seconds "
                              "0..65535, 0 = off)");
}

/* aliases = ...: hostnames, four at most, each naming one node only. */
static void test_aliases_key(void **state)
{
    const char *good = HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
                       "aliases = ip-192-0-2-2  b.example.internal\n";
    static const struct {
        const char *extra;
        const char *message;
    } bad[] = {
        { "aliases = under_score\n", "bad alias 'under_score' (expected a hostname of at most 63 characters)" },
        { "aliases = a1 a2 a3 a4 a5\n", "too many aliases (at most 4)" },
        { "aliases =   \n", "missing value for 'aliases'" },
        { "aliases = A\n", "alias 'A' is already the name of node a" },
        { "aliases = b\n", "alias 'b' is already the name of node b" },
        { "aliases = x x\n", "alias 'x' is already an alias of node b" },
    };
    struct cluster c;
    struct cluster_diag diag;
    char text[1024], line[256];

    (void)state;
    assert_int_equal(cluster_parse(good, strlen(good), &c, &diag), 0);
    assert_int_equal(c.nodes[1].n_aliases, 2);
    assert_string_equal(c.nodes[1].aliases[0], "ip-192-0-2-2");
    assert_string_equal(c.nodes[1].aliases[1], "b.example.internal");
    assert_int_equal(c.nodes[0].n_aliases, 0);
    cluster_free(&c);
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(text, sizeof(text), HEAD NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n%s",
                 bad[i].extra);
        assert_int_equal(cluster_parse(text, strlen(text), &c, &diag), -EINVAL);
        assert_int_equal(diag.n, 1);
        assert_int_equal(cluster_diag_format(&diag, 0, "c", line, sizeof(line)), 0);
        snprintf(text, sizeof(text), "c:11: %s", bad[i].message);
        assert_string_equal(line, text);
    }
    /* Another node's alias too. */
    snprintf(text, sizeof(text), HEAD "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
             "aliases = gpu\n" "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\n"
             "aliases = GPU\n");
    assert_int_equal(cluster_parse(text, strlen(text), &c, &diag), -EINVAL);
    assert_int_equal(cluster_diag_format(&diag, 0, "c", line, sizeof(line)), 0);
    assert_string_equal(line, "c:11: alias 'GPU' is already an alias of node a");
}

/* hostnames = on|off in [cluster]; a change of it is a setting a running
 * node does not take. */
static void test_hostnames_key(void **state)
{
    struct cluster c;
    struct cluster_diag diag;
    struct pair p;
    char line[256];
    const char *off = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nhostnames = off\n" NA;
    const char *bad = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nhostnames = maybe\n" NA;

    (void)state;
    assert_int_equal(cluster_parse(HEAD NA, strlen(HEAD NA), &c, &diag), 0);
    assert_false(c.hostnames_off);
    cluster_free(&c);
    assert_int_equal(cluster_parse(off, strlen(off), &c, &diag), 0);
    assert_true(c.hostnames_off);
    cluster_free(&c);
    assert_int_equal(cluster_parse(bad, strlen(bad), &c, &diag), -EINVAL);
    assert_int_equal(cluster_diag_format(&diag, 0, "c", line, sizeof(line)), 0);
    assert_string_equal(line, "c:4: bad hostnames 'maybe' (expected on or off)");
    diff_of(&p, HEAD NA, off);
    assert_int_equal(p.d.settings, CLUSTER_CHANGED_HOSTNAMES);
    assert_int_equal(p.d.n, 0);
    pair_free(&p);
}

/* machine-domains: a change is a setting a running node does not take
 * (like hostnames: the names its peers already hold were judged by it). */
static void test_machine_domains_change(void **state)
{
    const char *list = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                       "machine-domains = ec2.internal\n" NA;
    const char *same = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                       "machine-domains = EC2.internal\n" NA;
    struct pair p;
    char what[64];

    (void)state;
    diff_of(&p, HEAD NA, list);
    assert_int_equal(p.d.settings, CLUSTER_CHANGED_MACHINE_DOMAINS);
    assert_int_equal(cluster_settings_format(p.d.settings, what, sizeof(what)), 0);
    assert_string_equal(what, "machine-domains");
    pair_free(&p);
    diff_of(&p, list, same);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
}

/* authority: who signs membership is not changed under a running node. */
static void test_authority_change(void **state)
{
    const char *a = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                    "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=\n" NA;
    const char *b = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                    "authority = BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA=\n" NA;
    struct pair p;
    char what[64];

    (void)state;
    diff_of(&p, HEAD NA, a);
    assert_int_equal(p.d.settings, CLUSTER_CHANGED_AUTHORITY);
    assert_int_equal(cluster_settings_format(p.d.settings, what, sizeof(what)), 0);
    assert_string_equal(what, "authority");
    pair_free(&p);
    diff_of(&p, a, b);
    assert_int_equal(p.d.settings, CLUSTER_CHANGED_AUTHORITY);
    pair_free(&p);
    diff_of(&p, a, a);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
    /* Issue 56: a rotation's steps keep a key in common, and are taken
     * live: a, then a and b, then b. Straight from a to b is refused. */
    const char *ab = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                     "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA= "
                     "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA=\n" NA;
    diff_of(&p, a, ab);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
    diff_of(&p, ab, b);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
    diff_of(&p, b, ab);
    assert_int_equal(p.d.settings, 0);
    pair_free(&p);
}

/* metrics and metrics-public: where the endpoint listens is a setting a
 * running node does not take (its socket was made at up). */
static void test_metrics_change(void **state)
{
    static const char *const files[] = {
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n" NA,
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nmetrics = overlay:9586\n" NA,
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nmetrics = overlay:9587\n" NA,
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nmetrics = 127.0.0.1:9587\n" NA,
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nmetrics = 127.0.0.2:9587\n" NA,
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\nmetrics = 127.0.0.2:9587\n"
        "metrics-public = yes\n" NA,
    };
    struct pair p;
    char buf[64];

    (void)state;
    for (size_t i = 0; i + 1 < sizeof(files) / sizeof(files[0]); i++) {
        diff_of(&p, files[i], files[i + 1]);
        assert_int_equal(p.d.settings, CLUSTER_CHANGED_METRICS);
        assert_int_equal(p.d.n, 0);
        pair_free(&p);
        diff_of(&p, files[i + 1], files[i + 1]);
        assert_int_equal(p.d.settings, 0);
        pair_free(&p);
    }
    assert_int_equal(cluster_settings_format(CLUSTER_CHANGED_METRICS | CLUSTER_CHANGED_MTU, buf,
                                             sizeof(buf)), 0);
    assert_string_equal(buf, "mtu, metrics");
}

static void test_aliases_change(void **state)
{
    struct pair p;

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD NA NB "aliases = ip-192-0-2-2\n");
    assert_int_equal(p.d.n, 1);
    assert_int_equal(p.d.changes[0].what, CLUSTER_CHANGED_ALIASES);
    assert_line(&p, 0, "changed b: aliases");
    pair_free(&p);
}

/* A registered node's candidates (the registry's; never the file's):
 * any change of them, their order or the observed one is a change. */
static void test_candidates_change(void **state)
{
    struct pair p;
    struct cluster_node *b;

    (void)state;
    diff_of(&p, HEAD NA NB, HEAD NA NB);
    b = &p.new.nodes[1];
    b->n_candidates = 2;
    b->candidates[0] = (struct cluster_cand){ .addr = { .family = AF_INET, .bytes = { 10, 0, 0, 2 } },
                                              .port = 51820 };
    b->candidates[1] = (struct cluster_cand){ .addr = { .family = AF_INET, .bytes = { 10, 0, 1, 2 } },
                                              .port = 51820 };
    cluster_diff_free(&p.d);
    assert_int_equal(cluster_diff(&p.old, &p.new, &p.d), 0);
    assert_int_equal(p.d.n, 1);
    assert_int_equal(p.d.changes[0].what, CLUSTER_CHANGED_CANDIDATES);
    assert_line(&p, 0, "changed b: candidates");
    /* The same on both sides: none. */
    p.old.nodes[1] = *b;
    cluster_diff_free(&p.d);
    assert_int_equal(cluster_diff(&p.old, &p.new, &p.d), 0);
    assert_int_equal(p.d.n, 0);
    /* Another order, another port, an observed one: each a change. */
    struct cluster_cand first = b->candidates[0];
    b->candidates[0] = b->candidates[1];
    b->candidates[1] = first;
    cluster_diff_free(&p.d);
    assert_int_equal(cluster_diff(&p.old, &p.new, &p.d), 0);
    assert_int_equal(p.d.n, 1);
    *b = p.old.nodes[1];
    b->candidates[1].port = 51821;
    cluster_diff_free(&p.d);
    assert_int_equal(cluster_diff(&p.old, &p.new, &p.d), 0);
    assert_int_equal(p.d.n, 1);
    *b = p.old.nodes[1];
    b->has_observed = true;
    b->observed = first;
    cluster_diff_free(&p.d);
    assert_int_equal(cluster_diff(&p.old, &p.new, &p.d), 0);
    assert_int_equal(p.d.n, 1);
    assert_int_equal(p.d.changes[0].what, CLUSTER_CHANGED_CANDIDATES);
    pair_free(&p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unchanged),
        cmocka_unit_test(test_groups_and_rules),
        cmocka_unit_test(test_added_removed_in_order),
        cmocka_unit_test(test_each_node_change),
        cmocka_unit_test(test_endpoint_forms),
        cmocka_unit_test(test_cluster_settings),
        cmocka_unit_test(test_rename_and_case),
        cmocka_unit_test(test_format_bounds),
        cmocka_unit_test(test_node_keepalive_key),
        cmocka_unit_test(test_aliases_key),
        cmocka_unit_test(test_aliases_change),
        cmocka_unit_test(test_candidates_change),
        cmocka_unit_test(test_hostnames_key),
        cmocka_unit_test(test_machine_domains_change),
        cmocka_unit_test(test_authority_change),
        cmocka_unit_test(test_metrics_change),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
