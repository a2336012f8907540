/* SPDX-License-Identifier: MIT */
/* TUN offloads done in userspace (tun/offload.h): the vnet header, the
 * Internet checksum, cutting TSO/USO super-packets into segments and
 * merging received TCP segments back into super-packets. Owns the IP, TCP
 * and UDP header layouts it touches; everything works on caller memory. */
#include "tun/offload.h"

#include <errno.h>
#include <limits.h>
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* --- header layouts (RFC 791, RFC 8200, RFC 9293, RFC 768) ---------------- */

#define IP4_HDR_MIN       20u
#define IP4_OFF_TOT_LEN   2u
#define IP4_OFF_ID        4u
#define IP4_OFF_FRAG      6u
#define IP4_OFF_TTL       8u
#define IP4_OFF_PROTO     9u
#define IP4_OFF_CSUM      10u
#define IP4_OFF_SRC       12u
#define IP4_OFF_DST       16u
#define IP4_ADDR_LEN      4u
#define IP4_FRAG_MF       0x2000u
#define IP4_FRAG_OFFSET   0x1fffu

#define IP6_HDR_LEN       40u
#define IP6_OFF_PLEN      4u
#define IP6_OFF_NEXT      6u
#define IP6_OFF_SRC       8u
#define IP6_OFF_DST       24u
#define IP6_ADDR_LEN      16u
#define L4_PORTS_LEN      4u    /* TCP and UDP: source and destination port */

#define IP_WORD           4u    /* IHL and TCP data offset count 32-bit words */
#define IP_NIBBLE_MASK    0x0fu
#define IP_NIBBLE_SHIFT   4u

#define TCPH_MIN          20u
#define TCPH_OFF_SEQ      4u
#define TCPH_OFF_ACK      8u
#define TCPH_OFF_DOFF     12u
#define TCPH_OFF_FLAGS    13u
#define TCPH_OFF_WINDOW   14u
#define TCPH_OFF_CSUM     16u
#define TCPH_PORTS_LEN    4u
#define TCPH_FIN          0x01u
#define TCPH_SYN          0x02u
#define TCPH_RST          0x04u
#define TCPH_PSH          0x08u
#define TCPH_URG          0x20u
#define TCPH_CWR          0x80u

#define UDPH_LEN          8u
#define UDPH_OFF_LEN      4u
#define UDPH_OFF_CSUM     6u

/* A checksum that comes out 0 is sent as its other zero, 0xffff: for UDP
 * 0 would mean "no checksum" (RFC 768); TCP reads both the same. */
#define CSUM_ZERO_SUBST   0xffffu
#define CSUM_ALL_ONES     0xffffu

/* --- bytes ---------------------------------------------------------------- */

static uint16_t get16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

static void put32(uint8_t *p, uint32_t v)
{
    put16(p, (uint16_t)(v >> 16));
    put16(p + 2, (uint16_t)v);
}

/* --- the vnet header ------------------------------------------------------ */

int vnet_hdr_parse(const uint8_t *buf, size_t len, struct vnet_hdr *h)
{
    struct virtio_net_hdr raw;

    if (!buf || !h || len < OFFLOAD_VNET_HDR_LEN)
        return -EINVAL;
    memcpy(&raw, buf, sizeof(raw));
    h->flags = raw.flags;
    h->gso_type = raw.gso_type;
    h->hdr_len = raw.hdr_len;
    h->gso_size = raw.gso_size;
    h->csum_start = raw.csum_start;
    h->csum_offset = raw.csum_offset;
    return 0;
}

void vnet_hdr_write(uint8_t *buf, const struct vnet_hdr *h)
{
    struct virtio_net_hdr raw = {
        .flags = h->flags,
        .gso_type = h->gso_type,
        .hdr_len = h->hdr_len,
        .gso_size = h->gso_size,
        .csum_start = h->csum_start,
        .csum_offset = h->csum_offset,
    };

    _Static_assert(sizeof(raw) == OFFLOAD_VNET_HDR_LEN, "virtio_net_hdr is 10 bytes");
    memcpy(buf, &raw, sizeof(raw));
}

/* --- checksums ------------------------------------------------------------ */

/* The sum runs over native-order words: a one's-complement sum of
 * byte-swapped words is the byte-swapped sum (RFC 1071, 2.(B)), so one
 * swap at the end gives the big-endian result. */
static uint16_t to_native16(uint16_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    return __builtin_bswap16(v);
#else
    return v;
#endif
}

static uint16_t fold64(uint64_t acc)
{
    acc = (acc & UINT32_MAX) + (acc >> 32);
    acc = (acc & UINT32_MAX) + (acc >> 32);
    acc = (acc & UINT16_MAX) + (acc >> 16);
    acc = (acc & UINT16_MAX) + (acc >> 16);
    return (uint16_t)acc;
}

