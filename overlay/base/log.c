/* Log sink (see log.h). */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <time.h>

#include "overlay/base/log.h"

static struct {
    char ident[64];
    bool to_stderr;
    enum log_level max_level;
} log_state = { "ddpnet", true, LOG_LVL_INFO };

static const char *const level_names[] = { "error", "warn", "info", "debug" };
static const int syslog_priorities[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };

void log_init(const char *ident, bool to_stderr, enum log_level max_level)
{
    snprintf(log_state.ident, sizeof(log_state.ident), "%s", ident);
    log_state.to_stderr = to_stderr;
    log_state.max_level = max_level;
    if (!to_stderr)
        openlog(log_state.ident, LOG_PID | LOG_NDELAY, LOG_DAEMON);
}

void log_msg(enum log_level level, const char *fmt, ...)
{
    char line[512];
    va_list ap;

    if (level > log_state.max_level)
        return;
    va_start(ap, fmt);
    vsnprintf(line, sizeof(line), fmt, ap);
    va_end(ap);
    if (!log_state.to_stderr) {
        syslog(syslog_priorities[level], "%s: %s", level_names[level], line);
        return;
    }
    struct timespec ts;
    struct tm tm;
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    fprintf(stderr, "%02d:%02d:%02d.%03ld %s %s: %s\n", tm.tm_hour, tm.tm_min, tm.tm_sec,
            ts.tv_nsec / 1000000, log_state.ident, level_names[level], line);
}
