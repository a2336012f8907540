/* SPDX-License-Identifier: MIT */
/* The `ddpnet` verbs, one function each; main.c dispatches to them from a
 * table. Each takes the arguments after the verb (argv[0] is the verb),
 * prints one actionable line on error, and returns the exit status. */
#ifndef DDPNET_CLI_H
#define DDPNET_CLI_H

#include <stddef.h>
#include <stdio.h>

int cli_genkey(int argc, char **argv);
int cli_pubkey(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_up(int argc, char **argv);
int cli_down(int argc, char **argv);
int cli_reload(int argc, char **argv);
int cli_revoke(int argc, char **argv);
int cli_certs(int argc, char **argv);
int cli_renew(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_env(int argc, char **argv);
int cli_doctor(int argc, char **argv);
int cli_authority(int argc, char **argv);
/* `ddpnet rules test` (cli_rules.c). */
int cli_rules(int argc, char **argv);
/* What each group of c may open under its rules, a line per group (none
 * when no rule is written): `ddpnet check` prints it after `ok`. */
struct cluster;
void cli_rules_reach(FILE *out, const struct cluster *c);

/* A row of main.c's table: the verb, its function, its one line of help. */
struct cli_verb {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
};

/* `ddpnet ARGS` with the verbs of table (cli_help.c): no verb, or "help",
 * "--help", "-h": the list of verbs; "help VERB": VERB's --help; "version",
 * "--version", "-v": "ddpnet VERSION"; a verb: its function, whose --help
 * shows its one line too. An unknown verb or "help" of one: exit 2 with a
 * line saying so. Returns the exit status. */
/* Room for control_protocol_message's line (control.h). */
#define CLI_PROTOCOL_LINE_MAX 256u

int cli_main(const struct cli_verb *table, size_t n, const char *version, int argc,
             char **argv);

#endif
