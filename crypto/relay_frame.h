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
 * over all of it, instead of ChaCha20 and Poly1305 over all of it; a data
 * frame (below) leaves the ciphertext of the message it carries out of
 * its tag too.
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
 * Data frames (type RELAY_FRAME_DATA_TYPE, 45 00 00 00): the same layout,
 * for an enclosed transport data message alone (type 4, at least
 * WG_TRANSPORT_MIN_LEN bytes), whose ciphertext the hop does not
 * authenticate again: its own tag does, end to end, and a hop that relays
 * a message whose ciphertext was altered on the way only delivers what
 * its destination drops, as it would drop it from anyone. The hop's tag
 * covers everything else: Poly1305, keyed as above, over these 97 bytes
 * taken as the ciphertext (RFC 8439, no AD):
 *   0     16  the frame's header (type, receiver index, counter)
 *   16    16  the enclosed message's header (type, receiver index, counter)
 *   32    16  the enclosed message's tag (its last 16 bytes)
 *   48    8   le64(n), the enclosed message's length
 *   56    8   zero
 *   64    33  the kind and key, encrypted as above
 * So a data frame costs its hop two ChaCha20 blocks and two Poly1305
 * blocks of 97 bytes, whatever it carries: a relay opens one frame and
 * seals another for each message, and the ends seal and open a frame
 * beside the message itself. A node sends them only to a peer that said
 * it takes them (disco FEATURES, DISCO_FEAT_DATA_FRAMES); every other
 * enclosed message (handshakes) goes in a frame of type 0x44.
 *
 * Pure functions over bytes, like transport.h's halves: the caller finds
 * the keypair by the receiver index, reserves counters, and runs the
 * replay check after an open (transport_accept). */
#ifndef DDPNET_RELAY_FRAME_H
#define DDPNET_RELAY_FRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

#define RELAY_FRAME_TYPE      0x44u
#define RELAY_FRAME_DATA_TYPE 0x45u
#define RELAY_FRAME_TO        1u
#define RELAY_FRAME_FROM      2u
#define RELAY_FRAME_SEALED_LEN (1u + WG_KEY_LEN)
#define RELAY_FRAME_OVERHEAD  (WG_TRANSPORT_HEADER_LEN + RELAY_FRAME_SEALED_LEN + WG_AEAD_TAG_LEN)
#define RELAY_FRAME_MAX_LEN   65535u

/* Whether a message of this type is a relay frame, of either type. */
static inline bool relay_frame_type(uint32_t type)
{
    return type == RELAY_FRAME_TYPE || type == RELAY_FRAME_DATA_TYPE;
}

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

/* Whether msg[0..n) may go in a data frame: a transport data message. */
bool relay_frame_data_ok(const uint8_t *msg, size_t n);

/* Seals in place the n frames relay_frame_fill wrote at area, one every
 * stride bytes, frame i with msg_lens[i] enclosed bytes and counter
 * first + i: the header, the kind and key encrypted, the tag. With data,
 * each frame whose message relay_frame_data_ok takes is a data frame, the
 * others 0x44 frames; without, all are 0x44 frames. The number of data
 * frames among them, or
 * -EINVAL (none sealed) when one has a kind that is neither, an enclosed
 * length of 0 or beyond RELAY_FRAME_MAX_LEN's room, or does not fit its
 * stride (the last may be shorter than the others). */
int relay_frame_seal_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t first,
                           uint8_t *area, size_t stride, const uint16_t *msg_lens, unsigned n,
                           bool data);
/* One frame (a data frame where data and relay_frame_data_ok say so);
 * its length, or 0 where the batch says -EINVAL. A test seam, as
 * relay_frame_open below: the daemon seals and opens in batches. */
size_t relay_frame_seal(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                        uint8_t *buf, size_t n, bool data);

/* A frame to open (buf, len) and, once opened (status 0), what it says;
 * msg points into the frame's bytes. */
struct relay_frame {
    uint8_t *buf;
    uint32_t len;
    int status;            /* 0, or -EBADMSG: not a frame, too short or long,
                            * not authentic, a kind that is neither, or a
                            * data frame whose message is no data message */
    bool data;             /* a data frame (RELAY_FRAME_DATA_TYPE) */
    uint8_t kind;
    uint8_t peer[WG_KEY_LEN];
    uint64_t counter;
    uint8_t *msg;
    uint32_t msg_len;
};

/* Opens n frames of either type under key, each tag checked before
 * anything is decrypted; a frame that is not authentic is left as it was.
 * A 0x44 frame's kind and key are decrypted in place, a data frame's
 * aside (the enclosed message was never encrypted). */
void relay_frame_open_batch(const uint8_t key[WG_KEY_LEN], struct relay_frame *frames,
                            unsigned n);
/* One frame: its status (a test seam). */
int relay_frame_open(const uint8_t key[WG_KEY_LEN], uint8_t *buf, size_t len,
                     struct relay_frame *out);

#endif
