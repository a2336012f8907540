/* SPDX-License-Identifier: MIT */
/* Shards (overlay/loop/shard.h) driven for real: four event loops on four
 * threads under one engine lock, over four SO_REUSEPORT sockets on
 * 127.0.0.1 and four "ddp0 queues" (SEQPACKET socket pairs: one packet per
 * read, as a TUN queue), with a fake engine whose handlers check what the
 * design promises:
 *
 *   - the receive steering: a transport message goes to the socket of its
 *     shard hint modulo 4, anything else (handshakes, a stock WireGuard
 *     peer's hint 0, a datagram too short to say) to socket 0;
 *   - the engine is never entered by two loops at once, and each loop is
 *     the engine's current one while it runs a handler;
 *   - a crypto job made by a handler is finished under the lock, by the
 *     loop that made it, in the order it made them, its key intact;
 *   - nothing is lost: every datagram and every read is handled, once;
 *   - a buffer handed between loops (staged by one, released by another)
 *     goes back to the pool it came from, however often;
 *   - a deadline made earlier by a shard wakes the timer loop.
 * Run in `make unit` plain and under ASan (unit-asan): use after free,
 * leaks and overflows in the threads' hand-overs show there. */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "crypto/wg_const.h"
#include "overlay/base/clock.h"
#include "overlay/loop/shard.h"

#define SHARDS     4u
#define DATAGRAMS  4000u
#define TUN_PKTS   2000u
#define NOT_RUN    0x7fffffff   /* a job's first status before it ran */
#define MANY_MARK  0xee         /* byte 4 of a datagram that makes MANY_JOBS jobs */
#define MANY_JOBS  12u
#define MANY_LEN   250u         /* and its length, which no other has */

/* --- the receive steering ------------------------------------------------------ */

/* SHARDS sockets in one SO_REUSEPORT group on 127.0.0.1 (port chosen by
 * the kernel), steered; returns the port. */
static uint16_t open_group(int *fds, unsigned n)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(a);
    int one = 1;

    for (unsigned k = 0; k < n; k++) {
        fds[k] = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        assert_true(fds[k] >= 0);
        assert_int_equal(setsockopt(fds[k], SOL_SOCKET, SO_REUSEPORT, &one, sizeof(one)), 0);
        int size = 1 << 20;
        setsockopt(fds[k], SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
        assert_int_equal(bind(fds[k], (struct sockaddr *)&a, sizeof(a)), 0);
        if (k == 0) {
            assert_int_equal(getsockname(fds[0], (struct sockaddr *)&a, &len), 0);
        }
    }
    assert_int_equal(shard_steer(fds[0], n), 0);
    return ntohs(a.sin_port);
}

static void send_to(int fd, uint16_t port, const uint8_t *msg, size_t len)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

    assert_int_equal(sendto(fd, msg, len, 0, (struct sockaddr *)&a, sizeof(a)), (ssize_t)len);
}

/* Which of the group's sockets holds one datagram now (-1: none). */
static int who_got(const int *fds, unsigned n)
{
    uint8_t buf[64];

    for (int tries = 0; tries < 1000; tries++) {
        for (unsigned k = 0; k < n; k++)
            if (recv(fds[k], buf, sizeof(buf), MSG_DONTWAIT) >= 0)
                return (int)k;
        usleep(100);
    }
    return -1;
}

