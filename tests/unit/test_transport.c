/* SPDX-License-Identifier: MIT */
/* Tests for crypto/transport: two keypairs wired to each other by hand
 * (a sends with the key b receives with, and the other way), then round
 * trips of many sizes checked byte by byte against the wire layout and an
 * independent decryption with libsodium; counters; the replay window moved
 * only by authentic packets; every kind of malformed message; the key's
 * limits in time and messages; batches; and no heap use per packet. */
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
#include "crypto/noise.h"
#include "crypto/transport.h"
#include "tests/unit/alloc_count.h"

#define NSEC        WG_NSEC_PER_SEC
#define BIRTH       (UINT64_C(1000) * NSEC)   /* the keypairs' birth time */
#define NOW         (BIRTH + NSEC)            /* well inside every limit */
#define A_INDEX     UINT32_C(0x11223344)      /* a's local index */
#define B_INDEX     UINT32_C(0xa1b2c3d4)      /* b's local index */
#define BIG_PLAIN   65535u
#define BUF_LEN     (WG_TRANSPORT_HEADER_LEN + BIG_PLAIN + WG_PADDING_MULTIPLE + WG_AEAD_TAG_LEN)
#define BATCH       64u
#define SLOT_LEN    2048u
#define W           ((uint64_t)WG_REPLAY_WINDOW)

struct pair {
    struct noise_keypair a, b;
};

static struct pair pair;
static uint8_t buf[BUF_LEN], plain[BUF_LEN], copy[BUF_LEN];
static uint8_t slots[BATCH][SLOT_LEN], plains[BATCH][SLOT_LEN];

/* splitmix64 with a fixed seed, so every run draws the same shuffles. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static uint32_t le32_at(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64_at(const uint8_t *p)
{
    return (uint64_t)le32_at(p) | (uint64_t)le32_at(p + 4) << 32;
}

static void le64_put(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static int group_setup(void **state)
{
    (void)state;
    return crypto_core_init();
}

/* a is the initiator; each test starts from a fresh pair. */
static int pair_setup(void **state)
{
    struct noise_keypair *a = &pair.a, *b = &pair.b;

    (void)state;
    memset(&pair, 0, sizeof(pair));
    randombytes_buf(a->send_key, WG_KEY_LEN);
    randombytes_buf(a->recv_key, WG_KEY_LEN);
    memcpy(b->recv_key, a->send_key, WG_KEY_LEN);
    memcpy(b->send_key, a->recv_key, WG_KEY_LEN);
    replay_init(&a->replay);
    replay_init(&b->replay);
    a->local_index = A_INDEX;
    a->remote_index = B_INDEX;
    b->local_index = B_INDEX;
    b->remote_index = A_INDEX;
    a->birth_ns = b->birth_ns = BIRTH;
    a->is_initiator = true;
    return 0;
}

static int pair_teardown(void **state)
{
    (void)state;
    transport_keypair_clear(&pair.a);
    transport_keypair_clear(&pair.b);
    return 0;
}

/* Puts len random plaintext bytes in b's body (and a copy in p). */
static void fill(uint8_t *b, uint8_t *p, size_t len)
{
    randombytes_buf(p, len);
    memcpy(b + WG_TRANSPORT_HEADER_LEN, p, len);
}

static struct transport_packet pkt_of(uint8_t *b, size_t cap, size_t len)
{
    struct transport_packet p = { .buf = b, .cap = cap, .len = len, .counter = 0xdead,
                                  .status = 12345 };
    return p;
}

/* Seals len random bytes from a into buf; returns the message length. */
static size_t seal_random(size_t len, uint64_t now)
{
    struct transport_packet p = pkt_of(buf, sizeof(buf), len);

    fill(buf, plain, len);
    assert_int_equal(transport_seal(&pair.a, &p, now), 0);
    return p.len;
}

/* Opens msglen bytes copied from msg at b and returns the status. */
static int open_copy(const uint8_t *msg, size_t msglen, uint64_t now)
{
    struct transport_packet p = pkt_of(buf, sizeof(buf), msglen);

    memcpy(buf, msg, msglen);
    return transport_open(&pair.b, &p, now);
}

/* --- sizes and layout -------------------------------------------------------- */

static void test_padded_len(void **state)
{
    (void)state;
    assert_int_equal(transport_padded_len(0), 0);
    assert_int_equal(transport_padded_len(1), 16);
    assert_int_equal(transport_padded_len(15), 16);
    assert_int_equal(transport_padded_len(16), 16);
    assert_int_equal(transport_padded_len(17), 32);
    assert_int_equal(transport_padded_len(1420), 1424);
    assert_int_equal(transport_padded_len(65535), 65536);
    assert_int_equal(transport_sealed_len(0), WG_TRANSPORT_MIN_LEN);
    assert_int_equal(transport_sealed_len(0), 32);
    assert_int_equal(transport_sealed_len(1), 48);
    assert_int_equal(transport_sealed_len(1420), 1456);
}

/* The message, read with the layout of the whitepaper and decrypted with
 * libsodium directly (nonce: 4 zero bytes then the counter, no AD). */
