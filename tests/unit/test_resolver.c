/* SPDX-License-Identifier: MIT */
/* The resolver (overlay/loop/resolver.h) with lookups this test answers:
 *   - answers, good and failed, come back through the fd
 *   - a name asked many times (any case) is looked up once, and its one
 *     answer is taken once
 *   - at most RESOLVER_NAMES names are held; a name too long is refused
 *   - a lookup that never returns blocks neither a submit nor a take nor
 *     resolver_free, and the other thread goes on answering */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <cmocka.h>

#include "overlay/loop/resolver.h"

#define WAIT_MS 5000

/* Lookups: "silent..." waits until the test lets it go (a DNS server that
 * never answers); "bad..." fails; any other answers 192.0.2.N, N its length. */
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static unsigned asked, returned;
static bool silent_go;

static int fake_lookup(void *ctx, const char *host, union endpoint *out)
{
    (void)ctx;
    pthread_mutex_lock(&lock);
    asked++;
    pthread_cond_broadcast(&changed);
    while (!strncmp(host, "silent", 6) && !silent_go)
        pthread_cond_wait(&changed, &lock);
    pthread_mutex_unlock(&lock);
    int ret = 0;
    if (!strncmp(host, "bad", 3)) {
        ret = EAI_NONAME;
    } else {
        out->in4.sin_family = AF_INET;
        out->in4.sin_addr.s_addr = htonl(0xc0000200u + (uint32_t)strlen(host));
    }
    pthread_mutex_lock(&lock);
    returned++;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    return ret;
}

static int reset(void **state)
{
    (void)state;
    asked = returned = 0;
    silent_go = false;
    return 0;
}

/* Waits until *counter reaches n; false after WAIT_MS. */
static bool wait_count(const unsigned *counter, unsigned n)
{
    struct timespec end;
    bool ok = true;

    clock_gettime(CLOCK_REALTIME, &end);
    end.tv_sec += WAIT_MS / 1000;
    pthread_mutex_lock(&lock);
    while (*counter < n && ok)
        ok = pthread_cond_timedwait(&changed, &lock, &end) == 0;
    ok = *counter >= n;
    pthread_mutex_unlock(&lock);
    return ok;
}

static bool readable(const struct resolver *r, int ms)
{
    struct pollfd p = { .fd = resolver_fd(r), .events = POLLIN };

    return poll(&p, 1, ms) == 1;
}

/* Takes answers until n came (or WAIT_MS passed). */
static size_t take_n(struct resolver *r, struct resolver_answer *a, size_t n)
{
    size_t got = 0;

    while (got < n && readable(r, WAIT_MS))
        got += resolver_take(r, a + got, n - got);
    return got;
}

static const struct resolver_answer *answer_for(const struct resolver_answer *a, size_t n,
                                                const char *host)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(a[i].host, host))
            return &a[i];
    return NULL;
}

static void test_answers_through_the_fd(void **state)
{
    struct resolver *r = resolver_new(fake_lookup, NULL);
    struct resolver_answer a[4];
    const struct resolver_answer *good, *bad;

    (void)state;
    assert_non_null(r);
    assert_int_equal(resolver_submit(r, "good.example"), 0);
    assert_int_equal(resolver_submit(r, "bad.example"), 0);
    assert_false(readable(r, 0));
    assert_int_equal(resolver_start(r, 1), 0);
    assert_int_equal(take_n(r, a, 2), 2);
    assert_non_null(good = answer_for(a, 2, "good.example"));
    assert_non_null(bad = answer_for(a, 2, "bad.example"));
    assert_int_equal(good->err, 0);
    assert_int_equal(good->addr.sa.sa_family, AF_INET);
    assert_int_equal(ntohl(good->addr.in4.sin_addr.s_addr), 0xc0000200u + 12);
    assert_int_equal(bad->err, EAI_NONAME);
    assert_false(readable(r, 0));
    assert_int_equal(resolver_take(r, a, 4), 0);
    resolver_free(r);
}

