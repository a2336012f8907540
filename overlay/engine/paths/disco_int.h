/* SPDX-License-Identifier: MIT */
/* Discovery's own calls between its files: part of paths/discovery
 * (paths.h), not for the core (tests/check_layers.sh). Its files, each
 * one concern: disco_io.c (the buffers, sealing and sending, the messages
 * built), disco_intro.c (introductions, and what members say of each
 * other), disco_recv.c (the messages received), disco_sched.c (the
 * schedule, path MTU probing included), disco_due.c (the deadlines set,
 * a leaf), disco_relay.c (which relay, what hints cost), disco_local.c
 * (our own candidates). The files call each other in one circle of five
 * at most (path.c, disco_io.c, disco_intro.c, disco_relay.c,
 * disco_sched.c); disco_recv.c is above it, disco_due.c and
 * disco_local.c below (tests/check_layers.sh). */
#ifndef DDPNET_DISCO_INT_H
#define DDPNET_DISCO_INT_H

#include <string.h>

#include "overlay/engine/paths/paths.h"

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

/* --- disco_io.c: messages built and sent --------------------------------------- */
/* p's candidates to send to (only_local: its local ones only). */
unsigned discovery_targets(const struct peer *p, bool only_local, struct disco_endpoint *out);
/* m sealed for p and sent, direct to `to` (NULL: on p's path), padded up
 * to pad_limit (0: none): 0 or a negative errno. */
int discovery_send_limited(struct peer *p, const struct disco_msg *m, const union endpoint *to,
                           uint32_t pad_limit, uint64_t now);
int discovery_send(struct peer *p, const struct disco_msg *m, const union endpoint *to,
                   uint64_t now);
/* What m takes on the wire, sealed for p. */
uint32_t discovery_sealed_len(const struct peer *p, const struct disco_msg *m);
size_t discovery_endpoint_len(const struct disco_endpoint *e);
/* The device's message being built: a PING (flags DISCO_PING_F_*), or a
 * probe PING of the candidate `to`. */
struct disco_msg *discovery_ping_msg(struct device *dev, uint8_t flags);
struct disco_msg *discovery_probe_msg(struct device *dev, const struct disco_endpoint *to,
                                      uint8_t flags);
/* The local addresses of p we may pass on (paid from its hint credit). */
unsigned discovery_pass_locals(struct peer *p, struct disco_endpoint *out, unsigned max);
/* Whether p's record may be passed on to others now. */
bool discovery_recordable(const struct peer *p, uint64_t now);
/* What x hears of us at the start of a session and with ENDPOINTS. */
void discovery_send_endpoints(struct peer *x, uint64_t now);
void discovery_send_names(struct peer *x, uint64_t now);
void discovery_send_features(struct peer *x, uint64_t now);
/* FEATURES from our first extra source port: does x hear our flows? */
void discovery_probe_flows(struct peer *x, uint64_t now);
/* The authority's statements said on every session: our certificate,
 * then the latest revocations we took (dev->revocations_said), then a
 * digest of all we hold (REVOKED, dev->revoked_digest). */
void discovery_send_statements(struct peer *x, uint64_t now);
void discovery_send_record(struct peer *x, uint64_t now);

/* --- disco_intro.c: what members say of each other --------------------------------- */
void discovery_on_endpoints(struct peer *x, struct peer *via, const struct disco_endpoints *e,
                            uint64_t now);
void discovery_on_punch(struct peer *x, struct peer *via, const struct disco_punch *pu,
                        uint64_t now);

/* A probe PING to p's candidate `to`, when what it costs is paid (answered:
 * where p's authentic packet just came from). */
void discovery_send_probe(struct peer *p, const struct disco_endpoint *to, bool answered,
                          uint64_t now);

/* --- disco_sched.c: the schedule ----------------------------------------------------- */
/* A challenge to p's unproven source, when one is due and paid for. */
void discovery_challenge(struct peer *p, uint64_t now);
/* A line when p's path MTU search moved on from `was`. */
void discovery_log_mtu_changed(struct peer *p, const struct pmtu *was);
/* The look at members' records that their words asked for, when due
 * (disco_recv.c's record_word asks). */
void discovery_records_look(struct device *dev, uint64_t now);

/* --- disco_due.c: the deadlines set (discovery_arm, discovery_wake: paths.h) -------- */
/* p's deadline is `when`, later or earlier (disco_sched.c's visit, which
 * sets it anew); the device's earliest lowered to it. */
void discovery_set_due(struct peer *p, uint64_t when);

/* (disco_recv.c: the messages received, discovery_receive: paths.h.) */

#endif
