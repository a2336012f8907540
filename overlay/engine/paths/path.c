/* SPDX-License-Identifier: MIT */
/* Paths: where a peer's WireGuard messages go, and the relay's part.
 *
 * Direct: UDP to the peer's endpoint, which follows the source of its
 * authentic packets (WireGuard's roaming). Relayed: each message for the
 * peer -- sealed end to end with the peer's own keys -- goes to the relay
 * in a relay frame (crypto/relay_frame.h) on our session with the relay:
 * the message in clear, the destination's key encrypted, the whole
 * authenticated. The relay checks the frame, that the destination is a
 * cluster member it reaches directly, and sends the same bytes on in a
 * frame on its session with the destination (kind "from", the source's
 * key): one open and one seal per message, and it never sees the inner
 * plaintext. A data message goes in a data frame, whose tag leaves out
 * the ciphertext its own tag covers: two ChaCha20 blocks and 97 bytes of
 * Poly1305 per open or seal, whatever the message's size (other
 * messages, or a peer that takes no data frames: a Poly1305 pass over the
 * frame). Frames go only
 * to a peer that said, on the session in use, that it takes them
 * (FEATURES, disco_recv.c); to and from one that did not (a version before
 * frames, or DDPNET_RELAY_FRAMES=0), the message travels as before: the
 * body of a disco RELAY (to the relay) or RELAYED (from it), an inner IP
 * packet sealed like any other. A relay takes both, and turns either into
 * what the destination takes.
 *
 * A relayed peer's packets are held to path_mtu (the MTU less the
 * RELAY wrapping, the larger of the two), so that the wrapped message is
 * no larger than a direct full-size one and fits the underlay as that
 * does. Frames keep the layout of the data path (one stride, the last
 * possibly shorter), so they still leave in one GSO send, and are sealed
 * and opened in batches as transport messages are; the relay gathers what
 * it forwards to one destination into one send too (path_forward,
 * path_flush).
 *
 * What a relayed byte costs, and the shapes tried before this one:
 * bench/README.md, "Measured, and what was tried". */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "crypto/relay_frame.h"
#include "overlay/base/log.h"
#include "overlay/base/wire.h"
#include "overlay/engine/paths/paths.h"


/* --- what the path is ------------------------------------------------------------ */

enum disco_path path_of(const struct peer *p)
{
    if (p->path.via)
        return DISCO_PATH_RELAY;
    return p->path.endpoint.sa.sa_family != AF_UNSPEC ? DISCO_PATH_DIRECT : DISCO_PATH_NONE;
}

bool path_direct(const struct peer *p)
{
    return path_of(p) == DISCO_PATH_DIRECT;
}

bool path_usable(const struct peer *p)
{
    return path_of(p) != DISCO_PATH_NONE;
}

void path_format(const struct peer *p, char *buf, size_t len)
{
    char ep[64];

    switch (path_of(p)) {
    case DISCO_PATH_RELAY:
        snprintf(buf, len, "via relay %s", p->path.via->member.name);
        break;
    case DISCO_PATH_DIRECT:
        endpoint_format(&p->path.endpoint, ep, sizeof(ep));
        snprintf(buf, len, "direct at %s", ep);
        break;
    default:
        snprintf(buf, len, "no path");
    }
}

/* The largest inner packet the path could carry: ddp0's MTU, less the
 * relay's wrapping when relayed. */
static unsigned path_max(const struct peer *p)
{
    unsigned mtu = p->dev->mtu;

    return p->path.via && mtu > 2 * DISCO_RELAY_OVERHEAD ? mtu - DISCO_RELAY_OVERHEAD : mtu;
}

unsigned path_mtu(const struct peer *p)
{
    unsigned mtu = path_max(p);

    /* Only a ddpnet peer answers the probes (a plain WireGuard peer keeps
     * the full size, as before). */
    if (p->disco.speaks_disco && p->path.pmtu.current && p->path.pmtu.current < mtu)
        mtu = p->path.pmtu.current;
    return mtu;
}

bool path_mtu_known(const struct peer *p)
{
    return p->path.via || (p->disco.speaks_disco && p->path.pmtu.found);
}

/* The inner packet whose outer packet is PMTU_OUTER_MIN bytes on this
 * path: what every path carries. */
