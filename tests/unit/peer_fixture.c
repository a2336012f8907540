/* SPDX-License-Identifier: MIT */
/* The peers of a device built by hand (peer_fixture.h). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "tests/unit/peer_fixture.h"

void peer_fixture_fill(struct device *dev, struct peer **peers, size_t n)
{
    assert_true(dev->cluster.n_nodes > n);
    for (size_t i = 0; i < n; i++) {
        const struct cluster_node *node = &dev->cluster.nodes[i + 1];
        struct peer *p = calloc(1, sizeof(*p));

        assert_non_null(p);
        p->dev = dev;
        snprintf(p->member.name, sizeof(p->member.name), "%s", node->name);
        memcpy(p->public_key, node->public_key, WG_KEY_LEN);
        p->member.address = node->address;
        p->path.endpoint.sa.sa_family = AF_UNSPEC;
        peers[i] = p;
    }
    dev->peers = peers;
    dev->n_peers = n;
}

void peer_fixture_free(struct peer **peers, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(peers[i]);
}

void peer_fixture_endpoint4(struct peer *p, const char *addr, uint16_t port)
{
    p->path.endpoint.in4.sin_family = AF_INET;
    p->path.endpoint.in4.sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &p->path.endpoint.in4.sin_addr), 1);
}
