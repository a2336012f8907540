/* SPDX-License-Identifier: MIT */
/* Unit tests for crypto/blake2s: RFC 7693 vectors and self-test, the BLAKE2s
 * KAT suite (one-shot and incremental), HMAC-BLAKE2s and WireGuard's KDF
 * against values computed with Python, argument edges, and state wiping. */
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "crypto/blake2s.h"
#include "crypto/wg_const.h"
#include "tests/unit/vectors.h"

/* Uneven chunk sizes around the block length, so that incremental hashing
 * crosses block boundaries at every offset the buffer logic distinguishes. */
static const size_t chunk_pattern[] = { 1, 63, 64, 65 };

static void fill_seq(uint8_t *buf, size_t len)
{
    for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)i;
}

/* BLAKE2s through init/update/final, feeding the chunk sizes in turn. */
static void hash_chunked(uint8_t *out, size_t outlen, const uint8_t *in, size_t inlen,
                         const uint8_t *key, size_t keylen, const size_t *chunks, size_t nchunks)
{
    struct blake2s_state s;
    size_t off = 0;

    blake2s_init(&s, outlen, key, keylen);
    for (size_t i = 0; off < inlen; i = (i + 1) % nchunks) {
        size_t n = chunks[i] < inlen - off ? chunks[i] : inlen - off;
        blake2s_update(&s, in + off, n);
        off += n;
    }
    blake2s_final(&s, out);
}

static void assert_hex(const uint8_t *got, size_t len, const char *hex)
{
    uint8_t want[64];

    assert_true(len <= sizeof(want));
    hex_decode_to(want, len, hex);
    assert_memory_equal(got, want, len);
}

/* --- RFC 7693 ------------------------------------------------------------ */

