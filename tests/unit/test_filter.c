/* SPDX-License-Identifier: MIT */
/* The rules on the data path (overlay/engine/filter.h) and their
 * connection table (model/conntrack.h): no rule, everything passes; an
 * allowed opening and its replies pass, both ways; what no rule allows is
 * refused at either end; ICMP errors pass for a known connection only;
 * a connection open before the rules is taken up when the rules allow it;
 * a changed rule takes effect on a live connection's next packet; the
 * table full refuses new connections, never a live one; timeouts. */
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "overlay/base/clock.h"
#include "overlay/engine/filter.h"
#include "overlay/engine/model/device.h"

#define C4 "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NODES                                                                   \
    "[node train]\npublic-key = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=\n" \
    "address = 10.77.0.1\ngroups = train\n"                                     \
    "[node spot]\npublic-key = BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA=\n"  \
    "address = 10.77.0.2\ngroups = spot\n"                                      \
    "[node mon]\npublic-key = Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo=\n"   \
    "address = 10.77.0.3\ngroups = monitor\n"
#define RULES                                                                   \
    "[rules]\nallow spot -> train tcp 29400-29600\nallow any -> any icmp\n"     \
    "allow train -> monitor udp 9999\n"

#define SYN 0x02u
#define ACK 0x10u
#define FIN 0x01u
#define S   NS_PER_S

static struct device *dev;
static struct peer *spot, *mon;     /* seen from train, the node we are */

static void load(const char *text)
{
    cluster_free(&dev->cluster);
    assert_int_equal(cluster_parse(text, strlen(text), &dev->cluster, NULL), 0);
    dev->self = &dev->cluster.nodes[0];
    spot->member.groups = dev->cluster.nodes[1].groups;
    mon->member.groups = dev->cluster.nodes[2].groups;
    dev->conntrack.gen++;     /* as device_rules_changed */
}

static int setup(void **state)
{
    (void)state;
    dev = calloc(1, sizeof(*dev));
    spot = calloc(1, sizeof(*spot));
    mon = calloc(1, sizeof(*mon));
    if (!dev || !spot || !mon || conntrack_init(&dev->conntrack))
        return -1;
    /* as device_init: the per-peer bound's count, peers found by id */
    dev->conntrack.released = filter_released;
    dev->conntrack.ctx = dev;
    spot->id = 2, mon->id = 3;
    static struct peer *peers[2];
    peers[0] = spot, peers[1] = mon;
    dev->peers = peers;
    dev->n_peers = 2;
    load(C4 NODES RULES);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    conntrack_free(&dev->conntrack);
    cluster_free(&dev->cluster);
    free(dev);
    free(spot);
    free(mon);
    return 0;
}

static uint8_t pkt[256];

/* An IPv4 packet from 10.77.0.FROM to 10.77.0.TO: its length. */
static uint32_t ip4(unsigned from, unsigned to, uint8_t proto, uint32_t l4_len)
{
    memset(pkt, 0, sizeof(pkt));
    pkt[0] = 0x45;
    pkt[2] = (uint8_t)((20 + l4_len) >> 8);
    pkt[3] = (uint8_t)(20 + l4_len);
    pkt[8] = 64;
    pkt[9] = proto;
    pkt[12] = 10, pkt[13] = 77, pkt[15] = (uint8_t)from;
    pkt[16] = 10, pkt[17] = 77, pkt[19] = (uint8_t)to;
    return 20 + l4_len;
}

static uint32_t tcp(unsigned from, unsigned to, uint16_t sport, uint16_t dport, uint8_t flags)
{
    uint32_t len = ip4(from, to, IPPROTO_TCP, 20);
    pkt[20] = (uint8_t)(sport >> 8), pkt[21] = (uint8_t)sport;
    pkt[22] = (uint8_t)(dport >> 8), pkt[23] = (uint8_t)dport;
    pkt[32] = 0x50;
    pkt[33] = flags;
    return len;
}

