/* SPDX-License-Identifier: MIT */
/* The rules enforced on the data path (filter.h): a packet's headers read,
 * its connection found in the table or opened under a rule. */
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

#include "config/rules.h"
#include "overlay/base/wire.h"
#include "overlay/engine/filter.h"
#include "overlay/engine/model/device.h"

#define IP6_HLEN     40u
#define L4_PORTS_LEN 8u      /* what an ICMP error quotes at least: the ports */
#define TCP_FLAGS_AT 13u
#define TCP_FIN      0x01u
#define TCP_SYN      0x02u
#define TCP_RST      0x04u
#define TCP_ACK      0x10u

enum icmp_kind { NOT_ICMP, ICMP_ECHO_REQUEST, ICMP_ECHO_REPLY, ICMP_ERROR, ICMP_OTHER };

/* What a packet says of its connection. */
struct view {
    uint8_t family, proto, tcp_flags;
    const uint8_t *src, *dst;
    uint16_t sport, dport;           /* ICMP echo: its identifier in both */
    enum icmp_kind icmp;
    const uint8_t *quoted;           /* ICMP_ERROR: the packet it is about */
    uint32_t quoted_len;
    bool later_fragment;             /* an IPv4 fragment other than the first */
};

static enum icmp_kind icmp_kind(uint8_t proto, uint8_t type)
{
    if (proto == IPPROTO_ICMP) {
        if (type == 8)
            return ICMP_ECHO_REQUEST;
        if (type == 0)
            return ICMP_ECHO_REPLY;
        /* unreachable, source quench, redirect, time exceeded, parameter problem */
        return type == 3 || type == 4 || type == 5 || type == 11 || type == 12 ? ICMP_ERROR
                                                                              : ICMP_OTHER;
    }
    if (type == 128)
        return ICMP_ECHO_REQUEST;
    if (type == 129)
        return ICMP_ECHO_REPLY;
    return type < 128 ? ICMP_ERROR : ICMP_OTHER;   /* RFC 4443: below 128, errors */
}

/* Reads ip[0..len); a quoted packet (inside an ICMP error) need hold only
 * its first L4_PORTS_LEN bytes of transport header. False: not IP. */
static bool view_parse(const uint8_t *ip, uint32_t len, struct view *v, bool quoted)
{
    uint32_t l4;

    memset(v, 0, sizeof(*v));
    if (len >= IPV4_HEADER_LEN && ip[0] >> 4 == 4) {
        l4 = (ip[0] & 0x0fu) * 4u;
        if (l4 < IPV4_HEADER_LEN || l4 > len)
            return false;
        v->family = AF_INET;
        v->proto = ip[9];
        v->src = ip + 12;
        v->dst = ip + 16;
        v->later_fragment = (get_be16(ip + 6) & 0x1fffu) != 0;
    } else if (len >= IP6_HLEN && ip[0] >> 4 == 6) {
        l4 = IP6_HLEN;
        v->family = AF_INET6;
        v->proto = ip[6];
        v->src = ip + 8;
        v->dst = ip + 24;
    } else {
        return false;
    }
    if (v->later_fragment)
        return true;
    const uint8_t *t = ip + l4;
    uint32_t left = len - l4;
    switch (v->proto) {
    case IPPROTO_TCP:
    case IPPROTO_UDP:
        if (left < (quoted || v->proto == IPPROTO_UDP ? L4_PORTS_LEN : TCP_FLAGS_AT + 1))
            return false;
        v->sport = get_be16(t);
        v->dport = get_be16(t + 2);
        if (v->proto == IPPROTO_TCP && !quoted)
            v->tcp_flags = t[TCP_FLAGS_AT];
        return true;
    case IPPROTO_ICMP:
    case IPPROTO_ICMPV6:
        if ((v->proto == IPPROTO_ICMP) != (v->family == AF_INET) || left < L4_PORTS_LEN)
            return false;
        v->icmp = icmp_kind(v->proto, t[0]);
        if (v->icmp == ICMP_ECHO_REQUEST || v->icmp == ICMP_ECHO_REPLY)
            v->sport = v->dport = get_be16(t + 4);
        if (v->icmp == ICMP_ERROR) {
            v->quoted = t + L4_PORTS_LEN;
            v->quoted_len = left - L4_PORTS_LEN;
        }
        return true;
    default:
        return true;
    }
}

