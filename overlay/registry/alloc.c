/* The allocation rule (alloc.h). Addresses are compared as numbers: the
 * host part of an IPv4 network fits 32 bits; of an IPv6 network only the
 * last 64 bits are handed out (a /64 or longer has room for more nodes
 * than etcd will ever hold). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "overlay/registry/alloc.h"

#define V6_HOST_BYTES 8u

static unsigned addr_len(int family)
{
    return family == AF_INET ? 4u : 16u;
}

static int cmp_addr(const void *a, const void *b)
{
    const struct cluster_addr *x = a, *y = b;

    if (x->family != y->family)
        return x->family < y->family ? -1 : 1;
    return memcmp(x->bytes, y->bytes, addr_len(x->family));
}

/* a + 1 in place; false when it wrapped. */
static bool addr_next(struct cluster_addr *a)
{
    for (int i = (int)addr_len(a->family) - 1; i >= 0; i--)
        if (++a->bytes[i] != 0)
            return true;
    return false;
}

int alloc_free_nth(const struct cluster_addr *net, unsigned prefix, struct cluster_addr *taken,
                   size_t n, unsigned nth, struct cluster_addr *out)
{
    struct cluster_addr cand = *net, last = { 0 };
    size_t at = 0;
    unsigned seen = 0;

    if (n > 1)
        qsort(taken, n, sizeof(*taken), cmp_addr);
    /* Each step passes one taken address or one free one: this runs at
     * most n + nth + 2 times. */
    while (addr_next(&cand) && cluster_addr_in_network(&cand, net, prefix)) {
        if (cluster_addr_is_broadcast(&cand, prefix))
            break;
        if (net->family == AF_INET6 &&
            memcmp(cand.bytes, net->bytes, 16 - V6_HOST_BYTES) != 0)
            break;
        while (at < n && cmp_addr(&taken[at], &cand) < 0)
            at++;
        if (at < n && cmp_addr(&taken[at], &cand) == 0)
            continue;
        last = cand;
        if (seen++ == nth)
            break;
    }
    if (!seen)
        return -ENOSPC;
    *out = last;            /* the nth free one, or the last when fewer are free */
    return 0;
}

int alloc_lowest_free(const struct cluster_addr *net, unsigned prefix,
                      struct cluster_addr *taken, size_t n, struct cluster_addr *out)
{
    return alloc_free_nth(net, prefix, taken, n, 0, out);
}
