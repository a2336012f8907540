/* SPDX-License-Identifier: MIT */
/* `ddpnet down`: stops a node from the outside. Deleting the interface
 * first stops even a daemon that hangs (it notices its TUN went away);
 * then SIGTERM, a bounded wait, and the cleanup of what the daemon would
 * have cleaned itself: the hosts block and the run-directory files. It
 * signals a pid only after checking the process is a ddpnet daemon. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/daemon/daemon.h"
#include "overlay/membership/hosts.h"
#include "tun/netlink.h"

#define DOWN_USAGE    "[-i IFNAME] [--run-dir DIR]"
#define DOWN_ALLOWED  (CLI_OPT_INTERFACE | CLI_OPT_RUN_DIR)
/* How long the daemon has to exit after SIGTERM, polled in steps. */
#define DOWN_WAIT_MS  5000
#define DOWN_POLL_MS  50
#define DOWN_MS_PER_S 1000
#define DOWN_NS_PER_MS 1000000L
/* What the TUN driver writes in a queue's /proc/PID/fdinfo/FD. */
#define DOWN_TUN_FDINFO "iff:\t"
#define DOWN_FDINFO_MAX 512
#define DOWN_SOCK_SUFFIX ".sock"
/* A state file is a pid and a path; anything longer is not ours. */
#define DOWN_STATE_MAX (2 * PATH_MAX + 64)   /* pid, hosts and cluster lines */

struct down {
    const char *ifname;
    char state_path[PATH_MAX];
    char socket_path[PATH_MAX], env_path[PATH_MAX];
    bool state_exists;        /* the file is there, readable or not */
    pid_t pid;                /* 0: unknown */
    char hosts[PATH_MAX];     /* "": unknown */
    int status;               /* CLI_EXIT_FAIL once any step failed */
};

/* Reads the state file into d. Returns 0, -ENOENT, or another error after
 * saying so (the file is there but we cannot use it). */
