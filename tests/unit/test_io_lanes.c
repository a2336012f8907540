/* SPDX-License-Identifier: MIT */
/* Tests of the I/O lanes (overlay/loop/io_lanes.c): every call handed to a
 * lane is made once and handed back once with its result; the calls of
 * one flow are made in the order they were handed over, though several
 * lanes run at once; a failed call hands its errno back; a read waits
 * awake while the loop polls and asleep otherwise; and the counts and
 * limits hold. Real calls: UDP sends over loopback and writes to a
 * pipe. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/base/clock.h"
#include "overlay/loop/io_lanes.h"

#define LANES    3u
#define FLOWS    8u
#define PER_FLOW 150u
#define ROUND    48u      /* calls handed over before the receiver reads */

struct call {
    uint32_t flow, seq;   /* the bytes sent or written */
    struct iovec iov;
    struct msghdr msg;
    int returned;         /* times handed back */
    int res;
};

static struct call calls[FLOWS * PER_FLOW];

/* Takes back what is done until `want` calls came back (or 5 s). */
static unsigned take_all(struct io_lanes *set, unsigned want)
{
    struct io_lane_done done[16];
    unsigned got = 0, n;

    while (got < want) {
        struct pollfd pfd = { set->event_fd, POLLIN, 0 };
        if (poll(&pfd, 1, 5000) != 1)
            break;
        while ((n = io_lanes_take(set, done, 16))) {
            for (unsigned i = 0; i < n; i++) {
                struct call *c = done[i].owner;
                c->returned++;
                c->res = done[i].res;
            }
            got += n;
        }
    }
    return got;
}

static void push_call(struct io_lanes *set, struct call *c, enum io_lane_op op, int fd)
{
    c->iov = (struct iovec){ &c->flow, 2 * sizeof(uint32_t) };
    c->msg = (struct msghdr){ .msg_iov = &c->iov, .msg_iovlen = 1 };
    io_lane_push(io_lanes_pick(set, c->flow),
                 &(struct io_lane_work){ .owner = c, .op = op, .fd = fd, .msg = &c->msg,
                                         .iov = &c->iov, .iovcnt = 1 });
}

/* Reads n records of (flow, seq) from fd; each flow's must come in order. */
static void expect_in_order(int fd, unsigned n, uint32_t *next)
{
    for (unsigned i = 0; i < n; i++) {
        uint32_t rec[2];
        assert_int_equal(read(fd, rec, sizeof(rec)), sizeof(rec));
        assert_true(rec[0] < FLOWS);
        assert_int_equal(rec[1], next[rec[0]]);
        next[rec[0]]++;
    }
}

/* The calls in the order flow 0..FLOWS-1 interleaved, one by one. */
static struct call *nth_call(unsigned i)
{
    struct call *c = &calls[i];

    c->flow = i % FLOWS;
    c->seq = i / FLOWS;
    c->returned = 0;
    return c;
}

static void run_ordered(enum io_lane_op op, int send_fd, int recv_fd)
{
    struct io_lanes set;
    uint32_t next[FLOWS] = { 0 };

    assert_int_equal(io_lanes_start(&set, LANES, "test-lane"), 0);
    assert_int_equal(set.n, LANES);
    for (unsigned base = 0; base < FLOWS * PER_FLOW; base += ROUND) {
        for (unsigned i = base; i < base + ROUND; i++)
            push_call(&set, nth_call(i), op, send_fd);
        assert_int_equal(take_all(&set, ROUND), ROUND);
        expect_in_order(recv_fd, ROUND, next);
    }
    for (unsigned i = 0; i < FLOWS * PER_FLOW; i++) {
        assert_int_equal(calls[i].returned, 1);
        assert_int_equal(calls[i].res, 2 * sizeof(uint32_t));
    }
    for (unsigned l = 0; l < LANES; l++)
        assert_int_equal(set.lane[l].in_flight, 0);
    io_lanes_stop(&set);
    assert_int_equal(set.n, 0);
}

