/* SPDX-License-Identifier: MIT */
/* `ddpnet doctor`: from this node, is every peer reached, and how. It asks
 * the daemon over the control socket (get=ddpnet) who the peers are, then
 * sends each a few ICMP echoes to its overlay address: they go through
 * ddp0 and the daemon's sessions, so an answer proves the whole way there
 * and back (a handshake made if none was, the peer's daemon, its kernel).
 * The sockets are bound to the interface, and a reply counts only from
 * the peer's overlay address: one sent to the underlay by anyone else
 * never does.
 * It asks the daemon again for the path and its MTU the echoes took. With
 * --rate it then keeps a window of echoes of the path's MTU in flight to
 * each reached peer in turn, for a fixed time. What it sends is bounded:
 * at most DOCTOR_ECHOES_MAX small echoes per peer, and with --rate one
 * window per peer for DOCTOR_RATE_MS. The report's parse and formatting
 * are pure (cli_doctor.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/icmp6.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "config/routes.h"
#include "overlay/base/clock.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/cli/cli_doctor.h"
#include "overlay/cli/cli_reply.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/daemon/daemon.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/renewal.h"
#include "tun/netlink.h"

/* How long a peer has to answer: WireGuard retries a lost initiation
 * after 5 s (REKEY_TIMEOUT), so one lost packet still gets its second try
 * inside it. */
#define DOCTOR_REACH_MS       7000
/* An echo unanswered for this long is sent again. */
#define DOCTOR_RESEND_MS      1000
/* Echoes answered before a peer's round trip is taken: the first one of a
 * peer without a session waits for its handshake. */
#define DOCTOR_SAMPLES        3u
/* The most small echoes one peer is sent while it is looked for. */
#define DOCTOR_ECHOES_MAX     (DOCTOR_REACH_MS / DOCTOR_RESEND_MS + DOCTOR_SAMPLES)
/* --rate: each reached peer in turn, this long, this many echoes in
 * flight. */
#define DOCTOR_RATE_MS        2000
#define DOCTOR_RATE_WINDOW    32u
#define DOCTOR_ECHO_SMALL     64u      /* bytes of an echo's data while looking */
#define DOCTOR_ECHO_MAX       9000u    /* the largest echo (a jumbo path) */
#define DOCTOR_IPV4_HDR       20u
#define DOCTOR_IPV6_HDR       40u
#define DOCTOR_ICMP_HDR       8u
#define DOCTOR_STAMP_LEN      12u      /* an echo's data begins: ns (8), peer (4) */
#define DOCTOR_RECV_MAX       (DOCTOR_ECHO_MAX + 128u)
#define CELL_MAX              96u
#define N_COLS_MAX            8u
#define COLUMN_GAP            "  "
#define SECS_PER_MIN          60u
#define SECS_PER_HOUR         3600u
#define SECS_PER_DAY          86400u
#define BITS_PER_BYTE         8u
#define EXPORT_PREFIX         "export "

/* --- the report -------------------------------------------------------------------- */

static int add_peer(struct doctor_report *r)
{
    struct doctor_peer *p = cli_reply_grow(r->peers, &r->cap_peers, r->n_peers, sizeof(*p));

    if (!p)
        return -ENOMEM;
    r->peers = p;
    r->n_peers++;
    return 0;
}

/* A route= line: ours (peer 0) or the latest peer's (its index + 1). */
static int add_route(struct doctor_report *r, const char *prefix, size_t peer)
{
    struct doctor_route *t = cli_reply_grow(r->routes, &r->cap_routes, r->n_routes, sizeof(*t));

    if (!t)
        return -ENOMEM;
    r->routes = t;
    t = &t[r->n_routes++];
    memset(t, 0, sizeof(*t));
    t->prefix = prefix;
    t->peer = peer;
    return 0;
}

static int peer_line(void *ctx, const char *key, const char *v)
{
    struct doctor_report *r = ctx;
    struct doctor_peer *p;

    if (!strcmp(key, UAPI_KEY_PUBLIC_KEY))
        return add_peer(r);
    p = &r->peers[r->n_peers - 1];
    if (!strcmp(key, CONTROL_KEY_ROUTE))
        return add_route(r, v, r->n_peers);
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
    else if (!strcmp(key, CONTROL_KEY_PATH_MTU)) {
        p->has_path_mtu = true;
        return cli_reply_u64(v, &p->path_mtu);
    } else if (!strcmp(key, CONTROL_KEY_RTT_US)) {
        p->has_daemon_rtt = true;
        return cli_reply_u64(v, &p->daemon_rtt_us);
    } else if (!strcmp(key, UAPI_KEY_LAST_HANDSHAKE_SEC))
        return cli_reply_u64(v, &p->handshake_sec);
    return 0;   /* what doctor does not show */
}

static int iface_line(void *ctx, const char *key, const char *v)
{
    struct doctor_report *r = ctx;

    if (!strcmp(key, CONTROL_KEY_INTERFACE))
        r->interface = v;
    else if (!strcmp(key, CONTROL_KEY_SELF))
        r->self = v;
    else if (!strcmp(key, CONTROL_KEY_ADDRESS))
        r->address = v;
    else if (!strcmp(key, CONTROL_KEY_MASTER_ADDRESS))
        r->master_address = v;
    else if (!strcmp(key, CONTROL_KEY_CLASH_HOLDER))
        r->clash_holder = v;
    else if (!strcmp(key, CONTROL_KEY_CLASH_KEY))
        r->clash_key = v;
    else if (!strcmp(key, CONTROL_KEY_CLASH_DERIVED))
        return cli_reply_u64(v, &r->clash_derived);
    else if (!strcmp(key, CONTROL_KEY_ROUTE))
        return add_route(r, v, 0);
    else if (!strcmp(key, CONTROL_KEY_MASQUERADE))
        r->masquerade = !strcmp(v, "1");
    else if (!strcmp(key, CONTROL_KEY_CERT_EXPIRES)) {
        r->has_cert = true;
        return cli_reply_u64(v, &r->cert_expires);
    } else if (!strcmp(key, CONTROL_KEY_MTU)) {
        r->has_mtu = true;
        return cli_reply_u64(v, &r->mtu);
    } else if (!strcmp(key, CONTROL_KEY_DROPPED_SOCKET))
        return cli_reply_u64(v, &r->dropped_socket);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_TUN))
        return cli_reply_u64(v, &r->dropped_tun);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_QUEUE))
        return cli_reply_u64(v, &r->dropped_queue);
    else if (!strcmp(key, CONTROL_KEY_ECN_MARKED))
        return cli_reply_u64(v, &r->ecn_marked);
    else if (!strcmp(key, CONTROL_KEY_RULES))
        return cli_reply_u64(v, &r->rules);
    else if (!strcmp(key, CONTROL_KEY_DROPPED_RULE))
        return cli_reply_u64(v, &r->dropped_rule);
    else if (!strcmp(key, CONTROL_KEY_REFUSED_RULE))
        return cli_reply_u64(v, &r->refused_rule);
    else if (!strcmp(key, CONTROL_KEY_RULE_TABLE_FULL))
        return cli_reply_u64(v, &r->rule_table_full);
    else if (!strcmp(key, CONTROL_KEY_SOCKET_BUFFER)) {
        r->has_socket_buffer = true;
        return cli_reply_u64(v, &r->socket_buffer);
    }
    return 0;
}