static unsigned path_base(const struct peer *p)
{
    const union endpoint *ep = p->path.via ? &p->path.via->path.endpoint : &p->path.endpoint;
    /* No endpoint yet: the larger header, IPv6's. */
    return PMTU_OUTER_MIN - path_tunnel_overhead(ep->sa.sa_family != AF_INET) -
           (p->path.via ? DISCO_RELAY_OVERHEAD : 0u);
}

void path_mtu_search(struct peer *p, uint64_t now)
{
    pmtu_reset(&p->path.pmtu, (uint16_t)path_base(p), (uint16_t)path_max(p), now);
    discovery_arm(p, 0);
}

bool path_relay_ready(const struct peer *r, uint64_t now)
{
    return r && path_direct(r) && r->path.endpoint_proven && peer_can_send(r, now);
}

/* --- changing it ------------------------------------------------------------------ */

/* One line per change of a reachable peer's path (was: the path before,
 * as path_format says it; why: NULL, or what made it change). Until the
 * peer is reachable the line that says so names the path. A peer or a
 * relay can make it change again and again: rate-limited. */
static void log_path_changed(const struct peer *p, const char *was, const char *why)
{
    char now[96];

    if (!log_enabled(p->live.reachable ? LOG_LVL_NOTICE : LOG_LVL_DEBUG))
        return;
    path_format(p, now, sizeof(now));
    if (p->live.reachable)
        log_notice_peer_rl("peer %s: path changed: %s (was %s%s%s)", p->member.name, now, was,
                           why ? ": " : "", why ? why : "");
    else
        log_debug_rl("peer %s: path changed: %s (was %s)", p->member.name, now, was);
}

bool path_set_endpoint(struct peer *p, const union endpoint *src)
{
    if (endpoint_equal(&p->path.endpoint, src))
        return false;
    if (p->path.endpoint.sa.sa_family != AF_UNSPEC) {
        char old[64], new[64];
        endpoint_format(&p->path.endpoint, old, sizeof(old));
        endpoint_format(src, new, sizeof(new));
        /* Roaming (a NAT's new mapping, a move): a peer can repeat it. */
        log_info_peer_rl("peer %s: endpoint changed from %s to %s", p->member.name, old, new);
    }
    memset(&p->path.endpoint, 0, sizeof(p->path.endpoint));
    memcpy(&p->path.endpoint, src, endpoint_sockaddr_len(src));
    return true;
}

/* p's endpoint is ep now, proven or not. */
static void move_endpoint(struct peer *p, const union endpoint *ep, bool proven, uint64_t now)
{
    bool was_proven = p->path.endpoint_proven;

    if (path_set_endpoint(p, ep)) {
        log_debug_rl("peer %s: reached at a new endpoint%s", p->member.name,
                     proven ? "" : " (as WireGuard roams; not proven yet)");
        p->disco.introduced = false;     /* the others should hear of it */
        disco_endpoints_stale(&p->disco.state);   /* and p, where we see it */
        path_mtu_search(p, now);   /* another path */
    } else if (!proven || was_proven) {
        return;
    }
    p->path.endpoint_proven = proven;
    if (proven && !was_proven)
        discovery_endpoint_proven(p, now);
}

void path_use_direct(struct peer *p, const union endpoint *ep, uint64_t now)
{
    struct peer *was = p->path.via;

    move_endpoint(p, ep, true, now);
    if (!was)
        return;
    char before[96];
    snprintf(before, sizeof(before), "via relay %s", was->member.name);
    p->path.via = NULL;
    log_path_changed(p, before, NULL);
    disco_path_changed(&p->disco.state);
    path_mtu_search(p, now);
}

void path_use_relay(struct peer *p, struct peer *r, uint64_t now)
{
    char was[96];

    if (!r || r == p || p->path.via == r)
        return;
    path_format(p, was, sizeof(was));
    p->path.via = r;
    log_path_changed(p, was, NULL);
    disco_path_changed(&p->disco.state);
    path_mtu_search(p, now);
}

void path_drop_relay(struct peer *p, uint64_t now)
{
    struct peer *r = p->path.via;

    if (!r)
        return;
    char before[96];
    snprintf(before, sizeof(before), "via relay %s", r->member.name);
    disco_relay_failed(&p->disco.relays, r->id, now);
    p->dev->stats.relay_dropped++;
    p->path.via = NULL;
    log_path_changed(p, before, "no answers through the relay any more");
    disco_path_changed(&p->disco.state);
    path_mtu_search(p, now);
}

