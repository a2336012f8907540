/* SPDX-License-Identifier: MIT */
/* Tests for crypto/cookie: mac1 over synthetic handshake-shaped messages
 * (148 bytes of type 1, 92 of type 2), the under-load exchange (cookie
 * reply, mac2, source address binding), every way a cookie reply is
 * refused, the maker's cookie lifetime and the checker's secret rotation,
 * and the key derivations recomputed independently: with crypto/blake2s.h
 * and libsodium's XChaCha20-Poly1305 here, and a known answer computed
 * once with Python's hashlib (another BLAKE2s implementation). */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/cookie.h"
#include "crypto/x25519.h"
#include "tests/unit/alloc_count.h"
#include "tests/unit/vectors.h"

#define NSEC      WG_NSEC_PER_SEC
#define NOW       (UINT64_C(5000) * NSEC)
#define MAX_MSG   WG_INITIATION_LEN
#define FRESH_NS  ((uint64_t)(WG_COOKIE_SECRET_MAX_AGE - WG_COOKIE_SECRET_LATENCY) * NSEC)
#define ROTATE_NS ((uint64_t)WG_COOKIE_SECRET_MAX_AGE * NSEC)

struct shape {
    size_t len;
    uint8_t type;
};

/* An initiation and a response: the two messages that carry MACs. */
static const struct shape shapes[] = {
    { WG_INITIATION_LEN, WG_MSG_INITIATION },
    { WG_RESPONSE_LEN, WG_MSG_RESPONSE },
};

/* Source addresses: IPv4 and port, another IPv4, IPv6 and port. */
static const uint8_t src1[] = { 192, 0, 2, 1, 0xca, 0x6c };
static const uint8_t src2[] = { 192, 0, 2, 2, 0xca, 0x6c };
static const uint8_t src6[] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                0xca, 0x6c };

static uint8_t a_priv[WG_KEY_LEN], a_pub[WG_KEY_LEN];
static uint8_t b_priv[WG_KEY_LEN], b_pub[WG_KEY_LEN];
static uint8_t c_priv[WG_KEY_LEN], c_pub[WG_KEY_LEN];

/* B's checker; A's maker for messages to B. */
static struct cookie_checker chk;
static struct cookie_maker mk;

static uint32_t le32_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int group_setup(void **state)
{
    (void)state;
    if (crypto_core_init())
        return -1;
    x25519_generate(a_priv, a_pub);
    x25519_generate(b_priv, b_pub);
    x25519_generate(c_priv, c_pub);
    return 0;
}

static int pair_setup(void **state)
{
    (void)state;
    cookie_checker_init(&chk, b_pub, NOW);
    cookie_maker_init(&mk, b_pub);
    return 0;
}

/* Random bytes with a handshake-like head; the MAC fields start zero. */
static void make_msg(uint8_t *msg, const struct shape *s)
{
    randombytes_buf(msg, s->len);
    msg[0] = s->type;
    msg[1] = msg[2] = msg[3] = 0;
    memset(msg + s->len - WG_MACS_LEN, 0, WG_MACS_LEN);
}

static const uint8_t *mac1_of(const uint8_t *msg, size_t len)
{
    return msg + len - WG_MACS_LEN;
}

static const uint8_t *mac2_of(const uint8_t *msg, size_t len)
{
    return msg + len - WG_MAC_LEN;
}

static bool all_zero(const uint8_t *p, size_t len)
{
    uint8_t acc = 0;

    for (size_t i = 0; i < len; i++)
        acc |= p[i];
    return acc == 0;
}

/* Sends a message from A, has B answer it with a cookie reply for src1,
 * and A take the reply. */
static void get_cookie(uint64_t now)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN];

    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, shapes[0].len, now);
    assert_int_equal(cookie_create_reply(&chk, msg, shapes[0].len, le32_at(msg + 4),
                                         src1, sizeof(src1), reply), 0);
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), now), 0);
}

