/* SPDX-License-Identifier: MIT */
/* Tests for crypto/aead: the RFC 8439 example, the Wycheproof
 * ChaCha20-Poly1305 and XChaCha20-Poly1305 suites, WireGuard's counter
 * nonce, and the rule that a failed open leaves dst untouched, each run once
 * per backend (libsodium, OpenSSL); then the backend selection itself
 * ($DDPNET_AEAD, aead_set_backend), the two backends against each other,
 * the OpenSSL backend's per-thread contexts, and the batch path (and its
 * multi-message ChaCha20) against the one-message calls. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/chacha_multi.h"
#include "crypto/poly1305_multi.h"
#include "tests/unit/vectors.h"

#define PATTERN 0x5c

typedef int (*aead_fn)(uint8_t *dst, const uint8_t *src, size_t len,
                       const uint8_t *ad, size_t adlen,
                       const uint8_t *nonce, size_t noncelen,
                       const uint8_t key[WG_KEY_LEN]);

static int setup(void **state)
{
    (void)state;
    return crypto_core_init();
}

static int all_equal(const uint8_t *p, size_t len, uint8_t v)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* --- RFC 8439 section 2.8.2 ---------------------------------------------------- */

static const char rfc_plain[] =
    "Ladies and Gentlemen of the class of '99: If I could offer you only one "
    "tip for the future, sunscreen would be it.";
static const char rfc_ct_hex[] =
    "d31a8d34648e60db7b86afbc53ef7ec2a4aded51296e08fea9e2b5a736ee62d6"
    "3dbea45e8ca9671282fafb69da92728b1a71de0a9e060b2905d6a5b67ecd3b36"
    "92ddbd7f2d778b8c9803aee328091b58fab324e4fad675945585808b4831d7bc"
    "3ff4def08e4b7a9de576d26586cec64b6116";
static const char rfc_tag_hex[] = "1ae10b594f09e26a7e902ecbd0600691";

static void rfc_key(uint8_t key[WG_KEY_LEN])
{
    for (size_t i = 0; i < WG_KEY_LEN; i++)
        key[i] = (uint8_t)(0x80 + i);
}

static void test_rfc8439_seal(void **state)
{
    (void)state;
    const size_t len = sizeof(rfc_plain) - 1;
    uint8_t key[WG_KEY_LEN], nonce[WG_AEAD_NONCE_LEN], aad[12];
    uint8_t want[sizeof(rfc_plain) - 1 + WG_AEAD_TAG_LEN], got[sizeof(want)];

    assert_int_equal(len, 114);
    rfc_key(key);
    hex_decode_to(nonce, sizeof(nonce), "070000004041424344454647");
    hex_decode_to(aad, sizeof(aad), "50515253c0c1c2c3c4c5c6c7");
    hex_decode_to(want, len, rfc_ct_hex);
    hex_decode_to(want + len, WG_AEAD_TAG_LEN, rfc_tag_hex);

    assert_int_equal(aead_seal_nonce(got, (const uint8_t *)rfc_plain, len, aad, sizeof(aad),
                                     nonce, sizeof(nonce), key), 0);
    assert_memory_equal(got, want, sizeof(want));

    /* In place: the buffer holds the plaintext, then ciphertext || tag. */
    memcpy(got, rfc_plain, len);
    assert_int_equal(aead_seal_nonce(got, got, len, aad, sizeof(aad), nonce, sizeof(nonce), key), 0);
    assert_memory_equal(got, want, sizeof(want));
}

static void test_rfc8439_open(void **state)
{
    (void)state;
    const size_t len = sizeof(rfc_plain) - 1;
    uint8_t key[WG_KEY_LEN], nonce[WG_AEAD_NONCE_LEN], aad[12];
    uint8_t sealed[sizeof(rfc_plain) - 1 + WG_AEAD_TAG_LEN], out[sizeof(rfc_plain) - 1];

    rfc_key(key);
    hex_decode_to(nonce, sizeof(nonce), "070000004041424344454647");
    hex_decode_to(aad, sizeof(aad), "50515253c0c1c2c3c4c5c6c7");
    hex_decode_to(sealed, len, rfc_ct_hex);
    hex_decode_to(sealed + len, WG_AEAD_TAG_LEN, rfc_tag_hex);

    assert_int_equal(aead_open_nonce(out, sealed, sizeof(sealed), aad, sizeof(aad),
                                     nonce, sizeof(nonce), key), 0);
    assert_memory_equal(out, rfc_plain, len);

    assert_int_equal(aead_open_nonce(sealed, sealed, sizeof(sealed), aad, sizeof(aad),
                                     nonce, sizeof(nonce), key), 0);
    assert_memory_equal(sealed, rfc_plain, len);
}

/* --- WireGuard's counter nonce ------------------------------------------------- */

static void test_counter_nonce_layout(void **state)
{
    (void)state;
    static const uint64_t counters[] = {
        0, 1, 0xff, 0x100, UINT64_C(0x0102030405060708), WG_REJECT_AFTER_MESSAGES, UINT64_MAX,
    };
    uint8_t key[WG_KEY_LEN], msg[45], ad[7];
    uint8_t a[sizeof(msg) + WG_AEAD_TAG_LEN], b[sizeof(a)], out[sizeof(msg)];

    for (size_t i = 0; i < sizeof(key); i++)
        key[i] = (uint8_t)(3 * i + 1);
    for (size_t i = 0; i < sizeof(msg); i++)
        msg[i] = (uint8_t)i;
    memset(ad, 0xad, sizeof(ad));

    for (size_t c = 0; c < sizeof(counters) / sizeof(counters[0]); c++) {
        uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 };

        /* 32 zero bits, then the counter little-endian, built by hand. */
        for (size_t i = 0; i < sizeof(uint64_t); i++)
            nonce[4 + i] = (uint8_t)(counters[c] >> (8 * i));
        aead_seal(a, msg, sizeof(msg), ad, sizeof(ad), counters[c], key);
        assert_int_equal(aead_seal_nonce(b, msg, sizeof(msg), ad, sizeof(ad),
                                         nonce, sizeof(nonce), key), 0);
        assert_memory_equal(a, b, sizeof(a));

        assert_int_equal(aead_open(out, a, sizeof(a), ad, sizeof(ad), counters[c], key), 0);
        assert_memory_equal(out, msg, sizeof(msg));
        assert_int_equal(aead_open_nonce(out, a, sizeof(a), ad, sizeof(ad),
                                         nonce, sizeof(nonce), key), 0);
        assert_memory_equal(out, msg, sizeof(msg));
    }

    /* Neighbouring counters must give different output and not open each other. */
    aead_seal(a, msg, sizeof(msg), ad, sizeof(ad), 1, key);
    aead_seal(b, msg, sizeof(msg), ad, sizeof(ad), 2, key);
    assert_memory_not_equal(a, b, sizeof(a));
    assert_int_equal(aead_open(out, a, sizeof(a), ad, sizeof(ad), 2, key), -EBADMSG);
    /* A big-endian counter would be a different nonce. */
    assert_int_equal(aead_open(out, a, sizeof(a), ad, sizeof(ad), UINT64_C(1) << 56, key),
                     -EBADMSG);
}

/* --- Wycheproof ----------------------------------------------------------------- */

struct suite {
    const char *name, *file;
    aead_fn seal, open;
    size_t noncelen;
};

struct tc {
    uint8_t *key, *iv, *aad, *msg, *sealed;
    size_t keylen, ivlen, aadlen, msglen, sealedlen;
    const char *result;
};

