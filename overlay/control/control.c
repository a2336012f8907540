/* SPDX-License-Identifier: MIT */
/* The control socket's transport: creating the listening socket, serving
 * one client connection (credentials, framing, one answer per request) and
 * the CLI's client call (control.h). What a request does lives in
 * control_get.c and control_set.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "overlay/base/log.h"
#include "overlay/base/version.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"

#define CONTROL_BACKLOG          16
/* Only the owner (root: the daemon binds before dropping it) may connect. */
#define CONTROL_SOCKET_MODE      0600
#define CONTROL_SOCKET_UMASK     0177
/* The env socket: every user may connect (control.h). */
#define CONTROL_ENV_SOCKET_MODE  0666
#define CONTROL_ENV_SOCKET_UMASK 0111
/* How long the CLI waits on the daemon. */
#define CONTROL_CLIENT_TIMEOUT_S 5
#define CONTROL_READ_CHUNK       4096u
/* Descriptors taken from one message (the first is kept, the rest closed):
 * only `reload` passes one. */
#define CONTROL_FDS_MAX          4u
#define CONTROL_DDPNET_LEN       (sizeof(CONTROL_GET_DDPNET) - 1)
#define CONTROL_ENV_LEN          (sizeof(CONTROL_GET_ENV) - 1)
#define CONTROL_CERTS_LEN        (sizeof(CONTROL_GET_CERTS) - 1)
/* "errno=" DEC "\n\n" */
#define CONTROL_ERRNO_LINE_MAX   32u
#define CONTROL_PROTOCOL_LEN     (sizeof(CONTROL_PROTOCOL_KEY) - 1)
/* Digits of a protocol number, and its whole line ("protocol=" DEC "\n"). */
#define CONTROL_PROTOCOL_DIGITS  8u
#define CONTROL_PROTOCOL_LINE_MAX 32u

/* --- a growing buffer that may hold secrets ------------------------------- */

struct cbuf {
    char *p;
    size_t len, cap;
};

static void cbuf_wipe(struct cbuf *b)
{
    if (b->p) {
        sodium_memzero(b->p, b->cap);
        free(b->p);
    }
    memset(b, 0, sizeof(*b));
}

/* Makes room for at least `want` more bytes (plus a NUL), never beyond max
 * bytes of content. Grows by copying, so no stale copy of a private key is
 * left behind by realloc. */
static int cbuf_reserve(struct cbuf *b, size_t want, size_t max)
{
    size_t cap;
    char *p;

    if (b->len + want + 1 <= b->cap)
        return 0;
    if (b->len >= max)
        return -EMSGSIZE;
    cap = b->cap ? b->cap : CONTROL_READ_CHUNK;
    while (cap < b->len + want + 1 && cap <= max)
        cap *= 2;
    if (cap > max + 1)
        cap = max + 1;
    if (cap <= b->cap)
        return 0;   /* already as large as allowed, and not full */
    p = malloc(cap);
    if (!p)
        return -ENOMEM;
    if (b->p) {
        memcpy(p, b->p, b->len);
        sodium_memzero(b->p, b->cap);
        free(b->p);
    }
    b->p = p;
    b->cap = cap;
    return 0;
}

/* One read of up to room bytes into p; with passed non-NULL, a descriptor
 * sent along (SCM_RIGHTS) replaces *passed (closed first; more than one
 * in a message: the others closed at once). */
static ssize_t read_some(int fd, char *p, size_t room, int *passed)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int) * CONTROL_FDS_MAX)];
    } ctl;
    struct iovec iov = { p, room };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1 };
    ssize_t n;

    if (!passed)
        return read(fd, p, room);
    msg.msg_control = ctl.buf;
    msg.msg_controllen = sizeof(ctl.buf);
    n = recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0)
        return n;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        size_t k;
        int fds[CONTROL_FDS_MAX];

        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        if (k > CONTROL_FDS_MAX)
            k = CONTROL_FDS_MAX;
        memcpy(fds, CMSG_DATA(c), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
            if (i == 0) {
                if (*passed >= 0)
                    close(*passed);
                *passed = fds[0];
            } else {
                close(fds[i]);
            }
        }
    }
    return n;
}

