/* SPDX-License-Identifier: MIT */
/* The cluster authority's signed statements (cert.h): the binary layout,
 * its text form, the field checks shared by signing and parsing, and
 * verification against the authority's key. */
#include "config/cert.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/routes.h"

#define PREFIX_MEMBER    "ddpnet-member:"
#define PREFIX_TOKEN     "ddpnet-token:"
#define PREFIX_REVOKE    "ddpnet-revoke:"
#define PREFIX_JOIN      "ddpnet-jointoken:"
#define PREFIX_SECRET    "ddpnet-authority-secret:"
#define B64_VARIANT      sodium_base64_VARIANT_URLSAFE_NO_PADDING

#define FLAG_ADDRESS     1u
#define FLAG_TOKEN       2u
#define FAMILY_V4        4u
#define FAMILY_V6        6u
#define SEED_LEN         crypto_sign_SEEDBYTES

/* version, kind, not_before, not_after, subject */
#define HEAD_LEN         (1u + 1u + 8u + 8u + CERT_PUBKEY_LEN)
#define STR_MAX          (1u + CLUSTER_NAME_MAX)
#define TAIL_LEN         (CERT_PUBKEY_LEN + CERT_SIG_LEN)
#define GROUPS_BIN_MAX   (1u + CERT_GROUPS_MAX * (1u + RULES_GROUP_NAME_MAX))
/* u8 n, each family, address, prefix length */
#define ROUTES_BIN_MAX   (1u + CLUSTER_ROUTES_MAX * (1u + 16u + 1u))
#define TOKEN_BIN_MAX    (HEAD_LEN + STR_MAX + 4u + GROUPS_BIN_MAX + ROUTES_BIN_MAX + TAIL_LEN)
/* What the encoder may write (every field full, the valid or not). A
 * valid statement is shorter: its text fits CERT_TEXT_MAX (text_fits). */
#define MEMBER_BIN_MAX   (HEAD_LEN + 1u + STR_MAX + 1u + 16u + \
                          1u + CLUSTER_ALIASES_MAX * STR_MAX + GROUPS_BIN_MAX + ROUTES_BIN_MAX + \
                          TOKEN_BIN_MAX + TAIL_LEN)
#define BIN_MAX          (MEMBER_BIN_MAX + SEED_LEN)   /* a join token fits too */

_Static_assert(sizeof(PREFIX_JOIN) - 1 + sodium_base64_ENCODED_LEN(TOKEN_BIN_MAX + SEED_LEN,
                                                                   B64_VARIANT)
               <= CERT_TEXT_MAX, "CERT_TEXT_MAX holds a join token");
_Static_assert(sizeof(PREFIX_SECRET) - 1 + sodium_base64_ENCODED_LEN(SEED_LEN, B64_VARIANT)
               <= CERT_SECRET_TEXT_MAX, "CERT_SECRET_TEXT_MAX holds a secret");

/* --- writing ---------------------------------------------------------------- */

/* A buffer of BIN_MAX bytes; every field written is bounded, so what the
 * encoder writes always fits (lengths are clamped, never trusted). */
struct wbuf {
    uint8_t b[BIN_MAX];
    size_t len;
};

static void put_u8(struct wbuf *w, uint8_t v)
{
    w->b[w->len++] = v;
}

static void put_u32(struct wbuf *w, uint32_t v)
{
    for (int i = 3; i >= 0; i--)
        put_u8(w, (uint8_t)(v >> (8 * i)));
}

static void put_u64(struct wbuf *w, uint64_t v)
{
    for (int i = 7; i >= 0; i--)
        put_u8(w, (uint8_t)(v >> (8 * i)));
}

static void put_bytes(struct wbuf *w, const void *p, size_t len)
{
    memcpy(w->b + w->len, p, len);
    w->len += len;
}

static void put_str(struct wbuf *w, const char *s)
{
    size_t len = strnlen(s, CLUSTER_NAME_MAX);

    put_u8(w, (uint8_t)len);
    put_bytes(w, s, len);
}

/* The version a statement is written in: the oldest that holds it, so
 * that a statement without routes keeps the bytes it had before them. */
static uint8_t version_of(uint8_t n_groups, uint8_t n_routes)
{
    return n_routes ? CERT_VERSION_ROUTES : n_groups ? CERT_VERSION_GROUPS : CERT_VERSION;
}

static void put_head(struct wbuf *w, enum cert_kind kind, uint8_t version, uint64_t not_before,
                     uint64_t not_after, const uint8_t subject[CERT_PUBKEY_LEN])
{
    put_u8(w, version);
    put_u8(w, (uint8_t)kind);
    put_u64(w, not_before);
    put_u64(w, not_after);
    put_bytes(w, subject, CERT_PUBKEY_LEN);
}

/* The trailers after a member's aliases or a token's max_members (cert.h):
 * version 1 none, 2 the groups, 3 the groups (maybe none) and the routes.
 * Counts are clamped, never trusted. */