static void check_wire(const uint8_t *msg, size_t msglen, const uint8_t *p, size_t len,
                       uint64_t counter)
{
    static uint8_t dec[BUF_LEN];
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 };
    unsigned long long declen = 0;
    size_t padded = transport_padded_len(len);

    assert_int_equal(msglen, transport_sealed_len(len));
    assert_int_equal(msglen, WG_TRANSPORT_HEADER_LEN + padded + WG_AEAD_TAG_LEN);
    assert_int_equal(padded % WG_PADDING_MULTIPLE, 0);
    assert_true(padded >= len && padded < len + WG_PADDING_MULTIPLE);
    assert_int_equal(msg[0], WG_MSG_TRANSPORT);
    assert_int_equal(msg[1] | msg[2] | msg[3], 0);
    assert_int_equal(le32_at(msg + 4), B_INDEX);
    assert_int_equal(transport_receiver(msg), B_INDEX);
    assert_int_equal(le64_at(msg + 8), counter);

    le64_put(nonce + 4, counter);
    assert_int_equal(crypto_aead_chacha20poly1305_ietf_decrypt(
                         dec, &declen, NULL, msg + WG_TRANSPORT_HEADER_LEN,
                         msglen - WG_TRANSPORT_HEADER_LEN, NULL, 0, nonce, pair.a.send_key), 0);
    assert_int_equal(declen, padded);
    assert_memory_equal(dec, p, len);
    for (size_t i = len; i < padded; i++)
        assert_int_equal(dec[i], 0);
}

