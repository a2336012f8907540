/* SPDX-License-Identifier: MIT */
/* Tests of overlay/uapi: request framing, `set` bodies through a recording
 * set of callbacks, and the `get` response writer. */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "overlay/control/uapi.h"

#define KEY_A "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
#define KEY_B "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff"
#define KEY_B_UPPER "E0E1E2E3E4E5E6E7E8E9EAEBECEDEEEFF0F1F2F3F4F5F6F7F8F9FAFBFCFDFEFF"
#define KEY_C "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"

/* --- a recording context ------------------------------------------------------ */

struct rec {
    char log[4096];
    size_t len;
    int calls;
    int fail_at;     /* the call (1-based) that returns fail_ret; 0: none */
    int fail_ret;
};

static int rec_add(struct rec *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int rec_add(struct rec *r, const char *fmt, ...)
{
    va_list ap;
    int n;

    va_start(ap, fmt);
    n = vsnprintf(r->log + r->len, sizeof(r->log) - r->len, fmt, ap);
    va_end(ap);
    assert_true(n > 0 && (size_t)n < sizeof(r->log) - r->len);
    r->len += (size_t)n;
    return ++r->calls == r->fail_at ? r->fail_ret : 0;
}

static void hex(char out[65], const uint8_t k[32])
{
    for (int i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", k[i]);
}

static int cb_key(void *ctx, const char *what, const uint8_t k[32])
{
    char h[65];

    hex(h, k);
    return rec_add(ctx, "%s=%s;", what, h);
}

static int r_private_key(void *ctx, const uint8_t k[32]) { return cb_key(ctx, "private_key", k); }
static int r_peer(void *ctx, const uint8_t k[32]) { return cb_key(ctx, "peer", k); }
static int r_psk(void *ctx, const uint8_t k[32]) { return cb_key(ctx, "psk", k); }
static int r_listen_port(void *ctx, uint16_t p) { return rec_add(ctx, "port=%u;", p); }
static int r_fwmark(void *ctx, uint32_t m) { return rec_add(ctx, "fwmark=%u;", m); }
static int r_replace_peers(void *ctx) { return rec_add(ctx, "replace_peers;"); }
static int r_remove(void *ctx) { return rec_add(ctx, "remove;"); }
static int r_update_only(void *ctx) { return rec_add(ctx, "update_only;"); }
static int r_keepalive(void *ctx, uint16_t s) { return rec_add(ctx, "keepalive=%u;", s); }
static int r_replace_ips(void *ctx) { return rec_add(ctx, "replace_ips;"); }
static int r_version(void *ctx, unsigned v) { return rec_add(ctx, "version=%u;", v); }

static int r_endpoint(void *ctx, const struct sockaddr *sa, socklen_t len)
{
    char host[INET6_ADDRSTRLEN];

    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
        assert_int_equal(len, sizeof(*sin));
        inet_ntop(AF_INET, &sin->sin_addr, host, sizeof(host));
        return rec_add(ctx, "endpoint=%s port %u;", host, ntohs(sin->sin_port));
    }
    const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
    assert_int_equal(sa->sa_family, AF_INET6);
    assert_int_equal(len, sizeof(*sin6));
    inet_ntop(AF_INET6, &sin6->sin6_addr, host, sizeof(host));
    return rec_add(ctx, "endpoint=%s scope %u port %u;", host,
                   (unsigned)sin6->sin6_scope_id, ntohs(sin6->sin6_port));
}

static int r_allowed_ip(void *ctx, int family, const uint8_t *addr, unsigned cidr)
{
    char host[INET6_ADDRSTRLEN];

    assert_true(family == AF_INET || family == AF_INET6);
    inet_ntop(family, addr, host, sizeof(host));
    return rec_add(ctx, "allowed=%s/%u;", host, cidr);
}

static const struct uapi_set_ops rec_ops = {
    .private_key = r_private_key,
    .listen_port = r_listen_port,
    .fwmark = r_fwmark,
    .replace_peers = r_replace_peers,
    .peer = r_peer,
    .peer_remove = r_remove,
    .peer_update_only = r_update_only,
    .peer_preshared_key = r_psk,
    .peer_endpoint = r_endpoint,
    .peer_keepalive = r_keepalive,
    .peer_replace_allowed_ips = r_replace_ips,
    .peer_allowed_ip = r_allowed_ip,
    .peer_protocol_version = r_version,
};

static int apply(struct rec *r, const char *body)
{
    memset(r, 0, sizeof(*r));
    return uapi_apply_set(body, strlen(body), &rec_ops, r);
}

/* A body that must be refused with err before any callback ran. */
static void assert_refused(const char *body, int err)
{
    struct rec r;

    if (apply(&r, body) != err)
        fail_msg("body \"%s\": expected %d", body, err);
    if (r.calls != 0)
        fail_msg("body \"%s\": callbacks ran: %s", body, r.log);
}

/* --- framing ------------------------------------------------------------------ */

static int parse(const char *buf, enum uapi_op *op, size_t *consumed)
{
    return uapi_parse_request(buf, strlen(buf), op, consumed);
}

static void test_parse_get_and_set(void **state)
{
    enum uapi_op op = UAPI_SET;
    size_t consumed = 0;
    (void)state;
    assert_int_equal(parse("get=1\n\n", &op, &consumed), 0);
    assert_int_equal(op, UAPI_GET);
    assert_int_equal(consumed, 7);

    assert_int_equal(parse("set=1\nlisten_port=1\n\n", &op, &consumed), 0);
    assert_int_equal(op, UAPI_SET);
    assert_int_equal(consumed, 21);

    /* A set without keys. */
    assert_int_equal(parse("set=1\n\n", &op, &consumed), 0);
    assert_int_equal(op, UAPI_SET);
    assert_int_equal(consumed, 7);

    /* Only the first request counts; the rest waits for the next call. */
    assert_int_equal(parse("get=1\n\nset=1\n\n", &op, &consumed), 0);
    assert_int_equal(op, UAPI_GET);
    assert_int_equal(consumed, 7);
    assert_int_equal(parse("set=1\nfwmark=0\n\nget=1\n\n", &op, &consumed), 0);
    assert_int_equal(op, UAPI_SET);
    assert_int_equal(consumed, 16);
}

static void test_parse_incomplete(void **state)
{
    static const char *const partial[] = {
        "", "g", "get=", "get=1", "get=1\n", "s", "set=1", "set=1\n",
        "set=1\nprivate_key=ab", "set=1\nlisten_port=1\n",
    };
    enum uapi_op op;
    size_t consumed = 99;
    (void)state;
    for (size_t i = 0; i < sizeof(partial) / sizeof(partial[0]); i++)
        if (parse(partial[i], &op, &consumed) != -EAGAIN)
            fail_msg("\"%s\" is not -EAGAIN", partial[i]);
    assert_int_equal(consumed, 99);
}

static void test_parse_malformed(void **state)
{
    static const char *const bad[] = {
        "x", "get=2\n\n", "got=1\n\n", "GET=1\n\n", "get=1\nx\n\n", "get=1\r\n\r\n",
        "\n", "set=1 \n\n", "et=1\n\n",
    };
    enum uapi_op op;
    size_t consumed;
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        if (parse(bad[i], &op, &consumed) != -EINVAL)
            fail_msg("\"%s\" is not -EINVAL", bad[i]);
    assert_int_equal(uapi_parse_request(NULL, 1, &op, &consumed), -EINVAL);
    assert_int_equal(uapi_parse_request("get=1\n\n", 7, NULL, &consumed), -EINVAL);
    assert_int_equal(uapi_parse_request("get=1\n\n", 7, &op, NULL), -EINVAL);
}

static void test_parse_size_limit(void **state)
{
    size_t max = UAPI_MAX_REQUEST, consumed = 0;
    char *buf = malloc(max + 2);
    enum uapi_op op;
    (void)state;
    assert_non_null(buf);
    memcpy(buf, UAPI_SET_LINE, UAPI_OP_LINE_LEN);
    memset(buf + UAPI_OP_LINE_LEN, 'a', max + 2 - UAPI_OP_LINE_LEN);
    /* Below the limit an unfinished request may still grow. */
    assert_int_equal(uapi_parse_request(buf, max - 1, &op, &consumed), -EAGAIN);
    assert_int_equal(uapi_parse_request(buf, max, &op, &consumed), -EMSGSIZE);
    assert_int_equal(uapi_parse_request(buf, max + 2, &op, &consumed), -EMSGSIZE);
    /* A request of exactly the limit is fine... */
    buf[max - 2] = '\n';
    buf[max - 1] = '\n';
    assert_int_equal(uapi_parse_request(buf, max + 2, &op, &consumed), 0);
    assert_int_equal(consumed, max);
    /* ...one byte more is not. */
    buf[max - 2] = 'a';
    buf[max] = '\n';
    assert_int_equal(uapi_parse_request(buf, max + 1, &op, &consumed), -EMSGSIZE);
    free(buf);
}

/* --- set ------------------------------------------------------------------------ */

static void test_set_all_keys(void **state)
{
    const char *req =
        "set=1\n"
        "private_key=" KEY_A "\n"
        "listen_port=51820\n"
        "fwmark=4294967295\n"
        "replace_peers=true\n"
        "public_key=" KEY_B_UPPER "\n"
        "update_only=true\n"
        "preshared_key=" KEY_C "\n"
        "endpoint=192.0.2.7:65535\n"
        "persistent_keepalive_interval=25\n"
        "replace_allowed_ips=true\n"
        "allowed_ip=10.77.0.1/32\n"
        "allowed_ip=fd00:77::/64\n"
        "protocol_version=1\n"
        "public_key=" KEY_A "\n"
        "endpoint=[2001:db8::1%7]:1\n"
        "allowed_ip=0.0.0.0/0\n"
        "allowed_ip=::/128\n"
        "persistent_keepalive_interval=0\n"
        "remove=true\n"
        "\n";
    const char *want =
        "private_key=" KEY_A ";port=51820;fwmark=4294967295;replace_peers;"
        "peer=" KEY_B ";update_only;psk=" KEY_C ";endpoint=192.0.2.7 port 65535;"
        "keepalive=25;replace_ips;allowed=10.77.0.1/32;allowed=fd00:77::/64;version=1;"
        "peer=" KEY_A ";endpoint=2001:db8::1 scope 7 port 1;allowed=0.0.0.0/0;"
        "allowed=::/128;keepalive=0;remove;";
    enum uapi_op op;
    size_t consumed;
    struct rec r;
    (void)state;
    assert_int_equal(parse(req, &op, &consumed), 0);
    assert_int_equal(op, UAPI_SET);
    assert_int_equal(consumed, strlen(req));
    memset(&r, 0, sizeof(r));
    assert_int_equal(uapi_apply_set(req + UAPI_OP_LINE_LEN, consumed - UAPI_OP_LINE_LEN,
                                    &rec_ops, &r), 0);
    assert_string_equal(r.log, want);
}

static void test_set_edge_values(void **state)
{
    struct rec r;
    (void)state;
    assert_int_equal(apply(&r, "listen_port=0\nfwmark=0\nlisten_port=00080\n"), 0);
    assert_string_equal(r.log, "port=0;fwmark=0;port=80;");
    /* All-zero keys reach the callback: they mean "remove". */
    assert_int_equal(apply(&r, "private_key=" "0000000000000000000000000000000000000000000000000000000000000000\n"), 0);
    assert_string_equal(r.log, "private_key=0000000000000000000000000000000000000000000000000000000000000000;");
    assert_int_equal(apply(&r, "public_key=" KEY_A "\npersistent_keepalive_interval=65535\n"
                           "endpoint=[::ffff:192.0.2.1]:9\nallowed_ip=10.1.2.3/8\n"), 0);
    assert_string_equal(r.log, "peer=" KEY_A ";keepalive=65535;"
                        "endpoint=::ffff:192.0.2.1 scope 0 port 9;allowed=10.1.2.3/8;");
    /* Empty bodies. */
    assert_int_equal(apply(&r, ""), 0);
    assert_int_equal(apply(&r, "\n"), 0);
    assert_int_equal(r.calls, 0);
}

static void test_set_zone_by_name(void **state)
{
    unsigned lo = if_nametoindex("lo");
    char want[128];
    struct rec r;
    (void)state;
    if (lo == 0)
        skip();
    assert_int_equal(apply(&r, "public_key=" KEY_A "\nendpoint=[fe80::1%lo]:51820\n"), 0);
    snprintf(want, sizeof(want), "peer=" KEY_A ";endpoint=fe80::1 scope %u port 51820;", lo);
    assert_string_equal(r.log, want);
    assert_refused("public_key=" KEY_A "\nendpoint=[fe80::1%no-such-if0]:51820\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nendpoint=[fe80::1%]:51820\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nendpoint=[fe80::1%4294967296]:51820\n", -EINVAL);
}

static void test_set_bad_keys(void **state)
{
    (void)state;
    assert_refused("private_key=" KEY_A "0\n", -EINVAL);                 /* 65 digits */
    assert_refused("private_key=" KEY_A "\n" "private_key=abcd\n", -EINVAL);
    assert_refused("private_key=\n", -EINVAL);
    assert_refused("private_key=g00102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", -EINVAL);
    assert_refused("private_key=00010203040506070809 a0b0c0d0e0f101112131415161718191a1b1c1d1e1f\n", -EINVAL);
    assert_refused("private_key= 000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1\n", -EINVAL);
    assert_refused("public_key=" KEY_A "x\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\npreshared_key=" KEY_B "\r\n", -EINVAL);
}

static void test_set_bad_numbers(void **state)
{
    static const char *const bad[] = {
        "listen_port=65536\n", "listen_port=12a\n", "listen_port=\n", "listen_port=-1\n",
        "listen_port=+1\n", "listen_port= 1\n", "listen_port=1 \n",
        "listen_port=99999999999999999999999\n", "fwmark=4294967296\n", "fwmark=0x10\n",
        "public_key=" KEY_A "\npersistent_keepalive_interval=65536\n",
        "public_key=" KEY_A "\npersistent_keepalive_interval=1s\n",
        "public_key=" KEY_A "\nprotocol_version=2\n",
        "public_key=" KEY_A "\nprotocol_version=0\n",
        "public_key=" KEY_A "\nprotocol_version=\n",
        "public_key=" KEY_A "\nprotocol_version=11\n",
    };
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_refused(bad[i], -EINVAL);
}

static void test_set_bad_endpoints(void **state)
{
    static const char *const bad[] = {
        "192.0.2.1", "192.0.2.1:", "192.0.2.1:0", "192.0.2.1:65536", "192.0.2.1:12a",
        "192.0.2.1:51820:1", ":51820", "192.0.2:51820", "host.example:51820",
        "2001:db8::1:51820", "[2001:db8::1]", "[2001:db8::1]:", "[2001:db8::1]51820",
        "[2001:db8::1]:0", "[192.0.2.1]:51820", "[]:1", "[2001:db8::1:1", "",
        "192.0.2.1:+1",
    };
    char body[256];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body), "public_key=" KEY_A "\nendpoint=%s\n", bad[i]);
        assert_refused(body, -EINVAL);
    }
}

