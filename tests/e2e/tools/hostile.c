/* SPDX-License-Identifier: MIT */
/* hostile: a cluster member whose key was stolen (tests/e2e/hostile_member.sh).
 * It speaks WireGuard and ddpnet's disco with the project's own pure
 * modules (crypto/noise.h, crypto/transport.h, crypto/cookie.h,
 * overlay/disco/disco_msg.h) and lies in them: about other members'
 * addresses, to make its victims send to third parties, or about whom it
 * reaches, to be chosen as their relay.
 *
 *   hostile MODE SECONDS KEYFILE SELF-ADDR BIND [OPTION...] VICTIM...
 *
 *   MODE       what it says besides the handshakes and pongs, every
 *              --interval to each victim it has a session with:
 *     quiet             nothing (an honest but silent member)
 *     punch             a PUNCH about each member of --about, with up to
 *                       16 --sink candidates
 *     endpoints         an ENDPOINTS whose peer records, one per member of
 *                       --about, carry --sink candidates: an observed one
 *                       (a different sink each round, so that up to 8
 *                       accumulate) and 8 local ones; no DIRECT flag
 *     endpoints-direct  the same with DISCO_PEER_F_DIRECT set
 *     self              an ENDPOINTS with no records whose own local
 *                       candidates are 8 --sink addresses (the next 8 of
 *                       the list every 10 s, so that the victims introduce
 *                       the "new" addresses to the members they reach)
 *     hijack            to each victim, that it reaches every other victim
 *                       (and every --about member) directly: an ENDPOINTS
 *                       record with DISCO_PEER_F_DIRECT and a PUNCH, both
 *                       naming that member's real endpoint when it is a
 *                       victim (no candidates otherwise: no PUNCH then)
 *     impersonate       to each victim, a UDP datagram (inner IPv4) whose
 *                       source is --as ADDR (another member's overlay
 *                       address) to the victim's overlay address, port
 *                       --port; and, to show what an honest datagram
 *                       does, one from its own address to --port + 1
 *     spoof-endpoints   an ENDPOINTS with no records whose one local
 *                       candidate is its bind address at another port each
 *                       round (new addresses: the victim introduces it to
 *                       the others), sent from --spoof
 *     spoof-ping        a PING with the probe flag (as if it had found a
 *                       direct path there), sent from --spoof
 *     cert              each --statement as a CERT (what a member passes on
 *                       of the authority's statements: it may repeat any,
 *                       valid or not; tests/e2e/authority.sh)
 *              In every mode a RELAY it is asked to forward is dropped.
 *   SECONDS    how long it runs; then (or on SIGINT/SIGTERM) it prints
 *              its lines and exits
 *   KEYFILE    the member's private key, as `ddpnet genkey` writes it
 *   SELF-ADDR  the member's overlay address (its inner packets' source)
 *   BIND       IP:PORT (or [IPv6]:PORT) its UDP socket is bound to
 *   VICTIM     NAME,PUBKEY,OVERLAY-ADDR,IP:PORT: a member to handshake
 *              with and lie to. Handshakes from anyone else are ignored.
 *
 *   --sink IP:PORT    a third-party address named as a candidate
 *                     (repeatable, up to 64)
 *   --about PUBKEY    a member the lies are about (repeatable, up to 16)
 *   --about-victims   each victim also hears lies about every other victim
 *   --interval MS     between two rounds of lies (default 500)
 *   --as ADDR         impersonate: the overlay address it claims (IPv4)
 *   --port PORT       impersonate: the victims' UDP port (default 40100)
 *   --spoof IP:PORT   the UDP source of the spoof-* modes' lies (IPv4; a
 *                     raw socket: CAP_NET_RAW), someone else's address;
 *                     everything else goes from BIND
 *   --statement FILE  cert: a statement's text (one line; repeatable, up
 *                     to 8)
 *
 * With each victim it does a WireGuard handshake as initiator (again
 * every second until it is answered, and again when the victim has been
 * silent for 20 s: it may have restarted), and answers an initiation
 * from a victim as responder, sealing nothing on that session until the
 * victim sent on it (WireGuard's rule: what came before the victim took
 * the response would be dropped, and counted as sent here). It answers every disco PING with a PONG
 * (so that it looks alive to its victims) and sends a keepalive when it
 * has sent a victim nothing for 10 s.
 *
 * It counts every UDP payload byte it sends (handshakes, keepalives,
 * pongs and lies) and prints, at the end, one line a script can parse:
 *   hostile: mode=M seconds=S victims=N sessions=N sent_bytes=B
 *            sent_packets=P handshake_bytes=H lie_bytes=L lies=N
 *            pongs=N relays_dropped=N initiations_answered=N
 * then one line per victim:
 *   hostile: victim NAME session=yes|no rx=N lies=N pings=N relays_dropped=N
 *            spoofed=N genuine=N
 * (spoofed, genuine: impersonate's datagrams sent with --as and with its
 * own address as their source). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "crypto/tai64n.h"
#include "crypto/transport.h"
#include "crypto/wg_const.h"
#include "overlay/daemon/keyfile.h"
#include "overlay/disco/disco.h"
#include "overlay/disco/disco_msg.h"

#define MAX_VICTIMS   16u
#define MAX_SINKS     64u
#define MAX_ABOUT     16u
#define MAX_STATEMENTS 8u
#define STATEMENT_MAX DISCO_CERT_MAX
#define KEYPAIRS      3u              /* kept per victim: the newest confirmed sends */
#define BUF_LEN       16384u
#define RETRY_NS      (1u * WG_NSEC_PER_SEC)
#define SILENT_NS     (20u * WG_NSEC_PER_SEC)
#define KEEPALIVE_NS  (10u * WG_NSEC_PER_SEC)
#define REKEY_NS      (100u * WG_NSEC_PER_SEC)
#define SELF_ROTATE_NS (10u * WG_NSEC_PER_SEC)

