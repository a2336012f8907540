/* SPDX-License-Identifier: MIT */
/* Fuzzes tun/offload. Mode 0: offload_segment on an arbitrary vnet header,
 * area and packet; nothing may be written outside the segments (the area
 * is allocated to size, the rest of each slot holds a canary) and every
 * segment must check out. Mode 1: the same on a packet repaired into a
 * well-formed TSO/USO super-packet, then the round trip segment ->
 * coalesce -> segment must give back the very same segments. Mode 2:
 * offload_coalesce on an arbitrary batch: each packet in exactly one run,
 * a merged run cut again gives its members' payloads, and the runs are
 * the same when each packet comes verified by offload_csum_ok. Mode 0
 * also checks offload_segment_count against offload_segment. */
#include <linux/virtio_net.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tun/offload.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CANARY      0x5a
#define MAX_SLOTS   64u
#define MAX_BATCH   64u
#define RT_HEAD     16u
#define RT_TAIL     32u
#define RT_STRIDE   (RT_HEAD + 1600u + RT_TAIL)
#define RT_GSO_MAX  1500u
#define PKT_CAP     70000u

#define check(cond) \
    do { \
        if (!(cond)) \
            abort(); \
    } while (0)

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] << 8 | p[1]);
}

static void wr16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
}

struct area {
    struct offload_area a;
    size_t bytes;
};

static bool area_alloc(struct area *ar, size_t stride, size_t headroom, size_t tailroom,
                       size_t slots)
{
    ar->bytes = stride * slots;
    ar->a = (struct offload_area){ .base = malloc(ar->bytes), .stride = stride,
                                   .headroom = headroom, .tailroom = tailroom, .slots = slots,
                                   .lens = malloc(slots * sizeof(uint16_t)) };
    if (!ar->a.base || !ar->a.lens) {
        free(ar->a.base);
        free(ar->a.lens);
        return false;
    }
    memset(ar->a.base, CANARY, ar->bytes);
    return true;
}

static void area_free(struct area *ar)
{
    free(ar->a.base);
    free(ar->a.lens);
}

static uint8_t *seg_at(const struct area *ar, size_t i)
{
    return ar->a.base + i * ar->a.stride + ar->a.headroom;
}

static bool canary_from(const uint8_t *p, size_t n)
{
    static uint8_t ref[4096];

    if (ref[0] != CANARY)
        memset(ref, CANARY, sizeof(ref));
    for (size_t k; n > 0; p += k, n -= k) {
        k = n < sizeof(ref) ? n : sizeof(ref);
        if (memcmp(p, ref, k) != 0)
            return false;
    }
    return true;
}

/* Outside segments 0..nseg-1 the area is as it was. */
static void check_untouched(const struct area *ar, int nseg)
{
    for (size_t i = 0; i < ar->a.slots; i++) {
        const uint8_t *slot = ar->a.base + i * ar->a.stride;
        size_t used = ar->a.lens[i];

        if ((int)i >= nseg) {
            check(canary_from(slot, ar->a.stride));
            continue;
        }
        check(ar->a.headroom + used + ar->a.tailroom <= ar->a.stride);
        check(canary_from(slot, ar->a.headroom));
        check(canary_from(slot + ar->a.headroom + used, ar->a.stride - ar->a.headroom - used));
    }
}

/* A segment of a GSO packet: well-formed, checksums right. */
static void check_gso_segment(const uint8_t *seg, size_t len)
{
    struct offload_ip ip;
    const uint8_t *src = seg + (seg[0] >> 4 == 4 ? 12 : 8);
    size_t alen = seg[0] >> 4 == 4 ? 4 : 16;
    uint32_t l4_len;

    check(offload_parse(seg, len, &ip) == 0);
    check(ip.ip_len == len);
    l4_len = (uint32_t)(len - ip.l3_len);
    check(offload_csum_add(offload_csum_pseudo(src, src + alen, alen, ip.proto, l4_len),
                           seg + ip.l3_len, l4_len) == 0xffff);
    if (ip.version == 4)
        check(offload_csum_add(0, seg, ip.l3_len) == 0xffff);
}

