/* SPDX-License-Identifier: MIT */
/* Tests of overlay/membership/certs.c: the store of the authority's
 * statements. Certificates are made here with cert_sign (an authority,
 * a token, members signed by either); the store must hold exactly those
 * that verify against its authority, drop a member at its expiry and at a
 * revocation of it, of its token or of its key, keep one key per name
 * (the authority's word over a token's; a token's member never taking a
 * name or a place another holds), and refuse past its bounds, counting
 * each refusal. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "overlay/membership/certs.h"

#define T0   1800000000ull                /* "now" of these tests */
#define HOUR 3600ull

struct authority {
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN];
};

static void authority_make(struct authority *a)
{
    assert_int_equal(cert_keypair(a->pub, a->sec), 0);
}

static int changes;

static void on_change(void *ctx)
{
    (void)ctx;
    changes++;
}

static void key_of(uint8_t key[CERT_PUBKEY_LEN], unsigned seed)
{
    memset(key, 0, CERT_PUBKEY_LEN);
    key[0] = (uint8_t)(seed >> 8);
    key[1] = (uint8_t)seed;
}

/* A member's certificate, signed by the authority (token NULL) or through
 * a token (tsec its secret), as text in out. */
static void member(char *out, const struct authority *a, const struct cert *token,
                   const uint8_t *tsec, const char *name, unsigned key, uint64_t nb,
                   uint64_t na)
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = nb, .not_after = na };

    key_of(c.subject, key);
    snprintf(c.name, sizeof(c.name), "%s", name);
    if (token)
        cert_token_embed(&c, token);
    assert_int_equal(cert_sign(&c, token ? tsec : a->sec, out, CERT_TEXT_MAX), 0);
}

static void token_make(struct cert *t, uint8_t sec[CERT_SECRET_LEN], const struct authority *a,
                       const char *prefix, uint32_t max)
{
    char text[CERT_TEXT_MAX];

    memset(t, 0, sizeof(*t));
    t->kind = CERT_TOKEN;
    t->not_before = T0 - HOUR;
    t->not_after = T0 + 24 * HOUR;
    t->max_members = max;
    snprintf(t->name, sizeof(t->name), "%s", prefix);
    assert_int_equal(cert_keypair(t->subject, sec), 0);
    assert_int_equal(cert_sign(t, a->sec, text, sizeof(text)), 0);
}

static void revocation(char *out, const struct authority *a, const uint8_t id[CERT_ID_LEN])
{
    struct cert r = { .kind = CERT_REVOCATION, .not_before = T0 - 1 };

    memcpy(r.subject, id, CERT_ID_LEN);
    assert_int_equal(cert_sign(&r, a->sec, out, CERT_TEXT_MAX), 0);
}

static const char *name_of(const struct certs *s, unsigned key)
{
    uint8_t k[CERT_PUBKEY_LEN];
    const struct cert *c;

    key_of(k, key);
    c = certs_member(s, k);
    return c ? c->name : NULL;
}

static void test_added_known_and_checked(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX];
    struct cluster_node n = { .name = "gpu-1" };
    struct certs *s;
    const char *why;

    (void)state;
    authority_make(&a);
    assert_non_null(s = certs_new(a.pub, on_change, NULL));
    changes = 0;
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_ADDED);
    assert_int_equal(changes, 1);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_KNOWN);
    assert_int_equal(changes, 1);
    assert_int_equal(certs_count(s), 1);
    assert_string_equal(certs_at(s, 0)->name, "gpu-1");
    assert_null(certs_at(s, 1));
    key_of(n.public_key, 1);
    assert_null(certs_node_check(s, &n));
    snprintf(n.name, sizeof(n.name), "gpu-2");
    assert_non_null(certs_node_check(s, &n));     /* another name for its key */
    snprintf(n.name, sizeof(n.name), "GPU-1");
    assert_null(certs_node_check(s, &n));         /* names match case-insensitively */
    key_of(n.public_key, 2);
    assert_non_null(certs_node_check(s, &n));     /* a key with no certificate */
    assert_int_equal(certs_offer(s, "ddpnet-member:garbage", T0, &why), CERTS_INVALID);
    certs_free(s);
}

/* A fixed address binds the record's address. */
static void test_fixed_address(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX];
    struct cert c = { .kind = CERT_MEMBER, .not_before = T0 - 1, .not_after = T0 + HOUR,
                      .name = "gpu-1", .has_address = true };
    struct cluster_node n = { .name = "gpu-1" };
    struct certs *s;

    (void)state;
    authority_make(&a);
    key_of(c.subject, 1);
    assert_int_equal(cluster_addr_parse("10.77.0.9", &c.address), 0);
    assert_int_equal(cert_sign(&c, a.sec, text, sizeof(text)), 0);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    key_of(n.public_key, 1);
    assert_int_equal(cluster_addr_parse("10.77.0.9", &n.address), 0);
    assert_null(certs_node_check(s, &n));
    assert_int_equal(cluster_addr_parse("10.77.0.10", &n.address), 0);
    assert_non_null(certs_node_check(s, &n));
    certs_free(s);
}

