/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/record.c, the registry's values and keys: a
 * record encoded and decoded back (IPv4 and IPv6 networks, with and
 * without endpoint and port, IP and hostname endpoints), every malformed
 * value refused with the reason the log shows (not JSON, bytes after the
 * object, not an object, each field missing or bad, the address outside
 * the network or its own or broadcast address, a NUL byte, too long), a
 * node's candidates and observed address (issue 30: carried in order,
 * refused when malformed, repeated, unreachable or too many, trimmed to
 * fit the value's limit; a record without them still reads), and
 * the etcd key names: built, and their tails read back only from keys of
 * the right prefix and kind. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/cluster.h"
#include "overlay/registry/record.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="

#define WHY_JSON    "not one JSON object"
#define WHY_OBJECT  "not a JSON object"
#define WHY_NAME    "no valid name"
#define WHY_KEY     "no valid public_key (44 characters of base64, 32 bytes)"
#define WHY_ADDR    "no valid address"
#define WHY_OUTSIDE "an address outside the network"
#define WHY_ENDPOINT "no valid endpoint (a string HOST:PORT)"
#define WHY_PORT    "a port outside 1..65535"
#define WHY_BYTES   "a value too long or not text"
#define WHY_CANDS   "candidates that are not an array of IP:PORT strings, or too many"
#define WHY_CAND    "a candidate that is not IP:PORT, or an address others cannot reach"
#define WHY_TWICE   "the same candidate twice"
#define WHY_OBSERVED "no valid observed (a string IP:PORT, an address others reach)"

/* A network as a cluster file's [cluster] gives it. */
static struct cluster net_of(const char *text)
{
    struct cluster c;
    const char *why = NULL;

    memset(&c, 0, sizeof(c));
    assert_int_equal(cluster_prefix_parse(text, &c.network, &c.prefix, &why), 0);
    cluster_addr_mask(&c.network, c.prefix);
    /* As a parse without machine-domains leaves it. */
    c.machine_domains.n = 1;
    snprintf(c.machine_domains.name[0], sizeof(c.machine_domains.name[0]), "%s",
             CLUSTER_MACHINE_DOMAINS_DEFAULT);
    return c;
}

static void node_of(struct cluster_node *n, const char *name, const char *key,
                    const char *addr, const char *endpoint, uint16_t port)
{
    size_t len = 0;

    memset(n, 0, sizeof(*n));
    snprintf(n->name, sizeof(n->name), "%s", name);
    assert_int_equal(sodium_base642bin(n->public_key, CLUSTER_KEY_LEN, key, strlen(key), NULL,
                                       &len, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
    assert_int_equal(len, CLUSTER_KEY_LEN);
    assert_int_equal(cluster_addr_parse(addr, &n->address), 0);
    if (endpoint) {
        assert_int_equal(cluster_endpoint_parse(endpoint, &n->endpoint, NULL), 0);
        n->has_endpoint = true;
    }
    n->port = port;
}

/* Encodes n, decodes it back and compares field by field. */
static void round_trip(const struct cluster *c, const struct cluster_node *n)
{
    char buf[RECORD_VALUE_MAX + 1];
    struct cluster_node back;
    const char *why = NULL;
    int len = record_encode(n, buf, sizeof(buf));

    assert_true(len > 0);
    assert_int_equal((size_t)len, strlen(buf));
    assert_int_equal(record_decode(buf, (size_t)len, c, &back, &why), 0);
    assert_string_equal(back.name, n->name);
    assert_memory_equal(back.public_key, n->public_key, CLUSTER_KEY_LEN);
    assert_true(cluster_addr_equal(&back.address, &n->address));
    assert_int_equal(back.has_endpoint, n->has_endpoint);
    if (n->has_endpoint) {
        assert_string_equal(back.endpoint.host, n->endpoint.host);
        assert_int_equal(back.endpoint.port, n->endpoint.port);
        assert_int_equal(back.endpoint.literal, n->endpoint.literal);
        if (n->endpoint.literal)
            assert_true(cluster_addr_equal(&back.endpoint.addr, &n->endpoint.addr));
    }
    assert_int_equal(back.port, n->port);
    /* What a record cannot carry stays zero. */
    assert_int_equal(back.n_aliases, 0);
    assert_false(back.keepalive_set);
}

static void test_round_trip_ipv4(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    struct cluster_node n;

    (void)state;
    node_of(&n, "gpu-7", K1, "10.77.0.9", NULL, 0);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "10.77.0.9", "203.0.113.7:51820", 0);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "10.77.0.254", "203.0.113.7:51820", 51821);
    round_trip(&c, &n);
    node_of(&n, "a.b-c.internal", K2, "10.77.0.1", NULL, 65535);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "10.77.0.9", "[2001:db8::7]:1", 1);
    round_trip(&c, &n);
}

