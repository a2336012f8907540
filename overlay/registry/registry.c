/* SPDX-License-Identifier: MIT */
/* The registry (registry.h): joining, the keeper and watcher threads, the
 * snapshot handed to the loop, and the model merged from file and etcd. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/cluster_index.h"
#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/registry/alloc.h"
#include "overlay/registry/cands.h"
#include "overlay/registry/etcd.h"
#include "overlay/registry/record.h"
#include "overlay/registry/registry.h"

#define PEM_MAX          (64u * 1024u)
#define PASSWORD_MAX     256u
#define KEY_TEXT_MAX     (CLUSTER_REGISTRY_PREFIX_MAX + 64u)
#define KEY_B64_LEN      sodium_base64_ENCODED_LEN(CLUSTER_KEY_LEN, sodium_base64_VARIANT_ORIGINAL)
#define ALLOC_TRIES      64
#define ALLOC_SPREAD     32u      /* in a full network: among this many stale ones */
#define REPAIR_EVERY_MS  1000u    /* our record put back at most this often */

struct member {
    char name[CLUSTER_NAME_MAX + 1];
    int64_t created;                      /* etcd's create_revision: who came first */
    struct cluster_node node;
    char *cert;                           /* its certificate, verified when read; NULL: none */
};

/* A revocation under PREFIX/members-revoked/, verified when read: the
 * key it came under first, and what it revokes (its id). */
#define REVOKED_TAIL_MAX 128u
struct revoked {
    char tail[REVOKED_TAIL_MAX];
    uint8_t what[CERT_ID_LEN];
    char *line;
};

struct registry {
    /* What decoding and allocation check against: the network and the
     * file's nodes (their addresses are never handed out). */
    struct cluster_addr network;
    unsigned net_prefix;
    struct cluster_addr *file_addrs;
    size_t n_file_addrs;
    char prefix[CLUSTER_REGISTRY_PREFIX_MAX + 1];
    char members_prefix[KEY_TEXT_MAX];
    char watch_prefix[KEY_TEXT_MAX];      /* PREFIX/members: records and revocations */
    /* The watcher's alone: the latest revision it applied (a cut watch
     * resumes after it). */
    int64_t watch_seen;
    unsigned ttl_s;
    /* With an authority: certificates and revocations are checked here,
     * off the loop, so that what the loop is handed verified when read
     * (the loop's store checks each new one again: certs.h). */
    bool has_authority;
    uint8_t authority[CERT_PUBKEY_LEN];
    /* A rotation's second key (`authority = KEY NEXT`); with authority,
     * changed under lock by registry_trust, read under it. */
    bool has_authority_next;
    uint8_t authority_next[CERT_PUBKEY_LEN];
    char self_cert[CERT_TEXT_MAX + 1];    /* ours, put in our record */
    /* The client's configuration, owned here. */
    char *urls[CLUSTER_REGISTRY_ENDPOINTS_MAX];
    struct etcd_config cfg;
    void *ca, *cert, *key;
    char *user, *password;
    struct etcd *etcd;                    /* the caller's thread: join, leave */
    /* After a join: our record and the lease that holds it (the keeper's
     * alone once it runs), and what our own candidates are read with. */
    bool joined;
    struct cluster_node self;
    char self_value[RECORD_VALUE_MAX + 1];
    _Atomic int64_t lease;
    uint16_t listen_port;                 /* the cluster's; self.port overrides */
    /* Under lock: where a member saw us, from the loop (registry_observed),
     * and news of it for the keeper. */
    bool has_observed, observed_news;
    struct cluster_cand observed;
    /* Threads. */
    pthread_t watcher, keeper;
    bool watcher_on, keeper_on;
    atomic_bool stop;
    pthread_mutex_t lock;
    pthread_cond_t wake;                  /* stop or repair, for the keeper's sleep */
    /* Our record was deleted or written over by another writer (the
     * watcher saw it): the keeper puts it back (repair_record). */
    atomic_bool repair;
    int event_fd;
    /* Under lock: the registered nodes as the watcher knows them. */
    struct member *members;
    size_t n_members, cap_members;
    struct revoked *revoked;              /* REGISTRY_REVOKED_MAX at most */
    size_t n_revoked;
    char *statements;                     /* built at the last take, for the loop */
    int64_t revision;
    bool fresh;                           /* changed since the last take */
    struct registry_status status;
};

/* --- files read at set-up ----------------------------------------------------- */

static int read_small(const char *path, size_t max, char **out, size_t *len, char *err,
                      size_t errlen, const char *what, bool secret)
{
    /* A CA or certificate is often a link (/etc/ssl/certs); a secret is
     * read only from the file named, whose mode was checked. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | (secret ? O_NOFOLLOW : 0));
    struct stat st;
    ssize_t n;

    if (fd < 0) {
        snprintf(err, errlen, "%s %s: %s", what, path, strerror(errno));
        return -errno;
    }
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (size_t)st.st_size > max) {
        close(fd);
        snprintf(err, errlen, "%s %s: not a regular file of at most %zu bytes", what, path, max);
        return -EINVAL;
    }
    *out = calloc(1, (size_t)st.st_size + 1);
    if (!*out) {
        close(fd);
        return -ENOMEM;
    }
    n = read(fd, *out, (size_t)st.st_size);
    close(fd);
    if (n != st.st_size) {
        free(*out);
        *out = NULL;
        snprintf(err, errlen, "%s %s: short read", what, path);
        return -EIO;
    }
    *len = (size_t)n;
    return 0;
}

/* A secret's file -- the password's, the TLS client key's -- judged as the
 * WireGuard key file is (daemon/keyfile.h): the file itself, not a link;
 * owned by root or by us; nothing for group or others. */
static int check_secret_file(const char *what, const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (lstat(path, &st) != 0)
        return 0;                         /* read_small says why */
    if (S_ISLNK(st.st_mode)) {
        snprintf(err, errlen, "%s %s: a symbolic link; name the file itself", what, path);
        return -ELOOP;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s %s: owned by uid %u, not by root; run: chown root %s", what,
                 path, (unsigned)st.st_uid, path);
        return -EPERM;
    }
    if (st.st_mode & (S_IRWXG | S_IRWXO)) {
        snprintf(err, errlen, "%s %s: readable by group or others; run: chmod 600 %s", what,
                 path, path);
        return -EPERM;
    }
    return 0;
}

static int read_password(struct registry *r, const char *path, char *err, size_t errlen)
{
    size_t len;
    int ret;

    if ((ret = check_secret_file("registry-password-file", path, err, errlen)) ||
        (ret = read_small(path, PASSWORD_MAX, &r->password, &len, err, errlen,
                          "registry-password-file", true)))
        return ret;
    while (len && (r->password[len - 1] == '\n' || r->password[len - 1] == '\r'))
        r->password[--len] = '\0';
    return 0;
}

static int read_client_files(struct registry *r, const struct cluster_registry *c, char *err,
                             size_t errlen)
{
    int ret = 0;

    if (c->ca[0] && (ret = read_small(c->ca, PEM_MAX, (char **)&r->ca, &r->cfg.ca_len, err,
                                      errlen, "registry-ca", false)))
        return ret;
    if (c->cert[0] && ((ret = read_small(c->cert, PEM_MAX, (char **)&r->cert, &r->cfg.cert_len,
                                         err, errlen, "registry-cert", false)) ||
                       (ret = check_secret_file("registry-key", c->key, err, errlen)) ||
                       (ret = read_small(c->key, PEM_MAX, (char **)&r->key, &r->cfg.key_len,
                                         err, errlen, "registry-key", true))))
        return ret;
    if (c->user[0] && (ret = read_password(r, c->password_file, err, errlen)))
        return ret;
    r->cfg.ca = r->ca;
    r->cfg.cert = r->cert;
    r->cfg.key = r->key;
    r->user = c->user[0] ? strdup(c->user) : NULL;
    r->cfg.user = r->user;
    r->cfg.password = r->password;
    return c->user[0] && !r->user ? -ENOMEM : 0;
}

