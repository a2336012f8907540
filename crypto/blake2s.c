/* SPDX-License-Identifier: MIT */
/* BLAKE2s (RFC 7693) in portable C, and the two constructions WireGuard
 * builds on it: HMAC-BLAKE2s (RFC 2104) and the HKDF-style KDF_n of the
 * whitepaper (section 5.4). Loads and stores assemble bytes explicitly, so the
 * code is endian-independent; every buffer that held key material is wiped
 * before the function that owns it returns. */
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/blake2s.h"

#define BLAKE2S_ROUNDS 10
/* Parameter block word 0 for sequential hashing: fanout 1, depth 1. */
#define BLAKE2S_PARAM_SEQUENTIAL UINT32_C(0x01010000)
#define BLAKE2S_PARAM_KEYLEN_SHIFT 8
#define BLAKE2S_LAST_BLOCK UINT32_C(0xffffffff)

/* RFC 2104 pads. */
#define HMAC_IPAD 0x36u
#define HMAC_OPAD 0x5cu

/* KDF_n appends the index of the output it derives, as one byte. */
#define KDF_INDEX_T1 1u
#define KDF_INDEX_T2 2u
#define KDF_INDEX_T3 3u

static const uint32_t blake2s_iv[8] = {
    UINT32_C(0x6a09e667), UINT32_C(0xbb67ae85), UINT32_C(0x3c6ef372), UINT32_C(0xa54ff53a),
    UINT32_C(0x510e527f), UINT32_C(0x9b05688c), UINT32_C(0x1f83d9ab), UINT32_C(0x5be0cd19),
};

static const uint8_t blake2s_sigma[BLAKE2S_ROUNDS][16] = {
    { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15 },
    { 14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3 },
    { 11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4 },
    { 7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8 },
    { 9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13 },
    { 2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9 },
    { 12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11 },
    { 13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10 },
    { 6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5 },
    { 10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0 },
};

static uint32_t load32_le(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
           (uint32_t)p[3] << 24;
}

/* The mask keeps the left shift below 32 bits for every n. */
static uint32_t rotr32(uint32_t x, unsigned n)
{
    return (x >> (n & 31u)) | (x << ((32u - n) & 31u));
}

/* The mixing function G of RFC 7693 section 3.1. */
static void blake2s_g(uint32_t v[16], unsigned a, unsigned b, unsigned c, unsigned d,
                      uint32_t x, uint32_t y)
{
    v[a] = v[a] + v[b] + x;
    v[d] = rotr32(v[d] ^ v[a], 16);
    v[c] = v[c] + v[d];
    v[b] = rotr32(v[b] ^ v[c], 12);
    v[a] = v[a] + v[b] + y;
    v[d] = rotr32(v[d] ^ v[a], 8);
    v[c] = v[c] + v[d];
    v[b] = rotr32(v[b] ^ v[c], 7);
}

static void blake2s_round(uint32_t v[16], const uint32_t m[16], const uint8_t s[16])
{
    blake2s_g(v, 0, 4, 8, 12, m[s[0]], m[s[1]]);
    blake2s_g(v, 1, 5, 9, 13, m[s[2]], m[s[3]]);
    blake2s_g(v, 2, 6, 10, 14, m[s[4]], m[s[5]]);
    blake2s_g(v, 3, 7, 11, 15, m[s[6]], m[s[7]]);
    blake2s_g(v, 0, 5, 10, 15, m[s[8]], m[s[9]]);
    blake2s_g(v, 1, 6, 11, 12, m[s[10]], m[s[11]]);
    blake2s_g(v, 2, 7, 8, 13, m[s[12]], m[s[13]]);
    blake2s_g(v, 3, 4, 9, 14, m[s[14]], m[s[15]]);
}

/* The compression function F; the caller has already counted the block in
 * s->t and set s->f for the last one. */
