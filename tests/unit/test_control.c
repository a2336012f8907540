/* SPDX-License-Identifier: MIT */
/* Tests of the control socket (overlay/control*.c) and of `ddpnet status` /
 * `ddpnet env` (overlay/cli/cli_status.c): a small device built by hand, served
 * through socket pairs and real sockets in a temporary directory; the
 * get/set answers byte for byte, the listener's mode and stale-socket
 * handling, the client's errors, and the CLI's table, JSON and export
 * lines. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/routes.h"
#include "overlay/base/version.h"
#include "overlay/cli/cli.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/engine/model/device.h"
#include "overlay/membership/state.h"
#include "tests/unit/peer_fixture.h"

#define PRIV_HEX "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20"
#define B_HEX    "b0b1b2b3b4b5b6b7b8b9babbbcbdbebfc0c1c2c3c4c5c6c7c8c9cacbcccdcecf"
#define C_HEX    "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
#define B_B64    "sLGys7S1tre4ubq7vL2+v8DBwsPExcbHyMnKy8zNzs8="
#define C_B64    "wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t8="
#define PSK_HEX  "5555555555555555555555555555555555555555555555555555555555555555"
#define ZERO_HEX "0000000000000000000000000000000000000000000000000000000000000000"
#define NONE_HEX "eeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee"

#define NOW_NS   (100 * WG_NSEC_PER_SEC)
#define HS_SEC   1700000000u
#define NOBODY   65534

static const char get_wg_expected[] =
    "private_key=" PRIV_HEX "\n"
    "listen_port=51820\n"
    "public_key=" B_HEX "\n"
    "protocol_version=1\n"
    "endpoint=192.0.2.2:51820\n"
    "last_handshake_time_sec=1700000000\n"
    "last_handshake_time_nsec=5\n"
    "tx_bytes=2000\n"
    "rx_bytes=1000\n"
    "persistent_keepalive_interval=25\n"
    "allowed_ip=10.77.0.2/32\n"
    "public_key=" C_HEX "\n"
    "protocol_version=1\n"
    "last_handshake_time_sec=0\n"
    "last_handshake_time_nsec=0\n"
    "tx_bytes=0\n"
    "rx_bytes=0\n"
    "persistent_keepalive_interval=0\n"
    "allowed_ip=10.77.0.3/32\n"
    "errno=0\n\n";

static const char get_ddpnet_expected[] =
    "interface=ddp0\n"
    "self=gpu-a\n"
    "address=10.77.0.1\n"
    "prefix=16\n"
    "listen_port=51820\n"
    "master=gpu-a\n"
    "master_address=10.77.0.1\n"
    "mtu=1420\n"
    "hint_bytes=0\n"
    "hint_refused=0\n"
    "relay_trials_failed=0\n"
    "relay_dropped=0\n"
    "dropped_socket_overflow=0\n"
    "dropped_tun_queue=0\n"
    "dropped_queue_delay=0\n"
    "ecn_marked=0\n"
    "rules=0\n"
    "dropped_rule=0\n"
    "refused_rule=0\n"
    "rule_table_full=0\n"
    "rule_peer_full=0\n"
    "public_key=" B_HEX "\n"
    "name=gpu-b\n"
    "address=10.77.0.2\n"
    "endpoint=192.0.2.2:51820\n"
    "path=direct\n"
    "path_mtu=1420\n"
    "rtt_us=1234\n"
    "last_handshake_time_sec=1700000000\n"
    "last_handshake_time_nsec=5\n"
    "rx_bytes=1000\n"
    "tx_bytes=2000\n"
    "rx_rate=10625000\n"
    "tx_rate=125\n"
    "public_key=" C_HEX "\n"
    "name=gpu-c\n"
    "address=10.77.0.3\n"
    "last_handshake_time_sec=0\n"
    "last_handshake_time_nsec=0\n"
    "rx_bytes=0\n"
    "tx_bytes=0\n"
    "rx_rate=0\n"
    "tx_rate=0\n"
    "errno=0\n\n";

/* --- the device, by hand ------------------------------------------------------------ */

struct fx {
    struct device dev;
    struct membership membership;   /* dev.membership */
    struct peer *peers[2];
    char dir[64];           /* a temporary directory, when a test made one */
};

static void fill_cluster(struct fx *f)
{
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    char b64[64], text[1024];
    int n;

    for (unsigned i = 0; i < WG_KEY_LEN; i++)
        priv[i] = (uint8_t)(i + 1);
    f->dev.local = noise_local_new(priv);
    assert_non_null(f->dev.local);
    assert_int_equal(crypto_scalarmult_base(pub, priv), 0);
    sodium_bin2base64(b64, sizeof(b64), pub, sizeof(pub), sodium_base64_VARIANT_ORIGINAL);
    n = snprintf(text, sizeof(text),
                 "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n\n"
                 "[node gpu-a]\npublic-key = %s\naddress = 10.77.0.1\n\n"
                 "[node gpu-b]\npublic-key = " B_B64 "\naddress = 10.77.0.2\n\n"
                 "[node gpu-c]\npublic-key = " C_B64 "\naddress = 10.77.0.3\n", b64);
    assert_true(n > 0 && (size_t)n < sizeof(text));
    assert_int_equal(cluster_parse(text, (size_t)n, &f->dev.cluster, NULL), 0);
    assert_int_equal(f->dev.cluster.n_nodes, 3);
}

static int setup(void **state)
{
    struct fx *f = calloc(1, sizeof(*f));
    struct peer *b;

    assert_non_null(f);
    membership_init(&f->membership);
    f->dev.membership = &f->membership;
    fill_cluster(f);
    snprintf(f->dev.ifname, sizeof(f->dev.ifname), "ddp0");
    f->dev.self = &f->dev.cluster.nodes[0];
    f->dev.listen_port = 51820;
    f->dev.mtu = 1420;
    f->dev.udp4_fd = f->dev.udp6_fd = f->dev.tun_fd = -1;
    peer_fixture_fill(&f->dev, f->peers, 2);

    b = f->peers[0];
    peer_fixture_endpoint4(b, "192.0.2.2", 51820);
    b->wg.last_handshake.tv_sec = HS_SEC;
    b->wg.last_handshake.tv_nsec = 5;
    b->live.reachable = true;
    b->live.rx_bytes = 1000;
    b->live.tx_bytes = 2000;
    b->wg.persistent_keepalive = 25;
    /* 85 Mbit/s in, 1 kbit/s out, over a window that began a second ago. */
    b->live.rx_rate = (struct rate){ NOW_NS - WG_NSEC_PER_SEC, 0, 10625000 };
    b->live.tx_rate = (struct rate){ NOW_NS - WG_NSEC_PER_SEC, 0, 125 };
    b->disco.state.rtt_ns = 1234567;    /* shown in whole microseconds */
    f->peers[1]->live.rx_rate.window_start_ns = NOW_NS - WG_NSEC_PER_SEC;
    f->peers[1]->live.tx_rate.window_start_ns = NOW_NS - WG_NSEC_PER_SEC;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    if (f->dir[0]) {
        char cmd[128];
        snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", f->dir);
    }
    peer_fixture_free(f->peers, 2);
    noise_local_free(f->dev.local);
    cluster_free(&f->dev.cluster);
    free(f);
    return 0;
}

static bool is_root(void)
{
    return geteuid() == 0;
}

/* SO_PEERCRED of a socket pair names ourselves: the server answers only
 * when that is root. */
#define NEED_ROOT()                                                            \
    do {                                                                       \
        if (!is_root()) {                                                      \
            fprintf(stderr, "skipped: the control socket answers root only\n"); \
            skip();                                                            \
        }                                                                      \
    } while (0)

static void make_dir(struct fx *f)
{
    snprintf(f->dir, sizeof(f->dir), "/tmp/ddpnet-control-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
}

static void sock_path(const struct fx *f, char *buf, size_t len, const char *name)
{
    int n = snprintf(buf, len, "%s/%s", f->dir, name);

    assert_true(n > 0 && (size_t)n < len);
}

/* The address of a socket path, which must fit. */
static struct sockaddr_un sun_of(const char *path)
{
    struct sockaddr_un sun = { .sun_family = AF_UNIX };

    assert_true(strlen(path) < sizeof(sun.sun_path));
    memcpy(sun.sun_path, path, strlen(path) + 1);
    return sun;
}

/* --- a client on one end of a socket pair, the server on the other ---------------- */

struct client {
    int fd;
    const char *req;
    size_t req_len;
    char *resp;
    size_t resp_len;
};

/* Writes the whole request (or until the server hangs up), half-closes,
 * then reads to EOF. A reset after the server closed counts as EOF. */
static void *client_run(void *arg)
{
    struct client *c = arg;
    size_t cap = 4096, off = 0;

    while (off < c->req_len) {
        ssize_t n = send(c->fd, c->req + off, c->req_len - off, MSG_NOSIGNAL);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    shutdown(c->fd, SHUT_WR);
    c->resp = malloc(cap);
    for (;;) {
        ssize_t n;
        if (c->resp_len + 1 == cap)
            c->resp = realloc(c->resp, cap *= 2);
        n = read(c->fd, c->resp + c->resp_len, cap - 1 - c->resp_len);
        if (n <= 0)
            break;
        c->resp_len += (size_t)n;
    }
    c->resp[c->resp_len] = '\0';
    return NULL;
}

/* Serves one connection through a control server (env: the env socket's),
 * as the daemon's loop does (poll its fd, run it), until it hangs up. */
static void serve_fd_as(struct device *dev, int fd, bool env)
{
    struct control_server *s = env ? control_server_new_env(-1) : control_server_new(-1);

    assert_non_null(s);
    if (control_server_adopt(s, fd, NOW_NS) == 0) {
        while (control_server_clients(s) > 0) {
            struct pollfd p = { control_server_fd(s), POLLIN, 0 };
            assert_true(poll(&p, 1, 5000) == 1);
            control_server_run(s, dev, NOW_NS);
        }
    }
    control_server_free(s);
}

static char *exchange_as(struct device *dev, const char *req, size_t len, size_t *resp_len,
                         bool env)
{
    struct client c = { .req = req, .req_len = len };
    pthread_t t;
    int sv[2];

    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    c.fd = sv[0];
    assert_int_equal(pthread_create(&t, NULL, client_run, &c), 0);
    serve_fd_as(dev, sv[1], env);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(sv[0]);
    assert_non_null(c.resp);
    if (resp_len)
        *resp_len = c.resp_len;
    return c.resp;
}

static char *exchange_n(struct device *dev, const char *req, size_t len, size_t *resp_len)
{
    return exchange_as(dev, req, len, resp_len, false);
}

static char *exchange(struct device *dev, const char *req)
{
    return exchange_n(dev, req, strlen(req), NULL);
}

static void expect_exchange(struct device *dev, const char *req, const char *want)
{
    char *got = exchange(dev, req);

    assert_string_equal(got, want);
    free(got);
}

/* --- get=1 -------------------------------------------------------------------------------- */

static void test_get_wg_exact(void **state)
{
    struct fx *f = *state;

    NEED_ROOT();
    expect_exchange(&f->dev, "get=1\n\n", get_wg_expected);
}

/* What stock `wg` relies on: key=value lines of keys it knows, one empty
 * line, which ends the text after errno=0. */
static void test_get_wg_compatible(void **state)
{
    static const char *const keys[] = {
        "private_key", "listen_port", "public_key", "preshared_key", "protocol_version",
        "endpoint", "last_handshake_time_sec", "last_handshake_time_nsec", "tx_bytes",
        "rx_bytes", "persistent_keepalive_interval", "allowed_ip", "errno",
    };
    struct fx *f = *state;
    char *resp, *line;
    size_t n_lines = 0;

    NEED_ROOT();
    f->peers[1]->wg.has_psk = true;
    memset(f->peers[1]->wg.handshake.psk, 0x55, WG_KEY_LEN);
    resp = exchange(&f->dev, "get=1\n\n");
    assert_non_null(strstr(resp, "public_key=" C_HEX "\npreshared_key=" PSK_HEX "\n"
                                 "protocol_version=1\n"));
    assert_int_equal(strlen(resp) - strlen("errno=0\n\n"),
                     (size_t)(strstr(resp, "errno=0\n\n") - resp));
    for (line = resp; *line != '\n'; line = strchr(line, '\n') + 1) {
        const char *eq = strchr(line, '=');
        bool known = false;

        assert_non_null(eq);
        assert_true(eq < strchr(line, '\n'));
        for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
            known |= strlen(keys[k]) == (size_t)(eq - line) &&
                     !strncmp(line, keys[k], strlen(keys[k]));
        assert_true(known);
        n_lines++;
    }
    assert_int_equal(n_lines, 21);
    free(resp);
}

/* An IPv6 overlay address is routed as /128; a v6 endpoint keeps its zone. */
static void test_get_wg_ipv6(void **state)
{
    struct fx *f = *state;
    struct peer *c = f->peers[1];
    char *resp;

    NEED_ROOT();
    c->member.address.family = AF_INET6;
    inet_pton(AF_INET6, "fd77::3", c->member.address.bytes);
    c->path.endpoint.in6.sin6_family = AF_INET6;
    c->path.endpoint.in6.sin6_port = htons(51821);
    c->path.endpoint.in6.sin6_scope_id = 7;
    inet_pton(AF_INET6, "fe80::3", &c->path.endpoint.in6.sin6_addr);
    resp = exchange(&f->dev, "get=1\n\n");
    assert_non_null(strstr(resp, "endpoint=[fe80::3%7]:51821\n"));
    assert_non_null(strstr(resp, "allowed_ip=fd77::3/128\nerrno=0\n\n"));
    free(resp);
}

/* A device without a private key or port leaves those lines out. */
static void test_get_wg_no_identity(void **state)
{
    struct fx *f = *state;
    struct noise_local *local = f->dev.local;
    char *resp;

    NEED_ROOT();
    f->dev.local = NULL;
    f->dev.listen_port = 0;
    f->dev.n_peers = 0;
    resp = exchange(&f->dev, "get=1\n\n");
    f->dev.local = local;
    assert_string_equal(resp, "errno=0\n\n");
    free(resp);
}

/* The buffer is sized from the peer count: the longest fields of every
 * peer still fit, for thousands of peers. */
static void test_get_sized_for_many_peers(void **state)
{
    enum { N = 3000 };
    struct fx *f = *state;
    struct peer *big = calloc(1, sizeof(*big));
    struct peer **many = calloc(N, sizeof(*many));
    char *out = NULL;
    size_t len = 0;

    assert_non_null(big);
    assert_non_null(many);
    memset(big->member.name, 'n', CLUSTER_NAME_MAX);
    memset(big->public_key, 0xff, WG_KEY_LEN);
    big->wg.has_psk = true;
    memset(big->wg.handshake.psk, 0xff, WG_KEY_LEN);
    big->member.address.family = AF_INET6;
    memset(big->member.address.bytes, 0xff, sizeof(big->member.address.bytes));
    big->path.endpoint.in6.sin6_family = AF_INET6;
    big->path.endpoint.in6.sin6_port = htons(65535);
    big->path.endpoint.in6.sin6_scope_id = UINT32_MAX;
    memset(&big->path.endpoint.in6.sin6_addr, 0xff, sizeof(big->path.endpoint.in6.sin6_addr));
    big->wg.last_handshake.tv_sec = INT64_MAX;
    big->wg.last_handshake.tv_nsec = 999999999;
    big->live.rx_bytes = big->live.tx_bytes = UINT64_MAX;
    big->wg.persistent_keepalive = UINT16_MAX;
    big->live.rx_rate = big->live.tx_rate = (struct rate){ NOW_NS, 0, UINT64_MAX };
    /* Relayed through a peer with the longest name, the longest rtt. */
    big->dev = &f->dev;
    big->path.via = big;
    big->disco.state.rtt_ns = UINT64_MAX;
    for (size_t i = 0; i < N; i++)
        many[i] = big;
    f->dev.peers = many;
    f->dev.n_peers = N;
    f->dev.listen_port = UINT16_MAX;
    f->dev.mtu = UINT32_MAX;

    assert_int_equal(control_get_wg(&f->dev, &out, &len), 0);
    assert_true(len > N * 400);
    assert_memory_equal(out + len - 9, "errno=0\n\n", 9);
    free(out);
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    assert_true(len > N * 400);
    assert_memory_equal(out + len - 9, "errno=0\n\n", 9);
    free(out);

    f->dev.peers = f->peers;
    f->dev.n_peers = 2;
    free(many);
    free(big);
}

static void test_get_bad_arguments(void **state)
{
    struct fx *f = *state;
    const struct cluster_node *self = f->dev.self;
    char *out = NULL;
    size_t len = 0;

    assert_int_equal(control_get_wg(NULL, &out, &len), -EINVAL);
    assert_int_equal(control_get_wg(&f->dev, NULL, &len), -EINVAL);
    assert_int_equal(control_get_ddpnet(NULL, NOW_NS, &out, &len), -EINVAL);
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, NULL), -EINVAL);
    f->dev.self = NULL;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), -EINVAL);
    f->dev.self = self;
    /* An address that cannot be written spoils the response: no half answer. */
    f->peers[1]->member.address.family = AF_UNSPEC;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), -ENOBUFS);
    assert_null(out);
}

