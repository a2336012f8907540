/* SPDX-License-Identifier: MIT */
/* The metrics endpoint's bounds (overlay/control/metrics.h), tested as an
 * attacker with one fast client on loopback would test them, the server
 * driven as the daemon's services drive it (poll its fd until
 * metrics_server_next's deadline, then run; nothing else wakes it):
 *
 *  - one address: METRICS_CLIENTS_PER_IP connections are kept and served,
 *    the next ones are hung up on at once; another address is served
 *    meanwhile; the slots are free again once the four are done;
 *  - many addresses (127.0.0.x): METRICS_CLIENTS_MAX connections in all
 *    are kept, one more is not served while they are; once the flood
 *    goes, a scrape is answered at once and the whole cap is free again
 *    (16 connections from 16 addresses kept, the 17th not served);
 *  - oversized: a request line, one header or many headers beyond
 *    METRICS_CONN_MEMORY (and below libmicrohttpd's own default, so that
 *    the budget is what refuses them), or no line end at all, get a 4xx
 *    and the hang-up; a request within it is answered; a body announced
 *    is never waited for;
 *  - churn: a thousand connections opened and dropped as fast as one
 *    client can (nothing sent, half a request line, half the headers, a
 *    whole request; then a reset or a close), most before the server
 *    accepts them, leave no connection held (none waits for the idle
 *    time-out), a scrape is answered at once and the cap is whole;
 *  - a client that half-closes after a whole request (as `nc -N` does),
 *    before or after the server accepts it, with keep-alive or not, still
 *    gets its answer;
 *  - slow loris: connections that send nothing, half a request line, half
 *    the headers or half a header, holding every slot there is, are not
 *    hung up on early, are hung up on by METRICS_IDLE_S + 2 s (woken by
 *    metrics_server_next alone), and a scrape gets in then without the
 *    attacker closing anything. This one waits the real 10 s. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/addr.h"
#include "overlay/base/clock.h"
#include "overlay/control/metrics.h"
#include "overlay/engine/model/device.h"
#include "overlay/membership/state.h"

#define A_B64 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="

/* A scrape of a server not held by anyone is answered within this. */
#define SCRAPE_MS   1000
/* Long enough for the server to have acted on what a client did. */
#define SETTLE_MS   200
#define CHURN       1000

struct fx {
    struct device dev;
    struct membership membership;   /* dev.membership */
    struct metrics_server *s;
    uint16_t port;
};

static int64_t now_ms(void)
{
    return (int64_t)(clock_now_ns() / NS_PER_MS);
}

static int setup(void **state)
{
    static const char text[] =
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n\n"
        "[node gpu-a]\npublic-key = " A_B64 "\naddress = 10.77.0.1\n";
    struct fx *f = calloc(1, sizeof(*f));
    struct cluster_metrics m = { .at = CLUSTER_METRICS_ADDRESS, .port = 0 };
    struct sockaddr_in sin;
    socklen_t sl = sizeof(sin);
    char err[256];
    int fd = -1;

    assert_non_null(f);
    membership_init(&f->membership);
    f->dev.membership = &f->membership;
    assert_int_equal(cluster_parse(text, sizeof(text) - 1, &f->dev.cluster, NULL), 0);
    snprintf(f->dev.ifname, sizeof(f->dev.ifname), "ddp0");
    f->dev.self = &f->dev.cluster.nodes[0];
    f->dev.mtu = 1420;
    /* 0.0.0.0 would do as well; loopback answers every 127.0.0.x. */
    assert_int_equal(cluster_addr_parse("127.0.0.1", &m.addr), 0);
    assert_int_equal(metrics_listen(&m, &f->dev.self->address, &fd, err, sizeof(err)), 0);
    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
    f->port = ntohs(sin.sin_port);
    f->s = metrics_server_new(fd, &f->dev);
    assert_non_null(f->s);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    metrics_server_free(f->s);
    cluster_free(&f->dev.cluster);
    free(f);
    return 0;
}