void doctor_report_free(struct doctor_report *r)
{
    free(r->text);
    free(r->peers);
    free(r->routes);
    free(r->env);
    memset(r, 0, sizeof(*r));
}

int doctor_parse(const char *response, struct doctor_report *r)
{
    int ret;

    memset(r, 0, sizeof(*r));
    if (!response)
        return -EINVAL;
    r->text = strdup(response);
    if (!r->text)
        return -ENOMEM;
    ret = cli_reply_walk(r->text, &(struct cli_reply_sink){r, iface_line, peer_line});
    if (ret == 0 && (!r->interface || !r->self || !r->address))
        ret = -EPROTO;
    for (size_t i = 0; ret == 0 && i < r->n_peers; i++)
        if (!r->peers[i].name || !r->peers[i].address)
            ret = -EPROTO;
    for (size_t i = 0; ret == 0 && i < r->n_routes; i++)
        r->routes[i].carrier = r->routes[i].peer ? r->peers[r->routes[i].peer - 1].name : NULL;
    if (ret < 0)
        doctor_report_free(r);
    return ret;
}

size_t doctor_unreached(const struct doctor_report *r)
{
    size_t n = 0;

    for (size_t i = 0; i < r->n_peers; i++)
        n += !r->peers[i].probe.reached;
    return n;
}

size_t doctor_route_faults(const struct doctor_report *r)
{
    size_t n = 0;

    for (size_t i = 0; i < r->n_routes; i++)
        n += r->routes[i].fault;
    return n;
}

bool doctor_ok(const struct doctor_report *r)
{
    return !doctor_unreached(r) && !r->clash_holder && !doctor_route_faults(r);
}

bool doctor_cert_ended(const struct doctor_report *r, uint64_t now_unix)
{
    return r->has_cert && r->cert_expires <= now_unix;
}

/* --- the table ------------------------------------------------------------------------ */

typedef char cells_t[N_COLS_MAX][CELL_MAX];

static void age_cell(char *buf, uint64_t then, uint64_t now)
{
    uint64_t age = now > then ? now - then : 0;

    if (then == 0)
        snprintf(buf, CELL_MAX, "never");
    else if (age < SECS_PER_MIN)
        snprintf(buf, CELL_MAX, "%llus ago", (unsigned long long)age);
    else if (age < SECS_PER_HOUR)
        snprintf(buf, CELL_MAX, "%llum ago", (unsigned long long)(age / SECS_PER_MIN));
    else if (age < SECS_PER_DAY)
        snprintf(buf, CELL_MAX, "%lluh ago", (unsigned long long)(age / SECS_PER_HOUR));
    else
        snprintf(buf, CELL_MAX, "%llud ago", (unsigned long long)(age / SECS_PER_DAY));
}

static void rtt_cell(char *buf, uint64_t us)
{
    snprintf(buf, CELL_MAX, "%llu.%02llu ms", (unsigned long long)(us / US_PER_MS),
             (unsigned long long)(us % US_PER_MS / 10));
}

/* Bits per second in the largest unit of 1000 it reaches, one decimal. */
static void rate_cell(char *buf, uint64_t bytes_per_sec)
{
    static const char *const units[] = { "bit/s", "kbit/s", "Mbit/s", "Gbit/s", "Tbit/s" };
    double v = (double)bytes_per_sec * BITS_PER_BYTE;
    size_t k = 0;

    while (k + 1 < sizeof(units) / sizeof(units[0]) && v >= 1000.0) {
        v /= 1000.0;
        k++;
    }
    snprintf(buf, CELL_MAX, k ? "%.1f %s" : "%.0f %s", v, units[k]);
}

/* "direct", "relay via NAME", what else the daemon said, or "-". */
static void path_text(char *buf, const struct doctor_peer *p)
{
    if (p->path && p->via)
        snprintf(buf, CELL_MAX, "%s via %s", p->path, p->via);
    else
        snprintf(buf, CELL_MAX, "%s", p->path ? p->path : "-");
}

static size_t n_columns(const struct doctor_report *r)
{
    return r->rate ? 8 : 7;
}

static void fill_row(cells_t c, const struct doctor_peer *p, const struct doctor_report *r,
                     uint64_t now)
{
    snprintf(c[0], CELL_MAX, "%s", p->name);
    snprintf(c[1], CELL_MAX, "%s", p->address);
    snprintf(c[2], CELL_MAX, "%s", p->probe.reached ? "yes" : "NO");
    path_text(c[3], p);
    if (p->has_path_mtu)
        snprintf(c[4], CELL_MAX, "%llu", (unsigned long long)p->path_mtu);
    else
        snprintf(c[4], CELL_MAX, "-");
    if (p->probe.reached)
        rtt_cell(c[5], p->probe.rtt_us);
    else
        snprintf(c[5], CELL_MAX, "-");
    age_cell(c[6], p->handshake_sec, now);
    if (r->rate && p->probe.has_rate)
        rate_cell(c[7], p->probe.rate);
    else if (r->rate)
        snprintf(c[7], CELL_MAX, "-");
}

