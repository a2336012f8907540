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

/* The host part of a (its last 32 bits, or 64 for IPv6) and the count
 * of host numbers the network hands out, 1..hosts (0: the network's own;
 * for IPv4, hosts + 1: broadcast). */
static uint64_t host_of(const struct cluster_addr *a)
{
    unsigned len = addr_len(a->family), from = a->family == AF_INET ? 0 : 16 - V6_HOST_BYTES;
    uint64_t h = 0;

    for (unsigned i = from; i < len; i++)
        h = h << 8 | a->bytes[i];
    return h;
}

static uint64_t host_count(int family, unsigned prefix)
{
    unsigned bits = family == AF_INET ? 32 - prefix
                                      : (128 - prefix < 64 ? 128 - prefix : 64);

    if (family == AF_INET)
        return bits < 2 ? 0 : (1ull << bits) - 2;
    return bits == 64 ? UINT64_MAX : (1ull << bits) - 1;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

    return x < y ? -1 : x > y;
}

int alloc_pick(const struct cluster_addr *net, unsigned prefix, const struct cluster_addr *taken,
               size_t n, const uint8_t key[CLUSTER_KEY_LEN], unsigned attempt, uint64_t rnd,
               struct cluster_addr *out)
{
    uint64_t hosts = host_count(net->family, prefix), base = host_of(net), *used, h = 0;
    size_t m = 0;

    if (!hosts)
        return -ENOSPC;
    /* The taken host numbers inside the range handed out, sorted, once
     * each. */
    if (!(used = malloc((n + 1) * sizeof(*used))))
        return -ENOMEM;
    for (size_t i = 0; i < n; i++) {
        const struct cluster_addr *a = &taken[i];
        uint64_t t;
        if (a->family != net->family || !cluster_addr_in_network(a, net, prefix) ||
            (net->family == AF_INET6 && memcmp(a->bytes, net->bytes, 16 - V6_HOST_BYTES)))
            continue;
        t = host_of(a) - base;
        if (t >= 1 && t <= hosts)
            used[m++] = t;
    }
    qsort(used, m, sizeof(*used), cmp_u64);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (!u || used[u - 1] != used[i])
            used[u++] = used[i];
    if (u >= hosts) {
        free(used);
        return -ENOSPC;
    }
    if (attempt == 0) {
        uint64_t k;
        memcpy(&k, key, sizeof(k));
        h = k % hosts + 1;
        if (bsearch(&h, used, u, sizeof(*used), cmp_u64))
            h = 0;
    }
    if (!h) {
        /* The (rnd mod free)th free number: past each taken one at or
         * below it, one further. */
        h = rnd % (hosts - u) + 1;
        for (size_t i = 0; i < u && used[i] <= h; i++)
            h++;
    }
    free(used);
    *out = *net;
    h += base;
    for (int i = (int)addr_len(net->family) - 1, k = 0; k < 8 && i >= 0; i--, k++, h >>= 8)
        out->bytes[i] = (uint8_t)h;
    return 0;
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