static void put_trailers(struct wbuf *w, uint8_t n_groups, const char g[][RULES_GROUP_NAME_MAX + 1],
                         uint8_t n_routes, const struct cluster_route *r)
{
    n_groups = n_groups < CERT_GROUPS_MAX ? n_groups : CERT_GROUPS_MAX;
    n_routes = n_routes < CLUSTER_ROUTES_MAX ? n_routes : CLUSTER_ROUTES_MAX;
    if (!n_groups && !n_routes)
        return;
    put_u8(w, n_groups);
    for (uint8_t i = 0; i < n_groups; i++)
        put_str(w, g[i]);
    if (!n_routes)
        return;
    put_u8(w, n_routes);
    for (uint8_t i = 0; i < n_routes; i++) {
        bool v4 = r[i].net.family == AF_INET;

        put_u8(w, v4 ? FAMILY_V4 : FAMILY_V6);
        put_bytes(w, r[i].net.bytes, v4 ? 4 : 16);
        put_u8(w, r[i].prefix);
    }
}

/* A token's signed bytes, from the part a member carries. */
static void put_token_signed(struct wbuf *w, const struct cert_token_part *t)
{
    put_head(w, CERT_TOKEN, version_of(t->n_groups, t->n_routes), t->not_before, t->not_after,
             t->key);
    put_str(w, t->prefix);
    put_u32(w, t->max_members);
    put_trailers(w, t->n_groups, t->groups, t->n_routes, t->routes);
    put_bytes(w, t->signer, CERT_PUBKEY_LEN);
}

static void token_part_of(const struct cert *token, struct cert_token_part *t)
{
    memset(t, 0, sizeof(*t));
    t->not_before = token->not_before;
    t->not_after = token->not_after;
    memcpy(t->key, token->subject, CERT_PUBKEY_LEN);
    memcpy(t->prefix, token->name, sizeof(t->prefix));
    t->prefix[CLUSTER_NAME_MAX] = '\0';
    t->max_members = token->max_members;
    t->n_groups = token->n_groups;
    memcpy(t->groups, token->groups, sizeof(t->groups));
    t->n_routes = token->n_routes;
    memcpy(t->routes, token->routes, sizeof(t->routes));
    memcpy(t->signer, token->signer, CERT_PUBKEY_LEN);
}

/* The bytes c's signature covers (everything before it). */
static void encode_signed(const struct cert *c, struct wbuf *w)
{
    struct cert_token_part t;

    w->len = 0;
    if (c->kind == CERT_TOKEN) {
        token_part_of(c, &t);
        put_token_signed(w, &t);
        return;
    }
    put_head(w, c->kind,
             c->kind == CERT_MEMBER ? version_of(c->n_groups, c->n_routes) : CERT_VERSION,
             c->not_before, c->not_after, c->subject);
    if (c->kind == CERT_MEMBER) {
        uint8_t n = c->n_aliases < CLUSTER_ALIASES_MAX ? c->n_aliases : CLUSTER_ALIASES_MAX;

        put_u8(w, (uint8_t)((c->has_address ? FLAG_ADDRESS : 0) |
                            (c->has_token ? FLAG_TOKEN : 0)));
        put_str(w, c->name);
        if (c->has_address) {
            bool v4 = c->address.family == AF_INET;

            put_u8(w, v4 ? FAMILY_V4 : FAMILY_V6);
            put_bytes(w, c->address.bytes, v4 ? 4 : 16);
        }
        put_u8(w, n);
        for (uint8_t i = 0; i < n; i++)
            put_str(w, c->aliases[i]);
        put_trailers(w, c->n_groups, c->groups, c->n_routes, c->routes);
        if (c->has_token) {
            put_token_signed(w, &c->token);
            put_bytes(w, c->token_sig, CERT_SIG_LEN);
        }
    }
    put_bytes(w, c->signer, CERT_PUBKEY_LEN);
}

/* --- reading ---------------------------------------------------------------- */

struct rbuf {
    const uint8_t *b;
    size_t len, off;
    bool bad;
};

static const uint8_t *get_bytes(struct rbuf *r, size_t len)
{
    if (r->bad || r->len - r->off < len) {
        r->bad = true;
        return NULL;
    }
    r->off += len;
    return r->b + r->off - len;
}

static uint8_t get_u8(struct rbuf *r)
{
    const uint8_t *p = get_bytes(r, 1);

    return p ? p[0] : 0;
}

static uint64_t get_uint(struct rbuf *r, size_t len)
{
    const uint8_t *p = get_bytes(r, len);
    uint64_t v = 0;

    for (size_t i = 0; p && i < len; i++)
        v = v << 8 | p[i];
    return v;
}

static void get_copy(struct rbuf *r, void *out, size_t len)
{
    const uint8_t *p = get_bytes(r, len);

    if (p)
        memcpy(out, p, len);
}

/* A length-prefixed string of 1..CLUSTER_NAME_MAX bytes, no NUL inside
 * (the field checks judge its characters). */
