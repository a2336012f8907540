/* SPDX-License-Identifier: MIT */
/* The checks that need the whole cluster file, run after every line was
 * read (the [cluster] section may follow the nodes): required sections and
 * keys, each node address against the network, the mtu against the
 * network's family, and names, addresses and public keys unique across
 * nodes. A duplicate is reported on its later line, naming the earlier. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/cluster_int.h"
#include "config/routes.h"

typedef const struct cluster_work_node *node_ptr;

static void check_presence(struct cluster_parser *p)
{
    if (!p->cluster_line)
        cluster_diag_add(p, 0, "missing [cluster] section");
    /* With a registry, nodes may all come from it. */
    if (p->n_nodes == 0 && !p->settings.registry.n_endpoints)
        cluster_diag_add(p, 0, "no nodes (add at least one [node NAME] section, or a "
                         "registry)");
}

/* The registry's keys come as a set: each needs `registry`, a client
 * certificate its key (and the other way round), a user its password; and
 * a password goes over TLS (registry-ca or registry-cert: https://) unless
 * the file says registry-insecure = yes. */
static void check_registry(struct cluster_parser *p)
{
    static const enum cluster_key needs_registry[] = {
        CLUSTER_KEY_REGISTRY_CA, CLUSTER_KEY_REGISTRY_CERT, CLUSTER_KEY_REGISTRY_KEY,
        CLUSTER_KEY_REGISTRY_USER, CLUSTER_KEY_REGISTRY_PASSWORD_FILE, CLUSTER_KEY_REGISTRY_TTL,
        CLUSTER_KEY_REGISTRY_INSECURE,
    };
    static const char *const names[] = {
        "registry-ca", "registry-cert", "registry-key", "registry-user",
        "registry-password-file", "registry-ttl", "registry-insecure",
    };
    const int *at = p->key_line;

    if (!at[CLUSTER_KEY_REGISTRY]) {
        for (size_t i = 0; i < sizeof(needs_registry) / sizeof(needs_registry[0]); i++)
            if (at[needs_registry[i]])
                cluster_diag_add(p, at[needs_registry[i]], "%s without registry", names[i]);
        return;
    }
    if (!at[CLUSTER_KEY_REGISTRY_CERT] != !at[CLUSTER_KEY_REGISTRY_KEY])
        cluster_diag_add(p, at[CLUSTER_KEY_REGISTRY_CERT] ? at[CLUSTER_KEY_REGISTRY_CERT]
                                                         : at[CLUSTER_KEY_REGISTRY_KEY],
                         "registry-cert and registry-key go together (a client certificate "
                         "and its private key)");
    if (!at[CLUSTER_KEY_REGISTRY_USER] != !at[CLUSTER_KEY_REGISTRY_PASSWORD_FILE])
        cluster_diag_add(p, at[CLUSTER_KEY_REGISTRY_USER] ? at[CLUSTER_KEY_REGISTRY_USER]
                                                         : at[CLUSTER_KEY_REGISTRY_PASSWORD_FILE],
                         "registry-user and registry-password-file go together");
    if (at[CLUSTER_KEY_REGISTRY_USER] && !at[CLUSTER_KEY_REGISTRY_CA] &&
        !at[CLUSTER_KEY_REGISTRY_CERT] && !p->settings.registry.insecure)
        cluster_diag_add(p, at[CLUSTER_KEY_REGISTRY_USER],
                         "registry-user over plain http:// sends its password in clear; give "
                         "registry-ca (TLS), or say registry-insecure = yes");
}

static void check_mtu(struct cluster_parser *p)
{
    const struct cluster *c = &p->settings;

    if (p->network_ok && c->mtu_set && c->network.family == AF_INET6 &&
        c->mtu < CLUSTER_MTU_MIN_IPV6)
        cluster_diag_add(p, p->key_line[CLUSTER_KEY_MTU], "mtu %u is below %u, "
                         "the minimum for an ipv6 network", (unsigned)c->mtu,
                         CLUSTER_MTU_MIN_IPV6);
}

