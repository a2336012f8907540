/* SPDX-License-Identifier: MIT */
/* Handshake messages on the wire: sending initiations (paced to one per
 * REKEY_TIMEOUT, or aimed again at a peer's candidates by discovery's
 * punches), answering initiations with responses, taking responses, and
 * cookie replies under load; all on the peer's path, direct or through a
 * relay. When two initiations cross, one of them stands (ours_stands).
 * Nothing changes for a message that fails its MAC or its AEAD; unknown
 * keys and bad MACs get no answer.
 *
 * What a stranger can make us do is bounded per source address: every
 * message is first admitted on its bytes where they lie (handshake_admit:
 * size, mac1, then the source's token bucket, ratelimit.h), before a
 * buffer is taken or anything else is computed; so a flood costs a
 * BLAKE2s and a table lookup per packet, and at most RATELIMIT_PER_SEC
 * cookie replies or X25519s per second per source. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "crypto/bytes.h"
#include "crypto/tai64n.h"
#include "overlay/base/log.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/timers.h"



/* What the lookups see: the device and the time. An initiation that
 * crosses ours is checked into `scratch` (a copy of the peer's handshake),
 * so that nothing of the peer's state changes before it is authentic;
 * `crossed` is then that peer. */
struct lookup_ctx {
    struct device *dev;
    uint64_t now;
    const struct pkt *pkt;
    struct peer *crossed;
    bool stranger;                        /* scratch is a stranger's, on probation if it holds */
    /* The initiation carried a valid cookie (mac2): its source answers.
     * A stranger without one, refused for it, is sent a cookie. */
    bool proven, wants_cookie;
    struct noise_handshake scratch;
};

/* The probation table's source key for an initiation: as the rate
 * limiter counts sources (an IPv4 address, or an IPv6 /64). */
static void probation_source(const union endpoint *from, uint8_t key[RATELIMIT_KEY_LEN])
{
    memset(key, 0, RATELIMIT_KEY_LEN);
    key[0] = (uint8_t)from->sa.sa_family;
    if (from->sa.sa_family == AF_INET)
        memcpy(key + 1, &from->in4.sin_addr, 4);
    else if (from->sa.sa_family == AF_INET6)
        memcpy(key + 1, &from->in6.sin6_addr, 8);
}

/* A key not in the cluster, with an authority: checked into `scratch`
 * (nothing allocated) when the probation table has room for it and its
 * source; the peer is made only once the initiation is authentic. */
static struct noise_handshake *stranger(struct lookup_ctx *c, const uint8_t key[WG_KEY_LEN])
{
    uint8_t src[RATELIMIT_KEY_LEN];
    struct probation t;

    if (!c->dev->cluster.has_authority || !c->dev->cert_said || !c->pkt || c->pkt->via)
        return NULL;
    /* Past half the table, a stranger proves its source first (a cookie
     * round trip): spoofed sources fill half at most, and a newcomer whose
     * source answers still finds room. */
    if (!c->proven && probation_count(&c->dev->probation) >= PROBATION_PROVEN_FROM) {
        c->wants_cookie = true;
        return NULL;
    }
    probation_source(&c->pkt->addr, src);
    t = c->dev->probation;                /* room, without taking it yet */
    if (probation_admit(&t, key, src, c->now))
        return NULL;
    if (noise_handshake_init(&c->scratch, c->dev->local, key, NULL))
        return NULL;
    c->stranger = true;
    return &c->scratch;
}

/* Two initiations crossed (both sides were told to punch at once): if
 * both were answered, each side's own would be forgotten and neither
 * response would find its handshake. So one stands: ours, while it is
 * young, when our public key is the larger; the peer answers it, and we
 * drop theirs without a word. A plain WireGuard peer answers ours too. */
static bool ours_stands(const struct peer *p, uint64_t now)
{
    return p->wg.handshake.state == NOISE_STATE_CREATED_INITIATION && p->wg.initiation_ns &&
           now - p->wg.initiation_ns < DISCO_CROSSING_WINDOW_MS * NS_PER_MS &&
           memcmp(p->dev->local->public_key, p->public_key, WG_KEY_LEN) > 0;
}

