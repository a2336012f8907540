/* SPDX-License-Identifier: MIT */
/* Tests of config/cert.c, the authority's signed statements: the exact
 * text of a member, a token and a revocation signed with a fixed key at
 * fixed times (golden bytes: the layout cert.h states, byte for byte),
 * each kind signed and parsed back, every byte of each binary form
 * altered in turn (parse or verify must refuse each), lifetimes at their
 * edges, a token's prefix and lifetime limits, another authority's
 * statements, malformed text and fields refused, the join token with its
 * secret (a mismatched secret refused), the key and secret texts. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/routes.h"

#define T0      1700000000u          /* 2023-11-14 22:13:20 UTC */
#define DAY     86400u
#define B64     sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define HEAD_BYTES (1u + 1u + 8u + 8u + CERT_PUBKEY_LEN)   /* version .. subject */
#define TAIL_BYTES (CERT_PUBKEY_LEN + CERT_SIG_LEN)         /* signer, signature */

struct keys {
    uint8_t pub[CERT_PUBKEY_LEN];
    uint8_t secret[CERT_SECRET_LEN];
};

static struct keys authority, other_authority, token_keys;

static void seeded(struct keys *k, uint8_t fill)
{
    uint8_t seed[crypto_sign_SEEDBYTES];

    memset(seed, fill, sizeof(seed));
    assert_int_equal(crypto_sign_seed_keypair(k->pub, k->secret, seed), 0);
}

static int setup(void **state)
{
    (void)state;
    if (sodium_init() < 0)
        return -1;
    seeded(&authority, 0x11);
    seeded(&other_authority, 0x22);
    seeded(&token_keys, 0x33);
    return 0;
}

static void member_fields(struct cert *c, const char *name, uint64_t nb, uint64_t na)
{
    memset(c, 0, sizeof(*c));
    c->kind = CERT_MEMBER;
    c->not_before = nb;
    c->not_after = na;
    for (unsigned i = 0; i < CERT_PUBKEY_LEN; i++)
        c->subject[i] = (uint8_t)(0xa0 + i);
    snprintf(c->name, sizeof(c->name), "%s", name);
}

/* A member with every optional field: address and two aliases. */
static void full_member(struct cert *c)
{
    member_fields(c, "gpu-1", T0, T0 + 365 * DAY);
    c->has_address = true;
    assert_int_equal(cluster_addr_parse("10.77.0.7", &c->address), 0);
    c->n_aliases = 2;
    strcpy(c->aliases[0], "gpu-1.lab");
    strcpy(c->aliases[1], "trainer");
}

static void token_fields(struct cert *t, const char *prefix, uint64_t nb, uint64_t na,
                         uint32_t max)
{
    memset(t, 0, sizeof(*t));
    t->kind = CERT_TOKEN;
    t->not_before = nb;
    t->not_after = na;
    memcpy(t->subject, token_keys.pub, CERT_PUBKEY_LEN);
    snprintf(t->name, sizeof(t->name), "%s", prefix);
    t->max_members = max;
}

static void sign_ok(struct cert *c, const struct keys *k, char text[CERT_TEXT_MAX])
{
    assert_int_equal(cert_sign(c, k->secret, text, CERT_TEXT_MAX), 0);
}

/* A token statement signed by the authority, and a member signed with
 * it (spot-7, inside the token's week). */
static void token_member(struct cert *token, struct cert *member, char text[CERT_TEXT_MAX])
{
    char ttext[CERT_TEXT_MAX];

    token_fields(token, "spot-", T0, T0 + 7 * DAY, 10);
    sign_ok(token, &authority, ttext);
    member_fields(member, "spot-7", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(member, token);
    sign_ok(member, &token_keys, text);
}

static size_t decode(const char *text, uint8_t *bin, size_t cap)
{
    const char *colon = strchr(text, ':');
    size_t len = 0;

    assert_non_null(colon);
    assert_int_equal(sodium_base642bin(bin, cap, colon + 1, strlen(colon + 1), NULL, &len,
                                       NULL, B64), 0);
    return len;
}

static void encode(const char *prefix, const uint8_t *bin, size_t len, char *out, size_t cap)
{
    size_t plen = strlen(prefix);

    assert_true(cap > plen + sodium_base64_ENCODED_LEN(len, B64));
    memcpy(out, prefix, plen);
    sodium_bin2base64(out + plen, cap - plen, bin, len, B64);
}

static void routes_of(struct cluster_route *r, uint8_t *n, const char *text)
{
    const char *why = NULL;
    char bad[64];

    assert_int_equal(cluster_routes_parse(text, r, n, &why, bad, sizeof(bad)), 0);
}

/* --- golden ------------------------------------------------------------------ */

/* The golden texts were computed apart from this code, from the layout in
 * cert.h alone (Python's `cryptography` Ed25519 with the same seeds). */
#define GOLDEN_MEMBER \
    "ddpnet-member:AQEAAAAAZVPxAAAAAABnNSSAoKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8BBWdwdS" \
    "0xBApNAAcCCWdwdS0xLmxhYgd0cmFpbmVy0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzdpLkHrsYDCWn" \
    "wcIHkizCvR_IgJHr5hu4LOA-n_PjUfxJKBzHoA9NfE_4XIw7xFziMtETiKWVSeLMmiOYQVXpEI"

static void test_golden_member(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX];
    uint8_t bin[1024];
    /* version 1, kind member, not_before T0, not_after T0 + 365 days,
     * the subject 0xa0.., flags: address, "gpu-1", IPv4 10.77.0.7,
     * two aliases */
    static const uint8_t head[] = {
        0x01, 0x01, 0, 0, 0, 0, 0x65, 0x53, 0xf1, 0x00, 0, 0, 0, 0, 0x67, 0x35, 0x24, 0x80,
    };
    static const uint8_t after_subject[] = {
        0x01, 0x05, 'g', 'p', 'u', '-', '1', 0x04, 10, 77, 0, 7,
        0x02, 0x09, 'g', 'p', 'u', '-', '1', '.', 'l', 'a', 'b', 0x07, 't', 'r', 'a', 'i', 'n', 'e', 'r',
    };
    size_t len;

    (void)state;
    full_member(&c);
    sign_ok(&c, &authority, text);
    assert_string_equal(text, GOLDEN_MEMBER);
    assert_memory_equal(c.signer, authority.pub, CERT_PUBKEY_LEN);
    len = decode(text, bin, sizeof(bin));
    assert_int_equal(len, sizeof(head) + CERT_PUBKEY_LEN + sizeof(after_subject) +
                          CERT_PUBKEY_LEN + CERT_SIG_LEN);
    assert_memory_equal(bin, head, sizeof(head));
    assert_memory_equal(bin + sizeof(head), c.subject, CERT_PUBKEY_LEN);
    assert_memory_equal(bin + sizeof(head) + CERT_PUBKEY_LEN, after_subject, sizeof(after_subject));
    assert_memory_equal(bin + len - CERT_PUBKEY_LEN - CERT_SIG_LEN, authority.pub, CERT_PUBKEY_LEN);
    assert_memory_equal(bin + len - CERT_SIG_LEN, c.sig, CERT_SIG_LEN);
    /* the signature covers every byte before it */
    assert_int_equal(crypto_sign_verify_detached(c.sig, bin, len - CERT_SIG_LEN, authority.pub), 0);
}

#define GOLDEN_TOKEN \
    "ddpnet-token:AQIAAAAAZVPxAAAAAABlXSuAF8t5-ytBIPKx7GXkGY1uCLKOgT_rAeSkAIObheGAgM4Fc3BvdC0" \
    "AAAAK0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzeu68cCimYAPTtpY8LA5Zzg_YVcp4-5vmFxQ2dCsBu" \
    "mXCBZI2XAIH7_7FIlmlH0BB7oF1uaJl5LQ0LROHVuuvIN"

