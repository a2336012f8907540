/* SPDX-License-Identifier: MIT */
/* Peers: one per other node of the cluster. Each holds its handshake, up
 * to three keypairs (current, previous, next, as the Linux module keeps
 * them), its endpoint, timers, counters and the packets waiting for a
 * session. The struct lives in libsodium's guarded memory since it holds
 * keys. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/timers.h"

struct peer *peer_create(struct device *dev, const struct cluster *model,
                         const struct cluster_node *node)
{
    struct peer *p = sodium_malloc(sizeof(*p));

    if (!p)
        return NULL;
    memset(p, 0, sizeof(*p));
    if (noise_handshake_init(&p->wg.handshake, dev->local, node->public_key, NULL)) {
        sodium_free(p);
        return NULL;
    }
    p->dev = dev;
    snprintf(p->member.name, sizeof(p->member.name), "%s", node->name);
    memcpy(p->public_key, node->public_key, WG_KEY_LEN);
    p->member.address = node->address;
    p->member.groups = node->groups;
    p->id = ++dev->next_peer_id;
    p->wg.persistent_keepalive = (uint16_t)cluster_node_keepalive(model, node);
    p->path.endpoint.sa.sa_family = AF_UNSPEC;
    cookie_maker_init(&p->wg.cookie, node->public_key);
    /* Its own pace for periodic work (clock_stretch). */
    p->disco.state.spread = (uint8_t)randombytes_uniform(256);
    p->path.pmtu.spread = p->disco.state.spread;
    return p;
}

void peer_free(struct peer *p)
{
    if (!p)
        return;
    peer_drop_staged(p);
    sodium_free(p);   /* wipes the keys */
}

void peer_remove(struct peer *p, struct peer *const *stay, size_t n_stay, uint64_t now)
{
    for (size_t k = 0; k < n_stay; k++) {
        struct peer *q = stay[k];
        if (q->path.via == p)
            path_drop_relay(q, now);
        disco_relay_forget(&q->disco.relays, p->id);
    }
    log_notice("peer %s: removed from the cluster; its sessions are wiped", p->member.name);
    peer_clear_keys(p);
    peer_free(p);
}

/* --- keypairs ------------------------------------------------------------------ */

static void drop_keypair(struct peer *p, struct noise_keypair **slot)
{
    if (!*slot)
        return;
    index_remove(&p->dev->indices, (*slot)->local_index);
    transport_keypair_clear(*slot);
    *slot = NULL;
}

static struct noise_keypair *free_storage(struct peer *p)
{
    for (int i = 0; i < 3; i++) {
        struct noise_keypair *k = &p->wg.keypairs[i];
        if (k != p->wg.current && k != p->wg.previous && k != p->wg.next)
            return k;
    }
    return NULL;   /* cannot happen: callers drop one first */
}

void peer_install_keypair(struct peer *p, struct noise_keypair *kp)
{
    struct noise_keypair *slot;

    if (kp->is_initiator) {
        /* The new one is used at once; the one we had stays acceptable. A
         * waiting next (never confirmed) becomes previous instead. */
        drop_keypair(p, &p->wg.previous);
        if (p->wg.next) {
            p->wg.previous = p->wg.next;
            p->wg.next = NULL;
            drop_keypair(p, &p->wg.current);
        } else {
            p->wg.previous = p->wg.current;
        }
        slot = free_storage(p);
        p->wg.current = slot;
    } else {
        /* Not usable until the initiator sends with it (confirmation). */
        drop_keypair(p, &p->wg.next);
        drop_keypair(p, &p->wg.previous);
        slot = free_storage(p);
        p->wg.next = slot;
    }
    *slot = *kp;
    kp->hinted = NULL;   /* the slot's now (a new keypair has none yet) */
    transport_keypair_clear(kp);
    struct index_entry *e = index_find(&p->dev->indices, slot->local_index);
    if (e)
        e->keypair = slot;
}

bool peer_received_with_keypair(struct peer *p, struct noise_keypair *kp)
{
    if (kp != p->wg.next)
        return false;
    drop_keypair(p, &p->wg.previous);
    p->wg.previous = p->wg.current;
    p->wg.current = p->wg.next;
    p->wg.next = NULL;
    return true;
}

void peer_clear_keys(struct peer *p)
{
    drop_keypair(p, &p->wg.current);
    drop_keypair(p, &p->wg.previous);
    drop_keypair(p, &p->wg.next);
    if (p->wg.handshake.state != NOISE_STATE_ZEROED && p->wg.handshake.local_index)
        index_remove(&p->dev->indices, p->wg.handshake.local_index);
    noise_handshake_reset(&p->wg.handshake);
}

/* --- staged packets ------------------------------------------------------------- */

