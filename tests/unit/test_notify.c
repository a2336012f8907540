/* SPDX-License-Identifier: MIT */
/* Tests of notify_unit_parse (daemon/notify.h): the systemd unit found in
 * /proc/self/cgroup's text, for cgroup v2 and v1, and where there is none. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/daemon/notify.h"

static void test_unit_parse(void **state)
{
    char unit[32];

    (void)state;
    /* cgroup v2: one line. */
    assert_int_equal(notify_unit_parse("0::/system.slice/system-ddpnet.slice/"
                                       "ddpnet@ddp0.service\n", unit, sizeof(unit)), 0);
    assert_string_equal(unit, "ddpnet@ddp0.service");
    /* A service's sub-cgroup: the service, not what is below it. */
    assert_int_equal(notify_unit_parse("0::/system.slice/ddpnet@ddp1.service/payload\n",
                                       unit, sizeof(unit)), 0);
    assert_string_equal(unit, "ddpnet@ddp1.service");
    /* cgroup v1: the first line that names one. */
    assert_int_equal(notify_unit_parse("12:cpuset:/\n"
                                       "1:name=systemd:/system.slice/ddpnet@gpu.service\n"
                                       "0::/system.slice/ddpnet@gpu.service", unit,
                                       sizeof(unit)), 0);
    assert_string_equal(unit, "ddpnet@gpu.service");
    /* A shell in a session, a container's root, nothing. */
    assert_int_equal(notify_unit_parse("0::/user.slice/user-0.slice/session-3.scope\n", unit,
                                       sizeof(unit)), -ENOENT);
    assert_string_equal(unit, "");
    assert_int_equal(notify_unit_parse("0::/\n", unit, sizeof(unit)), -ENOENT);
    assert_int_equal(notify_unit_parse("", unit, sizeof(unit)), -ENOENT);
    assert_int_equal(notify_unit_parse("garbage\n", unit, sizeof(unit)), -ENOENT);
    assert_int_equal(notify_unit_parse("0::/.service\n", unit, sizeof(unit)), -ENOENT);
    /* Too long for the room given. */
    assert_int_equal(notify_unit_parse("0::/a-very-long-unit-name-indeed-yes.service\n", unit,
                                       sizeof(unit)), -ENAMETOOLONG);
    assert_int_equal(notify_unit_parse("0::/x.service\n", unit, 0), -ENAMETOOLONG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unit_parse),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
