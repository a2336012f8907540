/* SPDX-License-Identifier: MIT */
/* members_reload: parse, check, diff, then apply in two steps -- first
 * everything that can fail (new peers, a larger index table, the new
 * peers array), then the swap, which cannot -- so a reload is applied
 * whole or not at all. The crypto jobs in flight are drained and the relay's
 * pending sends flushed first: no job or send in flight names a peer that
 * goes. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <stdarg.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cluster_diff.h"
#include "config/cluster_index.h"
#include "config/routes.h"
#include "crypto/blake2s.h"
#include "overlay/base/log.h"
#include "overlay/engine/device_setup.h"
#include "config/cluster_index.h"
#include "overlay/loop/loop.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/hosts.h"
#include "overlay/membership/hosts_writer.h"
#include "overlay/membership/members.h"
#include "overlay/membership/renewal.h"
#include "overlay/membership/revocations.h"
#include "overlay/registry/registry.h"
#include "overlay/registry/vouch.h"

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

void members_checksum(const char *text, size_t len, uint8_t out[MEMBERSHIP_CLUSTER_SUM_LEN])
{
    blake2s(out, MEMBERSHIP_CLUSTER_SUM_LEN, (const uint8_t *)text, len, NULL, 0);
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
    if (!(p = device_peer_by_key(dev, node->public_key)) || p->member.pending)
        return 0;
    *names = p->disco.names;
    return p->disco.n_names;
}

/* A registered node whose record its key holder has not stated yet:
 * no line, no name (registry/vouch.h). */
static bool node_pending(struct device *dev, const struct cluster_node *node)
{
    struct peer *p = node == dev->self ? NULL : device_peer_by_key(dev, node->public_key);

    return p && p->member.pending;
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
        if (node_pending(dev, node))
            continue;
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
 * the file gives another node) resolves to neither by that claim. A
 * peer's name must also be one a member may claim at all
 * (cluster_claim_ok: no localhost or ip6-* form, a dotted name only under
 * machine-domains); the hosts file and the resolver have their say later
 * (claimed entries: hosts.h, hosts_writer.h). */
static bool machine_name_ok(const struct device *dev, const struct claims *cl,
                            const struct cluster_node *node, const char *name)
{
    /* Already on the line (the node's own name, an alias). */
    if (!strcasecmp(name, node->name))
        return false;
    for (unsigned k = 0; k < node->n_aliases; k++)
        if (!strcasecmp(name, node->aliases[k]))
            return false;
    if (node != dev->self && !cluster_claim_ok(&dev->cluster, name))
        return false;
    return !cluster_name_reserved(name) && claims_of(cl, name) == 1;
}

/* The underlay address a member's names may resolve to already (its
 * FQDN in the cloud's DNS): where it is listed (the file's word, or its
 * registration), else where it is reached (a source it sent from); ""
 * when neither is known. */
static void own_address(struct device *dev, const struct cluster_node *node, char *buf,
                        size_t len)
{
    struct peer *p = device_peer_by_key(dev, node->public_key);
    const union endpoint *ep = p && p->member.listed.sa.sa_family != AF_UNSPEC ? &p->member.listed
                               : p ? &p->path.endpoint : NULL;

    buf[0] = '\0';
    if (ep && ep->sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &ep->in4.sin_addr, buf, (socklen_t)len);
    } else if (ep && ep->sa.sa_family == AF_INET6) {
        const uint8_t *b = ep->in6.sin6_addr.s6_addr;
        if (IN6_IS_ADDR_V4MAPPED(&ep->in6.sin6_addr))
            inet_ntop(AF_INET, b + 12, buf, (socklen_t)len);
        else
            inet_ntop(AF_INET6, b, buf, (socklen_t)len);
    } else if (node->has_endpoint && node->endpoint.literal) {
        cluster_addr_format(&node->endpoint.addr, buf, len);
    }
}

/* own non-NULL: a member's word, not the file's (hosts.h's claimed). */
static void add_entry(struct hosts_entry *e, size_t *n, const struct cluster_node *node,
                      const char *name, const char *own)
{
    cluster_addr_format(&node->address, e[*n].address, sizeof(e[*n].address));
    snprintf(e[*n].name, sizeof(e[*n].name), "%s", name);
    e[*n].claimed = own != NULL;
    snprintf(e[*n].own, sizeof(e[*n].own), "%s", own ? own : "");
    (*n)++;
}

/* Whether node came from the registry (its record: a member's word)
 * rather than the cluster file. */
static bool registered(const struct device *dev, const struct cluster_index *file,
                       const struct cluster_node *node)
{
    const struct cluster_node *f;

    if (node == dev->self || !dev->membership->n_registered)
        return false;
    f = file ? cluster_index_name(file, node->name) : NULL;
    return !f || sodium_memcmp(f->public_key, node->public_key, CLUSTER_KEY_LEN);
}

/* A tool that replaces the hosts file by renaming a new one over it
 * (`sed -i`, an editor, a configuration manager) leaves our descriptor on
 * the old file, unlinked: the block written there reaches nobody. The
 * daemon, without privileges, cannot open the new one; a person must
 * hand it over (`ddpnet reload`, which passes it). Said at each rewrite
 * until then. */
static void hosts_check_replaced(const struct device *dev)
{
    struct stat st;

    if (fstat(dev->membership->hosts_fd, &st) == 0 && st.st_nlink == 0)
        log_warn_rl("the hosts file was replaced by another (renamed over it, as sed -i "
                    "does): the names block goes to the old, unlinked file; run `ddpnet "
                    "reload -i %s` to carry it to the new one", dev->ifname);
}

/* A line per node: its name, its aliases, then the names its machine
 * goes by; what is a member's word marked claimed. */
static int hosts_entries(struct device *dev, struct hosts_entry **out, size_t *n_out)
{
    const struct cluster *c = &dev->cluster;
    const unsigned per_node = 1u + 2u * CLUSTER_ALIASES_MAX + DISCO_MAX_NAMES;
    struct hosts_entry *e = calloc(c->n_nodes * per_node + 1, sizeof(*e));
    struct cluster_index *file = dev->membership->n_registered ? cluster_index_of(&dev->membership->file) : NULL;
    const char (*names)[DISCO_NAME_MAX + 1];
    char own[INET6_ADDRSTRLEN];
    struct claims cl = { 0 };
    size_t n = 0;

    hosts_check_replaced(dev);
    if (!e || claims_make(dev, &cl, per_node) || (dev->membership->n_registered && !file)) {
        free(e);
        free(cl.names);
        cluster_index_free(file);
        return -ENOMEM;
    }
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *node = &c->nodes[i];
        bool self = node == dev->self;
        const char *word;

        if (node_pending(dev, node))
            continue;
        own_address(dev, node, own, sizeof(own));
        word = registered(dev, file, node) ? own : NULL;
        /* A registered node's name is its own word, as a machine name is:
         * one that another node's machine also goes by goes on neither
         * line (as between two machines). No order decides it: a writer
         * of the prefix makes any record the later one (it deletes it, its
         * node puts it back). */
        if (!word || claims_of(&cl, node->name) == 1)
            add_entry(e, &n, node, node->name, word);
        for (unsigned k = 0; k < node->n_aliases; k++)
            add_entry(e, &n, node, node->aliases[k], word);
        /* Hosts behind its routes (the file's word: a registered node has
         * none), at their own address. */
        for (unsigned k = 0; k < node->n_route_names; k++) {
            add_entry(e, &n, node, node->route_names[k].name, NULL);
            cluster_addr_format(&node->route_names[k].addr, e[n - 1].address,
                                sizeof(e[n - 1].address));
        }
        for (unsigned k = 0, m = machine_names(dev, node, &names); k < m; k++)
            if (machine_name_ok(dev, &cl, node, names[k]) &&
                (k == 0 || strcasecmp(names[k], names[0])))
                add_entry(e, &n, node, names[k], self ? NULL : own);
    }
    free(cl.names);
    cluster_index_free(file);
    *out = e;
    *n_out = n;
    return 0;
}

