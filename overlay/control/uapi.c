/* SPDX-License-Identifier: MIT */
/* The userspace API's text: request framing, the `set` keys with their value
 * syntax and scope (interface or peer section), and the `get` response
 * writer (uapi.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "overlay/control/uapi.h"

#define KEY_HEX_LEN     (2u * WG_KEY_LEN)
#define IP4_BITS        (8u * sizeof(struct in_addr))
#define IP6_BITS        (8u * sizeof(struct in6_addr))
/* Longest decimal text of a uint64_t. */
#define DEC_MAX_LEN     20u
/* "[" address "%" zone "]:" port, generously. */
#define ENDPOINT_MAX_LEN (INET6_ADDRSTRLEN + IFNAMSIZ + 16u)

/* --- framing ---------------------------------------------------------------- */

/* Whether buf[0..len) (len < UAPI_OP_LINE_LEN) can still become an op line. */
static bool op_prefix(const char *buf, size_t len)
{
    return memcmp(buf, UAPI_GET_LINE, len) == 0 || memcmp(buf, UAPI_SET_LINE, len) == 0;
}

/* A get is its op line and one empty line, nothing between. */
static int frame_get(const char *buf, size_t len, size_t *consumed)
{
    if (len == UAPI_OP_LINE_LEN)
        return -EAGAIN;
    if (buf[UAPI_OP_LINE_LEN] != '\n')
        return -EINVAL;
    *consumed = UAPI_OP_LINE_LEN + 1;
    return 0;
}

/* A set ends at its first empty line: the op line's newline may be the first
 * of the two, for a set with no keys. */
static int frame_set(const char *buf, size_t len, size_t *consumed)
{
    size_t window = len < UAPI_MAX_REQUEST ? len : UAPI_MAX_REQUEST;
    const char *from = buf + UAPI_OP_LINE_LEN - 1;
    const char *end = memmem(from, window - (UAPI_OP_LINE_LEN - 1), "\n\n", 2);

    if (!end)
        return len >= UAPI_MAX_REQUEST ? -EMSGSIZE : -EAGAIN;
    *consumed = (size_t)(end - buf) + 2;
    return 0;
}

int uapi_parse_request(const char *buf, size_t len, enum uapi_op *op, size_t *consumed)
{
    if ((!buf && len) || !op || !consumed)
        return -EINVAL;
    if (len < UAPI_OP_LINE_LEN)
        return op_prefix(buf, len) ? -EAGAIN : -EINVAL;
    if (memcmp(buf, UAPI_GET_LINE, UAPI_OP_LINE_LEN) == 0) {
        *op = UAPI_GET;
        return frame_get(buf, len, consumed);
    }
    if (memcmp(buf, UAPI_SET_LINE, UAPI_OP_LINE_LEN) == 0) {
        *op = UAPI_SET;
        return frame_set(buf, len, consumed);
    }
    return -EINVAL;
}

/* --- value syntax --------------------------------------------------------------- */

/* Decimal digits only (no sign, space or junk), at most max. */
static int parse_dec(const char *v, size_t len, uint64_t max, uint64_t *out)
{
    uint64_t n = 0;

    if (len == 0 || len > DEC_MAX_LEN)
        return -EINVAL;
    for (size_t i = 0; i < len; i++) {
        unsigned d = (unsigned)(unsigned char)v[i] - '0';

        if (d > 9 || d > max || n > (max - d) / 10)
            return -EINVAL;
        n = n * 10 + d;
    }
    *out = n;
    return 0;
}

/* Exactly 2*WG_KEY_LEN hex digits, either case. libsodium's decoder does not
 * branch on the digits, which are secret for private and preshared keys. */
static int parse_key(const char *v, size_t len, uint8_t key[WG_KEY_LEN])
{
    const char *end = NULL;
    size_t bin_len = 0;

    if (len != KEY_HEX_LEN ||
        sodium_hex2bin(key, WG_KEY_LEN, v, len, NULL, &bin_len, &end) != 0 ||
        bin_len != WG_KEY_LEN || end != v + len)
        return -EINVAL;
    return 0;
}