/* Another authority's certificate, an expired one, one not yet valid,
 * one with a flipped signature byte: all refused and counted. */
static void test_wrong_authority_and_times(void **state)
{
    struct authority a, b;
    char text[CERT_TEXT_MAX];
    struct certs_stats st;
    struct certs *s;
    const char *why;

    (void)state;
    authority_make(&a);
    authority_make(&b);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    member(text, &b, NULL, NULL, "gpu-1", 1, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_INVALID);
    assert_string_equal(why, cert_verdict_str(CERT_BAD_SIGNATURE));
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 - 2 * HOUR, T0 - HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_INVALID);
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 + HOUR, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_INVALID);
    assert_string_equal(why, cert_verdict_str(CERT_NOT_YET_VALID));
    /* A start up to CERT_CLOCK_SKEW_S ahead of this clock counts: the
     * signer's clock runs ahead (issue 43: members dropped it). */
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 + CERT_CLOCK_SKEW_S + 1, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_INVALID);
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 + CERT_CLOCK_SKEW_S, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_ADDED);
    assert_int_equal(certs_count(s), 1);
    certs_free(s);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    {
        struct cert c;
        member(text, &a, NULL, NULL, "gpu-1", 1, T0 - HOUR, T0 + HOUR);
        assert_int_equal(cert_parse(text, &c), 0);
        c.sig[7] ^= 1;
        assert_int_equal(certs_offer_cert(s, &c, T0, &why), CERTS_INVALID);
    }
    certs_stats(s, &st);
    assert_int_equal(st.invalid, 1);              /* in the new store */
    assert_int_equal(st.members, 0);
    assert_int_equal(certs_count(s), 0);
    certs_free(s);
}

/* Expiry is a deadline: certs_next_expiry names the first, certs_run
 * at it drops that one (and tells), and nothing before it. */
static void test_expiry(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX];
    struct certs_stats st;
    struct certs *s;

    (void)state;
    authority_make(&a);
    assert_non_null(s = certs_new(a.pub, on_change, NULL));
    assert_int_equal(certs_next_expiry(s), UINT64_MAX);
    member(text, &a, NULL, NULL, "gpu-1", 1, T0 - HOUR, T0 + 10);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    member(text, &a, NULL, NULL, "gpu-2", 2, T0 - HOUR, T0 + 20);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_next_expiry(s), T0 + 10);
    changes = 0;
    certs_run(s, T0 + 9);
    assert_int_equal(certs_count(s), 2);
    assert_int_equal(changes, 0);
    certs_run(s, T0 + 10);
    assert_int_equal(certs_count(s), 1);
    assert_null(name_of(s, 1));
    assert_string_equal(name_of(s, 2), "gpu-2");
    assert_int_equal(changes, 1);
    assert_int_equal(certs_next_expiry(s), T0 + 20);
    /* A renewal (a later not_after for the same key and name) replaces. */
    member(text, &a, NULL, NULL, "gpu-2", 2, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_count(s), 1);
    assert_int_equal(certs_next_expiry(s), T0 + HOUR);
    /* ... and the older one offered again changes nothing. */
    member(text, &a, NULL, NULL, "gpu-2", 2, T0 - HOUR, T0 + 20);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_KNOWN);
    assert_int_equal(certs_next_expiry(s), T0 + HOUR);
    certs_stats(s, &st);
    assert_int_equal(st.expired, 1);
    certs_free(s);
}

/* A revocation of a member, then of a token: what they name is dropped
 * and refused from then on; a revocation from another authority is not. */
static void test_revocation(void **state)
{
    struct authority a, b;
    char text[CERT_TEXT_MAX], rev[CERT_TEXT_MAX], m1[CERT_TEXT_MAX];
    uint8_t tsec[CERT_SECRET_LEN], id[CERT_ID_LEN];
    struct cert token, c;
    struct certs_stats st;
    struct certs *s;

    (void)state;
    authority_make(&a);
    authority_make(&b);
    token_make(&token, tsec, &a, "spot-", 0);
    assert_non_null(s = certs_new(a.pub, on_change, NULL));
    member(m1, &a, NULL, NULL, "gpu-1", 1, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, m1, T0, NULL), CERTS_ADDED);
    member(text, &a, &token, tsec, "spot-a", 2, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    member(text, &a, &token, tsec, "spot-b", 3, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_count(s), 3);

    assert_int_equal(cert_parse(m1, &c), 0);
    cert_id(&c, id);
    revocation(rev, &b, id);                  /* not our authority's */
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_INVALID);
    assert_int_equal(certs_count(s), 3);
    revocation(rev, &a, id);
    changes = 0;
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_REVOKING);
    assert_int_equal(changes, 1);
    assert_null(name_of(s, 1));
    assert_int_equal(certs_offer(s, m1, T0, NULL), CERTS_REVOKED);
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_KNOWN);

    /* The token: both of its members go, and a new one is refused. */
    assert_int_equal(cert_parse(text, &c), 0);
    assert_true(cert_token_id(&c, id));
    revocation(rev, &a, id);
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_REVOKING);
    assert_int_equal(certs_count(s), 0);
    member(text, &a, &token, tsec, "spot-c", 4, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_REVOKED);
    certs_stats(s, &st);
    assert_int_equal(st.revoked, 2);
    assert_int_equal(st.dropped_by_revocation, 3);
    assert_int_equal(st.refused_revoked, 2);
    certs_free(s);
}

