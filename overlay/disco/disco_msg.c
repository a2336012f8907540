/* SPDX-License-Identifier: MIT */
/* The disco codec (layout in disco_msg.h): strict decoding with a bounds-
 * checked reader, encoding after a sizing pass that validates everything,
 * and the inner IPv4/IPv6 packet that carries a disco message. */
#include "config/cert.h"
#include "overlay/base/wire.h"
#include "overlay/disco/disco_msg.h"

#include <errno.h>
#include <netinet/in.h>
#include <string.h>

/* Inner IP headers as disco writes and reads them. */
#define IP4_HEADER_LEN     20u
#define IP6_HEADER_LEN     40u
#define IP4_VERSION_IHL    0x45u     /* version 4, 5 words: no options */
#define IP6_VERSION_BYTE   0x60u     /* version 6, traffic class 0 */
#define IP_VERSION_SHIFT   4
#define IP_VERSION_4       4u
#define IP_VERSION_6       6u
#define IP4_IHL_MASK       0x0fu
#define IP4_FLAGS_DF       0x4000u
#define IP4_FRAG_MASK      0x3fffu   /* more-fragments and the offset */
#define IP_DEFAULT_TTL     64u
#define IP4_TOTLEN_OFF     2u
#define IP4_FRAG_OFF       6u
#define IP4_TTL_OFF        8u
#define IP4_PROTO_OFF      9u
#define IP4_CSUM_OFF       10u
#define IP4_SRC_OFF        12u
#define IP4_DST_OFF        16u
#define IP6_PAYLEN_OFF     4u
#define IP6_NEXT_OFF       6u
#define IP6_HOPS_OFF       7u
#define IP6_SRC_OFF        8u
#define IP6_DST_OFF        24u
#define IP4_ADDR_LEN       4u
#define IP6_ADDR_LEN       16u
#define IP_LEN_MAX         0xffffu   /* the 16-bit length fields */

/* Header fields. */
#define DISCO_VERSION_OFF  4u
#define DISCO_TYPE_OFF     5u
#define DISCO_BODYLEN_OFF  6u
/* The first bytes of a WireGuard message: its type, then three zeros. */
#define WG_PREFIX_LEN      4u

/* IPv4-mapped IPv6 addresses, ::ffff:0:0/96. */
static const uint8_t v4mapped_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
#define V4MAPPED_PREFIX_LEN sizeof(v4mapped_prefix)

_Static_assert(DISCO_MAX_LEN - DISCO_HEADER_LEN <= IP_LEN_MAX,
               "the largest ENDPOINTS body fits the 16-bit body length");
_Static_assert(WG_KEY_LEN + DISCO_MAX_ENCLOSED <= IP_LEN_MAX,
               "the largest RELAY body fits the 16-bit body length");
_Static_assert(DISCO_MAX_ENCLOSED <= UINT16_MAX, "msg_len is 16 bits");
_Static_assert(DISCO_MAX_PEERS <= UINT16_MAX && DISCO_MAX_LOCAL <= UINT8_MAX &&
               DISCO_MAX_CANDIDATES <= UINT8_MAX, "counts fit their fields");

/* --- endpoints --------------------------------------------------------------- */

static size_t addr_len(uint8_t family)
{
    if (family == DISCO_FAMILY_IPV4)
        return IP4_ADDR_LEN;
    if (family == DISCO_FAMILY_IPV6)
        return IP6_ADDR_LEN;
    return 0;
}

static bool all_zero(const uint8_t *p, size_t n)
{
    uint8_t acc = 0;

    for (size_t i = 0; i < n; i++)
        acc |= p[i];
    return acc == 0;
}

bool disco_endpoint_valid(const struct disco_endpoint *e)
{
    size_t alen = addr_len(e->family);

    if (alen == 0 || e->port == 0 || all_zero(e->addr, alen))
        return false;
    /* One encoding per address: IPv4 travels as family 4. */
    return !(e->family == DISCO_FAMILY_IPV6 &&
             memcmp(e->addr, v4mapped_prefix, V4MAPPED_PREFIX_LEN) == 0);
}

