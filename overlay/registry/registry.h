/* SPDX-License-Identifier: MIT */
/* The registry: cluster membership kept in etcd (`registry = etcd://...`
 * in the cluster file), for clusters whose nodes come and go.
 *
 * A node the cluster file does not list joins at `up`: it takes an
 * overlay address (the one its key held before, else the lowest free one,
 * claimed in a transaction: alloc.h) and puts its record under
 * PREFIX/members/NAME, held by a lease (record.h). Then two threads of its
 * own keep it there: the keeper renews the lease every third of its TTL
 * (and joins again if the lease was lost while etcd was out of reach; and
 * puts our record back, at most once a second, when another writer of the
 * prefix deleted it or wrote over it), the
 * watcher reads PREFIX/members/ and follows it with a watch from that
 * revision on (no polling). Every change gives a new snapshot of the
 * registered nodes, handed to the event loop through an eventfd; the loop
 * merges it with the file's nodes (registry_model) and applies the result
 * through the membership engine (membership/members.h). `down` revokes the
 * lease, so the node leaves everyone's mesh at once; a node that crashes
 * leaves when its lease runs out.
 *
 * etcd out of reach, in part or whole: calls move on to the next member;
 * the watcher and keeper retry with backoff (REGISTRY_BACKOFF_MAX_MS at
 * most) and the mesh keeps the last membership it applied. Values that do
 * not decode, or that clash with the file or with one another, are never
 * applied; each is logged once per revision. */
#ifndef DDPNET_REGISTRY_H
#define DDPNET_REGISTRY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

#define REGISTRY_TIMEOUT_MS     3000L     /* one request */
#define REGISTRY_JOIN_TIMEOUT_S 60u       /* `up` waits this long for etcd */
/* A join's first request waits this long, one that timed out twice as
 * long the next time, up to the most: an etcd that answers every request
 * late still lets a join through. A time-out throws away what etcd did
 * for it and asks again: with 256 nodes joining at once on 2 vCPUs, 3 s
 * time-outs left etcd serving requests nobody waited for, and 14 joins
 * ran out of their minute (make scale, issue 59). */
#define REGISTRY_JOIN_REQUEST_MIN_MS 10000L
#define REGISTRY_JOIN_REQUEST_MAX_MS 24000L
#define REGISTRY_BACKOFF_MIN_MS 200u
#define REGISTRY_BACKOFF_MAX_MS 5000u
/* Our own candidates (cands.h): the interfaces read again this often (s),
 * and our record put again at most this often when they, or where a
 * member saw us, changed (s). */
#define REGISTRY_CANDS_REFRESH_S 30u
#define REGISTRY_PUBLISH_MIN_S   10u
/* The keeper's keep-alives (issue 59): one a third of the lease's life
 * after the last that etcd answered; one that failed is tried again
 * after REGISTRY_KEEPALIVE_RETRY_MS, twice that after the next failure,
 * up to a third of the life. Each waits for etcd as long as the lease
 * has left by our clock (REGISTRY_TIMEOUT_MS at least): an etcd that
 * answers late, but within the lease's life, keeps the lease, where a
 * 3 s time-out threw its work away, asked again five seconds later, and
 * lost the lease (256 nodes on one etcd: 269 leases lost). Only etcd's
 * word that the lease is gone makes the node join again. */
#define REGISTRY_KEEPALIVE_RETRY_MS 1000u
/* When the next keep-alive goes: fails is how many failed since etcd last
 * answered one. */
uint64_t registry_keepalive_next_ms(unsigned ttl_s, unsigned fails, uint64_t now_ms);
/* How long a keep-alive sent now waits, the lease running out at
 * until_ms by our clock. */
long registry_keepalive_wait_ms(uint64_t until_ms, uint64_t now_ms);
/* The watcher (issue 59): whether a watch that etcd had set up and that
 * ended with ret is taken up from the revision after the last event
 * applied (true), or the prefix is read whole again (false: compacted,
 * -ESTALE; too far behind for one message, -EMSGSIZE) or the watcher
 * stops (-ECANCELED). */
bool registry_watch_resumes(int ret);
/* The time-out of the watcher's next read of the prefix after one that
 * waited ms and failed: twice, up to REGISTRY_JOIN_REQUEST_MAX_MS. */
long registry_read_timeout_next(long ms);

enum registry_state {
    REGISTRY_CONNECTING,                  /* never read the prefix yet */
    REGISTRY_SYNCED,                      /* watching: what it applied is current */
    REGISTRY_UNREACHABLE,                 /* lost: the last membership stays */
};

struct registry;

/* Reads what the client needs from c->registry (the CA, certificate and key
 * files; the password file, refused when group or others may read it), so
 * call it while those files are readable (as root, before the privilege
 * drop). NULL with one line for a person in err. */
