/* SPDX-License-Identifier: MIT */
/* Tests of tun/offload: the vnet header, the checksum, segmentation of
 * TSO/USO super-packets and coalescing of TCP segments. Packets are built
 * here field by field and every checksum is judged by a plain byte-pair
 * implementation of RFC 1071 written in this file. The last two tests run
 * against the real kernel through a TUN in a namespace of their own (root
 * and /dev/net/tun needed; otherwise they report themselves skipped). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "tests/unit/alloc_count.h"
#include "tun/netlink.h"
#include "tun/offload.h"
#include "tun/tun.h"

#define PKT_MAX      70000u
#define MSS          1368u
#define TSO_SEGS     48u        /* a 64 KiB IPv4 packet at MSS */
#define HEADROOM     16u
#define TAILROOM     32u
#define STRIDE       (HEADROOM + 1500u + TAILROOM)
#define SLOTS        64u
#define CANARY       0xa5
#define BATCH_MAX    128u
#define TCP_OPT_TS   12u        /* NOP NOP timestamp */
#define V4_HDR       20u
#define V6_HDR       40u
#define TCP_HDR      20u
#define UDP_HDR      8u

#define F_FIN  0x01
#define F_SYN  0x02
#define F_RST  0x04
#define F_PSH  0x08
#define F_ACK  0x10
#define F_URG  0x20
#define F_ECE  0x40
#define F_CWR  0x80

/* --- independent reference: byte pairs, RFC 1071 -------------------------- */

static uint16_t ref_sum(const uint8_t *p, size_t len, uint32_t acc)
{
    for (size_t i = 0; i + 1 < len; i += 2)
        acc += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        acc += (uint32_t)p[len - 1] << 8;
    while (acc >> 16)
        acc = (acc & 0xffff) + (acc >> 16);
    return (uint16_t)acc;
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p)
{
    return (uint32_t)rd16(p) << 16 | rd16(p + 2);
}

static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void wr32(uint8_t *p, uint32_t v)
{
    wr16(p, (uint16_t)(v >> 16));
    wr16(p + 2, (uint16_t)v);
}

static size_t l3_of(const uint8_t *pkt)
{
    return (pkt[0] >> 4) == 4 ? (size_t)(pkt[0] & 15) * 4 : V6_HDR;
}

static uint8_t proto_of(const uint8_t *pkt)
{
    return (pkt[0] >> 4) == 4 ? pkt[9] : pkt[6];
}

/* The pseudo-header written out as RFC 793 / RFC 8200 draw it, then summed. */
static uint16_t ref_pseudo(const uint8_t *pkt, size_t l4_len)
{
    uint8_t ph[40] = { 0 };
    size_t n;

    if ((pkt[0] >> 4) == 4) {
        memcpy(ph, pkt + 12, 8);
        ph[9] = pkt[9];
        wr16(ph + 10, (uint16_t)l4_len);
        n = 12;
    } else {
        memcpy(ph, pkt + 8, 32);
        wr32(ph + 32, (uint32_t)l4_len);
        ph[39] = pkt[6];
        n = 40;
    }
    return ref_sum(ph, n, 0);
}

static bool ref_l4_ok(const uint8_t *pkt, size_t len)
{
    size_t l3 = l3_of(pkt);

    return ref_sum(pkt + l3, len - l3, ref_pseudo(pkt, len - l3)) == 0xffff;
}

static bool ref_ip4_ok(const uint8_t *pkt)
{
    return ref_sum(pkt, l3_of(pkt), 0) == 0xffff;
}

/* --- packets built field by field ----------------------------------------- */

enum csum_mode { CSUM_FULL, CSUM_PARTIAL };

struct spec {
    int version;
    uint8_t proto;
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    uint32_t seq, ack;
    uint8_t flags;
    uint16_t window;
    uint16_t id;
    uint8_t ttl, tos;
    bool df;
    uint32_t flow;
    size_t tcp_opt;         /* option bytes, a multiple of 4 */
    uint8_t opt_seed;       /* varies the options' content */
    size_t ip_opt;          /* IPv4 option bytes, a multiple of 4 */
    size_t payload;
    size_t pay_off;         /* payload byte k is pattern(pay_off + k) */
    enum csum_mode csum;
};

static uint8_t pattern(size_t k)
{
    return (uint8_t)(k * 7 + (k >> 8) * 13 + 1);
}

static struct spec spec_tcp(int version)
{
    struct spec s = {
        .version = version, .proto = IPPROTO_TCP,
        .src = { 10, 0, 0, 1 }, .dst = { 10, 0, 0, 2 },
        .sport = 40000, .dport = 5201, .seq = 0x10000000, .ack = 0x20000000,
        .flags = F_ACK, .window = 502, .id = 0x4242, .ttl = 64, .df = true,
        .tcp_opt = TCP_OPT_TS, .payload = MSS,
    };

    if (version == 6) {
        memset(s.src, 0, 16);
        memset(s.dst, 0, 16);
        s.src[0] = s.dst[0] = 0xfd;
        s.src[15] = 1;
        s.dst[15] = 2;
        s.flow = 0x12345;
    }
    return s;
}

static struct spec spec_udp(int version)
{
    struct spec s = spec_tcp(version);

    s.proto = IPPROTO_UDP;
    s.tcp_opt = 0;
    return s;
}

static size_t l4_hlen(const struct spec *s)
{
    return s->proto == IPPROTO_TCP ? TCP_HDR + s->tcp_opt : UDP_HDR;
}

static size_t ip_hlen(const struct spec *s)
{
    return s->version == 4 ? V4_HDR + s->ip_opt : V6_HDR;
}

static void build_ip(uint8_t *b, const struct spec *s, size_t len)
{
    if (s->version == 4) {
        b[0] = (uint8_t)(0x40 | ip_hlen(s) / 4);
        b[1] = s->tos;
        wr16(b + 2, (uint16_t)len);
        wr16(b + 4, s->id);
        wr16(b + 6, s->df ? 0x4000 : 0);
        b[8] = s->ttl;
        b[9] = s->proto;
        memcpy(b + 12, s->src, 4);
        memcpy(b + 16, s->dst, 4);
        for (size_t i = 0; i < s->ip_opt; i++)
            b[V4_HDR + i] = 1;     /* NOP options */
        wr16(b + 10, (uint16_t)~ref_sum(b, ip_hlen(s), 0));
        return;
    }
    wr32(b, 6u << 28 | (uint32_t)s->tos << 20 | s->flow);
    wr16(b + 4, (uint16_t)(len - V6_HDR));
    b[6] = s->proto;
    b[7] = s->ttl;
    memcpy(b + 8, s->src, 16);
    memcpy(b + 24, s->dst, 16);
}

static void build_l4(uint8_t *l4, const struct spec *s, size_t l4_len)
{
    wr16(l4, s->sport);
    wr16(l4 + 2, s->dport);
    if (s->proto == IPPROTO_UDP) {
        wr16(l4 + 4, (uint16_t)l4_len);
        return;
    }
    wr32(l4 + 4, s->seq);
    wr32(l4 + 8, s->ack);
    l4[12] = (uint8_t)(l4_hlen(s) / 4 << 4);
    l4[13] = s->flags;
    wr16(l4 + 14, s->window);
    for (size_t i = 0; i < s->tcp_opt; i++)
        l4[TCP_HDR + i] = (uint8_t)(i < 2 ? 1 : 0x30 + i + s->opt_seed);
}

/* Builds the packet s describes into b; returns its length. */
static size_t build(uint8_t *b, const struct spec *s)
{
    size_t l3 = ip_hlen(s), hdr = l3 + l4_hlen(s), len = hdr + s->payload;
    size_t field = l3 + (s->proto == IPPROTO_TCP ? 16 : 6);
    uint16_t pseudo;

    memset(b, 0, hdr);
    build_ip(b, s, len);
    build_l4(b + l3, s, len - l3);
    for (size_t k = 0; k < s->payload; k++)
        b[hdr + k] = pattern(s->pay_off + k);
    pseudo = ref_pseudo(b, len - l3);
    if (s->csum == CSUM_PARTIAL)
        wr16(b + field, pseudo);
    else
        wr16(b + field, (uint16_t)~ref_sum(b + l3, len - l3, pseudo));
    return len;
}

/* --- the area segments go to ---------------------------------------------- */

struct area {
    uint8_t mem[SLOTS * STRIDE];
    uint16_t lens[SLOTS];
    struct offload_area a;
};

static void area_init(struct area *ar)
{
    memset(ar->mem, CANARY, sizeof(ar->mem));
    memset(ar->lens, 0, sizeof(ar->lens));
    ar->a = (struct offload_area){ .base = ar->mem, .stride = STRIDE, .headroom = HEADROOM,
                                   .tailroom = TAILROOM, .slots = SLOTS, .lens = ar->lens };
}

static uint8_t *seg_at(struct area *ar, size_t i)
{
    return ar->mem + i * STRIDE + HEADROOM;
}

static bool all_canary(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i] != CANARY)
            return false;
    return true;
}

/* Every byte outside the nseg segments still holds the canary. */
static void assert_only_segments_written(const struct area *ar, size_t nseg)
{
    for (size_t i = 0; i < SLOTS; i++) {
        const uint8_t *slot = ar->mem + i * STRIDE;
        size_t used = i < nseg ? ar->lens[i] : 0;

        assert_true(all_canary(slot, HEADROOM));
        assert_true(all_canary(slot + HEADROOM + used, STRIDE - HEADROOM - used));
    }
}

/* --- the fixture ---------------------------------------------------------- */

struct fx {
    struct area ar;
    uint8_t pkt[PKT_MAX];
    uint8_t out[PKT_MAX];
    uint8_t bufs[BATCH_MAX][1600];
    struct offload_pkt batch[BATCH_MAX];
    size_t next[BATCH_MAX];
    struct offload_run runs[BATCH_MAX];
};

static int fx_setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));

    if (!fx)
        return -1;
    area_init(&fx->ar);
    *state = fx;
    return 0;
}

static int fx_teardown(void **state)
{
    free(*state);
    return 0;
}

