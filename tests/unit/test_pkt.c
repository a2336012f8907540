/* SPDX-License-Identifier: MIT */
/* Tests of overlay/loop/pkt.c's sizing: how many full-size segments one GSO
 * send carries, which caps ddp0's super-packets (a cap one too high would
 * send every super-packet in two sends; one too low wastes a segment per
 * send). The expected counts are worked out here from the wire layout
 * (16-byte header, plaintext padded to 16 but not past the MTU, 16-byte
 * tag), not from the code under test. And the planned cut: counted on the
 * loop, made later where the segments are sealed. And what a receive's
 * control messages say of the datagrams the kernel dropped at the socket
 * (SO_RXQ_OVFL), asked of a real socket on loopback. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "overlay/engine/model/device.h"
#include "overlay/loop/pkt.h"
#include "tests/unit/tso_read.h"

#define HEADER_AND_TAG 32u

/* A full-size segment as it goes on the wire. */
static unsigned sealed_full(unsigned mtu)
{
    unsigned padded = (mtu + 15u) / 16u * 16u;

    return HEADER_AND_TAG + (padded > mtu ? mtu : padded);
}

static void test_common_mtus(void **state)
{
    (void)state;
    assert_int_equal(pkt_gso_segments(1420), 44);   /* 65000 / 1452 */
    assert_int_equal(pkt_gso_segments(1280), 49);   /* 65000 / 1312 */
    assert_int_equal(pkt_gso_segments(8921), 7);    /* 65000 / 8953: jumbo frames */
    assert_int_equal(pkt_gso_segments(DEVICE_MTU_MAX), 7);
}

/* Small MTUs hit the kernel's 64 segments per send before the bytes. */
static void test_capped_at_kernel_segments(void **state)
{
    (void)state;
    assert_int_equal(pkt_gso_segments(CLUSTER_MTU_MIN_IPV4), PKT_GSO_MAX_SEGS);
    assert_int_equal(pkt_gso_segments(960), PKT_GSO_MAX_SEGS);   /* 65 x 992 would fit */
    assert_int_equal(pkt_gso_segments(1000), 62);                /* 63 x 1032 does not */
}

/* Every MTU ddpnet accepts: the count fits one send, and one more would not. */
static void test_every_mtu_fits_one_send(void **state)
{
    (void)state;
    for (unsigned mtu = CLUSTER_MTU_MIN_IPV4; mtu <= DEVICE_MTU_MAX; mtu++) {
        unsigned n = pkt_gso_segments(mtu), stride = sealed_full(mtu);

        assert_true(n >= 1 && n <= PKT_GSO_MAX_SEGS);
        assert_true(n * stride <= PKT_GSO_MAX_BYTES);
        if (n < PKT_GSO_MAX_SEGS)
            assert_true((n + 1) * stride > PKT_GSO_MAX_BYTES);
    }
}

#define CUT_PAYLOAD 3000u
#define CUT_GSO     1000u
#define CUT_HDRS    TSO_READ_HDRS
#define CUT_STRIDE  1100u

static struct vnet_hdr read_tso(struct pkt *p)
{
    return tso_read(p, CUT_PAYLOAD, CUT_GSO);
}

/* The plan counts the read's segments and writes none; the cut, later,
 * makes exactly those (the same bytes offload_segment makes), once. */
