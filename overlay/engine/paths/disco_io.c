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
 * This file: the buffers, sealing and sending, and the messages built
 * (what we say of ourselves and of the peers we reach). What is received
 * is disco_recv.c's, introductions disco_intro.c's, the schedule
 * disco_sched.c's, relays and hints disco_relay.c's (disco_int.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/base/wire.h"
#include "overlay/engine/paths/disco_int.h"

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

unsigned discovery_targets(const struct peer *p, bool only_local, struct disco_endpoint *out)
{
    const struct disco_device *d = &p->dev->disco;

    return disco_targets(&p->disco.state, d->local, d->n_local, only_local, out, DISCO_CANDS_MAX);
}

bool discovery_has_targets(const struct peer *p)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];

    return discovery_targets(p, false, t) > 0;
}


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
int discovery_send_limited(struct peer *p, const struct disco_msg *m,
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

int discovery_send(struct peer *p, const struct disco_msg *m, const union endpoint *to,
                      uint64_t now)
{
    return discovery_send_limited(p, m, to, path_mtu(p), now);
}

unsigned discovery_spray(struct peer *p, const uint8_t *msg, uint32_t len, uint64_t now)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];
    unsigned n, sent = 0;
    union endpoint ep;

    disco_cand_expire(&p->disco.state, now);
    n = discovery_targets(p, false, t);
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
unsigned discovery_pass_locals(struct peer *p, struct disco_endpoint *out, unsigned max)
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
bool discovery_recordable(const struct peer *p, uint64_t now)
{
    return path_direct(p) && p->path.endpoint_proven && peer_can_send(p, now) &&
           p->disco.speaks_disco;
}

static bool record_of(struct peer *p, uint64_t now, struct disco_peer *rec)
{
    if (!discovery_recordable(p, now))
        return false;
    memcpy(rec->key, p->public_key, WG_KEY_LEN);
    rec->has_observed = discovery_to_disco(&p->path.endpoint, &rec->observed);
    rec->direct = true;
    rec->n_local = (uint8_t)discovery_pass_locals(p, rec->local, DISCO_MAX_LOCAL);
    return true;
}

size_t discovery_endpoint_len(const struct disco_endpoint *e)
{
    return e->family == DISCO_FAMILY_IPV4 ? DISCO_ENDPOINT_V4_LEN : DISCO_ENDPOINT_V6_LEN;
}

static size_t record_len(const struct disco_peer *rec)
{
    size_t n = WG_KEY_LEN + 2u + (rec->has_observed ? discovery_endpoint_len(&rec->observed) : 0);

    for (unsigned i = 0; i < rec->n_local; i++)
        n += discovery_endpoint_len(&rec->local[i]);
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
struct disco_msg *discovery_ping_msg(struct device *dev, uint8_t flags)
{
    struct disco_msg *m = dev->disco.out_msg;

    m->type = DISCO_PING;
    memset(&m->ping, 0, sizeof(m->ping));
    randombytes_buf(&m->ping.txid, sizeof(m->ping.txid));
    m->ping.flags = flags;
    return m;
}

/* What m takes on the wire to p, sealed. */
uint32_t discovery_sealed_len(const struct peer *p, const struct disco_msg *m)
{
    int n = disco_encoded_len(m);

    return n < 0 ? UINT32_MAX
                 : (uint32_t)transport_sealed_len_limited(path_inner_ip_len(p->dev) + (size_t)n,
                                                          path_mtu(p));
}

/* A probe of `to` (flags: more, DISCO_PING_F_CHALLENGE): padded as long
 * as the PONG that answers it, which names `to`, so that a node that never
 * heard from us there can answer it at no more than it cost (on_ping). */
struct disco_msg *discovery_probe_msg(struct device *dev, const struct disco_endpoint *to,
                                   uint8_t flags)
{
    struct disco_msg *m = discovery_ping_msg(dev, DISCO_PING_F_PROBE | flags);

    m->ping.pad = (uint16_t)discovery_endpoint_len(to);
    return m;
}

void discovery_send_names(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;

    if (!dev->n_self_names || dev->cluster.hostnames_off)
        return;
    m->type = DISCO_NAMES;
    m->names.n = dev->n_self_names;
    memcpy(m->names.name, dev->self_names, sizeof(m->names.name));
    discovery_send(x, m, NULL, now);
}

/* Said on each session, since a peer that restarts may be another
 * version: it sends frames only on a session where we said we take them,
 * and waits for our RECORD only where we said we state one. */
static struct disco_msg *features_msg(struct peer *x)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;
    const struct noise_keypair *kp = x->wg.current;

    m->type = DISCO_FEATURES;
    m->features = DISCO_FEAT_RECORD | DISCO_FEAT_FLOWS |
                  (dev->shards > 1 ? DISCO_FEAT_SHARD_HINTS : 0);
    if (!dev->relay_frames_off)
        m->features |= DISCO_FEAT_RELAY_FRAMES |
                       (dev->data_frames_off ? 0 : DISCO_FEAT_DATA_FRAMES);
    if (kp && x->path.heard_any && x->path.heard_index == kp->local_index)
        m->features |= DISCO_FEAT_FLOWS_HEARD;
    return m;
}

