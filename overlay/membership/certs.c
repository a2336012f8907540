/* SPDX-License-Identifier: MIT */
/* The store of the authority's statements (certs.h). */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "config/addr.h"
#include "overlay/membership/certs.h"

struct held {
    struct cert c;
    uint8_t id[CERT_ID_LEN];
    bool has_token;
    uint8_t token_id[CERT_ID_LEN];
    /* A token's certificate a peer passed on that is not its key's own
     * word (certs_offer_heard): an introduction, which yields to its
     * key's own word and to the authority's (takes_from, yields). */
    bool heard;
};

/* The index: open-addressing tables (linear probing, at most half full:
 * 2 * cap slots for m's cap entries) by key, by name (in lower case) and
 * by statement id, each slot 1 + a position in m (0: empty); a token's
 * held members counted by its id; the revocations by what they name.
 * Keyed SipHash (crypto_shorthash, a random key per store), not FNV: a
 * token's holder picks its members' keys and, by what it signs, their
 * ids, and must not line them up in one run of slots. Updated on an
 * insertion or a renewal; rebuilt from m when entries go (positions
 * shift, m keeping the order held) or m grows -- a removal costs a walk
 * as it did, an offer O(1) look-ups. Kept apart from struct certs, so
 * that const look-ups count their probes. */
enum { BY_KEY, BY_NAME, BY_ID, BY_N };

struct token_place {
    bool used;
    uint32_t count;                       /* members held through it (> 0) */
    uint8_t id[CERT_ID_LEN];
};

struct index {
    uint8_t hash_key[crypto_shorthash_KEYBYTES];
    uint32_t *slots[BY_N];
    struct token_place *tokens;
    size_t mask;                          /* slots - 1; 0 before m has room */
    uint32_t *revoked;                    /* 1 + a position in certs.revoked */
    size_t revoked_mask;
    uint64_t lookups, probes;             /* certs_stats' */
    uint64_t next_expiry;                 /* of m[0..n), unless stale */
    bool expiry_stale;                    /* the entry it was went: walk again when asked */
};

struct certs {
    uint8_t authority[CERT_PUBKEY_LEN];
    bool has_next;                        /* a second key trusted (certs_trust) */
    uint8_t next[CERT_PUBKEY_LEN];
    certs_changed_fn changed;
    void *ctx;
    struct held *m;
    size_t n, cap;
    uint8_t (*revoked)[CERT_ID_LEN];
    size_t n_revoked, cap_revoked;
    struct certs_stats st;
    struct index *ix;
    struct certs_clash clash;             /* certs_clash_set's */
};

static void index_free_tables(struct index *ix)
{
    for (int by = 0; by < BY_N; by++)
        free(ix->slots[by]);
    free(ix->tokens);
}

struct certs *certs_new(const uint8_t authority[CERT_PUBKEY_LEN], certs_changed_fn changed,
                        void *ctx)
{
    struct certs *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    if (!(s->ix = calloc(1, sizeof(*s->ix)))) {
        free(s);
        return NULL;
    }
    memcpy(s->authority, authority, CERT_PUBKEY_LEN);
    s->changed = changed;
    s->ctx = ctx;
    randombytes_buf(s->ix->hash_key, sizeof(s->ix->hash_key));
    s->ix->next_expiry = UINT64_MAX;
    return s;
}

void certs_free(struct certs *s)
{
    if (!s)
        return;
    index_free_tables(s->ix);
    free(s->ix->revoked);
    free(s->ix);
    free(s->m);
    free(s->revoked);
    free(s);
}

/* --- the keys trusted (certs_trust) ------------------------------------------------ */

/* cert_verify against each key trusted. */
static enum cert_verdict verify(const struct certs *s, const struct cert *c, uint64_t now)
{
    enum cert_verdict v = cert_verify(c, s->authority, now);

    if (v == CERT_BAD_SIGNATURE && s->has_next)
        v = cert_verify(c, s->next, now);
    return v;
}

