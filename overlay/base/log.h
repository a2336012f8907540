/* SPDX-License-Identifier: MIT */
/* Concise log lines with a level, one line per event: to stderr when the
 * daemon runs in the foreground, to syslog otherwise.
 *
 * Under systemd (stderr is the journal: JOURNAL_STREAM names it, see
 * systemd.exec(5)) each line begins with the sd-daemon(3) priority prefix
 * ("<4>" for a warning) and carries no timestamp of ours (the journal
 * stamps it), so `journalctl -p warning` filters on our levels. Elsewhere
 * on stderr: "HH:MM:SS.mmm IDENT LEVEL: TEXT". Each line is one write(2),
 * so lines of different threads never interleave.
 *
 * The levels say who should look: ERROR, the node cannot do its job;
 * WARN, a person should act (a peer does not answer, a reload was
 * refused); NOTICE, a change a person may want to see (a peer reachable,
 * its path changed, a reload applied, the daemon up or stopping); INFO,
 * the rest of what happened once; DEBUG, per packet and per timer. */
#ifndef DDPNET_LOG_H
#define DDPNET_LOG_H

#include <stdbool.h>
#include <stdint.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_NOTICE, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* ident names the source (e.g. "ddpnet/ddp0"); to_stderr picks the sink
 * (the journal's format when stderr is the journal); lines above
 * max_level are dropped. Syslog is taken only where LOG_SYSLOG_PATH is a
 * socket: on a machine without one (a container, a minimal install)
 * syslog(3) drops every line silently, so the lines go to stderr. */
void log_init(const char *ident, bool to_stderr, enum log_level max_level);
/* stderr a regular file (no syslog: RUN_DIR/IFNAME.log; or a redirect):
 * it is never rotated, so it stops growing at this size, saying so once. */
#define LOG_FILE_MAX (16ull << 20)
/* Where syslog(3) sends its lines. */
#define LOG_SYSLOG_PATH "/dev/log"
/* Whether path is a socket something listens on: a syslog daemon or
 * journald. */
bool log_syslog_reachable(const char *path);
/* Whether a line at level would be written. */
bool log_enabled(enum log_level level);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...)  log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)   log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_notice(...) log_msg(LOG_LVL_NOTICE, __VA_ARGS__)
#define log_info(...)   log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...)  log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

/* Rate limits. What an outsider or a peer can make happen again and
 * again (a packet dropped, a path or endpoint changed, a name said) is
 * logged through a limit of its own call site: at most `lines` lines per
 * `seconds`; the rest of that window is counted, and once it is over one
 * line says how many were suppressed, like which line (at the site's next
 * line, or at log_flush, whichever comes first). A flood then costs a few
 * lines per window, never the disk or the journal's own rate limit (which
 * would drop our other lines with it). */
struct log_limit {
    unsigned lines, seconds;         /* the budget: set where it is declared */
    uint64_t window_end_ns;          /* the window in progress ends (0: none yet) */
    unsigned passed, suppressed;     /* in this window */
    enum log_level level;            /* of the suppressed lines */
    struct log_limit *next_pending;  /* on the list log_flush looks at */
    bool pending;
    char like[96];                   /* the first suppressed line, cut short */
};

/* A line through lim on the clock now: a test seam (a test's clock);
 * the daemon calls log_limited_now. */
void log_limited(struct log_limit *lim, enum log_level level, uint64_t now, const char *fmt,
                 ...) __attribute__((format(printf, 4, 5)));
/* The same on clock_now_ns (what log_rl calls). */
void log_limited_now(struct log_limit *lim, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Writes the summary of every limit whose window with suppressed lines
 * ended by now (the event loop calls it on each turn). */
void log_flush(uint64_t now);

/* Defaults: per packet or per message (debug) and for peer events that a
 * peer may repeat. */
#define LOG_RL_LINES        10u
#define LOG_RL_SECONDS      5u
#define LOG_RL_PEER_LINES   20u
#define LOG_RL_PEER_SECONDS 60u

/* A limit of this call site's own (static: one per site, whatever the
 * peer); a line whose level is off is not counted. */
#define log_rl(level, n, secs, ...)                                                    \
    do {                                                                               \
        static struct log_limit log_limit_site_ = { .lines = (n), .seconds = (secs) }; \
        log_limited_now(&log_limit_site_, (level), __VA_ARGS__);                       \
    } while (0)

#define log_error_rl(...)  log_rl(LOG_LVL_ERROR, LOG_RL_LINES, LOG_RL_SECONDS, __VA_ARGS__)
#define log_warn_rl(...)   log_rl(LOG_LVL_WARN, LOG_RL_LINES, LOG_RL_SECONDS, __VA_ARGS__)
#define log_notice_rl(...) log_rl(LOG_LVL_NOTICE, LOG_RL_LINES, LOG_RL_SECONDS, __VA_ARGS__)
#define log_info_rl(...)   log_rl(LOG_LVL_INFO, LOG_RL_LINES, LOG_RL_SECONDS, __VA_ARGS__)
#define log_debug_rl(...)  log_rl(LOG_LVL_DEBUG, LOG_RL_LINES, LOG_RL_SECONDS, __VA_ARGS__)
/* Peer events a peer (or the network) could repeat: endpoint roaming,
 * path changes, names. */
#define log_notice_peer_rl(...) \
    log_rl(LOG_LVL_NOTICE, LOG_RL_PEER_LINES, LOG_RL_PEER_SECONDS, __VA_ARGS__)
#define log_info_peer_rl(...) \
    log_rl(LOG_LVL_INFO, LOG_RL_PEER_LINES, LOG_RL_PEER_SECONDS, __VA_ARGS__)

#endif