static struct vnet_hdr tso_hdr(const struct spec *s, uint16_t gso_size)
{
    uint8_t type = s->proto == IPPROTO_UDP ? OFFLOAD_GSO_UDP_L4
                   : s->version == 4       ? VIRTIO_NET_HDR_GSO_TCPV4
                                           : VIRTIO_NET_HDR_GSO_TCPV6;

    return (struct vnet_hdr){
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .gso_type = type,
        .hdr_len = (uint16_t)(ip_hlen(s) + l4_hlen(s)), .gso_size = gso_size,
        .csum_start = (uint16_t)ip_hlen(s),
        .csum_offset = s->proto == IPPROTO_TCP ? 16 : 6,
    };
}

/* --- vnet header ---------------------------------------------------------- */

static void test_vnet_round_trip(void **state)
{
    struct vnet_hdr h = { .flags = 1, .gso_type = 4, .hdr_len = 0x1234, .gso_size = 1368,
                          .csum_start = 40, .csum_offset = 16 }, back;
    struct virtio_net_hdr raw;
    uint8_t buf[OFFLOAD_VNET_HDR_LEN + 1];

    (void)state;
    memset(buf, 0x77, sizeof(buf));
    vnet_hdr_write(buf, &h);
    assert_int_equal(buf[OFFLOAD_VNET_HDR_LEN], 0x77);
    memcpy(&raw, buf, sizeof(raw));     /* the kernel's view: native order */
    assert_int_equal(raw.flags, 1);
    assert_int_equal(raw.gso_type, 4);
    assert_int_equal(raw.hdr_len, 0x1234);
    assert_int_equal(raw.gso_size, 1368);
    assert_int_equal(raw.csum_start, 40);
    assert_int_equal(raw.csum_offset, 16);
    assert_int_equal(vnet_hdr_parse(buf, OFFLOAD_VNET_HDR_LEN, &back), 0);
    assert_memory_equal(&back, &h, sizeof(h));
    assert_int_equal(vnet_hdr_parse(buf, OFFLOAD_VNET_HDR_LEN - 1, &back), -EINVAL);
    assert_int_equal(vnet_hdr_parse(NULL, OFFLOAD_VNET_HDR_LEN, &back), -EINVAL);
    assert_int_equal(vnet_hdr_parse(buf, OFFLOAD_VNET_HDR_LEN, NULL), -EINVAL);
}

/* --- checksum ------------------------------------------------------------- */

static void test_csum_rfc1071_example(void **state)
{
    /* RFC 1071, 3: these bytes sum to ddf2 (big-endian words). */
    static const uint8_t b[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

    (void)state;
    assert_int_equal(offload_csum_add(0, b, sizeof(b)), 0xddf2);
    assert_int_equal(offload_csum_add(0, b, 0), 0);
    assert_int_equal(offload_csum_add(0x1234, b, 0), 0x1234);
    assert_int_equal(offload_csum_add(0, b, 1), 0x0000);
    assert_int_equal(offload_csum_add(0, b + 2, 1), 0xf200);
}

static void test_csum_matches_reference(void **state)
{
    static uint8_t buf[2048 + 8];

    (void)state;
    srand(1);
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)rand();
    for (size_t len = 0; len < 300; len++)
        for (size_t off = 0; off < 8; off++) {
            uint16_t init = (uint16_t)rand();
            assert_int_equal(offload_csum_add(init, buf + off, len), ref_sum(buf + off, len, init));
        }
    memset(buf, 0xff, sizeof(buf));     /* the largest carries */
    assert_int_equal(offload_csum_add(0xffff, buf, 2048), ref_sum(buf, 2048, 0xffff));
    assert_int_equal(offload_csum_add(0, buf, 2047), ref_sum(buf, 2047, 0));
}

static void test_csum_large_and_pieces(void **state)
{
    struct fx *fx = *state;
    uint16_t whole, pieces = 0;

    srand(2);
    for (size_t i = 0; i < 65536; i++)
        fx->pkt[i] = (uint8_t)rand();
    whole = offload_csum_add(0, fx->pkt, 65536);
    assert_int_equal(whole, ref_sum(fx->pkt, 65536, 0));
    for (size_t at = 0; at < 65536; at += 1368)
        pieces = offload_csum_add(pieces, fx->pkt + at, 65536 - at < 1368 ? 65536 - at : 1368);
    assert_int_equal(pieces, whole);
}

static void test_csum_pseudo(void **state)
{
    struct fx *fx = *state;

    (void)state;
    for (int v = 4; v <= 6; v += 2)
        for (int p = 0; p < 2; p++) {
            struct spec s = p ? spec_udp(v) : spec_tcp(v);
            size_t len = build(fx->pkt, &s), l3 = ip_hlen(&s);
            const uint8_t *src = fx->pkt + (v == 4 ? 12 : 8);
            size_t alen = v == 4 ? 4 : 16;

            assert_int_equal(offload_csum_pseudo(src, src + alen, alen, s.proto,
                                                 (uint32_t)(len - l3)),
                             ref_pseudo(fx->pkt, len - l3));
        }
    /* A 32-bit IPv6 length carries into the sum. */
    assert_int_equal(offload_csum_pseudo(fx->pkt, fx->pkt, 0, 6, 0x10002), 9);
}

/* --- parse ---------------------------------------------------------------- */

static void test_parse_valid(void **state)
{
    struct fx *fx = *state;
    struct offload_ip ip;
    struct spec s = spec_tcp(4);
    size_t len;

    s.ip_opt = 8;
    len = build(fx->pkt, &s);
    assert_int_equal(offload_parse(fx->pkt, len, &ip), 0);
    assert_int_equal(ip.version, 4);
    assert_int_equal(ip.proto, IPPROTO_TCP);
    assert_int_equal(ip.l3_len, 28);
    assert_int_equal(ip.l4_hlen, TCP_HDR + TCP_OPT_TS);
    assert_int_equal(ip.ip_len, len);
    /* WireGuard's padding after the IP length is allowed. */
    assert_int_equal(offload_parse(fx->pkt, len + 13, &ip), 0);
    assert_int_equal(ip.ip_len, len);

    s = spec_udp(6);
    len = build(fx->pkt, &s);
    assert_int_equal(offload_parse(fx->pkt, len, &ip), 0);
    assert_int_equal(ip.version, 6);
    assert_int_equal(ip.proto, IPPROTO_UDP);
    assert_int_equal(ip.l3_len, V6_HDR);
    assert_int_equal(ip.l4_hlen, UDP_HDR);
    assert_int_equal(ip.ip_len, len);
}

static int parse_edited(struct fx *fx, int version, uint8_t proto, size_t at, uint8_t v,
                        size_t cut)
{
    struct spec s = proto == IPPROTO_TCP ? spec_tcp(version) : spec_udp(version);
    struct offload_ip ip;
    size_t len = build(fx->pkt, &s);

    if (at < len)
        fx->pkt[at] = v;
    return offload_parse(fx->pkt, len - cut, &ip);
}

/* One connection, one flow value, whatever its segment carries; another
 * port, address or protocol, another value (for these inputs); the low
 * bits, which pick a lane, spread; what is not IP is 0. */
static void test_flow_hash(void **state)
{
    struct fx *fx = *state;
    static uint8_t other[OFFLOAD_MAX_IP_LEN];
    unsigned low[4] = { 0 };

    for (int version = 4; version <= 6; version += 2) {
        struct spec s = spec_tcp(version);
        size_t len = build(fx->pkt, &s);
        uint32_t h = offload_flow_hash(fx->pkt, len);

        s.seq += 1000;
        s.payload = 7;
        s.id++;
        assert_int_equal(offload_flow_hash(other, build(other, &s)), h);
        s = spec_tcp(version);
        s.sport++;
        assert_int_not_equal(offload_flow_hash(other, build(other, &s)), h);
        s = spec_tcp(version);
        s.dport++;
        assert_int_not_equal(offload_flow_hash(other, build(other, &s)), h);
        s = spec_tcp(version);
        s.dst[version == 4 ? 3 : 15] ^= 1;
        assert_int_not_equal(offload_flow_hash(other, build(other, &s)), h);
        s = spec_udp(version);
        assert_int_not_equal(offload_flow_hash(other, build(other, &s)), h);
    }
    for (uint16_t port = 40000; port < 40064; port++) {
        struct spec s = spec_tcp(4);
        s.sport = port;
        low[offload_flow_hash(fx->pkt, build(fx->pkt, &s)) % 4]++;
    }
    for (unsigned i = 0; i < 4; i++)
        assert_true(low[i] >= 6);   /* 16 each if even; no lane left out */
    memset(other, 0, 256);
    assert_int_equal(offload_flow_hash(other, 256), 0);
    assert_int_equal(offload_flow_hash(NULL, 40), 0);
    assert_int_equal(offload_flow_hash(fx->pkt, 3), 0);
}

