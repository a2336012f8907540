/* SPDX-License-Identifier: MIT */
/* `ddpnet status` and `ddpnet env`: ask the daemon over its control socket
 * (get=ddpnet) and print a table or JSON, or over its env socket, which
 * any user may ask (get=ddpnet-env), and print export lines; `status
 * --watch` hands the table's frames to cli_watch.c. The printing is done by pure
 * functions of the response text (control_int.h, cli_watch.h), so it is
 * tested without a daemon. */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "overlay/base/clock.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/cli/cli_reply.h"
#include "overlay/cli/cli_watch.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/daemon/daemon.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/state.h"

/* A table cell; longer text (never from a sane daemon) is cut. */
#define CELL_MAX        96u
#define N_COLUMNS       11u
#define COLUMN_GAP      "  "
#define SECS_PER_MIN    60u
#define SECS_PER_HOUR   3600u
#define SECS_PER_DAY    86400u
#define BITS_PER_BYTE   8u
#define KIBI            1024.0
#define KILO            1000.0
/* Values below this get one decimal ("8.5 Mbit/s"), above none ("85 Mbit/s"). */
#define ONE_DECIMAL_BELOW 9.95
/* Round trips below this many ms get two decimals ("0.12 ms"). */
#define TWO_DECIMALS_BELOW 0.995

/* --- the response, parsed ---------------------------------------------------------- */

struct st_peer {
    const char *key, *name, *address, *endpoint, *path, *via;
    uint64_t handshake_sec, rx_bytes, tx_bytes, rx_rate, tx_rate, rtt_us, path_mtu, flows;
    bool has_rtt, has_path_mtu, has_flows;
    bool has_cert;                   /* with an authority: its certificate's expiry */
    uint64_t cert_expires;
    const char *routes[CLUSTER_ROUTES_MAX];   /* the prefixes it carries */
    size_t n_routes;
};

struct st_resp {
    char *text;                      /* a copy, cut into the strings below */
    const char *interface, *self, *address, *master, *master_address, *cluster_sum;
    const char *registry_state, *registry_endpoint, *registry_error;
    uint64_t registry_revision;
    uint64_t listen_port, prefix, cluster_applied;
    /* hint_bytes, hint_refused, relay_trials_failed, relay_dropped */
    uint64_t hints[4];
    /* Dropped by the kernel before the daemon saw them: datagrams at the
     * UDP sockets, packets at the interface's transmit queue; then what the
     * sockets' queue management dropped and marked CE itself. */
    uint64_t dropped_socket, dropped_tun, dropped_queue, ecn_marked;
    uint64_t rules, rule_conns, dropped_rule, refused_rule, rule_table_full, rule_peer_full;
    bool has_listen_port, has_prefix, has_cluster_applied;
    bool has_cert;                   /* this node's certificate's expiry */
    uint64_t cert_expires;
    /* With an authority: the member that holds our address (a clash we
     * lost), its key, whether our address is derived from our key. */
    const char *clash_holder, *clash_key;
    uint64_t clash_derived;
    /* Peers removed lately because their certificate ended ("UNIX NAME"). */
    const char *ended[MEMBERSHIP_ENDED_MAX];
    size_t n_ended;
    /* The prefixes this node carries, and whether it masquerades them. */
    const char *routes[CLUSTER_ROUTES_MAX];
    size_t n_routes;
    bool has_masquerade;
    uint64_t masquerade;
    uint64_t cert_routes_refused;
    size_t n_peers, cap_peers;
    struct st_peer *peers;
};

static void resp_free(struct st_resp *r)
{
    free(r->text);
    free(r->peers);
    memset(r, 0, sizeof(*r));
}

static int add_peer(struct st_resp *r, const char *key)
{
    struct st_peer *p = cli_reply_grow(r->peers, &r->cap_peers, r->n_peers, sizeof(*p));

    if (!p)
        return -ENOMEM;
    r->peers = p;
    p[r->n_peers++].key = key;
    return 0;
}

static int peer_line(void *ctx, const char *key, const char *v)
{
    struct st_resp *r = ctx;
    struct st_peer *p;

    if (!strcmp(key, UAPI_KEY_PUBLIC_KEY))
        return add_peer(r, v);
    p = &r->peers[r->n_peers - 1];
    if (!strcmp(key, CONTROL_KEY_NAME))
        p->name = v;
    else if (!strcmp(key, CONTROL_KEY_ADDRESS))
        p->address = v;
    else if (!strcmp(key, UAPI_KEY_ENDPOINT))
        p->endpoint = v;
    else if (!strcmp(key, CONTROL_KEY_PATH))
        p->path = v;
    else if (!strcmp(key, CONTROL_KEY_VIA))
        p->via = v;
    else if (!strcmp(key, CONTROL_KEY_ROUTE) && p->n_routes < CLUSTER_ROUTES_MAX)
        p->routes[p->n_routes++] = v;
    else if (!strcmp(key, CONTROL_KEY_RTT_US)) {
        p->has_rtt = true;
        return cli_reply_u64(v, &p->rtt_us);
    } else if (!strcmp(key, CONTROL_KEY_PATH_MTU)) {
        p->has_path_mtu = true;
        return cli_reply_u64(v, &p->path_mtu);
    } else if (!strcmp(key, CONTROL_KEY_FLOWS)) {
        p->has_flows = true;
        return cli_reply_u64(v, &p->flows);
    } else if (!strcmp(key, CONTROL_KEY_CERT_EXPIRES)) {
        p->has_cert = true;
        return cli_reply_u64(v, &p->cert_expires);
    } else if (!strcmp(key, UAPI_KEY_LAST_HANDSHAKE_SEC))
        return cli_reply_u64(v, &p->handshake_sec);
    else if (!strcmp(key, UAPI_KEY_RX_BYTES))
        return cli_reply_u64(v, &p->rx_bytes);
    else if (!strcmp(key, UAPI_KEY_TX_BYTES))
        return cli_reply_u64(v, &p->tx_bytes);
    else if (!strcmp(key, CONTROL_KEY_RX_RATE))
        return cli_reply_u64(v, &p->rx_rate);
    else if (!strcmp(key, CONTROL_KEY_TX_RATE))
        return cli_reply_u64(v, &p->tx_rate);
    return 0;   /* keys added later are skipped, not refused */
}