static void tc_load(struct tc *t, const struct json *j)
{
    size_t ctlen, taglen;
    uint8_t *ct = hex_decode(json_get_str(j, "ct"), &ctlen);
    uint8_t *tag = hex_decode(json_get_str(j, "tag"), &taglen);

    t->key = hex_decode(json_get_str(j, "key"), &t->keylen);
    t->iv = hex_decode(json_get_str(j, "iv"), &t->ivlen);
    t->aad = hex_decode(json_get_str(j, "aad"), &t->aadlen);
    t->msg = hex_decode(json_get_str(j, "msg"), &t->msglen);
    t->sealedlen = ctlen + taglen;
    t->sealed = malloc(t->sealedlen + 1);
    assert_non_null(t->sealed);
    memcpy(t->sealed, ct, ctlen);
    memcpy(t->sealed + ctlen, tag, taglen);
    t->result = json_get_str(j, "result");
    free(ct);
    free(tag);
}

static void tc_free(struct tc *t)
{
    free(t->key);
    free(t->iv);
    free(t->aad);
    free(t->msg);
    free(t->sealed);
}

/* Sealing msg must give ct || tag exactly for a valid case; for an invalid
 * one it must not (the tag was modified), or be refused for its nonce size. */
static int tc_check_seal(const struct suite *s, const struct tc *t, int valid)
{
    uint8_t *out = malloc(t->msglen + WG_AEAD_TAG_LEN);
    int ret, ok;

    assert_non_null(out);
    ret = s->seal(out, t->msg, t->msglen, t->aad, t->aadlen, t->iv, t->ivlen, t->key);
    if (t->ivlen != s->noncelen)
        ok = ret == -EINVAL;
    else
        ok = ret == 0 && (t->msglen + WG_AEAD_TAG_LEN == t->sealedlen &&
                          memcmp(out, t->sealed, t->sealedlen) == 0) == valid;
    free(out);
    return ok;
}

/* Opening ct || tag must give msg for a valid case (into a separate buffer
 * and in place); an invalid one must be refused with dst untouched. */
static int tc_check_open(const struct suite *s, const struct tc *t, int valid)
{
    uint8_t *out = malloc(t->sealedlen + 1), *inplace = malloc(t->sealedlen + 1);
    int ret, ok;

    assert_non_null(out);
    assert_non_null(inplace);
    memset(out, PATTERN, t->sealedlen + 1);
    memcpy(inplace, t->sealed, t->sealedlen);
    ret = s->open(out, t->sealed, t->sealedlen, t->aad, t->aadlen, t->iv, t->ivlen, t->key);
    if (valid) {
        ok = ret == 0 && t->sealedlen == t->msglen + WG_AEAD_TAG_LEN &&
             memcmp(out, t->msg, t->msglen) == 0 &&
             s->open(inplace, inplace, t->sealedlen, t->aad, t->aadlen,
                     t->iv, t->ivlen, t->key) == 0 &&
             memcmp(inplace, t->msg, t->msglen) == 0;
    } else {
        ok = ret == (t->ivlen != s->noncelen ? -EINVAL : -EBADMSG) &&
             all_equal(out, t->sealedlen + 1, PATTERN);
    }
    free(out);
    free(inplace);
    return ok;
}

static int tc_run(const struct suite *s, const struct json *j)
{
    struct tc t;
    int ok, valid;

    tc_load(&t, j);
    valid = strcmp(t.result, "valid") == 0;
    if (t.keylen != WG_KEY_LEN) {
        ok = 0;
    } else if (!valid && strcmp(t.result, "invalid") != 0) {
        /* "acceptable": either outcome is right, as long as it is consistent. */
        ok = tc_check_open(s, &t, 1) || tc_check_open(s, &t, 0);
    } else {
        ok = tc_check_seal(s, &t, valid) && tc_check_open(s, &t, valid);
    }
    if (!ok)
        fprintf(stderr, "%s: tcId %ld failed (%s)\n", s->name, json_get_int(j, "tcId"), t.result);
    tc_free(&t);
    return ok;
}

/* The suite's name carries the backend: "wycheproof chacha20poly1305 (openssl)". */
static void run_suite(const struct suite *base)
{
    const char *path = vectors_path(base->file);
    struct json *root = json_load(path);
    const struct json *groups;
    size_t passed = 0, total = 0;
    char name[128];
    struct suite named = *base;
    const struct suite *s = &named;

    snprintf(name, sizeof(name), "%s (%s)", base->name, aead_backend_name(aead_get_backend()));
    named.name = name;

    if (!root) {
        printf("%s: skipped (no %s)\n", s->name, path);
        fflush(stdout);
        skip();
    }
    groups = json_get(root, "testGroups");
    assert_non_null(groups);
    for (size_t g = 0; g < groups->n; g++) {
        const struct json *tests = json_get(&groups->child[g], "tests");

        assert_non_null(tests);
        for (size_t i = 0; i < tests->n; i++, total++)
            passed += (size_t)tc_run(s, &tests->child[i]);
    }
    vectors_report(s->name, passed, total);
    assert_true(total > 0);
    assert_int_equal(total, json_get_int(root, "numberOfTests"));
    json_free(root);
    assert_int_equal(passed, total);
}

static void test_wycheproof_chacha20poly1305(void **state)
{
    (void)state;
    static const struct suite s = {
        "wycheproof chacha20poly1305", "wycheproof/chacha20_poly1305_test.json",
        aead_seal_nonce, aead_open_nonce, WG_AEAD_NONCE_LEN,
    };
    run_suite(&s);
}

static void test_wycheproof_xchacha20poly1305(void **state)
{
    (void)state;
    static const struct suite s = {
        "wycheproof xchacha20poly1305", "wycheproof/xchacha20_poly1305_test.json",
        xaead_seal, xaead_open, WG_XAEAD_NONCE_LEN,
    };
    run_suite(&s);
}

/* --- tampering and bad input ---------------------------------------------------- */

#define TMSG_LEN 37
#define TAD_LEN  13

struct tamper {
    uint8_t key[WG_KEY_LEN];
    uint8_t msg[TMSG_LEN], ad[TAD_LEN];
    uint8_t sealed[TMSG_LEN + WG_AEAD_TAG_LEN];
    uint8_t dst[TMSG_LEN + WG_AEAD_TAG_LEN];
};

static void tamper_init(struct tamper *t)
{
    randombytes_buf(t->key, sizeof(t->key));
    randombytes_buf(t->msg, sizeof(t->msg));
    randombytes_buf(t->ad, sizeof(t->ad));
}

/* Opens with a counter-nonce into a patterned dst: must fail and leave it. */
static void expect_refused(struct tamper *t, size_t len, uint64_t counter)
{
    memset(t->dst, PATTERN, sizeof(t->dst));
    assert_int_equal(aead_open(t->dst, t->sealed, len, t->ad, sizeof(t->ad), counter, t->key),
                     -EBADMSG);
    assert_true(all_equal(t->dst, sizeof(t->dst), PATTERN));
}