static int make_urls(struct registry *r, const struct cluster_registry *c)
{
    bool tls = c->ca[0] || c->cert[0];

    for (size_t i = 0; i < c->n_endpoints; i++) {
        char ep[CLUSTER_HOST_MAX + 16];
        if (cluster_endpoint_format(&c->endpoints[i], ep, sizeof(ep)) < 0 ||
            asprintf(&r->urls[i], "%s://%s", tls ? "https" : "http", ep) < 0) {
            r->urls[i] = NULL;
            return -ENOMEM;
        }
    }
    r->cfg.urls = (const char *const *)r->urls;
    r->cfg.n_urls = c->n_endpoints;
    r->cfg.timeout_ms = REGISTRY_TIMEOUT_MS;
    return 0;
}

struct registry *registry_new(const struct cluster *c, char *err, size_t errlen)
{
    struct registry *r = calloc(1, sizeof(*r));
    int ret = -ENOMEM;

    if (!r)
        goto fail;
    r->network = c->network;
    r->net_prefix = c->prefix;
    r->ttl_s = c->registry.ttl_s ? c->registry.ttl_s : CLUSTER_REGISTRY_TTL_DEFAULT;
    r->listen_port = c->port;
    snprintf(r->prefix, sizeof(r->prefix), "%s", c->registry.prefix);
    snprintf(r->members_prefix, sizeof(r->members_prefix), "%s%s", r->prefix, RECORD_MEMBERS);
    snprintf(r->watch_prefix, sizeof(r->watch_prefix), "%s%s", r->prefix, RECORD_WATCHED);
    r->has_authority = c->has_authority;
    memcpy(r->authority, c->authority, CERT_PUBKEY_LEN);
    r->has_authority_next = c->has_authority_next;
    memcpy(r->authority_next, c->authority_next, CERT_PUBKEY_LEN);
    r->event_fd = -1;
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->wake, NULL);
    r->file_addrs = calloc(c->n_nodes + 1, sizeof(*r->file_addrs));
    if (!r->file_addrs)
        goto fail;
    for (size_t i = 0; i < c->n_nodes; i++)
        r->file_addrs[r->n_file_addrs++] = c->nodes[i].address;
    if ((ret = make_urls(r, &c->registry)) || (ret = read_client_files(r, &c->registry, err,
                                                                       errlen)))
        goto fail;
    ret = -ENOMEM;
    if ((r->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0 || !(r->etcd = etcd_new(&r->cfg)))
        goto fail;
    return r;
fail:
    if (ret == -ENOMEM)
        snprintf(err, errlen, "registry: out of memory");
    registry_free(r);
    return NULL;
}

/* Every member and revocation forgotten (the watcher reads all again). */
static void forget_all(struct registry *r)
{
    for (size_t i = 0; i < r->n_members; i++)
        free(r->members[i].cert);
    for (size_t i = 0; i < r->n_revoked; i++)
        free(r->revoked[i].line);
    r->n_members = r->n_revoked = 0;
}

void registry_set_cert(struct registry *r, const char *cert)
{
    pthread_mutex_lock(&r->lock);
    snprintf(r->self_cert, sizeof(r->self_cert), "%s", cert ? cert : "");
    pthread_mutex_unlock(&r->lock);
}

void registry_trust(struct registry *r, const struct cluster *c)
{
    pthread_mutex_lock(&r->lock);
    memcpy(r->authority, c->authority, CERT_PUBKEY_LEN);
    r->has_authority_next = c->has_authority_next;
    memcpy(r->authority_next, c->authority_next, CERT_PUBKEY_LEN);
    pthread_mutex_unlock(&r->lock);
}

void registry_cert_renewed(struct registry *r, const char *cert)
{
    pthread_mutex_lock(&r->lock);
    snprintf(r->self_cert, sizeof(r->self_cert), "%s", cert);
    r->observed_news = true;              /* the keeper looks at our record again */
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
}

/* Our certificate as it is now (the loop renews it: registry_cert_renewed). */
static void self_cert_now(struct registry *r, char out[CERT_TEXT_MAX + 1])
{
    pthread_mutex_lock(&r->lock);
    memcpy(out, r->self_cert, CERT_TEXT_MAX + 1);
    pthread_mutex_unlock(&r->lock);
}

void registry_free(struct registry *r)
{
    if (!r)
        return;
    registry_leave(r);
    etcd_free(r->etcd);
    for (size_t i = 0; i < CLUSTER_REGISTRY_ENDPOINTS_MAX; i++)
        free(r->urls[i]);
    if (r->key)
        sodium_memzero(r->key, r->cfg.key_len);
    free(r->ca);
    free(r->cert);
    free(r->key);
    free(r->user);
    if (r->password)
        sodium_memzero(r->password, strlen(r->password));
    free(r->password);
    free(r->file_addrs);
    forget_all(r);
    free(r->members);
    free(r->revoked);
    free(r->statements);
    if (r->event_fd >= 0)
        close(r->event_fd);
    pthread_mutex_destroy(&r->lock);
    pthread_cond_destroy(&r->wake);
    free(r);
}

int registry_event_fd(const struct registry *r)
{
    return r->event_fd;
}

/* --- status -------------------------------------------------------------------- */

const char *registry_state_name(enum registry_state s)
{
    static const char *const names[] = { "connecting", "synced", "unreachable" };

    return (unsigned)s < sizeof(names) / sizeof(names[0]) ? names[s] : "unknown";
}

/* Records the state (and the error for the log, once per change). */
static void set_state(struct registry *r, struct etcd *e, enum registry_state s, const char *error)
{
    bool changed;

    pthread_mutex_lock(&r->lock);
    changed = r->status.state != s;
    r->status.state = s;
    snprintf(r->status.error, sizeof(r->status.error), "%s", error ? error : "");
    snprintf(r->status.endpoint, sizeof(r->status.endpoint), "%s", etcd_endpoint(e));
    pthread_mutex_unlock(&r->lock);
    if (changed && s == REGISTRY_UNREACHABLE)
        log_warn("registry: %s; keeping the last membership, trying again", error);
    else if (s == REGISTRY_UNREACHABLE)
        log_debug_rl("registry: still out of reach: %s", error);
    else if (changed && s == REGISTRY_SYNCED)
        log_info("registry: following %s at %s", r->members_prefix, etcd_endpoint(e));
}

void registry_status(struct registry *r, struct registry_status *out)
{
    pthread_mutex_lock(&r->lock);
    *out = r->status;
    pthread_mutex_unlock(&r->lock);
}

/* --- joining ------------------------------------------------------------------- */

