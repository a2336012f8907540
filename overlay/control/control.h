/* SPDX-License-Identifier: MIT */
/* The control socket RUN_DIR/IFNAME.sock: WireGuard's userspace API
 * (`get=1`, `set=1`; see uapi.h), so stock `wg show IFNAME` works, plus one
 * ddpnet request, `get=ddpnet`, that adds what `ddpnet status` and
 * `ddpnet env` need (names, overlay addresses, rates, the master node).
 * Only root may connect: the socket file is 0600 and owned by root, and
 * the peer's credentials are checked too.
 *
 * Beside it, the env socket RUN_DIR/IFNAME.env (not "*.sock": `wg show
 * all` would take it for an interface), mode 0666, for `ddpnet env` run
 * by any local user (the training job's shell is seldom root's). It
 * answers get=ddpnet-env only -- the interface, the nodes' names and
 * overlay addresses, which the hosts block shows every user anyway, and
 * public keys -- and hangs up on anything else. */
#ifndef DDPNET_CONTROL_H
#define DDPNET_CONTROL_H

#include <stddef.h>
#include <stdint.h>

struct device;

/* The ddpnet request lines. get=ddpnet stands alone; set=ddpnet-cluster
 * is followed by "length=N\n" and the N bytes of a cluster file, which the
 * daemon applies live (`ddpnet reload`, membership/members.h). */
#define CONTROL_GET_DDPNET  "get=ddpnet\n"
#define CONTROL_GET_ENV     "get=ddpnet-env\n"
#define CONTROL_SET_CLUSTER "set=ddpnet-cluster\n"
#define CONTROL_LENGTH_KEY  "length="
/* set=ddpnet-statement, "length=N" and N bytes: one statement of the
 * cluster's authority (a revocation, a certificate) handed to a running
 * node (`ddpnet revoke`), answered with "verdict=..." and errno. */
#define CONTROL_SET_STATEMENT "set=ddpnet-statement\n"
/* get=ddpnet-certs stands alone: every member certificate the node's
 * authority store holds, its own among them, one "cert=LINE" each, then
 * errno (`ddpnet certs`, what `ddpnet authority renew` reads). */
#define CONTROL_GET_CERTS   "get=ddpnet-certs\n"

/* The control protocol (base/version.h's DDPNET_CONTROL_PROTOCOL): the
 * CLI sends "protocol=N\n" before each of its requests, and a daemon
 * answers such a request with its own "protocol=N\n" line first. A daemon
 * of another number refuses the request unread (its protocol line, then
 * errno=-EPROTONOSUPPORT) and hangs up; the CLI refuses an answer of
 * another number, or one without the line (a daemon from before the
 * numbers, 0.3.0, answers the line itself with errno=-EINVAL). Requests
 * without the line (`wg`, and CLIs before the numbers) are served as
 * before. */
#define CONTROL_PROTOCOL_KEY "protocol="

/* Creates, binds (mode 0600) and listens on the socket path; returns the
 * listening fd (non-blocking, close-on-exec) or -errno. A stale socket file
 * nobody answers on is replaced; a live one gives -EADDRINUSE. */
int control_listen(const char *path);
/* The same for the env socket: mode 0666. */
int control_listen_env(const char *path);

/* The server side: every client is served without blocking, from the
 * event loop's thread, so a slow or silent client stalls no tunnel. At
 * most 8 clients at once (more wait in the listen backlog); each may send
 * several requests, answered in order; one silent for 5 s is hung up on;
 * a client that is not root is hung up on at once. Answers that carry the
 * private key (get=1) are wiped once written. */
struct control_server;

/* A server for the listening socket listen_fd (-1: none, clients are
 * adopted by hand); NULL with errno on failure. */
struct control_server *control_server_new(int listen_fd);
/* The env socket's server: any user may connect; get=ddpnet-env is
 * answered, any other request with errno=-EPERM and a hang-up; a request
 * longer than CONTROL_ENV_REQUEST_MAX bytes likewise. Its own 8 slots, so
 * users filling them never keep root from the control socket. */
#define CONTROL_ENV_REQUEST_MAX 64u
struct control_server *control_server_new_env(int listen_fd);
void control_server_free(struct control_server *s);
/* One fd to poll for readability: then call control_server_run. */
int control_server_fd(const struct control_server *s);
/* Serves an accepted connection from now on (made non-blocking); 0, or
 * -EPERM (not root), -EBUSY (no free slot), -errno: then fd is closed. */
int control_server_adopt(struct control_server *s, int fd, uint64_t now_ns);
/* Accepts, reads, answers and writes what is ready, without waiting. */
void control_server_run(struct control_server *s, struct device *dev, uint64_t now_ns);
/* When the next silent client is due to be hung up on (UINT64_MAX: none);
 * control_server_expire does it. */
uint64_t control_server_next(const struct control_server *s);
void control_server_expire(struct control_server *s, uint64_t now_ns);
/* Clients connected now: a test seam (the daemon bounds them, the tests
 * count them). */
size_t control_server_clients(const struct control_server *s);

/* Client side, for the CLI: sends request (a whole request, ending in an
 * empty line) to the socket at path and returns the response in a malloc'd
 * NUL-terminated buffer (*response), or -errno (-ENOENT / -ECONNREFUSED:
 * no daemon). A test seam: the CLI calls control_request_ddpnet, below. */
int control_request(const char *path, const char *request, char **response);
/* The same, with pass_fd (>= 0) sent along (SCM_RIGHTS) with the request's
 * first bytes: `reload` hands over the hosts file, which the daemon may no
 * longer open itself (control_int.h, control_reload). */
int control_request_fd(const char *path, const char *request, int pass_fd, char **response);
/* control_request_fd of a ddpnet request, with this build's protocol line
 * before it: 0 with the answer after the daemon's protocol line;
 * -EPROTONOSUPPORT when the daemon speaks another protocol (its number in
 * *daemon_protocol; 0: one from before the numbers); else as
 * control_request_fd. */
int control_request_ddpnet(const char *path, const char *request, int pass_fd, char **response,
                           unsigned *daemon_protocol);
/* The line that tells a person the two protocols differ, which side is the
 * older, and what to do: restart the daemon of ifname (a package upgrade
 * leaves it running the old binary), or run the ddpnet it was started
 * from. Returns snprintf's count. */
int control_protocol_message(char *buf, size_t size, unsigned daemon_protocol,
                             const char *ifname);

#endif
