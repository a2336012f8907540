/* The engine's internal calls between its parts: peers and their keypairs
 * (peer.c), handshakes (handshake.c), the data path (datapath.c) and the
 * I/O the event loop performs for them (loop.c). Not for the control
 * socket or the CLI, which use device.h. */
#ifndef DDPNET_ENGINE_H
#define DDPNET_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "overlay/device.h"
#include "overlay/pkt.h"

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
/* Staged packets wait for a session; the oldest is dropped when full. */
void peer_stage(struct peer *p, struct pkt *pkt);
struct pkt *peer_unstage(struct peer *p);
void peer_drop_staged(struct peer *p);
/* Records the source of an authenticated packet as the endpoint. */
void peer_update_endpoint(struct peer *p, const union endpoint *src);
void peer_count_rx(struct peer *p, uint64_t bytes, uint64_t now);
void peer_count_tx(struct peer *p, uint64_t bytes, uint64_t now);
/* Peer by overlay destination address of an inner packet. */
struct peer *device_peer_by_address(struct device *dev, int family, const uint8_t *addr);

/* --- handshake.c ------------------------------------------------------------- */
/* Sends an initiation unless one went out less than REKEY_TIMEOUT ago. */
void handshake_send_initiation(struct peer *p, bool is_retry, uint64_t now);
/* A datagram of type 1, 2 or 3 from src. Takes ownership of pkt. */
void handshake_receive(struct device *dev, struct pkt *pkt, uint64_t now);

/* --- datapath.c --------------------------------------------------------------- */
/* A read from the TUN device: vnet header and packet in pkt->in, pkt->len
 * bytes. Takes pkt. */
void datapath_from_tun(struct device *dev, struct pkt *pkt, uint64_t now);
/* A UDP receive: pkt->len bytes in pkt->in, datagrams of seg_size bytes
 * back to back (GRO; the last may be shorter). Takes pkt. */
void datapath_from_udp(struct device *dev, struct pkt *pkt, uint32_t seg_size, uint64_t now);
/* Sends the staged packets, or starts a handshake when no session is
 * usable. */
void datapath_send_staged(struct peer *p, uint64_t now);
void datapath_send_keepalive(struct peer *p, uint64_t now);

/* Takes back a job the crypto workers finished (in submission order). */
struct crypto_job;
void datapath_crypto_done(struct device *dev, struct crypto_job *job, uint64_t now);

/* --- loop.c --------------------------------------------------------------------- */
struct pkt *loop_pkt_get(struct loop *loop);
void loop_pkt_put(struct loop *loop, struct pkt *pkt);
/* Sends pkt's segments (sealed messages in its slots: nseg of them, all
 * `stride` bytes but the last, which is pkt->len) to dst, as UDP GSO
 * sends; takes pkt. */
void loop_send(struct loop *loop, struct pkt *pkt, const union endpoint *dst);
/* Sends one message of len bytes at pkt->area; takes pkt. */
void loop_send_message(struct loop *loop, struct pkt *pkt, const union endpoint *dst,
                       uint32_t len);
/* Queues one coalesced run to the TUN device; w points into its owner,
 * which stays held until every write on it completed. */
void loop_write_tun(struct loop *loop, struct tun_write *w);
struct tun_write *loop_tun_write_get(struct loop *loop);
void loop_tun_write_put(struct loop *loop, struct tun_write *w);
/* A crypto job slot, waiting for the oldest job when all are in flight;
 * NULL when there are no workers (run the work inline). */
struct crypto_job *loop_crypto_job(struct loop *loop, uint64_t now);
void loop_crypto_submit(struct loop *loop, struct crypto_job *job);
/* Waits for every job in flight and takes them back. */
void loop_crypto_drain(struct loop *loop, uint64_t now);
/* Drops one reference to a received pkt held by TUN writes. */
void loop_pkt_unref(struct loop *loop, struct pkt *pkt);

#endif