static void get_str(struct rbuf *r, char out[CLUSTER_NAME_MAX + 1])
{
    uint8_t len = get_u8(r);
    const uint8_t *p;

    if (len == 0 || len > CLUSTER_NAME_MAX) {
        r->bad = true;
        return;
    }
    p = get_bytes(r, len);
    if (!p || memchr(p, '\0', len)) {
        r->bad = true;
        return;
    }
    memcpy(out, p, len);
    out[len] = '\0';
}

static void get_address(struct rbuf *r, struct cluster_addr *a);

/* Version 1: no groups; 2: at least one (else it is written as 1); 3:
 * any number, routes follow. */
static void get_groups(struct rbuf *r, uint8_t version, uint8_t *n,
                       char g[][RULES_GROUP_NAME_MAX + 1])
{
    char s[CLUSTER_NAME_MAX + 1];

    *n = 0;
    if (version == CERT_VERSION || r->bad)
        return;
    *n = get_u8(r);
    if ((*n == 0 && version == CERT_VERSION_GROUPS) || *n > CERT_GROUPS_MAX) {
        r->bad = true;
        *n = 0;
        return;
    }
    for (uint8_t i = 0; i < *n && !r->bad; i++) {
        get_str(r, s);
        if (strlen(s) > RULES_GROUP_NAME_MAX)
            r->bad = true;
        else
            memcpy(g[i], s, strlen(s) + 1);
    }
}
/* Version 3 only: at least one route (else it is written as 1 or 2);
 * their values are fields_valid's to check. */
static void get_routes(struct rbuf *r, uint8_t version, uint8_t *n, struct cluster_route *routes)
{
    *n = 0;
    if (version != CERT_VERSION_ROUTES || r->bad)
        return;
    *n = get_u8(r);
    if (*n == 0 || *n > CLUSTER_ROUTES_MAX) {
        r->bad = true;
        *n = 0;
        return;
    }
    for (uint8_t i = 0; i < *n && !r->bad; i++) {
        get_address(r, &routes[i].net);
        routes[i].prefix = get_u8(r);
    }
}

/* The version byte; what it allows is the caller's to read. */
static uint8_t get_head(struct rbuf *r, struct cert *c)
{
    uint8_t v = get_u8(r);

    if (v != CERT_VERSION && v != CERT_VERSION_GROUPS && v != CERT_VERSION_ROUTES)
        r->bad = true;
    c->kind = (enum cert_kind)get_u8(r);
    c->not_before = get_uint(r, 8);
    c->not_after = get_uint(r, 8);
    get_copy(r, c->subject, CERT_PUBKEY_LEN);
    return v;
}

static void get_address(struct rbuf *r, struct cluster_addr *a)
{
    uint8_t family = get_u8(r);

    if (family == FAMILY_V4) {
        a->family = AF_INET;
        get_copy(r, a->bytes, 4);
    } else if (family == FAMILY_V6) {
        a->family = AF_INET6;
        get_copy(r, a->bytes, 16);
    } else {
        r->bad = true;
    }
}

static void get_statement(struct rbuf *r, struct cert *c, bool may_carry_token);

static void get_member(struct rbuf *r, struct cert *c, uint8_t version)
{
    uint8_t flags = get_u8(r);

    if (flags & ~(FLAG_ADDRESS | FLAG_TOKEN))
        r->bad = true;
    get_str(r, c->name);
    c->has_address = flags & FLAG_ADDRESS;
    if (c->has_address)
        get_address(r, &c->address);
    c->n_aliases = get_u8(r);
    if (c->n_aliases > CLUSTER_ALIASES_MAX) {
        r->bad = true;
        return;
    }
    for (uint8_t i = 0; i < c->n_aliases && !r->bad; i++)
        get_str(r, c->aliases[i]);
    get_groups(r, version, &c->n_groups, c->groups);
    get_routes(r, version, &c->n_routes, c->routes);
    c->has_token = flags & FLAG_TOKEN;
    if (c->has_token && !r->bad) {
        struct cert t;

        get_statement(r, &t, false);
        if (t.kind != CERT_TOKEN)
            r->bad = true;
        token_part_of(&t, &c->token);
        memcpy(c->token_sig, t.sig, CERT_SIG_LEN);
    }
}

/* One statement from the reader's position; a token carried inside a
 * member may not carry one itself (may_carry_token false). */
static void get_statement(struct rbuf *r, struct cert *c, bool may_carry_token)
{
    uint8_t version;

    memset(c, 0, sizeof(*c));
    version = get_head(r, c);
    switch (c->kind) {
    case CERT_MEMBER:
        if (!may_carry_token)
            r->bad = true;
        else
            get_member(r, c, version);
        break;
    case CERT_TOKEN:
        get_str(r, c->name);
        c->max_members = (uint32_t)get_uint(r, 4);
        get_groups(r, version, &c->n_groups, c->groups);
        get_routes(r, version, &c->n_routes, c->routes);
        break;
    case CERT_REVOCATION:
        if (version != CERT_VERSION)
            r->bad = true;
        break;
    default:
        r->bad = true;
    }
    if (r->bad)
        return;
    get_copy(r, c->signer, CERT_PUBKEY_LEN);
    get_copy(r, c->sig, CERT_SIG_LEN);
}

