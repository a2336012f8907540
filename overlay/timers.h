/* WireGuard's timers (whitepaper 6), as events the data path reports and
 * deadlines the event loop runs. Each peer has five deadlines
 * (struct peer_timers, monotonic ns, 0 = off):
 *
 *   retransmit_handshake  REKEY_TIMEOUT + jitter after an initiation without
 *                         answer: send another, give up after
 *                         MAX_TIMER_HANDSHAKES
 *   send_keepalive        KEEPALIVE_TIMEOUT after data came in and nothing
 *                         went out: send an empty packet
 *   new_handshake         KEEPALIVE + REKEY_TIMEOUT after data went out and
 *                         nothing authenticated came back: start over
 *   zero_key_material     3 * REJECT_AFTER_TIME after the last session was
 *                         made: forget every key
 *   persistent_keepalive  the configured interval after any packet: send an
 *                         empty packet (keeps NAT mappings open)
 */
#ifndef DDPNET_TIMERS_H
#define DDPNET_TIMERS_H

#include <stdint.h>

struct peer;

void timers_data_sent(struct peer *p, uint64_t now);
void timers_data_received(struct peer *p, uint64_t now);
void timers_any_authenticated_packet_sent(struct peer *p, uint64_t now);
void timers_any_authenticated_packet_received(struct peer *p, uint64_t now);
void timers_any_authenticated_packet_traversal(struct peer *p, uint64_t now);
void timers_handshake_initiated(struct peer *p, uint64_t now);
void timers_handshake_complete(struct peer *p, uint64_t now);
void timers_session_derived(struct peer *p, uint64_t now);
void timers_stop(struct peer *p);

/* Runs the peer's expired deadlines. */
void timers_run(struct peer *p, uint64_t now);
/* The earliest armed deadline of the peer, or UINT64_MAX. */
uint64_t timers_next(const struct peer *p);

#endif
