/* SPDX-License-Identifier: MIT */
/* Poly1305 tags of the RFC 8439 AEAD for up to POLY1305_MULTI_LANES
 * messages at once, one message per 64-bit vector lane (AVX-512 IFMA).
 *
 * Why: a library's Poly1305 is fast per byte but pays a set-up per
 * message (the vector paths precompute powers of r), which at 1420 bytes
 * costs as much as the hashing. Eight messages side by side need only r
 * and r^2: each lane runs Horner's rule on its own message, two blocks a
 * step, h = (h + m) * r^2 + n * r, with 52-bit multiply-adds in radix 2^44.
 *
 * Built for AVX-512F with IFMA; poly1305_multi_available says whether this
 * CPU runs it (crypto/aead.c otherwise takes Poly1305 from the backend).
 * The accumulators and keys on the stack are wiped before returning. */
#ifndef DDPNET_POLY1305_MULTI_H
#define DDPNET_POLY1305_MULTI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

#define POLY1305_MULTI_LANES 8u

struct poly1305_lane {
    const uint8_t *key;      /* WG_POLY1305_KEY_LEN bytes: r || s (keystream block 0) */
    const uint8_t *ct;       /* the ciphertext, len bytes */
    size_t len;
    uint8_t *tag;            /* WG_AEAD_TAG_LEN bytes out; may lie right after ct */
};

bool poly1305_multi_available(void);

/* For n lanes (1..POLY1305_MULTI_LANES): tag = Poly1305 over ct, zero
 * padded to 16 bytes, then le64(0) || le64(len): the AEAD tag with no AD.
 * Only on a CPU where poly1305_multi_available(). */
void poly1305_multi_aead(const struct poly1305_lane *lanes, unsigned n);

#endif
