/* SPDX-License-Identifier: MIT */
/* Membership: who is in the cluster, changed while the node runs. A new
 * cluster model (from `ddpnet reload` or SIGHUP; later, the registry) is
 * compared with the one the device runs (config/cluster_diff.h) and
 * applied peer by peer: added nodes get a peer, removed ones lose theirs
 * (sessions wiped, packets to them refused), changed ones are updated in
 * place or, when re-keyed, replaced; unchanged peers are not touched, so
 * their sessions, paths and traffic go on. The names block follows: each
 * node's name and aliases (the file's word) and the names its machine goes
 * by (its own, or what a peer said of itself, when no other node claims
 * them and the claim rule allows: docs/across-clouds.md, "Names"),
 * built on the loop at most once a second and written by the writer
 * thread (hosts_writer.h) through the hosts file descriptor kept from
 * set-up. Runs on the event loop's thread. */
#ifndef DDPNET_MEMBERS_H
#define DDPNET_MEMBERS_H

#include <stddef.h>
#include <stdint.h>

#include "overlay/engine/model/device.h"
#include "overlay/membership/state.h"

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
int members_registry(struct device *dev, struct cluster_node *nodes, size_t n, char *statements,
                     int64_t revision, uint64_t now);

/* Issue 59: a registered member whose record went (a DELETE in the
 * watch, a read of the prefix without it: its lease ran out on a busy
 * etcd, or `down`) stays as it is -- session, routes, names line -- for
 * its grace, the registry's lease TTL (registry-ttl; VOUCH_HOLD_NS, 150
 * s, at most); its record coming
 * back with the same key, name and address within it changes nothing.
 * Past it, it is removed. With an authority, a member whose certificate
 * no longer holds (revoked, expired) has none. At most VOUCH_GONE_MAX
 * (registry/vouch.h) wait at once, beside the names held; one more is
 * removed at once. members_grace_ns: the grace (0 without a registry);
 * members_grace_run, called on every pass of the loop: applies the
 * graces that ended; returns when to be called next (UINT64_MAX: none
 * runs). */
uint64_t members_grace_ns(const struct device *dev);
uint64_t members_grace_run(struct device *dev, uint64_t now);

/* With `[cluster] authority` (membership/certs.h): the store of its
 * statements made (0 or -ENOMEM; nothing without one), and freed. A
 * registry snapshot's statements (registry_statements, taken by
 * members_registry) are offered to it at each apply, and a record counts
 * only where its key's certificate matches it (name, address where the
 * certificate fixes one; its aliases are the certificate's). */
int members_certs_start(struct device *dev);
void members_certs_free(struct device *dev);
/* Called on every pass of the loop: drops the certificates that expired
 * and applies what the store's changes (expiry, revocation) mean to the
 * model; returns when to be called next (the first expiry, on the
 * loop's clock; UINT64_MAX: none). */
uint64_t members_certs_run(struct device *dev, uint64_t now);

/* A peer's disco CERT (dev->cert_said; joining with no server): one
 * statement of the authority offered to the store, at most
 * CERT_PER_SEC a second per peer; news from its source (a revocation
 * new here, a member's certificate said by its own key's holder) is
 * passed on to the other peers, and applied (a stranger on probation promoted, a
 * member added or dropped) by members_certs_run on the loop's next
 * pass. members_certs_run also removes the strangers whose probation
 * ended (engine/model/probation.h). */
void members_cert_said(struct peer *p, const char *text, size_t len, uint64_t now);

/* A statement of the authority handed to the node by a person (`ddpnet
 * revoke`: the control socket): offered to the store, and, when it counts
 * now (a revocation taken, a certificate added), passed on to every peer
 * that speaks disco. Its verdict (enum certs_verdict, *why as certs_offer
 * says), or -EPERM without an authority, -EINVAL for text too long, or
 * the errno of a revocation taken but not kept in the state file (not
 * written or not synced: revocations_taken; *why says so). */
int members_statement(struct device *dev, const char *text, size_t len, uint64_t now,
                      const char **why);

/* A hostname endpoint (endpoints.c): asks the device's resolver for n's
 * endpoint host on p's behalf, never waiting for it; p keeps the endpoint
 * it has (none, for a new peer) until members_resolved applies the answer.
 * Without a resolver, or for a name it refuses, p waits to be reached (a
 * warning says so). */
void members_resolve(struct device *dev, struct peer *p, const struct cluster_node *n);
/* The resolver's fd is readable: its answers applied to the peers still
 * waiting for those names (an endpoint set, a handshake begun where there
 * is no session; a name that did not resolve is logged); peers that could
 * not ask while it was full ask now. */
void members_resolved(struct device *dev, uint64_t now);
/* A peer's word on its own registry record changed (disco RECORD or
 * FEATURES; registry/vouch.h): the registry's nodes are applied again,
 * each change logged. dev->records_changed, set by the daemon. */
void members_recheck(struct device *dev, uint64_t now);

/* The names block (an ADDRESS NAME line per node). With the writer
 * thread running (dev->hosts_writer) it is only marked changed
 * (members_hosts_changed) and 0 returned; without it (set-up) it is
 * written through dev->hosts_fd at once, less what is a member's own word
 * (a machine name a peer said, a registered node's name), which waits for
 * the writer to ask the resolver: 0 or -errno. */
int members_write_hosts(struct device *dev);
/* The block changed (a peer's names, a reload, a registry revision): it is
 * built and handed to the writer by members_hosts_run, once a second at
 * most, so a member that keeps changing its names costs the loop one
 * rebuild a second. */
void members_hosts_changed(struct device *dev);
/* Builds the block and hands it to the writer when it changed and its time
 * has come; returns when to be called again (UINT64_MAX: nothing waits).
 * Called on every pass of the loop. */
uint64_t members_hosts_run(struct device *dev, uint64_t now);

/* The checksum of a cluster file's bytes that `status` shows, so a person
 * sees which nodes run which file: the first MEMBERSHIP_CLUSTER_SUM_LEN bytes
 * of its BLAKE2s. */
void members_checksum(const char *text, size_t len, uint8_t out[MEMBERSHIP_CLUSTER_SUM_LEN]);

/* The hosts file a client passed (`reload`; fd taken over either way):
 * where it is another file than dev->hosts_fd's (a tool renamed a new
 * one over the path), it takes the old descriptor's number (dup2: the
 * writer thread follows) and the block is written to it. 1 when it did, 0 when it is the same file, or -errno
 * (-EINVAL: not a regular file; the old descriptor stays). */
int members_take_hosts(struct device *dev, int fd);

/* Whether a cluster of two nodes or more has no node with an endpoint
 * or a candidate its record publishes:
 * nobody can start a handshake (a registry whose members all joined
 * without --endpoint). */
bool members_none_reachable(const struct cluster *c);

#endif