struct peer *path_relay_trial(struct peer *p, uint64_t now)
{
    struct peer *r = device_peer_by_id(p->dev, disco_relay_on_trial(&p->disco.relays, now));

    return r && r != p && r != p->path.via && path_relay_ready(r, now) ? r : NULL;
}

struct peer *path_answer_through(struct peer *p, struct peer *via, uint64_t now)
{
    if (!via || via == p || via == p->path.via)
        return NULL;
    disco_relay_trial(&p->disco.relays, via->id, now);
    return via;
}

static bool to_disco_endpoint(const union endpoint *e, struct disco_endpoint *out)
{
    return e->sa.sa_family != AF_UNSPEC &&
           disco_endpoint_from_sockaddr(out, &e->sa, endpoint_sockaddr_len(e)) == 0;
}

bool path_proven(const struct peer *p, const union endpoint *src)
{
    return p->path.endpoint_proven && endpoint_equal(&p->path.endpoint, src);
}

bool path_unproven_spend(struct peer *p, const union endpoint *to, uint32_t len)
{
    struct disco_endpoint e;

    return path_proven(p, to) ||
           (to_disco_endpoint(to, &e) && disco_unproven_spend(&p->path.unproven, &e, len));
}

/* len authentic bytes came from src, which never answered us: the
 * endpoint stays (a forged source moves nothing), and src is challenged
 * (disco_sched.c) as far as its bytes pay. A stock WireGuard peer, or one we
 * have no path to, roams as WireGuard does: its endpoint moves, unproven. */
static void from_unproven(struct peer *p, const union endpoint *src, uint32_t len,
                          uint64_t now)
{
    struct disco_endpoint e;

    if (!p->disco.speaks_disco || !path_usable(p)) {
        move_endpoint(p, src, false, now);
        p->path.last_direct_ns = now;
    }
    if (!to_disco_endpoint(src, &e))
        return;
    disco_unproven_heard(&p->path.unproven, &e, len);
    /* Its deadline lowered to when a challenge may go, no more: a stream
     * from a stock peer's endpoint (never proven) must not make the loop
     * look at the peer on every receive. */
    discovery_arm(p, disco_challenge_at(&p->path.unproven, p->disco.speaks_disco,
                                        0));
}

void path_received(struct peer *p, const union endpoint *src, struct peer *via, uint32_t len,
                   bool confirmed, uint64_t now)
{
    if (!via) {
        if (!path_proven(p, src)) {
            from_unproven(p, src, len, now);
            return;
        }
        p->path.last_direct_ns = now;
        /* Relayed: a probe that got through one way proves nothing yet,
         * but its address answers (sends to it are no hint's to pay). */
        if (!p->path.via || confirmed)
            path_use_direct(p, src, now);
        else
            discovery_note_answer(p, src, now);
        return;
    }
    if (via == p)
        return;
    if (via == p->path.via) {
        disco_relay_carried(&p->disco.relays, via->id, now);
        return;
    }
    /* Through another relay: taken only when it was on trial, so that this
     * answers what we sent through it (a relay's claim, or a message it
     * passed on one way, proves nothing). */
    if (!disco_relay_answered(&p->disco.relays, via->id, now))
        return;
    /* The peer went through a relay while our direct path still carries
     * its packets: keep ours (it may still be finding its way). */
    if (path_direct(p) && p->path.last_direct_ns &&
        now - p->path.last_direct_ns < DISCO_DIRECT_STALE_S * WG_NSEC_PER_SEC)
        return;
    path_use_relay(p, via, now);
}

/* --- relay frames ------------------------------------------------------------------ */

/* The sealed message of segment i: all but the last fill the stride. */
static uint32_t message_len(const struct pkt *pkt, unsigned i)
{
    return i + 1u == pkt->nseg ? pkt->len : pkt->stride;
}

/* --- several underlay flows ------------------------------------------------------- */

