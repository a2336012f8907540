/* SPDX-License-Identifier: MIT */
/* Tests of the log (overlay/base/log.c), with a file standing in for
 * stderr: under the journal (JOURNAL_STREAM names that file) a line is
 * "<PRIORITY>TEXT" with no timestamp; otherwise "HH:MM:SS.mmm IDENT LEVEL:
 * TEXT"; the level filter; one line per event (control bytes shown as
 * '?', a long line cut short, threads' lines never mixed); the rate
 * limits on a clock the test drives: N lines pass, the rest are counted,
 * and one line says so once the window is over (at log_flush, or at the
 * site's next line). */
#include <pthread.h>
#include <regex.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/base/log.h"

#define SEC UINT64_C(1000000000)
#define T0  (100 * SEC)

/* stderr goes to a scratch file between capture_begin and capture_end;
 * the file's dev:inode is what JOURNAL_STREAM would name. */
static int saved_stderr = -1, capture_fd = -1;
static char capture_path[64];
static char captured[1 << 16];

static void capture_begin(void)
{
    snprintf(capture_path, sizeof(capture_path), "/tmp/test_log.XXXXXX");
    capture_fd = mkstemp(capture_path);
    assert_true(capture_fd >= 0);
    unlink(capture_path);
    fflush(stderr);
    saved_stderr = dup(STDERR_FILENO);
    assert_true(saved_stderr >= 0);
    assert_int_equal(dup2(capture_fd, STDERR_FILENO), STDERR_FILENO);
}

static void journal_names_stderr(void)
{
    struct stat st;
    char v[64];

    assert_int_equal(fstat(STDERR_FILENO, &st), 0);
    snprintf(v, sizeof(v), "%llu:%llu", (unsigned long long)st.st_dev,
             (unsigned long long)st.st_ino);
    setenv("JOURNAL_STREAM", v, 1);
}

/* Back to the real stderr (before any assert, so cmocka's messages show);
 * what was written is in `captured`. */
static const char *capture_end(void)
{
    ssize_t n;

    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    n = pread(capture_fd, captured, sizeof(captured) - 1, 0);
    close(capture_fd);
    captured[n > 0 ? n : 0] = '\0';
    return captured;
}

static unsigned count_lines(const char *s)
{
    unsigned n = 0;

    for (; *s; s++)
        n += *s == '\n';
    return n;
}

static int clean_env(void **state)
{
    (void)state;
    unsetenv("JOURNAL_STREAM");
    return 0;
}

static void test_journal_lines_have_priorities_and_no_timestamp(void **state)
{
    (void)state;
    capture_begin();
    journal_names_stderr();
    log_init("ddpnet/ddp0", true, LOG_LVL_DEBUG);
    log_error("io_uring: %s", "broken");
    log_warn("peer %s: unreachable", "node-b");
    log_notice("peer %s: reachable", "node-b");
    log_info("local candidates: %s", "(none)");
    log_debug("peer %s: sending handshake initiation", "node-b");
    const char *out = capture_end();

    assert_string_equal(out, "<3>io_uring: broken\n"
                             "<4>peer node-b: unreachable\n"
                             "<5>peer node-b: reachable\n"
                             "<6>local candidates: (none)\n"
                             "<7>peer node-b: sending handshake initiation\n");
}

static void assert_plain(const char *out, const char *level, const char *text)
{
    char pattern[256];
    regex_t re;

    snprintf(pattern, sizeof(pattern),
             "^[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3} ddpnet/ddp0 %s: %s\n$", level, text);
    assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
    int ret = regexec(&re, out, 0, NULL, 0);
    regfree(&re);
    if (ret)
        fail_msg("not the plain format: \"%s\"", out);
}

static void test_plain_format_without_the_journal(void **state)
{
    (void)state;
    capture_begin();
    log_init("ddpnet/ddp0", true, LOG_LVL_INFO);
    log_warn("peer %s: unreachable", "node-b");
    assert_plain(capture_end(), "warn", "peer node-b: unreachable");
}

/* JOURNAL_STREAM inherited while stderr went elsewhere: not the journal. */
static void test_journal_stream_of_another_file(void **state)
{
    (void)state;
    setenv("JOURNAL_STREAM", "8:1234567", 1);
    capture_begin();
    log_init("ddpnet/ddp0", true, LOG_LVL_INFO);
    log_notice("peer %s: reachable", "node-b");
    assert_plain(capture_end(), "notice", "peer node-b: reachable");

    setenv("JOURNAL_STREAM", "garbage", 1);
    capture_begin();
    log_init("ddpnet/ddp0", true, LOG_LVL_INFO);
    log_notice("peer %s: reachable", "node-b");
    assert_plain(capture_end(), "notice", "peer node-b: reachable");
}

