/* SPDX-License-Identifier: MIT */
/* Parsing and formatting of the cluster file's text forms: numbers,
 * addresses, networks, names, hostnames and endpoints. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/addr.h"

#define IPV4_LEN 4u
#define IPV6_LEN 16u
#define BITS_PER_BYTE 8u
#define DNS_LABEL_MAX 63u

int cluster_uint_parse(const char *s, unsigned max, unsigned *out)
{
    uint64_t v = 0;     /* v <= max before each step, so this never wraps */

    if (*s == '\0')
        return -EINVAL;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -EINVAL;
        v = v * 10 + (uint64_t)(*s - '0');
        if (v > max) {
            /* keep scanning so that "99999x" is reported as not a number */
            for (s++; *s; s++)
                if (*s < '0' || *s > '9')
                    return -EINVAL;
            return -ERANGE;
        }
    }
    *out = (unsigned)v;
    return 0;
}

static size_t addr_len(int family)
{
    return family == AF_INET ? IPV4_LEN : family == AF_INET6 ? IPV6_LEN : 0;
}

int cluster_addr_parse(const char *s, struct cluster_addr *out)
{
    memset(out, 0, sizeof(*out));
    if (inet_pton(AF_INET, s, out->bytes) == 1) {
        out->family = AF_INET;
        return 0;
    }
    if (inet_pton(AF_INET6, s, out->bytes) == 1) {
        out->family = AF_INET6;
        return 0;
    }
    memset(out, 0, sizeof(*out));
    return -EINVAL;
}

int cluster_prefix_parse(const char *s, struct cluster_addr *out,
                         unsigned *prefix, const char **why)
{
    char buf[INET6_ADDRSTRLEN];
    const char *slash = strchr(s, '/');
    const char *reason;

    if (!slash) {
        reason = "missing /prefix (e.g. 10.77.0.0/16 or fd77::/64)";
        goto fail;
    }
    if ((size_t)(slash - s) >= sizeof(buf)) {
        reason = "not an ipv4 or ipv6 address before '/'";
        goto fail;
    }
    memcpy(buf, s, (size_t)(slash - s));
    buf[slash - s] = '\0';
    if (cluster_addr_parse(buf, out) < 0) {
        reason = "not an ipv4 or ipv6 address before '/'";
        goto fail;
    }
    unsigned max = out->family == AF_INET ? CLUSTER_PREFIX_MAX_IPV4
                                          : CLUSTER_PREFIX_MAX_IPV6;
    if (cluster_uint_parse(slash + 1, max, prefix) < 0 || *prefix == 0) {
        reason = out->family == AF_INET ? "prefix must be 1..30 for ipv4"
                                        : "prefix must be 1..127 for ipv6";
        goto fail;
    }
    return 0;
fail:
    memset(out, 0, sizeof(*out));
    *prefix = 0;
    if (why)
        *why = reason;
    return -EINVAL;
}

void cluster_addr_mask(struct cluster_addr *a, unsigned prefix)
{
    size_t len = addr_len(a->family);

    for (size_t i = 0; i < len; i++) {
        unsigned first = (unsigned)i * BITS_PER_BYTE;
        if (prefix >= first + BITS_PER_BYTE)
            continue;
        unsigned keep = prefix > first ? prefix - first : 0;
        a->bytes[i] &= (uint8_t)(0xffu << (BITS_PER_BYTE - keep));
    }
}

bool cluster_addr_equal(const struct cluster_addr *a,
                        const struct cluster_addr *b)
{
    return a->family == b->family &&
           memcmp(a->bytes, b->bytes, addr_len(a->family)) == 0;
}

bool cluster_addr_in_network(const struct cluster_addr *a,
                             const struct cluster_addr *net, unsigned prefix)
{
    struct cluster_addr m = *a;

    if (a->family != net->family || addr_len(a->family) == 0)
        return false;
    cluster_addr_mask(&m, prefix);
    struct cluster_addr n = *net;
    cluster_addr_mask(&n, prefix);
    return cluster_addr_equal(&m, &n);
}

bool cluster_addr_is_loopback(const struct cluster_addr *a)
{
    static const uint8_t v6_loopback[16] = { [15] = 1 };
    static const uint8_t v4_mapped[12] = { [10] = 0xff, [11] = 0xff };

    if (a->family == AF_INET)
        return a->bytes[0] == 127;
    if (a->family != AF_INET6)
        return false;
    return !memcmp(a->bytes, v6_loopback, sizeof(v6_loopback)) ||
           (!memcmp(a->bytes, v4_mapped, sizeof(v4_mapped)) && a->bytes[12] == 127);
}

bool cluster_addr_is_broadcast(const struct cluster_addr *a, unsigned prefix)
{
    struct cluster_addr host = *a;

    if (a->family != AF_INET)
        return false;
    /* the host part is what the mask removes; invert so ones become zeros */
    for (size_t i = 0; i < IPV4_LEN; i++)
        host.bytes[i] = (uint8_t)~host.bytes[i];
    struct cluster_addr masked = host;
    cluster_addr_mask(&masked, prefix);
    return cluster_addr_equal(&host, &masked);
}

static bool is_alnum(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
           (c >= '0' && c <= '9');
}

bool cluster_name_valid(const char *s)
{
    size_t len = strlen(s);

    if (len == 0 || len > CLUSTER_NAME_MAX)
        return false;
    if (!is_alnum(s[0]) || !is_alnum(s[len - 1]))
        return false;
    for (size_t i = 0; i < len; i++) {
        if (is_alnum(s[i]) || s[i] == '-')
            continue;
        if (s[i] == '.' && s[i + 1] != '.')
            continue;
        return false;
    }
    return true;
}

