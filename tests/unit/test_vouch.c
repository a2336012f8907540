/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/vouch.c: what a writer of the registry's
 * prefix can and cannot make the others believe. Each round runs as
 * membership runs it (members.c): the snapshot sorted by the key
 * holders' word (vouch_sort), then merged with the file's nodes
 * (registry_model), the nodes counted after it carried to the next round.
 * A record counts only when its key's holder stated its digest (or is an
 * older daemon); a member's record rewritten by another writer -- its
 * address, endpoint, key or name -- changes nothing counted; a new record
 * claiming a member's address or key takes neither; a delete takes the
 * member away (deny service), and its name and address go to no other key
 * for VOUCH_HOLD_NS. The last test plays it against a real etcd
 * (etcd_fixture): two members joined with registry_join, a third node's
 * watcher, and a writer with the members' credentials. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/addr.h"
#include "config/cluster.h"
#include "config/cluster_index.h"
#include "overlay/registry/etcd.h"
#include "overlay/registry/record.h"
#include "overlay/registry/registry.h"
#include "overlay/registry/vouch.h"
#include "tests/unit/etcd_fixture.h"
#include "tests/unit/registry_fixture.h"

#define KV "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="   /* the victim */
#define KX "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="   /* the writer */
#define KY "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="   /* a key the writer made */
#define KW "vofb+H8p26CYyRdLZ9bDVFcOCg8L9uPQZkmy7iGBuns="   /* an honest newcomer */
#define KF "iNv2EpcsWUosL23eST7xxM0nrbqMNubr0AuJ/xQ6umE="   /* the file's node */

#define HEAD "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n" \
             "registry = etcd://127.0.0.1:2379/ddpnet/test\n"
#define NF "[node f]\npublic-key = " KF "\naddress = 10.77.0.1\n"

#define SEC 1000000000ull
#define MAX_KEYS 8

/* The world one node sees: the file, what each key's holder said, the
 * nodes it counts and those that left. */
struct world {
    struct cluster file;
    struct {
        uint8_t key[CLUSTER_KEY_LEN];
        struct vouch_word w;
    } words[MAX_KEYS];
    size_t n_words;
    struct cluster model;                 /* the last round's */
    size_t n_counted_model;               /* model nodes [file's .. this) count */
    struct cluster_index *pending;
    struct vouch_out v;
    struct vouch_gone gone[VOUCH_GONE_MAX];
    size_t n_gone;
    uint64_t now;
};

static struct cluster_node rec(const char *name, const char *key, const char *addr,
                               const char *endpoint)
{
    struct cluster_node n = registry_fixture_node(name, key);
    const char *why;

    assert_int_equal(cluster_addr_parse(addr, &n.address), 0);
    if (endpoint) {
        assert_int_equal(cluster_endpoint_parse(endpoint, &n.endpoint, &why), 0);
        n.has_endpoint = true;
    }
    return n;
}

static struct vouch_word *word_for(struct world *w, const uint8_t *key)
{
    for (size_t i = 0; i < w->n_words; i++)
        if (!memcmp(w->words[i].key, key, CLUSTER_KEY_LEN))
            return &w->words[i].w;
    assert_true(w->n_words < MAX_KEYS);
    memcpy(w->words[w->n_words].key, key, CLUSTER_KEY_LEN);
    memset(&w->words[w->n_words].w, 0, sizeof(struct vouch_word));
    return &w->words[w->n_words++].w;
}

/* The holder of r's key states r (its digest), on its session. */
static void states(struct world *w, const struct cluster_node *r)
{
    struct vouch_word *x = word_for(w, r->public_key);

    x->said = VOUCH_SAID_DIGEST;
    x->alive = true;
    vouch_digest(r, x->digest);
}

static void word(void *ctx, const uint8_t key[CLUSTER_KEY_LEN], struct vouch_word *out)
{
    *out = *word_for(ctx, key);
}

