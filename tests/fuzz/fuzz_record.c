/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for overlay/registry/record.c: arbitrary bytes as an
 * etcd value, decoded against an IPv4 and an IPv6 network (anyone with
 * write access to the prefix can put anything there). A value that
 * decodes must hold what the decoder promises (a valid name, a key, an
 * address inside the network that is neither its own nor its broadcast
 * address, an endpoint with a port, a port 1..65535, at most
 * CLUSTER_CANDIDATES_MAX candidates, each usable and none twice, an
 * observed one usable); it must encode again
 * within RECORD_VALUE_MAX, and that encoding must decode to the same node.
 * A refusal must leave the node zeroed and give a printable reason. The
 * same bytes as an etcd key go through record_key_tail. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/cluster.h"
#include "overlay/registry/record.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct cluster net4, net6;

static void init(void)
{
    static bool done;
    const char *why = NULL;

    if (done)
        return;
    if (cluster_prefix_parse("10.77.0.0/16", &net4.network, &net4.prefix, &why) != 0 ||
        cluster_prefix_parse("fd77::/64", &net6.network, &net6.prefix, &why) != 0)
        abort();
    done = true;
}

static bool all_zero(const void *p, size_t len)
{
    const uint8_t *b = p;

    for (size_t i = 0; i < len; i++)
        if (b[i])
            return false;
    return true;
}

static void same_node(const struct cluster_node *a, const struct cluster_node *b)
{
    if (strcmp(a->name, b->name) || memcmp(a->public_key, b->public_key, CLUSTER_KEY_LEN) ||
        !cluster_addr_equal(&a->address, &b->address) || a->has_endpoint != b->has_endpoint ||
        a->port != b->port)
        abort();
    /* Candidates come back in order; the last may give way to fit. */
    if (b->n_candidates > a->n_candidates || a->has_observed != b->has_observed ||
        (a->has_observed && (a->observed.port != b->observed.port ||
                             !cluster_addr_equal(&a->observed.addr, &b->observed.addr))))
        abort();
    for (unsigned i = 0; i < b->n_candidates; i++)
        if (a->candidates[i].port != b->candidates[i].port ||
            !cluster_addr_equal(&a->candidates[i].addr, &b->candidates[i].addr))
            abort();
    if (!a->has_endpoint)
        return;
    /* A literal is written back in its canonical form; a hostname as is. */
    if (a->endpoint.port != b->endpoint.port || a->endpoint.literal != b->endpoint.literal ||
        (a->endpoint.literal ? !cluster_addr_equal(&a->endpoint.addr, &b->endpoint.addr)
                             : strcmp(a->endpoint.host, b->endpoint.host) != 0))
        abort();
}

static void check(const uint8_t *data, size_t size, const struct cluster *c)
{
    static char buf[RECORD_VALUE_MAX + 1];
    struct cluster_node n, again;
    const char *why = NULL;
    int r = record_decode((const char *)data, size, c, &n, &why);

    if (r != 0) {
        if (r != -EINVAL || !why || !why[0] || !all_zero(&n, sizeof(n)))
            abort();
        for (const char *s = why; *s; s++)
            if (*s < ' ' || *s > '~')
                abort();
        return;
    }
    if (size > RECORD_VALUE_MAX || memchr(data, '\0', size))
        abort();
    if (!cluster_name_valid(n.name) || n.address.family != c->network.family ||
        !cluster_addr_in_network(&n.address, &c->network, c->prefix) ||
        cluster_addr_equal(&n.address, &c->network) ||
        cluster_addr_is_broadcast(&n.address, c->prefix))
        abort();
    if (n.has_endpoint && (n.endpoint.port == 0 ||
                           cluster_endpoint_format(&n.endpoint, buf, sizeof(buf)) != 0))
        abort();
    if (n.n_aliases || n.keepalive_set || n.persistent_keepalive || n.line)
        abort();
    if (n.n_candidates > CLUSTER_CANDIDATES_MAX || (n.has_observed && !record_cand_usable(&n.observed)))
        abort();
    for (unsigned i = 0; i < n.n_candidates; i++) {
        if (!record_cand_usable(&n.candidates[i]))
            abort();
        for (unsigned k = 0; k < i; k++)
            if (n.candidates[k].port == n.candidates[i].port &&
                cluster_addr_equal(&n.candidates[k].addr, &n.candidates[i].addr))
                abort();
    }
    /* Back to bytes, and those bytes back to the same node. */
    r = record_encode(&n, buf, sizeof(buf));
    if (r <= 0 || (size_t)r != strlen(buf) || (size_t)r > RECORD_VALUE_MAX)
        abort();
    if (record_decode(buf, (size_t)r, c, &again, &why) != 0)
        abort();
    same_node(&n, &again);
}

static void check_key(const uint8_t *data, size_t size)
{
    char tail[CLUSTER_NAME_MAX + 1];
    const char *t = record_key_tail("/ddpnet/fuzz", RECORD_MEMBERS, (const char *)data, size,
                                    tail, sizeof(tail));
    size_t p = strlen("/ddpnet/fuzz" RECORD_MEMBERS);

    if (!t)
        return;
    if (t != tail || size <= p || memcmp(data, "/ddpnet/fuzz" RECORD_MEMBERS, p) ||
        strlen(tail) != size - p || memcmp(tail, data + p, size - p))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    init();
    check(data, size, &net4);
    check(data, size, &net6);
    check_key(data, size);
    return 0;
}
