/* SPDX-License-Identifier: MIT */
/* Paths and discovery: the room beside the WireGuard core, a folder of
 * its own (overlay/engine/paths/: path.c, disco_io.c, disco_intro.c,
 * disco_recv.c, disco_sched.c, disco_due.c, disco_relay.c, disco_local.c; their calls
 * among themselves in disco_int.h). It decides where a peer's sealed messages
 * go (direct or through a relay), relays for others, and speaks disco on
 * the sessions the core makes.
 *
 * The seam, one way: the core (engine.h: peer.c, handshake.c,
 * datapath.c, timers.c) calls what this header declares -- "send these
 * sealed messages to this peer" (path_send), "authenticated traffic from
 * this peer came via this source" (path_received, discovery_receive). This
 * room reaches the core back only through the struct core_ops the core
 * hands discovery_init; it includes model/device.h (the shared model, a
 * room below both) and this header, never engine.h or timers.h (tests/check_layers.sh fails if it
 * does, or if it names a core function). */
#ifndef DDPNET_PATHS_H
#define DDPNET_PATHS_H

#include <stdbool.h>
#include <stdint.h>

#include "overlay/engine/model/device.h"
#include "overlay/base/wire.h"
#include "overlay/loop/loop.h"
#include "overlay/loop/pkt.h"

/* The IP header of the inner packets that carry disco messages and
 * wrapped relay messages (between overlay addresses: this node's family). */
static inline size_t path_inner_ip_len(const struct device *dev)
{
    return wire_ip_header_len(dev->self->address.family == AF_INET6);
}

/* What the tunnel adds to an inner packet on a direct path over IPv6 (v6)
 * or IPv4: the outer IP and UDP headers and a transport message's own. */
static inline unsigned path_tunnel_overhead(bool v6)
{
    return (unsigned)(wire_ip_header_len(v6) + UDP_HEADER_LEN + WG_TRANSPORT_MIN_LEN);
}

/* --- the core's operations, as this room may call them -------------------------- */
struct core_ops {
    /* Seals pkt's segments with kp for p and sends them on p's path once
     * sealed, counting the bytes (datapath_seal). False, pkt untouched,
     * when kp cannot seal them. */
    bool (*seal)(struct peer *p, struct noise_keypair *kp, struct pkt *pkt, uint32_t pad_limit,
                 uint64_t now);
    /* An authenticated message of `bytes` went out to p (0: counted
     * already, by seal); data: it carries data, so an answer is due
     * (timers.h's sent-events). Called once per send, not per message. */
    void (*sent)(struct peer *p, uint64_t bytes, bool data, uint64_t now);
    /* Handshakes (handshake.c): an initiation unless one went out less
     * than REKEY_TIMEOUT ago; a new one now on the path and to every
     * candidate; a punch (the one in progress again, to every candidate). */
    void (*send_initiation)(struct peer *p, bool is_retry, uint64_t now);
    void (*initiate)(struct peer *p, uint64_t now);
    void (*punch)(struct peer *p, uint64_t now);
};

/* --- path.c: where a peer's messages go ---------------------------------------------
 * A peer is reached directly (UDP to its endpoint) or through a relay (its
 * messages in relay frames on our session with the relay, which forwards
 * them in frames on its session with the peer; to and from a node that
 * does not take frames, wrapped in disco RELAY and RELAYED messages). */
enum disco_path path_of(const struct peer *p);
/* Direct, with an endpoint. */
bool path_direct(const struct peer *p);
/* The path as a log line says it: "direct at ADDR:PORT", "via relay
 * NAME" or "no path". */
void path_format(const struct peer *p, char *buf, size_t len);
/* Whether path_mtu is more than a safe guess: relayed (the wrapping is
 * known), or a search ended. Larger packets then get ICMP "too big". */
bool path_mtu_known(const struct peer *p);
/* The path changed (or a session began on it): its MTU is searched anew. */
void path_mtu_search(struct peer *p, uint64_t now);
/* A relay that can carry messages now: reached directly, with a session. */
bool path_relay_ready(const struct peer *r, uint64_t now);
/* Sends pkt's sealed messages (as loop_send) on p's path; takes pkt. */
void path_send(struct peer *p, struct pkt *pkt, uint64_t now);
/* Sends the one message of len bytes at pkt->area on p's path; takes pkt. */
void path_send_message(struct peer *p, struct pkt *pkt, uint32_t len, uint64_t now);
/* Wraps the message msg[0..len) for the peer with key dst in a RELAY and
 * sends it through r at once (no buffer of the pool). 0 or -errno. */
