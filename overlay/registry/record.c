/* SPDX-License-Identifier: MIT */
/* The registry's values (record.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>
#include <sodium.h>

#include "config/addr.h"
#include "overlay/registry/record.h"

#define JSON_NAME     "name"
#define JSON_KEY      "public_key"
#define JSON_ADDRESS  "address"
#define JSON_ENDPOINT "endpoint"
#define JSON_PORT     "port"
#define JSON_CANDS    "candidates"
#define JSON_OBSERVED "observed"
#define JSON_CERT     "cert"
#define CAND_TEXT_MAX (INET6_ADDRSTRLEN + 8)   /* "[v6]:65535" */

/* --- candidates ------------------------------------------------------------------ */

bool record_cand_usable(const struct cluster_cand *c)
{
    static const uint8_t zero[16], v4_mapped[12] = { [10] = 0xff, [11] = 0xff };
    const uint8_t *a = c->addr.bytes;

    if (!c->port || cluster_addr_is_loopback(&c->addr))
        return false;
    if (c->addr.family == AF_INET)
        return a[0] != 0 && !(a[0] == 169 && a[1] == 254) && a[0] < 224;
    return c->addr.family == AF_INET6 && memcmp(a, zero, sizeof(zero)) && a[0] != 0xff &&
           !(a[0] == 0xfe && (a[1] & 0xc0) == 0x80) && memcmp(a, v4_mapped, sizeof(v4_mapped));
}

int record_cand_parse(const char *text, struct cluster_cand *out)
{
    struct cluster_endpoint ep;

    memset(out, 0, sizeof(*out));
    if (cluster_endpoint_parse(text, &ep, NULL) < 0 || !ep.literal)
        return -EINVAL;
    out->addr = ep.addr;
    out->port = ep.port;
    return record_cand_usable(out) ? 0 : -EINVAL;
}