/* A record with its certificate: the cert member round-trips beside the
 * fields (which decode as without it), a full-size certificate fits
 * RECORD_VALUE_MAX with eight IPv6 candidates, and a cert that is not a
 * string is refused. */
static void test_record_cert(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    char buf[RECORD_VALUE_MAX + 1], cert[CERT_TEXT_MAX], back[CERT_TEXT_MAX + 1];
    struct cluster_node n, d;
    const char *why = NULL;
    int len;

    (void)state;
    node_of(&n, "gpu-7", K1, "10.77.0.9", "203.0.113.7:51820", 0);
    assert_int_equal(record_cert("{\"name\":\"x\"}", 12, back, sizeof(back)), 0);
    memset(cert, 'c', sizeof(cert) - 1);
    cert[sizeof(cert) - 1] = '\0';
    n.n_candidates = CLUSTER_CANDIDATES_MAX;
    for (unsigned i = 0; i < CLUSTER_CANDIDATES_MAX; i++) {
        char text[64];
        snprintf(text, sizeof(text), "[2001:db8:aaaa:bbbb:cccc:dddd:eeee:%x]:51820", i + 1);
        assert_int_equal(record_cand_parse(text, &n.candidates[i]), 0);
    }
    assert_true((len = record_encode_cert(&n, cert, buf, sizeof(buf))) > 0);
    assert_int_equal(record_cert(buf, (size_t)len, back, sizeof(back)), 1);
    assert_string_equal(back, cert);
    assert_int_equal(record_decode(buf, (size_t)len, &c, &d, &why), 0);
    assert_int_equal(d.n_candidates, CLUSTER_CANDIDATES_MAX);
    assert_string_equal(d.name, "gpu-7");
    /* Too small a buffer for it, or not a string: refused. */
    assert_int_equal(record_cert(buf, (size_t)len, back, 16), -EINVAL);
    assert_int_equal(record_cert("{\"cert\":5}", 10, back, sizeof(back)), -EINVAL);
    assert_int_equal(record_cert("not json", 8, back, sizeof(back)), -EINVAL);
}

static void test_round_trip_ipv6(void **state)
{
    struct cluster c = net_of("fd77::/64");
    struct cluster_node n;

    (void)state;
    node_of(&n, "gpu-7", K1, "fd77::9", NULL, 0);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "fd77::ffff:ffff:ffff:ffff", "[2001:db8::7]:51820", 4242);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "fd77::1", "198.51.100.1:51820", 0);
    round_trip(&c, &n);
}

static void test_round_trip_hostname(void **state)
{
    struct cluster c = net_of("10.77.0.0/16");
    struct cluster_node n;
    char host[CLUSTER_HOST_MAX + 16];

    (void)state;
    node_of(&n, "gpu-7", K1, "10.77.3.4", "node7.example.com:51820", 0);
    assert_false(n.endpoint.literal);
    round_trip(&c, &n);
    node_of(&n, "gpu-7", K1, "10.77.3.4", "node7.example.com.:443", 443);
    round_trip(&c, &n);
    /* The longest hostname and name still fit a value. */
    memset(host, 0, sizeof(host));
    for (size_t i = 0; i < 4; i++)
        memset(host + i * 64, 'a' + (int)i, 63), host[i * 64 + 63] = '.';
    host[CLUSTER_HOST_MAX] = '\0';                 /* 253 characters, last label 61 */
    assert_int_equal(strlen(host), CLUSTER_HOST_MAX);
    strcat(host, ":9");
    node_of(&n, "x", K1, "10.77.3.4", host, 0);
    memset(n.name, 'n', CLUSTER_NAME_MAX);
    n.name[CLUSTER_NAME_MAX] = '\0';
    round_trip(&c, &n);
}