int path_relay_now(struct peer *r, const uint8_t dst[WG_KEY_LEN], const uint8_t *msg,
                   uint32_t len, uint64_t now);
/* An authentic message of len bytes from p came from src (UDP) or, when
 * via is not NULL, through via. From a proven src (path_proven): a
 * handshake message, or a confirmed direct packet, moves a relayed peer to
 * the direct path; other direct packets do not (the peer may only be
 * probing). From another src: nothing moves but as WireGuard roams (a
 * stock peer, or one with no path), and src is to be challenged, its len
 * bytes credited to it (disco.h: unproven; len 0 where the message was
 * counted already). Through a relay: p moves to it only when it was on
 * trial (the message answers one we sent through it). */
void path_received(struct peer *p, const union endpoint *src, struct peer *via, uint32_t len,
                   bool confirmed, uint64_t now);
/* src is p's endpoint, and that answered us (or the operator gave it). */
bool path_proven(const struct peer *p, const union endpoint *src);
/* Whether len bytes may go to `to`: free when proven, else paid from what
 * came from it (disco_unproven_spend). */
bool path_unproven_spend(struct peer *p, const union endpoint *to, uint32_t len);
/* The relay in use stopped carrying p's answers: it failed (trust.c),
 * and p has no relay until another is tried. */
void path_drop_relay(struct peer *p, uint64_t now);
/* The relay on trial for p (to send a copy of each initiation through),
 * or NULL. */
struct peer *path_relay_trial(struct peer *p, uint64_t now);
/* A handshake message from p came through the relay via: the relay to
 * answer through (put on trial: p's next message through it confirms
 * it), or NULL when the answer takes p's path. */
struct peer *path_answer_through(struct peer *p, struct peer *via, uint64_t now);
/* Records the source of an authenticated packet as p's endpoint (logged
 * when it moves); true when it changed. Proof and relays are the
 * callers'. */
bool path_set_endpoint(struct peer *p, const union endpoint *src);
/* Switches p to the direct path at ep (proven: it answered us), or to
 * the relay r. */
void path_use_direct(struct peer *p, const union endpoint *ep, uint64_t now);
void path_use_relay(struct peer *p, struct peer *r, uint64_t now);
/* Whether p takes relay frames on its current session (it said so on
 * it), and what says so: FEATURES with the flag, or a frame, that came on
 * p's session with local index `index`. data: it takes data frames too
 * (FEATURES with that flag, or a data frame); FEATURES without it say it
 * does not, a 0x44 frame says nothing of them. */
bool path_takes_frames(const struct peer *p);
void path_frames_said(struct peer *p, uint32_t index, bool data);
/* As a relay: forwards msg[0..len), a WireGuard message from `from`, to
 * `to` in a frame, or as RELAYED (gathered per destination; sent by
 * path_flush). The caller has checked that it is one (disco_enclosed_ok:
 * frame_in; the RELAY it came in was decoded only if it is). */
void path_forward(struct device *dev, struct peer *from, struct peer *to, const uint8_t *msg,
                  uint32_t len, uint64_t now);
/* Writes at out the inner IP packet from this node to `to` that carries
 * m: a disco message as it is sealed into a transport message to `to`
 * (seal_disco), or a RELAY/RELAYED on its way to a relay. Returns its
 * length or a negative errno. */
int path_disco_packet(const struct device *dev, const struct peer *to, const struct disco_msg *m,
                      uint8_t *out, size_t cap);

/* --- what membership and the daemon call too (through device_setup.h) ------------- */
/* Sends what the relay gathered for others (path.c). */
void path_flush(struct device *dev, uint64_t now);
/* A fact of the whole device changed (the members, its own candidates):
 * discovery_run_timers (paths.h) looks at every peer on the loop's next
 * turn. A change to one peer's facts arms that peer (discovery_arm). */
void discovery_wake(struct device *dev);
/* What node's registry record says of where it may be reached (its
 * candidates and observed address; membership calls this for a new peer
 * and when they change): hints for p, paid from the registry's credit
 * until they answer (the record may be anyone's word). */
void discovery_node_hints(struct peer *p, const struct cluster_node *node, uint64_t now);
/* Sends one statement of the authority (a certificate or revocation,
 * its text line) to p in a disco CERT (disco_io.c); what a peer that
 * predates CERT drops as an unknown type. */
