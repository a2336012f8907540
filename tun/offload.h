/* SPDX-License-Identifier: MIT */
/* TUN offloads in userspace, as pure functions over bytes: the virtio-net
 * header that precedes every packet on a TUN opened with IFF_VNET_HDR, the
 * Internet checksum, segmentation of the TSO/USO super-packets the kernel
 * hands over (send side) and coalescing of received TCP segments into
 * super-packets the kernel takes at once (receive side, GRO-like).
 * No I/O, no allocation, no state between calls. UDP segments are cut
 * (USO) but never coalesced: nothing here emits gso_type UDP_L4. */
#ifndef DDPNET_OFFLOAD_H
#define DDPNET_OFFLOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/* --- the virtio-net header ------------------------------------------------ */

/* struct virtio_net_hdr on the wire of a TUN fd: 10 bytes, no num_buffers. */
#define OFFLOAD_VNET_HDR_LEN   10u
/* Values from <linux/virtio_net.h> and <linux/if_tun.h> that older headers
 * (Debian 12's) lack: USO, Linux 6.2 and later. */
#define OFFLOAD_GSO_UDP_L4     5u
#define OFFLOAD_TUN_F_USO4     0x20u
#define OFFLOAD_TUN_F_USO6     0x40u
/* The largest IP packet we build or accept as a super-packet: a 16-bit
 * IPv4 total length (IPv6 is held to the same, as the kernel's GRO does). */
#define OFFLOAD_MAX_IP_LEN     65535u

/* The header's fields in host order. flags: VIRTIO_NET_HDR_F_*; gso_type:
 * VIRTIO_NET_HDR_GSO_* (NONE, TCPV4, TCPV6, OFFLOAD_GSO_UDP_L4, | ECN). */
struct vnet_hdr {
    uint8_t flags;
    uint8_t gso_type;
    uint16_t hdr_len;       /* a hint: bytes of headers (the kernel may say more) */
    uint16_t gso_size;      /* L4 payload bytes per segment */
    uint16_t csum_start;    /* checksum covers pkt[csum_start..end) ... */
    uint16_t csum_offset;   /* ... and goes at csum_start + csum_offset */
};

/* The 16-bit fields are in the host's native byte order: that is what TUN
 * uses while neither TUNSETVNETLE nor TUNSETVNETBE is set (the default;
 * little-endian on x86 and arm64). Parse returns -EINVAL when len is
 * shorter than OFFLOAD_VNET_HDR_LEN; write stores exactly that many bytes. */
int vnet_hdr_parse(const uint8_t *buf, size_t len, struct vnet_hdr *h);
void vnet_hdr_write(uint8_t *buf, const struct vnet_hdr *h);

/* --- checksums (RFC 1071) ------------------------------------------------- */

/* One's-complement sum of p[0..len) as big-endian 16-bit words, added to
 * sum; folded to 16 bits, not complemented. A buffer may be summed in
 * pieces as long as every piece but the last has an even length. The
 * checksum to store (big-endian) is ~result. */
uint16_t offload_csum_add(uint16_t sum, const uint8_t *p, size_t len);
/* Sum of the TCP/UDP pseudo-header: src and dst of addr_len bytes (4 or 16),
 * the protocol and the L4 length (header + payload). */
uint16_t offload_csum_pseudo(const uint8_t *src, const uint8_t *dst, size_t addr_len,
                             uint8_t proto, uint32_t l4_len);

/* The SIMD paths the checksum (and so segmenting and coalescing, which sum
 * as they copy) may take where the CPU runs them: AVX2 by default;
 * $DDPNET_CPU=baseline in the environment (read at the first checksum)
 * turns it off. offload_simd_paths sets the mask (ANDed with what the CPU
 * runs) for tests and benchmarks, and returns the one before. */
#define OFFLOAD_CPU_ENV      "DDPNET_CPU"
#define OFFLOAD_CPU_BASELINE "baseline"
#define OFFLOAD_SIMD_AVX2    1u
unsigned offload_simd_paths(unsigned mask);

/* --- headers -------------------------------------------------------------- */

/* What offload_parse finds in an IP packet carrying TCP or UDP. */
struct offload_ip {
    uint8_t version;        /* 4 or 6 */
    uint8_t proto;          /* IPPROTO_TCP or IPPROTO_UDP */
    uint16_t l3_len;        /* IP header bytes: the L4 header starts here */
    uint16_t l4_hlen;       /* TCP header (data offset) or UDP header bytes */
    uint32_t ip_len;        /* packet length by the IP header, <= len */
};

