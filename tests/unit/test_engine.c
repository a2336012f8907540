/* SPDX-License-Identifier: MIT */
/* The engine end to end, in one process: two devices (overlay/engine)
 * joined by an in-memory network, with the loop's I/O faked here (every
 * loop_* the engine calls: sends are queued and delivered to the other
 * device by pump(); TUN writes are counted) and a fake clock, as
 * wireguard-go's device tests pair two devices over channels. It reaches
 * handshake.c, datapath.c and timers.c the way the daemon does:
 *   - a packet with no session waits, a handshake runs, the packet arrives
 *   - a peer that is down: retransmits every REKEY_TIMEOUT, then the
 *     handshake gives up after MAX_TIMER_HANDSHAKES and new packets are
 *     refused with ICMP at once
 *   - rekey after REKEY_AFTER_TIME under traffic, with nothing lost
 *   - keys zeroed 3 x REJECT_AFTER_TIME after the last session, when the
 *     peer is gone
 *   - the side that only received answers within KEEPALIVE_TIMEOUT
 *   - an idle path is not confirmed; data again confirms it at once
 *   - initiations that cross: one session, and data both ways
 *   - the log names the peer: one warning when it goes away, one notice
 *     when it comes back (as the journal gets them)
 *   - the security checks, each alone, so that deleting one fails a test
 *     (tests/mutants.list): the inner source, a hint's and passed-on
 *     locals' credit, mac1 before the rate limiter and the limiter itself,
 *     a relay taken only after proof, a relay's refusals
 *   - a registered peer with no endpoint, reached at a candidate of its
 *     record; one whose candidate never answers costs the bytes one
 *     report allows, no more (issue 30)
 *   - discovery's timers as WireGuard's: idle peers with nothing due are
 *     not looked at; a session coming up, answers stopping and a relay
 *     lost each bring discovery's action at once, not at the next ping
 * The crypto runs inline (no workers). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/virtio_net.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/cluster.h"
#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"
#include "crypto/transport.h"
#include "overlay/base/log.h"
#include "overlay/control/metrics.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/model/routes.h"
#include "overlay/disco/pmtu.h"
#include "overlay/loop/crypto_job.h"
#include "overlay/loop/loop.h"
#include "overlay/loop/resolver.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/members.h"
#include "overlay/membership/revocations.h"
#include "overlay/registry/registry.h"
#include "overlay/registry/vouch.h"
#include "tests/unit/tso_read.h"
#include "tun/ecn.h"

#define NODES_MAX 6u
#define POOL      32u
#define START_NS  (1000u * WG_NSEC_PER_SEC)
#define SEC       WG_NSEC_PER_SEC
#define WIRE_MAX  4096u
#define MSG_MAX   2048u

struct node {
    struct device dev;
    struct membership membership;  /* dev.membership */
    struct loop loop;
    struct loop_handlers on;
    union endpoint ep;
    bool down;                     /* switched off: sends nothing, everything to it is lost */
    unsigned tun_packets;          /* packets written to its ddp0 */
    unsigned icmp_packets;         /* of which ICMP (errors from the engine) */
    unsigned initiations, keepalives;   /* sent by it */
    unsigned transports;           /* transport messages sent by it (data, disco, keepalives) */
    uint32_t tun_lens[64];         /* the lengths of the first packets written to ddp0 */
    unsigned tun_writes;
    unsigned sends;
    unsigned ce_packets;           /* written to ddp0 marked CE (tun/ecn.h) */
    unsigned bad_ip_sums;          /* written to ddp0 with a wrong IPv4 header checksum */
};

struct wire_msg {
    unsigned from, to;
    uint32_t len;
    uint8_t data[MSG_MAX];
};

static struct node nodes[NODES_MAX];
static unsigned n_nodes = 2;                  /* in this test's world */
static bool cut[NODES_MAX][NODES_MAX];        /* from, to: a firewall drops it */
static struct wire_msg wire[WIRE_MAX];
static unsigned wire_head, wire_tail;
static unsigned stray_sends[NODES_MAX];       /* from: to an address no node has */
/* An address outside the cluster (spoofed-source tests): what each node
 * sent it, in bytes and datagrams. */
static union endpoint victim;
static uint64_t victim_bytes[NODES_MAX];
static unsigned victim_msgs[NODES_MAX];
/* Each receive delivered says its socket holds a standing queue, as the
 * loop's queue management would (loop/codel.h). */
static bool congest_next;
/* The TOS byte of the packets app_send* send (its low bits: ECN). */
static uint8_t app_tos;
/* The vnet header app_send_as gives its packet when set (else zeros). */
static struct vnet_hdr app_vnet;
static bool app_vnet_set;

static unsigned node_of_loop(const struct loop *l)
{
    for (unsigned i = 0; i < n_nodes; i++)
        if (&nodes[i].loop == l)
            return i;
    fail_msg("unknown loop");
    return 0;
}

static int node_of_endpoint(const union endpoint *e)
{
    for (unsigned i = 0; i < n_nodes; i++)
        if (e->sa.sa_family == AF_INET &&
            e->in4.sin_addr.s_addr == nodes[i].ep.in4.sin_addr.s_addr &&
            e->in4.sin_port == nodes[i].ep.in4.sin_port)
            return (int)i;
    return -1;
}

static void wire_put(unsigned from, const union endpoint *dst, const uint8_t *msg, uint32_t len)
{
    int to = node_of_endpoint(dst);

    if (len >= WG_TRANSPORT_MIN_LEN && get_le32(msg) == WG_MSG_TRANSPORT) {
        nodes[from].transports++;
        nodes[from].keepalives += len == WG_TRANSPORT_MIN_LEN;
    }
    if (len == WG_INITIATION_LEN && get_le32(msg) == WG_MSG_INITIATION) {
        nodes[from].initiations++;
        /* An initiation's timestamp is wall-clock time in grains of
         * WG_TIMESTAMP_GRAIN_NS, and a responder takes only newer ones:
         * the next initiation must be a grain later in real time too. */
        struct timespec grain = { 0, (long)WG_TIMESTAMP_GRAIN_NS + 1000000L };
        nanosleep(&grain, NULL);
    }
    stray_sends[from] += to < 0;
    if (endpoint_equal(dst, &victim)) {
        victim_bytes[from] += len;
        victim_msgs[from]++;
    }
    if (to < 0 || nodes[to].down || cut[from][to] || len > MSG_MAX)
        return;
    assert_true(wire_tail - wire_head < WIRE_MAX);
    struct wire_msg *w = &wire[wire_tail++ % WIRE_MAX];
    w->from = from;
    w->to = (unsigned)to;
    w->len = len;
    memcpy(w->data, msg, len);
}

/* --- the loop, faked: what the engine asks of it ------------------------------ */

struct pkt *loop_pkt_get(struct loop *l)
{
    return pkt_get(&l->pool);
}

void loop_pkt_put(struct loop *l, struct pkt *pkt)
{
    pkt_put(&l->pool, pkt);
}

void loop_pkt_unref(struct loop *l, struct pkt *pkt)
{
    if (--pkt->refs == 0)
        pkt_put(&l->pool, pkt);
}

struct tun_write *loop_tun_write_get(struct loop *l)
{
    return tun_write_get(&l->pool);
}

void loop_tun_write_put(struct loop *l, struct tun_write *w)
{
    tun_write_put(&l->pool, w);
}

void loop_send(struct loop *l, struct pkt *pkt, const union endpoint *dst)
{
    unsigned from = node_of_loop(l);

    nodes[from].sends++;
    for (unsigned i = 0; i < pkt->nseg; i++)
        wire_put(from, dst, pkt_slot(pkt, i), i + 1u == pkt->nseg ? pkt->len : pkt->stride);
    pkt_put(&l->pool, pkt);
}

void loop_send_message(struct loop *l, struct pkt *pkt, const union endpoint *dst, uint32_t len)
{
    pkt->nseg = 1;
    pkt->stride = len;
    pkt->len = len;
    loop_send(l, pkt, dst);
}

/* As the kernel's UDP socket with the don't-fragment bit on a 1500-byte
 * link: a datagram the link cannot carry is refused. */
#define LINK_MTU 1500u
#define IP_UDP_HEADERS 28u

int loop_send_now(struct loop *l, const uint8_t *msg, uint32_t len, const union endpoint *dst)
{
    if (len + IP_UDP_HEADERS > LINK_MTU)
        return -EMSGSIZE;
    wire_put(node_of_loop(l), dst, msg, len);
    return 0;
}

/* Extra source ports: the in-memory network has one address per node, so
 * a flow's message arrives from it, told apart only by its byte 3; or,
 * with extra_flows_cut (a NAT that lets only replies in), is lost. */
static bool extra_flows_cut;

int loop_send_flow_now(struct loop *l, unsigned flow, const uint8_t *msg, uint32_t len,
                       const union endpoint *dst)
{
    (void)flow;
    if (extra_flows_cut)
        return 0;
    return loop_send_now(l, msg, len, dst);
}

void loop_write_tun(struct loop *l, struct tun_write *w)
{
    struct node *n = &nodes[node_of_loop(l)];

    n->tun_writes++;
    /* Coalesced runs may be one super-packet; count the IP packets'
     * protocol by the first. */
    for (unsigned i = 1; i < w->iovcnt; i++) {
        const uint8_t *ip = w->iov[i].iov_base;
        if (n->tun_packets < 64)
            n->tun_lens[n->tun_packets] = (uint32_t)w->iov[i].iov_len;
        n->tun_packets++;
        if (w->iov[i].iov_len >= 20 && ip[9] == IPPROTO_ICMP)
            n->icmp_packets++;
        if (w->iov[i].iov_len >= 20 && ip[0] == 0x45) {
            n->ce_packets += ecn_get(ip, (uint32_t)w->iov[i].iov_len) == (int)ECN_CE;
            n->bad_ip_sums += (uint16_t)offload_csum_add(0, ip, 20) != 0xffff;
        }
    }
    loop_pkt_unref(l, w->owner);
    tun_write_put(&l->pool, w);
}

/* Deferred jobs, when a test turns them on (fake_workers), as a shard
 * has them (deferred.h): a job submitted stays in flight until finish_jobs
 * runs it and finishes it, in order, as the loop does. Off: one loop,
 * everything inline. */
#define FAKE_JOBS 16u
static bool fake_workers;
static struct crypto_job fake_job[FAKE_JOBS];
static unsigned fake_job_node[FAKE_JOBS], fake_jobs_out, fake_jobs_submitted;

static void finish_first_job(uint64_t now);

struct crypto_job *loop_crypto_job(struct loop *l, uint64_t now)
{
    (void)l;
    if (!fake_workers)
        return NULL;   /* one loop: the engine seals and opens inline */
    if (fake_jobs_out == FAKE_JOBS)
        finish_first_job(now);   /* as the loop makes room: its oldest first */
    return &fake_job[fake_jobs_out];
}

void loop_crypto_submit(struct loop *l, struct crypto_job *job)
{
    assert_true(fake_workers);
    assert_ptr_equal(job, &fake_job[fake_jobs_out]);
    fake_job_node[fake_jobs_out++] = node_of_loop(l);
    fake_jobs_submitted++;
}

/* The loop's shard: every seal's hint (overlay/loop/shard.h). */
static unsigned fake_shard;

unsigned loop_shard(const struct loop *l)
{
    (void)l;
    return fake_shard;
}

/* The metrics ask for the engine lock's cost: one fake loop, no lock. */
bool loop_lock_stats(const struct loop *l, unsigned k, struct loop_lock_stats *out)
{
    (void)l, (void)k, (void)out;
    return false;
}

/* The oldest job in flight only, as when the others are still running. */
static void finish_first_job(uint64_t now)
{
    struct crypto_job job = fake_job[0];
    struct node *n = &nodes[fake_job_node[0]];

    assert_true(fake_jobs_out > 0);
    crypto_job_run(&job);
    fake_jobs_out--;
    memmove(&fake_job[0], &fake_job[1], fake_jobs_out * sizeof(fake_job[0]));
    memmove(&fake_job_node[0], &fake_job_node[1], fake_jobs_out * sizeof(fake_job_node[0]));
    n->on.crypto_done(n->on.ctx, &job, now);
}

/* Every job in flight runs; the loop finishes them in order. */
static void finish_jobs(uint64_t now)
{
    while (fake_jobs_out)
        finish_first_job(now);
}

void loop_crypto_drain(struct loop *l, uint64_t now)
{
    (void)l;
    finish_jobs(now);
}

/* Calls of loop_packet_unawaited, every node's together. */
static unsigned unawaited_calls;

void loop_packet_unawaited(struct loop *l)
{
    (void)l;
    unawaited_calls++;
}

/* --- the world ------------------------------------------------------------------------ */

/* The routes the file grants n1 (issue 60), NULL: none. */
static const char *n1_routes;

static void make_cluster(struct cluster *c)
{
    char text[2048], b64[64];
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    size_t len = (size_t)snprintf(text, sizeof(text),
                                  "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n");

    for (unsigned i = 0; i < n_nodes; i++) {
        memset(priv, (int)(0x41 + i), sizeof(priv));
        crypto_scalarmult_base(pub, priv);
        sodium_bin2base64(b64, sizeof(b64), pub, WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "[node n%u]\npublic-key = %s\naddress = 10.77.0.%u\n"
                                "endpoint = 192.0.2.%u:51820\n", i, b64, i + 1, i + 1);
        if (i == 1 && n1_routes)
            len += (size_t)snprintf(text + len, sizeof(text) - len, "routes = %s\n", n1_routes);
    }
    assert_int_equal(cluster_parse(text, len, c, NULL), 0);
}