/* Reads what is there, up to one chunk, into b. Returns the bytes read,
 * 0 at EOF, or -errno (-EAGAIN: timed out). */
static ssize_t cbuf_read_fd(struct cbuf *b, int fd, size_t max, int *passed);

static ssize_t cbuf_read(struct cbuf *b, int fd, size_t max)
{
    return cbuf_read_fd(b, fd, max, NULL);
}

static ssize_t cbuf_read_fd(struct cbuf *b, int fd, size_t max, int *passed)
{
    ssize_t n;
    size_t room;
    int ret = cbuf_reserve(b, CONTROL_READ_CHUNK, max);

    if (ret < 0)
        return ret;
    room = b->cap - 1 - b->len;
    if (room > max - b->len)
        room = max - b->len;
    do {
        n = read_some(fd, b->p + b->len, room, passed);
    } while (n < 0 && errno == EINTR);
    if (n < 0)
        return errno == EWOULDBLOCK ? -EAGAIN : -errno;
    b->len += (size_t)n;
    b->p[b->len] = '\0';
    return n;
}

/* Drops the first n bytes, wiping what moved. */
static void cbuf_consume(struct cbuf *b, size_t n)
{
    memmove(b->p, b->p + n, b->len - n);
    sodium_memzero(b->p + b->len - n, n);
    b->len -= n;
}

static int send_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EWOULDBLOCK ? -ETIMEDOUT : -errno;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int set_timeouts(int fd, int seconds)
{
    struct timeval tv = { .tv_sec = seconds };

    if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0 ||
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0)
        return -errno;
    return 0;
}

static int fill_sockaddr(struct sockaddr_un *sun, const char *path)
{
    size_t len;

    if (!path)
        return -EINVAL;
    len = strlen(path);
    if (len == 0)
        return -EINVAL;
    if (len >= sizeof(sun->sun_path))
        return -ENAMETOOLONG;
    memset(sun, 0, sizeof(*sun));
    sun->sun_family = AF_UNIX;
    memcpy(sun->sun_path, path, len + 1);
    return 0;
}

/* --- listening ------------------------------------------------------------------ */

/* Whether something answers on the socket at sun: 0 nobody (stale),
 * -EADDRINUSE a live listener, other -errno when unsure. */
static int probe_stale(const struct sockaddr_un *sun)
{
    struct stat st;
    int fd, ret = 0;

    if (lstat(sun->sun_path, &st) < 0)
        return errno == ENOENT ? 0 : -errno;
    /* Never unlink what is not a socket: a typo'd run dir could name a file. */
    if (!S_ISSOCK(st.st_mode))
        return -EEXIST;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (const struct sockaddr *)sun, sizeof(*sun)) == 0)
        ret = -EADDRINUSE;
    else if (errno != ECONNREFUSED && errno != ENOENT)
        ret = -errno;
    close(fd);
    return ret;
}

static int bind_mode(int fd, const struct sockaddr_un *sun, mode_t mask)
{
    mode_t old = umask(mask);
    int ret = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
    int err = errno;

    umask(old);
    return ret < 0 ? -err : 0;
}

static int listen_mode(const char *path, mode_t mode, mode_t mask)
{
    struct sockaddr_un sun;
    int fd, ret = fill_sockaddr(&sun, path);

    if (ret < 0)
        return ret;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ret = bind_mode(fd, &sun, mask);
    if (ret == -EADDRINUSE) {
        ret = probe_stale(&sun);
        if (ret == 0 && (unlink(path) == 0 || errno == ENOENT))
            ret = bind_mode(fd, &sun, mask);
        else if (ret == 0)
            ret = -errno;
    }
    if (ret == 0 && chmod(path, mode) < 0)
        ret = -errno;
    if (ret == 0 && listen(fd, CONTROL_BACKLOG) < 0)
        ret = -errno;
    if (ret < 0) {
        close(fd);
        return ret;
    }
    return fd;
}

int control_listen(const char *path)
{
    return listen_mode(path, CONTROL_SOCKET_MODE, CONTROL_SOCKET_UMASK);
}

int control_listen_env(const char *path)
{
    return listen_mode(path, CONTROL_ENV_SOCKET_MODE, CONTROL_ENV_SOCKET_UMASK);
}

