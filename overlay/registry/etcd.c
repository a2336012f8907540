/* SPDX-License-Identifier: MIT */
/* The etcd client (etcd.h). A request is a JSON object built with json-c,
 * POSTed with libcurl; the answer is collected (bounded) and parsed with
 * json-c; the stream of a watch is parsed object by object as it comes. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <curl/curl.h>
#include <json-c/json.h>
#include <sodium.h>

#include "overlay/registry/etcd.h"

#define ETCD_URLS_MAX      8u
/* One answer, or one message of a watch, at most. Anyone who may write the
 * prefix decides how large its values are (up to etcd's request limit,
 * 1.5 MiB by default), so a prefix is read in pages of at most
 * ETCD_PAGE_KEYS keys, fewer while a page would not fit, rather than in
 * one answer that could be any size. */
#define ETCD_ANSWER_MAX    (8u << 20)
#define ETCD_PAGE_KEYS     1024L
#define ETCD_PAGE_SHRINK   8L
#define ETCD_ERROR_LEN     256u
#define ETCD_CONNECT_MS    2000L
/* A watch's connection is probed when silent, so a member that vanished
 * (not closed: a lost network) is noticed within about 5 s. */
#define ETCD_KEEPIDLE_S    2L
#define ETCD_KEEPINTVL_S   1L

struct etcd {
    CURL *curl;
    char *urls[ETCD_URLS_MAX];
    size_t n_urls, at;                     /* at: the endpoint in use */
    struct curl_blob ca, cert, key;
    char *user, *password, *token;
    long timeout_ms;
    char error[ETCD_ERROR_LEN];
    /* The answer being collected, or the watch being parsed. */
    char *buf;
    size_t len, cap;
    bool too_big;                          /* the answer went past ETCD_ANSWER_MAX */
    size_t msg_len;                        /* of the watch message being parsed */
    json_tokener *tok;
    etcd_event_fn on_event;
    void *event_ctx;
    int stream_ret;
    bool watch_created;                    /* the last watch was set up by etcd */
    const atomic_bool *stop;
};

