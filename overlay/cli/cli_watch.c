/* SPDX-License-Identifier: MIT */
/* `ddpnet status --watch`: the loop that asks the daemon every interval
 * and draws the table (cli_status.c's frames), and the rates between two
 * of its answers. On a terminal it owns the screen while it runs -- the
 * alternate screen, a hidden cursor, keys without echo -- and gives all of
 * it back on every way out; elsewhere it appends one table per interval.
 * Signals come through a signalfd and the interval from a timerfd, so
 * one poll waits for keys, signals and the clock alike. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <sys/timerfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "crypto/wg_const.h"
#include "overlay/cli/cli_args.h"
#include "overlay/cli/cli_watch.h"

/* The terminal's controls (ECMA-48 and xterm's private modes). */
#define ESC_SCREEN_ALT   "\033[?1049h"   /* the alternate screen, as less and top use */
#define ESC_SCREEN_MAIN  "\033[?1049l"
#define ESC_CURSOR_HIDE  "\033[?25l"
#define ESC_CURSOR_SHOW  "\033[?25h"
#define ESC_HOME         "\033[H"
#define ESC_ERASE_LINE   "\033[2K"
#define ESC_ERASE_BELOW  "\033[J"
/* What a terminal that does not say its size is taken to be. */
#define DEFAULT_ROWS     24u
#define DEFAULT_COLS     80u
#define KEYS_MAX         64u
#define TITLE_MAX        256u

struct watch {
    const struct watch_opts *o;
    bool tty;                  /* out_fd is a terminal: frames drawn in place */
    bool keys;                 /* keys are read from in_fd */
    bool termios_saved, screen_taken, mask_saved;
    struct termios saved_termios;
    sigset_t saved_mask;
    int sfd, tfd;
    char *response;            /* the latest answer, drawn again on a resize */
    struct watch_sample prev, cur;
    struct watch_rate *rates;  /* cur.n of them */
    size_t frames;
};

/* --- rates --------------------------------------------------------------------------- */

static const struct watch_counter *counter_by_key(const struct watch_sample *s,
                                                  const char *key)
{
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->peers[i].key, key))
            return &s->peers[i];
    return NULL;
}

/* bytes over ns, per second, rounded down; in 128 bits, as a counter's
 * whole range times 10^9 does not fit 64. */
static uint64_t per_second(uint64_t bytes, uint64_t ns)
{
    unsigned __int128 r = (unsigned __int128)bytes * WG_NSEC_PER_SEC / ns;

    return r > UINT64_MAX ? UINT64_MAX : (uint64_t)r;
}

void watch_rates(const struct watch_sample *prev, const struct watch_sample *cur,
                 struct watch_rate *rates)
{
    uint64_t ns = prev && cur->at_ns > prev->at_ns ? cur->at_ns - prev->at_ns : 0;

    for (size_t i = 0; i < cur->n; i++) {
        const struct watch_counter *c = &cur->peers[i];
        const struct watch_counter *p = ns ? counter_by_key(prev, c->key) : NULL;

        memset(&rates[i], 0, sizeof(rates[i]));
        /* A peer removed and added again by a reload starts from 0: its
         * counters going back say nothing of what it moved. */
        if (!p || c->rx_bytes < p->rx_bytes || c->tx_bytes < p->tx_bytes)
            continue;
        rates[i].known = true;
        rates[i].rx = per_second(c->rx_bytes - p->rx_bytes, ns);
        rates[i].tx = per_second(c->tx_bytes - p->tx_bytes, ns);
    }
}

void watch_sample_free(struct watch_sample *s)
{
    free(s->peers);
    memset(s, 0, sizeof(*s));
}

/* --- the terminal ---------------------------------------------------------------------- */

static int write_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, buf, len);

        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

/* Keys one at a time, unechoed; Ctrl-C and Ctrl-Z still signal (ISIG).
 * A terminal that refuses leaves us without q, not without a watch. */