static void check_segments(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                           const struct area *ar, int n)
{
    struct offload_ip ip;
    size_t hdr, at;

    check_untouched(ar, n);
    if (h->gso_type == VIRTIO_NET_HDR_GSO_NONE) {
        size_t field = (size_t)h->csum_start + h->csum_offset;
        check(n == 1 && ar->a.lens[0] == len);
        if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)) {
            check(memcmp(seg_at(ar, 0), pkt, len) == 0);
            return;
        }
        check(memcmp(seg_at(ar, 0), pkt, field) == 0);
        check(memcmp(seg_at(ar, 0) + field + 2, pkt + field + 2, len - field - 2) == 0);
        /* the old field held the pseudo-header sum the new one completes */
        check(offload_csum_add(rd16(pkt + field), seg_at(ar, 0) + h->csum_start,
                               len - h->csum_start) == 0xffff);
        return;
    }
    check(offload_parse(pkt, len, &ip) == 0);
    hdr = (size_t)ip.l3_len + ip.l4_hlen;
    at = hdr;
    for (int i = 0; i < n; i++) {
        size_t plen = ar->a.lens[i] - hdr;
        check_gso_segment(seg_at(ar, (size_t)i), ar->a.lens[i]);
        check(plen > 0 && plen <= h->gso_size);
        check(memcmp(seg_at(ar, (size_t)i) + hdr, pkt + at, plen) == 0);
        at += plen;
    }
    check(at == len);
}

/* Mode 0: bytes 1-9 shape the area and header, the rest is the packet. */
static void fuzz_segment_raw(const uint8_t *data, size_t size)
{
    struct vnet_hdr h;
    struct area ar;
    uint8_t *pkt;
    size_t len;
    int n;

    if (size < 5 + OFFLOAD_VNET_HDR_LEN)
        return;
    if (!area_alloc(&ar, rd16(data) % 4096 + 1, data[2] % 64, data[3] % 64,
                    data[4] % MAX_SLOTS + 1))
        return;
    data += 5, size -= 5;
    vnet_hdr_parse(data, size, &h);
    len = size - OFFLOAD_VNET_HDR_LEN;
    pkt = malloc(len ? len : 1);    /* to size: reads past it are caught */
    if (pkt) {
        size_t last = 0;
        memcpy(pkt, data + OFFLOAD_VNET_HDR_LEN, len);
        int counted = offload_segment_count(&h, pkt, len, &ar.a, &last);
        check_untouched(&ar, 0);
        n = offload_segment(&h, pkt, len, &ar.a);
        check(n == counted && (n <= 0 || ar.a.lens[n - 1] == last));
        if (n > 0)
            check_segments(&h, pkt, len, &ar, n);
        else
            check_untouched(&ar, 0);
        free(pkt);
    }
    area_free(&ar);
}

/* Makes pkt a well-formed GSO packet for h's type; returns false when it
 * is too short to be one. */
static bool repair(uint8_t *pkt, size_t len, struct vnet_hdr *h)
{
    bool v6 = h->gso_type == VIRTIO_NET_HDR_GSO_TCPV6 ||
              (h->gso_type == OFFLOAD_GSO_UDP_L4 && (pkt[0] & 1));
    bool tcp = h->gso_type != OFFLOAD_GSO_UDP_L4;
    size_t l3, l4h;

    if (len < 60 + 20 + 1 || len > OFFLOAD_MAX_IP_LEN)
        return false;
    if (v6) {
        pkt[0] = (uint8_t)(0x60 | (pkt[0] & 0x0f));
        wr16(pkt + 4, (uint16_t)(len - 40));
        pkt[6] = tcp ? IPPROTO_TCP : IPPROTO_UDP;
        l3 = 40;
    } else {
        l3 = (pkt[0] & 0x0f) < 5 ? 5 * 4 : (size_t)(pkt[0] & 0x0f) * 4;
        pkt[0] = (uint8_t)(0x40 | l3 / 4);
        wr16(pkt + 2, (uint16_t)len);
        pkt[6] &= 0x40;     /* DF at most */
        pkt[7] = 0;
        pkt[9] = tcp ? IPPROTO_TCP : IPPROTO_UDP;
        wr16(pkt + 10, 0);
        wr16(pkt + 10, (uint16_t)~offload_csum_add(0, pkt, l3));
    }
    l4h = tcp ? (size_t)(pkt[l3 + 12] >> 4) * 4 : 8;
    if (tcp && l4h < 20) {
        pkt[l3 + 12] = (uint8_t)(0x50 | (pkt[l3 + 12] & 0x0f));
        l4h = 20;
    }
    if (l3 + l4h >= len)
        return false;
    h->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
    h->hdr_len = (uint16_t)(l3 + l4h);
    h->csum_start = (uint16_t)l3;
    h->csum_offset = tcp ? 16 : 6;
    return true;
}