static void world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    assert_int_equal(cluster_parse(HEAD NF, strlen(HEAD NF), &w->file, NULL), 0);
    assert_int_equal(registry_model(&w->file, NULL, NULL, 0, &w->model, &(size_t){ 0 }, NULL,
                                    NULL), 0);
    w->n_counted_model = w->model.n_nodes;
    w->now = 1000 * SEC;
}

static void round_free(struct world *w)
{
    free(w->v.nodes);
    memset(&w->v, 0, sizeof(w->v));
    cluster_index_free(w->pending);
    w->pending = NULL;
}

static void world_free(struct world *w)
{
    round_free(w);
    cluster_free(&w->model);
    cluster_free(&w->file);
}

/* One snapshot applied, as members.c applies it. */
static void apply(struct world *w, const struct cluster_node *records, size_t n)
{
    struct cluster_node counted[16];
    size_t m = 0;

    for (size_t i = w->file.n_nodes; i < w->model.n_nodes; i++)
        if (!w->pending || !cluster_index_key(w->pending, w->model.nodes[i].public_key))
            counted[m++] = w->model.nodes[i];
    round_free(w);
    assert_int_equal(vouch_sort(records, n, counted, m, w->gone, &w->n_gone, VOUCH_GONE_MAX,
                                word, w, w->now, &w->v), 0);
    w->pending = cluster_index_new(w->v.n + 1);
    assert_non_null(w->pending);
    for (size_t i = w->v.n_counted; i < w->v.n; i++)
        cluster_index_add(w->pending, &w->v.nodes[i]);
    cluster_free(&w->model);
    assert_int_equal(registry_model(&w->file, NULL, w->v.nodes, w->v.n, &w->model,
                                    &(size_t){ 0 }, NULL, NULL), 0);
}

/* The counted nodes as "name=address[@endpoint]", space-separated, the
 * file's first; then " | " and the pending ones' names. */
static const char *view(struct world *w)
{
    static char buf[512];
    char addr[64], ep[96];
    size_t at = 0;

    buf[0] = '\0';
    for (int pend = 0; pend < 2; pend++) {
        if (pend)
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, " |");
        for (size_t i = 0; i < w->model.n_nodes; i++) {
            const struct cluster_node *n = &w->model.nodes[i];
            bool p = i >= w->file.n_nodes && w->pending &&
                     cluster_index_key(w->pending, n->public_key);
            if (p != (bool)pend)
                continue;
            cluster_addr_format(&n->address, addr, sizeof(addr));
            ep[0] = '\0';
            if (n->has_endpoint)
                cluster_endpoint_format(&n->endpoint, ep, sizeof(ep));
            at += (size_t)snprintf(buf + at, sizeof(buf) - at, "%s%s=%s%s%s", at ? " " : "",
                                   n->name, addr, ep[0] ? "@" : "", ep);
        }
    }
    return buf;
}

/* v and x joined and stated their records: both count. */
static void two_members(struct world *w, struct cluster_node *v, struct cluster_node *x)
{
    world_init(w);
    *v = rec("v", KV, "10.77.0.2", "192.0.2.2:51820");
    *x = rec("x", KX, "10.77.0.3", "192.0.2.3:51820");
    struct cluster_node snap[] = { *v, *x };
    apply(w, snap, 2);
    assert_string_equal(view(w), "f=10.77.0.1 | v=10.77.0.2@192.0.2.2:51820 "
                                 "x=10.77.0.3@192.0.2.3:51820");
    states(w, v);
    states(w, x);
    apply(w, snap, 2);
    assert_string_equal(view(w), "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 "
                                 "x=10.77.0.3@192.0.2.3:51820 |");
}

/* A record counts only when its key's holder stated it: nothing said,
 * or another digest, keeps it pending; an older daemon's is taken. */
