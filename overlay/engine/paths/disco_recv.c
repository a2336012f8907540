/* SPDX-License-Identifier: MIT */
/* The disco messages a peer sends us, each handled (discovery_receive):
 * pings answered, pongs that prove paths and time them, RELAYs forwarded,
 * FEATURES, RECORD and NAMES kept (probes of candidates are sent and
 * paid for in disco_io.c). ENDPOINTS and PUNCH go on to disco_intro.c.
 * Above the room's call circle: nothing in paths/ calls it back. */
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/engine/paths/disco_int.h"

/* A peer's word on its record makes membership look again at most this
 * often. */
#define RECORD_RECHECK_NS (1000ull * NS_PER_MS)
/* And the device's membership looks again at most this often. */
#define RECORDS_COALESCE_NS (100ull * NS_PER_MS)

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
            discovery_challenge(p, now);
        else if (path_unproven_spend(p, src, discovery_sealed_len(p, m)))
            discovery_send(p, m, src, now);
        return;
    }
    discovery_send(p, m, direct ? src : NULL, now);
    /* Probed directly while we relay: probe back at once, so that both
     * sides can move to the direct path within a round trip. */
    if (direct && p->path.via && (pi->flags & DISCO_PING_F_PROBE))
        discovery_send_probe(p, &from, true, now);
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
        discovery_log_mtu_changed(p, &was);
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
        rx_drop(dev, RX_DROP_TWO_HOPS, 1);
        return;
    }
    path_forward(dev, p, device_peer_by_key(dev, rl->key), rl->msg, rl->msg_len, now);
}

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

/* What p takes, said on kp, the session that delivered it: taken only
 * when that is its current one. One sealed on the session before and
 * delayed past a new handshake speaks for a daemon that may be gone: a
 * peer that restarted as stock WireGuard would be sent shard bytes and
 * frames on its new session until the next handshake. */
static void on_features(struct peer *p, const struct noise_keypair *kp, uint32_t features,
                        uint64_t now)
{
    if (!kp || kp != p->wg.current)
        return;
    if (features & DISCO_FEAT_RELAY_FRAMES)
        path_frames_said(p, kp->local_index, features & DISCO_FEAT_DATA_FRAMES);
    else
        p->path.frames_said = false;
    if (!(features & DISCO_FEAT_DATA_FRAMES))
        p->path.data_frames = false;
    p->path.hints_said = features & DISCO_FEAT_SHARD_HINTS;
    p->path.hints_index = kp->local_index;
    /* Several underlay flows (path_flows): it takes them, and whether
     * one of ours reached it; where none did yet, a probe. */
    p->path.flows_said = features & DISCO_FEAT_FLOWS;
    p->path.flows_heard = features & DISCO_FEAT_FLOWS_HEARD;
    p->path.flows_index = kp->local_index;
    if (p->path.flows_said && !p->path.flows_heard)
        discovery_probe_flows(p, now);
    /* A daemon that states no record: etcd's word is taken for its own, as
     * every daemon did before RECORD. */
    if (!(features & DISCO_FEAT_RECORD) && p->disco.record_said != PEER_RECORD_OLDER) {
        p->disco.record_said = PEER_RECORD_OLDER;
        record_word(p, true, now);
    }
}

void discovery_flow_heard(struct peer *p, const struct noise_keypair *kp, uint64_t now)
{
    /* Its direct path carries its packets (path_received's test before
     * a relay is taken), whichever of its ports they left. */
    if (path_direct(p))
        p->path.last_direct_ns = now;
    if (!kp || kp != p->wg.current ||
        (p->path.heard_any && p->path.heard_index == kp->local_index))
        return;
    p->path.heard_any = true;
    p->path.heard_index = kp->local_index;
    discovery_send_features(p, now);
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

void discovery_receive(struct peer *p, const struct noise_keypair *kp, const union endpoint *src,
                       struct peer *via, const struct disco_msg *m, uint64_t now)
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
        rx_drop(p->dev, RX_DROP_STRANGER, 1);   /* it may only show its certificate */
        return;
    }
    switch (m->type) {
    case DISCO_ENDPOINTS:
        discovery_on_endpoints(p, via, &m->endpoints, now);
        break;
    case DISCO_PUNCH:
        discovery_on_punch(p, via, &m->punch, now);
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
        on_features(p, kp, m->features, now);
        break;
    case DISCO_RECORD:
        on_record(p, m->record, now);
        break;
    case DISCO_CERT:
        if (p->dev->cert_said)
            p->dev->cert_said(p, m->cert.text, m->cert.len, now);
        break;
    case DISCO_REVOKED:
        if (p->dev->revoked_said)
            p->dev->revoked_said(p, &m->revoked, now);
        break;
    default:
        rx_drop(p->dev, RX_DROP_DISCO, 1);   /* RELAYED never gets here */
    }
    /* What it said may change its facts (a pong: working again; its
     * addresses: targets): looked at on the loop's next turn. */
    discovery_arm(p, 0);
}