static int iface_line(void *ctx, const char *key, const char *v)
{
    struct st_resp *r = ctx;

    if (!strcmp(key, CONTROL_KEY_INTERFACE))
        r->interface = v;
    else if (!strcmp(key, CONTROL_KEY_SELF))
        r->self = v;
    else if (!strcmp(key, CONTROL_KEY_ADDRESS))
        r->address = v;
    else if (!strcmp(key, CONTROL_KEY_MASTER))
        r->master = v;
    else if (!strcmp(key, CONTROL_KEY_MASTER_ADDRESS))
        r->master_address = v;
    else if (!strcmp(key, CONTROL_KEY_CLUSTER_SUM))
        r->cluster_sum = v;
    else if (!strcmp(key, CONTROL_KEY_REGISTRY_STATE))
        r->registry_state = v;
    else if (!strcmp(key, CONTROL_KEY_CLASH_HOLDER))
        r->clash_holder = v;
    else if (!strcmp(key, CONTROL_KEY_CLASH_KEY))
        r->clash_key = v;
    else if (!strcmp(key, CONTROL_KEY_CERT_ENDED) && r->n_ended < MEMBERSHIP_ENDED_MAX)
        r->ended[r->n_ended++] = v;
    else if (!strcmp(key, CONTROL_KEY_ROUTE) && r->n_routes < CLUSTER_ROUTES_MAX)
        r->routes[r->n_routes++] = v;
    else if (!strcmp(key, CONTROL_KEY_MASQUERADE)) {
        r->has_masquerade = true;
        return cli_reply_u64(v, &r->masquerade);
    } else if (!strcmp(key, CONTROL_KEY_CERT_ROUTES_REFUSED))
        return cli_reply_u64(v, &r->cert_routes_refused); else if (!strcmp(key, CONTROL_KEY_CLASH_DERIVED))
        return cli_reply_u64(v, &r->clash_derived);
    else if (!strcmp(key, CONTROL_KEY_REGISTRY_ENDPOINT))
        r->registry_endpoint = v;
    else if (!strcmp(key, CONTROL_KEY_REGISTRY_ERROR))
        r->registry_error = v;
    else if (!strcmp(key, CONTROL_KEY_REGISTRY_REVISION))
        return cli_reply_u64(v, &r->registry_revision);
    else if (!strcmp(key, CONTROL_KEY_HINT_BYTES))
        return cli_reply_u64(v, &r->hints[0]);
    else if (!strcmp(key, CONTROL_KEY_HINT_REFUSED))
        return cli_reply_u64(v, &r->hints[1]);
    else if (!strcmp(key, CONTROL_KEY_RELAY_TRIALS_FAILED))
        return cli_reply_u64(v, &r->hints[2]);
    else if (!strcmp(key, CONTROL_KEY_RELAY_DROPPED))
        return cli_reply_u64(v, &r->hints[3]);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_SOCKET))
        return cli_reply_u64(v, &r->dropped_socket);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_TUN))
        return cli_reply_u64(v, &r->dropped_tun);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_QUEUE))
        return cli_reply_u64(v, &r->dropped_queue);
    else if (!strcmp(key, CONTROL_KEY_ECN_MARKED))
        return cli_reply_u64(v, &r->ecn_marked);
    else if (!strcmp(key, CONTROL_KEY_RULES))
        return cli_reply_u64(v, &r->rules);
    else if (!strcmp(key, CONTROL_KEY_RULE_CONNS))
        return cli_reply_u64(v, &r->rule_conns);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_RULE))
        return cli_reply_u64(v, &r->dropped_rule);
    else if (!strcmp(key, CONTROL_KEY_REFUSED_RULE))
        return cli_reply_u64(v, &r->refused_rule);
    else if (!strcmp(key, CONTROL_KEY_RULE_TABLE_FULL))
        return cli_reply_u64(v, &r->rule_table_full);
    else if (!strcmp(key, CONTROL_KEY_RULE_PEER_FULL))
        return cli_reply_u64(v, &r->rule_peer_full);
    else if (!strcmp(key, CONTROL_KEY_CLUSTER_APPLIED)) {
        r->has_cluster_applied = true;
        return cli_reply_u64(v, &r->cluster_applied);
    } else if (!strcmp(key, CONTROL_KEY_CERT_EXPIRES)) {
        r->has_cert = true;
        return cli_reply_u64(v, &r->cert_expires);
    }
    else if (!strcmp(key, CONTROL_KEY_PREFIX)) {
        r->has_prefix = true;
        return cli_reply_u64(v, &r->prefix);
    } else if (!strcmp(key, UAPI_KEY_LISTEN_PORT)) {
        r->has_listen_port = true;
        return cli_reply_u64(v, &r->listen_port);
    }
    return 0;
}

static int resp_check(const struct st_resp *r)
{
    if (!r->interface || !r->self || !r->address || !r->has_listen_port)
        return -EPROTO;
    for (size_t i = 0; i < r->n_peers; i++)
        if (!r->peers[i].name || !r->peers[i].address)
            return -EPROTO;
    return 0;
}

static int resp_parse(const char *response, struct st_resp *r)
{
    int ret;

    memset(r, 0, sizeof(*r));
    if (!response)
        return -EINVAL;
    r->text = strdup(response);
    if (!r->text)
        return -ENOMEM;
    ret = cli_reply_walk(r->text, &(struct cli_reply_sink){r, iface_line, peer_line});
    if (ret == 0)
        ret = resp_check(r);
    if (ret < 0)
        resp_free(r);
    return ret;
}

/* --- human units ------------------------------------------------------------------ */

