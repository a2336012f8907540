/* SPDX-License-Identifier: MIT */
/* rtnetlink over libmnl: the few link, address and route requests the daemon
 * makes (never by running `ip`). One context per user, no globals; every
 * request asks for an ack and returns the kernel's answer as 0 or -errno. */
#ifndef DDPNET_NETLINK_H
#define DDPNET_NETLINK_H

#include <stdbool.h>
#include <stdint.h>

struct mnl_socket;

struct nl {
    struct mnl_socket *sock;
    unsigned seq;       /* sequence number of the last request sent */
    unsigned portid;
};

/* Opens and binds a NETLINK_ROUTE socket (close-on-exec) in the caller's
 * network namespace. Returns 0 or -errno; on failure nl->sock is NULL. */
int nl_open(struct nl *nl);
/* Closes the socket; safe on a closed or never-opened (zeroed) context. */
void nl_close(struct nl *nl);

/* Every call below returns -EINVAL for a NULL or closed context or a bad
 * argument, without sending anything. */

/* Index of ifname (> 0), or -ENODEV. */
int nl_link_index(struct nl *nl, const char *ifname);
/* MTU of the link into *mtu. */
int nl_link_mtu(struct nl *nl, int ifindex, unsigned *mtu);
int nl_link_set_mtu(struct nl *nl, int ifindex, unsigned mtu);
/* The most segments the kernel puts in one TSO/USO packet for the link
 * (what a reader of a TUN gets at once). Recent kernels (6.18 here) take
 * a new value on a live link; older ones may refuse or ignore it. Reading
 * it gives -EOPNOTSUPP where the kernel does not report it. Reading is a
 * test seam (the daemon only sets it), as is nl_link_txqlen's. */
int nl_link_gso_max_segs(struct nl *nl, int ifindex, unsigned *segs);
int nl_link_set_gso_max_segs(struct nl *nl, int ifindex, unsigned segs);
/* The link's transmit queue, in packets (txqueuelen): for ddp0, what the
 * kernel holds for the daemon to read before it drops. 0 is refused.
 * Reading it is a test seam: the daemon only sets it. */
int nl_link_txqlen(struct nl *nl, int ifindex, unsigned *len);
int nl_link_set_txqlen(struct nl *nl, int ifindex, unsigned len);
/* The packets the link dropped on transmit since it was made (its
 * statistics' tx_dropped; for a TUN device, packets its queue had no room
 * for). -EOPNOTSUPP where the answer holds no statistics. */
int nl_link_tx_dropped(struct nl *nl, int ifindex, uint64_t *dropped);
/* Sets or clears IFF_UP. */
int nl_link_set_up(struct nl *nl, int ifindex, bool up);
/* Adds addr/prefix (family AF_INET: 4 bytes, prefix <= 32; AF_INET6: 16
 * bytes, prefix <= 128). -EEXIST if the address is already there,
 * -EAFNOSUPPORT for another family. */
int nl_addr_add(struct nl *nl, int ifindex, int family, const void *addr,
                unsigned prefix);
/* Makes the one IPv4 neighbour entry of a point-to-point link (the
 * kernel keys them all 0.0.0.0) permanent. The kernel's neighbour table
 * is one for every namespace of the machine (gc_thresh3: 1024 entries by
 * default); once others fill it, it evicts NOARP entries first, and a
 * link whose entry is gone fails every send (ENOBUFS) until there is
 * room again. A permanent entry is neither evicted nor counted. Lost
 * when the link goes down. */
int nl_neigh_pin(struct nl *nl, int ifindex);
/* Deletes the link ifname (-ENODEV if there is none). */
int nl_link_delete(struct nl *nl, const char *ifname);
/* MTU of the route the kernel would take to dst (4 or 16 bytes by family):
 * the route's own MTU metric if it has one, else its output link's MTU.
 * -ENETUNREACH and the like when there is no route. */
int nl_route_mtu(struct nl *nl, int family, const void *dst, unsigned *mtu);
/* A route to dst/prefix through ifindex (no gateway), in the main table:
 * added (-EEXIST when there is one) or deleted (-ESRCH when there is
 * none). Routes to what a member carries (issue 60). */
int nl_route_add(struct nl *nl, int ifindex, int family, const void *dst, unsigned prefix);
int nl_route_del(struct nl *nl, int ifindex, int family, const void *dst, unsigned prefix);
/* The link the kernel would send to dst through (its output interface). */
int nl_route_oif(struct nl *nl, int family, const void *dst, int *ifindex);

#endif