static int parse_true(const char *v, size_t len)
{
    return len == strlen(UAPI_TRUE) && memcmp(v, UAPI_TRUE, len) == 0 ? 0 : -EINVAL;
}

/* Copies v[0..len) into a C string for inet_pton; embedded NULs are refused. */
static int text_copy(char *dst, size_t cap, const char *v, size_t len)
{
    if (len == 0 || len >= cap || memchr(v, '\0', len))
        return -EINVAL;
    memcpy(dst, v, len);
    dst[len] = '\0';
    return 0;
}

/* An IPv6 zone: an interface index or an interface name. */
static int parse_zone(const char *z, uint32_t *scope)
{
    uint64_t n;

    if (parse_dec(z, strlen(z), UINT32_MAX, &n) == 0) {
        *scope = (uint32_t)n;
        return 0;
    }
    if (strlen(z) >= IFNAMSIZ)
        return -EINVAL;
    *scope = if_nametoindex(z);
    return *scope ? 0 : -EINVAL;
}

static int parse_port(const char *v, size_t len, uint16_t *port)
{
    uint64_t n;

    /* Port 0 cannot be sent to. */
    if (parse_dec(v, len, UINT16_MAX, &n) < 0 || n == 0)
        return -EINVAL;
    *port = htons((uint16_t)n);
    return 0;
}

/* "[addr]:port" or "[addr%zone]:port" */
static int parse_endpoint6(const char *v, size_t len, struct sockaddr_in6 *sin6)
{
    char host[ENDPOINT_MAX_LEN], *zone;
    const char *close = memchr(v, ']', len);

    if (!close || close + 1 == v + len || close[1] != ':' ||
        text_copy(host, sizeof(host), v + 1, (size_t)(close - v) - 1) < 0)
        return -EINVAL;
    memset(sin6, 0, sizeof(*sin6));
    sin6->sin6_family = AF_INET6;
    zone = strchr(host, '%');
    if (zone) {
        *zone++ = '\0';
        if (parse_zone(zone, &sin6->sin6_scope_id) < 0)
            return -EINVAL;
    }
    if (inet_pton(AF_INET6, host, &sin6->sin6_addr) != 1)
        return -EINVAL;
    return parse_port(close + 2, (size_t)(v + len - close) - 2, &sin6->sin6_port);
}

/* "a.b.c.d:port" */
static int parse_endpoint4(const char *v, size_t len, struct sockaddr_in *sin)
{
    char host[INET_ADDRSTRLEN];
    const char *colon = memchr(v, ':', len);

    if (!colon || text_copy(host, sizeof(host), v, (size_t)(colon - v)) < 0)
        return -EINVAL;
    memset(sin, 0, sizeof(*sin));
    sin->sin_family = AF_INET;
    if (inet_pton(AF_INET, host, &sin->sin_addr) != 1)
        return -EINVAL;
    return parse_port(colon + 1, (size_t)(v + len - colon) - 1, &sin->sin_port);
}

static int parse_endpoint(const char *v, size_t len, struct sockaddr_storage *ss,
                          socklen_t *sl)
{
    if (len > 0 && v[0] == '[') {
        *sl = sizeof(struct sockaddr_in6);
        return parse_endpoint6(v, len, (struct sockaddr_in6 *)ss);
    }
    *sl = sizeof(struct sockaddr_in);
    return parse_endpoint4(v, len, (struct sockaddr_in *)ss);
}

/* "addr/cidr"; the family follows from the address's text. */
static int parse_allowed_ip(const char *v, size_t len, int *family,
                            uint8_t addr[sizeof(struct in6_addr)], unsigned *cidr)
{
    char host[INET6_ADDRSTRLEN];
    const char *slash = memchr(v, '/', len);
    uint64_t bits;

    if (!slash || text_copy(host, sizeof(host), v, (size_t)(slash - v)) < 0)
        return -EINVAL;
    *family = strchr(host, ':') ? AF_INET6 : AF_INET;
    if (inet_pton(*family, host, addr) != 1)
        return -EINVAL;
    if (parse_dec(slash + 1, (size_t)(v + len - slash) - 1,
                  *family == AF_INET6 ? IP6_BITS : IP4_BITS, &bits) < 0)
        return -EINVAL;
    *cidr = (unsigned)bits;
    return 0;
}

