/* SPDX-License-Identifier: MIT */
/* mac1, mac2 and cookie replies (see cookie.h).
 * Cookie reply: type | receiver index | nonce 24 | sealed cookie 16+16. */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/bytes.h"
#include "crypto/cookie.h"

#define REPLY_RECEIVER_OFFSET 4
#define REPLY_NONCE_OFFSET    8
#define REPLY_COOKIE_OFFSET   (REPLY_NONCE_OFFSET + WG_XAEAD_NONCE_LEN)

_Static_assert(REPLY_COOKIE_OFFSET + WG_COOKIE_LEN + WG_AEAD_TAG_LEN == WG_COOKIE_REPLY_LEN,
               "cookie reply layout");

/* key = HASH(label || public key) */
static void derive_key(uint8_t key[WG_HASH_LEN], const char *label,
                       const uint8_t pub[WG_KEY_LEN])
{
    struct blake2s_state st;

    blake2s_init(&st, WG_HASH_LEN, NULL, 0);
    blake2s_update(&st, (const uint8_t *)label, strlen(label));
    blake2s_update(&st, pub, WG_KEY_LEN);
    blake2s_final(&st, key);
}

/* Offsets of the MACs in a message of len bytes. */
static size_t mac1_offset(size_t len) { return len - WG_MACS_LEN; }
static size_t mac2_offset(size_t len) { return len - WG_MAC_LEN; }

static void compute_mac(uint8_t mac[WG_MAC_LEN], const uint8_t *key, size_t keylen,
                        const uint8_t *msg, size_t len)
{
    blake2s(mac, WG_MAC_LEN, msg, len, key, keylen);
}

/* cookie = MAC(secret, source address) */
static void compute_cookie(const struct cookie_checker *c, uint8_t cookie[WG_COOKIE_LEN],
                           const uint8_t *src, size_t src_len)
{
    compute_mac(cookie, c->secret, sizeof(c->secret), src, src_len);
}

void cookie_checker_init(struct cookie_checker *c, const uint8_t our_public[WG_KEY_LEN],
                         uint64_t now_ns)
{
    sodium_memzero(c, sizeof(*c));
    derive_key(c->mac1_key, WG_LABEL_MAC1, our_public);
    derive_key(c->cookie_key, WG_LABEL_COOKIE, our_public);
    randombytes_buf(c->secret, sizeof(c->secret));
    c->secret_birth_ns = now_ns;
}

void cookie_checker_rotate(struct cookie_checker *c, uint64_t now_ns)
{
    /* A clock behind the secret's birth is not a reason to rotate. */
    if (now_ns < c->secret_birth_ns ||
        now_ns - c->secret_birth_ns < WG_COOKIE_SECRET_MAX_AGE * WG_NSEC_PER_SEC)
        return;
    randombytes_buf(c->secret, sizeof(c->secret));
    c->secret_birth_ns = now_ns;
}

int cookie_validate(const struct cookie_checker *c, const uint8_t *msg, size_t len,
                    const uint8_t *src, size_t src_len, bool under_load)
{
    uint8_t mac[WG_MAC_LEN], cookie[WG_COOKIE_LEN];
    int ret = 0;

    if (len < WG_MACS_LEN + 4)
        return -EBADMSG;
    compute_mac(mac, c->mac1_key, sizeof(c->mac1_key), msg, mac1_offset(len));
    if (sodium_memcmp(mac, msg + mac1_offset(len), WG_MAC_LEN))
        ret = -EBADMSG;
    else if (under_load) {
        compute_cookie(c, cookie, src, src_len);
        compute_mac(mac, cookie, sizeof(cookie), msg, mac2_offset(len));
        if (sodium_memcmp(mac, msg + mac2_offset(len), WG_MAC_LEN))
            ret = -WG_ECOOKIE;
    }
    sodium_memzero(cookie, sizeof(cookie));
    sodium_memzero(mac, sizeof(mac));
    return ret;
}

