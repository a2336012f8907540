/* SPDX-License-Identifier: MIT */
/* The metrics endpoint (metrics.h): our own listening socket, handed to
 * libmicrohttpd, which parses HTTP and keeps the connections; it runs in
 * its "external epoll" mode, with no thread of its own, so every scrape is
 * answered on the loop's thread from the device as it stands. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <microhttpd.h>

#include "config/addr.h"
#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/control/metrics.h"
#include "overlay/engine/model/device.h"

#define METRICS_BACKLOG     16
#define METRICS_LOG_MAX     256u
#define METRICS_NOT_FOUND   "Not found: the metrics are at " METRICS_PATH "\n"
#define METRICS_NOT_ALLOWED "Only GET and HEAD are answered\n"

struct metrics_server {
    struct MHD_Daemon *mhd;
    struct device *dev;
    int listen_fd;
    /* The connections libmicrohttpd holds (at most METRICS_CLIENTS_MAX),
     * for reap_gone. */
    struct MHD_Connection *conns[METRICS_CLIENTS_MAX];
    size_t n_conns;
};

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static socklen_t sockaddr_of(const struct cluster_addr *a, uint16_t port,
                             struct sockaddr_storage *ss)
{
    memset(ss, 0, sizeof(*ss));
    if (a->family == AF_INET) {
        struct sockaddr_in *sin = (struct sockaddr_in *)ss;
        sin->sin_family = AF_INET;
        sin->sin_port = htons(port);
        memcpy(&sin->sin_addr, a->bytes, sizeof(sin->sin_addr));
        return sizeof(*sin);
    }
    struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)ss;
    sin6->sin6_family = AF_INET6;
    sin6->sin6_port = htons(port);
    memcpy(&sin6->sin6_addr, a->bytes, sizeof(sin6->sin6_addr));
    return sizeof(*sin6);
}

/* The address to bind: m's, or self's for overlay:PORT; an address in
 * the overlay network that is not self's is another node's. */
static int metrics_address(const struct cluster_metrics *m, const struct cluster_addr *self,
                           struct cluster_addr *out, char *err, size_t errlen)
{
    char text[INET6_ADDRSTRLEN], own[INET6_ADDRSTRLEN];

    *out = m->at == CLUSTER_METRICS_OVERLAY ? *self : m->addr;
    if (m->at != CLUSTER_METRICS_ADDRESS || m->public_ok || cluster_addr_is_loopback(out) ||
        cluster_addr_equal(out, self))
        return 0;
    if (cluster_addr_format(out, text, sizeof(text)) < 0 ||
        cluster_addr_format(self, own, sizeof(own)) < 0)
        text[0] = own[0] = '\0';
    set_err(err, errlen, "metrics address %s is not this node's overlay address (%s): use "
            "overlay:%u to serve each node's own", text, own, (unsigned)m->port);
    return -EADDRNOTAVAIL;
}

int metrics_check(const struct cluster_metrics *m, const struct cluster_addr *self, char *err,
                  size_t errlen)
{
    struct cluster_addr at;

    return metrics_address(m, self, &at, err, errlen);
}

int metrics_listen(const struct cluster_metrics *m, const struct cluster_addr *self, int *fd,
                   char *err, size_t errlen)
{
    struct cluster_addr at;
    struct sockaddr_storage ss;
    socklen_t sl;
    int one = 1, s, ret;
    char text[INET6_ADDRSTRLEN];

    if ((ret = metrics_address(m, self, &at, err, errlen)))
        return ret;
    if (cluster_addr_format(&at, text, sizeof(text)) < 0)
        text[0] = '\0';
    sl = sockaddr_of(&at, m->port, &ss);
    s = socket(at.family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) {
        ret = -errno;
        set_err(err, errlen, "metrics: socket: %s", strerror(errno));
        return ret;
    }
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (at.family == AF_INET6)
        setsockopt(s, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
    if (bind(s, (struct sockaddr *)&ss, sl) != 0 || listen(s, METRICS_BACKLOG) != 0) {
        ret = -errno;
        set_err(err, errlen, "metrics: cannot listen on %s%s%s:%u: %s",
                at.family == AF_INET6 ? "[" : "", text, at.family == AF_INET6 ? "]" : "",
                (unsigned)m->port, strerror(errno));
        close(s);
        return ret;
    }
    *fd = s;
    return 0;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, void *body, size_t len,
                             enum MHD_ResponseMemoryMode mode, const char *type)
{
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, mode);
    enum MHD_Result ret;

    if (!r) {
        if (mode == MHD_RESPMEM_MUST_FREE)
            free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
        MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET, HEAD");
    ret = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return ret;
}

/* Answered on the first call, from the headers alone: a body sent with
 * the request is never read (libmicrohttpd closes such a connection). */
static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **con_cls)
{
    struct metrics_server *s = cls;
    char *text;
    size_t len;

    (void)version, (void)upload_data, (void)upload_data_size, (void)con_cls;
    if (strcmp(method, MHD_HTTP_METHOD_GET) && strcmp(method, MHD_HTTP_METHOD_HEAD))
        return reply(c, MHD_HTTP_METHOD_NOT_ALLOWED, (void *)(uintptr_t)METRICS_NOT_ALLOWED,
                     strlen(METRICS_NOT_ALLOWED), MHD_RESPMEM_PERSISTENT, "text/plain");
    if (strcmp(url, METRICS_PATH))
        return reply(c, MHD_HTTP_NOT_FOUND, (void *)(uintptr_t)METRICS_NOT_FOUND, strlen(METRICS_NOT_FOUND),
                     MHD_RESPMEM_PERSISTENT, "text/plain");
    device_read_kernel_drops(s->dev);   /* ddp0's, asked of the kernel now */
    if (metrics_format(s->dev, &text, &len) != 0)
        return MHD_NO;
    return reply(c, MHD_HTTP_OK, text, len, MHD_RESPMEM_MUST_FREE, METRICS_CONTENT_TYPE);
}

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    struct metrics_server *s = cls;

    (void)socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED && s->n_conns < METRICS_CLIENTS_MAX) {
        s->conns[s->n_conns++] = c;
        return;
    }
    for (size_t i = 0; toe == MHD_CONNECTION_NOTIFY_CLOSED && i < s->n_conns; i++)
        if (s->conns[i] == c) {
            s->conns[i] = s->conns[--s->n_conns];
            return;
        }
}