/* --- mac1 ------------------------------------------------------------------------ */

static void test_mac1_valid(void **state)
{
    uint8_t msg[MAX_MSG];

    (void)state;
    for (size_t s = 0; s < 2; s++) {
        size_t len = shapes[s].len;

        make_msg(msg, &shapes[s]);
        memset(msg + len - WG_MACS_LEN, 0xaa, WG_MACS_LEN);   /* overwritten */
        cookie_add_macs(&mk, msg, len, NOW);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
        assert_false(all_zero(mac1_of(msg, len), WG_MAC_LEN));
        /* No cookie yet: mac2 is all zero. */
        assert_true(all_zero(mac2_of(msg, len), WG_MAC_LEN));
        assert_true(mk.have_last_mac1);
        assert_memory_equal(mk.last_mac1, mac1_of(msg, len), WG_MAC_LEN);
        /* The source does not matter to mac1. */
        assert_int_equal(cookie_validate(&chk, msg, len, src6, sizeof(src6), false), 0);
        assert_int_equal(cookie_validate(&chk, msg, len, NULL, 0, false), 0);
    }
    /* Without a cookie there is no mac2 at any time, even early on a clock
     * that starts near zero. */
    for (uint64_t t = 0; t <= 2 * NSEC; t += NSEC) {
        cookie_add_macs(&mk, msg, shapes[1].len, t);
        assert_true(all_zero(mac2_of(msg, shapes[1].len), WG_MAC_LEN));
    }
}

static void test_mac1_every_byte_flipped(void **state)
{
    static const uint8_t masks[] = { 0x01, 0x80, 0xff };
    uint8_t msg[MAX_MSG];

    (void)state;
    for (size_t s = 0; s < 2; s++) {
        size_t len = shapes[s].len;

        make_msg(msg, &shapes[s]);
        cookie_add_macs(&mk, msg, len, NOW);
        for (size_t i = 0; i < len - WG_MAC_LEN; i++)
            for (size_t m = 0; m < sizeof(masks); m++) {
                msg[i] ^= masks[m];
                /* Under load too: a bad mac1 is dropped, never answered
                 * with a cookie. */
                if (cookie_validate(&chk, msg, len, src1, sizeof(src1), false) != -EBADMSG ||
                    cookie_validate(&chk, msg, len, src1, sizeof(src1), true) != -EBADMSG)
                    fail_msg("len %zu: byte %zu ^ 0x%02x accepted", len, i, masks[m]);
                msg[i] ^= masks[m];
            }
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
    }
}

/* mac2 is not looked at unless under load. */
static void test_mac2_ignored_when_not_under_load(void **state)
{
    uint8_t msg[MAX_MSG];
    size_t len = shapes[1].len;

    (void)state;
    make_msg(msg, &shapes[1]);
    cookie_add_macs(&mk, msg, len, NOW);
    for (size_t i = len - WG_MAC_LEN; i < len; i++) {
        msg[i] ^= 0x5a;
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true),
                         -WG_ECOOKIE);
        msg[i] ^= 0x5a;
    }
}

static void test_mac1_other_key(void **state)
{
    struct cookie_checker other;
    struct cookie_maker to_c;
    uint8_t msg[MAX_MSG];

    (void)state;
    cookie_checker_init(&other, c_pub, NOW);
    cookie_maker_init(&to_c, c_pub);
    for (size_t s = 0; s < 2; s++) {
        size_t len = shapes[s].len;

        make_msg(msg, &shapes[s]);
        cookie_add_macs(&mk, msg, len, NOW);        /* for B */
        assert_int_equal(cookie_validate(&other, msg, len, src1, sizeof(src1), false),
                         -EBADMSG);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
        cookie_add_macs(&to_c, msg, len, NOW);      /* for C */
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false),
                         -EBADMSG);
        assert_int_equal(cookie_validate(&other, msg, len, src1, sizeof(src1), false), 0);
    }
}