/* v in the largest unit it reaches, "1.2 MiB" / "85 Mbit/s". units[0] is
 * the base unit, written without decimals. */
static void human(char *buf, size_t len, double v, double step,
                  const char *const *units, size_t n_units)
{
    size_t k = 0;

    while (k + 1 < n_units && v >= step) {
        v /= step;
        k++;
    }
    /* 1023.7 KiB would print as "1024 KiB": say "1.0 MiB" instead. */
    if (k > 0 && k + 1 < n_units && v + 0.5 >= step) {
        v /= step;
        k++;
    }
    if (k == 0)
        snprintf(buf, len, "%.0f %s", v, units[0]);
    else if (v < ONE_DECIMAL_BELOW)
        snprintf(buf, len, "%.1f %s", v, units[k]);
    else
        snprintf(buf, len, "%.0f %s", v, units[k]);
}

static void human_bytes(char *buf, size_t len, uint64_t bytes)
{
    static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };

    human(buf, len, (double)bytes, KIBI, units, sizeof(units) / sizeof(units[0]));
}

static void human_rate(char *buf, size_t len, uint64_t bytes_per_sec)
{
    static const char *const units[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s",
                                         "Tbit/s", "Pbit/s", "Ebit/s" };

    human(buf, len, (double)bytes_per_sec * BITS_PER_BYTE, KILO, units,
          sizeof(units) / sizeof(units[0]));
}

static void human_age(char *buf, size_t len, uint64_t then, uint64_t now)
{
    uint64_t age = now > then ? now - then : 0;

    if (then == 0)
        snprintf(buf, len, "never");
    else if (age < SECS_PER_MIN)
        snprintf(buf, len, "%llus ago", (unsigned long long)age);
    else if (age < SECS_PER_HOUR)
        snprintf(buf, len, "%llum ago", (unsigned long long)(age / SECS_PER_MIN));
    else if (age < SECS_PER_DAY)
        snprintf(buf, len, "%lluh ago", (unsigned long long)(age / SECS_PER_HOUR));
    else
        snprintf(buf, len, "%llud ago", (unsigned long long)(age / SECS_PER_DAY));
}

/* --- the table ------------------------------------------------------------------------ */

static const char *const column_names[N_COLUMNS] = {
    "NAME", "ADDRESS", "ENDPOINT", "PATH", "MTU", "RTT", "HANDSHAKE", "RX", "TX", "RX/s", "TX/s",
};
/* Numbers line up on the right. */
static const bool column_right[N_COLUMNS] = {
    false, false, false, false, true, true, false, true, true, true, true,
};

typedef char row_cells[N_COLUMNS][CELL_MAX];

/* "direct", "direct, 4 flows" (where the node has several: how many
 * this peer's traffic spreads over, 1 where it fell back; said of a
 * direct path only: a waiting or unreachable peer has no flow yet),
 * "relay via NAME", or "-" without a path. */
static void path_cell(char *buf, size_t len, const struct st_peer *p)
{
    if (p->path && p->via)
        snprintf(buf, len, "%s via %s", p->path, p->via);
    else if (p->path && p->has_flows && strcmp(p->path, "direct") == 0)
        snprintf(buf, len, "%s, %llu flow%s", p->path, (unsigned long long)p->flows,
                 p->flows == 1 ? "" : "s");
    else
        snprintf(buf, len, "%s", p->path ? p->path : "-");
}

static void rtt_cell(char *buf, size_t len, const struct st_peer *p)
{
    double ms = (double)p->rtt_us / (double)US_PER_MS;

    if (!p->has_rtt)
        snprintf(buf, len, "-");
    else if (ms < TWO_DECIMALS_BELOW)
        snprintf(buf, len, "%.2f ms", ms);
    else if (ms < ONE_DECIMAL_BELOW)
        snprintf(buf, len, "%.1f ms", ms);
    else
        snprintf(buf, len, "%.0f ms", ms);
}

/* The rates a row shows: the watch's, where it knows them, else the daemon's. */
struct row_rates {
    const struct watch_rate *rates;   /* NULL: the daemon's */
    size_t n;
};

static void fill_row(row_cells c, const struct st_peer *p, uint64_t now_unix,
                     const struct watch_rate *rate)
{
    snprintf(c[0], CELL_MAX, "%s", p->name);
    snprintf(c[1], CELL_MAX, "%s", p->address);
    snprintf(c[2], CELL_MAX, "%s", p->endpoint ? p->endpoint : "-");
    path_cell(c[3], CELL_MAX, p);
    if (p->has_path_mtu)
        snprintf(c[4], CELL_MAX, "%llu", (unsigned long long)p->path_mtu);
    else
        snprintf(c[4], CELL_MAX, "-");
    rtt_cell(c[5], CELL_MAX, p);
    human_age(c[6], CELL_MAX, p->handshake_sec, now_unix);
    human_bytes(c[7], CELL_MAX, p->rx_bytes);
    human_bytes(c[8], CELL_MAX, p->tx_bytes);
    human_rate(c[9], CELL_MAX, rate ? rate->rx : p->rx_rate);
    human_rate(c[10], CELL_MAX, rate ? rate->tx : p->tx_rate);
}

static const struct watch_rate *rate_of(const struct row_rates *rr, size_t peer)
{
    if (!rr->rates || peer >= rr->n || !rr->rates[peer].known)
        return NULL;
    return &rr->rates[peer];
}

static void print_row(FILE *out, const char *const cells[N_COLUMNS],
                      const size_t width[N_COLUMNS])
{
    for (size_t i = 0; i < N_COLUMNS; i++) {
        bool last = i + 1 == N_COLUMNS;
        int w = (int)width[i];

        if (column_right[i])
            fprintf(out, "%*s", w, cells[i]);
        else if (last)
            fprintf(out, "%s", cells[i]);
        else
            fprintf(out, "%-*s", w, cells[i]);
        fputs(last ? "\n" : COLUMN_GAP, out);
    }
}

