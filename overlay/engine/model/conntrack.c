/* SPDX-License-Identifier: MIT */
/* The rules' connection table (conntrack.h): a keyed open-addressed table
 * of CONNTRACK_SLOTS entries, probed CONNTRACK_PROBE slots deep, entries
 * expiring by their protocol's idle time, never evicted while live. */
#include <errno.h>
#include <netinet/in.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "overlay/base/clock.h"
#include "overlay/engine/model/conntrack.h"

_Static_assert((CONNTRACK_SLOTS & (CONNTRACK_SLOTS - 1)) == 0, "a power of two");
_Static_assert(crypto_shorthash_KEYBYTES == 16, "SipHash's key");

int conntrack_init(struct conntrack *t)
{
    memset(t, 0, sizeof(*t));
    t->slot = calloc(CONNTRACK_SLOTS, sizeof(*t->slot));
    if (!t->slot)
        return -ENOMEM;
    randombytes_buf(t->hash_key, sizeof(t->hash_key));
    return 0;
}

void conntrack_free(struct conntrack *t)
{
    free(t->slot);
    t->slot = NULL;
}

static uint32_t first_slot(const struct conntrack *t, const struct conntrack_key *key)
{
    uint64_t h;

    crypto_shorthash((uint8_t *)&h, (const uint8_t *)key, sizeof(*key), t->hash_key);
    return (uint32_t)h & (CONNTRACK_SLOTS - 1);
}

uint64_t conntrack_idle_ns(const struct conntrack_entry *e)
{
    unsigned s;

    if (!e->replied)
        s = CONNTRACK_OPENING_S;
    else if (e->key.proto == IPPROTO_TCP)
        s = e->closing ? CONNTRACK_TCP_CLOSING_S : CONNTRACK_TCP_S;
    else if (e->key.proto == IPPROTO_UDP)
        s = CONNTRACK_UDP_S;
    else
        s = CONNTRACK_ICMP_S;
    return (uint64_t)s * NS_PER_S;
}

static bool live(const struct conntrack_entry *e, uint64_t now)
{
    return e->used && now - e->seen_ns < conntrack_idle_ns(e);
}

struct conntrack_entry *conntrack_find(struct conntrack *t, const struct conntrack_key *key,
                                       uint64_t now)
{
    uint32_t at = first_slot(t, key);

    for (unsigned i = 0; i < CONNTRACK_PROBE; i++) {
        struct conntrack_entry *e = &t->slot[(at + i) & (CONNTRACK_SLOTS - 1)];
        if (!e->used || memcmp(&e->key, key, sizeof(*key)))
            continue;
        if (live(e, now))
            return e;
        conntrack_forget(t, e);
        return NULL;
    }
    return NULL;
}

struct conntrack_entry *conntrack_add(struct conntrack *t, const struct conntrack_key *key,
                                      uint32_t owner, uint64_t now)
{
    uint32_t at = first_slot(t, key);

    for (unsigned i = 0; i < CONNTRACK_PROBE; i++) {
        struct conntrack_entry *e = &t->slot[(at + i) & (CONNTRACK_SLOTS - 1)];
        if (live(e, now))
            continue;
        conntrack_forget(t, e);
        e->key = *key;
        e->owner = owner;
        e->used = 1;
        e->gen = t->gen;
        e->seen_ns = now;
        return e;
    }
    t->full++;
    return NULL;
}

void conntrack_forget(struct conntrack *t, struct conntrack_entry *e)
{
    if (e->used && e->owner && t->released)
        t->released(t->ctx, e->owner);
    memset(e, 0, sizeof(*e));
}

bool conntrack_sweep(struct conntrack *t, uint64_t now)
{
    if (t->swept_ns && now - t->swept_ns < (uint64_t)CONNTRACK_SWEEP_S * NS_PER_S)
        return false;
    t->swept_ns = now;
    for (unsigned i = 0; i < CONNTRACK_SLOTS; i++)
        if (t->slot[i].used && !live(&t->slot[i], now))
            conntrack_forget(t, &t->slot[i]);
    return true;
}

unsigned conntrack_count(const struct conntrack *t, uint64_t now)
{
    unsigned n = 0;

    for (unsigned i = 0; i < CONNTRACK_SLOTS; i++)
        n += live(&t->slot[i], now);
    return n;
}
