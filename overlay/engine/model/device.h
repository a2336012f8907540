/* SPDX-License-Identifier: MIT */
/* The model: this node's identity, one peer per other node of the cluster
 * (full mesh) with its path (direct or through a relay) and what
 * discovery knows of it, the UDP sockets, the TUN device and the index
 * table that maps receiver indices to handshakes and keypairs. A room of
 * its own (overlay/engine/model/), below the two that write it: the
 * WireGuard core (peer.c, handshake.c, datapath.c, timers.c,
 * device_setup.c) and paths and discovery (paths/: path.c, disco_*.c).
 * Every part says who writes it (HACKING.md, "State by owner"): the
 * core, paths/, membership (membership/), the daemon (daemon/, at
 * set-up), or the control socket through the functions below. Three
 * kinds, for an engine per core: per core (counters, pools, rings,
 * scratch buffers, busy-poll state: a shard's own), shared and
 * read-mostly (the cluster model, peers' keys and addresses, the maps
 * and index table: changed by membership or a handshake, read by every
 * packet), and what other rooms tell the engine (our names, record,
 * certificate and revocations; the daemon's sockets and hooks).
 * Membership's own state is not here: the device only points at it
 * (struct membership, membership/state.h, opaque to the engine). Who
 * runs it: with shards (the default on more than one core), every shard's
 * thread, one at a time, under the engine lock (overlay/loop/shard.h,
 * which lists what is done under it that should not be), the seals and
 * opens outside it on copies of the keys; with one loop
 * (DDPNET_SHARDS=1), that loop's thread alone, no lock. Never the other
 * threads (resolver, registry, hosts writer): they hand their work over
 * through eventfds and their own locks (HACKING.md, "Locks and atomics").
 * overlay/loop/ performs the I/O and knows no peer. Set-up and
 * teardown (device_init, peer_create, peer_remove) are device_setup.c's
 * and peer.c's; device.c holds the lookups. */
#ifndef DDPNET_DEVICE_H
#define DDPNET_DEVICE_H

#include <net/if.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>

#include "config/cluster.h"
#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "crypto/transport.h"
#include "overlay/base/clock.h"
#include "overlay/base/endpoint.h"
#include "overlay/disco/disco.h"
#include "overlay/disco/pmtu.h"
#include "overlay/engine/model/drops.h"
#include "overlay/engine/model/conntrack.h"
#include "overlay/engine/model/flows.h"
#include "overlay/engine/model/index.h"
#include "overlay/engine/model/probation.h"
#include "overlay/engine/model/ratelimit.h"
#include "overlay/engine/model/routes.h"
#include "overlay/engine/model/stage.h"

/* Packets wait for a session this long at most (two handshake attempts,
 * time for a relay to come up); then they are dropped and the peer
 * refuses new ones at once, with ICMP, until a handshake completes. */
#define PEER_STAGE_HOLD_SEC  (2u * WG_REKEY_TIMEOUT)
/* ddp0's largest MTU (a jumbo-frame network's, less the tunnel); super-
 * packets from the offloads are cut to the MTU before they are sealed. */
#define DEVICE_MTU_MAX       9000u
#define DEVICE_PKT_CAP       (DEVICE_MTU_MAX + WG_TRANSPORT_HEADER_LEN + \
                              WG_PADDING_MULTIPLE + WG_AEAD_TAG_LEN)
/* More handshake messages than this in one second, each admitted by its
 * source's rate limit, put us under load for the next second: then
 * initiations must carry a cookie (mac2). */
#define DEVICE_LOAD_HANDSHAKES_PER_SEC 128u
/* Receiver indices a model of n nodes needs: a handshake and three
 * keypairs for each peer, the strangers on probation among them (without
 * their share, a newcomer's index was refused while strangers held the
 * table's room, and its handshake went unanswered). */
#define DEVICE_INDICES(n) (4u * ((n) + PROBATION_MAX))
/* The rate shown by `ddpnet status` is averaged over this window. */
#define PEER_RATE_WINDOW_NS  (2 * WG_NSEC_PER_SEC)
/* Sessions rekey up to this much before REKEY_AFTER_TIME (rekey_early_ns). */
#define PEER_REKEY_SPREAD_MS 30000u


