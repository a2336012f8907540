/* SPDX-License-Identifier: MIT */
/* The OpenSSL libcrypto backend of crypto/aead.h: ChaCha20-Poly1305
 * (RFC 8439) from libcrypto's ChaCha20 stream and Poly1305 MAC, built when
 * DDPNET_HAVE_OPENSSL is defined (the Makefile does when libcrypto >= 3.0
 * is installed); without it this file only says "not built in".
 *
 * Why the two primitives and not EVP_chacha20_poly1305: that AEAD decrypts
 * while it authenticates and reports a bad tag only at EVP_CipherFinal_ex,
 * after the plaintext is in dst; an in-place packet would be destroyed and a
 * separate dst would hold unauthenticated plaintext. Here opening runs
 * Poly1305 over the ciphertext first and decrypts only once the tag
 * matched, so "dst untouched on failure" holds as with libsodium. It costs
 * nothing: the EVP AEAD also runs ChaCha20 and Poly1305 as two passes, and
 * its per-call set-up is dearer (bench/README.md has the figures).
 *
 * Per thread, lazily (or at aead_thread_init): one ChaCha20 cipher context
 * and one Poly1305 MAC context, reused for every call with a new key and IV,
 * so no packet allocates. The cipher context keeps the last key until the
 * next call or until the thread's contexts are freed (aead_thread_cleanup,
 * or a pthread key destructor at thread exit), which wipes it; the main
 * thread's contexts live until the process exits.
 *
 * libcrypto's ChaCha20 assembly leaves the key on the stack (whole, on its
 * one-block path; as broadcast words on its AVX2 path) and does not wipe
 * it. Every call here therefore ends by zeroing the stack below its own
 * frame, as deep as libcrypto went (tests/unit/test_noise.c searches the
 * stack for keys after each step). */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>

#define DDPNET_AEAD_INTERNAL
#include "crypto/aead.h"

#ifndef DDPNET_HAVE_OPENSSL

const struct aead_ops *aead_openssl_ops(void)
{
    return NULL;
}

#else

#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/opensslv.h>
#include <sodium.h>

#if OPENSSL_VERSION_NUMBER < 0x30000000L
#error "the OpenSSL AEAD backend needs libcrypto 3.0 or later (EVP_MAC)"
#endif

/* libcrypto's ChaCha20 IV: the 32-bit block counter, little-endian, then
 * the 96-bit IETF nonce. */
#define OSSL_IV_COUNTER_LEN sizeof(uint32_t)
#define OSSL_IV_LEN         (OSSL_IV_COUNTER_LEN + WG_AEAD_NONCE_LEN)
/* EVP_CipherUpdate takes an int length: longer input goes in chunks of this
 * many bytes, a whole number of ChaCha20 blocks. */
#define OSSL_CHUNK_LEN      ((size_t)1 << 16)

struct ossl_thread {
    EVP_CIPHER_CTX *cipher;
    EVP_MAC_CTX *mac;
};

/* Fetched once, then only read (libcrypto allows sharing them). */
static EVP_CIPHER *chacha20;
static EVP_MAC *poly1305;
static pthread_once_t fetch_once = PTHREAD_ONCE_INIT;
static pthread_key_t thread_key;
static int usable;

static __thread struct ossl_thread tls;

static const uint8_t zeros[WG_CHACHA20_BLOCK_LEN];

static void openssl_thread_cleanup(void)
{
    /* Both free functions wipe what they held (OPENSSL_clear_free). */
    EVP_MAC_CTX_free(tls.mac);
    EVP_CIPHER_CTX_free(tls.cipher);
    tls.mac = NULL;
    tls.cipher = NULL;
    if (usable)
        pthread_setspecific(thread_key, NULL);
}

static void thread_exit(void *arg)
{
    (void)arg;
    openssl_thread_cleanup();
}

/* A FIPS-only libcrypto has neither algorithm: then the backend is unusable
 * and crypto_core_init's default falls back to libsodium. */
static void fetch_algorithms(void)
{
    chacha20 = EVP_CIPHER_fetch(NULL, "ChaCha20", NULL);
    poly1305 = EVP_MAC_fetch(NULL, "POLY1305", NULL);
    if (chacha20 && poly1305 && pthread_key_create(&thread_key, thread_exit) == 0) {
        usable = 1;
        return;
    }
    EVP_CIPHER_free(chacha20);
    EVP_MAC_free(poly1305);
    chacha20 = NULL;
    poly1305 = NULL;
}

static int openssl_thread_init(void)
{
    if (tls.cipher)
        return 0;
    tls.cipher = EVP_CIPHER_CTX_new();
    tls.mac = EVP_MAC_CTX_new(poly1305);
    /* The cipher is bound once; each call then sets only key and IV, which
     * reuses the provider's context instead of making a new one. */
    if (!tls.cipher || !tls.mac ||
        EVP_CipherInit_ex(tls.cipher, chacha20, NULL, NULL, NULL, 1) != 1 ||
        pthread_setspecific(thread_key, &tls) != 0) {
        openssl_thread_cleanup();
        return -ENOMEM;
    }
    return 0;
}