enum mode { MODE_QUIET, MODE_PUNCH, MODE_ENDPOINTS, MODE_ENDPOINTS_DIRECT, MODE_SELF,
            MODE_HIJACK, MODE_IMPERSONATE, MODE_SPOOF_ENDPOINTS, MODE_SPOOF_PING, MODE_CERT };
static const char *const mode_names[] = { "quiet", "punch", "endpoints", "endpoints-direct",
                                          "self", "hijack", "impersonate", "spoof-endpoints",
                                          "spoof-ping", "cert" };

struct victim {
    char name[64];
    uint8_t pub[WG_KEY_LEN];
    int family;                        /* of the overlay address */
    uint8_t addr[16];
    struct sockaddr_storage ep;        /* its underlay endpoint */
    socklen_t ep_len;
    struct disco_endpoint ep_disco;
    struct noise_handshake hs;
    struct cookie_maker maker;
    struct noise_keypair kp[KEYPAIRS];
    bool kp_valid[KEYPAIRS];
    /* Ours as initiator, or the victim sent on it: as WireGuard's
     * responder, nothing is sealed on a keypair before that (the victim
     * may not have its response yet, and would drop what came first). */
    bool kp_confirmed[KEYPAIRS];
    unsigned kp_newest;
    bool session;
    uint64_t last_init_ns, last_rx_ns, last_tx_ns;
    uint64_t rx, lies, pings, relays_dropped;
    uint64_t spoofed, genuine;         /* impersonate's datagrams to it */
};

struct about {
    uint8_t key[WG_KEY_LEN];
};

static struct {
    enum mode mode;
    struct noise_local *local;
    uint8_t self_pub[WG_KEY_LEN];
    int self_family;
    uint8_t self_addr[16];
    struct disco_endpoint bind_disco;
    bool bind_disco_ok;
    int fd;
    int raw_fd;                        /* -1: no --spoof */
    struct sockaddr_in spoof;
    struct victim victims[MAX_VICTIMS];
    unsigned n_victims;
    struct disco_endpoint sinks[MAX_SINKS];
    unsigned n_sinks;
    struct about about[MAX_ABOUT];
    unsigned n_about;
    bool about_victims;
    uint64_t interval_ns;
    uint8_t as_addr[4];                /* impersonate: the source it claims */
    bool as_set;
    uint16_t port;
    char statements[MAX_STATEMENTS][STATEMENT_MAX + 1];
    unsigned n_statements;
    uint64_t start_ns;
    unsigned round;
    /* What it sent, by kind. */
    uint64_t sent_bytes, sent_packets, handshake_bytes, lie_bytes, lies, pongs;
    uint64_t relays_dropped, initiations_answered;
    struct disco_msg msg;              /* ~14 KiB: static, not on the stack */
    uint8_t buf[BUF_LEN];
} g;

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

static int usage(const char *why)
{
    fprintf(stderr, "hostile: %s\n"
            "usage: hostile quiet|punch|endpoints|endpoints-direct|self|hijack|impersonate|"
            "spoof-endpoints|spoof-ping|cert "
            "SECONDS KEYFILE SELF-ADDR BIND [--sink IP:PORT]... [--about PUBKEY]... "
            "[--about-victims] [--interval MS] [--as ADDR] [--port PORT] [--spoof IP:PORT] "
            "[--statement FILE]... "
            "NAME,PUBKEY,OVERLAY-ADDR,IP:PORT...\n", why);
    return 2;
}

/* --- parsing ---------------------------------------------------------------------- */

static bool parse_key(const char *s, size_t len, uint8_t key[WG_KEY_LEN])
{
    size_t n;

    return sodium_base642bin(key, WG_KEY_LEN, s, len, NULL, &n, NULL,
                             sodium_base64_VARIANT_ORIGINAL) == 0 && n == WG_KEY_LEN;
}

/* An overlay address: its family and bytes. */
static bool parse_addr(const char *s, int *family, uint8_t out[16])
{
    memset(out, 0, 16);
    if (inet_pton(AF_INET, s, out) == 1) {
        *family = AF_INET;
        return true;
    }
    if (inet_pton(AF_INET6, s, out) == 1) {
        *family = AF_INET6;
        return true;
    }
    return false;
}

