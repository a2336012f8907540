/* SPDX-License-Identifier: MIT */
/* What makes a registry record count (vouch.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sys/socket.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cluster_index.h"
#include "crypto/blake2s.h"
#include "overlay/registry/record.h"
#include "overlay/registry/vouch.h"

/* Keeps the digest of one version of these fields from ever equalling
 * another's, and from any other BLAKE2s of ours. */
#define DIGEST_LABEL "ddpnet registry record 1"

static void put_bytes(struct blake2s_state *st, const void *p, size_t len)
{
    blake2s_update(st, p, len);
}

void vouch_digest(const struct cluster_node *n, uint8_t out[VOUCH_DIGEST_LEN])
{
    struct blake2s_state st;
    uint8_t port[2] = { (uint8_t)(n->port >> 8), (uint8_t)n->port };
    uint8_t ep_port[2] = { (uint8_t)(n->endpoint.port >> 8), (uint8_t)n->endpoint.port };
    uint8_t family = (uint8_t)(n->address.family == AF_INET6 ? 6 : 4), has_ep = n->has_endpoint;

    blake2s_init(&st, VOUCH_DIGEST_LEN, (const uint8_t *)DIGEST_LABEL,
                     sizeof(DIGEST_LABEL) - 1);
    /* Each text with its NUL: no two field lists give the same bytes. */
    put_bytes(&st, n->name, strlen(n->name) + 1);
    put_bytes(&st, n->public_key, CLUSTER_KEY_LEN);
    put_bytes(&st, &family, 1);
    put_bytes(&st, n->address.bytes, family == 6 ? 16 : 4);
    put_bytes(&st, &has_ep, 1);
    if (has_ep) {
        put_bytes(&st, n->endpoint.host, strlen(n->endpoint.host) + 1);
        put_bytes(&st, ep_port, 2);
    }
    put_bytes(&st, port, 2);
    blake2s_final(&st, out);
}

int vouch_self_digest(const struct cluster_node *self, const struct cluster *c,
                      uint8_t out[VOUCH_DIGEST_LEN])
{
    char value[RECORD_VALUE_MAX + 1];
    struct cluster_node n;
    const char *why;
    int len = record_encode(self, value, sizeof(value)), ret;

    if (len < 0)
        return len;
    if ((ret = record_decode(value, (size_t)len, c, &n, &why)))
        return ret;
    vouch_digest(&n, out);
    return 0;
}

/* Whether r is its key holder's word: the digest it stated, or a daemon
 * that states none. */
static bool vouched(const struct cluster_node *r, const struct vouch_word *w)
{
    uint8_t d[VOUCH_DIGEST_LEN];

    if (w->said == VOUCH_SAID_OLDER)
        return true;
    if (w->said != VOUCH_SAID_DIGEST)
        return false;
    vouch_digest(r, d);
    return !sodium_memcmp(d, w->digest, VOUCH_DIGEST_LEN);
}

/* A node that left, as a node the index can hold. */
static struct cluster_node gone_node(const struct vouch_gone *g)
{
    struct cluster_node n = { .address = g->address };

    memcpy(n.name, g->name, sizeof(n.name));
    memcpy(n.public_key, g->key, CLUSTER_KEY_LEN);
    return n;
}

/* Whether a node of another key than r's left within the hold with r's
 * name or address (held: the index of those that left). */
static bool held_from(const struct cluster_node *r, const struct cluster_index *held)
{
    const struct cluster_node *by_name = cluster_index_name(held, r->name);
    const struct cluster_node *by_addr = cluster_index_address(held, &r->address);

    return (by_name && memcmp(by_name->public_key, r->public_key, CLUSTER_KEY_LEN)) ||
           (by_addr && memcmp(by_addr->public_key, r->public_key, CLUSTER_KEY_LEN));
}

/* A counted node whose record went: its entry in gone, made now when it
 * has none (a node counted again is dropped from gone at the end of each
 * sort, so an entry of its key is this absence's; was_ix indexes
 * was[i] = gone[i] as they were before this sort); NULL when gone is
 * full. */
static struct vouch_gone *gone_add(struct vouch_gone *gone, size_t *n_gone, size_t cap,
                                   const struct cluster_index *was_ix,
                                   const struct cluster_node *was, const struct cluster_node *c,
                                   uint64_t now)
{
    const struct cluster_node *f = cluster_index_key(was_ix, c->public_key);
    struct vouch_gone *g;

    if (f)
        return &gone[f - was];
    if (*n_gone == cap)
        return NULL;
    g = &gone[(*n_gone)++];
    snprintf(g->name, sizeof(g->name), "%s", c->name);
    memcpy(g->key, c->public_key, CLUSTER_KEY_LEN);
    g->address = c->address;
    g->left_ns = now;
    g->grace = false;
    return g;
}

struct sort {
    const struct cluster_node *records;
    size_t n;
    struct cluster_index *by_record;      /* the records, first of each key and name */
    struct cluster_index *out_ix;         /* keys already in out */
    bool *used;                           /* records settled by a counted node */
    const struct cluster_index *was_ix;   /* gone's keys as the sort began */
    const struct cluster_node *was;
    vouch_word_fn word;
    void *ctx;
    struct vouch_out *out;
};

static void emit(struct sort *s, const struct cluster_node *node)
{
    s->out->nodes[s->out->n] = *node;
    cluster_index_add(s->out_ix, &s->out->nodes[s->out->n++]);
}

static size_t record_at(const struct sort *s, const struct cluster_node *r)
{
    return (size_t)(r - s->records);
}

/* A node counted now: its record as its holder states it now, else as it
 * was while a record holds its key or (its holder heard) its name; else
 * it is gone. */
