/* SPDX-License-Identifier: MIT */
/* The per-source handshake rate limiter (see ratelimit.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <sodium.h>

#include "overlay/engine/model/ratelimit.h"

#define COST_NS      (WG_NSEC_PER_SEC / RATELIMIT_PER_SEC)
#define BUCKET_NS    (RATELIMIT_BURST * COST_NS)

_Static_assert(BUCKET_NS <= RATELIMIT_IDLE_NS,
               "an idle source must have refilled its bucket before it is forgotten");

int ratelimit_init(struct ratelimit *rl, unsigned max_entries)
{
    memset(rl, 0, sizeof(*rl));
    if (!max_entries)
        return -EINVAL;
    rl->cap = 16;
    while (rl->cap < 2 * (size_t)max_entries)
        rl->cap *= 2;
    rl->slots = calloc(rl->cap, sizeof(*rl->slots));
    rl->spare = calloc(rl->cap, sizeof(*rl->spare));
    if (!rl->slots || !rl->spare) {
        ratelimit_destroy(rl);
        return -ENOMEM;
    }
    rl->max = max_entries;
    randombytes_buf(rl->hash_key, sizeof(rl->hash_key));
    return 0;
}

void ratelimit_destroy(struct ratelimit *rl)
{
    free(rl->slots);
    free(rl->spare);
    sodium_memzero(rl, sizeof(*rl));
}

static size_t slot_of(const struct ratelimit *rl, const uint8_t key[RATELIMIT_KEY_LEN])
{
    uint64_t h;

    crypto_shorthash((uint8_t *)&h, key, RATELIMIT_KEY_LEN, rl->hash_key);
    return (size_t)h & (rl->cap - 1);
}

/* The slot holding key, or the free slot where it would go; NULL when
 * neither is within RATELIMIT_PROBE_MAX slots. */
static struct ratelimit_entry *find(struct ratelimit_entry *slots, const struct ratelimit *rl,
                                    const uint8_t key[RATELIMIT_KEY_LEN])
{
    size_t s = slot_of(rl, key);

    for (unsigned i = 0; i < RATELIMIT_PROBE_MAX; i++, s = (s + 1) & (rl->cap - 1)) {
        struct ratelimit_entry *e = &slots[s];
        if (!e->used || !memcmp(e->key, key, RATELIMIT_KEY_LEN))
            return e;
    }
    return NULL;
}

/* Rebuilds the table without the sources idle for RATELIMIT_IDLE_NS. */
static void collect(struct ratelimit *rl, uint64_t now)
{
    struct ratelimit_entry *old = rl->slots;

    memset(rl->spare, 0, rl->cap * sizeof(*rl->spare));
    rl->n = 0;
    for (size_t i = 0; i < rl->cap; i++) {
        struct ratelimit_entry *e;
        if (!old[i].used || now - old[i].last_ns >= RATELIMIT_IDLE_NS ||
            !(e = find(rl->spare, rl, old[i].key)))
            continue;
        *e = old[i];
        rl->n++;
    }
    rl->slots = rl->spare;
    rl->spare = old;
    rl->last_gc_ns = now;
}

static bool make_key(int family, const uint8_t *addr, uint8_t key[RATELIMIT_KEY_LEN])
{
    memset(key, 0, RATELIMIT_KEY_LEN);
    key[0] = (uint8_t)family;
    if (family == AF_INET)
        memcpy(key + 1, addr, 4);
    else if (family == AF_INET6)
        memcpy(key + 1, addr, 8);
    else
        return false;
    return true;
}

bool ratelimit_allow(struct ratelimit *rl, int family, const uint8_t *addr, uint64_t now_ns)
{
    uint8_t key[RATELIMIT_KEY_LEN];
    struct ratelimit_entry *e;

    if (!make_key(family, addr, key)) {
        rl->stats.limited++;
        return false;
    }
    if (now_ns - rl->last_gc_ns >= RATELIMIT_GC_NS)
        collect(rl, now_ns);
    e = find(rl->slots, rl, key);
    if (e && !e->used) {
        if (rl->n >= rl->max)
            e = NULL;
        else
            *e = (struct ratelimit_entry){ .used = true, .last_ns = now_ns,
                                           .tokens_ns = BUCKET_NS };
        if (e) {
            memcpy(e->key, key, RATELIMIT_KEY_LEN);
            rl->n++;
        }
    }
    if (!e) {
        rl->stats.table_full++;
        return false;
    }
    uint64_t tokens = e->tokens_ns + (now_ns > e->last_ns ? now_ns - e->last_ns : 0);
    e->last_ns = now_ns;
    e->tokens_ns = tokens > BUCKET_NS ? BUCKET_NS : tokens;
    if (e->tokens_ns < COST_NS) {
        rl->stats.limited++;
        return false;
    }
    e->tokens_ns -= COST_NS;
    rl->stats.allowed++;
    return true;
}
