/* SPDX-License-Identifier: MIT */
/* Discovery on the wire: the disco messages (disco_msg.h) a node sends and
 * answers, and the schedule of disco.h carried out for each peer.
 *
 * Every disco message travels inside a session, as an inner packet of
 * protocol DISCO_IP_PROTO between overlay addresses, so it is as secret
 * and as authentic as any data; nothing here acts on a message that did
 * not open with a peer's keys. Each goes out at once from one scratch
 * buffer (sealed in place, one send), beside the packet pool, so a burst
 * of introductions never starves the data path of buffers.
 *
 *   ENDPOINTS  to each peer with a session: where we see it, our local
 *              candidates, and the peers we reach directly with theirs.
 *              Any node is thus an introducer; there is no server.
 *   PUNCH      from the node that introduces two peers, to both at once:
 *              each aims its handshake at the other's candidates.
 *   PING/PONG  the round trip on the path, and probes of direct
 *              candidates while relayed (a pong confirms the path).
 *   RELAY      forwarded as RELAYED (path.c; RELAYED is the data path's).
 *   NAMES      at the start of each session and with ENDPOINTS: the names
 *              this machine goes by (hostname, FQDN), for the peers' hosts
 *              blocks (`hostnames = off`: none).
 *   FEATURES   at the start of each session and with ENDPOINTS: that we
 *              take relay frames (path.c), on that session, and state
 *              our registry record.
 *   RECORD     after FEATURES, by a node that joined through the
 *              registry: the digest of its record, which the others
 *              count only so (overlay/registry/vouch.h).
 *
 * Which relay to try and what a member's hints may cost: disco_relay.c
 * (disco_int.h).
 *
 * The schedule runs on WireGuard's timer model (timers.h): each peer has
 * one deadline (p->disco.due_ns), set only through arm(), which lowers the
 * device's earliest (disco.next_check_ns). It is the earliest of the
 * peer's next action (next_timer) and of the instants its facts change
 * with time alone (facts_change_at: its keypair too old, answers stopped,
 * idle), so a cached deadline is never later than the true one. Events
 * that change a peer's facts arm it (discovery_arm); a relay whose
 * goodness flips and a device-wide change wake every peer once
 * (discovery_wake). discovery_run_timers visits only due peers. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/base/wire.h"
#include "overlay/engine/disco_int.h"

/* A peer's word on its record makes membership look again at most this
 * often. */
#define RECORD_RECHECK_NS (1000ull * NS_PER_MS)
/* And the device's membership looks again at most this often. */
#define RECORDS_COALESCE_NS (100ull * NS_PER_MS)


int discovery_init(struct device *dev, const struct core_ops *core)
{
    struct disco_device *d = &dev->disco;

    d->core = core;
    d->in_msg = calloc(1, sizeof(*d->in_msg));
    d->out_msg = calloc(1, sizeof(*d->out_msg));
    d->wrap_msg = calloc(1, sizeof(*d->wrap_msg));
    d->scratch = malloc(DISCO_SCRATCH_LEN);
    d->wrap = malloc(DISCO_SCRATCH_LEN);
    if (!d->in_msg || !d->out_msg || !d->wrap_msg || !d->scratch || !d->wrap) {
        discovery_destroy(dev);
        return -ENOMEM;
    }
    return 0;
}

void discovery_destroy(struct device *dev)
{
    struct disco_device *d = &dev->disco;

    free(d->in_msg);
    free(d->out_msg);
    free(d->wrap_msg);
    free(d->scratch);
    free(d->wrap);
    d->in_msg = d->out_msg = d->wrap_msg = NULL;
    d->scratch = d->wrap = NULL;
    d->fwd = NULL;     /* its buffer went with the loop's pool */
}

/* --- small helpers ------------------------------------------------------------------ */

/* A session that still works: heard from within KEEPALIVE + REKEY_TIMEOUT
 * (after which WireGuard would rekey), and, for a peer that answers
 * pings, fewer than DISCO_PING_LOST_MAX lost in a row -- the sooner of
 * the two to notice a path that broke. */
bool discovery_working(const struct peer *p, uint64_t now)
{
    /* An idle peer is heard from only as often as it is pinged (on its
     * own pace: clock_stretch). */
    uint64_t idle = clock_stretch(discovery_idle_ping_s(p, now) * WG_NSEC_PER_SEC,
                                  p->disco.state.spread);
    uint64_t quiet = (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) * WG_NSEC_PER_SEC + idle;

    return peer_can_send(p, now) && p->live.last_received_ns &&
           now - p->live.last_received_ns < quiet &&
           (!p->disco.speaks_disco || disco_pings_lost(&p->disco.state, now) < DISCO_PING_LOST_MAX);
}

unsigned discovery_idle_ping_s(const struct peer *p, uint64_t now)
{
    unsigned steps, s;

    /* A stock WireGuard peer gets no pings at all. */
    if (!p->disco.speaks_disco ||
        (p->live.last_data_ns && now - p->live.last_data_ns < DISCO_IDLE_AFTER_S * WG_NSEC_PER_SEC))
        return 0;
    steps = (unsigned)((p->dev->n_peers + DISCO_IDLE_PEERS_PER_STEP - 1) / DISCO_IDLE_PEERS_PER_STEP);
    s = DISCO_PING_INTERVAL_S * (steps < 2 ? 2 : steps);
    return s < DISCO_IDLE_PING_MAX_S ? s : DISCO_IDLE_PING_MAX_S;
}

static unsigned targets(const struct peer *p, bool only_local, struct disco_endpoint *out)
{
    const struct disco_device *d = &p->dev->disco;

    return disco_targets(&p->disco.state, d->local, d->n_local, only_local, out, DISCO_CANDS_MAX);
}

bool discovery_has_targets(const struct peer *p)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];

    return targets(p, false, t) > 0;
}

static void challenge(struct peer *p, uint64_t now);

/* --- sending ------------------------------------------------------------------------- */

/* Writes m for p into the scratch buffer as one sealed transport message
 * (an inner IP packet between our overlay addresses); returns its length
 * or a negative errno. */
static int seal_disco(struct peer *p, const struct disco_msg *m, uint32_t pad_limit,
                      uint64_t now)
{
    struct device *dev = p->dev;
    size_t cap = DISCO_SCRATCH_LEN - WG_TRANSPORT_MIN_LEN - WG_PADDING_MULTIPLE;
    uint8_t *ip = dev->disco.scratch + WG_TRANSPORT_HEADER_LEN;
    struct transport_packet tp = { .buf = dev->disco.scratch, .cap = DISCO_SCRATCH_LEN,
                                   .pad_limit = pad_limit };
    int n = path_disco_packet(dev, p, m, ip, cap);

    if (n < 0)
        return n;
    tp.len = (size_t)n;
    if (transport_seal(p->wg.current, &tp, now))
        return -ESTALE;
    if (m->type < DISCO_TYPE_COUNT)
        dev->stats.disco_sent[m->type]++;
    return (int)tp.len;
}