/* --- serving --------------------------------------------------------------------- */

#define CONTROL_CLUSTER_LEN  (sizeof(CONTROL_SET_CLUSTER) - 1)
#define CONTROL_LENGTH_LEN   (sizeof(CONTROL_LENGTH_KEY) - 1)
#define CONTROL_STATEMENT_LEN (sizeof(CONTROL_SET_STATEMENT) - 1)
/* Digits of the length line: UAPI_MAX_REQUEST has 7. */
#define CONTROL_LENGTH_DIGITS 8u

/* set=ddpnet-cluster, "length=N" and N bytes: the header's length in
 * *head and N in *body. */
static int frame_cluster(const char *buf, size_t len, size_t op_len, size_t *head, size_t *body)
{
    size_t at = op_len, n = 0, digits = 0;

    for (size_t i = 0; i < CONTROL_LENGTH_LEN; i++, at++) {
        if (at >= len)
            return -EAGAIN;
        if (buf[at] != CONTROL_LENGTH_KEY[i])
            return -EINVAL;
    }
    for (;; at++, digits++) {
        if (at >= len)
            return digits > CONTROL_LENGTH_DIGITS ? -EINVAL : -EAGAIN;
        if (buf[at] == '\n')
            break;
        if (buf[at] < '0' || buf[at] > '9' || digits == CONTROL_LENGTH_DIGITS)
            return -EINVAL;
        n = n * 10 + (size_t)(buf[at] - '0');
    }
    if (!digits)
        return -EINVAL;
    *head = at + 1;
    if (n > UAPI_MAX_REQUEST - *head)
        return -EMSGSIZE;
    *body = n;
    return len - *head < n ? -EAGAIN : 0;
}

void control_cluster_body(const char *req, size_t consumed, const char **body, size_t *len)
{
    /* Past the op line, whichever (framed already: it has its newline). */
    size_t at = (size_t)((const char *)memchr(req, '\n', consumed) - req) + 1 + CONTROL_LENGTH_LEN;

    while (req[at] != '\n')
        at++;
    *body = req + at + 1;
    *len = consumed - (at + 1);
}

/* A request without a protocol line. */
static int frame_request(const char *buf, size_t len, enum control_op *op, size_t *consumed)
{
    enum uapi_op uop;
    size_t n = len < CONTROL_DDPNET_LEN ? len : CONTROL_DDPNET_LEN, head, body;
    int ret;

    if (len == 0)
        return -EAGAIN;
    /* "set=" starts both set lines too. */
    if (memcmp(buf, CONTROL_SET_CLUSTER, len < CONTROL_CLUSTER_LEN ? len : CONTROL_CLUSTER_LEN) == 0) {
        if (len < CONTROL_CLUSTER_LEN)
            return -EAGAIN;
        if ((ret = frame_cluster(buf, len, CONTROL_CLUSTER_LEN, &head, &body)))
            return ret;
        *op = CONTROL_RELOAD_OP;
        *consumed = head + body;
        return 0;
    }
    if (memcmp(buf, CONTROL_SET_STATEMENT,
               len < CONTROL_STATEMENT_LEN ? len : CONTROL_STATEMENT_LEN) == 0) {
        if (len < CONTROL_STATEMENT_LEN)
            return -EAGAIN;
        if ((ret = frame_cluster(buf, len, CONTROL_STATEMENT_LEN, &head, &body)))
            return ret;
        *op = CONTROL_STATEMENT_OP;
        *consumed = head + body;
        return 0;
    }
    /* "get=" starts every get line, "get=ddpnet" two of them: wait until
     * the bytes tell them apart. */
    if (memcmp(buf, CONTROL_GET_ENV, len < CONTROL_ENV_LEN ? len : CONTROL_ENV_LEN) == 0) {
        if (len <= CONTROL_ENV_LEN)
            return -EAGAIN;
        if (buf[CONTROL_ENV_LEN] != '\n')
            return -EINVAL;
        *op = CONTROL_GET_ENV_OP;
        *consumed = CONTROL_ENV_LEN + 1;
        return 0;
    }
    if (memcmp(buf, CONTROL_GET_CERTS, len < CONTROL_CERTS_LEN ? len : CONTROL_CERTS_LEN) == 0) {
        if (len <= CONTROL_CERTS_LEN)
            return -EAGAIN;
        if (buf[CONTROL_CERTS_LEN] != '\n')
            return -EINVAL;
        *op = CONTROL_GET_CERTS_OP;
        *consumed = CONTROL_CERTS_LEN + 1;
        return 0;
    }
    if (memcmp(buf, CONTROL_GET_DDPNET, n) == 0) {
        if (len <= CONTROL_DDPNET_LEN)
            return -EAGAIN;
        if (buf[CONTROL_DDPNET_LEN] != '\n')
            return -EINVAL;
        *op = CONTROL_GET_DDPNET_OP;
        *consumed = CONTROL_DDPNET_LEN + 1;
        return 0;
    }
    ret = uapi_parse_request(buf, len, &uop, consumed);
    if (ret == 0)
        *op = uop == UAPI_GET ? CONTROL_GET_WG : CONTROL_SET_WG;
    return ret;
}