static int down_read_state(struct down *d)
{
    char text[DOWN_STATE_MAX + 1];
    ssize_t n;
    int fd, ret;

    fd = open(d->state_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return -errno;
    d->state_exists = true;
    n = read(fd, text, sizeof(text));
    ret = n < 0 ? -errno : (size_t)n > DOWN_STATE_MAX ? -EFBIG : 0;
    close(fd);
    if (ret == 0)
        ret = cli_state_parse(text, (size_t)n, &d->pid, d->hosts, sizeof(d->hosts));
    if (ret != 0) {
        fprintf(stderr, "ddpnet down: %s: %s; its daemon and hosts entries are left "
                "as they are\n", d->state_path,
                ret == -EBADMSG || ret == -EFBIG ? "not a ddpnet state file" : strerror(-ret));
        d->pid = 0;
        d->hosts[0] = '\0';
        d->status = CLI_EXIT_FAIL;
    }
    return ret;
}

static void down_delete_link(struct down *d)
{
    struct nl nl;
    int ret;

    memset(&nl, 0, sizeof(nl));
    ret = nl_open(&nl);
    if (ret == 0)
        ret = nl_link_delete(&nl, d->ifname);
    nl_close(&nl);
    /* -ENODEV: the daemon removed it meanwhile, which is what we wanted. */
    if (ret != 0 && ret != -ENODEV) {
        fprintf(stderr, "ddpnet down: cannot delete %s: %s\n", d->ifname, strerror(-ret));
        d->status = CLI_EXIT_FAIL;
    }
}

static void sleep_ms(long ms)
{
    struct timespec ts = { ms / DOWN_MS_PER_S, (ms % DOWN_MS_PER_S) * DOWN_NS_PER_MS };

    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* Waits until pid has exited; true if it did within DOWN_WAIT_MS. A pidfd
 * says so exactly, even for a process that is not our child; without one
 * (older kernels), poll its liveness. */
static bool down_wait_exit(pid_t pid, int pidfd)
{
    struct pollfd p = { .fd = pidfd, .events = POLLIN };

    if (pidfd >= 0) {
        int n;
        while ((n = poll(&p, 1, DOWN_WAIT_MS)) < 0 && errno == EINTR)
            ;
        return n > 0;
    }
    for (long waited = 0; waited < DOWN_WAIT_MS; waited += DOWN_POLL_MS) {
        if (!cli_process_alive(pid))
            return true;
        sleep_ms(DOWN_POLL_MS);
    }
    return !cli_process_alive(pid);
}

/* Sends sig through the pidfd when we have one (it cannot reach a process
 * that reused the pid), else by pid. */
static int down_signal(pid_t pid, int pidfd, int sig)
{
    if (pidfd >= 0)
        return pidfd_send_signal(pidfd, sig, NULL, 0);
    return kill(pid, sig);
}

static void down_stop_daemon(struct down *d)
{
    /* Opened before the check, so the check is about the process we signal. */
    int pidfd = pidfd_open(d->pid, 0);

    if (!cli_process_is_ddpnet(d->pid))
        goto out;           /* gone already, or the pid belongs to another */
    if (down_signal(d->pid, pidfd, SIGTERM) != 0 && errno != ESRCH) {
        fprintf(stderr, "ddpnet down: cannot stop the daemon (pid %d): %s\n",
                (int)d->pid, strerror(errno));
        d->status = CLI_EXIT_FAIL;
        goto out;
    }
    if (down_wait_exit(d->pid, pidfd))
        goto out;
    fprintf(stderr, "ddpnet down: the daemon (pid %d) did not exit within %d s; "
            "killing it\n", (int)d->pid, DOWN_WAIT_MS / DOWN_MS_PER_S);
    if (cli_process_is_ddpnet(d->pid))
        down_signal(d->pid, pidfd, SIGKILL);
    down_wait_exit(d->pid, pidfd);
out:
    if (pidfd >= 0)
        close(pidfd);
}

static void down_remove_hosts(struct down *d)
{
    int ret = hosts_remove(d->hosts, d->ifname);

    if (ret == 0 || ret == -ENOENT)
        return;
    if (ret == -EBADMSG)
        fprintf(stderr, "ddpnet down: %s: the ddpnet %s block is damaged; remove "
                "it by hand\n", d->hosts, d->ifname);
    else
        fprintf(stderr, "ddpnet down: %s: %s\n", d->hosts, strerror(-ret));
    d->status = CLI_EXIT_FAIL;
}

static void down_unlink(struct down *d, const char *path)
{
    if (unlink(path) != 0 && errno != ENOENT) {
        fprintf(stderr, "ddpnet down: cannot remove %s: %s\n", path, strerror(errno));
        d->status = CLI_EXIT_FAIL;
    }
}

/* --- the daemon found by its interface, when the state file is not where we
 * looked (the wrong --run-dir) ---------------------------------------------- */

/* Whether fd's fdinfo says it is a TUN queue of ifname. */
static bool fd_is_tun_of(const char *pid_dir, const char *fd, const char *ifname)
{
    char path[PATH_MAX], text[DOWN_FDINFO_MAX + 1];
    const char *iff;
    ssize_t n;
    int f;

    if (snprintf(path, sizeof(path), "%s/fdinfo/%s", pid_dir, fd) >= (int)sizeof(path))
        return false;
    f = open(path, O_RDONLY | O_CLOEXEC);
    if (f < 0)
        return false;
    n = read(f, text, DOWN_FDINFO_MAX);
    close(f);
    if (n <= 0)
        return false;
    text[n] = '\0';
    iff = strstr(text, DOWN_TUN_FDINFO);
    if (!iff)
        return false;
    iff += strlen(DOWN_TUN_FDINFO);
    return strncmp(iff, ifname, strlen(ifname)) == 0 && iff[strlen(ifname)] == '\n';
}

/* Whether the process at pid_dir lives in our network namespace (the same
 * interface name may exist in another) and holds a TUN queue of ifname. */
static bool holds_tun(const char *pid_dir, const char *ifname)
{
    char path[PATH_MAX];
    struct stat ours, theirs;
    struct dirent *e;
    bool found = false;
    DIR *d;

    if (snprintf(path, sizeof(path), "%s/ns/net", pid_dir) >= (int)sizeof(path) ||
        stat(path, &theirs) != 0 || stat("/proc/self/ns/net", &ours) != 0 ||
        theirs.st_ino != ours.st_ino || theirs.st_dev != ours.st_dev)
        return false;
    snprintf(path, sizeof(path), "%s/fd", pid_dir);
    d = opendir(path);
    if (!d)
        return false;
    while (!found && (e = readdir(d)) != NULL)
        found = isdigit((unsigned char)e->d_name[0]) && fd_is_tun_of(pid_dir, e->d_name, ifname);
    closedir(d);
    return found;
}

/* The ddpnet process holding ifname's TUN, or 0. */
static pid_t find_tun_holder(const char *ifname)
{
    char pid_dir[64];
    struct dirent *e;
    pid_t found = 0;
    DIR *d = opendir("/proc");

    if (!d)
        return 0;
    while (!found && (e = readdir(d)) != NULL) {
        long pid;
        char *end;

        if (!isdigit((unsigned char)e->d_name[0]))
            continue;
        pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 1 || pid == (long)getpid() || !cli_process_is_ddpnet((pid_t)pid))
            continue;
        snprintf(pid_dir, sizeof(pid_dir), "/proc/%ld", pid);
        if (holds_tun(pid_dir, ifname))
            found = (pid_t)pid;
    }
    closedir(d);
    return found;
}

/* The path of the listening unix socket with inode ino in our network
 * namespace (/proc/net/unix), into out. 0 or -ENOENT. */
static int unix_socket_path(unsigned long ino, char *out, size_t len)
{
    char line[PATH_MAX + 128];
    FILE *f = fopen("/proc/self/net/unix", "re");
    int ret = -ENOENT;

    if (!f)
        return -ENOENT;
    while (ret != 0 && fgets(line, sizeof(line), f)) {
        unsigned long inode;
        int path_at = 0;

        /* Num RefCount Protocol Flags Type St Inode Path */
        if (sscanf(line, "%*s %*s %*s %*s %*s %*s %lu %n", &inode, &path_at) != 1 ||
            inode != ino || path_at == 0 || line[path_at] != '/')
            continue;
        line[strcspn(line, "\n")] = '\0';
        if (snprintf(out, len, "%s", line + path_at) < (int)len)
            ret = 0;
    }
    fclose(f);
    return ret;
}

/* The run directory pid's control socket is in: the directory of its
 * listening socket named IFNAME.sock. 0 or -ENOENT. */
static int holder_run_dir(pid_t pid, const char *ifname, char *run_dir, size_t len)
{
    char dir[64], link[PATH_MAX], sock[PATH_MAX], want[IF_NAMESIZE + 8];
    struct dirent *e;
    int ret = -ENOENT;
    DIR *d;

    snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
    snprintf(want, sizeof(want), "/%s%s", ifname, DOWN_SOCK_SUFFIX);
    d = opendir(dir);
    if (!d)
        return -ENOENT;
    while (ret != 0 && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        unsigned long ino;
        ssize_t n;
        size_t sl;

        if (snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) >= (int)sizeof(path))
            continue;
        n = readlink(path, link, sizeof(link) - 1);
        if (n <= 0)
            continue;
        link[n] = '\0';
        if (sscanf(link, "socket:[%lu]", &ino) != 1 || unix_socket_path(ino, sock, sizeof(sock)))
            continue;
        sl = strlen(sock);
        if (sl <= strlen(want) || strcmp(sock + sl - strlen(want), want))
            continue;
        sock[sl - strlen(want)] = '\0';
        if (snprintf(run_dir, len, "%s", sock) < (int)len)
            ret = 0;
    }
    closedir(d);
    return ret;
}