static uint64_t halves(uint64_t w)
{
    return (w & UINT32_MAX) + (w >> 32);
}

/* Bytes summed per step of sum_blocks: two vectors of four 64-bit lanes. */
#define CSUM_BLOCK 64u

typedef uint64_t csum_vec __attribute__((vector_size(32)));

/* The native-order sum of n64 blocks of CSUM_BLOCK bytes, the bulk of a
 * packet's checksum (sum_raw does the rest), and their copy to `copy`
 * unless it is NULL. Each 64-bit lane is split into its 32-bit halves as
 * halves() does, so no carry is lost: a lane grows by < 2^34 a step, far
 * from overflow for any packet. Built for AVX2 where the CPU has it (the
 * same C, four lanes an instruction), else for the baseline: 2-4x the
 * speed of a scalar loop on the send path, where every segment is summed. */
__attribute__((always_inline))
static inline uint64_t blocks_sum_copy(const uint8_t *p, size_t n64, uint8_t *copy)
{
    const csum_vec low = { UINT32_MAX, UINT32_MAX, UINT32_MAX, UINT32_MAX };
    csum_vec a = { 0 }, b = { 0 }, x, y;

    for (size_t i = 0; i < n64; i++, p += CSUM_BLOCK) {
        memcpy(&x, p, sizeof(x));
        memcpy(&y, p + sizeof(x), sizeof(y));
        if (copy) {
            memcpy(copy, &x, sizeof(x));
            memcpy(copy + sizeof(x), &y, sizeof(y));
            copy += CSUM_BLOCK;
        }
        a += (x & low) + (x >> 32);
        b += (y & low) + (y >> 32);
    }
    a += b;
    return a[0] + a[1] + a[2] + a[3];
}

__attribute__((target("avx2")))
static uint64_t sum_blocks_avx2(const uint8_t *p, size_t n64)
{
    return blocks_sum_copy(p, n64, NULL);
}

/* One pass that copies and sums: summing the fresh copy afterwards would
 * wait for its stores to drain first. */
__attribute__((target("avx2")))
static uint64_t copy_sum_blocks_avx2(uint8_t *dst, const uint8_t *src, size_t n64)
{
    return blocks_sum_copy(src, n64, dst);
}

/* The SIMD paths in use (OFFLOAD_SIMD_*): what the CPU runs, asked once,
 * less what $DDPNET_CPU=baseline or offload_simd_paths turned off. Chosen
 * here rather than by an ifunc so that a test runs both paths on any CPU. */
static int simd_usable = -1;

static unsigned cpu_simd(void)
{
    const char *env = getenv(OFFLOAD_CPU_ENV);

    if (env && strcmp(env, OFFLOAD_CPU_BASELINE) == 0)
        return 0;
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") ? OFFLOAD_SIMD_AVX2 : 0;
}

static unsigned simd(void)
{
    int usable = __atomic_load_n(&simd_usable, __ATOMIC_RELAXED);

    if (usable < 0) {
        usable = (int)cpu_simd();
        __atomic_store_n(&simd_usable, usable, __ATOMIC_RELAXED);
    }
    return (unsigned)usable;
}

unsigned offload_simd_paths(unsigned mask)
{
    unsigned before = simd();

    __atomic_store_n(&simd_usable, (int)(mask & cpu_simd()), __ATOMIC_RELAXED);
    return before;
}

static uint64_t sum_blocks(const uint8_t *p, size_t n64)
{
    if (simd() & OFFLOAD_SIMD_AVX2)
        return sum_blocks_avx2(p, n64);
    return blocks_sum_copy(p, n64, NULL);
}

static uint64_t copy_sum_blocks(uint8_t *dst, const uint8_t *src, size_t n64)
{
    if (simd() & OFFLOAD_SIMD_AVX2)
        return copy_sum_blocks_avx2(dst, src, n64);
    return blocks_sum_copy(src, n64, dst);
}

/* Unfolded native-order sum: whole blocks in sum_blocks, then eight bytes
 * per load, split into 32-bit halves so that no carry is lost. */
static uint64_t sum_tail(const uint8_t *p, size_t len)
{
    uint64_t a = 0, w;
    uint32_t w32;
    uint16_t w16;

    for (; len >= sizeof(w); p += sizeof(w), len -= sizeof(w)) {
        memcpy(&w, p, sizeof(w));
        a += halves(w);
    }
    if (len >= sizeof(w32)) {
        memcpy(&w32, p, sizeof(w32));
        a += w32;
        p += sizeof(w32);
        len -= sizeof(w32);
    }
    if (len >= sizeof(w16)) {
        memcpy(&w16, p, sizeof(w16));
        a += w16;
        p += sizeof(w16);
        len -= sizeof(w16);
    }
    if (len)    /* the odd byte is the high half of a big-endian word */
        a += to_native16((uint16_t)(p[0] << 8));
    return a;
}