/* Counters are the cluster's business: served where only this machine
 * (loopback) or the overlay's members can reach them, unless the file
 * says otherwise. An overlay address is one node's own; `up` refuses it
 * on any other node (overlay:PORT fits them all). */
static void check_metrics(struct cluster_parser *p)
{
    const struct cluster_metrics *m = &p->settings.metrics;
    char text[CLUSTER_HOST_MAX + 3];

    if (m->at != CLUSTER_METRICS_ADDRESS || m->public_ok || cluster_addr_is_loopback(&m->addr))
        return;
    if (p->network_ok &&
        cluster_addr_in_network(&m->addr, &p->settings.network, p->settings.prefix))
        return;
    cluster_addr_format(&m->addr, text, sizeof(text));
    cluster_diag_add(p, p->key_line[CLUSTER_KEY_METRICS], "metrics address %s is neither "
                     "loopback nor in the overlay network: anyone who reaches it could read "
                     "the counters; use 127.0.0.1:PORT or overlay:PORT, or set "
                     "metrics-public = yes", text);
}

static void check_address(struct cluster_parser *p, node_ptr w)
{
    const struct cluster *c = &p->settings;
    char addr[CLUSTER_QUOTE_MAX], net[CLUSTER_QUOTE_MAX];
    int line = w->key_line[CLUSTER_NODE_KEY_ADDRESS];
    const struct cluster_addr *a = &w->node.address;

    cluster_addr_format(a, addr, sizeof(addr));
    cluster_addr_format(&c->network, net, sizeof(net));
    if (a->family != c->network.family)
        cluster_diag_add(p, line, "address %s is %s but network %s/%u is %s",
                         addr, a->family == AF_INET ? "ipv4" : "ipv6", net,
                         c->prefix, a->family == AF_INET ? "ipv6" : "ipv4");
    else if (!cluster_addr_in_network(a, &c->network, c->prefix))
        cluster_diag_add(p, line, "address %s is outside network %s/%u", addr,
                         net, c->prefix);
    else if (cluster_addr_equal(a, &c->network))
        cluster_diag_add(p, line, "address %s is the network address of %s/%u",
                         addr, net, c->prefix);
    else if (cluster_addr_is_broadcast(a, c->prefix))
        cluster_diag_add(p, line, "address %s is the broadcast address of %s/%u",
                         addr, net, c->prefix);
}

static void check_addresses(struct cluster_parser *p)
{
    if (!p->network_ok)
        return;             /* already an error; nothing to compare with */
    for (size_t i = 0; i < p->n_nodes; i++)
        if (p->nodes[i].address_ok)
            check_address(p, &p->nodes[i]);
}

/* Ties keep file order: the array is in file order, so compare positions. */
static int tie(const void *a, const void *b, int r)
{
    node_ptr x = *(const node_ptr *)a, y = *(const node_ptr *)b;

    return r ? r : (x > y) - (x < y);
}

static int cmp_name(node_ptr x, node_ptr y)
{
    return strcasecmp(x->node.name, y->node.name);
}

static int cmp_address(node_ptr x, node_ptr y)
{
    if (x->node.address.family != y->node.address.family)
        return x->node.address.family < y->node.address.family ? -1 : 1;
    return memcmp(x->node.address.bytes, y->node.address.bytes,
                  sizeof(x->node.address.bytes));
}

/* Public keys are public: an ordinary memcmp is fine for sorting them. */
static int cmp_key(node_ptr x, node_ptr y)
{
    return memcmp(x->node.public_key, y->node.public_key, CLUSTER_KEY_LEN);
}

static int sort_name(const void *a, const void *b)
{
    return tie(a, b, cmp_name(*(const node_ptr *)a, *(const node_ptr *)b));
}

static int sort_address(const void *a, const void *b)
{
    return tie(a, b, cmp_address(*(const node_ptr *)a, *(const node_ptr *)b));
}

static int sort_key(const void *a, const void *b)
{
    return tie(a, b, cmp_key(*(const node_ptr *)a, *(const node_ptr *)b));
}

