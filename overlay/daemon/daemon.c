/* SPDX-License-Identifier: MIT */
/* daemon_run: from the parsed cluster file and our key to a running node.
 * Setup runs as root, in this order: the peers in memory, the UDP sockets,
 * ddp0 (created, addressed, MTU, up through rtnetlink), the control socket,
 * the hosts block and the state file. Then the daemon drops to an
 * unprivileged user with no capabilities (everything privileged is done,
 * and the fds stay open), reports "ok" to the CLI, and runs the loop. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/if_tun.h>
#include <netinet/udp.h>
#include <netdb.h>
#include <poll.h>
#include <pwd.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "overlay/base/log.h"
#include "overlay/control/control.h"
#include "overlay/daemon/notify.h"
#include "overlay/daemon/services.h"
#include "overlay/registry/record.h"
#include "overlay/registry/registry.h"
#include "overlay/registry/vouch.h"
#include "overlay/daemon/daemon.h"
#include "overlay/daemon/forward.h"
#include "overlay/membership/hosts.h"
#include "overlay/membership/hosts_writer.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/members.h"
#include "overlay/membership/renewal.h"
#include "overlay/membership/revocations.h"
#include "overlay/engine/device_setup.h"
#include "overlay/loop/loop.h"
#include "overlay/loop/resolver.h"
#include "overlay/loop/shard.h"
#include "tun/netlink.h"
#include "tun/offload.h"
#include "tun/tun.h"

_Static_assert(CLUSTER_MTU_MAX == DEVICE_MTU_MAX,
               "the cluster file must refuse every mtu the device cannot take");
_Static_assert(CLUSTER_BUSY_POLL_ALWAYS == BUSY_POLL_ALWAYS && CLUSTER_BUSY_POLL_ALWAYS > CLUSTER_BUSY_POLL_MAX,
               "busy-poll = always must reach the loop as always, never as a window");

int daemon_socket_path(char *buf, size_t len, const char *run_dir, const char *ifname)
{
    int n = snprintf(buf, len, "%s/%s.sock", run_dir, ifname);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int daemon_env_socket_path(char *buf, size_t len, const char *run_dir, const char *ifname)
{
    int n = snprintf(buf, len, "%s/%s.env", run_dir, ifname);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int daemon_state_path(char *buf, size_t len, const char *run_dir, const char *ifname)
{
    int n = snprintf(buf, len, "%s/%s.state", run_dir, ifname);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int daemon_log_path(char *buf, size_t len, const char *run_dir, const char *ifname)
{
    int n = snprintf(buf, len, "%s/%s.log", run_dir, ifname);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

struct setup {
    struct daemon_options *opt;
    struct device dev;
    struct loop loop;
    bool loop_ready;
    struct services services;             /* the control and env sockets, metrics */
    bool services_open;
    struct nl route_nl;                   /* the path MTU search asks the kernel (route_mtu) */
    bool route_nl_open;
    int tun_fd, udp4_fd, udp6_fd, control_fd, env_fd, signal_fd;
    /* With shards (shard.h), each one's ddp0 queue and sockets; [0] is
     * the daemon's loop's, the fds above. */
    struct shards shards;
    bool shards_ready;
    int shard_tun[SHARDS_MAX], shard_udp4[SHARDS_MAX], shard_udp6[SHARDS_MAX];
    /* The extra source ports (DDPNET_FLOWS less one), per family; every
     * loop sends from them (loop_config.flows). */
    unsigned flows;
    int flow4[LOOP_FLOWS_MAX], flow6[LOOP_FLOWS_MAX];
    struct membership membership;         /* the device's (dev.membership) */
    int ifindex;                          /* ddp0's, for its statistics */
    struct forward forward;               /* routes' keeper (forward.h) */
    char socket_path[256], env_path[256], state_path[256];
    bool running;                         /* setup completed */
};

/* Reports a setup failure: one line to the CLI (or the log) and err back. */
__attribute__((format(printf, 3, 4)))
static int fail(struct setup *s, int err, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    log_error("%s", line);
    if (s->opt->ready_fd >= 0) {
        dprintf(s->opt->ready_fd, "%s\n", line);
        close(s->opt->ready_fd);
        s->opt->ready_fd = -1;
    }
    return err < 0 ? err : -EINVAL;
}

/* Sets one of a socket's buffers (SO_RCVBUF or SO_SNDBUF) to size, past
 * the sysctl cap with the FORCE form, which needs CAP_NET_ADMIN (setup
 * runs as root; without it the kernel caps the plain form silently).
 * Returns what the kernel gave, in the bytes of size (it books twice). */
static unsigned set_buffer(int fd, int opt, int force, unsigned size)
{
    int want = (int)size, got = 0;
    socklen_t len = sizeof(got);

    if (setsockopt(fd, SOL_SOCKET, force, &want, sizeof(want)))
        setsockopt(fd, SOL_SOCKET, opt, &want, sizeof(want));
    if (getsockopt(fd, SOL_SOCKET, opt, &got, &len) || got < 0)
        return 0;
    return (unsigned)got / 2u;
}

/* Both buffers at the size asked (cluster.h: socket-buffer); what the
 * receive buffer got is returned, and a shortfall said once, with the
 * limit to raise. */
static unsigned size_buffers(int fd, unsigned size)
{
    unsigned rcv = set_buffer(fd, SO_RCVBUF, SO_RCVBUFFORCE, size);
    unsigned snd = set_buffer(fd, SO_SNDBUF, SO_SNDBUFFORCE, size);

    if (rcv < size || snd < size)
        log_warn("UDP socket buffers: asked %u bytes, the kernel gave %u to receive and %u "
                 "to send: without CAP_NET_ADMIN it caps them at net.core.rmem_max and "
                 "wmem_max; raise those (sysctl -w net.core.rmem_max=%u "
                 "net.core.wmem_max=%u) or start as root, or a burst of a long path is "
                 "dropped (status: socket_overflow)", size, rcv, snd, size, size);
    return rcv;
}

/* A count from the environment variable `name` if set, else
 * `fallback`. */
static unsigned unsigned_from_env(const char *name, unsigned fallback)
{
    const char *env = getenv(name);

    return env && *env ? (unsigned)strtoul(env, NULL, 10) : fallback;
}

/* Queue management on the UDP sockets (loop/codel.h): the standing wait
 * it acts on, DDPNET_QUEUE_TARGET_US if set (0 turns it off), else
 * CODEL_TARGET_NS. */
static unsigned queue_target_us(void)
{
    return unsigned_from_env("DDPNET_QUEUE_TARGET_US", (unsigned)(CODEL_TARGET_NS / 1000u));
}

