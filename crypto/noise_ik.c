/* SPDX-License-Identifier: MIT */
/* Noise IKpsk2 patterns, token by token (see noise_ik.h). Every key made
 * here is used for exactly one AEAD operation, so the nonce is always 0. */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/noise_ik.h"
#include "crypto/x25519.h"

/* h = HASH(h || data) */
static void mix_hash(struct noise_symmetric *s, const uint8_t *data, size_t len)
{
    struct blake2s_state st;

    blake2s_init(&st, WG_HASH_LEN, NULL, 0);
    blake2s_update(&st, s->h, WG_HASH_LEN);
    blake2s_update(&st, data, len);
    blake2s_final(&st, s->h);
}

/* ck = KDF1(ck, input), or (ck, key) = KDF2(ck, input) when key is given. */
static void mix_key(struct noise_symmetric *s, uint8_t *key, const uint8_t *in, size_t len)
{
    blake2s_kdf(s->ck, key, NULL, s->ck, in, len);
}

/* (ck, key) = KDF2(ck, DH(priv, pub)); the DH must not be zero. */
static int mix_dh(struct noise_symmetric *s, uint8_t *key, const uint8_t priv[WG_KEY_LEN],
                  const uint8_t pub[WG_KEY_LEN])
{
    uint8_t dh[WG_KEY_LEN];
    int ret = x25519_shared(dh, priv, pub);

    if (ret == 0)
        mix_key(s, key, dh, sizeof(dh));
    sodium_memzero(dh, sizeof(dh));
    return ret;
}

static void encrypt_and_hash(struct noise_symmetric *s, const uint8_t key[WG_KEY_LEN],
                             const uint8_t *plain, size_t len, uint8_t *out)
{
    aead_seal(out, plain, len, s->h, WG_HASH_LEN, 0, key);
    mix_hash(s, out, len + WG_AEAD_TAG_LEN);
}

static int decrypt_and_hash(struct noise_symmetric *s, const uint8_t key[WG_KEY_LEN],
                            const uint8_t *in, size_t len, uint8_t *plain)
{
    int ret = aead_open(plain, in, len + WG_AEAD_TAG_LEN, s->h, WG_HASH_LEN, 0, key);

    if (ret == 0)
        mix_hash(s, in, len + WG_AEAD_TAG_LEN);
    return ret;
}

/* The e token: the ephemeral public key goes in the clear, into the hash,
 * and (psk modes) into the chaining key. */
static void mix_ephemeral(struct noise_symmetric *s, const uint8_t e_pub[WG_KEY_LEN])
{
    mix_hash(s, e_pub, WG_KEY_LEN);
    mix_key(s, NULL, e_pub, WG_KEY_LEN);
}

void noise_ik_init(struct noise_symmetric *s, const uint8_t *prologue, size_t prologue_len,
                   const uint8_t responder_public[WG_KEY_LEN])
{
    /* The protocol name is longer than a hash, so both start as its hash. */
    blake2s(s->ck, WG_HASH_LEN, (const uint8_t *)WG_CONSTRUCTION,
            sizeof(WG_CONSTRUCTION) - 1, NULL, 0);
    memcpy(s->h, s->ck, WG_HASH_LEN);
    mix_hash(s, prologue, prologue_len);
    mix_hash(s, responder_public, WG_KEY_LEN);
}

int noise_ik_write_msg1(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                        const uint8_t s_pub[WG_KEY_LEN], const uint8_t r_pub[WG_KEY_LEN],
                        const uint8_t ss_dh[WG_KEY_LEN],
                        const uint8_t *payload, size_t plen, uint8_t *out)
{
    uint8_t key[WG_KEY_LEN];
    int ret;

    /* e */
    ret = x25519_public(out, e_priv);
    if (ret)
        goto out;
    mix_ephemeral(s, out);
    /* es */
    ret = mix_dh(s, key, e_priv, r_pub);
    if (ret)
        goto out;
    /* s */
    encrypt_and_hash(s, key, s_pub, WG_KEY_LEN, out + WG_KEY_LEN);
    /* ss */
    mix_key(s, key, ss_dh, WG_KEY_LEN);
    /* payload */
    encrypt_and_hash(s, key, payload, plen, out + NOISE_IK_MSG1_PAYLOAD_OFFSET);
out:
    sodium_memzero(key, sizeof(key));
    return ret;
}

