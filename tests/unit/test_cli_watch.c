/* SPDX-License-Identifier: MIT */
/* Tests of `ddpnet status --watch` without a daemon: the option's forms
 * (a table of command lines), the seconds parser, the rates between two
 * samples, the frame cut to a terminal's size, and the loop itself run on
 * answers a test hands it -- into a file (plain tables, a blank line
 * between, no escape codes) and on a pseudo-terminal (drawn in place, q,
 * a resize, the daemon going away), where the terminal's modes must be as
 * they were after every way out. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/cli/cli_watch.h"
#include "overlay/control/control_int.h"

#define NS          1000000000ull
#define KEY_B       "1111111111111111111111111111111111111111111111111111111111111111"
#define KEY_C       "2222222222222222222222222222222222222222222222222222222222222222"
#define KEY_D       "3333333333333333333333333333333333333333333333333333333333333333"
#define RESP_MAX    8192
#define OUT_MAX     65536
#define ESC         "\033"
#define STATUS_OPTS (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR | CLI_OPT_JSON | CLI_OPT_WATCH)

/* --- helpers ------------------------------------------------------------------------ */

/* A get=ddpnet answer with n peers ("peer-1".., keys 'a'+i repeated),
 * peer i having moved rx[i] and tx[i] bytes; the daemon's own rates are
 * 7 and 9 bytes/s. Malloc'd. */
static char *answer(size_t n, const uint64_t *rx, const uint64_t *tx)
{
    char *r = malloc(RESP_MAX);
    size_t len;

    assert_non_null(r);
    len = (size_t)snprintf(r, RESP_MAX,
                           "interface=ddp0\nself=node-a\naddress=10.77.0.1\nprefix=16\n"
                           "listen_port=51820\n");
    for (size_t i = 0; i < n; i++) {
        char key[65];

        memset(key, (int)('a' + i), 64);
        key[64] = '\0';
        len += (size_t)snprintf(r + len, RESP_MAX - len,
                                "public_key=%s\nname=peer-%zu\naddress=10.77.0.%zu\n"
                                "endpoint=192.0.2.%zu:51820\npath=direct\n"
                                "last_handshake_time_sec=0\nrx_bytes=%llu\ntx_bytes=%llu\n"
                                "rx_rate=7\ntx_rate=9\n",
                                key, i + 1, i + 2, i + 2, (unsigned long long)rx[i],
                                (unsigned long long)tx[i]);
    }
    snprintf(r + len, RESP_MAX - len, "errno=0\n\n");
    return r;
}

static char *answer_one(uint64_t rx, uint64_t tx)
{
    return answer(1, &rx, &tx);
}

static size_t count(const char *hay, const char *needle)
{
    size_t n = 0;

    for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
        n++;
    return n;
}

/* The frame's text into a malloc'd string. Not inlined: gcc then takes
 * the stream's pointer for a dangling one. */
static __attribute__((noinline)) char *frame_text(const char *resp,
                                                  const struct watch_frame *f, int want)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    assert_int_equal(status_format_frame(resp, f, out, 1000), want);
    fclose(out);
    return text;
}

/* --- the option -------------------------------------------------------------------- */

struct watch_case {
    const char *argv[8];
    const char *err;       /* NULL: must parse */
    bool watch;
    uint64_t ns;
    const char *ifname;    /* NULL: the default */
};