/* Parses an IPv4 (options allowed, not a fragment) or IPv6 (no extension
 * headers) packet whose next protocol is TCP or UDP, with the whole L4
 * header inside the IP length. Returns 0, or -EINVAL for anything else
 * (another version or protocol, a fragment, lengths beyond len). Bytes
 * after the IP length (WireGuard's zero padding) are allowed. */
int offload_parse(const uint8_t *pkt, size_t len, struct offload_ip *ip);

/* A packet's flow: a hash of its addresses and, for TCP and UDP
 * (offload_parse), its protocol and ports; of the addresses alone for
 * anything else, and 0 for what is not IP. Packets of one connection get
 * one value, so work split by it keeps each connection's order. Not
 * keyed: it picks a thread, and a sender choosing its flows' values only
 * crowds its own packets together. */
uint32_t offload_flow_hash(const uint8_t *pkt, size_t len);

/* --- segmentation: one TUN read -> complete packets ----------------------- */

/* Where offload_segment writes: segment i at base + i * stride + headroom,
 * and each segment must leave tailroom bytes free after it within its
 * slot (room to seal it in place: headroom for the transport header,
 * tailroom for padding and tag). lens[i] receives segment i's length. */
struct offload_area {
    uint8_t *base;
    size_t stride;
    size_t headroom;
    size_t tailroom;
    size_t slots;           /* slots in base and entries in lens */
    uint16_t *lens;
};

/* Cuts the packet pkt[0..len) that followed the vnet header h into
 * complete IP packets:
 *  - gso_type TCPV4/TCPV6 (ECN allowed) or OFFLOAD_GSO_UDP_L4: one segment
 *    per gso_size bytes of L4 payload (the last may be shorter), each with
 *    a copy of the headers and its IPv4 total length, id (+1 per segment)
 *    and header checksum, or IPv6 payload length; TCP sequence number
 *    advanced, FIN and PSH kept only on the last segment, CWR only on the
 *    first; UDP length; and a full TCP/UDP checksum computed afresh;
 *  - GSO NONE with VIRTIO_NET_HDR_F_NEEDS_CSUM: one segment with its
 *    checksum completed over csum_start..end (no IP parsing);
 *  - neither: one segment, a copy of the packet.
 * Returns the number of segments (>= 1), or, with nothing written:
 * -EINVAL for a NULL argument, an area without slots, or a malformed
 * packet or header: len 0; another gso_type; a
 * GSO packet that offload_parse refuses, whose IP version or protocol does
 * not match gso_type, whose IP length is not len, that has no payload, or
 * whose gso_size is 0; hdr_len beyond len or (when not 0) short of the
 * headers; with NEEDS_CSUM, csum_start/csum_offset outside the packet, an
 * odd csum_offset or, for GSO, not at the TCP/UDP checksum; more segments
 * than area->slots.
 * -EMSGSIZE when a segment with headroom and tailroom exceeds stride, or
 * is longer than OFFLOAD_MAX_IP_LEN.
 * hdr_len is otherwise ignored: the kernel may report its whole linear
 * part there, so the headers are measured from the packet itself. */
int offload_segment(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                    const struct offload_area *area);

/* What offload_segment would return for the same arguments, with nothing
 * written: the number of segments (and the last one's length in
 * *last_len, when not NULL), or the same error. For a caller that must
 * know the count before the cut is made (elsewhere, later: WireGuard's
 * counters are taken before a worker seals). */
int offload_segment_count(const struct vnet_hdr *h, const uint8_t *pkt, size_t len,
                          const struct offload_area *area, size_t *last_len);

/* Fits TCP in pkt (len bytes, as described by *h) to packets of at most
 * mtu bytes, by rewriting *h only: a TCP super-packet gets a smaller
 * gso_size; a lone TCP packet (GSO NONE) longer than mtu becomes a
 * super-packet of mtu-sized segments (TCP takes any segment size, so a
 * path narrower than the sender thinks costs no loss). offload_segment
 * then cuts it, with checksums computed afresh. Returns true when *h was
 * changed; anything else (UDP, packets that fit, headers alone beyond mtu,
 * what offload_parse refuses) is left as it is. */
