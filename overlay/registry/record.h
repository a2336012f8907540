/* SPDX-License-Identifier: MIT */
/* What the registry keeps in etcd, as bytes: each registered node is one
 * key, PREFIX/members/NAME, whose value is a JSON object
 *   {"name": "gpu-7", "public_key": "<base64>", "address": "10.77.0.9",
 *    "endpoint": "203.0.113.7:51820", "port": 51820,
 *    "candidates": ["203.0.113.7:51820", "10.0.3.7:51820"],
 *    "observed": "198.51.100.4:40123"}
 * (endpoint, port, candidates and observed optional), held by the node's
 * lease. candidates: where the node says it may be reached, in its order
 * of preference (its --endpoint, then its interface addresses on its
 * listen port; at most CLUSTER_CANDIDATES_MAX, IP literals, none
 * loopback, link-local, multicast or unspecified, no two alike);
 * observed: where a member saw its packets come from (its NAT's
 * mapping), in the same form. A record of an older version has neither
 * and still reads; one whose candidates break a rule is refused whole,
 * as a bad endpoint is. Each
 * address handed out is one key, PREFIX/addresses/ADDRESS, whose value is
 * the base64 public key it belongs to, kept without a lease so that a
 * node that comes back with the same key gets the same address.
 *
 * Anyone with write access to the prefix can put anything there: a value
 * is decoded strictly (every field checked as the cluster file checks it,
 * the address inside the network) and one that fails is ignored, with a
 * reason for the log. Pure functions over bytes (json-c), no I/O. */
#ifndef DDPNET_RECORD_H
#define DDPNET_RECORD_H

#include <stddef.h>

#include "config/cluster.h"

/* Longest value we write or accept: a record with its certificate. */
#define RECORD_VALUE_MAX 3072u
#define RECORD_MEMBERS   "/members/"
#define RECORD_ADDRESSES "/addresses/"
/* With an authority (config/cert.h): PREFIX/members-revoked/ID holds one
 * of its revocations, a text line; under PREFIX/members so that one
 * watch sees records and revocations, and not the addresses. */
#define RECORD_REVOKED   "/members-revoked/"
#define RECORD_WATCHED   "/members"

/* n's record as JSON into buf (NUL-terminated). Candidates that would
 * take it past RECORD_VALUE_MAX are left out, the last first (the
 * observed one stays). Returns its length, or -ENOSPC / -EINVAL (a node
 * that cannot be written: no name). */
int record_encode(const struct cluster_node *n, char *buf, size_t len);
/* The same with the node's certificate (config/cert.h's text form) as
 * member "cert"; cert NULL or "": none. */
int record_encode_cert(const struct cluster_node *n, const char *cert, char *buf, size_t len);
/* A record's "cert" member into out (cap bytes with the NUL): 1 when
 * there is one, 0 when none, -EINVAL when it is not a string that fits.
 * Its content is not checked here: the certificate proves itself. */
int record_cert(const char *value, size_t len, char *out, size_t cap);

/* Decodes value[0..len) into *n (zeroed first), checking it against the
 * network. 0, or -EINVAL with a reason for the log in *why. */
int record_decode(const char *value, size_t len, const struct cluster *c,
                  struct cluster_node *n, const char **why);

/* A candidate a record may carry: a port, an address that is not
 * unspecified, loopback, link-local, multicast, broadcast or IPv4-mapped
 * (an address no other machine reaches us at). */
bool record_cand_usable(const struct cluster_cand *c);
/* "IP:PORT" / "[IPV6]:PORT" <-> a candidate. Parse: 0, or -EINVAL for a
 * hostname, a bad form or an unusable candidate. Format: 0 or -ENOSPC. */
int record_cand_parse(const char *text, struct cluster_cand *out);
int record_cand_format(const struct cluster_cand *c, char *buf, size_t len);

/* The etcd keys: PREFIX/members/NAME and PREFIX/addresses/ADDRESS, and
 * the name or address at the end of such a key (NULL when key is not one). */
int record_member_key(const char *prefix, const char *name, char *buf, size_t len);
int record_address_key(const char *prefix, const struct cluster_addr *a, char *buf, size_t len);
const char *record_key_tail(const char *prefix, const char *kind, const char *key, size_t key_len,
                            char *tail, size_t tail_len);

#endif
