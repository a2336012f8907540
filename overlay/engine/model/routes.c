/* SPDX-License-Identifier: MIT */
/* The device's route table (model/routes.h): built from the model's
 * grants, looked up by scan. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/routes.h"
#include "overlay/engine/model/routes.h"

static uint64_t carried_over(const struct route_table *old, const struct route_entry *e)
{
    for (size_t i = 0; old && i < old->n; i++)
        if (old->e[i].via == e->via && cluster_route_equal(&old->e[i].route, &e->route))
            return old->e[i].packets;
    return 0;
}

int routes_build(const struct cluster *c, const struct cluster_node *self,
                 routes_peer_of peer_of, void *ctx, const struct route_table *old,
                 struct route_table *out)
{
    struct route_table t = { 0 };
    size_t cap = 0;

    for (size_t i = 0; i < c->n_nodes; i++)
        cap += c->nodes[i].n_routes;
    if (cap && !(t.e = calloc(cap, sizeof(*t.e))))
        return -ENOMEM;
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *n = &c->nodes[i];
        struct peer *via = NULL;
        if (!n->n_routes || (n != self && !(via = peer_of(ctx, n))))
            continue;
        for (unsigned k = 0; k < n->n_routes; k++) {
            struct route_entry *e = &t.e[t.n++];
            e->route = n->routes[k];
            e->via = via;
            e->packets = carried_over(old, e);
        }
    }
    *out = t;
    return 0;
}

void routes_free(struct route_table *t)
{
    free(t->e);
    memset(t, 0, sizeof(*t));
}

struct route_entry *routes_find(const struct route_table *t, int family, const uint8_t *addr)
{
    struct cluster_addr a = { .family = family };

    memcpy(a.bytes, addr, family == AF_INET ? 4 : 16);
    for (size_t i = 0; i < t->n; i++)
        if (cluster_route_holds(&t->e[i].route, &a))
            return &t->e[i];
    return NULL;
}