/* --- field checks (shared by signing and parsing) --------------------------- */

static bool all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;
    uint8_t acc = 0;

    for (size_t i = 0; i < len; i++)
        acc |= b[i];
    return acc == 0;
}

/* A token's prefix: 1..CLUSTER_NAME_MAX-1 characters that begin a valid
 * name ("spot-", "gpu.", "a"); so one more letter makes a name. */
static bool prefix_valid(const char *prefix)
{
    char probe[CLUSTER_NAME_MAX + 2];
    size_t len = strnlen(prefix, CLUSTER_NAME_MAX + 1);

    if (len == 0 || len >= CLUSTER_NAME_MAX)
        return false;
    memcpy(probe, prefix, len);
    probe[len] = 'a';
    probe[len + 1] = '\0';
    return cluster_name_valid(probe);
}

/* A fixed overlay address a certificate may name: a unicast host, not
 * unspecified, loopback, multicast or the IPv4 broadcast address (the
 * cluster's network, which the statement does not know, is the caller's). */
static bool address_valid(const struct cluster_addr *a)
{
    static const uint8_t bcast4[4] = { 0xff, 0xff, 0xff, 0xff };

    if (a->family == AF_INET)
        return !all_zero(a->bytes, 4) && a->bytes[0] < 224 &&
               memcmp(a->bytes, bcast4, 4) != 0 && !cluster_addr_is_loopback(a);
    if (a->family == AF_INET6)
        return !all_zero(a->bytes, 16) && a->bytes[0] != 0xff && !cluster_addr_is_loopback(a);
    return false;
}

static bool alias_valid(const char *s)
{
    size_t len = strnlen(s, CLUSTER_NAME_MAX + 1);

    return len > 0 && len <= CLUSTER_NAME_MAX && cluster_hostname_valid(s);
}

/* 0..CERT_GROUPS_MAX valid names, none twice (case aside): one set of
 * groups, one encoding. */
static bool groups_valid(uint8_t n, const char g[][RULES_GROUP_NAME_MAX + 1])
{
    if (n > CERT_GROUPS_MAX)
        return false;
    for (uint8_t i = 0; i < n; i++) {
        if (!rules_group_name_valid(g[i]))
            return false;
        for (uint8_t j = 0; j < i; j++)
            if (!strcasecmp(g[i], g[j]))
                return false;
    }
    return true;
}
/* Routes as the cluster file grants them (config/routes.h): 1..32 or
 * 1..128 bits, host bits clear, no two overlapping (so none twice). */
static bool routes_valid(uint8_t n, const struct cluster_route *r)
{
    if (n > CLUSTER_ROUTES_MAX)
        return false;
    for (uint8_t i = 0; i < n; i++) {
        struct cluster_addr masked = r[i].net;
        unsigned max = r[i].net.family == AF_INET ? 32u : 128u;

        if ((r[i].net.family != AF_INET && r[i].net.family != AF_INET6) || r[i].prefix == 0 ||
            r[i].prefix > max)
            return false;
        cluster_addr_mask(&masked, r[i].prefix);
        if (!cluster_addr_equal(&masked, &r[i].net))
            return false;
        for (uint8_t j = 0; j < i; j++)
            if (cluster_route_overlaps(&r[i], &r[j]))
                return false;
    }
    return true;
}

static bool token_part_valid(const struct cert_token_part *t)
{
    return prefix_valid(t->prefix) && t->not_after > t->not_before &&
           groups_valid(t->n_groups, t->groups) && routes_valid(t->n_routes, t->routes);
}

static bool member_valid(const struct cert *c)
{
    if (strnlen(c->name, sizeof(c->name)) > CLUSTER_NAME_MAX || !cluster_name_valid(c->name) ||
        c->not_after <= c->not_before || c->max_members != 0 ||
        c->n_aliases > CLUSTER_ALIASES_MAX)
        return false;
    if (c->has_address && !address_valid(&c->address))
        return false;
    /* a token's member has neither: refused here, for every certificate
     * read or signed, so that the longest valid text stays under
     * CERT_TEXT_MAX (within_token relies on it) */
    if (c->has_token && (c->has_address || c->n_aliases))
        return false;
    for (uint8_t i = 0; i < c->n_aliases; i++)
        if (!alias_valid(c->aliases[i]))
            return false;
    if (!groups_valid(c->n_groups, c->groups) || !routes_valid(c->n_routes, c->routes))
        return false;
    return !c->has_token || token_part_valid(&c->token);
}

/* What a statement of c's kind does not carry must be empty: a field set
 * there would be signed over nothing. */
