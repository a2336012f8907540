/* Handshake messages on the wire: sending initiations (paced to one per
 * REKEY_TIMEOUT), answering initiations with responses, taking responses,
 * and cookie replies under load. Nothing changes for a message that fails
 * its MAC or its AEAD; unknown keys and bad MACs get no answer. */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "crypto/bytes.h"
#include "crypto/tai64n.h"
#include "overlay/engine.h"
#include "overlay/log.h"
#include "overlay/timers.h"

#define SENDER_INDEX_OFFSET 4

static struct noise_handshake *lookup_by_key(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    struct peer *p = device_peer_by_key(ctx, key);
    return p ? &p->handshake : NULL;
}

static struct noise_handshake *lookup_by_index(void *ctx, uint32_t index)
{
    struct index_entry *e = index_find(&((struct device *)ctx)->indices, index);
    return e && !e->keypair ? &e->peer->handshake : NULL;
}

static struct peer *peer_of(struct noise_handshake *hs)
{
    return (struct peer *)((char *)hs - offsetof(struct peer, handshake));
}

/* Releases the index of a handshake that is being replaced. */
static void forget_handshake_index(struct peer *p)
{
    struct index_entry *e = index_find(&p->dev->indices, p->handshake.local_index);

    if (e && !e->keypair && e->peer == p)
        index_remove(&p->dev->indices, p->handshake.local_index);
}

/* Sends the message of len bytes at pkt->area. */
static void send_handshake_message(struct peer *p, struct pkt *pkt, uint32_t len, uint64_t now)
{
    cookie_add_macs(&p->cookie, pkt->area, len, now);
    peer_count_tx(p, len, now);
    timers_any_authenticated_packet_traversal(p, now);
    timers_any_authenticated_packet_sent(p, now);
    loop_send_message(p->dev->loop, pkt, &p->endpoint, len);
}