static void test_encode_refusals(void **state)
{
    struct cluster_node n;
    char buf[RECORD_VALUE_MAX + 1];
    int len;

    (void)state;
    node_of(&n, "gpu-7", K1, "10.77.0.9", "203.0.113.7:51820", 51820);
    n.name[0] = '\0';
    assert_int_equal(record_encode(&n, buf, sizeof(buf)), -EINVAL);
    node_of(&n, "gpu-7", K1, "10.77.0.9", NULL, 0);
    n.address.family = 0;
    assert_int_equal(record_encode(&n, buf, sizeof(buf)), -EINVAL);
    /* The buffer must hold the text and its NUL. */
    node_of(&n, "gpu-7", K1, "10.77.0.9", NULL, 0);
    len = record_encode(&n, buf, sizeof(buf));
    assert_true(len > 0);
    assert_int_equal(record_encode(&n, buf, (size_t)len), -ENOSPC);
    assert_int_equal(record_encode(&n, buf, (size_t)len + 1), len);
    assert_int_equal(record_encode(&n, buf, 0), -ENOSPC);
}

/* What record_decode says of text (NULL when it decodes). */
static const char *refused(const struct cluster *c, const char *text, size_t len)
{
    struct cluster_node n;
    const char *why = NULL;
    int r;

    memset(&n, 0xa5, sizeof(n));
    r = record_decode(text, len, c, &n, &why);
    if (r == 0)
        return NULL;
    assert_int_equal(r, -EINVAL);
    assert_non_null(why);
    /* Nothing half-decoded is left behind. */
    for (size_t i = 0; i < sizeof(n); i++)
        assert_int_equal(((const uint8_t *)&n)[i], 0);
    return why;
}

static void assert_refused(const struct cluster *c, const char *text, const char *why)
{
    const char *got = refused(c, text, strlen(text));

    if (!got)
        fail_msg("accepted: %s", text);
    if (strcmp(got, why))
        fail_msg("%s: refused as '%s', expected '%s'", text, got, why);
}

#define NAME  "\"name\": \"gpu-7\""
#define KEY   "\"public_key\": \"" K1 "\""
#define ADDR  "\"address\": \"10.77.0.9\""
#define GOOD  "{" NAME ", " KEY ", " ADDR "}"

static void test_decode_not_an_object(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");

    (void)state;
    assert_null(refused(&c, GOOD, strlen(GOOD)));
    assert_refused(&c, "", WHY_JSON);
    assert_refused(&c, "gpu-7", WHY_JSON);
    assert_refused(&c, "{\"name\": \"gpu-7\"", WHY_JSON);          /* cut short */
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR "", WHY_JSON);
    assert_refused(&c, "{" NAME ",, " KEY "}", WHY_JSON);
    assert_refused(&c, GOOD "x", WHY_JSON);                         /* trailing bytes */
    assert_refused(&c, GOOD " x", WHY_JSON);
    assert_refused(&c, GOOD "}", WHY_JSON);
    assert_refused(&c, GOOD GOOD, WHY_JSON);
    assert_refused(&c, GOOD "\n" GOOD, WHY_JSON);
    /* Blanks around the value are JSON's own (RFC 8259): accepted. */
    assert_null(refused(&c, GOOD "\n", strlen(GOOD "\n")));
    assert_null(refused(&c, " " GOOD " ", strlen(" " GOOD " ")));
    assert_refused(&c, "[" GOOD "]", WHY_OBJECT);
    assert_refused(&c, "[]", WHY_OBJECT);
    assert_refused(&c, "\"gpu-7\"", WHY_OBJECT);
    assert_refused(&c, "null", WHY_JSON);                 /* json-c's null is no object at all */
    /* Bare words and numbers: refused (json-c may still be waiting for
     * more of them at the end of the bytes, so the reason may be either). */
    assert_non_null(refused(&c, "true", 4));
    assert_non_null(refused(&c, "7", 1));
    assert_refused(&c, "7 ", WHY_OBJECT);
}