static void test_parse_rejects(void **state)
{
    struct fx *fx = *state;
    struct offload_ip ip;
    const size_t none = SIZE_MAX;

    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, none, 0, 0), 0);
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 0, 0x55, 0), -EINVAL);  /* version 5 */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 0, 0x44, 0), -EINVAL);  /* IHL 4 */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 2, 0xff, 0), -EINVAL);  /* tot > len */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 6, 0x20, 0), -EINVAL);  /* MF */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 7, 0x01, 0), -EINVAL);  /* offset */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 9, 1, 0), -EINVAL);     /* ICMP */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_TCP, 32, 0x40, 0), -EINVAL); /* doff 4 */
    assert_int_equal(parse_edited(fx, 6, IPPROTO_TCP, 6, 0, 0), -EINVAL);     /* hop-by-hop */
    assert_int_equal(parse_edited(fx, 6, IPPROTO_TCP, 4, 0xff, 0), -EINVAL);  /* plen > len */
    assert_int_equal(parse_edited(fx, 6, IPPROTO_UDP, none, 0, 1), -EINVAL);  /* plen > len */
    assert_int_equal(parse_edited(fx, 4, IPPROTO_UDP, none, 0, 0), 0);
    /* tot_len shorter than the IHL, and headers cut by the IP length */
    build(fx->pkt, &(struct spec){ .version = 4, .proto = IPPROTO_UDP });
    wr16(fx->pkt + 2, 16);
    assert_int_equal(offload_parse(fx->pkt, 28, &ip), -EINVAL);
    wr16(fx->pkt + 2, 27);
    assert_int_equal(offload_parse(fx->pkt, 28, &ip), -EINVAL);
    wr16(fx->pkt + 2, 28);
    assert_int_equal(offload_parse(fx->pkt, 28, &ip), 0);
    assert_int_equal(offload_parse(fx->pkt, 19, &ip), -EINVAL);
    wr16(fx->pkt + 2, 39);  /* TCP header cut: 20 + 19 */
    fx->pkt[9] = IPPROTO_TCP;
    assert_int_equal(offload_parse(fx->pkt, 60, &ip), -EINVAL);
    assert_int_equal(offload_parse(fx->pkt, 39, &ip), -EINVAL);
    assert_int_equal(offload_parse(fx->pkt, 0, &ip), -EINVAL);
    assert_int_equal(offload_parse(fx->pkt, 39, NULL), -EINVAL);
    assert_int_equal(offload_parse(NULL, 39, &ip), -EINVAL);
    build(fx->pkt, &(struct spec){ .version = 6, .proto = IPPROTO_UDP });
    assert_int_equal(offload_parse(fx->pkt, 39, &ip), -EINVAL);
    /* a data offset reaching past the IP length */
    struct spec t = spec_tcp(4);
    t.payload = 28;     /* 20 + 60: exactly room for a 60-byte TCP header */
    size_t len = build(fx->pkt, &t);
    assert_int_equal(offload_parse(fx->pkt, len, &ip), 0);
    fx->pkt[V4_HDR + 12] = 0xf0;
    assert_int_equal(offload_parse(fx->pkt, len, &ip), 0);
    wr16(fx->pkt + 2, (uint16_t)(len - 1));
    assert_int_equal(offload_parse(fx->pkt, len, &ip), -EINVAL);
}

/* --- segmentation --------------------------------------------------------- */

/* offload_segment, checked against offload_segment_count first: the same
 * result, the same last segment's length, and nothing written by the
 * count (the data path counts a read on the loop and cuts it on a
 * worker: the counters it takes must be the segments it sends). */
static int segment_counted(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                           const struct offload_area *a)
{
    /* Static: the callers count allocations. */
    static uint8_t mem_before[256 * 1024];
    static uint16_t lens_before[512];
    size_t last = SIZE_MAX, bytes = 0;
    bool snap = a && a->base && a->lens;

    if (snap) {
        bytes = a->slots * a->stride;
        assert_true(bytes <= sizeof(mem_before) && a->slots <= 512);
        memcpy(mem_before, a->base, bytes);
        memcpy(lens_before, a->lens, a->slots * sizeof(uint16_t));
    }
    int counted = offload_segment_count(h, pkt, len, a, &last);
    if (snap) {
        assert_memory_equal(mem_before, a->base, bytes);
        assert_memory_equal(lens_before, a->lens, a->slots * sizeof(uint16_t));
    }
    assert_int_equal(offload_segment_count(h, pkt, len, a, NULL), counted);
    int n = offload_segment(h, pkt, len, a);
    assert_int_equal(n, counted);
    if (n > 0)
        assert_int_equal(a->lens[n - 1], last);
    else
        assert_int_equal(last, SIZE_MAX);
    return n;
}

/* Checks segment i of a TSO/USO packet built from s against what the
 * kernel would have sent. */
static void check_segment(const uint8_t *seg, size_t seg_len, const struct spec *s, size_t i,
                          size_t nseg, size_t gso)
{
    size_t l3 = ip_hlen(s), hdr = l3 + l4_hlen(s), plen = seg_len - hdr;
    const uint8_t *l4 = seg + l3;

    assert_int_equal(seg[0] >> 4, s->version);
    assert_true(ref_l4_ok(seg, seg_len));
    if (s->version == 4) {
        assert_int_equal(rd16(seg + 2), seg_len);
        assert_int_equal(rd16(seg + 4), (uint16_t)(s->id + i));
        assert_int_equal(seg[8], s->ttl);
        assert_true(ref_ip4_ok(seg));
        assert_memory_equal(seg + 12, s->src, 4);
    } else {
        assert_int_equal(rd16(seg + 4), seg_len - V6_HDR);
        assert_int_equal(rd32(seg) & 0xfffff, s->flow);
        assert_memory_equal(seg + 8, s->src, 16);
    }
    assert_int_equal(plen, i + 1 < nseg ? gso : s->payload - (nseg - 1) * gso);
    for (size_t k = 0; k < plen; k++)
        if (seg[hdr + k] != pattern(s->pay_off + i * gso + k))
            fail_msg("segment %zu payload byte %zu", i, k);
    if (s->proto == IPPROTO_UDP) {
        assert_int_equal(rd16(l4 + 4), seg_len - l3);
        assert_int_not_equal(rd16(l4 + 6), 0);
        return;
    }
    uint8_t want = s->flags;
    if (i + 1 < nseg)
        want &= (uint8_t)~(F_FIN | F_PSH);
    if (i > 0)
        want &= (uint8_t)~F_CWR;
    assert_int_equal(l4[13], want);
    assert_int_equal(rd32(l4 + 4), (uint32_t)(s->seq + i * gso));
    assert_int_equal(rd32(l4 + 8), s->ack);
    assert_int_equal(rd16(l4 + 14), s->window);
    assert_int_equal(rd16(l4), s->sport);
    assert_int_equal(rd16(l4 + 2), s->dport);
}

static void segment_and_check(struct fx *fx, const struct spec *s, uint16_t gso,
                              size_t want_segs)
{
    size_t len = build(fx->pkt, s);
    struct vnet_hdr h = tso_hdr(s, gso);
    size_t allocs = alloc_count();
    int n;

    area_init(&fx->ar);
    n = segment_counted(&h, fx->pkt, len, &fx->ar.a);
    assert_int_equal(alloc_count(), allocs);
    assert_int_equal(n, want_segs);
    for (int i = 0; i < n; i++)
        check_segment(seg_at(&fx->ar, (size_t)i), fx->ar.lens[i], s, (size_t)i, (size_t)n, gso);
    assert_only_segments_written(&fx->ar, (size_t)n);
}

static void test_segment_tso4_64k(void **state)
{
    struct spec s = spec_tcp(4);

    s.payload = 65535 - V4_HDR - TCP_HDR - TCP_OPT_TS;  /* 47 x 1368 + 1187 */
    s.flags = F_ACK | F_PSH | F_FIN | F_CWR | F_ECE;
    s.csum = CSUM_PARTIAL;
    segment_and_check(*state, &s, MSS, TSO_SEGS);
}

static void test_segment_tso6(void **state)
{
    struct spec s = spec_tcp(6);

    s.payload = 20000;
    s.flags = F_ACK | F_PSH;
    s.csum = CSUM_PARTIAL;
    s.seq = 0xfffff000;     /* the sequence number wraps */
    segment_and_check(*state, &s, MSS, 15);
    s.payload = 65535 - TCP_HDR;    /* the largest IPv6 payload length */
    s.tcp_opt = 0;
    segment_and_check(*state, &s, 1440, 46);
}

static void test_segment_uso(void **state)
{
    for (int v = 4; v <= 6; v += 2) {
        struct spec s = spec_udp(v);

        s.payload = 10000;
        s.csum = CSUM_PARTIAL;
        segment_and_check(*state, &s, 1400, 8);
        s.payload = 1400;
        segment_and_check(*state, &s, 1400, 1);
    }
}

static void test_segment_tso_ecn_and_no_csum_flag(void **state)
{
    struct fx *fx = *state;
    struct spec s = spec_tcp(4);
    size_t len;
    struct vnet_hdr h = tso_hdr(&s, 1000);

    s.payload = 3000;
    s.flags = F_ACK | F_CWR;
    len = build(fx->pkt, &s);
    h.gso_type |= VIRTIO_NET_HDR_GSO_ECN;
    area_init(&fx->ar);
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 3);
    for (size_t i = 0; i < 3; i++)
        check_segment(seg_at(&fx->ar, i), fx->ar.lens[i], &s, i, 3, 1000);
    /* Without NEEDS_CSUM and with hdr_len 0 or the kernel's linear length:
     * the checksums are computed afresh all the same. */
    for (int k = 0; k < 3; k++) {
        h.flags = k == 0 ? 0 : VIRTIO_NET_HDR_F_NEEDS_CSUM;
        h.hdr_len = k == 1 ? 0 : k == 2 ? (uint16_t)len : 52;
        area_init(&fx->ar);
        assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 3);
        for (size_t i = 0; i < 3; i++)
            check_segment(seg_at(&fx->ar, i), fx->ar.lens[i], &s, i, 3, 1000);
    }
}