static bool trusted(const struct certs *s, const uint8_t key[CERT_PUBKEY_LEN])
{
    return !memcmp(key, s->authority, CERT_PUBKEY_LEN) ||
           (s->has_next && !memcmp(key, s->next, CERT_PUBKEY_LEN));
}

static bool signer_gone(const struct held *h, const void *ctx)
{
    const struct certs *s = ctx;

    return !trusted(s, h->c.has_token ? h->c.token.signer : h->c.signer);
}

static size_t drop_where(struct certs *s, bool (*gone)(const struct held *h, const void *ctx),
                         const void *ctx);
static void touched(struct certs *s);

void certs_trust(struct certs *s, const uint8_t authority[CERT_PUBKEY_LEN], const uint8_t *next)
{
    memcpy(s->authority, authority, CERT_PUBKEY_LEN);
    s->has_next = next != NULL;
    if (next)
        memcpy(s->next, next, CERT_PUBKEY_LEN);
    if (drop_where(s, signer_gone, s))
        touched(s);
}

const char *certs_verdict_str(enum certs_verdict v)
{
    switch (v) {
    case CERTS_ADDED: return "added";
    case CERTS_KNOWN: return "known";
    case CERTS_REVOKING: return "revocation taken";
    case CERTS_REVOKED: return "revoked";
    case CERTS_INVALID: return "invalid";
    case CERTS_NAME_TAKEN: return "name taken";
    case CERTS_TOKEN_FULL: return "token full";
    case CERTS_FULL: return "store full";
    case CERTS_NO_MEMORY: return "out of memory";
    case CERTS_NOT_OWN: return "not its own";
    }
    return "?";
}

static uint64_t expiry_of(const struct cert *c)
{
    if (c->has_token && c->token.not_after < c->not_after)
        return c->token.not_after;
    return c->not_after;
}

/* After every change of the held members. */
static void touched(struct certs *s)
{
    if (s->changed)
        s->changed(s->ctx);
}

/* The first expiry of m[0..n): kept as members come, walked again only
 * when asked after the one it was went (a renewal, a removal). */
static uint64_t next_expiry(const struct certs *s)
{
    struct index *ix = s->ix;

    if (ix->expiry_stale) {
        ix->next_expiry = UINT64_MAX;
        for (size_t i = 0; i < s->n; i++)
            if (expiry_of(&s->m[i].c) < ix->next_expiry)
                ix->next_expiry = expiry_of(&s->m[i].c);
        ix->expiry_stale = false;
    }
    return ix->next_expiry;
}

static void expiry_came(struct certs *s, uint64_t at)
{
    if (at < s->ix->next_expiry)
        s->ix->next_expiry = at;
}

static void expiry_went(struct certs *s, uint64_t at)
{
    if (at <= s->ix->next_expiry)
        s->ix->expiry_stale = true;
}

/* --- the index ----------------------------------------------------------------- */

static size_t hash_of(const struct index *ix, const uint8_t *b, size_t len)
{
    uint8_t h[crypto_shorthash_BYTES];
    uint64_t v;

    crypto_shorthash(h, b, len, ix->hash_key);
    memcpy(&v, h, sizeof(v));
    return (size_t)v;
}

/* A name as it is found (lower case: names match case-insensitively). */
static size_t lowered(const char *name, uint8_t out[CLUSTER_NAME_MAX])
{
    size_t len = 0;

    for (; name[len] && len < CLUSTER_NAME_MAX; len++)
        out[len] = (uint8_t)tolower((unsigned char)name[len]);
    return len;
}

/* The bytes h is found by in table by (out holds a name's). */
static const uint8_t *bytes_of(int by, const struct held *h, uint8_t out[CLUSTER_NAME_MAX],
                               size_t *len)
{
    *len = CERT_ID_LEN;
    if (by == BY_KEY)
        return h->c.subject;
    if (by == BY_ID)
        return h->id;
    *len = lowered(h->c.name, out);
    return out;
}