static const struct watch_case watch_cases[] = {
    { { "status" }, NULL, false, NS, NULL },
    { { "status", "--watch" }, NULL, true, NS, NULL },
    { { "status", "-w" }, NULL, true, NS, NULL },
    { { "status", "--watch=2" }, NULL, true, 2 * NS, NULL },
    { { "status", "--watch", "2" }, NULL, true, 2 * NS, NULL },
    { { "status", "-w", "2" }, NULL, true, 2 * NS, NULL },
    { { "status", "-w2" }, NULL, true, 2 * NS, NULL },
    { { "status", "-w", "0.5" }, NULL, true, NS / 2, NULL },
    { { "status", "--watch", ".25" }, NULL, true, NS / 4, NULL },
    { { "status", "--watch", "0.1" }, NULL, true, NS / 10, NULL },
    { { "status", "--watch", "3600" }, NULL, true, 3600 * NS, NULL },
    { { "status", "--watch", "3600.0" }, NULL, true, 3600 * NS, NULL },
    /* a later one wins */
    { { "status", "-w", "5", "--watch" }, NULL, true, NS, NULL },
    /* the next argument is kept when it is not a number */
    { { "status", "--watch", "-i", "ddp1" }, NULL, true, NS, "ddp1" },
    { { "status", "-w", "--interface=ddp2" }, NULL, true, NS, "ddp2" },
    { { "status", "-i", "ddp3", "-w" }, NULL, true, NS, "ddp3" },
    { { "status", "--watch", "foo" }, "unexpected argument 'foo'", false, 0, NULL },
    { { "status", "-w", "ddp0" }, "unexpected argument 'ddp0'", false, 0, NULL },
    /* refused intervals */
    { { "status", "--watch", "0" }, "option '--watch' wants seconds from 0.1 to 3600, not '0'",
      false, 0, NULL },
    { { "status", "--watch=0.0" },
      "option '--watch' wants seconds from 0.1 to 3600, not '0.0'", false, 0, NULL },
    { { "status", "-w", "-1" }, "option '-w' wants seconds from 0.1 to 3600, not '-1'",
      false, 0, NULL },
    { { "status", "-w-2" }, "option '-w' wants seconds from 0.1 to 3600, not '-2'",
      false, 0, NULL },
    { { "status", "--watch", "3601" },
      "option '--watch' wants seconds from 0.1 to 3600, not '3601'", false, 0, NULL },
    { { "status", "--watch", "3600.001" },
      "option '--watch' wants seconds from 0.1 to 3600, not '3600.001'", false, 0, NULL },
    { { "status", "--watch", "0.09" },
      "option '--watch' wants seconds from 0.1 to 3600, not '0.09'", false, 0, NULL },
    { { "status", "--watch=abc" },
      "option '--watch' wants seconds from 0.1 to 3600, not 'abc'", false, 0, NULL },
    { { "status", "--watch=" }, "option '--watch' wants seconds from 0.1 to 3600, not ''",
      false, 0, NULL },
    { { "status", "--watch", "1e3" },
      "option '--watch' wants seconds from 0.1 to 3600, not '1e3'", false, 0, NULL },
    { { "status", "-w", "2s" }, "option '-w' wants seconds from 0.1 to 3600, not '2s'",
      false, 0, NULL },
    { { "status", "-wq" }, "option '-w' wants seconds from 0.1 to 3600, not 'q'",
      false, 0, NULL },
    { { "status", "-w", "." }, "option '-w' wants seconds from 0.1 to 3600, not '.'",
      false, 0, NULL },
};

static void test_watch_option(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(watch_cases) / sizeof(watch_cases[0]); i++) {
        const struct watch_case *t = &watch_cases[i];
        struct cli_args a;
        char err[256] = "stale";
        int argc = 0, ret;

        while (t->argv[argc] != NULL)
            argc++;
        ret = cli_args_parse(argc, (char **)(uintptr_t)t->argv, STATUS_OPTS, 0, &a, err,
                             sizeof(err));
        if ((ret != 0) != (t->err != NULL) || (t->err && strcmp(err, t->err)))
            print_message("case %zu: %d '%s'\n", i, ret, err);
        if (t->err) {
            assert_int_equal(ret, -EINVAL);
            assert_string_equal(err, t->err);
            continue;
        }
        assert_int_equal(ret, 0);
        assert_int_equal(a.watch, t->watch);
        assert_true(a.watch_ns == t->ns);
        assert_string_equal(a.ifname, t->ifname ? t->ifname : "ddp0");
    }
}

/* Only the verbs that take it. */
static void test_watch_option_elsewhere(void **state)
{
    const char *argv[] = { "down", "--watch", NULL };
    struct cli_args a;
    char err[256];

    (void)state;
    assert_int_equal(cli_args_parse(2, (char **)(uintptr_t)argv,
                                    CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR, 0, &a, err,
                                    sizeof(err)), -EINVAL);
    assert_string_equal(err, "unknown option '--watch'");
    argv[1] = "-w";
    assert_int_equal(cli_args_parse(2, (char **)(uintptr_t)argv,
                                    CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR, 0, &a, err,
                                    sizeof(err)), -EINVAL);
    assert_string_equal(err, "unknown option '-w'");
}

