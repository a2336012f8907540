/* SPDX-License-Identifier: MIT */
/* Tests of the cluster-file parser (config/): valid files in their forms,
 * one malformed file per error with its exact message and line, several
 * errors at once, the error cap, lookups, loading from disk, and the text
 * helpers of config/addr.h. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cluster.h"

/* Public keys as `wg genkey | wg pubkey` printed them. */
#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="
#define K4 "vofb+H8p26CYyRdLZ9bDVFcOCg8L9uPQZkmy7iGBuns="

/* Lines 1-3 and 4-6 of most malformed files below. */
#define C4 "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n"
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
/* Lines 1-4: [cluster] with a registry (which needs no [node]). */
#define CR C4 "registry = etcd://127.0.0.1:2379/ddpnet\n"

static int parse_str(const char *text, struct cluster *c, struct cluster_diag *d)
{
    return cluster_parse(text, strlen(text), c, d);
}

static void decode_key(uint8_t out[CLUSTER_KEY_LEN], const char *b64)
{
    size_t len = 0;

    assert_int_equal(sodium_base642bin(out, CLUSTER_KEY_LEN, b64, strlen(b64),
                                       NULL, &len, NULL,
                                       sodium_base64_VARIANT_ORIGINAL), 0);
    assert_int_equal(len, CLUSTER_KEY_LEN);
}

static void assert_addr(const struct cluster_addr *a, const char *text)
{
    char buf[64];

    assert_int_equal(cluster_addr_format(a, buf, sizeof(buf)), 0);
    assert_string_equal(buf, text);
}

static void assert_endpoint(const struct cluster_node *n, const char *text)
{
    char buf[300];

    assert_true(n->has_endpoint);
    assert_int_equal(cluster_endpoint_format(&n->endpoint, buf, sizeof(buf)), 0);
    assert_string_equal(buf, text);
}

static void print_diag(const struct cluster_diag *d)
{
    char buf[300];

    for (size_t i = 0; i < d->n; i++) {
        cluster_diag_format(d, i, "test.conf", buf, sizeof(buf));
        print_message("  %s\n", buf);
    }
}

static void parse_ok(const char *text, size_t len, struct cluster *c)
{
    struct cluster_diag d;
    int r = cluster_parse(text, len, c, &d);

    if (r != 0)
        print_diag(&d);
    assert_int_equal(r, 0);
    assert_int_equal(d.n, 0);
}

/* machine-domains: where a member may claim a dotted machine name. The
 * default keeps cloud FQDNs under .internal; a list (commas or blanks, a
 * leading dot dropped) replaces it; `none` leaves one-label names only. */
/* busy-poll: a count up to the largest window, or always (never sleep),
 * which no count can be mistaken for. */
static void test_busy_poll_key(void **state)
{
    static const char always[] = C4 "busy-poll = always\n" NA;
    static const char most[] = C4 "busy-poll = 60000\n" NA;
    struct cluster c;

    (void)state;
    parse_ok(always, strlen(always), &c);
    assert_int_equal(c.busy_poll_us, CLUSTER_BUSY_POLL_ALWAYS);
    assert_true(c.busy_poll_set);
    cluster_free(&c);
    parse_ok(most, strlen(most), &c);
    assert_int_equal(c.busy_poll_us, CLUSTER_BUSY_POLL_MAX);
    assert_true(CLUSTER_BUSY_POLL_ALWAYS > CLUSTER_BUSY_POLL_MAX);
    cluster_free(&c);
}

/* socket-buffer: bytes or K, M, G of them; the default when absent. */
static void test_socket_buffer_key(void **state)
{
    static const struct { const char *value; unsigned bytes; } ok[] = {
        { "32M", 32u << 20 }, { "64k", 64u << 10 }, { "1G", 1u << 30 },
        { "16777216", 16u << 20 }, { "1024M", 1u << 30 }, { "65536", 65536u },
    };
    char text[512];
    struct cluster c;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        snprintf(text, sizeof(text), C4 "socket-buffer = %s\n" NA, ok[i].value);
        parse_ok(text, strlen(text), &c);
        assert_int_equal(c.socket_buffer, ok[i].bytes);
        assert_true(c.socket_buffer_set);
        cluster_free(&c);
    }
    snprintf(text, sizeof(text), C4 NA);
    parse_ok(text, strlen(text), &c);
    assert_int_equal(c.socket_buffer, CLUSTER_SOCKET_BUFFER_DEFAULT);
    assert_false(c.socket_buffer_set);
    cluster_free(&c);
}

static void test_machine_domains_key(void **state)
{
    static const char list[] = C4 "machine-domains = ec2.internal, .c.proj-1.internal  corp\n" NA;
    static const char none[] = C4 "machine-domains = none\n" NA;
    struct cluster c;

    (void)state;
    parse_ok(C4 NA, strlen(C4 NA), &c);
    assert_int_equal(c.machine_domains.n, 1);
    assert_string_equal(c.machine_domains.name[0], "internal");
    cluster_free(&c);
    parse_ok(list, strlen(list), &c);
    assert_int_equal(c.machine_domains.n, 3);
    assert_string_equal(c.machine_domains.name[0], "ec2.internal");
    assert_string_equal(c.machine_domains.name[1], "c.proj-1.internal");
    assert_string_equal(c.machine_domains.name[2], "corp");
    cluster_free(&c);
    parse_ok(none, strlen(none), &c);
    assert_int_equal(c.machine_domains.n, 0);
    cluster_free(&c);
}

/* What a member may claim by its own word, by the name alone. */
static void test_claim_rule(void **state)
{
    static const char list[] = C4 "machine-domains = ec2.internal, c.proj.internal\n" NA;
    static const char none[] = C4 "machine-domains = none\n" NA;
    static const char *const never[] = {
        "localhost", "LOCALHOST", "localhost6", "localhost.localdomain", "gpu.localhost",
        "ip6-localhost", "ip6-loopback", "IP6-Allnodes", "ip6-allrouters", "",
    };
    struct cluster c;

    (void)state;
    parse_ok(C4 NA, strlen(C4 NA), &c);
    for (size_t i = 0; i < sizeof(never) / sizeof(never[0]); i++) {
        assert_false(cluster_claim_ok(&c, never[i]));
        assert_true(!never[i][0] || cluster_name_reserved(never[i]));
    }
    assert_true(cluster_claim_ok(&c, "gpu-b1"));
    assert_true(cluster_claim_ok(&c, "ip-172-31-40-46.ec2.internal"));
    assert_true(cluster_claim_ok(&c, "metadata.google.internal"));  /* the resolver's call */
    assert_false(cluster_claim_ok(&c, "pypi.org"));
    assert_false(cluster_claim_ok(&c, "github.com"));
    assert_false(cluster_claim_ok(&c, "internal.evil.com"));
    assert_false(cluster_claim_ok(&c, "x.internalx"));
    assert_false(cluster_claim_ok(&c, "ec2.internal."));
    assert_false(cluster_name_reserved("gpu-b1"));
    assert_false(cluster_name_reserved("my-localhost"));
    cluster_free(&c);
    parse_ok(list, strlen(list), &c);
    assert_true(cluster_claim_ok(&c, "ip-10-0-0-1.EC2.internal"));
    assert_true(cluster_claim_ok(&c, "gpu-1.c.proj.internal"));
    assert_false(cluster_claim_ok(&c, "ec2.internal"));               /* the domain itself */
    assert_false(cluster_claim_ok(&c, "metadata.google.internal"));
    assert_false(cluster_claim_ok(&c, "xec2.internal"));
    assert_true(cluster_claim_ok(&c, "gpu-b1"));
    cluster_free(&c);
    parse_ok(none, strlen(none), &c);
    assert_false(cluster_claim_ok(&c, "ip-10-0-0-1.ec2.internal"));
    assert_true(cluster_claim_ok(&c, "ip-10-0-0-1"));
    cluster_free(&c);
}

/* --- valid files ------------------------------------------------------------ */

static const char ipv4_file[] =
    "# cluster.conf   \n"
    "  [cluster]   # the shared settings\n"
    "network = 10.77.0.0/16   # overlay network\n"
    "\tport\t=\t51820\n"
    "mtu=1380\n"
    "persistent-keepalive = 25 # seconds\n"
    "busy-poll = 0\n"
    "   \t  \n"
    "[node gpu-a1]\n"
    "public-key = " K1 "\n"
    "address = 10.77.0.1\n"
    "endpoint = 203.0.113.10:51820   # ipv4 literal\n"
    "[ node   GPU.b-2 ]  # spaces inside the brackets\n"
    "public-key = " K2 "#no space before the comment\n"
    "address = 10.77.0.2\n"
    "endpoint = [2001:db8::1]:51821\n"
    "port = 51821\n"
    "[node c]\n"
    "public-key = " K3 "\n"
    "address = 10.77.255.254\n"
    "endpoint = Node-C.Example.COM.:1\n"
    "[node d]\n"
    "public-key = " K4 "\n"
    "address = 10.77.0.4\n";