static void column_widths(const struct st_resp *r, uint64_t now, const struct row_rates *rr,
                          size_t width[N_COLUMNS])
{
    row_cells c;

    for (size_t i = 0; i < N_COLUMNS; i++)
        width[i] = strlen(column_names[i]);
    for (size_t p = 0; p < r->n_peers; p++) {
        fill_row(c, &r->peers[p], now, rate_of(rr, p));
        for (size_t i = 0; i < N_COLUMNS; i++)
            if (strlen(c[i]) > width[i])
                width[i] = strlen(c[i]);
    }
}

/* The cluster file the node runs: its checksum (the same on every node
 * that runs the same file) and how long ago it was applied. */
static bool has_cluster_file(const struct st_resp *r)
{
    return r->cluster_sum && r->has_cluster_applied;
}

static void print_cluster_file(FILE *out, const struct st_resp *r, uint64_t now_unix)
{
    if (!has_cluster_file(r))
        return;
    fprintf(out, "cluster file %s, applied ", r->cluster_sum);
    if (now_unix >= r->cluster_applied)
        fprintf(out, "%llu s ago\n", (unsigned long long)(now_unix - r->cluster_applied));
    else
        fprintf(out, "at %llu\n", (unsigned long long)r->cluster_applied);
}

/* What the kernel dropped before the daemon saw it, on a line of its own
 * when anything was: an operator must not miss it (docs/long-paths.md). */
static void print_drops(FILE *out, const struct st_resp *r)
{
    if (!r->dropped_socket && !r->dropped_tun)
        return;
    fputs("dropped by the kernel:", out);
    if (r->dropped_socket)
        fprintf(out, " %llu datagram%s at the UDP sockets (" CONTROL_DROP_SOCKET ")%s",
                (unsigned long long)r->dropped_socket, r->dropped_socket == 1 ? "" : "s",
                r->dropped_tun ? "," : "");
    if (r->dropped_tun)
        fprintf(out, " %llu packet%s at %s's queue (" CONTROL_DROP_TUN ")",
                (unsigned long long)r->dropped_tun, r->dropped_tun == 1 ? "" : "s", r->interface);
    fputs("; see ddpnet doctor\n", out);
}

/* What the sockets' queue management did, on a line of its own when it
 * did anything: this node could not keep up with what it received. */
static void print_queue(FILE *out, const struct st_resp *r)
{
    if (!r->dropped_queue && !r->ecn_marked)
        return;
    fprintf(out, "slowed senders: %llu packet%s dropped (" CONTROL_DROP_QUEUE "), %llu marked "
                 "ECN, datagrams waited too long at the UDP sockets; see ddpnet doctor\n",
            (unsigned long long)r->dropped_queue, r->dropped_queue == 1 ? "" : "s",
            (unsigned long long)r->ecn_marked);
}

/* The rules, on a line of their own once any is written: how many, the
 * connections they keep, and what they refused (issue 61). */
static void print_rules(FILE *out, const struct st_resp *r)
{
    if (!r->rules)
        return;
    fprintf(out, "rules: %llu (default deny), %llu connection%s; refused (" CONTROL_DROP_RULE
                 "): %llu received, %llu sent back as prohibited",
            (unsigned long long)r->rules, (unsigned long long)r->rule_conns,
            r->rule_conns == 1 ? "" : "s", (unsigned long long)r->dropped_rule,
            (unsigned long long)r->refused_rule);
    if (r->rule_table_full)
        fprintf(out, ", %llu new for want of room", (unsigned long long)r->rule_table_full);
    if (r->rule_peer_full)
        fprintf(out, ", %llu new over a peer's bound", (unsigned long long)r->rule_peer_full);
    fputs("; see ddpnet rules test\n", out);
}

/* Issue 60: each prefix a node carries and which node, on a line of its
 * own once any is granted: ours first, then the peers' in their order. */
static void print_routes(FILE *out, const struct st_resp *r)
{
    size_t shown = 0;

    for (size_t i = 0; i < r->n_routes; i++)
        fprintf(out, "%s %s carried by this node (%s)", shown++ ? "," : "routes:",
                r->routes[i], r->masquerade ? "masquerade" : "routed, no masquerade");
    for (size_t p = 0; p < r->n_peers; p++)
        for (size_t i = 0; i < r->peers[p].n_routes; i++)
            fprintf(out, "%s %s via %s", shown++ ? "," : "routes:", r->peers[p].routes[i],
                    r->peers[p].name);
    if (shown)
        fputc('\n', out);
    if (r->cert_routes_refused)
        fprintf(out, "routes: %llu of members' certificates refused: each overlaps a grant held "
                "first, the overlay's network or a node's endpoint (the log names them)\n",
                (unsigned long long)r->cert_routes_refused);
}

/* Issue 43: the clash this node lost, loud, with what to do. */
static void print_clash(FILE *out, const struct st_resp *r)
{
    if (!r->clash_holder)
        return;
    fprintf(out, "ADDRESS CLASH: %s, %s, is also %s's (key %s), which the members hold first: "
            "they do not reach this node. To join: " CERTS_CLASH_WHAT_TO_DO "\n", r->address,
            r->clash_derived ? "derived from this node's key" : "fixed by this node's certificate",
            r->clash_holder, r->clash_key ? r->clash_key : "?");
}

static void print_header(FILE *out, const struct st_resp *r, uint64_t now_unix)
{
    fprintf(out, "%s: node %s, address %s", r->interface, r->self, r->address);
    if (r->has_prefix)
        fprintf(out, "/%llu", (unsigned long long)r->prefix);
    fprintf(out, ", listen port %llu, %zu peer%s\n", (unsigned long long)r->listen_port,
            r->n_peers, r->n_peers == 1 ? "" : "s");
    print_cluster_file(out, r, now_unix);
    if (r->registry_state) {
        fprintf(out, "registry %s, revision %llu applied", r->registry_state,
                (unsigned long long)r->registry_revision);
        if (r->registry_endpoint)
            fprintf(out, ", %s", r->registry_endpoint);
        if (r->registry_error && strcmp(r->registry_state, "synced"))
            fprintf(out, " (%s)", r->registry_error);
        fputc('\n', out);
    }
    print_clash(out, r);
    print_drops(out, r);
    print_queue(out, r);
    print_rules(out, r);
    print_routes(out, r);
}

