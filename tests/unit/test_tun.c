/* SPDX-License-Identifier: MIT */
/* Tests of tun/: the TUN device and the rtnetlink calls, against the real
 * kernel. Each test runs in a network namespace of its own (root and
 * /dev/net/tun needed; otherwise every test reports itself skipped). What
 * the code under test set is read back by other means where possible:
 * ioctls, getifaddrs(3), packets through the device. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/if_tun.h>
#include <linux/rtnetlink.h>
#include <linux/virtio_net.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tun/netlink.h"
#include "tun/tun.h"

#define IFNAME      "ddptest0"
#define TEST_MTU    1420u
#define MAX_QUEUES  4u
#define WAIT_MS     3000
#define PKT_MAX     65536
#define NOBODY_ID   65534
#define MISSING_IFINDEX 9999

/* Why the tests cannot run here, or NULL; set once by the group setup. */
static const char *env_skip_reason;

struct fx {
    struct nl nl;
    int fds[MAX_QUEUES];
    unsigned nfds;
    int ifindex;
    _Alignas(8) uint8_t pkt[PKT_MAX];
};

static const uint8_t v4_local[4] = { 10, 77, 0, 1 };
static const uint8_t v4_peer[4] = { 10, 77, 0, 2 };

static void addr6(uint8_t out[16], const char *text)
{
    assert_int_equal(inet_pton(AF_INET6, text, out), 1);
}

/* --- environment -------------------------------------------------------- */

static int group_setup(void **state)
{
    (void)state;
    if (geteuid() != 0)
        env_skip_reason = "not root";
    else if (access("/dev/net/tun", R_OK | W_OK) != 0)
        env_skip_reason = "no usable /dev/net/tun";
    else if (unshare(CLONE_NEWNET) != 0)
        env_skip_reason = "unshare(CLONE_NEWNET) failed";
    return 0;
}

/* A fresh namespace per test, with lo up (set through the code under test). */
static int fx_setup(void **state)
{
    struct fx *fx = calloc(1, sizeof(*fx));
    int lo;

    if (!fx)
        return -1;
    for (unsigned i = 0; i < MAX_QUEUES; i++)
        fx->fds[i] = -1;
    *state = fx;
    if (env_skip_reason)
        return 0;
    if (unshare(CLONE_NEWNET) != 0) {
        env_skip_reason = "unshare(CLONE_NEWNET) failed";
        return 0;
    }
    if (nl_open(&fx->nl) != 0)
        return -1;
    lo = nl_link_index(&fx->nl, "lo");
    if (lo <= 0 || nl_link_set_up(&fx->nl, lo, true) != 0)
        return -1;
    return 0;
}

static int fx_teardown(void **state)
{
    struct fx *fx = *state;

    tun_close(fx->fds, MAX_QUEUES);
    nl_close(&fx->nl);
    free(fx);
    return 0;
}

static struct fx *fx_get(void **state)
{
    if (env_skip_reason) {
        print_message("skipped: %s\n", env_skip_reason);
        skip();
    }
    return *state;
}

static int fx_create(struct fx *fx, bool vnet_hdr, unsigned queues)
{
    struct tun_options opt = { .vnet_hdr = vnet_hdr, .queues = queues };

    fx->nfds = queues;
    return tun_create(IFNAME, &opt, fx->fds);
}

/* ddptest0 with TEST_MTU, 10.77.0.1/16, fd77::1/64, up. */
static void fx_configure(struct fx *fx, bool vnet_hdr)
{
    uint8_t v6[16];

    addr6(v6, "fd77::1");
    assert_int_equal(fx_create(fx, vnet_hdr, 1), 0);
    fx->ifindex = nl_link_index(&fx->nl, IFNAME);
    assert_true(fx->ifindex > 0);
    assert_int_equal(nl_link_set_mtu(&fx->nl, fx->ifindex, TEST_MTU), 0);
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET, v4_local, 16), 0);
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET6, v6, 64), 0);
    assert_int_equal(nl_link_set_up(&fx->nl, fx->ifindex, true), 0);
}

/* --- independent views of the interface ------------------------------------ */

