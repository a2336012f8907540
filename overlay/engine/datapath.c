/* SPDX-License-Identifier: MIT */
/* The data path.
 *
 * Outbound: one read from ddp0 brings a vnet header and a packet of up to
 * 64 KiB (the kernel's TSO/USO super-packet, TUN_F_TSO*). Its destination
 * names the peer. The packet is cut into MTU-sized IP packets written at a
 * fixed stride into the buffer's area (tun/offload.c), each with room
 * around it, so that every segment is sealed in place and all of them go
 * out back to back in one UDP GSO send (UDP_SEGMENT = stride). The loop
 * only plans the cut (pkt_plan_cut: the count, for the counters it takes);
 * whoever seals makes it, a worker for a bulk read, so that the copy and
 * its checksums leave the loop and the bytes are in the sealing core's
 * cache. ddp0's gso_max_segs is set so that a super-packet holds no more
 * segments than one send carries (pkt_gso_segments: 44 at MTU 1420), so
 * that it leaves in one send and arrives as one GRO batch. Without a
 * usable session the buffer waits on the peer (PEER_STAGED_MAX at most)
 * while a handshake runs.
 *
 * Inbound: one receive brings many datagrams back to back (UDP_GRO). Each
 * transport message is opened in place (the replay window moves only after
 * authentication; the sender's endpoint follows it: roaming), its inner
 * source must be the peer's overlay address, and then consecutive TCP
 * segments of a flow are coalesced into super-packets that ddp0 takes in
 * one write each (writev pointing into the receive buffer: no copy). A
 * batch opened as one job has its TCP checksums verified there too
 * (crypto_job.c), so that coalescing need not read it all.
 *
 * Crypto works on whole buffers, never packet by packet: a super-packet's
 * segments are sealed, and a receive's datagrams to one keypair opened, as
 * one batch (transport_encrypt_batch, transport_decrypt_batch), whose
 * ChaCha20 runs 16 messages at once on AVX-512 (crypto/chacha_multi.h),
 * whose Poly1305 runs 8 at once with IFMA (crypto/poly1305_multi.h), and
 * whose opens check every tag before anything is decrypted. With shards,
 * outside the engine lock on the shard that made the job (crypto_job.h,
 * deferred.h); on one loop, inline. No allocation and no copy per
 * packet besides the one segmentation copy.
 *
 * Latency: after a packet that ends an idle spell the loop polls for a
 * short window instead of sleeping (busy_poll.h), so that the answer to a
 * request finds the daemon awake. (What that and the alternatives
 * measured: bench/README.md, "Measured, and what was tried".) */
#include <errno.h>
#include <string.h>

#include <linux/virtio_net.h>

#include "crypto/bytes.h"
#include "crypto/relay_frame.h"
#include <sodium.h>

#include "config/addr.h"
#include "overlay/base/log.h"
#include "overlay/base/wire.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/filter.h"
#include "overlay/engine/icmp.h"
#include "overlay/engine/model/routes.h"
#include "overlay/engine/timers.h"
#include "overlay/loop/crypto_job.h"
#include "tun/ecn.h"

#define IPV4_TOTLEN_OFF   2u
#define IPV4_SRC_OFF      12u
#define IPV4_DST_OFF      16u
#define IPV6_PAYLEN_OFF   4u
#define IPV6_SRC_OFF      8u
#define IPV6_DST_OFF      24u
#define IPV4_PROTO_OFF    9u
#define IPV6_NEXT_OFF     6u

/* An inner IP packet's family, length and addresses. */
struct inner {
    int family;
    uint32_t len;
    const uint8_t *src, *dst;
};

static bool parse_inner(const uint8_t *ip, uint32_t avail, struct inner *in)
{
    if (avail >= IPV4_HEADER_LEN && ip[0] >> 4 == 4) {
        in->family = AF_INET;
        in->len = get_be16(ip + IPV4_TOTLEN_OFF);
        in->src = ip + IPV4_SRC_OFF;
        in->dst = ip + IPV4_DST_OFF;
        return in->len >= IPV4_HEADER_LEN && in->len <= avail;
    }
    if (avail >= IPV6_HEADER_LEN && ip[0] >> 4 == 6) {
        in->family = AF_INET6;
        in->len = IPV6_HEADER_LEN + get_be16(ip + IPV6_PAYLEN_OFF);
        in->src = ip + IPV6_SRC_OFF;
        in->dst = ip + IPV6_DST_OFF;
        return in->len <= avail;
    }
    return false;
}

/* Disco's protocol number: the daemon's own messages. Read from ddp0 they
 * are dropped (only the daemon speaks disco for this node); received,
 * they are handled and never written to ddp0. */
static bool is_disco(const uint8_t *ip, const struct inner *in)
{
    return ip[in->family == AF_INET ? IPV4_PROTO_OFF : IPV6_NEXT_OFF] == DISCO_IP_PROTO;
}

/* --- outbound ------------------------------------------------------------------ */

/* The slot size for the segments of this packet: a full segment sealed
 * (padded no further than the path's MTU), so that the sealed full
 * segments lie back to back for GSO. */
static uint32_t segment_stride(const struct device *dev, const struct vnet_hdr *h,
                               const uint8_t *ip, uint32_t len, unsigned mtu)
{
    struct offload_ip oip;
    size_t full = len;

    if (h->gso_type != VIRTIO_NET_HDR_GSO_NONE && offload_parse(ip, len, &oip) == 0)
        full = (size_t)oip.l3_len + oip.l4_hlen + h->gso_size;
    if (full > dev->mtu)
        full = dev->mtu;
    return (uint32_t)transport_sealed_len_limited(full, mtu);
}

/* Plans the cut of pkt's read into p's segments (pkt_plan_cut): the
 * copy itself is made by whoever seals them, a worker for a bulk read. */
static int segment(struct device *dev, struct pkt *pkt, const uint8_t *ip, uint32_t len,
                   struct vnet_hdr *h, unsigned mtu)
{
    /* A path narrower than ddp0 (a relay's, or one whose MTU is still
     * being searched): TCP is cut to it, super-packets and lone packets
     * alike. (UDP datagrams keep their size: it is the application's.) */
    if (mtu < dev->mtu)
        offload_fit_tcp(h, ip, len, mtu);
    return pkt_plan_cut(pkt, h, segment_stride(dev, h, ip, len, mtu));
}

static void send_batch(struct peer *p, struct pkt **pkts, unsigned n, uint64_t now);

