/* The engine's internal calls between its parts: peers and their keypairs
 * (peer.c), handshakes (handshake.c), the data path (datapath.c), paths
 * and relays (path.c), discovery (disco_io.c, disco_local.c; its decisions
 * are disco.h's) and the I/O the event loop performs for them (loop.c).
 * Not for the control socket or the CLI, which use device.h. */
#ifndef DDPNET_ENGINE_H
#define DDPNET_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "overlay/engine/device.h"
#include "overlay/loop/loop.h"
#include "overlay/loop/pkt.h"

/* --- peer.c ---------------------------------------------------------------- */
struct peer *peer_new(struct device *dev, const struct cluster_node *node);
void peer_free(struct peer *p);
/* Installs a keypair just derived (copied from kp, which is wiped): as the
 * initiator it becomes current; as the responder it waits as next until
 * the initiator uses it. Indices of dropped keypairs are released. */
void peer_install_keypair(struct peer *p, struct noise_keypair *kp);
/* A transport message opened with kp: promotes next to current. Returns
 * true when that happened (the handshake is then complete for us). */
bool peer_received_with_keypair(struct peer *p, struct noise_keypair *kp);
/* Forgets every keypair and the handshake in progress. */
void peer_clear_keys(struct peer *p);
/* Staged packets wait for a session, copied into the device's stage
 * store (stage.h: bounded per peer and in total; the oldest give way),
 * for PEER_STAGE_HOLD_SEC at most. peer_stage copies len bytes as ddp0
 * gave them (vnet header and packet; 0 bytes: a keepalive); 0 or -errno.
 * peer_unstage moves the oldest to out (stage_pop's returns). */
int peer_stage(struct peer *p, const uint8_t *data, uint32_t len, uint64_t now);
long peer_unstage(struct peer *p, uint8_t *out, size_t cap);
void peer_drop_staged(struct peer *p);
/* The peer does not answer (why: for the log, which warns once until a
 * session comes up again): its staged packets are dropped, and new ones
 * refused at once until a session comes up. */
void peer_give_up(struct peer *p, const char *why, uint64_t now);
/* Records the source of an authenticated packet as the endpoint; true
 * when it changed. */
bool peer_update_endpoint(struct peer *p, const union endpoint *src);
void peer_count_rx(struct peer *p, uint64_t bytes, uint64_t now);
void peer_count_tx(struct peer *p, uint64_t bytes, uint64_t now);
/* Whether p has a keypair to send with now. */
bool peer_can_send(const struct peer *p, uint64_t now);

/* --- handshake.c ------------------------------------------------------------- */
/* Sends an initiation unless one went out less than REKEY_TIMEOUT ago. */
void handshake_send_initiation(struct peer *p, bool is_retry, uint64_t now);
/* A new initiation now, whatever the pacing: on the path and to every
 * candidate (disco's attempts and relay switches). */
void handshake_initiate(struct peer *p, uint64_t now);
/* A punch: the initiation in progress again (a new one when it is older
 * than REKEY_TIMEOUT or was answered), on the path and to every candidate. */
void handshake_punch(struct peer *p, uint64_t now);
/* Whether a datagram msg[0..len) of type 1, 2 or 3 from src (a relay's
 * address, for a relayed one) is to be handled, decided on its bytes
 * where they lie: its size, mac1, and its source's rate (ratelimit.h;
 * this takes a token). Counts what it drops. Call before taking a
 * buffer for it. */
bool handshake_admit(struct device *dev, const uint8_t *msg, uint32_t len,
                     const union endpoint *src, uint64_t now);
/* An admitted datagram in pkt->in (pkt->len bytes; pkt->addr its source,
 * pkt->via and pkt->relay_src when relayed): a cookie reply when we are
 * under load and it has no valid mac2, else handled. Takes pkt. */
void handshake_receive(struct device *dev, struct pkt *pkt, uint64_t now);

/* --- datapath.c --------------------------------------------------------------- */
/* A read from the TUN device: vnet header and packet in pkt->in, pkt->len
 * bytes. Takes pkt. */
void datapath_from_tun(struct device *dev, struct pkt *pkt, uint64_t now);
/* A UDP receive: pkt->len bytes in pkt->in, datagrams of seg_size bytes
 * back to back (GRO; the last may be shorter). Takes pkt. */
void datapath_from_udp(struct device *dev, struct pkt *pkt, uint32_t seg_size, uint64_t now);
/* A session and a path to send on now. */
bool datapath_ready(const struct peer *p, uint64_t now);
/* Sends the staged packets, or starts a handshake when no session is
 * usable. */