static int world_setup(void **state)
{
    (void)state;
    /* TEST_ENGINE_DEBUG=1: the engine's debug log on stderr. */
    log_init("test_engine", true, getenv("TEST_ENGINE_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    assert_int_equal(crypto_core_init(), 0);
    memset(nodes, 0, sizeof(nodes));
    memset(cut, 0, sizeof(cut));
    memset(stray_sends, 0, sizeof(stray_sends));
    fake_workers = false;
    fake_jobs_out = fake_jobs_submitted = 0;
    congest_next = false;
    app_tos = 0;
    app_vnet_set = false;
    wire_head = wire_tail = 0;
    memset(&victim, 0, sizeof(victim));
    memset(victim_bytes, 0, sizeof(victim_bytes));
    memset(victim_msgs, 0, sizeof(victim_msgs));
    for (unsigned i = 0; i < n_nodes; i++) {
        struct node *n = &nodes[i];
        uint8_t priv[WG_KEY_LEN];

        make_cluster(&n->dev.cluster);
        n->dev.self = &n->dev.cluster.nodes[i];
        n->dev.loop = &n->loop;
        n->dev.mtu = 1420;
        n->dev.listen_port = 51820;
        snprintf(n->dev.ifname, sizeof(n->dev.ifname), "ddp%u", i);
        memset(priv, (int)(0x41 + i), sizeof(priv));
        membership_init(&n->membership);
        n->dev.membership = &n->membership;
        assert_int_equal(device_init(&n->dev, priv, START_NS), 0);
        assert_int_equal(pkt_pool_init(&n->loop.pool, POOL, POOL), 0);
        n->loop.udp_fd[0] = n->loop.udp_fd[1] = n->loop.tun_fd = -1;
        n->loop.name = n->dev.ifname;
        n->loop.max_datagram = 1420 + WG_TRANSPORT_MIN_LEN;
        engine_loop_handlers(&n->dev, &n->on);
        n->ep.in4.sin_family = AF_INET;
        n->ep.in4.sin_port = htons(51820);
        n->ep.in4.sin_addr.s_addr = htonl(0xc0000201u + i);   /* 192.0.2.1, .2 */
    }
    return 0;
}

static int world_teardown(void **state)
{
    (void)state;
    for (unsigned i = 0; i < n_nodes; i++) {
        struct node *n = &nodes[i];
        /* Nothing of the pool is kept once the queues are empty. */
        device_destroy(&n->dev);
        membership_free(&n->membership);
        cluster_free(&n->dev.cluster);
        pkt_pool_destroy(&n->loop.pool);
    }
    return 0;
}

/* The one peer of node i. */
static struct peer *peer_of(unsigned i)
{
    assert_int_equal(nodes[i].dev.n_peers, 1);
    return nodes[i].dev.peers[0];
}

/* Delivers everything on the wire, and what that makes, at time now. */
static void pump(uint64_t now)
{
    for (unsigned guard = 0; wire_head != wire_tail; guard++) {
        assert_true(guard < 100000);
        struct wire_msg *w = &wire[wire_head++ % WIRE_MAX];
        struct node *to = &nodes[w->to];
        struct pkt *pkt = loop_pkt_get(&to->loop);
        if (!pkt)
            continue;   /* a full pool drops, as a busy receiver would */
        memcpy(pkt->in, w->data, w->len);
        pkt->len = w->len;
        pkt->addr = nodes[w->from].ep;
        pkt->congested = congest_next;
        to->on.udp(to->on.ctx, pkt, w->len, now);
    }
}

/* As pump, but what one node sent another back to back, of one length
 * (the last may be shorter), arrives as one receive: the kernel's UDP GRO,
 * so that a receiver opens them as one batch. */
static void deliver_gro(uint64_t now)
{
    const struct wire_msg *first = &wire[wire_head % WIRE_MAX];
    unsigned from = first->from, to = first->to, n = 0;
    uint32_t seg = first->len, len = 0;
    struct pkt *pkt = loop_pkt_get(&nodes[to].loop);

    if (!pkt) {
        wire_head++;
        return;
    }
    while (wire_head != wire_tail && n < PKT_GSO_MAX_SEGS) {
        const struct wire_msg *w = &wire[wire_head % WIRE_MAX];
        if (w->from != from || w->to != to || w->len > seg || len + w->len > PKT_IN_CAP)
            break;
        memcpy(pkt->in + len, w->data, w->len);
        len += w->len;
        wire_head++;
        n++;
        if (w->len < seg)
            break;
    }
    pkt->len = len;
    pkt->addr = nodes[from].ep;
    pkt->congested = congest_next;
    nodes[to].on.udp(nodes[to].on.ctx, pkt, seg, now);
}

static void pump_gro(uint64_t now)
{
    for (unsigned guard = 0; wire_head != wire_tail; guard++) {
        assert_true(guard < 100000);
        deliver_gro(now);
    }
}

/* Every live node's timers at now, then the network. */
static void tick(uint64_t now)
{
    for (unsigned i = 0; i < n_nodes; i++)
        if (!nodes[i].down)
            nodes[i].on.timers(nodes[i].on.ctx, now);
    pump(now);
}

/* An IPv4/UDP packet of `payload` bytes to node `to` whose source is node
 * `as`'s address, read from ddp0 by `from` (its own address, or another's:
 * the sender does not check, the receiver must). */
static void app_send_ips(unsigned from, const uint8_t src[4], const uint8_t dst[4],
                         size_t payload, uint64_t now);

static void app_send_as(unsigned from, unsigned as, unsigned to, size_t payload, uint64_t now)
{
    uint8_t src[4] = { 10, 77, 0, (uint8_t)(as + 1) }, dst[4] = { 10, 77, 0, (uint8_t)(to + 1) };

    app_send_ips(from, src, dst, payload, now);
}

/* An IPv4/UDP packet of `payload` bytes from src to dst, read from ddp0
 * by node `from`. */
static void app_send_ips(unsigned from, const uint8_t src[4], const uint8_t dst[4],
                         size_t payload, uint64_t now)
{
    struct node *n = &nodes[from];
    struct pkt *pkt = loop_pkt_get(&n->loop);
    uint8_t *ip;
    size_t len = 20 + 8 + payload;

    assert_non_null(pkt);
    memset(pkt->in, 0, OFFLOAD_VNET_HDR_LEN + len);
    ip = pkt->in + OFFLOAD_VNET_HDR_LEN;
    ip[0] = 0x45;
    ip[1] = app_tos;
    ip[2] = (uint8_t)(len >> 8);
    ip[3] = (uint8_t)len;
    ip[8] = 64;
    ip[9] = IPPROTO_UDP;
    memcpy(ip + 12, src, 4);
    memcpy(ip + 16, dst, 4);
    uint32_t sum = 0;
    for (int i = 0; i < 20; i += 2)
        sum += (uint32_t)(ip[i] << 8 | ip[i + 1]);
    while (sum >> 16)
        sum = (sum & 0xffff) + (sum >> 16);
    ip[10] = (uint8_t)(~sum >> 8);
    ip[11] = (uint8_t)~sum;
    ip[20] = 0x9c;   /* ports 40000 -> 5201 */
    ip[21] = 0x40;
    ip[22] = 0x14;
    ip[23] = 0x51;
    ip[24] = (uint8_t)((8 + payload) >> 8);
    ip[25] = (uint8_t)(8 + payload);
    if (app_vnet_set)
        vnet_hdr_write(pkt->in, &app_vnet);
    pkt->len = (uint32_t)(OFFLOAD_VNET_HDR_LEN + len);
    n->on.tun(n->on.ctx, pkt, now);
}

/* An IPv4/UDP packet of `payload` bytes from node `from` to node `to`
 * read from ddp0 by `from`. */
static void app_send(unsigned from, unsigned to, size_t payload, uint64_t now)
{
    app_send_as(from, from, to, payload, now);
}

/* An IPv4/TCP segment (ACK, `payload` bytes at seq) from node `from`'s
 * port sport to node `to`'s port 5201, checksums right, read from ddp0 by
 * `from`: consecutive ones of a flow coalesce at the receiver. */
static void app_send_tcp(unsigned from, unsigned to, uint16_t sport, uint32_t seq,
                         size_t payload, uint64_t now)
{
    struct node *n = &nodes[from];
    struct pkt *pkt = loop_pkt_get(&n->loop);
    size_t len = 20 + 20 + payload;
    uint8_t *ip;

    assert_non_null(pkt);
    memset(pkt->in, 0, OFFLOAD_VNET_HDR_LEN + len);
    ip = pkt->in + OFFLOAD_VNET_HDR_LEN;
    ip[0] = 0x45;
    ip[1] = app_tos;
    put_be16(ip + 2, (uint16_t)len);
    ip[6] = 0x40;   /* DF */
    ip[8] = 64;
    ip[9] = IPPROTO_TCP;
    uint8_t src[4] = { 10, 77, 0, (uint8_t)(from + 1) }, dst[4] = { 10, 77, 0, (uint8_t)(to + 1) };
    memcpy(ip + 12, src, 4);
    memcpy(ip + 16, dst, 4);
    put_be16(ip + 10, (uint16_t)~offload_csum_add(0, ip, 20));
    uint8_t *tcp = ip + 20;
    put_be16(tcp, sport);
    put_be16(tcp + 2, 5201);
    put_be32(tcp + 4, seq);
    put_be32(tcp + 8, 1);
    tcp[12] = 5 << 4;
    tcp[13] = 0x10;   /* ACK */
    put_be16(tcp + 14, 65535);
    for (size_t i = 0; i < payload; i++)
        tcp[20 + i] = (uint8_t)(seq + i);
    uint16_t pseudo = offload_csum_pseudo(ip + 12, ip + 16, 4, IPPROTO_TCP, (uint32_t)(20 + payload));
    put_be16(tcp + 16, (uint16_t)~offload_csum_add(pseudo, tcp, 20 + payload));
    pkt->len = (uint32_t)(OFFLOAD_VNET_HDR_LEN + len);
    n->on.tun(n->on.ctx, pkt, now);
}

/* a -> b: a handshake, then the packet that waited. */
static uint64_t establish(void)
{
    uint64_t now = START_NS + SEC;

    app_send(0, 1, 100, now);
    assert_int_equal(nodes[1].tun_packets, 0);
    pump(now);
    assert_non_null(peer_of(0)->wg.current);
    assert_non_null(peer_of(1)->wg.current ? peer_of(1)->wg.current : peer_of(1)->wg.next);
    assert_int_equal(nodes[1].tun_packets, 1);
    assert_int_equal(nodes[0].initiations, 1);
    return now;
}

/* Issue 62: a read for a peer that cannot be cut (its vnet header asks
 * TCP segmentation of a UDP datagram) is dropped and counted, as every
 * drop is: dropped_unsendable, the metrics' reason "unsendable". */
static void test_uncut_read_counted(void **state)
{
    (void)state;
    uint64_t now = establish();
    unsigned packets = nodes[1].tun_packets;

    app_vnet = (struct vnet_hdr){ .gso_type = VIRTIO_NET_HDR_GSO_TCPV4, .gso_size = 100 };
    app_vnet_set = true;
    app_send(0, 1, 400, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, packets);
    assert_int_equal(nodes[0].dev.stats.dropped_unsendable, 1);
    app_vnet_set = false;
    app_send(0, 1, 400, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, packets + 1);
    assert_int_equal(nodes[0].dev.stats.dropped_unsendable, 1);
}

/* A receive whose socket holds a standing queue (pkt->congested) signals
 * congestion with one of its data packets, once: an ECN-capable one is
 * marked CE (its IPv4 checksum still right) and still delivered, coalesced
 * apart from its unmarked neighbours; one that is not is dropped, counted
 * as queue_delay. A receive without the flag is untouched. */
static void test_congested_receive_marks_or_drops_one(void **state)
{
    (void)state;
    uint64_t now = establish();
    struct device_stats *st = &nodes[1].dev.stats;
    unsigned packets = nodes[1].tun_packets;

    /* Not ECN-capable: one of three dropped. */
    congest_next = true;
    for (unsigned i = 0; i < 3; i++)
        app_send_tcp(0, 1, 40000, 1000 + i * 100, 100, now);
    pump_gro(now);
    assert_int_equal(st->dropped_queue_delay, 1);
    assert_int_equal(st->ecn_marked, 0);
    assert_int_equal(nodes[1].tun_packets, packets + 2);

    /* ECT(0): all three delivered, one of them CE. */
    app_tos = ECN_ECT0;
    packets = nodes[1].tun_packets;
    for (unsigned i = 0; i < 3; i++)
        app_send_tcp(0, 1, 40000, 1300 + i * 100, 100, now);
    pump_gro(now);
    assert_int_equal(st->dropped_queue_delay, 1);
    assert_int_equal(st->ecn_marked, 1);
    assert_int_equal(nodes[1].tun_packets, packets + 3);
    assert_int_equal(nodes[1].ce_packets, 1);
    assert_int_equal(nodes[1].bad_ip_sums, 0);

    /* No standing queue: nothing marked, nothing dropped. */
    congest_next = false;
    packets = nodes[1].tun_packets;
    for (unsigned i = 0; i < 3; i++)
        app_send_tcp(0, 1, 40000, 1600 + i * 100, 100, now);
    pump_gro(now);
    assert_int_equal(st->dropped_queue_delay, 1);
    assert_int_equal(st->ecn_marked, 1);
    assert_int_equal(nodes[1].tun_packets, packets + 3);
    assert_int_equal(nodes[1].ce_packets, 1);
    app_tos = 0;
}

static void test_first_packet_waits_for_the_handshake(void **state)
{
    (void)state;
    uint64_t now = establish();

    /* And back: b's answer goes at once, on the session. */
    app_send(1, 0, 50, now);
    pump(now);
    assert_int_equal(nodes[0].tun_packets, 1);
    assert_int_equal(nodes[1].initiations, 0);
}

/* A registered node states its record on each session (RECORD): the
 * other side keeps its word and asks membership to look again, from its
 * timers (never inside the receive: what membership applies may remove
 * peers). Until
 * membership counts the record, the peer is pending: its data is dropped
 * and its address not routed; once counted, both flow. */
static unsigned records_changed_calls;

static void on_records_changed(struct device *dev, uint64_t now)
{
    (void)dev;
    (void)now;
    records_changed_calls++;
}

static void test_record_stated_on_the_session(void **state)
{
    uint64_t now = START_NS + SEC;
    const uint8_t a_addr[4] = { 10, 77, 0, 1 };

    (void)state;
    records_changed_calls = 0;
    nodes[0].dev.states_record = true;
    memset(nodes[0].dev.self_record, 0x5a, DISCO_RECORD_LEN);
    nodes[1].dev.records_changed = on_records_changed;
    peer_of(1)->member.pending = true;
    assert_int_equal(device_remap(&nodes[1].dev), 0);
    assert_null(device_peer_by_address(&nodes[1].dev, AF_INET, a_addr));
    assert_ptr_equal(device_peer_by_key(&nodes[1].dev, peer_of(1)->public_key), peer_of(1));
    app_send(0, 1, 100, now);
    pump(now);
    assert_non_null(peer_of(0)->wg.current);
    assert_int_equal(nodes[1].tun_packets, 0);          /* pending: its data dropped */
    assert_int_equal(nodes[1].dev.stats.dropped_pending, 1);
    assert_int_equal(peer_of(1)->disco.record_said, PEER_RECORD_DIGEST);
    assert_memory_equal(peer_of(1)->disco.record_digest, nodes[0].dev.self_record,
                        DISCO_RECORD_LEN);
    /* Membership looks from the timers, never inside the receive. */
    assert_int_equal(records_changed_calls, 0);
    tick(now);
    assert_int_equal(records_changed_calls, 1);
    tick(now + SEC);
    assert_int_equal(records_changed_calls, 1);
    assert_true(nodes[1].dev.stats.disco_received[DISCO_RECORD] >= 1);
    /* Node 1 states none: node 0 never asks its membership. */
    assert_int_equal(peer_of(0)->disco.record_said, PEER_RECORD_NOTHING);
    /* Counted: routed and its data taken. */
    peer_of(1)->member.pending = false;
    assert_int_equal(device_remap(&nodes[1].dev), 0);
    assert_ptr_equal(device_peer_by_address(&nodes[1].dev, AF_INET, a_addr), peer_of(1));
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, 1);
    /* A daemon that states no record (FEATURES without the flag): its
     * record is taken as etcd holds it, and membership looks again. */
    struct disco_msg older = { .type = DISCO_FEATURES, .features = DISCO_FEAT_RELAY_FRAMES };
    now += 2 * SEC;
    discovery_receive(peer_of(1), peer_of(1)->wg.current, NULL, NULL, &older, now);
    assert_int_equal(peer_of(1)->disco.record_said, PEER_RECORD_OLDER);
    tick(now);
    assert_int_equal(records_changed_calls, 2);
}

/* Node 0's peer as a registered node with no endpoint: whatever it is
 * known by comes from its record's candidates. */
static struct peer *unlisted_peer(void)
{
    struct peer *p = peer_of(0);

    p->path.endpoint.sa.sa_family = AF_UNSPEC;
    p->member.listed.sa.sa_family = AF_UNSPEC;
    return p;
}

static struct cluster_node record_with(uint32_t ipv4, uint16_t port)
{
    struct cluster_node n = { .n_candidates = 1 };

    n.candidates[0].addr.family = AF_INET;
    uint32_t be = htonl(ipv4);
    memcpy(n.candidates[0].addr.bytes, &be, sizeof(be));
    n.candidates[0].port = port;
    return n;
}

static void test_record_candidate_reaches_a_peer(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    struct peer *p = unlisted_peer();
    struct cluster_node rec = record_with(0xc0000202u, 51820);   /* node 1's */

    /* No endpoint and no candidate: nothing to send to. */
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[0].initiations, 0);
    discovery_node_hints(p, &rec, now);
    for (unsigned i = 0; i < 4 && !nodes[1].tun_packets; i++) {
        now += SEC / 4;
        app_send(0, 1, 100, now);
        tick(now);
    }
    assert_non_null(p->wg.current);
    assert_true(nodes[1].tun_packets >= 1);
    /* The candidate answered: it is the path, and sends to it are free. */
    assert_int_equal(node_of_endpoint(&p->path.endpoint), 1);
}

static void test_record_candidate_never_answering_is_bounded(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    struct peer *p = unlisted_peer();
    struct cluster_node rec = record_with(0xc0000263u, 51820);   /* nobody */

    discovery_node_hints(p, &rec, now);
    /* A minute of packets for it, and every timer. */
    for (unsigned i = 0; i < 240; i++) {
        now += SEC / 4;
        if (i % 4 == 0)
            app_send(0, 1, 100, now);
        tick(now);
    }
    assert_null(p->wg.current);
    /* What one report allows (DISCO_CAND_REPORT_BYTES), not one
     * initiation per punch and retry. */
    assert_true(nodes[0].dev.stats.hint_bytes <= DISCO_CAND_REPORT_BYTES);
    assert_true(nodes[0].initiations * WG_INITIATION_LEN <= DISCO_CAND_REPORT_BYTES);
    assert_true(nodes[0].initiations >= 1);
    assert_true(nodes[0].dev.stats.hint_refused > 0);
}

static void test_down_peer_retries_then_gives_up(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;

    nodes[1].down = true;
    app_send(0, 1, 100, now);
    pump(now);
    for (unsigned s = 0; s < 120; s++)
        tick(now += SEC);
    /* The first initiation and MAX_TIMER_HANDSHAKES + 1 retries (the Linux
     * module's count: "after 20 attempts"), then quiet. */
    assert_int_equal(nodes[0].initiations, WG_MAX_TIMER_HANDSHAKES + 2);
    struct peer *p = peer_of(0);
    assert_true(p->wg.no_answer);
    assert_int_equal(p->wg.staged.packets, 0);
    assert_int_equal(p->wg.timers.retransmit_handshake, 0);
    for (unsigned s = 0; s < 60; s++)
        tick(now += SEC);
    assert_int_equal(nodes[0].initiations, WG_MAX_TIMER_HANDSHAKES + 2);
    /* A new packet is refused at once, with ICMP to the sender. */
    app_send(0, 1, 100, now);
    assert_int_equal(nodes[0].icmp_packets, 1);
    /* Every buffer is back in the pool. */
    pump(now);
    assert_int_equal(nodes[0].loop.pool.n_free, POOL);
}

static void test_rekey_under_traffic_loses_nothing(void **state)
{
    (void)state;
    uint64_t now = establish();
    uint32_t first = peer_of(0)->wg.current->local_index;
    unsigned sent = 1;

    for (unsigned s = 0; s < WG_REKEY_AFTER_TIME + 20; s++) {
        now += SEC;
        app_send(0, 1, 1000, now);
        sent++;
        pump(now);
        tick(now);
    }
    assert_int_not_equal(peer_of(0)->wg.current->local_index, first);
    assert_int_equal(nodes[0].initiations, 2);
    assert_int_equal(nodes[1].tun_packets, sent);
}

/* The peer is switched off after a session: no new session can come, and
 * 3 x REJECT_AFTER_TIME after the last one every key is wiped. (Between
 * two live ddpnet nodes the discovery pings keep the session in use, and
 * it is rekeyed every REKEY_AFTER_TIME instead.) */
static void test_keys_zeroed_without_a_new_session(void **state)
{
    (void)state;
    uint64_t now = establish(), made = now;

    nodes[1].down = true;
    for (; now < made + (3 * WG_REJECT_AFTER_TIME - 10) * SEC; now += 10 * SEC)
        tick(now);
    assert_non_null(peer_of(0)->wg.current);    /* not yet */
    for (; now < made + (3 * WG_REJECT_AFTER_TIME + 30) * SEC; now += 10 * SEC)
        tick(now);
    struct peer *p = peer_of(0);
    assert_null(p->wg.current);
    assert_null(p->wg.previous);
    assert_null(p->wg.next);
    for (size_t k = 0; k < sizeof(p->wg.keypairs) / sizeof(p->wg.keypairs[0]); k++) {
        assert_true(sodium_is_zero(p->wg.keypairs[k].send_key, WG_KEY_LEN));
        assert_true(sodium_is_zero(p->wg.keypairs[k].recv_key, WG_KEY_LEN));
    }
}

/* The side that only receives data answers within KEEPALIVE_TIMEOUT, so
 * the sender learns the session works: its send_keepalive deadline is
 * armed by the data, and by then it has sent an authenticated message (a
 * keepalive, or a disco message that made one unneeded), which disarms it. */
static void test_receiver_answers_within_keepalive_timeout(void **state)
{
    (void)state;
    uint64_t now = establish();
    unsigned before = nodes[1].transports;

    assert_int_equal(peer_of(1)->wg.timers.send_keepalive, now + WG_KEEPALIVE_TIMEOUT * SEC);
    for (unsigned ms = 0; ms <= (WG_KEEPALIVE_TIMEOUT + 1) * 1000; ms += 500)
        tick(now + ms * (SEC / 1000));
    assert_true(nodes[1].transports > before);
    assert_int_equal(peer_of(1)->wg.timers.send_keepalive, 0);
    /* Nothing more came in: no keepalive is owed. */
    before = nodes[1].keepalives;
    for (unsigned s = 0; s < 3 * WG_KEEPALIVE_TIMEOUT; s++)
        tick(now + (WG_KEEPALIVE_TIMEOUT + 2 + s) * SEC);
    assert_int_equal(nodes[1].keepalives, before);
}

/* Two idle ddpnet nodes keep pinging each other and answering, whatever
 * another message left in the buffer messages are built in (a ping that
 * took a PUNCH's key bytes for its padding was too big to go, so pings
 * were never answered in a mesh of three or more); the rekey that pinging
 * brings is taken for what it is, not for a peer come back. */
static void test_idle_pings_answered(void **state)
{
    (void)state;
    uint64_t now = establish(), end = now + (WG_REKEY_AFTER_TIME + 60) * SEC;
    unsigned checked = 0;

    for (; now < end; now += SEC / 2) {
        for (unsigned i = 0; i < n_nodes; i++)
            memset(nodes[i].dev.disco.out_msg, 0xa5, sizeof(*nodes[i].dev.disco.out_msg));
        tick(now);
        if (now < START_NS + 60 * SEC)
            continue;
        for (unsigned i = 0; i < n_nodes; i++) {
            const struct peer *p = peer_of(i);
            uint64_t lately = 2u * (DISCO_PING_INTERVAL_S + discovery_idle_ping_s(p, now)) * SEC;
            assert_true(p->disco.speaks_disco);
            assert_true(p->disco.state.last_pong_ns != 0);
            assert_true(now - p->disco.state.last_pong_ns < lately);
            assert_true(p->disco.state.unanswered < DISCO_PING_UNANSWERED_MAX);
            checked++;
        }
    }
    assert_true(checked > 0);
    /* Rekeyed meanwhile, and each side judged it a rekey: introduced to
     * nobody again (there is nobody to introduce to, but the flag says). */
    assert_true(peer_of(0)->wg.handshakes_completed + peer_of(1)->wg.handshakes_completed >= 3);
    assert_true(peer_of(0)->disco.introduced || !peer_of(0)->disco.speaks_disco);
}

/* A path that carries no data is not confirmed (disco_sched.c: its path MTU
 * confirmation rests while the peer is idle): idle for several
 * confirmation periods, no probe; data again, and the size in use is
 * confirmed within a second (the data armed the peer: timers.c). */