/* Cuts the read in pkt->in (vnet header and packet, pkt->len bytes) into
 * p's segments: their count, or <= 0 when it cannot be sent. A read of no
 * bytes past the vnet header (a staged keepalive) is one empty segment. */
static int prepare(struct device *dev, struct peer *p, struct pkt *pkt)
{
    struct vnet_hdr h;

    if (pkt->len == 0) {
        pkt_single(pkt, 0);
        return 1;
    }
    if (pkt->len < OFFLOAD_VNET_HDR_LEN || vnet_hdr_parse(pkt->in, pkt->len, &h))
        return -EINVAL;
    int ret = segment(dev, pkt, pkt->in + OFFLOAD_VNET_HDR_LEN,
                      pkt->len - OFFLOAD_VNET_HDR_LEN, &h, path_mtu(p));
    if (ret <= 0)
        log_debug_rl("dropped a packet from %s that cannot be segmented (%d)", dev->ifname, ret);
    else
        dev->stats.tun_segments += (uint64_t)ret;
    return ret;
}

/* Answers the packet ip[0..len) in pkt with an ICMP error (icmp.h),
 * written to ddp0 from the same buffer, as a router would: "unreachable"
 * for a peer that does not answer, so that a connect fails now instead of
 * after its retries; "too big" with the path's MTU, so that the sender's
 * kernel keeps packets to that peer small. */
static void answer_icmp(struct device *dev, struct pkt *pkt, const uint8_t *ip, uint32_t len,
                        enum icmp_error kind, unsigned mtu)
{
    struct tun_write *w;
    long n = icmp_error_build(pkt->area, PKT_AREA_CAP, ip, len, kind, mtu);

    if (n < 0 || !(w = loop_tun_write_get(dev->loop))) {
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    memset(w->vnet, 0, sizeof(w->vnet));   /* VIRTIO_NET_HDR_GSO_NONE, no checksum to do */
    w->iov[0] = (struct iovec){ w->vnet, sizeof(w->vnet) };
    w->iov[1] = (struct iovec){ pkt->area, (size_t)n };
    w->iovcnt = 2;
    w->owner = pkt;
    pkt->op = PKT_HELD;
    pkt->refs = 1;
    loop_write_tun(dev->loop, w);
}

/* A packet larger than p's path takes that cannot be cut to fit: not a
 * TCP super-packet (segmented to the path's size), but a lone packet or a
 * UDP super-packet whose datagrams are too big. Only once the path's MTU
 * is known: until then it goes as it is. */
static bool too_big(const struct peer *p, const struct vnet_hdr *h, const uint8_t *ip,
                    uint32_t len, unsigned mtu)
{
    uint8_t type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
    struct offload_ip oip;

    if (!path_mtu_known(p) || type == VIRTIO_NET_HDR_GSO_TCPV4 ||
        type == VIRTIO_NET_HDR_GSO_TCPV6)
        return false;
    if (type == VIRTIO_NET_HDR_GSO_NONE)
        return len > mtu;
    return offload_parse(ip, len, &oip) == 0 &&
           (size_t)oip.l3_len + oip.l4_hlen + h->gso_size > mtu;
}

/* An address of the overlay's network that no member holds. */
static bool no_member_at(const struct device *dev, const struct inner *in)
{
    struct cluster_addr a = { .family = in->family };

    memcpy(a.bytes, in->dst, in->family == AF_INET ? 4 : 16);
    return cluster_addr_in_network(&a, &dev->cluster.network, dev->cluster.prefix) &&
           !cluster_addr_equal(&a, &dev->self->address) &&
           !cluster_addr_is_broadcast(&a, dev->cluster.prefix);
}

/* The carrier of a granted route holding in's destination (issue 60),
 * asked only for a destination outside the overlay: the overlay's own
 * addresses are members' or no one's, so their common path pays nothing. */
static struct peer *routed_to(struct device *dev, const struct inner *in)
{
    struct cluster_addr a = { .family = in->family };
    struct route_entry *e;