/* The MACs sit at the end: the same bytes read with another length fail. */
static void test_mac1_wrong_length(void **state)
{
    uint8_t msg[MAX_MSG + 1];
    size_t len = shapes[1].len;

    (void)state;
    make_msg(msg, &shapes[1]);
    msg[len] = 0;
    cookie_add_macs(&mk, msg, len, NOW);
    assert_int_equal(cookie_validate(&chk, msg, len - 1, src1, sizeof(src1), false), -EBADMSG);
    assert_int_equal(cookie_validate(&chk, msg, len + 1, src1, sizeof(src1), false), -EBADMSG);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
}

static void test_short_messages(void **state)
{
    const size_t min = WG_MACS_LEN + 4;
    uint8_t msg[WG_MACS_LEN + 4], reply[WG_COOKIE_REPLY_LEN];

    (void)state;
    assert_int_equal(min, 36);
    randombytes_buf(msg, sizeof(msg));
    for (size_t len = 0; len < min; len++) {
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), -EBADMSG);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), -EBADMSG);
        assert_int_equal(cookie_create_reply(&chk, msg, len, 1, src1, sizeof(src1), reply),
                         -EINVAL);
    }
    /* Too short even when mac1 is right for that length. */
    for (size_t len = WG_MACS_LEN; len < min; len++) {
        cookie_add_macs(&mk, msg, len, NOW);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), -EBADMSG);
    }
    /* The shortest message allowed works end to end. */
    cookie_add_macs(&mk, msg, min, NOW);
    assert_int_equal(cookie_validate(&chk, msg, min, src1, sizeof(src1), false), 0);
    assert_int_equal(cookie_create_reply(&chk, msg, min, 1, src1, sizeof(src1), reply), 0);
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
}

/* --- under load: cookie replies and mac2 ----------------------------------------------- */

/* The reply decrypted by libsodium directly, under HASH("cookie--" || B),
 * with mac1 as AD, must hold MAC(secret, source). */
static void check_reply_independently(const uint8_t reply[WG_COOKIE_REPLY_LEN],
                                      const uint8_t mac1[WG_MAC_LEN],
                                      const uint8_t *src, size_t src_len,
                                      uint8_t cookie[WG_COOKIE_LEN])
{
    uint8_t label_pub[8 + WG_KEY_LEN], key[WG_HASH_LEN], want[WG_COOKIE_LEN];
    unsigned long long clen = 0;

    memcpy(label_pub, WG_LABEL_COOKIE, 8);
    memcpy(label_pub + 8, b_pub, WG_KEY_LEN);
    blake2s(key, WG_HASH_LEN, label_pub, sizeof(label_pub), NULL, 0);
    assert_int_equal(crypto_aead_xchacha20poly1305_ietf_decrypt(
                         cookie, &clen, NULL, reply + 8 + WG_XAEAD_NONCE_LEN,
                         WG_COOKIE_LEN + WG_AEAD_TAG_LEN, mac1, WG_MAC_LEN, reply + 8, key),
                     0);
    assert_int_equal(clen, WG_COOKIE_LEN);
    blake2s(want, WG_COOKIE_LEN, src, src_len, chk.secret, sizeof(chk.secret));
    assert_memory_equal(cookie, want, WG_COOKIE_LEN);
}