struct core_ops;
struct pkt;
struct resolver;

/* Timer deadlines in monotonic ns; 0 = not armed (see timers.h). */
struct peer_timers {
    uint64_t retransmit_handshake;
    uint64_t send_keepalive;
    uint64_t new_handshake;
    uint64_t zero_key_material;
    uint64_t persistent_keepalive;
    uint64_t stage_expiry;                 /* staged packets give up waiting */
    unsigned handshake_attempts;
    bool need_another_keepalive;
    bool sent_lastminute_handshake;   /* the receive-side rekey, once per session */
};

/* A rate estimate: bytes counted since the window began, and the last
 * complete window's rate. */
struct rate {
    uint64_t window_start_ns;
    uint64_t window_bytes;
    uint64_t bytes_per_sec;
};

/* What a peer said of its own registry record, on its session. */
enum peer_record_said {
    PEER_RECORD_NOTHING,
    PEER_RECORD_DIGEST,                   /* RECORD: record_digest */
    PEER_RECORD_OLDER,                    /* FEATURES without DISCO_FEAT_RECORD */
};

/* struct peer, by owner. One thread at a time writes a peer: the one
 * loop's, or with shards the shard holding the engine lock (a crypto job,
 * run outside it on any shard's thread, gets a copy of a key and a
 * buffer, never a peer), so "who writes" is which file; each part below
 * says it. */

/* The WireGuard session and its timers: written by the core (peer.c,
 * handshake.c, datapath.c, timers.c); paths and discovery read the
 * keypairs (peer_can_send) and change nothing here but through
 * core_ops. */
struct peer_wg {
    struct noise_handshake handshake;
    struct cookie_maker cookie;
    bool has_psk;                         /* peer_set_psk (the control socket) */
    /* current: in use for sending; previous: still accepted; next: the
     * responder's new keypair, promoted when the initiator first uses it. */
    struct noise_keypair *current, *previous, *next;
    struct noise_keypair keypairs[3];     /* storage the three point into */
    struct peer_timers timers;
    uint16_t persistent_keepalive;        /* seconds, 0 = off (peer_set_persistent_keepalive) */
    uint64_t last_handshake_sent_ns;      /* monotonic, to pace initiations */
    struct timespec last_handshake;       /* wall clock of the last completion */
    /* How much sooner than REKEY_AFTER_TIME this session rekeys: drawn at
     * random per session, so that sessions made at once (a cluster
     * starting, a node joining) do not all rekey in the same second. */
    uint64_t rekey_early_ns;
    /* Initiations sent (retries too) and sessions made, either role: the
     * metrics' ddpnet_peer_handshakes_*_total. */
    uint64_t handshakes_sent, handshakes_completed;
    struct stage_queue staged;            /* packets waiting for a session (stage.h) */
    /* Packets waited PEER_STAGE_HOLD_SEC in vain, or the handshake gave
     * up: new ones are refused at once (ICMP unreachable) instead of held,
     * until a session comes up. */
    bool no_answer;
    /* Our latest initiation as sent (MACs aside), and when it was made:
     * punches send the same one again to every candidate. */
    uint8_t initiation[WG_INITIATION_LEN];
    uint64_t initiation_ns;
    /* When a cookie reply last made us send that initiation again at once
     * (at most once a second: a replayed reply buys nothing more). */
    uint64_t cookie_resent_ns;
};

/* Whether the peer is alive and what it moved: written by the core
 * (the counters by peer_count_rx/tx, reachable by handshake.c and
 * peer_give_up, last_data_ns by timers.c's data events, came_back set by
 * handshake.c and taken by disco_sched.c's discovery_session_up), read by
 * discovery for its pacing and by the control socket. */