static int set_error(struct etcd *e, int ret, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int set_error(struct etcd *e, int ret, const char *fmt, ...)
{
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(e->error, sizeof(e->error), fmt, ap);
    va_end(ap);
    return ret;
}

const char *etcd_error(const struct etcd *e)
{
    return e->error;
}

void etcd_set_timeout(struct etcd *e, long timeout_ms)
{
    e->timeout_ms = timeout_ms;
}

const char *etcd_endpoint(const struct etcd *e)
{
    return e->urls[e->at];
}

static bool copy_blob(struct curl_blob *b, const void *data, size_t len)
{
    if (!data)
        return true;
    if (!(b->data = malloc(len)))
        return false;
    memcpy(b->data, data, len);
    b->len = len;
    b->flags = CURL_BLOB_NOCOPY;
    return true;
}

static void free_blob(struct curl_blob *b)
{
    if (b->data)
        sodium_memzero(b->data, b->len);
    free(b->data);
}

static char *dup_or_null(const char *s, bool *ok)
{
    char *d = s ? strdup(s) : NULL;

    if (s && !d)
        *ok = false;
    return d;
}

struct etcd *etcd_new(const struct etcd_config *c)
{
    struct etcd *e = calloc(1, sizeof(*e));
    bool ok = e && c->n_urls > 0 && c->n_urls <= ETCD_URLS_MAX;

    if (!ok) {
        free(e);
        return NULL;
    }
    e->n_urls = c->n_urls;
    for (size_t i = 0; i < c->n_urls; i++)
        e->urls[i] = dup_or_null(c->urls[i], &ok);
    e->user = dup_or_null(c->user, &ok);
    e->password = dup_or_null(c->password, &ok);
    e->timeout_ms = c->timeout_ms;
    ok = ok && copy_blob(&e->ca, c->ca, c->ca_len) && copy_blob(&e->cert, c->cert, c->cert_len) &&
         copy_blob(&e->key, c->key, c->key_len) && (e->curl = curl_easy_init());
    if (!ok) {
        etcd_free(e);
        return NULL;
    }
    return e;
}

void etcd_free(struct etcd *e)
{
    if (!e)
        return;
    if (e->curl)
        curl_easy_cleanup(e->curl);
    for (size_t i = 0; i < e->n_urls; i++)
        free(e->urls[i]);
    free_blob(&e->ca);
    free_blob(&e->cert);
    free_blob(&e->key);
    free(e->user);
    if (e->password)
        sodium_memzero(e->password, strlen(e->password));
    free(e->password);
    free(e->token);
    free(e->buf);
    if (e->tok)
        json_tokener_free(e->tok);
    free(e);
}

/* --- JSON helpers ------------------------------------------------------------ */

static json_object *b64_string(const char *bytes, size_t len)
{
    size_t cap = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    char *text = malloc(cap);
    json_object *o;

    if (!text)
        return NULL;
    sodium_bin2base64(text, cap, (const unsigned char *)bytes, len,
                      sodium_base64_VARIANT_ORIGINAL);
    o = json_object_new_string(text);
    free(text);
    return o;
}

/* The end of the range of every key beginning with prefix: the prefix
 * with its last byte plus one (our prefixes are text, never 0xff). */
static json_object *range_end_of(const char *prefix)
{
    size_t n = strlen(prefix);
    char *end = strdup(prefix);
    json_object *o;

    if (!end || n == 0) {
        free(end);
        return NULL;
    }
    end[n - 1]++;
    o = b64_string(end, n);
    free(end);
    return o;
}

static json_object *int64_string(int64_t v)
{
    char text[24];

    snprintf(text, sizeof(text), "%lld", (long long)v);
    return json_object_new_string(text);
}

/* Adds name = value to o, taking value; false when either failed. */
static bool put(json_object *o, const char *name, json_object *value)
{
    if (!value)
        return false;
    if (json_object_object_add(o, name, value)) {
        json_object_put(value);
        return false;
    }
    return true;
}

static int64_t int64_of(json_object *o, const char *name)
{
    json_object *v;

    return json_object_object_get_ex(o, name, &v) ? json_object_get_int64(v) : 0;
}

/* A base64 member decoded in place of its text (the object keeps the
 * string; decoding never needs more room than the text). */
static const char *bytes_of(json_object *o, const char *name, size_t *len)
{
    json_object *v;
    char *text;
    size_t n = 0;

    *len = 0;
    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    text = (char *)(uintptr_t)json_object_get_string(v);
    if (sodium_base642bin((unsigned char *)text, strlen(text), text, strlen(text), NULL, &n,
                          NULL, sodium_base64_VARIANT_ORIGINAL) != 0)
        return NULL;
    *len = n;
    return text;
}

static bool kv_of(json_object *o, struct etcd_kv *kv)
{
    memset(kv, 0, sizeof(*kv));
    kv->create_revision = int64_of(o, "create_revision");
    kv->mod_revision = int64_of(o, "mod_revision");
    kv->lease = int64_of(o, "lease");
    kv->key = bytes_of(o, "key", &kv->key_len);
    if (!kv->key)
        return false;
    kv->value = bytes_of(o, "value", &kv->value_len);
    if (!kv->value)
        kv->value = "";
    return true;
}

/* --- requests ---------------------------------------------------------------- */

static size_t collect(char *data, size_t size, size_t n, void *arg)
{
    struct etcd *e = arg;
    size_t len = size * n;

    if (len > ETCD_ANSWER_MAX - e->len) {
        e->too_big = true;
        return 0;                       /* curl then fails the transfer */
    }
    if (e->len + len + 1 > e->cap) {
        size_t cap = e->cap ? e->cap : 4096;
        while (cap < e->len + len + 1)
            cap *= 2;
        char *b = realloc(e->buf, cap);
        if (!b)
            return 0;
        e->buf = b;
        e->cap = cap;
    }
    memcpy(e->buf + e->len, data, len);
    e->len += len;
    e->buf[e->len] = '\0';
    return len;
}

static void setup_handle(struct etcd *e, const char *url, const char *body,
                         struct curl_slist *headers)
{
    CURL *c = e->curl;

    curl_easy_reset(c);
    curl_easy_setopt(c, CURLOPT_URL, url);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, ETCD_CONNECT_MS);
    curl_easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPIDLE, ETCD_KEEPIDLE_S);
    curl_easy_setopt(c, CURLOPT_TCP_KEEPINTVL, ETCD_KEEPINTVL_S);
    if (e->ca.data)
        curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &e->ca);
    if (e->cert.data) {
        curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &e->cert);
        curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
        curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &e->key);
        curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
    }
}