/* --- the loop's part ------------------------------------------------------------- */

/* Runs the server for ms as services.c does: sleeps on its fd until the
 * deadline it last gave, runs it when the fd is readable or the deadline
 * has come, asks for the next deadline. Nothing else wakes it, so a
 * time-out the server forgot to announce is never acted on here either. */
static void pump(struct fx *f, int ms)
{
    int64_t end = now_ms() + ms;
    uint64_t due = metrics_server_next(f->s, clock_now_ns());

    for (;;) {
        uint64_t now = clock_now_ns();
        int64_t left = end - (int64_t)(now / NS_PER_MS);
        int wait = left > 0 ? (int)left : 0;
        struct pollfd p = { .fd = metrics_server_fd(f->s), .events = POLLIN };

        if (due != UINT64_MAX && due <= now)
            wait = 0;
        else if (due != UINT64_MAX && (due - now) / NS_PER_MS + 1 < (uint64_t)wait)
            wait = (int)((due - now) / NS_PER_MS + 1);
        int ready = poll(&p, 1, wait);
        now = clock_now_ns();
        if (ready > 0 || (due != UINT64_MAX && due <= now)) {
            metrics_server_run(f->s, now);
            due = metrics_server_next(f->s, now);
        }
        if (now_ms() >= end)
            return;
    }
}

/* --- the attacker's part ------------------------------------------------------------ */

/* A nonblocking connection from 127.0.0.host to the server, begun: its
 * socket; *pending says that connect did not complete it at once. */
static int connect_begin(struct fx *f, unsigned host, bool *pending)
{
    struct sockaddr_in from = { .sin_family = AF_INET, .sin_port = 0 };
    struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(f->port) };
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

    assert_true(fd >= 0);
    from.sin_addr.s_addr = htonl(INADDR_LOOPBACK - 1 + host);
    to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(fd, (struct sockaddr *)&from, sizeof(from)), 0);
    *pending = connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0;
    if (*pending)
        assert_int_equal(errno, EINPROGRESS);
    return fd;
}

/* A connection from 127.0.0.host to the server, made without waiting for
 * the server (the kernel completes it; the server accepts when it runs). */
static int connect_from(struct fx *f, unsigned host)
{
    bool pending;
    int fd = connect_begin(f, host, &pending);

    if (pending) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        int e = 0;
        socklen_t el = sizeof(e);
        assert_int_equal(poll(&p, 1, 2000), 1);
        assert_int_equal(getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el), 0);
        assert_int_equal(e, 0);
    }
    return fd;
}

/* A connection the server accepted, so that the next one is the next in
 * its order: connect, then let the server run. */
static int connect_run(struct fx *f, unsigned host)
{
    int fd = connect_from(f, host);

    pump(f, 20);
    return fd;
}

enum conn { OPEN, CLOSED, DATA };

/* What the server did with fd so far: nothing (open, nothing to read), hung
 * up (EOF or reset), or sent something. Reads nothing away. */
static enum conn state_of(int fd)
{
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);

    if (n > 0)
        return DATA;
    if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
        return CLOSED;
    return OPEN;
}

static const char *conn_name(enum conn c)
{
    return c == OPEN ? "open" : c == CLOSED ? "closed" : "answered";
}

static void expect_state(int fd, enum conn want, const char *what)
{
    enum conn got = state_of(fd);

    if (got != want)
        fail_msg("%s: %s, expected %s", what, conn_name(got), conn_name(want));
}

/* Writes all of buf (the socket is non-blocking: the server is pumped
 * while its window is full). false when the server hung up first. */
static bool send_all(struct fx *f, int fd, const char *buf, size_t len)
{
    while (len) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            buf += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
            return false;
        pump(f, 5);
    }
    return true;
}

struct answer {
    char text[1 << 16];
    size_t len;
    bool closed;                          /* the server hung up (after or without an answer) */
    int64_t took_ms;
};