#define GOLDEN_REVOKE \
    "ddpnet-revoke:AQMAAAAAZVaUAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAADQSrIydC" \
    "u0qzoTaL1GFeTm0CJKtxoBa6-FIKMyyXeHN7TwQlJ9u4AfqxQF6De_eB-S5qqemrj4Nhr2-IpDkrIYLH8p0BRZhv" \
    "W5jfbNMYl8duaNokNpOrxFhqkwvbzmuQg"

#define GOLDEN_TOKEN_MEMBER \
    "ddpnet-member:AQEAAAAAZVVCgAAAAABlVpQAoKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8CBnNwb3" \
    "QtNwABAgAAAABlU_EAAAAAAGVdK4AXy3n7K0Eg8rHsZeQZjW4Iso6BP-sB5KQAg5uF4YCAzgVzcG90LQAAAArQSr" \
    "IydCu0qzoTaL1GFeTm0CJKtxoBa6-FIKMyyXeHN67rxwKKZgA9O2ljwsDlnOD9hVynj7m-YXFDZ0KwG6ZcIFkjZc" \
    "Agfv_sUiWaUfQEHugXW5omXktDQtE4dW668g0Xy3n7K0Eg8rHsZeQZjW4Iso6BP-sB5KQAg5uF4YCAzjEOVrn0aw" \
    "f3NdP_oqMOCAv6RV8EPu1KSEorq1SsgJR0qH4tSuYekF48UZzuLG01-sTsIfi1vPG3bny_L7o73g0"

#define GOLDEN_JOIN \
    "ddpnet-jointoken:AQIAAAAAZVPxAAAAAABlXSuAF8t5-ytBIPKx7GXkGY1uCLKOgT_rAeSkAIObheGAgM4Fc3B" \
    "vdC0AAAAK0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzeu68cCimYAPTtpY8LA5Zzg_YVcp4-5vmFxQ2d" \
    "CsBumXCBZI2XAIH7_7FIlmlH0BB7oF1uaJl5LQ0LROHVuuvINMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzMzM" \
    "zMzM"

static void test_golden_token_and_revocation(void **state)
{
    struct cert t, r, m;
    char text[CERT_TEXT_MAX];

    (void)state;
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 10);
    sign_ok(&t, &authority, text);
    assert_string_equal(text, GOLDEN_TOKEN);

    memset(&r, 0, sizeof(r));
    r.kind = CERT_REVOCATION;
    r.not_before = T0 + 2 * DAY;
    sign_ok(&r, &authority, text);
    assert_string_equal(text, GOLDEN_REVOKE);

    token_member(&t, &m, text);
    assert_string_equal(text, GOLDEN_TOKEN_MEMBER);
    assert_int_equal(cert_join_token_format(&t, token_keys.secret, text, sizeof(text)), 0);
    assert_string_equal(text, GOLDEN_JOIN);
}

/* --- round trips -------------------------------------------------------------- */

static void assert_same(const struct cert *a, const struct cert *b)
{
    assert_int_equal(a->kind, b->kind);
    assert_true(a->not_before == b->not_before && a->not_after == b->not_after);
    assert_memory_equal(a->subject, b->subject, CERT_PUBKEY_LEN);
    assert_string_equal(a->name, b->name);
    assert_int_equal(a->has_address, b->has_address);
    if (a->has_address)
        assert_true(cluster_addr_equal(&a->address, &b->address));
    assert_int_equal(a->n_aliases, b->n_aliases);
    for (unsigned i = 0; i < a->n_aliases; i++)
        assert_string_equal(a->aliases[i], b->aliases[i]);
    assert_int_equal(a->max_members, b->max_members);
    assert_int_equal(a->n_routes, b->n_routes);
    for (unsigned i = 0; i < a->n_routes; i++) {
        assert_int_equal(a->routes[i].prefix, b->routes[i].prefix);
        assert_true(cluster_addr_equal(&a->routes[i].net, &b->routes[i].net));
    }
    assert_memory_equal(a->signer, b->signer, CERT_PUBKEY_LEN);
    assert_int_equal(a->has_token, b->has_token);
    if (a->has_token) {
        assert_memory_equal(a->token_sig, b->token_sig, CERT_SIG_LEN);
        assert_memory_equal(&a->token, &b->token, sizeof(a->token));
    }
    assert_memory_equal(a->sig, b->sig, CERT_SIG_LEN);
}

static void round_trip(const struct cert *c, const char *text)
{
    struct cert back;
    char spaced[CERT_TEXT_MAX + 8];
    uint8_t id1[CERT_ID_LEN], id2[CERT_ID_LEN];

    assert_int_equal(cert_parse(text, &back), 0);
    assert_same(c, &back);
    cert_id(c, id1);
    cert_id(&back, id2);
    assert_memory_equal(id1, id2, CERT_ID_LEN);
    /* as a file holds it: spaces around and a newline at the end */
    snprintf(spaced, sizeof(spaced), "  %s \r\n", text);
    assert_int_equal(cert_parse(spaced, &back), 0);
    assert_same(c, &back);
}

/* Version 2 (groups, no routes): the texts main's build (before routes)
 * signed for these fields, byte for byte: routes must not change them. */
#define GOLDEN_GROUPS_TOKEN \
    "ddpnet-token:AgIAAAAAZVPxAAAAAABlXSuAF8t5-ytBIPKx7GXkGY1uCLKOgT_rAeSkAIObheGAgM4Fc3BvdC0" \
    "AAAAKAgRzcG90Bm9ucHJlbdBKsjJ0K7SrOhNovUYV5ObQIkq3GgFrr4UgozLJd4c3yNK1GZ4lMLGQsbi2PNad6K9" \
    "_0dj9utBBkvyImUmePgmd4HaLJopt3bo7ags16ieorq8YWYFs3id-0TqmoXXiAQ"
#define GOLDEN_GROUPS_TOKEN_MEMBER \
    "ddpnet-member:AgEAAAAAZVVCgAAAAABlVpQAoKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8CBnNwb3" \
    "QtNwABBHNwb3QCAgAAAABlU_EAAAAAAGVdK4AXy3n7K0Eg8rHsZeQZjW4Iso6BP-sB5KQAg5uF4YCAzgVzcG90LQ" \
    "AAAAoCBHNwb3QGb25wcmVt0EqyMnQrtKs6E2i9RhXk5tAiSrcaAWuvhSCjMsl3hzfI0rUZniUwsZCxuLY81p3or3" \
    "_R2P260EGS_IiZSZ4-CZ3gdosmim3dujtqCzXqJ6iurxhZgWzeJ37ROqahdeIBF8t5-ytBIPKx7GXkGY1uCLKOgT" \
    "_rAeSkAIObheGAgM73EXFFLa76Yw5TRgJZt4_WdQb1rHHA6AZO6Wd5qUrlPpHZB6sDlpvqUyL-_wkRf-htfYfvDt" \
    "unKVnwQY5QDH4P"
#define GOLDEN_GROUPS_MEMBER \
    "ddpnet-member:AgEAAAAAZVPxAAAAAABlVUKAoKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8ABWdwdS" \
    "0xAQd0cmFpbmVyAwV0cmFpbgFhAWLQSrIydCu0qzoTaL1GFeTm0CJKtxoBa6-FIKMyyXeHN_vy7c495hXk2Z47KB" \
    "XRTuCcu4johx_8GbFlvKrJbi6-M7Iix7Fr2JLLg6610-PVdsF858BrWCL-GHvPmWRjBA4"