struct peer_live {
    bool reachable;                       /* a session was made and not lost since */
    bool came_back;                       /* a session after none (or after giving up):
                                           * handshake.c sets it, discovery_session_up takes it */
    uint64_t last_sent_ns, last_received_ns;
    uint64_t last_data_ns;                /* data (not discovery) either way; 0: none yet */
    uint64_t rx_bytes, tx_bytes;          /* UDP payload bytes, as WireGuard counts */
    struct rate rx_rate, tx_rate;
    /* The rules' connections its packets made (filter.c), held to
     * CONNTRACK_PER_PEER (model/conntrack.h). */
    uint32_t conns;
};

/* Where its messages go: written by path.c (and at set-up by
 * device_setup.c and peer_create, peer.c; by the control socket's
 * peer_set_endpoint, peer.c; the path MTU search and frames_said's reset
 * by disco_io.c). via:
 * the peer our messages to this one go through (a relay), NULL when they
 * go to `endpoint`. */
struct peer_path {
    union endpoint endpoint;              /* sa_family AF_UNSPEC: none known */
    struct peer *via;
    uint64_t last_direct_ns;              /* last proven packet that came directly */
    /* The endpoint answered a challenge of ours (or the operator gave it):
     * until then, as a source that came only as WireGuard roams, nothing
     * of discovery's goes there but challenges (disco.h: unproven). */
    bool endpoint_proven;
    struct disco_unproven unproven;       /* the latest source not proven (path.c) */
    struct pmtu pmtu;                     /* the path's MTU, searched anew with each path */
    uint16_t pmtu_logged;                 /* what the log last said of it (0: nothing) */
    /* It takes relay frames (crypto/relay_frame.h) on the session whose
     * local index is frames_index: it said so (FEATURES) or sent one on
     * it. Per session, so that a restart into a version without them is
     * never sent one (path_takes_frames). data_frames: it takes data
     * frames too, on the same session (FEATURES, or it sent one). */
    bool frames_said;
    bool data_frames;
    uint32_t frames_index;
    /* Its receive steers by the shard hint (wg_const.h): it said so
     * (FEATURES) on the session whose local index is hints_index. */
    bool hints_said;
    uint32_t hints_index;
    /* Several underlay flows (path.c: path_flows), both per session, as
     * hints: flows_said, it takes messages from our extra source ports
     * (FEATURES, DISCO_FEAT_FLOWS) and flows_heard, it heard one
     * (DISCO_FEAT_FLOWS_HEARD), on the session whose local index is
     * flows_index. heard_index: the session of ours on which one of its
     * extra flows reached us (heard_any), which our FEATURES then say. */
    bool flows_said, flows_heard, heard_any;
    uint32_t flows_index, heard_index;
};

/* What discovery knows of it and said to it: written by discovery (paths/disco_*.c)
 * (state: disco.h's decisions; relays: trust.c's; `introduced` reset by
 * path.c when the endpoint moves) and by peer.c: the spread at
 * peer_create, a removed peer out of the others' relays (peer_remove),
 * the endpoints stale after peer_set_endpoint, hint_credit earned in
 * peer_count_rx. relays: peers that may
 * reach this one, tried end to end before one is used; hint_credit: what
 * this peer may make us send to addresses that never answered (what it
 * told us of others is paid from it; earned in peer_count_rx). */
struct peer_disco {
    struct disco_state state;
    struct disco_relays relays;
    uint32_t hint_credit;
    bool speaks_disco;                    /* it sent us a disco message: a ddpnet node */
    /* The names its machine goes by, as it told us (NAMES): written to the
     * hosts block when no one else claims them (membership/members.c). */
    uint8_t n_names;
    char names[DISCO_MAX_NAMES][DISCO_NAME_MAX + 1];
    bool introduced;                      /* to the others, since it came (back) */
    uint64_t introduced_ns;
    /* Its own addresses as its registry record gives them (discovery_node_hints):
     * every member has that record, so they count as listed too. */
    uint8_t n_recorded;
    struct disco_endpoint recorded[DISCO_MAX_LOCAL];
    /* What its holder said of its registry record on its session (enum
     * peer_record_said, the digest), and when its word last made
     * membership look again (record_checked_ns). */
    uint8_t record_said;
    uint8_t record_digest[DISCO_RECORD_LEN];
    uint64_t record_checked_ns;
    /* Its discovery deadline (disco_sched.c: set only through arm, so the
     * device's next_check_ns is never later): the earliest of its next
     * action and of the instants its facts change with time alone. */
    uint64_t due_ns;
    bool relay_good;                      /* as last looked at: a flip wakes the others */
};