static void test_tamper_every_bit(void **state)
{
    (void)state;
    const uint64_t counter = 42;
    struct tamper t;

    tamper_init(&t);
    aead_seal(t.sealed, t.msg, sizeof(t.msg), t.ad, sizeof(t.ad), counter, t.key);

    for (size_t bit = 0; bit < 8 * sizeof(t.sealed); bit++) {
        t.sealed[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        expect_refused(&t, sizeof(t.sealed), counter);
        t.sealed[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    for (size_t bit = 0; bit < 8 * sizeof(t.ad); bit++) {
        t.ad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
        expect_refused(&t, sizeof(t.sealed), counter);
        t.ad[bit / 8] ^= (uint8_t)(1u << (bit % 8));
    }
    /* Wrong counter, wrong key, truncated, extended by a byte. */
    expect_refused(&t, sizeof(t.sealed), counter + 1);
    expect_refused(&t, sizeof(t.sealed) - 1, counter);
    t.key[0] ^= 1;
    expect_refused(&t, sizeof(t.sealed), counter);
    t.key[0] ^= 1;

    /* Everything restored: it opens again. */
    assert_int_equal(aead_open(t.dst, t.sealed, sizeof(t.sealed), t.ad, sizeof(t.ad),
                               counter, t.key), 0);
    assert_memory_equal(t.dst, t.msg, sizeof(t.msg));
}

/* In place, a refused packet must still be the ciphertext it was. */
static void test_tamper_in_place(void **state)
{
    (void)state;
    struct tamper t;
    uint8_t copy[sizeof(t.sealed)];

    tamper_init(&t);
    aead_seal(t.sealed, t.msg, sizeof(t.msg), t.ad, sizeof(t.ad), 7, t.key);
    t.sealed[sizeof(t.sealed) - 1] ^= 0x80;
    memcpy(copy, t.sealed, sizeof(copy));
    assert_int_equal(aead_open(t.sealed, t.sealed, sizeof(t.sealed), t.ad, sizeof(t.ad), 7, t.key),
                     -EBADMSG);
    assert_memory_equal(t.sealed, copy, sizeof(copy));
}

static void test_too_short(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN] = { 1 }, src[WG_AEAD_TAG_LEN] = { 0 }, dst[WG_AEAD_TAG_LEN];
    uint8_t n12[WG_AEAD_NONCE_LEN] = { 0 }, n24[WG_XAEAD_NONCE_LEN] = { 0 };

    for (size_t len = 0; len < WG_AEAD_TAG_LEN; len++) {
        memset(dst, PATTERN, sizeof(dst));
        assert_int_equal(aead_open(dst, src, len, NULL, 0, 0, key), -EBADMSG);
        assert_int_equal(aead_open_nonce(dst, src, len, NULL, 0, n12, sizeof(n12), key), -EBADMSG);
        assert_int_equal(xaead_open(dst, src, len, NULL, 0, n24, sizeof(n24), key), -EBADMSG);
        assert_true(all_equal(dst, sizeof(dst), PATTERN));
    }
    /* Exactly a tag's worth of zeros is long enough to check, and wrong. */
    assert_int_equal(aead_open(dst, src, sizeof(src), NULL, 0, 0, key), -EBADMSG);
}

static void test_in_place_round_trip(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN], msg[1420], buf[sizeof(msg) + WG_AEAD_TAG_LEN], ad[WG_HASH_LEN];
    uint8_t xnonce[WG_XAEAD_NONCE_LEN];

    randombytes_buf(key, sizeof(key));
    randombytes_buf(msg, sizeof(msg));
    randombytes_buf(ad, sizeof(ad));
    randombytes_buf(xnonce, sizeof(xnonce));

    memcpy(buf, msg, sizeof(msg));
    aead_seal(buf, buf, sizeof(msg), ad, sizeof(ad), 99, key);
    assert_memory_not_equal(buf, msg, sizeof(msg));
    assert_int_equal(aead_open(buf, buf, sizeof(buf), ad, sizeof(ad), 99, key), 0);
    assert_memory_equal(buf, msg, sizeof(msg));

    memcpy(buf, msg, sizeof(msg));
    assert_int_equal(xaead_seal(buf, buf, sizeof(msg), ad, sizeof(ad), xnonce, sizeof(xnonce), key), 0);
    assert_memory_not_equal(buf, msg, sizeof(msg));
    assert_int_equal(xaead_open(buf, buf, sizeof(buf), ad, sizeof(ad), xnonce, sizeof(xnonce), key), 0);
    assert_memory_equal(buf, msg, sizeof(msg));
    /* A changed byte in either part of the XChaCha nonce (the HChaCha20
     * input, or the tail that goes to ChaCha20) refuses the message. */
    for (size_t i = 0; i < sizeof(xnonce); i += sizeof(xnonce) - 1) {
        assert_int_equal(xaead_seal(buf, msg, sizeof(msg), ad, sizeof(ad), xnonce, sizeof(xnonce),
                                    key), 0);
        xnonce[i] ^= 1;
        assert_int_equal(xaead_open(buf, buf, sizeof(buf), ad, sizeof(ad), xnonce, sizeof(xnonce),
                                    key), -EBADMSG);
        xnonce[i] ^= 1;
    }
}

/* A keepalive: nothing but the tag, which still authenticates the key,
 * counter and AD. */
static void test_empty_plaintext(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN], tag[WG_AEAD_TAG_LEN], other[WG_AEAD_TAG_LEN], dst[1] = { PATTERN };
    uint8_t xnonce[WG_XAEAD_NONCE_LEN] = { 0 };

    randombytes_buf(key, sizeof(key));
    aead_seal(tag, dst, 0, NULL, 0, 5, key);
    aead_seal(other, dst, 0, NULL, 0, 6, key);
    assert_memory_not_equal(tag, other, sizeof(tag));
    assert_int_equal(aead_open(dst, tag, sizeof(tag), NULL, 0, 5, key), 0);
    assert_int_equal(dst[0], PATTERN);
    assert_int_equal(aead_open(dst, tag, sizeof(tag), NULL, 0, 6, key), -EBADMSG);

    assert_int_equal(xaead_seal(tag, dst, 0, NULL, 0, xnonce, sizeof(xnonce), key), 0);
    assert_int_equal(xaead_open(dst, tag, sizeof(tag), NULL, 0, xnonce, sizeof(xnonce), key), 0);
    tag[0] ^= 1;
    assert_int_equal(xaead_open(dst, tag, sizeof(tag), NULL, 0, xnonce, sizeof(xnonce), key),
                     -EBADMSG);
}

static void test_bad_nonce_len(void **state)
{
    (void)state;
    static const size_t lens[] = { 0, 8, 11, 13, 16, 23, 25, 32 };
    uint8_t key[WG_KEY_LEN] = { 0 }, nonce[32] = { 0 }, msg[4] = { 0 };
    uint8_t dst[sizeof(msg) + WG_AEAD_TAG_LEN];

    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        memset(dst, PATTERN, sizeof(dst));
        assert_int_equal(aead_seal_nonce(dst, msg, sizeof(msg), NULL, 0, nonce, lens[i], key), -EINVAL);
        assert_int_equal(aead_open_nonce(dst, dst, sizeof(dst), NULL, 0, nonce, lens[i], key), -EINVAL);
        assert_int_equal(xaead_seal(dst, msg, sizeof(msg), NULL, 0, nonce, lens[i], key), -EINVAL);
        assert_int_equal(xaead_open(dst, dst, sizeof(dst), NULL, 0, nonce, lens[i], key), -EINVAL);
        assert_true(all_equal(dst, sizeof(dst), PATTERN));
    }
    /* The other AEAD's nonce size is wrong for each. */
    assert_int_equal(aead_seal_nonce(dst, msg, sizeof(msg), NULL, 0, nonce, WG_XAEAD_NONCE_LEN, key),
                     -EINVAL);
    assert_int_equal(xaead_seal(dst, msg, sizeof(msg), NULL, 0, nonce, WG_AEAD_NONCE_LEN, key),
                     -EINVAL);
}

