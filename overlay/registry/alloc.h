/* SPDX-License-Identifier: MIT */
/* Which overlay address a registering node gets: the one its key already
 * holds (a node that comes back), else a free host address of the network
 * (neither the network's own, its broadcast address, nor taken by a node
 * of the cluster file or an earlier registration) spread over the whole
 * network (alloc_pick), so that nodes joining at once rarely pick the
 * same one. etcd's transactions make the choice safe under concurrency
 * (registry.c): two can never hold one address; a node whose pick was
 * taken meanwhile picks again, at random. Pure. */
#ifndef DDPNET_ALLOC_H
#define DDPNET_ALLOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

/* The lowest free address of net/prefix, given taken[0..n) (any order;
 * sorted in place). 0 with *out, or -ENOSPC when the network is full. A
 * test seam: the daemon picks with alloc_free_nth, below. */
int alloc_lowest_free(const struct cluster_addr *net, unsigned prefix,
                      struct cluster_addr *taken, size_t n, struct cluster_addr *out);
/* The nth free address (0: the lowest), or the highest free one when
 * fewer than nth + 1 are free. A test seam: what joins picked before
 * issue 59 (the lowest, then one of the first 32 free), which
 * test_alloc's simulated joins compare alloc_pick with. */
int alloc_free_nth(const struct cluster_addr *net, unsigned prefix, struct cluster_addr *taken,
                   size_t n, unsigned nth, struct cluster_addr *out);

/* The address a key without one claims, given taken[0..n) (any order):
 * on attempt 0 the host slot its key names (the key's
 * first 8 bytes, uniformly random for a Curve25519 key, modulo the
 * network's host count) when that is free; otherwise (taken, or a later
 * attempt) the free address numbered rnd modulo the free count, each free
 * one as likely. Nodes that join at once so pick apart: with all picking
 * the lowest free address, each but one lost its transaction, one round
 * after another. O(n log n); 0 with *out, -ENOSPC when none is free, or
 * -ENOMEM. */
int alloc_pick(const struct cluster_addr *net, unsigned prefix, const struct cluster_addr *taken,
               size_t n, const uint8_t key[CLUSTER_KEY_LEN], unsigned attempt, uint64_t rnd,
               struct cluster_addr *out);

/* An address record as a join reads it: the address, the key that holds
 * it (key_ok false: a value that is no key) and etcd's mod revision. */
struct alloc_held {
    struct cluster_addr address;
    uint8_t key[CLUSTER_KEY_LEN];
    bool key_ok;
    int64_t mod_revision;
};

/* When the network has no address left that was never handed out, one
 * whose key is no live member's may be taken over: a node that left for
 * good (its key is gone with its machine) gives its address back only so,
 * and a key that comes back later gets a new one. Of held[0..n), given the
 * members' keys live[0..m) (sorted in place), the index of the nth least
 * recently claimed record whose key is not live (the last such when fewer),
 * or -ENOENT when none is. */
int alloc_reclaim(const struct alloc_held *held, size_t n, uint8_t (*live)[CLUSTER_KEY_LEN],
                  size_t m, unsigned nth);

#endif
