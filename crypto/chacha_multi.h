/* SPDX-License-Identifier: MIT */
/* ChaCha20 (RFC 8439) for up to CHACHA_MULTI_LANES messages at once under
 * one key, one message per vector lane.
 *
 * Why: the data path seals and opens batches of segments that share a key
 * and differ only in the nonce (the counter). A library call per message
 * pays its set-up, a separate call for block 0 (the Poly1305 key) and a
 * partial last pass, which at 1420 bytes cost about as much as the
 * keystream itself. Here each pass computes the same block index of every
 * message (16 blocks in one go with AVX-512), so block 0 and the tails
 * ride along (bench/README.md has the figures).
 *
 * Built for AVX-512F and BW (a partial last block through a byte mask);
 * chacha_multi_available says whether this CPU runs it (crypto/aead.c
 * falls back to the backend's own ChaCha20). The stack it used, key
 * words and keystream among it, is wiped before returning. */
#ifndef DDPNET_CHACHA_MULTI_H
#define DDPNET_CHACHA_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

#define CHACHA_MULTI_LANES 16u

struct chacha_lane {
    uint8_t *dst;                         /* may equal src */
    const uint8_t *src;
    size_t len;                           /* bytes to XOR, from block 1 on; 0: none */
    uint8_t nonce[WG_AEAD_NONCE_LEN];
};

bool chacha_multi_available(void);

/* For n lanes (1..CHACHA_MULTI_LANES): dst = src XOR the lane's keystream
 * from block 1 on (RFC 8439's AEAD layout), and, when block0 is not NULL,
 * block0[j] = keystream block 0 of lane j (its Poly1305 key is the first
 * 32 bytes). Only on a CPU where chacha_multi_available(). */
void chacha_multi(const uint8_t key[WG_KEY_LEN], const struct chacha_lane *lanes, unsigned n,
                  uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN]);

#endif
