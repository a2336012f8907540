/* SPDX-License-Identifier: MIT */
/* delayline: a long path made on one machine (bench/wan.sh). It takes the
 * packets that an xtables NFQUEUE rule queues (`iptables-nft -A FORWARD
 * -j NFQUEUE --queue-num N`), holds each for a fixed delay and lets it go
 * on; this kernel has no netem, and nftables here has no `queue`.
 *
 *   delayline [-q QUEUE] [-d DELAY_MS] [-l LOSS] [-t SECONDS] [-s SEED]
 *
 * LOSS is a probability (0.0005 drops one packet in 2000 at random). It
 * stops after SECONDS (0: never) or on SIGTERM/SIGINT, letting every held
 * packet go first, and prints one line of counts to stderr: packets,
 * dropped at random, how late the verdicts were against their due time,
 * and the kernel's own drops (a full queue, a full socket).
 *
 * Only the packets' ids travel (copy mode META): the verdicts say nothing
 * of the contents. The delay is the same for every packet, so packets fall
 * due in the order they came, which is the order of their ids, and one
 * batch verdict ("accept every id up to N") lets a whole run go. The
 * queue does not fail open: a packet the delay line cannot hold is
 * dropped, as a full router queue drops it, and the kernel counts it. It
 * runs SCHED_FIFO: on a busy machine a normal task is woken milliseconds
 * late, and the path would be longer than it says. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <libmnl/libmnl.h>
#include <linux/netfilter.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_queue.h>

#include "overlay/base/clock.h"

#define HELD_MAX       (1u << 20)       /* packets held at once; a power of two */
#define QUEUE_MAXLEN   HELD_MAX         /* the kernel's queue holds as many */
#define SOCK_RCVBUF    (64 << 20)       /* netlink receive buffer, bytes */
#define RECV_BATCH     64u
#define RECV_BUF       2048u            /* one packet's message: metadata only */
#define FIFO_PRIORITY  50

struct held {
    uint32_t id;
    uint64_t due;
};

struct line {
    struct mnl_socket *nl;
    uint16_t queue;
    uint64_t delay_ns;
    double loss;
    struct held *ring;               /* HELD_MAX, due in order */
    uint32_t head, tail;             /* ring[head % HELD_MAX] is due first */
    uint64_t packets, lost, overflow, verdicts, errors;
    uint64_t released, late_sum_ns, late_max_ns;   /* released when due */
};

static volatile sig_atomic_t stopping;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
}

/* Random loss needs no good random: splitmix64 to a double in [0, 1). */
static uint64_t rng_state;

static double rng_unit(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (double)((z ^ (z >> 31)) >> 11) / (double)(1ull << 53);
}

static struct nlmsghdr *nfq_header(char *buf, uint16_t type, uint16_t queue, uint16_t flags)
{
    struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
    struct nfgenmsg *nfg;

    nlh->nlmsg_type = (NFNL_SUBSYS_QUEUE << 8) | type;
    nlh->nlmsg_flags = NLM_F_REQUEST | flags;
    nfg = mnl_nlmsg_put_extra_header(nlh, sizeof(*nfg));
    nfg->nfgen_family = AF_UNSPEC;
    nfg->version = NFNETLINK_V0;
    nfg->res_id = htons(queue);
    return nlh;
}

/* Sends one request and waits for the kernel's acknowledgement; 0 or a
 * negative errno. */
static int request(struct line *l, struct nlmsghdr *nlh)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    unsigned portid = mnl_socket_get_portid(l->nl);
    ssize_t n;

    nlh->nlmsg_seq = (unsigned)time(NULL);
    if (mnl_socket_sendto(l->nl, nlh, nlh->nlmsg_len) < 0)
        return -errno;
    n = mnl_socket_recvfrom(l->nl, buf, sizeof(buf));
    if (n < 0)
        return -errno;
    return mnl_cb_run(buf, (size_t)n, nlh->nlmsg_seq, portid, NULL, NULL) < 0 ? -errno : 0;
}

/* Binds the queue: ids only, a long queue, no failing open (a packet that
 * finds it full is dropped and counted), GSO packets passed whole. */
