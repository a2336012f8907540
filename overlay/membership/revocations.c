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

#include <sodium.h>

#include "config/cert.h"
#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/engine/device_setup.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/revocations.h"
#include "overlay/membership/state.h"

/* Every signed revocation taken, in the order taken (bounded by the
 * store's CERTS_REVOKED_MAX), with the id each names; and when the next
 * round is due. */
struct revocations {
    size_t n, cap;
    char **lines;
    uint8_t (*ids)[CERT_ID_LEN];
    uint64_t next_due;
};

static int by_id(const void *a, const void *b)
{
    return memcmp(a, b, CERT_ID_LEN);
}

/* dev->revoked_digest of what is held. */
static void digest_again(struct device *dev)
{
    struct revocations *r = dev->membership->revocations;
    size_t n = r ? r->n : 0;
    uint8_t (*ids)[CERT_ID_LEN] = n ? malloc(n * CERT_ID_LEN) : NULL;
    crypto_generichash_state st;

    if (n && !ids)
        return;                           /* the old digest: a round more, at worst */
    if (n) {
        memcpy(ids, r->ids, n * CERT_ID_LEN);
        qsort(ids, n, CERT_ID_LEN, by_id);
    }
    crypto_generichash_init(&st, NULL, 0, DISCO_REVOKED_LEN);
    for (size_t i = 0; i < n; i++)
        crypto_generichash_update(&st, ids[i], CERT_ID_LEN);
    crypto_generichash_final(&st, dev->revoked_digest.digest, DISCO_REVOKED_LEN);
    dev->revoked_digest.count = (uint16_t)(n > UINT16_MAX ? UINT16_MAX : n);
    free(ids);
}

static void held_add(struct device *dev, const char *line, size_t len)
{
    struct revocations *r = dev->membership->revocations;
    struct cert c;
    char *copy;

    if (!r && !(r = dev->membership->revocations = calloc(1, sizeof(*r))))
        return;
    if (r->n == CERTS_REVOKED_MAX || len > CERT_TEXT_MAX)
        return;
    if (r->n == r->cap) {
        size_t cap = r->cap ? 2 * r->cap : 16;
        char **lines = realloc(r->lines, cap * sizeof(*lines));
        if (!lines)
            return;
        r->lines = lines;
        uint8_t (*ids)[CERT_ID_LEN] = realloc(r->ids, cap * sizeof(*ids));
        if (!ids)
            return;
        r->ids = ids;
        r->cap = cap;
    }
    if (!(copy = strndup(line, len)))
        return;
    if (cert_parse(copy, &c) || c.kind != CERT_REVOCATION) {
        free(copy);
        return;
    }
    r->lines[r->n] = copy;
    memcpy(r->ids[r->n++], c.subject, CERT_ID_LEN);
    digest_again(dev);
}

/* The state directory, opened (dfd) at start-up: whoever else may write
 * it may put there, in place of the file, whatever revocations they like,
 * or none (a revoked node let back). Its owner must be root or this
 * process's user, and neither its group nor others may write it; 0, or
 * -EPERM, said in the log. */
static int state_dir_safe(int dfd, const char *state_dir)
{
    struct stat st;

    if (fstat(dfd, &st) != 0)
        return -errno;
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        log_error("state directory %s: owned by uid %u, neither root nor this user (uid %u):"
                  " chown root it, or pick another with --state-dir",
                  state_dir, (unsigned)st.st_uid, (unsigned)geteuid());
        return -EPERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        log_error("state directory %s: mode %04o lets its group or others write it:"
                  " chmod go-w it, or pick another with --state-dir",
                  state_dir, (unsigned)(st.st_mode & 07777));
        return -EPERM;
    }
    return 0;
}