static void test_under_load_exchange(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN], cookie[WG_COOKIE_LEN], mac2[WG_MAC_LEN];

    (void)state;
    for (size_t s = 0; s < 2; s++) {
        size_t len = shapes[s].len;
        uint32_t sender;

        pair_setup(NULL);
        make_msg(msg, &shapes[s]);
        sender = le32_at(msg + 4);
        cookie_add_macs(&mk, msg, len, NOW);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), -WG_ECOOKIE);

        memset(reply, 0xee, sizeof(reply));
        assert_int_equal(cookie_create_reply(&chk, msg, len, sender, src1, sizeof(src1), reply),
                         0);
        assert_int_equal(le32_at(reply), WG_MSG_COOKIE_REPLY);
        assert_int_equal(reply[0], 3);
        assert_int_equal(reply[1] | reply[2] | reply[3], 0);
        assert_int_equal(le32_at(reply + 4), sender);
        assert_int_equal(cookie_reply_receiver(reply), sender);
        check_reply_independently(reply, mac1_of(msg, len), src1, sizeof(src1), cookie);

        assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
        assert_true(mk.have_cookie);

        /* A new message now carries mac2 = MAC(cookie, msg up to mac2). */
        make_msg(msg, &shapes[s]);
        cookie_add_macs(&mk, msg, len, NOW + NSEC);
        blake2s(mac2, WG_MAC_LEN, msg, len - WG_MAC_LEN, cookie, sizeof(cookie));
        assert_memory_equal(mac2_of(msg, len), mac2, WG_MAC_LEN);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
        /* The cookie is bound to the source address. */
        assert_int_equal(cookie_validate(&chk, msg, len, src2, sizeof(src2), true), -WG_ECOOKIE);
        assert_int_equal(cookie_validate(&chk, msg, len, src6, sizeof(src6), true), -WG_ECOOKIE);
        assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1) - 1, true),
                         -WG_ECOOKIE);
        assert_int_equal(cookie_validate(&chk, msg, len, src2, sizeof(src2), false), 0);
    }
}

/* Two replies for the same message carry different nonces. */
static void test_reply_nonce_fresh(void **state)
{
    uint8_t msg[MAX_MSG], r1[WG_COOKIE_REPLY_LEN], r2[WG_COOKIE_REPLY_LEN];

    (void)state;
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, shapes[0].len, NOW);
    assert_int_equal(cookie_create_reply(&chk, msg, shapes[0].len, 7, src1, sizeof(src1), r1), 0);
    assert_int_equal(cookie_create_reply(&chk, msg, shapes[0].len, 7, src1, sizeof(src1), r2), 0);
    assert_memory_not_equal(r1 + 8, r2 + 8, WG_XAEAD_NONCE_LEN);
    assert_int_equal(cookie_consume_reply(&mk, r2, sizeof(r2), NOW), 0);
}

/* --- refused replies ------------------------------------------------------------------------ */

/* A maker with a message outstanding and B's reply to it. */
static void outstanding(uint8_t reply[WG_COOKIE_REPLY_LEN], uint8_t *msg)
{
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, shapes[0].len, NOW);
    assert_int_equal(cookie_create_reply(&chk, msg, shapes[0].len, le32_at(msg + 4),
                                         src1, sizeof(src1), reply), 0);
}

static void test_reply_every_byte_flipped(void **state)
{
    static const uint8_t masks[] = { 0x01, 0x80, 0xff };
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN], bad[WG_COOKIE_REPLY_LEN];
    struct cookie_maker saved;

    (void)state;
    outstanding(reply, msg);
    memcpy(&saved, &mk, sizeof(saved));
    for (size_t i = 0; i < sizeof(reply); i++)
        for (size_t m = 0; m < sizeof(masks); m++) {
            int want = i < 4 ? -EINVAL : -EBADMSG, ret;

            /* The receiver index is the lookup key, outside the AEAD (as
             * in WireGuard): once the reply reached this maker it is valid. */
            if (i >= 4 && i < 8)
                continue;
            memcpy(bad, reply, sizeof(bad));
            bad[i] ^= masks[m];
            ret = cookie_consume_reply(&mk, bad, sizeof(bad), NOW);
            if (ret != want)
                fail_msg("byte %zu ^ 0x%02x: got %d, want %d", i, masks[m], ret, want);
            if (memcmp(&mk, &saved, sizeof(saved)) != 0)
                fail_msg("byte %zu ^ 0x%02x: maker changed", i, masks[m]);
        }
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
}

/* The receiver index is not authenticated: the caller's lookup by index
 * is what routes a reply; the maker accepts it whatever the index says. */