/* Lengths no buffer can have are refused before any byte is touched. */
static void test_length_overflow(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN] = { 0 }, buf[WG_AEAD_TAG_LEN];
    uint8_t n12[WG_AEAD_NONCE_LEN] = { 0 }, n24[WG_XAEAD_NONCE_LEN] = { 0 };
    const size_t huge[] = {
        SIZE_MAX, SIZE_MAX - WG_AEAD_TAG_LEN + 1,
        (size_t)crypto_aead_chacha20poly1305_ietf_MESSAGEBYTES_MAX + 1,
    };

    memset(buf, PATTERN, sizeof(buf));
    for (size_t i = 0; i < sizeof(huge) / sizeof(huge[0]); i++) {
        assert_int_equal(aead_seal_nonce(buf, buf, huge[i], NULL, 0, n12, sizeof(n12), key), -EMSGSIZE);
        assert_int_equal(xaead_seal(buf, buf, huge[i], NULL, 0, n24, sizeof(n24), key), -EMSGSIZE);
    }
    /* For open the length includes the tag. */
    assert_int_equal(aead_open_nonce(buf, buf, SIZE_MAX, NULL, 0, n12, sizeof(n12), key), -EMSGSIZE);
    assert_int_equal(aead_open(buf, buf, SIZE_MAX, NULL, 0, 0, key), -EMSGSIZE);
    assert_int_equal(xaead_open(buf, buf, SIZE_MAX, NULL, 0, n24, sizeof(n24), key), -EMSGSIZE);
    assert_int_equal(aead_open(buf, buf,
                               (size_t)crypto_aead_chacha20poly1305_ietf_MESSAGEBYTES_MAX +
                                   WG_AEAD_TAG_LEN + 1,
                               NULL, 0, 0, key), -EMSGSIZE);
    assert_true(all_equal(buf, sizeof(buf), PATTERN));
}

/* aead_seal has no status to return: an impossible length goes to
 * libsodium's misuse handler, which aborts. Checked in a child process. */
static void test_seal_overflow_aborts(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN] = { 0 }, buf[WG_AEAD_TAG_LEN] = { 0 };
    int status;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        aead_seal(buf, buf, SIZE_MAX, NULL, 0, 0, key);
        _exit(0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status));
    assert_int_equal(WTERMSIG(status), SIGABRT);
}

static void test_core_init_twice(void **state)
{
    (void)state;
    /* Setup already initialised; a second call reports success too. */
    assert_int_equal(crypto_core_init(), 0);
}

/* --- backend selection ------------------------------------------------------------ */

#ifdef DDPNET_HAVE_OPENSSL
#define OPENSSL_BUILT 1
#else
#define OPENSSL_BUILT 0
#endif

/* Values that name no backend. */
static const int bogus_backends[] = { AEAD_BACKEND_COUNT, AEAD_BACKEND_COUNT + 1, -1, 1000 };
#define NBOGUS (sizeof(bogus_backends) / sizeof(bogus_backends[0]))

static void test_backend_names(void **state)
{
    (void)state;
    assert_string_equal(aead_backend_name(AEAD_BACKEND_SODIUM), "sodium");
    assert_string_equal(aead_backend_name(AEAD_BACKEND_OPENSSL), "openssl");
    for (size_t i = 0; i < NBOGUS; i++)
        assert_null(aead_backend_name((enum aead_backend)bogus_backends[i]));
}

static void test_backend_parse(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "", "Sodium", "SODIUM", "openssl ", " openssl", "libsodium", "open", "sodiumx", "ssl",
    };
    enum aead_backend b = AEAD_BACKEND_COUNT;

    for (int i = 0; i < AEAD_BACKEND_COUNT; i++) {
        assert_int_equal(aead_backend_parse(aead_backend_name((enum aead_backend)i), &b), 0);
        assert_int_equal(b, i);
    }
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        b = AEAD_BACKEND_COUNT;
        assert_int_equal(aead_backend_parse(bad[i], &b), -EINVAL);
        assert_int_equal(b, AEAD_BACKEND_COUNT);    /* untouched */
    }
    assert_int_equal(aead_backend_parse(NULL, &b), -EINVAL);
    assert_int_equal(b, AEAD_BACKEND_COUNT);
}

/* The default splits by size; naming a backend puts every size on it. The
 * output is the same whichever serves. */
static void test_default_backend_by_size(void **state)
{
    static const size_t lens[] = { 0, 64, AEAD_SMALL_LEN - 1, AEAD_SMALL_LEN, 1420 };
    enum aead_backend bulk = OPENSSL_BUILT ? AEAD_BACKEND_OPENSSL : AEAD_BACKEND_SODIUM;
    uint8_t key[WG_KEY_LEN], plain[1420], want[1420 + WG_AEAD_TAG_LEN],
            got[1420 + WG_AEAD_TAG_LEN];
    (void)state;

    randombytes_buf(key, sizeof(key));
    randombytes_buf(plain, sizeof(plain));
    assert_int_equal(aead_set_default_backend(), 0);
    assert_int_equal(aead_get_backend(), bulk);
    assert_int_equal(aead_backend_for(0), AEAD_BACKEND_SODIUM);
    assert_int_equal(aead_backend_for(64), AEAD_BACKEND_SODIUM);
    assert_int_equal(aead_backend_for(AEAD_SMALL_LEN - 1), AEAD_BACKEND_SODIUM);
    assert_int_equal(aead_backend_for(AEAD_SMALL_LEN), bulk);
    assert_int_equal(aead_backend_for(1420), bulk);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        size_t len = lens[i];

        assert_int_equal(aead_set_backend(AEAD_BACKEND_SODIUM), 0);
        aead_seal(want, plain, len, NULL, 0, 7, key);
        assert_int_equal(aead_set_default_backend(), 0);
        aead_seal(got, plain, len, NULL, 0, 7, key);
        assert_memory_equal(got, want, len + WG_AEAD_TAG_LEN);
        assert_int_equal(aead_open(got, got, len + WG_AEAD_TAG_LEN, NULL, 0, 7, key), 0);
        assert_memory_equal(got, plain, len);
    }
    for (unsigned b = 0; b < AEAD_BACKEND_COUNT; b++) {
        if (!aead_backend_available((enum aead_backend)b))
            continue;
        assert_int_equal(aead_set_backend((enum aead_backend)b), 0);
        assert_int_equal(aead_backend_for(64), b);
        assert_int_equal(aead_backend_for(1420), b);
    }
    assert_int_equal(aead_set_default_backend(), 0);
}

static void test_set_backend(void **state)
{
    (void)state;
    assert_int_equal(aead_backend_available(AEAD_BACKEND_SODIUM), 1);
    assert_int_equal(aead_backend_available(AEAD_BACKEND_OPENSSL), OPENSSL_BUILT);

    assert_int_equal(aead_set_backend(AEAD_BACKEND_SODIUM), 0);
    assert_int_equal(aead_get_backend(), AEAD_BACKEND_SODIUM);
    if (OPENSSL_BUILT) {
        assert_int_equal(aead_set_backend(AEAD_BACKEND_OPENSSL), 0);
        assert_int_equal(aead_get_backend(), AEAD_BACKEND_OPENSSL);
    } else {
        assert_int_equal(aead_set_backend(AEAD_BACKEND_OPENSSL), -EOPNOTSUPP);
        assert_int_equal(aead_get_backend(), AEAD_BACKEND_SODIUM);
    }
    /* Unknown values are refused and change nothing. */
    for (size_t i = 0; i < NBOGUS; i++) {
        enum aead_backend before = aead_get_backend();

        assert_int_equal(aead_backend_available((enum aead_backend)bogus_backends[i]), 0);
        assert_int_equal(aead_set_backend((enum aead_backend)bogus_backends[i]), -EINVAL);
        assert_int_equal(aead_get_backend(), before);
    }
    assert_int_equal(aead_set_backend(AEAD_BACKEND_SODIUM), 0);
    assert_int_equal(aead_get_backend(), AEAD_BACKEND_SODIUM);
}

