/* SPDX-License-Identifier: MIT */
/* Tests of the disco codec (overlay/disco/disco_msg.c): round trips of every type
 * at its smallest and largest, golden bytes typed in from the layout in
 * disco_msg.h, every truncation, every header byte changed, counts over the
 * maxima, bad endpoints and flags, enclosed messages that are not
 * WireGuard, buffers too small, the inner IPv4/IPv6 packet (checksum checked
 * by a second, independent sum) and the sockaddr conversions. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/un.h>

#include <cmocka.h>
#include <sodium.h>

#include "overlay/disco/disco_msg.h"
#include "tests/unit/alloc_count.h"
#include "tests/unit/vectors.h"

#define KEY_00_1F "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_20_3F "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
#define KEY_55    "5555555555555555555555555555555555555555555555555555555555555555"
/* A keepalive-sized transport message: type 4, receiver 0x01020304,
 * counter 7, a tag of 0xee. */
#define TRANSPORT_32 "04000000" "01020304" "0000000000000007" "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

/* Golden messages, one per type, typed from the layout in disco_msg.h. */
static const char *const golden_ping =
    "44445044" "01" "03" "0009"         /* magic, version, PING, body 9 */
    "0102030405060708" "5a";            /* txid, flags */
static const char *const golden_pong =
    "44445044" "01" "04" "0010"         /* PONG, body 16 */
    "1122334455667788" "01"             /* txid, flags: source follows */
    "04" "c0000201" "ca6c";             /* 192.0.2.1:51820 */
static const char *const golden_punch =
    "44445044" "01" "02" "003c"         /* PUNCH, body 60 */
    KEY_00_1F "deadbeef00000001" "01"   /* key, punch id, one candidate */
    "06" "20010db8000000000000000000000001" "01bb";   /* [2001:db8::1]:443 */
static const char *const golden_endpoints =
    "44445044" "01" "01" "003b"         /* ENDPOINTS, body 59 */
    "01" "04" "c6336407" "9c40"         /* observed 198.51.100.7:40000 */
    "01" "04" "ac1f0105" "ca6c"         /* one local: 172.31.1.5:51820 */
    "0001"                              /* one peer record */
    KEY_20_3F "03"                      /* key, observed + direct */
    "04" "cb007109" "0400" "00";        /* 203.0.113.9:1024, no locals */
static const char *const golden_relay =
    "44445044" "01" "05" "0040" KEY_55 TRANSPORT_32;
static const char *const golden_relayed =
    "44445044" "01" "06" "0040" KEY_55 TRANSPORT_32;

static uint8_t buf[DISCO_MAX_LEN + 64];
static uint8_t buf2[DISCO_MAX_LEN + 64];
static struct disco_msg msg_a, msg_b;

/* --- helpers ----------------------------------------------------------------- */

static struct disco_endpoint ep4(uint8_t a, uint8_t b, uint8_t c, uint8_t d, uint16_t port)
{
    struct disco_endpoint e = { .family = DISCO_FAMILY_IPV4, .addr = { a, b, c, d }, .port = port };
    return e;
}

/* 2001:db8::tag:i, never zero, never v4-mapped. */
static struct disco_endpoint ep6(uint8_t tag, uint8_t i, uint16_t port)
{
    struct disco_endpoint e = { .family = DISCO_FAMILY_IPV6, .port = port };
    e.addr[0] = 0x20; e.addr[1] = 0x01; e.addr[2] = 0x0d; e.addr[3] = 0xb8;
    e.addr[14] = tag;
    e.addr[15] = i;
    return e;
}

static void assert_ep_equal(const struct disco_endpoint *a, const struct disco_endpoint *b)
{
    assert_int_equal(a->family, b->family);
    assert_int_equal(a->port, b->port);
    assert_memory_equal(a->addr, b->addr, a->family == DISCO_FAMILY_IPV4 ? 4 : 16);
}

static void assert_list_equal(const struct disco_endpoint *a, const struct disco_endpoint *b,
                              unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        assert_ep_equal(&a[i], &b[i]);
}

static void assert_peer_equal(const struct disco_peer *a, const struct disco_peer *b)
{
    assert_memory_equal(a->key, b->key, WG_KEY_LEN);
    assert_int_equal(a->has_observed, b->has_observed);
    assert_int_equal(a->direct, b->direct);
    if (a->has_observed)
        assert_ep_equal(&a->observed, &b->observed);
    assert_int_equal(a->n_local, b->n_local);
    assert_list_equal(a->local, b->local, a->n_local);
}

static void assert_endpoints_equal(const struct disco_endpoints *a, const struct disco_endpoints *b)
{
    assert_int_equal(a->has_observed, b->has_observed);
    if (a->has_observed)
        assert_ep_equal(&a->observed, &b->observed);
    assert_int_equal(a->n_local, b->n_local);
    assert_list_equal(a->local, b->local, a->n_local);
    assert_int_equal(a->n_peers, b->n_peers);
    for (unsigned i = 0; i < a->n_peers; i++)
        assert_peer_equal(&a->peers[i], &b->peers[i]);
}

static void assert_msg_equal(const struct disco_msg *a, const struct disco_msg *b)
{
    assert_int_equal(a->type, b->type);
    switch (a->type) {
    case DISCO_ENDPOINTS:
        assert_endpoints_equal(&a->endpoints, &b->endpoints);
        break;
    case DISCO_PUNCH:
        assert_memory_equal(a->punch.key, b->punch.key, WG_KEY_LEN);
        assert_true(a->punch.id == b->punch.id);
        assert_int_equal(a->punch.n_cand, b->punch.n_cand);
        assert_list_equal(a->punch.cand, b->punch.cand, a->punch.n_cand);
        break;
    case DISCO_PING:
        assert_true(a->ping.txid == b->ping.txid);
        assert_int_equal(a->ping.flags, b->ping.flags);
        assert_int_equal(a->ping.pad, b->ping.pad);
        break;
    case DISCO_PONG:
        assert_true(a->pong.txid == b->pong.txid);
        assert_int_equal(a->pong.has_source, b->pong.has_source);
        if (a->pong.has_source)
            assert_ep_equal(&a->pong.source, &b->pong.source);
        break;
    case DISCO_RELAY:
    case DISCO_RELAYED:
        assert_memory_equal(a->relay.key, b->relay.key, WG_KEY_LEN);
        assert_int_equal(a->relay.msg_len, b->relay.msg_len);
        assert_memory_equal(a->relay.msg, b->relay.msg, a->relay.msg_len);
        break;
    default:
        fail_msg("unknown type %d", a->type);
    }
}

/* Encodes m, checks the length against disco_encoded_len and expect (when
 * not 0), decodes into msg_b, compares, and encodes msg_b to the same bytes. */
static size_t roundtrip(const struct disco_msg *m, size_t expect)
{
    int n = disco_encode(m, buf, sizeof(buf));

    assert_true(n > 0);
    assert_int_equal(n, disco_encoded_len(m));
    if (expect)
        assert_int_equal(n, expect);
    assert_int_equal(disco_decode(buf, (size_t)n, &msg_b), 0);
    assert_msg_equal(m, &msg_b);
    assert_int_equal(disco_encode(&msg_b, buf2, sizeof(buf2)), n);
    assert_memory_equal(buf, buf2, (size_t)n);
    return (size_t)n;
}

static void fill_peer(struct disco_peer *p, unsigned i, unsigned n_local, bool v6)
{
    memset(p, 0, sizeof(*p));
    memset(p->key, (int)i + 1, WG_KEY_LEN);
    p->has_observed = true;
    p->direct = i % 2;
    p->observed = v6 ? ep6(0xa0, (uint8_t)i, 1000) : ep4(203, 0, 113, (uint8_t)i, 1000);
    p->n_local = (uint8_t)n_local;
    for (unsigned k = 0; k < n_local; k++)
        p->local[k] = v6 ? ep6((uint8_t)i, (uint8_t)k, (uint16_t)(2000 + k))
                         : ep4(10, (uint8_t)i, 0, (uint8_t)(k + 1), (uint16_t)(2000 + k));
}

/* ENDPOINTS with every count at its maximum and every endpoint IPv6. */
static void make_endpoints_max(struct disco_msg *m)
{
    memset(m, 0, sizeof(*m));
    m->type = DISCO_ENDPOINTS;
    m->endpoints.has_observed = true;
    m->endpoints.observed = ep6(0xff, 0xff, 51820);
    m->endpoints.n_local = DISCO_MAX_LOCAL;
    for (unsigned k = 0; k < DISCO_MAX_LOCAL; k++)
        m->endpoints.local[k] = ep6(0xee, (uint8_t)k, (uint16_t)(51820 + k));
    m->endpoints.n_peers = DISCO_MAX_PEERS;
    for (unsigned i = 0; i < DISCO_MAX_PEERS; i++)
        fill_peer(&m->endpoints.peers[i], i, DISCO_MAX_LOCAL, true);
}

