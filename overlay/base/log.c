/* SPDX-License-Identifier: MIT */
/* Log sink and rate limits (see log.h). */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#include "overlay/base/clock.h"
#include "overlay/base/log.h"

#define LOG_TEXT_MAX 512u   /* a longer line is cut short */

static struct {
    char ident[64];
    bool to_stderr;
    bool journal;          /* stderr is the journal: priority prefix, no timestamp */
    enum log_level max_level;
    bool capped;           /* stderr is a regular file: LOG_FILE_MAX applies */
    uint64_t written;      /* its size, as far as we wrote it */
} log_state = { "ddpnet", true, false, LOG_LVL_INFO, false, 0 };

static const char *const level_names[] = { "error", "warn", "notice", "info", "debug" };
static const int syslog_priorities[] = { LOG_ERR, LOG_WARNING, LOG_NOTICE, LOG_INFO, LOG_DEBUG };

/* The limits with suppressed lines, for log_flush; pending_next is the
 * earliest end of their windows (0: none), read without the lock so that
 * the loop's call costs a load when there is nothing to say. */
static pthread_mutex_t limit_lock = PTHREAD_MUTEX_INITIALIZER;
static struct log_limit *pending;
static uint64_t pending_next;

/* systemd sets JOURNAL_STREAM=DEV:INODE for the stream it connects
 * stdout/stderr to (systemd.exec(5)); it is ours only when stderr is
 * still that stream, not when a child inherited the variable with its
 * stderr redirected (sd_journal_stream_fd(3)). */