static void roundtrip(size_t len, uint64_t counter)
{
    size_t msglen = seal_random(len, NOW);
    struct transport_packet p;

    check_wire(buf, msglen, plain, len, counter);
    p = pkt_of(buf, sizeof(buf), msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
    assert_int_equal(p.status, 0);
    assert_int_equal(p.counter, counter);
    assert_int_equal(p.len, transport_padded_len(len));
    assert_memory_equal(buf + WG_TRANSPORT_HEADER_LEN, plain, len);
    for (size_t i = len; i < p.len; i++)
        assert_int_equal(buf[WG_TRANSPORT_HEADER_LEN + i], 0);
}

static void test_roundtrip_sizes(void **state)
{
    static const size_t more[] = { 1420, 1500, 65519, BIG_PLAIN };
    uint64_t counter = 0;

    (void)state;
    for (size_t len = 0; len <= 100; len++)
        roundtrip(len, counter++);
    for (size_t i = 0; i < sizeof(more) / sizeof(more[0]); i++)
        roundtrip(more[i], counter++);
    assert_int_equal(pair.a.send_counter, counter);
}

/* The reply direction works too, with the other key. */
static void test_roundtrip_reverse(void **state)
{
    struct transport_packet p = pkt_of(buf, sizeof(buf), 33);

    (void)state;
    fill(buf, plain, 33);
    assert_int_equal(transport_seal(&pair.b, &p, NOW), 0);
    assert_int_equal(transport_receiver(buf), A_INDEX);
    p.len = transport_sealed_len(33);
    assert_int_equal(transport_open(&pair.a, &p, NOW), 0);
    assert_int_equal(p.len, 48);
    assert_memory_equal(buf + WG_TRANSPORT_HEADER_LEN, plain, 33);
    /* A message a sealed does not open at a: it was sealed with a's send key. */
    p = pkt_of(buf, sizeof(buf), 33);
    fill(buf, plain, 33);
    assert_int_equal(transport_seal(&pair.a, &p, NOW), 0);
    memcpy(buf + 4, (const uint8_t[]){ 0x44, 0x33, 0x22, 0x11 }, 4);  /* a's index */
    assert_int_equal(transport_open(&pair.a, &p, NOW), -EBADMSG);
}

static void test_keepalive(void **state)
{
    size_t msglen;
    struct transport_packet p;

    (void)state;
    msglen = seal_random(0, NOW);
    assert_int_equal(msglen, 32);
    check_wire(buf, msglen, plain, 0, 0);
    p = pkt_of(buf, sizeof(buf), msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
    assert_int_equal(p.len, 0);
    assert_int_equal(p.counter, 0);
}

/* --- counters -------------------------------------------------------------------- */

static void test_counters(void **state)
{
    static uint8_t msgs[10][64];
    struct transport_packet p;

    (void)state;
    for (uint64_t i = 0; i < 10; i++) {
        p = pkt_of(msgs[i], sizeof(msgs[i]), 7);
        assert_int_equal(transport_seal(&pair.a, &p, NOW), 0);
        assert_int_equal(p.counter, i);
        assert_int_equal(le64_at(msgs[i] + 8), i);
        assert_int_equal(pair.a.send_counter, i + 1);
    }
    for (uint64_t i = 0; i < 10; i++) {
        p = pkt_of(msgs[i], sizeof(msgs[i]), transport_sealed_len(7));
        assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
        assert_int_equal(p.counter, i);
    }
    /* Opening does not touch the receiver's own send counter. */
    assert_int_equal(pair.b.send_counter, 0);
}

/* --- replay ------------------------------------------------------------------------ */

static void test_replay_twice(void **state)
{
    size_t msglen = seal_random(40, NOW);
    struct transport_packet p = pkt_of(buf, sizeof(buf), msglen);

    (void)state;
    memcpy(copy, buf, msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
    assert_int_equal(open_copy(copy, msglen, NOW), -WG_EREPLAY);
    assert_int_equal(open_copy(copy, msglen, NOW), -WG_EREPLAY);
}

static void test_out_of_order(void **state)
{
    static const unsigned order[] = { 9, 3, 0, 5, 1, 8, 2, 7, 4, 6 };
    static uint8_t msgs[10][64];
    const size_t msglen = transport_sealed_len(20);

    (void)state;
    for (unsigned i = 0; i < 10; i++) {
        struct transport_packet p = pkt_of(msgs[i], sizeof(msgs[i]), 20);

        assert_int_equal(transport_seal(&pair.a, &p, NOW), 0);
    }
    /* Opened from copies: opening decrypts in place. */
    for (unsigned i = 0; i < 10; i++) {
        struct transport_packet p = pkt_of(buf, sizeof(buf), msglen);

        memcpy(buf, msgs[order[i]], msglen);
        assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
        assert_int_equal(p.counter, order[i]);
    }
    for (unsigned i = 0; i < 10; i++)
        assert_int_equal(open_copy(msgs[i], msglen, NOW), -WG_EREPLAY);
}

/* Writes a message that looks right but whose body and tag are random. */
static size_t forge(uint8_t *msg, uint32_t receiver, uint64_t counter, size_t bodylen)
{
    msg[0] = WG_MSG_TRANSPORT;
    msg[1] = msg[2] = msg[3] = 0;
    for (int i = 0; i < 4; i++)
        msg[4 + i] = (uint8_t)(receiver >> (8 * i));
    le64_put(msg + 8, counter);
    randombytes_buf(msg + WG_TRANSPORT_HEADER_LEN, bodylen);
    return WG_TRANSPORT_HEADER_LEN + bodylen;
}

/* The replay check comes only after authentication: a forged packet far
 * ahead must not slide the window past counters still to come. */
static void test_forged_does_not_move_window(void **state)
{
    static uint8_t old1[64], old2[64], fake[64];
    struct noise_keypair before;
    size_t msglen, fakelen;

    (void)state;
    msglen = seal_random(8, NOW);          /* counter 0 */
    assert_int_equal(open_copy(buf, msglen, NOW), 0);
    seal_random(8, NOW);                   /* counter 1, kept for later */
    memcpy(old1, buf, msglen);
    seal_random(8, NOW);                   /* counter 2, for the control */
    memcpy(old2, buf, msglen);

    memcpy(&before, &pair.b, sizeof(before));
    fakelen = forge(fake, B_INDEX, 1 + W + 100, 32);
    assert_int_equal(open_copy(fake, fakelen, NOW), -EBADMSG);
    assert_memory_equal(&pair.b, &before, sizeof(before));
    assert_int_equal(open_copy(old1, msglen, NOW), 0);

    /* Control: an authentic packet as far ahead does leave counter 2
     * behind the window, so the check above could fail. */
    pair.a.send_counter = 2 + W + 100;
    seal_random(8, NOW);
    assert_int_equal(open_copy(buf, msglen, NOW), 0);
    assert_int_equal(open_copy(old2, msglen, NOW), -WG_EREPLAY);
}

/* --- malformed messages ------------------------------------------------------------- */

static void test_every_byte_flipped(void **state)
{
    static const uint8_t masks[] = { 0x01, 0x80, 0xff };
    size_t msglen = seal_random(50, NOW);
    struct noise_keypair before;

    (void)state;
    memcpy(&before, &pair.b, sizeof(before));
    memcpy(copy, buf, msglen);
    for (size_t i = 0; i < msglen; i++)
        for (size_t m = 0; m < sizeof(masks); m++) {
            int ret;

            /* The shard bytes: test_shard_hint, test_hinted_sub_sessions. */
            if (i == WG_SHARD_HINT_OFFSET || i == WG_SHARD_SUB_OFFSET || i == WG_FLOW_OFFSET)
                continue;
            memcpy(buf, copy, msglen);
            buf[i] ^= masks[m];
            ret = transport_open(&pair.b, &(struct transport_packet){ .buf = buf,
                                 .cap = sizeof(buf), .len = msglen }, NOW);
            if (ret != -EBADMSG)
                fail_msg("byte %zu ^ 0x%02x: got %d, want %d", i, masks[m], ret, -EBADMSG);
        }
    assert_memory_equal(&pair.b, &before, sizeof(before));
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

static void test_truncated(void **state)
{
    size_t msglen = seal_random(50, NOW);
    struct noise_keypair before;

    (void)state;
    memcpy(&before, &pair.b, sizeof(before));
    memcpy(copy, buf, msglen);
    for (size_t len = 0; len < msglen; len++) {
        int ret = open_copy(copy, len, NOW);

        if (ret != -EBADMSG)
            fail_msg("truncated to %zu: got %d, want %d", len, ret, -EBADMSG);
    }
    /* One byte too many (a zero appended) fails as well. */
    copy[msglen] = 0;
    assert_int_equal(open_copy(copy, msglen + 1, NOW), -EBADMSG);
    assert_memory_equal(&pair.b, &before, sizeof(before));
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

/* The header is not covered by the AEAD (only the counter, as the nonce),
 * so these checks are all that refuse an otherwise authentic message. */
static void expect_header_refused(size_t offset, uint8_t mask)
{
    size_t msglen = seal_random(24, NOW);

    memcpy(copy, buf, msglen);
    copy[offset] ^= mask;
    if (open_copy(copy, msglen, NOW) != -EBADMSG)
        fail_msg("byte %zu ^ 0x%02x (now 0x%02x) accepted", offset, mask, copy[offset]);
    copy[offset] ^= mask;
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

static void test_wrong_header(void **state)
{
    (void)state;
    /* Type 4 becomes 5, 6, 7, 0, 1, 2, 3 and 0xfb. */
    for (uint8_t mask = 1; mask < 8; mask++)
        expect_header_refused(0, mask);
    expect_header_refused(0, 0xff);
    expect_header_refused(WG_SHARD_SUB_OFFSET, 0x01);   /* another sub-session's key */
    /* Byte 3, the underlay flow, is taken whatever it says: test_shard_hint. */
    for (size_t r = 4; r < 8; r++)
        expect_header_refused(r, 0x10);
}

/* Sub-sessions (transport.h): each counts from 0 under keys of its own and
 * has its own replay window; a message's byte 2 must name the sub-session
 * whose key sealed it. */
static void test_hinted_sub_sessions(void **state)
{
    uint8_t key[WG_KEY_LEN], base_key[WG_KEY_LEN];

    (void)state;
    for (unsigned round = 0; round < 3; round++)
        for (unsigned h = 1; h < 4; h++) {
            struct transport_packet p = pkt_of(buf, sizeof(buf), 40);
            uint64_t first;

            assert_int_equal(transport_reserve_hinted(&pair.a, h, 1, NOW, &first), 0);
            assert_int_equal(first, round);
            fill(buf, plain, 40);
            assert_int_equal(transport_encrypt(transport_send_key(&pair.a, h), pair.a.remote_index,
                                               first, &p), 0);
            buf[WG_SHARD_SUB_OFFSET] = (uint8_t)h;
            memcpy(copy, buf, p.len);
            assert_int_equal(open_copy(copy, p.len, NOW), 0);
            assert_int_equal(open_copy(copy, p.len, NOW), -WG_EREPLAY);
            /* Named by another hint (or none): the wrong key. */
            copy[WG_SHARD_SUB_OFFSET] = (uint8_t)(h + 1);
            assert_int_equal(open_copy(copy, p.len, NOW), -EBADMSG);
            copy[WG_SHARD_SUB_OFFSET] = 0;
            assert_int_equal(open_copy(copy, p.len, NOW), -EBADMSG);
            /* Byte 2 names its sub-session modulo WG_SHARD_HINTS; byte 1
             * (the steering hint) none. */
            assert_int_equal(transport_sub_of((uint8_t[]){ 4, 9, (uint8_t)(h + WG_SHARD_HINTS) }), h);
        }
    /* The keypair's own counters did not move: hint 0 is the keypair. */
    assert_int_equal(pair.a.send_counter, 0);
    assert_memory_equal(transport_send_key(&pair.a, 0), pair.a.send_key, WG_KEY_LEN);
    /* Both ends derive the same keys, each distinct from the base. */
    transport_recv_key(&pair.b, 2, key);
    assert_memory_equal(key, transport_send_key(&pair.a, 2), WG_KEY_LEN);
    transport_hint_key(pair.a.send_key, 2, base_key);
    assert_memory_equal(key, base_key, WG_KEY_LEN);
    assert_memory_not_equal(key, pair.a.send_key, WG_KEY_LEN);
    /* A base message whose hint byte was set: refused, and its counter
     * still opens once under the base key. */
    size_t msglen = seal_random(24, NOW);
    memcpy(copy, buf, msglen);
    copy[WG_SHARD_SUB_OFFSET] = 3;
    assert_int_equal(open_copy(copy, msglen, NOW), -EBADMSG);
    copy[WG_SHARD_SUB_OFFSET] = 0;
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

/* Byte 1 is ddpnet's shard hint (wg_const.h): the type still reads as
 * transport, and any hint opens under the keypair's key, once (it only
 * steers); so does a byte 2 naming sub-session 0 (a multiple of
 * WG_SHARD_HINTS). */
static void test_shard_hint(void **state)
{
    static const uint8_t hints[] = { 0x01, 0x07, 0x80, 0xff };
    size_t msglen;

    (void)state;
    for (size_t h = 0; h < sizeof(hints); h++) {
        msglen = seal_random(40, NOW);
        buf[WG_SHARD_HINT_OFFSET] = hints[h];
        buf[WG_SHARD_SUB_OFFSET] = (uint8_t)(hints[h] & ~(WG_SHARD_HINTS - 1u));
        buf[WG_FLOW_OFFSET] = hints[h];      /* the underlay flow */
        assert_int_equal(noise_message_type(buf, msglen), WG_MSG_TRANSPORT);
        memcpy(copy, buf, msglen);
        assert_int_equal(open_copy(copy, msglen, NOW), 0);
        assert_int_equal(open_copy(copy, msglen, NOW), -WG_EREPLAY);
    }
}

static void test_wrong_receiver(void **state)
{
    size_t msglen = seal_random(24, NOW);

    (void)state;
    memcpy(copy, buf, msglen);
    /* The message is meant for b; a keypair with another index refuses it
     * even when it holds the right key. */
    pair.b.local_index = B_INDEX + 1;
    assert_int_equal(open_copy(copy, msglen, NOW), -EBADMSG);
    pair.b.local_index = B_INDEX;
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

static void test_len_over_cap(void **state)
{
    size_t msglen = seal_random(24, NOW);
    struct transport_packet p;

    (void)state;
    memcpy(copy, buf, msglen);
    p = pkt_of(buf, msglen - 1, msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), -EBADMSG);
    assert_int_equal(p.len, msglen);
    p = pkt_of(buf, 0, msglen);
    memcpy(buf, copy, msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), -EBADMSG);
    p = pkt_of(buf, msglen, msglen);
    memcpy(buf, copy, msglen);
    assert_int_equal(transport_open(&pair.b, &p, NOW), 0);
}

/* Garbage of every short length and random long garbage with a valid
 * header: refused, window untouched. */
static void test_garbage(void **state)
{
    uint64_t seed = UINT64_C(0x9a4ba9e);
    struct noise_keypair before;

    (void)state;
    memcpy(&before, &pair.b, sizeof(before));
    for (size_t len = 0; len < 200; len++) {
        randombytes_buf(copy, len);
        assert_int_equal(open_copy(copy, len, NOW), -EBADMSG);
        if (len >= WG_TRANSPORT_HEADER_LEN) {
            forge(copy, B_INDEX, rng_next(&seed) % 1000, len - WG_TRANSPORT_HEADER_LEN);
            assert_int_equal(open_copy(copy, len, NOW), -EBADMSG);
        }
    }
    assert_memory_equal(&pair.b, &before, sizeof(before));
}

/* --- limits ---------------------------------------------------------------------------- */

static void test_reject_after_time(void **state)
{
    const uint64_t limit = BIRTH + WG_REJECT_AFTER_TIME * NSEC;
    struct transport_packet p = pkt_of(buf, sizeof(buf), 10);
    size_t msglen;

    (void)state;
    fill(buf, plain, 10);
    assert_int_equal(transport_seal(&pair.a, &p, limit), -WG_ESTALE);
    assert_int_equal(p.status, -WG_ESTALE);
    assert_int_equal(pair.a.send_counter, 0);
    assert_int_equal(transport_seal(&pair.a, &p, limit + 1000 * NSEC), -WG_ESTALE);
    assert_int_equal(pair.a.send_counter, 0);

    msglen = seal_random(10, limit - 1);
    memcpy(copy, buf, msglen);
    assert_int_equal(open_copy(copy, msglen, limit), -WG_ESTALE);
    assert_int_equal(open_copy(copy, msglen, UINT64_MAX), -WG_ESTALE);
    assert_int_equal(open_copy(copy, msglen, limit - 1), 0);
    /* A clock before the birth counts as age 0, not as a huge age. */
    msglen = seal_random(10, BIRTH - 5 * NSEC);
    assert_int_equal(open_copy(buf, msglen, BIRTH - 5 * NSEC), 0);
}

static void test_reject_after_messages(void **state)
{
    struct transport_packet p = pkt_of(buf, sizeof(buf), 10);
    size_t msglen;

    (void)state;
    pair.a.send_counter = WG_REJECT_AFTER_MESSAGES - 1;
    msglen = seal_random(10, NOW);
    assert_int_equal(le64_at(buf + 8), WG_REJECT_AFTER_MESSAGES - 1);
    memcpy(copy, buf, msglen);
    fill(buf, plain, 10);
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -WG_ESTALE);
    assert_int_equal(pair.a.send_counter, WG_REJECT_AFTER_MESSAGES);
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -WG_ESTALE);
    assert_int_equal(pair.a.send_counter, WG_REJECT_AFTER_MESSAGES);
    /* The last counter ever sent still opens. */
    assert_int_equal(open_copy(copy, msglen, NOW), 0);
}

/* An authentic message (sealed with the right key outside transport.c)
 * whose counter is at or above the limit is refused and moves nothing. */
static void test_counter_over_limit_refused(void **state)
{
    static const uint64_t counters[] = {
        WG_REJECT_AFTER_MESSAGES, WG_REJECT_AFTER_MESSAGES + 1, UINT64_MAX,
    };
    size_t plen = transport_padded_len(20);
    struct noise_keypair before;

    (void)state;
    memcpy(&before, &pair.b, sizeof(before));
    for (size_t i = 0; i < sizeof(counters) / sizeof(counters[0]); i++) {
        forge(copy, B_INDEX, counters[i], 0);
        memset(copy + WG_TRANSPORT_HEADER_LEN, 0x42, plen);
        aead_seal(copy + WG_TRANSPORT_HEADER_LEN, copy + WG_TRANSPORT_HEADER_LEN, plen,
                  NULL, 0, counters[i], pair.a.send_key);
        assert_int_equal(open_copy(copy, WG_TRANSPORT_HEADER_LEN + plen + WG_AEAD_TAG_LEN,
                                   NOW), -EBADMSG);
    }
    assert_memory_equal(&pair.b, &before, sizeof(before));
    /* The same construction one below the limit is accepted: the refusal
     * above is for the counter alone. */
    forge(copy, B_INDEX, WG_REJECT_AFTER_MESSAGES - 1, 0);
    memset(copy + WG_TRANSPORT_HEADER_LEN, 0x42, plen);
    aead_seal(copy + WG_TRANSPORT_HEADER_LEN, copy + WG_TRANSPORT_HEADER_LEN, plen,
              NULL, 0, WG_REJECT_AFTER_MESSAGES - 1, pair.a.send_key);
    assert_int_equal(open_copy(copy, WG_TRANSPORT_HEADER_LEN + plen + WG_AEAD_TAG_LEN, NOW), 0);
}

static void test_needs_rekey_messages(void **state)
{
    (void)state;
    for (int initiator = 0; initiator <= 1; initiator++) {
        pair.a.is_initiator = initiator;
        pair.a.send_counter = 0;
        assert_false(transport_needs_rekey(&pair.a, NOW));
        pair.a.send_counter = WG_REKEY_AFTER_MESSAGES - 1;
        assert_false(transport_needs_rekey(&pair.a, NOW));
        seal_random(1, NOW);    /* the REKEY_AFTER_MESSAGES-th message */
        assert_int_equal(pair.a.send_counter, WG_REKEY_AFTER_MESSAGES);
        assert_true(transport_needs_rekey(&pair.a, NOW));
    }
}

static void test_needs_rekey_time(void **state)
{
    const uint64_t rekey = BIRTH + WG_REKEY_AFTER_TIME * NSEC;

    (void)state;
    assert_false(transport_needs_rekey(&pair.a, BIRTH));
    assert_false(transport_needs_rekey(&pair.a, rekey - 1));
    assert_true(transport_needs_rekey(&pair.a, rekey));
    assert_true(transport_needs_rekey(&pair.a, rekey + 50 * NSEC));
    assert_false(transport_needs_rekey(&pair.a, BIRTH - NSEC));
    /* The responder does not rekey on time: the initiator does. */
    assert_false(pair.b.is_initiator);
    assert_false(transport_needs_rekey(&pair.b, rekey));
    assert_false(transport_needs_rekey(&pair.b, BIRTH + WG_REJECT_AFTER_TIME * NSEC - 1));
}

static void test_cap_too_small(void **state)
{
    const size_t len = 100;
    struct transport_packet p = pkt_of(buf, transport_sealed_len(len) - 1, len);

    (void)state;
    fill(buf, plain, len);
    memset(buf, 0x77, WG_TRANSPORT_HEADER_LEN);
    memcpy(copy, buf, sizeof(buf));
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -EMSGSIZE);
    assert_int_equal(p.len, len);
    assert_int_equal(pair.a.send_counter, 0);
    assert_memory_equal(buf, copy, sizeof(buf));
    p.cap = len - 1;            /* smaller than the plaintext itself */
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -EMSGSIZE);
    p.cap = 0;
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -EMSGSIZE);
    p.len = 0;                  /* even a keepalive needs 32 bytes */
    p.cap = WG_TRANSPORT_MIN_LEN - 1;
    assert_int_equal(transport_seal(&pair.a, &p, NOW), -EMSGSIZE);
    assert_int_equal(pair.a.send_counter, 0);

    p = pkt_of(buf, transport_sealed_len(len), len);
    assert_int_equal(transport_seal(&pair.a, &p, NOW), 0);
    assert_int_equal(p.counter, 0);
    assert_int_equal(open_copy(buf, p.len, NOW), 0);
    assert_memory_equal(buf + WG_TRANSPORT_HEADER_LEN, plain, len);
}

/* --- batches ----------------------------------------------------------------------------- */

static size_t batch_len(unsigned i)
{
    return (i * 23u) % 1421u;
}

static void seal_slots(struct transport_packet *pk, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        fill(slots[i], plains[i], batch_len(i));
        pk[i] = pkt_of(slots[i], SLOT_LEN, batch_len(i));
    }
    assert_int_equal(transport_seal_batch(&pair.a, pk, n, NOW), n);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(pk[i].status, 0);
        assert_int_equal(pk[i].counter, i);
        assert_int_equal(pk[i].len, transport_sealed_len(batch_len(i)));
    }
}