static void test_idle_path_not_confirmed(void **state)
{
    (void)state;
    uint64_t now = establish();
    struct peer *a = peer_of(0);

    /* The search ends (the fake wire carries the full size). */
    for (uint64_t end = now + 5 * SEC; now < end; now += SEC / 10)
        tick(now);
    assert_true(a->path.pmtu.found);
    assert_int_equal(a->path.pmtu.current, a->path.pmtu.max);
    uint64_t id = a->path.pmtu.probe_id;
    for (uint64_t end = now + 5 * PMTU_CONFIRM_SEC * SEC; now < end; now += SEC / 2)
        tick(now);
    assert_true(now < a->path.pmtu.raise_ns);
    assert_true(a->path.pmtu.probe_id == id);
    app_send(0, 1, 100, now);
    uint64_t sent = now;
    for (; now < sent + SEC && a->path.pmtu.probe_id == id; now += SEC / 10)
        tick(now);
    assert_true(a->path.pmtu.probe_id != id);
    for (uint64_t end = now + SEC; now < end; now += SEC / 10)
        tick(now);
    assert_true(a->path.pmtu.found);
    assert_int_equal(a->path.pmtu.current, a->path.pmtu.max);
    assert_false(a->path.pmtu.probe_size);
}

static void test_crossing_initiations_make_one_session(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;

    /* Both start at once; neither initiation has arrived when the other
     * is sent. */
    app_send(0, 1, 100, now);
    app_send(1, 0, 100, now);
    assert_int_equal(nodes[0].initiations, 1);
    assert_int_equal(nodes[1].initiations, 1);
    pump(now);
    for (unsigned s = 0; s < 12; s++)
        tick(now += SEC);
    /* Both waiting packets arrived, and data flows both ways on the
     * session that stood. */
    assert_int_equal(nodes[0].tun_packets, 1);
    assert_int_equal(nodes[1].tun_packets, 1);
    app_send(0, 1, 10, now);
    app_send(1, 0, 10, now);
    pump(now);
    assert_int_equal(nodes[0].tun_packets, 2);
    assert_int_equal(nodes[1].tun_packets, 2);
    assert_true(peer_can_send(peer_of(0), now) && peer_can_send(peer_of(1), now));
    assert_int_equal(peer_of(0)->wg.current->remote_index, peer_of(1)->wg.current->local_index);
}

/* What the engine logs, as the journal would get it: stderr is a scratch
 * file that JOURNAL_STREAM names. Restored before any assert. */
static int log_saved = -1, log_fd = -1;
static char log_text[1 << 16];

static void log_capture_begin(void)
{
    char path[] = "/tmp/test_engine_log.XXXXXX", v[64];
    struct stat st;

    log_fd = mkstemp(path);
    assert_true(log_fd >= 0);
    unlink(path);
    fflush(stderr);
    log_saved = dup(STDERR_FILENO);
    dup2(log_fd, STDERR_FILENO);
    fstat(log_fd, &st);
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
    log_init("test_engine", true, LOG_LVL_INFO);
}

static const char *log_capture_end(void)
{
    ssize_t n;

    dup2(log_saved, STDERR_FILENO);
    close(log_saved);
    unsetenv("JOURNAL_STREAM");
    log_init("test_engine", true, getenv("TEST_ENGINE_DEBUG") ? LOG_LVL_DEBUG : LOG_LVL_WARN);
    n = pread(log_fd, log_text, sizeof(log_text) - 1, 0);
    close(log_fd);
    log_text[n > 0 ? n : 0] = '\0';
    return log_text;
}

static unsigned count_of(const char *text, const char *what)
{
    unsigned n = 0;

    for (const char *at = text; (at = strstr(at, what)); at += strlen(what))
        n++;
    return n;
}

/* A peer that is down and comes back: one warning naming it (not one per
 * round of initiations that traffic towards it starts), then one notice
 * naming it and its path; nothing else at warning or above. */
static void test_peer_events_name_the_peer(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;

    log_capture_begin();
    nodes[1].down = true;
    app_send(0, 1, 100, now);
    pump(now);
    /* The packet waits in vain (10 s), the initiations give up (20 of
     * them), and a packet after starts another round that gives up too. */
    for (unsigned s = 0; s < 240; s++) {
        tick(now += SEC);
        if (s == 119)
            app_send(0, 1, 100, now);   /* refused with ICMP; initiations again */
    }
    nodes[1].down = false;
    app_send(0, 1, 100, now);
    pump(now);
    for (unsigned s = 0; s < WG_REKEY_TIMEOUT + 2; s++)   /* the next retry gets through */
        tick(now += SEC);
    bool up = peer_can_send(peer_of(0), now);
    const char *text = log_capture_end();

    if (!up)
        fail_msg("no session after node 1 came back; the log:\n%s", text);
    if (count_of(text, "<4>peer n1: unreachable: ") != 1 || count_of(text, "<4>") != 1 ||
        count_of(text, "<3>") != 0)
        fail_msg("not one warning naming n1; the log:\n%s", text);
    if (count_of(text, "<5>peer n1: reachable, direct at 192.0.2.2:51820") != 1 ||
        count_of(text, "<5>peer n0: reachable, direct at 192.0.2.1:51820") != 1)
        fail_msg("no notice naming the peer and its path; the log:\n%s", text);
    /* The warning comes first, the notice after: down, then back. */
    assert_true(strstr(text, "<4>peer n1: unreachable") < strstr(text, "<5>peer n1: reachable"));
}

/* With shards (deferred jobs): a small packet too is sealed and opened
 * in a job, after the handlers and outside the engine lock, never in the
 * handler (issue 58: jobs of up to 16 KiB once ran there while none was
 * in flight, holding the lock through the AEAD); and in order: a packet
 * after a job still in flight waits behind it. */
static void test_small_work_deferred_with_shards(void **state)
{
    (void)state;
    uint64_t now = establish();
    unsigned before;

    fake_workers = true;
    app_send(0, 1, 100, now);
    assert_int_equal(fake_jobs_submitted, 1);       /* a job, not sealed here */
    assert_int_equal(wire_tail, wire_head);         /* nothing sent yet */
    finish_jobs(now);
    assert_int_equal(wire_tail - wire_head, 1);     /* sealed and sent by the job */
    before = nodes[1].tun_packets;
    pump(now);
    assert_int_equal(fake_jobs_submitted, 2);       /* opened in a job */
    assert_int_equal(nodes[1].tun_packets, before);
    finish_jobs(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);

    /* 20 of 1000 bytes arrive as one 21 KB receive, opened in one job. */
    for (unsigned i = 0; i < 20; i++)
        app_send(0, 1, 1000, now);
    finish_jobs(now);
    unsigned submitted = fake_jobs_submitted;
    deliver_gro(now);
    assert_int_equal(fake_jobs_submitted, submitted + 1);
    assert_int_equal(fake_jobs_out, 1);
    /* b's answer now must not overtake what the job holds. */
    app_send(1, 0, 100, now);
    assert_int_equal(fake_jobs_submitted, submitted + 2);
    assert_int_equal(wire_tail, wire_head);         /* nothing sent yet */
    finish_jobs(now);
    assert_int_equal(nodes[1].tun_packets, before + 21);
    assert_int_equal(wire_tail - wire_head, 1);
    pump(now);
    finish_jobs(now);
    assert_int_equal(nodes[0].tun_packets, 1);
}

/* A packet read from ddp0 that goes to no peer (here: an address no
 * member holds, answered with an ICMP error) has no answer to wait for:
 * it closes the busy-poll window it opened. One that goes out does not. */
static void test_unsent_read_is_unawaited(void **state)
{
    (void)state;
    uint64_t now = establish();
    unsigned calls = unawaited_calls;

    app_send(0, 1, 100, now);
    assert_int_equal(unawaited_calls, calls);
    app_send(0, 50, 100, now);                      /* 10.77.0.51: nobody */
    assert_int_equal(unawaited_calls, calls + 1);
}

/* With workers, a bulk read from ddp0 leaves the loop uncut: the loop
 * plans the cut (the counters are taken for exactly its segments) and the
 * worker that seals it makes it. The receiver's worker opens them and
 * verifies their checksums; they reach ddp0 as one coalesced write. */
static void test_bulk_read_cut_on_the_worker(void **state)
{
    (void)state;
    uint64_t now = establish();
    const unsigned nseg = 30, gso = 1000;
    unsigned writes = nodes[1].tun_writes, packets = nodes[1].tun_packets;
    uint64_t counter = peer_of(0)->wg.current->send_counter;

    fake_workers = true;
    struct pkt *pkt = loop_pkt_get(&nodes[0].loop);
    assert_non_null(pkt);
    tso_read(pkt, (size_t)nseg * gso, (uint16_t)gso);
    nodes[0].on.tun(nodes[0].on.ctx, pkt, now);
    assert_int_equal(fake_jobs_out, 1);
    assert_ptr_equal(fake_job[0].pkt, pkt);
    assert_true(pkt->cut_pending);                  /* not cut on the loop */
    assert_int_equal(pkt->nseg, nseg);
    assert_int_equal(peer_of(0)->wg.current->send_counter, counter + nseg);
    finish_jobs(now);
    assert_false(pkt->cut_pending);
    deliver_gro(now);
    assert_int_equal(fake_jobs_out, 1);             /* the receive: a worker's too */
    finish_jobs(now);
    assert_int_equal(nodes[1].tun_writes, writes + 1);
    assert_int_equal(nodes[1].tun_packets, packets + nseg);
}

/* Three nodes; the test cuts links itself. */
static int world3_setup(void **state)
{
    n_nodes = 3;
    return world_setup(state);
}

static int world3_teardown(void **state)
{
    int ret = world_teardown(state);

    n_nodes = 2;
    return ret;
}

/* Three nodes, n1 a gateway carrying 192.168.50.0/24. */
static int world_routes_setup(void **state)
{
    n1_routes = "192.168.50.0/24";
    return world3_setup(state);
}

static int world_routes_teardown(void **state)
{
    n1_routes = NULL;
    return world3_teardown(state);
}

/* Node i's peer for node j. */
static struct peer *peer_for(unsigned i, unsigned j)
{
    struct peer *p = device_peer_by_key(&nodes[i].dev, nodes[j].dev.self->public_key);

    assert_non_null(p);
    return p;
}

/* n0 and n1 are kept apart by a firewall, both at the endpoints the
 * cluster lists (so nobody introduces them to each other), and n2, which
 * reaches both, comes up last: n0 must still find n2 as its relay to n1,
 * although no member ever said that it reaches n1. Returns the time when
 * n0 -> n1 is relayed and carries. */
static uint64_t relay_found(void)
{
    uint64_t now = START_NS + SEC, up, end;
    unsigned before;

    cut[0][1] = cut[1][0] = true;
    nodes[2].down = true;
    app_send(0, 1, 100, now);
    for (unsigned i = 0; i < 20; i++)
        tick(now += SEC / 10);
    nodes[2].down = false;
    up = now;
    app_send(2, 0, 100, now);     /* n2's start: a session with each */
    app_send(2, 1, 100, now);
    pump(now);
    assert_non_null(peer_for(2, 0)->wg.current);
    assert_non_null(peer_for(2, 1)->wg.current);
    for (end = up + 15 * SEC; now < end && path_of(peer_for(0, 1)) != DISCO_PATH_RELAY;) {
        now += SEC / 10;
        if ((now - up) % SEC == 0)
            app_send(0, 1, 100, now);   /* as ping does */
        tick(now);
    }
    assert_int_equal(path_of(peer_for(0, 1)), DISCO_PATH_RELAY);
    assert_ptr_equal(peer_for(0, 1)->path.via, peer_for(0, 2));
    /* And it carries: a packet now goes through n2. */
    for (unsigned i = 0; i < 10; i++)
        tick(now += SEC / 10);
    before = nodes[1].tun_packets;
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
    assert_true(nodes[2].dev.stats.relay_forwarded > 0);
    return now;
}

static void test_relay_found_when_none_is_offered(void **state)
{
    (void)state;
    relay_found();
}

/* A relayed stream's messages reach the relay as one receive and leave it
 * as one send, and the receiver opens the inner messages of one receive
 * together: all arrive, in order; the same datagrams again are replays,
 * and none of them reaches ddp0. */
static void test_relayed_receive_opened_as_a_batch(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct wire_msg copy[8];
    unsigned before = nodes[1].tun_packets, n = 0;
    uint64_t forwarded = nodes[2].dev.stats.relay_forwarded;
    uint64_t replays = nodes[1].dev.stats.dropped_replay;

    tick(now += SEC / 10);
    before = nodes[1].tun_packets;
    for (unsigned i = 0; i < 8; i++)
        app_send(0, 1, 1000 + i, now);    /* 1028..1035 bytes: one padded length */
    /* To the relay: 8 messages of one length, one GRO receive there. */
    assert_int_equal(wire_tail - wire_head, 8);
    pump_gro(now);
    assert_int_equal(nodes[2].dev.stats.relay_forwarded, forwarded + 8);
    assert_int_equal(nodes[1].tun_packets, before + 8);
    for (unsigned i = 0; i < 8; i++)
        assert_int_equal(nodes[1].tun_lens[before + i], 20 + 8 + 1000 + i);
    /* The relay's 8 RELAYEDs again, as an attacker on the path would. */
    for (unsigned i = 0; i < 8; i++)
        app_send(0, 1, 1000 + i, now);
    assert_int_equal(wire_tail - wire_head, 8);
    deliver_gro(now);     /* n0 -> n2 only: n2's sends to n1 stay on the wire */
    for (unsigned i = wire_head; i != wire_tail && n < 8; i++)
        if (wire[i % WIRE_MAX].from == 2 && wire[i % WIRE_MAX].to == 1)
            copy[n++] = wire[i % WIRE_MAX];
    assert_int_equal(n, 8);
    before = nodes[1].tun_packets;
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before + 8);
    for (unsigned i = 0; i < n; i++)
        wire[wire_tail++ % WIRE_MAX] = copy[i];
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before + 8);
    assert_true(nodes[1].dev.stats.dropped_replay >= replays + 8);
}

/* The WireGuard message a relay was asked to forward in what it received
 * (relay_in, from `from`): a frame's, or a RELAY's (opened with the relay's
 * keys, m holding it). */
static void forwarded_message(struct peer *from, struct wire_msg *relay_in, struct disco_msg *m,
                              const uint8_t **msg, uint32_t *len)
{
    if (relay_frame_type(get_le32(relay_in->data))) {
        struct relay_frame f;
        assert_int_equal(relay_frame_open(from->wg.current->recv_key, relay_in->data,
                                          relay_in->len, &f), 0);
        assert_int_equal(f.kind, RELAY_FRAME_TO);
        *msg = f.msg;
        *len = f.msg_len;
        return;
    }
    struct transport_packet tp = { .buf = relay_in->data, .cap = relay_in->len,
                                   .len = relay_in->len };
    const uint8_t *src, *dst, *payload;
    size_t plen;
    int family;

    assert_int_equal(transport_decrypt(from->wg.current->recv_key, &tp), 0);
    assert_int_equal(disco_ip_parse(relay_in->data + WG_TRANSPORT_HEADER_LEN, tp.len,
                                    &family, &src, &dst, &payload, &plen), 0);
    assert_int_equal(disco_decode(payload, plen, m), 0);
    assert_int_equal(m->type, DISCO_RELAY);
    *msg = m->relay.msg;
    *len = m->relay.msg_len;
}

/* A relay that sends on, in fresh frames or RELAYEDs of its own, inner
 * messages it passed before (a member replaying what it relays): the
 * receiver's inner replay check drops every one, and what it opened
 * together before them still arrives. */
static void relay_replays_inner_messages(bool frames)
{
    for (unsigned i = 0; i < n_nodes; i++)
        nodes[i].dev.relay_frames_off = !frames;
    uint64_t now = relay_found();
    struct wire_msg relay_in[4];
    struct disco_msg *m = calloc(1, sizeof(*m));
    struct peer *from = peer_for(2, 0), *to = peer_for(2, 1);
    uint64_t replays;
    unsigned before;

    assert_non_null(m);
    tick(now += SEC / 10);
    for (unsigned i = 0; i < 4; i++)
        app_send(0, 1, 500, now);
    assert_int_equal(wire_tail - wire_head, 4);
    for (unsigned i = 0; i < 4; i++) {
        relay_in[i] = wire[(wire_head + i) % WIRE_MAX];
        assert_int_equal(relay_frame_type(get_le32(relay_in[i].data)), frames);
    }
    before = nodes[1].tun_packets;
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before + 4);
    /* The relay opens its copies again (its keys, no replay window) and
     * forwards the same inner messages once more. */
    replays = nodes[1].dev.stats.dropped_replay;
    for (unsigned i = 0; i < 4; i++) {
        const uint8_t *msg;
        uint32_t len;
        forwarded_message(from, &relay_in[i], m, &msg, &len);
        path_forward(&nodes[2].dev, from, to, msg, len, now);
    }
    path_flush(&nodes[2].dev, now);
    before = nodes[1].tun_packets;
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before);
    assert_int_equal(nodes[1].dev.stats.dropped_replay, replays + 4);
    free(m);
}

static void test_relay_replaying_inner_messages(void **state)
{
    (void)state;
    relay_replays_inner_messages(true);
}

static void test_relay_replaying_inner_messages_relayed(void **state)
{
    (void)state;
    relay_replays_inner_messages(false);
}

/* --- relay frames ------------------------------------------------------------------ */

/* Frames each node sealed and opened, its drops of bad packets, and
 * transport messages n0 and n2 sent (a RELAY or RELAYED is one). */
struct frame_counts {
    uint64_t sent[NODES_MAX], received[NODES_MAX], bad[NODES_MAX], relay_msgs, relayed_msgs;
    uint64_t data_sent[NODES_MAX], data_received[NODES_MAX];
};

static void frame_counts(struct frame_counts *c)
{
    for (unsigned i = 0; i < n_nodes; i++) {
        c->sent[i] = nodes[i].dev.stats.relay_frames_sent;
        c->received[i] = nodes[i].dev.stats.relay_frames_received;
        c->data_sent[i] = nodes[i].dev.stats.relay_data_frames_sent;
        c->data_received[i] = nodes[i].dev.stats.relay_data_frames_received;
        c->bad[i] = nodes[i].dev.stats.dropped_bad_packet;
    }
    c->relay_msgs = nodes[0].transports;
    c->relayed_msgs = nodes[2].transports;
}

/* n data messages went on a hop in frames (in_frames) or as transport
 * messages (RELAY, RELAYED): discovery's own messages at the same time
 * may add to either count, never take from it. */
static void hop_carried(uint64_t frames, uint64_t transports, unsigned n, bool in_frames)
{
    assert_true(in_frames ? frames >= n : transports >= n);
    assert_true(in_frames ? transports < n : frames < n);
}

/* n0 -> n2 -> n1 with node `old` (NODES_MAX: none) as a version without
 * frames, or (whole) with frames but no data frames: 8 packets of a stream
 * all arrive; frames go only between two nodes that take them, RELAY and
 * RELAYED where either does not, data frames only between two nodes that
 * take those, and the old node is never sent what it does not take (it
 * would drop it as bad). */
