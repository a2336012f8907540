/* SPDX-License-Identifier: MIT */
/* The keeper of what routes change in the system (forward.h): its
 * messages, its set-up, its reconciling of the kernel routes through
 * ddp0, and its undoing at the end. */
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/capability.h>

#include "config/addr.h"
#include "config/routes.h"
#include "overlay/base/hash.h"
#include "overlay/base/log.h"
#include "overlay/daemon/forward.h"
#include "tun/netlink.h"

/* One message, either way: the daemon's set of routes wanted through
 * ddp0 (n of them), or the keeper's answer to the first (err). */
struct forward_msg {
    int32_t err;
    uint32_t n;
    struct cluster_route routes[CLUSTER_ROUTES_TOTAL_MAX];
};

/* What the keeper changed, to undo. */
#define FORWARD_SYSCTLS_MAX (2u * (CLUSTER_ROUTES_MAX + 1u))
struct keeper {
    struct nl nl;
    char ifname[IF_NAMESIZE];
    int ifindex;
    bool table;                           /* the nft table made */
    size_t n_sysctls;
    struct { char path[96]; char old; } sysctls[FORWARD_SYSCTLS_MAX];
    uint32_t n_routes;
    struct cluster_route routes[CLUSTER_ROUTES_TOTAL_MAX];
};

static void wanted(const struct cluster *c, const struct cluster_node *self,
                   struct forward_msg *m)
{
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < c->n_nodes; i++)
        for (unsigned k = 0; &c->nodes[i] != self && k < c->nodes[i].n_routes; k++)
            if (m->n < CLUSTER_ROUTES_TOTAL_MAX)
                m->routes[m->n++] = c->nodes[i].routes[k];
}

static uint64_t sum_of(const struct forward_msg *m)
{
    return (uint64_t)hash_fnv1a(HASH_FNV_BASIS, (const uint8_t *)m->routes,
                                m->n * sizeof(m->routes[0])) << 32 | m->n;
}

/* --- the keeper ------------------------------------------------------------ */

static bool route_in(const struct cluster_route *r, const struct cluster_route *set, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        if (cluster_route_equal(r, &set[i]))
            return true;
    return false;
}

/* The kernel's routes through ddp0 made m's: those gone deleted, the new
 * ones added, each logged. */
static void reconcile(struct keeper *k, const struct forward_msg *m)
{
    char t[CLUSTER_ROUTE_TEXT_MAX];
    uint32_t n = 0;
    int ret;

    for (uint32_t i = 0; i < k->n_routes; i++) {
        const struct cluster_route *r = &k->routes[i];
        if (route_in(r, m->routes, m->n))
            continue;
        cluster_route_format(r, t, sizeof(t));
        ret = nl_route_del(&k->nl, k->ifindex, r->net.family, r->net.bytes, r->prefix);
        if (ret && ret != -ESRCH)
            log_warn("routes: cannot remove %s via %s: %s", t, k->ifname, strerror(-ret));
        else
            log_notice("routes: removed %s via %s", t, k->ifname);
    }
    for (uint32_t i = 0; i < m->n && i < CLUSTER_ROUTES_TOTAL_MAX; i++) {
        const struct cluster_route *r = &m->routes[i];
        cluster_route_format(r, t, sizeof(t));
        if (!route_in(r, k->routes, k->n_routes)) {
            ret = nl_route_add(&k->nl, k->ifindex, r->net.family, r->net.bytes, r->prefix);
            if (ret && ret != -EEXIST) {
                log_warn("routes: cannot add %s via %s: %s", t, k->ifname, strerror(-ret));
                continue;
            }
            log_notice("routes: added %s via %s", t, k->ifname);
        }
        k->routes[n++] = *r;
    }
    k->n_routes = n;
}

/* Sets a forwarding sysctl to 1, keeping what it was to put back. */
static int forwarding_on(struct keeper *k, int family, const char *ifname)
{
    char path[96], old = '0';
    int fd;

    snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/forwarding",
             family == AF_INET ? "ipv4" : "ipv6", ifname);
    for (size_t i = 0; i < k->n_sysctls; i++)
        if (!strcmp(k->sysctls[i].path, path))
            return 0;
    if ((fd = open(path, O_RDWR | O_CLOEXEC)) < 0)
        return -errno;
    if (read(fd, &old, 1) != 1 || (old != '1' && (lseek(fd, 0, SEEK_SET) || write(fd, "1", 1) != 1))) {
        int ret = -errno;
        close(fd);
        return ret ? ret : -EIO;
    }
    close(fd);
    if (old == '1')
        return 0;
    log_notice("routes: forwarding on for %s (net.%s.conf.%s.forwarding = 1; put back at down)",
               ifname, family == AF_INET ? "ipv4" : "ipv6", ifname);
    if (k->n_sysctls < FORWARD_SYSCTLS_MAX) {
        snprintf(k->sysctls[k->n_sysctls].path, sizeof(k->sysctls[0].path), "%s", path);
        k->sysctls[k->n_sysctls++].old = old;
    }
    return 0;
}

