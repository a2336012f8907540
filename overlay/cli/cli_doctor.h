/* SPDX-License-Identifier: MIT */
/* `ddpnet doctor`: before a long job, is every peer reached, by which
 * path, with what MTU and round trip, and what does `env` give the job.
 * What it owns: the report (the daemon's get=ddpnet answer, parsed, plus
 * what the probe measured) and its two forms, a table and JSON. The
 * probe itself (ICMP echoes to each peer's overlay address, through ddp0
 * and so through the daemon's sessions) lives in cli_doctor.c beside the
 * verb; these functions are pure, so the unit tests reach them. */
#ifndef DDPNET_CLI_DOCTOR_H
#define DDPNET_CLI_DOCTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* What a peer's probe found. rtt_us: the smallest echo round trip (the
 * first echo of a peer without a session includes its handshake, later
 * ones do not); rate: bytes per second echoed back during --rate. */
struct doctor_probe {
    bool reached;              /* an echo came back */
    unsigned answers;          /* echoes answered */
    uint64_t rtt_us;           /* valid when answers > 0 */
    bool has_rate;
    uint64_t rate;
};

/* One peer as the daemon describes it (strings point into the report's
 * copy of the answer; NULL where the daemon said nothing), and its probe. */
struct doctor_peer {
    const char *name, *address, *endpoint, *path, *via;
    uint64_t handshake_sec, path_mtu, daemon_rtt_us;
    bool has_path_mtu, has_daemon_rtt;
    struct doctor_probe probe;
};

/* Issue 60: a prefix this node carries (carrier NULL) or routes over the
 * interface to a peer that does, and what the route check found of the
 * kernel's side (cli_doctor.c): on the carrier, forwarding on for the
 * interface and for the prefix's outgoing link, and the nft table when
 * it masquerades; elsewhere, the kernel's route to it through the
 * interface. note: what was seen, or what is wrong when fault. */
struct doctor_route {
    const char *prefix, *carrier;
    size_t peer;               /* while parsing: 0 ours, else peer index + 1 */
    bool checked, fault;
    char note[192];
};

struct doctor_report {
    char *text;                /* the daemon's answer, cut into the strings */
    const char *interface, *self, *address, *master_address;
    uint64_t mtu;
    bool has_mtu;
    /* Dropped by the kernel before the daemon saw them (control_int.h):
     * datagrams at the UDP sockets, packets at the interface's transmit
     * queue; the receive buffer each socket got (bytes). */
    uint64_t dropped_socket, dropped_tun, socket_buffer, dropped_queue, ecn_marked;
    uint64_t rules, dropped_rule, refused_rule, rule_table_full;   /* issue 61 */
    bool has_socket_buffer;
    /* With an authority: the member that holds this node's address (a
     * clash it lost; NULL: none), its key, whether ours is derived. */
    const char *clash_holder, *clash_key;
    uint64_t clash_derived;
    /* With an authority: when this node's certificate ends (unix s). */
    bool has_cert;
    uint64_t cert_expires;
    size_t n_peers, cap_peers;
    struct doctor_peer *peers;
    size_t n_routes, cap_routes;
    struct doctor_route *routes;
    bool masquerade;           /* this node masquerades its routes */
    bool rate;                 /* --rate was asked for */
    uint64_t rate_ms;          /* how long each peer's rate probe ran */
    char *env;                 /* `ddpnet env`'s lines, or NULL when it failed */
};

/* Parses a get=ddpnet answer into r (probes zeroed). 0, -EPROTO for text
 * that is not one, the answer's own negative errno, or -ENOMEM. */
int doctor_parse(const char *response, struct doctor_report *r);
void doctor_report_free(struct doctor_report *r);

/* What r takes of after, the second answer (after the echoes made the
 * sessions): the drops so far, each peer's path, and the address clash,
 * which a member tells as the echoes make its session (issue 59).
 * after's strings are pointed to: free both together. */
void doctor_take_later(struct doctor_report *r, const struct doctor_report *after);

/* The peers not reached. */
size_t doctor_unreached(const struct doctor_report *r);
/* The routes whose check found a fault. */
size_t doctor_route_faults(const struct doctor_report *r);
/* Whether the node is ready: every peer reached, no address clash, and
 * no route's check found a fault. */
bool doctor_ok(const struct doctor_report *r);
/* Whether this node's certificate ended by now_unix (issue 56): the
 * members dropped it, whatever else the report says. */
bool doctor_cert_ended(const struct doctor_report *r, uint64_t now_unix);

/* The table: a line naming the node, one row per peer (NAME, ADDRESS,
 * REACHED, PATH, MTU, RTT, HANDSHAKE, and RATE with --rate), a verdict
 * line naming the peers not reached (or this node's certificate ended,
 * the cause), an error for an address clash this node lost, and for this
 * node's certificate ended or a warning for one ending within a day,
 * each with what to do about it, a warning for each kind of packet
 * the kernel dropped, with what to do about it, a line per route (ok
 * or error, with what was seen), then the environment a
 * job gets.
 * Handshake ages are relative to now_unix. */
void doctor_format_table(const struct doctor_report *r, FILE *out, uint64_t now_unix);
/* The same as one JSON object and a newline: {"interface", "self",
 * "address", "ok", "unreached": [names], "address_clash": null or
 * {"holder", "key", "derived"}, "peers": [{"name", "address",
 * "reached", "path", "via", "endpoint", "path_mtu", "rtt_ms",
 * "latest_handshake", "rate_bps"}], "drops": {"socket_overflow",
 * "tun_queue", "socket_buffer"}, "routes": [{"prefix", "carrier" (null:
 * this node), "checked", "ok", "note"}], "env": {NAME: value}}. */
void doctor_format_json(const struct doctor_report *r, FILE *out);

#endif
