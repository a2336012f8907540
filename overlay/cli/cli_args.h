/* SPDX-License-Identifier: MIT */
/* What the `ddpnet` verbs share: one option parser with the same option
 * names for every verb, the exit statuses, the messages several verbs print,
 * and the small checks and file helpers of `up` and `down`. None of it
 * touches the daemon, so the unit tests reach all of it. */
#ifndef DDPNET_CLI_ARGS_H
#define DDPNET_CLI_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "config/cluster.h"
#include "overlay/base/clock.h"

/* Exit statuses of every verb. */
#define CLI_EXIT_OK     0
#define CLI_EXIT_FAIL   1   /* the request failed; one line says why */
#define CLI_EXIT_USAGE  2   /* the command line was wrong */
/* cli_args_handle: parsing succeeded, the verb goes on. */
#define CLI_CONTINUE    (-1)

/* The options, as bits for a verb's allowed and required sets. */
enum cli_opt {
    CLI_OPT_CLUSTER    = 1u << 0,   /* -c, --cluster FILE */
    CLI_OPT_KEY        = 1u << 1,   /* -k, --key FILE */
    CLI_OPT_INTERFACE  = 1u << 2,   /* -i, --interface NAME */
    CLI_OPT_RUN_DIR    = 1u << 3,   /* --run-dir DIR */
    CLI_OPT_HOSTS_FILE = 1u << 4,   /* --hosts-file FILE */
    CLI_OPT_FOREGROUND = 1u << 5,   /* --foreground */
    CLI_OPT_DEBUG      = 1u << 6,   /* --debug */
    CLI_OPT_JSON       = 1u << 7,   /* --json */
    CLI_OPT_MASTER     = 1u << 8,   /* --master NAME */
    CLI_OPT_WATCH      = 1u << 9,   /* -w, --watch [SECONDS] */
    CLI_OPT_NAME       = 1u << 10,  /* --name NAME (joining a registry) */
    CLI_OPT_ENDPOINT   = 1u << 11,  /* --endpoint HOST:PORT (joining a registry) */
    CLI_OPT_RATE       = 1u << 12,  /* --rate (doctor) */
    CLI_OPT_CERT       = 1u << 13,  /* --cert FILE (up, with an authority) */
    CLI_OPT_STATE_DIR  = 1u << 14,  /* --state-dir DIR (up) */
};

/* --watch's interval: 1 s when none is given; below 0.1 s the control
 * socket would be asked more often than a person can read, above an hour
 * it is more likely a typo than a wish. */
#define CLI_WATCH_DEFAULT_NS  NS_PER_S
#define CLI_WATCH_MIN_NS       100000000ull
#define CLI_WATCH_MAX_NS     3600000000000ull

/* The parsed options. Strings point into argv. */
struct cli_args {
    const char *cluster;      /* NULL unless given */
    const char *key;          /* NULL unless given */
    const char *ifname;       /* default DAEMON_DEFAULT_IFNAME */
    const char *run_dir;      /* default DAEMON_DEFAULT_RUN_DIR */
    const char *hosts_file;   /* default DAEMON_DEFAULT_HOSTS */
    const char *state_dir;    /* default DAEMON_DEFAULT_STATE_DIR */
    const char *master;       /* NULL unless given */
    const char *name, *endpoint;  /* NULL unless given */
    const char *cert;         /* NULL unless given */
    bool foreground, debug, json;
    bool rate;                /* doctor --rate */
    bool watch;               /* -w/--watch given */
    uint64_t watch_ns;        /* its interval, CLI_WATCH_DEFAULT_NS unless given */
    bool help;                /* -h/--help: print usage, do nothing else */
};

/* Parses argv[1..argc) (argv[0] is the verb) for the options in allowed;
 * those in required must be present. Values come as "-c FILE", "-cFILE",
 * "--cluster FILE" or "--cluster=FILE"; "--" ends the options; a later
 * option overrides an earlier one. -w/--watch's value may be left out: it
 * takes the next argument only when that looks like a number ("-w 2",
 * "--watch=0.5", "-w2"; "--watch -i x" and "--watch foo" do not eat the
 * next argument). -h/--help sets help and ends parsing (nothing is then
 * required). Returns 0, or -EINVAL with one line in err: "unknown option
 * '--x'", "option '-c' needs a value", "option '--debug' takes no value",
 * "option '-w' wants seconds from 0.1 to 3600, not 'x'", "missing option
 * -c/--cluster", "unexpected argument 'x'" or "invalid interface name
 * 'x'". */
int cli_args_parse(int argc, char **argv, unsigned allowed, unsigned required,
                   struct cli_args *a, char *err, size_t errlen);

/* A number of seconds as a person writes it -- digits, and at most 9
 * decimals after a point ("2", "0.5", ".25") -- in nanoseconds. 0, or
 * -EINVAL for anything else (signs, exponents, "inf", spaces), or -ERANGE
 * above 10^10 s. */
int cli_args_seconds(const char *s, uint64_t *ns);