/* $DDPNET_AEAD is read by the first crypto_core_init of a process, so each
 * case runs in a fresh one: this binary again, exec'd with ENV_CHILD_ARG. It
 * prints the first init's status and backend, then, after switching to
 * libsodium by hand, those of a second init (which must keep libsodium
 * when the first succeeded). */
#define ENV_CHILD_ARG "--aead-env-child"

static int env_child(void)
{
    int first = crypto_core_init();
    enum aead_backend chosen = aead_get_backend();
    int second;

    if (aead_set_backend(AEAD_BACKEND_SODIUM) != 0)
        return 1;
    second = crypto_core_init();
    printf("%d %s %d %s\n", first, aead_backend_name(chosen), second,
           aead_backend_name(aead_get_backend()));
    return 0;
}

/* Runs env_child with $DDPNET_AEAD set to value (NULL: unset); its line in out. */
static void env_run(const char *value, char *out, size_t outlen)
{
    int fds[2], status;
    ssize_t n, got = 0;
    pid_t pid;

    assert_int_equal(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        if (value)
            setenv(AEAD_BACKEND_ENV, value, 1);
        else
            unsetenv(AEAD_BACKEND_ENV);
        dup2(fds[1], STDOUT_FILENO);
        execl("/proc/self/exe", "test_aead", ENV_CHILD_ARG, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    while ((n = read(fds[0], out + got, outlen - 1 - (size_t)got)) > 0)
        got += n;
    out[got] = '\0';
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void expect_env(const char *value, int status, const char *backend)
{
    char out[256], want[256];

    env_run(value, out, sizeof(out));
    /* A failed init leaves the static default, libsodium, and the next one
     * reads the variable again, failing alike; a good one is kept. */
    snprintf(want, sizeof(want), "%d %s %d sodium\n", status, status ? "sodium" : backend, status);
    if (strcmp(out, want) != 0)
        fail_msg("%s=%s: got \"%s\", want \"%s\"", AEAD_BACKEND_ENV, value ? value : "(unset)",
                 out, want);
}

static void test_env_override(void **state)
{
    (void)state;
    const char *deflt = OPENSSL_BUILT ? "openssl" : "sodium";

    expect_env(NULL, 0, deflt);
    expect_env("", 0, deflt);
    expect_env("sodium", 0, "sodium");
    expect_env("openssl", OPENSSL_BUILT ? 0 : -EOPNOTSUPP, "openssl");
    expect_env("bogus", -EINVAL, NULL);
    expect_env("OpenSSL", -EINVAL, NULL);
}

/* --- the backends against each other ------------------------------------------------ */

static int require_openssl(void)
{
    if (!aead_backend_available(AEAD_BACKEND_OPENSSL)) {
        printf("openssl backend: not built in\n");
        return 0;
    }
    return 1;
}

/* Seals with one backend, opens with the other (apart and in place). */
static void cross_one(const uint8_t *msg, size_t len, const uint8_t *ad, size_t adlen,
                      const uint8_t key[WG_KEY_LEN], uint8_t *a, uint8_t *b)
{
    const uint64_t counter = UINT64_C(0x1122334455667788) + len;

    assert_int_equal(aead_set_backend(AEAD_BACKEND_SODIUM), 0);
    aead_seal(a, msg, len, ad, adlen, counter, key);
    assert_int_equal(aead_set_backend(AEAD_BACKEND_OPENSSL), 0);
    aead_seal(b, msg, len, ad, adlen, counter, key);
    if (memcmp(a, b, len + WG_AEAD_TAG_LEN) != 0)
        fail_msg("sealed %zu bytes (ad %zu): the backends differ", len, adlen);

    /* openssl opens libsodium's message, libsodium opens openssl's in place. */
    memset(b, PATTERN, len + WG_AEAD_TAG_LEN);
    assert_int_equal(aead_open(b, a, len + WG_AEAD_TAG_LEN, ad, adlen, counter, key), 0);
    assert_memory_equal(b, msg, len);
    assert_int_equal(aead_set_backend(AEAD_BACKEND_OPENSSL), 0);
    aead_seal(b, b, len, ad, adlen, counter, key);
    assert_int_equal(aead_set_backend(AEAD_BACKEND_SODIUM), 0);
    assert_int_equal(aead_open(b, b, len + WG_AEAD_TAG_LEN, ad, adlen, counter, key), 0);
    assert_memory_equal(b, msg, len);
}

static void test_cross_backend(void **state)
{
    (void)state;
    /* Around Poly1305's 16 and ChaCha20's 64-byte blocks, the MTU, and the
     * OpenSSL backend's 64 KiB update chunks. */
    static const size_t lens[] = {
        0, 1, 15, 16, 17, 63, 64, 65, 127, 1420, 8192, 65535, 65536, 65537, 200003,
    };
    static const size_t adlens[] = { 0, 1, 13, 16, 32, 100 };
    const size_t max = 200003;
    uint8_t key[WG_KEY_LEN], ad[100], *msg, *a, *b;

    if (!require_openssl())
        skip();
    msg = malloc(max);
    a = malloc(max + WG_AEAD_TAG_LEN);
    b = malloc(max + WG_AEAD_TAG_LEN);
    assert_non_null(msg);
    assert_non_null(a);
    assert_non_null(b);
    randombytes_buf(key, sizeof(key));
    randombytes_buf(ad, sizeof(ad));
    randombytes_buf(msg, max);
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
        for (size_t j = 0; j < sizeof(adlens) / sizeof(adlens[0]); j++)
            cross_one(msg, lens[i], ad, adlens[j], key, a, b);
    free(msg);
    free(a);
    free(b);
}

/* --- per-thread state ----------------------------------------------------------------- */

#define THREAD_ROUNDS 2000
#define THREAD_MSG_LEN 1420

struct worker {
    uint8_t key[WG_KEY_LEN];
    uint8_t msg[THREAD_MSG_LEN];
    int rounds, ok;
};

/* Seal and open with its own key, round after round; wrong output shows a
 * context shared with the other thread. Uses no aead_thread_init: the
 * backend makes its state on first use and frees it at thread exit (which
 * LeakSanitizer checks in the ASan build). */
static void *worker_run(void *arg)
{
    struct worker *w = arg;
    uint8_t buf[THREAD_MSG_LEN + WG_AEAD_TAG_LEN];

    w->ok = 1;
    for (int i = 0; i < w->rounds && w->ok; i++) {
        aead_seal(buf, w->msg, sizeof(w->msg), NULL, 0, (uint64_t)i, w->key);
        w->ok = aead_open(buf, buf, sizeof(buf), NULL, 0, (uint64_t)i, w->key) == 0 &&
                memcmp(buf, w->msg, sizeof(w->msg)) == 0;
    }
    return NULL;
}

static void run_workers(int rounds)
{
    struct worker w[2];
    pthread_t th[2];

    for (size_t i = 0; i < 2; i++) {
        randombytes_buf(w[i].key, sizeof(w[i].key));
        randombytes_buf(w[i].msg, sizeof(w[i].msg));
        w[i].rounds = rounds;
        w[i].ok = 0;
        assert_int_equal(pthread_create(&th[i], NULL, worker_run, &w[i]), 0);
    }
    for (size_t i = 0; i < 2; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_true(w[i].ok);
    }
}

static void test_thread_state(void **state)
{
    (void)state;
    uint8_t key[WG_KEY_LEN] = { 9 }, msg[64] = { 1 }, buf[sizeof(msg) + WG_AEAD_TAG_LEN];

    assert_int_equal(aead_thread_init(), 0);
    assert_int_equal(aead_thread_init(), 0);
    run_workers(THREAD_ROUNDS);
    run_workers(1);

    /* Freed, then made again on the next call; freeing twice is harmless. */
    aead_thread_cleanup();
    aead_thread_cleanup();
    aead_seal(buf, msg, sizeof(msg), NULL, 0, 3, key);
    aead_thread_cleanup();
    assert_int_equal(aead_open(buf, buf, sizeof(buf), NULL, 0, 3, key), 0);
    assert_memory_equal(buf, msg, sizeof(msg));
    assert_int_equal(aead_thread_init(), 0);
}

/* --- batches ---------------------------------------------------------------- */

#define BATCH_MAX_MSGS 40
#define BATCH_MAX_LEN  1500

static struct {
    uint8_t buf[BATCH_MAX_MSGS][BATCH_MAX_LEN + WG_AEAD_TAG_LEN];
    uint8_t ref[BATCH_MAX_MSGS][BATCH_MAX_LEN + WG_AEAD_TAG_LEN];
    uint8_t plain[BATCH_MAX_MSGS][BATCH_MAX_LEN];
    struct aead_msg msgs[BATCH_MAX_MSGS];
} bt;

/* Lengths that hit every edge of a 64-byte block, and random ones. */
static size_t batch_len(unsigned i)
{
    static const size_t edges[] = { 0, 1, 15, 16, 63, 64, 65, 127, 128, 1420, 1500 };

    if (i < sizeof(edges) / sizeof(edges[0]))
        return edges[i];
    return randombytes_uniform(BATCH_MAX_LEN + 1);
}

/* n messages sealed one by one into bt.ref and as a batch into bt.buf. */
static void batch_seal(unsigned n, const uint8_t key[WG_KEY_LEN])
{
    for (unsigned i = 0; i < n; i++) {
        size_t len = batch_len(i);
        uint64_t counter = ((uint64_t)randombytes_random() << 32) | randombytes_random();

        randombytes_buf(bt.plain[i], len);
        memcpy(bt.buf[i], bt.plain[i], len);
        aead_seal(bt.ref[i], bt.plain[i], len, NULL, 0, counter, key);
        bt.msgs[i] = (struct aead_msg){ bt.buf[i], len, counter, 1 };
    }
    aead_seal_batch(bt.msgs, n, key);
}

/* Every way a batch can go: both multi paths, ChaCha20 only (Poly1305
 * from the backend), none (the backend for all). */
static void test_batch_matches_single(void **state)
{
    static const unsigned counts[] = { 1, 3, AEAD_BATCH_MIN, 5, 16, 17, BATCH_MAX_MSGS };
    static const unsigned paths[] = { AEAD_MULTI_CHACHA | AEAD_MULTI_POLY, AEAD_MULTI_CHACHA, 0 };
    uint8_t key[WG_KEY_LEN];
    (void)state;

    for (size_t c = 0; c < 3 * sizeof(counts) / sizeof(counts[0]); c++) {
        unsigned before = aead_multi_paths(paths[c % 3]);
        unsigned n = counts[c / 3];
        randombytes_buf(key, sizeof(key));
        batch_seal(n, key);
        for (unsigned i = 0; i < n; i++) {
            assert_int_equal(bt.msgs[i].status, 0);
            assert_memory_equal(bt.buf[i], bt.ref[i], bt.msgs[i].len + WG_AEAD_TAG_LEN);
        }
        aead_open_batch(bt.msgs, n, key);
        for (unsigned i = 0; i < n; i++) {
            assert_int_equal(bt.msgs[i].status, 0);
            if (bt.msgs[i].len)
                assert_memory_equal(bt.buf[i], bt.plain[i], bt.msgs[i].len);
        }
        aead_multi_paths(before);
    }
}

/* Forged messages among good ones: each refused with its bytes untouched,
 * the others opened; a wrong key refuses them all. */
static void batch_open_refuses_forgeries(void);

static void test_batch_open_refuses_forgeries(void **state)
{
    static const unsigned paths[] = { AEAD_MULTI_CHACHA | AEAD_MULTI_POLY, AEAD_MULTI_CHACHA, 0 };
    (void)state;

    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        unsigned before = aead_multi_paths(paths[p]);
        batch_open_refuses_forgeries();
        aead_multi_paths(before);
    }
}

static void batch_open_refuses_forgeries(void)
{
    const unsigned n = 20;
    uint8_t key[WG_KEY_LEN], other[WG_KEY_LEN];

    randombytes_buf(key, sizeof(key));
    batch_seal(n, key);
    for (unsigned i = 0; i < n; i += 3) {
        size_t len = bt.msgs[i].len;
        /* flip a bit of the tag, of the ciphertext, or use the wrong counter */
        if (i % 9 == 0)
            bt.buf[i][len] ^= 0x01;
        else if (len && i % 9 == 3)
            bt.buf[i][randombytes_uniform((uint32_t)len)] ^= 0x80;
        else
            bt.msgs[i].counter++;
    }
    memcpy(bt.ref, bt.buf, sizeof(bt.buf));
    aead_open_batch(bt.msgs, n, key);
    for (unsigned i = 0; i < n; i++) {
        size_t total = bt.msgs[i].len + WG_AEAD_TAG_LEN;
        if (i % 3 == 0) {
            assert_int_equal(bt.msgs[i].status, -EBADMSG);
            assert_memory_equal(bt.buf[i], bt.ref[i], total);
        } else {
            assert_int_equal(bt.msgs[i].status, 0);
            if (bt.msgs[i].len)
                assert_memory_equal(bt.buf[i], bt.plain[i], bt.msgs[i].len);
        }
    }
    batch_seal(n, key);
    memcpy(bt.ref, bt.buf, sizeof(bt.buf));
    randombytes_buf(other, sizeof(other));
    aead_open_batch(bt.msgs, n, other);
    for (unsigned i = 0; i < n; i++) {
        assert_int_equal(bt.msgs[i].status, -EBADMSG);
        assert_memory_equal(bt.buf[i], bt.ref[i], bt.msgs[i].len + WG_AEAD_TAG_LEN);
    }
}

/* RFC 8439 section 2.8.2 through chacha_multi: its ciphertext (keystream
 * from block 1) and its Poly1305 key (block 0), in every lane at once. */
static void test_chacha_multi_rfc8439(void **state)
{
    static const char polykey_hex[] =
        "7bac2b252db447af09b67a55a4e955840ae1d6731075d9eb2a9375783ed553ff";
    const size_t len = sizeof(rfc_plain) - 1;
    uint8_t key[WG_KEY_LEN], want[sizeof(rfc_plain) - 1], polykey[WG_POLY1305_KEY_LEN];
    uint8_t out[CHACHA_MULTI_LANES][sizeof(rfc_plain) - 1];
    uint8_t block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    struct chacha_lane lanes[CHACHA_MULTI_LANES];
    (void)state;

    if (!chacha_multi_available()) {
        printf("chacha_multi: this CPU has no AVX-512F\n");
        skip();
    }
    rfc_key(key);
    hex_decode_to(want, len, rfc_ct_hex);
    hex_decode_to(polykey, sizeof(polykey), polykey_hex);
    for (unsigned j = 0; j < CHACHA_MULTI_LANES; j++) {
        lanes[j] = (struct chacha_lane){ out[j], (const uint8_t *)rfc_plain, len, { 0 } };
        hex_decode_to(lanes[j].nonce, WG_AEAD_NONCE_LEN, "070000004041424344454647");
    }
    for (unsigned n = 1; n <= CHACHA_MULTI_LANES; n += CHACHA_MULTI_LANES - 1) {
        memset(out, 0, sizeof(out));
        chacha_multi(key, lanes, n, block0);
        for (unsigned j = 0; j < n; j++) {
            assert_memory_equal(out[j], want, len);
            assert_memory_equal(block0[j], polykey, sizeof(polykey));
        }
    }
}

/* libsodium's Poly1305 over the AEAD's input (no AD): ct, zero padding to
 * 16 bytes, le64(0) || le64(len). */
static void poly_ref(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t key[WG_POLY1305_KEY_LEN],
                     const uint8_t *ct, size_t len)
{
    static const uint8_t zeros[WG_POLY1305_BLOCK_LEN];
    crypto_onetimeauth_poly1305_state st;
    uint8_t lens[WG_POLY1305_BLOCK_LEN] = { 0 };

    crypto_onetimeauth_poly1305_init(&st, key);
    if (len)
        crypto_onetimeauth_poly1305_update(&st, ct, len);
    if (len % WG_POLY1305_BLOCK_LEN)
        crypto_onetimeauth_poly1305_update(&st, zeros, WG_POLY1305_BLOCK_LEN - len % WG_POLY1305_BLOCK_LEN);
    for (unsigned i = 0; i < 8; i++)
        lens[8 + i] = (uint8_t)((uint64_t)len >> (8 * i));
    crypto_onetimeauth_poly1305_update(&st, lens, sizeof(lens));
    crypto_onetimeauth_poly1305_final(&st, tag);
}

/* poly1305_multi against libsodium: 1 to 8 lanes of random lengths, keys
 * and messages, and the extremes (all-ones keys and messages, zero keys). */
static void test_poly1305_multi(void **state)
{
    static uint8_t ct[POLY1305_MULTI_LANES][BATCH_MAX_LEN];
    uint8_t key[POLY1305_MULTI_LANES][WG_POLY1305_KEY_LEN];
    uint8_t tag[POLY1305_MULTI_LANES][WG_AEAD_TAG_LEN], want[WG_AEAD_TAG_LEN];
    struct poly1305_lane lanes[POLY1305_MULTI_LANES];
    (void)state;

    if (!poly1305_multi_available()) {
        printf("poly1305_multi: this CPU has no AVX-512 IFMA\n");
        skip();
    }
    for (unsigned it = 0; it < 3000; it++) {
        unsigned n = 1 + it % POLY1305_MULTI_LANES;
        for (unsigned j = 0; j < n; j++) {
            size_t len = batch_len(it * 3 + j);
            randombytes_buf(ct[j], len);
            randombytes_buf(key[j], sizeof(key[j]));
            if (it % 5 == 1)
                memset(key[j], 0xff, sizeof(key[j]));
            if (it % 5 == 2)
                memset(key[j], 0, sizeof(key[j]));
            if (it % 3 == 1)
                memset(ct[j], 0xff, len);
            lanes[j] = (struct poly1305_lane){ key[j], ct[j], len, tag[j] };
        }
        poly1305_multi_aead(lanes, n);
        for (unsigned j = 0; j < n; j++) {
            poly_ref(want, key[j], ct[j], lanes[j].len);
            assert_memory_equal(tag[j], want, sizeof(want));
        }
    }
}

/* chacha_multi against libsodium's ChaCha20: block 0 and the stream from
 * block 1, out of place and in place, 1 to 16 lanes of mixed lengths;
 * nothing written past a lane's length (its last block is partial). */
static void test_chacha_multi(void **state)
{
    enum { GUARD = WG_CHACHA20_BLOCK_LEN, GUARD_BYTE = 0xa5 };
    static uint8_t src[CHACHA_MULTI_LANES][BATCH_MAX_LEN];
    static uint8_t dst[CHACHA_MULTI_LANES][BATCH_MAX_LEN + GUARD];
    uint8_t guard[GUARD];
    static uint8_t want[BATCH_MAX_LEN];
    uint8_t key[WG_KEY_LEN], block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    uint8_t zero[WG_CHACHA20_BLOCK_LEN] = { 0 }, want0[WG_CHACHA20_BLOCK_LEN];
    struct chacha_lane lanes[CHACHA_MULTI_LANES];
    (void)state;

    if (!chacha_multi_available()) {
        printf("chacha_multi: this CPU has no AVX-512F\n");
        skip();
    }
    for (unsigned n = 1; n <= CHACHA_MULTI_LANES; n++) {
        for (int in_place = 0; in_place < 2; in_place++) {
            randombytes_buf(key, sizeof(key));
            for (unsigned j = 0; j < n; j++) {
                size_t len = batch_len((j + n) % 20);
                randombytes_buf(src[j], len);
                memcpy(dst[j], src[j], len);
                memset(dst[j] + len, GUARD_BYTE, GUARD);
                lanes[j] = (struct chacha_lane){ dst[j], in_place ? dst[j] : src[j], len, { 0 } };
                randombytes_buf(lanes[j].nonce, sizeof(lanes[j].nonce));
            }
            chacha_multi(key, lanes, n, in_place ? NULL : block0);
            for (unsigned j = 0; j < n; j++) {
                crypto_stream_chacha20_ietf_xor_ic(want, src[j], lanes[j].len, lanes[j].nonce, 1, key);
                if (lanes[j].len)
                    assert_memory_equal(dst[j], want, lanes[j].len);
                memset(guard, GUARD_BYTE, sizeof(guard));
                assert_memory_equal(dst[j] + lanes[j].len, guard, sizeof(guard));
                if (!in_place) {
                    crypto_stream_chacha20_ietf_xor_ic(want0, zero, sizeof(zero), lanes[j].nonce, 0, key);
                    assert_memory_equal(block0[j], want0, sizeof(want0));
                }
            }
        }
    }
}

/* --- keys left on the stack --------------------------------------------------------------- */

/* Each call runs on a scratch stack of its own (ucontext), which is then
 * searched for the key: libcrypto's ChaCha20 leaves it there unless the
 * backend scrubs its stack. */
#define SCRATCH_STACK_BYTES (256 * 1024)
static uint8_t scratch_stack[SCRATCH_STACK_BYTES] __attribute__((aligned(16)));
static ucontext_t main_context, step_context;

static struct {
    uint8_t key[WG_KEY_LEN];
    uint8_t buf[8192 + WG_AEAD_TAG_LEN];
    size_t len;
    int open, ret, batch;
} step;

#define STEP_BATCH_MSGS 16u

static void step_run(void)
{
    if (step.batch) {
        for (unsigned i = 0; i < STEP_BATCH_MSGS; i++)
            bt.msgs[i] = (struct aead_msg){ bt.buf[i], step.len, i, 0 };
        if (step.open)
            aead_open_batch(bt.msgs, STEP_BATCH_MSGS, step.key);
        else
            aead_seal_batch(bt.msgs, STEP_BATCH_MSGS, step.key);
        for (unsigned i = 0; i < STEP_BATCH_MSGS; i++)
            step.ret |= bt.msgs[i].status;
        return;
    }
    if (step.open)
        step.ret = aead_open(step.buf, step.buf, step.len + WG_AEAD_TAG_LEN, NULL, 0, 1, step.key);
    else
        aead_seal(step.buf, step.buf, step.len, NULL, 0, 1, step.key);
}

/* Runs one call on the scratch stack; 1 if the key is found there after. */
static int key_left_by(int open, size_t len)
{
    memset(scratch_stack, 0, sizeof(scratch_stack));
    step.open = open;
    step.len = len;
    step.ret = 0;
    assert_int_equal(getcontext(&step_context), 0);
    step_context.uc_stack.ss_sp = scratch_stack;
    step_context.uc_stack.ss_size = sizeof(scratch_stack);
    step_context.uc_link = &main_context;
    makecontext(&step_context, step_run, 0);
    assert_int_equal(swapcontext(&main_context, &step_context), 0);
    assert_int_equal(step.ret, 0);
    return memmem(scratch_stack, sizeof(scratch_stack), step.key, sizeof(step.key)) != NULL;
}

/* Whether a key word lies on the scratch stack twice in a row: the way a
 * vector broadcast of it (chacha_multi's state) would have been left. */
static int key_words_left(void)
{
    for (size_t w = 0; w < WG_KEY_LEN; w += 4) {
        uint8_t twice[8];
        memcpy(twice, step.key + w, 4);
        memcpy(twice + 4, step.key + w, 4);
        if (memmem(scratch_stack, sizeof(scratch_stack), twice, sizeof(twice)))
            return 1;
    }
    return 0;
}

static void test_key_not_left_on_stack(void **state)
{
    (void)state;
    static const size_t lens[] = { 0, 64, 100, 1420, 8192 };

    randombytes_buf(step.key, sizeof(step.key));
    for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
        if (key_left_by(0, lens[i]) || key_words_left())
            fail_msg("seal of %zu bytes left the key on the stack", lens[i]);
        if (key_left_by(1, lens[i]) || key_words_left())
            fail_msg("open of %zu bytes left the key on the stack", lens[i]);
    }
}

/* Whether message i's one-time Poly1305 key (keystream block 0 of its
 * nonce) was left: whole, its s half, or the 44-bit limbs of its clamped r
 * as 64-bit words (how both the IFMA code and libsodium's Poly1305 hold
 * it). */
static int poly_key_left(uint64_t counter)
{
    uint8_t nonce[WG_AEAD_NONCE_LEN] = { 0 }, block0[WG_CHACHA20_BLOCK_LEN] = { 0 };

    for (unsigned i = 0; i < 8; i++)
        nonce[4 + i] = (uint8_t)(counter >> (8 * i));
    crypto_stream_chacha20_ietf_xor_ic(block0, block0, sizeof(block0), nonce, 0, step.key);
    uint64_t k0 = get_le64(block0) & UINT64_C(0x0ffffffc0fffffff);
    uint64_t k1 = get_le64(block0 + 8) & UINT64_C(0x0ffffffc0ffffffc);
    uint64_t limbs[3] = { k0 & ((UINT64_C(1) << 44) - 1),
                          ((k0 >> 44) | (k1 << 20)) & ((UINT64_C(1) << 44) - 1), k1 >> 24 };
    int left = memmem(scratch_stack, sizeof(scratch_stack), block0, WG_POLY1305_KEY_LEN) ||
               memmem(scratch_stack, sizeof(scratch_stack), block0 + 16, 16);
    for (unsigned i = 0; i < 3 && !left; i++)
        left = memmem(scratch_stack, sizeof(scratch_stack), &limbs[i], sizeof(limbs[i])) != NULL;
    sodium_memzero(block0, sizeof(block0));
    return left;
}

/* A batch of 16 sealed, then opened, each on the scratch stack: neither
 * the key nor any message's Poly1305 key may stay there. On every path a
 * batch can take (as test_batch_matches_single), whatever this CPU would
 * pick: a CPU without AVX-512 runs the one-message path. */
static void test_batch_key_not_left_on_stack(void **state)
{
    static const size_t lens[] = { 64, 1420 };
    static const unsigned paths[] = { AEAD_MULTI_CHACHA | AEAD_MULTI_POLY, AEAD_MULTI_CHACHA, 0 };
    (void)state;

    randombytes_buf(step.key, sizeof(step.key));
    step.batch = 1;
    for (size_t p = 0; p < sizeof(paths) / sizeof(paths[0]); p++) {
        unsigned before = aead_multi_paths(paths[p]);
        for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
            for (int open = 0; open < 2; open++) {
                if (key_left_by(open, lens[i]) || key_words_left())
                    fail_msg("batch %s of 16 x %zu bytes (multi paths %u) left the key on "
                             "the stack", open ? "open" : "seal", lens[i], paths[p]);
                for (uint64_t m = 0; m < STEP_BATCH_MSGS; m++)
                    if (poly_key_left(m))
                        fail_msg("batch %s of 16 x %zu bytes (multi paths %u) left message "
                                 "%" PRIu64 "'s Poly1305 key on the stack",
                                 open ? "open" : "seal", lens[i], paths[p], m);
            }
        }
        aead_multi_paths(before);
    }
    step.batch = 0;
}