/* A revocation naming a WireGuard key drops every certificate for it,
 * and refuses any signed later (issue 43: a revoked spot node signing
 * itself back with its token and its key). */
static void test_revocation_of_a_key(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX], rev[CERT_TEXT_MAX];
    uint8_t tsec[CERT_SECRET_LEN], key[CERT_PUBKEY_LEN];
    struct cert token;
    struct certs *s;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "spot-", 0);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    member(text, &a, &token, tsec, "spot-7", 7, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    key_of(key, 7);
    revocation(rev, &a, key);
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_REVOKING);
    assert_null(name_of(s, 7));
    member(text, &a, &token, tsec, "spot-7", 7, T0 - 10, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_REVOKED);
    member(text, &a, NULL, NULL, "gpu-7", 7, T0 - 10, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_REVOKED);
    member(text, &a, &token, tsec, "spot-8", 8, T0 - 10, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    certs_free(s);
}

/* One name, one key, between the authority's own certificates: the
 * later not_before wins (its newer word), then the lower key, whichever
 * arrives first; a key holds one name. */
static void test_name_clash(void **state)
{
    struct authority a;
    char early[CERT_TEXT_MAX], late[CERT_TEXT_MAX], tie[CERT_TEXT_MAX], other[CERT_TEXT_MAX];
    struct certs *s;

    (void)state;
    authority_make(&a);
    member(early, &a, NULL, NULL, "gpu-1", 5, T0 - 2 * HOUR, T0 + HOUR);
    member(late, &a, NULL, NULL, "gpu-1", 3, T0 - HOUR, T0 + HOUR);
    member(tie, &a, NULL, NULL, "gpu-1", 4, T0 - HOUR, T0 + HOUR);

    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, early, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, tie, T0, NULL), CERTS_ADDED);     /* later */
    assert_int_equal(certs_offer(s, late, T0, NULL), CERTS_ADDED);    /* as late, key 3 < 4 */
    assert_int_equal(certs_offer(s, early, T0, NULL), CERTS_NAME_TAKEN);   /* replayed */
    assert_int_equal(certs_count(s), 1);
    assert_string_equal(name_of(s, 3), "gpu-1");
    assert_null(name_of(s, 5));
    /* The key of gpu-1 asks for another name: refused while it counts. */
    member(other, &a, NULL, NULL, "gpu-9", 3, T0 - HOUR, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, other, T0, NULL), CERTS_NAME_TAKEN);
    certs_free(s);

    /* The other order of arrival ends the same. */
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, late, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, tie, T0, NULL), CERTS_NAME_TAKEN);
    assert_int_equal(certs_offer(s, early, T0, NULL), CERTS_NAME_TAKEN);
    assert_int_equal(certs_count(s), 1);
    assert_string_equal(name_of(s, 3), "gpu-1");
    certs_free(s);
}

/* Issue 43: a token's holder backdating a sibling's name, or picking a
 * lower key, takes nothing: the member held first keeps it. The
 * authority's own certificate takes a name from a token's, never the
 * reverse. */
static void test_token_never_takes_a_name(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN];
    char victim[CERT_TEXT_MAX], thief[CERT_TEXT_MAX], own[CERT_TEXT_MAX];
    struct cert token;
    struct certs *s;
    const char *why;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "w-", 0);
    member(victim, &a, &token, tsec, "w-n3", 20, T0 - 10, T0 + HOUR);
    member(thief, &a, &token, tsec, "w-n3", 1, T0 - HOUR, T0 + HOUR);   /* earlier, lower */
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, victim, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, thief, T0, &why), CERTS_NAME_TAKEN);
    assert_string_equal(why, "another member holds its name");
    assert_string_equal(name_of(s, 20), "w-n3");
    /* Nor later, with a lower key: the one held first keeps it. */
    member(thief, &a, &token, tsec, "w-n3", 2, T0 - 5, T0 + HOUR);
    assert_int_equal(certs_offer(s, thief, T0, &why), CERTS_NAME_TAKEN);
    assert_string_equal(name_of(s, 20), "w-n3");
    /* The authority names w-n3 another key: that one holds it. */
    member(own, &a, NULL, NULL, "w-n3", 30, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, own, T0, NULL), CERTS_ADDED);
    assert_null(name_of(s, 20));
    assert_int_equal(certs_offer(s, victim, T0, NULL), CERTS_NAME_TAKEN);
    certs_free(s);
}

