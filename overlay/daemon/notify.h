/* SPDX-License-Identifier: MIT */
/* systemd's readiness protocol (sd_notify(3)): under a unit of
 * Type=notify, systemd names a datagram socket in $NOTIFY_SOCKET and waits
 * for "READY=1" before it counts the service as started, so units ordered
 * after ddpnet@ddp0 start once ddp0 is up. The socket is connected while
 * the daemon is still root (the drop to its own user could lose the right
 * to reach it); outside systemd every call does nothing. */
#ifndef DDPNET_NOTIFY_H
#define DDPNET_NOTIFY_H

/* Connects to $NOTIFY_SOCKET (a path, or "@name" in the abstract
 * namespace) and unsets it, so that no child inherits it. 0 (also when it
 * is not set: nothing to tell), or -errno. */
int notify_open(void);
/* Sends one state line ("READY=1", "STOPPING=1", "STATUS=..."); 0 or
 * -errno; 0 when not under systemd. */
int notify_send(const char *state);
void notify_close(void);

/* The systemd service this process runs as, for messages that say what
 * to restart: systemd sets $INVOCATION_ID for a service's processes, and
 * the unit is the last ".service" component of the process's cgroup
 * (/proc/self/cgroup). 0 with its name in unit ("ddpnet@ddp0.service"),
 * -ENOENT when not run by systemd or no unit is found, -ENAMETOOLONG.
 * Reads a file: call it at set-up, never from the loop. */
int notify_unit(char *unit, size_t len);
/* notify_unit's reading of the text of /proc/self/cgroup; 0, -ENOENT,
 * -ENAMETOOLONG. */
int notify_unit_parse(const char *cgroup, char *unit, size_t len);

#endif
