/* SPDX-License-Identifier: MIT */
/* The sizes and byte order of the IP and UDP packets around and inside
 * the tunnel, defined once for every folder of overlay/. */
#ifndef DDPNET_WIRE_H
#define DDPNET_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IPV4_HEADER_LEN 20u     /* without options */
#define IPV6_HEADER_LEN 40u
#define UDP_HEADER_LEN  8u

/* An IP header's length (no options): IPv6's, else IPv4's. */
static inline size_t wire_ip_header_len(bool v6)
{
    return v6 ? IPV6_HEADER_LEN : IPV4_HEADER_LEN;
}

/* Network byte order, byte by byte: any host, any alignment. */
static inline uint16_t get_be16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static inline void put_be16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static inline void put_be32(uint8_t *p, uint32_t v)
{
    put_be16(p, (uint16_t)(v >> 16));
    put_be16(p + 2, (uint16_t)v);
}

#endif
