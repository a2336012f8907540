/* SPDX-License-Identifier: MIT */
/* Tests of issue 56's renewal: which certificate renews which
 * (cert_renews, config/cert.c), the set points the journal warns at
 * (membership/renewal.c), the holder taking its own renewal and keeping
 * it in the state directory, and `up` preferring the kept one
 * (certfile_kept, daemon/certfile.c). Certificates are made here with
 * cert_sign. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "overlay/daemon/certfile.h"
#include "overlay/engine/model/device.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/renewal.h"
#include "overlay/membership/state.h"

#define T0   1800000000ull
#define HOUR 3600ull
#define DAY  (24 * HOUR)

static uint8_t auth_pub[CERT_PUBKEY_LEN], auth_sec[CERT_SECRET_LEN];

static int setup(void **state)
{
    (void)state;
    return cert_keypair(auth_pub, auth_sec);
}

/* A member certificate (the authority's, or through token/tsec), parsed
 * into *c and as text in out. */
static void member(struct cert *c, char *out, const char *name, unsigned key, uint64_t nb,
                   uint64_t na, const struct cert *token, const uint8_t *tsec)
{
    char text[CERT_TEXT_MAX];

    memset(c, 0, sizeof(*c));
    c->kind = CERT_MEMBER;
    c->not_before = nb;
    c->not_after = na;
    c->subject[0] = (uint8_t)key;
    c->subject[1] = 0x5a;
    snprintf(c->name, sizeof(c->name), "%s", name);
    if (token)
        cert_token_embed(c, token);
    assert_int_equal(cert_sign(c, token ? tsec : auth_sec, out ? out : text, CERT_TEXT_MAX), 0);
}

static void token_make(struct cert *t, uint8_t sec[CERT_SECRET_LEN], uint64_t na)
{
    char text[CERT_TEXT_MAX];

    memset(t, 0, sizeof(*t));
    t->kind = CERT_TOKEN;
    t->not_before = T0 - HOUR;
    t->not_after = na;
    snprintf(t->name, sizeof(t->name), "spot-");
    assert_int_equal(cert_keypair(t->subject, sec), 0);
    assert_int_equal(cert_sign(t, auth_sec, text, sizeof(text)), 0);
}

struct node_fixture {
    struct device dev;
    struct membership m;
    struct cluster_node self;
    char dir[64];
    int changes;
};

/* A renewal is the same key, name (case aside) and address, ending later. */
static void test_renews(void **state)
{
    struct cert o, n, token;
    uint8_t tsec[CERT_SECRET_LEN];

    (void)state;
    member(&o, NULL, "gpu-1", 1, T0 - HOUR, T0 + HOUR, NULL, NULL);
    member(&n, NULL, "GPU-1", 1, T0, T0 + 2 * HOUR, NULL, NULL);
    assert_true(cert_renews(&n, &o));
    assert_false(cert_renews(&o, &n));               /* older */
    assert_false(cert_renews(&o, &o));               /* the same end: no renewal */
    member(&n, NULL, "gpu-2", 1, T0, T0 + 2 * HOUR, NULL, NULL);
    assert_false(cert_renews(&n, &o));               /* another name */
    member(&n, NULL, "gpu-1", 2, T0, T0 + 2 * HOUR, NULL, NULL);
    assert_false(cert_renews(&n, &o));               /* another key */
    member(&n, NULL, "gpu-1", 1, T0, T0 + 2 * HOUR, NULL, NULL);
    n.has_address = true;
    assert_int_equal(cluster_addr_parse("10.0.0.9", &n.address), 0);
    assert_false(cert_renews(&n, &o));               /* an address it did not fix */
    o = n;
    o.not_after = T0 + HOUR;
    assert_true(cert_renews(&n, &o));                /* the same fixed address */
    assert_int_equal(cluster_addr_parse("10.0.0.10", &o.address), 0);
    assert_false(cert_renews(&n, &o));               /* another one */
    /* A token's member ends with its token: the authority's renewal of
     * it ends later than the token, and renews it. */
    token_make(&token, tsec, T0 + HOUR);
    member(&o, NULL, "spot-a", 3, T0 - HOUR, T0 + 5 * HOUR, &token, tsec);
    assert_int_equal(cert_end(&o), T0 + HOUR);
    member(&n, NULL, "spot-a", 3, T0, T0 + HOUR + 1, NULL, NULL);
    assert_true(cert_renews(&n, &o));
}