static void test_counts_on_its_holders_word(void **state)
{
    struct world w;
    struct cluster_node v = rec("v", KV, "10.77.0.2", NULL), x = rec("x", KX, "10.77.0.3", NULL);
    struct cluster_node other = rec("v", KV, "10.77.0.9", NULL);

    (void)state;
    world_init(&w);
    struct cluster_node snap[] = { v, x };
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 | v=10.77.0.2 x=10.77.0.3");
    states(&w, &other);                   /* v's holder states another record */
    word_for(&w, x.public_key)->said = VOUCH_SAID_OLDER;
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3 | v=10.77.0.2");
    states(&w, &v);
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3 v=10.77.0.2 |");
    world_free(&w);
}

/* x rewrites v's record: another address, another endpoint, then both.
 * Nothing changes; v's own new record (stated) does change it. */
static void test_rewritten_address_and_endpoint(void **state)
{
    struct world w;
    struct cluster_node v, x;
    const char *before = "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 x=10.77.0.3@192.0.2.3:51820 |";

    (void)state;
    two_members(&w, &v, &x);
    struct cluster_node snap[] = { rec("v", KV, "10.77.0.9", "192.0.2.2:51820"), x };
    apply(&w, snap, 2);
    assert_string_equal(view(&w), before);
    snap[0] = rec("v", KV, "10.77.0.2", "198.51.100.66:51820");   /* the writer's host */
    apply(&w, snap, 2);
    assert_string_equal(view(&w), before);
    snap[0] = rec("v", KV, "10.77.0.3", "198.51.100.66:51820");   /* x's own address */
    apply(&w, snap, 2);
    assert_string_equal(view(&w), before);
    /* v itself moved (it stated its new record): that counts. */
    snap[0] = rec("v", KV, "10.77.0.2", "192.0.2.22:51820");
    states(&w, &snap[0]);
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.2@192.0.2.22:51820 "
                                  "x=10.77.0.3@192.0.2.3:51820 |");
    world_free(&w);
}

/* x puts its own key into v's record (and states it), or moves v's
 * record to another name: v stays v, at its address. */
static void test_rewritten_key_and_name(void **state)
{
    struct world w;
    struct cluster_node v, x;
    const char *before = "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 x=10.77.0.3@192.0.2.3:51820 |";

    (void)state;
    two_members(&w, &v, &x);
    struct cluster_node taken = rec("v", KX, "10.77.0.2", "192.0.2.3:51820");
    struct cluster_node snap[] = { taken, x };
    states(&w, &taken);                   /* x states the record it wrote */
    apply(&w, snap, 2);
    assert_string_equal(view(&w), before);
    states(&w, &x);
    apply(&w, snap, 2);
    assert_string_equal(view(&w), before);
    /* v's record moved to another name, with v's key and address. */
    struct cluster_node moved[] = { rec("gpu-v", KV, "10.77.0.2", "192.0.2.2:51820"), x };
    apply(&w, moved, 2);
    assert_string_equal(view(&w), before);
    world_free(&w);
}

/* New records: one claiming v's address with a key of the writer's, one
 * claiming v's key with the writer's endpoint; both stated by whoever
 * holds their keys (the writer cannot state v's). Neither takes
 * anything; an honest newcomer counts once it states its record. */
static void test_new_records_claiming_a_member(void **state)
{
    struct world w;
    struct cluster_node v, x;

    (void)state;
    two_members(&w, &v, &x);
    struct cluster_node addr = rec("y", KY, "10.77.0.2", "198.51.100.66:51820");
    struct cluster_node key = rec("z", KV, "10.77.0.7", "198.51.100.66:51820");
    struct cluster_node fresh = rec("w", KW, "10.77.0.8", NULL);
    struct cluster_node snap[] = { v, x, addr, key, fresh };
    states(&w, &addr);
    apply(&w, snap, 5);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 "
                                  "x=10.77.0.3@192.0.2.3:51820 | w=10.77.0.8");
    states(&w, &fresh);
    apply(&w, snap, 5);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 "
                                  "x=10.77.0.3@192.0.2.3:51820 w=10.77.0.8 |");
    world_free(&w);
}

/* What a writer can still do: delete v's record, and v is gone from
 * everyone's mesh. Its name and address then go to no other key for
 * VOUCH_HOLD_NS, stated or not; after that they are free. v coming back
 * with its key takes them at once. */