int members_write_hosts(struct device *dev)
{
    struct hosts_entry *e;
    size_t n, kept = 0;
    int ret;

    if (dev->membership->hosts_writer) {
        members_hosts_changed(dev);
        return 0;
    }
    if ((ret = hosts_entries(dev, &e, &n)))
        return ret;
    /* Without the writer (set-up) no resolver is asked: a member's word
     * waits for it. */
    for (size_t i = 0; i < n; i++)
        if (!e[i].claimed)
            e[kept++] = e[i];
    ret = hosts_update_fd(dev->membership->hosts_fd, dev->ifname, e, kept);
    free(e);
    return ret;
}

void members_hosts_changed(struct device *dev)
{
    dev->membership->hosts_dirty = true;
}

uint64_t members_hosts_run(struct device *dev, uint64_t now)
{
    struct hosts_entry *e;
    size_t n;

    if (!dev->membership->hosts_dirty || !dev->membership->hosts_writer)
        return UINT64_MAX;
    if (now < dev->membership->hosts_due_ns)
        return dev->membership->hosts_due_ns;
    dev->membership->hosts_due_ns = now + HOSTS_WRITE_INTERVAL_NS;
    if (hosts_entries(dev, &e, &n)) {
        log_warn("membership: out of memory for the names block");
        return dev->membership->hosts_due_ns;
    }
    hosts_writer_submit(dev->membership->hosts_writer, e, n);
    dev->membership->hosts_dirty = false;
    return UINT64_MAX;
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
    char restart[MEMBERSHIP_SERVICE_MAX + 64], what[64];

    /* What restarts the node here: its systemd unit, or the CLI. */
    if (dev->membership->service[0])
        snprintf(restart, sizeof(restart), "run `systemctl restart %s`", dev->membership->service);
    else
        snprintf(restart, sizeof(restart), "run `ddpnet down` and `ddpnet up` on this node");
    if (self && self->kind == CLUSTER_NODE_REMOVED) {
        if (dev->membership->service[0])
            sayf(say, ctx, MEMBERS_SAY_REFUSED, "this node (%s) is not in the new file; to "
                 "leave the cluster, run `systemctl disable --now %s`", dev->self->name,
                 dev->membership->service);
        else
            sayf(say, ctx, MEMBERS_SAY_REFUSED, "this node (%s) is not in the new file; to "
                 "leave the cluster, run `ddpnet down -i %s`", dev->self->name, dev->ifname);
        return -EPERM;
    }
    if (self && (self->what & CLUSTER_CHANGED_KEY)) {
        sayf(say, ctx, MEMBERS_SAY_REFUSED, "the new file changes this node's (%s) key: %s "
             "with the new key file (%s)", dev->self->name, restart,
             dev->membership->service[0] ? "the unit's -k" : "-k");
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

/* The peer a node of the next model keeps: its key's with its name, its
 * key's on probation (promoted by plan_commit), or its key's under another
 * name (renamed by plan_commit: the same key is the same machine, whose
 * session and path go on; issue 55: the authority's certificate replacing
 * one a token's holder signed for that key must not cut it off). */
static struct peer *old_peer(struct device *dev, const struct cluster_node *n)
{
    return device_peer_by_key(dev, n->public_key);
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
    pl->peers = calloc(next->n_nodes + dev->n_peers, sizeof(*pl->peers));
    pl->made = calloc(next->n_nodes, sizeof(*pl->made));
    pl->made_node = calloc(next->n_nodes, sizeof(*pl->made_node));
    if (!pl->peers || !pl->made || !pl->made_node)
        goto nomem;
    for (size_t i = 0; i < dev->n_peers; i++)
        dev->peers[i]->member.kept = false;
    for (size_t i = 0; i < next->n_nodes; i++) {
        const struct cluster_node *n = &next->nodes[i];
        struct peer *p;
        if (n == self)
            continue;
        if ((p = old_peer(dev, n))) {
            p->member.kept = true;
        } else {
            if (!(p = peer_create(dev, next, n)))
                goto nomem;
            pl->made_node[pl->n_made] = n;
            pl->made[pl->n_made++] = p;
        }
        pl->peers[pl->n_peers++] = p;
    }
    /* Strangers on probation not promoted stay until their time is up. */
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (p->member.probation && !p->member.kept) {
            p->member.kept = true;
            pl->peers[pl->n_peers++] = p;
        }
    }
    if (index_table_reserve(&dev->indices, DEVICE_INDICES(next->n_nodes)) ||
        !(pl->map = device_map_new(pl->peers, pl->n_peers)))
        goto nomem;
    return 0;
nomem:
    plan_free(pl, true);
    return -ENOMEM;
}

/* The peers that leave (not in the plan): removed from the engine
 * (peer_remove), the peers of the plan staying. */
static void peers_leave(struct device *dev, const struct plan *pl, uint64_t now)
{
    for (size_t i = 0; i < dev->n_peers; i++)
        if (!dev->peers[i]->member.kept)
            peer_remove(dev->peers[i], pl->peers, pl->n_peers, now);
}

/* Where the file names a literal endpoint, a hostname (asked of the
 * resolver: the peer keeps what it has until the answer), or none (the
 * peer keeps the one it was reached at). */
static void set_endpoint(struct device *dev, struct peer *p, const struct cluster_node *n)
{
    union endpoint ep;

    p->member.resolving[0] = '\0';   /* an answer still due for an older name is not taken */
    if (!n->has_endpoint) {
        p->member.listed.sa.sa_family = AF_UNSPEC;   /* it keeps the one it was reached at */
        return;
    }
    device_node_endpoint(&ep, n);
    if (ep.sa.sa_family != AF_UNSPEC) {
        peer_set_endpoint(p, &ep.sa, endpoint_sockaddr_len(&ep));
        return;
    }
    members_resolve(dev, p, n);
}

/* A kept peer whose key's node has another name now: its name, address
 * and what its node says, as a new peer's (its session and path kept). */
static void rename_peer(struct device *dev, struct peer *p, const struct cluster *next,
                        const struct cluster_node *n, uint64_t now)
{
    log_notice("peer %s: its key's node is %s now", p->member.name, n->name);
    snprintf(p->member.name, sizeof(p->member.name), "%s", n->name);
    p->member.address = n->address;
    if (n->has_endpoint)
        set_endpoint(dev, p, n);
    peer_set_persistent_keepalive(p, (uint16_t)cluster_node_keepalive(next, n), now);
    discovery_node_hints(p, n, now);
}

/* A kept peer takes what changed about its node. */
static void update_peer(struct device *dev, struct peer *p, const struct cluster *next,
                        const struct cluster_change *c, uint64_t now)
{
    const struct cluster_node *n = c->new_node;

    snprintf(p->member.name, sizeof(p->member.name), "%s", n->name);
    if (c->what & CLUSTER_CHANGED_ADDRESS)
        p->member.address = n->address;
    if (c->what & CLUSTER_CHANGED_ENDPOINT)
        set_endpoint(dev, p, n);
    if (c->what & (CLUSTER_CHANGED_ENDPOINT | CLUSTER_CHANGED_CANDIDATES))
        discovery_node_hints(p, n, now);
    if (c->what & CLUSTER_CHANGED_KEEPALIVE)
        peer_set_persistent_keepalive(p, (uint16_t)cluster_node_keepalive(next, n), now);
}

/* The swap: nothing here fails (device_remap's memory aside, whose
 * failure keeps the map made with the plan, which misses only addresses
 * changed in place until the next change). */
/* The registry's side of a model being made: its records sorted by their
 * holders' word (registry/vouch.h), the pending ones' keys, and where
 * the model's registered nodes begin (after the file's). */
struct vouched {
    struct vouch_out v;
    struct cluster_index *pending;
    size_t file_nodes;
};

static void vouched_free(struct vouched *vd)
{
    free(vd->v.nodes);
    cluster_index_free(vd->pending);
    memset(vd, 0, sizeof(*vd));
}

/* Marks the peers of the model the device runs whose record is pending
 * (and clears the others); true when one changed. */
static bool set_pending(struct device *dev, const struct vouched *vd)
{
    bool changed = false;

    for (size_t i = 0; i < dev->cluster.n_nodes; i++) {
        const struct cluster_node *n = &dev->cluster.nodes[i];
        struct peer *p = n == dev->self ? NULL : device_peer_by_key(dev, n->public_key);
        bool pending = vd->pending && i >= vd->file_nodes &&
                       cluster_index_key(vd->pending, n->public_key);
        if (!p || p->member.pending == pending)
            continue;
        p->member.pending = pending;
        changed = true;
        if (pending)
            log_info_peer_rl("peer %s: its registry record waits for its key's own word",
                             p->member.name);
        else if (dev->membership->registry)     /* a promoted stranger has no record to count */
            log_info_peer_rl("peer %s: its registry record counts", p->member.name);
    }
    return changed;
}

/* A peer's CERTs taken: CERT_PER_SEC a second after a burst of CERT_BURST
 * (members_cert_said); a newcomer is told half a burst. */
#define CERT_PER_SEC    20u
#define CERT_BURST      64u
#define CERT_BURST_TOLD (CERT_BURST / 2u)

/* Whether certificate c is ours or a member's of the model we run: one
 * held but left out of it (its address another's: the first come keeps
 * it, with_certified) is told to no one, so that no newcomer counts it
 * before the member that holds its address and cuts that member off. */
static bool counts(struct device *dev, const struct cert *c)
{
    const struct peer *q;

    if (!memcmp(c->subject, dev->local->public_key, CERT_PUBKEY_LEN))
        return true;
    return (q = device_peer_by_key(dev, c->subject)) && !q->member.probation;
}

/* A newcomer, as it is promoted, hears the members' certificates we hold
 * then, so that it counts them though its file lists fewer (at most half
 * its CERT burst: what is beyond, it learns as their sessions with it
 * begin, each saying its own); what we take after, we pass on to it as
 * to every member. Told at the promotion, not when its certificate came:
 * one taken in between went to the members only, not to a stranger. */
static void tell_newcomer(struct peer *p, uint64_t now)
{
    struct device *dev = p->dev;
    char text[CERT_TEXT_MAX + 1];
    size_t sent = 0;

    for (size_t i = 0; i < certs_count(dev->membership->certs) && sent < CERT_BURST_TOLD; i++) {
        const struct cert *c = certs_at(dev->membership->certs, i);
        if (!memcmp(c->subject, p->public_key, CERT_PUBKEY_LEN) || !counts(dev, c) ||
            cert_format(c, text, sizeof(text)))
            continue;
        discovery_send_cert(p, text, strlen(text), now);
        sent++;
    }
}

/* A stranger whose certificate holds becomes the member it names, on the
 * session it made (pending until set_pending says otherwise). */
static void promote(struct device *dev, struct peer *p, const struct cluster *next,
                    const struct cluster_node *n, uint64_t now)
{
    probation_end(&dev->probation, p->public_key);
    p->member.probation = false;
    snprintf(p->member.name, sizeof(p->member.name), "%s", n->name);
    p->member.address = n->address;
    peer_set_persistent_keepalive(p, (uint16_t)cluster_node_keepalive(next, n), now);
    discovery_node_hints(p, n, now);
    discovery_promoted(p, now);
    tell_newcomer(p, now);
    revocations_round(p, now);   /* its digest came while it was a stranger */
    log_notice("peer %s: its certificate holds; a member now", p->member.name);
}

static void plan_commit(struct device *dev, struct cluster *next, const struct cluster_diff *d,
                        const struct cluster_node *self, struct plan *pl,
                        const struct vouched *vd, uint64_t now)
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
            update_peer(dev, p, next, c, now);
        else if (c->kind == CLUSTER_NODE_ADDED && p && p->member.probation)
            promote(dev, p, next, c->new_node, now);
        else if (p && strcasecmp(p->member.name, c->new_node->name))
            rename_peer(dev, p, next, c->new_node, now);    /* its key under another name */
    }
    for (size_t i = 0; i < pl->n_made; i++) {
        struct peer *p = pl->made[i];
        const struct cluster_node *n = pl->made_node[i];
        set_endpoint(dev, p, n);
        discovery_node_hints(p, n, now);
    }
    /* The device runs the new model from here: self points into it. */
    cluster_free(&dev->cluster);
    dev->cluster = *next;
    memset(next, 0, sizeof(*next));
    dev->self = self;
    device_rules_changed(dev);
    set_pending(dev, vd);
    /* Again, with the addresses update_peer changed and without pending
     * records' (failing, the map installed above stays: it misses only
     * those until the next change). */
    if (device_remap(dev))
        log_error("membership: out of memory for the address map");
    discovery_wake(dev);
    for (size_t i = 0; i < pl->n_made; i++)
        handshake_send_initiation(pl->made[i], false, now);
    if (dev->routes_changed)
        dev->routes_changed(dev);
}