static bool matches(int by, const struct held *h, const uint8_t *b, size_t len)
{
    if (by == BY_KEY)
        return !memcmp(h->c.subject, b, CERT_PUBKEY_LEN);
    if (by == BY_ID)
        return !memcmp(h->id, b, CERT_ID_LEN);
    return strlen(h->c.name) == len && !strncasecmp(h->c.name, (const char *)b, len);
}

/* The slot of table by holding the entry found by b, or the empty slot
 * where it would go. */
static size_t probe(const struct certs *s, int by, const uint8_t *b, size_t len)
{
    struct index *ix = s->ix;
    size_t i = hash_of(ix, b, len) & ix->mask;

    ix->lookups++;
    for (;; i = (i + 1) & ix->mask) {
        uint32_t v = ix->slots[by][i];
        ix->probes++;
        if (!v || matches(by, &s->m[v - 1], b, len))
            return i;
    }
}

static struct held *find(const struct certs *s, int by, const uint8_t *b, size_t len)
{
    uint32_t v;

    if (!s->n)
        return NULL;
    v = s->ix->slots[by][probe(s, by, b, len)];
    return v ? &s->m[v - 1] : NULL;
}

static void index_put(struct certs *s, int by, size_t pos)
{
    uint8_t name[CLUSTER_NAME_MAX];
    size_t len;
    const uint8_t *b = bytes_of(by, &s->m[pos], name, &len);

    s->ix->slots[by][probe(s, by, b, len)] = (uint32_t)pos + 1;
}

/* Takes the entry of slot i out of table by, moving back those after it
 * that probed past it (backward shift: no tombstones). */
static void index_take(struct certs *s, int by, size_t i)
{
    uint32_t *t = s->ix->slots[by];
    const size_t mask = s->ix->mask;
    uint8_t name[CLUSTER_NAME_MAX];
    const uint8_t *b;
    size_t j = i, len, home;

    for (;;) {
        j = (j + 1) & mask;
        if (!t[j])
            break;
        b = bytes_of(by, &s->m[t[j] - 1], name, &len);
        home = hash_of(s->ix, b, len) & mask;
        if (((j - home) & mask) >= ((j - i) & mask)) {
            t[i] = t[j];
            i = j;
        }
    }
    t[i] = 0;
}

/* Token id's place in the count (made, at 0, when add). */
static struct token_place *token_place(const struct certs *s, const uint8_t id[CERT_ID_LEN],
                                       bool add)
{
    struct index *ix = s->ix;
    size_t i = hash_of(ix, id, CERT_ID_LEN) & ix->mask;

    if (!ix->tokens)
        return NULL;
    ix->lookups++;
    for (;; i = (i + 1) & ix->mask) {
        struct token_place *t = &ix->tokens[i];
        ix->probes++;
        if (!t->used) {
            if (!add)
                return NULL;
            t->used = true;
            t->count = 0;
            memcpy(t->id, id, CERT_ID_LEN);
            return t;
        }
        if (!memcmp(t->id, id, CERT_ID_LEN))
            return t;
    }
}

static void index_add(struct certs *s, size_t pos)
{
    const struct held *h = &s->m[pos];

    for (int by = 0; by < BY_N; by++)
        index_put(s, by, pos);
    if (h->has_token)
        token_place(s, h->token_id, true)->count++;
}

/* Every table again from m (entries went, or m grew). */
static void reindex(struct certs *s)
{
    struct index *ix = s->ix;

    if (!ix->mask)
        return;
    for (int by = 0; by < BY_N; by++)
        memset(ix->slots[by], 0, (ix->mask + 1) * sizeof(*ix->slots[by]));
    memset(ix->tokens, 0, (ix->mask + 1) * sizeof(*ix->tokens));
    for (size_t i = 0; i < s->n; i++)
        index_add(s, i);
}

/* Tables for cap entries of m (2 * cap slots), built from m. */
static int index_grow(struct certs *s, size_t cap)
{
    struct index *ix = s->ix, next = *ix;

    memset(next.slots, 0, sizeof(next.slots));
    next.tokens = NULL;
    for (int by = 0; by < BY_N; by++)
        if (!(next.slots[by] = calloc(2 * cap, sizeof(*next.slots[by]))))
            goto fail;
    if (!(next.tokens = calloc(2 * cap, sizeof(*next.tokens))))
        goto fail;
    index_free_tables(ix);
    *ix = next;
    ix->mask = 2 * cap - 1;
    reindex(s);
    return 0;
fail:
    index_free_tables(&next);
    return -ENOMEM;
}

