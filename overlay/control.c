/* The control socket's transport: creating the listening socket, serving
 * one client connection (credentials, framing, one answer per request) and
 * the CLI's client call (control.h). What a request does lives in
 * control_get.c and control_set.c. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <sodium.h>

#include "overlay/control.h"
#include "overlay/control_int.h"
#include "overlay/log.h"
#include "overlay/uapi.h"

#define CONTROL_BACKLOG          16
/* Only the owner (root: the daemon binds before dropping it) may connect. */
#define CONTROL_SOCKET_MODE      0600
#define CONTROL_SOCKET_UMASK     0177
/* How long the daemon waits on a silent client, per read or write. */
#define CONTROL_SERVE_TIMEOUT_S  1
/* How long the CLI waits on the daemon. */
#define CONTROL_CLIENT_TIMEOUT_S 5
#define CONTROL_READ_CHUNK       4096u
#define CONTROL_DDPNET_LEN       (sizeof(CONTROL_GET_DDPNET) - 1)
/* "errno=" DEC "\n\n" */
#define CONTROL_ERRNO_LINE_MAX   32u

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

/* Reads what is there, up to one chunk, into b. Returns the bytes read,
 * 0 at EOF, or -errno (-EAGAIN: timed out). */
static ssize_t cbuf_read(struct cbuf *b, int fd, size_t max)
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
        n = read(fd, b->p + b->len, room);
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

static int bind_private(int fd, const struct sockaddr_un *sun)
{
    mode_t old = umask(CONTROL_SOCKET_UMASK);
    int ret = bind(fd, (const struct sockaddr *)sun, sizeof(*sun));
    int err = errno;

    umask(old);
    return ret < 0 ? -err : 0;
}

int control_listen(const char *path)
{
    struct sockaddr_un sun;
    int fd, ret = fill_sockaddr(&sun, path);

    if (ret < 0)
        return ret;
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ret = bind_private(fd, &sun);
    if (ret == -EADDRINUSE) {
        ret = probe_stale(&sun);
        if (ret == 0 && (unlink(path) == 0 || errno == ENOENT))
            ret = bind_private(fd, &sun);
        else if (ret == 0)
            ret = -errno;
    }
    if (ret == 0 && chmod(path, CONTROL_SOCKET_MODE) < 0)
        ret = -errno;
    if (ret == 0 && listen(fd, CONTROL_BACKLOG) < 0)
        ret = -errno;
    if (ret < 0) {
        close(fd);
        return ret;
    }
    return fd;
}

/* --- serving --------------------------------------------------------------------- */

int control_frame(const char *buf, size_t len, enum control_op *op, size_t *consumed)
{
    enum uapi_op uop;
    size_t n = len < CONTROL_DDPNET_LEN ? len : CONTROL_DDPNET_LEN;
    int ret;

    if ((!buf && len) || !op || !consumed)
        return -EINVAL;
    if (len == 0)
        return -EAGAIN;
    /* "get=" starts both get lines: wait until the bytes tell them apart. */
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

static bool peer_is_root(int fd)
{
    struct ucred cred;
    socklen_t len = sizeof(cred);

    return getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0 &&
           len == sizeof(cred) && cred.uid == 0;
}

static int send_errno(int fd, int err)
{
    char line[CONTROL_ERRNO_LINE_MAX];
    struct uapi_buf b;

    uapi_buf_init(&b, line, sizeof(line));
    uapi_put_errno(&b, err);
    return send_all(fd, b.p, b.len);
}

/* A whole response from a builder, wiped after sending: get=1 carries the
 * private key. A builder's failure is answered as an errno. */
static int send_built(int fd, int ret, char *out, size_t len)
{
    if (ret == 0)
        ret = send_all(fd, out, len);
    else
        ret = send_errno(fd, ret);
    if (out) {
        sodium_memzero(out, len);
        free(out);
    }
    return ret;
}

/* Answers one framed request; a negative return ends the connection. */
static int answer(struct device *dev, int fd, enum control_op op, const char *req,
                  size_t len, uint64_t now_ns)
{
    char *out = NULL;
    size_t out_len = 0;
    int ret;

    switch (op) {
    case CONTROL_GET_WG:
        ret = control_get_wg(dev, &out, &out_len);
        return send_built(fd, ret, out, out_len);
    case CONTROL_GET_DDPNET_OP:
        ret = control_get_ddpnet(dev, now_ns, &out, &out_len);
        return send_built(fd, ret, out, out_len);
    case CONTROL_SET_WG:
        ret = control_set(dev, req + UAPI_OP_LINE_LEN, len - UAPI_OP_LINE_LEN, now_ns);
        if (ret < 0)
            log_info("control: set refused: %s", strerror(-ret));
        return send_errno(fd, ret);
    }
    return -EINVAL;
}

/* The accepted socket may have come non-blocking from accept4; the read
 * timeout only works on a blocking one. */
static int make_blocking(int fd)
{
    int flags = fcntl(fd, F_GETFL);

    if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) < 0)
        return -errno;
    return set_timeouts(fd, CONTROL_SERVE_TIMEOUT_S);
}

static void serve_loop(struct device *dev, int fd, struct cbuf *req, uint64_t now_ns)
{
    for (;;) {
        enum control_op op;
        size_t consumed = 0;
        int ret = control_frame(req->p, req->len, &op, &consumed);

        if (ret == -EAGAIN) {
            ssize_t n = cbuf_read(req, fd, UAPI_MAX_REQUEST);
            if (n == -EMSGSIZE)
                send_errno(fd, -EMSGSIZE);
            if (n <= 0)
                return;
            continue;
        }
        if (ret < 0) {
            /* Not a request: say so once, then hang up, as the stream
             * cannot be resynchronised. */
            send_errno(fd, ret);
            return;
        }
        if (answer(dev, fd, op, req->p, consumed, now_ns) < 0)
            return;
        cbuf_consume(req, consumed);
    }
}

void control_serve(struct device *dev, int client_fd, uint64_t now_ns)
{
    struct cbuf req = { 0 };

    if (client_fd < 0)
        return;
    if (!dev || !peer_is_root(client_fd) || make_blocking(client_fd) < 0) {
        close(client_fd);
        return;
    }
    serve_loop(dev, client_fd, &req, now_ns);
    cbuf_wipe(&req);
    close(client_fd);
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

int control_request(const char *path, const char *request, char **response)
{
    struct cbuf b = { 0 };
    int fd, ret;

    if (!request || !response)
        return -EINVAL;
    *response = NULL;
    fd = client_connect(path);
    if (fd < 0)
        return fd;
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
