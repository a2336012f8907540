/* SPDX-License-Identifier: MIT */
/* The CLI's shared parts: the option table and its parser, the messages
 * several verbs print, and the checks `up` and `down` make on the system
 * (privilege, directories, the state file, processes, interfaces). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <linux/capability.h>
#include <linux/ethtool.h>
#include <linux/sockios.h>
#include <net/if.h>
#include <poll.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/wg_const.h"
#include "overlay/base/clock.h"
#include "overlay/cli/cli_args.h"
#include "overlay/daemon/daemon.h"

/* Room for one error line about an argument. */
#define CLI_ERR_MAX        512u
/* What the process name of a ddpnet daemon begins with. */
#define CLI_PROC_NAME      "ddpnet"
/* The ethtool driver name of a TUN device. */
#define CLI_TUN_DRIVER     "tun"
/* The keys of the state file (daemon.h). */
#define CLI_STATE_PID      "pid"
#define CLI_STATE_HOSTS    "hosts"
#define CLI_PID_TEXT_MAX   16      /* "pid=" digits: an int and its NUL, with room */
#define CLI_NS_DIGITS      9       /* decimals of a second that cli_args_seconds keeps */
#define CLI_SECONDS_MAX    10000000000ull   /* 10^10 s: its ns fit a uint64_t */

enum opt_value {
    OPT_FLAG,                 /* takes no value */
    OPT_VALUE,                /* needs one */
    /* May go without: a separate one is taken only when it looks like a
     * number, so "--watch -i x" keeps its -i and "--watch x" its x. */
    OPT_MAYBE,
};

struct opt_def {
    enum cli_opt bit;
    char short_name;          /* 0: long form only */
    const char *long_name;
    enum opt_value value;
    const char *arg;          /* its value's name in --help ("" for a flag) */
    const char *help;         /* what it does, and its default */
};

