/* SPDX-License-Identifier: MIT */
/* The cluster file: one text file shared by every node, parsed into a
 * validated in-memory model (the [cluster] settings and the nodes in file
 * order). Parsing collects every error of a file, each with its line, so a
 * person fixes them in one round. No I/O beyond reading the file: endpoint
 * hostnames are checked for form, never resolved. */
#ifndef DDPNET_CLUSTER_H
#define DDPNET_CLUSTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/rules.h"

#define CLUSTER_KEY_LEN       32u      /* a public key, as `wg pubkey` prints */
#define CLUSTER_NAME_MAX      63u      /* node name, one DNS label's length */
#define CLUSTER_HOST_MAX      253u     /* endpoint hostname, DNS limit */
/* More names a node is known by (`aliases = ...`): each a hostname of at
 * most CLUSTER_NAME_MAX characters, as the hosts block takes them. */
#define CLUSTER_ALIASES_MAX   4u
#define CLUSTER_REVOKED_MAX   256u     /* keys in `revoked`, all lines together */
#define CLUSTER_MAX_LINE      1024u    /* longer lines are an error */
#define CLUSTER_MAX_FILE      (1u << 20) /* cluster_load refuses bigger files */
/* A file within CLUSTER_MAX_FILE holds fewer complete nodes than this; the
 * cap bounds the memory a malformed file of empty sections can take. */
#define CLUSTER_MAX_NODES     16384u
#define CLUSTER_DIAG_MAX      64u      /* errors kept per file */
#define CLUSTER_DIAG_MSG_LEN  200u

#define CLUSTER_MTU_DEFAULT   1420u
#define CLUSTER_MTU_MIN_IPV4  576u     /* RFC 791 minimum reassembly size */
#define CLUSTER_MTU_MIN_IPV6  1280u    /* RFC 8200 minimum link MTU */
/* The largest the engine supports (engine/model/device.h's DEVICE_MTU_MAX, which
 * the daemon asserts is the same): a larger one is the file's error, so
 * that `check` refuses what `up` would. */
#define CLUSTER_MTU_MAX       9000u
#define CLUSTER_PORT_MAX      65535u
#define CLUSTER_KEEPALIVE_MAX 65535u   /* seconds; 0 means off */
/* busy-poll: microseconds a daemon keeps polling after a packet that ends
 * an idle spell, instead of sleeping, while nothing else wants its CPU
 * (overlay/loop/busy_poll.h); 0 is off. The default outlasts the gaps of
 * an exchange at 50 Hz or more. `busy-poll = always`
 * (CLUSTER_BUSY_POLL_ALWAYS, above any count): the daemon never sleeps, a
 * core's worth of CPU for the shortest round trip. */
#define CLUSTER_BUSY_POLL_DEFAULT 20000u
#define CLUSTER_BUSY_POLL_MAX     60000u
#define CLUSTER_BUSY_POLL_ALWAYS  65535u
/* socket-buffer: bytes of receive buffer, and as many of send buffer, the
 * daemon asks for each of its UDP sockets (the kernel books twice that, for
 * its own overhead per datagram). A burst of a long fat path must fit while
 * the daemon drains slower than the wire: the default holds one
 * bandwidth-delay product of 1 Gbit/s over 80 ms (10 MB) with room to
 * spare, 16 MiB asked, 32 MiB booked, and costs memory only while the
 * queue is full. Written as bytes or with a K, M or G suffix (binary). */
#define CLUSTER_SOCKET_BUFFER_DEFAULT (16u << 20)
#define CLUSTER_SOCKET_BUFFER_MIN     (64u << 10)
#define CLUSTER_SOCKET_BUFFER_MAX     (1u << 30)

/* An IPv4 (first 4 bytes used) or IPv6 address; family is AF_INET or
 * AF_INET6. */
struct cluster_addr {
    int family;
    uint8_t bytes[16];
};