static void test_set_bad_allowed_ips(void **state)
{
    static const char *const bad[] = {
        "10.0.0.0/33", "fd00::/129", "10.0.0.0", "10.0.0.0/", "10.0.0.0/8x", "/8",
        "10.0.0/8", "fd00::/-1", "10.0.0.0/ 8", "fd00::1::/64", "10.0.0.0/8/8",
    };
    char body[256];
    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(body, sizeof(body), "public_key=" KEY_A "\nallowed_ip=%s\n", bad[i]);
        assert_refused(body, -EINVAL);
    }
}

static void test_set_bad_flags_and_scope(void **state)
{
    (void)state;
    assert_refused("replace_peers=false\n", -EINVAL);
    assert_refused("replace_peers=TRUE\n", -EINVAL);
    assert_refused("replace_peers=\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nremove=1\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nupdate_only=yes\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nreplace_allowed_ips=true \n", -EINVAL);
    /* Unknown keys, anywhere. */
    assert_refused("listen_prot=1\n", -EINVAL);
    assert_refused("=1\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nendpiont=192.0.2.1:1\n", -EINVAL);
    assert_refused("get=1\n", -EINVAL);
    /* Peer keys before any public_key. */
    assert_refused("endpoint=192.0.2.1:1\n", -EINVAL);
    assert_refused("allowed_ip=10.0.0.0/8\n", -EINVAL);
    assert_refused("remove=true\n", -EINVAL);
    assert_refused("protocol_version=1\n", -EINVAL);
    /* Interface keys inside a peer section. */
    assert_refused("public_key=" KEY_A "\nlisten_port=1\n", -EINVAL);
    assert_refused("public_key=" KEY_A "\nprivate_key=" KEY_B "\n", -EINVAL);
}