static void relay_between_versions(unsigned old, bool whole)
{
    struct frame_counts a, b;
    unsigned before;
    uint64_t now;

    if (old < NODES_MAX && whole)
        nodes[old].dev.data_frames_off = true;
    else if (old < NODES_MAX)
        nodes[old].dev.relay_frames_off = true;
    now = relay_found();
    tick(now += SEC / 10);
    frame_counts(&a);
    before = nodes[1].tun_packets;
    for (unsigned i = 0; i < 8; i++)
        app_send(0, 1, 1000, now);
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before + 8);
    frame_counts(&b);
    bool old_at_0 = old == 0 || old == 2, old_at_1 = old == 1 || old == 2;
    bool to_relay = whole || !old_at_0, from_relay = whole || !old_at_1;
    hop_carried(b.sent[0] - a.sent[0], b.relay_msgs - a.relay_msgs, 8, to_relay);
    hop_carried(b.sent[2] - a.sent[2], b.relayed_msgs - a.relayed_msgs, 8, from_relay);
    if (to_relay)
        assert_true(b.received[2] - a.received[2] >= 8);
    if (from_relay)
        assert_true(b.received[1] - a.received[1] >= 8);
    /* The data messages went in data frames on each hop between two nodes
     * that take them, and none on the others. */
    if (old_at_0)
        assert_int_equal(b.data_sent[0], a.data_sent[0]);
    else
        assert_true(b.data_sent[0] - a.data_sent[0] >= 8);
    if (old_at_1)
        assert_int_equal(b.data_sent[2], a.data_sent[2]);
    else
        assert_true(b.data_sent[2] - a.data_sent[2] >= 8);
    for (unsigned i = 0; i < n_nodes; i++)
        assert_int_equal(b.bad[i], a.bad[i]);
    if (old < NODES_MAX && whole)
        assert_int_equal(nodes[old].dev.stats.relay_data_frames_received, 0);
    else if (old < NODES_MAX)
        assert_int_equal(nodes[old].dev.stats.relay_frames_received, 0);
}

static void test_relay_frames_all_new(void **state)
{
    (void)state;
    relay_between_versions(NODES_MAX, false);
}

static void test_relay_frames_old_source(void **state)
{
    (void)state;
    relay_between_versions(0, false);
}

static void test_relay_frames_old_destination(void **state)
{
    (void)state;
    relay_between_versions(1, false);
}

static void test_relay_frames_old_relay(void **state)
{
    (void)state;
    relay_between_versions(2, false);
}

static void test_data_frames_old_source(void **state)
{
    (void)state;
    relay_between_versions(0, true);
}

static void test_data_frames_old_destination(void **state)
{
    (void)state;
    relay_between_versions(1, true);
}

static void test_data_frames_old_relay(void **state)
{
    (void)state;
    relay_between_versions(2, true);
}

/* Runs the clock until n0's session with its relay n2 is a new one (a
 * rekey), and a second more for what follows it. */
static uint64_t rekey_with_relay(uint64_t now)
{
    struct peer *r = peer_for(0, 2);
    uint32_t first = r->wg.current->local_index;

    for (unsigned s = 0; s < WG_REJECT_AFTER_TIME && r->wg.current->local_index == first; s++)
        tick(now += SEC);
    assert_int_not_equal(r->wg.current->local_index, first);
    for (unsigned i = 0; i < 10; i++)
        tick(now += SEC / 10);
    return now;
}

/* Four packets n0 -> n1 through the relay, all arriving; the counts
 * before and after them. */
static void relay_four(uint64_t now, struct frame_counts *a, struct frame_counts *b)
{
    unsigned before = nodes[1].tun_packets;

    assert_int_equal(path_of(peer_for(0, 1)), DISCO_PATH_RELAY);
    frame_counts(a);
    for (unsigned i = 0; i < 4; i++)
        app_send(0, 1, 700, now);
    pump_gro(now);
    frame_counts(b);
    assert_int_equal(nodes[1].tun_packets, before + 4);
}

/* Frames are sent on a session only once the peer said, on that
 * session, that it takes them: after the relay stops taking them (as a
 * restart into an older version would), the next session carries RELAYs,
 * and everything arrives. */
static void test_relay_frames_per_session(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct frame_counts a, b;

    assert_true(path_takes_frames(peer_for(0, 2)));
    nodes[2].dev.relay_frames_off = true;
    now = rekey_with_relay(now);
    assert_false(path_takes_frames(peer_for(0, 2)));
    relay_four(now, &a, &b);
    assert_int_equal(b.sent[0], a.sent[0]);     /* none at all: n0's only relay is n2 */
    hop_carried(b.sent[0] - a.sent[0], b.relay_msgs - a.relay_msgs, 4, false);
}

/* Data frames likewise: after the relay stops taking them (a restart
 * into a version before them), the next session carries 0x44 frames, none
 * dropped. */
static void test_data_frames_per_session(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct frame_counts a, b;

    assert_true(peer_for(0, 2)->path.data_frames);
    nodes[2].dev.data_frames_off = true;
    now = rekey_with_relay(now);
    assert_true(path_takes_frames(peer_for(0, 2)));
    assert_false(peer_for(0, 2)->path.data_frames);
    relay_four(now, &a, &b);
    hop_carried(b.sent[0] - a.sent[0], b.relay_msgs - a.relay_msgs, 4, true);
    assert_int_equal(b.data_sent[0], a.data_sent[0]);
    assert_int_equal(b.bad[2], a.bad[2]);
}

/* Frames carry on across a rekey: the new session's FEATURES says so
 * again, and relayed packets after it go in frames. */
static void test_relay_frames_after_rekey(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct peer *r = peer_for(0, 2);
    struct frame_counts a, b;

    assert_true(path_takes_frames(r));
    now = rekey_with_relay(now);
    assert_true(path_takes_frames(r));
    assert_int_equal(r->path.frames_index, r->wg.current->local_index);
    relay_four(now, &a, &b);
    hop_carried(b.sent[0] - a.sent[0], b.relay_msgs - a.relay_msgs, 4, true);
}

/* A frame `from` seals on its session with `to` (kind, key, message), put
 * on the wire as its own. */
static void frame_on_wire(unsigned from, unsigned to, uint8_t kind, const uint8_t key[WG_KEY_LEN],
                          const uint8_t *msg, uint32_t len, uint64_t now)
{
    struct noise_keypair *kp = peer_for(from, to)->wg.current;
    static uint8_t buf[MSG_MAX];
    uint64_t counter;

    assert_int_equal(transport_reserve(kp, 1, now, &counter), 0);
    relay_frame_fill(buf, msg, len, kind, key);
    size_t n = relay_frame_seal(kp->send_key, kp->remote_index, counter, buf, len, false);
    assert_int_not_equal(n, 0);
    wire_put(from, &nodes[to].ep, buf, (uint32_t)n);
}

static void inject_frame(uint8_t kind, const uint8_t key[WG_KEY_LEN], const uint8_t *msg,
                         uint32_t len, uint64_t now)
{
    frame_on_wire(0, 2, kind, key, msg, len, now);
}

/* A receive opened on a worker, n2 -> n0: 20 messages of 1000 bytes. */
static void open_job_at_n0(uint64_t now)
{
    for (unsigned i = 0; i < 20; i++)
        app_send(2, 0, 1000, now);
    finish_jobs(now);   /* n2's seals, jobs too */
    unsigned out = fake_jobs_out;
    deliver_gro(now);
    assert_int_equal(fake_jobs_out, out + 1);
    assert_int_equal(nodes[0].dev.opens_in_flight, 1);
}

/* Frames handled on the loop wait for receives a worker holds (order),
 * not for seals: a relayed stream's sender, its data sealed on workers,
 * handles its ACK frames at once. */
static void test_frames_wait_for_opens_not_seals(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    uint8_t msg[64] = { WG_MSG_TRANSPORT };
    unsigned before = nodes[0].tun_packets;
    uint64_t frames = nodes[0].dev.stats.relay_frames_received;

    tick(now += SEC / 10);
    fake_workers = true;
    open_job_at_n0(now);
    frame_on_wire(2, 0, RELAY_FRAME_FROM, nodes[1].dev.self->public_key, msg, sizeof(msg), now);
    pump(now);
    assert_int_equal(fake_jobs_out, 0);                    /* the open went first */
    assert_int_equal(nodes[0].tun_packets, before + 20);
    assert_int_equal(nodes[0].dev.stats.relay_frames_received, frames + 1);

    open_job_at_n0(now);
    app_send(0, 1, 500, now);                              /* a seal, behind it */
    assert_int_equal(fake_jobs_out, 2);
    finish_first_job(now);
    assert_int_equal(nodes[0].dev.opens_in_flight, 0);
    frame_on_wire(2, 0, RELAY_FRAME_FROM, nodes[1].dev.self->public_key, msg, sizeof(msg), now);
    pump(now);
    assert_int_equal(fake_jobs_out, 1);                    /* the seal still out */
    assert_int_equal(nodes[0].dev.stats.relay_frames_received, frames + 2);
    finish_jobs(now);
    pump(now);
}

/* What a member (n0) may try with frames on its relay (n2): a frame
 * again, one bit changed, one to a key outside the cluster, one whose
 * message is not WireGuard, and one that claims to come from n1. Each is
 * dropped or refused, and nothing of it reaches a ddp0. */
static void test_relay_frames_hostile_member(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct device *relay = &nodes[2].dev;
    struct peer *member = peer_for(2, 0);
    struct wire_msg frame;
    uint8_t stranger[WG_KEY_LEN], msg[64] = { WG_MSG_TRANSPORT };
    uint64_t replays = relay->stats.dropped_replay, bad, refused, forwarded, rx;
    unsigned before1 = nodes[1].tun_packets, before2 = nodes[2].tun_packets;

    tick(now += SEC / 10);
    app_send(0, 1, 300, now);
    assert_int_equal(wire_tail - wire_head, 1);
    frame = wire[wire_head % WIRE_MAX];
    assert_int_equal(get_le32(frame.data), RELAY_FRAME_DATA_TYPE);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, ++before1);
    forwarded = relay->stats.relay_forwarded;
    /* Again: a replay. */
    wire[wire_tail++ % WIRE_MAX] = frame;
    pump(now);
    assert_int_equal(relay->stats.dropped_replay, replays + 1);
    /* One bit of the enclosed message's header changed: not authentic,
     * and no state moves (the member's bytes received stay as they were). */
    bad = relay->stats.dropped_bad_packet;
    rx = member->live.rx_bytes;
    frame.data[WG_TRANSPORT_HEADER_LEN + 4] ^= 0x10;
    wire[wire_tail++ % WIRE_MAX] = frame;
    pump(now);
    assert_int_equal(relay->stats.dropped_bad_packet, bad + 1);
    assert_int_equal(member->live.rx_bytes, rx);
    /* To a key no member has: refused. */
    refused = relay->stats.relay_refused;
    memset(stranger, 0x5a, sizeof(stranger));
    inject_frame(RELAY_FRAME_TO, stranger, msg, WG_TRANSPORT_MIN_LEN, now);
    pump(now);
    assert_int_equal(relay->stats.relay_refused, refused + 1);
    /* Not a WireGuard message (type 9): dropped. */
    bad = relay->stats.dropped_bad_packet;
    msg[0] = 9;
    inject_frame(RELAY_FRAME_TO, nodes[1].dev.self->public_key, msg, sizeof(msg), now);
    pump(now);
    assert_int_equal(relay->stats.dropped_bad_packet, bad + 1);
    /* "From n1", as if n0 were n1's relay: the message must open with n1's
     * keys, and a made-up one does not. */
    msg[0] = WG_MSG_TRANSPORT;
    memcpy(msg + 4, &peer_for(2, 1)->wg.current->local_index, 4);
    bad = relay->stats.dropped_bad_packet;
    inject_frame(RELAY_FRAME_FROM, nodes[1].dev.self->public_key, msg, sizeof(msg), now);
    pump(now);
    assert_int_equal(relay->stats.dropped_bad_packet, bad + 1);
    assert_int_equal(relay->stats.relay_forwarded, forwarded);
    assert_int_equal(nodes[1].tun_packets, before1);
    assert_int_equal(nodes[2].tun_packets, before2);
}

/* A data frame whose enclosed ciphertext was altered on the way to the
 * relay (which its tag does not cover): the relay forwards it, once, and
 * the destination drops it as it would from anyone: nothing reaches a
 * ddp0, and neither peer's state moves for it. */
static void test_data_frame_altered_ciphertext(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct device *relay = &nodes[2].dev, *dest = &nodes[1].dev;
    struct peer *src_at_dest = peer_for(1, 0);
    struct wire_msg frame;
    unsigned before1 = nodes[1].tun_packets;
    uint64_t forwarded = relay->stats.relay_forwarded, bad = dest->stats.dropped_bad_packet;
    uint64_t rx = src_at_dest->live.rx_bytes;

    tick(now += SEC / 10);
    app_send(0, 1, 300, now);
    assert_int_equal(wire_tail - wire_head, 1);
    assert_int_equal(get_le32(wire[wire_head % WIRE_MAX].data), RELAY_FRAME_DATA_TYPE);
    wire[wire_head % WIRE_MAX].data[WG_TRANSPORT_HEADER_LEN * 2 + 40] ^= 0x01;
    frame = wire[wire_head % WIRE_MAX];
    pump(now);
    assert_int_equal(relay->stats.relay_forwarded, forwarded + 1);
    assert_int_equal(dest->stats.dropped_bad_packet, bad + 1);
    assert_int_equal(nodes[1].tun_packets, before1);
    assert_int_equal(src_at_dest->live.rx_bytes, rx);
    /* The same frame again is a replay at the relay: not forwarded twice. */
    wire[wire_tail++ % WIRE_MAX] = frame;
    pump(now);
    assert_int_equal(relay->stats.relay_forwarded, forwarded + 1);
    /* The stream goes on. */
    app_send(0, 1, 300, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before1 + 1);
}

/* --- hostname endpoints, resolved off the loop ----------------------------------- */

/* Lookups for node 0's resolver: "silent.example" never answers (a DNS
 * server that does not) until the test ends; "n1.example" answers node 1's
 * address when the test opens the gate. */
static pthread_mutex_t dns_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t dns_changed = PTHREAD_COND_INITIALIZER;
static unsigned dns_asked;
static bool dns_open, dns_end;

static int gated_lookup(void *ctx, const char *host, union endpoint *out)
{
    bool silent = !strcmp(host, "silent.example");

    (void)ctx;
    pthread_mutex_lock(&dns_lock);
    dns_asked++;
    pthread_cond_broadcast(&dns_changed);
    while (!dns_end && !(dns_open && !silent))
        pthread_cond_wait(&dns_changed, &dns_lock);
    pthread_mutex_unlock(&dns_lock);
    if (silent)
        return EAI_AGAIN;
    out->in4.sin_family = AF_INET;
    out->in4.sin_addr.s_addr = htonl(0xc0000202u);   /* 192.0.2.2: node 1 */
    return 0;
}

static void dns_set(bool *flag)
{
    pthread_mutex_lock(&dns_lock);
    *flag = true;
    pthread_cond_broadcast(&dns_changed);
    pthread_mutex_unlock(&dns_lock);
}

static bool dns_wait_asked(unsigned n)
{
    struct timespec end;
    bool ok = true;

    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += 5;
    pthread_mutex_lock(&dns_lock);
    while (dns_asked < n && ok)
        ok = pthread_cond_timedwait(&dns_changed, &dns_lock, &end) == 0;
    ok = dns_asked >= n;
    pthread_mutex_unlock(&dns_lock);
    return ok;
}

/* The world's cluster file, with node n's endpoint as endpoint[n], and a
 * third node (no device) n2. */