/* "in 6d 23h", "in 5m 3s", "expired": how long a certificate has left. */
static void cert_left(char *buf, size_t len, uint64_t expires, uint64_t now_unix)
{
    uint64_t s = expires > now_unix ? expires - now_unix : 0;
    char span[32];

    if (!s) {
        snprintf(buf, len, "expired");
        return;
    }
    clock_span_text(span, sizeof(span), s);
    snprintf(buf, len, "in %s", span);
}

/* With an authority: each certificate's expiry, ours first, under the
 * table (a node of the file has none). */
static void print_certs(FILE *out, const struct st_resp *r, uint64_t now_unix, size_t n_rows)
{
    char left[64];

    if (r->has_cert && r->cert_expires <= now_unix)
        fprintf(out, "certificate of %s (this node) ENDED %llus ago (%llu): the members dropped "
                "this node; ddpnet doctor says what to run\n", r->self,
                (unsigned long long)(now_unix - r->cert_expires),
                (unsigned long long)r->cert_expires);
    else if (r->has_cert) {
        cert_left(left, sizeof(left), r->cert_expires, now_unix);
        fprintf(out, "certificate of %s (this node) expires %s (%llu)\n", r->self, left,
                (unsigned long long)r->cert_expires);
    }
    for (size_t p = 0; p < n_rows && p < r->n_peers; p++) {
        if (!r->peers[p].has_cert)
            continue;
        cert_left(left, sizeof(left), r->peers[p].cert_expires, now_unix);
        fprintf(out, "certificate of %s expires %s (%llu)\n", r->peers[p].name, left,
                (unsigned long long)r->peers[p].cert_expires);
    }
}

/* With an authority: the peers removed lately at their certificate's end. */
static void print_ended(FILE *out, const struct st_resp *r, uint64_t now_unix)
{
    for (size_t i = 0; i < r->n_ended; i++) {
        char *name = NULL;
        unsigned long long at = strtoull(r->ended[i], &name, 10);

        if (!name || *name != ' ')
            continue;
        fprintf(out, "%s removed: its certificate ended %llus ago (%llu) with no renewal; "
                "see docs/authority.md, \"Renewal\"\n", name + 1,
                now_unix > at ? (unsigned long long)now_unix - at : 0ull, at);
    }
}

/* The header, the column names and the first n_rows peers' rows; the
 * widths fit every peer, so that a row cut off does not move the others. */
static void print_table(FILE *out, const struct st_resp *r, uint64_t now_unix,
                        const struct row_rates *rr, size_t n_rows)
{
    size_t width[N_COLUMNS];
    row_cells c;

    print_header(out, r, now_unix);
    column_widths(r, now_unix, rr, width);
    print_row(out, column_names, width);
    for (size_t p = 0; p < n_rows && p < r->n_peers; p++) {
        const char *cells[N_COLUMNS];

        fill_row(c, &r->peers[p], now_unix, rate_of(rr, p));
        for (size_t i = 0; i < N_COLUMNS; i++)
            cells[i] = c[i];
        print_row(out, cells, width);
    }
    print_certs(out, r, now_unix, n_rows);
    print_ended(out, r, now_unix);
}

int status_format_table(const char *response, FILE *out, uint64_t now_unix)
{
    static const struct row_rates daemons = { NULL, 0 };
    struct st_resp r;
    int ret = resp_parse(response, &r);

    if (ret < 0)
        return ret;
    print_table(out, &r, now_unix, &daemons, r.n_peers);
    resp_free(&r);
    return 0;
}

/* --- the watch's frame ----------------------------------------------------------------- */

/* Copies text's lines to out: at most rows of them (0: all), each cut to
 * cols characters (0: whole). A character is a UTF-8 sequence, so a name
 * is never cut inside one. */
static void put_clipped(FILE *out, const char *text, size_t rows, size_t cols)
{
    const char *line = text;

    for (size_t n = 0; *line && (rows == 0 || n < rows); n++) {
        size_t len = strcspn(line, "\n"), chars = 0, keep = 0;

        for (; keep < len; keep++) {
            bool starts_char = ((unsigned char)line[keep] & 0xc0) != 0x80;

            if (starts_char && cols && chars == cols)
                break;
            chars += starts_char;
        }
        fwrite(line, 1, keep, out);
        fputc('\n', out);
        line += len + (line[len] == '\n');
    }
}

int status_format_frame(const char *response, const struct watch_frame *f, FILE *out,
                        uint64_t now_unix)
{
    struct row_rates rr = { f->rates, f->n_rates };
    struct st_resp r;
    char *text = NULL;
    size_t len = 0, head, n_rows;
    FILE *mem;
    int ret = resp_parse(response, &r);

    if (ret < 0)
        return ret;
    /* The node's line, the cluster file's, a clash's, the column names. */
    head = 2 + has_cluster_file(&r) + (r.clash_holder != NULL);
    n_rows = r.n_peers;
    if (f->rows && head + r.n_peers > f->rows)
        n_rows = f->rows > head + 1 ? f->rows - head - 1 : 0;
    mem = open_memstream(&text, &len);
    if (!mem) {
        resp_free(&r);
        return -ENOMEM;
    }
    print_table(mem, &r, now_unix, &rr, n_rows);
    if (n_rows < r.n_peers)
        fprintf(mem, "... %zu more peer%s\n", r.n_peers - n_rows,
                r.n_peers - n_rows == 1 ? "" : "s");
    ret = fclose(mem) == 0 ? 0 : -ENOMEM;
    if (ret == 0)
        put_clipped(out, text, f->rows, f->cols);
    free(text);
    resp_free(&r);
    return ret;
}

