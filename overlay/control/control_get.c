/* SPDX-License-Identifier: MIT */
/* The control socket's `get` answers, read from the device: get=1 exactly as
 * wireguard-go writes it (so `wg show` and `wg showconf` work), and
 * get=ddpnet with the names, overlay addresses and rates the CLI shows.
 * Each is written whole into one buffer sized for every peer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/routes.h"
#include "overlay/base/clock.h"
#include "overlay/control/control_int.h"
#include "overlay/membership/certs.h"
#include "overlay/control/uapi.h"
#include "overlay/membership/state.h"
#include "overlay/engine/model/device.h"
#include "overlay/registry/registry.h"

/* Upper bounds of the text written, for sizing the buffer. The longest
 * line is a 64-digit key or an IPv6 endpoint with a numeric zone (under 80
 * bytes); a peer takes at most thirteen lines (about 600 bytes) in either
 * response; the interface section, its few long lines (the registry's
 * endpoint and error, the cluster's sum) and some twenty short ones, and
 * the peers removed at their certificate's end. */
#define GET_ROUTES_TEXT_MAX (CLUSTER_ROUTES_MAX * (CLUSTER_ROUTE_TEXT_MAX + 8u))
#define GET_PEER_TEXT_MAX   (800u + GET_ROUTES_TEXT_MAX)
#define GET_IFACE_TEXT_MAX  (1420u + GET_ROUTES_TEXT_MAX + \
                             MEMBERSHIP_ENDED_MAX * (CLUSTER_NAME_MAX + 36u))

static int alloc_for_peers(const struct device *dev, struct uapi_buf *b)
{
    size_t cap;
    char *p;

    if (dev->n_peers > (SIZE_MAX - GET_IFACE_TEXT_MAX) / GET_PEER_TEXT_MAX)
        return -ENOMEM;
    cap = GET_IFACE_TEXT_MAX + dev->n_peers * GET_PEER_TEXT_MAX;
    p = malloc(cap);
    if (!p)
        return -ENOMEM;
    uapi_buf_init(b, p, cap);
    return 0;
}

/* Hands the text over, or wipes it when it did not fit. */
static int finish(struct uapi_buf *b, char **out, size_t *len)
{
    uapi_put_errno(b, 0);
    if (b->overflow) {
        sodium_memzero(b->p, b->cap);
        free(b->p);
        return -ENOBUFS;
    }
    *out = b->p;
    *len = b->len;
    return 0;
}

static unsigned addr_bits(const struct cluster_addr *a)
{
    return a->family == AF_INET6 ? 128u : 32u;
}

/* --- get=1 ---------------------------------------------------------------------- */

/* The peer's lines in wireguard-go's order. The preshared key is written
 * only when set: `wg` treats an all-zero one as none anyway. */
static void put_wg_peer(struct uapi_buf *b, const struct peer *p)
{
    uapi_put_key(b, UAPI_KEY_PUBLIC_KEY, p->public_key);
    if (p->wg.has_psk)
        uapi_put_key(b, UAPI_KEY_PRESHARED_KEY, p->wg.handshake.psk);
    uapi_put_u64(b, UAPI_KEY_PROTOCOL_VERSION, UAPI_PROTOCOL_VERSION);
    if (p->path.endpoint.sa.sa_family != AF_UNSPEC)
        uapi_put_endpoint(b, &p->path.endpoint.sa);
    uapi_put_u64(b, UAPI_KEY_LAST_HANDSHAKE_SEC, (uint64_t)p->wg.last_handshake.tv_sec);
    uapi_put_u64(b, UAPI_KEY_LAST_HANDSHAKE_NSEC, (uint64_t)p->wg.last_handshake.tv_nsec);
    uapi_put_u64(b, UAPI_KEY_TX_BYTES, p->live.tx_bytes);
    uapi_put_u64(b, UAPI_KEY_RX_BYTES, p->live.rx_bytes);
    uapi_put_u64(b, UAPI_KEY_KEEPALIVE, p->wg.persistent_keepalive);
    /* The overlay routes exactly one address to each peer. */
    uapi_put_allowed_ip(b, p->member.address.family, p->member.address.bytes,
                        addr_bits(&p->member.address));
}

