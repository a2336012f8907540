/* The io_uring event loop (see loop.h). Completions carry the pkt they
 * belong to as user_data; the two polled fds use small tags, which no
 * (16-byte aligned) pkt address can equal. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "overlay/control.h"
#include "overlay/engine.h"
#include "overlay/log.h"
#include "overlay/loop.h"
#include "overlay/timers.h"

#define TAG_CONTROL 1u
#define TAG_SIGNAL  2u
/* Wake at least this often, so the cookie secret rotates on time. */
#define LOOP_MAX_SLEEP_NS (10 * WG_NSEC_PER_SEC)

/* io_uring waits on blocking fds itself (poll inside the kernel); on an
 * O_NONBLOCK fd it would hand back -EAGAIN instead. */
static int make_blocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return -errno;
    return 0;
}

static struct io_uring_sqe *get_sqe(struct loop *l)
{
    struct io_uring_sqe *sqe = io_uring_get_sqe(&l->ring);

    if (!sqe) {
        io_uring_submit(&l->ring);
        sqe = io_uring_get_sqe(&l->ring);
    }
    return sqe;
}

struct pkt *loop_pkt_get(struct loop *l)
{
    return pkt_get(&l->pool);
}

void loop_pkt_put(struct loop *l, struct pkt *pkt)
{
    pkt_put(&l->pool, pkt);
}

static socklen_t sockaddr_len(const union endpoint *e)
{
    return e->sa.sa_family == AF_INET6 ? sizeof(e->in6) : sizeof(e->in4);
}

void loop_send_udp(struct loop *l, struct device *dev, struct pkt *pkt,
                   const union endpoint *dst, uint32_t len)
{
    int fd = l->udp_fd[dst->sa.sa_family == AF_INET6];
    struct io_uring_sqe *sqe;

    (void)dev;
    if (fd < 0 || !(sqe = get_sqe(l))) {
        pkt_put(&l->pool, pkt);
        return;
    }
    if (&pkt->addr != dst)
        pkt->addr = *dst;
    pkt->op = PKT_UDP_SEND;
    pkt->iov = (struct iovec){ pkt->data, len };
    pkt->msg = (struct msghdr){ .msg_name = &pkt->addr, .msg_namelen = sockaddr_len(&pkt->addr),
                                .msg_iov = &pkt->iov, .msg_iovlen = 1 };
    io_uring_prep_sendmsg(sqe, fd, &pkt->msg, 0);
    io_uring_sqe_set_data(sqe, pkt);
}

void loop_write_tun(struct loop *l, struct device *dev, struct pkt *pkt, uint32_t len)
{
    struct io_uring_sqe *sqe = get_sqe(l);

    (void)dev;
    if (!sqe) {
        pkt_put(&l->pool, pkt);
        return;
    }
    pkt->op = PKT_TUN_WRITE;
    io_uring_prep_write(sqe, l->tun_fd, pkt_plain(pkt), len, 0);
    io_uring_sqe_set_data(sqe, pkt);
}

static bool arm_tun_read(struct loop *l)
{
    struct pkt *pkt = pkt_get(&l->pool);
    struct io_uring_sqe *sqe;

    if (!pkt)
        return false;
    if (!(sqe = get_sqe(l))) {
        pkt_put(&l->pool, pkt);
        return false;
    }
    pkt->op = PKT_TUN_READ;
    io_uring_prep_read(sqe, l->tun_fd, pkt_plain(pkt), DEVICE_MTU_MAX, 0);
    io_uring_sqe_set_data(sqe, pkt);
    l->tun_reads++;
    return true;
}

static bool arm_udp_recv(struct loop *l, int which)
{
    struct pkt *pkt = pkt_get(&l->pool);
    struct io_uring_sqe *sqe;

    if (!pkt)
        return false;
    if (!(sqe = get_sqe(l))) {
        pkt_put(&l->pool, pkt);
        return false;
    }
    pkt->op = PKT_UDP_RECV;
    pkt->fd = l->udp_fd[which];
    pkt->iov = (struct iovec){ pkt->data, sizeof(pkt->data) };
    pkt->msg = (struct msghdr){ .msg_name = &pkt->addr, .msg_namelen = sizeof(pkt->addr),
                                .msg_iov = &pkt->iov, .msg_iovlen = 1 };
    io_uring_prep_recvmsg(sqe, pkt->fd, &pkt->msg, 0);
    io_uring_sqe_set_data(sqe, pkt);
    l->udp_recvs[which]++;
    return true;
}

static void arm_poll(struct loop *l, int fd, uint64_t tag, bool *armed)
{
    struct io_uring_sqe *sqe;

    if (*armed || fd < 0 || !(sqe = get_sqe(l)))
        return;
    io_uring_prep_poll_add(sqe, fd, POLLIN);
    io_uring_sqe_set_data64(sqe, tag);
    *armed = true;
}

/* Keeps the reads in flight; a pool running dry pauses them (back
 * pressure) until sends complete and return buffers. */
static void refill(struct loop *l)
{
    while (!l->tun_gone && l->tun_reads < LOOP_TUN_READS && arm_tun_read(l))
        ;
    for (int i = 0; i < 2; i++)
        while (l->udp_fd[i] >= 0 && l->udp_recvs[i] < LOOP_UDP_RECVS && arm_udp_recv(l, i))
            ;
    arm_poll(l, l->control_fd, TAG_CONTROL, &l->control_polled);
    arm_poll(l, l->signal_fd, TAG_SIGNAL, &l->signal_polled);
}