static int configure(struct line *l)
{
    char buf[MNL_SOCKET_BUFFER_SIZE];
    struct nlmsghdr *nlh;
    struct nfqnl_msg_config_cmd cmd = { .command = NFQNL_CFG_CMD_BIND };
    struct nfqnl_msg_config_params params = { .copy_range = htonl(0), .copy_mode = NFQNL_COPY_META };
    int ret;

    nlh = nfq_header(buf, NFQNL_MSG_CONFIG, l->queue, NLM_F_ACK);
    mnl_attr_put(nlh, NFQA_CFG_CMD, sizeof(cmd), &cmd);
    if ((ret = request(l, nlh)))
        return ret;
    nlh = nfq_header(buf, NFQNL_MSG_CONFIG, l->queue, NLM_F_ACK);
    mnl_attr_put(nlh, NFQA_CFG_PARAMS, sizeof(params), &params);
    mnl_attr_put_u32(nlh, NFQA_CFG_QUEUE_MAXLEN, htonl(QUEUE_MAXLEN));
    mnl_attr_put_u32(nlh, NFQA_CFG_MASK, htonl(NFQA_CFG_F_FAIL_OPEN | NFQA_CFG_F_GSO));
    mnl_attr_put_u32(nlh, NFQA_CFG_FLAGS, htonl(NFQA_CFG_F_GSO));
    return request(l, nlh);
}

static int open_socket(struct line *l)
{
    int on = 1, size = SOCK_RCVBUF, fd;

    l->nl = mnl_socket_open(NETLINK_NETFILTER);
    if (!l->nl || mnl_socket_bind(l->nl, 0, MNL_SOCKET_AUTOPID) < 0)
        return -errno;
    fd = mnl_socket_get_fd(l->nl);
    /* A burst at line rate must not overflow the socket while we sleep;
     * FORCE as root passes net.core.rmem_max. */
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) < 0 &&
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size)) < 0)
        return -errno;
    /* An overflow then loses packets (counted by the kernel), not our
     * socket with an error. */
    if (mnl_socket_setsockopt(l->nl, NETLINK_NO_ENOBUFS, &on, sizeof(on)) < 0)
        return -errno;
    return 0;
}

/* One verdict; a batch one covers every queued id up to id. */
static int verdict(struct line *l, uint16_t type, uint32_t id, uint32_t what)
{
    char buf[256];
    struct nfqnl_msg_verdict_hdr vh = { .verdict = htonl(what), .id = htonl(id) };
    struct nlmsghdr *nlh = nfq_header(buf, type, l->queue, 0);

    mnl_attr_put(nlh, NFQA_VERDICT_HDR, sizeof(vh), &vh);
    l->verdicts++;
    return mnl_socket_sendto(l->nl, nlh, nlh->nlmsg_len) < 0 ? -errno : 0;
}

static int hold(struct line *l, uint32_t id, uint64_t now)
{
    l->packets++;
    if (l->loss > 0 && rng_unit() < l->loss) {
        l->lost++;
        return verdict(l, NFQNL_MSG_VERDICT, id, NF_DROP);
    }
    if (l->tail - l->head == HELD_MAX) {      /* cannot be: the queue is as long */
        l->overflow++;
        return verdict(l, NFQNL_MSG_VERDICT, id, NF_DROP);
    }
    l->ring[l->tail++ % HELD_MAX] = (struct held){ .id = id, .due = now + l->delay_ns };
    return 0;
}

static int on_attr(const struct nlattr *attr, void *data)
{
    const struct nlattr **tb = data;
    int type = mnl_attr_get_type(attr);

    if (mnl_attr_type_valid(attr, NFQA_MAX) < 0)
        return MNL_CB_OK;
    if (type == NFQA_PACKET_HDR &&
        mnl_attr_validate2(attr, MNL_TYPE_UNSPEC, sizeof(struct nfqnl_msg_packet_hdr)) < 0)
        return MNL_CB_ERROR;
    tb[type] = attr;
    return MNL_CB_OK;
}

struct parse_ctx {
    struct line *l;
    uint64_t now;
};