static int open_udp(int family, uint16_t port, unsigned buffer, bool reuse, unsigned *got)
{
    int fd = socket(family, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1;
    /* DF on every packet, whatever the kernel learned of the path: a
     * packet too big for the path is lost rather than fragmented, and
     * a GSO send is never refused for a path MTU the kernel cached. The
     * path's MTU is ours to find (pmtu.h): probes must not fragment. */
    int probe4 = IP_PMTUDISC_PROBE, probe6 = IPV6_PMTUDISC_PROBE;
    union endpoint addr;

    if (fd < 0)
        return -errno;
    memset(&addr, 0, sizeof(addr));
    if (family == AF_INET6) {
        /* v4 has a socket of its own: keep this one to IPv6. */
        setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
        setsockopt(fd, IPPROTO_IPV6, IPV6_MTU_DISCOVER, &probe6, sizeof(probe6));
        addr.in6.sin6_family = AF_INET6;
        addr.in6.sin6_port = htons(port);
    } else {
        setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &probe4, sizeof(probe4));
        addr.in4.sin_family = AF_INET;
        addr.in4.sin_port = htons(port);
    }
    *got = size_buffers(fd, buffer);
    /* Many datagrams per receive (GRO); sends use UDP_SEGMENT per call. */
    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof(one));
    /* Each receive says how many datagrams the kernel dropped at this
     * socket so far (loop.c counts them: status, metrics). */
    setsockopt(fd, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one));
    /* Each receive says when the kernel queued it: how long datagrams
     * wait here is what the queue management acts on (loop/codel.h). */
    if (queue_target_us())
        setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one));
    /* Shards: one socket each on the port, a group steered by the shard
     * hint (shard.h). Only then: alone, a second daemon on our port must
     * fail to bind, not share it. */
    if (reuse && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one))) {
        int err = -errno;
        close(fd);
        return err;
    }
    if (bind(fd, &addr.sa, endpoint_sockaddr_len(&addr))) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

/* The port a socket was bound to (the cluster file may leave it to the
 * kernel: every shard's socket must then take the same one). */
static uint16_t bound_port(int fd)
{
    union endpoint addr;
    socklen_t len = sizeof(addr);

    if (getsockname(fd, &addr.sa, &len))
        return 0;
    return ntohs(addr.sa.sa_family == AF_INET6 ? addr.in6.sin6_port : addr.in4.sin_port);
}

/* One socket per shard in family's group on port (shard order is the
 * group's: shard_steer's index), steered by the hint; fds[0] may fail
 * alone (no such family), a later one fails the setup. */
static int open_shard_sockets(struct setup *s, int family, uint16_t port, unsigned *got,
                              int *fds)
{
    unsigned n = s->shards.n, buffer = s->dev.cluster.socket_buffer;
    int ret;

    fds[0] = open_udp(family, port, buffer, n > 1, got);
    if (fds[0] < 0 || n < 2)
        return 0;
    port = bound_port(fds[0]);
    for (unsigned k = 1; k < n; k++) {
        unsigned unused;
        if ((fds[k] = open_udp(family, port, buffer, true, &unused)) < 0)
            return fail(s, fds[k], "shard %u: cannot bind UDP port %u: %s", k, port,
                        strerror(-fds[k]));
    }
    if ((ret = shard_steer(fds[0], n)))
        return fail(s, ret, "cannot steer the UDP port's receives to %u shards: %s", n,
                    strerror(-ret));
    return 0;
}

/* Underlay flows per peer (DDPNET_FLOWS): the port's own and this many
 * less one extra source ports (path.c: path_flows; bench/README.md,
 * issue 57, says why 4). */
#define FLOWS_DEFAULT 4u

/* A socket that only sends, from an ephemeral port of its own: a peer's
 * extra flows leave from it to the peer's one port, so the operator still
 * opens only that port. What comes back to it is dropped by a filter that
 * passes nothing: no peer is ever told of this port as ours. */
static int open_flow_socket(int family, unsigned buffer)
{
    struct sock_filter none[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
    struct sock_fprog prog = { .len = 1, .filter = none };
    unsigned unused;
    int fd = open_udp(family, 0, buffer, false, &unused);

    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog))) {
        int err = -errno;
        close(fd);
        return err;
    }
    return fd;
}

static void close_fd(int *fd);

/* The extra source ports, where a family has the port's socket; a family
 * that cannot have them leaves its flows on the port's (loop.c). */
static void setup_flow_sockets(struct setup *s)
{
    unsigned want = unsigned_from_env("DDPNET_FLOWS", FLOWS_DEFAULT);

    if (want > LOOP_FLOWS_MAX + 1u)
        want = LOOP_FLOWS_MAX + 1u;
    s->flows = want > 1u ? want - 1u : 0u;
    for (unsigned i = 0; i < s->flows; i++) {
        s->flow4[i] = s->udp4_fd < 0 ? -1 : open_flow_socket(AF_INET, s->dev.cluster.socket_buffer);
        s->flow6[i] = s->udp6_fd < 0 ? -1 : open_flow_socket(AF_INET6, s->dev.cluster.socket_buffer);
        int err = s->udp4_fd >= 0 && s->flow4[i] < 0 ? s->flow4[i]
                : s->udp6_fd >= 0 && s->flow6[i] < 0 ? s->flow6[i] : 0;
        if (err) {
            /* Fewer flows, not a flow that says it leaves elsewhere. */
            log_warn("DDPNET_FLOWS=%u: cannot open source port %u: %s; %u flows per peer", want,
                     i + 1u, strerror(-err), i + 1u);
            close_fd(&s->flow4[i]);
            close_fd(&s->flow6[i]);
            s->flows = i;
            break;
        }
    }
    s->dev.flow_count = 1u + s->flows;
}

static int setup_sockets(struct setup *s)
{
    uint16_t port = (uint16_t)cluster_node_port(&s->dev.cluster, s->dev.self);
    unsigned got4 = 0, got6 = 0;
    int ret;

    s->dev.listen_port = port;
    if ((ret = open_shard_sockets(s, AF_INET, port, &got4, s->shard_udp4)) ||
        (ret = open_shard_sockets(s, AF_INET6, port, &got6, s->shard_udp6)))
        return ret;
    s->udp4_fd = s->shard_udp4[0];
    s->udp6_fd = s->shard_udp6[0];
    s->dev.socket_buffer = s->udp4_fd < 0 ? got6 : s->udp6_fd < 0 || got4 < got6 ? got4 : got6;
    /* A host without IPv6 still works over IPv4, and the other way round. */
    if (s->udp4_fd < 0 && s->udp6_fd < 0)
        return fail(s, s->udp4_fd, "cannot bind UDP port %u: %s", port, strerror(-s->udp4_fd));
    if (s->udp4_fd < 0 || s->udp6_fd < 0)
        log_notice("UDP port %u: only IPv%c is available", port, s->udp4_fd < 0 ? '6' : '4');
    setup_flow_sockets(s);
    return 0;
}

/* Hostname endpoints are asked of the resolver, whose threads start after
 * the privilege drop; the answers come to the loop (members_resolved), and
 * until then such a peer has no endpoint. A name that does not resolve
 * leaves that peer to reach us first. Nothing waits for DNS here: a
 * silent server costs `up` nothing, and the same path serves a reload and
 * the registry's records. */
static int resolve_endpoints(struct setup *s)
{
    if (!(s->dev.resolver = resolver_new(NULL, NULL)))
        return fail(s, -ENOMEM, "resolver: %s", strerror(errno ? errno : ENOMEM));
    for (size_t i = 0; i < s->dev.cluster.n_nodes; i++) {
        const struct cluster_node *n = &s->dev.cluster.nodes[i];
        struct peer *p;

        if (n != s->dev.self && n->has_endpoint && !n->endpoint.literal &&
            (p = device_peer_by_key(&s->dev, n->public_key)))
            members_resolve(&s->dev, p, n);
    }
    return 0;
}

/* TSO and checksum offload let the kernel hand us 64 KiB at a time; USO
 * (Linux 6.2+) does the same for UDP. Without them ddp0 still works,
 * packet by packet. */