int record_cand_format(const struct cluster_cand *c, char *buf, size_t len)
{
    char lit[INET6_ADDRSTRLEN];
    int n;

    if (cluster_addr_format(&c->addr, lit, sizeof(lit)) < 0)
        return -EINVAL;
    n = snprintf(buf, len, c->addr.family == AF_INET6 ? "[%s]:%u" : "%s:%u", lit,
                 (unsigned)c->port);
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

static json_object *cand_string(const struct cluster_cand *c)
{
    char text[CAND_TEXT_MAX];

    return record_cand_format(c, text, sizeof(text)) ? NULL : json_object_new_string(text);
}

/* The first n_cands candidates and the observed one into o. */
static int add_candidates(json_object *o, const struct cluster_node *n, unsigned n_cands)
{
    json_object *arr, *one;

    if (n->has_observed &&
        (!(one = cand_string(&n->observed)) || json_object_object_add(o, JSON_OBSERVED, one)))
        return -EINVAL;
    if (!n_cands)
        return 0;
    if (!(arr = json_object_new_array()) || json_object_object_add(o, JSON_CANDS, arr))
        return -ENOMEM;
    for (unsigned i = 0; i < n_cands; i++)
        if (!(one = cand_string(&n->candidates[i])) || json_object_array_add(arr, one))
            return -EINVAL;
    return 0;
}

/* Whether cands[0..n) break a record's rules (record.h). */
static bool cands_bad(const struct cluster_cand *cands, unsigned n)
{
    for (unsigned i = 0; i < n; i++) {
        if (!record_cand_usable(&cands[i]))
            return true;
        for (unsigned k = 0; k < i; k++)
            if (cands[k].port == cands[i].port && cluster_addr_equal(&cands[k].addr,
                                                                     &cands[i].addr))
                return true;
    }
    return false;
}

/* --- the record -------------------------------------------------------------------- */

static int encode_with(const struct cluster_node *n, const char *cert, unsigned n_cands,
                       char *buf, size_t len)
{
    char key[sodium_base64_ENCODED_LEN(CLUSTER_KEY_LEN, sodium_base64_VARIANT_ORIGINAL)];
    char addr[CLUSTER_HOST_MAX + 3], ep[CLUSTER_HOST_MAX + 16];
    json_object *o;
    const char *text;
    int ret = -ENOMEM;

    if (!n->name[0] || cluster_addr_format(&n->address, addr, sizeof(addr)) < 0)
        return -EINVAL;
    sodium_bin2base64(key, sizeof(key), n->public_key, CLUSTER_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
    if (!(o = json_object_new_object()))
        return -ENOMEM;
    if (json_object_object_add(o, JSON_NAME, json_object_new_string(n->name)) ||
        json_object_object_add(o, JSON_KEY, json_object_new_string(key)) ||
        json_object_object_add(o, JSON_ADDRESS, json_object_new_string(addr)))
        goto out;
    if (n->has_endpoint) {
        if (cluster_endpoint_format(&n->endpoint, ep, sizeof(ep)) < 0) {
            ret = -EINVAL;
            goto out;
        }
        if (json_object_object_add(o, JSON_ENDPOINT, json_object_new_string(ep)))
            goto out;
    }
    if (n->port && json_object_object_add(o, JSON_PORT, json_object_new_int(n->port)))
        goto out;
    if ((ret = add_candidates(o, n, n_cands)))
        goto out;
    ret = -ENOMEM;
    if (cert && cert[0] && json_object_object_add(o, JSON_CERT, json_object_new_string(cert)))
        goto out;
    text = json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN);
    ret = -ENOSPC;
    if (text && strlen(text) < len && strlen(text) <= RECORD_VALUE_MAX) {
        memcpy(buf, text, strlen(text) + 1);
        ret = (int)strlen(text);
    }
out:
    json_object_put(o);
    return ret;
}

int record_encode(const struct cluster_node *n, char *buf, size_t len)
{
    return record_encode_cert(n, NULL, buf, len);
}

int record_encode_cert(const struct cluster_node *n, const char *cert, char *buf, size_t len)
{
    unsigned k = n->n_candidates;
    int ret;

    if (k > CLUSTER_CANDIDATES_MAX || cands_bad(n->candidates, k) ||
        (n->has_observed && !record_cand_usable(&n->observed)))
        return -EINVAL;
    /* Too long: the last candidates give way (a hostname endpoint and
     * eight IPv6 candidates do not fit). */
    while ((ret = encode_with(n, cert, k, buf, len)) == -ENOSPC && k)
        k--;
    return ret;
}

/* The string member `name` of o: NULL when absent or not a string. */
static const char *string_of(json_object *o, const char *name)
{
    json_object *v;

    if (!json_object_object_get_ex(o, name, &v) || !json_object_is_type(v, json_type_string))
        return NULL;
    /* "\u0000" inside: the text before it is not the whole value. */
    if (strlen(json_object_get_string(v)) != (size_t)json_object_get_string_len(v))
        return NULL;
    return json_object_get_string(v);
}

static int decode_key(const char *b64, uint8_t out[CLUSTER_KEY_LEN])
{
    size_t n = 0;

    if (!b64 || sodium_base642bin(out, CLUSTER_KEY_LEN, b64, strlen(b64), NULL, &n, NULL,
                                  sodium_base64_VARIANT_ORIGINAL) != 0 || n != CLUSTER_KEY_LEN)
        return -EINVAL;
    return 0;
}

/* The optional candidates and observed members: absent, or right. */
static int decode_candidates(json_object *o, struct cluster_node *n, const char **why)
{
    json_object *arr;
    const char *obs = string_of(o, JSON_OBSERVED);

    if (json_object_object_get_ex(o, JSON_OBSERVED, NULL)) {
        if (!obs || record_cand_parse(obs, &n->observed))
            return *why = "no valid observed (a string IP:PORT, an address others reach)",
                   -EINVAL;
        n->has_observed = true;
    }
    if (!json_object_object_get_ex(o, JSON_CANDS, &arr))
        return 0;
    if (!json_object_is_type(arr, json_type_array) ||
        json_object_array_length(arr) > CLUSTER_CANDIDATES_MAX)
        return *why = "candidates that are not an array of IP:PORT strings, or too many", -EINVAL;
    for (size_t i = 0; i < json_object_array_length(arr); i++) {
        json_object *v = json_object_array_get_idx(arr, i);
        const char *text = json_object_get_string(v);
        if (!json_object_is_type(v, json_type_string) ||
            strlen(text) != (size_t)json_object_get_string_len(v) ||
            record_cand_parse(text, &n->candidates[i]))
            return *why = "a candidate that is not IP:PORT, or an address others cannot reach",
                   -EINVAL;
        n->n_candidates = (uint8_t)(i + 1);
    }
    if (cands_bad(n->candidates, n->n_candidates))
        return *why = "the same candidate twice", -EINVAL;
    return 0;
}

static int decode_fields(json_object *o, const struct cluster *c, struct cluster_node *n,
                         const char **why)
{
    const char *name = string_of(o, JSON_NAME), *addr = string_of(o, JSON_ADDRESS);
    const char *ep = string_of(o, JSON_ENDPOINT);
    json_object *port;

    if (!name || strlen(name) > CLUSTER_NAME_MAX || !cluster_name_valid(name))
        return *why = "no valid name", -EINVAL;
    /* A registered name is its holder's own word, as a machine name is. */
    if (!cluster_claim_ok(c, name))
        return *why = "a name no member may take (localhost, ip6-*, or a dotted name "
                      "outside machine-domains)", -EINVAL;
    snprintf(n->name, sizeof(n->name), "%s", name);
    if (decode_key(string_of(o, JSON_KEY), n->public_key))
        return *why = "no valid public_key (44 characters of base64, 32 bytes)", -EINVAL;
    if (!addr || cluster_addr_parse(addr, &n->address) < 0)
        return *why = "no valid address", -EINVAL;
    if (!cluster_addr_in_network(&n->address, &c->network, c->prefix) ||
        cluster_addr_is_broadcast(&n->address, c->prefix) ||
        cluster_addr_equal(&n->address, &c->network))
        return *why = "an address outside the network", -EINVAL;
    if (ep || json_object_object_get_ex(o, JSON_ENDPOINT, NULL)) {
        if (!ep)
            return *why = "no valid endpoint (a string HOST:PORT)", -EINVAL;
        if (cluster_endpoint_parse(ep, &n->endpoint, why) < 0)
            return -EINVAL;
        n->has_endpoint = true;
    }
    if (json_object_object_get_ex(o, JSON_PORT, &port)) {
        int32_t v = json_object_get_int(port);
        if (!json_object_is_type(port, json_type_int) || v < 1 || v > (int32_t)CLUSTER_PORT_MAX)
            return *why = "a port outside 1..65535", -EINVAL;
        n->port = (uint16_t)v;
    }
    return decode_candidates(o, n, why);
}

int record_decode(const char *value, size_t len, const struct cluster *c,
                  struct cluster_node *n, const char **why)
{
    json_tokener *tok;
    json_object *o;
    int ret;

    memset(n, 0, sizeof(*n));
    if (len > RECORD_VALUE_MAX || memchr(value, '\0', len))
        return *why = "a value too long or not text", -EINVAL;
    if (!(tok = json_tokener_new()))
        return *why = "out of memory", -ENOMEM;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);   /* no comments, quotes or commas of JS */
    o = json_tokener_parse_ex(tok, value, (int)len);
    /* One whole object and nothing after it. */
    if (!o || json_tokener_get_error(tok) != json_tokener_success ||
        (size_t)json_tokener_get_parse_end(tok) != len) {
        json_object_put(o);
        json_tokener_free(tok);
        return *why = "not one JSON object", -EINVAL;
    }
    json_tokener_free(tok);
    ret = json_object_is_type(o, json_type_object) ? decode_fields(o, c, n, why)
                                                    : (*why = "not a JSON object", -EINVAL);
    json_object_put(o);
    if (ret)
        memset(n, 0, sizeof(*n));
    return ret;
}

