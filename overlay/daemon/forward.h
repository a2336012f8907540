/* SPDX-License-Identifier: MIT */
/* Routes to what is not in the overlay, the kernel's side (issue 60): the
 * keeper, a child forked before the privilege drop that alone keeps
 * CAP_NET_ADMIN (its bounding set is that one capability), owns what the
 * node changed in the system for routes, and undoes it when the daemon
 * is gone:
 * - on every node, the kernel routes through ddp0 to each prefix another
 *   member is granted (config/routes.h), kept to what the daemon asks
 *   after each change of the model (reload, registry, revocation);
 * - on a node granted routes itself (set at `up`; a change of its own
 *   grant is taken at a restart): forwarding on ddp0 and on each link its
 *   prefixes go out of (net.ipv[46].conf.IF.forwarding, put back at the
 *   end when it changed them), and unless `masquerade = no`, one nft
 *   table of its own, `ddpnet-IFNAME`, masquerading what comes from ddp0
 *   to its prefixes, deleted at the end.
 * It logs each change. It reads only the daemon's fixed-size messages;
 * every other descriptor of the daemon is closed in it (ddp0 goes with
 * the daemon's last queue). */
#ifndef DDPNET_DAEMON_FORWARD_H
#define DDPNET_DAEMON_FORWARD_H

#include <stdbool.h>
#include <sys/types.h>

#include "config/cluster.h"

struct forward {
    pid_t pid;                            /* 0: no keeper */
    int fd;                               /* to it; -1: none */
    /* The set last sent (a hash of it): a model change that leaves the
     * routes as they were sends nothing. */
    uint64_t sent_sum;
};

/* Starts the keeper for ifname (made, up) with c's grants (self's to
 * carry), before the privilege drop, and waits until it set them up:
 * 0, or -errno with *why (static text) saying what failed. Nothing to
 * do (no grant in c, and no authority whose certificates could bring
 * one) starts no keeper, and returns 0. */
int forward_start(struct forward *f, const char *ifname, const struct cluster *c,
                  const struct cluster_node *self, const char **why);
/* The routes through ifname are now c's grants but self's: told to the
 * keeper when they changed (0, or -errno when it is gone). */
int forward_update(struct forward *f, const struct cluster *c, const struct cluster_node *self);
/* Closes the keeper's socket: it undoes its changes and exits; reaped. */
void forward_stop(struct forward *f);

#endif
