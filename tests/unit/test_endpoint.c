/* SPDX-License-Identifier: MIT */
/* Tests of overlay/base/endpoint.c's hash, which picks a send's I/O lane
 * (loop.c): one endpoint always gets one value, and endpoints that differ
 * only in high bits of a byte still spread over a few lanes (plain FNV's
 * low bits would not: they depend on the input's low bits alone). */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/base/endpoint.h"

static union endpoint v4(const char *addr, uint16_t port)
{
    union endpoint e;

    memset(&e, 0, sizeof(e));
    e.in4.sin_family = AF_INET;
    e.in4.sin_port = htons(port);
    assert_int_equal(inet_pton(AF_INET, addr, &e.in4.sin_addr), 1);
    return e;
}

static union endpoint v6(const char *addr, uint16_t port)
{
    union endpoint e;

    memset(&e, 0, sizeof(e));
    e.in6.sin6_family = AF_INET6;
    e.in6.sin6_port = htons(port);
    assert_int_equal(inet_pton(AF_INET6, addr, &e.in6.sin6_addr), 1);
    return e;
}

static void test_equal_endpoints_hash_alike(void **state)
{
    (void)state;
    union endpoint a = v4("192.0.2.1", 51820), b = v4("192.0.2.1", 51820);
    union endpoint c = v6("2001:db8::1", 51820), d = v6("2001:db8::1", 51820);

    b.in4.sin_zero[0] = 7;      /* bytes endpoint_equal does not look at */
    assert_true(endpoint_equal(&a, &b));
    assert_int_equal(endpoint_hash(&a), endpoint_hash(&b));
    assert_int_equal(endpoint_hash(&c), endpoint_hash(&d));
    union endpoint port = v4("192.0.2.1", 51821), addr = v4("192.0.2.2", 51820);
    assert_int_not_equal(endpoint_hash(&a), endpoint_hash(&port));
    assert_int_not_equal(endpoint_hash(&a), endpoint_hash(&addr));
}

/* 16 addresses 4 apart (their low two bits all 0), and 16 ports 256
 * apart: each set over 4 lanes hits at least 3 of them. */
static void test_spreads_over_few_lanes(void **state)
{
    (void)state;
    unsigned by_addr[4] = { 0 }, by_port[4] = { 0 }, hit_addr = 0, hit_port = 0;
    char text[32];

    for (unsigned k = 1; k <= 16; k++) {
        snprintf(text, sizeof(text), "10.77.0.%u", 4 * k);
        union endpoint a = v4(text, 51820), p = v4("10.77.0.1", (uint16_t)(256 * k));
        by_addr[endpoint_hash(&a) % 4]++;
        by_port[endpoint_hash(&p) % 4]++;
    }
    for (unsigned i = 0; i < 4; i++) {
        hit_addr += by_addr[i] > 0;
        hit_port += by_port[i] > 0;
    }
    assert_true(hit_addr >= 3);
    assert_true(hit_port >= 3);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_equal_endpoints_hash_alike),
        cmocka_unit_test(test_spreads_over_few_lanes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
