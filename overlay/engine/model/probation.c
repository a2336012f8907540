/* SPDX-License-Identifier: MIT */
/* Probationary peers: see probation.h. A linear scan of PROBATION_MAX
 * entries is cheaper than any index at this size. */
#include "overlay/engine/model/probation.h"

#include <errno.h>
#include <string.h>

void probation_init(struct probation *t)
{
    memset(t, 0, sizeof(*t));
}

/* The entry's index, or -1. */
static int find(const struct probation *t, const uint8_t key[PROBATION_KEY_LEN])
{
    for (size_t i = 0; i < PROBATION_MAX; i++)
        if (t->e[i].used && memcmp(t->e[i].key, key, PROBATION_KEY_LEN) == 0)
            return (int)i;
    return -1;
}

int probation_admit(struct probation *t, const uint8_t key[PROBATION_KEY_LEN],
                    const uint8_t source[RATELIMIT_KEY_LEN], uint64_t now)
{
    struct probation_entry *free_slot = NULL;
    unsigned same_source = 0;

    if (find(t, key) >= 0)
        return -EEXIST;
    for (size_t i = 0; i < PROBATION_MAX; i++) {
        struct probation_entry *e = &t->e[i];
        if (!e->used) {
            if (!free_slot)
                free_slot = e;
        } else if (memcmp(e->source, source, RATELIMIT_KEY_LEN) == 0) {
            same_source++;
        }
    }
    if (same_source >= PROBATION_PER_SOURCE) {
        t->refused_source++;
        return -EBUSY;
    }
    if (!free_slot) {
        t->refused_full++;
        return -EBUSY;
    }
    free_slot->used = true;
    memcpy(free_slot->key, key, PROBATION_KEY_LEN);
    memcpy(free_slot->source, source, RATELIMIT_KEY_LEN);
    free_slot->since_ns = now;
    return 0;
}

bool probation_has(const struct probation *t, const uint8_t key[PROBATION_KEY_LEN])
{
    return find(t, key) >= 0;
}

bool probation_end(struct probation *t, const uint8_t key[PROBATION_KEY_LEN])
{
    int i = find(t, key);

    if (i < 0)
        return false;
    memset(&t->e[i], 0, sizeof(t->e[i]));
    return true;
}

bool probation_expire(struct probation *t, uint64_t now, uint8_t key[PROBATION_KEY_LEN])
{
    for (size_t i = 0; i < PROBATION_MAX; i++) {
        struct probation_entry *e = &t->e[i];
        if (e->used && now - e->since_ns >= PROBATION_TIMEOUT_NS) {
            memcpy(key, e->key, PROBATION_KEY_LEN);
            memset(e, 0, sizeof(*e));
            t->expired++;
            return true;
        }
    }
    return false;
}

size_t probation_due(const struct probation *t, uint64_t now,
                     uint8_t keys[PROBATION_MAX][PROBATION_KEY_LEN])
{
    size_t n = 0;

    for (size_t i = 0; i < PROBATION_MAX; i++)
        if (t->e[i].used && now - t->e[i].since_ns >= PROBATION_TIMEOUT_NS)
            memcpy(keys[n++], t->e[i].key, PROBATION_KEY_LEN);
    return n;
}

size_t probation_count(const struct probation *t)
{
    size_t n = 0;

    for (size_t i = 0; i < PROBATION_MAX; i++)
        n += t->e[i].used;
    return n;
}