/* New rules (or group names) in a model whose nodes are the same: the
 * model swapped as plan_commit does, without a plan (no peer changes);
 * each connection is matched again at its next packet. */
static void take_rules(struct device *dev, struct cluster *next, const char *source,
                       members_say say, void *ctx)
{
    const struct cluster_node *self = cluster_find_name(next, dev->self->name);

    log_notice("%s: rules changed (%u rules)", source, next->rules.n);
    sayf(say, ctx, MEMBERS_SAY_CHANGE, "rules changed (%u rules)", next->rules.n);
    cluster_free(&dev->cluster);
    dev->cluster = *next;
    memset(next, 0, sizeof(*next));
    dev->self = self;
    device_rules_changed(dev);
}

/* One line per reload, whichever way it came (SIGHUP, ddpnet reload): the
 * checksum is the one `status` shows, so a person can match nodes to files. */
static void log_applied(const struct device *dev, size_t changes)
{
    char hex[2 * MEMBERSHIP_CLUSTER_SUM_LEN + 1];

    for (unsigned i = 0; i < MEMBERSHIP_CLUSTER_SUM_LEN; i++)
        snprintf(hex + 2 * i, 3, "%02x", dev->membership->cluster_sum[i]);
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

/* What registry_model left out, as merged() makes the model. */
struct skip_ctx {
    struct device *dev;
    struct certs_clash lost;              /* our address another member's */
};

/* A node left out of the model. Where it is a certificate's at our own
 * address while we joined with one (no registry): a clash. We keep
 * ourselves here (registry_model puts self first), but a member told us
 * that certificate only because it holds it at that address, as the
 * first come, and refuses ours (members_cert_said; a member tells no one
 * a certificate it left out, tell_newcomer): we are the one cut off.
 * Noted for status (note_clash), not logged per model. */
static void on_skip(void *ctx, const struct cluster_node *n, const char *why)
{
    struct skip_ctx *sc = ctx;
    struct device *dev = sc->dev;
    const struct cluster_node *self = &dev->membership->registry_self;
    const struct cert *ours;

    if (dev->membership->certs && !dev->membership->registry && dev->membership->self_registered && !sc->lost.on &&
        cluster_addr_equal(&n->address, &self->address) &&
        memcmp(n->public_key, self->public_key, CLUSTER_KEY_LEN) &&
        certs_member(dev->membership->certs, n->public_key)) {
        ours = certs_member(dev->membership->certs, self->public_key);
        sc->lost.on = true;
        sc->lost.derived = !ours || !ours->has_address;
        sc->lost.address = self->address;
        snprintf(sc->lost.ours, sizeof(sc->lost.ours), "%s", self->name);
        snprintf(sc->lost.holder, sizeof(sc->lost.holder), "%s", n->name);
        memcpy(sc->lost.holder_key, n->public_key, CERT_PUBKEY_LEN);
        return;
    }
    log_skip(dev, n, why);
}

/* The clash found as the model was made, kept for status; logged once
 * when it starts (or its holder changes) and when it ends. */
static void note_clash(struct device *dev, const struct certs_clash *c)
{
    char addr[INET6_ADDRSTRLEN], key[CERT_KEY_TEXT_LEN + 1];

    if (!certs_clash_set(dev->membership->certs, c))
        return;
    if (!c->on) {
        log_notice("authority: our address clashes with no member's now");
        return;
    }
    cluster_addr_format(&c->address, addr, sizeof(addr));
    cert_key_format(c->holder_key, key);
    log_warn("authority: our address %s%s is also %s's (key %s), which the members hold "
             "first: they do not reach this node (%s). To join: %s", addr,
             c->derived ? ", derived from our key," : "", c->holder, key, c->ours,
             CERTS_CLASH_WHAT_TO_DO);
}

struct word_ctx {
    struct device *dev;
    uint64_t now;
    const struct cluster_index *counted;  /* with an authority: the nodes counted now */
};

uint64_t members_grace_ns(const struct device *dev)
{
    const struct cluster *f = &dev->membership->file;
    uint64_t ns;

    if (!dev->membership->registry)
        return 0;
    ns = (uint64_t)(f->registry.ttl_s ? f->registry.ttl_s : CLUSTER_REGISTRY_TTL_DEFAULT) * NS_PER_S;
    /* No longer than a name is held after (vouch.h): a crashed node of a
     * long lease is not kept twice as long. */
    return ns < VOUCH_HOLD_NS ? ns : VOUCH_HOLD_NS;
}

/* What the holder of key said of its record, on its session. With an
 * authority its certificate stands for its word on a record not counted
 * yet (the record was checked against it: vetted); for a counted one,
 * what it stated, else the record as it counts now -- so a writer's
 * rewrite of it (an address the certificate leaves open, an endpoint)
 * changes nothing (registry/vouch.h). */
static void word_of(void *ctx, const uint8_t key[CLUSTER_KEY_LEN], struct vouch_word *w)
{
    const struct word_ctx *c = ctx;
    struct peer *p = device_peer_by_key(c->dev, key);
    const struct cluster_node *n;

    memset(w, 0, sizeof(*w));
    w->grace_ns = members_grace_ns(c->dev);
    /* With an authority, a member whose certificate no longer holds
     * (revoked, expired, let go) leaves at once. */
    if (c->dev->membership->certs && (!c->counted || !(n = cluster_index_key(c->counted, key)) ||
                                      certs_node_check(c->dev->membership->certs, n)))
        w->grace_ns = 0;
    if (p) {
        w->said = p->disco.record_said == PEER_RECORD_DIGEST ? VOUCH_SAID_DIGEST
                  : p->disco.record_said == PEER_RECORD_OLDER ? VOUCH_SAID_OLDER : VOUCH_SAID_NOTHING;
        memcpy(w->digest, p->disco.record_digest, VOUCH_DIGEST_LEN);
        w->alive = p->live.last_received_ns && c->now - p->live.last_received_ns < VOUCH_HOLD_NS;
    }
    if (!c->dev->membership->certs || w->said == VOUCH_SAID_DIGEST)
        return;
    if (c->counted && (n = cluster_index_key(c->counted, key))) {
        w->said = VOUCH_SAID_DIGEST;
        vouch_digest(n, w->digest);
    } else {
        w->said = VOUCH_SAID_OLDER;
    }
}

/* --- the authority (certs.h) -------------------------------------------------------- */

static int registry_apply(struct device *dev, uint64_t now, size_t *changes);

static void certs_changed(void *ctx)
{
    ((struct device *)ctx)->membership->certs_dirty = true;
}

int members_certs_start(struct device *dev)
{
    if (!dev->cluster.has_authority || dev->membership->certs)
        return 0;
    if (!(dev->membership->certs = certs_new(dev->cluster.authority, certs_changed, dev)))
        return -ENOMEM;
    if (dev->cluster.has_authority_next)
        certs_trust(dev->membership->certs, dev->cluster.authority, dev->cluster.authority_next);
    revocations_of_file(dev, &dev->membership->file);
    revocations_start(dev);
    return 0;
}

void members_certs_free(struct device *dev)
{
    certs_free(dev->membership->certs);
    dev->membership->certs = NULL;
    free(dev->membership->statements);
    dev->membership->statements = NULL;
    free(dev->self_cert);
    dev->self_cert = NULL;
    if (dev->membership->cert_fd >= 0)
        close(dev->membership->cert_fd);
    dev->membership->cert_fd = -1;
    revocations_free(dev);
}

static uint64_t unix_now(void)
{
    return (uint64_t)time(NULL);
}

/* A certificate stays while its key has a record in the registry or a
 * place in the model (ours among them): a member that left frees its
 * place, in its token's max_members too. */
static bool live(void *ctx, const struct cert *c)
{
    return cluster_index_key(ctx, c->subject) != NULL;
}

/* After an apply: the certificates of members that left let go; when one
 * went, the store is dirty and members_certs_run applies again (on the
 * loop's next pass), offering what was refused for want of room. */
static void let_go(struct device *dev)
{
    struct cluster_index *ix;

    if (!dev->membership->certs || !dev->membership->registry ||
        !(ix = cluster_index_new(dev->membership->n_registered + dev->cluster.n_nodes + 1)))
        return;
    for (size_t i = 0; i < dev->membership->n_registered; i++)
        cluster_index_add(ix, &dev->membership->registered[i]);
    for (size_t i = 0; i < dev->cluster.n_nodes; i++)
        cluster_index_add(ix, &dev->cluster.nodes[i]);
    certs_retain(dev->membership->certs, live, ix);
    cluster_index_free(ix);
}

/* With no registry (issue 55), a member is gone when it has been silent
 * MEMBERS_GONE_NS: its certificate let go, and with it its name and its
 * token's place, so that a machine resumed as a new instance (a new key,
 * the same name) is taken. An up member is heard from at least every
 * DISCO_IDLE_PING_MAX_S (idle pings) and makes a session every 2 minutes
 * while it sends; five idle pings missed is past any doubt. One that
 * comes back says its certificate again on its next session and is
 * taken back. Looked at every MEMBERS_GONE_CHECK_NS. */
#define MEMBERS_GONE_NS       (300ull * WG_NSEC_PER_SEC)
#define MEMBERS_GONE_CHECK_NS (10ull * WG_NSEC_PER_SEC)

struct silent {
    struct device *dev;
    uint64_t now;
};

/* A certificate stays unless its key's peer was heard from once and not
 * for MEMBERS_GONE_NS: one never reached (a heard one, not met yet) or
 * left out of the model (a clash) stays until it expires. Ours and the
 * file's nodes are no certificate's to let go. */
static bool spoke_lately(void *ctx, const struct cert *c)
{
    const struct silent *sc = ctx;
    const struct peer *p;

    if (cluster_find_key(&sc->dev->membership->file, c->subject) ||
        (sc->dev->local && !memcmp(c->subject, sc->dev->local->public_key, CERT_PUBKEY_LEN)) ||
        !(p = device_peer_by_key(sc->dev, c->subject)) || !p->live.last_received_ns)
        return true;
    /* (A shard's clock may have read later than ours.) */
    if (sc->now <= p->live.last_received_ns || sc->now - p->live.last_received_ns < MEMBERS_GONE_NS)
        return true;
    log_notice_rl("peer %s: silent for %llu s: its certificate let go (its name and place free)",
                  c->name, (unsigned long long)((sc->now - p->live.last_received_ns) /
                                                WG_NSEC_PER_SEC));
    return false;
}

/* When it is time (every MEMBERS_GONE_CHECK_NS), with no registry, the
 * certificates of members gone silent let go (the store dirty: the model
 * made again on this pass). When to look next. */
static uint64_t let_go_silent(struct device *dev, uint64_t now)
{
    struct silent sc = { dev, now };

    if (dev->membership->registry)
        return UINT64_MAX;
    if (now >= dev->membership->gone_check_ns) {
        certs_retain(dev->membership->certs, spoke_lately, &sc);
        dev->membership->gone_check_ns = now + MEMBERS_GONE_CHECK_NS;
    }
    return dev->membership->gone_check_ns;
}

/* The registry's statements offered to the store (each new one verified
 * once; a known one costs a hash): revocations, and the certificates of
 * keys that have a record (one carried by another key's record is not
 * offered, so let_go never lets go of what was just offered). */
static void offer_statements(struct device *dev)
{
    struct cluster_index *records;
    const char *why;
    char *line, *save = NULL, *text;
    struct cert c;

    if (!dev->membership->statements || !(records = cluster_index_new(dev->membership->n_registered + 1)))
        return;
    for (size_t i = 0; i < dev->membership->n_registered; i++)
        cluster_index_add(records, &dev->membership->registered[i]);
    if (!(text = strdup(dev->membership->statements))) {
        cluster_index_free(records);
        return;
    }
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if (cert_parse(line, &c) ||
            (c.kind == CERT_MEMBER && !cluster_index_key(records, c.subject)))
            continue;
        enum certs_verdict v = certs_offer_cert(dev->membership->certs, &c, unix_now(), &why);
        if (v == CERTS_REVOKING)
            revocations_taken(dev, line, strlen(line));
        if (v != CERTS_ADDED && v != CERTS_KNOWN && v != CERTS_REVOKING)
            log_info_rl("authority: a statement from the registry not taken: %s%s%s",
                        certs_verdict_str(v), why[0] ? ": " : "", why);
    }
    free(text);
    cluster_index_free(records);
}

