/* SPDX-License-Identifier: MIT */
/* Tests for crypto/tai64n: the exact bytes of known times (the Unix epoch,
 * a recent second, a seconds field with every byte distinct), rounding of
 * the nanoseconds down to WG_TIMESTAMP_GRAIN_NS, and the property the
 * handshake relies on: stamps a grain or more apart compare strictly
 * greater byte-wise, stamps within one grain compare equal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "crypto/aead.h"
#include "crypto/tai64n.h"
#include "tests/unit/alloc_count.h"

#define GRAIN ((uint64_t)WG_TIMESTAMP_GRAIN_NS)
#define NSEC  WG_NSEC_PER_SEC

/* splitmix64 with a fixed seed, so that every run checks the same times. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* Encodes a time given in nanoseconds since the Unix epoch. */
static void encode_ns(uint8_t out[WG_TIMESTAMP_LEN], uint64_t t)
{
    tai64n_encode(out, t / NSEC, (uint32_t)(t % NSEC));
}

static uint32_t get_be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void test_unix_epoch(void **state)
{
    static const uint8_t want[WG_TIMESTAMP_LEN] = {
        0x40, 0, 0, 0, 0, 0, 0, 0x0a, 0, 0, 0, 0,
    };
    uint8_t got[WG_TIMESTAMP_LEN];

    (void)state;
    memset(got, 0xee, sizeof(got));
    tai64n_encode(got, 0, 0);
    assert_memory_equal(got, want, sizeof(want));
    /* Less than a grain after the epoch is still the epoch. */
    tai64n_encode(got, 0, WG_TIMESTAMP_GRAIN_NS - 1);
    assert_memory_equal(got, want, sizeof(want));
}

static void test_known_times(void **state)
{
    /* 2023-11-14 22:13:20 UTC and 123456789 ns: 7 grains (0x07000000 ns). */
    static const uint8_t want1[WG_TIMESTAMP_LEN] = {
        0x40, 0x00, 0x00, 0x00, 0x65, 0x53, 0xf1, 0x0a, 0x07, 0x00, 0x00, 0x00,
    };
    /* Every byte of the seconds distinct, so that a swapped byte shows;
     * 999999999 ns is 59 whole grains: 0x3b000000. */
    static const uint8_t want2[WG_TIMESTAMP_LEN] = {
        0x40, 0x00, 0x00, 0x01, 0x23, 0x45, 0x67, 0x93, 0x3b, 0x00, 0x00, 0x00,
    };
    /* Exactly 42 grains: kept as they are. */
    static const uint8_t want3[WG_TIMESTAMP_LEN] = {
        0x40, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x0b, 0x2a, 0x00, 0x00, 0x00,
    };
    uint8_t got[WG_TIMESTAMP_LEN];

    (void)state;
    tai64n_encode(got, UINT64_C(1700000000), UINT32_C(123456789));
    assert_memory_equal(got, want1, sizeof(want1));
    tai64n_encode(got, UINT64_C(0x0123456789), UINT32_C(999999999));
    assert_memory_equal(got, want2, sizeof(want2));
    tai64n_encode(got, 1, 42 * WG_TIMESTAMP_GRAIN_NS);
    assert_memory_equal(got, want3, sizeof(want3));
}

static void check_rounding(uint32_t nsec)
{
    uint8_t got[WG_TIMESTAMP_LEN];
    uint32_t want = nsec / WG_TIMESTAMP_GRAIN_NS * WG_TIMESTAMP_GRAIN_NS;

    tai64n_encode(got, 77, nsec);
    if (get_be32(got + 8) != want)
        fail_msg("nsec %u encoded as %u, want %u", nsec, get_be32(got + 8), want);
    assert_int_equal(get_be32(got + 8) % WG_TIMESTAMP_GRAIN_NS, 0);
}