static void test_steering(void **state)
{
    int fds[SHARDS], out = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint8_t msg[WG_TRANSPORT_MIN_LEN] = { 0 };
    uint16_t port;

    (void)state;
    assert_true(out >= 0);
    port = open_group(fds, SHARDS);
    for (unsigned hint = 0; hint < 256; hint += 5) {
        msg[0] = WG_MSG_TRANSPORT;
        msg[WG_SHARD_HINT_OFFSET] = (uint8_t)hint;
        send_to(out, port, msg, sizeof(msg));
        assert_int_equal(who_got(fds, SHARDS), (int)(hint % SHARDS));
    }
    /* Not transport: the first socket, whatever byte 1 says. */
    for (uint8_t type = 1; type <= 3; type++) {
        msg[0] = type;
        msg[WG_SHARD_HINT_OFFSET] = 3;
        send_to(out, port, msg, WG_INITIATION_LEN < sizeof(msg) ? WG_INITIATION_LEN : sizeof(msg));
        assert_int_equal(who_got(fds, SHARDS), 0);
    }
    msg[0] = 0x44;   /* a relay frame */
    send_to(out, port, msg, sizeof(msg));
    assert_int_equal(who_got(fds, SHARDS), 0);
    msg[0] = WG_MSG_TRANSPORT;   /* too short to carry a hint */
    send_to(out, port, msg, 1);
    assert_int_equal(who_got(fds, SHARDS), 0);
    assert_int_equal(shard_steer(fds[0], 0), -EINVAL);
    for (unsigned k = 0; k < SHARDS; k++)
        close(fds[k]);
    close(out);
}

/* --- four loops under one lock, a fake engine ----------------------------------- */

struct engine {
    pthread_mutex_t *lock;
    struct loop *current;            /* written by the loops (loop_config.current) */
    struct shards *sh;
    int inside;                      /* loops in a handler now: must stay <= 1 */
    bool violated;
    const char *why;
    /* Per loop: jobs made and finished (finished in order: seq). */
    uint64_t made[SHARDS], finished[SHARDS];
    uint64_t udp[SHARDS], tun[SHARDS];
    uint64_t udp_total, tun_total;
    pthread_t crypto_thread[SHARDS]; /* the thread that ran a loop's jobs */
    struct pkt *held;                /* one buffer staged by one loop ... */
    unsigned held_by;
    unsigned handovers, handed_home; /* ... released by another, came home */
    uint64_t deadline;               /* next_deadline's answer */
    uint64_t timer_runs;
    bool poke;                       /* the next ddp0 read on a shard makes it now */
    uint64_t runs_at_poke;
    /* SIGHUP: hangup_read ran (and without the lock), hangup ran with
     * what it returned. */
    unsigned reads, reads_locked, hangups, hangups_with_read;
    unsigned many;                   /* MANY_MARK datagrams handled */
};

static struct engine eng;

static void violation(const char *why)
{
    eng.violated = true;
    eng.why = why;
}

static unsigned index_of(struct loop *l)
{
    unsigned k = l ? loop_shard(l) : SHARDS;

    if (k >= SHARDS || (k > 0 && shard_loop(eng.sh, k) != l)) {
        violation("a handler ran on a loop that is not one of ours");
        return 0;
    }
    return k;
}

/* Entering a handler: the lock must be ours (trylock fails) and no other
 * handler may be running. */
static unsigned enter(void)
{
    if (pthread_mutex_trylock(eng.lock) == 0) {
        pthread_mutex_unlock(eng.lock);
        violation("a handler ran without the engine lock");
    }
    if (__atomic_add_fetch(&eng.inside, 1, __ATOMIC_SEQ_CST) != 1)
        violation("two loops ran the engine at once");
    return index_of(eng.current);
}

static void leave(void)
{
    __atomic_sub_fetch(&eng.inside, 1, __ATOMIC_SEQ_CST);
}

/* Each handled buffer becomes an open job (its bytes are no message: the
 * AEAD fails it, which is work all the same), or is put back at once. */
static void make_job(unsigned k, struct pkt *pkt, uint64_t now)
{
    struct crypto_job *job = loop_crypto_job(eng.current, now);

    if (!job) {
        violation("no deferred job slot with shards");
        loop_pkt_put(eng.current, pkt);
        return;
    }
    *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = pkt, .seg_size = pkt->len ? pkt->len : 1,
                                .first_counter = eng.made[k]++ };
    pkt->seg_status[0] = NOT_RUN;
    memset(job->key, 0x5a, sizeof(job->key));
    loop_crypto_submit(eng.current, job);
}

