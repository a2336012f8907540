/* SPDX-License-Identifier: MIT */
/* The decisions of discovery, hole punching and relays (see disco.h): a
 * peer's candidates and the schedule of attempts, probes, pings and
 * ENDPOINTS, over plain state and a clock given by the caller. */
#include <string.h>

#include "overlay/base/clock.h"
#include "overlay/disco/disco.h"


static uint64_t secs(uint64_t s)
{
    return s * WG_NSEC_PER_SEC;
}

/* --- candidates ------------------------------------------------------------------ */

static size_t addr_len(uint8_t family)
{
    return family == DISCO_FAMILY_IPV4 ? 4u : DISCO_ADDR_MAX;
}

static bool same_addr(const struct disco_endpoint *a, const struct disco_endpoint *b)
{
    return a->family == b->family && !memcmp(a->addr, b->addr, addr_len(a->family));
}

/* 127/8, 169.254/16, 224/4 and above; ::1, fe80::/10, ff00::/8, and
 * IPv4-mapped addresses. */
static bool unusable_addr(const struct disco_endpoint *ep)
{
    const uint8_t *a = ep->addr;

    if (ep->family == DISCO_FAMILY_IPV4)
        return a[0] == 127 || (a[0] == 169 && a[1] == 254) || a[0] >= 224 || a[0] == 0;
    static const uint8_t loop6[DISCO_ADDR_MAX] = { [15] = 1 };
    return !memcmp(a, loop6, sizeof(loop6)) || (a[0] == 0xfe && (a[1] & 0xc0) == 0x80) ||
           a[0] == 0xff;
}

static int find_cand(const struct disco_state *s, const struct disco_endpoint *ep)
{
    for (unsigned i = 0; i < s->n_cand; i++)
        if (disco_endpoint_equal(&s->cand[i].ep, ep))
            return (int)i;
    return -1;
}

static unsigned count_kind(const struct disco_state *s, bool local)
{
    unsigned n = 0;

    for (unsigned i = 0; i < s->n_cand; i++)
        n += s->cand[i].local == local;
    return n;
}

/* The slot a new candidate of this kind goes into, or -1 when there is
 * none to give it: the oldest observed one makes room for another. */
static int free_slot(struct disco_state *s, bool local)
{
    unsigned limit = local ? DISCO_MAX_LOCAL : DISCO_OBSERVED_MAX;
    int oldest = -1;

    if (count_kind(s, local) < limit)
        return s->n_cand < DISCO_CANDS_MAX ? s->n_cand++ : -1;
    if (local)
        return -1;
    for (unsigned i = 0; i < s->n_cand; i++)
        if (!s->cand[i].local && (oldest < 0 || s->cand[i].seen_ns < s->cand[oldest].seen_ns))
            oldest = (int)i;
    return oldest;
}

static void note_informant(struct disco_cand *c, disco_id who)
{
    if (c->informant[0] != who) {
        c->informant[1] = c->informant[0];
        c->informant[0] = who;
    }
}

bool disco_cand_add(struct disco_state *s, const struct disco_endpoint *ep, bool local,
                    disco_id informant, uint64_t now)
{
    int i;

    /* Whatever a peer says, we aim at no loopback, link-local or
     * multicast address (our own services, or the whole LAN). */
    if (!disco_endpoint_valid(ep) || unusable_addr(ep))
        return false;
    i = find_cand(s, ep);
    if (i >= 0) {
        bool promoted = local && !s->cand[i].local;
        s->cand[i].seen_ns = now;
        note_informant(&s->cand[i], informant);
        s->cand[i].allowance = s->cand[i].allowance + DISCO_CAND_REPORT_BYTES < 2u * DISCO_CAND_REPORT_BYTES
                                   ? (uint16_t)(s->cand[i].allowance + DISCO_CAND_REPORT_BYTES)
                                   : (uint16_t)(2u * DISCO_CAND_REPORT_BYTES);
        if (promoted && count_kind(s, true) < DISCO_MAX_LOCAL)
            s->cand[i].local = true;
        return false;
    }
    i = free_slot(s, local);
    if (i < 0)
        return false;
    s->cand[i] = (struct disco_cand){ .ep = *ep, .local = local, .informant = { informant },
                                      .seen_ns = now, .allowance = DISCO_CAND_REPORT_BYTES };
    return true;
}