/* IP:PORT or [IPv6]:PORT. */
static bool parse_endpoint(const char *s, struct sockaddr_storage *ss, socklen_t *len)
{
    char host[INET6_ADDRSTRLEN + 2];
    const char *colon = strrchr(s, ':');
    size_t hl;
    char *end;
    unsigned long port;

    if (!colon || colon == s)
        return false;
    hl = (size_t)(colon - s);
    if (s[0] == '[') {
        if (hl < 3 || s[hl - 1] != ']')
            return false;
        s++;
        hl -= 2;
    }
    if (hl >= sizeof(host))
        return false;
    memcpy(host, s, hl);
    host[hl] = '\0';
    port = strtoul(colon + 1, &end, 10);
    if (*end || port == 0 || port > 65535)
        return false;
    memset(ss, 0, sizeof(*ss));
    struct sockaddr_in *in4 = (struct sockaddr_in *)ss;
    struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)ss;
    if (inet_pton(AF_INET, host, &in4->sin_addr) == 1) {
        in4->sin_family = AF_INET;
        in4->sin_port = htons((uint16_t)port);
        *len = sizeof(*in4);
        return true;
    }
    if (inet_pton(AF_INET6, host, &in6->sin6_addr) == 1) {
        in6->sin6_family = AF_INET6;
        in6->sin6_port = htons((uint16_t)port);
        *len = sizeof(*in6);
        return true;
    }
    return false;
}

static bool parse_disco_endpoint(const char *s, struct disco_endpoint *e)
{
    struct sockaddr_storage ss;
    socklen_t len;

    return parse_endpoint(s, &ss, &len) &&
           disco_endpoint_from_sockaddr(e, (struct sockaddr *)&ss, len) == 0;
}

/* NAME,PUBKEY,OVERLAY-ADDR,IP:PORT */
static bool parse_victim(const char *spec, struct victim *v)
{
    char copy[512], *f[4], *save = NULL;
    unsigned n = 0;

    if (strlen(spec) >= sizeof(copy))
        return false;
    strcpy(copy, spec);
    for (char *t = strtok_r(copy, ",", &save); t && n < 4; t = strtok_r(NULL, ",", &save))
        f[n++] = t;
    if (n != 4 || strtok_r(NULL, ",", &save) || strlen(f[0]) >= sizeof(v->name))
        return false;
    strcpy(v->name, f[0]);
    return parse_key(f[1], strlen(f[1]), v->pub) && parse_addr(f[2], &v->family, v->addr) &&
           parse_endpoint(f[3], &v->ep, &v->ep_len) &&
           disco_endpoint_from_sockaddr(&v->ep_disco, (struct sockaddr *)&v->ep, v->ep_len) == 0;
}

/* --- sending ---------------------------------------------------------------------- */

/* Every byte that leaves goes through here, and is counted. */
static bool send_to(const uint8_t *msg, size_t len, const struct sockaddr_storage *to,
                    socklen_t to_len)
{
    ssize_t n = sendto(g.fd, msg, len, 0, (const struct sockaddr *)to, to_len);

    if (n < 0)
        return false;
    g.sent_bytes += (uint64_t)n;
    g.sent_packets++;
    return true;
}

static void install_keypair(struct victim *v, const struct noise_keypair *kp, bool confirmed,
                            uint64_t now)
{
    unsigned at = (v->kp_newest + 1u) % KEYPAIRS;

    if (v->kp_valid[at])
        transport_keypair_clear(&v->kp[at]);
    v->kp[at] = *kp;
    v->kp_valid[at] = true;
    v->kp_confirmed[at] = confirmed;
    v->kp_newest = at;
    v->session = true;
    v->last_rx_ns = now;
}

/* The keypair to seal on: the newest confirmed one, or NULL. */
static struct noise_keypair *sending_keypair(struct victim *v)
{
    for (unsigned back = 0; v->session && back < KEYPAIRS; back++) {
        unsigned k = (v->kp_newest + KEYPAIRS - back) % KEYPAIRS;
        if (v->kp_valid[k] && v->kp_confirmed[k])
            return &v->kp[k];
    }
    return NULL;
}

/* Seals the inner packet at g.buf + WG_TRANSPORT_HEADER_LEN (plain_len
 * bytes; 0 for a keepalive) with the victim's sending keypair and sends
 * it to `to` (the victim's endpoint when NULL). Returns the bytes sent, 0
 * when nothing went. */
static size_t seal_send(struct victim *v, size_t plain_len, const struct sockaddr_storage *to,
                        socklen_t to_len, uint64_t now)
{
    struct transport_packet tp = { .buf = g.buf, .cap = sizeof(g.buf), .len = plain_len };
    struct noise_keypair *kp = sending_keypair(v);

    if (!kp || transport_seal(kp, &tp, now))
        return 0;
    if (!to) {
        to = &v->ep;
        to_len = v->ep_len;
    }
    if (!send_to(g.buf, tp.len, to, to_len))
        return 0;
    v->last_tx_ns = now;
    return tp.len;
}

/* Sends msg[0..len), a UDP payload, to `to` (IPv4) as if from --spoof:
 * the IP and UDP headers written here (the kernel fills in the IP
 * checksum and length; a UDP checksum of 0 is "none" in IPv4). Counted
 * as send_to counts. */
static bool send_spoofed(const uint8_t *msg, size_t len, const struct sockaddr_storage *to)
{
    static uint8_t pkt[28 + BUF_LEN];
    const struct sockaddr_in *dst = (const struct sockaddr_in *)to;
    size_t total = 28 + len;

    if (to->ss_family != AF_INET || len > BUF_LEN)
        return false;
    memset(pkt, 0, 28);
    pkt[0] = 0x45;
    pkt[2] = (uint8_t)(total >> 8);
    pkt[3] = (uint8_t)total;
    pkt[6] = 0x40;                                   /* don't fragment */
    pkt[8] = 64;
    pkt[9] = IPPROTO_UDP;
    memcpy(pkt + 12, &g.spoof.sin_addr, 4);
    memcpy(pkt + 16, &dst->sin_addr, 4);
    memcpy(pkt + 20, &g.spoof.sin_port, 2);
    memcpy(pkt + 22, &dst->sin_port, 2);
    pkt[24] = (uint8_t)((8 + len) >> 8);
    pkt[25] = (uint8_t)(8 + len);
    memcpy(pkt + 28, msg, len);
    if (sendto(g.raw_fd, pkt, total, 0, (const struct sockaddr *)dst, sizeof(*dst)) < 0)
        return false;
    g.sent_bytes += len;
    g.sent_packets++;
    return true;
}

