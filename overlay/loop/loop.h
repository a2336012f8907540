/* SPDX-License-Identifier: MIT */
/* The event loop: one io_uring drives everything the daemon does. Reads
 * from ddp0 and receives on the UDP sockets are kept in flight, each in a
 * buffer of the packet pool; sends and TUN writes are queued from the same
 * buffers; the control socket and the signal fd are polled; timers are the
 * wait's timeout, the earliest deadline the engine reports. The loop is an
 * I/O service: what each completion means is the engine's, reached through
 * the handlers registered at loop_init (struct loop_handlers). An idle
 * daemon sleeps in io_uring_enter until the next timer; only for a short
 * window after a packet that ends an idle spell does it poll instead
 * (busy_poll.h), so that the answer to a request finds it awake. */
#ifndef DDPNET_LOOP_H
#define DDPNET_LOOP_H

#include <liburing.h>
#include <pthread.h>
#include <stdbool.h>

#include "overlay/base/endpoint.h"
#include "overlay/loop/busy_poll.h"
#include "overlay/loop/codel.h"
#include "overlay/loop/crypto_job.h"
#include "overlay/loop/deferred.h"
#include "overlay/loop/pkt.h"

/* Buffers in the pool, and how many reads each source keeps in flight. */
#define LOOP_POOL_SIZE     192u
#define LOOP_TUN_WRITES    1024u
#define LOOP_TUN_READS     4u
#define LOOP_UDP_RECVS     8u
#define LOOP_RING_ENTRIES  1024u
/* Reads of ddp0 that fail this long with no packet between are taken
 * for the device's end (loop.c: on_tun_read). */
#define LOOP_TUN_FAILING_NS (10 * WG_NSEC_PER_SEC)
/* Wake at least this often (the engine's periodic chores: the cookie secret). */
#define LOOP_MAX_SLEEP_NS  (10 * WG_NSEC_PER_SEC)

/* What the loop does with what completes: the engine's entry points,
 * registered by whoever builds the loop (the daemon). The loop knows no
 * peers; everything past the I/O happens in these. Each is called on the
 * loop's thread with the time the completions were taken. */
struct loop_handlers {
    void *ctx;
    /* A receive on a UDP socket: pkt->len bytes at pkt->in, datagrams of
     * seg_size bytes back to back (UDP GRO), the source in pkt->addr.
     * Takes pkt. */
    void (*udp)(void *ctx, struct pkt *pkt, uint32_t seg_size, uint64_t now);
    /* Datagrams the kernel dropped at a UDP socket since the last call
     * (its receive buffer was full: SO_RXQ_OVFL, which the socket must
     * have on), told on the receive that brought the news. NULL: not
     * counted. */
    void (*socket_drops)(void *ctx, uint64_t n);
    /* A read from the TUN device, pkt->len bytes at pkt->in. Takes pkt. */
    void (*tun)(void *ctx, struct pkt *pkt, uint64_t now);
    /* A crypto job (loop_crypto_job) ran, in submission order: with
     * shards, under the engine lock again (deferred.h). */
    void (*crypto_done)(void *ctx, struct crypto_job *job, uint64_t now);
    /* Runs what is due; returns the next deadline (the loop sleeps until
     * then at most, and never longer than LOOP_MAX_SLEEP_NS). */
    uint64_t (*timers)(void *ctx, uint64_t now);
    /* The earliest deadline the timers above would run, without running
     * anything: with shards, one whose work made it earlier than the timer
     * loop sleeps wakes that loop (NULL: never asked). */
    uint64_t (*next_deadline)(void *ctx);
    /* SIGHUP, in two steps, both with control_ctx: hangup_read (NULL:
     * none) outside the engine lock, for what may wait on a disk (the
     * cluster file), then hangup under it with what hangup_read
     * returned, after the turn that took the signal (NULL hangup: SIGHUP
     * stops the loop, as SIGTERM does). Signals that come together are
     * one hangup. */
    void *(*hangup_read)(void *ctx);
    void (*hangup)(void *ctx, void *read, uint64_t now);
    /* The control socket's side, with its own context: its fd (the
     * config's control_fd) is readable; and its own deadlines, run like
     * the timers above (NULL: none). */
    void *control_ctx;
    void (*control)(void *control_ctx, uint64_t now);
    uint64_t (*control_timers)(void *control_ctx, uint64_t now);
};

/* With shards: the loops of one daemon, which help each other with
 * crypto (loop.c: help_others). Each loop puts itself in at loop_init. */
#define LOOP_CREW_MAX 64u