/* Who it is in the cluster: written by membership (members.c,
 * endpoints.c) and in the engine by peer.c (peer_create; `listed` by
 * peer_set_endpoint), device_setup.c (`listed` at set-up) and
 * handshake.c (a stranger admitted on probation: `probation`,
 * `pending`); the rest of the engine reads it. */
struct peer_member {
    char name[CLUSTER_NAME_MAX + 1];
    struct cluster_addr address;          /* overlay address: the only allowed IP */
    /* Its groups, as bits of dev->cluster's rules (config/rules.h): set by
     * peer_create and, after every model swap, device_rules_changed. */
    uint64_t groups;
    /* The endpoint the cluster file, the registry or `wg set` gave it
     * (AF_UNSPEC: none): what every member knows of it already. */
    union endpoint listed;
    /* The hostname of its node's endpoint, asked of the resolver and not
     * answered yet (empty: none), and the port to use with the answer:
     * membership applies an answer only while this is still what its node
     * names (membership/members.h). */
    char resolving[CLUSTER_HOST_MAX + 1];
    uint16_t resolving_port;
    bool kept;                            /* stays through the change being applied */
    /* Its registry record (overlay/registry/vouch.h) is pending: one its
     * key holder has not stated yet -- a peer to make a handshake with,
     * neither routed to nor named, its data dropped. */
    bool pending;
    /* A stranger's key on probation (dev->probation): pending too, with
     * no address and no name of a member, taking disco CERT only; made
     * by the handshake (handshake.c), promoted or removed by membership.
     * cert_credit_ns/cert_at_ns: its CERT messages' token bucket
     * (membership's: each may cost a signature check). */
    bool probation;
    uint64_t cert_credit_ns, cert_at_ns;
    /* Our revocations said to it, paced (membership/revocations.h): the
     * next one (1 + its place; 0: none to say), when, and when the last
     * such round began. */
    uint16_t revoked_next;
    uint64_t revoked_due_ns, revoked_round_ns;
};

/* Lives in guarded memory (sodium_malloc): it holds the handshake and
 * session keys. Made and removed only by peer_create and peer_remove
 * (device_setup.h). */
struct peer {
    struct device *dev;
    disco_id id;                          /* this device's name for it in disco's records */
    uint8_t public_key[WG_KEY_LEN];
    struct peer_wg wg;
    struct peer_live live;
    struct peer_path path;
    struct peer_disco disco;
    struct peer_member member;
};

/* Counters, per core: each written where it happens, the drops once,
 * under their reason: the receive side's through rx_drop (model/drops.h:
 * the core's datapath.c, handshake.c, handlers.c, paths/' disco_recv.c
 * and path.c, device_pkt_get), the send side's through datapath.c's
 * tx_drop; the rest by the core and paths/' files (discovery's and
 * relays'). Read by the control socket and the metrics. With an engine
 * per core, one per shard, summed when shown. */