static void make_punch(struct disco_msg *m, unsigned n)
{
    memset(m, 0, sizeof(*m));
    m->type = DISCO_PUNCH;
    memset(m->punch.key, 0x42, WG_KEY_LEN);
    m->punch.id = UINT64_C(0x8877665544332211);
    m->punch.n_cand = (uint8_t)n;
    for (unsigned k = 0; k < n; k++)
        m->punch.cand[k] = k % 2 ? ep6(1, (uint8_t)k, (uint16_t)(k + 1))
                                 : ep4(100, 64, 0, (uint8_t)(k + 1), (uint16_t)(k + 1));
}

static void make_pong(struct disco_msg *m, bool has_source)
{
    memset(m, 0, sizeof(*m));
    m->type = DISCO_PONG;
    m->pong.txid = UINT64_MAX;
    m->pong.has_source = has_source;
    if (has_source)
        m->pong.source = ep6(9, 9, 65535);
}

/* A WireGuard message of the given type and length in wg[]. */
static uint8_t wg[DISCO_MAX_ENCLOSED + 1];

static void make_relay(struct disco_msg *m, enum disco_type type, uint8_t wg_type, size_t len)
{
    memset(m, 0, sizeof(*m));
    m->type = type;
    memset(m->relay.key, 0x77, WG_KEY_LEN);
    randombytes_buf(wg, sizeof(wg));
    wg[0] = wg_type;
    wg[1] = wg[2] = wg[3] = 0;
    m->relay.msg = wg;
    m->relay.msg_len = (uint16_t)len;
}

/* Decodes a golden hex message into buf; returns its length. */
static size_t load(const char *hex)
{
    size_t len;
    uint8_t *b = hex_decode(hex, &len);

    assert_true(len <= sizeof(buf));
    memcpy(buf, b, len);
    free(b);
    return len;
}

static void set_body_len(uint8_t *m, size_t body)
{
    m[6] = (uint8_t)(body >> 8);
    m[7] = (uint8_t)body;
}

/* --- round trips ----------------------------------------------------------------- */

static void test_roundtrip_endpoints(void **state)
{
    (void)state;
    struct disco_msg *m = &msg_a;

    memset(m, 0, sizeof(*m));
    m->type = DISCO_ENDPOINTS;                  /* nothing known: flags, 0, 0 */
    roundtrip(m, DISCO_HEADER_LEN + 4);

    make_endpoints_max(m);
    roundtrip(m, DISCO_MAX_LEN);

    /* IPv4 throughout, peers with and without observed endpoints. */
    memset(m, 0, sizeof(*m));
    m->type = DISCO_ENDPOINTS;
    m->endpoints.n_local = 3;
    for (unsigned k = 0; k < 3; k++)
        m->endpoints.local[k] = ep4(172, 31, 0, (uint8_t)(k + 1), 51820);
    m->endpoints.n_peers = 5;
    for (unsigned i = 0; i < 5; i++) {
        fill_peer(&m->endpoints.peers[i], i, i, false);
        m->endpoints.peers[i].has_observed = i != 2;
    }
    roundtrip(m, 0);
}

static void test_roundtrip_punch(void **state)
{
    (void)state;
    make_punch(&msg_a, 1);
    roundtrip(&msg_a, DISCO_HEADER_LEN + WG_KEY_LEN + 8 + 1 + DISCO_ENDPOINT_V4_LEN);
    make_punch(&msg_a, DISCO_MAX_CANDIDATES);
    roundtrip(&msg_a, DISCO_HEADER_LEN + WG_KEY_LEN + 8 + 1 +
                      8 * DISCO_ENDPOINT_V4_LEN + 8 * DISCO_ENDPOINT_V6_LEN);
}

static void test_roundtrip_ping_pong(void **state)
{
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_PING;
    roundtrip(&msg_a, DISCO_HEADER_LEN + 9);
    msg_a.ping.txid = UINT64_MAX;
    msg_a.ping.flags = 0xff;                    /* every flag bit is carried */
    roundtrip(&msg_a, DISCO_HEADER_LEN + 9);
    /* A path MTU probe: padded with zeros to its size. */
    msg_a.ping.pad = 1300;
    roundtrip(&msg_a, DISCO_HEADER_LEN + 9 + 1300);
    int n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_int_equal(n, DISCO_HEADER_LEN + 9 + 1300);
    buf[n - 1] = 1;                             /* padding that is not zero */
    assert_int_equal(disco_decode(buf, (size_t)n, &msg_b), -EBADMSG);
    msg_a.ping.pad = 0;

    make_pong(&msg_a, false);
    roundtrip(&msg_a, DISCO_HEADER_LEN + 9);
    make_pong(&msg_a, true);
    roundtrip(&msg_a, DISCO_HEADER_LEN + 9 + DISCO_ENDPOINT_V6_LEN);
}

static void test_roundtrip_relay(void **state)
{
    (void)state;
    const struct { uint8_t type; size_t len; } cases[] = {
        { WG_MSG_INITIATION, WG_INITIATION_LEN },
        { WG_MSG_RESPONSE, WG_RESPONSE_LEN },
        { WG_MSG_COOKIE_REPLY, WG_COOKIE_REPLY_LEN },
        { WG_MSG_TRANSPORT, WG_TRANSPORT_MIN_LEN },
        { WG_MSG_TRANSPORT, 1420 + WG_TRANSPORT_MIN_LEN },
        { WG_MSG_TRANSPORT, DISCO_MAX_ENCLOSED },
    };

    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        for (int t = DISCO_RELAY; t <= DISCO_RELAYED; t++) {
            make_relay(&msg_a, (enum disco_type)t, cases[i].type, cases[i].len);
            size_t n = roundtrip(&msg_a, DISCO_HEADER_LEN + WG_KEY_LEN + cases[i].len);
            /* No copy: the decoded message points into the input. */
            assert_int_equal(disco_decode(buf, n, &msg_b), 0);
            assert_ptr_equal(msg_b.relay.msg, buf + DISCO_HEADER_LEN + WG_KEY_LEN);
        }
    }
}

