/* SPDX-License-Identifier: MIT */
/* The etcd of etcd tests (etcd_fixture.h): finding it, starting it,
 * waiting for it, and killing and removing it on every way out. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "overlay/registry/etcd.h"
#include "tests/unit/etcd_fixture.h"

#define START_TIMEOUT_MS 10000
#define START_TRIES      3
/* The scratch directory: base/ddpnet-etcd-PID-XXXXXX. */
#define DIR_PREFIX       "ddpnet-etcd-"

struct etcd_fixture etcd_fixture;

static pid_t etcd_pid = -1;
static char etcd_path[512];

int64_t etcd_fixture_now_ms(void)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

void etcd_fixture_sleep_ms(unsigned ms)
{
    struct timespec t = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };

    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static bool find_in_path(const char *name, char *out, size_t len)
{
    const char *path = getenv("PATH");
    char copy[4096], *save = NULL;

    snprintf(copy, sizeof(copy), "%s", path ? path : "/usr/local/bin:/usr/bin:/bin");
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(out, len, "%s/%s", d, name);
        if (access(out, X_OK) == 0)
            return true;
    }
    out[0] = '\0';
    return false;
}

int etcd_fixture_free_port(void)
{
    struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t len = sizeof(sa);
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;

    if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
        getsockname(fd, (struct sockaddr *)&sa, &len) == 0)
        port = ntohs(sa.sin_port);
    if (fd >= 0)
        close(fd);
    return port;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* From a signal handler: rm -rf the scratch directory with only
 * async-signal-safe calls (fork, execve, waitpid). */
static void remove_dir_from_handler(void)
{
    static char *const no_env[] = { NULL };
    char *const argv[] = { "rm", "-rf", etcd_fixture.dir, NULL };
    pid_t pid;

    if (!etcd_fixture.dir[0] || (pid = fork()) < 0)
        return;
    if (pid == 0) {
        execve("/bin/rm", argv, no_env);
        _exit(127);
    }
    waitpid(pid, NULL, 0);
}

/* Kills etcd (async-signal-safe) and, when asked, removes the scratch
 * directory (not from a signal handler: nftw allocates). */