static void test_decode_bad_fields(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");

    (void)state;
    /* name */
    assert_refused(&c, "{" KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": 7, " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": null, " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"gpu 7\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"-gpu\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"gpu/7\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"a..b\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{\"name\": \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\", "
                       KEY ", " ADDR "}", WHY_NAME);                /* 64 characters */
    /* public_key */
    assert_refused(&c, "{" NAME ", " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", \"public_key\": 1, " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", \"public_key\": \"not base64!\", " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", \"public_key\": \"AAAA\", " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", \"public_key\": \"" K1 "AAAA\", " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", \"public_key\": \"A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1Bj"
                       "==\", " ADDR "}", WHY_KEY);                /* 31 bytes */
    assert_refused(&c, "{" NAME ", \"public_key\": \"A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA\", "
                       ADDR "}", WHY_KEY);                          /* no padding */
    /* address */
    assert_refused(&c, "{" NAME ", " KEY "}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": 167772169}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.256\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.9/24\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \" 10.77.0.9\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"gpu-7\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.78.0.9\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.1.9\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.0\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.255\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"fd77::9\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"::ffff:10.77.0.9\"}", WHY_OUTSIDE);
    /* endpoint: the reason is the endpoint parser's */
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"203.0.113.7\"}",
                   "missing port (expected host:port)");
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"\"}",
                   "missing port (expected host:port)");
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"2001:db8::7:51820\"}",
                   "ipv6 addresses need brackets, e.g. [fd00::1]:51820");
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"bad_host:51820\"}",
                   "not an ipv4 address or a valid hostname");
    assert_non_null(refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"h:0\"}",
                            strlen("{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"h:0\"}")));
    assert_non_null(refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"h:65536\"}",
                            strlen("{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"h:65536\"}")));
    /* an endpoint that is not a string is refused, not ignored */
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": 51820}", WHY_ENDPOINT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": null}", WHY_ENDPOINT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": [\"h:1\"]}", WHY_ENDPOINT);
    /* port */
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": 0}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": -1}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": 65536}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": 4294967297}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": \"51820\"}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": 51820.5}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": null}", WHY_PORT);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"port\": true}", WHY_PORT);
}

/* A registered name is its holder's own word (cluster_claim_ok): what no
 * member may take is refused, whoever wrote the record. */
#define WHY_CLAIM "a name no member may take (localhost, ip6-*, or a dotted name " \
                  "outside machine-domains)"
static void test_decode_names_no_member_takes(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    static const char *const refused_names[] = {
        "localhost", "LocalHost", "localhost.localdomain", "gpu.localhost", "ip6-localhost",
        "ip6-loopback", "github.com", "pypi.org", "gpu-7.example.com", "ip6-allnodes", "ec2.internal.evil.com",
    };
    char text[256];

    (void)state;
    for (size_t i = 0; i < sizeof(refused_names) / sizeof(refused_names[0]); i++) {
        snprintf(text, sizeof(text), "{\"name\": \"%s\", " KEY ", " ADDR "}", refused_names[i]);
        assert_refused(&c, text, WHY_CLAIM);
    }
    assert_null(refused(&c, "{\"name\": \"ip-10-0-0-7.ec2.internal\", " KEY ", " ADDR "}",
                        strlen("{\"name\": \"ip-10-0-0-7.ec2.internal\", " KEY ", " ADDR "}")));
    /* machine-domains = none: one label only. */
    c.machine_domains.n = 0;
    assert_refused(&c, "{\"name\": \"ip-10-0-0-7.ec2.internal\", " KEY ", " ADDR "}", WHY_CLAIM);
    assert_null(refused(&c, GOOD, strlen(GOOD)));
}

static void test_decode_accepts(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    struct cluster_node n;
    const char *why = NULL;
    const char *text = "{\"port\": 65535, \"extra\": [1, {\"x\": null}], " ADDR ", " KEY
                       ", \"endpoint\": \"[2001:db8::7]:1\", " NAME "}";

    (void)state;
    /* Members in any order; members of no meaning ignored. */
    assert_int_equal(record_decode(text, strlen(text), &c, &n, &why), 0);
    assert_string_equal(n.name, "gpu-7");
    assert_int_equal(n.port, 65535);
    assert_true(n.has_endpoint);
    assert_int_equal(n.endpoint.port, 1);
    assert_true(n.endpoint.literal);
    /* Only len bytes are read: what follows them does not count. */
    assert_int_equal(record_decode(GOOD "garbage", strlen(GOOD), &c, &n, &why), 0);
    /* The edges of the network. */
    text = "{" NAME ", " KEY ", \"address\": \"10.77.0.1\", \"port\": 1}";
    assert_int_equal(record_decode(text, strlen(text), &c, &n, &why), 0);
    assert_int_equal(n.port, 1);
    text = "{" NAME ", " KEY ", \"address\": \"10.77.0.254\"}";
    assert_int_equal(record_decode(text, strlen(text), &c, &n, &why), 0);
    assert_false(n.has_endpoint);
    assert_int_equal(n.port, 0);
}

static void cand_of(struct cluster_cand *c, const char *text)
{
    assert_int_equal(record_cand_parse(text, c), 0);
}