static void blake2s_compress(struct blake2s_state *s, const uint8_t block[BLAKE2S_BLOCK_LEN])
{
    uint32_t m[16], v[16];

    for (unsigned i = 0; i < 16; i++)
        m[i] = load32_le(block + 4 * i);
    for (unsigned i = 0; i < 8; i++) {
        v[i] = s->h[i];
        v[i + 8] = blake2s_iv[i];
    }
    v[12] ^= s->t[0];
    v[13] ^= s->t[1];
    v[14] ^= s->f[0];
    v[15] ^= s->f[1];
    for (unsigned r = 0; r < BLAKE2S_ROUNDS; r++)
        blake2s_round(v, m, blake2s_sigma[r]);
    for (unsigned i = 0; i < 8; i++)
        s->h[i] ^= v[i] ^ v[i + 8];
    /* The first block of a keyed hash is the key itself. */
    sodium_memzero(m, sizeof(m));
    sodium_memzero(v, sizeof(v));
}

/* t is a 64-bit byte counter kept as two words. */
static void blake2s_count(struct blake2s_state *s, uint32_t inc)
{
    s->t[0] += inc;
    if (s->t[0] < inc)
        s->t[1]++;
}

void blake2s_init(struct blake2s_state *s, size_t outlen, const uint8_t *key, size_t keylen)
{
    /* The API has no error return; a length outside the contract is a
     * programming error that would otherwise overrun buffers, so stop. */
    if (outlen == 0 || outlen > BLAKE2S_OUT_MAX || keylen > BLAKE2S_KEY_MAX ||
        (keylen && !key))
        abort();

    memset(s, 0, sizeof(*s));
    memcpy(s->h, blake2s_iv, sizeof(s->h));
    s->h[0] ^= BLAKE2S_PARAM_SEQUENTIAL | (uint32_t)keylen << BLAKE2S_PARAM_KEYLEN_SHIFT |
               (uint32_t)outlen;
    s->outlen = outlen;
    if (keylen) {
        uint8_t block[BLAKE2S_BLOCK_LEN] = { 0 };

        memcpy(block, key, keylen);
        blake2s_update(s, block, sizeof(block));
        sodium_memzero(block, sizeof(block));
    }
}

void blake2s_update(struct blake2s_state *s, const uint8_t *in, size_t inlen)
{
    if (inlen == 0)
        return;
    size_t fill = BLAKE2S_BLOCK_LEN - s->buflen;

    /* A full buffer is compressed only once more input proves it is not the
     * last block, which final must compress with the last-block flag. */
    if (inlen > fill) {
        memcpy(s->buf + s->buflen, in, fill);
        blake2s_count(s, BLAKE2S_BLOCK_LEN);
        blake2s_compress(s, s->buf);
        s->buflen = 0;
        in += fill;
        inlen -= fill;
        while (inlen > BLAKE2S_BLOCK_LEN) {
            blake2s_count(s, BLAKE2S_BLOCK_LEN);
            blake2s_compress(s, in);
            in += BLAKE2S_BLOCK_LEN;
            inlen -= BLAKE2S_BLOCK_LEN;
        }
    }
    memcpy(s->buf + s->buflen, in, inlen);
    s->buflen += inlen;
}

void blake2s_final(struct blake2s_state *s, uint8_t *out)
{
    blake2s_count(s, (uint32_t)s->buflen);
    s->f[0] = BLAKE2S_LAST_BLOCK;
    memset(s->buf + s->buflen, 0, BLAKE2S_BLOCK_LEN - s->buflen);
    blake2s_compress(s, s->buf);
    for (size_t i = 0; i < s->outlen; i++)
        out[i] = (uint8_t)(s->h[i / 4] >> (8 * (i % 4)));
    sodium_memzero(s, sizeof(*s));
}

void blake2s(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen,
             const uint8_t *key, size_t keylen)
{
    struct blake2s_state s;

    blake2s_init(&s, outlen, key, keylen);
    blake2s_update(&s, in, inlen);
    blake2s_final(&s, out);
}

