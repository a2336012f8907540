/* SPDX-License-Identifier: MIT */
/* The daemon's servers behind one fd (services.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <stdint.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "overlay/base/log.h"
#include "overlay/control/control.h"
#include "overlay/control/metrics.h"
#include "overlay/daemon/services.h"
#include "overlay/engine/model/device.h"
#include "overlay/loop/resolver.h"
#include "overlay/membership/members.h"
#include "overlay/registry/registry.h"

static int watch(struct services *sv, int fd)
{
    struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };

    return epoll_ctl(sv->epoll_fd, EPOLL_CTL_ADD, fd, &ev) == 0 ? 0 : -errno;
}

static int open_metrics(struct services *sv, char *err, size_t errlen)
{
    int fd, ret;

    ret = metrics_listen(&sv->dev->cluster.metrics, &sv->dev->self->address, &fd, err, errlen);
    if (ret)
        return ret;
    sv->metrics_due = UINT64_MAX;
    if (!(sv->metrics = metrics_server_new(fd, sv->dev))) {
        snprintf(err, errlen, "metrics: the HTTP server (libmicrohttpd) did not start");
        return -EINVAL;
    }
    if ((ret = watch(sv, metrics_server_fd(sv->metrics))))
        snprintf(err, errlen, "metrics: epoll: %s", strerror(-ret));
    return ret;
}

int services_open(struct services *sv, struct device *dev, int control_fd, int env_fd,
                  char *err, size_t errlen)
{
    int ret;

    memset(sv, 0, sizeof(*sv));
    sv->dev = dev;
    sv->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
    if (sv->epoll_fd < 0) {
        ret = -errno;
        snprintf(err, errlen, "epoll: %s", strerror(errno));
        return ret;
    }
    if (!(sv->control = control_server_new(control_fd))) {
        ret = -errno;
        snprintf(err, errlen, "control socket: %s", strerror(errno));
        return ret;
    }
    if ((ret = watch(sv, control_server_fd(sv->control)))) {
        snprintf(err, errlen, "control socket: epoll: %s", strerror(-ret));
        return ret;
    }
    if (!(sv->env = control_server_new_env(env_fd))) {
        ret = -errno;
        snprintf(err, errlen, "env socket: %s", strerror(errno));
        return ret;
    }
    if ((ret = watch(sv, control_server_fd(sv->env)))) {
        snprintf(err, errlen, "env socket: epoll: %s", strerror(-ret));
        return ret;
    }
    if (dev->membership->registry && (ret = watch(sv, registry_event_fd(dev->membership->registry)))) {
        snprintf(err, errlen, "registry: epoll: %s", strerror(-ret));
        return ret;
    }
    if (dev->resolver && (ret = watch(sv, resolver_fd(dev->resolver)))) {
        snprintf(err, errlen, "resolver: epoll: %s", strerror(-ret));
        return ret;
    }
    if (dev->cluster.metrics.at != CLUSTER_METRICS_OFF)
        return open_metrics(sv, err, errlen);
    return 0;
}

/* A new snapshot of the registry's nodes: applied through membership. */
static void take_registry(struct services *sv, uint64_t now_ns)
{
    struct cluster_node *nodes;
    size_t n;
    int64_t revision;
    int ret = registry_take(sv->dev->membership->registry, &nodes, &n, &revision);

    if (ret == 1 && (ret = members_registry(sv->dev, nodes, n,
                                            registry_statements(sv->dev->membership->registry), revision,
                                            now_ns)))
        log_warn("registry: revision %lld not applied: %s", (long long)revision,
                 strerror(-ret));
    else if (ret < 0)
        log_warn("registry: %s", strerror(-ret));
}

void services_close(struct services *sv)
{
    metrics_server_free(sv->metrics);
    control_server_free(sv->control);
    control_server_free(sv->env);
    if (sv->epoll_fd >= 0)
        close(sv->epoll_fd);
    memset(sv, 0, sizeof(*sv));
    sv->epoll_fd = -1;
}

int services_fd(const struct services *sv)
{
    return sv->epoll_fd;
}

/* Every server runs: each does nothing when nothing of its own is ready,
 * and what one leaves ready keeps the set readable for the next poll. */
void services_run(struct services *sv, uint64_t now_ns)
{
    control_server_run(sv->control, sv->dev, now_ns);
    control_server_run(sv->env, sv->dev, now_ns);
    if (sv->dev->membership->registry)
        take_registry(sv, now_ns);
    members_resolved(sv->dev, now_ns);
    if (sv->metrics) {
        metrics_server_run(sv->metrics, now_ns);
        sv->metrics_due = metrics_server_next(sv->metrics, now_ns);
    }
}

/* Called on every pass of the loop: the metrics server, which costs a
 * system call to run, runs here only when one of its time-outs is due;
 * the names block is handed to its writer when it changed and its time
 * has come. */
uint64_t services_timers(struct services *sv, uint64_t now_ns)
{
    uint64_t next, t;

    control_server_expire(sv->control, now_ns);
    control_server_expire(sv->env, now_ns);
    next = control_server_next(sv->control);
    if (control_server_next(sv->env) < next)
        next = control_server_next(sv->env);
    if (sv->metrics && sv->metrics_due <= now_ns) {
        metrics_server_run(sv->metrics, now_ns);
        sv->metrics_due = metrics_server_next(sv->metrics, now_ns);
    }
    if (sv->metrics && sv->metrics_due < next)
        next = sv->metrics_due;
    if ((t = members_hosts_run(sv->dev, now_ns)) < next)
        next = t;
    if ((t = members_certs_run(sv->dev, now_ns)) < next)
        next = t;
    if ((t = members_grace_run(sv->dev, now_ns)) < next)
        next = t;
    return next;
}