static void put_row(FILE *out, const char *const *cells, const size_t *width, size_t n)
{
    /* MTU, RTT and RATE line up on the right. */
    static const bool right[N_COLS_MAX] = { false, false, false, false, true, true, false, true };

    for (size_t i = 0; i < n; i++) {
        bool last = i + 1 == n;

        if (right[i])
            fprintf(out, "%*s", (int)width[i], cells[i]);
        else if (last)
            fputs(cells[i], out);
        else
            fprintf(out, "%-*s", (int)width[i], cells[i]);
        fputs(last ? "\n" : COLUMN_GAP, out);
    }
}

static void print_rows(const struct doctor_report *r, FILE *out, uint64_t now)
{
    static const char *const names[N_COLS_MAX] = {
        "NAME", "ADDRESS", "REACHED", "PATH", "MTU", "RTT", "HANDSHAKE", "RATE",
    };
    size_t n = n_columns(r), width[N_COLS_MAX];
    cells_t c;
    const char *cells[N_COLS_MAX];

    for (size_t i = 0; i < n; i++)
        width[i] = strlen(names[i]);
    for (size_t p = 0; p < r->n_peers; p++) {
        fill_row(c, &r->peers[p], r, now);
        for (size_t i = 0; i < n; i++)
            if (strlen(c[i]) > width[i])
                width[i] = strlen(c[i]);
    }
    put_row(out, names, width, n);
    for (size_t p = 0; p < r->n_peers; p++) {
        fill_row(c, &r->peers[p], r, now);
        for (size_t i = 0; i < n; i++)
            cells[i] = c[i];
        put_row(out, cells, width, n);
    }
}

/* Issue 43: a clash this node lost, and what to do about it. */
static void print_clash(const struct doctor_report *r, FILE *out)
{
    if (r->clash_holder)
        fprintf(out, "error: address clash: %s, %s, is also %s's (key %s), which the members "
                "hold first: they do not reach this node. To join: " CERTS_CLASH_WHAT_TO_DO
                "\n", r->address, r->clash_derived ? "derived from this node's key"
                : "fixed by this node's certificate", r->clash_holder,
                r->clash_key ? r->clash_key : "?");
}

/* Issue 56: this node's certificate ended (the cause of every peer not
 * reached), or ends within a day, and what to run. */
static void print_cert(const struct doctor_report *r, FILE *out, uint64_t now)
{
    if (doctor_cert_ended(r, now))
        fprintf(out, "error: this node's certificate ended %llus ago (%llu) with no renewal: "
                "the members dropped %s. To rejoin: where the authority's key is, sign it "
                "again (ddpnet authority sign -a authority.key --name %s --public-key KEY, "
                "KEY as ddpnet pubkey prints it), put it at this node's --cert path, then "
                "restart it (systemctl restart ddpnet@%s); next time renew it before its end "
                "(docs/authority.md, \"Renewal\")\n",
                (unsigned long long)(now - r->cert_expires),
                (unsigned long long)r->cert_expires, r->self, r->self, r->interface);
    else if (r->has_cert && r->cert_expires - now < 86400)
        fprintf(out, "warning: this node's certificate ends in %llus (%llu) and the members "
                "drop %s then: renew it: " RENEWAL_WHAT_TO_DO "\n",
                (unsigned long long)(r->cert_expires - now), (unsigned long long)r->cert_expires,
                r->self);
}

static void print_verdict(const struct doctor_report *r, FILE *out, uint64_t now)
{
    size_t bad = doctor_unreached(r), shown = 0;

    if (doctor_cert_ended(r, now)) {
        fprintf(out, "NOT READY: %s's certificate ended (below)", r->self);
        if (bad)
            fprintf(out, ": %zu of %zu peer%s not reached", bad, r->n_peers,
                    r->n_peers == 1 ? "" : "s");
        fputc('\n', out);
        return;
    }
    if (bad == 0 && r->clash_holder) {
        fprintf(out, "NOT READY: %s's address is another member's (below)\n", r->self);
        return;
    }
    if (bad == 0 && doctor_route_faults(r)) {
        fprintf(out, "NOT READY: %s reached every peer (%zu), but %zu route%s not in place "
                "(below)\n", r->self, r->n_peers, doctor_route_faults(r),
                doctor_route_faults(r) == 1 ? " is" : "s are");
        return;
    }
    if (bad == 0) {
        fprintf(out, "ok: %s reached every peer (%zu)\n", r->self, r->n_peers);
        return;
    }
    fprintf(out, "NOT READY: %zu of %zu peer%s not reached:", bad, r->n_peers,
            r->n_peers == 1 ? "" : "s");
    for (size_t i = 0; i < r->n_peers; i++)
        if (!r->peers[i].probe.reached)
            fprintf(out, "%s %s", shown++ ? "," : "", r->peers[i].name);
    fputc('\n', out);
}

/* Each kind of packet the kernel dropped before the daemon saw it, and
 * what to do about it (docs/long-paths.md). */
static void print_drops(const struct doctor_report *r, FILE *out)
{
    if (r->dropped_socket) {
        fprintf(out, "warning: the kernel dropped %llu datagram%s at the UDP sockets (%s): their "
                "receive buffer", (unsigned long long)r->dropped_socket,
                r->dropped_socket == 1 ? "" : "s", CONTROL_DROP_SOCKET);
        if (r->has_socket_buffer)
            fprintf(out, " (%llu KiB)", (unsigned long long)(r->socket_buffer >> 10));
        fputs(" filled while the daemon was busy, and TCP resent each one. Raise socket-buffer "
              "in [cluster] to at least the path's rate times its round trip (32M for "
              "1 Gbit/s over 80 ms; the daemon raises its own limits as root) and restart the "
              "node; if it stays, give the daemon more CPU\n", out);
    }
    if (r->dropped_tun)
        fprintf(out, "warning: the kernel dropped %llu packet%s at %s's transmit queue (%s): "
                "applications sent faster than the daemon read them. Lengthen the queue "
                "(ip link set %s txqueuelen 10000) or give the daemon more CPU\n",
                (unsigned long long)r->dropped_tun, r->dropped_tun == 1 ? "" : "s",
                r->interface, CONTROL_DROP_TUN, r->interface);
    if (r->dropped_queue || r->ecn_marked)
        fprintf(out, "note: this node slowed its senders down: datagrams waited over the queue "
                "target at the UDP sockets for 100 ms or more, so it dropped %llu packet%s "
                "(%s) and marked %llu ECN, as a congested router would, to keep that wait "
                "short. The daemon receives more slowly than the path delivers: give it more "
                "CPU (DDPNET_SHARDS, fewer other processes on its cores)\n",
                (unsigned long long)r->dropped_queue, r->dropped_queue == 1 ? "" : "s",
                CONTROL_DROP_QUEUE, (unsigned long long)r->ecn_marked);
    if (r->dropped_rule || r->refused_rule)
        fprintf(out, "note: the cluster file's rules (%llu, default deny) refused %llu packet%s "
                "from peers and %llu from this node's applications (%s; each sent back ICMP "
                "administratively prohibited): not a network fault. `ddpnet rules test FROM TO "
                "PROTO PORT` says which rule allows what\n",
                (unsigned long long)r->rules, (unsigned long long)r->dropped_rule,
                r->dropped_rule == 1 ? "" : "s", (unsigned long long)r->refused_rule,
                CONTROL_DROP_RULE);
    if (r->rule_table_full)
        fprintf(out, "warning: %llu new connection%s refused: the rules' connection table "
                "had no free slot; live connections are never evicted, idle ones expire "
                "(ddpnet.conf(5), RULES)\n",
                (unsigned long long)r->rule_table_full, r->rule_table_full == 1 ? "" : "s");
}

