/* SPDX-License-Identifier: MIT */
/* Tests for crypto/relay_frame and the AEAD it rests on
 * (aead_seal_part_batch): the layout byte by byte; an independent check
 * with libsodium (the tag is RFC 8439's with no AD over the whole frame,
 * or over a data frame's 97 covered bytes; the kind and key XORed with
 * the keystream from block 1); both backends, and the multi-lane paths on
 * and off giving the same bytes; batches with one bad frame, and of both
 * types; every byte flipped (in a data frame, all but the enclosed
 * ciphertext fail), every length cut, wrong keys, kinds and types. */
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
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"

#define INDEX   UINT32_C(0xa1b2c3d4)
#define COUNTER UINT64_C(0x0102030405060708)
#define MAX_N   (RELAY_FRAME_MAX_LEN - RELAY_FRAME_OVERHEAD)
#define BATCH   40u
#define STRIDE  (1420u + RELAY_FRAME_OVERHEAD)

static uint8_t key[WG_KEY_LEN], peer[WG_KEY_LEN];
static uint8_t buf[RELAY_FRAME_MAX_LEN + 64], copy[RELAY_FRAME_MAX_LEN + 64];
static uint8_t msg[RELAY_FRAME_MAX_LEN];
static uint8_t dmsg[RELAY_FRAME_MAX_LEN];   /* msg's pattern as a transport data message */
static uint8_t area[BATCH * STRIDE], area2[BATCH * STRIDE];

static int group_setup(void **state)
{
    (void)state;
    if (crypto_core_init())
        return -1;
    for (unsigned i = 0; i < WG_KEY_LEN; i++) {
        key[i] = (uint8_t)(i * 7 + 1);
        peer[i] = (uint8_t)(0xf0 - i);
    }
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)(i * 13 + 5);
    memcpy(dmsg, msg, sizeof(dmsg));
    put_le32(dmsg, WG_MSG_TRANSPORT);
    return 0;
}

/* A frame of n enclosed bytes (msg's pattern) in buf; its length. */
static size_t make(size_t n, uint8_t kind)
{
    relay_frame_fill(buf, msg, n, kind, peer);
    return relay_frame_seal(key, INDEX, COUNTER, buf, n, false);
}

/* A data frame of n enclosed bytes (dmsg's pattern) in buf; its length. */
static size_t make_data(size_t n, uint8_t kind)
{
    relay_frame_fill(buf, dmsg, n, kind, peer);
    return relay_frame_seal(key, INDEX, COUNTER, buf, n, true);
}

/* Checks the frame at f (enclosed[0..n), counter c) with libsodium
 * alone, as relay_frame.h describes it. */
static void check_with_libsodium(const uint8_t *f, const uint8_t *enclosed, size_t n, uint64_t c,
                                 uint8_t kind)
{
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, plain[RELAY_FRAME_SEALED_LEN];
    static uint8_t scratch[RELAY_FRAME_MAX_LEN];
    size_t len = relay_frame_len(n);

    put_le64(nonce + 4, c);
    assert_int_equal(crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                         scratch, NULL, f, len - WG_AEAD_TAG_LEN, f + len - WG_AEAD_TAG_LEN,
                         NULL, 0, nonce, key), 0);
    assert_int_equal(crypto_stream_chacha20_ietf_xor_ic(plain, f + 16 + n,
                                                        RELAY_FRAME_SEALED_LEN, nonce, 1, key),
                     0);
    assert_int_equal(plain[0], kind);
    assert_memory_equal(plain + 1, peer, WG_KEY_LEN);
    assert_memory_not_equal(f + 17 + n, peer, WG_KEY_LEN);   /* encrypted on the wire */
    assert_int_equal(get_le32(f), RELAY_FRAME_TYPE);
    assert_memory_equal(f + 16, enclosed, n);                 /* the message in clear */
}

/* Checks the data frame at f (enclosed[0..n), counter c) with libsodium
 * alone: the tag over the 97 covered bytes relay_frame.h lists. */
