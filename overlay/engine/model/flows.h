/* SPDX-License-Identifier: MIT */
/* Which shard each outgoing flow belongs to (overlay/loop/shard.h): the
 * hint its seals carry; and which of a peer's underlay flows it leaves on
 * (paths/path.c: path_flows). Per device, under the engine lock; the
 * engine's (datapath.c) alone.
 *
 * A flow starts on whatever queue of ddp0 the kernel hashed it to, and a
 * hash puts 4 flows on the same one of 2 shards one time in 8, and 3 of
 * them one time in 2. So a new flow is given the next hint in turn
 * (round robin over the shards), whichever shard read it: the receiver
 * opens it on that shard (its socket is steered by the hint) and writes
 * it to ddp0 on that shard's queue, where the kernel's TUN flow table
 * then reads its replies; they come back with that hint, are written on
 * our queue of that shard, and from then on the flow is read there too.
 * One round trip, and the flow runs on one shard at both ends, the flows
 * spread evenly. The underlay flow is the same turn modulo the flows a
 * peer takes: new flows take them in turn too, and an inner flow stays on
 * one 5-tuple (its order kept) while its slot lasts.
 *
 * Bounded: FLOWS_SLOTS entries, a flow probed in at most FLOWS_PROBE
 * slots; a full neighbourhood gives its oldest slot to the new flow (which
 * then may move: it is a hint, not a promise). */
#ifndef DDPNET_FLOWS_H
#define DDPNET_FLOWS_H

#include <stdint.h>

#define FLOWS_SLOTS 4096u    /* a power of two */
#define FLOWS_PROBE 8u

struct flow_slot {
    uint32_t hash;           /* offload_flow_hash; 0: empty */
    uint32_t turn;           /* its place among new flows: hint and flow modulo */
    uint64_t seen_ns;
};

struct flows {
    struct flow_slot slot[FLOWS_SLOTS];
    unsigned next;           /* the next new flow's hint, before the modulo */
};

/* The hint of the flow `hash` (0: not a flow: hint 0), over `shards`
 * shards (1: always 0), giving a new flow the next in turn: a test seam
 * (test_flows; the data path takes the turn itself, below). */
unsigned flows_hint(struct flows *f, uint32_t hash, unsigned shards, uint64_t now);
/* The turn of the flow `hash` (0: not a flow: 0, nothing kept), a new
 * flow given the next. flows_hint is it modulo the shards. */
unsigned flows_turn(struct flows *f, uint32_t hash, uint64_t now);

#endif