/* Reads what the server says on fd within ms, pumping it meanwhile; stops
 * at the server's hang-up. */
static void read_answer(struct fx *f, int fd, int ms, struct answer *a)
{
    int64_t start = now_ms(), end = start + ms;

    a->len = 0;
    a->closed = false;
    a->text[0] = '\0';
    while (now_ms() < end && !a->closed) {
        pump(f, 5);
        for (;;) {
            ssize_t n = recv(fd, a->text + a->len, sizeof(a->text) - 1 - a->len, MSG_DONTWAIT);
            if (n > 0 && a->len + (size_t)n < sizeof(a->text) - 1) {
                a->len += (size_t)n;
                continue;
            }
            if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK))
                a->closed = true;
            break;
        }
    }
    a->text[a->len] = '\0';
    a->took_ms = now_ms() - start;
}

static const char SCRAPE[] = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";

/* A whole scrape on fd: the request, then 200 with the exposition and the
 * server's hang-up (Connection: close) within ms. */
static void expect_scrape_on(struct fx *f, int fd, int ms, const char *what)
{
    struct answer *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    if (!send_all(f, fd, SCRAPE, strlen(SCRAPE)))
        fail_msg("%s: the server hung up before the request was sent", what);
    read_answer(f, fd, ms, a);
    if (strncmp(a->text, "HTTP/1.1 200", 12) || !strstr(a->text, "ddpnet_info{") || !a->closed)
        fail_msg("%s: no whole 200 within %d ms (%zu bytes%s): %.80s", what, ms, a->len,
                 a->closed ? ", closed" : "", a->text);
    free(a);
}

/* A scrape on a new connection from 127.0.0.host; how long it took. */
static int64_t scrape_from(struct fx *f, unsigned host, const char *what)
{
    int64_t start = now_ms();
    int fd = connect_from(f, host);

    expect_scrape_on(f, fd, SCRAPE_MS, what);
    close(fd);
    return now_ms() - start;
}

/* The server's attention, waited for: once no connection is left it has
 * no deadline. */
static void expect_no_connections(struct fx *f, const char *what)
{
    int64_t end = now_ms() + SCRAPE_MS;

    while (metrics_server_next(f->s, clock_now_ns()) != UINT64_MAX && now_ms() < end)
        pump(f, 10);
    if (metrics_server_next(f->s, clock_now_ns()) != UINT64_MAX)
        fail_msg("%s: the server still holds a connection", what);
}

static void close_all(int *fds, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (fds[i] >= 0) {
            close(fds[i]);
            fds[i] = -1;
        }
}

/* Hung up on with a reset (SO_LINGER 0): what a client that vanishes
 * mid-way does. */
static void reset(int fd)
{
    struct linger l = { .l_onoff = 1, .l_linger = 0 };

    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
    close(fd);
}

/* --- one address -------------------------------------------------------------------- */

