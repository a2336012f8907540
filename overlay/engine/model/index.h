/* SPDX-License-Identifier: MIT */
/* The receiver-index table: the random 32-bit indices we hand out in our
 * handshake messages, mapped to the peer and, once a session exists, the
 * keypair. Incoming responses, cookie replies and transport messages find
 * their state here. Open addressing, sized once for the cluster (each peer
 * holds at most one handshake and three keypairs), so lookups on the data
 * path allocate nothing.
 *
 * Owner: shared, read-mostly (device.h's tables; HACKING.md, "State by
 * owner"). One table per device (dev->indices), made and destroyed by
 * device_setup.c; written as sessions come and go, rarely, by
 * handshake.c (a handshake's index) and peer.c (a keypair installed,
 * an index given back), under the engine lock; read by every receive
 * (datapath.c: a transport message's keypair; handshake.c: a response's
 * or cookie reply's handshake).
 *
 * Readable without the engine lock (issue 58, shard.h): each slot holds
 * a pointer to an entry of its own, stored and loaded atomically; an
 * entry's index and peer never change and its keypair is set once
 * (index_set_keypair); what index_remove takes out, and the slots a
 * table that grew left behind, are retired through `qsbr` (qsbr.h),
 * freed once every loop's turn has passed. So a reader in its turn never
 * finds a torn or freed entry, and what it found stays readable until
 * its turn ends. It may, though, miss an entry that index_remove is
 * moving back past another's hole: an unlocked miss is no answer and is
 * asked again under the lock. Under the lock, finds are exact. */
#ifndef DDPNET_INDEX_H
#define DDPNET_INDEX_H

#include <stddef.h>
#include <stdint.h>

#include "overlay/loop/qsbr.h"

struct peer;
struct noise_keypair;

struct index_entry {
    uint32_t index;               /* never 0; never changes */
    struct peer *peer;            /* never changes */
    /* NULL while it names a handshake; set once (index_set_keypair, a
     * release store): unlocked readers load it with index_keypair. */
    struct noise_keypair *keypair;
    struct qsbr_node retired;     /* index_remove's */
};

/* One table's slots: replaced whole when the table grows. */
struct index_slots {
    size_t cap;                   /* a power of two */
    struct qsbr_node retired;
    struct index_entry *slot[];   /* atomic; NULL: empty */
};

struct index_table {
    struct index_slots *slots;    /* atomic: swapped whole by index_table_reserve */
    size_t cap;                   /* slots->cap, for the writer */
    size_t used;                  /* the writer's */
    /* Where what is taken out waits for readers to let go: NULL (one
     * loop, no reader without the lock) frees it at once. Set once, before
     * any loop runs (device_setup.h: device_reclaim_with). */
    struct qsbr *qsbr;
};

/* Room for max_entries live indices. */
int index_table_init(struct index_table *t, size_t max_entries);
/* Frees the table, its entries and its slots: no reader left. */
void index_table_destroy(struct index_table *t);
/* Room for max_entries (the cluster grew): the live indices move to a
 * larger table, so entries found before are found again (the same
 * entries). 0, or -ENOMEM with the table as it was. */
int index_table_reserve(struct index_table *t, size_t max_entries);
/* Registers a fresh random index (never 0) for peer; 0 when full (or out
 * of memory). */
uint32_t index_add(struct index_table *t, struct peer *peer, struct noise_keypair *kp);
void index_remove(struct index_table *t, uint32_t index);
/* Under the engine lock, or by a reader in its turn (above). */
struct index_entry *index_find(struct index_table *t, uint32_t index);
/* Names the keypair of e's session (e named its handshake). */
void index_set_keypair(struct index_entry *e, struct noise_keypair *kp);
/* e's keypair, for a reader without the engine lock (an acquire load:
 * the keypair's contents, written before index_set_keypair, come with
 * it): a shard's receive (datapath.c: datapath_from_udp_unlocked). */
struct noise_keypair *index_keypair(const struct index_entry *e);

#endif
