/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the control socket: arbitrary bytes as a stream of
 * requests (framing, then every set applied to a small device), and as a
 * get=ddpnet response given to the CLI's formatters. Whatever the requests
 * did, the device's own answers must still be well formed: the CLI must
 * understand its get=ddpnet, and peers keep the names and addresses of the
 * cluster file. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/addr.h"
#include "overlay/base/log.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/engine/model/device.h"
#include "overlay/membership/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define N_PEERS 2
#define FUZZ_NOW_NS (100 * WG_NSEC_PER_SEC)

static const char cluster_text[] =
    "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n\n"
    "[node a]\npublic-key = oKGio6SlpqeoqaqrrK2ur7CxsrO0tba3uLm6u7y9vr8=\naddress = 10.77.0.1\n\n"
    "[node b]\npublic-key = sLGys7S1tre4ubq7vL2+v8DBwsPExcbHyMnKy8zNzs8=\naddress = 10.77.0.2\n\n"
    "[node c]\npublic-key = wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t8=\naddress = 10.77.0.3\n";

static struct device dev;
static struct membership membership;   /* dev.membership */
static struct peer *peers[N_PEERS];
static FILE *sink;

static void init_once(void)
{
    if (sink)
        return;
    log_init("fuzz", true, LOG_LVL_ERROR);
    membership_init(&membership);
    dev.membership = &membership;
    if (cluster_parse(cluster_text, sizeof(cluster_text) - 1, &dev.cluster, NULL) != 0)
        abort();
    snprintf(dev.ifname, sizeof(dev.ifname), "ddp0");
    dev.self = &dev.cluster.nodes[0];
    dev.listen_port = 51820;
    dev.mtu = 1420;
    for (size_t i = 0; i < N_PEERS; i++) {
        peers[i] = calloc(1, sizeof(*peers[i]));
        if (!peers[i])
            abort();
    }
    dev.peers = peers;
    dev.n_peers = N_PEERS;
    sink = fopen("/dev/null", "w");
    if (!sink)
        abort();
}

/* Each run starts from the cluster file's peers. */
static void reset_peers(void)
{
    for (size_t i = 0; i < N_PEERS; i++) {
        const struct cluster_node *n = &dev.cluster.nodes[i + 1];
        struct peer *p = peers[i];

        memset(p, 0, sizeof(*p));
        p->dev = &dev;
        snprintf(p->member.name, sizeof(p->member.name), "%s", n->name);
        memcpy(p->public_key, n->public_key, WG_KEY_LEN);
        p->member.address = n->address;
        p->path.endpoint.sa.sa_family = AF_UNSPEC;
    }
}

static void run_requests(const char *buf, size_t len)
{
    size_t pos = 0;

    for (;;) {
        enum control_op op;
        size_t consumed = 0;

        if (control_frame(buf + pos, len - pos, &op, &consumed) != 0)
            return;
        if (consumed == 0 || consumed > len - pos)
            abort();
        /* After a protocol line, if any (control.h), as the server does. */
        size_t head = control_protocol_head(buf + pos, consumed);
        if (op == CONTROL_PROTOCOL_OP) {
            if (head != consumed)
                abort();
            return;   /* another protocol: refused, and hung up on */
        }
        if (head >= consumed)
            abort();
        if (op == CONTROL_SET_WG)
            control_set(&dev, buf + pos + head + UAPI_OP_LINE_LEN,
                        consumed - head - UAPI_OP_LINE_LEN, FUZZ_NOW_NS);
        pos += consumed;
    }
}

static void check_device(void)
{
    char *out = NULL, *text;
    size_t len = 0;

    for (size_t i = 0; i < N_PEERS; i++)
        if (strcmp(peers[i]->member.name, dev.cluster.nodes[i + 1].name) ||
            !cluster_addr_equal(&peers[i]->member.address, &dev.cluster.nodes[i + 1].address))
            abort();
    if (control_get_ddpnet(&dev, FUZZ_NOW_NS, &out, &len) != 0)
        abort();
    text = malloc(len + 1);
    if (!text)
        abort();
    memcpy(text, out, len);
    text[len] = '\0';
    if (status_format_json(text, sink) != 0 || status_format_table(text, sink, 0) != 0 ||
        status_format_env(text, NULL, sink) != 0)
        abort();
    free(text);
    free(out);
    if (control_get_wg(&dev, &out, &len) != 0 || len < 9 ||
        memcmp(out + len - 9, "errno=0\n\n", 9) != 0)
        abort();
    free(out);
}

/* The same bytes as a daemon's answer: any result, no crash. */
static void run_formatters(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);

    if (!text)
        abort();
    memcpy(text, data, size);
    text[size] = '\0';
    status_format_table(text, sink, 1700000000);
    status_format_json(text, sink);
    status_format_env(text, "b", sink);
    free(text);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init_once();
    reset_peers();
    run_requests((const char *)data, size);
    check_device();
    run_formatters(data, size);
    return 0;
}