static void test_batch_shuffled(void **state)
{
    struct transport_packet pk[BATCH], in[BATCH];
    unsigned perm[BATCH];
    uint64_t seed = UINT64_C(0xba7c4);

    (void)state;
    seal_slots(pk, BATCH);
    for (unsigned i = 0; i < BATCH; i++)
        perm[i] = i;
    for (unsigned i = BATCH - 1; i > 0; i--) {
        unsigned j = (unsigned)(rng_next(&seed) % (i + 1)), t = perm[i];

        perm[i] = perm[j];
        perm[j] = t;
    }
    for (unsigned i = 0; i < BATCH; i++)
        in[i] = pkt_of(slots[perm[i]], SLOT_LEN, pk[perm[i]].len);
    assert_int_equal(transport_open_batch(&pair.b, in, BATCH, NOW), BATCH);
    for (unsigned i = 0; i < BATCH; i++) {
        assert_int_equal(in[i].status, 0);
        assert_int_equal(in[i].counter, perm[i]);
        assert_int_equal(in[i].len, transport_padded_len(batch_len(perm[i])));
        assert_memory_equal(slots[perm[i]] + WG_TRANSPORT_HEADER_LEN, plains[perm[i]],
                            batch_len(perm[i]));
    }
}

static void test_batch_one_corrupted(void **state)
{
    const unsigned n = 9, bad = 4;
    struct transport_packet pk[9];

    (void)state;
    seal_slots(pk, n);
    slots[bad][pk[bad].len - 1] ^= 0x20;        /* in the tag */
    for (unsigned i = 0; i < n; i++)
        pk[i] = pkt_of(slots[i], SLOT_LEN, pk[i].len);
    assert_int_equal(transport_open_batch(&pair.b, pk, n, NOW), n - 1);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(pk[i].status, i == bad ? -EBADMSG : 0);
        if (i != bad) {
            assert_int_equal(pk[i].counter, i);
            assert_memory_equal(slots[i] + WG_TRANSPORT_HEADER_LEN, plains[i], batch_len(i));
        }
    }
}

