/* SPDX-License-Identifier: MIT */
/* Tests of overlay/loop/pkt.c's sizing: how many full-size segments one GSO
 * send carries, which caps ddp0's super-packets (a cap one too high would
 * send every super-packet in two sends; one too low wastes a segment per
 * send). The expected counts are worked out here from the wire layout
 * (16-byte header, plaintext padded to 16 but not past the MTU, 16-byte
 * tag), not from the code under test. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "config/cluster.h"
#include "overlay/engine/device.h"
#include "overlay/loop/pkt.h"

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_common_mtus),
        cmocka_unit_test(test_capped_at_kernel_segments),
        cmocka_unit_test(test_every_mtu_fits_one_send),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
