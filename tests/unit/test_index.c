/* SPDX-License-Identifier: MIT */
/* Tests of the receiver-index table (overlay/engine/model/index.c): add, find, remove,
 * full table, and a long random run against a plain array as the model,
 * which exercises removal from the middle of probe runs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>
#include <sodium.h>

#include "overlay/engine/model/index.h"

static void test_add_find_remove(void **state)
{
    (void)state;
    struct index_table t;
    struct peer *peer = (struct peer *)0x1000;
    struct noise_keypair *kp = (struct noise_keypair *)0x2000;

    assert_int_equal(index_table_init(&t, 4), 0);
    uint32_t a = index_add(&t, peer, NULL), b = index_add(&t, peer, kp);
    assert_int_not_equal(a, 0);
    assert_int_not_equal(b, 0);
    assert_int_not_equal(a, b);
    assert_ptr_equal(index_find(&t, a)->peer, peer);
    assert_null(index_find(&t, a)->keypair);
    assert_ptr_equal(index_find(&t, b)->keypair, kp);
    assert_null(index_find(&t, 0));
    index_remove(&t, a);
    assert_null(index_find(&t, a));
    assert_non_null(index_find(&t, b));
    index_remove(&t, a);            /* twice: nothing happens */
    assert_int_equal(t.used, 1);
    index_table_destroy(&t);
}

static void test_full_table_refuses(void **state)
{
    (void)state;
    struct index_table t;
    assert_int_equal(index_table_init(&t, 8), 0);
    size_t added = 0;
    while (index_add(&t, NULL, NULL))
        added++;
    /* Sized for at least 8, never more than half the slots. */
    assert_true(added >= 8);
    assert_true(2 * added <= t.cap);
    index_table_destroy(&t);
}

/* A table with few slots, so runs collide and wrap; every operation is
 * checked against a model array of the live indices. */
static void test_random_against_model(void **state)
{
    (void)state;
    enum { LIVE = 24, ROUNDS = 200000 };
    struct index_table t;
    uint32_t live[LIVE] = { 0 };
    assert_int_equal(index_table_init(&t, LIVE), 0);
    srand(7);
    for (int r = 0; r < ROUNDS; r++) {
        int i = rand() % LIVE;
        if (live[i]) {
            index_remove(&t, live[i]);
            assert_null(index_find(&t, live[i]));
            live[i] = 0;
        } else {
            live[i] = index_add(&t, (struct peer *)(uintptr_t)(i + 1), NULL);
            assert_int_not_equal(live[i], 0);
        }
        if (r % 97 == 0)
            for (int k = 0; k < LIVE; k++)
                if (live[k]) {
                    struct index_entry *e = index_find(&t, live[k]);
                    assert_non_null(e);
                    assert_ptr_equal(e->peer, (struct peer *)(uintptr_t)(k + 1));
                }
    }
    index_table_destroy(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_add_find_remove),
        cmocka_unit_test(test_full_table_refuses),
        cmocka_unit_test(test_random_against_model),
    };
    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
