/* SPDX-License-Identifier: MIT */
/* Discovery's schedule, on WireGuard's timer model (timers.h): each peer
 * has one deadline (p->disco.due_ns), set only in disco_due.c, which lowers
 * the device's earliest (disco.next_check_ns). It is the earliest of the
 * peer's next action (next_timer) and of the instants its facts change
 * with time alone (facts_change_at: its keypair too old, answers stopped,
 * idle), so a cached deadline is never later than the true one. Events
 * that change a peer's facts arm it (discovery_arm); a relay whose
 * goodness flips and a device-wide change wake every peer once
 * (discovery_wake). discovery_run_timers visits only due peers. What is
 * due: pings, probes of candidates, hole punching and relays tried, the
 * path MTU search's probes, challenges of unproven sources. */
#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/engine/paths/disco_int.h"

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
    discovery_send_features(p, now);
    discovery_send_record(p, now);
    discovery_send_statements(p, now);
    /* A session new to the other side may be with a peer it made anew
     * (our record went and came back there): our names at once, not at
     * the next ENDPOINTS. */
    discovery_send_names(p, now);
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
                     !disco_cand_is_local(&p->disco.state, &cur) && discovery_targets(p, true, t) > 0;
    f->idle_ping_s = discovery_idle_ping_s(p, now);
}

static void ping(struct peer *p, uint64_t now)
{
    struct disco_msg *m = discovery_ping_msg(p->dev, 0);

    if (discovery_send(p, m, NULL, now) == 0)
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
 * costs no probes (otherwise a large share of an idle cluster's
 * datagrams: bench/README.md), and its confirmation comes as soon as data
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
    discovery_log_mtu_changed(p, &was);
    if (!size || size < fixed)
        return;
    m = discovery_ping_msg(p->dev, DISCO_PING_F_MTU);
    m->ping.txid = id;
    m->ping.pad = (uint16_t)(size - fixed);
    discovery_send_limited(p, m, NULL, size, now);
}

/* Relayed: every direct candidate; direct to a public address: the local
 * ones (a LAN path beats the way round through the NAT). */
static void probe(struct peer *p, const struct disco_facts *f, uint64_t now)
{
    struct disco_endpoint t[DISCO_CANDS_MAX];
    unsigned n;

    disco_cand_expire(&p->disco.state, now);
    n = discovery_targets(p, f->path == DISCO_PATH_DIRECT, t);
    for (unsigned i = 0; i < n; i++)
        if (p->path.via || !discovery_is_endpoint(p, &t[i]))
            discovery_send_probe(p, &t[i], false, now);
}

/* What a challenge of `to` takes on the wire: probe_msg's PING, sealed. */
static uint32_t challenge_len(const struct peer *p, const struct disco_endpoint *to)
{
    size_t plain = path_inner_ip_len(p->dev) + DISCO_HEADER_LEN + DISCO_TXID_LEN + 1u +
                   discovery_endpoint_len(to);

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
void discovery_challenge(struct peer *p, uint64_t now)
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
    m = discovery_probe_msg(p->dev, &to, DISCO_PING_F_CHALLENGE);
    log_debug_rl("peer %s: a new source, challenged", p->member.name);
    if (discovery_send(p, m, &ep, now) == 0)
        disco_ping_sent(&p->disco.state, m->ping.txid, &to, now);
}

void discovery_timers(struct peer *p, uint64_t now)
{
    struct disco_facts f;
    unsigned act;

    discovery_challenge(p, now);
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
        discovery_send_endpoints(p, now);
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
    discovery_set_due(p, change < next ? change : next);
    good = discovery_relay_good(p, now);
    if (good != p->disco.relay_good) {
        p->disco.relay_good = good;
        discovery_wake(p->dev);
    }
}

/* The look record_word asked for, when it is due. */
void discovery_records_look(struct device *dev, uint64_t now)
{
    if (!dev->records_due_ns || now < dev->records_due_ns)
        return;
    dev->records_due_ns = 0;
    dev->records_checked_ns = now;
    dev->records_changed(dev, now);
}

/* What the search found, when it differs from what the log last said:
 * a search ended (a new path's, or one that found another size), or the
 * size in use moved while one was known, or it stopped getting through
 * (was: the search's state before this step of it). A rekey's new search
 * that finds the same size says nothing. The network (a forged ICMP) can
 * make it move: rate-limited. */
void discovery_log_mtu_changed(struct peer *p, const struct pmtu *was)
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

/* The device's own deadlines: the look at records record_word asked for,
 * and the local candidates' refresh; returns the earlier. */
static uint64_t device_deadlines(struct device *dev, uint64_t now)
{
    struct disco_device *d = &dev->disco;

    discovery_records_look(dev, now);     /* first: it may change the peers */
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
     * another's attempt) lower it again (disco_due.c). */
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
