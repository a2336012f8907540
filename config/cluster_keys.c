/* SPDX-License-Identifier: MIT */
/* The keys of the cluster file: one table per section naming each key,
 * whether it is required, and the handler that validates its value and
 * stores it (or, for a path, the field it is stored in). Errors name the
 * key and quote the value as written. */
#include <ctype.h>
#include <errno.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "config/addr.h"
#include "config/cluster_int.h"
#include "config/routes.h"

typedef void (*key_handler)(struct cluster_parser *p, int line, const char *value);

/* A key is either parsed by its handler, or (apply NULL) is a path: the
 * registry's files, stored as written at path_at in struct cluster, a
 * char array of path_len bytes (path_apply). */
struct key_def {
    const char *name;
    bool required;
    key_handler apply;
    size_t path_at, path_len;
};

/* A key with a handler of its own; a key whose value is a path, put in
 * the field. Every member named: clang warns of any left out. */
#define KEY(key, required, fn) { key, required, fn, 0, 0 }
#define PATH_KEY(key, field) { key, false, NULL, offsetof(struct cluster, field), \
                               sizeof(((struct cluster *)0)->field) }

static struct cluster_work_node *current(struct cluster_parser *p)
{
    return &p->nodes[p->n_nodes - 1];
}

static void port_value(struct cluster_parser *p, int line, const char *value,
                      uint16_t *out)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    unsigned v;

    if (cluster_uint_parse(value, CLUSTER_PORT_MAX, &v) < 0 || v == 0) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad port '%s' (expected 1..%u)", q,
                         CLUSTER_PORT_MAX);
        return;
    }
    *out = (uint16_t)v;
}

static void network_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4], text[CLUSTER_QUOTE_MAX];
    struct cluster *c = &p->settings;
    const char *why;

    cluster_quote(q, sizeof(q), value);
    if (cluster_prefix_parse(value, &c->network, &c->prefix, &why) < 0) {
        cluster_diag_add(p, line, "bad network '%s': %s", q, why);
        return;
    }
    struct cluster_addr masked = c->network;
    cluster_addr_mask(&masked, c->prefix);
    if (!cluster_addr_equal(&masked, &c->network)) {
        cluster_addr_format(&masked, text, sizeof(text));
        cluster_diag_add(p, line, "network %s has host bits set (did you mean "
                         "%s/%u?)", q, text, c->prefix);
        return;
    }
    p->network_ok = true;
}

static void port_apply(struct cluster_parser *p, int line, const char *value)
{
    port_value(p, line, value, &p->settings.port);
}

static void mtu_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    unsigned v;

    if (cluster_uint_parse(value, CLUSTER_MTU_MAX, &v) < 0 ||
        v < CLUSTER_MTU_MIN_IPV4) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad mtu '%s' (expected %u..%u; at least %u "
                         "for an ipv6 network)", q, CLUSTER_MTU_MIN_IPV4,
                         CLUSTER_MTU_MAX, CLUSTER_MTU_MIN_IPV6);
        return;
    }
    p->settings.mtu = (uint16_t)v;
    p->settings.mtu_set = true;
}

/* A count of unit up to max where 0 turns the feature off; false (and an
 * error naming key) when value is not one. */
static bool off_or_count(struct cluster_parser *p, int line, const char *key, const char *unit,
                         const char *value, unsigned max, unsigned *out)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (cluster_uint_parse(value, max, out) < 0) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad %s '%s' (expected %s 0..%u, 0 = off)", key, q, unit, max);
        return false;
    }
    return true;
}

static void keepalive_apply(struct cluster_parser *p, int line, const char *value)
{
    unsigned v;

    if (off_or_count(p, line, "persistent-keepalive", "seconds", value, CLUSTER_KEEPALIVE_MAX, &v))
        p->settings.persistent_keepalive = (uint16_t)v;
}

