/* SPDX-License-Identifier: MIT */
/* Test support: a TSO read from ddp0 (see tso_read.h). */
#include <string.h>

#include <linux/virtio_net.h>
#include <netinet/in.h>

#include "tests/unit/tso_read.h"

#define IP4_HDR 20u

struct vnet_hdr tso_read(struct pkt *p, size_t payload, uint16_t gso_size)
{
    struct vnet_hdr h = { .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                          .gso_type = VIRTIO_NET_HDR_GSO_TCPV4, .hdr_len = TSO_READ_HDRS,
                          .gso_size = gso_size, .csum_start = IP4_HDR, .csum_offset = 16 };
    uint8_t *ip = p->in + OFFLOAD_VNET_HDR_LEN;
    size_t len = TSO_READ_HDRS + payload;

    memset(ip, 0, TSO_READ_HDRS);
    ip[0] = 0x45;
    ip[2] = (uint8_t)(len >> 8);
    ip[3] = (uint8_t)len;
    ip[8] = 64;
    ip[9] = IPPROTO_TCP;
    memcpy(ip + 12, (const uint8_t[]){ 10, 77, 0, 1, 10, 77, 0, 2 }, 8);
    ip[IP4_HDR + 12] = 5 << 4;   /* data offset */
    ip[IP4_HDR + 13] = 0x10;     /* ACK */
    for (size_t i = 0; i < payload; i++)
        ip[TSO_READ_HDRS + i] = (uint8_t)(i * 7 + 1);
    vnet_hdr_write(p->in, &h);
    p->len = (uint32_t)(OFFLOAD_VNET_HDR_LEN + len);
    return h;
}