/* --- set: one handler per key ------------------------------------------------------ */

/* A pass over a set body: the first (dry) only validates, the second calls. */
struct set_run {
    const struct uapi_set_ops *ops;
    void *ctx;
    bool dry;
};

typedef int (*key_cb)(void *ctx, const uint8_t *key);
typedef int (*flag_cb)(void *ctx);
typedef int (*u16_cb)(void *ctx, uint16_t v);

/* Only 0 and negative returns have a meaning; anything else is success. */
static int cb_result(int ret)
{
    return ret < 0 ? ret : 0;
}

static int run_key(const struct set_run *r, const char *v, size_t len, key_cb cb)
{
    uint8_t key[WG_KEY_LEN];
    int ret = parse_key(v, len, key);

    if (ret == 0 && !cb)
        ret = -EINVAL;
    if (ret == 0 && !r->dry)
        ret = cb_result(cb(r->ctx, key));
    sodium_memzero(key, sizeof(key));
    return ret;
}

static int run_flag(const struct set_run *r, const char *v, size_t len, flag_cb cb)
{
    if (parse_true(v, len) < 0 || !cb)
        return -EINVAL;
    return r->dry ? 0 : cb_result(cb(r->ctx));
}

static int run_u16(const struct set_run *r, const char *v, size_t len, u16_cb cb)
{
    uint64_t n;

    if (parse_dec(v, len, UINT16_MAX, &n) < 0 || !cb)
        return -EINVAL;
    return r->dry ? 0 : cb_result(cb(r->ctx, (uint16_t)n));
}

static int h_private_key(const struct set_run *r, const char *v, size_t len)
{
    return run_key(r, v, len, r->ops->private_key);
}

static int h_listen_port(const struct set_run *r, const char *v, size_t len)
{
    return run_u16(r, v, len, r->ops->listen_port);
}

static int h_fwmark(const struct set_run *r, const char *v, size_t len)
{
    uint64_t n;

    if (parse_dec(v, len, UINT32_MAX, &n) < 0 || !r->ops->fwmark)
        return -EINVAL;
    return r->dry ? 0 : cb_result(r->ops->fwmark(r->ctx, (uint32_t)n));
}

static int h_replace_peers(const struct set_run *r, const char *v, size_t len)
{
    return run_flag(r, v, len, r->ops->replace_peers);
}

static int h_public_key(const struct set_run *r, const char *v, size_t len)
{
    return run_key(r, v, len, r->ops->peer);
}

static int h_remove(const struct set_run *r, const char *v, size_t len)
{
    return run_flag(r, v, len, r->ops->peer_remove);
}

static int h_update_only(const struct set_run *r, const char *v, size_t len)
{
    return run_flag(r, v, len, r->ops->peer_update_only);
}

static int h_preshared_key(const struct set_run *r, const char *v, size_t len)
{
    return run_key(r, v, len, r->ops->peer_preshared_key);
}

static int h_endpoint(const struct set_run *r, const char *v, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl;

    if (parse_endpoint(v, len, &ss, &sl) < 0 || !r->ops->peer_endpoint)
        return -EINVAL;
    return r->dry ? 0 : cb_result(r->ops->peer_endpoint(r->ctx, (struct sockaddr *)&ss, sl));
}

static int h_keepalive(const struct set_run *r, const char *v, size_t len)
{
    return run_u16(r, v, len, r->ops->peer_keepalive);
}

static int h_replace_allowed_ips(const struct set_run *r, const char *v, size_t len)
{
    return run_flag(r, v, len, r->ops->peer_replace_allowed_ips);
}

static int h_allowed_ip(const struct set_run *r, const char *v, size_t len)
{
    uint8_t addr[sizeof(struct in6_addr)];
    unsigned cidr;
    int family;

    if (parse_allowed_ip(v, len, &family, addr, &cidr) < 0 || !r->ops->peer_allowed_ip)
        return -EINVAL;
    return r->dry ? 0 : cb_result(r->ops->peer_allowed_ip(r->ctx, family, addr, cidr));
}