unsigned path_flows(const struct peer *p)
{
    const struct noise_keypair *kp = p->wg.current;

    if (p->dev->flow_count < 2 || !kp || !path_direct(p) || !p->path.flows_said ||
        !p->path.flows_heard || p->path.flows_index != kp->local_index)
        return 1;
    return p->dev->flow_count;
}

bool path_takes_frames(const struct peer *p)
{
    return !p->dev->relay_frames_off && p->path.frames_said && p->wg.current &&
           p->wg.current->local_index == p->path.frames_index;
}

void path_frames_said(struct peer *p, uint32_t index, bool data)
{
    if (!p->path.frames_said || p->path.frames_index != index)
        p->path.data_frames = false;
    p->path.frames_said = true;
    p->path.frames_index = index;
    if (data)
        p->path.data_frames = true;
}

/* Whether p's frames may be data frames (on the session that takes frames). */
static bool path_takes_data_frames(const struct peer *p)
{
    return p->path.data_frames && !p->dev->data_frames_off;
}

/* Fills out with frames of pkt's messages from segment i on, to a relay
 * (kind RELAY_FRAME_TO, key: the destination's), as many as one GSO send
 * takes; returns the first one left. Sealed later (send_frames). */
static unsigned frame_segments(const uint8_t key[WG_KEY_LEN], struct pkt *pkt, unsigned i,
                               struct pkt *out)
{
    out->stride = (uint32_t)relay_frame_len(message_len(pkt, i));
    out->nseg = 0;
    while (i < pkt->nseg && out->nseg < PKT_MAX_SEGS &&
           (size_t)(out->nseg + 1u) * out->stride <= PKT_AREA_CAP) {
        uint32_t len = message_len(pkt, i);
        size_t flen = relay_frame_len(len);
        if (flen > out->stride)
            break;
        relay_frame_fill(pkt_slot(out, out->nseg), pkt_slot(pkt, i), len, RELAY_FRAME_TO, key);
        out->seg_len[out->nseg++] = (uint16_t)len;
        i++;
        if (flen < out->stride)
            break;    /* a shorter one ends a GSO run */
    }
    return i;
}

/* Seals the frames in out (seg_len: each one's enclosed length) on q's
 * current session, as one batch, and sends them; takes out. On the loop's
 * thread: a frame's crypto is two ChaCha20 blocks and Poly1305 over 97
 * bytes (a data frame) or the whole frame. */
static void send_frames(struct peer *q, struct pkt *out, uint64_t now)
{
    struct noise_keypair *kp = q->wg.current;
    unsigned last = out->nseg - 1u;
    uint64_t first;
    int n_data = -1;

    if (!path_relay_ready(q, now) || !kp || transport_reserve(kp, out->nseg, now, &first) ||
        (n_data = relay_frame_seal_batch(kp->send_key, kp->remote_index, first, out->area,
                                         out->stride, out->seg_len, out->nseg,
                                         path_takes_data_frames(q))) < 0) {
        loop_pkt_put(q->dev->loop, out);
        return;
    }
    out->len = (uint32_t)relay_frame_len(out->seg_len[last]);
    q->dev->stats.relay_frames_sent += out->nseg;
    q->dev->stats.relay_data_frames_sent += (unsigned)n_data;
    q->dev->disco.core->sent(q, (uint64_t)last * out->stride + out->len, true, now);
    loop_send(q->dev->loop, out, &q->path.endpoint);
}

/* --- wrapping for a relay --------------------------------------------------------- */

/* The inner packet a RELAY/RELAYED of a len-byte message makes. */
static size_t relay_plain_len(const struct device *dev, uint32_t len)
{
    return path_inner_ip_len(dev) + DISCO_HEADER_LEN + WG_KEY_LEN + len;
}

int path_disco_packet(const struct device *dev, const struct peer *to, const struct disco_msg *m,
                      uint8_t *out, size_t cap)
{
    size_t hlen = path_inner_ip_len(dev);
    int n;

    if (cap < hlen)
        return -EMSGSIZE;
    n = disco_encode(m, out + hlen, cap - hlen);
    if (n < 0)
        return n;
    return disco_ip_wrap(dev->self->address.family, dev->self->address.bytes,
                         to->member.address.bytes, out + hlen, (size_t)n, out, cap);
}

/* Writes at out the inner IP packet to `to` carrying a RELAY or RELAYED
 * of msg[0..len) with key (the destination, or the source). Returns its
 * length or a negative errno. */