    memcpy(a.bytes, in->dst, in->family == AF_INET ? 4 : 16);
    if (cluster_addr_in_network(&a, &dev->cluster.network, dev->cluster.prefix) ||
        !(e = device_route_at(dev, in->family, in->dst)) || !e->via)
        return NULL;
    e->packets++;
    return e->via;
}

/* Why a read from ddp0 goes no further: the send side's drops, each
 * leaving through tx_drop, which counts it once under its reason (struct
 * device_stats; the receive side's are model/drops.h's rx_drop). Packets
 * waiting for a session that give up are the staging store's (stage.h's
 * stats). */
enum tx_drop {
    TX_DROP_NOT_OURS,     /* malformed, disco's own, or to no member and outside
                           * the overlay's network (the kernel's multicast): not
                           * counted, as no one's data is lost: the host's own
                           * chatter on ddp0 would make a healthy node's drops tick */
    TX_DROP_UNREACHABLE,  /* to an address no member holds, or to a peer that does
                           * not answer: refused_unreachable, ICMP unreachable sent */
    TX_DROP_TOO_BIG,      /* larger than the path, and not to be cut: refused_too_big,
                           * ICMP "too big" (the path's MTU) sent */
    TX_DROP_UNCUT,        /* a super-packet its vnet header does not let us cut
                           * (or a staged one lost): dropped_unsendable */
    TX_DROP_NO_KEY,       /* the keypair cannot seal it (its counter or age ran
                           * out since it was chosen): dropped_unsendable */
    TX_DROP_RULE,         /* no rule lets it out (filter.h): refused_rule, ICMP
                           * "administratively prohibited" sent */
};

/* A packet read from ddp0 that goes to no peer (dropped, or answered here
 * with an ICMP error) has no answer to wait for on the network: the
 * busy-poll window it opened closes (loop_packet_unawaited), so that the
 * kernel's own multicast and the like keep an idle daemon asleep. Takes
 * pkt (ip: its packet of len bytes, answered; mtu: the path's, for
 * TX_DROP_TOO_BIG). */
static void tx_drop(struct device *dev, struct pkt *pkt, enum tx_drop why, const uint8_t *ip,
                    uint32_t len, unsigned mtu)
{
    struct device_stats *st = &dev->stats;

    /* Only a read ddp0 just gave is unawaited; a cut or seal that failed
     * was on its way to a peer, or came from the staging store. */
    if (why == TX_DROP_NOT_OURS || why == TX_DROP_UNREACHABLE || why == TX_DROP_TOO_BIG ||
        why == TX_DROP_RULE)
        loop_packet_unawaited(dev->loop);
    switch (why) {
    case TX_DROP_RULE:
        st->refused_rule++;
        answer_icmp(dev, pkt, ip, len, ICMP_ERROR_PROHIBITED, 0);
        return;
    case TX_DROP_UNREACHABLE:
        st->refused_unreachable++;
        answer_icmp(dev, pkt, ip, len, ICMP_ERROR_UNREACHABLE, 0);
        return;
    case TX_DROP_TOO_BIG:
        st->refused_too_big++;
        answer_icmp(dev, pkt, ip, len, ICMP_ERROR_TOO_BIG, mtu);
        return;
    case TX_DROP_UNCUT:
    case TX_DROP_NO_KEY:
        st->dropped_unsendable++;
        break;
    case TX_DROP_NOT_OURS:
        break;
    }
    loop_pkt_put(dev->loop, pkt);
}

void datapath_from_tun(struct device *dev, struct pkt *pkt, uint64_t now)
{
    const uint8_t *ip = pkt->in + OFFLOAD_VNET_HDR_LEN;
    uint32_t len = pkt->len - OFFLOAD_VNET_HDR_LEN;
    struct vnet_hdr h;
    struct inner in;
    struct peer *p;

    if (pkt->len < OFFLOAD_VNET_HDR_LEN || vnet_hdr_parse(pkt->in, pkt->len, &h) ||
        !parse_inner(ip, len, &in) || is_disco(ip, &in)) {
        tx_drop(dev, pkt, TX_DROP_NOT_OURS, ip, len, 0);
        return;
    }
    if (!(p = device_peer_by_address(dev, in.family, in.dst)) && !(p = routed_to(dev, &in))) {
        /* No member there (any more: a reload removed it): the sender
         * learns at once, as from a member that does not answer. */
        tx_drop(dev, pkt, no_member_at(dev, &in) ? TX_DROP_UNREACHABLE : TX_DROP_NOT_OURS, ip,
                len, 0);
        return;
    }
    dev->stats.tun_reads++;
    if (!filter_out(dev, p, ip, len, now)) {
        tx_drop(dev, pkt, TX_DROP_RULE, ip, len, 0);
        return;
    }
    if (p->wg.no_answer && !datapath_ready(p, now)) {
        handshake_send_initiation(p, false, now);   /* paced: it may be back */
        tx_drop(dev, pkt, TX_DROP_UNREACHABLE, ip, len, 0);
        return;
    }
    if (too_big(p, &h, ip, len, path_mtu(p))) {
        tx_drop(dev, pkt, TX_DROP_TOO_BIG, ip, len, path_mtu(p));
        return;
    }
    if (p->wg.staged.packets || !datapath_ready(p, now)) {
        /* Copied out: a pool buffer is never held for a peer (stage.h). */
        peer_stage(p, pkt->in, pkt->len, now);
        loop_pkt_put(dev->loop, pkt);
        datapath_send_staged(p, now);
        return;
    }
    int n = prepare(dev, p, pkt);
    if (n <= 0) {
        tx_drop(dev, pkt, TX_DROP_UNCUT, ip, len, 0);
        return;
    }
    /* Its flow's turn (flows.h): the shard hint, with shards; its
     * underlay flow, where the peer takes several (path_flows). */
    bool hinted = dev->shards > 1 && p->path.hints_said;
    unsigned flows = path_flows(p);
    if (hinted || flows > 1) {
        unsigned turn = flows_turn(&dev->flows, offload_flow_hash(ip, len), now);
        if (hinted)
            pkt->flow_hint = (int16_t)(turn % dev->shards);
        pkt->flow = (uint8_t)(turn % flows);
    }
    pkt->op = PKT_HELD;
    send_batch(p, &pkt, 1, now);
}

/* Where a crypto job is filled in: with shards, a deferred slot, run
 * after the handlers outside the engine lock, however small (a ping, an
 * ACK: issue 58, no seal or open under the lock; jobs of up to 16 KiB ran
 * here while none was in flight, which saved a hand-over to the crypto
 * workers, gone since, and with shards held the lock through the AEAD);
 * on one loop, local, run here. */
static struct crypto_job *job_slot(struct device *dev, struct crypto_job *local, uint64_t now)
{
    struct crypto_job *job = loop_crypto_job(dev->loop, now);