static void test_valid_ipv4(void **state)
{
    struct cluster c;
    (void)state;

    parse_ok(ipv4_file, strlen(ipv4_file), &c);
    assert_int_equal(c.network.family, AF_INET);
    assert_addr(&c.network, "10.77.0.0");
    assert_int_equal(c.prefix, 16);
    assert_int_equal(c.port, 51820);
    assert_int_equal(c.mtu, 1380);
    assert_true(c.mtu_set);
    assert_int_equal(c.persistent_keepalive, 25);
    assert_int_equal(c.busy_poll_us, 0);
    assert_true(c.busy_poll_set);
    assert_int_equal(c.n_nodes, 4);

    assert_string_equal(c.nodes[0].name, "gpu-a1");
    assert_int_equal(c.nodes[0].line, 9);
    assert_addr(&c.nodes[0].address, "10.77.0.1");
    assert_endpoint(&c.nodes[0], "203.0.113.10:51820");
    assert_true(c.nodes[0].endpoint.literal);
    assert_int_equal(c.nodes[0].endpoint.addr.family, AF_INET);
    assert_int_equal(c.nodes[0].port, 0);

    assert_string_equal(c.nodes[1].name, "GPU.b-2");
    assert_endpoint(&c.nodes[1], "[2001:db8::1]:51821");
    assert_true(c.nodes[1].endpoint.literal);
    assert_string_equal(c.nodes[1].endpoint.host, "2001:db8::1");
    assert_int_equal(c.nodes[1].endpoint.addr.family, AF_INET6);
    assert_int_equal(c.nodes[1].port, 51821);

    assert_endpoint(&c.nodes[2], "Node-C.Example.COM.:1");
    assert_false(c.nodes[2].endpoint.literal);
    assert_int_equal(c.nodes[2].endpoint.port, 1);
    assert_addr(&c.nodes[2].address, "10.77.255.254");

    assert_false(c.nodes[3].has_endpoint);
    uint8_t k4[CLUSTER_KEY_LEN];
    decode_key(k4, K4);
    assert_memory_equal(c.nodes[3].public_key, k4, CLUSTER_KEY_LEN);
    cluster_free(&c);
    assert_null(c.nodes);
    assert_int_equal(c.n_nodes, 0);
}

static void test_valid_ipv6_defaults(void **state)
{
    const char *text =
        "[cluster]\n"
        "network = fd77::/64\n"
        "port = 1\n"
        "[node only]\n"
        "public-key = " K1 "\n"
        "address = fd77::ffff:1\n"
        "endpoint = [fe80::1]:65535\n";
    struct cluster c;
    (void)state;

    parse_ok(text, strlen(text), &c);
    assert_int_equal(c.network.family, AF_INET6);
    assert_int_equal(c.prefix, 64);
    assert_int_equal(c.mtu, CLUSTER_MTU_DEFAULT);
    assert_int_equal(c.mtu, 1420);
    assert_false(c.mtu_set);
    assert_int_equal(c.persistent_keepalive, 0);
    assert_int_equal(c.busy_poll_us, CLUSTER_BUSY_POLL_DEFAULT);
    assert_false(c.busy_poll_set);
    assert_int_equal(c.n_nodes, 1);
    assert_addr(&c.nodes[0].address, "fd77::ffff:1");
    assert_endpoint(&c.nodes[0], "[fe80::1]:65535");
    cluster_free(&c);
}

static void test_valid_limits(void **state)
{
    /* the smallest mtu of each family, keepalive off, [cluster] last */
    const char *v4 = NA "[cluster]\nnetwork = 10.77.0.0/30\nport = 65535\n"
                     "mtu = 576\npersistent-keepalive = 0\n";
    const char *v6 = "[node a]\npublic-key = " K1 "\naddress = fd77::1\n"
                     "[cluster]\nnetwork = fd77::/127\nport = 2\nmtu = 1280\n";
    struct cluster c;
    (void)state;

    parse_ok(v4, strlen(v4), &c);
    assert_int_equal(c.mtu, 576);
    assert_int_equal(c.prefix, 30);
    assert_int_equal(c.persistent_keepalive, 0);
    assert_int_equal(c.nodes[0].line, 1);
    cluster_free(&c);
    parse_ok(v6, strlen(v6), &c);
    assert_int_equal(c.mtu, 1280);
    cluster_free(&c);
}

static void test_valid_crlf_and_no_newline(void **state)
{
    const char *crlf = "[cluster]\r\nnetwork = 10.77.0.0/16\r\nport = 51820\r\n"
                       "[node a]\r\npublic-key = " K1 "\r\n"
                       "endpoint = h:7 # c\r\naddress = 10.77.0.1\r\n";
    const char *last = C4 NA "endpoint = host:9";
    struct cluster c;
    (void)state;

    parse_ok(crlf, strlen(crlf), &c);
    assert_addr(&c.nodes[0].address, "10.77.0.1");
    assert_endpoint(&c.nodes[0], "h:7");
    cluster_free(&c);

    parse_ok(last, strlen(last), &c);
    assert_endpoint(&c.nodes[0], "host:9");
    cluster_free(&c);
}

static void test_parse_null_diag(void **state)
{
    struct cluster c;
    (void)state;

    assert_int_equal(parse_str(C4 NA, &c, NULL), 0);
    cluster_free(&c);
    assert_int_equal(parse_str("[cluster]\n", &c, NULL), -EINVAL);
    assert_null(c.nodes);
    cluster_free(&c);
    cluster_free(NULL);
}

/* --- one malformed file per error --------------------------------------------------- */

struct bad_case {
    const char *text;
    size_t len;
    int line;
    const char *message;
};

#define BAD(text, line, message) { text, sizeof(text) - 1, line, message }

#define LABEL63 "abcdefghij" "abcdefghij" "abcdefghij" "abcdefghij" \
                "abcdefghij" "abcdefghij" "abc"