static void test_one_lookup_per_name(void **state)
{
    struct resolver *r = resolver_new(fake_lookup, NULL);
    struct resolver_answer a[4];

    (void)state;
    assert_non_null(r);
    assert_int_equal(resolver_submit(r, "node.example"), 0);
    assert_int_equal(resolver_submit(r, "NODE.example"), 0);
    assert_int_equal(resolver_start(r, 2), 0);
    assert_int_equal(take_n(r, a, 1), 1);
    /* Answered and not taken yet, asked again: still the one answer. */
    assert_int_equal(resolver_submit(r, "other.example"), 0);
    assert_true(wait_count(&returned, 2));
    assert_int_equal(resolver_submit(r, "Other.Example"), 0);
    assert_int_equal(take_n(r, a + 1, 1), 1);
    assert_false(readable(r, 100));
    assert_int_equal(asked, 2);
    assert_string_equal(a[0].host, "node.example");
    assert_string_equal(a[1].host, "other.example");
    resolver_free(r);
}

static void test_bounded(void **state)
{
    struct resolver *r = resolver_new(fake_lookup, NULL);
    char host[RESOLVER_HOST_MAX + 2], name[32];

    (void)state;
    assert_non_null(r);
    for (unsigned i = 0; i < RESOLVER_NAMES; i++) {
        snprintf(name, sizeof(name), "n%u.example", i);
        assert_int_equal(resolver_submit(r, name), 0);
    }
    assert_int_equal(resolver_submit(r, "one-more.example"), -ENOSPC);
    assert_int_equal(resolver_submit(r, "n7.example"), 0);   /* held already */
    memset(host, 'a', sizeof(host) - 1);
    host[sizeof(host) - 1] = '\0';
    assert_int_equal(resolver_submit(r, host), -ENAMETOOLONG);
    assert_int_equal(resolver_submit(r, ""), -ENAMETOOLONG);
    assert_int_equal(resolver_start(r, 0), -EINVAL);
    assert_int_equal(resolver_start(r, RESOLVER_THREADS + 1), -EINVAL);
    /* Taken answers make room again. */
    struct resolver_answer a[RESOLVER_NAMES];
    assert_int_equal(resolver_start(r, RESOLVER_THREADS), 0);
    assert_int_equal(take_n(r, a, RESOLVER_NAMES), RESOLVER_NAMES);
    assert_int_equal(resolver_submit(r, "one-more.example"), 0);
    resolver_free(r);
}

static void test_silent_lookup_blocks_nothing(void **state)
{
    struct resolver *r = resolver_new(fake_lookup, NULL);
    struct resolver_answer a[2];

    (void)state;
    assert_non_null(r);
    assert_int_equal(resolver_start(r, 2), 0);
    assert_int_equal(resolver_submit(r, "silent.example"), 0);
    assert_true(wait_count(&asked, 1));
    /* One thread is stuck in it; the other answers the rest. */
    assert_int_equal(resolver_submit(r, "late.example"), 0);
    assert_int_equal(take_n(r, a, 1), 1);
    assert_string_equal(a[0].host, "late.example");
    assert_int_equal(resolver_take(r, a, 2), 0);
    /* Stopped while the lookup still hangs: nothing waits for it. */
    resolver_free(r);
    assert_int_equal(returned, 1);
    /* The lookup returns at last: its thread frees what is left (ASan
     * would see a use after free or a leak otherwise). */
    pthread_mutex_lock(&lock);
    silent_go = true;
    pthread_cond_broadcast(&changed);
    pthread_mutex_unlock(&lock);
    assert_true(wait_count(&returned, 2));
    struct timespec settle = { 0, 50 * 1000000L };
    nanosleep(&settle, NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_answers_through_the_fd, reset),
        cmocka_unit_test_setup(test_one_lookup_per_name, reset),
        cmocka_unit_test_setup(test_bounded, reset),
        cmocka_unit_test_setup(test_silent_lookup_blocks_nothing, reset),
    };

    return cmocka_run_group_tests_name("resolver", tests, NULL, NULL);
}