static void test_golden_groups(void **state)
{
    struct cert t, m;
    char text[CERT_TEXT_MAX];

    (void)state;
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 10);
    t.n_groups = 2;
    strcpy(t.groups[0], "spot");
    strcpy(t.groups[1], "onprem");
    sign_ok(&t, &authority, text);
    assert_string_equal(text, GOLDEN_GROUPS_TOKEN);
    member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
    m.n_groups = 1;
    strcpy(m.groups[0], "spot");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_string_equal(text, GOLDEN_GROUPS_TOKEN_MEMBER);
    member_fields(&m, "gpu-1", T0, T0 + DAY);
    m.n_aliases = 1;
    strcpy(m.aliases[0], "trainer");
    m.n_groups = 3;
    strcpy(m.groups[0], "train");
    strcpy(m.groups[1], "a");
    strcpy(m.groups[2], "b");
    sign_ok(&m, &authority, text);
    assert_string_equal(text, GOLDEN_GROUPS_MEMBER);
    round_trip(&m, text);
}

static void test_round_trip(void **state)
{
    struct cert c, t, m;
    char text[CERT_TEXT_MAX];

    (void)state;
    full_member(&c);
    sign_ok(&c, &authority, text);
    round_trip(&c, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_OK);

    /* IPv6, four aliases of the longest length, a 63-character name */
    member_fields(&c, "a23456789-123456789-123456789-123456789-123456789-123456789-123",
                  T0, T0 + 1);
    c.has_address = true;
    assert_int_equal(cluster_addr_parse("fd77::1:2", &c.address), 0);
    c.n_aliases = CLUSTER_ALIASES_MAX;
    for (unsigned i = 0; i < CLUSTER_ALIASES_MAX; i++) {
        memset(c.aliases[i], 'a' + (char)i, CLUSTER_NAME_MAX);
        c.aliases[i][CLUSTER_NAME_MAX] = '\0';
    }
    sign_ok(&c, &authority, text);
    round_trip(&c, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_OK);

    token_member(&t, &m, text);
    round_trip(&m, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);
    assert_memory_equal(m.signer, token_keys.pub, CERT_PUBKEY_LEN);
    assert_memory_equal(m.token.signer, authority.pub, CERT_PUBKEY_LEN);
}

/* The longest statements. A token with every field full (62-character
 * prefix, CERT_GROUPS_MAX groups of the longest names, CLUSTER_ROUTES_MAX
 * IPv6 routes) fits CERT_TEXT_MAX. A member through a token, each full
 * of groups and with routes, fits up to CERT_TEXT_MAX (one byte less
 * room is -ENOSPC); one route more makes it longer than any buffer or a
 * disco CERT holds: sign says -EMSGSIZE, and the same bytes signed by
 * hand are refused by parse. A token's member with an address or
 * aliases is not a valid statement at all: refused when signed. */
static void test_longest_fits(void **state)
{
    struct cert t, m, back;
    char text[CERT_TEXT_MAX], small[CERT_TEXT_MAX], longer[CERT_TEXT_MAX + 64];
    uint8_t bin[2048];
    size_t len, at;

    (void)state;
    token_fields(&t, "a23456789-123456789-123456789-123456789-123456789-123456789-12", T0,
                 T0 + DAY, 0);
    t.n_groups = CERT_GROUPS_MAX;
    for (unsigned i = 0; i < CERT_GROUPS_MAX; i++) {
        memset(t.groups[i], 'g', RULES_GROUP_NAME_MAX);
        t.groups[i][RULES_GROUP_NAME_MAX] = '\0';
        t.groups[i][0] = (char)('a' + i);
    }
    routes_of(t.routes, &t.n_routes, "fd01::/64 fd02::/64 fd03::/64 fd04::/64 fd05::/64 "
                                     "fd06::/64 fd07::/64 fd08::/64");
    sign_ok(&t, &authority, text);
    round_trip(&t, text);
    /* through that token, a member full of groups does not fit */
    member_fields(&m, "a23456789-123456789-123456789-123456789-123456789-123456789-123",
                  T0, T0 + 1);
    m.n_groups = CERT_GROUPS_MAX;
    memcpy(m.groups, t.groups, sizeof(m.groups));
    cert_token_embed(&m, &t);
    assert_int_equal(cert_sign(&m, token_keys.secret, text, CERT_TEXT_MAX), -EMSGSIZE);
    /* a token with 3 routes, a member with 2 of them: the longest that fits */
    routes_of(t.routes, &t.n_routes, "fd01::/64 fd02::/64 fd03::/64");
    sign_ok(&t, &authority, text);
    routes_of(m.routes, &m.n_routes, "fd01::/80 fd02::/80");
    m.has_address = true;
    assert_int_equal(cluster_addr_parse("fd77::1", &m.address), 0);
    cert_token_embed(&m, &t);
    assert_int_equal(cert_sign(&m, token_keys.secret, text, CERT_TEXT_MAX), -EINVAL);
    m.has_address = false;
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0), CERT_OK);
    len = strlen(text);
    assert_true(len < CERT_TEXT_MAX);
    assert_true(len + 24 >= CERT_TEXT_MAX);   /* 18 bytes more would not fit */
    assert_int_equal(cert_sign(&m, token_keys.secret, small, len), -ENOSPC);
    assert_int_equal(cert_sign(&m, token_keys.secret, small, len + 1), 0);
    assert_string_equal(small, text);
    /* a third route: too long to sign ... */
    routes_of(m.routes, &m.n_routes, "fd01::/80 fd02::/80 fd03::/80");
    assert_int_equal(cert_sign(&m, token_keys.secret, small, CERT_TEXT_MAX), -EMSGSIZE);
    /* ... and the two-route member's bytes with it added, signed by hand
     * with the token's key: every field valid, parse refuses it whole */
    len = decode(text, bin, sizeof(bin));
    at = HEAD_BYTES + 1 + 1 + CLUSTER_NAME_MAX + 1 + 1 +
         CERT_GROUPS_MAX * (1 + RULES_GROUP_NAME_MAX);
    assert_int_equal(bin[at], 2);                       /* n_routes */
    bin[at] = 3;
    at += 1 + 2 * 18;
    memmove(bin + at + 18, bin + at, len - at);
    bin[at] = 6;
    memcpy(bin + at + 1, m.routes[2].net.bytes, 16);
    bin[at + 17] = 80;
    len += 18;
    crypto_sign_detached(bin + len - CERT_SIG_LEN, NULL, bin, len - CERT_SIG_LEN,
                         token_keys.secret);
    encode("ddpnet-member:", bin, len, longer, sizeof(longer));
    assert_true(strlen(longer) > CERT_TEXT_MAX);
    assert_int_equal(cert_parse(longer, &back), -EINVAL);
}

/* Groups: a certificate without groups encodes as before (version 1,
 * GOLDEN_MEMBER still parses: old certificates stay valid, with none);
 * one with groups carries them through text; a token's member carries
 * only groups its token names, the attacker holding a token and asking
 * for more is refused (CERT_OUTSIDE_TOKEN); bad names refused at sign. */