void discovery_send_features(struct peer *x, uint64_t now)
{
    discovery_send(x, features_msg(x), NULL, now);
}

/* Our FEATURES once more, from our first extra source port (byte 3: flow
 * 1) to x's endpoint: whether it arrives tells whether x's side lets our
 * other 5-tuples in (a NAT in front of x may not), which x says back
 * (FLOWS_HEARD) before path_flows spreads anything. Sent when x said it
 * takes flows but heard none: at most once per FEATURES of x's. */
void discovery_probe_flows(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    int n;

    if (dev->flow_count < 2 || !path_direct(x) || !x->path.endpoint_proven ||
        !peer_can_send(x, now) || x->member.probation)
        return;
    if ((n = seal_disco(x, features_msg(x), path_mtu(x), now)) < 0)
        return;
    dev->disco.core->sent(x, (uint64_t)n, false, now);
    dev->disco.scratch[WG_FLOW_OFFSET] = 1;
    loop_send_flow_now(dev->loop, 1, dev->disco.scratch, (uint32_t)n, &x->path.endpoint);
}

/* Our registry record, as we put it in etcd: the peers count it only
 * once we said so on a session of our key (overlay/registry/vouch.h). */
void discovery_send_record(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    struct disco_msg *m = dev->disco.out_msg;

    if (!dev->states_record)
        return;
    m->type = DISCO_RECORD;
    memcpy(m->record, dev->self_record, DISCO_RECORD_LEN);
    discovery_send(x, m, NULL, now);
}

void discovery_say_leaving(struct device *dev, uint64_t now)
{
    if (!dev->states_record)
        return;
    memset(dev->self_record, 0, DISCO_RECORD_LEN);
    for (size_t i = 0; i < dev->n_peers; i++)
        discovery_send_record(dev->peers[i], now);
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
    discovery_send(x, m, !x->path.via && x->path.endpoint.sa.sa_family != AF_UNSPEC ?
               &x->path.endpoint : NULL, now);
}

void discovery_send_statements(struct peer *x, uint64_t now)
{
    const char *r = x->dev->revocations_said;

    if (x->dev->self_cert)      /* a stranger to x may join so (probation.h) */
        discovery_send_cert(x, x->dev->self_cert, strlen(x->dev->self_cert), now);
    while (r && *r) {
        size_t len = strcspn(r, "\n");
        discovery_send_cert(x, r, len, now);
        r += len + (r[len] == '\n');
    }
    if (x->dev->revoked_digest_on) {   /* a peer holding others says them (REVOKED) */
        struct disco_msg *m = x->dev->disco.out_msg;
        m->type = DISCO_REVOKED;
        m->revoked = x->dev->revoked_digest;
        discovery_send(x, m, !x->path.via && x->path.endpoint.sa.sa_family != AF_UNSPEC ?
                   &x->path.endpoint : NULL, now);
    }
}

/* Records go in as many messages as it takes to keep each within the
 * path's MTU. */
void discovery_send_endpoints(struct peer *x, uint64_t now)
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
            discovery_send(x, m, NULL, now);
            size = endpoints_head(x, m);
        }
        m->endpoints.peers[m->endpoints.n_peers++] = rec;
        size += len;
    }
    discovery_send(x, m, NULL, now);
    discovery_send_names(x, now);
    discovery_send_features(x, now);
    discovery_send_record(x, now);
}

/* A probe of the candidate `to`: paid for by the members that named it
 * (discovery_hint_allows), or, where the peer's authentic packet just came from
 * (answered), free when that is proven, else from what came from there
 * (path_unproven_spend). */
void discovery_send_probe(struct peer *p, const struct disco_endpoint *to, bool answered,
                       uint64_t now)
{
    struct disco_msg *m;
    union endpoint ep;

    if (!discovery_from_disco(to, &ep))
        return;
    m = discovery_probe_msg(p->dev, to, 0);
    uint32_t sealed = discovery_sealed_len(p, m);
    if (answered ? !path_unproven_spend(p, &ep, sealed) : !discovery_hint_allows(p, to, sealed, now))
        return;
    if (discovery_send(p, m, &ep, now) == 0)
        disco_ping_sent(&p->disco.state, m->ping.txid, to, now);
}
