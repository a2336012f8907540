/* The packet pool (see pkt.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "overlay/pkt.h"

int pkt_pool_init(struct pkt_pool *pool, unsigned n)
{
    memset(pool, 0, sizeof(*pool));
    pool->all = aligned_alloc(16, sizeof(struct pkt) * n);
    if (!pool->all)
        return -ENOMEM;
    pool->n = n;
    for (unsigned i = 0; i < n; i++) {
        pool->all[i].op = PKT_IDLE;
        pkt_put(pool, &pool->all[i]);
    }
    return 0;
}

void pkt_pool_destroy(struct pkt_pool *pool)
{
    free(pool->all);
    memset(pool, 0, sizeof(*pool));
}

struct pkt *pkt_get(struct pkt_pool *pool)
{
    struct pkt *p = pool->free;

    if (!p)
        return NULL;
    pool->free = p->next;
    pool->n_free--;
    p->next = NULL;
    p->len = 0;
    return p;
}

void pkt_put(struct pkt_pool *pool, struct pkt *p)
{
    p->op = PKT_IDLE;
    p->next = pool->free;
    pool->free = p;
    pool->n_free++;
}
