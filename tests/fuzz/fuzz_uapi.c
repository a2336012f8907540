/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for overlay/uapi: arbitrary bytes through the request
 * framer and the `set` parser, with callbacks that accept everything. Every
 * endpoint and allowed-ip the parser hands out must be writable by the get
 * writer, and the written line must parse back to the same value. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "overlay/control/uapi.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* What a round trip must find again. */
struct want {
    struct sockaddr_storage ss;
    socklen_t sslen;
    int family;
    uint8_t addr[16];
    unsigned cidr;
    int seen;
};

static int ok_key(void *ctx, const uint8_t k[WG_KEY_LEN]) { (void)ctx; (void)k; return 0; }
static int ok_u16(void *ctx, uint16_t v) { (void)ctx; (void)v; return 0; }
static int ok_u32(void *ctx, uint32_t v) { (void)ctx; (void)v; return 0; }
static int ok_flag(void *ctx) { (void)ctx; return 0; }
static int ok_version(void *ctx, unsigned v)
{
    (void)ctx;
    if (v != UAPI_PROTOCOL_VERSION)
        abort();
    return 0;
}

static int again_endpoint(void *ctx, const struct sockaddr *sa, socklen_t len)
{
    struct want *w = ctx;

    if (len != w->sslen || memcmp(sa, &w->ss, len) != 0)
        abort();
    w->seen++;
    return 0;
}

static int again_allowed_ip(void *ctx, int family, const uint8_t *addr, unsigned cidr)
{
    struct want *w = ctx;
    size_t alen = family == AF_INET ? 4 : 16;

    if (family != w->family || cidr != w->cidr || memcmp(addr, w->addr, alen) != 0)
        abort();
    w->seen++;
    return 0;
}

static const struct uapi_set_ops again_ops = {
    .peer = ok_key,
    .peer_endpoint = again_endpoint,
    .peer_allowed_ip = again_allowed_ip,
};

/* Parses what the writer wrote, inside a peer section, and expects w again. */
static void reparse(const struct uapi_buf *b, struct want *w)
{
    static const char head[] = UAPI_KEY_PUBLIC_KEY "="
        "0000000000000000000000000000000000000000000000000000000000000000\n";
    char body[sizeof(head) + 256];

    if (b->overflow || b->len > 256)
        abort();
    memcpy(body, head, sizeof(head) - 1);
    memcpy(body + sizeof(head) - 1, b->p, b->len);
    if (uapi_apply_set(body, sizeof(head) - 1 + b->len, &again_ops, w) != 0 || w->seen != 1)
        abort();
}

static int any_endpoint(void *ctx, const struct sockaddr *sa, socklen_t len)
{
    struct want w = { .sslen = len };
    char mem[256];
    struct uapi_buf b;

    (void)ctx;
    if ((sa->sa_family == AF_INET && len != sizeof(struct sockaddr_in)) ||
        (sa->sa_family == AF_INET6 && len != sizeof(struct sockaddr_in6)) ||
        len > sizeof(w.ss))
        abort();
    memcpy(&w.ss, sa, len);
    uapi_buf_init(&b, mem, sizeof(mem));
    if (uapi_put_endpoint(&b, sa) != 0)
        abort();
    reparse(&b, &w);
    return 0;
}

static int any_allowed_ip(void *ctx, int family, const uint8_t *addr, unsigned cidr)
{
    struct want w = { .family = family, .cidr = cidr };
    char mem[256];
    struct uapi_buf b;

    (void)ctx;
    if (!((family == AF_INET && cidr <= 32) || (family == AF_INET6 && cidr <= 128)))
        abort();
    memcpy(w.addr, addr, family == AF_INET ? 4 : 16);
    uapi_buf_init(&b, mem, sizeof(mem));
    if (uapi_put_allowed_ip(&b, family, addr, cidr) != 0)
        abort();
    reparse(&b, &w);
    return 0;
}

static const struct uapi_set_ops ops = {
    .private_key = ok_key,
    .listen_port = ok_u16,
    .fwmark = ok_u32,
    .replace_peers = ok_flag,
    .peer = ok_key,
    .peer_remove = ok_flag,
    .peer_update_only = ok_flag,
    .peer_preshared_key = ok_key,
    .peer_endpoint = any_endpoint,
    .peer_keepalive = ok_u16,
    .peer_replace_allowed_ips = ok_flag,
    .peer_allowed_ip = any_allowed_ip,
    .peer_protocol_version = ok_version,
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *buf = (const char *)data;
    enum uapi_op op;
    size_t consumed = 0;
    int ret;

    ret = uapi_parse_request(buf, size, &op, &consumed);
    if (ret == 0) {
        if (consumed < UAPI_OP_LINE_LEN + 1 || consumed > size ||
            buf[consumed - 1] != '\n' || buf[consumed - 2] != '\n')
            abort();
        if (op == UAPI_SET)
            uapi_apply_set(buf + UAPI_OP_LINE_LEN, consumed - UAPI_OP_LINE_LEN, &ops, NULL);
    } else if (ret != -EAGAIN && ret != -EINVAL && ret != -EMSGSIZE) {
        abort();
    }
    /* The bytes as a body of their own, framed or not. */
    uapi_apply_set(buf, size, &ops, NULL);
    return 0;
}
