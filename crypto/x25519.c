/* SPDX-License-Identifier: MIT */
/* X25519 over libsodium, with WireGuard's two rules on top: private keys are
 * clamped when made, and a Diffie-Hellman whose result is all zeros (the
 * peer's public key has low order) is refused and leaves no output. */
#include <errno.h>

#include <sodium.h>

#include "crypto/x25519.h"

/* RFC 7748 section 5: clear the cofactor bits, clear bit 255, set bit 254. */
void x25519_clamp(uint8_t key[WG_KEY_LEN])
{
    key[0] &= 248;
    key[WG_KEY_LEN - 1] &= 127;
    key[WG_KEY_LEN - 1] |= 64;
}

void x25519_generate(uint8_t priv[WG_KEY_LEN], uint8_t pub[WG_KEY_LEN])
{
    randombytes_buf(priv, WG_KEY_LEN);
    x25519_clamp(priv);
    /* Cannot fail: a clamped scalar is never a multiple of the group order. */
    (void)x25519_public(pub, priv);
}

int x25519_public(uint8_t pub[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN])
{
    return crypto_scalarmult_base(pub, priv) == 0 ? 0 : -EINVAL;
}

int x25519_shared(uint8_t out[WG_KEY_LEN], const uint8_t priv[WG_KEY_LEN],
                  const uint8_t pub[WG_KEY_LEN])
{
    int ret = crypto_scalarmult(out, priv, pub);

    /* libsodium already refuses an all-zero result; the rule is ours, so
     * check it here too (in constant time), whatever the backend does. */
    if (ret != 0 || sodium_is_zero(out, WG_KEY_LEN)) {
        sodium_memzero(out, WG_KEY_LEN);
        return -EINVAL;
    }
    return 0;
}