/* Each run of a coalesced batch of segments, cut again, gives back the
 * original segments (copied to orig) byte for byte. */
static void round_trip(const struct area *ar, const uint8_t *orig, int n, unsigned flags)
{
    static struct offload_pkt pkts[MAX_SLOTS];
    static size_t next[MAX_SLOTS];
    static struct offload_run runs[MAX_SLOTS];
    static uint8_t buf[PKT_CAP];
    struct area again;
    int nruns;

    for (int i = 0; i < n; i++)
        pkts[i] = (struct offload_pkt){ .data = seg_at(ar, (size_t)i), .len = ar->a.lens[i] };
    nruns = offload_coalesce(pkts, (size_t)n, flags, next, runs);
    check(nruns >= 1 && nruns <= n);
    if (!area_alloc(&again, RT_STRIDE, RT_HEAD, RT_TAIL, ar->a.slots))
        return;
    for (int r = 0; r < nruns; r++) {
        long len = offload_run_copy(pkts, next, &runs[r], buf, sizeof(buf));
        struct vnet_hdr h;
        size_t i = runs[r].first;
        int segs;

        check(len == (long)(OFFLOAD_VNET_HDR_LEN + runs[r].len));
        check(vnet_hdr_parse(buf, (size_t)len, &h) == 0);
        segs = offload_segment(&h, buf + OFFLOAD_VNET_HDR_LEN, runs[r].len, &again.a);
        check(segs == (int)runs[r].count);
        for (int k = 0; k < segs; k++, i = next[i]) {
            check(again.a.lens[k] == ar->a.lens[i]);
            check(memcmp(seg_at(&again, (size_t)k), orig + i * ar->a.stride + ar->a.headroom,
                         again.a.lens[k]) == 0);
        }
        check(i == OFFLOAD_END);
    }
    area_free(&again);
}

/* Slots enough for the segments of a packet of len bytes (so that too
 * many is seldom the outcome), at most MAX_SLOTS. */
static size_t slots_for(const struct vnet_hdr *h, size_t len)
{
    size_t want = (len - h->hdr_len + h->gso_size - 1) / h->gso_size;

    return want < 1 ? 1 : want > MAX_SLOTS ? MAX_SLOTS : want;
}

/* Mode 1: byte 1 picks the type, bytes 2-3 the segment size. */
static void fuzz_segment_repaired(const uint8_t *data, size_t size)
{
    static const uint8_t types[] = { VIRTIO_NET_HDR_GSO_TCPV4, VIRTIO_NET_HDR_GSO_TCPV6,
                                     OFFLOAD_GSO_UDP_L4 };
    static uint8_t pkt[PKT_CAP];
    struct vnet_hdr h = { 0 };
    struct area ar;
    uint8_t *orig;
    size_t len;
    int n;

    if (size < 3)
        return;
    h.gso_type = types[data[0] % 3];
    h.gso_size = (uint16_t)(rd16(data + 1) % RT_GSO_MAX + 1);
    len = size - 3 < sizeof(pkt) ? size - 3 : sizeof(pkt);
    memcpy(pkt, data + 3, len);
    if (!repair(pkt, len, &h) ||
        !area_alloc(&ar, RT_STRIDE, RT_HEAD, RT_TAIL, slots_for(&h, len)))
        return;
    n = offload_segment(&h, pkt, len, &ar.a);
    if (n > 0) {
        check_segments(&h, pkt, len, &ar, n);
        orig = malloc(ar.bytes);
        if (orig && h.gso_type != OFFLOAD_GSO_UDP_L4) {
            memcpy(orig, ar.a.base, ar.bytes);
            round_trip(&ar, orig, n, data[0] & 0x80 ? OFFLOAD_COALESCE_VERIFY : 0);
        }
        free(orig);
    } else {
        check_untouched(&ar, 0);
    }
    area_free(&ar);
}