/* Issue 43: a holder of another token re-signing a member's key (same
 * name, a later end) replaces nothing; the same token renews; the
 * authority replaces a token's certificate, a token never the
 * authority's. */
static void test_replacement(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN], usec[CERT_SECRET_LEN];
    char held[CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    struct cert token, other;
    struct certs *s;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "spot-", 0);
    token_make(&other, usec, &a, "spot-", 0);
    member(held, &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + HOUR);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, held, T0, NULL), CERTS_ADDED);
    member(text, &a, &other, usec, "spot-a", 10, T0 - 40, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_NAME_TAKEN);
    member(text, &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);      /* a renewal */
    member(text, &a, NULL, NULL, "spot-a", 10, T0 - 40, T0 + 3 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);      /* the authority's */
    member(text, &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + 4 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_NAME_TAKEN);
    assert_int_equal(certs_count(s), 1);
    certs_free(s);
}

/* A token of max_members 2: the first two come count, whatever their
 * dates and keys; a member outside its prefix is refused. */
static void test_token_max(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN];
    char m[4][CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    struct cert token;
    struct certs_stats st;
    struct certs *s;
    const char *why;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "spot-", 2);
    member(m[0], &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + HOUR);
    member(m[1], &a, &token, tsec, "spot-b", 11, T0 - 30, T0 + HOUR);
    member(m[2], &a, &token, tsec, "spot-c", 12, T0 - 20, T0 + HOUR);
    member(m[3], &a, &token, tsec, "spot-d", 9, T0 - 50, T0 + HOUR);

    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    assert_int_equal(certs_offer(s, m[0], T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, m[1], T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, m[2], T0, &why), CERTS_TOKEN_FULL);
    assert_string_equal(why, "its token's places are held by other members");
    /* Backdated, a lower key: still no place. */
    assert_int_equal(certs_offer(s, m[3], T0, NULL), CERTS_TOKEN_FULL);
    assert_int_equal(certs_count(s), 2);
    assert_non_null(name_of(s, 10));
    assert_non_null(name_of(s, 11));
    certs_stats(s, &st);
    assert_int_equal(st.token_full, 2);
    /* A renewal of a counted member does not count twice. */
    member(text, &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_count(s), 2);
    /* Outside the prefix. */
    member(text, &a, &token, tsec, "gpu-1", 14, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_INVALID);
    certs_free(s);
}

/* A token that names no limit holds CERTS_TOKEN_DEFAULT_MAX places: its
 * holder cannot fill the store with keys nobody holds. */
static void test_token_default_places(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX], name[32];
    struct cert token;
    struct certs *s;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "spot-", 0);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    for (unsigned i = 0; i < CERTS_TOKEN_DEFAULT_MAX; i++) {
        snprintf(name, sizeof(name), "spot-%u", i);
        member(text, &a, &token, tsec, name, 100 + i, T0 - 40, T0 + HOUR);
        assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    }
    member(text, &a, &token, tsec, "spot-x", 99, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_TOKEN_FULL);
    /* The authority's own newcomers still find room. */
    member(text, &a, NULL, NULL, "gpu-1", 98, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    certs_free(s);
}

static bool keep_not_10(void *ctx, const struct cert *c)
{
    (void)ctx;
    return c->subject[1] != 10;
}

/* Live members: certs_retain lets go of a member that left (its record
 * gone), and its place in its token's count is free for the next one. */
static void test_retain_frees_token_place(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN];
    char m1[CERT_TEXT_MAX], m2[CERT_TEXT_MAX];
    struct cert token;
    struct certs *s;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "spot-", 1);
    member(m1, &a, &token, tsec, "spot-a", 10, T0 - 40, T0 + HOUR);
    member(m2, &a, &token, tsec, "spot-b", 11, T0 - 30, T0 + HOUR);
    assert_non_null(s = certs_new(a.pub, on_change, NULL));
    assert_int_equal(certs_offer(s, m1, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, m2, T0, NULL), CERTS_TOKEN_FULL);
    changes = 0;
    certs_retain(s, keep_not_10, NULL);
    assert_int_equal(changes, 1);
    assert_null(name_of(s, 10));
    assert_int_equal(certs_offer(s, m2, T0, NULL), CERTS_ADDED);
    changes = 0;
    certs_retain(s, keep_not_10, NULL);          /* nothing to let go: no change said */
    assert_int_equal(changes, 0);
    certs_free(s);
}

/* Issue 55: a token's holder signs a certificate for another member's
 * key (keys are public) and gets it held first: the authority's own
 * certificate for that key replaces it whatever its name and dates, the
 * token's place is free again, and the token's certificate is refused
 * from then on (never the reverse). */