struct loop_crew {
    struct loop *member[LOOP_CREW_MAX];   /* by shard index (atomic) */
};

/* With shards: what the engine lock costs one loop, in nanoseconds of
 * CLOCK_MONOTONIC since it started (loop_lock_stats): held (from taking
 * the lock to letting it go), waited for (to take it), busy (every moment
 * not spent waiting on its ring: the lock's times lie within it, so
 * held / busy is the share of the loop's work done under the lock), and
 * how often it was taken and found taken. */
struct loop_lock_stats {
    uint64_t held_ns, wait_ns, busy_ns, taken, contended;
    /* Crypto jobs run under the lock, not deferred past it: the ring
     * full inside a handler, or drained (loop_crypto_drain) for order or
     * a membership change. */
    uint64_t jobs_locked;
};

/* Extra source ports (loop_send: pkt->flow), per family: the daemon's
 * DDPNET_FLOWS less the port's own. */
#define LOOP_FLOWS_MAX 15u

struct loop_config {
    const char *name;             /* the TUN device's, for the log */
    /* The largest datagram a full-size packet makes: larger sends (a
     * relayed packet that did not fit) go one by one, unsegmented. */
    uint32_t max_datagram;
    unsigned busy_poll_us;        /* busy_poll.h; 0 is off */
    /* Queue management on each UDP socket (codel.h): the wait in it that
     * counts as a standing queue, in µs; 0 is off. The sockets must have
     * SO_TIMESTAMPNS on. */
    unsigned queue_target_us;
    /* The TUN device, the IPv4 and IPv6 sockets (-1 if absent), the
     * control socket's fd to poll (-1: none) and a signalfd for
     * SIGTERM/SIGINT. */
    int tun_fd, udp4_fd, udp6_fd, control_fd, signal_fd;
    /* Sockets that only send, each bound to an ephemeral port of its own
     * (-1 where a family has none): flow i (1..flows) leaves from
     * flow4_fds[i - 1] or flow6_fds[i - 1]. Shared by every shard. */
    unsigned flows;
    int flow4_fds[LOOP_FLOWS_MAX], flow6_fds[LOOP_FLOWS_MAX];
    /* With shards (shard.h; all NULL and 0 without): the lock under which
     * every loop runs the engine's handlers and the packet pools (buffers
     * cross between shards), where it writes which loop holds it (the
     * engine's `loop`), the loop that runs the timers and the control side
     * (NULL: this one), and this loop's index, which its seals carry as
     * their hint (wg_const.h). With a crew, an idle loop runs crypto jobs
     * that a busy one made (NULL: each runs its own only). */
    pthread_mutex_t *engine_lock;
    struct loop **current;
    struct loop *timer_loop;
    unsigned shard;
    struct loop_crew *crew;
    /* Idle loops of the crew do not help with crypto (DDPNET_SHARD_HELP=0):
     * the crew then only lists the loops, for loop_lock_stats. */
    bool crew_no_help;
};

struct loop {
    struct io_uring ring;
    struct pkt_pool pool;
    struct loop_handlers on;
    const char *name;
    uint32_t max_datagram;
    int tun_fd, udp_fd[2], control_fd, signal_fd;
    /* The extra source ports (loop_config.flows): [family][flow - 1]. */
    unsigned flows;
    int flow_fd[2][LOOP_FLOWS_MAX];
    unsigned tun_reads, udp_recvs[2];     /* in flight */
    /* Each socket's running total of datagrams the kernel dropped, as its
     * latest SO_RXQ_OVFL said (loop.c: count_socket_drops). */
    uint32_t udp_drops_seen[2];
    /* Each socket's queue management (codel.h), and its backlog as read
     * in this turn of the loop (loop.c: socket_drained): one system call
     * per socket and turn, not one per receive, which under a flood made
     * the starved loop drain a third as much. */
    struct codel queue[2];
    enum loop_backlog { LOOP_BACKLOG_UNREAD, LOOP_BACKLOG_DRAINED, LOOP_BACKLOG_STANDING } backlog[2];
    bool control_polled, signal_polled;
    bool hangup_pending;                  /* a SIGHUP taken, not yet run */
    struct busy_poll busy;
    /* With shards (loop_config): the lock, the engine's pointer to the
     * loop that holds it, the timer loop (NULL: this one), our index; an
     * eventfd that wakes us (a deadline made earlier, a stop); the
     * deadline the timer loop sleeps until (under the lock). */
    pthread_mutex_t *engine_lock;
    struct loop **current;
    struct loop *timer_loop;
    unsigned shard;
    int wake_fd;
    bool wake_polled;
    uint64_t sleep_until;
    /* With shards: crypto jobs, run on this thread (or an idle loop's
     * of the crew) after the handlers that made them, outside the engine
     * lock, then finished in order under it (deferred.h). */
    struct deferred deferred;
    /* With a crew: the crew; whether we are waiting on our ring (set by
     * us, read by others); whether a busy loop asked us to help (set by
     * it, cleared by us); how many of others' jobs we ran (ours to
     * write; others may read it: atomic). */
    struct loop_crew *crew;
    bool helps;                           /* the crew helps (crew_no_help unset) */
    bool idle, help_asked;
    uint64_t jobs_helped;
    /* With shards: the lock's cost to us (struct loop_lock_stats), ours to
     * write, read by any thread (each field atomic); when we last took
     * the lock, and when our ring's wait last ended. */
    struct loop_lock_stats lock_stats;
    uint64_t locked_at, busy_since;
    bool stop;                            /* atomic: loop_stop's thread writes it too */
    bool tun_gone;                        /* ddp0 was deleted under us */
    uint64_t tun_failing_since;           /* reads of ddp0 fail since (0: they do not) */
};