static void test_set_framing(void **state)
{
    struct rec r;
    (void)state;
    assert_refused("listen_port\n", -EPROTO);
    assert_refused("listen_port=1\nfwmark=1", -EPROTO);       /* no final newline */
    assert_refused("listen_port=1\n\nfwmark=1\n", -EPROTO);   /* after the empty line */
    assert_refused("listen_port=1\n\n\n", -EPROTO);
    /* A NUL inside a value is not the end of it. */
    assert_int_equal(uapi_apply_set("listen_port=1\0\n", 15, &rec_ops, &r), -EINVAL);
    static const char nul_ep[] = "public_key=" KEY_A "\nendpoint=1.2.3.4\0:1\n";
    assert_int_equal(uapi_apply_set(nul_ep, sizeof(nul_ep) - 1, &rec_ops, &r), -EINVAL);
    memset(&r, 0, sizeof(r));
    assert_int_equal(uapi_apply_set(NULL, 1, &rec_ops, &r), -EINVAL);
    assert_int_equal(uapi_apply_set("", 0, NULL, &r), -EINVAL);
    assert_int_equal(uapi_apply_set(NULL, 0, &rec_ops, &r), 0);
    assert_int_equal(r.calls, 0);
}

static void test_set_unsupported_callback(void **state)
{
    struct uapi_set_ops ops = rec_ops;
    struct rec r;
    (void)state;
    ops.fwmark = NULL;
    memset(&r, 0, sizeof(r));
    /* Refused whole: listen_port, before it, is not applied either. */
    const char *body = "listen_port=1\nfwmark=1\n";
    assert_int_equal(uapi_apply_set(body, strlen(body), &ops, &r), -EINVAL);
    assert_int_equal(r.calls, 0);
    /* Each callback, missing, refuses its key. */
    static const struct { size_t off; const char *body; } cases[] = {
        { offsetof(struct uapi_set_ops, private_key), "private_key=" KEY_A "\n" },
        { offsetof(struct uapi_set_ops, listen_port), "listen_port=1\n" },
        { offsetof(struct uapi_set_ops, replace_peers), "replace_peers=true\n" },
        { offsetof(struct uapi_set_ops, peer), "public_key=" KEY_A "\n" },
        { offsetof(struct uapi_set_ops, peer_remove), "public_key=" KEY_A "\nremove=true\n" },
        { offsetof(struct uapi_set_ops, peer_update_only), "public_key=" KEY_A "\nupdate_only=true\n" },
        { offsetof(struct uapi_set_ops, peer_preshared_key), "public_key=" KEY_A "\npreshared_key=" KEY_B "\n" },
        { offsetof(struct uapi_set_ops, peer_endpoint), "public_key=" KEY_A "\nendpoint=1.2.3.4:5\n" },
        { offsetof(struct uapi_set_ops, peer_keepalive), "public_key=" KEY_A "\npersistent_keepalive_interval=5\n" },
        { offsetof(struct uapi_set_ops, peer_replace_allowed_ips), "public_key=" KEY_A "\nreplace_allowed_ips=true\n" },
        { offsetof(struct uapi_set_ops, peer_allowed_ip), "public_key=" KEY_A "\nallowed_ip=1.2.3.4/32\n" },
        { offsetof(struct uapi_set_ops, peer_protocol_version), "public_key=" KEY_A "\nprotocol_version=1\n" },
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ops = rec_ops;
        memset((char *)&ops + cases[i].off, 0, sizeof(void (*)(void)));
        memset(&r, 0, sizeof(r));
        assert_int_equal(uapi_apply_set(cases[i].body, strlen(cases[i].body), &rec_ops, &r), 0);
        memset(&r, 0, sizeof(r));
        if (uapi_apply_set(cases[i].body, strlen(cases[i].body), &ops, &r) != -EINVAL)
            fail_msg("case %zu: not refused", i);
        assert_int_equal(r.calls, 0);
    }
}