/* Sends m to p at once: to `to` when given (a probe or an answer to one),
 * else on p's path; its padding held to pad_limit. */
static int send_disco_limited(struct peer *p, const struct disco_msg *m,
                              const union endpoint *to, uint32_t pad_limit, uint64_t now)
{
    const uint8_t *buf = p->dev->disco.scratch;
    int n;

    if (!peer_can_send(p, now))
        return -ENOTCONN;
    if (p->member.probation && m->type != DISCO_CERT)
        return -EPERM;            /* a stranger hears nothing of the cluster */
    /* On a path that did not answer us yet, nothing but a challenge
     * (disco.h: unproven), which names where it goes. */
    if (!to && !p->path.via && !p->path.endpoint_proven)
        return -EAGAIN;
    if ((n = seal_disco(p, m, pad_limit, now)) < 0)
        return n;
    /* Authenticated, but not data: a disco message expects no data back,
     * so it arms no new handshake (timers.h). */
    p->dev->disco.core->sent(p, (uint64_t)n, false, now);
    if (to || !p->path.via)
        n = loop_send_now(p->dev->loop, buf, (uint32_t)n, to ? to : &p->path.endpoint);
    else
        n = path_relay_now(p->path.via, p->public_key, buf, (uint32_t)n, now);
    /* As any sender: an old key is renewed (pings alone keep a session
     * in use). */
    if (transport_needs_rekey(p->wg.current, now + p->wg.rekey_early_ns))
        p->dev->disco.core->send_initiation(p, false, now);
    return n;
}

static int send_disco(struct peer *p, const struct disco_msg *m, const union endpoint *to,
                      uint64_t now)
{
    return send_disco_limited(p, m, to, path_mtu(p), now);
}

unsigned discovery_spray(struct peer *p, const uint8_t *msg, uint32_t len, uint64_t now)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];
    unsigned n, sent = 0;
    union endpoint ep;

    disco_cand_expire(&p->disco.state, now);
    n = targets(p, false, t);
    for (unsigned i = 0; i < n; i++) {
        /* The path had its copy already. */
        if ((!p->path.via && discovery_is_endpoint(p, &t[i])) || !discovery_from_disco(&t[i], &ep) ||
            !discovery_hint_allows(p, &t[i], len, now))
            continue;
        if (loop_send_now(p->dev->loop, msg, len, &ep) == 0)
            sent++;
    }
    return sent;
}

/* --- ENDPOINTS ----------------------------------------------------------------------- */

/* p's local candidates as p itself gave them, to pass on: what others
 * told us of them never is (one member's word would become ours). Each
 * recipient may spend DISCO_CAND_REPORT_BYTES on each, so we pay as much
 * from p's credit first: what a member says of itself costs the cluster
 * no more than twice what it sent us, however many we tell. */
static unsigned pass_locals(struct peer *p, struct disco_endpoint *out, unsigned max)
{
    unsigned n;

    if (!disco_cand_locals_from(&p->disco.state, p->id))
        return 0;
    n = disco_cand_local(&p->disco.state, out, max);
    if (!n || !disco_credit_spend(&p->disco.hint_credit, n * DISCO_CAND_REPORT_BYTES))
        return 0;
    return n;
}

/* Peers others may hear of: those we reach directly, with a session,
 * that speak disco (a plain WireGuard peer would not answer a punch). */
static bool recordable(const struct peer *p, uint64_t now)
{
    return path_direct(p) && p->path.endpoint_proven && peer_can_send(p, now) &&
           p->disco.speaks_disco;
}

static bool record_of(struct peer *p, uint64_t now, struct disco_peer *rec)
{
    if (!recordable(p, now))
        return false;
    memcpy(rec->key, p->public_key, WG_KEY_LEN);
    rec->has_observed = discovery_to_disco(&p->path.endpoint, &rec->observed);
    rec->direct = true;
    rec->n_local = (uint8_t)pass_locals(p, rec->local, DISCO_MAX_LOCAL);
    return true;
}

static size_t endpoint_len(const struct disco_endpoint *e)
{
    return e->family == DISCO_FAMILY_IPV4 ? DISCO_ENDPOINT_V4_LEN : DISCO_ENDPOINT_V6_LEN;
}

static size_t record_len(const struct disco_peer *rec)
{
    size_t n = WG_KEY_LEN + 2u + (rec->has_observed ? endpoint_len(&rec->observed) : 0);

    for (unsigned i = 0; i < rec->n_local; i++)
        n += endpoint_len(&rec->local[i]);
    return n;
}

/* ENDPOINTS for x without peer records yet; returns its encoded length. */
static size_t endpoints_head(const struct peer *x, struct disco_msg *m)
{
    const struct disco_device *d = &x->dev->disco;
    struct disco_endpoints *e = &m->endpoints;

    m->type = DISCO_ENDPOINTS;
    e->has_observed = path_direct(x) && discovery_to_disco(&x->path.endpoint, &e->observed);
    e->n_local = d->n_local;
    memcpy(e->local, d->local, sizeof(e->local[0]) * d->n_local);
    e->n_peers = 0;
    return (size_t)disco_encoded_len(m);
}

/* A PING in the message being built, every field set: the message is a
 * union, and what another type left in it (an ENDPOINTS' records) would
 * read as padding -- a ping the size of the path that fails to go. */
static struct disco_msg *ping_msg(struct device *dev, uint8_t flags)
{
    struct disco_msg *m = dev->disco.out_msg;

    m->type = DISCO_PING;
    memset(&m->ping, 0, sizeof(m->ping));
    randombytes_buf(&m->ping.txid, sizeof(m->ping.txid));
    m->ping.flags = flags;
    return m;
}

/* What m takes on the wire to p, sealed. */
static uint32_t sealed_len(const struct peer *p, const struct disco_msg *m)
{
    int n = disco_encoded_len(m);

    return n < 0 ? UINT32_MAX
                 : (uint32_t)transport_sealed_len_limited(path_inner_ip_len(p->dev) + (size_t)n,
                                                          path_mtu(p));
}

