/* SPDX-License-Identifier: MIT */
/* The flow table (overlay/engine/model/flows.h): new flows take the shards
 * in turn, a flow keeps its hint, the table stays bounded and a flow that
 * finds its neighbourhood full takes the oldest slot. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/engine/model/flows.h"

static struct flows *f;

static int setup(void **state)
{
    (void)state;
    f = calloc(1, sizeof(*f));
    return f ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    free(f);
    return 0;
}

/* 4 flows over 2 shards: 2 each, whatever their hashes; each keeps its own. */
static void test_round_robin(void **state)
{
    static const uint32_t hashes[] = { 0x1001, 0x2001, 0x3001, 0x4001, 0x1002, 0x77 };
    unsigned per[3] = { 0 }, first[6];

    (void)state;
    for (unsigned i = 0; i < 4; i++)
        per[first[i] = flows_hint(f, hashes[i], 2, 1)]++;
    assert_int_equal(per[0], 2);
    assert_int_equal(per[1], 2);
    for (unsigned round = 0; round < 10; round++)
        for (unsigned i = 0; i < 4; i++)
            assert_int_equal(flows_hint(f, hashes[i], 2, 2 + round), first[i]);
    /* Over 3 shards, 3 new flows: one each. */
    memset(per, 0, sizeof(per));
    per[flows_hint(f, hashes[4], 3, 20)]++;
    per[flows_hint(f, hashes[5], 3, 20)]++;
    per[flows_hint(f, 0x99, 3, 20)]++;
    assert_int_equal(per[0] + per[1] + per[2], 3);
    assert_true(per[0] == 1 && per[1] == 1 && per[2] == 1);
}

/* Without shards, or not a flow (hash 0): hint 0, nothing kept. */
static void test_no_shards(void **state)
{
    (void)state;
    for (uint32_t h = 1; h < 100; h++)
        assert_int_equal(flows_hint(f, h, 1, 1), 0);
    assert_int_equal(flows_hint(f, 0, 4, 1), 0);
    for (unsigned i = 0; i < FLOWS_SLOTS; i++)
        assert_int_equal(f->slot[i].hash, 0);
}

/* Many more flows than slots: still bounded, every answer below the
 * shard count; a crowded neighbourhood gives its oldest slot away, and
 * the flows seen since keep theirs. */
static void test_bounded(void **state)
{
    unsigned keep;

    (void)state;
    for (uint32_t h = 1; h <= 10 * FLOWS_SLOTS; h++)
        assert_true(flows_hint(f, h * 2654435761u | 1u, 8, h) < 8);
    /* FLOWS_PROBE + 1 flows that all start at one slot. */
    memset(f, 0, sizeof(*f));
    for (unsigned i = 0; i < FLOWS_PROBE; i++)
        flows_hint(f, 5 + i * FLOWS_SLOTS, 4, 100 + i);
    keep = flows_hint(f, 5 + 1 * FLOWS_SLOTS, 4, 200);   /* seen again: now the newest */
    flows_hint(f, 5 + FLOWS_PROBE * FLOWS_SLOTS, 4, 300); /* takes the oldest: flow 0's */
    assert_int_equal(flows_hint(f, 5 + 1 * FLOWS_SLOTS, 4, 301), keep);
    unsigned found = 0;
    for (unsigned i = 0; i < FLOWS_SLOTS; i++)
        found += f->slot[i].hash == 5u;
    assert_int_equal(found, 0);
}

/* The underlay flows (path_flows) take the same turns: 8 inner flows
 * over 4 underlay flows, 2 each, each keeping its own; with 2 shards
 * the hint and the flow of one inner flow agree modulo 2. */
static void test_turns(void **state)
{
    unsigned per[4] = { 0 }, first[8];

    (void)state;
    for (uint32_t i = 0; i < 8; i++)
        per[first[i] = flows_turn(f, 0x100 + i * 977u, 1) % 4u]++;
    for (unsigned k = 0; k < 4; k++)
        assert_int_equal(per[k], 2);
    for (uint32_t i = 0; i < 8; i++) {
        assert_int_equal(flows_turn(f, 0x100 + i * 977u, 2) % 4u, first[i]);
        assert_int_equal(flows_hint(f, 0x100 + i * 977u, 2, 3), first[i] % 2u);
    }
    assert_int_equal(flows_turn(f, 0, 4), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_robin, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_shards, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_turns, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