static void test_seconds(void **state)
{
    static const struct { const char *s; int ret; uint64_t ns; } cases[] = {
        { "0", 0, 0 },
        { "1", 0, NS },
        { "0.5", 0, NS / 2 },
        { ".5", 0, NS / 2 },
        { "2.", 0, 2 * NS },
        { "007", 0, 7 * NS },
        { "1.000000001", 0, NS + 1 },
        { "0.123456789", 0, 123456789 },
        { "10000000000", 0, 10000000000ull * NS },
        { "10000000001", -ERANGE, 0 },
        { "99999999999999999999999", -ERANGE, 0 },
        { "1.0000000001", -EINVAL, 0 },
        { "", -EINVAL, 0 },
        { ".", -EINVAL, 0 },
        { "-1", -EINVAL, 0 },
        { "+1", -EINVAL, 0 },
        { " 1", -EINVAL, 0 },
        { "1 ", -EINVAL, 0 },
        { "1e3", -EINVAL, 0 },
        { "0x10", -EINVAL, 0 },
        { "inf", -EINVAL, 0 },
        { "nan", -EINVAL, 0 },
        { "1.2.3", -EINVAL, 0 },
        { "1,5", -EINVAL, 0 },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        uint64_t ns = 12345;
        int ret = cli_args_seconds(cases[i].s, &ns);

        if (ret != cases[i].ret)
            print_message("'%s': %d\n", cases[i].s, ret);
        assert_int_equal(ret, cases[i].ret);
        assert_true(ns == (ret == 0 ? cases[i].ns : 12345));
    }
}

/* --- rates --------------------------------------------------------------------------- */

static struct watch_counter counter(const char *key, uint64_t rx, uint64_t tx)
{
    struct watch_counter c;

    memset(&c, 0, sizeof(c));
    snprintf(c.key, sizeof(c.key), "%s", key);
    c.rx_bytes = rx;
    c.tx_bytes = tx;
    return c;
}

static void test_rates(void **state)
{
    struct watch_counter before[] = {
        counter(KEY_B, 1000, 5000),
        counter(KEY_C, 10, 10),
        counter(KEY_D, 100, 100),        /* gone by the second sample */
    };
    struct watch_counter after[] = {
        counter(KEY_C, 10, 10),          /* idle, and moved up the list */
        counter(KEY_B, 3000, 5500),
        counter("4444", 1000, 1000),     /* new */
    };
    struct watch_sample prev = { 10 * NS, 3, before }, cur = { 10 * NS + NS / 2, 3, after };
    struct watch_rate r[3];

    (void)state;
    watch_rates(&prev, &cur, r);
    assert_true(r[0].known);
    assert_true(r[0].rx == 0 && r[0].tx == 0);
    assert_true(r[1].known);
    assert_true(r[1].rx == 4000 && r[1].tx == 1000);    /* over half a second */
    assert_false(r[2].known);
    assert_true(r[2].rx == 0 && r[2].tx == 0);

    /* No earlier sample: nothing known. */
    memset(r, 0xff, sizeof(r));
    watch_rates(NULL, &cur, r);
    for (size_t i = 0; i < 3; i++)
        assert_false(r[i].known);
}

/* A counter that went back (the peer removed and added again by a
 * reload) gives no rate, never a negative or wrapped one; so does a
 * sample no later than the one before. */
static void test_rates_backwards(void **state)
{
    struct watch_counter before[] = { counter(KEY_B, 5000, 5000), counter(KEY_C, 5000, 5000) };
    struct watch_counter after[] = { counter(KEY_B, 100, 6000), counter(KEY_C, 6000, 100) };
    struct watch_sample prev = { NS, 2, before }, cur = { 2 * NS, 2, after };
    struct watch_rate r[2];

    (void)state;
    watch_rates(&prev, &cur, r);
    assert_false(r[0].known);
    assert_false(r[1].known);
    assert_true(r[0].rx == 0 && r[0].tx == 0 && r[1].rx == 0 && r[1].tx == 0);

    after[0] = counter(KEY_B, 6000, 6000);
    cur.at_ns = prev.at_ns;
    watch_rates(&prev, &cur, r);
    assert_false(r[0].known);
    cur.at_ns = prev.at_ns - 1;
    watch_rates(&prev, &cur, r);
    assert_false(r[0].known);
}

/* Rounding down, and counters near the top of their range. */
static void test_rates_extremes(void **state)
{
    struct watch_counter before[] = { counter(KEY_B, 0, UINT64_MAX - 3) };
    struct watch_counter after[] = { counter(KEY_B, UINT64_MAX, UINT64_MAX) };
    struct watch_sample prev = { 0, 1, before }, cur = { 3 * NS, 1, after };
    struct watch_rate r;

    (void)state;
    watch_rates(&prev, &cur, &r);
    assert_true(r.known);
    assert_true(r.rx == UINT64_MAX / 3);
    assert_true(r.tx == 1);             /* 3 bytes in 3 s */
    cur.at_ns = 1;                      /* a nanosecond: more than 64 bits would say */
    watch_rates(&prev, &cur, &r);
    assert_true(r.rx == UINT64_MAX);
    /* Empty samples. */
    prev.n = cur.n = 0;
    watch_rates(&prev, &cur, &r);
}