static int h_protocol_version(const struct set_run *r, const char *v, size_t len)
{
    uint64_t n;

    if (parse_dec(v, len, UAPI_PROTOCOL_VERSION, &n) < 0 || n != UAPI_PROTOCOL_VERSION ||
        !r->ops->peer_protocol_version)
        return -EINVAL;
    return r->dry ? 0 : cb_result(r->ops->peer_protocol_version(r->ctx, (unsigned)n));
}

/* Where a key may appear: before the first public_key, after it, or both
 * (public_key itself, which opens a peer section). */
enum key_scope { SCOPE_IFACE, SCOPE_PEER, SCOPE_OPENS_PEER };

struct key_handler {
    const char *name;
    enum key_scope scope;
    int (*fn)(const struct set_run *r, const char *v, size_t len);
};

static const struct key_handler handlers[] = {
    { UAPI_KEY_PRIVATE_KEY,         SCOPE_IFACE,      h_private_key },
    { UAPI_KEY_LISTEN_PORT,         SCOPE_IFACE,      h_listen_port },
    { UAPI_KEY_FWMARK,              SCOPE_IFACE,      h_fwmark },
    { UAPI_KEY_REPLACE_PEERS,       SCOPE_IFACE,      h_replace_peers },
    { UAPI_KEY_PUBLIC_KEY,          SCOPE_OPENS_PEER, h_public_key },
    { UAPI_KEY_REMOVE,              SCOPE_PEER,       h_remove },
    { UAPI_KEY_UPDATE_ONLY,         SCOPE_PEER,       h_update_only },
    { UAPI_KEY_PRESHARED_KEY,       SCOPE_PEER,       h_preshared_key },
    { UAPI_KEY_ENDPOINT,            SCOPE_PEER,       h_endpoint },
    { UAPI_KEY_KEEPALIVE,           SCOPE_PEER,       h_keepalive },
    { UAPI_KEY_REPLACE_ALLOWED_IPS, SCOPE_PEER,       h_replace_allowed_ips },
    { UAPI_KEY_ALLOWED_IP,          SCOPE_PEER,       h_allowed_ip },
    { UAPI_KEY_PROTOCOL_VERSION,    SCOPE_PEER,       h_protocol_version },
};

static const struct key_handler *handler_find(const char *key, size_t len)
{
    for (size_t i = 0; i < sizeof(handlers) / sizeof(handlers[0]); i++)
        if (strlen(handlers[i].name) == len && memcmp(handlers[i].name, key, len) == 0)
            return &handlers[i];
    return NULL;
}

static int set_line(const struct set_run *r, const char *line, size_t len, bool *in_peer)
{
    const char *eq = memchr(line, '=', len);
    const struct key_handler *h;
    size_t klen;
    int ret;

    if (!eq)
        return -EPROTO;
    klen = (size_t)(eq - line);
    h = handler_find(line, klen);
    if (!h || (h->scope == SCOPE_IFACE && *in_peer) || (h->scope == SCOPE_PEER && !*in_peer))
        return -EINVAL;
    ret = h->fn(r, eq + 1, len - klen - 1);
    if (ret == 0 && h->scope == SCOPE_OPENS_PEER)
        *in_peer = true;
    return ret;
}

static int set_pass(const char *body, size_t len, const struct set_run *r)
{
    bool in_peer = false;
    size_t pos = 0;

    while (pos < len) {
        const char *line = body + pos;
        const char *nl = memchr(line, '\n', len - pos);
        size_t llen;
        int ret;

        if (!nl)
            return -EPROTO;
        llen = (size_t)(nl - line);
        if (llen == 0)
            return pos + 1 == len ? 0 : -EPROTO;
        ret = set_line(r, line, llen, &in_peer);
        if (ret < 0)
            return ret;
        pos += llen + 1;
    }
    return 0;
}

int uapi_apply_set(const char *body, size_t len, const struct uapi_set_ops *ops, void *ctx)
{
    struct set_run r = { .ops = ops, .ctx = ctx, .dry = true };
    int ret;

    if (!ops || (!body && len))
        return -EINVAL;
    ret = set_pass(body, len, &r);
    if (ret < 0)
        return ret;
    r.dry = false;
    return set_pass(body, len, &r);
}