static void test_delete_then_claim(void **state)
{
    struct world w;
    struct cluster_node v, x;

    (void)state;
    two_members(&w, &v, &x);
    struct cluster_node only_x[] = { x };
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 |");
    struct cluster_node name = rec("v", KY, "10.77.0.9", NULL);
    struct cluster_node addr = rec("y", KW, "10.77.0.2", NULL);
    struct cluster_node snap[] = { x, name, addr };
    states(&w, &name);
    states(&w, &addr);
    w.now += VOUCH_HOLD_NS - SEC;
    apply(&w, snap, 3);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 | "
                                  "v=10.77.0.9 y=10.77.0.2");
    /* v comes back meanwhile: it is v again, and the claims stay pending. */
    struct cluster_node back[] = { x, name, addr, v };
    apply(&w, back, 4);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 "
                                  "v=10.77.0.2@192.0.2.2:51820 |");
    /* Without v, after the hold: free for the others. */
    apply(&w, only_x, 1);
    w.now += VOUCH_HOLD_NS;
    apply(&w, snap, 3);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 v=10.77.0.9 "
                                  "y=10.77.0.2 |");
    world_free(&w);
}

/* Issue 59: v's record goes (its lease ran out) with a grace of 15 s
 * for its key. Within it v counts as it was; its record back, the same,
 * changes nothing; gone past the grace, v goes, and its name and address
 * are held from other keys as after any delete. */
#define GRACE (15 * SEC)
static void test_grace_then_back_or_gone(void **state)
{
    struct world w;
    struct cluster_node v, x;
    const char *both = "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 x=10.77.0.3@192.0.2.3:51820 |";

    (void)state;
    two_members(&w, &v, &x);
    word_for(&w, v.public_key)->grace_ns = GRACE;
    struct cluster_node only_x[] = { x }, snap[] = { v, x };
    apply(&w, only_x, 1);                 /* the DELETE */
    assert_string_equal(view(&w), both);
    assert_int_equal(w.n_gone, 1);
    assert_true(w.gone[0].grace);
    w.now += GRACE - SEC;
    apply(&w, only_x, 1);                 /* a read of the prefix without it */
    assert_string_equal(view(&w), both);
    apply(&w, snap, 2);                   /* back, the same */
    assert_string_equal(view(&w), both);
    assert_int_equal(w.n_gone, 0);
    /* Gone again: the grace runs from this absence, not the first. */
    w.now += 10 * SEC;
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), both);
    w.now += GRACE - 1;
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), both);
    w.now += 1;
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 |");
    assert_int_equal(w.n_gone, 1);
    assert_false(w.gone[0].grace);
    /* Held: another key's claim on its name waits. */
    struct cluster_node name = rec("v", KY, "10.77.0.9", NULL), claim[] = { x, name };
    states(&w, &name);
    apply(&w, claim, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 | v=10.77.0.9");
    world_free(&w);
}

/* A grace longer than the hold of a name (a caller may give one): its
 * entry is kept while it runs, so it ends when it should, not anew. */
static void test_grace_past_the_hold(void **state)
{
    struct world w;
    struct cluster_node v, x;

    (void)state;
    two_members(&w, &v, &x);
    word_for(&w, v.public_key)->grace_ns = VOUCH_HOLD_NS + 50 * SEC;
    struct cluster_node only_x[] = { x };
    apply(&w, only_x, 1);
    w.now += VOUCH_HOLD_NS + SEC;
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.2@192.0.2.2:51820 x=10.77.0.3@192.0.2.3:51820 |");
    w.now += 49 * SEC;
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 |");
    world_free(&w);
}

/* Within the grace, v's record comes back with another address, which
 * its holder states: the change, at once. A key with no grace (its
 * certificate revoked: membership gives it 0) goes at once. */
