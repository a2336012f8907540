/* SPDX-License-Identifier: MIT */
/* Handshake messages per source address: a token bucket for each source,
 * as the Linux module's ratelimiter keeps them (its numbers: 20 a second
 * steady, a burst of 5, IPv4 by address, IPv6 by its /64, since one host
 * may own a whole /64).
 *
 * What it guards is the work a stranger can make us do: a handshake
 * message with a valid mac1 costs a cookie reply or an X25519 or two.
 * Every such message first asks here; one over its source's rate is
 * dropped after a hash and a lookup.
 *
 * The table is allocated once (ratelimit_init) and holds at most
 * max_entries sources; when it is full a new source is refused (counted in
 * table_full) rather than a live one evicted, so spoofed sources cannot
 * push out the buckets of real ones. It is hashed with a secret SipHash
 * key, so that nobody can aim collisions; a lookup probes at most
 * RATELIMIT_PROBE_MAX slots. Sources idle for RATELIMIT_IDLE_NS are
 * forgotten (their bucket would be full again by then anyway): once per
 * RATELIMIT_GC_NS, on the clock of the calls themselves, the table is
 * rebuilt without them -- one pass over 2 * max_entries slots a second,
 * into a second array also allocated at init. No allocation, no thread,
 * no timer of its own.
 *
 * Owner: per core, the core's (device.h's tables; HACKING.md, "State by
 * owner"). One per device (dev->ratelimit), made by device_setup.c;
 * written by handshake.c alone (handshake_admit, on each handshake
 * message received), read by nobody else. Handshake messages are steered
 * to socket 0's shard (loop/shard.h), which writes it but for those that
 * come inside a relay's transport messages; today all under the engine
 * lock. */
#ifndef DDPNET_RATELIMIT_H
#define DDPNET_RATELIMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

#define RATELIMIT_PER_SEC    20u     /* steady rate per source */
#define RATELIMIT_BURST      5u      /* tokens a new or idle source starts with */
#define RATELIMIT_TABLE_MAX  8192u   /* sources tracked at once */
#define RATELIMIT_PROBE_MAX  32u
#define RATELIMIT_IDLE_NS    WG_NSEC_PER_SEC
#define RATELIMIT_GC_NS      WG_NSEC_PER_SEC
#define RATELIMIT_KEY_LEN    9u      /* family, then 8 bytes: an IPv4 address or an IPv6 /64 */

struct ratelimit_entry {
    uint8_t key[RATELIMIT_KEY_LEN];
    bool used;
    uint64_t last_ns;                /* the bucket's tokens were counted then */
    uint64_t tokens_ns;              /* credit, in ns: a message costs 1 s / PER_SEC */
};

struct ratelimit_stats {
    uint64_t allowed, limited, table_full;
};

struct ratelimit {
    struct ratelimit_entry *slots, *spare;
    size_t cap;                      /* slots: a power of two, at least 2 * max */
    unsigned max, n;                 /* sources allowed at once, and tracked now */
    uint64_t last_gc_ns;
    uint8_t hash_key[16];
    struct ratelimit_stats stats;
};

/* 0, or -ENOMEM (the only allocation), -EINVAL for max_entries 0. */
int ratelimit_init(struct ratelimit *rl, unsigned max_entries);
void ratelimit_destroy(struct ratelimit *rl);
/* family AF_INET (addr: 4 bytes) or AF_INET6 (16 bytes; the first 8
 * count). True when this source may have one more handshake message
 * handled now (a token is taken); false when it is over its rate, the
 * table is full, or the family is neither. */
bool ratelimit_allow(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns);

#endif