static void test_sample(void **state)
{
    uint64_t rx[] = { 100, 200 }, tx[] = { 300, UINT64_MAX };
    char *resp = answer(2, rx, tx);
    struct watch_sample s;

    (void)state;
    assert_int_equal(status_sample(resp, 42, &s), 0);
    assert_true(s.at_ns == 42);
    assert_int_equal(s.n, 2);
    assert_int_equal(strlen(s.peers[0].key), 64);
    assert_int_equal(s.peers[0].key[0], 'a');
    assert_int_equal(s.peers[1].key[63], 'b');
    assert_true(s.peers[0].rx_bytes == 100 && s.peers[0].tx_bytes == 300);
    assert_true(s.peers[1].rx_bytes == 200 && s.peers[1].tx_bytes == UINT64_MAX);
    watch_sample_free(&s);
    assert_null(s.peers);
    free(resp);

    /* No peers; then answers that are not understood or report an error. */
    resp = answer(0, NULL, NULL);
    assert_int_equal(status_sample(resp, 1, &s), 0);
    assert_int_equal(s.n, 0);
    watch_sample_free(&s);
    free(resp);
    assert_int_equal(status_sample("interface=ddp0\n", 1, &s), -EPROTO);
    assert_null(s.peers);
    assert_int_equal(status_sample("errno=-13\n\n", 1, &s), -EACCES);
}

/* --- the frame ----------------------------------------------------------------------------- */

/* Without rates or limits, the frame is `ddpnet status`'s table. */
static void test_frame_is_the_table(void **state)
{
    uint64_t rx[] = { 1, 2, 3 }, tx[] = { 4, 5, 6 };
    char *resp = answer(3, rx, tx), *table = NULL, *frame;
    size_t len = 0;
    FILE *out = open_memstream(&table, &len);
    struct watch_frame f = { NULL, 0, 0, 0 };

    (void)state;
    assert_int_equal(status_format_table(resp, out, 1000), 0);
    fclose(out);
    frame = frame_text(resp, &f, 0);
    assert_string_equal(frame, table);
    assert_int_equal(count(frame, "\n"), 5);
    free(frame);
    free(table);
    free(resp);
}

static void test_frame_rates(void **state)
{
    uint64_t rx[] = { 1, 2 }, tx[] = { 4, 5 };
    char *resp = answer(2, rx, tx), *text;
    struct watch_rate rates[2] = { { true, 125000, 1250 }, { false, 0, 0 } };
    struct watch_frame f = { rates, 2, 0, 0 };

    (void)state;
    text = frame_text(resp, &f, 0);
    /* peer-1: ours (1 Mbit/s, 10 kbit/s); peer-2 not known: the daemon's. */
    assert_non_null(strstr(text, "1.0 Mbit/s  10 kbit/s\n"));
    assert_non_null(strstr(text, "  56 bit/s   72 bit/s\n"));
    free(text);
    /* Fewer rates than peers: the rest are the daemon's. */
    f.n_rates = 1;
    text = frame_text(resp, &f, 0);
    assert_non_null(strstr(text, "  56 bit/s   72 bit/s\n"));
    free(text);
    assert_int_equal(status_format_frame("nonsense", &f, stdout, 0), -EPROTO);
    free(resp);
}

