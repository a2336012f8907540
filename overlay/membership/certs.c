/* SPDX-License-Identifier: MIT */
/* The store of the authority's statements (certs.h). */
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
};

struct certs {
    uint8_t authority[CERT_PUBKEY_LEN];
    certs_changed_fn changed;
    void *ctx;
    struct held *m;
    size_t n, cap;
    uint8_t (*revoked)[CERT_ID_LEN];
    size_t n_revoked, cap_revoked;
    struct certs_stats st;
    uint64_t next_expiry;                 /* of m[0..n), kept by touched() */
    struct certs_clash clash;             /* certs_clash_set's */
};

struct certs *certs_new(const uint8_t authority[CERT_PUBKEY_LEN], certs_changed_fn changed,
                        void *ctx)
{
    struct certs *s = calloc(1, sizeof(*s));

    if (!s)
        return NULL;
    memcpy(s->authority, authority, CERT_PUBKEY_LEN);
    s->changed = changed;
    s->ctx = ctx;
    s->next_expiry = UINT64_MAX;
    return s;
}

void certs_free(struct certs *s)
{
    if (!s)
        return;
    free(s->m);
    free(s->revoked);
    free(s);
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
    }
    return "?";
}

static uint64_t expiry_of(const struct cert *c)
{
    if (c->has_token && c->token.not_after < c->not_after)
        return c->token.not_after;
    return c->not_after;
}

/* After every change of m: the next deadline, then the callback. */
static void touched(struct certs *s)
{
    s->next_expiry = UINT64_MAX;
    for (size_t i = 0; i < s->n; i++)
        if (expiry_of(&s->m[i].c) < s->next_expiry)
            s->next_expiry = expiry_of(&s->m[i].c);
    if (s->changed)
        s->changed(s->ctx);
}

/* --- look-ups ------------------------------------------------------------------ */

static struct held *by_id(const struct certs *s, const uint8_t id[CERT_ID_LEN])
{
    for (size_t i = 0; i < s->n; i++)
        if (!memcmp(s->m[i].id, id, CERT_ID_LEN))
            return &s->m[i];
    return NULL;
}

static struct held *by_key(const struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    for (size_t i = 0; i < s->n; i++)
        if (!memcmp(s->m[i].c.subject, key, CLUSTER_KEY_LEN))
            return &s->m[i];
    return NULL;
}

static struct held *by_name(const struct certs *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcasecmp(s->m[i].c.name, name))
            return &s->m[i];
    return NULL;
}

static bool is_revoked(const struct certs *s, const uint8_t id[CERT_ID_LEN])
{
    for (size_t i = 0; i < s->n_revoked; i++)
        if (!memcmp(s->revoked[i], id, CERT_ID_LEN))
            return true;
    return false;
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
}

/* --- changes ------------------------------------------------------------------- */

/* Whether a new member n takes a place (a name) that o holds. The
 * authority's own certificate over a token's; between two of the
 * authority's, the later not_before (its newer word: a re-keyed node's
 * certificate over an old one replayed), then the lower key, the same on
 * every node; a token's never takes what another member holds, whatever
 * dates or key order it picks: the one held first keeps it. */
static bool takes_from(const struct held *n, const struct held *o)
{
    if (n->has_token != o->has_token)
        return !n->has_token;
    if (n->has_token)
        return false;
    if (n->c.not_before != o->c.not_before)
        return n->c.not_before > o->c.not_before;
    return memcmp(n->c.subject, o->c.subject, CERT_PUBKEY_LEN) < 0;
}

/* Keeps the order held (certs_at's promise: first come first). */
static void drop_at(struct certs *s, size_t i)
{
    memmove(&s->m[i], &s->m[i + 1], (--s->n - i) * sizeof(s->m[0]));
}

static void drop(struct certs *s, struct held *h)
{
    drop_at(s, (size_t)(h - s->m));
}

/* How many members are held through token id, skip left out (the key
 * being replaced). */
