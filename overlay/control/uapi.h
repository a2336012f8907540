/* SPDX-License-Identifier: MIT */
/* WireGuard's cross-platform userspace API (wireguard.com/xplatform), the
 * text protocol that stock `wg` speaks over /var/run/wireguard/IFNAME.sock:
 * framing of requests, the `set` operation's keys and values (strictly
 * validated, then handed to callbacks), and a writer for `get` responses into
 * a caller's buffer. Pure: no sockets, no allocation, no daemon state.
 *
 * Requests:  "get=1\n\n"
 *            "set=1\n" "key=value\n"... "\n"
 * Responses: get: "key=value\n"... "errno=0\n\n"; set: "errno=N\n\n". */
#ifndef DDPNET_UAPI_H
#define DDPNET_UAPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "crypto/wg_const.h"

#define UAPI_GET_LINE        "get=1\n"
#define UAPI_SET_LINE        "set=1\n"
#define UAPI_OP_LINE_LEN     6u
/* Longest request we buffer: `wg setconf` sends every peer in one request,
 * about 250 bytes a peer, so this fits some 4000 peers. */
#define UAPI_MAX_REQUEST     (1u << 20)
#define UAPI_PROTOCOL_VERSION 1u
#define UAPI_TRUE            "true"   /* the only value of the flag keys */

/* Keys of requests and responses. */
#define UAPI_KEY_PRIVATE_KEY          "private_key"
#define UAPI_KEY_LISTEN_PORT          "listen_port"
#define UAPI_KEY_FWMARK               "fwmark"
#define UAPI_KEY_REPLACE_PEERS        "replace_peers"
#define UAPI_KEY_PUBLIC_KEY           "public_key"
#define UAPI_KEY_REMOVE               "remove"
#define UAPI_KEY_UPDATE_ONLY          "update_only"
#define UAPI_KEY_PRESHARED_KEY        "preshared_key"
#define UAPI_KEY_ENDPOINT             "endpoint"
#define UAPI_KEY_KEEPALIVE            "persistent_keepalive_interval"
#define UAPI_KEY_REPLACE_ALLOWED_IPS  "replace_allowed_ips"
#define UAPI_KEY_ALLOWED_IP           "allowed_ip"
#define UAPI_KEY_PROTOCOL_VERSION     "protocol_version"
#define UAPI_KEY_LAST_HANDSHAKE_SEC   "last_handshake_time_sec"
#define UAPI_KEY_LAST_HANDSHAKE_NSEC  "last_handshake_time_nsec"
#define UAPI_KEY_RX_BYTES             "rx_bytes"
#define UAPI_KEY_TX_BYTES             "tx_bytes"
#define UAPI_KEY_ERRNO                "errno"

enum uapi_op { UAPI_GET, UAPI_SET };

/* Callbacks of a `set`, called in the order of the request's lines. Each
 * returns 0 or a negative errno, which ends the request and becomes its
 * status. A NULL callback means the key is unsupported: a request using it
 * fails with -EINVAL before any callback runs. Keys are 32 bytes, wiped
 * after the call; an all-zero private or preshared key means "remove it".
 * Every peer key follows a peer() that opened that peer's section. */
struct uapi_set_ops {
    int (*private_key)(void *ctx, const uint8_t key[WG_KEY_LEN]);
    int (*listen_port)(void *ctx, uint16_t port);          /* 0: any port */
    int (*fwmark)(void *ctx, uint32_t mark);               /* 0: none */
    int (*replace_peers)(void *ctx);
    int (*peer)(void *ctx, const uint8_t pubkey[WG_KEY_LEN]);
    int (*peer_remove)(void *ctx);
    int (*peer_update_only)(void *ctx);
    int (*peer_preshared_key)(void *ctx, const uint8_t key[WG_KEY_LEN]);
    int (*peer_endpoint)(void *ctx, const struct sockaddr *sa, socklen_t len);
    int (*peer_keepalive)(void *ctx, uint16_t seconds);    /* 0: off */
    int (*peer_replace_allowed_ips)(void *ctx);
    /* family AF_INET (4 bytes of addr) or AF_INET6 (16); host bits may be
     * set, as `wg` allows: the routing table masks them. */
    int (*peer_allowed_ip)(void *ctx, int family, const uint8_t *addr, unsigned cidr);
    int (*peer_protocol_version)(void *ctx, unsigned version);
};

/* Frames one request at the start of buf[0..len). On success returns 0,
 * sets *op, and *consumed to the length of the whole request (the caller
 * drops that many bytes; more may follow). For UAPI_SET the body for
 * uapi_apply_set is buf[UAPI_OP_LINE_LEN .. *consumed). Returns -EAGAIN when
 * the request is not complete yet, -EINVAL when it is not a request (unknown
 * operation, or bytes between "get=1\n" and its empty line), -EMSGSIZE when
 * no complete request fits in UAPI_MAX_REQUEST bytes. */
int uapi_parse_request(const char *buf, size_t len, enum uapi_op *op, size_t *consumed);

/* Applies the body of a `set`: "key=value\n" lines, optionally ended by an
 * empty line that must then be the last byte. The whole body is validated
 * before the first callback runs, so a malformed request changes nothing.
 * Returns 0; -EPROTO for a line without '=' or without its newline, or bytes
 * after the empty line; -EINVAL for an unknown or unsupported key, an
 * interface key inside a peer section, a peer key before any public_key, or
 * a value out of its syntax or range; or a callback's negative return. */
int uapi_apply_set(const char *body, size_t len, const struct uapi_set_ops *ops, void *ctx);

/* A response being written into p[0..cap). Each uapi_put_* appends one whole
 * line or nothing: when it does not fit, overflow is set and stays set, and
 * every later put writes nothing, so a truncated response is never sent by
 * mistake. The text is not NUL-terminated. */
struct uapi_buf {
    char *p;
    size_t len, cap;
    bool overflow;
};

void uapi_buf_init(struct uapi_buf *b, char *p, size_t cap);
/* "key=<64 lowercase hex>\n" */
int uapi_put_key(struct uapi_buf *b, const char *key, const uint8_t k[WG_KEY_LEN]);
/* "key=<decimal>\n" */
int uapi_put_u64(struct uapi_buf *b, const char *key, uint64_t v);
/* "key=s\n"; s must not contain a newline. */
int uapi_put_str(struct uapi_buf *b, const char *key, const char *s);
/* "endpoint=1.2.3.4:51820\n" or "endpoint=[fe80::1%2]:51820\n" (numeric
 * scope), from a sockaddr_in or sockaddr_in6. */
int uapi_put_endpoint(struct uapi_buf *b, const struct sockaddr *sa);
/* "allowed_ip=10.0.0.0/24\n" */
int uapi_put_allowed_ip(struct uapi_buf *b, int family, const uint8_t *addr, unsigned cidr);
/* "errno=N\n\n", closing a response. err is 0 or a negative errno and is
 * written negative, as wireguard-go does: `wg set` reports -N as errno. */
int uapi_put_errno(struct uapi_buf *b, int err);
/* All of them return 0, -ENOBUFS (overflow, now or before), or -EINVAL for a
 * bad argument (NULL, a key that is empty or holds '=' or a newline, a
 * family other than AF_INET/AF_INET6, a cidr beyond the family's bits). */

#endif