static int ifreq_get(const char *name, unsigned long req, struct ifreq *ifr)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int ret;

    assert_true(s >= 0);
    memset(ifr, 0, sizeof(*ifr));
    snprintf(ifr->ifr_name, sizeof(ifr->ifr_name), "%s", name);
    ret = ioctl(s, req, ifr);
    close(s);
    return ret;
}

static int if_mtu(const char *name)
{
    struct ifreq ifr;

    assert_int_equal(ifreq_get(name, SIOCGIFMTU, &ifr), 0);
    return ifr.ifr_mtu;
}

static short if_flags(const char *name)
{
    struct ifreq ifr;

    assert_int_equal(ifreq_get(name, SIOCGIFFLAGS, &ifr), 0);
    return ifr.ifr_flags;
}

static short tun_flags(int fd)
{
    struct ifreq ifr;

    memset(&ifr, 0, sizeof(ifr));
    assert_int_equal(ioctl(fd, TUNGETIFF, &ifr), 0);
    assert_string_equal(ifr.ifr_name, IFNAME);
    return ifr.ifr_flags;
}

static unsigned mask_prefix(const struct sockaddr *mask)
{
    const uint8_t *p;
    size_t len;
    unsigned bits = 0;

    if (mask->sa_family == AF_INET) {
        p = (const uint8_t *)&((const struct sockaddr_in *)mask)->sin_addr;
        len = 4;
    } else {
        p = (const uint8_t *)&((const struct sockaddr_in6 *)mask)->sin6_addr;
        len = 16;
    }
    for (size_t i = 0; i < len; i++)
        bits += (unsigned)__builtin_popcount(p[i]);
    return bits;
}

/* Whether getifaddrs(3) lists addr/prefix on name. */
static bool has_addr(const char *name, int family, const void *addr, unsigned prefix)
{
    struct ifaddrs *list, *it;
    bool found = false;

    assert_int_equal(getifaddrs(&list), 0);
    for (it = list; it && !found; it = it->ifa_next) {
        const void *a;
        size_t len;

        if (!it->ifa_addr || it->ifa_addr->sa_family != family ||
            strcmp(it->ifa_name, name) != 0)
            continue;
        if (family == AF_INET) {
            a = &((const struct sockaddr_in *)it->ifa_addr)->sin_addr;
            len = 4;
        } else {
            a = &((const struct sockaddr_in6 *)it->ifa_addr)->sin6_addr;
            len = 16;
        }
        found = memcmp(a, addr, len) == 0 && it->ifa_netmask &&
                mask_prefix(it->ifa_netmask) == prefix;
    }
    freeifaddrs(list);
    return found;
}

/* --- packets -------------------------------------------------------------- */

static uint16_t csum16(const void *data, size_t len)
{
    const uint8_t *p = data;
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)(p[i] << 8 | p[i + 1]);
    if (len & 1)
        sum += (uint32_t)(p[len - 1] << 8);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return htons((uint16_t)~sum);
}

static long ms_since(const struct timespec *t0)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000 + (t.tv_nsec - t0->tv_nsec) / 1000000;
}

typedef bool (*pkt_match_fn)(const struct iphdr *ip, size_t len);

/* Reads packets from fd (each after `skip` bytes of header) until one is
 * IPv4 and match() accepts it; the kernel may send others first (IPv6
 * router solicitations, MLD). Each is read at an offset that aligns its IP
 * header. Returns that header's offset in buf, or -1. */
static ssize_t tun_read_match(int fd, uint8_t *buf, size_t cap, size_t skip,
                              pkt_match_fn match)
{
    size_t pad = (4 - skip % 4) % 4, off = pad + skip;
    struct pollfd pfd = { .fd = fd, .events = POLLIN };
    struct timespec t0;
    long left;

    clock_gettime(CLOCK_MONOTONIC, &t0);
    while ((left = WAIT_MS - ms_since(&t0)) > 0) {
        ssize_t n;

        if (poll(&pfd, 1, (int)left) <= 0)
            continue;
        n = read(fd, buf + pad, cap - pad);
        if (n < (ssize_t)(skip + sizeof(struct iphdr)))
            continue;
        const struct iphdr *ip = (const struct iphdr *)(buf + off);
        if (ip->version == 4 && match(ip, (size_t)n - skip))
            return (ssize_t)off;
    }
    return -1;
}