struct registry *registry_new(const struct cluster *c, char *err, size_t errlen);
void registry_free(struct registry *r);

/* Joins as self (name, key, endpoint and port set; the address is
 * chosen and written to self->address, our candidates, read from the
 * interfaces, to self->candidates, put by the keeper later). What passes
 * is tried again, each time under a fresh lease, after a jittered backoff,
 * for up to REGISTRY_JOIN_TIMEOUT_S in all, each time logged with why:
 * etcd out of reach, slow, in trouble or too busy, our lease gone, every
 * claim lost to nodes joining at once; a request that timed out gets
 * twice as long the next time (REGISTRY_JOIN_REQUEST_MAX_MS at most). 0, or -errno with one line for a
 * person in err: the name taken by another key, the key registered under
 * another name, the network full, a refusal of etcd's, or no join within
 * REGISTRY_JOIN_TIMEOUT_S (with the last reason). */
int registry_join(struct registry *r, struct cluster_node *self, char *err, size_t errlen);

/* A join made in another process -- the daemon joins in a child that has
 * dropped its privileges, so that libcurl and json-c never parse etcd's
 * answers as root -- handed back: what registry_join made (this node as
 * registered, its lease), read in the process that joined, and taken over
 * by the one that did not (as if it had joined; 0 or -errno). */
struct registry_joined {
    struct cluster_node self;
    int64_t lease;
};
void registry_joined_get(struct registry *r, struct registry_joined *out);
int registry_joined_set(struct registry *r, const struct registry_joined *in);

/* Starts the watcher (and, after a join, the keeper: the lease, and our
 * record kept current, record.h's candidates: the join's record names
 * none, so call this once the node's UDP socket is bound). 0 or -errno. */
int registry_start(struct registry *r);
/* Readable when a new snapshot is waiting: then registry_take. */
int registry_event_fd(const struct registry *r);

/* The latest snapshot: the registered nodes (a new array in *nodes, to
 * free), the etcd revision it reflects. 1 when there was a new one, 0 when
 * nothing changed since the last take, -ENOMEM. */
int registry_take(struct registry *r, struct cluster_node **nodes, size_t *n, int64_t *revision);
/* With `authority`: the statements of the last snapshot taken, one per
 * line -- each record's certificate and each revocation under
 * PREFIX/members-revoked/ (REGISTRY_REVOKED_MAX at most) that verified
 * against the authority when the watcher read it -- as a new string (the
 * caller frees it); NULL when none or without an authority. A record
 * whose certificate did not verify still comes in the snapshot, with no
 * statement: membership decides what it counts (membership/certs.h). */
#define REGISTRY_REVOKED_MAX 1024u
char *registry_statements(struct registry *r);
/* Our certificate (text), put in our record from the join on (call it
 * before registry_join). */
void registry_set_cert(struct registry *r, const char *cert);
/* A renewal of our certificate (membership/renewal.h), from the loop: our
 * record says it from the keeper's next look (at once, paced as any
 * change of our record). */
void registry_cert_renewed(struct registry *r, const char *cert);
/* The authority's keys c trusts from now (a reload's step of a rotation:
 * cluster.h's authority_next); records and revocations read from then on
 * are checked against them. */
void registry_trust(struct registry *r, const struct cluster *c);

/* For `status` and the metrics: the state, the revision last handed over,
 * the endpoint in use and the last error ("" when none). */
struct registry_status {
    enum registry_state state;
    int64_t revision;
    char endpoint[128];
    char error[256];
};
void registry_status(struct registry *r, struct registry_status *out);
const char *registry_state_name(enum registry_state s);

/* A member saw our packets come from c (our NAT's mapping, when we are
 * behind one): the keeper puts it in our record (REGISTRY_PUBLISH_MIN_S
 * apart at most). Only takes a lock: the event loop may call it. */
void registry_observed(struct registry *r, const struct cluster_cand *c);

/* Leaves: revokes the lease (the node is gone from every peer's mesh at
 * once) and stops the threads. */
void registry_leave(struct registry *r);

/* The model the device runs: the file's settings and nodes, then each
 * registered node that clashes with none before it (same name, key or
 * address: the file's entry wins, then the earlier registration), and self
 * always (as it joined, whatever etcd says now). *out is new (cluster_free
 * it). Nodes left out are counted in *skipped and each said to skip(ctx,
 * node, why) when skip is not NULL. 0 or -ENOMEM. */
typedef void (*registry_skip_fn)(void *ctx, const struct cluster_node *n, const char *why);
int registry_model(const struct cluster *file, const struct cluster_node *self,
                   const struct cluster_node *nodes, size_t n, struct cluster *out,
                   size_t *skipped, registry_skip_fn skip, void *ctx);

#endif
