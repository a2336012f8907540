/* SPDX-License-Identifier: MIT */
/* Text forms the cluster file uses: IP addresses, networks with a prefix,
 * decimal numbers, node names, hostnames and endpoints. Pure functions over
 * strings; nothing here resolves a name. Where a parse fails, *why (when
 * not NULL) receives a short lowercase reason for the error message. */
#ifndef DDPNET_CONFIG_ADDR_H
#define DDPNET_CONFIG_ADDR_H

#include <stdbool.h>

#include "config/cluster.h"

#define CLUSTER_PREFIX_MAX_IPV4 30u   /* /31 and /32 leave no host address */
#define CLUSTER_PREFIX_MAX_IPV6 127u  /* /128 is only the network address */

/* Decimal digits only (no sign, no spaces). 0, -EINVAL for anything but
 * digits, -ERANGE when the value exceeds max. */
int cluster_uint_parse(const char *s, unsigned max, unsigned *out);

/* An IPv4 or IPv6 literal (no zone, no brackets). 0 or -EINVAL. */
int cluster_addr_parse(const char *s, struct cluster_addr *out);
/* "ADDR/LEN" with LEN in 1..CLUSTER_PREFIX_MAX_IPV4 or
 * 1..CLUSTER_PREFIX_MAX_IPV6. Host bits are left as written. 0 or -EINVAL. */
int cluster_prefix_parse(const char *s, struct cluster_addr *out,
                         unsigned *prefix, const char **why);
void cluster_addr_mask(struct cluster_addr *a, unsigned prefix);
bool cluster_addr_equal(const struct cluster_addr *a,
                        const struct cluster_addr *b);
/* Same family and the first prefix bits equal. */
bool cluster_addr_in_network(const struct cluster_addr *a,
                             const struct cluster_addr *net, unsigned prefix);
/* Every host bit set: the IPv4 broadcast address (never true for IPv6). */
bool cluster_addr_is_broadcast(const struct cluster_addr *a, unsigned prefix);
/* 127.0.0.0/8 or ::1 (an IPv4-mapped 127/8 too). */
bool cluster_addr_is_loopback(const struct cluster_addr *a);

/* Node name: letters, digits, '-' and '.', 1..CLUSTER_NAME_MAX characters,
 * no empty label, not starting or ending with '-' or '.'. */
bool cluster_name_valid(const char *s);
/* A DNS hostname (RFC 1123): labels of letters, digits and '-', 1..63
 * characters, not starting or ending with '-', at most CLUSTER_HOST_MAX in
 * all, one trailing dot allowed, last label not all digits. */
bool cluster_hostname_valid(const char *s);
/* "IPV4:PORT", "[IPV6]:PORT" or "HOSTNAME:PORT", port 1..65535. */
int cluster_endpoint_parse(const char *s, struct cluster_endpoint *out,
                           const char **why);

#endif
