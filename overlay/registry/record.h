/* What the registry keeps in etcd, as bytes: each registered node is one
 * key, PREFIX/members/NAME, whose value is a JSON object
 *   {"name": "gpu-7", "public_key": "<base64>", "address": "10.77.0.9",
 *    "endpoint": "203.0.113.7:51820", "port": 51820}
 * (endpoint and port optional), held by the node's lease; and each
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

/* Longest value we write or accept. */
#define RECORD_VALUE_MAX 1024u
#define RECORD_MEMBERS   "/members/"
#define RECORD_ADDRESSES "/addresses/"

/* n's record as JSON into buf (NUL-terminated). Returns its length, or
 * -ENOSPC / -EINVAL (a node that cannot be written: no name). */
int record_encode(const struct cluster_node *n, char *buf, size_t len);

/* Decodes value[0..len) into *n (zeroed first), checking it against the
 * network. 0, or -EINVAL with a reason for the log in *why. */
int record_decode(const char *value, size_t len, const struct cluster *c,
                  struct cluster_node *n, const char **why);

/* The etcd keys: PREFIX/members/NAME and PREFIX/addresses/ADDRESS, and
 * the name or address at the end of such a key (NULL when key is not one). */
int record_member_key(const char *prefix, const char *name, char *buf, size_t len);
int record_address_key(const char *prefix, const struct cluster_addr *a, char *buf, size_t len);
const char *record_key_tail(const char *prefix, const char *kind, const char *key, size_t key_len,
                            char *tail, size_t tail_len);

#endif
