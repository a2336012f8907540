/* SPDX-License-Identifier: MIT */
/* What makes a registry record count: its own key holder's word.
 *
 * Every member can write the prefix (registry.h), so a record in etcd is
 * only what some writer says about a key. A record counts -- its name on
 * the hosts block, its address routed to its key, its endpoint used --
 * only once the holder of the record's key stated the same record inside
 * a session with that key (the disco RECORD message: this digest), or is
 * a daemon too old to state one (it said FEATURES without
 * DISCO_FEAT_RECORD; as before, etcd's word is taken for it). Until then
 * the record is pending: a peer to make a handshake with, nothing more.
 *
 * And what a node counts already stays as it is while a record still
 * holds its key (or its name, while its holder is heard from): a writer
 * who rewrites another member's record (its address, endpoint, key or
 * name) changes nothing the others believe; only taking the record away
 * (delete, or a value that does not decode) takes the member away.
 * A counted node's name and address go to no other key until
 * VOUCH_HOLD_NS after it left, so deleting a member's record and
 * registering its name or address at once takes neither.
 *
 * Pure functions: no I/O, the clock passed in. */
#ifndef DDPNET_VOUCH_H
#define DDPNET_VOUCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"
#include "overlay/base/clock.h"

#define VOUCH_DIGEST_LEN 32u
/* How long a node that left keeps its name and address from other keys,
 * and how recently a key's holder must have been heard for a rewritten
 * record to keep it counted: beyond two idle pings (DISCO_IDLE_PING_MAX_S),
 * so that an idle member is never taken for gone. */
#define VOUCH_HOLD_NS    (150ull * NS_PER_S)

/* The digest a node states of its own record: BLAKE2s over what others
 * take from it (name, key, address, endpoint, port). */
void vouch_digest(const struct cluster_node *n, uint8_t out[VOUCH_DIGEST_LEN]);

/* The digest of self's record as the others decode it from etcd (encoded
 * and decoded again, record.h), checked against c's network. 0 or
 * -EINVAL/-ENOMEM. */
int vouch_self_digest(const struct cluster_node *self, const struct cluster *c,
                      uint8_t out[VOUCH_DIGEST_LEN]);

/* What a key's holder said, on its own session. */
enum vouch_said {
    VOUCH_SAID_NOTHING,                   /* no session yet, or nothing said */
    VOUCH_SAID_DIGEST,                    /* RECORD: digest holds its word */
    VOUCH_SAID_OLDER,                     /* a daemon that states no record */
};
struct vouch_word {
    enum vouch_said said;
    bool alive;                           /* heard within VOUCH_HOLD_NS */
    uint8_t digest[VOUCH_DIGEST_LEN];
    /* How long a counted node of this key stays counted, as it is, after
     * its record went (a DELETE, a read without it): its grace (issue 59:
     * a lease lost on a busy etcd comes back seconds later, under the
     * same key). 0: it leaves at once (its certificate no longer held:
     * revoked, expired, let go). A holder that states another digest
     * than the counted record's (a node leaving with `down` states all
     * zeros) gets none either. */
    uint64_t grace_ns;
};
typedef void (*vouch_word_fn)(void *ctx, const uint8_t key[CLUSTER_KEY_LEN],
                              struct vouch_word *out);

/* A node that left the counted ones, and when its record went: its name
 * and address are held from other keys until VOUCH_HOLD_NS after. Within
 * its grace (vouch_word's grace_ns) it is still counted, as it was
 * (grace set): a record of its key coming back ends the grace with
 * nothing changed. A caller keeps room for VOUCH_GONE_MAX: the pending
 * removals and the holds together (one node that leaves past that is
 * neither held nor graced: it leaves at once, as with no grace). */
#define VOUCH_GONE_MAX 1024u
struct vouch_gone {
    char name[CLUSTER_NAME_MAX + 1];
    uint8_t key[CLUSTER_KEY_LEN];
    struct cluster_addr address;
    uint64_t left_ns;
    bool grace;                           /* still counted: its grace runs */
};

/* What the registry's records come to. nodes[0..n_counted) count; then
 * nodes[n_counted..n) are pending (for a handshake, not routed or named).
 * Each key at most once. gone: the caller's list, updated: counted nodes
 * whose record went are added (at now), kept counted while within their
 * grace (grace set), and dropped when a record of their key counts again
 * (the grace ended, nothing changed) or past their hold. */
struct vouch_out {
    struct cluster_node *nodes;           /* the caller frees */
    size_t n, n_counted;
};

/* records[0..n): the registry's snapshot (creation order, as
 * registry_take gives it); counted[0..m): the registered nodes the
 * device counts now; gone[0..*n_gone) (room for cap_gone). word says
 * what a key's holder said. 0 or -ENOMEM. */
int vouch_sort(const struct cluster_node *records, size_t n, const struct cluster_node *counted,
               size_t m, struct vouch_gone *gone, size_t *n_gone, size_t cap_gone,
               vouch_word_fn word, void *ctx, uint64_t now, struct vouch_out *out);

#endif