int control_get_wg(struct device *dev, char **out, size_t *len)
{
    struct uapi_buf b;
    int ret;

    if (!dev || !out || !len)
        return -EINVAL;
    ret = alloc_for_peers(dev, &b);
    if (ret < 0)
        return ret;
    if (dev->local)
        uapi_put_key(&b, UAPI_KEY_PRIVATE_KEY, dev->local->private_key);
    if (dev->listen_port)
        uapi_put_u64(&b, UAPI_KEY_LISTEN_PORT, dev->listen_port);
    for (size_t i = 0; i < dev->n_peers; i++)
        put_wg_peer(&b, dev->peers[i]);
    return finish(&b, out, len);
}

/* --- get=ddpnet --------------------------------------------------------------------- */

static void put_addr(struct uapi_buf *b, const char *key, const struct cluster_addr *a)
{
    char text[CLUSTER_HOST_MAX + 3];

    /* An address that cannot be written leaves the response invalid. */
    if (cluster_addr_format(a, text, sizeof(text)) < 0)
        b->overflow = true;
    else
        uapi_put_str(b, key, text);
}

/* The default MASTER_ADDR of `ddpnet env`: the file's first node; in a
 * file of no node (all registered), the node with the lowest address,
 * which every node of the mesh agrees on. */
static const struct cluster_node *master_of(const struct device *dev)
{
    const struct cluster_node *m = &dev->cluster.nodes[0];

    if (dev->membership->file.n_nodes || !dev->membership->registry)
        return m;
    for (size_t i = 1; i < dev->cluster.n_nodes; i++) {
        const struct cluster_addr *a = &dev->cluster.nodes[i].address;
        if (a->family == m->address.family &&
            memcmp(a->bytes, m->address.bytes, a->family == AF_INET ? 4 : 16) < 0)
            m = &dev->cluster.nodes[i];
    }
    return m;
}

/* The prefixes the device routes to via (NULL: those this node carries),
 * one route= line each (issue 60), from the table the data path runs:
 * a granted node that is pending carries nothing yet and is not listed. */
static void put_routes(struct uapi_buf *b, const struct device *dev, const struct peer *via)
{
    const struct route_table *t = device_routes(dev);
    char text[CLUSTER_ROUTE_TEXT_MAX + 1];

    for (size_t i = 0; t && i < t->n; i++) {
        if (t->e[i].via != via)
            continue;
        if (cluster_route_format(&t->e[i].route, text, sizeof(text)) < 0)
            b->overflow = true;
        else
            uapi_put_str(b, CONTROL_KEY_ROUTE, text);
    }
}

