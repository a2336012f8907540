/* SPDX-License-Identifier: MIT */
/* Tests for crypto/x25519: the RFC 7748 vectors, the Wycheproof X25519
 * suite (an all-zero shared secret must be refused), clamping, and key
 * generation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "tests/unit/vectors.h"

#define PATTERN 0x5c

static int setup(void **state)
{
    (void)state;
    return crypto_core_init();
}

static void hexkey(uint8_t out[WG_KEY_LEN], const char *hex)
{
    hex_decode_to(out, WG_KEY_LEN, hex);
}

static int is_all(const uint8_t *p, size_t len, uint8_t v)
{
    for (size_t i = 0; i < len; i++)
        if (p[i] != v)
            return 0;
    return 1;
}

/* --- RFC 7748 ------------------------------------------------------------------- */

static void expect_shared(const char *scalar, const char *u, const char *want_hex)
{
    uint8_t k[WG_KEY_LEN], pub[WG_KEY_LEN], out[WG_KEY_LEN], want[WG_KEY_LEN];

    hexkey(k, scalar);
    hexkey(pub, u);
    hexkey(want, want_hex);
    assert_int_equal(x25519_shared(out, k, pub), 0);
    assert_memory_equal(out, want, WG_KEY_LEN);
}

/* Section 5.2: the two single scalar multiplications. */
static void test_rfc7748_vectors(void **state)
{
    (void)state;
    expect_shared("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
                  "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
                  "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552");
    expect_shared("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
                  "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
                  "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957");
}

/* Section 5.2, the iterated form: k = X25519(k, u), u = old k, from k = u = 9. */
static void test_rfc7748_iterated(void **state)
{
    (void)state;
    uint8_t k[WG_KEY_LEN] = { 9 }, u[WG_KEY_LEN] = { 9 }, r[WG_KEY_LEN], want[WG_KEY_LEN];

    for (int i = 1; i <= 1000; i++) {
        assert_int_equal(x25519_shared(r, k, u), 0);
        memcpy(u, k, WG_KEY_LEN);
        memcpy(k, r, WG_KEY_LEN);
        if (i == 1) {
            hexkey(want, "422c8e7a6227d7bca1350b3e2bb7279f7897b87bb6854b783c60e80311ae3079");
            assert_memory_equal(k, want, WG_KEY_LEN);
        }
    }
    hexkey(want, "684cf59ba83309552800ef566f2f4d3c1c3887c49360e3875f2eb94d99532c51");
    assert_memory_equal(k, want, WG_KEY_LEN);
}

/* Section 6.1: Alice and Bob. */
static void test_rfc7748_diffie_hellman(void **state)
{
    (void)state;
    uint8_t a[WG_KEY_LEN], b[WG_KEY_LEN], apub[WG_KEY_LEN], bpub[WG_KEY_LEN];
    uint8_t want[WG_KEY_LEN], got[WG_KEY_LEN], s1[WG_KEY_LEN], s2[WG_KEY_LEN];

    hexkey(a, "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a");
    hexkey(b, "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb");

    hexkey(want, "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a");
    assert_int_equal(x25519_public(apub, a), 0);
    assert_memory_equal(apub, want, WG_KEY_LEN);

    hexkey(want, "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f");
    assert_int_equal(x25519_public(bpub, b), 0);
    assert_memory_equal(bpub, want, WG_KEY_LEN);

    hexkey(want, "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742");
    assert_int_equal(x25519_shared(s1, a, bpub), 0);
    assert_int_equal(x25519_shared(s2, b, apub), 0);
    assert_memory_equal(s1, want, WG_KEY_LEN);
    assert_memory_equal(s2, want, WG_KEY_LEN);
    /* Clamping the RFC's private keys first changes nothing. */
    memcpy(got, a, WG_KEY_LEN);
    x25519_clamp(got);
    assert_int_equal(x25519_shared(s1, got, bpub), 0);
    assert_memory_equal(s1, want, WG_KEY_LEN);
}

/* --- Wycheproof ----------------------------------------------------------------- */

/* An expected all-zero secret (low-order public key) must be refused with
 * out zeroed; any other case must give exactly `shared`. */
static int tc_run(const struct json *j)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN], want[WG_KEY_LEN], out[WG_KEY_LEN];
    int ret, ok;

    hexkey(priv, json_get_str(j, "private"));
    hexkey(pub, json_get_str(j, "public"));
    hexkey(want, json_get_str(j, "shared"));
    memset(out, PATTERN, sizeof(out));
    ret = x25519_shared(out, priv, pub);
    if (is_all(want, WG_KEY_LEN, 0))
        ok = ret == -EINVAL && is_all(out, WG_KEY_LEN, 0);
    else
        ok = ret == 0 && memcmp(out, want, WG_KEY_LEN) == 0;
    if (!ok)
        fprintf(stderr, "x25519: tcId %ld failed (%s)\n", json_get_int(j, "tcId"),
                json_get_str(j, "result"));
    return ok;
}