/* A probe of `to` (flags: more, DISCO_PING_F_CHALLENGE): padded as long
 * as the PONG that answers it, which names `to`, so that a node that never
 * heard from us there can answer it at no more than it cost (on_ping). */
static struct disco_msg *probe_msg(struct device *dev, const struct disco_endpoint *to,
                                   uint8_t flags)
{
    struct disco_msg *m = ping_msg(dev, DISCO_PING_F_PROBE | flags);

    m->ping.pad = (uint16_t)endpoint_len(to);
    return m;
}

static void send_names(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;

    if (!dev->n_self_names || dev->cluster.hostnames_off)
        return;
    m->type = DISCO_NAMES;
    m->names.n = dev->n_self_names;
    memcpy(m->names.name, dev->self_names, sizeof(m->names.name));
    send_disco(x, m, NULL, now);
}

/* Said on each session, since a peer that restarts may be another
 * version: it sends frames only on a session where we said we take them,
 * and waits for our RECORD only where we said we state one. */
static void send_features(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;

    m->type = DISCO_FEATURES;
    m->features = DISCO_FEAT_RECORD | (dev->relay_frames_off ? 0 : DISCO_FEAT_RELAY_FRAMES);
    send_disco(x, m, NULL, now);
}

/* Our registry record, as we put it in etcd: the peers count it only
 * once we said so on a session of our key (overlay/registry/vouch.h). */
static void send_record(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;

    if (!dev->states_record)
        return;
    m->type = DISCO_RECORD;
    memcpy(m->record, dev->self_record, DISCO_RECORD_LEN);
    send_disco(x, m, NULL, now);
}

void discovery_send_cert(struct peer *x, const char *text, size_t len, uint64_t now)
{
    struct disco_msg *m = x->dev->disco.out_msg;

    if (!len || len > DISCO_CERT_MAX)
        return;
    m->type = DISCO_CERT;
    m->cert.text = text;
    m->cert.len = (uint16_t)len;
    /* Said at a session's start, when its path may be unproven yet (disco.h)
     * but is where the handshake went: to that endpoint. */
    send_disco(x, m, !x->path.via && x->path.endpoint.sa.sa_family != AF_UNSPEC ?
               &x->path.endpoint : NULL, now);
}

/* Records go in as many messages as it takes to keep each within the
 * path's MTU. */
static void send_endpoints(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;
    size_t hlen = path_inner_ip_len(dev);
    size_t limit = path_mtu(x) - hlen, size = endpoints_head(x, m);
    struct disco_peer rec;

    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *y = dev->peers[i];
        if (y == x || !record_of(y, now, &rec))
            continue;
        size_t len = record_len(&rec);
        if (m->endpoints.n_peers == DISCO_MAX_PEERS || size + len > limit) {
            send_disco(x, m, NULL, now);
            size = endpoints_head(x, m);
        }
        m->endpoints.peers[m->endpoints.n_peers++] = rec;
        size += len;
    }
    send_disco(x, m, NULL, now);
    send_names(x, now);
    send_features(x, now);
    send_record(x, now);
}

/* --- introductions -------------------------------------------------------------------- */

/* Where `about` may be reached: where we see it, then its own addresses. */
static uint8_t candidates_of(struct peer *about, struct disco_endpoint *out)
{
    unsigned n = 0;

    if (discovery_to_disco(&about->path.endpoint, &out[0]))
        n++;
    n += pass_locals(about, out + n, DISCO_MAX_CANDIDATES - n);
    return (uint8_t)n;
}

static void send_punch(struct peer *to, struct peer *about, uint64_t id, uint64_t now)
{
    struct disco_msg *m = to->dev->disco.out_msg;

    m->type = DISCO_PUNCH;
    memcpy(m->punch.key, about->public_key, WG_KEY_LEN);
    m->punch.id = id;
    m->punch.n_cand = candidates_of(about, m->punch.cand);
    if (m->punch.n_cand)
        send_disco(to, m, NULL, now);
}

/* p is reached directly at an endpoint every member was given for it
 * (the file's, or one of its own addresses in its registry record):
 * others need no word from us to find it. */
static bool at_listed(const struct peer *p)
{
    if (p->path.via || p->path.endpoint.sa.sa_family == AF_UNSPEC)
        return false;
    if (p->member.listed.sa.sa_family != AF_UNSPEC &&
        endpoint_equal(&p->path.endpoint, &p->member.listed))
        return true;
    for (unsigned i = 0; i < p->disco.n_recorded; i++)
        if (discovery_is_endpoint(p, &p->disco.recorded[i]))
            return true;
    return false;
}

/* x just told us where it is: every other peer we reach directly is told
 * to punch to x, and x to each of them, at the same moment -- unless both
 * are where the cluster says they are, which each knows already (so a
 * node joining a cluster of listed endpoints, or of registered nodes on
 * one network reached at their records' addresses, costs nobody punches,
 * rather than two per peer from every peer). */
static void introduce(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    bool x_listed = at_listed(x);

    log_debug_rl("peer %s: introduced to the peers we reach", x->member.name);
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *y = dev->peers[i];
        uint64_t id;

        if (y == x || !recordable(y, now) || (x_listed && at_listed(y)))
            continue;
        randombytes_buf(&id, sizeof(id));
        send_punch(y, x, id, now);
        send_punch(x, y, id, now);
    }
}

/* --- receiving ------------------------------------------------------------------------ */

/* What a peer x says about q: candidates, maybe a relay. */
static void learn_record(struct peer *x, struct peer *via, const struct disco_peer *rec,
                         uint64_t now)
{
    struct device *dev = x->dev;
    struct peer *q = device_peer_by_key(dev, rec->key);

    if (!q || q == x)
        return;     /* ourselves, or a key not in the cluster */
    bool changed = false;

    if (rec->has_observed)
        changed = disco_cand_add(&q->disco.state, &rec->observed, false, x->id, now);
    /* q's own word on its addresses wins over what others pass on. */
    if (rec->n_local && !disco_cand_locals_from(&q->disco.state, q->id))
        changed |= disco_cand_set_local(&q->disco.state, rec->local, rec->n_local, x->id, now);
    if (changed)
        discovery_arm(q, 0);   /* new targets: probes may be due */
    if (rec->direct && !via && path_direct(x))
        discovery_offer_relay(q, x, now);
    if (!discovery_working(q, now))
        discovery_want_session(q, false, now);
}

/* Introduced once when it comes (and its endpoint answered us), again
 * when its addresses change, and not more often than ENDPOINTS may
 * change. */
