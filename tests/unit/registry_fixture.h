/* Test support: the nodes a registry test registers or merges
 * (test_registry, test_etcd). Tests only. */
#ifndef DDPNET_TEST_REGISTRY_FIXTURE_H
#define DDPNET_TEST_REGISTRY_FIXTURE_H

#include "config/cluster.h"

/* A node named name with the public key key (base64, as `wg pubkey`
 * prints it), everything else zero; the test fails on a bad key. */
struct cluster_node registry_fixture_node(const char *name, const char *key);

#endif
