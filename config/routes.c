/* SPDX-License-Identifier: MIT */
/* The routes a cluster file grants (config/routes.h): their text form and
 * the whole-file rules. Every check here is over at most
 * CLUSTER_ROUTES_TOTAL_MAX grants, so the square of them stays small; the
 * endpoints are looked at once per grant. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/routes.h"

static unsigned max_prefix(int family)
{
    return family == AF_INET ? 32u : 128u;
}

/* One "ADDR/LEN" word. */
static int route_parse(const char *word, struct cluster_route *r, const char **why)
{
    char buf[INET6_ADDRSTRLEN];
    const char *slash = strchr(word, '/');
    unsigned len;

    if (!slash || (size_t)(slash - word) >= sizeof(buf)) {
        *why = "expected ADDRESS/LENGTH, as 192.168.50.0/24";
        return -EINVAL;
    }
    memcpy(buf, word, (size_t)(slash - word));
    buf[slash - word] = '\0';
    if (cluster_addr_parse(buf, &r->net) < 0) {
        *why = "not an ipv4 or ipv6 address before '/'";
        return -EINVAL;
    }
    /* /0 would be every address: a default route through a member is an
     * exit node, which this is not. */
    if (cluster_uint_parse(slash + 1, max_prefix(r->net.family), &len) < 0 || len == 0) {
        *why = r->net.family == AF_INET ? "length must be 1..32 for ipv4"
                                        : "length must be 1..128 for ipv6";
        return -EINVAL;
    }
    r->prefix = (uint8_t)len;
    struct cluster_addr masked = r->net;
    cluster_addr_mask(&masked, len);
    if (!cluster_addr_equal(&masked, &r->net)) {
        *why = "host bits set (write the network's first address)";
        return -EINVAL;
    }
    return 0;
}

int cluster_routes_parse(const char *value, struct cluster_route *routes, uint8_t *n,
                         const char **why, char *bad, size_t badlen)
{
    char word[CLUSTER_MAX_LINE];
    const char *at = value;
    size_t len;

    *n = 0;
    for (;;) {
        at += strspn(at, ", \t");
        if (!*at)
            break;
        len = strcspn(at, ", \t");
        memcpy(word, at, len < sizeof(word) ? len : sizeof(word) - 1);
        word[len < sizeof(word) ? len : sizeof(word) - 1] = '\0';
        at += len;
        snprintf(bad, badlen, "%s", word);
        if (*n == CLUSTER_ROUTES_MAX) {
            *why = "too many routes for one node (at most 8)";
            return -EINVAL;
        }
        if (route_parse(word, &routes[*n], why) < 0)
            return -EINVAL;
        (*n)++;
    }
    if (!*n) {
        snprintf(bad, badlen, "%s", value);
        *why = "no prefix given";
        return -EINVAL;
    }
    return 0;
}

bool cluster_route_holds(const struct cluster_route *r, const struct cluster_addr *a)
{
    return cluster_addr_in_network(a, &r->net, r->prefix);
}

bool cluster_route_equal(const struct cluster_route *a, const struct cluster_route *b)
{
    return a->prefix == b->prefix && cluster_addr_equal(&a->net, &b->net);
}

bool cluster_route_overlaps(const struct cluster_route *a, const struct cluster_route *b)
{
    if (a->net.family != b->net.family)
        return false;
    return a->prefix <= b->prefix ? cluster_route_holds(a, &b->net)
                                  : cluster_route_holds(b, &a->net);
}

int cluster_route_format(const struct cluster_route *r, char *buf, size_t len)
{
    char a[INET6_ADDRSTRLEN];
    int ret = cluster_addr_format(&r->net, a, sizeof(a));

    if (ret)
        return ret;
    ret = snprintf(buf, len, "%s/%u", a, (unsigned)r->prefix);
    return ret < 0 || (size_t)ret >= len ? -ENOSPC : 0;
}