bool disco_endpoint_equal(const struct disco_endpoint *a, const struct disco_endpoint *b)
{
    size_t alen = addr_len(a->family);

    return a->family == b->family && a->port == b->port &&
           memcmp(a->addr, b->addr, alen) == 0;
}

static size_t endpoint_wire_len(const struct disco_endpoint *e)
{
    return e->family == DISCO_FAMILY_IPV4 ? DISCO_ENDPOINT_V4_LEN : DISCO_ENDPOINT_V6_LEN;
}

int disco_endpoint_from_sockaddr(struct disco_endpoint *e, const struct sockaddr *sa,
                                 socklen_t len)
{
    memset(e, 0, sizeof(*e));
    if (len < sizeof(sa->sa_family))
        return -EINVAL;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *in4 = (const struct sockaddr_in *)sa;

        if (len < sizeof(*in4))
            return -EINVAL;
        e->family = DISCO_FAMILY_IPV4;
        memcpy(e->addr, &in4->sin_addr, IP4_ADDR_LEN);
        e->port = ntohs(in4->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
        const uint8_t *a = in6->sin6_addr.s6_addr;

        if (len < sizeof(*in6))
            return -EINVAL;
        if (memcmp(a, v4mapped_prefix, V4MAPPED_PREFIX_LEN) == 0) {
            e->family = DISCO_FAMILY_IPV4;
            memcpy(e->addr, a + V4MAPPED_PREFIX_LEN, IP4_ADDR_LEN);
        } else {
            e->family = DISCO_FAMILY_IPV6;
            memcpy(e->addr, a, IP6_ADDR_LEN);
        }
        e->port = ntohs(in6->sin6_port);
    } else {
        return -EAFNOSUPPORT;
    }
    return disco_endpoint_valid(e) ? 0 : -EINVAL;
}

int disco_endpoint_to_sockaddr(const struct disco_endpoint *e, struct sockaddr *sa,
                               socklen_t cap)
{
    if (!disco_endpoint_valid(e))
        return -EINVAL;
    if (e->family == DISCO_FAMILY_IPV4) {
        struct sockaddr_in in4 = { .sin_family = AF_INET, .sin_port = htons(e->port) };

        if (cap < sizeof(in4))
            return -EMSGSIZE;
        memcpy(&in4.sin_addr, e->addr, IP4_ADDR_LEN);
        memcpy(sa, &in4, sizeof(in4));
        return (int)sizeof(in4);
    }
    struct sockaddr_in6 in6 = { .sin6_family = AF_INET6, .sin6_port = htons(e->port) };

    if (cap < sizeof(in6))
        return -EMSGSIZE;
    memcpy(in6.sin6_addr.s6_addr, e->addr, IP6_ADDR_LEN);
    memcpy(sa, &in6, sizeof(in6));
    return (int)sizeof(in6);
}

/* --- the enclosed WireGuard message ---------------------------------------------- */

/* A relay forwards only what could be WireGuard: the type, the three zero
 * bytes (a transport message's first two may be its shard bytes:
 * wg_const.h) and the length that type has. Authenticity is the final peer's
 * business; this only keeps arbitrary bytes off the relay path. */
static bool wg_message_ok(const uint8_t *msg, size_t len)
{
    if (msg == NULL || len < WG_PREFIX_LEN || len > DISCO_MAX_ENCLOSED ||
        msg[3] != 0 || ((msg[1] | msg[2]) && msg[0] != WG_MSG_TRANSPORT))
        return false;
    switch (msg[0]) {
    case WG_MSG_INITIATION:
        return len == WG_INITIATION_LEN;
    case WG_MSG_RESPONSE:
        return len == WG_RESPONSE_LEN;
    case WG_MSG_COOKIE_REPLY:
        return len == WG_COOKIE_REPLY_LEN;
    case WG_MSG_TRANSPORT:
        return len >= WG_TRANSPORT_MIN_LEN;
    default:
        return false;
    }
}

