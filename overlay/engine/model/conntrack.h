/* SPDX-License-Identifier: MIT */
/* The connections the rules let open (config/rules.h), per node: so that
 * the replies of an allowed connection pass, and a rule is matched once
 * per connection instead of once per packet. The device's, under the
 * engine lock; written by the filter (engine/filter.c) alone, its
 * generation bumped by device_rules_changed (device_setup.c).
 *
 * A connection: the other member's overlay address, the IP protocol and
 * the two ports (ICMP echo: its identifier in both), seen from this node,
 * so that both directions find the same entry; who opened it (us or
 * them), and the rules' generation it was last allowed under: a reload
 * bumps the generation, and each connection's next packet matches the
 * new rules again (a connection whose rule is gone is forgotten and its
 * packet refused; the others carry on).
 *
 * Bounded: CONNTRACK_SLOTS entries made at start-up, a connection probed
 * in at most CONNTRACK_PROBE slots of a keyed hash (a member cannot aim
 * at one neighbourhood). An entry expires after its protocol's idle time
 * (below); a new connection takes an empty or expired slot of its
 * neighbourhood, and when there is none it is refused and counted
 * (`full`): a live connection is never evicted for a new one.
 *
 * Bounded per peer too: a connection made by a peer's packet (received:
 * its owner, the peer's id; 0 for those this node's packets made) counts
 * against that peer, at most CONNTRACK_PER_PEER of them. Without it one
 * member could fill the whole table with allowed openings it never
 * lets be answered (30 s each, refreshed) and refuse everyone else's
 * new connections; with it, a member holds at most 1/16 of the table
 * (a training job holds a few dozen connections a pair, so 1024 is far
 * above honest use). A new connection over the bound is refused and
 * counted (`peer_full`). Entries expire lazily, so the count may hold
 * expired ones: at the bound the table is swept of them first, at most
 * once every CONNTRACK_SWEEP_S (a walk of the table, bounded work). */
#ifndef DDPNET_CONNTRACK_H
#define DDPNET_CONNTRACK_H

#include <stdbool.h>
#include <stdint.h>

#define CONNTRACK_SLOTS 16384u   /* a power of two; 48 bytes each */
#define CONNTRACK_PROBE 8u
#define CONNTRACK_PER_PEER (CONNTRACK_SLOTS / 16u)
#define CONNTRACK_SWEEP_S 1u

/* Idle times, in seconds: until the other end answers, then while it
 * does; a TCP connection a FIN or RST was seen on lingers briefly. */
#define CONNTRACK_OPENING_S    30u
#define CONNTRACK_TCP_S        3600u
#define CONNTRACK_TCP_CLOSING_S 10u
#define CONNTRACK_UDP_S        180u
#define CONNTRACK_ICMP_S       30u

struct conntrack_key {
    uint8_t remote[16];          /* the other member's overlay address */
    uint8_t family;              /* AF_INET or AF_INET6 */
    uint8_t proto;               /* IPPROTO_* */
    uint16_t local_port, remote_port;
};

struct conntrack_entry {
    struct conntrack_key key;
    uint8_t used;                /* 0: empty */
    uint8_t ours;                /* opened by this node */
    uint8_t replied;             /* the side that did not open has sent */
    uint8_t closing;             /* TCP: FIN or RST seen */
    uint32_t gen;                /* the rules' generation it was allowed under */
    uint16_t port;               /* the opener's destination port, as rules see it */
    uint32_t owner;              /* the peer whose packet made it; 0: ours */
    uint64_t seen_ns;
};

struct conntrack {
    struct conntrack_entry *slot;   /* CONNTRACK_SLOTS, made by conntrack_init */
    uint8_t hash_key[16];           /* SipHash's key, random per device */
    uint32_t gen;                   /* bumped when the rules or groups change */
    uint64_t full;                  /* new connections refused: no slot free */
    uint64_t peer_full;             /* new connections refused: the peer's bound */
    uint64_t swept_ns;              /* the last sweep for expired entries */
    /* Told when an entry made by a peer (owner) is emptied, to lower that
     * peer's count (filter.c's); NULL: nobody counts. */
    void (*released)(void *ctx, uint32_t owner);
    void *ctx;
};

int conntrack_init(struct conntrack *t);
void conntrack_free(struct conntrack *t);
/* The live entry for key, or NULL (an expired one is emptied). */
struct conntrack_entry *conntrack_find(struct conntrack *t, const struct conntrack_key *key,
                                       uint64_t now);
/* A new entry for key (not there: conntrack_find said so), made by
 * owner's packet (0: ours), or NULL when its neighbourhood holds only
 * live ones (t->full counted). The caller counts it against owner. */
struct conntrack_entry *conntrack_add(struct conntrack *t, const struct conntrack_key *key,
                                      uint32_t owner, uint64_t now);
/* Empties the expired entries (each owner told), unless the last sweep
 * was under CONNTRACK_SWEEP_S ago: false then. */
bool conntrack_sweep(struct conntrack *t, uint64_t now);
void conntrack_forget(struct conntrack *t, struct conntrack_entry *e);
/* How long e lives idle, in nanoseconds. */
uint64_t conntrack_idle_ns(const struct conntrack_entry *e);
/* Live entries (walks the table: for status and tests, not packets). */
unsigned conntrack_count(const struct conntrack *t, uint64_t now);

#endif