static void test_level_filter(void **state)
{
    (void)state;
    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_NOTICE);
    log_debug("d");
    log_info("i");
    log_notice("n");
    log_warn("w");
    log_error("e");
    const char *out = capture_end();

    assert_string_equal(out, "<5>n\n<4>w\n<3>e\n");
    assert_true(log_enabled(LOG_LVL_NOTICE));
    assert_false(log_enabled(LOG_LVL_INFO));
}

static void test_one_line_per_event(void **state)
{
    (void)state;
    char name[1024];

    memset(name, 'x', sizeof(name) - 1);
    name[sizeof(name) - 1] = '\0';
    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_INFO);
    /* A name a peer chose cannot make a line of its own. */
    log_info("peer %s: its machine goes by %s", "node-b", "evil\n<3>forged\r");
    log_info("peer %s: long", name);
    const char *out = capture_end();

    const char *first = "<6>peer node-b: its machine goes by evil?<3>forged?\n";
    assert_int_equal(count_lines(out), 2);
    assert_true(!strncmp(out, first, strlen(first)));
    const char *second = strchr(out, '\n') + 1;
    assert_true(!strncmp(second, "<6>peer xxx", 11));
    assert_int_equal(second[strlen(second) - 1], '\n');
}

struct writer {
    char tag;
    unsigned lines;
};

static void *write_lines(void *arg)
{
    const struct writer *w = arg;

    for (unsigned i = 0; i < w->lines; i++)
        log_info("%c %04u %c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c%c", w->tag,
                 i, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag,
                 w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag,
                 w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag, w->tag,
                 w->tag);
    return NULL;
}

/* Shards may log beside each other: each line is one write. */
static void test_threads_lines_never_mix(void **state)
{
    (void)state;
    struct writer a = { 'a', 300 }, b = { 'b', 300 };
    pthread_t ta, tb;

    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_INFO);
    pthread_create(&ta, NULL, write_lines, &a);
    pthread_create(&tb, NULL, write_lines, &b);
    pthread_join(ta, NULL);
    pthread_join(tb, NULL);
    const char *out = capture_end();

    assert_int_equal(count_lines(out), 600);
    for (const char *line = out; *line; line = strchr(line, '\n') + 1) {
        char tag = line[3];
        assert_true(tag == 'a' || tag == 'b');
        assert_true(!strncmp(line, "<6>", 3));
        for (unsigned k = 0; k < 30; k++)
            assert_int_equal(line[3 + 7 + k], tag);
        assert_int_equal(line[3 + 7 + 30], '\n');
    }
}

static void test_rate_limit_window_and_summary_at_flush(void **state)
{
    (void)state;
    struct log_limit lim = { .lines = 3, .seconds = 5 };

    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_INFO);
    for (unsigned i = 0; i < 10; i++)
        log_limited(&lim, LOG_LVL_WARN, T0 + i * SEC / 10, "peer b: flood %u", i);
    log_flush(T0 + 5 * SEC - 1);                 /* the window is not over */
    log_flush(T0 + 5 * SEC);                     /* it is: the summary, once */
    log_flush(T0 + 6 * SEC);
    log_limited(&lim, LOG_LVL_WARN, T0 + 7 * SEC, "peer b: flood %u", 10);   /* a new window */
    const char *out = capture_end();

    assert_string_equal(out, "<4>peer b: flood 0\n"
                             "<4>peer b: flood 1\n"
                             "<4>peer b: flood 2\n"
                             "<4>suppressed 7 similar lines in 5 s, like: peer b: flood 3\n"
                             "<4>peer b: flood 10\n");
}

/* Without log_flush, the site's next line after the window says it first. */
static void test_rate_limit_summary_at_the_next_line(void **state)
{
    (void)state;
    struct log_limit lim = { .lines = 2, .seconds = 1 };

    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_DEBUG);
    for (unsigned i = 0; i < 5; i++)
        log_limited(&lim, LOG_LVL_DEBUG, T0, "dropped %u", i);
    for (unsigned i = 5; i < 8; i++)
        log_limited(&lim, LOG_LVL_DEBUG, T0 + SEC, "dropped %u", i);
    const char *out = capture_end();

    assert_string_equal(out, "<7>dropped 0\n"
                             "<7>dropped 1\n"
                             "<7>suppressed 3 similar lines in 1 s, like: dropped 2\n"
                             "<7>dropped 5\n"
                             "<7>dropped 6\n");
    /* dropped 7 waits in the count for the next window's end. */
    assert_int_equal(lim.suppressed, 1);
    capture_begin();
    log_flush(T0 + 2 * SEC);
    assert_string_equal(capture_end(),
                        "<7>suppressed 1 similar line in 1 s, like: dropped 7\n");
}