/* A relay turns RELAY into RELAYED in the same buffer. */
static void test_relay_rewrite_in_place(void **state)
{
    (void)state;
    make_relay(&msg_a, DISCO_RELAY, WG_MSG_RESPONSE, WG_RESPONSE_LEN);
    int n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_true(n > 0);
    assert_int_equal(disco_decode(buf, (size_t)n, &msg_b), 0);

    msg_b.type = DISCO_RELAYED;
    memset(msg_b.relay.key, 0x99, WG_KEY_LEN);  /* the source, for the receiver */
    assert_int_equal(disco_encode(&msg_b, buf, sizeof(buf)), n);
    assert_int_equal(disco_decode(buf, (size_t)n, &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_RELAYED);
    assert_int_equal(msg_b.relay.key[0], 0x99);
    assert_int_equal(msg_b.relay.msg_len, WG_RESPONSE_LEN);
    assert_memory_equal(msg_b.relay.msg, wg, WG_RESPONSE_LEN);
}

/* --- golden bytes ---------------------------------------------------------------- */

/* Encodes m and compares with hex; decodes hex and compares with m. */
static void check_golden(const struct disco_msg *m, const char *hex)
{
    size_t len = load(hex);
    uint8_t out[256];

    assert_int_equal(disco_encode(m, out, sizeof(out)), len);
    assert_memory_equal(out, buf, len);
    assert_int_equal(disco_decode(buf, len, &msg_b), 0);
    assert_msg_equal(m, &msg_b);
}

static void test_golden_ping_pong(void **state)
{
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_PING;
    msg_a.ping.txid = UINT64_C(0x0102030405060708);
    msg_a.ping.flags = 0x5a;
    check_golden(&msg_a, golden_ping);

    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_PONG;
    msg_a.pong.txid = UINT64_C(0x1122334455667788);
    msg_a.pong.has_source = true;
    msg_a.pong.source = ep4(192, 0, 2, 1, 51820);
    check_golden(&msg_a, golden_pong);
}

static void test_golden_punch(void **state)
{
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_PUNCH;
    for (unsigned i = 0; i < WG_KEY_LEN; i++)
        msg_a.punch.key[i] = (uint8_t)i;
    msg_a.punch.id = UINT64_C(0xdeadbeef00000001);
    msg_a.punch.n_cand = 1;
    msg_a.punch.cand[0] = ep6(0, 1, 443);
    msg_a.punch.cand[0].addr[14] = 0;           /* 2001:db8::1 */
    check_golden(&msg_a, golden_punch);
}

static void test_golden_endpoints(void **state)
{
    (void)state;
    struct disco_endpoints *e = &msg_a.endpoints;

    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_ENDPOINTS;
    e->has_observed = true;
    e->observed = ep4(198, 51, 100, 7, 40000);
    e->n_local = 1;
    e->local[0] = ep4(172, 31, 1, 5, 51820);
    e->n_peers = 1;
    for (unsigned i = 0; i < WG_KEY_LEN; i++)
        e->peers[0].key[i] = (uint8_t)(0x20 + i);
    e->peers[0].has_observed = true;
    e->peers[0].direct = true;
    e->peers[0].observed = ep4(203, 0, 113, 9, 1024);
    check_golden(&msg_a, golden_endpoints);
}

static void test_golden_relay(void **state)
{
    (void)state;
    uint8_t enclosed[WG_TRANSPORT_MIN_LEN];

    hex_decode_to(enclosed, sizeof(enclosed), TRANSPORT_32);
    for (int t = DISCO_RELAY; t <= DISCO_RELAYED; t++) {
        memset(&msg_a, 0, sizeof(msg_a));
        msg_a.type = (enum disco_type)t;
        memset(msg_a.relay.key, 0x55, WG_KEY_LEN);
        msg_a.relay.msg = enclosed;
        msg_a.relay.msg_len = sizeof(enclosed);
        check_golden(&msg_a, t == DISCO_RELAY ? golden_relay : golden_relayed);
    }
}

/* --- damaged input ------------------------------------------------------------------- */

static const char *const goldens[] = {
    golden_ping, golden_pong, golden_punch, golden_endpoints, golden_relay, golden_relayed,
};
#define N_GOLDENS (sizeof(goldens) / sizeof(goldens[0]))

/* Every prefix is refused, also with the body length set to match it:
 * then the body parser itself must find the end too early. The transport
 * message of RELAY has no fixed length, so those two are cut below its
 * 32-byte minimum only. */
static void check_truncations(size_t len, bool fixed_size)
{
    memcpy(buf2, buf, len);
    for (size_t cut = 0; cut < len; cut++) {
        assert_int_equal(disco_decode(buf, cut, &msg_b), -EBADMSG);
        if (cut < DISCO_HEADER_LEN ||
            (!fixed_size && cut >= DISCO_HEADER_LEN + WG_KEY_LEN + WG_TRANSPORT_MIN_LEN))
            continue;
        set_body_len(buf2, cut - DISCO_HEADER_LEN);
        assert_int_equal(disco_decode(buf2, cut, &msg_b), -EBADMSG);
    }
}

static void test_truncations_rejected(void **state)
{
    (void)state;
    for (size_t g = 0; g < N_GOLDENS; g++) {
        size_t len = load(goldens[g]);
        check_truncations(len, goldens[g] != golden_relay && goldens[g] != golden_relayed);
    }
    make_endpoints_max(&msg_a);
    int n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_int_equal(n, DISCO_MAX_LEN);
    check_truncations((size_t)n, true);

    make_relay(&msg_a, DISCO_RELAY, WG_MSG_INITIATION, WG_INITIATION_LEN);
    n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_true(n > 0);
    check_truncations((size_t)n, true);
}

/* One byte more, outside or inside the declared body. */
static void test_trailing_bytes_rejected(void **state)
{
    (void)state;
    for (size_t g = 0; g < N_GOLDENS; g++) {
        size_t len = load(goldens[g]);
        buf[len] = 0;
        assert_int_equal(disco_decode(buf, len, &msg_b), 0);
        assert_int_equal(disco_decode(buf, len + 1, &msg_b), -EBADMSG);
        if (goldens[g] == golden_relay || goldens[g] == golden_relayed)
            continue;                           /* a longer transport message is one */
        if (goldens[g] == golden_ping) {
            /* A zero byte more is padding (a path MTU probe); another is not. */
            set_body_len(buf, len + 1 - DISCO_HEADER_LEN);
            assert_int_equal(disco_decode(buf, len + 1, &msg_b), 0);
            assert_int_equal(msg_b.ping.pad, 1);
            buf[len] = 7;
            assert_int_equal(disco_decode(buf, len + 1, &msg_b), -EBADMSG);
            continue;
        }
        set_body_len(buf, len + 1 - DISCO_HEADER_LEN);
        assert_int_equal(disco_decode(buf, len + 1, &msg_b), -EBADMSG);
    }
}

/* Every value of every header byte: magic, version and length changes are
 * refused; a changed type is refused or decodes to a message that encodes
 * back to exactly the changed bytes. */
static void test_header_mutations(void **state)
{
    (void)state;
    for (size_t g = 0; g < N_GOLDENS; g++) {
        size_t len = load(goldens[g]);
        unsigned accepted = 0;

        for (size_t pos = 0; pos < DISCO_HEADER_LEN; pos++) {
            for (unsigned v = 0; v < 256; v++) {
                uint8_t saved = buf[pos];
                if (v == saved)
                    continue;
                buf[pos] = (uint8_t)v;
                int r = disco_decode(buf, len, &msg_b);
                if (r == 0) {
                    assert_int_equal(pos, 5);   /* only the type byte */
                    assert_int_equal(disco_encode(&msg_b, buf2, sizeof(buf2)), len);
                    assert_memory_equal(buf2, buf, len);
                    accepted++;
                } else {
                    assert_int_equal(r, -EBADMSG);
                }
                buf[pos] = saved;
            }
        }
        /* RELAY and RELAYED share a layout: each reads as the other. */
        bool relay = goldens[g] == golden_relay || goldens[g] == golden_relayed;
        assert_int_equal(accepted, relay ? 1 : 0);
    }
}

static void test_bad_magic_version_type(void **state)
{
    (void)state;
    size_t len = load(golden_ping);

    buf[3] = 'E';
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[3] = 'D';
    buf[4] = 2;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[4] = 0;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[4] = 1;
    buf[5] = 0;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[5] = DISCO_TYPE_COUNT;     /* no such type */
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[5] = DISCO_PING;
    assert_int_equal(disco_decode(buf, len, &msg_b), 0);
}

/* --- NAMES ------------------------------------------------------------------------------ */

/* The bytes of a NAMES message, as disco_msg.h lays them out. */
static const uint8_t golden_names[] = {
    'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 39,
    2,
    12, 'i', 'p', '-', '1', '9', '2', '-', '0', '-', '2', '-', '1',
    24, 'i', 'p', '-', '1', '9', '2', '-', '0', '-', '2', '-', '1', '.', 'e', 'c', '2', '.',
        'i', 'n', 't', 'e', 'r', 'n', 'a',
};

static void test_names(void **state)
{
    uint8_t out[128];
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_NAMES;
    msg_a.names.n = 2;
    strcpy(msg_a.names.name[0], "ip-192-0-2-1");
    strcpy(msg_a.names.name[1], "ip-192-0-2-1.ec2.interna");
    assert_int_equal(disco_encoded_len(&msg_a), (int)sizeof(golden_names));
    assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), (int)sizeof(golden_names));
    assert_memory_equal(out, golden_names, sizeof(golden_names));
    assert_int_equal(disco_decode(golden_names, sizeof(golden_names), &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_NAMES);
    assert_int_equal(msg_b.names.n, 2);
    assert_string_equal(msg_b.names.name[0], "ip-192-0-2-1");
    assert_string_equal(msg_b.names.name[1], "ip-192-0-2-1.ec2.interna");
    /* One name of the longest length. */
    msg_a.names.n = 1;
    memset(msg_a.names.name[0], 'a', DISCO_NAME_MAX);
    msg_a.names.name[0][DISCO_NAME_MAX] = '\0';
    int n = disco_encode(&msg_a, out, sizeof(out));
    assert_int_equal(n, DISCO_HEADER_LEN + 2 + DISCO_NAME_MAX);
    assert_int_equal(disco_decode(out, (size_t)n, &msg_b), 0);
    assert_int_equal(strlen(msg_b.names.name[0]), DISCO_NAME_MAX);
}

/* --- FEATURES --------------------------------------------------------------------------- */

static const uint8_t golden_features[] = {
    'D', 'D', 'P', 'D', 1, DISCO_FEATURES, 0, 4,
    0x80, 0, 0, DISCO_FEAT_RELAY_FRAMES,
};

/* Every flag is kept as it came (later versions' bits too), and the body
 * is exactly four bytes. */
static void test_features(void **state)
{
    uint8_t out[32], bad[sizeof(golden_features) + 1];
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_FEATURES;
    msg_a.features = 0x80000000u | DISCO_FEAT_RELAY_FRAMES;
    assert_int_equal(disco_encoded_len(&msg_a), (int)sizeof(golden_features));
    assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), (int)sizeof(golden_features));
    assert_memory_equal(out, golden_features, sizeof(golden_features));
    assert_int_equal(disco_decode(golden_features, sizeof(golden_features), &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_FEATURES);
    assert_int_equal(msg_b.features, 0x80000001u);
    assert_int_equal(disco_encode(&msg_a, out, sizeof(golden_features) - 1), -EMSGSIZE);
    /* A body one byte short or long. */
    memcpy(bad, golden_features, sizeof(golden_features));
    bad[7] = 3;
    assert_int_equal(disco_decode(bad, sizeof(golden_features) - 1, &msg_b), -EBADMSG);
    bad[7] = 5;
    bad[sizeof(golden_features)] = 0;
    assert_int_equal(disco_decode(bad, sizeof(bad), &msg_b), -EBADMSG);
}

