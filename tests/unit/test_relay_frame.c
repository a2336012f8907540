/* Tests for crypto/relay_frame: the layout byte by byte, an independent
 * check of the tag and sealed part with libsodium's ChaCha20-Poly1305
 * (the header and enclosed message as associated data), both backends,
 * every byte flipped, every length cut, wrong keys, kinds and types. */
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

static uint8_t key[WG_KEY_LEN], peer[WG_KEY_LEN];
static uint8_t buf[RELAY_FRAME_MAX_LEN + 64], copy[RELAY_FRAME_MAX_LEN + 64];
static uint8_t msg[RELAY_FRAME_MAX_LEN];

static int group_setup(void **state)
{
    (void)state;
    if (crypto_core_init())
        return -1;
    for (unsigned i = 0; i < WG_KEY_LEN; i++) {
        key[i] = (uint8_t)(i * 7 + 1);
        peer[i] = (uint8_t)(0xf0 - i);
    }
    return 0;
}

/* A frame of n enclosed bytes (a pattern) in buf; its length. */
static size_t make(size_t n, uint8_t kind)
{
    for (size_t i = 0; i < n; i++)
        msg[i] = (uint8_t)(i * 13 + 5);
    relay_frame_fill(buf, msg, n, kind, peer);
    return relay_frame_seal(key, INDEX, COUNTER, buf, n);
}

static void test_layout_and_libsodium_agree(void **state)
{
    static const size_t sizes[] = { 1, 32, 148, 1420, 1452, 9064, MAX_N };
    (void)state;

    for (unsigned s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        size_t n = sizes[s], len = make(n, RELAY_FRAME_TO);
        uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, plain[RELAY_FRAME_SEALED_LEN];
        unsigned long long plen;

        assert_int_equal(len, n + RELAY_FRAME_OVERHEAD);
        assert_int_equal(get_le32(buf), RELAY_FRAME_TYPE);
        assert_int_equal(get_le32(buf + 4), INDEX);
        assert_true(get_le64(buf + 8) == COUNTER);
        for (size_t i = 0; i < n; i++)       /* the enclosed message stays in clear */
            assert_int_equal(buf[16 + i], (uint8_t)(i * 13 + 5));
        put_le64(nonce + 4, COUNTER);
        assert_int_equal(crypto_aead_chacha20poly1305_ietf_decrypt(
                             plain, &plen, NULL, buf + 16 + n, RELAY_FRAME_SEALED_LEN + 16,
                             buf, 16 + n, nonce, key), 0);
        assert_int_equal(plen, RELAY_FRAME_SEALED_LEN);
        assert_int_equal(plain[0], RELAY_FRAME_TO);
        assert_memory_equal(plain + 1, peer, WG_KEY_LEN);
        assert_memory_not_equal(buf + 17 + n, peer, WG_KEY_LEN);   /* sealed on the wire */
    }
}

static void test_round_trip_both_backends(void **state)
{
    static const enum aead_backend backends[] = { AEAD_BACKEND_SODIUM, AEAD_BACKEND_OPENSSL };
    enum aead_backend was = aead_get_backend();
    (void)state;

    for (unsigned b = 0; b < 2; b++) {
        if (!aead_backend_available(backends[b]))
            continue;
        assert_int_equal(aead_set_backend(backends[b]), 0);
        for (size_t n = 1; n < 300; n += 7) {
            uint8_t kind = n & 1 ? RELAY_FRAME_TO : RELAY_FRAME_FROM;
            size_t len = make(n, kind);
            struct relay_frame f;

            memcpy(copy, buf, len);
            assert_int_equal(relay_frame_open(key, buf, len, &f), 0);
            assert_memory_equal(copy, buf, len);     /* nothing changed in place */
            assert_int_equal(f.kind, kind);
            assert_memory_equal(f.peer, peer, WG_KEY_LEN);
            assert_true(f.counter == COUNTER);
            assert_ptr_equal(f.msg, buf + 16);
            assert_int_equal(f.msg_len, n);
        }
    }
    assert_int_equal(aead_set_backend(was), 0);
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

/* A transport message under the same key is not a frame, and a frame's
 * sealed part with a kind beyond the two is refused though authentic. */
static void test_wrong_type_and_kind(void **state)
{
    size_t n = 64, len = make(n, RELAY_FRAME_TO), ad = 16 + n;
    struct relay_frame f;
    uint8_t *sealed = buf + ad;
    (void)state;

    put_le32(buf, 4);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
    put_le32(buf, RELAY_FRAME_TYPE);
    sealed[0] = 3;          /* sealed by hand: relay_frame_seal refuses the kind */
    memcpy(sealed + 1, peer, WG_KEY_LEN);
    aead_seal(sealed, sealed, RELAY_FRAME_SEALED_LEN, buf, ad, COUNTER, key);
    assert_int_equal(relay_frame_open(key, buf, len, &f), -EBADMSG);
}

static void test_seal_refuses(void **state)
{
    static const uint8_t kinds[] = { 0, 3, 0xff };
    (void)state;

    for (unsigned k = 0; k < sizeof(kinds); k++) {
        memset(buf, 0xaa, 64);
        buf[16 + 10] = kinds[k];
        assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, 10), 0);
        for (unsigned i = 0; i < 16; i++)
            assert_int_equal(buf[i], 0xaa);
    }
    memset(buf, 0xaa, 64);
    buf[16] = RELAY_FRAME_TO;
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, 0), 0);
    relay_frame_fill(buf, msg, MAX_N + 1, RELAY_FRAME_TO, peer);
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, MAX_N + 1), 0);
    relay_frame_fill(buf, msg, MAX_N, RELAY_FRAME_TO, peer);
    assert_int_equal(relay_frame_seal(key, INDEX, 1, buf, MAX_N), RELAY_FRAME_MAX_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layout_and_libsodium_agree),
        cmocka_unit_test(test_round_trip_both_backends),
        cmocka_unit_test(test_every_byte_flipped),
        cmocka_unit_test(test_every_length_cut),
        cmocka_unit_test(test_wrong_key),
        cmocka_unit_test(test_wrong_type_and_kind),
        cmocka_unit_test(test_seal_refuses),
    };

    return cmocka_run_group_tests_name("relay_frame", tests, group_setup, NULL);
}