static const struct opt_def opt_defs[] = {
    { CLI_OPT_CLUSTER,    'c', "cluster",    OPT_VALUE, "FILE",
      "the cluster file, ddpnet.conf(5); the service reads /etc/ddpnet/IFNAME.conf" },
    { CLI_OPT_KEY,        'k', "key",        OPT_VALUE, "FILE",
      "this node's private key as `ddpnet genkey` writes it, root's and mode 0600; "
      "the service reads /etc/ddpnet/IFNAME.key" },
    { CLI_OPT_INTERFACE,  'i', "interface",  OPT_VALUE, "NAME",
      "the overlay interface (default " DAEMON_DEFAULT_IFNAME ")" },
    { CLI_OPT_RUN_DIR,    0,   "run-dir",    OPT_VALUE, "DIR",
      "where the control socket IFNAME.sock, the env socket IFNAME.env and the state "
      "file IFNAME.state are (default " DAEMON_DEFAULT_RUN_DIR ")" },
    { CLI_OPT_STATE_DIR,  0,   "state-dir",  OPT_VALUE, "DIR",
      "what the node keeps across restarts and reboots: with an authority, the "
      "revocations it took, IFNAME.revoked (default " DAEMON_DEFAULT_STATE_DIR ")" },
    { CLI_OPT_HOSTS_FILE, 0,   "hosts-file", OPT_VALUE, "FILE",
      "the file that gets the cluster's names block (default " DAEMON_DEFAULT_HOSTS ")" },
    { CLI_OPT_FOREGROUND, 0,   "foreground", OPT_FLAG,  "",
      "stay attached and log to stderr (default: detach once up, log to syslog, or "
      "to RUN_DIR/IFNAME.log where there is none)" },
    { CLI_OPT_DEBUG,      0,   "debug",      OPT_FLAG,  "",
      "log debug lines too (default: info and above)" },
    { CLI_OPT_JSON,       0,   "json",       OPT_FLAG,  "",
      "print one JSON object, for scripts (default: a table)" },
    { CLI_OPT_MASTER,     0,   "master",     OPT_VALUE, "NAME",
      "the node whose overlay address becomes MASTER_ADDR (default the cluster file's "
      "first node; in a file of no node, the lowest registered address)" },
    { CLI_OPT_WATCH,      'w', "watch",      OPT_MAYBE, "[SECONDS]",
      "redraw every SECONDS, from 0.1 to 3600 (default 1), with rates, until q or Ctrl-C" },
    { CLI_OPT_NAME,       0,   "name",       OPT_VALUE, "NAME",
      "joining a registry: this node's name (default the hostname)" },
    { CLI_OPT_ENDPOINT,   0,   "endpoint",   OPT_VALUE, "HOST:PORT",
      "joining a registry: the address and port others reach this node at (default "
      "none: found by discovery, as a node without `endpoint`)" },
    { CLI_OPT_CERT,       0,   "cert",       OPT_VALUE, "FILE",
      "with [cluster] authority: this node's certificate (default the key file's path "
      "with .cert in place of .key)" },
    { CLI_OPT_RATE,       0,   "rate",       OPT_FLAG,  "",
      "doctor: a few seconds' rate probe per reached peer (default: none)" },
};
#define N_OPT_DEFS (sizeof(opt_defs) / sizeof(opt_defs[0]))

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;

    if (err != NULL && errlen > 0) {
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* The kernel's rules for a link name (dev_valid_name), plus no '%'
 * (a template) and no control characters (unprintable in messages). */
static bool ifname_valid(const char *s)
{
    size_t n = strlen(s);

    if (n == 0 || n >= IFNAMSIZ || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
        return false;
    for (const char *p = s; *p; p++) {
        unsigned char c = (unsigned char)*p;
        if (c == '/' || c == ':' || c == '%' || c == ' ' || iscntrl(c))
            return false;
    }
    return true;
}

/* The definition arg names among the allowed ones, or NULL. *value gets
 * the text after '=' (long) or after the letter (short), else NULL;
 * *shown how many characters of arg name the option. */
static const struct opt_def *opt_find(const char *arg, unsigned allowed,
                                      const char **value, int *shown)
{
    bool is_long = arg[1] == '-';
    const char *name = arg + (is_long ? 2 : 1);
    size_t n = is_long ? strcspn(name, "=") : 1;

    *shown = (int)(name - arg + n);
    *value = name[n] ? name + n + (is_long ? 1 : 0) : NULL;
    for (size_t i = 0; i < N_OPT_DEFS; i++) {
        const struct opt_def *d = &opt_defs[i];
        if (!(allowed & d->bit))
            continue;
        if (is_long ? strlen(d->long_name) == n && strncmp(d->long_name, name, n) == 0
                    : d->short_name != 0 && d->short_name == name[0])
            return d;
    }
    return NULL;
}

int cli_args_seconds(const char *s, uint64_t *ns)
{
    uint64_t whole = 0, frac = 0, scale = WG_NSEC_PER_SEC;
    size_t digits = 0, decimals = 0;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++, digits++) {
        whole = whole * 10 + (uint64_t)(*p - '0');
        if (whole > CLI_SECONDS_MAX)
            return -ERANGE;
    }
    if (*p == '.') {
        for (p++; *p >= '0' && *p <= '9'; p++, decimals++) {
            if (decimals == CLI_NS_DIGITS)
                return -EINVAL;     /* finer than a nanosecond: a typo */
            scale /= 10;
            frac += (uint64_t)(*p - '0') * scale;
        }
    }
    if (*p != '\0' || digits + decimals == 0)
        return -EINVAL;
    *ns = whole * WG_NSEC_PER_SEC + frac;
    return 0;
}

/* "2", "-1", ".5": what may follow an option whose value is optional. */
static bool looks_like_number(const char *s)
{
    if (*s == '-' || *s == '+')
        s++;
    return (*s >= '0' && *s <= '9') || *s == '.';
}

static int store_watch(struct cli_args *a, const char *value, int shown, const char *arg,
                       char *err, size_t errlen)
{
    uint64_t ns = CLI_WATCH_DEFAULT_NS;

    if (value != NULL && (cli_args_seconds(value, &ns) != 0 || ns < CLI_WATCH_MIN_NS ||
                          ns > CLI_WATCH_MAX_NS))
        return fail(err, errlen, "option '%.*s' wants seconds from 0.1 to 3600, not '%s'",
                    shown, arg, value);
    a->watch = true;
    a->watch_ns = ns;
    return 0;
}

static void opt_store(struct cli_args *a, enum cli_opt bit, const char *value)
{
    switch (bit) {
    case CLI_OPT_CLUSTER:    a->cluster = value; break;
    case CLI_OPT_KEY:        a->key = value; break;
    case CLI_OPT_INTERFACE:  a->ifname = value; break;
    case CLI_OPT_RUN_DIR:    a->run_dir = value; break;
    case CLI_OPT_HOSTS_FILE: a->hosts_file = value; break;
    case CLI_OPT_STATE_DIR:  a->state_dir = value; break;
    case CLI_OPT_MASTER:     a->master = value; break;
    case CLI_OPT_NAME:       a->name = value; break;
    case CLI_OPT_ENDPOINT:   a->endpoint = value; break;
    case CLI_OPT_CERT:       a->cert = value; break;
    case CLI_OPT_FOREGROUND: a->foreground = true; break;
    case CLI_OPT_DEBUG:      a->debug = true; break;
    case CLI_OPT_JSON:       a->json = true; break;
    case CLI_OPT_RATE:       a->rate = true; break;
    case CLI_OPT_WATCH:      break;   /* store_watch: its value is checked */
    }
}

/* "-c/--cluster" or "--run-dir", for messages about a definition. */
static void opt_describe(const struct opt_def *d, char *buf, size_t len)
{
    if (d->short_name)
        snprintf(buf, len, "-%c/--%s", d->short_name, d->long_name);
    else
        snprintf(buf, len, "--%s", d->long_name);
}

static bool looks_like_option(const char *s)
{
    return s[0] == '-' && s[1] != '\0';
}

/* One option at argv[*i] (advanced past a separate value). */
static int parse_one(int argc, char **argv, int *i, unsigned allowed,
                     struct cli_args *a, unsigned *seen, char *err, size_t errlen)
{
    const char *arg = argv[*i], *value;
    int shown;
    const struct opt_def *d = opt_find(arg, allowed, &value, &shown);

    if (d == NULL)
        return fail(err, errlen, "unknown option '%.*s'", shown, arg);
    if (d->value == OPT_FLAG && value != NULL)
        return fail(err, errlen, "option '%.*s' takes no value", shown, arg);
    if (d->value != OPT_FLAG && value == NULL && *i + 1 < argc &&
        (d->value == OPT_MAYBE ? looks_like_number(argv[*i + 1])
                               : !looks_like_option(argv[*i + 1])))
        value = argv[++*i];
    if (d->value == OPT_VALUE && (value == NULL || *value == '\0'))
        return fail(err, errlen, "option '%.*s' needs a value", shown, arg);
    if (d->bit == CLI_OPT_WATCH) {
        int ret = store_watch(a, value, shown, arg, err, errlen);
        if (ret != 0)
            return ret;
    }
    opt_store(a, d->bit, value);
    *seen |= d->bit;
    return 0;
}

static int check_required(unsigned required, unsigned seen, char *err, size_t errlen)
{
    char name[64];

    for (size_t i = 0; i < N_OPT_DEFS; i++) {
        if ((required & opt_defs[i].bit) && !(seen & opt_defs[i].bit)) {
            opt_describe(&opt_defs[i], name, sizeof(name));
            return fail(err, errlen, "missing option %s", name);
        }
    }
    return 0;
}

int cli_args_parse(int argc, char **argv, unsigned allowed, unsigned required,
                   struct cli_args *a, char *err, size_t errlen)
{
    unsigned seen = 0;
    bool options_ended = false;
    int i, ret;

    memset(a, 0, sizeof(*a));
    a->ifname = DAEMON_DEFAULT_IFNAME;
    a->run_dir = DAEMON_DEFAULT_RUN_DIR;
    a->hosts_file = DAEMON_DEFAULT_HOSTS;
    a->state_dir = DAEMON_DEFAULT_STATE_DIR;
    a->watch_ns = CLI_WATCH_DEFAULT_NS;
    if (err != NULL && errlen > 0)
        err[0] = '\0';
    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (options_ended || !looks_like_option(arg))
            return fail(err, errlen, "unexpected argument '%s'", arg);
        if (strcmp(arg, "--") == 0) {
            options_ended = true;
        } else if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
            a->help = true;
            return 0;
        } else if ((ret = parse_one(argc, argv, &i, allowed, a, &seen, err, errlen)) != 0) {
            return ret;
        }
    }
    if ((ret = check_required(required, seen, err, errlen)) != 0)
        return ret;
    if ((allowed & CLI_OPT_INTERFACE) && !ifname_valid(a->ifname))
        return fail(err, errlen, "invalid interface name '%s'", a->ifname);
    return 0;
}

