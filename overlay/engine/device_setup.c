/* SPDX-License-Identifier: MIT */
/* The device made and unmade (device_setup.h): its tables, one peer per
 * other node of the model, the address map, and paths and discovery's
 * state, handed the core's operations (engine_core_ops). The core's: it
 * calls down into the model (model/) and paths/, never the other way. */
#include <errno.h>
#include <stdlib.h>

#include <sodium.h>

#include "overlay/engine/device_setup.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/filter.h"

int device_init(struct device *dev, const uint8_t private_key[WG_KEY_LEN], uint64_t now)
{
    int ret = -ENOMEM;

    dev->local = noise_local_new(private_key);
    dev->peers = calloc(dev->cluster.n_nodes, sizeof(*dev->peers));
    if (!dev->local || !dev->peers)
        goto fail;
    cookie_checker_init(&dev->checker, dev->local->public_key, now);
    /* Each peer: one handshake and three keypairs at most; the strangers
     * on probation are peers too. */
    ret = index_table_init(&dev->indices, DEVICE_INDICES(dev->cluster.n_nodes));
    if (!ret && !(ret = conntrack_init(&dev->conntrack))) {
        dev->conntrack.released = filter_released;   /* the per-peer bound's count */
        dev->conntrack.ctx = dev;
    }
    if (!ret)
        ret = stage_init(&dev->stage, STAGE_TOTAL_BYTES, STAGE_PEER_BYTES);
    if (!ret)
        ret = ratelimit_init(&dev->ratelimit, RATELIMIT_TABLE_MAX);
    if (ret)
        goto fail;
    probation_init(&dev->probation);   /* the tables it holds, each set here */
    for (size_t i = 0; i < dev->cluster.n_nodes; i++) {
        const struct cluster_node *n = &dev->cluster.nodes[i];
        if (n == dev->self)
            continue;
        struct peer *p = peer_create(dev, &dev->cluster, n);
        if (!p) {
            ret = -EINVAL;   /* only a low-order key makes this fail */
            goto fail;
        }
        device_node_endpoint(&p->path.endpoint, n);
        p->member.listed = p->path.endpoint;
        p->path.endpoint_proven = true;   /* the operator's word */
        dev->peers[dev->n_peers++] = p;
    }
    ret = device_remap(dev);
    if (!ret)
        ret = discovery_init(dev, &engine_core_ops);
    if (ret)
        goto fail;
    return 0;
fail:
    device_destroy(dev);
    return ret;
}

void device_destroy(struct device *dev)
{
    discovery_destroy(dev);
    for (size_t i = 0; i < dev->n_peers; i++)
        peer_free(dev->peers[i]);
    free(dev->peers);
    dev->peers = NULL;
    dev->n_peers = 0;
    device_map_free(dev->by_address);
    dev->by_address = NULL;
    index_table_destroy(&dev->indices);
    stage_destroy(&dev->stage);
    ratelimit_destroy(&dev->ratelimit);
    conntrack_free(&dev->conntrack);
    noise_local_free(dev->local);
    dev->local = NULL;
    sodium_memzero(&dev->checker, sizeof(dev->checker));
}

void device_say_leaving(struct device *dev, uint64_t now)
{
    discovery_say_leaving(dev, now);
}

void device_rules_changed(struct device *dev)
{
    for (size_t i = 0; i < dev->cluster.n_nodes; i++) {
        const struct cluster_node *n = &dev->cluster.nodes[i];
        struct peer *p = n == dev->self ? NULL : device_peer_by_key(dev, n->public_key);
        if (p)
            p->member.groups = n->groups;
    }
    dev->conntrack.gen++;
}