/* --- look-ups ------------------------------------------------------------------ */

static struct held *by_id(const struct certs *s, const uint8_t id[CERT_ID_LEN])
{
    return find(s, BY_ID, id, CERT_ID_LEN);
}

static struct held *by_key(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    return find(s, BY_KEY, key, CLUSTER_KEY_LEN);
}

static struct held *by_name(const struct certs *s, const char *name)
{
    uint8_t b[CLUSTER_NAME_MAX];

    return find(s, BY_NAME, b, lowered(name, b));
}

/* The slot of the revocation of id in the revoked table, or the empty
 * one where it would go. */
static size_t revoked_probe(const struct certs *s, const uint8_t id[CERT_ID_LEN])
{
    struct index *ix = s->ix;
    size_t i = hash_of(ix, id, CERT_ID_LEN) & ix->revoked_mask;

    ix->lookups++;
    for (;; i = (i + 1) & ix->revoked_mask) {
        uint32_t v = ix->revoked[i];
        ix->probes++;
        if (!v || !memcmp(s->revoked[v - 1], id, CERT_ID_LEN))
            return i;
    }
}

static bool is_revoked(const struct certs *s, const uint8_t id[CERT_ID_LEN])
{
    return s->n_revoked && s->ix->revoked[revoked_probe(s, id)];
}

const struct cert *certs_member(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    const struct held *h = by_key(s, key);

    return h ? &h->c : NULL;
}

const char *certs_node_check(const struct certs *s, const struct cluster_node *n)
{
    const struct cert *c = certs_member(s, n->public_key);

    if (!c)
        return "no valid certificate for its key";
    if (strcasecmp(c->name, n->name))
        return "its name is not the one its key's certificate gives";
    if (c->has_address && !cluster_addr_equal(&c->address, &n->address))
        return "its address is not the one its key's certificate fixes";
    return NULL;
}

size_t certs_count(const struct certs *s)
{
    return s->n;
}

const struct cert *certs_at(const struct certs *s, size_t i)
{
    return i < s->n ? &s->m[i].c : NULL;
}

void certs_stats(const struct certs *s, struct certs_stats *out)
{
    *out = s->st;
    out->members = s->n;
    out->revoked = s->n_revoked;
    out->lookups = s->ix->lookups;
    out->probes = s->ix->probes;
}

/* --- changes ------------------------------------------------------------------- */

/* Whether a new member n takes a place (a name) that o holds. A key's
 * own word over one a peer passed on (heard: an introduction, which takes
 * nothing from anyone); the authority's own certificate over a token's;
 * between two of the authority's, the later not_before (its newer word: a
 * re-keyed node's certificate over an old one replayed), then the lower
 * key, the same on every node; a token's never takes what another member
 * holds, whatever dates or key order it picks: the one held first keeps
 * it. */
static bool takes_from(const struct held *n, const struct held *o)
{
    if (n->heard != o->heard)
        return o->heard;                  /* a key's own word over a peer's */
    if (n->has_token != o->has_token)
        return !n->has_token;
    if (n->has_token)
        return false;
    if (n->c.not_before != o->c.not_before)
        return n->c.not_before > o->c.not_before;
    return memcmp(n->c.subject, o->c.subject, CERT_PUBKEY_LEN) < 0;
}

/* Drops each held member gone(h, ctx) says yes to, keeping the order
 * held (certs_at's promise: first come first), then the index again;
 * how many went. */