struct scan {
    struct registry *r;
    const uint8_t *key;
    const char *key_b64, *name;
    /* what was found */
    struct cluster_addr *taken;
    size_t n_taken, cap_taken;
    bool has_own_address;
    struct cluster_addr own_address;
    char other_name[CLUSTER_NAME_MAX + 1];     /* our key under another name */
    bool name_taken;                           /* our name under another key */
    bool name_ours;
    char old_value[RECORD_VALUE_MAX + 1];      /* our stale record, to replace */
    /* For taking over an address whose key left (alloc_reclaim): each
     * address record, parallel to taken, and the members' keys. */
    struct alloc_held *held;
    size_t cap_held;
    uint8_t (*live)[CLUSTER_KEY_LEN];
    size_t n_live, cap_live;
    int64_t reclaim_revision;                  /* the record taken over; 0: none */
    bool oom;
    long timeout_ms;                           /* a join's request, as it stands */
};

static uint64_t mono_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * MS_PER_S + (uint64_t)t.tv_nsec / NS_PER_MS;
}

/* arr with room for one more (n used of *cap, each size bytes): arr
 * itself, or a larger copy; NULL without memory (arr is kept). */
static void *room(void *arr, size_t n, size_t *cap, size_t size)
{
    size_t c = *cap ? 2 * *cap : 64;
    void *t;

    if (n < *cap)
        return arr;
    if ((t = realloc(arr, c * size)))
        *cap = c;
    return t;
}

static void scan_address(void *ctx, const struct etcd_kv *kv)
{
    struct scan *s = ctx;
    char tail[CLUSTER_HOST_MAX + 3];
    struct cluster_addr a;

    if (!record_key_tail(s->r->prefix, RECORD_ADDRESSES, kv->key, kv->key_len, tail, sizeof(tail)) ||
        cluster_addr_parse(tail, &a) < 0)
        return;
    if (kv->value_len == strlen(s->key_b64) && !memcmp(kv->value, s->key_b64, kv->value_len)) {
        s->has_own_address = true;
        s->own_address = a;
    }
    struct cluster_addr *taken = room(s->taken, s->n_taken, &s->cap_taken, sizeof(*taken));
    if (taken)
        s->taken = taken;
    struct alloc_held *held = room(s->held, s->n_taken, &s->cap_held, sizeof(*held));
    if (held)
        s->held = held;
    if (!taken || !held) {
        s->oom = true;
        return;
    }
    struct alloc_held *h = &s->held[s->n_taken];
    char b64[KEY_B64_LEN];
    size_t key_len = 0;
    snprintf(b64, sizeof(b64), "%.*s", (int)kv->value_len, kv->value);
    h->address = a;
    h->mod_revision = kv->mod_revision;
    h->key_ok = kv->value_len < sizeof(b64) &&
                sodium_base642bin(h->key, sizeof(h->key), b64, strlen(b64), NULL, &key_len, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) == 0 &&
                key_len == CLUSTER_KEY_LEN;
    s->taken[s->n_taken++] = a;
}

static void scan_member(void *ctx, const struct etcd_kv *kv)
{
    struct scan *s = ctx;
    struct cluster c = { .network = s->r->network, .prefix = s->r->net_prefix };
    struct cluster_node n;
    const char *why;
    char tail[CLUSTER_NAME_MAX + 1];

    if (!record_key_tail(s->r->prefix, RECORD_MEMBERS, kv->key, kv->key_len, tail, sizeof(tail)) ||
        record_decode(kv->value, kv->value_len, &c, &n, &why) != 0)
        return;
    uint8_t (*live)[CLUSTER_KEY_LEN] = room(s->live, s->n_live, &s->cap_live, sizeof(*live));
    if (!live) {
        s->oom = true;
        return;
    }
    s->live = live;
    memcpy(s->live[s->n_live++], n.public_key, CLUSTER_KEY_LEN);
    bool same_key = !sodium_memcmp(n.public_key, s->key, CLUSTER_KEY_LEN);
    if (!strcasecmp(tail, s->name)) {
        s->name_ours = same_key;
        s->name_taken = !same_key;
        if (same_key)
            snprintf(s->old_value, sizeof(s->old_value), "%.*s", (int)kv->value_len, kv->value);
    } else if (same_key) {
        snprintf(s->other_name, sizeof(s->other_name), "%s", tail);
    }
}

static void scan_kv(void *ctx, const struct etcd_kv *kv)
{
    struct scan *s = ctx;
    size_t p = strlen(s->r->prefix);

    if (kv->key_len > p + strlen(RECORD_MEMBERS) &&
        !memcmp(kv->key + p, RECORD_MEMBERS, strlen(RECORD_MEMBERS)))
        scan_member(ctx, kv);
    else
        scan_address(ctx, kv);
}

static bool unreachable(int ret)
{
    return ret == -ETIMEDOUT || ret == -ECONNREFUSED || ret == -EHOSTUNREACH || ret == -EIO ||
           ret == -EPIPE;
}

/* Reads the whole prefix once: members (conflicts) and addresses. */
static int scan_prefix(struct registry *r, struct scan *s)
{
    char prefix[KEY_TEXT_MAX];
    int64_t rev;
    int ret;

    s->n_taken = s->n_live = 0;
    s->reclaim_revision = 0;
    s->has_own_address = s->name_taken = s->name_ours = false;
    s->other_name[0] = s->old_value[0] = '\0';
    snprintf(prefix, sizeof(prefix), "%s/", r->prefix);
    if ((ret = etcd_range_prefix(r->etcd, prefix, scan_kv, s, &rev)))
        return ret;
    return s->oom ? -ENOMEM : 0;
}

/* The address to claim: our key's, else a free one spread over the
 * network: first the one our key names, after a transaction lost to
 * another node one drawn at random (alloc_pick says why). */
static int pick_address(struct registry *r, struct scan *s, int tries, struct cluster_addr *out)
{
    struct cluster_addr *all;
    uint64_t rnd;

    if (s->has_own_address) {
        *out = s->own_address;
        return 0;
    }
    all = realloc(s->taken, (s->n_taken + r->n_file_addrs + 1) * sizeof(*all));
    if (!all)
        return -ENOMEM;
    s->taken = all;
    s->cap_taken = s->n_taken + r->n_file_addrs + 1;
    memcpy(all + s->n_taken, r->file_addrs, r->n_file_addrs * sizeof(*all));
    randombytes_buf(&rnd, sizeof(rnd));
    int ret = alloc_pick(&r->network, r->net_prefix, all, s->n_taken + r->n_file_addrs,
                         s->key, (unsigned)tries, rnd, out);
    if (ret != -ENOSPC)
        return ret;
    /* Full: an address whose key is no member's any more, the one
     * claimed longest ago. */
    int i = alloc_reclaim(s->held, s->n_taken, s->live, s->n_live,
                          tries ? randombytes_uniform(ALLOC_SPREAD) : 0);
    if (i < 0)
        return -ENOSPC;
    *out = s->held[i].address;
    s->reclaim_revision = s->held[i].mod_revision;
    return 0;
}

/* The record we join with, as etcd will hold it, in r->self_value: r->self
 * naming no candidate. Our socket is not bound yet, and a member's
 * handshakes to it now would be lost (and, crossing ours, hold theirs
 * back); the keeper puts them as soon as it starts, with the socket bound
 * (keeper_run). */
static int encode_joined(struct registry *r)
{
    struct cluster_node bare = r->self;
    char cert[CERT_TEXT_MAX + 1];

    bare.n_candidates = 0;
    self_cert_now(r, cert);
    return record_encode_cert(&bare, cert, r->self_value, sizeof(r->self_value));
}

/* One transaction: the address (unless it is already our key's) and our
 * record under the lease, each only if nobody took it since we looked. */