/* "protocol=N\n" at the start of buf: 0 with N and the line's length;
 * -ENOENT when buf does not start with that key (a request without the
 * line), -EAGAIN while it may still be one, -EINVAL when it is a bad one. */
static int frame_protocol(const char *buf, size_t len, unsigned *proto, size_t *head)
{
    size_t digits = 0;
    unsigned n = 0;

    if (memcmp(buf, CONTROL_PROTOCOL_KEY, len < CONTROL_PROTOCOL_LEN ? len : CONTROL_PROTOCOL_LEN))
        return -ENOENT;
    for (size_t at = CONTROL_PROTOCOL_LEN;; at++, digits++) {
        if (at >= len)
            return -EAGAIN;
        if (buf[at] == '\n') {
            if (!digits)
                return -EINVAL;
            *proto = n;
            *head = at + 1;
            return 0;
        }
        if (buf[at] < '0' || buf[at] > '9' || digits == CONTROL_PROTOCOL_DIGITS)
            return -EINVAL;
        n = n * 10 + (unsigned)(buf[at] - '0');
    }
}

size_t control_protocol_head(const char *buf, size_t len)
{
    unsigned proto;
    size_t head;

    return len && frame_protocol(buf, len, &proto, &head) == 0 ? head : 0;
}

int control_frame(const char *buf, size_t len, enum control_op *op, size_t *consumed)
{
    unsigned proto;
    size_t head;
    int ret;

    if ((!buf && len) || !op || !consumed)
        return -EINVAL;
    if (len == 0)
        return -EAGAIN;
    ret = frame_protocol(buf, len, &proto, &head);
    if (ret == -ENOENT)
        return frame_request(buf, len, op, consumed);   /* wg, or a CLI before numbers */
    if (ret < 0)
        return ret;
    /* Another protocol's request may be framed otherwise: refused, and the
     * rest is not read. */
    if (proto != DDPNET_CONTROL_PROTOCOL) {
        *op = CONTROL_PROTOCOL_OP;
        *consumed = head;
        return 0;
    }
    ret = frame_request(buf + head, len - head, op, consumed);
    if (ret == 0)
        *consumed += head;
    return ret;
}

static bool peer_is_root(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
           len == sizeof(cred) && cred.uid == 0;
}

/* --- the server: every client served without blocking the loop -------------- */

/* Clients at once; more wait in the listen backlog. */
#define CONTROL_CLIENTS_MAX     8u
/* A client silent this long is hung up on. */
#define CONTROL_IDLE_NS         (5 * WG_NSEC_PER_SEC)
/* Requests answered per client per turn, so one cannot hold the loop. */
#define CONTROL_TURN_REQUESTS   16u

struct control_client {
    int fd;                       /* -1: a free slot */
    struct cbuf req;              /* bytes read, not yet answered */
    char *out;                    /* the answer being written (may hold a key) */
    size_t out_len, out_off;
    bool eof, closing;            /* the client is done / we hang up once out is sent */
    bool want_out;                /* registered for EPOLLOUT */
    bool env_only;                /* a client of the env socket */
    uint64_t active_ns;           /* the last time it moved */
    /* A descriptor it passed (SCM_RIGHTS), plus one: 0 none. Taken by the
     * next reload, closed with the client; one at a time. */
    int passed_fd1;
};

