/* SPDX-License-Identifier: MIT */
/* The TUN device: name checks, one /dev/net/tun open per queue, offloads.
 * The device is not persistent, so closing the last queue removes it and a
 * failed create leaves nothing behind. */
#include "tun/tun.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#define TUN_DEV_PATH "/dev/net/tun"

/* The kernel's own rules (dev_valid_name), plus '%': a name with "%d" would
 * make the kernel pick the name, and the caller would not know it. */
static bool tun_name_valid(const char *name)
{
    size_t len = strnlen(name, IFNAMSIZ);

    if (len == 0 || len >= IFNAMSIZ)
        return false;
    if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
        return false;
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c == '/' || c == ':' || c == '%' || isspace(c))
            return false;
    }
    return true;
}

/* Opens one queue. Only the first may create the device, and IFF_TUN_EXCL
 * makes the kernel refuse (EBUSY) if a device of that name appeared since
 * our check, instead of attaching to it. */
static int tun_open_queue(const char *ifname, short flags, bool first)
{
    struct ifreq ifr;
    int fd, err;

    fd = open(TUN_DEV_PATH, O_RDWR | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    ifr.ifr_flags = (short)(flags | (first ? IFF_TUN_EXCL : 0));
    if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
        err = (first && errno == EBUSY) ? -EEXIST : -errno;
        close(fd);
        return err;
    }
    return fd;
}

/* TUNSETIFF would attach to an existing tun of that name, so a name in use
 * is refused first. The lookup is if_nametoindex(3)'s, done here because
 * that one also answers 0 when it fails itself (no socket free, say), with
 * an errno that does not tell the two apart. */
static int tun_name_free(const char *ifname)
{
    struct ifreq ifr;
    int s, err = 0;

    s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return -errno;
    memset(&ifr, 0, sizeof(ifr));
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    if (ioctl(s, SIOCGIFINDEX, &ifr) == 0)
        err = -EEXIST;
    else if (errno != ENODEV)
        err = -errno;
    close(s);
    return err;
}

int tun_create(const char *ifname, const struct tun_options *opt, int *fds)
{
    short flags = IFF_TUN | IFF_NO_PI;
    unsigned i;
    int fd, err;

    if (!ifname || !opt || !fds || opt->queues == 0)
        return -EINVAL;
    for (i = 0; i < opt->queues; i++)
        fds[i] = -1;
    if (!tun_name_valid(ifname))
        return -EINVAL;
    err = tun_name_free(ifname);
    if (err)
        return err;
    if (opt->vnet_hdr)
        flags |= IFF_VNET_HDR;
    if (opt->queues > 1)
        flags |= IFF_MULTI_QUEUE;
    for (i = 0; i < opt->queues; i++) {
        fd = tun_open_queue(ifname, flags, i == 0);
        if (fd < 0) {
            tun_close(fds, i);
            return fd;
        }
        fds[i] = fd;
    }
    return 0;
}

int tun_set_offload(int fd, unsigned flags)
{
    if (ioctl(fd, TUNSETOFFLOAD, (unsigned long)flags) < 0)
        return -errno;
    return 0;
}

void tun_close(int *fds, unsigned n)
{
    if (!fds)
        return;
    for (unsigned i = 0; i < n; i++) {
        if (fds[i] >= 0)
            close(fds[i]);
        fds[i] = -1;
    }
}
