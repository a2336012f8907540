/* SPDX-License-Identifier: MIT */
/* The rules enforced (config/rules.h): each data packet a peer sends us,
 * once it is authentic and its source is the peer's (rx_inner), and each
 * packet our own applications write to ddp0 for a peer (datapath_from_tun),
 * is let through or refused. The receiver's check is the one that holds:
 * a sender cannot talk it out of it; the sender's own check only gives
 * its applications a quick refusal (ICMP "administratively prohibited",
 * datapath.c) instead of a timeout.
 *
 * No rule written: every packet passes, nothing is looked at or kept.
 * Otherwise a packet passes when it belongs to a connection of the table
 * (model/conntrack.h: replies included), is an ICMP error about one, or
 * opens a connection a rule allows (whose entry it then makes): the rule
 * is matched with the opener's groups as source, the other end's as
 * destination, the packet's destination port. A TCP segment without SYN
 * that belongs to no known connection (one open before the rules were,
 * or before a restart) is taken as a reply if the rules would let the
 * other end open it, as the kernel's conntrack takes one in "loose" mode.
 * IPv4 fragments after the first and IPv6 extension headers are refused
 * once rules are written (no ports to match); other protocols match
 * rules of `any` protocol only.
 *
 * After a reload (device_rules_changed bumps the table's generation) a
 * connection's next packet is matched again: one whose rule is gone is
 * forgotten and that packet refused, at both ends; the others carry on.
 *
 * Under the engine lock. */
#ifndef DDPNET_FILTER_H
#define DDPNET_FILTER_H

#include <stdbool.h>
#include <stdint.h>

struct device;
struct peer;

/* Whether the IP packet ip[0..len) from our applications to p may go. */
bool filter_out(struct device *dev, struct peer *p, const uint8_t *ip, uint32_t len,
                uint64_t now);
/* Whether the IP packet ip[0..len) that p sent us may reach ddp0. */
bool filter_in(struct device *dev, struct peer *p, const uint8_t *ip, uint32_t len,
               uint64_t now);
/* The connection table's released (model/conntrack.h): an entry made by
 * peer owner's packet is gone, one fewer against its bound. ctx: the
 * device. */
void filter_released(void *ctx, uint32_t owner);

#endif
