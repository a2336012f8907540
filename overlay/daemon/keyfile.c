/* SPDX-License-Identifier: MIT */
/* Private key files: refusing files others may use, reading at most a few
 * hundred bytes, and decoding exactly what `wg genkey` writes (wg pubkey
 * accepts the same text, so keys move freely between the two tools). */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sodium.h>

#include "overlay/daemon/keyfile.h"

/* Like ssh: any permission bit for group or others makes a key file too open. */
#define KEYFILE_FORBIDDEN_MODE  (S_IRWXG | S_IRWXO)
#define KEYFILE_MODE_BITS       07777u

static bool is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}

int keyfile_parse(const char *text, size_t len, uint8_t key[WG_KEY_LEN])
{
    size_t bin_len = 0;
    int ret = -EBADMSG;

    if (text == NULL || len < KEYFILE_B64_LEN)
        goto out;
    for (size_t i = KEYFILE_B64_LEN; i < len; i++)
        if (!is_blank(text[i]))
            goto out;
    /* libsodium decodes in constant time and refuses non-canonical text
     * (padding bits set), as wg does. */
    if (sodium_base642bin(key, WG_KEY_LEN, text, KEYFILE_B64_LEN, NULL, &bin_len,
                          NULL, sodium_base64_VARIANT_ORIGINAL) == 0 &&
        bin_len == WG_KEY_LEN)
        ret = 0;
out:
    if (ret != 0)
        sodium_memzero(key, WG_KEY_LEN);
    return ret;
}

void keyfile_format(char out[KEYFILE_B64_LEN + 1], const uint8_t key[WG_KEY_LEN])
{
    sodium_bin2base64(out, KEYFILE_B64_LEN + 1, key, WG_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
}

/* Reads until EOF into buf (cap bytes); *len gets the count. Returns 0,
 * -EFBIG when the buffer filled up (the text is longer than we accept), or
 * -errno. */
static int read_all(int fd, char *buf, size_t cap, size_t *len)
{
    ssize_t n;

    *len = 0;
    while (*len < cap) {
        n = read(fd, buf + *len, cap - *len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return 0;
        *len += (size_t)n;
    }
    return -EFBIG;
}

int keyfile_read_fd(int fd, uint8_t key[WG_KEY_LEN])
{
    /* One byte more than we accept, to tell a full buffer from a long text. */
    char buf[KEYFILE_TEXT_MAX + 1];
    size_t len = 0;
    int ret = read_all(fd, buf, sizeof(buf), &len);

    if (ret == -EFBIG)
        ret = -EBADMSG;
    if (ret == 0)
        ret = keyfile_parse(buf, len, key);
    else
        sodium_memzero(key, WG_KEY_LEN);
    sodium_memzero(buf, sizeof(buf));
    return ret;
}

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err == NULL || errlen == 0)
        return;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

/* The checks on the opened file, before a byte of it is read. */
static int check_file(int fd, const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (fstat(fd, &st) != 0) {
        int e = errno;
        set_err(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (!S_ISREG(st.st_mode)) {
        set_err(err, errlen, "%s: not a regular file", path);
        return -EINVAL;
    }
    /* Owned by root (or by whoever runs us with CAP_NET_ADMIN): another
     * user could change the key under us. */
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        set_err(err, errlen, "%s: owned by uid %u, not by root; run: chown root %s", path,
                (unsigned)st.st_uid, path);
        return -EPERM;
    }
    if (st.st_mode & KEYFILE_FORBIDDEN_MODE) {
        set_err(err, errlen, "%s: permissions %04o are too open; run: chmod 600 %s",
                path, (unsigned)st.st_mode & KEYFILE_MODE_BITS, path);
        return -EPERM;
    }
    return 0;
}

int keyfile_read(const char *path, uint8_t key[WG_KEY_LEN], char *err, size_t errlen)
{
    int fd, ret;

    sodium_memzero(key, WG_KEY_LEN);
    if (path == NULL) {
        set_err(err, errlen, "no key file given");
        return -EINVAL;
    }
    /* O_NONBLOCK: a FIFO or device must not stall us before the type check. */
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) {
        ret = -errno;
        if (ret == -ENOENT)
            set_err(err, errlen, "%s: no such file", path);
        else
            set_err(err, errlen, "%s: %s", path, strerror(-ret));
        return ret;
    }
    ret = check_file(fd, path, err, errlen);
    if (ret == 0) {
        ret = keyfile_read_fd(fd, key);
        if (ret == -EBADMSG)
            set_err(err, errlen, "%s: not a WireGuard private key (expected %u "
                    "base64 characters)", path, KEYFILE_B64_LEN);
        else if (ret != 0)
            set_err(err, errlen, "%s: %s", path, strerror(-ret));
    }
    close(fd);
    return ret;
}
