/* SPDX-License-Identifier: MIT */
/* The Noise IKpsk2 message patterns (Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s),
 * token by token, over a symmetric state of chaining key and hash. The
 * prologue, payloads and ephemeral keys are parameters, so the same code
 * serves WireGuard (prologue = its identifier, payload = a timestamp or
 * nothing; noise.c) and the Noise test vector. Each function works on the
 * state it is given and wipes its temporaries; the caller works on a copy
 * and commits it only when a whole message passed.
 *
 *   <- s
 *   ...
 *   -> e, es, s, ss            (message 1: initiation)
 *   <- e, ee, se, psk          (message 2: response)
 */
#ifndef DDPNET_NOISE_IK_H
#define DDPNET_NOISE_IK_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

struct noise_symmetric {
    uint8_t ck[WG_HASH_LEN];   /* chaining key */
    uint8_t h[WG_HASH_LEN];    /* handshake hash */
};

/* Sizes of the two messages for a payload of plen bytes. */
#define NOISE_IK_MSG1_LEN(plen) \
    (WG_KEY_LEN + WG_KEY_LEN + WG_AEAD_TAG_LEN + (plen) + WG_AEAD_TAG_LEN)
#define NOISE_IK_MSG2_LEN(plen) (WG_KEY_LEN + (plen) + WG_AEAD_TAG_LEN)
/* Where message 1's encrypted payload starts (after e and the sealed s). */
#define NOISE_IK_MSG1_PAYLOAD_OFFSET (WG_KEY_LEN + WG_KEY_LEN + WG_AEAD_TAG_LEN)

/* ck = h = HASH(protocol name); h = HASH(h || prologue); h = HASH(h || rs). */
void noise_ik_init(struct noise_symmetric *s, const uint8_t *prologue, size_t prologue_len,
                   const uint8_t responder_public[WG_KEY_LEN]);

/* Initiator writes message 1 into out (NOISE_IK_MSG1_LEN(plen) bytes).
 * ss_dh is DH(s_i, S_r), precomputed per peer. 0 or -EINVAL (a DH gave
 * zero). */
int noise_ik_write_msg1(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                        const uint8_t s_pub[WG_KEY_LEN], const uint8_t r_pub[WG_KEY_LEN],
                        const uint8_t ss_dh[WG_KEY_LEN],
                        const uint8_t *payload, size_t plen, uint8_t *out);

/* Responder reads message 1 in two steps, since the static-static DH needs
 * the initiator's key first: e, es, s (yields the initiator's ephemeral and
 * static public keys), then ss and the payload. 0, -EINVAL or -EBADMSG. */
int noise_ik_read_msg1_static(struct noise_symmetric *s, const uint8_t r_priv[WG_KEY_LEN],
                              const uint8_t *in, uint8_t e_remote[WG_KEY_LEN],
                              uint8_t s_remote[WG_KEY_LEN]);
int noise_ik_read_msg1_payload(struct noise_symmetric *s, const uint8_t ss_dh[WG_KEY_LEN],
                               const uint8_t *in, size_t plen, uint8_t *payload);

/* Responder writes message 2 (NOISE_IK_MSG2_LEN(plen) bytes). */
int noise_ik_write_msg2(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                        const uint8_t e_remote[WG_KEY_LEN], const uint8_t s_remote[WG_KEY_LEN],
                        const uint8_t psk[WG_KEY_LEN],
                        const uint8_t *payload, size_t plen, uint8_t *out);

/* Initiator reads message 2. */
int noise_ik_read_msg2(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                       const uint8_t s_priv[WG_KEY_LEN], const uint8_t psk[WG_KEY_LEN],
                       const uint8_t *in, size_t plen, uint8_t *payload);

/* Split: (t1, t2) = KDF2(ck, empty). The initiator sends with t1. */
void noise_ik_split(const struct noise_symmetric *s, uint8_t t1[WG_KEY_LEN],
                    uint8_t t2[WG_KEY_LEN]);

#endif