/* offload_fit_tcp: TCP, lone or super, cut to a narrower path; nothing else. */
static void test_fit_tcp(void **state)
{
    struct fx *fx = *state;

    for (int v = 4; v <= 6; v += 2) {
        struct spec s = spec_tcp(v);
        size_t hdrs = ip_hlen(&s) + l4_hlen(&s), mtu = 1220, len;
        struct vnet_hdr h, was;

        /* A lone packet of 1400 payload bytes: two segments of the path's size. */
        s.payload = 1400;
        s.flags = F_ACK | F_PSH;
        len = build(fx->pkt, &s);
        h = (struct vnet_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_NONE, .hdr_len = 66 };
        assert_true(offload_fit_tcp(&h, fx->pkt, len, mtu));
        assert_int_equal(h.gso_type, v == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6);
        assert_int_equal(h.gso_size, mtu - hdrs);
        assert_int_equal(h.hdr_len, 0);
        area_init(&fx->ar);
        assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 2);
        for (size_t i = 0; i < 2; i++) {
            assert_true(fx->ar.lens[i] <= mtu);
            check_segment(seg_at(&fx->ar, i), fx->ar.lens[i], &s, i, 2, h.gso_size);
        }
        /* The kernel's partial checksum request is kept where it belongs... */
        h = (struct vnet_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
                               .csum_start = (uint16_t)ip_hlen(&s), .csum_offset = 16 };
        assert_true(offload_fit_tcp(&h, fx->pkt, len, mtu));
        assert_int_equal(h.flags, VIRTIO_NET_HDR_F_NEEDS_CSUM);
        /* ...and dropped elsewhere (GSO computes it afresh). */
        h = (struct vnet_hdr){ .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM, .csum_start = 3,
                               .csum_offset = 16 };
        assert_true(offload_fit_tcp(&h, fx->pkt, len, mtu));
        assert_int_equal(h.flags, 0);
        area_init(&fx->ar);
        assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 2);

        /* A lone packet that fits, or a path that cannot hold the headers: unchanged. */
        h = was = (struct vnet_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_NONE };
        assert_false(offload_fit_tcp(&h, fx->pkt, len, len));
        assert_false(offload_fit_tcp(&h, fx->pkt, len, hdrs));
        assert_memory_equal(&h, &was, sizeof(h));

        /* A super-packet: its gso_size shrinks to the path, never grows. */
        s.payload = 5000;
        len = build(fx->pkt, &s);
        h = tso_hdr(&s, MSS);
        assert_true(offload_fit_tcp(&h, fx->pkt, len, mtu));
        assert_int_equal(h.gso_size, mtu - hdrs);
        was = h;
        assert_false(offload_fit_tcp(&h, fx->pkt, len, 1420));
        assert_memory_equal(&h, &was, sizeof(h));

        /* UDP keeps its datagrams, lone or not. */
        struct spec u = spec_udp(v);
        u.payload = 1400;
        len = build(fx->pkt, &u);
        h = was = (struct vnet_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_NONE };
        assert_false(offload_fit_tcp(&h, fx->pkt, len, mtu));
        u.payload = 5000;
        len = build(fx->pkt, &u);
        h = was = tso_hdr(&u, 1400);
        assert_false(offload_fit_tcp(&h, fx->pkt, len, mtu));
        assert_memory_equal(&h, &was, sizeof(h));

        /* Not IP at all. */
        memset(fx->pkt, 0, 1500);
        h = was = (struct vnet_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_NONE };
        assert_false(offload_fit_tcp(&h, fx->pkt, 1500, mtu));
        assert_memory_equal(&h, &was, sizeof(h));
    }
}

static void test_segment_needs_csum_only(void **state)
{
    struct fx *fx = *state;

    for (int v = 4; v <= 6; v += 2)
        for (int p = 0; p < 2; p++) {
            struct spec s = p ? spec_udp(v) : spec_tcp(v);
            size_t len;
            struct vnet_hdr h = tso_hdr(&s, 0);

            s.payload = 999;
            s.csum = CSUM_PARTIAL;
            len = build(fx->pkt, &s);
            h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
            area_init(&fx->ar);
            assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 1);
            assert_int_equal(fx->ar.lens[0], len);
            assert_false(ref_l4_ok(fx->pkt, len));
            assert_true(ref_l4_ok(seg_at(&fx->ar, 0), len));
            /* only the checksum changed */
            size_t field = h.csum_start + h.csum_offset;
            assert_memory_equal(seg_at(&fx->ar, 0), fx->pkt, field);
            assert_memory_equal(seg_at(&fx->ar, 0) + field + 2, fx->pkt + field + 2,
                                len - field - 2);
            assert_only_segments_written(&fx->ar, 1);
        }
}

/* A UDP checksum that comes out 0 is sent as 0xffff (RFC 768). */
static void test_segment_udp_zero_checksum(void **state)
{
    struct fx *fx = *state;
    struct spec s = spec_udp(4);
    struct vnet_hdr h = tso_hdr(&s, 0);
    size_t len;
    uint16_t sum;

    s.payload = 2;
    s.csum = CSUM_PARTIAL;
    len = build(fx->pkt, &s);
    wr16(fx->pkt + len - 2, 0);
    sum = ref_sum(fx->pkt + V4_HDR, len - V4_HDR, 0);
    wr16(fx->pkt + len - 2, (uint16_t)~sum);     /* now the data sums to 0xffff */
    h.gso_type = VIRTIO_NET_HDR_GSO_NONE;
    area_init(&fx->ar);
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 1);
    assert_int_equal(rd16(seg_at(&fx->ar, 0) + V4_HDR + 6), 0xffff);
    assert_true(ref_l4_ok(seg_at(&fx->ar, 0), len));
    /* The same through USO. */
    h = tso_hdr(&s, 100);
    area_init(&fx->ar);
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 1);
    assert_int_equal(rd16(seg_at(&fx->ar, 0) + V4_HDR + 6), 0xffff);
}

static void test_segment_plain_copy(void **state)
{
    struct fx *fx = *state;
    struct vnet_hdr h = { 0 };

    for (size_t i = 0; i < 1500; i++)
        fx->pkt[i] = (uint8_t)(i * 31);     /* not even IP */
    area_init(&fx->ar);
    assert_int_equal(segment_counted(&h, fx->pkt, 1500, &fx->ar.a), 1);
    assert_int_equal(fx->ar.lens[0], 1500);
    assert_memory_equal(seg_at(&fx->ar, 0), fx->pkt, 1500);
    assert_only_segments_written(&fx->ar, 1);
}

static void test_segment_exact_fit(void **state)
{
    struct fx *fx = *state;
    struct spec s = spec_tcp(4);
    struct vnet_hdr h = tso_hdr(&s, MSS);
    size_t len, seg;

    s.payload = 3 * MSS;
    len = build(fx->pkt, &s);
    seg = len - 2 * MSS;
    area_init(&fx->ar);
    fx->ar.a.stride = HEADROOM + seg + TAILROOM;
    fx->ar.a.slots = 3;
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), 3);
    for (size_t i = 0; i < 3; i++)
        check_segment(fx->ar.mem + i * fx->ar.a.stride + HEADROOM, fx->ar.lens[i], &s, i, 3,
                      MSS);
    assert_true(all_canary(fx->ar.mem + 3 * fx->ar.a.stride, 64));
    area_init(&fx->ar);
    fx->ar.a.stride = HEADROOM + seg + TAILROOM - 1;
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), -EMSGSIZE);
    fx->ar.a.stride = STRIDE;
    fx->ar.a.slots = 2;
    assert_int_equal(segment_counted(&h, fx->pkt, len, &fx->ar.a), -EINVAL);
    assert_only_segments_written(&fx->ar, 0);
}

/* Builds a valid TSO4 packet of 3 segments, lets edit() break it, and
 * returns what offload_segment says; nothing may be written on failure. */
static int segment_edited(struct fx *fx, void (*edit)(uint8_t *pkt, size_t *len,
                                                      struct vnet_hdr *h,
                                                      struct offload_area *a))
{
    struct spec s = spec_tcp(4);
    struct vnet_hdr h;
    size_t len;
    int ret;

    s.payload = 3 * MSS - 5;
    s.csum = CSUM_PARTIAL;
    len = build(fx->pkt, &s);
    h = tso_hdr(&s, MSS);
    area_init(&fx->ar);
    edit(fx->pkt, &len, &h, &fx->ar.a);
    ret = segment_counted(&h, fx->pkt, len, &fx->ar.a);
    if (ret < 0)
        assert_only_segments_written(&fx->ar, 0);
    return ret;
}

static void ed_none(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h, (void)a;
}

static void ed_len0(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)h, (void)a;
    *len = 0;
}

static void ed_gso_udp(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_type = VIRTIO_NET_HDR_GSO_UDP;   /* UFO: not supported */
}

static void ed_gso_2(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_type = 2;
}

static void ed_gso_ecn_only(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_type = VIRTIO_NET_HDR_GSO_ECN;
}

static void ed_version(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)len, (void)h, (void)a;
    p[0] = 0x55;
}

static void ed_tot_short(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)h, (void)a;
    wr16(p + 2, (uint16_t)(*len - 1));  /* IP length is not len */
}

static void ed_tcpv6(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_type = VIRTIO_NET_HDR_GSO_TCPV6;
}

static void ed_uso_on_tcp(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_type = OFFLOAD_GSO_UDP_L4;
    h->csum_offset = 6;
}

static void ed_proto_udp(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)len, (void)h, (void)a;
    p[9] = IPPROTO_UDP;     /* TCPV4 over UDP */
}

static void ed_no_payload(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)h, (void)a;
    *len = V4_HDR + TCP_HDR + TCP_OPT_TS;
    wr16(p + 2, (uint16_t)*len);
}

static void ed_gso_size0(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_size = 0;
}

static void ed_hdr_len_big(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)a;
    h->hdr_len = (uint16_t)(*len + 1);
}

static void ed_hdr_len_short(uint8_t *p, size_t *len, struct vnet_hdr *h,
                             struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->hdr_len = V4_HDR + TCP_HDR;  /* misses the options */
}

static void ed_csum_start(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->csum_start = 24;
}

static void ed_csum_offset(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->csum_offset = 6;
}

static void ed_slots(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->slots = 2;
}

static void ed_slots0(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->slots = 0;
}

static void ed_no_base(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->base = NULL;
}

static void ed_no_lens(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->lens = NULL;
}

static void ed_tiny_gso(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)a;
    h->gso_size = 1;    /* 4099 segments */
}

static void ed_headroom(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->headroom = STRIDE + 1;
}

static void ed_tailroom(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->tailroom = STRIDE - HEADROOM - 100;
}

static void ed_stride(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)len, (void)h;
    a->stride = 100;
}

static void ed_plain_csum_start(uint8_t *p, size_t *len, struct vnet_hdr *h,
                                struct offload_area *a)
{
    (void)p, (void)a;
    h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h->csum_start = (uint16_t)(*len + 1);
    h->csum_offset = 0;
}

static void ed_plain_csum_field(uint8_t *p, size_t *len, struct vnet_hdr *h,
                                struct offload_area *a)
{
    (void)p, (void)a;
    h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h->csum_start = V4_HDR;
    h->csum_offset = (uint16_t)(*len - V4_HDR - 1);     /* one byte short */
}

static void ed_plain_csum_odd(uint8_t *p, size_t *len, struct vnet_hdr *h,
                              struct offload_area *a)
{
    (void)p, (void)a;
    *len = 1000;
    h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h->csum_offset = 15;
}