/* --- get=ddpnet ------------------------------------------------------------------------- */

static void test_get_ddpnet_exact(void **state)
{
    struct fx *f = *state;

    NEED_ROOT();
    expect_exchange(&f->dev, CONTROL_GET_DDPNET "\n", get_ddpnet_expected);
}

/* A rate whose window ended long ago reads as zero: traffic stopped. */
static void test_get_ddpnet_stale_rate(void **state)
{
    struct fx *f = *state;
    char *out = NULL;
    size_t len = 0;

    f->peers[0]->live.rx_rate.window_start_ns = NOW_NS - 10 * WG_NSEC_PER_SEC;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "name=gpu-b\n"));
    assert_non_null(strstr(out, "rx_rate=0\ntx_rate=125\n"));
    free(out);
}

/* What the kernel dropped: the sockets' count as the loop told it, ddp0's
 * asked of the kernel at the request (a failed read keeps the last one:
 * a counter never goes back), and the buffer the sockets got. */
static int fake_tun_dropped_ret;
static int fake_tun_dropped(void *ctx, uint64_t *n)
{
    (void)ctx;
    *n = 3;
    return fake_tun_dropped_ret;
}

static void test_get_ddpnet_drops(void **state)
{
    struct fx *f = *state;
    char *out = NULL;
    size_t len = 0;

    f->dev.stats.dropped_socket_overflow = 7;
    f->dev.tun_dropped = fake_tun_dropped;
    f->dev.socket_buffer = 16u << 20;
    fake_tun_dropped_ret = 0;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "relay_dropped=0\ndropped_socket_overflow=7\n"
                                "dropped_tun_queue=3\nsocket_buffer=16777216\n"));
    free(out);
    f->dev.stats.dropped_tun_queue = 5;
    fake_tun_dropped_ret = -EBADF;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "dropped_tun_queue=5\n"));
    free(out);
    f->dev.tun_dropped = NULL;
}

/* Issue 60: the prefixes this node carries in the interface section
 * (and whether it masquerades them), each peer's in its own section, as
 * the data path's table has them; a pending carrier lists none. */
static void grant(struct cluster_node *n, const char *routes)
{
    const char *why = NULL;
    char bad[64];

    assert_int_equal(cluster_routes_parse(routes, n->routes, &n->n_routes, &why, bad,
                                          sizeof(bad)), 0);
}

static void test_get_ddpnet_routes(void **state)
{
    struct fx *f = *state;
    char *out = NULL;
    size_t len = 0;

    grant(&f->dev.cluster.nodes[0], "192.168.50.0/24");
    f->dev.cluster.nodes[0].routed = true;
    grant(&f->dev.cluster.nodes[1], "10.99.0.0/16, fd10::/64");
    grant(&f->dev.cluster.nodes[2], "172.16.0.0/12");
    f->peers[1]->member.pending = true;
    assert_int_equal(device_remap(&f->dev), 0);
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "rule_table_full=0\nrule_peer_full=0\nroute=192.168.50.0/24\nmasquerade=0\n"));
    assert_non_null(strstr(out, "rtt_us=1234\nroute=10.99.0.0/16\nroute=fd10::/64\n"
                                "last_handshake_time_sec=1700000000\n"));
    assert_null(strstr(out, "172.16.0.0"));
    free(out);
    /* Masquerading, the default. */
    f->dev.cluster.nodes[0].routed = false;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "route=192.168.50.0/24\nmasquerade=1\n"));
    free(out);
    device_map_install(&f->dev, NULL);
}

/* A relayed peer: the endpoint in use is the relay's, and it says through
 * whom; `wg show` still gets the peer's own (here none). A peer with no
 * endpoint and no relay has no path line; no ping answered, no rtt. */
static void test_get_ddpnet_relayed(void **state)
{
    struct fx *f = *state;
    struct peer *c = f->peers[1];
    char *out = NULL;
    size_t len = 0;

    c->path.via = f->peers[0];
    c->disco.state.rtt_ns = 5470999;
    /* Before its first handshake: somewhere to send, nothing proven. */
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "name=gpu-c\naddress=10.77.0.3\nendpoint=192.0.2.2:51820\n"
                                "path=waiting\npath_mtu=1308\n"));
    free(out);
    c->live.reachable = true;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "name=gpu-c\naddress=10.77.0.3\nendpoint=192.0.2.2:51820\n"
                                "path=relay\nvia=gpu-b\npath_mtu=1308\nrtt_us=5470\n"));
    free(out);
    assert_int_equal(control_get_wg(&f->dev, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "public_key=" C_HEX "\nprotocol_version=1\nlast_handshake"));
    sodium_memzero(out, len);
    free(out);

    c->path.via = NULL;
    c->disco.state.rtt_ns = 0;
    assert_int_equal(control_get_ddpnet(&f->dev, NOW_NS, &out, &len), 0);
    out[len - 1] = '\0';
    assert_non_null(strstr(out, "name=gpu-c\naddress=10.77.0.3\nlast_handshake"));
    assert_null(strstr(out, "via="));
    free(out);
}

/* --- framing and bad requests ----------------------------------------------------------- */