static void on_udp(void *ctx, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    unsigned k = enter();

    (void)ctx;
    (void)seg_size;
    eng.udp[k]++;
    eng.udp_total++;
    /* Again and again: shard 1 holds a buffer of its own, shard 2
     * releases it (staged by one, sent by another). */
    if (k == 1 && !eng.held) {
        eng.held = pkt;
        eng.held_by = k;
        leave();
        return;
    }
    if (k == 2 && eng.held) {
        struct pkt_pool *home = eng.held->home;
        loop_pkt_put(eng.current, eng.held);
        eng.held = NULL;
        eng.handovers++;
        eng.handed_home += home == &shard_loop(eng.sh, 1)->pool && home != &eng.current->pool;
    }
    /* A datagram of MANY_LEN bytes marked MANY_MARK makes MANY_JOBS jobs (as a session
     * that completed flushes its staged packets): the loop must make
     * room for them between completions, not under the lock. */
    if (pkt->len == MANY_LEN && pkt->in[4] == MANY_MARK) {
        eng.many++;
        for (unsigned j = 1; j < MANY_JOBS; j++) {
            struct pkt *extra = loop_pkt_get(eng.current);
            if (!extra) {
                violation("the pool ran dry");
                break;
            }
            extra->len = 64;
            memset(extra->in, 0, 64);
            make_job(k, extra, now);
        }
    }
    make_job(k, pkt, now);
    leave();
}

static void on_tun(void *ctx, struct pkt *pkt, uint64_t now)
{
    unsigned k = enter();

    (void)ctx;
    eng.tun[k]++;
    eng.tun_total++;
    /* A shard makes the engine's deadline earlier than the timer loop
     * sleeps (a handshake it started): the timer loop must wake for it. */
    if (k != 0 && eng.poke) {
        eng.poke = false;
        eng.deadline = clock_now_ns();
        eng.runs_at_poke = eng.timer_runs;
    }
    make_job(k, pkt, now);
    leave();
}

static void on_crypto_done(void *ctx, struct crypto_job *job, uint64_t now)
{
    unsigned k = enter();

    (void)ctx;
    (void)now;
    if (job->first_counter != eng.finished[k])
        violation("a loop's jobs were finished out of order");
    if (job->pkt->seg_status[0] == NOT_RUN)
        violation("a job was finished before its crypto ran");
    eng.finished[k]++;
    for (size_t i = 0; i < sizeof(job->key); i++)
        if (job->key[i] != 0x5a)
            violation("a job's key changed before it was finished");
    loop_pkt_put(eng.current, job->pkt);
    leave();
}

static uint64_t on_timers(void *ctx, uint64_t now)
{
    unsigned k = enter();

    (void)ctx;
    if (k != 0)
        violation("a shard ran the timers");
    eng.timer_runs++;
    if (eng.deadline <= now)
        eng.deadline = now + 60 * NS_PER_S;   /* a minute away: only a wake-up brings it near */
    leave();
    return eng.deadline;
}

/* SIGHUP's two steps (loop.h): the read must not hold the engine lock,
 * the hangup must, and gets what the read returned. */
static int read_token;

static void *hangup_read(void *ctx)
{
    bool free = false;

    (void)ctx;
    /* Held by us, it is never free; by the test thread, soon free. */
    for (int tries = 0; tries < 1000 && !free; tries++)
        if (!(free = pthread_mutex_trylock(eng.lock) == 0))
            usleep(100);
    if (free)
        pthread_mutex_unlock(eng.lock);
    else
        __atomic_add_fetch(&eng.reads_locked, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&eng.reads, 1, __ATOMIC_SEQ_CST);
    return &read_token;
}

static void hangup(void *ctx, void *read, uint64_t now)
{
    unsigned k = enter();

    (void)ctx;
    (void)now;
    if (k != 0)
        violation("a shard ran the hangup");
    eng.hangups++;
    eng.hangups_with_read += read == &read_token;
    leave();
}

static uint64_t next_deadline(void *ctx)
{
    (void)ctx;
    return eng.deadline;
}

/* The timer loop (shard 0) on a thread of its own; the test thread
 * drives. */
struct loop0 {
    struct loop loop;
    struct loop_config cfg;
    struct loop_handlers on;
    int ret;
    bool made;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready;
};

