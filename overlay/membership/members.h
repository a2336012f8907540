/* Membership: who is in the cluster, changed while the node runs. A new
 * cluster model (from `ddpnet reload` or SIGHUP; later, the registry) is
 * compared with the one the device runs (config/cluster_diff.h) and
 * applied peer by peer: added nodes get a peer, removed ones lose theirs
 * (sessions wiped, packets to them refused), changed ones are updated in
 * place or, when re-keyed, replaced; unchanged peers are not touched, so
 * their sessions, paths and traffic go on. The names block follows, through
 * the hosts file descriptor kept from set-up (hosts.h): each node's name,
 * aliases and the names its machine goes by (its own, or what a peer said
 * of itself, when no other node claims them). Runs on the event
 * loop's thread. */
#ifndef DDPNET_MEMBERS_H
#define DDPNET_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "overlay/engine/device.h"

/* What a reload says, line by line, to whoever asked: kind is
 * MEMBERS_SAY_CHANGE ("added node-d"), MEMBERS_SAY_ERROR ("14: unknown key
 * 'adress'": a line of the file, or the file as a whole) or
 * MEMBERS_SAY_REFUSED (why nothing was applied, and what to run instead). */
#define MEMBERS_SAY_CHANGE  "change"
#define MEMBERS_SAY_ERROR   "error"
#define MEMBERS_SAY_REFUSED "refused"
typedef void (*members_say)(void *ctx, const char *kind, const char *line);

/* Applies the cluster file text[0..len) to dev. Returns 0 when applied
 * (each change said; none when the file is the same), -EINVAL when the
 * file does not parse (each error said), -EPERM when it asks for what a
 * running node cannot do (said: this node's key, address or port, or the
 * [cluster] network, mtu or busy-poll changed, or this node is not in it),
 * -ENOMEM. Nothing changes unless it returns 0. */
int members_reload(struct device *dev, const char *text, size_t len, members_say say,
                   void *ctx, uint64_t now);

/* Applies the registry's latest nodes (taken: freed with the next ones or
 * the device), merged with the cluster file's (registry_model), at etcd
 * revision `revision`. Each change is logged. 0, -EPERM (refused, logged),
 * -ENOMEM. */
int members_registry(struct device *dev, struct cluster_node *nodes, size_t n, int64_t revision,
                     uint64_t now);

/* The names block (an ADDRESS NAME line per node) written through
 * dev->hosts_fd: 0 or -errno. */
int members_write_hosts(struct device *dev);

/* The checksum of a cluster file's bytes that `status` shows, so a person
 * sees which nodes run which file: the first DEVICE_CLUSTER_SUM_LEN bytes
 * of its BLAKE2s. */
void members_checksum(const char *text, size_t len, uint8_t out[DEVICE_CLUSTER_SUM_LEN]);

/* The hosts file a client passed (`reload`; fd taken over either way):
 * where it is another file than dev->hosts_fd's (a tool renamed a new
 * one over the path), the block is written to it and it replaces the
 * old descriptor. 1 when it did, 0 when it is the same file, or -errno
 * (-EINVAL: not a regular file; the old descriptor stays). */
int members_take_hosts(struct device *dev, int fd);

/* Whether a cluster of two nodes or more has no node with an endpoint:
 * nobody can start a handshake (a registry whose members all joined
 * without --endpoint). */
bool members_none_reachable(const struct cluster *c);

#endif