static void busy_poll_apply(struct cluster_parser *p, int line, const char *value)
{
    unsigned v = CLUSTER_BUSY_POLL_ALWAYS;
    char q[CLUSTER_QUOTE_MAX + 4];

    if (strcmp(value, "always") && cluster_uint_parse(value, CLUSTER_BUSY_POLL_MAX, &v) < 0) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad busy-poll '%s' (expected microseconds 0..%u, 0 = off, or always)",
                         q, CLUSTER_BUSY_POLL_MAX);
        return;
    }
    p->settings.busy_poll_us = (uint16_t)v;
    p->settings.busy_poll_set = true;
}

/* A size in bytes, or K, M or G of them (powers of 1024, either case):
 * "32M", "16777216". */
static int size_parse(const char *value, unsigned max, unsigned *out)
{
    static const char units[] = "kmg";
    char digits[16];
    size_t n = strspn(value, "0123456789");
    unsigned shift = 0, v;
    const char *u;

    if (n == 0 || n >= sizeof(digits))
        return -EINVAL;
    if (value[n]) {
        if (value[n + 1] || !(u = strchr(units, tolower((unsigned char)value[n]))))
            return -EINVAL;
        shift = 10u * (unsigned)(u - units + 1);
    }
    memcpy(digits, value, n);
    digits[n] = '\0';
    if (cluster_uint_parse(digits, max >> shift, &v) < 0)
        return -ERANGE;
    *out = v << shift;
    return 0;
}

static void socket_buffer_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    unsigned v;

    if (size_parse(value, CLUSTER_SOCKET_BUFFER_MAX, &v) < 0 || v < CLUSTER_SOCKET_BUFFER_MIN) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad socket-buffer '%s' (expected bytes %uK..%uM, "
                         "as 32M or 16777216)", q, CLUSTER_SOCKET_BUFFER_MIN >> 10,
                         CLUSTER_SOCKET_BUFFER_MAX >> 20);
        return;
    }
    p->settings.socket_buffer = v;
    p->settings.socket_buffer_set = true;
}

static void hostnames_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (!strcmp(value, "on") || !strcmp(value, "yes")) {
        p->settings.hostnames_off = false;
    } else if (!strcmp(value, "off") || !strcmp(value, "no")) {
        p->settings.hostnames_off = true;
    } else {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad hostnames '%s' (expected on or off)", q);
    }
}

/* Domains separated by commas or spaces (a leading dot is dropped), or
 * `none`. */
static void machine_domains_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster_domains *d = &p->settings.machine_domains;
    char q[CLUSTER_QUOTE_MAX + 4], word[CLUSTER_MAX_LINE];
    const char *at = value;
    int len;

    d->n = 0;
    d->set = true;
    if (!strcmp(value, "none"))
        return;
    while (sscanf(at, " %1023[^, \t]%n", word, &len) == 1) {
        const char *w = word[0] == '.' ? word + 1 : word;
        at += len;
        at += strspn(at, ", \t");
        cluster_quote(q, sizeof(q), word);
        if (!cluster_hostname_valid(w) || w[strlen(w) - 1] == '.') {
            cluster_diag_add(p, line, "bad machine domain '%s' (expected a domain such as "
                             "ec2.internal)", q);
            return;
        }
        if (d->n == CLUSTER_MACHINE_DOMAINS_MAX) {
            cluster_diag_add(p, line, "too many machine domains (at most %u)",
                             CLUSTER_MACHINE_DOMAINS_MAX);
            return;
        }
        snprintf(d->name[d->n++], sizeof(d->name[0]), "%.253s", w);   /* valid: it fits */
    }
    if (!d->n)
        cluster_diag_add(p, line, "machine-domains needs a domain or none");
}

/* "overlay:PORT", or an IP literal and port as an endpoint is written
 * ("127.0.0.1:9586", "[::1]:9586"); never a hostname (nothing here
 * resolves). */
