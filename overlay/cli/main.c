/* The `ddpnet` command: a table of verbs, each with its function (cli.h)
 * and one line of help. Nothing else lives here. */
#include <stdio.h>
#include <string.h>

#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"

#ifndef DDPNET_VERSION
#define DDPNET_VERSION "0.3.0"
#endif

struct verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

static const struct verb verbs[] = {
    { "up",     cli_up,     "bring up the overlay interface from the cluster file and this node's key" },
    { "down",   cli_down,   "stop the daemon, remove the interface and its hosts entries" },
    { "reload", cli_reload, "apply the changed cluster file to the running node" },
    { "status", cli_status, "show each peer: address, endpoint, latest handshake, bytes, rates" },
    { "env",    cli_env,    "print export lines for NCCL, Gloo and torchrun, for eval" },
    { "doctor", cli_doctor, "before a job: reach every peer, show path, MTU, round trip, env" },
    { "check",  cli_check,  "validate a cluster file" },
    { "genkey", cli_genkey, "print a new private key" },
    { "pubkey", cli_pubkey, "read a private key on stdin, print its public key" },
};
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

static void usage(FILE *f)
{
    fprintf(f, "usage: ddpnet <command> [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_VERBS; i++)
        fprintf(f, "  %-8s %s\n", verbs[i].name, verbs[i].help);
    fprintf(f, "  %-8s %s\n", "help", "show this help");
    fprintf(f, "\n'ddpnet <command> --help' shows a command's options.\n");
}

static const struct verb *verb_find(const char *name)
{
    for (size_t i = 0; i < N_VERBS; i++)
        if (strcmp(verbs[i].name, name) == 0)
            return &verbs[i];
    return NULL;
}

int main(int argc, char **argv)
{
    const struct verb *v;

    if (argc < 2) {
        usage(stderr);
        return CLI_EXIT_USAGE;
    }
    if (strcmp(argv[1], "help") == 0 || strcmp(argv[1], "--help") == 0 ||
        strcmp(argv[1], "-h") == 0) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[1], "--version") == 0) {
        printf("ddpnet %s\n", DDPNET_VERSION);
        return CLI_EXIT_OK;
    }
    v = verb_find(argv[1]);
    if (v == NULL) {
        fprintf(stderr, "ddpnet: unknown command '%s' (try 'ddpnet help')\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    return v->run(argc - 1, argv + 1);
}
