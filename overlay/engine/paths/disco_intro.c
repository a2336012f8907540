/* SPDX-License-Identifier: MIT */
/* Introductions: what a node passes on of one peer to another (ENDPOINTS'
 * peer records, PUNCH), what it learns of a peer from the others and from
 * its registry record (candidates, relays offered), and when a peer is
 * introduced again. A member's word about another is a hint, paid for
 * (disco_relay.c: discovery_hint_allows). */
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/engine/paths/disco_int.h"
/* Where `about` may be reached: where we see it, then its own addresses. */
static uint8_t candidates_of(struct peer *about, struct disco_endpoint *out)
{
    unsigned n = 0;

    if (discovery_to_disco(&about->path.endpoint, &out[0]))
        n++;
    n += discovery_pass_locals(about, out + n, DISCO_MAX_CANDIDATES - n);
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
        discovery_send(to, m, NULL, now);
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
 * rather than two per peer from every peer); and unless another member
 * introduced x to us lately: the first to hear of x tells the others,
 * and those who then reach x stay quiet (one introducer per newcomer,
 * not every member). */
static void introduce(struct peer *x, uint64_t now)
{
    struct device *dev = x->dev;
    bool x_listed = at_listed(x);

    /* Another member introduced x to us lately: it told the others too. */
    if (!disco_intro_news(&x->disco.state, now) ||
        !disco_intro_key_news(&dev->disco.intro_keys, x->public_key, now)) {
        log_debug_rl("peer %s: introduced by another member already", x->member.name);
        return;
    }
    log_debug_rl("peer %s: introduced to the peers we reach", x->member.name);
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *y = dev->peers[i];
        uint64_t id;

        if (y == x || !discovery_recordable(y, now) || (x_listed && at_listed(y)))
            continue;
        randombytes_buf(&id, sizeof(id));
        send_punch(y, x, id, now);
        send_punch(x, y, id, now);
    }
}


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
    if (!x->disco.introduced && discovery_recordable(x, now) &&
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
    /* Its PONG to our challenge was refused while it was a stranger: its
     * endpoint is proven (and it introduced) at once, not a pace later. */
    disco_challenge_void(&p->path.unproven);
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

void discovery_on_endpoints(struct peer *x, struct peer *via, const struct disco_endpoints *e,
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

void discovery_on_punch(struct peer *x, struct peer *via, const struct disco_punch *pu,
                     uint64_t now)
{
    struct peer *q = device_peer_by_key(x->dev, pu->key);

    if (!q)   /* not known yet: its certificate may come after (introduce) */
        disco_intro_key_heard(&x->dev->disco.intro_keys, pu->key, now);
    if (!q || q == x)
        return;
    disco_intro_heard(&q->disco.state, now);
    for (unsigned i = 0; i < pu->n_cand; i++)
        if (disco_cand_add(&q->disco.state, &pu->cand[i], false, x->id, now))
            discovery_arm(q, 0);   /* new targets: probes may be due */
    if (!via && path_direct(x))
        discovery_offer_relay(q, x, now);
    if (!discovery_working(q, now))
        discovery_want_session(q, false, now);
}
