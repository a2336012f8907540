/* SPDX-License-Identifier: MIT */
/* A loop's reads of ddp0 when one fails (overlay/loop/loop.c:
 * on_tun_read), driven for real on sockets that stand in for TUN queues:
 *
 *   - a read that fails with an error that is not the device's end
 *     (here ECONNREFUSED, pending on a connected UDP socket: one read
 *     gets it, the next reads on; io_uring's -ECANCELED, -ENOBUFS or
 *     -ENOMEM under load are alike) is read again: the packet sent
 *     after it is handled and the loop runs on. Before, any such error
 *     was taken for "device gone" and the loop stopped reading ddp0;
 *   - a shard whose queue is gone (its peer closed: the read gives 0)
 *     stops the daemon's loop with it. Before, the shard stopped alone,
 *     taking its own stop for one asked of it, and the daemon ran on with
 *     that queue of ddp0 unread: what the kernel put there piled up
 *     until every send on it failed with ENOBUFS;
 *   - a wait on the ring that the kernel refuses for now (-EBUSY: its
 *     completions overflowed; -EAGAIN, -ENOMEM: short of memory) is a
 *     turn like another, the packet after it read: before, the loop
 *     stopped and the daemon exited. A fault of ours (-EINVAL) still
 *     stops it. The waits fail through the linker's --wrap (Makefile). */
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <liburing.h>

#include "overlay/base/clock.h"
#include "overlay/loop/shard.h"

#define GIVE_UP_NS (5000 * NS_PER_MS)   /* a loop that stopped reading, or never stops */

/* --- a fake engine ------------------------------------------------------------- */

struct engine {
    struct loop *current;        /* with shards: the loop that holds the lock */
    struct loop *l;              /* without: the one loop */
    uint64_t start, tun_packets;
    int send_fd;                 /* test 1: sends the packet after the error */
    bool sent, gave_up;
};

static struct engine eng;

static struct loop *cur(void)
{
    return eng.l ? eng.l : eng.current;
}

static void on_udp(void *ctx, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    (void)ctx;
    (void)seg_size;
    (void)now;
    loop_pkt_put(cur(), pkt);
}

static void on_tun(void *ctx, struct pkt *pkt, uint64_t now)
{
    (void)ctx;
    (void)now;
    eng.tun_packets++;
    loop_pkt_put(cur(), pkt);
    if (eng.l)
        loop_stop(eng.l);   /* test 1: read after the error, done */
}

static void on_crypto_done(void *ctx, struct crypto_job *job, uint64_t now)
{
    (void)ctx;
    (void)job;
    (void)now;
}

/* Every 20 ms on the timer loop: test 1 sends its packet once the error
 * was read (the first turns), and either test gives up after GIVE_UP_NS. */
static uint64_t on_timers(void *ctx, uint64_t now)
{
    struct loop *l = ctx;

    if (eng.send_fd >= 0 && !eng.sent && now - eng.start > 200 * NS_PER_MS) {
        assert_int_equal(send(eng.send_fd, "after", 5, 0), 5);
        eng.sent = true;
    }
    if (now - eng.start > GIVE_UP_NS) {
        eng.gave_up = true;
        loop_stop(l);
    }
    return now + 20 * NS_PER_MS;
}

/* --- a transient read error ---------------------------------------------------- */

static uint16_t port_of(int fd)
{
    struct sockaddr_in a;
    socklen_t len = sizeof(a);

    assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
    return ntohs(a.sin_port);
}

