/* SPDX-License-Identifier: MIT */
/* Names resolved off the event loop. A lookup (getaddrinfo, or a function
 * a test passes) may take seconds or never return -- a DNS server that does
 * not answer -- and the loop carries every peer's packets: so lookups run
 * on threads of their own, and each answer comes back through an eventfd
 * that the loop polls (resolver_fd), to be taken on the loop's thread
 * (resolver_take). Held for others, bounded: at most RESOLVER_NAMES names
 * queued, in flight or answered and not yet taken, each held once however
 * many ask for it; at most RESOLVER_THREADS lookups in flight. A lookup that
 * never returns holds one thread and one name, never the loop. The threads
 * start with resolver_start, which the daemon calls once its privileges are
 * dropped: they are born without them. Nothing here knows peers. */
#ifndef DDPNET_RESOLVER_H
#define DDPNET_RESOLVER_H

#include <stddef.h>

#include "overlay/base/endpoint.h"

#define RESOLVER_NAMES    64u
#define RESOLVER_THREADS  2u
#define RESOLVER_HOST_MAX 253u       /* a DNS name's longest text */

struct resolver;

/* Looks host up; 0 with *out set (the port is the asker's to set), or a
 * non-zero EAI_* code of getaddrinfo. Runs on a resolver thread. */
typedef int (*resolver_lookup_fn)(void *ctx, const char *host, union endpoint *out);

struct resolver_answer {
    char host[RESOLVER_HOST_MAX + 1];
    int err;                          /* 0, or the lookup's EAI_* code */
    union endpoint addr;              /* when err is 0; port 0 */
};

/* A resolver that looks names up with fn(ctx, ...) (NULL: getaddrinfo, the
 * first IPv4 or IPv6 address). NULL when out of memory or no eventfd. */
struct resolver *resolver_new(resolver_lookup_fn fn, void *ctx);
/* Starts `threads` lookup threads (1 to RESOLVER_THREADS). Names submitted
 * before wait for them. 0 or -errno. */
int resolver_start(struct resolver *r, unsigned threads);
/* Readable while answers wait to be taken. */
int resolver_fd(const struct resolver *r);
/* Asks for host. 0: queued, or already queued, in flight or answered (its
 * one answer serves every asker); -ENOSPC: RESOLVER_NAMES are held, ask
 * again after a take; -ENAMETOOLONG. Never blocks on a lookup. */
int resolver_submit(struct resolver *r, const char *host);
/* Takes up to max answers (the names are released); how many. */
size_t resolver_take(struct resolver *r, struct resolver_answer *out, size_t max);
/* Stops it. Threads idle exit now; one inside a lookup that has not
 * returned is not waited for: it exits when the lookup does, and the last
 * thread out frees what they share. */
void resolver_free(struct resolver *r);

#endif