/* The store's side (certs.h): a token's member renewed by the authority
 * is taken in its place (no change of order, one callback), outlives the
 * token, is not dropped at the token's end nor by the token's revocation
 * (it is the authority's now: its key's revocation ends it); an older
 * certificate offered after it changes nothing; a renewal for the same
 * key under another name is refused. */
static void test_store_takes_renewal(void **state)
{
    char held[CERT_TEXT_MAX], other[CERT_TEXT_MAX], renewed[CERT_TEXT_MAX], text[CERT_TEXT_MAX];
    uint8_t tsec[CERT_SECRET_LEN], id[CERT_ID_LEN];
    struct cert token, c;
    struct certs *s;

    (void)state;
    token_make(&token, tsec, T0 + HOUR);
    member(&c, held, "spot-a", 3, T0 - HOUR, T0 + HOUR, &token, tsec);
    member(&c, other, "gpu-b", 4, T0 - HOUR, T0 + DAY, NULL, NULL);
    member(&c, renewed, "spot-a", 3, T0, T0 + 2 * HOUR, NULL, NULL);
    assert_non_null(s = certs_new(auth_pub, NULL, NULL));
    assert_int_equal(certs_offer(s, held, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, other, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, renewed, T0 + 60, NULL), CERTS_ADDED);
    assert_int_equal(certs_count(s), 2);
    assert_string_equal(certs_at(s, 0)->name, "spot-a");             /* its place kept */
    assert_false(certs_at(s, 0)->has_token);
    assert_int_equal(certs_offer(s, held, T0 + 60, NULL), CERTS_KNOWN); /* older: no change */
    assert_false(certs_at(s, 0)->has_token);
    member(&c, text, "spot-z", 3, T0, T0 + 3 * HOUR, NULL, NULL);
    assert_int_equal(certs_offer(s, text, T0 + 60, NULL), CERTS_NAME_TAKEN);
    certs_run(s, T0 + HOUR);
    assert_int_equal(certs_count(s), 2);                              /* past the token's end */
    assert_int_equal(certs_next_expiry(s), T0 + 2 * HOUR);
    /* The token's revocation: the authority's renewal stays. */
    cert_id(&token, id);
    {
        struct cert r = { .kind = CERT_REVOCATION, .not_before = T0 };
        memcpy(r.subject, id, CERT_ID_LEN);
        assert_int_equal(cert_sign(&r, auth_sec, text, sizeof(text)), 0);
        assert_int_equal(certs_offer(s, text, T0 + HOUR, NULL), CERTS_REVOKING);
        assert_int_equal(certs_count(s), 2);
        memset(&r, 0, sizeof(r));
        r.kind = CERT_REVOCATION;
        r.not_before = T0;
        member(&c, NULL, "spot-a", 3, T0, T0 + 2 * HOUR, NULL, NULL);
        memcpy(r.subject, c.subject, CERT_PUBKEY_LEN);
        assert_int_equal(cert_sign(&r, auth_sec, text, sizeof(text)), 0);
        assert_int_equal(certs_offer(s, text, T0 + HOUR, NULL), CERTS_REVOKING);
        assert_int_equal(certs_count(s), 1);
    }
    certs_free(s);
}

/* The authority's key rotated (certs_trust): a certificate of the new
 * key counts once it is trusted beside the old; the old dropped, its
 * members go (a token's member of the old key's token too) and the new
 * key's stay; each drop one callback. */
static int trust_changes;
static void count_change(void *ctx)
{
    (void)ctx;
    trust_changes++;
}