/* Runs `nft -f -` with text on its input: 0 or -EIO. */
static int nft(const char *text)
{
    int fds[2], status;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC))
        return -errno;
    if ((pid = fork()) == 0) {
        dup2(fds[0], 0);
        execlp("nft", "nft", "-f", "-", (char *)NULL);
        _exit(127);
    }
    close(fds[0]);
    if (pid < 0) {
        close(fds[1]);
        return -errno;
    }
    (void)!write(fds[1], text, strlen(text));
    close(fds[1]);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

/* The table masquerading what comes from ddp0 to self's prefixes. */
static int masquerade(struct keeper *k, const struct cluster_node *self)
{
    char text[4096], t[CLUSTER_ROUTE_TEXT_MAX];
    int at;

    at = snprintf(text, sizeof(text),
                  "table inet ddpnet-%s {\n"
                  " chain postrouting {\n"
                  "  type nat hook postrouting priority srcnat; policy accept;\n",
                  k->ifname);
    for (unsigned i = 0; i < self->n_routes; i++) {
        cluster_route_format(&self->routes[i], t, sizeof(t));
        at += snprintf(text + at, sizeof(text) - (size_t)at,
                       "  iifname \"%s\" %s daddr %s masquerade\n", k->ifname,
                       self->routes[i].net.family == AF_INET ? "ip" : "ip6", t);
    }
    snprintf(text + at, sizeof(text) - (size_t)at, " }\n}\n");
    if (nft(text))
        return -EIO;
    k->table = true;
    log_notice("routes: nft table inet ddpnet-%s masquerades what %s sends to this node's "
               "routes (deleted at down)", k->ifname, k->ifname);
    return 0;
}

/* Forwarding on ddp0 and on each link self's prefixes go out of, and the
 * masquerade unless the file says routed. */
static int carry(struct keeper *k, const struct cluster_node *self, const char **why)
{
    char out[IF_NAMESIZE];
    int ret, oif;

    for (unsigned i = 0; i < self->n_routes; i++) {
        const struct cluster_route *r = &self->routes[i];
        if ((ret = forwarding_on(k, r->net.family, k->ifname))) {
            /* The unit's ProtectKernelTunables makes /proc/sys read-only:
             * forwarding already on (sysctl.d) is read, never written. */
            *why = ret == -EROFS || ret == -EACCES
                       ? "forwarding is off and /proc/sys is read-only here (systemd's "
                         "ProtectKernelTunables): set net.ipv4.ip_forward = 1 (ipv6: "
                         "net.ipv6.conf.all.forwarding = 1) in /etc/sysctl.d"
                       : "cannot turn forwarding on for the interface";
            return ret;
        }
        if (nl_route_oif(&k->nl, r->net.family, r->net.bytes, &oif) || oif == k->ifindex ||
            !if_indextoname((unsigned)oif, out)) {
            char t[CLUSTER_ROUTE_TEXT_MAX];
            cluster_route_format(r, t, sizeof(t));
            log_warn("routes: this node has no route of its own to %s, which it carries", t);
            continue;
        }
        if ((ret = forwarding_on(k, r->net.family, out))) {
            *why = "cannot turn forwarding on for a route's outgoing link";
            return ret;
        }
    }
    if (!self->routed && (ret = masquerade(k, self))) {
        *why = "cannot make the nft table that masquerades the routes (is nft installed?)";
        return ret;
    }
    return 0;
}

static void undo(struct keeper *k)
{
    struct forward_msg none = { 0 };
    char text[64];

    reconcile(k, &none);
    if (k->table) {
        snprintf(text, sizeof(text), "delete table inet ddpnet-%s\n", k->ifname);
        if (nft(text))
            log_warn("routes: cannot delete nft table inet ddpnet-%s", k->ifname);
        else
            log_notice("routes: nft table inet ddpnet-%s deleted", k->ifname);
    }
    for (size_t i = 0; i < k->n_sysctls; i++) {
        int fd = open(k->sysctls[i].path, O_WRONLY | O_CLOEXEC);
        if (fd >= 0 && write(fd, &k->sysctls[i].old, 1) == 1)
            log_notice("routes: %s put back to %c", k->sysctls[i].path, k->sysctls[i].old);
        if (fd >= 0)
            close(fd);
    }
}

