/* SPDX-License-Identifier: MIT */
/* Transport data (message type 4) under one keypair: sealing with the
 * 64-bit counter nonce and 16-byte padding, opening with the replay check
 * made only after the AEAD authenticated the packet, and the key's limits
 * (REJECT_AFTER_TIME, REJECT_AFTER_MESSAGES). Batches of packets go through
 * one call, sealed and opened in place:
 *
 *   buf: [ header 16 | plaintext len | padding | tag 16 ]
 *
 * seal reads the plaintext at buf + WG_TRANSPORT_HEADER_LEN and writes the
 * whole message from buf; open reads the message at buf and leaves the
 * (padded) plaintext at buf + WG_TRANSPORT_HEADER_LEN. The caller owns the
 * clock (now_ns, monotonic) and serialises calls per keypair. */
#ifndef DDPNET_TRANSPORT_H
#define DDPNET_TRANSPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/replay.h"
#include "crypto/wg_const.h"

/* A keypair's sub-sessions, one per sealing shard (wg_const.h). A message
 * whose byte 2 names sub-session h (not 0) is sealed under keys derived
 * from the keypair's own (transport_hint_key), with a counter and a replay
 * window of its own: each sending shard's counters then stay in order on
 * the wire, and one shard running late never shows as replays of another
 * shard's at the receiver. Hint 0 is the keypair itself (a stock
 * WireGuard peer only ever uses that one). Allocated at first use: by a
 * sender when it seals with a hint, by a receiver once a hinted message
 * authenticated; freed with the keypair. */
struct transport_hinted {
    uint8_t send_key[WG_SHARD_HINTS][WG_KEY_LEN];
    uint8_t recv_key[WG_SHARD_HINTS][WG_KEY_LEN];
    uint64_t send_counter[WG_SHARD_HINTS];
    struct replay_window replay[WG_SHARD_HINTS];
};

struct noise_keypair {
    uint8_t send_key[WG_KEY_LEN];
    uint8_t recv_key[WG_KEY_LEN];
    uint64_t send_counter;        /* next counter to send */
    struct replay_window replay;
    uint64_t birth_ns;
    uint32_t local_index;         /* receiver index of messages to us */
    uint32_t remote_index;        /* receiver index we put on messages out */
    bool is_initiator;
    struct transport_hinted *hinted;   /* NULL until a hint is used */
};

struct transport_packet {
    uint8_t *buf;
    size_t cap;        /* bytes writable at buf */
    size_t len;        /* seal: plaintext in, message out; open: message in, plaintext out */
    uint64_t counter;  /* out: the counter sealed with or opened */
    int status;        /* out: 0 or negative (see transport_seal_batch) */
    /* seal: pad no further than this many bytes (the tunnel MTU), as the
     * Linux module does, so a full-size packet still fits the underlay;
     * 0: no limit. */
    uint32_t pad_limit;
};

/* Plaintext length rounded up to the padding multiple. */
size_t transport_padded_len(size_t len);
/* Whole message size for a plaintext of len bytes. A test seam: the
 * daemon pads to a path (transport_sealed_len_limited). */
size_t transport_sealed_len(size_t len);
/* The same with padding held to pad_limit (see struct transport_packet). */
size_t transport_sealed_len_limited(size_t len, uint32_t pad_limit);

/* Seals n packets with consecutive counters. Per packet status: 0,
 * -EMSGSIZE (cap too small), or -WG_ESTALE (key past REJECT_AFTER_TIME or
 * its counters used up: rekey). Returns how many were sealed. */
unsigned transport_seal_batch(struct noise_keypair *kp, struct transport_packet *pkts,
                              unsigned n, uint64_t now_ns);
/* Opens n packets. Per packet status: 0, -EBADMSG (malformed or not
 * authentic; buf contents then unspecified but no plaintext is reported),
 * -WG_EREPLAY (authentic but counter seen or too old), -WG_ESTALE (key
 * past REJECT_AFTER_TIME). Returns how many opened. */
