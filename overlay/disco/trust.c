/* SPDX-License-Identifier: MIT */
/* What a member's word about others is worth (disco.h, "what hints may
 * cost" and "relays"). A member may be compromised: what it says of other
 * nodes -- their candidate addresses, that it reaches them directly -- is
 * a hint, acted on at a bounded cost and dropped when it does not answer.
 *
 * Candidates: every byte sent to an address that has not answered is paid
 * from the credit of a member that told us of it, and a member earns
 * DISCO_HINT_FACTOR times what it sent us; so no member can make us send
 * others more than twice what it sent us. The device's bucket bounds such
 * sends in all, whoever pays.
 *
 * Relays: a claim makes a relay a candidate, nothing more. It is tried by
 * sending one message end to end through it (a handshake initiation,
 * sealed by the two ends' keys, which the relay cannot forge or answer);
 * it is used only once the peer's answer came back through it, and it is
 * dropped when answers stop, whatever the relay itself says. A relay that
 * failed waits DISCO_RELAY_PENALTY_S before it is tried again while
 * another may be, so that a hostile one costs a trial now and then, never
 * the path. */
#include <string.h>

#include "overlay/base/clock.h"
#include "overlay/disco/disco.h"


static uint64_t secs(uint64_t s)
{
    return s * WG_NSEC_PER_SEC;
}

/* --- credit ---------------------------------------------------------------------- */

void disco_credit_earn(uint32_t *credit, uint64_t bytes)
{
    uint64_t c = *credit + bytes * DISCO_HINT_FACTOR;

    *credit = (uint32_t)(c < DISCO_HINT_CREDIT_MAX ? c : DISCO_HINT_CREDIT_MAX);
}

bool disco_credit_spend(uint32_t *credit, uint32_t bytes)
{
    if (*credit < bytes)
        return false;
    *credit -= bytes;
    return true;
}

bool disco_bucket_take(struct disco_bucket *b, uint32_t bytes, uint64_t now)
{
    /* Refilled for the time since the last take, in whole bytes. */
    if (!b->last_ns) {
        b->tokens = DISCO_UNANSWERED_BURST;
    } else if (now > b->last_ns) {
        uint64_t add = (now - b->last_ns) * DISCO_UNANSWERED_BYTES_PER_SEC / WG_NSEC_PER_SEC;
        b->tokens = b->tokens + add < DISCO_UNANSWERED_BURST ? b->tokens + add
                                                             : DISCO_UNANSWERED_BURST;
    }
    b->last_ns = now ? now : 1;
    if (b->tokens < bytes)
        return false;
    b->tokens -= bytes;
    return true;
}

/* --- relays ---------------------------------------------------------------------- */

static struct disco_relay_slot *find(struct disco_relays *rs, disco_id id)
{
    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++)
        if (id && rs->slot[i].id == id)
            return &rs->slot[i];
    return NULL;
}

static bool failed_lately(const struct disco_relay_slot *r, uint64_t now)
{
    return r->failed_ns && now - r->failed_ns < secs(DISCO_RELAY_PENALTY_S);
}

static bool stale_claim(const struct disco_relay_slot *r, uint64_t now)
{
    uint64_t last = r->confirmed_ns > r->claimed_ns ? r->confirmed_ns : r->claimed_ns;

    return now - last >= secs(DISCO_CAND_TTL_S);
}

/* The slot a new relay takes: a free one, a stale claim, one that failed
 * lately, or the oldest claim never answered through; NULL when every
 * slot holds a relay that was answered through and is not stale. */
static struct disco_relay_slot *slot_for_new(struct disco_relays *rs, uint64_t now)
{
    struct disco_relay_slot *oldest = NULL;

    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++) {
        struct disco_relay_slot *r = &rs->slot[i];
        if (!r->id || stale_claim(r, now) || failed_lately(r, now))
            return r;
        if (!r->confirmed_ns && (!oldest || r->claimed_ns < oldest->claimed_ns))
            oldest = r;
    }
    return oldest;
}

