/* SPDX-License-Identifier: MIT */
/* `ddpnet reload`: the cluster file the node was started with (its state
 * file names it) is read again, as root, and its bytes sent to the daemon,
 * which applies the difference live (membership/members.h). Prints a line
 * per change and exits 0; a file that does not parse is reported as
 * "FILE:LINE: message" per error, a change a running node cannot take
 * with what to run instead, and then nothing changed and it exits 1.
 * `ddpnet revoke`, beside it: one statement of the authority (a
 * revocation) handed to the running node, which passes it on. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/cert.h"
#include "config/cluster.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/control/control.h"
#include "overlay/control/control_int.h"
#include "overlay/control/uapi.h"
#include "overlay/daemon/daemon.h"
#include "overlay/membership/hosts.h"

#define RELOAD_USAGE   "[-i IFNAME] [--run-dir DIR]"
#define RELOAD_ALLOWED (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR)
#define RELOAD_STATE_MAX (2 * PATH_MAX + 64)
/* What fits in one request with its two header lines. */
#define RELOAD_FILE_MAX  (UAPI_MAX_REQUEST - 64u)

/* The cluster file named in the daemon's state file, into path; the
 * hosts file it names into hosts ("" when none). */
static int cluster_path_of(const struct cli_args *a, char *path, size_t len, char *hosts,
                           size_t hosts_len)
{
    char state[PATH_MAX], text[RELOAD_STATE_MAX + 1];
    ssize_t n;
    int fd, ret;

    if (daemon_state_path(state, sizeof(state), a->run_dir, a->ifname) < 0)
        return -ENAMETOOLONG;
    if ((fd = open(state, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0) {
        ret = -errno;
        if (ret == -ENOENT)
            fprintf(stderr, "ddpnet reload: %s is not up (no state file %s)\n", a->ifname, state);
        else
            fprintf(stderr, "ddpnet reload: %s: %s\n", state, strerror(-ret));
        return ret;
    }
    n = read(fd, text, RELOAD_STATE_MAX);
    close(fd);
    ret = n < 0 ? -errno : cli_state_value(text, (size_t)n, "cluster", path, len);
    if (ret == 0 && cli_state_value(text, (size_t)n, "hosts", hosts, hosts_len) != 0)
        hosts[0] = '\0';
    if (ret == 0 && !path[0])
        ret = -ENOKEY;
    if (ret)
        fprintf(stderr, "ddpnet reload: %s does not name the cluster file (%s); "
                "restart the node with `ddpnet down` and `ddpnet up`\n", state,
                ret == -ENOKEY ? "started by an older ddpnet" : strerror(-ret));
    return ret;
}

/* The request: its two header lines, then the file's bytes (no NUL: the
 * file is text, and the request goes as a string). */
static int build_request(const char *path, char **out)
{
    char *text = NULL, *req = NULL;
    size_t n = 0;
    int ret = cluster_read(path, &text, &n);

    if (ret == 0 && n > RELOAD_FILE_MAX)
        ret = -EFBIG;
    else if (ret == 0 && memchr(text, '\0', n))
        ret = -EBADMSG;
    else if (ret == 0 && asprintf(&req, "%s%s%zu\n%.*s", CONTROL_SET_CLUSTER, CONTROL_LENGTH_KEY,
                                  n, (int)n, text) < 0)
        ret = -ENOMEM;
    free(text);
    if (ret)
        fprintf(stderr, "%s: %s\n", path, ret == -EBADMSG ? "not a text file (it holds a NUL byte)"
                                          : ret == -EFBIG ? "too big to reload" : strerror(-ret));
    *out = req;
    return ret;
}

/* Prints the answer's lines; returns the daemon's errno (negative), or
 * -EPROTO for an answer that is not one. */
static int print_answer(const char *path, char *response)
{
    int err = -EPROTO;
    unsigned changes = 0;

    for (char *line = strtok(response, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq)
            return -EPROTO;
        *eq = '\0';
        const char *v = eq + 1;
        if (!strcmp(line, CONTROL_KEY_CHANGE)) {
            printf("%s\n", v);
            changes++;
        } else if (!strcmp(line, CONTROL_KEY_ERROR)) {
            /* "LINE: message", or a message about the file as a whole. */
            fprintf(stderr, "%s%s%s\n", path, *v >= '0' && *v <= '9' ? ":" : ": ", v);
        } else if (!strcmp(line, CONTROL_KEY_REFUSED)) {
            fprintf(stderr, "ddpnet reload: %s\n", v);
        } else if (!strcmp(line, UAPI_KEY_ERRNO)) {
            err = -atoi(v);
        }
    }
    if (err == 0 && !changes)
        printf("no changes\n");
    return err;
}

int cli_reload(int argc, char **argv)
{
    char path[PATH_MAX], sock[sizeof(((struct sockaddr_un *)0)->sun_path)];
    char hosts[PATH_MAX];
    char *req = NULL, *response = NULL, why[CLI_PROTOCOL_LINE_MAX];
    int hosts_fd;
    unsigned theirs = 0;
    struct cli_args a;
    int ret = cli_args_handle(argc, argv, RELOAD_ALLOWED, 0, RELOAD_USAGE, &a);

    if (ret != CLI_CONTINUE)
        return ret;
    /* The control socket is root's alone (control.h); saying so first
     * spares a person the cluster file's "Permission denied". */
    if (geteuid() != 0) {
        fprintf(stderr, "ddpnet reload: not permitted: run as root\n");
        return CLI_EXIT_FAIL;
    }
    if (cluster_path_of(&a, path, sizeof(path), hosts, sizeof(hosts)) ||
        build_request(path, &req))
        return CLI_EXIT_FAIL;
    if (daemon_socket_path(sock, sizeof(sock), a.run_dir, a.ifname) < 0) {
        free(req);
        fprintf(stderr, "ddpnet reload: run directory '%s' is too long for a socket path\n",
                a.run_dir);
        return CLI_EXIT_FAIL;
    }
    /* Passed along: where a tool replaced the file by renaming a new one
     * over it, the daemon (which may no longer open it) takes this one. */
    hosts_fd = hosts[0] ? hosts_open(hosts) : -1;
    ret = control_request_ddpnet(sock, req, hosts_fd, &response, &theirs);
    if (hosts_fd >= 0)
        close(hosts_fd);
    free(req);
    if (ret == -EPROTONOSUPPORT && control_protocol_message(why, sizeof(why), theirs, a.ifname))
        fprintf(stderr, "ddpnet reload: %s\n", why);
    else if (ret == -ENOENT || ret == -ECONNREFUSED)
        fprintf(stderr, "ddpnet reload: %s is not up (no control socket at %s)\n", a.ifname, sock);
    else if (ret == -ECONNRESET && geteuid() != 0)
        fprintf(stderr, "ddpnet reload: permission denied: run as root\n");
    else if (ret < 0)
        fprintf(stderr, "ddpnet reload: no answer from the daemon at %s: %s\n", sock,
                strerror(-ret));
    if (ret < 0)
        return CLI_EXIT_FAIL;
    ret = print_answer(path, response);
    free(response);
    if (ret == -EPROTO)
        fprintf(stderr, "ddpnet reload: the daemon's answer is not understood "
                        "(is it another version of ddpnet?)\n");
    else if (ret == -ENOMEM)
        fprintf(stderr, "ddpnet reload: the daemon ran out of memory; nothing changed\n");
    else if (ret == -EMSGSIZE)
        fprintf(stderr, "ddpnet reload: %s is too big for the control socket\n", path);
    return ret == 0 && fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* --- ddpnet revoke ------------------------------------------------------------------- */

#define REVOKE_USAGE "[-i IFNAME] [--run-dir DIR] FILE|STATEMENT"

/* The statement: the argument itself when it is one ("ddpnet-revoke:...",
 * or any statement's text), else the first line of the file it names. */
static int statement_of(const char *arg, char *out, size_t cap)
{
    FILE *f;

    if (!strncmp(arg, "ddpnet-", 7)) {
        snprintf(out, cap, "%s", arg);
        return 0;
    }
    if (!(f = fopen(arg, "re"))) {
        fprintf(stderr, "ddpnet revoke: %s: %s\n", arg, strerror(errno));
        return -errno;
    }
    if (!fgets(out, (int)cap, f)) {
        fclose(f);
        fprintf(stderr, "ddpnet revoke: %s: empty\n", arg);
        return -EINVAL;
    }
    fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    return 0;
}

int cli_revoke(int argc, char **argv)
{
    char sock[sizeof(((struct sockaddr_un *)0)->sun_path)], text[CERT_TEXT_MAX + 2];
    char *req = NULL, *response = NULL, why[CLI_PROTOCOL_LINE_MAX];
    unsigned theirs = 0;
    struct cli_args a;
    int ret, err = -EPROTO;
    bool has_arg = argc >= 2 && argv[argc - 1][0] != '-';

    ret = cli_args_handle(has_arg ? argc - 1 : argc, argv, RELOAD_ALLOWED, 0, REVOKE_USAGE, &a);
    if (ret != CLI_CONTINUE)
        return ret;
    if (!has_arg) {
        fprintf(stderr, "ddpnet revoke: give the revocation (a file, or its ddpnet-revoke: "
                "line) that `ddpnet authority revoke` printed\nusage: ddpnet revoke %s\n",
                REVOKE_USAGE);
        return CLI_EXIT_USAGE;
    }
    if (geteuid() != 0) {
        fprintf(stderr, "ddpnet revoke: not permitted: run as root\n");
        return CLI_EXIT_FAIL;
    }
    if (statement_of(argv[argc - 1], text, sizeof(text)) ||
        daemon_socket_path(sock, sizeof(sock), a.run_dir, a.ifname) < 0 ||
        asprintf(&req, "%s%s%zu\n%s", CONTROL_SET_STATEMENT, CONTROL_LENGTH_KEY, strlen(text),
                 text) < 0)
        return CLI_EXIT_FAIL;
    ret = control_request_ddpnet(sock, req, -1, &response, &theirs);
    free(req);
    if (ret == -EPROTONOSUPPORT && control_protocol_message(why, sizeof(why), theirs, a.ifname))
        fprintf(stderr, "ddpnet revoke: %s\n", why);
    else if (ret == -ENOENT || ret == -ECONNREFUSED)
        fprintf(stderr, "ddpnet revoke: %s is not up (no control socket at %s)\n", a.ifname, sock);
    else if (ret < 0)
        fprintf(stderr, "ddpnet revoke: no answer from the daemon at %s: %s\n", sock,
                strerror(-ret));
    if (ret < 0)
        return CLI_EXIT_FAIL;
    for (char *line = strtok(response, "\n"); line; line = strtok(NULL, "\n")) {
        char *eq = strchr(line, '=');
        if (!eq)
            break;
        *eq = '\0';
        if (!strcmp(line, CONTROL_KEY_VERDICT))
            printf("%s\n", eq + 1);
        else if (!strcmp(line, UAPI_KEY_ERRNO))
            err = -atoi(eq + 1);
    }
    free(response);
    if (err == -EPERM)
        fprintf(stderr, "ddpnet revoke: %s has no [cluster] authority\n", a.ifname);
    else if (err)
        fprintf(stderr, "ddpnet revoke: the daemon answered an error: %s (the line above "
                "says why)\n", strerror(-err));
    return err == 0 && fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}