/* A duplicate inside one batch: the first copy opens, the second is a replay. */
static void test_batch_duplicate(void **state)
{
    struct transport_packet pk[3];

    (void)state;
    seal_slots(pk, 2);
    memcpy(slots[2], slots[1], pk[1].len);
    pk[2] = pkt_of(slots[2], SLOT_LEN, pk[1].len);
    pk[0] = pkt_of(slots[0], SLOT_LEN, pk[0].len);
    pk[1] = pkt_of(slots[1], SLOT_LEN, pk[1].len);
    assert_int_equal(transport_open_batch(&pair.b, pk, 3, NOW), 2);
    assert_int_equal(pk[0].status, 0);
    assert_int_equal(pk[1].status, 0);
    assert_int_equal(pk[2].status, -WG_EREPLAY);
}

/* A packet too big for its buffer in the middle of a batch takes no
 * counter; the rest stay consecutive. */
static void test_batch_seal_partial(void **state)
{
    struct transport_packet pk[5];

    (void)state;
    for (unsigned i = 0; i < 5; i++) {
        fill(slots[i], plains[i], 30);
        pk[i] = pkt_of(slots[i], i == 2 ? 40 : SLOT_LEN, 30);
    }
    assert_int_equal(transport_seal_batch(&pair.a, pk, 5, NOW), 4);
    assert_int_equal(pk[2].status, -EMSGSIZE);
    assert_int_equal(pk[0].counter, 0);
    assert_int_equal(pk[1].counter, 1);
    assert_int_equal(pk[3].counter, 2);
    assert_int_equal(pk[4].counter, 3);
    assert_int_equal(pair.a.send_counter, 4);
    assert_int_equal(transport_seal_batch(&pair.a, pk, 0, NOW), 0);
}