static bool is_udp_to_peer(const struct iphdr *ip, size_t len)
{
    return ip->protocol == IPPROTO_UDP && len >= ip->ihl * 4u + sizeof(struct udphdr) &&
           memcmp(&ip->daddr, v4_peer, 4) == 0;
}

static void send_udp_to_peer(const char *payload)
{
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(9) };
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

    assert_true(s >= 0);
    memcpy(&sin.sin_addr, v4_peer, 4);
    assert_int_equal(sendto(s, payload, strlen(payload), 0,
                            (const struct sockaddr *)&sin, sizeof(sin)),
                     (ssize_t)strlen(payload));
    close(s);
}

/* Checks the UDP datagram of send_udp_to_peer(payload) at ip. */
static void check_udp_to_peer(const struct iphdr *ip, const char *payload)
{
    const struct udphdr *udp = (const struct udphdr *)((const uint8_t *)ip + ip->ihl * 4u);

    assert_memory_equal(&ip->saddr, v4_local, 4);
    assert_memory_equal(&ip->daddr, v4_peer, 4);
    assert_int_equal(ntohs(udp->dest), 9);
    assert_int_equal(ntohs(udp->len), sizeof(*udp) + strlen(payload));
    assert_memory_equal(udp + 1, payload, strlen(payload));
}

/* --- tests: the device ---------------------------------------------------- */

static void test_create_configure(void **state)
{
    struct fx *fx = fx_get(state);
    uint8_t v6[16];
    unsigned mtu = 0;
    short flags;

    addr6(v6, "fd77::1");
    fx_configure(fx, false);
    assert_int_equal((int)if_nametoindex(IFNAME), fx->ifindex);
    assert_int_equal(if_mtu(IFNAME), TEST_MTU);
    assert_int_equal(nl_link_mtu(&fx->nl, fx->ifindex, &mtu), 0);
    assert_int_equal(mtu, TEST_MTU);
    assert_true(if_flags(IFNAME) & IFF_UP);
    assert_true(has_addr(IFNAME, AF_INET, v4_local, 16));
    assert_true(has_addr(IFNAME, AF_INET6, v6, 64));
    assert_false(has_addr(IFNAME, AF_INET, v4_peer, 16));

    flags = tun_flags(fx->fds[0]);
    assert_true(flags & IFF_TUN);
    assert_true(flags & IFF_NO_PI);
    assert_false(flags & (IFF_MULTI_QUEUE | IFF_VNET_HDR));
    assert_true(fcntl(fx->fds[0], F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fx->fds[0], F_GETFD) & FD_CLOEXEC);

    assert_int_equal(nl_link_set_up(&fx->nl, fx->ifindex, false), 0);
    assert_false(if_flags(IFNAME) & IFF_UP);
}

static void test_create_exists(void **state)
{
    struct fx *fx = fx_get(state);
    struct tun_options opt = { .queues = 1 };
    int again[1] = { 42 };

    assert_int_equal(fx_create(fx, false, 1), 0);
    assert_int_equal(tun_create(IFNAME, &opt, again), -EEXIST);
    assert_int_equal(again[0], -1);
    again[0] = 42;
    assert_int_equal(tun_create("lo", &opt, again), -EEXIST);
    assert_int_equal(again[0], -1);
    /* The first device is untouched. */
    assert_int_equal(tun_flags(fx->fds[0]) & IFF_TUN, IFF_TUN);
}

static void test_bad_names(void **state)
{
    static const char *const bad[] = {
        "", "abcdefghijklmnop", "a/b", "a b", "a\tb", "a\nb", "a:b",
        "ddp%d", ".", "..",
    };
    struct fx *fx = fx_get(state);
    struct tun_options opt = { .queues = 1 };
    struct tun_options none = { .queues = 0 };

    (void)fx;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int fds[1] = { 42 };
        assert_int_equal(tun_create(bad[i], &opt, fds), -EINVAL);
        assert_int_equal(fds[0], -1);
    }
    int fds[1] = { -1 };
    assert_int_equal(tun_create(NULL, &opt, fds), -EINVAL);
    assert_int_equal(tun_create(IFNAME, NULL, fds), -EINVAL);
    assert_int_equal(tun_create(IFNAME, &opt, NULL), -EINVAL);
    assert_int_equal(tun_create(IFNAME, &none, fds), -EINVAL);
    assert_int_equal(if_nametoindex(IFNAME), 0);
    /* The longest valid name works. */
    assert_int_equal(tun_create("abcdefghijklmno", &opt, fds), 0);
    assert_true(if_nametoindex("abcdefghijklmno") > 0);
    tun_close(fds, 1);
    assert_int_equal(fds[0], -1);
}