static void test_set_callback_errors(void **state)
{
    const char *body = "listen_port=1\nfwmark=2\npublic_key=" KEY_A "\nallowed_ip=10.0.0.0/8\n";
    struct rec r;
    (void)state;
    /* The n-th callback's error ends the request there and is its status. */
    for (int n = 1; n <= 4; n++) {
        memset(&r, 0, sizeof(r));
        r.fail_at = n;
        r.fail_ret = -EADDRINUSE - n;
        assert_int_equal(uapi_apply_set(body, strlen(body), &rec_ops, &r), -EADDRINUSE - n);
        assert_int_equal(r.calls, n);
    }
    memset(&r, 0, sizeof(r));
    r.fail_at = 2;
    r.fail_ret = -EADDRINUSE;
    assert_int_equal(uapi_apply_set(body, strlen(body), &rec_ops, &r), -EADDRINUSE);
    assert_string_equal(r.log, "port=1;fwmark=2;");
    /* A positive return is not an error. */
    memset(&r, 0, sizeof(r));
    r.fail_at = 1;
    r.fail_ret = 5;
    assert_int_equal(uapi_apply_set(body, strlen(body), &rec_ops, &r), 0);
    assert_int_equal(r.calls, 4);
}

/* --- get: the writer ---------------------------------------------------------------- */