/* The running verb's one line, for its --help (cli_main sets it). */
static const char *verb_summary;

void cli_args_summary(const char *summary)
{
    verb_summary = summary;
}

void cli_args_help_wrap(FILE *out, int indent, const char *text)
{
    const size_t room = (size_t)(HELP_LINE_WIDTH - indent);
    size_t col = 0;

    while (*text) {
        size_t word = strcspn(text, " ");
        if (col > 0 && col + 1 + word > room) {
            fprintf(out, "\n%*s", indent, "");
            col = 0;
        } else if (col > 0) {
            fputc(' ', out);
            col++;
        }
        fprintf(out, "%.*s", (int)word, text);
        col += word;
        text += word;
        text += strspn(text, " ");
    }
    fputc('\n', out);
}

void cli_args_help(FILE *out, const char *verb, unsigned allowed, unsigned required,
                   const char *usage)
{
    char name[64], text[512];

    fprintf(out, "usage: ddpnet %s%s%s\n", verb, *usage ? " " : "", usage);
    if (verb_summary)
        fprintf(out, "\n%s.\n", verb_summary);
    fprintf(out, "\noptions:\n");
    for (size_t i = 0; i < N_OPT_DEFS; i++) {
        const struct opt_def *d = &opt_defs[i];
        if (!(allowed & d->bit))
            continue;
        if (d->short_name)
            snprintf(name, sizeof(name), "-%c, --%s%s%s", d->short_name, d->long_name,
                     *d->arg ? " " : "", d->arg);
        else
            snprintf(name, sizeof(name), "    --%s%s%s", d->long_name, *d->arg ? " " : "",
                     d->arg);
        /* A name that fills the column gets the text on a line of its own. */
        if (strlen(name) + 1 > HELP_NAME_WIDTH)
            fprintf(out, "  %s\n  %-*s", name, HELP_NAME_WIDTH, "");
        else
            fprintf(out, "  %-*s", HELP_NAME_WIDTH, name);
        snprintf(text, sizeof(text), "%s%s", d->help, (required & d->bit) ? " (required)" : "");
        cli_args_help_wrap(out, HELP_NAME_WIDTH + 2, text);
    }
    fprintf(out, "  %-*s%s\n", HELP_NAME_WIDTH, "-h, --help", "show this help and exit");
    fprintf(out, "\nMore in ddpnet(8) (man 8 ddpnet); the cluster file in ddpnet.conf(5).\n");
}

