/* The data path.
 *
 * Outbound: a packet read from ddp0 -> the peer whose overlay address is
 * its destination -> staged on that peer -> sealed in place with the
 * current keypair -> sent to the peer's endpoint. Without a usable session
 * the packets wait (PEER_STAGED_MAX at most) while a handshake runs.
 *
 * Inbound: a transport message -> its keypair by receiver index -> opened
 * in place (the replay window moves only after authentication) -> the
 * sender's endpoint follows the packet (roaming) -> the inner source must be
 * the peer's overlay address -> written to ddp0. The same buffer carries a
 * packet from read to write; nothing is allocated per packet. */
#include <string.h>

#include "overlay/engine.h"
#include "overlay/log.h"
#include "overlay/timers.h"

#define IPV4_HEADER_LEN   20u
#define IPV6_HEADER_LEN   40u
#define IPV4_TOTLEN_OFF   2u
#define IPV4_SRC_OFF      12u
#define IPV4_DST_OFF      16u
#define IPV6_PAYLEN_OFF   4u
#define IPV6_SRC_OFF      8u
#define IPV6_DST_OFF      24u

/* An inner IP packet's family, length and addresses, or false. */
struct inner {
    int family;
    uint32_t len;
    const uint8_t *src, *dst;
};

static uint16_t be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static bool parse_inner(const uint8_t *ip, uint32_t avail, struct inner *in)
{
    if (avail >= IPV4_HEADER_LEN && ip[0] >> 4 == 4) {
        in->family = AF_INET;
        in->len = be16(ip + IPV4_TOTLEN_OFF);
        in->src = ip + IPV4_SRC_OFF;
        in->dst = ip + IPV4_DST_OFF;
        return in->len >= IPV4_HEADER_LEN && in->len <= avail;
    }
    if (avail >= IPV6_HEADER_LEN && ip[0] >> 4 == 6) {
        in->family = AF_INET6;
        in->len = IPV6_HEADER_LEN + be16(ip + IPV6_PAYLEN_OFF);
        in->src = ip + IPV6_SRC_OFF;
        in->dst = ip + IPV6_DST_OFF;
        return in->len <= avail;
    }
    return false;
}

void datapath_from_tun(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct inner in;
    struct peer *p;

    if (!parse_inner(pkt_plain(pkt), pkt->len, &in) ||
        !(p = device_peer_by_address(dev, in.family, in.dst))) {
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    peer_stage(p, pkt);
    datapath_send_staged(p, now);
}

static bool keypair_usable(const struct noise_keypair *kp, uint64_t now)
{
    return kp && kp->send_counter < WG_REJECT_AFTER_MESSAGES &&
           now - kp->birth_ns < WG_REJECT_AFTER_TIME * WG_NSEC_PER_SEC;
}

void datapath_send_staged(struct peer *p, uint64_t now)
{
    struct noise_keypair *kp = p->current;
    bool sent = false, sent_data = false;
    struct pkt *pkt;

    if (!p->staged_count)
        return;
    if (!keypair_usable(kp, now) || p->endpoint.sa.sa_family == AF_UNSPEC) {
        handshake_send_initiation(p, false, now);
        return;
    }
    while ((pkt = peer_unstage(p))) {
        uint32_t plain_len = pkt->len;
        struct transport_packet tp = { .buf = pkt->data, .cap = sizeof(pkt->data),
                                       .len = plain_len };
        if (transport_seal(kp, &tp, now)) {
            loop_pkt_put(p->dev->loop, pkt);
            continue;
        }
        sent = true;
        sent_data |= plain_len > 0;
        peer_count_tx(p, tp.len, now);
        loop_send_udp(p->dev->loop, p->dev, pkt, &p->endpoint, (uint32_t)tp.len);
    }
    if (sent) {
        timers_any_authenticated_packet_traversal(p, now);
        timers_any_authenticated_packet_sent(p, now);
    }
    if (sent_data)
        timers_data_sent(p, now);
    if (transport_needs_rekey(kp, now))
        handshake_send_initiation(p, false, now);
}

void datapath_send_keepalive(struct peer *p, uint64_t now)
{
    if (!p->staged_count) {
        struct pkt *pkt = loop_pkt_get(p->dev->loop);
        if (!pkt)
            return;
        pkt->len = 0;
        peer_stage(p, pkt);
    }
    datapath_send_staged(p, now);
}

/* The initiator renews its session before the responder would have to
 * drop it: once per session, when it nears REJECT_AFTER_TIME. */
static void keep_key_fresh_on_receive(struct peer *p, uint64_t now)
{
    const struct noise_keypair *kp = p->current;
    const uint64_t limit = (WG_REJECT_AFTER_TIME - WG_KEEPALIVE_TIMEOUT - WG_REKEY_TIMEOUT) *
                           WG_NSEC_PER_SEC;

    if (kp && kp->is_initiator && now - kp->birth_ns >= limit &&
        !p->timers.sent_lastminute_handshake) {
        p->timers.sent_lastminute_handshake = true;
        handshake_send_initiation(p, false, now);
    }
}

static bool source_allowed(const struct peer *p, const struct inner *in)
{
    size_t n = in->family == AF_INET ? 4 : 16;
    return p->address.family == in->family && !memcmp(p->address.bytes, in->src, n);
}

static void drop(struct device *dev, struct pkt *pkt, uint64_t *counter)
{
    (*counter)++;
    loop_pkt_put(dev->loop, pkt);
}

void datapath_from_udp(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct index_entry *e;
    struct inner in;

    if (pkt->len < WG_TRANSPORT_MIN_LEN ||
        !(e = index_find(&dev->indices, transport_receiver(pkt->data))) || !e->keypair) {
        drop(dev, pkt, &dev->stats.dropped_bad_packet);
        return;
    }
    struct peer *p = e->peer;
    struct noise_keypair *kp = e->keypair;
    struct transport_packet tp = { .buf = pkt->data, .cap = sizeof(pkt->data), .len = pkt->len };
    int ret = transport_open(kp, &tp, now);
    if (ret) {
        drop(dev, pkt, ret == -WG_EREPLAY ? &dev->stats.dropped_replay
                                          : &dev->stats.dropped_bad_packet);
        return;
    }
    /* Authentic from here on. */
    peer_update_endpoint(p, &pkt->addr);
    peer_count_rx(p, pkt->len, now);
    if (peer_received_with_keypair(p, kp)) {
        timers_handshake_complete(p, now);
        datapath_send_staged(p, now);
    }
    keep_key_fresh_on_receive(p, now);
    timers_any_authenticated_packet_received(p, now);
    timers_any_authenticated_packet_traversal(p, now);
    if (tp.len == 0) {            /* keepalive */
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    if (!parse_inner(pkt_plain(pkt), (uint32_t)tp.len, &in) || !source_allowed(p, &in)) {
        drop(dev, pkt, &dev->stats.dropped_source);
        return;
    }
    timers_data_received(p, now);
    loop_write_tun(dev->loop, dev, pkt, in.len);
}