static void ed_plain_big(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p;
    h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h->flags = 0;
    *len = 65536;
    a->stride = 70000;
    a->headroom = 0;
    a->tailroom = 0;
    a->slots = 1;
}

static void ed_plain_ok(uint8_t *p, size_t *len, struct vnet_hdr *h, struct offload_area *a)
{
    (void)p, (void)a;
    *len = 1000;
    h->gso_type = VIRTIO_NET_HDR_GSO_NONE;
    h->csum_offset = (uint16_t)(*len - V4_HDR - 2);  /* the last two bytes */
}

static void test_segment_rejects(void **state)
{
    struct fx *fx = *state;
    struct vnet_hdr h = { 0 };

    assert_int_equal(segment_edited(fx, ed_none), 3);
    assert_int_equal(segment_edited(fx, ed_plain_ok), 1);
    assert_int_equal(segment_edited(fx, ed_len0), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_gso_udp), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_gso_2), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_gso_ecn_only), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_version), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_tot_short), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_tcpv6), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_uso_on_tcp), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_proto_udp), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_no_payload), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_gso_size0), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_hdr_len_big), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_hdr_len_short), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_csum_start), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_csum_offset), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_slots), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_slots0), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_no_base), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_no_lens), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_tiny_gso), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_plain_csum_start), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_plain_csum_field), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_plain_csum_odd), -EINVAL);
    assert_int_equal(segment_edited(fx, ed_headroom), -EMSGSIZE);
    assert_int_equal(segment_edited(fx, ed_tailroom), -EMSGSIZE);
    assert_int_equal(segment_edited(fx, ed_stride), -EMSGSIZE);
    assert_int_equal(segment_edited(fx, ed_plain_big), -EMSGSIZE);
    assert_int_equal(segment_counted(NULL, fx->pkt, 100, &fx->ar.a), -EINVAL);
    assert_int_equal(segment_counted(&h, NULL, 100, &fx->ar.a), -EINVAL);
    assert_int_equal(segment_counted(&h, fx->pkt, 100, NULL), -EINVAL);
}

/* --- coalescing ----------------------------------------------------------- */

/* Appends the packet s describes to the batch, with pad zero bytes after
 * it (WireGuard's padding); returns its index. */
static size_t batch_add(struct fx *fx, size_t *n, const struct spec *s, size_t pad)
{
    size_t len = build(fx->bufs[*n], s);

    memset(fx->bufs[*n] + len, 0, pad);
    fx->batch[*n] = (struct offload_pkt){ .data = fx->bufs[*n], .len = len + pad };
    return (*n)++;
}

/* Segment k of a flow: payload of MSS at seq base + k * MSS. */
static struct spec flow_seg(int version, uint16_t sport, size_t k)
{
    struct spec s = spec_tcp(version);

    s.sport = sport;
    s.seq += (uint32_t)(k * MSS);
    s.pay_off = k * MSS;
    return s;
}

static void assert_run(const struct fx *fx, const struct offload_run *r, const size_t *members,
                       size_t count)
{
    size_t i = r->first;

    assert_int_equal(r->count, count);
    for (size_t k = 0; k < count; k++, i = fx->next[i]) {
        assert_true(i != OFFLOAD_END);
        assert_int_equal(i, members[k]);
    }
    assert_true(i == OFFLOAD_END);
    assert_int_equal(r->last, members[count - 1]);
}

/* The run flattened: vnet header into *h, IP packet into fx->out; its length. */
static size_t run_flatten(struct fx *fx, const struct offload_run *r, struct vnet_hdr *h)
{
    long n = offload_run_copy(fx->batch, fx->next, r, fx->out, sizeof(fx->out));

    assert_true(n >= (long)OFFLOAD_VNET_HDR_LEN);
    assert_int_equal(vnet_hdr_parse(fx->out, (size_t)n, h), 0);
    memmove(fx->out, fx->out + OFFLOAD_VNET_HDR_LEN, (size_t)n - OFFLOAD_VNET_HDR_LEN);
    assert_int_equal((size_t)n - OFFLOAD_VNET_HDR_LEN, r->len);
    return r->len;
}

/* A merged run reads back as the super-packet the kernel would have sent:
 * checksum partial, headers of the first segment, PSH of the last. */
static void check_merged(struct fx *fx, const struct offload_run *r, const struct spec *first,
                         size_t payload, uint8_t flags)
{
    struct spec whole = *first;
    struct vnet_hdr h, want;
    size_t len;
    static uint8_t ref[PKT_MAX];

    whole.payload = payload;
    whole.flags = flags;
    whole.csum = CSUM_PARTIAL;
    len = build(ref, &whole);
    assert_int_equal(run_flatten(fx, r, &h), len);
    assert_memory_equal(fx->out, ref, len);
    want = tso_hdr(first, (uint16_t)first->payload);
    assert_memory_equal(&h, &want, sizeof(h));
    assert_memory_equal(&r->vnet, &want, sizeof(want));
    assert_int_equal(r->hdr_len, want.hdr_len);
}

static void check_single(struct fx *fx, const struct offload_run *r, const struct spec *s)
{
    static uint8_t ref[PKT_MAX];
    struct vnet_hdr h, zero = { 0 };
    size_t len = build(ref, s);

    assert_int_equal(r->count, 1);
    assert_int_equal(run_flatten(fx, r, &h), len);
    assert_memory_equal(&h, &zero, sizeof(h));
    assert_memory_equal(fx->out, ref, len);
}

static void test_coalesce_round_trip(void **state)
{
    struct fx *fx = *state;

    for (int v = 4; v <= 6; v += 2) {
        struct spec s = spec_tcp(v);
        size_t len, n = 0, allocs;
        struct vnet_hdr h;
        int segs, runs;

        s.payload = 65535 - (v == 4 ? V4_HDR : V6_HDR) - TCP_HDR - TCP_OPT_TS;
        s.flags = F_ACK | F_PSH;
        s.csum = CSUM_PARTIAL;
        len = build(fx->pkt, &s);
        h = tso_hdr(&s, MSS);
        area_init(&fx->ar);
        segs = segment_counted(&h, fx->pkt, len, &fx->ar.a);
        assert_int_equal(segs, TSO_SEGS);
        for (int i = 0; i < segs; i++, n++) {      /* padded, in place in the area */
            uint8_t *seg = seg_at(&fx->ar, (size_t)i);
            size_t pad = (16 - fx->ar.lens[i] % 16) % 16;
            memset(seg + fx->ar.lens[i], 0, pad);
            fx->batch[n] = (struct offload_pkt){ .data = seg, .len = fx->ar.lens[i] + pad };
        }
        allocs = alloc_count();
        runs = offload_coalesce(fx->batch, n, OFFLOAD_COALESCE_VERIFY, fx->next, fx->runs);
        assert_int_equal(alloc_count(), allocs);
        assert_int_equal(runs, 1);
        assert_int_equal(fx->runs[0].count, TSO_SEGS);
        assert_int_equal(fx->runs[0].len, len);
        long out = offload_run_copy(fx->batch, fx->next, &fx->runs[0], fx->out, sizeof(fx->out));
        assert_int_equal(out, OFFLOAD_VNET_HDR_LEN + len);
        struct vnet_hdr back;
        assert_int_equal(vnet_hdr_parse(fx->out, (size_t)out, &back), 0);
        assert_memory_equal(&back, &h, sizeof(h));
        /* byte for byte the super-packet the kernel handed over */
        assert_memory_equal(fx->out + OFFLOAD_VNET_HDR_LEN, fx->pkt, len);
    }
}

static void test_coalesce_iov_matches_copy(void **state)
{
    struct fx *fx = *state;
    size_t n = 0, at = 0;
    struct iovec iov[8];
    uint8_t vnet[OFFLOAD_VNET_HDR_LEN];
    long len;

    for (size_t k = 0; k < 5; k++) {
        struct spec s = flow_seg(4, 1000, k);
        batch_add(fx, &n, &s, 3);
    }
    assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), 1);
    assert_int_equal(offload_run_iov(fx->batch, fx->next, &fx->runs[0], vnet, iov, 5),
                     -EMSGSIZE);
    assert_int_equal(offload_run_iov(fx->batch, fx->next, &fx->runs[0], vnet, iov, 6), 6);
    len = offload_run_copy(fx->batch, fx->next, &fx->runs[0], fx->out, sizeof(fx->out));
    assert_int_equal(len, OFFLOAD_VNET_HDR_LEN + 52 + 5 * MSS);
    assert_ptr_equal(iov[0].iov_base, vnet);
    for (size_t k = 0; k < 6; k++) {
        assert_memory_equal(fx->out + at, iov[k].iov_base, iov[k].iov_len);
        at += iov[k].iov_len;
    }
    assert_int_equal(at, len);
    assert_int_equal(iov[1].iov_len, 52 + MSS);     /* padding trimmed */
    assert_int_equal(offload_run_copy(fx->batch, fx->next, &fx->runs[0], fx->out,
                                      (size_t)len - 1), -EMSGSIZE);
    assert_int_equal(offload_run_copy(fx->batch, fx->next, &fx->runs[0], fx->out, 5),
                     -EMSGSIZE);
}

static void test_coalesce_interleaved_flows(void **state)
{
    struct fx *fx = *state;
    size_t n = 0;
    struct spec a[3], b[3], u = spec_udp(4), icmp = spec_udp(4);

    icmp.proto = 1;     /* passes through whatever it is */
    icmp.payload = 20;
    for (size_t k = 0; k < 3; k++) {
        a[k] = flow_seg(4, 1000, k);
        b[k] = flow_seg(6, 2000, k);
    }
    a[2].payload = 100;
    b[2].flags |= F_PSH;
    batch_add(fx, &n, &a[0], 0);
    batch_add(fx, &n, &b[0], 5);
    batch_add(fx, &n, &u, 7);
    batch_add(fx, &n, &a[1], 0);
    batch_add(fx, &n, &b[1], 0);
    batch_add(fx, &n, &icmp, 4);
    batch_add(fx, &n, &a[2], 0);
    batch_add(fx, &n, &b[2], 15);
    assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), 4);
    assert_run(fx, &fx->runs[0], (size_t[]){ 0, 3, 6 }, 3);
    assert_run(fx, &fx->runs[1], (size_t[]){ 1, 4, 7 }, 3);
    assert_run(fx, &fx->runs[2], (size_t[]){ 2 }, 1);
    assert_run(fx, &fx->runs[3], (size_t[]){ 5 }, 1);
    check_merged(fx, &fx->runs[0], &a[0], 2 * MSS + 100, F_ACK);
    check_merged(fx, &fx->runs[1], &b[0], 3 * MSS, F_ACK | F_PSH);
    check_single(fx, &fx->runs[2], &u);
    assert_int_equal(fx->batch[2].len, 28 + MSS);   /* UDP: padding trimmed */
    /* not TCP/UDP: passed as given, padding and all */
    assert_int_equal(fx->runs[3].len, 20 + 8 + 20 + 4);
}