/* Issue 60: each route, carried here or routed to a peer, and what its
 * check saw. */
static void print_routes(const struct doctor_report *r, FILE *out)
{
    for (size_t i = 0; i < r->n_routes; i++) {
        const struct doctor_route *t = &r->routes[i];

        fprintf(out, "%sroute %s, ", t->fault ? "error: " : "", t->prefix);
        if (t->carrier)
            fprintf(out, "carried by %s", t->carrier);
        else
            fprintf(out, "carried by this node (%s)", r->masquerade ? "masquerade" : "routed");
        fprintf(out, ": %s\n", !t->checked ? "not checked" : t->fault ? t->note
                               : t->note[0] ? t->note : "ok");
    }
}

void doctor_format_table(const struct doctor_report *r, FILE *out, uint64_t now_unix)
{
    fprintf(out, "%s: node %s, address %s", r->interface, r->self, r->address);
    if (r->has_mtu)
        fprintf(out, ", mtu %llu", (unsigned long long)r->mtu);
    fprintf(out, ", %zu peer%s", r->n_peers, r->n_peers == 1 ? "" : "s");
    if (r->rate)
        fprintf(out, ", rate: %llu ms of ICMP echoes per peer",
                (unsigned long long)r->rate_ms);
    fputc('\n', out);
    print_rows(r, out, now_unix);
    print_verdict(r, out, now_unix);
    print_clash(r, out);
    print_cert(r, out, now_unix);
    print_drops(r, out);
    print_routes(r, out);
    fputs("\nenvironment (ddpnet env):\n", out);
    fputs(r->env ? r->env : "  (none: `ddpnet env` failed, see above)\n", out);
}

/* --- JSON ---------------------------------------------------------------------------- */

static void json_str(FILE *out, const char *s)
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

/* A shell word as print_export writes it: plain, or in single quotes
 * with '\'' for a quote. Written as a JSON string. */
static void json_shell_word(FILE *out, const char *w, size_t len)
{
    char *s = malloc(len + 1), *o = s;
    bool quoted = false;

    if (!s) {
        fputs("null", out);
        return;
    }
    for (size_t i = 0; i < len; i++) {
        if (w[i] == '\'')
            quoted = !quoted;
        else if (w[i] == '\\' && !quoted && i + 1 < len)
            *o++ = w[++i];
        else
            *o++ = w[i];
    }
    *o = '\0';
    json_str(out, s);
    free(s);
}

/* env's "export NAME=value" lines as {"NAME":"value",...}. */
static void json_env(FILE *out, const char *env)
{
    size_t n = 0;

    if (!env) {
        fputs("null", out);
        return;
    }
    fputc('{', out);
    for (const char *line = env; *line;) {
        size_t len = strcspn(line, "\n");
        const char *eq = memchr(line, '=', len);

        if (!strncmp(line, EXPORT_PREFIX, strlen(EXPORT_PREFIX)) && eq) {
            const char *name = line + strlen(EXPORT_PREFIX);
            char key[CELL_MAX];

            snprintf(key, sizeof(key), "%.*s", (int)(eq - name), name);
            fputs(n++ ? "," : "", out);
            json_str(out, key);
            fputc(':', out);
            json_shell_word(out, eq + 1, (size_t)(line + len - eq - 1));
        }
        line += len + (line[len] == '\n');
    }
    fputc('}', out);
}

static void json_u64_or_null(FILE *out, bool has, uint64_t v)
{
    if (has)
        fprintf(out, "%llu", (unsigned long long)v);
    else
        fputs("null", out);
}

static void json_peer(FILE *out, const struct doctor_peer *p)
{
    fputs("{\"name\":", out);
    json_str(out, p->name);
    fputs(",\"address\":", out);
    json_str(out, p->address);
    fprintf(out, ",\"reached\":%s,\"path\":", p->probe.reached ? "true" : "false");
    json_str(out, p->path);
    fputs(",\"via\":", out);
    json_str(out, p->via);
    fputs(",\"endpoint\":", out);
    json_str(out, p->endpoint);
    fputs(",\"path_mtu\":", out);
    json_u64_or_null(out, p->has_path_mtu, p->path_mtu);
    fputs(",\"rtt_ms\":", out);
    if (p->probe.reached)
        fprintf(out, "%llu.%03llu", (unsigned long long)(p->probe.rtt_us / US_PER_MS),
                (unsigned long long)(p->probe.rtt_us % US_PER_MS));
    else
        fputs("null", out);
    fputs(",\"latest_handshake\":", out);
    json_u64_or_null(out, p->handshake_sec != 0, p->handshake_sec);
    fputs(",\"rate_bps\":", out);
    json_u64_or_null(out, p->probe.has_rate, p->probe.rate * BITS_PER_BYTE);
    fputc('}', out);
}