/* Two sites: each its own budget; and a level that is off costs nothing. */
static void test_rate_limit_per_site_and_level_off(void **state)
{
    (void)state;
    struct log_limit one = { .lines = 1, .seconds = 5 }, two = { .lines = 1, .seconds = 5 };

    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_INFO);
    log_limited(&one, LOG_LVL_INFO, T0, "one");
    log_limited(&two, LOG_LVL_INFO, T0, "two");
    log_limited(&one, LOG_LVL_DEBUG, T0, "off");
    const char *out = capture_end();

    assert_string_equal(out, "<6>one\n<6>two\n");
    assert_int_equal(one.suppressed, 0);
}

/* The macro on the real clock: one static limit per call site. */
static void test_rate_limit_macro(void **state)
{
    (void)state;
    capture_begin();
    journal_names_stderr();
    log_init("t", true, LOG_LVL_DEBUG);
    for (unsigned i = 0; i < 3 * LOG_RL_LINES; i++)
        log_debug_rl("send failed: %u", i);
    const char *out = capture_end();

    assert_int_equal(count_lines(out), LOG_RL_LINES);
}

/* Syslog is only a socket something listens on: not a missing path, not
 * a file, not a socket whose listener went away. */
static void test_syslog_reachable(void **state)
{
    char dir[] = "/tmp/test_log_sock.XXXXXX", path[64];
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd, file;

    (void)state;
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/log", dir);
    assert_false(log_syslog_reachable(path));
    file = open(path, O_WRONLY | O_CREAT, 0600);
    assert_true(file >= 0);
    close(file);
    assert_false(log_syslog_reachable(path));
    unlink(path);
    snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
    fd = socket(AF_UNIX, SOCK_DGRAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_true(log_syslog_reachable(path));
    close(fd);
    assert_false(log_syslog_reachable(path));   /* the file stays, nobody reads */
    unlink(path);
    /* A stream socket, as some syslog daemons use. */
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
    assert_int_equal(listen(fd, 1), 0);
    assert_true(log_syslog_reachable(path));
    close(fd);
    unlink(path);
    rmdir(dir);
}

/* A log file stops at LOG_FILE_MAX with one line saying so. */
static void test_log_file_cap(void **state)
{
    char tail[1024];
    ssize_t n;

    (void)state;
    capture_begin();
    assert_int_equal(ftruncate(STDERR_FILENO, LOG_FILE_MAX - 100), 0);
    assert_true(lseek(STDERR_FILENO, 0, SEEK_END) >= 0);
    log_init("ddpnet/ddp0", true, LOG_LVL_INFO);
    log_warn("first");                  /* fits */
    log_warn("second %0200d", 0);       /* crosses: said once, not written */
    log_warn("third");
    n = pread(capture_fd, tail, sizeof(tail) - 1, LOG_FILE_MAX - 100);
    capture_end();
    assert_true(n > 0);
    tail[n] = '\0';
    assert_non_null(strstr(tail, "warn: first\n"));
    assert_null(strstr(tail, "second"));
    assert_null(strstr(tail, "third"));
    assert_non_null(strstr(tail, "ddpnet/ddp0: the log file reached 16777216 bytes; later "
                                 "lines are dropped until the daemon restarts\n"));
    assert_int_equal(count_lines(tail), 2);
}

#define T(f) cmocka_unit_test_setup_teardown(f, clean_env, clean_env)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_journal_lines_have_priorities_and_no_timestamp),
        T(test_plain_format_without_the_journal),
        T(test_journal_stream_of_another_file),
        T(test_level_filter),
        T(test_one_line_per_event),
        T(test_threads_lines_never_mix),
        T(test_rate_limit_window_and_summary_at_flush),
        T(test_rate_limit_summary_at_the_next_line),
        T(test_rate_limit_per_site_and_level_off),
        T(test_rate_limit_macro),
        T(test_syslog_reachable),
        T(test_log_file_cap),
    };

    return cmocka_run_group_tests_name("log", tests, NULL, NULL);
}