struct control_server {
    int epoll_fd, listen_fd;
    bool env_only;                /* the env socket's server (control.h) */
    struct control_client clients[CONTROL_CLIENTS_MAX];
};

static void client_drop(struct control_server *s, struct control_client *c)
{
    epoll_ctl(s->epoll_fd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    if (c->passed_fd1)
        close(c->passed_fd1 - 1);
    cbuf_wipe(&c->req);
    if (c->out) {
        sodium_memzero(c->out, c->out_len);
        free(c->out);
    }
    memset(c, 0, sizeof(*c));
    c->fd = -1;
}

static void client_watch(struct control_server *s, struct control_client *c, bool out)
{
    struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0u), .data.ptr = c };

    if (out != c->want_out && epoll_ctl(s->epoll_fd, EPOLL_CTL_MOD, c->fd, &ev) == 0)
        c->want_out = out;
}

/* Queues "errno=N" as the answer. */
static int client_queue_errno(struct control_client *c, int err)
{
    struct uapi_buf b;

    if (!(c->out = malloc(CONTROL_ERRNO_LINE_MAX)))
        return -ENOMEM;
    uapi_buf_init(&b, c->out, CONTROL_ERRNO_LINE_MAX);
    uapi_put_errno(&b, err);
    c->out_len = b.len;
    c->out_off = 0;
    return 0;
}

/* Queues a builder's answer (taking out, which it malloc'd) or, when the
 * builder failed, its errno line. */
static int client_queue(struct control_client *c, int ret, char *out, size_t len)
{
    if (ret == 0) {
        c->out = out;
        c->out_len = len;
        c->out_off = 0;
        return 0;
    }
    if (out) {
        sodium_memzero(out, len);
        free(out);
    }
    return client_queue_errno(c, ret);
}

/* The answer to a request of this protocol, at req (len bytes, past any
 * protocol line). */
static int client_answer_op(struct control_client *c, struct device *dev, enum control_op op,
                            const char *req, size_t len, uint64_t now_ns)
{
    char *out = NULL;
    size_t out_len = 0;
    int ret;

    switch (op) {
    case CONTROL_GET_ENV_OP:
        ret = control_get_env(dev, &out, &out_len);
        break;
    case CONTROL_GET_WG:
        ret = control_get_wg(dev, &out, &out_len);
        break;
    case CONTROL_GET_CERTS_OP:
        ret = control_get_certs(dev, &out, &out_len);
        break;
    case CONTROL_GET_DDPNET_OP:
        ret = control_get_ddpnet(dev, now_ns, &out, &out_len);
        break;
    case CONTROL_SET_WG:
        ret = control_set(dev, req + UAPI_OP_LINE_LEN, len - UAPI_OP_LINE_LEN, now_ns);
        if (ret < 0)
            log_info_rl("control: set refused: %s", strerror(-ret));   /* a client may repeat it */
        return client_queue_errno(c, ret);
    case CONTROL_RELOAD_OP: {
        const char *body;
        size_t body_len;
        control_cluster_body(req, len, &body, &body_len);
        ret = control_reload(dev, body, body_len, c->passed_fd1 - 1, now_ns, &out, &out_len);
        c->passed_fd1 = 0;   /* taken */
        break;
    }
    case CONTROL_STATEMENT_OP: {
        const char *body;
        size_t body_len;
        control_cluster_body(req, len, &body, &body_len);
        ret = control_statement(dev, body, body_len, now_ns, &out, &out_len);
        break;
    }
    default:
        ret = -EINVAL;
    }
    return client_queue(c, ret, out, out_len);
}

/* Puts this daemon's protocol line before the queued answer (to a request
 * that named its protocol). */
