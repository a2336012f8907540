/* SPDX-License-Identifier: MIT */
/* `ddpnet certs` and `ddpnet renew`: the running node's side of renewal
 * (docs/authority.md, "Renewal"). certs prints every member certificate
 * the node holds, its own among them, one line each: what `ddpnet
 * authority renew` reads where the authority's key is. renew hands the
 * certificates it printed back to the running node, one statement each
 * (as `ddpnet revoke` hands one): the node takes each that renews one it
 * holds and passes it on, so every member has it within seconds. Both
 * speak to the control socket, as root. */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/cert.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/daemon/daemon.h"

#define RENEW_ALLOWED (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR)
#define CERTS_USAGE   "[-i IFNAME] [--run-dir DIR]"
#define RENEW_USAGE   "[-i IFNAME] [--run-dir DIR] FILE|-"
/* Lines read from renew's input: a store holds at most 4096 members. */
#define RENEW_LINES_MAX 4096u

/* One request to the daemon: its answer in *response, or an exit status
 * after saying why on stderr. */
static int ask(const char *verb, const struct cli_args *a, const char *req, char **response)
{
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)], why[CLI_PROTOCOL_LINE_MAX];
    unsigned theirs = 0;
    int ret;

    if (daemon_socket_path(sock, sizeof(sock), a->run_dir, a->ifname) < 0)
        return CLI_EXIT_FAIL;
    ret = control_request_ddpnet(sock, req, -1, response, &theirs);
    if (ret == -EPROTONOSUPPORT && control_protocol_message(why, sizeof(why), theirs, a->ifname))
        fprintf(stderr, "ddpnet %s: %s\n", verb, why);
    else if (ret == -ENOENT || ret == -ECONNREFUSED)
        fprintf(stderr, "ddpnet %s: %s is not up (no control socket at %s)\n", verb, a->ifname,
                sock);
    else if (ret < 0)
        fprintf(stderr, "ddpnet %s: no answer from the daemon at %s: %s\n", verb, sock,
                strerror(-ret));
    return ret < 0 ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* The value of key in an answer's line ("key=value"), or NULL. */
static const char *value_of(char *line, const char *key)
{
    size_t n = strlen(key);

    return !strncmp(line, key, n) && line[n] == '=' ? line + n + 1 : NULL;
}

static int errno_said(const char *verb, const struct cli_args *a, int err)
{
    if (err == -EPERM)
        fprintf(stderr, "ddpnet %s: %s has no [cluster] authority\n", verb, a->ifname);
    else if (err)
        fprintf(stderr, "ddpnet %s: the daemon answered an error: %s\n", verb, strerror(-err));
    return err ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

int cli_certs(int argc, char **argv)
{
    char *response = NULL, *save = NULL;
    struct cli_args a;
    const char *v;
    int ret = cli_args_handle(argc, argv, RENEW_ALLOWED, 0, CERTS_USAGE, &a), err = -EPROTO;

    if (ret != CLI_CONTINUE)
        return ret;
    if (geteuid() != 0) {
        fprintf(stderr, "ddpnet certs: not permitted: run as root\n");
        return CLI_EXIT_FAIL;
    }
    if ((ret = ask("certs", &a, CONTROL_GET_CERTS "\n", &response)) != CLI_EXIT_OK)
        return ret;
    for (char *line = strtok_r(response, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        if ((v = value_of(line, CONTROL_KEY_CERT)))
            puts(v);
        else if ((v = value_of(line, UAPI_KEY_ERRNO)))
            err = -atoi(v);
    }
    free(response);
    ret = errno_said("certs", &a, err);
    return ret == CLI_EXIT_OK && fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* One certificate handed to the node: its verdict printed after its
 * name; true when the node holds it (taken now, or known). */
static bool hand(const struct cli_args *a, const char *line, bool *failed)
{
    char *req = NULL, *response = NULL, *save = NULL;
    const char *v, *verdict = "no verdict";
    struct cert c;
    int err = -EPROTO;
    bool held;

    if (cert_parse(line, &c) || c.kind != CERT_MEMBER) {
        fprintf(stderr, "ddpnet renew: not a member certificate, skipped: %.40s...\n", line);
        return false;
    }
    if (asprintf(&req, "%s%s%zu\n%s", CONTROL_SET_STATEMENT, CONTROL_LENGTH_KEY, strlen(line),
                 line) < 0)
        return false;
    if (ask("renew", a, req, &response) != CLI_EXIT_OK) {
        free(req);
        *failed = true;
        return false;
    }
    free(req);
    for (char *l = strtok_r(response, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if ((v = value_of(l, CONTROL_KEY_VERDICT)))
            verdict = v;
        else if ((v = value_of(l, UAPI_KEY_ERRNO)))
            err = -atoi(v);
    }
    printf("%s: %s\n", c.name, verdict);
    held = !err && (!strncmp(verdict, "added", 5) || !strncmp(verdict, "known", 5));
    if (err)
        *failed = errno_said("renew", a, err) != CLI_EXIT_OK;
    free(response);
    return held;
}

int cli_renew(int argc, char **argv)
{
    bool has_arg = argc >= 2 && (argv[argc - 1][0] != '-' || !strcmp(argv[argc - 1], "-"));
    size_t cap = 0, n = 0, held = 0;
    char *line = NULL;
    bool failed = false;
    struct cli_args a;
    ssize_t got;
    FILE *in;
    int ret = cli_args_handle(has_arg ? argc - 1 : argc, argv, RENEW_ALLOWED, 0, RENEW_USAGE, &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (!has_arg) {
        fprintf(stderr, "ddpnet renew: give the renewed certificates (a file, or - for stdin) "
                "that `ddpnet authority renew` printed\nusage: ddpnet renew %s\n", RENEW_USAGE);
        return CLI_EXIT_USAGE;
    }
    if (geteuid() != 0) {
        fprintf(stderr, "ddpnet renew: not permitted: run as root\n");
        return CLI_EXIT_FAIL;
    }
    clearerr(stdin);                      /* a caller that read it before (the tests) */
    if (!(in = strcmp(argv[argc - 1], "-") ? fopen(argv[argc - 1], "re") : stdin)) {
        fprintf(stderr, "ddpnet renew: %s: %s\n", argv[argc - 1], strerror(errno));
        return CLI_EXIT_FAIL;
    }
    while (!failed && n < RENEW_LINES_MAX && (got = getline(&line, &cap, in)) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        n++;
        if (strlen(line) > CERT_TEXT_MAX) {
            fprintf(stderr, "ddpnet renew: a line too long for a certificate, skipped\n");
            continue;
        }
        held += hand(&a, line, &failed);
    }
    free(line);
    if (in != stdin)
        fclose(in);
    if (!failed && held != n)
        fprintf(stderr, "ddpnet renew: %zu of %zu certificates not taken (the lines above say "
                "why)\n", n - held, n);
    return !failed && held == n && fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