/* With an authority, the records that count at all: each one its key's
 * certificate matches (name, and address where it fixes one), its
 * aliases the certificate's. A record that does not match, at the name
 * of a node counted now whose certificate still holds, leaves that node
 * as it counts (a writer's rewrite of another member's record changes
 * nothing; its keeper puts it back). *out is new. */
static int vetted(struct device *dev, const struct cluster_index *counted,
                  struct cluster_node **out, size_t *n)
{
    const struct cluster_node *c;
    const struct cert *cert;
    const char *why;

    *n = 0;
    if (!(*out = calloc(dev->membership->n_registered + 1, sizeof(**out))))
        return -ENOMEM;
    for (size_t i = 0; i < dev->membership->n_registered; i++) {
        struct cluster_node r = dev->membership->registered[i];
        if (!(why = certs_node_check(dev->membership->certs, &r))) {
            cert = certs_member(dev->membership->certs, r.public_key);
            r.n_aliases = cert->n_aliases;
            memcpy(r.aliases, cert->aliases, sizeof(r.aliases));
            (*out)[(*n)++] = r;
        } else if ((c = cluster_index_name(counted, r.name)) && !certs_node_check(dev->membership->certs, c)) {
            (*out)[(*n)++] = *c;
        } else {
            log_info_rl("registry: record %s does not count: %s", r.name, why);
        }
    }
    return 0;
}