static void enable_offloads(int fd)
{
    const unsigned tcp = TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO6 | TUN_F_TSO_ECN;
    const unsigned udp = OFFLOAD_TUN_F_USO4 | OFFLOAD_TUN_F_USO6;

    if (tun_set_offload(fd, tcp | udp) == 0)
        return;
    if (tun_set_offload(fd, tcp) == 0)
        return;
    log_notice("TUN offloads unavailable: packets go one by one");
}

/* The tunnel MTU when the cluster file sets none: as wg-quick does, the
 * smallest MTU of the routes to the peers' endpoints (or of the default
 * route), less the largest overhead (IPv6 40 + UDP 8 + WireGuard 32). */
#define TUNNEL_OVERHEAD 80u
static unsigned route_mtu(struct setup *s, struct nl *nl)
{
    static const uint8_t any4[4] = { 192, 0, 2, 1 };   /* TEST-NET-1: the default route */
    unsigned best = 0, mtu;

    for (size_t i = 0; i < s->dev.n_peers; i++) {
        const union endpoint *e = &s->dev.peers[i]->path.endpoint;
        const void *dst = e->sa.sa_family == AF_INET6 ? (const void *)&e->in6.sin6_addr
                                                      : (const void *)&e->in4.sin_addr;
        if (e->sa.sa_family == AF_UNSPEC || nl_route_mtu(nl, e->sa.sa_family, dst, &mtu))
            continue;
        if (!best || mtu < best)
            best = mtu;
    }
    if (!best && nl_route_mtu(nl, AF_INET, any4, &mtu) == 0)
        best = mtu;
    if (best <= TUNNEL_OVERHEAD + CLUSTER_MTU_MIN_IPV4)
        return CLUSTER_MTU_DEFAULT;
    best -= TUNNEL_OVERHEAD;
    return best > DEVICE_MTU_MAX ? DEVICE_MTU_MAX : best;
}

/* Super-packets from ddp0 no larger than one GSO send carries: a 64 KiB
 * one would leave in two sends (the second of one segment) and arrive as
 * two GRO batches and two TUN writes, twice the per-packet work (the
 * figures: bench/README.md). Where the kernel refuses, ddp0 still works,
 * at that cost. */
static void cap_super_packets(struct nl *nl, int ifindex, unsigned mtu)
{
    unsigned segs = pkt_gso_segments(mtu);
    int ret = nl_link_set_gso_max_segs(nl, ifindex, segs);

    if (ret)
        log_notice("cannot cap super-packets at %u segments: %s", segs, strerror(-ret));
}

/* ddp0's transmit queue: what applications write while the daemon is busy
 * waits there (tun.h: TUN_TXQUEUELEN), rather than being dropped. */
static void lengthen_queue(struct nl *nl, int ifindex)
{
    int ret = nl_link_set_txqlen(nl, ifindex, TUN_TXQUEUELEN);

    if (ret)
        log_notice("cannot set the transmit queue to %u packets: %s", TUN_TXQUEUELEN,
                   strerror(-ret));
}

/* ddp0's neighbour entry, pinned (tun/netlink.h: nl_neigh_pin): without
 * it, other namespaces filling the machine's neighbour table made every
 * send on ddp0 fail with ENOBUFS before it reached the daemon. */
static void pin_neighbour(struct nl *nl, int ifindex)
{
    int ret = nl_neigh_pin(nl, ifindex);

    if (ret)
        log_notice("cannot pin the neighbour entry of ddp0: %s", strerror(-ret));
}

static int setup_interface(struct setup *s)
{
    const struct cluster *c = &s->dev.cluster;
    struct tun_options topt = { .vnet_hdr = true, .queues = s->shards.n };
    struct nl nl;
    int ret, ifindex;

    ret = tun_create(s->dev.ifname, &topt, s->shard_tun);
    s->tun_fd = s->shard_tun[0];
    if (ret == -EEXIST)
        return fail(s, ret, "interface %s already exists", s->dev.ifname);
    if (ret == -EPERM || ret == -EACCES)
        return fail(s, ret, "not permitted to create %s: run as root (or with CAP_NET_ADMIN)",
                    s->dev.ifname);
    if (ret)
        return fail(s, ret, "cannot create %s: %s", s->dev.ifname, strerror(-ret));
    for (unsigned k = 0; k < s->shards.n; k++)
        enable_offloads(s->shard_tun[k]);
    if ((ret = nl_open(&nl)))
        return fail(s, ret, "rtnetlink: %s", strerror(-ret));
    s->dev.mtu = c->mtu_set ? c->mtu : route_mtu(s, &nl);
    ifindex = nl_link_index(&nl, s->dev.ifname);
    ret = ifindex < 0 ? ifindex : nl_link_set_mtu(&nl, ifindex, s->dev.mtu);
    if (!ret)
        cap_super_packets(&nl, ifindex, s->dev.mtu);
    if (!ret)
        lengthen_queue(&nl, ifindex);
    s->ifindex = ifindex;
    if (!ret)
        ret = nl_addr_add(&nl, ifindex, s->dev.self->address.family,
                          s->dev.self->address.bytes, c->prefix);
    if (!ret)
        ret = nl_link_set_up(&nl, ifindex, true);
    if (!ret && s->dev.self->address.family == AF_INET)
        pin_neighbour(&nl, ifindex);
    nl_close(&nl);
    if (ret)
        return fail(s, ret, "cannot configure %s: %s", s->dev.ifname, strerror(-ret));
    return 0;
}

/* Gives up every capability of the calling thread and the means to gain
 * any (no_new_privs), and makes the process not dumpable. The first two
 * are per thread: the drop below does it for the
 * main thread before any other thread exists, so that every thread made
 * after it is born the same. */
static int drop_thread_capabilities(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

    memset(data, 0, sizeof(data));
    if (syscall(SYS_capset, &hdr, data))
        return -errno;
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    /* Our memory holds keys: no core, no ptrace by our own user. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ? -errno : 0;
}

/* The child that looks the FQDN up: without capabilities (it parses what
 * a DNS server answers), it writes the canonical name to fd and exits. */
static void fqdn_child(int fd, const char *host)
{
    struct addrinfo hints = { .ai_flags = AI_CANONNAME, .ai_socktype = SOCK_STREAM }, *res;

    if (drop_thread_capabilities() == 0 && getaddrinfo(host, NULL, &hints, &res) == 0) {
        if (res->ai_canonname)
            (void)!write(fd, res->ai_canonname, strnlen(res->ai_canonname, 255));
        freeaddrinfo(res);
    }
    _exit(0);
}

/* Reads what the child writes until it closes (0) or wait_ms pass
 * (-ETIMEDOUT); out is NUL-terminated either way. */
static int read_until_closed(int fd, char *out, size_t len, int wait_ms)
{
    uint64_t end = clock_now_ns() + (uint64_t)wait_ms * NS_PER_MS;
    size_t have = 0;

    out[0] = '\0';
    for (;;) {
        uint64_t now = clock_now_ns();
        struct pollfd pfd = { .fd = fd, .events = POLLIN };
        if (now >= end)
            return -ETIMEDOUT;
        int ret = poll(&pfd, 1, (int)((end - now + NS_PER_MS - 1) / NS_PER_MS));
        if (ret < 0 && errno != EINTR)
            return -errno;
        if (ret <= 0)
            continue;
        ssize_t got = read(fd, out + have, len - 1 - have);
        if (got < 0 && errno != EINTR)
            return -errno;
        if (got == 0 || (got > 0 && (have += (size_t)got) == len - 1))
            break;
    }
    out[have] = '\0';
    return 0;
}

/* A child that answers through a pipe: 0 in the child, with *fd the
 * pipe's end to write; in the parent the child's pid, with *fd the end to
 * read; or -errno. */
static pid_t fork_piped(int *fd)
{
    int fds[2];
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC))
        return -errno;
    if ((pid = fork()) < 0) {
        pid = -errno;
        close(fds[0]);
        close(fds[1]);
        return pid;
    }
    close(fds[pid == 0 ? 0 : 1]);
    *fd = fds[pid == 0 ? 1 : 0];
    return pid;
}

