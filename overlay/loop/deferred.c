/* SPDX-License-Identifier: MIT */
/* Deferred crypto jobs, and help with them (see deferred.h). */
#include <errno.h>
#include <sched.h>
#include <stdlib.h>

#include <sodium.h>

#include "overlay/loop/deferred.h"

/* A spinning wait's pause: kinder to the sibling hyperthread. */
static void relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

static unsigned slot_of(unsigned n)
{
    return n % DEFERRED_DEPTH;
}

static uint8_t state_of(const struct deferred *d, unsigned n)
{
    return __atomic_load_n(&d->state[slot_of(n)], __ATOMIC_ACQUIRE);
}

int deferred_init(struct deferred *d)
{
    d->head = d->tail = d->ready = 0;
    d->job = calloc(DEFERRED_DEPTH, sizeof(*d->job));
    d->state = calloc(DEFERRED_DEPTH, sizeof(*d->state));   /* all OWNED */
    if (!d->job || !d->state) {
        deferred_free(d);
        return -ENOMEM;
    }
    return 0;
}

void deferred_free(struct deferred *d)
{
    if (d->job)
        sodium_memzero(d->job, DEFERRED_DEPTH * sizeof(*d->job));
    free(d->job);
    free(d->state);
    d->job = NULL;
    d->state = NULL;
}

struct crypto_job *deferred_reserve(struct deferred *d)
{
    return &d->job[slot_of(d->tail)];
}

void deferred_submit(struct deferred *d)
{
    unsigned n = d->tail;

    /* The job's contents go with the state: a helper that sees READY
     * sees them whole. */
    __atomic_store_n(&d->state[slot_of(n)], DEFERRED_READY, __ATOMIC_RELEASE);
    __atomic_store_n(&d->tail, n + 1, __ATOMIC_RELEASE);
    __atomic_add_fetch(&d->ready, 1, __ATOMIC_RELEASE);
}

/* Runs slot n's job if no one claimed it yet. */
static bool claim_and_run(struct deferred *d, unsigned n)
{
    uint8_t expect = DEFERRED_READY;
    unsigned s = slot_of(n);

    if (!__atomic_compare_exchange_n(&d->state[s], &expect, DEFERRED_RUNNING, false,
                                     __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
        return false;
    __atomic_sub_fetch(&d->ready, 1, __ATOMIC_RELAXED);
    crypto_job_run(&d->job[s]);
    __atomic_store_n(&d->state[s], DEFERRED_DONE, __ATOMIC_RELEASE);
    return true;
}

void deferred_run(struct deferred *d, unsigned from, unsigned to)
{
    for (unsigned n = from; n != to; n++)
        (void)claim_and_run(d, n);
    /* What a helper claimed runs on its core, at most one job's work
     * away (a helper claims one at a time); past a short spin the helper
     * may be waiting for the core we spin on, so give it up. */
    for (unsigned n = from; n != to; n++)
        for (unsigned spins = 0; state_of(d, n) != DEFERRED_DONE; spins++)
            if (spins < 2000)
                relax();
            else
                sched_yield();
}

bool deferred_take(struct deferred *d, struct crypto_job *out)
{
    if (d->head == d->tail || state_of(d, d->head) != DEFERRED_DONE)
        return false;
    unsigned s = slot_of(d->head++);

    *out = d->job[s];
    sodium_memzero(d->job[s].key, sizeof(d->job[s].key));
    __atomic_store_n(&d->state[s], DEFERRED_OWNED, __ATOMIC_RELEASE);
    return true;
}

unsigned deferred_help(struct deferred *d)
{
    unsigned ran = 0, before;

    /* Sweep the slots while the owner has jobs ready. The owner claims
     * them from the oldest, a helper from the newest: they meet in the
     * middle, and the owner seldom waits for a job a helper holds. */
    do {
        unsigned tail = __atomic_load_n(&d->tail, __ATOMIC_ACQUIRE);

        before = ran;
        for (unsigned k = 1; k <= DEFERRED_DEPTH && __atomic_load_n(&d->ready, __ATOMIC_ACQUIRE); k++)
            if (__atomic_load_n(&d->state[slot_of(tail - k)], __ATOMIC_RELAXED) == DEFERRED_READY)
                ran += claim_and_run(d, tail - k);
    } while (ran != before);
    return ran;
}
