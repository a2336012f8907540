/* SPDX-License-Identifier: MIT */
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

static int cmp_key(const void *a, const void *b)
{
    return memcmp(a, b, CLUSTER_KEY_LEN);
}

int alloc_reclaim(const struct alloc_held *held, size_t n, uint8_t (*live)[CLUSTER_KEY_LEN],
                  size_t m, unsigned nth)
{
    /* The nth oldest stale record: nth + 1 passes over held, each taking
     * the oldest stale one newer than the last taken (n is at most the
     * registry's cap; nth is small). */
    int64_t after = INT64_MIN;
    size_t after_i = 0;
    int found = -ENOENT;

    if (m > 1)
        qsort(live, m, sizeof(*live), cmp_key);
    for (unsigned k = 0; k <= nth; k++) {
        int best = -1;
        for (size_t i = 0; i < n; i++) {
            const struct alloc_held *h = &held[i];
            bool newer = h->mod_revision > after ||
                         (h->mod_revision == after && found >= 0 && i > after_i);
            if (!newer || (h->key_ok && m && bsearch(h->key, live, m, sizeof(*live), cmp_key)))
                continue;
            if (best < 0 || h->mod_revision < held[best].mod_revision)
                best = (int)i;
        }
        if (best < 0)
            break;
        found = best;
        after = held[best].mod_revision;
        after_i = (size_t)best;
    }
    return found;
}
