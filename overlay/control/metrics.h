/* SPDX-License-Identifier: MIT */
/* Prometheus metrics: the device's counters in the text exposition format
 * (version 0.0.4), and the HTTP endpoint that serves them at /metrics
 * (`metrics = ADDRESS:PORT` in the cluster file).
 *
 * Per peer, the names WireGuard dashboards already use
 * (wireguard_sent_bytes_total, wireguard_received_bytes_total,
 * wireguard_latest_handshake_seconds, with the labels interface,
 * public_key, allowed_ips and friendly_name = the node's name), then
 * ddpnet's own, prefixed ddpnet_: the round trip, the path (direct or
 * relay, and via whom), handshakes sent and completed, packets dropped by
 * reason, buffers in use.
 *
 * The server is libmicrohttpd without a thread of its own: the event loop
 * polls one fd (metrics_server_fd) and calls metrics_server_run when it is
 * readable, so a scrape reads the device on the loop's thread, between
 * packets, and a slow or silent client stalls nothing: at most
 * METRICS_CLIENTS_MAX connections (METRICS_CLIENTS_PER_IP from one
 * address), each hung up on after METRICS_IDLE_S silent seconds, a request
 * held in at most METRICS_CONN_MEMORY bytes. */
#ifndef DDPNET_METRICS_H
#define DDPNET_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"

struct device;

#define METRICS_PATH            "/metrics"
#define METRICS_CONTENT_TYPE    "text/plain; version=0.0.4; charset=utf-8"
#define METRICS_CLIENTS_MAX     16u
#define METRICS_CLIENTS_PER_IP  4u
#define METRICS_IDLE_S          10u
#define METRICS_CONN_MEMORY     (16u * 1024u)

/* The exposition of dev's counters in a new malloc'd buffer (*out, *len;
 * NUL-terminated, not counted in *len). 0, -EINVAL or -ENOMEM. */
int metrics_format(const struct device *dev, char **out, size_t *len);

/* A listening TCP socket for m (non-blocking, close-on-exec): on m's
 * address, or on self (this node's overlay address) for overlay:PORT.
 * A literal address in the overlay network must be self's. 0 with *fd, or
 * -errno with one line a person can act on in err. */
int metrics_listen(const struct cluster_metrics *m, const struct cluster_addr *self, int *fd,
                   char *err, size_t errlen);
/* metrics_listen's check of the address alone, without a socket, for
 * `ddpnet check`: 0, or -EADDRNOTAVAIL with the same line in err. */
int metrics_check(const struct cluster_metrics *m, const struct cluster_addr *self, char *err,
                  size_t errlen);

/* The HTTP server on listen_fd (taken over: closed by metrics_server_free),
 * answering from dev. NULL with errno when libmicrohttpd refuses. */
struct metrics_server;
struct metrics_server *metrics_server_new(int listen_fd, struct device *dev);
void metrics_server_free(struct metrics_server *s);
/* The fd to poll for readability (libmicrohttpd's epoll set). */
int metrics_server_fd(const struct metrics_server *s);
/* Accepts, reads, answers and writes what is ready, without waiting. */
void metrics_server_run(struct metrics_server *s, uint64_t now_ns);
/* When run must be called again even if nothing becomes readable (an idle
 * connection's time-out), on now_ns's clock; UINT64_MAX: never. */
uint64_t metrics_server_next(struct metrics_server *s, uint64_t now_ns);

#endif