static void test_groups(void **state)
{
    struct cert t, m, back;
    char text[CERT_TEXT_MAX];

    (void)state;
    assert_int_equal(cert_parse(GOLDEN_MEMBER, &back), 0);
    assert_int_equal(back.n_groups, 0);
    /* the authority gives any */
    full_member(&m);
    m.n_groups = 2;
    strcpy(m.groups[0], "train");
    strcpy(m.groups[1], "onprem");
    sign_ok(&m, &authority, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_OK);
    assert_int_equal(back.n_groups, 2);
    assert_string_equal(back.groups[1], "onprem");
    /* a token naming spot: its members may be spot, nothing more */
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    t.n_groups = 1;
    strcpy(t.groups[0], "spot");
    sign_ok(&t, &authority, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(back.n_groups, 1);
    member_fields(&m, "spot-1", T0 + DAY, T0 + 2 * DAY);
    m.n_groups = 1;
    strcpy(m.groups[0], "SPOT");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_OK);
    /* the attacker: the token's key, asking for train too, or train alone */
    m.n_groups = 2;
    strcpy(m.groups[1], "train");
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
    m.n_groups = 1;
    strcpy(m.groups[0], "train");
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
    /* ... or rewriting the token's groups it carries: the token's
     * signature no longer holds */
    strcpy(m.token.groups[0], "train");
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_BAD_SIGNATURE);
    /* a token naming none: its members get none */
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    sign_ok(&t, &authority, text);
    member_fields(&m, "spot-1", T0 + DAY, T0 + 2 * DAY);
    m.n_groups = 1;
    strcpy(m.groups[0], "spot");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &back), 0);
    assert_int_equal(cert_verify(&back, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
    /* names: `any`, a bad character, one twice */
    full_member(&m);
    m.n_groups = 1;
    strcpy(m.groups[0], "any");
    assert_int_equal(cert_sign(&m, authority.secret, text, CERT_TEXT_MAX), -EINVAL);
    strcpy(m.groups[0], "a b");
    assert_int_equal(cert_sign(&m, authority.secret, text, CERT_TEXT_MAX), -EINVAL);
    m.n_groups = 2;
    strcpy(m.groups[0], "spot");
    strcpy(m.groups[1], "Spot");
    assert_int_equal(cert_sign(&m, authority.secret, text, CERT_TEXT_MAX), -EINVAL);
}

/* A certificate's groups become its node's, as bits of the file's group
 * names; one the file never names gives no bit. */
static void test_member_node_groups(void **state)
{
    static const char file[] = "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                               "authority = " "%s" "\n"
                               "[node head]\npublic-key = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=\n"
                               "address = 10.77.0.1\ngroups = train\n"
                               "[rules]\nallow spot -> train tcp 29500\n";
    char text[1024], key[CERT_KEY_TEXT_LEN + 1];
    struct cluster cl;
    struct cluster_node n;
    struct cert m;

    (void)state;
    cert_key_format(authority.pub, key);
    snprintf(text, sizeof(text), file, key);
    assert_int_equal(cluster_parse(text, strlen(text), &cl, NULL), 0);
    member_fields(&m, "spot-1", T0, T0 + DAY);
    m.n_groups = 2;
    strcpy(m.groups[0], "spot");
    strcpy(m.groups[1], "elsewhere");
    assert_int_equal(cert_member_node(&m, &cl, &n), 0);
    assert_int_equal(n.groups, rules_group_mask(&cl.rules, "spot"));
    assert_true(n.groups != 0);
    m.n_groups = 0;
    assert_int_equal(cert_member_node(&m, &cl, &n), 0);
    assert_int_equal(n.groups, 0);
    cluster_free(&cl);
}

/* --- every byte (declared: the route tests use it) --------------------------------- */

static void every_byte_counts(const char *text, uint64_t now);

/* --- routes (issue 60) ------------------------------------------------------------ */

/* The authority grants a member routes: signed, parsed back, verified,
 * and the node made of it carries them; a renewal keeps them (one that
 * changes them is none). A certificate without routes is as before (the
 * golden member above). Fields out of range are refused at signing. */
static void test_routes_member(void **state)
{
    struct cert c, o;
    struct cluster cl = { 0 };
    struct cluster_node n;
    char text[CERT_TEXT_MAX];

    (void)state;
    full_member(&c);
    routes_of(c.routes, &c.n_routes, "192.168.50.0/24, fd10::/64");
    sign_ok(&c, &authority, text);
    round_trip(&c, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_OK);
    every_byte_counts(text, T0);
    assert_int_equal(cluster_addr_parse("10.77.0.0", &cl.network), 0);
    cl.prefix = 16;
    assert_int_equal(cert_member_node(&c, &cl, &n), 0);
    assert_int_equal(n.n_routes, 2);
    assert_true(cluster_route_holds(&n.routes[0], &(struct cluster_addr){ .family = AF_INET,
                                                     .bytes = { 192, 168, 50, 10 } }));
    o = c;
    c.not_after += DAY;
    assert_true(cert_renews(&c, &o));
    routes_of(c.routes, &c.n_routes, "192.168.50.0/24");
    assert_false(cert_renews(&c, &o));
    routes_of(c.routes, &c.n_routes, "192.168.51.0/24, fd10::/64");
    assert_false(cert_renews(&c, &o));

    /* host bits set, /0, two that overlap */
    full_member(&c);
    c.n_routes = 1;
    assert_int_equal(cluster_addr_parse("192.168.50.1", &c.routes[0].net), 0);
    c.routes[0].prefix = 24;
    assert_int_equal(cert_sign(&c, authority.secret, text, sizeof(text)), -EINVAL);
    c.routes[0].net.bytes[3] = 0;
    c.routes[0].prefix = 0;
    assert_int_equal(cert_sign(&c, authority.secret, text, sizeof(text)), -EINVAL);
    routes_of(c.routes, &c.n_routes, "192.168.0.0/16, 192.168.50.0/24");
    assert_int_equal(cert_sign(&c, authority.secret, text, sizeof(text)), -EINVAL);
}

/* As the attacker: a token holder signs itself a member that carries a
 * prefix. A token that grants none makes every route outside it; one
 * that grants 192.168.50.0/24 allows that prefix and what is inside it,
 * nothing wider or beside it. The token's routes are under the
 * authority's signature (every byte of the member counts). */
static void test_routes_token(void **state)
{
    struct cert t, m;
    char text[CERT_TEXT_MAX], ttext[CERT_TEXT_MAX];

    (void)state;
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    sign_ok(&t, &authority, ttext);
    member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
    routes_of(m.routes, &m.n_routes, "192.168.50.0/24");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);

    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    routes_of(t.routes, &t.n_routes, "192.168.50.0/24");
    sign_ok(&t, &authority, ttext);
    round_trip(&t, ttext);
    assert_int_equal(cert_verify(&t, authority.pub, T0), CERT_OK);
    every_byte_counts(ttext, T0);
    {
        static const char *const inside[] = { "192.168.50.0/24", "192.168.50.128/25" };
        static const char *const outside[] = { "192.168.0.0/16", "192.168.51.0/24",
                                                "10.0.0.0/8", "192.168.50.0/24, 10.1.0.0/16",
                                                "fd10::/64" };
        for (size_t i = 0; i < sizeof(inside) / sizeof(inside[0]); i++) {
            member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
            routes_of(m.routes, &m.n_routes, inside[i]);
            cert_token_embed(&m, &t);
            sign_ok(&m, &token_keys, text);
            round_trip(&m, text);
            assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);
        }
        every_byte_counts(text, T0 + DAY);
        for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++) {
            member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
            routes_of(m.routes, &m.n_routes, outside[i]);
            cert_token_embed(&m, &t);
            sign_ok(&m, &token_keys, text);
            assert_int_equal(cert_parse(text, &m), 0);
            assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
        }
    }
    /* The token's grant widened after the authority signed it: the
     * token's signature no longer holds. */
    member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
    routes_of(m.routes, &m.n_routes, "10.0.0.0/8");
    cert_token_embed(&m, &t);
    routes_of(m.token.routes, &m.token.n_routes, "10.0.0.0/8");
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_BAD_SIGNATURE);
}

/* text's binary form with its version byte set and bytes inserted just
 * before its signer (where a member without a token, or a token, has its
 * trailers), parsed: 0 or -EINVAL. The signature is not parse's to check. */
static int parse_with(const char *text, uint8_t version, const uint8_t *ins, size_t n)
{
    const char *colon = strchr(text, ':');
    char prefix[32], altered[CERT_TEXT_MAX + 64];
    uint8_t bin[2048];
    size_t len = decode(text, bin, sizeof(bin)), at = len - TAIL_BYTES;
    struct cert c;

    assert_true((size_t)(colon - text) + 1 < sizeof(prefix));
    snprintf(prefix, sizeof(prefix), "%.*s", (int)(colon - text) + 1, text);
    memmove(bin + at + n, bin + at, TAIL_BYTES);
    if (n)
        memcpy(bin + at, ins, n);
    bin[0] = version;
    encode(prefix, bin, len + n, altered, sizeof(altered));
    return cert_parse(altered, &c);
}