static void reap(pid_t pid)
{
    int status;

    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* The canonical name of host (from the hosts file or DNS) into out, or
 * -errno. In a child process, which is killed when it takes longer than
 * wait_ms: a lookup left running on a thread of ours would outlive the
 * privilege drop with the capabilities it was born with, and a DNS server
 * that does not answer must not hold `up` (the resolver's own timeout is
 * 5 s per try). */
static int lookup_fqdn(const char *host, char *out, size_t len, int wait_ms)
{
    int fd, ret;
    pid_t pid = fork_piped(&fd);

    if (pid < 0)
        return (int)pid;
    if (pid == 0)
        fqdn_child(fd, host);
    ret = read_until_closed(fd, out, len, wait_ms);
    close(fd);
    kill(pid, SIGKILL);
    reap(pid);
    return ret;
}

/* The names this machine goes by -- its hostname and, when it has one, its
 * FQDN (the canonical name of the hostname, from the hosts file or DNS) --
 * read before our block is written (it would answer instead). torchrun
 * announces rank 0 by these names; with them in every node's block they
 * resolve to the overlay everywhere. */
#define FQDN_WAIT_MS 300
static void learn_own_names(struct setup *s)
{
    char host[256], canon[256];
    struct device *dev = &s->dev;

    if (dev->cluster.hostnames_off || gethostname(host, sizeof(host)) || !disco_name_valid(host))
        return;
    snprintf(dev->self_names[dev->n_self_names++], sizeof(dev->self_names[0]), "%.63s", host);
    if (lookup_fqdn(host, canon, sizeof(canon), FQDN_WAIT_MS)) {
        log_info("no FQDN for %s within %u ms: peers learn its hostname alone", host, FQDN_WAIT_MS);
        return;
    }
    if (strchr(canon, '.') && strcasecmp(canon, host) && disco_name_valid(canon))
        snprintf(dev->self_names[dev->n_self_names++], sizeof(dev->self_names[0]), "%.63s",
                 canon);
}

/* A peer told us its machine's names: the block follows, from the
 * writer thread, once a second at most. */
static void names_changed(struct device *dev)
{
    members_hosts_changed(dev);
}

/* The names block's writer (hosts_writer.h), started after the drop (it
 * and the resolver's threads are born without privileges); its first
 * pass writes what set-up left for it (members' own words). */
static int start_hosts_writer(struct setup *s)
{
    struct hosts_writer_config cfg = {
        .fd = s->dev.membership->hosts_fd, .ifname = s->dev.ifname,
        .network = s->dev.cluster.network, .prefix = s->dev.cluster.prefix,
    };
    int ret = hosts_writer_start(&s->dev.membership->hosts_writer, &cfg);

    if (ret)
        return fail(s, ret, "the names block's writer: %s", strerror(-ret));
    members_hosts_changed(&s->dev);
    return 0;
}

/* The names block, through a descriptor kept for the daemon's life: after
 * the drop it can no longer open the file, yet a reload changes the block. */
static int write_hosts(struct setup *s)
{
    int ret = hosts_open(s->opt->hosts_file);

    learn_own_names(s);
    s->dev.names_changed = names_changed;
    if (ret >= 0) {
        s->dev.membership->hosts_fd = ret;
        ret = members_write_hosts(&s->dev);
    }
    if (ret)
        return fail(s, ret, "cannot write the names block to %s: %s", s->opt->hosts_file,
                    strerror(-ret));
    return 0;
}

/* Which file this node runs, for `status`: its checksum, applied now. */
static void note_cluster_file(struct setup *s)
{
    char *text;
    size_t len;
    int ret = s->opt->cluster_path ? cluster_read(s->opt->cluster_path, &text, &len)
                                   : -ENOENT;

    if (ret) {
        log_warn("cannot read %s again for its checksum: %s",
                 s->opt->cluster_path ? s->opt->cluster_path : "the cluster file",
                 strerror(-ret));
        return;
    }
    members_checksum(text, len, s->dev.membership->cluster_sum);
    s->dev.membership->cluster_applied_unix = (uint64_t)time(NULL);
    free(text);
}

static void log_reload_line(void *ctx, const char *kind, const char *line)
{
    const char *path = ((struct setup *)ctx)->opt->cluster_path;

    if (!strcmp(kind, MEMBERS_SAY_ERROR))
        log_warn("reload: %s:%s", path, line);
    else if (!strcmp(kind, MEMBERS_SAY_REFUSED))
        log_warn("reload refused: %s", line);
}

/* SIGHUP: the cluster file read again by path, as the daemon's user (a
 * file only root may read needs `ddpnet reload`, which sends its bytes). */
/* SIGHUP: the cluster file, read outside the engine lock (loop.h:
 * hangup_read), then applied under it (on_hangup). */
struct hangup_text {
    int err;
    char *text;
    size_t len;
};

static void *hangup_read(void *ctx)
{
    struct setup *s = ctx;
    struct hangup_text *h = calloc(1, sizeof(*h));

    if (h)
        h->err = cluster_read(s->opt->cluster_path, &h->text, &h->len);
    return h;
}

static void on_hangup(void *ctx, void *read, uint64_t now)
{
    struct setup *s = ctx;
    struct hangup_text *h = read;
    int ret = h ? h->err : -ENOMEM;

    if (ret) {
        log_warn("SIGHUP: cannot read %s as user %s: %s; run `ddpnet reload -i %s` as root",
                  s->opt->cluster_path, DAEMON_USER, strerror(-ret), s->dev.ifname);
    } else {
        ret = members_reload(&s->dev, h->text, h->len, log_reload_line, s, now);
        if (ret == 0)
            log_debug("SIGHUP: %s applied", s->opt->cluster_path);
    }
    if (h)
        free(h->text);
    free(h);
}

int daemon_write_state(const char *path, long pid, const char *hosts_file,
                       const char *cluster_file)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    FILE *f;

    if (fd < 0)
        return -errno;
    if (!(f = fdopen(fd, "w"))) {
        int err = -errno;
        close(fd);
        return err;
    }
    fprintf(f, "pid=%ld\nhosts=%s\n", pid, hosts_file);
    if (cluster_file)
        fprintf(f, "cluster=%s\n", cluster_file);
    return fclose(f) ? -errno : 0;
}

static int write_state(struct setup *s)
{
    int ret = daemon_write_state(s->state_path, (long)getpid(), s->opt->hosts_file,
                                 s->opt->cluster_path);

    if (ret)
        return fail(s, ret, "cannot write %s: %s", s->state_path,
                    ret == -ELOOP ? "it is a symbolic link" : strerror(-ret));
    return 0;
}

