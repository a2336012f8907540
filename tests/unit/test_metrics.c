/* SPDX-License-Identifier: MIT */
/* Tests of the metrics (overlay/control/metrics*.c): the exposition of a
 * device built by hand -- names, labels, escaping, paths, drop reasons --
 * and the HTTP endpoint on loopback, driven as the loop drives it (poll
 * its fd, run): 200 with the exposition, 404, 405, a silent client hung
 * up on, and the refusals of metrics_listen. */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "overlay/base/clock.h"
#include "overlay/base/version.h"
#include "overlay/control/metrics.h"
#include "overlay/engine/model/device.h"
#include "overlay/membership/certs.h"
#include "overlay/membership/state.h"
#include "tests/unit/peer_fixture.h"

#define B_B64 "sLGys7S1tre4ubq7vL2+v8DBwsPExcbHyMnKy8zNzs8="
#define C_B64 "wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t8="
#define A_B64 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="

struct fx {
    struct device dev;
    struct membership membership;   /* dev.membership */
    struct peer *peers[2];
};

static int setup(void **state)
{
    static const char text[] =
        "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n\n"
        "[node gpu-a]\npublic-key = " A_B64 "\naddress = 10.77.0.1\n\n"
        "[node gpu-b]\npublic-key = " B_B64 "\naddress = 10.77.0.2\n\n"
        "[node gpu-c]\npublic-key = " C_B64 "\naddress = 10.77.0.3\n";
    struct fx *f = calloc(1, sizeof(*f));
    struct peer *b;

    assert_non_null(f);
    assert_int_equal(cluster_parse(text, sizeof(text) - 1, &f->dev.cluster, NULL), 0);
    snprintf(f->dev.ifname, sizeof(f->dev.ifname), "ddp0");
    f->dev.self = &f->dev.cluster.nodes[0];
    f->dev.mtu = 1420;
    peer_fixture_fill(&f->dev, f->peers, 2);
    b = f->peers[0];
    peer_fixture_endpoint4(b, "192.0.2.2", 51820);
    b->wg.last_handshake.tv_sec = 1700000000;
    b->wg.last_handshake.tv_nsec = 500000000;
    b->live.rx_bytes = 1000;
    b->live.tx_bytes = 123456789012ull;
    b->wg.handshakes_sent = 3;
    b->wg.handshakes_completed = 2;
    b->live.reachable = true;
    b->disco.state.rtt_ns = 1500000;
    f->dev.stats.dropped_replay = 7;
    f->dev.stats.dropped_no_buffer = 5;
    f->dev.stats.dropped_socket_overflow = 4100;
    f->dev.stats.dropped_tun_queue = 9;
    f->dev.stage.stats.dropped_peer_full = 1;
    f->dev.stage.stats.dropped_store_full = 2;
    membership_init(&f->membership);
    f->dev.membership = &f->membership;
    f->dev.membership->cluster_applied_unix = 1700000123;
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fx *f = *state;

    peer_fixture_free(f->peers, 2);
    cluster_free(&f->dev.cluster);
    free(f);
    return 0;
}

static char *format(struct fx *f)
{
    char *text = NULL;
    size_t len = 0;

    assert_int_equal(metrics_format(&f->dev, &text, &len), 0);
    assert_non_null(text);
    assert_int_equal(strlen(text), len);
    return text;
}

static void expect_line(const char *text, const char *line)
{
    const char *at = strstr(text, line);

    if (!at || (at != text && at[-1] != '\n') || at[strlen(line)] != '\n') {
        print_message("missing line: %s\nin:\n%s\n", line, text);
        fail();
    }
}

#define B_LABELS "interface=\"ddp0\",public_key=\"" B_B64 "\",allowed_ips=\"10.77.0.2/32\"," \
                 "friendly_name=\"gpu-b\""
#define C_LABELS "interface=\"ddp0\",public_key=\"" C_B64 "\",allowed_ips=\"10.77.0.3/32\"," \
                 "friendly_name=\"gpu-c\""