static uint32_t udp(unsigned from, unsigned to, uint16_t sport, uint16_t dport)
{
    uint32_t len = ip4(from, to, IPPROTO_UDP, 8);
    pkt[20] = (uint8_t)(sport >> 8), pkt[21] = (uint8_t)sport;
    pkt[22] = (uint8_t)(dport >> 8), pkt[23] = (uint8_t)dport;
    return len;
}

/* 1 ms on, each packet: the table's clock. */
static uint64_t now = 1000 * S;
#define IN(p, len)  filter_in(dev, p, pkt, len, now += NS_PER_MS)
#define OUT(p, len) filter_out(dev, p, pkt, len, now += NS_PER_MS)

static void test_open_without_rules(void **state)
{
    (void)state;
    load(C4 NODES);
    assert_true(IN(spot, tcp(2, 1, 40000, 22, SYN)));
    assert_true(OUT(spot, tcp(1, 2, 40000, 22, SYN)));
    assert_true(IN(spot, udp(2, 1, 1, 2)));
    assert_int_equal(conntrack_count(&dev->conntrack, now), 0);
    load(C4 NODES RULES);
}

static void test_allowed_and_replies(void **state)
{
    (void)state;
    /* spot opens the training port: in, the reply out, and on */
    assert_true(IN(spot, tcp(2, 1, 40001, 29500, SYN)));
    assert_true(OUT(spot, tcp(1, 2, 29500, 40001, SYN | ACK)));
    assert_true(IN(spot, tcp(2, 1, 40001, 29500, ACK)));
    assert_true(OUT(spot, tcp(1, 2, 29500, 40001, ACK)));
    /* ssh and etcd are not for spot; nor may train open spot's ports */
    assert_false(IN(spot, tcp(2, 1, 40002, 22, SYN)));
    assert_false(IN(spot, tcp(2, 1, 40003, 2379, SYN)));
    assert_false(OUT(spot, tcp(1, 2, 40004, 29500, SYN)));
    /* the rule is for tcp */
    assert_false(IN(spot, udp(2, 1, 5000, 29500)));
    /* ours: train reaches the monitor's udp 9999, the reply comes back */
    assert_true(OUT(mon, udp(1, 3, 5001, 9999)));
    assert_true(IN(mon, udp(3, 1, 9999, 5001)));
    assert_false(IN(mon, udp(3, 1, 9999, 5002)));
    /* pings both ways; an echo reply of no echo is refused */
    ip4(2, 1, IPPROTO_ICMP, 8);
    pkt[20] = 8, pkt[25] = 7;
    assert_true(IN(spot, 28));
    ip4(1, 2, IPPROTO_ICMP, 8);
    pkt[20] = 0, pkt[25] = 7;
    assert_true(OUT(spot, 28));
    pkt[25] = 8;
    assert_false(OUT(spot, 28));
}

/* An ICMP error passes when it quotes a connection we know. */
static void test_icmp_errors(void **state)
{
    (void)state;
    uint8_t quoted[28];

    assert_true(OUT(mon, udp(1, 3, 5100, 9999)));
    memcpy(quoted, pkt, sizeof(quoted));
    uint32_t len = ip4(3, 1, IPPROTO_ICMP, 8 + sizeof(quoted));
    pkt[20] = 3, pkt[21] = 3;   /* port unreachable */
    memcpy(pkt + 28, quoted, sizeof(quoted));
    assert_true(IN(mon, len));
    pkt[28 + 20 + 1] = 0x77;    /* another source port: no such connection */
    assert_false(IN(mon, len));
    /* ours about spot's refused packet: nothing known, refused too */
    udp(2, 1, 5200, 22);
    memcpy(quoted, pkt, sizeof(quoted));
    len = ip4(1, 2, IPPROTO_ICMP, 8 + sizeof(quoted));
    pkt[20] = 3, pkt[21] = 3;
    memcpy(pkt + 28, quoted, sizeof(quoted));
    assert_false(OUT(spot, len));
}