static int setup_signals(struct setup *s)
{
    sigset_t set;

    signal(SIGPIPE, SIG_IGN);
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    s->signal_fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    return s->signal_fd < 0 ? fail(s, -errno, "signalfd: %s", strerror(errno)) : 0;
}

/* Clears every capability of a daemon that was not started as root. */
static int drop_capabilities(struct setup *s)
{
    int ret = drop_thread_capabilities();

    return ret ? fail(s, ret, "cannot drop capabilities: %s", strerror(-ret)) : 0;
}

/* DAEMON_USER, made when missing as Debian's packages make theirs: a
 * system user with its own group, no home and no shell, so that no other
 * service shares (and can signal) our process. */
static struct passwd *daemon_user(struct setup *s)
{
    static const char *const useradd[] = { "/usr/sbin/useradd", "/sbin/useradd" };
    char *argv[] = { "useradd", "--system", "--user-group", "--no-create-home",
                     "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin",
                     "--comment", "ddpnet daemon", DAEMON_USER, NULL };
    char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL };
    struct passwd *pw = getpwnam(DAEMON_USER);
    int err = ENOENT, status = 0;
    pid_t pid;

    for (size_t i = 0; !pw && i < sizeof(useradd) / sizeof(useradd[0]); i++) {
        err = posix_spawn(&pid, useradd[i], NULL, NULL, argv, envp);
        if (err)
            continue;
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
            ;
        /* Another daemon may have made it meanwhile: look again either way. */
        pw = getpwnam(DAEMON_USER);
        break;
    }
    if (!pw)
        fail(s, -ENOENT, "no user '%s' to run as, and useradd %s; create it: useradd --system "
             "--user-group --no-create-home --shell /usr/sbin/nologin %s", DAEMON_USER,
             err ? strerror(err) : "failed", DAEMON_USER);
    return pw;
}

/* Continues as DAEMON_USER without supplementary groups or capabilities
 * (as root, the bounding set emptied too), unable to regain them, and not
 * dumpable (no core with keys in it). Capabilities and no_new_privs are
 * per thread: no other thread exists before this (the FQDN lookup runs in
 * a child process); every thread -- the shards', the resolver's, the
 * registry's -- starts after it and is born the same. */
static int drop_privileges(struct setup *s)
{
    if (geteuid() != 0)
        return drop_capabilities(s);   /* started with CAP_NET_ADMIN, not as root */
    struct passwd *pw = daemon_user(s);
    if (!pw)
        return -ENOENT;
    /* The bounding set too (root holds CAP_SETPCAP; the setuid below still
     * works: the set limits what an exec may gain, not what we hold). */
    for (int cap = 0; prctl(PR_CAPBSET_READ, cap, 0, 0, 0) >= 0; cap++)
        prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    if (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid))
        return fail(s, -errno, "cannot drop privileges: %s", strerror(errno));
    if (setuid(0) == 0)
        return fail(s, -EPERM, "privileges could be regained after dropping them");
    prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return 0;
}

static void report_ready(struct setup *s)
{
    char addr[INET6_ADDRSTRLEN];

    cluster_addr_format(&s->dev.self->address, addr, sizeof(addr));
    log_notice("%s up: %s/%u, node %s, %zu peers, UDP port %u, mtu %u, %u shards",
             s->dev.ifname, addr, s->dev.cluster.prefix, s->dev.self->name, s->dev.n_peers,
             s->dev.listen_port, s->dev.mtu, s->shards.n);
    char status[256];
    snprintf(status, sizeof(status), "READY=1\nSTATUS=%s up: %s/%u, node %s, %zu peers",
             s->dev.ifname, addr, s->dev.cluster.prefix, s->dev.self->name, s->dev.n_peers);
    notify_send(status);
    if (s->opt->ready_fd >= 0) {
        dprintf(s->opt->ready_fd, "ok\n");
        close(s->opt->ready_fd);
        s->opt->ready_fd = -1;
    }
}

/* The cores this process may run on: its affinity mask (what taskset,
 * systemd's CPUAffinity= or a cgroup cpuset leave it), not every core the
 * machine has online: a daemon confined to 4 cores of 64 sizes its
 * threads for 4, not for 64 that would only take turns on its 4. A CPU
 * quota (cgroup cpu.max) is not a mask and is not counted. Where the mask
 * cannot be read (more CPUs than a cpu_set_t holds), the online count. */
static long usable_cores(void)
{
    cpu_set_t mask;

    CPU_ZERO(&mask);
    if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
        return CPU_COUNT(&mask);
    return sysconf(_SC_NPROCESSORS_ONLN);
}


/* The kernel's MTU towards an underlay address: its route's, lowered by
 * the ICMP "fragmentation needed" / "packet too big" it received about
 * our packets (device.h's route_mtu). */
static int kernel_mtu(void *ctx, const union endpoint *to, unsigned *mtu)
{
    struct setup *s = ctx;

    if (to->sa.sa_family == AF_INET)
        return nl_route_mtu(&s->route_nl, AF_INET, &to->in4.sin_addr, mtu);
    if (to->sa.sa_family == AF_INET6)
        return nl_route_mtu(&s->route_nl, AF_INET6, &to->in6.sin6_addr, mtu);
    return -EAFNOSUPPORT;
}

/* ddp0's tx_dropped (device.h's tun_dropped): RTM_GETLINK needs no
 * capability, so it still works after the privilege drop. */
static int kernel_tun_dropped(void *ctx, uint64_t *n)
{
    struct setup *s = ctx;

    return nl_link_tx_dropped(&s->route_nl, s->ifindex, n);
}

/* Every loop's sockets asked for their drops (device.h: sockets_dropped):
 * with shards, a socket whose shard receives nothing more tells none. */
static void sockets_dropped(void *ctx)
{
    struct setup *s = ctx;

    loop_poll_socket_drops(&s->loop);
    for (unsigned k = 1; k < s->shards.n; k++) {
        struct loop *l = shard_loop(&s->shards, k);
        if (l)
            loop_poll_socket_drops(l);
    }
}

static void open_route_queries(struct setup *s)
{
    int ret = nl_open(&s->route_nl);

    s->dev.sockets_dropped = sockets_dropped;
    s->dev.route_ctx = s;
    if (ret) {
        log_notice("rtnetlink: %s; path MTUs are found by probes alone", strerror(-ret));
        return;
    }
    s->route_nl_open = true;
    s->dev.route_mtu = kernel_mtu;
    s->dev.tun_dropped = kernel_tun_dropped;
}

/* The control socket and metrics (services.h): served from the loop. */
static void on_control(void *ctx, uint64_t now)
{
    struct setup *s = ctx;

    services_run(&s->services, now);
}

static uint64_t on_control_timers(void *ctx, uint64_t now)
{
    struct setup *s = ctx;

    return services_timers(&s->services, now);
}

static int open_services(struct setup *s)
{
    char err[256];
    int ret = services_open(&s->services, &s->dev, s->control_fd, s->env_fd, err, sizeof(err));

    s->services_open = true;
    return ret ? fail(s, ret, "%s", err) : 0;
}

/* What the joining child hands back: registry_join's result. */
struct join_answer {
    int ret;
    char err[512];
    struct registry_joined joined;
};

/* The child: as DAEMON_USER (pw; NULL: started without root, it keeps its
 * user) without capabilities, it joins and writes its answer to fd. */
