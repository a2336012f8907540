/* SPDX-License-Identifier: MIT */
/* The daemon's answer to a get request as the CLI reads it: "key=value\n"
 * lines up to "errno=N\n\n", which must end the text; the interface's
 * keys first, then each peer's, a peer beginning at its public_key line.
 * `status`, `env` and `doctor` each keep what they show; this walk is the
 * one reader of the lines. The text is the caller's copy, cut in place
 * at each '=' and '\n', so the values handed on point into it. */
#ifndef DDPNET_CLI_REPLY_H
#define DDPNET_CLI_REPLY_H

#include <stddef.h>
#include <stdint.h>

struct cli_reply_sink {
    void *ctx;
    /* A key of the interface; a negative return ends the walk with it. */
    int (*iface)(void *ctx, const char *key, const char *value);
    /* A peer's key, public_key first (the start of a new peer). */
    int (*peer)(void *ctx, const char *key, const char *value);
};

/* 0 when the answer ended with errno=0, the daemon's own -errno when it
 * sent one, -EPROTO for a malformed text, or what a sink returned. */
int cli_reply_walk(char *text, const struct cli_reply_sink *sink);

/* Decimal digits only, within uint64_t: 0 or -EPROTO. */
int cli_reply_u64(const char *s, uint64_t *out);

/* array (of *cap elements of size each, n used) with room for one more,
 * which is zeroed: the array, moved when it had to grow (doubling from
 * 16), or NULL when out of memory (array is then unchanged). */
void *cli_reply_grow(void *array, size_t *cap, size_t n, size_t size);

#endif