void doctor_format_json(const struct doctor_report *r, FILE *out)
{
    size_t n = 0;

    fputs("{\"interface\":", out);
    json_str(out, r->interface);
    fputs(",\"self\":", out);
    json_str(out, r->self);
    fputs(",\"address\":", out);
    json_str(out, r->address);
    fprintf(out, ",\"ok\":%s,\"unreached\":[", doctor_ok(r) ? "true" : "false");
    for (size_t i = 0; i < r->n_peers; i++) {
        if (r->peers[i].probe.reached)
            continue;
        fputs(n++ ? "," : "", out);
        json_str(out, r->peers[i].name);
    }
    fputs("],\"address_clash\":", out);
    if (r->clash_holder) {
        fputs("{\"holder\":", out);
        json_str(out, r->clash_holder);
        fputs(",\"key\":", out);
        json_str(out, r->clash_key);
        fprintf(out, ",\"derived\":%s}", r->clash_derived ? "true" : "false");
    } else {
        fputs("null", out);
    }
    fputs(",\"cert_expires\":", out);
    if (r->has_cert)
        fprintf(out, "%llu", (unsigned long long)r->cert_expires);
    else
        fputs("null", out);
    fputs(",\"peers\":[", out);
    for (size_t i = 0; i < r->n_peers; i++) {
        fputs(i ? "," : "", out);
        json_peer(out, &r->peers[i]);
    }
    fprintf(out, "],\"drops\":{\"" CONTROL_DROP_SOCKET "\":%llu,\"" CONTROL_DROP_TUN "\":%llu,"
                 "\"" CONTROL_DROP_QUEUE "\":%llu,\"ecn_marked\":%llu,\"" CONTROL_DROP_RULE
                 "\":%llu,\"socket_buffer\":",
            (unsigned long long)r->dropped_socket, (unsigned long long)r->dropped_tun,
            (unsigned long long)r->dropped_queue, (unsigned long long)r->ecn_marked,
            (unsigned long long)(r->dropped_rule + r->refused_rule));
    json_u64_or_null(out, r->has_socket_buffer, r->socket_buffer);
    fputs("},\"routes\":[", out);
    for (size_t i = 0; i < r->n_routes; i++) {
        const struct doctor_route *t = &r->routes[i];

        fputs(i ? ",{\"prefix\":" : "{\"prefix\":", out);
        json_str(out, t->prefix);
        fputs(",\"carrier\":", out);
        json_str(out, t->carrier);
        fprintf(out, ",\"checked\":%s,\"ok\":%s,\"note\":", t->checked ? "true" : "false",
                t->fault ? "false" : "true");
        json_str(out, t->note);
        fputc('}', out);
    }
    fputs("],\"env\":", out);
    json_env(out, r->env);
    fputs("}\n", out);
}

/* --- the probe: ICMP echoes through ddp0 ---------------------------------------------- */

struct target {
    int family;
    union {
        struct sockaddr_in v4;
        struct sockaddr_in6 v6;
    } sa;
    uint64_t last_sent_ns;
    unsigned sent, in_flight;
};

struct prober {
    int fd4, fd6;
    uint16_t id;
    uint16_t seq;
    struct target *t;
    struct doctor_report *r;
    uint64_t rate_bytes;       /* --rate: bytes echoed back by rate_peer */
    long rate_peer;            /* -1: none measured now */
};

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static uint16_t inet_sum(const uint8_t *p, size_t len)
{
    uint32_t sum = 0;

    for (size_t i = 0; i + 1 < len; i += 2)
        sum += (uint32_t)p[i] << 8 | p[i + 1];
    if (len & 1)
        sum += (uint32_t)p[len - 1] << 8;
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    return (uint16_t)~sum;
}

/* An echo request of len bytes of ICMP data to peer i. The data begin
 * with the time it was sent and i, read back from the reply. */
static int send_echo(struct prober *pr, size_t i, size_t len, uint64_t now)
{
    uint8_t buf[DOCTOR_ICMP_HDR + DOCTOR_ECHO_MAX];
    struct target *t = &pr->t[i];
    uint32_t idx = (uint32_t)i;
    bool v6 = t->family == AF_INET6;
    uint16_t sum, seq = htons(pr->seq++), id = htons(pr->id);
    ssize_t n;

    if (len < DOCTOR_STAMP_LEN)
        len = DOCTOR_STAMP_LEN;
    if (len > DOCTOR_ECHO_MAX)
        len = DOCTOR_ECHO_MAX;
    memset(buf, 0, DOCTOR_ICMP_HDR + len);
    buf[0] = v6 ? ICMP6_ECHO_REQUEST : ICMP_ECHO;
    memcpy(buf + 4, &id, 2);
    memcpy(buf + 6, &seq, 2);
    memcpy(buf + DOCTOR_ICMP_HDR, &now, sizeof(now));
    memcpy(buf + DOCTOR_ICMP_HDR + sizeof(now), &idx, sizeof(idx));
    if (!v6) {   /* the kernel sums ICMPv6 itself */
        sum = htons(inet_sum(buf, DOCTOR_ICMP_HDR + len));
        memcpy(buf + 2, &sum, 2);
    }
    n = sendto(v6 ? pr->fd6 : pr->fd4, buf, DOCTOR_ICMP_HDR + len, 0,
               (const struct sockaddr *)&t->sa,
               v6 ? sizeof(t->sa.v6) : sizeof(t->sa.v4));
    t->last_sent_ns = now;
    t->sent++;
    if (n < 0)
        return -errno;
    t->in_flight++;
    return 0;
}

/* The peer an echo reply is for, or -1. */
static long match(const struct prober *pr, const uint8_t *icmp, size_t len, bool v6,
                  uint64_t *sent_ns)
{
    uint16_t id;
    uint32_t idx;

    if (len < DOCTOR_ICMP_HDR + DOCTOR_STAMP_LEN)
        return -1;
    memcpy(&id, icmp + 4, 2);
    if (ntohs(id) != pr->id)
        return -1;
    memcpy(sent_ns, icmp + DOCTOR_ICMP_HDR, sizeof(*sent_ns));
    memcpy(&idx, icmp + DOCTOR_ICMP_HDR + sizeof(*sent_ns), sizeof(idx));
    if (idx >= pr->r->n_peers || pr->t[idx].family != (v6 ? AF_INET6 : AF_INET))
        return -1;
    return (long)idx;
}