void datapath_send_staged(struct peer *p, uint64_t now);
/* Seals pkt's segments with kp for p (counters taken now, padding held to
 * pad_limit; the AEAD on a worker when there are some) and sends them on
 * p's path once sealed. False, pkt untouched, when kp cannot seal them. */
bool datapath_seal(struct peer *p, struct noise_keypair *kp, struct pkt *pkt,
                   uint32_t pad_limit, uint64_t now);
void datapath_send_keepalive(struct peer *p, uint64_t now);

/* Takes back a job the crypto workers finished (in submission order). */
struct crypto_job;
void datapath_crypto_done(struct device *dev, struct crypto_job *job, uint64_t now);

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
/* Switches p to the direct path at ep (proven: it answered us), or to
 * the relay r. */
void path_use_direct(struct peer *p, const union endpoint *ep, uint64_t now);
void path_use_relay(struct peer *p, struct peer *r, uint64_t now);
/* Whether p takes relay frames on its current session (it said so on
 * it), and what says so: FEATURES with the flag, or a frame, that came on
 * p's session with local index `index`. */
bool path_takes_frames(const struct peer *p);
void path_frames_said(struct peer *p, uint32_t index);
/* As a relay: forwards msg[0..len), a WireGuard message from `from`, to
 * `to` in a frame, or as RELAYED (gathered per destination; sent by
 * path_flush). The caller has checked that it is one (disco_enclosed_ok:
 * frame_in; the RELAY it came in was decoded only if it is). */
void path_forward(struct device *dev, struct peer *from, struct peer *to, const uint8_t *msg,
                  uint32_t len, uint64_t now);
void path_flush(struct device *dev, uint64_t now);

/* --- disco_io.c: the disco messages and the schedule carried out ------------------- */
int disco_init(struct device *dev);
void disco_destroy(struct device *dev);
/* A session with p began (either role). Returns true when something went
 * out to p (which then confirms the session to a responder). */
bool disco_session_up(struct peer *p, uint64_t now);
/* p's endpoint answered a challenge (path.c): what could not go there
 * while it was not proven goes now (ENDPOINTS; p introduced to the
 * others). */
void disco_endpoint_proven(struct peer *p, uint64_t now);
/* A handshake is due, or p's path stopped answering: unless its session
 * works, an attempt begins (punches, then a relay) when p has candidates
 * or a relay. sent: an initiation just went out, the first punch. */
void disco_want_session(struct peer *p, bool sent, uint64_t now);
/* A session with p that works: a keypair, and the peer heard from lately
 * (and answering pings, if it speaks disco). */
bool disco_working(const struct peer *p, uint64_t now);
/* How seldom an idle peer is pinged (s; 0: not idle). */
unsigned disco_idle_ping_s(const struct peer *p, uint64_t now);
/* Whether p has candidates to aim at. */
bool disco_has_targets(const struct peer *p);
/* p's authentic packet came from src: that candidate answers. */
void disco_note_answer(struct peer *p, const union endpoint *src, uint64_t now);
/* Sends msg[0..len) (an initiation) to each of p's candidates at once,
 * those that never answered only as far as their informants' credit
 * goes (trust.c); returns how many went out. */
unsigned disco_spray(struct peer *p, const uint8_t *msg, uint32_t len, uint64_t now);
/* A disco message from p (decoded from an authentic inner packet), which
 * came from src or through via. RELAYED is the data path's; everything
 * else is handled here. */
void disco_receive(struct peer *p, const union endpoint *src, struct peer *via,
                   const struct disco_msg *m, uint64_t now);
/* Runs the due disco deadlines of the device and its peers; returns the
 * next one. Between deadlines it looks at nothing (the loop calls it on
 * every turn): whatever brings a deadline forward calls disco_wake. */
uint64_t disco_run_timers(struct device *dev, uint64_t now);
void disco_wake(struct device *dev);
/* One peer's due deadlines, now. */
void disco_timers(struct peer *p, uint64_t now);
/* What node's registry record says of where it may be reached (its
 * candidates and observed address; membership calls this for a new peer
 * and when they change): hints for p, paid from the registry's credit
 * until they answer (the record may be anyone's word). */
void disco_node_hints(struct peer *p, const struct cluster_node *node, uint64_t now);
/* Reads the interface addresses: this node's local candidates (disco_local.c). */
void disco_local_refresh(struct device *dev, uint64_t now);

/* --- handlers.c ---------------------------------------------------------------- */
/* Fills what the loop calls on UDP receives, TUN reads, finished crypto
 * jobs and timers, with dev as the context (the control socket's handlers
 * are the caller's). */
void engine_loop_handlers(struct device *dev, struct loop_handlers *h);

#endif
