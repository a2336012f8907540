/* SPDX-License-Identifier: MIT */
/* Discovery's choice of relays and what members' hints may cost: which
 * relay a peer that does not answer directly is tried through (offered
 * by members, or guessed among those we reach when none was), and the
 * credit that pays for sends to addresses that never answered (an
 * informant's, or the registry's), within the device's bucket (trust.c
 * decides; this applies it to peers). */
#include <string.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/engine/paths/disco_int.h"

/* A relay to choose: it carries messages, and answers. */
bool discovery_relay_good(const struct peer *r, uint64_t now)
{
    return path_relay_ready(r, now) && discovery_working(r, now);
}

/* The relay to try next for p (trust.c's order), or NULL. */
struct peer *discovery_relay_next(const struct peer *p, uint64_t now)
{
    bool usable[DISCO_RELAYS_MAX];

    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++) {
        const struct peer *r = device_peer_by_id(p->dev, p->disco.relays.slot[i].id);
        usable[i] = r && r != p && discovery_relay_good(r, now);
    }
    return device_peer_by_id(p->dev, disco_relay_pick(&p->disco.relays, usable,
                                                      p->path.via ? p->path.via->id : 0, now));
}

/* Members looked at per guess (relay_guess): the work stays bounded in a
 * large cluster whose members we mostly cannot reach. */
#define RELAY_GUESS_SCAN 32u

/* r could relay for p: a ddpnet member we reach, that answers us. */
static bool guessable(const struct peer *p, const struct peer *r, uint64_t now)
{
    return r != p && r->disco.speaks_disco && discovery_relay_good(r, now);
}

/* No member told us it reaches p, and p does not answer us: the ddpnet
 * members we reach and that answer us are the relays to try, up to a slot
 * each (trust.c's trials sort them out: one that does not reach p directly
 * refuses to forward, and its trial fails). Members at the endpoints the
 * cluster lists are not introduced to each other (introduce), and what a
 * member says of third peers comes only with its periodic ENDPOINTS, so
 * without this two members kept apart by a firewall, both at their listed
 * endpoints, had no relay until the next ENDPOINTS of one that reaches
 * both -- or none at all when that one came up last. The scan starts at a
 * random member so that nodes spread their relaying over the cluster.
 * Returns whether a relay is known now. */
static bool relay_guess(struct peer *p, uint64_t now)
{
    struct device *dev = p->dev;
    size_t n = dev->n_peers, i;
    unsigned looked = 0, added = 0;

    if (n < 2)
        return false;
    i = randombytes_uniform((uint32_t)n);
    for (; looked < n && looked < RELAY_GUESS_SCAN && added < DISCO_RELAYS_MAX;
         looked++, i = (i + 1) % n) {
        struct peer *r = dev->peers[i];
        if (!guessable(p, r, now))
            continue;
        disco_relay_claim(&p->disco.relays, r->id, now);
        added++;
    }
    if (added)
        log_debug_rl("peer %s: no member said it reaches it; %u members we reach are the "
                     "relays to try", p->member.name, added);
    return discovery_relay_next(p, now) != NULL;
}

/* Whether discovery_try_relay would find a relay for p, offered or guessed (the
 * guess's own bound on the members looked at). */
bool discovery_relay_known(const struct peer *p, uint64_t now)
{
    const struct device *dev = p->dev;

    if (discovery_relay_next(p, now))
        return true;
    for (size_t i = 0; i < dev->n_peers && i < RELAY_GUESS_SCAN; i++)
        if (guessable(p, dev->peers[i], now))
            return true;
    return false;
}

/* r says it reaches p directly: a relay to try, no more (trust.c). */
void discovery_offer_relay(struct peer *p, struct peer *r, uint64_t now)
{
    if (r == p)
        return;
    disco_relay_claim(&p->disco.relays, r->id, now);
    discovery_arm(p, 0);
}

/* Tries the next relay for p: an initiation goes through it (and through
 * it again with every initiation while it is on trial); the relay is used
 * once the answer comes back through it (path_received). */
bool discovery_try_relay(struct peer *p, uint64_t now)
{
    struct peer *r = discovery_relay_next(p, now);

    if (!r && relay_guess(p, now))
        r = discovery_relay_next(p, now);
    if (!r)
        return false;
    log_debug_rl("peer %s: trying the relay %s", p->member.name, r->member.name);
    disco_relay_trial(&p->disco.relays, r->id, now);
    p->dev->disco.core->initiate(p, now);
    return true;
}

/* The credit an informant pays from: a member's, or the registry's
 * (refilled by time: DISCO_REGISTRY_CREDIT_*); NULL for a member that
 * left. */
static uint32_t *informant_credit(struct device *dev, disco_id id, uint64_t now)
{
    struct disco_device *d = &dev->disco;
    struct peer *who;

    if (id != DISCO_ID_REGISTRY)
        return (who = device_peer_by_id(dev, id)) ? &who->disco.hint_credit : NULL;
    if (!d->registry_credit_ns) {
        d->registry_credit = DISCO_REGISTRY_CREDIT_MAX;
        d->registry_credit_ns = now ? now : 1;
    } else if (now > d->registry_credit_ns) {
        uint64_t add = (now - d->registry_credit_ns) * DISCO_REGISTRY_CREDIT_PER_SEC /
                       WG_NSEC_PER_SEC;
        if (add) {   /* else the time is kept, so no fraction is lost */
            d->registry_credit = (uint32_t)(d->registry_credit + add < DISCO_REGISTRY_CREDIT_MAX
                                                ? d->registry_credit + add
                                                : DISCO_REGISTRY_CREDIT_MAX);
            d->registry_credit_ns = now;
        }
    }
    return &d->registry_credit;
}

/* Whether a send of len bytes to t, a candidate of p, may go. Free to an
 * address that answered (or to p's endpoint, which came from p's own
 * authentic packets or from the operator); else within what its reports
 * allow it, paid from the credit of a member that told us of it (or of
 * the registry, for a record's), within the device's bucket (trust.c). */
bool discovery_hint_allows(struct peer *p, const struct disco_endpoint *t, uint32_t len,
                        uint64_t now)
{
    struct device *dev = p->dev;
    struct disco_cand *c;

    if (discovery_is_endpoint(p, t))
        return true;
    if (!(c = disco_cand_get(&p->disco.state, t)))
        return false;
    if (disco_cand_answers(c, now))
        return true;
    for (unsigned i = 0; i < 2 && c->allowance >= len; i++) {
        uint32_t *credit = informant_credit(dev, c->informant[i], now);
        if (!credit || *credit < len)
            continue;
        if (!disco_bucket_take(&dev->disco.unanswered, len, now))
            break;
        disco_credit_spend(credit, len);
        disco_cand_spend(c, len);
        if (c->tries < UINT8_MAX)
            c->tries++;
        dev->stats.hint_bytes += len;
        return true;
    }
    dev->stats.hint_refused++;
    return false;
}

void discovery_note_answer(struct peer *p, const union endpoint *src, uint64_t now)
{
    struct disco_endpoint from;

    if (discovery_to_disco(src, &from))
        disco_cand_answered(&p->disco.state, &from, now);
}