/* --- RECORD ---------------------------------------------------------------------------- */

/* A digest of exactly DISCO_RECORD_LEN bytes, as it came. */
static void test_record(void **state)
{
    uint8_t golden[DISCO_HEADER_LEN + DISCO_RECORD_LEN] = {
        'D', 'D', 'P', 'D', 1, DISCO_RECORD, 0, DISCO_RECORD_LEN,
    };
    uint8_t out[64], bad[sizeof(golden) + 1];

    (void)state;
    for (unsigned i = 0; i < DISCO_RECORD_LEN; i++)
        golden[DISCO_HEADER_LEN + i] = (uint8_t)(0xa0 + i);
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_RECORD;
    memcpy(msg_a.record, golden + DISCO_HEADER_LEN, DISCO_RECORD_LEN);
    assert_int_equal(disco_encoded_len(&msg_a), (int)sizeof(golden));
    assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), (int)sizeof(golden));
    assert_memory_equal(out, golden, sizeof(golden));
    assert_int_equal(disco_decode(golden, sizeof(golden), &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_RECORD);
    assert_memory_equal(msg_b.record, msg_a.record, DISCO_RECORD_LEN);
    assert_int_equal(disco_encode(&msg_a, out, sizeof(golden) - 1), -EMSGSIZE);
    /* A body one byte short or long. */
    memcpy(bad, golden, sizeof(golden));
    bad[7] = DISCO_RECORD_LEN - 1;
    assert_int_equal(disco_decode(bad, sizeof(golden) - 1, &msg_b), -EBADMSG);
    bad[7] = DISCO_RECORD_LEN + 1;
    bad[sizeof(golden)] = 0;
    assert_int_equal(disco_decode(bad, sizeof(bad), &msg_b), -EBADMSG);
}

/* REVOKED: a count and a digest, exactly; any other length refused. */
static void test_revoked(void **state)
{
    uint8_t golden[DISCO_HEADER_LEN + 2 + DISCO_REVOKED_LEN] = {
        'D', 'D', 'P', 'D', 1, DISCO_REVOKED, 0, 2 + DISCO_REVOKED_LEN, 0x01, 0x02,
    };
    uint8_t out[64], bad[sizeof(golden) + 1];

    (void)state;
    for (unsigned i = 0; i < DISCO_REVOKED_LEN; i++)
        golden[DISCO_HEADER_LEN + 2 + i] = (uint8_t)(0x30 + i);
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_REVOKED;
    msg_a.revoked.count = 0x0102;
    memcpy(msg_a.revoked.digest, golden + DISCO_HEADER_LEN + 2, DISCO_REVOKED_LEN);
    assert_int_equal(disco_encoded_len(&msg_a), (int)sizeof(golden));
    assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), (int)sizeof(golden));
    assert_memory_equal(out, golden, sizeof(golden));
    assert_int_equal(disco_decode(golden, sizeof(golden), &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_REVOKED);
    assert_int_equal(msg_b.revoked.count, 0x0102);
    assert_memory_equal(msg_b.revoked.digest, msg_a.revoked.digest, DISCO_REVOKED_LEN);
    assert_int_equal(disco_encode(&msg_a, out, sizeof(golden) - 1), -EMSGSIZE);
    for (size_t len = DISCO_HEADER_LEN; len < sizeof(golden); len++) {
        memcpy(bad, golden, sizeof(golden));
        bad[7] = (uint8_t)(len - DISCO_HEADER_LEN);
        assert_int_equal(disco_decode(bad, len, &msg_b), -EBADMSG);
    }
    memcpy(bad, golden, sizeof(golden));
    bad[7] = 2 + DISCO_REVOKED_LEN + 1;
    bad[sizeof(golden)] = 0;
    assert_int_equal(disco_decode(bad, sizeof(bad), &msg_b), -EBADMSG);
}

/* --- CERT ------------------------------------------------------------------------------ */

/* A statement's text as it came, pointing into the input; bounded. */
static void test_cert(void **state)
{
    static const char text[] = "ddpnet-member:AbC-_9";
    static uint8_t big[DISCO_HEADER_LEN + DISCO_CERT_MAX + 1];
    uint8_t golden[DISCO_HEADER_LEN + sizeof(text) - 1] = {
        'D', 'D', 'P', 'D', 1, DISCO_CERT, 0, sizeof(text) - 1,
    };
    uint8_t out[64], bad[sizeof(golden)];

    (void)state;
    memcpy(golden + DISCO_HEADER_LEN, text, sizeof(text) - 1);
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_CERT;
    msg_a.cert.text = text;
    msg_a.cert.len = sizeof(text) - 1;
    assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), (int)sizeof(golden));
    assert_memory_equal(out, golden, sizeof(golden));
    assert_int_equal(disco_decode(golden, sizeof(golden), &msg_b), 0);
    assert_int_equal(msg_b.type, DISCO_CERT);
    assert_int_equal(msg_b.cert.len, sizeof(text) - 1);
    assert_ptr_equal(msg_b.cert.text, (const char *)golden + DISCO_HEADER_LEN);
    /* Empty, a space, a NUL, a control byte: refused both ways. */
    msg_a.cert.len = 0;
    assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
    static const uint8_t wrong[] = { ' ', 0, '\n', 0x7f, 0x80 };
    for (unsigned i = 0; i < sizeof(wrong); i++) {
        memcpy(bad, golden, sizeof(golden));
        bad[DISCO_HEADER_LEN + 3] = wrong[i];
        assert_int_equal(disco_decode(bad, sizeof(bad), &msg_b), -EBADMSG);
    }
    memcpy(bad, golden, sizeof(golden));
    bad[7] = 0;
    assert_int_equal(disco_decode(bad, DISCO_HEADER_LEN, &msg_b), -EBADMSG);
    /* DISCO_CERT_MAX bytes pass, one more does not. */
    memcpy(big, golden, DISCO_HEADER_LEN);
    memset(big + DISCO_HEADER_LEN, 'A', DISCO_CERT_MAX + 1);
    big[6] = DISCO_CERT_MAX >> 8;
    big[7] = DISCO_CERT_MAX & 0xff;
    assert_int_equal(disco_decode(big, DISCO_HEADER_LEN + DISCO_CERT_MAX, &msg_b), 0);
    big[6] = (DISCO_CERT_MAX + 1) >> 8;
    big[7] = (DISCO_CERT_MAX + 1) & 0xff;
    assert_int_equal(disco_decode(big, sizeof(big), &msg_b), -EBADMSG);
    msg_a.cert.text = (const char *)big + DISCO_HEADER_LEN;
    msg_a.cert.len = DISCO_CERT_MAX + 1;
    assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
}

static void test_enclosed_ok(void **state)
{
    uint8_t msg[WG_INITIATION_LEN] = { WG_MSG_INITIATION };
    (void)state;
    assert_true(disco_enclosed_ok(msg, WG_INITIATION_LEN));
    assert_false(disco_enclosed_ok(msg, WG_INITIATION_LEN - 1));
    msg[0] = WG_MSG_TRANSPORT;
    assert_true(disco_enclosed_ok(msg, WG_TRANSPORT_MIN_LEN));
    assert_false(disco_enclosed_ok(msg, WG_TRANSPORT_MIN_LEN - 1));
    msg[2] = 1;                       /* a sub-session: a shard byte (wg_const.h) */
    assert_true(disco_enclosed_ok(msg, WG_TRANSPORT_MIN_LEN));
    msg[2] = 0;
    msg[3] = 1;                       /* no shard byte: refused */
    assert_false(disco_enclosed_ok(msg, WG_TRANSPORT_MIN_LEN));
    msg[3] = 0;
    msg[0] = WG_MSG_INITIATION;       /* a handshake has none */
    msg[1] = 1;
    assert_false(disco_enclosed_ok(msg, WG_INITIATION_LEN));
    msg[1] = 0;
    msg[0] = 5;
    assert_false(disco_enclosed_ok(msg, WG_TRANSPORT_MIN_LEN));
    assert_false(disco_enclosed_ok(NULL, 0));
}

