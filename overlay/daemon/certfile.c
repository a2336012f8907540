/* SPDX-License-Identifier: MIT */
/* This node's certificate file (certfile.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sodium.h>

#include "config/addr.h"
#include "overlay/daemon/certfile.h"

#define KEY_SUFFIX  ".key"
#define CERT_SUFFIX ".cert"

int certfile_default_path(const char *key_path, char *buf, size_t len)
{
    size_t n = strlen(key_path), k = strlen(KEY_SUFFIX);
    int w;

    if (n > k && !strcmp(key_path + n - k, KEY_SUFFIX))
        n -= k;
    w = snprintf(buf, len, "%.*s%s", (int)n, key_path, CERT_SUFFIX);
    return w < 0 || (size_t)w >= len ? -ENAMETOOLONG : 0;
}

int certfile_read(const char *path, char *text, size_t cap, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), ret;
    ssize_t got;

    if (fd < 0) {
        ret = -errno;
        if (ret == -ENOENT)
            snprintf(err, errlen, "%s: no such file; `[cluster] authority` is set, so this node "
                     "needs its certificate there (or give --cert FILE): ask the authority's "
                     "holder to run `ddpnet authority sign --name NAME --public-key KEY`, or "
                     "sign one with a join token", path);
        else
            snprintf(err, errlen, "%s: %s", path, strerror(-ret));
        return ret;
    }
    got = read(fd, text, cap - 1);
    ret = got < 0 ? -errno : 0;
    close(fd);
    if (ret) {
        snprintf(err, errlen, "%s: %s", path, strerror(-ret));
        return ret;
    }
    if ((size_t)got == cap - 1) {
        snprintf(err, errlen, "%s: too long for a certificate (at most %u bytes)", path,
                 CERT_TEXT_MAX);
        return -EFBIG;
    }
    text[got] = '\0';
    return 0;
}

int certfile_check(const char *path, const char *text, const struct cluster *c,
                   const uint8_t pub[CLUSTER_KEY_LEN], const char *name,
                   const struct cluster_addr *address, uint64_t now, char *err, size_t errlen)
{
    char want[CLUSTER_HOST_MAX + 3], has[CLUSTER_HOST_MAX + 3];
    struct cert cert;
    enum cert_verdict v;

    if (cert_parse(text, &cert) || cert.kind != CERT_MEMBER)
        return snprintf(err, errlen, "%s: not a member certificate (`ddpnet authority sign` "
                        "prints one)", path), -EINVAL;
    if ((v = cert_verify_cluster(&cert, c, now)) != CERT_OK)
        return snprintf(err, errlen, "%s: the certificate does not hold: %s%s", path,
                        cert_verdict_str(v), v == CERT_BAD_SIGNATURE
                            ? " (not signed by the cluster file's authority)"
                        : v == CERT_EXPIRED ? " (ask for a new one)" : ""), -EINVAL;
    if (sodium_memcmp(cert.subject, pub, CLUSTER_KEY_LEN))
        return snprintf(err, errlen, "%s: the certificate is for another public key than this "
                        "node's key file", path), -EINVAL;
    if (strcasecmp(cert.name, name))
        return snprintf(err, errlen, "%s: the certificate is for the name %s, not %s%s", path,
                        cert.name, name, " (give --name with the certificate's name)"), -EINVAL;
    if (address && cert.has_address && !cluster_addr_equal(&cert.address, address)) {
        cluster_addr_format(&cert.address, want, sizeof(want));
        cluster_addr_format(address, has, sizeof(has));
        return snprintf(err, errlen, "%s: the certificate fixes the address %s, and this node "
                        "has %s", path, want, has), -EINVAL;
    }
    return 0;
}

int certfile_kept(const char *state_dir, const char *ifname, char *text, size_t cap)
{
    char path[4096], kept[CERT_TEXT_MAX + 2], err[8];
    struct cert k, c;

    if (snprintf(path, sizeof(path), "%s/%s.cert", state_dir, ifname) >= (int)sizeof(path) ||
        certfile_read(path, kept, sizeof(kept), err, sizeof(err)))
        return 0;
    kept[strcspn(kept, "\r\n")] = '\0';
    if (strlen(kept) >= cap || cert_parse(kept, &k) || cert_parse(text, &c) ||
        !cert_renews(&k, &c))
        return 0;
    memcpy(text, kept, strlen(kept) + 1);
    return 1;
}