static void test_per_ip_limit(void **state)
{
    struct fx *f = *state;
    int fds[METRICS_CLIENTS_PER_IP + 2];
    char what[64];

    assert_int_equal(METRICS_CLIENTS_PER_IP, 4);
    for (size_t i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
        fds[i] = connect_run(f, 1);
    pump(f, SETTLE_MS);
    /* The first four held, silent; the fifth and sixth hung up on. */
    for (size_t i = 0; i < METRICS_CLIENTS_PER_IP; i++) {
        snprintf(what, sizeof(what), "connection %zu from 127.0.0.1", i + 1);
        expect_state(fds[i], OPEN, what);
    }
    expect_state(fds[METRICS_CLIENTS_PER_IP], CLOSED, "the 5th connection from 127.0.0.1");
    expect_state(fds[METRICS_CLIENTS_PER_IP + 1], CLOSED, "the 6th connection from 127.0.0.1");
    /* Another address is not held back by them. */
    scrape_from(f, 2, "a scrape from 127.0.0.2 beside 4 from 127.0.0.1");
    /* The four are real clients: each is answered. */
    for (size_t i = 0; i < METRICS_CLIENTS_PER_IP; i++) {
        snprintf(what, sizeof(what), "a scrape on connection %zu from 127.0.0.1", i + 1);
        expect_scrape_on(f, fds[i], SCRAPE_MS, what);
    }
    close_all(fds, sizeof(fds) / sizeof(fds[0]));
    /* Their slots are free again: four more from the same address kept. */
    expect_no_connections(f, "after the four scrapes");
    for (size_t i = 0; i < METRICS_CLIENTS_PER_IP + 1; i++)
        fds[i] = connect_run(f, 1);
    pump(f, SETTLE_MS);
    for (size_t i = 0; i < METRICS_CLIENTS_PER_IP; i++)
        expect_state(fds[i], OPEN, "a connection from 127.0.0.1, its address's slots freed");
    expect_state(fds[METRICS_CLIENTS_PER_IP], CLOSED, "the 5th again");
    close_all(fds, METRICS_CLIENTS_PER_IP + 1);
    expect_no_connections(f, "at the end");
}

/* --- many addresses ----------------------------------------------------------------- */

static void test_total_limit(void **state)
{
    struct fx *f = *state;
    int held[METRICS_CLIENTS_MAX], extra[2];
    struct answer *a = calloc(1, sizeof(*a));
    char what[64];
    unsigned hosts = METRICS_CLIENTS_MAX / METRICS_CLIENTS_PER_IP;

    assert_non_null(a);
    assert_int_equal(METRICS_CLIENTS_MAX, 16);
    /* 127.0.0.2 .. .5, four each: the whole cap. */
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++)
        held[i] = connect_run(f, 2 + (unsigned)(i / METRICS_CLIENTS_PER_IP));
    pump(f, SETTLE_MS);
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++) {
        snprintf(what, sizeof(what), "connection %zu (127.0.0.%zu)", i + 1,
                 2 + i / METRICS_CLIENTS_PER_IP);
        expect_state(held[i], OPEN, what);
    }
    /* One more, from an address of its own, and one from 127.0.0.1: not
     * served while the cap is held (hung up on, or left in the backlog),
     * even when they ask. */
    extra[0] = connect_run(f, 2 + hosts);
    extra[1] = connect_run(f, 1);
    for (size_t i = 0; i < 2; i++) {
        if (state_of(extra[i]) == OPEN)
            (void)send(extra[i], SCRAPE, strlen(SCRAPE), MSG_NOSIGNAL | MSG_DONTWAIT);
        read_answer(f, extra[i], SETTLE_MS, a);
        if (strstr(a->text, "HTTP/1.1 200"))
            fail_msg("connection %u beyond the cap of %u was served", METRICS_CLIENTS_MAX + 1 +
                     (unsigned)i, METRICS_CLIENTS_MAX);
        print_message("a connection beyond the cap: %s\n", a->closed ? "hung up on" : "not served");
    }
    /* The held ones still are, and are served. */
    expect_scrape_on(f, held[0], SCRAPE_MS, "a held connection, at the cap");
    close(held[0]);
    held[0] = -1;
    /* The flood goes: a scrape is answered at once. */
    close_all(extra, 2);
    close_all(held, METRICS_CLIENTS_MAX);
    int64_t took = scrape_from(f, 1, "a scrape after the flood");
    print_message("a scrape after the flood took %lld ms\n", (long long)took);
    expect_no_connections(f, "after the flood");
    /* The whole cap is free: 16 from 16 addresses kept, the 17th not. */
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++)
        held[i] = connect_run(f, 10 + (unsigned)i);
    extra[0] = connect_run(f, 10 + METRICS_CLIENTS_MAX);
    pump(f, SETTLE_MS);
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++)
        expect_state(held[i], OPEN, "one of 16 connections from 16 addresses");
    if (state_of(extra[0]) == OPEN)
        (void)send(extra[0], SCRAPE, strlen(SCRAPE), MSG_NOSIGNAL | MSG_DONTWAIT);
    read_answer(f, extra[0], SETTLE_MS, a);
    assert_null(strstr(a->text, "HTTP/1.1 200"));
    close_all(extra, 1);
    close_all(held, METRICS_CLIENTS_MAX);
    expect_no_connections(f, "at the end");
    free(a);
}