static void stop_etcd(bool remove_dir)
{
    if (etcd_pid > 0) {
        kill(etcd_pid, SIGKILL);
        waitpid(etcd_pid, NULL, 0);
        etcd_pid = -1;
    }
    if (remove_dir && etcd_fixture.dir[0]) {
        nftw(etcd_fixture.dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        etcd_fixture.dir[0] = '\0';
    }
    etcd_fixture.up = false;
}

void etcd_fixture_stop(void)
{
    stop_etcd(true);
}

static void at_exit(void)
{
    stop_etcd(true);
}

static void on_signal(int sig)
{
    stop_etcd(false);
    remove_dir_from_handler();
    signal(sig, SIG_DFL);
    raise(sig);
}

static void noop_kv(void *ctx, const struct etcd_kv *kv)
{
    (void)ctx, (void)kv;
}

/* One try at starting etcd on fresh ports: true once it answers. */
static bool start_once(const char *const *extra_args)
{
    char data[160], log[160], client_url[64], peer_url[64], cluster[96];
    const char *const fixed[] = {
        "etcd", "--name", "default", "--data-dir", data,
        "--listen-client-urls", client_url, "--advertise-client-urls", client_url,
        "--listen-peer-urls", peer_url, "--initial-advertise-peer-urls", peer_url,
        "--initial-cluster", cluster, "--logger", "zap", "--log-level", "error",
    };
    const char *argv[sizeof(fixed) / sizeof(fixed[0]) + ETCD_FIXTURE_EXTRA_MAX + 1];
    int client_port = etcd_fixture_free_port(), peer_port = etcd_fixture_free_port();
    size_t n = 0;
    pid_t parent = getpid();
    int64_t deadline;

    if (client_port < 0 || peer_port < 0 || client_port == peer_port)
        return false;
    snprintf(data, sizeof(data), "%s/data", etcd_fixture.dir);
    snprintf(log, sizeof(log), "%s/etcd.log", etcd_fixture.dir);
    snprintf(client_url, sizeof(client_url), "http://127.0.0.1:%d", client_port);
    snprintf(peer_url, sizeof(peer_url), "http://127.0.0.1:%d", peer_port);
    snprintf(cluster, sizeof(cluster), "default=%s", peer_url);
    for (size_t i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++)
        argv[n++] = fixed[i];
    for (size_t i = 0; extra_args && extra_args[i]; i++)
        argv[n++] = extra_args[i];                    /* counted by etcd_fixture_start */
    argv[n] = NULL;
    nftw(data, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    etcd_pid = fork();
    if (etcd_pid < 0)
        return false;
    if (etcd_pid == 0) {
        /* Dies with us, however we die. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
            _exit(127);
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        if (fd >= 0) {
            dup2(fd, STDOUT_FILENO);
            dup2(fd, STDERR_FILENO);
        }
        execv(etcd_path, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    snprintf(etcd_fixture.url, sizeof(etcd_fixture.url), "%s", client_url);
    deadline = etcd_fixture_now_ms() + START_TIMEOUT_MS;
    while (etcd_fixture_now_ms() < deadline) {
        const char *urls[] = { etcd_fixture.url };
        struct etcd_config c = { .urls = urls, .n_urls = 1, .timeout_ms = 500 };
        struct etcd *e = etcd_new(&c);
        int ret = e ? etcd_get(e, "/", noop_kv, NULL) : -ENOMEM;
        etcd_free(e);
        if (ret == 0)
            return true;
        if (waitpid(etcd_pid, NULL, WNOHANG) == etcd_pid) {     /* a port was taken meanwhile */
            etcd_pid = -1;
            return false;
        }
        etcd_fixture_sleep_ms(50);
    }
    stop_etcd(false);
    return false;
}

/* What a run killed by SIGKILL left behind (etcd itself died with it):
 * base/ddpnet-etcd-PID-* of a PID that is gone. */
static void remove_stale(const char *base)
{
    DIR *d = opendir(base);
    struct dirent *de;
    char path[PATH_MAX];

    while (d && (de = readdir(d))) {
        long pid;
        char rest[32];
        if (sscanf(de->d_name, DIR_PREFIX "%ld-%31s", &pid, rest) != 2 || pid <= 0 ||
            kill((pid_t)pid, 0) == 0 || errno != ESRCH)
            continue;
        snprintf(path, sizeof(path), "%s/%s", base, de->d_name);
        nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
    }
    if (d)
        closedir(d);
}

int etcd_fixture_start(const char *const *extra_args)
{
    const char *base = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    size_t n_extra = 0;

    while (extra_args && extra_args[n_extra])
        n_extra++;
    if (n_extra > ETCD_FIXTURE_EXTRA_MAX) {
        print_message("etcd_fixture_start: %zu extra arguments, at most %d\n", n_extra,
                      ETCD_FIXTURE_EXTRA_MAX);
        return -1;
    }
    if (!find_in_path("etcd", etcd_path, sizeof(etcd_path))) {
        etcd_fixture.why = "no etcd on PATH (Debian: etcd-server)";
        return 0;
    }
    find_in_path("etcdctl", etcd_fixture.etcdctl, sizeof(etcd_fixture.etcdctl));
    remove_stale(base);
    snprintf(etcd_fixture.dir, sizeof(etcd_fixture.dir), "%s/" DIR_PREFIX "%ld-XXXXXX", base,
             (long)getpid());
    if (!mkdtemp(etcd_fixture.dir)) {
        etcd_fixture.dir[0] = '\0';
        etcd_fixture.why = "cannot make a scratch directory";
        return 0;
    }
    atexit(at_exit);
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    signal(SIGHUP, on_signal);
    for (int tries = 0; tries < START_TRIES && !etcd_fixture.up; tries++)
        etcd_fixture.up = start_once(extra_args);
    if (!etcd_fixture.up) {
        char log[160], line[256];
        FILE *f;
        snprintf(log, sizeof(log), "%s/etcd.log", etcd_fixture.dir);
        if ((f = fopen(log, "r"))) {
            while (fgets(line, sizeof(line), f))
                print_message("etcd: %s", line);
            fclose(f);
        }
        /* etcd is there and would not start: a failure, not a skip. */
        print_message("etcd did not answer within %d ms\n", START_TIMEOUT_MS);
        return -1;
    }
    return 0;
}