static bool peer_in(struct peer *const *set, size_t n, const struct peer *p)
{
    for (size_t i = 0; i < n; i++)
        if (set[i] == p)
            return true;
    return false;
}

/* Undoes members_probation_run's compaction: dev->peers[0..k) kept, the
 * gone ones appended again (their order among peers means nothing). */
static void peers_put_back(struct device *dev, size_t k, struct peer *const *gone, size_t n_gone)
{
    for (size_t i = 0; i < n_gone && k < dev->n_peers; i++)
        dev->peers[k++] = gone[i];
}

/* Strangers whose probation ended without a certificate that holds:
 * their peers removed. Every due key's peer is found while the map still
 * holds them all, and the map without them is installed before any is
 * freed: a look-up between two removals would walk a freed peer. Out of
 * memory for the map, nothing is removed and the keys stay due (the next
 * pass tries again). */
static void members_probation_run(struct device *dev, uint64_t now)
{
    uint8_t due[PROBATION_MAX][PROBATION_KEY_LEN], key[PROBATION_KEY_LEN];
    size_t n_due = probation_due(&dev->probation, now, due), n_gone = 0, k = 0;
    struct peer *gone[PROBATION_MAX];
    struct peer_map *map;

    for (size_t i = 0; i < n_due; i++) {
        struct peer *p = device_peer_by_key(dev, due[i]);
        if (p && p->member.probation)
            gone[n_gone++] = p;
    }
    if (n_gone) {
        loop_crypto_drain(dev->loop, now);
        path_flush(dev, now);
        for (size_t i = 0; i < dev->n_peers; i++)
            if (!dev->peers[i]->member.probation || !peer_in(gone, n_gone, dev->peers[i]))
                dev->peers[k++] = dev->peers[i];
        if (!(map = device_map_new(dev->peers, k))) {
            peers_put_back(dev, k, gone, n_gone);
            log_error("membership: out of memory for the address map");
            return;
        }
        dev->n_peers = k;
        device_map_install(dev, map);
    }
    while (probation_expire(&dev->probation, now, key))
        ;
    for (size_t i = 0; i < n_gone; i++) {
        log_info_rl("peer %s: its probation ended without a certificate", gone[i]->member.name);
        peer_remove(gone[i], dev->peers, dev->n_peers, now);
    }
}

/* A peer's CERT (disco_recv.c, on its session): offered to the store at
 * most CERT_PER_SEC a second per peer after a burst of CERT_BURST (each
 * new statement costs a signature check; a known one a hash); news from
 * its source (a revocation new here, a certificate said by its own key's
 * holder) is passed on to the other peers that speak disco, so a member
 * that passes on can only repeat what holds, and a certificate costs
 * each node O(1) messages, not one per peer. What it changed is
 * applied by members_certs_run on the loop's next pass, never inside
 * the receive. */
/* A statement that counts now, to every peer that speaks disco but from
 * (NULL: none) and strangers on probation. */
static void pass_on(struct device *dev, const struct peer *from, const char *line, size_t len,
                    uint64_t now)
{
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *q = dev->peers[i];
        if (q != from && q->disco.speaks_disco && !q->member.probation)
            discovery_send_cert(q, line, len, now);
    }
}

/* Whether line is a member certificate for p's own key (then in *c). */
static bool said_by_holder(const struct peer *p, const char *line, struct cert *c)
{
    return cert_parse(line, c) == 0 && c->kind == CERT_MEMBER &&
           !memcmp(c->subject, p->public_key, CERT_PUBKEY_LEN);
}

/* Issue 43: p said its own certificate c, whose address (derived from its
 * key, or fixed) another node of the model we run holds: the holder
 * keeps it (the first come, with_certified), so p is left out here. It is
 * told who holds it -- the holder's certificate, signed, which it can
 * check, so it believes no member's word -- and shows it in its status;
 * c goes to no other member (it would cut the holder off wherever it came
 * first). A file node's address has no certificate to tell (up refuses
 * it where the file lists that node). True when c clashes. */
static bool tell_clash(struct device *dev, struct peer *p, const struct cert *c, uint64_t now)
{
    char addr[INET6_ADDRSTRLEN], text[CERT_TEXT_MAX + 1];
    const struct cluster_node *h;
    const struct cert *hc;
    struct cluster_node n;

    if (cert_member_node(c, &dev->membership->file, &n) ||
        !(h = cluster_find_address(&dev->cluster, &n.address)) ||
        !memcmp(h->public_key, n.public_key, CLUSTER_KEY_LEN))
        return false;
    cluster_addr_format(&n.address, addr, sizeof(addr));
    log_info_rl("peer %s: certificate %s not applied: its address %s is %s's, held first; "
                "told it so", p->member.name, c->name, addr, h->name);
    if (h == dev->self && dev->self_cert)
        discovery_send_cert(p, dev->self_cert, strlen(dev->self_cert), now);
    else if ((hc = certs_member(dev->membership->certs, h->public_key)) && !cert_format(hc, text, sizeof(text)))
        discovery_send_cert(p, text, strlen(text), now);
    return true;
}