static void test_rounding(void **state)
{
    uint64_t seed = UINT64_C(0x7a164);

    (void)state;
    /* Around every grain boundary of a second, and the last nanosecond. */
    for (uint32_t k = 0; k * GRAIN < NSEC; k++) {
        uint32_t edge = k * WG_TIMESTAMP_GRAIN_NS;

        check_rounding(edge);
        if (edge > 0)
            check_rounding(edge - 1);
        if (edge + 1 < NSEC)
            check_rounding(edge + 1);
    }
    check_rounding((uint32_t)NSEC - 1);
    for (int i = 0; i < 10000; i++)
        check_rounding((uint32_t)(rng_next(&seed) % NSEC));
}

static void expect_order(uint64_t t1, uint64_t t2, int want_sign)
{
    uint8_t a[WG_TIMESTAMP_LEN], b[WG_TIMESTAMP_LEN];
    int cmp;

    encode_ns(a, t1);
    encode_ns(b, t2);
    cmp = memcmp(a, b, sizeof(a));
    cmp = (cmp > 0) - (cmp < 0);
    if (cmp != want_sign)
        fail_msg("times %llu and %llu ns compare %d, want %d",
                 (unsigned long long)t1, (unsigned long long)t2, cmp, want_sign);
}

/* Times at least a grain apart always fall in different grains. */
static void test_strictly_increasing(void **state)
{
    static const uint64_t steps[] = { GRAIN, GRAIN + 1, 3 * GRAIN / 2, 2 * GRAIN - 1, NSEC };
    uint64_t seed = UINT64_C(0x0de5);
    uint64_t t = UINT64_C(1700000000) * NSEC + 5;

    (void)state;
    for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++)
        for (int i = 0; i < 200; i++, t += steps[s])
            expect_order(t, t + steps[s], -1);
    for (int i = 0; i < 10000; i++) {
        uint64_t d = GRAIN + rng_next(&seed) % (10 * NSEC);

        expect_order(t, t + d, -1);
        t += rng_next(&seed) % NSEC;
    }
    /* The short last grain of a second, then the next second. */
    expect_order(5 * NSEC + 59 * GRAIN, 5 * NSEC + 59 * GRAIN + GRAIN, -1);
    expect_order(5 * NSEC + NSEC - 1, 6 * NSEC, -1);
}

/* Within one grain (from its aligned start) the stamps are equal. */
static void test_equal_within_grain(void **state)
{
    uint64_t seed = UINT64_C(0x6a1);

    (void)state;
    for (int i = 0; i < 10000; i++) {
        uint64_t sec = UINT64_C(1600000000) + rng_next(&seed) % UINT64_C(400000000);
        uint64_t k = rng_next(&seed) % (NSEC / GRAIN);
        uint64_t start = sec * NSEC + k * GRAIN;
        uint64_t a = rng_next(&seed) % GRAIN, b = rng_next(&seed) % GRAIN;

        expect_order(start + a, start + b, 0);
    }
    expect_order(9 * NSEC, 9 * NSEC + GRAIN - 1, 0);
    expect_order(9 * NSEC + 59 * GRAIN, 10 * NSEC - 1, 0);
    /* One nanosecond more is a different grain. */
    expect_order(9 * NSEC + GRAIN - 1, 9 * NSEC + GRAIN, -1);
}

static void test_no_allocation(void **state)
{
    uint8_t got[WG_TIMESTAMP_LEN];
    size_t before = alloc_count();

    (void)state;
    for (uint32_t i = 0; i < 1000; i++)
        tai64n_encode(got, i, i * 999983u);
    assert_int_equal(alloc_count(), before);
}

static int group_setup(void **state)
{
    (void)state;
    return crypto_core_init();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unix_epoch),
        cmocka_unit_test(test_known_times),
        cmocka_unit_test(test_rounding),
        cmocka_unit_test(test_strictly_increasing),
        cmocka_unit_test(test_equal_within_grain),
        cmocka_unit_test(test_no_allocation),
    };

    return cmocka_run_group_tests_name("tai64n", tests, group_setup, NULL);
}