static struct noise_handshake *lookup_by_key(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    struct lookup_ctx *c = ctx;
    struct peer *p = device_peer_by_key(c->dev, key);

    if (p && ours_stands(p, c->now)) {
        c->crossed = p;
        c->scratch = p->wg.handshake;
        return &c->scratch;
    }
    return p ? &p->wg.handshake : stranger(c, key);
}

static struct noise_handshake *lookup_by_index(void *ctx, uint32_t index)
{
    struct index_entry *e = index_find(&((struct lookup_ctx *)ctx)->dev->indices, index);
    return e && !e->keypair ? &e->peer->wg.handshake : NULL;
}

static struct peer *peer_of(struct noise_handshake *hs)
{
    return (struct peer *)((char *)hs - offsetof(struct peer, wg.handshake));
}

/* Releases the index of a handshake that is being replaced. */
static void forget_handshake_index(struct peer *p)
{
    struct index_entry *e = index_find(&p->dev->indices, p->wg.handshake.local_index);

    if (e && !e->keypair && e->peer == p)
        index_remove(&p->dev->indices, p->wg.handshake.local_index);
}

/* Sends the message of len bytes at pkt->area on p's path, or through
 * the relay `through` (an answer goes back the way its question came). */
static void send_handshake_message(struct peer *p, struct pkt *pkt, uint32_t len,
                                   struct peer *through, const union endpoint *at,
                                   uint64_t now)
{
    cookie_add_macs(&p->wg.cookie, pkt->area, len, now);
    peer_sent(p, len, false, now);
    if (at) {
        loop_send_message(p->dev->loop, pkt, at, len);
        return;
    }
    if (!through) {
        path_send_message(p, pkt, len, now);
        return;
    }
    path_relay_now(through, p->public_key, pkt->area, len, now);
    loop_pkt_put(p->dev->loop, pkt);
}

/* Sends the initiation kept in p->initiation (its MACs made afresh: a
 * cookie may have come since) on the path, and to every candidate unless
 * a direct session works (a rekey needs no search). */
static void send_initiation(struct peer *p, uint64_t now)
{
    struct peer *trial = path_relay_trial(p, now);
    struct pkt *pkt;

    bool on_path = false;
    unsigned sprayed = 0;

    cookie_add_macs(&p->wg.cookie, p->wg.initiation, WG_INITIATION_LEN, now);
    if (path_usable(p) && (pkt = device_pkt_get(p->dev))) {
        memcpy(pkt->area, p->wg.initiation, WG_INITIATION_LEN);
        send_handshake_message(p, pkt, WG_INITIATION_LEN, NULL, NULL, now);
        on_path = true;
    }
    if (!path_direct(p) || !discovery_working(p, now))
        sprayed = discovery_spray(p, p->wg.initiation, WG_INITIATION_LEN, now);
    if (sprayed)
        peer_count_tx(p, (uint64_t)sprayed * WG_INITIATION_LEN, now);
    /* A relay on trial carries a copy: its answer makes it the path. */
    if (trial &&
        path_relay_now(trial, p->public_key, p->wg.initiation, WG_INITIATION_LEN, now) == 0) {
        peer_count_tx(p, WG_INITIATION_LEN, now);
        sprayed++;
    }
    /* The sent-events only for what went out (send_handshake_message
     * fired them for the path's copy). */
    if (on_path || sprayed)
        p->wg.handshakes_sent++;
    if (!on_path && sprayed)
        peer_sent(p, 0, false, now);   /* counted above */
}