static void test_names_rejected(void **state)
{
    static const char *const bad[] = { "", "-a", "a-", ".a", "a.", "a b", "a_b", "a/b", "\xc3\xa9" };
    uint8_t out[128];
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_NAMES;
    /* Encoding refuses what decoding would. */
    assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);            /* no name */
    msg_a.names.n = DISCO_MAX_NAMES + 1;
    assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
    msg_a.names.n = 1;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        strcpy(msg_a.names.name[0], bad[i]);
        assert_int_equal(disco_encode(&msg_a, out, sizeof(out)), -EINVAL);
        assert_false(disco_name_valid(bad[i]));
    }
    /* Decoding: counts, lengths and bytes. */
    static const uint8_t zero[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 1, 0 };
    static const uint8_t three[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 7, 3, 1, 'a', 1, 'b', 1, 'c' };
    static const uint8_t empty[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 2, 1, 0 };
    static const uint8_t shortn[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 3, 1, 5, 'a' };
    static const uint8_t trail[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 4, 1, 1, 'a', 0 };
    static const uint8_t under[] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0, 3, 1, 1, '_' };
    assert_int_equal(disco_decode(zero, sizeof(zero), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(three, sizeof(three), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(empty, sizeof(empty), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(shortn, sizeof(shortn), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(trail, sizeof(trail), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(under, sizeof(under), &msg_b), -EBADMSG);
    uint8_t toolong[DISCO_HEADER_LEN + 2 + DISCO_NAME_MAX + 1] = { 'D', 'D', 'P', 'D', 1, DISCO_NAMES, 0,
                                                                  2 + DISCO_NAME_MAX + 1, 1,
                                                                  DISCO_NAME_MAX + 1 };
    memset(toolong + DISCO_HEADER_LEN + 2, 'a', DISCO_NAME_MAX + 1);
    assert_int_equal(disco_decode(toolong, sizeof(toolong), &msg_b), -EBADMSG);
}

/* --- counts over the maxima ---------------------------------------------------------- */

static void test_counts_over_max_encode(void **state)
{
    (void)state;
    make_endpoints_max(&msg_a);
    msg_a.endpoints.n_local = DISCO_MAX_LOCAL + 1;
    assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);

    make_endpoints_max(&msg_a);
    msg_a.endpoints.n_peers = DISCO_MAX_PEERS + 1;
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);

    make_endpoints_max(&msg_a);
    msg_a.endpoints.peers[DISCO_MAX_PEERS - 1].n_local = DISCO_MAX_LOCAL + 1;
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);

    make_punch(&msg_a, DISCO_MAX_CANDIDATES);
    msg_a.punch.n_cand = DISCO_MAX_CANDIDATES + 1;
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
    msg_a.punch.n_cand = 0;                     /* nothing to punch to */
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
}

/* Raw bytes: an ENDPOINTS with n minimal peer records (key, flags 0, no
 * locals) and, before them, n_local IPv4 locals. */
static size_t raw_endpoints(unsigned n_local, unsigned n_peers)
{
    uint8_t *p = buf + DISCO_HEADER_LEN;

    memcpy(buf, DISCO_MAGIC, DISCO_MAGIC_LEN);
    buf[4] = DISCO_VERSION;
    buf[5] = DISCO_ENDPOINTS;
    *p++ = 0;
    *p++ = (uint8_t)n_local;
    for (unsigned k = 0; k < n_local; k++) {
        const uint8_t ep[] = { 4, 10, 0, 0, (uint8_t)(k + 1), 0x01, 0x00 };
        memcpy(p, ep, sizeof(ep));
        p += sizeof(ep);
    }
    *p++ = (uint8_t)(n_peers >> 8);
    *p++ = (uint8_t)n_peers;
    for (unsigned i = 0; i < n_peers; i++) {
        memset(p, (int)i, WG_KEY_LEN);
        p += WG_KEY_LEN;
        *p++ = 0;
        *p++ = 0;
    }
    size_t len = (size_t)(p - buf);
    set_body_len(buf, len - DISCO_HEADER_LEN);
    return len;
}

static size_t raw_punch(unsigned n)
{
    uint8_t *p = buf + DISCO_HEADER_LEN;

    memcpy(buf, DISCO_MAGIC, DISCO_MAGIC_LEN);
    buf[4] = DISCO_VERSION;
    buf[5] = DISCO_PUNCH;
    memset(p, 1, WG_KEY_LEN + 8);
    p += WG_KEY_LEN + 8;
    *p++ = (uint8_t)n;
    for (unsigned k = 0; k < n; k++) {
        const uint8_t ep[] = { 4, 10, 0, 0, (uint8_t)(k + 1), 0x01, 0x00 };
        memcpy(p, ep, sizeof(ep));
        p += sizeof(ep);
    }
    size_t len = (size_t)(p - buf);
    set_body_len(buf, len - DISCO_HEADER_LEN);
    return len;
}

static void test_counts_over_max_decode(void **state)
{
    (void)state;
    /* At the maxima they decode (so the refusals below are the counts). */
    assert_int_equal(disco_decode(buf, raw_endpoints(DISCO_MAX_LOCAL, DISCO_MAX_PEERS), &msg_b), 0);
    assert_int_equal(msg_b.endpoints.n_peers, DISCO_MAX_PEERS);
    assert_int_equal(disco_decode(buf, raw_endpoints(DISCO_MAX_LOCAL + 1, 0), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(buf, raw_endpoints(0, DISCO_MAX_PEERS + 1), &msg_b), -EBADMSG);
    size_t n0 = raw_endpoints(0, 0);                 /* n_peers 0xffff, no records */
    buf[n0 - 2] = buf[n0 - 1] = 0xff;
    assert_int_equal(disco_decode(buf, n0, &msg_b), -EBADMSG);

    /* A peer record announcing 9 locals (the bytes for them present). */
    size_t len = raw_endpoints(0, 1);
    uint8_t *nl = buf + len - 1;
    *nl = DISCO_MAX_LOCAL + 1;
    for (unsigned k = 0; k < DISCO_MAX_LOCAL + 1; k++) {
        const uint8_t ep[] = { 4, 10, 0, 0, (uint8_t)(k + 1), 0x01, 0x00 };
        memcpy(buf + len, ep, sizeof(ep));
        len += sizeof(ep);
    }
    set_body_len(buf, len - DISCO_HEADER_LEN);
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    *nl = DISCO_MAX_LOCAL;                      /* control: 8 and a trailing endpoint */
    assert_int_equal(disco_decode(buf, len - 7, &msg_b), -EBADMSG);
    set_body_len(buf, len - 7 - DISCO_HEADER_LEN);
    assert_int_equal(disco_decode(buf, len - 7, &msg_b), 0);

    assert_int_equal(disco_decode(buf, raw_punch(DISCO_MAX_CANDIDATES), &msg_b), 0);
    assert_int_equal(disco_decode(buf, raw_punch(DISCO_MAX_CANDIDATES + 1), &msg_b), -EBADMSG);
    assert_int_equal(disco_decode(buf, raw_punch(0), &msg_b), -EBADMSG);
}

/* --- endpoints and flags --------------------------------------------------------------- */

static void test_endpoint_valid(void **state)
{
    (void)state;
    struct disco_endpoint e = ep4(1, 2, 3, 4, 5);

    assert_true(disco_endpoint_valid(&e));
    e.port = 0;
    assert_false(disco_endpoint_valid(&e));
    e = ep4(0, 0, 0, 0, 5);                     /* unspecified */
    assert_false(disco_endpoint_valid(&e));
    e = ep4(0, 0, 0, 1, 5);
    assert_true(disco_endpoint_valid(&e));
    const uint8_t families[] = { 0, 1, 2, 5, 7, 10, 255 };
    for (size_t i = 0; i < sizeof(families); i++) {
        e = ep6(1, 1, 1);
        e.family = families[i];
        assert_false(disco_endpoint_valid(&e));
    }
    e = ep6(0, 0, 1);
    memset(e.addr, 0, sizeof(e.addr));          /* :: */
    assert_false(disco_endpoint_valid(&e));
    e.addr[10] = e.addr[11] = 0xff;             /* ::ffff:0.0.0.0 */
    e.addr[15] = 1;
    assert_false(disco_endpoint_valid(&e));
    e.addr[10] = 0xfe;                          /* not v4-mapped */
    assert_true(disco_endpoint_valid(&e));
}

/* Each place an endpoint can be, with each kind of bad endpoint. */
static void test_bad_endpoints_encode(void **state)
{
    (void)state;
    struct disco_endpoint bad[4] = { ep4(1, 2, 3, 4, 0), ep4(0, 0, 0, 0, 1), ep4(1, 2, 3, 4, 1),
                                     ep6(0, 0, 1) };
    bad[2].family = 5;
    memset(bad[3].addr, 0, 10);                 /* ::ffff:1.2.3.4 */
    memset(bad[3].addr + 10, 0xff, 2);
    memcpy(bad[3].addr + 12, "\x01\x02\x03\x04", 4);

    for (size_t b = 0; b < 4; b++) {
        for (int where = 0; where < 6; where++) {
            if (where == 4)
                make_punch(&msg_a, 3);
            else if (where == 5)
                make_pong(&msg_a, true);
            else
                make_endpoints_max(&msg_a);
            struct disco_endpoint *slot[] = {
                &msg_a.endpoints.observed, &msg_a.endpoints.local[7],
                &msg_a.endpoints.peers[63].observed, &msg_a.endpoints.peers[10].local[0],
                &msg_a.punch.cand[2], &msg_a.pong.source,
            };
            assert_true(disco_encode(&msg_a, buf, sizeof(buf)) > 0);
            *slot[where] = bad[b];
            assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
            assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
        }
    }
    /* An absent endpoint is not looked at. */
    make_pong(&msg_a, false);
    msg_a.pong.source = bad[2];
    assert_true(disco_encode(&msg_a, buf, sizeof(buf)) > 0);
}

static void test_bad_endpoints_decode(void **state)
{
    (void)state;
    size_t len = load(golden_pong);             /* the endpoint at 17..23 */
    const size_t fam = 17, port = 22;

    for (unsigned v = 0; v < 256; v++) {
        buf[fam] = (uint8_t)v;
        int r = disco_decode(buf, len, &msg_b);
        /* Family 6 would need 12 more bytes than there are. */
        assert_int_equal(r, v == 4 ? 0 : -EBADMSG);
    }
    len = load(golden_pong);
    buf[port] = buf[port + 1] = 0;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    len = load(golden_pong);
    memset(buf + fam + 1, 0, 4);
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);

    len = load(golden_punch);                   /* [2001:db8::1]:443, address at 50 */
    const size_t a6 = DISCO_HEADER_LEN + WG_KEY_LEN + 8 + 1 + 1;
    memcpy(buf + a6, "\0\0\0\0\0\0\0\0\0\0\xff\xff\x01\x02\x03\x04", 16);
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    memset(buf + a6, 0, 16);
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[a6 + 15] = 1;                           /* ::1 */
    assert_int_equal(disco_decode(buf, len, &msg_b), 0);
}

static void test_bad_flags_decode(void **state)
{
    (void)state;
    size_t len = load(golden_endpoints);
    const size_t flags = DISCO_HEADER_LEN, peer_flags = DISCO_HEADER_LEN + 18 + WG_KEY_LEN;

    assert_int_equal(buf[peer_flags], 0x03);
    for (unsigned bit = 1; bit < 8; bit++) {
        buf[flags] = (uint8_t)(1u << bit | DISCO_F_OBSERVED);
        assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    }
    buf[flags] = DISCO_F_OBSERVED;
    for (unsigned bit = 2; bit < 8; bit++) {
        buf[peer_flags] = (uint8_t)(1u << bit | 0x03);
        assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    }
    buf[peer_flags] = 0x03;
    assert_int_equal(disco_decode(buf, len, &msg_b), 0);
    /* Clearing "observed" leaves the endpoint's bytes over: refused. */
    buf[flags] = 0;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);

    len = load(golden_pong);
    buf[16] = 0x03;
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    buf[16] = 0x00;                             /* no source: 7 bytes too many */
    assert_int_equal(disco_decode(buf, len, &msg_b), -EBADMSG);
    set_body_len(buf, 9);
    assert_int_equal(disco_decode(buf, DISCO_HEADER_LEN + 9, &msg_b), 0);
    assert_false(msg_b.pong.has_source);
}

