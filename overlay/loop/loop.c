/* SPDX-License-Identifier: MIT */
/* The io_uring event loop (see loop.h). Completions carry the struct they
 * belong to as user_data (a pkt or a tun_write, told apart by their first
 * field); the two polled fds use small tags, which no (16-byte aligned)
 * buffer address can equal. */
#include <errno.h>
#include <fcntl.h>
#include <linux/sock_diag.h>
#include <netinet/udp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/loop/loop.h"

#define TAG_CONTROL 1u
#define TAG_SIGNAL  2u
#define TAG_WAKE    3u

/* io_uring waits on blocking fds itself (poll inside the kernel); on an
 * O_NONBLOCK fd it would hand back -EAGAIN instead.
 *
 * For ddp0 that wait happens in io_uring's worker threads (TUN has no
 * non-blocking mode for io_uring), and so, once several receives race for
 * one datagram, does a UDP receive: each packet then wakes a worker and
 * then the loop. Polling the fds through the ring and reading them on the
 * loop's thread instead was tried: faster pings, slower streams (the
 * workers' copies overlap the loop's crypto; bench/README.md). Kept as
 * it is. */
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

struct tun_write *loop_tun_write_get(struct loop *l)
{
    return tun_write_get(&l->pool);
}

void loop_tun_write_put(struct loop *l, struct tun_write *w)
{
    tun_write_put(&l->pool, w);
}

void loop_pkt_unref(struct loop *l, struct pkt *pkt)
{
    if (--pkt->refs == 0)
        pkt_put(&l->pool, pkt);
}

/* Submits the next run of segments of pkt as one send. */
static void send_chunk(struct loop *l, struct pkt *pkt)
{
    unsigned left = (unsigned)(pkt->nseg - pkt->sent), chunk = left;
    unsigned by_bytes = PKT_GSO_MAX_BYTES / pkt->stride;
    struct io_uring_sqe *sqe = NULL;

    if (!(sqe = get_sqe(l))) {
        pkt_put(&l->pool, pkt);
        return;
    }
    if (chunk > PKT_GSO_MAX_SEGS)
        chunk = PKT_GSO_MAX_SEGS;
    if (by_bytes && chunk > by_bytes)
        chunk = by_bytes;
    /* Larger than a full-size message (a relayed packet that did not fit
     * the relay's MTU): the kernel refuses such a GSO send, but fragments
     * a lone datagram. */
    if (pkt->stride > l->max_datagram)
        chunk = 1;
    bool last_in = pkt->sent + chunk == pkt->nseg;
    size_t bytes = (size_t)(chunk - 1) * pkt->stride + (last_in ? pkt->len : pkt->stride);

    pkt->chunk = (uint16_t)chunk;
    pkt->iov = (struct iovec){ pkt_slot(pkt, pkt->sent), bytes };
    pkt->msg = (struct msghdr){ .msg_name = &pkt->addr, .msg_namelen = endpoint_sockaddr_len(&pkt->addr),
                                .msg_iov = &pkt->iov, .msg_iovlen = 1 };
    if (chunk > 1) {
        /* All but the last datagram of the run are exactly stride bytes. */
        pkt->msg.msg_control = pkt->ctrl.bytes;
        pkt->msg.msg_controllen = CMSG_SPACE(sizeof(uint16_t));
        struct cmsghdr *cm = CMSG_FIRSTHDR(&pkt->msg);
        cm->cmsg_level = SOL_UDP;
        cm->cmsg_type = UDP_SEGMENT;
        cm->cmsg_len = CMSG_LEN(sizeof(uint16_t));
        uint16_t gso = (uint16_t)pkt->stride;
        memcpy(CMSG_DATA(cm), &gso, sizeof(gso));
    }
    pkt->op = PKT_UDP_SEND;
    io_uring_prep_sendmsg(sqe, pkt->fd, &pkt->msg, 0);
    io_uring_sqe_set_data(sqe, pkt);
}

