/* SPDX-License-Identifier: MIT */
/* sd_notify's sending half (notify.h). */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "overlay/daemon/notify.h"

#define NOTIFY_ENV "NOTIFY_SOCKET"
/* Set by systemd for the processes of a service it runs. */
#define NOTIFY_INVOCATION_ENV "INVOCATION_ID"
#define NOTIFY_CGROUP_PATH "/proc/self/cgroup"
#define NOTIFY_CGROUP_MAX  4096u
#define NOTIFY_SERVICE_SUFFIX ".service"

static int notify_fd = -1;

int notify_open(void)
{
    const char *path = getenv(NOTIFY_ENV);
    struct sockaddr_un sun = { .sun_family = AF_UNIX };
    size_t len;
    int fd, ret;

    if (!path || !*path)
        return 0;
    len = strlen(path);
    if ((path[0] != '/' && path[0] != '@') || len >= sizeof(sun.sun_path))
        return -EAFNOSUPPORT;
    memcpy(sun.sun_path, path, len);
    if (path[0] == '@')
        sun.sun_path[0] = '\0';    /* the abstract namespace */
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    if (connect(fd, (struct sockaddr *)&sun,
                (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) != 0) {
        ret = -errno;
        close(fd);
        return ret;
    }
    notify_close();
    notify_fd = fd;
    unsetenv(NOTIFY_ENV);
    return 0;
}

int notify_send(const char *state)
{
    if (notify_fd < 0)
        return 0;
    return send(notify_fd, state, strlen(state), MSG_NOSIGNAL) < 0 ? -errno : 0;
}

void notify_close(void)
{
    if (notify_fd >= 0)
        close(notify_fd);
    notify_fd = -1;
}

/* The last "*.service" component of one cgroup line's path
 * ("HIERARCHY:CONTROLLERS:PATH"), into unit. */
static int unit_of_line(const char *line, size_t n, char *unit, size_t len)
{
    const size_t suffix = sizeof(NOTIFY_SERVICE_SUFFIX) - 1;
    const char *colon1 = memchr(line, ':', n), *colon2, *end = line + n, *comp;
    int ret = -ENOENT;

    if (!colon1 || !(colon2 = memchr(colon1 + 1, ':', (size_t)(end - colon1 - 1))))
        return -ENOENT;
    for (comp = colon2 + 1; comp < end; ) {
        const char *slash = memchr(comp, '/', (size_t)(end - comp));
        size_t k = (size_t)((slash ? slash : end) - comp);
        if (k > suffix && !memcmp(comp + k - suffix, NOTIFY_SERVICE_SUFFIX, suffix)) {
            if (k >= len)
                return -ENAMETOOLONG;
            memcpy(unit, comp, k);
            unit[k] = '\0';
            ret = 0;
        }
        comp = slash ? slash + 1 : end;
    }
    return ret;
}

int notify_unit_parse(const char *cgroup, char *unit, size_t len)
{
    const char *p = cgroup;

    if (len == 0)
        return -ENAMETOOLONG;
    unit[0] = '\0';
    while (*p) {
        size_t n = strcspn(p, "\n");
        int ret = unit_of_line(p, n, unit, len);
        if (ret != -ENOENT)
            return ret;
        p += n + (p[n] == '\n');
    }
    return -ENOENT;
}

int notify_unit(char *unit, size_t len)
{
    char text[NOTIFY_CGROUP_MAX + 1];
    const char *id = getenv(NOTIFY_INVOCATION_ENV);
    size_t n;
    FILE *f;

    if (len)
        unit[0] = '\0';
    if (!id || !*id)
        return -ENOENT;
    if (!(f = fopen(NOTIFY_CGROUP_PATH, "re")))
        return -ENOENT;
    n = fread(text, 1, NOTIFY_CGROUP_MAX, f);
    fclose(f);
    text[n] = '\0';
    return notify_unit_parse(text, unit, len);
}