static void test_peer_families(void **state)
{
    struct fx *f = *state;
    char *text = format(f);

    expect_line(text, "# TYPE wireguard_sent_bytes_total counter");
    expect_line(text, "wireguard_sent_bytes_total{" B_LABELS "} 123456789012");
    expect_line(text, "wireguard_sent_bytes_total{" C_LABELS "} 0");
    expect_line(text, "wireguard_received_bytes_total{" B_LABELS "} 1000");
    expect_line(text, "# TYPE wireguard_latest_handshake_seconds gauge");
    expect_line(text, "wireguard_latest_handshake_seconds{" B_LABELS "} 1700000000.5");
    expect_line(text, "wireguard_latest_handshake_seconds{" C_LABELS "} 0");
    expect_line(text, "ddpnet_peer_rtt_seconds{" B_LABELS "} 0.0015");
    /* never measured: absent, not 0 */
    assert_null(strstr(text, "ddpnet_peer_rtt_seconds{" C_LABELS));
    expect_line(text, "ddpnet_peer_handshakes_sent_total{" B_LABELS "} 3");
    expect_line(text, "ddpnet_peer_handshakes_completed_total{" B_LABELS "} 2");
    expect_line(text, "ddpnet_peer_reachable{" B_LABELS "} 1");
    expect_line(text, "ddpnet_peer_reachable{" C_LABELS "} 0");
    expect_line(text, "ddpnet_peer_path{" B_LABELS ",path=\"direct\",via=\"\"} 1");
    expect_line(text, "ddpnet_peer_path{" C_LABELS ",path=\"none\",via=\"\"} 1");
    free(text);
}

/* Every family's samples follow its HELP and TYPE, each family once: what
 * the format (and promtool) requires. */
static void test_families_grouped(void **state)
{
    struct fx *f = *state;
    char *text = format(f), *save = NULL, *line;
    char seen[64][96], current[96] = "";
    size_t n_seen = 0;

    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char name[96];
        if (sscanf(line, "# TYPE %95s", name) == 1) {
            for (size_t i = 0; i < n_seen; i++)
                assert_string_not_equal(seen[i], name);
            assert_true(n_seen < 64);
            snprintf(seen[n_seen++], sizeof(seen[0]), "%s", name);
            snprintf(current, sizeof(current), "%s", name);
            continue;
        }
        if (line[0] == '#')
            continue;
        size_t len = strcspn(line, "{ ");
        assert_int_equal(len, strlen(current));
        assert_memory_equal(line, current, len);
    }
    assert_int_equal(n_seen, 20);   /* without a loop: no buffer counts */
    free(text);
}

static void test_relay_and_unreachable(void **state)
{
    struct fx *f = *state;
    char *text;

    f->peers[1]->path.via = f->peers[0];
    f->peers[1]->path.endpoint = f->peers[0]->path.endpoint;
    /* Before its first handshake: somewhere to send, nothing proven. */
    text = format(f);
    expect_line(text, "ddpnet_peer_path{" C_LABELS ",path=\"waiting\",via=\"\"} 1");
    free(text);
    f->peers[1]->live.reachable = true;
    text = format(f);
    expect_line(text, "ddpnet_peer_path{" C_LABELS ",path=\"relay\",via=\"gpu-b\"} 1");
    free(text);
    f->peers[1]->wg.no_answer = true;
    text = format(f);
    expect_line(text, "ddpnet_peer_path{" C_LABELS ",path=\"unreachable\",via=\"\"} 1");
    expect_line(text, "ddpnet_peer_reachable{" C_LABELS "} 0");
    free(text);
    /* A registry record its key has not stated: pending, whatever else. */
    f->peers[1]->member.pending = true;
    text = format(f);
    expect_line(text, "ddpnet_peer_path{" C_LABELS ",path=\"pending\",via=\"\"} 1");
    free(text);
}