static uint64_t sum_raw(const uint8_t *p, size_t len)
{
    size_t bulk = len - len % CSUM_BLOCK;

    return sum_blocks(p, len / CSUM_BLOCK) + sum_tail(p + bulk, len - bulk);
}

/* memcpy(dst, src, len), returning sum_raw(src, len). */
static uint64_t copy_sum(uint8_t *dst, const uint8_t *src, size_t len)
{
    size_t bulk = len - len % CSUM_BLOCK;

    memcpy(dst + bulk, src + bulk, len - bulk);
    return copy_sum_blocks(dst, src, len / CSUM_BLOCK) + sum_tail(src + bulk, len - bulk);
}

/* A checksum (big-endian, as offload_csum_add's) with an unfolded
 * native-order sum added. */
static uint16_t csum_add_raw(uint16_t sum, uint64_t raw)
{
    return to_native16(fold64(raw + to_native16(sum)));
}

uint16_t offload_csum_add(uint16_t sum, const uint8_t *p, size_t len)
{
    return csum_add_raw(sum, sum_raw(p, len));
}

uint16_t offload_csum_pseudo(const uint8_t *src, const uint8_t *dst, size_t addr_len,
                             uint8_t proto, uint32_t l4_len)
{
    /* IPv4's zero+protocol+16-bit length and IPv6's 32-bit length+3 zero
     * bytes+next header give the same sum as these words. */
    uint8_t tail[8] = { 0, 0, 0, proto };

    put32(tail + 4, l4_len);
    return to_native16(fold64(sum_raw(src, addr_len) + sum_raw(dst, addr_len) +
                              sum_raw(tail, sizeof(tail))));
}

/* --- parsing -------------------------------------------------------------- */

static int parse_ip4(const uint8_t *pkt, size_t len, struct offload_ip *ip)
{
    size_t ihl = (size_t)(pkt[0] & IP_NIBBLE_MASK) * IP_WORD;
    size_t tot;

    if (len < IP4_HDR_MIN || ihl < IP4_HDR_MIN)
        return -EINVAL;
    tot = get16(pkt + IP4_OFF_TOT_LEN);
    if (tot < ihl || tot > len)
        return -EINVAL;
    if (get16(pkt + IP4_OFF_FRAG) & (IP4_FRAG_MF | IP4_FRAG_OFFSET))
        return -EINVAL;
    ip->proto = pkt[IP4_OFF_PROTO];
    ip->l3_len = (uint16_t)ihl;
    ip->ip_len = (uint32_t)tot;
    return 0;
}

static int parse_ip6(const uint8_t *pkt, size_t len, struct offload_ip *ip)
{
    size_t tot;

    if (len < IP6_HDR_LEN)
        return -EINVAL;
    tot = IP6_HDR_LEN + get16(pkt + IP6_OFF_PLEN);
    if (tot > len)
        return -EINVAL;
    ip->proto = pkt[IP6_OFF_NEXT];
    ip->l3_len = IP6_HDR_LEN;
    ip->ip_len = (uint32_t)tot;
    return 0;
}

static int parse_l4(const uint8_t *pkt, struct offload_ip *ip)
{
    size_t l3 = ip->l3_len, hlen;

    if (ip->proto == IPPROTO_UDP) {
        hlen = UDPH_LEN;
    } else if (ip->proto == IPPROTO_TCP) {
        if (l3 + TCPH_MIN > ip->ip_len)
            return -EINVAL;
        hlen = (size_t)(pkt[l3 + TCPH_OFF_DOFF] >> IP_NIBBLE_SHIFT) * IP_WORD;
        if (hlen < TCPH_MIN)
            return -EINVAL;
    } else {
        return -EINVAL;
    }
    if (l3 + hlen > ip->ip_len)
        return -EINVAL;
    ip->l4_hlen = (uint16_t)hlen;
    return 0;
}

int offload_parse(const uint8_t *pkt, size_t len, struct offload_ip *ip)
{
    int ret;

    if (!pkt || !ip || len < 1)
        return -EINVAL;
    ip->version = pkt[0] >> IP_NIBBLE_SHIFT;
    if (ip->version == 4)
        ret = parse_ip4(pkt, len, ip);
    else if (ip->version == 6)
        ret = parse_ip6(pkt, len, ip);
    else
        ret = -EINVAL;
    return ret ? ret : parse_l4(pkt, ip);
}

/* FNV-1a over bytes, then a final mix so that the low bits (a lane's
 * index is the hash modulo a small count) depend on every input byte. */
static uint32_t fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