static void test_multiqueue(void **state)
{
    struct fx *fx = fx_get(state);

    assert_int_equal(fx_create(fx, false, 2), 0);
    assert_true(fx->fds[0] >= 0);
    assert_true(fx->fds[1] >= 0);
    assert_int_not_equal(fx->fds[0], fx->fds[1]);
    for (unsigned i = 0; i < 2; i++) {
        assert_true(tun_flags(fx->fds[i]) & IFF_MULTI_QUEUE);
        assert_true(fcntl(fx->fds[i], F_GETFL) & O_NONBLOCK);
    }
    assert_true(if_nametoindex(IFNAME) > 0);
    /* The device lives until its last queue closes. */
    tun_close(fx->fds, 1);
    assert_int_equal(fx->fds[0], -1);
    assert_true(if_nametoindex(IFNAME) > 0);
    tun_close(fx->fds, 2);
    assert_int_equal(if_nametoindex(IFNAME), 0);
}

static void test_vnet_hdr_offload(void **state)
{
    struct fx *fx = fx_get(state);
    const struct virtio_net_hdr *vh;
    int pipefd[2];
    ssize_t off;

    fx_configure(fx, true);
    assert_true(tun_flags(fx->fds[0]) & IFF_VNET_HDR);
    assert_int_equal(tun_set_offload(fx->fds[0], TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6), 0);
    /* Flags the kernel does not know, and descriptors that are no tun. */
    assert_int_equal(tun_set_offload(fx->fds[0], 0x80000000u), -EINVAL);
    assert_int_equal(tun_set_offload(-1, TUN_F_CSUM), -EBADF);
    assert_int_equal(pipe(pipefd), 0);
    assert_int_equal(tun_set_offload(pipefd[0], TUN_F_CSUM), -ENOTTY);
    close(pipefd[0]);
    close(pipefd[1]);

    /* A small datagram comes with a header that asks for no segmentation. */
    send_udp_to_peer("vnet");
    off = tun_read_match(fx->fds[0], fx->pkt, sizeof(fx->pkt), sizeof(*vh),
                         is_udp_to_peer);
    assert_true(off >= (ssize_t)sizeof(*vh));
    vh = (const struct virtio_net_hdr *)(fx->pkt + off - sizeof(*vh));
    assert_int_equal(vh->gso_type, VIRTIO_NET_HDR_GSO_NONE);
    check_udp_to_peer((const struct iphdr *)(fx->pkt + off), "vnet");
}

static void test_read_udp(void **state)
{
    struct fx *fx = fx_get(state);
    ssize_t off;

    fx_configure(fx, false);
    send_udp_to_peer("ddpnet");
    off = tun_read_match(fx->fds[0], fx->pkt, sizeof(fx->pkt), 0, is_udp_to_peer);
    assert_int_equal(off, 0);
    check_udp_to_peer((const struct iphdr *)fx->pkt, "ddpnet");
}

#define ECHO_ID  0x4444
#define ECHO_SEQ 7

static bool is_echo_reply(const struct iphdr *ip, size_t len)
{
    const struct icmphdr *icmp = (const struct icmphdr *)((const uint8_t *)ip + ip->ihl * 4u);

    return ip->protocol == IPPROTO_ICMP && len >= ip->ihl * 4u + sizeof(*icmp) &&
           icmp->type == ICMP_ECHOREPLY && ntohs(icmp->un.echo.id) == ECHO_ID;
}

/* An echo request from 10.77.0.2 written into the device is answered by the
 * kernel, and the answer comes back out of the device. */
