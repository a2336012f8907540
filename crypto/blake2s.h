/* SPDX-License-Identifier: MIT */
/* BLAKE2s (RFC 7693) and the constructions WireGuard builds on it: keyed
 * hashing (MAC), HMAC-BLAKE2s and the HKDF that yields one to three keys.
 * libsodium offers only BLAKE2b, so this is our own, portable C. Every
 * function wipes its internal state before returning. */
#ifndef DDPNET_BLAKE2S_H
#define DDPNET_BLAKE2S_H

#include <stddef.h>
#include <stdint.h>

#define BLAKE2S_OUT_MAX   32u
#define BLAKE2S_KEY_MAX   32u
#define BLAKE2S_BLOCK_LEN 64u

struct blake2s_state {
    uint32_t h[8];
    uint32_t t[2];
    uint32_t f[2];
    uint8_t buf[BLAKE2S_BLOCK_LEN];
    size_t buflen;
    size_t outlen;
};

/* outlen 1..32; keylen 0..32 (key may be NULL when keylen is 0). The API
 * reports no errors: lengths outside these ranges, or a NULL key with
 * keylen > 0, are programming errors and abort() rather than overrun a
 * buffer. in may be NULL when inlen is 0, in every function here. */
void blake2s_init(struct blake2s_state *s, size_t outlen, const uint8_t *key, size_t keylen);
void blake2s_update(struct blake2s_state *s, const uint8_t *in, size_t inlen);
/* Writes outlen bytes and wipes the state; init again to reuse it. */
void blake2s_final(struct blake2s_state *s, uint8_t *out);

/* One call: out = BLAKE2s(key, in), outlen bytes. */
void blake2s(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen,
             const uint8_t *key, size_t keylen);

/* HMAC (RFC 2104) over BLAKE2s-256, block size 64. Any key length: a key
 * longer than a block is hashed first. out may alias in or key. */
void blake2s_hmac(uint8_t out[BLAKE2S_OUT_MAX], const uint8_t *in, size_t inlen,
                  const uint8_t *key, size_t keylen);

/* WireGuard's KDF_n: prk = HMAC(ck, in); t1 = HMAC(prk, 0x1);
 * t2 = HMAC(prk, t1 || 0x2); t3 = HMAC(prk, t2 || 0x3). t2 and t3 may be
 * NULL to stop early (t3 is ignored when t2 is NULL); t1 is required.
 * Outputs may alias ck or in (the handshake calls kdf(ck, k, NULL, ck, ...)):
 * everything is derived into locals before any output is written. */
void blake2s_kdf(uint8_t t1[BLAKE2S_OUT_MAX], uint8_t t2[BLAKE2S_OUT_MAX],
                 uint8_t t3[BLAKE2S_OUT_MAX], const uint8_t ck[BLAKE2S_OUT_MAX],
                 const uint8_t *in, size_t inlen);

#endif