static struct curl_slist *headers_for(struct etcd *e)
{
    struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");
    char auth[512];

    if (h && e->token) {
        snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
        struct curl_slist *more = curl_slist_append(h, auth);
        if (!more) {
            curl_slist_free_all(h);
            return NULL;
        }
        h = more;
    }
    return h;
}

/* The message of an error answer ({"error": ..., "message": ...}). */
static void answer_error(struct etcd *e, long status)
{
    json_object *o = json_tokener_parse(e->buf ? e->buf : "");
    json_object *m;
    const char *msg = NULL;

    if (o && json_object_object_get_ex(o, "message", &m))
        msg = json_object_get_string(m);
    set_error(e, 0, "%s answered %ld: %s", e->urls[e->at], status, msg ? msg : "(no message)");
    json_object_put(o);
}

static bool connection_failed(CURLcode rc)
{
    return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST ||
           rc == CURLE_OPERATION_TIMEDOUT || rc == CURLE_RECV_ERROR || rc == CURLE_SEND_ERROR ||
           rc == CURLE_GOT_NOTHING || rc == CURLE_SSL_CONNECT_ERROR || rc == CURLE_PARTIAL_FILE;
}

static int errno_of(CURLcode rc)
{
    switch (rc) {
    case CURLE_OPERATION_TIMEDOUT: return -ETIMEDOUT;
    case CURLE_COULDNT_CONNECT: return -ECONNREFUSED;
    case CURLE_COULDNT_RESOLVE_HOST: return -EHOSTUNREACH;
    case CURLE_ABORTED_BY_CALLBACK: return -ECANCELED;
    default: return -EIO;
    }
}

/* One POST to path on the endpoint in use, then on each other once. */
static int post_once(struct etcd *e, const char *path, const char *body, json_object **answer)
{
    struct curl_slist *headers = headers_for(e);
    char url[512];
    CURLcode rc = CURLE_OK;
    long status = 0;

    if (!headers)
        return set_error(e, -ENOMEM, "out of memory");
    for (size_t tried = 0; tried < e->n_urls; tried++) {
        snprintf(url, sizeof(url), "%s%s", e->urls[e->at], path);
        e->len = 0;
        e->too_big = false;
        setup_handle(e, url, body, headers);
        curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
        curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
        rc = curl_easy_perform(e->curl);
        if (rc == CURLE_OK || !connection_failed(rc))
            break;
        set_error(e, 0, "%s: %s", e->urls[e->at], curl_easy_strerror(rc));
        e->at = (e->at + 1) % e->n_urls;
    }
    curl_slist_free_all(headers);
    if (rc == CURLE_WRITE_ERROR && e->too_big)
        return set_error(e, -EMSGSIZE, "%s: an answer larger than %u MiB", e->urls[e->at],
                         ETCD_ANSWER_MAX >> 20);
    if (rc != CURLE_OK) {
        if (!connection_failed(rc))
            set_error(e, 0, "%s: %s", e->urls[e->at], curl_easy_strerror(rc));
        return errno_of(rc);
    }
    curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
    if (status != 200) {
        /* etcd's own trouble (5xx; 429: too many requests, its applied
         * index behind under load) is worth trying again; 404 is what
         * the request named being gone (a lease that ran out); the rest
         * is a refusal. */
        answer_error(e, status);
        return status >= 500 ? -EIO : status == 429 ? -EBUSY : status == 404 ? -ENOENT
             : (status == 401 || status == 403) ? -EACCES : -EINVAL;
    }
    *answer = e->buf ? json_tokener_parse(e->buf) : NULL;
    if (!*answer || !json_object_is_type(*answer, json_type_object)) {
        json_object_put(*answer);
        *answer = NULL;
        return set_error(e, -EBADMSG, "%s: an answer that is not a JSON object", e->urls[e->at]);
    }
    return 0;
}

