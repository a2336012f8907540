/* SPDX-License-Identifier: MIT */
/* A cluster's nodes found by name (case-insensitive), public key and
 * overlay address in constant time on average.
 *
 * For the code that matches one model against another whenever membership
 * changes (cluster_diff, the registry's model, the membership engine):
 * with linear look-ups there, each join cost every node the square of the
 * cluster's size. The hash is SipHash under a random key per index, so
 * names and keys chosen by whoever writes them (a registry holds thousands)
 * cannot be made to collide. The index points at the nodes, which must
 * outlive it and not move; where two nodes share a name, key or address,
 * the first one added is the one found (as a linear search finds it). */
#ifndef DDPNET_CLUSTER_INDEX_H
#define DDPNET_CLUSTER_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

struct cluster_index;

/* An empty index for up to `capacity` nodes; NULL without memory. */
struct cluster_index *cluster_index_new(size_t capacity);
/* An index of c's nodes; NULL without memory. */
struct cluster_index *cluster_index_of(const struct cluster *c);
void cluster_index_free(struct cluster_index *ix);

/* Adds n under its name, key and address (each kept only where no node
 * holds it yet). -ENOSPC past the capacity. */
int cluster_index_add(struct cluster_index *ix, const struct cluster_node *n);

const struct cluster_node *cluster_index_name(const struct cluster_index *ix, const char *name);
const struct cluster_node *cluster_index_key(const struct cluster_index *ix,
                                             const uint8_t key[CLUSTER_KEY_LEN]);
const struct cluster_node *cluster_index_address(const struct cluster_index *ix,
                                                 const struct cluster_addr *a);

#endif