static void test_reply_index_not_authenticated(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN];

    (void)state;
    outstanding(reply, msg);
    reply[5] ^= 0x40;
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
}

static void test_reply_replayed(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN];
    struct cookie_maker saved;

    (void)state;
    outstanding(reply, msg);
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
    memcpy(&saved, &mk, sizeof(saved));
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW + NSEC), -EBADMSG);
    assert_memory_equal(&mk, &saved, sizeof(saved));
    assert_int_equal(mk.cookie_birth_ns, NOW);
}

static void test_reply_without_message(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN];
    struct cookie_maker fresh, saved;

    (void)state;
    outstanding(reply, msg);
    cookie_maker_init(&fresh, b_pub);
    memcpy(&saved, &fresh, sizeof(saved));
    assert_int_equal(cookie_consume_reply(&fresh, reply, sizeof(reply), NOW), -EBADMSG);
    assert_memory_equal(&fresh, &saved, sizeof(saved));
    assert_false(fresh.have_cookie);
}

/* A reply to our older message is refused once a newer one went out. */
static void test_reply_for_other_message(void **state)
{
    uint8_t msg1[MAX_MSG], msg2[MAX_MSG], reply1[WG_COOKIE_REPLY_LEN];
    uint8_t reply2[WG_COOKIE_REPLY_LEN];
    struct cookie_maker saved;

    (void)state;
    outstanding(reply1, msg1);
    make_msg(msg2, &shapes[1]);
    cookie_add_macs(&mk, msg2, shapes[1].len, NOW);
    memcpy(&saved, &mk, sizeof(saved));
    assert_int_equal(cookie_consume_reply(&mk, reply1, sizeof(reply1), NOW), -EBADMSG);
    assert_memory_equal(&mk, &saved, sizeof(saved));
    assert_int_equal(cookie_create_reply(&chk, msg2, shapes[1].len, 9, src1, sizeof(src1),
                                         reply2), 0);
    assert_int_equal(cookie_consume_reply(&mk, reply2, sizeof(reply2), NOW), 0);
}

/* A reply sealed by a checker with another public key (C's). */
static void test_reply_from_other_checker(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN];
    struct cookie_checker other;
    struct cookie_maker saved;

    (void)state;
    cookie_checker_init(&other, c_pub, NOW);
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, shapes[0].len, NOW);
    assert_int_equal(cookie_create_reply(&other, msg, shapes[0].len, 1, src1, sizeof(src1),
                                         reply), 0);
    memcpy(&saved, &mk, sizeof(saved));
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), -EBADMSG);
    assert_memory_equal(&mk, &saved, sizeof(saved));
}

static void test_reply_wrong_length(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN + 1];
    struct cookie_maker saved;

    (void)state;
    outstanding(reply, msg);
    reply[WG_COOKIE_REPLY_LEN] = 0;
    memcpy(&saved, &mk, sizeof(saved));
    for (size_t len = 0; len <= WG_COOKIE_REPLY_LEN + 1; len++) {
        if (len == WG_COOKIE_REPLY_LEN)
            continue;
        assert_int_equal(cookie_consume_reply(&mk, reply, len, NOW), -EINVAL);
    }
    assert_memory_equal(&mk, &saved, sizeof(saved));
    /* The other message types, at the right length. */
    for (uint8_t t = 0; t < 8; t++) {
        if (t == WG_MSG_COOKIE_REPLY)
            continue;
        reply[0] = t;
        assert_int_equal(cookie_consume_reply(&mk, reply, WG_COOKIE_REPLY_LEN, NOW), -EINVAL);
    }
    reply[0] = WG_MSG_COOKIE_REPLY;
    assert_int_equal(cookie_consume_reply(&mk, reply, WG_COOKIE_REPLY_LEN, NOW), 0);
}

/* --- lifetimes ------------------------------------------------------------------------------ */