/* Runs of a batch of one flow whose segment k is shaped by edit(k, s);
 * counts[] gives the expected members of each run, in order. */
static void coalesce_expect(struct fx *fx, size_t nseg, unsigned flags,
                            void (*edit)(size_t k, struct spec *s), const size_t *counts,
                            size_t nruns)
{
    size_t n = 0, at = 0;

    for (size_t k = 0; k < nseg; k++) {
        struct spec s = flow_seg(4, 1000, k);
        if (edit)
            edit(k, &s);
        batch_add(fx, &n, &s, 0);
    }
    assert_int_equal(offload_coalesce(fx->batch, n, flags, fx->next, fx->runs), nruns);
    for (size_t r = 0; r < nruns; r++) {
        size_t members[BATCH_MAX];
        for (size_t k = 0; k < counts[r]; k++)
            members[k] = at + k;
        assert_run(fx, &fx->runs[r], members, counts[r]);
        at += counts[r];
    }
    assert_int_equal(at, nseg);
}

static void swap_1_2(size_t k, struct spec *s)
{
    if (k == 1 || k == 2) {
        size_t j = 3 - k;
        s->seq = spec_tcp(4).seq + (uint32_t)(j * MSS);
        s->pay_off = j * MSS;
    }
}

static void gap_at_2(size_t k, struct spec *s)
{
    if (k >= 2)
        s->seq += MSS;
}

static void psh_at_1(size_t k, struct spec *s)
{
    if (k == 1)
        s->flags |= F_PSH;
}

static void short_at_1(size_t k, struct spec *s)
{
    if (k == 1)
        s->payload = 1000;
    if (k == 2)
        s->seq -= MSS - 1000;
}

static void long_at_1(size_t k, struct spec *s)
{
    if (k == 0)
        s->payload = 1000;
    if (k >= 1)
        s->seq -= MSS - 1000;
}

static void test_coalesce_order_and_sizes(void **state)
{
    struct fx *fx = *state;

    coalesce_expect(fx, 4, 0, NULL, (size_t[]){ 4 }, 1);
    /* 0 2 1 3: 3 follows 2, but 1 came between and ended that run */
    coalesce_expect(fx, 4, 0, swap_1_2, (size_t[]){ 1, 1, 1, 1 }, 4);
    coalesce_expect(fx, 4, 0, gap_at_2, (size_t[]){ 2, 2 }, 2);
    coalesce_expect(fx, 3, 0, psh_at_1, (size_t[]){ 2, 1 }, 2);
    coalesce_expect(fx, 3, 0, short_at_1, (size_t[]){ 2, 1 }, 2);
    coalesce_expect(fx, 3, 0, long_at_1, (size_t[]){ 1, 2 }, 2);
    /* 52 + 47 x 1368 = 64348 fits; a 48th segment would not */
    coalesce_expect(fx, 50, 0, NULL, (size_t[]){ 47, 3 }, 2);
}

static void test_coalesce_seq_wraps(void **state)
{
    struct fx *fx = *state;
    size_t n = 0;
    struct spec s[3];

    for (size_t k = 0; k < 3; k++) {
        s[k] = flow_seg(4, 1000, k);
        s[k].seq = UINT32_MAX - 100 + (uint32_t)(k * MSS);
        batch_add(fx, &n, &s[k], 0);
    }
    assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), 1);
    check_merged(fx, &fx->runs[0], &s[0], 3 * MSS, F_ACK);
}

/* Every segment carries what is never merged: each passes alone. */
static void flag_syn(size_t k, struct spec *s) { (void)k; s->flags |= F_SYN; }
static void flag_fin(size_t k, struct spec *s) { (void)k; s->flags |= F_FIN; }
static void flag_rst(size_t k, struct spec *s) { (void)k; s->flags |= F_RST; }
static void flag_urg(size_t k, struct spec *s) { (void)k; s->flags |= F_URG; }
static void flag_cwr(size_t k, struct spec *s) { (void)k; s->flags |= F_CWR; }
static void pure_ack(size_t k, struct spec *s) { s->payload = 0; s->seq -= (uint32_t)(k * MSS); }
static void ip_opts(size_t k, struct spec *s) { (void)k; s->ip_opt = 4; }
/* Segments 1 and 2 differ from segment 0 in one field. */
static void diff_ece(size_t k, struct spec *s) { if (k >= 1) s->flags |= F_ECE; }
static void diff_ack(size_t k, struct spec *s) { if (k >= 1) s->ack += 1; }
static void diff_win(size_t k, struct spec *s) { if (k >= 1) s->window += 1; }
static void diff_ttl(size_t k, struct spec *s) { if (k >= 1) s->ttl -= 1; }
static void diff_tos(size_t k, struct spec *s) { if (k >= 1) s->tos = 4; }
static void diff_df(size_t k, struct spec *s) { if (k >= 1) s->df = false; }
static void diff_olen(size_t k, struct spec *s) { if (k >= 1) s->tcp_opt = 0; }
static void diff_opts(size_t k, struct spec *s) { if (k >= 1) s->opt_seed = 1; }
static void diff_port(size_t k, struct spec *s) { if (k >= 1) s->dport += 1; }
static void diff_addr(size_t k, struct spec *s) { if (k >= 1) s->dst[3] += 1; }
/* The IPv4 id may differ. */
static void diff_id(size_t k, struct spec *s) { s->id = (uint16_t)(k * 1000); }

static void test_coalesce_field_rules(void **state)
{
    struct fx *fx = *state;
    void (*alone[])(size_t, struct spec *) = { flag_syn, flag_fin, flag_rst, flag_urg,
                                                flag_cwr, pure_ack, ip_opts };
    void (*split[])(size_t, struct spec *) = { diff_ece, diff_ack, diff_win, diff_ttl,
                                                diff_tos, diff_df, diff_olen, diff_opts,
                                                diff_port, diff_addr };

    for (size_t i = 0; i < sizeof(alone) / sizeof(alone[0]); i++)
        coalesce_expect(fx, 3, 0, alone[i], (size_t[]){ 1, 1, 1 }, 3);
    for (size_t i = 0; i < sizeof(split) / sizeof(split[0]); i++)
        coalesce_expect(fx, 3, 0, split[i], (size_t[]){ 1, 2 }, 2);
    coalesce_expect(fx, 3, 0, diff_id, (size_t[]){ 3 }, 1);
}

static void test_coalesce_ipv6_fields(void **state)
{
    struct fx *fx = *state;

    for (int field = 0; field < 3; field++) {
        size_t n = 0;
        for (size_t k = 0; k < 3; k++) {
            struct spec s = flow_seg(6, 1000, k);
            if (k >= 1) {
                if (field == 0)
                    s.flow ^= 1;
                else if (field == 1)
                    s.ttl = 1;      /* hop limit */
                else
                    s.tos = 0x10;   /* traffic class */
            }
            batch_add(fx, &n, &s, 0);
        }
        assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), 2);
        assert_int_equal(fx->runs[0].count, 1);
        assert_int_equal(fx->runs[1].count, 2);
    }
}

static void test_coalesce_verify(void **state)
{
    struct fx *fx = *state;

    for (int t = 0; t < 6; t++) {
        size_t n = 0;
        int verify = t & 1, version = t < 4 ? 4 : 6;
        for (size_t k = 0; k < 3; k++) {
            struct spec s = flow_seg(version, 1000, k);
            batch_add(fx, &n, &s, 0);
        }
        for (size_t k = 0; k < n; k++)
            assert_true(offload_csum_ok(fx->batch[k].data, fx->batch[k].len));
        /* segment 1's TCP checksum, or IPv4 header checksum, is wrong */
        fx->bufs[1][t & 2 ? 10 : ip_hlen(&(struct spec){ .version = version }) + 16] ^= 1;
        assert_false(offload_csum_ok(fx->batch[1].data, fx->batch[1].len));
        int runs = offload_coalesce(fx->batch, n, verify ? OFFLOAD_COALESCE_VERIFY : 0,
                                    fx->next, fx->runs);
        assert_int_equal(runs, verify ? 3 : 1);
        assert_int_equal(fx->runs[0].count, verify ? 1 : 3);
    }
}

/* A packet whose csum_ok says it was verified where it was opened is not
 * summed again: the flag is the caller's word (a worker's, that ran
 * offload_csum_ok on the same bytes), so even a wrong checksum merges. */
static void test_coalesce_takes_csum_ok(void **state)
{
    struct fx *fx = *state;

    for (int verified = 0; verified < 2; verified++) {
        size_t n = 0;
        for (size_t k = 0; k < 3; k++) {
            struct spec s = flow_seg(4, 1000, k);
            batch_add(fx, &n, &s, 0);
        }
        fx->bufs[1][V4_HDR + 16] ^= 1;
        for (size_t k = 0; k < n; k++)
            fx->batch[k].csum_ok = verified;
        int runs = offload_coalesce(fx->batch, n, OFFLOAD_COALESCE_VERIFY, fx->next, fx->runs);
        assert_int_equal(runs, verified ? 1 : 3);
    }
}

/* offload_csum_ok: true only of a TCP segment with payload whose
 * checksums are right; false for what coalescing never verifies. */