/* Cut to the terminal: rows, then "... N more peers", lines to the width. */
static void test_frame_cut(void **state)
{
    uint64_t rx[8] = { 0 }, tx[8] = { 0 };
    char *resp = answer(8, rx, tx), *text;
    struct watch_frame f = { NULL, 0, 6, 0 };
    const char *line;

    (void)state;
    text = frame_text(resp, &f, 0);
    /* Header, column names, 3 peers, and the line for the 5 others. */
    assert_int_equal(count(text, "\n"), 6);
    assert_non_null(strstr(text, "peer-3 "));
    assert_null(strstr(text, "peer-4 "));
    line = strstr(text, "... 5 more peers\n");
    assert_non_null(line);
    assert_string_equal(line, "... 5 more peers\n");
    free(text);

    /* One row short: the last two peers make way for the line. */
    f.rows = 9;
    text = frame_text(resp, &f, 0);
    assert_int_equal(count(text, "\n"), 9);
    assert_non_null(strstr(text, "peer-6 "));
    assert_null(strstr(text, "peer-7 "));
    assert_non_null(strstr(text, "\n... 2 more peers\n"));
    free(text);
    f.rows = 10;
    text = frame_text(resp, &f, 0);
    assert_int_equal(count(text, "\n"), 10);
    assert_non_null(strstr(text, "peer-8 "));
    assert_null(strstr(text, "more peer"));
    free(text);

    /* Too short for any peer: never more lines than rows. */
    for (size_t rows = 1; rows <= 3; rows++) {
        f.rows = rows;
        text = frame_text(resp, &f, 0);
        assert_int_equal(count(text, "\n"), rows);
        free(text);
    }

    /* The width: every line cut to 20 characters, each still ending. */
    f.rows = 0;
    f.cols = 20;
    text = frame_text(resp, &f, 0);
    assert_int_equal(count(text, "\n"), 10);
    for (const char *p = text; *p; p = strchr(p, '\n') + 1)
        assert_true(strcspn(p, "\n") <= 20);
    assert_memory_equal(text, "ddp0: node node-a, a\n", 21);
    free(text);
    free(resp);
}

/* A name is cut between characters, never inside one. */
static void test_frame_cut_utf8(void **state)
{
    const char *resp = "interface=ddp0\nself=\xc3\xa9t\xc3\xa9\naddress=10.77.0.1\n"
                       "listen_port=1\nerrno=0\n\n";
    /* "ddp0: node " is 11 characters; then é (2 bytes), t, é. */
    struct watch_frame f = { NULL, 0, 1, 13 };
    char *text;

    (void)state;
    text = frame_text(resp, &f, 0);
    assert_string_equal(text, "ddp0: node \xc3\xa9t\n");
    free(text);
    f.cols = 12;
    text = frame_text(resp, &f, 0);
    assert_string_equal(text, "ddp0: node \xc3\xa9\n");
    free(text);
}

/* --- the loop, on answers handed to it ------------------------------------------------------ */

/* The answers a test gives the loop: script[0] is the first, handed to
 * watch_run; script[i] answers the i-th question after it (NULL, or past
 * the end: -ECONNREFUSED, the daemon gone). at_*: at which question to
 * raise SIGINT, type "xq", or resize the terminal (-1: never). */
struct fake {
    const char *const *script;
    size_t n, asked;
    int master;                 /* the pty's master side, or -1 */
    int at_sigint, at_key, at_resize;   /* at which question; -1: never */
};

static int fake_fetch(void *ctx, char **response)
{
    struct fake *f = ctx;
    size_t i = ++f->asked;

    if ((int)i == f->at_sigint)
        kill(getpid(), SIGINT);
    if ((int)i == f->at_key)
        assert_int_equal(write(f->master, "xq", 2), 2);
    if ((int)i == f->at_resize) {
        struct winsize ws = { .ws_row = 6, .ws_col = 30 };

        assert_int_equal(ioctl(f->master, TIOCSWINSZ, &ws), 0);
        kill(getpid(), SIGWINCH);    /* the kernel sends it only to a session's tty */
    }
    if (i >= f->n || f->script[i] == NULL)
        return -ECONNREFUSED;
    *response = strdup(f->script[i]);
    return *response ? 0 : -ENOMEM;
}

/* Runs watch_run with out_fd (and in_fd) and stderr captured into err. */
static int run_watch(struct fake *fk, int in_fd, int out_fd, uint64_t interval_ns,
                     char *err, size_t err_cap)
{
    struct watch_opts o = {
        .verb = "status", .ifname = "ddp0", .interval_ns = interval_ns,
        .in_fd = in_fd, .out_fd = out_fd, .fetch = fake_fetch, .ctx = fk,
    };
    FILE *fe = tmpfile();
    int saved = dup(STDERR_FILENO), rc;
    size_t n;

    assert_non_null(fe);
    fflush(stderr);
    dup2(fileno(fe), STDERR_FILENO);
    rc = watch_run(&o, strdup(fk->script[0]));
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(fe);
    n = fread(err, 1, err_cap - 1, fe);
    err[n] = '\0';
    fclose(fe);
    return rc;
}

static void read_all(int fd, char *buf, size_t cap)
{
    size_t len = 0;
    ssize_t n;

    while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)n;
    buf[len] = '\0';
}

static bool signal_blocked(int sig)
{
    sigset_t now;

    sigprocmask(SIG_SETMASK, NULL, &now);
    return sigismember(&now, sig);
}