    return job ? job : local;
}

/* Defers a filled-in job (the loop runs it after the handlers and
 * finishes it in order: datapath_crypto_done), or runs it here and
 * finishes it at once. */
static void job_start(struct device *dev, struct crypto_job *job, const struct crypto_job *local,
                      uint64_t now)
{
    if (job != local) {
        loop_crypto_submit(dev->loop, job);
        return;
    }
    crypto_job_run(job);
    sodium_memzero(job->key, WG_KEY_LEN);
    datapath_crypto_done(dev, job, now);
}

/* The shard bytes of a seal (wg_const.h), only to a peer that said it
 * takes them on this session (else both 0): the hint, its flow's
 * (flows.h; else this loop's shard), so that the receiver opens a flow on
 * one shard; the sub-session, this loop's shard's, so that each shard's
 * counters leave in order. */
static bool shard_bytes(const struct peer *p, const struct noise_keypair *kp,
                        const struct pkt *pkt, unsigned *hint, unsigned *sub)
{
    unsigned shard = loop_shard(p->dev->loop);

    *hint = *sub = 0;
    if (!p->path.hints_said || p->path.hints_index != kp->local_index)
        return false;
    *hint = pkt->flow_hint >= 0 ? (unsigned)pkt->flow_hint : shard;
    *sub = shard % WG_SHARD_HINTS;
    return true;
}

/* Seals every segment of pkt, deferred or here (job_start). The
 * counters are taken now, in the handler. */
bool datapath_seal(struct peer *p, struct noise_keypair *kp, struct pkt *pkt,
                   uint32_t pad_limit, uint64_t now)
{
    struct crypto_job local, *job;
    uint64_t first;
    unsigned last = pkt->nseg - 1u, hint, sub;
    bool hinted;

    if (!kp)
        return false;
    /* The counters of this shard's sub-session (transport.h): each
     * shard's stay in order on the wire. */
    hinted = shard_bytes(p, kp, pkt, &hint, &sub);
    if (transport_reserve_hinted(kp, sub, pkt->nseg, now, &first))
        return false;
    peer_count_tx(p, (uint64_t)last * pkt->stride +
                         transport_sealed_len_limited(pkt->seg_len[last], pad_limit), now);
    /* A peer that takes no hints (a stock WireGuard peer) has one counter
     * space, and a replay window of its own implementation's width: with
     * shards its seals run here, under the engine lock, so that no
     * shard's lag puts its counters that far out of order. */
    if (p->dev->shards > 1 && !hinted)
        job = &local;
    else
        job = job_slot(p->dev, &local, now);
    *job = (struct crypto_job){ .kind = CRYPTO_SEAL, .pkt = pkt, .peer = p, .peer_id = p->id,
                                .remote_index = kp->remote_index, .first_counter = first,
                                .pad_limit = pad_limit, .hint = (uint8_t)hint,
                                .sub = (uint8_t)sub, .flow = pkt->flow };
    memcpy(job->key, transport_send_key(kp, sub), WG_KEY_LEN);
    job_start(p->dev, job, &local, now);
    return true;
}

/* Seals and sends the prepared buffers pkts[0..n) with p's current
 * keypair, then what WireGuard's timers want to hear of it. */
static void send_batch(struct peer *p, struct pkt **pkts, unsigned n, uint64_t now)
{
    struct noise_keypair *kp = p->wg.current;
    bool sent = false, sent_data = false;

    for (unsigned i = 0; i < n; i++) {
        struct pkt *pkt = pkts[i];
        /* A planned cut is of an IP packet: never empty. */
        sent_data |= pkt->cut_pending;
        for (unsigned s = 0; s < pkt->nseg && !sent_data; s++)
            sent_data |= pkt->seg_len[s] > 0;
        if (datapath_seal(p, kp, pkt, path_mtu(p), now))
            sent = true;
        else
            tx_drop(p->dev, pkt, TX_DROP_NO_KEY, NULL, 0, 0);
    }
    if (sent)
        peer_sent(p, 0, sent_data, now);   /* datapath_seal counted the bytes */
    else if (sent_data)
        timers_data_sent(p, now);
    if (transport_needs_rekey(kp, now + p->wg.rekey_early_ns))
        handshake_send_initiation(p, false, now);
}

bool datapath_ready(const struct peer *p, uint64_t now)
{
    return peer_can_send(p, now) && path_usable(p);
}

/* Staged packets leave this many buffers at a time. */
#define STAGED_BATCH 8u

void datapath_send_staged(struct peer *p, uint64_t now)
{
    struct pkt *batch[STAGED_BATCH];

    if (!p->wg.staged.packets)
        return;
    if (!datapath_ready(p, now)) {
        handshake_send_initiation(p, false, now);
        return;
    }
    while (p->wg.staged.packets) {
        unsigned n = 0;
        while (n < STAGED_BATCH && p->wg.staged.packets) {
            struct pkt *pkt = loop_pkt_get(p->dev->loop);
            if (!pkt)
                break;   /* the rest goes with the next packet or timer */
            long len = peer_unstage(p, pkt->in, PKT_IN_CAP);
            pkt->len = len < 0 ? 0 : (uint32_t)len;
            if (len < 0 || prepare(p->dev, p, pkt) <= 0) {
                tx_drop(p->dev, pkt, TX_DROP_UNCUT, NULL, 0, 0);
                continue;
            }
            pkt->op = PKT_HELD;
            batch[n++] = pkt;
        }
        if (!n)
            break;
        send_batch(p, batch, n, now);
    }
}

void datapath_send_keepalive(struct peer *p, uint64_t now)
{
    if (!p->wg.staged.packets)
        peer_stage(p, NULL, 0, now);
    datapath_send_staged(p, now);
}

/* --- inbound -------------------------------------------------------------------- *
 *
 * One receive, top to bottom, one function per stage:
 *   datapath_from_udp  a lone handshake message (lone_handshake), a batch
 *                      to one keypair (open_batch, then finish_open), or
 *                      datagram by datagram (open_here, rx_datagram):
 *                      handshake messages (pass_to_handshake), relay
 *                      frames (frames_in, frame_in), transport messages
 *                      (open_message)
 *   rx_transport       one transport message after its AEAD, its stages in
 *                      order: accept_opened (keypair, age, replay),
 *                      after_authentic, rx_inner
 *   after_authentic    what an authentic message tells: path, counters,
 *                      session confirmed, timers
 *   rx_inner           the inner packet: its source, then disco (disco_in)
 *                      or data kept for ddp0
 *   take_relayed       a RELAYED's (or frame's) message: a handshake
 *                      message now, a transport message with the receive's
 *                      others (open_inner, which goes back to
 *                      after_authentic and rx_inner for each)
 *   end_batch          ddp0's writes, the relay's gathered sends, the
 *                      buffer released (once, here)
 * Each message that goes no further leaves through rx_drop (model/drops.h,
 * the receive side's reasons), which counts it once under its reason. */

/* A status of the AEAD or the replay window, as a drop reason. */
static enum rx_drop drop_of(int status)
{
    return status == -WG_EREPLAY ? RX_DROP_REPLAY : RX_DROP_BAD;
}

/* The initiator renews its session before the responder would have to
 * drop it: once per session, when it nears REJECT_AFTER_TIME. */
static void keep_key_fresh_on_receive(struct peer *p, uint64_t now)
{
    const struct noise_keypair *kp = p->wg.current;
    const uint64_t limit = (WG_REJECT_AFTER_TIME - WG_KEEPALIVE_TIMEOUT - WG_REKEY_TIMEOUT) *
                           WG_NSEC_PER_SEC;

    if (kp && kp->is_initiator && now - kp->birth_ns >= limit &&
        !p->wg.timers.sent_lastminute_handshake) {
        p->wg.timers.sent_lastminute_handshake = true;
        handshake_send_initiation(p, false, now);
    }
}

static bool source_allowed(const struct peer *p, const struct inner *in)
{
    /* A stranger on probation has no address yet: its disco CERT is let
     * in (its data is dropped as a pending peer's, its other disco too). */
    if (p->member.probation)
        return true;
    size_t n = in->family == AF_INET ? 4 : 16;
    if (p->member.address.family == in->family && !memcmp(p->member.address.bytes, in->src, n))
        return true;
    /* From behind p: inside a prefix the cluster grants p to carry. */
    struct route_entry *e = device_route_at(p->dev, in->family, in->src);
    if (!e || e->via != p)
        return false;
    e->packets++;
    return true;
}

/* What follows an authentic transport message of len bytes from src (or
 * through the relay via): the path (roaming; from one of the peer's extra
 * flows, `flow` not 0, none), counters, session confirmation, timers. */
static void after_authentic(struct peer *p, struct noise_keypair *kp, uint32_t len,
                            const union endpoint *src, struct peer *via, unsigned flow,
                            uint64_t now)
{
    if (flow && !via)
        discovery_flow_heard(p, kp, now);
    else
        path_received(p, src, via, len, false, now);
    peer_count_rx(p, len, now);
    if (peer_received_with_keypair(p, kp)) {
        timers_handshake_complete(p, now);
        discovery_session_up(p, now);
        datapath_send_staged(p, now);
    }
    keep_key_fresh_on_receive(p, now);
    timers_any_authenticated_packet_received(p, now);
    timers_any_authenticated_packet_traversal(p, now);
}

/* The keypair a transport message is addressed to, or NULL. */
static struct index_entry *message_keypair(struct device *dev, const uint8_t *msg, uint32_t len)
{
    struct index_entry *e;

