/* SPDX-License-Identifier: MIT */
/* ECN (RFC 3168) on an IP packet read from or written to ddp0: the two
 * low bits of IPv4's TOS or IPv6's traffic class. Marking a packet
 * Congestion Experienced (CE) is how a queue that is filling tells an
 * ECN-capable transport to slow down without dropping it (loop/codel.h). */
#ifndef DDPNET_ECN_H
#define DDPNET_ECN_H

#include <stdbool.h>
#include <stdint.h>

#define ECN_NOT_ECT 0u
#define ECN_ECT1    1u
#define ECN_ECT0    2u
#define ECN_CE      3u

/* The ECN codepoint of the IPv4 or IPv6 packet ip[0..len), or -1 if it
 * is neither (or too short to say). */
int ecn_get(const uint8_t *ip, uint32_t len);

/* Marks ip[0..len) CE if its transport said it takes ECN (ECT(0) or
 * ECT(1), or CE already), keeping an IPv4 header's checksum right.
 * Returns false, and changes nothing, for a packet that is not ECN-capable
 * (it must be dropped to signal congestion) or is not IP. */
bool ecn_mark_ce(uint8_t *ip, uint32_t len);

#endif
