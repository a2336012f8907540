/* SPDX-License-Identifier: MIT */
/* The routes the device runs (issue 60): each prefix the cluster model
 * grants a member, with the peer that carries it (NULL: this node carries
 * it itself). Shared, read-mostly: built with the address map from
 * dev->cluster and swapped with it (model/device.c, device_remap), so a
 * table never names a peer that left. The data path asks it only where
 * the address map has no answer: a destination outside the overlay
 * (send side), a source that is not the peer's own address (receive
 * side). Grants never overlap (config/routes.h), so an address has at
 * most one carrier and the first match is the longest. At most
 * CLUSTER_ROUTES_TOTAL_MAX entries: a scan over them. */
#ifndef DDPNET_ENGINE_ROUTES_H
#define DDPNET_ENGINE_ROUTES_H

#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

struct peer;

struct route_entry {
    struct cluster_route route;
    struct peer *via;                     /* NULL: ours to carry */
    /* Packets through it (per core, under the engine lock): sent into it
     * by a node that routes to it; received for it by its carrier. Kept
     * across a rebuild for the same prefix and carrier. */
    uint64_t packets;
};

struct route_table {
    size_t n;
    struct route_entry *e;
};

/* Finds the peer of a node (by its key), NULL when it has none to route
 * to (pending, gone). */
typedef struct peer *(*routes_peer_of)(void *ctx, const struct cluster_node *n);

/* The table of c's grants (self's with via NULL), counters carried over
 * from old (may be NULL): 0 or -ENOMEM (*out untouched). */
int routes_build(const struct cluster *c, const struct cluster_node *self,
                 routes_peer_of peer_of, void *ctx, const struct route_table *old,
                 struct route_table *out);
void routes_free(struct route_table *t);
/* The entry holding addr (4 or 16 bytes by family), or NULL. */
struct route_entry *routes_find(const struct route_table *t, int family, const uint8_t *addr);

#endif
