/* SPDX-License-Identifier: MIT */
/* The control socket's `set=1`, applied to the device through uapi.h's
 * callbacks. The cluster file decides who the peers are and what they may
 * send, so only the subset that leaves the mesh as the file says is
 * supported:
 *
 *   per peer (the peer must be a node of the cluster, else -ENOENT):
 *     endpoint                        -> peer_set_endpoint
 *     persistent_keepalive_interval   -> peer_set_persistent_keepalive
 *     preshared_key                   -> peer_set_psk (zero removes it)
 *     allowed_ip                      only the peer's own overlay address,
 *                                     as /32 or /128 (else -EINVAL)
 *     replace_allowed_ips, update_only accepted, change nothing
 *     protocol_version                1 only
 *   interface:
 *     listen_port                     only the port already in use
 *
 * Unsupported, answered -EINVAL before anything changes: private_key,
 * fwmark, replace_peers, remove. An unknown peer, another listen port or
 * another allowed IP stop the request where they stand, with the lines
 * before them applied, as wireguard-go does. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "config/addr.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/engine/model/device.h"

struct set_ctx {
    struct device *dev;
    struct peer *peer;     /* the section being applied */
    uint64_t now_ns;
};

static int on_listen_port(void *ctx, uint16_t port)
{
    const struct set_ctx *c = ctx;

    return port == c->dev->listen_port ? 0 : -EINVAL;
}

static int on_peer(void *ctx, const uint8_t pubkey[WG_KEY_LEN])
{
    struct set_ctx *c = ctx;

    /* Peers come from the cluster file; `wg set` cannot add one. */
    c->peer = device_peer_by_key(c->dev, pubkey);
    return c->peer ? 0 : -ENOENT;
}

static int on_no_op(void *ctx)
{
    (void)ctx;
    return 0;
}

static int on_psk(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    struct set_ctx *c = ctx;

    peer_set_psk(c->peer, key);
    return 0;
}

static int on_endpoint(void *ctx, const struct sockaddr *sa, socklen_t len)
{
    struct set_ctx *c = ctx;

    peer_set_endpoint(c->peer, sa, len);
    return 0;
}

static int on_keepalive(void *ctx, uint16_t seconds)
{
    struct set_ctx *c = ctx;

    peer_set_persistent_keepalive(c->peer, seconds, c->now_ns);
    return 0;
}

/* `wg set ... allowed-ips` may only restate what the cluster file says. */
static int on_allowed_ip(void *ctx, int family, const uint8_t *addr, unsigned cidr)
{
    const struct set_ctx *c = ctx;
    struct cluster_addr a = { .family = family };

    memcpy(a.bytes, addr, family == AF_INET6 ? 16 : 4);
    if (cidr != (family == AF_INET6 ? 128u : 32u) ||
        !cluster_addr_equal(&a, &c->peer->member.address))
        return -EINVAL;
    return 0;
}

static int on_protocol_version(void *ctx, unsigned version)
{
    (void)ctx;
    return version == UAPI_PROTOCOL_VERSION ? 0 : -EINVAL;
}

static const struct uapi_set_ops set_ops = {
    .listen_port = on_listen_port,
    .peer = on_peer,
    .peer_update_only = on_no_op,
    .peer_preshared_key = on_psk,
    .peer_endpoint = on_endpoint,
    .peer_keepalive = on_keepalive,
    .peer_replace_allowed_ips = on_no_op,
    .peer_allowed_ip = on_allowed_ip,
    .peer_protocol_version = on_protocol_version,
};

int control_set(struct device *dev, const char *body, size_t len, uint64_t now_ns)
{
    struct set_ctx c = { .dev = dev, .now_ns = now_ns };

    if (!dev)
        return -EINVAL;
    return uapi_apply_set(body, len, &set_ops, &c);
}