/* --- get: the response writer -------------------------------------------------------- */

void uapi_buf_init(struct uapi_buf *b, char *p, size_t cap)
{
    b->p = p;
    b->len = 0;
    b->cap = p ? cap : 0;
    b->overflow = false;
}

static bool buf_ok(const struct uapi_buf *b)
{
    return b && (b->p || b->cap == 0) && b->len <= b->cap;
}

static bool key_ok(const char *key)
{
    return key && key[0] && !strpbrk(key, "=\n");
}

/* Appends "key=v\n" (and an empty line when closing) whole, or nothing. */
static int put_kv(struct uapi_buf *b, const char *key, const char *v, size_t vlen, bool closing)
{
    size_t klen, need;
    char *p;

    if (!buf_ok(b) || !key_ok(key))
        return -EINVAL;
    if (b->overflow)
        return -ENOBUFS;
    klen = strlen(key);
    need = klen + 1 + vlen + 1 + (closing ? 1 : 0);
    if (need > b->cap - b->len) {
        b->overflow = true;
        return -ENOBUFS;
    }
    p = b->p + b->len;
    memcpy(p, key, klen);
    p[klen] = '=';
    memcpy(p + klen + 1, v, vlen);
    p[klen + 1 + vlen] = '\n';
    if (closing)
        p[klen + 2 + vlen] = '\n';
    b->len += need;
    return 0;
}

int uapi_put_key(struct uapi_buf *b, const char *key, const uint8_t k[WG_KEY_LEN])
{
    char hex[KEY_HEX_LEN + 1];
    int ret;

    if (!k)
        return -EINVAL;
    sodium_bin2hex(hex, sizeof(hex), k, WG_KEY_LEN);
    ret = put_kv(b, key, hex, KEY_HEX_LEN, false);
    sodium_memzero(hex, sizeof(hex));
    return ret;
}

int uapi_put_u64(struct uapi_buf *b, const char *key, uint64_t v)
{
    char dec[DEC_MAX_LEN + 1];
    int n = snprintf(dec, sizeof(dec), "%" PRIu64, v);

    return put_kv(b, key, dec, (size_t)n, false);
}

int uapi_put_str(struct uapi_buf *b, const char *key, const char *s)
{
    if (!s || strchr(s, '\n'))
        return -EINVAL;
    return put_kv(b, key, s, strlen(s), false);
}

int uapi_put_endpoint(struct uapi_buf *b, const struct sockaddr *sa)
{
    char host[INET6_ADDRSTRLEN], text[ENDPOINT_MAX_LEN];
    int n;

    if (!sa)
        return -EINVAL;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;

        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        n = snprintf(text, sizeof(text), "%s:%u", host, ntohs(sin->sin_port));
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;

        inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
        if (sin6->sin6_scope_id)
            n = snprintf(text, sizeof(text), "[%s%%%" PRIu32 "]:%u", host,
                         sin6->sin6_scope_id, ntohs(sin6->sin6_port));
        else
            n = snprintf(text, sizeof(text), "[%s]:%u", host, ntohs(sin6->sin6_port));
    } else {
        return -EINVAL;
    }
    return put_kv(b, UAPI_KEY_ENDPOINT, text, (size_t)n, false);
}

int uapi_put_allowed_ip(struct uapi_buf *b, int family, const uint8_t *addr, unsigned cidr)
{
    char host[INET6_ADDRSTRLEN], text[INET6_ADDRSTRLEN + 8];
    int n;

    if (!addr || (family != AF_INET && family != AF_INET6) ||
        cidr > (family == AF_INET ? IP4_BITS : IP6_BITS))
        return -EINVAL;
    inet_ntop(family, addr, host, sizeof(host));
    n = snprintf(text, sizeof(text), "%s/%u", host, cidr);
    return put_kv(b, UAPI_KEY_ALLOWED_IP, text, (size_t)n, false);
}

int uapi_put_errno(struct uapi_buf *b, int err)
{
    char dec[DEC_MAX_LEN + 1];
    int n = snprintf(dec, sizeof(dec), "%d", err > 0 ? -err : err);

    return put_kv(b, UAPI_KEY_ERRNO, dec, (size_t)n, true);
}
