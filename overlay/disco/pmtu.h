/* SPDX-License-Identifier: MIT */
/* Path MTU of one path to a peer: the largest inner packet that gets
 * through, found by probing inside the tunnel, in the spirit of RFC 8899
 * (packetization-layer PMTU discovery), because many paths drop what is
 * too big without a word.
 *
 * A probe is a disco PING padded to exactly the size tried, sealed and
 * sent on the path like any packet (the outer packets never fragment: the
 * sockets set DF); the peer's PONG, authenticated by the session,
 * confirms that size. Sizes are inner packet sizes (what ddp0 hands us),
 * between `base` (an outer packet of 1280 bytes, which every path must
 * carry) and `max` (ddp0's MTU, less a relay's wrapping on a relayed path).
 *
 * The search: `max` first (most paths carry it; one round trip), then a
 * binary search between the largest size confirmed and the smallest that
 * failed, to PMTU_PRECISION. A size fails after PMTU_PROBE_TRIES probes
 * without an answer, each given PMTU_PROBE_TIMEOUT_MS (or three round
 * trips, when longer). Until the first search ends the path is used at
 * `base`, so that nothing is lost while it runs; after it, at the size
 * found. Every PMTU_CONFIRM_SEC the size in use is probed again (RFC
 * 8899's CONFIRMATION_TIMER; the engine lets it rest while the path
 * carries no data, pmtu_only_confirm): a route that changed to a narrower path
 * fails it, and the path falls back to `base` and is searched below that
 * size, so a path that narrows is a black hole for PMTU_CONFIRM_SEC and a
 * few probes at most. Every PMTU_RAISE_SEC the search runs again, from
 * `max`, in case the path grew (RFC 8899's PMTU_RAISE_TIMER); the size
 * found stays in use meanwhile. What the network says -- the kernel's
 * per-destination MTU, learned from ICMP "fragmentation needed" / "packet
 * too big" about our UDP packets -- narrows the search at once
 * (pmtu_told): its size is tried next, and confirmed by the peer's answer
 * like any other, so a forged ICMP can cost a probe, never the path
 * (nothing below `base` is believed).
 *
 * Pure: state and decisions on a clock the caller passes; the caller
 * sends the probes and reports the answers (overlay/engine/paths/disco_sched.c). */
#ifndef DDPNET_PMTU_H
#define DDPNET_PMTU_H

#include <stdbool.h>
#include <stdint.h>

#define PMTU_PROBE_TRIES       3u
#define PMTU_PROBE_TIMEOUT_MS  250u
#define PMTU_PRECISION         16u     /* the search stops when hi - lo < this */
#define PMTU_RAISE_SEC         600u
#define PMTU_CONFIRM_SEC       30u
/* A search the network's word cut short runs again this soon (a forged
 * ICMP costs a minute at most, a true one a lost probe a minute). */
#define PMTU_TOLD_RAISE_SEC    60u
/* The outer packet every path carries (IPv6's minimum MTU, RFC 8200). */
#define PMTU_OUTER_MIN         1280u

struct pmtu {
    uint16_t base, max;          /* the range searched */
    uint16_t current;            /* what the path is used at */
    uint16_t lo, hi;             /* confirmed, and the largest not yet failed */
    uint16_t probe_size;         /* the size being tried; 0: not searching */
    uint8_t tries;               /* probes of probe_size sent */
    bool found;                  /* a search ended since the path began */
    bool confirming;             /* probe_size is the size in use, probed again */
    bool told;                   /* this search's ceiling came from the network */
    uint64_t probe_id;           /* the latest probe's transaction id */
    uint64_t deadline_ns;        /* the probe's answer is late, or the next probe is due */
    uint64_t raise_ns;           /* the next search from max */
    uint8_t spread;              /* confirmations' period stretched by this
                                  * (clock_stretch); kept by pmtu_reset */
};

/* A new path (or session): the search begins at once; the path is used at
 * base until it ends. base is raised to max when larger. m's spread is
 * kept (m starts zeroed, its spread set when its peer is made). */
void pmtu_reset(struct pmtu *m, uint16_t base, uint16_t max, uint64_t now);
/* Whether pmtu_next's deadline is only the confirmation of the size in
 * use: no search under way, and the raise later. The caller may let it
 * rest while the path carries no data (disco_sched.c). */
bool pmtu_only_confirm(const struct pmtu *m);
/* The size to probe now (its transaction id is id, which the caller
 * draws), or 0 when nothing is due. Call at pmtu_next's time. */
uint16_t pmtu_due(struct pmtu *m, uint64_t id, uint64_t rtt_ns, uint64_t now);
/* The network says nothing larger than `most` passes (the kernel's
 * per-destination MTU, less the tunnel's overhead): the search's ceiling
 * drops to it, the size in use falls back to base when above it, and
 * `most` is tried next. Values below base are taken as base; values not
 * below the ceiling change nothing. */
void pmtu_told(struct pmtu *m, uint16_t most, uint64_t now);
/* A PONG with this transaction id: true when it answered our probe. */
bool pmtu_acked(struct pmtu *m, uint64_t id, uint64_t now);
/* The next deadline (0: none). */
static inline uint64_t pmtu_next(const struct pmtu *m)
{
    return m->deadline_ns;
}

#endif