/* A node whose header was bad still takes part in the other checks. */
static const char *name_of(node_ptr w)
{
    return w->name_ok ? w->node.name : "with a bad name";
}

static void report_name(struct cluster_parser *p, node_ptr later, node_ptr first)
{
    cluster_diag_add(p, later->node.line, "duplicate node name '%s' (also node "
                     "%s at line %d)", later->node.name, first->node.name,
                     first->node.line);
}

static void report_address(struct cluster_parser *p, node_ptr later,
                           node_ptr first)
{
    char text[CLUSTER_QUOTE_MAX];

    cluster_addr_format(&later->node.address, text, sizeof(text));
    cluster_diag_add(p, later->key_line[CLUSTER_NODE_KEY_ADDRESS],
                     "duplicate address %s (also node %s at line %d)", text,
                     name_of(first), first->key_line[CLUSTER_NODE_KEY_ADDRESS]);
}

static void report_key(struct cluster_parser *p, node_ptr later, node_ptr first)
{
    cluster_diag_add(p, later->key_line[CLUSTER_NODE_KEY_PUBLIC_KEY],
                     "duplicate public-key (also node %s at line %d)",
                     name_of(first),
                     first->key_line[CLUSTER_NODE_KEY_PUBLIC_KEY]);
}

static bool has_name(node_ptr w) { return w->name_ok; }
static bool has_address(node_ptr w) { return w->address_ok; }
static bool has_key(node_ptr w) { return w->key_ok; }

struct dup_check {
    bool (*valid)(node_ptr);
    int (*sort)(const void *, const void *);
    int (*cmp)(node_ptr, node_ptr);
    void (*report)(struct cluster_parser *, node_ptr later, node_ptr first);
};

static const struct dup_check dup_checks[] = {
    { has_name, sort_name, cmp_name, report_name },
    { has_address, sort_address, cmp_address, report_address },
    { has_key, sort_key, cmp_key, report_key },
};

/* Sorts the nodes whose field is valid; equal runs are duplicates of the
 * run's first (earliest) node. */
static void check_duplicates(struct cluster_parser *p, const struct dup_check *d,
                             node_ptr *sorted)
{
    size_t n = 0;

    for (size_t i = 0; i < p->n_nodes; i++)
        if (d->valid(&p->nodes[i]))
            sorted[n++] = &p->nodes[i];
    if (n < 2)
        return;
    qsort(sorted, n, sizeof(*sorted), d->sort);
    node_ptr first = sorted[0];
    for (size_t i = 1; i < n; i++) {
        if (d->cmp(first, sorted[i]) == 0)
            d->report(p, sorted[i], first);
        else
            first = sorted[i];
    }
}

/* A name a node goes by: its own, or an alias. */
struct known_name {
    const char *name;
    node_ptr node;
    bool alias;
};

static int cmp_known(const void *a, const void *b)
{
    const struct known_name *x = a, *y = b;
    int c = strcasecmp(x->name, y->name);

    /* Equal names: the node's own name first, then by line. */
    if (c || x->alias != y->alias)
        return c ? c : (x->alias ? 1 : -1);
    return (x->node->node.line > y->node->node.line) - (x->node->node.line < y->node->node.line);
}

/* An alias names one node only: not another node's name or alias, nor its
 * own node's name again. (Two nodes of one name are check_duplicates'.) */
static void check_aliases(struct cluster_parser *p)
{
    size_t n = 0, cap = 0;
    struct known_name *all;

    for (size_t i = 0; i < p->n_nodes; i++)
        cap += 1u + p->nodes[i].node.n_aliases;
    if (!(all = malloc(cap * sizeof(*all)))) {
        p->oom = true;
        return;
    }
    for (size_t i = 0; i < p->n_nodes; i++) {
        node_ptr w = &p->nodes[i];
        if (w->name_ok)
            all[n++] = (struct known_name){ w->node.name, w, false };
        for (unsigned k = 0; k < w->node.n_aliases; k++)
            all[n++] = (struct known_name){ w->node.aliases[k], w, true };
    }
    qsort(all, n, sizeof(*all), cmp_known);
    for (size_t i = 1; i < n; i++) {
        const struct known_name *first = &all[i - 1], *later = &all[i];
        if (strcasecmp(first->name, later->name) || !later->alias)
            continue;
        cluster_diag_add(p, later->node->key_line[CLUSTER_NODE_KEY_ALIASES],
                         "alias '%s' is already %s of node %s", later->name,
                         first->alias ? "an alias" : "the name", name_of(first->node));
    }
    free(all);
}

