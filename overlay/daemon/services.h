/* SPDX-License-Identifier: MIT */
/* What the daemon serves besides packets: the control socket and the env
 * socket (control.h) and, when the cluster file asks for it, the metrics endpoint
 * (metrics.h). The loop polls one fd for all -- an epoll set of the
 * servers' own fds -- and runs them when it is readable; each server does
 * nothing when nothing of its own is ready. */
#ifndef DDPNET_SERVICES_H
#define DDPNET_SERVICES_H

#include <stddef.h>
#include <stdint.h>

struct device;
struct control_server;
struct metrics_server;

struct services {
    int epoll_fd;
    struct control_server *control;
    struct control_server *env;           /* the env socket's */
    struct metrics_server *metrics;       /* NULL: metrics off */
    uint64_t metrics_due;                 /* its next time-out */
    struct device *dev;
};

/* Serves the control socket listening on control_fd and the env socket
 * listening on env_fd (both stay the caller's) and, when dev->cluster.metrics asks, metrics on a socket of
 * their own. 0, or -errno with one line for a person in err (a metrics
 * address this node cannot listen on, say). */
int services_open(struct services *sv, struct device *dev, int control_fd, int env_fd,
                  char *err, size_t errlen);
void services_close(struct services *sv);
/* The fd to poll for readability; then services_run. */
int services_fd(const struct services *sv);
void services_run(struct services *sv, uint64_t now_ns);
/* Hangs up on idle clients; returns the next deadline (UINT64_MAX: none). */
uint64_t services_timers(struct services *sv, uint64_t now_ns);

#endif