static int authenticate(struct etcd *e)
{
    json_object *req = json_object_new_object(), *ans = NULL, *tok;
    int ret = -ENOMEM;

    free(e->token);
    e->token = NULL;
    if (req && put(req, "name", json_object_new_string(e->user)) &&
        put(req, "password", json_object_new_string(e->password)))
        ret = post_once(e, "/v3/auth/authenticate", json_object_to_json_string(req), &ans);
    if (ret == 0) {
        if (json_object_object_get_ex(ans, "token", &tok) &&
            json_object_is_type(tok, json_type_string) &&
            !(e->token = strdup(json_object_get_string(tok))))
            ret = -ENOMEM;
        else if (!e->token)
            ret = set_error(e, -EACCES, "%s: no token for user %s", e->urls[e->at], e->user);
    }
    json_object_put(req);
    json_object_put(ans);
    return ret;
}

/* POSTs req (taken) to path: authenticating first when there is a user
 * and no token yet, and once more when etcd says the token is no good. */
static int post(struct etcd *e, const char *path, json_object *req, json_object **answer)
{
    int ret;

    *answer = NULL;
    if (!req)
        return set_error(e, -ENOMEM, "out of memory");
    ret = e->user && !e->token ? authenticate(e) : 0;
    if (ret == 0)
        ret = post_once(e, path, json_object_to_json_string(req), answer);
    if ((ret == -EIO || ret == -EACCES || ret == -EINVAL) && e->user && strstr(e->error, "token") &&
        authenticate(e) == 0)
        ret = post_once(e, path, json_object_to_json_string(req), answer);
    json_object_put(req);
    return ret;
}

static json_object *key_request(const char *key)
{
    json_object *req = json_object_new_object();

    if (req && !put(req, "key", b64_string(key, strlen(key)))) {
        json_object_put(req);
        return NULL;
    }
    return req;
}

static void each_kv(json_object *kvs, etcd_kv_fn fn, void *ctx)
{
    struct etcd_kv kv;
    size_t n = kvs && json_object_is_type(kvs, json_type_array) ? json_object_array_length(kvs) : 0;

    for (size_t i = 0; i < n; i++)
        if (kv_of(json_object_array_get_idx(kvs, i), &kv))
            fn(ctx, &kv);
}

/* A range request for the keys from `from` (from_len bytes) up to the end
 * of prefix, at most limit of them, at revision (0: the latest). */
static json_object *page_request(const char *from, size_t from_len, const char *prefix,
                                 int64_t revision, long limit, bool keys_only)
{
    json_object *req = json_object_new_object();

    if (!req || !put(req, "key", b64_string(from, from_len)) ||
        !put(req, "range_end", range_end_of(prefix)) ||
        !put(req, "limit", int64_string(limit)) ||
        (revision && !put(req, "revision", int64_string(revision))) ||
        (keys_only && !put(req, "keys_only", json_object_new_boolean(1)))) {
        json_object_put(req);
        return NULL;
    }
    return req;
}

/* Where the next page begins: just after key (key and one zero byte). */
static int after_key(char **from, size_t *from_len, const char *key, size_t key_len)
{
    char *next = malloc(key_len + 1);

    if (!next)
        return -ENOMEM;
    memcpy(next, key, key_len);
    next[key_len] = '\0';
    free(*from);
    *from = next;
    *from_len = key_len + 1;
    return 0;
}

/* A key whose value alone makes an answer larger than ETCD_ANSWER_MAX:
 * its name, read without values, to go on after it. */
