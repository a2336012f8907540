/* SPDX-License-Identifier: MIT */
/* This node's local candidates: the addresses of its own interfaces, with
 * its listen port, that peers in the same LAN or VPC may reach it at
 * directly (no NAT hairpin). Read at start and every DISCO_LOCAL_REFRESH_S
 * (getifaddrs, which needs no privilege), so a new address is offered
 * without a restart. */
#include <arpa/inet.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <string.h>

#include "overlay/base/log.h"
#include "overlay/engine/paths/paths.h"
#include "overlay/loop/loop.h"

static void overlay_endpoint(const struct device *dev, struct disco_endpoint *e)
{
    const struct cluster_addr *a = &dev->self->address;

    memset(e, 0, sizeof(*e));
    e->family = a->family == AF_INET6 ? DISCO_FAMILY_IPV6 : DISCO_FAMILY_IPV4;
    memcpy(e->addr, a->bytes, a->family == AF_INET6 ? 16 : 4);
}

/* A socket of that family is open: candidates of another are no use. */
static bool family_open(const struct device *dev, int family)
{
    return dev->loop && dev->loop->udp_fd[family == AF_INET6] >= 0;
}

static bool listed(const struct disco_endpoint *e, const struct disco_endpoint *list, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (disco_endpoint_equal(e, &list[i]))
            return true;
    return false;
}

static bool same_list(const struct disco_endpoint *a, unsigned na,
                      const struct disco_endpoint *b, unsigned nb)
{
    if (na != nb)
        return false;
    for (unsigned i = 0; i < na; i++)
        if (!disco_endpoint_equal(&a[i], &b[i]))
            return false;
    return true;
}

/* One interface address, as a candidate if it is one. */
static bool candidate(const struct device *dev, const struct ifaddrs *i,
                      const struct disco_endpoint *overlay, struct disco_endpoint *e)
{
    const struct sockaddr *sa = i->ifa_addr;
    union endpoint ep;

    if (!sa || !(i->ifa_flags & IFF_UP) || !family_open(dev, sa->sa_family))
        return false;
    /* With our port: an endpoint without one is no endpoint. */
    memset(&ep, 0, sizeof(ep));
    if (sa->sa_family == AF_INET6) {
        ep.in6 = *(const struct sockaddr_in6 *)(const void *)sa;
        ep.in6.sin6_port = htons(dev->listen_port);
    } else {
        ep.in4 = *(const struct sockaddr_in *)(const void *)sa;
        ep.in4.sin_port = htons(dev->listen_port);
    }
    if (disco_endpoint_from_sockaddr(e, &ep.sa, sa->sa_family == AF_INET6 ? sizeof(ep.in6)
                                                                         : sizeof(ep.in4)))
        return false;
    return disco_local_usable(e, i->ifa_flags & IFF_LOOPBACK, !strcmp(i->ifa_name, dev->ifname),
                              overlay);
}

static void log_locals(const struct device *dev)
{
    char text[DISCO_MAX_LOCAL * 48] = "", one[64];

    for (unsigned i = 0; i < dev->disco.n_local; i++) {
        union endpoint ep;
        memset(&ep, 0, sizeof(ep));
        if (disco_endpoint_to_sockaddr(&dev->disco.local[i], &ep.sa, sizeof(ep)) < 0)
            continue;
        endpoint_format(&ep, one, sizeof(one));
        strncat(text, i ? " " : "", sizeof(text) - strlen(text) - 1);
        strncat(text, one, sizeof(text) - strlen(text) - 1);
    }
    log_info("local candidates: %s", dev->disco.n_local ? text : "(none)");
}

void discovery_local_refresh(struct device *dev, uint64_t now)
{
    struct disco_endpoint found[DISCO_MAX_LOCAL], overlay;
    struct ifaddrs *all;
    unsigned n = 0;

    dev->disco.next_local_ns = now + DISCO_LOCAL_REFRESH_S * WG_NSEC_PER_SEC;
    if (getifaddrs(&all))
        return;
    overlay_endpoint(dev, &overlay);
    for (const struct ifaddrs *i = all; i && n < DISCO_MAX_LOCAL; i = i->ifa_next)
        if (candidate(dev, i, &overlay, &found[n]) && !listed(&found[n], found, n))
            n++;
    freeifaddrs(all);
    if (same_list(found, n, dev->disco.local, dev->disco.n_local))
        return;
    memcpy(dev->disco.local, found, n * sizeof(found[0]));
    dev->disco.n_local = (uint8_t)n;
    dev->disco.gen++;
    discovery_wake(dev);   /* every peer hears of them (disco_tick) */
    log_locals(dev);
}
