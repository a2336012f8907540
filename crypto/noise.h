/* SPDX-License-Identifier: MIT */
/* WireGuard's handshake (whitepaper 5.4): initiation (type 1, 148 bytes)
 * and response (type 2, 92 bytes) over the IKpsk2 patterns of noise_ik.h,
 * with WireGuard's identifier as prologue, a TAI64N timestamp as the
 * initiation's payload, and session indices. This file touches only bytes:
 * the caller owns the clock, the index table and the peers, and reaches
 * them through struct noise_lookup. The MACs of each message are the cookie
 * module's (cookie.h): create here, then cookie_add_macs; check with
 * cookie_validate, then consume here.
 *
 * Every consume works on copies and commits to the handshake only after
 * every check passed, so a message that fails leaves all state unchanged;
 * nothing is allocated. */
#ifndef DDPNET_NOISE_H
#define DDPNET_NOISE_H

#include <stdbool.h>
#include <stdint.h>

#include "crypto/noise_ik.h"
#include "crypto/transport.h"
#include "crypto/wg_const.h"

/* This node's identity. Allocate with noise_local_new: it lives in
 * libsodium's guarded memory and is wiped when freed. */
struct noise_local {
    uint8_t private_key[WG_KEY_LEN];
    uint8_t public_key[WG_KEY_LEN];
};

enum noise_state {
    NOISE_STATE_ZEROED,
    NOISE_STATE_CREATED_INITIATION,
    NOISE_STATE_CONSUMED_INITIATION,
    NOISE_STATE_CREATED_RESPONSE,
    NOISE_STATE_CONSUMED_RESPONSE,
};

/* One per peer. Holds secrets: keep it in guarded memory (the overlay's
 * peer allocation, whose sodium_free wipes it). */
struct noise_handshake {
    enum noise_state state;
    uint8_t remote_static[WG_KEY_LEN];
    uint8_t precomputed_ss[WG_KEY_LEN];   /* DH(our static, their static) */
    uint8_t psk[WG_KEY_LEN];              /* zeros when none */
    struct noise_symmetric sym;
    uint8_t ephemeral_private[WG_KEY_LEN];
    uint8_t remote_ephemeral[WG_KEY_LEN];
    uint8_t latest_timestamp[WG_TIMESTAMP_LEN];
    uint64_t last_initiation_ns;          /* when we last consumed one */
    bool consumed_initiation_before;
    uint32_t local_index;
    uint32_t remote_index;
};

/* How the handshake reaches the caller's tables. by_key finds the peer with
 * that static public key; by_index the handshake that owns a local index.
 * Both return NULL when there is none. */
struct noise_lookup {
    struct noise_handshake *(*by_key)(void *ctx, const uint8_t public_key[WG_KEY_LEN]);
    struct noise_handshake *(*by_index)(void *ctx, uint32_t local_index);
    void *ctx;
};

/* NULL when out of memory or the key is not a valid private key. */
struct noise_local *noise_local_new(const uint8_t private_key[WG_KEY_LEN]);
void noise_local_free(struct noise_local *local);

/* Sets up a peer's handshake. psk may be NULL. -EINVAL when the remote key
 * has low order (the static-static DH is zero). */
int noise_handshake_init(struct noise_handshake *hs, const struct noise_local *local,
                         const uint8_t remote_static[WG_KEY_LEN],
                         const uint8_t psk[WG_KEY_LEN]);
/* Forgets a handshake in progress, keeping the peer's keys and the latest
 * timestamp (so old initiations stay refused). */
void noise_handshake_reset(struct noise_handshake *hs);
/* Wipes everything. */

/* Initiator: writes an initiation (MACs zero) with our local_index and the
 * given TAI64N timestamp. */
int noise_create_initiation(struct noise_handshake *hs, const struct noise_local *local,
                            uint32_t local_index, const uint8_t timestamp[WG_TIMESTAMP_LEN],
                            uint8_t out[WG_INITIATION_LEN]);

/* Responder: consumes an initiation whose MACs were checked. On success
 * *peer is the handshake of the sender, now in CONSUMED_INITIATION.
 * Errors: -EBADMSG (malformed, not authentic), -WG_ENOPEER,
 * -WG_ETIMESTAMP (not newer than the last accepted), -WG_EFLOOD. */
int noise_consume_initiation(const struct noise_local *local, const uint8_t *msg, size_t len,
                             uint64_t now_ns, const struct noise_lookup *lookup,
                             struct noise_handshake **peer);

/* Responder: writes the response (MACs zero) with our local_index. */
int noise_create_response(struct noise_handshake *hs, uint32_t local_index,
                          uint8_t out[WG_RESPONSE_LEN]);

/* Initiator: consumes a response whose MACs were checked. The receiver
 * index must name a handshake in CREATED_INITIATION. Errors: -EBADMSG,
 * -WG_ENOPEER (unknown index), -WG_ESTATE. */
int noise_consume_response(const struct noise_local *local, const uint8_t *msg, size_t len,
                           const struct noise_lookup *lookup, struct noise_handshake **peer);

/* Derives the transport keypair from a completed handshake (initiator after
 * consuming the response, responder after creating it) and resets the
 * handshake. -WG_ESTATE when the handshake is not complete. */
int noise_begin_session(struct noise_handshake *hs, struct noise_keypair *kp, uint64_t now_ns);

/* The message type of a datagram (first 4 bytes, LE; a transport
 * message with shard bytes is WG_MSG_TRANSPORT), 0 if too short. */
uint32_t noise_message_type(const uint8_t *msg, size_t len);

#endif
