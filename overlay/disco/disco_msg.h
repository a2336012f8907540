/* SPDX-License-Identifier: MIT */
/* The discovery ("disco") message codec: the wire format of the messages
 * nodes exchange inside the overlay to learn endpoints, punch holes, probe
 * paths and relay WireGuard messages, and the inner IP packet that carries
 * them. Pure functions over bytes: no sockets, no state, no allocation.
 * Decoding is strict, so that a message that decodes has exactly one
 * encoding (decode then encode gives back the same bytes).
 *
 * Transport. A disco message is the payload of an inner IPv4 or IPv6 packet
 * from one node's overlay address to another's, IP protocol (IPv6 next
 * header) DISCO_IP_PROTO (253, RFC 3692 experimental), sealed with the
 * WireGuard session like any inner packet; a plain WireGuard peer hands it
 * to its kernel, which drops it. The IPv4 header we write has no options,
 * TOS 0, id 0, DF set, TTL 64; the IPv6 header traffic class 0, flow label
 * 0, hop limit 64, no extension headers.
 *
 * Integers are big-endian. Offsets are in bytes.
 *
 * Header (8 bytes), then exactly `body length` bytes of body:
 *   0  4  magic "DDPD" (44 44 50 44)
 *   4  1  version, DISCO_VERSION (1)
 *   5  1  type (enum disco_type)
 *   6  2  body length
 *
 * Endpoint (7 bytes for IPv4, 19 for IPv6):
 *   0  1  family: 4 or 6 (DISCO_FAMILY_IPV4, DISCO_FAMILY_IPV6)
 *   1  4|16  address
 *   5|17  2  port, never 0
 *   The address is never all zeros; an IPv4 address is always family 4,
 *   never an IPv4-mapped IPv6 address (::ffff:a.b.c.d).
 *
 * ENDPOINTS (1) body, what the sender knows, sent to each peer it has a
 * session with. Large meshes send several ENDPOINTS messages, each with
 * some of the peer records (see disco_encoded_len):
 *   1  flags: bit 0 (DISCO_F_OBSERVED) the observed endpoint follows;
 *      other bits zero
 *   [endpoint]  where the sender sees the receiver's packets come from
 *   1  n_local (0..DISCO_MAX_LOCAL)
 *   n_local x endpoint  the sender's own local candidate addresses
 *   2  n_peers (0..DISCO_MAX_PEERS)
 *   n_peers x peer record:
 *     32  the peer's public key
 *     1   flags: bit 0 (DISCO_PEER_F_OBSERVED) the observed endpoint
 *         follows; bit 1 (DISCO_PEER_F_DIRECT) the sender has a direct
 *         session with that peer; other bits zero
 *     [endpoint]  where the sender sees that peer's packets come from
 *     1   n_local (0..DISCO_MAX_LOCAL)
 *     n_local x endpoint  that peer's local candidates
 *
 * PUNCH (2) body, from an introducer: send handshakes to this peer's
 * candidates now (the peer is told the same about us at the same time):
 *   32  public key of the peer to punch to
 *   8   punch id (random; the same id goes to both sides)
 *   1   n (1..DISCO_MAX_CANDIDATES)
 *   n x endpoint  the peer's candidates
 *
 * PING (3) body, at least 9 bytes:
 *   8  transaction id
 *   1  flags, carried unchanged (their meaning is the engine's)
 *   n  padding: zero bytes, to give a path MTU probe its size
 *
 * PONG (4) body:
 *   8  transaction id of the ping answered
 *   1  flags: bit 0 (DISCO_PONG_F_SOURCE) the endpoint follows; other bits
 *      zero (absent when the ping came through a relay)
 *   [endpoint]  where the ping came from, as the answering node saw it
 *
 * RELAY (5) body, to a relay: forward this WireGuard message to a peer:
 *   32  public key of the destination
 *   n   the enclosed WireGuard message, the rest of the body
 * RELAYED (6) body, from a relay: this WireGuard message came from a peer:
 *   32  public key of the source
 *   n   the enclosed WireGuard message, the rest of the body
 *   The enclosed message (1..DISCO_MAX_ENCLOSED bytes) starts with a
 *   WireGuard type 1..4 and three zero bytes, and has that type's length:
 *   initiation 148, response 92, cookie reply 64, transport at least 32.
 *   RELAY and RELAYED bodies have the same size, so a relay may rewrite
 *   one into the other in place (disco_encode copies with memmove).
 *
 * NAMES (7) body, the names the sender's machine goes by (its hostname,
 * its FQDN), which the receiver may map to the sender's overlay address:
 *   1   n (1..DISCO_MAX_NAMES)
 *   n x name:
 *     1   length (1..DISCO_NAME_MAX)
 *     n   letters, digits, '-' and '.', neither first nor last a '-' or '.'
 *
 * FEATURES (8) body, what the sender's daemon takes on the session the
 * message came in (sent at the start of each session, and with ENDPOINTS):
 *   4   flags: bit 0 (DISCO_FEAT_RELAY_FRAMES) relay frames
 *       (crypto/relay_frame.h), to it as a relay and from it as one; bit 1
 *       (DISCO_FEAT_RECORD) the sender states its registry record (RECORD)
 *       when it has one, so a receiver waits for that word before it
 *       counts the record; bit 2 (DISCO_FEAT_DATA_FRAMES) relay frames'
 *       data frames (relay_frame.h) too, with bit 0; bit 3
 *       (DISCO_FEAT_SHARD_HINTS) the sender's receive steers transport
 *       messages by the shard hint (crypto/wg_const.h), so that the
 *       sender's shard may put it there; bit 4 (DISCO_FEAT_FLOWS) the
 *       sender takes transport messages from the receiver's extra source
 *       ports (byte 3, wg_const.h) as more flows of the receiver's, not
 *       as a roam; bit 5 (DISCO_FEAT_FLOWS_HEARD) one of them reached it
 *       on this session, so that the receiver may spread its traffic
 *       over them (overlay/engine/paths/path.c: path_flows); other bits
 *       are for later versions, kept as they are and not acted on.
 *   A node that predates FEATURES drops it as an unknown type, and never
 *   gets a frame.
 *
 * RECORD (9) body, the sender's own registry record as it put it in etcd
 * (overlay/registry/vouch.h): sent on each session and with ENDPOINTS by
 * a node that joined through the registry:
 *   32  the record's digest (vouch_digest)
 *   A node that predates RECORD drops it as an unknown type (and says
 *   FEATURES without DISCO_FEAT_RECORD, so its own record is taken as etcd
 *   holds it).
 *
 * CERT (10) body, one statement of the cluster's authority in its text
 * form (config/cert.h: a member certificate or a revocation): the sender's
 * own certificate, presented inside the tunnel when it joins with no
 * server, or a valid statement it passes on:
 *   n   1..DISCO_CERT_MAX bytes, each printable ASCII other than a space
 *       (0x21..0x7e), no NUL; the receiver parses and verifies it
 *   A node that predates CERT drops it as an unknown type.
 *
 * REVOKED (11) body, a digest of the authority's revocations the sender
 * holds (signed ones, as it passes them on), said on every session with
 * an authority so that a peer holding others says them all (paced, as
 * CERTs; membership/revocations.h):
 *   2   how many (at most 65535)
 *   16  BLAKE2b-128 of the 32-byte ids they name, sorted, one after another
 *   A node that predates REVOKED drops it as an unknown type; it still
 *   hears the latest revocations on every session, as before.
 */