#define METRICS_OVERLAY_PREFIX "overlay:"
static void metrics_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    struct cluster_metrics *m = &p->settings.metrics;
    struct cluster_endpoint e;
    const char *why = "";
    unsigned port;

    cluster_quote(q, sizeof(q), value);
    if (!strncmp(value, METRICS_OVERLAY_PREFIX, strlen(METRICS_OVERLAY_PREFIX))) {
        if (cluster_uint_parse(value + strlen(METRICS_OVERLAY_PREFIX), CLUSTER_PORT_MAX,
                               &port) < 0 || port == 0) {
            cluster_diag_add(p, line, "bad metrics '%s': bad port (expected 1..%u)", q,
                             CLUSTER_PORT_MAX);
            return;
        }
        m->at = CLUSTER_METRICS_OVERLAY;
        m->port = (uint16_t)port;
        return;
    }
    if (cluster_endpoint_parse(value, &e, &why) < 0) {
        cluster_diag_add(p, line, "bad metrics '%s': %s", q, why);
        return;
    }
    if (!e.literal) {
        cluster_diag_add(p, line, "bad metrics '%s': expected an IP address (or "
                         "overlay:PORT), not a hostname", q);
        return;
    }
    m->at = CLUSTER_METRICS_ADDRESS;
    m->addr = e.addr;
    m->port = e.port;
}

static void metrics_public_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (!strcmp(value, "yes") || !strcmp(value, "on")) {
        p->settings.metrics.public_ok = true;
    } else if (!strcmp(value, "no") || !strcmp(value, "off")) {
        p->settings.metrics.public_ok = false;
    } else {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad metrics-public '%s' (expected yes or no)", q);
    }
}

/* etcd://HOST:PORT[,HOST:PORT...]/PREFIX: endpoints as a node's are
 * written (hostnames allowed: the registry client resolves them), a
 * prefix of letters, digits and "._-/". */
#define REGISTRY_SCHEME "etcd://"
static bool registry_prefix_ok(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n > CLUSTER_REGISTRY_PREFIX_MAX || s[n - 1] == '/' || strstr(s, "//"))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && !strchr("._-/", *s))
            return false;
    return true;
}

static void registry_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4], hosts[CLUSTER_MAX_LINE];
    struct cluster_registry *r = &p->settings.registry;
    const char *slash, *why = "";
    char *save = NULL, *one;

    cluster_quote(q, sizeof(q), value);
    if (strncmp(value, REGISTRY_SCHEME, strlen(REGISTRY_SCHEME)) ||
        !(slash = strchr(value + strlen(REGISTRY_SCHEME), '/'))) {
        cluster_diag_add(p, line, "bad registry '%s' (expected "
                         "etcd://HOST:PORT[,HOST:PORT...]/PREFIX)", q);
        return;
    }
    if (!registry_prefix_ok(slash)) {
        cluster_diag_add(p, line, "bad registry '%s': the prefix must be letters, digits and "
                         "'._-/', at most %u characters, not ending in '/'", q,
                         CLUSTER_REGISTRY_PREFIX_MAX);
        return;
    }
    snprintf(hosts, sizeof(hosts), "%.*s", (int)(slash - value - strlen(REGISTRY_SCHEME)),
             value + strlen(REGISTRY_SCHEME));
    r->n_endpoints = 0;
    for (one = strtok_r(hosts, ",", &save); one; one = strtok_r(NULL, ",", &save)) {
        if (r->n_endpoints == CLUSTER_REGISTRY_ENDPOINTS_MAX) {
            cluster_diag_add(p, line, "bad registry '%s': at most %u etcd endpoints", q,
                             CLUSTER_REGISTRY_ENDPOINTS_MAX);
            r->n_endpoints = 0;
            return;
        }
        if (cluster_endpoint_parse(one, &r->endpoints[r->n_endpoints], &why) < 0) {
            cluster_quote(q, sizeof(q), one);
            cluster_diag_add(p, line, "bad registry endpoint '%s': %s", q, why);
            r->n_endpoints = 0;
            return;
        }
        r->n_endpoints++;
    }
    if (!r->n_endpoints) {
        cluster_diag_add(p, line, "bad registry '%s': no etcd endpoint", q);
        return;
    }
    snprintf(r->prefix, sizeof(r->prefix), "%s", slash);
    if (!r->ttl_s)
        r->ttl_s = CLUSTER_REGISTRY_TTL_DEFAULT;
}