static void test_writer_lines(void **state)
{
    static const uint8_t key[32] = { 0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08,
        0x09, 0x0a, 0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16,
        0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c, 0x1d, 0x1e, 0x1f };
    uint8_t v4[4] = { 10, 77, 0, 0 }, v6[16] = { 0xfd, 0x00, 0, 0x77 };
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(51820) };
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(1) };
    char mem[1024];
    struct uapi_buf b;
    (void)state;
    inet_pton(AF_INET, "192.0.2.7", &sin.sin_addr);
    inet_pton(AF_INET6, "fe80::1", &sin6.sin6_addr);
    uapi_buf_init(&b, mem, sizeof(mem));
    assert_int_equal(uapi_put_key(&b, UAPI_KEY_PRIVATE_KEY, key), 0);
    assert_int_equal(uapi_put_u64(&b, UAPI_KEY_LISTEN_PORT, 51820), 0);
    assert_int_equal(uapi_put_key(&b, UAPI_KEY_PUBLIC_KEY, key), 0);
    assert_int_equal(uapi_put_endpoint(&b, (struct sockaddr *)&sin), 0);
    assert_int_equal(uapi_put_endpoint(&b, (struct sockaddr *)&sin6), 0);
    sin6.sin6_scope_id = 3;
    assert_int_equal(uapi_put_endpoint(&b, (struct sockaddr *)&sin6), 0);
    assert_int_equal(uapi_put_u64(&b, UAPI_KEY_RX_BYTES, UINT64_MAX), 0);
    assert_int_equal(uapi_put_u64(&b, UAPI_KEY_TX_BYTES, 0), 0);
    assert_int_equal(uapi_put_str(&b, "custom", "a b=c"), 0);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET, v4, 16), 0);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET6, v6, 128), 0);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET, v4, 0), 0);
    assert_int_equal(uapi_put_errno(&b, 0), 0);
    assert_false(b.overflow);
    const char *want =
        "private_key=" KEY_A "\n"
        "listen_port=51820\n"
        "public_key=" KEY_A "\n"
        "endpoint=192.0.2.7:51820\n"
        "endpoint=[fe80::1]:1\n"
        "endpoint=[fe80::1%3]:1\n"
        "rx_bytes=18446744073709551615\n"
        "tx_bytes=0\n"
        "custom=a b=c\n"
        "allowed_ip=10.77.0.0/16\n"
        "allowed_ip=fd00:77::/128\n"
        "allowed_ip=10.77.0.0/0\n"
        "errno=0\n\n";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(mem, want, b.len);
}