static void test_drops_and_device(void **state)
{
    struct fx *f = *state;
    char *text;

    f->dev.stats.disco_sent[DISCO_PING] = 11;
    f->dev.stats.disco_received[DISCO_PONG] = 9;
    f->dev.stats.disco_received[DISCO_FEATURES] = 4;
    f->dev.stats.relay_frames_sent = 12;
    f->dev.stats.relay_frames_received = 13;
    f->dev.stats.relay_data_frames_sent = 10;
    f->dev.stats.relay_data_frames_received = 11;
    f->dev.stats.dropped_queue_delay = 6;
    f->dev.stats.ecn_marked = 15;
    text = format(f);

    expect_line(text, "# TYPE ddpnet_packets_dropped_total counter");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"replay\"} 7");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"no_session\"} 3");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"pool_full\"} 5");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"socket_overflow\"} 4100");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"tun_queue\"} 9");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"queue_delay\"} 6");
    expect_line(text, "# TYPE ddpnet_ecn_marked_total counter");
    expect_line(text, "ddpnet_ecn_marked_total{interface=\"ddp0\"} 15");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"bad_source\"} 0");
    expect_line(text, "ddpnet_packets_dropped_total{interface=\"ddp0\",reason=\"rate_limited\"} 0");
    expect_line(text, "ddpnet_info{interface=\"ddp0\",node=\"gpu-a\"} 1");
    {
        /* The version the build was given (base/version.h), and the
         * control protocol's number. */
        char build[128];
        snprintf(build, sizeof(build), "ddpnet_build_info{version=\"%s\",control_protocol=\"%u\"} 1",
                 ddpnet_version, DDPNET_CONTROL_PROTOCOL);
        assert_true(strlen(ddpnet_version) > 0);
        expect_line(text, build);
    }
    expect_line(text, "ddpnet_peers{interface=\"ddp0\"} 2");
    expect_line(text, "ddpnet_cluster_file_applied_timestamp_seconds{interface=\"ddp0\"} "
                "1700000123");
    expect_line(text, "# TYPE ddpnet_disco_sent_total counter");
    expect_line(text, "ddpnet_disco_sent_total{interface=\"ddp0\",type=\"ping\"} 11");
    expect_line(text, "ddpnet_disco_sent_total{interface=\"ddp0\",type=\"punch\"} 0");
    expect_line(text, "ddpnet_disco_received_total{interface=\"ddp0\",type=\"pong\"} 9");
    expect_line(text, "ddpnet_disco_received_total{interface=\"ddp0\",type=\"names\"} 0");
    expect_line(text, "ddpnet_disco_received_total{interface=\"ddp0\",type=\"features\"} 4");
    expect_line(text, "# TYPE ddpnet_relay_frames_total counter");
    expect_line(text, "ddpnet_relay_frames_total{interface=\"ddp0\",direction=\"sent\"} 12");
    expect_line(text, "ddpnet_relay_frames_total{interface=\"ddp0\",direction=\"received\"} 13");
    expect_line(text, "# TYPE ddpnet_relay_data_frames_total counter");
    expect_line(text, "ddpnet_relay_data_frames_total{interface=\"ddp0\",direction=\"sent\"} 10");
    expect_line(text, "ddpnet_relay_data_frames_total{interface=\"ddp0\",direction=\"received\"} 11");
    /* No loop (a test's device): no buffer counts rather than made-up ones. */
    assert_null(strstr(text, "ddpnet_buffers_in_use{"));
    free(text);
}

/* Issue 55: a store full of revocations is loud. With an authority, how
 * many revocations are held and how many were refused for the store's
 * bound (CERTS_REVOKED_MAX of keys it does not hold). */
static void test_revocations(void **state)
{
    struct fx *f = *state;
    uint8_t pub[CERT_PUBKEY_LEN] = { 1 }, key[CLUSTER_KEY_LEN] = { 0 };
    char *text;

    text = format(f);
    assert_null(strstr(text, "ddpnet_revocations{"));   /* no authority, no store */
    free(text);
    assert_non_null(f->membership.certs = certs_new(pub, NULL, NULL));
    for (uint32_t i = 0; i <= CERTS_REVOKED_MAX; i++) {
        memcpy(key, &i, sizeof(i));
        assert_int_equal(certs_revoke_key(f->membership.certs, key),
                         i < CERTS_REVOKED_MAX ? CERTS_REVOKING : CERTS_FULL);
    }
    text = format(f);
    char line[96];
    snprintf(line, sizeof(line), "ddpnet_revocations{interface=\"ddp0\"} %u", CERTS_REVOKED_MAX);
    expect_line(text, line);
    expect_line(text, "# TYPE ddpnet_revocations_refused_total counter");
    expect_line(text, "ddpnet_revocations_refused_total{interface=\"ddp0\"} 1");
    free(text);
    certs_free(f->membership.certs);
    f->membership.certs = NULL;
}

/* Issue 56: each member certificate held, its seconds left by name (a
 * day and some seconds here); renewed, the value grows. */