static int client_prefix_protocol(struct control_client *c)
{
    char line[CONTROL_PROTOCOL_LINE_MAX];
    int n = snprintf(line, sizeof(line), "%s%u\n", CONTROL_PROTOCOL_KEY, DDPNET_CONTROL_PROTOCOL);
    char *out = malloc((size_t)n + c->out_len);

    if (!out)
        return -ENOMEM;
    memcpy(out, line, (size_t)n);
    memcpy(out + n, c->out, c->out_len);
    sodium_memzero(c->out, c->out_len);
    free(c->out);
    c->out = out;
    c->out_len += (size_t)n;
    return 0;
}

/* Builds the answer to one framed request; one that named its protocol
 * gets this daemon's first. */
static int client_answer(struct control_client *c, struct device *dev, enum control_op op,
                         size_t len, uint64_t now_ns)
{
    size_t head = control_protocol_head(c->req.p, len);
    int ret;

    if (op == CONTROL_PROTOCOL_OP) {
        /* A CLI of another protocol: it says which, and what to restart. */
        log_info_rl("control: a client of another control protocol refused (this daemon "
                    "speaks %u)", DDPNET_CONTROL_PROTOCOL);
        c->closing = true;
        ret = client_queue_errno(c, -EPROTONOSUPPORT);
    } else if (c->env_only && op != CONTROL_GET_ENV_OP) {
        c->closing = true;
        ret = client_queue_errno(c, -EPERM);
    } else {
        ret = client_answer_op(c, dev, op, c->req.p + head, len - head, now_ns);
    }
    if (ret == 0 && (head || op == CONTROL_PROTOCOL_OP))
        ret = client_prefix_protocol(c);
    return ret;
}

/* Writes what the socket takes of the pending answer: 0 when all of it
 * went (the buffer is wiped), -EAGAIN when some is left, or -errno. */
static int client_flush(struct control_client *c)
{
    while (c->out && c->out_off < c->out_len) {
        ssize_t n = send(c->fd, c->out + c->out_off, c->out_len - c->out_off,
                         MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return errno == EAGAIN || errno == EWOULDBLOCK ? -EAGAIN : -errno;
        c->out_off += (size_t)n;
    }
    if (c->out) {
        sodium_memzero(c->out, c->out_len);
        free(c->out);
        c->out = NULL;
    }
    return 0;
}

/* Reads, answers and writes as far as the socket allows now: false when
 * the client is done (hang up). */
static bool client_step(struct control_client *c, struct device *dev, uint64_t now_ns)
{
    unsigned answered = 0;

    c->active_ns = now_ns;
    for (;;) {
        int ret = client_flush(c);
        if (ret == -EAGAIN)
            return true;
        if (ret < 0 || c->closing)
            return false;
        if (answered == CONTROL_TURN_REQUESTS)
            return true;   /* the rest next turn (epoll is level-triggered) */

        enum control_op op;
        size_t consumed = 0;
        ret = control_frame(c->req.p, c->req.len, &op, &consumed);
        if (ret == -EAGAIN) {
            if (c->eof)
                return false;
            /* The env socket takes no descriptor (cbuf_read drops any). */
            int passed = c->passed_fd1 - 1;
            ssize_t n = c->env_only ? cbuf_read(&c->req, c->fd, CONTROL_ENV_REQUEST_MAX)
                                    : cbuf_read_fd(&c->req, c->fd, UAPI_MAX_REQUEST, &passed);

            c->passed_fd1 = passed + 1;
            if (n == -EAGAIN)
                return true;
            if (n == -EMSGSIZE) {
                c->closing = client_queue_errno(c, -EMSGSIZE) == 0;
                continue;
            }
            if (n < 0)
                return false;
            c->eof = n == 0;
            continue;
        }
        if (ret < 0) {
            /* Not a request: say so once, then hang up, as the stream
             * cannot be resynchronised. */
            c->closing = client_queue_errno(c, ret) == 0;
            continue;
        }
        if (client_answer(c, dev, op, consumed, now_ns) < 0)
            return false;
        cbuf_consume(&c->req, consumed);
        answered++;
    }
}

struct control_server *control_server_new_env(int listen_fd)
{
    struct control_server *s = control_server_new(listen_fd);

    if (s)
        s->env_only = true;
    return s;
}

struct control_server *control_server_new(int listen_fd)
{
    struct control_server *s = calloc(1, sizeof(*s));
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

    if (!s)
        return NULL;
    s->listen_fd = listen_fd;
    for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++)
        s->clients[i].fd = -1;
    s->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (s->epoll_fd < 0 ||
        (listen_fd >= 0 && epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, listen_fd, &ev) < 0)) {
        int err = errno;
        if (s->epoll_fd >= 0)
            close(s->epoll_fd);
        free(s);
        errno = err;
        return NULL;
    }
    return s;
}