static void test_write_icmp_echo(void **state)
{
    struct fx *fx = fx_get(state);
    struct {
        struct iphdr ip;
        struct icmphdr icmp;
        char data[8];
    } req;
    const struct iphdr *ip;
    const struct icmphdr *icmp;

    fx_configure(fx, false);
    memset(&req, 0, sizeof(req));
    req.ip.version = 4;
    req.ip.ihl = sizeof(req.ip) / 4;
    req.ip.tot_len = htons(sizeof(req));
    req.ip.ttl = 64;
    req.ip.protocol = IPPROTO_ICMP;
    memcpy(&req.ip.saddr, v4_peer, 4);
    memcpy(&req.ip.daddr, v4_local, 4);
    req.ip.check = csum16(&req.ip, sizeof(req.ip));
    req.icmp.type = ICMP_ECHO;
    req.icmp.un.echo.id = htons(ECHO_ID);
    req.icmp.un.echo.sequence = htons(ECHO_SEQ);
    memcpy(req.data, "ddpecho", 8);
    req.icmp.checksum = csum16(&req.icmp, sizeof(req.icmp) + sizeof(req.data));
    assert_int_equal(write(fx->fds[0], &req, sizeof(req)), sizeof(req));

    assert_int_equal(tun_read_match(fx->fds[0], fx->pkt, sizeof(fx->pkt), 0,
                                    is_echo_reply), 0);
    ip = (const struct iphdr *)fx->pkt;
    icmp = (const struct icmphdr *)(fx->pkt + ip->ihl * 4u);
    assert_memory_equal(&ip->saddr, v4_local, 4);
    assert_memory_equal(&ip->daddr, v4_peer, 4);
    assert_int_equal(ntohs(icmp->un.echo.sequence), ECHO_SEQ);
    assert_memory_equal(icmp + 1, "ddpecho", 8);
}

/* --- tests: rtnetlink ------------------------------------------------------ */

/* 10.99.0.0/24 dev ifindex mtu `mtu`, built here so that nl_route_mtu meets a
 * route that carries its own MTU metric. */
static int route_add_with_mtu(struct nl *nl, int ifindex, unsigned mtu)
{
    static const uint8_t dst[4] = { 10, 99, 0, 0 };
    _Alignas(struct nlmsghdr) char buf[8192];
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    struct rtmsg *rtm;
    struct nlattr *metrics;
    int n;

    nlh->nlmsg_type = RTM_NEWROUTE;
    nlh->nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    nlh->nlmsg_seq = ++nl->seq;
    rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
    rtm->rtm_family = AF_INET;
    rtm->rtm_dst_len = 24;
    rtm->rtm_table = RT_TABLE_MAIN;
    rtm->rtm_protocol = RTPROT_BOOT;
    rtm->rtm_scope = RT_SCOPE_LINK;
    rtm->rtm_type = RTN_UNICAST;
    mnl_attr_put(nlh, RTA_DST, sizeof(dst), dst);
    mnl_attr_put_u32(nlh, RTA_OIF, (uint32_t)ifindex);
    metrics = mnl_attr_nest_start(nlh, RTA_METRICS);
    mnl_attr_put_u32(nlh, RTAX_MTU, mtu);
    mnl_attr_nest_end(nlh, metrics);
    if (mnl_socket_sendto(nl->sock, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    n = (int)mnl_socket_recvfrom(nl->sock, buf, sizeof(buf));
    if (n < 0)
        return -errno;
    return mnl_cb_run(buf, (size_t)n, nl->seq, nl->portid, NULL, NULL) < 0 ? -errno : 0;
}

static void test_route_mtu(void **state)
{
    static const uint8_t v4_far[4] = { 10, 99, 0, 5 };
    static const uint8_t v4_unrouted[4] = { 192, 0, 2, 1 };
    struct fx *fx = fx_get(state);
    uint8_t v6[16];
    unsigned mtu = 0;

    fx_configure(fx, false);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, v4_peer, &mtu), 0);
    assert_int_equal(mtu, TEST_MTU);
    addr6(v6, "fd77::2");
    mtu = 0;
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET6, v6, &mtu), 0);
    assert_int_equal(mtu, TEST_MTU);

    /* It follows the link's MTU... */
    assert_int_equal(nl_link_set_mtu(&fx->nl, fx->ifindex, 1300), 0);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, v4_peer, &mtu), 0);
    assert_int_equal(mtu, 1300);
    /* ...unless the route has an MTU of its own. */
    assert_int_equal(route_add_with_mtu(&fx->nl, fx->ifindex, 1280), 0);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, v4_far, &mtu), 0);
    assert_int_equal(mtu, 1280);

    /* No default route in a fresh namespace. */
    mtu = 0;
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, v4_unrouted, &mtu), -ENETUNREACH);
    assert_int_equal(mtu, 0);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_UNIX, v4_peer, &mtu), -EAFNOSUPPORT);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, NULL, &mtu), -EINVAL);
    assert_int_equal(nl_route_mtu(&fx->nl, AF_INET, v4_peer, NULL), -EINVAL);
}