static void test_batch_stale(void **state)
{
    const uint64_t late = BIRTH + WG_REJECT_AFTER_TIME * NSEC;
    struct transport_packet pk[4];

    (void)state;
    seal_slots(pk, 4);
    for (unsigned i = 0; i < 4; i++)
        pk[i] = pkt_of(slots[i], SLOT_LEN, pk[i].len);
    assert_int_equal(transport_open_batch(&pair.b, pk, 4, late), 0);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(pk[i].status, -WG_ESTALE);
    for (unsigned i = 0; i < 4; i++)
        pk[i] = pkt_of(slots[i], SLOT_LEN, 10);
    assert_int_equal(transport_seal_batch(&pair.a, pk, 4, late), 0);
    for (unsigned i = 0; i < 4; i++)
        assert_int_equal(pk[i].status, -WG_ESTALE);
    assert_int_equal(pair.a.send_counter, 4);
}

/* --- memory ---------------------------------------------------------------------------------- */

static void test_no_allocation(void **state)
{
    struct transport_packet pk[BATCH];
    int results[8];
    size_t before, msglen;

    (void)state;
    for (unsigned i = 0; i < BATCH; i++)
        fill(slots[i], plains[i], batch_len(i));
    before = alloc_count();
    /* Nothing below may allocate; results are checked afterwards. */
    for (unsigned i = 0; i < BATCH; i++)
        pk[i] = pkt_of(slots[i], SLOT_LEN, batch_len(i));
    results[0] = (int)transport_seal_batch(&pair.a, pk, BATCH, NOW);
    for (unsigned i = 0; i < BATCH; i++)
        pk[i] = pkt_of(slots[i], SLOT_LEN, pk[i].len);
    results[1] = (int)transport_open_batch(&pair.b, pk, BATCH, NOW);
    msglen = seal_random(1400, NOW);
    memcpy(copy, buf, msglen);
    results[2] = open_copy(copy, msglen, NOW);
    results[3] = open_copy(copy, msglen, NOW);                   /* replay */
    copy[20] ^= 1;
    results[4] = open_copy(copy, msglen, NOW);                   /* corrupt */
    results[5] = open_copy(copy, 17, NOW);                       /* short */
    forge(copy, B_INDEX, 99999, 1000);
    results[6] = open_copy(copy, WG_TRANSPORT_HEADER_LEN + 1000, NOW);
    results[7] = open_copy(copy, 1000, BIRTH + WG_REJECT_AFTER_TIME * NSEC);
    assert_int_equal(alloc_count(), before);

    assert_int_equal(results[0], BATCH);
    assert_int_equal(results[1], BATCH);
    assert_int_equal(results[2], 0);
    assert_int_equal(results[3], -WG_EREPLAY);
    assert_int_equal(results[4], -EBADMSG);
    assert_int_equal(results[5], -EBADMSG);
    assert_int_equal(results[6], -EBADMSG);
    assert_int_equal(results[7], -WG_ESTALE);
}