/* The blocklist is the authority's companion: a key the file lists as a
 * node and revokes at once is a mistake the person should hear of. */
static void check_revoked(struct cluster_parser *p)
{
    const struct cluster *c = &p->settings;

    if (c->n_revoked && !c->has_authority)
        cluster_diag_add(p, p->key_line[CLUSTER_KEY_REVOKED], "revoked needs authority: it "
                         "refuses keys that show a certificate; a node the file does not "
                         "list is refused already");
    for (size_t i = 0; i < p->n_nodes; i++)
        for (size_t k = 0; p->nodes[i].key_ok && k < c->n_revoked; k++)
            if (!memcmp(p->nodes[i].node.public_key, c->revoked[k], CLUSTER_KEY_LEN))
                cluster_diag_add(p, p->key_line[CLUSTER_KEY_REVOKED], "node %s's public-key "
                                 "is revoked: remove the node or the key", p->nodes[i].node.name);
}

static void route_fault(void *ctx, size_t node, const char *message)
{
    struct cluster_parser *p = ctx;

    cluster_diag_add(p, p->nodes[node].key_line[CLUSTER_NODE_KEY_ROUTES], "%s", message);
}

/* Grants against each other, the network and the endpoints
 * (config/routes.h). */
static void check_routes(struct cluster_parser *p)
{
    const struct cluster_node **nodes;
    size_t n = 0;

    for (size_t i = 0; i < p->n_nodes; i++) {
        n += p->nodes[i].node.n_routes > 0;
        const struct cluster_node *nd = &p->nodes[i].node;
        for (unsigned k = 0; k < nd->n_route_names; k++) {
            bool inside = false;
            for (unsigned r = 0; r < nd->n_routes; r++)
                inside |= cluster_route_holds(&nd->routes[r], &nd->route_names[k].addr);
            if (!inside)
                cluster_diag_add(p, p->nodes[i].key_line[CLUSTER_NODE_KEY_ROUTE_NAMES],
                                 "route-name %s: its address is in none of this node's routes",
                                 nd->route_names[k].name);
        }
        if (p->nodes[i].key_line[CLUSTER_NODE_KEY_MASQUERADE] && !p->nodes[i].node.n_routes)
            cluster_diag_add(p, p->nodes[i].key_line[CLUSTER_NODE_KEY_MASQUERADE],
                             "masquerade without routes (it says how the node forwards them)");
    }
    if (!n)
        return;
    if (!(nodes = malloc(p->n_nodes * sizeof(*nodes)))) {
        p->oom = true;
        return;
    }
    /* Every node (the endpoints count), indexed as p->nodes. */
    for (size_t i = 0; i < p->n_nodes; i++)
        nodes[i] = &p->nodes[i].node;
    cluster_routes_check(nodes, p->n_nodes, p->network_ok ? &p->settings.network : &(struct cluster_addr){ 0 },
                         p->settings.prefix, route_fault, p);
    free(nodes);
}

void cluster_check_all(struct cluster_parser *p)
{
    node_ptr *sorted;

    check_presence(p);
    cluster_keys_require(p);
    check_mtu(p);
    check_metrics(p);
    check_registry(p);
    check_revoked(p);
    check_addresses(p);
    check_aliases(p);
    check_routes(p);
    if (p->n_nodes < 2)
        return;
    sorted = malloc(p->n_nodes * sizeof(*sorted));
    if (!sorted) {
        p->oom = true;
        return;
    }
    for (size_t i = 0; i < sizeof(dup_checks) / sizeof(dup_checks[0]); i++)
        check_duplicates(p, &dup_checks[i], sorted);
    free(sorted);
}