int status_sample(const char *response, uint64_t at_ns, struct watch_sample *s)
{
    struct st_resp r;
    int ret = resp_parse(response, &r);

    memset(s, 0, sizeof(*s));
    if (ret < 0)
        return ret;
    s->at_ns = at_ns;
    if (r.n_peers) {
        s->peers = calloc(r.n_peers, sizeof(*s->peers));
        if (!s->peers) {
            resp_free(&r);
            return -ENOMEM;
        }
    }
    for (size_t i = 0; i < r.n_peers; i++) {
        struct watch_counter *c = &s->peers[i];
        size_t n = strnlen(r.peers[i].key, WATCH_KEY_MAX - 1);

        memcpy(c->key, r.peers[i].key, n);   /* calloc'd: NUL-terminated */
        c->rx_bytes = r.peers[i].rx_bytes;
        c->tx_bytes = r.peers[i].tx_bytes;
    }
    s->n = r.n_peers;
    resp_free(&r);
    return 0;
}

/* --- JSON ---------------------------------------------------------------------------------- */

static void json_string(FILE *out, const char *s)
{
    if (!s) {
        fputs("null", out);
        return;
    }
    fputc('"', out);
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;

        if (ch == '"' || ch == '\\')
            fprintf(out, "\\%c", ch);
        else if (ch < 0x20 || ch == 0x7f)
            fprintf(out, "\\u%04x", ch);
        else
            fputc(ch, out);
    }
    fputc('"', out);
}

/* ["PREFIX",...] */
static void json_routes(FILE *out, const char *const *routes, size_t n)
{
    fputc('[', out);
    for (size_t i = 0; i < n; i++) {
        if (i)
            fputc(',', out);
        json_string(out, routes[i]);
    }
    fputc(']', out);
}

static void json_peer(FILE *out, const struct st_peer *p)
{
    fputs("{\"name\":", out);
    json_string(out, p->name);
    fputs(",\"address\":", out);
    json_string(out, p->address);
    fputs(",\"endpoint\":", out);
    json_string(out, p->endpoint);
    fputs(",\"path\":", out);
    json_string(out, p->path);
    fputs(",\"via\":", out);
    json_string(out, p->via);
    fputs(",\"path_mtu\":", out);
    if (p->has_path_mtu)
        fprintf(out, "%llu", (unsigned long long)p->path_mtu);
    else
        fputs("null", out);
    fputs(",\"flows\":", out);
    if (p->has_flows)
        fprintf(out, "%llu", (unsigned long long)p->flows);
    else
        fputs("null", out);
    fputs(",\"rtt_ms\":", out);
    if (p->has_rtt)
        fprintf(out, "%llu.%03llu", (unsigned long long)(p->rtt_us / US_PER_MS),
                (unsigned long long)(p->rtt_us % US_PER_MS));
    else
        fputs("null", out);
    fputs(",\"cert_expires\":", out);
    if (p->has_cert)
        fprintf(out, "%llu", (unsigned long long)p->cert_expires);
    else
        fputs("null", out);
    fputs(",\"routes\":", out);
    json_routes(out, p->routes, p->n_routes);
    fputs(",\"latest_handshake\":", out);
    if (p->handshake_sec)
        fprintf(out, "%llu", (unsigned long long)p->handshake_sec);
    else
        fputs("null", out);
    fprintf(out, ",\"rx_bytes\":%llu,\"tx_bytes\":%llu,\"rx_rate\":%llu,\"tx_rate\":%llu}",
            (unsigned long long)p->rx_bytes, (unsigned long long)p->tx_bytes,
            (unsigned long long)p->rx_rate, (unsigned long long)p->tx_rate);
}

