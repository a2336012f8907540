/* ChaCha20-Poly1305 (RFC 8439) and XChaCha20-Poly1305 over libsodium: the
 * nonce layout of WireGuard's transport counter, the length limits, and the
 * rule that opening writes nothing to dst until the tag has verified.
 *
 * Sealing is libsodium's AEAD as is. Opening is the same construction put
 * together from libsodium's primitives (keystream block 0 as the Poly1305
 * key, verify, then decrypt from block 1), because libsodium's own
 * decrypt_detached zeroes dst when the tag is wrong; that would destroy an
 * in-place packet, and the contract here is "dst untouched on failure".
 * Doing it ourselves keeps one Poly1305 pass per packet. XChaCha20 is
 * HChaCha20 to a subkey, then the same IETF AEAD (as in
 * draft-irtf-cfrg-xchacha), so both AEADs share one open path. */
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"

/* The 12-byte IETF nonce ends with a 64-bit field: WireGuard's counter, or
 * the tail of an XChaCha20 nonce. What precedes it stays zero. */
#define NONCE_PREFIX_LEN (WG_AEAD_NONCE_LEN - sizeof(uint64_t))
/* The part of an XChaCha20 nonce that HChaCha20 consumes. */
#define XNONCE_HEAD_LEN  crypto_core_hchacha20_INPUTBYTES

/* Largest plaintext either AEAD accepts: the IETF block counter is 32 bits
 * (XChaCha20 runs through the same IETF stream here), and len + tag must
 * still fit a size_t. */
static int aead_len_ok(size_t len)
{
    return len <= SIZE_MAX - WG_AEAD_TAG_LEN &&
           (uint64_t)len <= (uint64_t)crypto_aead_chacha20poly1305_ietf_MESSAGEBYTES_MAX;
}

int crypto_core_init(void)
{
    /* 1 means an earlier call already initialised the library. */
    int ret = sodium_init();

    return ret == 0 || ret == 1 ? 0 : -EIO;
}

static void store_le64(uint8_t *out, uint64_t v)
{
    for (size_t i = 0; i < sizeof(v); i++)
        out[i] = (uint8_t)(v >> (CHAR_BIT * i));
}

static void counter_nonce(uint8_t nonce[WG_AEAD_NONCE_LEN], uint64_t counter)
{
    memset(nonce, 0, NONCE_PREFIX_LEN);
    store_le64(nonce + NONCE_PREFIX_LEN, counter);
}

/* XChaCha20: the first 16 nonce bytes and the key give a subkey; the last 8
 * nonce bytes become the IETF nonce, behind four zero bytes. */
static void xnonce_derive(uint8_t subkey[WG_KEY_LEN], uint8_t nonce[WG_AEAD_NONCE_LEN],
                          const uint8_t xnonce[WG_XAEAD_NONCE_LEN],
                          const uint8_t key[WG_KEY_LEN])
{
    crypto_core_hchacha20(subkey, xnonce, key, NULL);
    memset(nonce, 0, NONCE_PREFIX_LEN);
    memcpy(nonce + NONCE_PREFIX_LEN, xnonce + XNONCE_HEAD_LEN,
           WG_XAEAD_NONCE_LEN - XNONCE_HEAD_LEN);
}

static int seal_ietf(uint8_t *dst, const uint8_t *src, size_t len,
                     const uint8_t *ad, size_t adlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    if (!aead_len_ok(len))
        return -EMSGSIZE;
    /* libsodium encrypts first, then MACs the ciphertext: in-place is safe. */
    crypto_aead_chacha20poly1305_ietf_encrypt_detached(dst, dst + len, NULL, src, len,
                                                       ad, adlen, NULL, nonce, key);
    return 0;
}

/* Poly1305 over one field of the AEAD input, zero-padded to a block. */
static void mac_padded(crypto_onetimeauth_poly1305_state *st, const uint8_t *data, size_t len)
{
    static const uint8_t zeros[WG_POLY1305_BLOCK_LEN];
    size_t rem = len % WG_POLY1305_BLOCK_LEN;

    if (len)
        crypto_onetimeauth_poly1305_update(st, data, len);
    if (rem)
        crypto_onetimeauth_poly1305_update(st, zeros, WG_POLY1305_BLOCK_LEN - rem);
}