static int on_packet(const struct nlmsghdr *nlh, void *data)
{
    struct parse_ctx *ctx = data;
    const struct nlattr *tb[NFQA_MAX + 1] = { 0 };
    const struct nfqnl_msg_packet_hdr *ph;

    if (mnl_attr_parse(nlh, sizeof(struct nfgenmsg), on_attr, tb) < 0 || !tb[NFQA_PACKET_HDR])
        return MNL_CB_OK;
    ph = mnl_attr_get_payload(tb[NFQA_PACKET_HDR]);
    return hold(ctx->l, ntohl(ph->packet_id), ctx->now) ? MNL_CB_ERROR : MNL_CB_OK;
}

/* One message: a queued packet is held; an error (a verdict for ids the
 * kernel no longer holds, as after a device went down and its packets
 * were flushed) is counted, not fatal: the path must go on. */
static int on_message(const struct nlmsghdr *nlh, struct parse_ctx *ctx)
{
    if (nlh->nlmsg_type == NLMSG_ERROR) {
        ctx->l->errors++;
        return 0;
    }
    if (nlh->nlmsg_type != ((NFNL_SUBSYS_QUEUE << 8) | NFQNL_MSG_PACKET))
        return 0;
    return on_packet(nlh, ctx) == MNL_CB_OK ? 0 : -EPROTO;
}

/* Takes every message waiting, stamped with one clock reading; returns
 * how many, or a negative errno. */
static int receive(struct line *l, uint64_t now)
{
    static char bufs[RECV_BATCH][RECV_BUF];
    struct mmsghdr msgs[RECV_BATCH];
    struct iovec iov[RECV_BATCH];
    struct parse_ctx ctx = { .l = l, .now = now };
    int fd = mnl_socket_get_fd(l->nl), n;

    for (unsigned i = 0; i < RECV_BATCH; i++) {
        iov[i] = (struct iovec){ .iov_base = bufs[i], .iov_len = RECV_BUF };
        msgs[i] = (struct mmsghdr){ .msg_hdr = { .msg_iov = &iov[i], .msg_iovlen = 1 } };
    }
    n = recvmmsg(fd, msgs, RECV_BATCH, MSG_DONTWAIT, NULL);
    if (n < 0)
        return errno == EAGAIN || errno == EINTR ? 0 : -errno;
    for (int i = 0; i < n; i++) {
        int len = (int)msgs[i].msg_len, ret;

        for (const struct nlmsghdr *nlh = (const void *)bufs[i]; mnl_nlmsg_ok(nlh, len);
             nlh = mnl_nlmsg_next(nlh, &len))
            if ((ret = on_message(nlh, &ctx)))
                return ret;
    }
    return n;
}

/* Lets every packet due by now go, with one batch verdict. */
static int release(struct line *l, uint64_t now)
{
    uint32_t last = 0;
    bool any = false;

    while (l->head != l->tail && l->ring[l->head % HELD_MAX].due <= now) {
        const struct held *h = &l->ring[l->head++ % HELD_MAX];
        uint64_t late = now - h->due;

        l->released++;
        l->late_sum_ns += late;
        if (late > l->late_max_ns)
            l->late_max_ns = late;
        last = h->id;
        any = true;
    }
    return any ? verdict(l, NFQNL_MSG_VERDICT_BATCH, last, NF_ACCEPT) : 0;
}

/* At the end: every packet held goes at once, early. */
static int flush(struct line *l)
{
    uint32_t last;

    if (l->head == l->tail)
        return 0;
    last = l->ring[(l->tail - 1) % HELD_MAX].id;
    l->head = l->tail;
    return verdict(l, NFQNL_MSG_VERDICT_BATCH, last, NF_ACCEPT);
}

/* Sleeps until a message comes or the first held packet is due. */
static void wait_for_work(struct line *l, uint64_t now)
{
    struct pollfd pfd = { .fd = mnl_socket_get_fd(l->nl), .events = POLLIN };
    struct timespec ts = { .tv_sec = 1 }, *tsp = &ts;

    if (l->head != l->tail) {
        uint64_t due = l->ring[l->head % HELD_MAX].due, wait = due > now ? due - now : 0;
        ts = (struct timespec){ .tv_sec = (time_t)(wait / NS_PER_S), .tv_nsec = (long)(wait % NS_PER_S) };
    }
    ppoll(&pfd, 1, tsp, NULL);
}