static int skip_key(struct etcd *e, char **from, size_t *from_len, const char *prefix,
                    int64_t revision, bool *more)
{
    json_object *ans, *kvs;
    struct etcd_kv kv;
    int ret = post(e, "/v3/kv/range", page_request(*from, *from_len, prefix, revision, 1, true),
                   &ans);

    if (ret)
        return ret;
    *more = false;
    if (json_object_object_get_ex(ans, "kvs", &kvs) && json_object_is_type(kvs, json_type_array) &&
        json_object_array_length(kvs) == 1 && kv_of(json_object_array_get_idx(kvs, 0), &kv)) {
        ret = after_key(from, from_len, kv.key, kv.key_len);
        *more = true;
    }
    json_object_put(ans);
    return ret;
}

int etcd_range_prefix(struct etcd *e, const char *prefix, etcd_kv_fn fn, void *ctx,
                      int64_t *revision)
{
    size_t from_len = strlen(prefix);
    char *from = strdup(prefix);
    int64_t at = 0;                      /* every page read at the first one's revision */
    long limit = ETCD_PAGE_KEYS;
    bool more = true;
    int ret = 0;

    if (!from)
        return set_error(e, -ENOMEM, "out of memory");
    while (more && ret == 0) {
        json_object *ans, *kvs, *header, *m;
        size_t n;

        ret = post(e, "/v3/kv/range", page_request(from, from_len, prefix, at, limit, false),
                   &ans);
        if (ret == -EMSGSIZE && limit > 1) {
            /* Too large a page: far fewer keys (each try that fails
             * costs a whole answer's worth), then more again. */
            limit = limit > ETCD_PAGE_SHRINK ? limit / ETCD_PAGE_SHRINK : 1;
            ret = 0;
            continue;
        }
        if (ret == -EMSGSIZE) {
            ret = skip_key(e, &from, &from_len, prefix, at, &more);   /* one key alone */
            continue;
        }
        if (ret)
            break;
        if (!at && json_object_object_get_ex(ans, "header", &header))
            at = int64_of(header, "revision");
        n = json_object_object_get_ex(ans, "kvs", &kvs) &&
            json_object_is_type(kvs, json_type_array) ? json_object_array_length(kvs) : 0;
        struct etcd_kv kv;
        bool last_ok = false;
        for (size_t i = 0; i < n; i++)
            if ((last_ok = kv_of(json_object_array_get_idx(kvs, i), &kv)))
                fn(ctx, &kv);
        /* proto3 leaves false out of the JSON. */
        more = n > 0 && json_object_object_get_ex(ans, "more", &m) && json_object_get_boolean(m);
        if (more && !last_ok)
            ret = set_error(e, -EBADMSG, "%s: a key that is not base64", e->urls[e->at]);
        else if (more)
            ret = after_key(&from, &from_len, kv.key, kv.key_len);
        json_object_put(ans);
        limit = limit * 2 > ETCD_PAGE_KEYS ? ETCD_PAGE_KEYS : limit * 2;
    }
    free(from);
    if (ret == 0)
        *revision = at;
    return ret;
}

int etcd_get(struct etcd *e, const char *key, etcd_kv_fn fn, void *ctx)
{
    json_object *ans, *kvs;
    int ret = post(e, "/v3/kv/range", key_request(key), &ans);

    if (ret)
        return ret;
    if (json_object_object_get_ex(ans, "kvs", &kvs))
        each_kv(kvs, fn, ctx);
    json_object_put(ans);
    return 0;
}

static json_object *put_request(const char *key, const char *value, int64_t lease)
{
    json_object *p = key_request(key), *op = json_object_new_object();

    if (!p || !op || !put(p, "value", b64_string(value, strlen(value))) ||
        (lease && !put(p, "lease", int64_string(lease)))) {
        json_object_put(p);
        json_object_put(op);
        return NULL;
    }
    return put(op, "request_put", p) ? op : (json_object_put(op), NULL);
}