static void test_cert_remaining(void **state)
{
    struct fx *f = *state;
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN];
    const uint64_t now = (uint64_t)time(NULL);
    struct cert c = { .kind = CERT_MEMBER, .not_before = now - 60, .not_after = now + 86400 + 30 };
    char text_c[CERT_TEXT_MAX], line[128], *text;
    unsigned long long left = 0;
    const char *at;

    assert_int_equal(cert_keypair(pub, sec), 0);
    snprintf(c.name, sizeof(c.name), "spot-n");
    c.subject[0] = 7;
    assert_int_equal(cert_sign(&c, sec, text_c, sizeof(text_c)), 0);
    assert_non_null(f->membership.certs = certs_new(pub, NULL, NULL));
    assert_int_equal(certs_offer(f->membership.certs, text_c, now, NULL), CERTS_ADDED);
    text = format(f);
    expect_line(text, "# TYPE ddpnet_certificate_remaining_seconds gauge");
    snprintf(line, sizeof(line), "ddpnet_certificate_remaining_seconds{interface=\"ddp0\",name=\"spot-n\"} ");
    assert_non_null(at = strstr(text, line));
    left = strtoull(at + strlen(line), NULL, 10);
    assert_true(left > 86400 && left <= 86430);
    free(text);
    certs_free(f->membership.certs);
    f->membership.certs = NULL;
}

/* Label values escape backslash, double quote and newline; a name never
 * holds them (the file refuses such names), but an escape missed would
 * let a value end the label early. */
static void test_label_escaping(void **state)
{
    struct fx *f = *state;
    char *text;

    snprintf(f->peers[0]->member.name, sizeof(f->peers[0]->member.name), "a\"b\\c\nd");
    snprintf(f->dev.ifname, sizeof(f->dev.ifname), "x\"y");
    text = format(f);
    assert_non_null(strstr(text, "interface=\"x\\\"y\""));
    assert_non_null(strstr(text, "friendly_name=\"a\\\"b\\\\c\\nd\""));
    free(text);
}

static void test_bad_arguments(void **state)
{
    struct fx *f = *state;
    char *text;
    size_t len;

    assert_int_equal(metrics_format(NULL, &text, &len), -EINVAL);
    assert_int_equal(metrics_format(&f->dev, NULL, &len), -EINVAL);
    assert_int_equal(metrics_format(&f->dev, &text, NULL), -EINVAL);
}

/* --- the HTTP endpoint ----------------------------------------------------------------- */

struct client {
    uint16_t port;
    const char *request;
    char response[1 << 16];
    size_t len;
};

