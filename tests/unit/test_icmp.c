/* SPDX-License-Identifier: MIT */
/* Tests of the ICMP errors ddp0 hands back (overlay/engine/icmp.c): for IPv4 and
 * IPv6, unreachable and too-big, the checksums (verified here with a
 * checksum of the test's own), the quoted header, the MTU, the addresses
 * swapped, the size limits; and the packets that must get no error. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/engine/icmp.h"

static uint8_t out[ICMP6_ERROR_MAX];

/* RFC 1071, independently of tun/offload.c: the folded sum. */
static uint32_t sum16(uint32_t sum, const uint8_t *p, size_t len)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return sum;
}

static uint32_t be16(const uint8_t *p)
{
    return (uint32_t)p[0] << 8 | p[1];
}

/* An IPv4 packet of len bytes 10.77.0.1 -> 10.77.0.9, protocol proto. */
static size_t ip4(uint8_t *p, size_t len, uint8_t proto, uint8_t flags)
{
    memset(p, 0, len);
    p[0] = 0x45;
    p[2] = (uint8_t)(len >> 8);
    p[3] = (uint8_t)len;
    p[6] = flags;
    p[8] = 64;
    p[9] = proto;
    memcpy(p + 12, (uint8_t[]){ 10, 77, 0, 1 }, 4);
    memcpy(p + 16, (uint8_t[]){ 10, 77, 0, 9 }, 4);
    for (size_t i = 20; i < len; i++)
        p[i] = (uint8_t)i;
    return len;
}

static size_t ip6(uint8_t *p, size_t len, uint8_t next)
{
    memset(p, 0, len);
    p[0] = 0x60;
    p[4] = (uint8_t)((len - 40) >> 8);
    p[5] = (uint8_t)(len - 40);
    p[6] = next;
    p[7] = 64;
    p[8] = 0xfd;
    p[23] = 1;
    p[24] = 0xfd;
    p[39] = 9;
    for (size_t i = 40; i < len; i++)
        p[i] = (uint8_t)i;
    return len;
}

static void test_ip4_unreachable(void **state)
{
    (void)state;
    uint8_t pkt[100];
    size_t len = ip4(pkt, sizeof(pkt), 17, 0);
    long n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_UNREACHABLE, 0);

    assert_int_equal(n, 20 + 8 + 100);
    assert_int_equal(out[0], 0x45);
    assert_int_equal(be16(out + 2), n);
    assert_int_equal(out[9], 1);
    assert_int_equal(sum16(0, out, 20), 0xffff);                /* header checksum */
    assert_memory_equal(out + 12, pkt + 16, 4);                /* from the destination */
    assert_memory_equal(out + 16, pkt + 12, 4);                /* to the sender */
    assert_int_equal(out[20], 3);                               /* destination unreachable */
    assert_int_equal(out[21], 1);                               /* host */
    assert_int_equal(sum16(0, out + 20, (size_t)n - 20), 0xffff);
    assert_memory_equal(out + 28, pkt, len);                    /* the whole original */
}

/* What a rule refuses (filter.h): "administratively prohibited", which
 * Linux takes as a hard error, in each family. */
static void test_prohibited(void **state)
{
    (void)state;
    uint8_t pkt[100];
    size_t len = ip4(pkt, sizeof(pkt), 6, 0);
    long n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_PROHIBITED, 0);

    assert_int_equal(n, 20 + 8 + 100);
    assert_int_equal(out[20], 3);
    assert_int_equal(out[21], 13);
    assert_int_equal(sum16(0, out + 20, (size_t)n - 20), 0xffff);
    len = ip6(pkt, sizeof(pkt), 6);
    n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_PROHIBITED, 0);
    assert_true(n > 48);
    assert_int_equal(out[40], 1);
    assert_int_equal(out[41], 1);
}

static void test_ip4_too_big_and_quote_limit(void **state)
{
    (void)state;
    static uint8_t pkt[1500];
    size_t len = ip4(pkt, sizeof(pkt), 6, 0x40);
    long n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_TOO_BIG, 1372);

    assert_int_equal(n, ICMP4_ERROR_MAX);
    assert_int_equal(out[20], 3);
    assert_int_equal(out[21], 4);                               /* fragmentation needed */
    assert_int_equal(be16(out + 26), 1372);                     /* next-hop MTU */
    assert_int_equal(sum16(0, out, 20), 0xffff);
    assert_int_equal(sum16(0, out + 20, (size_t)n - 20), 0xffff);
    assert_memory_equal(out + 28, pkt, ICMP4_ERROR_MAX - 28);
    /* Without DF too: ddp0 does not fragment, the sender's kernel does. */
    ip4(pkt, sizeof(pkt), 6, 0);
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_TOO_BIG, 1372),
                     ICMP4_ERROR_MAX);
    assert_int_equal(be16(out + 26), 1372);
}