static void maybe_introduce(struct peer *x, uint64_t now)
{
    if (x->member.probation)
        return;               /* nobody knows its key yet: discovery_promoted */
    if (!x->disco.introduced && recordable(x, now) &&
        (!x->disco.introduced_ns ||
         now - x->disco.introduced_ns >= DISCO_ENDPOINTS_MIN_S * WG_NSEC_PER_SEC)) {
        x->disco.introduced = true;
        x->disco.introduced_ns = now;
        introduce(x, now);
    }
}

void discovery_promoted(struct peer *p, uint64_t now)
{
    disco_endpoints_due(&p->disco.state);     /* where the members are, at once */
    p->disco.introduced = false;
    if (p->disco.speaks_disco)
        maybe_introduce(p, now);
    discovery_wake(p->dev);
}

void discovery_endpoint_proven(struct peer *p, uint64_t now)
{
    disco_endpoints_due(&p->disco.state);
    if (p->disco.speaks_disco)
        maybe_introduce(p, now);
    discovery_arm(p, 0);
}

/* x, reached directly, sees our packets come from ep. The one kept is
 * the first a member said, for as long as some member says it again
 * within DISCO_CAND_TTL_S: behind a NAT that maps per destination each
 * member sees another, and our record would change with every ENDPOINTS.
 * One of our own addresses is no news (no NAT between). */
static void note_observed(struct device *dev, const struct disco_endpoint *ep, uint64_t now)
{
    struct disco_device *d = &dev->disco;

    for (unsigned i = 0; i < d->n_local; i++)
        if (disco_endpoint_equal(&d->local[i], ep))
            return;
    if (d->has_observed && disco_endpoint_equal(&d->observed, ep)) {
        d->observed_ns = now;
        return;
    }
    if (d->has_observed && now - d->observed_ns < DISCO_CAND_TTL_S * WG_NSEC_PER_SEC)
        return;
    d->observed = *ep;
    d->has_observed = true;
    d->observed_ns = now;
    if (dev->observed_changed)
        dev->observed_changed(dev);
}

static bool cand_to_disco(const struct cluster_cand *c, struct disco_endpoint *out)
{
    memset(out, 0, sizeof(*out));
    out->family = c->addr.family == AF_INET6 ? DISCO_FAMILY_IPV6 : DISCO_FAMILY_IPV4;
    memcpy(out->addr, c->addr.bytes, c->addr.family == AF_INET6 ? 16u : 4u);
    out->port = c->port;
    return disco_endpoint_valid(out);
}

void discovery_node_hints(struct peer *p, const struct cluster_node *node, uint64_t now)
{
    struct disco_endpoint locals[DISCO_MAX_LOCAL], ep, listed;
    bool has_listed = discovery_to_disco(&p->member.listed, &listed);
    unsigned n = 0;

    /* Its listed endpoint is its path already, free to send to: the rest
     * are its own addresses, tried first (a LAN path beats the way round
     * through a NAT). */
    for (unsigned i = 0; i < node->n_candidates && n < DISCO_MAX_LOCAL; i++)
        if (cand_to_disco(&node->candidates[i], &ep) &&
            !(has_listed && disco_endpoint_equal(&ep, &listed)))
            locals[n++] = ep;
    memcpy(p->disco.recorded, locals, n * sizeof(locals[0]));
    p->disco.n_recorded = (uint8_t)n;
    /* Its own word, said in the tunnel, outranks its record. */
    if (n && !disco_cand_locals_from(&p->disco.state, p->id))
        disco_cand_set_local(&p->disco.state, locals, n, DISCO_ID_REGISTRY, now);
    if (node->has_observed && cand_to_disco(&node->observed, &ep))
        disco_cand_add(&p->disco.state, &ep, false, DISCO_ID_REGISTRY, now);
    if ((n || node->has_observed) && !discovery_working(p, now))
        discovery_want_session(p, false, now);
    discovery_arm(p, 0);
}

static void on_endpoints(struct peer *x, struct peer *via, const struct disco_endpoints *e,
                         uint64_t now)
{
    if (!via && e->has_observed && path_direct(x))
        note_observed(x->dev, &e->observed, now);
    if (disco_cand_set_local(&x->disco.state, e->local, e->n_local, x->id, now)) {
        log_debug_rl("peer %s: its local addresses changed", x->member.name);
        x->disco.introduced = false;     /* the others hear of it as an introduction */
    }
    if (!via)
        maybe_introduce(x, now);
    for (unsigned i = 0; i < e->n_peers; i++)
        learn_record(x, via, &e->peers[i], now);
}

static void on_punch(struct peer *x, struct peer *via, const struct disco_punch *pu,
                     uint64_t now)
{
    struct peer *q = device_peer_by_key(x->dev, pu->key);

    if (!q || q == x)
        return;
    for (unsigned i = 0; i < pu->n_cand; i++)
        if (disco_cand_add(&q->disco.state, &pu->cand[i], false, x->id, now))
            discovery_arm(q, 0);   /* new targets: probes may be due */
    if (!via && path_direct(x))
        discovery_offer_relay(q, x, now);
    if (!discovery_working(q, now))
        discovery_want_session(q, false, now);
}

/* A probe of the candidate `to`: paid for by the members that named it
 * (discovery_hint_allows), or, where the peer's authentic packet just came from
 * (answered), free when that is proven, else from what came from there
 * (path_unproven_spend). */
static void send_probe(struct peer *p, const struct disco_endpoint *to, bool answered,
                       uint64_t now)
{
    struct disco_msg *m;
    union endpoint ep;

    if (!discovery_from_disco(to, &ep))
        return;
    m = probe_msg(p->dev, to, 0);
    uint32_t sealed = sealed_len(p, m);
    if (answered ? !path_unproven_spend(p, &ep, sealed) : !discovery_hint_allows(p, to, sealed, now))
        return;
    if (send_disco(p, m, &ep, now) == 0)
        disco_ping_sent(&p->disco.state, m->ping.txid, to, now);
}

