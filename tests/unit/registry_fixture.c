/* SPDX-License-Identifier: MIT */
/* The nodes of registry tests (registry_fixture.h). */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "tests/unit/etcd_fixture.h"
#include "tests/unit/registry_fixture.h"

struct cluster_node registry_fixture_node(const char *name, const char *key)
{
    struct cluster_node n;
    size_t len = 0;

    memset(&n, 0, sizeof(n));
    snprintf(n.name, sizeof(n.name), "%s", name);
    assert_int_equal(sodium_base642bin(n.public_key, CLUSTER_KEY_LEN, key, strlen(key), NULL,
                                       &len, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
    return n;
}

bool registry_fixture_take(struct registry *r, int ms, struct cluster_node **nodes, size_t *n,
                           int64_t *rev)
{
    struct pollfd p = { .fd = registry_event_fd(r), .events = POLLIN };
    int64_t deadline = etcd_fixture_now_ms() + ms;

    for (;;) {
        int ret = registry_take(r, nodes, n, rev);
        assert_true(ret >= 0);
        if (ret == 1)
            return true;
        int64_t left = deadline - etcd_fixture_now_ms();
        if (left <= 0)
            return false;
        poll(&p, 1, (int)left);
    }
}