static bool same_cand(const struct cluster_cand *a, const struct cluster_cand *b)
{
    return a->port == b->port && cluster_addr_equal(&a->addr, &b->addr);
}

static void test_candidates_round_trip(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    static const char *const texts[] = { "203.0.113.7:51820", "10.0.3.7:51820",
                                         "[2001:db8::7]:51820", "192.168.1.7:1" };
    char buf[RECORD_VALUE_MAX + 1];
    struct cluster_node n, back;
    const char *why = NULL;

    (void)state;
    node_of(&n, "gpu-7", K1, "10.77.0.9", "203.0.113.7:51820", 0);
    for (unsigned i = 0; i < 4; i++)
        cand_of(&n.candidates[n.n_candidates++], texts[i]);
    cand_of(&n.observed, "198.51.100.4:40123");
    n.has_observed = true;
    int len = record_encode(&n, buf, sizeof(buf));
    assert_true(len > 0);
    assert_non_null(strstr(buf, "\"candidates\":[\"203.0.113.7:51820\",\"10.0.3.7:51820\","
                                "\"[2001:db8::7]:51820\",\"192.168.1.7:1\"]"));
    assert_non_null(strstr(buf, "\"observed\":\"198.51.100.4:40123\""));
    assert_int_equal(record_decode(buf, (size_t)len, &c, &back, &why), 0);
    /* In the node's order: the endpoint first, as it gave them. */
    assert_int_equal(back.n_candidates, 4);
    for (unsigned i = 0; i < 4; i++)
        assert_true(same_cand(&back.candidates[i], &n.candidates[i]));
    assert_true(back.has_observed);
    assert_true(same_cand(&back.observed, &n.observed));
    round_trip(&c, &n);
    /* None: neither member is written, and an older record reads. */
    node_of(&n, "gpu-7", K1, "10.77.0.9", NULL, 0);
    len = record_encode(&n, buf, sizeof(buf));
    assert_null(strstr(buf, "candidates"));
    assert_null(strstr(buf, "observed"));
    assert_int_equal(record_decode(GOOD, strlen(GOOD), &c, &back, &why), 0);
    assert_int_equal(back.n_candidates, 0);
    assert_false(back.has_observed);
}

/* The most a record holds: a long name, a hostname endpoint, eight long
 * IPv6 candidates, an observed one: it fits RECORD_VALUE_MAX whole. In a
 * smaller space the last candidates give way, the observed one stays. */
static void test_candidates_trimmed(void **state)
{
    struct cluster c = net_of("fd77::/64");
    char buf[RECORD_VALUE_MAX + 1], host[CLUSTER_HOST_MAX + 16], text[64];
    struct cluster_node n, back;
    const char *why = NULL;

    (void)state;
    /* Labels of 60 letters: a 246-character hostname. */
    memset(host, 'a', 238);
    for (unsigned i = 60; i < 238; i += 61)
        host[i] = '.';
    snprintf(host + 238, sizeof(host) - 238, ".example:51820");
    node_of(&n, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", K1,
            "fd77::ffff:ffff:ffff:fffe", host, 65535);
    for (unsigned i = 0; i < CLUSTER_CANDIDATES_MAX; i++) {
        snprintf(text, sizeof(text), "[2001:db8:ffff:ffff:ffff:ffff:ffff:ff%02x]:65535", i);
        cand_of(&n.candidates[n.n_candidates++], text);
    }
    cand_of(&n.observed, "[2001:db8:ffff:ffff:ffff:ffff:ffff:fffe]:65535");
    n.has_observed = true;
    int len = record_encode(&n, buf, sizeof(buf));
    assert_true(len > 0 && (size_t)len <= RECORD_VALUE_MAX);
    assert_int_equal(record_decode(buf, (size_t)len, &c, &back, &why), 0);
    assert_int_equal(back.n_candidates, CLUSTER_CANDIDATES_MAX);
    len = record_encode(&n, buf, 700);
    assert_true(len > 0 && len < 700);
    assert_int_equal(record_decode(buf, (size_t)len, &c, &back, &why), 0);
    assert_true(back.n_candidates > 0 && back.n_candidates < CLUSTER_CANDIDATES_MAX);
    for (unsigned i = 0; i < back.n_candidates; i++)
        assert_true(same_cand(&back.candidates[i], &n.candidates[i]));
    assert_true(back.has_observed);
    /* A node whose candidates break the rules is not written. */
    n.candidates[1] = n.candidates[0];
    assert_int_equal(record_encode(&n, buf, sizeof(buf)), -EINVAL);
    n.n_candidates = CLUSTER_CANDIDATES_MAX + 1;
    assert_int_equal(record_encode(&n, buf, sizeof(buf)), -EINVAL);
}

