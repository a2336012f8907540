/* SPDX-License-Identifier: MIT */
/* Tests of the CLI's reader of a daemon's get answer (cli_reply.h): which
 * sink each line reaches, the errno line that must end the text, every
 * malformed form refused as -EPROTO, a sink's error ending the walk, the
 * decimal parser's bounds, and the array that grows for peers. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/cli/cli_reply.h"

#define LOG_MAX 512u

struct seen {
    char log[LOG_MAX];          /* "i:key=value;" and "p:key=value;" in order */
    int fail_on_peer_key;       /* nonzero: the peer sink returns -ENOSPC at this key */
    const char *fail_key;
};

static void note(struct seen *s, char who, const char *key, const char *value)
{
    size_t n = strlen(s->log);

    snprintf(s->log + n, sizeof(s->log) - n, "%c:%s=%s;", who, key, value);
}

static int on_iface(void *ctx, const char *key, const char *value)
{
    note(ctx, 'i', key, value);
    return 0;
}

static int on_peer(void *ctx, const char *key, const char *value)
{
    struct seen *s = ctx;

    note(s, 'p', key, value);
    return s->fail_key && !strcmp(key, s->fail_key) ? -ENOSPC : 0;
}

static int walk(const char *text, struct seen *s)
{
    char *copy = strdup(text);
    int ret;

    assert_non_null(copy);
    ret = cli_reply_walk(copy, &(struct cli_reply_sink){s, on_iface, on_peer});
    free(copy);
    return ret;
}

static void test_lines_reach_their_sink(void **state)
{
    struct seen s = {0};

    (void)state;
    assert_int_equal(walk("interface=ddp0\nself=a\npublic_key=K1\nname=b\n"
                          "public_key=K2\nname=c=d\nerrno=0\n\n", &s), 0);
    assert_string_equal(s.log, "i:interface=ddp0;i:self=a;p:public_key=K1;p:name=b;"
                               "p:public_key=K2;p:name=c=d;");
}

static void test_empty_answer_is_only_errno(void **state)
{
    struct seen s = {0};

    (void)state;
    assert_int_equal(walk("errno=0\n\n", &s), 0);
    assert_string_equal(s.log, "");
}

static void test_daemon_errno_returned(void **state)
{
    struct seen s = {0};

    (void)state;
    assert_int_equal(walk("interface=ddp0\nerrno=-19\n\n", &s), -19);
    assert_int_equal(walk("errno=-2147483647\n\n", &s), -2147483647);
}

static void test_malformed_refused(void **state)
{
    static const char *const bad[] = {
        "",                                  /* no errno line */
        "interface=ddp0\n",                  /* no errno line */
        "interface=ddp0",                    /* no newline */
        "errno=0\n",                         /* no blank line after */
        "errno=0\n\nx",                      /* text after the end */
        "errno=0\n\n\n",
        "errno=5\n\n",                       /* positive */
        "errno=-\n\n",
        "errno=\n\n",
        "errno=-2147483648\n\n",             /* beyond int */
        "errno=-99999999999999999999999\n\n",
        "errno=+1\n\n",
        "noequals\nerrno=0\n\n",
        "=value\nerrno=0\n\n",               /* an empty key */
        "\nerrno=0\n\n",                     /* an empty line */
    };
    struct seen s = {0};

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        memset(&s, 0, sizeof(s));
        assert_int_equal(walk(bad[i], &s), -EPROTO);
    }
}

static void test_sink_error_ends_walk(void **state)
{
    struct seen s = {.fail_key = "name"};

    (void)state;
    assert_int_equal(walk("public_key=K\nname=b\nendpoint=x\nerrno=0\n\n", &s), -ENOSPC);
    assert_string_equal(s.log, "p:public_key=K;p:name=b;");
}

static void test_u64_bounds(void **state)
{
    uint64_t v = 7;

    (void)state;
    assert_int_equal(cli_reply_u64("0", &v), 0);
    assert_true(v == 0);
    assert_int_equal(cli_reply_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_int_equal(cli_reply_u64("18446744073709551616", &v), -EPROTO);
    assert_int_equal(cli_reply_u64("000000000000000000001", &v), -EPROTO);   /* 21 digits */
    assert_int_equal(cli_reply_u64("", &v), -EPROTO);
    assert_int_equal(cli_reply_u64("-1", &v), -EPROTO);
    assert_int_equal(cli_reply_u64("1a", &v), -EPROTO);
    assert_int_equal(cli_reply_u64(" 1", &v), -EPROTO);
}

static void test_grow_zeroes_and_keeps(void **state)
{
    uint32_t *a = NULL, *g;
    size_t cap = 0;

    (void)state;
    for (size_t n = 0; n < 40; n++) {
        g = cli_reply_grow(a, &cap, n, sizeof(*a));
        assert_non_null(g);
        a = g;
        assert_true(cap > n);
        assert_int_equal(a[n], 0);
        a[n] = (uint32_t)(n + 1);
    }
    assert_int_equal(cap, 64);
    for (size_t n = 0; n < 40; n++)
        assert_int_equal(a[n], n + 1);
    free(a);
}

static void test_grow_overflow_refused(void **state)
{
    size_t cap = SIZE_MAX / 2 + 1;
    char one = 1;

    (void)state;
    /* Doubling would wrap: refused, the array and cap unchanged. */
    assert_null(cli_reply_grow(&one, &cap, cap, 2));
    assert_true(cap == SIZE_MAX / 2 + 1);
    assert_int_equal(one, 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines_reach_their_sink),
        cmocka_unit_test(test_empty_answer_is_only_errno),
        cmocka_unit_test(test_daemon_errno_returned),
        cmocka_unit_test(test_malformed_refused),
        cmocka_unit_test(test_sink_error_ends_walk),
        cmocka_unit_test(test_u64_bounds),
        cmocka_unit_test(test_grow_zeroes_and_keeps),
        cmocka_unit_test(test_grow_overflow_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
