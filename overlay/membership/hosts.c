/* SPDX-License-Identifier: MIT */
/* The ddpnet block of a hosts file: finding it among other lines, building
 * its new text, and rewriting the file in place under a lock (hosts.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "overlay/membership/hosts.h"

/* Where ifname's block lies in the old content: [start, end). */
struct block_span {
    size_t start, end;
    bool found;
};

static bool ifname_valid(const char *ifname)
{
    size_t len;

    if (!ifname)
        return false;
    len = strnlen(ifname, IFNAMSIZ);
    if (len == 0 || len >= IFNAMSIZ)
        return false;
    /* The name sits between fixed words in a marker line, so it must not
     * contain what ends it or what a hosts file treats as a comment. */
    for (size_t i = 0; i < len; i++) {
        unsigned char c = (unsigned char)ifname[i];
        if (c <= ' ' || c >= 0x7f || c == '/' || c == ':' || c == '#')
            return false;
    }
    return true;
}

static bool name_char_ok(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9') || c == '-' || c == '.' || c == '_';
}

static bool entry_valid(const struct hosts_entry *e)
{
    unsigned char buf[sizeof(struct in6_addr)];
    size_t nlen;

    if (!memchr(e->address, '\0', sizeof(e->address)))
        return false;
    if (inet_pton(AF_INET, e->address, buf) != 1 &&
        inet_pton(AF_INET6, e->address, buf) != 1)
        return false;
    if (!memchr(e->name, '\0', sizeof(e->name)))
        return false;
    nlen = strlen(e->name);
    if (nlen == 0 || e->name[0] == '-' || e->name[0] == '.')
        return false;
    for (size_t i = 0; i < nlen; i++)
        if (!name_char_ok(e->name[i]))
            return false;
    return true;
}

/* Whether line[0..len) (newline excluded) is the marker prefix+ifname,
 * followed by the end of the line or a space. A trailing '\r' counts as
 * the end, for files edited on other systems. */
static bool is_marker(const char *line, size_t len, const char *prefix,
                      const char *ifname)
{
    size_t plen = strlen(prefix), ilen = strlen(ifname);

    if (len > 0 && line[len - 1] == '\r')
        len--;
    if (len < plen + ilen || memcmp(line, prefix, plen) != 0 ||
        memcmp(line + plen, ifname, ilen) != 0)
        return false;
    return len == plen + ilen || line[plen + ilen] == ' ';
}

/* Finds ifname's block. Anything but zero or one well-formed block is
 * -EBADMSG: we cannot know which lines a person meant to keep. */
static int block_find(const char *old, size_t oldlen, const char *ifname,
                      struct block_span *span)
{
    bool inside = false;
    size_t pos = 0;

    span->start = span->end = 0;
    span->found = false;
    while (pos < oldlen) {
        const char *nl = memchr(old + pos, '\n', oldlen - pos);
        size_t len = nl ? (size_t)(nl - (old + pos)) : oldlen - pos;
        size_t next = nl ? pos + len + 1 : oldlen;

        if (is_marker(old + pos, len, HOSTS_BEGIN_PREFIX, ifname)) {
            if (inside || span->found)
                return -EBADMSG;
            inside = true;
            span->start = pos;
        } else if (is_marker(old + pos, len, HOSTS_END_PREFIX, ifname)) {
            if (!inside)
                return -EBADMSG;
            inside = false;
            span->found = true;
            span->end = next;
        }
        pos = next;
    }
    return inside ? -EBADMSG : 0;
}

static size_t block_len(const char *ifname, const struct hosts_entry *e, size_t n)
{
    size_t ilen = strlen(ifname);
    size_t len = strlen(HOSTS_BEGIN_PREFIX) + ilen + strlen(HOSTS_BEGIN_SUFFIX) + 1 +
                 strlen(HOSTS_END_PREFIX) + ilen + 1;

    for (size_t i = 0; i < n; i++)
        len += strlen(e[i].address) + 1 + strlen(e[i].name) + 1;
    return len;
}