/* Whether from is the overlay address of the peer a reply names. */
static bool from_peer(const struct prober *pr, long i, const struct sockaddr_storage *from)
{
    const struct target *t = &pr->t[i];

    if (from->ss_family != t->family)
        return false;
    if (t->family == AF_INET)
        return !memcmp(&((const struct sockaddr_in *)from)->sin_addr, &t->sa.v4.sin_addr,
                       sizeof(t->sa.v4.sin_addr));
    return !memcmp(&((const struct sockaddr_in6 *)from)->sin6_addr, &t->sa.v6.sin6_addr,
                   sizeof(t->sa.v6.sin6_addr));
}

static void on_icmp(struct prober *pr, const uint8_t *icmp, size_t len, bool v6,
                    const struct sockaddr_storage *from, uint64_t now)
{
    uint8_t type = icmp[0];
    uint64_t sent;
    long i;

    if (type == (v6 ? ICMP6_ECHO_REPLY : ICMP_ECHOREPLY)) {
        struct doctor_probe *p;

        if ((i = match(pr, icmp, len, v6, &sent)) < 0 || sent > now || !from_peer(pr, i, from))
            return;
        p = &pr->r->peers[i].probe;
        if (!p->answers || (now - sent) / NS_PER_US < p->rtt_us)
            p->rtt_us = (now - sent) / NS_PER_US;
        p->answers++;
        p->reached = true;
        if (pr->t[i].in_flight)
            pr->t[i].in_flight--;
        if (i == pr->rate_peer)
            pr->rate_bytes += len;
    }
}

/* Reads what is waiting on fd. */
static void drain(struct prober *pr, int fd, bool v6)
{
    uint8_t buf[DOCTOR_RECV_MAX];
    struct sockaddr_storage from;
    socklen_t from_len = sizeof(from);
    ssize_t n;

    while ((n = recvfrom(fd, buf, sizeof(buf), MSG_DONTWAIT, (struct sockaddr *)&from,
                         &from_len)) > 0) {
        const uint8_t *icmp = buf;
        size_t len = (size_t)n;

        if (!v6) {   /* a raw IPv4 socket gets the IP header too */
            size_t hl = (size_t)(buf[0] & 0x0f) * 4;

            if (len < hl + DOCTOR_ICMP_HDR)
                continue;
            icmp += hl;
            len -= hl;
        }
        if (len >= DOCTOR_ICMP_HDR)
            on_icmp(pr, icmp, len, v6, &from, now_ns());
        from_len = sizeof(from);
    }
}

/* Waits at most ms for replies and takes them. */
static void wait_replies(struct prober *pr, int ms)
{
    struct pollfd pfd[2] = { { pr->fd4, POLLIN, 0 }, { pr->fd6, POLLIN, 0 } };

    if (poll(pfd, 2, ms < 0 ? 0 : ms) <= 0)
        return;
    if (pfd[0].revents & POLLIN)
        drain(pr, pr->fd4, false);
    if (pfd[1].revents & POLLIN)
        drain(pr, pr->fd6, true);
}

static bool looking_done(const struct prober *pr)
{
    for (size_t i = 0; i < pr->r->n_peers; i++)
        if (pr->t[i].family && pr->r->peers[i].probe.answers < DOCTOR_SAMPLES &&
            pr->t[i].sent < DOCTOR_ECHOES_MAX)
            return false;
    return true;
}

/* Small echoes to every peer until each answered DOCTOR_SAMPLES times or
 * DOCTOR_REACH_MS passed: the next one as soon as one is answered, again
 * after DOCTOR_RESEND_MS of silence. */
static void look(struct prober *pr)
{
    uint64_t start = now_ns(), end = start + DOCTOR_REACH_MS * NS_PER_MS;

    for (uint64_t now = start; now < end && !looking_done(pr); now = now_ns()) {
        for (size_t i = 0; i < pr->r->n_peers; i++) {
            struct target *t = &pr->t[i];
            bool idle = t->in_flight == 0 ||
                        now - t->last_sent_ns >= DOCTOR_RESEND_MS * NS_PER_MS;

            if (t->family && idle && t->sent < DOCTOR_ECHOES_MAX &&
                pr->r->peers[i].probe.answers < DOCTOR_SAMPLES) {
                if (t->in_flight && now - t->last_sent_ns >= DOCTOR_RESEND_MS * NS_PER_MS)
                    t->in_flight = 0;   /* lost: its reply no longer counts as awaited */
                (void)send_echo(pr, i, DOCTOR_ECHO_SMALL, now);
            }
        }
        wait_replies(pr, 50);
    }
}

/* The data of an echo that fills the peer's path: its MTU less the
 * headers. */
static size_t echo_len(const struct doctor_report *r, const struct doctor_peer *p, int family)
{
    uint64_t mtu = p->has_path_mtu ? p->path_mtu : r->has_mtu ? r->mtu : 1280;
    size_t hdr = (family == AF_INET6 ? DOCTOR_IPV6_HDR : DOCTOR_IPV4_HDR) + DOCTOR_ICMP_HDR;

    return mtu > hdr ? (size_t)mtu - hdr : DOCTOR_STAMP_LEN;
}

/* --rate for peer i: DOCTOR_RATE_WINDOW echoes of the path's size in
 * flight for DOCTOR_RATE_MS; the rate is what came back per second. */
static void rate_one(struct prober *pr, size_t i)
{
    struct target *t = &pr->t[i];
    size_t len = echo_len(pr->r, &pr->r->peers[i], t->family);
    uint64_t start = now_ns(), end = start + DOCTOR_RATE_MS * NS_PER_MS, now = start;
    uint64_t last_reply = start;

    pr->rate_bytes = 0;
    pr->rate_peer = (long)i;
    t->in_flight = 0;
    while (now < end) {
        unsigned before = pr->r->peers[i].probe.answers;

        /* A window lost whole (a drop burst) is sent anew after a pause. */
        if (t->in_flight && now - last_reply >= DOCTOR_RESEND_MS * NS_PER_MS / 4)
            t->in_flight = 0;
        while (t->in_flight < DOCTOR_RATE_WINDOW && send_echo(pr, i, len, now) == 0)
            ;
        wait_replies(pr, (int)((end - now) / NS_PER_MS) + 1);
        now = now_ns();
        if (pr->r->peers[i].probe.answers != before)
            last_reply = now;
    }
    pr->r->peers[i].probe.has_rate = true;
    pr->r->peers[i].probe.rate = pr->rate_bytes * MS_PER_S / DOCTOR_RATE_MS;
}

