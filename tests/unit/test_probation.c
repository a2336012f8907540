/* SPDX-License-Identifier: MIT */
/* Tests of the probationary peers' table (overlay/engine/model/probation.c) on
 * a fake clock: the total bound, the per-source share, the 10 s window,
 * ending a probation, and no allocation. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/engine/model/probation.h"
#include "tests/unit/alloc_count.h"

#define SEC UINT64_C(1000000000)
#define T0  (100 * SEC)

static uint8_t key_buf[PROBATION_KEY_LEN], src_buf[RATELIMIT_KEY_LEN];

static const uint8_t *key(unsigned n)
{
    memset(key_buf, 0, sizeof(key_buf));
    key_buf[0] = (uint8_t)n;
    key_buf[31] = 0x5a;
    return key_buf;
}

static const uint8_t *src(unsigned n)
{
    memset(src_buf, 0, sizeof(src_buf));
    src_buf[0] = 4;
    src_buf[1] = 10;
    src_buf[4] = (uint8_t)n;
    return src_buf;
}

/* PROBATION_MAX keys from as many sources fill it; the next is refused
 * and nothing in it is evicted. */
static void test_table_full(void **state)
{
    struct probation t;
    uint8_t k[PROBATION_KEY_LEN];

    (void)state;
    probation_init(&t);
    size_t before = alloc_count();
    for (unsigned i = 0; i < PROBATION_MAX; i++)
        assert_int_equal(probation_admit(&t, key(i), src(i), T0), 0);
    assert_int_equal(probation_admit(&t, key(200), src(200), T0 + SEC), -EBUSY);
    assert_int_equal(t.refused_full, 1);
    assert_int_equal(probation_count(&t), PROBATION_MAX);
    for (unsigned i = 0; i < PROBATION_MAX; i++)
        assert_true(probation_has(&t, key(i)));
    assert_false(probation_has(&t, key(200)));
    /* Ending one makes room. */
    assert_true(probation_end(&t, key(3)));
    assert_false(probation_end(&t, key(3)));
    assert_int_equal(probation_admit(&t, key(200), src(200), T0 + SEC), 0);
    assert_false(probation_expire(&t, T0 + SEC, k));
    assert_int_equal(alloc_count(), before);
}

/* One source holds at most PROBATION_PER_SOURCE keys. */
static void test_per_source(void **state)
{
    struct probation t;

    (void)state;
    probation_init(&t);
    for (unsigned i = 0; i < PROBATION_PER_SOURCE; i++)
        assert_int_equal(probation_admit(&t, key(i), src(7), T0), 0);
    assert_int_equal(probation_admit(&t, key(50), src(7), T0), -EBUSY);
    assert_int_equal(t.refused_source, 1);
    assert_int_equal(probation_admit(&t, key(50), src(8), T0), 0);
    /* Again the same key: not renewed. */
    assert_int_equal(probation_admit(&t, key(50), src(8), T0 + 5 * SEC), -EEXIST);
}

/* After PROBATION_TIMEOUT_NS an entry is taken, once; one admitted later
 * stays until its own window ends. */
static void test_timeout(void **state)
{
    struct probation t;
    uint8_t k[PROBATION_KEY_LEN];

    (void)state;
    probation_init(&t);
    assert_int_equal(probation_admit(&t, key(1), src(1), T0), 0);
    assert_int_equal(probation_admit(&t, key(2), src(2), T0 + 5 * SEC), 0);
    assert_false(probation_expire(&t, T0 + PROBATION_TIMEOUT_NS - 1, k));
    assert_true(probation_expire(&t, T0 + PROBATION_TIMEOUT_NS, k));
    assert_memory_equal(k, key(1), PROBATION_KEY_LEN);
    assert_false(probation_expire(&t, T0 + PROBATION_TIMEOUT_NS, k));
    assert_false(probation_has(&t, key(1)));
    assert_true(probation_has(&t, key(2)));
    assert_true(probation_expire(&t, T0 + 5 * SEC + PROBATION_TIMEOUT_NS, k));
    assert_memory_equal(k, key(2), PROBATION_KEY_LEN);
    assert_int_equal(probation_count(&t), 0);
    assert_int_equal(t.expired, 2);
}

/* probation_due names the due keys and takes none of them. */
static void test_due(void **state)
{
    struct probation t;
    uint8_t due[PROBATION_MAX][PROBATION_KEY_LEN];

    (void)state;
    probation_init(&t);
    assert_int_equal(probation_admit(&t, key(1), src(1), T0), 0);
    assert_int_equal(probation_admit(&t, key(2), src(2), T0 + 5 * SEC), 0);
    assert_int_equal(probation_due(&t, T0 + PROBATION_TIMEOUT_NS - 1, due), 0);
    assert_int_equal(probation_due(&t, T0 + PROBATION_TIMEOUT_NS, due), 1);
    assert_memory_equal(due[0], key(1), PROBATION_KEY_LEN);
    assert_int_equal(probation_due(&t, T0 + 5 * SEC + PROBATION_TIMEOUT_NS, due), 2);
    assert_int_equal(probation_count(&t), 2);
    assert_int_equal(t.expired, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_full),
        cmocka_unit_test(test_per_source),
        cmocka_unit_test(test_timeout),
        cmocka_unit_test(test_due),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
