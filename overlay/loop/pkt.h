/* SPDX-License-Identifier: MIT */
/* Packet buffers: a pool preallocated at start-up, so the data path never
 * allocates. One buffer carries a batch of packets through its whole life:
 *
 *   send:    TUN read into `in` (vnet header + a super-packet of up to
 *            64 KiB) -> cut into segments in `area`, one per slot of
 *            `stride` bytes with room for the transport header before and
 *            padding and tag after -> each sealed in place -> the slots
 *            go out back to back in one UDP GSO send
 *   receive: UDP receive into `in` (with GRO, many datagrams of gso_size
 *            bytes back to back) -> each opened in place -> coalesced into
 *            TUN writes that point into `in` (struct tun_write)
 *
 * The I/O in flight on it is described in the same struct, which is also
 * what io_uring hands back on completion. */
#ifndef DDPNET_PKT_H
#define DDPNET_PKT_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>

#include "crypto/wg_const.h"
#include "overlay/base/endpoint.h"
#include "tun/offload.h"

struct peer;

#define PKT_IN_CAP     (OFFLOAD_VNET_HDR_LEN + OFFLOAD_MAX_IP_LEN)
#define PKT_MAX_SEGS   256u
#define PKT_AREA_CAP   (160u * 1024u)
/* The kernel sends at most this many segments, and a little under 64 KiB
 * (one IP packet), in one UDP GSO send. */
#define PKT_GSO_MAX_SEGS 64u
#define PKT_GSO_MAX_BYTES 65000u

enum pkt_op {
    PKT_IDLE,
    PKT_TUN_READ,
    PKT_UDP_RECV,
    PKT_UDP_SEND,
    PKT_HELD,                    /* staged, or owned by TUN writes in flight */
    PKT_TUN_WRITE,               /* a struct tun_write in flight */
};

struct pkt {
    enum pkt_op op;
    struct pkt *next;            /* free list */
    /* The pool it belongs to, where pkt_put returns it whichever pool it
     * is given: with shards a buffer read on one may be sent by another
     * (staged, then sent when the session comes), and must go home. */
    struct pkt_pool *home;
    uint32_t len;                /* bytes in `in` (receive); last segment's message (send) */
    int fd;                      /* socket of a receive or send */
    unsigned refs;               /* TUN writes in flight that point into `in` */
    union endpoint addr;         /* source of a receive, destination of a send */
    /* A message that came through a relay: the relay (its UDP source is
     * addr), and the peer the relay says sent it. NULL otherwise. */
    struct peer *via, *relay_src;
    struct msghdr msg;
    struct iovec iov;
    /* Control messages (UDP_SEGMENT; UDP_GRO, SO_RXQ_OVFL and
     * SO_TIMESTAMPNS on a receive), aligned as cmsghdr wants. */
    struct {
        uint8_t bytes[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint32_t)) +
                      CMSG_SPACE(sizeof(struct timespec))];
    } ctrl __attribute__((aligned(__alignof__(struct cmsghdr))));
    /* A receive: one of its data packets is to signal congestion, marked
     * CE or dropped (the socket's queue management said so: codel.h). */
    bool congested;

    /* The segments in `area`: segment i's plaintext (seg_len[i] bytes) at
     * area + i * stride + WG_TRANSPORT_HEADER_LEN; its sealed message at
     * area + i * stride. sent counts those already handed to the kernel. */
    uint16_t nseg, sent, chunk;  /* chunk: segments in the send in flight */
    uint32_t stride;
    /* The shard hint its flow has (the engine's flow table, with shards;
     * -1: none, the sealing loop's own). */
    int16_t flow_hint;
    /* The underlay flow its messages leave on (loop_send: 0, the port's
     * socket; i, the loop's i-th extra source port), which its seals name
     * in their byte 3 (wg_const.h). */
    uint8_t flow;
    uint16_t seg_len[PKT_MAX_SEGS];
    /* A cut planned (pkt_plan_cut) but not made: nseg, stride and the last
     * seg_len are known, the segments not written yet. Whoever seals them
     * cuts first (pkt_cut), with this header, on the thread that seals. */
    bool cut_pending;
    struct vnet_hdr cut_vnet;
    /* Opening a receive: per datagram, the status and the counter, and
     * (bit i % 64 of word i / 64) whether its TCP checksums were verified
     * where it was opened (offload_csum_ok). */
    int32_t seg_status[PKT_MAX_SEGS];
    uint64_t seg_counter[PKT_MAX_SEGS];
    uint64_t seg_csum_ok[PKT_MAX_SEGS / 64];

    uint8_t in[PKT_IN_CAP] __attribute__((aligned(16)));
    uint8_t area[PKT_AREA_CAP] __attribute__((aligned(16)));
};