/* A connection open before the rules (no SYN seen) is taken up only
 * where a rule would let its opener open it. */
static void test_loose_pickup(void **state)
{
    (void)state;
    assert_true(OUT(spot, tcp(1, 2, 29501, 41000, ACK)));       /* train's reply */
    assert_true(IN(spot, tcp(2, 1, 41000, 29501, ACK)));
    assert_false(IN(spot, tcp(2, 1, 41001, 22, ACK)));
    assert_false(OUT(spot, tcp(1, 2, 22, 41001, ACK)));
    assert_false(OUT(spot, tcp(1, 2, 29501, 41002, SYN)));      /* a SYN opens */
}

/* The rule of a live connection is removed: its next packet is refused,
 * either way, and it stays refused; another rule's connection goes on. */
static void test_reload_removes(void **state)
{
    (void)state;
    assert_true(IN(spot, tcp(2, 1, 42000, 29500, SYN)));
    assert_true(OUT(spot, tcp(1, 2, 29500, 42000, SYN | ACK)));
    assert_true(OUT(mon, udp(1, 3, 5300, 9999)));
    load(C4 NODES "[rules]\nallow train -> monitor udp 9999\n");
    assert_false(OUT(spot, tcp(1, 2, 29500, 42000, ACK)));
    assert_false(IN(spot, tcp(2, 1, 42000, 29500, ACK)));
    assert_true(IN(mon, udp(3, 1, 9999, 5300)));
    /* the rule back: a connection that lasted (seen before) passes again,
     * taken up as any other */
    load(C4 NODES RULES);
    assert_true(IN(spot, tcp(2, 1, 42000, 29500, ACK)));
}

static void test_full_table(void **state)
{
    (void)state;
    struct conntrack t;
    struct conntrack_key k = { .family = 2, .proto = IPPROTO_UDP, .remote_port = 9 };
    uint64_t at = 5000 * S;
    unsigned made = 0;

    assert_int_equal(conntrack_init(&t), 0);
    for (unsigned i = 0; i < 4 * CONNTRACK_SLOTS; i++) {
        k.local_port = (uint16_t)i;
        k.remote[0] = (uint8_t)(i >> 16);
        struct conntrack_entry *e = conntrack_add(&t, &k, 0, at);
        if (e) {
            e->replied = 1;
            made++;
        }
    }
    /* never more than the slots; full counted; every live one still found */
    assert_true(made <= CONNTRACK_SLOTS);
    assert_true(made > CONNTRACK_SLOTS * 9 / 10);
    assert_int_equal(t.full, 4 * CONNTRACK_SLOTS - made);
    assert_int_equal(conntrack_count(&t, at), made);
    unsigned found = 0;
    for (unsigned i = 0; i < 4 * CONNTRACK_SLOTS; i++) {
        k.local_port = (uint16_t)i;
        k.remote[0] = (uint8_t)(i >> 16);
        found += conntrack_find(&t, &k, at + 179 * S) != NULL;
    }
    assert_int_equal(found, made);
    /* idle past UDP's time: gone, and new ones fit */
    assert_int_equal(conntrack_count(&t, at + 2 * CONNTRACK_UDP_S * S), 0);
    k.local_port = 1;
    k.remote[0] = 200;
    assert_non_null(conntrack_add(&t, &k, 0, at + 2 * CONNTRACK_UDP_S * S));
    conntrack_free(&t);
}

/* One member opening without end (allowed openings it never lets be
 * answered) cannot take the table from the others: it is held to its
 * bound (conntrack.h), and a second member's new connections still get
 * in; its openings expired, it may open again. */