static bool foreign_fields_empty(const struct cert *c)
{
    return !c->has_address && c->n_aliases == 0 && !c->has_token;
}

static bool fields_valid_kind(const struct cert *c)
{
    switch (c->kind) {
    case CERT_MEMBER:
        return member_valid(c);
    case CERT_TOKEN:
        return foreign_fields_empty(c) && prefix_valid(c->name) &&
               c->not_after > c->not_before && groups_valid(c->n_groups, c->groups) &&
               routes_valid(c->n_routes, c->routes);
    case CERT_REVOCATION:
        return foreign_fields_empty(c) && c->name[0] == '\0' && c->not_after == 0 &&
               c->max_members == 0 && c->n_groups == 0 && c->n_routes == 0;
    }
    return false;
}

/* Its text, signature included, fits CERT_TEXT_MAX (a NUL too): what
 * every buffer and a disco CERT hold. A member full of groups and
 * routes through a token full of them would not; it is refused whole. */
static bool text_fits(const struct cert *c)
{
    struct wbuf w;

    encode_signed(c, &w);
    return sizeof(PREFIX_MEMBER) - 1 +
               sodium_base64_ENCODED_LEN(w.len + CERT_SIG_LEN, B64_VARIANT) <= CERT_TEXT_MAX;
}

static bool fields_valid(const struct cert *c)
{
    return fields_valid_kind(c) && text_fits(c);
}

/* --- text ------------------------------------------------------------------- */

static const char *kind_prefix(enum cert_kind k)
{
    switch (k) {
    case CERT_MEMBER:
        return PREFIX_MEMBER;
    case CERT_TOKEN:
        return PREFIX_TOKEN;
    case CERT_REVOCATION:
        return PREFIX_REVOKE;
    }
    return NULL;
}

static int text_write(const char *prefix, const uint8_t *bin, size_t len, char *out, size_t cap)
{
    size_t plen = strlen(prefix);

    if (cap < plen + sodium_base64_ENCODED_LEN(len, B64_VARIANT))
        return -ENOSPC;
    memcpy(out, prefix, plen);
    sodium_bin2base64(out + plen, cap - plen, bin, len, B64_VARIANT);
    return 0;
}

static bool is_space(char ch)
{
    return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r';
}

/* The base64 after one of prefixes (which one: *which) with surrounding
 * spaces dropped, decoded into bin. 0 or -EINVAL. */
static int text_read(const char *text, const char *const *prefixes, size_t n_prefixes,
                     size_t *which, uint8_t *bin, size_t cap, size_t *len)
{
    const char *end, *b64_end = NULL;

    while (is_space(*text))
        text++;
    end = text + strlen(text);
    while (end > text && is_space(end[-1]))
        end--;
    for (*which = 0; *which < n_prefixes; (*which)++) {
        size_t plen = strlen(prefixes[*which]);

        if ((size_t)(end - text) > plen && !strncmp(text, prefixes[*which], plen)) {
            text += plen;
            break;
        }
    }
    if (*which == n_prefixes || (size_t)(end - text) > sodium_base64_ENCODED_LEN(cap, B64_VARIANT))
        return -EINVAL;
    if (sodium_base642bin(bin, cap, text, (size_t)(end - text), NULL, len, &b64_end,
                          B64_VARIANT) != 0 || b64_end != end)
        return -EINVAL;
    return 0;
}

/* --- the interface ---------------------------------------------------------- */

int cert_keypair(uint8_t pub[CERT_PUBKEY_LEN], uint8_t secret[CERT_SECRET_LEN])
{
    if (sodium_init() < 0)
        return -EIO;
    return crypto_sign_keypair(pub, secret) == 0 ? 0 : -EIO;
}

int cert_sign(struct cert *c, const uint8_t secret[CERT_SECRET_LEN], char *out, size_t cap)
{
    struct wbuf w;
    int ret;

    /* libsodium's secret key ends with its public key */
    memcpy(c->signer, secret + SEED_LEN, CERT_PUBKEY_LEN);
    if (!fields_valid_kind(c) || !kind_prefix(c->kind) ||
        (c->has_token && memcmp(c->signer, c->token.key, CERT_PUBKEY_LEN) != 0))
        return -EINVAL;
    if (!text_fits(c))
        return -EMSGSIZE;
    encode_signed(c, &w);
    crypto_sign_detached(c->sig, NULL, w.b, w.len, secret);
    put_bytes(&w, c->sig, CERT_SIG_LEN);
    ret = text_write(kind_prefix(c->kind), w.b, w.len, out, cap);
    sodium_memzero(&w, sizeof(w));
    return ret;
}

int cert_format(const struct cert *c, char *out, size_t cap)
{
    struct wbuf w;
    int ret;

    if (!fields_valid(c) || !kind_prefix(c->kind))
        return -EINVAL;
    encode_signed(c, &w);
    put_bytes(&w, c->sig, CERT_SIG_LEN);
    ret = text_write(kind_prefix(c->kind), w.b, w.len, out, cap);
    sodium_memzero(&w, sizeof(w));
    return ret;
}