static void path_apply(struct cluster_parser *p, int line, const struct key_def *k,
                       const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (value[0] != '/' || strlen(value) >= k->path_len) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad %s '%s' (expected an absolute path of at most %zu "
                         "characters)", k->name, q, k->path_len - 1);
        return;
    }
    snprintf((char *)&p->settings + k->path_at, k->path_len, "%s", value);
}

/* etcd's own rule for user names is loose; ours: printable, no spaces. */
static void registry_user_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    bool ok = strlen(value) <= CLUSTER_USER_MAX;

    for (const char *s = value; ok && *s; s++)
        ok = isgraph((unsigned char)*s);
    if (!ok) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad registry-user '%s' (expected at most %u printable "
                         "characters, no spaces)", q, CLUSTER_USER_MAX);
        return;
    }
    snprintf(p->settings.registry.user, sizeof(p->settings.registry.user), "%s", value);
}

static void registry_insecure_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (!strcmp(value, "yes") || !strcmp(value, "on")) {
        p->settings.registry.insecure = true;
    } else if (!strcmp(value, "no") || !strcmp(value, "off")) {
        p->settings.registry.insecure = false;
    } else {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad registry-insecure '%s' (expected yes or no)", q);
    }
}

static void registry_ttl_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    unsigned v;

    if (cluster_uint_parse(value, CLUSTER_REGISTRY_TTL_MAX, &v) < 0 ||
        v < CLUSTER_REGISTRY_TTL_MIN) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad registry-ttl '%s' (expected seconds %u..%u)", q,
                         CLUSTER_REGISTRY_TTL_MIN, CLUSTER_REGISTRY_TTL_MAX);
        return;
    }
    p->settings.registry.ttl_s = v;
}

/* The authority's Ed25519 public key: 32 bytes in base64, as a
 * WireGuard key is written, or in the URL-safe alphabet the statements
 * use (config/cert.h), padded or not. */
static bool authority_decode(const char *value, uint8_t out[CLUSTER_KEY_LEN])
{
    static const int variants[] = { sodium_base64_VARIANT_ORIGINAL,
                                    sodium_base64_VARIANT_URLSAFE,
                                    sodium_base64_VARIANT_URLSAFE_NO_PADDING };
    uint8_t bin[CLUSTER_MAX_LINE];
    size_t bin_len = 0;

    for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
        if (sodium_base642bin(bin, sizeof(bin), value, strlen(value), NULL, &bin_len, NULL,
                              variants[i]) == 0 && bin_len == CLUSTER_KEY_LEN) {
            memcpy(out, bin, CLUSTER_KEY_LEN);
            return true;
        }
    return false;
}

/* One key, or two separated by spaces or commas (the second trusted
 * beside the first while the authority's key is rotated). */
static void authority_apply(struct cluster_parser *p, int line, const char *value)
{
    uint8_t bin[2][CLUSTER_KEY_LEN];
    char word[2][CLUSTER_MAX_LINE];
    size_t n = 0;

    for (const char *v = value; *v && n <= 2;) {
        size_t len = strcspn(v, " \t,");
        if (len) {
            if (n == 2 || len >= sizeof(word[0])) {
                n = 3;
                break;
            }
            memcpy(word[n], v, len);
            word[n++][len] = '\0';
        }
        v += len + (v[len] != '\0');
    }
    if (n == 3) {
        cluster_diag_add(p, line, "bad authority: at most two keys (the second trusted beside "
                         "the first while the authority's key is rotated)");
        return;
    }
    for (size_t i = 0; i < n || i == 0; i++) {
        if (!n || !authority_decode(word[i], bin[i])) {
            cluster_diag_add(p, line, "bad authority: expected the authority's public key: "
                             "32 bytes in base64 (as `ddpnet authority init` prints it)");
            return;
        }
    }
    memcpy(p->settings.authority, bin[0], CLUSTER_KEY_LEN);
    p->settings.has_authority = true;
    p->settings.has_authority_next = n == 2 && memcmp(bin[0], bin[1], CLUSTER_KEY_LEN);
    if (p->settings.has_authority_next)
        memcpy(p->settings.authority_next, bin[1], CLUSTER_KEY_LEN);
}