uint32_t offload_flow_hash(const uint8_t *pkt, size_t len)
{
    struct offload_ip ip;
    uint32_t h = 2166136261u;

    if (!pkt || len < 1)
        return 0;
    if (pkt[0] >> IP_NIBBLE_SHIFT == 4 && len >= IP4_OFF_DST + IP4_ADDR_LEN)
        h = fnv1a(h, pkt + IP4_OFF_SRC, 2 * IP4_ADDR_LEN);
    else if (pkt[0] >> IP_NIBBLE_SHIFT == 6 && len >= IP6_OFF_DST + IP6_ADDR_LEN)
        h = fnv1a(h, pkt + IP6_OFF_SRC, 2 * IP6_ADDR_LEN);
    else
        return 0;
    if (offload_parse(pkt, len, &ip) == 0) {
        h = fnv1a(h, &ip.proto, 1);
        h = fnv1a(h, pkt + ip.l3_len, L4_PORTS_LEN);
    }
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    return h;
}

/* The pseudo-header sum of a packet whose headers are described by ip,
 * for an L4 length of l4_len. */
static uint16_t pseudo_of(const uint8_t *pkt, const struct offload_ip *ip, uint32_t l4_len)
{
    if (ip->version == 4)
        return offload_csum_pseudo(pkt + IP4_OFF_SRC, pkt + IP4_OFF_DST, IP4_ADDR_LEN,
                                   ip->proto, l4_len);
    return offload_csum_pseudo(pkt + IP6_OFF_SRC, pkt + IP6_OFF_DST, IP6_ADDR_LEN, ip->proto,
                               l4_len);
}

/* Sets the IP length fields of a packet of ip_len bytes (IPv4: and the
 * header checksum, computed last). */
static void ip_set_len(uint8_t *pkt, const struct offload_ip *ip, size_t ip_len)
{
    if (ip->version == 6) {
        put16(pkt + IP6_OFF_PLEN, (uint16_t)(ip_len - IP6_HDR_LEN));
        return;
    }
    put16(pkt + IP4_OFF_TOT_LEN, (uint16_t)ip_len);
    put16(pkt + IP4_OFF_CSUM, 0);
    put16(pkt + IP4_OFF_CSUM, (uint16_t)~offload_csum_add(0, pkt, ip->l3_len));
}

static size_t l4_csum_offset(uint8_t proto)
{
    return proto == IPPROTO_TCP ? TCPH_OFF_CSUM : UDPH_OFF_CSUM;
}

/* --- segmentation --------------------------------------------------------- */

/* Whether a segment of seg_len bytes fits a slot with its head- and
 * tailroom, and its length fits area->lens. */
static bool slot_fits(const struct offload_area *a, size_t seg_len)
{
    if (seg_len > OFFLOAD_MAX_IP_LEN || a->headroom > a->stride)
        return false;
    return seg_len <= a->stride - a->headroom &&
           a->tailroom <= a->stride - a->headroom - seg_len;
}

/* A packet without GSO: copied, its checksum completed if asked, the
 * kernel's way (the field already holds the pseudo-header sum). */
static int segment_one(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                       const struct offload_area *a, size_t *last_len)
{
    bool csum = h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM;
    size_t start = h->csum_start, field = start + h->csum_offset;
    uint8_t *dst = a->base + a->headroom;

    /* An odd offset would put the field across the words it is summed in. */
    if (csum && (start > len || field > len || len - field < sizeof(uint16_t) ||
                 h->csum_offset % sizeof(uint16_t)))
        return -EINVAL;
    if (!slot_fits(a, len))
        return -EMSGSIZE;
    if (last_len) {   /* counting only */
        *last_len = len;
        return 1;
    }
    memcpy(dst, pkt, len);
    if (csum) {
        uint16_t sum = (uint16_t)~offload_csum_add(0, dst + start, len - start);
        put16(dst + field, sum ? sum : CSUM_ZERO_SUBST);
    }
    a->lens[0] = (uint16_t)len;
    return 1;
}

/* Everything a GSO packet's segments share. */
struct gso {
    const uint8_t *pkt;
    struct offload_ip ip;
    size_t hdr_end;         /* IP + L4 header bytes */
    size_t payload;         /* L4 payload bytes in all */
    size_t seg_size;        /* gso_size */
    size_t nseg;
};

/* The gso_type's IP version and protocol, or -EINVAL. */
static int gso_expect(uint8_t gso_type, uint8_t *version, uint8_t *proto)
{
    switch (gso_type) {
    case VIRTIO_NET_HDR_GSO_TCPV4:
        *version = 4;
        *proto = IPPROTO_TCP;
        return 0;
    case VIRTIO_NET_HDR_GSO_TCPV6:
        *version = 6;
        *proto = IPPROTO_TCP;
        return 0;
    case OFFLOAD_GSO_UDP_L4:
        *version = 0;   /* either */
        *proto = IPPROTO_UDP;
        return 0;
    default:
        return -EINVAL;
    }
}