/* A whole statement from bin: nothing left over, every field valid. */
static int parse_bin(const uint8_t *bin, size_t len, struct cert *out, size_t *used)
{
    struct rbuf r = { .b = bin, .len = len };

    get_statement(&r, out, true);
    if (r.bad || (!used && r.off != len) || !fields_valid(out)) {
        memset(out, 0, sizeof(*out));
        return -EINVAL;
    }
    if (used)
        *used = r.off;
    return 0;
}

int cert_parse(const char *text, struct cert *out)
{
    static const char *const prefixes[] = { PREFIX_MEMBER, PREFIX_TOKEN, PREFIX_REVOKE };
    static const enum cert_kind kinds[] = { CERT_MEMBER, CERT_TOKEN, CERT_REVOCATION };
    uint8_t bin[BIN_MAX];
    size_t len = 0, which;

    memset(out, 0, sizeof(*out));
    if (text_read(text, prefixes, 3, &which, bin, sizeof(bin), &len) != 0 ||
        parse_bin(bin, len, out, NULL) != 0)
        return -EINVAL;
    /* the text's word for the kind must be the bytes' */
    if (out->kind != kinds[which]) {
        memset(out, 0, sizeof(*out));
        return -EINVAL;
    }
    return 0;
}

static bool sig_ok(const struct cert *c, const uint8_t key[CERT_PUBKEY_LEN])
{
    struct wbuf w;

    encode_signed(c, &w);
    return crypto_sign_verify_detached(c->sig, w.b, w.len, key) == 0;
}

static bool token_sig_ok(const struct cert *c, const uint8_t authority[CERT_PUBKEY_LEN])
{
    struct wbuf w = { .len = 0 };

    if (sodium_memcmp(c->token.signer, authority, CERT_PUBKEY_LEN) != 0)
        return false;
    put_token_signed(&w, &c->token);
    return crypto_sign_verify_detached(c->token_sig, w.b, w.len, authority) == 0;
}

/* A token signs a name under its prefix for a key, inside its lifetime,
 * and nothing else: an address or an alias is the authority's to give
 * (a token holder naming another member's address or a host name such
 * as metadata.google.internal would take it). */
static bool token_names_group(const struct cert_token_part *t, const char *g)
{
    for (uint8_t i = 0; i < t->n_groups; i++)
        if (!strcasecmp(t->groups[i], g))
            return true;
    return false;
}
bool cert_token_grants(const struct cert_token_part *t, const struct cluster_route *r)
{
    for (uint8_t i = 0; i < t->n_routes && i < CLUSTER_ROUTES_MAX; i++)
        if (t->routes[i].net.family == r->net.family && t->routes[i].prefix <= r->prefix &&
            cluster_route_holds(&t->routes[i], &r->net))
            return true;
    return false;
}

/* ... and the groups it names, no other: a token holder asking for more
 * (ssh's, the operators') is refused however it signs; and a route only
 * inside those the token grants (none unless the authority wrote some
 * into it: a token holder granting itself a prefix would draw others'
 * traffic). */
static bool within_token(const struct cert *c)
{
    size_t plen = strnlen(c->token.prefix, CLUSTER_NAME_MAX);

    for (uint8_t i = 0; i < c->n_groups; i++)
        if (!token_names_group(&c->token, c->groups[i]))
            return false;
    for (uint8_t i = 0; i < c->n_routes; i++)
        if (!cert_token_grants(&c->token, &c->routes[i]))
            return false;
    /* (an address or aliases it cannot have: member_valid refuses them
     * before a certificate gets here) */
    return strncmp(c->name, c->token.prefix, plen) == 0 &&
           c->not_before >= c->token.not_before && c->not_after <= c->token.not_after;
}

enum cert_verdict cert_verify(const struct cert *c, const uint8_t authority[CERT_PUBKEY_LEN],
                              uint64_t now)
{
    const uint8_t *key = authority;

    if (!kind_prefix(c->kind) || (c->kind != CERT_MEMBER && c->has_token))
        return CERT_WRONG_KIND;
    if (c->kind == CERT_MEMBER && c->has_token) {
        if (!token_sig_ok(c, authority))
            return CERT_BAD_SIGNATURE;
        key = c->token.key;
    }
    if (memcmp(c->signer, key, CERT_PUBKEY_LEN) != 0 || !sig_ok(c, key))
        return CERT_BAD_SIGNATURE;
    if (c->kind == CERT_MEMBER && c->has_token && !within_token(c))
        return CERT_OUTSIDE_TOKEN;
    if (c->kind == CERT_REVOCATION)
        return CERT_OK;   /* honoured from the moment it is seen, for ever */
    if (now < c->not_before && c->not_before - now > CERT_CLOCK_SKEW_S)
        return CERT_NOT_YET_VALID;
    if (now >= c->not_after)
        return CERT_EXPIRED;
    return CERT_OK;
}