/* The socket flow leaves from: its extra port's, else the port's own. */
static int flow_fd(const struct loop *l, unsigned flow, int family)
{
    int v6 = family == AF_INET6;

    if (flow && flow <= l->flows && l->flow_fd[v6][flow - 1u] >= 0)
        return l->flow_fd[v6][flow - 1u];
    return l->udp_fd[v6];
}

void loop_send(struct loop *l, struct pkt *pkt, const union endpoint *dst)
{
    int fd = flow_fd(l, pkt->flow, dst->sa.sa_family);

    if (fd < 0 || pkt->nseg == 0) {
        pkt_put(&l->pool, pkt);
        return;
    }
    if (&pkt->addr != dst)
        pkt->addr = *dst;
    pkt->fd = fd;
    pkt->sent = 0;
    send_chunk(l, pkt);
}

int loop_send_now(struct loop *l, const uint8_t *msg, uint32_t len, const union endpoint *dst)
{
    int fd = l->udp_fd[dst->sa.sa_family == AF_INET6];

    if (fd < 0 || dst->sa.sa_family == AF_UNSPEC)
        return -EAFNOSUPPORT;
    /* The sockets block for the ring's sake; this send must not. */
    if (sendto(fd, msg, len, MSG_DONTWAIT, &dst->sa, endpoint_sockaddr_len(dst)) < 0)
        return -errno;
    return 0;
}

int loop_send_flow_now(struct loop *l, unsigned flow, const uint8_t *msg, uint32_t len,
                       const union endpoint *dst)
{
    int fd = flow_fd(l, flow, dst->sa.sa_family);

    if (!flow || fd == l->udp_fd[dst->sa.sa_family == AF_INET6])
        return -ENOENT;
    return sendto(fd, msg, len, MSG_DONTWAIT, &dst->sa, endpoint_sockaddr_len(dst)) < 0 ? -errno
                                                                                       : 0;
}

void loop_send_message(struct loop *l, struct pkt *pkt, const union endpoint *dst, uint32_t len)
{
    pkt->nseg = 1;
    pkt->stride = len;
    pkt->len = len;
    loop_send(l, pkt, dst);
}

void loop_write_tun(struct loop *l, struct tun_write *w)
{
    struct io_uring_sqe *sqe;

    if (!(sqe = get_sqe(l))) {
        loop_pkt_unref(l, w->owner);
        tun_write_put(&l->pool, w);
        return;
    }
    w->op = PKT_TUN_WRITE;
    io_uring_prep_writev(sqe, l->tun_fd, w->iov, w->iovcnt, 0);
    io_uring_sqe_set_data(sqe, w);
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
    io_uring_prep_read(sqe, l->tun_fd, pkt->in, PKT_IN_CAP, 0);
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
    pkt->iov = (struct iovec){ pkt->in, sizeof(pkt->in) };
    pkt->msg = (struct msghdr){ .msg_name = &pkt->addr, .msg_namelen = sizeof(pkt->addr),
                                .msg_iov = &pkt->iov, .msg_iovlen = 1,
                                .msg_control = pkt->ctrl.bytes,
                                .msg_controllen = sizeof(pkt->ctrl.bytes) };
    l->udp_recvs[which]++;
    io_uring_prep_recvmsg(sqe, pkt->fd, &pkt->msg, 0);
    io_uring_sqe_set_data(sqe, pkt);
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
    arm_poll(l, l->wake_fd, TAG_WAKE, &l->wake_polled);
}

/* A socket's count of drops grew: the engine hears by how much. */
static void count_socket_drops(struct loop *l, int which, uint32_t total)
{
    uint32_t grew = pkt_drops_grew(&l->udp_drops_seen[which], total);

    if (grew && l->on.socket_drops)
        l->on.socket_drops(l->on.ctx, grew);
}

/* One of a socket's SO_MEMINFO counters (SK_MEMINFO_*) in *out; false
 * when the kernel did not give it. */
static bool socket_meminfo(int fd, unsigned var, uint32_t *out)
{
    uint32_t mem[SK_MEMINFO_VARS];
    socklen_t len = sizeof(mem);

    if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_MEMINFO, mem, &len) ||
        len <= var * sizeof(mem[0]))
        return false;
    *out = mem[var];
    return true;
}