bool disco_enclosed_ok(const uint8_t *msg, size_t len)
{
    return wg_message_ok(msg, len);
}

/* --- sizing (validates everything encode relies on) ---------------------------- */

static int list_len(const struct disco_endpoint *list, unsigned n, unsigned max,
                    size_t *len)
{
    if (n > max)
        return -EINVAL;
    for (unsigned i = 0; i < n; i++) {
        if (!disco_endpoint_valid(&list[i]))
            return -EINVAL;
        *len += endpoint_wire_len(&list[i]);
    }
    return 0;
}

/* The optional endpoint and the count-prefixed local list shared by the
 * ENDPOINTS body and its peer records. */
static int observed_and_locals_len(bool has_observed, const struct disco_endpoint *observed,
                                   const struct disco_endpoint *local, unsigned n_local,
                                   size_t *len)
{
    *len += 2;                               /* flags, n_local */
    if (has_observed) {
        if (!disco_endpoint_valid(observed))
            return -EINVAL;
        *len += endpoint_wire_len(observed);
    }
    return list_len(local, n_local, DISCO_MAX_LOCAL, len);
}

static int endpoints_len(const struct disco_endpoints *e, size_t *len)
{
    int r = observed_and_locals_len(e->has_observed, &e->observed, e->local,
                                    e->n_local, len);

    if (r < 0)
        return r;
    if (e->n_peers > DISCO_MAX_PEERS)
        return -EINVAL;
    *len += 2;                               /* n_peers */
    for (unsigned i = 0; i < e->n_peers; i++) {
        const struct disco_peer *p = &e->peers[i];

        *len += WG_KEY_LEN;
        r = observed_and_locals_len(p->has_observed, &p->observed, p->local,
                                    p->n_local, len);
        if (r < 0)
            return r;
    }
    return 0;
}

static int punch_len(const struct disco_punch *p, size_t *len)
{
    if (p->n_cand == 0)
        return -EINVAL;
    *len += WG_KEY_LEN + DISCO_TXID_LEN + 1;
    return list_len(p->cand, p->n_cand, DISCO_MAX_CANDIDATES, len);
}

static int pong_len(const struct disco_pong *p, size_t *len)
{
    *len += DISCO_TXID_LEN + 1;
    if (!p->has_source)
        return 0;
    if (!disco_endpoint_valid(&p->source))
        return -EINVAL;
    *len += endpoint_wire_len(&p->source);
    return 0;
}

static bool name_char(uint8_t c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           c == '-' || c == '.';
}

static bool name_bytes_ok(const uint8_t *s, size_t len)
{
    if (len == 0 || len > DISCO_NAME_MAX || s[0] == '-' || s[0] == '.' ||
        s[len - 1] == '-' || s[len - 1] == '.')
        return false;
    for (size_t i = 0; i < len; i++)
        if (!name_char(s[i]))
            return false;
    return true;
}

bool disco_name_valid(const char *name)
{
    size_t len = strnlen(name, DISCO_NAME_MAX + 1);

    return name_bytes_ok((const uint8_t *)name, len);
}

static int names_len(const struct disco_names *n, size_t *len)
{
    if (n->n == 0 || n->n > DISCO_MAX_NAMES)
        return -EINVAL;
    *len = 1;
    for (unsigned i = 0; i < n->n; i++) {
        if (!disco_name_valid(n->name[i]))
            return -EINVAL;
        *len += 1 + strlen(n->name[i]);
    }
    return 0;
}

_Static_assert(DISCO_CERT_MAX == CERT_TEXT_MAX, "a CERT carries any statement");

/* A CERT's text: the statement alphabet, no spaces, bounded. */
static bool cert_text_ok(const uint8_t *t, size_t len)
{
    if (len == 0 || len > DISCO_CERT_MAX)
        return false;
    for (size_t i = 0; i < len; i++)
        if (t[i] < 0x21 || t[i] > 0x7e)
            return false;
    return true;
}