static void test_grace_changed_or_none(void **state)
{
    struct world w;
    struct cluster_node v, x;

    (void)state;
    two_members(&w, &v, &x);
    word_for(&w, v.public_key)->grace_ns = GRACE;
    struct cluster_node only_x[] = { x };
    apply(&w, only_x, 1);
    struct cluster_node moved = rec("v", KV, "10.77.0.9", "192.0.2.2:51820"), snap[] = { moved, x };
    states(&w, &moved);
    w.now += SEC;
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.9@192.0.2.2:51820 "
                                  "x=10.77.0.3@192.0.2.3:51820 |");
    assert_int_equal(w.n_gone, 0);
    /* v leaves with `down`: its holder states no record (zeros) first;
     * its record gone, it goes at once. */
    memset(word_for(&w, v.public_key)->digest, 0, VOUCH_DIGEST_LEN);
    apply(&w, snap, 2);
    apply(&w, only_x, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 |");
    apply(&w, snap, 2);                   /* (back, as at its next up) */
    states(&w, &moved);
    apply(&w, snap, 2);
    /* x has none: gone at once. */
    struct cluster_node only_v[] = { moved };
    apply(&w, only_v, 1);
    assert_string_equal(view(&w), "f=10.77.0.1 v=10.77.0.9@192.0.2.2:51820 |");
    world_free(&w);
}

/* A record rewritten in place holds v only while v's holder is heard
 * from: a member whose machine is gone does not stay for ever because a
 * record sits at its name. */
static void test_rewritten_slot_of_a_silent_member(void **state)
{
    struct world w;
    struct cluster_node v, x;

    (void)state;
    two_members(&w, &v, &x);
    struct cluster_node taken = rec("v", KY, "10.77.0.9", NULL);
    struct cluster_node snap[] = { taken, x };
    word_for(&w, v.public_key)->alive = false;
    apply(&w, snap, 2);
    assert_string_equal(view(&w), "f=10.77.0.1 x=10.77.0.3@192.0.2.3:51820 | v=10.77.0.9");
    world_free(&w);
}

/* The digest covers every field the others take from a record. */
static void test_digest_fields(void **state)
{
    struct cluster_node a = rec("v", KV, "10.77.0.2", "192.0.2.2:51820"), b;
    uint8_t d0[VOUCH_DIGEST_LEN], d1[VOUCH_DIGEST_LEN];

    (void)state;
    vouch_digest(&a, d0);
    vouch_digest(&a, d1);
    assert_memory_equal(d0, d1, VOUCH_DIGEST_LEN);
    const struct cluster_node changed[] = {
        rec("w", KV, "10.77.0.2", "192.0.2.2:51820"),
        rec("v", KX, "10.77.0.2", "192.0.2.2:51820"),
        rec("v", KV, "10.77.0.3", "192.0.2.2:51820"),
        rec("v", KV, "10.77.0.2", "192.0.2.3:51820"),
        rec("v", KV, "10.77.0.2", "192.0.2.2:51821"),
        rec("v", KV, "10.77.0.2", NULL),
    };
    for (size_t i = 0; i < sizeof(changed) / sizeof(changed[0]); i++) {
        vouch_digest(&changed[i], d1);
        assert_memory_not_equal(d0, d1, VOUCH_DIGEST_LEN);
    }
    b = a;
    b.port = 51999;
    vouch_digest(&b, d1);
    assert_memory_not_equal(d0, d1, VOUCH_DIGEST_LEN);
}

/* What a node states is what the others decode from etcd. */
static void test_self_digest(void **state)
{
    struct cluster c;
    struct cluster_node self = rec("v", KV, "10.77.0.2", "gpu-v.example:51820");
    uint8_t d0[VOUCH_DIGEST_LEN], d1[VOUCH_DIGEST_LEN];

    (void)state;
    assert_int_equal(cluster_parse(HEAD NF, strlen(HEAD NF), &c, NULL), 0);
    assert_int_equal(vouch_self_digest(&self, &c, d0), 0);
    vouch_digest(&self, d1);
    assert_memory_equal(d0, d1, VOUCH_DIGEST_LEN);
    self.address.bytes[0] = 192;          /* outside the network: no record */
    assert_int_equal(vouch_self_digest(&self, &c, d0), -EINVAL);
    cluster_free(&c);
}