unsigned transport_open_batch(struct noise_keypair *kp, struct transport_packet *pkts,
                              unsigned n, uint64_t now_ns);

/* One packet; returns its status. */
int transport_seal(struct noise_keypair *kp, struct transport_packet *pkt, uint64_t now_ns);
int transport_open(struct noise_keypair *kp, struct transport_packet *pkt, uint64_t now_ns);

/* The halves of sealing and opening, for doing the AEAD on another
 * thread while the state stays with the caller: transport_reserve takes n
 * consecutive counters (-WG_ESTALE past the key's limits);
 * transport_encrypt seals one packet with an explicit counter and touches
 * only bytes; transport_decrypt checks the message's form and opens it
 * (-EBADMSG), leaving the counter in p->counter; transport_accept then
 * runs the replay check (-WG_EREPLAY), which must come after decrypt. The
 * caller checks the receiver index and the key's age itself. */
int transport_reserve(struct noise_keypair *kp, unsigned n, uint64_t now_ns, uint64_t *first);
int transport_encrypt(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                      struct transport_packet *p);
int transport_decrypt(const uint8_t key[WG_KEY_LEN], struct transport_packet *p);
/* The same for n packets (aead_seal_batch, aead_open_batch): encrypt with
 * counters first_counter, first_counter + 1, ...; each packet's status is
 * what the one-packet call would return. Same results, less CPU. */
#define TRANSPORT_BATCH 64u
void transport_encrypt_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index,
                             uint64_t first_counter, struct transport_packet *pkts, unsigned n);
void transport_decrypt_batch(const uint8_t key[WG_KEY_LEN], struct transport_packet *pkts,
                             unsigned n);
int transport_accept(struct noise_keypair *kp, uint64_t counter);

/* The receiver index of a transport message (len already checked by the
 * caller to be at least WG_TRANSPORT_MIN_LEN), for finding the keypair. */
uint32_t transport_receiver(const uint8_t *msg);

/* Whether the keypair should be replaced soon (REKEY_AFTER_MESSAGES sent,
 * or, for the initiator, REKEY_AFTER_TIME passed). */
bool transport_needs_rekey(const struct noise_keypair *kp, uint64_t now_ns);

/* Whether the keypair is past REJECT_AFTER_TIME. */
bool transport_expired(const struct noise_keypair *kp, uint64_t now_ns);

/* Wipes the keys. */
void transport_keypair_clear(struct noise_keypair *kp);

/* --- sub-sessions per sealing shard (struct transport_hinted) ------------------- */

/* The sub-session a message names: its byte 2 (wg_const.h) modulo
 * WG_SHARD_HINTS. */
unsigned transport_sub_of(const uint8_t *msg);
/* Sub-session h's key from the keypair's key `base` (one direction):
 * BLAKE2s-256 keyed with base over "ddpnet shard hint" and h. */
void transport_hint_key(const uint8_t base[WG_KEY_LEN], unsigned h, uint8_t out[WG_KEY_LEN]);
/* transport_reserve for sub-session h (0: the keypair's own); 0, -WG_ESTALE
 * or -ENOMEM. Then transport_send_key(kp, h) is the key to seal with. */
int transport_reserve_hinted(struct noise_keypair *kp, unsigned h, unsigned n, uint64_t now_ns,
                             uint64_t *first);
const uint8_t *transport_send_key(const struct noise_keypair *kp, unsigned h);
/* The key that opens sub-session h's messages, into out. */
void transport_recv_key(const struct noise_keypair *kp, unsigned h, uint8_t out[WG_KEY_LEN]);
/* transport_accept on sub-session h's window, after the AEAD: 0,
 * -WG_EREPLAY or -ENOMEM. */
int transport_accept_hinted(struct noise_keypair *kp, unsigned h, uint64_t counter);

#endif