/* Encodes g.msg as an inner disco packet to v at g.buf + header; returns
 * the inner packet's length, or 0. */
static size_t wrap_msg(const struct victim *v)
{
    uint8_t *ip = g.buf + WG_TRANSPORT_HEADER_LEN;
    size_t cap = sizeof(g.buf) - WG_TRANSPORT_MIN_LEN - WG_PADDING_MULTIPLE;
    size_t hlen = g.self_family == AF_INET6 ? 40u : 20u;
    int n = disco_encode(&g.msg, ip + hlen, cap - hlen);

    if (n < 0) {
        fprintf(stderr, "hostile: disco_encode (type %d): %s\n", (int)g.msg.type,
                strerror(-n));
        return 0;
    }
    n = disco_ip_wrap(g.self_family, g.self_addr, v->addr, ip + hlen, (size_t)n, ip, cap);
    return n > 0 ? (size_t)n : 0;
}

/* A lie from --spoof: sealed as seal_send does, sent from there. v's last
 * send stays as it was: the keepalives from BIND go on. */
static size_t seal_spoofed(struct victim *v, size_t plain_len, uint64_t now)
{
    struct transport_packet tp = { .buf = g.buf, .cap = sizeof(g.buf), .len = plain_len };
    struct noise_keypair *kp = sending_keypair(v);

    if (!kp || transport_seal(kp, &tp, now) || !send_spoofed(g.buf, tp.len, &v->ep))
        return 0;
    return tp.len;
}

static void send_lie(struct victim *v, uint64_t now)
{
    size_t n = wrap_msg(v);

    if (n && g.raw_fd >= 0)
        n = seal_spoofed(v, n, now);
    else if (n)
        n = seal_send(v, n, NULL, 0, now);
    if (n) {
        g.lie_bytes += n;
        g.lies++;
        v->lies++;
    }
}

static void send_initiation(struct victim *v, uint64_t now)
{
    uint8_t msg[WG_INITIATION_LEN], ts[WG_TIMESTAMP_LEN];
    struct timespec wall;
    uint32_t index;

    randombytes_buf(&index, sizeof(index));
    clock_gettime(CLOCK_REALTIME, &wall);
    tai64n_encode(ts, (uint64_t)wall.tv_sec, (uint32_t)wall.tv_nsec);
    v->last_init_ns = now;
    if (noise_create_initiation(&v->hs, g.local, index, ts, msg))
        return;
    cookie_add_macs(&v->maker, msg, sizeof(msg), now);
    if (send_to(msg, sizeof(msg), &v->ep, v->ep_len))
        g.handshake_bytes += sizeof(msg);
}

static void send_keepalive(struct victim *v, uint64_t now)
{
    seal_send(v, 0, NULL, 0, now);
}

/* --- the lies ----------------------------------------------------------------------- */

/* The keys the lies to v are about: --about, and the other victims with
 * --about-victims (or in hijack mode). real[i]: that member's real
 * endpoint, when it is a victim. */
static unsigned about_keys(const struct victim *v, const uint8_t *keys[],
                           const struct disco_endpoint *real[])
{
    unsigned n = 0;

    for (unsigned i = 0; i < g.n_about; i++) {
        if (sodium_memcmp(g.about[i].key, v->pub, WG_KEY_LEN) == 0)
            continue;
        real[n] = NULL;
        keys[n++] = g.about[i].key;
    }
    if (!g.about_victims && g.mode != MODE_HIJACK)
        return n;
    for (unsigned i = 0; i < g.n_victims && n < MAX_ABOUT + MAX_VICTIMS; i++) {
        const struct victim *o = &g.victims[i];
        if (o == v)
            continue;
        real[n] = &o->ep_disco;
        keys[n++] = o->pub;
    }
    return n;
}

/* count sinks from the list, starting at `from` (wrapping). */
static uint8_t pick_sinks(struct disco_endpoint *out, unsigned count, unsigned from)
{
    unsigned n = count < g.n_sinks ? count : g.n_sinks;

    for (unsigned i = 0; i < n; i++)
        out[i] = g.sinks[(from + i) % g.n_sinks];
    return (uint8_t)n;
}

/* The ENDPOINTS head: where we see v, and our own local candidates (our
 * real bind address; the sinks in self mode). */
static void endpoints_head(const struct victim *v, uint64_t now)
{
    struct disco_endpoints *e = &g.msg.endpoints;

    memset(&g.msg, 0, sizeof(g.msg));
    g.msg.type = DISCO_ENDPOINTS;
    e->has_observed = true;
    e->observed = v->ep_disco;
    if (g.mode == MODE_SELF) {
        unsigned window = (unsigned)((now - g.start_ns) / SELF_ROTATE_NS);
        e->n_local = pick_sinks(e->local, DISCO_MAX_LOCAL, window * DISCO_MAX_LOCAL);
    } else if (g.bind_disco_ok) {
        e->n_local = 1;
        e->local[0] = g.bind_disco;
    }
}