/* Into a file: each answer a table, a blank line between, no escape
 * codes; the daemon gone ends it with 1 and one line. */
static void test_loop_plain_daemon_gone(void **state)
{
    char *a1 = answer_one(1000, 1000), *a2 = answer_one(1000 + 250000, 1000),
         *a3 = answer_one(1000 + 500000, 1000);
    const char *script[] = { a1, a2, a3, NULL };
    struct fake fk = { script, 4, 0, -1, -1, -1, -1 };
    static char out[OUT_MAX];
    char err[512];
    FILE *fo = tmpfile();

    (void)state;
    assert_non_null(fo);
    assert_int_equal(run_watch(&fk, STDIN_FILENO, fileno(fo), NS / 10, err, sizeof(err)),
                     CLI_EXIT_FAIL);
    rewind(fo);
    out[fread(out, 1, sizeof(out) - 1, fo)] = '\0';
    fclose(fo);
    assert_string_equal(err, "ddpnet status: the daemon of ddp0 stopped\n");
    assert_null(strchr(out, '\033'));
    assert_int_equal(count(out, "ddp0: node node-a"), 3);
    assert_int_equal(count(out, "NAME "), 3);
    assert_int_equal(count(out, "\n\nddp0: node node-a"), 2);
    assert_true(out[0] == 'd' && out[strlen(out) - 2] != '\n');
    /* The first table shows the daemon's rates, the next ones ours:
     * 250000 bytes in about 0.1 s, some 20 Mbit/s. */
    assert_non_null(strstr(out, "  56 bit/s  72 bit/s\n"));
    assert_non_null(strstr(out, "Mbit/s"));
    assert_int_equal(fk.asked, 3);
    assert_false(signal_blocked(SIGINT));
    free(a1);
    free(a2);
    free(a3);
}

/* SIGINT ends it with 0, as does SIGTERM; neither is left pending or
 * blocked. */
static void test_loop_plain_sigint(void **state)
{
    char *a = answer_one(0, 0);
    const char *script[] = { a, a, a, a, a };
    struct fake fk = { script, 5, 0, -1, 2, -1, -1 };
    char err[512];
    FILE *fo = tmpfile();
    sigset_t pending;

    (void)state;
    assert_int_equal(run_watch(&fk, STDIN_FILENO, fileno(fo), NS / 10, err, sizeof(err)),
                     CLI_EXIT_OK);
    assert_string_equal(err, "");
    assert_int_equal(fk.asked, 2);
    sigpending(&pending);
    assert_false(sigismember(&pending, SIGINT));
    assert_false(signal_blocked(SIGINT));
    fclose(fo);
    free(a);
}

struct pty {
    int master, slave;
    struct termios before;
};

static void pty_open(struct pty *p, unsigned short rows, unsigned short cols)
{
    struct winsize ws = { .ws_row = rows, .ws_col = cols };

    p->master = posix_openpt(O_RDWR | O_NOCTTY);
    assert_true(p->master >= 0);
    assert_int_equal(grantpt(p->master), 0);
    assert_int_equal(unlockpt(p->master), 0);
    p->slave = open(ptsname(p->master), O_RDWR | O_NOCTTY);
    assert_true(p->slave >= 0);
    assert_int_equal(ioctl(p->master, TIOCSWINSZ, &ws), 0);
    assert_int_equal(tcgetattr(p->slave, &p->before), 0);
    assert_true(p->before.c_lflag & ECHO);
    assert_true(p->before.c_lflag & ICANON);
}

/* The terminal as it was, and everything drawn read back into out. */
static void pty_close(struct pty *p, char *out, size_t cap)
{
    struct termios after;

    assert_int_equal(tcgetattr(p->slave, &after), 0);
    assert_true(after.c_lflag == p->before.c_lflag);
    assert_memory_equal(after.c_cc, p->before.c_cc, sizeof(after.c_cc));
    close(p->slave);
    read_all(p->master, out, cap);
    close(p->master);
    /* The terminal's own "\r" before each "\n" (ONLCR): not ours. */
    for (char *o = out, *i = out;; i++) {
        if (*i != '\r')
            *o++ = *i;
        if (!*i)
            break;
    }
}

/* The screen taken at the start and given back at the end; between, only
 * frames drawn from the top. */