/* One label of len characters at s. */
static bool label_valid(const char *s, size_t len)
{
    if (len == 0 || len > DNS_LABEL_MAX || s[0] == '-' || s[len - 1] == '-')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!is_alnum(s[i]) && s[i] != '-')
            return false;
    return true;
}

static bool all_digits(const char *s, size_t len)
{
    for (size_t i = 0; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

bool cluster_hostname_valid(const char *s)
{
    size_t len = strlen(s);

    if (len > 0 && s[len - 1] == '.')
        len--;                                  /* fully qualified form */
    if (len == 0 || len > CLUSTER_HOST_MAX)
        return false;
    const char *label = s, *end = s + len;
    size_t label_len = 0;
    while (label < end) {
        const char *dot = memchr(label, '.', (size_t)(end - label));
        label_len = dot ? (size_t)(dot - label) : (size_t)(end - label);
        if (!label_valid(label, label_len))
            return false;
        if (!dot)
            break;
        label = dot + 1;
        if (label == end)
            return false;                       /* "a..": empty label */
    }
    /* an all-numeric last label would be read as a bad IPv4 address */
    return !all_digits(label, label_len);
}

static int endpoint_port(const char *s, struct cluster_endpoint *out,
                         const char **why)
{
    unsigned port;

    if (*s == '\0') {
        *why = "missing port number after ':'";
        return -EINVAL;
    }
    if (cluster_uint_parse(s, CLUSTER_PORT_MAX, &port) < 0 || port == 0) {
        *why = "port must be 1..65535";
        return -EINVAL;
    }
    out->port = (uint16_t)port;
    return 0;
}

static int endpoint_bracketed(const char *s, struct cluster_endpoint *out,
                              const char **why)
{
    const char *close = strchr(s, ']');
    size_t hlen;

    if (!close) {
        *why = "missing ']' after the ipv6 address";
        return -EINVAL;
    }
    hlen = (size_t)(close - s - 1);
    if (hlen >= sizeof(out->host)) {
        *why = "not an ipv6 address inside [ ]";
        return -EINVAL;
    }
    memcpy(out->host, s + 1, hlen);
    out->host[hlen] = '\0';
    if (cluster_addr_parse(out->host, &out->addr) < 0 ||
        out->addr.family != AF_INET6) {
        *why = "not an ipv6 address inside [ ]";
        return -EINVAL;
    }
    out->literal = true;
    if (close[1] != ':') {
        *why = close[1] ? "expected ':' after ']'"
                        : "missing port (expected [ipv6]:port)";
        return -EINVAL;
    }
    return endpoint_port(close + 2, out, why);
}

static int endpoint_plain(const char *s, struct cluster_endpoint *out,
                          const char **why)
{
    const char *colon = strrchr(s, ':');
    size_t hlen;

    if (!colon) {
        *why = "missing port (expected host:port)";
        return -EINVAL;
    }
    hlen = (size_t)(colon - s);
    if (memchr(s, ':', hlen)) {
        *why = "ipv6 addresses need brackets, e.g. [fd00::1]:51820";
        return -EINVAL;
    }
    if (hlen == 0) {
        *why = "missing host before ':'";
        return -EINVAL;
    }
    if (hlen >= sizeof(out->host)) {
        *why = "hostname longer than 253 characters";
        return -EINVAL;
    }
    memcpy(out->host, s, hlen);
    out->host[hlen] = '\0';
    if (cluster_addr_parse(out->host, &out->addr) == 0) {
        out->literal = true;
    } else if (!cluster_hostname_valid(out->host)) {
        *why = "not an ipv4 address or a valid hostname";
        return -EINVAL;
    }
    return endpoint_port(colon + 1, out, why);
}

int cluster_endpoint_parse(const char *s, struct cluster_endpoint *out,
                           const char **why)
{
    const char *reason = NULL;
    int r;

    memset(out, 0, sizeof(*out));
    r = s[0] == '[' ? endpoint_bracketed(s, out, &reason)
                    : endpoint_plain(s, out, &reason);
    if (r < 0) {
        memset(out, 0, sizeof(*out));
        if (why)
            *why = reason;
    }
    return r;
}

int cluster_addr_format(const struct cluster_addr *a, char *buf, size_t len)
{
    char tmp[INET6_ADDRSTRLEN];

    if (addr_len(a->family) == 0)
        return -EAFNOSUPPORT;
    if (!inet_ntop(a->family, a->bytes, tmp, sizeof(tmp)))
        return -errno;
    if (strlen(tmp) >= len)
        return -ENOSPC;
    memcpy(buf, tmp, strlen(tmp) + 1);
    return 0;
}

int cluster_endpoint_format(const struct cluster_endpoint *e, char *buf,
                            size_t len)
{
    char lit[INET6_ADDRSTRLEN];
    int n;

    if (!e->literal) {
        n = snprintf(buf, len, "%s:%u", e->host, (unsigned)e->port);
    } else {
        int r = cluster_addr_format(&e->addr, lit, sizeof(lit));
        if (r < 0)
            return r;
        n = e->addr.family == AF_INET6
                ? snprintf(buf, len, "[%s]:%u", lit, (unsigned)e->port)
                : snprintf(buf, len, "%s:%u", lit, (unsigned)e->port);
    }
    if (n < 0)
        return -EINVAL;
    return (size_t)n >= len ? -ENOSPC : 0;
}