static int target_set(struct target *t, const char *address)
{
    memset(t, 0, sizeof(*t));
    if (inet_pton(AF_INET, address, &t->sa.v4.sin_addr) == 1) {
        t->family = AF_INET;
        t->sa.v4.sin_family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, address, &t->sa.v6.sin6_addr) == 1) {
        t->family = AF_INET6;
        t->sa.v6.sin6_family = AF_INET6;
        return 0;
    }
    return -EINVAL;
}

/* A raw ICMP socket bound to the interface: echoes go out through it, and
 * only replies that came in through it -- opened by the daemon, from a
 * session -- are read, never one sent to the underlay by someone else. */
static int open_raw(int family, int proto, const char *ifname)
{
    int fd = socket(family, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, proto);

    if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, ifname,
                              (socklen_t)strlen(ifname) + 1) != 0) {
        int err = errno;

        close(fd);
        errno = err;
        return -1;
    }
    return fd;
}

/* Looks for every peer through ifname and, with r->rate, measures each
 * reached one. */
static int probe_on(struct doctor_report *r, const char *ifname)
{
    struct prober pr = { .fd4 = -1, .fd6 = -1, .r = r, .rate_peer = -1 };
    int ret = 0;

    pr.id = (uint16_t)(getpid() ^ (now_ns() >> 10));
    pr.t = calloc(r->n_peers ? r->n_peers : 1, sizeof(*pr.t));
    if (!pr.t)
        return -ENOMEM;
    for (size_t i = 0; i < r->n_peers; i++)
        (void)target_set(&pr.t[i], r->peers[i].address);   /* family 0: not probed */
    pr.fd4 = open_raw(AF_INET, IPPROTO_ICMP, ifname);
    pr.fd6 = open_raw(AF_INET6, IPPROTO_ICMPV6, ifname);
    if (pr.fd4 < 0 && pr.fd6 < 0) {
        ret = -errno;
        goto out;
    }
    look(&pr);
    for (size_t i = 0; r->rate && i < r->n_peers; i++)
        if (r->peers[i].probe.reached)
            rate_one(&pr, i);
out:
    if (pr.fd4 >= 0)
        close(pr.fd4);
    if (pr.fd6 >= 0)
        close(pr.fd6);
    free(pr.t);
    return ret;
}

/* --- the verb ---------------------------------------------------------------------------- */

#define DOCTOR_ALLOWED (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR | CLI_OPT_JSON | CLI_OPT_MASTER | \
                        CLI_OPT_RATE)
#define DOCTOR_USAGE   "[-i IFNAME] [--run-dir DIR] [--json] [--rate] [--master NAME]"
#define SOCK_PATH_MAX  sizeof(((struct sockaddr_un *)0)->sun_path)

/* --- the routes: the kernel's side (issue 60) ----------------------------------------- */

/* net.FAMILY.conf.LINK.forwarding: 1, 0, or -1 when it cannot be read. */
static int forwarding_of(int family, const char *link)
{
    char path[96], c = 0;
    int fd, n;

    snprintf(path, sizeof(path), "/proc/sys/net/%s/conf/%s/forwarding",
             family == AF_INET6 ? "ipv6" : "ipv4", link);
    if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
        return -1;
    n = (int)read(fd, &c, 1);
    close(fd);
    return n == 1 ? c == '1' : -1;
}

/* Whether `nft list table inet ddpnet-IFNAME` finds the daemon's table. */
static bool nft_table_exists(const char *ifname)
{
    char table[IFNAMSIZ + 8];
    int status = 0;
    pid_t pid;

    snprintf(table, sizeof(table), "ddpnet-%s", ifname);
    pid = fork();
    if (pid < 0)
        return false;
    if (pid == 0) {
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null >= 0) {
            dup2(null, STDOUT_FILENO);
            dup2(null, STDERR_FILENO);
        }
        execlp("nft", "nft", "list", "table", "inet", table, (char *)NULL);
        _exit(127);
    }
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Ours: forwarding on for the interface and for the link the kernel sends
 * the prefix out of, and the nft table when masquerading. */
static void check_carried(const struct doctor_report *r, struct nl *nl, int ifindex,
                          const struct cluster_route *cr, struct doctor_route *t)
{
    const char *fam = cr->net.family == AF_INET6 ? "ipv6" : "ipv4";
    char link[IF_NAMESIZE] = "";
    int oif = 0;

    if (forwarding_of(cr->net.family, r->interface) != 1) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "forwarding is off for %s (net.%s.conf.%s.forwarding "
                 "is not 1): what peers send to the prefix goes nowhere", r->interface, fam,
                 r->interface);
        return;
    }
    if (nl_route_oif(nl, cr->net.family, cr->net.bytes, &oif) < 0 || oif == ifindex ||
        !if_indextoname((unsigned)oif, link)) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "this node has no route to %s outside %s",
                 t->prefix, r->interface);
        return;
    }
    if (forwarding_of(cr->net.family, link) != 1) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "forwarding is off for its outgoing link %s "
                 "(net.%s.conf.%s.forwarding is not 1)", link, fam, link);
        return;
    }
    if (r->masquerade && !nft_table_exists(r->interface)) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "forwarding on (%s, %s), but the nft table inet "
                 "ddpnet-%s that masquerades it is missing (or nft cannot be run: as root?)",
                 r->interface, link, r->interface);
        return;
    }
    snprintf(t->note, sizeof(t->note), "forwarding on (%s, %s)%s%s", r->interface, link,
             r->masquerade ? ", masqueraded by nft table inet ddpnet-" : "",
             r->masquerade ? r->interface : "");
}

/* A peer's: the kernel sends the prefix into the interface. */
static void check_routed(const struct doctor_report *r, struct nl *nl, int ifindex,
                         const struct cluster_route *cr, struct doctor_route *t)
{
    char link[IF_NAMESIZE] = "";
    int oif = 0;

    if (nl_route_oif(nl, cr->net.family, cr->net.bytes, &oif) < 0) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "the kernel has no route to it (want one via %s)",
                 r->interface);
    } else if (oif != ifindex) {
        t->fault = true;
        snprintf(t->note, sizeof(t->note), "the kernel routes it via %s, not %s",
                 if_indextoname((unsigned)oif, link) ? link : "another link", r->interface);
    } else {
        snprintf(t->note, sizeof(t->note), "kernel route via %s", r->interface);
    }
}