/* Keeps CAP_NET_ADMIN alone, for itself and what it runs (nft). */
static int narrow_capabilities(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];

    for (int cap = 0; cap <= CAP_LAST_CAP; cap++)
        if (cap != CAP_NET_ADMIN)
            prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);
    memset(data, 0, sizeof(data));
    data[0].effective = data[0].permitted = 1u << CAP_NET_ADMIN;
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    return syscall(SYS_capset, &hdr, data) ? -errno : 0;
}

static void keeper_main(int fd, const char *ifname, const struct cluster *c,
                        const struct cluster_node *self)
{
    static struct keeper k;
    static struct forward_msg m;
    const char *why = "";
    int ret;

    /* Only fd stays: the daemon's others (ddp0's queues above all) are
     * its to close. */
    if (dup2(fd, 3) < 0 || syscall(SYS_close_range, 4u, ~0u, 0u))
        _exit(1);
    fd = 3;
    signal(SIGHUP, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);   /* it ends when the daemon does, after undoing */
    snprintf(k.ifname, sizeof(k.ifname), "%s", ifname);
    if ((ret = narrow_capabilities()) || (ret = nl_open(&k.nl)) ||
        (ret = k.ifindex = nl_link_index(&k.nl, ifname)) < 0) {
        why = "cannot keep CAP_NET_ADMIN or reach rtnetlink";
        ret = ret < 0 ? ret : -EIO;
    } else {
        ret = self->n_routes ? carry(&k, self, &why) : 0;
        wanted(c, self, &m);
        if (!ret)
            reconcile(&k, &m);
    }
    memset(&m, 0, sizeof(m));
    m.err = ret;
    snprintf((char *)m.routes, sizeof(m.routes), "%s", why);
    (void)!send(fd, &m, sizeof(m), MSG_NOSIGNAL);
    if (ret) {
        undo(&k);
        _exit(1);
    }
    for (;;) {
        ssize_t got = recv(fd, &m, sizeof(m), 0);
        if (got < 0 && errno == EINTR)
            continue;
        if (got != (ssize_t)sizeof(m) || m.n > CLUSTER_ROUTES_TOTAL_MAX)
            break;
        reconcile(&k, &m);
    }
    undo(&k);
    nl_close(&k.nl);
    _exit(0);
}

/* --- the daemon's side ------------------------------------------------------- */

int forward_start(struct forward *f, const char *ifname, const struct cluster *c,
                  const struct cluster_node *self, const char **why)
{
    static struct forward_msg m;
    size_t grants = 0;
    int sv[2];

    f->pid = 0;
    f->fd = -1;
    for (size_t i = 0; i < c->n_nodes; i++)
        grants += c->nodes[i].n_routes;
    /* Under an authority, a certificate may grant a route after up
     * (config/cert.h): the keeper waits for it. */
    if (!grants && !c->has_authority)
        return 0;
    *why = "cannot start the routes' keeper";
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
        return -errno;
    if ((f->pid = fork()) < 0) {
        int ret = -errno;
        close(sv[0]);
        close(sv[1]);
        f->pid = 0;
        return ret;
    }
    if (f->pid == 0) {
        close(sv[0]);
        keeper_main(sv[1], ifname, c, self);
    }
    close(sv[1]);
    f->fd = sv[0];
    if (recv(f->fd, &m, sizeof(m), 0) != (ssize_t)sizeof(m)) {
        forward_stop(f);
        return -EIO;
    }
    if (m.err) {
        static char text[CLUSTER_ROUTES_TOTAL_MAX];
        memcpy(text, m.routes, sizeof(text) - 1);
        *why = text;
        forward_stop(f);
        return m.err;
    }
    wanted(c, self, &m);
    f->sent_sum = sum_of(&m);
    return 0;
}

int forward_update(struct forward *f, const struct cluster *c, const struct cluster_node *self)
{
    static struct forward_msg m;
    uint64_t sum;

    wanted(c, self, &m);
    if ((sum = sum_of(&m)) == f->sent_sum)
        return 0;
    if (f->fd < 0) {
        if (m.n)
            log_warn("routes: a grant came with a change; routes through this node's "
                     "interface are installed at up: restart it to take them");
        f->sent_sum = sum;
        return 0;
    }
    if (send(f->fd, &m, sizeof(m), MSG_NOSIGNAL) != (ssize_t)sizeof(m))
        return -errno;
    f->sent_sum = sum;
    return 0;
}

void forward_stop(struct forward *f)
{
    if (f->fd >= 0)
        close(f->fd);
    f->fd = -1;
    if (f->pid > 0)
        while (waitpid(f->pid, NULL, 0) < 0 && errno == EINTR)
            ;
    f->pid = 0;
}
