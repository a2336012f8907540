/* SPDX-License-Identifier: MIT */
/* The reader of a daemon's get answer (cli_reply.h). */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "overlay/cli/cli_reply.h"
#include "overlay/control/uapi.h"

/* Longest decimal text of a uint64_t. */
#define DEC_MAX_LEN     20u
#define FIRST_CAP       16u

int cli_reply_u64(const char *s, uint64_t *out)
{
    uint64_t n = 0;

    if (!*s || strlen(s) > DEC_MAX_LEN)
        return -EPROTO;
    for (; *s; s++) {
        unsigned d = (unsigned)(unsigned char)*s - '0';

        if (d > 9 || n > (UINT64_MAX - d) / 10)
            return -EPROTO;
        n = n * 10 + d;
    }
    *out = n;
    return 0;
}

/* "0" or "-N": the errno the daemon answered with. */
static int parse_errno(const char *s, int *err)
{
    uint64_t n;
    bool neg = s[0] == '-';

    if (cli_reply_u64(s + neg, &n) < 0 || n > INT32_MAX || (n && !neg))
        return -EPROTO;
    *err = -(int)n;
    return 0;
}

static int one_line(char *line, const struct cli_reply_sink *sink, bool *in_peer)
{
    char *eq = strchr(line, '=');

    if (!eq || eq == line)
        return -EPROTO;
    *eq = '\0';
    if (!strcmp(line, UAPI_KEY_PUBLIC_KEY))
        *in_peer = true;
    return *in_peer ? sink->peer(sink->ctx, line, eq + 1) : sink->iface(sink->ctx, line, eq + 1);
}

int cli_reply_walk(char *text, const struct cli_reply_sink *sink)
{
    char *line = text;
    bool in_peer = false;

    for (;;) {
        char *nl = strchr(line, '\n');
        int ret, err;

        if (!nl)
            return -EPROTO;
        *nl = '\0';
        if (!strncmp(line, UAPI_KEY_ERRNO "=", sizeof(UAPI_KEY_ERRNO))) {
            if (parse_errno(line + sizeof(UAPI_KEY_ERRNO), &err) < 0 || strcmp(nl + 1, "\n"))
                return -EPROTO;
            return err;
        }
        ret = one_line(line, sink, &in_peer);
        if (ret < 0)
            return ret;
        line = nl + 1;
    }
}

void *cli_reply_grow(void *array, size_t *cap, size_t n, size_t size)
{
    if (n == *cap) {
        size_t want = *cap ? 2 * *cap : FIRST_CAP;
        void *a;

        if (want <= *cap || want > SIZE_MAX / size)
            return NULL;
        a = realloc(array, want * size);
        if (!a)
            return NULL;
        array = a;
        *cap = want;
    }
    memset((char *)array + n * size, 0, size);
    return array;
}