static int gso_check_vnet(const struct vnet_hdr *h, const struct gso *g)
{
    if (h->hdr_len > g->ip.ip_len || (h->hdr_len && h->hdr_len < g->hdr_end))
        return -EINVAL;
    if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
        (h->csum_start != g->ip.l3_len || h->csum_offset != l4_csum_offset(g->ip.proto)))
        return -EINVAL;
    return h->gso_size ? 0 : -EINVAL;
}

static int gso_init(struct gso *g, const struct vnet_hdr *h, const uint8_t *pkt, size_t len)
{
    uint8_t version, proto;

    if (gso_expect(h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN, &version, &proto))
        return -EINVAL;
    if (offload_parse(pkt, len, &g->ip) || g->ip.ip_len != len || g->ip.proto != proto ||
        (version && g->ip.version != version))
        return -EINVAL;
    g->pkt = pkt;
    g->hdr_end = (size_t)g->ip.l3_len + g->ip.l4_hlen;
    g->payload = len - g->hdr_end;
    g->seg_size = h->gso_size;
    if (gso_check_vnet(h, g) || g->payload == 0)
        return -EINVAL;
    g->nseg = (g->payload + g->seg_size - 1) / g->seg_size;
    return 0;
}

static void segment_fix_tcp(uint8_t *th, const struct gso *g, size_t i)
{
    uint8_t flags = th[TCPH_OFF_FLAGS];

    put32(th + TCPH_OFF_SEQ, get32(th + TCPH_OFF_SEQ) + (uint32_t)(i * g->seg_size));
    if (i + 1 < g->nseg)
        flags &= (uint8_t)~(TCPH_FIN | TCPH_PSH);
    if (i > 0)
        flags &= (uint8_t)~TCPH_CWR;
    th[TCPH_OFF_FLAGS] = flags;
}

/* Writes segment i (its headers and payload) at dst; returns its length. */
static size_t segment_write(const struct gso *g, size_t i, uint8_t *dst)
{
    size_t off = i * g->seg_size;
    size_t plen = g->payload - off < g->seg_size ? g->payload - off : g->seg_size;
    size_t seg_len = g->hdr_end + plen, l3 = g->ip.l3_len;
    uint32_t l4_len = (uint32_t)(seg_len - l3);
    uint8_t *l4 = dst + l3, *field = l4 + l4_csum_offset(g->ip.proto);
    uint64_t payload_sum;
    uint16_t sum;

    memcpy(dst, g->pkt, g->hdr_end);
    /* The payload starts at an even offset into l4 (the TCP/UDP header is
     * whole 32-bit words), so its sum adds to the header's as it stands. */
    payload_sum = copy_sum(dst + g->hdr_end, g->pkt + g->hdr_end + off, plen);
    if (g->ip.version == 4)
        put16(dst + IP4_OFF_ID, (uint16_t)(get16(dst + IP4_OFF_ID) + i));
    ip_set_len(dst, &g->ip, seg_len);
    if (g->ip.proto == IPPROTO_TCP)
        segment_fix_tcp(l4, g, i);
    else
        put16(l4 + UDPH_OFF_LEN, (uint16_t)l4_len);
    put16(field, 0);
    sum = (uint16_t)~csum_add_raw(pseudo_of(dst, &g->ip, l4_len),
                                  sum_raw(l4, g->hdr_end - l3) + payload_sum);
    put16(field, sum ? sum : CSUM_ZERO_SUBST);
    return seg_len;
}

static int segment_gso(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                       const struct offload_area *a, size_t *last_len)
{
    struct gso g;

    if (gso_init(&g, h, pkt, len) || g.nseg > a->slots)
        return -EINVAL;
    if (!slot_fits(a, g.hdr_end + (g.payload < g.seg_size ? g.payload : g.seg_size)))
        return -EMSGSIZE;
    if (last_len) {   /* counting only */
        *last_len = g.hdr_end + g.payload - (g.nseg - 1) * g.seg_size;
        return (int)g.nseg;
    }
    for (size_t i = 0; i < g.nseg; i++)
        a->lens[i] = (uint16_t)segment_write(&g, i, a->base + i * a->stride + a->headroom);
    return (int)g.nseg;
}

/* offload_segment's checks, then its writes unless last_len is given
 * (counting: the last segment's length goes there instead). */
static int segment_or_count(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                            const struct offload_area *area, size_t *last_len)
{
    if (!h || !pkt || !area || !area->base || !area->lens || area->slots == 0 || len == 0)
        return -EINVAL;
    if (h->gso_type == VIRTIO_NET_HDR_GSO_NONE)
        return segment_one(h, pkt, len, area, last_len);
    return segment_gso(h, pkt, len, area, last_len);
}

