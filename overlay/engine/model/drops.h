/* SPDX-License-Identifier: MIT */
/* The receive side's drops: every message the engine received (or the
 * kernel dropped before the daemon saw it) that goes no further leaves
 * through rx_drop, which counts it once under its reason, in the one
 * counter of struct device_stats (device.h) that the reason names. The
 * send side's are datapath.c's tx_drop; packets waiting for a session
 * that give up are the staging store's (stage.h's stats).
 *
 * Owner: per core. rx_drop writes dev->stats alone, on the thread that
 * received the message; it releases no buffer (whoever holds one puts it
 * back) and calls nothing. */
#ifndef DDPNET_DROPS_H
#define DDPNET_DROPS_H

#include <stdint.h>

struct device;

/* Why a received message goes no further, and the counter it is counted
 * in. Several reasons may share a counter (the metrics' reasons are
 * coarser than the code's); no reason is counted in two. */
enum rx_drop {
    RX_DROP_BAD,           /* malformed, not authentic, no such keypair or index,
                            * stale, a handshake message that fails: dropped_bad_packet */
    RX_DROP_REPLAY,        /* a counter seen already: dropped_replay */
    RX_DROP_SOURCE,        /* the inner source is not the sender's address: dropped_source */
    RX_DROP_PENDING,       /* data from a peer whose record is pending: dropped_pending */
    RX_DROP_UNKNOWN_PEER,  /* an initiation from a key not in the cluster (nor taken
                            * on probation): dropped_unknown_peer */
    RX_DROP_RATELIMITED,   /* a handshake message over its source's rate: dropped_ratelimited */
    RX_DROP_DISCO,         /* a disco message that does not decode, is not to us, or is
                            * of a type not acted on: disco_bad */
    RX_DROP_STRANGER,      /* a stranger's disco message other than its CERT: disco_bad */
    RX_DROP_TWO_HOPS,      /* a RELAY or RELAYED that came through a relay (no chains
                            * of relays): relay_refused */
    RX_DROP_UNFORWARDABLE, /* a message to forward, as the relay (a RELAY's or a relay
                            * frame's: path_forward), whose destination is not another
                            * member reached directly (or either end is on probation),
                            * or that does not fit its wrapping: relay_refused */
    RX_DROP_NO_BUFFER,     /* the packet pool empty when a message needed a buffer of
                            * its own (device_pkt_get: a handshake or relayed message
                            * taken out of a receive, a forward; an initiation or relay
                            * wrapping we send counts here too): dropped_no_buffer */
    RX_DROP_SOCKET_OVERFLOW, /* datagrams the kernel dropped at our UDP sockets, their
                              * receive buffer full (SO_RXQ_OVFL, as the loop tells:
                              * handlers.c): dropped_socket_overflow */
    RX_DROP_QUEUE_DELAY,   /* a data packet dropped to tell its sender our socket holds a
                            * standing queue (loop/codel.h; one that takes ECN is marked
                            * instead): dropped_queue_delay */
    RX_DROP_RULE,          /* a data packet no rule lets in, nor an allowed connection's
                            * (config/rules.h, filter.c): dropped_rule */
    RX_DROP_COUNT
};

/* Counts n messages dropped for why. */
void rx_drop(struct device *dev, enum rx_drop why, uint64_t n);

#endif