static char *put(char *p, const char *s, size_t len)
{
    memcpy(p, s, len);
    return p + len;
}

static char *put_str(char *p, const char *s)
{
    return put(p, s, strlen(s));
}

static char *block_write(char *p, const char *ifname, const struct hosts_entry *e, size_t n)
{
    p = put_str(p, HOSTS_BEGIN_PREFIX);
    p = put_str(p, ifname);
    p = put_str(p, HOSTS_BEGIN_SUFFIX "\n");
    /* Entries of one address in a row share its line: the first name is
     * the address's canonical name (what AI_CANONNAME gives). */
    for (size_t i = 0; i < n; i++) {
        if (i == 0 || strcmp(e[i].address, e[i - 1].address)) {
            p = put_str(p, e[i].address);
        }
        p = put(p, " ", 1);
        p = put_str(p, e[i].name);
        if (i + 1 == n || strcmp(e[i].address, e[i + 1].address))
            p = put(p, "\n", 1);
    }
    p = put_str(p, HOSTS_END_PREFIX);
    p = put_str(p, ifname);
    return put(p, "\n", 1);
}

static int args_check(const char *old, size_t oldlen, const char *ifname,
                      const struct hosts_entry *e, size_t n, char **out, size_t *outlen)
{
    if ((!old && oldlen) || !out || !outlen || !ifname_valid(ifname))
        return -EINVAL;
    if (!e)
        return 0;
    if (n > HOSTS_MAX_ENTRIES)
        return -E2BIG;
    for (size_t i = 0; i < n; i++)
        if (!entry_valid(&e[i]))
            return -EINVAL;
    return 0;
}

/* --- names the file gives outside our block ------------------------------------- */

/* A word of a line: old[at..at+len). */
struct word {
    const char *at;
    size_t len;
};

struct words {
    struct word *w;
    size_t n, cap;
};

static int words_push(struct words *ws, const char *at, size_t len)
{
    if (ws->n == ws->cap) {
        size_t cap = ws->cap ? 2 * ws->cap : 64;
        struct word *w = realloc(ws->w, cap * sizeof(*w));
        if (!w)
            return -ENOMEM;
        ws->w = w;
        ws->cap = cap;
    }
    ws->w[ws->n++] = (struct word){ at, len };
    return 0;
}

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r';
}

/* The names of one line (the words after its address, up to a '#'). */
static int line_names(struct words *ws, const char *line, size_t len)
{
    const char *hash = memchr(line, '#', len);
    size_t i = 0, k = 0;

    if (hash)
        len = (size_t)(hash - line);
    while (i < len) {
        size_t start;
        while (i < len && is_blank(line[i]))
            i++;
        start = i;
        while (i < len && !is_blank(line[i]))
            i++;
        if (i > start && k++ > 0 && words_push(ws, line + start, i - start))
            return -ENOMEM;
    }
    return 0;
}

static int by_word(const void *a, const void *b)
{
    const struct word *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = strncasecmp(x->at, y->at, n);

    return c ? c : (x->len > y->len) - (x->len < y->len);
}

/* Every name old[0..oldlen) gives outside [skip_from, skip_to), sorted. */
static int outside_names(const char *old, size_t oldlen, size_t skip_from, size_t skip_to,
                         struct words *ws)
{
    size_t pos = 0;

    while (pos < oldlen) {
        const char *nl = memchr(old + pos, '\n', oldlen - pos);
        size_t len = nl ? (size_t)(nl - (old + pos)) : oldlen - pos;
        if ((pos < skip_from || pos >= skip_to) && line_names(ws, old + pos, len))
            return -ENOMEM;
        pos += len + 1;
    }
    if (ws->n)
        qsort(ws->w, ws->n, sizeof(*ws->w), by_word);
    return 0;
}

static bool outside_has(const struct words *ws, const char *name)
{
    struct word key = { name, strlen(name) };

    return ws->n && bsearch(&key, ws->w, ws->n, sizeof(*ws->w), by_word);
}

