/* SPDX-License-Identifier: MIT */
/* Staged packets: what ddp0 gave us for a peer that has no usable session
 * yet, kept until a handshake completes (then sent) or gives up (then
 * dropped).
 *
 * They are copied out of the packet pool's buffer at once: a pool buffer
 * is about 230 KiB, sized for a 64 KiB read and its sealed segments, and
 * holding one per staged ping let six unreachable peers take every buffer
 * of the pool, after which the loop could not even receive the handshakes
 * that would have freed them. Here a packet costs its own bytes.
 *
 * One store per device, allocated once: fixed cells chained into one byte
 * FIFO per peer, in which each packet is a 4-byte length and its bytes.
 * Bounds, in bytes of cells held (what the memory really costs): per peer
 * STAGE_PEER_BYTES, in total STAGE_TOTAL_BYTES. A peer at its bound loses
 * its own oldest packets; a full store takes them from the peer that holds
 * the most (which may be the one pushing), so that peers that never answer
 * cannot crowd out one whose handshake is about to complete. No
 * allocation after stage_init; the work of a push or pop is its copy plus
 * at most one pass over the peers holding packets.
 *
 * Owner: per core, the core's (device.h's tables; HACKING.md, "State by
 * owner"). One store per device (dev->stage), made by device_setup.c;
 * written only through peer.c (peer_stage, peer_unstage, and a peer's
 * queue cleared as it goes), on the thread that read the packet from
 * ddp0 (datapath.c) or completed the handshake; each peer's queue lives
 * in its wg part (p->wg.staged). Its stats are read by the metrics; with
 * an engine per core, one store per shard, summed when shown. */
#ifndef DDPNET_STAGE_H
#define DDPNET_STAGE_H

#include <stddef.h>
#include <stdint.h>

#define STAGE_CELL_BYTES   2048u
#define STAGE_PEER_BYTES   (128u * 1024u)
#define STAGE_TOTAL_BYTES  (2u * 1024u * 1024u)

/* One peer's packets. Zeroed is empty. */
struct stage_queue {
    uint32_t head, tail;          /* cell index + 1 of the oldest and newest cells; 0: none */
    uint32_t head_off, tail_off;  /* read offset in head, write offset in tail */
    uint32_t cells, packets;
    struct stage_queue *prev, *next;  /* in the store's list of non-empty queues */
};

struct stage_stats {
    uint64_t staged;              /* packets taken in */
    uint64_t dropped_peer_full;   /* given way to a newer packet of the same peer */
    uint64_t dropped_store_full;  /* given way to a packet of another peer */
    uint64_t dropped_too_big;     /* larger than a peer may hold */
};

struct stage_cell;

struct stage_store {
    struct stage_cell *cells;
    uint32_t n_cells, peer_cells, free_head, n_free;
    struct stage_queue *busy;     /* queues that hold packets */
    struct stage_stats stats;
};

/* total_bytes and peer_bytes round down to whole cells (at least one). */
int stage_init(struct stage_store *s, size_t total_bytes, size_t peer_bytes);
void stage_destroy(struct stage_store *s);

/* Copies len bytes (0 is allowed: a keepalive) in as q's newest packet,
 * making room as the file comment says. 0, or -EMSGSIZE when one packet
 * of len bytes is more than a peer may hold. */
int stage_push(struct stage_store *s, struct stage_queue *q, const uint8_t *data, uint32_t len);
/* Moves q's oldest packet to out: its length, -ENOENT when q is empty, or
 * -ENOSPC (the packet is dropped) when it is longer than cap. */
long stage_pop(struct stage_store *s, struct stage_queue *q, uint8_t *out, size_t cap);
/* Drops every packet of q; returns how many. */
unsigned stage_clear(struct stage_store *s, struct stage_queue *q);

/* Bytes of cells q holds, and the store in all. */
static inline size_t stage_queue_bytes(const struct stage_queue *q)
{
    return (size_t)q->cells * STAGE_CELL_BYTES;
}

static inline size_t stage_used_bytes(const struct stage_store *s)
{
    return (size_t)(s->n_cells - s->n_free) * STAGE_CELL_BYTES;
}

#endif