/* --- slow loris ---------------------------------------------------------------------- */

static void test_idle_hung_up_on(void **state)
{
    struct fx *f = *state;
    int held[METRICS_CLIENTS_MAX];
    char what[64];
    static const char *const partial[] = {
        NULL,                                       /* nothing at all */
        "GET /metr",                                /* half a request line */
        "GET /metrics HTTP/1.1\r\nHost: x\r\n",     /* headers not ended */
        "GET /metrics HTTP/1.1\r\nX-Slow: aaaa",    /* half a header */
    };
    uint64_t next;
    int64_t t0;

    assert_int_equal(METRICS_IDLE_S, 10);
    /* Every slot there is, four addresses, each connection silent after
     * what it sent. */
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++) {
        held[i] = connect_run(f, 2 + (unsigned)(i / METRICS_CLIENTS_PER_IP));
        const char *p = partial[i % 4];
        if (p)
            assert_true(send_all(f, held[i], p, strlen(p)));
    }
    t0 = now_ms();
    pump(f, SETTLE_MS);
    /* The server announces the time-out to the loop. */
    next = metrics_server_next(f->s, clock_now_ns());
    assert_true(next != UINT64_MAX);
    assert_true(next <= clock_now_ns() + (uint64_t)METRICS_IDLE_S * WG_NSEC_PER_SEC);
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++) {
        snprintf(what, sizeof(what), "slow connection %zu", i + 1);
        expect_state(held[i], OPEN, what);
    }
    /* Held: a scrape is not served meanwhile. */
    int probe = connect_run(f, 1);
    struct answer *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    if (state_of(probe) == OPEN)
        (void)send(probe, SCRAPE, strlen(SCRAPE), MSG_NOSIGNAL | MSG_DONTWAIT);
    read_answer(f, probe, SETTLE_MS, a);
    assert_null(strstr(a->text, "HTTP/1.1 200"));
    close(probe);
    /* Not hung up on early: still there a second and a half before. */
    pump(f, (int)(METRICS_IDLE_S * 1000 - 1500 - (now_ms() - t0)));
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++) {
        snprintf(what, sizeof(what), "slow connection %zu, %.1f s in", i + 1,
                 (double)(now_ms() - t0) / 1000);
        enum conn s = state_of(held[i]);
        /* The server may have answered a half request with an error
         * only once it is whole; here nothing may have come yet. */
        if (s != OPEN)
            fail_msg("%s: %s before %u s of silence", what, conn_name(s), METRICS_IDLE_S);
    }
    /* Hung up on by two seconds after, woken by the deadline alone. */
    pump(f, (int)(METRICS_IDLE_S * 1000 + 2000 - (now_ms() - t0)));
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++) {
        snprintf(what, sizeof(what), "slow connection %zu, %.1f s in", i + 1,
                 (double)(now_ms() - t0) / 1000);
        /* a half request may get a 4xx before the hang-up: read it away */
        char buf[4096];
        while (recv(held[i], buf, sizeof(buf), MSG_DONTWAIT) > 0)
            ;
        expect_state(held[i], CLOSED, what);
    }
    expect_no_connections(f, "after the idle time-out");
    /* The attacker closed nothing; a scrape is answered at once. */
    int64_t took = scrape_from(f, 1, "a scrape after the slow clients were dropped");
    print_message("after %u s of slow clients, a scrape took %lld ms\n", METRICS_IDLE_S,
                  (long long)took);
    close_all(held, METRICS_CLIENTS_MAX);
    free(a);
}

/* --- oversized requests ----------------------------------------------------------------- */

