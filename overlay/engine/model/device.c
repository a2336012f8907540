/* SPDX-License-Identifier: MIT */
/* The model's lookups: peers by overlay address, key and disco id (the
 * map, rebuilt when the peers change), a pool buffer counted when there
 * is none, the kernel's drop count refreshed, a node's listed endpoint.
 * It calls nothing of the engine above it (the core, paths/): both rooms
 * call it (tests/check_layers.sh: no call circle). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "overlay/base/hash.h"
#include "overlay/engine/model/device.h"
#include "overlay/engine/model/routes.h"
#include "overlay/loop/loop.h"

/* Overlay address -> peer, open addressing, built once. */
struct peer_map {
    size_t cap;                   /* a power of two */
    struct peer **slots;          /* by overlay address */
    struct peer **by_id;          /* by disco id: discovery looks peers up so,
                                   * for every relay slot of every peer */
    struct peer **by_key;         /* by public key: each handshake, relayed
                                   * message and member's record names one */
    /* The grants of dev->cluster and their carriers (model/routes.h):
     * built by device_remap with the peers of this map, so that it never
     * names a peer that left; empty in a map made by device_map_new,
     * until the device_remap that follows its install. */
    struct route_table routes;
};

/* Public keys are uniformly random: their first bytes are a hash. */
static size_t key_hash(const uint8_t key[WG_KEY_LEN])
{
    uint64_t h;

    memcpy(&h, key, sizeof(h));
    return (size_t)h;
}

static size_t addr_hash(int family, const uint8_t *addr)
{
    return hash_fnv1a(HASH_FNV_BASIS, addr, family == AF_INET ? 4 : 16);
}

static bool addr_is(const struct cluster_addr *a, int family, const uint8_t *addr)
{
    return a->family == family && !memcmp(a->bytes, addr, family == AF_INET ? 4 : 16);
}

static void map_free(struct peer_map *m)
{
    if (m) {
        routes_free(&m->routes);
        free(m->slots);
        free(m->by_id);
        free(m->by_key);
    }
    free(m);
}

/* The map of peers[0..n). */
static struct peer_map *map_of(struct peer *const *peers, size_t n)
{
    struct peer_map *m = calloc(1, sizeof(*m));
    size_t cap = 16;

    while (cap < 2 * n)
        cap *= 2;
    if (!m || !(m->slots = calloc(cap, sizeof(*m->slots))) ||
        !(m->by_id = calloc(cap, sizeof(*m->by_id))) ||
        !(m->by_key = calloc(cap, sizeof(*m->by_key)))) {
        map_free(m);
        return NULL;
    }
    m->cap = cap;
    for (size_t i = 0; i < n; i++) {
        struct peer *p = peers[i];
        size_t s = addr_hash(p->member.address.family, p->member.address.bytes) & (cap - 1);
        /* A pending record's address is not routed to its key: found by
         * key (its handshake, its word), never by address. */
        while (!p->member.pending && m->slots[s])
            s = (s + 1) & (cap - 1);
        if (!p->member.pending)
            m->slots[s] = p;
        for (s = p->id & (cap - 1); m->by_id[s]; s = (s + 1) & (cap - 1))
            ;
        m->by_id[s] = p;
        for (s = key_hash(p->public_key) & (cap - 1); m->by_key[s]; s = (s + 1) & (cap - 1))
            ;
        m->by_key[s] = p;
    }
    return m;
}

/* The map of dev->peers as they are now, in place of the old one (kept
 * when memory runs out). */
static struct peer *carrier_peer(void *ctx, const struct cluster_node *n)
{
    struct peer_map *m = ctx;

    for (size_t s = key_hash(n->public_key) & (m->cap - 1); m->by_key[s]; s = (s + 1) & (m->cap - 1)) {
        struct peer *p = m->by_key[s];
        if (!memcmp(p->public_key, n->public_key, WG_KEY_LEN))
            return p->member.pending || p->member.probation ? NULL : p;
    }
    return NULL;
}

static int map_build(struct device *dev)
{
    struct peer_map *m = map_of(dev->peers, dev->n_peers);

    if (!m || routes_build(&dev->cluster, dev->self, carrier_peer, m,
                           dev->by_address ? &dev->by_address->routes : NULL, &m->routes)) {
        map_free(m);
        return -ENOMEM;
    }
    map_free(dev->by_address);
    dev->by_address = m;
    return 0;
}