/* An inner IPv4/UDP datagram from `src` to v's overlay address, port
 * `port`, sealed on v's session: the UDP checksum 0 (none, as IPv4
 * allows), the IP header's computed. Returns the bytes sent, or 0. */
static size_t send_datagram_as(struct victim *v, const uint8_t src[4], uint16_t port,
                               uint64_t now)
{
    static const char payload[] = "hostile: impersonated";
    uint8_t *ip = g.buf + WG_TRANSPORT_HEADER_LEN;
    size_t len = 20u + 8u + sizeof(payload);
    uint32_t sum = 0;

    memset(ip, 0, 28);
    ip[0] = 0x45;
    ip[2] = (uint8_t)(len >> 8);
    ip[3] = (uint8_t)len;
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, src, 4);
    memcpy(ip + 16, v->addr, 4);
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8);
    ip[11] = (uint8_t)~sum;
    ip[20] = 40000 >> 8;
    ip[21] = 40000 & 0xff;
    ip[22] = (uint8_t)(port >> 8);
    ip[23] = (uint8_t)port;
    ip[24] = (uint8_t)((8u + sizeof(payload)) >> 8);
    ip[25] = (uint8_t)(8u + sizeof(payload));
    memcpy(ip + 28, payload, sizeof(payload));
    return seal_send(v, len, NULL, 0, now);
}

/* impersonate: one datagram as --as (which the victim must not deliver)
 * and one as itself (which it must: the control). */
static void impersonate(struct victim *v, uint64_t now)
{
    size_t n;

    if ((n = send_datagram_as(v, g.as_addr, g.port, now))) {
        g.lie_bytes += n;
        g.lies++;
        v->lies++;
        v->spoofed++;
    }
    if (send_datagram_as(v, g.self_addr, (uint16_t)(g.port + 1u), now))
        v->genuine++;
}

static void lie_to(struct victim *v, uint64_t now)
{
    const uint8_t *keys[MAX_ABOUT + MAX_VICTIMS];
    const struct disco_endpoint *real[MAX_ABOUT + MAX_VICTIMS];
    unsigned n = about_keys(v, keys, real);
    unsigned r = g.round;

    switch (g.mode) {
    case MODE_QUIET:
        return;
    case MODE_CERT:
        for (unsigned i = 0; i < g.n_statements; i++) {
            memset(&g.msg, 0, sizeof(g.msg));
            g.msg.type = DISCO_CERT;
            g.msg.cert.text = g.statements[i];
            g.msg.cert.len = (uint16_t)strlen(g.statements[i]);
            send_lie(v, now);
        }
        return;
    case MODE_IMPERSONATE:
        impersonate(v, now);
        return;
    case MODE_SPOOF_ENDPOINTS:
        memset(&g.msg, 0, sizeof(g.msg));
        g.msg.type = DISCO_ENDPOINTS;
        g.msg.endpoints.has_observed = true;
        g.msg.endpoints.observed = v->ep_disco;
        if (g.bind_disco_ok) {
            g.msg.endpoints.n_local = 1;
            g.msg.endpoints.local[0] = g.bind_disco;
            g.msg.endpoints.local[0].port = (uint16_t)(20000u + r % 1000u);
        }
        send_lie(v, now);
        return;
    case MODE_SPOOF_PING:
        memset(&g.msg, 0, sizeof(g.msg));
        g.msg.type = DISCO_PING;
        randombytes_buf(&g.msg.ping.txid, sizeof(g.msg.ping.txid));
        g.msg.ping.flags = DISCO_PING_F_PROBE;
        send_lie(v, now);
        return;
    case MODE_SELF:
        endpoints_head(v, now);
        send_lie(v, now);
        return;
    case MODE_PUNCH:
        for (unsigned i = 0; i < n && g.n_sinks; i++) {
            memset(&g.msg, 0, sizeof(g.msg));
            g.msg.type = DISCO_PUNCH;
            memcpy(g.msg.punch.key, keys[i], WG_KEY_LEN);
            randombytes_buf(&g.msg.punch.id, sizeof(g.msg.punch.id));
            g.msg.punch.n_cand = pick_sinks(g.msg.punch.cand, DISCO_MAX_CANDIDATES,
                                            r * DISCO_MAX_CANDIDATES);
            send_lie(v, now);
        }
        return;
    case MODE_ENDPOINTS:
    case MODE_ENDPOINTS_DIRECT:
        if (!g.n_sinks)
            return;
        endpoints_head(v, now);
        for (unsigned i = 0; i < n && i < DISCO_MAX_PEERS; i++) {
            struct disco_peer *p = &g.msg.endpoints.peers[g.msg.endpoints.n_peers++];
            memcpy(p->key, keys[i], WG_KEY_LEN);
            p->direct = g.mode == MODE_ENDPOINTS_DIRECT;
            p->has_observed = true;
            p->observed = g.sinks[r % g.n_sinks];
            p->n_local = pick_sinks(p->local, DISCO_MAX_LOCAL, 1u);
        }
        send_lie(v, now);
        return;
    case MODE_HIJACK:
        endpoints_head(v, now);
        for (unsigned i = 0; i < n && i < DISCO_MAX_PEERS; i++) {
            struct disco_peer *p = &g.msg.endpoints.peers[g.msg.endpoints.n_peers++];
            memcpy(p->key, keys[i], WG_KEY_LEN);
            p->direct = true;
            p->has_observed = real[i] != NULL;
            if (real[i])
                p->observed = *real[i];
        }
        send_lie(v, now);
        for (unsigned i = 0; i < n; i++) {
            if (!real[i])
                continue;
            memset(&g.msg, 0, sizeof(g.msg));
            g.msg.type = DISCO_PUNCH;
            memcpy(g.msg.punch.key, keys[i], WG_KEY_LEN);
            randombytes_buf(&g.msg.punch.id, sizeof(g.msg.punch.id));
            g.msg.punch.n_cand = 1;
            g.msg.punch.cand[0] = *real[i];
            send_lie(v, now);
        }
        return;
    }
}