static int claim(struct registry *r, struct scan *s, int64_t lease, bool *done)
{
    char akey[KEY_TEXT_MAX], mkey[KEY_TEXT_MAX];
    struct etcd_cmp cmps[2];
    struct etcd_put puts[2];
    size_t n = 0;
    int ret;

    if ((ret = record_address_key(r->prefix, &r->self.address, akey, sizeof(akey))) < 0 ||
        (ret = record_member_key(r->prefix, r->self.name, mkey, sizeof(mkey))) < 0)
        return ret;
    if (!s->has_own_address) {
        /* A free address: nobody made it since; one taken over: nobody
         * took it over since. */
        cmps[n] = (struct etcd_cmp){ akey, NULL, s->reclaim_revision };
        puts[n++] = (struct etcd_put){ akey, s->key_b64, 0 };
    }
    cmps[n] = (struct etcd_cmp){ mkey, s->name_ours ? s->old_value : NULL, 0 };
    puts[n++] = (struct etcd_put){ mkey, r->self_value, lease };
    return etcd_txn(r->etcd, cmps, n, puts, n, done);
}

/* Before each of a join's requests: its time-out, s->timeout_ms, cut to
 * what is left until deadline_ms (never below REGISTRY_TIMEOUT_MS), so
 * that a join ends soon after its deadline (`up` waits for it). */
static void join_request_time(struct registry *r, const struct scan *s, uint64_t deadline_ms)
{
    uint64_t now = mono_ms();
    long left = now < deadline_ms ? (long)(deadline_ms - now) : 0;
    long t = s->timeout_ms < left ? s->timeout_ms : left;

    etcd_set_timeout(r->etcd, t > REGISTRY_TIMEOUT_MS ? t : REGISTRY_TIMEOUT_MS);
}

/* One try at joining: up to ALLOC_TRIES claims (each after reading the
 * prefix again), until one wins or deadline_ms passes. */
static int join_once(struct registry *r, struct cluster_node *self, struct scan *s,
                     int64_t *lease, uint64_t deadline_ms, char *err, size_t errlen)
{
    bool done = false;
    int ret, tries;

    for (tries = 0; tries < ALLOC_TRIES && (!tries || mono_ms() < deadline_ms); tries++) {
        join_request_time(r, s, deadline_ms);
        if ((ret = scan_prefix(r, s)))
            return ret;
        if (s->name_taken) {
            snprintf(err, errlen, "registry: the name %s is registered with another key; "
                     "choose another with --name", self->name);
            return -EEXIST;
        }
        if (s->other_name[0]) {
            snprintf(err, errlen, "registry: this key is registered as %s; run `ddpnet down` "
                     "there first (or wait %u s for its lease to run out)", s->other_name,
                     r->ttl_s);
            return -EEXIST;
        }
        if ((ret = pick_address(r, s, tries, &self->address))) {
            if (ret == -ENOSPC)
                snprintf(err, errlen, "registry: no free address left in the network");
            return ret;
        }
        r->self = *self;
        if ((ret = encode_joined(r)) < 0)
            return ret;
        join_request_time(r, s, deadline_ms);
        if (!*lease && (ret = etcd_lease_grant(r->etcd, r->ttl_s, lease)))
            return ret;
        join_request_time(r, s, deadline_ms);
        if ((ret = claim(r, s, *lease, &done)))
            return ret;
        if (done) {
            atomic_store(&r->lease, *lease);
            if (s->reclaim_revision) {
                char addr[CLUSTER_HOST_MAX + 3];
                cluster_addr_format(&self->address, addr, sizeof(addr));
                log_notice("registry: the network is full; took over %s, whose key is no "
                           "member's any more", addr);
            }
            return 0;
        }
    }
    snprintf(err, errlen, "registry: %d claims of an address all lost to other nodes", tries);
    return -EAGAIN;
}

/* A try that failed for a reason that passes: etcd out of reach, slow (a
 * request timed out), in trouble (5xx) or too busy (429), our lease gone
 * (it ran out while etcd was slow: 404), every claim lost to nodes
 * joining at the same time. Anything else (the name or the key held
 * elsewhere, the network full, a refusal of etcd's) trying again would
 * not change. */
static bool join_transient(int ret)
{
    return unreachable(ret) || ret == -EBUSY || ret == -ENOENT || ret == -EAGAIN;
}

/* Our own candidates into self (cands.h); the observed one stays. */
static void read_candidates(struct registry *r, struct cluster_node *self)
{
    struct cands_rules rules = { .port = self->port ? self->port : r->listen_port,
                                 .endpoint = self->has_endpoint ? &self->endpoint : NULL,
                                 .network = r->network, .prefix = r->net_prefix };
    unsigned n;
    int ret = cands_gather(&rules, self->candidates, &n);

    if (ret)
        log_debug_rl("registry: cannot read the interface addresses: %s", strerror(-ret));
    self->n_candidates = (uint8_t)n;
}