void control_server_free(struct control_server *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++)
        if (s->clients[i].fd >= 0)
            client_drop(s, &s->clients[i]);
    close(s->epoll_fd);
    free(s);
}

int control_server_fd(const struct control_server *s)
{
    return s->epoll_fd;
}

size_t control_server_clients(const struct control_server *s)
{
    size_t n = 0;

    for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++)
        n += s->clients[i].fd >= 0;
    return n;
}

int control_server_adopt(struct control_server *s, int fd, uint64_t now_ns)
{
    struct control_client *c = NULL;

    if (fd < 0)
        return -EBADF;
    for (size_t i = 0; i < CONTROL_CLIENTS_MAX && !c; i++)
        if (s->clients[i].fd < 0)
            c = &s->clients[i];
    int flags = fcntl(fd, F_GETFL);
    if (!c || !(s->env_only || peer_is_root(fd)) || flags < 0 ||
        fcntl(fd, F_SETFL, flags | O_NONBLOCK) < 0) {
        close(fd);
        return c ? -EPERM : -EBUSY;
    }
    struct epoll_event ev = { .events = EPOLLIN, .data.ptr = c };
    if (epoll_ctl(s->epoll_fd, EPOLL_CTL_ADD, fd, &ev) < 0) {
        int err = -errno;
        close(fd);
        return err;
    }
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->env_only = s->env_only;
    c->active_ns = now_ns;
    return 0;
}

void control_server_run(struct control_server *s, struct device *dev, uint64_t now_ns)
{
    struct epoll_event evs[CONTROL_CLIENTS_MAX + 1];
    int n = epoll_wait(s->epoll_fd, evs, (int)(sizeof(evs) / sizeof(evs[0])), 0);

    for (int i = 0; i < n; i++) {
        struct control_client *c = evs[i].data.ptr;
        if (!c) {
            int fd;
            while ((fd = accept4(s->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
                control_server_adopt(s, fd, now_ns);
            continue;
        }
        if (c->fd < 0)
            continue;
        if (!dev || !client_step(c, dev, now_ns))
            client_drop(s, c);
        else
            client_watch(s, c, c->out != NULL);
    }
}

uint64_t control_server_next(const struct control_server *s)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++)
        if (s->clients[i].fd >= 0 && s->clients[i].active_ns + CONTROL_IDLE_NS < next)
            next = s->clients[i].active_ns + CONTROL_IDLE_NS;
    return next;
}

void control_server_expire(struct control_server *s, uint64_t now_ns)
{
    for (size_t i = 0; i < CONTROL_CLIENTS_MAX; i++) {
        struct control_client *c = &s->clients[i];
        if (c->fd >= 0 && now_ns >= c->active_ns + CONTROL_IDLE_NS)
            client_drop(s, c);
    }
}

/* --- the client ------------------------------------------------------------------ */

static bool response_complete(const struct cbuf *b)
{
    return b->len >= 2 && b->p[b->len - 2] == '\n' && b->p[b->len - 1] == '\n';
}

static int client_connect(const char *path)
{
    struct sockaddr_un sun;
    int fd, ret = fill_sockaddr(&sun, path);

    if (ret < 0)
        return ret;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ret = set_timeouts(fd, CONTROL_CLIENT_TIMEOUT_S);
    if (ret == 0 && connect(fd, (const struct sockaddr *)&sun, sizeof(sun)) < 0)
        ret = -errno;
    if (ret < 0) {
        close(fd);
        return ret;
    }
    return fd;
}

/* Reads until the response's closing empty line. EOF before it: nothing at
 * all (the daemon hung up, e.g. on a caller that is not root) is
 * -ECONNRESET, a cut response -EPROTO. */
static int client_read(int fd, struct cbuf *b)
{
    while (!response_complete(b)) {
        ssize_t n = cbuf_read(b, fd, CONTROL_RESPONSE_MAX);

        if (n == -EAGAIN)
            return -ETIMEDOUT;
        if (n < 0)
            return (int)n;
        if (n == 0)
            return b->len == 0 ? -ECONNRESET : -EPROTO;
    }
    return 0;
}

/* The first byte of request with fd attached. */
static int send_fd(int sock, const char *request, int fd)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(sizeof(int))];
    } ctl;
    char first = request[0];
    struct iovec iov = { &first, 1 };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = sizeof(ctl.buf) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
    ssize_t n;

    memset(ctl.buf, 0, sizeof(ctl.buf));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int));
    memcpy(CMSG_DATA(c), &fd, sizeof(int));
    do {
        n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    return n == 1 ? 0 : n < 0 ? -errno : -EIO;
}