static void test_cut_planned_then_made(void **state)
{
    (void)state;
    struct pkt *p = calloc(1, sizeof(*p));
    uint8_t *direct = malloc(PKT_AREA_CAP);
    uint16_t direct_lens[PKT_MAX_SEGS];

    assert_non_null(p);
    assert_non_null(direct);
    struct vnet_hdr h = read_tso(p);
    memset(p->area, 0xa5, PKT_AREA_CAP);
    assert_int_equal(pkt_plan_cut(p, &h, CUT_STRIDE), 3);
    assert_true(p->cut_pending);
    assert_int_equal(p->nseg, 3);
    assert_int_equal(p->stride, CUT_STRIDE);
    assert_int_equal(p->seg_len[2], CUT_HDRS + CUT_PAYLOAD - 2 * CUT_GSO);
    for (size_t i = 0; i < PKT_AREA_CAP; i++)
        if (p->area[i] != 0xa5)
            fail_msg("the plan wrote area byte %zu", i);

    struct offload_area a = { .base = direct, .stride = CUT_STRIDE,
                              .headroom = WG_TRANSPORT_HEADER_LEN, .tailroom = WG_AEAD_TAG_LEN,
                              .slots = PKT_MAX_SEGS, .lens = direct_lens };
    assert_int_equal(offload_segment(&h, p->in + OFFLOAD_VNET_HDR_LEN,
                                     p->len - OFFLOAD_VNET_HDR_LEN, &a), 3);
    assert_int_equal(pkt_cut(p), 0);
    assert_false(p->cut_pending);
    assert_int_equal(p->nseg, 3);
    for (unsigned i = 0; i < 3; i++) {
        assert_int_equal(p->seg_len[i], direct_lens[i]);
        assert_memory_equal(pkt_seg_plain(p, i), direct + i * CUT_STRIDE + WG_TRANSPORT_HEADER_LEN,
                            direct_lens[i]);
    }
    /* Once: a second call is no cut at all (the segments may be sealed). */
    pkt_slot(p, 0)[WG_TRANSPORT_HEADER_LEN] = 0;
    assert_int_equal(pkt_cut(p), 0);
    assert_int_equal(pkt_slot(p, 0)[WG_TRANSPORT_HEADER_LEN], 0);
    free(direct);
    free(p);
}

/* What the plan refuses is never marked pending; a cut that would not
 * give what was counted sends nothing (nseg 0) rather than segments the
 * counters were not taken for. */
static void test_cut_refusals(void **state)
{
    (void)state;
    struct pkt *p = calloc(1, sizeof(*p));

    assert_non_null(p);
    struct vnet_hdr h = read_tso(p);
    struct vnet_hdr bad = h;
    bad.gso_size = 0;
    assert_int_equal(pkt_plan_cut(p, &bad, CUT_STRIDE), -EINVAL);
    assert_false(p->cut_pending);
    assert_int_equal(pkt_plan_cut(p, &h, 0), -EINVAL);
    assert_int_equal(pkt_plan_cut(p, &h, CUT_HDRS + CUT_GSO), -EMSGSIZE);   /* no room */
    assert_false(p->cut_pending);
    uint32_t len = p->len;
    p->len = OFFLOAD_VNET_HDR_LEN - 1;
    assert_int_equal(pkt_plan_cut(p, &h, CUT_STRIDE), -EINVAL);
    p->len = len;

    assert_int_equal(pkt_plan_cut(p, &h, CUT_STRIDE), 3);
    p->in[OFFLOAD_VNET_HDR_LEN + 9] = IPPROTO_UDP;    /* changed under the plan */
    assert_int_equal(pkt_cut(p), -EIO);
    assert_int_equal(p->nseg, 0);
    assert_false(p->cut_pending);

    read_tso(p);
    assert_int_equal(pkt_plan_cut(p, &h, CUT_STRIDE), 3);
    p->len -= CUT_GSO;    /* a segment fewer */
    p->in[OFFLOAD_VNET_HDR_LEN + 2] = (uint8_t)((p->len - OFFLOAD_VNET_HDR_LEN) >> 8);
    p->in[OFFLOAD_VNET_HDR_LEN + 3] = (uint8_t)(p->len - OFFLOAD_VNET_HDR_LEN);
    assert_int_equal(pkt_cut(p), -EIO);
    assert_int_equal(p->nseg, 0);
    free(p);
}

/* A running total: its growth only, never an older total handed back
 * late by a receive that completed out of order, across the wrap. */
static void test_drops_grew(void **state)
{
    uint32_t seen = 0;

    (void)state;
    assert_int_equal(pkt_drops_grew(&seen, 0), 0);
    assert_int_equal(pkt_drops_grew(&seen, 5), 5);
    assert_int_equal(pkt_drops_grew(&seen, 5), 0);
    assert_int_equal(pkt_drops_grew(&seen, 3), 0);      /* older: no news */
    assert_int_equal(seen, 5);
    assert_int_equal(pkt_drops_grew(&seen, 12), 7);
    seen = UINT32_MAX - 1;
    assert_int_equal(pkt_drops_grew(&seen, 2), 4);      /* wrapped */
    assert_int_equal(seen, 2);
    assert_int_equal(pkt_drops_grew(&seen, UINT32_MAX), 0);   /* behind, across the wrap */
}