static void put_ddpnet_iface(struct uapi_buf *b, const struct device *dev)
{
    const struct cluster_node *master = master_of(dev);

    uapi_put_str(b, CONTROL_KEY_INTERFACE, dev->ifname);
    uapi_put_str(b, CONTROL_KEY_SELF, dev->self->name);
    put_addr(b, CONTROL_KEY_ADDRESS, &dev->self->address);
    uapi_put_u64(b, CONTROL_KEY_PREFIX, dev->cluster.prefix);
    uapi_put_u64(b, UAPI_KEY_LISTEN_PORT, dev->listen_port);
    uapi_put_str(b, CONTROL_KEY_MASTER, master->name);
    put_addr(b, CONTROL_KEY_MASTER_ADDRESS, &master->address);
    uapi_put_u64(b, CONTROL_KEY_MTU, dev->mtu);
    uapi_put_u64(b, CONTROL_KEY_HINT_BYTES, dev->stats.hint_bytes);
    uapi_put_u64(b, CONTROL_KEY_HINT_REFUSED, dev->stats.hint_refused);
    uapi_put_u64(b, CONTROL_KEY_RELAY_TRIALS_FAILED, dev->stats.relay_trials_failed);
    uapi_put_u64(b, CONTROL_KEY_RELAY_DROPPED, dev->stats.relay_dropped);
    uapi_put_u64(b, CONTROL_KEY_DROPPED_SOCKET, dev->stats.dropped_socket_overflow);
    uapi_put_u64(b, CONTROL_KEY_DROPPED_TUN, dev->stats.dropped_tun_queue);
    if (dev->socket_buffer)
        uapi_put_u64(b, CONTROL_KEY_SOCKET_BUFFER, dev->socket_buffer);
    uapi_put_u64(b, CONTROL_KEY_DROPPED_QUEUE, dev->stats.dropped_queue_delay);
    uapi_put_u64(b, CONTROL_KEY_ECN_MARKED, dev->stats.ecn_marked);
    uapi_put_u64(b, CONTROL_KEY_RULES, dev->cluster.rules.n);
    if (dev->cluster.rules.n)
        uapi_put_u64(b, CONTROL_KEY_RULE_CONNS, conntrack_count(&dev->conntrack, clock_now_ns()));
    uapi_put_u64(b, CONTROL_KEY_DROPPED_RULE, dev->stats.dropped_rule);
    uapi_put_u64(b, CONTROL_KEY_REFUSED_RULE, dev->stats.refused_rule);
    uapi_put_u64(b, CONTROL_KEY_RULE_TABLE_FULL, dev->conntrack.full);
    uapi_put_u64(b, CONTROL_KEY_RULE_PEER_FULL, dev->conntrack.peer_full);
    put_routes(b, dev, NULL);
    if (dev->self->n_routes)
        uapi_put_u64(b, CONTROL_KEY_MASQUERADE, !dev->self->routed);
    if (dev->membership->certs)
        uapi_put_u64(b, CONTROL_KEY_CERT_ROUTES_REFUSED, dev->membership->cert_routes_refused);
    if (dev->membership->registry) {
        struct registry_status rs;
        registry_status(dev->membership->registry, &rs);
        uapi_put_str(b, CONTROL_KEY_REGISTRY_STATE, registry_state_name(rs.state));
        uapi_put_u64(b, CONTROL_KEY_REGISTRY_REVISION, (uint64_t)dev->membership->registry_revision);
        if (rs.endpoint[0])
            uapi_put_str(b, CONTROL_KEY_REGISTRY_ENDPOINT, rs.endpoint);
        if (rs.error[0])
            uapi_put_str(b, CONTROL_KEY_REGISTRY_ERROR, rs.error);
    }
    if (dev->membership->cluster_applied_unix) {
        char hex[2 * MEMBERSHIP_CLUSTER_SUM_LEN + 1];
        sodium_bin2hex(hex, sizeof(hex), dev->membership->cluster_sum, sizeof(dev->membership->cluster_sum));
        uapi_put_str(b, CONTROL_KEY_CLUSTER_SUM, hex);
        uapi_put_u64(b, CONTROL_KEY_CLUSTER_APPLIED, dev->membership->cluster_applied_unix);
    }
}

/* The path: the endpoint in use (the relay's, when relayed), direct or
 * relayed and through whom (or unreachable: packets to it are refused
 * until a handshake completes; or pending: a registry record its key has
 * not stated, to which nothing is routed; or waiting: somewhere to send,
 * but no handshake completed yet, so nothing says the path works), and
 * the round trip. */
const char *control_path_name(const struct peer *p)
{
    if (p->member.pending)
        return CONTROL_PATH_PENDING;
    if (p->wg.no_answer)
        return CONTROL_PATH_UNREACHABLE;
    if (!p->live.reachable && path_usable(p))
        return CONTROL_PATH_WAITING;
    if (p->path.via)
        return CONTROL_PATH_RELAY;
    if (p->path.endpoint.sa.sa_family != AF_UNSPEC)
        return CONTROL_PATH_DIRECT;
    return NULL;
}