static int body_len(const struct disco_msg *m, size_t *len)
{
    *len = 0;
    switch (m->type) {
    case DISCO_ENDPOINTS:
        return endpoints_len(&m->endpoints, len);
    case DISCO_PUNCH:
        return punch_len(&m->punch, len);
    case DISCO_PING:
        *len = DISCO_TXID_LEN + 1u + m->ping.pad;
        return 0;
    case DISCO_PONG:
        return pong_len(&m->pong, len);
    case DISCO_RELAY:
    case DISCO_RELAYED:
        if (!wg_message_ok(m->relay.msg, m->relay.msg_len))
            return -EINVAL;
        *len = WG_KEY_LEN + (size_t)m->relay.msg_len;
        return 0;
    case DISCO_NAMES:
        return names_len(&m->names, len);
    case DISCO_FEATURES:
        *len = 4;
        return 0;
    case DISCO_RECORD:
        *len = DISCO_RECORD_LEN;
        return 0;
    case DISCO_CERT:
        if (!m->cert.text || !cert_text_ok((const uint8_t *)m->cert.text, m->cert.len))
            return -EINVAL;
        *len = m->cert.len;
        return 0;
    case DISCO_REVOKED:
        *len = 2u + DISCO_REVOKED_LEN;
        return 0;
    }
    return -EINVAL;
}

int disco_encoded_len(const struct disco_msg *m)
{
    size_t len;
    int r = body_len(m, &len);

    return r < 0 ? r : (int)(DISCO_HEADER_LEN + len);
}

/* --- writing (sizes already checked) ------------------------------------------- */

static uint8_t *put_u8(uint8_t *p, unsigned v)
{
    *p = (uint8_t)v;
    return p + 1;
}

static uint8_t *put_u16(uint8_t *p, unsigned v)
{
    p[0] = (uint8_t)(v >> 8);
    p[1] = (uint8_t)v;
    return p + 2;
}

static uint8_t *put_u64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < DISCO_TXID_LEN; i++)
        p[i] = (uint8_t)(v >> (8 * (DISCO_TXID_LEN - 1 - i)));
    return p + DISCO_TXID_LEN;
}

static uint8_t *put_bytes(uint8_t *p, const uint8_t *src, size_t n)
{
    memmove(p, src, n);
    return p + n;
}

static uint8_t *put_endpoint(uint8_t *p, const struct disco_endpoint *e)
{
    p = put_u8(p, e->family);
    p = put_bytes(p, e->addr, addr_len(e->family));
    return put_u16(p, e->port);
}

static uint8_t *put_list(uint8_t *p, const struct disco_endpoint *list, unsigned n)
{
    p = put_u8(p, n);
    for (unsigned i = 0; i < n; i++)
        p = put_endpoint(p, &list[i]);
    return p;
}

static uint8_t *put_peer(uint8_t *p, const struct disco_peer *peer)
{
    unsigned flags = (peer->has_observed ? DISCO_PEER_F_OBSERVED : 0) |
                     (peer->direct ? DISCO_PEER_F_DIRECT : 0);

    p = put_bytes(p, peer->key, WG_KEY_LEN);
    p = put_u8(p, flags);
    if (peer->has_observed)
        p = put_endpoint(p, &peer->observed);
    return put_list(p, peer->local, peer->n_local);
}

static uint8_t *put_endpoints(uint8_t *p, const struct disco_endpoints *e)
{
    p = put_u8(p, e->has_observed ? DISCO_F_OBSERVED : 0);
    if (e->has_observed)
        p = put_endpoint(p, &e->observed);
    p = put_list(p, e->local, e->n_local);
    p = put_u16(p, e->n_peers);
    for (unsigned i = 0; i < e->n_peers; i++)
        p = put_peer(p, &e->peers[i]);
    return p;
}