/* e[0..n) less the claimed entries whose names the file gives outside
 * the block: *kept (malloc'd, or e itself when nothing is claimed). */
static int drop_taken(const char *old, size_t oldlen, const struct block_span *span,
                      const struct hosts_entry *e, size_t n,
                      const struct hosts_entry **kept, size_t *n_kept, struct hosts_entry **buf)
{
    struct words ws = { 0 };
    bool any = false;
    int ret;

    *kept = e;
    *n_kept = n;
    *buf = NULL;
    for (size_t i = 0; i < n; i++)
        any |= e[i].claimed;
    if (!any)
        return 0;
    ret = outside_names(old, oldlen, span->found ? span->start : 0,
                        span->found ? span->end : 0, &ws);
    if (ret == 0 && !(*buf = malloc(n * sizeof(**buf))))
        ret = -ENOMEM;
    if (ret == 0) {
        *n_kept = 0;
        for (size_t i = 0; i < n; i++)
            if (!e[i].claimed || !outside_has(&ws, e[i].name))
                (*buf)[(*n_kept)++] = e[i];
        *kept = *buf;
    }
    free(ws.w);
    return ret;
}

int hosts_edit(const char *old, size_t oldlen, const char *ifname,
               const struct hosts_entry *e, size_t n, char **out, size_t *outlen)
{
    struct hosts_entry *kept_buf;
    struct block_span span;
    size_t head, tail, blen = 0;
    char *buf, *p;
    int ret;

    ret = args_check(old, oldlen, ifname, e, n, out, outlen);
    if (ret < 0)
        return ret;
    ret = block_find(old, oldlen, ifname, &span);
    if (ret < 0)
        return ret;
    if (!e)
        n = 0;
    if ((ret = drop_taken(old, oldlen, &span, e, n, &e, &n, &kept_buf)))
        return ret;
    if (n)
        blen = block_len(ifname, e, n);
    /* Old content splits into the bytes before our block and those after.
     * A new block goes first: a machine's own line for its hostname
     * (127.0.1.1, as Debian and cloud-init write it) comes after it, so the
     * overlay address is the one its hostname resolves to first. */
    head = span.found ? span.start : 0;
    tail = span.found ? oldlen - span.end : oldlen;
    buf = malloc(head + blen + tail + 1);
    if (!buf) {
        free(kept_buf);
        return -ENOMEM;
    }
    p = put(buf, old ? old : "", head);
    if (n)
        p = block_write(p, ifname, e, n);
    p = put(p, old ? old + oldlen - tail : "", tail);
    *p = '\0';
    *out = buf;
    *outlen = (size_t)(p - buf);
    free(kept_buf);
    return 0;
}

/* Reads the whole file from offset 0. The size may change under us (other
 * editors do not take our lock), so read until EOF rather than trust fstat. */
static int read_all(int fd, size_t hint, char **out, size_t *outlen)
{
    size_t cap = hint + 1, len = 0;
    char *buf = malloc(cap);

    if (!buf)
        return -ENOMEM;
    for (;;) {
        ssize_t r;

        if (len == cap) {
            char *nbuf;

            if (cap > HOSTS_MAX_FILE) {
                free(buf);
                return -EFBIG;
            }
            nbuf = realloc(buf, cap * 2);
            if (!nbuf) {
                free(buf);
                return -ENOMEM;
            }
            buf = nbuf;
            cap *= 2;
        }
        r = pread(fd, buf + len, cap - len, (off_t)len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int err = -errno;
            free(buf);
            return err;
        }
        if (r == 0)
            break;
        len += (size_t)r;
    }
    if (len > HOSTS_MAX_FILE) {
        free(buf);
        return -EFBIG;
    }
    *out = buf;
    *outlen = len;
    return 0;
}

static int pwrite_all(int fd, const char *buf, size_t len, size_t at)
{
    size_t off = 0;

    while (off < len) {
        ssize_t w = pwrite(fd, buf + off, len - off, (off_t)(at + off));

        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -errno;
        off += (size_t)w;
    }
    return 0;
}