size_t cluster_routes_check(const struct cluster_node *const *nodes, size_t n,
                            const struct cluster_addr *network, unsigned prefix,
                            cluster_routes_complain complain, void *ctx)
{
    const struct cluster_route net = { .net = *network, .prefix = (uint8_t)prefix };
    char msg[2 * CLUSTER_HOST_MAX], t[CLUSTER_ROUTE_TEXT_MAX], u[CLUSTER_ROUTE_TEXT_MAX];
    size_t faults = 0, total = 0;

    for (size_t i = 0; i < n; i++) {
        for (unsigned k = 0; k < nodes[i]->n_routes; k++) {
            const struct cluster_route *r = &nodes[i]->routes[k];
            if (++total > CLUSTER_ROUTES_TOTAL_MAX) {
                snprintf(msg, sizeof(msg), "more than %u routes in the file",
                         CLUSTER_ROUTES_TOTAL_MAX);
                complain(ctx, i, msg);
                return faults + 1;
            }
            cluster_route_format(r, t, sizeof(t));
            if (network->family && cluster_route_overlaps(r, &net)) {
                snprintf(msg, sizeof(msg), "route %s overlaps the overlay's network "
                         "(its addresses are the members' own)", t);
                complain(ctx, i, msg);
                faults++;
            }
            /* Earlier grants, this node's and the others': each pair once. */
            for (size_t j = 0; j <= i; j++)
                for (unsigned l = 0; l < (j == i ? k : nodes[j]->n_routes); l++) {
                    if (!cluster_route_overlaps(r, &nodes[j]->routes[l]))
                        continue;
                    cluster_route_format(&nodes[j]->routes[l], u, sizeof(u));
                    snprintf(msg, sizeof(msg), "route %s overlaps %s granted to %s "
                             "(one node carries an address)", t, u, nodes[j]->name);
                    complain(ctx, i, msg);
                    faults++;
                }
            for (size_t j = 0; j < n; j++) {
                const struct cluster_endpoint *e = &nodes[j]->endpoint;
                if (!nodes[j]->has_endpoint || !e->literal || !cluster_route_holds(r, &e->addr))
                    continue;
                snprintf(msg, sizeof(msg), "route %s holds node %s's endpoint %s (its "
                         "tunnel would go into itself)", t, nodes[j]->name, e->host);
                complain(ctx, i, msg);
                faults++;
            }
        }
    }
    return faults;
}

/* Whether route r may join the grants held: none of the file's nodes'
 * nor of held[0..n) overlaps it, nor the overlay's network, and it holds
 * no file node's endpoint. What refuses it in *why. */
static bool route_free(const struct cluster *file, const struct cluster_node *held, size_t n,
                       const struct cluster_route *r, const char **why)
{
    const struct cluster_route net = { .net = file->network, .prefix = (uint8_t)file->prefix };

    *why = "the overlay's network";
    if (file->network.family && cluster_route_overlaps(r, &net))
        return false;
    for (size_t i = 0; i < file->n_nodes; i++) {
        const struct cluster_node *f = &file->nodes[i];
        *why = f->name;
        for (unsigned k = 0; k < f->n_routes; k++)
            if (cluster_route_overlaps(r, &f->routes[k]))
                return false;
        if (f->has_endpoint && f->endpoint.literal && cluster_route_holds(r, &f->endpoint.addr))
            return false;
    }
    for (size_t i = 0; i < n; i++)
        for (unsigned k = 0; k < held[i].n_routes; k++)
            if (cluster_route_overlaps(r, &held[i].routes[k])) {
                *why = held[i].name;
                return false;
            }
    return true;
}

size_t cluster_routes_admit(const struct cluster *file, const struct cluster_node *held, size_t n,
                            struct cluster_node *node, size_t *total,
                            cluster_route_refused refused, void *ctx)
{
    uint8_t kept = 0;
    size_t out = 0;

    for (uint8_t k = 0; k < node->n_routes && k < CLUSTER_ROUTES_MAX; k++) {
        const char *why = "the cap on routes";
        if (*total < CLUSTER_ROUTES_TOTAL_MAX && route_free(file, held, n, &node->routes[k], &why)) {
            node->routes[kept++] = node->routes[k];
            (*total)++;
            continue;
        }
        refused(ctx, node, &node->routes[k], why);
        out++;
    }
    node->n_routes = kept;
    return out;
}