struct device_stats {
    uint64_t dropped_unknown_peer;        /* handshakes from keys not in the cluster */
    uint64_t cookies_to_strangers;        /* probation half full: a stranger asked to prove its source */
    uint64_t dropped_bad_packet;          /* malformed or not authentic */
    uint64_t dropped_replay;
    uint64_t dropped_source;              /* inner source not the peer's address */
    uint64_t dropped_pending;             /* data from a peer whose record is pending */
    uint64_t refused_unreachable;         /* to a peer that does not answer: ICMP sent */
    uint64_t refused_too_big;             /* larger than the path: ICMP "too big" sent */
    uint64_t dropped_unsendable;          /* for a peer, but not cut or not sealed (tx_drop) */
    uint64_t dropped_ratelimited;         /* handshakes over their source's rate */
    /* Refused by the rules (config/rules.h, filter.c): received from a
     * peer (dropped_rule), or read from ddp0 for one (refused_rule: ICMP
     * "administratively prohibited" sent back); those refused because
     * the connection table had no room are counted there too
     * (conntrack.full). */
    uint64_t dropped_rule, refused_rule;
    /* Batching, to see what the offloads buy: reads and the segments they
     * gave, receives and the datagrams they held, TUN writes. */
    uint64_t tun_reads, tun_segments, udp_receives, udp_datagrams, tun_writes;
    /* Discovery and relays: disco messages that did not decode or were
     * refused; messages forwarded for other peers (as a relay) and refused
     * (destination unknown or not directly reached). */
    uint64_t disco_bad, relay_forwarded, relay_refused;
    /* Relay frames sealed (to relays, or forwarded as one) and opened;
     * the data frames among them. */
    uint64_t relay_frames_sent, relay_frames_received;
    uint64_t relay_data_frames_sent, relay_data_frames_received;
    /* Disco messages sealed for and opened from peers, by type (enum
     * disco_type): what discovery costs, for the metrics. */
    uint64_t disco_visits;                /* peers whose disco deadline was looked at */
    uint64_t disco_sent[DISCO_TYPE_COUNT], disco_received[DISCO_TYPE_COUNT];
    /* What members' hints cost: bytes sent to addresses that had not
     * answered, sends refused for want of credit, relay trials that
     * failed and relays dropped because answers stopped. */
    uint64_t hint_bytes, hint_refused, relay_trials_failed, relay_dropped;
    /* Packets dropped for want of a free buffer in the pool. */
    uint64_t dropped_no_buffer;
    /* Dropped by the kernel before the daemon saw them: datagrams at our
     * UDP sockets, their receive buffer full (SO_RXQ_OVFL, counted as the
     * loop learns of them: handlers.c), and packets at ddp0's transmit
     * queue, applications' packets the daemon read too slowly (the link's
     * tx_dropped, read when asked: device_read_kernel_drops). */
    uint64_t dropped_socket_overflow, dropped_tun_queue;
    /* The queue management of our UDP sockets (loop/codel.h): data packets
     * that waited too long in a standing queue there, dropped (not
     * ECN-capable) or marked CE (ECN-capable) to slow their sender. */
    uint64_t dropped_queue_delay, ecn_marked;
};

/* This node's side of discovery (paths/disco_*.c): its local candidates, the
 * generation of what its ENDPOINTS say of itself (bumped when its local
 * candidates change: disco.h's disco_tick), scratch
 * space for the messages it builds, and messages it forwards as a relay,
 * gathered into one send per destination. */
/* Written by paths/ alone (disco_local.c the candidates, disco_due.c the
 * deadlines, disco_io.c the buffers; path.c the forwarding batch); the
 * buffers and the batch per core, the candidates and gen shared. */
#define DISCO_SCRATCH_LEN (DEVICE_PKT_CAP + DISCO_RELAY_OVERHEAD + 2 * WG_PADDING_MULTIPLE + \
                           WG_TRANSPORT_MIN_LEN)
struct disco_device {
    uint8_t n_local;
    struct disco_endpoint local[DISCO_MAX_LOCAL];
    uint64_t next_local_ns;
    uint64_t next_check_ns;               /* no peer's due_ns nor the device's is earlier */
    bool wake_all;                        /* a device-wide fact changed: every peer looked at */
    uint32_t gen;
    struct disco_msg *in_msg;             /* the message being handled */
    struct disco_msg *out_msg;            /* one being built */
    struct disco_msg *wrap_msg;           /* a relay wrapping being built */
    uint8_t *scratch;                     /* a sealed disco message */
    uint8_t *wrap;                        /* the same, wrapped for a relay */
    const struct core_ops *core;          /* the way back to the core (paths.h) */
    struct disco_bucket unanswered;       /* sends to addresses that never answered */
    /* Introductions (PUNCH) of keys we had no peer for (disco_intro.c). */
    struct disco_intro_keys intro_keys;
    /* What registry records may make us send to addresses that never
     * answered (DISCO_REGISTRY_CREDIT_*), and when it was last refilled. */
    uint32_t registry_credit;
    uint64_t registry_credit_ns;
    /* Where members see our packets come from (ENDPOINTS' observed): the
     * one we keep while some member says it again within DISCO_CAND_TTL_S. */
    bool has_observed;
    struct disco_endpoint observed;
    uint64_t observed_ns;
    struct pkt *fwd;                      /* forwarded messages not yet sent ... */
    struct peer *fwd_to;                  /* ... to this peer */
    bool fwd_frames;                      /* ... as relay frames (else RELAYEDs) */
};

