/* SPDX-License-Identifier: MIT */
/* The WireGuard core's internal calls between its parts: peers and their
 * keypairs (peer.c), handshakes (handshake.c), the data path (datapath.c),
 * WireGuard's timers (timers.h) and what it registers with the event loop
 * (handlers.c). The core calls paths and discovery (paths.h) directly;
 * they call it back only through the struct core_ops it hands them
 * (engine_core_ops), never through this header (tests/check_layers.sh).
 * Not for the control socket or the CLI, which use device.h. */
#ifndef DDPNET_ENGINE_H
#define DDPNET_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "overlay/engine/model/device.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/paths/paths.h"
#include "overlay/loop/loop.h"
#include "overlay/loop/pkt.h"

/* --- peer.c ---------------------------------------------------------------- */
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
void peer_count_rx(struct peer *p, uint64_t bytes, uint64_t now);
void peer_count_tx(struct peer *p, uint64_t bytes, uint64_t now);
/* An authenticated message of `bytes` went out to p (0: counted already):
 * counts it and fires timers.h's sent-events (data: it carries data).
 * struct core_ops's sent. */
void peer_sent(struct peer *p, uint64_t bytes, bool data, uint64_t now);

/* --- handshake.c ------------------------------------------------------------- */
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

/* Finishes a crypto job that ran (deferred.h; in submission order). */
struct crypto_job;
void datapath_crypto_done(struct device *dev, struct crypto_job *job, uint64_t now);

/* --- handlers.c (engine_loop_handlers: device_setup.h) ------------------------- */
/* What the core hands paths and discovery (paths.h: discovery_init). */
extern const struct core_ops engine_core_ops;

#endif