static size_t three_node_text(char *text, size_t cap, const char *const endpoint[3])
{
    char b64[64];
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    size_t len = (size_t)snprintf(text, cap, "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n");

    for (unsigned i = 0; i < 3; i++) {
        memset(priv, (int)(0x41 + i), sizeof(priv));
        crypto_scalarmult_base(pub, priv);
        sodium_bin2base64(b64, sizeof(b64), pub, WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
        len += (size_t)snprintf(text + len, cap - len, "[node n%u]\npublic-key = %s\n"
                                "address = 10.77.0.%u\nendpoint = %s\n", i, b64, i + 1,
                                endpoint[i]);
    }
    return len;
}

static void say_nothing(void *ctx, const char *kind, const char *line)
{
    (void)ctx;
    (void)kind;
    (void)line;
}

static struct peer *peer_named(struct device *dev, const char *name)
{
    const struct cluster_node *n = cluster_find_name(&dev->cluster, name);

    assert_non_null(n);
    return device_peer_by_key(dev, n->public_key);
}

static unsigned endpoint_port(const struct peer *p)
{
    return p->path.endpoint.sa.sa_family == AF_INET ? ntohs(p->path.endpoint.in4.sin_port) : 0;
}

/* A reload names hosts whose lookups do not answer: it returns at once,
 * node 1 keeps its endpoint (and its traffic) until its name answers, the
 * new node has none, and the loop keeps carrying packets both ways
 * meanwhile. When node 1's name answers, the answer is applied with the
 * file's port; the silent one still waits, costing nothing. */
static void test_dns_never_answers_packets_flow(void **state)
{
    (void)state;
    const char *const endpoints[3] = { "192.0.2.1:51820", "n1.example:51821",
                                       "silent.example:51820" };
    struct device *dev = &nodes[0].dev;
    struct resolver *r = resolver_new(gated_lookup, NULL);
    char text[2048];
    size_t len = three_node_text(text, sizeof(text), endpoints);
    uint64_t now = establish();
    unsigned before0 = nodes[0].tun_packets, before1 = nodes[1].tun_packets;

    dns_asked = 0;
    dns_open = dns_end = false;
    assert_non_null(r);
    assert_int_equal(resolver_start(r, RESOLVER_THREADS), 0);
    dev->resolver = r;
    dev->membership->hosts_fd = -1;
    assert_int_equal(members_reload(dev, text, len, say_nothing, NULL, now), 0);
    assert_true(dns_wait_asked(2));          /* both lookups hang now */
    struct peer *p1 = peer_named(dev, "n1"), *p2 = peer_named(dev, "n2");
    assert_non_null(p1);
    assert_non_null(p2);
    assert_int_equal(endpoint_port(p1), 51820);   /* the old one, until the answer */
    assert_int_equal(p2->path.endpoint.sa.sa_family, AF_UNSPEC);
    for (unsigned i = 0; i < 20; i++) {
        now += WG_NSEC_PER_SEC / 100;
        app_send(0, 1, 100, now);
        app_send(1, 0, 100, now);
        tick(now);
    }
    assert_int_equal(nodes[1].tun_packets, before1 + 20);
    assert_int_equal(nodes[0].tun_packets, before0 + 20);
    members_resolved(dev, now);               /* nothing answered: nothing changes */
    assert_int_equal(endpoint_port(p1), 51820);

    dns_set(&dns_open);
    struct pollfd pfd = { .fd = resolver_fd(r), .events = POLLIN };
    assert_int_equal(poll(&pfd, 1, 5000), 1);
    members_resolved(dev, now);
    assert_int_equal(endpoint_port(p1), 51821);
    assert_int_equal(ntohl(p1->path.endpoint.in4.sin_addr.s_addr), 0xc0000202u);
    assert_string_equal(p1->member.resolving, "");
    assert_int_equal(p2->path.endpoint.sa.sa_family, AF_UNSPEC);
    assert_string_equal(p2->member.resolving, "silent.example");

    dev->resolver = NULL;
    resolver_free(r);                         /* with a lookup still hanging */
    dns_set(&dns_end);
    cluster_free(&dev->membership->file);
}

/* Issue 59: node 1 is node 0's registered member, counted (an older
 * daemon: etcd's word taken) with a session up; node 0 runs the file
 * with itself alone and a registry whose lease TTL is 5 s. */
static struct cluster_node *n1_record(const char *address)
{
    struct cluster_node *r = calloc(1, sizeof(*r));

    assert_non_null(r);
    *r = *cluster_find_name(&nodes[0].dev.cluster, "n1");
    if (address)
        assert_int_equal(cluster_addr_parse(address, &r->address), 0);
    return r;
}

static off_t hosts_size(int fd)
{
    struct stat st;

    assert_int_equal(fstat(fd, &st), 0);
    return st.st_size;
}

static char grace_hosts[64];              /* the hosts file's path */

static uint64_t registry_member(struct device *dev, const char *authority, char *err, size_t errlen)
{
    char text[4096], b64[64];
    size_t len;
    uint64_t now = establish();

    sodium_bin2base64(b64, sizeof(b64), dev->self->public_key, WG_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
    len = (size_t)snprintf(text, sizeof(text),
                           "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
                           "registry = etcd://127.0.0.1:9/ddpnet/grace\nregistry-ttl = 5\n%s"
                           "[node n0]\npublic-key = %s\naddress = 10.77.0.1\n"
                           "endpoint = 192.0.2.1:51820\n", authority ? authority : "", b64);
    assert_int_equal(cluster_parse(text, len, &dev->membership->file, NULL), 0);
    dev->cluster.registry = dev->membership->file.registry;   /* as if it had started so */
    assert_non_null(dev->membership->registry = registry_new(&dev->membership->file, err, errlen));
    snprintf(grace_hosts, sizeof(grace_hosts), "/tmp/test_engine_hosts.XXXXXX");
    assert_true((dev->membership->hosts_fd = mkstemp(grace_hosts)) >= 0);
    peer_of(0)->disco.record_said = PEER_RECORD_OLDER;
    assert_int_equal(members_registry(dev, n1_record(NULL), 1, NULL, 1, now), 0);
    assert_int_equal(members_grace_ns(dev), 5 * SEC);
    return now;
}

static void registry_member_end(struct device *dev)
{
    registry_free(dev->membership->registry);
    dev->membership->registry = NULL;
    close(dev->membership->hosts_fd);
    dev->membership->hosts_fd = -1;
    unlink(grace_hosts);
    cluster_free(&dev->membership->file);
}

/* Its record goes (its lease ran out) and comes back within the grace,
 * the same: nothing changes -- the same peer, its session, no hosts
 * write. Gone past the grace: removed, by the loop's timer. */
static void test_registry_grace(void **state)
{
    (void)state;
    struct device *dev = &nodes[0].dev;
    char err[256];
    uint64_t now = registry_member(dev, NULL, err, sizeof(err));
    struct peer *p = peer_of(0);
    const struct noise_keypair *kp = p->wg.current;
    int fd = dev->membership->hosts_fd;

    assert_int_equal(ftruncate(fd, 0), 0);
    now += SEC;
    assert_int_equal(members_registry(dev, NULL, 0, NULL, 2, now), 0);   /* the DELETE */
    assert_ptr_equal(peer_of(0), p);
    assert_ptr_equal(p->wg.current, kp);
    assert_int_equal(members_grace_run(dev, now), now + 5 * SEC);
    now += 2 * SEC;
    assert_int_equal(members_registry(dev, n1_record(NULL), 1, NULL, 3, now), 0);   /* back */
    assert_ptr_equal(peer_of(0), p);
    assert_ptr_equal(p->wg.current, kp);
    assert_int_equal(hosts_size(fd), 0);
    assert_int_equal(members_grace_run(dev, now), UINT64_MAX);
    now += 10 * SEC;                      /* past where the first grace would have ended */
    assert_int_equal(members_grace_run(dev, now), UINT64_MAX);
    assert_ptr_equal(peer_of(0), p);
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(hosts_size(fd), 0);

    /* Gone again, and for good: kept until the grace ends, then removed. */
    assert_int_equal(members_registry(dev, NULL, 0, NULL, 4, now), 0);
    assert_int_equal(members_grace_run(dev, now + 5 * SEC - 1), now + 5 * SEC);
    assert_ptr_equal(peer_of(0), p);
    assert_int_equal(hosts_size(fd), 0);
    assert_int_equal(members_grace_run(dev, now + 5 * SEC), UINT64_MAX);
    assert_int_equal(dev->n_peers, 0);
    assert_null(cluster_find_name(&dev->cluster, "n1"));
    assert_true(hosts_size(fd) > 0);

    registry_member_end(dev);
}

/* Its record comes back within the grace with another address: a
 * change, at once (its holder's word taken). */
static void test_registry_grace_changed(void **state)
{
    (void)state;
    struct device *dev = &nodes[0].dev;
    char err[256], addr[64];
    uint64_t now = registry_member(dev, NULL, err, sizeof(err));

    now += SEC;
    assert_int_equal(members_registry(dev, NULL, 0, NULL, 2, now), 0);
    assert_int_equal(dev->n_peers, 1);
    assert_int_equal(members_registry(dev, n1_record("10.77.0.9"), 1, NULL, 3, now), 0);
    cluster_addr_format(&cluster_find_name(&dev->cluster, "n1")->address, addr, sizeof(addr));
    assert_string_equal(addr, "10.77.0.9");
    assert_int_equal(members_grace_run(dev, now), UINT64_MAX);

    registry_member_end(dev);
}

/* Node 1 leaves with `down`: it says so on its session (a RECORD of
 * zeros) before its lease is revoked, and node 0 removes it at once as
 * its record goes, with no grace. */
static void test_registry_down_no_grace(void **state)
{
    (void)state;
    struct device *dev = &nodes[0].dev;
    char err[256];
    uint64_t now = registry_member(dev, NULL, err, sizeof(err));

    nodes[1].dev.states_record = true;          /* stating its record, as it runs */
    vouch_digest(cluster_find_name(&dev->cluster, "n1"), nodes[1].dev.self_record);
    device_say_leaving(&nodes[1].dev, now);
    pump(now);
    assert_int_equal(peer_of(0)->disco.record_said, PEER_RECORD_DIGEST);
    now += SEC;
    assert_int_equal(members_registry(dev, NULL, 0, NULL, 2, now), 0);
    assert_int_equal(dev->n_peers, 0);
    assert_int_equal(members_grace_run(dev, now), UINT64_MAX);
    registry_member_end(dev);
}

static void member_cert(char *out, const uint8_t sec[CERT_SECRET_LEN], const char *name,
                        const uint8_t key[CERT_PUBKEY_LEN]);
static void revocation_line(char *out, const uint8_t sec[CERT_SECRET_LEN]);

/* With an authority: node 1's certificate revoked removes it at once --
 * its record no longer counts, and no grace keeps it. */
static void test_registry_revoked_no_grace(void **state)
{
    (void)state;
    struct device *dev = &nodes[0].dev;
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN];
    char err[256], line[CERT_TEXT_MAX], key[CERT_KEY_TEXT_LEN + 1], authority[128];
    const char *why;
    struct cert r = { .kind = CERT_REVOCATION, .not_before = (uint64_t)time(NULL) - 60 };

    assert_int_equal(cert_keypair(pub, sec), 0);
    cert_key_format(pub, key);
    snprintf(authority, sizeof(authority), "authority = %s\n", key);
    dev->cluster.has_authority = true;
    memcpy(dev->cluster.authority, pub, sizeof(pub));
    assert_int_equal(members_certs_start(dev), 0);
    member_cert(line, sec, "n1", nodes[1].dev.self->public_key);
    assert_int_equal(members_statement(dev, line, strlen(line), START_NS, &why), CERTS_ADDED);
    uint64_t now = registry_member(dev, authority, err, sizeof(err));
    assert_false(peer_of(0)->member.pending);
    memcpy(r.subject, nodes[1].dev.self->public_key, CERT_PUBKEY_LEN);
    assert_int_equal(cert_sign(&r, sec, line, CERT_TEXT_MAX), 0);
    assert_int_equal(members_statement(dev, line, strlen(line), now, &why), CERTS_REVOKING);
    members_certs_run(dev, now);
    assert_int_equal(dev->n_peers, 0);
    assert_int_equal(members_grace_run(dev, now), UINT64_MAX);
    registry_member_end(dev);
    members_certs_free(dev);
    dev->cluster.has_authority = false;
}

/* --- checks that must not go missing: what a deleted line would let in --- */

/* n0 speaks, on its own session with n1, as another: as n2 (a member) and
 * as an address of the network that no node has. n1 delivers neither and
 * counts both (bad_source); n0's own packets go on. The rule is
 * WireGuard's cryptokey routing: a member speaks for its own address. */
static void test_inner_source_must_be_the_peers(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    uint64_t dropped;
    unsigned before;

    app_send(0, 1, 100, now);
    pump(now);
    before = nodes[1].tun_packets;
    assert_int_equal(before, 1);
    dropped = nodes[1].dev.stats.dropped_source;
    app_send_as(0, 2, 1, 100, now);
    pump(now);
    app_send_as(0, 9, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before);
    assert_int_equal(nodes[1].dev.stats.dropped_source, dropped + 2);
    /* In one receive (a GRO batch) beside its own: only the foreign one goes. */
    for (unsigned i = 0; i < 4; i++)
        app_send_as(0, i == 1 ? 2 : 0, 1, 500, now);
    pump_gro(now);
    assert_int_equal(nodes[1].tun_packets, before + 3);
    assert_int_equal(nodes[1].dev.stats.dropped_source, dropped + 3);
}

/* The rules (issue 61) on node i: one line, or none ("" clears them). */
static void rules_on(unsigned i, const char *line)
{
    struct cluster_rules *r = &nodes[i].dev.cluster.rules;
    char why[200];

    memset(r, 0, sizeof(*r));
    if (*line)
        assert_int_equal(rules_line_parse(r, line, 1, why, sizeof(why)), 0);
    nodes[i].dev.conntrack.gen++;
}

/* The receiver holds the rules alone: n0 has none and sends UDP to n1's
 * port 5201; n1, whose rule is for another port, drops it, counted under
 * rule. With the same rule n0 refuses its own application's packet
 * (ICMP back into its ddp0) and sends nothing; a rule for 5201 lets it
 * through both. */
static void test_rules_enforced(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    unsigned before;

    app_send(0, 1, 100, now);
    pump(now);
    before = nodes[1].tun_packets;
    rules_on(1, "allow any -> any udp 9999");
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before);
    assert_int_equal(nodes[1].dev.stats.dropped_rule, 1);
    rules_on(0, "allow any -> any udp 9999");
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[0].dev.stats.refused_rule, 1);
    assert_int_equal(nodes[1].dev.stats.dropped_rule, 1);     /* nothing was sent */
    rules_on(0, "allow any -> any udp 5201");
    rules_on(1, "allow any -> any udp 5201");
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
    rules_on(0, "");
    rules_on(1, "");
}

/* Routes (issue 60): n1 is granted 192.168.50.0/24. n0's packet to an
 * address in it goes to n1; n1's from an address in it reaches n0, counted
 * on the route; n2, granted nothing, sending from it is refused as any
 * foreign source (bad_source); an address no one is granted goes
 * nowhere. */
static void test_route_to_granted_prefix(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    const uint8_t nas[4] = { 192, 168, 50, 10 }, other[4] = { 192, 168, 51, 10 };
    const uint8_t n0[4] = { 10, 77, 0, 1 };
    struct route_entry *e = device_route_at(&nodes[0].dev, AF_INET, nas);

    assert_non_null(e);
    assert_ptr_equal(e->via, device_peer_by_address(&nodes[0].dev, AF_INET,
                                                    (const uint8_t[]){ 10, 77, 0, 2 }));
    assert_null(device_route_at(&nodes[1].dev, AF_INET, nas)->via);   /* n1's own */
    app_send(0, 1, 100, now);
    app_send(2, 0, 100, now);
    pump(now);
    unsigned at1 = nodes[1].tun_packets, at0 = nodes[0].tun_packets;
    uint64_t dropped = nodes[0].dev.stats.dropped_source;

    app_send_ips(0, n0, nas, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, at1 + 1);
    assert_int_equal(e->packets, 1);
    app_send_ips(1, nas, n0, 100, now);
    pump(now);
    assert_int_equal(nodes[0].tun_packets, at0 + 1);
    assert_int_equal(e->packets, 2);
    assert_int_equal(nodes[0].dev.stats.dropped_source, dropped);
    app_send_ips(2, nas, n0, 100, now);
    pump(now);
    assert_int_equal(nodes[0].tun_packets, at0 + 1);
    assert_int_equal(nodes[0].dev.stats.dropped_source, dropped + 1);
    char *text;
    size_t len;
    assert_int_equal(metrics_format(&nodes[0].dev, &text, &len), 0);
    assert_non_null(strstr(text, "ddpnet_route_packets_total{interface=\"ddp0\","
                                 "route=\"192.168.50.0/24\",carrier=\"n1\"} 2\n"));
    free(text);
    assert_null(device_route_at(&nodes[0].dev, AF_INET, other));
    app_send_ips(0, n0, other, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, at1 + 1);
    assert_int_equal(nodes[2].tun_packets, 0);
}

/* Through a relay: n0, relayed by n2 to n1, claims the relay's address.
 * The message opens with n0's keys, so it is n0's and n2's address is not. */
static void test_inner_source_relayed(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    uint64_t dropped = nodes[1].dev.stats.dropped_source;
    unsigned before = nodes[1].tun_packets;

    tick(now += SEC / 10);
    app_send_as(0, 2, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before);
    assert_int_equal(nodes[1].dev.stats.dropped_source, dropped + 1);
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
}

/* n1's next message to n0, taken off the wire before n0 sees it, and
 * passed on to n0 by n2 as if n2 relayed it (n2 can: it is n1's peer).
 * Returns whether n0 delivered it. */
static bool forwarded_by_n2(uint64_t now)
{
    unsigned before = nodes[0].tun_packets;
    struct wire_msg w;

    app_send(1, 0, 100, now);
    assert_int_equal(wire_tail - wire_head, 1);
    w = wire[wire_head++ % WIRE_MAX];
    assert_int_equal(get_le32(w.data), WG_MSG_TRANSPORT);
    path_forward(&nodes[2].dev, peer_for(2, 1), peer_for(2, 0), w.data, w.len, now);
    path_flush(&nodes[2].dev, now);
    pump(now);
    return nodes[0].tun_packets == before + 1;
}

/* A message of n1 that reaches n0 through n2, which n0 never tried as a
 * relay to n1, moves nothing: n0's path to n1 stays direct, although it
 * heard nothing direct from n1 for longer than DISCO_DIRECT_STALE_S (a
 * member that passes on one message, or claims to relay, proves no path
 * back). Once n0 has n2 on trial, the same proves it. */
static void test_relay_taken_only_after_proof(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;

    app_send(0, 1, 100, now);
    app_send(0, 2, 100, now);
    app_send(2, 1, 100, now);
    pump(now);
    now += (DISCO_DIRECT_STALE_S + 2) * SEC;
    assert_true(forwarded_by_n2(now));
    assert_null(peer_for(0, 1)->path.via);
    disco_relay_trial(&peer_for(0, 1)->disco.relays, peer_for(0, 2)->id, now);
    assert_true(forwarded_by_n2(now));
    assert_ptr_equal(peer_for(0, 1)->path.via, peer_for(0, 2));
}

/* A relay forwards only to a member it reaches directly, with a session:
 * n0 asks n2 (by a frame) to relay to n1, whom n2 never reached. Refused,
 * and n2 sends n1 nothing. */
static void test_relay_refuses_unreached_destination(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    uint8_t msg[64] = { WG_MSG_TRANSPORT };
    uint64_t refused;
    unsigned sent;

    cut[1][2] = cut[2][1] = true;
    app_send(0, 2, 100, now);
    pump(now);
    assert_null(peer_for(2, 1)->wg.current);
    refused = nodes[2].dev.stats.relay_refused;
    sent = nodes[2].transports + nodes[2].initiations;
    inject_frame(RELAY_FRAME_TO, nodes[1].dev.self->public_key, msg, sizeof(msg), now);
    pump(now);
    assert_int_equal(nodes[2].dev.stats.relay_refused, refused + 1);
    assert_int_equal(nodes[2].transports + nodes[2].initiations, sent);
}

/* n2's own next message to n0, taken off the wire before n0 sees it. */
static struct wire_msg own_message_of_n2(uint64_t now)
{
    struct wire_msg w;

    app_send(2, 0, 100, now);
    assert_int_equal(wire_tail - wire_head, 1);
    w = wire[wire_head++ % WIRE_MAX];
    assert_int_equal(get_le32(w.data), WG_MSG_TRANSPORT);
    return w;
}

/* n2 sends n0 its own message wrapped as relayed "from n2", in a disco
 * RELAYED on its session, as a member could: a relay names another
 * member, never itself. Dropped (a bad packet), and not delivered. */
static void test_relayed_from_the_relay_itself(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    struct disco_msg *m = calloc(1, sizeof(*m));
    static uint8_t buf[MSG_MAX];
    uint8_t *ip = buf + WG_TRANSPORT_HEADER_LEN;
    struct wire_msg inner;
    uint64_t bad;
    unsigned before;
    int n;

    assert_non_null(m);
    app_send(2, 0, 100, now);
    pump(now);
    before = nodes[0].tun_packets;
    inner = own_message_of_n2(now);
    m->type = DISCO_RELAYED;
    memcpy(m->relay.key, nodes[2].dev.self->public_key, WG_KEY_LEN);
    m->relay.msg = inner.data;
    m->relay.msg_len = (uint16_t)inner.len;
    n = disco_encode(m, ip + 20, MSG_MAX - WG_TRANSPORT_MIN_LEN - 20 - WG_PADDING_MULTIPLE);
    assert_true(n > 0);
    n = disco_ip_wrap(AF_INET, nodes[2].dev.self->address.bytes, nodes[0].dev.self->address.bytes,
                      ip + 20, (size_t)n, ip, MSG_MAX - WG_TRANSPORT_MIN_LEN - WG_PADDING_MULTIPLE);
    assert_true(n > 0);
    struct transport_packet tp = { .buf = buf, .cap = sizeof(buf), .len = (size_t)n };
    assert_int_equal(transport_seal(peer_for(2, 0)->wg.current, &tp, now), 0);
    bad = nodes[0].dev.stats.dropped_bad_packet;
    wire_put(2, &nodes[0].ep, buf, (uint32_t)tp.len);
    pump(now);
    free(m);
    assert_int_equal(nodes[0].dev.stats.dropped_bad_packet, bad + 1);
    assert_int_equal(nodes[0].tun_packets, before);
}

/* The same in a relay frame (RELAY_FRAME_FROM, n2's own key). */
static void test_frame_from_the_relay_itself(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    struct wire_msg inner;
    uint64_t bad;
    unsigned before;

    app_send(2, 0, 100, now);
    pump(now);
    before = nodes[0].tun_packets;
    inner = own_message_of_n2(now);
    bad = nodes[0].dev.stats.dropped_bad_packet;
    frame_on_wire(2, 0, RELAY_FRAME_FROM, nodes[2].dev.self->public_key, inner.data, inner.len,
                  now);
    pump(now);
    assert_int_equal(nodes[0].dev.stats.dropped_bad_packet, bad + 1);
    assert_int_equal(nodes[0].tun_packets, before);
}

/* 203.0.113.9: an address no node has (someone a lying member would have
 * us flood). */
static const struct disco_endpoint stray_target = {
    .family = DISCO_FAMILY_IPV4, .addr = { 203, 0, 113, 9 }, .port = 51820
};

/* n1, with a session with n0, says n2 (out of n0's reach) is at the
 * stray_target's address, with `credit` at n0 (what n1 sent it) and nothing
 * more heard from n1 after; then n0's schedule runs 5 s. Returns what n0
 * sent to the stray_target. */
static unsigned punch_toward_victim(uint32_t credit)
{
    uint64_t now = START_NS + SEC;
    struct disco_msg *m = calloc(1, sizeof(*m));

    assert_non_null(m);
    cut[0][2] = cut[2][0] = true;
    app_send(0, 1, 100, now);
    pump(now);
    assert_non_null(peer_for(0, 1)->wg.current);
    cut[1][0] = true;
    peer_for(0, 1)->disco.hint_credit = credit;
    m->type = DISCO_PUNCH;
    memcpy(m->punch.key, nodes[2].dev.self->public_key, WG_KEY_LEN);
    m->punch.id = 1;
    m->punch.n_cand = 1;
    m->punch.cand[0] = stray_target;
    discovery_receive(peer_for(0, 1), peer_for(0, 1)->wg.current, &nodes[1].ep, NULL, m, now);
    free(m);
    for (unsigned i = 0; i < 50; i++)
        tick(now += SEC / 10);
    return stray_sends[0];
}

