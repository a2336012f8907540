/* SPDX-License-Identifier: MIT */
/* The `ddpnet` command: a table of verbs, each with its function (cli.h)
 * and one line of help; cli_main (cli_help.c) dispatches on it. Nothing
 * else lives here. */
#include "overlay/base/version.h"
#include "overlay/cli/cli.h"

static const struct cli_verb verbs[] = {
    { "up",     cli_up,     "bring up the overlay interface from the cluster file and this node's key" },
    { "down",   cli_down,   "stop the daemon, remove the interface and its hosts entries" },
    { "reload", cli_reload, "apply the changed cluster file to the running node" },
    { "revoke", cli_revoke, "hand the running node a revocation; it passes it on" },
    { "certs",  cli_certs,  "print every member certificate the running node holds, one line each" },
    { "renew",  cli_renew,  "hand the running node renewed certificates; it passes them on" },
    { "status", cli_status, "show each peer: address, endpoint, latest handshake, bytes, rates" },
    { "env",    cli_env,    "print export lines for NCCL, Gloo and torchrun, for eval" },
    { "doctor", cli_doctor, "before a job: reach every peer, show path, MTU, round trip, env" },
    { "check",  cli_check,  "validate a cluster file" },
    { "rules",  cli_rules,  "rules test FROM TO PROTO [PORT]: which rule allows it, or that none does" },
    { "genkey", cli_genkey, "print a new private key" },
    { "pubkey", cli_pubkey, "read a private key on stdin, print its public key" },
    { "authority", cli_authority, "the cluster authority: its key, member certificates, join tokens, revocations" },
};
#define N_VERBS (sizeof(verbs) / sizeof(verbs[0]))

int main(int argc, char **argv)
{
    return cli_main(verbs, N_VERBS, ddpnet_version, argc, argv);
}
