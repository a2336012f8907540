/* members_reload: parse, check, diff, then apply in two steps -- first
 * everything that can fail (new peers, a larger index table, the new
 * peers array), then the swap, which cannot -- so a reload is applied
 * whole or not at all. The crypto workers are drained and the relay's
 * pending sends flushed first: no job or send in flight names a peer that
 * goes. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <stdarg.h>

#include <sodium.h>

#include "config/cluster_diff.h"
#include "crypto/blake2s.h"
#include "overlay/base/log.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/engine.h"
#include "overlay/membership/hosts.h"
#include "overlay/membership/members.h"
#include "overlay/registry/registry.h"

#define SAY_MAX 512u

__attribute__((format(printf, 4, 5)))
static void sayf(members_say say, void *ctx, const char *kind, const char *fmt, ...)
{
    char line[SAY_MAX];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    say(ctx, kind, line);
}

void members_checksum(const char *text, size_t len, uint8_t out[DEVICE_CLUSTER_SUM_LEN])
{
    blake2s(out, DEVICE_CLUSTER_SUM_LEN, (const uint8_t *)text, len, NULL, 0);
}

/* --- the names block ---------------------------------------------------------- */

/* The machine names a node's line may carry: this node's own, or what a
 * peer said of itself (hostnames = off: none). */
static unsigned machine_names(struct device *dev, const struct cluster_node *node,
                              const char (**names)[DISCO_NAME_MAX + 1])
{
    struct peer *p;

    if (dev->cluster.hostnames_off)
        return 0;
    if (node == dev->self) {
        *names = dev->self_names;
        return dev->n_self_names;
    }
    if (!(p = device_peer_by_key(dev, node->public_key)))
        return 0;
    *names = p->names;
    return p->n_names;
}

/* Every name a node's line would carry -- its node name and aliases (the
 * file's word), the names its machine goes by (a node's word about
 * itself) -- once per node, sorted, so that how many nodes claim a name is
 * a binary search, not a walk of the cluster per name. */
struct claims {
    const char **names;
    size_t n;
};

static int by_name(const void *a, const void *b)
{
    return strcasecmp(*(const char *const *)a, *(const char *const *)b);
}

static void claim(struct claims *cl, size_t from, const char *name)
{
    for (size_t i = from; i < cl->n; i++)
        if (!strcasecmp(cl->names[i], name))
            return;                       /* this node claims it already */
    cl->names[cl->n++] = name;
}

static int claims_make(struct device *dev, struct claims *cl, unsigned per_node)
{
    const struct cluster *c = &dev->cluster;
    const char (*names)[DISCO_NAME_MAX + 1];

    cl->n = 0;
    if (!(cl->names = calloc(c->n_nodes * per_node + 1, sizeof(*cl->names))))
        return -ENOMEM;
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *node = &c->nodes[i];
        size_t from = cl->n;
        claim(cl, from, node->name);
        for (unsigned k = 0; k < node->n_aliases; k++)
            claim(cl, from, node->aliases[k]);
        for (unsigned k = machine_names(dev, node, &names); k-- > 0;)
            claim(cl, from, names[k]);
    }
    qsort(cl->names, cl->n, sizeof(*cl->names), by_name);
    return 0;
}