static void check_data_with_libsodium(const uint8_t *f, const uint8_t *enclosed, size_t n,
                                      uint64_t c, uint8_t kind)
{
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, covered[97] = { 0 }, plain[sizeof(covered)];
    uint8_t sealed[RELAY_FRAME_SEALED_LEN];

    put_le64(nonce + 4, c);
    memcpy(covered, f, 16);
    memcpy(covered + 16, enclosed, 16);
    memcpy(covered + 32, enclosed + n - 16, 16);
    put_le64(covered + 48, n);
    memcpy(covered + 64, f + 16 + n, RELAY_FRAME_SEALED_LEN);
    assert_int_equal(crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                         plain, NULL, covered, sizeof(covered), f + 16 + n + 33, NULL, 0, nonce,
                         key), 0);
    assert_int_equal(crypto_stream_chacha20_ietf_xor_ic(sealed, f + 16 + n,
                                                        RELAY_FRAME_SEALED_LEN, nonce, 1, key),
                     0);
    assert_int_equal(sealed[0], kind);
    assert_memory_equal(sealed + 1, peer, WG_KEY_LEN);
    assert_int_equal(get_le32(f), RELAY_FRAME_DATA_TYPE);
    assert_memory_equal(f + 16, enclosed, n);
}

/* Both types, byte by byte and checked with libsodium alone. */
static void test_layout_and_libsodium_agree(void **state)
{
    static const size_t sizes[] = { 1, 32, 33, 148, 1308, 1420, 1452, 9064, MAX_N };
    (void)state;

    for (unsigned data = 0; data < 2; data++) {
        for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t n = sizes[s];
            if (data && n < WG_TRANSPORT_MIN_LEN)
                continue;
            size_t len = data ? make_data(n, RELAY_FRAME_FROM) : make(n, RELAY_FRAME_TO);

            assert_int_equal(len, n + RELAY_FRAME_OVERHEAD);
            assert_int_equal(get_le32(buf + 4), INDEX);
            assert_true(get_le64(buf + 8) == COUNTER);
            if (data)
                check_data_with_libsodium(buf, dmsg, n, COUNTER, RELAY_FRAME_FROM);
            else
                check_with_libsodium(buf, msg, n, COUNTER, RELAY_FRAME_TO);
        }
    }
}

/* Data frames for transport data messages (type 4, 32 bytes or more)
 * only: a handshake, a shorter message, or data not asked for go in 0x44
 * frames. */
static void test_data_frames_only_for_data(void **state)
{
    (void)state;
    assert_true(relay_frame_data_ok(dmsg, 32));
    assert_false(relay_frame_data_ok(dmsg, 31));
    assert_false(relay_frame_data_ok(msg, 100));
    make_data(31, RELAY_FRAME_TO);
    check_with_libsodium(buf, dmsg, 31, COUNTER, RELAY_FRAME_TO);
    relay_frame_fill(buf, msg, 148, RELAY_FRAME_TO, peer);
    relay_frame_seal(key, INDEX, COUNTER, buf, 148, true);
    check_with_libsodium(buf, msg, 148, COUNTER, RELAY_FRAME_TO);
    relay_frame_fill(buf, dmsg, 148, RELAY_FRAME_TO, peer);
    relay_frame_seal(key, INDEX, COUNTER, buf, 148, false);
    check_with_libsodium(buf, dmsg, 148, COUNTER, RELAY_FRAME_TO);
}

/* Every byte of a data frame is the hop's tag's but the enclosed
 * message's ciphertext, which its own tag covers end to end: a flip there
 * opens (and reaches the destination, which drops it), a flip anywhere
 * else does not. */