static void remove_cand(struct disco_state *s, unsigned i)
{
    memmove(&s->cand[i], &s->cand[i + 1], (s->n_cand - i - 1u) * sizeof(s->cand[0]));
    s->n_cand--;
}

static bool same_locals(const struct disco_state *s, const struct disco_endpoint *eps,
                        unsigned n)
{
    unsigned have = 0;

    for (unsigned i = 0; i < n; i++) {
        if (!disco_endpoint_valid(&eps[i]))
            continue;
        int at = find_cand(s, &eps[i]);
        if (at < 0 || !s->cand[at].local)
            return false;
        have++;
    }
    return have == count_kind(s, true);
}

bool disco_cand_set_local(struct disco_state *s, const struct disco_endpoint *eps,
                          unsigned n, disco_id informant, uint64_t now)
{
    bool changed = !same_locals(s, eps, n);

    /* Old local ones go; their order is the peer's order of preference. */
    for (unsigned i = s->n_cand; i-- > 0;)
        if (s->cand[i].local)
            remove_cand(s, i);
    for (unsigned i = 0; i < n && i < DISCO_MAX_LOCAL; i++)
        disco_cand_add(s, &eps[i], true, informant, now);
    s->locals_from = informant;
    return changed;
}

bool disco_cand_locals_from(const struct disco_state *s, disco_id self)
{
    return s->locals_from == self;
}

struct disco_cand *disco_cand_get(struct disco_state *s, const struct disco_endpoint *ep)
{
    int i = find_cand(s, ep);

    return i >= 0 ? &s->cand[i] : NULL;
}

void disco_cand_answered(struct disco_state *s, const struct disco_endpoint *ep, uint64_t now)
{
    struct disco_cand *c = disco_cand_get(s, ep);

    if (c) {
        c->answered_ns = now ? now : 1;
        c->tries = 0;
    }
}

bool disco_cand_spend(struct disco_cand *c, uint32_t len)
{
    if (c->allowance < len)
        return false;
    c->allowance = (uint16_t)(c->allowance - len);
    return true;
}

bool disco_cand_answers(const struct disco_cand *c, uint64_t now)
{
    return c->answered_ns && now - c->answered_ns < secs(DISCO_CAND_TTL_S);
}

void disco_cand_expire(struct disco_state *s, uint64_t now)
{
    for (unsigned i = s->n_cand; i-- > 0;)
        if (now - s->cand[i].seen_ns >= secs(DISCO_CAND_TTL_S) &&
            !disco_cand_answers(&s->cand[i], now))
            remove_cand(s, i);
}

void disco_cand_retry(struct disco_state *s)
{
    for (unsigned i = 0; i < s->n_cand; i++)
        s->cand[i].tries = 0;
}

static bool given_up(const struct disco_cand *c)
{
    return c->tries >= DISCO_CAND_TRIES_MAX;
}

unsigned disco_cand_local(const struct disco_state *s, struct disco_endpoint *out,
                          unsigned max)
{
    unsigned n = 0;

    for (unsigned i = 0; i < s->n_cand && n < max; i++)
        if (s->cand[i].local)
            out[n++] = s->cand[i].ep;
    return n;
}

bool disco_cand_is_local(const struct disco_state *s, const struct disco_endpoint *ep)
{
    int i = find_cand(s, ep);

    return i >= 0 && s->cand[i].local;
}

static bool is_own(const struct disco_endpoint *ep, const struct disco_endpoint *own,
                   unsigned n_own)
{
    for (unsigned i = 0; i < n_own; i++)
        if (same_addr(ep, &own[i]))
            return true;
    return false;
}

static bool listed(const struct disco_endpoint *ep, const struct disco_endpoint *out,
                   unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (disco_endpoint_equal(ep, &out[i]))
            return true;
    return false;
}

/* The newest observed candidate not taken yet, or -1. */
static int newest_observed(const struct disco_state *s, const bool *taken)
{
    int best = -1;

    for (unsigned i = 0; i < s->n_cand; i++)
        if (!s->cand[i].local && !taken[i] &&
            (best < 0 || s->cand[i].seen_ns > s->cand[best].seen_ns))
            best = (int)i;
    return best;
}

