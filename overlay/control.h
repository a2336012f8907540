/* The control socket RUN_DIR/IFNAME.sock: WireGuard's userspace API
 * (`get=1`, `set=1`; see uapi.h), so stock `wg show IFNAME` works, plus one
 * ddpnet request, `get=ddpnet`, that adds what `ddpnet status` and
 * `ddpnet env` need (names, overlay addresses, rates, the master node).
 * Only root may connect: the socket file is 0600 and owned by root, and
 * the peer's credentials are checked too. */
#ifndef DDPNET_CONTROL_H
#define DDPNET_CONTROL_H

#include <stddef.h>
#include <stdint.h>

struct device;

/* The ddpnet request line. */
#define CONTROL_GET_DDPNET "get=ddpnet\n"

/* Creates, binds (mode 0600) and listens on the socket path; returns the
 * listening fd (non-blocking, close-on-exec) or -errno. A stale socket file
 * nobody answers on is replaced; a live one gives -EADDRINUSE. */
int control_listen(const char *path);

/* Serves one accepted client connection to completion (it may carry
 * several requests) and closes it. Reads with a short timeout so a silent
 * client cannot stall the daemon. */
void control_serve(struct device *dev, int client_fd, uint64_t now_ns);

/* Client side, for the CLI: sends request (a whole request, ending in an
 * empty line) to the socket at path and returns the response in a malloc'd
 * NUL-terminated buffer (*response), or -errno (-ENOENT / -ECONNREFUSED:
 * no daemon). */
int control_request(const char *path, const char *request, char **response);

#endif
