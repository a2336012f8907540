/* SPDX-License-Identifier: MIT */
/* Bringing a node up: from the cluster file and this node's key to a
 * configured ddp0, bound UDP sockets, a hosts block and a running event
 * loop, with root dropped once setup is done. The CLI's `up` calls
 * daemon_run, in a child process or in the foreground. */
#ifndef DDPNET_DAEMON_H
#define DDPNET_DAEMON_H

#include <stdbool.h>
#include <stdint.h>

#include "config/cluster.h"
#include "crypto/wg_const.h"

#define DAEMON_DEFAULT_IFNAME   "ddp0"
#define DAEMON_DEFAULT_RUN_DIR  "/var/run/wireguard"
#define DAEMON_DEFAULT_HOSTS    "/etc/hosts"
#define DAEMON_DEFAULT_STATE_DIR "/var/lib/ddpnet"
/* The unprivileged system user the daemon continues as (made by the
 * first `up` when missing: no home, no shell, its own group). */
#define DAEMON_USER             "ddpnet"

struct daemon_options {
    const char *ifname;
    const char *run_dir;
    const char *hosts_file;
    const char *state_dir;                /* absolute */
    const char *cluster_path;             /* absolute: for messages, checksum and reloads */
    struct cluster *cluster;              /* parsed; the daemon takes it over */
    const struct cluster_node *self;      /* within *cluster; NULL: joins the registry */
    /* With a registry and a node the file does not list: who joins (name,
     * public key, endpoint and port; the address is the registry's). */
    struct cluster_node registry_self;
    uint8_t private_key[WG_KEY_LEN];      /* wiped by daemon_run */
    /* With `[cluster] authority`: this node's certificate (its text, as
     * `up` read and checked it); NULL: none. */
    const char *cert;
    /* No registry and not in the file: registry_self is this node as
     * its certificate makes it (cert_member_node). */
    bool cert_self;
    bool foreground;                      /* log to stderr */
    bool debug;                           /* log debug lines */
    /* Where to report the outcome of setup: daemon_run writes "ok\n", or
     * one error line, then closes it. -1: none. */
    int ready_fd;
};

/* Sets up and runs until stopped (SIGTERM/SIGINT, or the interface is
 * deleted). Returns 0 on a clean stop, or a negative errno when setup
 * failed (the error line went to ready_fd, or to the log). */
int daemon_run(struct daemon_options *opt);

/* Paths in the run directory: the control socket RUN_DIR/IFNAME.sock, the
 * env socket RUN_DIR/IFNAME.env (control.h) and the state file RUN_DIR/IFNAME.state ("pid=N\nhosts=PATH\ncluster=PATH\n"),
 * which `down` reads to stop the daemon and clean its hosts block, and
 * `reload` to find the cluster file the node was started with. */
int daemon_socket_path(char *buf, size_t len, const char *run_dir, const char *ifname);
int daemon_env_socket_path(char *buf, size_t len, const char *run_dir, const char *ifname);
int daemon_state_path(char *buf, size_t len, const char *run_dir, const char *ifname);
/* RUN_DIR/IFNAME.log: where a daemon started without --foreground logs
 * on a machine with no syslog socket (log.h: LOG_SYSLOG_PATH). */
int daemon_log_path(char *buf, size_t len, const char *run_dir, const char *ifname);
/* Writes the state file at path (mode 0644), never through a symbolic
 * link (-ELOOP): 0 or -errno. cluster_file may be NULL (not written). */
int daemon_write_state(const char *path, long pid, const char *hosts_file,
                       const char *cluster_file);

#endif