static int write_relay(struct device *dev, const struct peer *to, const uint8_t key[WG_KEY_LEN],
                       enum disco_type type, const uint8_t *msg, uint32_t len, uint8_t *out,
                       size_t cap)
{
    size_t at = path_inner_ip_len(dev) + DISCO_HEADER_LEN + WG_KEY_LEN;
    struct disco_msg *m = dev->disco.wrap_msg;

    if (len > DISCO_MAX_ENCLOSED || cap < at || len > cap - at)
        return -EMSGSIZE;
    memcpy(out + at, msg, len);
    m->type = type;
    memcpy(m->relay.key, key, WG_KEY_LEN);
    m->relay.msg = out + at;
    m->relay.msg_len = (uint16_t)len;
    return path_disco_packet(dev, to, m, out, cap);
}

/* Fills out with the messages of pkt from segment i on, each wrapped for
 * r, as many as one GSO send of out can take; returns the first one left. */
static unsigned wrap_segments(struct peer *r, const uint8_t key[WG_KEY_LEN], struct pkt *pkt,
                              unsigned i, struct pkt *out)
{
    struct device *dev = r->dev;

    out->stride = (uint32_t)transport_sealed_len_limited(
        relay_plain_len(dev, message_len(pkt, i)), dev->mtu);
    out->nseg = 0;
    while (i < pkt->nseg && out->nseg < PKT_MAX_SEGS &&
           (size_t)(out->nseg + 1u) * out->stride <= PKT_AREA_CAP) {
        uint32_t len = message_len(pkt, i);
        size_t sealed = transport_sealed_len_limited(relay_plain_len(dev, len), dev->mtu);
        if (sealed > out->stride)
            break;
        int n = write_relay(dev, r, key, DISCO_RELAY, pkt_slot(pkt, i), len,
                            pkt_seg_plain(out, out->nseg), out->stride - WG_TRANSPORT_MIN_LEN);
        i++;
        if (n < 0)
            continue;
        out->seg_len[out->nseg++] = (uint16_t)n;
        if (sealed < out->stride)
            break;    /* a shorter one ends a GSO run */
    }
    return i;
}

/* Seals out for q, a peer reached directly, and sends it (the data path's
 * sealing: counters now, the AEAD maybe on a worker); takes out. */
static void seal_for(struct peer *q, struct pkt *out, uint64_t now)
{
    const struct core_ops *core = q->dev->disco.core;

    if (!path_relay_ready(q, now) || !core->seal(q, q->wg.current, out, q->dev->mtu, now)) {
        loop_pkt_put(q->dev->loop, out);
        return;
    }
    core->sent(q, 0, true, now);   /* seal counted the bytes */
}

/* Sends pkt's messages, for the peer with key `key`, through r (in
 * frames where r takes them); takes pkt. */
static void relay_pkt(struct peer *r, const uint8_t key[WG_KEY_LEN], struct pkt *pkt,
                      uint64_t now)
{
    struct device *dev = r->dev;
    bool frames = path_takes_frames(r);
    unsigned i = 0;

    while (path_relay_ready(r, now) && i < pkt->nseg) {
        struct pkt *out = device_pkt_get(dev);
        if (!out)
            break;
        i = frames ? frame_segments(key, pkt, i, out) : wrap_segments(r, key, pkt, i, out);
        if (!out->nseg) {
            loop_pkt_put(dev->loop, out);
            continue;
        }
        if (frames)
            send_frames(r, out, now);
        else
            seal_for(r, out, now);
    }
    loop_pkt_put(dev->loop, pkt);
}

void path_send(struct peer *p, struct pkt *pkt, uint64_t now)
{
    if (p->path.via)
        relay_pkt(p->path.via, p->public_key, pkt, now);
    else
        loop_send(p->dev->loop, pkt, &p->path.endpoint);
}

void path_send_message(struct peer *p, struct pkt *pkt, uint32_t len, uint64_t now)
{
    pkt->nseg = 1;
    pkt->stride = len;
    pkt->len = len;
    path_send(p, pkt, now);
}