static void test_read_error_read_again(void **state)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    int q = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int closed = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    struct loop l;

    (void)state;
    memset(&eng, 0, sizeof(eng));
    /* "ddp0": q, connected to a port no one holds, then told so by ICMP:
     * its next read fails with ECONNREFUSED. */
    assert_true(q >= 0 && closed >= 0);
    assert_int_equal(bind(closed, (struct sockaddr *)&a, sizeof(a)), 0);
    a.sin_port = htons(port_of(closed));
    close(closed);
    assert_int_equal(connect(q, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(send(q, "x", 1, 0), 1);
    struct pollfd p = { .fd = q };
    assert_int_equal(poll(&p, 1, 2000), 1);
    assert_true(p.revents & POLLERR);
    /* What q reads next comes from that port: it is held now. */
    eng.send_fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    assert_int_equal(bind(eng.send_fd, (struct sockaddr *)&a, sizeof(a)), 0);
    struct sockaddr_in qa = { .sin_family = AF_INET, .sin_port = htons(port_of(q)),
                              .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    assert_int_equal(connect(eng.send_fd, (struct sockaddr *)&qa, sizeof(qa)), 0);

    struct loop_config c = { .name = "test", .max_datagram = 1500, .tun_fd = q, .udp4_fd = -1,
                             .udp6_fd = -1, .control_fd = -1, .signal_fd = -1 };
    struct loop_handlers on = { .ctx = &l, .udp = on_udp, .tun = on_tun,
                                .crypto_done = on_crypto_done, .timers = on_timers };
    assert_int_equal(loop_init(&l, &c, &on), 0);
    eng.l = &l;
    eng.start = clock_now_ns();
    assert_int_equal(loop_run(&l), 0);
    loop_destroy(&l);

    print_message("sent after the error: %d, packets read: %llu, gave up: %d\n", eng.sent,
                  (unsigned long long)eng.tun_packets, eng.gave_up);
    assert_true(eng.sent);
    assert_int_equal(eng.tun_packets, 1);
    assert_false(eng.gave_up);
    close(eng.send_fd);
    close(q);
}

/* --- a shard whose queue is gone ---------------------------------------------- */

struct loop0 {
    struct loop loop;
    struct loop_config cfg;
    struct loop_handlers on;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool ready, done;
    int ret;
};

/* Loop 0 is made and run on its own thread (an io_uring's one submitter). */
static void *run_loop0(void *arg)
{
    struct loop0 *z = arg;
    int ret = loop_init(&z->loop, &z->cfg, &z->on);

    pthread_mutex_lock(&z->mu);
    z->ret = ret;
    z->ready = true;
    pthread_cond_signal(&z->cv);
    pthread_mutex_unlock(&z->mu);
    if (ret)
        return NULL;
    ret = loop_run(&z->loop);
    pthread_mutex_lock(&z->mu);
    z->ret = ret;
    z->done = true;
    pthread_mutex_unlock(&z->mu);
    return NULL;
}

static void test_shard_gone_stops_daemon(void **state)
{
    static struct shards sh;
    static struct loop0 z;
    int tun[2], tun_peer[2], none[2] = { -1, -1 };
    pthread_t t0;

    (void)state;
    memset(&eng, 0, sizeof(eng));
    memset(&z, 0, sizeof(z));
    eng.send_fd = -1;
    assert_int_equal(shards_init(&sh, 2), 0);
    for (unsigned k = 0; k < 2; k++) {
        int pair[2];
        assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
        tun[k] = pair[0];
        tun_peer[k] = pair[1];
    }
    z.on = (struct loop_handlers){ .ctx = &z.loop, .udp = on_udp, .tun = on_tun,
                                   .crypto_done = on_crypto_done, .timers = on_timers };
    z.cfg = (struct loop_config){ .name = "shard-gone", .max_datagram = 1500, .tun_fd = tun[0],
                                  .udp4_fd = -1, .udp6_fd = -1, .control_fd = -1, .signal_fd = -1,
                                  .engine_lock = &sh.lock, .current = &eng.current,
                                  .crew = &sh.crew };
    pthread_mutex_init(&z.mu, NULL);
    pthread_cond_init(&z.cv, NULL);
    eng.start = clock_now_ns();
    assert_int_equal(pthread_create(&t0, NULL, run_loop0, &z), 0);
    pthread_mutex_lock(&z.mu);
    while (!z.ready)
        pthread_cond_wait(&z.cv, &z.mu);
    pthread_mutex_unlock(&z.mu);
    assert_int_equal(z.ret, 0);
    struct loop_config base = z.cfg;
    assert_int_equal(shards_start(&sh, &base, &z.on, &z.loop, &eng.current, tun, none, none), 0);

    /* Both queues read... */
    assert_int_equal(send(tun_peer[0], "zero", 4, 0), 4);
    assert_int_equal(send(tun_peer[1], "one", 3, 0), 3);
    for (int waited = 0; waited < 5000; waited++) {
        pthread_mutex_lock(&sh.lock);
        bool both = eng.tun_packets == 2;
        pthread_mutex_unlock(&sh.lock);
        if (both)
            break;
        usleep(1000);
    }
    /* ... then shard 1's is gone: the daemon's loop must stop too. */
    close(tun_peer[1]);
    pthread_join(t0, NULL);
    print_message("packets read: %llu, loop 0 stopped by the test's deadline: %d\n",
                  (unsigned long long)eng.tun_packets, eng.gave_up);
    shards_stop(&sh);
    shards_free(&sh);
    loop_destroy(&z.loop);
    assert_int_equal(eng.tun_packets, 2);
    assert_true(z.done);
    assert_false(eng.gave_up);
    close(tun[0]);
    close(tun[1]);
    close(tun_peer[0]);
    pthread_mutex_destroy(&sh.lock);
}

/* --- a wait the kernel refuses for now ----------------------------------------- */

/* The errors the next waits return, in turn, before they reach the ring. */
static int wait_errors[4];
static unsigned wait_errors_n, wait_errors_given;

int __real_io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                            unsigned wait_nr, struct __kernel_timespec *ts,
                                            sigset_t *sigmask);
int __wrap_io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                            unsigned wait_nr, struct __kernel_timespec *ts,
                                            sigset_t *sigmask);