static uint8_t *put_body(uint8_t *p, const struct disco_msg *m)
{
    switch (m->type) {
    case DISCO_ENDPOINTS:
        return put_endpoints(p, &m->endpoints);
    case DISCO_PUNCH:
        p = put_bytes(p, m->punch.key, WG_KEY_LEN);
        p = put_u64(p, m->punch.id);
        return put_list(p, m->punch.cand, m->punch.n_cand);
    case DISCO_PING:
        p = put_u64(p, m->ping.txid);
        p = put_u8(p, m->ping.flags);
        memset(p, 0, m->ping.pad);
        return p + m->ping.pad;
    case DISCO_PONG:
        p = put_u64(p, m->pong.txid);
        p = put_u8(p, m->pong.has_source ? DISCO_PONG_F_SOURCE : 0);
        return m->pong.has_source ? put_endpoint(p, &m->pong.source) : p;
    case DISCO_RELAY:
    case DISCO_RELAYED:
        /* The enclosed message went first (disco_encode); only the key. */
        return put_bytes(p, m->relay.key, WG_KEY_LEN) + m->relay.msg_len;
    case DISCO_NAMES:
        p = put_u8(p, m->names.n);
        for (unsigned i = 0; i < m->names.n; i++) {
            size_t n = strlen(m->names.name[i]);
            p = put_u8(p, (unsigned)n);
            p = put_bytes(p, (const uint8_t *)m->names.name[i], n);
        }
        return p;
    case DISCO_FEATURES:
        p = put_u16(p, m->features >> 16);
        return put_u16(p, m->features & 0xffffu);
    case DISCO_RECORD:
        return put_bytes(p, m->record, DISCO_RECORD_LEN);
    case DISCO_CERT:
        return put_bytes(p, (const uint8_t *)m->cert.text, m->cert.len);
    case DISCO_REVOKED:
        p = put_u16(p, m->revoked.count);
        return put_bytes(p, m->revoked.digest, DISCO_REVOKED_LEN);
    }
    return p;
}

int disco_encode(const struct disco_msg *m, uint8_t *out, size_t cap)
{
    size_t len;
    int r = body_len(m, &len);

    if (r < 0)
        return r;
    if (cap < DISCO_HEADER_LEN + len)
        return -EMSGSIZE;
    /* The enclosed message first: it may sit in out already (a relay
     * turning RELAY into RELAYED in place), and memmove copes with that. */
    if (m->type == DISCO_RELAY || m->type == DISCO_RELAYED)
        memmove(out + DISCO_HEADER_LEN + WG_KEY_LEN, m->relay.msg, m->relay.msg_len);
    uint8_t *p = put_bytes(out, (const uint8_t *)DISCO_MAGIC, DISCO_MAGIC_LEN);
    p = put_u8(p, DISCO_VERSION);
    p = put_u8(p, m->type);
    p = put_u16(p, (unsigned)len);
    p = put_body(p, m);
    return (int)(p - out);
}

/* --- reading -------------------------------------------------------------------------- */

struct reader {
    const uint8_t *p;
    size_t left;
};

static bool take(struct reader *r, size_t n, const uint8_t **at)
{
    if (r->left < n)
        return false;
    *at = r->p;
    r->p += n;
    r->left -= n;
    return true;
}

static bool get_u8(struct reader *r, uint8_t *v)
{
    const uint8_t *at;

    if (!take(r, 1, &at))
        return false;
    *v = at[0];
    return true;
}

static bool get_u16(struct reader *r, uint16_t *v)
{
    const uint8_t *at;

    if (!take(r, 2, &at))
        return false;
    *v = (uint16_t)(at[0] << 8 | at[1]);
    return true;
}

static bool get_u64(struct reader *r, uint64_t *v)
{
    const uint8_t *at;

    if (!take(r, DISCO_TXID_LEN, &at))
        return false;
    *v = 0;
    for (unsigned i = 0; i < DISCO_TXID_LEN; i++)
        *v = *v << 8 | at[i];
    return true;
}

static bool get_bytes(struct reader *r, uint8_t *dst, size_t n)
{
    const uint8_t *at;

    if (!take(r, n, &at))
        return false;
    memcpy(dst, at, n);
    return true;
}