/* Public keys separated by spaces or commas, added to those of earlier
 * `revoked` lines (the one key that may repeat: a blocklist outgrows a
 * line), CLUSTER_REVOKED_MAX in all. */
static void revoked_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster *c = &p->settings;
    char q[CLUSTER_QUOTE_MAX + 4], word[CLUSTER_MAX_LINE];
    uint8_t bin[CLUSTER_MAX_LINE];
    size_t len, at = 0, bin_len;

    while (value[at]) {
        at += strspn(value + at, " \t,");
        if (!(len = strcspn(value + at, " \t,")))
            break;
        snprintf(word, sizeof(word), "%.*s", (int)len, value + at);
        at += len;
        cluster_quote(q, sizeof(q), word);
        if (sodium_base642bin(bin, sizeof(bin), word, len, NULL, &bin_len, NULL,
                              sodium_base64_VARIANT_ORIGINAL) != 0 || bin_len != CLUSTER_KEY_LEN) {
            cluster_diag_add(p, line, "bad revoked key '%s' (expected a WireGuard public key: "
                             "44 characters ending in '=', as 'wg pubkey' prints)", q);
            return;
        }
        if (c->n_revoked == CLUSTER_REVOKED_MAX) {
            cluster_diag_add(p, line, "too many revoked keys (at most %u in the file)",
                             CLUSTER_REVOKED_MAX);
            return;
        }
        memcpy(c->revoked[c->n_revoked++], bin, CLUSTER_KEY_LEN);
    }
}

static void public_key_apply(struct cluster_parser *p, int line, const char *value)
{
    /* base64 never decodes to more bytes than it has characters */
    uint8_t bin[CLUSTER_MAX_LINE];
    size_t bin_len = 0;
    struct cluster_work_node *w = current(p);

    if (sodium_base642bin(bin, sizeof(bin), value, strlen(value), NULL,
                          &bin_len, NULL, sodium_base64_VARIANT_ORIGINAL) != 0) {
        cluster_diag_add(p, line, "bad public-key: not valid base64 (expected "
                         "44 characters ending in '=', as 'wg pubkey' prints)");
        return;
    }
    if (bin_len != CLUSTER_KEY_LEN) {
        cluster_diag_add(p, line, "bad public-key: decodes to %zu bytes, "
                         "expected %u (use the output of 'wg pubkey')",
                         bin_len, CLUSTER_KEY_LEN);
        return;
    }
    memcpy(w->node.public_key, bin, CLUSTER_KEY_LEN);
    w->key_ok = true;
}

static void address_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    struct cluster_work_node *w = current(p);

    if (cluster_addr_parse(value, &w->node.address) < 0) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad address '%s' (expected one ipv4 or ipv6 "
                         "address, without /prefix)", q);
        return;
    }
    w->address_ok = true;
}

static void endpoint_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    struct cluster_work_node *w = current(p);
    const char *why;

    if (cluster_endpoint_parse(value, &w->node.endpoint, &why) < 0) {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad endpoint '%s': %s", q, why);
        return;
    }
    w->node.has_endpoint = true;
}

static void node_port_apply(struct cluster_parser *p, int line, const char *value)
{
    port_value(p, line, value, &current(p)->node.port);
}

static void node_keepalive_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster_node *n = &current(p)->node;
    unsigned v;

    if (off_or_count(p, line, "persistent-keepalive", "seconds", value, CLUSTER_KEEPALIVE_MAX, &v)) {
        n->persistent_keepalive = (uint16_t)v;
        n->keepalive_set = true;
    }
}

/* Names separated by spaces: hostnames of at most CLUSTER_NAME_MAX
 * characters (a machine's own hostname, say), CLUSTER_ALIASES_MAX at most. */
