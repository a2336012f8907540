/* SPDX-License-Identifier: MIT */
/* Receiver-index table (see index.h): linear probing, deletion by moving
 * later entries of the same run back, so no tombstones accumulate. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

#include <sodium.h>

#include "overlay/engine/model/index.h"

int index_table_init(struct index_table *t, size_t max_entries)
{
    size_t cap = 16;

    while (cap < 2 * max_entries)   /* at most half full: short probes */
        cap *= 2;
    t->slots = calloc(cap, sizeof(*t->slots));
    if (!t->slots)
        return -ENOMEM;
    t->cap = cap;
    t->used = 0;
    return 0;
}

void index_table_destroy(struct index_table *t)
{
    free(t->slots);
    t->slots = NULL;
    t->cap = t->used = 0;
}

static size_t slot_of(const struct index_table *t, uint32_t index)
{
    /* Indices are random: their low bits spread well enough. */
    return index & (t->cap - 1);
}

struct index_entry *index_find(struct index_table *t, uint32_t index)
{
    if (index == 0)
        return NULL;
    for (size_t i = slot_of(t, index);; i = (i + 1) & (t->cap - 1)) {
        if (t->slots[i].index == index)
            return &t->slots[i];
        if (t->slots[i].index == 0)
            return NULL;
    }
}

uint32_t index_add(struct index_table *t, struct peer *peer, struct noise_keypair *kp)
{
    uint32_t index;

    if (2 * (t->used + 1) > t->cap)
        return 0;
    do
        index = randombytes_random();
    while (index == 0 || index_find(t, index));
    size_t i = slot_of(t, index);
    while (t->slots[i].index != 0)
        i = (i + 1) & (t->cap - 1);
    t->slots[i] = (struct index_entry){ index, peer, kp };
    t->used++;
    return index;
}

void index_remove(struct index_table *t, uint32_t index)
{
    struct index_entry *e = index_find(t, index);
    size_t hole, i;

    if (!e)
        return;
    hole = (size_t)(e - t->slots);
    t->slots[hole].index = 0;
    t->used--;
    /* Move back every later entry of the run that may no longer be found
     * past the hole. */
    for (i = (hole + 1) & (t->cap - 1); t->slots[i].index; i = (i + 1) & (t->cap - 1)) {
        size_t home = slot_of(t, t->slots[i].index);
        bool between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (between)
            continue;
        t->slots[hole] = t->slots[i];
        t->slots[i].index = 0;
        hole = i;
    }
}

int index_table_reserve(struct index_table *t, size_t max_entries)
{
    struct index_table bigger;
    int ret;

    if (2 * max_entries <= t->cap)
        return 0;
    if ((ret = index_table_init(&bigger, max_entries)))
        return ret;
    for (size_t i = 0; i < t->cap; i++) {
        const struct index_entry *e = &t->slots[i];
        if (!e->index)
            continue;
        size_t s = slot_of(&bigger, e->index);
        while (bigger.slots[s].index)
            s = (s + 1) & (bigger.cap - 1);
        bigger.slots[s] = *e;
        bigger.used++;
    }
    index_table_destroy(t);
    *t = bigger;
    return 0;
}
