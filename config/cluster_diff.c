/* SPDX-License-Identifier: MIT */
/* cluster_diff: nodes matched by name between two models; each compared
 * on what the engine acts on (key, overlay address, endpoint, the port it
 * listens on, the keepalive towards it), the effective values taken
 * (a node's port or keepalive may come from [cluster]), and the other
 * names it goes by, and a registered node's candidates. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cluster_diff.h"
#include "config/cluster_index.h"
#include "config/routes.h"

static bool same_endpoint(const struct cluster_node *a, const struct cluster_node *b)
{
    if (a->has_endpoint != b->has_endpoint)
        return false;
    if (!a->has_endpoint)
        return true;
    return a->endpoint.port == b->endpoint.port && !strcmp(a->endpoint.host, b->endpoint.host);
}

static bool same_aliases(const struct cluster_node *a, const struct cluster_node *b)
{
    if (a->n_aliases != b->n_aliases)
        return false;
    for (unsigned i = 0; i < a->n_aliases; i++)
        if (strcmp(a->aliases[i], b->aliases[i]))
            return false;
    return true;
}

/* In order, as written (a reordered line is a change, harmless to
 * apply), with how they are forwarded (masquerade). */
static bool same_routes(const struct cluster_node *a, const struct cluster_node *b)
{
    if (a->n_routes != b->n_routes || a->routed != b->routed ||
        a->n_route_names != b->n_route_names)
        return false;
    for (unsigned i = 0; i < a->n_route_names; i++)
        if (strcmp(a->route_names[i].name, b->route_names[i].name) ||
            !cluster_addr_equal(&a->route_names[i].addr, &b->route_names[i].addr))
            return false;
    for (unsigned i = 0; i < a->n_routes; i++)
        if (!cluster_route_equal(&a->routes[i], &b->routes[i]))
            return false;
    return true;
}

static bool same_cand(const struct cluster_cand *a, const struct cluster_cand *b)
{
    return a->port == b->port && cluster_addr_equal(&a->addr, &b->addr);
}

static bool same_candidates(const struct cluster_node *a, const struct cluster_node *b)
{
    if (a->n_candidates != b->n_candidates || a->has_observed != b->has_observed ||
        (a->has_observed && !same_cand(&a->observed, &b->observed)))
        return false;
    for (unsigned i = 0; i < a->n_candidates; i++)
        if (!same_cand(&a->candidates[i], &b->candidates[i]))
            return false;
    return true;
}

/* By name: each model numbers its group names in its own order. */
static bool same_groups(const struct cluster *old, const struct cluster_node *a,
                        const struct cluster *new, const struct cluster_node *b)
{
    char x[RULES_GROUPS_MAX * (RULES_GROUP_NAME_MAX + 1) + 1], y[sizeof(x)];

    if (rules_groups_format(&old->rules, a->groups, x, sizeof(x)) ||
        rules_groups_format(&new->rules, b->groups, y, sizeof(y)))
        return false;
    return !strcmp(x, y);
}

static unsigned node_changes(const struct cluster *old, const struct cluster_node *a,
                             const struct cluster *new, const struct cluster_node *b)
{
    unsigned what = 0;

    if (sodium_memcmp(a->public_key, b->public_key, CLUSTER_KEY_LEN))
        what |= CLUSTER_CHANGED_KEY;
    if (!cluster_addr_equal(&a->address, &b->address))
        what |= CLUSTER_CHANGED_ADDRESS;
    if (!same_endpoint(a, b))
        what |= CLUSTER_CHANGED_ENDPOINT;
    if (cluster_node_port(old, a) != cluster_node_port(new, b))
        what |= CLUSTER_CHANGED_PORT;
    if (cluster_node_keepalive(old, a) != cluster_node_keepalive(new, b))
        what |= CLUSTER_CHANGED_KEEPALIVE;
    if (!same_aliases(a, b))
        what |= CLUSTER_CHANGED_ALIASES;
    if (!same_candidates(a, b))
        what |= CLUSTER_CHANGED_CANDIDATES;
    if (!same_groups(old, a, new, b))
        what |= CLUSTER_CHANGED_GROUPS;
    if (!same_routes(a, b))
        what |= CLUSTER_CHANGED_ROUTES;
    return what;
}

static bool same_registry(const struct cluster_registry *a, const struct cluster_registry *b)
{
    if (a->n_endpoints != b->n_endpoints || a->ttl_s != b->ttl_s || strcmp(a->prefix, b->prefix) ||
        strcmp(a->ca, b->ca) || strcmp(a->cert, b->cert) || strcmp(a->key, b->key) ||
        strcmp(a->user, b->user) || strcmp(a->password_file, b->password_file) ||
        a->insecure != b->insecure)
        return false;
    for (size_t i = 0; i < a->n_endpoints; i++)
        if (strcmp(a->endpoints[i].host, b->endpoints[i].host) ||
            a->endpoints[i].port != b->endpoints[i].port)
            return false;
    return true;
}

static bool same_domains(const struct cluster_domains *a, const struct cluster_domains *b)
{
    if (a->n != b->n)
        return false;
    for (unsigned i = 0; i < a->n; i++)
        if (strcasecmp(a->name[i], b->name[i]))
            return false;
    return true;
}