static int terminal_take(struct watch *w)
{
    if (w->keys && tcgetattr(w->o->in_fd, &w->saved_termios) == 0) {
        struct termios t = w->saved_termios;

        t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
        t.c_cc[VMIN] = 1;
        t.c_cc[VTIME] = 0;
        w->termios_saved = tcsetattr(w->o->in_fd, TCSANOW, &t) == 0;
    }
    w->keys = w->termios_saved;
    w->screen_taken = true;
    return write_all(w->o->out_fd, ESC_SCREEN_ALT ESC_CURSOR_HIDE,
                     sizeof(ESC_SCREEN_ALT ESC_CURSOR_HIDE) - 1);
}

/* Undoes terminal_take, as far as it went; safe to call twice. */
static void terminal_give_back(struct watch *w)
{
    if (w->screen_taken)
        (void)write_all(w->o->out_fd, ESC_CURSOR_SHOW ESC_SCREEN_MAIN,
                        sizeof(ESC_CURSOR_SHOW ESC_SCREEN_MAIN) - 1);
    if (w->termios_saved)
        (void)tcsetattr(w->o->in_fd, TCSADRAIN, &w->saved_termios);
    w->screen_taken = w->termios_saved = false;
}

static void terminal_size(const struct watch *w, size_t *rows, size_t *cols)
{
    struct winsize ws;

    *rows = DEFAULT_ROWS;
    *cols = DEFAULT_COLS;
    if (ioctl(w->o->out_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row > 0 && ws.ws_col > 0) {
        *rows = ws.ws_row;
        *cols = ws.ws_col;
    }
}

/* "0.5", "2", "0.125": the interval as it was given. */
static void interval_text(char *buf, size_t len, uint64_t ns)
{
    uint64_t frac = ns % WG_NSEC_PER_SEC;
    int digits = 9;

    while (frac && frac % 10 == 0) {
        frac /= 10;
        digits--;
    }
    if (frac)
        snprintf(buf, len, "%llu.%0*llu", (unsigned long long)(ns / WG_NSEC_PER_SEC),
                 digits, (unsigned long long)frac);
    else
        snprintf(buf, len, "%llu", (unsigned long long)(ns / WG_NSEC_PER_SEC));
}

/* The line above the table: how often, how to leave, the time now. */
static void print_title(FILE *out, const struct watch *w, size_t cols)
{
    char every[32], clock[16] = "", title[TITLE_MAX];
    time_t now = time(NULL);
    struct tm tm;

    interval_text(every, sizeof(every), w->o->interval_ns);
    if (localtime_r(&now, &tm))
        strftime(clock, sizeof(clock), "%H:%M:%S", &tm);
    snprintf(title, sizeof(title), "every %s s, %s quits  %s", every,
             w->keys ? "q" : "Ctrl-C", clock);
    if (cols < sizeof(title))
        title[cols] = '\0';
    fprintf(out, "%s\n", title);
}

/* The frame's lines with the cursor sent home first, each line erased
 * before it is written, and what is below the last one erased. The last
 * line gets no newline, which would scroll a full screen by one. */
static void in_place(FILE *out, const char *text, size_t rows)
{
    size_t n = 0;

    fputs(ESC_HOME, out);
    while (*text) {
        size_t len = strcspn(text, "\n");

        if (n++)
            fputc('\n', out);
        fputs(ESC_ERASE_LINE, out);
        fwrite(text, 1, len, out);
        text += len + (text[len] == '\n');
    }
    if (n < rows)
        fputs("\n" ESC_ERASE_BELOW, out);
}

/* The latest answer as a frame: in place on a terminal, else appended. */
static int draw(struct watch *w)
{
    struct watch_frame f = { w->rates, w->cur.n, 0, 0 };
    char *body = NULL, *frame = NULL;
    size_t body_len = 0, frame_len = 0, rows = 0;
    FILE *b = open_memstream(&body, &body_len), *fr = NULL;
    int ret;

    if (!b)
        return -ENOMEM;
    if (w->tty) {
        terminal_size(w, &rows, &f.cols);
        f.rows = rows > 1 ? rows - 1 : 1;
        print_title(b, w, f.cols);
    } else if (w->frames) {
        fputc('\n', b);
    }
    ret = status_format_frame(w->response, &f, b, (uint64_t)time(NULL));
    if (fclose(b) != 0 && ret == 0)
        ret = -ENOMEM;
    if (ret == 0 && w->tty) {
        fr = open_memstream(&frame, &frame_len);
        if (!fr)
            ret = -ENOMEM;
        else {
            in_place(fr, body, rows);
            ret = fclose(fr) == 0 ? 0 : -ENOMEM;
        }
    }
    if (ret == 0)
        ret = w->tty ? write_all(w->o->out_fd, frame, frame_len)
                     : write_all(w->o->out_fd, body, body_len);
    w->frames += ret == 0;
    free(frame);
    free(body);
    return ret;
}

/* --- the loop -------------------------------------------------------------------------------- */

static uint64_t now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Takes response over as the latest answer: its sample, the rates since
 * the one before. */
static int take_answer(struct watch *w, char *response, uint64_t at_ns)
{
    struct watch_sample s;
    struct watch_rate *rates;
    int ret = status_sample(response, at_ns, &s);

    if (ret < 0) {
        free(response);
        return ret;
    }
    rates = calloc(s.n ? s.n : 1, sizeof(*rates));
    if (!rates) {
        watch_sample_free(&s);
        free(response);
        return -ENOMEM;
    }
    watch_rates(w->response ? &w->cur : NULL, &s, rates);
    watch_sample_free(&w->prev);
    w->prev = w->cur;
    w->cur = s;
    free(w->rates);
    w->rates = rates;
    free(w->response);
    w->response = response;
    return 0;
}

static void print_lost(const struct watch *w, int err)
{
    if (err == -ENOENT || err == -ECONNREFUSED || err == -ECONNRESET || err == -EPIPE)
        fprintf(stderr, "ddpnet %s: the daemon of %s stopped\n", w->o->verb, w->o->ifname);
    else
        fprintf(stderr, "ddpnet %s: no answer from the daemon of %s: %s\n", w->o->verb,
                w->o->ifname, strerror(-err));
}

/* Signals the loop takes itself: the ways to end it, and on a terminal a
 * resize and Ctrl-Z (the screen is given back while stopped). */
static void watch_signals(const struct watch *w, sigset_t *set)
{
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    if (w->tty) {
        sigaddset(set, SIGWINCH);
        sigaddset(set, SIGTSTP);
    }
}

static int watch_open(struct watch *w)
{
    struct itimerspec it = { 0 };
    sigset_t set;

    watch_signals(w, &set);
    if (sigprocmask(SIG_BLOCK, &set, &w->saved_mask) != 0)
        return -errno;
    w->mask_saved = true;
    w->sfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
    if (w->sfd < 0)
        return -errno;
    w->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (w->tfd < 0)
        return -errno;
    it.it_value.tv_sec = (time_t)(w->o->interval_ns / WG_NSEC_PER_SEC);
    it.it_value.tv_nsec = (long)(w->o->interval_ns % WG_NSEC_PER_SEC);
    it.it_interval = it.it_value;
    if (timerfd_settime(w->tfd, 0, &it, NULL) != 0)
        return -errno;
    return w->tty ? terminal_take(w) : 0;
}

static void watch_close(struct watch *w)
{
    struct signalfd_siginfo si;

    terminal_give_back(w);
    /* A signal that came while we were leaving is ours, not the caller's:
     * read it here, or the old mask would let it kill the process. */
    if (w->sfd >= 0) {
        while (read(w->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si))
            ;
        close(w->sfd);
    }
    if (w->tfd >= 0)
        close(w->tfd);
    if (w->mask_saved)
        sigprocmask(SIG_SETMASK, &w->saved_mask, NULL);
    watch_sample_free(&w->prev);
    watch_sample_free(&w->cur);
    free(w->rates);
    free(w->response);
}

/* Ctrl-Z: the terminal as the shell wants it while we are stopped, ours
 * again when continued. */
static int suspend(struct watch *w)
{
    terminal_give_back(w);
    kill(getpid(), SIGSTOP);
    int ret = terminal_take(w);
    return ret < 0 ? ret : draw(w);
}

/* What the loop does next: go on, or leave with an exit status. */
#define GO_ON (-1)

static int on_signal(struct watch *w)
{
    struct signalfd_siginfo si;

    while (read(w->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
        int ret = 0;

        if (si.ssi_signo == SIGINT || si.ssi_signo == SIGTERM)
            return CLI_EXIT_OK;
        if (si.ssi_signo == SIGWINCH)
            ret = draw(w);
        else if (si.ssi_signo == SIGTSTP)
            ret = suspend(w);
        if (ret < 0)
            return ret;
    }
    return GO_ON;
}

/* q or Q ends it; other keys are dropped. */
static int on_keys(struct watch *w)
{
    char keys[KEYS_MAX];
    ssize_t n = read(w->o->in_fd, keys, sizeof(keys));

    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return GO_ON;
    if (n <= 0) {
        w->keys = false;       /* gone (hung up): Ctrl-C and signals remain */
        return GO_ON;
    }
    return memchr(keys, 'q', (size_t)n) || memchr(keys, 'Q', (size_t)n) ? CLI_EXIT_OK
                                                                           : GO_ON;
}

/* The interval is up: ask again, and draw. Returns GO_ON, or 1 (said on
 * stderr once the terminal is given back: *lost). */
static int on_tick(struct watch *w, int *lost)
{
    uint64_t expirations;
    char *response = NULL;
    int ret;

    if (read(w->tfd, &expirations, sizeof(expirations)) != (ssize_t)sizeof(expirations))
        return GO_ON;
    ret = w->o->fetch(w->o->ctx, &response);
    if (ret < 0) {
        *lost = ret;
        return CLI_EXIT_FAIL;
    }
    ret = take_answer(w, response, now_ns());
    if (ret == 0)
        ret = draw(w);
    return ret < 0 ? ret : GO_ON;
}

static int loop(struct watch *w, int *lost)
{
    for (;;) {
        struct pollfd p[3] = {
            { .fd = w->sfd, .events = POLLIN },
            { .fd = w->tfd, .events = POLLIN },
            { .fd = w->keys ? w->o->in_fd : -1, .events = POLLIN },
        };
        int ret;

        if (poll(p, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            return -errno;
        }
        ret = GO_ON;
        if (p[0].revents)
            ret = on_signal(w);
        if (ret == GO_ON && p[2].revents)
            ret = on_keys(w);
        if (ret == GO_ON && p[1].revents)
            ret = on_tick(w, lost);
        if (ret != GO_ON)
            return ret;
    }
}

int watch_run(const struct watch_opts *o, char *first)
{
    struct watch w = { .o = o, .sfd = -1, .tfd = -1 };
    int ret, lost = 0;

    w.tty = isatty(o->out_fd);
    w.keys = w.tty && isatty(o->in_fd);
    ret = take_answer(&w, first, now_ns());
    if (ret == 0)
        ret = watch_open(&w);
    if (ret == 0)
        ret = draw(&w);
    if (ret == 0)
        ret = loop(&w, &lost);
    watch_close(&w);
    if (lost)
        print_lost(&w, lost);
    else if (ret < 0)
        fprintf(stderr, "ddpnet %s: %s\n", o->verb, ret == -EPROTO
                ? "the daemon's answer is not understood (is it another version of ddpnet?)"
                : strerror(-ret));
    return ret < 0 ? CLI_EXIT_FAIL : ret;
}
