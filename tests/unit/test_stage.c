/* SPDX-License-Identifier: MIT */
/* Tests of the staging store (overlay/engine/model/stage.c): packets come back whole
 * and in order whatever their size (cells straddled, keepalives of no
 * bytes); each peer is held to its bound by losing its oldest; a full
 * store takes from the peer that holds the most; nothing is allocated
 * after stage_init; a long random run against a model queue. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/engine/model/stage.h"
#include "tests/unit/alloc_count.h"

#define MAX_PKT (64u * 1024u + 12u)

/* Packet i of length len: bytes derived from both, so that a mix-up shows. */
static void fill(uint8_t *buf, uint32_t len, uint32_t i)
{
    for (uint32_t k = 0; k < len; k++)
        buf[k] = (uint8_t)(k * 7u + i * 13u + 1u);
}

static void expect_pop(struct stage_store *s, struct stage_queue *q, uint32_t len, uint32_t i)
{
    static uint8_t got[MAX_PKT], want[MAX_PKT];

    fill(want, len, i);
    assert_int_equal(stage_pop(s, q, got, sizeof(got)), (long)len);
    assert_memory_equal(got, want, len);
}

static void push(struct stage_store *s, struct stage_queue *q, uint32_t len, uint32_t i)
{
    static uint8_t buf[MAX_PKT];

    fill(buf, len, i);
    assert_int_equal(stage_push(s, q, buf, len), 0);
}

static void test_round_trip_sizes(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q = { 0 };
    const uint32_t lens[] = { 0, 1, 84, 2040, 2044, 2045, 4100, 1500, 65547, 0, 3 };
    const size_t n = sizeof(lens) / sizeof(lens[0]);

    assert_int_equal(stage_init(&s, STAGE_TOTAL_BYTES, 256u * 1024u), 0);
    for (size_t i = 0; i < n; i++)
        push(&s, &q, lens[i], (uint32_t)i);
    assert_int_equal(q.packets, n);
    for (size_t i = 0; i < n; i++)
        expect_pop(&s, &q, lens[i], (uint32_t)i);
    assert_int_equal(stage_pop(&s, &q, NULL, 0), -ENOENT);
    /* Every cell is back once the queue is empty. */
    assert_int_equal(q.cells, 0);
    assert_int_equal(stage_used_bytes(&s), 0);
    assert_null(s.busy);
    stage_destroy(&s);
}

static void test_small_packets_share_cells(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q = { 0 };

    assert_int_equal(stage_init(&s, STAGE_TOTAL_BYTES, STAGE_PEER_BYTES), 0);
    /* 100 pings of 84 bytes: 8800 bytes with their lengths, 5 cells, not 100. */
    for (uint32_t i = 0; i < 100; i++)
        push(&s, &q, 84, i);
    assert_int_equal(q.cells, 5);
    assert_int_equal(stage_queue_bytes(&q), 5 * STAGE_CELL_BYTES);
    stage_destroy(&s);
}

static void test_peer_bound_drops_oldest(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q = { 0 };
    const uint32_t peer_cells = 8;

    assert_int_equal(stage_init(&s, STAGE_TOTAL_BYTES, peer_cells * STAGE_CELL_BYTES), 0);
    for (uint32_t i = 0; i < 100; i++) {
        push(&s, &q, 1500, i);
        assert_true(q.cells <= peer_cells);
    }
    /* The newest survive, in order, and the rest were counted. */
    uint32_t kept = q.packets;
    assert_true(kept >= 8 && kept <= 11);
    assert_int_equal(s.stats.dropped_peer_full, 100 - kept);
    for (uint32_t i = 100 - kept; i < 100; i++)
        expect_pop(&s, &q, 1500, i);
    stage_destroy(&s);
}

static void test_too_big_for_a_peer(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q = { 0 };
    static uint8_t buf[MAX_PKT];

    assert_int_equal(stage_init(&s, STAGE_TOTAL_BYTES, 4 * STAGE_CELL_BYTES), 0);
    push(&s, &q, 100, 0);
    assert_int_equal(stage_push(&s, &q, buf, 5 * STAGE_CELL_BYTES), -EMSGSIZE);
    assert_int_equal(s.stats.dropped_too_big, 1);
    /* What was there stays. */
    expect_pop(&s, &q, 100, 0);
    stage_destroy(&s);
}