/* The cap on super-packets that ddpnet sets on ddp0 (pkt_gso_segments):
 * read back as the kernel reports it; refused values change nothing. */
static void test_gso_max_segs(void **state)
{
    struct fx *fx = fx_get(state);
    unsigned segs = 0, before = 0, seq;

    fx_configure(fx, true);
    assert_int_equal(nl_link_gso_max_segs(&fx->nl, fx->ifindex, &before), 0);
    assert_true(before > 44);   /* the kernel's default, 65535 */
    assert_int_equal(nl_link_set_gso_max_segs(&fx->nl, fx->ifindex, 44), 0);
    assert_int_equal(nl_link_gso_max_segs(&fx->nl, fx->ifindex, &segs), 0);
    assert_int_equal(segs, 44);

    seq = fx->nl.seq;
    assert_int_equal(nl_link_set_gso_max_segs(&fx->nl, fx->ifindex, 0), -EINVAL);
    assert_int_equal(nl_link_set_gso_max_segs(&fx->nl, 0, 44), -EINVAL);
    assert_int_equal(nl_link_gso_max_segs(&fx->nl, fx->ifindex, NULL), -EINVAL);
    assert_int_equal(fx->nl.seq, seq);
    /* Above what the kernel allows (GSO_MAX_SEGS, 65535): its refusal, as it is. */
    assert_int_equal(nl_link_set_gso_max_segs(&fx->nl, fx->ifindex, 70000), -EINVAL);
    assert_int_equal(nl_link_set_gso_max_segs(&fx->nl, MISSING_IFINDEX, 44), -ENODEV);
    assert_int_equal(nl_link_gso_max_segs(&fx->nl, MISSING_IFINDEX, &segs), -ENODEV);
    assert_int_equal(nl_link_gso_max_segs(&fx->nl, fx->ifindex, &segs), 0);
    assert_int_equal(segs, 44);
}

static void test_delete(void **state)
{
    struct fx *fx = fx_get(state);

    fx_configure(fx, false);
    assert_int_equal(nl_link_delete(&fx->nl, IFNAME), 0);
    assert_int_equal(nl_link_index(&fx->nl, IFNAME), -ENODEV);
    assert_int_equal(if_nametoindex(IFNAME), 0);
    assert_int_equal(nl_link_delete(&fx->nl, IFNAME), -ENODEV);
    assert_int_equal(nl_link_delete(&fx->nl, ""), -EINVAL);
    assert_int_equal(nl_link_delete(&fx->nl, "abcdefghijklmnop"), -EINVAL);
    assert_int_equal(nl_link_delete(&fx->nl, NULL), -EINVAL);
}

static void test_nl_link_errors(void **state)
{
    struct fx *fx = fx_get(state);
    unsigned seq, mtu = 0;

    assert_int_equal(nl_link_index(&fx->nl, "nosuchdev"), -ENODEV);
    assert_int_equal(nl_link_index(&fx->nl, ""), -EINVAL);
    assert_int_equal(nl_link_index(&fx->nl, "abcdefghijklmnop"), -EINVAL);
    assert_int_equal(nl_link_index(&fx->nl, NULL), -EINVAL);
    assert_int_equal(nl_link_set_mtu(&fx->nl, MISSING_IFINDEX, TEST_MTU), -ENODEV);
    assert_int_equal(nl_link_set_up(&fx->nl, MISSING_IFINDEX, true), -ENODEV);
    assert_int_equal(nl_link_mtu(&fx->nl, MISSING_IFINDEX, &mtu), -ENODEV);
    seq = fx->nl.seq;
    assert_int_equal(nl_link_set_mtu(&fx->nl, 0, TEST_MTU), -EINVAL);
    assert_int_equal(nl_link_set_up(&fx->nl, -1, true), -EINVAL);
    assert_int_equal(nl_link_mtu(&fx->nl, 0, &mtu), -EINVAL);
    assert_int_equal(nl_link_mtu(&fx->nl, 1, NULL), -EINVAL);
    assert_int_equal(fx->nl.seq, seq);

    /* The kernel's refusals come back as they are: below a tun's minimum. */
    assert_int_equal(fx_create(fx, false, 1), 0);
    fx->ifindex = nl_link_index(&fx->nl, IFNAME);
    assert_int_equal(nl_link_set_mtu(&fx->nl, fx->ifindex, 10), -EINVAL);
    assert_int_not_equal(if_mtu(IFNAME), 10);
    /* The socket is still in step after the errors. */
    assert_int_equal(nl_link_set_mtu(&fx->nl, fx->ifindex, TEST_MTU), 0);
    assert_int_equal(if_mtu(IFNAME), TEST_MTU);
}