static int run(struct line *l, uint64_t seconds)
{
    uint64_t end = seconds ? clock_now_ns() + seconds * NS_PER_S : UINT64_MAX;
    int ret;

    while (!stopping && clock_now_ns() < end) {
        /* A batch at a time, with the verdicts due in between: a burst
         * that fills the socket must not hold back what is due. */
        int got = receive(l, clock_now_ns());

        if (got < 0)
            return got;
        if ((ret = release(l, clock_now_ns())))
            return ret;
        if (got < (int)RECV_BATCH)
            wait_for_work(l, clock_now_ns());
    }
    return flush(l);
}

/* The counts of the kernel's side, /proc/net/netfilter/nfnetlink_queue:
 * packets dropped because the queue was full, and because our socket was. */
static void kernel_drops(uint16_t queue, unsigned long *full, unsigned long *sock)
{
    FILE *f = fopen("/proc/net/netfilter/nfnetlink_queue", "r");
    unsigned q, pid, total, mode, range;
    unsigned long qd, ud, seq;
    int one;

    *full = *sock = 0;
    if (!f)
        return;
    while (fscanf(f, "%u %u %u %u %u %lu %lu %lu %d", &q, &pid, &total, &mode, &range, &qd, &ud, &seq, &one) == 9)
        if (q == queue) {
            *full = qd;
            *sock = ud;
        }
    fclose(f);
}

static void report(const struct line *l)
{
    unsigned long full, sock;

    kernel_drops(l->queue, &full, &sock);
    fprintf(stderr, "delayline: queue %u, %.1f ms: %llu packets, %llu dropped at random, "
            "%llu verdicts, %llu refused, late avg %.0f us max %.0f us; kernel drops: %lu queue full, %lu socket full\n",
            l->queue, (double)l->delay_ns / NS_PER_MS, (unsigned long long)l->packets,
            (unsigned long long)l->lost, (unsigned long long)l->verdicts, (unsigned long long)l->errors,
            l->released ? (double)l->late_sum_ns / (double)l->released / 1000 : 0.0,
            (double)l->late_max_ns / 1000, full, sock);
}

static void realtime(void)
{
    struct sched_param sp = { .sched_priority = FIFO_PRIORITY };

    if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
        fprintf(stderr, "delayline: SCHED_FIFO: %s (verdicts may come late)\n", strerror(errno));
    mlockall(MCL_CURRENT | MCL_FUTURE);
}

static void usage(void)
{
    fprintf(stderr, "usage: delayline [-q QUEUE] [-d DELAY_MS] [-l LOSS] [-t SECONDS] [-s SEED]\n");
    exit(2);
}

static void parse(int argc, char **argv, struct line *l, uint64_t *seconds)
{
    char *end;
    double v;
    int c;

    while ((c = getopt(argc, argv, "q:d:l:t:s:")) != -1) {
        errno = 0;
        v = strtod(optarg, &end);
        if (errno || *end || v < 0)
            usage();
        switch (c) {
        case 'q': if (v > 65535) usage(); l->queue = (uint16_t)v; break;
        case 'd': l->delay_ns = (uint64_t)(v * NS_PER_MS); break;
        case 'l': if (v > 1) usage(); l->loss = v; break;
        case 't': *seconds = (uint64_t)v; break;
        case 's': rng_state = (uint64_t)v; break;
        default: usage();
        }
    }
    if (optind != argc)
        usage();
}

int main(int argc, char **argv)
{
    struct line l = { .delay_ns = 20 * NS_PER_MS };
    struct sigaction sa = { .sa_handler = on_signal };
    uint64_t seconds = 0;
    int ret;

    rng_state = (uint64_t)getpid() ^ clock_now_ns();
    parse(argc, argv, &l, &seconds);
    if (!(l.ring = calloc(HELD_MAX, sizeof(*l.ring))))
        return 1;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    if ((ret = open_socket(&l)) || (ret = configure(&l))) {
        fprintf(stderr, "delayline: queue %u: %s\n", l.queue, strerror(-ret));
        return 1;
    }
    realtime();
    ret = run(&l, seconds);
    report(&l);
    if (ret)
        fprintf(stderr, "delayline: %s\n", strerror(-ret));
    mnl_socket_close(l.nl);
    free(l.ring);
    return ret ? 1 : 0;
}
