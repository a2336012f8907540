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
 * an index given back); read by every receive (datapath.c: a transport
 * message's keypair; handshake.c: a response's or cookie reply's
 * handshake). With an engine per core, to be published by a swap that
 * readers never wait on. */
#ifndef DDPNET_INDEX_H
#define DDPNET_INDEX_H

#include <stddef.h>
#include <stdint.h>

struct peer;
struct noise_keypair;

struct index_entry {
    uint32_t index;               /* 0: empty slot */
    struct peer *peer;
    struct noise_keypair *keypair; /* NULL while it names a handshake */
};

struct index_table {
    size_t cap;                   /* a power of two */
    size_t used;
    struct index_entry *slots;
};

/* Room for max_entries live indices. */
int index_table_init(struct index_table *t, size_t max_entries);
void index_table_destroy(struct index_table *t);
/* Room for max_entries (the cluster grew): the live indices move to a
 * larger table, so entries found before are found again, at new
 * addresses. 0, or -ENOMEM with the table as it was. */
int index_table_reserve(struct index_table *t, size_t max_entries);
/* Registers a fresh random index (never 0) for peer; 0 when full. */
uint32_t index_add(struct index_table *t, struct peer *peer, struct noise_keypair *kp);
void index_remove(struct index_table *t, uint32_t index);
struct index_entry *index_find(struct index_table *t, uint32_t index);

#endif
