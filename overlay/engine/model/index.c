/* SPDX-License-Identifier: MIT */
/* Receiver-index table (see index.h): linear probing over slots that
 * point to entries, deletion by moving later entries of the same run
 * back, so no tombstones accumulate. Slots are stored with release and
 * loaded with acquire (readers without the lock); what is taken out is
 * retired, never freed under a reader. */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>

#include <sodium.h>

#include "overlay/engine/model/index.h"

static struct index_slots *slots_new(size_t max_entries)
{
    size_t cap = 16;
    struct index_slots *s;

    while (cap < 2 * max_entries)   /* at most half full: short probes */
        cap *= 2;
    s = calloc(1, sizeof(*s) + cap * sizeof(s->slot[0]));
    if (s)
        s->cap = cap;
    return s;
}

static void slots_free(struct qsbr_node *n)
{
    free((char *)n - offsetof(struct index_slots, retired));
}

static void entry_free(struct qsbr_node *n)
{
    free((char *)n - offsetof(struct index_entry, retired));
}

/* Frees n once no reader can hold it (index.h: qsbr), at once alone. */
static void retire(struct index_table *t, struct qsbr_node *n, void (*fn)(struct qsbr_node *))
{
    if (t->qsbr)
        qsbr_retire(t->qsbr, n, fn);
    else
        fn(n);
}

static struct index_entry *load(struct index_slots *s, size_t i)
{
    return __atomic_load_n(&s->slot[i], __ATOMIC_ACQUIRE);
}

/* Release: a reader that finds e finds it whole. */
static void store(struct index_slots *s, size_t i, struct index_entry *e)
{
    __atomic_store_n(&s->slot[i], e, __ATOMIC_RELEASE);
}

int index_table_init(struct index_table *t, size_t max_entries)
{
    struct index_slots *s = slots_new(max_entries);

    if (!s)
        return -ENOMEM;
    t->slots = s;
    t->cap = s->cap;
    t->used = 0;
    t->qsbr = NULL;
    return 0;
}

void index_table_destroy(struct index_table *t)
{
    struct index_slots *s = t->slots;

    if (!s)
        return;
    for (size_t i = 0; i < s->cap; i++)
        free(s->slot[i]);
    free(s);
    t->slots = NULL;
    t->cap = t->used = 0;
}

static size_t slot_of(size_t cap, uint32_t index)
{
    /* Indices are random: their low bits spread well enough. */
    return index & (cap - 1);
}

/* The entry for index in s and its slot (*at), or NULL. Each slot is
 * loaded once: the entry compared is the one returned (a second load
 * could find another that moved in meanwhile). */
static struct index_entry *find_slot(struct index_slots *s, uint32_t index, size_t *at)
{
    for (size_t i = slot_of(s->cap, index);; i = (i + 1) & (s->cap - 1)) {
        struct index_entry *e = load(s, i);
        if (!e || e->index == index) {
            *at = i;
            return e;
        }
    }
}

struct index_entry *index_find(struct index_table *t, uint32_t index)
{
    struct index_slots *s = __atomic_load_n(&t->slots, __ATOMIC_ACQUIRE);
    size_t at;

    return index ? find_slot(s, index, &at) : NULL;
}

void index_set_keypair(struct index_entry *e, struct noise_keypair *kp)
{
    __atomic_store_n(&e->keypair, kp, __ATOMIC_RELEASE);
}

struct noise_keypair *index_keypair(const struct index_entry *e)
{
    return __atomic_load_n(&e->keypair, __ATOMIC_ACQUIRE);
}

uint32_t index_add(struct index_table *t, struct peer *peer, struct noise_keypair *kp)
{
    struct index_slots *s = t->slots;
    struct index_entry *e;
    uint32_t index;
    size_t i;

    if (2 * (t->used + 1) > s->cap || !(e = malloc(sizeof(*e))))
        return 0;
    do
        index = randombytes_random();
    while (index == 0 || find_slot(s, index, &i));
    *e = (struct index_entry){ .index = index, .peer = peer, .keypair = kp };
    i = slot_of(s->cap, index);
    while (s->slot[i])
        i = (i + 1) & (s->cap - 1);
    store(s, i, e);
    t->used++;
    return index;
}

/* The entry leaves its slot; each later entry of the run that could no
 * longer be found past the hole moves back into it (copied first, its
 * old slot then the hole), so that, until the last hole empties at the
 * end, a reader probing a run crosses no empty slot that was not there. */
void index_remove(struct index_table *t, uint32_t index)
{
    struct index_slots *s = t->slots;
    size_t hole, i;
    struct index_entry *gone = find_slot(s, index, &hole), *e;

    if (!gone)
        return;
    t->used--;
    for (i = (hole + 1) & (s->cap - 1); (e = s->slot[i]); i = (i + 1) & (s->cap - 1)) {
        size_t home = slot_of(s->cap, e->index);
        bool between = hole <= i ? (home > hole && home <= i) : (home > hole || home <= i);
        if (between)
            continue;
        store(s, hole, e);
        hole = i;
    }
    store(s, hole, NULL);
    retire(t, &gone->retired, entry_free);
}

int index_table_reserve(struct index_table *t, size_t max_entries)
{
    struct index_slots *old = t->slots, *bigger;

    if (2 * max_entries <= old->cap)
        return 0;
    if (!(bigger = slots_new(max_entries)))
        return -ENOMEM;
    for (size_t i = 0; i < old->cap; i++) {
        struct index_entry *e = old->slot[i];
        if (!e)
            continue;
        size_t k = slot_of(bigger->cap, e->index);
        while (bigger->slot[k])
            k = (k + 1) & (bigger->cap - 1);
        bigger->slot[k] = e;
    }
    __atomic_store_n(&t->slots, bigger, __ATOMIC_RELEASE);
    t->cap = bigger->cap;
    retire(t, &old->retired, slots_free);
    return 0;
}