int registry_join(struct registry *r, struct cluster_node *self, char *err, size_t errlen)
{
    char key_b64[KEY_B64_LEN];
    struct scan s = { .r = r, .key = self->public_key, .key_b64 = key_b64, .name = self->name,
                      .timeout_ms = REGISTRY_JOIN_REQUEST_MIN_MS };
    unsigned backoff = REGISTRY_BACKOFF_MIN_MS, tries;
    uint64_t deadline;
    int64_t lease = 0;
    int ret;

    sodium_bin2base64(key_b64, sizeof(key_b64), self->public_key, CLUSTER_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
    /* Before the loop runs: reading the interfaces may take its time. */
    read_candidates(r, self);
    deadline = mono_ms() + REGISTRY_JOIN_TIMEOUT_S * MS_PER_S;
    for (tries = 1;; tries++) {
        err[0] = '\0';
        ret = join_once(r, self, &s, &lease, deadline, err, errlen);
        if (ret && !err[0])
            snprintf(err, errlen, "registry: %s", ret == -ENOMEM ? "out of memory"
                                                  : etcd_error(r->etcd)[0] ? etcd_error(r->etcd)
                                                                          : strerror(-ret));
        uint64_t now = mono_ms();
        if (!ret || !join_transient(ret) || now >= deadline)
            break;
        /* The next try takes a fresh lease: this one may be gone, or run
         * out before that try's claim. A record the failed try wrote after
         * all (a request that timed out, done) is still ours: the next
         * claim moves it to the new lease. The old lease is left to run
         * out: revoking it would take that record away, and ask more of an
         * etcd in trouble. */
        lease = 0;
        if (ret == -ETIMEDOUT)
            s.timeout_ms = s.timeout_ms * 2 > REGISTRY_JOIN_REQUEST_MAX_MS
                               ? REGISTRY_JOIN_REQUEST_MAX_MS : s.timeout_ms * 2;
        /* Jittered: nodes that failed together do not come back together. */
        unsigned wait = backoff / 2 + randombytes_uniform(backoff / 2 + 1);
        if (wait > deadline - now)
            wait = (unsigned)(deadline - now);
        log_notice("%s; trying again in %u ms (try %u, up to %u s)", err, wait, tries + 1,
                   REGISTRY_JOIN_TIMEOUT_S);
        usleep(wait * US_PER_MS);
        backoff = backoff * 2 > REGISTRY_BACKOFF_MAX_MS ? REGISTRY_BACKOFF_MAX_MS : backoff * 2;
    }
    etcd_set_timeout(r->etcd, REGISTRY_TIMEOUT_MS);
    free(s.taken);
    free(s.held);
    free(s.live);
    if (ret && lease)
        etcd_lease_revoke(r->etcd, lease);
    if (ret && join_transient(ret)) {
        /* Out of time: say for how long, and the last reason. */
        char last[256];
        snprintf(last, sizeof(last), "%s", err + (strncmp(err, "registry: ", 10) ? 0 : 10));
        snprintf(err, errlen, "registry: no join within %u s (%u tries); the last: %s",
                 REGISTRY_JOIN_TIMEOUT_S, tries, last);
    }
    if (ret == 0) {
        char addr[CLUSTER_HOST_MAX + 3];
        r->joined = true;
        cluster_addr_format(&self->address, addr, sizeof(addr));
        log_info("registry: joined as %s, address %s", self->name, addr);
    }
    return ret;
}

void registry_joined_get(struct registry *r, struct registry_joined *out)
{
    memset(out, 0, sizeof(*out));
    out->self = r->self;
    out->lease = atomic_load(&r->lease);
}

int registry_joined_set(struct registry *r, const struct registry_joined *in)
{
    int ret;

    if (!in->lease)
        return -EINVAL;
    r->self = in->self;
    if ((ret = encode_joined(r)) < 0)
        return ret;
    atomic_store(&r->lease, in->lease);
    r->joined = true;
    return 0;
}

/* --- the watcher ------------------------------------------------------------------ */

static struct member *find_member(struct registry *r, const char *name)
{
    for (size_t i = 0; i < r->n_members; i++)
        if (!strcasecmp(r->members[i].name, name))
            return &r->members[i];
    return NULL;
}

static void forget_member(struct registry *r, const char *name)
{
    struct member *m = find_member(r, name);

    if (m) {
        free(m->cert);
        *m = r->members[--r->n_members];
    }
}

/* A statement of our authority that verifies now (of kind), as a new
 * string; NULL otherwise. */
static char *verified(const struct registry *r, const char *text, enum cert_kind kind)
{
    const uint64_t now = (uint64_t)time(NULL);
    enum cert_verdict v;
    struct cert c;

    if (!r->has_authority || cert_parse(text, &c) || c.kind != kind)
        return NULL;
    v = cert_verify(&c, r->authority, now);
    if (v == CERT_BAD_SIGNATURE && r->has_authority_next)   /* a rotation's second key */
        v = cert_verify(&c, r->authority_next, now);
    if (v != CERT_OK)
        return NULL;
    return strdup(text);
}

/* The certificate of a record, verified; NULL when it has none that
 * holds (the record still goes on: membership decides what it counts). */
static char *record_verified(const struct registry *r, const struct etcd_kv *kv)
{
    char text[CERT_TEXT_MAX + 1];

    if (!r->has_authority || record_cert(kv->value, kv->value_len, text, sizeof(text)) != 1)
        return NULL;
    return verified(r, text, CERT_MEMBER);
}

/* A put or delete of PREFIX/members-revoked/TAIL; under lock. A
 * revocation is known by what it revokes, not by the key it came under:
 * every writer of the prefix can put one old revocation under a thousand
 * keys, which then cost a parse each and fill nothing (the authority's
 * next one still finds room). A revocation, once read, stays: a delete
 * changes nothing here, and is said, since only a writer that means harm
 * deletes one. */
static void learn_revoked(struct registry *r, const struct etcd_kv *kv, const char *tail,
                          bool deleted)
{
    char text[CERT_TEXT_MAX + 1];
    struct cert c;
    size_t i;

    if (deleted) {
        for (i = 0; i < r->n_revoked && strcmp(r->revoked[i].tail, tail); i++)
            ;
        if (i < r->n_revoked)
            log_warn_rl("registry: %s%s%s was deleted; the revocation it held still holds here",
                        r->prefix, RECORD_REVOKED, tail);
        return;
    }
    if (kv->value_len >= sizeof(text))
        return;
    memcpy(text, kv->value, kv->value_len);
    text[kv->value_len] = '\0';
    if (cert_parse(text, &c) || c.kind != CERT_REVOCATION)
        goto refused;
    for (i = 0; i < r->n_revoked; i++)
        if (!memcmp(r->revoked[i].what, c.subject, CERT_ID_LEN))
            return;
    if (r->n_revoked == REGISTRY_REVOKED_MAX)
        return;
    if (!r->revoked && !(r->revoked = calloc(REGISTRY_REVOKED_MAX, sizeof(*r->revoked))))
        return;
    if (!(r->revoked[r->n_revoked].line = verified(r, text, CERT_REVOCATION)))
        goto refused;
    memcpy(r->revoked[r->n_revoked].what, c.subject, CERT_ID_LEN);
    snprintf(r->revoked[r->n_revoked++].tail, REVOKED_TAIL_MAX, "%s", tail);
    return;
refused:
    log_warn_rl("registry: ignored %s%s%s: not a revocation of our authority", r->prefix,
                RECORD_REVOKED, tail);
}

/* A put of PREFIX/members/NAME; under lock. Bad values drop the member. */
/* read: from a whole read of the prefix, where each key comes once, so
 * the list need not be searched (that would be the square of the
 * cluster's size). */
static void learn_member(struct registry *r, const struct etcd_kv *kv, const char *name,
                         bool read)
{
    struct cluster c = { .network = r->network, .prefix = r->net_prefix };
    struct cluster_node n;
    const char *why = "";
    struct member *m;

    if (record_decode(kv->value, kv->value_len, &c, &n, &why) != 0 ||
        (strcasecmp(n.name, name) && (why = "a record whose name is not its key's"))) {
        log_warn_rl("registry: ignored %s%s: %s", r->members_prefix, name, why);
        if (!read)
            forget_member(r, name);
        return;
    }
    if (read || !(m = find_member(r, name))) {
        if (r->n_members == r->cap_members) {
            size_t cap = r->cap_members ? 2 * r->cap_members : 64;
            struct member *grown;
            if (cap > CLUSTER_MAX_NODES || !(grown = realloc(r->members, cap * sizeof(*grown)))) {
                log_warn_rl("registry: ignored %s%s: too many members", r->members_prefix, name);
                return;
            }
            r->members = grown;
            r->cap_members = cap;
        }
        m = &r->members[r->n_members++];
        snprintf(m->name, sizeof(m->name), "%s", name);
        m->cert = NULL;
    }
    m->node = n;
    m->created = kv->create_revision;
    free(m->cert);
    m->cert = record_verified(r, kv);
}

static void on_range_kv(void *ctx, const struct etcd_kv *kv)
{
    struct registry *r = ctx;
    char name[CLUSTER_NAME_MAX + 1], tail[REVOKED_TAIL_MAX];

    /* Under the lock: the loop may be taking an earlier snapshot. */
    if (record_key_tail(r->prefix, RECORD_MEMBERS, kv->key, kv->key_len, name, sizeof(name))) {
        pthread_mutex_lock(&r->lock);
        learn_member(r, kv, name, true);
        pthread_mutex_unlock(&r->lock);
    } else if (record_key_tail(r->prefix, RECORD_REVOKED, kv->key, kv->key_len, tail,
                               sizeof(tail))) {
        pthread_mutex_lock(&r->lock);
        learn_revoked(r, kv, tail, false);
        pthread_mutex_unlock(&r->lock);
    }
}

static void publish(struct registry *r, int64_t revision)
{
    uint64_t one = 1;

    r->revision = revision;
    r->fresh = true;
    (void)!write(r->event_fd, &one, sizeof(one));
}

/* Our own record, deleted or changed while our lease lives (and so not
 * by us): another writer did it. */
static bool ours_overwritten(const struct registry *r, bool deleted, const struct etcd_kv *kv,
                             const char *name)
{
    size_t len = strlen(r->self_value);

    return r->joined && atomic_load(&r->lease) && !strcasecmp(name, r->self.name) &&
           (deleted || kv->value_len != len || memcmp(kv->value, r->self_value, len));
}

static int on_watch_event(void *ctx, bool deleted, const struct etcd_kv *kv, int64_t revision)
{
    struct registry *r = ctx;
    char name[CLUSTER_NAME_MAX + 1], tail[REVOKED_TAIL_MAX];

    /* etcd never splits one revision's events between messages, and a
     * message is applied whole: a cut watch resumes after this. */
    if (kv->mod_revision > r->watch_seen)
        r->watch_seen = kv->mod_revision;

    if (record_key_tail(r->prefix, RECORD_REVOKED, kv->key, kv->key_len, tail, sizeof(tail))) {
        pthread_mutex_lock(&r->lock);
        learn_revoked(r, kv, tail, deleted);
        publish(r, revision);
        pthread_mutex_unlock(&r->lock);
        return 0;
    }
    if (!record_key_tail(r->prefix, RECORD_MEMBERS, kv->key, kv->key_len, name, sizeof(name)))
        return 0;
    pthread_mutex_lock(&r->lock);
    if (ours_overwritten(r, deleted, kv, name)) {
        atomic_store(&r->repair, true);
        pthread_cond_broadcast(&r->wake);
    }
    if (deleted)
        forget_member(r, name);
    else
        learn_member(r, kv, name, false);
    publish(r, revision);
    pthread_mutex_unlock(&r->lock);
    return 0;
}

/* Sleeps ms, or less when stopped (or, with repair, when our record
 * wants putting back); false when stopped. */
static bool pause_until(struct registry *r, unsigned ms, bool repair)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += ms / MS_PER_S;
    until.tv_nsec += (long)(ms % MS_PER_S) * (long)NS_PER_MS;
    if (until.tv_nsec >= (long)NS_PER_S) {
        until.tv_sec++;
        until.tv_nsec -= (long)NS_PER_S;
    }
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->stop) && !(repair && atomic_load(&r->repair)) &&
           pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&r->lock);
    return !atomic_load(&r->stop);
}