/* The new content written in place so that no moment between two of our
 * calls shows a torn file, only the old one or the new one, either
 * perhaps followed by empty lines: a file that grows is first lengthened
 * with empty lines (a read racing a write that extends the file can see
 * the new bytes cut at the old length); then the whole content, padded
 * with empty lines to the old length, in one pwrite over a file of that
 * length; then the cut, which drops empty lines only. A reader that reads
 * the file in pieces across a write can still get the first part of one
 * and the rest of the other: only a rename over the file rules that out,
 * which a bind-mounted file refuses and the daemon, without write access
 * to /etc after set-up, cannot do. buf holds len bytes and room for
 * oldlen. */
static int write_all(int fd, char *buf, size_t len, size_t oldlen)
{
    size_t total = len < oldlen ? oldlen : len;
    int ret = 0;

    memset(buf + len, '\n', total - len);
    if (len > oldlen) {
        char *blank = malloc(len - oldlen);
        if (!blank)
            return -ENOMEM;
        memset(blank, '\n', len - oldlen);
        ret = pwrite_all(fd, blank, len - oldlen, oldlen);
        free(blank);
    }
    if (ret == 0)
        ret = pwrite_all(fd, buf, total, 0);
    if (ret == 0 && total > len && ftruncate(fd, (off_t)len) < 0)
        ret = -errno;
    return ret;
}

/* Lock, read, edit and write back an open file. */
static int update_fd(int fd, const char *ifname, const struct hosts_entry *e, size_t n,
                     bool *wrote)
{
    char *old = NULL, *new = NULL;
    size_t oldlen = 0, newlen = 0;
    struct stat st;
    int ret;

    if (flock(fd, LOCK_EX) < 0 || fstat(fd, &st) < 0)
        return -errno;
    if (!S_ISREG(st.st_mode))
        return -EINVAL;
    if ((unsigned long long)st.st_size > HOSTS_MAX_FILE)
        return -EFBIG;
    ret = read_all(fd, (size_t)st.st_size, &old, &oldlen);
    if (ret < 0)
        return ret;
    ret = hosts_edit(old, oldlen, ifname, e, n, &new, &newlen);
    if (ret == 0 && (newlen != oldlen || memcmp(old, new, newlen) != 0)) {
        /* Room for the padding up to the old length. */
        char *room = newlen < oldlen ? realloc(new, oldlen + 1) : new;
        if (!room)
            ret = -ENOMEM;
        else
            ret = write_all(fd, new = room, newlen, oldlen);
        *wrote = ret == 0;
    }
    free(new);
    free(old);
    return ret;
}

int hosts_open(const char *path)
{
    int fd;

    if (!path)
        return -EINVAL;
    /* O_RDWR and no O_TRUNC: we write into this very inode, never a new one. */
    fd = open(path, O_RDWR | O_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int hosts_write_fd(int fd, const char *ifname, const struct hosts_entry *e, size_t n,
                   bool *wrote)
{
    int ret;

    *wrote = false;
    if (fd < 0)
        return -EBADF;
    ret = update_fd(fd, ifname, e, n, wrote);
    flock(fd, LOCK_UN);
    return ret;
}

int hosts_update_fd(int fd, const char *ifname, const struct hosts_entry *e, size_t n)
{
    bool wrote;

    return hosts_write_fd(fd, ifname, e, n, &wrote);
}

int hosts_update(const char *path, const char *ifname,
                 const struct hosts_entry *e, size_t n)
{
    int fd, ret;

    if (!path)
        return -EINVAL;
    /* O_RDWR and no O_TRUNC: we write into this very inode, never a new one. */
    fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd < 0)
        return -errno;
    bool wrote = false;
    ret = update_fd(fd, ifname, e, n, &wrote);
    /* Closing drops the flock. */
    close(fd);
    return ret;
}

int hosts_remove(const char *path, const char *ifname)
{
    return hosts_update(path, ifname, NULL, 0);
}