static bool stderr_is_journal(void)
{
    const char *v = getenv("JOURNAL_STREAM");
    unsigned long long dev, ino;
    struct stat st;
    char end;

    if (!v || sscanf(v, "%llu:%llu%c", &dev, &ino, &end) != 2)
        return false;
    if (fstat(STDERR_FILENO, &st))
        return false;
    return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

bool log_syslog_reachable(const char *path)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd;
    bool ok;

    if (strlen(path) >= sizeof(sa.sun_path))
        return false;
    memcpy(sa.sun_path, path, strlen(path));
    /* As syslog(3) does: a datagram socket, else a stream one. A socket
     * file nobody listens on (syslogd stopped) refuses both. */
    for (int type = SOCK_DGRAM; ; type = SOCK_STREAM) {
        fd = socket(AF_UNIX, type | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return false;
        ok = connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0;
        close(fd);
        if (ok || errno != EPROTOTYPE || type == SOCK_STREAM)
            return ok;
    }
}

void log_init(const char *ident, bool to_stderr, enum log_level max_level)
{
    snprintf(log_state.ident, sizeof(log_state.ident), "%s", ident);
    if (!to_stderr && !log_syslog_reachable(LOG_SYSLOG_PATH))
        to_stderr = true;
    log_state.to_stderr = to_stderr;
    log_state.journal = to_stderr && stderr_is_journal();
    log_state.max_level = max_level;
    log_state.capped = false;
    if (to_stderr && !log_state.journal) {
        struct stat st;

        if (fstat(STDERR_FILENO, &st) == 0 && S_ISREG(st.st_mode)) {
            log_state.capped = true;
            log_state.written = (uint64_t)st.st_size;
        }
    }
    if (!to_stderr)
        openlog(log_state.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

bool log_enabled(enum log_level level)
{
    return level <= log_state.max_level;
}

/* One line, one event: a newline or other control byte inside (a name a
 * peer chose, say) must not start a line of its own or hide one. */
static void sanitize(char *s)
{
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f)
            *s = '?';
}

static void write_all(const char *buf, size_t len)
{
    while (len) {
        ssize_t n = write(STDERR_FILENO, buf, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return;   /* nowhere to say so */
        buf += n;
        len -= (size_t)n;
    }
}

static void emit(enum log_level level, char *text)
{
    char line[LOG_TEXT_MAX + 128];
    int n;

    sanitize(text);
    if (!log_state.to_stderr) {
        syslog(syslog_priorities[level], "%s: %s", level_names[level], text);
        return;
    }
    if (log_state.journal) {
        n = snprintf(line, sizeof(line), "<%d>%s\n", syslog_priorities[level], text);
    } else {
        struct timespec ts;
        struct tm tm;
        clock_gettime(CLOCK_REALTIME, &ts);
        localtime_r(&ts.tv_sec, &tm);
        n = snprintf(line, sizeof(line), "%02d:%02d:%02d.%03ld %s %s: %s\n", tm.tm_hour,
                     tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000, log_state.ident,
                     level_names[level], text);
    }
    if (n < 0)
        return;
    if ((size_t)n >= sizeof(line)) {   /* cut short: still one line */
        n = (int)sizeof(line) - 1;
        line[n - 1] = '\n';
    }
    if (log_state.capped) {
        uint64_t at = __atomic_fetch_add(&log_state.written, (uint64_t)n, __ATOMIC_RELAXED);

        if (at + (uint64_t)n > LOG_FILE_MAX) {
            if (at <= LOG_FILE_MAX) {   /* the one line that crossed it */
                n = snprintf(line, sizeof(line), "%s: the log file reached %llu bytes; "
                             "later lines are dropped until the daemon restarts\n",
                             log_state.ident, (unsigned long long)LOG_FILE_MAX);
                write_all(line, (size_t)n);
            }
            return;
        }
    }
    write_all(line, (size_t)n);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    char text[LOG_TEXT_MAX];
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    emit(level, text);
}

/* --- rate limits ------------------------------------------------------------------- */

static void pending_recompute(void)
{
    uint64_t next = 0;

    for (const struct log_limit *l = pending; l; l = l->next_pending)
        if (!next || l->window_end_ns < next)
            next = l->window_end_ns;
    __atomic_store_n(&pending_next, next, __ATOMIC_RELAXED);
}

static void pending_remove(struct log_limit *lim)
{
    for (struct log_limit **at = &pending; *at; at = &(*at)->next_pending) {
        if (*at == lim) {
            *at = lim->next_pending;
            break;
        }
    }
    lim->next_pending = NULL;
    lim->pending = false;
    pending_recompute();
}

/* The window of lim is over: its summary, if it suppressed anything.
 * Under limit_lock. */
static void window_over(struct log_limit *lim)
{
    char text[LOG_TEXT_MAX];

    if (lim->suppressed) {
        snprintf(text, sizeof(text), "suppressed %u similar line%s in %u s, like: %s",
                 lim->suppressed, lim->suppressed == 1 ? "" : "s", lim->seconds, lim->like);
        emit(lim->level, text);
    }
    if (lim->pending)
        pending_remove(lim);
    lim->passed = 0;
    lim->suppressed = 0;
}

static void vlimited(struct log_limit *lim, enum log_level level, uint64_t now,
                     const char *fmt, va_list ap)
{
    char text[LOG_TEXT_MAX];
    bool pass;
    va_list copy;

    if (!log_enabled(level))
        return;
    pthread_mutex_lock(&limit_lock);
    if (now >= lim->window_end_ns) {
        window_over(lim);
        lim->window_end_ns = now + (uint64_t)lim->seconds * WG_NSEC_PER_SEC;
    }
    pass = lim->passed < lim->lines;
    if (pass) {
        lim->passed++;
    } else if (lim->suppressed++ == 0) {
        /* The first one suppressed is what the summary quotes. */
        lim->level = level;
        lim->pending = true;
        lim->next_pending = pending;
        pending = lim;
        if (!pending_next || lim->window_end_ns < pending_next)
            __atomic_store_n(&pending_next, lim->window_end_ns, __ATOMIC_RELAXED);
        va_copy(copy, ap);
        vsnprintf(lim->like, sizeof(lim->like), fmt, copy);
        va_end(copy);
    }
    pthread_mutex_unlock(&limit_lock);
    if (!pass)
        return;
    vsnprintf(text, sizeof(text), fmt, ap);
    emit(level, text);
}

void log_limited(struct log_limit *lim, enum log_level level, uint64_t now, const char *fmt,
                 ...)
{
    va_list ap;

    va_start(ap, fmt);
    vlimited(lim, level, now, fmt, ap);
    va_end(ap);
}

void log_limited_now(struct log_limit *lim, enum log_level level, const char *fmt, ...)
{
    va_list ap;

    if (!log_enabled(level))
        return;
    va_start(ap, fmt);
    vlimited(lim, level, clock_now_ns(), fmt, ap);
    va_end(ap);
}

void log_flush(uint64_t now)
{
    uint64_t next = __atomic_load_n(&pending_next, __ATOMIC_RELAXED);

    if (!next || now < next)
        return;
    pthread_mutex_lock(&limit_lock);
    for (struct log_limit *l = pending, *after; l; l = after) {
        after = l->next_pending;
        if (now >= l->window_end_ns)
            window_over(l);   /* the next line through l starts a new window */
    }
    pthread_mutex_unlock(&limit_lock);
}