static json_object *compare_of(const struct etcd_cmp *c)
{
    json_object *cmp = key_request(c->key);
    bool ok = cmp && put(cmp, "result", json_object_new_string("EQUAL"));

    if (ok && c->value)
        ok = put(cmp, "target", json_object_new_string("VALUE")) &&
             put(cmp, "value", b64_string(c->value, strlen(c->value)));
    else if (ok && c->mod_revision)
        ok = put(cmp, "target", json_object_new_string("MOD")) &&
             put(cmp, "mod_revision", int64_string(c->mod_revision));
    else if (ok)
        ok = put(cmp, "target", json_object_new_string("CREATE")) &&
             put(cmp, "create_revision", int64_string(0));
    if (!ok) {
        json_object_put(cmp);
        return NULL;
    }
    return cmp;
}

/* Appends each made object to arr; false when one could not be made. */
static bool fill_array(json_object *arr, json_object *(*make)(const void *), const void *items,
                       size_t size, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        json_object *o = make((const char *)items + i * size);
        if (!o || json_object_array_add(arr, o)) {
            json_object_put(o);
            return false;
        }
    }
    return true;
}

static json_object *make_compare(const void *c) { return compare_of(c); }

static json_object *make_put(const void *v)
{
    const struct etcd_put *p = v;

    return put_request(p->key, p->value, p->lease);
}

int etcd_txn(struct etcd *e, const struct etcd_cmp *cmps, size_t n_cmps,
             const struct etcd_put *puts, size_t n_puts, bool *succeeded)
{
    json_object *req = json_object_new_object(), *c = json_object_new_array();
    json_object *ops = json_object_new_array(), *ok, *ans;
    int ret;

    if (!req || !c || !ops || !fill_array(c, make_compare, cmps, sizeof(*cmps), n_cmps) ||
        !fill_array(ops, make_put, puts, sizeof(*puts), n_puts)) {
        json_object_put(c);
        json_object_put(ops);
        json_object_put(req);
        return set_error(e, -ENOMEM, "out of memory");
    }
    /* put() takes its value even when it fails. */
    if (!put(req, "compare", c) || !put(req, "success", ops)) {
        if (!json_object_object_get_ex(req, "compare", NULL))
            json_object_put(ops);
        json_object_put(req);
        return set_error(e, -ENOMEM, "out of memory");
    }
    if ((ret = post(e, "/v3/kv/txn", req, &ans)))
        return ret;
    /* proto3 leaves false out of the JSON. */
    *succeeded = json_object_object_get_ex(ans, "succeeded", &ok) && json_object_get_boolean(ok);
    json_object_put(ans);
    return 0;
}

int etcd_create(struct etcd *e, const char *key, const char *value, int64_t lease,
                bool *created)
{
    struct etcd_cmp cmp = { key, NULL, 0 };
    struct etcd_put p = { key, value, lease };

    return etcd_txn(e, &cmp, 1, &p, 1, created);
}

int etcd_replace(struct etcd *e, const char *key, const char *expect, const char *value,
                 int64_t lease, bool *swapped)
{
    struct etcd_cmp cmp = { key, expect, 0 };
    struct etcd_put p = { key, value, lease };

    return etcd_txn(e, &cmp, 1, &p, 1, swapped);
}

int etcd_delete(struct etcd *e, const char *key)
{
    json_object *ans;
    int ret = post(e, "/v3/kv/deleterange", key_request(key), &ans);

    json_object_put(ans);
    return ret;
}

int etcd_lease_grant(struct etcd *e, unsigned ttl_s, int64_t *id)
{
    json_object *req = json_object_new_object(), *ans;
    int ret;

    if (req && !put(req, "TTL", json_object_new_int64(ttl_s))) {
        json_object_put(req);
        req = NULL;
    }
    if ((ret = post(e, "/v3/lease/grant", req, &ans)))
        return ret;
    *id = int64_of(ans, "ID");
    json_object_put(ans);
    return *id ? 0 : set_error(e, -EBADMSG, "%s: a lease without an ID", e->urls[e->at]);
}

