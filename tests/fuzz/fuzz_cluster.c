/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the cluster-file parser: arbitrary bytes in. On
 * success the model must hold what the parser promises (addresses inside
 * the network, names, addresses and keys unique, every node found by its
 * own lookups, aliases naming one node only); on failure the error list must be non-empty, in line order
 * and printable on one line each. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "config/addr.h"
#include "config/cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_node(const struct cluster *c, const struct cluster_node *n)
{
    if (!cluster_name_valid(n->name))
        abort();
    if (n->address.family != c->network.family ||
        !cluster_addr_in_network(&n->address, &c->network, c->prefix) ||
        cluster_addr_equal(&n->address, &c->network) ||
        cluster_addr_is_broadcast(&n->address, c->prefix))
        abort();
    if (cluster_find_name(c, n->name) != n ||
        cluster_find_key(c, n->public_key) != n ||
        cluster_find_address(c, &n->address) != n)
        abort();
    if (n->has_endpoint && n->endpoint.port == 0)
        abort();
    if (cluster_node_port(c, n) <= 0)
        abort();
    /* An alias is a hostname that names this node only. */
    for (unsigned k = 0; k < n->n_aliases; k++) {
        if (n->n_aliases > CLUSTER_ALIASES_MAX || !cluster_hostname_valid(n->aliases[k]) ||
            cluster_find_name(c, n->aliases[k]))
            abort();
        for (size_t j = 0; j < c->n_nodes; j++)
            for (unsigned l = 0; l < c->nodes[j].n_aliases; l++)
                if ((&c->nodes[j] != n || l != k) &&
                    !strcasecmp(c->nodes[j].aliases[l], n->aliases[k]))
                    abort();
    }
}

static void check_success(const struct cluster *c)
{
    char buf[512];

    if (c->n_nodes == 0 || !c->nodes || c->port == 0 || c->prefix == 0)
        abort();
    unsigned min = c->network.family == AF_INET6 ? CLUSTER_MTU_MIN_IPV6
                                                 : CLUSTER_MTU_MIN_IPV4;
    if (c->mtu < min || (!c->mtu_set && c->mtu != CLUSTER_MTU_DEFAULT))
        abort();
    if (c->socket_buffer < CLUSTER_SOCKET_BUFFER_MIN || c->socket_buffer > CLUSTER_SOCKET_BUFFER_MAX ||
        (!c->socket_buffer_set && c->socket_buffer != CLUSTER_SOCKET_BUFFER_DEFAULT))
        abort();
    if (cluster_addr_format(&c->network, buf, sizeof(buf)) != 0)
        abort();
    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *n = &c->nodes[i];
        check_node(c, n);
        for (size_t j = 0; j < i; j++)
            if (strcasecmp(c->nodes[j].name, n->name) == 0 ||
                memcmp(c->nodes[j].public_key, n->public_key, CLUSTER_KEY_LEN) == 0)
                abort();
        if (n->has_endpoint && cluster_endpoint_format(&n->endpoint, buf, sizeof(buf)) != 0)
            abort();
    }
}

static void check_failure(const struct cluster *c, const struct cluster_diag *d)
{
    char buf[512];

    if (c->nodes || c->n_nodes || d->n == 0 || d->n > CLUSTER_DIAG_MAX)
        abort();
    for (size_t i = 0; i < d->n; i++) {
        const char *m = d->items[i].message;
        if (i > 0 && d->items[i].line < d->items[i - 1].line)
            abort();
        if (m[0] == '\0' || !memchr(m, '\0', sizeof(d->items[i].message)))
            abort();
        for (; *m; m++)
            if (*m < ' ' || *m > '~')
                abort();
        if (cluster_diag_format(d, i, "fuzz.conf", buf, sizeof(buf)) != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct cluster_diag diag;
    struct cluster c;
    int r = cluster_parse((const char *)data, size, &c, &diag);

    if (r == 0)
        check_success(&c);
    else if (r == -EINVAL)
        check_failure(&c, &diag);
    else if (r != -EFBIG)
        abort();
    cluster_free(&c);
    return 0;
}
