/* SPDX-License-Identifier: MIT */
/* The `ddpnet` command around its verbs (cli.h: cli_main): the list of
 * verbs, `help VERB`, `version`, and the dispatch to main.c's table. Apart
 * from main.c, so that the unit tests run it on a table of their own. */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"

static void usage(FILE *f, const struct cli_verb *table, size_t n)
{
    int w = 8;   /* the names' column: as wide as the longest */

    for (size_t i = 0; i < n; i++)
        if ((int)strlen(table[i].name) > w)
            w = (int)strlen(table[i].name);
    fprintf(f, "usage: ddpnet <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < n; i++)
        fprintf(f, "  %-*s %s\n", w, table[i].name, table[i].help);
    fprintf(f, "  %-*s %s\n", w, "help", "this list; 'ddpnet help COMMAND' explains one command");
    fprintf(f, "  %-*s %s\n", w, "version", "print ddpnet's version (also --version, -v)");
    fprintf(f, "\n'ddpnet COMMAND --help' explains a command's options and their defaults;\n"
               "the manual is ddpnet(8) (man 8 ddpnet), the cluster file ddpnet.conf(5).\n");
}

static const struct cli_verb *verb_find(const struct cli_verb *table, size_t n,
                                        const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(table[i].name, name) == 0)
            return &table[i];
    return NULL;
}

static bool is_any(const char *s, const char *a, const char *b, const char *c)
{
    return strcmp(s, a) == 0 || strcmp(s, b) == 0 || strcmp(s, c) == 0;
}

/* The verb's function with its one line set for --help. */
static int run(const struct cli_verb *v, int argc, char **argv)
{
    int ret;

    cli_args_summary(v->help);
    ret = v->run(argc, argv);
    cli_args_summary(NULL);
    return ret;
}

/* `ddpnet help VERB`: as `ddpnet VERB --help`. */
static int help_verb(const struct cli_verb *table, size_t n, const char *name)
{
    const struct cli_verb *v = verb_find(table, n, name);
    char verb[64], help[] = "--help";
    char *argv[] = { verb, help, NULL };

    if (v == NULL) {
        fprintf(stderr, "ddpnet help: unknown command '%s' (try 'ddpnet help')\n", name);
        return CLI_EXIT_USAGE;
    }
    snprintf(verb, sizeof(verb), "%s", v->name);
    return run(v, 2, argv);
}

int cli_main(const struct cli_verb *table, size_t n, const char *version, int argc,
             char **argv)
{
    const struct cli_verb *v;

    if (argc < 2) {
        usage(stderr, table, n);
        return CLI_EXIT_USAGE;
    }
    if (is_any(argv[1], "help", "--help", "-h")) {
        if (argc > 3) {
            fprintf(stderr, "ddpnet help: one command at a time, not '%s'\n", argv[3]);
            return CLI_EXIT_USAGE;
        }
        if (argc == 3)
            return help_verb(table, n, argv[2]);
        usage(stdout, table, n);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    if (is_any(argv[1], "version", "--version", "-v")) {
        if (argc > 2) {
            fprintf(stderr, "ddpnet version: unexpected argument '%s'\n", argv[2]);
            return CLI_EXIT_USAGE;
        }
        printf("ddpnet %s\n", version);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    v = verb_find(table, n, argv[1]);
    if (v == NULL) {
        fprintf(stderr, "ddpnet: unknown command '%s' (try 'ddpnet help')\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    return run(v, argc - 1, argv + 1);
}