/* --- RELAY with something that is not WireGuard ---------------------------------------- */

static void test_relay_not_wireguard_encode(void **state)
{
    (void)state;
    const struct { uint8_t type; size_t len; } bad[] = {
        { 0, WG_TRANSPORT_MIN_LEN }, { 5, WG_TRANSPORT_MIN_LEN }, { 0xff, 64 },
        { WG_MSG_INITIATION, WG_INITIATION_LEN - 1 }, { WG_MSG_INITIATION, WG_INITIATION_LEN + 1 },
        { WG_MSG_RESPONSE, WG_RESPONSE_LEN + 16 }, { WG_MSG_COOKIE_REPLY, WG_COOKIE_REPLY_LEN - 1 },
        { WG_MSG_TRANSPORT, WG_TRANSPORT_MIN_LEN - 1 }, { WG_MSG_TRANSPORT, DISCO_MAX_ENCLOSED + 1 },
        { WG_MSG_TRANSPORT, 3 }, { WG_MSG_TRANSPORT, 1 }, { WG_MSG_TRANSPORT, 0 },
    };

    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        make_relay(&msg_a, DISCO_RELAY, bad[i].type, bad[i].len);
        assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
        assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
    }
    for (int r = 1; r <= 3; r++) {              /* a reserved byte set */
        make_relay(&msg_a, DISCO_RELAYED, WG_MSG_TRANSPORT, WG_TRANSPORT_MIN_LEN);
        assert_true(disco_encode(&msg_a, buf, sizeof(buf)) > 0);
        wg[r] = 1;
        /* Bytes 1 and 2 of a transport message are its shard bytes. */
        if (r == WG_SHARD_HINT_OFFSET || r == WG_SHARD_SUB_OFFSET)
            assert_true(disco_encode(&msg_a, buf, sizeof(buf)) > 0);
        else
            assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
    }
    make_relay(&msg_a, DISCO_RELAYED, WG_MSG_INITIATION, WG_INITIATION_LEN);
    wg[WG_SHARD_HINT_OFFSET] = 1;                /* a hint on a handshake: refused */
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
    make_relay(&msg_a, DISCO_RELAY, WG_MSG_TRANSPORT, WG_TRANSPORT_MIN_LEN);
    msg_a.relay.msg = NULL;
    assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
}

static void test_relay_not_wireguard_decode(void **state)
{
    (void)state;
    const size_t wg_at = DISCO_HEADER_LEN + WG_KEY_LEN;

    for (size_t g = 0; g < 2; g++) {
        const char *hex = g ? golden_relayed : golden_relay;
        size_t len = load(hex);
        for (unsigned v = 0; v < 256; v++) {
            buf[wg_at] = (uint8_t)v;            /* only transport is 32 bytes long */
            assert_int_equal(disco_decode(buf, len, &msg_b),
                             v == WG_MSG_TRANSPORT ? 0 : -EBADMSG);
        }
        for (size_t r = 1; r <= 3; r++) {
            len = load(hex);
            buf[wg_at + r] = 0x80;
            assert_int_equal(disco_decode(buf, len, &msg_b),
                             r == WG_SHARD_HINT_OFFSET || r == WG_SHARD_SUB_OFFSET ? 0 : -EBADMSG);
        }
        /* The key and nothing else. */
        len = load(hex);
        set_body_len(buf, WG_KEY_LEN);
        assert_int_equal(disco_decode(buf, wg_at, &msg_b), -EBADMSG);
    }
    /* Over the maximum: a transport message one byte too long. */
    make_relay(&msg_a, DISCO_RELAY, WG_MSG_TRANSPORT, DISCO_MAX_ENCLOSED);
    int n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_true(n > 0);
    buf[n] = 0;
    set_body_len(buf, (size_t)n + 1 - DISCO_HEADER_LEN);
    assert_int_equal(disco_decode(buf, (size_t)n + 1, &msg_b), -EBADMSG);
}

/* --- encoding errors --------------------------------------------------------------------- */

static void test_encode_unknown_type(void **state)
{
    (void)state;
    const int types[] = { 0, 7, 255, -1 };

    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        memset(&msg_a, 0, sizeof(msg_a));
        msg_a.type = (enum disco_type)types[i];
        assert_int_equal(disco_encoded_len(&msg_a), -EINVAL);
        assert_int_equal(disco_encode(&msg_a, buf, sizeof(buf)), -EINVAL);
    }
}

/* Every capacity below the size is refused, and nothing is written. */
static void check_too_small(const struct disco_msg *m)
{
    int need = disco_encoded_len(m);

    assert_true(need > 0);
    for (int cap = 0; cap < need; cap++) {
        memset(buf, 0xa5, sizeof(buf));
        assert_int_equal(disco_encode(m, buf, (size_t)cap), -EMSGSIZE);
        for (size_t i = 0; i < (size_t)need; i++)
            assert_int_equal(buf[i], 0xa5);
    }
    assert_int_equal(disco_encode(m, buf, (size_t)need), need);
}

static void test_encode_too_small(void **state)
{
    (void)state;
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_PING;
    check_too_small(&msg_a);
    make_pong(&msg_a, true);
    check_too_small(&msg_a);
    make_punch(&msg_a, 5);
    check_too_small(&msg_a);
    make_relay(&msg_a, DISCO_RELAYED, WG_MSG_INITIATION, WG_INITIATION_LEN);
    check_too_small(&msg_a);
    memset(&msg_a, 0, sizeof(msg_a));
    msg_a.type = DISCO_ENDPOINTS;
    msg_a.endpoints.n_peers = 2;
    fill_peer(&msg_a.endpoints.peers[0], 0, 2, false);
    fill_peer(&msg_a.endpoints.peers[1], 1, 1, true);
    check_too_small(&msg_a);
    make_endpoints_max(&msg_a);
    assert_int_equal(disco_encode(&msg_a, buf, DISCO_MAX_LEN - 1), -EMSGSIZE);
}

static void test_no_allocation(void **state)
{
    (void)state;
    uint8_t pkt[DISCO_IP_HEADER_MAX + DISCO_MAX_LEN];
    const uint8_t a6[16] = { 0xfd, [15] = 1 }, b6[16] = { 0xfd, [15] = 2 };
    const uint8_t *src, *dst, *payload;
    size_t plen;
    int family;

    make_endpoints_max(&msg_a);
    size_t before = alloc_count();
    int n = disco_encode(&msg_a, buf, sizeof(buf));
    assert_int_equal(disco_decode(buf, (size_t)n, &msg_b), 0);
    int p = disco_ip_wrap(AF_INET6, a6, b6, buf, (size_t)n, pkt, sizeof(pkt));
    assert_true(p > 0);
    assert_int_equal(disco_ip_parse(pkt, (size_t)p, &family, &src, &dst, &payload, &plen), 0);
    assert_int_equal(alloc_count(), before);
}