/* A merged run: a TCP super-packet whose segments carry the members'
 * payloads in order. */
static void check_merged(const struct offload_pkt *pkts, const size_t *next,
                         const struct offload_run *run)
{
    static uint8_t buf[PKT_CAP];
    struct vnet_hdr h;
    struct area ar;
    long len = offload_run_copy(pkts, next, run, buf, sizeof(buf));
    size_t i = run->first;
    int segs;

    check(len == (long)(OFFLOAD_VNET_HDR_LEN + run->len));
    check(vnet_hdr_parse(buf, (size_t)len, &h) == 0);
    check(h.gso_type == VIRTIO_NET_HDR_GSO_TCPV4 || h.gso_type == VIRTIO_NET_HDR_GSO_TCPV6);
    check(run->len <= OFFLOAD_MAX_IP_LEN);
    if (!area_alloc(&ar, RT_HEAD + h.hdr_len + h.gso_size + RT_TAIL, RT_HEAD, RT_TAIL,
                    run->count))
        return;
    segs = offload_segment(&h, buf + OFFLOAD_VNET_HDR_LEN, run->len, &ar.a);
    check(segs == (int)run->count);
    for (int k = 0; k < segs; k++, i = next[i]) {
        check(ar.a.lens[k] == pkts[i].len);
        check(memcmp(seg_at(&ar, (size_t)k) + run->hdr_len, pkts[i].data + run->hdr_len,
                     pkts[i].len - run->hdr_len) == 0);
    }
    area_free(&ar);
}

static void check_runs(const struct offload_pkt *pkts, size_t n, const size_t *next,
                       const struct offload_run *runs, int nruns)
{
    static bool seen[MAX_BATCH];
    static struct iovec iov[MAX_BATCH + 1];
    uint8_t vnet[OFFLOAD_VNET_HDR_LEN];

    check(nruns >= 1 && (size_t)nruns <= n);
    memset(seen, 0, sizeof(seen));
    for (int r = 0; r < nruns; r++) {
        size_t count = 0, total = 0, last = OFFLOAD_END;
        int niov = offload_run_iov(pkts, next, &runs[r], vnet, iov, MAX_BATCH + 1);

        for (size_t i = runs[r].first; i != OFFLOAD_END; last = i, i = next[i]) {
            check(i < n && !seen[i]);
            seen[i] = true;
            count++;
        }
        check(count == runs[r].count && last == runs[r].last);
        check(niov == (int)count + 1);
        for (int k = 0; k < niov; k++)
            total += iov[k].iov_len;
        check(total == OFFLOAD_VNET_HDR_LEN + runs[r].len);
        if (count > 1)
            check_merged(pkts, next, &runs[r]);
    }
    for (size_t i = 0; i < n; i++)
        check(seen[i]);
}

/* Makes p a TCP packet of len bytes (IPv4 without options unless its
 * first byte says 6). */
static void repair_tcp(uint8_t *p, size_t len)
{
    size_t l3 = p[0] >> 4 == 6 ? 40 : 20;

    if (len < 60)
        return;
    if (l3 == 40) {
        wr16(p + 4, (uint16_t)(len - 40));
        p[6] = IPPROTO_TCP;
    } else {
        p[0] = 0x45;
        wr16(p + 2, (uint16_t)len);
        p[6] &= 0x40;
        p[7] = 0;
        p[9] = IPPROTO_TCP;
    }
    if (p[l3 + 12] >> 4 < 5 || l3 + (size_t)(p[l3 + 12] >> 4) * 4 > len)
        p[l3 + 12] = 0x50;
}

/* Makes p the segment that follows prev: its headers, the next sequence
 * number, its own length. */