int etcd_lease_keepalive(struct etcd *e, int64_t id, int64_t *ttl_s)
{
    json_object *req = json_object_new_object(), *ans, *result;
    int ret;

    if (req && !put(req, "ID", int64_string(id))) {
        json_object_put(req);
        req = NULL;
    }
    if ((ret = post(e, "/v3/lease/keepalive", req, &ans)))
        return ret;
    /* The gateway wraps each message of the stream in "result". */
    *ttl_s = json_object_object_get_ex(ans, "result", &result) ? int64_of(result, "TTL") : 0;
    json_object_put(ans);
    return 0;
}

int etcd_lease_revoke(struct etcd *e, int64_t id)
{
    json_object *req = json_object_new_object(), *ans;
    int ret;

    if (req && !put(req, "ID", int64_string(id))) {
        json_object_put(req);
        req = NULL;
    }
    ret = post(e, "/v3/lease/revoke", req, &ans);
    json_object_put(ans);
    return ret;
}

/* --- the watch stream -------------------------------------------------------- */

/* One message of the stream: {"result": {"header", "events", "created",
 * "canceled", "compact_revision"}}. Returns non-zero to end the watch. */
static int stream_message(struct etcd *e, json_object *msg)
{
    json_object *result, *events, *header, *kv, *type;
    struct etcd_kv k;
    int64_t revision;

    if (!json_object_object_get_ex(msg, "result", &result)) {
        json_object *m;
        set_error(e, 0, "%s: watch: %s", e->urls[e->at],
                  json_object_object_get_ex(msg, "error", &m) ? json_object_get_string(m)
                                                               : "a message without a result");
        return -EIO;
    }
    if (json_object_object_get_ex(result, "created", &type) && json_object_get_boolean(type))
        e->watch_created = true;
    if (int64_of(result, "compact_revision")) {
        set_error(e, 0, "%s: watch: revisions compacted up to %lld", e->urls[e->at],
                  (long long)int64_of(result, "compact_revision"));
        return -ESTALE;
    }
    if (json_object_object_get_ex(result, "canceled", &type) && json_object_get_boolean(type)) {
        json_object *why;
        const char *reason = json_object_object_get_ex(result, "cancel_reason", &why)
                                 ? json_object_get_string(why) : "";
        if (strstr(reason, "token")) {       /* authenticate again next time */
            free(e->token);
            e->token = NULL;
        }
        return set_error(e, -EIO, "%s: watch canceled: %s", e->urls[e->at], reason);
    }
    revision = json_object_object_get_ex(result, "header", &header)
                   ? int64_of(header, "revision") : 0;
    if (!json_object_object_get_ex(result, "events", &events) ||
        !json_object_is_type(events, json_type_array))
        return 0;
    for (size_t i = 0; i < json_object_array_length(events); i++) {
        json_object *ev = json_object_array_get_idx(events, i);
        bool deleted = json_object_object_get_ex(ev, "type", &type) &&
                       !strcmp(json_object_get_string(type), "DELETE");
        int ret;
        if (!json_object_object_get_ex(ev, "kv", &kv) || !kv_of(kv, &k))
            continue;
        if ((ret = e->on_event(e->event_ctx, deleted, &k, revision)))
            return ret;
    }
    return 0;
}