int cookie_create_reply(const struct cookie_checker *c, const uint8_t *msg, size_t len,
                        uint32_t receiver_index, const uint8_t *src, size_t src_len,
                        uint8_t out[WG_COOKIE_REPLY_LEN])
{
    uint8_t cookie[WG_COOKIE_LEN];

    if (len < WG_MACS_LEN + 4)
        return -EINVAL;
    memset(out, 0, WG_COOKIE_REPLY_LEN);
    put_le32(out, WG_MSG_COOKIE_REPLY);
    put_le32(out + REPLY_RECEIVER_OFFSET, receiver_index);
    randombytes_buf(out + REPLY_NONCE_OFFSET, WG_XAEAD_NONCE_LEN);
    compute_cookie(c, cookie, src, src_len);
    xaead_seal(out + REPLY_COOKIE_OFFSET, cookie, sizeof(cookie),
               msg + mac1_offset(len), WG_MAC_LEN,
               out + REPLY_NONCE_OFFSET, WG_XAEAD_NONCE_LEN, c->cookie_key);
    sodium_memzero(cookie, sizeof(cookie));
    return 0;
}

void cookie_maker_init(struct cookie_maker *m, const uint8_t peer_public[WG_KEY_LEN])
{
    sodium_memzero(m, sizeof(*m));
    derive_key(m->mac1_key, WG_LABEL_MAC1, peer_public);
    derive_key(m->cookie_key, WG_LABEL_COOKIE, peer_public);
}

static bool cookie_fresh(const struct cookie_maker *m, uint64_t now_ns)
{
    return m->have_cookie && now_ns >= m->cookie_birth_ns &&
           now_ns - m->cookie_birth_ns <
               (WG_COOKIE_SECRET_MAX_AGE - WG_COOKIE_SECRET_LATENCY) * WG_NSEC_PER_SEC;
}

void cookie_add_macs(struct cookie_maker *m, uint8_t *msg, size_t len, uint64_t now_ns)
{
    uint8_t *mac1 = msg + mac1_offset(len), *mac2 = msg + mac2_offset(len);

    compute_mac(mac1, m->mac1_key, sizeof(m->mac1_key), msg, mac1_offset(len));
    memcpy(m->last_mac1, mac1, WG_MAC_LEN);
    m->have_last_mac1 = true;
    if (cookie_fresh(m, now_ns))
        compute_mac(mac2, m->cookie, sizeof(m->cookie), msg, mac2_offset(len));
    else
        memset(mac2, 0, WG_MAC_LEN);
}

uint32_t cookie_reply_receiver(const uint8_t *reply)
{
    return get_le32(reply + REPLY_RECEIVER_OFFSET);
}

int cookie_consume_reply(struct cookie_maker *m, const uint8_t *reply, size_t len,
                         uint64_t now_ns)
{
    uint8_t cookie[WG_COOKIE_LEN];
    int ret;

    if (len != WG_COOKIE_REPLY_LEN || get_le32(reply) != WG_MSG_COOKIE_REPLY)
        return -EINVAL;
    if (!m->have_last_mac1)
        return -EBADMSG;
    ret = xaead_open(cookie, reply + REPLY_COOKIE_OFFSET, WG_COOKIE_LEN + WG_AEAD_TAG_LEN,
                     m->last_mac1, WG_MAC_LEN, reply + REPLY_NONCE_OFFSET,
                     WG_XAEAD_NONCE_LEN, m->cookie_key);
    if (ret == 0) {
        memcpy(m->cookie, cookie, WG_COOKIE_LEN);
        m->cookie_birth_ns = now_ns;
        m->have_cookie = true;
        /* One reply per message of ours: a replayed reply is refused. */
        m->have_last_mac1 = false;
    } else {
        ret = -EBADMSG;
    }
    sodium_memzero(cookie, sizeof(cookie));
    return ret;
}
