/* SPDX-License-Identifier: MIT */
/* ICMP errors that ddp0 hands back to the local sender of a packet, as a
 * router would: "destination unreachable" for a member that does not
 * answer (so that a connect fails at once instead of hanging), "administratively
 * prohibited" for what the rules refuse (filter.h), and
 * "fragmentation needed" / "packet too big" with an MTU (so that the
 * kernel caches a smaller path MTU for that destination).
 *
 * Pure: builds the packet into a caller's buffer; the data path writes it
 * to ddp0. The error comes from the original destination's address (the
 * peer's overlay address): the kernel matches an ICMP error by the header
 * it quotes, and a source that is one of our own addresses would be
 * dropped as martian. As RFC 1812 and RFC 4443 ask, no error answers an
 * ICMP error, a fragment other than the first, or a packet from an
 * unspecified or multicast source. Unlike a router, ddp0 does not
 * fragment an IPv4 packet without DF: it says "fragmentation needed" to
 * it too, and the sender's kernel (which takes that for any packet to the
 * destination) fragments at the source. */
#ifndef DDPNET_ICMP_H
#define DDPNET_ICMP_H

#include <stddef.h>
#include <stdint.h>

enum icmp_error {
    ICMP_ERROR_UNREACHABLE,   /* IPv4 host unreachable; IPv6 address unreachable */
    ICMP_ERROR_TOO_BIG,       /* IPv4 fragmentation needed; IPv6 packet too big */
    /* IPv4 communication administratively prohibited (code 13); IPv6
     * administratively prohibited (code 1): a rule refuses it (filter.h).
     * Linux takes both as a hard error: a connect fails at once. */
    ICMP_ERROR_PROHIBITED,
};

/* How much of the original an error quotes at most: the whole error fits
 * the minimum MTU of each family (576 for IPv4 by RFC 1812, 1280 for IPv6). */
#define ICMP4_ERROR_MAX 576u
#define ICMP6_ERROR_MAX 1280u

/* Writes to out (cap bytes, ICMP6_ERROR_MAX is always enough) the error of
 * `kind` about the IP packet ip[0..len) that a local sender wrote to ddp0;
 * mtu is the MTU to report for ICMP_ERROR_TOO_BIG. Returns the error's
 * length, or -EINVAL when this packet must get no error (see above, or not
 * an IP packet), or -ENOSPC. */
long icmp_error_build(uint8_t *out, size_t cap, const uint8_t *ip, size_t len,
                      enum icmp_error kind, uint32_t mtu);

#endif
