/* Making and unmaking the device's in-memory state (device.h): identity,
 * peers from the cluster file, index table and address map. The caller
 * fills dev->cluster, dev->self and dev->loop first. */
#ifndef DDPNET_DEVICE_SETUP_H
#define DDPNET_DEVICE_SETUP_H

#include "overlay/engine/device.h"

/* 0, -ENOMEM, or -EINVAL (a peer key of low order). Cleans up on failure. */
int device_init(struct device *dev, const uint8_t private_key[WG_KEY_LEN], uint64_t now);
void device_destroy(struct device *dev);
/* The address map rebuilt from dev->peers (after peers were added or
 * removed, or an address changed): 0, or -ENOMEM with the old map kept. */
int device_remap(struct device *dev);
/* The endpoint of a node as the cluster file gives it when it is an IP
 * literal (AF_UNSPEC otherwise: hostnames are the daemon's to resolve). */
void device_node_endpoint(union endpoint *e, const struct cluster_node *n);

#endif