static unsigned settings_changes(const struct cluster *old, const struct cluster *new)
{
    unsigned what = 0;

    if (!cluster_addr_equal(&old->network, &new->network) || old->prefix != new->prefix)
        what |= CLUSTER_CHANGED_NETWORK;
    if (old->mtu_set != new->mtu_set || (new->mtu_set && old->mtu != new->mtu))
        what |= CLUSTER_CHANGED_MTU;
    if (old->busy_poll_us != new->busy_poll_us)
        what |= CLUSTER_CHANGED_BUSY_POLL;
    if (old->hostnames_off != new->hostnames_off)
        what |= CLUSTER_CHANGED_HOSTNAMES;
    if (old->metrics.at != new->metrics.at || old->metrics.port != new->metrics.port ||
        old->metrics.public_ok != new->metrics.public_ok ||
        (new->metrics.at == CLUSTER_METRICS_ADDRESS &&
         !cluster_addr_equal(&old->metrics.addr, &new->metrics.addr)))
        what |= CLUSTER_CHANGED_METRICS;
    if (!same_registry(&old->registry, &new->registry))
        what |= CLUSTER_CHANGED_REGISTRY;
    if (!same_domains(&old->machine_domains, &new->machine_domains))
        what |= CLUSTER_CHANGED_MACHINE_DOMAINS;
    if (old->socket_buffer != new->socket_buffer)
        what |= CLUSTER_CHANGED_SOCKET_BUFFER;
    /* Who signs membership is the trust root: not swapped under running
     * sessions all at once. A rotation keeps a key in common at each
     * step (the old and the new trusted together, then the new alone:
     * docs/authority.md), and is taken live. */
    if (old->has_authority != new->has_authority ||
        (new->has_authority && !cluster_authority_shared(old, new)))
        what |= CLUSTER_CHANGED_AUTHORITY;
    return what;
}

static void push(struct cluster_diff *d, enum cluster_change_kind kind, unsigned what,
                 const struct cluster_node *a, const struct cluster_node *b)
{
    d->changes[d->n++] = (struct cluster_change){ kind, what, a, b };
}

int cluster_diff(const struct cluster *old, const struct cluster *new, struct cluster_diff *out)
{
    struct cluster_index *was = cluster_index_of(old), *is = cluster_index_of(new);
    int ret = -ENOMEM;

    memset(out, 0, sizeof(*out));
    out->changes = calloc(old->n_nodes + new->n_nodes + 1, sizeof(*out->changes));
    if (!out->changes || !was || !is) {
        cluster_diff_free(out);
        goto out;
    }
    out->settings = settings_changes(old, new);
    out->rules = !rules_equal(&old->rules, &new->rules);
    for (size_t i = 0; i < old->n_nodes; i++)
        if (!cluster_index_name(is, old->nodes[i].name))
            push(out, CLUSTER_NODE_REMOVED, 0, &old->nodes[i], NULL);
    for (size_t i = 0; i < new->n_nodes; i++) {
        const struct cluster_node *a = cluster_index_name(was, new->nodes[i].name);
        unsigned what = a ? node_changes(old, a, new, &new->nodes[i]) : 0;
        if (what)
            push(out, CLUSTER_NODE_CHANGED, what, a, &new->nodes[i]);
    }
    for (size_t i = 0; i < new->n_nodes; i++)
        if (!cluster_index_name(was, new->nodes[i].name))
            push(out, CLUSTER_NODE_ADDED, 0, NULL, &new->nodes[i]);
    ret = 0;
out:
    cluster_index_free(was);
    cluster_index_free(is);
    return ret;
}

void cluster_diff_free(struct cluster_diff *d)
{
    free(d->changes);
    memset(d, 0, sizeof(*d));
}

/* Appends the names of the bits set in `what` (names[i] for bit i),
 * comma-separated. */
static int append_names(char *buf, size_t len, size_t at, unsigned what,
                        const char *const *names, size_t n_names)
{
    bool first = true;

    for (size_t i = 0; i < n_names; i++) {
        if (!(what & (1u << i)))
            continue;
        int w = snprintf(buf + at, len - at, "%s%s", first ? "" : ", ", names[i]);
        if (w < 0 || (size_t)w >= len - at)
            return -ENOSPC;
        at += (size_t)w;
        first = false;
    }
    return 0;
}

static const char *const node_what[] = { "key", "address", "endpoint", "port", "keepalive",
                                         "aliases", "candidates", "groups", "routes" };
static const char *const settings_what[] = { "network", "mtu", "busy-poll", "hostnames",
                                              "metrics", "registry", "machine-domains",
                                              "authority", "socket-buffer" };

int cluster_change_format(const struct cluster_change *c, char *buf, size_t len)
{
    static const char *const verb[] = { "added", "removed", "changed" };
    const struct cluster_node *n = c->new_node ? c->new_node : c->old_node;
    int w;

    if (!len)
        return -ENOSPC;
    w = snprintf(buf, len, "%s %s%s", verb[c->kind], n->name,
                 c->kind == CLUSTER_NODE_CHANGED ? ": " : "");
    if (w < 0 || (size_t)w >= len)
        return -ENOSPC;
    if (c->kind != CLUSTER_NODE_CHANGED)
        return 0;
    return append_names(buf, len, (size_t)w, c->what, node_what,
                        sizeof(node_what) / sizeof(node_what[0]));
}

int cluster_settings_format(unsigned settings, char *buf, size_t len)
{
    if (!len)
        return -ENOSPC;
    buf[0] = '\0';
    return append_names(buf, len, 0, settings, settings_what,
                        sizeof(settings_what) / sizeof(settings_what[0]));
}
