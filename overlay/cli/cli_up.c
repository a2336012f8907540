/* SPDX-License-Identifier: MIT */
/* `ddpnet up`: every check a person can act on (cluster file, key file,
 * membership, privilege, a free interface name, the run directory) is made
 * here, before the daemon starts; then the daemon runs in the foreground,
 * or in a detached child that reports the outcome of its setup through a
 * pipe, so that `up` returns only once the interface is up or has failed. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "config/addr.h"
#include "config/routes.h"
#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/cli/cli.h"
#include "overlay/base/clock.h"
#include "overlay/base/log.h"
#include "overlay/cli/cli_args.h"
#include "overlay/daemon/certfile.h"
#include "overlay/daemon/daemon.h"
#include "overlay/daemon/keyfile.h"
#include "overlay/registry/registry.h"

#define UP_USAGE    "-c CLUSTER -k KEYFILE [-i IFNAME] [--run-dir DIR] " \
                    "[--hosts-file FILE] [--state-dir DIR] [--name NAME] " \
                    "[--endpoint HOST:PORT] " \
                    "[--cert FILE] [--foreground] [--debug]"
#define UP_ALLOWED  (CLI_OPT_CLUSTER | CLI_OPT_KEY | CLI_OPT_INTERFACE | \
                     CLI_OPT_RUN_DIR | CLI_OPT_HOSTS_FILE | CLI_OPT_FOREGROUND | \
                     CLI_OPT_DEBUG | CLI_OPT_NAME | CLI_OPT_ENDPOINT | CLI_OPT_CERT | \
                     CLI_OPT_STATE_DIR)
#define UP_REQUIRED (CLI_OPT_CLUSTER | CLI_OPT_KEY)
#define UP_RUN_DIR_MODE   0755
/* The log file of a daemon on a machine without syslog: root's, and its
 * group's to read (lines name peers and addresses, never keys). */
#define UP_LOG_MODE       0640
/* How long the parent waits for the daemon's "ok" or error line. */
#define UP_READY_TIMEOUT_S 30
#define UP_REPORT_MAX      512u
/* The line daemon_run writes when setup succeeded (daemon.h). */
#define UP_READY_OK        "ok"

struct up {
    struct cli_args args;
    struct cluster cluster;
    struct daemon_options opt;
    char run_dir[PATH_MAX];
    /* No syslog here: the detached daemon's stderr is this file, not
     * /dev/null, so that its lines go somewhere. "": syslog. */
    char log_file[PATH_MAX];
    char hosts_file[PATH_MAX];
    char state_dir[PATH_MAX];
    char cluster_file[PATH_MAX];
    char cert[CERT_TEXT_MAX + 1];
};

/* Who joins the registry: --name, else this machine's hostname; its
 * public key; --endpoint when given. The address is the registry's. */
static int up_registry_self(struct up *u, const uint8_t pub[WG_KEY_LEN])
{
    struct cluster_node *n = &u->opt.registry_self;
    char host[HOST_NAME_MAX + 1] = "";
    const char *name = u->args.name, *why = "";

    if (!name) {
        if (gethostname(host, sizeof(host)) != 0)
            host[0] = '\0';
        name = host;
    }
    if (strlen(name) > CLUSTER_NAME_MAX || !cluster_name_valid(name)) {
        fprintf(stderr, "ddpnet up: '%s' is not a valid node name (letters, digits, '-' and "
                "'.', at most %u characters)%s\n", name, CLUSTER_NAME_MAX,
                u->args.name ? "" : "; give one with --name");
        return CLI_EXIT_FAIL;
    }
    if (cluster_find_name(&u->cluster, name)) {
        fprintf(stderr, "ddpnet up: the name %s is another node's in %s; choose another with "
                "--name\n", name, u->args.cluster);
        return CLI_EXIT_FAIL;
    }
    snprintf(n->name, sizeof(n->name), "%s", name);
    memcpy(n->public_key, pub, WG_KEY_LEN);
    if (u->args.endpoint) {
        if (cluster_endpoint_parse(u->args.endpoint, &n->endpoint, &why) < 0) {
            fprintf(stderr, "ddpnet up: bad --endpoint '%s': %s\n", u->args.endpoint, why);
            return CLI_EXIT_FAIL;
        }
        n->has_endpoint = true;
    }
    return CLI_CONTINUE;
}

