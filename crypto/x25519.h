/* SPDX-License-Identifier: MIT */
/* X25519 (RFC 7748) as WireGuard uses it: clamped private keys, and a
 * Diffie-Hellman that refuses an all-zero result (a low-order public key),
 * compared in constant time. Over libsodium. */
#ifndef DDPNET_X25519_H
#define DDPNET_X25519_H

#include <stdint.h>

#include "crypto/wg_const.h"

/* Clamp a private key in place (as `wg genkey` does). */
void x25519_clamp(uint8_t key[WG_KEY_LEN]);
/* A fresh random private key (clamped) and its public key. */
void x25519_generate(uint8_t priv[WG_KEY_LEN], uint8_t pub[WG_KEY_LEN]);
/* pub = priv * base point. Returns 0 or -EINVAL. */
int x25519_public(uint8_t pub[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN]);
/* out = priv * pub. Returns 0, or -EINVAL (out zeroed) when the result is
 * all zeros: the public key has low order. */
int x25519_shared(uint8_t out[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN],
                  const uint8_t pub[WG_KEY_LEN]);

#endif