static void test_data_frame_every_byte_flipped(void **state)
{
    size_t n = 200, len = make_data(n, RELAY_FRAME_TO);
    struct relay_frame f;
    (void)state;

    memcpy(copy, buf, len);
    for (size_t i = 0; i < len; i++) {
        bool ciphertext = i >= 32 && i < 16 + n - 16;
        for (unsigned bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (uint8_t)(1u << bit);
            assert_int_equal(relay_frame_open(key, buf, len, &f), ciphertext ? 0 : -EBADMSG);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    assert_memory_equal(copy, buf, len);
    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(relay_frame_open(key, buf, cut, &f), -EBADMSG);
    /* The ciphertext shortened or lengthened in its middle, all the rest
     * as it was: refused (the length is covered). */
    for (size_t k = 1; k <= 40; k += 13) {
        memcpy(buf, copy, 100);
        memcpy(buf + 100, copy + 100 + k, len - 100 - k);
        assert_int_equal(relay_frame_open(key, buf, len - k, &f), -EBADMSG);
        memcpy(buf, copy, 100);
        memset(buf + 100, 0x77, k);
        memcpy(buf + 100 + k, copy + 100, len - 100);
        assert_int_equal(relay_frame_open(key, buf, len + k, &f), -EBADMSG);
    }
    memcpy(buf, copy, len);
    assert_int_equal(relay_frame_open(key, buf, len, &f), 0);
    /* A 0x44 frame's tag does not pass for a data frame's, nor the other way. */
    put_le32(buf, RELAY_FRAME_TYPE);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
    len = make(n, RELAY_FRAME_TO);
    put_le32(buf + 16, WG_MSG_TRANSPORT);
    put_le32(buf, RELAY_FRAME_DATA_TYPE);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
}

/* A data frame, authentic but for a message that is no transport data
 * message (sealed by hand: relay_frame_seal makes a 0x44 frame of it),
 * is refused. */
static void test_data_frame_of_other_message(void **state)
{
    size_t n = 148, len = make_data(n, RELAY_FRAME_TO);
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, covered[97] = { 0 };
    struct relay_frame f;
    (void)state;

    put_le32(buf + 16, 1);   /* an initiation's type */
    put_le64(nonce + 4, COUNTER);
    memcpy(covered, buf, 16);
    memcpy(covered + 16, buf + 16, 16);
    memcpy(covered + 32, buf + 16 + n - 16, 16);
    put_le64(covered + 48, n);
    memcpy(covered + 64, buf + 16 + n, RELAY_FRAME_SEALED_LEN);
    uint8_t block0[64], plain[sizeof(covered)];
    crypto_onetimeauth_poly1305_state st;
    uint8_t lens[16];
    crypto_stream_chacha20_ietf(block0, sizeof(block0), nonce, key);
    crypto_onetimeauth_poly1305_init(&st, block0);
    crypto_onetimeauth_poly1305_update(&st, covered, sizeof(covered));
    memset(lens, 0, 16);
    crypto_onetimeauth_poly1305_update(&st, lens, 15);   /* 97 -> 112: 15 bytes of pad */
    put_le64(lens + 8, sizeof(covered));
    crypto_onetimeauth_poly1305_update(&st, lens, 16);
    crypto_onetimeauth_poly1305_final(&st, buf + 16 + n + 33);
    assert_int_equal(crypto_aead_chacha20poly1305_ietf_decrypt_detached(
                         plain, NULL, covered, sizeof(covered), buf + 16 + n + 33, NULL, 0, nonce,
                         key), 0);                       /* authentic */
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
}

/* A batch of both types (every third message a handshake's type) seals
 * as single frames do, with the multi-lane paths and without, and opens
 * as one batch. */
static void test_data_frame_batches(void **state)
{
    unsigned was = aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
    uint16_t lens[BATCH];
    struct relay_frame f[BATCH];
    (void)state;

    for (unsigned paths = 0; paths < 2; paths++) {
        uint8_t *a = paths ? area : area2;
        aead_multi_paths(paths ? AEAD_MULTI_CHACHA | AEAD_MULTI_POLY : 0);
        for (unsigned i = 0; i < BATCH; i++) {
            lens[i] = (uint16_t)(i + 1 < BATCH ? 1420 : 333);
            relay_frame_fill(a + i * STRIDE, dmsg, lens[i], RELAY_FRAME_TO, peer);
            if (i % 3 == 2)
                put_le32(a + i * STRIDE + 16, 2);
        }
        assert_int_equal(relay_frame_seal_batch(key, INDEX, 500, a, STRIDE, lens, BATCH, true),
                         BATCH - BATCH / 3);
    }
    aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
    for (unsigned i = 0; i < BATCH; i++) {
        const uint8_t *fr = area + i * STRIDE;
        assert_memory_equal(fr, area2 + i * STRIDE, relay_frame_len(lens[i]));
        if (i % 3 == 2)
            check_with_libsodium(fr, fr + 16, lens[i], 500 + i, RELAY_FRAME_TO);
        else
            check_data_with_libsodium(fr, dmsg, lens[i], 500 + i, RELAY_FRAME_TO);
        f[i] = (struct relay_frame){ .buf = area + i * STRIDE,
                                     .len = (uint32_t)relay_frame_len(lens[i]) };
    }
    area[4 * STRIDE + 10] ^= 1;   /* a data frame's counter */
    relay_frame_open_batch(key, f, BATCH);
    for (unsigned i = 0; i < BATCH; i++) {
        assert_int_equal(f[i].status, i == 4 ? -EBADMSG : 0);
        if (i == 4)
            continue;
        assert_int_equal(f[i].data, i % 3 != 2);
        assert_true(f[i].counter == 500 + i);
        assert_int_equal(f[i].kind, RELAY_FRAME_TO);
        assert_memory_equal(f[i].peer, peer, WG_KEY_LEN);
    }
    aead_multi_paths(was);
}

/* Either type opens (both backends) to what was sealed; a data frame's
 * kind and key are decrypted aside, so its bytes stay as they came. */
static void test_round_trip_both_backends(void **state)
{
    static const enum aead_backend backends[] = { AEAD_BACKEND_SODIUM, AEAD_BACKEND_OPENSSL };
    enum aead_backend was = aead_get_backend();
    (void)state;

    for (unsigned b = 0; b < 2; b++) {
        if (!aead_backend_available(backends[b]))
            continue;
        assert_int_equal(aead_set_backend(backends[b]), 0);
        for (unsigned data = 0; data < 2; data++) {
            for (size_t n = data ? 32 : 1; n < 300; n += 7) {
                uint8_t kind = n & 1 ? RELAY_FRAME_TO : RELAY_FRAME_FROM;
                size_t len = data ? make_data(n, kind) : make(n, kind);
                struct relay_frame f;

                memcpy(copy, buf, len);
                assert_int_equal(relay_frame_open(key, buf, len, &f), 0);
                assert_int_equal(f.data, data);
                assert_int_equal(f.kind, kind);
                assert_memory_equal(f.peer, peer, WG_KEY_LEN);
                assert_true(f.counter == COUNTER);
                assert_ptr_equal(f.msg, buf + 16);
                assert_int_equal(f.msg_len, n);
                assert_memory_equal(f.msg, data ? dmsg : msg, n);
                if (data)
                    assert_memory_equal(buf, copy, len);
            }
        }
    }
    assert_int_equal(aead_set_backend(was), 0);
}

/* n frames at area, every one full but the last (shorter), sealed. */
static void seal_area(uint8_t *a, uint16_t *lens, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        lens[i] = (uint16_t)(i + 1 < n ? 1420 : 333);
        relay_frame_fill(a + i * STRIDE, msg + i, lens[i], i % 2 ? RELAY_FRAME_FROM : RELAY_FRAME_TO,
                         peer);
    }
    assert_int_equal(relay_frame_seal_batch(key, INDEX, 1000, a, STRIDE, lens, n, false), 0);
}

/* A batch gives what single seals give, with the multi-lane paths and
 * without; opened as a batch, one altered frame fails alone and is left
 * as it was. */
static void test_batches(void **state)
{
    unsigned was = aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
    uint16_t lens[BATCH];
    struct relay_frame f[BATCH];
    (void)state;

    for (unsigned n = 1; n <= BATCH; n += 13) {
        seal_area(area, lens, n);
        aead_multi_paths(0);
        seal_area(area2, lens, n);
        aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
        for (unsigned i = 0; i < n; i++) {
            assert_memory_equal(area + i * STRIDE, area2 + i * STRIDE,
                                relay_frame_len(lens[i]));
            check_with_libsodium(area + i * STRIDE, msg + i, lens[i], 1000 + i,
                                 i % 2 ? RELAY_FRAME_FROM : RELAY_FRAME_TO);
        }
    }
    for (unsigned paths = 0; paths < 2; paths++) {
        aead_multi_paths(paths ? AEAD_MULTI_CHACHA | AEAD_MULTI_POLY : 0);
        seal_area(area, lens, BATCH);
        area[7 * STRIDE + 100] ^= 1;
        memcpy(copy, area + 7 * STRIDE, relay_frame_len(lens[7]));
        for (unsigned i = 0; i < BATCH; i++)
            f[i] = (struct relay_frame){ .buf = area + i * STRIDE,
                                         .len = (uint32_t)relay_frame_len(lens[i]) };
        relay_frame_open_batch(key, f, BATCH);
        for (unsigned i = 0; i < BATCH; i++) {
            assert_int_equal(f[i].status, i == 7 ? -EBADMSG : 0);
            if (i == 7)
                continue;
            assert_true(f[i].counter == 1000 + i);
            assert_int_equal(f[i].kind, i % 2 ? RELAY_FRAME_FROM : RELAY_FRAME_TO);
            assert_memory_equal(f[i].peer, peer, WG_KEY_LEN);
            assert_int_equal(f[i].msg_len, lens[i]);
        }
        assert_memory_equal(copy, area + 7 * STRIDE, relay_frame_len(lens[7]));
    }
    aead_multi_paths(was);
}

static void test_every_byte_flipped(void **state)
{
    size_t len = make(200, RELAY_FRAME_FROM);
    struct relay_frame f;
    (void)state;

    memcpy(copy, buf, len);
    for (size_t i = 0; i < len; i++) {
        for (unsigned bit = 0; bit < 8; bit += 3) {
            buf[i] ^= (uint8_t)(1u << bit);
            assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
            buf[i] ^= (uint8_t)(1u << bit);
        }
    }
    assert_memory_equal(copy, buf, len);
    assert_int_equal(relay_frame_open(key, buf, len, &f), 0);
}

static void test_every_length_cut(void **state)
{
    size_t len = make(100, RELAY_FRAME_TO);
    struct relay_frame f;
    (void)state;

    for (size_t cut = 0; cut < len; cut++)
        assert_int_equal(relay_frame_open(key, buf, cut, &f), -EBADMSG);
    assert_int_equal(relay_frame_open(key, buf, RELAY_FRAME_MAX_LEN + 1, &f), -EBADMSG);
}

static void test_wrong_key(void **state)
{
    uint8_t other[WG_KEY_LEN];
    size_t len = make(64, RELAY_FRAME_TO);
    struct relay_frame f;
    (void)state;

    memcpy(other, key, sizeof(other));
    other[31] ^= 1;
    assert_int_equal(relay_frame_open(other, buf, len, &f), -EBADMSG);
}

/* A transport message's type is not a frame's, and an authentic frame
 * whose kind is neither is refused. */
static void test_wrong_type_and_kind(void **state)
{
    size_t n = 64, len = make(n, RELAY_FRAME_TO);
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, block0[64];
    struct relay_frame f;
    (void)state;

    put_le32(buf, 4);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
    put_le32(buf, RELAY_FRAME_TYPE);
    assert_int_equal(relay_frame_open(key, buf, len, &f), 0);   /* decrypted in place */
    /* Kind 3, sealed by hand: relay_frame_seal refuses the kind. */
    buf[16 + n] = 3;
    put_le64(nonce + 4, COUNTER);
    crypto_stream_chacha20_ietf_xor_ic(buf + 16 + n, buf + 16 + n, RELAY_FRAME_SEALED_LEN,
                                       nonce, 1, key);
    crypto_stream_chacha20_ietf(block0, sizeof(block0), nonce, key);
    crypto_onetimeauth_poly1305_state st;
    uint8_t pad[16] = { 0 }, lens[16];
    size_t body = len - WG_AEAD_TAG_LEN;
    crypto_onetimeauth_poly1305_init(&st, block0);
    crypto_onetimeauth_poly1305_update(&st, buf, body);
    crypto_onetimeauth_poly1305_update(&st, pad, (16 - body % 16) % 16);
    put_le64(lens, 0);
    put_le64(lens + 8, body);
    crypto_onetimeauth_poly1305_update(&st, lens, 16);
    crypto_onetimeauth_poly1305_final(&st, buf + body);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
}

static void test_seal_refuses(void **state)
{
    static const uint8_t kinds[] = { 0, 3, 0xff };
    uint16_t lens[2] = { 1420, 100 };
    (void)state;

    for (unsigned k = 0; k < sizeof(kinds); k++) {
        memset(buf, 0xaa, 64);
        buf[16 + 10] = kinds[k];
        assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, 10, false), 0);
        for (unsigned i = 0; i < 16; i++)
            assert_int_equal(buf[i], 0xaa);
    }
    memset(buf, 0xaa, 64);
    buf[16] = RELAY_FRAME_TO;
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, 0, true), 0);
    relay_frame_fill(buf, msg, MAX_N + 1, RELAY_FRAME_TO, peer);
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, MAX_N + 1, false), 0);
    relay_frame_fill(buf, msg, MAX_N, RELAY_FRAME_TO, peer);
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, MAX_N, false), RELAY_FRAME_MAX_LEN);
    /* A frame longer than its stride (not the last): none sealed. */
    memset(area, 0, sizeof(area));
    relay_frame_fill(area, msg, 1420, RELAY_FRAME_TO, peer);
    relay_frame_fill(area + 1000, msg, 100, RELAY_FRAME_TO, peer);
    assert_int_equal(relay_frame_seal_batch(key, INDEX, 1, area, 1000, lens, 2, true), -EINVAL);
    assert_int_not_equal(get_le32(area), RELAY_FRAME_TYPE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_libsodium_agree),
        cmocka_unit_test(test_round_trip_both_backends),
        cmocka_unit_test(test_batches),
        cmocka_unit_test(test_every_byte_flipped),
        cmocka_unit_test(test_every_length_cut),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_wrong_type_and_kind),
        cmocka_unit_test(test_seal_refuses),
        cmocka_unit_test(test_data_frames_only_for_data),
        cmocka_unit_test(test_data_frame_every_byte_flipped),
        cmocka_unit_test(test_data_frame_of_other_message),
        cmocka_unit_test(test_data_frame_batches),
    };

    return cmocka_run_group_tests_name("relay_frame", tests, group_setup, NULL);
}