    if (len < WG_TRANSPORT_MIN_LEN ||
        !(e = index_find(&dev->indices, transport_receiver(msg))) || !e->keypair)
        return NULL;
    return e;
}

/* What follows the AEAD for a message opened elsewhere (a worker, or a
 * batch) with `status` and `counter`: the keypair looked up again (it may
 * have gone, or changed with what came before), that it is the peer's
 * that must have sent it (want; NULL: any), its age, then the replay
 * check. Returns the keypair's entry, or NULL with the drop counted. */
static struct index_entry *accept_opened(struct device *dev, const uint8_t *msg, uint32_t len,
                                         int status, uint64_t counter,
                                         const struct peer *want, uint64_t now)
{
    struct index_entry *e = NULL;

    if (!status && (!(e = message_keypair(dev, msg, len)) || (want && e->peer != want) ||
                    transport_expired(e->keypair, now)))
        status = -WG_ESTALE;
    if (!status)
        status = transport_accept_hinted(e->keypair, transport_sub_of(msg), counter);
    if (status) {
        rx_drop(dev, drop_of(status), 1);
        return NULL;
    }
    return e;
}

/* A RELAYED message to open: the WireGuard message msg[0..len) that the
 * relay says came from src. */
struct relayed {
    struct peer *relay, *src;
    uint8_t *msg;
    uint32_t len;
};

/* The packets of one receive bound for ddp0, and where the receive came
 * from (a relayed message's source is its relay). The transport messages
 * that came inside RELAYEDs wait in `inner` and are opened together at the
 * end of the receive (open_inner): a relayed stream's receiver opens in
 * batches, as a direct one's does. */
struct rx_batch {
    struct pkt *pkt;
    struct offload_pkt plain[PKT_MAX_SEGS];
    size_t n;
    uint64_t forwarded;                   /* stats.relay_forwarded when it began */
    struct relayed inner[PKT_MAX_SEGS];
    unsigned n_inner;
    /* The message being handled was opened on a worker, which verified its
     * TCP checksums (pkt->seg_csum_ok): coalescing need not sum it. */
    bool csum_ok;
    /* A data packet of this receive is still to signal congestion
     * (pkt->congested): the first one, in rx_inner. */
    bool congested;
};

/* Set by hand, not by an initializer: that would zero the arrays (12 KiB)
 * on every receive. */
static void rx_batch_init(struct rx_batch *b, const struct device *dev, struct pkt *pkt)
{
    b->pkt = pkt;
    b->n = 0;
    b->forwarded = dev->stats.relay_forwarded;
    b->n_inner = 0;
    b->csum_ok = false;
    b->congested = pkt->congested;
}

static void take_relayed(struct device *dev, struct rx_batch *b, const struct relayed *r,
                         uint64_t now);

/* A disco packet from p (the inner packet ip[0..len)), never written to
 * ddp0: handled by discovery (discovery_receive), or, a RELAYED that came
 * directly, its message taken (take_relayed). */
/* A member that holds us on probation (joining with no server) knows no
 * address of ours yet: its disco comes to the unspecified address. */
static bool unaddressed(const uint8_t *dst, int family)
{
    static const uint8_t zero[16];

    return !memcmp(dst, zero, family == AF_INET ? 4 : 16);
}

static void disco_in(struct device *dev, struct rx_batch *b, struct peer *p,
                     const struct noise_keypair *kp, uint8_t *ip, uint32_t len, struct peer *via,
                     bool elsewhere, uint64_t now)
{
    const uint8_t *src, *dst, *payload;
    struct disco_msg *m = dev->disco.in_msg;
    struct relayed rel;
    size_t plen;
    int family;

    if (disco_ip_parse(ip, len, &family, &src, &dst, &payload, &plen) ||
        (memcmp(dst, dev->self->address.bytes, family == AF_INET ? 4 : 16) &&
         !unaddressed(dst, family)) ||
        !m || disco_decode(payload, plen, m)) {
        rx_drop(dev, RX_DROP_DISCO, 1);
        return;
    }
    if (elsewhere && m->type != DISCO_CERT) {
        rx_drop(dev, RX_DROP_SOURCE, 1);
        return;
    }
    if (m->type != DISCO_RELAYED) {
        discovery_receive(p, kp, via ? NULL : &b->pkt->addr, via, m, now);
        return;
    }
    /* Not through two relays: the relay must have reached us directly. */
    if (via) {
        rx_drop(dev, RX_DROP_TWO_HOPS, 1);
        return;
    }
    rel = (struct relayed){ .relay = p, .src = device_peer_by_key(dev, m->relay.key),
                            .msg = ip + (m->relay.msg - ip), .len = (uint32_t)m->relay.msg_len };
    if (!rel.src || rel.src == p) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return;
    }
    take_relayed(dev, b, &rel, now);
}

/* The receive's socket holds a standing queue (loop/codel.h): this data
 * packet tells its sender, marked CE if its transport takes ECN, else
 * dropped (returns false: it goes no further). Once per receive. */
static bool signal_congestion(struct device *dev, struct rx_batch *b, uint8_t *ip, uint32_t len)
{
    b->congested = false;
    if (ecn_mark_ce(ip, len)) {
        dev->stats.ecn_marked++;
        return true;
    }
    rx_drop(dev, RX_DROP_QUEUE_DELAY, 1);
    return false;
}

/* The inner packet of an opened transport message from p on its session
 * kp (directly, or through the relay via), plen bytes (0: a keepalive):
 * its source must be p's address; a disco packet goes to disco_in; data
 * is kept for ddp0. One exception: a disco CERT from another source than
 * the address we hold for p (the session proves whose it is; disco never
 * reaches ddp0). A certificate only passed on may have given p's key
 * another address than its own certificate fixes (issue 55: a token's
 * holder signing for another's key): p must still be heard saying its
 * own. */