/* Sends req on a new connection and reads the answer: it must be a 4xx
 * and the connection closed (or closed with no answer at all). */
static void expect_refused(struct fx *f, const char *req, size_t len, const char *what)
{
    int fd = connect_from(f, 1);
    struct answer *a = calloc(1, sizeof(*a));
    unsigned status = 0;

    assert_non_null(a);
    (void)send_all(f, fd, req, len);       /* it may hang up before all is sent */
    read_answer(f, fd, 2000, a);
    if (!a->closed)
        fail_msg("%s: the connection was not closed (%zu bytes back: %.60s)", what, a->len,
                 a->text);
    if (a->len && (sscanf(a->text, "HTTP/1.%*u %u", &status) != 1 || status < 400 ||
                   status >= 500))
        fail_msg("%s: answered %.60s", what, a->text);
    print_message("%s: %s\n", what, a->len ? strtok(a->text, "\r") : "closed without an answer");
    close(fd);
    free(a);
}

static void test_oversized(void **state)
{
    struct fx *f = *state;
    /* Beyond the budget, and below libmicrohttpd's own default (32 KiB),
     * so that the budget is what refuses it. */
    size_t big = METRICS_CONN_MEMORY + 4096;
    char *req = malloc(big + 512), *p;
    int n;

    assert_non_null(req);
    assert_int_equal(METRICS_CONN_MEMORY, 16 * 1024);
    /* A request line longer than the whole budget. */
    p = req + sprintf(req, "GET /metrics?");
    memset(p, 'a', big);
    p += big;
    n = (int)(p - req) + sprintf(p, " HTTP/1.1\r\nHost: x\r\n\r\n");
    expect_refused(f, req, (size_t)n, "a 20 KiB URL");
    /* One header longer than it. */
    p = req + sprintf(req, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
    memset(p, 'b', big);
    p += big;
    n = (int)(p - req) + sprintf(p, "\r\n\r\n");
    expect_refused(f, req, (size_t)n, "a 20 KiB header");
    /* Many small headers, each fine, together more than it. */
    p = req + sprintf(req, "GET /metrics HTTP/1.1\r\nHost: x\r\n");
    for (size_t i = 0; (size_t)(p - req) < big; i++)
        p += sprintf(p, "X-H%zu: %s\r\n", i, "cccccccccccccccccccccccccccccccccccccc");
    n = (int)(p - req) + sprintf(p, "\r\n");
    expect_refused(f, req, (size_t)n, "20 KiB of small headers");
    /* No end of line at all. */
    memset(req, 'G', big);
    expect_refused(f, req, big, "20 KiB without a line end");
    /* A request within the budget is answered. */
    p = req + sprintf(req, "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Ok: ");
    memset(p, 'd', 2048);
    p += 2048;
    n = (int)(p - req) + sprintf(p, "\r\n\r\n");
    int fd = connect_from(f, 1);
    struct answer *a = calloc(1, sizeof(*a));
    assert_non_null(a);
    assert_true(send_all(f, fd, req, (size_t)n));
    read_answer(f, fd, SCRAPE_MS, a);
    assert_int_equal(strncmp(a->text, "HTTP/1.1 200", 12), 0);
    close(fd);
    /* A body is never read: a GET announcing 1 MiB gets its answer (or a
     * refusal) and the hang-up without the server waiting for the body. */
    n = sprintf(req, "GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 1048576\r\n\r\n");
    fd = connect_from(f, 1);
    assert_true(send_all(f, fd, req, (size_t)n));
    read_answer(f, fd, SCRAPE_MS, a);
    if (!a->closed)
        fail_msg("a GET announcing a 1 MiB body: not closed within %d ms (%.60s)", SCRAPE_MS,
                 a->text);
    print_message("a GET announcing a 1 MiB body: %s\n",
                  a->len ? strtok(a->text, "\r") : "closed without an answer");
    close(fd);
    free(a);
    free(req);
    expect_no_connections(f, "after the oversized requests");
    scrape_from(f, 1, "a scrape after the oversized requests");
}

/* --- churn ---------------------------------------------------------------------------------- */

/* A connection begun from 127.0.0.host, not waited for: a client that
 * does not care whether the server keeps up. */
static int connect_nowait(struct fx *f, unsigned host)
{
    bool pending;

    return connect_begin(f, host, &pending);
}

static void test_churn(void **state)
{
    struct fx *f = *state;
    static const char *const sent[] = {
        NULL, "GET /metr", "GET /metrics HTTP/1.1\r\nHost: x\r\n", SCRAPE,
    };
    int held[METRICS_CLIENTS_MAX];
    int64_t t0 = now_ms();

    /* Opened and dropped every way a client can -- nothing, half a
     * request line, half the headers, a whole request; then a reset or a
     * close -- as fast as it can, from eight addresses; the server runs
     * between them only when its fd says so, as in the loop. Most are
     * dropped before the server accepts them: what it reads then ends in
     * the end of the stream at once. */
    for (unsigned i = 0; i < CHURN; i++) {
        int fd = connect_nowait(f, 1 + i % 8);
        const char *what = sent[i % 4];
        if (what)
            (void)send(fd, what, strlen(what), MSG_NOSIGNAL | MSG_DONTWAIT);
        if ((i / 4) % 2)
            reset(fd);
        else
            close(fd);
        struct pollfd p = { .fd = metrics_server_fd(f->s), .events = POLLIN };
        if (poll(&p, 1, 0) > 0)
            metrics_server_run(f->s, clock_now_ns());
    }
    print_message("%d connections opened and dropped in %lld ms\n", CHURN,
                  (long long)(now_ms() - t0));
    /* None of them is held: a client gone is not waited for until the
     * idle time-out. */
    expect_no_connections(f, "after the churn");
    int64_t took = scrape_from(f, 1, "a scrape after the churn");
    print_message("a scrape after the churn took %lld ms\n", (long long)took);
    /* No slot leaked: the whole cap is held again, per address too. */
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++)
        held[i] = connect_run(f, 1 + (unsigned)(i / METRICS_CLIENTS_PER_IP));
    pump(f, SETTLE_MS);
    for (size_t i = 0; i < METRICS_CLIENTS_MAX; i++)
        expect_state(held[i], OPEN, "a connection after the churn");
    close_all(held, METRICS_CLIENTS_MAX);
    expect_no_connections(f, "at the end");
}