static void test_cookie_freshness(void **state)
{
    uint8_t msg[MAX_MSG];
    size_t len = shapes[0].len;

    (void)state;
    get_cookie(NOW);
    /* Just before MAX_AGE - LATENCY: mac2 present and valid. */
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, len, NOW + FRESH_NS - 1);
    assert_false(all_zero(mac2_of(msg, len), WG_MAC_LEN));
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);
    /* At it: the maker stops using the cookie. */
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, len, NOW + FRESH_NS);
    assert_true(all_zero(mac2_of(msg, len), WG_MAC_LEN));
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), -WG_ECOOKIE);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);
    cookie_add_macs(&mk, msg, len, NOW + 10 * FRESH_NS);
    assert_true(all_zero(mac2_of(msg, len), WG_MAC_LEN));
    /* A new reply renews it. */
    get_cookie(NOW + FRESH_NS);
    cookie_add_macs(&mk, msg, len, NOW + FRESH_NS + 1);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);
}

static void test_secret_rotation(void **state)
{
    uint8_t msg[MAX_MSG];
    size_t len = shapes[0].len;
    struct cookie_checker saved;

    (void)state;
    get_cookie(NOW);
    make_msg(msg, &shapes[0]);
    cookie_add_macs(&mk, msg, len, NOW + NSEC);
    memcpy(&saved, &chk, sizeof(saved));

    cookie_checker_rotate(&chk, NOW);
    cookie_checker_rotate(&chk, NOW + ROTATE_NS - 1);
    assert_memory_equal(&chk, &saved, sizeof(saved));
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);

    cookie_checker_rotate(&chk, NOW + ROTATE_NS);
    assert_memory_not_equal(chk.secret, saved.secret, sizeof(saved.secret));
    assert_int_equal(chk.secret_birth_ns, NOW + ROTATE_NS);
    assert_memory_equal(chk.mac1_key, saved.mac1_key, sizeof(saved.mac1_key));
    assert_memory_equal(chk.cookie_key, saved.cookie_key, sizeof(saved.cookie_key));
    /* The old cookie's mac2 no longer validates; mac1 still does. */
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), -WG_ECOOKIE);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), false), 0);

    /* The next rotation counts from this one. */
    memcpy(&saved, &chk, sizeof(saved));
    cookie_checker_rotate(&chk, NOW + 2 * ROTATE_NS - 1);
    assert_memory_equal(&chk, &saved, sizeof(saved));
    /* A cookie under the new secret works. */
    get_cookie(NOW + ROTATE_NS + NSEC);
    cookie_add_macs(&mk, msg, len, NOW + ROTATE_NS + 2 * NSEC);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);
}

/* --- no side effects, no heap ------------------------------------------------------------------- */

static void test_validate_changes_nothing(void **state)
{
    uint8_t good[MAX_MSG], junk[MAX_MSG];
    struct cookie_checker saved;
    int r[8];
    size_t before;

    (void)state;
    get_cookie(NOW);
    make_msg(good, &shapes[0]);
    cookie_add_macs(&mk, good, shapes[0].len, NOW);
    randombytes_buf(junk, sizeof(junk));
    memcpy(&saved, &chk, sizeof(saved));
    before = alloc_count();
    r[0] = cookie_validate(&chk, good, shapes[0].len, src1, sizeof(src1), true);
    r[1] = cookie_validate(&chk, good, shapes[0].len, src2, sizeof(src2), true);
    r[2] = cookie_validate(&chk, good, shapes[0].len, src1, sizeof(src1), false);
    r[3] = cookie_validate(&chk, junk, sizeof(junk), src1, sizeof(src1), true);
    r[4] = cookie_validate(&chk, junk, sizeof(junk), src1, sizeof(src1), false);
    r[5] = cookie_validate(&chk, junk, 10, src1, sizeof(src1), true);
    r[6] = cookie_validate(&chk, junk, WG_RESPONSE_LEN, NULL, 0, true);
    r[7] = cookie_validate(&chk, good, shapes[0].len, src1, sizeof(src1), true);
    assert_int_equal(alloc_count(), before);
    assert_memory_equal(&chk, &saved, sizeof(saved));
    assert_int_equal(r[0], 0);
    assert_int_equal(r[1], -WG_ECOOKIE);
    assert_int_equal(r[2], 0);
    assert_int_equal(r[3], -EBADMSG);
    assert_int_equal(r[4], -EBADMSG);
    assert_int_equal(r[5], -EBADMSG);
    assert_int_equal(r[6], -EBADMSG);
    assert_int_equal(r[7], 0);
}

