/* SPDX-License-Identifier: MIT */
/* Revocations that last: see revocations.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config/cert.h"
#include "overlay/base/log.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/revocations.h"

int revocations_open(const char *state_dir, const char *ifname)
{
    char path[4096];
    int fd;

    if (mkdir(state_dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    if (snprintf(path, sizeof(path), "%s/%s.revoked", state_dir, ifname) >= (int)sizeof(path))
        return -ENAMETOOLONG;
    fd = open(path, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, REVOCATIONS_FILE_MODE);
    return fd >= 0 ? fd : -errno;
}

/* line (len bytes) becomes the newest of the revocations said on every
 * session; the oldest goes past REVOCATIONS_SAID_MAX. */
static void said_push(struct device *dev, const char *line, size_t len)
{
    const char *old = dev->revocations_said ? dev->revocations_said : "";
    size_t lines = 0, keep;
    char *next;

    for (const char *r = old; *r; r += strcspn(r, "\n") + (r[strcspn(r, "\n")] == '\n'))
        lines++;
    for (; lines >= REVOCATIONS_SAID_MAX; lines--)
        old += strcspn(old, "\n") + 1;
    keep = strlen(old);
    if (!(next = malloc(keep + len + 2)))
        return;                           /* said less often: the store holds it all the same */
    memcpy(next, old, keep);
    if (keep)
        next[keep++] = '\n';
    memcpy(next + keep, line, len);
    next[keep + len] = '\0';
    free(dev->revocations_said);
    dev->revocations_said = next;
}

void revocations_taken(struct device *dev, const char *line, size_t len)
{
    said_push(dev, line, len);
    if (dev->revoked_fd <= 0)
        return;
    char buf[CERT_TEXT_MAX + 2];
    if (len > CERT_TEXT_MAX)
        return;
    memcpy(buf, line, len);
    buf[len] = '\n';
    if (write(dev->revoked_fd, buf, len + 1) != (ssize_t)(len + 1))
        log_warn("authority: a revocation not kept in the state file (%s): a restart would "
                 "learn it again from the members", strerror(errno));
}

int revocations_load(struct device *dev, int fd)
{
    char *text = malloc(REVOCATIONS_FILE_MAX + 1), *line, *save = NULL;
    ssize_t n;
    int taken = 0, skipped = 0;

    if (!text)
        return -ENOMEM;
    if ((n = pread(fd, text, REVOCATIONS_FILE_MAX, 0)) < 0) {
        n = -errno;
        free(text);
        return (int)n;
    }
    text[n] = '\0';
    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        enum certs_verdict v = certs_offer(dev->certs, line, (uint64_t)time(NULL), NULL);
        if (v == CERTS_REVOKING) {
            said_push(dev, line, strlen(line));
            taken++;
        } else if (v != CERTS_KNOWN) {
            skipped++;
        }
    }
    free(text);
    if (skipped)
        log_warn("authority: %d line%s of the state file not taken (not a revocation of this "
                 "cluster's authority, or the store full)", skipped, skipped == 1 ? "" : "s");
    dev->revoked_fd = fd;
    return taken;
}

size_t revocations_of_file(struct device *dev, const struct cluster *file)
{
    size_t fresh = 0;

    for (size_t i = 0; dev->certs && i < file->n_revoked; i++)
        fresh += certs_revoke_key(dev->certs, file->revoked[i]) == CERTS_REVOKING;
    if (fresh)
        log_notice("authority: %zu key%s revoked by the cluster file", fresh,
                   fresh == 1 ? "" : "s");
    return fresh;
}

void revocations_free(struct device *dev)
{
    free(dev->revocations_said);
    dev->revocations_said = NULL;
    if (dev->revoked_fd > 0)
        close(dev->revoked_fd);
    dev->revoked_fd = -1;
}