unsigned disco_targets(const struct disco_state *s, const struct disco_endpoint *own,
                       unsigned n_own, bool only_local, struct disco_endpoint *out,
                       unsigned max)
{
    bool taken[DISCO_CANDS_MAX] = { false };
    unsigned n = 0;
    int i;

    for (unsigned k = 0; k < s->n_cand && n < max; k++) {
        const struct disco_endpoint *ep = &s->cand[k].ep;
        if (s->cand[k].local && !given_up(&s->cand[k]) && !is_own(ep, own, n_own) &&
            !listed(ep, out, n))
            out[n++] = *ep;
    }
    while (!only_local && n < max && (i = newest_observed(s, taken)) >= 0) {
        const struct disco_endpoint *ep = &s->cand[i].ep;
        taken[i] = true;
        if (!given_up(&s->cand[i]) && !is_own(ep, own, n_own) && !listed(ep, out, n))
            out[n++] = *ep;
    }
    return n;
}

bool disco_local_usable(const struct disco_endpoint *ep, bool loopback_if, bool overlay_if,
                        const struct disco_endpoint *overlay_addr)
{
    if (loopback_if || overlay_if || !disco_endpoint_valid(ep) || unusable_addr(ep))
        return false;
    return !overlay_addr || !same_addr(ep, overlay_addr);
}

/* --- introductions --------------------------------------------------------------- */

void disco_intro_heard(struct disco_state *s, uint64_t now)
{
    s->intro_heard_ns = now ? now : 1;
}

bool disco_intro_news(const struct disco_state *s, uint64_t now)
{
    return !s->intro_heard_ns || now >= s->intro_heard_ns + secs(DISCO_INTRO_HEARD_S);
}

void disco_intro_key_heard(struct disco_intro_keys *t, const uint8_t key[WG_KEY_LEN],
                           uint64_t now)
{
    unsigned at = 0;

    for (unsigned i = 0; i < DISCO_INTRO_KEYS_MAX; i++) {
        if (t->k[i].at_ns && !memcmp(t->k[i].key, key, WG_KEY_LEN)) {
            at = i;
            break;
        }
        if (t->k[i].at_ns < t->k[at].at_ns)
            at = i;                       /* a free slot, else the oldest */
    }
    memcpy(t->k[at].key, key, WG_KEY_LEN);
    t->k[at].at_ns = now ? now : 1;
}

bool disco_intro_key_news(const struct disco_intro_keys *t, const uint8_t key[WG_KEY_LEN],
                          uint64_t now)
{
    for (unsigned i = 0; i < DISCO_INTRO_KEYS_MAX; i++)
        if (t->k[i].at_ns && !memcmp(t->k[i].key, key, WG_KEY_LEN))
            return now >= t->k[i].at_ns + secs(DISCO_INTRO_HEARD_S);
    return true;
}

/* --- the schedule --------------------------------------------------------------- */

static bool attempt_live(const struct disco_state *s, uint64_t now)
{
    return s->attempt_ns && now - s->attempt_ns < secs(DISCO_ATTEMPT_S);
}

bool disco_attempt(struct disco_state *s, bool punched, uint64_t now)
{
    if (attempt_live(s, now))
        return false;
    s->attempt_ns = now ? now : 1;
    s->punches = punched ? 1u : 0u;
    s->next_punch_ns = punched ? now + DISCO_PUNCH_INTERVAL_MS * NS_PER_MS : now;
    s->relay_taken = false;
    return true;
}

void disco_session_began(struct disco_state *s, bool rekey, uint64_t now)
{
    s->attempt_ns = 0;
    s->relay_taken = false;
    s->punches = 0;
    s->unanswered = 0;
    if (rekey && s->next_ping_ns)
        return;
    s->next_ping_ns = now;
    s->endpoints_sent_ns = 0;
}

void disco_endpoints_stale(struct disco_state *s)
{
    s->endpoints_stale = true;
}

void disco_endpoints_due(struct disco_state *s)
{
    s->endpoints_sent_ns = 0;
}

