/* SPDX-License-Identifier: MIT */
/* The TUN device: opening /dev/net/tun once per queue, the vnet header and
 * offloads, closing. Owns nothing but file descriptors; addresses, MTU and
 * link state are rtnetlink's business (tun/netlink.h). */
#ifndef DDPNET_TUN_H
#define DDPNET_TUN_H

#include <stdbool.h>

/* The packets the kernel queues on a TUN device for its reader before it
 * drops (txqueuelen; the kernel's default is 500). A receiver's ACKs for
 * a long fat path arrive in bursts while the daemon is busy decrypting:
 * the default dropped many of them, this almost none (issue 44;
 * bench/README.md). */
#define TUN_TXQUEUELEN 5000u

struct tun_options {
    bool vnet_hdr;      /* each packet is preceded by a struct virtio_net_hdr */
    unsigned queues;    /* >= 1; more than one makes a multi-queue device */
};

/* Creates the TUN interface ifname (IFF_TUN|IFF_NO_PI, plus IFF_VNET_HDR and
 * IFF_MULTI_QUEUE as asked) and stores one non-blocking, close-on-exec
 * descriptor per queue in fds[0..opt->queues-1]. The interface lives as long
 * as one descriptor is open.
 * Returns 0, or: -EINVAL for a bad name (empty, IFNAMSIZ or longer, '/', ':',
 * '%', whitespace, "." or "..") or options; -EEXIST if an interface of that
 * name already exists (never attaches to it); -EPERM/-EACCES when not
 * permitted; another -errno from open/ioctl. On failure nothing stays open
 * and fds[0..queues-1] are -1. */
int tun_create(const char *ifname, const struct tun_options *opt, int *fds);

/* TUNSETOFFLOAD: which offloads (TUN_F_*) the reader of fd can take.
 * Returns 0 or -errno (-EINVAL for flags the kernel does not know). */
int tun_set_offload(int fd, unsigned flags);

/* Closes fds[0..n-1] that are open and sets each to -1. */
void tun_close(int *fds, unsigned n);

#endif