static size_t token_count(const struct certs *s, const uint8_t id[CERT_ID_LEN],
                          const struct held *skip)
{
    size_t count = 0;

    for (size_t i = 0; i < s->n; i++)
        count += &s->m[i] != skip && s->m[i].has_token &&
                 !memcmp(s->m[i].token_id, id, CERT_ID_LEN);
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

/* What a new member n would push out: the holder of its name (*lost); a
 * refusal when n may not take it, or when its token's places are held. */
static enum certs_verdict make_room(struct certs *s, const struct held *n, const struct held *own,
                                    struct held **lost, const char **why)
{
    struct held *o = by_name(s, n->c.name);

    *lost = NULL;
    if (o && o != own) {
        if (!takes_from(n, o))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN, n->has_token
                          ? "another member holds its name" :
                          "a newer certificate of the authority gives its name to another key",
                          why);
        *lost = o;
    }
    if (n->has_token && token_count(s, n->token_id, own) >= token_places(&n->c))
        return refuse(&s->st.token_full, CERTS_TOKEN_FULL,
                      "its token's places are held by other members", why);
    return CERTS_ADDED;
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

static int grow(struct certs *s)
{
    size_t cap = s->cap ? 2 * s->cap : 16;
    struct held *m;

    if (cap > CERTS_MEMBERS_MAX)
        cap = CERTS_MEMBERS_MAX;
    if (!(m = realloc(s->m, cap * sizeof(*m))))
        return -ENOMEM;
    s->m = m;
    s->cap = cap;
    return 0;
}

static enum certs_verdict offer_member(struct certs *s, const struct cert *c, uint64_t now,
                                       const char **why)
{
    struct held n = { .c = *c }, *own, *lost;
    enum cert_verdict v;
    enum certs_verdict r;

    cert_id(c, n.id);
    n.has_token = cert_token_id(c, n.token_id);
    if (by_id(s, n.id))
        return CERTS_KNOWN;
    if (is_revoked(s, n.id) || is_revoked(s, c->subject) ||
        (n.has_token && is_revoked(s, n.token_id)))
        return refuse(&s->st.refused_revoked, CERTS_REVOKED,
                      "the authority revoked it, its token or its key", why);
    /* Times first: an expired statement offered again costs no signature. */
    if (now >= expiry_of(c) || now < c->not_before)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(now < c->not_before
                      ? CERT_NOT_YET_VALID : CERT_EXPIRED), why);
    if ((v = cert_verify(c, s->authority, now)) != CERT_OK)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(v), why);
    if ((own = by_key(s, c->subject))) {
        if (strcasecmp(own->c.name, c->name))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN,
                          "its key holds a certificate for another name", why);
        if (expiry_of(c) <= expiry_of(&own->c))
            return CERTS_KNOWN;           /* an older one than it holds */
        if (!replaces(&n, own))
            return refuse(&s->st.name_taken, CERTS_NAME_TAKEN,
                          "its key holds a certificate that only the authority or the same "
                          "token renews", why);
    }
    if ((r = make_room(s, &n, own, &lost, why)) != CERTS_ADDED)
        return r;
    if (own) {
        *own = n;
        if (lost)
            drop(s, lost);
        return CERTS_ADDED;
    }
    if (s->n - (lost != NULL) >= CERTS_MEMBERS_MAX)
        return refuse(&s->st.full, CERTS_FULL, "the store holds its most members", why);
    if (lost)
        drop(s, lost);
    if (s->n == s->cap && grow(s))
        return CERTS_NO_MEMORY;
    s->m[s->n++] = n;
    return CERTS_ADDED;
}

/* Takes what a revocation names (a statement id, a token id or a key)
 * into the list and drops what it names. */
static enum certs_verdict revoke(struct certs *s, const uint8_t what[CERT_ID_LEN],
                                 const char **why)
{
    size_t dropped = 0;

    if (s->n_revoked == CERTS_REVOKED_MAX)
        return refuse(&s->st.full, CERTS_FULL, "the store holds its most revocations", why);
    if (s->n_revoked == s->cap_revoked) {
        size_t cap = s->cap_revoked ? 2 * s->cap_revoked : 16;
        uint8_t (*r)[CERT_ID_LEN] = realloc(s->revoked, cap * sizeof(*r));
        if (!r)
            return CERTS_NO_MEMORY;
        s->revoked = r;
        s->cap_revoked = cap;
    }
    memcpy(s->revoked[s->n_revoked++], what, CERT_ID_LEN);
    for (size_t i = s->n; i-- > 0;) {
        const struct held *h = &s->m[i];
        if (!memcmp(h->id, what, CERT_ID_LEN) ||
            !memcmp(h->c.subject, what, CERT_PUBKEY_LEN) ||
            (h->has_token && !memcmp(h->token_id, what, CERT_ID_LEN))) {
            drop_at(s, i);
            dropped++;
        }
    }
    s->st.dropped_by_revocation += dropped;
    if (dropped)
        touched(s);
    return CERTS_REVOKING;
}

static enum certs_verdict offer_revocation(struct certs *s, const struct cert *c, uint64_t now,
                                           const char **why)
{
    enum cert_verdict v;

    if (is_revoked(s, c->subject))
        return CERTS_KNOWN;
    if ((v = cert_verify(c, s->authority, now)) != CERT_OK)
        return refuse(&s->st.invalid, CERTS_INVALID, cert_verdict_str(v), why);
    return revoke(s, c->subject, why);
}

enum certs_verdict certs_revoke_key(struct certs *s, const uint8_t key[CLUSTER_KEY_LEN])
{
    if (is_revoked(s, key))
        return CERTS_KNOWN;
    return revoke(s, key, NULL);
}

enum certs_verdict certs_offer_cert(struct certs *s, const struct cert *c, uint64_t now,
                                    const char **why)
{
    enum certs_verdict r;

    if (why)
        *why = "";
    switch (c->kind) {
    case CERT_REVOCATION:
        return offer_revocation(s, c, now, why);
    case CERT_MEMBER:
        r = offer_member(s, c, now, why);
        if (r == CERTS_ADDED)
            touched(s);
        return r;
    default:
        return refuse(&s->st.invalid, CERTS_INVALID, "a token is no member's certificate", why);
    }
}

enum certs_verdict certs_offer(struct certs *s, const char *line, uint64_t now,
                               const char **why)
{
    struct cert c;

    if (cert_parse(line, &c))
        return refuse(&s->st.invalid, CERTS_INVALID, "not a statement of the authority", why);
    return certs_offer_cert(s, &c, now, why);
}

void certs_retain(struct certs *s, certs_keep_fn keep, void *ctx)
{
    size_t dropped = 0;

    for (size_t i = s->n; i-- > 0;)
        if (!keep(ctx, &s->m[i].c)) {
            drop_at(s, i);
            dropped++;
        }
    if (dropped)
        touched(s);
}

uint64_t certs_next_expiry(const struct certs *s)
{
    return s->next_expiry;
}

void certs_run(struct certs *s, uint64_t now)
{
    size_t dropped = 0;

    if (now < s->next_expiry)
        return;
    for (size_t i = s->n; i-- > 0;)
        if (expiry_of(&s->m[i].c) <= now) {
            drop_at(s, i);
            dropped++;
        }
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