static size_t drop_where(struct certs *s, bool (*gone)(const struct held *h, const void *ctx),
                         const void *ctx)
{
    size_t kept = 0, dropped;

    for (size_t i = 0; i < s->n; i++) {
        if (gone(&s->m[i], ctx))
            continue;
        if (kept != i)
            s->m[kept] = s->m[i];
        kept++;
    }
    if (!(dropped = s->n - kept))
        return 0;
    s->n = kept;
    s->ix->expiry_stale = true;
    reindex(s);
    return dropped;
}

/* How many members are held through token id, skip left out (the key
 * being replaced). */
static size_t token_count(const struct certs *s, const uint8_t id[CERT_ID_LEN],
                          const struct held *skip)
{
    const struct token_place *t = token_place(s, id, false);
    size_t count = t ? t->count : 0;

    if (skip && skip->has_token && !memcmp(skip->token_id, id, CERT_ID_LEN))
        count--;
    return count;
}

static enum certs_verdict refuse(uint64_t *count, enum certs_verdict v, const char *reason,
                                 const char **why)
{
    ++*count;
    if (why)
        *why = reason;
    return v;
}

/* The places of a token: what it says, or CERTS_TOKEN_DEFAULT_MAX where
 * it says no limit (a token in every autoscaled machine must not fill the
 * store with keys nobody holds). */
static size_t token_places(const struct cert *c)
{
    return c->token.max_members ? c->token.max_members : CERTS_TOKEN_DEFAULT_MAX;
}

/* A heard member of token id, own and taken aside (a place a member
 * said by its own key takes when the token is full), or NULL. A walk:
 * only when a token is full. */
static struct held *heard_of_token(const struct certs *s, const uint8_t id[CERT_ID_LEN],
                                   const struct held *own, const struct held *taken)
{
    for (size_t i = 0; i < s->n; i++) {
        struct held *h = &s->m[i];
        if (h->heard && h != own && h != taken && !memcmp(h->token_id, id, CERT_ID_LEN))
            return h;
    }
    return NULL;
}

/* What a new member n would push out (lost[0], lost[1]; NULL: none): the
 * holder of its name, and, its token full, a heard member of that token
 * (n being its key's own word); a refusal when n may not take its name,
 * or when its token's places are held. own: its key's entry, which n
 * replaces. */
static enum certs_verdict make_room(struct certs *s, const struct held *n, const struct held *own,
                                    struct held *lost[2], const char **why)
{
    struct held *o = by_name(s, n->c.name);
    size_t count;

    lost[0] = lost[1] = NULL;
    if (o && o != own) {
        if (!takes_from(n, o))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN, n->has_token
                          ? "another member holds its name" :
                          "a newer certificate of the authority gives its name to another key",
                          why);
        lost[0] = o;
    }
    if (!n->has_token)
        return CERTS_ADDED;
    count = token_count(s, n->token_id, own);
    if (lost[0] && lost[0]->has_token && !memcmp(lost[0]->token_id, n->token_id, CERT_ID_LEN))
        count--;                          /* the name's holder frees its place */
    if (count >= token_places(&n->c) && !n->heard)
        lost[1] = heard_of_token(s, n->token_id, own, lost[0]);
    if (count >= token_places(&n->c) && !lost[1])
        return refuse(&s->st.token_full, CERTS_TOKEN_FULL,
                      "its token's places are held by other members", why);
    return CERTS_ADDED;
}

/* Whether own, its key's certificate, gives way to n whatever names and
 * ends they have (issue 55): the authority's word over a token's (a token
 * holder who signed a certificate for another's key first takes nothing
 * from it), and a key's own word over what a peer passed on. */
static bool yields(const struct held *own, const struct held *n)
{
    return (own->has_token && !n->has_token) || (own->heard && !n->heard);
}

/* Whether n may replace own, its key's certificate (the same name, a
 * later end): the authority's word replaces anything; a token's replaces
 * only one of the same token (a renewal), never the authority's nor
 * another token's (a holder of one token re-signing a member of another
 * would put it under a token that can be revoked). */
static bool replaces(const struct held *n, const struct held *own)
{
    if (!n->has_token)
        return true;
    return own->has_token && !memcmp(n->token_id, own->token_id, CERT_ID_LEN);
}