static void put_path(struct uapi_buf *b, const struct peer *p)
{
    const union endpoint *ep = p->path.via ? &p->path.via->path.endpoint : &p->path.endpoint;
    const char *path = control_path_name(p);

    if (ep->sa.sa_family != AF_UNSPEC)
        uapi_put_endpoint(b, &ep->sa);
    if (path)
        uapi_put_str(b, CONTROL_KEY_PATH, path);
    if (path && !strcmp(path, CONTROL_PATH_RELAY))
        uapi_put_str(b, CONTROL_KEY_VIA, p->path.via->member.name);
    if (path_usable(p))
        uapi_put_u64(b, CONTROL_KEY_PATH_MTU, path_mtu(p));
    if (p->dev->flow_count > 1 && !p->path.via && path_usable(p))
        uapi_put_u64(b, CONTROL_KEY_FLOWS, path_flows(p));
    if (p->disco.state.rtt_ns)
        uapi_put_u64(b, CONTROL_KEY_RTT_US, p->disco.state.rtt_ns / NS_PER_US);
}

static void put_ddpnet_peer(struct uapi_buf *b, const struct peer *p, uint64_t now_ns)
{
    uapi_put_key(b, UAPI_KEY_PUBLIC_KEY, p->public_key);
    uapi_put_str(b, CONTROL_KEY_NAME, p->member.name);
    put_addr(b, CONTROL_KEY_ADDRESS, &p->member.address);
    put_path(b, p);
    put_routes(b, p->dev, p);
    uapi_put_u64(b, UAPI_KEY_LAST_HANDSHAKE_SEC, (uint64_t)p->wg.last_handshake.tv_sec);
    uapi_put_u64(b, UAPI_KEY_LAST_HANDSHAKE_NSEC, (uint64_t)p->wg.last_handshake.tv_nsec);
    uapi_put_u64(b, UAPI_KEY_RX_BYTES, p->live.rx_bytes);
    uapi_put_u64(b, UAPI_KEY_TX_BYTES, p->live.tx_bytes);
    uapi_put_u64(b, CONTROL_KEY_RX_RATE, rate_read(&p->live.rx_rate, now_ns));
    uapi_put_u64(b, CONTROL_KEY_TX_RATE, rate_read(&p->live.tx_rate, now_ns));
}

/* With an authority: when the certificate of key stops counting (unix
 * seconds), where the node holds one (a node of the file needs none). */
static void put_cert_expiry(struct uapi_buf *b, const struct device *dev,
                            const uint8_t key[CLUSTER_KEY_LEN])
{
    const struct cert *c = dev->membership->certs ? certs_member(dev->membership->certs, key) : NULL;

    if (c)
        uapi_put_u64(b, CONTROL_KEY_CERT_EXPIRES,
                     c->has_token && c->token.not_after < c->not_after ? c->token.not_after
                                                                       : c->not_after);
}

/* Ours: the store's, or, once it ended and the store let it go, the one
 * we say (so that status and doctor tell an end from no certificate). */
static void put_self_cert_expiry(struct uapi_buf *b, const struct device *dev)
{
    struct cert c;

    if (dev->membership->certs && certs_member(dev->membership->certs, dev->self->public_key))
        put_cert_expiry(b, dev, dev->self->public_key);
    else if (dev->membership->certs && dev->self_cert && !cert_parse(dev->self_cert, &c))
        uapi_put_u64(b, CONTROL_KEY_CERT_EXPIRES, cert_end(&c));
}

/* With an authority: the clash this node lost, where there is one. */
static void put_clash(struct uapi_buf *b, const struct device *dev)
{
    const struct certs_clash *c = dev->membership->certs ? certs_clash(dev->membership->certs) : NULL;
    char key[CERT_KEY_TEXT_LEN + 1];

    if (!c || !c->on)
        return;
    cert_key_format(c->holder_key, key);
    uapi_put_str(b, CONTROL_KEY_CLASH_HOLDER, c->holder);
    uapi_put_str(b, CONTROL_KEY_CLASH_KEY, key);
    uapi_put_u64(b, CONTROL_KEY_CLASH_DERIVED, c->derived);
}