int cli_args_handle(int argc, char **argv, unsigned allowed, unsigned required,
                    const char *usage, struct cli_args *a)
{
    char err[CLI_ERR_MAX];
    const char *verb = argc > 0 ? argv[0] : "?";
    const char *sep = *usage ? " " : "";

    if (cli_args_parse(argc, argv, allowed, required, a, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddpnet %s: %s\nusage: ddpnet %s%s%s\n(ddpnet %s --help explains "
                "each option)\n", verb, err, verb, sep, usage, verb);
        return CLI_EXIT_USAGE;
    }
    if (a->help) {
        cli_args_help(stdout, verb, allowed, required, usage);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    return CLI_CONTINUE;
}

int cli_cluster_load(const char *path, struct cluster *c, FILE *errs)
{
    struct cluster_diag diag;
    char line[PATH_MAX + CLUSTER_DIAG_MSG_LEN + 32];
    int ret = cluster_load(path, c, &diag);

    if (ret == 0)
        return 0;
    if (diag.n == 0) {
        fprintf(errs, "%s: %s\n", path, strerror(-ret));
        return ret;
    }
    for (size_t i = 0; i < diag.n; i++) {
        /* A truncated line is still the best we can print. */
        (void)cluster_diag_format(&diag, i, path, line, sizeof(line));
        fprintf(errs, "%s\n", line);
    }
    if (diag.dropped > 0)
        fprintf(errs, "%s: %zu more error%s not shown\n", path, diag.dropped,
                diag.dropped == 1 ? "" : "s");
    return ret;
}

const struct cluster_node *cli_key_pasted(const struct cluster *c,
                                          const uint8_t priv[CLUSTER_KEY_LEN])
{
    const struct cluster_node *found = NULL;

    for (size_t i = 0; i < c->n_nodes; i++)
        if (sodium_memcmp(c->nodes[i].public_key, priv, CLUSTER_KEY_LEN) == 0)
            found = &c->nodes[i];
    return found;
}

void cli_key_pasted_say(const char *cluster, const char *keyfile, const struct cluster_node *n)
{
    fprintf(stderr, "%s:%d: node %s's public-key is this node's PRIVATE key (from %s): put "
            "the output of `ddpnet pubkey < %s` there; whoever has seen the file has the "
            "key: make a new one (ddpnet genkey) if it was shared\n", cluster, n->line,
            n->name, keyfile, keyfile);
}

bool cli_permitted(void)
{
    struct __user_cap_header_struct hdr = { _LINUX_CAPABILITY_VERSION_3, 0 };
    struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
    const unsigned bits = 8u * sizeof(data[0].effective);

    if (geteuid() == 0)
        return true;
    memset(data, 0, sizeof(data));
    if (syscall(SYS_capget, &hdr, data) != 0)
        return false;
    return (data[CAP_NET_ADMIN / bits].effective >> (CAP_NET_ADMIN % bits)) & 1u;
}

int cli_not_permitted(const char *verb)
{
    fprintf(stderr, "ddpnet %s: not permitted: run as root (or with CAP_NET_ADMIN)\n",
            verb);
    return CLI_EXIT_FAIL;
}

static int mkdir_one(const char *dir, mode_t mode)
{
    struct stat st;

    if (mkdir(dir, mode) == 0)
        return 0;
    if (errno != EEXIST)
        return -errno;
    if (stat(dir, &st) != 0)
        return -errno;
    return S_ISDIR(st.st_mode) ? 0 : -ENOTDIR;
}

int cli_check_private_dir(const char *path, char *err, size_t errlen)
{
    struct stat st;

    if (stat(path, &st) != 0) {
        int e = errno;
        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    if (!S_ISDIR(st.st_mode)) {
        snprintf(err, errlen, "%s: not a directory", path);
        return -ENOTDIR;
    }
    if (st.st_uid != 0 && st.st_uid != geteuid()) {
        snprintf(err, errlen, "%s: owned by uid %u, not by root; run: chown root %s", path,
                 (unsigned)st.st_uid, path);
        return -EPERM;
    }
    if (st.st_mode & (S_IWGRP | S_IWOTH)) {
        snprintf(err, errlen, "%s: permissions %04o let others write in it; run: chmod go-w %s",
                 path, (unsigned)st.st_mode & 07777u, path);
        return -EPERM;
    }
    return 0;
}

int cli_mkdir_p(const char *path, mode_t mode)
{
    char buf[PATH_MAX];
    size_t n = path ? strlen(path) : 0;
    int ret;

    if (n == 0)
        return -EINVAL;
    if (n >= sizeof(buf))
        return -ENAMETOOLONG;
    memcpy(buf, path, n + 1);
    /* Each prefix that ends before a '/', then the whole path. */
    for (char *p = buf + 1; ; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        ret = mkdir_one(buf, mode);
        if (ret != 0 || saved == '\0')
            return ret;
        *p = saved;
    }
}

int cli_abspath(const char *path, char *out, size_t len)
{
    char cwd[PATH_MAX];
    int n;

    if (path == NULL || *path == '\0')
        return -EINVAL;
    if (path[0] == '/') {
        n = snprintf(out, len, "%s", path);
    } else {
        if (getcwd(cwd, sizeof(cwd)) == NULL)
            return -errno;
        n = snprintf(out, len, "%s%s%s", cwd, strcmp(cwd, "/") == 0 ? "" : "/", path);
    }
    if (n < 0 || (size_t)n >= len)
        return -ENAMETOOLONG;
    return 0;
}

/* Decimal digits only, within pid_t, above 1 (never init, never a group). */
static int pid_parse(const char *s, size_t n, pid_t *pid)
{
    long long v = 0;

    if (n == 0)
        return -EBADMSG;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return -EBADMSG;
        v = v * 10 + (s[i] - '0');
        if (v > INT_MAX)
            return -EBADMSG;
    }
    if (v <= 1)
        return -EBADMSG;
    *pid = (pid_t)v;
    return 0;
}

int cli_state_parse(const char *text, size_t len, pid_t *pid, char *hosts,
                    size_t hosts_len)
{
    char value[CLI_PID_TEXT_MAX];
    int ret;

    *pid = 0;
    if (hosts_len == 0)
        return -ENAMETOOLONG;
    hosts[0] = '\0';
    ret = cli_state_value(text, len, CLI_STATE_PID, value, sizeof(value));
    if (ret == -ENAMETOOLONG || (ret == 0 && pid_parse(value, strlen(value), pid)))
        return -EBADMSG;
    if (ret)
        return ret;
    return cli_state_value(text, len, CLI_STATE_HOSTS, hosts, hosts_len);
}

int cli_state_value(const char *text, size_t len, const char *key, char *out, size_t out_len)
{
    const char *p = text, *end = text + len;
    size_t k = strlen(key);

    if (out_len == 0)
        return -ENAMETOOLONG;
    out[0] = '\0';
    if (len > 0 && memchr(text, '\0', len) != NULL)
        return -EBADMSG;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((nl ? nl : end) - p);
        if (n > k && memcmp(p, key, k) == 0 && p[k] == '=') {
            if (n - k - 1 >= out_len)
                return -ENAMETOOLONG;
            memcpy(out, p + k + 1, n - k - 1);
            out[n - k - 1] = '\0';
            return 0;
        }
        p = nl ? nl + 1 : end;
    }
    return 0;
}

/* Reads /proc/PID/NAME into buf (NUL-terminated); returns the bytes read
 * or -errno. */
static ssize_t proc_read(pid_t pid, const char *name, char *buf, size_t len)
{
    char path[64];
    FILE *f;
    size_t n;

    snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
    f = fopen(path, "re");
    if (f == NULL)
        return -errno;
    n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = '\0';
    return (ssize_t)n;
}

/* /proc/PID/stat's state field follows the last ')' (the name between
 * the parentheses may hold any character). */
bool cli_process_alive(pid_t pid)
{
    char buf[512];
    const char *rp;

    if (pid <= 0 || proc_read(pid, "stat", buf, sizeof(buf)) <= 0)
        return false;
    rp = strrchr(buf, ')');
    return rp != NULL && rp[1] == ' ' && rp[2] != '\0' && rp[2] != 'Z' && rp[2] != 'X';
}

static bool has_prefix(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

bool cli_process_is_ddpnet(pid_t pid)
{
    char buf[PATH_MAX];
    const char *base;

    if (pid <= 1 || !cli_process_alive(pid))
        return false;
    if (proc_read(pid, "comm", buf, sizeof(buf)) > 0 && has_prefix(buf, CLI_PROC_NAME))
        return true;
    /* argv[0] ends at the first NUL, which proc_read kept. */
    if (proc_read(pid, "cmdline", buf, sizeof(buf)) <= 0)
        return false;
    base = strrchr(buf, '/');
    return has_prefix(base ? base + 1 : buf, CLI_PROC_NAME);
}

int cli_link_is_tun(const char *ifname)
{
    struct ethtool_drvinfo info;
    struct ifreq ifr;
    int fd, ret;

    if (ifname == NULL || !ifname_valid(ifname))
        return -EINVAL;
    memset(&info, 0, sizeof(info));
    memset(&ifr, 0, sizeof(ifr));
    info.cmd = ETHTOOL_GDRVINFO;
    memcpy(ifr.ifr_name, ifname, strlen(ifname));
    ifr.ifr_data = (char *)&info;
    /* Any socket reaches the interfaces of our network namespace. */
    fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -errno;
    ret = ioctl(fd, SIOCETHTOOL, &ifr) == 0 ? 0 : -errno;
    close(fd);
    if (ret == -EOPNOTSUPP)
        return 0;     /* a driver without ethtool is not tun */
    if (ret != 0)
        return ret;
    return strncmp(info.driver, CLI_TUN_DRIVER, sizeof(info.driver)) == 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * MS_PER_S + ts.tv_nsec / (long)NS_PER_MS;
}

int cli_read_report(int fd, char *line, size_t cap, int timeout_ms)
{
    int64_t deadline = now_ms() + timeout_ms;
    struct pollfd p = { .fd = fd, .events = POLLIN };
    size_t len = 0;
    ssize_t got;

    if (cap == 0)
        return -EINVAL;
    if (fd < 0)
        return -EBADF;    /* poll would ignore it and wait out the time */
    while (len + 1 < cap) {
        int64_t left = deadline - now_ms();
        int n = left > 0 ? poll(&p, 1, (int)left) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -errno;
        if (n == 0)
            return -ETIMEDOUT;
        /* A byte at a time: the line is short, and nothing after it matters. */
        got = read(fd, line + len, 1);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0)
            return -errno;
        if (got == 0 || line[len] == '\n')
            break;
        len++;
    }
    line[len] = '\0';
    return (int)len;
}