struct membership;


struct device {
    /* --- shared, read-mostly: who this node is and the model it runs.
     * Set by the daemon and device_init (device_setup.c) at set-up; the
     * model swapped by membership (members.c) on a reload or a registry
     * snapshot; the cookie checker's secret turned by handshake.c. */
    char ifname[IFNAMSIZ];
    struct noise_local *local;
    struct cookie_checker checker;
    const struct cluster_node *self;
    struct cluster cluster;               /* the model it runs: the file's and registered nodes */
    /* --- membership's (membership/): its own state, out of the engine's
     * reach (membership/state.h; the daemon's, which owns it, or a
     * test's). Below, what membership tells the engine and what the
     * engine hands back: the names and record we state, probation, our
     * certificate and revocations, and the callbacks. The engine reads
     * these and writes only probation (handshake.c adds strangers) and
     * records_due_ns and records_checked_ns (paths/: disco_recv.c asks,
     * disco_sched.c calls records_changed). */
    struct membership *membership;
    /* The names this machine goes by (hostname, FQDN), told to every peer
     * unless `hostnames = off`; and what to call when a peer's change
     * (membership/members.h's members_write_hosts, from the daemon). */
    uint8_t n_self_names;
    char self_names[DISCO_MAX_NAMES][DISCO_NAME_MAX + 1];
    void (*names_changed)(struct device *dev);
    /* What to call after the model changed (membership/members.c): the
     * kernel's routes follow the grants (daemon/forward.h). NULL: none. */
    void (*routes_changed)(struct device *dev);
    /* Hostname endpoints are looked up here, off the loop
     * (loop/resolver.h; NULL: none, and such a peer waits to be reached);
     * membership (endpoints.c) asks, the daemon makes it. */
    struct resolver *resolver;
    /* This node's registry record as it joined, stated on every session
     * (RECORD) when it joined through the registry (states_record); and
     * what to call when a peer's word on its own record changes
     * (membership/members.h's members_recheck, from the daemon), from the
     * timers (disco_recv.c's record_word says why). */
    bool states_record;
    uint8_t self_record[DISCO_RECORD_LEN];
    void (*records_changed)(struct device *dev, uint64_t now);
    uint64_t records_due_ns;              /* when to call it (0: not asked) */
    uint64_t records_checked_ns;          /* when it was last called */
    /* Joining with no server (issue 33): strangers' keys whose handshake
     * was answered so they may present a certificate (the engine admits
     * them, only with an authority); this node's own certificate, said
     * to each peer on every session (NULL: none); and what a peer's CERT
     * is handed to (membership's members_cert_said, set by the daemon;
     * NULL: CERTs dropped). */
    struct probation probation;
    char *self_cert;
    /* The latest revocations this node took, said to each peer on every
     * session after our certificate (lines joined by '\n', at most
     * MEMBERS_REVOCATIONS_SAID; NULL: none), so that a member that was down
     * when one was passed on hears it. Membership's. */
    char *revocations_said;
    void (*cert_said)(struct peer *p, const char *text, size_t len, uint64_t now);
    /* A digest of every revocation held (DISCO_REVOKED), said to each peer
     * on every session after the latest (on: with an authority), and what
     * a peer's is handed to (membership's revocations_digest_said, set with
     * the store; NULL: dropped). Membership's. */
    bool revoked_digest_on;
    struct disco_revoked revoked_digest;
    void (*revoked_said)(struct peer *p, const struct disco_revoked *d, uint64_t now);
    /* Where members see us changed (disco.observed): the daemon puts it
     * in our registry record. NULL: nobody to tell. */
    void (*observed_changed)(struct device *dev);