/* Receives into p as the loop arms them (loop.c: arm_udp_recv): -errno or
 * the bytes, with p->len set. */
static ssize_t recv_as_loop(int fd, struct pkt *p)
{
    ssize_t n;

    p->iov = (struct iovec){ p->in, sizeof(p->in) };
    p->msg = (struct msghdr){ .msg_name = &p->addr, .msg_namelen = sizeof(p->addr),
                              .msg_iov = &p->iov, .msg_iovlen = 1,
                              .msg_control = p->ctrl.bytes,
                              .msg_controllen = sizeof(p->ctrl.bytes) };
    n = recvmsg(fd, &p->msg, MSG_DONTWAIT);
    if (n >= 0)
        p->len = (uint32_t)n;
    return n;
}

/* A socket as the daemon makes it (GRO, SO_RXQ_OVFL), with the smallest
 * buffer, flooded: the drops are told by the first datagram queued after
 * them, whole, beside GRO's message in the pkt's control space (never cut:
 * MSG_CTRUNC). */
#define MARKER_LEN 100
static void test_socket_drops_told(void **state)
{
    struct sockaddr_in at = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(at);
    int rx = socket(AF_INET, SOCK_DGRAM, 0), tx = socket(AF_INET, SOCK_DGRAM, 0);
    int one = 1, tiny = 1, sent = 0;
    uint8_t data[1200] = { 0 };
    uint32_t seen = 0, dropped = 0;
    struct pkt *p = calloc(1, sizeof(*p));
    struct pkt_recv_info ri;

    (void)state;
    assert_non_null(p);
    assert_true(rx >= 0 && tx >= 0);
    assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_RCVBUF, &tiny, sizeof(tiny)), 0);
    assert_int_equal(setsockopt(rx, SOL_UDP, UDP_GRO, &one, sizeof(one)), 0);
    assert_int_equal(setsockopt(rx, SOL_SOCKET, SO_RXQ_OVFL, &one, sizeof(one)), 0);
    assert_int_equal(bind(rx, (struct sockaddr *)&at, sizeof(at)), 0);
    assert_int_equal(getsockname(rx, (struct sockaddr *)&at, &len), 0);
    for (int i = 0; i < 200; i++)
        sent += sendto(tx, data, sizeof(data), 0, (struct sockaddr *)&at, sizeof(at)) > 0;
    assert_int_equal(sent, 200);
    /* Loopback delivers in a softirq that a busy machine may defer: let
     * the flood land, read what was queued, then send the marker, a
     * shorter datagram, which tells the drops of the flood. */
    usleep(50 * 1000);
    unsigned got = 0;
    bool marker = false;
    for (int round = 0; round < 2; round++) {
        while (recv_as_loop(rx, p) > 0) {
            ri = pkt_recv_info(p);
            assert_false(p->msg.msg_flags & MSG_CTRUNC);
            if (ri.has_drops)
                dropped += pkt_drops_grew(&seen, ri.drops);
            if (p->len == MARKER_LEN) {
                assert_true(ri.has_drops);
                marker = true;
                continue;
            }
            assert_int_equal(ri.seg_size, sizeof(data));
            got += p->len / ri.seg_size;
        }
        if (round == 0) {
            assert_int_equal(sendto(tx, data, MARKER_LEN, 0, (struct sockaddr *)&at, sizeof(at)),
                             (ssize_t)MARKER_LEN);
            usleep(50 * 1000);
        }
    }
    assert_true(marker);
    assert_true(got > 0 && got < 200);
    assert_int_equal(dropped, 200 - got);
    close(rx);
    close(tx);
    free(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_mtus),
        cmocka_unit_test(test_capped_at_kernel_segments),
        cmocka_unit_test(test_every_mtu_fits_one_send),
        cmocka_unit_test(test_cut_planned_then_made),
        cmocka_unit_test(test_cut_refusals),
        cmocka_unit_test(test_drops_grew),
        cmocka_unit_test(test_socket_drops_told),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
