/* SPDX-License-Identifier: MIT */
/* Quiescent-state reclamation (overlay/loop/qsbr.h): nothing retired is
 * freed while a loop that was in its turn when it was retired is still
 * in that turn; everything is freed once each has passed a wait. Then
 * readers on threads of their own, each reading a shared object without
 * a lock while a writer replaces and retires it: run under ASan and
 * ThreadSanitizer by `make unit` (a read of freed memory fails there). */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "overlay/loop/qsbr.h"

struct obj {
    struct qsbr_node node;   /* first: freed through it */
    uint64_t value;
};

static unsigned freed_here;

static void obj_free(struct qsbr_node *n)
{
    struct obj *o = (struct obj *)n;

    o->value = 0;   /* a reader that still saw it would see 0 */
    free(o);
    freed_here++;
}

static struct obj *obj_new(uint64_t value)
{
    struct obj *o = calloc(1, sizeof(*o));

    assert_non_null(o);
    o->value = value;
    return o;
}

static void test_grace_period(void **state)
{
    (void)state;
    struct qsbr q = { 0 };

    freed_here = 0;
    qsbr_online(&q, 0);   /* the writer's loop, in its turn */
    qsbr_online(&q, 3);   /* a reader in its turn; loops 1, 2 wait */
    qsbr_retire(&q, &obj_new(1)->node, obj_free);
    assert_int_equal(qsbr_reclaim(&q), 0);   /* the grace period begins */
    qsbr_offline(&q, 0);
    qsbr_online(&q, 0);
    assert_int_equal(qsbr_reclaim(&q), 0);   /* loop 3 is still in it */
    qsbr_retire(&q, &obj_new(2)->node, obj_free);   /* waits for the next */
    qsbr_offline(&q, 3);
    assert_int_equal(qsbr_reclaim(&q), 1);   /* the first; the second's begins */
    assert_int_equal(freed_here, 1);
    qsbr_online(&q, 3);   /* loop 3 began a turn after the second's snapshot */
    assert_int_equal(qsbr_reclaim(&q), 0);   /* loop 0's own turn not over */
    qsbr_offline(&q, 0);
    /* Loop 3 waited when the second was retired: the turn it is in began
     * after, when the second was out of its reach already. */
    assert_int_equal(qsbr_reclaim(&q), 1);
    assert_int_equal(freed_here, 2);
    qsbr_offline(&q, 3);
    qsbr_retire(&q, &obj_new(3)->node, obj_free);
    qsbr_free_all(&q);   /* every loop stopped */
    assert_int_equal(freed_here, 3);
    assert_int_equal(q.freed, 3);
}

/* Readers load the shared object in their turn and read it; the writer,
 * under its lock, replaces it, retires the old one and reclaims. */
#define READERS 3u
#define SWAPS   20000u

static struct qsbr race;
static struct obj *shared;
static pthread_mutex_t writer_lock = PTHREAD_MUTEX_INITIALIZER;
static bool stop;

static void *reader(void *arg)
{
    unsigned k = (unsigned)(uintptr_t)arg;
    uint64_t last = 0, bad = 0;

    while (!__atomic_load_n(&stop, __ATOMIC_ACQUIRE)) {
        qsbr_online(&race, k);
        for (int i = 0; i < 8; i++) {
            struct obj *o = __atomic_load_n(&shared, __ATOMIC_ACQUIRE);
            uint64_t v = __atomic_load_n(&o->value, __ATOMIC_RELAXED);
            if (v == 0 || v < last)   /* freed, or older than what we saw */
                bad++;
            last = v;
        }
        qsbr_offline(&race, k);
    }
    return (void *)(uintptr_t)bad;
}

static void test_readers_race_a_writer(void **state)
{
    (void)state;
    pthread_t t[READERS];

    freed_here = 0;
    shared = obj_new(1);
    for (unsigned k = 0; k < READERS; k++)
        assert_int_equal(pthread_create(&t[k], NULL, reader, (void *)(uintptr_t)(k + 1)), 0);
    uint64_t v;
    /* Until the readers, once scheduled, let some be freed on the way. */
    for (v = 2; v <= SWAPS || !race.freed; v++) {
        if (v > SWAPS)
            sched_yield();
        pthread_mutex_lock(&writer_lock);
        struct obj *old = shared;
        __atomic_store_n(&shared, obj_new(v), __ATOMIC_RELEASE);
        qsbr_retire(&race, &old->node, obj_free);
        qsbr_reclaim(&race);
        pthread_mutex_unlock(&writer_lock);
    }
    __atomic_store_n(&stop, true, __ATOMIC_RELEASE);
    for (unsigned k = 0; k < READERS; k++) {
        void *bad;
        pthread_join(t[k], &bad);
        assert_int_equal((uintptr_t)bad, 0);
    }
    qsbr_free_all(&race);
    assert_int_equal(freed_here, v - 2);   /* every one replaced */
    free(shared);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grace_period),
        cmocka_unit_test(test_readers_race_a_writer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