    /* --- shared, read-mostly: the peers. Made and removed only by
     * membership through device_setup.h (peer_create, peer_remove) and
     * device_init; each peer's parts say their writers. */
    size_t n_peers;
    struct peer **peers;                  /* cluster order, self left out */
    disco_id next_peer_id;                /* the next peer's id (ids are never reused) */

    /* --- the daemon's, at set-up (daemon.c): sockets, ddp0, its MTU,
     * switches from the environment; read by the core and paths/. */
    uint16_t listen_port;
    int udp4_fd, udp6_fd, tun_fd;
    unsigned mtu;
    /* No relay frames: none said, sent or taken, as a version without
     * them ($DDPNET_RELAY_FRAMES=0; the daemon sets it). */
    bool relay_frames_off;
    /* The loops that run the data path (overlay/loop/shard.h; the daemon
     * sets it): above 1, FEATURES says that we steer by the shard hint. */
    unsigned shards;
    /* Underlay flows a peer's traffic may spread over (the daemon sets it:
     * DDPNET_FLOWS, the loop's extra source ports and the port's own; 0
     * or 1: one, today's). paths/path.c: path_flows. */
    unsigned flow_count;
    /* Frames, but no data frames said or sent (both types still taken),
     * as a version before them ($DDPNET_RELAY_FRAMES=whole). */
    bool data_frames_off;

    /* --- tables: the index table shared and read-mostly (written by
     * handshake.c and peer.c as sessions come and go, read by every
     * receive); the stage store, the rate limiter and the address map's
     * lookups the core's (the map installed by membership and
     * device_setup.c: device_map_install, device_remap). */
    struct index_table indices;
    /* Which shard each outgoing flow belongs to (flows.h): the engine's
     * (datapath.c), under the engine lock; used with shards only. */
    struct flows flows;
    /* The connections the rules let open (conntrack.h): the filter's
     * (filter.c), under the engine lock; its generation bumped by
     * device_rules_changed. */
    struct conntrack conntrack;
    struct stage_store stage;             /* packets of peers waiting for a session */
    struct ratelimit ratelimit;           /* handshake messages per source address */
    struct peer_map *by_address;          /* overlay address -> peer */
    /* The loop running the engine now: with one loop, the daemon's; with
     * shards, whichever shard holds the engine lock (loop.c writes it as
     * it takes the lock: loop_config.current), so a send or a buffer goes
     * through the ring and pool of the thread that asked. Read it only
     * under the lock, never keep it past a handler. */
    struct loop *loop;
    /* --- per core: the core's data path state (datapath.c, handshake.c,
     * timers.c), counters, the load test's window. */
    /* Receives being opened on a worker: one handled here meanwhile waits
     * for them (order); seals in flight it need not wait for. */
    unsigned opens_in_flight;
    struct device_stats stats;
    /* Handshake messages seen in the current second, for the load test. */
    uint64_t load_window_start_ns;
    unsigned load_window_count;
    uint64_t under_load_until_ns;
    uint64_t timers_next_ns;              /* no peer's deadline is earlier (timers.c) */
    /* --- the daemon's hooks (daemon.c, set at set-up; NULL in tests). */
    /* The kernel's MTU towards an underlay address (its route's, or what
     * ICMP taught it): the daemon's rtnetlink query. 0 or -errno; NULL:
     * none (tests), and the path MTU search relies on probes alone. */
    int (*route_mtu)(void *ctx, const union endpoint *to, unsigned *mtu);
    /* The packets the kernel dropped at ddp0's transmit queue since it was
     * made (its tx_dropped, over the same rtnetlink socket): 0 or -errno.
     * NULL: unknown (tests). */
    int (*tun_dropped)(void *ctx, uint64_t *n);
    /* Asks every loop's sockets for their drop counts now (with shards an
     * idle shard's socket tells none on its own: no receive brings the
     * news). Under the engine lock; NULL: none. */
    void (*sockets_dropped)(void *ctx);
    void *route_ctx;
    /* The receive buffer each UDP socket got, in the bytes of
     * `socket-buffer` (the kernel books twice as many); 0: unknown. */
    uint32_t socket_buffer;
    /* --- paths/' (struct disco_device says which file writes what). */
    struct disco_device disco;
};