/* Slots are packed to the front, in the order of arrival. */
static void remove_slot(struct disco_relays *rs, struct disco_relay_slot *r)
{
    if (r->id && rs->trial == r->id)
        rs->trial = 0;
    memmove(r, r + 1, (size_t)(&rs->slot[DISCO_RELAYS_MAX - 1] - r) * sizeof(*r));
    rs->slot[DISCO_RELAYS_MAX - 1] = (struct disco_relay_slot){ 0 };
}

/* A new relay goes after those there. */
static struct disco_relay_slot *add(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = slot_for_new(rs, now);

    if (!r)
        return NULL;
    remove_slot(rs, r);
    for (r = rs->slot; r->id; r++)
        ;
    *r = (struct disco_relay_slot){ .id = id, .claimed_ns = now ? now : 1 };
    return r;
}

void disco_relay_claim(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = find(rs, id);

    if (!id)
        return;
    if (r)
        r->claimed_ns = now ? now : 1;
    else
        add(rs, id, now);
}

/* Whether a is to be tried before b. */
static bool before(const struct disco_relay_slot *a, const struct disco_relay_slot *b)
{
    return a->confirmed_ns > b->confirmed_ns;
}

disco_id disco_relay_pick(const struct disco_relays *rs, const bool usable[DISCO_RELAYS_MAX],
                          disco_id exclude, uint64_t now)
{
    const struct disco_relay_slot *best = NULL, *penalized = NULL;

    for (unsigned i = 0; i < DISCO_RELAYS_MAX; i++) {
        const struct disco_relay_slot *r = &rs->slot[i];
        if (!r->id || r->id == exclude || !usable[i] || stale_claim(r, now))
            continue;
        if (failed_lately(r, now)) {
            if (!penalized || r->failed_ns < penalized->failed_ns)
                penalized = r;
            continue;
        }
        if (!best || before(r, best))
            best = r;
    }
    /* Only failed ones left: the one that failed longest ago, once a
     * handshake's retry time has passed (a relay whose own session with
     * the peer was not up yet fails its first trial). */
    if (!best && penalized && now - penalized->failed_ns >= secs(WG_REKEY_TIMEOUT))
        best = penalized;
    return best ? best->id : 0;
}

void disco_relay_trial(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = find(rs, id);

    if (!r)
        r = add(rs, id, now);
    if (!r)
        return;
    rs->trial = id;
    rs->trial_ns = now ? now : 1;
}

disco_id disco_relay_on_trial(const struct disco_relays *rs, uint64_t now)
{
    if (!rs->trial || now - rs->trial_ns >= DISCO_RELAY_TRIAL_MS * NS_PER_MS)
        return 0;
    return rs->trial;
}

disco_id disco_relay_trial_over(struct disco_relays *rs, uint64_t now)
{
    disco_id id = rs->trial;

    if (!id || disco_relay_on_trial(rs, now))
        return 0;
    rs->trial = 0;
    disco_relay_failed(rs, id, now);
    return id;
}

bool disco_relay_answered(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = find(rs, id);

    if (!r || rs->trial != id || !disco_relay_on_trial(rs, now))
        return false;
    rs->trial = 0;
    r->confirmed_ns = now ? now : 1;
    r->failed_ns = 0;
    return true;
}

void disco_relay_failed(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = find(rs, id);

    if (r)
        r->failed_ns = now ? now : 1;
    if (rs->trial == id)
        rs->trial = 0;
}

void disco_relay_forget(struct disco_relays *rs, disco_id id)
{
    struct disco_relay_slot *r = find(rs, id);

    if (r)
        remove_slot(rs, r);
}

void disco_relay_carried(struct disco_relays *rs, disco_id id, uint64_t now)
{
    struct disco_relay_slot *r = find(rs, id);

    if (!r)
        r = add(rs, id, now);
    if (r)
        r->confirmed_ns = now ? now : 1;
}