static const struct bad_case bad_cases[] = {
    /* machine-domains */
    BAD(C4 "machine-domains = ec2..internal\n" NA, 4,
        "bad machine domain 'ec2..internal' (expected a domain such as ec2.internal)"),
    BAD(C4 "machine-domains = a.internal, under_score\n" NA, 4,
        "bad machine domain 'under_score' (expected a domain such as ec2.internal)"),
    BAD(C4 "machine-domains = ,\n" NA, 4, "machine-domains needs a domain or none"),
    BAD(C4 "machine-domains = a b c d e f g h i\n" NA, 4,
        "too many machine domains (at most 8)"),
    BAD(C4 "machine-domains = none\nmachine-domains = corp\n" NA, 5,
        "duplicate key 'machine-domains' (first at line 4)"),
    /* sections */
    BAD(C4 NA "[peer b]\nfoo = 1\n", 7,
        "unknown section '[peer b]' (expected [cluster], [node NAME] or [rules])"),
    BAD(C4 NA "[Cluster]\n", 7,
        "unknown section '[Cluster]' (expected [cluster], [node NAME] or [rules])"),
    BAD(C4 NA "[nodeb]\n", 7,
        "unknown section '[nodeb]' (expected [cluster], [node NAME] or [rules])"),
    BAD(C4 NA "[node b\n", 7, "missing ']' in section header"),
    BAD(C4 NA "[node b] x\n", 7, "unexpected text after ']' in section header"),
    BAD(C4 NA "[node]\n", 7, "missing node name (expected [node NAME])"),
    BAD(C4 NA "[ node  ]\n", 7, "missing node name (expected [node NAME])"),
    BAD(C4 NA "[node b_c]\n", 7, "bad node name 'b_c': use letters, digits, '-' "
        "and '.', at most 63 characters, not starting or ending with '-' or '.'"),
    BAD(C4 NA "[node -b]\n", 7, "bad node name '-b': use letters, digits, '-' "
        "and '.', at most 63 characters, not starting or ending with '-' or '.'"),
    BAD(C4 NA "[node b.]\n", 7, "bad node name 'b.': use letters, digits, '-' "
        "and '.', at most 63 characters, not starting or ending with '-' or '.'"),
    BAD(C4 NA "[node a..b]\n", 7, "bad node name 'a..b': use letters, digits, '-' "
        "and '.', at most 63 characters, not starting or ending with '-' or '.'"),
    BAD(C4 NA "[node b c]\n", 7, "bad node name 'b c': use letters, digits, '-' "
        "and '.', at most 63 characters, not starting or ending with '-' or '.'"),
    BAD(C4 NA "[node " LABEL63 "x]\n", 7, "bad node name '" LABEL63 "x': use "
        "letters, digits, '-' and '.', at most 63 characters, not starting or "
        "ending with '-' or '.'"),
    BAD(C4 NA "[cluster]\nmtu = 1400\n", 7,
        "duplicate section [cluster] (first at line 1)"),
    BAD(NA, 0, "missing [cluster] section"),
    BAD(C4, 0, "no nodes (add at least one [node NAME] section, or a registry)"),
    /* lines */
    BAD("adress = 1\n" C4 NA, 1, "key 'adress' outside a section (put it under "
        "[cluster] or [node NAME])"),
    BAD(C4 NA "endpoint 1.2.3.4:5\n", 7, "missing '=' (expected key = value)"),
    BAD(C4 NA "  = 5\n", 7, "missing key before '='"),
    BAD(C4 NA "endpoint =   # later\n", 7, "missing value for 'endpoint'"),
    BAD(C4 NA "endpoint = 1.2.3.4:5\0\n", 7, "line contains a nul byte"),
    BAD(C4 NA "\0", 7, "line contains a nul byte"),
    /* keys */
    /* An unknown key close to a known one of its section says which. */
    BAD(C4 NA "adress = 10.77.0.2\n", 7, "unknown key 'adress' (did you mean 'address'?)"),
    BAD(C4 NA "Address = 10.77.0.2\n", 7, "unknown key 'Address' (did you mean 'address'?)"),
    BAD(C4 NA "pubic-kye = x\n", 7, "unknown key 'pubic-kye' (did you mean 'public-key'?)"),
    BAD(C4 NA "endpiont = x\n", 7, "unknown key 'endpiont' (did you mean 'endpoint'?)"),
    BAD(C4 "metric = 1\n" NA, 4, "unknown key 'metric' (did you mean 'metrics'?)"),
    BAD(C4 "mtu-size = 1400\n" NA, 4, "unknown key 'mtu-size'"),
    BAD(C4 "colour = 1\n" NA, 4, "unknown key 'colour'"),
    /* Short keys take one edit at most: 'pot' is port's, 'pt' nobody's. */
    BAD(C4 NA "pot = 1\n", 7, "unknown key 'pot' (did you mean 'port'?)"),
    BAD(C4 NA "pt = 1\n", 7, "unknown key 'pt'"),
    /* A key of the other section says where it belongs. */
    BAD(C4 NA "network = 10.77.0.0/16\n", 7,
        "unknown key 'network' in [node NAME] (it is a key of [cluster])"),
    BAD(C4 "address = 10.77.0.1\n" NA, 4,
        "unknown key 'address' in [cluster] (it is a key of [node NAME])"),
    BAD(C4 NA "[peer]\nfoo = bar\nadress = x\n", 7,
        "unknown section '[peer]' (expected [cluster], [node NAME] or [rules])"),
    BAD(C4 "port = 51821\n" NA, 4, "duplicate key 'port' (first at line 3)"),
    BAD(C4 NA "address = 10.77.0.2\n", 7, "duplicate key 'address' (first at line 6)"),
    BAD("[cluster]\nport = 51820\n" NA, 1, "missing required key 'network' in [cluster]"),
    BAD("[cluster]\nnetwork = 10.77.0.0/16\n" NA, 1,
        "missing required key 'port' in [cluster]"),
    BAD(C4 "[node a]\naddress = 10.77.0.1\n", 4,
        "missing required key 'public-key' in [node a]"),
    BAD(C4 "[node a]\npublic-key = " K1 "\n", 4,
        "missing required key 'address' in [node a]"),
    /* network */
    BAD("[cluster]\nnetwork = 10.77.0.0\nport = 1\n" NA, 2, "bad network "
        "'10.77.0.0': missing /prefix (e.g. 10.77.0.0/16 or fd77::/64)"),
    BAD("[cluster]\nnetwork = 10.77.0/16\nport = 1\n" NA, 2, "bad network "
        "'10.77.0/16': not an ipv4 or ipv6 address before '/'"),
    BAD("[cluster]\nnetwork = 10.77.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0/16\nport = 1\n" NA,
        2, "bad network '10.77.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0/16': not an ipv4 "
        "or ipv6 address before '/'"),
    BAD("[cluster]\nnetwork = 10.77.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0/16\nport = 1\n" NA,
        2, "bad network '10.77.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0.0/16': not an ipv4 or ipv6 address before '/'"),
    BAD("[cluster]\nnetwork = 10.77.0.0/31\nport = 1\n" NA, 2, "bad network "
        "'10.77.0.0/31': prefix must be 1..30 for ipv4"),
    BAD("[cluster]\nnetwork = 0.0.0.0/0\nport = 1\n" NA, 2, "bad network "
        "'0.0.0.0/0': prefix must be 1..30 for ipv4"),
    BAD("[cluster]\nnetwork = 10.77.0.0/\nport = 1\n" NA, 2, "bad network "
        "'10.77.0.0/': prefix must be 1..30 for ipv4"),
    BAD("[cluster]\nnetwork = 10.77.0.0/+16\nport = 1\n" NA, 2, "bad network "
        "'10.77.0.0/+16': prefix must be 1..30 for ipv4"),
    BAD("[cluster]\nnetwork = fd77::/128\nport = 1\n" NA, 2, "bad network "
        "'fd77::/128': prefix must be 1..127 for ipv6"),
    BAD("[cluster]\nnetwork = 10.77.0.1/16\nport = 1\n" NA, 2, "network "
        "10.77.0.1/16 has host bits set (did you mean 10.77.0.0/16?)"),
    BAD("[cluster]\nnetwork = fd77::1/64\nport = 1\n" NA, 2, "network "
        "fd77::1/64 has host bits set (did you mean fd77::/64?)"),
    /* address */
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.0.256\n", 6,
        "bad address '10.77.0.256' (expected one ipv4 or ipv6 address, without /prefix)"),
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1/32\n", 6,
        "bad address '10.77.0.1/32' (expected one ipv4 or ipv6 address, without /prefix)"),
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = 10.78.0.1\n", 6,
        "address 10.78.0.1 is outside network 10.77.0.0/16"),
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.0.0\n", 6,
        "address 10.77.0.0 is the network address of 10.77.0.0/16"),
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = 10.77.255.255\n", 6,
        "address 10.77.255.255 is the broadcast address of 10.77.0.0/16"),
    BAD(C4 "[node a]\npublic-key = " K1 "\naddress = fd77::1\n", 6,
        "address fd77::1 is ipv6 but network 10.77.0.0/16 is ipv4"),
    BAD("[cluster]\nnetwork = fd77::/64\nport = 1\n" NA, 6,
        "address 10.77.0.1 is ipv4 but network fd77::/64 is ipv6"),
    BAD("[cluster]\nnetwork = fd77::/64\nport = 1\n[node a]\npublic-key = " K1
        "\naddress = fd77::\n", 6, "address fd77:: is the network address of fd77::/64"),
    BAD("[cluster]\nnetwork = fd77::/64\nport = 1\n[node a]\npublic-key = " K1
        "\naddress = fd78::1\n", 6, "address fd78::1 is outside network fd77::/64"),
    /* port, mtu, keepalive */
    BAD("[cluster]\nnetwork = 10.77.0.0/16\nport = 0\n" NA, 3,
        "bad port '0' (expected 1..65535)"),
    BAD("[cluster]\nnetwork = 10.77.0.0/16\nport = 65536\n" NA, 3,
        "bad port '65536' (expected 1..65535)"),
    BAD("[cluster]\nnetwork = 10.77.0.0/16\nport = 99999999999999999999\n" NA, 3,
        "bad port '99999999999999999999' (expected 1..65535)"),
    BAD("[cluster]\nnetwork = 10.77.0.0/16\nport = -1\n" NA, 3,
        "bad port '-1' (expected 1..65535)"),
    BAD("[cluster]\nnetwork = 10.77.0.0/16\nport = 51 820\n" NA, 3,
        "bad port '51 820' (expected 1..65535)"),
    BAD(C4 NA "port = 0x10\n", 7, "bad port '0x10' (expected 1..65535)"),
    BAD(C4 "mtu = 575\n" NA, 4,
        "bad mtu '575' (expected 576..9000; at least 1280 for an ipv6 network)"),
    /* The engine's largest (DEVICE_MTU_MAX): up refused more, so check must. */
    BAD(C4 "mtu = 9001\n" NA, 4,
        "bad mtu '9001' (expected 576..9000; at least 1280 for an ipv6 network)"),
    BAD(C4 "mtu = 65536\n" NA, 4,
        "bad mtu '65536' (expected 576..9000; at least 1280 for an ipv6 network)"),
    BAD(C4 "mtu = 1420b\n" NA, 4,
        "bad mtu '1420b' (expected 576..9000; at least 1280 for an ipv6 network)"),
    BAD("[cluster]\nnetwork = fd77::/64\nport = 1\nmtu = 1279\n[node a]\n"
        "public-key = " K1 "\naddress = fd77::1\n", 4,
        "mtu 1279 is below 1280, the minimum for an ipv6 network"),
    BAD(C4 "persistent-keepalive = 65536\n" NA, 4, "bad persistent-keepalive "
        "'65536' (expected seconds 0..65535, 0 = off)"),
    BAD(C4 "persistent-keepalive = 25s\n" NA, 4, "bad persistent-keepalive "
        "'25s' (expected seconds 0..65535, 0 = off)"),
    BAD(C4 "busy-poll = 60001\n" NA, 4, "bad busy-poll '60001' "
        "(expected microseconds 0..60000, 0 = off, or always)"),
    BAD(C4 "busy-poll = 300us\n" NA, 4, "bad busy-poll '300us' "
        "(expected microseconds 0..60000, 0 = off, or always)"),
    BAD(C4 "busy-poll = -1\n" NA, 4, "bad busy-poll '-1' "
        "(expected microseconds 0..60000, 0 = off, or always)"),
    BAD(C4 "busy-poll = Always\n" NA, 4, "bad busy-poll 'Always' "
        "(expected microseconds 0..60000, 0 = off, or always)"),
    BAD(C4 "busy-poll = 65535\n" NA, 4, "bad busy-poll '65535' "
        "(expected microseconds 0..60000, 0 = off, or always)"),