int status_format_json(const char *response, FILE *out)
{
    struct st_resp r;
    int ret = resp_parse(response, &r);

    if (ret < 0)
        return ret;
    fputs("{\"interface\":", out);
    json_string(out, r.interface);
    fputs(",\"self\":", out);
    json_string(out, r.self);
    fputs(",\"address\":", out);
    json_string(out, r.address);
    fprintf(out, ",\"listen_port\":%llu", (unsigned long long)r.listen_port);
    fputs(",\"cluster_sum\":", out);
    if (r.cluster_sum)
        json_string(out, r.cluster_sum);
    else
        fputs("null", out);
    fputs(",\"cluster_applied\":", out);
    if (r.has_cluster_applied)
        fprintf(out, "%llu", (unsigned long long)r.cluster_applied);
    else
        fputs("null", out);
    fputs(",\"cert_expires\":", out);
    if (r.has_cert)
        fprintf(out, "%llu", (unsigned long long)r.cert_expires);
    else
        fputs("null", out);
    fputs(",\"cert_ended\":[", out);
    for (size_t i = 0; i < r.n_ended; i++) {
        char *name = NULL;
        unsigned long long at = strtoull(r.ended[i], &name, 10);

        fprintf(out, "%s{\"at\":%llu,\"name\":", i ? "," : "", at);
        json_string(out, name && *name == ' ' ? name + 1 : "");
        fputc('}', out);
    }
    fputc(']', out);
    fputs(",\"address_clash\":", out);
    if (r.clash_holder) {
        fputs("{\"holder\":", out);
        json_string(out, r.clash_holder);
        fputs(",\"key\":", out);
        json_string(out, r.clash_key);
        fprintf(out, ",\"derived\":%s}", r.clash_derived ? "true" : "false");
    } else {
        fputs("null", out);
    }
    fputs(",\"registry\":", out);
    if (r.registry_state) {
        fputs("{\"state\":", out);
        json_string(out, r.registry_state);
        fprintf(out, ",\"revision\":%llu,\"endpoint\":", (unsigned long long)r.registry_revision);
        if (r.registry_endpoint)
            json_string(out, r.registry_endpoint);
        else
            fputs("null", out);
        fputs(",\"error\":", out);
        if (r.registry_error)
            json_string(out, r.registry_error);
        else
            fputs("null", out);
        fputc('}', out);
    } else {
        fputs("null", out);
    }
    fprintf(out, ",\"hints\":{\"unanswered_bytes\":%llu,\"refused\":%llu,"
                 "\"relay_trials_failed\":%llu,\"relays_dropped\":%llu}",
            (unsigned long long)r.hints[0], (unsigned long long)r.hints[1],
            (unsigned long long)r.hints[2], (unsigned long long)r.hints[3]);
    fprintf(out, ",\"drops\":{\"" CONTROL_DROP_SOCKET "\":%llu,\"" CONTROL_DROP_TUN "\":%llu,\""
                 CONTROL_DROP_QUEUE "\":%llu,\"ecn_marked\":%llu,\"" CONTROL_DROP_RULE "\":%llu}",
            (unsigned long long)r.dropped_socket, (unsigned long long)r.dropped_tun,
            (unsigned long long)r.dropped_queue, (unsigned long long)r.ecn_marked,
            (unsigned long long)(r.dropped_rule + r.refused_rule));
    fprintf(out, ",\"rules\":{\"written\":%llu,\"connections\":%llu,\"dropped\":%llu,"
                 "\"refused\":%llu,\"table_full\":%llu,\"peer_full\":%llu}",
            (unsigned long long)r.rules, (unsigned long long)r.rule_conns,
            (unsigned long long)r.dropped_rule, (unsigned long long)r.refused_rule,
            (unsigned long long)r.rule_table_full, (unsigned long long)r.rule_peer_full);
    /* Issue 60: this node's prefixes, whether it masquerades them (null:
     * it carries none), and every prefix with the node that carries it. */
    fputs(",\"routes\":", out);
    json_routes(out, r.routes, r.n_routes);
    fputs(",\"masquerade\":", out);
    if (r.has_masquerade)
        fputs(r.masquerade ? "true" : "false", out);
    else
        fputs("null", out);
    fprintf(out, ",\"cert_routes_refused\":%llu", (unsigned long long)r.cert_routes_refused);
    fputs(",\"carriers\":[", out);
    for (size_t i = 0, shown = 0; i < r.n_routes; i++) {
        fputs(shown++ ? ",{\"prefix\":" : "{\"prefix\":", out);
        json_string(out, r.routes[i]);
        fputs(",\"carrier\":", out);
        json_string(out, r.self);
        fputc('}', out);
    }
    for (size_t p = 0, shown = r.n_routes; p < r.n_peers; p++)
        for (size_t i = 0; i < r.peers[p].n_routes; i++) {
            fputs(shown++ ? ",{\"prefix\":" : "{\"prefix\":", out);
            json_string(out, r.peers[p].routes[i]);
            fputs(",\"carrier\":", out);
            json_string(out, r.peers[p].name);
            fputc('}', out);
        }
    fputc(']', out);
    fputs(",\"peers\":[", out);
    for (size_t p = 0; p < r.n_peers; p++) {
        if (p)
            fputc(',', out);
        json_peer(out, &r.peers[p]);
    }
    fputs("]}\n", out);
    resp_free(&r);
    return 0;
}

/* --- env ------------------------------------------------------------------------------------- */