/* `machine-domains = D1, D2`: the domains under which a member may claim a
 * dotted machine name (its FQDN) for its own address; a name of one label
 * needs none. Absent: CLUSTER_MACHINE_DOMAINS_DEFAULT (cloud FQDNs such as
 * ip-10-0-0-1.ec2.internal, gpu-1.c.PROJECT.internal); `none`: no dotted
 * machine name at all. */
#define CLUSTER_MACHINE_DOMAINS_MAX     8u
#define CLUSTER_MACHINE_DOMAINS_DEFAULT "internal"
struct cluster_domains {
    uint8_t n;
    bool set;                             /* the key was written */
    char name[CLUSTER_MACHINE_DOMAINS_MAX][CLUSTER_HOST_MAX + 1];
};

/* Where the Prometheus endpoint listens (`metrics = ADDRESS:PORT`): off,
 * an IP literal, or `overlay:PORT`, each node's own overlay address (one
 * line that fits every node of a shared file). */
enum cluster_metrics_at { CLUSTER_METRICS_OFF, CLUSTER_METRICS_ADDRESS, CLUSTER_METRICS_OVERLAY };
struct cluster_metrics {
    enum cluster_metrics_at at;
    struct cluster_addr addr;             /* CLUSTER_METRICS_ADDRESS */
    uint16_t port;
    /* `metrics-public = yes`: an address that is neither loopback nor the
     * overlay's is accepted (the counters are then anyone's to read). */
    bool public_ok;
};

/* Where a node is reached: an IP literal (literal set, addr filled) or a
 * hostname that the daemon resolves later. host holds the text as written,
 * without brackets. */
struct cluster_endpoint {
    char host[CLUSTER_HOST_MAX + 3];
    uint16_t port;
    bool literal;
    struct cluster_addr addr;
};

/* Where a registered node may be reached, by its own record
 * (overlay/registry/record.h): an IP literal and a port. Never from the
 * cluster file. */
#define CLUSTER_CANDIDATES_MAX 8u
struct cluster_cand {
    struct cluster_addr addr;
    uint16_t port;
};

/* `registry = etcd://HOST:PORT[,HOST:PORT...]/PREFIX`: membership kept in
 * etcd under PREFIX (overlay/registry/), reached over TLS when any of ca,
 * cert or key is set, with a user and the password in a file when user
 * is set. Paths are as written (the daemon reads them at up). */
#define CLUSTER_REGISTRY_ENDPOINTS_MAX 8u
#define CLUSTER_REGISTRY_PREFIX_MAX    128u
#define CLUSTER_PATH_MAX               255u
#define CLUSTER_USER_MAX               64u
#define CLUSTER_REGISTRY_TTL_DEFAULT   15u
#define CLUSTER_REGISTRY_TTL_MIN       5u
#define CLUSTER_REGISTRY_TTL_MAX       3600u
struct cluster_registry {
    size_t n_endpoints;                   /* 0: no registry */
    struct cluster_endpoint endpoints[CLUSTER_REGISTRY_ENDPOINTS_MAX];
    char prefix[CLUSTER_REGISTRY_PREFIX_MAX + 1];   /* "/ddpnet/prod", no trailing '/' */
    char ca[CLUSTER_PATH_MAX + 1], cert[CLUSTER_PATH_MAX + 1], key[CLUSTER_PATH_MAX + 1];
    char user[CLUSTER_USER_MAX + 1], password_file[CLUSTER_PATH_MAX + 1];
    unsigned ttl_s;                       /* lease time-to-live */
    /* `registry-insecure = yes`: a user's password may go over plain
     * http:// (refused otherwise: it would cross the network in clear). */
    bool insecure;
};

/* A prefix the file grants a node to carry (`routes = ...`; config/routes.h
 * holds the rules): host bits clear. */
#define CLUSTER_ROUTES_MAX       8u     /* per node */
#define CLUSTER_ROUTES_TOTAL_MAX 256u   /* in the whole file */
struct cluster_route {
    struct cluster_addr net;
    uint8_t prefix;
};