/* RFC 8439 section 2.8: tag = Poly1305(pad(ad) || pad(ct) || le64 adlen || le64 ctlen). */
static void aead_tag(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t *ad, size_t adlen,
                     const uint8_t *ct, size_t ctlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    crypto_onetimeauth_poly1305_state st;
    uint8_t polykey[crypto_onetimeauth_poly1305_KEYBYTES];
    uint8_t lens[2 * sizeof(uint64_t)];

    /* The one-time key is the start of keystream block 0. */
    crypto_stream_chacha20_ietf(polykey, sizeof(polykey), nonce, key);
    crypto_onetimeauth_poly1305_init(&st, polykey);
    mac_padded(&st, ad, adlen);
    mac_padded(&st, ct, ctlen);
    store_le64(lens, (uint64_t)adlen);
    store_le64(lens + sizeof(uint64_t), (uint64_t)ctlen);
    crypto_onetimeauth_poly1305_update(&st, lens, sizeof(lens));
    crypto_onetimeauth_poly1305_final(&st, tag);
    sodium_memzero(polykey, sizeof(polykey));
    sodium_memzero(&st, sizeof(st));
}

static int open_ietf(uint8_t *dst, const uint8_t *src, size_t len,
                     const uint8_t *ad, size_t adlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t tag[WG_AEAD_TAG_LEN];
    size_t mlen;
    int bad;

    if (len < WG_AEAD_TAG_LEN)
        return -EBADMSG;
    mlen = len - WG_AEAD_TAG_LEN;
    if (!aead_len_ok(mlen))
        return -EMSGSIZE;
    aead_tag(tag, ad, adlen, src, mlen, nonce, key);
    bad = crypto_verify_16(tag, src + mlen);
    sodium_memzero(tag, sizeof(tag));
    if (bad)
        return -EBADMSG;
    /* Only now, and from block 1 on: block 0 went to the Poly1305 key. */
    crypto_stream_chacha20_ietf_xor_ic(dst, src, mlen, nonce, 1, key);
    return 0;
}

void aead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen, uint64_t counter,
               const uint8_t key[WG_KEY_LEN])
{
    uint8_t nonce[WG_AEAD_NONCE_LEN];

    counter_nonce(nonce, counter);
    /* No caller can own a dst that large, and there is no status to return:
     * treat it as libsodium treats misuse (its handler, then abort), rather
     * than hand back a buffer that was never written. */
    if (seal_ietf(dst, src, len, ad, adlen, nonce, key) != 0)
        sodium_misuse();
}

int aead_open(uint8_t *dst, const uint8_t *src, size_t len,
              const uint8_t *ad, size_t adlen, uint64_t counter,
              const uint8_t key[WG_KEY_LEN])
{
    uint8_t nonce[WG_AEAD_NONCE_LEN];

    counter_nonce(nonce, counter);
    return open_ietf(dst, src, len, ad, adlen, nonce, key);
}

int aead_seal_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN])
{
    if (noncelen != WG_AEAD_NONCE_LEN)
        return -EINVAL;
    return seal_ietf(dst, src, len, ad, adlen, nonce, key);
}

int aead_open_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN])
{
    if (noncelen != WG_AEAD_NONCE_LEN)
        return -EINVAL;
    return open_ietf(dst, src, len, ad, adlen, nonce, key);
}

int xaead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN])
{
    uint8_t subkey[WG_KEY_LEN], inonce[WG_AEAD_NONCE_LEN];
    int ret;

    if (noncelen != WG_XAEAD_NONCE_LEN)
        return -EINVAL;
    xnonce_derive(subkey, inonce, nonce, key);
    ret = seal_ietf(dst, src, len, ad, adlen, inonce, subkey);
    sodium_memzero(subkey, sizeof(subkey));
    return ret;
}

int xaead_open(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN])
{
    uint8_t subkey[WG_KEY_LEN], inonce[WG_AEAD_NONCE_LEN];
    int ret;

    if (noncelen != WG_XAEAD_NONCE_LEN)
        return -EINVAL;
    xnonce_derive(subkey, inonce, nonce, key);
    ret = open_ietf(dst, src, len, ad, adlen, inonce, subkey);
    sodium_memzero(subkey, sizeof(subkey));
    return ret;
}