/* How many nodes' lines would carry `name`. */
static size_t claims_of(const struct claims *cl, const char *name)
{
    size_t lo = 0, hi = cl->n, first;

    while (lo < hi) {                     /* the first not below name */
        size_t mid = lo + (hi - lo) / 2;
        if (strcasecmp(cl->names[mid], name) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    first = lo;
    while (lo < cl->n && !strcasecmp(cl->names[lo], name))
        lo++;
    return lo - first;
}

/* A machine name is written only when no other node's line would carry
 * it: a member speaks for its own address, so a name two claim (or one
 * the file gives another node) resolves to neither by that claim. */
static bool machine_name_ok(const struct claims *cl, const struct cluster_node *node,
                            const char *name)
{
    /* Already on the line (the node's own name, an alias). */
    if (!strcasecmp(name, node->name))
        return false;
    for (unsigned k = 0; k < node->n_aliases; k++)
        if (!strcasecmp(name, node->aliases[k]))
            return false;
    return strncasecmp(name, "localhost", 9) && claims_of(cl, name) == 1;
}

static void add_entry(struct hosts_entry *e, size_t *n, const struct cluster_node *node,
                      const char *name)
{
    cluster_addr_format(&node->address, e[*n].address, sizeof(e[*n].address));
    snprintf(e[*n].name, sizeof(e[*n].name), "%s", name);
    (*n)++;
}

/* A line per node: its name, its aliases, then the names its machine
 * goes by. */
int members_write_hosts(struct device *dev)
{
    const struct cluster *c = &dev->cluster;
    const unsigned per_node = 1u + CLUSTER_ALIASES_MAX + DISCO_MAX_NAMES;
    struct hosts_entry *e = calloc(c->n_nodes * per_node, sizeof(*e));
    const char (*names)[DISCO_NAME_MAX + 1];
    struct claims cl = { 0 };
    size_t n = 0;
    int ret;

    if (!e || claims_make(dev, &cl, per_node)) {
        free(e);
        free(cl.names);
        return -ENOMEM;
    }
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *node = &c->nodes[i];
        add_entry(e, &n, node, node->name);
        for (unsigned k = 0; k < node->n_aliases; k++)
            add_entry(e, &n, node, node->aliases[k]);
        for (unsigned k = 0, m = machine_names(dev, node, &names); k < m; k++)
            if (machine_name_ok(&cl, node, names[k]) && (k == 0 || strcasecmp(names[k], names[0])))
                add_entry(e, &n, node, names[k]);
    }
    ret = hosts_update_fd(dev->hosts_fd, dev->ifname, e, n);
    free(e);
    free(cl.names);
    return ret;
}

/* --- what a running node cannot take --------------------------------------------- */

static const struct cluster_change *change_of(const struct cluster_diff *d, const char *name)
{
    for (size_t i = 0; i < d->n; i++) {
        const struct cluster_node *n = d->changes[i].old_node ? d->changes[i].old_node
                                                              : d->changes[i].new_node;
        if (!strcasecmp(n->name, name))
            return &d->changes[i];
    }
    return NULL;
}

/* Says why the new model cannot be applied live, and what to run instead;
 * 0 when it can. */
static int refuse(const struct device *dev, const struct cluster_diff *d, members_say say,
                  void *ctx)
{
    const struct cluster_change *self = change_of(d, dev->self->name);
    char restart[DEVICE_SERVICE_MAX + 64], what[64];

    /* What restarts the node here: its systemd unit, or the CLI. */
    if (dev->service[0])
        snprintf(restart, sizeof(restart), "run `systemctl restart %s`", dev->service);
    else
        snprintf(restart, sizeof(restart), "run `ddpnet down` and `ddpnet up` on this node");
    if (self && self->kind == CLUSTER_NODE_REMOVED) {
        if (dev->service[0])
            sayf(say, ctx, MEMBERS_SAY_REFUSED, "this node (%s) is not in the new file; to "
                 "leave the cluster, run `systemctl disable --now %s`", dev->self->name,
                 dev->service);
        else
            sayf(say, ctx, MEMBERS_SAY_REFUSED, "this node (%s) is not in the new file; to "
                 "leave the cluster, run `ddpnet down -i %s`", dev->self->name, dev->ifname);
        return -EPERM;
    }
    if (self && (self->what & CLUSTER_CHANGED_KEY)) {
        sayf(say, ctx, MEMBERS_SAY_REFUSED, "the new file changes this node's (%s) key: %s "
             "with the new key file (%s)", dev->self->name, restart,
             dev->service[0] ? "the unit's -k" : "-k");
        return -EPERM;
    }
    if (self && (self->what & (CLUSTER_CHANGED_ADDRESS | CLUSTER_CHANGED_PORT))) {
        sayf(say, ctx, MEMBERS_SAY_REFUSED, "the new file changes this node's (%s) %s: %s",
             dev->self->name, self->what & CLUSTER_CHANGED_ADDRESS ? "address" : "port",
             restart);
        return -EPERM;
    }
    if (d->settings) {
        cluster_settings_format(d->settings, what, sizeof(what));
        sayf(say, ctx, MEMBERS_SAY_REFUSED, "the new file changes [cluster] %s: %s, "
             "and on every node", what, restart);
        return -EPERM;
    }
    return 0;
}

/* --- applying it ------------------------------------------------------------------ */

struct plan {
    struct peer **peers;         /* the new array, in the new file's order */
    size_t n_peers;
    struct peer **made;          /* peers made for it (added, re-keyed) */
    const struct cluster_node **made_node;   /* and the nodes they were made for */
    size_t n_made;
    struct peer_map *map;        /* the new array's lookups, installed with it */
};

static struct peer *old_peer(struct device *dev, const struct cluster_node *n)
{
    struct peer *p = device_peer_by_key(dev, n->public_key);

    return p && !strcasecmp(p->name, n->name) ? p : NULL;
}

static void plan_free(struct plan *pl, bool made_too)
{
    for (size_t i = 0; made_too && i < pl->n_made; i++)
        peer_free(pl->made[i]);
    free(pl->peers);
    free(pl->made);
    free(pl->made_node);
    device_map_free(pl->map);
}

/* Everything that may fail: the new peers and the new array. */
static int plan_make(struct device *dev, const struct cluster *next,
                     const struct cluster_node *self, struct plan *pl)
{
    memset(pl, 0, sizeof(*pl));
    pl->peers = calloc(next->n_nodes, sizeof(*pl->peers));
    pl->made = calloc(next->n_nodes, sizeof(*pl->made));
    pl->made_node = calloc(next->n_nodes, sizeof(*pl->made_node));
    if (!pl->peers || !pl->made || !pl->made_node)
        goto nomem;
    for (size_t i = 0; i < dev->n_peers; i++)
        dev->peers[i]->kept = false;
    for (size_t i = 0; i < next->n_nodes; i++) {
        const struct cluster_node *n = &next->nodes[i];
        struct peer *p;
        if (n == self)
            continue;
        if ((p = old_peer(dev, n))) {
            p->kept = true;
        } else {
            if (!(p = peer_new(dev, n)))
                goto nomem;
            p->id = ++dev->next_peer_id;
            pl->made_node[pl->n_made] = n;
            pl->made[pl->n_made++] = p;
        }
        pl->peers[pl->n_peers++] = p;
    }
    if (index_table_reserve(&dev->indices, 4 * next->n_nodes) ||
        !(pl->map = device_map_new(pl->peers, pl->n_peers)))
        goto nomem;
    return 0;
nomem:
    plan_free(pl, true);
    return -ENOMEM;
}

/* The peers that leave (not in the plan): no peer that stays relays
 * through them any more; then their keys are wiped, their indices
 * released and their waiting packets dropped. */
static void peers_leave(struct device *dev, const struct plan *pl, uint64_t now)
{
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (p->kept)
            continue;
        for (size_t k = 0; k < pl->n_peers; k++) {
            struct peer *q = pl->peers[k];
            if (q->via == p)
                path_drop_relay(q, now);
            disco_relay_forget(&q->relays, p->id);
        }
    }
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (p->kept)
            continue;
        log_notice("peer %s: removed from the cluster; its sessions are wiped", p->name);
        peer_clear_keys(p);
        peer_drop_staged(p);
        peer_free(p);
    }
}

