/* SPDX-License-Identifier: MIT */
/* The libsodium backend of crypto/aead.h: ChaCha20-Poly1305 (RFC 8439),
 * always built, and the one XChaCha20 relies on for HChaCha20.
 *
 * Sealing is libsodium's AEAD as is. Opening is the same construction put
 * together from libsodium's primitives (keystream block 0 as the Poly1305
 * key, verify, then decrypt from block 1), because libsodium's own
 * decrypt_detached zeroes dst when the tag is wrong; that would destroy an
 * in-place packet, and the contract here is "dst untouched on failure".
 * Doing it ourselves keeps one Poly1305 pass per packet. It keeps no state
 * between calls, so its per-thread hooks do nothing. libsodium's ChaCha20
 * leaves key words on the stack: aead.c wipes it after each call or group
 * of calls (aead_stack_scrub). */
#include <errno.h>
#include <stdint.h>

#include <sodium.h>

#define DDPNET_AEAD_INTERNAL
#include "crypto/aead.h"

static int sodium_seal(uint8_t *dst, const uint8_t *src, size_t len,
                       const uint8_t *ad, size_t adlen,
                       const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    /* libsodium encrypts first, then MACs the ciphertext: in-place is safe. */
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(dst, dst + len, NULL, src, len,
                                                       ad, adlen, NULL, nonce, key);
    return 0;
}

/* Poly1305 over one field of the AEAD input, zero-padded to a block. */
static void mac_padded(crypto_onetimeauth_poly1305_state *st, const uint8_t *data, size_t len)
{
    static const uint8_t zeros[WG_POLY1305_BLOCK_LEN];
    size_t pad = aead_pad_len(len);

    if (len)
        crypto_onetimeauth_poly1305_update(st, data, len);
    if (pad)
        crypto_onetimeauth_poly1305_update(st, zeros, pad);
}

/* RFC 8439 section 2.8: tag = Poly1305(pad(ad) || pad(ct) || le64 adlen || le64 ctlen). */
static int sodium_mac(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t polykey[WG_POLY1305_KEY_LEN],
                      const uint8_t *ad, size_t adlen, const uint8_t *ct, size_t ctlen)
{
    crypto_onetimeauth_poly1305_state st;
    uint8_t lens[WG_POLY1305_BLOCK_LEN];

    crypto_onetimeauth_poly1305_init(&st, polykey);
    mac_padded(&st, ad, adlen);
    mac_padded(&st, ct, ctlen);
    aead_length_block(lens, adlen, ctlen);
    crypto_onetimeauth_poly1305_update(&st, lens, sizeof(lens));
    crypto_onetimeauth_poly1305_final(&st, tag);
    sodium_memzero(&st, sizeof(st));
    return 0;
}

static void aead_tag(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t *ad, size_t adlen,
                     const uint8_t *ct, size_t ctlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t polykey[crypto_onetimeauth_poly1305_KEYBYTES];

    /* The one-time key is the start of keystream block 0. */
    crypto_stream_chacha20_ietf(polykey, sizeof(polykey), nonce, key);
    sodium_mac(tag, polykey, ad, adlen, ct, ctlen);
    sodium_memzero(polykey, sizeof(polykey));
}

/* len is the ciphertext without the tag, which follows it at src + len. */
static int sodium_open(uint8_t *dst, const uint8_t *src, size_t len,
                       const uint8_t *ad, size_t adlen,
                       const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t tag[WG_AEAD_TAG_LEN];
    int bad;

    aead_tag(tag, ad, adlen, src, len, nonce, key);
    bad = crypto_verify_16(tag, src + len);
    sodium_memzero(tag, sizeof(tag));
    if (!bad)   /* only now, and from block 1 on: block 0 went to the Poly1305 key */
        crypto_stream_chacha20_ietf_xor_ic(dst, src, len, nonce, 1, key);
    return bad ? -EBADMSG : 0;
}

static int sodium_thread_init(void)
{
    return 0;
}

static void sodium_thread_cleanup(void)
{
}

const struct aead_ops aead_sodium_backend = {
    .id = AEAD_BACKEND_SODIUM,
    .seal = sodium_seal,
    .open = sodium_open,
    .mac = sodium_mac,
    .thread_init = sodium_thread_init,
    .thread_cleanup = sodium_thread_cleanup,
};