static void on_ping(struct peer *p, const union endpoint *src, struct peer *via,
                    const struct disco_ping *pi, uint64_t now)
{
    struct disco_msg *m = p->dev->disco.out_msg;
    struct disco_endpoint from;
    bool direct = !via && src && discovery_to_disco(src, &from);

    m->type = DISCO_PONG;
    m->pong.txid = pi->txid;
    m->pong.has_source = direct;
    if (direct)
        m->pong.source = from;
    /* A direct ping is answered where it came from, whatever our path.
     * Where that never answered us: a challenge gets its PONG as far as
     * what came from there pays (a forged source gets no more than the
     * forger sent); any other ping gets our challenge instead, paid the
     * same way -- the peer may have moved, and is followed once it
     * answers (two challenges answered by challenges would never end). */
    if (direct && !path_proven(p, src)) {
        if (!(pi->flags & DISCO_PING_F_CHALLENGE))
            challenge(p, now);
        else if (path_unproven_spend(p, src, sealed_len(p, m)))
            send_disco(p, m, src, now);
        return;
    }
    send_disco(p, m, direct ? src : NULL, now);
    /* Probed directly while we relay: probe back at once, so that both
     * sides can move to the direct path within a round trip. */
    if (direct && p->path.via && (pi->flags & DISCO_PING_F_PROBE))
        send_probe(p, &from, true, now);
}

/* What the search found, when it differs from what the log last said:
 * a search ended (a new path's, or one that found another size), or the
 * size in use moved while one was known, or it stopped getting through
 * (was: the search's state before this step of it). A rekey's new search
 * that finds the same size says nothing. The network (a forged ICMP) can
 * make it move: rate-limited. */
static void log_mtu_changed(struct peer *p, const struct pmtu *was)
{
    const struct pmtu *m = &p->path.pmtu;
    unsigned mtu = path_mtu(p);
    char path[96];

    if (was->found && !m->found) {
        path_format(p, path, sizeof(path));
        log_info_peer_rl("peer %s: %u-byte packets stopped getting through (%s): %u until "
                         "a new search ends", p->member.name, (unsigned)was->current, path, mtu);
    } else if (!m->found || mtu == p->path.pmtu_logged) {
        return;
    } else {
        path_format(p, path, sizeof(path));
        if (p->path.pmtu_logged)
            log_info_peer_rl("peer %s: path MTU %u, was %u (%s)", p->member.name, mtu,
                             (unsigned)p->path.pmtu_logged, path);
        else
            log_info_peer_rl("peer %s: path MTU %u (%s)", p->member.name, mtu, path);
    }
    p->path.pmtu_logged = (uint16_t)mtu;
}

static void on_pong(struct peer *p, const union endpoint *src, struct peer *via,
                    const struct disco_pong *po, uint64_t now)
{
    struct disco_ping_slot slot;
    struct disco_endpoint cur, from;
    struct pmtu was = p->path.pmtu;   /* for the log, should the search move */

    if (pmtu_acked(&p->path.pmtu, po->txid, now)) {
        log_debug_rl("peer %s: path carries %u-byte packets", p->member.name,
                     (unsigned)p->path.pmtu.lo);
        log_mtu_changed(p, &was);
        return;
    }
    /* A probe (or a challenge) is answered only from where it went: a
     * member that got one at an address of its own cannot make another
     * address its endpoint by answering from there. */
    if (!disco_pong(&p->disco.state, po->txid, now, &slot) || !slot.probe || via || !src ||
        !discovery_to_disco(src, &from) || !disco_endpoint_equal(&slot.to, &from))
        return;
    /* A challenge answered: where the peer's packets come from now, and
     * the path whatever it was before (WireGuard would have moved at once). */
    bool challenged = disco_endpoint_equal(&p->path.unproven.src, &from);
    if (challenged)
        disco_unproven_clear(&p->path.unproven);
    /* A probe answered while already direct to a local address: a public
     * one that answers too (a NAT that hairpins) is the longer way. */
    if (!challenged && !p->path.via && discovery_to_disco(&p->path.endpoint, &cur) &&
        disco_cand_is_local(&p->disco.state, &cur) && !disco_cand_is_local(&p->disco.state, &from))
        return;
    /* A probe answered directly: the path works both ways. */
    path_use_direct(p, src, now);
    p->disco.state.rtt_ns = now - slot.sent_ns ? now - slot.sent_ns : 1;
}

static void on_relay(struct peer *p, struct peer *via, const struct disco_relay *rl,
                     uint64_t now)
{
    struct device *dev = p->dev;

    /* A relay takes messages only from a member that reached it directly. */
    if (via) {
        dev->stats.relay_refused++;
        return;
    }
    path_forward(dev, p, device_peer_by_key(dev, rl->key), rl->msg, rl->msg_len, now);
}

/* What p takes, said on its current session: the one that delivered
 * this, but for a message sent on the one before that arrives after the
 * switch (from the same daemon, all but always). */
/* p's word on its record changed, or it is pending and says it again (a
 * name or address held from it may have been freed since): membership
 * looks again -- from the timers (discovery_run_timers), never inside a
 * receive, since what it applies may remove peers; for each peer at most
 * once a RECORD_RECHECK_NS, and for the device at most once a
 * RECORDS_COALESCE_NS, so that neither a member saying something new in
 * every packet nor a cluster of new members costs a look per message. */
static void record_word(struct peer *p, bool changed, uint64_t now)
{
    struct device *dev = p->dev;
    uint64_t at;

    if ((!changed && !p->member.pending) || !dev->records_changed ||
        (p->disco.record_checked_ns && now - p->disco.record_checked_ns < RECORD_RECHECK_NS))
        return;
    p->disco.record_checked_ns = now;
    at = dev->records_checked_ns ? dev->records_checked_ns + RECORDS_COALESCE_NS : now;
    if (at < now)
        at = now;
    if (!dev->records_due_ns || at < dev->records_due_ns)
        dev->records_due_ns = at;
    if (dev->disco.next_check_ns > at)
        dev->disco.next_check_ns = at;
}

/* The look record_word asked for, when it is due. */
static void records_look(struct device *dev, uint64_t now)
{
    if (!dev->records_due_ns || now < dev->records_due_ns)
        return;
    dev->records_due_ns = 0;
    dev->records_checked_ns = now;
    dev->records_changed(dev, now);
}

static void on_features(struct peer *p, uint32_t features, uint64_t now)
{
    if (!p->wg.current)
        return;
    if (features & DISCO_FEAT_RELAY_FRAMES)
        path_frames_said(p, p->wg.current->local_index);
    else
        p->path.frames_said = false;
    /* A daemon that states no record: etcd's word is taken for its own, as
     * every daemon did before RECORD. */
    if (!(features & DISCO_FEAT_RECORD) && p->disco.record_said != PEER_RECORD_OLDER) {
        p->disco.record_said = PEER_RECORD_OLDER;
        record_word(p, true, now);
    }
}

