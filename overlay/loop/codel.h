/* SPDX-License-Identifier: MIT */
/* Queue management for a UDP socket the daemon drains more slowly than
 * the wire fills it (a receiver short of CPU behind a long fat path).
 * The socket is then the path's bottleneck queue, and a loss-based TCP
 * inside the tunnel grows its window until that queue overflows: bursts
 * of thousands of drops, and as much queueing delay as the buffer holds.
 * CoDel (RFC 8289) instead watches how long datagrams waited in the
 * socket (the kernel's receive timestamp, SO_TIMESTAMPNS, against the
 * time they were read) and, once that wait stayed above a target for a
 * whole interval, asks for one packet to signal congestion, then for
 * more, closer and closer together, until the wait falls: an inner
 * packet that is ECN-capable is marked CE, any other is dropped
 * (datapath.c: rx_inner), and TCP slows down as at a managed router.
 *
 * Owner: the loop whose socket it watches; one state per socket, on that
 * loop's thread only. Pure: no clock, no I/O. */
#ifndef DDPNET_CODEL_H
#define DDPNET_CODEL_H

#include <stdbool.h>
#include <stdint.h>

/* A standing wait of 20 ms is a queue (RFC 8289 says 5 ms for a router;
 * a reader in user space on a busy machine is late by that much alone,
 * and 5 ms cost long paths a fifth of their rate: bench/README.md); 100
 * ms (about the longest round trip between regions) is how long it must
 * stand before anything is signalled. */
#define CODEL_TARGET_NS   (20ull * 1000 * 1000)
#define CODEL_INTERVAL_NS (100ull * 1000 * 1000)

struct codel {
    uint64_t target_ns, interval_ns;
    uint64_t first_above;   /* when the wait will have stood above target for an interval (0: below) */
    uint64_t drop_next;     /* while signalling: the time of the next signal */
    uint32_t count;         /* signals in this signalling state */
    uint32_t last_count;    /* count when the last signalling state began */
    bool signalling;
};

/* A state with this target and interval (ns); target 0 turns it off:
 * codel_signal then always says no. */
void codel_init(struct codel *c, uint64_t target_ns, uint64_t interval_ns);

/* A receive was read at now (ns, any clock that only moves forward) after
 * waiting wait_ns in the socket: whether one of its packets should
 * signal congestion. A receive that left the socket (nearly) empty is
 * no queue, however long it waited: the caller gives it a wait of 0. */
bool codel_signal(struct codel *c, uint64_t wait_ns, uint64_t now);

/* interval / sqrt(count), in ns: the gap to the next signal. */
uint64_t codel_gap(uint64_t interval_ns, uint32_t count);

#endif