int offload_segment(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                    const struct offload_area *area)
{
    return segment_or_count(h, pkt, len, area, NULL);
}

int offload_segment_count(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                          const struct offload_area *area, size_t *last_len)
{
    size_t ignored;

    return segment_or_count(h, pkt, len, area, last_len ? last_len : &ignored);
}

/* --- coalescing ----------------------------------------------------------- */

/* A parsed packet of the batch, as coalescing sees it. */
struct seg {
    uint8_t *pkt;
    struct offload_ip ip;
    size_t payload;         /* TCP payload bytes */
};

static uint8_t seg_flags(const struct seg *s)
{
    return s->pkt[s->ip.l3_len + TCPH_OFF_FLAGS];
}

static uint32_t seg_seq(const struct seg *s)
{
    return get32(s->pkt + s->ip.l3_len + TCPH_OFF_SEQ);
}

/* The TCP checksum, and the IPv4 header checksum: a merged member's IP
 * header is dropped, so the kernel would never see a wrong one. */
static bool csum_ok_at(const uint8_t *pkt, const struct offload_ip *ip)
{
    uint32_t l4_len = ip->ip_len - ip->l3_len;

    if (ip->version == 4 && offload_csum_add(0, pkt, ip->l3_len) != CSUM_ALL_ONES)
        return false;
    return offload_csum_add(pseudo_of(pkt, ip, l4_len), pkt + ip->l3_len, l4_len) ==
           CSUM_ALL_ONES;
}

static bool seg_csum_ok(const struct seg *s)
{
    return csum_ok_at(s->pkt, &s->ip);
}

/* Parses p into s, trimming p->len to the IP length, and says whether it
 * is TCP. */
static bool seg_load(struct seg *s, struct offload_pkt *p)
{
    if (offload_parse(p->data, p->len, &s->ip))
        return false;
    p->len = s->ip.ip_len;
    s->pkt = p->data;
    s->payload = (size_t)s->ip.ip_len - s->ip.l3_len - s->ip.l4_hlen;
    return s->ip.proto == IPPROTO_TCP;
}

bool offload_csum_ok(const uint8_t *pkt, size_t len)
{
    struct offload_ip ip;

    return pkt && offload_parse(pkt, len, &ip) == 0 && ip.proto == IPPROTO_TCP &&
           ip.ip_len > (uint32_t)ip.l3_len + ip.l4_hlen && csum_ok_at(pkt, &ip);
}

/* Whether a TCP segment may be part of a merged run at all. */
static bool seg_mergeable(const struct seg *s, unsigned flags, bool csum_ok)
{
    if (s->payload == 0 || (s->ip.version == 4 && s->ip.l3_len != IP4_HDR_MIN))
        return false;
    if (seg_flags(s) & (TCPH_SYN | TCPH_FIN | TCPH_RST | TCPH_URG | TCPH_CWR))
        return false;
    return !(flags & OFFLOAD_COALESCE_VERIFY) || csum_ok || seg_csum_ok(s);
}

static bool seg_same_flow(const struct seg *a, const struct seg *b)
{
    size_t addr_off = a->ip.version == 4 ? IP4_OFF_SRC : IP6_OFF_SRC;
    size_t addr_len = a->ip.version == 4 ? 2 * IP4_ADDR_LEN : 2 * IP6_ADDR_LEN;

    return a->ip.version == b->ip.version &&
           memcmp(a->pkt + addr_off, b->pkt + addr_off, addr_len) == 0 &&
           memcmp(a->pkt + a->ip.l3_len, b->pkt + b->ip.l3_len, TCPH_PORTS_LEN) == 0;
}

/* Every IP field but length, id and checksum (IPv4 without options:
 * version/IHL/TOS, flags/fragment, TTL/protocol; IPv6: version/class/
 * flow label, next header/hop limit). */
static bool seg_same_ip(const struct seg *a, const struct seg *b)
{
    if (a->ip.version == 6)
        return memcmp(a->pkt, b->pkt, IP6_OFF_PLEN) == 0 &&
               memcmp(a->pkt + IP6_OFF_NEXT, b->pkt + IP6_OFF_NEXT, IP6_OFF_SRC - IP6_OFF_NEXT) ==
                   0;
    return memcmp(a->pkt, b->pkt, IP4_OFF_TOT_LEN) == 0 &&
           memcmp(a->pkt + IP4_OFF_FRAG, b->pkt + IP4_OFF_FRAG, IP4_OFF_CSUM - IP4_OFF_FRAG) == 0;
}