/* Appendix B. */
static void test_rfc7693_abc(void **state)
{
    (void)state;
    uint8_t out[32];

    blake2s(out, sizeof(out), (const uint8_t *)"abc", 3, NULL, 0);
    assert_hex(out, sizeof(out),
               "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
}

/* Appendix E's deterministic input generator: a Fibonacci-like sequence
 * seeded with seed * 0xDEAD4BAD, keeping each term's top byte. */
static void selftest_seq(uint8_t *out, size_t len, uint32_t seed)
{
    uint32_t a = UINT32_C(0xDEAD4BAD) * seed, b = 1;

    for (size_t i = 0; i < len; i++) {
        uint32_t t = a + b;
        a = b;
        b = t;
        out[i] = (uint8_t)(t >> 24);
    }
}

/* Appendix E: one BLAKE2s-256 over the outputs of every combination of
 * output length and input length, unkeyed and keyed. */
static void test_rfc7693_selftest(void **state)
{
    (void)state;
    static const size_t md_len[] = { 16, 20, 28, 32 };
    static const size_t in_len[] = { 0, 3, 64, 65, 255, 1024 };
    uint8_t in[1024], md[32], key[32];
    struct blake2s_state grand;

    blake2s_init(&grand, 32, NULL, 0);
    for (size_t i = 0; i < sizeof(md_len) / sizeof(md_len[0]); i++) {
        size_t outlen = md_len[i];
        for (size_t j = 0; j < sizeof(in_len) / sizeof(in_len[0]); j++) {
            size_t inlen = in_len[j];
            selftest_seq(in, inlen, (uint32_t)inlen);
            blake2s(md, outlen, in, inlen, NULL, 0);
            blake2s_update(&grand, md, outlen);
            selftest_seq(key, outlen, (uint32_t)outlen);
            blake2s(md, outlen, in, inlen, key, outlen);
            blake2s_update(&grand, md, outlen);
        }
    }
    blake2s_final(&grand, md);
    assert_hex(md, 32, "6a411f08ce25adcdfb02aba641451cec53c598b24f4fc787fbdc88797f4c1dfe");
}

/* --- KAT suite ------------------------------------------------------------- */

static int kat_entry_ok(const struct json *e)
{
    size_t inlen, keylen, outlen;
    uint8_t *in = hex_decode(json_get_str(e, "in"), &inlen);
    uint8_t *key = hex_decode(json_get_str(e, "key"), &keylen);
    uint8_t *want = hex_decode(json_get_str(e, "out"), &outlen);
    uint8_t one[BLAKE2S_OUT_MAX], inc[BLAKE2S_OUT_MAX];
    int ok = strcmp(json_get_str(e, "hash"), "blake2s") == 0 && outlen >= 1 &&
             outlen <= BLAKE2S_OUT_MAX && keylen <= BLAKE2S_KEY_MAX;

    if (ok) {
        blake2s(one, outlen, in, inlen, key, keylen);
        hash_chunked(inc, outlen, in, inlen, key, keylen, chunk_pattern,
                     sizeof(chunk_pattern) / sizeof(chunk_pattern[0]));
        ok = memcmp(one, want, outlen) == 0 && memcmp(inc, want, outlen) == 0;
    }
    free(in);
    free(key);
    free(want);
    return ok;
}

static void test_kat(void **state)
{
    (void)state;
    const char *path = vectors_path("blake2/blake2s-kat.json");
    struct json *root = json_load(path);

    if (!root) {
        printf("blake2s kat: skipped (no %s)\n", path);
        skip();
    }
    assert_int_equal(root->type, JSON_ARRAY);
    size_t passed = 0;
    for (size_t i = 0; i < root->n; i++) {
        if (kat_entry_ok(&root->child[i]))
            passed++;
        else
            fprintf(stderr, "blake2s kat: entry %zu failed\n", i);
    }
    size_t total = root->n;
    json_free(root);
    vectors_report("blake2s kat", passed, total);
    assert_true(total > 0);
    assert_int_equal(passed, total);
}

/* --- HMAC and KDF -----------------------------------------------------------
 * Expected values computed with Python 3.11:
 *   import hmac, hashlib
 *   hmac.new(key, msg, hashlib.blake2s).hexdigest()
 * with the key and message given in each test. */

static void test_hmac_short_key(void **state)
{
    (void)state;
    static const char msg[] = "The quick brown fox jumps over the lazy dog";
    uint8_t out[32];

    /* key=b"key", msg=b"The quick brown fox jumps over the lazy dog" */
    blake2s_hmac(out, (const uint8_t *)msg, strlen(msg), (const uint8_t *)"key", 3);
    assert_hex(out, 32, "f93215bb90d4af4c3061cd932fb169fb8bb8a91d0b4022baea1271e1323cd9a0");
}

static void test_hmac_empty_message(void **state)
{
    (void)state;
    uint8_t key[32], out[32];

    /* key=bytes(range(32)), msg=b"" */
    fill_seq(key, sizeof(key));
    blake2s_hmac(out, NULL, 0, key, sizeof(key));
    assert_hex(out, 32, "e2641d24dfa8dd89e8cb77f1cdc77d8c006e5bebdfc4d6a3a3a6f8d5b7586fb0");
}

static void test_hmac_block_key(void **state)
{
    (void)state;
    static const char msg[] = "ddpnet hmac block-sized key";
    uint8_t key[64], out[32];

    /* key=bytes(range(64)), msg=b"ddpnet hmac block-sized key" */
    fill_seq(key, sizeof(key));
    blake2s_hmac(out, (const uint8_t *)msg, strlen(msg), key, sizeof(key));
    assert_hex(out, 32, "f85b9953ce7f413d3927ffd862cb0f0fa18578cb17c687165d3c8df27c924aa0");
}

static void test_hmac_long_key(void **state)
{
    (void)state;
    static const char msg[] = "ddpnet hmac key longer than a block";
    uint8_t key[100], out[32];

    /* key=bytes(range(100)), msg=b"ddpnet hmac key longer than a block":
     * the key is hashed to 32 bytes first. */
    fill_seq(key, sizeof(key));
    blake2s_hmac(out, (const uint8_t *)msg, strlen(msg), key, sizeof(key));
    assert_hex(out, 32, "33df28afd343d48cd7367bf33b25d998a8dec9af8bd3fd4276e6aa26f63e2ca8");
}

/* ck=bytes(range(32)), inp=bytes(range(0x40, 0x68)) (40 bytes), then
 *   H=lambda k,m: hmac.new(k,m,hashlib.blake2s).digest()
 *   prk=H(ck,inp); t1=H(prk,b"\x01"); t2=H(prk,t1+b"\x02"); t3=H(prk,t2+b"\x03") */
static const char kdf_t1[] = "1bb7601df4a0225a43e130aeee241d0065811611b0302bcf95d13f42bcc4145f";
static const char kdf_t2[] = "31f829ab36a9f1bc252cb93379c1730f97fb549c3f94c93e6cc5f82be2d4f22d";
static const char kdf_t3[] = "cac64da352abe6c9e2a327f2ea2695b1ed2748736d6fa8bbd4a4c58fb4294032";

static void kdf_inputs(uint8_t ck[32], uint8_t in[40])
{
    fill_seq(ck, 32);
    for (size_t i = 0; i < 40; i++)
        in[i] = (uint8_t)(0x40 + i);
}

static void test_kdf3(void **state)
{
    (void)state;
    uint8_t ck[32], in[40], t1[32], t2[32], t3[32];

    kdf_inputs(ck, in);
    blake2s_kdf(t1, t2, t3, ck, in, sizeof(in));
    assert_hex(t1, 32, kdf_t1);
    assert_hex(t2, 32, kdf_t2);
    assert_hex(t3, 32, kdf_t3);
}

/* KDF1 and KDF2 are prefixes of KDF3 and leave the unused outputs alone. */
static void test_kdf_stops_early(void **state)
{
    (void)state;
    uint8_t ck[32], in[40], t1[32], t2[32], t3[32], untouched[32];

    kdf_inputs(ck, in);
    memset(untouched, 0xa5, sizeof(untouched));
    blake2s_kdf(t1, NULL, NULL, ck, in, sizeof(in));
    assert_hex(t1, 32, kdf_t1);

    memcpy(t3, untouched, 32);
    blake2s_kdf(t1, t2, NULL, ck, in, sizeof(in));
    assert_hex(t1, 32, kdf_t1);
    assert_hex(t2, 32, kdf_t2);
    assert_memory_equal(t3, untouched, 32);

    /* t3 without t2 has no meaning: it stops after t1. */
    blake2s_kdf(t1, NULL, t3, ck, in, sizeof(in));
    assert_hex(t1, 32, kdf_t1);
    assert_memory_equal(t3, untouched, 32);
}

static void test_kdf_empty_input(void **state)
{
    (void)state;
    uint8_t ck[32], t1[32];

    /* ck=bytes(range(32)): H(H(ck, b""), b"\x01") */
    fill_seq(ck, sizeof(ck));
    blake2s_kdf(t1, NULL, NULL, ck, NULL, 0);
    assert_hex(t1, 32, "7a38c34bf2b8738d7374ca77c44ecb309a11d2b2528304fa86052c365e722624");
}

/* The handshake's pattern: the chaining key is both input and output t1,
 * and an output may overwrite the input too. */
static void test_kdf_aliasing(void **state)
{
    (void)state;
    uint8_t ck[32], in[40], t2[32], buf[40], t1[32];

    kdf_inputs(ck, in);
    blake2s_kdf(ck, t2, NULL, ck, in, sizeof(in));
    assert_hex(ck, 32, kdf_t1);
    assert_hex(t2, 32, kdf_t2);

    kdf_inputs(ck, buf);
    blake2s_kdf(t1, buf, ck, ck, buf, 32 + 8);
    assert_hex(t1, 32, kdf_t1);
    assert_hex(buf, 32, kdf_t2);
    assert_hex(ck, 32, kdf_t3);
}

/* An output may overwrite the HMAC's key or message. */
static void test_hmac_aliasing(void **state)
{
    (void)state;
    static const char msg[] = "The quick brown fox jumps over the lazy dog";
    uint8_t buf[64];

    memcpy(buf, msg, strlen(msg));
    blake2s_hmac(buf, buf, strlen(msg), (const uint8_t *)"key", 3);
    assert_hex(buf, 32, "f93215bb90d4af4c3061cd932fb169fb8bb8a91d0b4022baea1271e1323cd9a0");

    fill_seq(buf, 32);
    blake2s_hmac(buf, NULL, 0, buf, 32);
    assert_hex(buf, 32, "e2641d24dfa8dd89e8cb77f1cdc77d8c006e5bebdfc4d6a3a3a6f8d5b7586fb0");
}

/* --- argument edges -------------------------------------------------------
 * Expected values: hashlib.blake2s(data, digest_size=n, key=k).hexdigest() */

static void test_outlen_edges(void **state)
{
    (void)state;
    uint8_t out[32];

    /* blake2s(b"abc", digest_size=1): the output length is hashed in the
     * parameter block, so this is not a prefix of the 32-byte digest. */
    memset(out, 0, sizeof(out));
    blake2s(out, 1, (const uint8_t *)"abc", 3, NULL, 0);
    assert_int_equal(out[0], 0x0d);
    assert_int_equal(out[1], 0);
    blake2s(out, 16, (const uint8_t *)"abc", 3, NULL, 0);
    assert_hex(out, 16, "aa4938119b1dc7b87cbad0ffd200d0ae");
    blake2s(out, 32, (const uint8_t *)"abc", 3, NULL, 0);
    assert_hex(out, 32, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
}

static void test_keylen_edges(void **state)
{
    (void)state;
    const uint8_t key1 = 0x5a;
    uint8_t key[32], out[32];

    /* key=b"\x5a" */
    blake2s(out, 32, (const uint8_t *)"abc", 3, &key1, 1);
    assert_hex(out, 32, "4968c8467ad27acc8b4739430b55a57017e8e0a9a4a2529f1e8029f1c94bef16");
    /* key=bytes(range(32)) */
    fill_seq(key, sizeof(key));
    blake2s(out, 32, (const uint8_t *)"abc", 3, key, 32);
    assert_hex(out, 32, "a281f725754969a702f6fe36fc591b7def866e4b70173ece402fc01c064d6b65");
    /* Keyed, empty message: the key block alone is the final block. */
    blake2s(out, 32, NULL, 0, key, 32);
    assert_hex(out, 32, "48a8997da407876b3d79c0d92325ad3b89cbb754d86ab71aee047ad345fd2c49");
}

/* Messages of exactly one and two blocks, one-shot and in several chunkings,
 * where a buffer compressed too early (without the final flag) shows. */
static void check_block_boundary(size_t len, const uint8_t *key, size_t keylen, const char *hex)
{
    static const size_t whole[] = { 64 }, ones[] = { 1 }, odd[] = { 63, 1 }, over[] = { 65 };
    uint8_t in[128], out[32];

    fill_seq(in, len);
    blake2s(out, 32, in, len, key, keylen);
    assert_hex(out, 32, hex);
    hash_chunked(out, 32, in, len, key, keylen, whole, 1);
    assert_hex(out, 32, hex);
    hash_chunked(out, 32, in, len, key, keylen, ones, 1);
    assert_hex(out, 32, hex);
    hash_chunked(out, 32, in, len, key, keylen, odd, 2);
    assert_hex(out, 32, hex);
    hash_chunked(out, 32, in, len, key, keylen, over, 1);
    assert_hex(out, 32, hex);
}

static void test_block_boundaries(void **state)
{
    (void)state;
    uint8_t key[32];

    fill_seq(key, sizeof(key));
    /* bytes(range(64)), bytes(range(128)), unkeyed then key=bytes(range(32)) */
    check_block_boundary(64, NULL, 0,
                         "56f34e8b96557e90c1f24b52d0c89d51086acf1b00f634cf1dde9233b8eaaa3e");
    check_block_boundary(128, NULL, 0,
                         "1fa877de67259d19863a2a34bcc6962a2b25fcbf5cbecd7ede8f1fa36688a796");
    check_block_boundary(64, key, 32,
                         "8975b0577fd35566d750b362b0897a26c399136df07bababbde6203ff2954ed4");
    check_block_boundary(128, key, 32,
                         "0c311f38c35a4fb90d651c289d486856cd1413df9b0677f53ece2cd9e477c60a");
}

/* Empty updates change nothing. */
static void test_empty_updates(void **state)
{
    (void)state;
    struct blake2s_state s;
    uint8_t out[32];

    blake2s_init(&s, 32, NULL, 0);
    blake2s_update(&s, NULL, 0);
    blake2s_update(&s, (const uint8_t *)"a", 1);
    blake2s_update(&s, (const uint8_t *)"x", 0);
    blake2s_update(&s, (const uint8_t *)"bc", 2);
    blake2s_update(&s, NULL, 0);
    blake2s_final(&s, out);
    assert_hex(out, 32, "508c5e8c327c14e2e1a72ba34eeb452f37458b209ed63a294d999b4c86675982");
}

/* The byte counter is 64 bits kept in two words: the low word wraps into
 * the high one. No vector reaches 4 GiB, so the state is primed instead. */
static void test_counter_carry(void **state)
{
    (void)state;
    struct blake2s_state s;
    uint8_t in[65] = { 0 }, out[32];

    blake2s_init(&s, 32, NULL, 0);
    s.t[0] = UINT32_MAX - (BLAKE2S_BLOCK_LEN - 1);
    blake2s_update(&s, in, sizeof(in));
    assert_int_equal(s.t[0], 0);
    assert_int_equal(s.t[1], 1);
    assert_int_equal(s.buflen, 1);
    blake2s_final(&s, out);
}

/* WireGuard's first handshake step, Ci = HASH(CONSTRUCTION) and
 * Hi = HASH(Ci || IDENTIFIER), as hashlib.blake2s computes them. */
static void test_wireguard_initial_hashes(void **state)
{
    (void)state;
    struct blake2s_state s;
    uint8_t ci[32], hi[32];

    blake2s(ci, 32, (const uint8_t *)WG_CONSTRUCTION, strlen(WG_CONSTRUCTION), NULL, 0);
    assert_hex(ci, 32, "60e26daef327efc02ec335e2a025d2d016eb4206f87277f52d38d1988b78cd36");
    blake2s_init(&s, 32, NULL, 0);
    blake2s_update(&s, ci, sizeof(ci));
    blake2s_update(&s, (const uint8_t *)WG_IDENTIFIER, strlen(WG_IDENTIFIER));
    blake2s_final(&s, hi);
    assert_hex(hi, 32, "2211b361081ac566691243db458ad5322d9c6c662293e8b70ee19c65ba079ef3");
}

/* --- wiping and bad arguments ------------------------------------------------ */

static void test_final_wipes_state(void **state)
{
    (void)state;
    static const struct blake2s_state zero;
    struct blake2s_state s;
    uint8_t key[32], out[32];

    fill_seq(key, sizeof(key));
    memset(&s, 0xaa, sizeof(s));
    blake2s_init(&s, 32, key, sizeof(key));
    blake2s_update(&s, (const uint8_t *)"abc", 3);
    assert_memory_not_equal(&s, &zero, sizeof(s));
    blake2s_final(&s, out);
    assert_memory_equal(&s, &zero, sizeof(s));
}

/* The API returns nothing, so a length outside the contract aborts rather
 * than overrun a buffer. Each case runs in a child process. */
enum bad_case { BAD_OUTLEN_ZERO, BAD_OUTLEN_BIG, BAD_KEYLEN_BIG, BAD_KEY_NULL, BAD_CASES };

static void run_bad_case(enum bad_case c)
{
    struct blake2s_state s;
    uint8_t key[BLAKE2S_KEY_MAX + 1] = { 0 };

    switch (c) {
    case BAD_OUTLEN_ZERO: blake2s_init(&s, 0, NULL, 0); break;
    case BAD_OUTLEN_BIG:  blake2s_init(&s, BLAKE2S_OUT_MAX + 1, NULL, 0); break;
    case BAD_KEYLEN_BIG:  blake2s_init(&s, 32, key, sizeof(key)); break;
    case BAD_KEY_NULL:    blake2s_init(&s, 32, NULL, 1); break;
    default: break;
    }
}

static void test_bad_arguments_abort(void **state)
{
    (void)state;
    for (int c = 0; c < BAD_CASES; c++) {
        fflush(NULL);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            run_bad_case((enum bad_case)c);
            _exit(0);
        }
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status));
        assert_int_equal(WTERMSIG(status), SIGABRT);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rfc7693_abc),
        cmocka_unit_test(test_rfc7693_selftest),
        cmocka_unit_test(test_kat),
        cmocka_unit_test(test_hmac_short_key),
        cmocka_unit_test(test_hmac_empty_message),
        cmocka_unit_test(test_hmac_block_key),
        cmocka_unit_test(test_hmac_long_key),
        cmocka_unit_test(test_hmac_aliasing),
        cmocka_unit_test(test_kdf3),
        cmocka_unit_test(test_kdf_stops_early),
        cmocka_unit_test(test_kdf_empty_input),
        cmocka_unit_test(test_kdf_aliasing),
        cmocka_unit_test(test_outlen_edges),
        cmocka_unit_test(test_keylen_edges),
        cmocka_unit_test(test_block_boundaries),
        cmocka_unit_test(test_empty_updates),
        cmocka_unit_test(test_counter_carry),
        cmocka_unit_test(test_wireguard_initial_hashes),
        cmocka_unit_test(test_final_wipes_state),
        cmocka_unit_test(test_bad_arguments_abort),
    };
    return cmocka_run_group_tests_name("blake2s", tests, NULL, NULL);
}