static void sends_keep_each_flows_order(void **state)
{
    (void)state;
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    int big = 1 << 20;

    assert_true(rx >= 0 && tx >= 0);
    setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    assert_int_equal(bind(rx, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(rx, (struct sockaddr *)&a, &alen), 0);
    assert_int_equal(connect(tx, (struct sockaddr *)&a, sizeof(a)), 0);
    run_ordered(IO_LANE_SENDMSG, tx, rx);
    close(rx);
    close(tx);
}

static void writes_keep_each_flows_order(void **state)
{
    (void)state;
    int p[2];

    assert_int_equal(pipe(p), 0);
    run_ordered(IO_LANE_WRITEV, p[1], p[0]);
    close(p[0]);
    close(p[1]);
}

/* Reads: a lane waits for its fd, reads in order, and hands each buffer
 * back with what it read; a lane waiting on an idle fd still stops. */
static void reads_in_order_and_stop_while_waiting(void **state)
{
    (void)state;
    struct io_lanes set;
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0), p[2];
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t alen = sizeof(a);
    uint32_t got[8][2];
    struct iovec iov[8];
    struct msghdr msg[8];
    struct call reads[10];

    assert_true(rx >= 0 && tx >= 0);
    assert_int_equal(bind(rx, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(getsockname(rx, (struct sockaddr *)&a, &alen), 0);
    assert_int_equal(connect(tx, (struct sockaddr *)&a, sizeof(a)), 0);
    assert_int_equal(pipe(p), 0);
    assert_int_equal(io_lanes_start(&set, 2, "test-read"), 0);
    /* Lane 0 receives 8 datagrams, pushed before any is sent. */
    for (unsigned i = 0; i < 8; i++) {
        iov[i] = (struct iovec){ got[i], sizeof(got[i]) };
        msg[i] = (struct msghdr){ .msg_iov = &iov[i], .msg_iovlen = 1 };
        reads[i].returned = 0;
        io_lane_push(&set.lane[0], &(struct io_lane_work){ .owner = &reads[i], .op = IO_LANE_RECVMSG,
                                                           .fd = rx, .msg = &msg[i] });
    }
    for (uint32_t i = 0; i < 8; i++) {
        uint32_t rec[2] = { 7, i };
        assert_int_equal(send(tx, rec, sizeof(rec), 0), sizeof(rec));
    }
    assert_int_equal(take_all(&set, 8), 8);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(reads[i].returned, 1);
        assert_int_equal(reads[i].res, sizeof(got[i]));
        assert_int_equal(got[i][1], i);
    }
    /* Lane 1 reads a pipe; one read comes back, the next waits. */
    reads[8].returned = reads[9].returned = 0;
    io_lane_push(&set.lane[1], &(struct io_lane_work){ .owner = &reads[8], .op = IO_LANE_READ,
                                                       .fd = p[0], .buf = got[0], .cap = 8 });
    io_lane_push(&set.lane[1], &(struct io_lane_work){ .owner = &reads[9], .op = IO_LANE_READ,
                                                       .fd = p[0], .buf = got[1], .cap = 8 });
    assert_int_equal(write(p[1], "abcdefgh", 8), 8);
    assert_int_equal(take_all(&set, 1), 1);
    assert_int_equal(reads[8].returned, 1);
    assert_int_equal(reads[8].res, 8);
    assert_memory_equal(got[0], "abcdefgh", 8);
    assert_int_equal(reads[9].returned, 0);
    io_lanes_stop(&set);   /* returns though lane 1 waits on the pipe */
    close(p[0]);
    close(p[1]);
    close(rx);
    close(tx);
}

/* A call that fails comes back once, with its -errno. */
static void failed_calls_hand_back_errno(void **state)
{
    (void)state;
    struct io_lanes set;
    int p[2];

    assert_int_equal(io_lanes_start(&set, 2, "test-lane"), 0);
    assert_int_equal(pipe(p), 0);
    close(p[0]);   /* a pipe with no reader */
    push_call(&set, nth_call(0), IO_LANE_WRITEV, p[1]);
    push_call(&set, nth_call(1), IO_LANE_SENDMSG, p[1]);   /* not a socket */
    assert_int_equal(take_all(&set, 2), 2);
    assert_int_equal(calls[0].returned, 1);
    assert_int_equal(calls[1].returned, 1);
    assert_int_equal(calls[0].res, -EPIPE);
    assert_int_equal(calls[1].res, -ENOTSOCK);
    io_lanes_stop(&set);
    close(p[1]);
}

/* One flow's work always goes to one lane; flows spread over lanes. */
static void a_flow_has_one_lane(void **state)
{
    (void)state;
    struct io_lanes set;
    unsigned used[LANES] = { 0 };

    assert_int_equal(io_lanes_start(&set, LANES, "test-lane"), 0);
    for (uint32_t f = 0; f < 30; f++) {
        struct io_lane *l = io_lanes_pick(&set, f);
        assert_ptr_equal(l, io_lanes_pick(&set, f));
        used[l->index]++;
    }
    for (unsigned l = 0; l < LANES; l++)
        assert_true(used[l] > 0);
    io_lanes_stop(&set);
}

/* The state letter of this process's thread named `name` (R running or
 * runnable, S asleep), from /proc; '?' when there is none. */
static char thread_state(const char *name)
{
    char path[300], comm[32], stat[256];
    DIR *tasks = opendir("/proc/self/task");
    struct dirent *e;
    char state = '?';

    assert_non_null(tasks);
    while (state == '?' && (e = readdir(tasks))) {
        snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        bool match = fgets(comm, sizeof(comm), f) && strncmp(comm, name, strlen(name)) == 0 &&
                     comm[strlen(name)] == '\n';
        fclose(f);
        if (!match)
            continue;
        snprintf(path, sizeof(path), "/proc/self/task/%s/stat", e->d_name);
        if (!(f = fopen(path, "r")))
            break;
        char *got = fgets(stat, sizeof(stat), f);
        fclose(f);
        char *end = got ? strrchr(stat, ')') : NULL;
        if (end && end[1] == ' ')
            state = end[2];
    }
    closedir(tasks);
    return state;
}

/* How many of 10 looks, 10 ms apart, find the thread asleep. */
static unsigned asleep_of_10(const char *name)
{
    unsigned asleep = 0;

    for (int i = 0; i < 10; i++) {
        usleep(10000);
        asleep += thread_state(name) == 'S';
    }
    return asleep;
}

/* While spin_until is ahead, a read waits without sleeping (the loop
 * polls then, and an answer must find the reader awake too); past it,
 * or at 0, the read sleeps in poll. */
static void reads_poll_while_the_loop_does(void **state)
{
    (void)state;
    struct io_lanes set;
    struct call reads[3] = { 0 };
    uint8_t buf[8];
    int p[2];

    assert_int_equal(pipe(p), 0);
    assert_int_equal(io_lanes_start(&set, 1, "test-spin"), 0);
    for (unsigned i = 0; i < 3; i++) {
        io_lanes_spin(&set, i == 0 ? UINT64_MAX : i == 1 ? clock_now_ns() + 250000000ull : 0);
        io_lane_push(&set.lane[0], &(struct io_lane_work){ .owner = &reads[i], .op = IO_LANE_READ,
                                                           .fd = p[0], .buf = buf, .cap = 8 });
        unsigned asleep = asleep_of_10("test-spin0");
        if (i < 2)
            assert_int_equal(asleep, 0);      /* within the window: never asleep */
        else
            assert_true(asleep >= 8);         /* no window: asleep in poll */
        if (i == 1) {
            usleep(250000);                   /* the window closes */
            assert_true(asleep_of_10("test-spin0") >= 8);
        }
        assert_int_equal(write(p[1], "abcdefgh", 8), 8);
        assert_int_equal(take_all(&set, 1), 1);
        assert_int_equal(reads[i].res, 8);
    }
    io_lanes_stop(&set);
    close(p[0]);
    close(p[1]);
}

static void limits(void **state)
{
    (void)state;
    struct io_lanes set;

    assert_int_equal(io_lanes_start(&set, 0, "test-lane"), 0);   /* none: nothing started */
    assert_int_equal(set.n, 0);
    assert_int_equal(set.event_fd, -1);
    io_lanes_stop(&set);
    assert_int_equal(io_lanes_start(&set, IO_LANES_MAX + 1, "test-lane"), -EINVAL);
    io_lanes_stop(&set);
    assert_int_equal(io_lanes_start(&set, IO_LANES_MAX, "test-lane"), 0);
    assert_int_equal(set.n, IO_LANES_MAX);
    io_lanes_stop(&set);
    /* Stopping lanes that sleep on an empty queue returns. */
    assert_int_equal(set.n, 0);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);   /* a write to a pipe with no reader: EPIPE */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sends_keep_each_flows_order),
        cmocka_unit_test(writes_keep_each_flows_order),
        cmocka_unit_test(reads_in_order_and_stop_while_waiting),
        cmocka_unit_test(reads_poll_while_the_loop_does),
        cmocka_unit_test(failed_calls_hand_back_errno),
        cmocka_unit_test(a_flow_has_one_lane),
        cmocka_unit_test(limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