int device_remap(struct device *dev)
{
    return map_build(dev);
}

struct peer_map *device_map_new(struct peer *const *peers, size_t n)
{
    return map_of(peers, n);
}

void device_map_install(struct device *dev, struct peer_map *m)
{
    map_free(dev->by_address);
    dev->by_address = m;
}

void device_map_free(struct peer_map *m)
{
    map_free(m);
}

struct peer *device_peer_by_address(struct device *dev, int family, const uint8_t *addr)
{
    struct peer_map *m = dev->by_address;

    for (size_t s = addr_hash(family, addr) & (m->cap - 1); m->slots[s];
         s = (s + 1) & (m->cap - 1))
        if (addr_is(&m->slots[s]->member.address, family, addr))
            return m->slots[s];
    return NULL;
}

const struct route_table *device_routes(const struct device *dev)
{
    return dev->by_address ? &dev->by_address->routes : NULL;
}

struct route_entry *device_route_at(struct device *dev, int family, const uint8_t *addr)
{
    return dev->by_address ? routes_find(&dev->by_address->routes, family, addr) : NULL;
}

/* Public keys are no secret (the cluster file lists them): a lookup
 * that takes longer for some keys than others tells nobody anything. */
struct peer *device_peer_by_key(struct device *dev, const uint8_t key[WG_KEY_LEN])
{
    struct peer_map *m = dev->by_address;

    if (!m) {                              /* a device not set up by device_init */
        for (size_t i = 0; i < dev->n_peers; i++)
            if (!memcmp(dev->peers[i]->public_key, key, WG_KEY_LEN))
                return dev->peers[i];
        return NULL;
    }
    for (size_t s = key_hash(key) & (m->cap - 1); m->by_key[s]; s = (s + 1) & (m->cap - 1))
        if (!memcmp(m->by_key[s]->public_key, key, WG_KEY_LEN))
            return m->by_key[s];
    return NULL;
}

struct peer *device_peer_by_id(struct device *dev, disco_id id)
{
    struct peer_map *m = dev->by_address;

    if (!id)
        return NULL;
    if (!m) {                              /* a device not set up by device_init */
        for (size_t i = 0; i < dev->n_peers; i++)
            if (dev->peers[i]->id == id)
                return dev->peers[i];
        return NULL;
    }
    for (size_t s = id & (m->cap - 1); m->by_id[s]; s = (s + 1) & (m->cap - 1))
        if (m->by_id[s]->id == id)
            return m->by_id[s];
    return NULL;
}

struct pkt *device_pkt_get(struct device *dev)
{
    struct pkt *pkt = loop_pkt_get(dev->loop);

    if (!pkt)
        rx_drop(dev, RX_DROP_NO_BUFFER, 1);
    return pkt;
}

void device_read_kernel_drops(struct device *dev)
{
    uint64_t n;

    if (dev->sockets_dropped)
        dev->sockets_dropped(dev->route_ctx);
    /* A failed read keeps the last count: a counter never goes back. */
    if (dev->tun_dropped && dev->tun_dropped(dev->route_ctx, &n) == 0 &&
        n > dev->stats.dropped_tun_queue)
        dev->stats.dropped_tun_queue = n;
}

/* The endpoint of a node as the cluster file gives it, when it is an IP
 * literal; hostnames are resolved by the daemon before this (see
 * device_setup.h). */
void device_node_endpoint(union endpoint *e, const struct cluster_node *n)
{
    memset(e, 0, sizeof(*e));
    e->sa.sa_family = AF_UNSPEC;
    if (!n->has_endpoint || !n->endpoint.literal)
        return;
    if (n->endpoint.addr.family == AF_INET) {
        e->in4.sin_family = AF_INET;
        e->in4.sin_port = htons(n->endpoint.port);
        memcpy(&e->in4.sin_addr, n->endpoint.addr.bytes, 4);
    } else {
        e->in6.sin6_family = AF_INET6;
        e->in6.sin6_port = htons(n->endpoint.port);
        memcpy(&e->in6.sin6_addr, n->endpoint.addr.bytes, 16);
    }
}