static void *client_run(void *arg)
{
    struct client *c = arg;
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(c->port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    ssize_t n;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (fd < 0 || connect(fd, (struct sockaddr *)&sin, sizeof(sin)) != 0)
        return NULL;
    if (write(fd, c->request, strlen(c->request)) < 0)
        return NULL;
    while (c->len < sizeof(c->response) - 1 &&
           (n = read(fd, c->response + c->len, sizeof(c->response) - 1 - c->len)) > 0)
        c->len += (size_t)n;
    c->response[c->len] = '\0';
    close(fd);
    return NULL;
}

static uint16_t port_of(int fd)
{
    struct sockaddr_in sin;
    socklen_t sl = sizeof(sin);

    assert_int_equal(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
    return ntohs(sin.sin_port);
}

static struct metrics_server *loopback_server(struct fx *f, uint16_t *port)
{
    struct cluster_metrics m = { .at = CLUSTER_METRICS_ADDRESS, .port = 0 };
    char err[256];
    int fd = -1;

    assert_int_equal(cluster_addr_parse("127.0.0.1", &m.addr), 0);
    assert_int_equal(metrics_listen(&m, &f->dev.self->address, &fd, err, sizeof(err)), 0);
    *port = port_of(fd);
    struct metrics_server *s = metrics_server_new(fd, &f->dev);
    assert_non_null(s);
    assert_true(metrics_server_fd(s) >= 0);
    return s;
}

/* Serves until the client thread is done, as the loop would: poll, run. */
static void serve(struct metrics_server *s, struct client *c)
{
    pthread_t t;

    assert_int_equal(pthread_create(&t, NULL, client_run, c), 0);
    for (int i = 0; i < 400; i++) {
        struct pollfd p = { .fd = metrics_server_fd(s), .events = POLLIN };
        poll(&p, 1, 10);
        metrics_server_run(s, clock_now_ns());
        if (pthread_tryjoin_np(t, NULL) == 0)
            return;
    }
    fail_msg("the client did not finish");
}

static void test_http(void **state)
{
    struct fx *f = *state;
    uint16_t port;
    struct metrics_server *s = loopback_server(f, &port);
    struct client *c = calloc(1, sizeof(*c));
    char *text = format(f);

    assert_non_null(c);
    assert_int_equal(metrics_server_next(s, 1000), UINT64_MAX);   /* no client: no time-out */
    c->port = port;
    c->request = "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    serve(s, c);
    assert_non_null(strstr(c->response, "HTTP/1.1 200"));
    assert_non_null(strstr(c->response, "Content-Type: " METRICS_CONTENT_TYPE "\r\n"));
    const char *body = strstr(c->response, "\r\n\r\n");
    assert_non_null(body);
    assert_string_equal(body + 4, text);

    memset(c, 0, sizeof(*c));
    c->port = port;
    c->request = "GET /other HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
    serve(s, c);
    assert_non_null(strstr(c->response, "HTTP/1.1 404"));

    memset(c, 0, sizeof(*c));
    c->port = port;
    c->request = "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                 "Connection: close\r\n\r\n";
    serve(s, c);
    assert_non_null(strstr(c->response, "HTTP/1.1 405"));
    assert_non_null(strstr(c->response, "Allow: GET, HEAD"));

    memset(c, 0, sizeof(*c));
    c->port = port;
    c->request = "this is not HTTP\r\n\r\n";
    serve(s, c);
    assert_non_null(strstr(c->response, "HTTP/1.1 400"));
    free(text);
    free(c);
    metrics_server_free(s);
}

/* A client that connects and says nothing gets a time-out, which the loop
 * learns from metrics_server_next. */
static void test_silent_client_deadline(void **state)
{
    struct fx *f = *state;
    uint16_t port;
    struct metrics_server *s = loopback_server(f, &port);
    struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    uint64_t now = clock_now_ns(), next;

    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
    for (int i = 0; i < 50 && metrics_server_next(s, now) == UINT64_MAX; i++) {
        usleep(10000);
        metrics_server_run(s, now);
    }
    next = metrics_server_next(s, now);
    assert_true(next > now);
    assert_true(next <= now + (uint64_t)METRICS_IDLE_S * WG_NSEC_PER_SEC);
    close(fd);
    metrics_server_free(s);
}

static void test_listen_refusals(void **state)
{
    struct fx *f = *state;
    struct cluster_metrics m = { .at = CLUSTER_METRICS_ADDRESS, .port = 9586 };
    char err[256] = "";
    int fd = -1;

    /* Another node's overlay address: refused, pointing at overlay:PORT. */
    assert_int_equal(cluster_addr_parse("10.77.0.2", &m.addr), 0);
    assert_int_equal(metrics_listen(&m, &f->dev.self->address, &fd, err, sizeof(err)),
                     -EADDRNOTAVAIL);
    assert_string_equal(err, "metrics address 10.77.0.2 is not this node's overlay address "
                        "(10.77.0.1): use overlay:9586 to serve each node's own");
    assert_int_equal(fd, -1);
    /* An address this machine does not have: the kernel's word, with it. */
    m.public_ok = true;
    assert_int_equal(cluster_addr_parse("192.0.2.77", &m.addr), 0);
    assert_int_equal(metrics_listen(&m, &f->dev.self->address, &fd, err, sizeof(err)),
                     -EADDRNOTAVAIL);
    assert_string_equal(err, "metrics: cannot listen on 192.0.2.77:9586: Cannot assign "
                        "requested address");
    /* A port in use. */
    struct cluster_metrics lo = { .at = CLUSTER_METRICS_ADDRESS, .port = 0 };
    int first;
    assert_int_equal(cluster_addr_parse("127.0.0.1", &lo.addr), 0);
    assert_int_equal(metrics_listen(&lo, &f->dev.self->address, &first, err, sizeof(err)), 0);
    lo.port = port_of(first);
    assert_int_equal(metrics_listen(&lo, &f->dev.self->address, &fd, err, sizeof(err)),
                     -EADDRINUSE);
    assert_non_null(strstr(err, "Address already in use"));
    close(first);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_peer_families, setup, teardown),
        cmocka_unit_test_setup_teardown(test_families_grouped, setup, teardown),
        cmocka_unit_test_setup_teardown(test_relay_and_unreachable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_drops_and_device, setup, teardown),
        cmocka_unit_test_setup_teardown(test_revocations, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cert_remaining, setup, teardown),
        cmocka_unit_test_setup_teardown(test_label_escaping, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_client_deadline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_listen_refusals, setup, teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