#ifndef DDPNET_DISCO_MSG_H
#define DDPNET_DISCO_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "crypto/wg_const.h"

#define DISCO_IP_PROTO        253u   /* RFC 3692 experimental protocol number */
#define DISCO_MAGIC           "DDPD"
#define DISCO_MAGIC_LEN       4u
#define DISCO_VERSION         1u
#define DISCO_HEADER_LEN      8u     /* magic, version, type, body length */

#define DISCO_MAX_LOCAL       8u     /* local candidates of one node */
#define DISCO_MAX_PEERS       64u    /* peer records in one ENDPOINTS */
#define DISCO_MAX_CANDIDATES  16u    /* candidates in one PUNCH */
#define DISCO_TXID_LEN        8u     /* PING/PONG transaction id, PUNCH id */
/* A transport message carrying the largest inner packet the device takes
 * (9000 bytes, DEVICE_MTU_MAX) with its 32 bytes of header and tag, its
 * padding, and room to spare. */
#define DISCO_MAX_ENCLOSED    (9000u + 64u)

/* Endpoint family bytes on the wire (not AF_* values). */
#define DISCO_FAMILY_IPV4     4u
#define DISCO_FAMILY_IPV6     6u
#define DISCO_ADDR_MAX        16u
#define DISCO_ENDPOINT_V4_LEN 7u     /* family, 4 address bytes, port */
#define DISCO_ENDPOINT_V6_LEN 19u    /* family, 16 address bytes, port */