static bool get_endpoint(struct reader *r, struct disco_endpoint *e)
{
    size_t alen;

    memset(e, 0, sizeof(*e));
    if (!get_u8(r, &e->family) || (alen = addr_len(e->family)) == 0)
        return false;
    return get_bytes(r, e->addr, alen) && get_u16(r, &e->port) &&
           disco_endpoint_valid(e);
}

static bool get_list(struct reader *r, unsigned min, unsigned max,
                     uint8_t *n, struct disco_endpoint *list)
{
    if (!get_u8(r, n) || *n < min || *n > max)
        return false;
    for (unsigned i = 0; i < *n; i++)
        if (!get_endpoint(r, &list[i]))
            return false;
    return true;
}

/* A flags byte whose bits are all known; the optional endpoint it
 * announces (zeroed when absent, so equal messages compare equal). */
static bool get_flags(struct reader *r, unsigned known, uint8_t *flags)
{
    return get_u8(r, flags) && (*flags & ~known) == 0;
}

static bool get_optional(struct reader *r, bool present, struct disco_endpoint *e)
{
    if (present)
        return get_endpoint(r, e);
    memset(e, 0, sizeof(*e));
    return true;
}

static bool get_peer(struct reader *r, struct disco_peer *p)
{
    uint8_t flags;

    if (!get_bytes(r, p->key, WG_KEY_LEN) ||
        !get_flags(r, DISCO_PEER_F_OBSERVED | DISCO_PEER_F_DIRECT, &flags))
        return false;
    p->has_observed = flags & DISCO_PEER_F_OBSERVED;
    p->direct = flags & DISCO_PEER_F_DIRECT;
    return get_optional(r, p->has_observed, &p->observed) &&
           get_list(r, 0, DISCO_MAX_LOCAL, &p->n_local, p->local);
}

static bool get_endpoints(struct reader *r, struct disco_endpoints *e)
{
    uint8_t flags;

    if (!get_flags(r, DISCO_F_OBSERVED, &flags))
        return false;
    e->has_observed = flags & DISCO_F_OBSERVED;
    if (!get_optional(r, e->has_observed, &e->observed) ||
        !get_list(r, 0, DISCO_MAX_LOCAL, &e->n_local, e->local) ||
        !get_u16(r, &e->n_peers) || e->n_peers > DISCO_MAX_PEERS)
        return false;
    for (unsigned i = 0; i < e->n_peers; i++)
        if (!get_peer(r, &e->peers[i]))
            return false;
    return true;
}

static bool get_punch(struct reader *r, struct disco_punch *p)
{
    return get_bytes(r, p->key, WG_KEY_LEN) && get_u64(r, &p->id) &&
           get_list(r, 1, DISCO_MAX_CANDIDATES, &p->n_cand, p->cand);
}

static bool get_pong(struct reader *r, struct disco_pong *p)
{
    uint8_t flags;

    if (!get_u64(r, &p->txid) || !get_flags(r, DISCO_PONG_F_SOURCE, &flags))
        return false;
    p->has_source = flags & DISCO_PONG_F_SOURCE;
    return get_optional(r, p->has_source, &p->source);
}

/* The enclosed message is the rest of the body, left where it is. */
static bool get_relay(struct reader *r, struct disco_relay *rl)
{
    size_t n;

    if (!get_bytes(r, rl->key, WG_KEY_LEN))
        return false;
    n = r->left;
    if (!take(r, n, &rl->msg) || !wg_message_ok(rl->msg, n))
        return false;
    rl->msg_len = (uint16_t)n;
    return true;
}

/* The rest of the body, all zero (one encoding per message). */
static bool get_padding(struct reader *r, uint16_t *pad)
{
    const uint8_t *at;
    size_t n = r->left;

    if (!take(r, n, &at))
        return false;
    for (size_t i = 0; i < n; i++)
        if (at[i])
            return false;
    *pad = (uint16_t)n;
    return true;
}

static bool get_names(struct reader *r, struct disco_names *n)
{
    const uint8_t *at;
    uint8_t len;

    if (!get_u8(r, &n->n) || n->n == 0 || n->n > DISCO_MAX_NAMES)
        return false;
    for (unsigned i = 0; i < n->n; i++) {
        if (!get_u8(r, &len) || !take(r, len, &at) || !name_bytes_ok(at, len))
            return false;
        memcpy(n->name[i], at, len);
        n->name[i][len] = '\0';
    }
    return true;
}