static void test_ip4_no_error_due(void **state)
{
    (void)state;
    uint8_t pkt[64];

    /* About an ICMP error (destination unreachable). */
    ip4(pkt, sizeof(pkt), 1, 0);
    pkt[20] = 3;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    /* An echo request does get one. */
    pkt[20] = 8;
    assert_true(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                 ICMP_ERROR_UNREACHABLE, 0) > 0);
    /* A fragment other than the first. */
    ip4(pkt, sizeof(pkt), 17, 0);
    pkt[7] = 10;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    /* A multicast destination, an unspecified source. */
    ip4(pkt, sizeof(pkt), 17, 0);
    pkt[16] = 224;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    ip4(pkt, sizeof(pkt), 17, 0);
    memset(pkt + 12, 0, 4);
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    /* A header length past the packet; not IP at all; no room. */
    ip4(pkt, sizeof(pkt), 17, 0);
    pkt[0] = 0x4f;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, 40, ICMP_ERROR_UNREACHABLE, 0),
                     -EINVAL);
    pkt[0] = 0x15;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    ip4(pkt, sizeof(pkt), 17, 0);
    assert_int_equal(icmp_error_build(out, 50, pkt, sizeof(pkt), ICMP_ERROR_UNREACHABLE, 0),
                     -ENOSPC);
}

/* The ICMPv6 checksum covers the pseudo-header: source, destination, the
 * upper-layer length and the next header (58). */
static uint32_t icmp6_sum(const uint8_t *p, size_t n)
{
    uint8_t tail[8] = { 0 };
    size_t plen = n - 40;

    tail[2] = (uint8_t)(plen >> 8);
    tail[3] = (uint8_t)plen;
    tail[7] = 58;
    uint32_t s = sum16(0, p + 8, 32);
    s = sum16(s, tail, sizeof(tail));
    return sum16(s, p + 40, plen);
}

static void test_ip6_unreachable_and_too_big(void **state)
{
    (void)state;
    static uint8_t pkt[2000];
    size_t len = ip6(pkt, 120, 17);
    long n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_UNREACHABLE, 0);

    assert_int_equal(n, 40 + 8 + 120);
    assert_int_equal(out[0] >> 4, 6);
    assert_int_equal(be16(out + 4), n - 40);
    assert_int_equal(out[6], 58);
    assert_memory_equal(out + 8, pkt + 24, 16);
    assert_memory_equal(out + 24, pkt + 8, 16);
    assert_int_equal(out[40], 1);                               /* destination unreachable */
    assert_int_equal(out[41], 3);                               /* address unreachable */
    assert_int_equal(icmp6_sum(out, (size_t)n), 0xffff);
    assert_memory_equal(out + 48, pkt, len);

    len = ip6(pkt, sizeof(pkt), 6);
    n = icmp_error_build(out, sizeof(out), pkt, len, ICMP_ERROR_TOO_BIG, 1280);
    assert_int_equal(n, ICMP6_ERROR_MAX);
    assert_int_equal(out[40], 2);                               /* packet too big */
    assert_int_equal(out[41], 0);
    assert_int_equal(be16(out + 44) << 16 | be16(out + 46), 1280);
    assert_int_equal(icmp6_sum(out, (size_t)n), 0xffff);
    assert_memory_equal(out + 48, pkt, ICMP6_ERROR_MAX - 48);
}

static void test_ip6_no_error_due(void **state)
{
    (void)state;
    uint8_t pkt[100];

    ip6(pkt, sizeof(pkt), 58);
    pkt[40] = 1;                    /* an ICMPv6 error */
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    pkt[40] = 128;                  /* an echo request */
    assert_true(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                 ICMP_ERROR_UNREACHABLE, 0) > 0);
    ip6(pkt, sizeof(pkt), 44);      /* a fragment, not the first */
    pkt[43] = 8;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    ip6(pkt, sizeof(pkt), 17);      /* multicast destination: only "too big" */
    pkt[24] = 0xff;
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    assert_true(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt), ICMP_ERROR_TOO_BIG,
                                 1280) > 0);
    ip6(pkt, sizeof(pkt), 17);      /* unspecified source */
    memset(pkt + 8, 0, 16);
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, sizeof(pkt),
                                      ICMP_ERROR_UNREACHABLE, 0), -EINVAL);
    assert_int_equal(icmp_error_build(out, sizeof(out), pkt, 30, ICMP_ERROR_UNREACHABLE, 0),
                     -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ip4_unreachable),
        cmocka_unit_test(test_prohibited),
        cmocka_unit_test(test_ip4_too_big_and_quote_limit),
        cmocka_unit_test(test_ip4_no_error_due),
        cmocka_unit_test(test_ip6_unreachable_and_too_big),
        cmocka_unit_test(test_ip6_no_error_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