static void *run_loop0(void *arg)
{
    struct loop0 *z = arg;

    z->ret = loop_init(&z->loop, &z->cfg, &z->on);
    pthread_mutex_lock(&z->mu);
    z->made = z->ret == 0;
    z->ready = true;
    pthread_cond_signal(&z->cv);
    pthread_mutex_unlock(&z->mu);
    if (z->made)
        z->ret = loop_run(&z->loop);
    return NULL;
}

static bool all_handled(void)
{
    bool done;

    pthread_mutex_lock(eng.lock);
    done = eng.udp_total == DATAGRAMS && eng.tun_total >= TUN_PKTS;
    for (unsigned k = 0; k < SHARDS && done; k++)
        done = eng.finished[k] == eng.made[k];
    pthread_mutex_unlock(eng.lock);
    return done;
}

static void test_four_loops(void **state)
{
    static struct shards sh;
    static struct loop0 z;
    int udp[SHARDS], udp6[SHARDS], tun[SHARDS], tun_peer[SHARDS];
    int out = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    uint8_t msg[256];
    uint16_t port;
    pthread_t t0;

    (void)state;
    memset(&eng, 0, sizeof(eng));
    memset(&z, 0, sizeof(z));
    assert_int_equal(shards_init(&sh, SHARDS), 0);
    eng.lock = &sh.lock;
    eng.sh = &sh;
    eng.deadline = UINT64_MAX;
    port = open_group(udp, SHARDS);
    for (unsigned k = 0; k < SHARDS; k++) {
        int pair[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
        tun[k] = pair[0];
        tun_peer[k] = pair[1];
        udp6[k] = -1;
    }
    z.on = (struct loop_handlers){ .udp = on_udp, .tun = on_tun, .crypto_done = on_crypto_done,
                                   .timers = on_timers, .next_deadline = next_deadline,
                                   .hangup_read = hangup_read, .hangup = hangup };
    /* SIGHUP blocked in every thread (they inherit the mask), read by
     * loop 0's signalfd. */
    sigset_t hup;
    sigemptyset(&hup);
    sigaddset(&hup, SIGHUP);
    assert_int_equal(pthread_sigmask(SIG_BLOCK, &hup, NULL), 0);
    int sig_fd = signalfd(-1, &hup, SFD_CLOEXEC | SFD_NONBLOCK);
    assert_true(sig_fd >= 0);
    z.cfg = (struct loop_config){ .name = "shard-test", .max_datagram = 1500, .tun_fd = tun[0],
                                  .udp4_fd = udp[0], .udp6_fd = -1, .control_fd = -1,
                                  .signal_fd = sig_fd, .engine_lock = &sh.lock, .current = &eng.current,
                                  .crew = &sh.crew };
    pthread_mutex_init(&z.mu, NULL);
    pthread_cond_init(&z.cv, NULL);
    assert_int_equal(pthread_create(&t0, NULL, run_loop0, &z), 0);
    pthread_mutex_lock(&z.mu);
    while (!z.ready)
        pthread_cond_wait(&z.cv, &z.mu);
    pthread_mutex_unlock(&z.mu);
    assert_int_equal(z.ret, 0);
    struct loop_config base = z.cfg;
    assert_int_equal(shards_start(&sh, &base, &z.on, &z.loop, &eng.current, tun, udp, udp6), 0);

    /* Datagrams with every hint, and ddp0 packets on every queue,
     * interleaved, as fast as the sockets take them. */
    uint64_t give_up = clock_now_ns() + 10 * NS_PER_S;   /* a loop that stopped reading */
    for (unsigned i = 0, t = 0; (i < DATAGRAMS || t < TUN_PKTS) && clock_now_ns() < give_up;) {
        pthread_mutex_lock(eng.lock);
        bool room = i - eng.udp_total < 128;   /* never more than a socket holds */
        pthread_mutex_unlock(eng.lock);
        if (i < DATAGRAMS && !room) {
            usleep(100);
        } else if (i < DATAGRAMS) {
            memset(msg, (int)i, sizeof(msg));
            msg[0] = WG_MSG_TRANSPORT;
            msg[WG_SHARD_HINT_OFFSET] = (uint8_t)i;
            msg[2] = msg[3] = 0;
            struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                                     .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
            if (sendto(out, msg, 32 + i % 200, 0, (struct sockaddr *)&a, sizeof(a)) > 0)
                i++;
            else
                usleep(100);   /* the socket's buffer is full: let them read */
        }
        if (t < TUN_PKTS) {
            memset(msg, (int)t, sizeof(msg));
            if (send(tun_peer[t % SHARDS], msg, 40 + t % 200, MSG_DONTWAIT) > 0)
                t++;
            else
                usleep(100);
        }
    }
    for (int waited = 0; waited < 10000 && !all_handled(); waited++)
        usleep(1000);
    /* Quiet now: a shard's read makes the deadline earlier; the timer
     * loop, asleep for up to LOOP_MAX_SLEEP_NS, must wake for it. */
    pthread_mutex_lock(eng.lock);
    eng.poke = true;
    uint64_t runs = eng.timer_runs;
    pthread_mutex_unlock(eng.lock);
    assert_true(send(tun_peer[1], msg, 40, 0) == 40);
    bool woke = false;
    for (int waited = 0; waited < 3000 && !woke; waited++) {
        usleep(1000);
        pthread_mutex_lock(eng.lock);
        woke = !eng.poke && eng.timer_runs > eng.runs_at_poke && eng.timer_runs > runs;
        pthread_mutex_unlock(eng.lock);
    }
    assert_true(woke);

    /* Bursts of datagrams to shard 3 that make MANY_JOBS jobs each:
     * several in one turn fill its ring (DEFERRED_DEPTH) unless the
     * loop makes room between them. None runs under the lock. */
    struct loop_lock_stats st3;
    unsigned many_sent = 0;
    for (unsigned burst = 0; burst < 20; burst++) {
        uint8_t m[MANY_LEN];
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        memset(m, 0, sizeof(m));
        m[0] = WG_MSG_TRANSPORT;
        m[WG_SHARD_HINT_OFFSET] = 3;
        m[4] = MANY_MARK;
        for (unsigned b = 0; b < 16; b++)
            many_sent += sendto(out, m, sizeof(m), 0, (struct sockaddr *)&a, sizeof(a)) > 0;
        bool caught_up = false;
        for (int waited = 0; waited < 3000 && !caught_up; waited++) {
            usleep(1000);
            pthread_mutex_lock(eng.lock);
            caught_up = eng.many == many_sent && eng.finished[3] == eng.made[3];
            pthread_mutex_unlock(eng.lock);
        }
        if (!caught_up)
            fail_msg("burst %u: many %u of %u, made %lu finished %lu, %s", burst, eng.many, many_sent,
                     (unsigned long)eng.made[3], (unsigned long)eng.finished[3], eng.violated ? eng.why : "");
    }
    assert_true(loop_lock_stats(&z.loop, 3, &st3));
    assert_int_equal(st3.jobs_locked, 0);

    /* SIGHUP: the cluster file's read (here a token) runs outside the
     * engine lock, its application under it, on loop 0. */
    assert_int_equal(kill(getpid(), SIGHUP), 0);
    bool hung = false;
    for (int waited = 0; waited < 3000 && !hung; waited++) {
        usleep(1000);
        pthread_mutex_lock(eng.lock);
        hung = eng.hangups == 1;
        pthread_mutex_unlock(eng.lock);
    }
    assert_true(hung);
    assert_int_equal(eng.reads, 1);
    assert_int_equal(eng.reads_locked, 0);
    assert_int_equal(eng.hangups_with_read, 1);

    /* The lock held here while shard 1 has a read to handle: it waits,
     * and says so (loop_lock_stats). */
    struct loop_lock_stats before, after;
    assert_true(loop_lock_stats(&z.loop, 1, &before));
    pthread_mutex_lock(eng.lock);
    assert_true(send(tun_peer[1], msg, 40, 0) == 40);
    usleep(100 * 1000);
    pthread_mutex_unlock(eng.lock);
    bool handled = false;
    for (int waited = 0; waited < 3000 && !handled; waited++) {
        usleep(1000);
        pthread_mutex_lock(eng.lock);
        handled = eng.tun[1] == TUN_PKTS / SHARDS + 2;
        pthread_mutex_unlock(eng.lock);
    }
    assert_true(handled);
    assert_true(loop_lock_stats(&z.loop, 1, &after));
    assert_true(after.contended > before.contended);
    assert_true(after.wait_ns - before.wait_ns >= 10 * NS_PER_MS);

    /* One busy shard, three idle: bursts of full-size datagrams all
     * hinted to shard 1, until another loop helped with its jobs (their
     * order and keys are checked as they finish). */
    unsigned extra = 0;
    uint64_t helped = 0;
    give_up = clock_now_ns() + 10 * NS_PER_S;
    while (!helped && clock_now_ns() < give_up) {
        uint8_t big[1400];
        struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(port),
                                 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
        memset(big, 0x11, sizeof(big));
        big[0] = WG_MSG_TRANSPORT;
        big[WG_SHARD_HINT_OFFSET] = 1;
        big[2] = big[3] = 0;
        for (unsigned b = 0; b < 64; b++)
            if (sendto(out, big, sizeof(big), 0, (struct sockaddr *)&a, sizeof(a)) > 0)
                extra++;
        for (int waited = 0; waited < 1000; waited++) {
            pthread_mutex_lock(eng.lock);
            bool caught_up = eng.udp_total == DATAGRAMS + extra && eng.finished[1] == eng.made[1];
            pthread_mutex_unlock(eng.lock);
            if (caught_up)
                break;
            usleep(1000);
        }
        helped = __atomic_load_n(&z.loop.jobs_helped, __ATOMIC_RELAXED);
        for (unsigned k = 2; k < SHARDS; k++)
            helped += __atomic_load_n(&shard_loop(&sh, k)->jobs_helped, __ATOMIC_RELAXED);
    }
    assert_true(helped > 0);

    shards_stop(&sh);
    loop_stop(&z.loop);
    pthread_join(t0, NULL);
    assert_int_equal(z.ret, 0);
    if (eng.violated)
        fail_msg("%s", eng.why);
    assert_int_equal(eng.udp_total, DATAGRAMS + extra + many_sent);
    assert_int_equal(eng.tun_total, TUN_PKTS + 2);
    for (unsigned k = 0; k < SHARDS; k++) {
        /* Steered by hint: each socket got a quarter; each queue a quarter
         * (and queue 1 the poke and the read that waited). */
        assert_int_equal(eng.udp[k], DATAGRAMS / SHARDS + (k == 1 ? extra : 0) + (k == 3 ? many_sent : 0));
        assert_int_equal(eng.tun[k], TUN_PKTS / SHARDS + (k == 1 ? 2 : 0));
        assert_int_equal(eng.finished[k], eng.made[k]);
    }
    assert_true(eng.handovers > 0);
    assert_int_equal(eng.handed_home, eng.handovers);
    /* The lock's cost, per loop (loop_lock_stats, read through any loop
     * of the crew): every loop took it and held it; the held and waited
     * times lie within the busy time. */
    for (unsigned k = 0; k < SHARDS; k++) {
        struct loop_lock_stats st;
        assert_true(loop_lock_stats(&z.loop, k, &st));
        assert_true(st.taken > 0);
        assert_true(st.held_ns > 0);
        assert_true(st.busy_ns >= st.held_ns + st.wait_ns);
        assert_true(st.contended <= st.taken);
    }
    struct loop_lock_stats none;
    assert_false(loop_lock_stats(&z.loop, SHARDS, &none));
    loop_destroy(&z.loop);
    shards_free(&sh);
    close(sig_fd);
    assert_int_equal(pthread_sigmask(SIG_UNBLOCK, &hup, NULL), 0);
    for (unsigned k = 0; k < SHARDS; k++) {
        close(udp[k]);
        close(tun[k]);
        close(tun_peer[k]);
    }
    close(out);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_steering),
        cmocka_unit_test(test_four_loops),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