static void assert_screen_given_back(const char *out)
{
    const char *take = ESC "[?1049h" ESC "[?25l", *give = ESC "[?25h" ESC "[?1049l";
    size_t n = strlen(out);

    assert_memory_equal(out, take, strlen(take));
    assert_true(n >= strlen(give));
    assert_string_equal(out + n - strlen(give), give);
    assert_int_equal(count(out, ESC "[?1049h"), 1);
    assert_int_equal(count(out, ESC "[?1049l"), 1);
}

/* On a terminal: drawn in place (each frame from the top, the header once
 * per frame), q ends it with 0. */
static void test_loop_tty_q(void **state)
{
    char *a1 = answer_one(0, 0), *a2 = answer_one(125000, 0);
    const char *script[] = { a1, a2, a2, a2 };
    struct fake fk = { script, 4, 0, -1, -1, 2, -1 };
    struct pty p;
    static char out[OUT_MAX];
    char err[512];
    const char *last;

    (void)state;
    pty_open(&p, 30, 160);
    fk.master = p.master;
    assert_int_equal(run_watch(&fk, p.slave, p.slave, NS / 10, err, sizeof(err)), CLI_EXIT_OK);
    assert_string_equal(err, "");
    pty_close(&p, out, sizeof(out));
    assert_screen_given_back(out);
    /* Three frames (the first answer, two more), each from the top. */
    assert_int_equal(count(out, ESC "[H"), 3);
    assert_int_equal(count(out, "NAME "), 3);
    last = strstr(out, ESC "[H");
    for (const char *p2; (p2 = strstr(last + 1, ESC "[H")) != NULL;)
        last = p2;
    assert_int_equal(count(last, "ddp0: node node-a"), 1);
    assert_non_null(strstr(last, "every 0.1 s, q quits"));
    assert_non_null(strstr(last, "peer-1"));
    assert_non_null(strstr(last, "0 bit/s"));     /* counters unchanged since */
    /* The frame before it: 125000 bytes in about 0.1 s, some 10 Mbit/s. */
    assert_non_null(strstr(out, "Mbit/s"));
    /* The screen below the frame is cleared. */
    assert_non_null(strstr(last, ESC "[J"));
    assert_false(signal_blocked(SIGWINCH));
    free(a1);
    free(a2);
}

/* A resize redraws at the new size: 6 rows, 30 columns. */
static void test_loop_tty_resize(void **state)
{
    uint64_t rx[10] = { 0 }, tx[10] = { 0 };
    char *a = answer(10, rx, tx);
    const char *script[] = { a, a, a, a };
    struct fake fk = { script, 4, 0, -1, -1, 2, 1 };
    struct pty p;
    static char out[OUT_MAX];
    char err[512];
    const char *frame, *last = NULL;
    size_t lines = 0;

    (void)state;
    pty_open(&p, 40, 200);
    fk.master = p.master;
    assert_int_equal(run_watch(&fk, p.slave, p.slave, NS / 10, err, sizeof(err)), CLI_EXIT_OK);
    pty_close(&p, out, sizeof(out));
    assert_screen_given_back(out);
    /* The first frames have every peer; the ones after the resize cut. */
    frame = strstr(out, ESC "[H");
    assert_non_null(strstr(frame, "peer-10 "));
    for (const char *q = frame; (q = strstr(q + 1, ESC "[H")) != NULL;)
        last = q;
    assert_non_null(last);
    assert_null(strstr(last, "peer-10"));
    assert_non_null(strstr(last, "... 8 more peers"));
    /* 6 rows, 5 newlines (none after the last), each at most 30 wide. */
    for (const char *l = last + 3; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        const char *text = l;
        size_t len;

        if (!strncmp(text, ESC "[2K", 4))
            text += 4;
        len = strcspn(text, "\n\033");
        if (len > 30)
            print_message("line of %zu: %.*s\n", len, (int)len, text);
        assert_true(len <= 30);
        lines++;
    }
    assert_int_equal(lines, 6);
    free(a);
}

/* The daemon gone while drawing: 1, one line, the terminal given back. */
static void test_loop_tty_daemon_gone(void **state)
{
    char *a = answer_one(0, 0);
    const char *script[] = { a, a, NULL };
    struct fake fk = { script, 3, 0, -1, -1, -1, -1 };
    struct pty p;
    static char out[OUT_MAX];
    char err[512];

    (void)state;
    pty_open(&p, 30, 160);
    fk.master = p.master;
    assert_int_equal(run_watch(&fk, p.slave, p.slave, NS / 10, err, sizeof(err)),
                     CLI_EXIT_FAIL);
    assert_string_equal(err, "ddpnet status: the daemon of ddp0 stopped\n");
    pty_close(&p, out, sizeof(out));
    assert_screen_given_back(out);
    assert_int_equal(count(out, ESC "[H"), 2);
    free(a);
}

