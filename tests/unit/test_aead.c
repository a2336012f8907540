/* Tests for crypto/aead: the RFC 8439 example, the Wycheproof
 * ChaCha20-Poly1305 and XChaCha20-Poly1305 suites, WireGuard's counter
 * nonce, and the rule that a failed open leaves dst untouched. */
#include <errno.h>
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
#include <sodium.h>

#include "crypto/aead.h"
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

static void run_suite(const struct suite *s)
{
    const char *path = vectors_path(s->file);
    struct json *root = json_load(path);
    const struct json *groups;
    size_t passed = 0, total = 0;

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_core_init_twice, setup),
        cmocka_unit_test_setup(test_rfc8439_seal, setup),
        cmocka_unit_test_setup(test_rfc8439_open, setup),
        cmocka_unit_test_setup(test_counter_nonce_layout, setup),
        cmocka_unit_test_setup(test_wycheproof_chacha20poly1305, setup),
        cmocka_unit_test_setup(test_wycheproof_xchacha20poly1305, setup),
        cmocka_unit_test_setup(test_tamper_every_bit, setup),
        cmocka_unit_test_setup(test_tamper_in_place, setup),
        cmocka_unit_test_setup(test_too_short, setup),
        cmocka_unit_test_setup(test_in_place_round_trip, setup),
        cmocka_unit_test_setup(test_empty_plaintext, setup),
        cmocka_unit_test_setup(test_bad_nonce_len, setup),
        cmocka_unit_test_setup(test_length_overflow, setup),
        cmocka_unit_test_setup(test_seal_overflow_aborts, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