#define CANDS(list) "{" NAME ", " KEY ", " ADDR ", \"candidates\": " list "}"
#define OBSERVED(one) "{" NAME ", " KEY ", " ADDR ", \"observed\": " one "}"

static void test_candidates_refused(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    struct cluster_node n;
    const char *why = NULL;
    const char *nine = CANDS("[\"10.0.0.1:1\", \"10.0.0.2:1\", \"10.0.0.3:1\", \"10.0.0.4:1\", "
                             "\"10.0.0.5:1\", \"10.0.0.6:1\", \"10.0.0.7:1\", \"10.0.0.8:1\", "
                             "\"10.0.0.9:1\"]");
    const char *eight = CANDS("[\"10.0.0.1:1\", \"10.0.0.2:1\", \"10.0.0.3:1\", \"10.0.0.4:1\", "
                              "\"10.0.0.5:1\", \"10.0.0.6:1\", \"10.0.0.7:1\", \"10.0.0.8:1\"]");

    (void)state;
    assert_int_equal(record_decode(eight, strlen(eight), &c, &n, &why), 0);
    assert_int_equal(n.n_candidates, CLUSTER_CANDIDATES_MAX);
    assert_refused(&c, nine, WHY_CANDS);
    assert_refused(&c, CANDS("\"10.0.0.1:1\""), WHY_CANDS);
    assert_refused(&c, CANDS("{\"a\": \"10.0.0.1:1\"}"), WHY_CANDS);
    assert_refused(&c, CANDS("null"), WHY_CANDS);
    assert_refused(&c, CANDS("[7]"), WHY_CAND);
    assert_refused(&c, CANDS("[null]"), WHY_CAND);
    assert_refused(&c, CANDS("[[\"10.0.0.1:1\"]]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"10.0.0.1\"]"), WHY_CAND);             /* no port */
    assert_refused(&c, CANDS("[\"10.0.0.1:0\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"10.0.0.1:65536\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"host.example:51820\"]"), WHY_CAND);    /* not a literal */
    assert_refused(&c, CANDS("[\"2001:db8::1:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"127.0.0.1:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"169.254.1.1:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"0.0.0.0:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"224.0.0.1:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"255.255.255.255:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"[::1]:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"[fe80::1]:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"[ff02::1]:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"[::]:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"[::ffff:10.0.0.1]:51820\"]"), WHY_CAND);
    assert_refused(&c, CANDS("[\"10.0.0.1:1\", \"10.0.0.1:1\"]"), WHY_TWICE);
    assert_refused(&c, OBSERVED("7"), WHY_OBSERVED);
    assert_refused(&c, OBSERVED("null"), WHY_OBSERVED);
    assert_refused(&c, OBSERVED("[\"198.51.100.4:1\"]"), WHY_OBSERVED);
    assert_refused(&c, OBSERVED("\"127.0.0.1:1\""), WHY_OBSERVED);
    assert_refused(&c, OBSERVED("\"198.51.100.4\""), WHY_OBSERVED);
    /* The same address on another port is another candidate. */
    const char *two = CANDS("[\"10.0.0.1:1\", \"10.0.0.1:2\"]");
    assert_int_equal(record_decode(two, strlen(two), &c, &n, &why), 0);
    assert_int_equal(n.n_candidates, 2);
    const char *empty = CANDS("[]");
    assert_int_equal(record_decode(empty, strlen(empty), &c, &n, &why), 0);
    assert_int_equal(n.n_candidates, 0);
}

static void test_decode_ipv6(void **state)
{
    struct cluster c = net_of("fd77::/120");

    (void)state;
    assert_null(refused(&c, "{" NAME ", " KEY ", \"address\": \"fd77::ff\"}",
                        strlen("{" NAME ", " KEY ", \"address\": \"fd77::ff\"}")));
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"fd77::\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"fd77::100\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.9\"}", WHY_OUTSIDE);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"fd77::1%eth0\"}", WHY_ADDR);
}

