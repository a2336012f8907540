/* SPDX-License-Identifier: MIT */
/* `ddpnet status --watch`: the status table again every interval, with
 * each peer's rates taken from the byte counters of two successive
 * answers of the daemon. The loop (cli_watch.c) is the only part that
 * touches a terminal; the rates (cli_watch.c) and the frame's text
 * (cli_status.c, beside the table it extends) are pure functions, tested
 * without a daemon or a terminal. */
#ifndef DDPNET_CLI_WATCH_H
#define DDPNET_CLI_WATCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* A public key as the control socket writes it: 64 hex digits. */
#define WATCH_KEY_MAX 65u

/* One peer's byte counters in one answer of the daemon. */
struct watch_counter {
    char key[WATCH_KEY_MAX];   /* its public key: names may move to another key */
    uint64_t rx_bytes, tx_bytes;
};

/* The counters of every peer of one answer, in the answer's order. */
struct watch_sample {
    uint64_t at_ns;            /* CLOCK_MONOTONIC when the answer came */
    size_t n;
    struct watch_counter *peers;   /* malloc'd; NULL when n is 0 */
};

/* What a peer moved between two samples, in bytes per second. */
struct watch_rate {
    /* false: the peer was not in the earlier sample (new, or re-keyed),
     * a counter went back (removed and added again by a reload), or no
     * time passed; rx and tx are then 0. */
    bool known;
    uint64_t rx, tx;
};

/* rates[i] for cur->peers[i], matched to prev's peers by public key
 * (prev NULL: none known). Never negative; rounds down. */
void watch_rates(const struct watch_sample *prev, const struct watch_sample *cur,
                 struct watch_rate *rates);
void watch_sample_free(struct watch_sample *s);

/* The counters of a get=ddpnet response (cli_status.c). Returns as
 * status_format_table; s is left empty on error. */
int status_sample(const char *response, uint64_t at_ns, struct watch_sample *s);

/* How one frame of the watch is drawn. */
struct watch_frame {
    /* One per peer of the response, in its order (from watch_rates on
     * its sample); a rate not known shows the daemon's own. NULL: all the
     * daemon's. */
    const struct watch_rate *rates;
    size_t n_rates;
    /* The most lines, and characters per line, to print (0: no limit).
     * Peers that do not fit make a last line "... N more peers"; longer
     * lines are cut. */
    size_t rows, cols;
};

/* `ddpnet status`'s header and table with the frame's rates, cut to its
 * size; every line ends in '\n'. Returns as status_format_table. */
int status_format_frame(const char *response, const struct watch_frame *f, FILE *out,
                        uint64_t now_unix);

/* Asks the daemon again: a new malloc'd response, or -errno; prints
 * nothing. */
typedef int (*watch_fetch_fn)(void *ctx, char **response);

struct watch_opts {
    const char *verb;          /* for messages: "status" */
    const char *ifname;
    uint64_t interval_ns;
    int in_fd, out_fd;         /* keys are read from in_fd when it is a terminal */
    watch_fetch_fn fetch;
    void *ctx;
};

/* Runs the watch from a first response (taken over: freed here) until it
 * is told to stop. On a terminal (out_fd a tty): the alternate screen, the
 * cursor hidden, keys read without echo, one frame redrawn in place each
 * interval and on a resize; q, Q or Ctrl-C (SIGINT), or SIGTERM, end it
 * with 0. Otherwise the table once per interval, a blank line between
 * tables, until SIGINT or SIGTERM (0). When the daemon stops answering,
 * one line says so on stderr: 1. The terminal (termios, cursor, screen)
 * and the signal mask are as they were on every way out. Returns the exit
 * status. */
int watch_run(const struct watch_opts *o, char *first);

#endif