/* Issue 59: whether n, its key's own word, moves own to another of the
 * addresses the key derives (another address index, the same name):
 * the node signed the next index after a member held its address first.
 * It replaces own whatever their ends (the next index is signed from the
 * same token, so it seldom ends later); who may sign it is replaces()'s
 * rule, and the address it moves to is taken only where no running
 * member holds it (members.c, with_certified). What a peer passes on
 * never moves a key: only its own session does. And only forward, to a
 * higher index: a key moves at most 7 times, so a member holding
 * certificates for several of its indexes cannot make every other
 * member re-address it over and over by switching between them; one at
 * a lower index counts only as any other certificate (a later end, from
 * who may sign it). */
static bool moves(const struct held *n, const struct held *own)
{
    return !n->heard && !n->c.has_address && !own->c.has_address &&
           n->c.address_index > own->c.address_index;   /* forward only */
}

static int grow(struct certs *s)
{
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct held *m;

    if (cap > CERTS_MEMBERS_MAX)
        cap = CERTS_MEMBERS_MAX;
    if (!(m = realloc(s->m, cap * sizeof(*m))))
        return -ENOMEM;
    s->m = m;
    if (index_grow(s, cap))
        return -ENOMEM;
    s->cap = cap;
    return 0;
}

/* own, its key's entry, replaced by n (the same key, the same name but
 * for case): its id and token in the index. A token's member re-signed
 * by the authority (rare) has its token counted again from m. */
static void renew(struct certs *s, struct held *own, const struct held *n)
{
    size_t pos = (size_t)(own - s->m);
    bool same_token = own->has_token == n->has_token &&
                      (!n->has_token || !memcmp(own->token_id, n->token_id, CERT_ID_LEN));

    expiry_went(s, expiry_of(&own->c));
    index_take(s, BY_ID, probe(s, BY_ID, own->id, CERT_ID_LEN));
    *own = *n;
    index_put(s, BY_ID, pos);
    if (!same_token)
        reindex(s);
    expiry_came(s, expiry_of(&n->c));
}

static bool is_listed(const struct held *h, const void *ctx)
{
    struct held *const *set = ctx;

    return h == set[0] || h == set[1] || h == set[2];
}

/* heard: passed on by a peer that is not its key (certs_offer_heard). */
static enum certs_verdict offer_member(struct certs *s, const struct cert *c, bool heard,
                                       uint64_t now, const char **why)
{
    struct held n = { .c = *c }, *own, *known, *lost[2], *gone[3];
    bool drop_own = false;
    enum cert_verdict v;
    enum certs_verdict r;

    cert_id(c, n.id);
    n.has_token = cert_token_id(c, n.token_id);
    /* The authority's own certificate is its word whoever passes it on. */
    n.heard = heard && n.has_token;
    if ((known = by_id(s, n.id))) {
        if (!n.heard)
            known->heard = false;         /* its key said it now */
        return CERTS_KNOWN;
    }
    if (is_revoked(s, n.id) || is_revoked(s, c->subject) ||
        (n.has_token && is_revoked(s, n.token_id)))
        return refuse(&s->st.refused_revoked, CERTS_REVOKED,
                      "the authority revoked it, its token or its key", why);
    /* Times first: an expired statement offered again costs no signature.
     * A start within CERT_CLOCK_SKEW_S ahead counts (clocks differ). */
    if (now >= expiry_of(c) || now + CERT_CLOCK_SKEW_S < c->not_before)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(now < expiry_of(c)
                      ? CERT_NOT_YET_VALID : CERT_EXPIRED), why);
    if ((v = verify(s, c, now)) != CERT_OK)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(v), why);
    /* One that yields to n is dropped, but for a renewal of it (the same
     * name, a later end), which takes its place as any renewal does. */
    own = by_key(s, c->subject);
    drop_own = own && yields(own, &n) &&
               (strcasecmp(own->c.name, c->name) || expiry_of(c) <= expiry_of(&own->c));
    if (own && !drop_own) {
        if (strcasecmp(own->c.name, c->name))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN,
                          "its key holds a certificate for another name", why);
        if (n.heard && c->address_index != own->c.address_index)
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN,
                          "its key holds a certificate at another address index, which only "
                          "its key moves", why);
        if (!moves(&n, own) && expiry_of(c) <= expiry_of(&own->c))
            return CERTS_KNOWN;           /* an older one than it holds */
        if (!replaces(&n, own))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN,
                          "its key holds a certificate that only the authority or the same "
                          "token renews", why);
        n.heard = n.heard && own->heard;  /* a renewal passed on: its key said the first */
    }
    if ((r = make_room(s, &n, own, lost, why)) != CERTS_ADDED)
        return r;
    gone[0] = drop_own ? own : NULL;
    gone[1] = lost[0];
    gone[2] = lost[1];
    if (own && !drop_own) {
        renew(s, own, &n);
        if (lost[0] || lost[1])
            drop_where(s, is_listed, gone);
        return CERTS_ADDED;
    }
    if (s->n - drop_own - (lost[0] != NULL) - (lost[1] != NULL) >= CERTS_MEMBERS_MAX)
        return refuse(&s->st.full, CERTS_FULL, "the store holds its most members", why);
    if (drop_own || lost[0] || lost[1])
        drop_where(s, is_listed, gone);
    if (s->n == s->cap && grow(s))
        return CERTS_NO_MEMORY;
    s->m[s->n++] = n;
    index_add(s, s->n - 1);
    expiry_came(s, expiry_of(&n.c));
    return CERTS_ADDED;
}