int members_statement(struct device *dev, const char *text, size_t len, uint64_t now,
                      const char **why)
{
    char line[CERT_TEXT_MAX + 1];
    enum certs_verdict v;
    int kept = 0;
    struct cert c;

    *why = "";
    if (!dev->membership->certs)
        return -EPERM;
    while (len && (text[len - 1] == '\n' || text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    if (len > CERT_TEXT_MAX)
        return -EINVAL;
    memcpy(line, text, len);
    line[len] = '\0';
    if (!cert_parse(line, &c) && c.kind == CERT_MEMBER && c.has_token &&
        (!dev->local || memcmp(c.subject, dev->local->public_key, CERT_PUBKEY_LEN))) {
        /* Issue 55: a token's certificate for another key (keys are
         * public) is no one's word here; its key says it on its session. */
        *why = "a token's certificate counts only from its own key (its session, or up)";
        log_notice("authority: a statement given through the control socket: %s: %s",
                   certs_verdict_str(CERTS_NOT_OWN), *why);
        return CERTS_NOT_OWN;
    }
    v = certs_offer(dev->membership->certs, line, unix_now(), why);
    log_notice("authority: a statement given through the control socket: %s%s%s",
               certs_verdict_str(v), (*why)[0] ? ": " : "", *why);
    if (v == CERTS_REVOKING && (kept = revocations_taken(dev, line, len)) < 0)
        *why = "held and passed on, but not kept in the state file: a restart learns it "
               "again only from the members";
    if (v == CERTS_ADDED || v == CERTS_REVOKING)
        pass_on(dev, NULL, line, len, now);
    return kept < 0 ? kept : (int)v;
}

void members_cert_said(struct peer *p, const char *text, size_t len, uint64_t now)
{
    struct device *dev = p->dev;
    const uint64_t cost = WG_NSEC_PER_SEC / CERT_PER_SEC, cap = cost * CERT_BURST;
    char line[CERT_TEXT_MAX + 1];
    const char *why;
    enum certs_verdict v;
    struct cert c;
    bool own;

    if (!dev->membership->certs || len > CERT_TEXT_MAX)
        return;
    p->member.cert_credit_ns += p->member.cert_at_ns ? now - p->member.cert_at_ns : cap;
    p->member.cert_at_ns = now;
    if (p->member.cert_credit_ns > cap)
        p->member.cert_credit_ns = cap;
    if (p->member.cert_credit_ns < cost) {
        log_debug_rl("peer %s: CERT over its rate, dropped", p->member.name);
        return;
    }
    p->member.cert_credit_ns -= cost;
    memcpy(line, text, len);
    line[len] = '\0';
    /* Issue 55: a certificate is its key's own word only on its key's
     * session; one passed on is heard, an introduction that takes
     * nothing from anyone (certs.h). */
    own = said_by_holder(p, line, &c);
    if (own || cert_parse(line, &c))
        v = certs_offer(dev->membership->certs, line, unix_now(), &why);
    else
        v = certs_offer_heard(dev->membership->certs, &c, unix_now(), &why);
    if ((v == CERTS_ADDED || v == CERTS_KNOWN) && own && tell_clash(dev, p, &c, now))
        return;
    if (v != CERTS_ADDED && v != CERTS_REVOKING) {
        if (v != CERTS_KNOWN)
            log_info_rl("peer %s: a statement not taken: %s%s%s", p->member.name,
                        certs_verdict_str(v), why[0] ? ": " : "", why);
        return;
    }
    if (v == CERTS_REVOKING)
        revocations_taken(dev, line, len);
    /* Only news from its source goes on: a revocation (taken once per
     * node), or a member's certificate said by its own key's holder --
     * the member that admitted it tells the others, who tell no one, so
     * a certificate costs each node one message, not one per peer. */
    if (v == CERTS_REVOKING || own)
        pass_on(dev, p, line, len, now);
}

/* When the first probation ends (UINT64_MAX: none). */
static uint64_t probation_next(const struct device *dev)
{
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < PROBATION_MAX; i++) {
        const struct probation_entry *e = &dev->probation.e[i];
        if (e->used && e->since_ns + PROBATION_TIMEOUT_NS < next)
            next = e->since_ns + PROBATION_TIMEOUT_NS;
    }
    return next;
}

static uint64_t certs_due(struct device *dev, uint64_t now)
{
    struct timespec ts;
    uint64_t next, real_ns, check, warn_at;
    size_t changes;
    int ret;

    if (!dev->membership->certs)
        return UINT64_MAX;
    clock_gettime(CLOCK_REALTIME, &ts);
    warn_at = renewal_run(dev, (uint64_t)ts.tv_sec);
    certs_run(dev->membership->certs, (uint64_t)ts.tv_sec);
    members_probation_run(dev, now);
    check = let_go_silent(dev, now);
    if (dev->membership->certs_dirty) {
        /* merged() clears it; let_go() may set it again, for one more
         * pass (a place freed in a token's count). */
        if ((ret = registry_apply(dev, now, &changes))) {
            dev->membership->certs_dirty = false;
            log_warn("authority: a change of certificates not applied: %s", strerror(-ret));
        } else if (changes) {
            log_notice("authority: %zu change%s from certificates (new, expired, revoked, let go)",
                       changes, changes == 1 ? "" : "s");
        }
        if (dev->membership->certs_dirty)
            return now;
    }
    dev->membership->certs_dirty = false;
    if (probation_next(dev) < check)
        check = probation_next(dev);
    if ((next = certs_next_expiry(dev->membership->certs)) > warn_at)
        next = warn_at;                   /* a set point comes first (renewal.h) */
    if (next == UINT64_MAX)
        return check;
    real_ns = (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
    next = next * WG_NSEC_PER_SEC > real_ns ? now + (next * WG_NSEC_PER_SEC - real_ns) : now;
    return next < check ? next : check;
}

uint64_t members_certs_run(struct device *dev, uint64_t now)
{
    uint64_t next = certs_due(dev, now), rounds;

    if (!dev->membership->certs)
        return next;
    rounds = revocations_run(dev, now);
    return rounds < next ? rounds : next;
}

/* The registered nodes the device counts now: those of its model past
 * the file's, but itself and the pending ones. */
static int counted_now(struct device *dev, struct cluster_node **out, size_t *m)
{
    *m = 0;
    if (!(*out = calloc(dev->cluster.n_nodes + 1, sizeof(**out))))
        return -ENOMEM;
    for (size_t i = dev->membership->file.n_nodes; i < dev->cluster.n_nodes; i++) {
        const struct cluster_node *n = &dev->cluster.nodes[i];
        if (n != dev->self && !node_pending(dev, n))
            (*out)[(*m)++] = *n;
    }
    return 0;
}

/* Issue 60: a certificate's route refused (config/routes.h's
 * cluster_routes_admit): logged and counted (state.h). */
static void cert_route_refused(void *ctx, const struct cluster_node *node,
                               const struct cluster_route *r, const char *why)
{
    struct device *dev = ctx;
    char t[CLUSTER_ROUTE_TEXT_MAX + 1];

    cluster_route_format(r, t, sizeof(t));
    log_info_rl("member %s: certificate route %s refused: it overlaps %s, held first",
                node->name, t, why);
    dev->membership->cert_routes_refused++;
}

/* With an authority and no registry: a node for each member
 * certificate held whose key neither the file nor we hold
 * (joined with no server, or passed on by a member): the members of the
 * model we run first, then the authority's own, then a token's, each in
 * the order the store first held them. registry_model keeps the first of
 * a clash (an address two keys derive alike, or one fixed where another
 * derives it), so a newcomer never takes the address of a running
 * member, whatever key it grinds or dates it picks (it is told:
 * members_cert_said). *nodes grows (realloc). */
static int with_certified(struct device *dev, const struct cluster *file,
                          struct cluster_node **nodes, size_t *n)
{
    /* With a registry its records are the members (their certificates
     * vet them): one said on a session waits for its record. */
    size_t held = dev->membership->certs && !dev->membership->registry ? certs_count(dev->membership->certs) : 0, m = 0;
    size_t total = 0;
    const struct cert **order;
    struct cluster_node *grown;
    struct cluster_index *known = NULL, *running = NULL;

    if (!held)
        return 0;
    if (!(order = calloc(held, sizeof(*order))) ||
        !(known = cluster_index_new(*n + file->n_nodes + 2)) ||
        !(running = cluster_index_of(&dev->cluster))) {
        free(order);
        cluster_index_free(known);
        return -ENOMEM;
    }
    for (size_t i = 0; i < *n; i++)
        cluster_index_add(known, &(*nodes)[i]);
    for (size_t i = 0; i < file->n_nodes; i++)
        cluster_index_add(known, &file->nodes[i]);
    if (dev->membership->self_registered)
        cluster_index_add(known, &dev->membership->registry_self);
    for (int tier = 0; tier < 3; tier++)
        for (size_t i = 0; i < held; i++) {
            const struct cert *c = certs_at(dev->membership->certs, i);
            int its = cluster_index_key(running, c->subject) ? 0 : c->has_token ? 2 : 1;
            if (its == tier && !cluster_index_key(known, c->subject) &&
                memcmp(c->subject, dev->local->public_key, CERT_PUBKEY_LEN))
                order[m++] = c;
        }
    cluster_index_free(known);
    cluster_index_free(running);
    if (m && !(grown = realloc(*nodes, (*n + m) * sizeof(**nodes)))) {
        free(order);
        return -ENOMEM;
    }
    if (m)
        *nodes = grown;
    for (size_t i = 0; i < file->n_nodes; i++)
        total += file->nodes[i].n_routes;
    for (size_t i = 0; i < *n; i++)
        total += (*nodes)[i].n_routes;
    for (size_t i = 0; i < m; i++)
        if (cert_member_node(order[i], file, &(*nodes)[*n]) == 0) {
            /* Grants held first keep their prefixes: the file's, then
             * the members of the model we run (ordered first above), so
             * a newcomer never takes a live member's. */
            cluster_routes_admit(file, *nodes, *n, &(*nodes)[*n], &total, cert_route_refused,
                                 dev);
            (*n)++;
        }
    free(order);
    return 0;
}

/* The removals waiting out their grace (registry/vouch.h) before a
 * sort: their keys, to log each once as it begins and once as it ends
 * (VOUCH_GONE_MAX at most: the gone list's room). */
struct graced {
    size_t n;
    struct { char name[CLUSTER_NAME_MAX + 1]; uint8_t key[CLUSTER_KEY_LEN]; } *e;
};

static int graced_before(const struct membership *m, struct graced *g)
{
    g->n = 0;
    if (!(g->e = calloc(m->n_gone + 1, sizeof(*g->e))))
        return -ENOMEM;
    for (size_t i = 0; i < m->n_gone; i++)
        if (m->gone[i].grace) {
            memcpy(g->e[g->n].name, m->gone[i].name, sizeof(g->e[g->n].name));
            memcpy(g->e[g->n++].key, m->gone[i].key, CLUSTER_KEY_LEN);
        }
    return 0;
}

static bool counted_in(const struct vouch_out *v, const uint8_t key[CLUSTER_KEY_LEN])
{
    for (size_t i = 0; i < v->n_counted; i++)
        if (!memcmp(v->nodes[i].public_key, key, CLUSTER_KEY_LEN))
            return true;
    return false;
}

static void graced_log(const struct device *dev, const struct graced *before, const struct vouch_out *v)
{
    const struct membership *m = dev->membership;

    for (size_t i = 0; i < m->n_gone; i++) {
        bool was = false;
        for (size_t j = 0; j < before->n && !was; j++)
            was = !memcmp(before->e[j].key, m->gone[i].key, CLUSTER_KEY_LEN);
        if (m->gone[i].grace && !was)
            log_info_rl("registry: %s's record is gone: its removal waits %llu s for it to come back",
                        m->gone[i].name, (unsigned long long)(members_grace_ns(dev) / NS_PER_S));
    }
    for (size_t j = 0; j < before->n; j++) {
        bool still = false;
        for (size_t i = 0; i < m->n_gone && !still; i++)
            still = m->gone[i].grace && !memcmp(before->e[j].key, m->gone[i].key, CLUSTER_KEY_LEN);
        if (still)
            continue;
        if (counted_in(v, before->e[j].key))
            log_info_rl("registry: %s's record came back within its grace: not removed", before->e[j].name);
        else
            log_info_rl("registry: %s's grace ended without its record: removed", before->e[j].name);
    }
}

/* The earliest end of a grace running, on the loop's clock (UINT64_MAX:
 * none). */
static uint64_t grace_next(const struct device *dev)
{
    const struct membership *m = dev->membership;
    uint64_t next = UINT64_MAX, g = members_grace_ns(dev);

    for (size_t i = 0; i < m->n_gone; i++)
        if (m->gone[i].grace && m->gone[i].left_ns + g < next)
            next = m->gone[i].left_ns + g;
    return next;
}

/* The model to run: the file's nodes, then the registry's as their
 * holders vouched for them (vouch.h, registry.h). */
static int merged(struct device *dev, const struct cluster *file, struct cluster *out,
                  struct vouched *vd, uint64_t now)
{
    struct word_ctx wc = { dev, now, NULL };
    struct skip_ctx sc = { .dev = dev };
    struct cluster_node *counted, *records = dev->membership->registered, *mine = NULL;
    struct cluster_index *counted_ix = NULL;
    struct graced graced = { 0 };
    size_t m, skipped, n_records = dev->membership->n_registered;
    int ret;

    memset(vd, 0, sizeof(*vd));
    vd->file_nodes = file->n_nodes;
    if ((ret = counted_now(dev, &counted, &m)))
        return ret;
    ret = -ENOMEM;
    if (dev->membership->certs) {
        offer_statements(dev);
        dev->membership->certs_dirty = false;         /* the model made here follows the store */
        if (!(counted_ix = cluster_index_new(m + 1)))
            goto out;
        for (size_t i = 0; i < m; i++)
            cluster_index_add(counted_ix, &counted[i]);
        if (vetted(dev, counted_ix, &mine, &n_records))
            goto out;
        records = mine;
        wc.counted = counted_ix;
    }
    if (!dev->membership->gone && (dev->membership->registry || dev->membership->n_registered) &&
        !(dev->membership->gone = calloc(VOUCH_GONE_MAX, sizeof(*dev->membership->gone))))
        goto out;
    if (graced_before(dev->membership, &graced))
        goto out;
    if ((ret = vouch_sort(records, n_records, counted, m, dev->membership->gone,
                          &dev->membership->n_gone, dev->membership->gone ? VOUCH_GONE_MAX : 0, word_of, &wc, now,
                          &vd->v)))
        goto out;
    graced_log(dev, &graced, &vd->v);
    dev->membership->grace_due_ns = grace_next(dev);
    ret = -ENOMEM;
    if (!(vd->pending = cluster_index_new(vd->v.n - vd->v.n_counted + 1)))
        goto out;
    for (size_t i = vd->v.n_counted; i < vd->v.n; i++)
        cluster_index_add(vd->pending, &vd->v.nodes[i]);
    dev->membership->cert_routes_refused = 0;
    if ((ret = with_certified(dev, file, &vd->v.nodes, &vd->v.n)))
        goto out;
    ret = registry_model(file, dev->membership->self_registered ? &dev->membership->registry_self : NULL, vd->v.nodes,
                         vd->v.n, out, &skipped, on_skip, &sc);
    if (!ret && dev->membership->certs)
        note_clash(dev, &sc.lost);
out:
    free(counted);
    free(mine);
    free(graced.e);
    cluster_index_free(counted_ix);
    if (ret)
        vouched_free(vd);
    return ret;
}

/* Applies the model next (taken) as the file's comment says; *changes:
 * how many. Nothing changes unless it returns 0. */
static int apply(struct device *dev, struct cluster *next, const struct vouched *vd,
                 const char *source, members_say say, void *ctx, uint64_t now, size_t *changes)
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
        plan_commit(dev, next, &d, self, &pl, vd, now);
        plan_free(&pl, false);
    }
    if (ret)
        goto out;
    if (!d.n && d.rules)
        take_rules(dev, next, source, say, ctx);
    else if (d.rules)
        sayf(say, ctx, MEMBERS_SAY_CHANGE, "rules changed (%u rules)", dev->cluster.rules.n);
    *changes = d.n + d.rules;
    /* The same model, but a record now counts or waits: the map and the
     * names follow. */
    if (!d.n && set_pending(dev, vd)) {
        if (device_remap(dev))
            log_error("membership: out of memory for the address map");
        if (dev->membership->hosts_fd >= 0 && (ret = members_write_hosts(dev)))
            log_warn("membership: the names block was not updated: %s", strerror(-ret));
    }
    if (d.n && dev->membership->hosts_fd >= 0 && (ret = members_write_hosts(dev)))
        log_warn("membership: the names block was not updated: %s", strerror(-ret));
    ret = 0;
out:
    cluster_diff_free(&d);
    cluster_free(next);
    return ret;
}