static void keep_counted(struct sort *s, const struct cluster_node *c, struct vouch_gone *gone,
                         size_t *n_gone, size_t cap_gone, uint64_t now)
{
    const struct cluster_node *by_key = cluster_index_key(s->by_record, c->public_key);
    const struct cluster_node *by_name = cluster_index_name(s->by_record, c->name);
    struct vouch_word w = { 0 };

    if (cluster_index_key(s->out_ix, c->public_key))
        return;
    s->word(s->ctx, c->public_key, &w);
    /* Its record, as its holder says it now: that (it may have changed;
     * of two records with its key, the earlier is looked at; one that
     * holds another counted node's name settles that node, not this). */
    if (by_key && !s->used[record_at(s, by_key)] && vouched(by_key, &w)) {
        s->used[record_at(s, by_key)] = true;
        emit(s, by_key);
        return;
    }
    if (by_key || (by_name && w.alive)) {
        if (by_key)
            s->used[record_at(s, by_key)] = true;
        if (by_name)
            s->used[record_at(s, by_name)] = true;
        emit(s, c);
        return;
    }
    /* No record of its key or name: still counted, as it is, within its
     * grace from when its record went. */
    struct vouch_gone *g = gone_add(gone, n_gone, cap_gone, s->was_ix, s->was, c, now);
    /* None where its holder stated another record than the one counted
     * (a node that leaves states none: discovery_say_leaving). */
    if (g && now - g->left_ns < w.grace_ns && (w.said != VOUCH_SAID_DIGEST || vouched(c, &w))) {
        g->grace = true;
        emit(s, c);
    }
}

/* A record no counted node settled: counted when its holder vouched for
 * it and no node that left holds its name or address; else pending. */
static void take_new(struct sort *s, size_t i, bool *pending, const struct cluster_index *held)
{
    const struct cluster_node *r = &s->records[i];
    struct vouch_word w = { 0 };

    pending[i] = false;
    if (s->used[i] || cluster_index_key(s->out_ix, r->public_key))
        return;
    s->word(s->ctx, r->public_key, &w);
    if (vouched(r, &w) && !held_from(r, held))
        emit(s, r);
    else
        pending[i] = true;
}

/* Drops from gone what is past its hold (but while its grace runs: the
 * entry dates the grace), or (keep == NULL aside) whose key counts again
 * through a record (not kept by its grace). */
static void gone_drop(struct vouch_gone *gone, size_t *n_gone, const struct cluster_index *keep,
                      uint64_t now)
{
    for (size_t i = 0; i < *n_gone; i++)
        if ((now - gone[i].left_ns >= VOUCH_HOLD_NS && !gone[i].grace) ||
            (keep && !gone[i].grace && cluster_index_key(keep, gone[i].key)))
            gone[i--] = gone[--*n_gone];
}

int vouch_sort(const struct cluster_node *records, size_t n, const struct cluster_node *counted,
               size_t m, struct vouch_gone *gone, size_t *n_gone, size_t cap_gone,
               vouch_word_fn word, void *ctx, uint64_t now, struct vouch_out *out)
{
    struct sort s = { .records = records, .n = n, .word = word, .ctx = ctx, .out = out };
    bool *pending = calloc(n + 1, sizeof(*pending));
    struct cluster_node *left = NULL, *was = NULL;
    struct cluster_index *held = NULL, *was_ix = NULL;
    int ret = -ENOMEM;

    memset(out, 0, sizeof(*out));
    s.used = calloc(n + 1, sizeof(*s.used));
    s.by_record = cluster_index_new(n + 1);
    s.out_ix = cluster_index_new(n + m + 1);
    out->nodes = calloc(n + m + 1, sizeof(*out->nodes));
    if (!pending || !s.used || !s.by_record || !s.out_ix || !out->nodes)
        goto out;
    for (size_t i = 0; i < n; i++)
        cluster_index_add(s.by_record, &records[i]);
    gone_drop(gone, n_gone, NULL, now);
    if (!(was = calloc(*n_gone + 1, sizeof(*was))) || !(was_ix = cluster_index_new(*n_gone + 1)))
        goto out;
    for (size_t i = 0; i < *n_gone; i++) {
        gone[i].grace = false;            /* set again by keep_counted while it runs */
        was[i] = gone_node(&gone[i]);
        cluster_index_add(was_ix, &was[i]);
    }
    s.was = was;
    s.was_ix = was_ix;
    for (size_t i = 0; i < m; i++)
        keep_counted(&s, &counted[i], gone, n_gone, cap_gone, now);
    /* Those that left, this time or within the hold, by name and address. */
    if (!(left = calloc(*n_gone + 1, sizeof(*left))) || !(held = cluster_index_new(*n_gone + 1)))
        goto out;
    for (size_t i = 0; i < *n_gone; i++) {
        left[i] = gone_node(&gone[i]);
        cluster_index_add(held, &left[i]);
    }
    for (size_t i = 0; i < n; i++)
        take_new(&s, i, pending, held);
    gone_drop(gone, n_gone, s.out_ix, now);
    out->n_counted = out->n;
    /* Pending: the first record of each key not counted. */
    for (size_t i = 0; i < n; i++)
        if (pending[i] && !cluster_index_key(s.out_ix, records[i].public_key))
            emit(&s, &records[i]);
    ret = 0;
out:
    if (ret) {
        free(out->nodes);
        memset(out, 0, sizeof(*out));
    }
    free(pending);
    free(left);
    free(was);
    cluster_index_free(held);
    cluster_index_free(was_ix);
    free(s.used);
    cluster_index_free(s.by_record);
    cluster_index_free(s.out_ix);
    return ret;
}
