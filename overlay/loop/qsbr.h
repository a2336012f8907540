/* SPDX-License-Identifier: MIT */
/* Quiescent-state reclamation for the loops of a crew (shard.h): what a
 * writer takes out of a shared read-mostly structure (a table replaced
 * whole, a removed peer) is freed only once every loop has been
 * quiescent since, so that a reader that runs without the engine lock
 * never loses memory under it.
 *
 * A loop is quiescent while it waits on its ring: it holds no pointer
 * into shared state across that wait. Each loop's turn count (turn[k],
 * its shard index) is odd while it runs a turn and even while it waits;
 * a loop not in the crew stays at 0. A grace period began at a snapshot
 * of the counts is over once each loop was even then or has moved since.
 *
 * The writer's side (qsbr_retire, qsbr_reclaim) runs under the engine
 * lock; reclaim is called by the timer loop once a turn, so an object
 * waits two of its turns at least, and while the node is idle up to
 * twice LOOP_MAX_SLEEP_NS (10 s): what is retired meanwhile (removed
 * peers, replaced tables) is what stays held. Nothing ever waits for a
 * grace period: a loop waiting for the engine lock is inside its turn
 * (odd), and a writer that waited for it under the lock would deadlock.
 *
 * What the engine retires through it (dev->qsbr, with shards): the
 * receiver index's entries and the slots a grown table left
 * (engine/model/index.c), keypairs dropped and peers removed
 * (engine/peer.c). No data packet reads them without the lock yet
 * (issue 58; shard.h, "NOT DONE"). */
#ifndef DDPNET_QSBR_H
#define DDPNET_QSBR_H

#include <stdint.h>

#define QSBR_LOOPS_MAX 64u   /* LOOP_CREW_MAX */

/* Embedded in what is retired, as call_rcu's rcu_head: retiring never
 * allocates, so it cannot fail. */
struct qsbr_node {
    struct qsbr_node *next;
    void (*free)(struct qsbr_node *);
};

struct qsbr {
    uint64_t turn[QSBR_LOOPS_MAX];        /* each loop's (atomic; its own to write) */
    /* Under the engine lock: retired since the grace period began
     * (pending), retired before it (waiting), the counts it began at. */
    struct qsbr_node *pending, *waiting;
    uint64_t snap[QSBR_LOOPS_MAX];
    uint64_t grace_periods;               /* begun (its increment is a barrier) */
    uint64_t freed;                       /* how many were freed, for tests */
};

/* Loop k begins a turn (it may read shared state), or ends one before it
 * waits on its ring (it holds nothing); each is called by loop k alone. */
void qsbr_online(struct qsbr *q, unsigned k);
void qsbr_offline(struct qsbr *q, unsigned k);
/* Frees n with fn once every loop has been quiescent since: n is
 * unreachable to readers that begin from now on. Under the engine lock. */
void qsbr_retire(struct qsbr *q, struct qsbr_node *n, void (*fn)(struct qsbr_node *));
/* Frees what waited out its grace period, and begins the next for what
 * is pending. Under the engine lock. Returns how many it freed. */
unsigned qsbr_reclaim(struct qsbr *q);
/* Frees everything retired: every loop stopped. */
void qsbr_free_all(struct qsbr *q);

#endif