static bool shell_safe(const char *s)
{
    if (!*s)
        return false;
    for (; *s; s++)
        if (!strchr("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                    "0123456789@%+=:,./_-", *s))
            return false;
    return true;
}

/* value as one shell word: as it is when plainly safe, else single-quoted. */
static void print_word(FILE *out, const char *value)
{
    if (shell_safe(value)) {
        fputs(value, out);
        return;
    }
    fputc('\'', out);
    for (; *value; value++) {
        if (*value == '\'')
            fputs("'\\''", out);
        else
            fputc(*value, out);
    }
    fputc('\'', out);
}

/* "export NAME=value". */
static void print_export(FILE *out, const char *name, const char *value)
{
    fprintf(out, "export %s=", name);
    print_word(out, value);
    fputc('\n', out);
}

int status_env_fail(const char *line, FILE *out)
{
    fputs("echo ", out);
    print_word(out, line);
    fputs(" >&2; false\n", out);
    return fflush(out) == 0 && !ferror(out) ? 0 : -EIO;
}

/* The overlay address of the node named name, this one or a peer;
 * names match as the cluster file's do, ignoring case. */
static const char *node_address(const struct st_resp *r, const char *name)
{
    if (!strcasecmp(name, r->self))
        return r->address;
    for (size_t i = 0; i < r->n_peers; i++)
        if (!strcasecmp(name, r->peers[i].name))
            return r->peers[i].address;
    return NULL;
}

int status_format_env(const char *response, const char *master, FILE *out)
{
    struct st_resp r;
    const char *addr;
    int ret = resp_parse(response, &r);

    if (ret < 0)
        return ret;
    addr = master ? node_address(&r, master) : r.master_address;
    if (!addr) {
        ret = master ? -ENOENT : -EPROTO;
    } else {
        print_export(out, "NCCL_SOCKET_IFNAME", r.interface);
        print_export(out, "GLOO_SOCKET_IFNAME", r.interface);
        print_export(out, "MASTER_ADDR", addr);
    }
    resp_free(&r);
    return ret;
}

/* --- the verbs ---------------------------------------------------------------------------- */

#define STATUS_ALLOWED (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR | CLI_OPT_JSON | CLI_OPT_WATCH)
#define STATUS_USAGE   "[-i IFNAME] [--run-dir DIR] [--json | -w|--watch [SECONDS]]"
#define ENV_ALLOWED    (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR | CLI_OPT_MASTER)
#define ENV_USAGE      "[-i IFNAME] [--run-dir DIR] [--master NAME]"

/* Room for the control socket's path. */
#define SOCK_PATH_MAX sizeof(((struct sockaddr_un *)0)->sun_path)

/* An error of `env` goes where its output goes, as shell text that makes
 * `eval "$(ddpnet env)"` fail with the reason, so that a job never starts
 * on the wrong network because the line went unseen; a person reading a
 * terminal gets the plain line on stderr (cli_args.h). */
static bool env_failing;

__attribute__((format(printf, 2, 3)))
static void say_error(const char *verb, const char *fmt, ...)
{
    char line[PATH_MAX + 256];
    va_list ap;
    int n = snprintf(line, sizeof(line), "ddpnet %s: ", verb);

    va_start(ap, fmt);
    vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
    va_end(ap);
    if (env_failing && !isatty(STDOUT_FILENO) && status_env_fail(line, stdout) == 0)
        return;
    fprintf(stderr, "%s\n", line);
}

/* Asks the daemon at the socket of a (its path into path, SOCK_PATH_MAX
 * bytes): for env the env socket, which any user may ask, else the control
 * socket. Prints the error line itself. Returns 0 or 1. */
static int fetch(const char *verb, bool env, const struct cli_args *a, char *path,
                 char **response)
{
    int ret = env ? daemon_env_socket_path(path, SOCK_PATH_MAX, a->run_dir, a->ifname)
                  : daemon_socket_path(path, SOCK_PATH_MAX, a->run_dir, a->ifname);

    if (ret < 0) {
        say_error(verb, "run directory '%s' is too long for a socket path", a->run_dir);
        return CLI_EXIT_FAIL;
    }
    unsigned theirs = 0;
    char why[CLI_PROTOCOL_LINE_MAX];

    ret = control_request_ddpnet(path, env ? CONTROL_GET_ENV "\n" : CONTROL_GET_DDPNET "\n", -1,
                                 response, &theirs);
    if (ret == -EPROTONOSUPPORT && control_protocol_message(why, sizeof(why), theirs, a->ifname))
        say_error(verb, "%s", why);
    else if (ret == -ENOENT || ret == -ECONNREFUSED)
        say_error(verb, "%s is not up (no %s socket at %s)%s", a->ifname,
                  env ? "env" : "control", path,
                  env ? "; nothing was exported: NCCL and Gloo would pick another network" : "");
    /* The env socket is everyone's: only a daemon too old to have one
     * refuses (its file is then root's control socket, or missing). */
    else if (ret == -EACCES || ret == -EPERM || (ret == -ECONNRESET && geteuid() != 0))
        say_error(verb, "permission denied on %s: %s", path,
                  env ? "a daemon older than this ddpnet; restart it" : "run as root");
    else if (ret < 0)
        say_error(verb, "no answer from the daemon at %s: %s", path, strerror(-ret));
    return ret < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

static int report_format_error(const char *verb, const struct cli_args *a, int ret)
{
    if (ret == -ENOENT && a->master)
        say_error(verb, "no node named '%s' in the cluster", a->master);
    else if (ret == -EPROTO)
        say_error(verb, "the daemon's answer is not understood (is it another version of "
                        "ddpnet?)");
    else
        say_error(verb, "the daemon answered: %s", strerror(-ret));
    return CLI_EXIT_FAIL;
}

static int print_response(bool env, const struct cli_args *a, const char *response)
{
    if (env)
        return status_format_env(response, a->master, stdout);
    if (a->json)
        return status_format_json(response, stdout);
    return status_format_table(response, stdout, (uint64_t)time(NULL));
}

/* The watch's later questions, which cli_watch.c reports itself. */
static int fetch_again(void *path, char **response)
{
    unsigned theirs;

    return control_request_ddpnet(path, CONTROL_GET_DDPNET "\n", -1, response, &theirs);
}

/* `status --watch`, from the daemon's first answer (taken over). */
static int watch(const char *verb, const struct cli_args *a, char *path, char *response)
{
    struct watch_sample s;
    struct watch_opts o = {
        .verb = verb, .ifname = a->ifname, .interval_ns = a->watch_ns,
        .in_fd = STDIN_FILENO, .out_fd = STDOUT_FILENO, .fetch = fetch_again, .ctx = path,
    };
    /* An answer not understood is said as plain status says it, before
     * the terminal is touched. */
    int ret = status_sample(response, 0, &s);

    if (ret < 0) {
        free(response);
        return report_format_error(verb, a, ret);
    }
    watch_sample_free(&s);
    return watch_run(&o, response);
}

static int run_verb(bool env, int argc, char **argv)
{
    const char *verb = argc > 0 ? argv[0] : (env ? "env" : "status");
    struct cli_args a;
    char path[SOCK_PATH_MAX];
    char *response = NULL;
    int ret = cli_args_handle(argc, argv, env ? ENV_ALLOWED : STATUS_ALLOWED, 0,
                              env ? ENV_USAGE : STATUS_USAGE, &a);

    /* A wrong command line must stop `eval "$(ddpnet env ...)"` too. */
    if (ret == CLI_EXIT_USAGE && env && !isatty(STDOUT_FILENO))
        (void)status_env_fail("ddpnet env: the command line is wrong (see above); nothing "
                              "was exported", stdout);
    if (ret != CLI_CONTINUE)
        return ret;
    if (a.watch && a.json) {
        fprintf(stderr, "ddpnet %s: --watch draws the table; it does not go with --json\n"
                        "usage: ddpnet %s %s\n", verb, verb, STATUS_USAGE);
        return CLI_EXIT_USAGE;
    }
    env_failing = env;
    if (fetch(verb, env, &a, path, &response) != CLI_EXIT_OK)
        return CLI_EXIT_FAIL;
    if (a.watch)
        return watch(verb, &a, path, response);
    ret = print_response(env, &a, response);
    free(response);
    if (ret < 0)
        return report_format_error(verb, &a, ret);
    return fflush(stdout) == 0 && !ferror(stdout) ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

int cli_status(int argc, char **argv)
{
    return run_verb(false, argc, argv);
}

int cli_env(int argc, char **argv)
{
    return run_verb(true, argc, argv);
}
