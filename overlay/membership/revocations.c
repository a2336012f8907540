/* SPDX-License-Identifier: MIT */
/* Revocations that last: see revocations.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
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
    uint64_t full_said;                   /* the store's revoked_full last logged */
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

/* line (len bytes), a revocation the store took, among those held (no
 * bound of its own: the store's); the digest again unless digest is
 * false (revocations_load makes it once, at its end). */
static void held_add(struct device *dev, const char *line, size_t len, bool digest)
{
    struct revocations *r = dev->membership->revocations;
    struct cert c;
    char *copy;

    if (!r && !(r = dev->membership->revocations = calloc(1, sizeof(*r))))
        return;
    if (len > CERT_TEXT_MAX)
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
    if (digest)
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
    /* The file's name synced too (it may be new): a revocation synced
     * into a file a crash unnames would be lost all the same. */
    if (fd >= 0 && fsync(dfd) < 0)
        log_warn("state directory %s not synced: %s", state_dir, strerror(errno));
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

/* line (len bytes) appended to the state file fd on a line of its own,
 * and synced: 0, or a negative errno (a short write that cannot go on
 * is -EIO). A tail that is no line's end (a short write, then a crash or
 * a full disk) gets one first, so that it spoils only itself, not line. */
static int keep_line(int fd, const char *line, size_t len)
{
    char buf[CERT_TEXT_MAX + 2], last;
    size_t at = 0;
    struct stat sb;

    if (len > CERT_TEXT_MAX)
        return -EINVAL;
    if (fstat(fd, &sb) < 0)
        return -errno;
    if (S_ISREG(sb.st_mode) && sb.st_size > 0) {
        ssize_t got = pread(fd, &last, 1, sb.st_size - 1);
        if (got < 0)
            return -errno;
        if (got == 1 && last != '\n')
            buf[at++] = '\n';
    }
    memcpy(buf + at, line, len);
    at += len;
    buf[at++] = '\n';
    for (size_t done = 0; done < at;) {
        ssize_t w = write(fd, buf + done, at - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        if (w == 0)
            return -EIO;
        done += (size_t)w;
    }
    /* Said taken only once it would survive a crash (issue 55). */
    if (fdatasync(fd) < 0)
        return -errno;
    return 0;
}

int revocations_taken(struct device *dev, const char *line, size_t len)
{
    int ret = 0;

    if (dev->membership->revoked_fd >= 0 &&
        (ret = keep_line(dev->membership->revoked_fd, line, len)) < 0)
        log_error("authority: a revocation taken but not kept in the state file (%s): a "
                  "restart would learn it again only from the members", strerror(-ret));
    /* Said and held all the same: the members keep it, and say it back. */
    said_push(dev, line, len);
    held_add(dev, line, len, true);
    return ret;
}

/* One line of the state file (len bytes, its '\n' left out) offered to
 * the store: 1 taken, 0 none (blank, or held already), -1 spoiled (too
 * long, a NUL in it, no valid revocation, or refused). */
static int load_line(struct device *dev, const char *text, size_t len)
{
    char line[CERT_TEXT_MAX + 1];
    enum certs_verdict v;

    while (len && (text[len - 1] == '\r' || text[len - 1] == ' '))
        len--;
    if (!len)
        return 0;
    if (len > CERT_TEXT_MAX || memchr(text, '\0', len))
        return -1;
    memcpy(line, text, len);
    line[len] = '\0';
    v = certs_offer_kept(dev->membership->certs, line, (uint64_t)time(NULL), NULL);
    if (v == CERTS_KNOWN)
        return 0;
    if (v != CERTS_REVOKING)
        return -1;
    said_push(dev, line, len);
    held_add(dev, line, len, false);
    return 1;
}

/* Read by length, a chunk at a time: a NUL byte, a torn line or a line
 * too long spoils that line alone (issue 55), each counted and logged. */
int revocations_load(struct device *dev, int fd)
{
    const size_t cap = 64u * 1024u;       /* a chunk: many lines, any line whole */
    char *buf = malloc(cap);
    size_t have = 0, total = 0;
    bool skipping = false;                /* inside a line longer than a chunk */
    int taken = 0, spoiled = 0;

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t n = pread(fd, buf + have, cap - have, (off_t)total);
        size_t start = 0;
        const char *nl;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            n = -errno;
            free(buf);
            return (int)n;
        }
        total += (size_t)n;
        have += (size_t)n;
        for (; (nl = memchr(buf + start, '\n', have - start)); start = (size_t)(nl - buf) + 1) {
            int r = skipping ? -1 : load_line(dev, buf + start, (size_t)(nl - buf) - start);
            skipping = false;
            taken += r > 0;
            spoiled += r < 0;
        }
        if (n == 0 && start < have) {     /* the last line, no '\n' after it: torn? */
            int r = skipping ? -1 : load_line(dev, buf + start, have - start);
            taken += r > 0;
            spoiled += r < 0;
        }
        if (n == 0)
            break;
        if (total >= REVOCATIONS_FILE_MAX) {
            log_error("authority: the state file is longer than %u bytes: the rest not read",
                      REVOCATIONS_FILE_MAX);
            break;
        }
        if (start == 0 && have == cap) {  /* no line ends in a whole chunk */
            skipping = true;
            have = 0;
            continue;
        }
        memmove(buf, buf + start, have - start);
        have -= start;
    }
    free(buf);
    digest_again(dev);
    if (spoiled)
        log_warn("authority: %d line%s of the state file not taken (damaged, not a "
                 "revocation of this cluster's authority, or refused by the store)", spoiled,
                 spoiled == 1 ? "" : "s");
    dev->membership->revoked_fd = fd;
    return taken;
}

size_t revocations_of_file(struct device *dev, const struct cluster *file)
{
    size_t fresh = 0, full = 0;

    for (size_t i = 0; dev->membership->certs && i < file->n_revoked; i++) {
        enum certs_verdict v = certs_revoke_key(dev->membership->certs, file->revoked[i]);
        fresh += v == CERTS_REVOKING;
        full += v == CERTS_FULL || v == CERTS_NO_MEMORY;
    }
    if (full)
        log_error("authority: %zu key%s of the cluster file's `revoked` not revoked: the store "
                  "holds its most revocations (%u) of keys it does not hold", full,
                  full == 1 ? "" : "s", CERTS_REVOKED_MAX);
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

/* A store full of revocations is loud (issue 55): whoever offered one
 * (a peer, the registry) may log it at a lower level, or not at all; this
 * says each new refusal as an error, once a look. */
static void full_said(struct device *dev, struct revocations *r)
{
    struct certs_stats st;

    certs_stats(dev->membership->certs, &st);
    if (st.revoked_full == r->full_said)
        return;
    log_error_rl("authority: %llu revocation%s refused so far: the store holds its most "
                 "revocations (%u) of what it does not hold; a node that meets what they "
                 "name takes it", (unsigned long long)st.revoked_full,
                 st.revoked_full == 1 ? "" : "s", CERTS_REVOKED_MAX);
    r->full_said = st.revoked_full;
}

uint64_t revocations_run(struct device *dev, uint64_t now)
{
    struct revocations *r = dev->membership->revocations;

    if (r && dev->membership->certs)
        full_said(dev, r);

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
    if (dev->membership->revoked_fd >= 0)
        close(dev->membership->revoked_fd);
    dev->membership->revoked_fd = -1;
}