#define SOCKBUF_RANGE "(expected bytes 64K..1024M, as 32M or 16777216)"
    BAD(C4 "socket-buffer = 2G\n" NA, 4, "bad socket-buffer '2G' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = 1025M\n" NA, 4, "bad socket-buffer '1025M' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = 65535\n" NA, 4, "bad socket-buffer '65535' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = 32MB\n" NA, 4, "bad socket-buffer '32MB' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = M\n" NA, 4, "bad socket-buffer 'M' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = 32T\n" NA, 4, "bad socket-buffer '32T' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = -1\n" NA, 4, "bad socket-buffer '-1' " SOCKBUF_RANGE),
    BAD(C4 "socket-buffer = 99999999999999999999\n" NA, 4,
        "bad socket-buffer '99999999999999999999' " SOCKBUF_RANGE),
    /* metrics */
    BAD(C4 "metrics = 192.0.2.1:9586\n" NA, 4, "metrics address 192.0.2.1 is neither loopback "
        "nor in the overlay network: anyone who reaches it could read the counters; use "
        "127.0.0.1:PORT or overlay:PORT, or set metrics-public = yes"),
    BAD(C4 "metrics = [::]:9586\n" NA, 4, "metrics address :: is neither loopback "
        "nor in the overlay network: anyone who reaches it could read the counters; use "
        "127.0.0.1:PORT or overlay:PORT, or set metrics-public = yes"),
    BAD(C4 "metrics = localhost:9586\n" NA, 4, "bad metrics 'localhost:9586': expected an "
        "IP address (or overlay:PORT), not a hostname"),
    BAD(C4 "metrics = 127.0.0.1\n" NA, 4, "bad metrics '127.0.0.1': missing port "
        "(expected host:port)"),
    BAD(C4 "metrics = 127.0.0.1:0\n" NA, 4, "bad metrics '127.0.0.1:0': port must be 1..65535"),
    BAD(C4 "metrics = overlay:\n" NA, 4, "bad metrics 'overlay:': bad port (expected 1..65535)"),
    BAD(C4 "metrics = overlay:65536\n" NA, 4,
        "bad metrics 'overlay:65536': bad port (expected 1..65535)"),
    BAD(C4 "metrics-public = maybe\n" NA, 4, "bad metrics-public 'maybe' (expected yes or no)"),
    /* the registry's paths */
    BAD(CR "registry-ca = ca.pem\n", 5, "bad registry-ca 'ca.pem' (expected an absolute "
        "path of at most 255 characters)"),
    BAD(CR "registry-cert = c.pem\nregistry-key = /k.pem\n", 5, "bad registry-cert 'c.pem' "
        "(expected an absolute path of at most 255 characters)"),
    BAD(CR "registry-cert = /c.pem\nregistry-key = ~/k.pem\n", 6, "bad registry-key '~/k.pem' "
        "(expected an absolute path of at most 255 characters)"),
    BAD(CR "registry-user = ddp\nregistry-password-file = ./pw\nregistry-insecure = yes\n", 6,
        "bad registry-password-file './pw' (expected an absolute path of at most 255 "
        "characters)"),
    /* a password in clear over http://, unless the file says so */
    BAD(CR "registry-user = ddp\nregistry-password-file = /pw\n", 5, "registry-user over "
        "plain http:// sends its password in clear; give registry-ca (TLS), or say "
        "registry-insecure = yes"),
    BAD(CR "registry-user = ddp\nregistry-password-file = /pw\nregistry-insecure = no\n", 5,
        "registry-user over plain http:// sends its password in clear; give registry-ca "
        "(TLS), or say registry-insecure = yes"),
    BAD(CR "registry-insecure = maybe\n", 5, "bad registry-insecure 'maybe' (expected yes or no)"),
    BAD(C4 "registry-insecure = yes\n" NA, 4, "registry-insecure without registry"),
    /* the authority's key */
    BAD(C4 "authority = not-a-key\n" NA, 4, "bad authority: expected the authority's public "
        "key: 32 bytes in base64 (as `ddpnet authority init` prints it)"),
    BAD(C4 "authority = AAAA\n" NA, 4, "bad authority: expected the authority's public "
        "key: 32 bytes in base64 (as `ddpnet authority init` prints it)"),
    BAD(C4 "authority = " K1 " AAAA\n" NA, 4, "bad authority: expected the authority's public "
        "key: 32 bytes in base64 (as `ddpnet authority init` prints it)"),
    BAD(C4 "authority = " K1 " " K2 " " K3 "\n" NA, 4, "bad authority: at most two keys (the "
        "second trusted beside the first while the authority's key is rotated)"),
    /* the operator's blocklist */
    BAD(C4 "authority = " K1 "\nrevoked = " K2 " nope\n" NA, 5, "bad revoked key 'nope' "
        "(expected a WireGuard public key: 44 characters ending in '=', as 'wg pubkey' prints)"),
    BAD(C4 "revoked = " K2 "\n" NA, 4, "revoked needs authority: it refuses keys that show a "
        "certificate; a node the file does not list is refused already"),
    BAD(C4 "authority = " K2 "\nrevoked = " K3 "\nrevoked = " K1 "\n" NA, 6,
        "node a's public-key is revoked: remove the node or the key"),
    /* public key */
    BAD(C4 "[node a]\npublic-key = not-base64!\naddress = 10.77.0.1\n", 5,
        "bad public-key: not valid base64 (expected 44 characters ending in '=', "
        "as 'wg pubkey' prints)"),
    BAD(C4 "[node a]\npublic-key = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA\n"
        "address = 10.77.0.1\n", 5,
        "bad public-key: not valid base64 (expected 44 characters ending in '=', "
        "as 'wg pubkey' prints)"),
    BAD(C4 "[node a]\npublic-key = AAAA\naddress = 10.77.0.1\n", 5,
        "bad public-key: decodes to 3 bytes, expected 32 (use the output of 'wg pubkey')"),
    BAD(C4 "[node a]\npublic-key = AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n"
        "address = 10.77.0.1\n", 5,
        "bad public-key: decodes to 33 bytes, expected 32 (use the output of 'wg pubkey')"),
    /* endpoint */
    BAD(C4 NA "endpoint = 203.0.113.10\n", 7,
        "bad endpoint '203.0.113.10': missing port (expected host:port)"),
    BAD(C4 NA "endpoint = fd00::1:51820\n", 7, "bad endpoint 'fd00::1:51820': ipv6 "
        "addresses need brackets, e.g. [fd00::1]:51820"),
    BAD(C4 NA "endpoint = [fd00::1]\n", 7,
        "bad endpoint '[fd00::1]': missing port (expected [ipv6]:port)"),
    BAD(C4 NA "endpoint = [fd00::1]51820\n", 7,
        "bad endpoint '[fd00::1]51820': expected ':' after ']'"),
    BAD(C4 NA "endpoint = [fd00::1:51820\n", 7,
        "bad endpoint '[fd00::1:51820': missing ']' after the ipv6 address"),
    BAD(C4 NA "endpoint = [10.0.0.1]:5\n", 7,
        "bad endpoint '[10.0.0.1]:5': not an ipv6 address inside [ ]"),
    BAD(C4 NA "endpoint = [fd00::1%eth0]:5\n", 7,
        "bad endpoint '[fd00::1%eth0]:5': not an ipv6 address inside [ ]"),
    BAD(C4 NA "endpoint = [fd00::1]:0\n", 7,
        "bad endpoint '[fd00::1]:0': port must be 1..65535"),
    BAD(C4 NA "endpoint = host_name:5\n", 7,
        "bad endpoint 'host_name:5': not an ipv4 address or a valid hostname"),
    BAD(C4 NA "endpoint = -host:5\n", 7,
        "bad endpoint '-host:5': not an ipv4 address or a valid hostname"),
    BAD(C4 NA "endpoint = a..b:5\n", 7,
        "bad endpoint 'a..b:5': not an ipv4 address or a valid hostname"),
    BAD(C4 NA "endpoint = 1.2.3:5\n", 7,
        "bad endpoint '1.2.3:5': not an ipv4 address or a valid hostname"),
    BAD(C4 NA "endpoint = 10.0.0.256:5\n", 7,
        "bad endpoint '10.0.0.256:5': not an ipv4 address or a valid hostname"),
    BAD(C4 NA "endpoint = :5\n", 7, "bad endpoint ':5': missing host before ':'"),
    BAD(C4 NA "endpoint = host:\n", 7,
        "bad endpoint 'host:': missing port number after ':'"),
    BAD(C4 NA "endpoint = host:0\n", 7, "bad endpoint 'host:0': port must be 1..65535"),
    BAD(C4 NA "endpoint = host:65536\n", 7,
        "bad endpoint 'host:65536': port must be 1..65535"),
    BAD(C4 NA "endpoint = host:http\n", 7,
        "bad endpoint 'host:http': port must be 1..65535"),
    BAD(C4 NA "port = 0\n", 7, "bad port '0' (expected 1..65535)"),
    /* duplicates across nodes: on the later line, naming the earlier */
    BAD(C4 NA "[node A]\npublic-key = " K2 "\naddress = 10.77.0.2\n", 7,
        "duplicate node name 'A' (also node a at line 4)"),
    BAD(C4 NA "[node b]\npublic-key = " K2 "\naddress = 10.77.0.1\n", 9,
        "duplicate address 10.77.0.1 (also node a at line 6)"),
    BAD(C4 NA "[node b]\npublic-key = " K1 "\naddress = 10.77.0.2\n", 8,
        "duplicate public-key (also node a at line 5)"),
};