/* After a reload applied: the authority's keys the file trusts now (a
 * step of a rotation; one with no key in common was refused). Members of
 * a key dropped go at the next pass (the store's changed callback). */
static void trust_of_file(struct device *dev)
{
    const struct cluster *f = &dev->membership->file;

    if (!dev->membership->certs || !f->has_authority)
        return;
    /* The running model's too: the next reload's step is judged from it. */
    memcpy(dev->cluster.authority, f->authority, CLUSTER_KEY_LEN);
    dev->cluster.has_authority_next = f->has_authority_next;
    memcpy(dev->cluster.authority_next, f->authority_next, CLUSTER_KEY_LEN);
    certs_trust(dev->membership->certs, f->authority,
                f->has_authority_next ? f->authority_next : NULL);
    if (dev->membership->registry)
        registry_trust(dev->membership->registry, f);
}

int members_reload(struct device *dev, const char *text, size_t len, members_say say,
                   void *ctx, uint64_t now)
{
    struct cluster file, next;
    struct vouched vd;
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
    revocations_of_file(dev, &file);          /* taken even if the rest is refused */
    if ((ret = merged(dev, &file, &next, &vd, now))) {
        cluster_free(&file);
        return ret;
    }
    ret = apply(dev, &next, &vd, "reload", say, ctx, now, &changes);
    vouched_free(&vd);
    if (ret) {
        cluster_free(&file);
        return ret;
    }
    cluster_free(&dev->membership->file);
    dev->membership->file = file;
    trust_of_file(dev);
    members_checksum(text, len, dev->membership->cluster_sum);
    dev->membership->cluster_applied_unix = (uint64_t)time(NULL);
    log_applied(dev, changes);
    return 0;
}