static void test_decode_bytes(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");
    char big[RECORD_VALUE_MAX + 64];
    size_t len;

    (void)state;
    /* A NUL byte anywhere: in a string, between members, at the end. */
    static const char with_nul[] = "{\"name\": \"gpu\0-7\", " KEY ", " ADDR "}";
    assert_string_equal(refused(&c, with_nul, sizeof(with_nul) - 1), WHY_BYTES);
    static const char nul_end[] = GOOD "\0";
    assert_string_equal(refused(&c, nul_end, sizeof(nul_end) - 1), WHY_BYTES);
    static const char nul_first[] = "\0" GOOD;
    assert_string_equal(refused(&c, nul_first, sizeof(nul_first) - 1), WHY_BYTES);
    /* Longer than RECORD_VALUE_MAX: refused before it is parsed, even
     * when it is a valid record padded with blanks inside. */
    len = (size_t)snprintf(big, sizeof(big), "{" NAME ", " KEY ", " ADDR ", \"pad\": \"");
    while (len < RECORD_VALUE_MAX - 2)
        big[len++] = 'x';
    memcpy(big + len, "\"}", 3);
    len += 2;
    assert_int_equal(len, RECORD_VALUE_MAX);
    assert_null(refused(&c, big, len));                       /* exactly the most */
    memmove(big + 1, big, len + 1);
    big[0] = ' ';
    assert_string_equal(refused(&c, big, len + 1), WHY_BYTES);
}

/* A string with "\u0000" in it decodes to one holding a NUL: the part
 * before it must not be taken for the whole. */
static void test_decode_escaped_nul(void **state)
{
    struct cluster c = net_of("10.77.0.0/24");

    (void)state;
    assert_refused(&c, "{\"name\": \"gpu-7\\u0000evil\", " KEY ", " ADDR "}", WHY_NAME);
    assert_refused(&c, "{" NAME ", \"public_key\": \"" K1 "\\u0000junk\", " ADDR "}", WHY_KEY);
    assert_refused(&c, "{" NAME ", " KEY ", \"address\": \"10.77.0.9\\u0000x\"}", WHY_ADDR);
    assert_refused(&c, "{" NAME ", " KEY ", " ADDR ", \"endpoint\": \"h:1\\u0000x\"}",
                   WHY_ENDPOINT);
    /* Other escapes are text like any other. */
    assert_null(refused(&c, "{\"n\\u0061me\": \"gpu\\u002d7\", " KEY ", " ADDR "}",
                        strlen("{\"n\\u0061me\": \"gpu\\u002d7\", " KEY ", " ADDR "}")));
}

static void test_member_key(void **state)
{
    char buf[CLUSTER_REGISTRY_PREFIX_MAX + 80];

    (void)state;
    assert_int_equal(record_member_key("/ddpnet/prod", "gpu-7", buf, sizeof(buf)),
                     (int)strlen("/ddpnet/prod/members/gpu-7"));
    assert_string_equal(buf, "/ddpnet/prod/members/gpu-7");
    assert_int_equal(record_member_key("/p", "a", buf, strlen("/p/members/a") + 1),
                     (int)strlen("/p/members/a"));
    assert_int_equal(record_member_key("/p", "a", buf, strlen("/p/members/a")), -ENOSPC);
    assert_int_equal(record_member_key("/p", "a", buf, 0), -ENOSPC);
}

static void test_address_key(void **state)
{
    char buf[CLUSTER_REGISTRY_PREFIX_MAX + 80];
    struct cluster_addr a;

    (void)state;
    assert_int_equal(cluster_addr_parse("10.77.0.9", &a), 0);
    assert_int_equal(record_address_key("/ddpnet/prod", &a, buf, sizeof(buf)),
                     (int)strlen("/ddpnet/prod/addresses/10.77.0.9"));
    assert_string_equal(buf, "/ddpnet/prod/addresses/10.77.0.9");
    assert_int_equal(cluster_addr_parse("fd77:0::0:9", &a), 0);
    assert_true(record_address_key("/d", &a, buf, sizeof(buf)) > 0);
    assert_string_equal(buf, "/d/addresses/fd77::9");           /* the canonical form */
    assert_int_equal(record_address_key("/d", &a, buf, strlen("/d/addresses/fd77::9")),
                     -ENOSPC);
    a.family = 0;
    assert_int_equal(record_address_key("/d", &a, buf, sizeof(buf)), -EINVAL);
}

static const char *tail_of(const char *prefix, const char *kind, const char *key, char *tail,
                           size_t len)
{
    return record_key_tail(prefix, kind, key, strlen(key), tail, len);
}

