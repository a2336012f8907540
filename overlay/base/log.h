/* Concise log lines with a level: to stderr when the daemon runs in the
 * foreground, to syslog otherwise. */
#ifndef DDPNET_LOG_H
#define DDPNET_LOG_H

#include <stdbool.h>

enum log_level { LOG_LVL_ERROR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

/* ident names the source (e.g. "ddpnet/ddp0"); to_stderr picks the sink;
 * lines above max_level are dropped. */
void log_init(const char *ident, bool to_stderr, enum log_level max_level);
void log_msg(enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