static void test_authority_replaces_a_squat(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN];
    char squat[CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    struct cert token;
    struct certs *s;
    const char *why;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "w-", 1);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    member(squat, &a, &token, tsec, "w-squat", 20, T0 - 40, T0 + 4 * HOUR);
    assert_int_equal(certs_offer(s, squat, T0, NULL), CERTS_ADDED);
    /* V's own, from the authority, ending before the squat does. */
    member(text, &a, NULL, NULL, "gpu3", 20, T0 - 50, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, &why), CERTS_ADDED);
    assert_string_equal(name_of(s, 20), "gpu3");
    assert_int_equal(certs_count(s), 1);
    assert_int_equal(certs_offer(s, squat, T0, &why), CERTS_NAME_TAKEN);
    assert_string_equal(name_of(s, 20), "gpu3");
    /* Re-issued by the authority: a renewal as ever. */
    member(text, &a, NULL, NULL, "gpu3", 20, T0 - 10, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    /* The squat's place in its token is free: another member takes it. */
    member(text, &a, &token, tsec, "w-t", 21, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_count(s), 2);
    /* The same for a squat under the authority's name of that key. */
    member(text, &a, NULL, NULL, "gpu4", 22, T0 - 50, T0 + HOUR);
    member(squat, &a, &token, tsec, "w-t", 22, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, squat, T0, NULL), CERTS_NAME_TAKEN);
    assert_string_equal(name_of(s, 22), "gpu4");
    certs_free(s);
}

static bool heard_of(const struct certs *s, unsigned key)
{
    uint8_t k[CERT_PUBKEY_LEN];

    key_of(k, key);
    return certs_heard(s, k);
}

/* Offers text as a peer passed it on, not its key (certs_offer_heard). */
static enum certs_verdict offer_heard(struct certs *s, const char *text)
{
    struct cert c;

    assert_int_equal(cert_parse(text, &c), 0);
    return certs_offer_heard(s, &c, T0, NULL);
}

/* Issue 55: a token's certificate passed on by another than its key is
 * heard: held (an introduction) but taking nothing from anyone, and
 * giving way to its key's own word, whatever name that gives, and to the
 * authority's; its key saying it makes it its own. */