/* A client whose request and end of stream came before the connection was
 * accepted: libmicrohttpd (0.9.75, edge-triggered epoll) reads the request
 * and never sees the end, so the connection would hold its slot until the
 * idle time-out though its client is gone. One whose client has hung up
 * (nothing left to read, end of stream) with no answer queued cannot be
 * completed: it is shut down, which wakes libmicrohttpd to close it. A
 * client that hung up after a whole request has its answer queued already
 * and is left to receive it. Returns whether one was. */
static bool reap_gone(struct metrics_server *s)
{
    bool any = false;

    for (size_t i = 0; i < s->n_conns; i++) {
        const union MHD_ConnectionInfo *fd =
            MHD_get_connection_info(s->conns[i], MHD_CONNECTION_INFO_CONNECTION_FD);
        char byte;

        if (!fd || recv(fd->connect_fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) != 0 ||
            MHD_get_connection_info(s->conns[i], MHD_CONNECTION_INFO_HTTP_STATUS))
            continue;
        shutdown(fd->connect_fd, SHUT_RDWR);
        any = true;
    }
    return any;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    char line[METRICS_LOG_MAX];

    (void)cls;
    vsnprintf(line, sizeof(line), fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    log_debug("metrics: %s", line);
}

struct metrics_server *metrics_server_new(int listen_fd, struct device *dev)
{
    struct metrics_server *s = calloc(1, sizeof(*s));
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    unsigned flags = MHD_USE_EPOLL | MHD_USE_ERROR_LOG;

    if (!s) {
        close(listen_fd);
        return NULL;
    }
    s->dev = dev;
    s->listen_fd = listen_fd;
    if (getsockname(listen_fd, (struct sockaddr *)&ss, &sl) == 0 && ss.ss_family == AF_INET6)
        flags |= MHD_USE_IPv6;
    s->mhd = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
                              MHD_OPTION_LISTEN_SOCKET, listen_fd,
                              MHD_OPTION_CONNECTION_LIMIT, (unsigned)METRICS_CLIENTS_MAX,
                              MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)METRICS_CLIENTS_PER_IP,
                              MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)METRICS_IDLE_S,
                              MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)METRICS_CONN_MEMORY,
                              MHD_OPTION_NOTIFY_CONNECTION, on_connection, s,
                              MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
                              MHD_OPTION_END);
    if (!s->mhd) {
        close(listen_fd);
        free(s);
        errno = EINVAL;
        return NULL;
    }
    return s;
}

void metrics_server_free(struct metrics_server *s)
{
    if (!s)
        return;
    MHD_stop_daemon(s->mhd);   /* closes the listening socket too */
    free(s);
}

int metrics_server_fd(const struct metrics_server *s)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->mhd, MHD_DAEMON_INFO_EPOLL_FD);

    return info ? info->epoll_fd : -1;
}

void metrics_server_run(struct metrics_server *s, uint64_t now_ns)
{
    /* Each run may read a request whose end of stream it then misses:
     * look after every one (bounded: each round shuts at least one). */
    (void)now_ns;
    for (unsigned round = 0; round <= METRICS_CLIENTS_MAX; round++) {
        MHD_run(s->mhd);
        if (!reap_gone(s))
            break;
    }
}

uint64_t metrics_server_next(struct metrics_server *s, uint64_t now_ns)
{
    MHD_UNSIGNED_LONG_LONG ms;

    if (MHD_get_timeout(s->mhd, &ms) != MHD_YES)
        return UINT64_MAX;
    return now_ns + (uint64_t)ms * NS_PER_MS;
}