/* The connection of v seen from this node: ours when we sent it. */
static void key_of(const struct view *v, bool ours, struct conntrack_key *k)
{
    size_t alen = v->family == AF_INET ? 4 : 16;

    memset(k, 0, sizeof(*k));
    memcpy(k->remote, ours ? v->dst : v->src, alen);
    k->family = v->family;
    k->proto = v->proto;
    k->local_port = ours ? v->sport : v->dport;
    k->remote_port = ours ? v->dport : v->sport;
}

/* Whether a connection opened by us (ours) or by p still has a rule. */
static bool allowed(const struct device *dev, const struct peer *p, bool ours, uint8_t proto,
                    uint16_t port)
{
    uint64_t self = dev->self ? dev->self->groups : 0, peer = p->member.groups;

    return rules_match(&dev->cluster.rules, ours ? self : peer, ours ? peer : self, proto,
                       port) != RULES_REFUSED;
}

/* An ICMP error sent (ours) or received about a packet of a connection we
 * know: the quoted packet went the other way. */
static bool related(struct device *dev, const struct view *v, bool ours, uint64_t now)
{
    struct view q;
    struct conntrack_key k;

    if (!view_parse(v->quoted, v->quoted_len, &q, true) || q.later_fragment ||
        q.family != v->family)
        return false;
    key_of(&q, !ours, &k);
    return conntrack_find(&dev->conntrack, &k, now) != NULL;
}

/* A new entry for k, counted against p when its packet makes it (not
 * ours); NULL when the table or p's bound has no room (counted). */
static struct conntrack_entry *add(struct device *dev, struct peer *p,
                                   const struct conntrack_key *k, bool ours, uint64_t now)
{
    struct conntrack *t = &dev->conntrack;
    struct conntrack_entry *e;

    if (!ours && p->live.conns >= CONNTRACK_PER_PEER &&
        (!conntrack_sweep(t, now) || p->live.conns >= CONNTRACK_PER_PEER)) {
        t->peer_full++;
        return NULL;
    }
    if (!(e = conntrack_add(t, k, ours ? 0 : p->id, now)))
        return NULL;
    if (!ours)
        p->live.conns++;
    return e;
}

void filter_released(void *ctx, uint32_t owner)
{
    struct peer *p = device_peer_by_id(ctx, owner);

    if (p && p->live.conns)
        p->live.conns--;
}

static bool filter(struct device *dev, struct peer *p, const uint8_t *ip, uint32_t len,
                   bool ours, uint64_t now)
{
    struct conntrack *t = &dev->conntrack;
    struct conntrack_entry *e;
    struct conntrack_key k;
    struct view v;

    if (dev->cluster.rules.n == 0)
        return true;
    if (!view_parse(ip, len, &v, false) || v.later_fragment)
        return false;
    if (v.icmp == ICMP_ERROR)
        return related(dev, &v, ours, now);
    key_of(&v, ours, &k);
    if ((e = conntrack_find(t, &k, now))) {
        if (e->gen != t->gen) {
            /* the rules changed since it was allowed: still? */
            if (!allowed(dev, p, e->ours, k.proto, e->port)) {
                conntrack_forget(t, e);
                return false;
            }
            e->gen = t->gen;
        }
    } else {
        bool opener = ours;
        uint16_t port = v.dport;
        if (v.icmp == ICMP_ECHO_REPLY)
            return false;
        if (!allowed(dev, p, opener, v.proto, port)) {
            /* mid-connection, none known: a reply of one the other end
             * may open (filter.h) */
            bool syn = (v.tcp_flags & (TCP_SYN | TCP_ACK)) == TCP_SYN;
            if (v.proto != IPPROTO_TCP || syn || !allowed(dev, p, !ours, v.proto, v.sport))
                return false;
            opener = !ours;
            port = v.sport;
        }
        if (!(e = add(dev, p, &k, ours, now)))
            return false;
        e->ours = opener;
        e->port = port;
    }
    if (e->ours != ours)
        e->replied = 1;
    if (v.tcp_flags & (TCP_FIN | TCP_RST))
        e->closing = 1;
    e->seen_ns = now;
    return true;
}

bool filter_out(struct device *dev, struct peer *p, const uint8_t *ip, uint32_t len,
                uint64_t now)
{
    return filter(dev, p, ip, len, true, now);
}

bool filter_in(struct device *dev, struct peer *p, const uint8_t *ip, uint32_t len,
               uint64_t now)
{
    return filter(dev, p, ip, len, false, now);
}