/* --- the inner IP packet ---------------------------------------------------------------- */

/* RFC 1071 computed another way: the sum taken over little-endian words
 * (byte order independence, RFC 1071 section 2(B)) and swapped at the end. */
static uint16_t checksum_le(const uint8_t *h, size_t len)
{
    uint64_t sum = 0;

    for (size_t i = 0; i < len; i += 2)
        sum += (uint64_t)h[i] | (uint64_t)h[i + 1] << 8;
    while (sum > 0xffff)
        sum = (sum & 0xffff) + (sum >> 16);
    uint16_t c = (uint16_t)~sum;
    return (uint16_t)(c >> 8 | c << 8);
}

static void test_ip4_golden(void **state)
{
    (void)state;
    size_t plen_hex = load(golden_ping);
    uint8_t payload[32], out[128], want[64];
    const uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 0, 0, 2 };

    memcpy(payload, buf, plen_hex);
    hex_decode_to(want, 20,
                  "45" "00" "0025" "0000" "4000" "40" "fd" "25da" "0a000001" "0a000002");
    memcpy(want + 20, payload, plen_hex);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, payload, plen_hex, out, sizeof(out)),
                     20 + plen_hex);
    assert_memory_equal(out, want, 20 + plen_hex);
    assert_int_equal(checksum_le(out, 20), 0);
}

static void test_ip6_golden(void **state)
{
    (void)state;
    size_t plen_hex = load(golden_ping);
    uint8_t out[128], want[64];
    const uint8_t a[16] = { 0xfd, [15] = 1 }, b[16] = { 0xfd, [15] = 2 };

    hex_decode_to(want, 40, "60000000" "0011" "fd" "40"
                  "fd000000000000000000000000000001" "fd000000000000000000000000000002");
    memcpy(want + 40, buf, plen_hex);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, buf, plen_hex, out, sizeof(out)),
                     40 + plen_hex);
    assert_memory_equal(out, want, 40 + plen_hex);
}

static void check_parse(const uint8_t *pkt, size_t len, int want_family, const uint8_t *a,
                        const uint8_t *b, const uint8_t *payload, size_t plen_want)
{
    const uint8_t *src, *dst, *pl;
    size_t plen;
    int family;
    size_t alen = want_family == AF_INET ? 4 : 16;

    assert_int_equal(disco_ip_parse(pkt, len, &family, &src, &dst, &pl, &plen), 0);
    assert_int_equal(family, want_family);
    assert_memory_equal(src, a, alen);
    assert_memory_equal(dst, b, alen);
    assert_int_equal(plen, plen_want);
    assert_memory_equal(pl, payload, plen);
    assert_ptr_equal(pl, pkt + (want_family == AF_INET ? 20 : 40));
}

static void test_ip_roundtrip(void **state)
{
    (void)state;
    static uint8_t pkt[DISCO_IP_HEADER_MAX + DISCO_MAX_LEN + 16];
    uint8_t a[16], b[16];
    const size_t sizes[] = { 0, 1, 17, 255, 1400, DISCO_MAX_LEN };

    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (int v6 = 0; v6 <= 1; v6++) {
            int family = v6 ? AF_INET6 : AF_INET;
            size_t hlen = v6 ? 40 : 20;
            randombytes_buf(a, sizeof(a));
            randombytes_buf(b, sizeof(b));
            randombytes_buf(buf, sizes[s]);
            int n = disco_ip_wrap(family, a, b, buf, sizes[s], pkt, sizeof(pkt));
            assert_int_equal(n, hlen + sizes[s]);
            assert_int_equal(pkt[0] >> 4, v6 ? 6 : 4);
            if (v6) {
                assert_int_equal(pkt[4] << 8 | pkt[5], sizes[s]);
                assert_int_equal(pkt[6], DISCO_IP_PROTO);
                assert_int_equal(pkt[7], 64);
            } else {
                assert_int_equal(pkt[0], 0x45);
                assert_int_equal(pkt[2] << 8 | pkt[3], n);
                assert_int_equal(pkt[4] | pkt[5], 0);              /* id 0 */
                assert_int_equal(pkt[6] << 8 | pkt[7], 0x4000);     /* DF */
                assert_int_equal(pkt[8], 64);
                assert_int_equal(pkt[9], DISCO_IP_PROTO);
                uint16_t stored = (uint16_t)(pkt[10] << 8 | pkt[11]);
                pkt[10] = pkt[11] = 0;
                assert_int_equal(checksum_le(pkt, 20), stored);
                pkt[10] = (uint8_t)(stored >> 8);
                pkt[11] = (uint8_t)stored;
            }
            check_parse(pkt, (size_t)n, family, a, b, buf, sizes[s]);
            /* WireGuard padding after the packet is ignored. */
            memset(pkt + n, 0, 15);
            check_parse(pkt, (size_t)n + 15, family, a, b, buf, sizes[s]);
        }
    }
}

/* The payload built in place after the header's room. */
static void test_ip_wrap_in_place(void **state)
{
    (void)state;
    uint8_t pkt[128];
    const uint8_t a[4] = { 10, 1, 1, 1 }, b[4] = { 10, 1, 1, 2 };
    size_t len = load(golden_pong);

    memcpy(pkt + 20, buf, len);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, pkt + 20, len, pkt, sizeof(pkt)), 20 + len);
    check_parse(pkt, 20 + len, AF_INET, a, b, buf, len);
}

static void test_ip_wrap_errors(void **state)
{
    (void)state;
    static uint8_t pkt[70000];
    uint8_t a[16] = { 1 }, b[16] = { 2 };

    assert_int_equal(disco_ip_wrap(AF_UNIX, a, b, buf, 10, pkt, sizeof(pkt)), -EINVAL);
    assert_int_equal(disco_ip_wrap(AF_UNSPEC, a, b, buf, 10, pkt, sizeof(pkt)), -EINVAL);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, buf, 0, pkt, 19), -EMSGSIZE);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, buf, 10, pkt, 29), -EMSGSIZE);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, buf, 10, pkt, 30), 30);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, buf, 0, pkt, 39), -EMSGSIZE);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, buf, 10, pkt, 49), -EMSGSIZE);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, buf, 10, pkt, 50), 50);
    /* The length fields: IPv4's counts its header, IPv6's does not. */
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, pkt, 65535 - 20, pkt, sizeof(pkt)), 65535);
    assert_int_equal(disco_ip_wrap(AF_INET, a, b, pkt, 65535 - 19, pkt, sizeof(pkt)), -EMSGSIZE);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, pkt, 65535, pkt, sizeof(pkt)), 65535 + 40);
    assert_int_equal(disco_ip_wrap(AF_INET6, a, b, pkt, 65536, pkt, sizeof(pkt)), -EMSGSIZE);
}

/* A valid IPv4 disco packet in pkt; returns its length. */
static size_t ip4_sample(uint8_t *pkt, size_t cap)
{
    const uint8_t a[4] = { 10, 0, 0, 1 }, b[4] = { 10, 0, 0, 2 };
    size_t len = load(golden_ping);
    int n = disco_ip_wrap(AF_INET, a, b, buf, len, pkt, cap);

    assert_true(n > 0);
    return (size_t)n;
}

static void fix_checksum(uint8_t *pkt)
{
    pkt[10] = pkt[11] = 0;
    uint16_t c = checksum_le(pkt, 20);
    pkt[10] = (uint8_t)(c >> 8);
    pkt[11] = (uint8_t)c;
}

static int parse(const uint8_t *pkt, size_t len)
{
    const uint8_t *src, *dst, *payload;
    size_t plen;
    int family;

    return disco_ip_parse(pkt, len, &family, &src, &dst, &payload, &plen);
}

static void test_ip_parse_not_disco(void **state)
{
    (void)state;
    uint8_t pkt[128];
    const uint8_t a[16] = { 0xfd, [15] = 1 };
    const uint8_t others[] = { 1, 6, 17, 58, 252, 254 };

    for (size_t i = 0; i < sizeof(others); i++) {
        size_t n = ip4_sample(pkt, sizeof(pkt));
        pkt[9] = others[i];
        fix_checksum(pkt);
        assert_int_equal(parse(pkt, n), -ENOENT);
        /* Not looked at further: even a bad checksum is the kernel's. */
        pkt[10] ^= 1;
        assert_int_equal(parse(pkt, n), -ENOENT);

        int m = disco_ip_wrap(AF_INET6, a, a, buf, 9, pkt, sizeof(pkt));
        assert_true(m > 0);
        pkt[6] = others[i];
        assert_int_equal(parse(pkt, (size_t)m), -ENOENT);
    }
}