static void aliases_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster_node *n = &current(p)->node;
    char q[CLUSTER_QUOTE_MAX + 4], word[CLUSTER_MAX_LINE];
    const char *at = value;
    int len;

    n->n_aliases = 0;
    while (sscanf(at, " %1023s%n", word, &len) == 1) {
        at += len;
        cluster_quote(q, sizeof(q), word);
        if (strlen(word) > CLUSTER_NAME_MAX || !cluster_hostname_valid(word)) {
            cluster_diag_add(p, line, "bad alias '%s' (expected a hostname of at most %u "
                             "characters)", q, CLUSTER_NAME_MAX);
            return;
        }
        if (n->n_aliases == CLUSTER_ALIASES_MAX) {
            cluster_diag_add(p, line, "too many aliases (at most %u)", CLUSTER_ALIASES_MAX);
            return;
        }
        snprintf(n->aliases[n->n_aliases++], sizeof(n->aliases[0]), "%s", word);
    }
}

/* `groups = train, onprem` (config/rules.h): the names' bits, shared
 * with the rules of the same file. */
static void groups_apply(struct cluster_parser *p, int line, const char *value)
{
    char why[CLUSTER_DIAG_MSG_LEN - 16];

    if (rules_groups_parse(&p->settings.rules, value, &current(p)->node.groups, why,
                           sizeof(why)) < 0)
        cluster_diag_add(p, line, "groups: %s", why);
}

/* The prefixes the node carries (config/routes.h). */
static void routes_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster_node *n = &current(p)->node;
    char bad[CLUSTER_MAX_LINE], q[CLUSTER_QUOTE_MAX + 4];
    const char *why = "";

    if (cluster_routes_parse(value, n->routes, &n->n_routes, &why, bad, sizeof(bad)) < 0) {
        cluster_quote(q, sizeof(q), bad);
        cluster_diag_add(p, line, "bad route '%s': %s", q, why);
        n->n_routes = 0;
    }
}

/* How the carrier forwards its routes: masqueraded (yes, the default: the
 * hosts behind it need no route back) or routed (no). */
static void masquerade_apply(struct cluster_parser *p, int line, const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];

    if (!strcmp(value, "yes") || !strcmp(value, "on")) {
        current(p)->node.routed = false;
    } else if (!strcmp(value, "no") || !strcmp(value, "off")) {
        current(p)->node.routed = true;
    } else {
        cluster_quote(q, sizeof(q), value);
        cluster_diag_add(p, line, "bad masquerade '%s' (expected yes or no)", q);
    }
}

/* Names for hosts behind the node's routes: NAME=ADDRESS words, as many
 * as aliases; whether each address is inside a route is cluster_check's
 * (routes may come later in the section). */
static void route_names_apply(struct cluster_parser *p, int line, const char *value)
{
    struct cluster_node *n = &current(p)->node;
    char q[CLUSTER_QUOTE_MAX + 4], word[CLUSTER_MAX_LINE];
    const char *at = value;
    int len;

    n->n_route_names = 0;
    while (sscanf(at, " %1023s%n", word, &len) == 1) {
        char *eq = strchr(word, '=');
        at += len;
        cluster_quote(q, sizeof(q), word);
        if (n->n_route_names == CLUSTER_ALIASES_MAX) {
            cluster_diag_add(p, line, "too many route-names (at most %u)", CLUSTER_ALIASES_MAX);
            return;
        }
        struct cluster_route_name *r = &n->route_names[n->n_route_names];
        if (!eq || (size_t)(eq - word) > CLUSTER_NAME_MAX ||
            (*eq = '\0', !cluster_hostname_valid(word)) || cluster_addr_parse(eq + 1, &r->addr)) {
            cluster_diag_add(p, line, "bad route-name '%s' (expected NAME=ADDRESS, as "
                             "nas=192.168.50.10)", q);
            return;
        }
        snprintf(r->name, sizeof(r->name), "%.63s", word);
        n->n_route_names++;
    }
}