static void rx_inner(struct device *dev, struct rx_batch *b, struct peer *p,
                     const struct noise_keypair *kp, uint8_t *msg, long plen, struct peer *via,
                     uint64_t now)
{
    uint8_t *ip = msg + WG_TRANSPORT_HEADER_LEN;
    struct inner in;
    bool elsewhere;

    if (plen > 0 && !parse_inner(ip, (uint32_t)plen, &in)) {
        rx_drop(dev, RX_DROP_SOURCE, 1);
        return;
    }
    elsewhere = plen > 0 && !source_allowed(p, &in);
    if (elsewhere && !is_disco(ip, &in)) {
        rx_drop(dev, RX_DROP_SOURCE, 1);
        return;
    }
    if (plen > 0 && is_disco(ip, &in)) {
        disco_in(dev, b, p, kp, ip, in.len, via, elsewhere, now);
        return;
    }
    /* Data (or a keepalive) sent to us directly while we relay: the
     * peer's direct path works, and so will ours. */
    if (!via && p->path.via && !msg[WG_FLOW_OFFSET])
        path_received(p, &b->pkt->addr, NULL, 0, true, now);
    if (plen <= 0)      /* a keepalive */
        return;
    if (p->member.pending) {   /* its record is not its holder's word yet */
        rx_drop(dev, RX_DROP_PENDING, 1);
        return;
    }
    if (!filter_in(dev, p, ip, in.len, now)) {
        rx_drop(dev, RX_DROP_RULE, 1);
        return;
    }
    timers_data_received(p, now);
    if (b->congested && !signal_congestion(dev, b, ip, in.len))
        return;
    b->plain[b->n++] = (struct offload_pkt){ ip, in.len, b->csum_ok };
}

/* One transport message msg[0..len) whose AEAD ran elsewhere (a worker, or
 * a batch: tp), from src directly, or from the peer `want` through the
 * relay via: accepted (or dropped), what it tells, then its inner packet. */
static void rx_transport(struct device *dev, struct rx_batch *b, uint8_t *msg, uint32_t len,
                         const struct transport_packet *tp, struct peer *want,
                         const union endpoint *src, struct peer *via, uint64_t now)
{
    struct index_entry *e = accept_opened(dev, msg, len, tp->status, tp->counter, want, now);

    if (!e)
        return;
    after_authentic(e->peer, e->keypair, len, src, via, msg[WG_FLOW_OFFSET], now);
    rx_inner(dev, b, e->peer, e->keypair, msg, (long)tp->len, via, now);
}

/* One transport message from the receive's source, opened here on its
 * own (transport_open: keypair, age, AEAD, replay), then its inner
 * packet. */
static void open_message(struct device *dev, struct rx_batch *b, uint8_t *msg, uint32_t len,
                         uint64_t now)
{
    struct index_entry *e = message_keypair(dev, msg, len);
    struct transport_packet tp = { .buf = msg, .cap = len, .len = len };
    int ret;

    if (!e) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return;
    }
    ret = transport_open(e->keypair, &tp, now);
    if (ret) {
        rx_drop(dev, drop_of(ret), 1);
        return;
    }
    after_authentic(e->peer, e->keypair, len, &b->pkt->addr, NULL, msg[WG_FLOW_OFFSET], now);
    rx_inner(dev, b, e->peer, e->keypair, msg, (long)tp.len, NULL, now);
}

/* A RELAYED's message, handled as if it came from a virtual endpoint
 * "through the relay": a handshake message in a buffer of its own; a
 * transport message left where it lies, to be opened with the receive's
 * others (open_inner). A receive's datagrams give one each at most, so
 * `inner` has room for every one. */
static void take_relayed(struct device *dev, struct rx_batch *b, const struct relayed *r,
                         uint64_t now)
{
    if (noise_message_type(r->msg, r->len) != WG_MSG_TRANSPORT) {
        struct pkt *h;
        if (!handshake_admit(dev, r->msg, r->len, &b->pkt->addr, now) ||
            !(h = device_pkt_get(dev)))
            return;
        memcpy(h->in, r->msg, r->len);
        h->len = r->len;
        h->addr = b->pkt->addr;     /* what cookies bind to: the relay's address */
        h->via = r->relay;
        h->relay_src = r->src;
        handshake_receive(dev, h, now);
        return;
    }
    if (b->n_inner < PKT_MAX_SEGS)
        b->inner[b->n_inner++] = *r;
    else
        rx_drop(dev, RX_DROP_BAD, 1);     /* never: see above */
}

/* The length of the run of b->inner from i on that goes to one keypair
 * from the peer its relay named (at least 1: a message that does not is
 * a run of its own, which open_inner drops). */
static unsigned inner_run(struct device *dev, const struct rx_batch *b, unsigned i,
                          struct index_entry **e_out)
{
    struct index_entry *e = message_keypair(dev, b->inner[i].msg, b->inner[i].len);
    unsigned n = 1;

    *e_out = e && e->peer == b->inner[i].src ? e : NULL;
    if (!*e_out)
        return 1;
    while (i + n < b->n_inner && n < TRANSPORT_BATCH &&
           b->inner[i + n].src == b->inner[i].src &&
           transport_sub_of(b->inner[i + n].msg) == transport_sub_of(b->inner[i].msg) &&
           message_keypair(dev, b->inner[i + n].msg, b->inner[i + n].len) == e)
        n++;
    return n;
}

/* Opens the relayed transport messages of the receive, a run to one
 * keypair at a time in one batch (transport_decrypt_batch: every tag
 * checked before anything is decrypted), then, message by message and in
 * order, what follows (accept_opened: from the peer the relay named) and
 * the plaintext kept for ddp0. */
static void open_inner(struct device *dev, struct rx_batch *b, uint64_t now)
{
    struct transport_packet tp[TRANSPORT_BATCH];
    struct index_entry *e;

    for (unsigned i = 0, n; i < b->n_inner; i += n) {
        n = inner_run(dev, b, i, &e);
        if (!e) {
            rx_drop(dev, RX_DROP_BAD, 1);
            continue;
        }
        if (transport_expired(e->keypair, now)) {
            rx_drop(dev, RX_DROP_BAD, n);
            continue;
        }
        for (unsigned k = 0; k < n; k++)
            tp[k] = (struct transport_packet){ .buf = b->inner[i + k].msg,
                                               .cap = b->inner[i + k].len,
                                               .len = b->inner[i + k].len };
        uint8_t key[WG_KEY_LEN];
        transport_recv_key(e->keypair, transport_sub_of(b->inner[i].msg), key);
        transport_decrypt_batch(key, tp, n);
        sodium_memzero(key, sizeof(key));
        /* Through a relay: a RELAYED inside is refused (disco_in), so
         * nothing is added to b->inner while it is walked here. */
        for (unsigned k = 0; k < n && b->n < PKT_MAX_SEGS; k++)
            rx_transport(dev, b, b->inner[i + k].msg, b->inner[i + k].len, &tp[k],
                         b->inner[i + k].src, NULL, b->inner[i + k].relay, now);
    }
    b->n_inner = 0;
}