static bool pause_ms(struct registry *r, unsigned ms)
{
    return pause_until(r, ms, false);
}

bool registry_watch_resumes(int ret)
{
    return ret != -ECANCELED && ret != -ESTALE && ret != -EMSGSIZE;
}

long registry_read_timeout_next(long ms)
{
    return ms * 2 > REGISTRY_JOIN_REQUEST_MAX_MS ? REGISTRY_JOIN_REQUEST_MAX_MS : ms * 2;
}

/* Reads the prefix whole, then watches it from the revision after. A
 * watch that etcd had set up and that was then cut (the stream broke or
 * ended: a busy etcd or its gateway drops streams) takes up where it
 * left off, from the revision after the last event it applied, without
 * reading the prefix again (registry_watch_resumes): a read costs etcd
 * every record. A watch etcd never set up reads it whole again: taking
 * those up from their revisions too cost 256 nodes' joins their etcd
 * (2 to 50 ups of 256 failed in four runs, none without; etcd catches up
 * a watch that starts behind under the lock its writes take). So does
 * one whose history was compacted (-ESTALE) or that fell too far behind
 * for one message (-EMSGSIZE; it was taken up again forever). The read
 * waits REGISTRY_JOIN_REQUEST_MIN_MS, twice as long after each that
 * failed: at 3 s, 786 reads of 255 records were cancelled at 256 nodes
 * and asked again, etcd doing the work each time (issue 59). */
static void *watcher_run(void *arg)
{
    struct registry *r = arg;
    struct etcd *e = etcd_new(&r->cfg);
    unsigned backoff = REGISTRY_BACKOFF_MIN_MS;
    long read_ms = REGISTRY_JOIN_REQUEST_MIN_MS;
    int64_t revision = 0;
    bool resume = false;
    int ret;

    while (e && !atomic_load(&r->stop)) {
        if (resume) {
            ret = 0;
        } else {
            pthread_mutex_lock(&r->lock);
            forget_all(r);                    /* read whole, again */
            r->fresh = false;                 /* nothing to take until it is */
            pthread_mutex_unlock(&r->lock);
            /* The range runs without holding the lock (it may take
             * seconds); each member read takes it. */
            etcd_set_timeout(e, read_ms);
            ret = etcd_range_prefix(e, r->watch_prefix, on_range_kv, r, &revision);
            etcd_set_timeout(e, REGISTRY_TIMEOUT_MS);
            read_ms = ret ? registry_read_timeout_next(read_ms) : REGISTRY_JOIN_REQUEST_MIN_MS;
            if (ret == 0) {
                set_state(r, e, REGISTRY_SYNCED, NULL);
                pthread_mutex_lock(&r->lock);
                publish(r, revision);
                pthread_mutex_unlock(&r->lock);
                r->watch_seen = revision;
            }
        }
        resume = false;
        if (ret == 0) {
            ret = etcd_watch_prefix(e, r->watch_prefix, r->watch_seen + 1, on_watch_event, r,
                                    &r->stop);
            resume = registry_watch_resumes(ret) && etcd_watch_created(e);
        }
        if (ret == -ECANCELED)
            break;
        if (resume) {
            /* Only a watch etcd set up ends the backoff: one refused at
             * once after each read read the prefix whole every 200 ms. */
            backoff = REGISTRY_BACKOFF_MIN_MS;
            log_debug_rl("registry: watch cut (%s); taken up at revision %lld", etcd_error(e),
                         (long long)r->watch_seen + 1);
            if (!pause_ms(r, REGISTRY_BACKOFF_MIN_MS))
                break;
            continue;
        }
        set_state(r, e, REGISTRY_UNREACHABLE, etcd_error(e));
        if (!pause_ms(r, backoff))
            break;
        backoff = backoff * 2 > REGISTRY_BACKOFF_MAX_MS ? REGISTRY_BACKOFF_MAX_MS : backoff * 2;
    }
    etcd_free(e);
    return NULL;
}

/* --- the keeper ------------------------------------------------------------------- */

/* Puts our record under a new lease: where none is, or over our own
 * (still held by the lease that ran out, as etcd may not have dropped it
 * yet); never over another key's (-EEXIST). */
static int rejoin(struct registry *r, struct etcd *e)
{
    char key[KEY_TEXT_MAX];
    int64_t lease;
    bool done = false;
    int ret;

    if ((ret = record_member_key(r->prefix, r->self.name, key, sizeof(key))) < 0 ||
        (ret = etcd_lease_grant(e, r->ttl_s, &lease)))
        return ret;
    if ((ret = etcd_create(e, key, r->self_value, lease, &done)) == 0 && !done)
        ret = etcd_replace(e, key, r->self_value, r->self_value, lease, &done);
    if (ret || !done) {
        etcd_lease_revoke(e, lease);
        return ret ? ret : -EEXIST;
    }
    atomic_store(&r->lease, lease);
    return 0;
}

/* The keeper's sleep: ms, or less when stopped, when news of where we
 * are observed came, or when our record needs putting back (repair);
 * false when stopped. */