int control_request(const char *path, const char *request, char **response)
{
    return control_request_fd(path, request, -1, response);
}

int control_request_fd(const char *path, const char *request, int pass_fd, char **response)
{
    struct cbuf b = { 0 };
    int fd, ret = 0;

    if (!request || !response || (pass_fd >= 0 && !*request))
        return -EINVAL;
    *response = NULL;
    fd = client_connect(path);
    if (fd < 0)
        return fd;
    if (pass_fd >= 0) {
        ret = send_fd(fd, request, pass_fd);
        request++;
    }
    if (ret == 0)
        ret = send_all(fd, request, strlen(request));
    if (ret == -EPIPE)
        ret = -ECONNRESET;   /* hung up before reading: as if after */
    if (ret == 0)
        ret = client_read(fd, &b);
    close(fd);
    if (ret < 0) {
        cbuf_wipe(&b);
        return ret;
    }
    *response = b.p;
    return 0;
}

/* The answer's protocol line, taken off: its number, or 0 when there is
 * none (a daemon from before the numbers). */
static unsigned take_protocol(char *response)
{
    size_t len = strlen(response), head;
    unsigned proto;

    if (frame_protocol(response, len, &proto, &head) != 0)
        return 0;
    memmove(response, response + head, len - head + 1);
    return proto;
}

int control_request_ddpnet(const char *path, const char *request, int pass_fd, char **response,
                           unsigned *daemon_protocol)
{
    char *req = NULL;
    int ret;

    if (!request || !response || !daemon_protocol)
        return -EINVAL;
    *response = NULL;
    if (asprintf(&req, "%s%u\n%s", CONTROL_PROTOCOL_KEY, DDPNET_CONTROL_PROTOCOL, request) < 0)
        return -ENOMEM;
    ret = control_request_fd(path, req, pass_fd, response);
    sodium_memzero(req, strlen(req));   /* a reload's file is no secret, but cheap to wipe */
    free(req);
    if (ret < 0)
        return ret;
    *daemon_protocol = take_protocol(*response);
    if (*daemon_protocol != DDPNET_CONTROL_PROTOCOL) {
        free(*response);
        *response = NULL;
        return -EPROTONOSUPPORT;
    }
    return 0;
}

int control_protocol_message(char *buf, size_t size, unsigned daemon_protocol,
                             const char *ifname)
{
    if (daemon_protocol == 0)
        return snprintf(buf, size, "the daemon of %s is from before numbered control protocols "
                        "(ddpnet 0.3.0), this ddpnet speaks control protocol %u: restart the "
                        "daemon (systemctl restart ddpnet@%s)", ifname, DDPNET_CONTROL_PROTOCOL,
                        ifname);
    if (daemon_protocol < DDPNET_CONTROL_PROTOCOL)
        return snprintf(buf, size, "the daemon of %s speaks control protocol %u, this ddpnet %u: "
                        "restart the daemon (systemctl restart ddpnet@%s)", ifname,
                        daemon_protocol, DDPNET_CONTROL_PROTOCOL, ifname);
    return snprintf(buf, size, "the daemon of %s speaks control protocol %u, this ddpnet %u: "
                    "this ddpnet is older than the daemon; run the ddpnet the daemon was "
                    "started from", ifname, daemon_protocol, DDPNET_CONTROL_PROTOCOL);
}