void handshake_initiate(struct peer *p, uint64_t now)
{
    struct device *dev = p->dev;
    uint8_t ts[WG_TIMESTAMP_LEN];
    struct timespec wall;

    forget_handshake_index(p);
    uint32_t index = index_add(&dev->indices, p, NULL);
    clock_gettime(CLOCK_REALTIME, &wall);
    tai64n_encode(ts, (uint64_t)wall.tv_sec, (uint32_t)wall.tv_nsec);
    if (!index ||
        noise_create_initiation(&p->wg.handshake, dev->local, index, ts, p->wg.initiation)) {
        index_remove(&dev->indices, index);
        p->wg.initiation_ns = 0;
        return;
    }
    p->wg.last_handshake_sent_ns = now;
    p->wg.initiation_ns = now ? now : 1;
    log_debug_rl("peer %s: sending handshake initiation", p->member.name);
    timers_handshake_initiated(p, now);
    send_initiation(p, now);
}

void handshake_punch(struct peer *p, uint64_t now)
{
    /* The same initiation, so that whichever copy arrives first is the
     * handshake: one state, many addresses. */
    if (p->wg.handshake.state == NOISE_STATE_CREATED_INITIATION && p->wg.initiation_ns &&
        now - p->wg.initiation_ns < WG_REKEY_TIMEOUT * WG_NSEC_PER_SEC) {
        send_initiation(p, now);
        return;
    }
    handshake_initiate(p, now);
}

void handshake_send_initiation(struct peer *p, bool is_retry, uint64_t now)
{
    if (!is_retry)
        p->wg.timers.handshake_attempts = 0;
    if (p->wg.last_handshake_sent_ns &&
        now - p->wg.last_handshake_sent_ns < WG_REKEY_TIMEOUT * WG_NSEC_PER_SEC)
        return;
    if (!path_usable(p) && !discovery_has_targets(p) && !path_relay_trial(p, now)) {
        /* Each packet for it comes here (no initiation went, none is paced). */
        log_debug_rl("peer %s: no endpoint known yet, waiting for it to reach us", p->member.name);
        discovery_want_session(p, false, now);    /* a relay may reach it */
        return;
    }
    handshake_initiate(p, now);
    /* Without a working session: punches follow, then a relay. */
    discovery_want_session(p, true, now);
}

/* Under load when more handshake messages reached the expensive step (an
 * X25519, consume_*) in the last second than we do without proof of
 * address: then a message needs a cookie (mac2) first. Only messages the
 * per-source rate limiter let through count (handshake_admit), so one
 * sender alone cannot put us under load for everyone: it takes more than
 * DEVICE_LOAD_HANDSHAKES_PER_SEC / RATELIMIT_PER_SEC sources. */
static bool under_load(const struct device *dev, uint64_t now)
{
    return now < dev->under_load_until_ns;
}