void discovery_send_cert(struct peer *p, const char *text, size_t len, uint64_t now);
/* We leave the registry (`down`): our record's digest said as none (all
 * zeros) on every session, so that the peers remove us as our record
 * goes, without the grace a lost lease gets (registry/vouch.h). */
void discovery_say_leaving(struct device *dev, uint64_t now);
/* A stranger on probation became a member (membership's promotion): what
 * its probation put off comes now -- our ENDPOINTS (where the members
 * are), and its introduction to the peers we reach. */
void discovery_promoted(struct peer *p, uint64_t now);
/* Reads the interface addresses: this node's local candidates (disco_local.c). */
void discovery_local_refresh(struct device *dev, uint64_t now);

/* --- disco_*.c: the disco messages and the schedule carried out ------------------- */
/* Sets up this room's state in dev; core: how it reaches the core back
 * (kept for the device's life). 0 or -ENOMEM. */
int discovery_init(struct device *dev, const struct core_ops *core);
void discovery_destroy(struct device *dev);
/* A session with p began (either role). Returns true when something went
 * out to p (which then confirms the session to a responder). */
bool discovery_session_up(struct peer *p, uint64_t now);
/* p's endpoint answered a challenge (path.c): what could not go there
 * while it was not proven goes now (ENDPOINTS; p introduced to the
 * others). */
void discovery_endpoint_proven(struct peer *p, uint64_t now);
/* A handshake is due, or p's path stopped answering: unless its session
 * works, an attempt begins (punches, then a relay) when p has candidates
 * or a relay. sent: an initiation just went out, the first punch. */
void discovery_want_session(struct peer *p, bool sent, uint64_t now);
/* A session with p that works: a keypair, and the peer heard from lately
 * (and answering pings, if it speaks disco). */
bool discovery_working(const struct peer *p, uint64_t now);
/* How seldom an idle peer is pinged (s; 0: not idle). */
unsigned discovery_idle_ping_s(const struct peer *p, uint64_t now);
/* Whether p has candidates to aim at. */
bool discovery_has_targets(const struct peer *p);
/* p's authentic packet came from src: that candidate answers. */
void discovery_note_answer(struct peer *p, const union endpoint *src, uint64_t now);
/* Sends msg[0..len) (an initiation) to each of p's candidates at once,
 * those that never answered only as far as their informants' credit
 * goes (trust.c); returns how many went out (the caller counts them). */
unsigned discovery_spray(struct peer *p, const uint8_t *msg, uint32_t len, uint64_t now);
/* A disco message from p (decoded from an authentic inner packet), which
 * came from src or through via, authenticated on p's session kp (what it
 * says of a session, FEATURES, it says of that one). RELAYED is the data
 * path's; everything else is handled here. */
void discovery_receive(struct peer *p, const struct noise_keypair *kp, const union endpoint *src,
                       struct peer *via, const struct disco_msg *m, uint64_t now);
/* An authentic message from p came directly on one of its extra flows
 * (byte 3, wg_const.h), on its session kp: no roam (its source is one of
 * p's other ports, not where p is); the first on p's current session is
 * told back at once (FEATURES with FLOWS_HEARD), so that p spreads. */
void discovery_flow_heard(struct peer *p, const struct noise_keypair *kp, uint64_t now);
/* The timer model is WireGuard's (timers.h): each peer has one discovery
 * deadline (p->disco.due_ns), the earliest of its next action and of the
 * instants its facts change with time alone (a keypair ageing, answers
 * stopping, the peer going idle), set through one function that lowers
 * the device's earliest (disco.next_check_ns). An event that changes a
 * peer's facts arms that peer (discovery_arm); one that changes a fact of
 * the device (its candidates, the members) wakes every peer
 * (discovery_wake, device_setup.h).
 *
 * Runs the device's due disco deadlines and visits only the peers whose
 * deadline has come (stats.disco_visits counts them); returns the next
 * one. Between deadlines it looks at nothing (the loop calls it on every
 * turn). */
uint64_t discovery_run_timers(struct device *dev, uint64_t now);
/* Brings p's discovery deadline forward to when (0: the loop's next turn)
 * unless it is earlier already: its facts changed. */
void discovery_arm(struct peer *p, uint64_t when);
/* One peer's due deadlines, now. */
void discovery_timers(struct peer *p, uint64_t now);


#endif