/* With an authority: the peers removed lately at their certificate's end. */
static void put_ended(struct uapi_buf *b, const struct device *dev)
{
    char v[CLUSTER_NAME_MAX + 24];

    for (size_t i = 0; dev->membership->certs && i < dev->membership->n_ended; i++) {
        snprintf(v, sizeof(v), "%llu %s", (unsigned long long)dev->membership->ended[i].at,
                 dev->membership->ended[i].name);
        uapi_put_str(b, CONTROL_KEY_CERT_ENDED, v);
    }
}

int control_get_ddpnet(struct device *dev, uint64_t now_ns, char **out, size_t *len)
{
    struct uapi_buf b;
    int ret;

    if (!dev || !dev->self || dev->cluster.n_nodes == 0 || !out || !len)
        return -EINVAL;
    ret = alloc_for_peers(dev, &b);
    if (ret < 0)
        return ret;
    device_read_kernel_drops(dev);
    put_ddpnet_iface(&b, dev);
    put_self_cert_expiry(&b, dev);
    put_clash(&b, dev);
    put_ended(&b, dev);
    for (size_t i = 0; i < dev->n_peers; i++) {
        if (dev->peers[i]->member.probation)   /* a stranger, no member (yet) */
            continue;
        put_ddpnet_peer(&b, dev->peers[i], now_ns);
        put_cert_expiry(&b, dev, dev->peers[i]->public_key);
    }
    return finish(&b, out, len);
}

/* --- get=ddpnet-env ----------------------------------------------------------------- */

/* What `ddpnet env` needs and nothing more: the interface, this node, the
 * master, and each peer's public key (which opens its section), name and
 * overlay address. Any local user may ask (control.h), so nothing here
 * may be secret or say more than the hosts block and `wg`'s public half
 * already do: no endpoints, no handshakes, no counters. */
int control_get_env(struct device *dev, char **out, size_t *len)
{
    const struct cluster_node *master;
    struct uapi_buf b;
    int ret;

    if (!dev || !dev->self || dev->cluster.n_nodes == 0 || !out || !len)
        return -EINVAL;
    ret = alloc_for_peers(dev, &b);
    if (ret < 0)
        return ret;
    master = master_of(dev);
    uapi_put_str(&b, CONTROL_KEY_INTERFACE, dev->ifname);
    uapi_put_str(&b, CONTROL_KEY_SELF, dev->self->name);
    put_addr(&b, CONTROL_KEY_ADDRESS, &dev->self->address);
    uapi_put_u64(&b, CONTROL_KEY_PREFIX, dev->cluster.prefix);
    uapi_put_u64(&b, UAPI_KEY_LISTEN_PORT, dev->listen_port);
    uapi_put_str(&b, CONTROL_KEY_MASTER, master->name);
    put_addr(&b, CONTROL_KEY_MASTER_ADDRESS, &master->address);
    for (size_t i = 0; i < dev->n_peers; i++) {
        if (dev->peers[i]->member.probation)
            continue;
        uapi_put_key(&b, UAPI_KEY_PUBLIC_KEY, dev->peers[i]->public_key);
        uapi_put_str(&b, CONTROL_KEY_NAME, dev->peers[i]->member.name);
        put_addr(&b, CONTROL_KEY_ADDRESS, &dev->peers[i]->member.address);
    }
    return finish(&b, out, len);
}

/* --- get=ddpnet-certs ---------------------------------------------------------------- */

int control_get_certs(struct device *dev, char **out, size_t *len)
{
    const struct certs *s = dev ? dev->membership->certs : NULL;
    char text[CERT_TEXT_MAX + 1], *buf = NULL;
    size_t size = 0;
    FILE *f;

    if (!s)
        return -EPERM;
    if (!(f = open_memstream(&buf, &size)))
        return -ENOMEM;
    for (size_t i = 0; i < certs_count(s); i++)
        if (!cert_format(certs_at(s, i), text, sizeof(text)))
            fprintf(f, "%s=%s\n", CONTROL_KEY_CERT, text);
    fprintf(f, "%s=0\n\n", UAPI_KEY_ERRNO);
    if (fclose(f)) {
        free(buf);
        return -ENOMEM;
    }
    *out = buf;
    *len = size;
    return 0;
}