bool offload_fit_tcp(struct vnet_hdr *h, const uint8_t *pkt, size_t len, size_t mtu);

/* --- coalescing: decrypted packets -> TUN writes -------------------------- */

/* One received packet. Coalescing may rewrite the headers of data[] and
 * trims len to the IP length of every packet offload_parse accepts.
 * csum_ok: offload_csum_ok said true of these very bytes (where they were
 * decrypted, with the data still in that core's cache), so that
 * OFFLOAD_COALESCE_VERIFY need not sum them again. */
struct offload_pkt {
    uint8_t *data;
    size_t len;
    bool csum_ok;
};

/* Whether pkt[0..len) is a TCP segment with payload (offload_parse) whose
 * checksums OFFLOAD_COALESCE_VERIFY would accept: TCP, and the IPv4
 * header's. False for anything else, which coalescing never verifies. */
bool offload_csum_ok(const uint8_t *pkt, size_t len);

/* next[i] of the last member of a run. */
#define OFFLOAD_END SIZE_MAX

/* One TUN write: the vnet header, then packet `first` whole, then for each
 * further member (next[first], next[next[first]], ...) its bytes
 * data[hdr_len..len). */
struct offload_run {
    struct vnet_hdr vnet;   /* all 0 for a single packet */
    size_t first;           /* index of the first member in pkts[] */
    size_t last;            /* index of the last member */
    size_t count;           /* members, >= 1 */
    size_t hdr_len;         /* IP + TCP header bytes of every member */
    size_t len;             /* length of the resulting IP packet */
};

/* Runs offload_coalesce keeps open at once within a batch: while that
 * many are, a segment of another flow passes through alone. */
#define OFFLOAD_COALESCE_FLOWS 16u

/* Verify each TCP segment's checksums (TCP, and IPv4 header) before
 * merging it, unless its csum_ok says they were; one that fails passes
 * through alone, for the kernel to drop. Without this flag a merged segment's checksums are never looked
 * at again (the AEAD vouched for the bytes, not for what the sender's
 * stack put in them). */
#define OFFLOAD_COALESCE_VERIFY 1u

/* Groups the batch pkts[0..n) into TUN writes. TCP segments of one flow
 * (same addresses and ports, IPv4 without options or fragments or IPv6
 * without extension headers; same TOS/TTL/DF or traffic class/flow
 * label/hop limit; same ACK, window, TCP options and flags; no SYN, FIN,
 * RST, URG or CWR; payload not empty) merge when each follows the
 * previous in sequence, all payloads are as long as the first but the
 * last (which may be shorter), only the last carries PSH and the total
 * stays within OFFLOAD_MAX_IP_LEN. Flows may interleave; a TCP packet of
 * a flow that cannot extend that flow's run ends it, so each flow keeps
 * its order.
 * Everything else passes through alone with a plain vnet header.
 * A merged run's first packet gets the total length (and a new IPv4
 * header checksum), the last member's PSH and the pseudo-header sum in
 * its TCP checksum field; its vnet header says NEEDS_CSUM at the TCP
 * checksum and gso_type TCPV4/TCPV6 with gso_size the first payload
 * length. Fills next[0..n) (each run a list from run->first) and
 * runs[0..return value), in the order of each run's first packet; n runs
 * at most. Returns the number of runs, or -EINVAL for n == 0 or above
 * INT_MAX, an unknown flag or a NULL argument (nothing touched then). */
int offload_coalesce(struct offload_pkt *pkts, size_t n, unsigned flags, size_t *next,
                     struct offload_run *runs);

/* The iovecs of one run for writev: iov[0] is vnet (filled here from
 * run->vnet), then the members' bytes. Returns the number of iovecs
 * (run->count + 1), or -EMSGSIZE when max_iov is too small. */
int offload_run_iov(const struct offload_pkt *pkts, const size_t *next,
                    const struct offload_run *run, uint8_t vnet[OFFLOAD_VNET_HDR_LEN],
                    struct iovec *iov, size_t max_iov);
/* The same bytes copied into buf: the vnet header and the IP packet.
 * Returns their length, or -EMSGSIZE when cap is too small. A test seam
 * (the tests and the fuzzer compare it with offload_run_iov's). */
long offload_run_copy(const struct offload_pkt *pkts, const size_t *next,
                      const struct offload_run *run, uint8_t *buf, size_t cap);

#endif