/* One statement, one encoding, groups and routes together: version 1
 * with neither, 2 with groups alone (the bytes as before routes), 3 with
 * routes (groups or none). Parse refuses whatever would not encode back
 * to the same bytes: version 2 with no group, 3 with no route, a count
 * over the most, a route with host bits set, a prefix length 0 or past
 * the family's, an unknown family, one route twice or two overlapping,
 * routes under version 1 or 2, a revocation that is not version 1. */
static void test_routes_version(void **state)
{
    static const uint8_t none[] = { 0 }, none2[] = { 0, 0 };
    static const uint8_t one[] = { 0, 1, 4, 192, 168, 50, 0, 24 };
    static const uint8_t g_one[] = { 1, 1, 'a', 1, 4, 192, 168, 50, 0, 24 };
    static const uint8_t host_bits[] = { 0, 1, 4, 192, 168, 50, 1, 24 };
    static const uint8_t len0[] = { 0, 1, 4, 0, 0, 0, 0, 0 };
    static const uint8_t len33[] = { 0, 1, 4, 10, 0, 0, 0, 33 };
    static const uint8_t len129[] = { 0, 1, 6, 0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                                      0, 129 };
    static const uint8_t family5[] = { 0, 1, 5, 192, 168, 50, 0, 24 };
    static const uint8_t twice[] = { 0, 2, 4, 192, 168, 50, 0, 24, 4, 192, 168, 50, 0, 24 };
    static const uint8_t overlap[] = { 0, 2, 4, 192, 168, 50, 0, 24, 4, 192, 168, 0, 0, 16 };
    static const uint8_t nine[] = { 0, 9 };
    static const uint8_t groups0_routes[] = { 0, 1, 4, 10, 9, 0, 0, 16 };
    struct cert c, t, r;
    char text[CERT_TEXT_MAX], ttext[CERT_TEXT_MAX], rtext[CERT_TEXT_MAX];
    uint8_t bin[2048];

    (void)state;
    /* each version as written */
    full_member(&c);
    sign_ok(&c, &authority, text);
    decode(text, bin, sizeof(bin));
    assert_int_equal(bin[0], CERT_VERSION);
    c.n_groups = 1;
    strcpy(c.groups[0], "train");
    sign_ok(&c, &authority, text);
    decode(text, bin, sizeof(bin));
    assert_int_equal(bin[0], CERT_VERSION_GROUPS);
    c.n_groups = 0;
    routes_of(c.routes, &c.n_routes, "192.168.50.0/24");
    sign_ok(&c, &authority, text);
    round_trip(&c, text);
    decode(text, bin, sizeof(bin));
    assert_int_equal(bin[0], CERT_VERSION_ROUTES);

    /* a member with neither, rewritten by hand */
    full_member(&c);
    sign_ok(&c, &authority, text);
    assert_int_equal(parse_with(text, CERT_VERSION, NULL, 0), 0);         /* control */
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, one, sizeof(one)), 0);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, g_one, sizeof(g_one)), 0);
    assert_int_equal(parse_with(text, CERT_VERSION_GROUPS, none, sizeof(none)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, none2, sizeof(none2)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, nine, sizeof(nine)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, host_bits, sizeof(host_bits)),
                     -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, len0, sizeof(len0)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, len33, sizeof(len33)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, len129, sizeof(len129)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, family5, sizeof(family5)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, twice, sizeof(twice)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION_ROUTES, overlap, sizeof(overlap)), -EINVAL);
    /* routes under version 2 (after a group) or 1: bytes left over */
    assert_int_equal(parse_with(text, CERT_VERSION_GROUPS, g_one, sizeof(g_one)), -EINVAL);
    assert_int_equal(parse_with(text, CERT_VERSION, one, sizeof(one)), -EINVAL);
    assert_int_equal(parse_with(text, 4, one, sizeof(one)), -EINVAL);
    /* a token: the same trailers, the same refusals */
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    sign_ok(&t, &authority, ttext);
    assert_int_equal(parse_with(ttext, CERT_VERSION_ROUTES, one, sizeof(one)), 0);
    assert_int_equal(parse_with(ttext, CERT_VERSION_ROUTES, none2, sizeof(none2)), -EINVAL);
    assert_int_equal(parse_with(ttext, CERT_VERSION_GROUPS, none, sizeof(none)), -EINVAL);
    assert_int_equal(parse_with(ttext, CERT_VERSION_ROUTES, host_bits, sizeof(host_bits)),
                     -EINVAL);
    assert_int_equal(parse_with(ttext, CERT_VERSION_ROUTES, twice, sizeof(twice)), -EINVAL);
    /* a revocation: version 1 alone, nothing after it */
    memset(&r, 0, sizeof(r));
    r.kind = CERT_REVOCATION;
    r.not_before = T0;
    memset(r.subject, 0x5a, sizeof(r.subject));
    sign_ok(&r, &authority, rtext);
    assert_int_equal(parse_with(rtext, CERT_VERSION, NULL, 0), 0);
    assert_int_equal(parse_with(rtext, CERT_VERSION_GROUPS, NULL, 0), -EINVAL);
    assert_int_equal(parse_with(rtext, CERT_VERSION_ROUTES, NULL, 0), -EINVAL);
    assert_int_equal(parse_with(rtext, CERT_VERSION_ROUTES, groups0_routes,
                                sizeof(groups0_routes)), -EINVAL);
    r.n_routes = 1;
    r.routes[0] = c.routes[0];
    assert_int_equal(cert_sign(&r, authority.secret, rtext, sizeof(rtext)), -EINVAL);
}

/* A member with groups and routes both, through a token that gives
 * them: version 3 on each, every field back from the text, every byte
 * counts; the node it makes carries both. */
static void test_routes_and_groups(void **state)
{
    struct cert t, m;
    struct cluster cl = { 0 };
    struct cluster_node n;
    char text[CERT_TEXT_MAX], ttext[CERT_TEXT_MAX];
    uint8_t bin[2048];

    (void)state;
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    t.n_groups = 2;
    strcpy(t.groups[0], "spot");
    strcpy(t.groups[1], "onprem");
    routes_of(t.routes, &t.n_routes, "192.168.50.0/24, fd10::/48");
    sign_ok(&t, &authority, ttext);
    round_trip(&t, ttext);
    decode(ttext, bin, sizeof(bin));
    assert_int_equal(bin[0], CERT_VERSION_ROUTES);
    member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
    m.n_groups = 1;
    strcpy(m.groups[0], "onprem");
    routes_of(m.routes, &m.n_routes, "192.168.50.0/25, fd10:0:0:1::/64");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    round_trip(&m, text);
    decode(text, bin, sizeof(bin));
    assert_int_equal(bin[0], CERT_VERSION_ROUTES);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);
    assert_int_equal(m.n_groups, 1);
    assert_string_equal(m.groups[0], "onprem");
    assert_int_equal(m.n_routes, 2);
    assert_int_equal(m.routes[1].prefix, 64);
    every_byte_counts(text, T0 + DAY);
    assert_int_equal(cluster_addr_parse("10.77.0.0", &cl.network), 0);
    cl.prefix = 16;
    assert_int_equal(cert_member_node(&m, &cl, &n), 0);
    assert_int_equal(n.n_routes, 2);
    /* a group the token gives with a route it does not: refused */
    member_fields(&m, "spot-7", T0 + DAY, T0 + 2 * DAY);
    m.n_groups = 1;
    strcpy(m.groups[0], "spot");
    routes_of(m.routes, &m.n_routes, "192.168.51.0/24");
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
}

