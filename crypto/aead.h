/* The two AEADs of the protocol: ChaCha20-Poly1305 (RFC 8439) for handshake
 * fields and transport data, XChaCha20-Poly1305 for cookie replies. A thin
 * layer over libsodium, so that the data path sees one small interface and
 * another backend can slot in behind it. Opening never writes plaintext
 * that failed authentication. */
#ifndef DDPNET_AEAD_H
#define DDPNET_AEAD_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

/* Must be called once before any other crypto function (sodium_init). */
int crypto_core_init(void);

/* WireGuard's nonce: 32 zero bits then the 64-bit counter, little-endian.
 * dst receives len + WG_AEAD_TAG_LEN bytes; dst may equal src. */
void aead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen, uint64_t counter,
               const uint8_t key[WG_KEY_LEN]);
/* len includes the tag. Returns 0, or -EBADMSG (nothing written to dst
 * that a caller may use) when authentication fails or len < tag. */
int aead_open(uint8_t *dst, const uint8_t *src, size_t len,
              const uint8_t *ad, size_t adlen, uint64_t counter,
              const uint8_t key[WG_KEY_LEN]);

/* The same with an explicit nonce of noncelen bytes; -EINVAL unless
 * noncelen is WG_AEAD_NONCE_LEN. For vector tests and generic callers. */
int aead_seal_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN]);
int aead_open_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN]);

/* XChaCha20-Poly1305; -EINVAL unless noncelen is WG_XAEAD_NONCE_LEN. */
int xaead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN]);
int xaead_open(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN]);

#endif
