/* SPDX-License-Identifier: MIT */
/* Certificates renewed while nodes run (renewal.h). */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "config/cert.h"
#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/renewal.h"
#include "overlay/membership/state.h"
#include "overlay/registry/registry.h"

static const uint64_t points[RENEWAL_N_POINTS] = RENEWAL_POINTS;

/* A point counts in the last third of a life: `authority renew` renews
 * at a third left by default, so one before that would cry wolf. */
static bool applies(uint64_t point, uint64_t life)
{
    return point < life / 3;
}

uint64_t renewal_point(uint64_t life, uint64_t left_before, uint64_t left_now)
{
    uint64_t crossed = 0;

    for (size_t i = 0; i < RENEWAL_N_POINTS; i++)
        if (applies(points[i], life) && left_now <= points[i] && points[i] < left_before)
            crossed = points[i];          /* the points go down: the last is the smallest */
    return crossed;
}

uint64_t renewal_next(uint64_t life, uint64_t left)
{
    for (size_t i = 0; i < RENEWAL_N_POINTS; i++)
        if (applies(points[i], life) && points[i] < left)
            return left - points[i];
    return left;
}

int renewal_open(const char *state_dir, const char *ifname)
{
    char path[4096];
    int fd;

    if (snprintf(path, sizeof(path), "%s/%s%s", state_dir, ifname, RENEWAL_FILE_SUFFIX) >=
        (int)sizeof(path))
        return -ENAMETOOLONG;
    if ((fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600)) < 0)
        return -errno;
    return fd;
}

static void utc_text(char *buf, size_t len, uint64_t t)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (!gmtime_r(&tt, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
        snprintf(buf, len, "%llu", (unsigned long long)t);
}

/* The line rewritten in place and synced: a crash between the write and
 * the truncation leaves the new line first, which is all `up` reads. */
static int keep(int fd, const char *line)
{
    size_t len = strlen(line);
    char buf[CERT_TEXT_MAX + 2];
    ssize_t w;

    if (fd < 0)
        return -EBADF;
    memcpy(buf, line, len);
    buf[len++] = '\n';
    if ((w = pwrite(fd, buf, len, 0)) != (ssize_t)len)
        return w < 0 ? -errno : -EIO;
    if (ftruncate(fd, (off_t)len) || fdatasync(fd))
        return -errno;
    return 0;
}

/* Our own key's certificate in the store, when it renews the one we say:
 * it becomes the one said on every session, and is kept. */
static void take_own(struct device *dev)
{
    const struct cert *c;
    char text[CERT_TEXT_MAX + 1], until[32], was[32];
    struct cert old;
    char *dup;
    int ret;

    if (!dev->self_cert || !dev->self ||
        !(c = certs_member(dev->membership->certs, dev->self->public_key)) ||
        cert_parse(dev->self_cert, &old) || !cert_renews(c, &old) ||
        cert_format(c, text, sizeof(text)) || !(dup = strdup(text)))
        return;
    free(dev->self_cert);
    dev->self_cert = dup;
    if (dev->membership->registry)
        registry_cert_renewed(dev->membership->registry, dup);
    utc_text(until, sizeof(until), cert_end(c));
    utc_text(was, sizeof(was), cert_end(&old));
    if ((ret = keep(dev->membership->cert_fd, text)) < 0)
        log_error("authority: this node's certificate renewed (it counts until %s, was %s), "
                  "but not kept in the state directory: %s; a restart before %s needs the "
                  "renewed certificate in the --cert file", until, was, strerror(-ret), was);
    else
        log_notice("authority: this node's certificate renewed: it counts until %s (was %s); "
                   "kept in the state directory", until, was);
}

/* A peer whose certificate ends by now: logged, and remembered for
 * `status` (the newest MEMBERSHIP_ENDED_MAX). */
static void note_ended(struct device *dev, const struct cert *c)
{
    struct membership *m = dev->membership;
    char at[32];

    utc_text(at, sizeof(at), cert_end(c));
    log_warn("authority: %s removed: its certificate ended at %s with no renewal; to bring it "
             "back: %s", c->name, at, RENEWAL_WHAT_TO_DO);
    if (m->n_ended == MEMBERSHIP_ENDED_MAX)
        memmove(m->ended, m->ended + 1, --m->n_ended * sizeof(m->ended[0]));
    snprintf(m->ended[m->n_ended].name, sizeof(m->ended[0].name), "%s", c->name);
    m->ended[m->n_ended++].at = cert_end(c);
}

uint64_t renewal_run(struct device *dev, uint64_t now)
{
    struct membership *m = dev->membership;
    uint64_t last = m->renewal_checked, next = UINT64_MAX;
    char left[32], at[32];

    if (!m->certs)
        return UINT64_MAX;
    if (!m->certs_dirty && m->renewal_checked && now < m->renewal_due)
        return m->renewal_due;            /* a walk only when due or changed */
    take_own(dev);
    m->renewal_checked = now;
    for (size_t i = 0; i < certs_count(m->certs); i++) {
        const struct cert *c = certs_at(m->certs, i);
        const uint64_t end = cert_end(c), signed_at = c->not_before + CERT_CLOCK_SKEW_S;
        /* Its life as signed: sign starts it CERT_CLOCK_SKEW_S early. */
        const uint64_t life = end > signed_at ? end - signed_at : 0;
        const bool ours = dev->self && !memcmp(c->subject, dev->self->public_key, CERT_PUBKEY_LEN);
        uint64_t before = last && last < end ? end - last : UINT64_MAX, p, due;

        /* It passed no point before it was signed: one taken with less
         * than a point left is no news at that point. */
        if (life && life < before)
            before = life;

        if (end <= now) {
            if (ours && (!last || last < end))
                log_error("authority: this node's certificate (%s) ended with no renewal: "
                          "the members dropped this node; %s", c->name, RENEWAL_WHAT_TO_DO);
            else if (!last || last < end)
                note_ended(dev, c);
            continue;
        }
        if ((p = renewal_point(life, before, end - now))) {
            clock_span_text(left, sizeof(left), end - now);
            utc_text(at, sizeof(at), end);
            if (ours)
                log_warn("authority: this node's certificate (%s) ends in %s, at %s, and no "
                         "renewal has come: the members drop this node then; %s", c->name,
                         left, at, RENEWAL_WHAT_TO_DO);
            else
                log_warn("authority: the certificate of %s ends in %s, at %s, and no renewal "
                         "has come: it is removed then; %s", c->name, left, at,
                         RENEWAL_WHAT_TO_DO);
        }
        due = now + renewal_next(life, end - now);
        if (due < next)
            next = due;
    }
    return m->renewal_due = next;
}
