/* SPDX-License-Identifier: MIT */
/* Discovery's own calls between its files (disco_io.c, disco_relay.c):
 * part of paths/discovery (paths.h), not for the core. */
#ifndef DDPNET_DISCO_INT_H
#define DDPNET_DISCO_INT_H

#include <string.h>

#include "overlay/engine/paths.h"

/* Endpoints as discovery's records hold them, and back. */
static inline bool discovery_to_disco(const union endpoint *e, struct disco_endpoint *out)
{
    return e->sa.sa_family != AF_UNSPEC &&
           disco_endpoint_from_sockaddr(out, &e->sa, endpoint_sockaddr_len(e)) == 0;
}

static inline bool discovery_from_disco(const struct disco_endpoint *e, union endpoint *out)
{
    memset(out, 0, sizeof(*out));
    return disco_endpoint_to_sockaddr(e, &out->sa, sizeof(*out)) > 0;
}

static inline bool discovery_is_endpoint(const struct peer *p, const struct disco_endpoint *e)
{
    struct disco_endpoint cur;

    return discovery_to_disco(&p->path.endpoint, &cur) && disco_endpoint_equal(&cur, e);
}

/* --- disco_relay.c: which relay, and what members' hints may cost ---------------- */
/* A relay to choose: it carries messages, and answers. */
bool discovery_relay_good(const struct peer *r, uint64_t now);
/* The relay to try next for p (trust.c's order), or NULL. */
struct peer *discovery_relay_next(const struct peer *p, uint64_t now);
/* Whether discovery_try_relay would find a relay for p, offered or
 * guessed. */
bool discovery_relay_known(const struct peer *p, uint64_t now);
/* r says it reaches p directly: a relay to try, no more (trust.c). */
void discovery_offer_relay(struct peer *p, struct peer *r, uint64_t now);
/* Tries the next relay for p (an initiation goes through it); false when
 * none is known, offered or guessed. */
bool discovery_try_relay(struct peer *p, uint64_t now);
/* Whether a send of len bytes to t, a candidate of p, may go: free where
 * it answered, else paid from its informants' credit (trust.c). */
bool discovery_hint_allows(struct peer *p, const struct disco_endpoint *t, uint32_t len,
                           uint64_t now);

#endif