static void on_record(struct peer *p, const uint8_t digest[DISCO_RECORD_LEN], uint64_t now)
{
    bool changed = p->disco.record_said != PEER_RECORD_DIGEST ||
                   memcmp(p->disco.record_digest, digest, DISCO_RECORD_LEN);

    p->disco.record_said = PEER_RECORD_DIGEST;
    memcpy(p->disco.record_digest, digest, DISCO_RECORD_LEN);
    record_word(p, changed, now);
}

static bool same_names(const struct peer *p, const struct disco_names *n)
{
    if (p->disco.n_names != n->n)
        return false;
    for (unsigned i = 0; i < n->n; i++)
        if (strcmp(p->disco.names[i], n->name[i]))
            return false;
    return true;
}

/* The names p's machine goes by: kept as p says them (whether they reach
 * the hosts block is membership's call: a name another node claims, or
 * the cluster file gives, is not written). */
static void on_names(struct peer *p, const struct disco_names *n)
{
    struct device *dev = p->dev;

    if (dev->cluster.hostnames_off)
        return;
    if (same_names(p, n))
        return;
    memset(p->disco.names, 0, sizeof(p->disco.names));
    memcpy(p->disco.names, n->name, n->n * sizeof(n->name[0]));
    p->disco.n_names = n->n;
    /* A peer may say new names as often as it likes: rate-limited. */
    log_info_peer_rl("peer %s: its machine goes by %s%s%s", p->member.name, n->name[0],
                     n->n > 1 ? ", " : "", n->n > 1 ? n->name[1] : "");
    if (dev->names_changed)
        dev->names_changed(dev);
}

void discovery_receive(struct peer *p, const union endpoint *src, struct peer *via,
                       const struct disco_msg *m, uint64_t now)
{
    if (m->type < DISCO_TYPE_COUNT)
        p->dev->stats.disco_received[m->type]++;
    if (!p->disco.speaks_disco) {
        p->disco.speaks_disco = true;
        discovery_arm(p, 0);   /* its path MTU can be searched now */
    }
    /* Sent to us directly, from its proven endpoint, while we relay: the
     * peer has found a direct path (a ping alone does not say so: it may
     * be a probe). From elsewhere it is challenged first (path.c). */
    if (!via && src && p->path.via && m->type != DISCO_PING && path_proven(p, src))
        path_use_direct(p, src, now);
    if (p->member.probation && m->type != DISCO_CERT) {
        p->dev->stats.disco_bad++;       /* a stranger may only show its certificate */
        return;
    }
    switch (m->type) {
    case DISCO_ENDPOINTS:
        on_endpoints(p, via, &m->endpoints, now);
        break;
    case DISCO_PUNCH:
        on_punch(p, via, &m->punch, now);
        break;
    case DISCO_PING:
        on_ping(p, src, via, &m->ping, now);
        break;
    case DISCO_PONG:
        on_pong(p, src, via, &m->pong, now);
        break;
    case DISCO_RELAY:
        on_relay(p, via, &m->relay, now);
        break;
    case DISCO_NAMES:
        on_names(p, &m->names);
        break;
    case DISCO_FEATURES:
        on_features(p, m->features, now);
        break;
    case DISCO_RECORD:
        on_record(p, m->record, now);
        break;
    case DISCO_CERT:
        if (p->dev->cert_said)
            p->dev->cert_said(p, m->cert.text, m->cert.len, now);
        break;
    default:
        p->dev->stats.disco_bad++;   /* RELAYED never gets here */
    }
    /* What it said may change its facts (a pong: working again; its
     * addresses: targets): looked at on the loop's next turn. */
    discovery_arm(p, 0);
}

/* --- the schedule ---------------------------------------------------------------------- */

bool discovery_session_up(struct peer *p, uint64_t now)
{
    uint64_t sent = p->live.tx_bytes;
    /* A session while the peer was reachable all along is a rekey: nothing
     * changed for the others. Else it is new, or back (a session after
     * the handshake gave up, handshake.c), and the others hear of it. */
    bool rekey = !p->live.came_back && p->path.pmtu.max;

    p->live.came_back = false;
    if (!rekey) {
        log_debug_rl("peer %s: new, or back", p->member.name);
        p->disco.introduced = false;     /* the others hear of it as an introduction */
        path_mtu_search(p, now);
        disco_cand_retry(&p->disco.state);   /* new, or back: its addresses may work again */
    }
    disco_session_began(&p->disco.state, rekey, now);
    send_features(p, now);
    send_record(p, now);
    if (p->dev->self_cert)      /* a stranger to p may join so (probation.h) */
        discovery_send_cert(p, p->dev->self_cert, strlen(p->dev->self_cert), now);
    /* A session new to the other side may be with a peer it made anew
     * (our record went and came back there): our names at once, not at
     * the next ENDPOINTS. */
    send_names(p, now);
    discovery_timers(p, now);
    discovery_arm(p, 0);   /* and its relays' facts may have changed (visit) */
    return p->live.tx_bytes != sent;
}

void discovery_want_session(struct peer *p, bool sent, uint64_t now)
{
    if (discovery_working(p, now) || (!discovery_has_targets(p) && !discovery_relay_known(p, now)))
        return;
    if (disco_attempt(&p->disco.state, sent, now))
        discovery_arm(p, 0);
}

static void facts_of(const struct peer *p, uint64_t now, struct disco_facts *f)
{
    struct disco_endpoint cur, t[DISCO_CANDS_MAX];

    f->session = peer_can_send(p, now);
    f->working = discovery_working(p, now);
    f->path = path_of(p);
    /* A relay that lost its session, or stopped answering: as no path. */
    if (f->path == DISCO_PATH_RELAY && !discovery_relay_good(p->path.via, now))
        f->path = DISCO_PATH_NONE;
    /* While it is being reached: a relay offered, or one to guess. */
    f->relay_known = p->disco.state.attempt_ns && !f->working ? discovery_relay_known(p, now)
                                                        : discovery_relay_next(p, now) != NULL;
    f->can_upgrade = f->path == DISCO_PATH_DIRECT && discovery_to_disco(&p->path.endpoint, &cur) &&
                     !disco_cand_is_local(&p->disco.state, &cur) && targets(p, true, t) > 0;
    f->idle_ping_s = discovery_idle_ping_s(p, now);
}

static void ping(struct peer *p, uint64_t now)
{
    struct disco_msg *m = ping_msg(p->dev, 0);

    if (send_disco(p, m, NULL, now) == 0)
        disco_ping_sent(&p->disco.state, m->ping.txid, NULL, now);
}

/* The path MTU search may send a probe on the path: a ddpnet peer with a
 * session. */