/* --- every byte ------------------------------------------------------------------ */

/* Each byte of text's binary form changed in turn (three ways): parse
 * refuses it or verify at now does. */
static void every_byte_counts(const char *text, uint64_t now)
{
    static const uint8_t deltas[] = { 0x01, 0x80, 0xff };
    const char *colon = strchr(text, ':');
    char prefix[32], altered[CERT_TEXT_MAX + 8];
    uint8_t bin[1024];
    size_t len = decode(text, bin, sizeof(bin));
    struct cert c;

    assert_true(colon && (size_t)(colon - text) + 1 < sizeof(prefix));
    memcpy(prefix, text, (size_t)(colon - text) + 1);
    prefix[colon - text + 1] = '\0';
    assert_int_equal(cert_parse(text, &c), 0);
    assert_int_equal(cert_verify(&c, authority.pub, now), CERT_OK);
    for (size_t i = 0; i < len; i++) {
        for (size_t d = 0; d < sizeof(deltas); d++) {
            bin[i] ^= deltas[d];
            encode(prefix, bin, len, altered, sizeof(altered));
            if (cert_parse(altered, &c) == 0 && cert_verify(&c, authority.pub, now) == CERT_OK)
                fail_msg("byte %zu of %zu xor 0x%02x still verifies", i, len, deltas[d]);
            bin[i] ^= deltas[d];
        }
    }
    /* one byte more, one byte less */
    bin[len] = 0;
    encode(prefix, bin, len + 1, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    encode(prefix, bin, len - 1, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
}

static void test_every_byte_member(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX];

    (void)state;
    full_member(&c);
    sign_ok(&c, &authority, text);
    every_byte_counts(text, T0 + DAY);
    c.has_address = true;
    assert_int_equal(cluster_addr_parse("fd77::9", &c.address), 0);
    sign_ok(&c, &authority, text);
    every_byte_counts(text, T0 + DAY);
}

static void test_every_byte_token_member(void **state)
{
    struct cert t, m;
    char text[CERT_TEXT_MAX];

    (void)state;
    token_member(&t, &m, text);
    every_byte_counts(text, T0 + DAY);
    sign_ok(&t, &authority, text);
    every_byte_counts(text, T0 + DAY);
}

static void test_every_byte_revocation(void **state)
{
    struct cert r;
    char text[CERT_TEXT_MAX];

    (void)state;
    memset(&r, 0, sizeof(r));
    r.kind = CERT_REVOCATION;
    r.not_before = T0;
    memset(r.subject, 0x5a, sizeof(r.subject));
    sign_ok(&r, &authority, text);
    every_byte_counts(text, T0);
}

/* --- lifetimes, tokens, authorities ------------------------------------------- */

static void test_lifetime_edges(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX];

    (void)state;
    member_fields(&c, "gpu-2", T0, T0 + DAY);
    sign_ok(&c, &authority, text);
    /* Its start allows for clocks that differ (a signer's ahead), its end
     * none. */
    assert_int_equal(cert_verify(&c, authority.pub, T0 - CERT_CLOCK_SKEW_S - 1),
                     CERT_NOT_YET_VALID);
    assert_int_equal(cert_verify(&c, authority.pub, T0 - CERT_CLOCK_SKEW_S), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0 - 1), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0 + DAY - 1), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0 + DAY), CERT_EXPIRED);
    assert_int_equal(cert_verify(&c, authority.pub, UINT64_MAX), CERT_EXPIRED);

    /* a revocation never expires and holds from the moment it is seen */
    memset(&c, 0, sizeof(c));
    c.kind = CERT_REVOCATION;
    c.not_before = T0;
    sign_ok(&c, &authority, text);
    assert_int_equal(cert_verify(&c, authority.pub, 0), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, UINT64_MAX), CERT_OK);

    /* a token's own lifetime */
    token_fields(&c, "spot-", T0, T0 + DAY, 0);
    sign_ok(&c, &authority, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0 - CERT_CLOCK_SKEW_S - 1),
                     CERT_NOT_YET_VALID);
    assert_int_equal(cert_verify(&c, authority.pub, T0 - 1), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0 + DAY), CERT_EXPIRED);
}

static void test_token_limits(void **state)
{
    struct cert t, m;
    char text[CERT_TEXT_MAX];

    (void)state;
    token_member(&t, &m, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + 2 * DAY), CERT_EXPIRED);

    /* a name outside the prefix: the token key signs it, the check refuses */
    member_fields(&m, "gpu-7", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
    /* "spot" is not "spot-" */
    member_fields(&m, "spot", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);

    /* lifetime beyond the token's, at either end, by one second */
    member_fields(&m, "spot-8", T0, T0 + 7 * DAY + 1);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OUTSIDE_TOKEN);
    member_fields(&m, "spot-8", T0 - 1, T0 + DAY);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + 1), CERT_OUTSIDE_TOKEN);
    /* an address or an alias: the authority's alone to give (issue 43:
     * a token holder took a member's address, and metadata.google.internal) */
    /* (not even a valid statement: refused when signed, so when parsed) */
    member_fields(&m, "spot-8", T0 + DAY, T0 + 2 * DAY);
    m.has_address = true;
    assert_int_equal(cluster_addr_parse("10.77.0.2", &m.address), 0);
    cert_token_embed(&m, &t);
    assert_int_equal(cert_sign(&m, token_keys.secret, text, CERT_TEXT_MAX), -EINVAL);
    member_fields(&m, "spot-8", T0 + DAY, T0 + 2 * DAY);
    m.n_aliases = 1;
    strcpy(m.aliases[0], "metadata.google.internal");
    cert_token_embed(&m, &t);
    assert_int_equal(cert_sign(&m, token_keys.secret, text, CERT_TEXT_MAX), -EINVAL);
    /* the authority itself may give both */
    full_member(&m);
    sign_ok(&m, &authority, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);

    /* exactly the token's lifetime is allowed */
    member_fields(&m, "spot-8", T0, T0 + 7 * DAY);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_verify(&m, authority.pub, T0), CERT_OK);

    /* the token key cannot sign for itself: a member whose signer is not
     * the key of the token it carries */
    member_fields(&m, "spot-9", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(&m, &t);
    assert_int_equal(cert_sign(&m, authority.secret, text, sizeof(text)), -EINVAL);

    /* a token signed by another authority, and its member */
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 0);
    sign_ok(&t, &other_authority, text);
    member_fields(&m, "spot-9", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(&m, &t);
    sign_ok(&m, &token_keys, text);
    assert_int_equal(cert_parse(text, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_BAD_SIGNATURE);
    assert_int_equal(cert_verify(&m, other_authority.pub, T0 + DAY), CERT_OK);
}

/* A token signed by the authority but its member's signer swapped for
 * the authority itself: the member must be signed by the token's key. */
static void test_token_member_signed_by_authority(void **state)
{
    struct cert t, m;
    char text[CERT_TEXT_MAX];
    uint8_t id[CERT_ID_LEN], tid[CERT_ID_LEN];

    (void)state;
    token_member(&t, &m, text);
    m.kind = CERT_MEMBER;
    memcpy(m.signer, authority.pub, CERT_PUBKEY_LEN);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_BAD_SIGNATURE);

    /* the token's id is the same from the token and from its member */
    token_member(&t, &m, text);
    cert_id(&t, id);
    assert_true(cert_token_id(&m, tid));
    assert_memory_equal(id, tid, CERT_ID_LEN);
    cert_id(&m, id);
    assert_memory_not_equal(id, tid, CERT_ID_LEN);
    assert_false(cert_token_id(&t, tid));
}