#define DISCO_F_OBSERVED      0x01u  /* ENDPOINTS flags */
#define DISCO_PEER_F_OBSERVED 0x01u  /* peer record flags */
#define DISCO_PEER_F_DIRECT   0x02u
#define DISCO_PONG_F_SOURCE   0x01u  /* PONG flags */

/* Largest encodings, for buffers: the largest message is an ENDPOINTS
 * with every count at its maximum and every endpoint IPv6. */
#define DISCO_PEER_MAX_LEN    (WG_KEY_LEN + 1u + DISCO_ENDPOINT_V6_LEN + 1u + \
                               DISCO_MAX_LOCAL * DISCO_ENDPOINT_V6_LEN)
#define DISCO_MAX_LEN         (DISCO_HEADER_LEN + 1u + DISCO_ENDPOINT_V6_LEN + 1u + \
                               DISCO_MAX_LOCAL * DISCO_ENDPOINT_V6_LEN + 2u + \
                               DISCO_MAX_PEERS * DISCO_PEER_MAX_LEN)
#define DISCO_IP_HEADER_MAX   40u    /* the IPv6 header; IPv4's is 20 */

enum disco_type {
    DISCO_ENDPOINTS = 1,
    DISCO_PUNCH = 2,
    DISCO_PING = 3,
    DISCO_PONG = 4,
    DISCO_RELAY = 5,
    DISCO_RELAYED = 6,
    DISCO_NAMES = 7,
    DISCO_FEATURES = 8,
    DISCO_RECORD = 9,
    DISCO_CERT = 10,
    DISCO_REVOKED = 11,
};
#define DISCO_TYPE_COUNT      12u    /* types are below this */

#define DISCO_FEAT_RELAY_FRAMES 0x01u   /* FEATURES flags */
#define DISCO_FEAT_RECORD       0x02u
#define DISCO_FEAT_DATA_FRAMES  0x04u
#define DISCO_FEAT_SHARD_HINTS  0x08u
#define DISCO_FEAT_FLOWS        0x10u
#define DISCO_FEAT_FLOWS_HEARD  0x20u
#define DISCO_RECORD_LEN        32u     /* a RECORD's digest */
/* A CERT's longest text: config/cert.h's CERT_TEXT_MAX (disco_msg.c
 * checks they agree; disco sits below config's users, not on cert.h). */
#define DISCO_CERT_MAX          1400u
#define DISCO_REVOKED_LEN       16u     /* a REVOKED's digest */

struct disco_revoked {
    uint16_t count;
    uint8_t digest[DISCO_REVOKED_LEN];
};

#define DISCO_MAX_NAMES       2u     /* hostname and FQDN */
#define DISCO_NAME_MAX        63u    /* as a hosts block takes them */

struct disco_names {
    uint8_t n;
    char name[DISCO_MAX_NAMES][DISCO_NAME_MAX + 1];   /* NUL-terminated */
};

/* Whether name (NUL-terminated) may go in a NAMES message. */
bool disco_name_valid(const char *name);

/* An IPv4 endpoint uses addr[0..3]; decoding zeroes the other bytes. */
struct disco_endpoint {
    uint8_t family;                      /* DISCO_FAMILY_IPV4 or _IPV6 */
    uint8_t addr[DISCO_ADDR_MAX];        /* network byte order */
    uint16_t port;                       /* host byte order */
};

struct disco_peer {
    uint8_t key[WG_KEY_LEN];
    bool has_observed;
    bool direct;                         /* the sender has a direct session */
    struct disco_endpoint observed;
    uint8_t n_local;
    struct disco_endpoint local[DISCO_MAX_LOCAL];
};

struct disco_endpoints {
    bool has_observed;
    struct disco_endpoint observed;      /* the receiver, as the sender sees it */
    uint8_t n_local;
    struct disco_endpoint local[DISCO_MAX_LOCAL];
    uint16_t n_peers;
    struct disco_peer peers[DISCO_MAX_PEERS];
};

struct disco_punch {
    uint8_t key[WG_KEY_LEN];
    uint64_t id;
    uint8_t n_cand;
    struct disco_endpoint cand[DISCO_MAX_CANDIDATES];
};

struct disco_ping {
    uint64_t txid;
    uint8_t flags;
    uint16_t pad;                        /* zero bytes after the flags */
};

