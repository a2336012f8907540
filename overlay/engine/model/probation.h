/* SPDX-License-Identifier: MIT */
/* Probationary peers: WireGuard static keys not in the cluster whose
 * handshake initiation was accepted only so that they can present an
 * authority certificate inside the tunnel (issue 33, joining with no
 * server; only with [cluster] authority set).
 *
 * Owns the bound on what a stranger with a valid handshake can hold here:
 * at most PROBATION_MAX keys in all and PROBATION_PER_SOURCE from one
 * source (the rate limiter's source key: an IPv4 address or an IPv6 /64),
 * each for PROBATION_TIMEOUT_NS, after which the caller drops its peer.
 * A full table refuses a new key rather than evict one in its window, so
 * a flood cannot push out a real joiner before its time is up. The table
 * is a fixed array inside its owner: nothing allocated, no clock read
 * (callers pass now), no timer of its own. What a probationary peer may
 * do (nothing routed, no name, no relaying, no hints) is the engine's.
 *
 * Owner: shared by the engine and membership, so in the device
 * (dev->probation; HACKING.md, "State by owner"). Written rarely, by two: handshake.c admits a
 * stranger and ends one whose peer could not be made (probation_join),
 * and reads the count on handshake receives (PROBATION_PROVEN_FROM);
 * membership/members.c ends one it promotes, and expires and
 * drops those whose time is up (probation_due, probation_expire). */
#ifndef DDPNET_PROBATION_H
#define DDPNET_PROBATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "overlay/engine/model/ratelimit.h"

#define PROBATION_MAX         16u
#define PROBATION_PER_SOURCE  2u
/* From this many held, a stranger is admitted only with a valid cookie
 * (mac2: its source answered a cookie reply), so spoofed sources hold
 * at most this many and a newcomer whose source answers finds room. */
#define PROBATION_PROVEN_FROM (PROBATION_MAX / 2u)
#define PROBATION_TIMEOUT_NS  (UINT64_C(10) * 1000000000u)
#define PROBATION_KEY_LEN     32u    /* a WireGuard public key */

struct probation_entry {
    bool used;
    uint8_t key[PROBATION_KEY_LEN];
    uint8_t source[RATELIMIT_KEY_LEN];
    uint64_t since_ns;
};

struct probation {
    struct probation_entry e[PROBATION_MAX];
    uint64_t refused_full, refused_source, expired;   /* counters */
};

void probation_init(struct probation *t);

/* Admits key from source at now: 0, -EEXIST when it is already on
 * probation (its window is not renewed), -EBUSY when the table or the
 * source's share is full (expired entries count until probation_expire
 * takes them). */
int probation_admit(struct probation *t, const uint8_t key[PROBATION_KEY_LEN],
                    const uint8_t source[RATELIMIT_KEY_LEN], uint64_t now);

/* Whether key is on probation: a test seam. */
bool probation_has(const struct probation *t, const uint8_t key[PROBATION_KEY_LEN]);

/* Ends key's probation (its certificate checked, or its peer removed):
 * true when it was on probation. */
bool probation_end(struct probation *t, const uint8_t key[PROBATION_KEY_LEN]);

/* Takes one entry whose window ended by now, writing its key: true when
 * there was one (call until false, and drop each key's peer). */
bool probation_expire(struct probation *t, uint64_t now, uint8_t key[PROBATION_KEY_LEN]);
/* The keys whose window ended by now, written to keys without taking
 * them (at most PROBATION_MAX): so that a caller can find every one's peer
 * before it frees any, and end each with probation_end once it is gone. */
size_t probation_due(const struct probation *t, uint64_t now,
                     uint8_t keys[PROBATION_MAX][PROBATION_KEY_LEN]);

size_t probation_count(const struct probation *t);

#endif