static void test_keypair_clear(void **state)
{
    const uint8_t *bytes = (const uint8_t *)&pair.a;

    (void)state;
    seal_random(5, NOW);
    transport_keypair_clear(&pair.a);
    for (size_t i = 0; i < sizeof(pair.a); i++)
        if (bytes[i] != 0)
            fail_msg("byte %zu of the keypair left at 0x%02x", i, bytes[i]);
}

#define T(f) cmocka_unit_test_setup_teardown(f, pair_setup, pair_teardown)

/* --- transport_encrypt_batch / transport_decrypt_batch ------------------------- */

#define XB_N   70u                         /* two runs of TRANSPORT_BATCH */
#define XB_CAP 1600u

static uint8_t xb_batch[XB_N][XB_CAP], xb_single[XB_N][XB_CAP];

static size_t xb_len(unsigned i)
{
    return (i * 97u) % 1420u;
}

/* Per packet, the batch gives what transport_encrypt gives: bytes, length,
 * status (one packet too big for its cap), with and without a pad limit. */
static void test_encrypt_batch_matches_single(void **state)
{
    struct transport_packet b[XB_N], s1;
    const unsigned too_big = 33;
    (void)state;

    for (unsigned i = 0; i < XB_N; i++) {
        size_t len = xb_len(i), cap = i == too_big ? len + 1 : XB_CAP;
        randombytes_buf(xb_batch[i] + WG_TRANSPORT_HEADER_LEN, len);
        memcpy(xb_single[i], xb_batch[i], XB_CAP);
        b[i] = pkt_of(xb_batch[i], cap, len);
        b[i].pad_limit = i % 2 ? 1420 : 0;
    }
    transport_encrypt_batch(pair.a.send_key, B_INDEX, 500, b, XB_N);
    for (unsigned i = 0; i < XB_N; i++) {
        s1 = pkt_of(xb_single[i], i == too_big ? xb_len(i) + 1 : XB_CAP, xb_len(i));
        s1.pad_limit = i % 2 ? 1420 : 0;
        int ret = transport_encrypt(pair.a.send_key, B_INDEX, 500 + i, &s1);
        assert_int_equal(b[i].status, ret);
        if (ret) {
            assert_int_equal(ret, -EMSGSIZE);
            continue;
        }
        assert_int_equal(b[i].len, s1.len);
        assert_int_equal(b[i].counter, 500 + i);
        assert_memory_equal(xb_batch[i], xb_single[i], s1.len);
    }
}

