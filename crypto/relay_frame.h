/* SPDX-License-Identifier: MIT */
/* Relay frames: ddpnet's own message type on a WireGuard session, that
 * carries another WireGuard message (already sealed end to end) to or from
 * a relay and authenticates it without encrypting it again.
 *
 * Why: a relayed message wrapped as an ordinary transport message is
 * encrypted twice at each end and once more at the relay. The enclosed
 * message is ciphertext already; what the hop needs is that it came from
 * the member the session is with, once, in order. So a frame encrypts only
 * what is secret to the hop (to or from whom) and authenticates the
 * enclosed message in clear, under one tag over the whole frame (no
 * associated data: see Crypto below): ChaCha20 over 33 bytes and Poly1305
 * over all of it, instead of ChaCha20 and Poly1305 over all of it.
 *
 * Layout (integers little-endian, as WireGuard's):
 *   0     4   type, RELAY_FRAME_TYPE (44 00 00 00; a stock WireGuard peer
 *             drops it as an unknown type)
 *   4     4   receiver index of the session, as a transport message
 *   8     8   counter, from the session's sending counter (shared with
 *             its transport messages: one nonce space, one replay window)
 *   16    n   the enclosed WireGuard message, in clear (1..65535 - 65)
 *   16+n  33  encrypted: kind (RELAY_FRAME_TO: forward to the peer with
 *             this key; RELAY_FRAME_FROM: the relay says it came from the
 *             peer with this key), then that peer's public key
 *   49+n  16  tag
 * Crypto: ChaCha20 (RFC 8439) under the session's key with the transport
 * nonce (32 zero bits, then the counter). The 33 bytes are XORed with the
 * keystream from block 1 on; the tag is Poly1305, keyed with block 0 as
 * in the AEAD, over bytes [0, 49+n) zero-padded to 16, then le64(0) ||
 * le64(49+n): RFC 8439's tag with no AD over the whole frame taken as its
 * ciphertext (encrypt-then-MAC). Each counter is used once under the key,
 * by a frame or a transport message, so keystream and Poly1305 key are
 * never reused.
 *
 * Pure functions over bytes, like transport.h's halves: the caller finds
 * the keypair by the receiver index, reserves counters, and runs the
 * replay check after an open (transport_accept). */
#ifndef DDPNET_RELAY_FRAME_H
#define DDPNET_RELAY_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

#define RELAY_FRAME_TYPE      0x44u
#define RELAY_FRAME_TO        1u
#define RELAY_FRAME_FROM      2u
#define RELAY_FRAME_SEALED_LEN (1u + WG_KEY_LEN)
#define RELAY_FRAME_OVERHEAD  (WG_TRANSPORT_HEADER_LEN + RELAY_FRAME_SEALED_LEN + WG_AEAD_TAG_LEN)
#define RELAY_FRAME_MAX_LEN   65535u

/* The frame's length for an enclosed message of n bytes. */
static inline size_t relay_frame_len(size_t n)
{
    return n + RELAY_FRAME_OVERHEAD;
}

/* Writes at buf what a frame carries before it is sealed: the enclosed
 * message msg[0..n) (copied; it may not overlap buf's frame), the kind and
 * the peer's key. buf must hold relay_frame_len(n) bytes. */
void relay_frame_fill(uint8_t *buf, const uint8_t *msg, size_t n, uint8_t kind,
                      const uint8_t peer[WG_KEY_LEN]);

/* Seals in place the n frames relay_frame_fill wrote at area, one every
 * stride bytes, frame i with msg_lens[i] enclosed bytes and counter
 * first + i: the header, the kind and key encrypted, the tag. 0, or
 * -EINVAL (none sealed) when one has a kind that is neither, an enclosed
 * length of 0 or beyond RELAY_FRAME_MAX_LEN's room, or does not fit its
 * stride (the last may be shorter than the others). */
int relay_frame_seal_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t first,
                           uint8_t *area, size_t stride, const uint16_t *msg_lens, unsigned n);
/* One frame; its length, or 0 where the batch says -EINVAL. */
size_t relay_frame_seal(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                        uint8_t *buf, size_t n);

/* A frame to open (buf, len) and, once opened (status 0), what it says;
 * msg points into the frame's bytes. */
struct relay_frame {
    uint8_t *buf;
    uint32_t len;
    int status;            /* 0, or -EBADMSG: not a frame, too short or long,
                            * not authentic, or a kind that is neither */
    uint8_t kind;
    uint8_t peer[WG_KEY_LEN];
    uint64_t counter;
    uint8_t *msg;
    uint32_t msg_len;
};

/* Opens n frames under key, each tag checked before anything is
 * decrypted; a frame that is not authentic is left as it was. The kind
 * and key are decrypted in place (the enclosed message was never
 * encrypted). */
void relay_frame_open_batch(const uint8_t key[WG_KEY_LEN], struct relay_frame *frames,
                            unsigned n);
/* One frame: its status. */
int relay_frame_open(const uint8_t key[WG_KEY_LEN], uint8_t *buf, size_t len,
                     struct relay_frame *out);

#endif