void loop_poll_socket_drops(struct loop *l)
{
    for (int which = 0; which < 2; which++) {
        uint32_t drops;

        if (socket_meminfo(l->udp_fd[which], SK_MEMINFO_DROPS, &drops))
            count_socket_drops(l, which, drops);
    }
}

/* How long a receive waited in its socket, from the kernel's stamp (0:
 * no stamp, or a clock stepped back since). */
static uint64_t socket_wait(const struct pkt_recv_info *ri)
{
    struct timespec ts;
    uint64_t read_ns;

    if (!ri->has_stamp || clock_gettime(CLOCK_REALTIME, &ts))
        return 0;
    read_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    return read_ns > ri->stamp_ns ? read_ns - ri->stamp_ns : 0;
}

/* Whether a socket holds less than another datagram's worth behind the
 * receive just read (SO_MEMINFO: the bytes the kernel books for its
 * queue). A long wait then is the loop's own lateness in reading, not a
 * queue: RFC 8289 leaves a queue of at most one packet alone.
 *
 * Read once per socket in a turn of the loop, and the answer kept for
 * the turn's other receives (loop_run forgets it): one getsockopt per
 * receive cost a starved daemon two thirds of what it drained under a
 * flood (issue 55). The turn's receives all left the socket before the
 * turn began, so the
 * first read tells what is behind them within a turn's lateness. (The
 * ring's IORING_CQE_F_SOCK_NONEMPTY would say it for free, but kernel
 * 6.18 does not set it on a UDP socket's recvmsg: tried, 2026-12.) */
static bool socket_drained(struct loop *l, int which)
{
    if (l->backlog[which] == LOOP_BACKLOG_UNREAD) {
        uint32_t queued;

        /* The kernel books a datagram at about twice its bytes (bench/README.md). */
        l->backlog[which] = socket_meminfo(l->udp_fd[which], SK_MEMINFO_RMEM_ALLOC, &queued) &&
                                    queued <= 2 * l->max_datagram
                                ? LOOP_BACKLOG_DRAINED
                                : LOOP_BACKLOG_STANDING;
    }
    return l->backlog[which] == LOOP_BACKLOG_DRAINED;
}

/* The socket's queue management on a receive (codel.h). The socket's
 * backlog is asked only of a receive that waited past the target, and
 * at most once a turn (socket_drained). */
static bool queue_signal(struct loop *l, int which, const struct pkt_recv_info *ri, uint64_t now)
{
    struct codel *c = &l->queue[which];
    uint64_t wait;

    if (!c->target_ns)
        return false;
    wait = socket_wait(ri);
    if (wait >= c->target_ns && socket_drained(l, which))
        wait = 0;
    return codel_signal(c, wait, now);
}

static void on_udp_datagrams(struct loop *l, struct pkt *pkt, int which, uint64_t now)
{
    struct pkt_recv_info ri = pkt_recv_info(pkt);

    if (ri.has_drops)
        count_socket_drops(l, which, ri.drops);
    pkt->congested = queue_signal(l, which, &ri, now);
    l->on.udp(l->on.ctx, pkt, ri.seg_size, now);
}

/* Whether a failed read of ddp0 (res <= 0) means the device's end: its
 * queue detached or the interface deleted (-EBADFD), unregistered under
 * a blocked read (-EFAULT), the fd closed (-EBADF), or an end of file
 * (0: no TUN queue). Any other failure passes, and the read is armed
 * again at the next turn: -EAGAIN, -EINTR, and what io_uring gives
 * under load (-ECANCELED when it cannot start a worker thread, -ENOBUFS,
 * -ENOMEM). Each of those once stopped the loop for good, and a shard's
 * stop went unseen: the daemon ran on with that queue of ddp0 unread. */
static bool tun_read_ends(int res)
{
    return res == 0 || res == -EBADFD || res == -EFAULT || res == -EBADF;
}