static void join_child(struct setup *s, const struct passwd *pw, struct cluster_node *self,
                       int fd)
{
    struct join_answer a;
    const char *p = (const char *)&a;
    size_t left = sizeof(a);

    memset(&a, 0, sizeof(a));
    if (pw && (setgroups(0, NULL) || setgid(pw->pw_gid) || setuid(pw->pw_uid)))
        a.ret = -errno;
    if (!a.ret)
        a.ret = drop_thread_capabilities();
    if (a.ret)
        snprintf(a.err, sizeof(a.err), "registry: cannot drop privileges to join: %s",
                 strerror(-a.ret));
    else if ((a.ret = registry_join(s->dev.membership->registry, self, a.err, sizeof(a.err))) == 0)
        registry_joined_get(s->dev.membership->registry, &a.joined);
    while (left) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        p += n;
        left -= (size_t)n;
    }
    _exit(0);
}

static int read_answer(int fd, struct join_answer *a)
{
    char *p = (char *)a;
    size_t left = sizeof(*a);

    while (left) {
        ssize_t n = read(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -EIO;
        p += n;
        left -= (size_t)n;
    }
    return 0;
}

/* Joins the registry in a child process that runs without privileges:
 * libcurl and json-c parse what etcd (or whoever answers in its place)
 * sends, and that must not happen as root. The join is still made before
 * set-up, since the address it takes is ddp0's. This process, still alone
 * (no thread yet), takes the join over: the lease, this node's record. */
static int join_unprivileged(struct setup *s, struct cluster_node *self, char *err,
                             size_t errlen)
{
    struct passwd *pw = NULL;
    struct join_answer a;
    int fd, ret;
    pid_t pid;

    if (geteuid() == 0 && !(pw = daemon_user(s)))
        return -ENOENT;
    if ((pid = fork_piped(&fd)) < 0)
        return (int)pid;
    if (pid == 0)
        join_child(s, pw, self, fd);
    ret = read_answer(fd, &a);
    close(fd);
    reap(pid);
    if (ret) {
        snprintf(err, errlen, "registry: the joining process ended without an answer");
        return ret;
    }
    if (a.ret) {
        snprintf(err, errlen, "%s", a.err);
        return a.ret;
    }
    *self = a.joined.self;
    if ((ret = registry_joined_set(s->dev.membership->registry, &a.joined)))
        snprintf(err, errlen, "registry: cannot take the join over: %s", strerror(-ret));
    return ret;
}

static int setup_certs(struct setup *s);

/* Not in the file, with an authority and no registry: this node as its
 * certificate makes it (up checked it against the file's nodes). The
 * others learn it from its certificate, said on every session. */
static int setup_cert_self(struct setup *s)
{
    struct cluster *c = &s->dev.cluster;
    struct cluster_node self = s->opt->registry_self;
    int ret;

    s->dev.membership->self_registered = true;
    s->dev.membership->registry_self = self;
    cluster_free(c);
    if ((ret = registry_model(&s->dev.membership->file, &self, NULL, 0, c, &(size_t){ 0 }, NULL, NULL)))
        return fail(s, ret, "out of memory");
    s->dev.self = cluster_find_name(c, self.name);
    return 0;
}

/* The model the device starts with: the file's nodes and, with a
 * registry, this node as it joined when the file does not list it (the
 * others come with the registry's first snapshot, after set-up). The
 * registry's files are read here, as root. */
static int setup_membership(struct setup *s)
{
    struct cluster *c = &s->dev.cluster;
    char err[512];
    int ret;

    if ((ret = registry_model(c, NULL, NULL, 0, &s->dev.membership->file, &(size_t){ 0 }, NULL, NULL)))
        return fail(s, ret, "out of memory");
    if ((ret = setup_certs(s)))
        return ret;
    if (!c->registry.n_endpoints)
        return s->opt->cert_self ? setup_cert_self(s) : 0;
    if (!(s->dev.membership->registry = registry_new(c, err, sizeof(err))))
        return fail(s, -EINVAL, "%s", err);
    if (s->opt->cert)
        registry_set_cert(s->dev.membership->registry, s->opt->cert);
    s->dev.records_changed = members_recheck;    /* a peer's word on its record */
    if (s->dev.self)
        return 0;                             /* listed: the file's entry it is */
    struct cluster_node self = s->opt->registry_self;
    if ((ret = join_unprivileged(s, &self, err, sizeof(err))))
        return fail(s, ret, "%s", err);
    s->dev.membership->self_registered = true;
    s->dev.membership->registry_self = self;
    /* A certificate that fixes an address: the one the registry gave. */
    const char *why = s->dev.membership->certs && s->opt->cert ? certs_node_check(s->dev.membership->certs, &self) : NULL;
    if (why)
        return fail(s, -EINVAL, "our certificate and the registry disagree: %s", why);
    /* What we state on every session: the others count our record only
     * so (registry/vouch.h). */
    if ((ret = vouch_self_digest(&self, c, s->dev.self_record)))
        return fail(s, ret, "registry: our own record does not decode");
    s->dev.states_record = true;
    cluster_free(c);
    if ((ret = registry_model(&s->dev.membership->file, &self, NULL, 0, c, &(size_t){ 0 }, NULL, NULL)))
        return fail(s, ret, "out of memory");
    s->dev.self = cluster_find_name(c, self.name);
    return 0;
}

/* The revocations this node took before (a restart, a reboot): read
 * back, as root, and the state file kept open for the ones to come. */
static int setup_revocations(struct setup *s)
{
    const char *dir = s->opt->state_dir ? s->opt->state_dir : DAEMON_DEFAULT_STATE_DIR;
    int fd = revocations_open(dir, s->dev.ifname), n;

    if (fd == -EPERM)   /* revocations_open logged which check failed */
        return fail(s, fd, "state directory %s: refused: it must be root's and writable by no "
                    "one else (chown root, chmod go-w), or pick another with --state-dir", dir);
    if (fd < 0)
        return fail(s, fd, "state directory %s: %s (--state-dir)", dir, strerror(-fd));
    if ((n = revocations_load(&s->dev, fd)) < 0) {
        close(fd);
        return fail(s, n, "state file %s/%s.revoked: %s", dir, s->dev.ifname, strerror(-n));
    }
    if (n)
        log_info("authority: %d revocation%s kept from before", n, n == 1 ? "" : "s");
    /* Where a renewal of our certificate is kept (renewal.h), opened
     * while we are root: a node that cannot keep one still takes it. */
    if ((fd = renewal_open(dir, s->dev.ifname)) < 0)
        log_warn("state directory %s: %s%s: %s; a renewal of this node's certificate is "
                 "taken but not kept across a restart", dir, s->dev.ifname,
                 RENEWAL_FILE_SUFFIX, strerror(-fd));
    s->dev.membership->cert_fd = fd;
    return 0;
}

/* With an authority: the store of its statements, holding our own
 * certificate (checked already by up: keyfile_cert_check). */
static int setup_certs(struct setup *s)
{
    const char *why;
    enum certs_verdict v;
    int ret;

    if (members_certs_start(&s->dev))
        return fail(s, -ENOMEM, "out of memory");
    if (!s->dev.membership->certs)
        return 0;
    if ((ret = setup_revocations(s)))
        return ret;
    s->dev.cert_said = members_cert_said;
    if (!s->opt->cert)
        return 0;
    if (!(s->dev.self_cert = strdup(s->opt->cert)))
        return fail(s, -ENOMEM, "out of memory");
    s->dev.self_cert[strcspn(s->dev.self_cert, "\r\n")] = '\0';
    v = certs_offer(s->dev.membership->certs, s->opt->cert, (uint64_t)time(NULL), &why);
    if (v != CERTS_ADDED && v != CERTS_KNOWN)
        return fail(s, -EINVAL, "our certificate does not hold: %s%s%s", certs_verdict_str(v),
                    why[0] ? ": " : "", why);
    return 0;
}

/* A member sees us at another address (our NAT's mapping): into our
 * registry record, which the keeper thread puts. */
static void observed_changed(struct device *dev)
{
    const struct disco_endpoint *ep = &dev->disco.observed;
    struct cluster_cand c = { .port = ep->port };
    char text[INET6_ADDRSTRLEN + 8];

    c.addr.family = ep->family == DISCO_FAMILY_IPV6 ? AF_INET6 : AF_INET;
    memcpy(c.addr.bytes, ep->addr, c.addr.family == AF_INET6 ? 16u : 4u);
    if (record_cand_format(&c, text, sizeof(text)) == 0)
        log_info("members see our packets come from %s; our registry record will say so", text);
    registry_observed(dev->membership->registry, &c);
}

/* The registry's threads, once privileges are dropped: they are born
 * without them. */
static int start_registry(struct setup *s)
{
    int ret = s->dev.membership->registry ? registry_start(s->dev.membership->registry) : 0;

    if (s->dev.membership->registry && s->dev.membership->self_registered)
        s->dev.observed_changed = observed_changed;

    return ret ? fail(s, ret, "registry: cannot start its threads: %s", strerror(-ret)) : 0;
}

/* Shards (shard.h): DDPNET_SHARDS if set, else one per core the daemon
 * may run on, at most SHARDS_DEFAULT_MAX (shard.h says why). */
static unsigned shard_count(void)
{
    long cores = usable_cores();
    unsigned fallback = cores < 1 ? 1 : cores > SHARDS_DEFAULT_MAX ? SHARDS_DEFAULT_MAX : (unsigned)cores;
    unsigned n = unsigned_from_env("DDPNET_SHARDS", fallback);

    return n < 1 ? 1 : n;
}

/* Whether idle shards help busy ones with crypto (loop.h: loop_crew):
 * DDPNET_SHARD_HELP=0 turns it off, to measure what it buys. */
static bool shards_help(void)
{
    return unsigned_from_env("DDPNET_SHARD_HELP", 1) != 0;
}

/* The model changed (membership/members.c, after the swap): the kernel
 * routes follow the grants. */
static void routes_changed(struct device *dev)
{
    struct setup *s = (struct setup *)((char *)dev - offsetof(struct setup, dev));
    int ret = forward_update(&s->forward, &dev->cluster, dev->self);

    if (ret)
        log_warn("routes: the keeper is gone (%s): kernel routes stay as they were",
                 strerror(-ret));
}

/* Routes through ddp0 and, on a carrier, forwarding (forward.h): as root,
 * before the drop. */
static int setup_forward(struct setup *s)
{
    const char *why = "";
    int ret = forward_start(&s->forward, s->dev.ifname, &s->dev.cluster, s->dev.self, &why);

    if (ret)
        return fail(s, ret, "routes: %s: %s", why, strerror(-ret));
    s->dev.routes_changed = routes_changed;
    return 0;
}

static int setup_all(struct setup *s)
{
    int ret;

    if ((ret = shards_init(&s->shards, shard_count())))
        return fail(s, ret, "DDPNET_SHARDS=%u: between 1 and %u", shard_count(), SHARDS_MAX);
    s->shards_ready = true;
    s->dev.shards = s->shards.n;
    if ((ret = resolve_endpoints(s)) || (ret = setup_signals(s)) || (ret = setup_sockets(s)) || (ret = setup_interface(s)) ||
        (ret = setup_forward(s)))
        return ret;
    daemon_socket_path(s->socket_path, sizeof(s->socket_path), s->opt->run_dir, s->dev.ifname);
    daemon_env_socket_path(s->env_path, sizeof(s->env_path), s->opt->run_dir, s->dev.ifname);
    daemon_state_path(s->state_path, sizeof(s->state_path), s->opt->run_dir, s->dev.ifname);
    s->control_fd = control_listen(s->socket_path);
    if (s->control_fd < 0)
        return fail(s, s->control_fd, "control socket %s: %s", s->socket_path,
                    strerror(-s->control_fd));
    s->env_fd = control_listen_env(s->env_path);
    if (s->env_fd < 0)
        return fail(s, s->env_fd, "env socket %s: %s", s->env_path, strerror(-s->env_fd));
    if ((ret = open_services(s)))
        return ret;
    struct loop_config lc = {
        .name = s->dev.ifname, .max_datagram = s->dev.mtu + WG_TRANSPORT_MIN_LEN,
        .busy_poll_us = s->dev.cluster.busy_poll_us,
        .queue_target_us = queue_target_us(),
        .tun_fd = s->tun_fd, .udp4_fd = s->udp4_fd, .udp6_fd = s->udp6_fd,
        .control_fd = services_fd(&s->services), .signal_fd = s->signal_fd,
        .flows = s->flows,
    };
    memcpy(lc.flow4_fds, s->flow4, sizeof(lc.flow4_fds));
    memcpy(lc.flow6_fds, s->flow6, sizeof(lc.flow6_fds));
    if (s->shards.n > 1) {
        lc.engine_lock = &s->shards.lock;
        lc.current = &s->dev.loop;
        lc.crew = &s->shards.crew;   /* the metrics read each loop's lock figures there */
        lc.crew_no_help = !shards_help();
    }
    struct loop_handlers on;
    engine_loop_handlers(&s->dev, &on);
    on.control_ctx = s;
    on.control = on_control;
    on.control_timers = on_control_timers;
    on.hangup_read = hangup_read;
    on.hangup = on_hangup;
    ret = loop_init(&s->loop, &lc, &on);
    if (ret)
        return fail(s, ret, "io_uring: %s", strerror(-ret));
    s->loop_ready = true;
    s->dev.loop = &s->loop;
    /* $DDPNET_RELAY_FRAMES=0: relayed messages go wrapped in RELAY and
     * RELAYED only, as from a version before relay frames; =whole: in
     * frames authenticated whole, as from a version before data frames
     * (for comparing them, or should a frame ever be the trouble). */
    const char *frames = getenv("DDPNET_RELAY_FRAMES");
    s->dev.relay_frames_off = frames && !strcmp(frames, "0");
    s->dev.data_frames_off = frames && !strcmp(frames, "whole");
    note_cluster_file(s);   /* as root: the file may be readable by root alone */
    open_route_queries(s);
    if ((ret = write_hosts(s)) || (ret = write_state(s)) || (ret = drop_privileges(s)))
        return ret;
    /* After the drop: threads are born with what their creator has (the
     * shards start later: start_shards). */
    if ((ret = resolver_start(s->dev.resolver, RESOLVER_THREADS)))
        return fail(s, ret, "resolver threads: %s", strerror(-ret));
    if ((ret = start_hosts_writer(s)))
        return ret;
    if ((ret = start_registry(s)))
        return ret;
    return 0;
}

/* Shards 1..n-1 (shard.h), once everything before the loop ran: from
 * here on the engine runs under its lock. */
static int start_shards(struct setup *s)
{
    struct loop_config lc = {
        .name = s->dev.ifname, .max_datagram = s->dev.mtu + WG_TRANSPORT_MIN_LEN,
        .busy_poll_us = s->dev.cluster.busy_poll_us,
        .queue_target_us = queue_target_us(),
        .crew = s->loop.crew,
        .crew_no_help = !s->loop.helps,   /* as loop 0 has it: DDPNET_SHARD_HELP read once */
        .flows = s->flows,      /* every shard sends from the same extra ports */
    };
    struct loop_handlers on;
    int ret;

    memcpy(lc.flow4_fds, s->flow4, sizeof(lc.flow4_fds));
    memcpy(lc.flow6_fds, s->flow6, sizeof(lc.flow6_fds));

    if (s->shards.n < 2)
        return 0;
    engine_loop_handlers(&s->dev, &on);
    ret = shards_start(&s->shards, &lc, &on, &s->loop, &s->dev.loop, s->shard_tun,
                       s->shard_udp4, s->shard_udp6);
    if (ret)
        log_error("%s: cannot start %u shards: %s", s->dev.ifname, s->shards.n, strerror(-ret));
    else
        log_info("%s: the data path runs on %u shards (DDPNET_SHARDS)", s->dev.ifname,
                 s->shards.n);
    return ret;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void teardown(struct setup *s)
{
    /* A setup that failed leaves nothing behind for `down` to clean (we
     * are still root then). After a run, `down` removes the files. */
    if (!s->running && s->control_fd >= 0)
        unlink(s->socket_path);
    if (!s->running && s->env_fd >= 0)
        unlink(s->env_path);
    if (s->loop_ready)
        loop_destroy(&s->loop);
    forward_stop(&s->forward);   /* it undoes what it changed, ddp0 still there */
    hosts_writer_stop(s->dev.membership->hosts_writer);
    s->dev.membership->hosts_writer = NULL;
    if (s->services_open)
        services_close(&s->services);
    notify_close();
    device_destroy(&s->dev);
    members_certs_free(&s->dev);
    registry_free(s->dev.membership->registry);
    resolver_free(s->dev.resolver);
    cluster_free(&s->dev.cluster);
    close_fd(&s->control_fd);
    close_fd(&s->env_fd);
    close_fd(&s->udp4_fd);
    close_fd(&s->udp6_fd);
    for (unsigned i = 0; i < LOOP_FLOWS_MAX; i++) {
        close_fd(&s->flow4[i]);
        close_fd(&s->flow6[i]);
    }
    close_fd(&s->tun_fd);
    if (s->shards_ready) {
        shards_free(&s->shards);   /* after the engine let go of their buffers */
        for (unsigned k = 1; k < s->shards.n; k++) {
            close_fd(&s->shard_tun[k]);
            close_fd(&s->shard_udp4[k]);
            close_fd(&s->shard_udp6[k]);
        }
    }
    close_fd(&s->signal_fd);
    close_fd(&s->dev.membership->hosts_fd);
    membership_free(&s->membership);
    if (s->route_nl_open)
        nl_close(&s->route_nl);
}

int daemon_run(struct daemon_options *opt)
{
    struct setup *s = calloc(1, sizeof(*s));
    int ret;

    if (!s) {
        cluster_free(opt->cluster);
        return -ENOMEM;
    }
    s->opt = opt;
    s->tun_fd = s->udp4_fd = s->udp6_fd = s->control_fd = s->env_fd = s->signal_fd = -1;
    s->forward.fd = -1;
    for (unsigned k = 0; k < SHARDS_MAX; k++)
        s->shard_tun[k] = s->shard_udp4[k] = s->shard_udp6[k] = -1;
    for (unsigned i = 0; i < LOOP_FLOWS_MAX; i++)
        s->flow4[i] = s->flow6[i] = -1;
    membership_init(&s->membership);
    s->dev.membership = &s->membership;
    char ident[64];
    snprintf(ident, sizeof(ident), "ddpnet/%s", opt->ifname);
    log_init(ident, opt->foreground, opt->debug ? LOG_LVL_DEBUG : LOG_LVL_INFO);

    snprintf(s->dev.ifname, sizeof(s->dev.ifname), "%s", opt->ifname);
    s->dev.cluster = *opt->cluster;          /* taken over */
    memset(opt->cluster, 0, sizeof(*opt->cluster));
    s->dev.self = opt->self;                 /* points into the same nodes */
    /* Under systemd a refused reload says to restart the unit. */
    (void)notify_unit(s->dev.membership->service, sizeof(s->dev.membership->service));
    /* While root: systemd's socket may be out of reach of our own user. */
    if ((ret = notify_open()))
        log_warn("NOTIFY_SOCKET: %s; systemd will not hear that %s is up", strerror(-ret),
                 opt->ifname);
    ret = 0;
    if ((ret = crypto_core_init()))
        ret = fail(s, ret, "cannot initialise the crypto library (%s=%s?): %s", AEAD_BACKEND_ENV,
                   getenv(AEAD_BACKEND_ENV) ? getenv(AEAD_BACKEND_ENV) : "", strerror(-ret));
    else if (s->dev.cluster.mtu > DEVICE_MTU_MAX)
        ret = fail(s, -EINVAL, "mtu %u is above the %u this version supports",
                   s->dev.cluster.mtu, DEVICE_MTU_MAX);
    else if ((ret = setup_membership(s)))
        ;
    else if ((ret = device_init(&s->dev, opt->private_key, clock_now_ns())))
        ret = fail(s, ret, "cannot set up peers: %s", strerror(-ret));
    sodium_memzero(opt->private_key, sizeof(opt->private_key));
    if (!ret)
        ret = setup_all(s);
    if (!ret) {
        s->running = true;
        report_ready(s);
        uint64_t now = clock_now_ns();
        /* Our local candidates first: the first ENDPOINTS carry them. */
        discovery_local_refresh(&s->dev, now);
        /* Reach out to every peer whose endpoint we know: the mesh is up
         * before the first training step needs it. */
        for (size_t i = 0; i < s->dev.n_peers; i++)
            handshake_send_initiation(s->dev.peers[i], false, now);
        ret = start_shards(s);
        if (!ret)
            ret = loop_run(&s->loop);
        shards_stop(&s->shards);
        s->dev.loop = &s->loop;   /* the engine is ours alone again */
        notify_send("STOPPING=1");
        if (s->dev.membership->registry) {
            /* Told first: our record's DELETE then removes us at once,
             * where a lost lease's waits out its grace (members.h). */
            device_say_leaving(&s->dev, clock_now_ns());
            registry_leave(s->dev.membership->registry);
        }
        const struct device_stats *st = &s->dev.stats;
        log_info("%s stopped; %llu TUN reads gave %llu packets, %llu receives held %llu "
                 "datagrams, %llu TUN writes", s->dev.ifname,
                 (unsigned long long)st->tun_reads, (unsigned long long)st->tun_segments,
                 (unsigned long long)st->udp_receives, (unsigned long long)st->udp_datagrams,
                 (unsigned long long)st->tun_writes);
        if (st->relay_forwarded || st->relay_refused || st->disco_bad)
            log_info("%s: relayed %llu messages for others, refused %llu; %llu bad disco "
                     "messages", s->dev.ifname, (unsigned long long)st->relay_forwarded,
                     (unsigned long long)st->relay_refused, (unsigned long long)st->disco_bad);
    }
    teardown(s);
    free(s);
    return ret;
}