/* SIGINT (Ctrl-C) on a terminal: 0, the terminal given back. An answer
 * not understood: 1, said once the terminal is given back. */
static void test_loop_tty_sigint_and_garbage(void **state)
{
    char *a = answer_one(0, 0);
    const char *script[] = { a, a, a };
    const char *garbage[] = { a, "what?\n" };
    struct fake fk = { script, 3, 0, -1, 1, -1, -1 };
    struct pty p;
    static char out[OUT_MAX];
    char err[512];

    (void)state;
    pty_open(&p, 30, 160);
    fk.master = p.master;
    assert_int_equal(run_watch(&fk, p.slave, p.slave, NS / 10, err, sizeof(err)), CLI_EXIT_OK);
    assert_string_equal(err, "");
    pty_close(&p, out, sizeof(out));
    assert_screen_given_back(out);

    fk = (struct fake){ garbage, 2, 0, -1, -1, -1, -1 };
    pty_open(&p, 30, 160);
    fk.master = p.master;
    assert_int_equal(run_watch(&fk, p.slave, p.slave, NS / 10, err, sizeof(err)),
                     CLI_EXIT_FAIL);
    assert_string_equal(err, "ddpnet status: the daemon's answer is not understood "
                             "(is it another version of ddpnet?)\n");
    pty_close(&p, out, sizeof(out));
    assert_screen_given_back(out);
    free(a);
}

/* --- the verb, up to where it would ask a daemon ---------------------------------------- */

static int run_status(const char *const *argv, char *err, size_t cap)
{
    FILE *fe = tmpfile();
    int saved = dup(STDERR_FILENO), argc = 0, rc;
    size_t n;

    while (argv[argc])
        argc++;
    fflush(stderr);
    dup2(fileno(fe), STDERR_FILENO);
    rc = cli_status(argc, (char **)(uintptr_t)argv);
    fflush(stderr);
    dup2(saved, STDERR_FILENO);
    close(saved);
    rewind(fe);
    n = fread(err, 1, cap - 1, fe);
    err[n] = '\0';
    fclose(fe);
    return rc;
}

#define STATUS_USAGE_LINE \
    "usage: ddpnet status [-i IFNAME] [--run-dir DIR] [--json | -w|--watch [SECONDS]]\n"

static void test_verb_refusals(void **state)
{
    char err[1024];

    (void)state;
    assert_int_equal(run_status((const char *[]){ "status", "--watch", "0", NULL }, err,
                                sizeof(err)), CLI_EXIT_USAGE);
    assert_string_equal(err, "ddpnet status: option '--watch' wants seconds from 0.1 to "
                             "3600, not '0'\n" STATUS_USAGE_LINE
                             "(ddpnet status --help explains each option)\n");
    assert_int_equal(run_status((const char *[]){ "status", "-w", "--json", NULL }, err,
                                sizeof(err)), CLI_EXIT_USAGE);
    assert_string_equal(err, "ddpnet status: --watch draws the table; it does not go with "
                             "--json\n" STATUS_USAGE_LINE);
    /* No daemon: said as plain status says it, before any terminal is touched. */
    assert_int_equal(run_status((const char *[]){ "status", "-w", "--run-dir",
                                                  "/nonexistent-ddpnet", NULL },
                                err, sizeof(err)), CLI_EXIT_FAIL);
    assert_string_equal(err, "ddpnet status: ddp0 is not up (no control socket at "
                             "/nonexistent-ddpnet/ddp0.sock)\n");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_watch_option),
        cmocka_unit_test(test_watch_option_elsewhere),
        cmocka_unit_test(test_seconds),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_rates_backwards),
        cmocka_unit_test(test_rates_extremes),
        cmocka_unit_test(test_sample),
        cmocka_unit_test(test_frame_is_the_table),
        cmocka_unit_test(test_frame_rates),
        cmocka_unit_test(test_frame_cut),
        cmocka_unit_test(test_frame_cut_utf8),
        cmocka_unit_test(test_loop_plain_daemon_gone),
        cmocka_unit_test(test_loop_plain_sigint),
        cmocka_unit_test(test_loop_tty_q),
        cmocka_unit_test(test_loop_tty_resize),
        cmocka_unit_test(test_loop_tty_daemon_gone),
        cmocka_unit_test(test_loop_tty_sigint_and_garbage),
        cmocka_unit_test(test_verb_refusals),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
