/* SPDX-License-Identifier: MIT */
/* mac1, mac2 and cookie replies (whitepaper 5.4.4 and 5.4.7).
 *
 * Every handshake message ends in mac1 = MAC(HASH("mac1----" || S_recv),
 * msg up to mac1), which proves the sender knows the receiver's public key,
 * and mac2 = MAC(cookie, msg up to mac2), which proves it recently received
 * a cookie for its source address. A responder under load demands mac2 and
 * answers messages without a valid one with a cookie reply (type 3): the
 * cookie MAC(secret, source address), sealed with XChaCha20-Poly1305 under
 * HASH("cookie--" || S_resp) with mac1 as associated data.
 *
 * The checker is our side (validates MACs, writes replies); a maker exists
 * per peer (adds MACs to our messages, takes the peer's cookie replies).
 * Source addresses are opaque bytes chosen by the caller (IP and port). */
#ifndef DDPNET_COOKIE_H
#define DDPNET_COOKIE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

struct cookie_checker {
    uint8_t secret[WG_HASH_LEN];          /* rotated every COOKIE_SECRET_MAX_AGE */
    uint64_t secret_birth_ns;
    uint8_t mac1_key[WG_HASH_LEN];        /* HASH("mac1----" || our public key) */
    uint8_t cookie_key[WG_HASH_LEN];      /* HASH("cookie--" || our public key) */
};

struct cookie_maker {
    uint8_t mac1_key[WG_HASH_LEN];        /* HASH("mac1----" || peer public key) */
    uint8_t cookie_key[WG_HASH_LEN];      /* HASH("cookie--" || peer public key) */
    uint8_t cookie[WG_COOKIE_LEN];
    uint64_t cookie_birth_ns;
    bool have_cookie;
    uint8_t last_mac1[WG_MAC_LEN];        /* of our latest message: the reply's AD */
    bool have_last_mac1;
};

void cookie_checker_init(struct cookie_checker *c, const uint8_t our_public[WG_KEY_LEN],
                         uint64_t now_ns);
/* Draws a new secret when the current one is COOKIE_SECRET_MAX_AGE old.
 * Driven by the caller's clock, never by a packet. */
void cookie_checker_rotate(struct cookie_checker *c, uint64_t now_ns);

/* Checks the MACs of a handshake message of len bytes (at least
 * WG_MACS_LEN + 4). Returns 0 when mac1 is valid and, under load, mac2 too;
 * -EBADMSG when mac1 is wrong (drop silently); -WG_ECOOKIE when under load
 * and mac2 is missing or wrong (answer with a cookie reply). Changes
 * nothing. */
int cookie_validate(const struct cookie_checker *c, const uint8_t *msg, size_t len,
                    const uint8_t *src, size_t src_len, bool under_load);

/* Writes the cookie reply to msg (whose mac1 must be valid) for the source
 * address; receiver_index is msg's sender index. */
int cookie_create_reply(const struct cookie_checker *c, const uint8_t *msg, size_t len,
                        uint32_t receiver_index, const uint8_t *src, size_t src_len,
                        uint8_t out[WG_COOKIE_REPLY_LEN]);

void cookie_maker_init(struct cookie_maker *m, const uint8_t peer_public[WG_KEY_LEN]);
/* Fills mac1 and mac2 of our message msg of len bytes; mac2 is zero unless
 * we hold a cookie younger than COOKIE_SECRET_MAX_AGE - LATENCY. */
void cookie_add_macs(struct cookie_maker *m, uint8_t *msg, size_t len, uint64_t now_ns);
/* Takes a cookie reply meant for this maker (found by its receiver index).
 * 0, -EBADMSG (not authentic, or no message of ours outstanding), or
 * -EINVAL (wrong size or type). Changes nothing unless it returns 0. */
int cookie_consume_reply(struct cookie_maker *m, const uint8_t *reply, size_t len,
                         uint64_t now_ns);
/* The receiver index of a cookie reply (len checked by the caller). */
uint32_t cookie_reply_receiver(const uint8_t *reply);

#endif