static void test_nl_addr_errors(void **state)
{
    struct fx *fx = fx_get(state);
    uint8_t v6[16];
    unsigned seq;

    addr6(v6, "fd77::1");
    assert_int_equal(fx_create(fx, false, 1), 0);
    fx->ifindex = nl_link_index(&fx->nl, IFNAME);
    assert_true(fx->ifindex > 0);

    seq = fx->nl.seq;
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET, v4_local, 33), -EINVAL);
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET6, v6, 129), -EINVAL);
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_UNIX, v4_local, 8), -EAFNOSUPPORT);
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET, NULL, 8), -EINVAL);
    assert_int_equal(nl_addr_add(&fx->nl, 0, AF_INET, v4_local, 8), -EINVAL);
    assert_int_equal(fx->nl.seq, seq);      /* nothing was sent */
    assert_false(has_addr(IFNAME, AF_INET, v4_local, 33));

    assert_int_equal(nl_addr_add(&fx->nl, MISSING_IFINDEX, AF_INET, v4_local, 16), -ENODEV);
    /* The limits themselves are accepted. */
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET, v4_local, 32), 0);
    assert_true(has_addr(IFNAME, AF_INET, v4_local, 32));
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET6, v6, 128), 0);
    assert_true(has_addr(IFNAME, AF_INET6, v6, 128));
    assert_int_equal(nl_addr_add(&fx->nl, fx->ifindex, AF_INET, v4_local, 32), -EEXIST);
}

static void test_nl_closed(void **state)
{
    struct nl closed = { 0 };
    unsigned mtu;

    (void)fx_get(state);
    assert_int_equal(nl_open(NULL), -EINVAL);
    assert_int_equal(nl_link_index(&closed, "lo"), -EINVAL);
    assert_int_equal(nl_link_index(NULL, "lo"), -EINVAL);
    assert_int_equal(nl_link_mtu(&closed, 1, &mtu), -EINVAL);
    assert_int_equal(nl_link_set_mtu(&closed, 1, TEST_MTU), -EINVAL);
    assert_int_equal(nl_link_set_gso_max_segs(&closed, 1, 44), -EINVAL);
    assert_int_equal(nl_link_gso_max_segs(&closed, 1, &mtu), -EINVAL);
    assert_int_equal(nl_link_set_up(&closed, 1, true), -EINVAL);
    assert_int_equal(nl_addr_add(&closed, 1, AF_INET, v4_local, 8), -EINVAL);
    assert_int_equal(nl_link_delete(&closed, "lo"), -EINVAL);
    assert_int_equal(nl_route_mtu(&closed, AF_INET, v4_local, &mtu), -EINVAL);
    nl_close(&closed);
    nl_close(NULL);

    assert_int_equal(nl_open(&closed), 0);
    assert_non_null(closed.sock);
    assert_true(nl_link_index(&closed, "lo") > 0);
    nl_close(&closed);
    assert_null(closed.sock);
    nl_close(&closed);
    assert_int_equal(nl_link_index(&closed, "lo"), -EINVAL);
}

/* --- tests: failures of the system ----------------------------------------- */

/* The lowest descriptor number open() would hand out now. */
static int lowest_free_fd(void)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

    assert_true(fd >= 0);
    close(fd);
    return fd;
}