static void test_writer_errno(void **state)
{
    char mem[64];
    struct uapi_buf b;
    (void)state;
    uapi_buf_init(&b, mem, sizeof(mem));
    assert_int_equal(uapi_put_errno(&b, -EINVAL), 0);
    assert_int_equal(uapi_put_errno(&b, EADDRINUSE), 0);   /* sign normalised */
    assert_int_equal(b.len, strlen("errno=-22\n\nerrno=-98\n\n"));
    assert_memory_equal(mem, "errno=-22\n\nerrno=-98\n\n", b.len);
}

static void test_writer_overflow(void **state)
{
    char mem[32];
    struct uapi_buf b;
    (void)state;
    memset(mem, '#', sizeof(mem));
    /* "listen_port=51820\n" is 18 bytes; with "errno=0\n\n" 27. */
    uapi_buf_init(&b, mem, 27);
    assert_int_equal(uapi_put_u64(&b, "listen_port", 51820), 0);
    assert_int_equal(uapi_put_u64(&b, "listen_port", 51820), -ENOBUFS);
    assert_true(b.overflow);
    assert_int_equal(b.len, 18);
    /* Nothing after an overflow, though this one would fit. */
    assert_int_equal(uapi_put_errno(&b, 0), -ENOBUFS);
    assert_int_equal(b.len, 18);
    assert_int_equal(mem[18], '#');

    /* An exact fit is not an overflow. */
    uapi_buf_init(&b, mem, 27);
    assert_int_equal(uapi_put_u64(&b, "listen_port", 51820), 0);
    assert_int_equal(uapi_put_errno(&b, 0), 0);
    assert_int_equal(b.len, 27);
    assert_false(b.overflow);
    assert_int_equal(mem[27], '#');
    assert_int_equal(uapi_put_str(&b, "a", ""), -ENOBUFS);

    /* One byte short: nothing of the line is written. */
    memset(mem, '#', sizeof(mem));
    uapi_buf_init(&b, mem, 17);
    assert_int_equal(uapi_put_u64(&b, "listen_port", 51820), -ENOBUFS);
    assert_int_equal(b.len, 0);
    assert_int_equal(mem[0], '#');

    /* A zero-sized buffer. */
    uapi_buf_init(&b, NULL, 0);
    assert_int_equal(uapi_put_errno(&b, 0), -ENOBUFS);
    assert_true(b.overflow);
}

