/* SPDX-License-Identifier: MIT */
/* With shards (shard.h): the crypto jobs a shard's handlers made, run
 * after the handlers outside the engine lock, then finished in the order
 * they were made, under it (loop.c: run_deferred).
 *
 * Owned by the shard that made them. The one thing another thread may do
 * is help: an idle shard (loop.c: help_others) claims a job that is ready
 * and runs its crypto (the AEAD over the job's own buffer, with the job's
 * copy of the key: nothing of the engine), then marks it done. So one
 * busy flow, which runs on one shard, still has its seals and opens spread
 * over the cores that have nothing else to do, while the owner alone
 * finishes them, in order: counters, replay windows and the order of
 * ddp0 writes and sends stay as without help.
 *
 * A slot's state says who may touch it:
 *   OWNED    the owner's (free, being filled, or being finished);
 *   READY    submitted: whoever claims it first (the owner or a helper)
 *            runs it; its contents are complete (published on submit);
 *   RUNNING  the claimer's, until it marks it DONE;
 *   DONE     the owner's again, to finish and then free (OWNED).
 * A helper only ever moves READY to RUNNING (an atomic exchange) and
 * RUNNING to DONE: it never sees a slot being filled. */
#ifndef DDPNET_DEFERRED_H
#define DDPNET_DEFERRED_H

#include <stdbool.h>
#include <stdint.h>

#include "overlay/loop/crypto_job.h"

#define DEFERRED_DEPTH CRYPTO_JOB_DEPTH   /* slots, a power of two */

enum deferred_state { DEFERRED_OWNED, DEFERRED_READY, DEFERRED_RUNNING, DEFERRED_DONE };

struct deferred {
    struct crypto_job *job;      /* DEFERRED_DEPTH slots */
    uint8_t *state;              /* each slot's enum deferred_state (atomic) */
    unsigned head, tail;         /* the owner's: [head, tail) in flight
                                  * (tail read by helpers: atomic) */
    unsigned ready;              /* atomic: jobs READY now, a helper's hint */
};

/* 0 or -ENOMEM. */
int deferred_init(struct deferred *d);
/* Wipes the keys of what is left and frees it: after every helper stopped. */
void deferred_free(struct deferred *d);

static inline unsigned deferred_count(const struct deferred *d)
{
    return d->tail - d->head;
}

/* The owner's: the next free slot to fill (the caller makes room first:
 * deferred_count < DEFERRED_DEPTH), then hands it over. */
struct crypto_job *deferred_reserve(struct deferred *d);
void deferred_submit(struct deferred *d);
/* The owner's: runs the jobs in [from, to) nobody claimed, and waits for
 * those a helper claimed (they run now, on a core of their own). */
void deferred_run(struct deferred *d, unsigned from, unsigned to);
/* The owner's: the oldest job if it is done, copied to *out (the slot is
 * then free, its key wiped); false if none is. The caller wipes
 * out->key when it is done with it. */
bool deferred_take(struct deferred *d, struct crypto_job *out);

/* A helper's, on any thread: claims and runs jobs of d that are ready;
 * returns how many it ran. */
unsigned deferred_help(struct deferred *d);

#endif