/* No state file where we looked, yet ifname exists: the daemon holding it
 * says where its run directory is. Then down goes on with that directory,
 * said on stderr; else it stops the daemon it found, or none, and says
 * what it could not find (the exit status is then a failure). */
static void down_find_elsewhere(struct down *d, const char *run_dir)
{
    pid_t pid = find_tun_holder(d->ifname);
    char other[PATH_MAX];

    if (pid == 0) {
        fprintf(stderr, "ddpnet down: no state file at %s and no ddpnet daemon holds %s: "
                "removing the interface only; a hosts block or control socket of it "
                "stay where its --run-dir names them\n", d->state_path, d->ifname);
        d->status = CLI_EXIT_FAIL;
        return;
    }
    if (holder_run_dir(pid, d->ifname, other, sizeof(other)) != 0 ||
        daemon_state_path(d->state_path, sizeof(d->state_path), other, d->ifname) < 0 ||
        daemon_socket_path(d->socket_path, sizeof(d->socket_path), other, d->ifname) < 0 ||
        down_read_state(d) != 0) {
        fprintf(stderr, "ddpnet down: no state file in %s; stopping the daemon that holds "
                "%s (pid %d), whose run directory was not found: its hosts block and "
                "control socket stay\n", run_dir, d->ifname, (int)pid);
        d->pid = pid;
        d->hosts[0] = '\0';
        d->status = CLI_EXIT_FAIL;
        return;
    }
    fprintf(stderr, "ddpnet down: no state file in %s; the daemon of %s (pid %d) runs "
            "with --run-dir %s: stopping it there\n", run_dir, d->ifname, (int)d->pid, other);
}