static void test_writer_bad_args(void **state)
{
    static const uint8_t addr[16];
    struct sockaddr sa = { .sa_family = AF_UNIX };
    char mem[256];
    struct uapi_buf b;
    (void)state;
    uapi_buf_init(&b, mem, sizeof(mem));
    assert_int_equal(uapi_put_str(&b, "k", "two\nlines"), -EINVAL);
    assert_int_equal(uapi_put_str(&b, "k", NULL), -EINVAL);
    assert_int_equal(uapi_put_str(&b, "k=v", "x"), -EINVAL);
    assert_int_equal(uapi_put_str(&b, "k\n", "x"), -EINVAL);
    assert_int_equal(uapi_put_str(&b, "", "x"), -EINVAL);
    assert_int_equal(uapi_put_str(&b, NULL, "x"), -EINVAL);
    assert_int_equal(uapi_put_u64(NULL, "k", 1), -EINVAL);
    assert_int_equal(uapi_put_key(&b, "k", NULL), -EINVAL);
    assert_int_equal(uapi_put_endpoint(&b, NULL), -EINVAL);
    assert_int_equal(uapi_put_endpoint(&b, &sa), -EINVAL);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET, addr, 33), -EINVAL);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET6, addr, 129), -EINVAL);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_UNIX, addr, 0), -EINVAL);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET, NULL, 0), -EINVAL);
    b.len = b.cap + 1;   /* a corrupted buffer */
    assert_int_equal(uapi_put_u64(&b, "k", 1), -EINVAL);
    b.len = 0;
    assert_false(b.overflow);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET6, addr, 128), 0);
}