int loop_init(struct loop *l, const struct loop_config *c, const struct loop_handlers *on);
/* Runs until a stop signal, loop_stop or the loss of the TUN device
 * (then tun_gone is set). */
int loop_run(struct loop *l);
/* From another thread: l returns from loop_run soon (shards). */
void loop_stop(struct loop *l);
void loop_destroy(struct loop *l);

/* --- what the engine asks of the loop ----------------------------------------- */

struct pkt *loop_pkt_get(struct loop *loop);
void loop_pkt_put(struct loop *loop, struct pkt *pkt);
/* Sends pkt's segments (sealed messages in its slots: nseg of them, all
 * `stride` bytes but the last, which is pkt->len) to dst, as UDP GSO
 * sends, from the socket of its flow (pkt->flow; the port's where the loop
 * has no such flow); takes pkt. */
void loop_send(struct loop *loop, struct pkt *pkt, const union endpoint *dst);
/* Sends one message of len bytes at pkt->area; takes pkt. */
void loop_send_message(struct loop *loop, struct pkt *pkt, const union endpoint *dst,
                       uint32_t len);
/* Asks the loop's sockets for the datagrams the kernel dropped there
 * (SO_MEMINFO) and tells the engine's socket_drops of any growth, as a
 * receive's SO_RXQ_OVFL does; under the engine lock (any thread). */
void loop_poll_socket_drops(struct loop *loop);
/* The loop's shard index (0 without shards): the hint its seals carry. */
unsigned loop_shard(const struct loop *loop);
/* The lock's cost to loop k (its shard index) of loop's crew, up to now
 * (k the loop's own where it has no crew): false where there is no such
 * loop or no lock. Any thread; each figure is read atomically, the set
 * is not one instant's. */
bool loop_lock_stats(const struct loop *loop, unsigned k, struct loop_lock_stats *out);
/* Queues one coalesced run to the TUN device; w points into its owner,
 * which stays held until every write on it completed. */
void loop_write_tun(struct loop *loop, struct tun_write *w);
struct tun_write *loop_tun_write_get(struct loop *loop);
void loop_tun_write_put(struct loop *loop, struct tun_write *w);
/* With shards, a crypto job slot, run after the handlers outside the
 * engine lock (deferred.h; when all are in flight the oldest runs first,
 * here); NULL on one loop (run the work inline). */
struct crypto_job *loop_crypto_job(struct loop *loop, uint64_t now);
void loop_crypto_submit(struct loop *loop, struct crypto_job *job);
/* Runs every job in flight and finishes them. */
void loop_crypto_drain(struct loop *loop, uint64_t now);
/* The receive being handled asks no answer anyone waits for (busy_poll.h). */
void loop_packet_unawaited(struct loop *loop);
/* Drops one reference to a received pkt held by TUN writes. */
void loop_pkt_unref(struct loop *loop, struct pkt *pkt);
/* Sends one small message now, beside the ring (punches, probes, disco):
 * 0 or -errno; nothing is queued or retried. */
int loop_send_now(struct loop *loop, const uint8_t *msg, uint32_t len, const union endpoint *dst);
/* The same from flow's socket (1 .. its extra ports); -ENOENT without it. */
int loop_send_flow_now(struct loop *loop, unsigned flow, const uint8_t *msg, uint32_t len,
                       const union endpoint *dst);

#endif