static void say_to_log(void *ctx, const char *kind, const char *line)
{
    (void)ctx;
    if (strcmp(kind, MEMBERS_SAY_CHANGE))
        log_warn("registry: %s", line);
}

/* The registry's nodes as the device holds them, applied again. */
static int registry_apply(struct device *dev, uint64_t now, size_t *changes)
{
    struct cluster next;
    struct vouched vd;
    int ret;

    if ((ret = merged(dev, &dev->membership->file, &next, &vd, now)))
        return ret;
    ret = apply(dev, &next, &vd, dev->membership->registry ? "registry" : "authority", say_to_log, NULL, now,
                changes);
    vouched_free(&vd);
    if (!ret)
        let_go(dev);
    return ret;
}

int members_registry(struct device *dev, struct cluster_node *nodes, size_t n, char *statements,
                     int64_t revision, uint64_t now)
{
    size_t changes;
    int ret;

    free(dev->membership->statements);
    dev->membership->statements = statements;
    free(dev->membership->registered);
    dev->membership->registered = nodes;
    dev->membership->n_registered = n;
    if ((ret = registry_apply(dev, now, &changes)))
        return ret;
    dev->membership->registry_revision = revision;
    if (changes)
        log_notice("registry: revision %lld applied: %zu change%s", (long long)revision, changes,
                   changes == 1 ? "" : "s");
    /* Said at each change while true: the peers would only sit at
     * "never", and the handshake warnings blame firewalls. */
    if (changes && members_none_reachable(&dev->cluster))
        log_warn("registry: no member of the cluster has an address to be reached at (no "
                 "node published one, none joined with --endpoint and the file gives "
                 "none): no handshake can start; give at least one node --endpoint "
                 "HOST:PORT");
    return 0;
}

uint64_t members_grace_run(struct device *dev, uint64_t now)
{
    uint64_t next = dev->membership->grace_due_ns;
    size_t changes;
    int ret;

    if (!next || next > now)
        return next ? next : UINT64_MAX;
    if ((ret = registry_apply(dev, now, &changes)))
        log_warn("registry: a grace's end not applied: %s", strerror(-ret));
    else if (changes)
        log_notice("registry: %zu change%s at a grace's end", changes, changes == 1 ? "" : "s");
    next = grace_next(dev);
    /* Not applied (out of memory): tried again in a second, not at once. */
    dev->membership->grace_due_ns = next > now ? next : now + NS_PER_S;
    return dev->membership->grace_due_ns;
}

bool members_none_reachable(const struct cluster *c)
{
    if (c->n_nodes < 2)
        return false;   /* alone: nothing to reach */
    for (size_t i = 0; i < c->n_nodes; i++)
        if (c->nodes[i].has_endpoint || c->nodes[i].n_candidates || c->nodes[i].has_observed)
            return false;   /* a candidate of its record is somewhere to try */
    return true;
}

int members_take_hosts(struct device *dev, int fd)
{
    struct stat now, next;
    int ret;

    if (fd < 0)
        return -EBADF;
    if (fstat(fd, &next) != 0 || !S_ISREG(next.st_mode)) {
        close(fd);
        return -EINVAL;
    }
    /* A node that writes no names block does not start here. */
    if (dev->membership->hosts_fd < 0 || (fstat(dev->membership->hosts_fd, &now) == 0 &&
                              now.st_dev == next.st_dev && now.st_ino == next.st_ino)) {
        close(fd);
        return 0;
    }
    /* dup2, not a new number: the writer thread (hosts_writer.h) holds
     * this one; a write of its in flight ends in the old file, the next
     * goes to the new one. */
    if (dup2(fd, dev->membership->hosts_fd) < 0) {
        ret = -errno;
        close(fd);
        return ret;
    }
    close(fd);
    ret = members_write_hosts(dev);
    if (ret < 0) {
        log_warn("the names block was not written to the new hosts file: %s", strerror(-ret));
        return ret;
    }
    log_notice("the names block follows the new hosts file (the old one was replaced)");
    return 1;
}

void members_recheck(struct device *dev, uint64_t now)
{
    size_t changes;
    int ret = registry_apply(dev, now, &changes);

    if (ret)
        log_warn("registry: a peer's word on its record not applied: %s", strerror(-ret));
    else if (changes)
        log_notice("registry: %zu change%s on a peer's word on its record", changes,
                   changes == 1 ? "" : "s");
}