/* --- the table ------------------------------------------------------------------------- */

struct per_backend {
    enum aead_backend backend;
    CMUnitTestFunction fn;
};

/* Selects the case's backend, then runs the test on it. */
static void on_backend(void **state)
{
    const struct per_backend *pb = *state;
    int ret = aead_set_backend(pb->backend);

    if (ret == -EOPNOTSUPP) {
        printf("%s backend: not built in\n", aead_backend_name(pb->backend));
        skip();
    }
    assert_int_equal(ret, 0);
    assert_int_equal(aead_get_backend(), pb->backend);
    pb->fn(state);
}

#define ON_BACKEND(f, b, bname) \
    { .name = #f " (" bname ")", .test_func = on_backend, .setup_func = setup, \
      .initial_state = &(struct per_backend){ b, f } }
#define ON_BOTH(f) ON_BACKEND(f, AEAD_BACKEND_SODIUM, "sodium"), \
                   ON_BACKEND(f, AEAD_BACKEND_OPENSSL, "openssl")

int main(int argc, char **argv)
{
    if (argc == 2 && strcmp(argv[1], ENV_CHILD_ARG) == 0)
        return env_child();

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_core_init_twice, setup),
        ON_BOTH(test_rfc8439_seal),
        ON_BOTH(test_rfc8439_open),
        ON_BOTH(test_counter_nonce_layout),
        ON_BOTH(test_wycheproof_chacha20poly1305),
        ON_BOTH(test_wycheproof_xchacha20poly1305),
        ON_BOTH(test_tamper_every_bit),
        ON_BOTH(test_tamper_in_place),
        ON_BOTH(test_too_short),
        ON_BOTH(test_in_place_round_trip),
        ON_BOTH(test_empty_plaintext),
        ON_BOTH(test_bad_nonce_len),
        ON_BOTH(test_length_overflow),
        ON_BOTH(test_seal_overflow_aborts),
        ON_BOTH(test_thread_state),
        ON_BOTH(test_key_not_left_on_stack),
        ON_BOTH(test_batch_matches_single),
        ON_BOTH(test_batch_open_refuses_forgeries),
        ON_BOTH(test_batch_key_not_left_on_stack),
        cmocka_unit_test_setup(test_chacha_multi, setup),
        cmocka_unit_test_setup(test_chacha_multi_rfc8439, setup),
        cmocka_unit_test_setup(test_poly1305_multi, setup),
        cmocka_unit_test_setup(test_backend_names, setup),
        cmocka_unit_test_setup(test_backend_parse, setup),
        cmocka_unit_test_setup(test_set_backend, setup),
        cmocka_unit_test_setup(test_default_backend_by_size, setup),
        cmocka_unit_test_setup(test_env_override, setup),
        cmocka_unit_test_setup(test_cross_backend, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
