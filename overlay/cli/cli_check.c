/* SPDX-License-Identifier: MIT */
/* `ddpnet check -c CLUSTER [-k KEYFILE]`: every check `up` makes that needs
 * only the files -- the cluster file's own (config/), the metrics address
 * against the nodes that would serve it, and with -k the key file, this
 * node found by its key, and its private key pasted as a public-key --
 * printing `ok` and what only `up` can check on the node itself, or every
 * error with its line, so that a person fixes them all in one round. */
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "config/cluster.h"
#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/control/metrics.h"
#include "overlay/daemon/keyfile.h"

#define CHECK_USAGE   "-c CLUSTER [-k KEYFILE]"
#define CHECK_ALLOWED (CLI_OPT_CLUSTER | CLI_OPT_KEY)
#define CHECK_ERR_MAX 512u

/* A literal metrics address is refused by `up` on every node whose
 * overlay address it is not (control/metrics.h): with the same file on
 * every node, that is all but at most one. self: only that node's. */
static int check_metrics(const char *path, const struct cluster *c,
                         const struct cluster_node *self)
{
    char err[CHECK_ERR_MAX];
    size_t refused = 0;
    const struct cluster_node *first = NULL;

    for (size_t i = 0; i < c->n_nodes; i++) {
        const struct cluster_node *n = &c->nodes[i];
        if ((self && n != self) || metrics_check(&c->metrics, &n->address, NULL, 0) == 0)
            continue;
        if (!first)
            first = n;
        refused++;
    }
    if (!first)
        return 0;
    (void)metrics_check(&c->metrics, &first->address, err, sizeof(err));
    if (self)
        fprintf(stderr, "%s: %s\n", path, err);
    else
        fprintf(stderr, "%s: `ddpnet up` refuses it on %zu of the %zu nodes; on node %s: %s\n",
                path, refused, c->n_nodes, first->name, err);
    return -1;
}

/* With -k: what `up` makes of the key. *self is this node (NULL when it
 * joins a registry). */
static int check_key(const char *path, const char *keyfile, const struct cluster *c,
                     const struct cluster_node **self)
{
    uint8_t priv[CLUSTER_KEY_LEN], pub[CLUSTER_KEY_LEN];
    char err[CHECK_ERR_MAX], text[KEYFILE_B64_LEN + 1];
    const struct cluster_node *pasted;
    int ret = keyfile_read(keyfile, priv, err, sizeof(err));

    *self = NULL;
    if (ret) {
        fprintf(stderr, "%s\n", err);
        return -1;
    }
    ret = x25519_public(pub, priv);
    pasted = cli_key_pasted(c, priv);
    sodium_memzero(priv, sizeof(priv));
    if (ret) {
        fprintf(stderr, "%s: not a usable private key\n", keyfile);
        return -1;
    }
    *self = cluster_find_key(c, pub);
    if (!*self && pasted) {
        cli_key_pasted_say(path, keyfile, pasted);
        return -1;
    }
    /* Not in the file: joining a registry, or (with an authority) as its
     * certificate says, which up checks on the node. */
    if (!*self && !c->registry.n_endpoints && !c->has_authority) {
        keyfile_format(text, pub);
        fprintf(stderr, "%s: this node's public key %s (from %s) is not in the cluster file\n",
                path, text, keyfile);
        return -1;
    }
    return 0;
}

/* What `check` cannot see from here: `up` finds it on the node. On
 * stderr, a note for the person, so that stdout stays `ok` for scripts
 * that compare it. */
static void say_unchecked(const struct cluster *c, bool key)
{
    fprintf(stderr, "not checked (only `ddpnet up` can, on the node):%s root; the interface name "
           "free; the run directory; UDP port %u free; the hosts file; %s%s%s%s"
           "mtu against the route's MTU%s\n",
           key ? "" : " the key file (add -k KEYFILE);", (unsigned)c->port,
           c->metrics.at != CLUSTER_METRICS_OFF ? "the metrics port free; " : "",
           c->registry.n_endpoints ? "the registry's files and etcd reachable; " : "",
           c->registry.n_endpoints && !key ? "this node in the file or joining; " : "",
           c->has_authority ? "this node's certificate (up --cert); " : "",
           c->mtu_set ? " (an mtu above it makes packets be cut by path MTU discovery)"
                      : " (without mtu, ddp0 takes it, less 80)");
}

int cli_check(int argc, char **argv)
{
    const struct cluster_node *self = NULL;
    struct cluster c;
    struct cli_args a;
    int ret = cli_args_handle(argc, argv, CHECK_ALLOWED, CLI_OPT_CLUSTER, CHECK_USAGE, &a);
    bool bad = false;

    if (ret != CLI_CONTINUE)
        return ret;
    if (a.key && crypto_core_init() != 0) {
        fprintf(stderr, "ddpnet check: cannot initialise libsodium\n");
        return CLI_EXIT_FAIL;
    }
    if (cli_cluster_load(a.cluster, &c, stderr) != 0)
        return CLI_EXIT_FAIL;
    if (a.key && check_key(a.cluster, a.key, &c, &self))
        bad = true;
    /* Without -k every node's; with it, this node's (none when joining). */
    if (c.metrics.at != CLUSTER_METRICS_OFF && (!a.key || self) &&
        check_metrics(a.cluster, &c, self))
        bad = true;
    if (!bad) {
        puts("ok");
        cli_rules_reach(stdout, &c);
        /* ok first, also where both streams go to one file. */
        fflush(stdout);
        say_unchecked(&c, a.key != NULL);
    }
    cluster_free(&c);
    if (bad)
        return CLI_EXIT_FAIL;
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
