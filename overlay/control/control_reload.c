/* SPDX-License-Identifier: MIT */
/* set=ddpnet-statement (below): one statement of the authority given to a
 * running node. set=ddpnet-cluster: a cluster file applied live (membership/members.h),
 * answered with a line per change, per error of the file or per reason it
 * was refused, then its errno line:
 *
 *   change=added node-d
 *   change=changed node-b: keepalive
 *   errno=0
 *
 * The file is never on disk here: the CLI read it (as root, which may
 * read what the daemon's user may not) and sent its bytes. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "overlay/base/log.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/members.h"

struct answer {
    FILE *f;
};

/* A line of the file may hold any byte but a newline (the parser said
 * which): in the answer it is one line, its control bytes shown as '?'. */
static void say_line(void *ctx, const char *kind, const char *line)
{
    struct answer *a = ctx;

    /* The journal keeps why, at warning: `journalctl -p warning` is what
     * needs a person. */
    if (!strcmp(kind, MEMBERS_SAY_REFUSED))
        log_warn("reload refused: %s", line);

    fprintf(a->f, "%s=", kind);
    for (const char *p = line; *p; p++)
        fputc((unsigned char)*p < 0x20 || *p == 0x7f ? '?' : *p, a->f);
    fputc('\n', a->f);
}

int control_reload(struct device *dev, const char *text, size_t len, int hosts_fd,
                   uint64_t now_ns, char **out, size_t *out_len)
{
    struct answer a;
    char *buf = NULL;
    size_t size = 0;
    int ret;

    if (!(a.f = open_memstream(&buf, &size))) {
        if (hosts_fd >= 0)
            close(hosts_fd);
        return -ENOMEM;
    }
    /* First, so that what the reload changes lands in the new file. */
    if (hosts_fd >= 0 && members_take_hosts(dev, hosts_fd) > 0)
        say_line(&a, CONTROL_KEY_CHANGE, "names block follows the new hosts file "
                 "(the old one was replaced)");
    ret = members_reload(dev, text, len, say_line, &a, now_ns);
    /* The reasons went back to whoever ran it; the journal keeps that it
     * happened (an applied one is logged by members_reload). */
    if (ret < 0)
        log_warn("reload from the control socket refused: %s; the node runs the file it "
                 "had", strerror(-ret));
    fprintf(a.f, "%s=%d\n\n", UAPI_KEY_ERRNO, ret < 0 ? -ret : 0);
    if (fclose(a.f)) {
        free(buf);
        return -ENOMEM;
    }
    *out = buf;
    *out_len = size;
    return 0;
}

int control_statement(struct device *dev, const char *text, size_t len, uint64_t now_ns,
                      char **out, size_t *out_len)
{
    const char *why = "";
    char *buf = NULL;
    size_t size = 0;
    int ret = members_statement(dev, text, len, now_ns, &why);
    FILE *f = open_memstream(&buf, &size);

    if (!f)
        return -ENOMEM;
    fprintf(f, "%s=%s%s%s\n", CONTROL_KEY_VERDICT, ret >= 0 ? certs_verdict_str(ret) : strerror(-ret),
            why[0] ? ": " : "", why);
    fprintf(f, "%s=%d\n\n", UAPI_KEY_ERRNO, ret < 0 ? -ret : 0);
    if (fclose(f)) {
        free(buf);
        return -ENOMEM;
    }
    *out = buf;
    *out_len = size;
    return 0;
}