void handshake_send_initiation(struct peer *p, bool is_retry, uint64_t now)
{
    struct device *dev = p->dev;
    uint8_t ts[WG_TIMESTAMP_LEN];
    struct timespec wall;
    struct pkt *pkt;

    if (!is_retry)
        p->timers.handshake_attempts = 0;
    if (p->last_handshake_sent_ns &&
        now - p->last_handshake_sent_ns < WG_REKEY_TIMEOUT * WG_NSEC_PER_SEC)
        return;
    if (p->endpoint.sa.sa_family == AF_UNSPEC) {
        log_debug("peer %s: no endpoint known yet, waiting for it to reach us", p->name);
        return;
    }
    pkt = loop_pkt_get(dev->loop);
    if (!pkt)
        return;
    forget_handshake_index(p);
    uint32_t index = index_add(&dev->indices, p, NULL);
    clock_gettime(CLOCK_REALTIME, &wall);
    tai64n_encode(ts, (uint64_t)wall.tv_sec, (uint32_t)wall.tv_nsec);
    if (!index || noise_create_initiation(&p->handshake, dev->local, index, ts, pkt->area)) {
        index_remove(&dev->indices, index);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    p->last_handshake_sent_ns = now;
    log_debug("peer %s: sending handshake initiation", p->name);
    timers_handshake_initiated(p, now);
    send_handshake_message(p, pkt, WG_INITIATION_LEN, now);
}

/* Under load when more handshakes arrived in the last second than we care
 * to answer without proof of address (mac2). */
static bool under_load(struct device *dev, uint64_t now)
{
    if (now - dev->load_window_start_ns >= WG_NSEC_PER_SEC) {
        dev->load_window_start_ns = now;
        dev->load_window_count = 0;
    }
    if (++dev->load_window_count > DEVICE_LOAD_HANDSHAKES_PER_SEC)
        dev->under_load_until_ns = now + WG_NSEC_PER_SEC;
    return now < dev->under_load_until_ns;
}

/* The bytes a cookie is bound to: source address and port. */
static size_t source_bytes(const union endpoint *src, uint8_t out[18])
{
    if (src->sa.sa_family == AF_INET6) {
        memcpy(out, &src->in6.sin6_addr, 16);
        memcpy(out + 16, &src->in6.sin6_port, 2);
        return 18;
    }
    memcpy(out, &src->in4.sin_addr, 4);
    memcpy(out + 4, &src->in4.sin_port, 2);
    return 6;
}

static void send_cookie_reply(struct device *dev, struct pkt *pkt, const uint8_t *src,
                              size_t src_len)
{
    uint8_t reply[WG_COOKIE_REPLY_LEN];
    union endpoint to = pkt->addr;

    if (cookie_create_reply(&dev->checker, pkt->in, pkt->len,
                            get_le32(pkt->in + SENDER_INDEX_OFFSET), src, src_len, reply)) {
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    memcpy(pkt->area, reply, sizeof(reply));
    loop_send_message(dev->loop, pkt, &to, sizeof(reply));
}

static void note_session(struct peer *p, const char *role)
{
    if (!p->reachable)
        log_info("peer %s: handshake completed (%s)", p->name, role);
    else
        log_debug("peer %s: new session (%s)", p->name, role);
    p->reachable = true;
}

static void consume_initiation(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct noise_lookup lookup = { lookup_by_key, lookup_by_index, dev };
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    int ret = noise_consume_initiation(dev->local, pkt->in, pkt->len, now, &lookup, &hs);

    if (ret) {
        log_debug("dropped handshake initiation: %s", wg_strerror(ret));
        if (ret == -WG_ENOPEER)
            dev->stats.dropped_unknown_peer++;
        else
            dev->stats.dropped_bad_packet++;
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    struct peer *p = peer_of(hs);
    forget_handshake_index(p);
    peer_update_endpoint(p, &pkt->addr);
    peer_count_rx(p, pkt->len, now);
    timers_any_authenticated_packet_received(p, now);
    timers_any_authenticated_packet_traversal(p, now);

    uint32_t index = index_add(&dev->indices, p, NULL);
    if (!index || noise_create_response(hs, index, pkt->area) ||
        noise_begin_session(hs, &kp, now)) {
        index_remove(&dev->indices, index);
        noise_handshake_reset(hs);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    peer_install_keypair(p, &kp);
    timers_session_derived(p, now);
    note_session(p, "responder");
    send_handshake_message(p, pkt, WG_RESPONSE_LEN, now);
}

static void consume_response(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct noise_lookup lookup = { lookup_by_key, lookup_by_index, dev };
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    int ret = noise_consume_response(dev->local, pkt->in, pkt->len, &lookup, &hs);

    if (ret) {
        log_debug("dropped handshake response: %s", wg_strerror(ret));
        dev->stats.dropped_bad_packet++;
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    struct peer *p = peer_of(hs);
    peer_update_endpoint(p, &pkt->addr);
    peer_count_rx(p, pkt->len, now);
    timers_any_authenticated_packet_received(p, now);
    timers_any_authenticated_packet_traversal(p, now);
    loop_pkt_put(dev->loop, pkt);
    if (noise_begin_session(hs, &kp, now))
        return;
    peer_install_keypair(p, &kp);
    timers_session_derived(p, now);
    timers_handshake_complete(p, now);
    note_session(p, "initiator");
    /* Confirms the session to the responder: staged data, or a keepalive. */
    datapath_send_keepalive(p, now);
}

static void consume_cookie_reply(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct index_entry *e = index_find(&dev->indices, cookie_reply_receiver(pkt->in));

    if (!e || cookie_consume_reply(&e->peer->cookie, pkt->in, pkt->len, now))
        dev->stats.dropped_bad_packet++;
    else
        log_debug("peer %s: got a cookie (it is under load)", e->peer->name);
    loop_pkt_put(dev->loop, pkt);
}

static uint32_t expected_len(uint32_t type)
{
    switch (type) {
    case WG_MSG_INITIATION:   return WG_INITIATION_LEN;
    case WG_MSG_RESPONSE:     return WG_RESPONSE_LEN;
    case WG_MSG_COOKIE_REPLY: return WG_COOKIE_REPLY_LEN;
    default:                  return 0;
    }
}

void handshake_receive(struct device *dev, struct pkt *pkt, uint64_t now)
{
    uint32_t type = noise_message_type(pkt->in, pkt->len);
    uint8_t src[18];
    size_t src_len;

    if (pkt->len != expected_len(type)) {
        dev->stats.dropped_bad_packet++;
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    if (type == WG_MSG_COOKIE_REPLY) {
        consume_cookie_reply(dev, pkt, now);
        return;
    }
    src_len = source_bytes(&pkt->addr, src);
    int ret = cookie_validate(&dev->checker, pkt->in, pkt->len, src, src_len,
                              under_load(dev, now));
    if (ret == -WG_ECOOKIE) {
        send_cookie_reply(dev, pkt, src, src_len);
        return;
    }
    if (ret) {
        dev->stats.dropped_bad_packet++;
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    if (type == WG_MSG_INITIATION)
        consume_initiation(dev, pkt, now);
    else
        consume_response(dev, pkt, now);
}