/* Same data offset, flags but PSH, window and options; same ACK. */
static bool seg_same_tcp(const struct seg *a, const struct seg *b)
{
    const uint8_t *ta = a->pkt + a->ip.l3_len, *tb = b->pkt + b->ip.l3_len;

    if (a->ip.l4_hlen != b->ip.l4_hlen ||
        ((ta[TCPH_OFF_FLAGS] ^ tb[TCPH_OFF_FLAGS]) & (uint8_t)~TCPH_PSH))
        return false;
    return get32(ta + TCPH_OFF_ACK) == get32(tb + TCPH_OFF_ACK) &&
           get16(ta + TCPH_OFF_WINDOW) == get16(tb + TCPH_OFF_WINDOW) &&
           memcmp(ta + TCPH_MIN, tb + TCPH_MIN, a->ip.l4_hlen - TCPH_MIN) == 0;
}

/* A run that may still grow, with its first and last segment. */
struct open_run {
    size_t run;
    struct seg head, tail;
};

/* The state of one batch: the open runs, oldest first. */
struct batch {
    struct offload_pkt *pkts;
    size_t *next;
    struct offload_run *runs;
    size_t nruns;
    struct open_run open[OFFLOAD_COALESCE_FLOWS];
    size_t nopen;
};

/* Whether the open run o may take one more segment: its last is full
 * sized, without PSH, and there is room left. */
static bool open_can_grow(const struct batch *b, const struct open_run *o)
{
    return !(seg_flags(&o->tail) & TCPH_PSH) && o->tail.payload == o->head.payload &&
           b->runs[o->run].len < OFFLOAD_MAX_IP_LEN;
}

/* Whether s extends the open run o (which can grow). */
static bool run_accepts(const struct batch *b, const struct open_run *o, const struct seg *s)
{
    const struct seg *head = &o->head, *tail = &o->tail;

    if (s->payload > head->payload || b->runs[o->run].len + s->payload > OFFLOAD_MAX_IP_LEN)
        return false;
    return seg_seq(s) == seg_seq(tail) + (uint32_t)tail->payload && seg_same_ip(head, s) &&
           seg_same_tcp(head, s);
}

static void open_remove(struct batch *b, size_t k)
{
    memmove(&b->open[k], &b->open[k + 1], (b->nopen - k - 1) * sizeof(b->open[0]));
    b->nopen--;
}

/* Follows run (just started with s) unless it cannot grow or
 * OFFLOAD_COALESCE_FLOWS runs are followed already: evicting one would
 * let flows that take turns push each other out for the whole batch. */
static void open_add(struct batch *b, size_t run, const struct seg *s)
{
    struct open_run *o = &b->open[b->nopen];

    if (b->nopen == OFFLOAD_COALESCE_FLOWS)
        return;
    *o = (struct open_run){ .run = run, .head = *s, .tail = *s };
    if (open_can_grow(b, o))
        b->nopen++;
}

/* Starts run with packet i alone; s describes it when it may grow. */
static void run_start(struct batch *b, size_t i, const struct seg *s)
{
    struct offload_run *r = &b->runs[b->nruns];

    *r = (struct offload_run){ .first = i, .last = i, .count = 1, .len = b->pkts[i].len };
    b->next[i] = OFFLOAD_END;
    if (s) {
        r->hdr_len = (size_t)s->ip.l3_len + s->ip.l4_hlen;
        open_add(b, b->nruns, s);
    }
    b->nruns++;
}

static void run_append(struct batch *b, struct open_run *o, size_t i, const struct seg *s)
{
    struct offload_run *r = &b->runs[o->run];

    b->next[r->last] = i;
    b->next[i] = OFFLOAD_END;
    r->last = i;
    r->count++;
    r->len += s->payload;
    o->tail = *s;
}

/* Offers TCP segment i to the open run of its flow, if there is one: it
 * joins it (true), or ends it (false). */
static bool batch_offer(struct batch *b, size_t i, const struct seg *s, bool mergeable)
{
    for (size_t k = 0; k < b->nopen; k++) {
        struct open_run *o = &b->open[k];

        if (!seg_same_flow(&o->head, s))
            continue;
        if (mergeable && run_accepts(b, o, s)) {
            run_append(b, o, i, s);
            if (!open_can_grow(b, o))
                open_remove(b, k);
            return true;
        }
        open_remove(b, k);
        return false;
    }
    return false;
}

/* Gives a merged run's first packet the header of the whole, and the run
 * its vnet header. */