/* A member's word about where another is costs its credit: with none, n0
 * sends the stray_target nothing, and says it refused. */
static void test_hint_without_credit_sends_nothing(void **state)
{
    (void)state;
    assert_int_equal(punch_toward_victim(0), 0);
    assert_int_equal(nodes[0].dev.stats.hint_bytes, 0);
    assert_true(nodes[0].dev.stats.hint_refused > 0);
}

/* The same word with credit is tried: the test above sees sends when
 * there are some. */
static void test_hint_with_credit_is_tried(void **state)
{
    (void)state;
    assert_true(punch_toward_victim(1u << 20) > 0);
    assert_true(nodes[0].dev.stats.hint_bytes > 0);
}

/* n1 tells n0 its local address is the stray_target's, with `credit` at n0
 * and nothing more heard from it; n0 introduces n1 to n2 (n1 is not
 * where the cluster file lists it, as a node that joined through the
 * registry). Whether n2 then knows the stray_target's address as n1's. */
static bool locals_passed_on(uint32_t credit)
{
    uint64_t now = START_NS + SEC;
    struct disco_msg *m = calloc(1, sizeof(*m));
    bool known;

    assert_non_null(m);
    app_send(0, 1, 100, now);
    app_send(0, 2, 100, now);
    pump(now);
    for (unsigned i = 0; i < 10 * (DISCO_ENDPOINTS_MIN_S + 1); i++)
        tick(now += SEC / 10);
    assert_null(disco_cand_get(&peer_for(2, 1)->disco.state, &stray_target));
    cut[1][0] = true;
    peer_for(0, 1)->member.listed.sa.sa_family = AF_UNSPEC;
    peer_for(0, 1)->disco.hint_credit = credit;
    m->type = DISCO_ENDPOINTS;
    m->endpoints.n_local = 1;
    m->endpoints.local[0] = stray_target;
    discovery_receive(peer_for(0, 1), peer_for(0, 1)->wg.current, &nodes[1].ep, NULL, m, now);
    free(m);
    pump(now);
    for (unsigned i = 0; i < 20; i++)
        tick(now += SEC / 10);
    known = disco_cand_get(&peer_for(2, 1)->disco.state, &stray_target) != NULL;
    return known;
}

/* What a member says of its own addresses is passed on only as far as
 * its credit pays for the others' probes (pass_locals). */
static void test_locals_without_credit_not_passed_on(void **state)
{
    (void)state;
    assert_false(locals_passed_on(0));
}

static void test_locals_with_credit_passed_on(void **state)
{
    (void)state;
    assert_true(locals_passed_on(1u << 20));
}

/* n0's first initiation to n1 (not delivered), and the time. */
static uint64_t initiation_of_n0(struct wire_msg *out)
{
    uint64_t now = START_NS + SEC;

    app_send(0, 1, 100, now);
    assert_int_equal(wire_tail - wire_head, 1);
    *out = wire[wire_head % WIRE_MAX];
    assert_int_equal(out->len, WG_INITIATION_LEN);
    return now;
}

/* msg to node `to` as if from node `from`'s address, at once. */
static void inject_udp(unsigned from, unsigned to, const uint8_t *msg, uint32_t len,
                       uint64_t now)
{
    struct node *n = &nodes[to];
    struct pkt *pkt = loop_pkt_get(&n->loop);

    assert_non_null(pkt);
    memcpy(pkt->in, msg, len);
    pkt->len = len;
    pkt->addr = nodes[from].ep;
    n->on.udp(n->on.ctx, pkt, len, now);
}

/* Initiations with a wrong mac1 from a member's address (anyone can
 * spoof it) are dropped before the rate limiter: they spend nothing of
 * that member's allowance, and its real initiation, right after, makes a
 * session. */
static void test_handshake_junk_spends_no_allowance(void **state)
{
    (void)state;
    struct wire_msg init;
    uint64_t now = initiation_of_n0(&init);
    uint8_t junk[WG_INITIATION_LEN];
    struct device_stats *st = &nodes[1].dev.stats;
    uint64_t bad = st->dropped_bad_packet;
    const unsigned n = 4 * RATELIMIT_BURST;

    memcpy(junk, init.data, sizeof(junk));
    junk[WG_INITIATION_LEN - 2 * WG_MAC_LEN] ^= 1;     /* mac1 */
    for (unsigned i = 0; i < n; i++)
        inject_udp(0, 1, junk, sizeof(junk), now);
    assert_int_equal(st->dropped_bad_packet, bad + n);
    assert_int_equal(st->dropped_ratelimited, 0);
    pump(now);
    assert_int_equal(st->dropped_ratelimited, 0);
    assert_int_equal(nodes[1].tun_packets, 1);
}

/* The loop's news of datagrams the kernel dropped at a socket is counted
 * in the device's stats, as the metrics and status read them. */
static void test_socket_drops_counted(void **state)
{
    (void)state;
    struct device_stats *st = &nodes[1].dev.stats;
    uint64_t before = st->dropped_socket_overflow;

    assert_non_null(nodes[1].on.socket_drops);
    nodes[1].on.socket_drops(nodes[1].on.ctx, 40);
    nodes[1].on.socket_drops(nodes[1].on.ctx, 2);
    assert_int_equal(st->dropped_socket_overflow, before + 42);
    assert_int_equal(nodes[0].dev.stats.dropped_socket_overflow, 0);
}

/* Initiations with a valid mac1 (one replayed) from one address faster
 * than the limiter's rate: all but its burst are dropped before any
 * X25519; another member's address is not held back by them. */
static void test_handshake_flood_rate_limited(void **state)
{
    (void)state;
    struct wire_msg init;
    uint64_t now = initiation_of_n0(&init);
    struct device_stats *st = &nodes[1].dev.stats;
    const unsigned n = 4 * RATELIMIT_BURST;

    for (unsigned i = 0; i < n; i++)
        inject_udp(0, 1, init.data, init.len, now);
    assert_int_equal(st->dropped_ratelimited, n - RATELIMIT_BURST);
    /* From n1's own address as a source to n0: a bucket of its own. */
    inject_udp(1, 0, init.data, init.len, now);
    assert_int_equal(nodes[0].dev.stats.dropped_ratelimited, 0);
    wire_head = wire_tail;
}

/* --- spoofed sources ------------------------------------------------------------------
 * A member (whose key was stolen) sends authentic messages with a victim's
 * address as their UDP source. A new source is unproven until it answers
 * a challenge: nothing but the challenge (or the PONG to a PING from
 * there) goes to it, and never more than came from it. */

#define VICTIM_IP 0xcb007107u   /* 203.0.113.7 */

static void victim_set(void)
{
    memset(&victim, 0, sizeof(victim));
    victim.in4.sin_family = AF_INET;
    victim.in4.sin_port = htons(40000);
    victim.in4.sin_addr.s_addr = htonl(VICTIM_IP);
}

static uint64_t victim_total(void)
{
    uint64_t n = 0;

    for (unsigned i = 0; i < NODES_MAX; i++)
        n += victim_bytes[i];
    return n;
}

/* m as `from` would send it to `to`, sealed on from's session: returns
 * the message's length in out. */
static uint32_t forge_disco(unsigned from, unsigned to, const struct disco_msg *m, uint8_t *out,
                            size_t cap, uint64_t now)
{
    uint8_t *ip = out + WG_TRANSPORT_HEADER_LEN;
    size_t room = cap - WG_TRANSPORT_MIN_LEN - WG_PADDING_MULTIPLE;
    struct transport_packet tp = { .buf = out, .cap = cap, .pad_limit = 1420 };
    int n = disco_encode(m, ip + 20, room - 20);

    assert_true(n > 0);
    n = disco_ip_wrap(AF_INET, nodes[from].dev.self->address.bytes,
                      nodes[to].dev.self->address.bytes, ip + 20, (size_t)n, ip, room);
    assert_true(n > 0);
    tp.len = (size_t)n;
    assert_int_equal(transport_seal(peer_for(from, to)->wg.current, &tp, now), 0);
    return (uint32_t)tp.len;
}

/* A datagram that node `to` receives from src. */
static void receive_from(unsigned to, const union endpoint *src, const uint8_t *msg,
                         uint32_t len, uint64_t now)
{
    struct pkt *pkt = loop_pkt_get(&nodes[to].loop);

    assert_non_null(pkt);
    memcpy(pkt->in, msg, len);
    pkt->len = len;
    pkt->addr = *src;
    nodes[to].on.udp(nodes[to].on.ctx, pkt, len, now);
}

/* FEATURES speaks for the session it came on (issue 55): one sealed on a
 * session that a newer handshake has since replaced (a FEATURES delayed
 * past the handshake of a peer that restarted as stock WireGuard) says
 * nothing of the new one, and the new session gets no shard bytes, which
 * stock WireGuard would take for a bad message type. */
static void test_features_bound_to_their_session(void **state)
{
    (void)state;
    uint64_t now = establish();
    struct disco_msg m = { .type = DISCO_FEATURES,
                           .features = DISCO_FEAT_RECORD | DISCO_FEAT_SHARD_HINTS };
    static uint8_t late[MSG_MAX];
    struct peer *p = peer_of(1);
    uint32_t len = forge_disco(0, 1, &m, late, sizeof(late), now);   /* held back */
    struct noise_keypair *old = p->wg.current;

    /* A new session, confirmed on node 1 by data on it (node 0's FEATURES
     * on it says no hints). */
    now += SEC;
    handshake_initiate(peer_of(0), now);
    pump(now);
    app_send(0, 1, 100, now);
    pump(now);
    assert_non_null(p->wg.current);
    assert_ptr_not_equal(p->wg.current, old);
    assert_ptr_equal(p->wg.previous, old);
    /* The held FEATURES arrives, authentic, on the session before. */
    uint64_t said = nodes[1].dev.stats.disco_received[DISCO_FEATURES];
    receive_from(1, &nodes[0].ep, late, len, now);
    assert_int_equal(nodes[1].dev.stats.disco_received[DISCO_FEATURES], said + 1);
    /* Node 1 seals on the new session from shard 3: no shard bytes. */
    fake_shard = 3;
    unsigned tail = wire_tail;
    app_send(1, 0, 100, now);
    fake_shard = 0;
    assert_int_equal(wire_tail, tail + 1);
    const struct wire_msg *w = &wire[tail % WIRE_MAX];
    assert_int_equal(get_le32(w->data), WG_MSG_TRANSPORT);
    assert_int_equal(get_le32(w->data + 4), p->wg.current->remote_index);   /* the new one */
    pump(now);
}

/* Several underlay flows (issue 57; path_flows): with DDPNET_FLOWS=4 at
 * both, FEATURES and a probe from an extra port make each spread; new TCP
 * flows take the flows in turn (their messages' byte 3: 0, 1, 2, 3); a
 * message of an extra flow from another source port is delivered and
 * moves nothing (no endpoint, no challenge: it is not a roam), where one
 * of flow 0 from there is challenged; FEATURES without the flag (a peer
 * that restarted as another version) leave one flow. */
static void test_flows_spread_without_roaming(void **state)
{
    (void)state;
    nodes[0].dev.flow_count = nodes[1].dev.flow_count = 4;
    uint64_t now = establish();
    struct peer *p = peer_of(0);
    union endpoint home = nodes[1].ep;
    unsigned seen = 0, flow = 0, before;
    uint16_t sport;

    for (unsigned i = 0; i < 10; i++)
        tick(now += SEC / 10);
    assert_int_equal(path_flows(peer_of(0)), 4);
    assert_int_equal(path_flows(peer_of(1)), 4);
    for (sport = 1000; sport < 1004; sport++) {
        unsigned tail = wire_tail;
        app_send_tcp(0, 1, sport, 1, 100, now);
        assert_int_equal(wire_tail, tail + 1);
        seen |= 1u << wire[tail % WIRE_MAX].data[WG_FLOW_OFFSET];
        pump(now);
    }
    assert_int_equal(seen, 0xfu);
    /* Node 1 sends from another port, a new flow until one is not 0. */
    nodes[1].ep.in4.sin_port = htons(40001);
    for (sport = 2000; !flow; sport++) {
        unsigned tail = wire_tail;
        before = nodes[0].tun_packets;
        app_send_tcp(1, 0, sport, 1, 100, now);
        flow = wire[tail % WIRE_MAX].data[WG_FLOW_OFFSET];
        pump(now);
        assert_int_equal(nodes[0].tun_packets, before + 1);
        if (!flow)   /* flow 0 from a new port: a roam, to be challenged */
            assert_int_equal(p->path.unproven.src.port, 40001);
        p->path.unproven.src.port = 0;
    }
    assert_true(endpoint_equal(&p->path.endpoint, &home));
    assert_int_equal(p->path.unproven.src.port, 0);
    nodes[1].ep = home;
    /* FEATURES without DISCO_FEAT_FLOWS on the current session: one flow. */
    struct disco_msg m = { .type = DISCO_FEATURES, .features = DISCO_FEAT_RECORD };
    static uint8_t msg[MSG_MAX];
    uint32_t len = forge_disco(1, 0, &m, msg, sizeof(msg), now);
    receive_from(0, &home, msg, len, now);
    assert_int_equal(path_flows(p), 1);
}

/* Where no probe from an extra port gets through (a NAT in front of
 * the peer lets only replies in), neither spreads: one flow each. */
static void test_flows_not_heard_stay_one(void **state)
{
    (void)state;
    nodes[0].dev.flow_count = nodes[1].dev.flow_count = 4;
    extra_flows_cut = true;
    uint64_t now = establish();

    for (unsigned i = 0; i < 10; i++)
        tick(now += SEC / 10);
    extra_flows_cut = false;
    assert_true(peer_of(0)->path.flows_said && peer_of(1)->path.flows_said);
    assert_int_equal(path_flows(peer_of(0)), 1);
    assert_int_equal(path_flows(peer_of(1)), 1);
}

/* Three nodes, each with a direct session with the others, speaking
 * disco, after a few seconds of their schedules. */
static uint64_t mesh3(void)
{
    uint64_t now = START_NS + SEC;

    app_send(0, 1, 100, now);
    app_send(0, 2, 100, now);
    app_send(1, 2, 100, now);
    pump(now);
    for (unsigned i = 0; i < 30; i++)
        tick(now += SEC / 10);
    for (unsigned i = 0; i < 3; i++)
        for (unsigned j = 0; j < 3; j++)
            if (i != j) {
                assert_true(peer_for(i, j)->disco.speaks_disco);
                assert_true(path_direct(peer_for(i, j)));
            }
    return now;
}

/* n1, the member, tells n0 of new local addresses in ENDPOINTS (which
 * made n0 introduce it to n2, at the victim) from the victim's address,
 * five times in 2.5 s; then 10 s pass. The victim gets no more than n1
 * sent (a challenge a second at most), no PUNCH goes out, n2 never sends
 * there, and n0's path to n1 stays where n1 answers. */
static void test_spoofed_endpoints_amplify_nothing(void **state)
{
    (void)state;
    uint64_t now = mesh3();
    struct peer *m = peer_for(0, 1);
    struct disco_msg *msg = calloc(1, sizeof(*msg));
    uint8_t buf[MSG_MAX];
    uint64_t sent = 0, punches = nodes[0].dev.stats.disco_sent[DISCO_PUNCH];

    assert_non_null(msg);
    victim_set();
    for (unsigned k = 0; k < 5; k++) {
        msg->type = DISCO_ENDPOINTS;
        msg->endpoints.n_local = 1;
        msg->endpoints.local[0] = (struct disco_endpoint){
            .family = DISCO_FAMILY_IPV4, .addr = { 10, 9, 0, (uint8_t)(k + 1) }, .port = 51820 };
        uint32_t len = forge_disco(1, 0, msg, buf, sizeof(buf), now);
        receive_from(0, &victim, buf, len, now);
        sent += len;
        pump(now);
        for (unsigned i = 0; i < 5; i++)
            tick(now += SEC / 10);
    }
    /* A challenge a second at most (each paid from what came). */
    assert_true(victim_msgs[0] <= 3);
    for (unsigned i = 0; i < 100; i++)
        tick(now += SEC / 10);
    free(msg);
    print_message("spoofed ENDPOINTS: the victim got %llu bytes in %u datagrams for %llu sent\n",
                  (unsigned long long)victim_total(), victim_msgs[0] + victim_msgs[2],
                  (unsigned long long)sent);
    assert_true(victim_total() <= sent);
    assert_int_equal(victim_bytes[2], 0);      /* n2 never heard of it */
    assert_int_equal(nodes[0].dev.stats.disco_sent[DISCO_PUNCH], punches);
    assert_true(endpoint_equal(&m->path.endpoint, &nodes[1].ep));
    assert_true(m->path.endpoint_proven);
    /* And n1 is still reached. */
    unsigned before = nodes[1].tun_packets;
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
}

/* n0 relays to n1 (through n2); n1, the member, sends n0 a probe PING from
 * the victim's address, as if it had found a direct path there. Answered
 * with a PONG no larger than the PING, and no probe back (which made 2.1x);
 * n0 stays on the relay. */
static void test_spoofed_probe_ping_amplifies_nothing(void **state)
{
    (void)state;
    uint64_t now = relay_found();
    struct disco_msg *msg = calloc(1, sizeof(*msg));
    uint8_t buf[MSG_MAX];
    uint64_t sent = 0;

    assert_non_null(msg);
    victim_set();
    for (unsigned k = 0; k < 5; k++) {
        msg->type = DISCO_PING;
        msg->ping.txid = 0x1234 + k;
        msg->ping.flags = DISCO_PING_F_PROBE;
        uint32_t len = forge_disco(1, 0, msg, buf, sizeof(buf), now);
        receive_from(0, &victim, buf, len, now);
        sent += len;
        pump(now);
        tick(now += SEC / 10);
    }
    for (unsigned i = 0; i < 50; i++)
        tick(now += SEC / 10);
    free(msg);
    print_message("spoofed probe PING: the victim got %llu bytes in %u datagrams for %llu sent\n",
                  (unsigned long long)victim_total(), victim_msgs[0],
                  (unsigned long long)sent);
    assert_true(victim_total() <= sent);
    assert_true(victim_msgs[0] <= 5);
    assert_ptr_equal(peer_for(0, 1)->path.via, peer_for(0, 2));
}

/* A member that really moves (a new NAT mapping) is followed once its new
 * address answers a challenge, and not before. */
static void test_moved_peer_followed_after_challenge(void **state)
{
    (void)state;
    uint64_t now = establish();
    struct peer *p = peer_of(0);
    unsigned before;

    for (unsigned i = 0; i < 30; i++)
        tick(now += SEC / 10);
    assert_true(p->disco.speaks_disco && p->path.endpoint_proven);
    nodes[1].ep.in4.sin_addr.s_addr = htonl(0xc0000263u);   /* 192.0.2.99 */
    nodes[1].ep.in4.sin_port = htons(40001);
    /* One packet from there moves nothing yet: the challenge goes. */
    app_send(1, 0, 100, now);
    pump(now);
    assert_int_equal(ntohl(p->path.endpoint.in4.sin_addr.s_addr), 0xc0000202u);
    assert_int_equal(p->path.unproven.src.port, 40001);
    tick(now += SEC / 10);
    /* n1 answered it from there: the path. */
    assert_true(endpoint_equal(&p->path.endpoint, &nodes[1].ep));
    assert_true(p->path.endpoint_proven);
    before = nodes[1].tun_packets;
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
}

