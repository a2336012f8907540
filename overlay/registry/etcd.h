/* SPDX-License-Identifier: MIT */
/* A small etcd v3 client: the calls the registry makes, over etcd's JSON
 * gateway (POST /v3/kv/range, /v3/kv/txn, /v3/lease/..., /v3/watch), with
 * libcurl for HTTP and TLS and json-c for JSON; keys and values travel
 * base64-encoded, as the gateway wants them (libsodium's codec). etcd
 * 3.4's gateway is what Debian ships.
 *
 * One struct etcd is one connection's worth of state (a curl handle, the
 * endpoint in use, an auth token): use each from one thread. Every call
 * blocks for at most the configured time-out (a watch: until its stream
 * ends or stop is set); a failed connection moves on to the next endpoint,
 * each tried once per call. Errors are -errno (-EIO: etcd answered with an
 * error of its own (5xx); -EBUSY: etcd too busy (429, "too many
 * requests"); -ENOENT: what the request named is gone (404: a lease not
 * found); -EINVAL, -EACCES: a refusal; -ETIMEDOUT, -ECONNREFUSED: none
 * answered; -ECANCELED: stopped), with a line for the log in
 * etcd_error(). */
#ifndef DDPNET_ETCD_H
#define DDPNET_ETCD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct etcd_config {
    const char *const *urls;              /* "http://HOST:PORT" or "https://HOST:PORT" */
    size_t n_urls;
    /* PEM, in memory: read while the daemon could still read the files. */
    const void *ca, *cert, *key;
    size_t ca_len, cert_len, key_len;
    const char *user, *password;          /* NULL: no authentication */
    long timeout_ms;                      /* per request, connecting included */
};

struct etcd_kv {
    const char *key, *value;              /* not NUL-terminated */
    size_t key_len, value_len;
    int64_t create_revision, mod_revision, lease;
};
typedef void (*etcd_kv_fn)(void *ctx, const struct etcd_kv *kv);
/* A watch event at revision; deleted: the key is gone (kv has no value).
 * Returning non-zero ends the watch with that value. */
typedef int (*etcd_event_fn)(void *ctx, bool deleted, const struct etcd_kv *kv,
                             int64_t revision);

struct etcd;
/* NULL when out of memory; the config is copied. */
struct etcd *etcd_new(const struct etcd_config *c);
void etcd_free(struct etcd *e);
const char *etcd_error(const struct etcd *e);
/* The endpoint of the latest call ("http://..."). */
const char *etcd_endpoint(const struct etcd *e);
/* Each request's time-out from now on (the config's, until set). */
void etcd_set_timeout(struct etcd *e, long timeout_ms);

/* Every key under prefix, each to fn; *revision: the store's revision
 * they were read at. */
int etcd_range_prefix(struct etcd *e, const char *prefix, etcd_kv_fn fn, void *ctx,
                      int64_t *revision);
/* key (fn not called when absent). A test seam (the daemon reads by
 * prefix), as etcd_delete below: the tests' fixtures. */
int etcd_get(struct etcd *e, const char *key, etcd_kv_fn fn, void *ctx);
/* Puts key only if it does not exist (one transaction): *created says
 * which. lease 0: none. */
int etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease,
                bool *created);
/* Puts key whatever it held, but only while its value is still `expect`
 * (compare-and-swap); *swapped says whether it was. */
int etcd_replace(struct etcd *e, const char *key, const char *expect, const char *value,
                 int64_t lease, bool *swapped);
/* A transaction: when every comparison holds (a key's value equals
 * `value`, or with value NULL, the key does not exist), every put is made,
 * at once; *succeeded says whether they were. */
struct etcd_cmp {
    const char *key, *value;
    int64_t mod_revision;                 /* value NULL and this set: the key was last
                                           * written at this revision */
};
struct etcd_put {
    const char *key, *value;
    int64_t lease;                        /* 0: none */
};
int etcd_txn(struct etcd *e, const struct etcd_cmp *cmps, size_t n_cmps,
             const struct etcd_put *puts, size_t n_puts, bool *succeeded);
/* A test seam: the tests' fixtures remove a record. */
int etcd_delete(struct etcd *e, const char *key);
int etcd_lease_grant(struct etcd *e, unsigned ttl_s, int64_t *id);
/* One keep-alive: *ttl_s is what is left, 0 when the lease is gone. */
int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s);
int etcd_lease_revoke(struct etcd *e, int64_t id);
/* Watches every key under prefix from start_revision on, calling fn per
 * event, until the stream ends (an error), fn returns non-zero, or *stop
 * becomes true (-ECANCELED). -ESTALE: start_revision was compacted away
 * (read the prefix again). */
int etcd_watch_prefix(struct etcd *e, const char *prefix, int64_t start_revision,
                      etcd_event_fn fn, void *ctx, const atomic_bool *stop);
/* Whether the last etcd_watch_prefix was set up by etcd (its "created"
 * came) before it ended: etcd was there, and a watch from the revision
 * after the last event seen takes up where it left off. */
bool etcd_watch_created(const struct etcd *e);

#endif