static void test_wrong_authority(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX];

    (void)state;
    full_member(&c);
    sign_ok(&c, &other_authority, text);
    assert_int_equal(cert_parse(text, &c), 0);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_BAD_SIGNATURE);
    assert_int_equal(cert_verify(&c, other_authority.pub, T0), CERT_OK);

    memset(&c, 0, sizeof(c));
    c.kind = CERT_REVOCATION;
    sign_ok(&c, &other_authority, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_BAD_SIGNATURE);
    token_fields(&c, "spot-", T0, T0 + DAY, 0);
    sign_ok(&c, &other_authority, text);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_BAD_SIGNATURE);

    /* a kind that is none */
    full_member(&c);
    sign_ok(&c, &authority, text);
    c.kind = (enum cert_kind)9;
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_WRONG_KIND);
    c.kind = CERT_TOKEN;
    c.has_token = true;
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_WRONG_KIND);
}

/* --- refusals ----------------------------------------------------------------- */

static void sign_refused(struct cert *c)
{
    char text[CERT_TEXT_MAX];

    assert_int_equal(cert_sign(c, authority.secret, text, sizeof(text)), -EINVAL);
}

static void test_sign_refuses_bad_fields(void **state)
{
    static const char *const bad_names[] = { "", "-a", "a-", "a..b", "a b", "a_b", ".a" };
    static const char *const bad_addrs[] = { "0.0.0.0", "127.0.0.1", "224.0.0.1",
                                             "255.255.255.255", "::", "::1", "ff02::1" };
    static const char *const bad_prefixes[] = { "", "-", ".", "a..", "a_",
        "a23456789-123456789-123456789-123456789-123456789-123456789-123" };
    struct cert c;

    (void)state;
    for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
        member_fields(&c, bad_names[i], T0, T0 + 1);
        sign_refused(&c);
    }
    for (size_t i = 0; i < sizeof(bad_addrs) / sizeof(bad_addrs[0]); i++) {
        member_fields(&c, "gpu-1", T0, T0 + 1);
        c.has_address = true;
        assert_int_equal(cluster_addr_parse(bad_addrs[i], &c.address), 0);
        sign_refused(&c);
    }
    member_fields(&c, "gpu-1", T0, T0);            /* empty lifetime */
    sign_refused(&c);
    member_fields(&c, "gpu-1", T0, T0 + 1);
    c.n_aliases = CLUSTER_ALIASES_MAX + 1;
    sign_refused(&c);
    c.n_aliases = 1;
    strcpy(c.aliases[0], "bad_alias");
    sign_refused(&c);
    member_fields(&c, "gpu-1", T0, T0 + 1);
    c.max_members = 3;                             /* a token's field */
    sign_refused(&c);
    for (size_t i = 0; i < sizeof(bad_prefixes) / sizeof(bad_prefixes[0]); i++) {
        token_fields(&c, bad_prefixes[i], T0, T0 + 1, 0);
        sign_refused(&c);
    }
    token_fields(&c, "spot-", T0, T0 + 1, 0);
    c.n_aliases = 1;
    strcpy(c.aliases[0], "x");
    sign_refused(&c);
    memset(&c, 0, sizeof(c));
    c.kind = CERT_REVOCATION;
    c.not_after = 1;                               /* revocations do not expire */
    sign_refused(&c);
    c.not_after = 0;
    c.kind = (enum cert_kind)0;
    sign_refused(&c);
}

/* Binary forms the signer would never write, with the prefix they claim:
 * each refused by parse (before any signature is looked at). */
static void test_parse_refuses_layout(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX], altered[CERT_TEXT_MAX + 8];
    uint8_t bin[1024];
    size_t len, name_at = 2 + 8 + 8 + CERT_PUBKEY_LEN + 1;

    (void)state;
    full_member(&c);
    sign_ok(&c, &authority, text);
    len = decode(text, bin, sizeof(bin));

    bin[0] = 2;                                    /* version */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[0] = 1;
    for (uint8_t kind = 0; kind < 6; kind++) {     /* the kind must be the prefix's */
        if (kind == CERT_MEMBER)
            continue;
        bin[1] = kind;
        encode("ddpnet-member:", bin, len, altered, sizeof(altered));
        assert_int_equal(cert_parse(altered, &c), -EINVAL);
    }
    bin[1] = CERT_MEMBER;
    encode("ddpnet-token:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    encode("ddpnet-revoke:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), 0);

    bin[name_at - 1] |= 0x04;                      /* an unknown flag */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at - 1] &= (uint8_t)~0x04;
    bin[name_at + 1] = '_';                        /* an invalid name */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at + 1] = '\0';                       /* a NUL inside */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at + 1] = 'g';
    bin[name_at] = 0;                              /* an empty name */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at] = 200;                            /* a length past the end */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at] = 5;
    bin[name_at + 6] = 5;                          /* family */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at + 6] = 4;
    bin[name_at + 7] = 127;                        /* a loopback address */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at + 7] = 10;
    bin[name_at + 11] = CLUSTER_ALIASES_MAX + 1;   /* too many aliases */
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    bin[name_at + 11] = 2;
    encode("ddpnet-member:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_parse(altered, &c), 0);
}

static void test_parse_refuses_text(void **state)
{
    struct cert c;
    char text[CERT_TEXT_MAX], altered[CERT_TEXT_MAX + 8];
    size_t len;

    (void)state;
    full_member(&c);
    sign_ok(&c, &authority, text);
    len = strlen(text);
    assert_int_equal(cert_parse("", &c), -EINVAL);
    assert_int_equal(cert_parse("ddpnet-member:", &c), -EINVAL);
    assert_int_equal(cert_parse(text + 1, &c), -EINVAL);           /* no prefix */
    assert_int_equal(cert_parse("ddpnet-member:AQE", &c), -EINVAL);
    snprintf(altered, sizeof(altered), "%s=", text);                /* padding */
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    snprintf(altered, sizeof(altered), "%s x", text);               /* a second word */
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    snprintf(altered, sizeof(altered), "%s", text);
    altered[len / 2] = '+';                                         /* not URL-safe */
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    altered[len / 2] = ' ';
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    snprintf(altered, sizeof(altered), "%s", text);
    altered[len - 1] = '\0';                                        /* one character short */
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    snprintf(altered, sizeof(altered), "DDPNET-MEMBER:%s", text + strlen("ddpnet-member:"));
    assert_int_equal(cert_parse(altered, &c), -EINVAL);
    /* a refusal leaves nothing behind */
    assert_true(c.kind == 0 && c.name[0] == '\0');
}

/* --- join tokens, keys, secrets ------------------------------------------------- */