static int up_cert_path(const struct up *u, char *path, size_t len)
{
    if (u->args.cert) {
        snprintf(path, len, "%s", u->args.cert);
        return 0;
    }
    if (certfile_default_path(u->args.key, path, len)) {
        fprintf(stderr, "ddpnet up: %s: path too long; give --cert FILE\n", u->args.key);
        return -ENAMETOOLONG;
    }
    return 0;
}

/* A renewal this node took while it ran (membership/renewal.h), kept in
 * the state directory: where it renews the --cert file's certificate, it
 * is the one used (and checked as the file's would be). Never fails. */
static int up_cert_kept(struct up *u)
{
    if (certfile_kept(u->args.state_dir, u->args.ifname, u->cert, sizeof(u->cert)) == 1)
        fprintf(stderr, "ddpnet up: using the renewed certificate kept in %s/%s.cert (newer "
                "than the --cert file's)\n", u->args.state_dir, u->args.ifname);
    return 0;
}

/* With an authority and no registry, a node the file does not list joins
 * as its certificate says (README "Joining with an authority"): its name,
 * aliases and address (the fixed one, else the one derived from its key,
 * cert_derive_address), checked here against the file's nodes, which win
 * any clash everywhere. */
/* Issue 60: our certificate's routes under the file's rules, as if the
 * file granted them to us: a complaint about the last node (ours). */
struct self_routes_ctx {
    size_t self;
    const char *path;
    size_t faults;
};

static void self_route_fault(void *ctx, size_t node, const char *message)
{
    struct self_routes_ctx *c = ctx;

    if (node != c->self)
        return;
    fprintf(stderr, "ddpnet up: %s: %s\n", c->path, message);
    c->faults++;
}

static int up_cert_routes(const struct up *u, const struct cluster_node *self, const char *path)
{
    const struct cluster_node **all;
    struct self_routes_ctx c = { u->cluster.n_nodes, path, 0 };

    if (!self->n_routes)
        return 0;
    if (!(all = calloc(u->cluster.n_nodes + 1, sizeof(*all))))
        return -ENOMEM;
    for (size_t i = 0; i < u->cluster.n_nodes; i++)
        all[i] = &u->cluster.nodes[i];
    all[u->cluster.n_nodes] = self;
    cluster_routes_check(all, u->cluster.n_nodes + 1, &u->cluster.network, u->cluster.prefix,
                         self_route_fault, &c);
    free(all);
    return c.faults ? -EINVAL : 0;
}

