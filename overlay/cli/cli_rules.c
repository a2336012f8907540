/* SPDX-License-Identifier: MIT */
/* `ddpnet rules test -c CLUSTER FROM TO PROTO [PORT]`: whether the cluster
 * file's rules (config/rules.h) let FROM open a connection to TO, and
 * which rule says so, read from the file alone (what every node enforces
 * once it runs that file); and what each group may reach, which `ddpnet
 * check` prints. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/cluster.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"

#define RULES_USAGE "test -c CLUSTER FROM TO PROTO [PORT]"
#define NAMES_MAX   (RULES_GROUPS_MAX * (RULES_GROUP_NAME_MAX + 1) + 1)

/* The groups of a side: a node's name, a group's, or `any` (every group
 * and none). 0 and *mask, or -ENOENT. */
static int side_of(const struct cluster *c, const char *word, uint64_t *mask, const char **node)
{
    const struct cluster_node *n = cluster_find_name(c, word);

    *node = NULL;
    if (n) {
        *mask = n->groups;
        *node = n->name;
        return 0;
    }
    *mask = rules_group_mask(&c->rules, word);
    return *mask ? 0 : -ENOENT;
}

static int proto_of(const char *word, uint8_t *proto)
{
    if (!strcmp(word, "tcp"))
        *proto = RULES_PROTO_TCP;
    else if (!strcmp(word, "udp"))
        *proto = RULES_PROTO_UDP;
    else if (!strcmp(word, "icmp"))
        *proto = RULES_PROTO_ICMP;
    else
        return -EINVAL;
    return 0;
}

static void describe(FILE *out, const struct cluster *c, const char *node, uint64_t mask)
{
    char names[NAMES_MAX];

    rules_groups_format(&c->rules, mask, names, sizeof(names));
    if (node)
        fprintf(out, "%s (groups %s)", node, names);
    else
        fputs(names, out);
}

/* Splits argv (argv[0] "test") into the options, for cli_args_handle, and
 * the words. */
static int split(int argc, char **argv, char **opts, int *n_opts, char **words, int *n_words)
{
    *n_opts = *n_words = 0;
    (void)argv[0];
    opts[(*n_opts)++] = (char *)"rules test";
    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-' && argv[i][1]) {
            opts[(*n_opts)++] = argv[i];
            if ((!strcmp(argv[i], "-c") || !strcmp(argv[i], "--cluster")) && i + 1 < argc)
                opts[(*n_opts)++] = argv[++i];
        } else if (*n_words < 4) {
            words[(*n_words)++] = argv[i];
        } else {
            fprintf(stderr, "ddpnet rules test: unexpected argument '%s'\nusage: ddpnet rules "
                    RULES_USAGE "\n", argv[i]);
            return -EINVAL;
        }
    }
    return 0;
}