struct cluster_node {
    char name[CLUSTER_NAME_MAX + 1];
    uint8_t public_key[CLUSTER_KEY_LEN];
    struct cluster_addr address;          /* overlay address */
    bool has_endpoint;
    struct cluster_endpoint endpoint;
    uint16_t port;                        /* listen port override, 0 if none */
    /* Keepalive towards this node, overriding [cluster]'s when set. */
    uint16_t persistent_keepalive;
    bool keepalive_set;
    uint8_t n_aliases;
    char aliases[CLUSTER_ALIASES_MAX][CLUSTER_NAME_MAX + 1];
    /* The prefixes it carries for the cluster (the file's grant only: a
     * registered node has none). */
    uint8_t n_routes;
    struct cluster_route routes[CLUSTER_ROUTES_MAX];
    /* `masquerade = no`: it forwards its routes without rewriting the
     * source (the hosts behind it route the overlay back to it). */
    bool routed;
    /* `route-names = NAME=ADDRESS ...`: hosts behind its routes, named in
     * every node's hosts block (each address inside one of its routes). */
    uint8_t n_route_names;
    struct cluster_route_name {
        char name[CLUSTER_NAME_MAX + 1];
        struct cluster_addr addr;
    } route_names[CLUSTER_ALIASES_MAX];
    /* A registered node's candidates (its record's; none for the file's
     * nodes): its own addresses in its order of preference, and where a
     * member saw its packets come from (its NAT's mapping). Hints, tried
     * as discovery tries any member's word. */
    uint8_t n_candidates;
    struct cluster_cand candidates[CLUSTER_CANDIDATES_MAX];
    bool has_observed;
    struct cluster_cand observed;
    /* `groups = a, b` (config/rules.h): bits of the cluster's rules'
     * group names; 0 for none. */
    uint64_t groups;
    int line;                             /* line of the [node NAME] header */
};

struct cluster {
    struct cluster_addr network;
    unsigned prefix;
    uint16_t port;                        /* listen port of every node */
    uint16_t mtu;                         /* CLUSTER_MTU_DEFAULT unless set */
    bool mtu_set;
    uint16_t persistent_keepalive;        /* seconds, 0 = off */
    uint16_t busy_poll_us;                /* CLUSTER_BUSY_POLL_DEFAULT unless set */
    bool busy_poll_set;
    uint32_t socket_buffer;               /* bytes; CLUSTER_SOCKET_BUFFER_DEFAULT unless set */
    bool socket_buffer_set;
    bool hostnames_off;                   /* `hostnames = off`: machines' names not shared */
    struct cluster_domains machine_domains;
    struct cluster_metrics metrics;
    struct cluster_registry registry;
    /* `authority = KEY`: the cluster authority's Ed25519 public key
     * (base64, as `ddpnet authority init` prints it). With it, a node
     * the file does not list counts only with a certificate that key
     * signed (config/cert.h; README "Joining under an authority"). */
    bool has_authority;
    uint8_t authority[CLUSTER_KEY_LEN];
    /* `authority = KEY NEXT`: a second key trusted beside it for the time
     * of a rotation (issue 56; docs/authority.md, "Rotating the
     * authority's key"): a certificate or revocation either signed
     * counts. */
    bool has_authority_next;
    uint8_t authority_next[CLUSTER_KEY_LEN];
    /* `revoked = KEY...` (the key may repeat; with `authority` only):
     * WireGuard public keys the cluster refuses whatever certificate they
     * show -- the operator's blocklist, beside the authority's signed
     * revocations, kept where the cluster file is. */
    size_t n_revoked;
    uint8_t revoked[CLUSTER_REVOKED_MAX][CLUSTER_KEY_LEN];
    /* [rules] (config/rules.h): who may open what on whom, and every
     * group name the file uses; n 0 when the file writes none. */
    struct cluster_rules rules;
    int rules_line;                       /* the [rules] header, 0 = none */
    size_t n_nodes;                       /* at least 1 after a parse */
    struct cluster_node *nodes;           /* file order; nodes[0] = master */
};

