/* SPDX-License-Identifier: MIT */
/* Shared set-up for the handshake and transport fuzz harnesses: two
 * parties with fixed keys that know each other, and helpers that turn the
 * fuzzer's bytes into either a raw datagram or a set of edits on a valid
 * message (so that the fuzzer gets past mac1 and into the AEADs). */
#ifndef DDPNET_FUZZ_WORLD_H
#define DDPNET_FUZZ_WORLD_H

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "crypto/tai64n.h"

struct fuzz_party {
    struct noise_local *local;
    struct noise_handshake hs;
    struct cookie_checker checker;
    struct cookie_maker maker;
    struct noise_lookup lookup;
};

static inline struct noise_handshake *fuzz_by_key(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    struct fuzz_party *p = ctx;
    return sodium_memcmp(key, p->hs.remote_static, WG_KEY_LEN) == 0 ? &p->hs : NULL;
}

static inline struct noise_handshake *fuzz_by_index(void *ctx, uint32_t index)
{
    struct fuzz_party *p = ctx;
    return p->hs.state != NOISE_STATE_ZEROED && p->hs.local_index == index ? &p->hs : NULL;
}

static inline void fuzz_party_init(struct fuzz_party *p, uint8_t seed)
{
    uint8_t priv[WG_KEY_LEN];
    memset(priv, seed, sizeof(priv));
    p->local = noise_local_new(priv);
    if (!p->local)
        abort();
    p->lookup = (struct noise_lookup){ fuzz_by_key, fuzz_by_index, p };
}

static inline void fuzz_link(struct fuzz_party *p, const struct fuzz_party *peer)
{
    if (noise_handshake_init(&p->hs, p->local, peer->local->public_key, NULL))
        abort();
    cookie_checker_init(&p->checker, p->local->public_key, 0);
    cookie_maker_init(&p->maker, peer->local->public_key);
}

/* a initiates to b. */
static inline void fuzz_world_init(struct fuzz_party *a, struct fuzz_party *b)
{
    if (crypto_core_init())
        abort();
    fuzz_party_init(a, 0x11);
    fuzz_party_init(b, 0x22);
    fuzz_link(a, b);
    fuzz_link(b, a);
}

/* Fuzzer input as edits: pairs (offset, xor mask) applied to msg. */
static inline void fuzz_apply_edits(uint8_t *msg, size_t len, const uint8_t *edits, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2)
        msg[edits[i] % len] ^= edits[i + 1];
}

/* Builds the datagram to test from the fuzzer's input: the first byte picks
 * raw bytes, or edits on the valid message, and whether mac1 is fixed up. */
static inline size_t fuzz_datagram(uint8_t *out, size_t cap, const uint8_t *valid,
                                   size_t valid_len, const uint8_t *data, size_t size,
                                   uint8_t mode)
{
    if (mode & 1) {
        size_t n = size < cap ? size : cap;
        memcpy(out, data, n);
        return n;
    }
    memcpy(out, valid, valid_len);
    fuzz_apply_edits(out, valid_len, data, size);
    return valid_len;
}

#endif
