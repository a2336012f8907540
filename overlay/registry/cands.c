/* SPDX-License-Identifier: MIT */
/* A registered node's own candidates (cands.h). */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>

#include "config/addr.h"
#include "overlay/registry/cands.h"
#include "overlay/registry/record.h"

static bool listed(const struct cluster_cand *c, const struct cluster_cand *list, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        if (list[i].port == c->port && cluster_addr_equal(&list[i].addr, &c->addr))
            return true;
    return false;
}

/* Interface address i as a candidate of the given family, if it is one. */
static bool from_ifaddr(const struct ifaddrs *i, int family, const struct cands_rules *rules,
                        struct cluster_cand *c)
{
    const struct sockaddr *sa = i->ifa_addr;

    if (!sa || sa->sa_family != family || !(i->ifa_flags & IFF_UP) ||
        (i->ifa_flags & IFF_LOOPBACK))
        return false;
    memset(c, 0, sizeof(*c));
    c->addr.family = family;
    if (family == AF_INET6)
        memcpy(c->addr.bytes, &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr, 16);
    else
        memcpy(c->addr.bytes, &((const struct sockaddr_in *)(const void *)sa)->sin_addr, 4);
    c->port = rules->port;
    return record_cand_usable(c) &&
           !cluster_addr_in_network(&c->addr, &rules->network, rules->prefix);
}

static unsigned endpoint_first(const struct cands_rules *rules, struct cluster_cand *out)
{
    const struct cluster_endpoint *e = rules->endpoint;

    if (!e || !e->literal)
        return 0;
    out[0] = (struct cluster_cand){ .addr = e->addr, .port = e->port };
    return record_cand_usable(&out[0]) ? 1 : 0;
}

unsigned cands_pick(const struct ifaddrs *all, const struct cands_rules *rules,
                    struct cluster_cand out[CLUSTER_CANDIDATES_MAX])
{
    static const int families[] = { AF_INET, AF_INET6 };
    unsigned n = endpoint_first(rules, out);
    struct cluster_cand c;

    for (unsigned f = 0; f < sizeof(families) / sizeof(families[0]); f++)
        for (const struct ifaddrs *i = all; i && n < CLUSTER_CANDIDATES_MAX; i = i->ifa_next)
            if (from_ifaddr(i, families[f], rules, &c) && !listed(&c, out, n))
                out[n++] = c;
    return n;
}

int cands_gather(const struct cands_rules *rules, struct cluster_cand out[CLUSTER_CANDIDATES_MAX],
                 unsigned *n)
{
    struct ifaddrs *all;

    if (getifaddrs(&all)) {
        *n = endpoint_first(rules, out);
        return -errno;
    }
    *n = cands_pick(all, rules, out);
    freeifaddrs(all);
    return 0;
}