/* value[0..len) as one JSON object, or NULL (the caller puts it). */
static json_object *parse_object(const char *value, size_t len)
{
    json_tokener *tok;
    json_object *o;

    if (len > RECORD_VALUE_MAX || memchr(value, '\0', len) || !(tok = json_tokener_new()))
        return NULL;
    json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
    o = json_tokener_parse_ex(tok, value, (int)len);
    if (o && (json_tokener_get_error(tok) != json_tokener_success ||
              (size_t)json_tokener_get_parse_end(tok) != len ||
              !json_object_is_type(o, json_type_object))) {
        json_object_put(o);
        o = NULL;
    }
    json_tokener_free(tok);
    return o;
}

int record_cert(const char *value, size_t len, char *out, size_t cap)
{
    json_object *o = parse_object(value, len);
    const char *text;
    int ret = 0;

    out[0] = '\0';
    if (!o)
        return -EINVAL;
    if (json_object_object_get_ex(o, JSON_CERT, NULL)) {
        text = string_of(o, JSON_CERT);
        ret = text && strlen(text) < cap ? 1 : -EINVAL;
        if (ret == 1)
            memcpy(out, text, strlen(text) + 1);
    }
    json_object_put(o);
    return ret;
}

int record_member_key(const char *prefix, const char *name, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%s%s%s", prefix, RECORD_MEMBERS, name);

    return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

int record_address_key(const char *prefix, const struct cluster_addr *a, char *buf, size_t len)
{
    char text[CLUSTER_HOST_MAX + 3];
    int n;

    if (cluster_addr_format(a, text, sizeof(text)) < 0)
        return -EINVAL;
    n = snprintf(buf, len, "%s%s%s", prefix, RECORD_ADDRESSES, text);
    return n < 0 || (size_t)n >= len ? -ENOSPC : n;
}

const char *record_key_tail(const char *prefix, const char *kind, const char *key, size_t key_len,
                            char *tail, size_t tail_len)
{
    size_t p = strlen(prefix), k = strlen(kind);

    if (key_len <= p + k || memcmp(key, prefix, p) || memcmp(key + p, kind, k) ||
        key_len - p - k >= tail_len || memchr(key + p + k, '\0', key_len - p - k))
        return NULL;
    memcpy(tail, key + p + k, key_len - p - k);
    tail[key_len - p - k] = '\0';
    return tail;
}
