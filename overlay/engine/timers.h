/* SPDX-License-Identifier: MIT */
/* WireGuard's timers (whitepaper 6), as events the data path reports and
 * deadlines the event loop runs. Each peer has six deadlines
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
 *   stage_expiry          PEER_STAGE_HOLD_SEC after a packet was staged
 *                         without a session: send them if one came, else
 *                         give up (drop them, refuse new ones until a
 *                         session comes up; ddpnet's, not WireGuard's)
 */
#ifndef DDPNET_TIMERS_H
#define DDPNET_TIMERS_H

#include <stdint.h>

struct device;
struct peer;

/* The events, after the Linux module's timers.c and wireguard-go's
 * timers.go. Each is called right after what it names happened, and only
 * then: a caller that sent nothing fires no sent-event. */

/* After a transport message carrying data (not a keepalive, not a disco
 * message: those expect no data back) went out to p. Arms new_handshake. */
void timers_data_sent(struct peer *p, uint64_t now);
/* After a transport message carrying data from p was opened and accepted.
 * Arms send_keepalive. */
void timers_data_received(struct peer *p, uint64_t now);
/* After any authenticated message went out to p: transport (data,
 * keepalive, disco) or handshake. Cancels send_keepalive. */
void timers_any_authenticated_packet_sent(struct peer *p, uint64_t now);
/* After any authenticated message from p was accepted: transport or
 * handshake. Cancels new_handshake. */
void timers_any_authenticated_packet_received(struct peer *p, uint64_t now);
/* After any authenticated message went out to p or came from p. Re-arms
 * persistent_keepalive. */
void timers_any_authenticated_packet_traversal(struct peer *p, uint64_t now);
/* After an initiation was made (whether or not a path took it). Arms
 * retransmit_handshake. */
void timers_handshake_initiated(struct peer *p, uint64_t now);
/* After a handshake completed on our side: a response consumed, or the
 * first transport message under the keypair we answered with. Cancels
 * retransmit_handshake, resets the attempts. */
void timers_handshake_complete(struct peer *p, uint64_t now);
/* After a new keypair was installed (either role). Arms
 * zero_key_material. */
void timers_session_derived(struct peer *p, uint64_t now);

/* After a packet was staged for p (it waits for a session). Arms
 * stage_expiry unless armed. */
void timers_staged(struct peer *p, uint64_t now);
/* After p's persistent keepalive interval was set (0: off). */
void timers_persistent_keepalive_set(struct peer *p, uint64_t now);

/* Runs the peer's expired deadlines. */
void timers_run(struct peer *p, uint64_t now);
/* Runs every peer's expired deadlines, looking at the peers only when the
 * device's earliest deadline has come; returns the next one (UINT64_MAX:
 * none). */
uint64_t timers_run_device(struct device *dev, uint64_t now);
/* The earliest armed deadline of the peer, or UINT64_MAX. */
uint64_t timers_next(const struct peer *p);

#endif