/* The same with no data: n1 only pings (its schedule). Its pings from the
 * new address get a challenge rather than a PONG (a PONG would spend what
 * they paid, and keep n1 content while n0 still sent to the old address),
 * so it is followed within 10 s. */
static void test_moved_idle_peer_followed(void **state)
{
    (void)state;
    uint64_t now = establish();
    struct peer *p = peer_of(0);
    uint64_t end;
    unsigned before;

    for (unsigned i = 0; i < 30; i++)
        tick(now += SEC / 10);
    assert_true(p->disco.speaks_disco && p->path.endpoint_proven);
    nodes[1].ep.in4.sin_addr.s_addr = htonl(0xc0000263u);   /* 192.0.2.99 */
    /* Within a few of its pings (answered by PONGs, it took 30 s: until
     * its ENDPOINTS paid for a challenge). */
    for (end = now + 10 * SEC; now < end && !endpoint_equal(&p->path.endpoint, &nodes[1].ep);)
        tick(now += SEC / 10);
    assert_true(endpoint_equal(&p->path.endpoint, &nodes[1].ep));
    assert_true(p->path.endpoint_proven);
    before = nodes[1].tun_packets;
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].tun_packets, before + 1);
}

/* --- discovery's timers: armed per peer, no sweep ----------------------------------- */

/* Six nodes, each with a session to every other. */
static int world6_setup(void **state)
{
    n_nodes = 6;
    return world_setup(state);
}

static uint64_t mesh_up(void)
{
    uint64_t now = START_NS + SEC;

    for (unsigned i = 0; i < n_nodes; i++)
        for (unsigned j = 0; j < n_nodes; j++)
            if (i != j)
                app_send(i, j, 100, now);
    pump(now);
    for (unsigned j = 1; j < n_nodes; j++)
        assert_non_null(peer_for(0, j)->wg.current);
    return now;
}

/* Node 0's timers at now: asserts that they looked at exactly the peers
 * whose deadline had come (every peer when a device-wide fact woke them). */
static void timers_visit_only_due(uint64_t now)
{
    struct device *dev = &nodes[0].dev;
    uint64_t before = dev->stats.disco_visits, due = 0;
    bool all = dev->disco.wake_all && now >= dev->disco.next_check_ns;

    for (size_t i = 0; i < dev->n_peers; i++)
        due += dev->peers[i]->disco.due_ns <= now;
    nodes[0].on.timers(nodes[0].on.ctx, now);
    if (!all && now >= dev->disco.next_check_ns)
        return;   /* it ran again at once: counted in the next call */
    if (all)
        assert_int_equal(dev->stats.disco_visits - before, dev->n_peers);
    else
        assert_int_equal(dev->stats.disco_visits - before, due);
}

/* Five idle peers, pinged every ten seconds or so: a minute of timer runs
 * every 100 ms looks at each only when it is due -- far fewer looks than
 * a sweep of every peer every second (300) -- and a run between
 * deadlines looks at none. */
static void test_idle_peers_not_swept(void **state)
{
    (void)state;
    uint64_t now = mesh_up(), visits, quiet_runs = 0;
    struct device *dev = &nodes[0].dev;

    for (uint64_t end = now + (DISCO_IDLE_AFTER_S + 10) * SEC; now < end; now += SEC / 10)
        tick(now);
    visits = dev->stats.disco_visits;
    for (uint64_t end = now + 60 * SEC; now < end; now += SEC / 10) {
        uint64_t before = dev->stats.disco_visits;
        for (unsigned i = 1; i < n_nodes; i++)
            nodes[i].on.timers(nodes[i].on.ctx, now);
        timers_visit_only_due(now);
        pump(now);
        quiet_runs += dev->stats.disco_visits == before;
    }
    for (unsigned j = 1; j < n_nodes; j++)
        assert_true(discovery_working(peer_for(0, j), now));
    assert_true(dev->stats.disco_visits - visits < 5 * 60 / 2);
    assert_true(quiet_runs > 400);
}

/* The first tick after a session came up looks at the peer (its path MTU
 * search begins at once), though nothing else was due. */
static void test_session_up_looked_at_at_once(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC;
    struct peer *a;

    /* Every deadline run first, so only the session's arming is left. */
    tick(now);
    tick(now += SEC / 10);
    app_send(0, 1, 100, now);
    pump(now);
    a = peer_of(0);
    assert_non_null(a->wg.current);
    assert_true(a->disco.due_ns <= now);
    uint64_t visits = nodes[0].dev.stats.disco_visits;
    uint64_t pings = nodes[0].dev.stats.disco_sent[DISCO_PING];
    tick(now += SEC / 10);
    assert_true(nodes[0].dev.stats.disco_visits > visits);
    assert_true(nodes[0].dev.stats.disco_sent[DISCO_PING] > pings);   /* an MTU probe */
}

/* The peer stops answering: the instant its session stops working (pings
 * lost, or quiet too long) is a deadline of its own, so the attempt to
 * reach it again begins within one tick of it, not at the next ping. */
static void test_answers_stop_acted_on_when_they_do(void **state)
{
    (void)state;
    uint64_t now = establish(), stopped = 0;
    struct peer *a = peer_of(0);

    struct cluster_node elsewhere = record_with(0xc0000263u, 51820);   /* 192.0.2.99 */

    for (uint64_t end = now + (DISCO_IDLE_AFTER_S + 10) * SEC; now < end; now += SEC / 10)
        tick(now);
    assert_true(discovery_working(a, now));
    /* Somewhere else to try it at: an attempt has a target. */
    elsewhere.has_observed = true;
    elsewhere.observed = elsewhere.candidates[0];
    discovery_node_hints(a, &elsewhere, now);
    assert_true(discovery_has_targets(a));
    nodes[1].down = true;
    for (uint64_t end = now + 120 * SEC; now < end && !a->disco.state.attempt_ns;) {
        now += SEC / 10;
        if (!stopped && !discovery_working(a, now))
            stopped = now;
        tick(now);
    }
    assert_true(stopped != 0);
    assert_true(a->disco.state.attempt_ns != 0);
    assert_true(a->disco.state.attempt_ns <= stopped + SEC / 10);
}

/* The relay stops answering (n2 goes down): the first instant at which
 * either the relay's own session with n0 stops working or n1 stops
 * answering through it (whichever of their pings is lost first) is a
 * deadline, and a relay gone bad wakes the peers it carries: n0 drops it
 * within a tick of that instant, whatever n1's next ping was. */
static void test_relay_lost_dropped_when_it_goes(void **state)
{
    (void)state;
    uint64_t now = relay_found(), bad = 0;
    struct peer *b = peer_for(0, 1), *r = peer_for(0, 2);

    nodes[2].down = true;
    for (uint64_t end = now + 120 * SEC; now < end && b->path.via;) {
        now += SEC / 10;
        if (!bad && (!(path_relay_ready(r, now) && discovery_working(r, now)) ||
                     !discovery_working(b, now)))
            bad = now;
        tick(now);
    }
    assert_true(bad != 0);
    assert_null(b->path.via);
    assert_true(now <= bad + SEC / 10);
}

/* Under an authority only n0 is where the file lists it: n1..n5 join
 * through n0 at once, and n0 introduces each to the others (PUNCH to
 * both). A member that then reaches a newcomer was told of it already:
 * introducing it again, as every member did, cost each member two PUNCH
 * per peer per newcomer (at 128 nodes a storm that held the mesh back for
 * two minutes; issue 59). The mesh forms, n0 alone introduces, and a
 * minute of idle sends no PUNCH. */
static void test_introduced_once_by_who_heard_first(void **state)
{
    (void)state;
    uint64_t now = START_NS + SEC, others = 0, idle;

    for (unsigned i = 0; i < n_nodes; i++)
        for (unsigned j = 1; j < n_nodes; j++)
            if (i != j) {
                peer_for(i, j)->path.endpoint.sa.sa_family = AF_UNSPEC;
                peer_for(i, j)->member.listed.sa.sa_family = AF_UNSPEC;
            }
    for (unsigned j = 1; j < n_nodes; j++)
        app_send(j, 0, 100, now);
    pump(now);
    for (unsigned k = 0; k < 150; k++)
        tick(now += SEC / 10);
    for (unsigned i = 0; i < n_nodes; i++)
        for (unsigned j = 0; j < n_nodes; j++)
            if (i != j)
                assert_non_null(peer_for(i, j)->wg.current);
    for (unsigned i = 1; i < n_nodes; i++)
        others += nodes[i].dev.stats.disco_sent[DISCO_PUNCH];
    print_message("introductions: n0 sent %llu PUNCH, n1..n%u %llu\n",
                  (unsigned long long)nodes[0].dev.stats.disco_sent[DISCO_PUNCH], n_nodes - 1,
                  (unsigned long long)others);
    /* n0: two per pair of newcomers at most. */
    assert_true(nodes[0].dev.stats.disco_sent[DISCO_PUNCH] <= (n_nodes - 1) * (n_nodes - 2));
    assert_int_equal(others, 0);
    idle = others + nodes[0].dev.stats.disco_sent[DISCO_PUNCH];
    for (unsigned k = 0; k < 600; k++)
        tick(now += SEC / 10);
    others = 0;
    for (unsigned i = 0; i < n_nodes; i++)
        others += nodes[i].dev.stats.disco_sent[DISCO_PUNCH];
    assert_int_equal(others, idle);
}

#define T(f) cmocka_unit_test_setup_teardown(f, world_setup, world_teardown)
#define T3(f) cmocka_unit_test_setup_teardown(f, world3_setup, world3_teardown)
#define T6(f) cmocka_unit_test_setup_teardown(f, world6_setup, world3_teardown)

/* --- joining with no server: a stranger on probation (issue 33) ----------------------- */

static unsigned cert_said_calls;
static char cert_said_text[64];
static struct peer *cert_said_from;

static void on_cert_said(struct peer *p, const char *text, size_t len, uint64_t now)
{
    (void)now;
    cert_said_calls++;
    cert_said_from = p;
    snprintf(cert_said_text, sizeof(cert_said_text), "%.*s", (int)len, text);
}

/* Node 1 forgets node 0: node 0's key is a stranger there. */
static void make_stranger(void)
{
    struct device *d = &nodes[1].dev;

    peer_free(d->peers[0]);
    d->n_peers = 0;
    assert_int_equal(device_remap(d), 0);
    cert_said_calls = 0;
    cert_said_from = NULL;
    nodes[0].dev.self_cert = (char *)"ddpnet-member:TEST";
}

/* Without an authority a stranger's initiation gets no answer and makes
 * nothing. */
static void test_stranger_refused_without_authority(void **state)
{
    uint64_t now = START_NS + SEC;

    (void)state;
    make_stranger();
    nodes[1].dev.cert_said = on_cert_said;
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(nodes[1].dev.n_peers, 0);
    assert_int_equal(probation_count(&nodes[1].dev.probation), 0);
    assert_true(nodes[1].dev.stats.dropped_unknown_peer >= 1);
    assert_null(peer_of(0)->wg.current);
    /* Nor with one but no membership to hand a certificate to. */
    nodes[1].dev.cluster.has_authority = true;
    nodes[1].dev.cert_said = NULL;
    app_send(0, 1, 100, now + 6 * SEC);
    pump(now + 6 * SEC);
    assert_int_equal(nodes[1].dev.n_peers, 0);
    nodes[0].dev.self_cert = NULL;
}

/* With an authority: answered by a peer on probation -- pending, no
 * address, its data dropped, its disco refused but CERT, which goes to
 * membership's hook. */
static void test_stranger_on_probation_shows_its_cert(void **state)
{
    uint64_t now = START_NS + SEC;
    const uint8_t a_addr[4] = { 10, 77, 0, 1 };
    struct device *d = &nodes[1].dev;

    (void)state;
    make_stranger();
    d->cluster.has_authority = true;
    d->cert_said = on_cert_said;
    app_send(0, 1, 100, now);
    pump(now);
    assert_non_null(peer_of(0)->wg.current);               /* answered */
    assert_int_equal(d->n_peers, 1);
    struct peer *p = d->peers[0];
    assert_true(p->member.probation);
    assert_true(p->member.pending);
    assert_int_equal(p->member.address.family, AF_UNSPEC);
    assert_true(probation_has(&d->probation, p->public_key));
    assert_null(device_peer_by_address(d, AF_INET, a_addr));   /* nothing routed to it */
    assert_int_equal(nodes[1].tun_packets, 0);                  /* nor from it */
    /* Its certificate, said on the session, handed up as it came. */
    assert_int_equal(cert_said_calls, 1);
    assert_ptr_equal(cert_said_from, p);
    assert_string_equal(cert_said_text, "ddpnet-member:TEST");
    /* Any other disco of a stranger is refused. */
    uint64_t bad = d->stats.disco_bad;
    struct disco_msg m = { .type = DISCO_FEATURES, .features = DISCO_FEAT_RECORD };
    discovery_receive(p, p->wg.current, NULL, NULL, &m, now);
    assert_int_equal(d->stats.disco_bad, bad + 1);
    assert_int_equal(p->disco.record_said, PEER_RECORD_NOTHING);
    /* It hears nothing of the cluster from us (no FEATURES, NAMES,
     * ENDPOINTS), however long the session runs. */
    for (unsigned i = 1; i <= 5; i++) {
        tick(now + i * SEC);
        pump(now + i * SEC);
    }
    for (unsigned t = 0; t < DISCO_TYPE_COUNT; t++)
        if (t != DISCO_CERT)
            assert_int_equal(nodes[0].dev.stats.disco_received[t], 0);
    nodes[0].dev.self_cert = NULL;
}

/* A full probation table: the stranger gets no answer, nothing is made. */
static void test_stranger_refused_when_probation_is_full(void **state)
{
    uint64_t now = START_NS + SEC;
    struct device *d = &nodes[1].dev;
    uint8_t key[PROBATION_KEY_LEN], src[RATELIMIT_KEY_LEN];

    (void)state;
    make_stranger();
    d->cluster.has_authority = true;
    d->cert_said = on_cert_said;
    for (unsigned i = 0; i < PROBATION_MAX; i++) {
        memset(key, (int)i, sizeof(key));
        memset(src, (int)i, sizeof(src));
        assert_int_equal(probation_admit(&d->probation, key, src, now), 0);
    }
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(d->n_peers, 0);
    assert_null(peer_of(0)->wg.current);
    assert_int_equal(cert_said_calls, 0);
    nodes[0].dev.self_cert = NULL;
}

/* Strangers on probation made by hand on node 1 (as handshake.c's
 * probation_join makes them), n of them from n / 2 sources, at now. */
static void strangers_join(struct device *d, unsigned first, unsigned n, uint64_t now)
{
    for (unsigned i = first; i < first + n; i++) {
        struct cluster_node node = { 0 };
        uint8_t src[RATELIMIT_KEY_LEN] = { AF_INET, 203, 0, 113, (uint8_t)(i / 2) };
        struct peer *p;

        snprintf(node.name, sizeof(node.name), "joining-%u", i);
        randombytes_buf(node.public_key, sizeof(node.public_key));
        if (probation_admit(&d->probation, node.public_key, src, now))
            continue;
        assert_non_null(p = peer_create(d, &d->cluster, &node));
        p->member.pending = p->member.probation = true;
        assert_non_null(d->peers = realloc(d->peers, (d->n_peers + 1) * sizeof(*d->peers)));
        d->peers[d->n_peers++] = p;
        assert_int_equal(device_remap(d), 0);
    }
}

/* Node 1 holds an authority: a store for its statements. */
static struct device *authority_node(void)
{
    struct device *d = &nodes[1].dev;

    d->cluster.has_authority = true;
    memset(d->cluster.authority, 0x5a, sizeof(d->cluster.authority));
    d->cert_said = on_cert_said;
    assert_int_equal(members_certs_start(d), 0);
    return d;
}

/* Every peer of d is found by its key, and only those (the map and the
 * array agree; under ASan a freed peer in either is caught here). */
static void peers_consistent(struct device *d)
{
    for (size_t i = 0; i < d->n_peers; i++)
        assert_ptr_equal(device_peer_by_key(d, d->peers[i]->public_key), d->peers[i]);
    for (size_t i = 0; i < PROBATION_MAX; i++)
        if (d->probation.e[i].used)
            assert_non_null(device_peer_by_key(d, d->probation.e[i].key));
}

/* Issue 43: sixteen strangers whose probation ends in one pass are all
 * removed, and no look-up walks one freed (the map was rebuilt only after
 * the loop: a use after free, a crash in release builds). */
static void test_strangers_expire_in_one_pass(void **state)
{
    uint64_t now = START_NS + SEC;
    struct device *d;

    (void)state;
    make_stranger();
    d = authority_node();
    strangers_join(d, 0, PROBATION_MAX, now);
    assert_int_equal(probation_count(&d->probation), PROBATION_MAX);
    assert_int_equal(d->n_peers, PROBATION_MAX);
    members_certs_run(d, now + PROBATION_TIMEOUT_NS);
    assert_int_equal(d->n_peers, 0);
    assert_int_equal(probation_count(&d->probation), 0);
    assert_int_equal(d->probation.expired, PROBATION_MAX);
    peers_consistent(d);
    members_certs_free(d);
    nodes[0].dev.self_cert = NULL;
}

/* The same as a model: random strangers joining, probations ending in
 * one pass or one by one, junk statements said by strangers and by
 * members, node 0 coming and going; after each step the table, the array
 * and the map agree. Seeded, so that a failure repeats. */
static void test_probation_model(void **state)
{
    uint64_t now = START_NS + SEC;
    unsigned seed = 43, next = 0;
    struct device *d;

    (void)state;
    make_stranger();
    d = authority_node();
    for (unsigned step = 0; step < 400; step++) {
        unsigned op = (seed = seed * 1103515245u + 12345u) >> 16;
        switch (op % 5) {
        case 0:
            strangers_join(d, next, 1 + op % 7, now);
            next += 1 + op % 7;
            break;
        case 1:
            now += (op % 4) * SEC;
            break;
        case 2:
            if (d->n_peers)
                members_cert_said(d->peers[op % d->n_peers], "ddpnet-member:junk", 18, now);
            break;
        case 3:
            app_send(0, 1, 100, now);
            pump(now);
            break;
        default:
            now += PROBATION_TIMEOUT_NS;
            break;
        }
        members_certs_run(d, now);
        peers_consistent(d);
        assert_true(probation_count(&d->probation) <= PROBATION_MAX);
    }
    members_certs_run(d, now + PROBATION_TIMEOUT_NS);
    assert_int_equal(probation_count(&d->probation), 0);
    members_certs_free(d);
    nodes[0].dev.self_cert = NULL;
}

/* Issue 43: spoofed sources hold half the table at most. Past
 * PROBATION_PROVEN_FROM a stranger is sent a cookie first: one whose
 * source never answers (the reply lost, as to a spoofed address) takes
 * no slot; one that answers resends at once with the cookie and joins
 * within the round trip, not REKEY_TIMEOUT later. */
static void test_probation_half_full_asks_a_cookie(void **state)
{
    uint64_t now = START_NS + SEC;
    struct device *d;

    (void)state;
    make_stranger();
    d = authority_node();
    strangers_join(d, 0, PROBATION_PROVEN_FROM, now);
    assert_int_equal(probation_count(&d->probation), PROBATION_PROVEN_FROM);
    cut[1][0] = true;                            /* node 0's source does not answer */
    app_send(0, 1, 100, now);
    pump(now);
    assert_int_equal(d->stats.cookies_to_strangers, 1);
    assert_int_equal(probation_count(&d->probation), PROBATION_PROVEN_FROM);
    assert_null(peer_of(0)->wg.current);
    cut[1][0] = false;
    now += 6 * SEC;                               /* the retry, answered now */
    tick(now);
    pump(now);
    assert_int_equal(d->stats.cookies_to_strangers, 2);
    assert_int_equal(probation_count(&d->probation), PROBATION_PROVEN_FROM + 1);
    assert_non_null(peer_of(0)->wg.current);      /* within the round trip */
    members_certs_free(d);
    nodes[0].dev.self_cert = NULL;
}