int revocations_open(const char *state_dir, const char *ifname)
{
    char name[256];
    int dfd, fd;

    if (mkdir(state_dir, 0700) != 0 && errno != EEXIST)
        return -errno;
    if (snprintf(name, sizeof(name), "%s.revoked", ifname) >= (int)sizeof(name))
        return -ENAMETOOLONG;
    if ((dfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -errno;
    fd = state_dir_safe(dfd, state_dir);
    if (!fd && (fd = openat(dfd, name, O_RDWR | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW,
                            REVOCATIONS_FILE_MODE)) < 0)
        fd = -errno;
    close(dfd);
    return fd;
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
    held_add(dev, line, len);
    if (dev->membership->revoked_fd <= 0)
        return;
    char buf[CERT_TEXT_MAX + 2];
    if (len > CERT_TEXT_MAX)
        return;
    memcpy(buf, line, len);
    buf[len] = '\n';
    if (write(dev->membership->revoked_fd, buf, len + 1) != (ssize_t)(len + 1))
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
        enum certs_verdict v = certs_offer(dev->membership->certs, line, (uint64_t)time(NULL), NULL);
        if (v == CERTS_REVOKING) {
            said_push(dev, line, strlen(line));
            held_add(dev, line, strlen(line));
            taken++;
        } else if (v != CERTS_KNOWN) {
            skipped++;
        }
    }
    free(text);
    if (skipped)
        log_warn("authority: %d line%s of the state file not taken (not a revocation of this "
                 "cluster's authority, or the store full)", skipped, skipped == 1 ? "" : "s");
    dev->membership->revoked_fd = fd;
    return taken;
}

size_t revocations_of_file(struct device *dev, const struct cluster *file)
{
    size_t fresh = 0;

    for (size_t i = 0; dev->membership->certs && i < file->n_revoked; i++)
        fresh += certs_revoke_key(dev->membership->certs, file->revoked[i]) == CERTS_REVOKING;
    if (fresh)
        log_notice("authority: %zu key%s revoked by the cluster file", fresh,
                   fresh == 1 ? "" : "s");
    return fresh;
}

void revocations_start(struct device *dev)
{
    digest_again(dev);
    dev->revoked_digest_on = true;
    dev->revoked_said = revocations_digest_said;
}

/* How many a round says: all but the latest, said on every session. */
static size_t round_len(const struct device *dev)
{
    const struct revocations *r = dev->membership->revocations;
    size_t n = r ? r->n : 0;

    return n > REVOCATIONS_SAID_MAX ? n - REVOCATIONS_SAID_MAX : 0;
}

/* Says p what is due of its round; schedules the rest. */
static void round_step(struct peer *p, uint64_t now)
{
    struct device *dev = p->dev;
    struct revocations *r = dev->membership->revocations;
    const uint64_t step = NS_PER_S / REVOCATIONS_ROUND_PER_SEC;
    size_t said = 0, burst = p->member.revoked_due_ns == p->member.revoked_round_ns
                             ? REVOCATIONS_ROUND_BURST : 1;

    while (p->member.revoked_next && p->member.revoked_due_ns <= now && said < burst) {
        size_t i = p->member.revoked_next - 1u;
        if (i >= round_len(dev)) {
            p->member.revoked_next = 0;
            break;
        }
        discovery_send_cert(p, r->lines[i], strlen(r->lines[i]), now);
        p->member.revoked_next++;
        said++;
    }
    if (!p->member.revoked_next)
        return;
    if (p->member.revoked_next - 1u >= round_len(dev)) {
        p->member.revoked_next = 0;
        return;
    }
    p->member.revoked_due_ns = now + step;
    if (p->member.revoked_due_ns < r->next_due)
        r->next_due = p->member.revoked_due_ns;
}

static void round_begin(struct peer *p, uint64_t now)
{
    if (p->member.revoked_next || !round_len(p->dev))
        return;
    if (p->member.revoked_round_ns && now - p->member.revoked_round_ns < REVOCATIONS_ROUND_EVERY_NS)
        return;
    p->member.revoked_next = 1;
    p->member.revoked_round_ns = p->member.revoked_due_ns = now ? now : 1;
    log_debug_rl("peer %s: our revocations said to it (%zu)", p->member.name, round_len(p->dev));
    round_step(p, now ? now : 1);
}

void revocations_round(struct peer *p, uint64_t now)
{
    round_begin(p, now);
}

void revocations_digest_said(struct peer *p, const struct disco_revoked *d, uint64_t now)
{
    const struct device *dev = p->dev;

    if (p->member.probation || !dev->revoked_digest_on)
        return;
    if (d->count == dev->revoked_digest.count &&
        !memcmp(d->digest, dev->revoked_digest.digest, DISCO_REVOKED_LEN))
        return;
    round_begin(p, now);
}

uint64_t revocations_run(struct device *dev, uint64_t now)
{
    struct revocations *r = dev->membership->revocations;

    if (!r || now < r->next_due)
        return r ? r->next_due : UINT64_MAX;
    r->next_due = UINT64_MAX;
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (!p->member.revoked_next)
            continue;
        if (p->member.revoked_due_ns <= now)
            round_step(p, now);
        else if (p->member.revoked_due_ns < r->next_due)
            r->next_due = p->member.revoked_due_ns;
    }
    return r->next_due;
}

void revocations_free(struct device *dev)
{
    struct revocations *r = dev->membership->revocations;

    if (r) {
        for (size_t i = 0; i < r->n; i++)
            free(r->lines[i]);
        free(r->lines);
        free(r->ids);
        free(r);
        dev->membership->revocations = NULL;
    }
    dev->revoked_digest_on = false;
    dev->revoked_said = NULL;
    free(dev->revocations_said);
    dev->revocations_said = NULL;
    if (dev->membership->revoked_fd > 0)
        close(dev->membership->revoked_fd);
    dev->membership->revoked_fd = -1;
}