static void test_no_allocation(void **state)
{
    uint8_t msg[MAX_MSG], reply[WG_COOKIE_REPLY_LEN], junk[WG_COOKIE_REPLY_LEN];
    struct cookie_checker c2;
    struct cookie_maker m2;
    int r[6];
    size_t before;

    (void)state;
    randombytes_buf(junk, sizeof(junk));
    junk[0] = WG_MSG_COOKIE_REPLY;
    junk[1] = junk[2] = junk[3] = 0;
    make_msg(msg, &shapes[0]);
    before = alloc_count();
    cookie_checker_init(&c2, b_pub, NOW);
    cookie_maker_init(&m2, b_pub);
    cookie_add_macs(&m2, msg, shapes[0].len, NOW);
    r[0] = cookie_consume_reply(&m2, junk, sizeof(junk), NOW);
    r[1] = cookie_consume_reply(&m2, junk, 5, NOW);
    r[2] = cookie_create_reply(&c2, msg, shapes[0].len, 3, src1, sizeof(src1), reply);
    r[3] = cookie_consume_reply(&m2, reply, sizeof(reply), NOW);
    r[4] = cookie_consume_reply(&m2, reply, sizeof(reply), NOW);
    cookie_add_macs(&m2, msg, shapes[0].len, NOW);
    r[5] = cookie_validate(&c2, msg, shapes[0].len, src1, sizeof(src1), true);
    cookie_checker_rotate(&c2, NOW + ROTATE_NS);
    assert_int_equal(alloc_count(), before);
    assert_int_equal(r[0], -EBADMSG);
    assert_int_equal(r[1], -EINVAL);
    assert_int_equal(r[2], 0);
    assert_int_equal(r[3], 0);
    assert_int_equal(r[4], -EBADMSG);
    assert_int_equal(r[5], 0);
}

/* --- key derivation, checked independently ------------------------------------------------------- */

static void test_mac1_derivation(void **state)
{
    uint8_t label_pub[8 + WG_KEY_LEN], key[WG_HASH_LEN], mac[WG_MAC_LEN], msg[MAX_MSG];

    (void)state;
    memcpy(label_pub, WG_LABEL_MAC1, 8);
    memcpy(label_pub + 8, b_pub, WG_KEY_LEN);
    blake2s(key, WG_HASH_LEN, label_pub, sizeof(label_pub), NULL, 0);
    assert_memory_equal(chk.mac1_key, key, WG_HASH_LEN);
    assert_memory_equal(mk.mac1_key, key, WG_HASH_LEN);
    for (size_t s = 0; s < 2; s++) {
        size_t len = shapes[s].len;

        make_msg(msg, &shapes[s]);
        cookie_add_macs(&mk, msg, len, NOW);
        blake2s(mac, WG_MAC_LEN, msg, len - WG_MACS_LEN, key, sizeof(key));
        assert_memory_equal(mac1_of(msg, len), mac, WG_MAC_LEN);
    }
}

/* Known answer from Python's hashlib.blake2s for fixed inputs: public key
 * byte i = 11 i + 5, message byte i = 7 i + 1 (type 1, reserved zero),
 * secret byte i = 0xa0 + i, source src1. */