/* --- against a real etcd ------------------------------------------------------------ */

#define WAIT_MS 5000
#define PREFIX  "/t/vouch"

static int etcd_setup(void **state)
{
    (void)state;
    return etcd_fixture_start(NULL);
}

static int etcd_teardown(void **state)
{
    (void)state;
    etcd_fixture_stop();
    return 0;
}

static struct etcd *writer(void)
{
    const char *urls[] = { etcd_fixture.url };
    struct etcd_config cfg = { .urls = urls, .n_urls = 1, .timeout_ms = 2000 };
    struct etcd *e = etcd_new(&cfg);

    assert_non_null(e);
    return e;
}

/* The writer puts n's record at PREFIX/members/NAME, whatever is there. */
static void write_record(struct etcd *e, const char *name, const struct cluster_node *n)
{
    char key[128], value[RECORD_VALUE_MAX + 1];
    struct etcd_put put = { key, value, 0 };
    bool done = false;

    snprintf(key, sizeof(key), PREFIX RECORD_MEMBERS "%s", name);
    assert_true(record_encode(n, value, sizeof(value)) > 0);
    /* One put, a rewrite in one revision: a delete and a create would be
     * two, and a snapshot of the delete alone (the watch's header names
     * the newest revision) is a deletion -- deny service, not this. */
    assert_int_equal(etcd_txn(e, NULL, 0, &put, 1, &done), 0);
    assert_true(done);
}

static void no_kv(void *ctx, const struct etcd_kv *kv)
{
    (void)ctx, (void)kv;
}

/* The observer's snapshots until one reflects what etcd holds now, then
 * applied to w. */
static void settle(struct world *w, struct registry *observer, struct etcd *e)
{
    int64_t now_rev = 0, rev = 0;
    struct cluster_node *nodes = NULL;
    size_t n = 0;

    assert_int_equal(etcd_range_prefix(e, "/nothing-here/", no_kv, NULL, &now_rev), 0);
    while (rev < now_rev) {
        free(nodes);
        nodes = NULL;
        assert_true(registry_fixture_take(observer, WAIT_MS, &nodes, &n, &rev));
    }
    apply(w, nodes, n);
    free(nodes);
}

static struct registry *registry_of(struct cluster *c)
{
    char err[256] = "";
    struct registry *r = registry_new(c, err, sizeof(err));

    if (!r)
        fail_msg("registry_new: %s", err);
    return r;
}

/* Two members join through etcd and state their records; a third node
 * watches. The writer (x's stolen credentials) then rewrites v's record
 * (address and endpoint; key), registers a name claiming v's address,
 * deletes v's record and registers v's name with a key of its own: what
 * the watching node counts of v never changes until the delete, and
 * after it v's name and address go to no other key. */