/* --- receiving ---------------------------------------------------------------------- */

static struct noise_handshake *by_key(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    (void)ctx;
    for (unsigned i = 0; i < g.n_victims; i++)
        if (sodium_memcmp(g.victims[i].pub, key, WG_KEY_LEN) == 0)
            return &g.victims[i].hs;
    return NULL;
}

static struct noise_handshake *by_index(void *ctx, uint32_t index)
{
    (void)ctx;
    for (unsigned i = 0; i < g.n_victims; i++) {
        struct noise_handshake *hs = &g.victims[i].hs;
        if (hs->state == NOISE_STATE_CREATED_INITIATION && hs->local_index == index)
            return hs;
    }
    return NULL;
}

static const struct noise_lookup lookup = { by_key, by_index, NULL };

static struct victim *victim_of(const struct noise_handshake *hs)
{
    for (unsigned i = 0; i < g.n_victims; i++)
        if (&g.victims[i].hs == hs)
            return &g.victims[i];
    return NULL;
}

static void on_initiation(uint8_t *msg, size_t len, const struct sockaddr_storage *src,
                          socklen_t src_len, uint64_t now)
{
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    uint8_t resp[WG_RESPONSE_LEN];
    uint32_t index;
    struct victim *v;

    if (noise_consume_initiation(g.local, msg, len, now, &lookup, &hs) || !(v = victim_of(hs)))
        return;
    randombytes_buf(&index, sizeof(index));
    if (noise_create_response(hs, index, resp) || noise_begin_session(hs, &kp, now)) {
        noise_handshake_reset(hs);
        return;
    }
    cookie_add_macs(&v->maker, resp, sizeof(resp), now);
    install_keypair(v, &kp, false, now);
    sodium_memzero(&kp, sizeof(kp));
    if (send_to(resp, sizeof(resp), src, src_len)) {
        g.handshake_bytes += sizeof(resp);
        g.initiations_answered++;
    }
}

static void on_response(uint8_t *msg, size_t len, uint64_t now)
{
    struct noise_handshake *hs = NULL;
    struct noise_keypair kp;
    struct victim *v;

    if (noise_consume_response(g.local, msg, len, &lookup, &hs) || !(v = victim_of(hs)) ||
        noise_begin_session(hs, &kp, now))
        return;
    install_keypair(v, &kp, true, now);
    sodium_memzero(&kp, sizeof(kp));
    /* Confirms the session to the responder. */
    send_keepalive(v, now);
}

static void answer_ping(struct victim *v, const struct disco_ping *pi,
                        const struct sockaddr_storage *src, socklen_t src_len, uint64_t now)
{
    struct disco_endpoint from;
    uint64_t txid = pi->txid;
    size_t n;

    memset(&g.msg, 0, sizeof(g.msg));
    g.msg.type = DISCO_PONG;
    g.msg.pong.txid = txid;
    if (disco_endpoint_from_sockaddr(&from, (const struct sockaddr *)src, src_len) == 0) {
        g.msg.pong.has_source = true;
        g.msg.pong.source = from;
    }
    v->pings++;
    if ((n = wrap_msg(v)) && seal_send(v, n, src, src_len, now))
        g.pongs++;
}

static void on_transport(uint8_t *msg, size_t len, const struct sockaddr_storage *src,
                         socklen_t src_len, uint64_t now)
{
    struct transport_packet tp = { .buf = msg, .cap = len, .len = len };
    uint32_t receiver = transport_receiver(msg);
    struct victim *v = NULL;
    struct noise_keypair *kp = NULL;
    const uint8_t *isrc, *idst, *payload;
    size_t plen;
    int family;
    unsigned at = 0;

    for (unsigned i = 0; i < g.n_victims && !kp; i++)
        for (unsigned k = 0; k < KEYPAIRS; k++)
            if (g.victims[i].kp_valid[k] && g.victims[i].kp[k].local_index == receiver) {
                v = &g.victims[i];
                kp = &v->kp[k];
                at = k;
                break;
            }
    if (!kp || transport_open(kp, &tp, now))
        return;
    v->kp_confirmed[at] = true;
    v->rx++;
    v->last_rx_ns = now;
    if (tp.len == 0)
        return;         /* a keepalive */
    const uint8_t *ip = msg + WG_TRANSPORT_HEADER_LEN;
    if (disco_ip_parse(ip, tp.len, &family, &isrc, &idst, &payload, &plen) ||
        disco_decode(payload, plen, &g.msg))
        return;         /* data, or not a disco message we take */
    switch (g.msg.type) {
    case DISCO_PING: {
        struct disco_ping pi = g.msg.ping;
        answer_ping(v, &pi, src, src_len, now);
        break;
    }
    case DISCO_RELAY:
        /* A relay we claimed to be: dropped, never forwarded. */
        v->relays_dropped++;
        g.relays_dropped++;
        break;
    default:
        break;          /* ENDPOINTS, PUNCH, PONG, RELAYED: ignored */
    }
}