static bool get_body(struct reader *r, uint8_t type, struct disco_msg *m)
{
    switch (type) {
    case DISCO_ENDPOINTS:
        return get_endpoints(r, &m->endpoints);
    case DISCO_PUNCH:
        return get_punch(r, &m->punch);
    case DISCO_PING:
        return get_u64(r, &m->ping.txid) && get_u8(r, &m->ping.flags) &&
               get_padding(r, &m->ping.pad);
    case DISCO_PONG:
        return get_pong(r, &m->pong);
    case DISCO_RELAY:
    case DISCO_RELAYED:
        return get_relay(r, &m->relay);
    case DISCO_NAMES:
        return get_names(r, &m->names);
    case DISCO_FEATURES: {
        uint64_t v = 0;
        uint8_t b;
        for (unsigned i = 0; i < 4; i++) {
            if (!get_u8(r, &b))
                return false;
            v = v << 8 | b;
        }
        m->features = (uint32_t)v;
        return true;
    }
    case DISCO_RECORD:
        return get_bytes(r, m->record, DISCO_RECORD_LEN);
    case DISCO_CERT: {
        size_t n = r->left;
        const uint8_t *at;
        if (!take(r, n, &at) || !cert_text_ok(at, n))
            return false;
        m->cert.text = (const char *)at;
        m->cert.len = (uint16_t)n;
        return true;
    }
    case DISCO_REVOKED:
        return get_u16(r, &m->revoked.count) &&
               get_bytes(r, m->revoked.digest, DISCO_REVOKED_LEN);
    default:
        return false;
    }
}

int disco_decode(const uint8_t *in, size_t len, struct disco_msg *m)
{
    if (len < DISCO_HEADER_LEN || memcmp(in, DISCO_MAGIC, DISCO_MAGIC_LEN) != 0 ||
        in[DISCO_VERSION_OFF] != DISCO_VERSION)
        return -EBADMSG;
    struct reader r = { in + DISCO_HEADER_LEN, len - DISCO_HEADER_LEN };
    size_t declared = (size_t)in[DISCO_BODYLEN_OFF] << 8 | in[DISCO_BODYLEN_OFF + 1];

    if (declared != r.left || !get_body(&r, in[DISCO_TYPE_OFF], m) || r.left != 0)
        return -EBADMSG;
    m->type = (enum disco_type)in[DISCO_TYPE_OFF];
    return 0;
}

/* --- the inner IP packet ---------------------------------------------------------------- */

/* RFC 1071: the one's complement of the one's complement sum of the
 * header's 16-bit words; 0 over a header whose checksum is right. */
static uint16_t ip4_checksum(const uint8_t *h)
{
    uint32_t sum = 0;

    for (size_t i = 0; i < IP4_HEADER_LEN; i += 2)
        sum += get_be16(h + i);
    while (sum >> 16)
        sum = (sum & UINT16_MAX) + (sum >> 16);
    return (uint16_t)~sum;
}

static void write_ip4(uint8_t *h, const uint8_t *src, const uint8_t *dst, size_t len)
{
    memset(h, 0, IP4_HEADER_LEN);
    h[0] = IP4_VERSION_IHL;
    put_u16(h + IP4_TOTLEN_OFF, (unsigned)(IP4_HEADER_LEN + len));
    put_u16(h + IP4_FRAG_OFF, IP4_FLAGS_DF);
    h[IP4_TTL_OFF] = IP_DEFAULT_TTL;
    h[IP4_PROTO_OFF] = DISCO_IP_PROTO;
    memcpy(h + IP4_SRC_OFF, src, IP4_ADDR_LEN);
    memcpy(h + IP4_DST_OFF, dst, IP4_ADDR_LEN);
    put_u16(h + IP4_CSUM_OFF, ip4_checksum(h));
}