static bool keeper_sleep(struct registry *r, uint64_t ms)
{
    struct timespec until;

    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += (time_t)(ms / MS_PER_S);
    until.tv_nsec += (long)(ms % MS_PER_S) * (long)NS_PER_MS;
    if (until.tv_nsec >= (long)NS_PER_S) {
        until.tv_sec++;
        until.tv_nsec -= (long)NS_PER_S;
    }
    pthread_mutex_lock(&r->lock);
    while (!atomic_load(&r->stop) && !r->observed_news && !atomic_load(&r->repair) &&
           pthread_cond_timedwait(&r->wake, &r->lock, &until) != ETIMEDOUT)
        ;
    r->observed_news = false;
    pthread_mutex_unlock(&r->lock);
    return !atomic_load(&r->stop);
}

uint64_t registry_keepalive_next_ms(unsigned ttl_s, unsigned fails, uint64_t now_ms)
{
    uint64_t period = (uint64_t)ttl_s * MS_PER_S / 3, retry = REGISTRY_KEEPALIVE_RETRY_MS;

    for (unsigned i = 1; i < fails && retry < period; i++)
        retry *= 2;
    return now_ms + (fails && retry < period ? retry : period);
}

long registry_keepalive_wait_ms(uint64_t until_ms, uint64_t now_ms)
{
    return until_ms > now_ms + (uint64_t)REGISTRY_TIMEOUT_MS ? (long)(until_ms - now_ms)
                                                             : REGISTRY_TIMEOUT_MS;
}

/* One keep-alive, waiting as long as the lease has left (until_ms, moved
 * on when etcd answers); a lease that ran out (etcd was out of reach too
 * long) is replaced and our record put again, its requests waiting as
 * long as a join's. False when etcd did not answer. */
static bool renew(struct registry *r, struct etcd *e, uint64_t *until_ms)
{
    uint64_t sent = mono_ms();
    int64_t left;
    int ret;

    etcd_set_timeout(e, registry_keepalive_wait_ms(*until_ms, sent));
    ret = etcd_lease_keepalive(e, atomic_load(&r->lease), &left);
    if (ret) {
        etcd_set_timeout(e, REGISTRY_TIMEOUT_MS);
        log_debug("registry: keep-alive: %s", etcd_error(e));
        return false;
    }
    if (left > 0) {
        etcd_set_timeout(e, REGISTRY_TIMEOUT_MS);
        *until_ms = sent + (uint64_t)left * MS_PER_S;
        return true;
    }
    etcd_set_timeout(e, REGISTRY_JOIN_REQUEST_MIN_MS);
    ret = rejoin(r, e);
    etcd_set_timeout(e, REGISTRY_TIMEOUT_MS);
    if (ret) {
        log_warn("registry: our lease ran out and joining again failed: %s",
                 ret == -EEXIST ? "the name is another key's now" : etcd_error(e));
        return false;
    }
    log_notice("registry: our lease ran out while etcd was out of reach; joined again");
    *until_ms = sent + (uint64_t)r->ttl_s * MS_PER_S;
    return true;
}

/* Our record as it would be now: the candidates read last, and where a
 * member saw us unless that is one of them (no NAT between). */
static int record_now(struct registry *r, char *buf, size_t len)
{
    struct cluster_node n = r->self;
    char cert[CERT_TEXT_MAX + 1];

    pthread_mutex_lock(&r->lock);
    n.has_observed = r->has_observed;
    n.observed = r->observed;
    memcpy(cert, r->self_cert, sizeof(cert));
    pthread_mutex_unlock(&r->lock);
    for (unsigned i = 0; n.has_observed && i < n.n_candidates; i++)
        if (n.candidates[i].port == n.observed.port &&
            cluster_addr_equal(&n.candidates[i].addr, &n.observed.addr))
            n.has_observed = false;
    return record_encode_cert(&n, cert, buf, len);
}

/* Puts our record again when what it says of us changed; true when it
 * tried (the caller spaces tries REGISTRY_PUBLISH_MIN_S apart). */
static bool publish_self(struct registry *r, struct etcd *e)
{
    char key[KEY_TEXT_MAX], value[RECORD_VALUE_MAX + 1];
    bool done = false;
    int ret;

    if (record_now(r, value, sizeof(value)) < 0 || !strcmp(value, r->self_value))
        return false;
    if ((ret = record_member_key(r->prefix, r->self.name, key, sizeof(key))) < 0)
        return true;      /* a try all the same: the keeper waits before the next */
    ret = etcd_replace(e, key, r->self_value, value, atomic_load(&r->lease), &done);
    if (ret == 0 && done) {
        memcpy(r->self_value, value, sizeof(value));
        log_info("registry: our record now says %s", value);
    } else {
        log_debug("registry: our record was not updated: %s",
                  ret ? etcd_error(e) : "it is not the one we wrote (the lease ran out?)");
    }
    return true;
}

/* Whether our record would say something new now. */
static bool record_stale(struct registry *r)
{
    char value[RECORD_VALUE_MAX + 1];

    return record_now(r, value, sizeof(value)) >= 0 && strcmp(value, r->self_value);
}

