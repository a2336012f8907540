/* SPDX-License-Identifier: MIT */
/* The loop's queue management (overlay/loop/loop.c: queue_signal,
 * socket_drained) driven for real: one event loop over a UDP socket on
 * 127.0.0.1 with SO_TIMESTAMPNS on, a 1 µs target (every receive waited
 * past it) and a fake engine whose timers handler, called once at the
 * start of every turn of the loop, keeps the socket's queue as the test
 * wants it. Every getsockopt the loop makes is counted here (this file's
 * getsockopt stands in for libc's at link time), per turn.
 *
 *   - a standing queue: however many receives a turn takes, the socket's
 *     backlog (SO_MEMINFO) is read at most once in it (issue 55: once
 *     per receive made a flood three times cheaper), and the queue is
 *     still signalled (pkt.congested) once it stood for an interval;
 *   - datagrams that come one at a time and leave the socket empty are
 *     no queue, however long past the target they were read: nothing is
 *     signalled, which needs the backlog read afresh in every turn. */
#include <errno.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/base/clock.h"
#include "overlay/loop/loop.h"

#define QUEUED     64u                    /* what phase STANDING keeps behind the reads */
#define PHASE_NS   (300ull * 1000 * 1000) /* each phase: 3 intervals of CoDel's */
#define LONE_TURNS 100                        /* turns the lone phase runs at least */
#define LONE_MAX_NS (10ull * 1000 * 1000 * 1000) /* ... unless they take this long */

/* --- every getsockopt counted ------------------------------------------------ */

static int counted_fd = -1;
static unsigned meminfo_reads;            /* SO_MEMINFO of counted_fd, this turn */

int getsockopt(int fd, int level, int name, void *val, socklen_t *len)
{
    if (fd == counted_fd && level == SOL_SOCKET && name == SO_MEMINFO)
        meminfo_reads++;
    return (int)syscall(SYS_getsockopt, fd, level, name, val, len);
}

/* --- a fake engine --------------------------------------------------------------- */

enum phase { STANDING, LONE, DONE };

struct engine {
    struct loop *l;
    int tx;
    struct sockaddr_in to;
    enum phase phase;
    uint64_t phase_end;
    uint64_t sent, got, turn_got;
    /* Per phase: congested receives, turns with receives, SO_MEMINFO
     * reads in all and in the turn with the most. */
    uint64_t congested[2], turns[2], reads[2];
    unsigned max_reads[2];
};

static void send_one(struct engine *e)
{
    uint8_t msg[64] = { 0 };

    assert_int_equal(sendto(e->tx, msg, sizeof(msg), 0, (struct sockaddr *)&e->to, sizeof(e->to)),
                     (ssize_t)sizeof(msg));
    e->sent++;
}

static void on_udp(void *ctx, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    struct engine *e = ctx;

    (void)seg_size;
    (void)now;
    e->got++;
    e->turn_got++;
    if (e->phase != DONE && pkt->congested)
        e->congested[e->phase]++;
    loop_pkt_put(e->l, pkt);
}

static void on_tun(void *ctx, struct pkt *pkt, uint64_t now)
{
    struct engine *e = ctx;

    (void)now;
    loop_pkt_put(e->l, pkt);
}

static void on_crypto_done(void *ctx, struct crypto_job *job, uint64_t now)
{
    (void)ctx;
    (void)job;
    (void)now;
}

/* The start of a turn: the last turn's counts, then the queue for the
 * next. STANDING keeps QUEUED datagrams behind the reads in flight;
 * LONE sends one once the last was read, so the socket holds at most
 * that one. */
static uint64_t on_timers(void *ctx, uint64_t now)
{
    struct engine *e = ctx;

    if (e->phase != DONE && e->turn_got) {
        e->turns[e->phase]++;
        e->reads[e->phase] += meminfo_reads;
        if (meminfo_reads > e->max_reads[e->phase])
            e->max_reads[e->phase] = meminfo_reads;
    }
    meminfo_reads = 0;
    e->turn_got = 0;
    if (now >= e->phase_end && e->phase == STANDING && e->got == e->sent) {
        e->phase = LONE;
        e->phase_end = now + PHASE_NS;
    } else if (e->phase == LONE &&
               ((now >= e->phase_end && e->turns[LONE] > LONE_TURNS) || now >= e->phase_end + LONE_MAX_NS)) {
        /* Enough turns to judge, however slowly a loaded machine runs
         * them; a loop that never turns fails the count below. */
        e->phase = DONE;
        loop_stop(e->l);
    }
    if (e->phase == STANDING && now < e->phase_end)
        while (e->sent - e->got < LOOP_UDP_RECVS + QUEUED)
            send_one(e);
    if (e->phase == LONE && e->got == e->sent) {
        send_one(e);
        usleep(200);   /* read later than the target, but alone */
    }
    return now + 1000 * 1000;
}

static void test_backlog_read_once_a_turn(void **state)
{
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int rx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), one = 1, size = 1 << 20;
    int tun[2];
    struct engine e = { .tx = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0) };
    struct loop l;

    (void)state;
    assert_true(rx >= 0 && e.tx >= 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, tun), 0);
    setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
    assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)), 0);
    assert_int_equal(bind(rx, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(rx, (struct sockaddr *)&a, &alen), 0);
    e.to = a;
    counted_fd = rx;

    struct loop_config c = { .name = "test", .max_datagram = 1500, .queue_target_us = 1,
                             .tun_fd = tun[0], .udp4_fd = rx, .udp6_fd = -1,
                             .control_fd = -1, .signal_fd = -1 };
    struct loop_handlers on = { .ctx = &e, .udp = on_udp, .tun = on_tun,
                                .crypto_done = on_crypto_done, .timers = on_timers };
    assert_int_equal(loop_init(&l, &c, &on), 0);
    e.l = &l;
    e.phase_end = clock_now_ns() + PHASE_NS;
    assert_int_equal(loop_run(&l), 0);
    loop_destroy(&l);

    print_message("standing: %llu turns, %llu SO_MEMINFO reads (at most %u a turn), %llu signals\n",
                  (unsigned long long)e.turns[STANDING], (unsigned long long)e.reads[STANDING],
                  e.max_reads[STANDING], (unsigned long long)e.congested[STANDING]);
    print_message("lone: %llu turns, %llu SO_MEMINFO reads, %llu signals\n",
                  (unsigned long long)e.turns[LONE], (unsigned long long)e.reads[LONE],
                  (unsigned long long)e.congested[LONE]);
    /* The queue stood: turns took several receives each, the backlog
     * was read, at most once a turn, and the queue was signalled. */
    assert_true(e.got > 2 * e.turns[STANDING]);
    assert_true(e.reads[STANDING] > 0);
    assert_true(e.max_reads[STANDING] <= 1);
    assert_true(e.congested[STANDING] > 0);
    /* Alone in the socket, read late: read afresh every turn, never a queue. */
    assert_true(e.turns[LONE] > LONE_TURNS);
    assert_int_equal(e.reads[LONE], e.turns[LONE]);
    assert_int_equal(e.congested[LONE], 0);
    close(tun[0]);
    close(tun[1]);
    close(rx);
    close(e.tx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_backlog_read_once_a_turn),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