/* Room for more revocations, and their table (2 * cap slots) again. */
static int grow_revoked(struct certs *s)
{
    size_t cap = s->cap_revoked ? 2 * s->cap_revoked : 16;
    uint8_t (*r)[CERT_ID_LEN];
    uint32_t *t;

    if (!(t = calloc(2 * cap, sizeof(*t))))
        return -ENOMEM;
    if (!(r = realloc(s->revoked, cap * sizeof(*r)))) {
        free(t);
        return -ENOMEM;
    }
    s->revoked = r;
    s->cap_revoked = cap;
    free(s->ix->revoked);
    s->ix->revoked = t;
    s->ix->revoked_mask = 2 * cap - 1;
    for (size_t i = 0; i < s->n_revoked; i++)
        t[revoked_probe(s, s->revoked[i])] = (uint32_t)i + 1;
    return 0;
}

/* Whether revocation what names h: its id, its key or its token. */
static bool named_by(const struct held *h, const void *ctx)
{
    const uint8_t *what = ctx;

    return !memcmp(h->id, what, CERT_ID_LEN) || !memcmp(h->c.subject, what, CERT_PUBKEY_LEN) ||
           (h->has_token && !memcmp(h->token_id, what, CERT_ID_LEN));
}

/* Takes what a revocation names (a statement id, a token id or a key)
 * into the list and drops what it names. Past CERTS_REVOKED_MAX (issue
 * 55) one that names something held is taken all the same -- refusing it
 * would keep a revoked member -- and so is one the node took before
 * (kept: its state file, read back); only one that names nothing held is
 * refused. None is ever forgotten to make room: the store knows what an
 * id names only while it holds it, and a key never expires. */
static enum certs_verdict revoke(struct certs *s, const uint8_t what[CERT_ID_LEN], bool kept,
                                 const char **why)
{
    bool names_held = by_id(s, what) || by_key(s, what) || token_count(s, what, NULL);
    size_t dropped = 0;

    if (s->n_revoked >= CERTS_REVOKED_MAX) {
        if (!names_held && !kept) {
            s->st.revoked_full++;
            return refuse(&s->st.full, CERTS_FULL, "the store holds its most revocations of "
                          "what it does not hold", why);
        }
        s->st.revoked_beyond++;
    }
    if (s->n_revoked == s->cap_revoked && grow_revoked(s))
        return CERTS_NO_MEMORY;
    memcpy(s->revoked[s->n_revoked++], what, CERT_ID_LEN);
    s->ix->revoked[revoked_probe(s, what)] = (uint32_t)s->n_revoked;
    /* The walk only where it names something held. */
    if (names_held)
        dropped = drop_where(s, named_by, what);
    s->st.dropped_by_revocation += dropped;
    if (dropped)
        touched(s);
    return CERTS_REVOKING;
}

