/* SPDX-License-Identifier: MIT */
/* What a registered node publishes of where it may be reached, its own
 * candidates (record.h): its --endpoint when that is an IP literal, then
 * the addresses of its interfaces on its listen port -- IPv4 before IPv6,
 * each family in the interfaces' order -- CLUSTER_CANDIDATES_MAX at most,
 * no two alike. Left out: interfaces that are down or loopback, addresses
 * no other machine reaches us at (record_cand_usable: loopback,
 * link-local, multicast, unspecified), and the overlay's own (inside the
 * cluster's network: they ride the tunnel they would lead to).
 *
 * cands_pick is pure (a list of interfaces in, candidates out), so a unit
 * test gives it any machine's; cands_gather reads this machine's with
 * getifaddrs (netlink, no privilege): call it off the event loop -- at
 * join, and from the registry's keeper thread. */
#ifndef DDPNET_CANDS_H
#define DDPNET_CANDS_H

#include <ifaddrs.h>
#include <stdint.h>

#include "config/cluster.h"

struct cands_rules {
    uint16_t port;                         /* the listen port */
    const struct cluster_endpoint *endpoint;   /* --endpoint, or NULL */
    struct cluster_addr network;           /* the overlay's network ... */
    unsigned prefix;                       /* ... and its prefix length */
};

/* The candidates from the interfaces `all` (a getifaddrs list) into
 * out[0..CLUSTER_CANDIDATES_MAX); returns how many. */
unsigned cands_pick(const struct ifaddrs *all, const struct cands_rules *rules,
                    struct cluster_cand out[CLUSTER_CANDIDATES_MAX]);
/* The same from this machine's interfaces: how many, or -errno (then
 * only the endpoint, if any, is in out and counted in *n). */
int cands_gather(const struct cands_rules *rules, struct cluster_cand out[CLUSTER_CANDIDATES_MAX],
                 unsigned *n);

#endif
