/* SPDX-License-Identifier: MIT */
/* Tests of the node index (config/cluster_index.c): each way of finding a
 * node (a name in any case, a key, an IPv4 or IPv6 address), what is not
 * there, the first of two nodes that share a name, key or address, the
 * capacity, an empty index, and many nodes all found (the tables grow with
 * the capacity, probes wrap around). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "config/addr.h"
#include "config/cluster_index.h"

static void node(struct cluster_node *n, const char *name, uint8_t key_byte, const char *addr)
{
    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    memset(n->public_key, key_byte, CLUSTER_KEY_LEN);
    assert_int_equal(cluster_addr_parse(addr, &n->address), 0);
}

static void test_lookups(void **state)
{
    struct cluster_node nodes[3], probe;
    struct cluster c = { .nodes = nodes, .n_nodes = 3 };
    struct cluster_index *ix;

    (void)state;
    node(&nodes[0], "alpha", 1, "10.0.0.1");
    node(&nodes[1], "Beta", 2, "fd00::2");
    node(&nodes[2], "gamma", 3, "10.0.0.3");
    ix = cluster_index_of(&c);
    assert_non_null(ix);
    assert_ptr_equal(cluster_index_name(ix, "alpha"), &nodes[0]);
    assert_ptr_equal(cluster_index_name(ix, "ALPHA"), &nodes[0]);
    assert_ptr_equal(cluster_index_name(ix, "beta"), &nodes[1]);
    assert_null(cluster_index_name(ix, "delta"));
    assert_null(cluster_index_name(ix, "alph"));
    assert_null(cluster_index_name(ix, ""));
    assert_ptr_equal(cluster_index_key(ix, nodes[2].public_key), &nodes[2]);
    node(&probe, "x", 4, "10.0.0.2");
    assert_null(cluster_index_key(ix, probe.public_key));
    assert_ptr_equal(cluster_index_address(ix, &nodes[1].address), &nodes[1]);
    assert_ptr_equal(cluster_index_address(ix, &nodes[2].address), &nodes[2]);
    assert_null(cluster_index_address(ix, &probe.address));
    /* The same bytes in the other family are another address. */
    assert_int_equal(cluster_addr_parse("a00:1::", &probe.address), 0);
    assert_null(cluster_index_address(ix, &probe.address));
    cluster_index_free(ix);
}

static void test_first_wins_and_capacity(void **state)
{
    struct cluster_node a, b, c;
    struct cluster_index *ix = cluster_index_new(2);

    (void)state;
    assert_non_null(ix);
    node(&a, "same", 1, "10.0.0.1");
    node(&b, "SAME", 1, "10.0.0.1");
    node(&c, "third", 3, "10.0.0.3");
    assert_int_equal(cluster_index_add(ix, &a), 0);
    assert_int_equal(cluster_index_add(ix, &b), 0);
    assert_ptr_equal(cluster_index_name(ix, "same"), &a);
    assert_ptr_equal(cluster_index_key(ix, b.public_key), &a);
    assert_ptr_equal(cluster_index_address(ix, &b.address), &a);
    assert_int_equal(cluster_index_add(ix, &c), -ENOSPC);
    assert_null(cluster_index_name(ix, "third"));
    cluster_index_free(ix);
}

static void test_empty(void **state)
{
    struct cluster empty = { 0 };
    struct cluster_index *ix = cluster_index_of(&empty);
    struct cluster_node n;

    (void)state;
    node(&n, "a", 1, "10.0.0.1");
    assert_non_null(ix);
    assert_null(cluster_index_name(ix, "a"));
    assert_null(cluster_index_key(ix, n.public_key));
    assert_null(cluster_index_address(ix, &n.address));
    assert_null(cluster_index_name(NULL, "a"));
    cluster_index_free(ix);
    cluster_index_free(NULL);
}

static void test_many(void **state)
{
    const size_t n = 20000;
    struct cluster c = { .nodes = calloc(n, sizeof(struct cluster_node)), .n_nodes = n };
    struct cluster_index *ix;
    char name[32], addr[32];

    (void)state;
    assert_non_null(c.nodes);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "node-%zu", i);
        snprintf(addr, sizeof(addr), "10.%zu.%zu.%zu", i >> 16, (i >> 8) & 255, i & 255);
        node(&c.nodes[i], name, 0, addr);
        memcpy(c.nodes[i].public_key, &i, sizeof(i));
    }
    ix = cluster_index_of(&c);
    assert_non_null(ix);
    for (size_t i = 0; i < n; i++) {
        snprintf(name, sizeof(name), "NODE-%zu", i);
        assert_ptr_equal(cluster_index_name(ix, name), &c.nodes[i]);
        assert_ptr_equal(cluster_index_key(ix, c.nodes[i].public_key), &c.nodes[i]);
        assert_ptr_equal(cluster_index_address(ix, &c.nodes[i].address), &c.nodes[i]);
    }
    assert_null(cluster_index_name(ix, "node-20000"));
    cluster_index_free(ix);
    free(c.nodes);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_first_wins_and_capacity),
        cmocka_unit_test(test_empty),
        cmocka_unit_test(test_many),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
