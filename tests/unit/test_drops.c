/* SPDX-License-Identifier: MIT */
/* Tests of the receive side's drop reasons (overlay/engine/model/drops.c):
 * each reason counts in exactly its one counter of struct device_stats,
 * by the number of messages it is given, and in no other. The table here
 * is written apart from the code: the counter each reason's comment in
 * drops.h names, which the metrics and the control socket show. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/engine/model/device.h"
#include "overlay/engine/model/drops.h"

#define COUNTER(field) offsetof(struct device_stats, field)

static const struct {
    enum rx_drop why;
    size_t counter;
} expected[] = {
    { RX_DROP_BAD,             COUNTER(dropped_bad_packet) },
    { RX_DROP_REPLAY,          COUNTER(dropped_replay) },
    { RX_DROP_SOURCE,          COUNTER(dropped_source) },
    { RX_DROP_PENDING,         COUNTER(dropped_pending) },
    { RX_DROP_UNKNOWN_PEER,    COUNTER(dropped_unknown_peer) },
    { RX_DROP_RATELIMITED,     COUNTER(dropped_ratelimited) },
    { RX_DROP_DISCO,           COUNTER(disco_bad) },
    { RX_DROP_STRANGER,        COUNTER(disco_bad) },
    { RX_DROP_TWO_HOPS,        COUNTER(relay_refused) },
    { RX_DROP_UNFORWARDABLE,   COUNTER(relay_refused) },
    { RX_DROP_NO_BUFFER,       COUNTER(dropped_no_buffer) },
    { RX_DROP_SOCKET_OVERFLOW, COUNTER(dropped_socket_overflow) },
    { RX_DROP_QUEUE_DELAY,     COUNTER(dropped_queue_delay) },
    { RX_DROP_RULE,            COUNTER(dropped_rule) },
};

static struct device dev;

static uint64_t *counter_in(struct device_stats *st, size_t off)
{
    return (uint64_t *)((uint8_t *)st + off);
}

/* Every reason is in the table, once. */
static void test_table_names_every_reason(void **state)
{
    (void)state;
    unsigned seen[RX_DROP_COUNT] = { 0 };

    assert_int_equal(sizeof(expected) / sizeof(expected[0]), RX_DROP_COUNT);
    for (size_t i = 0; i < RX_DROP_COUNT; i++) {
        assert_true((unsigned)expected[i].why < RX_DROP_COUNT);
        seen[expected[i].why]++;
    }
    for (size_t i = 0; i < RX_DROP_COUNT; i++)
        assert_int_equal(seen[i], 1);
}

/* One drop of each reason: its counter goes up by one, every other byte
 * of the counters stays as it was. Then n at once: by n. */
static void test_each_reason_counts_its_counter_once(void **state)
{
    (void)state;
    struct device_stats want;

    for (size_t i = 0; i < RX_DROP_COUNT; i++) {
        memset(&dev.stats, 0, sizeof(dev.stats));
        memset(&want, 0, sizeof(want));
        rx_drop(&dev, expected[i].why, 1);
        *counter_in(&want, expected[i].counter) = 1;
        if (memcmp(&dev.stats, &want, sizeof(want)))
            fail_msg("reason %d: not exactly its counter, once", (int)expected[i].why);

        rx_drop(&dev, expected[i].why, 41);
        *counter_in(&want, expected[i].counter) = 42;
        if (memcmp(&dev.stats, &want, sizeof(want)))
            fail_msg("reason %d: not by n", (int)expected[i].why);
    }
}

/* Reasons that share a counter add up in it; others are untouched. */
static void test_shared_counters_add(void **state)
{
    (void)state;

    memset(&dev.stats, 0, sizeof(dev.stats));
    rx_drop(&dev, RX_DROP_DISCO, 1);
    rx_drop(&dev, RX_DROP_STRANGER, 2);
    rx_drop(&dev, RX_DROP_TWO_HOPS, 4);
    rx_drop(&dev, RX_DROP_UNFORWARDABLE, 8);
    assert_int_equal(dev.stats.disco_bad, 3);
    assert_int_equal(dev.stats.relay_refused, 12);
    assert_int_equal(dev.stats.dropped_bad_packet, 0);
}

/* Not a reason: counts nothing. */
static void test_count_is_no_reason(void **state)
{
    (void)state;
    struct device_stats zero;

    memset(&dev.stats, 0, sizeof(dev.stats));
    memset(&zero, 0, sizeof(zero));
    rx_drop(&dev, RX_DROP_COUNT, 1);
    assert_memory_equal(&dev.stats, &zero, sizeof(zero));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_names_every_reason),
        cmocka_unit_test(test_each_reason_counts_its_counter_once),
        cmocka_unit_test(test_shared_counters_add),
        cmocka_unit_test(test_count_is_no_reason),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