static void test_join_token(void **state)
{
    struct cert t, back, m;
    uint8_t secret[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX], join[CERT_TEXT_MAX], altered[CERT_TEXT_MAX + 8], mtext[CERT_TEXT_MAX];
    uint8_t bin[1024];
    size_t len;

    (void)state;
    token_fields(&t, "spot-", T0, T0 + 7 * DAY, 10);
    sign_ok(&t, &authority, text);
    assert_int_equal(cert_join_token_format(&t, token_keys.secret, join, sizeof(join)), 0);
    assert_int_equal(strncmp(join, "ddpnet-jointoken:", 17), 0);
    assert_int_equal(cert_join_token_format(&t, token_keys.secret, join, strlen(join)), -ENOSPC);
    assert_int_equal(cert_join_token_format(&t, token_keys.secret, join, sizeof(join)), 0);
    assert_int_equal(cert_join_token_parse(join, &back, secret), 0);
    assert_same(&t, &back);
    assert_memory_equal(secret, token_keys.secret, CERT_SECRET_LEN);
    assert_int_equal(cert_verify(&back, authority.pub, T0), CERT_OK);

    /* what a new machine does with it */
    member_fields(&m, "spot-42", T0 + DAY, T0 + 2 * DAY);
    cert_token_embed(&m, &back);
    assert_int_equal(cert_sign(&m, secret, mtext, sizeof(mtext)), 0);
    assert_int_equal(cert_parse(mtext, &m), 0);
    assert_int_equal(cert_verify(&m, authority.pub, T0 + DAY), CERT_OK);

    /* a secret that is not the token's key's */
    assert_int_equal(cert_join_token_format(&t, other_authority.secret, altered,
                                            sizeof(altered)), 0);
    assert_int_equal(cert_join_token_parse(altered, &back, secret), -EINVAL);
    assert_true(sodium_is_zero(secret, sizeof(secret)));
    /* every byte matters: the statement's to verify, the seed's to parse */
    len = decode(join, bin, sizeof(bin));
    for (size_t i = 0; i < len; i++) {
        bin[i] ^= 0x01;
        encode("ddpnet-jointoken:", bin, len, altered, sizeof(altered));
        if (cert_join_token_parse(altered, &back, secret) == 0 &&
            cert_verify(&back, authority.pub, T0) == CERT_OK)
            fail_msg("join token byte %zu still verifies", i);
        bin[i] ^= 0x01;
    }
    encode("ddpnet-jointoken:", bin, len - 1, altered, sizeof(altered));
    assert_int_equal(cert_join_token_parse(altered, &back, secret), -EINVAL);
    /* not a join token: the statement alone, another prefix */
    assert_int_equal(cert_join_token_parse(text, &back, secret), -EINVAL);
    encode("ddpnet-token:", bin, len, altered, sizeof(altered));
    assert_int_equal(cert_join_token_parse(altered, &back, secret), -EINVAL);
    assert_int_equal(cert_parse(join, &back), -EINVAL);
    /* only a token makes a join token */
    full_member(&m);
    assert_int_equal(cert_join_token_format(&m, token_keys.secret, join, sizeof(join)), -EINVAL);
}

static void test_key_and_secret_text(void **state)
{
    char key[CERT_KEY_TEXT_LEN + 1], line[CERT_SECRET_TEXT_MAX], spaced[CERT_SECRET_TEXT_MAX + 8];
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];

    (void)state;
    cert_key_format(authority.pub, key);
    assert_int_equal(strlen(key), CERT_KEY_TEXT_LEN);
    assert_int_equal(cert_key_parse(key, pub), 0);
    assert_memory_equal(pub, authority.pub, CERT_PUBKEY_LEN);
    snprintf(spaced, sizeof(spaced), " %s\n", key);
    assert_int_equal(cert_key_parse(spaced, pub), 0);
    snprintf(spaced, sizeof(spaced), "%s  x", key);
    assert_int_equal(cert_key_parse(spaced, pub), -EINVAL);
    assert_int_equal(cert_key_parse(key + 1, pub), -EINVAL);
    assert_int_equal(cert_key_parse("", pub), -EINVAL);

    assert_int_equal(cert_secret_format(authority.secret, line, sizeof(line)), 0);
    assert_int_equal(strncmp(line, "ddpnet-authority-secret:", 24), 0);
    assert_int_equal(cert_secret_format(authority.secret, spaced, strlen(line)), -ENOSPC);
    snprintf(spaced, sizeof(spaced), "%s\n", line);
    assert_int_equal(cert_secret_parse(spaced, secret), 0);
    assert_memory_equal(secret, authority.secret, CERT_SECRET_LEN);
    /* a WireGuard key is not an authority secret */
    assert_int_equal(cert_secret_parse(key, secret), -EINVAL);
    assert_true(sodium_is_zero(secret, sizeof(secret)));
    line[strlen(line) - 1] = '\0';
    assert_int_equal(cert_secret_parse(line, secret), -EINVAL);
}

static void test_keypair(void **state)
{
    struct cert c;
    struct keys k;
    char text[CERT_TEXT_MAX];

    (void)state;
    assert_int_equal(cert_keypair(k.pub, k.secret), 0);
    full_member(&c);
    assert_int_equal(cert_sign(&c, k.secret, text, sizeof(text)), 0);
    assert_int_equal(cert_verify(&c, k.pub, T0), CERT_OK);
    assert_int_equal(cert_verify(&c, authority.pub, T0), CERT_BAD_SIGNATURE);
    assert_string_equal(cert_verdict_str(CERT_EXPIRED), "expired");
    assert_string_equal(cert_kind_str(CERT_TOKEN), "token");
}

/* The address a certificate without one gets: the same for a key on
 * every call, inside the network, never its first or last address; a
 * fixed one outside the network refused; a network without host
 * addresses refused. */
static void test_member_node_address(void **state)
{
    struct cluster cl = { 0 };
    struct cluster_addr a, b;
    struct cluster_node n;
    struct cert c = { .kind = CERT_MEMBER };
    uint8_t key[CERT_PUBKEY_LEN];
    (void)state;

    cl.network.family = AF_INET;
    cl.network.bytes[0] = 10;
    cl.network.bytes[1] = 77;
    cl.prefix = 30;                      /* two host addresses: .1 and .2 */
    for (unsigned i = 0; i < 64; i++) {
        memset(key, (int)i, sizeof(key));
        assert_int_equal(cert_derive_address(key, &cl, &a), 0);
        assert_int_equal(cert_derive_address(key, &cl, &b), 0);
        assert_memory_equal(&a, &b, sizeof(a));
        assert_int_equal(a.family, AF_INET);
        assert_true(a.bytes[3] == 1 || a.bytes[3] == 2);
        assert_int_equal(a.bytes[0], 10);
        assert_int_equal(a.bytes[1], 77);
    }
    cl.prefix = 31;
    assert_int_equal(cert_derive_address(key, &cl, &a), -ENOSPC);
    cl.prefix = 16;
    memcpy(c.subject, key, sizeof(key));
    snprintf(c.name, sizeof(c.name), "spot-1");
    assert_int_equal(cert_member_node(&c, &cl, &n), 0);
    assert_string_equal(n.name, "spot-1");
    assert_memory_equal(n.public_key, key, sizeof(key));
    assert_false(n.has_endpoint);
    c.has_address = true;
    c.address.family = AF_INET;
    c.address.bytes[0] = 192;
    assert_int_equal(cert_member_node(&c, &cl, &n), -EINVAL);
    c.address.bytes[0] = 10;
    c.address.bytes[1] = 77;
    c.address.bytes[3] = 9;
    assert_int_equal(cert_member_node(&c, &cl, &n), 0);
    assert_int_equal(n.address.bytes[3], 9);
    c.kind = CERT_TOKEN;
    assert_int_equal(cert_member_node(&c, &cl, &n), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden_member),
        cmocka_unit_test(test_golden_token_and_revocation),
        cmocka_unit_test(test_golden_groups),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_longest_fits),
        cmocka_unit_test(test_every_byte_member),
        cmocka_unit_test(test_every_byte_token_member),
        cmocka_unit_test(test_every_byte_revocation),
        cmocka_unit_test(test_lifetime_edges),
        cmocka_unit_test(test_token_limits),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_member_node_groups),
        cmocka_unit_test(test_token_member_signed_by_authority),
        cmocka_unit_test(test_wrong_authority),
        cmocka_unit_test(test_sign_refuses_bad_fields),
        cmocka_unit_test(test_parse_refuses_layout),
        cmocka_unit_test(test_parse_refuses_text),
        cmocka_unit_test(test_join_token),
        cmocka_unit_test(test_key_and_secret_text),
        cmocka_unit_test(test_keypair),
        cmocka_unit_test(test_member_node_address),
        cmocka_unit_test(test_routes_member),
        cmocka_unit_test(test_routes_token),
        cmocka_unit_test(test_routes_version),
        cmocka_unit_test(test_routes_and_groups),
    };

    return cmocka_run_group_tests(tests, setup, NULL);
}