static void test_key_tail(void **state)
{
    char tail[CLUSTER_NAME_MAX + 1];
    const char *t;

    (void)state;
    t = tail_of("/ddpnet/prod", RECORD_MEMBERS, "/ddpnet/prod/members/gpu-7", tail, sizeof(tail));
    assert_ptr_equal(t, tail);
    assert_string_equal(tail, "gpu-7");
    assert_non_null(tail_of("/d", RECORD_ADDRESSES, "/d/addresses/10.77.0.9", tail, sizeof(tail)));
    assert_string_equal(tail, "10.77.0.9");
    /* The key of another kind, another prefix, a prefix's neighbour. */
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/addresses/10.77.0.9", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_ADDRESSES, "/d/members/gpu-7", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/e/members/gpu-7", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/dx/members/gpu-7", tail, sizeof(tail)));
    assert_null(tail_of("/ddpnet/prod", RECORD_MEMBERS, "/ddpnet/production/members/a", tail,
                        sizeof(tail)));
    assert_null(tail_of("/d/x", RECORD_MEMBERS, "/d/members/x/members/a", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/member/gpu-7", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/membersgpu-7", tail, sizeof(tail)));
    /* Shorter than prefix and kind, or nothing after them. */
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/members", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/members/", tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "", tail, sizeof(tail)));
    /* A tail that does not fit (with its NUL) is no tail. */
    char name[CLUSTER_NAME_MAX + 2], key[CLUSTER_NAME_MAX + 32];
    memset(name, 'n', CLUSTER_NAME_MAX);
    name[CLUSTER_NAME_MAX] = '\0';
    snprintf(key, sizeof(key), "/d/members/%s", name);
    assert_non_null(tail_of("/d", RECORD_MEMBERS, key, tail, sizeof(tail)));
    assert_string_equal(tail, name);
    snprintf(key, sizeof(key), "/d/members/%sn", name);
    assert_null(tail_of("/d", RECORD_MEMBERS, key, tail, sizeof(tail)));
    assert_null(tail_of("/d", RECORD_MEMBERS, "/d/members/ab", tail, 2));
    assert_non_null(tail_of("/d", RECORD_MEMBERS, "/d/members/ab", tail, 3));
    /* Keys are bytes, not strings: a NUL inside the tail, or in the
     * prefix part, is refused; only key_len bytes are read. */
    static const char nul_tail[] = "/d/members/gpu\0-7";
    assert_null(record_key_tail("/d", RECORD_MEMBERS, nul_tail, sizeof(nul_tail) - 1, tail,
                                sizeof(tail)));
    static const char nul_head[] = "/d\0members/gpu-7";
    assert_null(record_key_tail("/d", RECORD_MEMBERS, nul_head, sizeof(nul_head) - 1, tail,
                                sizeof(tail)));
    assert_non_null(record_key_tail("/d", RECORD_MEMBERS, "/d/members/gpu-7xyz",
                                    strlen("/d/members/gpu-7"), tail, sizeof(tail)));
    assert_string_equal(tail, "gpu-7");
    /* What a built key gives back. */
    char built[CLUSTER_REGISTRY_PREFIX_MAX + 80];
    assert_true(record_member_key("/ddpnet/prod", "gpu-7", built, sizeof(built)) > 0);
    assert_non_null(tail_of("/ddpnet/prod", RECORD_MEMBERS, built, tail, sizeof(tail)));
    assert_string_equal(tail, "gpu-7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_round_trip_ipv4),
        cmocka_unit_test(test_round_trip_ipv6),
        cmocka_unit_test(test_round_trip_hostname),
        cmocka_unit_test(test_encode_refusals),
        cmocka_unit_test(test_decode_not_an_object),
        cmocka_unit_test(test_decode_bad_fields),
        cmocka_unit_test(test_decode_names_no_member_takes),
        cmocka_unit_test(test_decode_accepts),
        cmocka_unit_test(test_candidates_round_trip),
        cmocka_unit_test(test_candidates_trimmed),
        cmocka_unit_test(test_candidates_refused),
        cmocka_unit_test(test_decode_ipv6),
        cmocka_unit_test(test_decode_bytes),
        cmocka_unit_test(test_decode_escaped_nul),
        cmocka_unit_test(test_record_cert),
        cmocka_unit_test(test_member_key),
        cmocka_unit_test(test_address_key),
        cmocka_unit_test(test_key_tail),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