static bool can_probe_mtu(const struct peer *p, uint64_t now)
{
    return p->disco.speaks_disco && p->path.pmtu.max && peer_can_send(p, now) && path_usable(p) &&
           (p->path.via || p->path.endpoint_proven);
}

/* A path that carries no data is not confirmed (RFC 8899 lets the
 * confirmation timer rest while nothing is sent): an idle peer's path
 * costs no probes (two a minute, and their answers, otherwise: 40% of an
 * idle cluster's datagrams), and its confirmation comes as soon as data
 * flows again (data armed the peer anew: timers.c). */
static bool mtu_confirm_rests(const struct peer *p, uint64_t now)
{
    return pmtu_only_confirm(&p->path.pmtu) && discovery_idle_ping_s(p, now);
}

/* A probe of a direct path went unanswered: what does the kernel know of
 * that destination now (ICMP "fragmentation needed" / "packet too big"
 * about our packets lowers its MTU)? Its word, less the tunnel's
 * overhead, narrows the search (pmtu_told); the probes still check it. */
static void heed_the_network(struct peer *p, uint64_t now)
{
    struct device *dev = p->dev;
    unsigned mtu, overhead;

    if (!dev->route_mtu || p->path.via || !p->path.pmtu.probe_size || !p->path.pmtu.tries ||
        now < pmtu_next(&p->path.pmtu) || dev->route_mtu(dev->route_ctx, &p->path.endpoint, &mtu))
        return;
    overhead = path_tunnel_overhead(p->path.endpoint.sa.sa_family == AF_INET6);
    if (mtu > overhead && mtu - overhead < p->path.pmtu.hi) {
        log_debug_rl("peer %s: the network carries %u-byte packets to it at most", p->member.name,
                     mtu);
        pmtu_told(&p->path.pmtu, (uint16_t)(mtu - overhead), now);
    }
}

/* The path MTU search's probe, when one is due: a PING padded so that its
 * inner packet is exactly the size tried, sealed without further padding
 * (pmtu.h). Its PONG is not a ping's: on_pong gives it to the search. */
static void mtu_probe(struct peer *p, uint64_t now)
{
    struct disco_msg *m;
    size_t fixed = path_inner_ip_len(p->dev) + DISCO_HEADER_LEN + DISCO_TXID_LEN + 1u;
    uint64_t id;
    uint16_t size;

    struct pmtu was = p->path.pmtu;

    randombytes_buf(&id, sizeof(id));
    if (!can_probe_mtu(p, now) || mtu_confirm_rests(p, now))
        return;
    heed_the_network(p, now);
    size = pmtu_due(&p->path.pmtu, id, p->disco.state.rtt_ns, now);
    log_mtu_changed(p, &was);
    if (!size || size < fixed)
        return;
    m = ping_msg(p->dev, DISCO_PING_F_MTU);
    m->ping.txid = id;
    m->ping.pad = (uint16_t)(size - fixed);
    send_disco_limited(p, m, NULL, size, now);
}

/* Relayed: every direct candidate; direct to a public address: the local
 * ones (a LAN path beats the way round through the NAT). */
static void probe(struct peer *p, const struct disco_facts *f, uint64_t now)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];
    unsigned n;

    disco_cand_expire(&p->disco.state, now);
    n = targets(p, f->path == DISCO_PATH_DIRECT, t);
    for (unsigned i = 0; i < n; i++)
        if (p->path.via || !discovery_is_endpoint(p, &t[i]))
            send_probe(p, &t[i], false, now);
}

/* What a challenge of `to` takes on the wire: probe_msg's PING, sealed. */
static uint32_t challenge_len(const struct peer *p, const struct disco_endpoint *to)
{
    size_t plain = path_inner_ip_len(p->dev) + DISCO_HEADER_LEN + DISCO_TXID_LEN + 1u +
                   endpoint_len(to);

    return (uint32_t)transport_sealed_len_limited(plain, path_mtu(p));
}

/* When p's unproven source is to be challenged (UINT64_MAX: not now). */
static uint64_t challenge_at(const struct peer *p, uint64_t now)
{
    if (!peer_can_send(p, now))
        return UINT64_MAX;
    return disco_challenge_at(&p->path.unproven, p->disco.speaks_disco,
                              challenge_len(p, &p->path.unproven.src));
}

/* A challenge to p's unproven source, when one is due and its bytes pay
 * for it: a probe PING there, whose PONG from there proves it (on_pong
 * makes it the path). */
static void challenge(struct peer *p, uint64_t now)
{
    struct disco_endpoint to = p->path.unproven.src;
    struct disco_msg *m;
    union endpoint ep;

    if (now < challenge_at(p, now))
        return;
    if (!discovery_from_disco(&to, &ep) || path_proven(p, &ep)) {
        disco_unproven_clear(&p->path.unproven);
        return;
    }
    /* Marked sent first: whatever fails below, it is not due again at
     * once (the loop would spin). */
    disco_challenge_sent(&p->path.unproven, now);
    if (!disco_unproven_spend(&p->path.unproven, &to, challenge_len(p, &to)))
        return;
    m = probe_msg(p->dev, &to, DISCO_PING_F_CHALLENGE);
    log_debug_rl("peer %s: a new source, challenged", p->member.name);
    if (send_disco(p, m, &ep, now) == 0)
        disco_ping_sent(&p->disco.state, m->ping.txid, &to, now);
}

void discovery_timers(struct peer *p, uint64_t now)
{
    struct disco_facts f;
    unsigned act;

    challenge(p, now);
    disco_cand_expire(&p->disco.state, now);
    /* A relay on trial that brought no answer failed: the next one is
     * tried at once. */
    if (disco_relay_trial_over(&p->disco.relays, now)) {
        p->dev->stats.relay_trials_failed++;
        if (!discovery_working(p, now))
            discovery_try_relay(p, now);
    }
    /* The relay in use lost its own session with us, or the peer stopped
     * answering through it (whatever the relay says of itself): dropped,
     * and the next tried at once. */
    if (p->path.via && (!discovery_relay_good(p->path.via, now) ||
                        (peer_can_send(p, now) && !discovery_working(p, now)))) {
        path_drop_relay(p, now);
        discovery_try_relay(p, now);
    }
    facts_of(p, now, &f);
    /* A session whose path stopped answering: find another. */
    if (f.session && !f.working)
        discovery_want_session(p, false, now);
    act = disco_tick(&p->disco.state, &f, p->dev->disco.gen, now);
    if ((act & DISCO_DO_RELAY) && !disco_relay_on_trial(&p->disco.relays, now) &&
        discovery_try_relay(p, now)) {
        /* the initiation went to the candidates too */
    } else if (act & DISCO_DO_PUNCH) {
        p->dev->disco.core->punch(p, now);
    }
    if (act & DISCO_DO_PROBE)
        probe(p, &f, now);
    if (act & DISCO_DO_PING)
        ping(p, now);
    mtu_probe(p, now);
    /* A peer that never spoke disco gets ENDPOINTS while it might still. */
    if ((act & DISCO_DO_ENDPOINTS) &&
        (p->disco.speaks_disco || p->disco.state.unanswered < DISCO_PING_UNANSWERED_MAX))
        send_endpoints(p, now);
}