static void test_csum_ok(void **state)
{
    struct fx *fx = *state;

    for (int version = 4; version <= 6; version += 2) {
        struct spec s = flow_seg(version, 1000, 0);
        size_t len = build(fx->pkt, &s);
        assert_true(offload_csum_ok(fx->pkt, len));
        /* WireGuard's zero padding after the IP length is no part of it */
        memset(fx->pkt + len, 0, 15);
        assert_true(offload_csum_ok(fx->pkt, len + 15));
        assert_false(offload_csum_ok(fx->pkt, len - 1));
        fx->pkt[len - 1] ^= 0x40;
        assert_false(offload_csum_ok(fx->pkt, len));
    }
    struct spec ack = flow_seg(4, 1000, 0);
    ack.payload = 0;
    size_t len = build(fx->pkt, &ack);
    assert_false(offload_csum_ok(fx->pkt, len));    /* no payload: never merged */
    struct spec udp = spec_udp(4);
    udp.payload = 100;
    len = build(fx->pkt, &udp);
    assert_false(offload_csum_ok(fx->pkt, len));
    assert_false(offload_csum_ok(NULL, 100));
    assert_false(offload_csum_ok(fx->pkt, 0));
}

static void test_coalesce_many_flows(void **state)
{
    struct fx *fx = *state;
    size_t n = 0, flows = OFFLOAD_COALESCE_FLOWS + 1;

    for (size_t k = 0; k < 2; k++)
        for (size_t f = 0; f < flows; f++) {
            struct spec s = flow_seg(4, (uint16_t)(1000 + f), k);
            batch_add(fx, &n, &s, 0);
        }
    /* flows 0-15 are followed; flow 16's segments pass alone */
    assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), flows + 1);
    for (size_t f = 0; f + 1 < flows; f++)
        assert_run(fx, &fx->runs[f], (size_t[]){ f, flows + f }, 2);
    assert_run(fx, &fx->runs[flows - 1], (size_t[]){ flows - 1 }, 1);
    assert_run(fx, &fx->runs[flows], (size_t[]){ 2 * flows - 1 }, 1);
    /* a run that cannot grow is not followed: PSH leaves room for others */
    n = 0;
    for (size_t k = 0; k < 2; k++)
        for (size_t f = 0; f < flows; f++) {
            struct spec s = flow_seg(4, (uint16_t)(1000 + f), k);
            if (k == 0 && f == 0)
                s.flags |= F_PSH;
            batch_add(fx, &n, &s, 0);
        }
    assert_int_equal(offload_coalesce(fx->batch, n, 0, fx->next, fx->runs), flows + 1);
    assert_run(fx, &fx->runs[0], (size_t[]){ 0 }, 1);
    for (size_t f = 1; f < flows; f++)
        assert_run(fx, &fx->runs[f], (size_t[]){ f, flows + f }, 2);
    assert_run(fx, &fx->runs[flows], (size_t[]){ flows }, 1);
}

static void test_coalesce_single_and_garbage(void **state)
{
    struct fx *fx = *state;
    size_t n = 0;
    struct spec s = flow_seg(4, 1000, 0);
    static uint8_t before[2][1600];

    batch_add(fx, &n, &s, 0);
    memset(fx->bufs[1], 0xee, 300);
    fx->batch[n++] = (struct offload_pkt){ .data = fx->bufs[1], .len = 300 };
    memcpy(before[0], fx->bufs[0], 1600);
    memcpy(before[1], fx->bufs[1], 1600);
    assert_int_equal(offload_coalesce(fx->batch, n, OFFLOAD_COALESCE_VERIFY, fx->next,
                                      fx->runs), 2);
    assert_memory_equal(before[0], fx->bufs[0], 1600);
    assert_memory_equal(before[1], fx->bufs[1], 1600);
    check_single(fx, &fx->runs[0], &s);
    assert_int_equal(fx->runs[1].len, 300);
    assert_int_equal(fx->runs[1].vnet.gso_type, 0);
}

static void test_coalesce_rejects(void **state)
{
    struct fx *fx = *state;
    size_t n = 0;
    struct spec s = flow_seg(4, 1000, 0);

    batch_add(fx, &n, &s, 0);
    fx->next[0] = 77;
    assert_int_equal(offload_coalesce(fx->batch, 0, 0, fx->next, fx->runs), -EINVAL);
    assert_int_equal(offload_coalesce(NULL, 1, 0, fx->next, fx->runs), -EINVAL);
    assert_int_equal(offload_coalesce(fx->batch, 1, 0, NULL, fx->runs), -EINVAL);
    assert_int_equal(offload_coalesce(fx->batch, 1, 0, fx->next, NULL), -EINVAL);
    assert_int_equal(offload_coalesce(fx->batch, 1, 2, fx->next, fx->runs), -EINVAL);
    assert_int_equal(offload_coalesce(fx->batch, (size_t)INT_MAX + 1, 0, fx->next, fx->runs),
                     -EINVAL);
    assert_int_equal(fx->next[0], 77);
    assert_int_equal(offload_coalesce(fx->batch, 1, 0, fx->next, fx->runs), 1);
    assert_true(fx->next[0] == OFFLOAD_END);
}

/* --- the real kernel ------------------------------------------------------ */

#define K_IFNAME   "ddpoff0"
#define K_PORT     5001
#define K_SPORT    40000
#define K_WAIT_MS  3000
#define K_SEGS     30u
#define K_SEND     200000u
#define K_WSCALE   7

struct kfx {
    int family, fd, lfd, cfd;
    struct spec peer;       /* the packets we send: peer -> kernel */
    uint32_t kseq;          /* the kernel's next sequence number */
    uint8_t buf[PKT_MAX];
};

static const char *kernel_skip_reason(void)
{
    if (geteuid() != 0)
        return "not root";
    if (access("/dev/net/tun", R_OK | W_OK) != 0)
        return "no usable /dev/net/tun";
    if (unshare(CLONE_NEWNET) != 0)
        return "unshare(CLONE_NEWNET) failed";
    return NULL;
}

/* 10.79.0.1 (local, the kernel) or .2 (the peer we play); fd79::1 or ::2. */
static void k_addr(const struct kfx *k, bool local, uint8_t *out)
{
    if (k->family == AF_INET) {
        const uint8_t v4[4] = { 10, 79, 0, local ? 1 : 2 };
        memcpy(out, v4, sizeof(v4));
        return;
    }
    memset(out, 0, 16);
    out[0] = 0xfd;
    out[1] = 0x79;
    out[15] = local ? 1 : 2;
}

static void k_setup_tun(struct kfx *k)
{
    struct tun_options opt = { .vnet_hdr = true, .queues = 1 };
    struct nl nl = { 0 };
    uint8_t local[16];
    int ifindex;

    assert_int_equal(tun_create(K_IFNAME, &opt, &k->fd), 0);
    assert_int_equal(tun_set_offload(k->fd, TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6), 0);
    assert_int_equal(nl_open(&nl), 0);
    ifindex = nl_link_index(&nl, K_IFNAME);
    assert_true(ifindex > 0);
    k_addr(k, true, local);
    assert_int_equal(nl_addr_add(&nl, ifindex, k->family, local, k->family == AF_INET ? 24 : 64),
                     0);
    assert_int_equal(nl_link_set_up(&nl, ifindex, true), 0);
    nl_close(&nl);
}

static void k_listen(struct kfx *k)
{
    struct sockaddr_storage ss = { 0 };
    socklen_t sl;
    int one = 1;

    if (k->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)&ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(K_PORT);
        k_addr(k, true, (uint8_t *)&sin->sin_addr);
        sl = sizeof(*sin);
    } else {
        struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&ss;
        uint8_t a[16];
        sin6->sin6_family = AF_INET6;
        sin6->sin6_port = htons(K_PORT);
        k_addr(k, true, a);
        memcpy(&sin6->sin6_addr, a, 16);
        sl = sizeof(*sin6);
    }
    k->lfd = socket(k->family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    assert_true(k->lfd >= 0);
    assert_int_equal(setsockopt(k->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)), 0);
    for (int tries = 0; bind(k->lfd, (struct sockaddr *)&ss, sl) != 0; tries++) {
        assert_true(tries < 100 && errno == EADDRNOTAVAIL);    /* address still settling */
        usleep(10000);
    }
    assert_int_equal(listen(k->lfd, 1), 0);
}

/* Writes one packet (plain vnet header) to the TUN. */
static void k_write(struct kfx *k, const uint8_t *pkt, size_t len)
{
    uint8_t vnet[OFFLOAD_VNET_HDR_LEN] = { 0 };
    struct iovec iov[2] = { { vnet, sizeof(vnet) }, { (void *)(uintptr_t)pkt, len } };

    assert_int_equal(writev(k->fd, iov, 2), (ssize_t)(sizeof(vnet) + len));
}

/* Reads TUN packets until one of our TCP connection comes from the kernel;
 * returns its length (vnet header included) in k->buf, or 0 when none came
 * within wait_ms of the last packet read. */
static size_t k_read_tcp_within(struct kfx *k, int wait_ms)
{
    for (;;) {
        struct pollfd p = { .fd = k->fd, .events = POLLIN };
        ssize_t n;

        if (poll(&p, 1, wait_ms) == 0)
            return 0;
        n = read(k->fd, k->buf, sizeof(k->buf));
        assert_true(n > (ssize_t)OFFLOAD_VNET_HDR_LEN);
        const uint8_t *ip = k->buf + OFFLOAD_VNET_HDR_LEN;
        if ((ip[0] >> 4) == (k->family == AF_INET ? 4 : 6) && proto_of(ip) == IPPROTO_TCP &&
            rd16(ip + l3_of(ip) + 2) == K_SPORT)
            return (size_t)n;
    }
}

/* The next data segment: a SYN-ACK answering a SYN sent twice is skipped. */
static size_t k_read_tcp(struct kfx *k)
{
    for (;;) {
        size_t n = k_read_tcp_within(k, K_WAIT_MS);
        const uint8_t *ip = k->buf + OFFLOAD_VNET_HDR_LEN;

        assert_true(n > 0);
        if (!(ip[l3_of(ip) + 13] & F_SYN))
            return n;
    }
}