static void on_tun_read(struct loop *l, struct pkt *pkt, int res, uint64_t now)
{
    l->tun_reads--;
    if (res > 0) {
        l->tun_failing_since = 0;
        pkt->len = (uint32_t)res;
        l->on.tun(l->on.ctx, pkt, now);
        return;
    }
    pkt_put(&l->pool, pkt);
    if (l->tun_gone || res == -EAGAIN || res == -EINTR)
        return;
    if (!tun_read_ends(res)) {
        /* Read again; a failure that lasts with no packet between is
         * the end too, not a loop spinning on it forever. */
        if (!l->tun_failing_since)
            l->tun_failing_since = now;
        if (now - l->tun_failing_since < LOOP_TUN_FAILING_NS) {
            log_notice_rl("%s: a read failed (%s), reading again", l->name, strerror(-res));
            return;
        }
    }
    /* The interface was deleted (ddpnet down) or broke. */
    log_notice("%s: device gone (%s), stopping", l->name, res ? strerror(-res) : "end of file");
    l->tun_gone = true;
    __atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);   /* loop_stop writes it too */
}

static void on_send(struct loop *l, struct pkt *pkt, int res)
{
    if (res < 0)
        log_debug_rl("send failed: %s", strerror(-res));   /* per packet */
    pkt->sent = (uint16_t)(pkt->sent + pkt->chunk);
    if (res >= 0 && pkt->sent < pkt->nseg)
        send_chunk(l, pkt);
    else
        pkt_put(&l->pool, pkt);
}

static void on_tun_write(struct loop *l, struct tun_write *w, int res)
{
    if (res < 0)
        log_debug_rl("write to %s failed: %s", l->name, strerror(-res));
    loop_pkt_unref(l, w->owner);
    tun_write_put(&l->pool, w);
}

static void on_buffer(struct loop *l, void *ptr, int res, uint64_t now)
{
    struct pkt *pkt = ptr;

    switch (pkt->op) {
    case PKT_TUN_READ:
        if (res > 0)
            busy_poll_packet(&l->busy, now, BUSY_POLL_OUT);
        on_tun_read(l, pkt, res, now);
        break;
    case PKT_UDP_RECV: {
        int which = pkt->fd == l->udp_fd[1];
        l->udp_recvs[which]--;
        if (res > 0) {
            busy_poll_packet(&l->busy, now, BUSY_POLL_IN);
            pkt->len = (uint32_t)res;
            on_udp_datagrams(l, pkt, which, now);
        } else {
            pkt_put(&l->pool, pkt);
        }
        break;
    }
    case PKT_UDP_SEND:
        on_send(l, pkt, res);
        break;
    case PKT_TUN_WRITE:
        on_tun_write(l, ptr, res);
        break;
    default:
        log_error_rl("completion for a buffer in state %d", pkt->op);
    }
}

static void on_control(struct loop *l, uint64_t now)
{
    l->control_polled = false;
    l->on.control(l->on.control_ctx, now);
}

static void on_signal(struct loop *l)
{
    struct signalfd_siginfo si;

    l->signal_polled = false;
    while (read(l->signal_fd, &si, sizeof(si)) == sizeof(si)) {
        if (si.ssi_signo == SIGHUP && l->on.hangup) {
            log_info("%s: SIGHUP, reloading the cluster file", l->name);
            l->hangup_pending = true;   /* run_hangup, after this turn */
            continue;
        }
        log_notice("%s: signal %u, stopping", l->name, si.ssi_signo);
        __atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
    }
}

/* Another shard made a deadline earlier, or asked us to stop. */
static void on_wake(struct loop *l)
{
    uint64_t n;

    l->wake_polled = false;
    (void)!read(l->wake_fd, &n, sizeof(n));
}

static void wake(struct loop *l)
{
    uint64_t one = 1;

    (void)!write(l->wake_fd, &one, sizeof(one));
}

void loop_stop(struct loop *l)
{
    __atomic_store_n(&l->stop, true, __ATOMIC_RELEASE);
    wake(l);
}

/* --- with shards: crypto jobs deferred to the end of the handlers ----------- */