/* cli_args_parse as every verb uses it: after --help prints the verb's
 * help (cli_args_help) on stdout and returns CLI_EXIT_OK; after an error
 * prints "ddpnet VERB: ERROR", the usage line and where the options are
 * explained on stderr and returns CLI_EXIT_USAGE; otherwise returns
 * CLI_CONTINUE. */
int cli_args_handle(int argc, char **argv, unsigned allowed, unsigned required,
                    const char *usage, struct cli_args *a);

/* Option help: names in a column HELP_NAME_WIDTH wide, each text wrapped
 * into lines of at most HELP_LINE_WIDTH characters. */
#define HELP_NAME_WIDTH 26
#define HELP_LINE_WIDTH 79
/* text after a column of indent characters, cut at spaces into lines of
 * at most HELP_LINE_WIDTH; a word longer than a line stays whole. */
void cli_args_help_wrap(FILE *out, int indent, const char *text);
/* A verb's --help: "usage: ddpnet VERB USAGE", the verb's one line (when
 * cli_args_summary gave one), one line per allowed option saying what it
 * does and its default (or "(required)"), and where the manual is. */
void cli_args_help(FILE *out, const char *verb, unsigned allowed, unsigned required,
                   const char *usage);
/* The running verb's one line of help, shown by its --help; NULL: none. */
void cli_args_summary(const char *summary);

/* Loads the cluster file at path. On failure prints every error to errs as
 * "FILE:LINE: message" (and a closing count of errors not shown), or
 * "FILE: <strerror>" when the file cannot be read, and returns the error of
 * cluster_load; c is then zeroed. */
int cli_cluster_load(const char *path, struct cluster *c, FILE *errs);

/* The node whose public-key line holds priv, this node's PRIVATE key
 * pasted where its public key belongs (`up` then finds no node of its
 * key); NULL when none. Compares in constant time per node. */
const struct cluster_node *cli_key_pasted(const struct cluster *c,
                                          const uint8_t priv[CLUSTER_KEY_LEN]);
/* Prints "CLUSTER:LINE: node N's public-key is this node's PRIVATE key
 * (from KEYFILE)" and what to put there instead. */
void cli_key_pasted_say(const char *cluster, const char *keyfile, const struct cluster_node *n);

/* Whether we may create and delete interfaces: effective uid 0 or
 * CAP_NET_ADMIN in the effective set. */
bool cli_permitted(void);
/* Prints "ddpnet VERB: not permitted: ..." and returns CLI_EXIT_FAIL. */
int cli_not_permitted(const char *verb);

/* mkdir -p: creates path and its missing parents with mode (less the
 * umask). Returns 0 (also when it exists as a directory), -ENOTDIR when it
 * or a parent is something else, -EINVAL for an empty path,
 * -ENAMETOOLONG, or -errno of mkdir. */
int cli_mkdir_p(const char *path, mode_t mode);

/* A directory only root may change, as ssh wants of its files' homes: it
 * must be a directory owned by root (or by the effective user, who runs
 * us with CAP_NET_ADMIN), writable by nobody else. 0, or -errno with a
 * line a person can act on in err. */
int cli_check_private_dir(const char *path, char *err, size_t errlen);

/* path made absolute against the current directory (not resolved: links
 * and ".." stay as written), for a daemon that leaves its working
 * directory. Returns 0, -EINVAL for an empty path, -ENAMETOOLONG when it
 * does not fit in len, or -errno of getcwd. */
int cli_abspath(const char *path, char *out, size_t len);

/* Parses a state file's text ("pid=N\nhosts=PATH\n"; unknown lines are
 * ignored). Returns 0 with *pid (> 1) and hosts ("" when the file names
 * none), -EBADMSG when pid is missing or bad or the text holds a NUL, or
 * -ENAMETOOLONG when the hosts path does not fit in hosts_len. */
int cli_state_parse(const char *text, size_t len, pid_t *pid, char *hosts,
                    size_t hosts_len);

/* The value of a state file's "KEY=VALUE" line into out ("" when there is
 * none): 0, -EBADMSG for a NUL in the text, -ENAMETOOLONG when it does not
 * fit. */
int cli_state_value(const char *text, size_t len, const char *key, char *out, size_t out_len);

/* Whether pid exists and is not a zombie (a dead daemon whose parent has
 * not reaped it yet). */
bool cli_process_alive(pid_t pid);

/* Whether pid is a live ddpnet process (its /proc comm, or the base name
 * of its argv[0], begins with "ddpnet"), so that `down` never signals a
 * process that merely reused a daemon's pid. Zombies count as dead. */
bool cli_process_is_ddpnet(pid_t pid);

/* Whether the interface ifname is a TUN device (ethtool driver "tun"), the
 * only kind `down` deletes. Returns 1, 0, -ENODEV when there is no such
 * interface, -EINVAL for a bad name, or -errno. */
int cli_link_is_tun(const char *ifname);

/* Reads one line of a daemon's setup report from fd (a pipe) into line,
 * without its newline, NUL-terminated, cut at cap - 1 bytes; waits at most
 * timeout_ms in all. Returns its length (0: EOF before any byte),
 * -ETIMEDOUT, -EINVAL when cap is 0, -EBADF, or -errno of poll/read. */
int cli_read_report(int fd, char *line, size_t cap, int timeout_ms);

#endif