static void receive_all(uint64_t now)
{
    static uint8_t in[BUF_LEN];

    for (;;) {
        struct sockaddr_storage src;
        socklen_t src_len = sizeof(src);
        ssize_t n = recvfrom(g.fd, in, sizeof(in), MSG_DONTWAIT, (struct sockaddr *)&src,
                             &src_len);
        if (n < 0)
            return;
        switch (noise_message_type(in, (size_t)n)) {
        case WG_MSG_INITIATION:
            if (n == WG_INITIATION_LEN)
                on_initiation(in, (size_t)n, &src, src_len, now);
            break;
        case WG_MSG_RESPONSE:
            if (n == WG_RESPONSE_LEN)
                on_response(in, (size_t)n, now);
            break;
        case WG_MSG_TRANSPORT:
            if (n >= (ssize_t)WG_TRANSPORT_MIN_LEN)
                on_transport(in, (size_t)n, &src, src_len, now);
            break;
        default:
            break;      /* cookie replies: we never put a victim under load */
        }
    }
}

/* --- the loop ----------------------------------------------------------------------- */

static void tick(uint64_t now, bool lie_round)
{
    for (unsigned i = 0; i < g.n_victims; i++) {
        struct victim *v = &g.victims[i];
        bool fresh = v->session && now - v->last_rx_ns < SILENT_NS &&
                     now - v->kp[v->kp_newest].birth_ns < REKEY_NS;
        if (!fresh && (!v->last_init_ns || now - v->last_init_ns >= RETRY_NS))
            send_initiation(v, now);
        if (!v->session)
            continue;
        if (lie_round)
            lie_to(v, now);
        if (now - v->last_tx_ns >= KEEPALIVE_NS)
            send_keepalive(v, now);
    }
}

static int bind_socket(const char *spec)
{
    struct sockaddr_storage ss;
    socklen_t len;
    int one = 1;

    if (!parse_endpoint(spec, &ss, &len))
        return -1;
    g.bind_disco_ok = disco_endpoint_from_sockaddr(&g.bind_disco, (struct sockaddr *)&ss,
                                                   len) == 0;
    int fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&ss, len)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* A statement's one line from path into out (STATEMENT_MAX at most,
 * without its newline): false when it cannot be read or is empty. */