/* out = H((K' ^ pad) || in || in2), the two-part message saving the KDF a
 * concatenation; pad_key holds K' zero-padded to one block. */
static void hmac_half(uint8_t out[BLAKE2S_OUT_MAX], const uint8_t pad_key[BLAKE2S_BLOCK_LEN],
                      uint8_t pad, const uint8_t *in, size_t inlen)
{
    struct blake2s_state s;
    uint8_t block[BLAKE2S_BLOCK_LEN];

    for (size_t i = 0; i < BLAKE2S_BLOCK_LEN; i++)
        block[i] = pad_key[i] ^ pad;
    blake2s_init(&s, BLAKE2S_OUT_MAX, NULL, 0);
    blake2s_update(&s, block, sizeof(block));
    blake2s_update(&s, in, inlen);
    blake2s_final(&s, out);
    sodium_memzero(block, sizeof(block));
}

void blake2s_hmac(uint8_t out[BLAKE2S_OUT_MAX], const uint8_t *in, size_t inlen,
                  const uint8_t *key, size_t keylen)
{
    uint8_t pad_key[BLAKE2S_BLOCK_LEN] = { 0 };
    uint8_t inner[BLAKE2S_OUT_MAX];

    /* RFC 2104: a key longer than a block is replaced by its hash. */
    if (keylen > BLAKE2S_BLOCK_LEN)
        blake2s(pad_key, BLAKE2S_OUT_MAX, key, keylen, NULL, 0);
    else if (keylen)
        memcpy(pad_key, key, keylen);
    hmac_half(inner, pad_key, HMAC_IPAD, in, inlen);
    hmac_half(out, pad_key, HMAC_OPAD, inner, sizeof(inner));
    sodium_memzero(pad_key, sizeof(pad_key));
    sodium_memzero(inner, sizeof(inner));
}

/* next = HMAC(prk, prev || index); prev is absent for t1. */
static void kdf_expand(uint8_t next[BLAKE2S_OUT_MAX], const uint8_t prk[BLAKE2S_OUT_MAX],
                       const uint8_t *prev, uint8_t index)
{
    uint8_t msg[BLAKE2S_OUT_MAX + 1];
    size_t len = 0;

    if (prev) {
        memcpy(msg, prev, BLAKE2S_OUT_MAX);
        len = BLAKE2S_OUT_MAX;
    }
    msg[len++] = index;
    blake2s_hmac(next, msg, len, prk, BLAKE2S_OUT_MAX);
    sodium_memzero(msg, sizeof(msg));
}

void blake2s_kdf(uint8_t t1[BLAKE2S_OUT_MAX], uint8_t t2[BLAKE2S_OUT_MAX],
                 uint8_t t3[BLAKE2S_OUT_MAX], const uint8_t ck[BLAKE2S_OUT_MAX],
                 const uint8_t *in, size_t inlen)
{
    /* Everything is derived into locals first, because the handshake passes
     * its chaining key as both ck and t1. */
    uint8_t prk[BLAKE2S_OUT_MAX], out[3][BLAKE2S_OUT_MAX];

    blake2s_hmac(prk, in, inlen, ck, BLAKE2S_OUT_MAX);
    kdf_expand(out[0], prk, NULL, KDF_INDEX_T1);
    if (t2)
        kdf_expand(out[1], prk, out[0], KDF_INDEX_T2);
    if (t2 && t3)
        kdf_expand(out[2], prk, out[1], KDF_INDEX_T3);
    memcpy(t1, out[0], BLAKE2S_OUT_MAX);
    if (t2)
        memcpy(t2, out[1], BLAKE2S_OUT_MAX);
    if (t2 && t3)
        memcpy(t3, out[2], BLAKE2S_OUT_MAX);
    sodium_memzero(prk, sizeof(prk));
    sodium_memzero(out, sizeof(out));
}