static void count_handshake_work(struct device *dev, uint64_t now)
{
    if (now - dev->load_window_start_ns >= WG_NSEC_PER_SEC) {
        dev->load_window_start_ns = now;
        dev->load_window_count = 0;
    }
    if (++dev->load_window_count > DEVICE_LOAD_HANDSHAKES_PER_SEC)
        dev->under_load_until_ns = now + WG_NSEC_PER_SEC;
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
                              size_t src_len, uint64_t now)
{
    uint8_t reply[WG_COOKIE_REPLY_LEN];
    union endpoint to = pkt->addr;

    if (cookie_create_reply(&dev->checker, pkt->in, pkt->len,
                            get_le32(pkt->in + WG_SENDER_INDEX_OFFSET), src, src_len, reply)) {
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    /* Back the way it came: through the relay, to the peer it named. */
    if (pkt->via && pkt->relay_src) {
        path_relay_now(pkt->via, pkt->relay_src->public_key, reply, sizeof(reply), now);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    memcpy(pkt->area, reply, sizeof(reply));
    loop_send_message(dev->loop, pkt, &to, sizeof(reply));
}

/* A session: the peer is reachable. Said once per time it comes (back),
 * as the pair of peer_give_up's warning; rekeys are per session. via: the
 * relay the handshake came through, named when the peer has no path yet
 * (the relay was on trial: the peer's next message through it makes it
 * the path). */
static void note_session(struct peer *p, const char *role, const struct peer *via)
{
    char path[96];

    if (!p->live.reachable) {
        p->live.came_back = true;
        if (via && via != p && !path_usable(p))
            snprintf(path, sizeof(path), "through relay %s", via->member.name);
        else
            path_format(p, path, sizeof(path));
        log_notice("peer %s: reachable, %s (handshake completed as %s)", p->member.name, path,
                   role);
    } else {
        log_debug_rl("peer %s: new session (%s)", p->member.name, role);
    }
    p->live.reachable = true;
    p->wg.no_answer = false;
    p->wg.handshakes_completed++;
    p->wg.rekey_early_ns = (uint64_t)randombytes_uniform(PEER_REKEY_SPREAD_MS) * NS_PER_MS;
}

/* Where to answer a handshake message from p that came directly from
 * src, when our path does not go there (NULL: the path): p may have moved
 * (a new NAT mapping, a restart) and our path not yet, since a new source
 * is challenged before the path follows it (path.c). WireGuard answers
 * where a message came from; what goes there is no larger than what came. */
static const union endpoint *off_path(const struct peer *p, const struct pkt *pkt,
                                      const union endpoint *src)
{
    return !pkt->via && (!path_direct(p) || !endpoint_equal(&p->path.endpoint, src)) ? src : NULL;
}

/* An authentic, fresh initiation from p crossed ours, and ours stands
 * (ours_stands): p is to answer ours. Ours may never have reached p -- it
 * went to an endpoint p cannot be reached at, say, while p reaches us from
 * another -- so it goes again, to where p's came from (p's endpoint now,
 * as for any authentic packet). Without that, both sides could turn each
 * other's initiations away for as long as their retries stay in step. Of
 * p's initiation only its timestamp and time are kept, so that it cannot
 * be replayed to make us send again. */
static void keep_ours(struct peer *p, const struct noise_handshake *theirs, struct pkt *pkt,
                      uint64_t now)
{
    memcpy(p->wg.handshake.latest_timestamp, theirs->latest_timestamp, WG_TIMESTAMP_LEN);
    p->wg.handshake.last_initiation_ns = theirs->last_initiation_ns;
    p->wg.handshake.consumed_initiation_before = true;
    log_debug_rl("peer %s: its initiation crossed ours; sending ours again", p->member.name);
    path_received(p, &pkt->addr, pkt->via, pkt->len, true, now);
    path_answer_through(p, pkt->via, now);   /* ours goes that way too */
    peer_count_rx(p, pkt->len, now);
    send_initiation(p, now);
    /* And where p's came from (off_path): as large as what came. */
    union endpoint src = pkt->addr;
    if (off_path(p, pkt, &src)) {
        memcpy(pkt->area, p->wg.initiation, WG_INITIATION_LEN);
        send_handshake_message(p, pkt, WG_INITIATION_LEN, NULL, &src, now);
        return;
    }
    loop_pkt_put(p->dev->loop, pkt);
}

/* A handshake message that did not authenticate: anyone can send those,
 * so the line is rate-limited and says no more of it than its source. */
static void log_dropped(const struct pkt *pkt, const char *what, int err)
{
    char from[64];

    if (!log_enabled(LOG_LVL_DEBUG))
        return;
    endpoint_format(&pkt->addr, from, sizeof(from));
    log_debug_rl("dropped a handshake %s from %s%s: %s", what, from,
                 pkt->via ? " (relayed)" : "", wg_strerror(err));
}

/* An authentic initiation from a stranger (stranger()): its peer, on
 * probation -- pending, no address, no name of a member -- made and
 * installed with the handshake checked into scratch; NULL when the table,
 * memory or the map refuses (nothing kept). Membership promotes it when
 * its certificate holds, or removes it when its time is up. */
static struct peer *probation_join(struct device *dev, const struct noise_handshake *scratch,
                                   const union endpoint *from, uint64_t now)
{
    struct cluster_node node = { 0 };
    uint8_t src[RATELIMIT_KEY_LEN];
    struct peer **grown, *p;

    snprintf(node.name, sizeof(node.name), "joining-%02x%02x%02x%02x", scratch->remote_static[0],
             scratch->remote_static[1], scratch->remote_static[2], scratch->remote_static[3]);
    memcpy(node.public_key, scratch->remote_static, WG_KEY_LEN);
    probation_source(from, src);
    if (!(p = peer_create(dev, &dev->cluster, &node)))
        return NULL;
    if (!(grown = realloc(dev->peers, (dev->n_peers + 1) * sizeof(*grown)))) {
        peer_free(p);
        return NULL;
    }
    dev->peers = grown;
    if (probation_admit(&dev->probation, node.public_key, src, now)) {
        peer_free(p);
        return NULL;
    }
    p->member.pending = p->member.probation = true;
    p->wg.handshake = *scratch;
    dev->peers[dev->n_peers++] = p;
    if (device_remap(dev)) {
        dev->n_peers--;
        probation_end(&dev->probation, node.public_key);
        peer_free(p);
        return NULL;
    }
    log_info_rl("a stranger's key on probation as %s: its certificate is awaited", p->member.name);
    return p;
}

static void send_cookie_reply(struct device *dev, struct pkt *pkt, const uint8_t *src,
                              size_t src_len, uint64_t now);
static size_t source_bytes(const union endpoint *src, uint8_t out[18]);

static void consume_initiation(struct device *dev, struct pkt *pkt, bool proven, uint64_t now)
{
    struct lookup_ctx ctx = { .dev = dev, .now = now, .pkt = pkt, .proven = proven };
    struct noise_lookup lookup = { lookup_by_key, lookup_by_index, &ctx };
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    int ret = noise_consume_initiation(dev->local, pkt->in, pkt->len, now, &lookup, &hs);

    if (ret == 0 && ctx.crossed)
        keep_ours(ctx.crossed, &ctx.scratch, pkt, now);
    if (ret == 0 && ctx.stranger) {
        struct peer *joining = probation_join(dev, &ctx.scratch, &pkt->addr, now);
        if (!joining)
            ret = -WG_ENOPEER;
        else
            hs = &joining->wg.handshake;
    }
    sodium_memzero(&ctx.scratch, sizeof(ctx.scratch));
    if (ret == 0 && ctx.crossed)
        return;
    if (ret && ctx.wants_cookie) {
        uint8_t src[18];
        dev->stats.cookies_to_strangers++;
        send_cookie_reply(dev, pkt, src, source_bytes(&pkt->addr, src), now);
        return;
    }
    if (ret) {
        log_dropped(pkt, "initiation", ret);
        if (ret == -WG_ENOPEER)
            rx_drop(dev, RX_DROP_UNKNOWN_PEER, 1);
        else
            rx_drop(dev, RX_DROP_BAD, 1);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    struct peer *p = peer_of(hs);
    union endpoint src = pkt->addr;
    forget_handshake_index(p);
    path_received(p, &pkt->addr, pkt->via, pkt->len, true, now);
    struct peer *back = path_answer_through(p, pkt->via, now);
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
    note_session(p, "responder", pkt->via);
    send_handshake_message(p, pkt, WG_RESPONSE_LEN, back, off_path(p, pkt, &src), now);
}

static void consume_response(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct lookup_ctx ctx = { .dev = dev, .now = now };
    struct noise_lookup lookup = { lookup_by_key, lookup_by_index, &ctx };
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    int ret = noise_consume_response(dev->local, pkt->in, pkt->len, &lookup, &hs);

    if (ret) {
        log_dropped(pkt, "response", ret);
        rx_drop(dev, RX_DROP_BAD, 1);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    struct peer *p = peer_of(hs), *via = pkt->via;
    path_received(p, &pkt->addr, pkt->via, pkt->len, true, now);
    peer_count_rx(p, pkt->len, now);
    timers_any_authenticated_packet_received(p, now);
    timers_any_authenticated_packet_traversal(p, now);
    loop_pkt_put(dev->loop, pkt);
    if (noise_begin_session(hs, &kp, now))
        return;
    peer_install_keypair(p, &kp);
    timers_session_derived(p, now);
    timers_handshake_complete(p, now);
    note_session(p, "initiator", via);
    /* Confirms the session to the responder: disco's first messages,
     * staged data, or a keepalive. */
    if (!discovery_session_up(p, now) || p->wg.staged.packets)
        datapath_send_keepalive(p, now);
}

static void consume_cookie_reply(struct device *dev, struct pkt *pkt, uint64_t now)
{
    struct index_entry *e = index_find(&dev->indices, cookie_reply_receiver(pkt->in));

    if (!e || cookie_consume_reply(&e->peer->wg.cookie, pkt->in, pkt->len, now)) {
        rx_drop(dev, RX_DROP_BAD, 1);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    struct peer *p = e->peer;
    log_debug_rl("peer %s: got a cookie (it is under load)", p->member.name);
    loop_pkt_put(dev->loop, pkt);
    /* Our initiation, with the cookie's mac2, at once rather than at the
     * retry REKEY_TIMEOUT later: a member that asks a cookie of a stranger
     * (probation half full) is joined within a round trip. */
    if (p->wg.handshake.state == NOISE_STATE_CREATED_INITIATION && p->wg.initiation_ns &&
        now - p->wg.initiation_ns < WG_REKEY_TIMEOUT * WG_NSEC_PER_SEC &&
        (!p->wg.cookie_resent_ns || now - p->wg.cookie_resent_ns >= WG_NSEC_PER_SEC)) {
        p->wg.cookie_resent_ns = now;
        send_initiation(p, now);
    }
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

bool handshake_admit(struct device *dev, const uint8_t *msg, uint32_t len,
                     const union endpoint *src, uint64_t now)
{
    uint32_t type = noise_message_type(msg, len);
    const void *addr = src->sa.sa_family == AF_INET6 ? (const void *)&src->in6.sin6_addr
                                                     : (const void *)&src->in4.sin_addr;

    if (len != expected_len(type)) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return false;
    }
    /* A cookie reply is looked up by an index of ours, and opened only
     * for a message we sent: nothing to limit. */
    if (type == WG_MSG_COOKIE_REPLY)
        return true;
    if (cookie_validate(&dev->checker, msg, len, NULL, 0, false)) {
        rx_drop(dev, RX_DROP_BAD, 1);
        return false;
    }
    if (!ratelimit_allow(&dev->ratelimit, src->sa.sa_family, addr, now)) {
        rx_drop(dev, RX_DROP_RATELIMITED, 1);
        return false;
    }
    return true;
}

void handshake_receive(struct device *dev, struct pkt *pkt, uint64_t now)
{
    uint32_t type = noise_message_type(pkt->in, pkt->len);
    uint8_t src[18];
    size_t src_len;

    if (pkt->len != expected_len(type)) {
        rx_drop(dev, RX_DROP_BAD, 1);
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
        send_cookie_reply(dev, pkt, src, src_len, now);
        return;
    }
    if (ret) {
        rx_drop(dev, RX_DROP_BAD, 1);
        loop_pkt_put(dev->loop, pkt);
        return;
    }
    count_handshake_work(dev, now);
    /* Proven: a valid mac2, asked for or not (a stranger's cookie). */
    bool proven = under_load(dev, now) ||
                  (type == WG_MSG_INITIATION &&
                   probation_count(&dev->probation) >= PROBATION_PROVEN_FROM &&
                   cookie_validate(&dev->checker, pkt->in, pkt->len, src, src_len, true) == 0);
    if (type == WG_MSG_INITIATION)
        consume_initiation(dev, pkt, proven, now);
    else
        consume_response(dev, pkt, now);
}
