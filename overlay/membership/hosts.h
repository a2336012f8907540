/* SPDX-License-Identifier: MIT */
/* The names block that ddpnet keeps in a hosts file (default /etc/hosts):
 * one marked block per interface with an `ADDRESS NAME...` line per node,
 *
 *   # BEGIN ddpnet ddp0 (managed by ddpnet; do not edit)
 *   10.77.0.1 node-a
 *   # END ddpnet ddp0
 *
 * so that node names resolve to overlay addresses. The interface name is in
 * the markers, so daemons of different interfaces share one file without
 * touching each other's block; every byte outside our block is left as it
 * was. The file is rewritten in place (never renamed over), because it may
 * be a bind mount, as in containers and under the systemd unit, and the
 * daemon cannot write /etc after set-up. */
#ifndef DDPNET_HOSTS_H
#define DDPNET_HOSTS_H

#include <stdbool.h>
#include <stddef.h>

#define HOSTS_DEFAULT_PATH   "/etc/hosts"
#define HOSTS_BEGIN_PREFIX   "# BEGIN ddpnet "
#define HOSTS_BEGIN_SUFFIX   " (managed by ddpnet; do not edit)"
#define HOSTS_END_PREFIX     "# END ddpnet "
/* Bounds that keep a damaged or hostile input from costing unbounded memory. */
#define HOSTS_MAX_ENTRIES    65536u
#define HOSTS_MAX_FILE       (16u << 20)   /* bytes of hosts file we read */

struct hosts_entry {
    char address[46];   /* IPv4 or IPv6 text (INET6_ADDRSTRLEN), NUL-terminated */
    char name[64];      /* letters, digits, '-', '.', '_'; NUL-terminated */
    /* A member's own word (a name its machine goes by, the node name it
     * registered), not the cluster file's: left out when a line of the
     * file outside the block carries the name (the node resolves it
     * otherwise). The hosts writer also asks the resolver
     * (hosts_writer.h); own is the member's underlay address ("" none),
     * an answer the name may have. */
    bool claimed;
    char own[46];
};

/* Pure: computes the content of a hosts file whose old content is
 * old[0..oldlen) after setting ifname's block to the n entries of e, or
 * removing it when n == 0 or e == NULL. An existing block is replaced where
 * it stands; a new one goes at the top of the file, before every line (so
 * that its names win over the machine's own 127.0.1.1 line). A claimed
 * entry whose name a line outside the block carries (any address, any
 * case; comments aside) is left out. Consecutive
 * entries of one address share a line, in their order. On success *out is a malloc'd buffer (NUL-terminated, the NUL not
 * counted in *outlen) that the caller frees. Returns 0; -EINVAL for a bad
 * argument, interface name, address or name; -E2BIG for more than
 * HOSTS_MAX_ENTRIES entries; -EBADMSG when ifname's markers are damaged
 * (BEGIN without END, END without BEGIN, nested or repeated blocks), which
 * a person must repair; -ENOMEM. */
int hosts_edit(const char *old, size_t oldlen, const char *ifname,
               const struct hosts_entry *e, size_t n, char **out, size_t *outlen);

/* hosts_edit on the file at path, rewritten in place under flock(LOCK_EX):
 * the file's inode stays the same and it is not written at all when the
 * content does not change. Written whole in one pwrite, padded with empty
 * lines to the old length when shorter, then cut to its length: between
 * any two of our calls the file is a complete hosts file, never the new
 * head over the old tail (hosts.c says what a reader can still see). Returns 0, the errors of hosts_edit (the file
 * untouched), -EFBIG above HOSTS_MAX_FILE bytes, -EINVAL for a file that is
 * not regular, or -errno of open/flock/read/write (-ENOENT: no such file). */
int hosts_update(const char *path, const char *ifname,
                 const struct hosts_entry *e, size_t n);

/* The file at path opened for hosts_update_fd (O_RDWR): an fd, or -errno.
 * The daemon opens it during set-up, as root, and keeps it, so that it can
 * still rewrite its block after dropping its privileges. */
int hosts_open(const char *path);
/* hosts_update on a file opened by hosts_open; the lock is released
 * before it returns, the fd stays open. -EBADF for a negative fd. */
int hosts_update_fd(int fd, const char *ifname, const struct hosts_entry *e, size_t n);

/* hosts_update_fd that says in *wrote whether the file was written (false:
 * it already held that content, or an error). */
int hosts_write_fd(int fd, const char *ifname, const struct hosts_entry *e, size_t n,
                   bool *wrote);

/* Removes ifname's block from the file at path (hosts_update with no entries). */
int hosts_remove(const char *path, const char *ifname);

#endif
