/* SPDX-License-Identifier: MIT */
/* Internal to config/: the state of one parse of a cluster file, shared by
 * the line reader (cluster.c), the key handlers (cluster_keys.c) and the
 * whole-file checks (cluster_check.c). Not for use outside config/. */
#ifndef DDPNET_CLUSTER_INT_H
#define DDPNET_CLUSTER_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "config/cluster.h"

/* Quoted user text in messages is cut to this many characters. */
#define CLUSTER_QUOTE_MAX 64u

enum cluster_section {
    CLUSTER_SECTION_NONE,       /* before the first header */
    CLUSTER_SECTION_CLUSTER,
    CLUSTER_SECTION_NODE,
    CLUSTER_SECTION_RULES,      /* its lines are rules, config/rules.h */
    CLUSTER_SECTION_SKIP,       /* after a header already reported as bad */
};

enum cluster_key {
    CLUSTER_KEY_NETWORK,
    CLUSTER_KEY_PORT,
    CLUSTER_KEY_MTU,
    CLUSTER_KEY_KEEPALIVE,
    CLUSTER_KEY_BUSY_POLL,
    CLUSTER_KEY_HOSTNAMES,
    CLUSTER_KEY_MACHINE_DOMAINS,
    CLUSTER_KEY_METRICS,
    CLUSTER_KEY_METRICS_PUBLIC,
    CLUSTER_KEY_REGISTRY,
    CLUSTER_KEY_REGISTRY_CA,
    CLUSTER_KEY_REGISTRY_CERT,
    CLUSTER_KEY_REGISTRY_KEY,
    CLUSTER_KEY_REGISTRY_USER,
    CLUSTER_KEY_REGISTRY_PASSWORD_FILE,
    CLUSTER_KEY_REGISTRY_TTL,
    CLUSTER_KEY_REGISTRY_INSECURE,
    CLUSTER_KEY_AUTHORITY,
    CLUSTER_KEY_REVOKED,
    CLUSTER_KEY_SOCKET_BUFFER,
    CLUSTER_KEY_COUNT,
};

enum cluster_node_key {
    CLUSTER_NODE_KEY_PUBLIC_KEY,
    CLUSTER_NODE_KEY_ADDRESS,
    CLUSTER_NODE_KEY_ENDPOINT,
    CLUSTER_NODE_KEY_PORT,
    CLUSTER_NODE_KEY_KEEPALIVE,
    CLUSTER_NODE_KEY_ALIASES,
    CLUSTER_NODE_KEY_GROUPS,
    CLUSTER_NODE_KEY_ROUTES,
    CLUSTER_NODE_KEY_MASQUERADE,
    CLUSTER_NODE_KEY_ROUTE_NAMES,
    CLUSTER_NODE_KEY_COUNT,
};

/* A node while the file is read: the result plus what the checks need. */
struct cluster_work_node {
    struct cluster_node node;
    int key_line[CLUSTER_NODE_KEY_COUNT];   /* 0 = key absent */
    /* The line of an unknown key taken for this one ("adress"), so that
     * the key's absence is reported after its cause; 0 = none. */
    int typo_line[CLUSTER_NODE_KEY_COUNT];
    bool name_ok, key_ok, address_ok;
};

struct cluster_parser {
    struct cluster_diag *diag;
    size_t errors;                          /* kept and dropped */
    bool oom;
    enum cluster_section section;
    struct cluster settings;                /* nodes unused here */
    int cluster_line;                       /* [cluster] header, 0 = none */
    int key_line[CLUSTER_KEY_COUNT];        /* 0 = key absent */
    int typo_line[CLUSTER_KEY_COUNT];       /* as cluster_work_node's */
    bool network_ok;
    struct cluster_work_node *nodes;
    size_t n_nodes, cap_nodes;
    bool too_many;                          /* CLUSTER_MAX_NODES reached */
};

/* Records an error at line (0: the whole file), kept in line order. */
void cluster_diag_add(struct cluster_parser *p, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* s made printable and cut to CLUSTER_QUOTE_MAX characters, for quoting in
 * a message; dst holds at least CLUSTER_QUOTE_MAX + 4 bytes. */
void cluster_quote(char *dst, size_t len, const char *s);

/* Applies "key = value" at line to the current section. */
void cluster_key_apply(struct cluster_parser *p, int line, const char *key,
                       const char *value);
/* Reports required keys that a section lacks. */
void cluster_keys_require(struct cluster_parser *p);
/* The checks that need the whole file: sections present, addresses inside
 * the network, mtu against the family, duplicates across nodes. */
void cluster_check_all(struct cluster_parser *p);

#endif
