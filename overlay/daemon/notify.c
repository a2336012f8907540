/* sd_notify's sending half (notify.h). */
#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "overlay/daemon/notify.h"

#define NOTIFY_ENV "NOTIFY_SOCKET"

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
