/* SPDX-License-Identifier: MIT */
/* Hostname endpoints, resolved off the loop (members.h): a peer whose node
 * names its endpoint by hostname asks the device's resolver
 * (loop/resolver.h) and keeps what it has until the answer comes -- none
 * for a new peer, the old one for a changed endpoint. Answers are matched
 * to peers by the name they still wait for, so an answer that a reload
 * made stale (the node now names another host, or a literal) changes
 * nothing. */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <arpa/inet.h>

#include "overlay/base/log.h"
#include "overlay/engine/device_setup.h"
#include "overlay/loop/resolver.h"
#include "overlay/membership/members.h"

/* Answers taken per readiness of the resolver's fd; more keep it readable. */
#define RESOLVED_BATCH 16u

static void ask(struct device *dev, struct peer *p)
{
    int ret = resolver_submit(dev->resolver, p->member.resolving);

    if (ret == -ENOSPC)
        dev->membership->resolve_backlog = true;     /* asked again after the next answers */
    else if (ret) {
        log_warn("peer %s: cannot resolve %s: %s", p->member.name, p->member.resolving,
                 strerror(-ret));
        p->member.resolving[0] = '\0';
    }
}

void members_resolve(struct device *dev, struct peer *p, const struct cluster_node *n)
{
    snprintf(p->member.resolving, sizeof(p->member.resolving), "%.*s", (int)CLUSTER_HOST_MAX,
             n->endpoint.host);
    p->member.resolving_port = n->endpoint.port;
    if (!dev->resolver) {
        log_warn("peer %s: cannot resolve %s: no resolver; it waits to be reached", p->member.name,
                 p->member.resolving);
        p->member.resolving[0] = '\0';
        return;
    }
    ask(dev, p);
}

static void apply(struct peer *p, const struct resolver_answer *a, uint64_t now)
{
    union endpoint ep = a->addr;

    p->member.resolving[0] = '\0';
    if (a->err) {
        log_warn("peer %s: cannot resolve %s: %s; it waits to be reached", p->member.name, a->host,
                 gai_strerror(a->err));
        return;
    }
    if (ep.sa.sa_family == AF_INET)
        ep.in4.sin_port = htons(p->member.resolving_port);
    else
        ep.in6.sin6_port = htons(p->member.resolving_port);
    peer_set_endpoint(p, &ep.sa, endpoint_sockaddr_len(&ep));
    /* As at start-up for an endpoint known then: reach out now. */
    if (!p->wg.current)
        handshake_send_initiation(p, false, now);
}

/* Peers that could not ask while the resolver was full ask now (a name
 * asked already is not asked twice: resolver_submit). */
static void ask_backlog(struct device *dev)
{
    dev->membership->resolve_backlog = false;
    for (size_t i = 0; i < dev->n_peers && !dev->membership->resolve_backlog; i++)
        if (dev->peers[i]->member.resolving[0])
            ask(dev, dev->peers[i]);
}

void members_resolved(struct device *dev, uint64_t now)
{
    struct resolver_answer a[RESOLVED_BATCH];
    size_t n;

    if (!dev->resolver)
        return;
    n = resolver_take(dev->resolver, a, RESOLVED_BATCH);
    for (size_t i = 0; n && i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        for (size_t k = 0; p->member.resolving[0] && k < n; k++)
            if (!strcasecmp(p->member.resolving, a[k].host))
                apply(p, &a[k], now);
    }
    if (n && dev->membership->resolve_backlog)
        ask_backlog(dev);
    if (n)
        discovery_wake(dev);
}