void cert_id(const struct cert *c, uint8_t id[CERT_ID_LEN])
{
    struct wbuf w;

    encode_signed(c, &w);
    crypto_generichash(id, CERT_ID_LEN, w.b, w.len, NULL, 0);
}

bool cert_token_id(const struct cert *c, uint8_t id[CERT_ID_LEN])
{
    struct wbuf w = { .len = 0 };

    if (c->kind != CERT_MEMBER || !c->has_token)
        return false;
    put_token_signed(&w, &c->token);
    crypto_generichash(id, CERT_ID_LEN, w.b, w.len, NULL, 0);
    return true;
}

void cert_token_embed(struct cert *member, const struct cert *token)
{
    token_part_of(token, &member->token);
    memcpy(member->token_sig, token->sig, CERT_SIG_LEN);
    member->has_token = true;
}

int cert_join_token_format(const struct cert *token, const uint8_t secret[CERT_SECRET_LEN],
                           char *out, size_t cap)
{
    struct wbuf w;
    int ret;

    if (token->kind != CERT_TOKEN)
        return -EINVAL;
    encode_signed(token, &w);
    put_bytes(&w, token->sig, CERT_SIG_LEN);
    put_bytes(&w, secret, SEED_LEN);
    ret = text_write(PREFIX_JOIN, w.b, w.len, out, cap);
    sodium_memzero(&w, sizeof(w));
    return ret;
}

int cert_join_token_parse(const char *text, struct cert *token, uint8_t secret[CERT_SECRET_LEN])
{
    static const char *const prefixes[] = { PREFIX_JOIN };
    uint8_t bin[BIN_MAX], pub[CERT_PUBKEY_LEN];
    size_t len = 0, used = 0, which;
    int ret = -EINVAL;

    memset(token, 0, sizeof(*token));
    sodium_memzero(secret, CERT_SECRET_LEN);
    /* the seed must make the very key the statement names */
    if (text_read(text, prefixes, 1, &which, bin, sizeof(bin), &len) == 0 &&
        parse_bin(bin, len, token, &used) == 0 && token->kind == CERT_TOKEN &&
        len - used == SEED_LEN && crypto_sign_seed_keypair(pub, secret, bin + used) == 0 &&
        sodium_memcmp(pub, token->subject, CERT_PUBKEY_LEN) == 0)
        ret = 0;
    if (ret != 0) {
        sodium_memzero(secret, CERT_SECRET_LEN);
        memset(token, 0, sizeof(*token));
    }
    sodium_memzero(bin, sizeof(bin));
    return ret;
}

const char *cert_verdict_str(enum cert_verdict v)
{
    switch (v) {
    case CERT_OK:
        return "valid";
    case CERT_BAD_SIGNATURE:
        return "bad signature or not signed by the authority";
    case CERT_NOT_YET_VALID:
        return "not yet valid";
    case CERT_EXPIRED:
        return "expired";
    case CERT_OUTSIDE_TOKEN:
        return "outside its token's bounds (name prefix, lifetime, groups, routes; no address, "
               "no aliases)";
    case CERT_WRONG_KIND:
        return "wrong kind of statement";
    }
    return "unknown verdict";
}

const char *cert_kind_str(enum cert_kind k)
{
    switch (k) {
    case CERT_MEMBER:
        return "member";
    case CERT_TOKEN:
        return "token";
    case CERT_REVOCATION:
        return "revocation";
    }
    return "unknown";
}