static void nofile_limit(rlim_t cur, struct rlimit *saved)
{
    struct rlimit lim;

    assert_int_equal(getrlimit(RLIMIT_NOFILE, saved), 0);
    lim = *saved;
    lim.rlim_cur = cur;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &lim), 0);
}

static void test_out_of_descriptors(void **state)
{
    struct fx *fx = fx_get(state);
    struct tun_options two = { .queues = 2 };
    struct rlimit saved;
    struct nl nl = { 0 };
    int fds[2] = { 42, 42 };
    int first, err;

    /* No descriptor at all: neither a netlink socket nor the name check. */
    nofile_limit(0, &saved);
    err = nl_open(&nl);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_int_equal(err, -EMFILE);
    assert_null(nl.sock);
    nofile_limit(0, &saved);
    err = tun_create(IFNAME, &two, fds);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_int_equal(err, -EMFILE);

    /* Room for the first queue only: it is closed again, and with it the
     * device goes away. */
    first = lowest_free_fd();
    nofile_limit((rlim_t)first + 1, &saved);
    err = tun_create(IFNAME, &two, fds);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &saved), 0);
    assert_int_equal(err, -EMFILE);
    assert_int_equal(fds[0], -1);
    assert_int_equal(fds[1], -1);
    assert_int_equal(fcntl(first, F_GETFD), -1);
    assert_int_equal(if_nametoindex(IFNAME), 0);
    assert_int_equal(nl_link_index(&fx->nl, IFNAME), -ENODEV);
}

/* A process without CAP_NET_ADMIN may open /dev/net/tun but not create. */
static void test_not_permitted(void **state)
{
    struct fx *fx = fx_get(state);
    int status;
    pid_t pid;

    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct tun_options opt = { .queues = 1 };
        int fds[1];
        int err;

        if (setresgid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0 ||
            setresuid(NOBODY_ID, NOBODY_ID, NOBODY_ID) != 0)
            _exit(255);
        err = tun_create(IFNAME, &opt, fds);
        _exit(err < 0 ? -err : 0);
    }
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_true(WEXITSTATUS(status) == EPERM || WEXITSTATUS(status) == EACCES);
    assert_int_equal(nl_link_index(&fx->nl, IFNAME), -ENODEV);
}

/* ddp0's transmit queue: set and read back, and the packets it had no
 * room for counted in tx_dropped (the reader never reads here). */
static void test_txqlen_and_drops(void **state)
{
    struct fx *fx = fx_get(state);
    unsigned len = 0;
    uint64_t dropped = 1;

    fx_configure(fx, false);
    assert_int_equal(nl_link_set_txqlen(&fx->nl, fx->ifindex, TUN_TXQUEUELEN), 0);
    assert_int_equal(nl_link_txqlen(&fx->nl, fx->ifindex, &len), 0);
    assert_int_equal(len, TUN_TXQUEUELEN);
    assert_int_equal(nl_link_set_txqlen(&fx->nl, fx->ifindex, 0), -EINVAL);
    assert_int_equal(nl_link_tx_dropped(&fx->nl, fx->ifindex, &dropped), 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(nl_link_set_txqlen(&fx->nl, fx->ifindex, 2), 0);
    for (int i = 0; i < 20; i++)
        send_udp_to_peer("queued or dropped");
    assert_int_equal(nl_link_tx_dropped(&fx->nl, fx->ifindex, &dropped), 0);
    assert_true(dropped >= 10 && dropped <= 20);
    assert_int_equal(nl_link_tx_dropped(&fx->nl, MISSING_IFINDEX, &dropped), -ENODEV);
    assert_int_equal(nl_link_tx_dropped(&fx->nl, 0, &dropped), -EINVAL);
    assert_int_equal(nl_link_tx_dropped(NULL, fx->ifindex, &dropped), -EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_create_configure, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_create_exists, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_txqlen_and_drops, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_bad_names, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_multiqueue, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_vnet_hdr_offload, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_read_udp, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_write_icmp_echo, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_route_mtu, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_delete, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_gso_max_segs, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_nl_link_errors, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_nl_addr_errors, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_nl_closed, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_out_of_descriptors, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_not_permitted, fx_setup, fx_teardown),
    };

    return cmocka_run_group_tests_name("tun", tests, group_setup, NULL);
}