/* A member's certificate for key, signed by the authority secret sec,
 * valid around the real clock (membership reads it). */
static void member_cert(char *out, const uint8_t sec[CERT_SECRET_LEN], const char *name,
                        const uint8_t key[CERT_PUBKEY_LEN])
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = (uint64_t)time(NULL) - 60,
                      .not_after = (uint64_t)time(NULL) + 3600 };

    memcpy(c.subject, key, CERT_PUBKEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    assert_int_equal(cert_sign(&c, sec, out, CERT_TEXT_MAX), 0);
}

/* Issue 43: a certificate is passed on by the member that heard it from
 * its own key's holder, to each other peer once; one heard from anyone
 * else is taken and passed on to no one, so a certificate costs each node
 * O(1) messages, not one per peer (N^2 in all). */
static void test_cert_passed_on_once(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN], other[CERT_PUBKEY_LEN];
    char own[CERT_TEXT_MAX], passed[CERT_TEXT_MAX];
    uint64_t now = mesh_up();
    struct device *d = &nodes[0].dev;
    uint64_t sent;

    (void)state;
    assert_int_equal(cert_keypair(pub, sec), 0);
    d->cluster.has_authority = true;
    memcpy(d->cluster.authority, pub, sizeof(pub));
    d->cert_said = members_cert_said;
    assert_int_equal(members_certs_start(d), 0);
    member_cert(own, sec, "spot-2", nodes[2].dev.self->public_key);
    randombytes_buf(other, sizeof(other));
    member_cert(passed, sec, "spot-x", other);
    sent = d->stats.disco_sent[DISCO_CERT];
    members_cert_said(peer_for(0, 2), own, strlen(own), now);          /* its holder's */
    assert_int_equal(d->stats.disco_sent[DISCO_CERT], sent + (n_nodes - 2));
    sent = d->stats.disco_sent[DISCO_CERT];
    members_cert_said(peer_for(0, 3), passed, strlen(passed), now);    /* not its holder's */
    assert_non_null(certs_member(d->membership->certs, other));                     /* taken */
    assert_int_equal(d->stats.disco_sent[DISCO_CERT], sent);            /* told no one */
    members_certs_free(d);
    d->cert_said = NULL;
    d->cluster.has_authority = false;
}

/* Issue 43: a member that missed revocations learns them all at its next
 * session. Both hold the latest 8; node 0 also 20 older ones that node 1
 * never heard. Each says its digest (REVOKED) on the session; node 0,
 * hearing one other than its own, says node 1 the 20 in a paced round
 * (a burst, then REVOCATIONS_ROUND_PER_SEC), each verified as signed;
 * after it both digests agree, and a second session says nothing more. */
static void revocation_line(char *out, const uint8_t sec[CERT_SECRET_LEN])
{
    struct cert r = { .kind = CERT_REVOCATION, .not_before = (uint64_t)time(NULL) - 60 };

    randombytes_buf(r.subject, sizeof(r.subject));
    assert_int_equal(cert_sign(&r, sec, out, CERT_TEXT_MAX), 0);
}

static void test_revocations_missed_are_said(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN];
    char line[CERT_TEXT_MAX];
    struct certs_stats st;
    uint64_t now = START_NS + SEC, sent;
    const char *why;

    (void)state;
    assert_int_equal(cert_keypair(pub, sec), 0);
    for (unsigned i = 0; i < 2; i++) {
        struct device *d = &nodes[i].dev;
        d->cluster.has_authority = true;
        memcpy(d->cluster.authority, pub, sizeof(pub));
        d->cert_said = members_cert_said;
        assert_int_equal(members_certs_start(d), 0);
    }
    for (unsigned k = 0; k < 28; k++) {
        revocation_line(line, sec);
        assert_int_equal(members_statement(&nodes[0].dev, line, strlen(line), now, &why),
                         CERTS_REVOKING);
        if (k >= 20)
            assert_int_equal(members_statement(&nodes[1].dev, line, strlen(line), now, &why),
                             CERTS_REVOKING);
    }
    certs_stats(nodes[1].dev.membership->certs, &st);
    assert_int_equal(st.revoked, 8);
    assert_int_equal(nodes[0].dev.revoked_digest.count, 28);
    app_send(0, 1, 100, now);
    pump(now);
    assert_non_null(peer_of(0)->wg.current);
    assert_true(nodes[1].dev.stats.disco_received[DISCO_REVOKED] >= 1);
    assert_true(nodes[0].dev.stats.disco_received[DISCO_REVOKED] >= 1);
    /* Paced: the burst at once, the rest within a second or so. */
    certs_stats(nodes[1].dev.membership->certs, &st);
    assert_int_equal(st.revoked, 8 + REVOCATIONS_ROUND_BURST);
    for (uint64_t t = now; t < now + 2 * SEC; t += SEC / 20) {
        for (unsigned i = 0; i < 2; i++)
            members_certs_run(&nodes[i].dev, t);
        pump(t);
    }
    certs_stats(nodes[1].dev.membership->certs, &st);
    assert_int_equal(st.revoked, 28);
    assert_int_equal(st.invalid, 0);
    assert_int_equal(nodes[1].dev.revoked_digest.count, 28);
    assert_memory_equal(nodes[1].dev.revoked_digest.digest, nodes[0].dev.revoked_digest.digest,
                        DISCO_REVOKED_LEN);
    /* Agreed: a digest heard again begins no round. */
    sent = nodes[0].dev.stats.disco_sent[DISCO_CERT];
    revocations_digest_said(peer_of(0), &nodes[1].dev.revoked_digest, now + 60 * SEC);
    assert_int_equal(nodes[0].dev.stats.disco_sent[DISCO_CERT], sent);
    for (unsigned i = 0; i < 2; i++) {
        members_certs_free(&nodes[i].dev);
        nodes[i].dev.cert_said = NULL;
        nodes[i].dev.cluster.has_authority = false;
    }
}

/* Issue 55: a member held at another address than its own (a certificate
 * only passed on gave its key one; its own fixes another) is still heard
 * saying its certificate, which its session proves; its data from that
 * source, and any other disco, stay dropped. */
static void test_cert_heard_from_another_source(void **state)
{
    uint64_t now = mesh_up();
    struct peer *p = peer_for(0, 1);
    uint64_t dropped = nodes[0].dev.stats.dropped_source;
    unsigned tun = nodes[0].tun_packets;

    (void)state;
    p->member.address.bytes[3] = 99;            /* 10.77.0.99: not node 1's */
    nodes[0].dev.cert_said = on_cert_said;
    cert_said_calls = 0;
    discovery_send_cert(peer_for(1, 0), "ddpnet-member:TEST", 18, now);
    pump(now);
    assert_int_equal(cert_said_calls, 1);
    assert_ptr_equal(cert_said_from, p);
    assert_string_equal(cert_said_text, "ddpnet-member:TEST");
    app_send(1, 0, 100, now);
    pump(now);
    assert_int_equal(nodes[0].tun_packets, tun);
    assert_int_equal(nodes[0].dev.stats.dropped_source, dropped + 1);
    nodes[0].dev.cert_said = NULL;
}

/* A member certificate through a join token (tsec its secret) for key,
 * valid an hour around the real clock. */
static void token_member_cert(char *out, const struct cert *token,
                              const uint8_t tsec[CERT_SECRET_LEN], const char *name,
                              const uint8_t key[CERT_PUBKEY_LEN])
{
    struct cert c = { .kind = CERT_MEMBER, .not_before = (uint64_t)time(NULL) - 60,
                      .not_after = (uint64_t)time(NULL) + 3600 };

    memcpy(c.subject, key, CERT_PUBKEY_LEN);
    snprintf(c.name, sizeof(c.name), "%s", name);
    cert_token_embed(&c, token);
    assert_int_equal(cert_sign(&c, tsec, out, CERT_TEXT_MAX), 0);
}

/* Issue 55: with no registry, a burst node that went away (silent past
 * the bound, 300 s) lets go of its name and its token's place (one): its
 * peer removed, and its next instance (a new key, the same name, the same
 * token) taken; a revocation of a departed machine's key frees them at
 * once. */
static void test_gone_member_let_go(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    uint8_t k1[CERT_PUBKEY_LEN], k2[CERT_PUBKEY_LEN], k3[CERT_PUBKEY_LEN];
    char text[CERT_TEXT_MAX];
    struct cert token = { .kind = CERT_TOKEN, .max_members = 1, .name = "cloud-" };
    struct cert r = { .kind = CERT_REVOCATION, .not_before = 1000 };
    struct device *d = &nodes[1].dev;
    uint64_t now = mesh_up();
    struct peer *p;
    const char *why;

    (void)state;
    assert_int_equal(cert_keypair(pub, sec), 0);
    token.not_before = (uint64_t)time(NULL) - 120;
    token.not_after = (uint64_t)time(NULL) + 7200;
    assert_int_equal(cert_keypair(token.subject, tsec), 0);
    assert_int_equal(cert_sign(&token, sec, text, sizeof(text)), 0);
    make_cluster(&d->membership->file);
    d->cluster.has_authority = d->membership->file.has_authority = true;
    memcpy(d->cluster.authority, pub, sizeof(pub));
    memcpy(d->membership->file.authority, pub, sizeof(pub));
    d->cert_said = members_cert_said;
    assert_int_equal(members_certs_start(d), 0);

    /* cloud-2 joined (its certificate said on its session): a peer. */
    randombytes_buf(k1, sizeof(k1));
    token_member_cert(text, &token, tsec, "cloud-2", k1);
    assert_int_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    members_certs_run(d, now);
    assert_non_null(p = device_peer_by_key(d, k1));
    p->live.last_received_ns = now;
    /* Its next instance: refused while the first was heard lately. */
    randombytes_buf(k2, sizeof(k2));
    token_member_cert(text, &token, tsec, "cloud-2", k2);
    members_certs_run(d, now + 290 * SEC);
    assert_int_not_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                         CERTS_ADDED);
    /* Silent past the bound: let go, peer and all; the new one taken. */
    members_certs_run(d, now + 301 * SEC);
    members_certs_run(d, now + 311 * SEC);
    assert_null(certs_member(d->membership->certs, k1));
    assert_null(device_peer_by_key(d, k1));
    assert_null(cluster_find_name(&d->cluster, "cloud-2"));
    assert_int_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    /* The file's nodes, silent as long, stay. */
    assert_non_null(peer_for(1, 0));

    /* That one departs too and its key is revoked: its name and place
     * free at once for a third. */
    memcpy(r.subject, k2, sizeof(k2));
    assert_int_equal(cert_sign(&r, sec, text, sizeof(text)), 0);
    assert_int_equal(members_statement(d, text, strlen(text), now + 320 * SEC, &why),
                     CERTS_REVOKING);
    randombytes_buf(k3, sizeof(k3));
    token_member_cert(text, &token, tsec, "cloud-2", k3);
    assert_int_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    members_certs_free(d);
    d->cert_said = NULL;
    d->cluster.has_authority = false;
    cluster_free(&d->membership->file);
}

/* Issue 55: a key's certificate replaced by one of another name (the
 * authority's, over what a token's holder signed for that key) renames
 * its peer: the same key is the same machine, whose session and path go
 * on, at the address the new certificate gives. */
static void test_renamed_key_keeps_its_session(void **state)
{
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN], tsec[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX];
    struct cert token = { .kind = CERT_TOKEN, .name = "w-" };
    struct cert c = { .kind = CERT_MEMBER, .name = "gpu0", .has_address = true };
    struct device *d = &nodes[1].dev;
    uint64_t now = mesh_up();
    struct peer *p = peer_for(1, 0);
    unsigned tun = nodes[1].tun_packets;
    const char *why;

    (void)state;
    assert_int_equal(cert_keypair(pub, sec), 0);
    token.not_before = c.not_before = (uint64_t)time(NULL) - 120;
    token.not_after = c.not_after = (uint64_t)time(NULL) + 7200;
    assert_int_equal(cert_keypair(token.subject, tsec), 0);
    assert_int_equal(cert_sign(&token, sec, text, sizeof(text)), 0);
    /* Node 1's file lists itself only: node 0 is a member by certificate. */
    make_cluster(&d->membership->file);
    d->membership->file.nodes[0] = d->membership->file.nodes[1];
    d->membership->file.n_nodes = 1;
    d->cluster.has_authority = d->membership->file.has_authority = true;
    memcpy(d->cluster.authority, pub, sizeof(pub));
    memcpy(d->membership->file.authority, pub, sizeof(pub));
    d->cert_said = members_cert_said;
    assert_int_equal(members_certs_start(d), 0);

    token_member_cert(text, &token, tsec, "w-squat", nodes[0].dev.self->public_key);
    assert_int_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    members_certs_run(d, now);
    assert_ptr_equal(peer_for(1, 0), p);
    assert_string_equal(p->member.name, "w-squat");
    assert_non_null(p->wg.current);
    memcpy(c.subject, nodes[0].dev.self->public_key, CERT_PUBKEY_LEN);
    assert_int_equal(cluster_addr_parse("10.77.0.1", &c.address), 0);
    assert_int_equal(cert_sign(&c, sec, text, sizeof(text)), 0);
    assert_int_equal(certs_offer(d->membership->certs, text, (uint64_t)time(NULL), &why),
                     CERTS_ADDED);
    members_certs_run(d, now + SEC);
    assert_ptr_equal(peer_for(1, 0), p);
    assert_string_equal(p->member.name, "gpu0");
    assert_non_null(p->wg.current);
    app_send(0, 1, 100, now + SEC);
    pump(now + SEC);
    assert_int_equal(nodes[1].tun_packets, tun + 1);     /* from 10.77.0.1: its address */
    members_certs_free(d);
    d->cert_said = NULL;
    d->cluster.has_authority = false;
    cluster_free(&d->membership->file);
}

/* A reload that swaps two nodes' keys: each key's peer is kept (the same
 * key, the same machine) and takes the name and address its key has now. */
static void test_reload_swapped_keys_rename(void **state)
{
    const char *const endpoints[3] = { "192.0.2.1:51820", "192.0.2.2:51820", "192.0.2.3:51820" };
    struct device *dev = &nodes[0].dev;
    char text[2048], *k1, *k2, key1[45], key2[45];
    size_t len = three_node_text(text, sizeof(text), endpoints);
    struct peer *p1 = peer_for(0, 1), *p2 = peer_for(0, 2);
    uint64_t now = START_NS + SEC;

    (void)state;
    k1 = strstr(strstr(text, "[node n1]"), "public-key = ") + 13;
    k2 = strstr(strstr(text, "[node n2]"), "public-key = ") + 13;
    memcpy(key1, k1, 44);
    memcpy(key2, k2, 44);
    memcpy(k1, key2, 44);
    memcpy(k2, key1, 44);
    make_cluster(&dev->membership->file);
    dev->membership->hosts_fd = -1;
    assert_int_equal(members_reload(dev, text, len, say_nothing, NULL, now), 0);
    assert_ptr_equal(peer_for(0, 1), p1);
    assert_ptr_equal(peer_for(0, 2), p2);
    assert_string_equal(p1->member.name, "n2");
    assert_int_equal(p1->member.address.bytes[3], 3);
    assert_string_equal(p2->member.name, "n1");
    assert_int_equal(p2->member.address.bytes[3], 2);
    cluster_free(&dev->membership->file);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_first_packet_waits_for_the_handshake),
        T(test_congested_receive_marks_or_drops_one),
        T(test_uncut_read_counted),
        T(test_record_stated_on_the_session),
        T(test_flows_spread_without_roaming),
        T(test_flows_not_heard_stay_one),
        T(test_features_bound_to_their_session),
        T(test_stranger_refused_without_authority),
        T(test_stranger_on_probation_shows_its_cert),
        T(test_stranger_refused_when_probation_is_full),
        T(test_strangers_expire_in_one_pass),
        T(test_probation_model),
        T(test_probation_half_full_asks_a_cookie),
        T6(test_cert_passed_on_once),
        T(test_revocations_missed_are_said),
        T(test_gone_member_let_go),
        T(test_cert_heard_from_another_source),
        T(test_renamed_key_keeps_its_session),
        T3(test_reload_swapped_keys_rename),
        T(test_record_candidate_reaches_a_peer),
        T(test_record_candidate_never_answering_is_bounded),
        T(test_down_peer_retries_then_gives_up),
        T(test_rekey_under_traffic_loses_nothing),
        T(test_keys_zeroed_without_a_new_session),
        T(test_receiver_answers_within_keepalive_timeout),
        T(test_idle_pings_answered),
        T(test_idle_path_not_confirmed),
        T(test_crossing_initiations_make_one_session),
        T(test_peer_events_name_the_peer),
        T(test_small_work_deferred_with_shards),
        T(test_unsent_read_is_unawaited),
        T(test_bulk_read_cut_on_the_worker),
        T(test_dns_never_answers_packets_flow),
        T(test_registry_grace),
        T(test_registry_grace_changed),
        T(test_registry_down_no_grace),
        T(test_registry_revoked_no_grace),
        T3(test_relay_found_when_none_is_offered),
        T3(test_relayed_receive_opened_as_a_batch),
        T3(test_relay_replaying_inner_messages),
        T3(test_relay_replaying_inner_messages_relayed),
        T3(test_relay_frames_all_new),
        T3(test_relay_frames_old_source),
        T3(test_relay_frames_old_destination),
        T3(test_relay_frames_old_relay),
        T3(test_data_frames_old_source),
        T3(test_data_frames_old_destination),
        T3(test_data_frames_old_relay),
        T3(test_relay_frames_per_session),
        T3(test_data_frames_per_session),
        T3(test_relay_frames_after_rekey),
        T3(test_relay_frames_hostile_member),
        T3(test_data_frame_altered_ciphertext),
        T3(test_frames_wait_for_opens_not_seals),
        /* the checks that must not go missing (tests/mutants.sh) */
        T3(test_inner_source_must_be_the_peers),
        T3(test_inner_source_relayed),
        T3(test_rules_enforced),
        cmocka_unit_test_setup_teardown(test_route_to_granted_prefix, world_routes_setup,
                                        world_routes_teardown),
        T3(test_relay_taken_only_after_proof),
        T3(test_relay_refuses_unreached_destination),
        T3(test_relayed_from_the_relay_itself),
        T3(test_frame_from_the_relay_itself),
        T3(test_hint_without_credit_sends_nothing),
        T3(test_hint_with_credit_is_tried),
        T3(test_locals_without_credit_not_passed_on),
        T3(test_locals_with_credit_passed_on),
        T(test_handshake_junk_spends_no_allowance),
        T(test_handshake_flood_rate_limited),
        T(test_socket_drops_counted),
        T3(test_spoofed_endpoints_amplify_nothing),
        T3(test_spoofed_probe_ping_amplifies_nothing),
        T(test_moved_peer_followed_after_challenge),
        T(test_moved_idle_peer_followed),
        /* discovery's timers */
        T6(test_idle_peers_not_swept),
        T6(test_introduced_once_by_who_heard_first),
        T(test_session_up_looked_at_at_once),
        T(test_answers_stop_acted_on_when_they_do),
        T3(test_relay_lost_dropped_when_it_goes),
    };

    return cmocka_run_group_tests_name("engine", tests, NULL, NULL);
}
