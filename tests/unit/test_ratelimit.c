/* SPDX-License-Identifier: MIT */
/* Tests of the per-source handshake rate limiter (overlay/engine/model/ratelimit.c) on a
 * fake clock: the burst, the steady rate, sources apart, IPv6 by /64, the
 * table bound, expiry of idle sources, and no allocation per call. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>

#include "overlay/engine/model/ratelimit.h"
#include "tests/unit/alloc_count.h"

#define SEC UINT64_C(1000000000)
#define T0  (100 * SEC)

static const uint8_t *v4(uint32_t n)
{
    static uint8_t a[4];

    a[0] = (uint8_t)(n >> 24);
    a[1] = (uint8_t)(n >> 16);
    a[2] = (uint8_t)(n >> 8);
    a[3] = (uint8_t)n;
    return a;
}

static unsigned allowed_burst(struct ratelimit *rl, int family, const uint8_t *addr,
                              uint64_t now, unsigned tries)
{
    unsigned n = 0;

    for (unsigned i = 0; i < tries; i++)
        n += ratelimit_allow(rl, family, addr, now);
    return n;
}

static void test_burst_then_refused(void **state)
{
    (void)state;
    struct ratelimit rl;

    assert_int_equal(ratelimit_init(&rl, 64), 0);
    assert_int_equal(allowed_burst(&rl, AF_INET, v4(0x0a000001), T0, 100), RATELIMIT_BURST);
    assert_int_equal(rl.stats.allowed, RATELIMIT_BURST);
    assert_int_equal(rl.stats.limited, 100 - RATELIMIT_BURST);
    ratelimit_destroy(&rl);
}

static void test_steady_rate(void **state)
{
    (void)state;
    struct ratelimit rl;
    unsigned n = 0;

    assert_int_equal(ratelimit_init(&rl, 64), 0);
    /* 10 s of a packet every millisecond. */
    for (uint64_t t = 0; t < 10 * SEC; t += SEC / 1000)
        n += ratelimit_allow(&rl, AF_INET, v4(0x0a000002), T0 + t);
    assert_int_equal(n, RATELIMIT_BURST + 10 * RATELIMIT_PER_SEC - 1);
    /* One more every 1/20 s, not sooner. */
    uint64_t t = T0 + 20 * SEC;
    assert_int_equal(allowed_burst(&rl, AF_INET, v4(0x0a000002), t, 10), RATELIMIT_BURST);
    assert_false(ratelimit_allow(&rl, AF_INET, v4(0x0a000002), t + SEC / 20 - 1));
    assert_true(ratelimit_allow(&rl, AF_INET, v4(0x0a000002), t + SEC / 20));
    ratelimit_destroy(&rl);
}

static void test_sources_apart(void **state)
{
    (void)state;
    struct ratelimit rl;
    uint8_t a6[16] = { 0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 1 }, b6[16];

    assert_int_equal(ratelimit_init(&rl, 64), 0);
    assert_int_equal(allowed_burst(&rl, AF_INET, v4(1), T0, 20), RATELIMIT_BURST);
    assert_int_equal(allowed_burst(&rl, AF_INET, v4(2), T0, 20), RATELIMIT_BURST);
    /* IPv6: one /64 is one source, whatever its host part. */
    memcpy(b6, a6, 16);
    b6[15] = 0x99;
    assert_int_equal(allowed_burst(&rl, AF_INET6, a6, T0, 3), 3);
    assert_int_equal(allowed_burst(&rl, AF_INET6, b6, T0, 20), RATELIMIT_BURST - 3);
    b6[7] = 2;                                  /* another /64 */
    assert_int_equal(allowed_burst(&rl, AF_INET6, b6, T0, 20), RATELIMIT_BURST);
    /* An IPv4 address never shares an IPv6 prefix's bucket. */
    uint8_t v6_like_v4[16] = { 0, 0, 0, 7 };
    assert_int_equal(allowed_burst(&rl, AF_INET, v4(7), T0, 20), RATELIMIT_BURST);
    assert_int_equal(allowed_burst(&rl, AF_INET6, v6_like_v4, T0, 20), RATELIMIT_BURST);
    /* Neither family: refused. */
    assert_false(ratelimit_allow(&rl, AF_UNIX, v4(1), T0 + SEC));
    ratelimit_destroy(&rl);
}

static void test_table_bound(void **state)
{
    (void)state;
    struct ratelimit rl;
    enum { MAX = 64 };

    assert_int_equal(ratelimit_init(&rl, MAX), 0);
    for (uint32_t i = 0; i < MAX; i++)
        assert_true(ratelimit_allow(&rl, AF_INET, v4(0x0a000000 + i), T0));
    assert_int_equal(rl.n, MAX);
    /* Full: a new source is refused and counted; the others still work. */
    assert_false(ratelimit_allow(&rl, AF_INET, v4(0x0b000000), T0));
    assert_int_equal(rl.stats.table_full, 1);
    assert_true(ratelimit_allow(&rl, AF_INET, v4(0x0a000005), T0));
    assert_int_equal(rl.n, MAX);
    ratelimit_destroy(&rl);
}

static void test_idle_sources_forgotten(void **state)
{
    (void)state;
    struct ratelimit rl;
    enum { MAX = 64 };

    assert_int_equal(ratelimit_init(&rl, MAX), 0);
    for (uint32_t i = 0; i < MAX; i++)
        ratelimit_allow(&rl, AF_INET, v4(0x0a000000 + i), T0);
    /* One keeps sending; the rest go idle. */
    uint64_t later = T0 + 5 * SEC / 2;
    for (uint64_t t = T0; t < later; t += SEC / 10)
        ratelimit_allow(&rl, AF_INET, v4(0x0a000003), t);
    assert_true(ratelimit_allow(&rl, AF_INET, v4(0x0b000000), later));
    assert_int_equal(rl.n, 2);                  /* the busy one and the newcomer */
    /* New sources fit again, up to the bound. */
    for (uint32_t i = 1; i < MAX - 1; i++)
        assert_true(ratelimit_allow(&rl, AF_INET, v4(0x0b000000 + i), later));
    assert_false(ratelimit_allow(&rl, AF_INET, v4(0x0c000000), later));
    ratelimit_destroy(&rl);
}

static void test_no_allocation_per_call(void **state)
{
    (void)state;
    struct ratelimit rl;

    assert_int_equal(ratelimit_init(&rl, RATELIMIT_TABLE_MAX), 0);
    size_t before = alloc_count();
    /* A flood from spoofed sources, through several collections. */
    for (uint32_t i = 0; i < 50000; i++)
        ratelimit_allow(&rl, AF_INET, v4(i * 2654435761u), T0 + (uint64_t)i * (SEC / 10000));
    assert_int_equal(alloc_count(), before);
    assert_true(rl.n <= RATELIMIT_TABLE_MAX);
    assert_true(rl.stats.table_full > 0);
    ratelimit_destroy(&rl);
}

static void test_init_errors(void **state)
{
    (void)state;
    struct ratelimit rl;

    assert_int_equal(ratelimit_init(&rl, 0), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_burst_then_refused),
        cmocka_unit_test(test_steady_rate),
        cmocka_unit_test(test_sources_apart),
        cmocka_unit_test(test_table_bound),
        cmocka_unit_test(test_idle_sources_forgotten),
        cmocka_unit_test(test_no_allocation_per_call),
        cmocka_unit_test(test_init_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