int noise_ik_read_msg1_static(struct noise_symmetric *s, const uint8_t r_priv[WG_KEY_LEN],
                              const uint8_t *in, uint8_t e_remote[WG_KEY_LEN],
                              uint8_t s_remote[WG_KEY_LEN])
{
    uint8_t key[WG_KEY_LEN];
    int ret;

    /* e */
    memcpy(e_remote, in, WG_KEY_LEN);
    mix_ephemeral(s, e_remote);
    /* es */
    ret = mix_dh(s, key, r_priv, e_remote);
    if (ret)
        goto out;
    /* s */
    ret = decrypt_and_hash(s, key, in + WG_KEY_LEN, WG_KEY_LEN, s_remote);
out:
    sodium_memzero(key, sizeof(key));
    return ret;
}

int noise_ik_read_msg1_payload(struct noise_symmetric *s, const uint8_t ss_dh[WG_KEY_LEN],
                               const uint8_t *in, size_t plen, uint8_t *payload)
{
    uint8_t key[WG_KEY_LEN];
    int ret;

    /* ss */
    mix_key(s, key, ss_dh, WG_KEY_LEN);
    /* payload */
    ret = decrypt_and_hash(s, key, in + NOISE_IK_MSG1_PAYLOAD_OFFSET, plen, payload);
    sodium_memzero(key, sizeof(key));
    return ret;
}

/* The psk token: (ck, tau, key) = KDF3(ck, psk); h = HASH(h || tau). */
static void mix_psk(struct noise_symmetric *s, uint8_t key[WG_KEY_LEN],
                    const uint8_t psk[WG_KEY_LEN])
{
    uint8_t tau[WG_HASH_LEN];

    blake2s_kdf(s->ck, tau, key, s->ck, psk, WG_KEY_LEN);
    mix_hash(s, tau, sizeof(tau));
    sodium_memzero(tau, sizeof(tau));
}

int noise_ik_write_msg2(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                        const uint8_t e_remote[WG_KEY_LEN], const uint8_t s_remote[WG_KEY_LEN],
                        const uint8_t psk[WG_KEY_LEN],
                        const uint8_t *payload, size_t plen, uint8_t *out)
{
    uint8_t key[WG_KEY_LEN];
    int ret;

    /* e */
    ret = x25519_public(out, e_priv);
    if (ret)
        goto out;
    mix_ephemeral(s, out);
    /* ee */
    ret = mix_dh(s, NULL, e_priv, e_remote);
    if (ret)
        goto out;
    /* se */
    ret = mix_dh(s, NULL, e_priv, s_remote);
    if (ret)
        goto out;
    /* psk */
    mix_psk(s, key, psk);
    /* payload */
    encrypt_and_hash(s, key, payload, plen, out + WG_KEY_LEN);
out:
    sodium_memzero(key, sizeof(key));
    return ret;
}

int noise_ik_read_msg2(struct noise_symmetric *s, const uint8_t e_priv[WG_KEY_LEN],
                       const uint8_t s_priv[WG_KEY_LEN], const uint8_t psk[WG_KEY_LEN],
                       const uint8_t *in, size_t plen, uint8_t *payload)
{
    uint8_t key[WG_KEY_LEN];
    int ret;

    /* e */
    mix_ephemeral(s, in);
    /* ee */
    ret = mix_dh(s, NULL, e_priv, in);
    if (ret)
        goto out;
    /* se */
    ret = mix_dh(s, NULL, s_priv, in);
    if (ret)
        goto out;
    /* psk */
    mix_psk(s, key, psk);
    /* payload */
    ret = decrypt_and_hash(s, key, in + WG_KEY_LEN, plen, payload);
out:
    sodium_memzero(key, sizeof(key));
    return ret;
}

void noise_ik_split(const struct noise_symmetric *s, uint8_t t1[WG_KEY_LEN],
                    uint8_t t2[WG_KEY_LEN])
{
    blake2s_kdf(t1, t2, NULL, s->ck, NULL, 0);
}
