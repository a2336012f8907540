/* SPDX-License-Identifier: MIT */
/* The engine as membership and the daemon use it: making and unmaking
 * the device's in-memory state (device.h: identity, peers, index table
 * and address map; the caller fills dev->cluster, dev->self and dev->loop
 * first), peers made and removed, the loop's handlers, and the few calls
 * that reach out or wake discovery. Outside overlay/engine/, only this
 * header and model/device.h are included (tests/check_layers.sh). */
#ifndef DDPNET_DEVICE_SETUP_H
#define DDPNET_DEVICE_SETUP_H

#include "overlay/engine/model/device.h"
#include "overlay/engine/paths/paths.h"

/* 0, -ENOMEM, or -EINVAL (a peer key of low order). Cleans up on failure. */
int device_init(struct device *dev, const uint8_t private_key[WG_KEY_LEN], uint64_t now);
void device_destroy(struct device *dev);
/* (device_remap and device_node_endpoint, the model's: device.h.) */
/* After a swap of dev->cluster (membership): each peer takes its node's
 * groups in the new model's bits, and the connection table's generation
 * moves on, so that each connection is matched against the new rules at
 * its next packet (filter.h). */
void device_rules_changed(struct device *dev);
/* The node leaves its registry (`down`, before the lease is revoked):
 * each peer told on its session (paths.h's discovery_say_leaving), so
 * that it removes us at once, not after the grace of a lost lease. Best
 * effort: a datagram lost leaves that peer the grace. */
void device_say_leaving(struct device *dev, uint64_t now);

/* --- peers made and unmade (peer.c): the only place of either ------------------ */
/* A peer for node of the model (its keepalive is the model's for it),
 * with its id (disco_id) taken from the device's counter: not yet one of
 * dev->peers, which the caller installs. NULL when out of memory or the
 * key is of low order. */
struct peer *peer_create(struct device *dev, const struct cluster *model,
                         const struct cluster_node *node);
/* Frees a peer never installed (or the device's, as it is destroyed). */
void peer_free(struct peer *p);
/* p leaves the device: no peer of stay[0..n_stay) (those that remain)
 * relays through it or counts it as a relay any more; then its keys are
 * wiped, its indices released, its staged packets dropped and it is
 * freed. The caller takes it out of dev->peers and the address map. */
void peer_remove(struct peer *p, struct peer *const *stay, size_t n_stay, uint64_t now);

/* What the loop calls on UDP receives, TUN reads, finished crypto jobs
 * and timers, with dev as the context (the control socket's handlers are
 * the caller's): handlers.c. */
struct loop_handlers;
void engine_loop_handlers(struct device *dev, struct loop_handlers *h);

/* --- reaching out, and discovery woken ------------------------------------------ */
/* Sends an initiation unless one went out less than REKEY_TIMEOUT ago. */
void handshake_send_initiation(struct peer *p, bool is_retry, uint64_t now);
/* What paths and discovery do for membership and the daemon (path_flush,
 * discovery_wake, discovery_node_hints, discovery_send_cert,
 * discovery_promoted, discovery_local_refresh): paths/paths.h, included
 * above, where that room declares what it defines. */

#endif