void cert_key_format(const uint8_t pub[CERT_PUBKEY_LEN], char out[CERT_KEY_TEXT_LEN + 1])
{
    sodium_bin2base64(out, CERT_KEY_TEXT_LEN + 1, pub, CERT_PUBKEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
}

int cert_key_parse(const char *text, uint8_t pub[CERT_PUBKEY_LEN])
{
    const char *end;
    size_t len = 0;

    while (is_space(*text))
        text++;
    end = text + strlen(text);
    while (end > text && is_space(end[-1]))
        end--;
    if (end - text != CERT_KEY_TEXT_LEN ||
        sodium_base642bin(pub, CERT_PUBKEY_LEN, text, CERT_KEY_TEXT_LEN, NULL, &len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) != 0 || len != CERT_PUBKEY_LEN) {
        memset(pub, 0, CERT_PUBKEY_LEN);
        return -EINVAL;
    }
    return 0;
}

int cert_secret_format(const uint8_t secret[CERT_SECRET_LEN], char *out, size_t cap)
{
    return text_write(PREFIX_SECRET, secret, SEED_LEN, out, cap);
}

int cert_secret_parse(const char *text, uint8_t secret[CERT_SECRET_LEN])
{
    static const char *const prefixes[] = { PREFIX_SECRET };
    uint8_t seed[SEED_LEN + 1], pub[CERT_PUBKEY_LEN];
    size_t len = 0, which;
    int ret = -EINVAL;

    if (text_read(text, prefixes, 1, &which, seed, sizeof(seed), &len) == 0 &&
        len == SEED_LEN && crypto_sign_seed_keypair(pub, secret, seed) == 0)
        ret = 0;
    else
        sodium_memzero(secret, CERT_SECRET_LEN);
    sodium_memzero(seed, sizeof(seed));
    return ret;
}

/* --- the node a certificate makes ------------------------------------------------- */

#define CERT_ADDRESS_DOMAIN "ddpnet-address"
#define CERT_HOST_BITS_MAX  62u

int cert_derive_address(const uint8_t key[CERT_PUBKEY_LEN], const struct cluster *cl,
                        struct cluster_addr *out)
{
    unsigned width = cl->network.family == AF_INET6 ? 128u : 32u;
    unsigned bits = width > cl->prefix ? width - cl->prefix : 0;
    uint8_t h[32];
    uint64_t v = 0, hosts, carry;
    crypto_generichash_state st;

    if (bits > CERT_HOST_BITS_MAX)
        bits = CERT_HOST_BITS_MAX;
    if (bits < 2)
        return -ENOSPC;
    hosts = (UINT64_C(1) << bits) - 2;
    crypto_generichash_init(&st, NULL, 0, sizeof(h));
    crypto_generichash_update(&st, (const uint8_t *)CERT_ADDRESS_DOMAIN,
                              sizeof(CERT_ADDRESS_DOMAIN) - 1);
    crypto_generichash_update(&st, key, CERT_PUBKEY_LEN);
    crypto_generichash_final(&st, h, sizeof(h));
    for (int i = 0; i < 8; i++)
        v = v << 8 | h[i];
    carry = v % hosts + 1;
    *out = cl->network;
    /* Big-endian addition of carry to the address (its host bits are 0). */
    for (int i = (int)(width / 8) - 1; i >= 0 && carry; i--) {
        uint64_t sum = out->bytes[i] + (carry & 0xff);
        out->bytes[i] = (uint8_t)sum;
        carry = (carry >> 8) + (sum >> 8);
    }
    return 0;
}

int cert_member_node(const struct cert *c, const struct cluster *cl, struct cluster_node *out)
{
    int ret;

    if (c->kind != CERT_MEMBER)
        return -EINVAL;
    memset(out, 0, sizeof(*out));
    snprintf(out->name, sizeof(out->name), "%s", c->name);
    memcpy(out->public_key, c->subject, CLUSTER_KEY_LEN);
    out->n_aliases = c->n_aliases;
    memcpy(out->aliases, c->aliases, sizeof(out->aliases));
    out->n_routes = c->n_routes;
    memcpy(out->routes, c->routes, sizeof(out->routes));
    for (uint8_t i = 0; i < c->n_groups && i < CERT_GROUPS_MAX; i++) {
        uint64_t m = rules_group_mask(&cl->rules, c->groups[i]);
        out->groups |= m == RULES_ANY ? 0 : m;
    }
    if (c->has_address) {
        if (!cluster_addr_in_network(&c->address, &cl->network, cl->prefix))
            return -EINVAL;
        out->address = c->address;
        return 0;
    }
    ret = cert_derive_address(c->subject, cl, &out->address);
    return ret;
}

uint64_t cert_end(const struct cert *c)
{
    if (c->has_token && c->token.not_after < c->not_after)
        return c->token.not_after;
    return c->not_after;
}

/* The same groups in the same order (a renewal is signed from the one
 * before it: one order). */
static bool same_groups(const struct cert *n, const struct cert *o)
{
    if (n->n_groups != o->n_groups)
        return false;
    for (uint8_t i = 0; i < n->n_groups; i++)
        if (strcasecmp(n->groups[i], o->groups[i]))
            return false;
    return true;
}

/* The same routes in the same order: part of the model, checked when
 * it is made, so a renewal that changed them would skip that check. */
static bool same_routes(const struct cert *n, const struct cert *o)
{
    if (n->n_routes != o->n_routes)
        return false;
    for (uint8_t i = 0; i < n->n_routes; i++)
        if (!cluster_route_equal(&n->routes[i], &o->routes[i]))
            return false;
    return true;
}

bool cert_renews(const struct cert *n, const struct cert *o)
{
    if (n->kind != CERT_MEMBER || o->kind != CERT_MEMBER ||
        memcmp(n->subject, o->subject, CERT_PUBKEY_LEN) || strcasecmp(n->name, o->name) ||
        n->has_address != o->has_address ||
        (n->has_address && !cluster_addr_equal(&n->address, &o->address)) ||
        !same_groups(n, o) || !same_routes(n, o))
        return false;
    return cert_end(n) > cert_end(o);
}

enum cert_verdict cert_verify_cluster(const struct cert *c, const struct cluster *cl,
                                      uint64_t now)
{
    enum cert_verdict v = cert_verify(c, cl->authority, now);

    if (v == CERT_BAD_SIGNATURE && cl->has_authority_next)
        v = cert_verify(c, cl->authority_next, now);
    return v;
}
