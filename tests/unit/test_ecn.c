/* SPDX-License-Identifier: MIT */
/* Tests of ECN in IP headers (tun/ecn.c): each codepoint read in IPv4 and
 * IPv6; CE marked on ECT(0), ECT(1) and CE, keeping IPv4's header
 * checksum right (checked by summing the header again) and touching no
 * other bit; a packet that is not ECN-capable, not IP, or too short left
 * as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "tun/ecn.h"

static uint16_t header_sum(const uint8_t *h, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i < len; i += 2)
        sum += (uint32_t)(h[i] << 8 | h[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* An IPv4 header with this TOS and a right checksum, then 8 bytes. */
static void ip4(uint8_t p[28], uint8_t tos)
{
    static const uint8_t h[20] = { 0x45, 0, 0, 28, 0x12, 0x34, 0x40, 0, 64, 6, 0, 0,
                                   10, 7, 0, 1, 10, 7, 0, 2 };
    uint16_t s;

    memcpy(p, h, 20);
    memset(p + 20, 0xab, 8);
    p[1] = tos;
    s = header_sum(p, 20);
    p[10] = (uint8_t)(s >> 8);
    p[11] = (uint8_t)s;
}

static void ip6(uint8_t p[48], uint8_t tclass)
{
    memset(p, 0, 48);
    p[0] = (uint8_t)(0x60 | tclass >> 4);
    p[1] = (uint8_t)(tclass << 4 | 0x0a);   /* the flow label's top nibble */
    p[2] = 0xbc;
    p[3] = 0xde;
    p[5] = 8;
    p[6] = 17;
    p[7] = 64;
}

static void test_reads_each_codepoint(void **state)
{
    uint8_t p4[28], p6[48];
    (void)state;

    for (unsigned ecn = 0; ecn < 4; ecn++) {
        ip4(p4, (uint8_t)(0xb8 | ecn));
        ip6(p6, (uint8_t)(0xb8 | ecn));
        assert_int_equal(ecn_get(p4, sizeof(p4)), ecn);
        assert_int_equal(ecn_get(p6, sizeof(p6)), ecn);
    }
    assert_int_equal(ecn_get(p4, 19), -1);
    assert_int_equal(ecn_get(p6, 39), -1);
    p4[0] = 0x55;
    assert_int_equal(ecn_get(p4, sizeof(p4)), -1);
}

static void test_marks_ect_ipv4_with_a_right_checksum(void **state)
{
    uint8_t p[28], before[28];
    (void)state;

    /* Every TOS whose ECN is not Not-ECT, so that the checksum is tried
     * across every carry. */
    for (unsigned tos = 0; tos < 256; tos++) {
        if ((tos & 3) == ECN_NOT_ECT)
            continue;
        ip4(p, (uint8_t)tos);
        memcpy(before, p, sizeof(p));
        assert_true(ecn_mark_ce(p, sizeof(p)));
        assert_int_equal(p[1], tos | ECN_CE);
        assert_int_equal(header_sum(p, 20), 0);
        p[1] = before[1];
        assert_memory_equal(p + 12, before + 12, sizeof(p) - 12);
        assert_memory_equal(p, before, 10);
    }
}

static void test_marks_ect_ipv6_touching_nothing_else(void **state)
{
    uint8_t p[48], before[48];
    (void)state;

    for (unsigned ecn = 1; ecn < 4; ecn++) {
        ip6(p, (uint8_t)(0xb8 | ecn));
        memcpy(before, p, sizeof(p));
        assert_true(ecn_mark_ce(p, sizeof(p)));
        assert_int_equal(ecn_get(p, sizeof(p)), ECN_CE);
        assert_int_equal(p[0], before[0]);
        assert_int_equal(p[1] & 0xcf, before[1] & 0xcf);
        assert_memory_equal(p + 2, before + 2, sizeof(p) - 2);
    }
}

static void test_leaves_what_is_not_ecn_capable(void **state)
{
    uint8_t p4[28], p6[48], before[48];
    (void)state;

    ip4(p4, 0xb8);
    memcpy(before, p4, sizeof(p4));
    assert_false(ecn_mark_ce(p4, sizeof(p4)));
    assert_memory_equal(p4, before, sizeof(p4));

    ip6(p6, 0xb8);
    memcpy(before, p6, sizeof(p6));
    assert_false(ecn_mark_ce(p6, sizeof(p6)));
    assert_memory_equal(p6, before, sizeof(p6));

    ip4(p4, 0xb8 | ECN_ECT0);
    memcpy(before, p4, sizeof(p4));
    assert_false(ecn_mark_ce(p4, 19));
    p4[0] = 0x35;
    assert_false(ecn_mark_ce(p4, sizeof(p4)));
    assert_int_equal(p4[1], before[1]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reads_each_codepoint),
        cmocka_unit_test(test_marks_ect_ipv4_with_a_right_checksum),
        cmocka_unit_test(test_marks_ect_ipv6_touching_nothing_else),
        cmocka_unit_test(test_leaves_what_is_not_ecn_capable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