/* A client that sends its whole request and then closes its half
 * (shutdown SHUT_WR, as `nc -N` does) still gets its answer, whether the
 * server accepted it before or after; with keep-alive too. */
static void test_half_close_answered(void **state)
{
    struct fx *f = *state;
    static const char KEEP[] = "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
    struct answer *a = calloc(1, sizeof(*a));

    assert_non_null(a);
    for (int before = 0; before < 2; before++)
        for (int keep = 0; keep < 2; keep++) {
            const char *req = keep ? KEEP : SCRAPE;
            int fd = connect_from(f, 1);
            if (!before)
                pump(f, 20);
            assert_true(send_all(f, fd, req, strlen(req)));
            assert_int_equal(shutdown(fd, SHUT_WR), 0);
            read_answer(f, fd, SCRAPE_MS, a);
            if (strncmp(a->text, "HTTP/1.1 200", 12) || !strstr(a->text, "ddpnet_info{") ||
                !a->closed)
                fail_msg("a request then its half closed (%s accept%s): %zu bytes%s: %.60s",
                         before ? "before" : "after", keep ? ", keep-alive" : "", a->len,
                         a->closed ? ", closed" : "", a->text);
            close(fd);
        }
    free(a);
    expect_no_connections(f, "at the end");
}

int main(void)
{

    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_per_ip_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_total_limit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized, setup, teardown),
        cmocka_unit_test_setup_teardown(test_churn, setup, teardown),
        cmocka_unit_test_setup_teardown(test_half_close_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_idle_hung_up_on, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