static void test_known_answer(void **state)
{
    uint8_t pub[WG_KEY_LEN], msg[WG_INITIATION_LEN], reply[WG_COOKIE_REPLY_LEN];
    uint8_t want_mac1_key[WG_HASH_LEN], want_cookie_key[WG_HASH_LEN];
    uint8_t want_mac1[WG_MAC_LEN], want_cookie[WG_COOKIE_LEN], want_mac2[WG_MAC_LEN];
    const size_t len = sizeof(msg);

    (void)state;
    hex_decode_to(want_mac1_key, sizeof(want_mac1_key),
                  "0c95b3bbe8e4666085af5f2ebdc2ee718cfd0db2611f66cc39638e1c299e0ccb");
    hex_decode_to(want_cookie_key, sizeof(want_cookie_key),
                  "8ef32eb416c3c5403a876ddef27d3c0f48975dddbb61589c11ef11d81fb1f5ea");
    hex_decode_to(want_mac1, sizeof(want_mac1), "3fb27361dce5343e9a45a83e92f92a9b");
    hex_decode_to(want_cookie, sizeof(want_cookie), "7016835937852edc1b8d8fdb64effd95");
    hex_decode_to(want_mac2, sizeof(want_mac2), "ca7376085e953d822a40f0374315d562");
    for (size_t i = 0; i < sizeof(pub); i++)
        pub[i] = (uint8_t)(11 * i + 5);
    for (size_t i = 0; i < len; i++)
        msg[i] = (uint8_t)(7 * i + 1);
    msg[0] = WG_MSG_INITIATION;
    msg[1] = msg[2] = msg[3] = 0;

    cookie_checker_init(&chk, pub, NOW);
    cookie_maker_init(&mk, pub);
    for (size_t i = 0; i < sizeof(chk.secret); i++)
        chk.secret[i] = (uint8_t)(0xa0 + i);
    assert_memory_equal(chk.mac1_key, want_mac1_key, WG_HASH_LEN);
    assert_memory_equal(mk.mac1_key, want_mac1_key, WG_HASH_LEN);
    assert_memory_equal(chk.cookie_key, want_cookie_key, WG_HASH_LEN);
    assert_memory_equal(mk.cookie_key, want_cookie_key, WG_HASH_LEN);

    cookie_add_macs(&mk, msg, len, NOW);
    assert_memory_equal(mac1_of(msg, len), want_mac1, WG_MAC_LEN);
    assert_int_equal(cookie_create_reply(&chk, msg, len, 1, src1, sizeof(src1), reply), 0);
    assert_int_equal(cookie_consume_reply(&mk, reply, sizeof(reply), NOW), 0);
    assert_memory_equal(mk.cookie, want_cookie, WG_COOKIE_LEN);
    /* The same message again (same mac1), now with mac2. */
    cookie_add_macs(&mk, msg, len, NOW);
    assert_memory_equal(mac1_of(msg, len), want_mac1, WG_MAC_LEN);
    assert_memory_equal(mac2_of(msg, len), want_mac2, WG_MAC_LEN);
    assert_int_equal(cookie_validate(&chk, msg, len, src1, sizeof(src1), true), 0);
}

#define T(f) cmocka_unit_test_setup(f, pair_setup)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_mac1_valid),
        T(test_mac1_every_byte_flipped),
        T(test_mac2_ignored_when_not_under_load),
        T(test_mac1_other_key),
        T(test_mac1_wrong_length),
        T(test_short_messages),
        T(test_under_load_exchange),
        T(test_reply_nonce_fresh),
        T(test_reply_every_byte_flipped),
        T(test_reply_index_not_authenticated),
        T(test_reply_replayed),
        T(test_reply_without_message),
        T(test_reply_for_other_message),
        T(test_reply_from_other_checker),
        T(test_reply_wrong_length),
        T(test_cookie_freshness),
        T(test_secret_rotation),
        T(test_validate_changes_nothing),
        T(test_no_allocation),
        T(test_mac1_derivation),
        T(test_known_answer),
    };

    return cmocka_run_group_tests_name("cookie", tests, group_setup, NULL);
}
