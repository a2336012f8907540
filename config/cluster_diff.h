/* SPDX-License-Identifier: MIT */
/* The difference of two cluster models: what a running node must change
 * to go from the file it runs to a new one (`ddpnet reload`). Pure: two
 * parsed models in, a list of changes out. Nodes are matched by name, so a
 * node whose key changed is "changed: key" (the engine replaces its peer
 * whole), and a rename is one node removed and one added. */
#ifndef DDPNET_CLUSTER_DIFF_H
#define DDPNET_CLUSTER_DIFF_H

#include <stddef.h>

#include "config/cluster.h"

enum cluster_change_kind {
    CLUSTER_NODE_ADDED,
    CLUSTER_NODE_REMOVED,
    CLUSTER_NODE_CHANGED,
};

/* What changed about a node (bits of cluster_change.what). */
#define CLUSTER_CHANGED_KEY        0x01u
#define CLUSTER_CHANGED_ADDRESS    0x02u
#define CLUSTER_CHANGED_ENDPOINT   0x04u
#define CLUSTER_CHANGED_PORT       0x08u   /* the port it listens on */
#define CLUSTER_CHANGED_KEEPALIVE  0x10u   /* the keepalive towards it */
#define CLUSTER_CHANGED_ALIASES    0x20u   /* the other names it goes by */
#define CLUSTER_CHANGED_CANDIDATES 0x40u   /* a registered node's candidates */
#define CLUSTER_CHANGED_GROUPS     0x80u   /* its groups, by name (config/rules.h) */
#define CLUSTER_CHANGED_ROUTES     0x100u  /* the prefixes it carries (config/routes.h) */

/* What changed in [cluster] that a running node cannot take live (bits of
 * cluster_diff.settings): the interface and sockets were made with them. */
#define CLUSTER_CHANGED_NETWORK    0x01u
#define CLUSTER_CHANGED_MTU        0x02u
#define CLUSTER_CHANGED_BUSY_POLL  0x04u
#define CLUSTER_CHANGED_HOSTNAMES  0x08u
#define CLUSTER_CHANGED_METRICS    0x10u
#define CLUSTER_CHANGED_REGISTRY   0x20u
#define CLUSTER_CHANGED_MACHINE_DOMAINS 0x40u
#define CLUSTER_CHANGED_AUTHORITY  0x80u   /* no key trusted before and after */
/* Sizes past net.core.rmem_max need CAP_NET_ADMIN (SO_RCVBUFFORCE), which
 * the daemon gave up after setup: a restart takes it, a reload cannot. */
#define CLUSTER_CHANGED_SOCKET_BUFFER 0x100u

struct cluster_change {
    enum cluster_change_kind kind;
    unsigned what;                         /* CLUSTER_CHANGED_*, for CHANGED */
    const struct cluster_node *old_node;   /* in the old model; NULL when added */
    const struct cluster_node *new_node;   /* in the new model; NULL when removed */
};

struct cluster_diff {
    size_t n;
    struct cluster_change *changes;        /* removed, changed, then added, each in file order */
    unsigned settings;                     /* CLUSTER_CHANGED_NETWORK... */
    /* [rules] or the group names differ (rules_equal): taken live, the
     * connections matched again at their next packet (filter.h). */
    bool rules;
};

/* Fills *out with the changes from old to new (pointers into both, which
 * must outlive it). Returns 0 or -ENOMEM. */
int cluster_diff(const struct cluster *old, const struct cluster *new, struct cluster_diff *out);
void cluster_diff_free(struct cluster_diff *d);

/* One line for a person: "added node-d", "removed node-c", "changed
 * node-b: endpoint, keepalive". Returns 0 or -ENOSPC. */
int cluster_change_format(const struct cluster_change *c, char *buf, size_t len);
/* The [cluster] settings that changed, as "network, mtu" (empty: none).
 * Returns 0 or -ENOSPC. */
int cluster_settings_format(unsigned settings, char *buf, size_t len);

#endif