/* A relay frame from src (crypto/relay_frame.h), opened (f->status) with
 * the keys of p's session that it names: from a member on its session
 * with us. As its relay, the message is forwarded (path_forward says
 * whether we may); as the destination, it is taken as a RELAYED's is. The same checks as for
 * RELAY and RELAYED, and in the same order: authentic, not replayed, then
 * what it carries. */
static void frame_in(struct device *dev, struct rx_batch *b, struct peer *p,
                     const struct relay_frame *f, const union endpoint *src, uint64_t now)
{
    const struct index_entry *e = accept_opened(dev, f->buf, f->len, f->status, f->counter, p,
                                                now);
    struct relayed r;

    if (!e)
        return;
    after_authentic(p, e->keypair, f->len, src, NULL, 0, now);
    if (e->keypair == p->wg.current)
        path_frames_said(p, e->keypair->local_index, f->data);
    /* Sent to us directly while we relay to it: its direct path works. */
    if (p->path.via)
        path_received(p, src, NULL, 0, true, now);
    dev->stats.relay_frames_received++;
    dev->stats.relay_data_frames_received += f->data;
    if (!disco_enclosed_ok(f->msg, f->msg_len)) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return;
    }
    if (f->kind == RELAY_FRAME_TO) {
        path_forward(dev, p, device_peer_by_key(dev, f->peer), f->msg, f->msg_len, now);
        return;
    }
    r = (struct relayed){ .relay = p, .src = device_peer_by_key(dev, f->peer), .msg = f->msg,
                          .len = f->msg_len };
    if (!r.src || r.src == p) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return;
    }
    take_relayed(dev, b, &r, now);
}

/* Whether this node takes frames of this message type: both types, but
 * no data frames where it plays a version before them (data_frames_off),
 * which drops them as messages of an unknown type. */
static bool frame_type_taken(const struct device *dev, uint32_t type)
{
    return relay_frame_type(type) && !(type == RELAY_FRAME_DATA_TYPE && dev->data_frames_off);
}

/* The frames of a receive from `off` on that go to one keypair, opened as
 * one batch (every tag checked before anything is decrypted), then each
 * handled in order (frame_in). Returns the bytes of the receive they
 * took. A node that takes no frames drops them, as an older one would. */
static uint32_t frames_in(struct device *dev, struct rx_batch *b, uint32_t off,
                          uint32_t seg_size, uint64_t now)
{
    struct pkt *pkt = b->pkt;
    struct relay_frame f[TRANSPORT_BATCH];
    struct index_entry *e = message_keypair(dev, pkt->in + off, pkt->len - off);
    unsigned n = 0, room = PKT_MAX_SEGS - (unsigned)(b->n + b->n_inner);
    uint32_t at = off;

    while (at < pkt->len && n < TRANSPORT_BATCH && n < room) {
        uint8_t *msg = pkt->in + at;
        uint32_t len = pkt->len - at < seg_size ? pkt->len - at : seg_size;
        if (!frame_type_taken(dev, noise_message_type(msg, len)) ||
            (n && message_keypair(dev, msg, len) != e))
            break;
        f[n++] = (struct relay_frame){ .buf = msg, .len = len, .status = -EBADMSG };
        at += seg_size;
    }
    if (!e || dev->relay_frames_off) {
        rx_drop(dev, RX_DROP_BAD, n);
        return at - off;
    }
    relay_frame_open_batch(e->keypair->recv_key, f, n);
    /* The peer, taken now: accept_opened looks each frame's keypair up
     * again, since an earlier frame may have changed it (or e). */
    struct peer *p = e->peer;
    for (unsigned k = 0; k < n; k++)
        frame_in(dev, b, p, &f[k], &pkt->addr, now);
    return at - off;
}

/* A handshake message inside a receive batch gets a buffer of its own. */
static void pass_to_handshake(struct device *dev, const uint8_t *msg, uint32_t len,
                              const union endpoint *src, uint64_t now)
{
    struct pkt *h;

    if (!handshake_admit(dev, msg, len, src, now) || !(h = device_pkt_get(dev)))
        return;
    memcpy(h->in, msg, len);
    h->len = len;
    h->addr = *src;
    handshake_receive(dev, h, now);
}

/* Writes the opened packets of a batch to ddp0, coalesced. Each TCP
 * segment's checksums are verified before it is merged: the AEAD vouches
 * for the bytes a peer sent, not for the checksums in them, and a merged
 * run goes up with NEEDS_CSUM, which the kernel takes as computed here --
 * so a member (or its broken stack) could otherwise slip corrupt data
 * past TCP. A segment that fails passes alone, for the kernel to drop. */
static void write_batch(struct device *dev, struct pkt *pkt, struct offload_pkt *plain,
                        size_t n)
{
    size_t next[PKT_MAX_SEGS];
    struct offload_run runs[PKT_MAX_SEGS];
    int nruns = offload_coalesce(plain, n, OFFLOAD_COALESCE_VERIFY, next, runs);

    for (int r = 0; r < nruns; r++) {
        struct tun_write *w = loop_tun_write_get(dev->loop);
        if (!w)
            break;
        int iovcnt = offload_run_iov(plain, next, &runs[r], w->vnet, w->iov, PKT_MAX_SEGS + 1);
        if (iovcnt < 0) {
            loop_tun_write_put(dev->loop, w);
            continue;
        }
        w->iovcnt = (unsigned)iovcnt;
        w->owner = pkt;
        dev->stats.tun_writes++;
        pkt->refs++;
        loop_write_tun(dev->loop, w);
    }
}

/* The batch's packets to ddp0; what it had for relays goes out too. */
static void end_batch(struct device *dev, struct rx_batch *b, uint64_t now)
{
    open_inner(dev, b, now);
    if (b->n)
        write_batch(dev, b->pkt, b->plain, b->n);
    /* Only the network's upkeep (discovery, keepalives): nobody here waits
     * for what comes next, so the loop need not poll for it. */
    else if (dev->stats.relay_forwarded == b->forwarded)
        loop_packet_unawaited(dev->loop);
    path_flush(dev, now);
    loop_pkt_unref(dev->loop, b->pkt);
}