static void test_frame(void **state)
{
    enum control_op op = CONTROL_SET_WG;
    size_t consumed = 0;

    (void)state;
    assert_int_equal(control_frame("", 0, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame(NULL, 0, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=", 4, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddp", 7, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet\n", 11, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet\nx", 12, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=ddpnex\n\n", 12, &op, &consumed), -EINVAL);
    /* get=ddpnet-env shares get=ddpnet's first ten bytes. */
    assert_int_equal(control_frame("get=ddpnet", 10, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet-", 11, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet-env\n", 15, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet-env\nx", 16, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=ddpnet-enw\n\n", 16, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=ddpnet-env\n\nget=1\n\n", 23, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_GET_ENV_OP);
    assert_int_equal(consumed, 16);
    /* get=ddpnet-certs (issue 56) too: alone on its line, then an empty one. */
    assert_int_equal(control_frame("get=ddpnet-c", 12, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet-certs\n", 17, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("get=ddpnet-certs\nx", 18, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=ddpnet-certz\n\n", 18, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=ddpnet-certs\n\nget=1\n\n", 25, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_GET_CERTS_OP);
    assert_int_equal(consumed, 18);
    assert_int_equal(control_frame("get=ddpnet\n\nget=1\n\n", 19, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_GET_DDPNET_OP);
    assert_int_equal(consumed, 12);
    assert_int_equal(control_frame("get=1\n\n", 7, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_GET_WG);
    assert_int_equal(consumed, 7);
    assert_int_equal(control_frame("set=1\nlisten_port=1\n\n", 21, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_SET_WG);
    assert_int_equal(consumed, 21);
    assert_int_equal(control_frame("set=1\nlisten_port=1\n", 20, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame("hello", 5, &op, &consumed), -EINVAL);
    /* set=ddpnet-cluster: a length line, then exactly that many bytes. */
    static const char reload[] = "set=ddpnet-cluster\nlength=5\nab\ncd";
    const char *body;
    size_t body_len;
    for (size_t n = 1; n < sizeof(reload) - 1; n++)
        assert_int_equal(control_frame(reload, n, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame(reload, sizeof(reload) - 1, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_RELOAD_OP);
    assert_int_equal(consumed, sizeof(reload) - 1);
    control_cluster_body(reload, consumed, &body, &body_len);
    assert_int_equal(body_len, 5);
    assert_memory_equal(body, "ab\ncd", 5);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlength=0\nget=1\n\n", 35, &op, &consumed), 0);
    assert_int_equal(consumed, 28);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlen=5\n", 25, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlength=\n", 27, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlength=1x\n", 29, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlength=123456789\n", 36, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("set=ddpnet-cluster\nlength=9999999\n", 34, &op, &consumed), -EMSGSIZE);
    /* set=ddpnet-statement (`ddpnet revoke`): framed the same way. */
    static const char statement[] = "set=ddpnet-statement\nlength=4\nabcd";
    for (size_t n = 1; n < sizeof(statement) - 1; n++)
        assert_int_equal(control_frame(statement, n, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame(statement, sizeof(statement) - 1, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_STATEMENT_OP);
    assert_int_equal(consumed, sizeof(statement) - 1);
    control_cluster_body(statement, consumed, &body, &body_len);
    assert_int_equal(body_len, 4);
    assert_memory_equal(body, "abcd", 4);
    assert_int_equal(control_frame("set=ddpnet-statement\nlength=x\n", 31, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("set=ddpnet-statement\nlength=9999999\n", 36, &op, &consumed),
                     -EMSGSIZE);
    assert_int_equal(control_frame(NULL, 3, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=1\n\n", 7, NULL, &consumed), -EINVAL);
    assert_int_equal(control_frame("get=1\n\n", 7, &op, NULL), -EINVAL);
}

/* A protocol line before a request: the request framed after it, or,
 * naming another protocol, refused unread. */
static void test_frame_protocol(void **state)
{
    enum control_op op = CONTROL_SET_WG;
    size_t consumed = 0;
    char req[64];
    int n;

    (void)state;
    n = snprintf(req, sizeof(req), "protocol=%u\nget=ddpnet\n\n", DDPNET_CONTROL_PROTOCOL);
    for (int i = 1; i < n; i++)
        assert_int_equal(control_frame(req, (size_t)i, &op, &consumed), -EAGAIN);
    assert_int_equal(control_frame(req, (size_t)n, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_GET_DDPNET_OP);
    assert_int_equal(consumed, n);
    assert_int_equal(control_protocol_head(req, (size_t)n), n - 12);
    n = snprintf(req, sizeof(req), "protocol=%u\nset=ddpnet-cluster\nlength=2\nab",
                 DDPNET_CONTROL_PROTOCOL);
    assert_int_equal(control_frame(req, (size_t)n, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_RELOAD_OP);
    assert_int_equal(consumed, n);
    /* Another number: refused after its line, whatever follows. */
    n = snprintf(req, sizeof(req), "protocol=%u\nget=ddpnet-v9 whatever", DDPNET_CONTROL_PROTOCOL + 1);
    assert_int_equal(control_frame(req, (size_t)n, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_PROTOCOL_OP);
    assert_int_equal(consumed, strlen("protocol=2\n") + (DDPNET_CONTROL_PROTOCOL + 1 >= 10));
    assert_int_equal(control_frame("protocol=0\n", 11, &op, &consumed), 0);
    assert_int_equal(op, CONTROL_PROTOCOL_OP);
    /* Bad lines. */
    assert_int_equal(control_frame("protocol=\n", 10, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("protocol=1x\n", 12, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("protocol=123456789\n", 19, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("protocol=1\nhello\n\n", 18, &op, &consumed), -EINVAL);
    assert_int_equal(control_frame("protocoX=1\n", 11, &op, &consumed), -EINVAL);
    assert_int_equal(control_protocol_head("get=1\n\n", 7), 0);
}

/* Requests on one connection are answered in order. */
static void test_pipelined(void **state)
{
    struct fx *f = *state;
    char want[4096];

    NEED_ROOT();
    snprintf(want, sizeof(want), "%s%s%s", get_ddpnet_expected, "errno=0\n\n", get_wg_expected);
    expect_exchange(&f->dev, "get=ddpnet\n\nset=1\nlisten_port=51820\n\nget=1\n\n", want);
}

/* Not a request: one errno line, then the server hangs up without reading
 * what follows. */
static void test_bad_request_closes(void **state)
{
    struct fx *f = *state;

    NEED_ROOT();
    expect_exchange(&f->dev, "hello\nget=1\n\n", "errno=-22\n\n");
    expect_exchange(&f->dev, "get=1\nx\n\nget=1\n\n", "errno=-22\n\n");
    expect_exchange(&f->dev, "get=ddpnetx\n\n", "errno=-22\n\n");
    expect_exchange(&f->dev, "\n\n", "errno=-22\n\n");
    /* Half a request, then EOF: nothing to answer. */
    expect_exchange(&f->dev, "get=1\n", "");
    expect_exchange(&f->dev, "set=1\nendpoint=1.2.3.4:5\n", "");
    expect_exchange(&f->dev, "", "");
}

/* A malformed set body is an answer, not a reason to hang up. */
static void test_bad_set_keeps_connection(void **state)
{
    struct fx *f = *state;
    char want[4096];

    NEED_ROOT();
    snprintf(want, sizeof(want), "errno=-71\n\n%s", get_wg_expected);
    expect_exchange(&f->dev, "set=1\nnonsense\n\nget=1\n\n", want);
}

/* More than UAPI_MAX_REQUEST bytes without an end: -EMSGSIZE, then hang up. */
static void test_request_too_big(void **state)
{
    struct fx *f = *state;
    size_t len = UAPI_MAX_REQUEST + 4096;
    char *req = malloc(len), *resp;

    NEED_ROOT();
    assert_non_null(req);
    memcpy(req, "set=1\n", 6);
    for (size_t i = 6; i < len; i += 2)
        memcpy(req + i, "x\n", 2);
    resp = exchange_n(&f->dev, req, len, NULL);
    assert_string_equal(resp, "errno=-90\n\n");
    free(resp);
    free(req);
}

/* Sends req's bytes with fds attached (SCM_RIGHTS), as reload passes the
 * hosts file. */
static void send_with_fds(int sock, const char *req, const int *fds, size_t n)
{
    union {
        struct cmsghdr align;
        char buf[CMSG_SPACE(4 * sizeof(int))];
    } ctl;
    struct iovec iov = { (char *)(uintptr_t)req, strlen(req) };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf,
                          .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
    struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

    memset(ctl.buf, 0, sizeof(ctl.buf));
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(n * sizeof(int));
    memcpy(CMSG_DATA(c), fds, n * sizeof(int));
    assert_int_equal(sendmsg(sock, &msg, 0), (ssize_t)strlen(req));
}

/* Whether the read end of a pipe is still open anywhere: a write to it
 * fails with EPIPE once the last one is closed. */
static bool pipe_read_end_open(int wfd)
{
    return write(wfd, "x", 1) == 1;
}

/* A descriptor passed with a request that is not a reload is held for the
 * client (one at a time: a second in the same message is closed at once)
 * and closed when the client goes: nothing leaks into the daemon. */
static void test_passed_fd_closed_with_client(void **state)
{
    struct fx *f = *state;
    struct control_server *srv = control_server_new(-1);
    int sv[2], a[2], b[2], fds[2];
    char buf[4096];
    ssize_t n;

    NEED_ROOT();
    signal(SIGPIPE, SIG_IGN);
    assert_non_null(srv);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(pipe2(a, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(pipe2(b, O_CLOEXEC | O_NONBLOCK), 0);
    assert_int_equal(control_server_adopt(srv, sv[1], NOW_NS), 0);
    fds[0] = a[0];
    fds[1] = b[0];
    send_with_fds(sv[0], CONTROL_GET_DDPNET "\n", fds, 2);
    close(a[0]);
    close(b[0]);
    control_server_run(srv, &f->dev, NOW_NS);
    n = read(sv[0], buf, sizeof(buf) - 1);
    assert_true(n > 0);
    buf[n] = '\0';
    assert_non_null(strstr(buf, "interface=ddp0\n"));   /* answered as usual */
    assert_true(pipe_read_end_open(a[1]));              /* held for the client */
    assert_false(pipe_read_end_open(b[1]));             /* the second: closed */
    close(sv[0]);
    control_server_run(srv, &f->dev, NOW_NS);
    assert_int_equal(control_server_clients(srv), 0);
    assert_false(pipe_read_end_open(a[1]));             /* closed with the client */
    close(a[1]);
    close(b[1]);
    control_server_free(srv);
}

/* A client that stops talking mid-request is hung up on after its idle
 * time, without a word; until then it costs nothing (run returns at once). */
static void test_silent_client_times_out(void **state)
{
    struct fx *f = *state;
    struct control_server *srv = control_server_new(-1);
    char buf[64];
    int sv[2];

    NEED_ROOT();
    assert_non_null(srv);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(control_server_adopt(srv, sv[1], NOW_NS), 0);
    assert_int_equal(write(sv[0], "get=", 4), 4);
    control_server_run(srv, &f->dev, NOW_NS);
    assert_int_equal(control_server_clients(srv), 1);
    assert_int_equal(control_server_next(srv), NOW_NS + 5 * WG_NSEC_PER_SEC);
    control_server_expire(srv, NOW_NS + 4 * WG_NSEC_PER_SEC);
    assert_int_equal(control_server_clients(srv), 1);
    control_server_expire(srv, NOW_NS + 5 * WG_NSEC_PER_SEC);
    assert_int_equal(control_server_clients(srv), 0);
    assert_int_equal(control_server_next(srv), UINT64_MAX);
    assert_true(read(sv[0], buf, sizeof(buf)) <= 0);   /* closed, nothing said */
    close(sv[0]);
    control_server_free(srv);
}

/* A slow client holds up nobody: while one sits on half a request,
 * another is answered in full, and no call waits. */
static void test_slow_client_blocks_nobody(void **state)
{
    struct fx *f = *state;
    struct control_server *srv = control_server_new(-1);
    struct timespec t0, t1;
    char buf[8192];
    int slow[2], quick[2];
    size_t got = 0;

    NEED_ROOT();
    assert_non_null(srv);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, slow), 0);
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, quick), 0);
    assert_int_equal(control_server_adopt(srv, slow[1], NOW_NS), 0);
    assert_int_equal(control_server_adopt(srv, quick[1], NOW_NS), 0);
    assert_int_equal(write(slow[0], "get=", 4), 4);
    assert_int_equal(write(quick[0], CONTROL_GET_DDPNET "\n", sizeof(CONTROL_GET_DDPNET)), sizeof(CONTROL_GET_DDPNET));
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < 10 && (got < 2 || memcmp(buf + got - 2, "\n\n", 2)); i++) {
        control_server_run(srv, &f->dev, NOW_NS);
        ssize_t n = recv(quick[0], buf + got, sizeof(buf) - got, MSG_DONTWAIT);
        if (n > 0)
            got += (size_t)n;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(got >= 2 && memcmp(buf + got - 2, "\n\n", 2) == 0);
    assert_true((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000 < 500);
    assert_int_equal(control_server_clients(srv), 2);   /* the slow one still waits */
    close(slow[0]);
    close(quick[0]);
    control_server_free(srv);
}

/* Bad arguments and full tables: refused, the connection closed. */
static void test_serve_bad_arguments(void **state)
{
    struct fx *f = *state;
    struct control_server *srv = control_server_new(-1);
    char buf[16];
    int sv[2], many[9][2];

    NEED_ROOT();
    assert_non_null(srv);
    /* No device: the connection is closed without a word. */
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
    assert_int_equal(control_server_adopt(srv, sv[1], NOW_NS), 0);
    assert_int_equal(write(sv[0], "get=1\n\n", 7), 7);
    control_server_run(srv, NULL, NOW_NS);
    assert_true(read(sv[0], buf, sizeof(buf)) <= 0);
    assert_int_equal(control_server_clients(srv), 0);
    close(sv[0]);
    assert_int_equal(control_server_adopt(srv, -1, NOW_NS), -EBADF);
    /* Eight at once; the ninth is refused and closed. */
    for (int i = 0; i < 9; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, many[i]), 0);
        assert_int_equal(control_server_adopt(srv, many[i][1], NOW_NS), i < 8 ? 0 : -EBUSY);
    }
    assert_int_equal(control_server_clients(srv), 8);
    assert_true(read(many[8][0], buf, sizeof(buf)) == 0);
    for (int i = 0; i < 9; i++)
        close(many[i][0]);
    control_server_free(srv);
    (void)f;
}

/* --- set=1 ---------------------------------------------------------------------------------- */

static void test_set_changes_peer(void **state)
{
    struct fx *f = *state;
    struct peer *c = f->peers[1];
    char addr[INET_ADDRSTRLEN];

    NEED_ROOT();
    expect_exchange(&f->dev,
                    "set=1\npublic_key=" C_HEX "\nendpoint=198.51.100.7:4242\n"
                    "persistent_keepalive_interval=17\npreshared_key=" PSK_HEX "\n\n",
                    "errno=0\n\n");
    assert_int_equal(c->path.endpoint.sa.sa_family, AF_INET);
    assert_int_equal(ntohs(c->path.endpoint.in4.sin_port), 4242);
    inet_ntop(AF_INET, &c->path.endpoint.in4.sin_addr, addr, sizeof(addr));
    assert_string_equal(addr, "198.51.100.7");
    assert_int_equal(c->wg.persistent_keepalive, 17);
    assert_int_equal(c->wg.timers.persistent_keepalive, NOW_NS + 17 * WG_NSEC_PER_SEC);
    assert_true(c->wg.has_psk);
    for (unsigned i = 0; i < WG_KEY_LEN; i++)
        assert_int_equal(c->wg.handshake.psk[i], 0x55);
    /* The other peer is untouched. */
    assert_int_equal(ntohs(f->peers[0]->path.endpoint.in4.sin_port), 51820);
    assert_int_equal(f->peers[0]->wg.persistent_keepalive, 25);
    assert_false(f->peers[0]->wg.has_psk);

    /* A zero key removes the psk; keepalive 0 turns it off. */
    expect_exchange(&f->dev,
                    "set=1\npublic_key=" C_HEX "\npreshared_key=" ZERO_HEX "\n"
                    "persistent_keepalive_interval=0\n\n",
                    "errno=0\n\n");
    assert_false(c->wg.has_psk);
    assert_int_equal(c->wg.persistent_keepalive, 0);
    assert_int_equal(c->wg.timers.persistent_keepalive, 0);
}

/* What `wg set ddp0 peer KEY allowed-ips ADDR/32 endpoint [v6]:p` sends. */
static void test_set_as_wg_sends_it(void **state)
{
    struct fx *f = *state;
    struct peer *b = f->peers[0];
    char addr[INET6_ADDRSTRLEN];

    NEED_ROOT();
    expect_exchange(&f->dev,
                    "set=1\npublic_key=" B_HEX "\nupdate_only=true\n"
                    "endpoint=[2001:db8::2]:51820\nreplace_allowed_ips=true\n"
                    "allowed_ip=10.77.0.2/32\nprotocol_version=1\n\n",
                    "errno=0\n\n");
    assert_int_equal(b->path.endpoint.sa.sa_family, AF_INET6);
    inet_ntop(AF_INET6, &b->path.endpoint.in6.sin6_addr, addr, sizeof(addr));
    assert_string_equal(addr, "2001:db8::2");
    assert_int_equal(b->member.address.family, AF_INET);   /* unchanged */
}

static void test_set_unknown_peer(void **state)
{
    struct fx *f = *state;
    char self_hex[2 * WG_KEY_LEN + 1], req[512];

    NEED_ROOT();
    expect_exchange(&f->dev, "set=1\npublic_key=" NONE_HEX "\nendpoint=1.2.3.4:5\n\n",
                    "errno=-2\n\n");
    /* This node is in the cluster but is not its own peer. */
    sodium_bin2hex(self_hex, sizeof(self_hex), f->dev.self->public_key, WG_KEY_LEN);
    snprintf(req, sizeof(req), "set=1\npublic_key=%s\npersistent_keepalive_interval=1\n\n",
             self_hex);
    expect_exchange(&f->dev, req, "errno=-2\n\n");
    assert_int_equal(f->peers[0]->wg.persistent_keepalive, 25);
    assert_int_equal(f->peers[1]->wg.persistent_keepalive, 0);
}

static void test_set_allowed_ip_only_own(void **state)
{
    struct fx *f = *state;

    NEED_ROOT();
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=10.77.0.3/32\n\n",
                    "errno=-22\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=10.77.0.0/16\n\n",
                    "errno=-22\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=10.77.0.2/31\n\n",
                    "errno=-22\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=fd77::2/128\n\n",
                    "errno=-22\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=0.0.0.0/0\n\n",
                    "errno=-22\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=10.77.0.2/32\n\n",
                    "errno=0\n\n");
    f->peers[0]->member.address.family = AF_INET6;
    inet_pton(AF_INET6, "fd77::2", f->peers[0]->member.address.bytes);
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=fd77::2/128\n\n",
                    "errno=0\n\n");
    expect_exchange(&f->dev, "set=1\npublic_key=" B_HEX "\nallowed_ip=fd77::2/64\n\n",
                    "errno=-22\n\n");
}

/* Interface keys other than the current port are refused, and a refused
 * request changes nothing, even where it lists a valid change first. */
static void test_set_unsupported(void **state)
{
    static const char *const bad[] = {
        "set=1\nprivate_key=" PRIV_HEX "\n\n",
        "set=1\nfwmark=0\n\n",
        "set=1\nreplace_peers=true\n\n",
        "set=1\nlisten_port=51821\n\n",
        "set=1\nlisten_port=0\n\n",
        "set=1\npublic_key=" B_HEX "\nendpoint=1.2.3.4:5\npublic_key=" C_HEX "\nremove=true\n\n",
        "set=1\npublic_key=" B_HEX "\nendpoint=1.2.3.4:5\nprotocol_version=2\n\n",
    };
    struct fx *f = *state;

    NEED_ROOT();
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *resp = exchange(&f->dev, bad[i]);

        if (strcmp(resp, "errno=-22\n\n"))
            fail_msg("request %zu answered '%s'", i, resp);
        free(resp);
    }
    assert_int_equal(ntohs(f->peers[0]->path.endpoint.in4.sin_port), 51820);
    assert_int_equal(f->dev.listen_port, 51820);
    expect_exchange(&f->dev, "set=1\nlisten_port=51820\n\n", "errno=0\n\n");
    expect_exchange(&f->dev, "set=1\n\n", "errno=0\n\n");
}

/* A stop partway applies the lines before it, as wireguard-go does. */
static void test_set_stops_at_unknown_peer(void **state)
{
    struct fx *f = *state;

    NEED_ROOT();
    expect_exchange(&f->dev,
                    "set=1\npublic_key=" B_HEX "\npersistent_keepalive_interval=9\n"
                    "public_key=" NONE_HEX "\npersistent_keepalive_interval=8\n"
                    "public_key=" C_HEX "\npersistent_keepalive_interval=7\n\n",
                    "errno=-2\n\n");
    assert_int_equal(f->peers[0]->wg.persistent_keepalive, 9);
    assert_int_equal(f->peers[1]->wg.persistent_keepalive, 0);
}

static void test_set_bad_arguments(void **state)
{
    struct fx *f = *state;

    assert_int_equal(control_set(NULL, "\n", 1, NOW_NS), -EINVAL);
    assert_int_equal(control_set(&f->dev, NULL, 1, NOW_NS), -EINVAL);
    assert_int_equal(control_set(&f->dev, "listen_port=51820\n", 18, NOW_NS), 0);
    assert_int_equal(control_set(&f->dev, "listen_port=51820", 17, NOW_NS), -EPROTO);
}

/* --- control_listen --------------------------------------------------------------------- */

static void test_listen_mode_and_flags(void **state)
{
    struct fx *f = *state;
    char path[128];
    struct stat st;
    mode_t old;
    int fd;

    make_dir(f);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    old = umask(0);   /* the socket must be private whatever the umask */
    fd = control_listen(path);
    assert_int_equal(umask(old), 0);   /* and the umask is put back */
    assert_true(fd >= 0);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISSOCK(st.st_mode));
    assert_int_equal(st.st_mode & 07777, 0600);
    assert_true(fcntl(fd, F_GETFL) & O_NONBLOCK);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
}

static void test_listen_replaces_stale(void **state)
{
    struct fx *f = *state;
    struct sockaddr_un sun;
    char path[128];
    int old, fd;

    make_dir(f);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    /* A socket file left by a daemon that died: nobody listens. */
    sun = sun_of(path);
    old = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(old, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(old);
    fd = control_listen(path);
    assert_true(fd >= 0);
    /* A live one is refused, and left as it is. */
    assert_int_equal(control_listen(path), -EADDRINUSE);
    assert_int_equal(access(path, F_OK), 0);
    close(fd);
}

static void test_listen_errors(void **state)
{
    struct fx *f = *state;
    char path[128], longpath[200];
    struct stat st;
    int fd;

    make_dir(f);
    assert_int_equal(control_listen(NULL), -EINVAL);
    assert_int_equal(control_listen(""), -EINVAL);
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[0] = '/';
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(control_listen(longpath), -ENAMETOOLONG);
    sock_path(f, path, sizeof(path), "missing/ddp0.sock");
    assert_int_equal(control_listen(path), -ENOENT);
    /* A file that is not a socket is never removed. */
    sock_path(f, path, sizeof(path), "ddp0.sock");
    fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);
    assert_true(fd >= 0);
    close(fd);
    assert_int_equal(control_listen(path), -EEXIST);
    assert_int_equal(lstat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
}

/* --- the client, against a real listener ------------------------------------------------ */

enum srv_mode { SRV_SERVE, SRV_CANNED, SRV_SILENT };

struct srv {
    struct device *dev;
    int lfd;
    bool env;                     /* serve as the env socket */
    enum srv_mode mode;
    const char *canned;
    size_t canned_len;
};

static int srv_accept(int lfd)
{
    struct pollfd p = { .fd = lfd, .events = POLLIN };

    if (poll(&p, 1, 10000) != 1)
        return -1;
    return accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
}

static void *srv_run(void *arg)
{
    struct srv *s = arg;
    int fd = srv_accept(s->lfd);
    char buf[256];

    if (fd < 0)
        return NULL;
    if (s->mode == SRV_SERVE) {
        serve_fd_as(s->dev, fd, s->env);   /* closes fd */
        return NULL;
    }
    fcntl(fd, F_SETFL, 0);
    if (read(fd, buf, sizeof(buf)) > 0 && s->mode == SRV_CANNED) {
        size_t off = 0;
        while (off < s->canned_len) {
            ssize_t n = send(fd, s->canned + off, s->canned_len - off, MSG_NOSIGNAL);
            if (n <= 0)
                break;
            off += (size_t)n;
        }
    }
    if (s->mode == SRV_SILENT)
        while (read(fd, buf, sizeof(buf)) > 0)
            ;   /* until the client gives up */
    close(fd);
    return NULL;
}

/* control_request against a server thread on a fresh socket. */
static int request_with(struct fx *f, struct srv *s, const char *req, char **resp)
{
    char path[128];
    pthread_t t;
    int ret;

    if (!f->dir[0])
        make_dir(f);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    unlink(path);
    s->dev = &f->dev;
    s->lfd = control_listen(path);
    assert_true(s->lfd >= 0);
    assert_int_equal(pthread_create(&t, NULL, srv_run, s), 0);
    ret = control_request(path, req, resp);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(s->lfd);
    return ret;
}

static void test_request_live(void **state)
{
    struct fx *f = *state;
    struct srv s = { .mode = SRV_SERVE };
    char *resp = NULL;

    NEED_ROOT();
    assert_int_equal(request_with(f, &s, CONTROL_GET_DDPNET "\n", &resp), 0);
    assert_string_equal(resp, get_ddpnet_expected);
    free(resp);
    assert_int_equal(request_with(f, &s, "set=1\npublic_key=" NONE_HEX "\n\n", &resp), 0);
    assert_string_equal(resp, "errno=-2\n\n");
    free(resp);
}

static void test_request_bad_answers(void **state)
{
    struct fx *f = *state;
    struct srv cut = { .mode = SRV_CANNED, .canned = "errno=0\n", .canned_len = 8 };
    struct srv none = { .mode = SRV_CANNED, .canned = "", .canned_len = 0 };
    struct srv big = { .mode = SRV_CANNED };
    char *resp = (char *)"untouched", *huge;

    assert_int_equal(request_with(f, &cut, "get=1\n\n", &resp), -EPROTO);
    assert_null(resp);
    assert_int_equal(request_with(f, &none, "get=1\n\n", &resp), -ECONNRESET);
    huge = malloc(CONTROL_RESPONSE_MAX + 4096);
    assert_non_null(huge);
    memset(huge, 'a', CONTROL_RESPONSE_MAX + 4096);
    big.canned = huge;
    big.canned_len = CONTROL_RESPONSE_MAX + 4096;
    assert_int_equal(request_with(f, &big, "get=1\n\n", &resp), -EMSGSIZE);
    free(huge);
}

/* control_request_ddpnet against a server thread on a fresh socket. */
static int request_ddpnet_with(struct fx *f, struct srv *s, const char *req, char **resp,
                               unsigned *theirs)
{
    char path[128];
    pthread_t t;
    int ret;

    if (!f->dir[0])
        make_dir(f);
    sock_path(f, path, sizeof(path), s->env ? "ddp0.env" : "ddp0.sock");
    unlink(path);
    s->dev = &f->dev;
    s->lfd = s->env ? control_listen_env(path) : control_listen(path);
    assert_true(s->lfd >= 0);
    assert_int_equal(pthread_create(&t, NULL, srv_run, s), 0);
    ret = control_request_ddpnet(path, req, -1, resp, theirs);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(s->lfd);
    return ret;
}

/* A daemon of this protocol: its line taken off the answer; a request
 * of another number refused with the daemon's own. */
static void test_request_protocol_live(void **state)
{
    struct fx *f = *state;
    struct srv s = { .mode = SRV_SERVE };
    unsigned theirs = 12345;
    char *resp = NULL, want[64];

    NEED_ROOT();
    assert_int_equal(request_ddpnet_with(f, &s, CONTROL_GET_DDPNET "\n", &resp, &theirs), 0);
    assert_int_equal(theirs, DDPNET_CONTROL_PROTOCOL);
    assert_string_equal(resp, get_ddpnet_expected);
    free(resp);
    /* The env socket takes the line too. */
    s.env = true;
    assert_int_equal(request_ddpnet_with(f, &s, CONTROL_GET_ENV "\n", &resp, &theirs), 0);
    assert_non_null(strstr(resp, "interface=ddp0\n"));
    free(resp);
    s.env = false;
    /* A CLI of the next protocol. */
    snprintf(want, sizeof(want), "protocol=%u\n" CONTROL_GET_DDPNET "\n", DDPNET_CONTROL_PROTOCOL + 1);
    assert_int_equal(request_with(f, &s, want, &resp), 0);
    snprintf(want, sizeof(want), "protocol=%u\nerrno=%d\n\n", DDPNET_CONTROL_PROTOCOL,
             -EPROTONOSUPPORT);
    assert_string_equal(resp, want);
    free(resp);
    /* wg and a CLI before the numbers: as before, no line added. */
    assert_int_equal(request_with(f, &s, CONTROL_GET_DDPNET "\n", &resp), 0);
    assert_string_equal(resp, get_ddpnet_expected);
    free(resp);
}

/* Fake daemons of other protocols: refused, and the person told which
 * side is older and what to restart. */
static void test_request_protocol_mismatch(void **state)
{
    struct fx *f = *state;
    char newer[64], same[64], line[CLI_PROTOCOL_LINE_MAX], want[CLI_PROTOCOL_LINE_MAX];
    int n_newer = snprintf(newer, sizeof(newer), "protocol=%u\nerrno=%d\n\n",
                           DDPNET_CONTROL_PROTOCOL + 1, -EPROTONOSUPPORT);
    int n_same = snprintf(same, sizeof(same), "protocol=%u\nerrno=0\n\n", DDPNET_CONTROL_PROTOCOL);
    struct srv next = { .mode = SRV_CANNED, .canned = newer, .canned_len = (size_t)n_newer };
    struct srv old = { .mode = SRV_CANNED, .canned = "errno=-22\n\n", .canned_len = 11 };
    struct srv ok = { .mode = SRV_CANNED, .canned = same, .canned_len = (size_t)n_same };
    unsigned theirs = 12345;
    char *resp = (char *)"untouched";

    assert_int_equal(request_ddpnet_with(f, &next, CONTROL_GET_DDPNET "\n", &resp, &theirs),
                     -EPROTONOSUPPORT);
    assert_null(resp);
    assert_int_equal(theirs, DDPNET_CONTROL_PROTOCOL + 1);
    assert_int_equal(request_ddpnet_with(f, &old, CONTROL_GET_DDPNET "\n", &resp, &theirs),
                     -EPROTONOSUPPORT);
    assert_null(resp);
    assert_int_equal(theirs, 0);
    assert_int_equal(request_ddpnet_with(f, &ok, CONTROL_GET_DDPNET "\n", &resp, &theirs), 0);
    assert_string_equal(resp, "errno=0\n\n");
    free(resp);

    control_protocol_message(line, sizeof(line), DDPNET_CONTROL_PROTOCOL + 1, "ddp0");
    snprintf(want, sizeof(want), "the daemon of ddp0 speaks control protocol %u, this ddpnet %u: "
             "this ddpnet is older than the daemon; run the ddpnet the daemon was started from",
             DDPNET_CONTROL_PROTOCOL + 1, DDPNET_CONTROL_PROTOCOL);
    assert_string_equal(line, want);
    control_protocol_message(line, sizeof(line), 0, "ddp1");
    assert_non_null(strstr(line, "restart the daemon (systemctl restart ddpnet@ddp1)"));
    assert_non_null(strstr(line, "from before numbered control protocols"));
    /* An older daemon than this CLI (after a package upgrade). */
    assert_true(control_protocol_message(line, sizeof(line), DDPNET_CONTROL_PROTOCOL - 1, "ddp0") <
                (int)sizeof(line));
    assert_non_null(strstr(line, "restart the daemon (systemctl restart ddpnet@ddp0)"));
}

static void test_request_timeout(void **state)
{
    struct fx *f = *state;
    struct srv silent = { .mode = SRV_SILENT };
    char *resp = NULL;

    assert_int_equal(request_with(f, &silent, "get=1\n\n", &resp), -ETIMEDOUT);
    assert_null(resp);
}

static void test_request_no_daemon(void **state)
{
    struct fx *f = *state;
    struct sockaddr_un sun;
    char path[128], longpath[200], *resp = NULL;
    int fd;

    make_dir(f);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    assert_int_equal(control_request(path, "get=1\n\n", &resp), -ENOENT);
    /* A socket file nobody listens on. */
    sun = sun_of(path);
    fd = socket(AF_UNIX, SOCK_STREAM, 0);
    assert_int_equal(bind(fd, (struct sockaddr *)&sun, sizeof(sun)), 0);
    close(fd);
    assert_int_equal(control_request(path, "get=1\n\n", &resp), -ECONNREFUSED);
    memset(longpath, 'a', sizeof(longpath) - 1);
    longpath[sizeof(longpath) - 1] = '\0';
    assert_int_equal(control_request(longpath, "get=1\n\n", &resp), -ENAMETOOLONG);
    assert_int_equal(control_request(path, NULL, &resp), -EINVAL);
    assert_int_equal(control_request(path, "get=1\n\n", NULL), -EINVAL);
    assert_int_equal(control_request(NULL, "get=1\n\n", &resp), -EINVAL);
    assert_null(resp);
}

/* --- only root ---------------------------------------------------------------------------- */

/* A child that becomes nobody and asks; its exit status is the negated
 * result of control_request (0: it got an answer). */
static pid_t spawn_nobody(const char *path)
{
    pid_t pid = fork();

    assert_true(pid >= 0);
    if (pid == 0) {
        char *resp = NULL;
        int ret;

        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(100);
        ret = control_request(path, "get=1\n\n", &resp);
        _exit(ret < 0 ? -ret : 0);
    }
    return pid;
}

static int wait_exit(pid_t pid)
{
    int status = 0;

    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    return WEXITSTATUS(status);
}

static void test_only_root(void **state)
{
    struct fx *f = *state;
    char path[128];
    pid_t pid;
    int lfd, cfd;

    if (!is_root()) {
        fprintf(stderr, "skipped: becoming another user needs root\n");
        skip();
    }
    make_dir(f);
    assert_int_equal(chmod(f->dir, 0755), 0);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    lfd = control_listen(path);
    assert_true(lfd >= 0);

    /* The file's mode stops another user at connect. */
    pid = spawn_nobody(path);
    assert_int_equal(wait_exit(pid), EACCES);

    /* Past the mode, the credential check hangs up without a word. */
    assert_int_equal(chmod(path, 0666), 0);
    pid = spawn_nobody(path);
    cfd = srv_accept(lfd);
    assert_true(cfd >= 0);
    struct control_server *srv = control_server_new(-1);
    assert_non_null(srv);
    assert_int_equal(control_server_adopt(srv, cfd, NOW_NS), -EPERM);
    assert_int_equal(control_server_clients(srv), 0);
    control_server_free(srv);
    /* Hung up before or after the request went out: the same to the caller. */
    assert_int_equal(wait_exit(pid), ECONNRESET);
    close(lfd);
}

/* --- the CLI's formatters ------------------------------------------------------------------- */

/* Runs a formatter into memory; returns its text (malloc'd). Not inlined:
 * gcc then takes the stream's pointer for a dangling one. */
static __attribute__((noinline)) char *format_with(int (*fn)(const char *, FILE *, uint64_t), const char *resp,
                         uint64_t now, int want_ret)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    assert_non_null(out);
    assert_int_equal(fn(resp, out, now), want_ret);
    fclose(out);
    return text;
}

static int table_fn(const char *r, FILE *out, uint64_t now)
{
    return status_format_table(r, out, now);
}

static int json_fn(const char *r, FILE *out, uint64_t now)
{
    (void)now;
    return status_format_json(r, out);
}

static const char *env_master;

static int env_fn(const char *r, FILE *out, uint64_t now)
{
    (void)now;
    return status_format_env(r, env_master, out);
}

static void test_status_table(void **state)
{
    static const char want[] =
        "ddp0: node gpu-a, address 10.77.0.1/16, listen port 51820, 2 peers\n"
        "NAME   ADDRESS    ENDPOINT         PATH     MTU     RTT  HANDSHAKE      RX       TX"
        "       RX/s        TX/s\n"
        "gpu-b  10.77.0.2  192.0.2.2:51820  direct  1420  1.2 ms  12s ago    1000 B  2.0 KiB"
        "  85 Mbit/s  1.0 kbit/s\n"
        "gpu-c  10.77.0.3  -                -          -       -  never         0 B      0 B"
        "    0 bit/s     0 bit/s\n";
    char *text;

    (void)state;
    text = format_with(table_fn, get_ddpnet_expected, HS_SEC + 12, 0);
    assert_string_equal(text, want);
    free(text);
}

/* Drops: a line under the header when the kernel dropped anything, and
 * the counts in JSON. */
static void test_status_drops(void **state)
{
    static const char resp[] =
        "interface=ddp0\nself=a\naddress=10.0.0.1\nlisten_port=1\n"
        "dropped_socket_overflow=5321\ndropped_tun_queue=12\nerrno=0\n\n";
    static const char queue[] =
        "interface=ddp0\nself=a\naddress=10.0.0.1\nlisten_port=1\n"
        "dropped_queue_delay=1\necn_marked=40\nerrno=0\n\n";
    static const char socket_only[] =
        "interface=ddp0\nself=a\naddress=10.0.0.1\nlisten_port=1\n"
        "dropped_socket_overflow=1\ndropped_tun_queue=0\nerrno=0\n\n";
    char *text;

    (void)state;
    text = format_with(table_fn, resp, 0, 0);
    assert_non_null(strstr(text, "\ndropped by the kernel: 5321 datagrams at the UDP sockets "
                                 "(socket_overflow), 12 packets at ddp0's queue (tun_queue); "
                                 "see ddpnet doctor\n"));
    free(text);
    text = format_with(table_fn, socket_only, 0, 0);
    assert_non_null(strstr(text, "\ndropped by the kernel: 1 datagram at the UDP sockets "
                                 "(socket_overflow); see ddpnet doctor\n"));
    free(text);
    text = format_with(table_fn, get_ddpnet_expected, 0, 0);
    assert_null(strstr(text, "dropped"));
    free(text);
    text = format_with(json_fn, resp, 0, 0);
    assert_non_null(strstr(text, ",\"drops\":{\"socket_overflow\":5321,\"tun_queue\":12,"
                                 "\"queue_delay\":0,\"ecn_marked\":0,\"rule\":0},\"rules\":{\"written\":0,\"connections\":0,\"dropped\":0,\"refused\":0,\"table_full\":0,\"peer_full\":0},"));
    free(text);
    /* The sockets' queue management: a line of its own, in JSON too. */
    text = format_with(table_fn, queue, 0, 0);
    assert_null(strstr(text, "dropped by the kernel"));
    assert_non_null(strstr(text, "\nslowed senders: 1 packet dropped (queue_delay), 40 marked "
                                 "ECN, datagrams waited too long at the UDP sockets; see "
                                 "ddpnet doctor\n"));
    free(text);
    text = format_with(table_fn, resp, 0, 0);
    assert_null(strstr(text, "slowed senders"));
    free(text);
    text = format_with(json_fn, queue, 0, 0);
    assert_non_null(strstr(text, ",\"drops\":{\"socket_overflow\":0,\"tun_queue\":0,"
                                 "\"queue_delay\":1,\"ecn_marked\":40,\"rule\":0},\"rules\":{\"written\":0,\"connections\":0,\"dropped\":0,\"refused\":0,\"table_full\":0,\"peer_full\":0},"));
    free(text);
}

/* One peer row, for the unit and age tests below. */
static char *one_peer(uint64_t hs, uint64_t rx, uint64_t tx, uint64_t rxr, uint64_t txr)
{
    char *r = malloc(512);

    assert_non_null(r);
    snprintf(r, 512,
             "interface=ddp0\nself=a\naddress=10.0.0.1\nlisten_port=1\n"
             "public_key=" B_HEX "\nname=b\naddress=10.0.0.2\n"
             "last_handshake_time_sec=%llu\nrx_bytes=%llu\ntx_bytes=%llu\n"
             "rx_rate=%llu\ntx_rate=%llu\nerrno=0\n\n",
             (unsigned long long)hs, (unsigned long long)rx, (unsigned long long)tx,
             (unsigned long long)rxr, (unsigned long long)txr);
    return r;
}

/* The row of a one-peer table, without the header lines. */
static void expect_row(uint64_t now, uint64_t hs, uint64_t rx, uint64_t tx, uint64_t rxr,
                       uint64_t txr, const char *want)
{
    char *resp = one_peer(hs, rx, tx, rxr, txr);
    char *text = format_with(table_fn, resp, now, 0);
    const char *row = strchr(strchr(text, '\n') + 1, '\n') + 1;
    char *squeezed = malloc(strlen(row) + 1), *o = squeezed;

    /* Compare words only: the widths follow the longest cell. */
    for (const char *p = row; *p; p++)
        if (*p != ' ' || (o > squeezed && o[-1] != '|'))
            *o++ = *p == ' ' ? '|' : *p;
    while (o > squeezed && (o[-1] == '|' || o[-1] == '\n'))
        o--;
    *o = '\0';
    if (strcmp(squeezed, want))
        fail_msg("row '%s', expected '%s'", squeezed, want);
    free(squeezed);
    free(text);
    free(resp);
}

static void test_status_units(void **state)
{
    (void)state;
    expect_row(100, 0, 0, 1023, 0, 124,
               "b|10.0.0.2|-|-|-|-|never|0|B|1023|B|0|bit/s|992|bit/s");
    expect_row(100, 0, 1024, 1048575, 125, 124999,
               "b|10.0.0.2|-|-|-|-|never|1.0|KiB|1.0|MiB|1.0|kbit/s|1.0|Mbit/s");
    expect_row(100, 0, 1258291, 10 * 1024 * 1024, 10625000, 1250000000,
               "b|10.0.0.2|-|-|-|-|never|1.2|MiB|10|MiB|85|Mbit/s|10|Gbit/s");
    expect_row(100, 0, UINT64_MAX, 5ull << 40, UINT64_MAX / 8, 1,
               "b|10.0.0.2|-|-|-|-|never|16|EiB|5.0|TiB|18|Ebit/s|8|bit/s");
}

static void test_status_ages(void **state)
{
    (void)state;
    expect_row(1000, 1000, 0, 0, 0, 0, "b|10.0.0.2|-|-|-|-|0s|ago|0|B|0|B|0|bit/s|0|bit/s");
    expect_row(1000, 941, 0, 0, 0, 0, "b|10.0.0.2|-|-|-|-|59s|ago|0|B|0|B|0|bit/s|0|bit/s");
    expect_row(1000, 940, 0, 0, 0, 0, "b|10.0.0.2|-|-|-|-|1m|ago|0|B|0|B|0|bit/s|0|bit/s");
    expect_row(100000, 100000 - 3 * 3600 - 59, 0, 0, 0, 0,
               "b|10.0.0.2|-|-|-|-|3h|ago|0|B|0|B|0|bit/s|0|bit/s");
    expect_row(1000000, 1000000 - 3 * 86400, 0, 0, 0, 0,
               "b|10.0.0.2|-|-|-|-|3d|ago|0|B|0|B|0|bit/s|0|bit/s");
    /* A clock behind the peer's: no negative ages. */
    expect_row(1000, 2000, 0, 0, 0, 0, "b|10.0.0.2|-|-|-|-|0s|ago|0|B|0|B|0|bit/s|0|bit/s");
}

/* The path, through whom, and the round trip: in the table and in JSON. */
static void test_status_paths(void **state)
{
    static const struct {
        const char *lines, *row, *json;
    } cases[] = {
        { "endpoint=100.64.0.3:51820\npath=relay\nvia=node-c\npath_mtu=1308\nrtt_us=120\n",
          "b|10.0.0.2|100.64.0.3:51820|relay|via|node-c|1308|0.12|ms|never",
          "\"endpoint\":\"100.64.0.3:51820\",\"path\":\"relay\",\"via\":\"node-c\","
          "\"path_mtu\":1308,\"flows\":null,\"rtt_ms\":0.120," },
        { "endpoint=172.31.1.12:51820\npath=direct\npath_mtu=1340\nrtt_us=1249\n",
          "b|10.0.0.2|172.31.1.12:51820|direct|1340|1.2|ms|never",
          "\"path\":\"direct\",\"via\":null,\"path_mtu\":1340,\"flows\":null,\"rtt_ms\":1.249," },
        { "path=direct\nrtt_us=12345\n", "b|10.0.0.2|-|direct|-|12|ms|never",
          "\"path\":\"direct\",\"via\":null,\"path_mtu\":null,\"flows\":null,\"rtt_ms\":12.345," },
        { "path=direct\nrtt_us=0\n", "b|10.0.0.2|-|direct|-|0.00|ms|never",
          "\"rtt_ms\":0.000," },
        { "path=unreachable\n", "b|10.0.0.2|-|unreachable|-|-|never",
          "\"path\":\"unreachable\",\"via\":null," },
        /* Flows are said of a direct path only (issue 57). */
        { "path=direct\nflows=4\nrtt_us=0\n", "b|10.0.0.2|-|direct,|4|flows|-|0.00|ms|never",
          "\"path\":\"direct\",\"via\":null,\"path_mtu\":null,\"flows\":4," },
        { "path=waiting\nflows=1\n", "b|10.0.0.2|-|waiting|-|-|never",
          "\"path\":\"waiting\",\"via\":null,\"path_mtu\":null,\"flows\":1," },
    };
    char resp[512];

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(resp, sizeof(resp),
                 "interface=ddp0\nself=a\naddress=10.0.0.1\nlisten_port=1\n"
                 "public_key=" B_HEX "\nname=b\naddress=10.0.0.2\n%serrno=0\n\n",
                 cases[i].lines);
        char *text = format_with(table_fn, resp, 0, 0);
        const char *row = strchr(strchr(text, '\n') + 1, '\n') + 1;
        char squeezed[256], *o = squeezed;
        for (const char *p = row; *p && o < squeezed + sizeof(squeezed) - 1; p++)
            if (*p != ' ' || (o > squeezed && o[-1] != '|'))
                *o++ = *p == ' ' ? '|' : *p;
        *o = '\0';
        if (strncmp(squeezed, cases[i].row, strlen(cases[i].row)))
            fail_msg("case %zu: row '%s', expected it to start '%s'", i, squeezed, cases[i].row);
        free(text);
        text = format_with(json_fn, resp, 0, 0);
        if (!strstr(text, cases[i].json))
            fail_msg("case %zu: JSON '%s' lacks '%s'", i, text, cases[i].json);
        free(text);
    }
}

static void test_status_no_peers(void **state)
{
    static const char resp[] =
        "interface=ddp0\nself=solo\naddress=fd77::1\nlisten_port=51820\nerrno=0\n\n";
    char *text;

    (void)state;
    text = format_with(table_fn, resp, 0, 0);
    assert_string_equal(text,
                        "ddp0: node solo, address fd77::1, listen port 51820, 0 peers\n"
                        "NAME  ADDRESS  ENDPOINT  PATH  MTU  RTT  HANDSHAKE  RX  TX  RX/s  TX/s\n");
    free(text);
    text = format_with(json_fn, resp, 0, 0);
    assert_string_equal(text, "{\"interface\":\"ddp0\",\"self\":\"solo\",\"address\":"
                              "\"fd77::1\",\"listen_port\":51820,"
                              "\"cluster_sum\":null,\"cluster_applied\":null,\"cert_expires\":null,\"cert_ended\":[],\"address_clash\":null,\"registry\":null,\"hints\":{\"unanswered_bytes\":0,\"refused\":0,\"relay_trials_failed\":0,\"relays_dropped\":0},\"drops\":{\"socket_overflow\":0,\"tun_queue\":0,\"queue_delay\":0,\"ecn_marked\":0,\"rule\":0},\"rules\":{\"written\":0,\"connections\":0,\"dropped\":0,\"refused\":0,\"table_full\":0,\"peer_full\":0},\"routes\":[],\"masquerade\":null,\"cert_routes_refused\":0,\"carriers\":[],"
                              "\"peers\":[]}\n");
    free(text);
}

/* Issue 56: a peer removed at its certificate's end is said under the
 * table, how long ago, and in JSON as "cert_ended". */
static void test_status_cert_ended(void **state)
{
    static const char resp[] =
        "interface=ddp0\nself=gpu-a\naddress=10.77.0.1\nprefix=24\nlisten_port=51820\n"
        "cert_ended=1699999990 spot-n\nerrno=0\n\n";
    char *text;

    (void)state;
    text = format_with(table_fn, resp, 1700000000, 0);
    assert_non_null(strstr(text, "spot-n removed: its certificate ended 10s ago (1699999990) "
                                 "with no renewal"));
    free(text);
    /* This node's own, ended: said as such, not "expires expired". */
    text = format_with(table_fn, "interface=ddp0\nself=spot-n\naddress=10.77.0.9\nprefix=24\n"
                       "listen_port=51820\ncert_expires=1699999990\nerrno=0\n\n", 1700000000, 0);
    assert_non_null(strstr(text, "certificate of spot-n (this node) ENDED 10s ago (1699999990): "
                                 "the members dropped this node; ddpnet doctor says what to run\n"));
    free(text);
    text = format_with(json_fn, resp, 0, 0);
    assert_non_null(strstr(text, ",\"cert_ended\":[{\"at\":1699999990,\"name\":\"spot-n\"}],"));
    free(text);
}

/* Issue 43: a clash this node lost, loud under its line, with what to
 * do; in JSON as "address_clash". */
static void test_status_address_clash(void **state)
{
    static const char resp[] =
        "interface=ddp0\nself=spot-b\naddress=10.77.0.9\nprefix=24\nlisten_port=51820\n"
        "cert_expires=1700003600\naddress_clash=spot-a\n"
        "address_clash_key=36tvW0DvM333BvZv3jBEyenSu2+NQ3HvqpJXHGdxNkI=\n"
        "address_clash_derived=1\nerrno=0\n\n";
    char *text;

    (void)state;
    text = format_with(table_fn, resp, 1700000000, 0);
    assert_non_null(strstr(text, "ddp0: node spot-b, address 10.77.0.9/24, listen port 51820, "
                                 "0 peers\nADDRESS CLASH: 10.77.0.9, derived from this node's "
                                 "key, is also spot-a's (key 36tvW0DvM333BvZv3jBEyenSu2+NQ3Hvq"
                                 "pJXHGdxNkI=), which the members hold first: they do not reach "
                                 "this node. To join: a new key for this node (ddpnet genkey"));
    assert_non_null(strstr(text, "ddpnet authority sign --address"));
    assert_non_null(strstr(text, "a larger [cluster] network\n"));
    free(text);
    text = format_with(json_fn, resp, 0, 0);
    assert_non_null(strstr(text, ",\"address_clash\":{\"holder\":\"spot-a\",\"key\":"
                                 "\"36tvW0DvM333BvZv3jBEyenSu2+NQ3HvqpJXHGdxNkI=\","
                                 "\"derived\":true},"));
    free(text);
}

/* Issue 60: a line naming each prefix and its carrier under the header;
 * in JSON, this node's, whether it masquerades, each peer's, and every
 * prefix with its carrier. */
static void test_status_routes(void **state)
{
    static const char resp[] =
        "interface=ddp0\nself=gw\naddress=10.77.0.1\nlisten_port=51820\n"
        "route=192.168.50.0/24\nmasquerade=1\ncert_routes_refused=2\n"
        "public_key=" B_HEX "\nname=c1\naddress=10.77.0.2\nroute=10.99.0.0/16\n"
        "route=fd10::/64\nlast_handshake_time_sec=0\n"
        "public_key=" C_HEX "\nname=c2\naddress=10.77.0.3\nlast_handshake_time_sec=0\n"
        "errno=0\n\n";
    char *text;

    (void)state;
    text = format_with(table_fn, resp, 0, 0);
    assert_non_null(strstr(text, "\nroutes: 192.168.50.0/24 carried by this node (masquerade), "
                                 "10.99.0.0/16 via c1, fd10::/64 via c1\n"
                                 "routes: 2 of members' certificates refused: each overlaps a "
                                 "grant held first"));
    free(text);
    text = format_with(json_fn, resp, 0, 0);
    assert_non_null(strstr(text, ",\"routes\":[\"192.168.50.0/24\"],\"masquerade\":true,"
                                 "\"cert_routes_refused\":2,\"carriers\":[{\"prefix\":\"192.168.50.0/24\",\"carrier\":\"gw\"},"
                                 "{\"prefix\":\"10.99.0.0/16\",\"carrier\":\"c1\"},"
                                 "{\"prefix\":\"fd10::/64\",\"carrier\":\"c1\"}],\"peers\":["));
    assert_non_null(strstr(text, "\"routes\":[\"10.99.0.0/16\",\"fd10::/64\"],"));
    assert_non_null(strstr(text, "\"name\":\"c2\""));
    free(text);
    /* No route anywhere: no line; empty lists and null in JSON. */
    text = format_with(table_fn, get_ddpnet_expected, 0, 0);
    assert_null(strstr(text, "routes:"));
    free(text);
}

static void test_status_json(void **state)
{
    static const char want[] =
        "{\"interface\":\"ddp0\",\"self\":\"gpu-a\",\"address\":\"10.77.0.1\","
        "\"listen_port\":51820,"
        "\"cluster_sum\":null,\"cluster_applied\":null,\"cert_expires\":null,\"cert_ended\":[],\"address_clash\":null,\"registry\":null,\"hints\":{\"unanswered_bytes\":0,\"refused\":0,\"relay_trials_failed\":0,\"relays_dropped\":0},\"drops\":{\"socket_overflow\":0,\"tun_queue\":0,\"queue_delay\":0,\"ecn_marked\":0,\"rule\":0},\"rules\":{\"written\":0,\"connections\":0,\"dropped\":0,\"refused\":0,\"table_full\":0,\"peer_full\":0},"
        "\"routes\":[],\"masquerade\":null,\"cert_routes_refused\":0,\"carriers\":[],"
        "\"peers\":["
        "{\"name\":\"gpu-b\",\"address\":\"10.77.0.2\",\"endpoint\":\"192.0.2.2:51820\","
        "\"path\":\"direct\",\"via\":null,\"path_mtu\":1420,\"flows\":null,\"rtt_ms\":1.234,"
        "\"cert_expires\":null,\"routes\":[],\"latest_handshake\":1700000000,\"rx_bytes\":1000,\"tx_bytes\":2000,"
        "\"rx_rate\":10625000,\"tx_rate\":125},"
        "{\"name\":\"gpu-c\",\"address\":\"10.77.0.3\",\"endpoint\":null,"
        "\"path\":null,\"via\":null,\"path_mtu\":null,\"flows\":null,\"rtt_ms\":null,"
        "\"cert_expires\":null,\"routes\":[],\"latest_handshake\":null,\"rx_bytes\":0,\"tx_bytes\":0,"
        "\"rx_rate\":0,\"tx_rate\":0}]}\n";
    char *text;

    (void)state;
    text = format_with(json_fn, get_ddpnet_expected, 0, 0);
    assert_string_equal(text, want);
    free(text);
}

static void test_status_json_escapes(void **state)
{
    static const char resp[] =
        "interface=d\"p\\0\nself=a\tb\x01\x7f\naddress=x\nlisten_port=1\nerrno=0\n\n";
    char *text;

    (void)state;
    text = format_with(json_fn, resp, 0, 0);
    assert_string_equal(text, "{\"interface\":\"d\\\"p\\\\0\",\"self\":"
                              "\"a\\u0009b\\u0001\\u007f\",\"address\":\"x\","
                              "\"listen_port\":1,"
                              "\"cluster_sum\":null,\"cluster_applied\":null,\"cert_expires\":null,\"cert_ended\":[],\"address_clash\":null,\"registry\":null,\"hints\":{\"unanswered_bytes\":0,\"refused\":0,\"relay_trials_failed\":0,\"relays_dropped\":0},\"drops\":{\"socket_overflow\":0,\"tun_queue\":0,\"queue_delay\":0,\"ecn_marked\":0,\"rule\":0},\"rules\":{\"written\":0,\"connections\":0,\"dropped\":0,\"refused\":0,\"table_full\":0,\"peer_full\":0},\"routes\":[],\"masquerade\":null,\"cert_routes_refused\":0,\"carriers\":[],"
                              "\"peers\":[]}\n");
    free(text);
}

static void test_status_bad_responses(void **state)
{
    static const char *const bad[] = {
        "",
        "errno=0\n\n",                                            /* no interface */
        "interface=d\nself=a\naddress=x\nlisten_port=1\n",        /* no errno */
        "interface=d\nself=a\naddress=x\nlisten_port=1\nerrno=0\n",       /* no empty line */
        "interface=d\nself=a\naddress=x\nlisten_port=1\nerrno=0\n\nx",    /* trailing */
        "interface=d\nself=a\naddress=x\nlisten_port=1\nerrno=x\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\nerrno=5\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\nerrno=-99999999999\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=-1\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\nprefix=1x\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=99999999999999999999\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\nnoequals\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\n=v\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nerrno=0\n\n",            /* no port */
        "interface=d\naddress=x\nlisten_port=1\nerrno=0\n\n",      /* no self */
        "interface=d\nself=a\nlisten_port=1\nerrno=0\n\n",         /* no address */
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\naddress=y\n"
        "errno=0\n\n",                                            /* peer without name */
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\nname=b\n"
        "errno=0\n\n",                                            /* peer without address */
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\nname=b\naddress=y\n"
        "rx_bytes=1.5\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\nname=b\naddress=y\n"
        "tx_rate=\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\nname=b\naddress=y\n"
        "rtt_us=1ms\nerrno=0\n\n",
        "interface=d\nself=a\naddress=x\nlisten_port=1\npublic_key=k\nname=b\naddress=y\n"
        "rtt_us=\nerrno=0\n\n",
    };
    char *text;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char *out = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&out, &len);
        int ret = status_format_table(bad[i], f, 0);

        fclose(f);
        if (ret != -EPROTO)
            fail_msg("response %zu: %d, expected -EPROTO", i, ret);
        assert_int_equal(len, 0);   /* nothing half printed */
        free(out);
    }
    /* The daemon's own error comes back as it. */
    env_master = NULL;
    text = format_with(table_fn, "errno=-13\n\n", 0, -13);
    free(text);
    text = format_with(json_fn, "errno=-13\n\n", 0, -13);
    free(text);
    text = format_with(env_fn, "errno=-13\n\n", 0, -13);
    free(text);
    text = format_with(json_fn, NULL, 0, -EINVAL);
    free(text);
    /* Keys it does not know are skipped. */
    text = format_with(json_fn,
                       "interface=d\nfuture=1\nself=a\naddress=x\nlisten_port=1\n"
                       "public_key=k\nname=b\naddress=y\nfuture=2\nerrno=0\n\n", 0, 0);
    assert_non_null(strstr(text, "\"name\":\"b\""));
    free(text);
}

/* --- env ---------------------------------------------------------------------------------------- */

static void test_env(void **state)
{
    char *text;

    (void)state;
    env_master = NULL;
    text = format_with(env_fn, get_ddpnet_expected, 0, 0);
    assert_string_equal(text, "export NCCL_SOCKET_IFNAME=ddp0\n"
                              "export GLOO_SOCKET_IFNAME=ddp0\n"
                              "export MASTER_ADDR=10.77.0.1\n");
    free(text);
    env_master = "GPU-C";   /* names match ignoring case, as in the cluster file */
    text = format_with(env_fn, get_ddpnet_expected, 0, 0);
    assert_string_equal(text, "export NCCL_SOCKET_IFNAME=ddp0\n"
                              "export GLOO_SOCKET_IFNAME=ddp0\n"
                              "export MASTER_ADDR=10.77.0.3\n");
    free(text);
    env_master = "gpu-a";
    text = format_with(env_fn, get_ddpnet_expected, 0, 0);
    assert_non_null(strstr(text, "export MASTER_ADDR=10.77.0.1\n"));
    free(text);
    env_master = "gpu-z";
    text = format_with(env_fn, get_ddpnet_expected, 0, -ENOENT);
    assert_string_equal(text, "");
    free(text);
    env_master = NULL;
}

static void test_env_quoting(void **state)
{
    static const char resp[] =
        "interface=dd p'0\nself=a\naddress=fd77::1\nlisten_port=1\n"
        "master=a\nmaster_address=fd77::1\nerrno=0\n\n";
    static const char no_master[] =
        "interface=ddp0\nself=a\naddress=x\nlisten_port=1\nerrno=0\n\n";
    char *text;

    (void)state;
    env_master = NULL;
    text = format_with(env_fn, resp, 0, 0);
    assert_string_equal(text, "export NCCL_SOCKET_IFNAME='dd p'\\''0'\n"
                              "export GLOO_SOCKET_IFNAME='dd p'\\''0'\n"
                              "export MASTER_ADDR=fd77::1\n");
    free(text);
    /* Without a master in the answer there is nothing to default to. */
    text = format_with(env_fn, no_master, 0, -EPROTO);
    assert_string_equal(text, "");
    free(text);
}

/* --- the verbs, end to end ------------------------------------------------------------------------ */

struct captured {
    int ret;
    char out[8192], err[1024];
};

static void read_back(FILE *f, char *buf, size_t len)
{
    size_t n;

    rewind(f);
    n = fread(buf, 1, len - 1, f);
    buf[n] = '\0';
    fclose(f);
}

/* Runs a verb with stdout and stderr going to temporary files. */
static void run_verb(int (*verb)(int, char **), char **argv, struct captured *c)
{
    FILE *out = tmpfile(), *err = tmpfile();
    int saved_out, saved_err, argc = 0;

    assert_non_null(out);
    assert_non_null(err);
    while (argv[argc])
        argc++;
    fflush(stdout);
    fflush(stderr);
    saved_out = dup(STDOUT_FILENO);
    saved_err = dup(STDERR_FILENO);
    dup2(fileno(out), STDOUT_FILENO);
    dup2(fileno(err), STDERR_FILENO);
    c->ret = verb(argc, argv);
    fflush(stdout);
    fflush(stderr);
    dup2(saved_out, STDOUT_FILENO);
    dup2(saved_err, STDERR_FILENO);
    close(saved_out);
    close(saved_err);
    read_back(out, c->out, sizeof(c->out));
    read_back(err, c->err, sizeof(c->err));
}

/* A verb run against a server thread on RUN_DIR/ddp0.sock. */
static void run_verb_live(struct fx *f, int (*verb)(int, char **), char **argv,
                          struct captured *c)
{
    bool env = verb == cli_env;
    struct srv s = { .mode = SRV_SERVE, .dev = &f->dev, .env = env };
    char path[128];
    pthread_t t;

    sock_path(f, path, sizeof(path), env ? "ddp0.env" : "ddp0.sock");
    unlink(path);
    s.lfd = env ? control_listen_env(path) : control_listen(path);
    assert_true(s.lfd >= 0);
    assert_int_equal(pthread_create(&t, NULL, srv_run, &s), 0);
    run_verb(verb, argv, c);
    if (c->ret != 0) {
        /* The verb never connected: let the server thread go. */
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un sun;
        sun = sun_of(path);
        if (connect(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0)
            shutdown(fd, SHUT_WR);
        assert_int_equal(pthread_join(t, NULL), 0);
        close(fd);
    } else {
        assert_int_equal(pthread_join(t, NULL), 0);
    }
    close(s.lfd);
}

static void test_cli_status_live(void **state)
{
    struct fx *f = *state;
    struct captured c;

    NEED_ROOT();
    make_dir(f);
    {
        char *argv[] = { "status", "--run-dir", f->dir, NULL };
        run_verb_live(f, cli_status, argv, &c);
        assert_int_equal(c.ret, 0);
        assert_string_equal(c.err, "");
        static const char head[] = "ddp0: node gpu-a, address 10.77.0.1/16, "
                                   "listen port 51820, 2 peers\nNAME ";
        assert_true(!strncmp(c.out, head, strlen(head)));
        assert_non_null(strstr(c.out, "\ngpu-c  10.77.0.3  -  "));
    }
    {
        char *argv[] = { "status", "-i", "ddp0", "--json", "--run-dir", f->dir, NULL };
        run_verb_live(f, cli_status, argv, &c);
        assert_int_equal(c.ret, 0);
        assert_true(!strncmp(c.out, "{\"interface\":\"ddp0\",\"self\":\"gpu-a\"", 34));
    }
    {
        char *argv[] = { "env", "--master", "gpu-b", "--run-dir", f->dir, NULL };
        run_verb_live(f, cli_env, argv, &c);
        assert_int_equal(c.ret, 0);
        assert_string_equal(c.out, "export NCCL_SOCKET_IFNAME=ddp0\n"
                                   "export GLOO_SOCKET_IFNAME=ddp0\n"
                                   "export MASTER_ADDR=10.77.0.2\n");
    }
    {
        /* stdout is not a terminal here: the reason goes as shell text
         * that fails (test_cli_env_fails). */
        char *argv[] = { "env", "--master=nope", "--run-dir", f->dir, NULL };
        run_verb_live(f, cli_env, argv, &c);
        assert_int_equal(c.ret, 1);
        assert_string_equal(c.out, "echo 'ddpnet env: no node named '\\''nope'\\'' in the "
                                   "cluster' >&2; false\n");
        assert_string_equal(c.err, "");
    }
}

/* `ddpnet status` against a daemon of the next protocol: exit 1 and the
 * line that says what to do, nothing on stdout. */
static void test_cli_protocol_mismatch(void **state)
{
    struct fx *f = *state;
    char newer[64], path[128], want[CLI_PROTOCOL_LINE_MAX + 32];
    int n = snprintf(newer, sizeof(newer), "protocol=%u\nerrno=%d\n\n",
                     DDPNET_CONTROL_PROTOCOL + 1, -EPROTONOSUPPORT);
    struct srv s = { .mode = SRV_CANNED, .canned = newer, .canned_len = (size_t)n };
    char *argv[] = { "status", "--run-dir", f->dir, NULL };
    struct captured c;
    pthread_t t;

    make_dir(f);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    unlink(path);
    s.lfd = control_listen(path);
    assert_true(s.lfd >= 0);
    assert_int_equal(pthread_create(&t, NULL, srv_run, &s), 0);
    run_verb(cli_status, argv, &c);
    assert_int_equal(pthread_join(t, NULL), 0);
    close(s.lfd);
    assert_int_equal(c.ret, 1);
    assert_string_equal(c.out, "");
    snprintf(want, sizeof(want), "ddpnet status: the daemon of ddp0 speaks control protocol %u, "
             "this ddpnet %u: this ddpnet is older than the daemon; run the ddpnet the daemon "
             "was started from\n", DDPNET_CONTROL_PROTOCOL + 1, DDPNET_CONTROL_PROTOCOL);
    assert_string_equal(c.err, want);
}

static void test_cli_not_up(void **state)
{
    struct fx *f = *state;
    struct captured c;
    char want[256];

    make_dir(f);
    {
        char *argv[] = { "status", "--run-dir", f->dir, "-i", "ddp7", NULL };
        run_verb(cli_status, argv, &c);
        assert_int_equal(c.ret, 1);
        assert_string_equal(c.out, "");
        snprintf(want, sizeof(want),
                 "ddpnet status: ddp7 is not up (no control socket at %s/ddp7.sock)\n", f->dir);
        assert_string_equal(c.err, want);
    }
    {
        char *argv[] = { "env", "--run-dir", f->dir, NULL };
        run_verb(cli_env, argv, &c);
        assert_int_equal(c.ret, 1);
        snprintf(want, sizeof(want),
                 "echo 'ddpnet env: ddp0 is not up (no env socket at %s/ddp0.env); nothing "
                 "was exported: NCCL and Gloo would pick another network' >&2; false\n", f->dir);
        assert_string_equal(c.out, want);
        assert_string_equal(c.err, "");
    }
}

/* Options come from the shared parser (cli_args.h); these check that each
 * verb allows its own and only those. */
static void test_cli_usage(void **state)
{
    struct captured c;

    (void)state;
    {
        char *argv[] = { "status", "--bogus", NULL };
        run_verb(cli_status, argv, &c);
        assert_int_equal(c.ret, 2);
        assert_string_equal(c.err, "ddpnet status: unknown option '--bogus'\n"
                                   "usage: ddpnet status [-i IFNAME] [--run-dir DIR] [--json | -w|--watch [SECONDS]]\n"
                                   "(ddpnet status --help explains each option)\n");
    }
    {
        char *argv[] = { "status", "--master", "x", NULL };   /* env's option */
        run_verb(cli_status, argv, &c);
        assert_int_equal(c.ret, 2);
    }
    {
        char *argv[] = { "env", "--json", NULL };             /* status's option */
        run_verb(cli_env, argv, &c);
        assert_int_equal(c.ret, 2);
    }
    {
        char *argv[] = { "env", "--master", NULL };
        run_verb(cli_env, argv, &c);
        assert_int_equal(c.ret, 2);
        assert_string_equal(c.err, "ddpnet env: option '--master' needs a value\n"
                                   "usage: ddpnet env [-i IFNAME] [--run-dir DIR] [--master NAME]\n"
                                   "(ddpnet env --help explains each option)\n");
        /* For eval: the shell that runs it fails too. */
        assert_string_equal(c.out, "echo 'ddpnet env: the command line is wrong (see above); "
                                   "nothing was exported' >&2; false\n");
    }
    {
        char *argv[] = { "env", "--help", NULL };
        run_verb(cli_env, argv, &c);
        assert_int_equal(c.ret, 0);
        assert_true(!strncmp(c.out, "usage: ddpnet env [-i IFNAME] [--run-dir DIR] "
                                    "[--master NAME]\n", 62));
        assert_non_null(strstr(c.out, "\n      --master NAME         the node whose overlay "
                                      "address becomes MASTER_ADDR\n"));
    }
    {
        char *argv[] = { "status", "-i", "../etc", NULL };
        run_verb(cli_status, argv, &c);
        assert_int_equal(c.ret, 2);
        assert_true(!strncmp(c.err, "ddpnet status: invalid interface name '../etc'\n", 47));
    }
    {
        char longdir[200];
        char *argv[] = { "status", "--run-dir", longdir, NULL };
        memset(longdir, 'd', sizeof(longdir) - 1);
        longdir[0] = '/';
        longdir[sizeof(longdir) - 1] = '\0';
        run_verb(cli_status, argv, &c);
        assert_int_equal(c.ret, 1);
        assert_non_null(strstr(c.err, "is too long for a socket path\n"));
    }
}

/* A non-root caller is told what to do. */
static void test_cli_permission(void **state)
{
    struct fx *f = *state;
    char path[128];
    pid_t pid;
    int lfd, fds[2], status;

    if (!is_root()) {
        fprintf(stderr, "skipped: becoming another user needs root\n");
        skip();
    }
    make_dir(f);
    assert_int_equal(chmod(f->dir, 0755), 0);
    sock_path(f, path, sizeof(path), "ddp0.sock");
    lfd = control_listen(path);
    assert_true(lfd >= 0);
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = { "status", "--run-dir", f->dir, NULL };
        dup2(fds[1], STDERR_FILENO);
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(100);
        _exit(cli_status(3, argv));
    }
    close(fds[1]);
    {
        char buf[256] = { 0 };
        ssize_t n = read(fds[0], buf, sizeof(buf) - 1);

        assert_true(n > 0);
        char want[256];
        snprintf(want, sizeof(want), "ddpnet status: permission denied on %s: run as root\n",
                 path);
        assert_string_equal(buf, want);
    }
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    close(lfd);
}

/* --- the env socket ---------------------------------------------------------------------- */

static const char get_env_expected[] =
    "interface=ddp0\n"
    "self=gpu-a\n"
    "address=10.77.0.1\n"
    "prefix=16\n"
    "listen_port=51820\n"
    "master=gpu-a\n"
    "master_address=10.77.0.1\n"
    "public_key=" B_HEX "\n"
    "name=gpu-b\n"
    "address=10.77.0.2\n"
    "public_key=" C_HEX "\n"
    "name=gpu-c\n"
    "address=10.77.0.3\n"
    "errno=0\n\n";

static char *exchange_env(struct device *dev, const char *req)
{
    return exchange_as(dev, req, strlen(req), NULL, true);
}

/* The env request's answer holds names and overlay addresses, never an
 * endpoint, a handshake or a counter; env formats it as from get=ddpnet. */
static void test_env_socket_answer(void **state)
{
    struct fx *f = *state;
    char *got = exchange_env(&f->dev, CONTROL_GET_ENV "\n");
    FILE *out;
    char *text = NULL;
    size_t len = 0;

    assert_string_equal(got, get_env_expected);
    assert_non_null(out = open_memstream(&text, &len));
    assert_int_equal(status_format_env(got, "gpu-c", out), 0);
    fclose(out);
    assert_string_equal(text, "export NCCL_SOCKET_IFNAME=ddp0\n"
                              "export GLOO_SOCKET_IFNAME=ddp0\n"
                              "export MASTER_ADDR=10.77.0.3\n");
    free(text);
    free(got);
    /* The root socket answers it too. */
    if (is_root()) {
        got = exchange(&f->dev, CONTROL_GET_ENV "\n");
        assert_string_equal(got, get_env_expected);
        free(got);
    }
}

/* Everything else on the env socket -- above all get=1, which carries the
 * private key -- is refused with EPERM and the connection closed, the
 * requests after it unanswered; a request that does not end within
 * CONTROL_ENV_REQUEST_MAX bytes is refused as too big. */
static void test_env_socket_refuses(void **state)
{
    static const char *const refused[] = {
        "get=1\n\n" CONTROL_GET_ENV "\n",
        CONTROL_GET_DDPNET "\n",
        "set=1\nlisten_port=1\n\n",
        "set=ddpnet-cluster\nlength=1\nx",
    };
    struct fx *f = *state;
    char big[CONTROL_ENV_REQUEST_MAX + 64], *got;

    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        got = exchange_env(&f->dev, refused[i]);
        assert_string_equal(got, "errno=-1\n\n");
        free(got);
    }
    memcpy(big, "set=1\n", 6);
    for (size_t i = 6; i + 2 < sizeof(big); i += 2)
        memcpy(big + i, "x\n", 2);
    big[sizeof(big) - 2] = 'x';
    big[sizeof(big) - 1] = '\0';
    got = exchange_env(&f->dev, big);
    assert_string_equal(got, "errno=-90\n\n");
    free(got);
    /* Asked right, it answers several requests on one connection. */
    got = exchange_env(&f->dev, CONTROL_GET_ENV "\n" CONTROL_GET_ENV "\n");
    assert_int_equal(strlen(got), 2 * strlen(get_env_expected));
    free(got);
}

/* `ddpnet env` as a user who is not root: the env socket (mode 0666)
 * answers, where the control socket would refuse. */
static void test_cli_env_any_user(void **state)
{
    struct fx *f = *state;
    char path[128], buf[512] = { 0 };
    struct control_server *srv;
    struct stat st;
    pid_t pid;
    int lfd, fds[2], status = 0;
    size_t got = 0;

    if (!is_root()) {
        fprintf(stderr, "skipped: becoming another user needs root\n");
        skip();
    }
    make_dir(f);
    assert_int_equal(chmod(f->dir, 0755), 0);
    sock_path(f, path, sizeof(path), "ddp0.env");
    lfd = control_listen_env(path);
    assert_true(lfd >= 0);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0666);
    assert_non_null(srv = control_server_new_env(lfd));
    assert_int_equal(pipe(fds), 0);
    pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        char *argv[] = { "env", "--run-dir", f->dir, "--master", "gpu-b", NULL };
        dup2(fds[1], STDOUT_FILENO);
        if (setgid(NOBODY) < 0 || setuid(NOBODY) < 0)
            _exit(100);
        _exit(cli_env(5, argv));
    }
    close(fds[1]);
    /* Serve until the child has its answer (it reads for at most 5 s). */
    for (int i = 0; i < 500 && waitpid(pid, &status, WNOHANG) == 0; i++) {
        struct pollfd p = { control_server_fd(srv), POLLIN, 0 };
        if (poll(&p, 1, 10) == 1)
            control_server_run(srv, &f->dev, NOW_NS);
    }
    for (ssize_t n; (n = read(fds[0], buf + got, sizeof(buf) - 1 - got)) > 0; )
        got += (size_t)n;
    close(fds[0]);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_string_equal(buf, "export NCCL_SOCKET_IFNAME=ddp0\n"
                             "export GLOO_SOCKET_IFNAME=ddp0\n"
                             "export MASTER_ADDR=10.77.0.2\n");
    control_server_free(srv);
    close(lfd);
}

/* The text a failing env prints for eval: the reason on stderr, then false. */
static void test_env_fail_text(void **state)
{
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);

    (void)state;
    assert_non_null(out);
    assert_int_equal(status_env_fail("ddpnet env: it's `down` $HOME", out), 0);
    fclose(out);
    assert_string_equal(text, "echo 'ddpnet env: it'\\''s `down` $HOME' >&2; false\n");
    free(text);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        T(test_get_wg_exact),
        T(test_get_wg_compatible),
        T(test_get_wg_ipv6),
        T(test_get_wg_no_identity),
        T(test_get_sized_for_many_peers),
        T(test_get_bad_arguments),
        T(test_get_ddpnet_exact),
        T(test_get_ddpnet_stale_rate),
        T(test_get_ddpnet_drops),
        T(test_get_ddpnet_routes),
        T(test_get_ddpnet_relayed),
        T(test_frame),
        T(test_frame_protocol),
        T(test_pipelined),
        T(test_bad_request_closes),
        T(test_bad_set_keeps_connection),
        T(test_request_too_big),
        T(test_passed_fd_closed_with_client),
        T(test_silent_client_times_out),
        T(test_slow_client_blocks_nobody),
        T(test_serve_bad_arguments),
        T(test_set_changes_peer),
        T(test_set_as_wg_sends_it),
        T(test_set_unknown_peer),
        T(test_set_allowed_ip_only_own),
        T(test_set_unsupported),
        T(test_set_stops_at_unknown_peer),
        T(test_set_bad_arguments),
        T(test_listen_mode_and_flags),
        T(test_listen_replaces_stale),
        T(test_listen_errors),
        T(test_request_live),
        T(test_request_bad_answers),
        T(test_request_protocol_live),
        T(test_request_protocol_mismatch),
        T(test_request_timeout),
        T(test_request_no_daemon),
        T(test_only_root),
        T(test_status_table),
        T(test_status_routes),
        T(test_status_drops),
        T(test_status_units),
        T(test_status_ages),
        T(test_status_paths),
        T(test_status_no_peers),
        T(test_status_json),
        T(test_status_address_clash),
        T(test_status_cert_ended),
        T(test_status_json_escapes),
        T(test_status_bad_responses),
        T(test_env),
        T(test_env_quoting),
        T(test_cli_status_live),
        T(test_cli_protocol_mismatch),
        T(test_cli_not_up),
        T(test_cli_usage),
        T(test_cli_permission),
        T(test_env_socket_answer),
        T(test_env_socket_refuses),
        T(test_cli_env_any_user),
        T(test_env_fail_text),
    };

    if (sodium_init() < 0)
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