static const struct key_def cluster_keys[CLUSTER_KEY_COUNT] = {
    [CLUSTER_KEY_NETWORK]   = KEY("network", true, network_apply),
    [CLUSTER_KEY_PORT]      = KEY("port", true, port_apply),
    [CLUSTER_KEY_MTU]       = KEY("mtu", false, mtu_apply),
    [CLUSTER_KEY_KEEPALIVE] = KEY("persistent-keepalive", false, keepalive_apply),
    [CLUSTER_KEY_BUSY_POLL] = KEY("busy-poll", false, busy_poll_apply),
    [CLUSTER_KEY_HOSTNAMES] = KEY("hostnames", false, hostnames_apply),
    [CLUSTER_KEY_MACHINE_DOMAINS] = KEY("machine-domains", false, machine_domains_apply),
    [CLUSTER_KEY_METRICS]   = KEY("metrics", false, metrics_apply),
    [CLUSTER_KEY_METRICS_PUBLIC] = KEY("metrics-public", false, metrics_public_apply),
    [CLUSTER_KEY_REGISTRY]  = KEY("registry", false, registry_apply),
    [CLUSTER_KEY_REGISTRY_CA] = PATH_KEY("registry-ca", registry.ca),
    [CLUSTER_KEY_REGISTRY_CERT] = PATH_KEY("registry-cert", registry.cert),
    [CLUSTER_KEY_REGISTRY_KEY] = PATH_KEY("registry-key", registry.key),
    [CLUSTER_KEY_REGISTRY_USER] = KEY("registry-user", false, registry_user_apply),
    [CLUSTER_KEY_REGISTRY_PASSWORD_FILE] = PATH_KEY("registry-password-file",
                                                    registry.password_file),
    [CLUSTER_KEY_REGISTRY_TTL] = KEY("registry-ttl", false, registry_ttl_apply),
    [CLUSTER_KEY_REGISTRY_INSECURE] = KEY("registry-insecure", false, registry_insecure_apply),
    [CLUSTER_KEY_AUTHORITY] = KEY("authority", false, authority_apply),
    [CLUSTER_KEY_REVOKED]   = KEY("revoked", false, revoked_apply),
    [CLUSTER_KEY_SOCKET_BUFFER] = KEY("socket-buffer", false, socket_buffer_apply),
};

static const struct key_def node_keys[CLUSTER_NODE_KEY_COUNT] = {
    [CLUSTER_NODE_KEY_PUBLIC_KEY] = KEY("public-key", true, public_key_apply),
    [CLUSTER_NODE_KEY_ADDRESS]    = KEY("address", true, address_apply),
    [CLUSTER_NODE_KEY_ENDPOINT]   = KEY("endpoint", false, endpoint_apply),
    [CLUSTER_NODE_KEY_PORT]       = KEY("port", false, node_port_apply),
    [CLUSTER_NODE_KEY_KEEPALIVE]  = KEY("persistent-keepalive", false, node_keepalive_apply),
    [CLUSTER_NODE_KEY_ALIASES]    = KEY("aliases", false, aliases_apply),
    [CLUSTER_NODE_KEY_GROUPS]     = KEY("groups", false, groups_apply),
    [CLUSTER_NODE_KEY_ROUTES]     = KEY("routes", false, routes_apply),
    [CLUSTER_NODE_KEY_MASQUERADE] = KEY("masquerade", false, masquerade_apply),
    [CLUSTER_NODE_KEY_ROUTE_NAMES] = KEY("route-names", false, route_names_apply),
};

/* Keys longer than this are never taken for a typo of a known one. */
#define TYPO_KEY_MAX 32u

/* The optimal string alignment distance of a and b (insertions, deletions,
 * substitutions, and swaps of two neighbours, each 1), or TYPO_KEY_MAX
 * when either is longer than that. */
static unsigned typo_distance(const char *a, const char *b)
{
    unsigned d[TYPO_KEY_MAX + 1][TYPO_KEY_MAX + 1];
    size_t la = strlen(a), lb = strlen(b);

    if (la > TYPO_KEY_MAX || lb > TYPO_KEY_MAX)
        return TYPO_KEY_MAX;
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (unsigned)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (unsigned)j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            unsigned cost = a[i - 1] != b[j - 1];
            unsigned best = d[i - 1][j - 1] + cost;
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    }
    return d[la][lb];
}

/* The known key an unknown one is most likely a typo of: the closest, at
 * most 1 edit away for keys of up to 4 letters ("prot"), 2 beyond
 * ("adress", "pubic-key"). n when none is that close. */