/* A receive whose datagrams are all transport messages to one keypair,
 * in one sub-session, can be opened on a worker; returns that keypair's entry. */
static struct index_entry *one_keypair(struct device *dev, struct pkt *pkt, uint32_t seg_size)
{
    struct index_entry *first = NULL;

    for (uint32_t off = 0; off < pkt->len; off += seg_size) {
        uint32_t len = pkt->len - off < seg_size ? pkt->len - off : seg_size;
        if (noise_message_type(pkt->in + off, len) != WG_MSG_TRANSPORT)
            return NULL;
        struct index_entry *e = message_keypair(dev, pkt->in + off, len);
        /* One key for the batch: one keypair, one sub-session. */
        if (!e || (first && e != first) ||
            transport_sub_of(pkt->in + off) != transport_sub_of(pkt->in))
            return NULL;
        first = e;
    }
    return first && (pkt->len + seg_size - 1) / seg_size <= PKT_MAX_SEGS ? first : NULL;
}

static void start_batch(struct device *dev, struct pkt *pkt, uint32_t seg_size)
{
    pkt->op = PKT_HELD;
    pkt->refs = 1;   /* ours, while we go through the batch */
    dev->stats.udp_receives++;
    dev->stats.udp_datagrams += (pkt->len + seg_size - 1) / seg_size;
}

/* A receive opened as a batch (by a worker or here): the replay checks
 * and the rest, on the loop's thread. The keypair is looked up again: it
 * may have gone while a worker ran. */
static void finish_open(struct device *dev, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    struct rx_batch b;
    unsigned i = 0;

    rx_batch_init(&b, dev, pkt);
    for (uint32_t off = 0; off < pkt->len && i < PKT_MAX_SEGS; off += seg_size, i++) {
        uint32_t len = pkt->len - off < seg_size ? pkt->len - off : seg_size;
        struct transport_packet tp = { .len = (size_t)pkt->seg_len[i],
                                       .status = pkt->seg_status[i],
                                       .counter = pkt->seg_counter[i] };

        b.csum_ok = pkt->seg_csum_ok[i / 64] >> (i % 64) & 1;
        rx_transport(dev, &b, pkt->in + off, len, &tp, NULL, &pkt->addr, NULL, now);
    }
    b.csum_ok = false;
    end_batch(dev, &b, now);
}

/* A receive whose datagrams all go to one keypair, opened as a batch on a
 * worker or here (job_start). */
static void open_batch(struct device *dev, struct pkt *pkt, uint32_t seg_size,
                       const struct index_entry *e, uint64_t now)
{
    struct crypto_job local, *job = job_slot(dev, &local, now);

    *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = pkt, .seg_size = seg_size };
    transport_recv_key(e->keypair, transport_sub_of(pkt->in), job->key);
    dev->opens_in_flight++;
    job_start(dev, job, &local, now);
}

/* A receive of one handshake message is handled in its own buffer. */
static void lone_handshake(struct device *dev, struct pkt *pkt, uint64_t now)
{
    uint32_t type = noise_message_type(pkt->in, pkt->len);

    loop_packet_unawaited(dev->loop);
    if (type < WG_MSG_INITIATION || type > WG_MSG_COOKIE_REPLY) {
        rx_drop(dev, RX_DROP_BAD, 1);
    } else if (handshake_admit(dev, pkt->in, pkt->len, &pkt->addr, now)) {
        handshake_receive(dev, pkt, now);   /* takes pkt */
        return;
    }
    loop_pkt_put(dev->loop, pkt);   /* admit counted its own drops */
}

/* One datagram of a receive opened here, by its type. Returns the bytes
 * of the receive it took: seg_size, or a run of relay frames' more. */
static uint32_t rx_datagram(struct device *dev, struct rx_batch *b, uint32_t off,
                            uint32_t seg_size, uint64_t now)
{
    uint8_t *msg = b->pkt->in + off;
    uint32_t len = b->pkt->len - off < seg_size ? b->pkt->len - off : seg_size;
    uint32_t type = noise_message_type(msg, len);

    if (frame_type_taken(dev, type))
        return frames_in(dev, b, off, seg_size, now);
    if (type == WG_MSG_TRANSPORT)
        open_message(dev, b, msg, len, now);
    else if (type >= WG_MSG_INITIATION && type <= WG_MSG_COOKIE_REPLY)
        pass_to_handshake(dev, msg, len, &b->pkt->addr, now);
    else
        rx_drop(dev, RX_DROP_BAD, 1);
    return seg_size;
}

/* A receive opened here, datagram by datagram: after the receives
 * still deferred, to keep order. Not after the seals: a relayed
 * stream's sender gets its ACKs in frames, opened here, while its data
 * is sealed in deferred jobs, and would wait on every one of them. */
static void open_here(struct device *dev, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    struct rx_batch b;

    rx_batch_init(&b, dev, pkt);
    if (dev->opens_in_flight)
        loop_crypto_drain(dev->loop, now);
    for (uint32_t off = 0; off < pkt->len && b.n + b.n_inner < PKT_MAX_SEGS;)
        off += rx_datagram(dev, &b, off, seg_size, now);
    end_batch(dev, &b, now);
}

void datapath_from_udp(struct device *dev, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    uint32_t first_type = noise_message_type(pkt->in, pkt->len);
    struct index_entry *e;

    if (seg_size >= pkt->len && first_type != WG_MSG_TRANSPORT && !relay_frame_type(first_type)) {
        lone_handshake(dev, pkt, now);
        return;
    }
    start_batch(dev, pkt, seg_size);
    if ((e = one_keypair(dev, pkt, seg_size)))
        open_batch(dev, pkt, seg_size, e, now);   /* finish_open, once opened */
    else
        open_here(dev, pkt, seg_size, now);
}

void datapath_crypto_done(struct device *dev, struct crypto_job *job, uint64_t now)
{
    if (job->kind == CRYPTO_SEAL) {
        /* With shards, the peer may have gone while the seal ran outside
         * the engine lock (shard.h): found again by its id. Alone, a peer
         * is removed only after the jobs drained (members.c). */
        if (job->pkt->nseg &&
            (dev->shards < 2 || device_peer_by_id(dev, job->peer_id) == job->peer))
            path_send(job->peer, job->pkt, now);
        else   /* its planned cut failed (pkt_cut): it cannot */
            loop_pkt_put(dev->loop, job->pkt);
        return;
    }
    dev->opens_in_flight--;
    finish_open(dev, job->pkt, job->seg_size, now);
}