/* Lookups for the control socket and the engine; NULL when none. */
struct peer *device_peer_by_key(struct device *dev, const uint8_t key[WG_KEY_LEN]);
/* Peer by its id (disco's records name peers so). */
struct peer *device_peer_by_id(struct device *dev, disco_id id);
/* A map for the peers peers[0..n) (ids set), made before a change of the
 * peers that must not fail halfway (membership), installed when they are
 * the device's: NULL when out of memory. */
struct peer_map *device_map_new(struct peer *const *peers, size_t n);
void device_map_install(struct device *dev, struct peer_map *m);
void device_map_free(struct peer_map *m);
/* The address map rebuilt from dev->peers (after peers were added or
 * removed, or an address changed): 0, or -ENOMEM with the old map kept. */
int device_remap(struct device *dev);
/* The endpoint of a node as the cluster file gives it when it is an IP
 * literal (AF_UNSPEC otherwise: hostnames are the daemon's to resolve). */
void device_node_endpoint(union endpoint *e, const struct cluster_node *n);
/* Refreshes stats.dropped_tun_queue from the kernel, for whoever is
 * about to show the counters (the control socket, the metrics). */
void device_read_kernel_drops(struct device *dev);
/* A pool buffer for a message that is dropped without one: NULL (counted
 * through rx_drop, RX_DROP_NO_BUFFER) when the pool is empty. */
struct pkt *device_pkt_get(struct device *dev);
/* Peer by overlay destination address of an inner packet. */
struct peer *device_peer_by_address(struct device *dev, int family, const uint8_t *addr);
/* The granted route holding addr (model/routes.h: its carrier, NULL when
 * it is ours), or NULL: asked only of addresses the map above has no
 * peer for. */
struct route_entry *device_route_at(struct device *dev, int family, const uint8_t *addr);
/* The whole table, for those who show it (NULL: none yet). */
const struct route_table *device_routes(const struct device *dev);

/* Changes made through the control socket (`wg set`). */
void peer_set_endpoint(struct peer *p, const struct sockaddr *sa, socklen_t len);
void peer_set_persistent_keepalive(struct peer *p, uint16_t seconds, uint64_t now_ns);
/* psk all zero removes it; takes effect at the next handshake. */
void peer_set_psk(struct peer *p, const uint8_t psk[WG_KEY_LEN]);

/* The path (path.c). Somewhere to send: an endpoint or a relay. */
bool path_usable(const struct peer *p);
/* The largest inner packet for p now: the MTU, less the relay's wrapping
 * when relayed, and no more than the path MTU found (pmtu.h) for a ddpnet
 * peer. */
unsigned path_mtu(const struct peer *p);
/* How many underlay flows p's data spreads over (flows.h's turn modulo
 * it; loop_send sends flow i from the i-th extra source port): the
 * device's flow_count where p is direct and said on its current session
 * that it takes them and heard one (FEATURES); else 1, today's one
 * 5-tuple (a stock WireGuard peer, a relay, a NAT that lets none in). */
unsigned path_flows(const struct peer *p);

/* Whether p has a keypair to send with now: a read of its session, for
 * the core and for paths and discovery alike. */
static inline bool peer_can_send(const struct peer *p, uint64_t now)
{
    const struct noise_keypair *kp = p->wg.current;

    return kp && kp->send_counter < WG_REJECT_AFTER_MESSAGES && !transport_expired(kp, now);
}

/* A rate as of now: the last full window's, or 0 once traffic stopped. */
uint64_t rate_read(const struct rate *r, uint64_t now_ns);

#endif