static uint64_t earliest(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

/* Another writer deleted our record or wrote over it (every member may
 * write the prefix): ours again, under our lease, whatever is there --
 * the name is ours while the lease lives. The others never took the
 * rewrite (vouch.h), but a node that joins meanwhile reads etcd; and a
 * deleted record took us out of everyone's mesh. At most once a
 * REPAIR_EVERY_MS, so a writer that keeps at it costs etcd one put a
 * second from us. */
static void repair_record(struct registry *r, struct etcd *e)
{
    char key[KEY_TEXT_MAX];
    struct etcd_put put = { key, r->self_value, atomic_load(&r->lease) };
    bool done = false;

    atomic_store(&r->repair, false);
    if (!put.lease || record_member_key(r->prefix, r->self.name, key, sizeof(key)) < 0)
        return;
    if (etcd_txn(e, NULL, 0, &put, 1, &done) || !done)
        log_debug("registry: putting our record back: %s", etcd_error(e));
    else
        log_warn_rl("registry: our record %s was deleted or written over by another writer "
                    "of the prefix; put it back", key);
    pause_ms(r, REPAIR_EVERY_MS);
}

/* Renews the lease every third of its life (sooner again after a
 * keep-alive that failed: registry_keepalive_next_ms); reads our interfaces every
 * REGISTRY_CANDS_REFRESH_S; puts our record again when its candidates
 * changed (at once when it starts: the join's record has none),
 * REGISTRY_PUBLISH_MIN_S apart at least (etcd's writes, and the watch
 * events every member gets for each, stay bounded). Our record, deleted
 * or written over by another, is put back at once (repair_record). */
static void *keeper_run(void *arg)
{
    struct registry *r = arg;
    struct etcd *e = etcd_new(&r->cfg);
    uint64_t now = mono_ms(), renew_at = registry_keepalive_next_ms(r->ttl_s, 0, now);
    uint64_t read_at = now + REGISTRY_CANDS_REFRESH_S * MS_PER_S, publish_at = now;
    /* The join granted the lease just before. A wait past its end costs
     * nothing: etcd then answers at once that it is gone. */
    uint64_t until = now + (uint64_t)r->ttl_s * MS_PER_S;
    unsigned fails = 0;

    while (e) {
        uint64_t next = earliest(renew_at, read_at);
        if (record_stale(r))
            next = earliest(next, publish_at);
        now = mono_ms();             /* a late keep-alive took time: sleep from now */
        if (!keeper_sleep(r, next > now ? next - now : 0))
            break;
        now = mono_ms();
        if (atomic_load(&r->repair))
            repair_record(r, e);
        if (now >= renew_at) {
            /* The next a third of the life after this one went, not after
             * a late answer came: the lease's end, counted from the send,
             * stays that far ahead of the next keep-alive. */
            fails = renew(r, e, &until) ? 0 : fails + 1;
            renew_at = registry_keepalive_next_ms(r->ttl_s, fails, fails ? mono_ms() : now);
        }
        if (now >= read_at) {
            read_candidates(r, &r->self);
            read_at = now + REGISTRY_CANDS_REFRESH_S * MS_PER_S;
        }
        if (now >= publish_at && publish_self(r, e))
            publish_at = now + REGISTRY_PUBLISH_MIN_S * MS_PER_S;
    }
    etcd_free(e);
    return NULL;
}

void registry_observed(struct registry *r, const struct cluster_cand *c)
{
    if (!record_cand_usable(c))
        return;
    pthread_mutex_lock(&r->lock);
    if (!r->has_observed || r->observed.port != c->port ||
        !cluster_addr_equal(&r->observed.addr, &c->addr)) {
        r->observed = *c;
        r->has_observed = true;
        r->observed_news = true;
        pthread_cond_broadcast(&r->wake);
    }
    pthread_mutex_unlock(&r->lock);
}

int registry_start(struct registry *r)
{
    int ret;

    atomic_store(&r->stop, false);
    if ((ret = pthread_create(&r->watcher, NULL, watcher_run, r)))
        return -ret;
    r->watcher_on = true;
    if (r->joined) {
        if ((ret = pthread_create(&r->keeper, NULL, keeper_run, r)))
            return -ret;
        r->keeper_on = true;
    }
    return 0;
}

/* Earlier registrations first, so that of two that clash the same one
 * wins on every node and every time (the list's own order changes as
 * members leave). */
static int by_creation(const void *a, const void *b)
{
    const struct member *x = *(const struct member *const *)a, *y = *(const struct member *const *)b;

    return x->created != y->created ? (x->created < y->created ? -1 : 1)
                                    : strcasecmp(x->name, y->name);
}

/* The verified certificates and revocations as lines, for the loop
 * (registry_statements); under lock. */
static void build_statements(struct registry *r)
{
    size_t len = 1, at = 0;
    char *s;

    free(r->statements);
    r->statements = NULL;
    if (!r->has_authority)
        return;
    for (size_t i = 0; i < r->n_members; i++)
        len += r->members[i].cert ? strlen(r->members[i].cert) + 1 : 0;
    for (size_t i = 0; i < r->n_revoked; i++)
        len += strlen(r->revoked[i].line) + 1;
    if (!(s = malloc(len)))
        return;
    for (size_t i = 0; i < r->n_revoked; i++)
        at += (size_t)sprintf(s + at, "%s\n", r->revoked[i].line);
    for (size_t i = 0; i < r->n_members; i++)
        if (r->members[i].cert)
            at += (size_t)sprintf(s + at, "%s\n", r->members[i].cert);
    s[at] = '\0';
    r->statements = s;
}

char *registry_statements(struct registry *r)
{
    char *s;

    pthread_mutex_lock(&r->lock);
    s = r->statements;
    r->statements = NULL;
    pthread_mutex_unlock(&r->lock);
    return s;
}

int registry_take(struct registry *r, struct cluster_node **nodes, size_t *n, int64_t *revision)
{
    uint64_t count;
    int ret = 0;

    /* Read under the lock, as publish() writes under it: a count read
     * here stands for nothing this call has already taken. */
    pthread_mutex_lock(&r->lock);
    (void)!read(r->event_fd, &count, sizeof(count));
    if (r->fresh) {
        const struct member **order = calloc(r->n_members + 1, sizeof(*order));
        *nodes = calloc(r->n_members + 1, sizeof(**nodes));
        if (!*nodes || !order) {
            free(*nodes);
            *nodes = NULL;
            ret = -ENOMEM;
        } else {
            for (size_t i = 0; i < r->n_members; i++)
                order[i] = &r->members[i];
            qsort(order, r->n_members, sizeof(*order), by_creation);
            for (size_t i = 0; i < r->n_members; i++)
                (*nodes)[i] = order[i]->node;
            *n = r->n_members;
            *revision = r->revision;
            r->status.revision = r->revision;
            r->fresh = false;
            build_statements(r);
            ret = 1;
        }
        free(order);
    }
    pthread_mutex_unlock(&r->lock);
    return ret;
}

void registry_leave(struct registry *r)
{
    int64_t lease = atomic_exchange(&r->lease, 0);

    pthread_mutex_lock(&r->lock);
    atomic_store(&r->stop, true);
    pthread_cond_broadcast(&r->wake);
    pthread_mutex_unlock(&r->lock);
    if (r->keeper_on)
        pthread_join(r->keeper, NULL);
    r->keeper_on = false;
    if (lease && etcd_lease_revoke(r->etcd, lease) != 0)
        log_warn("registry: could not leave at once (%s); the lease runs out in %u s",
                 etcd_error(r->etcd), r->ttl_s);
    if (r->watcher_on)
        pthread_join(r->watcher, NULL);
    r->watcher_on = false;
}

/* --- the model ---------------------------------------------------------------------- */

/* Why n cannot join the model whose nodes ix holds, or NULL. */
static const char *clash(const struct cluster_index *ix, const struct cluster_node *n)
{
    if (cluster_index_name(ix, n->name))
        return "its name is another node's";
    if (cluster_index_key(ix, n->public_key))
        return "its key is another node's";
    if (cluster_index_address(ix, &n->address))
        return "its address is another node's";
    return NULL;
}

int registry_model(const struct cluster *file, const struct cluster_node *self,
                   const struct cluster_node *nodes, size_t n, struct cluster *out,
                   size_t *skipped, registry_skip_fn skip, void *ctx)
{
    size_t most = file->n_nodes + n + 1;
    struct cluster_index *ix = cluster_index_new(most);
    const char *why;

    *out = *file;
    *skipped = 0;
    out->nodes = calloc(most, sizeof(*out->nodes));
    if (!out->nodes || !ix) {
        free(out->nodes);
        cluster_index_free(ix);
        memset(out, 0, sizeof(*out));
        return -ENOMEM;
    }
    /* The index points into out->nodes, which does not move from here. */
    memcpy(out->nodes, file->nodes, file->n_nodes * sizeof(*out->nodes));
    out->n_nodes = file->n_nodes;
    for (size_t i = 0; i < out->n_nodes; i++)
        cluster_index_add(ix, &out->nodes[i]);
    if (self && !cluster_index_name(ix, self->name)) {
        out->nodes[out->n_nodes] = *self;
        cluster_index_add(ix, &out->nodes[out->n_nodes++]);
    }
    for (size_t i = 0; i < n; i++) {
        if (self && !strcasecmp(nodes[i].name, self->name) &&
            !sodium_memcmp(nodes[i].public_key, self->public_key, CLUSTER_KEY_LEN))
            continue;                     /* ourselves, already in */
        if ((why = clash(ix, &nodes[i]))) {
            ++*skipped;
            if (skip)
                skip(ctx, &nodes[i], why);
            continue;
        }
        out->nodes[out->n_nodes] = nodes[i];
        cluster_index_add(ix, &out->nodes[out->n_nodes++]);
    }
    cluster_index_free(ix);
    return 0;
}