static int rules_test(int argc, char **argv)
{
    char **opts = calloc((size_t)argc + 1, sizeof(*opts)), *words[4];
    int n_opts, n_words, ret = CLI_EXIT_USAGE, i;
    const char *from_node, *to_node;
    uint64_t from, to;
    unsigned port = 0;
    struct cli_args a;
    struct cluster c;
    uint8_t proto;
    char text[256];

    if (!opts)
        return CLI_EXIT_FAIL;
    if (split(argc, argv, opts, &n_opts, words, &n_words) < 0)
        goto out;
    ret = cli_args_handle(n_opts, opts, CLI_OPT_CLUSTER, CLI_OPT_CLUSTER, RULES_USAGE, &a);
    if (ret != CLI_CONTINUE)
        goto out;
    ret = CLI_EXIT_USAGE;
    if (n_words < 3 || proto_of(words[2], &proto) < 0 ||
        (proto != RULES_PROTO_ICMP) != (n_words == 4)) {
        fprintf(stderr, "ddpnet rules test: want FROM TO PROTO [PORT]: nodes or groups, tcp or "
                "udp with a port, or icmp without\nusage: ddpnet rules " RULES_USAGE "\n");
        goto out;
    }
    if (n_words == 4) {
        char *end;
        unsigned long v = strtoul(words[3], &end, 10);
        if (*end || end == words[3] || v == 0 || v > 65535) {
            fprintf(stderr, "ddpnet rules test: bad port '%s' (1..65535)\n", words[3]);
            goto out;
        }
        port = (unsigned)v;
    }
    ret = CLI_EXIT_FAIL;
    if (cli_cluster_load(a.cluster, &c, stderr) != 0)
        goto out;
    for (int w = 0; w < 2; w++) {
        if (side_of(&c, words[w], w ? &to : &from, w ? &to_node : &from_node) < 0) {
            fprintf(stderr, "ddpnet rules test: '%s' is neither a node nor a group of %s\n",
                    words[w], a.cluster);
            cluster_free(&c);
            goto out;
        }
    }
    describe(stdout, &c, from_node, from);
    fputs(" -> ", stdout);
    describe(stdout, &c, to_node, to);
    printf(" %s", words[2]);
    if (port)
        printf(" %u", port);
    i = rules_match(&c.rules, from, to, proto, (uint16_t)port);
    if (i == RULES_OPEN) {
        puts(": allowed: no rule is written, everything is");
        ret = CLI_EXIT_OK;
    } else if (i == RULES_REFUSED) {
        printf(": refused: none of the %u rules allows it (once one is written, the default is "
               "deny)\n", c.rules.n);
    } else {
        rules_format(&c.rules, (size_t)i, text, sizeof(text));
        printf(": allowed by rule %d (line %d): %s\n", i + 1, c.rules.rule[i].line, text);
        ret = CLI_EXIT_OK;
    }
    cluster_free(&c);
    if (fflush(stdout))
        ret = CLI_EXIT_FAIL;
out:
    free(opts);
    return ret;
}

void cli_rules_reach(FILE *out, const struct cluster *c)
{
    char names[NAMES_MAX], text[256];

    if (!c->rules.n)
        return;
    fprintf(out, "rules: %u, default deny; what each group may open (replies always pass):\n",
            c->rules.n);
    for (unsigned g = 0; g <= c->rules.n_groups; g++) {
        /* each group, then the nodes of none (only `any` rules) */
        uint64_t bit = g < c->rules.n_groups ? 1ull << g : 0;
        size_t members = 0;
        bool some = false;
        for (size_t k = 0; k < c->n_nodes; k++)
            members += bit ? !!(c->nodes[k].groups & bit) : !c->nodes[k].groups;
        if (!bit && !members)
            continue;
        rules_groups_format(&c->rules, bit, names, sizeof(names));
        fprintf(out, "  %s (%zu node%s):", bit ? names : "no group", members,
                members == 1 ? "" : "s");
        for (unsigned i = 0; i < c->rules.n; i++) {
            const struct rule *u = &c->rules.rule[i];
            if (u->src != RULES_ANY && !(u->src & bit))
                continue;
            rules_format(&c->rules, i, text, sizeof(text));
            /* "allow SRC -> " cut: the reach alone */
            const char *arrow = strstr(text, "-> ");
            fprintf(out, "%s %s (line %d)", some ? "," : "", arrow ? arrow + 3 : text, u->line);
            some = true;
        }
        fputs(some ? "\n" : " nothing\n", out);
    }
}

static void usage(FILE *out)
{
    fprintf(out, "usage: ddpnet rules " RULES_USAGE "\n\n"
            "Says whether the cluster file's rules let FROM open a connection to TO (each a\n"
            "node or a group), with the protocol (tcp, udp with PORT, or icmp), and which\n"
            "rule does. Exit 0: allowed; 1: refused. See ddpnet(8) and ddpnet.conf(5).\n");
}

int cli_rules(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    if (strcmp(argv[1], "test")) {
        fprintf(stderr, "ddpnet rules: unknown command '%s' (try 'ddpnet rules --help')\n",
                argv[1]);
        return CLI_EXIT_USAGE;
    }
    return rules_test(argc - 1, argv + 1);
}