/* Feeds what came to the tokenizer; each whole message is handled. */
static size_t stream_data(char *data, size_t size, size_t n, void *arg)
{
    struct etcd *e = arg;
    size_t len = size * n, at = 0;

    while (at < len) {
        /* Newlines separate the messages; the tokenizer would take one
         * as the start of the next value, so they are skipped here. */
        if (data[at] == '\n' || data[at] == '\r' || data[at] == ' ') {
            at++;
            continue;
        }
        json_object *msg = json_tokener_parse_ex(e->tok, data + at, (int)(len - at));
        enum json_tokener_error err = json_tokener_get_error(e->tok);
        if (err == json_tokener_continue) {
            /* The rest comes with the next chunk; a watch that starts
             * behind gets up to 1000 revisions in one message, as large
             * as whoever writes the prefix made them: not held whole. */
            e->msg_len += len - at;
            if (e->msg_len <= ETCD_ANSWER_MAX)
                return len;
            e->stream_ret = set_error(e, -EMSGSIZE, "%s: watch: a message larger than %u MiB",
                                      e->urls[e->at], ETCD_ANSWER_MAX >> 20);
            return 0;
        }
        if (err != json_tokener_success || !msg) {
            json_object_put(msg);
            e->stream_ret = set_error(e, -EBADMSG, "%s: watch: %s", e->urls[e->at],
                                      json_tokener_error_desc(err));
            return 0;
        }
        at += (size_t)json_tokener_get_parse_end(e->tok);
        e->msg_len = 0;
        json_tokener_reset(e->tok);
        e->stream_ret = stream_message(e, msg);
        json_object_put(msg);
        if (e->stream_ret)
            return 0;
    }
    return len;
}

static int stream_progress(void *arg, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    struct etcd *e = arg;

    (void)a, (void)b, (void)c, (void)d;
    return e->stop && atomic_load(e->stop) ? 1 : 0;
}

static json_object *watch_request(const char *prefix, int64_t start)
{
    json_object *create = key_request(prefix), *req = json_object_new_object();

    if (!create || !req || !put(create, "range_end", range_end_of(prefix)) ||
        !put(create, "start_revision", int64_string(start))) {
        json_object_put(create);
        json_object_put(req);
        return NULL;
    }
    if (!put(req, "create_request", create)) {    /* create freed by put */
        json_object_put(req);
        return NULL;
    }
    return req;
}

static int watch_once(struct etcd *e, const char *body)
{
    struct curl_slist *headers = headers_for(e);
    char url[512];
    CURLcode rc;

    if (!headers)
        return set_error(e, -ENOMEM, "out of memory");
    snprintf(url, sizeof(url), "%s/v3/watch", e->urls[e->at]);
    setup_handle(e, url, body, headers);
    curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, stream_data);
    curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
    curl_easy_setopt(e->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(e->curl, CURLOPT_XFERINFOFUNCTION, stream_progress);
    curl_easy_setopt(e->curl, CURLOPT_XFERINFODATA, e);
    e->stream_ret = 0;
    e->watch_created = false;
    e->msg_len = 0;
    json_tokener_reset(e->tok);
    rc = curl_easy_perform(e->curl);
    curl_slist_free_all(headers);
    if (e->stream_ret)
        return e->stream_ret;
    if (rc == CURLE_ABORTED_BY_CALLBACK)
        return set_error(e, -ECANCELED, "stopped");
    if (rc != CURLE_OK)
        return set_error(e, errno_of(rc), "%s: watch: %s", e->urls[e->at],
                         curl_easy_strerror(rc));
    return set_error(e, -EPIPE, "%s: the watch stream ended", e->urls[e->at]);
}

bool etcd_watch_created(const struct etcd *e)
{
    return e->watch_created;
}

int etcd_watch_prefix(struct etcd *e, const char *prefix, int64_t start_revision,
                      etcd_event_fn fn, void *ctx, const atomic_bool *stop)
{
    json_object *req = watch_request(prefix, start_revision);
    int ret;

    if (!req)
        return set_error(e, -ENOMEM, "out of memory");
    if (!e->tok && !(e->tok = json_tokener_new())) {
        json_object_put(req);
        return set_error(e, -ENOMEM, "out of memory");
    }
    e->on_event = fn;
    e->event_ctx = ctx;
    e->stop = stop;
    e->watch_created = false;
    ret = e->user && !e->token ? authenticate(e) : 0;
    if (ret == 0)
        ret = watch_once(e, json_object_to_json_string(req));
    json_object_put(req);
    /* A watch that ended moves the next one to another member. */
    if (ret != -ECANCELED && ret != -ESTALE)
        e->at = (e->at + 1) % e->n_urls;
    return ret;
}