int path_relay_now(struct peer *r, const uint8_t dst[WG_KEY_LEN], const uint8_t *msg,
                   uint32_t len, uint64_t now)
{
    struct device *dev = r->dev;
    uint8_t *buf = dev->disco.wrap;
    struct transport_packet tp = { .buf = buf, .cap = DISCO_SCRATCH_LEN, .pad_limit = dev->mtu };
    int n;

    if (!path_relay_ready(r, now))
        return -ENOTCONN;
    n = write_relay(dev, r, dst, DISCO_RELAY, msg, len, buf + WG_TRANSPORT_HEADER_LEN,
                    DISCO_SCRATCH_LEN - WG_TRANSPORT_MIN_LEN - WG_PADDING_MULTIPLE);
    if (n < 0)
        return n;
    tp.len = (size_t)n;
    if (transport_seal(r->wg.current, &tp, now))
        return -ESTALE;
    dev->disco.core->sent(r, tp.len, true, now);
    return loop_send_now(dev->loop, buf, (uint32_t)tp.len, &r->path.endpoint);
}

/* --- forwarding, as the relay ------------------------------------------------------ */

/* Whether one more message whose sealed wrapping is `sealed` bytes joins
 * the pending send. */
static bool joins(const struct pkt *out, size_t sealed)
{
    return sealed <= out->stride && out->nseg < PKT_MAX_SEGS &&
           (size_t)(out->nseg + 1u) * out->stride <= PKT_AREA_CAP;
}

/* The pending send to `to` with room for a message whose wrapping seals
 * to `sealed` bytes (a frame, or a RELAYED): the one waiting, or a new
 * one (the other flushed). */
static struct pkt *forward_slot(struct device *dev, struct peer *to, size_t sealed,
                                bool frames, uint64_t now)
{
    struct pkt *out = dev->disco.fwd;

    if (out && (dev->disco.fwd_to != to || dev->disco.fwd_frames != frames ||
                !joins(out, sealed)))
        path_flush(dev, now);
    if ((out = dev->disco.fwd))
        return out;
    if (!(out = device_pkt_get(dev)))
        return NULL;
    out->nseg = 0;
    out->stride = (uint32_t)sealed;
    dev->disco.fwd = out;
    dev->disco.fwd_to = to;
    dev->disco.fwd_frames = frames;
    return out;
}

void path_forward(struct device *dev, struct peer *from, struct peer *to, const uint8_t *msg,
                  uint32_t len, uint64_t now)
{
    bool frames;
    size_t size;   /* what the message takes in the send: its frame, or its sealed RELAYED */
    struct pkt *out;
    int n = (int)len;

    /* Only between two members, the destination reached directly: no
     * chains of relays, and nothing for nodes outside the cluster (nor
     * for or from a stranger on probation). */
    if (!to || to == from || !to->disco.speaks_disco || !path_relay_ready(to, now) ||
        to->member.probation || from->member.probation) {
        rx_drop(dev, RX_DROP_UNFORWARDABLE, 1);
        return;
    }
    frames = path_takes_frames(to);
    size = frames ? relay_frame_len(len)
                  : transport_sealed_len_limited(relay_plain_len(dev, len), dev->mtu);
    if (!(out = forward_slot(dev, to, size, frames, now)))
        return;
    if (frames)
        relay_frame_fill(pkt_slot(out, out->nseg), msg, len, RELAY_FRAME_FROM, from->public_key);
    else
        n = write_relay(dev, to, from->public_key, DISCO_RELAYED, msg, len,
                        pkt_seg_plain(out, out->nseg), out->stride - WG_TRANSPORT_MIN_LEN);
    if (n < 0) {
        rx_drop(dev, RX_DROP_UNFORWARDABLE, 1);
        return;
    }
    out->seg_len[out->nseg++] = (uint16_t)n;
    dev->stats.relay_forwarded++;
    if (size < out->stride || !joins(out, out->stride))
        path_flush(dev, now);
}

void path_flush(struct device *dev, uint64_t now)
{
    struct pkt *out = dev->disco.fwd;

    if (!out)
        return;
    dev->disco.fwd = NULL;
    if (!out->nseg) {
        loop_pkt_put(dev->loop, out);
        return;
    }
    if (dev->disco.fwd_frames)
        send_frames(dev->disco.fwd_to, out, now);
    else
        seal_for(dev->disco.fwd_to, out, now);
}