static void k_send(struct kfx *k, uint8_t flags, size_t tcp_opt, size_t payload, size_t pay_off)
{
    static uint8_t pkt[PKT_MAX];
    struct spec s = k->peer;
    size_t len;

    s.flags = flags;
    s.tcp_opt = tcp_opt;
    s.payload = payload;
    s.pay_off = pay_off;
    s.seq = k->peer.seq + (uint32_t)pay_off;
    len = build(pkt, &s);
    if (tcp_opt) {      /* SYN: MSS, window scale */
        uint8_t *o = pkt + ip_hlen(&s) + TCP_HDR;
        static const uint8_t opts[8] = { 2, 4, 0x05, 0x00, 1, 3, 3, K_WSCALE };
        memcpy(o, opts, sizeof(opts));
        wr16(pkt + ip_hlen(&s) + 16, 0);
        wr16(pkt + ip_hlen(&s) + 16,
             (uint16_t)~ref_sum(pkt + ip_hlen(&s), len - ip_hlen(&s),
                                ref_pseudo(pkt, len - ip_hlen(&s))));
    }
    k_write(k, pkt, len);
}

static void k_handshake(struct kfx *k)
{
    const uint8_t *ip;

    k->peer = spec_tcp(k->family == AF_INET ? 4 : 6);
    k_addr(k, false, k->peer.src);
    k_addr(k, true, k->peer.dst);
    k->peer.sport = K_SPORT;
    k->peer.dport = K_PORT;
    k->peer.window = 1024;  /* << K_WSCALE */
    k->peer.seq = 1000;
    k->peer.ack = 0;
    /* Sent again, as a real TCP would, while none is answered: an IPv6
     * address can be bound a moment before its local route is in place,
     * and a SYN in that moment is dropped (seen once on a loaded CI run). */
    for (int tries = 0;; tries++) {
        k_send(k, F_SYN, 8, 0, 0);
        if (k_read_tcp_within(k, 200) > 0)
            break;
        assert_true(tries < K_WAIT_MS / 200);
    }
    k->peer.seq++;
    ip = k->buf + OFFLOAD_VNET_HDR_LEN;
    assert_int_equal(ip[l3_of(ip) + 13], F_SYN | F_ACK);
    k->kseq = rd32(ip + l3_of(ip) + 4) + 1;
    k->peer.ack = k->kseq;
    k_send(k, F_ACK, 0, 0, 0);
    struct pollfd p = { .fd = k->lfd, .events = POLLIN };
    assert_int_equal(poll(&p, 1, K_WAIT_MS), 1);
    k->cfd = accept4(k->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    assert_true(k->cfd >= 0);
}

/* Peer -> kernel: K_SEGS segments coalesced into super-packets. */
static void k_check_coalesced(struct kfx *k)
{
    static uint8_t bufs[K_SEGS][1600], got[K_SEGS * MSS];
    struct offload_pkt pkts[K_SEGS];
    size_t next[K_SEGS];
    struct offload_run runs[K_SEGS];
    struct iovec iov[K_SEGS + 1];
    uint8_t vnet[K_SEGS][OFFLOAD_VNET_HDR_LEN];
    size_t have = 0;
    int nruns;

    for (size_t i = 0; i < K_SEGS; i++) {
        struct spec s = k->peer;
        s.flags = F_ACK | (i + 1 == K_SEGS ? F_PSH : 0);
        s.payload = MSS;
        s.pay_off = i * MSS;
        s.seq += (uint32_t)(i * MSS);
        pkts[i] = (struct offload_pkt){ .data = bufs[i], .len = build(bufs[i], &s) };
    }
    nruns = offload_coalesce(pkts, K_SEGS, OFFLOAD_COALESCE_VERIFY, next, runs);
    assert_int_equal(nruns, 1);
    assert_int_equal(runs[0].count, K_SEGS);
    for (int r = 0; r < nruns; r++) {
        int n = offload_run_iov(pkts, next, &runs[r], vnet[r], iov, K_SEGS + 1);
        assert_true(n > 0);
        assert_int_equal(writev(k->fd, iov, n), (ssize_t)(OFFLOAD_VNET_HDR_LEN + runs[r].len));
    }
    while (have < sizeof(got)) {
        struct pollfd p = { .fd = k->cfd, .events = POLLIN };
        ssize_t n;
        assert_int_equal(poll(&p, 1, K_WAIT_MS), 1);
        n = read(k->cfd, got + have, sizeof(got) - have);
        assert_true(n > 0);
        have += (size_t)n;
    }
    for (size_t i = 0; i < sizeof(got); i++)
        if (got[i] != pattern(i))
            fail_msg("byte %zu of what the kernel received", i);
    k->peer.seq += K_SEGS * MSS;
}

/* Takes the segments of one TUN read: checks them and marks their bytes
 * in got/seen; returns how many bytes were new. */
static size_t k_take(struct kfx *k, const struct offload_area *a, int segs, uint8_t *got,
                     bool *seen)
{
    size_t fresh = 0;

    for (int i = 0; i < segs; i++) {
        uint8_t *seg = a->base + (size_t)i * a->stride + a->headroom;
        size_t len = a->lens[i], l4 = l3_of(seg), hdr = l4 + (size_t)(seg[l4 + 12] >> 4) * 4;
        size_t off = rd32(seg + l4 + 4) - k->kseq, plen = len - hdr;

        assert_true(ref_l4_ok(seg, len));
        assert_true(len <= 1500);
        if (seg[0] >> 4 == 4)
            assert_true(ref_ip4_ok(seg));
        assert_true(off + plen <= K_SEND);
        memcpy(got + off, seg + hdr, plen);
        for (size_t j = off; j < off + plen; j++)
            fresh += !seen[j], seen[j] = true;
    }
    return fresh;
}

/* Kernel -> peer: TSO super-packets from the TUN, cut here, acknowledged
 * as they come so that the congestion window opens. */
static void k_check_segmented(struct kfx *k)
{
    static uint8_t sent[K_SEND], got[K_SEND], area[SLOTS * STRIDE];
    static bool seen[K_SEND];
    static uint16_t lens[SLOTS];
    struct offload_area a = { .base = area, .stride = STRIDE, .headroom = HEADROOM,
                              .tailroom = TAILROOM, .slots = SLOTS, .lens = lens };
    size_t have = 0, acked = 0, gso_reads = 0, written = 0;

    memset(seen, 0, sizeof(seen));
    for (size_t i = 0; i < K_SEND; i++)
        sent[i] = (uint8_t)(i * 11 + 5);
    while (have < K_SEND) {
        ssize_t w = write(k->cfd, sent + written, K_SEND - written);
        size_t n;
        struct vnet_hdr h;
        int segs;

        written += w > 0 ? (size_t)w : 0;
        n = k_read_tcp(k);
        assert_int_equal(vnet_hdr_parse(k->buf, n, &h), 0);
        gso_reads += h.gso_type != VIRTIO_NET_HDR_GSO_NONE;
        segs = segment_counted(&h, k->buf + OFFLOAD_VNET_HDR_LEN, n - OFFLOAD_VNET_HDR_LEN, &a);
        assert_true(segs >= 1);
        have += k_take(k, &a, segs, got, seen);
        while (acked < K_SEND && seen[acked])
            acked++;
        k->peer.ack = k->kseq + (uint32_t)acked;
        k_send(k, F_ACK, 0, 0, 0);
    }
    assert_memory_equal(got, sent, K_SEND);
    print_message("kernel sent %zu bytes in %zu GSO reads\n", have, gso_reads);
    assert_true(gso_reads >= 1);
}

static void kernel_round_trip(int family)
{
    static struct kfx k;
    const char *why = kernel_skip_reason();

    if (why) {
        print_message("skipped: %s\n", why);
        skip();
    }
    memset(&k, 0, sizeof(k));
    k.family = family;
    k.fd = k.lfd = k.cfd = -1;
    k_setup_tun(&k);
    k_listen(&k);
    k_handshake(&k);
    k_check_coalesced(&k);
    k_check_segmented(&k);
    close(k.cfd);
    close(k.lfd);
    tun_close(&k.fd, 1);
}

static void test_kernel_ipv4(void **state)
{
    (void)state;
    kernel_round_trip(AF_INET);
}

static void test_kernel_ipv6(void **state)
{
    (void)state;
    kernel_round_trip(AF_INET6);
}

/* Stands for the AVX2 group where this CPU (or $DDPNET_CPU=baseline)
 * has no AVX2: a skip docs/testing.md lists. */
static void test_offload_avx2(void **state)
{
    (void)state;
    printf("offload: this CPU has no AVX2 (or DDPNET_CPU=baseline): the AVX2 checksum is not run\n");
    skip();
}

/* Every test runs once on each checksum path: the baseline (what a CPU
 * without AVX2 runs), then AVX2 where this CPU has it. */
int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vnet_round_trip),
        cmocka_unit_test(test_csum_rfc1071_example),
        cmocka_unit_test(test_csum_matches_reference),
        cmocka_unit_test_setup_teardown(test_csum_large_and_pieces, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_csum_pseudo, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_parse_valid, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_flow_hash, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_parse_rejects, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_tso4_64k, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_tso6, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_uso, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_fit_tcp, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_tso_ecn_and_no_csum_flag, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_needs_csum_only, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_udp_zero_checksum, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_plain_copy, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_exact_fit, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_segment_rejects, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_round_trip, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_iov_matches_copy, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_interleaved_flows, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_order_and_sizes, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_seq_wraps, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_field_rules, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_ipv6_fields, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_takes_csum_ok, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_csum_ok, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_verify, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_many_flows, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_single_and_garbage, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_coalesce_rejects, fx_setup, fx_teardown),
        cmocka_unit_test(test_kernel_ipv4),
        cmocka_unit_test(test_kernel_ipv6),
    };
    const struct CMUnitTest no_avx2[] = { cmocka_unit_test(test_offload_avx2) };

    offload_simd_paths(OFFLOAD_SIMD_AVX2);
    unsigned cpu = offload_simd_paths(0);
    int failed = cmocka_run_group_tests_name("offload (baseline)", tests, NULL, NULL);

    if (!(cpu & OFFLOAD_SIMD_AVX2))
        return failed | cmocka_run_group_tests_name("offload (avx2)", no_avx2, NULL, NULL);
    offload_simd_paths(OFFLOAD_SIMD_AVX2);
    return failed | cmocka_run_group_tests_name("offload (avx2)", tests, NULL, NULL);
}