static void test_bad_cases(void **state)
{
    (void)state;

    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const struct bad_case *bc = &bad_cases[i];
        struct cluster c;
        struct cluster_diag d;
        int r = cluster_parse(bc->text, bc->len, &c, &d);

        if (r != -EINVAL || d.n != 1 || d.items[0].line != bc->line ||
            strcmp(d.items[0].message, bc->message) != 0) {
            print_message("case %zu: r=%d, expected line %d: %s\n", i, r,
                          bc->line, bc->message);
            print_diag(&d);
        }
        assert_int_equal(r, -EINVAL);
        assert_int_equal(d.n, 1);
        assert_int_equal(d.dropped, 0);
        assert_int_equal(d.items[0].line, bc->line);
        assert_string_equal(d.items[0].message, bc->message);
        assert_null(c.nodes);
        assert_int_equal(c.n_nodes, 0);
    }
}

static void expect_diag(const char *text, size_t len, const int *lines,
                        const char *const *messages, size_t n)
{
    struct cluster c;
    struct cluster_diag d;

    assert_int_equal(cluster_parse(text, len, &c, &d), -EINVAL);
    if (d.n != n)
        print_diag(&d);
    assert_int_equal(d.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(d.items[i].line, lines[i]);
        assert_string_equal(d.items[i].message, messages[i]);
    }
}

/* A misspelt required key: its error, then the missing key it caused --
 * the cause first, though the section's header comes earlier. */
static void test_typo_before_missing(void **state)
{
    static const char text[] =
        "[cluster]\n"                           /* 1 */
        "network = 10.77.0.0/16\n"              /* 2 */
        "prot = 51820\n"                        /* 3 */
        "[node a]\n"                            /* 4 */
        "public-key = " K2 "\n"                 /* 5 */
        "adress = 10.77.0.1\n"                  /* 6 */
        "[node b]\n"                            /* 7 */
        "public-key = " K1 "\n";                /* 8 */
    static const int lines[] = { 3, 3, 6, 6, 7 };
    static const char *const messages[] = {
        "unknown key 'prot' (did you mean 'port'?)",
        "missing required key 'port' in [cluster] (the unknown key above?)",
        "unknown key 'adress' (did you mean 'address'?)",
        "missing required key 'address' in [node a] (the unknown key above?)",
        "missing required key 'address' in [node b]",
    };
    (void)state;

    expect_diag(text, sizeof(text) - 1, lines, messages, 5);
}

static void test_many_errors_in_line_order(void **state)
{
    static const char text[] =
        "[node b]\n"                            /* 1 */
        "public-key = " K2 "\n"                 /* 2 */
        "address = 10.77.0.9\n"                 /* 3 */
        "[cluster]\n"                           /* 4 */
        "network = 10.77.0.0/16\n"              /* 5 */
        "mtu = big\n"                           /* 6 */
        "[node a]\n"                            /* 7 */
        "adress = 10.77.0.1\n"                  /* 8 */
        "public-key = " K2 "\n"                 /* 9 */
        "[node -x]\n"                           /* 10 */
        "address = 10.77.0.9\n"                 /* 11 */
        "endpoint = [::1]\n"                    /* 12 */
        "[node B]\n"                            /* 13 */
        "address = 10.78.0.1\n";                /* 14 */
    /* The typo first, then the missing key it caused, on its line. */
    static const int lines[] = { 4, 6, 8, 8, 9, 10, 11, 12, 13, 13, 14 };
    static const char *const messages[] = {
        "missing required key 'port' in [cluster]",
        "bad mtu 'big' (expected 576..9000; at least 1280 for an ipv6 network)",
        "unknown key 'adress' (did you mean 'address'?)",
        "missing required key 'address' in [node a] (the unknown key above?)",
        "duplicate public-key (also node b at line 2)",
        "bad node name '-x': use letters, digits, '-' and '.', at most 63 "
        "characters, not starting or ending with '-' or '.'",
        "duplicate address 10.77.0.9 (also node b at line 3)",
        "bad endpoint '[::1]': missing port (expected [ipv6]:port)",
        "missing required key 'public-key' in [node B]",
        "duplicate node name 'B' (also node b at line 1)",
        "address 10.78.0.1 is outside network 10.77.0.0/16",
    };
    (void)state;

    expect_diag(text, sizeof(text) - 1, lines, messages, 11);
}

static void test_empty_file(void **state)
{
    static const int lines[] = { 0, 0 };
    static const char *const messages[] = {
        "missing [cluster] section",
        "no nodes (add at least one [node NAME] section, or a registry)",
    };
    (void)state;

    expect_diag("", 0, lines, messages, 2);
    expect_diag("# nothing\n\n\r\n", 13, lines, messages, 2);
}

static void test_duplicate_cluster_continues(void **state)
{
    /* keys of a repeated [cluster] count as the first one's */
    static const char text[] = C4 NA "[cluster]\nport = 1\n";
    static const int lines[] = { 7, 8 };
    static const char *const messages[] = {
        "duplicate section [cluster] (first at line 1)",
        "duplicate key 'port' (first at line 3)",
    };
    (void)state;

    expect_diag(text, sizeof(text) - 1, lines, messages, 2);
}

static void test_triple_duplicates_name_the_first(void **state)
{
    static const char text[] = C4 NA
        "[node b]\npublic-key = " K1 "\naddress = 10.77.0.1\n"    /* 7-9 */
        "[node c]\npublic-key = " K1 "\naddress = 10.77.0.1\n";   /* 10-12 */
    static const int lines[] = { 8, 9, 11, 12 };
    static const char *const messages[] = {
        "duplicate public-key (also node a at line 5)",
        "duplicate address 10.77.0.1 (also node a at line 6)",
        "duplicate public-key (also node a at line 5)",
        "duplicate address 10.77.0.1 (also node a at line 6)",
    };
    (void)state;

    expect_diag(text, sizeof(text) - 1, lines, messages, 4);
}

static void test_bad_name_node_still_checked(void **state)
{
    /* a node whose header is bad still takes part in the duplicate checks,
     * and the message says it has no usable name */
    static const char text[] = C4
        "[node _x]\npublic-key = " K1 "\naddress = 10.77.0.1\n" NA;
    static const int lines[] = { 4, 8, 9 };
    static const char *const messages[] = {
        "bad node name '_x': use letters, digits, '-' and '.', at most 63 "
        "characters, not starting or ending with '-' or '.'",
        "duplicate public-key (also node with a bad name at line 5)",
        "duplicate address 10.77.0.1 (also node with a bad name at line 6)",
    };
    (void)state;

    expect_diag(text, sizeof(text) - 1, lines, messages, 3);
}

/* --- long lines, quoting, the cap --------------------------------------------------- */

static char *text_join(const char *head, char fill, size_t n, const char *tail)
{
    size_t hl = strlen(head), tl = strlen(tail);
    char *s = malloc(hl + n + tl + 1);

    assert_non_null(s);
    memcpy(s, head, hl);
    memset(s + hl, fill, n);
    memcpy(s + hl + n, tail, tl + 1);
    return s;
}

static void test_long_line(void **state)
{
    static const int lines[] = { 7 };
    static const char *const messages[] = { "line too long (more than 1024 characters)" };
    struct cluster c;
    (void)state;

    /* exactly the limit, a comment of spaces, is fine; one more is not */
    char *ok = text_join(C4 NA "#", ' ', CLUSTER_MAX_LINE - 1, "\r\n");
    parse_ok(ok, strlen(ok), &c);
    cluster_free(&c);
    free(ok);
    char *bad = text_join(C4 NA "#", ' ', CLUSTER_MAX_LINE, "\n");
    expect_diag(bad, strlen(bad), lines, messages, 1);
    free(bad);
    bad = text_join(C4 NA "#", ' ', CLUSTER_MAX_LINE, "");
    expect_diag(bad, strlen(bad), lines, messages, 1);
    free(bad);
}