static void on_udp_datagram(struct loop *l, struct pkt *pkt, uint64_t now)
{
    switch (noise_message_type(pkt->data, pkt->len)) {
    case WG_MSG_INITIATION:
    case WG_MSG_RESPONSE:
    case WG_MSG_COOKIE_REPLY:
        handshake_receive(l->dev, pkt, now);
        break;
    case WG_MSG_TRANSPORT:
        datapath_from_udp(l->dev, pkt, now);
        break;
    default:
        l->dev->stats.dropped_bad_packet++;
        pkt_put(&l->pool, pkt);
    }
}

static void on_tun_read(struct loop *l, struct pkt *pkt, int res, uint64_t now)
{
    l->tun_reads--;
    if (res > 0) {
        pkt->len = (uint32_t)res;
        datapath_from_tun(l->dev, pkt, now);
        return;
    }
    pkt_put(&l->pool, pkt);
    if (res != -EAGAIN && res != -EINTR && !l->tun_gone) {
        /* The interface was deleted (ddpnet down) or broke. */
        log_info("%s: device gone (%s), stopping", l->dev->ifname, strerror(-res));
        l->tun_gone = true;
        l->stop = true;
    }
}

static void on_packet(struct loop *l, struct pkt *pkt, int res, uint64_t now)
{
    switch (pkt->op) {
    case PKT_TUN_READ:
        on_tun_read(l, pkt, res, now);
        break;
    case PKT_UDP_RECV:
        l->udp_recvs[pkt->fd == l->udp_fd[1]]--;
        if (res > 0) {
            pkt->len = (uint32_t)res;
            on_udp_datagram(l, pkt, now);
        } else {
            pkt_put(&l->pool, pkt);
        }
        break;
    case PKT_UDP_SEND:
    case PKT_TUN_WRITE:
        if (res < 0)
            log_debug("%s failed: %s", pkt->op == PKT_UDP_SEND ? "send" : "tun write",
                      strerror(-res));
        pkt_put(&l->pool, pkt);
        break;
    default:
        pkt_put(&l->pool, pkt);
    }
}

static void on_control(struct loop *l, uint64_t now)
{
    int fd;

    l->control_polled = false;
    while ((fd = accept4(l->control_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
        control_serve(l->dev, fd, now);
}

static void on_signal(struct loop *l)
{
    struct signalfd_siginfo si;

    l->signal_polled = false;
    while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si)) {
        log_info("%s: signal %u, stopping", l->dev->ifname, si.ssi_signo);
        l->stop = true;
    }
}

static void on_completion(struct loop *l, struct io_uring_cqe *cqe, uint64_t now)
{
    uint64_t tag = io_uring_cqe_get_data64(cqe);

    if (tag == TAG_CONTROL)
        on_control(l, now);
    else if (tag == TAG_SIGNAL)
        on_signal(l);
    else
        on_packet(l, (struct pkt *)(uintptr_t)tag, cqe->res, now);
}

/* Runs due timers; returns the next deadline. */
static uint64_t run_timers(struct loop *l, uint64_t now)
{
    uint64_t next = now + LOOP_MAX_SLEEP_NS;

    cookie_checker_rotate(&l->dev->checker, now);
    for (size_t i = 0; i < l->dev->n_peers; i++) {
        struct peer *p = l->dev->peers[i];
        if (timers_next(p) <= now)
            timers_run(p, now);
        uint64_t t = timers_next(p);
        if (t < next)
            next = t;
    }
    return next;
}

int loop_run(struct loop *l)
{
    while (!l->stop) {
        uint64_t now = clock_now_ns();
        uint64_t next = run_timers(l, now);
        uint64_t wait = next > now ? next - now : 0;
        struct __kernel_timespec ts = { .tv_sec = (long long)(wait / WG_NSEC_PER_SEC),
                                        .tv_nsec = (long long)(wait % WG_NSEC_PER_SEC) };
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;

        refill(l);
        int ret = io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
        if (ret < 0 && ret != -ETIME && ret != -EINTR) {
            log_error("io_uring: %s", strerror(-ret));
            return ret;
        }
        now = clock_now_ns();
        io_uring_for_each_cqe(&l->ring, head, cqe) {
            on_completion(l, cqe, now);
            seen++;
        }
        io_uring_cq_advance(&l->ring, seen);
    }
    return 0;
}

int loop_init(struct loop *l, struct device *dev, int tun_fd, int udp4_fd, int udp6_fd,
              int control_fd, int signal_fd)
{
    int ret;

    memset(l, 0, sizeof(*l));
    l->dev = dev;
    l->tun_fd = tun_fd;
    l->udp_fd[0] = udp4_fd;
    l->udp_fd[1] = udp6_fd;
    l->control_fd = control_fd;
    l->signal_fd = signal_fd;
    int fds[] = { tun_fd, udp4_fd, udp6_fd };
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0 && (ret = make_blocking(fds[i])))
            return ret;
    ret = pkt_pool_init(&l->pool, LOOP_POOL_SIZE);
    if (ret)
        return ret;
    ret = io_uring_queue_init(LOOP_RING_ENTRIES, &l->ring, 0);
    if (ret) {
        pkt_pool_destroy(&l->pool);
        return ret;
    }
    return 0;
}

void loop_destroy(struct loop *l)
{
    io_uring_queue_exit(&l->ring);
    pkt_pool_destroy(&l->pool);
}