static void write_ip6(uint8_t *h, const uint8_t *src, const uint8_t *dst, size_t len)
{
    memset(h, 0, IP6_HEADER_LEN);
    h[0] = IP6_VERSION_BYTE;
    put_u16(h + IP6_PAYLEN_OFF, (unsigned)len);
    h[IP6_NEXT_OFF] = DISCO_IP_PROTO;
    h[IP6_HOPS_OFF] = IP_DEFAULT_TTL;
    memcpy(h + IP6_SRC_OFF, src, IP6_ADDR_LEN);
    memcpy(h + IP6_DST_OFF, dst, IP6_ADDR_LEN);
}

int disco_ip_wrap(int family, const uint8_t *src_addr, const uint8_t *dst_addr,
                  const uint8_t *payload, size_t len, uint8_t *out, size_t cap)
{
    size_t hlen;

    if (family == AF_INET)
        hlen = IP4_HEADER_LEN;
    else if (family == AF_INET6)
        hlen = IP6_HEADER_LEN;
    else
        return -EINVAL;
    /* IPv4 counts its header in the total length, IPv6 does not. */
    if (len > IP_LEN_MAX - (family == AF_INET ? hlen : 0) || cap < hlen || len > cap - hlen)
        return -EMSGSIZE;
    /* The payload may already sit after the header's place. */
    memmove(out + hlen, payload, len);
    if (family == AF_INET)
        write_ip4(out, src_addr, dst_addr, len);
    else
        write_ip6(out, src_addr, dst_addr, len);
    return (int)(hlen + len);
}

static int parse_ip4(const uint8_t *pkt, size_t len, const uint8_t **src,
                     const uint8_t **dst, const uint8_t **payload, size_t *plen)
{
    size_t total;

    if (len < IP4_HEADER_LEN)
        return -EBADMSG;
    if (pkt[IP4_PROTO_OFF] != DISCO_IP_PROTO)
        return -ENOENT;
    total = get_be16(pkt + IP4_TOTLEN_OFF);
    /* We never send options or fragments; a disco packet with them is not ours. */
    if ((pkt[0] & IP4_IHL_MASK) != (IP4_VERSION_IHL & IP4_IHL_MASK) ||
        total < IP4_HEADER_LEN || total > len ||
        (get_be16(pkt + IP4_FRAG_OFF) & IP4_FRAG_MASK) != 0 || ip4_checksum(pkt) != 0)
        return -EBADMSG;
    *src = pkt + IP4_SRC_OFF;
    *dst = pkt + IP4_DST_OFF;
    *payload = pkt + IP4_HEADER_LEN;
    *plen = total - IP4_HEADER_LEN;
    return 0;
}

static int parse_ip6(const uint8_t *pkt, size_t len, const uint8_t **src,
                     const uint8_t **dst, const uint8_t **payload, size_t *plen)
{
    size_t paylen;

    if (len < IP6_HEADER_LEN)
        return -EBADMSG;
    if (pkt[IP6_NEXT_OFF] != DISCO_IP_PROTO)
        return -ENOENT;
    paylen = get_be16(pkt + IP6_PAYLEN_OFF);
    if (paylen > len - IP6_HEADER_LEN)
        return -EBADMSG;
    *src = pkt + IP6_SRC_OFF;
    *dst = pkt + IP6_DST_OFF;
    *payload = pkt + IP6_HEADER_LEN;
    *plen = paylen;
    return 0;
}

int disco_ip_parse(const uint8_t *pkt, size_t len, int *family,
                   const uint8_t **src, const uint8_t **dst,
                   const uint8_t **payload, size_t *plen)
{
    if (len == 0)
        return -EBADMSG;
    switch (pkt[0] >> IP_VERSION_SHIFT) {
    case IP_VERSION_4:
        *family = AF_INET;
        return parse_ip4(pkt, len, src, dst, payload, plen);
    case IP_VERSION_6:
        *family = AF_INET6;
        return parse_ip6(pkt, len, src, dst, payload, plen);
    default:
        return -EBADMSG;
    }
}
