/* SPDX-License-Identifier: MIT */
/* Three open-addressing tables (linear probing, at most half full) of
 * node pointers, one per way of finding a node. */
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/cluster_index.h"

enum { BY_NAME, BY_KEY, BY_ADDRESS, BY_N };

struct cluster_index {
    uint8_t hash_key[crypto_shorthash_KEYBYTES];
    size_t mask;                          /* slots - 1 */
    size_t n, capacity;
    const struct cluster_node **slots[BY_N];
};

/* What a node is hashed by, the same bytes for every node that matches:
 * the name in lower case, the key, the address's family and bytes. */
static size_t hashed(int by, const struct cluster_node *n, const char *name,
                     const uint8_t *key, const struct cluster_addr *a, uint8_t *out)
{
    size_t len = 0;

    switch (by) {
    case BY_NAME:
        for (const char *s = n ? n->name : name; *s && len < CLUSTER_NAME_MAX; s++)
            out[len++] = (uint8_t)tolower((unsigned char)*s);
        return len;
    case BY_KEY:
        memcpy(out, n ? n->public_key : key, CLUSTER_KEY_LEN);
        return CLUSTER_KEY_LEN;
    default:
        a = n ? &n->address : a;
        out[0] = (uint8_t)a->family;
        len = a->family == AF_INET ? 4 : 16;
        memcpy(out + 1, a->bytes, len);
        return len + 1;
    }
}

static bool matches(int by, const struct cluster_node *n, const char *name,
                    const uint8_t *key, const struct cluster_addr *a)
{
    switch (by) {
    case BY_NAME:
        return !strcasecmp(n->name, name);
    case BY_KEY:     /* keys are public: a plain comparison */
        return !memcmp(n->public_key, key, CLUSTER_KEY_LEN);
    default:
        return cluster_addr_equal(&n->address, a);
    }
}

static size_t slot_of(const struct cluster_index *ix, const uint8_t *bytes, size_t len)
{
    uint8_t h[crypto_shorthash_BYTES];
    uint64_t v;

    crypto_shorthash(h, bytes, len, ix->hash_key);
    memcpy(&v, h, sizeof(v));
    return (size_t)v & ix->mask;
}

/* The slot holding the match, or the empty slot where it would go. */
static size_t probe(const struct cluster_index *ix, int by, const char *name,
                    const uint8_t *key, const struct cluster_addr *a, const uint8_t *bytes,
                    size_t len)
{
    size_t i = slot_of(ix, bytes, len);

    while (ix->slots[by][i] && !matches(by, ix->slots[by][i], name, key, a))
        i = (i + 1) & ix->mask;
    return i;
}

static const struct cluster_node *find(const struct cluster_index *ix, int by, const char *name,
                                       const uint8_t *key, const struct cluster_addr *a)
{
    uint8_t bytes[CLUSTER_NAME_MAX + CLUSTER_KEY_LEN + 17];
    size_t len;

    if (!ix || !ix->n)
        return NULL;
    len = hashed(by, NULL, name, key, a, bytes);
    return ix->slots[by][probe(ix, by, name, key, a, bytes, len)];
}

struct cluster_index *cluster_index_new(size_t capacity)
{
    struct cluster_index *ix = calloc(1, sizeof(*ix));
    size_t slots = 8;

    if (!ix)
        return NULL;
    while (slots < 2 * capacity)
        slots *= 2;
    ix->mask = slots - 1;
    ix->capacity = capacity;
    randombytes_buf(ix->hash_key, sizeof(ix->hash_key));
    for (int by = 0; by < BY_N; by++)
        if (!(ix->slots[by] = calloc(slots, sizeof(*ix->slots[by])))) {
            cluster_index_free(ix);
            return NULL;
        }
    return ix;
}

struct cluster_index *cluster_index_of(const struct cluster *c)
{
    struct cluster_index *ix = cluster_index_new(c->n_nodes);

    for (size_t i = 0; ix && i < c->n_nodes; i++)
        cluster_index_add(ix, &c->nodes[i]);
    return ix;
}

void cluster_index_free(struct cluster_index *ix)
{
    if (!ix)
        return;
    for (int by = 0; by < BY_N; by++)
        free(ix->slots[by]);
    free(ix);
}

int cluster_index_add(struct cluster_index *ix, const struct cluster_node *n)
{
    uint8_t bytes[CLUSTER_NAME_MAX + CLUSTER_KEY_LEN + 17];

    if (ix->n >= ix->capacity)
        return -ENOSPC;
    for (int by = 0; by < BY_N; by++) {
        size_t len = hashed(by, n, NULL, NULL, NULL, bytes);
        size_t i = probe(ix, by, n->name, n->public_key, &n->address, bytes, len);
        if (!ix->slots[by][i])
            ix->slots[by][i] = n;
    }
    ix->n++;
    return 0;
}

const struct cluster_node *cluster_index_name(const struct cluster_index *ix, const char *name)
{
    return find(ix, BY_NAME, name, NULL, NULL);
}

const struct cluster_node *cluster_index_key(const struct cluster_index *ix,
                                             const uint8_t key[CLUSTER_KEY_LEN])
{
    return find(ix, BY_KEY, NULL, key, NULL);
}

const struct cluster_node *cluster_index_address(const struct cluster_index *ix,
                                                 const struct cluster_addr *a)
{
    return find(ix, BY_ADDRESS, NULL, NULL, a);
}