static void repair_next(uint8_t *p, size_t len, const struct offload_pkt *prev)
{
    struct offload_ip ip;
    size_t hdr;
    uint32_t seq;

    if (offload_parse(prev->data, prev->len, &ip) || ip.proto != IPPROTO_TCP)
        return;
    hdr = (size_t)ip.l3_len + ip.l4_hlen;
    if (len < hdr)
        return;
    memcpy(p, prev->data, hdr);
    if (ip.version == 4)
        wr16(p + 2, (uint16_t)len);
    else
        wr16(p + 4, (uint16_t)(len - 40));
    seq = (uint32_t)rd16(p + ip.l3_len + 4) << 16 | rd16(p + ip.l3_len + 6);
    seq += (uint32_t)(ip.ip_len - hdr);
    wr16(p + ip.l3_len + 4, (uint16_t)(seq >> 16));
    wr16(p + ip.l3_len + 6, (uint16_t)seq);
}

/* Mode 2: byte 1 holds the flags; then packets, each a 2-byte big-endian
 * word and bytes: its low 11 bits are the length, bit 15 asks for the
 * packet to be repaired into TCP, bit 14 into the previous one's next
 * segment. */
static bool same_run(const struct offload_run *a, const struct offload_run *b)
{
    return a->first == b->first && a->last == b->last && a->count == b->count &&
           a->hdr_len == b->hdr_len && a->len == b->len && a->vnet.flags == b->vnet.flags &&
           a->vnet.gso_type == b->vnet.gso_type && a->vnet.hdr_len == b->vnet.hdr_len &&
           a->vnet.gso_size == b->vnet.gso_size && a->vnet.csum_start == b->vnet.csum_start &&
           a->vnet.csum_offset == b->vnet.csum_offset;
}

static void fuzz_coalesce(const uint8_t *data, size_t size)
{
    static struct offload_pkt pkts[MAX_BATCH];
    static size_t next[MAX_BATCH];
    static struct offload_run runs[MAX_BATCH];
    unsigned flags;
    size_t n = 0;

    if (size < 1)
        return;
    flags = data[0] & OFFLOAD_COALESCE_VERIFY;
    data++, size--;
    while (size >= 2 && n < MAX_BATCH) {
        uint16_t word = rd16(data);
        size_t len = word % 2048;
        len = len < size - 2 ? len : size - 2;
        pkts[n].data = malloc(len ? len : 1);
        if (!pkts[n].data)
            break;
        memcpy(pkts[n].data, data + 2, len);
        if (word & 0x8000)
            repair_tcp(pkts[n].data, len);
        if ((word & 0x4000) && n > 0)
            repair_next(pkts[n].data, len, &pkts[n - 1]);
        pkts[n++].len = len;
        data += 2 + len, size -= 2 + len;
    }
    if (n > 0) {
        /* A worker's verification (offload_csum_ok, its word in csum_ok)
         * must give the runs coalescing's own would: both copies of the
         * batch, one with the word, are coalesced alike. */
        static struct offload_pkt told[MAX_BATCH];
        static size_t next2[MAX_BATCH];
        static struct offload_run runs2[MAX_BATCH];
        size_t copies = 0;
        for (; copies < n; copies++) {
            told[copies].data = malloc(pkts[copies].len ? pkts[copies].len : 1);
            if (!told[copies].data)
                break;
            memcpy(told[copies].data, pkts[copies].data, pkts[copies].len);
            told[copies].len = pkts[copies].len;
            told[copies].csum_ok = offload_csum_ok(told[copies].data, told[copies].len);
        }
        int nruns = offload_coalesce(pkts, n, flags, next, runs);
        check_runs(pkts, n, next, runs, nruns);
        if (copies == n && flags) {
            check(offload_coalesce(told, n, flags, next2, runs2) == nruns);
            for (int r = 0; r < nruns; r++)
                check(same_run(&runs[r], &runs2[r]));
            check(!memcmp(next, next2, n * sizeof(next[0])));
        }
        for (size_t i = 0; i < copies; i++)
            free(told[i].data);
    }
    for (size_t i = 0; i < n; i++)
        free(pkts[i].data);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 3) {
    case 0:
        fuzz_segment_raw(data + 1, size - 1);
        break;
    case 1:
        fuzz_segment_repaired(data + 1, size - 1);
        break;
    default:
        fuzz_coalesce(data + 1, size - 1);
        break;
    }
    return 0;
}
