/* SPDX-License-Identifier: MIT */
/* The exposition (metrics.h): each family's HELP and TYPE, then its
 * samples, every peer's together, as the text format wants them grouped.
 * Written into a memory stream: a scrape is a few hundred bytes per peer
 * and happens off the data path. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "config/routes.h"
#include "overlay/base/version.h"
#include "overlay/control/control_int.h"
#include "overlay/control/metrics.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/hosts_writer.h"
#include "overlay/membership/state.h"
#include "overlay/engine/model/device.h"
#include "overlay/loop/loop.h"
#include "overlay/registry/registry.h"

#define NS_PER_SEC_F 1e9

/* A label value with the three characters the format escapes. */
static void put_label_value(FILE *f, const char *s)
{
    for (; *s; s++) {
        if (*s == '\\')
            fputs("\\\\", f);
        else if (*s == '"')
            fputs("\\\"", f);
        else if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

static void put_label(FILE *f, const char *name, const char *value, bool first)
{
    fprintf(f, "%s%s=\"", first ? "" : ",", name);
    put_label_value(f, value);
    fputc('"', f);
}

static void family(FILE *f, const char *name, const char *type, const char *help)
{
    fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* {interface=...,public_key=...,allowed_ips=...,friendly_name=...} without
 * the closing brace, for a caller that adds labels of its own. */
static void peer_labels_open(FILE *f, const struct device *dev, const struct peer *p)
{
    char key[sodium_base64_ENCODED_LEN(WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL)];
    char addr[CLUSTER_HOST_MAX + 3], allowed[CLUSTER_HOST_MAX + 8];

    sodium_bin2base64(key, sizeof(key), p->public_key, WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
    if (cluster_addr_format(&p->member.address, addr, sizeof(addr)) < 0)
        addr[0] = '\0';
    snprintf(allowed, sizeof(allowed), "%s/%u", addr,
             p->member.address.family == AF_INET6 ? 128 : 32);
    fputc('{', f);
    put_label(f, "interface", dev->ifname, true);
    put_label(f, "public_key", key, false);
    put_label(f, "allowed_ips", allowed, false);
    put_label(f, "friendly_name", p->member.name, false);
}

static void peer_sample(FILE *f, const struct device *dev, const struct peer *p,
                        const char *name, double value)
{
    fputs(name, f);
    peer_labels_open(f, dev, p);
    fprintf(f, "} %.17g\n", value);
}

/* One per-peer family: value(p) for every peer; has(p) false skips one
 * (a round trip never measured is absent, not 0). */
struct peer_family {
    const char *name, *type, *help;
    double (*value)(const struct peer *p);
    bool (*has)(const struct peer *p);
};

static double sent_bytes(const struct peer *p) { return (double)p->live.tx_bytes; }
static double received_bytes(const struct peer *p) { return (double)p->live.rx_bytes; }
static double handshakes_sent(const struct peer *p) { return (double)p->wg.handshakes_sent; }
static double handshakes_done(const struct peer *p) { return (double)p->wg.handshakes_completed; }
static double rtt(const struct peer *p) { return (double)p->disco.state.rtt_ns / NS_PER_SEC_F; }
static bool has_rtt(const struct peer *p) { return p->disco.state.rtt_ns != 0; }
static double mtu(const struct peer *p) { return path_mtu(p); }
static bool has_mtu(const struct peer *p) { return path_usable(p); }
static double reachable(const struct peer *p) { return p->live.reachable && !p->wg.no_answer; }

static double latest_handshake(const struct peer *p)
{
    return (double)p->wg.last_handshake.tv_sec +
           (double)p->wg.last_handshake.tv_nsec / NS_PER_SEC_F;
}

static const struct peer_family peer_families[] = {
    { "wireguard_sent_bytes_total", "counter",
      "Bytes sent to the peer (UDP payload, as WireGuard counts them).", sent_bytes, NULL },
    { "wireguard_received_bytes_total", "counter",
      "Bytes received from the peer (UDP payload, as WireGuard counts them).",
      received_bytes, NULL },
    { "wireguard_latest_handshake_seconds", "gauge",
      "Unix time of the latest completed handshake with the peer (0: none yet).",
      latest_handshake, NULL },
    { "ddpnet_peer_reachable", "gauge",
      "1 while a session with the peer stands, 0 while it does not answer.", reachable, NULL },
    { "ddpnet_peer_rtt_seconds", "gauge",
      "The latest round trip to the peer, measured by discovery pings.", rtt, has_rtt },
    { "ddpnet_peer_path_mtu_bytes", "gauge",
      "The largest inner packet the path to the peer carries.", mtu, has_mtu },
    { "ddpnet_peer_handshakes_sent_total", "counter",
      "Handshake initiations sent to the peer, retries included.", handshakes_sent, NULL },
    { "ddpnet_peer_handshakes_completed_total", "counter",
      "Sessions made with the peer, as initiator or responder.", handshakes_done, NULL },
};

static void put_peer_family(FILE *f, const struct device *dev, const struct peer_family *pf)
{
    family(f, pf->name, pf->type, pf->help);
    for (size_t i = 0; i < dev->n_peers; i++)
        if (!pf->has || pf->has(dev->peers[i]))
            peer_sample(f, dev, dev->peers[i], pf->name, pf->value(dev->peers[i]));
}

/* 1 with the path as labels: path="direct", "relay" (via="NAME"),
 * "waiting" (no handshake completed yet), "unreachable", "pending" (a
 * registry record its key has not stated: nothing is routed to it) or
 * "none" (no endpoint known yet). */
static void put_paths(FILE *f, const struct device *dev)
{
    family(f, "ddpnet_peer_path", "gauge",
           "The path to the peer: direct, relay (via names the relay), waiting (no handshake "
           "completed yet), unreachable, pending (a registry record its key has not "
           "stated) or none.");
    for (size_t i = 0; i < dev->n_peers; i++) {
        const struct peer *p = dev->peers[i];
        const char *path = control_path_name(p);
        bool relay = path && !strcmp(path, CONTROL_PATH_RELAY);

        fputs("ddpnet_peer_path", f);
        peer_labels_open(f, dev, p);
        put_label(f, "path", path ? path : "none", false);
        put_label(f, "via", relay ? p->path.via->member.name : "", false);
        fputs("} 1\n", f);
    }
}

static void device_sample(FILE *f, const struct device *dev, const char *name,
                          const char *label, const char *label_value, uint64_t value)
{
    fputs(name, f);
    fputc('{', f);
    put_label(f, "interface", dev->ifname, true);
    if (label)
        put_label(f, label, label_value, false);
    fprintf(f, "} %llu\n", (unsigned long long)value);
}

static void put_drops(FILE *f, const struct device *dev)
{
    const struct device_stats *st = &dev->stats;
    const struct stage_stats *sg = &dev->stage.stats;
    const struct { const char *reason; uint64_t n; } drops[] = {
        { "replay", st->dropped_replay },
        { "bad_source", st->dropped_source },
        { "no_session", sg->dropped_peer_full + sg->dropped_store_full + sg->dropped_too_big },
        { "rate_limited", st->dropped_ratelimited },
        { "pool_full", st->dropped_no_buffer },
        { "bad_packet", st->dropped_bad_packet },
        { "unknown_peer", st->dropped_unknown_peer },
        { "unreachable", st->refused_unreachable },
        { "too_big", st->refused_too_big },
        { "unsendable", st->dropped_unsendable },
        { "relay_refused", st->relay_refused },
        { "hint_refused", st->hint_refused },
        { CONTROL_DROP_SOCKET, st->dropped_socket_overflow },
        { CONTROL_DROP_TUN, st->dropped_tun_queue },
        { CONTROL_DROP_QUEUE, st->dropped_queue_delay },
        { CONTROL_DROP_RULE, st->dropped_rule + st->refused_rule },
    };

    family(f, "ddpnet_packets_dropped_total", "counter",
           "Packets dropped or refused, by reason: replay, bad_source (inner source not the "
           "peer's), no_session (waiting for a handshake, no room left), rate_limited "
           "(handshakes over their source's rate), pool_full (no free buffer), bad_packet, "
           "unknown_peer, unreachable and too_big (ICMP sent back), unsendable (for a peer "
           "but not cut or sealed), relay_refused, "
           "hint_refused (a member's hint over its credit), socket_overflow (datagrams the "
           "kernel dropped at the UDP sockets, their buffer full: raise socket-buffer), "
           "tun_queue (packets the kernel dropped at the interface's transmit queue), "
           "queue_delay (data dropped to slow its sender: datagrams waited too long at the "
           "UDP sockets), rule (refused by the cluster file's [rules]: received, or sent and "
           "answered with ICMP administratively prohibited).");
    for (size_t i = 0; i < sizeof(drops) / sizeof(drops[0]); i++)
        device_sample(f, dev, "ddpnet_packets_dropped_total", "reason", drops[i].reason,
                      drops[i].n);
}

static void put_disco(FILE *f, const struct device *dev)
{
    static const char *const type[DISCO_TYPE_COUNT] = {
        [DISCO_ENDPOINTS] = "endpoints", [DISCO_PUNCH] = "punch", [DISCO_PING] = "ping",
        [DISCO_PONG] = "pong", [DISCO_RELAY] = "relay", [DISCO_RELAYED] = "relayed",
        [DISCO_NAMES] = "names", [DISCO_FEATURES] = "features", [DISCO_RECORD] = "record",
        [DISCO_CERT] = "cert", [DISCO_REVOKED] = "revoked",
    };

    /* One family per direction, a sample per named type. */
    const struct { const char *name, *help; const uint64_t *n; } dirs[] = {
        { "ddpnet_disco_sent_total",
          "Discovery messages sent to peers inside their sessions, by type.",
          dev->stats.disco_sent },
        { "ddpnet_disco_received_total", "Discovery messages received from peers, by type.",
          dev->stats.disco_received },
    };

    for (size_t d = 0; d < sizeof(dirs) / sizeof(dirs[0]); d++) {
        family(f, dirs[d].name, "counter", dirs[d].help);
        for (unsigned t = 0; t < DISCO_TYPE_COUNT; t++)
            if (type[t])
                device_sample(f, dev, dirs[d].name, "type", type[t], dirs[d].n[t]);
    }
}

/* Each member certificate the node holds (its own among them): the
 * seconds it has left, so that an alert fires long before an end
 * (docs/authority.md, "Renewal"). */
static void put_cert_remaining(FILE *f, const struct device *dev)
{
    const struct certs *s = dev->membership->certs;
    const uint64_t now = (uint64_t)time(NULL);

    family(f, "ddpnet_certificate_remaining_seconds", "gauge",
           "Seconds until each member certificate the node holds ends (this node's among "
           "them, name as a label): renewed, it grows again.");
    for (size_t i = 0; i < certs_count(s); i++) {
        const struct cert *c = certs_at(s, i);
        device_sample(f, dev, "ddpnet_certificate_remaining_seconds", "name", c->name,
                      cert_end(c) > now ? cert_end(c) - now : 0);
    }
}

/* With shards, the engine lock's cost to each (loop.h: loop_lock_stats),
 * its index as the label shard: held / busy is the share of a shard's
 * work done under the lock, wait / busy what queueing on it costs. One
 * loop takes no lock: then none of these. */
static void put_engine_lock(FILE *f, const struct device *dev)
{
    static const struct { const char *name, *help; } fams[] = {
        { "ddpnet_engine_lock_held_seconds_total",
          "Seconds each shard held the engine lock (shared state: peers, sessions, timers)." },
        { "ddpnet_engine_lock_wait_seconds_total",
          "Seconds each shard waited to take the engine lock, another holding it." },
        { "ddpnet_shard_busy_seconds_total",
          "Seconds each shard was not waiting on its ring: the lock's seconds lie within." },
        { "ddpnet_engine_lock_taken_total", "Times each shard took the engine lock." },
        { "ddpnet_engine_lock_contended_total",
          "Times each shard found the engine lock taken and waited." },
        { "ddpnet_engine_lock_jobs_total",
          "Crypto jobs each shard ran under the engine lock: its job ring full inside a "
          "handler, or drained for order or a membership change." },
    };
    struct loop_lock_stats st[LOOP_CREW_MAX];
    bool have[LOOP_CREW_MAX], any = false;

    for (unsigned k = 0; k < LOOP_CREW_MAX; k++)
        any |= have[k] = dev->loop && loop_lock_stats(dev->loop, k, &st[k]);
    if (!any)
        return;
    for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
        family(f, fams[i].name, "counter", fams[i].help);
        for (unsigned k = 0; k < LOOP_CREW_MAX; k++) {
            const uint64_t v[] = { st[k].held_ns, st[k].wait_ns, st[k].busy_ns, st[k].taken,
                                   st[k].contended, st[k].jobs_locked };
            if (!have[k])
                continue;
            fprintf(f, "%s{", fams[i].name);
            put_label(f, "interface", dev->ifname, true);
            fprintf(f, ",shard=\"%u\"} ", k);
            if (i < 3)
                fprintf(f, "%.9f\n", (double)v[i] / NS_PER_SEC_F);
            else
                fprintf(f, "%llu\n", (unsigned long long)v[i]);
        }
    }
}

/* Packets through each granted route (model/routes.h): sent into it and
 * received from it by a node that routes to it; 0 on its carrier. */
static void put_routes(FILE *f, const struct device *dev)
{
    const struct route_table *t = device_routes(dev);
    char text[CLUSTER_ROUTE_TEXT_MAX];

    if (!t || !t->n)
        return;
    family(f, "ddpnet_route_packets_total", "counter",
           "Packets this node sent into or took from each route another node carries "
           "(route and carrier as labels).");
    for (size_t i = 0; i < t->n; i++) {
        const struct route_entry *e = &t->e[i];
        if (cluster_route_format(&e->route, text, sizeof(text)))
            continue;
        fputs("ddpnet_route_packets_total{", f);
        put_label(f, "interface", dev->ifname, true);
        put_label(f, "route", text, false);
        put_label(f, "carrier", e->via ? e->via->member.name : dev->self ? dev->self->name : "",
                  false);
        fprintf(f, "} %llu\n", (unsigned long long)e->packets);
    }
}

static void put_device(FILE *f, const struct device *dev)
{
    const struct pkt_pool *pool = dev->loop ? &dev->loop->pool : NULL;

    family(f, "ddpnet_info", "gauge", "This node: 1, with its name as a label.");
    fputs("ddpnet_info{", f);
    put_label(f, "interface", dev->ifname, true);
    put_label(f, "node", dev->self ? dev->self->name : "", false);
    fputs("} 1\n", f);
    family(f, "ddpnet_build_info", "gauge",
           "1, with the running daemon's version and control protocol as labels.");
    fputs("ddpnet_build_info{", f);
    put_label(f, "version", ddpnet_version, true);
    fprintf(f, ",control_protocol=\"%u\"} 1\n", DDPNET_CONTROL_PROTOCOL);
    family(f, "ddpnet_peers", "gauge", "Peers in the cluster, this node not counted.");
    device_sample(f, dev, "ddpnet_peers", NULL, NULL, dev->n_peers);
    if (pool) {
        family(f, "ddpnet_buffers_in_use", "gauge", "Packet buffers of the pool in use.");
        device_sample(f, dev, "ddpnet_buffers_in_use", NULL, NULL, pool->n - pool->n_free);
        family(f, "ddpnet_buffers", "gauge", "Packet buffers in the pool.");
        device_sample(f, dev, "ddpnet_buffers", NULL, NULL, pool->n);
    }
    family(f, "ddpnet_relay_forwarded_total", "counter",
           "Messages this node forwarded as a relay for other peers.");
    device_sample(f, dev, "ddpnet_relay_forwarded_total", NULL, NULL, dev->stats.relay_forwarded);
    family(f, "ddpnet_relay_frames_total", "counter",
           "Relay frames sealed (sent: to a relay, or forwarded as one) and opened (received).");
    device_sample(f, dev, "ddpnet_relay_frames_total", "direction", "sent",
                  dev->stats.relay_frames_sent);
    device_sample(f, dev, "ddpnet_relay_frames_total", "direction", "received",
                  dev->stats.relay_frames_received);
    family(f, "ddpnet_relay_data_frames_total", "counter",
           "Of those, data frames: transport messages whose ciphertext the hop does not "
           "authenticate again.");
    device_sample(f, dev, "ddpnet_relay_data_frames_total", "direction", "sent",
                  dev->stats.relay_data_frames_sent);
    device_sample(f, dev, "ddpnet_relay_data_frames_total", "direction", "received",
                  dev->stats.relay_data_frames_received);
    family(f, "ddpnet_ecn_marked_total", "counter",
           "Packets marked Congestion Experienced instead of dropped, their transport "
           "ECN-capable, to slow their sender: datagrams waited too long at the UDP sockets.");
    device_sample(f, dev, "ddpnet_ecn_marked_total", NULL, NULL, dev->stats.ecn_marked);
    put_disco(f, dev);
    put_engine_lock(f, dev);
    if (dev->membership->registry) {
        struct registry_status rs;
        registry_status(dev->membership->registry, &rs);
        family(f, "ddpnet_registry_up", "gauge",
               "1 while the registry (etcd) is followed, 0 while it is out of reach.");
        device_sample(f, dev, "ddpnet_registry_up", NULL, NULL, rs.state == REGISTRY_SYNCED);
        family(f, "ddpnet_registry_revision", "gauge",
               "The etcd revision of the membership this node applied.");
        device_sample(f, dev, "ddpnet_registry_revision", NULL, NULL,
                      (uint64_t)dev->membership->registry_revision);
    }
    if (dev->membership->hosts_writer) {
        family(f, "ddpnet_hosts_writes_total", "counter",
               "Rewrites of the hosts file's names block: one a second at most, however "
               "many members change.");
        device_sample(f, dev, "ddpnet_hosts_writes_total", NULL, NULL,
                      hosts_writer_writes(dev->membership->hosts_writer));
    }
    if (dev->membership->certs) {
        struct certs_stats cs;
        certs_stats(dev->membership->certs, &cs);
        family(f, "ddpnet_revocations", "gauge",
               "Revocations held: the authority's, and the cluster file's revoked keys.");
        device_sample(f, dev, "ddpnet_revocations", NULL, NULL, cs.revoked);
        family(f, "ddpnet_revocations_refused_total", "counter",
               "Revocations refused, the store holding its most of what it does not hold "
               "(one of a held member is never refused): the node would take what they name.");
        device_sample(f, dev, "ddpnet_revocations_refused_total", NULL, NULL, cs.revoked_full);
        put_cert_remaining(f, dev);
    }
    family(f, "ddpnet_cluster_file_applied_timestamp_seconds", "gauge",
           "Unix time the running cluster file was applied (up or reload).");
    device_sample(f, dev, "ddpnet_cluster_file_applied_timestamp_seconds", NULL, NULL,
                  dev->membership->cluster_applied_unix);
}

int metrics_format(const struct device *dev, char **out, size_t *len)
{
    char *buf = NULL;
    size_t size = 0;
    FILE *f;

    if (!dev || !out || !len)
        return -EINVAL;
    f = open_memstream(&buf, &size);
    if (!f)
        return -ENOMEM;
    for (size_t i = 0; i < sizeof(peer_families) / sizeof(peer_families[0]); i++)
        put_peer_family(f, dev, &peer_families[i]);
    put_paths(f, dev);
    put_drops(f, dev);
    put_routes(f, dev);
    put_device(f, dev);
    if (ferror(f) | fclose(f)) {
        free(buf);
        return -ENOMEM;
    }
    *out = buf;
    *len = size;
    return 0;
}