int peer_stage(struct peer *p, const uint8_t *data, uint32_t len, uint64_t now)
{
    int ret = stage_push(&p->dev->stage, &p->wg.staged, data, len);

    if (!ret)
        timers_staged(p, now);
    return ret;
}

long peer_unstage(struct peer *p, uint8_t *out, size_t cap)
{
    long n = stage_pop(&p->dev->stage, &p->wg.staged, out, cap);

    if (!p->wg.staged.packets)
        p->wg.timers.stage_expiry = 0;
    return n;
}

void peer_drop_staged(struct peer *p)
{
    stage_clear(&p->dev->stage, &p->wg.staged);
    p->wg.timers.stage_expiry = 0;
}

/* When we last heard from it, for the warning: a peer never heard from
 * since we started is likely not set up (or its port is shut); one that
 * was went away. */
static void last_heard(const struct peer *p, uint64_t now, char *buf, size_t len)
{
    if (!p->live.last_received_ns)
        snprintf(buf, len, "never heard from since this node started");
    else
        snprintf(buf, len, "last heard from %llu s ago",
                 (unsigned long long)((now - p->live.last_received_ns) / WG_NSEC_PER_SEC));
}

void peer_give_up(struct peer *p, const char *why, uint64_t now)
{
    unsigned n = p->wg.staged.packets;
    char seen[64];

    peer_drop_staged(p);
    /* Once per time it goes away (a person should look), however often
     * traffic towards it starts another round of initiations after. */
    if (!p->wg.no_answer) {
        last_heard(p, now, seen, sizeof(seen));
        log_warn("peer %s: unreachable: %s (%s); %u waiting packet%s dropped, packets to it "
                 "get ICMP unreachable until a handshake completes", p->member.name, why, seen, n,
                 n == 1 ? "" : "s");
    } else {
        log_debug_rl("peer %s: still unreachable: %s", p->member.name, why);
    }
    p->wg.no_answer = true;
    p->live.reachable = false;
}

/* --- endpoint, counters, settings ------------------------------------------------- */


void peer_set_endpoint(struct peer *p, const struct sockaddr *sa, socklen_t len)
{
    union endpoint e;

    if ((sa->sa_family != AF_INET && sa->sa_family != AF_INET6) || len > sizeof(e))
        return;
    memset(&e, 0, sizeof(e));
    memcpy(&e, sa, len);
    path_set_endpoint(p, &e);
    p->member.listed = e;
    p->path.endpoint_proven = true;   /* the operator's word */
    disco_unproven_clear(&p->path.unproven);
    /* Set by hand: that is the path now, not a relay. */
    p->path.via = NULL;
    disco_endpoints_stale(&p->disco.state);
}

void peer_set_persistent_keepalive(struct peer *p, uint16_t seconds, uint64_t now_ns)
{
    p->wg.persistent_keepalive = seconds;
    timers_persistent_keepalive_set(p, now_ns);
}

void peer_set_psk(struct peer *p, const uint8_t psk[WG_KEY_LEN])
{
    memcpy(p->wg.handshake.psk, psk, WG_KEY_LEN);
    p->wg.has_psk = !sodium_is_zero(psk, WG_KEY_LEN);
}

static void rate_count(struct rate *r, uint64_t bytes, uint64_t now)
{
    if (now - r->window_start_ns >= PEER_RATE_WINDOW_NS) {
        uint64_t elapsed = now - r->window_start_ns;
        /* A window that ended long ago says the rate since is zero. */
        r->bytes_per_sec = elapsed >= 2 * PEER_RATE_WINDOW_NS
                               ? 0
                               : r->window_bytes * WG_NSEC_PER_SEC / elapsed;
        r->window_start_ns = now;
        r->window_bytes = 0;
    }
    r->window_bytes += bytes;
}

uint64_t rate_read(const struct rate *r, uint64_t now_ns)
{
    return now_ns - r->window_start_ns >= 2 * PEER_RATE_WINDOW_NS ? 0 : r->bytes_per_sec;
}

void peer_count_rx(struct peer *p, uint64_t bytes, uint64_t now)
{
    p->live.rx_bytes += bytes;
    p->live.last_received_ns = now;
    /* What it sent us is what its word about others may cost us. */
    disco_credit_earn(&p->disco.hint_credit, bytes);
    rate_count(&p->live.rx_rate, bytes, now);
}

void peer_count_tx(struct peer *p, uint64_t bytes, uint64_t now)
{
    p->live.tx_bytes += bytes;
    p->live.last_sent_ns = now;
    rate_count(&p->live.tx_rate, bytes, now);
}

void peer_sent(struct peer *p, uint64_t bytes, bool data, uint64_t now)
{
    if (bytes)
        peer_count_tx(p, bytes, now);
    timers_any_authenticated_packet_traversal(p, now);
    timers_any_authenticated_packet_sent(p, now);
    if (data)
        timers_data_sent(p, now);
}