static void test_quote_in_messages(void **state)
{
    static const int lines[] = { 7, 8 };
    static const char *const messages[] = {
        "unknown key 'k?y'",
        "unknown key '" LABEL63 "a...'",
    };
    (void)state;

    char *text = text_join(C4 NA "k\x01y = 1\n" LABEL63, 'a', 10, " = 1\n");
    expect_diag(text, strlen(text), lines, messages, 2);
    free(text);
}

static void test_diag_cap_keeps_first_lines(void **state)
{
    /* [cluster] on line 1 lacks port, which is found after the 70 line
     * errors; it must still be first, and the latest lines dropped */
    const size_t bad_lines = 70;
    size_t len = 0, cap = 64 * 1024;
    char *text = malloc(cap);
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "[cluster]\nnetwork = 10.0.0.0/8\n");
    for (size_t i = 0; i < bad_lines; i++)
        len += (size_t)snprintf(text + len, cap - len, "junk\n");
    assert_int_equal(cluster_parse(text, len, &c, &d), -EINVAL);
    free(text);
    assert_int_equal(d.n, CLUSTER_DIAG_MAX);
    /* 70 lines, the missing port, no nodes */
    assert_int_equal(d.dropped, bad_lines + 2 - CLUSTER_DIAG_MAX);
    assert_int_equal(d.items[0].line, 0);
    assert_string_equal(d.items[0].message,
                        "no nodes (add at least one [node NAME] section, or a registry)");
    assert_int_equal(d.items[1].line, 1);
    assert_string_equal(d.items[1].message, "missing required key 'port' in [cluster]");
    for (size_t i = 2; i < d.n; i++) {
        assert_int_equal(d.items[i].line, (int)i + 1);
        assert_string_equal(d.items[i].message, "missing '=' (expected key = value)");
    }
}

static void test_too_many_nodes(void **state)
{
    size_t cap = (CLUSTER_MAX_NODES + 2) * 16, len = 0;
    char *text = malloc(cap);
    char expect[CLUSTER_DIAG_MSG_LEN];
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "[cluster]\n");
    for (unsigned i = 0; i < CLUSTER_MAX_NODES + 2; i++)
        len += (size_t)snprintf(text + len, cap - len, "[node n%u]\n", i);
    assert_true(len <= CLUSTER_MAX_FILE);
    assert_int_equal(cluster_parse(text, len, &c, &d), -EINVAL);
    free(text);
    /* the empty nodes bring many more errors; the cap stays first, once */
    assert_int_equal(d.n, CLUSTER_DIAG_MAX);
    assert_true(d.dropped > CLUSTER_MAX_NODES);
    snprintf(expect, sizeof(expect), "too many nodes (more than %u); the first "
             "one over is at line %u", CLUSTER_MAX_NODES, CLUSTER_MAX_NODES + 2);
    assert_int_equal(d.items[0].line, 0);
    assert_string_equal(d.items[0].message, expect);
    assert_int_equal(d.items[1].line, 1);
    assert_string_equal(d.items[1].message, "missing required key 'network' in [cluster]");
    assert_int_equal(d.items[3].line, 2);
    assert_string_equal(d.items[3].message, "missing required key 'public-key' in [node n0]");
}

static void test_too_big(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    char *text = malloc(CLUSTER_MAX_FILE + 1);
    (void)state;

    assert_non_null(text);
    memset(text, '\n', CLUSTER_MAX_FILE + 1);
    assert_int_equal(cluster_parse(text, CLUSTER_MAX_FILE + 1, &c, &d), -EFBIG);
    assert_int_equal(d.n, 0);
    assert_null(c.nodes);
    free(text);
}

/* --- lookups ---------------------------------------------------------------------- */

static void test_lookups(void **state)
{
    struct cluster c;
    struct cluster_addr a;
    uint8_t key[CLUSTER_KEY_LEN];
    (void)state;

    parse_ok(ipv4_file, strlen(ipv4_file), &c);
    decode_key(key, K3);
    assert_ptr_equal(cluster_find_key(&c, key), &c.nodes[2]);
    decode_key(key, K1);
    assert_ptr_equal(cluster_find_key(&c, key), &c.nodes[0]);
    key[CLUSTER_KEY_LEN - 1] ^= 1;
    assert_null(cluster_find_key(&c, key));

    assert_ptr_equal(cluster_find_name(&c, "gpu-a1"), &c.nodes[0]);
    assert_ptr_equal(cluster_find_name(&c, "GPU-A1"), &c.nodes[0]);
    assert_ptr_equal(cluster_find_name(&c, "gpu.B-2"), &c.nodes[1]);
    assert_null(cluster_find_name(&c, "gpu-a"));
    assert_null(cluster_find_name(&c, ""));

    assert_int_equal(cluster_addr_parse("10.77.0.4", &a), 0);
    assert_ptr_equal(cluster_find_address(&c, &a), &c.nodes[3]);
    assert_int_equal(cluster_addr_parse("10.77.0.5", &a), 0);
    assert_null(cluster_find_address(&c, &a));
    /* same bytes, other family */
    assert_int_equal(cluster_addr_parse("10.77.0.4", &a), 0);
    a.family = AF_INET6;
    assert_null(cluster_find_address(&c, &a));

    assert_int_equal(cluster_node_port(&c, &c.nodes[0]), 51820);
    assert_int_equal(cluster_node_port(&c, &c.nodes[1]), 51821);
    cluster_free(&c);
}

/* --- loading from disk -------------------------------------------------------------- */

static char *temp_file(const char *content, size_t len)
{
    char *path = strdup("/tmp/test_cluster_XXXXXX");
    int fd;

    assert_non_null(path);
    fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, len), (ssize_t)len);
    close(fd);
    return path;
}

static void test_load(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    char *path = temp_file(ipv4_file, strlen(ipv4_file));
    assert_int_equal(cluster_load(path, &c, &d), 0);
    assert_int_equal(c.n_nodes, 4);
    assert_string_equal(c.nodes[3].name, "d");
    cluster_free(&c);
    unlink(path);
    free(path);

    path = temp_file(C4 "port = 1\n", strlen(C4 "port = 1\n"));
    assert_int_equal(cluster_load(path, &c, &d), -EINVAL);
    assert_int_equal(d.n, 2);
    assert_int_equal(d.items[1].line, 4);
    assert_string_equal(d.items[1].message, "duplicate key 'port' (first at line 3)");
    unlink(path);
    free(path);
}

static void test_load_errors(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    (void)state;

    assert_int_equal(cluster_load("/nonexistent/cluster.conf", &c, &d), -ENOENT);
    assert_int_equal(d.n, 0);
    assert_null(c.nodes);
    assert_int_equal(cluster_load("/tmp", &c, &d), -EISDIR);
    assert_int_equal(d.n, 0);
    assert_int_equal(cluster_load("/tmp", &c, NULL), -EISDIR);

    char *big = malloc(CLUSTER_MAX_FILE + 1);
    assert_non_null(big);
    memset(big, '#', CLUSTER_MAX_FILE + 1);
    char *path = temp_file(big, CLUSTER_MAX_FILE + 1);
    free(big);
    assert_int_equal(cluster_load(path, &c, &d), -EFBIG);
    assert_int_equal(d.n, 0);
    unlink(path);
    free(path);
}

/* --- display forms --------------------------------------------------------------------- */