static void test_a_writer_of_the_prefix(void **state)
{
    char text[512], err[256], av[64], ax[64], expect[512];
    struct cluster c;
    struct world w;
    struct registry *rv, *rx, *observer;
    struct etcd *e;

    (void)state;
    ETCD_FIXTURE_NEED();
    snprintf(text, sizeof(text), "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\n"
             "registry-ttl = 10\nregistry = etcd://%s" PREFIX "\n" NF,
             etcd_fixture.url + strlen("http://"));
    assert_int_equal(cluster_parse(text, strlen(text), &c, NULL), 0);
    rv = registry_of(&c);
    rx = registry_of(&c);
    observer = registry_of(&c);
    struct cluster_node v = rec("v", KV, "10.77.0.200", "192.0.2.2:51820");
    struct cluster_node x = rec("x", KX, "10.77.0.200", "192.0.2.3:51820");
    assert_int_equal(registry_join(rv, &v, err, sizeof(err)), 0);
    assert_int_equal(registry_join(rx, &x, err, sizeof(err)), 0);
    cluster_addr_format(&v.address, av, sizeof(av));
    cluster_addr_format(&x.address, ax, sizeof(ax));
    world_init(&w);
    for (int i = 0; i < 2; i++) {
        struct vouch_word *word = word_for(&w, i ? x.public_key : v.public_key);
        word->said = VOUCH_SAID_DIGEST;
        word->alive = true;
        assert_int_equal(vouch_self_digest(i ? &x : &v, &c, word->digest), 0);
    }
    assert_int_equal(registry_start(observer), 0);
    e = writer();
    settle(&w, observer, e);
    char before[512];
    snprintf(before, sizeof(before), "%s", view(&w));
    snprintf(expect, sizeof(expect), "v=%s@192.0.2.2:51820", av);
    assert_non_null(strstr(before, expect));
    assert_non_null(strstr(before, "x="));
    assert_non_null(strstr(before, " |"));
    assert_null(strstr(before, "| "));     /* nothing pending */
    /* v's record with another address and the writer's endpoint; then
     * with the writer's key at v's address. */
    struct cluster_node forged = v;
    assert_int_equal(cluster_addr_parse("10.77.0.66", &forged.address), 0);
    forged.endpoint = x.endpoint;
    write_record(e, "v", &forged);
    settle(&w, observer, e);
    assert_string_equal(view(&w), before);
    forged = v;
    memcpy(forged.public_key, x.public_key, CLUSTER_KEY_LEN);
    write_record(e, "v", &forged);
    settle(&w, observer, e);
    assert_string_equal(view(&w), before);
    /* A new record claiming v's address, its key's holder stating it. */
    struct cluster_node claim = v;
    snprintf(claim.name, sizeof(claim.name), "y");
    memcpy(claim.public_key, rec("y", KY, "10.77.0.9", NULL).public_key, CLUSTER_KEY_LEN);
    states(&w, &claim);
    write_record(e, "y", &claim);
    settle(&w, observer, e);
    assert_string_equal(view(&w), before);
    /* What the writer can do: delete v's record (v is gone), then
     * register v's name at v's address with a key of its own: held. */
    snprintf(text, sizeof(text), PREFIX RECORD_MEMBERS "v");
    assert_int_equal(etcd_delete(e, text), 0);
    settle(&w, observer, e);
    assert_null(strstr(view(&w), expect));
    claim = v;
    memcpy(claim.public_key, rec("v", KW, "10.77.0.9", NULL).public_key, CLUSTER_KEY_LEN);
    states(&w, &claim);
    write_record(e, "v", &claim);
    settle(&w, observer, e);
    /* Counted: the file's f and x, nobody at v's name or address (the
     * claims wait, pending). */
    snprintf(expect, sizeof(expect), "f=10.77.0.1 x=%s@192.0.2.3:51820 | y=%s@192.0.2.2:51820",
             ax, av);
    assert_string_equal(view(&w), expect);
    cluster_free(&c);
    world_free(&w);
    etcd_free(e);
    registry_free(observer);
    registry_free(rx);
    registry_free(rv);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts_on_its_holders_word),
        cmocka_unit_test(test_rewritten_address_and_endpoint),
        cmocka_unit_test(test_rewritten_key_and_name),
        cmocka_unit_test(test_new_records_claiming_a_member),
        cmocka_unit_test(test_delete_then_claim),
        cmocka_unit_test(test_grace_then_back_or_gone),
        cmocka_unit_test(test_grace_changed_or_none),
        cmocka_unit_test(test_grace_past_the_hold),
        cmocka_unit_test(test_rewritten_slot_of_a_silent_member),
        cmocka_unit_test(test_digest_fields),
        cmocka_unit_test(test_self_digest),
        cmocka_unit_test(test_a_writer_of_the_prefix),
    };

    /* One group (tests/run-unit.sh counts a binary's last summary); etcd
     * is started for the last test, which skips without one. */
    return cmocka_run_group_tests(tests, etcd_setup, etcd_teardown);
}