static void test_store_rotation(void **state)
{
    uint8_t old_pub[CERT_PUBKEY_LEN], old_sec[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    char a[CERT_TEXT_MAX], t[CERT_TEXT_MAX], b[CERT_TEXT_MAX], b2[CERT_TEXT_MAX];
    struct cert c, token;
    struct certs *s;

    (void)state;
    /* The old key: the one of the fixture is the new. */
    assert_int_equal(cert_keypair(old_pub, old_sec), 0);
    memset(&c, 0, sizeof(c));
    c.kind = CERT_MEMBER;
    c.not_before = T0 - HOUR;
    c.not_after = T0 + DAY;
    c.subject[0] = 1;
    c.subject[1] = 0x5a;                  /* as member() makes key 1 */
    snprintf(c.name, sizeof(c.name), "gpu-a");
    assert_int_equal(cert_sign(&c, old_sec, a, sizeof(a)), 0);
    memset(&token, 0, sizeof(token));
    token.kind = CERT_TOKEN;
    token.not_before = T0 - HOUR;
    token.not_after = T0 + DAY;
    snprintf(token.name, sizeof(token.name), "spot-");
    assert_int_equal(cert_keypair(token.subject, tsec), 0);
    assert_int_equal(cert_sign(&token, old_sec, t, sizeof(t)), 0);
    memset(&c, 0, sizeof(c));
    c.kind = CERT_MEMBER;
    c.not_before = T0 - HOUR;
    c.not_after = T0 + HOUR;
    c.subject[0] = 2;
    snprintf(c.name, sizeof(c.name), "spot-t");
    cert_token_embed(&c, &token);
    assert_int_equal(cert_sign(&c, tsec, t, sizeof(t)), 0);
    member(&c, b, "gpu-b", 3, T0 - HOUR, T0 + DAY, NULL, NULL);       /* the new key's */
    member(&c, b2, "gpu-a", 1, T0, T0 + 2 * DAY, NULL, NULL);          /* gpu-a re-signed */

    assert_non_null(s = certs_new(old_pub, count_change, NULL));
    assert_int_equal(certs_offer(s, a, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, t, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, b, T0, NULL), CERTS_INVALID);     /* not trusted yet */
    trust_changes = 0;
    certs_trust(s, auth_pub, old_pub);                                /* both */
    assert_int_equal(trust_changes, 0);
    assert_int_equal(certs_offer(s, b, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(s, b2, T0, NULL), CERTS_ADDED);      /* a renewal, new key */
    assert_int_equal(certs_count(s), 3);
    trust_changes = 0;
    certs_trust(s, auth_pub, NULL);                                   /* the new alone */
    assert_int_equal(trust_changes, 1);
    assert_int_equal(certs_count(s), 2);                              /* spot-t went */
    assert_string_equal(certs_at(s, 0)->name, "gpu-a");
    assert_string_equal(certs_at(s, 1)->name, "gpu-b");
    assert_int_equal(certs_offer(s, a, T0, NULL), CERTS_INVALID);    /* the old key's */
    assert_int_equal(certs_offer(s, t, T0, NULL), CERTS_INVALID);    /* the old key's */
    certs_free(s);
}

/* The set points: a day, an hour, ten minutes, a minute before the end,
 * each once as the time left crosses it, and only those shorter than the
 * certificate's life. */
static void test_points(void **state)
{
    (void)state;
    assert_int_equal(renewal_point(7 * DAY, 2 * DAY, DAY + 1), 0);
    assert_int_equal(renewal_point(7 * DAY, DAY + 1, DAY), DAY);
    assert_int_equal(renewal_point(7 * DAY, DAY, DAY - 1), 0);     /* crossed once only */
    assert_int_equal(renewal_point(7 * DAY, HOUR + 5, HOUR), HOUR);
    assert_int_equal(renewal_point(7 * DAY, 601, 600), 600);
    assert_int_equal(renewal_point(7 * DAY, 61, 59), 60);
    assert_int_equal(renewal_point(7 * DAY, 2 * DAY, 30), 60);       /* the smallest crossed */
    assert_int_equal(renewal_point(7 * DAY, UINT64_MAX, 5 * HOUR), DAY); /* first look */
    /* Only points in the last third of a life: renewal comes at a third. */
    assert_int_equal(renewal_point(2 * HOUR, UINT64_MAX, HOUR), 0);
    assert_int_equal(renewal_point(2 * HOUR, 601, 600), 600);
    assert_int_equal(renewal_point(90, 61, 60), 0);
    assert_int_equal(renewal_point(183, 61, 60), 60);
    assert_int_equal(renewal_point(180, 61, 60), 0);
    assert_int_equal(renewal_next(7 * DAY, 3 * DAY), 2 * DAY);
    assert_int_equal(renewal_next(7 * DAY, DAY), DAY - HOUR);
    assert_int_equal(renewal_next(7 * DAY, 61), 1);
    assert_int_equal(renewal_next(7 * DAY, 60), 60);                 /* then the end */
    assert_int_equal(renewal_next(2 * HOUR, HOUR), HOUR - 600);
    assert_int_equal(renewal_next(90, 80), 80);
}

static void on_change(void *ctx)
{
    ((struct node_fixture *)ctx)->m.certs_dirty = true;
}

static void node_make(struct node_fixture *f, const char *cert_text)
{
    struct cert c;

    memset(f, 0, sizeof(*f));
    membership_init(&f->m);
    f->dev.membership = &f->m;
    assert_int_equal(cert_parse(cert_text, &c), 0);
    memcpy(f->self.public_key, c.subject, CLUSTER_KEY_LEN);
    snprintf(f->self.name, sizeof(f->self.name), "%s", c.name);
    f->dev.self = &f->self;
    assert_non_null(f->dev.self_cert = strdup(cert_text));
    assert_non_null(f->m.certs = certs_new(auth_pub, on_change, f));
    snprintf(f->dir, sizeof(f->dir), "/tmp/ddpnet-renewal-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    f->m.cert_fd = renewal_open(f->dir, "ddp0");
    assert_true(f->m.cert_fd >= 0);
}

static void node_free(struct node_fixture *f)
{
    char path[128];

    snprintf(path, sizeof(path), "%s/ddp0.cert", f->dir);
    unlink(path);
    rmdir(f->dir);
    close(f->m.cert_fd);
    certs_free(f->m.certs);
    free(f->dev.self_cert);
}

/* The holder takes its own renewal when the store does: the one it says
 * from then on, kept in STATE_DIR/IFNAME.cert; `up` then prefers the kept
 * one to the older --cert file's, and never one for another node or an
 * older one. */
static void test_holder_keeps_renewal(void **state)
{
    char first[CERT_TEXT_MAX], second[CERT_TEXT_MAX], other[CERT_TEXT_MAX];
    char text[CERT_TEXT_MAX + 2];
    struct node_fixture f;
    struct cert c;

    (void)state;
    member(&c, first, "spot-a", 7, T0 - HOUR, T0 + 90, NULL, NULL);
    member(&c, second, "spot-a", 7, T0, T0 + 180, NULL, NULL);
    member(&c, other, "spot-b", 8, T0, T0 + 900, NULL, NULL);
    node_make(&f, first);
    assert_int_equal(certs_offer(f.m.certs, first, T0, NULL), CERTS_ADDED);
    renewal_run(&f.dev, T0);
    assert_string_equal(f.dev.self_cert, first);          /* nothing newer yet */
    /* Nothing kept: up uses the file's. */
    snprintf(text, sizeof(text), "%s", first);
    assert_int_equal(certfile_kept(f.dir, "ddp0", text, sizeof(text)), 0);
    /* A member hands it the renewal. */
    assert_int_equal(certs_offer(f.m.certs, second, T0 + 30, NULL), CERTS_ADDED);
    renewal_run(&f.dev, T0 + 30);
    assert_string_equal(f.dev.self_cert, second);
    /* A restart: the --cert file still holds the first. */
    snprintf(text, sizeof(text), "%s", first);
    assert_int_equal(certfile_kept(f.dir, "ddp0", text, sizeof(text)), 1);
    assert_string_equal(text, second);
    /* A --cert file newer than what is kept wins; another node's is
     * never taken. */
    assert_int_equal(certfile_kept(f.dir, "ddp0", text, sizeof(text)), 0);
    snprintf(text, sizeof(text), "%s", other);
    assert_int_equal(certfile_kept(f.dir, "ddp0", text, sizeof(text)), 0);
    assert_string_equal(text, other);
    /* An older certificate offered after changes nothing said. */
    renewal_run(&f.dev, T0 + 31);
    assert_string_equal(f.dev.self_cert, second);
    /* Ended, then a certificate of our key for another name: not ours to
     * say (our name was fixed at up), nor to keep. */
    certs_run(f.m.certs, T0 + 180);
    member(&c, other, "spot-z", 7, T0, T0 + 900, NULL, NULL);
    assert_int_equal(certs_offer(f.m.certs, other, T0 + 181, NULL), CERTS_ADDED);
    renewal_run(&f.dev, T0 + 181);
    assert_string_equal(f.dev.self_cert, second);
    snprintf(text, sizeof(text), "%s", first);
    assert_int_equal(certfile_kept(f.dir, "ddp0", text, sizeof(text)), 1);
    assert_string_equal(text, second);
    node_free(&f);
}

/* A peer whose certificate ends with no renewal is noted for `status`;
 * one that was renewed in time is not. */
static void test_ended_noted(void **state)
{
    char self[CERT_TEXT_MAX], a[CERT_TEXT_MAX], b[CERT_TEXT_MAX], b2[CERT_TEXT_MAX];
    struct node_fixture f;
    struct cert c;
    uint64_t next;

    (void)state;
    member(&c, self, "gpu-0", 1, T0 - HOUR, T0 + DAY, NULL, NULL);
    member(&c, a, "gpu-a", 2, T0 - HOUR, T0 + 90, NULL, NULL);
    member(&c, b, "gpu-b", 3, T0 - HOUR, T0 + 90, NULL, NULL);
    member(&c, b2, "gpu-b", 3, T0, T0 + 300, NULL, NULL);
    node_make(&f, self);
    assert_int_equal(certs_offer(f.m.certs, self, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(f.m.certs, a, T0, NULL), CERTS_ADDED);
    assert_int_equal(certs_offer(f.m.certs, b, T0, NULL), CERTS_ADDED);
    next = renewal_run(&f.dev, T0);
    assert_int_equal(next, T0 + 30);                     /* a minute before a's end */
    f.m.certs_dirty = false;
    assert_int_equal(certs_offer(f.m.certs, b2, T0 + 40, NULL), CERTS_ADDED);
    renewal_run(&f.dev, T0 + 40);
    f.m.certs_dirty = false;
    assert_int_equal(f.m.n_ended, 0);
    renewal_run(&f.dev, T0 + 90);
    certs_run(f.m.certs, T0 + 90);
    assert_int_equal(f.m.n_ended, 1);
    assert_string_equal(f.m.ended[0].name, "gpu-a");
    assert_int_equal(f.m.ended[0].at, T0 + 90);
    /* Looked at again, it is not noted twice. */
    f.m.certs_dirty = true;
    renewal_run(&f.dev, T0 + 91);
    assert_int_equal(f.m.n_ended, 1);
    node_free(&f);
}

/* What `status` is told of ended peers is bounded: the newest
 * MEMBERSHIP_ENDED_MAX, the oldest given way, each once. */
static void test_ended_bounded(void **state)
{
    char self[CERT_TEXT_MAX], text[CERT_TEXT_MAX], name[16];
    struct node_fixture f;
    struct cert c;

    (void)state;
    member(&c, self, "gpu-0", 1, T0 - HOUR, T0 + DAY, NULL, NULL);
    node_make(&f, self);
    assert_int_equal(certs_offer(f.m.certs, self, T0, NULL), CERTS_ADDED);
    for (unsigned i = 0; i <= MEMBERSHIP_ENDED_MAX; i++) {
        snprintf(name, sizeof(name), "gpu-%u", i + 1);
        member(&c, text, name, 2 + i, T0 - HOUR, T0 + 90 + i, NULL, NULL);
        assert_int_equal(certs_offer(f.m.certs, text, T0, NULL), CERTS_ADDED);
    }
    renewal_run(&f.dev, T0);
    f.m.certs_dirty = true;
    renewal_run(&f.dev, T0 + 200);
    assert_int_equal(f.m.n_ended, MEMBERSHIP_ENDED_MAX);
    assert_string_equal(f.m.ended[0].name, "gpu-2");                 /* gpu-1 gave way */
    assert_string_equal(f.m.ended[MEMBERSHIP_ENDED_MAX - 1].name, "gpu-5");
    assert_int_equal(f.m.ended[MEMBERSHIP_ENDED_MAX - 1].at, T0 + 90 + MEMBERSHIP_ENDED_MAX);
    f.m.certs_dirty = true;
    renewal_run(&f.dev, T0 + 201);
    assert_int_equal(f.m.n_ended, MEMBERSHIP_ENDED_MAX);
    assert_string_equal(f.m.ended[0].name, "gpu-2");
    node_free(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_renews),
        cmocka_unit_test(test_points),
        cmocka_unit_test(test_store_takes_renewal),
        cmocka_unit_test(test_store_rotation),
        cmocka_unit_test(test_holder_keeps_renewal),
        cmocka_unit_test(test_ended_noted),
        cmocka_unit_test(test_ended_bounded),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, setup, NULL);
}