static void run_finish(struct batch *b, struct offload_run *r)
{
    struct seg head, tail;
    uint8_t *th;

    /* Members parsed as TCP once already; they do again. */
    if (r->count < 2 || !seg_load(&head, &b->pkts[r->first]) ||
        !seg_load(&tail, &b->pkts[r->last]))
        return;
    th = head.pkt + head.ip.l3_len;
    th[TCPH_OFF_FLAGS] |= seg_flags(&tail) & TCPH_PSH;
    ip_set_len(head.pkt, &head.ip, r->len);
    put16(th + TCPH_OFF_CSUM, pseudo_of(head.pkt, &head.ip, (uint32_t)(r->len - head.ip.l3_len)));
    r->vnet = (struct vnet_hdr){
        .flags = VIRTIO_NET_HDR_F_NEEDS_CSUM,
        .gso_type = head.ip.version == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6,
        .hdr_len = (uint16_t)r->hdr_len,
        .gso_size = (uint16_t)head.payload,
        .csum_start = head.ip.l3_len,
        .csum_offset = TCPH_OFF_CSUM,
    };
}

int offload_coalesce(struct offload_pkt *pkts, size_t n, unsigned flags, size_t *next,
                     struct offload_run *runs)
{
    struct batch b = { .pkts = pkts, .next = next, .runs = runs };

    if (!pkts || !next || !runs || n == 0 || n > INT_MAX || (flags & ~OFFLOAD_COALESCE_VERIFY))
        return -EINVAL;
    for (size_t i = 0; i < n; i++) {
        struct seg s;
        bool tcp = seg_load(&s, &pkts[i]);
        bool mergeable = tcp && seg_mergeable(&s, flags, pkts[i].csum_ok);

        if (!(tcp && batch_offer(&b, i, &s, mergeable)))
            run_start(&b, i, mergeable ? &s : NULL);
    }
    /* A run's first packet is rewritten only now, after every comparison
     * with it is done. */
    for (size_t r = 0; r < b.nruns; r++)
        run_finish(&b, &runs[r]);
    return (int)b.nruns;
}

int offload_run_iov(const struct offload_pkt *pkts, const size_t *next,
                    const struct offload_run *run, uint8_t vnet[OFFLOAD_VNET_HDR_LEN],
                    struct iovec *iov, size_t max_iov)
{
    size_t k = 0, skip = 0;

    if (max_iov < run->count + 1)
        return -EMSGSIZE;
    vnet_hdr_write(vnet, &run->vnet);
    iov[k++] = (struct iovec){ .iov_base = vnet, .iov_len = OFFLOAD_VNET_HDR_LEN };
    for (size_t i = run->first; i != OFFLOAD_END; i = next[i], skip = run->hdr_len)
        iov[k++] = (struct iovec){ .iov_base = pkts[i].data + skip,
                                   .iov_len = pkts[i].len - skip };
    return (int)k;
}

long offload_run_copy(const struct offload_pkt *pkts, const size_t *next,
                      const struct offload_run *run, uint8_t *buf, size_t cap)
{
    size_t at = OFFLOAD_VNET_HDR_LEN, skip = 0;

    if (cap < OFFLOAD_VNET_HDR_LEN || cap - OFFLOAD_VNET_HDR_LEN < run->len)
        return -EMSGSIZE;
    vnet_hdr_write(buf, &run->vnet);
    for (size_t i = run->first; i != OFFLOAD_END; i = next[i], skip = run->hdr_len) {
        memcpy(buf + at, pkts[i].data + skip, pkts[i].len - skip);
        at += pkts[i].len - skip;
    }
    return (long)at;
}

bool offload_fit_tcp(struct vnet_hdr *h, const uint8_t *pkt, size_t len, size_t mtu)
{
    uint8_t type = h->gso_type & (uint8_t)~VIRTIO_NET_HDR_GSO_ECN;
    struct offload_ip ip;
    size_t hdrs;

    if (type != VIRTIO_NET_HDR_GSO_TCPV4 && type != VIRTIO_NET_HDR_GSO_TCPV6 &&
        type != VIRTIO_NET_HDR_GSO_NONE)
        return false;
    if (offload_parse(pkt, len, &ip) || ip.proto != IPPROTO_TCP)
        return false;
    hdrs = (size_t)ip.l3_len + ip.l4_hlen;
    if (hdrs >= mtu)
        return false;
    if (type == VIRTIO_NET_HDR_GSO_NONE) {
        if (ip.ip_len != len || len <= mtu)
            return false;
        h->gso_type = ip.version == 4 ? VIRTIO_NET_HDR_GSO_TCPV4 : VIRTIO_NET_HDR_GSO_TCPV6;
        h->gso_size = (uint16_t)(mtu - hdrs);
        h->hdr_len = 0;
        /* A partial checksum stays where the kernel put it, at the TCP
         * checksum; any other request is moot: GSO computes it afresh. */
        if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) &&
            (h->csum_start != ip.l3_len || h->csum_offset != TCPH_OFF_CSUM))
            h->flags &= (uint8_t)~VIRTIO_NET_HDR_F_NEEDS_CSUM;
        return true;
    }
    if (hdrs + h->gso_size <= mtu)
        return false;
    h->gso_size = (uint16_t)(mtu - hdrs);
    return true;
}
