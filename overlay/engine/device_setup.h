/* SPDX-License-Identifier: MIT */
/* The engine as membership and the daemon use it: making and unmaking
 * the device's in-memory state (device.h: identity, peers, index table
 * and address map; the caller fills dev->cluster, dev->self and dev->loop
 * first), peers made and removed, the loop's handlers, and the few calls
 * that reach out or wake discovery. Outside overlay/engine/, only this
 * header and device.h are included (tests/check_layers.sh). */
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
/* Sends what the relay gathered for others (path.c). */
void path_flush(struct device *dev, uint64_t now);
/* A fact of the whole device changed (the members, its own candidates):
 * discovery_run_timers (paths.h) looks at every peer on the loop's next
 * turn. A change to one peer's facts arms that peer (discovery_arm). */
void discovery_wake(struct device *dev);
/* What node's registry record says of where it may be reached (its
 * candidates and observed address; membership calls this for a new peer
 * and when they change): hints for p, paid from the registry's credit
 * until they answer (the record may be anyone's word). */
void discovery_node_hints(struct peer *p, const struct cluster_node *node, uint64_t now);
/* Sends one statement of the authority (a certificate or revocation,
 * its text line) to p in a disco CERT (disco_io.c); what a peer that
 * predates CERT drops as an unknown type. */
void discovery_send_cert(struct peer *p, const char *text, size_t len, uint64_t now);
/* A stranger on probation became a member (membership's promotion): what
 * its probation put off comes now -- our ENDPOINTS (where the members
 * are), and its introduction to the peers we reach. */
void discovery_promoted(struct peer *p, uint64_t now);
/* Reads the interface addresses: this node's local candidates (disco_local.c). */
void discovery_local_refresh(struct device *dev, uint64_t now);

#endif
