/* SPDX-License-Identifier: MIT */
/* The data path's bulk sends and ddp0 writes, on threads beside the loop.
 *
 * Why: with the crypto on workers, the loop's thread still spent most of
 * its time in the kernel, and most of that in two calls: UDP GSO sends
 * (the kernel's UDP stack, and on a veth the receiving side's too) and
 * ddp0 writes (which carry the receiving application's TCP). One thread
 * doing them all was the ceiling (bench/README.md has the profile). A
 * lane is a thread that makes those calls, in the order it was handed
 * them; several lanes make them in parallel.
 *
 * Order: a lane runs its work first in, first out. The loop hands it all
 * the sends to one destination, so that a peer's messages reach the
 * kernel in the order of their counters (the receiver's replay window
 * takes them out of order only within WG_REPLAY_WINDOW, and a lane that
 * falls behind while another sends on would exceed it), and all the ddp0
 * writes of one inner flow (offload_flow_hash), so that a connection's
 * packets keep their order; writes of different flows may overtake each
 * other, as on a multi-queue NIC.
 *
 * Readers: the same threads also read. The loop gives each fd it reads
 * (ddp0, the UDP sockets) a lane of its own, and keeps reads queued on
 * it; the lane makes them one after the other, so nothing read overtakes
 * what was read before it, and hands each back as soon as it is read.
 * Under busy-poll = always, where the loop never sleeps, its readers poll
 * too in the windows after a packet that ends an idle spell (busy_poll.h;
 * spin_until): an answer then finds no thread of the daemon asleep. By
 * default they sleep in poll: polling by all of them cost more than it
 * saved on 2 vCPUs (bench/README.md).
 *
 * Ownership: the buffers stay the loop's. A lane only reads what the
 * loop prepared (a pkt's msghdr, a tun_write's iovecs), makes the call,
 * and hands the buffer back with the call's result through a done ring
 * and an eventfd; the loop then treats it as an io_uring completion.
 * The queues are allocated by io_lanes_start, for the lanes started only
 * (a daemon without lanes holds none), and nothing after it. */
#ifndef DDPNET_IO_LANES_H
#define DDPNET_IO_LANES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#define IO_LANES_MAX   8u
/* Work a lane (and the done ring) holds: more than every pkt and
 * tun_write of the pool together, so a push never finds it full. */
#define IO_LANE_DEPTH  2048u

/* What a lane does with a buffer. The reads first wait until fd is
 * readable or the lanes stop (then -ECANCELED), so that a lane blocked
 * on an idle fd still stops. */
enum io_lane_op {
    IO_LANE_SENDMSG,   /* sendmsg(fd, msg, 0) */
    IO_LANE_WRITEV,    /* writev(fd, iov, iovcnt) */
    IO_LANE_READ,      /* read(fd, buf, cap) */
    IO_LANE_RECVMSG,   /* recvmsg(fd, msg, 0); msg is written */
};

struct io_lane_work {
    void *owner;                  /* handed back as it was */
    enum io_lane_op op;
    int fd;
    struct msghdr *msg;           /* IO_LANE_SENDMSG, IO_LANE_RECVMSG */
    const struct iovec *iov;      /* IO_LANE_WRITEV */
    int iovcnt;
    void *buf;                    /* IO_LANE_READ */
    size_t cap;
};

struct io_lane_done {
    void *owner;
    int res;                      /* the call's return, or -errno */
    unsigned lane;                /* whose in_flight it was */
};

struct io_lane {
    struct io_lanes *set;
    unsigned index;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct io_lane_work *work;    /* IO_LANE_DEPTH of them, made at start */
    uint32_t head, tail;          /* under lock */
    bool waiting;                 /* asleep on wake (under lock) */
    bool stopping;                /* under lock */
    unsigned in_flight;           /* the loop's count: pushed, not yet taken back */
};

struct io_lanes {
    unsigned n;
    struct io_lane lane[IO_LANES_MAX];
    pthread_mutex_t done_lock;
    struct io_lane_done *done;        /* IO_LANE_DEPTH of them, made at start */
    uint32_t done_head, done_tail;    /* under done_lock */
    bool signalled;                   /* event_fd written, not yet read (under done_lock) */
    int event_fd;                     /* readable when work is done */
    int stop_fd;                      /* readable once the lanes stop: wakes waiting reads */
    /* Until when (clock_now_ns) a read waits by polling without sleeping
     * (0: not now). Set by the loop (io_lanes_spin). */
    _Atomic uint64_t spin_until;
};

/* Starts n lanes (at most IO_LANES_MAX; 0: none, and nothing is started),
 * threads named NAME0, NAME1, ... (NAME: at most 11 characters). 0 or
 * -errno. Call io_lanes_stop after, whatever it returned. */
int io_lanes_start(struct io_lanes *set, unsigned n, const char *name);
void io_lanes_stop(struct io_lanes *set);
/* The lane for a key's work (a destination's, a flow's). n must be > 0. */
static inline struct io_lane *io_lanes_pick(struct io_lanes *set, uint32_t flow)
{
    return &set->lane[flow % set->n];
}
/* Until when the reads wait without sleeping (see spin_until). */
static inline void io_lanes_spin(struct io_lanes *set, uint64_t until_ns)
{
    atomic_store_explicit(&set->spin_until, until_ns, memory_order_relaxed);
}
/* Hands work to a lane (the loop's thread only). */
void io_lane_push(struct io_lane *lane, const struct io_lane_work *w);
/* Takes back up to max finished calls into out; returns how many. Clears
 * the eventfd's signal first, so work finishing meanwhile signals again. */
unsigned io_lanes_take(struct io_lanes *set, struct io_lane_done *out, unsigned max);

#endif