/* A TUN write of one coalesced run; points into its owner's `in`. */
struct tun_write {
    enum pkt_op op;              /* PKT_TUN_WRITE in flight: tells it from a pkt */
    struct tun_write *next;
    struct pkt *owner;
    unsigned iovcnt;
    uint8_t vnet[OFFLOAD_VNET_HDR_LEN];
    struct iovec iov[PKT_MAX_SEGS + 1];
};

struct pkt_pool {
    struct pkt *all;
    struct pkt *free;
    unsigned n, n_free;
    struct tun_write *writes, *free_writes;
};

int pkt_pool_init(struct pkt_pool *pool, unsigned n, unsigned n_writes);
void pkt_pool_destroy(struct pkt_pool *pool);
/* NULL when every buffer is in use. */
struct pkt *pkt_get(struct pkt_pool *pool);
void pkt_put(struct pkt_pool *pool, struct pkt *p);
struct tun_write *tun_write_get(struct pkt_pool *pool);
void tun_write_put(struct pkt_pool *pool, struct tun_write *w);

/* Segment i of a pkt: its slot (sealed message) and its plaintext. */
static inline uint8_t *pkt_slot(struct pkt *p, unsigned i)
{
    return p->area + (size_t)i * p->stride;
}

static inline uint8_t *pkt_seg_plain(struct pkt *p, unsigned i)
{
    return pkt_slot(p, i) + WG_TRANSPORT_HEADER_LEN;
}

/* Makes p hold one empty segment (a keepalive) or len bytes to fill at
 * pkt_seg_plain(p, 0). */
void pkt_single(struct pkt *p, uint16_t len);

/* Plans the cut of the read in p->in (a vnet header, then the packet:
 * p->len bytes in all; h is that header, as fitted to the path) into
 * segments of `stride` bytes in p->area, each with room to be sealed in
 * place: sets nseg, stride, the last segment's seg_len and cut_pending,
 * and writes nothing else. Returns nseg, or offload_segment's error. */
int pkt_plan_cut(struct pkt *p, const struct vnet_hdr *h, uint32_t stride);
/* Makes the planned cut, if one is pending. 0, or -EIO when the cut did
 * not give the planned segments (it cannot: the same bytes were counted);
 * nseg is then 0, so that nothing is sent. */
int pkt_cut(struct pkt *p);

/* How many full-size segments of a tunnel with this MTU fit in one GSO
 * send: the most a super-packet read from ddp0 should carry, so that it
 * leaves in one send and arrives as one GRO batch (at MTU 1420: 44; a
 * 64 KiB one would take two sends, the second of one segment). */
unsigned pkt_gso_segments(unsigned mtu);

/* What a receive's control messages say: the datagram size of a GRO
 * receive (the whole length without GRO), the socket's running total
 * of datagrams the kernel dropped for want of room (SO_RXQ_OVFL, when the
 * socket has it on: there only once the total is not 0), and when the
 * kernel queued it, in ns of CLOCK_REALTIME (SO_TIMESTAMPNS, when the
 * socket has it on). */
struct pkt_recv_info {
    uint32_t seg_size;
    bool has_drops, has_stamp;
    uint32_t drops;
    uint64_t stamp_ns;
};
struct pkt_recv_info pkt_recv_info(struct pkt *p);
/* The datagrams dropped since *seen, the total a socket last reported,
 * given the total a receive just reported; *seen moves up to it. The
 * total is as it stood when the datagram was queued, and receives in
 * flight together may complete out of order: an older total is no news
 * (0). Compared as a signed difference, so the 32-bit total may wrap. */
uint32_t pkt_drops_grew(uint32_t *seen, uint32_t total);

#endif
