/* SPDX-License-Identifier: MIT */
/* Quiescent-state reclamation for the crew's loops (qsbr.h). */
#include "overlay/loop/qsbr.h"

#include <stdbool.h>
#include <stddef.h>

/* The count turns odd by a read-modify-write, a full barrier (lock xchg;
 * swpal): the reader's loads of shared pointers must not pass it, or a
 * writer could see the loop quiescent while it reads what is being
 * retired. (Not a fence: ThreadSanitizer does not model those.) */
void qsbr_online(struct qsbr *q, unsigned k)
{
    uint64_t t = __atomic_load_n(&q->turn[k], __ATOMIC_RELAXED);

    __atomic_exchange_n(&q->turn[k], t | 1u, __ATOMIC_SEQ_CST);
}

/* Release: the turn's reads are done before the count says so. */
void qsbr_offline(struct qsbr *q, unsigned k)
{
    uint64_t t = __atomic_load_n(&q->turn[k], __ATOMIC_RELAXED);

    __atomic_store_n(&q->turn[k], (t | 1u) + 1u, __ATOMIC_RELEASE);
}

void qsbr_retire(struct qsbr *q, struct qsbr_node *n, void (*fn)(struct qsbr_node *))
{
    n->free = fn;
    n->next = q->pending;
    q->pending = n;
}

static bool grace_over(const struct qsbr *q)
{
    for (unsigned k = 0; k < QSBR_LOOPS_MAX; k++)
        if (q->snap[k] & 1u && __atomic_load_n(&q->turn[k], __ATOMIC_ACQUIRE) == q->snap[k])
            return false;
    return true;
}

static unsigned free_list(struct qsbr_node *n)
{
    unsigned freed = 0;

    while (n) {
        struct qsbr_node *next = n->next;
        n->free(n);
        n = next;
        freed++;
    }
    return freed;
}

unsigned qsbr_reclaim(struct qsbr *q)
{
    unsigned freed = 0;

    if (q->waiting) {
        if (!grace_over(q))
            return 0;
        freed = free_list(q->waiting);
        q->waiting = NULL;
        q->freed += freed;
    }
    if (q->pending) {
        q->waiting = q->pending;
        q->pending = NULL;
        /* What was retired is out of readers' reach before the counts
         * are read: a full barrier, paired with qsbr_online's. */
        __atomic_add_fetch(&q->grace_periods, 1, __ATOMIC_SEQ_CST);
        for (unsigned k = 0; k < QSBR_LOOPS_MAX; k++)
            q->snap[k] = __atomic_load_n(&q->turn[k], __ATOMIC_SEQ_CST);
    }
    return freed;
}

void qsbr_free_all(struct qsbr *q)
{
    q->freed += free_list(q->waiting);
    q->freed += free_list(q->pending);
    q->waiting = q->pending = NULL;
}