static void test_heard_takes_nothing(void **state)
{
    struct authority a;
    uint8_t tsec[CERT_SECRET_LEN], usec[CERT_SECRET_LEN];
    char squat[CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    struct cert token, other;
    struct certs *s;

    (void)state;
    authority_make(&a);
    token_make(&token, tsec, &a, "w-", 2);
    token_make(&other, usec, &a, "w-", 0);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    /* A squat on V's key (30) heard first; V says its own (another token). */
    member(squat, &a, &token, tsec, "w-squat", 30, T0 - 40, T0 + 4 * HOUR);
    assert_int_equal(offer_heard(s, squat), CERTS_ADDED);
    assert_true(heard_of(s, 30));
    member(text, &a, &other, usec, "w-v", 30, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_string_equal(name_of(s, 30), "w-v");
    assert_false(heard_of(s, 30));
    assert_int_equal(offer_heard(s, squat), CERTS_NAME_TAKEN);
    assert_int_equal(certs_offer(s, squat, T0, NULL), CERTS_NAME_TAKEN);
    /* A heard one takes no name, even from a heard one. */
    member(text, &a, &other, usec, "w-v", 31, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_NAME_TAKEN);
    member(text, &a, &other, usec, "w-x", 32, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    member(text, &a, &other, usec, "w-x", 33, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_NAME_TAKEN);
    /* Its key's own word takes a name only heard. */
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_string_equal(name_of(s, 33), "w-x");
    assert_null(name_of(s, 32));
    /* The same certificate heard, then said by its key: its own now. */
    member(text, &a, &other, usec, "w-y", 34, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    assert_true(heard_of(s, 34));
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_KNOWN);
    assert_false(heard_of(s, 34));
    /* A renewal heard keeps it its own. */
    member(text, &a, &other, usec, "w-y", 34, T0 - 40, T0 + 2 * HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    assert_false(heard_of(s, 34));
    /* The authority's certificate counts wherever it came from. */
    member(text, &a, NULL, NULL, "gpu-5", 35, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    assert_false(heard_of(s, 35));
    /* A token's places (2; the squat's went with it): a heard member's
     * goes to one its key said, never to another heard one. */
    member(text, &a, &token, tsec, "w-h", 36, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    member(text, &a, &token, tsec, "w-i", 37, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_ADDED);
    member(text, &a, &token, tsec, "w-l", 40, T0 - 40, T0 + HOUR);
    assert_int_equal(offer_heard(s, text), CERTS_TOKEN_FULL);
    member(text, &a, &token, tsec, "w-j", 38, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_null(name_of(s, 36));
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_KNOWN);
    member(text, &a, &token, tsec, "w-k", 39, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_null(name_of(s, 37));
    member(text, &a, &token, tsec, "w-m", 41, T0 - 40, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_TOKEN_FULL);   /* none heard left */
    certs_free(s);
}

/* The bounds: CERTS_MEMBERS_MAX members, then refusals, counted. */
static void test_bounds(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX], name[32];
    struct certs_stats st;
    struct certs *s;

    (void)state;
    authority_make(&a);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    for (unsigned i = 0; i < CERTS_MEMBERS_MAX; i++) {
        snprintf(name, sizeof(name), "n%u", i);
        member(text, &a, NULL, NULL, name, i + 1, T0 - HOUR, T0 + HOUR);
        assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    }
    member(text, &a, NULL, NULL, "one-more", 60000, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_FULL);
    certs_stats(s, &st);
    assert_int_equal(st.members, CERTS_MEMBERS_MAX);
    assert_int_equal(st.full, 1);
    certs_free(s);
}

/* Issue 55: a revocation of what the store holds is never refused. 1100
 * members held (more than the 1024 revocations the store once held at
 * most) are revoked by key, every one taken; then the store filled to
 * CERTS_REVOKED_MAX with revocations of keys it never held: one more of
 * those is refused, counted; one of a held certificate (by its id) and
 * one of a held key (the operator's word) are taken beyond the bound,
 * counted too. */
static void test_revocations_of_held_never_refused(void **state)
{
    struct authority a;
    char text[CERT_TEXT_MAX], rev[CERT_TEXT_MAX], name[32];
    uint8_t key[CERT_PUBKEY_LEN], id[CERT_ID_LEN];
    struct certs_stats st;
    struct cert c;
    struct certs *s;
    const unsigned held = 1100;

    (void)state;
    authority_make(&a);
    assert_non_null(s = certs_new(a.pub, NULL, NULL));
    for (unsigned i = 1; i <= held; i++) {
        snprintf(name, sizeof(name), "n%u", i);
        member(text, &a, NULL, NULL, name, i, T0 - HOUR, T0 + HOUR);
        assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    }
    for (unsigned i = 1; i <= held; i++) {
        key_of(key, i);
        revocation(rev, &a, key);
        assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_REVOKING);
    }
    certs_stats(s, &st);
    assert_int_equal(st.members, 0);
    assert_int_equal(st.revoked, held);
    assert_int_equal(st.full, 0);

    /* Filled with keys never held (their third byte set: key_of's are 0). */
    memset(key, 0, sizeof(key));
    key[2] = 0xff;
    for (uint32_t i = held; i < CERTS_REVOKED_MAX; i++) {
        memcpy(key + 3, &i, sizeof(i));
        assert_int_equal(certs_revoke_key(s, key), CERTS_REVOKING);
    }
    uint32_t more = CERTS_REVOKED_MAX;
    memcpy(key + 3, &more, sizeof(more));
    assert_int_equal(certs_revoke_key(s, key), CERTS_FULL);
    certs_stats(s, &st);
    assert_int_equal(st.revoked, CERTS_REVOKED_MAX);
    assert_int_equal(st.full, 1);
    assert_int_equal(st.revoked_full, 1);

    /* Held ones: taken beyond the bound, the member gone. */
    member(text, &a, NULL, NULL, "gpu-x", 5000, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    assert_int_equal(cert_parse(text, &c), 0);
    cert_id(&c, id);
    revocation(rev, &a, id);
    assert_int_equal(certs_offer(s, rev, T0, NULL), CERTS_REVOKING);
    assert_null(name_of(s, 5000));
    member(text, &a, NULL, NULL, "gpu-y", 5001, T0 - HOUR, T0 + HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_ADDED);
    key_of(key, 5001);
    assert_int_equal(certs_revoke_key(s, key), CERTS_REVOKING);
    assert_null(name_of(s, 5001));
    member(text, &a, NULL, NULL, "gpu-y", 5001, T0 - 10, T0 + 2 * HOUR);
    assert_int_equal(certs_offer(s, text, T0, NULL), CERTS_REVOKED);
    certs_stats(s, &st);
    assert_int_equal(st.revoked, CERTS_REVOKED_MAX + 2);
    assert_int_equal(st.revoked_beyond, 2);
    assert_int_equal(st.full, 1);
    certs_free(s);
}

/* The index at scale (issue 43, "the store indexed, not walked"): 4,000
 * members (3,800 the authority's, 200 a token's) taken, then renewed
 * (with their names' case changed), revoked by id and by key, taken over by a newer
 * certificate of the authority, dropped with their token, by
 * certs_retain and at expiry; after each step every key finds what a
 * plain model of the rules says, in the order held, names are found
 * case-insensitively, revoked statements stay refused and held ones
 * known. The look-ups read few slots each (certs_stats' probes over
 * lookups): a walk over the members would read thousands. */
#define SCALE_N    4000u
#define SCALE_AUTH 3800u                  /* 1..3800 the authority's, the rest the token's */
#define SCALE_TAKE 5000u                  /* the keys that take a name over: 5000 + i */
#define SCALE_SEEDS (SCALE_TAKE + SCALE_N + 1)

struct scale {
    struct certs *s;
    char name[SCALE_SEEDS][16];           /* "" where the key holds nothing */
    uint64_t expiry[SCALE_SEEDS];
    unsigned order[SCALE_N + SCALE_N];
    size_t n;
};

static unsigned seed_of(const uint8_t *key)
{
    return (unsigned)key[0] << 8 | key[1];
}

static void scale_hold(struct scale *m, unsigned seed, const char *name, uint64_t expiry)
{
    if (!m->name[seed][0])
        m->order[m->n++] = seed;
    snprintf(m->name[seed], sizeof(m->name[seed]), "%s", name);
    m->expiry[seed] = expiry;
}

static void scale_drop(struct scale *m, unsigned seed)
{
    size_t k = 0;

    m->name[seed][0] = '\0';
    for (size_t i = 0; i < m->n; i++)
        if (m->order[i] != seed)
            m->order[k++] = m->order[i];
    m->n = k;
}

static void scale_check(const struct scale *m)
{
    uint64_t first = UINT64_MAX;

    assert_int_equal(certs_count(m->s), m->n);
    for (size_t i = 0; i < m->n; i++) {
        const struct cert *c = certs_at(m->s, i);
        assert_int_equal(seed_of(c->subject), m->order[i]);
        assert_string_equal(c->name, m->name[m->order[i]]);
        if (m->expiry[m->order[i]] < first)
            first = m->expiry[m->order[i]];
    }
    for (unsigned seed = 1; seed < SCALE_SEEDS; seed++) {
        const char *held = name_of(m->s, seed);
        if (m->name[seed][0])
            assert_string_equal(held, m->name[seed]);
        else
            assert_null(held);
    }
    assert_int_equal(certs_next_expiry(m->s), first);
}

static bool scale_keep(void *ctx, const struct cert *c)
{
    (void)ctx;
    return seed_of(c->subject) % 11 != 1;
}

static void test_index_at_scale(void **state)
{
    struct authority a;
    struct cert token;
    uint8_t tsec[CERT_SECRET_LEN], key[CERT_PUBKEY_LEN], tid[CERT_ID_LEN];
    char text[CERT_TEXT_MAX], name[16], (*first)[CERT_TEXT_MAX];
    struct certs_stats before, after;
    struct scale *m;

    (void)state;
    assert_non_null(m = calloc(1, sizeof(*m)));
    assert_non_null(first = calloc(SCALE_SEEDS, sizeof(*first)));
    authority_make(&a);
    token_make(&token, tsec, &a, "tk-", 0);
    cert_id(&token, tid);
    assert_non_null(m->s = certs_new(a.pub, NULL, NULL));
    for (unsigned i = 1; i <= SCALE_N; i++) {
        bool auth = i <= SCALE_AUTH;
        snprintf(name, sizeof(name), auth ? "m-%u" : "tk-%u", i);
        member(first[i], &a, auth ? NULL : &token, tsec, name, i, T0 - HOUR,
               T0 + HOUR + i);
        assert_int_equal(certs_offer(m->s, first[i], T0, NULL), CERTS_ADDED);
        scale_hold(m, i, name, T0 + HOUR + i);
    }
    scale_check(m);

    /* Renewed, the name in capitals: the same place, a later end. */
    for (unsigned i = 2; i <= SCALE_AUTH; i += 5) {
        snprintf(name, sizeof(name), "M-%u", i);
        member(text, &a, NULL, NULL, name, i, T0 - HOUR, T0 + 2 * HOUR + i);
        assert_int_equal(certs_offer(m->s, text, T0, NULL), CERTS_ADDED);
        scale_hold(m, i, name, T0 + 2 * HOUR + i);
        memcpy(first[i], text, sizeof(text));
    }
    scale_check(m);
    /* Each statement held found by its id alone: one look-up, no more
     * (a miss would go on to the revocations, the key, a signature). */
    for (unsigned i = 1; i <= SCALE_N; i++) {
        certs_stats(m->s, &before);
        assert_int_equal(certs_offer(m->s, first[i], T0, NULL), CERTS_KNOWN);
        certs_stats(m->s, &after);
        assert_int_equal(after.lookups - before.lookups, 1);
    }

    /* Revoked by id (the statement held: first or renewed), every
     * eleventh: each found by its id, wherever renewals moved others. */
    for (unsigned i = 4; i <= SCALE_N; i += 11) {
        struct cert c;
        uint8_t id[CERT_ID_LEN];
        assert_int_equal(cert_parse(first[i], &c), 0);
        cert_id(&c, id);
        revocation(text, &a, id);
        assert_int_equal(certs_offer(m->s, text, T0, NULL), CERTS_REVOKING);
        scale_drop(m, i);
    }
    scale_check(m);

    /* Revoked by key: every seventh. */
    for (unsigned i = 7; i <= SCALE_N; i += 7) {
        key_of(key, i);
        revocation(text, &a, key);
        assert_int_equal(certs_offer(m->s, text, T0, NULL), CERTS_REVOKING);
        scale_drop(m, i);
    }
    scale_check(m);

    /* A newer certificate of the authority gives a name to another key:
     * the old holder goes, the new one comes last. */
    for (unsigned i = 3; i <= SCALE_N; i += 13) {
        if (!m->name[i][0])
            continue;
        snprintf(name, sizeof(name), "%s", m->name[i]);
        member(text, &a, NULL, NULL, name, SCALE_TAKE + i, T0 - HOUR + 60, T0 + 3 * HOUR);
        assert_int_equal(certs_offer(m->s, text, T0, NULL), CERTS_ADDED);
        scale_drop(m, i);
        scale_hold(m, SCALE_TAKE + i, name, T0 + 3 * HOUR);
    }
    scale_check(m);

    /* The token revoked: its members go. */
    revocation(text, &a, tid);
    assert_int_equal(certs_offer(m->s, text, T0, NULL), CERTS_REVOKING);
    for (unsigned i = SCALE_AUTH + 1; i <= SCALE_N; i++)
        if (m->name[i][0])
            scale_drop(m, i);
    scale_check(m);

    /* Retained but every eleventh, then expired up to the 100th. */
    certs_retain(m->s, scale_keep, NULL);
    for (unsigned seed = 1; seed < SCALE_SEEDS; seed++)
        if (m->name[seed][0] && seed % 11 == 1)
            scale_drop(m, seed);
    scale_check(m);
    certs_run(m->s, T0 + HOUR + 100);
    for (unsigned seed = 1; seed < SCALE_SEEDS; seed++)
        if (m->name[seed][0] && m->expiry[seed] <= T0 + HOUR + 100)
            scale_drop(m, seed);
    assert_true(m->n > 2000);
    scale_check(m);

    /* Every key asked again: a few slots read per look-up. */
    certs_stats(m->s, &before);
    for (unsigned seed = 1; seed < SCALE_SEEDS; seed++)
        name_of(m->s, seed);
    certs_stats(m->s, &after);
    assert_int_equal(after.lookups - before.lookups, SCALE_SEEDS - 1);
    assert_true(after.probes - before.probes <= 3 * (after.lookups - before.lookups));

    /* What was revoked stays refused; what is held stays known. */
    for (unsigned i = 7; i <= SCALE_N; i += 7)
        assert_int_equal(certs_offer(m->s, first[i], T0, NULL), CERTS_REVOKED);
    for (unsigned i = 4; i <= SCALE_N; i += 11)
        assert_int_equal(certs_offer(m->s, first[i], T0, NULL), CERTS_REVOKED);
    for (unsigned i = 1; i <= SCALE_AUTH; i++)
        if (m->name[i][0] && i % 5 != 2)
            assert_int_equal(certs_offer(m->s, first[i], T0, NULL), CERTS_KNOWN);

    /* Names found whatever their case: an older certificate of the
     * authority for a held name is refused; for a name let go, taken. */
    certs_stats(m->s, &before);
    for (unsigned i = 1; i <= SCALE_AUTH; i++) {
        bool held = m->name[i][0] || m->name[SCALE_TAKE + i][0];
        snprintf(name, sizeof(name), "m-%u", i);
        member(text, &a, NULL, NULL, name, 20000 + i, T0 - 2 * HOUR, T0 + HOUR);
        assert_int_equal(certs_offer(m->s, text, T0, NULL),
                         held ? CERTS_NAME_TAKEN : CERTS_ADDED);
    }
    certs_stats(m->s, &after);
    /* At most 4 look-ups an offer (id, key, revoked ids, name) and an
     * insertion's 3: a few slots each. */
    assert_true(after.probes - before.probes <= 3 * (after.lookups - before.lookups));
    assert_true(after.lookups - before.lookups <= 10 * SCALE_AUTH);
    certs_free(m->s);
    free(first);
    free(m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_added_known_and_checked),
        cmocka_unit_test(test_fixed_address),
        cmocka_unit_test(test_wrong_authority_and_times),
        cmocka_unit_test(test_expiry),
        cmocka_unit_test(test_revocation),
        cmocka_unit_test(test_name_clash),
        cmocka_unit_test(test_token_max),
        cmocka_unit_test(test_token_never_takes_a_name),
        cmocka_unit_test(test_replacement),
        cmocka_unit_test(test_token_default_places),
        cmocka_unit_test(test_revocation_of_a_key),
        cmocka_unit_test(test_retain_frees_token_place),
        cmocka_unit_test(test_authority_replaces_a_squat),
        cmocka_unit_test(test_heard_takes_nothing),
        cmocka_unit_test(test_bounds),
        cmocka_unit_test(test_revocations_of_held_never_refused),
        cmocka_unit_test(test_index_at_scale),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