static uint64_t next_timer(const struct peer *p, uint64_t now)
{
    struct disco_facts f;

    facts_of(p, now, &f);
    uint64_t next = disco_next(&p->disco.state, &f, p->dev->disco.gen);
    uint64_t c = challenge_at(p, now);
    if (c < next)
        next = c;
    if (can_probe_mtu(p, now) && !mtu_confirm_rests(p, now) && pmtu_next(&p->path.pmtu) &&
        pmtu_next(&p->path.pmtu) < next)
        next = pmtu_next(&p->path.pmtu);
    /* The relays' (discovery_timers): a trial's end, and the relay in use
     * gone bad, which is dropped at once. */
    if (p->disco.relays.trial &&
        p->disco.relays.trial_ns + DISCO_RELAY_TRIAL_MS * NS_PER_MS < next)
        next = p->disco.relays.trial_ns + DISCO_RELAY_TRIAL_MS * NS_PER_MS;
    if (p->path.via && !discovery_relay_good(p->path.via, now))
        next = now;
    /* A session whose path stopped answering: the attempt to find another
     * begins at once (discovery_want_session), where it has somewhere to
     * look. */
    if (f.session && !f.working && !p->disco.state.attempt_ns &&
        (discovery_has_targets(p) || discovery_relay_known(p, now)))
        next = now;
    return next;
}

/* The earlier of at and when, counting only a when still to come. */
static uint64_t sooner(uint64_t at, uint64_t when, uint64_t now)
{
    return when > now && when < at ? when : at;
}

/* The next instant at which p's facts (facts_of) change with time alone,
 * no event said: its keypair too old to send with, the peer quiet for too
 * long or a ping of ours lost (discovery_working ends), the peer idle
 * (discovery_idle_ping_s). A deadline cached past one of these could come
 * later than the action the changed facts call for. A relay going bad is
 * the relay's own change: its visit wakes the others (visit). While p is
 * being reached, which relay may be tried changes with other peers' trials
 * and their time: p is looked at again within DISCO_RECHECK_MS. */
static uint64_t facts_change_at(const struct peer *p, uint64_t now)
{
    const struct disco_state *s = &p->disco.state;
    uint64_t at = UINT64_MAX, idle;

    if (p->wg.current)
        at = sooner(at, p->wg.current->birth_ns + WG_REJECT_AFTER_TIME * NS_PER_S, now);
    if (p->live.last_received_ns) {
        idle = clock_stretch(discovery_idle_ping_s(p, now) * NS_PER_S, s->spread);
        at = sooner(at, p->live.last_received_ns +
                            (WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) * NS_PER_S + idle, now);
    }
    if (p->live.last_data_ns)
        at = sooner(at, p->live.last_data_ns + DISCO_IDLE_AFTER_S * NS_PER_S, now);
    for (unsigned i = 0; i < DISCO_PINGS_MAX; i++)
        if (s->pings[i].sent_ns && !s->pings[i].probe && s->pings[i].sent_ns > s->last_pong_ns)
            at = sooner(at, s->pings[i].sent_ns + DISCO_PING_LOST_MS * NS_PER_MS, now);
    if (s->attempt_ns && !discovery_working(p, now))
        at = sooner(at, now + DISCO_RECHECK_MS * NS_PER_MS, now);
    return at;
}

/* Every discovery deadline is set here, so that the device's earliest
 * (next_check_ns) is never later than a peer's: the loop then looks at the
 * peers only when one is due (discovery_run_timers), as timers.c's arm. */
static void arm(struct peer *p, uint64_t when)
{
    p->disco.due_ns = when;
    if (when < p->dev->disco.next_check_ns)
        p->dev->disco.next_check_ns = when;
}

void discovery_arm(struct peer *p, uint64_t when)
{
    if (when < p->disco.due_ns)
        arm(p, when);
}

/* p looked at: its due actions run, its deadline set anew. A relay that
 * turned good or bad changes the facts of the peers it carries or might
 * carry: they are looked at too. */
static void visit(struct peer *p, uint64_t now)
{
    uint64_t next, change;
    bool good;

    p->dev->stats.disco_visits++;
    if (next_timer(p, now) <= now)
        discovery_timers(p, now);
    next = next_timer(p, now);
    change = facts_change_at(p, now);
    arm(p, change < next ? change : next);
    good = discovery_relay_good(p, now);
    if (good != p->disco.relay_good) {
        p->disco.relay_good = good;
        discovery_wake(p->dev);
    }
}

void discovery_wake(struct device *dev)
{
    dev->disco.next_check_ns = 0;
    dev->disco.wake_all = true;
}

/* The device's own deadlines: the look at records record_word asked for,
 * and the local candidates' refresh; returns the earlier. */
static uint64_t device_deadlines(struct device *dev, uint64_t now)
{
    struct disco_device *d = &dev->disco;

    records_look(dev, now);     /* first: it may change the peers */
    if (now >= d->next_local_ns)
        discovery_local_refresh(dev, now);
    return dev->records_due_ns && dev->records_due_ns < d->next_local_ns ? dev->records_due_ns
                                                                        : d->next_local_ns;
}

uint64_t discovery_run_timers(struct device *dev, uint64_t now)
{
    struct disco_device *d = &dev->disco;
    uint64_t next;
    bool all;

    if (now < d->next_check_ns)
        return d->next_check_ns;
    /* Deadlines armed while the peers run (one peer's punch starts
     * another's attempt) lower it again through arm(). */
    d->next_check_ns = UINT64_MAX;
    next = device_deadlines(dev, now);
    all = d->wake_all;
    d->wake_all = false;
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (all || p->disco.due_ns <= now)
            visit(p, now);
        if (p->disco.due_ns < next)
            next = p->disco.due_ns;
    }
    if (next < d->next_check_ns)
        d->next_check_ns = next;
    /* Woken while we ran: look again at once. */
    if (d->wake_all)
        d->next_check_ns = now;
    return d->next_check_ns;
}
