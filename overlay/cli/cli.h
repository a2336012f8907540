/* The `ddpnet` verbs, one function each; main.c dispatches to them from a
 * table. Each takes the arguments after the verb (argv[0] is the verb),
 * prints one actionable line on error, and returns the exit status. */
#ifndef DDPNET_CLI_H
#define DDPNET_CLI_H

int cli_genkey(int argc, char **argv);
int cli_pubkey(int argc, char **argv);
int cli_check(int argc, char **argv);
int cli_up(int argc, char **argv);
int cli_down(int argc, char **argv);
int cli_reload(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_env(int argc, char **argv);
int cli_doctor(int argc, char **argv);

#endif