static void test_wycheproof_x25519(void **state)
{
    (void)state;
    const char *name = "wycheproof x25519";
    const char *path = vectors_path("wycheproof/x25519_test.json");
    struct json *root = json_load(path);
    const struct json *groups;
    size_t passed = 0, total = 0, refused = 0;

    if (!root) {
        printf("%s: skipped (no %s)\n", name, path);
        fflush(stdout);
        skip();
    }
    groups = json_get(root, "testGroups");
    assert_non_null(groups);
    for (size_t g = 0; g < groups->n; g++) {
        const struct json *tests = json_get(&groups->child[g], "tests");

        assert_non_null(tests);
        for (size_t i = 0; i < tests->n; i++, total++) {
            uint8_t want[WG_KEY_LEN];

            hexkey(want, json_get_str(&tests->child[i], "shared"));
            refused += is_all(want, WG_KEY_LEN, 0);
            passed += (size_t)tc_run(&tests->child[i]);
        }
    }
    vectors_report(name, passed, total);
    assert_true(total > 0);
    assert_int_equal(total, json_get_int(root, "numberOfTests"));
    /* The suite must have exercised the refusal, not only the happy path. */
    assert_true(refused > 0);
    json_free(root);
    assert_int_equal(passed, total);
}

/* --- low order, clamping, generation ---------------------------------------------- */

/* A public key of 0 or 1 (order 1 and 4 points, in u-coordinates) gives an
 * all-zero result for every private key. */
static void test_low_order_refused(void **state)
{
    (void)state;
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN] = { 0 }, out[WG_KEY_LEN];

    x25519_generate(priv, out);
    for (uint8_t u = 0; u <= 1; u++) {
        pub[0] = u;
        memset(out, PATTERN, sizeof(out));
        assert_int_equal(x25519_shared(out, priv, pub), -EINVAL);
        assert_true(is_all(out, sizeof(out), 0));
    }
}

static void test_clamp(void **state)
{
    (void)state;
    uint8_t k[WG_KEY_LEN], want[WG_KEY_LEN];

    memset(k, 0xff, sizeof(k));
    memset(want, 0xff, sizeof(want));
    want[0] = 0xf8;
    want[WG_KEY_LEN - 1] = 0x7f;
    x25519_clamp(k);
    assert_memory_equal(k, want, WG_KEY_LEN);

    memset(k, 0, sizeof(k));
    memset(want, 0, sizeof(want));
    want[WG_KEY_LEN - 1] = 0x40;
    x25519_clamp(k);
    assert_memory_equal(k, want, WG_KEY_LEN);

    /* Idempotent. */
    x25519_clamp(k);
    assert_memory_equal(k, want, WG_KEY_LEN);
}

static void assert_clamped(const uint8_t k[WG_KEY_LEN])
{
    assert_int_equal(k[0] & 7, 0);
    assert_int_equal(k[WG_KEY_LEN - 1] & 0x80, 0);
    assert_int_equal(k[WG_KEY_LEN - 1] & 0x40, 0x40);
}

static void test_generate(void **state)
{
    (void)state;
    uint8_t a[WG_KEY_LEN], apub[WG_KEY_LEN], b[WG_KEY_LEN], bpub[WG_KEY_LEN];
    uint8_t check[WG_KEY_LEN], s1[WG_KEY_LEN], s2[WG_KEY_LEN];

    for (int i = 0; i < 64; i++) {
        x25519_generate(a, apub);
        assert_clamped(a);
        assert_int_equal(x25519_public(check, a), 0);
        assert_memory_equal(check, apub, WG_KEY_LEN);
        assert_false(is_all(apub, WG_KEY_LEN, 0));
    }

    x25519_generate(a, apub);
    x25519_generate(b, bpub);
    assert_memory_not_equal(a, b, WG_KEY_LEN);
    assert_memory_not_equal(apub, bpub, WG_KEY_LEN);
    assert_int_equal(x25519_shared(s1, a, bpub), 0);
    assert_int_equal(x25519_shared(s2, b, apub), 0);
    assert_memory_equal(s1, s2, WG_KEY_LEN);
    /* A third party shares a different secret. */
    x25519_generate(b, bpub);
    assert_int_equal(x25519_shared(s2, a, bpub), 0);
    assert_memory_not_equal(s1, s2, WG_KEY_LEN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_rfc7748_vectors, setup),
        cmocka_unit_test_setup(test_rfc7748_iterated, setup),
        cmocka_unit_test_setup(test_rfc7748_diffie_hellman, setup),
        cmocka_unit_test_setup(test_wycheproof_x25519, setup),
        cmocka_unit_test_setup(test_low_order_refused, setup),
        cmocka_unit_test_setup(test_clamp, setup),
        cmocka_unit_test_setup(test_generate, setup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