static size_t typo_of(const struct key_def *defs, size_t n, const char *key)
{
    size_t best = n;
    unsigned best_d = TYPO_KEY_MAX;

    for (size_t i = 0; i < n; i++) {
        unsigned d = typo_distance(key, defs[i].name);
        unsigned limit = strlen(defs[i].name) <= 4 ? 1 : 2;
        if (d <= limit && d < best_d) {
            best = i;
            best_d = d;
        }
    }
    return best;
}

/* An unknown key: what it likely was, in this section or the other. */
static void unknown_key(struct cluster_parser *p, int line, const char *key, const char *q,
                        bool node, int *typo_line)
{
    const struct key_def *defs = node ? node_keys : cluster_keys;
    const struct key_def *other = node ? cluster_keys : node_keys;
    size_t n = node ? CLUSTER_NODE_KEY_COUNT : CLUSTER_KEY_COUNT;
    size_t n_other = node ? CLUSTER_KEY_COUNT : CLUSTER_NODE_KEY_COUNT;
    const char *here = node ? "[node NAME]" : "[cluster]";
    const char *there = node ? "[cluster]" : "[node NAME]";
    size_t i;

    for (i = 0; i < n_other && strcmp(other[i].name, key) != 0; i++)
        ;
    if (i < n_other) {
        cluster_diag_add(p, line, "unknown key '%s' in %s (it is a key of %s)", q, here,
                         there);
        return;
    }
    i = typo_of(defs, n, key);
    if (i == n) {
        cluster_diag_add(p, line, "unknown key '%s'", q);
        return;
    }
    cluster_diag_add(p, line, "unknown key '%s' (did you mean '%s'?)", q, defs[i].name);
    if (!typo_line[i])
        typo_line[i] = line;
}

void cluster_key_apply(struct cluster_parser *p, int line, const char *key,
                       const char *value)
{
    char q[CLUSTER_QUOTE_MAX + 4];
    bool node = p->section == CLUSTER_SECTION_NODE;
    const struct key_def *defs = node ? node_keys : cluster_keys;
    size_t n = node ? CLUSTER_NODE_KEY_COUNT : CLUSTER_KEY_COUNT;
    int *seen = node ? current(p)->key_line : p->key_line;
    int *typo = node ? current(p)->typo_line : p->typo_line;
    size_t i;

    for (i = 0; i < n && strcmp(defs[i].name, key) != 0; i++)
        ;
    cluster_quote(q, sizeof(q), key);
    if (i == n) {
        unknown_key(p, line, key, q, node, typo);
        return;
    }
    if (seen[i] && (node || i != CLUSTER_KEY_REVOKED)) {
        cluster_diag_add(p, line, "duplicate key '%s' (first at line %d)", q,
                         seen[i]);
        return;
    }
    seen[i] = line;
    if (defs[i].apply)
        defs[i].apply(p, line, value);
    else
        path_apply(p, line, &defs[i], value);
}

/* A missing key that a typo explains is reported after the typo, which
 * is its cause and the line to fix. */
static void require(struct cluster_parser *p, const struct key_def *defs,
                    size_t n, const int *seen, const int *typo, int line,
                    const char *section)
{
    for (size_t i = 0; i < n; i++) {
        if (!defs[i].required || seen[i])
            continue;
        if (typo[i])
            cluster_diag_add(p, typo[i], "missing required key '%s' in %s (the unknown "
                             "key above?)", defs[i].name, section);
        else
            cluster_diag_add(p, line, "missing required key '%s' in %s",
                             defs[i].name, section);
    }
}

void cluster_keys_require(struct cluster_parser *p)
{
    char section[CLUSTER_NAME_MAX + sizeof("[node ]")];

    if (p->cluster_line)
        require(p, cluster_keys, CLUSTER_KEY_COUNT, p->key_line, p->typo_line,
                p->cluster_line, "[cluster]");
    for (size_t i = 0; i < p->n_nodes; i++) {
        const struct cluster_work_node *w = &p->nodes[i];
        if (!w->name_ok)
            continue;       /* its header is already an error */
        snprintf(section, sizeof(section), "[node %s]", w->node.name);
        require(p, node_keys, CLUSTER_NODE_KEY_COUNT, w->key_line, w->typo_line,
                w->node.line, section);
    }
}