/* Where the file names a literal endpoint, a hostname resolved now, or
 * none (the peer keeps the one it was reached at). */
static void set_endpoint(struct peer *p, const struct cluster_node *n)
{
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res;
    union endpoint ep;
    char port[8];

    if (!n->has_endpoint) {
        p->listed.sa.sa_family = AF_UNSPEC;   /* it keeps the one it was reached at */
        return;
    }
    device_node_endpoint(&ep, n);
    if (ep.sa.sa_family != AF_UNSPEC) {
        peer_set_endpoint(p, &ep.sa, endpoint_sockaddr_len(&ep));
        return;
    }
    snprintf(port, sizeof(port), "%u", n->endpoint.port);
    int ret = getaddrinfo(n->endpoint.host, port, &hints, &res);
    if (ret) {
        log_warn("peer %s: cannot resolve %s: %s", p->name, n->endpoint.host, gai_strerror(ret));
        return;
    }
    peer_set_endpoint(p, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
}

/* A kept peer takes what changed about its node. */
static void update_peer(struct peer *p, const struct cluster *next,
                        const struct cluster_change *c, uint64_t now)
{
    const struct cluster_node *n = c->new_node;

    snprintf(p->name, sizeof(p->name), "%s", n->name);
    if (c->what & CLUSTER_CHANGED_ADDRESS)
        p->address = n->address;
    if (c->what & CLUSTER_CHANGED_ENDPOINT)
        set_endpoint(p, n);
    if (c->what & CLUSTER_CHANGED_KEEPALIVE)
        peer_set_persistent_keepalive(p, (uint16_t)cluster_node_keepalive(next, n), now);
}

/* The swap: nothing here fails (device_remap's memory aside, whose
 * failure keeps the map made with the plan, which misses only addresses
 * changed in place until the next change). */
static void plan_commit(struct device *dev, struct cluster *next, const struct cluster_diff *d,
                        const struct cluster_node *self, struct plan *pl, uint64_t now)
{
    struct peer **old = dev->peers;

    peers_leave(dev, pl, now);
    dev->peers = pl->peers;
    dev->n_peers = pl->n_peers;
    pl->peers = NULL;
    free(old);
    /* Lookups find the new peers from here, never one that just left. */
    device_map_install(dev, pl->map);
    pl->map = NULL;
    for (size_t i = 0; i < d->n; i++) {
        const struct cluster_change *c = &d->changes[i];
        struct peer *p = c->new_node ? device_peer_by_key(dev, c->new_node->public_key) : NULL;
        if (c->kind == CLUSTER_NODE_CHANGED && p && !(c->what & CLUSTER_CHANGED_KEY))
            update_peer(p, next, c, now);
    }
    for (size_t i = 0; i < pl->n_made; i++) {
        struct peer *p = pl->made[i];
        const struct cluster_node *n = pl->made_node[i];
        set_endpoint(p, n);
        p->persistent_keepalive = (uint16_t)cluster_node_keepalive(next, n);
    }
    /* The device runs the new model from here: self points into it. */
    cluster_free(&dev->cluster);
    dev->cluster = *next;
    memset(next, 0, sizeof(*next));
    dev->self = self;
    /* Again, with the addresses update_peer changed (failing, the map
     * installed above stays: it misses only those until the next change). */
    if (device_remap(dev))
        log_error("membership: out of memory for the address map");
    disco_wake(dev);
    for (size_t i = 0; i < pl->n_made; i++)
        handshake_send_initiation(pl->made[i], false, now);
}

/* One line per reload, whichever way it came (SIGHUP, ddpnet reload): the
 * checksum is the one `status` shows, so a person can match nodes to files. */
static void log_applied(const struct device *dev, size_t changes)
{
    char hex[2 * DEVICE_CLUSTER_SUM_LEN + 1];

    for (unsigned i = 0; i < DEVICE_CLUSTER_SUM_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", dev->cluster_sum[i]);
    if (changes)
        log_notice("reload applied: %zu change%s, cluster file %s", changes,
                   changes == 1 ? "" : "s", hex);
    else
        log_info("reload: no changes, cluster file %s", hex);
}

static void say_errors(const struct cluster_diag *diag, members_say say, void *ctx)
{
    for (size_t i = 0; i < diag->n; i++) {
        if (diag->items[i].line)
            sayf(say, ctx, MEMBERS_SAY_ERROR, "%d: %s", diag->items[i].line,
                 diag->items[i].message);
        else
            say(ctx, MEMBERS_SAY_ERROR, diag->items[i].message);
    }
    if (diag->dropped)
        sayf(say, ctx, MEMBERS_SAY_ERROR, "... and %zu more errors", diag->dropped);
}

static void say_changes(const struct cluster_diff *d, const char *source, members_say say,
                        void *ctx)
{
    char line[SAY_MAX];

    for (size_t i = 0; i < d->n; i++) {
        if (cluster_change_format(&d->changes[i], line, sizeof(line)) == 0) {
            log_notice("%s: %s", source, line);
            say(ctx, MEMBERS_SAY_CHANGE, line);
        }
    }
}

static void log_skip(void *ctx, const struct cluster_node *n, const char *why)
{
    (void)ctx;
    log_warn_rl("registry: node %s not applied: %s", n->name, why);
}

/* The model to run: the file's nodes, then the registry's (registry.h). */
static int merged(struct device *dev, const struct cluster *file, struct cluster *out)
{
    size_t skipped;

    return registry_model(file, dev->self_registered ? &dev->registry_self : NULL,
                          dev->registered, dev->n_registered, out, &skipped, log_skip, dev);
}

/* Applies the model next (taken) as the file's comment says; *changes:
 * how many. Nothing changes unless it returns 0. */
static int apply(struct device *dev, struct cluster *next, const char *source, members_say say,
                 void *ctx, uint64_t now, size_t *changes)
{
    const struct cluster_node *self = cluster_find_name(next, dev->self->name);
    struct cluster_diff d = { 0 };
    struct plan pl;
    int ret;

    *changes = 0;
    if ((ret = cluster_diff(&dev->cluster, next, &d)) || (ret = refuse(dev, &d, say, ctx)))
        goto out;
    if (d.n && (ret = plan_make(dev, next, self, &pl)) == 0) {
        loop_crypto_drain(dev->loop, now);
        path_flush(dev, now);
        say_changes(&d, source, say, ctx);
        plan_commit(dev, next, &d, self, &pl, now);
        plan_free(&pl, false);
    }
    if (ret)
        goto out;
    *changes = d.n;
    if (d.n && dev->hosts_fd >= 0 && (ret = members_write_hosts(dev)))
        log_warn("membership: the names block was not updated: %s", strerror(-ret));
    ret = 0;
out:
    cluster_diff_free(&d);
    cluster_free(next);
    return ret;
}

int members_reload(struct device *dev, const char *text, size_t len, members_say say,
                   void *ctx, uint64_t now)
{
    struct cluster file, next;
    struct cluster_diag *diag = calloc(1, sizeof(*diag));
    size_t changes;
    int ret;

    if (!diag)
        return -ENOMEM;
    ret = cluster_parse(text, len, &file, diag);
    if (ret == -EINVAL)
        say_errors(diag, say, ctx);
    free(diag);
    if (ret)
        return ret;
    if ((ret = merged(dev, &file, &next)) || (ret = apply(dev, &next, "reload", say, ctx, now, &changes))) {
        cluster_free(&file);
        return ret;
    }
    cluster_free(&dev->file);
    dev->file = file;
    members_checksum(text, len, dev->cluster_sum);
    dev->cluster_applied_unix = (uint64_t)time(NULL);
    log_applied(dev, changes);
    return 0;
}

static void say_to_log(void *ctx, const char *kind, const char *line)
{
    (void)ctx;
    if (strcmp(kind, MEMBERS_SAY_CHANGE))
        log_warn("registry: %s", line);
}

int members_registry(struct device *dev, struct cluster_node *nodes, size_t n, int64_t revision,
                     uint64_t now)
{
    struct cluster next;
    size_t changes;
    int ret;

    free(dev->registered);
    dev->registered = nodes;
    dev->n_registered = n;
    if ((ret = merged(dev, &dev->file, &next)) ||
        (ret = apply(dev, &next, "registry", say_to_log, NULL, now, &changes)))
        return ret;
    dev->registry_revision = revision;
    if (changes)
        log_notice("registry: revision %lld applied: %zu change%s", (long long)revision, changes,
                   changes == 1 ? "" : "s");
    return 0;
}