static void test_diag_format(void **state)
{
    struct cluster c;
    struct cluster_diag d;
    char buf[200];
    (void)state;

    assert_int_equal(parse_str(C4 NA "adress = 1\n", &c, &d), -EINVAL);
    assert_int_equal(cluster_diag_format(&d, 0, "cluster.conf", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "cluster.conf:7: unknown key 'adress' (did you mean 'address'?)");
    assert_int_equal(cluster_diag_format(&d, 0, "cluster.conf", buf, 10), -ENOSPC);
    assert_string_equal(buf, "cluster.c");
    assert_int_equal(cluster_diag_format(&d, 1, "cluster.conf", buf, sizeof(buf)), -EINVAL);
    assert_int_equal(cluster_diag_format(NULL, 0, "cluster.conf", buf, sizeof(buf)), -EINVAL);

    assert_int_equal(parse_str(C4, &c, &d), -EINVAL);
    assert_int_equal(cluster_diag_format(&d, 0, "/etc/ddpnet/c.conf", buf, sizeof(buf)), 0);
    assert_string_equal(buf, "/etc/ddpnet/c.conf: no nodes (add at least one [node NAME] section, or a registry)");
}

static void test_addr_format(void **state)
{
    struct cluster_addr a = { 0 };
    struct cluster_endpoint e = { 0 };
    char buf[64];
    (void)state;

    assert_int_equal(cluster_addr_format(&a, buf, sizeof(buf)), -EAFNOSUPPORT);
    assert_int_equal(cluster_addr_parse("fd77::1", &a), 0);
    assert_int_equal(cluster_addr_format(&a, buf, 7), -ENOSPC);
    assert_int_equal(cluster_addr_format(&a, buf, 8), 0);
    assert_string_equal(buf, "fd77::1");

    assert_int_equal(cluster_endpoint_parse("[fd77::1]:5", &e, NULL), 0);
    assert_int_equal(cluster_endpoint_format(&e, buf, 12), 0);
    assert_string_equal(buf, "[fd77::1]:5");
    assert_int_equal(cluster_endpoint_format(&e, buf, 11), -ENOSPC);
    assert_int_equal(cluster_endpoint_parse("Host.example:51820", &e, NULL), 0);
    assert_int_equal(cluster_endpoint_format(&e, buf, sizeof(buf)), 0);
    assert_string_equal(buf, "Host.example:51820");
    assert_int_equal(cluster_endpoint_format(&e, buf, 5), -ENOSPC);
    e.literal = true;
    e.addr.family = 0;
    assert_int_equal(cluster_endpoint_format(&e, buf, sizeof(buf)), -EAFNOSUPPORT);
}

/* --- text helpers (config/addr.h) ------------------------------------------------------- */

static void test_uint_parse(void **state)
{
    unsigned v = 7;
    (void)state;

    assert_int_equal(cluster_uint_parse("0", 10, &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(cluster_uint_parse("0010", 10, &v), 0);
    assert_int_equal(v, 10);
    assert_int_equal(cluster_uint_parse("11", 10, &v), -ERANGE);
    assert_int_equal(cluster_uint_parse("99999999999999999999999", 10, &v), -ERANGE);
    assert_int_equal(cluster_uint_parse("999x", 10, &v), -EINVAL);
    assert_int_equal(cluster_uint_parse("", 10, &v), -EINVAL);
    assert_int_equal(cluster_uint_parse("+1", 10, &v), -EINVAL);
    assert_int_equal(cluster_uint_parse(" 1", 10, &v), -EINVAL);
    assert_int_equal(v, 10);
}

static void test_names_and_hostnames(void **state)
{
    char long_host[CLUSTER_HOST_MAX + 3];
    (void)state;

    assert_true(cluster_name_valid("a"));
    assert_true(cluster_name_valid("gpu-a1.rack2"));
    assert_true(cluster_name_valid(LABEL63));
    assert_false(cluster_name_valid(""));
    assert_false(cluster_name_valid(LABEL63 "x"));
    assert_false(cluster_name_valid(".a"));
    assert_false(cluster_name_valid("a-"));
    assert_false(cluster_name_valid("a..b"));
    assert_false(cluster_name_valid("a_b"));

    assert_true(cluster_hostname_valid("example.com"));
    assert_true(cluster_hostname_valid("example.com."));
    assert_true(cluster_hostname_valid("a-b.c1"));
    assert_true(cluster_hostname_valid("1.2.3.x"));
    assert_true(cluster_hostname_valid(LABEL63 ".com"));
    assert_false(cluster_hostname_valid(LABEL63 "x.com"));
    assert_false(cluster_hostname_valid(""));
    assert_false(cluster_hostname_valid("."));
    assert_false(cluster_hostname_valid("a..b"));
    assert_false(cluster_hostname_valid("a.b.."));
    assert_false(cluster_hostname_valid(".a"));
    assert_false(cluster_hostname_valid("a-.b"));
    assert_false(cluster_hostname_valid("a.-b"));
    assert_false(cluster_hostname_valid("1.2.3.4"));
    assert_false(cluster_hostname_valid("host.123"));
    assert_false(cluster_hostname_valid("a b"));

    /* 253 characters in labels of 63 and dots is the longest */
    memset(long_host, 'a', sizeof(long_host));
    for (size_t i = 63; i < CLUSTER_HOST_MAX; i += 64)
        long_host[i] = '.';
    long_host[CLUSTER_HOST_MAX] = '\0';
    assert_true(cluster_hostname_valid(long_host));
    long_host[CLUSTER_HOST_MAX] = '.';
    long_host[CLUSTER_HOST_MAX + 1] = '\0';
    assert_true(cluster_hostname_valid(long_host));
    long_host[CLUSTER_HOST_MAX] = 'a';
    assert_false(cluster_hostname_valid(long_host));
}

static void test_endpoint_parse_lengths(void **state)
{
    struct cluster_endpoint e;
    const char *why = NULL;
    (void)state;

    /* hosts too long for the buffer are refused before they are copied */
    char *s = text_join("", 'a', 300, ":5");
    assert_int_equal(cluster_endpoint_parse(s, &e, &why), -EINVAL);
    assert_string_equal(why, "hostname longer than 253 characters");
    assert_string_equal(e.host, "");
    free(s);
    s = text_join("[", 'a', 300, "]:5");
    assert_int_equal(cluster_endpoint_parse(s, &e, &why), -EINVAL);
    assert_string_equal(why, "not an ipv6 address inside [ ]");
    free(s);
    /* 255 characters fit the buffer but not the hostname rules */
    s = text_join("", 'a', 255, ":5");
    assert_int_equal(cluster_endpoint_parse(s, &e, &why), -EINVAL);
    assert_string_equal(why, "not an ipv4 address or a valid hostname");
    free(s);
    assert_int_equal(cluster_endpoint_parse("no-port", &e, NULL), -EINVAL);
}

/* Where metrics may listen: loopback and the overlay network as they
 * are; anything else only with metrics-public = yes. */
static void test_metrics_keys(void **state)
{
    static const struct { const char *line; enum cluster_metrics_at at; const char *addr;
                          unsigned port; bool public_ok; } ok[] = {
        { "", CLUSTER_METRICS_OFF, NULL, 0, false },
        { "metrics = overlay:9586\n", CLUSTER_METRICS_OVERLAY, NULL, 9586, false },
        { "metrics = 127.0.0.1:9586\n", CLUSTER_METRICS_ADDRESS, "127.0.0.1", 9586, false },
        { "metrics = 127.1.2.3:1\n", CLUSTER_METRICS_ADDRESS, "127.1.2.3", 1, false },
        { "metrics = [::1]:9586\n", CLUSTER_METRICS_ADDRESS, "::1", 9586, false },
        { "metrics = 10.77.0.1:9586\n", CLUSTER_METRICS_ADDRESS, "10.77.0.1", 9586, false },
        { "metrics = 0.0.0.0:9586\nmetrics-public = yes\n", CLUSTER_METRICS_ADDRESS, "0.0.0.0",
          9586, true },
        { "metrics-public = yes\nmetrics = 192.0.2.1:80\n", CLUSTER_METRICS_ADDRESS,
          "192.0.2.1", 80, true },
        { "metrics = 127.0.0.1:9586\nmetrics-public = no\n", CLUSTER_METRICS_ADDRESS,
          "127.0.0.1", 9586, false },
    };
    char text[512];
    struct cluster c;

    (void)state;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int n = snprintf(text, sizeof(text), C4 "%s" NA, ok[i].line);
        parse_ok(text, (size_t)n, &c);
        assert_int_equal(c.metrics.at, ok[i].at);
        assert_int_equal(c.metrics.port, ok[i].port);
        assert_int_equal(c.metrics.public_ok, ok[i].public_ok);
        if (ok[i].addr)
            assert_addr(&c.metrics.addr, ok[i].addr);
        cluster_free(&c);
    }
}

/* A user's password goes over TLS, or over http:// where the file says
 * registry-insecure = yes (its line may come after the user's). */
static void test_registry_insecure(void **state)
{
    static const char *const ok[] = {
        CR "registry-user = ddp\nregistry-password-file = /pw\nregistry-insecure = yes\n",
        CR "registry-insecure = on\nregistry-user = ddp\nregistry-password-file = /pw\n",
        CR "registry-ca = /ca.pem\nregistry-user = ddp\nregistry-password-file = /pw\n",
        CR "registry-cert = /c.pem\nregistry-key = /k.pem\nregistry-user = ddp\n"
           "registry-password-file = /pw\n",
        CR "registry-insecure = yes\n",
    };
    struct cluster c;

    (void)state;
    parse_ok(CR, strlen(CR), &c);
    assert_false(c.registry.insecure);
    cluster_free(&c);
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        parse_ok(ok[i], strlen(ok[i]), &c);
        assert_int_equal(c.registry.insecure, i < 2 || i == 4);
        cluster_free(&c);
    }
}

/* `authority = KEY`: the key decoded, absent by default. */
static void test_authority(void **state)
{
    static const char ok[] = CR "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=\n";
    uint8_t key[CLUSTER_KEY_LEN];
    size_t len;
    struct cluster c;

    (void)state;
    parse_ok(CR, strlen(CR), &c);
    assert_false(c.has_authority);
    cluster_free(&c);
    parse_ok(ok, strlen(ok), &c);
    assert_true(c.has_authority);
    assert_int_equal(sodium_base642bin(key, sizeof(key), "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=",
                                       44, NULL, &len, NULL, sodium_base64_VARIANT_ORIGINAL), 0);
    assert_memory_equal(c.authority, key, CLUSTER_KEY_LEN);
    cluster_free(&c);
    /* The statements' URL-safe alphabet, unpadded, reads the same key. */
    static const char url[] = CR "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA\n";
    parse_ok(url, strlen(url), &c);
    assert_memory_equal(c.authority, key, CLUSTER_KEY_LEN);
    assert_false(c.has_authority_next);
    cluster_free(&c);
    /* Issue 56: a second key for a rotation, after a space or a comma;
     * the same key twice is one. */
    static const char two[] = CR "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=, "
                              "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA=\n";
    parse_ok(two, strlen(two), &c);
    assert_memory_equal(c.authority, key, CLUSTER_KEY_LEN);
    assert_true(c.has_authority_next);
    assert_true(cluster_authority_trusts(&c, key));
    assert_true(cluster_authority_trusts(&c, c.authority_next));
    key[0] ^= 1;
    assert_false(cluster_authority_trusts(&c, key));
    cluster_free(&c);
    static const char same[] = CR "authority = A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA= "
                               "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA=\n";
    parse_ok(same, strlen(same), &c);
    assert_false(c.has_authority_next);
    cluster_free(&c);
}

/* `revoked = KEY...`: keys separated by spaces or commas, the key
 * repeated, CLUSTER_REVOKED_MAX in all. */
static void test_revoked(void **state)
{
    static const char ok[] = C4 "authority = " K1 "\nrevoked = " K2 ", " K3 "\n"
                             "revoked = " K2 "\n" NA;
    char *many;
    size_t at;
    struct cluster c;
    uint8_t key[CLUSTER_KEY_LEN];
    size_t len;

    (void)state;
    parse_ok(ok, strlen(ok), &c);
    assert_int_equal(c.n_revoked, 3);
    assert_int_equal(sodium_base642bin(key, sizeof(key), K3, 44, NULL, &len, NULL,
                                       sodium_base64_VARIANT_ORIGINAL), 0);
    assert_memory_equal(c.revoked[1], key, CLUSTER_KEY_LEN);
    cluster_free(&c);
    /* One key past the bound, on lines of 16 keys each. */
    assert_non_null(many = malloc(64 * 1024));
    at = (size_t)sprintf(many, C4 "authority = " K1 "\n");
    for (unsigned i = 0; i <= CLUSTER_REVOKED_MAX; i++)
        at += (size_t)sprintf(many + at, "%s" K2 "%s", i % 16 ? " " : "revoked = ",
                              i % 16 == 15 || i == CLUSTER_REVOKED_MAX ? "\n" : "");
    at += (size_t)sprintf(many + at, NA);
    struct cluster_diag diag;
    assert_int_equal(cluster_parse(many, at, &c, &diag), -EINVAL);
    assert_non_null(strstr(diag.items[0].message, "too many revoked keys (at most 256"));
    free(many);
}

/* Each of the registry's paths lands in its own field, up to 255
 * characters; one more is refused, naming the key. */
static void test_registry_path_keys(void **state)
{
    static const struct { const char *key, *other; size_t at; } keys[] = {
        { "registry-ca", "", offsetof(struct cluster, registry.ca) },
        { "registry-cert", "registry-key = /k\n", offsetof(struct cluster, registry.cert) },
        { "registry-key", "registry-cert = /c\n", offsetof(struct cluster, registry.key) },
        { "registry-password-file", "registry-user = ddp\nregistry-insecure = yes\n",
          offsetof(struct cluster, registry.password_file) },
    };
    static const int lines[] = { 5 };
    char path[CLUSTER_PATH_MAX + 2], text[1024], want[CLUSTER_DIAG_MSG_LEN];
    const char *msg[] = { want };
    struct cluster c;
    (void)state;

    parse_ok(CR, strlen(CR), &c);
    assert_string_equal(c.registry.ca, "");
    assert_string_equal(c.registry.cert, "");
    assert_string_equal(c.registry.key, "");
    assert_string_equal(c.registry.password_file, "");
    cluster_free(&c);
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        /* "/aaa...", CLUSTER_PATH_MAX characters */
        memset(path, 'a', sizeof(path));
        path[0] = '/';
        path[CLUSTER_PATH_MAX] = '\0';
        int n = snprintf(text, sizeof(text), CR "%s = %s\n%s", keys[i].key, path, keys[i].other);
        parse_ok(text, (size_t)n, &c);
        assert_string_equal((const char *)&c + keys[i].at, path);
        cluster_free(&c);

        path[CLUSTER_PATH_MAX] = 'a';
        path[CLUSTER_PATH_MAX + 1] = '\0';
        n = snprintf(text, sizeof(text), CR "%s = %s\n%s", keys[i].key, path, keys[i].other);
        snprintf(want, sizeof(want), "bad %s '%.*s...' (expected an absolute path of at most "
                 "255 characters)", keys[i].key, 64, path);
        expect_diag(text, (size_t)n, lines, msg, 1);
    }
}