/* Starts the keystream at block 0 and returns that block, whose head is the
 * Poly1305 one-time key; the cipher then stands at block 1, where the
 * payload starts. */
static int stream_start(uint8_t block0[WG_CHACHA20_BLOCK_LEN],
                        const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t iv[OSSL_IV_LEN] = { 0 };
    int outl;

    memcpy(iv + OSSL_IV_COUNTER_LEN, nonce, WG_AEAD_NONCE_LEN);
    return EVP_CipherInit_ex(tls.cipher, NULL, NULL, key, iv, 1) == 1 &&
           EVP_CipherUpdate(tls.cipher, block0, &outl, zeros, WG_CHACHA20_BLOCK_LEN) == 1;
}

static int stream_xor(uint8_t *dst, const uint8_t *src, size_t len)
{
    while (len) {
        size_t n = len < OSSL_CHUNK_LEN ? len : OSSL_CHUNK_LEN;
        int outl;

        if (EVP_CipherUpdate(tls.cipher, dst, &outl, src, (int)n) != 1)
            return 0;
        dst += n;
        src += n;
        len -= n;
    }
    return 1;
}

/* One field of the AEAD input, zero-padded to a Poly1305 block. */
static int mac_padded(const uint8_t *data, size_t len)
{
    size_t pad = aead_pad_len(len);

    return (!len || EVP_MAC_update(tls.mac, data, len) == 1) &&
           (!pad || EVP_MAC_update(tls.mac, zeros, pad) == 1);
}

/* RFC 8439 section 2.8: tag = Poly1305(pad(ad) || pad(ct) || le64 adlen || le64 ctlen). */
static int mac_tag(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t polykey[WG_POLY1305_KEY_LEN],
                   const uint8_t *ad, size_t adlen, const uint8_t *ct, size_t ctlen)
{
    uint8_t lens[WG_POLY1305_BLOCK_LEN];
    size_t outl = 0;

    aead_length_block(lens, adlen, ctlen);
    return EVP_MAC_init(tls.mac, polykey, WG_POLY1305_KEY_LEN, NULL) == 1 &&
           mac_padded(ad, adlen) && mac_padded(ct, ctlen) &&
           EVP_MAC_update(tls.mac, lens, sizeof(lens)) == 1 &&
           EVP_MAC_final(tls.mac, tag, &outl, WG_AEAD_TAG_LEN) == 1 &&
           outl == WG_AEAD_TAG_LEN;
}

static int openssl_seal(uint8_t *dst, const uint8_t *src, size_t len,
                        const uint8_t *ad, size_t adlen,
                        const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t block0[WG_CHACHA20_BLOCK_LEN];
    int ok, ret = openssl_thread_init();

    if (ret)
        return ret;
    /* Encrypt, then MAC the ciphertext: in place is safe. */
    ok = stream_start(block0, nonce, key) && stream_xor(dst, src, len) &&
         mac_tag(dst + len, block0, ad, adlen, dst, len);
    sodium_memzero(block0, sizeof(block0));
    return ok ? 0 : -EIO;
}

/* len is the ciphertext without the tag, which follows it at src + len. */
static int openssl_open(uint8_t *dst, const uint8_t *src, size_t len,
                        const uint8_t *ad, size_t adlen,
                        const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    uint8_t block0[WG_CHACHA20_BLOCK_LEN], tag[WG_AEAD_TAG_LEN];
    int ret = openssl_thread_init();

    if (ret)
        return ret;
    if (!stream_start(block0, nonce, key) || !mac_tag(tag, block0, ad, adlen, src, len))
        ret = -EIO;
    else if (crypto_verify_16(tag, src + len) != 0)
        ret = -EBADMSG;
    else if (!stream_xor(dst, src, len))   /* only now, from block 1 on */
        ret = -EIO;
    sodium_memzero(block0, sizeof(block0));
    sodium_memzero(tag, sizeof(tag));
    return ret;
}

static int openssl_mac(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t polykey[WG_POLY1305_KEY_LEN],
                       const uint8_t *ad, size_t adlen, const uint8_t *ct, size_t ctlen)
{
    int ok, ret = openssl_thread_init();

    if (ret)
        return ret;
    ok = mac_tag(tag, polykey, ad, adlen, ct, ctlen);
    return ok ? 0 : -EIO;
}

static const struct aead_ops openssl_backend = {
    .id = AEAD_BACKEND_OPENSSL,
    .seal = openssl_seal,
    .open = openssl_open,
    .mac = openssl_mac,
    .thread_init = openssl_thread_init,
    .thread_cleanup = openssl_thread_cleanup,
};

const struct aead_ops *aead_openssl_ops(void)
{
    pthread_once(&fetch_once, fetch_algorithms);
    return usable ? &openssl_backend : NULL;
}

#endif
