/* SPDX-License-Identifier: MIT */
/* The names block written off the event loop: a thread that owns the
 * hosts file descriptor's writes once the daemon runs. The loop hands it
 * the block's entries (hosts_writer_submit: a copy, never a wait); the
 * thread writes at most once per HOSTS_WRITE_INTERVAL_NS, so a member that
 * keeps changing its names costs every node one rewrite a second at most,
 * and the last entries handed over are the ones written.
 *
 * Before a claimed entry (a member's own word: hosts.h) is written, the
 * thread asks the node's resolver for the name (getaddrinfo_a: the
 * answer is taken when it comes, in the same pass when it comes within
 * HOSTS_ANSWER_WAIT_NS, else in a later one; the loop never waits). The
 * entry is written only when every address of the answer is a member's:
 * inside the cluster's overlay network, or the member's own underlay
 * address (its FQDN in the cloud's DNS). A name the resolver gives another
 * address (the metadata server's, a package mirror's, a machine outside
 * the cluster) stays the node's; a name not answered yet is left out
 * until it is; a name that resolves to nothing (no such name, no DNS
 * server reachable) may be claimed. Names the hosts file gives outside
 * the block are hosts_edit's check. */
#ifndef DDPNET_HOSTS_WRITER_H
#define DDPNET_HOSTS_WRITER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/cluster.h"
#include "overlay/base/clock.h"
#include "overlay/membership/hosts.h"

#define HOSTS_WRITE_INTERVAL_NS NS_PER_S        /* one write a second at most */
/* An answer is asked again after this long; until the new one comes the
 * old one stands. */
#define HOSTS_ANSWER_TTL_NS     (60ull * NS_PER_S)
#define HOSTS_ANSWER_MAX        8u       /* addresses of one answer looked at */
/* How long a pass waits for answers asked in it before it writes without
 * the names still unanswered, and how often it looks. */
#define HOSTS_ANSWER_WAIT_NS    (200ull * NS_PER_MS)
#define HOSTS_ANSWER_POLL_NS    (10ull * NS_PER_MS)
#define HOSTS_LOOKUPS_MAX       256u     /* lookups in flight at once */

struct hosts_answer {
    unsigned n;                           /* 0: the name resolves to nothing */
    /* An answer with more than HOSTS_ANSWER_MAX addresses has too_many set
     * and is judged as not a member's. */
    bool too_many;
    struct cluster_addr addr[HOSTS_ANSWER_MAX];
};

/* Asks for name: 0 with *a filled once answered, -EAGAIN while the answer
 * has not come (asked again on the next pass, never waited for). Called
 * on the writer's thread only. */
typedef int (*hosts_resolve_fn)(void *ctx, const char *name, struct hosts_answer *a);

struct hosts_writer_config {
    int fd;                               /* hosts_open's; stays the caller's */
    const char *ifname;
    struct cluster_addr network;          /* the overlay: its addresses are members' */
    unsigned prefix;
    hosts_resolve_fn resolve;             /* NULL: the system's resolver (getaddrinfo_a) */
    void *resolve_ctx;
};

struct hosts_writer;

/* Starts the thread (call it after the privileges are dropped: it and the
 * resolver's helper threads inherit the caller's). 0 or -errno. */
int hosts_writer_start(struct hosts_writer **out, const struct hosts_writer_config *cfg);
/* Hands over the block's next entries (taken: e is malloc'd, freed by the
 * writer; NULL with n = 0 for an empty block). Never blocks on I/O. */
void hosts_writer_submit(struct hosts_writer *w, struct hosts_entry *e, size_t n);
/* Stops and joins the thread; what was not written yet is not. */
void hosts_writer_stop(struct hosts_writer *w);
/* How many times the thread has written the file (a pass that changes
 * nothing writes nothing): the metric ddpnet_hosts_writes_total. */
uint64_t hosts_writer_writes(struct hosts_writer *w);

#endif