static enum certs_verdict offer_revocation(struct certs *s, const struct cert *c, uint64_t now,
                                           bool kept, const char **why)
{
    enum cert_verdict v;

    if (is_revoked(s, c->subject))
        return CERTS_KNOWN;
    if ((v = verify(s, c, now)) != CERT_OK)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(v), why);
    return revoke(s, c->subject, kept, why);
}

enum certs_verdict certs_revoke_key(struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    if (is_revoked(s, key))
        return CERTS_KNOWN;
    return revoke(s, key, false, NULL);
}

enum certs_verdict certs_offer_kept(struct certs *s, const char *line, uint64_t now,
                                    const char **why)
{
    struct cert c;

    if (why)
        *why = "";
    if (cert_parse(line, &c) || c.kind != CERT_REVOCATION)
        return refuse(&s->st.invalid, CERTS_INVALID, "not a revocation of the authority", why);
    return offer_revocation(s, &c, now, true, why);
}

static enum certs_verdict offer(struct certs *s, const struct cert *c, bool heard, uint64_t now,
                                const char **why)
{
    enum certs_verdict r;

    if (why)
        *why = "";
    switch (c->kind) {
    case CERT_REVOCATION:
        return offer_revocation(s, c, now, false, why);
    case CERT_MEMBER:
        r = offer_member(s, c, heard, now, why);
        if (r == CERTS_ADDED)
            touched(s);
        return r;
    default:
        return refuse(&s->st.invalid, CERTS_INVALID, "a token is no member's certificate", why);
    }
}

enum certs_verdict certs_offer_cert(struct certs *s, const struct cert *c, uint64_t now,
                                    const char **why)
{
    return offer(s, c, false, now, why);
}

enum certs_verdict certs_offer_heard(struct certs *s, const struct cert *c, uint64_t now,
                                     const char **why)
{
    return offer(s, c, true, now, why);
}

enum certs_verdict certs_offer(struct certs *s, const char *line, uint64_t now,
                               const char **why)
{
    struct cert c;

    if (cert_parse(line, &c))
        return refuse(&s->st.invalid, CERTS_INVALID, "not a statement of the authority", why);
    return certs_offer_cert(s, &c, now, why);
}

bool certs_heard(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    const struct held *h = by_key(s, key);

    return h && h->heard;
}

struct retain {
    certs_keep_fn keep;
    void *ctx;
};

static bool not_kept(const struct held *h, const void *ctx)
{
    const struct retain *r = ctx;

    return !r->keep(r->ctx, &h->c);
}

void certs_retain(struct certs *s, certs_keep_fn keep, void *ctx)
{
    struct retain r = { keep, ctx };

    if (drop_where(s, not_kept, &r))
        touched(s);
}

uint64_t certs_next_expiry(const struct certs *s)
{
    return next_expiry(s);
}

static bool expired_by(const struct held *h, const void *ctx)
{
    return expiry_of(&h->c) <= *(const uint64_t *)ctx;
}

void certs_run(struct certs *s, uint64_t now)
{
    size_t dropped;

    if (now < next_expiry(s))
        return;
    dropped = drop_where(s, expired_by, &now);
    s->st.expired += dropped;
    if (dropped)
        touched(s);
}

bool certs_clash_set(struct certs *s, const struct certs_clash *c)
{
    bool changed = c->on != s->clash.on ||
                   (c->on && (memcmp(c->holder_key, s->clash.holder_key, CERT_PUBKEY_LEN) ||
                              !cluster_addr_equal(&c->address, &s->clash.address)));

    if (c->on)
        s->clash = *c;
    else
        memset(&s->clash, 0, sizeof(s->clash));
    return changed;
}

const struct certs_clash *certs_clash(const struct certs *s)
{
    return &s->clash;
}