int __wrap_io_uring_submit_and_wait_timeout(struct io_uring *ring, struct io_uring_cqe **cqe_ptr,
                                            unsigned wait_nr, struct __kernel_timespec *ts,
                                            sigset_t *sigmask)
{
    if (wait_errors_given < wait_errors_n)
        return wait_errors[wait_errors_given++];
    return __real_io_uring_submit_and_wait_timeout(ring, cqe_ptr, wait_nr, ts, sigmask);
}

/* Runs one loop on a socket pair standing in for ddp0, with a packet
 * waiting to be read, its first waits failing with errs: loop_run's result. */
static int run_with_wait_errors(const int *errs, unsigned n)
{
    int pair[2];
    struct loop l;

    memset(&eng, 0, sizeof(eng));
    eng.send_fd = -1;
    memcpy(wait_errors, errs, n * sizeof(*errs));
    wait_errors_n = n;
    wait_errors_given = 0;
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair), 0);
    assert_int_equal(send(pair[1], "after", 5, 0), 5);
    struct loop_config c = { .name = "test", .max_datagram = 1500, .tun_fd = pair[0],
                             .udp4_fd = -1, .udp6_fd = -1, .control_fd = -1, .signal_fd = -1 };
    struct loop_handlers on = { .ctx = &l, .udp = on_udp, .tun = on_tun,
                                .crypto_done = on_crypto_done, .timers = on_timers };
    assert_int_equal(loop_init(&l, &c, &on), 0);
    eng.l = &l;
    eng.start = clock_now_ns();
    int ret = loop_run(&l);
    loop_destroy(&l);
    wait_errors_n = 0;
    close(pair[0]);
    close(pair[1]);
    return ret;
}

static void test_ring_wait_refused_goes_on(void **state)
{
    const int errs[] = { -EBUSY, -EAGAIN, -ENOMEM, -EBUSY };

    (void)state;
    int ret = run_with_wait_errors(errs, 4);
    print_message("waits refused: %u, loop_run: %d, packets read: %llu, gave up: %d\n",
                  wait_errors_given, ret, (unsigned long long)eng.tun_packets, eng.gave_up);
    assert_int_equal(wait_errors_given, 4);
    assert_int_equal(ret, 0);
    assert_int_equal(eng.tun_packets, 1);
    assert_false(eng.gave_up);
}

static void test_ring_wait_fault_stops(void **state)
{
    const int errs[] = { -EINVAL };

    (void)state;
    int ret = run_with_wait_errors(errs, 1);
    print_message("loop_run after -EINVAL: %d, packets read: %llu\n", ret,
                  (unsigned long long)eng.tun_packets);
    assert_int_equal(ret, -EINVAL);
    assert_int_equal(eng.tun_packets, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_read_error_read_again),
        cmocka_unit_test(test_shard_gone_stops_daemon),
        cmocka_unit_test(test_ring_wait_refused_goes_on),
        cmocka_unit_test(test_ring_wait_fault_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