/* Errors of one file in line order. line 0 is about the file as a whole
 * (no [cluster], no node, too many nodes). When more than CLUSTER_DIAG_MAX were found the
 * first ones by line are kept and dropped counts the rest. */
struct cluster_diag_item {
    int line;
    char message[CLUSTER_DIAG_MSG_LEN];
};

struct cluster_diag {
    size_t n;
    size_t dropped;
    struct cluster_diag_item items[CLUSTER_DIAG_MAX];
};

/* Parses len bytes of text. Returns 0 with *out filled (release it with
 * cluster_free), or -EINVAL with every error in *diag and *out zeroed,
 * -ENOMEM when memory ran out. diag may be NULL. */
int cluster_parse(const char *text, size_t len, struct cluster *out,
                  struct cluster_diag *diag);
/* Reads path (at most CLUSTER_MAX_FILE bytes) and parses it. Returns as
 * cluster_parse, or -errno when the file cannot be read (-EISDIR for a
 * directory, -EFBIG when too big); diag then holds no items. */
int cluster_load(const char *path, struct cluster *out,
                 struct cluster_diag *diag);
/* The bytes of the file at path, as cluster_load reads them, in a new
 * buffer (*text, *len): 0 or -errno (-EISDIR, -EFBIG as cluster_load). */
int cluster_read(const char *path, char **text, size_t *len);
void cluster_free(struct cluster *c);

/* "FILE:LINE: message" (or "FILE: message" for line 0) into buf. Returns
 * 0, -ENOSPC when truncated, -EINVAL when i is out of range. */
int cluster_diag_format(const struct cluster_diag *diag, size_t i,
                        const char *file, char *buf, size_t len);

/* Lookups; NULL when no node matches. Key comparison runs in constant time
 * per node and visits every node. Names match case-insensitively. */
const struct cluster_node *cluster_find_key(const struct cluster *c,
                                            const uint8_t key[CLUSTER_KEY_LEN]);
const struct cluster_node *cluster_find_name(const struct cluster *c,
                                             const char *name);
const struct cluster_node *cluster_find_address(const struct cluster *c,
                                                const struct cluster_addr *a);
/* The UDP port node n listens on: its override, else the cluster's. */
int cluster_node_port(const struct cluster *c, const struct cluster_node *n);
/* The persistent keepalive towards node n (seconds, 0 = off): its own,
 * else the cluster's. */
unsigned cluster_node_keepalive(const struct cluster *c, const struct cluster_node *n);

/* What a member may claim by its own word, as far as the name alone tells
 * (a machine name it says it goes by, the node name it registers in etcd):
 * never a reserved name (cluster_name_reserved), and a dotted name only
 * under one of c's machine-domains. Whether the node already resolves the
 * name otherwise is the hosts writer's check (membership/hosts_writer.h). */
bool cluster_claim_ok(const struct cluster *c, const char *name);
/* `localhost` and every form of it (localhost6, localhost.localdomain,
 * *.localhost: RFC 6761), and the `ip6-*` names Debian's hosts file gives
 * loopback and multicast (ip6-localhost, ip6-loopback, ip6-allnodes...):
 * names every machine resolves to itself, which no member may take. */
bool cluster_name_reserved(const char *name);

/* Text forms: "10.77.0.1", "fd77::1"; endpoints "host:port", "[v6]:port".
 * Return 0, -ENOSPC when buf is too small, -EAFNOSUPPORT for a bad
 * family. */
int cluster_addr_format(const struct cluster_addr *a, char *buf, size_t len);
int cluster_endpoint_format(const struct cluster_endpoint *e, char *buf,
                            size_t len);

/* Whether c trusts key as its authority (`authority = KEY [NEXT]`). */
bool cluster_authority_trusts(const struct cluster *c, const uint8_t key[CLUSTER_KEY_LEN]);
/* Whether a and b trust a key in common (a rotation's step). */
bool cluster_authority_shared(const struct cluster *a, const struct cluster *b);

#endif