static void test_loopback(void **state)
{
    static const struct { const char *addr; bool loopback; } cases[] = {
        { "127.0.0.1", true }, { "127.255.255.254", true }, { "::1", true },
        { "::ffff:127.0.0.1", true }, { "128.0.0.1", false }, { "10.77.0.1", false },
        { "::", false }, { "::2", false }, { "::ffff:10.0.0.1", false }, { "fe80::1", false },
    };

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct cluster_addr a;
        assert_int_equal(cluster_addr_parse(cases[i].addr, &a), 0);
        assert_int_equal(cluster_addr_is_loopback(&a), cases[i].loopback);
    }
}

static void test_network_math(void **state)
{
    struct cluster_addr net, a;
    unsigned prefix;
    const char *why = NULL;
    (void)state;

    assert_int_equal(cluster_prefix_parse("10.1.2.3/12", &net, &prefix, &why), 0);
    cluster_addr_mask(&net, prefix);
    assert_addr(&net, "10.0.0.0");
    assert_int_equal(cluster_addr_parse("10.15.255.255", &a), 0);
    assert_true(cluster_addr_in_network(&a, &net, prefix));
    assert_true(cluster_addr_is_broadcast(&a, prefix));
    assert_int_equal(cluster_addr_parse("10.16.0.0", &a), 0);
    assert_false(cluster_addr_in_network(&a, &net, prefix));
    assert_false(cluster_addr_is_broadcast(&a, prefix));

    assert_int_equal(cluster_prefix_parse("fd77::/65", &net, &prefix, NULL), 0);
    assert_int_equal(cluster_addr_parse("fd77::7fff:ffff:ffff:ffff", &a), 0);
    assert_true(cluster_addr_in_network(&a, &net, prefix));
    assert_false(cluster_addr_is_broadcast(&a, prefix));
    assert_int_equal(cluster_addr_parse("fd77::8000:0:0:0", &a), 0);
    assert_false(cluster_addr_in_network(&a, &net, prefix));
    assert_int_equal(cluster_addr_parse("10.0.0.1", &a), 0);
    assert_false(cluster_addr_in_network(&a, &net, prefix));

    assert_int_equal(cluster_prefix_parse("fd77::", &net, &prefix, NULL), -EINVAL);
    assert_int_equal(net.family, 0);
    assert_int_equal(prefix, 0);
    assert_int_equal(cluster_addr_parse("fd77::1/64", &a), -EINVAL);
    assert_int_equal(a.family, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_valid_ipv4),
        cmocka_unit_test(test_busy_poll_key),
        cmocka_unit_test(test_socket_buffer_key),
        cmocka_unit_test(test_valid_ipv6_defaults),
        cmocka_unit_test(test_valid_limits),
        cmocka_unit_test(test_valid_crlf_and_no_newline),
        cmocka_unit_test(test_parse_null_diag),
        cmocka_unit_test(test_bad_cases),
        cmocka_unit_test(test_many_errors_in_line_order),
        cmocka_unit_test(test_typo_before_missing),
        cmocka_unit_test(test_empty_file),
        cmocka_unit_test(test_duplicate_cluster_continues),
        cmocka_unit_test(test_triple_duplicates_name_the_first),
        cmocka_unit_test(test_bad_name_node_still_checked),
        cmocka_unit_test(test_long_line),
        cmocka_unit_test(test_quote_in_messages),
        cmocka_unit_test(test_diag_cap_keeps_first_lines),
        cmocka_unit_test(test_too_many_nodes),
        cmocka_unit_test(test_too_big),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_load_errors),
        cmocka_unit_test(test_diag_format),
        cmocka_unit_test(test_addr_format),
        cmocka_unit_test(test_uint_parse),
        cmocka_unit_test(test_names_and_hostnames),
        cmocka_unit_test(test_machine_domains_key),
        cmocka_unit_test(test_claim_rule),
        cmocka_unit_test(test_endpoint_parse_lengths),
        cmocka_unit_test(test_network_math),
        cmocka_unit_test(test_metrics_keys),
        cmocka_unit_test(test_registry_path_keys),
        cmocka_unit_test(test_registry_insecure),
        cmocka_unit_test(test_authority),
        cmocka_unit_test(test_revoked),
        cmocka_unit_test(test_loopback),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