void disco_path_changed(struct disco_state *s)
{
    s->next_probe_ns = 0;
    /* The old path's pings say nothing of the new one. */
    for (unsigned i = 0; i < DISCO_PINGS_MAX; i++)
        if (!s->pings[i].probe)
            s->pings[i].sent_ns = 0;
}

/* When ENDPOINTS are due: at once if never sent in this session. */
static uint64_t endpoints_at(const struct disco_state *s, const struct disco_facts *f,
                             uint32_t gen)
{
    unsigned idle = f->idle_ping_s * DISCO_IDLE_ENDPOINTS_FACTOR;
    bool changed = gen != s->endpoints_gen || s->endpoints_stale;
    uint64_t wait = secs(changed ? DISCO_ENDPOINTS_MIN_S
                         : idle > DISCO_ENDPOINTS_MAX_S ? idle : DISCO_ENDPOINTS_MAX_S);

    return s->endpoints_sent_ns ? s->endpoints_sent_ns + clock_stretch(wait, s->spread) : 0;
}

static bool probing(const struct disco_facts *f)
{
    return f->session && (f->path == DISCO_PATH_RELAY ||
                          (f->path == DISCO_PATH_DIRECT && f->can_upgrade));
}

static uint64_t probe_interval(const struct disco_facts *f)
{
    return secs(f->path == DISCO_PATH_RELAY ? DISCO_PROBE_INTERVAL_S : DISCO_UPGRADE_INTERVAL_S);
}

/* Punches and the turn to a relay, while there is no session. */
static unsigned tick_attempt(struct disco_state *s, const struct disco_facts *f, uint64_t now)
{
    unsigned act = 0;

    if (f->working || !s->attempt_ns)
        return 0;
    if (!attempt_live(s, now)) {
        s->attempt_ns = 0;
        return 0;
    }
    if (s->punches < DISCO_PUNCH_COUNT && now >= s->next_punch_ns) {
        act |= DISCO_DO_PUNCH;
        s->punches++;
        s->next_punch_ns = now + DISCO_PUNCH_INTERVAL_MS * NS_PER_MS;
    }
    if (!s->relay_taken && f->path != DISCO_PATH_RELAY && f->relay_known &&
        now - s->attempt_ns >= DISCO_RELAY_AFTER_MS * NS_PER_MS) {
        act |= DISCO_DO_RELAY;
        s->relay_taken = true;
    }
    return act;
}

static unsigned tick_session(struct disco_state *s, const struct disco_facts *f, uint32_t gen,
                             uint64_t now)
{
    unsigned act = 0;

    if (!f->session)
        return 0;
    if (probing(f)) {
        if (!s->next_probe_ns) {
            s->next_probe_ns = now + probe_interval(f);
        } else if (now >= s->next_probe_ns) {
            act |= DISCO_DO_PROBE;
            s->next_probe_ns = now + probe_interval(f);
        }
    }
    if (now >= s->next_ping_ns) {
        act |= DISCO_DO_PING;
        unsigned every = s->unanswered >= DISCO_PING_UNANSWERED_MAX ? DISCO_PING_SLOW_S
                         : f->idle_ping_s ? f->idle_ping_s : DISCO_PING_INTERVAL_S;
        s->next_ping_ns = now + clock_stretch(secs(every), s->spread);
    }
    if (now >= endpoints_at(s, f, gen)) {
        act |= DISCO_DO_ENDPOINTS;
        s->endpoints_sent_ns = now ? now : 1;
        s->endpoints_gen = gen;
        s->endpoints_stale = false;
    }
    return act;
}

unsigned disco_tick(struct disco_state *s, const struct disco_facts *f, uint32_t gen,
                    uint64_t now)
{
    return tick_attempt(s, f, now) | tick_session(s, f, gen, now);
}

static void earliest(uint64_t *next, uint64_t t)
{
    if (t < *next)
        *next = t;
}