static bool read_statement(const char *path, char *out)
{
    FILE *f = fopen(path, "r");
    size_t n;

    if (!f)
        return false;
    n = fread(out, 1, STATEMENT_MAX, f);
    fclose(f);
    out[n] = '\0';
    while (n && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
    return n > 0 && !strchr(out, '\n');
}

int main(int argc, char **argv)
{
    uint8_t priv[WG_KEY_LEN];
    char err[256];
    const char *pos[5];
    unsigned npos = 0;
    double seconds;

    if (sodium_init() < 0)
        return usage("libsodium did not start");
    g.interval_ns = 500u * 1000000u;
    g.port = 40100;
    g.raw_fd = -1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--sink") && i + 1 < argc) {
            if (g.n_sinks == MAX_SINKS || !parse_disco_endpoint(argv[++i], &g.sinks[g.n_sinks]))
                return usage("bad or too many --sink");
            g.n_sinks++;
        } else if (!strcmp(a, "--about") && i + 1 < argc) {
            i++;
            if (g.n_about == MAX_ABOUT ||
                !parse_key(argv[i], strlen(argv[i]), g.about[g.n_about].key))
                return usage("bad or too many --about");
            g.n_about++;
        } else if (!strcmp(a, "--spoof") && i + 1 < argc) {
            struct sockaddr_storage ss;
            socklen_t len;
            if (!parse_endpoint(argv[++i], &ss, &len) || ss.ss_family != AF_INET)
                return usage("bad --spoof (IPv4:PORT)");
            memcpy(&g.spoof, &ss, sizeof(g.spoof));
        } else if (!strcmp(a, "--statement") && i + 1 < argc) {
            if (g.n_statements == MAX_STATEMENTS ||
                !read_statement(argv[++i], g.statements[g.n_statements]))
                return usage("bad or too many --statement (a file of one line)");
            g.n_statements++;
        } else if (!strcmp(a, "--about-victims")) {
            g.about_victims = true;
        } else if (!strcmp(a, "--interval") && i + 1 < argc) {
            long ms = strtol(argv[++i], NULL, 10);
            if (ms <= 0 || ms > 60000)
                return usage("bad --interval");
            g.interval_ns = (uint64_t)ms * 1000000u;
        } else if (!strcmp(a, "--as") && i + 1 < argc) {
            if (inet_pton(AF_INET, argv[++i], g.as_addr) != 1)
                return usage("bad --as (an IPv4 overlay address)");
            g.as_set = true;
        } else if (!strcmp(a, "--port") && i + 1 < argc) {
            long port = strtol(argv[++i], NULL, 10);
            if (port <= 0 || port >= 65535)
                return usage("bad --port");
            g.port = (uint16_t)port;
        } else if (!strncmp(a, "--", 2)) {
            return usage("unknown option");
        } else if (npos < 5) {
            pos[npos++] = a;
        } else {
            if (g.n_victims == MAX_VICTIMS || !parse_victim(a, &g.victims[g.n_victims])) {
                fprintf(stderr, "hostile: bad victim '%s'\n", a);
                return usage("bad or too many victims");
            }
            g.n_victims++;
        }
    }
    if (npos < 5 || g.n_victims == 0)
        return usage("missing arguments");
    unsigned m;
    for (m = 0; m < sizeof(mode_names) / sizeof(mode_names[0]); m++)
        if (!strcmp(pos[0], mode_names[m]))
            break;
    if (m == sizeof(mode_names) / sizeof(mode_names[0]))
        return usage("unknown mode");
    g.mode = (enum mode)m;
    seconds = strtod(pos[1], NULL);
    if (!(seconds > 0))
        return usage("bad SECONDS");
    if (keyfile_read(pos[2], priv, err, sizeof(err))) {
        fprintf(stderr, "hostile: %s\n", err);
        return 1;
    }
    g.local = noise_local_new(priv);
    sodium_memzero(priv, sizeof(priv));
    if (!g.local)
        return usage("not a valid private key");
    if (!parse_addr(pos[3], &g.self_family, g.self_addr))
        return usage("bad SELF-ADDR");
    if ((g.fd = bind_socket(pos[4])) < 0) {
        fprintf(stderr, "hostile: cannot bind %s: %s\n", pos[4], strerror(errno));
        return 1;
    }
    for (unsigned i = 0; i < g.n_victims; i++) {
        struct victim *v = &g.victims[i];
        if (v->family != g.self_family)
            return usage("a victim's overlay address is not of SELF-ADDR's family");
        if (noise_handshake_init(&v->hs, g.local, v->pub, NULL))
            return usage("a victim's public key is not usable");
        cookie_maker_init(&v->maker, v->pub);
    }
    if ((g.mode == MODE_PUNCH || g.mode == MODE_ENDPOINTS || g.mode == MODE_ENDPOINTS_DIRECT ||
         g.mode == MODE_SELF) && !g.n_sinks)
        return usage("this mode needs --sink");
    if (g.mode == MODE_CERT && !g.n_statements)
        return usage("cert needs --statement");
    if (g.mode == MODE_IMPERSONATE && (!g.as_set || g.self_family != AF_INET))
        return usage("impersonate needs --as and IPv4 overlay addresses");
    if (g.mode == MODE_SPOOF_ENDPOINTS || g.mode == MODE_SPOOF_PING) {
        if (!g.spoof.sin_family)
            return usage("this mode needs --spoof");
        if ((g.raw_fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_RAW)) < 0) {
            fprintf(stderr, "hostile: raw socket: %s\n", strerror(errno));
            return 1;
        }
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);

    g.start_ns = now_ns();
    uint64_t end = g.start_ns + (uint64_t)(seconds * 1e9), next_lie = g.start_ns, now;
    while (!stop && (now = now_ns()) < end) {
        bool lie_round = now >= next_lie;
        if (lie_round) {
            next_lie = now + g.interval_ns;
            g.round++;
        }
        tick(now, lie_round);
        struct pollfd pfd = { .fd = g.fd, .events = POLLIN };
        if (poll(&pfd, 1, 20) > 0)
            receive_all(now_ns());
    }

    unsigned sessions = 0;
    for (unsigned i = 0; i < g.n_victims; i++)
        sessions += g.victims[i].session;
    printf("hostile: mode=%s seconds=%.1f victims=%u sessions=%u sent_bytes=%llu "
           "sent_packets=%llu handshake_bytes=%llu lie_bytes=%llu lies=%llu pongs=%llu "
           "relays_dropped=%llu initiations_answered=%llu\n",
           mode_names[g.mode], (double)(now_ns() - g.start_ns) / 1e9, g.n_victims, sessions,
           (unsigned long long)g.sent_bytes, (unsigned long long)g.sent_packets,
           (unsigned long long)g.handshake_bytes, (unsigned long long)g.lie_bytes,
           (unsigned long long)g.lies, (unsigned long long)g.pongs,
           (unsigned long long)g.relays_dropped, (unsigned long long)g.initiations_answered);
    for (unsigned i = 0; i < g.n_victims; i++) {
        struct victim *v = &g.victims[i];
        printf("hostile: victim %s session=%s rx=%llu lies=%llu pings=%llu relays_dropped=%llu "
               "spoofed=%llu genuine=%llu\n",
               v->name, v->session ? "yes" : "no", (unsigned long long)v->rx,
               (unsigned long long)v->lies, (unsigned long long)v->pings,
               (unsigned long long)v->relays_dropped, (unsigned long long)v->spoofed,
               (unsigned long long)v->genuine);
        for (unsigned k = 0; k < KEYPAIRS; k++)
            if (v->kp_valid[k])
                transport_keypair_clear(&v->kp[k]);
        sodium_memzero(&v->hs, sizeof(v->hs));
    }
    fflush(stdout);
    noise_local_free(g.local);
    close(g.fd);
    if (g.raw_fd >= 0)
        close(g.raw_fd);
    return 0;
}