/* Sealed messages, some spoiled in every way decrypt refuses; the batch
 * and the one-packet call agree on each. */
static void test_decrypt_batch_matches_single(void **state)
{
    struct transport_packet b[XB_N], s1;
    size_t mlen[XB_N];
    (void)state;

    for (unsigned i = 0; i < XB_N; i++) {
        b[i] = pkt_of(xb_batch[i], XB_CAP, xb_len(i));
        randombytes_buf(xb_batch[i] + WG_TRANSPORT_HEADER_LEN, xb_len(i));
    }
    transport_encrypt_batch(pair.a.send_key, B_INDEX, 0, b, XB_N);
    for (unsigned i = 0; i < XB_N; i++) {
        size_t len = b[i].len;
        switch (i % 7) {
        case 1: xb_batch[i][len - 1] ^= 1; break;                      /* tag */
        case 2: xb_batch[i][WG_TRANSPORT_HEADER_LEN] ^= 0x40; break;   /* ciphertext */
        case 3: xb_batch[i][0] = WG_MSG_COOKIE_REPLY; break;           /* type */
        case 4: len = WG_TRANSPORT_MIN_LEN - 1; break;                 /* too short */
        case 5: le64_put(xb_batch[i] + 8, WG_REJECT_AFTER_MESSAGES); break;
        default: break;
        }
        memcpy(xb_single[i], xb_batch[i], XB_CAP);
        mlen[i] = len;
        b[i] = pkt_of(xb_batch[i], i == 69 ? len - 1 : XB_CAP, len);   /* len > cap */
    }
    transport_decrypt_batch(pair.b.recv_key, b, XB_N);
    for (unsigned i = 0; i < XB_N; i++) {
        s1 = pkt_of(xb_single[i], b[i].cap, mlen[i]);
        int ret = transport_decrypt(pair.b.recv_key, &s1);
        assert_int_equal(b[i].status, ret);
        assert_int_equal(ret == 0, (i % 7 == 0 || i % 7 == 6) && i != 69);
        if (ret == 0) {
            assert_int_equal(b[i].len, s1.len);
            assert_int_equal(b[i].counter, s1.counter);
            assert_memory_equal(xb_batch[i] + WG_TRANSPORT_HEADER_LEN,
                                xb_single[i] + WG_TRANSPORT_HEADER_LEN, s1.len);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_padded_len),
        T(test_roundtrip_sizes),
        T(test_roundtrip_reverse),
        T(test_keepalive),
        T(test_counters),
        T(test_replay_twice),
        T(test_out_of_order),
        T(test_forged_does_not_move_window),
        T(test_every_byte_flipped),
        T(test_truncated),
        T(test_wrong_header),
        T(test_shard_hint),
        T(test_hinted_sub_sessions),
        T(test_wrong_receiver),
        T(test_len_over_cap),
        T(test_garbage),
        T(test_reject_after_time),
        T(test_reject_after_messages),
        T(test_counter_over_limit_refused),
        T(test_needs_rekey_messages),
        T(test_needs_rekey_time),
        T(test_cap_too_small),
        T(test_batch_shuffled),
        T(test_batch_one_corrupted),
        T(test_batch_duplicate),
        T(test_batch_seal_partial),
        T(test_batch_stale),
        T(test_encrypt_batch_matches_single),
        T(test_decrypt_batch_matches_single),
        T(test_no_allocation),
        T(test_keypair_clear),
    };

    return cmocka_run_group_tests_name("transport", tests, group_setup, NULL);
}