/* The run-directory paths; CLI_CONTINUE or an exit status. */
static int down_paths(struct down *d, const struct cli_args *a)
{
    if (daemon_state_path(d->state_path, sizeof(d->state_path), a->run_dir, a->ifname) < 0 ||
        daemon_socket_path(d->socket_path, sizeof(d->socket_path), a->run_dir, a->ifname) < 0 ||
        daemon_env_socket_path(d->env_path, sizeof(d->env_path), a->run_dir, a->ifname) < 0) {
        fprintf(stderr, "ddpnet down: run directory path too long: %s\n", a->run_dir);
        return CLI_EXIT_FAIL;
    }
    return CLI_CONTINUE;
}

/* Refuses to delete an interface that ddpnet did not make. */
static int down_check_link(const struct down *d)
{
    int tun = cli_link_is_tun(d->ifname);

    if (tun == 1 || tun == -ENODEV)
        return CLI_CONTINUE;
    if (tun == 0)
        fprintf(stderr, "ddpnet down: %s is not a ddpnet interface (not a TUN "
                "device); leaving it alone\n", d->ifname);
    else
        fprintf(stderr, "ddpnet down: cannot inspect %s: %s\n", d->ifname,
                strerror(-tun));
    return CLI_EXIT_FAIL;
}

int cli_down(int argc, char **argv)
{
    struct cli_args a;
    struct down d;
    bool link_exists;
    int ret = cli_args_handle(argc, argv, DOWN_ALLOWED, 0, DOWN_USAGE, &a);

    if (ret != CLI_CONTINUE)
        return ret;
    if (!cli_permitted())
        return cli_not_permitted("down");
    memset(&d, 0, sizeof(d));
    d.ifname = a.ifname;
    if ((ret = down_paths(&d, &a)) != CLI_CONTINUE)
        return ret;
    (void)down_read_state(&d);
    link_exists = if_nametoindex(d.ifname) != 0;
    if (!link_exists && !d.state_exists) {
        fprintf(stderr, "ddpnet down: %s is not up (no interface, no state file at %s)\n",
                d.ifname, d.state_path);
        return CLI_EXIT_FAIL;
    }
    if (link_exists) {
        if ((ret = down_check_link(&d)) != CLI_CONTINUE)
            return ret;
        if (!d.state_exists)
            down_find_elsewhere(&d, a.run_dir);
        down_delete_link(&d);
    }
    if (d.pid > 0)
        down_stop_daemon(&d);
    if (d.hosts[0] != '\0')
        down_remove_hosts(&d);
    down_unlink(&d, d.socket_path);
    down_unlink(&d, d.env_path);
    down_unlink(&d, d.state_path);
    printf("ddpnet: %s is down\n", d.ifname);
    return d.status;
}