uint64_t disco_next(const struct disco_state *s, const struct disco_facts *f, uint32_t gen)
{
    uint64_t next = UINT64_MAX;

    if (!f->working && s->attempt_ns) {
        earliest(&next, s->attempt_ns + secs(DISCO_ATTEMPT_S));
        if (s->punches < DISCO_PUNCH_COUNT)
            earliest(&next, s->next_punch_ns);
        if (!s->relay_taken && f->path != DISCO_PATH_RELAY && f->relay_known)
            earliest(&next, s->attempt_ns + DISCO_RELAY_AFTER_MS * NS_PER_MS);
    }
    if (!f->session)
        return next;
    /* 0 (not yet armed) is due at once: the tick arms it. */
    if (probing(f))
        earliest(&next, s->next_probe_ns);
    earliest(&next, s->next_ping_ns);
    earliest(&next, endpoints_at(s, f, gen));
    return next;
}

/* --- pings ---------------------------------------------------------------------- */

void disco_ping_sent(struct disco_state *s, uint64_t txid, const struct disco_endpoint *to,
                     uint64_t now)
{
    struct disco_ping_slot *slot = &s->pings[s->ping_next];

    s->ping_next = (s->ping_next + 1u) % DISCO_PINGS_MAX;
    *slot = (struct disco_ping_slot){ .txid = txid, .sent_ns = now ? now : 1,
                                      .probe = to != NULL };
    if (to)
        slot->to = *to;
    else
        s->unanswered++;
}

unsigned disco_pings_lost(const struct disco_state *s, uint64_t now)
{
    unsigned n = 0;

    for (unsigned i = 0; i < DISCO_PINGS_MAX; i++) {
        const struct disco_ping_slot *slot = &s->pings[i];
        n += slot->sent_ns && !slot->probe && slot->sent_ns > s->last_pong_ns &&
             now >= slot->sent_ns && now - slot->sent_ns >= DISCO_PING_LOST_MS * NS_PER_MS;
    }
    return n;
}

bool disco_pong(struct disco_state *s, uint64_t txid, uint64_t now,
                struct disco_ping_slot *out)
{
    for (unsigned i = 0; i < DISCO_PINGS_MAX; i++) {
        struct disco_ping_slot *slot = &s->pings[i];

        if (!slot->sent_ns || slot->txid != txid)
            continue;
        bool fresh = now >= slot->sent_ns && now - slot->sent_ns < secs(DISCO_PING_TIMEOUT_S);
        *out = *slot;
        slot->sent_ns = 0;
        if (!fresh)
            return false;
        s->unanswered = 0;
        s->last_pong_ns = now;
        if (!out->probe)
            s->rtt_ns = now - out->sent_ns ? now - out->sent_ns : 1;
        return true;
    }
    return false;
}

/* --- unproven sources ------------------------------------------------------------------ */

void disco_unproven_heard(struct disco_unproven *u, const struct disco_endpoint *src,
                          uint32_t len)
{
    /* Another source: its own credit and count; the pace stays the
     * peer's, so that sources in turn do not make challenges come faster. */
    if (!u->src.family || !disco_endpoint_equal(&u->src, src))
        *u = (struct disco_unproven){ .src = *src, .challenge_ns = u->challenge_ns };
    u->credit = len > DISCO_UNPROVEN_CREDIT_MAX - u->credit ? DISCO_UNPROVEN_CREDIT_MAX
                                                            : u->credit + len;
}

bool disco_unproven_spend(struct disco_unproven *u, const struct disco_endpoint *to,
                          uint32_t len)
{
    if (!u->src.family || !disco_endpoint_equal(&u->src, to) || u->credit < len)
        return false;
    u->credit -= len;
    return true;
}

uint64_t disco_challenge_at(const struct disco_unproven *u, bool speaks, uint32_t len)
{
    if (!u->src.family || u->credit < len || (!speaks && u->challenges >= DISCO_CHALLENGES_MAX))
        return UINT64_MAX;
    return u->challenge_ns ? u->challenge_ns + DISCO_CHALLENGE_MS * NS_PER_MS : 0;
}

void disco_challenge_sent(struct disco_unproven *u, uint64_t now)
{
    u->challenge_ns = now ? now : 1;
    if (u->challenges < UINT8_MAX)
        u->challenges++;
}

void disco_challenge_void(struct disco_unproven *u)
{
    u->challenge_ns = 0;
    if (u->challenges)
        u->challenges--;
}

void disco_unproven_clear(struct disco_unproven *u)
{
    *u = (struct disco_unproven){ 0 };
}