static void test_full_store_takes_from_largest(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue down[4] = { { 0 } }, live = { 0 };

    /* 16 cells in all, 8 per peer. */
    assert_int_equal(stage_init(&s, 16 * STAGE_CELL_BYTES, 8 * STAGE_CELL_BYTES), 0);
    for (uint32_t i = 0; i < 40; i++)
        push(&s, &down[i % 2 ? 1 : 0], 1500, i);
    assert_int_equal(stage_used_bytes(&s), 16 * STAGE_CELL_BYTES);
    /* A peer that held nothing still gets in: the largest gave way. */
    push(&s, &live, 1500, 1000);
    assert_int_equal(live.packets, 1);
    assert_true(s.stats.dropped_store_full >= 1);
    assert_true(down[0].cells + down[1].cells + live.cells <= 16);
    expect_pop(&s, &live, 1500, 1000);
    /* And can grow to its own bound while the others hold more. */
    for (uint32_t i = 0; i < 20; i++)
        push(&s, &live, 1500, 2000 + i);
    assert_true(live.cells >= 4);
    assert_true(live.cells <= 8);
    stage_clear(&s, &down[0]);
    stage_clear(&s, &down[1]);
    stage_clear(&s, &live);
    assert_int_equal(stage_used_bytes(&s), 0);
    stage_destroy(&s);
}

static void test_clear_and_no_allocation(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q[3] = { { 0 } };

    assert_int_equal(stage_init(&s, 64 * STAGE_CELL_BYTES, 16 * STAGE_CELL_BYTES), 0);
    size_t before = alloc_count();
    for (uint32_t i = 0; i < 3000; i++)
        push(&s, &q[i % 3], (i * 97u) % 3000u, i);
    assert_int_equal(alloc_count(), before);
    unsigned n = q[1].packets;
    assert_int_equal(stage_clear(&s, &q[1]), n);
    assert_int_equal(q[1].packets, 0);
    assert_int_equal(q[1].cells, 0);
    stage_clear(&s, &q[0]);
    stage_clear(&s, &q[2]);
    assert_int_equal(s.n_free, s.n_cells);
    stage_destroy(&s);
}

static void test_pop_into_small_buffer(void **state)
{
    (void)state;
    struct stage_store s;
    struct stage_queue q = { 0 };
    uint8_t small[10];

    assert_int_equal(stage_init(&s, STAGE_TOTAL_BYTES, STAGE_PEER_BYTES), 0);
    push(&s, &q, 3000, 0);
    push(&s, &q, 5, 1);
    assert_int_equal(stage_pop(&s, &q, small, sizeof(small)), -ENOSPC);
    /* The long one is gone; the next comes back whole. */
    expect_pop(&s, &q, 5, 1);
    assert_int_equal(stage_used_bytes(&s), 0);
    stage_destroy(&s);
}

/* Random pushes and pops on a few queues against a model of what each
 * should hold (lengths and ids), with bounds small enough to overflow. */
static void test_random_against_model(void **state)
{
    (void)state;
    enum { QUEUES = 3, MODEL = 4096, ROUNDS = 20000 };
    struct stage_store s;
    struct stage_queue q[QUEUES] = { { 0 } };
    static uint32_t len[QUEUES][MODEL], id[QUEUES][MODEL];
    unsigned head[QUEUES] = { 0 }, count[QUEUES] = { 0 };

    srand(7);
    assert_int_equal(stage_init(&s, 40 * STAGE_CELL_BYTES, 16 * STAGE_CELL_BYTES), 0);
    for (uint32_t r = 0; r < ROUNDS; r++) {
        unsigned k = (unsigned)rand() % QUEUES;
        if (rand() % 3) {
            uint32_t l = (uint32_t)rand() % (rand() % 8 ? 1600u : 20000u);
            push(&s, &q[k], l, r);
            unsigned slot = (head[k] + count[k]) % MODEL;
            len[k][slot] = l;
            id[k][slot] = r;
            count[k]++;
            /* Whatever the store dropped was the oldest of some queue. */
            for (unsigned j = 0; j < QUEUES; j++) {
                while (count[j] > q[j].packets) {
                    head[j] = (head[j] + 1) % MODEL;
                    count[j]--;
                }
                assert_int_equal(count[j], q[j].packets);
            }
        } else if (count[k]) {
            expect_pop(&s, &q[k], len[k][head[k]], id[k][head[k]]);
            head[k] = (head[k] + 1) % MODEL;
            count[k]--;
        }
        assert_true(s.n_cells - s.n_free == q[0].cells + q[1].cells + q[2].cells);
    }
    stage_destroy(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_sizes),
        cmocka_unit_test(test_small_packets_share_cells),
        cmocka_unit_test(test_peer_bound_drops_oldest),
        cmocka_unit_test(test_too_big_for_a_peer),
        cmocka_unit_test(test_full_store_takes_from_largest),
        cmocka_unit_test(test_clear_and_no_allocation),
        cmocka_unit_test(test_pop_into_small_buffer),
        cmocka_unit_test(test_random_against_model),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