struct disco_pong {
    uint64_t txid;
    bool has_source;
    struct disco_endpoint source;
};

/* RELAY: key is the destination; RELAYED: key is the source. After a
 * decode, msg points into the decoded bytes. */
struct disco_relay {
    uint8_t key[WG_KEY_LEN];
    const uint8_t *msg;
    uint16_t msg_len;
};

/* CERT: the statement's text, not NUL-terminated. After a decode, text
 * points into the decoded bytes. */
struct disco_cert {
    const char *text;
    uint16_t len;
};

/* About 14 KiB with the ENDPOINTS arm: keep one per context, not on a
 * deep stack. */
struct disco_msg {
    enum disco_type type;
    union {
        struct disco_endpoints endpoints;
        struct disco_punch punch;
        struct disco_ping ping;
        struct disco_pong pong;
        struct disco_relay relay;       /* DISCO_RELAY and DISCO_RELAYED */
        struct disco_names names;
        uint32_t features;              /* DISCO_FEATURES flags */
        uint8_t record[DISCO_RECORD_LEN];   /* DISCO_RECORD */
        struct disco_cert cert;             /* DISCO_CERT */
        struct disco_revoked revoked;       /* DISCO_REVOKED */
    };
};

/* Bytes disco_encode would write, or -EINVAL when the message cannot be
 * encoded (unknown type, a count over its maximum or a PUNCH without
 * candidates, an invalid endpoint, a RELAY/RELAYED message that is not
 * WireGuard). */
int disco_encoded_len(const struct disco_msg *m);

/* Whether msg[0..len) may be relayed: a WireGuard type 1..4, three zero
 * bytes and that type's length (RELAY, RELAYED and relay frames alike). */
bool disco_enclosed_ok(const uint8_t *msg, size_t len);
/* Writes the message; returns the bytes written, -EINVAL as above or
 * -EMSGSIZE when cap is too small (nothing useful is written then). */
int disco_encode(const struct disco_msg *m, uint8_t *out, size_t cap);
/* 0, or -EBADMSG for anything but exactly one well-formed message. RELAY
 * and RELAYED leave m->relay.msg pointing into `in`. Only the arm of the
 * union that m->type names is meaningful; on error *m is unspecified. */
int disco_decode(const uint8_t *in, size_t len, struct disco_msg *m);

/* Writes an inner IP packet carrying a disco payload from src_addr to
 * dst_addr (4 or 16 bytes by family, AF_INET or AF_INET6); returns its
 * length, -EINVAL for another family or -EMSGSIZE when it does not fit cap
 * or an IP length field. */
int disco_ip_wrap(int family, const uint8_t *src_addr, const uint8_t *dst_addr,
                  const uint8_t *payload, size_t len, uint8_t *out, size_t cap);
/* Recognises a disco packet among inner IP packets. len may include bytes
 * after the IP packet's own length (WireGuard padding); they are ignored.
 * 0: a well-formed disco packet (protocol 253, no IPv4 options or
 * fragments, valid IPv4 header checksum, lengths consistent), *family is
 * AF_INET or AF_INET6, the pointers point into pkt. -ENOENT: an IP packet
 * of another protocol (not looked at further). -EBADMSG: too short to be an
 * IP packet, not IP version 4 or 6, or a malformed disco packet. */
int disco_ip_parse(const uint8_t *pkt, size_t len, int *family,
                   const uint8_t **src, const uint8_t **dst,
                   const uint8_t **payload, size_t *plen);

/* Whether the endpoint may be put on the wire (see the endpoint rules). */
bool disco_endpoint_valid(const struct disco_endpoint *e);
/* Same family, address and port. */
bool disco_endpoint_equal(const struct disco_endpoint *a, const struct disco_endpoint *b);
/* From a sockaddr_in or sockaddr_in6 (an IPv4-mapped IPv6 address becomes
 * an IPv4 endpoint; the IPv6 scope id is dropped). 0, -EAFNOSUPPORT for
 * another family, -EINVAL when len is short for its family or the result
 * is not a valid endpoint. */
int disco_endpoint_from_sockaddr(struct disco_endpoint *e, const struct sockaddr *sa,
                                 socklen_t len);
/* Writes a sockaddr_in or sockaddr_in6 (zeroed first) into sa; returns its
 * length, -EINVAL for an invalid endpoint or -EMSGSIZE when cap is short. */
int disco_endpoint_to_sockaddr(const struct disco_endpoint *e, struct sockaddr *sa,
                               socklen_t cap);

#endif
