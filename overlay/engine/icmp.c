/* SPDX-License-Identifier: MIT */
/* ICMP errors for local senders (see icmp.h). */
#include <errno.h>
#include <string.h>

#include "overlay/base/wire.h"
#include "overlay/engine/icmp.h"
#include "tun/offload.h"

#define IP6_HLEN          40u
#define ICMP_HLEN         8u
#define IP_TTL_ERRORS     64u
#define IP4_TOS_CONTROL   0xc0u   /* precedence "internetwork control", as routers send errors */
#define PROTO_ICMP        1u
#define PROTO_ICMPV6      58u
#define PROTO_FRAGMENT6   44u
#define IP4_OFFSET_MASK   0x1fffu
#define IP6_OFFSET_MASK   0xfff8u

#define ICMP4_DEST_UNREACH     3u
#define ICMP4_CODE_HOST        1u
#define ICMP4_CODE_FRAG_NEEDED 4u
#define ICMP4_CODE_PROHIBITED  13u
#define ICMP6_DEST_UNREACH     1u
#define ICMP6_CODE_ADDRESS     3u
#define ICMP6_CODE_PROHIBITED  1u
#define ICMP6_PACKET_TOO_BIG   2u
#define ICMP6_INFO_MIN         128u   /* ICMPv6 types below this are errors */

/* ICMPv4 types that are queries, not errors (RFC 792, 950). */
static int icmp4_is_query(uint8_t type)
{
    static const uint8_t queries[] = { 0, 8, 13, 14, 15, 16, 17, 18 };

    return memchr(queries, type, sizeof(queries)) != NULL;
}

static int ip4_answerable(const uint8_t *ip, size_t len, size_t hlen)
{
    const uint8_t *src = ip + 12, *dst = ip + 16;

    if (hlen < IPV4_HEADER_LEN || hlen > len)
        return 0;
    if (get_be16(ip + 6) & IP4_OFFSET_MASK)
        return 0;
    if (!memcmp(src, "\0\0\0\0", 4) || src[0] >= 224 || dst[0] >= 224)
        return 0;   /* unspecified, multicast, broadcast, class E */
    if (ip[9] == PROTO_ICMP && (len <= hlen || !icmp4_is_query(ip[hlen])))
        return 0;
    return 1;
}

static long build4(uint8_t *out, size_t cap, const uint8_t *ip, size_t len,
                   enum icmp_error kind, uint32_t mtu)
{
    size_t hlen = (size_t)(ip[0] & 0x0f) * 4u;

    if (!ip4_answerable(ip, len, hlen))
        return -EINVAL;
    size_t quote = len < ICMP4_ERROR_MAX - IPV4_HEADER_LEN - ICMP_HLEN
                       ? len : ICMP4_ERROR_MAX - IPV4_HEADER_LEN - ICMP_HLEN;
    size_t total = IPV4_HEADER_LEN + ICMP_HLEN + quote;
    if (total > cap)
        return -ENOSPC;
    uint8_t *icmp = out + IPV4_HEADER_LEN;

    memset(out, 0, IPV4_HEADER_LEN + ICMP_HLEN);
    out[0] = 0x45;
    out[1] = IP4_TOS_CONTROL;
    put_be16(out + 2, (uint32_t)total);
    out[8] = IP_TTL_ERRORS;
    out[9] = PROTO_ICMP;
    memcpy(out + 12, ip + 16, 4);
    memcpy(out + 16, ip + 12, 4);
    put_be16(out + 10, (uint16_t)~offload_csum_add(0, out, IPV4_HEADER_LEN));

    icmp[0] = ICMP4_DEST_UNREACH;
    icmp[1] = kind == ICMP_ERROR_TOO_BIG      ? ICMP4_CODE_FRAG_NEEDED
              : kind == ICMP_ERROR_PROHIBITED ? ICMP4_CODE_PROHIBITED
                                              : ICMP4_CODE_HOST;
    if (kind == ICMP_ERROR_TOO_BIG)
        put_be16(icmp + 6, mtu > 0xffffu ? 0xffffu : mtu);
    memcpy(icmp + ICMP_HLEN, ip, quote);
    put_be16(icmp + 2, (uint16_t)~offload_csum_add(0, icmp, ICMP_HLEN + quote));
    return (long)total;
}

static int ip6_answerable(const uint8_t *ip, size_t len, enum icmp_error kind)
{
    static const uint8_t unspecified[16];
    const uint8_t *src = ip + 8, *dst = ip + 24;
    uint8_t next = ip[6];

    if (!memcmp(src, unspecified, 16) || src[0] == 0xff)
        return 0;
    if (dst[0] == 0xff && kind != ICMP_ERROR_TOO_BIG)
        return 0;   /* RFC 4443 2.4 (e): only "too big" answers multicast */
    if (next == PROTO_FRAGMENT6 &&
        (len < IP6_HLEN + 8 || (get_be16(ip + IP6_HLEN + 2) & IP6_OFFSET_MASK)))
        return 0;
    if (next == PROTO_ICMPV6 && (len <= IP6_HLEN || ip[IP6_HLEN] < ICMP6_INFO_MIN))
        return 0;
    return 1;
}

static long build6(uint8_t *out, size_t cap, const uint8_t *ip, size_t len,
                   enum icmp_error kind, uint32_t mtu)
{
    if (len < IP6_HLEN || !ip6_answerable(ip, len, kind))
        return -EINVAL;
    size_t quote = len < ICMP6_ERROR_MAX - IP6_HLEN - ICMP_HLEN
                       ? len : ICMP6_ERROR_MAX - IP6_HLEN - ICMP_HLEN;
    size_t total = IP6_HLEN + ICMP_HLEN + quote;
    if (total > cap)
        return -ENOSPC;
    uint8_t *icmp = out + IP6_HLEN;

    memset(out, 0, IP6_HLEN + ICMP_HLEN);
    out[0] = 0x60;
    put_be16(out + 4, (uint32_t)(ICMP_HLEN + quote));
    out[6] = PROTO_ICMPV6;
    out[7] = IP_TTL_ERRORS;
    memcpy(out + 8, ip + 24, 16);
    memcpy(out + 24, ip + 8, 16);

    if (kind == ICMP_ERROR_TOO_BIG) {
        icmp[0] = ICMP6_PACKET_TOO_BIG;
        put_be32(icmp + 4, mtu);
    } else {
        icmp[0] = ICMP6_DEST_UNREACH;
        icmp[1] = kind == ICMP_ERROR_PROHIBITED ? ICMP6_CODE_PROHIBITED : ICMP6_CODE_ADDRESS;
    }
    memcpy(icmp + ICMP_HLEN, ip, quote);
    uint16_t sum = offload_csum_pseudo(out + 8, out + 24, 16, PROTO_ICMPV6,
                                       (uint32_t)(ICMP_HLEN + quote));
    put_be16(icmp + 2, (uint16_t)~offload_csum_add(sum, icmp, ICMP_HLEN + quote));
    return (long)total;
}

long icmp_error_build(uint8_t *out, size_t cap, const uint8_t *ip, size_t len,
                      enum icmp_error kind, uint32_t mtu)
{
    if (len >= IPV4_HEADER_LEN && ip[0] >> 4 == 4)
        return build4(out, cap, ip, len, kind, mtu);
    if (len >= IP6_HLEN && ip[0] >> 4 == 6)
        return build6(out, cap, ip, len, kind, mtu);
    return -EINVAL;
}