static int up_cert_self(struct up *u, const uint8_t pub[WG_KEY_LEN])
{
    char path[PATH_MAX], err[PATH_MAX + 512] = "";
    const struct cluster_node *other;
    struct cluster_node *n = &u->opt.registry_self;
    struct cert c;

    if (u->args.name || u->args.endpoint) {
        fprintf(stderr, "ddpnet up: --name and --endpoint are for joining a registry; with an "
                "authority and none, this node is what its certificate says\n");
        return CLI_EXIT_FAIL;
    }
    if (up_cert_path(u, path, sizeof(path)))
        return CLI_EXIT_FAIL;
    if (certfile_read(path, u->cert, sizeof(u->cert), err, sizeof(err)) ||
        up_cert_kept(u) < 0 || cert_parse(u->cert, &c) || c.kind != CERT_MEMBER ||
        certfile_check(path, u->cert, &u->cluster, pub, c.name, NULL, (uint64_t)time(NULL), err,
                       sizeof(err))) {
        if (!err[0] || !strstr(err, path))
            snprintf(err, sizeof(err), "%s: not a member certificate", path);
        fprintf(stderr, "ddpnet up: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    if (cert_member_node(&c, &u->cluster, n)) {
        fprintf(stderr, "ddpnet up: %s: its address is outside the cluster's network, or the "
                "network has no room\n", path);
        return CLI_EXIT_FAIL;
    }
    if (up_cert_routes(u, n, path))
        return CLI_EXIT_FAIL;
    if ((other = cluster_find_name(&u->cluster, n->name)) ||
        (other = cluster_find_address(&u->cluster, &n->address))) {
        char addr[INET6_ADDRSTRLEN];
        inet_ntop(n->address.family, n->address.bytes, addr, sizeof(addr));
        fprintf(stderr, "ddpnet up: our certificate's name %s or address %s is node %s's in "
                "%s, which wins; sign one with another --name or a free --address\n", n->name,
                addr, other->name, u->args.cluster);
        return CLI_EXIT_FAIL;
    }
    u->opt.cert = u->cert;
    u->opt.cert_self = true;
    return CLI_CONTINUE;
}

/* Our public key, and our node in the cluster file (or, with a registry,
 * who we join as). */
static int up_find_self(struct up *u)
{
    uint8_t pub[WG_KEY_LEN];
    char text[KEYFILE_B64_LEN + 1];

    if (x25519_public(pub, u->opt.private_key) != 0) {
        fprintf(stderr, "%s: not a usable private key\n", u->args.key);
        return CLI_EXIT_FAIL;
    }
    u->opt.self = cluster_find_key(&u->cluster, pub);
    const struct cluster_node *pasted = cli_key_pasted(&u->cluster, u->opt.private_key);
    if (!u->opt.self && pasted) {
        cli_key_pasted_say(u->args.cluster, u->args.key, pasted);
        return CLI_EXIT_FAIL;
    }
    if (u->opt.self && (u->args.name || u->args.endpoint))
        fprintf(stderr, "ddpnet up: this node is %s in %s: the file's entry wins over "
                "--name and --endpoint\n", u->opt.self->name, u->args.cluster);
    if (u->opt.self == NULL && u->cluster.registry.n_endpoints)
        return up_registry_self(u, pub);
    if (u->opt.self == NULL && u->cluster.has_authority)
        return up_cert_self(u, pub);
    if (u->opt.self == NULL && (u->args.name || u->args.endpoint)) {
        fprintf(stderr, "ddpnet up: --name and --endpoint are for joining a registry, and %s "
                "has none\n", u->args.cluster);
        return CLI_EXIT_FAIL;
    }
    if (u->opt.self == NULL) {
        keyfile_format(text, pub);
        fprintf(stderr, "%s: this node's public key %s is not in the cluster file\n",
                u->args.cluster, text);
        return CLI_EXIT_FAIL;
    }
    return CLI_CONTINUE;
}

/* With `[cluster] authority`: this node's certificate, read and checked
 * (signed by the authority, valid now, for our key, name and, for a node
 * the file lists, its address). A node the file lists needs none (the
 * file is its word), but one given with --cert is checked all the same. */
static int up_cert(struct up *u)
{
    const struct cluster_node *self = u->opt.self;
    char path[PATH_MAX], err[PATH_MAX + 512];
    uint8_t pub[WG_KEY_LEN];

    if (!u->cluster.has_authority) {
        if (u->args.cert)
            fprintf(stderr, "ddpnet up: --cert: %s sets no authority; the certificate is not "
                    "used\n", u->args.cluster);
        return CLI_CONTINUE;
    }
    if (u->opt.cert_self)
        return CLI_CONTINUE;
    if (up_cert_path(u, path, sizeof(path)))
        return CLI_EXIT_FAIL;
    /* A listed node's certificate is optional: where it has one beside
     * its key, it says it to strangers that join (README "Joining with an
     * authority and no server"), who count it only so. */
    if (self && !u->args.cert && access(path, F_OK) != 0)
        return CLI_CONTINUE;
    x25519_public(pub, u->opt.private_key);
    if (certfile_read(path, u->cert, sizeof(u->cert), err, sizeof(err)) ||
        up_cert_kept(u) < 0 || certfile_check(path, u->cert, &u->cluster, pub,
                       self ? self->name : u->opt.registry_self.name,
                       self ? &self->address : NULL, (uint64_t)time(NULL), err, sizeof(err))) {
        fprintf(stderr, "ddpnet up: %s\n", err);
        return CLI_EXIT_FAIL;
    }
    u->opt.cert = u->cert;
    return CLI_CONTINUE;
}

/* Paths the detached daemon keeps using after it leaves our directory, and
 * that `down` finds in the state file from wherever it is run. */
static int up_paths(struct up *u)
{
    int ret = cli_mkdir_p(u->args.run_dir, UP_RUN_DIR_MODE);

    if (ret != 0) {
        fprintf(stderr, "ddpnet up: cannot create run directory %s: %s\n",
                u->args.run_dir, strerror(-ret));
        return CLI_EXIT_FAIL;
    }
    char err[PATH_MAX + 128];
    if ((ret = cli_check_private_dir(u->args.run_dir, err, sizeof(err))) != 0) {
        fprintf(stderr, "ddpnet up: run directory %s\n", err);
        return CLI_EXIT_FAIL;
    }
    if ((ret = cli_abspath(u->args.run_dir, u->run_dir, sizeof(u->run_dir))) != 0 ||
        (ret = cli_abspath(u->args.hosts_file, u->hosts_file, sizeof(u->hosts_file))) != 0 ||
        (ret = cli_abspath(u->args.state_dir, u->state_dir, sizeof(u->state_dir))) != 0 ||
        (ret = cli_abspath(u->args.cluster, u->cluster_file, sizeof(u->cluster_file))) != 0) {
        fprintf(stderr, "ddpnet up: %s\n", strerror(-ret));
        return CLI_EXIT_FAIL;
    }
    return CLI_CONTINUE;
}

/* The checks in the order a person fixes them; CLI_CONTINUE when all pass. */
static int up_prepare(struct up *u)
{
    char err[PATH_MAX + 128];
    int ret;

    /* First: without it nothing else can be fixed by the person who ran
     * it (the key file is root's, the interface needs CAP_NET_ADMIN). */
    if (!cli_permitted())
        return cli_not_permitted("up");
    if (cli_cluster_load(u->args.cluster, &u->cluster, stderr) != 0)
        return CLI_EXIT_FAIL;
    if (keyfile_read(u->args.key, u->opt.private_key, err, sizeof(err)) != 0) {
        fprintf(stderr, "%s\n", err);
        return CLI_EXIT_FAIL;
    }
    if ((ret = up_find_self(u)) != CLI_CONTINUE || (ret = up_cert(u)) != CLI_CONTINUE)
        return ret;
    if (if_nametoindex(u->args.ifname) != 0) {
        fprintf(stderr, "ddpnet up: interface %s already exists\n", u->args.ifname);
        return CLI_EXIT_FAIL;
    }
    if ((ret = up_paths(u)) != CLI_CONTINUE)
        return ret;
    u->opt.ifname = u->args.ifname;
    u->opt.run_dir = u->run_dir;
    u->opt.hosts_file = u->hosts_file;
    u->opt.state_dir = u->state_dir;
    u->opt.cluster_path = u->cluster_file;
    u->opt.cluster = &u->cluster;
    u->opt.foreground = u->args.foreground;
    u->opt.debug = u->args.debug;
    u->opt.ready_fd = -1;
    if (!u->args.foreground && !log_syslog_reachable(LOG_SYSLOG_PATH) &&
        daemon_log_path(u->log_file, sizeof(u->log_file), u->run_dir, u->args.ifname) < 0)
        u->log_file[0] = '\0';
    return CLI_CONTINUE;
}

/* Where the daemon's lines are, for messages that send a person there. */
static const char *log_where(const struct up *u)
{
    return u->log_file[0] ? u->log_file : "syslog";
}

static int up_report_ok(const struct up *u)
{
    char addr[INET6_ADDRSTRLEN];

    if (!u->opt.self) {                   /* joined: the address is the daemon's to tell */
        printf("ddpnet: %s is up (node %s, joined %s)\n", u->args.ifname,
               u->opt.registry_self.name, u->cluster.registry.prefix);
    } else {
        if (cluster_addr_format(&u->opt.self->address, addr, sizeof(addr)) != 0)
            addr[0] = '\0';
        printf("ddpnet: %s is up (%s/%u, node %s)\n", u->args.ifname, addr,
               u->cluster.prefix, u->opt.self->name);
    }
    if (u->log_file[0])
        printf("ddpnet: no syslog here (%s): the daemon logs to %s\n", LOG_SYSLOG_PATH,
               u->log_file);
    return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
}

/* The parent's side: waits for the child's report and turns it into our
 * exit status. */
static int up_wait(const struct up *u, int fd, pid_t child)
{
    char line[UP_REPORT_MAX];
    /* Joining a registry may wait that long for etcd on its own. */
    int wait_s = UP_READY_TIMEOUT_S + (u->opt.self ? 0 : (int)REGISTRY_JOIN_TIMEOUT_S);
    int ret = cli_read_report(fd, line, sizeof(line), wait_s * (int)MS_PER_S);

    if (ret == -ETIMEDOUT) {
        /* Half set up is worse than not at all: stop it. */
        kill(child, SIGTERM);
        fprintf(stderr, "ddpnet up: the daemon did not finish setup within %d s; "
                "stopped it (see %s)\n", wait_s, log_where(u));
        return CLI_EXIT_FAIL;
    }
    if (ret < 0) {
        fprintf(stderr, "ddpnet up: reading the daemon's report: %s\n", strerror(-ret));
        return CLI_EXIT_FAIL;
    }
    if (ret == 0) {
        fprintf(stderr, "ddpnet up: daemon exited during setup (see %s)\n", log_where(u));
        return CLI_EXIT_FAIL;
    }
    if (strcmp(line, UP_READY_OK) == 0)
        return up_report_ok(u);
    fprintf(stderr, "ddpnet up: %s\n", line);
    return CLI_EXIT_FAIL;
}

/* The child: detached from our session and terminal, it becomes the
 * daemon and never returns. */
static void up_child(struct up *u, int ready_fd) __attribute__((noreturn));

static void up_child(struct up *u, int ready_fd)
{
    int null_fd;

    setsid();
    /* If `up` gave up waiting, the report must not kill the daemon. */
    signal(SIGPIPE, SIG_IGN);
    null_fd = open("/dev/null", O_RDWR);
    if (null_fd >= 0) {
        int log_fd = -1;

        if (u->log_file[0])
            log_fd = open(u->log_file, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                          UP_LOG_MODE);
        dup2(null_fd, STDIN_FILENO);
        dup2(null_fd, STDOUT_FILENO);
        dup2(log_fd >= 0 ? log_fd : null_fd, STDERR_FILENO);
        if (null_fd > STDERR_FILENO)
            close(null_fd);
        if (log_fd > STDERR_FILENO)
            close(log_fd);
    }
    /* Every path it uses is absolute (up_paths); the cluster file is read.
     * Failing only keeps the old directory busy, so it is not fatal. */
    int ignored = chdir("/");
    (void)ignored;
    u->opt.ready_fd = ready_fd;
    _exit(daemon_run(&u->opt) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL);
}

static int up_detached(struct up *u)
{
    int fds[2], ret;
    pid_t pid;

    if (pipe2(fds, O_CLOEXEC) != 0) {
        fprintf(stderr, "ddpnet up: pipe: %s\n", strerror(errno));
        return CLI_EXIT_FAIL;
    }
    /* Unflushed output would otherwise be written twice. */
    fflush(stdout);
    fflush(stderr);
    pid = fork();
    if (pid < 0) {
        fprintf(stderr, "ddpnet up: fork: %s\n", strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return CLI_EXIT_FAIL;
    }
    if (pid == 0) {
        close(fds[0]);
        up_child(u, fds[1]);
    }
    close(fds[1]);
    /* The key now lives in the daemon only. */
    sodium_memzero(u->opt.private_key, sizeof(u->opt.private_key));
    ret = up_wait(u, fds[0], pid);
    close(fds[0]);
    return ret;
}

int cli_up(int argc, char **argv)
{
    struct up u;
    int ret;

    memset(&u, 0, sizeof(u));
    ret = cli_args_handle(argc, argv, UP_ALLOWED, UP_REQUIRED, UP_USAGE, &u.args);
    if (ret != CLI_CONTINUE)
        return ret;
    if (crypto_core_init() != 0) {
        fprintf(stderr, "ddpnet up: cannot initialise libsodium\n");
        return CLI_EXIT_FAIL;
    }
    ret = up_prepare(&u);
    if (ret == CLI_CONTINUE && u.args.foreground) {
        /* daemon_run takes the cluster over and wipes the key. */
        ret = daemon_run(&u.opt) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
        sodium_memzero(u.opt.private_key, sizeof(u.opt.private_key));
        return ret;
    }
    if (ret == CLI_CONTINUE)
        ret = up_detached(&u);
    sodium_memzero(u.opt.private_key, sizeof(u.opt.private_key));
    cluster_free(&u.cluster);
    return ret;
}