/* Checks each route of the report on this host; routes stay unchecked
 * where rtnetlink cannot be asked. */
static void check_routes(struct doctor_report *r)
{
    struct nl nl;
    int ifindex;

    if (!r->n_routes || nl_open(&nl) < 0)
        return;
    ifindex = nl_link_index(&nl, r->interface);
    for (size_t i = 0; ifindex > 0 && i < r->n_routes; i++) {
        struct doctor_route *t = &r->routes[i];
        struct cluster_route cr;
        uint8_t n = 0;
        const char *why = NULL;
        char bad[CLUSTER_ROUTE_TEXT_MAX + 1];

        if (cluster_routes_parse(t->prefix, &cr, &n, &why, bad, sizeof(bad)) < 0 || n != 1)
            continue;
        t->checked = true;
        if (t->carrier)
            check_routed(r, &nl, ifindex, &cr, t);
        else
            check_carried(r, &nl, ifindex, &cr, t);
    }
    nl_close(&nl);
}

static int ask(const char *path, const struct cli_args *a, char **response)
{
    char why[CLI_PROTOCOL_LINE_MAX];
    unsigned theirs = 0;
    int ret = control_request_ddpnet(path, CONTROL_GET_DDPNET "\n", -1, response, &theirs);

    if (ret == -EPROTONOSUPPORT && control_protocol_message(why, sizeof(why), theirs, a->ifname))
        fprintf(stderr, "ddpnet doctor: %s\n", why);
    else if (ret == -ENOENT || ret == -ECONNREFUSED)
        fprintf(stderr, "ddpnet doctor: %s is not up (no control socket at %s)\n",
                a->ifname, path);
    else if (ret == -EACCES || ret == -EPERM || (ret == -ECONNRESET && geteuid() != 0))
        fprintf(stderr, "ddpnet doctor: permission denied: run as root\n");
    else if (ret < 0)
        fprintf(stderr, "ddpnet doctor: no answer from the daemon at %s: %s\n", path,
                strerror(-ret));
    return ret;
}

static int parse_or_say(const char *response, struct doctor_report *r)
{
    int ret = doctor_parse(response, r);

    if (ret == -EPROTO)
        fprintf(stderr, "ddpnet doctor: the daemon's answer is not understood "
                        "(is it another version of ddpnet?)\n");
    else if (ret < 0)
        fprintf(stderr, "ddpnet doctor: the daemon answered: %s\n", strerror(-ret));
    return ret;
}

/* `ddpnet env`'s lines, as it prints them, or NULL (said on stderr). */
static char *env_text(const char *response, const char *master)
{
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    int ret;

    if (!mem)
        return NULL;
    ret = status_format_env(response, master, mem);
    if (fclose(mem) != 0 || ret < 0) {
        if (ret == -ENOENT && master)
            fprintf(stderr, "ddpnet doctor: no node named '%s' in the cluster\n", master);
        free(text);
        return NULL;
    }
    return text;
}

void doctor_take_later(struct doctor_report *r, const struct doctor_report *after)
{
    /* The drops are running totals: the later answer's include the probe's. */
    r->dropped_socket = after->dropped_socket;
    r->dropped_tun = after->dropped_tun;
    r->dropped_queue = after->dropped_queue;
    r->ecn_marked = after->ecn_marked;
    /* An address clash is told by a member as the echoes make the
     * session (issue 59: the launch script moves on when doctor says it). */
    r->clash_holder = after->clash_holder;
    r->clash_key = after->clash_key;
    r->clash_derived = after->clash_derived;
    for (size_t i = 0; i < r->n_peers; i++) {
        struct doctor_peer *p = &r->peers[i];
        const struct doctor_peer *q = NULL;

        for (size_t j = 0; j < after->n_peers && !q; j++)
            if (!strcmp(after->peers[j].name, p->name))
                q = &after->peers[j];
        if (!q)
            continue;
        p->endpoint = q->endpoint;
        p->path = q->path;
        p->via = q->via;
        p->handshake_sec = q->handshake_sec;
        p->path_mtu = q->path_mtu;
        p->has_path_mtu = q->has_path_mtu;
    }
}

static int run(const struct cli_args *a, const char *path, struct doctor_report *r,
               struct doctor_report *after)
{
    char *response = NULL;
    int ret;

    if (ask(path, a, &response) < 0)
        return CLI_EXIT_FAIL;
    ret = parse_or_say(response, r);
    if (ret == 0)
        r->env = env_text(response, a->master);
    free(response);
    if (ret < 0)
        return CLI_EXIT_FAIL;
    r->rate = a->rate;
    r->rate_ms = DOCTOR_RATE_MS;
    ret = probe_on(r, r->interface);
    if (ret < 0) {
        fprintf(stderr, "ddpnet doctor: cannot send ICMP echoes: %s (run as root)\n",
                strerror(-ret));
        return CLI_EXIT_FAIL;
    }
    response = NULL;
    if (ask(path, a, &response) < 0)
        return CLI_EXIT_FAIL;
    ret = parse_or_say(response, after);
    free(response);
    if (ret < 0)
        return CLI_EXIT_FAIL;
    doctor_take_later(r, after);
    check_routes(r);
    if (a->json)
        doctor_format_json(r, stdout);
    else
        doctor_format_table(r, stdout, (uint64_t)time(NULL));
    if (fflush(stdout) != 0 || ferror(stdout))
        return CLI_EXIT_FAIL;
    return !doctor_ok(r) || doctor_cert_ended(r, (uint64_t)time(NULL)) || !r->env
           ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_doctor(int argc, char **argv)
{
    struct cli_args a;
    struct doctor_report r, after;
    char path[SOCK_PATH_MAX];
    int ret = cli_args_handle(argc, argv, DOCTOR_ALLOWED, 0, DOCTOR_USAGE, &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (daemon_socket_path(path, sizeof(path), a.run_dir, a.ifname) < 0) {
        fprintf(stderr, "ddpnet doctor: run directory '%s' is too long for a socket path\n",
                a.run_dir);
        return CLI_EXIT_FAIL;
    }
    memset(&r, 0, sizeof(r));
    memset(&after, 0, sizeof(after));
    ret = run(&a, path, &r, &after);
    /* The report's strings point into r's text, the paths into after's. */
    doctor_report_free(&r);
    doctor_report_free(&after);
    return ret;
}