/* What the writer says, the parser reads back the same. */
static void test_writer_round_trip(void **state)
{
    struct sockaddr_in6 sin6 = { .sin6_family = AF_INET6, .sin6_port = htons(443),
                                 .sin6_scope_id = 9 };
    uint8_t v6[16];
    char mem[512];
    struct uapi_buf b;
    struct rec r;
    (void)state;
    inet_pton(AF_INET6, "2001:db8:1:2:3:4:5:6", &sin6.sin6_addr);
    inet_pton(AF_INET6, "2001:db8::", v6);
    uapi_buf_init(&b, mem, sizeof(mem));
    assert_int_equal(uapi_put_str(&b, UAPI_KEY_PUBLIC_KEY, KEY_C), 0);
    assert_int_equal(uapi_put_endpoint(&b, (struct sockaddr *)&sin6), 0);
    assert_int_equal(uapi_put_allowed_ip(&b, AF_INET6, v6, 32), 0);
    memset(&r, 0, sizeof(r));
    assert_int_equal(uapi_apply_set(mem, b.len, &rec_ops, &r), 0);
    assert_string_equal(r.log, "peer=" KEY_C ";endpoint=2001:db8:1:2:3:4:5:6 scope 9 port 443;"
                        "allowed=2001:db8::/32;");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_get_and_set),
        cmocka_unit_test(test_parse_incomplete),
        cmocka_unit_test(test_parse_malformed),
        cmocka_unit_test(test_parse_size_limit),
        cmocka_unit_test(test_set_all_keys),
        cmocka_unit_test(test_set_edge_values),
        cmocka_unit_test(test_set_zone_by_name),
        cmocka_unit_test(test_set_bad_keys),
        cmocka_unit_test(test_set_bad_numbers),
        cmocka_unit_test(test_set_bad_endpoints),
        cmocka_unit_test(test_set_bad_allowed_ips),
        cmocka_unit_test(test_set_bad_flags_and_scope),
        cmocka_unit_test(test_set_framing),
        cmocka_unit_test(test_set_unsupported_callback),
        cmocka_unit_test(test_set_callback_errors),
        cmocka_unit_test(test_writer_lines),
        cmocka_unit_test(test_writer_errno),
        cmocka_unit_test(test_writer_overflow),
        cmocka_unit_test(test_writer_bad_args),
        cmocka_unit_test(test_writer_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
