/* SPDX-License-Identifier: MIT */
/* Test support: the nodes a registry test registers or merges
 * (test_registry, test_etcd). Tests only. */
#ifndef DDPNET_TEST_REGISTRY_FIXTURE_H
#define DDPNET_TEST_REGISTRY_FIXTURE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"
#include "overlay/registry/registry.h"

/* A node named name with the public key key (base64, as `wg pubkey`
 * prints it), everything else zero; the test fails on a bad key. */
struct cluster_node registry_fixture_node(const char *name, const char *key);
/* The watcher's next snapshot (registry_take), waited for on its event fd
 * for up to ms: true with it in *nodes (the caller frees), *n and *rev;
 * false when none came. */
bool registry_fixture_take(struct registry *r, int ms, struct cluster_node **nodes, size_t *n,
                           int64_t *rev);

#endif