static void test_peer_bound(void **state)
{
    (void)state;
    unsigned made = 0, others = 0;

    /* an empty table: what the tests before left counts for nobody */
    for (unsigned i = 0; i < CONNTRACK_SLOTS; i++)
        conntrack_forget(&dev->conntrack, &dev->conntrack.slot[i]);
    assert_int_equal(spot->live.conns, 0);
    /* within a second: none of them expires meanwhile */
    for (unsigned i = 0; i < 2 * 16384; i++) {
        uint32_t len = tcp(2, 1, (uint16_t)(1024 + i), (uint16_t)(29400 + i % 200), SYN);
        made += filter_in(dev, spot, pkt, len, now);
    }
    for (unsigned i = 0; i < 16; i++) {
        ip4(3, 1, IPPROTO_ICMP, 8);
        pkt[20] = 8, pkt[25] = (uint8_t)i;
        others += filter_in(dev, mon, pkt, 28, now);
    }
    assert_int_equal(others, 16);
    assert_int_equal(made, CONNTRACK_PER_PEER);
    assert_int_equal(spot->live.conns, CONNTRACK_PER_PEER);
    assert_int_equal(dev->conntrack.peer_full, 2 * 16384 - CONNTRACK_PER_PEER);
    /* its openings unanswered past CONNTRACK_OPENING_S: swept at the
     * bound, the count falls, new ones fit */
    now += (CONNTRACK_OPENING_S + 1) * S;
    assert_true(IN(spot, tcp(2, 1, 60000, 29500, SYN)));
    assert_int_equal(spot->live.conns, 1);
    /* a second sweep within the second is not made: bounded work */
    assert_false(conntrack_sweep(&dev->conntrack, now));
}

static void test_timeouts(void **state)
{
    (void)state;
    struct conntrack_entry e = { .key.proto = IPPROTO_TCP };

    assert_int_equal(conntrack_idle_ns(&e), CONNTRACK_OPENING_S * S);
    e.replied = 1;
    assert_int_equal(conntrack_idle_ns(&e), CONNTRACK_TCP_S * S);
    e.closing = 1;
    assert_int_equal(conntrack_idle_ns(&e), CONNTRACK_TCP_CLOSING_S * S);
    e.key.proto = IPPROTO_UDP;
    assert_int_equal(conntrack_idle_ns(&e), CONNTRACK_UDP_S * S);
    e.key.proto = IPPROTO_ICMP;
    assert_int_equal(conntrack_idle_ns(&e), CONNTRACK_ICMP_S * S);

    /* through the filter: an opening no one answers lasts 30 s ... */
    assert_true(OUT(mon, udp(1, 3, 5400, 9999)));
    now += (CONNTRACK_OPENING_S + 1) * S;
    assert_false(IN(mon, udp(3, 1, 9999, 5400)));
    /* ... an answered one UDP's time after its last packet */
    assert_true(OUT(mon, udp(1, 3, 5401, 9999)));
    assert_true(IN(mon, udp(3, 1, 9999, 5401)));
    now += (CONNTRACK_UDP_S - 1) * S;
    assert_true(IN(mon, udp(3, 1, 9999, 5401)));
    now += (CONNTRACK_UDP_S + 1) * S;
    assert_false(IN(mon, udp(3, 1, 9999, 5401)));
    /* a FIN makes a TCP connection short-lived: spot's SYN from the same
     * port would be a new opening, so the entry's life is read directly */
    assert_true(IN(spot, tcp(2, 1, 43001, 29500, SYN)));
    assert_true(OUT(spot, tcp(1, 2, 29500, 43001, SYN | ACK)));
    unsigned before = conntrack_count(&dev->conntrack, now);
    assert_true(IN(spot, tcp(2, 1, 43001, 29500, ACK | FIN)));
    assert_int_equal(conntrack_count(&dev->conntrack, now + (CONNTRACK_TCP_CLOSING_S + 1) * S),
                     before - 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_open_without_rules),
        cmocka_unit_test(test_allowed_and_replies),
        cmocka_unit_test(test_icmp_errors),
        cmocka_unit_test(test_loose_pickup),
        cmocka_unit_test(test_reload_removes),
        cmocka_unit_test(test_full_table),
        cmocka_unit_test(test_peer_bound),
        cmocka_unit_test(test_timeouts),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