static void test_ip_parse_malformed(void **state)
{
    (void)state;
    uint8_t pkt[128];
    const uint8_t a[16] = { 0xfd, [15] = 1 };
    size_t n = ip4_sample(pkt, sizeof(pkt));

    assert_int_equal(parse(pkt, n), 0);
    assert_int_equal(parse(pkt, 0), -EBADMSG);
    assert_int_equal(parse(pkt, 19), -EBADMSG);          /* short of a header */
    assert_int_equal(parse(pkt, n - 1), -EBADMSG);       /* total length > bytes */
    pkt[0] = 0x55;                                        /* version 5 */
    assert_int_equal(parse(pkt, n), -EBADMSG);
    pkt[0] = 0x05;                                        /* version 0 */
    assert_int_equal(parse(pkt, n), -EBADMSG);

    const struct { size_t off; uint8_t val; } damage[] = {
        { 0, 0x46 },           /* options */
        { 0, 0x44 },           /* IHL below 5 */
        { 6, 0x60 },           /* DF and MF */
        { 6, 0x20 },           /* MF */
        { 7, 0x01 },           /* a fragment offset */
        { 2, 0x00 },           /* total length < 20 (with byte 3 = 0x25) */
    };
    for (size_t i = 0; i < sizeof(damage) / sizeof(damage[0]); i++) {
        n = ip4_sample(pkt, sizeof(pkt));
        pkt[damage[i].off] = damage[i].val;
        if (damage[i].off == 2)
            pkt[3] = 19;
        fix_checksum(pkt);
        assert_int_equal(parse(pkt, n), -EBADMSG);
    }
    /* One bit changed anywhere in the header, checksum left as it was
     * (the protocol byte aside: that makes it another protocol's). */
    for (size_t byte = 0; byte < 20; byte++) {
        if (byte == 9)
            continue;
        for (unsigned bit = 0; bit < 8; bit++) {
            n = ip4_sample(pkt, sizeof(pkt));
            pkt[byte] ^= (uint8_t)(1u << bit);
            assert_int_equal(parse(pkt, n), -EBADMSG);
        }
    }

    int m = disco_ip_wrap(AF_INET6, a, a, buf, 9, pkt, sizeof(pkt));
    assert_int_equal(m, 49);
    assert_int_equal(parse(pkt, 49), 0);
    assert_int_equal(parse(pkt, 39), -EBADMSG);
    assert_int_equal(parse(pkt, 48), -EBADMSG);          /* payload length > bytes */
    pkt[5] = 0xff;
    assert_int_equal(parse(pkt, 49), -EBADMSG);
}

/* --- sockaddr conversions ------------------------------------------------------------------ */

static void test_sockaddr_roundtrip(void **state)
{
    (void)state;
    struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(51820) };
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(443) };
    struct sockaddr_storage ss;
    struct disco_endpoint e, f;

    inet_pton(AF_INET, "198.51.100.7", &in4.sin_addr);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in4, sizeof(in4)), 0);
    f = ep4(198, 51, 100, 7, 51820);
    assert_true(disco_endpoint_equal(&e, &f));
    assert_int_equal(disco_endpoint_to_sockaddr(&e, (struct sockaddr *)&ss, sizeof(ss)),
                     sizeof(in4));
    assert_memory_equal(&ss, &in4, sizeof(in4));

    inet_pton(AF_INET6, "2001:db8::7", &in6.sin6_addr);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in6, sizeof(in6)), 0);
    f = ep6(0, 7, 443);
    assert_true(disco_endpoint_equal(&e, &f));
    assert_int_equal(disco_endpoint_to_sockaddr(&e, (struct sockaddr *)&ss, sizeof(ss)),
                     sizeof(in6));
    assert_memory_equal(&ss, &in6, sizeof(in6));

    /* A dual-stack socket's view of an IPv4 peer becomes family 4. */
    inet_pton(AF_INET6, "::ffff:198.51.100.7", &in6.sin6_addr);
    in6.sin6_port = htons(51820);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in6, sizeof(in6)), 0);
    f = ep4(198, 51, 100, 7, 51820);
    assert_true(disco_endpoint_equal(&e, &f));
}

static void test_sockaddr_errors(void **state)
{
    (void)state;
    struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(1) };
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(1) };
    struct sockaddr_un un = { .sun_family = AF_UNIX };
    struct sockaddr_storage ss;
    struct disco_endpoint e;

    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&un, sizeof(un)),
                     -EAFNOSUPPORT);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in4, 1), -EINVAL);
    inet_pton(AF_INET, "10.0.0.1", &in4.sin_addr);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in4, sizeof(in4) - 1),
                     -EINVAL);
    inet_pton(AF_INET6, "2001:db8::1", &in6.sin6_addr);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in6, sizeof(in6)), 0);
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in6, sizeof(in6) - 1),
                     -EINVAL);
    /* :: and 0.0.0.0 and port 0 are no endpoints. */
    memset(&in6.sin6_addr, 0, sizeof(in6.sin6_addr));
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in6, sizeof(in6)),
                     -EINVAL);
    in4.sin_port = 0;
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in4, sizeof(in4)),
                     -EINVAL);
    in4.sin_port = htons(1);
    in4.sin_addr.s_addr = 0;
    assert_int_equal(disco_endpoint_from_sockaddr(&e, (struct sockaddr *)&in4, sizeof(in4)),
                     -EINVAL);

    e = ep4(10, 0, 0, 1, 0);
    assert_int_equal(disco_endpoint_to_sockaddr(&e, (struct sockaddr *)&ss, sizeof(ss)), -EINVAL);
    e = ep4(10, 0, 0, 1, 1);
    assert_int_equal(disco_endpoint_to_sockaddr(&e, (struct sockaddr *)&ss,
                                                sizeof(struct sockaddr_in) - 1), -EMSGSIZE);
    e = ep6(1, 1, 1);
    assert_int_equal(disco_endpoint_to_sockaddr(&e, (struct sockaddr *)&ss,
                                                sizeof(struct sockaddr_in6) - 1), -EMSGSIZE);
}

static void test_endpoint_equal(void **state)
{
    (void)state;
    struct disco_endpoint a = ep4(10, 0, 0, 1, 1), b = a;

    b.addr[10] = 0x55;                          /* beyond an IPv4 address: ignored */
    assert_true(disco_endpoint_equal(&a, &b));
    b = a;
    b.port = 2;
    assert_false(disco_endpoint_equal(&a, &b));
    b = a;
    b.addr[3] = 2;
    assert_false(disco_endpoint_equal(&a, &b));
    b = a;
    b.family = DISCO_FAMILY_IPV6;
    assert_false(disco_endpoint_equal(&a, &b));
    a = ep6(1, 1, 1);
    b = a;
    assert_true(disco_endpoint_equal(&a, &b));
    b.addr[15] = 2;
    assert_false(disco_endpoint_equal(&a, &b));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_endpoints),
        cmocka_unit_test(test_roundtrip_punch),
        cmocka_unit_test(test_roundtrip_ping_pong),
        cmocka_unit_test(test_roundtrip_relay),
        cmocka_unit_test(test_relay_rewrite_in_place),
        cmocka_unit_test(test_golden_ping_pong),
        cmocka_unit_test(test_golden_punch),
        cmocka_unit_test(test_golden_endpoints),
        cmocka_unit_test(test_golden_relay),
        cmocka_unit_test(test_truncations_rejected),
        cmocka_unit_test(test_trailing_bytes_rejected),
        cmocka_unit_test(test_header_mutations),
        cmocka_unit_test(test_bad_magic_version_type),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_features),
        cmocka_unit_test(test_record),
        cmocka_unit_test(test_revoked),
        cmocka_unit_test(test_enclosed_ok),
        cmocka_unit_test(test_names_rejected),
        cmocka_unit_test(test_counts_over_max_encode),
        cmocka_unit_test(test_counts_over_max_decode),
        cmocka_unit_test(test_endpoint_valid),
        cmocka_unit_test(test_bad_endpoints_encode),
        cmocka_unit_test(test_bad_endpoints_decode),
        cmocka_unit_test(test_bad_flags_decode),
        cmocka_unit_test(test_relay_not_wireguard_encode),
        cmocka_unit_test(test_relay_not_wireguard_decode),
        cmocka_unit_test(test_encode_unknown_type),
        cmocka_unit_test(test_encode_too_small),
        cmocka_unit_test(test_no_allocation),
        cmocka_unit_test(test_ip4_golden),
        cmocka_unit_test(test_ip6_golden),
        cmocka_unit_test(test_ip_roundtrip),
        cmocka_unit_test(test_ip_wrap_in_place),
        cmocka_unit_test(test_ip_wrap_errors),
        cmocka_unit_test(test_ip_parse_not_disco),
        cmocka_unit_test(test_ip_parse_malformed),
        cmocka_unit_test(test_sockaddr_roundtrip),
        cmocka_unit_test(test_sockaddr_errors),
        cmocka_unit_test(test_endpoint_equal),
        cmocka_unit_test(test_cert),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