static bool deferring(const struct loop *l)
{
    return l->deferred.job != NULL;
}

/* The engine lock's cost (struct loop_lock_stats), on its own clock:
 * CLOCK_MONOTONIC through the vDSO, a few tens of nanoseconds, two reads
 * per hold when the lock is free (trylock), four when it is not. */
static uint64_t lock_clock(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Ours alone to write; others read it (loop_lock_stats). */
static void stat_add(uint64_t *field, uint64_t n)
{
    __atomic_store_n(field, __atomic_load_n(field, __ATOMIC_RELAXED) + n, __ATOMIC_RELAXED);
}

static void lock_take(struct loop *l)
{
    if (pthread_mutex_trylock(l->engine_lock)) {
        uint64_t asked = lock_clock();
        pthread_mutex_lock(l->engine_lock);
        l->locked_at = lock_clock();
        stat_add(&l->lock_stats.wait_ns, l->locked_at - asked);
        stat_add(&l->lock_stats.contended, 1);
    } else {
        l->locked_at = lock_clock();
    }
    stat_add(&l->lock_stats.taken, 1);
}

static void lock_drop(struct loop *l)
{
    stat_add(&l->lock_stats.held_ns, lock_clock() - l->locked_at);
    pthread_mutex_unlock(l->engine_lock);
}

/* Our ring's wait begins or ends: busy time is what lies between. */
static void busy_end(struct loop *l)
{
    if (l->engine_lock)
        stat_add(&l->lock_stats.busy_ns, lock_clock() - l->busy_since);
}

static void busy_begin(struct loop *l)
{
    if (l->engine_lock)
        l->busy_since = lock_clock();
}

bool loop_lock_stats(const struct loop *l, unsigned k, struct loop_lock_stats *out)
{
    const struct loop *o = l->crew && k < LOOP_CREW_MAX
                               ? __atomic_load_n(&l->crew->member[k], __ATOMIC_ACQUIRE)
                               : k == l->shard ? l : NULL;

    if (!o || !o->engine_lock)
        return false;
    out->held_ns = __atomic_load_n(&o->lock_stats.held_ns, __ATOMIC_RELAXED);
    out->wait_ns = __atomic_load_n(&o->lock_stats.wait_ns, __ATOMIC_RELAXED);
    out->busy_ns = __atomic_load_n(&o->lock_stats.busy_ns, __ATOMIC_RELAXED);
    out->taken = __atomic_load_n(&o->lock_stats.taken, __ATOMIC_RELAXED);
    out->contended = __atomic_load_n(&o->lock_stats.contended, __ATOMIC_RELAXED);
    out->jobs_locked = __atomic_load_n(&o->lock_stats.jobs_locked, __ATOMIC_RELAXED);
    return true;
}

/* Finishes, in order, the deferred jobs whose crypto ran. */
static void take_deferred(struct loop *l, uint64_t now)
{
    struct crypto_job done;

    while (deferred_take(&l->deferred, &done)) {
        l->on.crypto_done(l->on.ctx, &done, now);
        sodium_memzero(done.key, WG_KEY_LEN);
    }
}

/* Room kept in the job ring for what one completion's handler makes (a
 * read's seal, a receive's open: one or two; a session that came up
 * sends what was staged for it): the loop runs the jobs in flight
 * between completions, outside the lock, when less is left, so that a
 * handler seldom finds the ring full (deferred_one below). */
#define LOOP_JOB_ROOM 16u

/* Runs the oldest deferred job here, under the lock, and finishes it:
 * for callers that need room or order now (counted: jobs_locked). */
static void deferred_one(struct loop *l, uint64_t now)
{
    unsigned head = l->deferred.head;

    stat_add(&l->lock_stats.jobs_locked, 1);
    deferred_run(&l->deferred, head, head + 1);
    take_deferred(l, now);
}

/* Asks idle loops of the crew to help with our `jobs` ready jobs: at
 * most one loop per job beyond the one we run ourselves. A loop asked
 * is woken through its eventfd; one already asked is not asked again. */
static void ask_for_help(struct loop *l, unsigned jobs)
{
    for (unsigned k = 0; k < LOOP_CREW_MAX && jobs > 1; k++) {
        struct loop *o = __atomic_load_n(&l->crew->member[k], __ATOMIC_ACQUIRE);

        if (!o || o == l || !__atomic_load_n(&o->idle, __ATOMIC_ACQUIRE))
            continue;
        if (!__atomic_exchange_n(&o->help_asked, true, __ATOMIC_ACQ_REL))
            wake(o);
        jobs--;
    }
}

/* Asked to help: runs the ready jobs of every loop of the crew but ours. */
static void help_others(struct loop *l)
{
    if (!__atomic_exchange_n(&l->help_asked, false, __ATOMIC_ACQ_REL))
        return;
    for (unsigned k = 0; k < LOOP_CREW_MAX; k++) {
        struct loop *o = __atomic_load_n(&l->crew->member[k], __ATOMIC_ACQUIRE);

        if (o && o != l)
            __atomic_add_fetch(&l->jobs_helped, deferred_help(&o->deferred), __ATOMIC_RELAXED);
    }
}

/* After the handlers: the jobs they made run outside the engine lock, on
 * this thread (no hand-off) and on idle loops that help, while other
 * shards run the engine; then they are finished under it, in the order
 * they were made. */
static void run_deferred(struct loop *l, uint64_t now)
{
    while (deferred_count(&l->deferred)) {
        unsigned from = l->deferred.head, to = l->deferred.tail;

        lock_drop(l);
        if (l->helps)
            ask_for_help(l, to - from);
        deferred_run(&l->deferred, from, to);
        lock_take(l);
        *l->current = l;
        take_deferred(l, now);
    }
}

struct crypto_job *loop_crypto_job(struct loop *l, uint64_t now)
{
    if (!deferring(l))
        return NULL;   /* one loop: the caller runs the job inline */
    if (deferred_count(&l->deferred) == DEFERRED_DEPTH)
        deferred_one(l, now);
    return deferred_reserve(&l->deferred);
}

void loop_crypto_submit(struct loop *l, struct crypto_job *job)
{
    (void)job;
    deferred_submit(&l->deferred);
}

void loop_packet_unawaited(struct loop *l)
{
    busy_poll_unawaited(&l->busy);
}

void loop_crypto_drain(struct loop *l, uint64_t now)
{
    while (deferring(l) && deferred_count(&l->deferred))
        deferred_one(l, now);
}

unsigned loop_shard(const struct loop *l)
{
    return l->shard;
}

static void on_completion(struct loop *l, struct io_uring_cqe *cqe, uint64_t now)
{
    uint64_t tag = io_uring_cqe_get_data64(cqe);

    if (tag == TAG_CONTROL)
        on_control(l, now);
    else if (tag == TAG_SIGNAL)
        on_signal(l);
    else if (tag == TAG_WAKE)
        on_wake(l);
    else
        on_buffer(l, (void *)(uintptr_t)tag, cqe->res, now);
}

/* The engine's due work; the wait ends at its next deadline, or within
 * LOOP_MAX_SLEEP_NS. */
static uint64_t run_timers(struct loop *l, uint64_t now)
{
    if (l->timer_loop)   /* a shard: the timer loop runs them */
        return now + LOOP_MAX_SLEEP_NS;

    uint64_t next = l->on.timers(l->on.ctx, now), t;

    if (l->on.control_timers && (t = l->on.control_timers(l->on.control_ctx, now)) < next)
        next = t;
    /* Rate-limited lines whose window is over say what they suppressed
     * (LOOP_MAX_SLEEP_NS late at most). */
    log_flush(now);

    return next < now + LOOP_MAX_SLEEP_NS ? next : now + LOOP_MAX_SLEEP_NS;
}

/* Submits, then takes what is done without sleeping (busy_poll.h); an
 * empty poll yields the CPU to whoever we are waiting for, and a yield
 * that lasts says the CPU is wanted. */
static int poll_ring(struct loop *l)
{
    int ret = io_uring_submit_and_get_events(&l->ring);

    if (ret >= 0 && !io_uring_cq_ready(&l->ring)) {
        uint64_t before = clock_now_ns(), after;
        sched_yield();
        after = clock_now_ns();
        busy_poll_yielded(&l->busy, after, after - before);
    }
    return ret;
}

/* A wait on the ring that failed: what the kernel can give again is
 * taken as a turn with what is done so far, never as the daemon's end (a
 * run of weeks meets it): -EBUSY, completions the ring could not hold
 * wait in the kernel's overflow list until we take those in the ring;
 * -EAGAIN or -ENOMEM, the kernel was short of memory for a request (a
 * millisecond's pause, so that a lasting shortage is not a spin). True
 * only for what is a fault of ours (a bad ring, a bad request): the loop
 * stops, and the daemon with it. */
static bool ring_wait_failed(int ret)
{
    switch (ret) {
    case -EBUSY:
        log_warn_rl("io_uring: completions overflowed the ring; taking them and going on");
        return false;
    case -EAGAIN:
    case -ENOMEM:
        log_warn_rl("io_uring: %s; trying again in 1 ms", strerror(-ret));
        nanosleep(&(struct timespec){ .tv_nsec = 1000000 }, NULL);
        return false;
    default:
        log_error("io_uring: %s", strerror(-ret));
        return true;
    }
}

/* With shards, the engine is run under its lock (loop_config); alone,
 * these do nothing. */
static void engine_enter(struct loop *l)
{
    if (!l->engine_lock)
        return;
    lock_take(l);   /* until engine_leave */
    *l->current = l;
}

/* A deadline that our work made earlier than the timer loop sleeps until
 * wakes it (once: it plans its sleep again). */
static void engine_leave(struct loop *l)
{
    struct loop *t = l->timer_loop;

    if (!l->engine_lock)
        return;
    if (t && l->on.next_deadline && l->on.next_deadline(l->on.ctx) < t->sleep_until) {
        t->sleep_until = 0;
        wake(t);
    }
    lock_drop(l);
}

/* A SIGHUP taken this turn: what it reads, read outside the engine lock
 * (a slow disk stalls no shard), then applied under it. */
static void run_hangup(struct loop *l)
{
    void *read = NULL;
    uint64_t now;

    if (!l->hangup_pending)
        return;
    l->hangup_pending = false;
    if (l->on.hangup_read)
        read = l->on.hangup_read(l->on.control_ctx);
    engine_enter(l);
    now = clock_now_ns();
    l->on.hangup(l->on.control_ctx, read, now);
    if (deferring(l))
        run_deferred(l, now);
    engine_leave(l);
}

static bool stopped(struct loop *l)
{
    return __atomic_load_n(&l->stop, __ATOMIC_ACQUIRE);
}

int loop_run(struct loop *l)
{
    busy_begin(l);
    while (!stopped(l)) {
        engine_enter(l);
        uint64_t now = clock_now_ns();
        uint64_t next = run_timers(l, now);
        uint64_t wait = next > now ? next - now : 0;
        struct __kernel_timespec ts = { .tv_sec = (long long)(wait / WG_NSEC_PER_SEC),
                                        .tv_nsec = (long long)(wait % WG_NSEC_PER_SEC) };
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;

        if (deferring(l))   /* what the timers sealed goes before we sleep */
            run_deferred(l, now);
        l->sleep_until = next;
        refill(l);
        engine_leave(l);
        if (l->helps)
            __atomic_store_n(&l->idle, true, __ATOMIC_RELEASE);
        busy_end(l);
        int ret = busy_poll_active(&l->busy, now)
                      ? poll_ring(l)
                      : io_uring_submit_and_wait_timeout(&l->ring, &cqe, 1, &ts, NULL);
        busy_begin(l);
        if (ret < 0 && ret != -ETIME && ret != -EINTR && ring_wait_failed(ret))
            return ret;
        if (l->helps) {
            __atomic_store_n(&l->idle, false, __ATOMIC_RELEASE);
            help_others(l);   /* older work than ours, and unlocked */
        }
        engine_enter(l);
        now = clock_now_ns();
        l->backlog[0] = l->backlog[1] = LOOP_BACKLOG_UNREAD;   /* a new turn (socket_drained) */
        io_uring_for_each_cqe(&l->ring, head, cqe) {
            if (deferring(l) && deferred_count(&l->deferred) > DEFERRED_DEPTH - LOOP_JOB_ROOM)
                run_deferred(l, now);   /* room, made where the lock may go */
            on_completion(l, cqe, now);
            seen++;
        }
        io_uring_cq_advance(&l->ring, seen);
        if (deferring(l))
            run_deferred(l, now);
        engine_leave(l);
        run_hangup(l);
    }
    return 0;
}

static void loop_free_shard_parts(struct loop *l)
{
    if (l->wake_fd >= 0)
        close(l->wake_fd);
    l->wake_fd = -1;
    deferred_free(&l->deferred);
}

int loop_init(struct loop *l, const struct loop_config *c, const struct loop_handlers *on)
{
    int ret;

    memset(l, 0, sizeof(*l));
    l->wake_fd = -1;
    l->on = *on;
    l->name = c->name;
    l->max_datagram = c->max_datagram;
    busy_poll_init(&l->busy, c->busy_poll_us);
    for (int i = 0; i < 2; i++)
        codel_init(&l->queue[i], (uint64_t)c->queue_target_us * 1000u, CODEL_INTERVAL_NS);
    l->tun_fd = c->tun_fd;
    l->udp_fd[0] = c->udp4_fd;
    l->udp_fd[1] = c->udp6_fd;
    l->flows = c->flows < LOOP_FLOWS_MAX ? c->flows : LOOP_FLOWS_MAX;
    for (unsigned i = 0; i < l->flows; i++) {
        l->flow_fd[0][i] = c->flow4_fds[i];
        l->flow_fd[1][i] = c->flow6_fds[i];
    }
    l->control_fd = c->control_fd;
    l->signal_fd = c->signal_fd;
    int fds[] = { c->tun_fd, c->udp4_fd, c->udp6_fd };
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        if (fds[i] >= 0 && (ret = make_blocking(fds[i])))
            return ret;
    if (c->engine_lock) {
        l->engine_lock = c->engine_lock;
        l->current = c->current;
        l->timer_loop = c->timer_loop;
        l->shard = c->shard;
        l->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
        ret = l->wake_fd < 0 ? -errno : deferred_init(&l->deferred);
        if (ret) {
            loop_free_shard_parts(l);
            return ret;
        }
    }
    ret = pkt_pool_init(&l->pool, LOOP_POOL_SIZE, LOOP_TUN_WRITES);
    if (ret) {
        loop_free_shard_parts(l);
        return ret;
    }
    /* One thread submits; completions' task work runs when we wait, not
     * by interrupting us (fewer wake-ups and IPIs). Older kernels refuse
     * these flags: then plain. */
    ret = io_uring_queue_init(LOOP_RING_ENTRIES, &l->ring,
                              IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN);
    if (ret == -EINVAL)
        ret = io_uring_queue_init(LOOP_RING_ENTRIES, &l->ring, 0);
    if (ret) {
        pkt_pool_destroy(&l->pool);
        loop_free_shard_parts(l);
        return ret;
    }
    if (c->crew && c->engine_lock && c->shard < LOOP_CREW_MAX) {
        l->crew = c->crew;
        l->helps = !c->crew_no_help;
        __atomic_store_n(&c->crew->member[c->shard], l, __ATOMIC_RELEASE);
    }
    return 0;
}

void loop_destroy(struct loop *l)
{
    /* The crew's loops stopped before any is destroyed (shard.h), so
     * none is helping with our jobs now. */
    if (l->crew)
        __atomic_store_n(&l->crew->member[l->shard], NULL, __ATOMIC_RELEASE);
    io_uring_queue_exit(&l->ring);
    pkt_pool_destroy(&l->pool);
    loop_free_shard_parts(l);
}
