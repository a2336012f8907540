/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for the difference of two cluster models
 * (config/cluster_diff.c): the input is two cluster files split at the
 * first 0xff byte. When both parse, every node of the old file must be
 * removed, changed or the same in the new one (and the other way round),
 * each change must print as one line, and a file compared with itself
 * must show no change at all. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/cluster.h"
#include "config/cluster_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const struct cluster_change *change_of(const struct cluster_diff *d,
                                              const struct cluster_node *n, bool old)
{
    for (size_t i = 0; i < d->n; i++)
        if ((old ? d->changes[i].old_node : d->changes[i].new_node) == n)
            return &d->changes[i];
    return NULL;
}

static void check(const struct cluster *a, const struct cluster *b)
{
    struct cluster_diff d;
    char line[512];

    if (cluster_diff(a, b, &d))
        return;   /* out of memory */
    for (size_t i = 0; i < d.n; i++) {
        const struct cluster_change *c = &d.changes[i];
        if (cluster_change_format(c, line, sizeof(line)) || strchr(line, '\n') ||
            (c->kind == CLUSTER_NODE_CHANGED && (!c->what || !c->old_node || !c->new_node)) ||
            (c->kind == CLUSTER_NODE_ADDED && (c->old_node || !c->new_node)) ||
            (c->kind == CLUSTER_NODE_REMOVED && (!c->old_node || c->new_node)))
            abort();
    }
    /* Each old node: gone, changed, or found unchanged by name. */
    for (size_t i = 0; i < a->n_nodes; i++) {
        const struct cluster_change *c = change_of(&d, &a->nodes[i], true);
        const struct cluster_node *same = cluster_find_name(b, a->nodes[i].name);
        if (!c && !same)
            abort();
        if (c && c->kind == CLUSTER_NODE_REMOVED && same)
            abort();
    }
    for (size_t i = 0; i < b->n_nodes; i++)
        if (!change_of(&d, &b->nodes[i], false) && !cluster_find_name(a, b->nodes[i].name))
            abort();
    cluster_diff_free(&d);
    if (cluster_diff(a, a, &d))
        return;
    if (d.n || d.settings)
        abort();
    cluster_diff_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *cut = memchr(data, 0xff, size);
    struct cluster a, b;

    if (!cut)
        return 0;
    if (cluster_parse((const char *)data, (size_t)(cut - data), &a, NULL))
        return 0;
    if (cluster_parse((const char *)cut + 1, size - (size_t)(cut - data) - 1, &b, NULL) == 0) {
        check(&a, &b);
        cluster_free(&b);
    }
    cluster_free(&a);
    return 0;
}
