/* SPDX-License-Identifier: MIT */
/* `ddpnet authority VERB`: the cluster authority's side of signed
 * membership (config/cert.h), with no daemon involved. init writes the
 * authority's secret key file and prints its public key; pubkey prints it
 * again; sign prints a member certificate (signed by the authority, or by
 * a join token on the new machine itself); token prints a join token;
 * revoke a revocation; show explains any of these lines to a person.
 *
 * The options are this file's own table (the sub-verbs share them, and
 * no other verb takes them); tests/packaging.sh reads it as it reads
 * cli_args.c's, so each is in ddpnet(8). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/routes.h"
#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "overlay/daemon/keyfile.h"

#define DEFAULT_OUTPUT      "authority.key"
#define DEFAULT_MEMBER_S    (365u * 86400u)     /* sign: a year */
#define DEFAULT_TOKEN_S     (7u * 86400u)       /* token: a week */
#define DURATION_MAX_S      (100ull * 365u * 86400u)
/* A statement starts this long before it was made: a member whose clock
 * runs a little behind the signer's must not find it not yet valid. */
#define BACKDATE_S          300u
#define INPUT_MAX           4096u   /* a statement file; more is not one */
#define ERR_MAX             512u
#define POSITIONAL_MAX      1u

enum auth_opt {
    AUTH_OPT_OUTPUT     = 1u << 0,
    AUTH_OPT_SECRET     = 1u << 1,
    AUTH_OPT_NAME       = 1u << 2,
    AUTH_OPT_PUBLIC_KEY = 1u << 3,
    AUTH_OPT_KEY        = 1u << 4,
    AUTH_OPT_ADDRESS    = 1u << 5,
    AUTH_OPT_ALIASES    = 1u << 6,
    AUTH_OPT_VALID      = 1u << 7,
    AUTH_OPT_NOT_BEFORE = 1u << 8,
    AUTH_OPT_TOKEN      = 1u << 9,
    AUTH_OPT_PREFIX     = 1u << 10,
    AUTH_OPT_MAX        = 1u << 11,
    AUTH_OPT_ID         = 1u << 12,
    AUTH_OPT_AUTHORITY  = 1u << 13,
    AUTH_OPT_WITHIN     = 1u << 14,
    AUTH_OPT_GROUPS     = 1u << 15,
    AUTH_OPT_ROUTES     = 1u << 16,
};

struct auth_opt_def {
    enum auth_opt bit;
    char short_name;
    const char *long_name;
    const char *arg;
    const char *help;
};

static const struct auth_opt_def auth_opts[] = {
    { AUTH_OPT_OUTPUT,     'o', "output",        "FILE",
      "init: where to write the authority's secret key, mode 0600, never over an existing "
      "file (default " DEFAULT_OUTPUT ")" },
    { AUTH_OPT_SECRET,     'a', "authority-key", "FILE",
      "the authority's secret key file, as `ddpnet authority init` writes it" },
    { AUTH_OPT_NAME,       0,   "name",          "NAME",
      "the member's node name (through a token: starting with the token's prefix)" },
    { AUTH_OPT_PUBLIC_KEY, 0,   "public-key",    "KEY",
      "the member's WireGuard public key, as `ddpnet pubkey` prints it (or -k)" },
    { AUTH_OPT_KEY,        'k', "key",           "FILE",
      "the member's private key file: its public key is certified (instead of --public-key)" },
    { AUTH_OPT_ADDRESS,    0,   "address",       "ADDR",
      "a fixed overlay address for the member (default none: the cluster's rule)" },
    { AUTH_OPT_ALIASES,    0,   "aliases",       "A,B",
      "more names the member is known by, comma-separated, at most 4 (default none)" },
    { AUTH_OPT_ROUTES,     0,   "routes",        "PREFIX,...",
      "sign: prefixes the member carries for the cluster, as `routes` in the cluster file "
      "(through a token: inside the token's); token: the prefixes its members may carry "
      "(default none: a token grants no route)" },
    { AUTH_OPT_VALID,      0,   "valid",         "DURATION",
      "how long it is valid: a number and s, m, h, d or w, as 30d, 12h, 90m (default: "
      "sign 365d, through a token until the token expires; token 7d; renew the lifetime "
      "it had)" },
    { AUTH_OPT_NOT_BEFORE, 0,   "not-before",    "TIME",
      "valid from TIME: unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ, UTC (default "
      "now, less 5 minutes for clocks that run behind)" },
    { AUTH_OPT_TOKEN,      0,   "token",         "FILE",
      "sign with the join token in FILE (- for stdin) instead of the authority's key" },
    { AUTH_OPT_PREFIX,     0,   "name-prefix",   "PREFIX",
      "token: the names it may sign start with PREFIX, e.g. spot-" },
    { AUTH_OPT_MAX,        0,   "max",           "N",
      "token: at most N members held by the cluster, the first come (default 0: 256, "
      "the most a member holds for one token)" },
    { AUTH_OPT_ID,         0,   "id",            "HEX",
      "revoke: the statement's id (64 hex digits, as `ddpnet authority show` prints)" },
    { AUTH_OPT_AUTHORITY,  0,   "authority",     "KEY",
      "show: the authority's public key to verify against (default: not verified); renew: "
      "a key whose certificates are renewed too, the old one while the authority's key is "
      "rotated (default: the signing key's alone)" },
    { AUTH_OPT_GROUPS,     0,   "groups",        "A,B",
      "the groups the cluster file's [rules] know the member by (sign), or that the "
      "token's members may carry (token), comma-separated, at most 8 (default none; "
      "sign through a token: the token's)" },
    { AUTH_OPT_WITHIN,     0,   "within",        "DURATION",
      "renew: re-sign a certificate that ends within DURATION (default: a third of its "
      "lifetime)" },
};
#define N_AUTH_OPTS (sizeof(auth_opts) / sizeof(auth_opts[0]))

struct auth_args {
    const char *value[N_AUTH_OPTS];
    unsigned seen;
    const char *positional[POSITIONAL_MAX];
    unsigned n_positional;
    bool help;
};

struct auth_verb {
    const char *name;
    int (*run)(const char *verb, const struct auth_args *a);
    unsigned allowed, required;
    unsigned positional;             /* how many it takes at most */
    const char *usage;
    const char *help;
};

/* --- options ------------------------------------------------------------------ */

static const char *opt_value(const struct auth_args *a, enum auth_opt bit)
{
    for (size_t i = 0; i < N_AUTH_OPTS; i++)
        if (auth_opts[i].bit == bit)
            return (a->seen & bit) ? a->value[i] : NULL;
    return NULL;
}

static const struct auth_opt_def *opt_find(const char *arg, unsigned allowed, const char **value,
                                           size_t *index)
{
    bool is_long = arg[1] == '-';
    const char *name = arg + (is_long ? 2 : 1);
    size_t n = is_long ? strcspn(name, "=") : 1;

    *value = name[n] ? name + n + (is_long ? 1 : 0) : NULL;
    for (size_t i = 0; i < N_AUTH_OPTS; i++) {
        const struct auth_opt_def *d = &auth_opts[i];

        if (!(allowed & d->bit))
            continue;
        if (is_long ? strlen(d->long_name) == n && !strncmp(d->long_name, name, n)
                    : d->short_name != 0 && d->short_name == name[0]) {
            *index = i;
            return d;
        }
    }
    return NULL;
}

static void opt_describe(const struct auth_opt_def *d, char *buf, size_t len)
{
    if (d->short_name)
        snprintf(buf, len, "-%c/--%s", d->short_name, d->long_name);
    else
        snprintf(buf, len, "--%s", d->long_name);
}

/* As cli_args_parse: "-a FILE", "-aFILE", "--name NAME", "--name=NAME";
 * "--" ends the options; "-" alone is an argument (stdin). */
static int args_parse(const struct auth_verb *v, int argc, char **argv, struct auth_args *a,
                      char *err, size_t errlen)
{
    bool ended = false;

    memset(a, 0, sizeof(*a));
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        const struct auth_opt_def *d;
        size_t index = 0;

        if (ended || arg[0] != '-' || arg[1] == '\0') {
            if (a->n_positional == v->positional) {
                snprintf(err, errlen, "unexpected argument '%s'", arg);
                return -EINVAL;
            }
            a->positional[a->n_positional++] = arg;
            continue;
        }
        if (!strcmp(arg, "--")) {
            ended = true;
            continue;
        }
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            a->help = true;
            return 0;
        }
        d = opt_find(arg, v->allowed, &value, &index);
        if (!d) {
            snprintf(err, errlen, "unknown option '%.*s'", (int)strcspn(arg, "="), arg);
            return -EINVAL;
        }
        if (!value && i + 1 < argc)
            value = argv[++i];
        if (!value || !*value) {
            snprintf(err, errlen, "option '%.*s' needs a value", (int)strcspn(arg, "="), arg);
            return -EINVAL;
        }
        a->value[index] = value;
        a->seen |= d->bit;
    }
    for (size_t i = 0; i < N_AUTH_OPTS; i++) {
        if ((v->required & auth_opts[i].bit) && !(a->seen & auth_opts[i].bit)) {
            char name[48];

            opt_describe(&auth_opts[i], name, sizeof(name));
            snprintf(err, errlen, "missing option %s", name);
            return -EINVAL;
        }
    }
    return 0;
}

static void verb_help(FILE *out, const struct auth_verb *v)
{
    char text[512];
    char name[64];

    fprintf(out, "usage: ddpnet authority %s%s%s\n\n%s.\n\noptions:\n", v->name,
            *v->usage ? " " : "", v->usage, v->help);
    for (size_t i = 0; i < N_AUTH_OPTS; i++) {
        const struct auth_opt_def *d = &auth_opts[i];

        if (!(v->allowed & d->bit))
            continue;
        if (d->short_name)
            snprintf(name, sizeof(name), "-%c, --%s %s", d->short_name, d->long_name, d->arg);
        else
            snprintf(name, sizeof(name), "    --%s %s", d->long_name, d->arg);
        fprintf(out, "  %-*s ", HELP_NAME_WIDTH, name);
        snprintf(text, sizeof(text), "%s%s", d->help,
                 (v->required & d->bit) ? " (required)" : "");
        cli_args_help_wrap(out, HELP_NAME_WIDTH + 3, text);
    }
    fprintf(out, "  %-*s %s\n", HELP_NAME_WIDTH, "-h, --help", "show this help and exit");
    fprintf(out, "\nMore in ddpnet(8) (man 8 ddpnet), under authority, and in the\n"
            "source's docs/authority.md.\n");
}

/* --- values ------------------------------------------------------------------- */

static int say(const char *verb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* "ddpnet authority VERB: ..." on stderr; returns CLI_EXIT_FAIL. */
static int say(const char *verb, const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "ddpnet authority %s: ", verb);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    return CLI_EXIT_FAIL;
}

/* "30d": digits and one unit of s, m, h, d, w, from 1 s to 100 years. */
static int duration_parse(const char *s, uint64_t *seconds)
{
    static const struct { char unit; uint64_t mult; } units[] = {
        { 's', 1 }, { 'm', 60 }, { 'h', 3600 }, { 'd', 86400 }, { 'w', 7 * 86400 },
    };
    uint64_t n = 0;
    const char *p = s;

    for (; *p >= '0' && *p <= '9'; p++) {
        n = n * 10 + (uint64_t)(*p - '0');
        if (n > DURATION_MAX_S)
            return -ERANGE;
    }
    if (p == s || p[0] == '\0' || p[1] != '\0')
        return -EINVAL;
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (units[i].unit == *p) {
            if (n == 0 || n > DURATION_MAX_S / units[i].mult)
                return -ERANGE;
            *seconds = n * units[i].mult;
            return 0;
        }
    }
    return -EINVAL;
}

/* Unix seconds, YYYY-MM-DD or YYYY-MM-DDTHH:MM:SSZ (UTC). */
static int time_parse(const char *s, uint64_t *out)
{
    static const char *const formats[] = { "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%d" };
    struct tm tm;
    size_t digits = strspn(s, "0123456789");

    if (digits > 0 && s[digits] == '\0' && digits <= 12) {
        *out = strtoull(s, NULL, 10);
        return 0;
    }
    for (size_t i = 0; i < sizeof(formats) / sizeof(formats[0]); i++) {
        const char *end;
        time_t t;

        memset(&tm, 0, sizeof(tm));
        end = strptime(s, formats[i], &tm);
        if (end && *end == '\0' && (t = timegm(&tm)) >= 0) {
            *out = (uint64_t)t;
            return 0;
        }
    }
    return -EINVAL;
}

/* "2026-11-26 22:10:00 UTC" */
static const char *time_str(uint64_t t, char *buf, size_t cap)
{
    time_t tt = (time_t)t;
    struct tm tm;

    if (t > (uint64_t)INT64_MAX / 2 || !gmtime_r(&tt, &tm) ||
        strftime(buf, cap, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
        snprintf(buf, cap, "%" PRIu64 " (unix seconds)", t);
    return buf;
}

static uint64_t now_s(void)
{
    return (uint64_t)time(NULL);
}

/* Reads a file (or stdin for "-") of at most INPUT_MAX bytes into buf,
 * NUL-terminated. 0 or -errno, with a line in err. */
static int read_input(const char *path, char *buf, size_t cap, char *err, size_t errlen)
{
    int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY) : STDIN_FILENO;
    size_t len = 0;
    ssize_t n;

    if (fd < 0) {
        int e = errno;

        snprintf(err, errlen, "%s: %s", path, strerror(e));
        return -e;
    }
    while (len + 1 < cap && (n = read(fd, buf + len, cap - 1 - len)) != 0) {
        if (n < 0) {
            int e = errno;

            if (e == EINTR)
                continue;
            snprintf(err, errlen, "%s: %s", path, strerror(e));
            if (fd != STDIN_FILENO)
                close(fd);
            return -e;
        }
        len += (size_t)n;
    }
    if (fd != STDIN_FILENO)
        close(fd);
    buf[len] = '\0';
    if (len + 1 == cap || strlen(buf) != len) {
        snprintf(err, errlen, "%s: too long or not text, not one ddpnet statement", path);
        return -EINVAL;
    }
    return 0;
}

/* A statement given on the command line: the line itself when it starts
 * with "ddpnet-", else a file (- for stdin) that holds it. */
static int statement_text(const char *arg, char *buf, size_t cap, char *err, size_t errlen)
{
    if (!strncmp(arg, "ddpnet-", 7)) {
        snprintf(buf, cap, "%s", arg);
        return 0;
    }
    return read_input(arg, buf, cap, err, errlen);
}

/* The authority's secret key file: the owner's alone, as ssh wants of a
 * private key, and of the form init writes. */
static int read_secret(const char *verb, const char *path, uint8_t secret[CERT_SECRET_LEN])
{
    char text[INPUT_MAX], err[ERR_MAX];
    uint8_t wg[CERT_PUBKEY_LEN];
    struct stat st;
    int ret;

    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077)) {
        say(verb, "%s: permissions %04o are too open for the authority's secret key; run: "
            "chmod 600 %s", path, (unsigned)st.st_mode & 07777u, path);
        return -EPERM;
    }
    if ((ret = read_input(path, text, sizeof(text), err, sizeof(err))) != 0) {
        say(verb, "%s", err);
        return ret;
    }
    ret = cert_secret_parse(text, secret);
    if (ret != 0) {
        if (keyfile_parse(text, strlen(text), wg) == 0)
            say(verb, "%s: a WireGuard key, not the authority's secret key (`ddpnet authority "
                "init` writes one)", path);
        else
            say(verb, "%s: not an authority secret key (expected one line "
                "ddpnet-authority-secret:..., as `ddpnet authority init` writes)", path);
    }
    sodium_memzero(text, sizeof(text));
    sodium_memzero(wg, sizeof(wg));
    return ret;
}

static int lifetime(const char *verb, const struct auth_args *a, uint64_t default_s,
                    uint64_t *nb, uint64_t *na)
{
    const char *valid = opt_value(a, AUTH_OPT_VALID), *from = opt_value(a, AUTH_OPT_NOT_BEFORE);
    uint64_t duration = default_s, start = now_s() - BACKDATE_S;

    if (valid && duration_parse(valid, &duration) != 0)
        return say(verb, "invalid --valid '%s' (expected a number and s, m, h, d or w, as "
                   "30d, 12h or 90m; at most 100 years)", valid), -EINVAL;
    if (from && time_parse(from, &start) != 0)
        return say(verb, "invalid --not-before '%s' (expected unix seconds, YYYY-MM-DD or "
                   "YYYY-MM-DDTHH:MM:SSZ)", from), -EINVAL;
    /* backdating gives clocks room, not the holder more time */
    *nb = start;
    *na = (from ? start : start + BACKDATE_S) + duration;
    return 0;
}

/* Writes line and a newline on stdout, failing when stdout cannot take it. */
static int print_line(const char *verb, const char *line)
{
    if (puts(line) == EOF || fflush(stdout) != 0)
        return say(verb, "cannot write to stdout");
    return CLI_EXIT_OK;
}

/* As genkey: a secret going into a file others may read deserves a word. */
static void warn_if_stdout_open(const char *verb, const char *what)
{
    struct stat st;

    if (fstat(STDOUT_FILENO, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 077))
        fprintf(stderr, "ddpnet authority %s: warning: writing %s to a file others may "
                "read\n", verb, what);
}

static void hex(const uint8_t *b, size_t len, char *out)
{
    sodium_bin2hex(out, 2 * len + 1, b, len);
}

/* --- init, pubkey --------------------------------------------------------------- */

static int write_secret(const char *verb, const char *path, const uint8_t secret[CERT_SECRET_LEN])
{
    char line[CERT_SECRET_TEXT_MAX + 1];
    size_t len;
    int fd, ret = 0;

    if (cert_secret_format(secret, line, sizeof(line) - 1) != 0)
        return say(verb, "cannot format the key"), -EINVAL;
    len = strlen(line);
    line[len++] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) {
        ret = -errno;
        if (ret == -EEXIST)
            say(verb, "%s exists; not overwriting an authority key (remove it first, or "
                "choose another file with -o)", path);
        else
            say(verb, "%s: %s", path, strerror(-ret));
        sodium_memzero(line, sizeof(line));
        return ret;
    }
    if (fchmod(fd, 0600) != 0 || write(fd, line, len) != (ssize_t)len || fsync(fd) != 0)
        ret = -errno ? -errno : -EIO;
    if (close(fd) != 0 && ret == 0)
        ret = -errno;
    sodium_memzero(line, sizeof(line));
    if (ret != 0) {
        unlink(path);
        say(verb, "%s: %s", path, strerror(-ret));
    }
    return ret;
}

static int do_init(const char *verb, const struct auth_args *a)
{
    const char *path = opt_value(a, AUTH_OPT_OUTPUT);
    uint8_t pub[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    char key[CERT_KEY_TEXT_LEN + 1];
    int ret;

    path = path ? path : DEFAULT_OUTPUT;
    if (cert_keypair(pub, secret) != 0)
        return say(verb, "cannot make a key pair (libsodium)");
    ret = write_secret(verb, path, secret);
    sodium_memzero(secret, sizeof(secret));
    if (ret != 0)
        return CLI_EXIT_FAIL;
    cert_key_format(pub, key);
    fprintf(stderr, "ddpnet authority init: wrote the secret key to %s (mode 0600); keep it "
            "off the cluster's nodes. The public key below goes into the cluster file as "
            "`authority = KEY`.\n", path);
    return print_line(verb, key);
}

static int do_pubkey(const char *verb, const struct auth_args *a)
{
    uint8_t secret[CERT_SECRET_LEN];
    char key[CERT_KEY_TEXT_LEN + 1];

    if (read_secret(verb, opt_value(a, AUTH_OPT_SECRET), secret) != 0)
        return CLI_EXIT_FAIL;
    cert_key_format(secret + CERT_SECRET_LEN - CERT_PUBKEY_LEN, key);
    sodium_memzero(secret, sizeof(secret));
    return print_line(verb, key);
}

/* --- sign ------------------------------------------------------------------------ */

static int member_key(const char *verb, const struct auth_args *a, uint8_t pub[CERT_PUBKEY_LEN])
{
    const char *text = opt_value(a, AUTH_OPT_PUBLIC_KEY), *file = opt_value(a, AUTH_OPT_KEY);
    uint8_t priv[WG_KEY_LEN];
    char err[ERR_MAX];
    int ret;

    if (!text == !file)
        return say(verb, "give the member's key once: --public-key KEY or -k KEYFILE"), -EINVAL;
    if (text) {
        if (cert_key_parse(text, pub) != 0)
            return say(verb, "invalid --public-key '%s' (expected 44 base64 characters, as "
                       "`ddpnet pubkey` prints)", text), -EINVAL;
        return 0;
    }
    ret = keyfile_read(file, priv, err, sizeof(err));
    if (ret == 0)
        ret = x25519_public(pub, priv);
    sodium_memzero(priv, sizeof(priv));
    if (ret != 0)
        return say(verb, "%s", err), ret;
    return 0;
}

/* --groups A,B into n and g: names a rule may use, none twice. */
static int parse_groups(const char *verb, const char *text, uint8_t *n,
                        char g[][RULES_GROUP_NAME_MAX + 1])
{
    *n = 0;
    for (const char *p = text; p && *p;) {
        size_t len = strcspn(p, ",");

        if (*n == CERT_GROUPS_MAX)
            return say(verb, "too many --groups (at most %u)", CERT_GROUPS_MAX), -EINVAL;
        if (len == 0 || len > RULES_GROUP_NAME_MAX)
            return say(verb, "invalid --groups '%s' (names of at most %u characters, "
                       "separated by commas)", text, RULES_GROUP_NAME_MAX), -EINVAL;
        memcpy(g[*n], p, len);
        g[*n][len] = '\0';
        if (!rules_group_name_valid(g[*n]))
            return say(verb, "invalid group '%s' (letters, digits, '-' and '_'; not any)",
                       g[*n]), -EINVAL;
        for (uint8_t i = 0; i < *n; i++)
            if (!strcasecmp(g[i], g[*n]))
                return say(verb, "--groups names '%s' twice", g[*n]), -EINVAL;
        (*n)++;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* --routes into routes[] (issue 60), as the cluster file's `routes`. */
static int routes_opt(const char *verb, const struct auth_args *a, struct cluster_route *routes,
                      uint8_t *n)
{
    const char *value = opt_value(a, AUTH_OPT_ROUTES), *why = NULL;
    char bad[CLUSTER_ROUTE_TEXT_MAX + 1];

    *n = 0;
    if (!value)
        return 0;
    if (cluster_routes_parse(value, routes, n, &why, bad, sizeof(bad)) != 0)
        return say(verb, "invalid --routes: %s: %s", bad, why), -EINVAL;
    for (uint8_t i = 0; i < *n; i++)
        for (uint8_t j = 0; j < i; j++)
            if (cluster_route_overlaps(&routes[i], &routes[j]))
                return say(verb, "invalid --routes: two of them overlap (%s)", value), -EINVAL;
    return 0;
}

static void print_routes(const char *label, uint8_t n, const struct cluster_route *r)
{
    char t[CLUSTER_ROUTE_TEXT_MAX + 1];

    if (!n)
        return;
    printf("%s", label);
    for (uint8_t i = 0; i < n; i++)
        printf(" %s", cluster_route_format(&r[i], t, sizeof(t)) ? "?" : t);
    printf("\n");
}

static int member_fields(const char *verb, const struct auth_args *a, struct cert *c)
{
    const char *name = opt_value(a, AUTH_OPT_NAME), *addr = opt_value(a, AUTH_OPT_ADDRESS);
    const char *aliases = opt_value(a, AUTH_OPT_ALIASES);

    memset(c, 0, sizeof(*c));
    c->kind = CERT_MEMBER;
    if (strlen(name) > CLUSTER_NAME_MAX || !cluster_name_valid(name))
        return say(verb, "invalid --name '%s' (letters, digits, '-' and '.', at most %u, not "
                   "starting or ending with '-' or '.')", name, CLUSTER_NAME_MAX), -EINVAL;
    snprintf(c->name, sizeof(c->name), "%s", name);
    if (member_key(verb, a, c->subject) != 0)
        return -EINVAL;
    if (addr) {
        c->has_address = true;
        if (cluster_addr_parse(addr, &c->address) != 0 || cluster_addr_is_loopback(&c->address))
            return say(verb, "invalid --address '%s' (an IPv4 or IPv6 host address of the "
                       "cluster's network)", addr), -EINVAL;
    }
    for (const char *p = aliases; p && *p;) {
        size_t len = strcspn(p, ",");

        if (c->n_aliases == CLUSTER_ALIASES_MAX)
            return say(verb, "too many --aliases (at most %u)", CLUSTER_ALIASES_MAX), -EINVAL;
        if (len == 0 || len > CLUSTER_NAME_MAX)
            return say(verb, "invalid --aliases '%s' (hostnames of at most %u characters, "
                       "separated by commas)", aliases, CLUSTER_NAME_MAX), -EINVAL;
        memcpy(c->aliases[c->n_aliases], p, len);
        c->aliases[c->n_aliases][len] = '\0';
        if (!cluster_hostname_valid(c->aliases[c->n_aliases]))
            return say(verb, "invalid alias '%s' (a hostname: letters, digits and '-')",
                       c->aliases[c->n_aliases]), -EINVAL;
        c->n_aliases++;
        p += len + (p[len] == ',');
    }
    if (parse_groups(verb, opt_value(a, AUTH_OPT_GROUPS), &c->n_groups, c->groups) != 0)
        return -EINVAL;
    return routes_opt(verb, a, c->routes, &c->n_routes);
}

/* The member's lifetime through a token: by default the token's end; the
 * name inside its prefix; never outside its lifetime. */
static int fit_token(const char *verb, const struct auth_args *a, const struct cert *token,
                     struct cert *c)
{
    char from[48], to[48];
    size_t plen = strlen(token->name);
    enum cert_verdict v = cert_verify(token, token->signer, now_s());

    if (v != CERT_OK)
        return say(verb, "the join token is %s (valid %s to %s)", cert_verdict_str(v),
                   time_str(token->not_before, from, sizeof(from)),
                   time_str(token->not_after, to, sizeof(to))), -EINVAL;
    if (strncmp(c->name, token->name, plen) != 0)
        return say(verb, "--name '%s' is outside the token's prefix '%s'", c->name, token->name),
               -EINVAL;
    if (c->has_address || c->n_aliases)
        return say(verb, "a join token signs a name and a key only: --%s needs the authority's "
                   "key (-a), and members refuse a token's certificate that has one",
                   c->has_address ? "address" : "aliases"), -EINVAL;
    /* the token's groups by default; never one it does not name (its
     * members refuse such a certificate: cert_verify) */
    if (!opt_value(a, AUTH_OPT_GROUPS)) {
        c->n_groups = token->n_groups;
        memcpy(c->groups, token->groups, sizeof(c->groups));
    }
    for (uint8_t i = 0; i < c->n_groups; i++) {
        bool named = false;
        for (uint8_t j = 0; j < token->n_groups; j++)
            named |= !strcasecmp(c->groups[i], token->groups[j]);
        if (!named)
            return say(verb, "--groups: the join token does not give group '%s' (it gives %s%s)",
                       c->groups[i], token->n_groups ? "" : "none",
                       token->n_groups ? token->groups[0] : ""), -EINVAL;
    }
    for (uint8_t i = 0; i < c->n_routes; i++) {
        struct cert_token_part part;
        char t[CLUSTER_ROUTE_TEXT_MAX + 1];

        memset(&part, 0, sizeof(part));
        part.n_routes = token->n_routes;
        memcpy(part.routes, token->routes, sizeof(part.routes));
        if (!cert_token_grants(&part, &c->routes[i]))
            return say(verb, "--routes %s is outside what the token grants (%s): members "
                       "refuse it; a route through a token needs `authority token --routes`",
                       cluster_route_format(&c->routes[i], t, sizeof(t)) ? "?" : t,
                       token->n_routes ? "its --routes" : "none"), -EINVAL;
    }
    if (c->not_before < token->not_before)
        c->not_before = token->not_before;
    if (!opt_value(a, AUTH_OPT_VALID) || c->not_after > token->not_after) {
        if (opt_value(a, AUTH_OPT_VALID))
            return say(verb, "--valid %s outlives the token, which expires %s",
                       opt_value(a, AUTH_OPT_VALID),
                       time_str(token->not_after, to, sizeof(to))), -EINVAL;
        c->not_after = token->not_after;
    }
    if (c->not_after <= c->not_before)
        return say(verb, "--not-before is after the token expires (%s)",
                   time_str(token->not_after, to, sizeof(to))), -EINVAL;
    return 0;
}

/* A join token signs members: one that others on the machine may read
 * is a warning, not a refusal (it was read already; the person fixes it). */
static void warn_if_readable(const char *verb, const char *path)
{
    struct stat st;

    if (strcmp(path, "-") && stat(path, &st) == 0 && (st.st_mode & 077))
        fprintf(stderr, "ddpnet authority %s: warning: %s is readable by others (mode %04o): "
                "whoever reads it can sign members; run: chmod 600 %s\n", verb, path,
                (unsigned)(st.st_mode & 07777), path);
}

static int load_token(const char *verb, const char *path, struct cert *token,
                      uint8_t secret[CERT_SECRET_LEN])
{
    char text[INPUT_MAX], err[ERR_MAX];
    int ret = read_input(path, text, sizeof(text), err, sizeof(err));

    if (ret != 0)
        return say(verb, "%s", err), ret;
    ret = cert_join_token_parse(text, token, secret);
    sodium_memzero(text, sizeof(text));
    if (ret != 0)
        say(verb, "%s: not a join token (expected one line ddpnet-jointoken:..., as `ddpnet "
            "authority token` prints)", path);
    else
        warn_if_readable(verb, path);
    return ret;
}

static int do_sign(const char *verb, const struct auth_args *a)
{
    const char *keyfile = opt_value(a, AUTH_OPT_SECRET), *tokenfile = opt_value(a, AUTH_OPT_TOKEN);
    uint8_t secret[CERT_SECRET_LEN];
    struct cert c, token;
    char text[CERT_TEXT_MAX];
    int ret;

    if (!keyfile == !tokenfile)
        return say(verb, "sign with one of -a AUTHORITY-KEYFILE or --token FILE");
    if (member_fields(verb, a, &c) != 0 ||
        lifetime(verb, a, DEFAULT_MEMBER_S, &c.not_before, &c.not_after) != 0)
        return CLI_EXIT_FAIL;
    if (tokenfile) {
        if (load_token(verb, tokenfile, &token, secret) != 0)
            return CLI_EXIT_FAIL;
        if (fit_token(verb, a, &token, &c) != 0) {
            sodium_memzero(secret, sizeof(secret));
            return CLI_EXIT_FAIL;
        }
        cert_token_embed(&c, &token);
    } else if (read_secret(verb, keyfile, secret) != 0) {
        return CLI_EXIT_FAIL;
    }
    ret = cert_sign(&c, secret, text, sizeof(text));
    sodium_memzero(secret, sizeof(secret));
    if (ret == -EMSGSIZE)
        return say(verb, "cannot sign: the certificate would be longer than %u characters "
                   "(fewer or shorter --groups or --routes%s)", CERT_TEXT_MAX,
                   tokenfile ? ", or a token that names fewer" : "");
    if (ret != 0 && c.has_address)
        return say(verb, "invalid --address '%s' (a unicast host address: not unspecified, "
                   "loopback, multicast or broadcast)", opt_value(a, AUTH_OPT_ADDRESS));
    if (ret != 0)
        return say(verb, "cannot sign: a field out of range (%s)", strerror(-ret));
    return print_line(verb, text);
}

/* --- token, revoke ----------------------------------------------------------------- */

static int do_token(const char *verb, const struct auth_args *a)
{
    const char *prefix = opt_value(a, AUTH_OPT_PREFIX), *max = opt_value(a, AUTH_OPT_MAX);
    uint8_t secret[CERT_SECRET_LEN], token_secret[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX];
    unsigned n = 0;
    struct cert t;
    int ret;

    memset(&t, 0, sizeof(t));
    t.kind = CERT_TOKEN;
    if (strlen(prefix) >= CLUSTER_NAME_MAX)
        return say(verb, "--name-prefix '%s' is too long (at most %u characters)", prefix,
                   CLUSTER_NAME_MAX - 1);
    snprintf(t.name, sizeof(t.name), "%s", prefix);
    if (max && cluster_uint_parse(max, UINT32_MAX, &n) != 0)
        return say(verb, "invalid --max '%s' (a number of members, 0 for no limit)", max);
    t.max_members = n;
    if (parse_groups(verb, opt_value(a, AUTH_OPT_GROUPS), &t.n_groups, t.groups) != 0 ||
        routes_opt(verb, a, t.routes, &t.n_routes) != 0)
        return CLI_EXIT_FAIL;
    if (lifetime(verb, a, DEFAULT_TOKEN_S, &t.not_before, &t.not_after) != 0 ||
        read_secret(verb, opt_value(a, AUTH_OPT_SECRET), secret) != 0)
        return CLI_EXIT_FAIL;
    ret = cert_keypair(t.subject, token_secret);
    if (ret == 0)
        ret = cert_sign(&t, secret, text, sizeof(text));
    if (ret == 0)
        ret = cert_join_token_format(&t, token_secret, text, sizeof(text));
    sodium_memzero(secret, sizeof(secret));
    sodium_memzero(token_secret, sizeof(token_secret));
    if (ret == -EMSGSIZE)
        return say(verb, "cannot make the token: it would be longer than %u characters "
                   "(fewer or shorter --groups or --routes)", CERT_TEXT_MAX);
    if (ret == -EINVAL)
        return say(verb, "invalid --name-prefix '%s' (the start of a node name: letters, "
                   "digits, '-' and '.', not starting with '-' or '.')", prefix);
    if (ret != 0)
        return say(verb, "cannot make the token (%s)", strerror(-ret));
    warn_if_stdout_open(verb, "a join token (it holds a secret key)");
    ret = print_line(verb, text);
    sodium_memzero(text, sizeof(text));
    return ret;
}

/* What a revocation names: --id, or the id of the statement given. */
static int revoked_id(const char *verb, const struct auth_args *a, uint8_t id[CERT_ID_LEN])
{
    const char *idtext = opt_value(a, AUTH_OPT_ID);
    char text[INPUT_MAX], err[ERR_MAX];
    uint8_t secret[CERT_SECRET_LEN];
    size_t len = 0;
    struct cert c;

    bool by_key = opt_value(a, AUTH_OPT_PUBLIC_KEY) || opt_value(a, AUTH_OPT_KEY);

    if ((idtext != NULL) + (a->n_positional != 0) + by_key != 1)
        return say(verb, "name what to revoke once: a statement (its line, a file, or - for "
                   "stdin), --id HEX, or a member's key (--public-key KEY or -k KEYFILE)"),
               -EINVAL;
    if (by_key)     /* every certificate of that key, whoever signs it, now or later */
        return member_key(verb, a, id);
    if (idtext) {
        if (strlen(idtext) != 2 * CERT_ID_LEN ||
            sodium_hex2bin(id, CERT_ID_LEN, idtext, strlen(idtext), NULL, &len, NULL) != 0 ||
            len != CERT_ID_LEN)
            return say(verb, "invalid --id '%s' (expected %u hex digits, as `ddpnet authority "
                       "show` prints)", idtext, 2 * CERT_ID_LEN), -EINVAL;
        return 0;
    }
    if (statement_text(a->positional[0], text, sizeof(text), err, sizeof(err)) != 0)
        return say(verb, "%s", err), -EINVAL;
    if (cert_parse(text, &c) != 0 && cert_join_token_parse(text, &c, secret) != 0)
        return say(verb, "%s: not a member certificate, token or join token", a->positional[0]),
               -EINVAL;
    sodium_memzero(secret, sizeof(secret));
    sodium_memzero(text, sizeof(text));
    if (c.kind == CERT_REVOCATION)
        return say(verb, "%s: a revocation cannot be revoked", a->positional[0]), -EINVAL;
    cert_id(&c, id);
    return 0;
}

static int do_revoke(const char *verb, const struct auth_args *a)
{
    uint8_t secret[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX];
    struct cert r;
    int ret;

    memset(&r, 0, sizeof(r));
    r.kind = CERT_REVOCATION;
    r.not_before = now_s();
    if (revoked_id(verb, a, r.subject) != 0 ||
        read_secret(verb, opt_value(a, AUTH_OPT_SECRET), secret) != 0)
        return CLI_EXIT_FAIL;
    ret = cert_sign(&r, secret, text, sizeof(text));
    sodium_memzero(secret, sizeof(secret));
    if (ret != 0)
        return say(verb, "cannot sign (%s)", strerror(-ret));
    return print_line(verb, text);
}

/* --- renew --------------------------------------------------------------------------- */

/* Lines renew reads: a member holds at most 4096 certificates. */
#define RENEW_LINES_MAX 4096u

/* The renewal of member certificate o, when it is due: the same name,
 * key, address and aliases, signed by the authority (a token's member
 * too: the authority takes it over), from now (less the backdating) for
 * --valid or the lifetime o had. 1 when due and signed into text, 0 when
 * not due yet, -1 when o does not count (said on stderr). */
static int renew_one(const char *verb, const struct auth_args *a, const struct cert *o,
                     const uint8_t secret[CERT_SECRET_LEN], uint64_t now, char *text,
                     size_t cap)
{
    const uint8_t *authority = secret + CERT_SECRET_LEN - CERT_PUBKEY_LEN;
    const char *valid = opt_value(a, AUTH_OPT_VALID), *within = opt_value(a, AUTH_OPT_WITHIN);
    const char *old = opt_value(a, AUTH_OPT_AUTHORITY);
    uint64_t end = cert_end(o), life = end > o->not_before ? end - o->not_before : 1, soon;
    enum cert_verdict v = cert_verify(o, authority, now);
    uint8_t old_key[CERT_PUBKEY_LEN];
    struct cert n;

    if (v == CERT_BAD_SIGNATURE && old) {  /* a rotation: the old key's, signed anew */
        if (cert_key_parse(old, old_key))
            return say(verb, "invalid --authority '%s' (expected 44 base64 characters, as "
                       "`ddpnet authority pubkey` prints)", old), -1;
        v = cert_verify(o, old_key, now);
    }

    /* The lifetime it was given: sign starts one BACKDATE_S early. */
    if (life > BACKDATE_S)
        life -= BACKDATE_S;

    if (v != CERT_OK) {
        say(verb, "%s: not renewed: %s (a certificate that no longer counts is signed anew "
            "with `ddpnet authority sign`, by a person)", o->name, cert_verdict_str(v));
        return -1;
    }
    soon = life / 3;
    if (within && duration_parse(within, &soon))
        return say(verb, "invalid --within '%s'", within), -1;
    if (end - now > soon)
        return 0;
    n = *o;
    n.has_token = false;
    memset(&n.token, 0, sizeof(n.token));
    memset(n.token_sig, 0, sizeof(n.token_sig));
    if (valid && duration_parse(valid, &life))
        return say(verb, "invalid --valid '%s'", valid), -1;
    n.not_before = now - BACKDATE_S;
    n.not_after = now + life;
    if (n.not_after <= end)
        n.not_after = end + 1;            /* a renewal ends later, or it is none */
    if (cert_sign(&n, secret, text, cap))
        return say(verb, "%s: cannot sign its renewal", o->name), -1;
    return 1;
}

static int do_renew(const char *verb, const struct auth_args *a)
{
    const char *path = a->n_positional ? a->positional[0] : "-";
    uint8_t secret[CERT_SECRET_LEN];
    char text[CERT_TEXT_MAX], *line = NULL;
    size_t cap = 0, lines = 0, renewed = 0, due_not = 0, refused = 0;
    uint64_t now = now_s();
    struct cert c;
    FILE *in;
    int r;

    if (read_secret(verb, opt_value(a, AUTH_OPT_SECRET), secret) != 0)
        return CLI_EXIT_FAIL;
    clearerr(stdin);                      /* a caller that read it before (the tests) */
    if (!(in = strcmp(path, "-") ? fopen(path, "re") : stdin)) {
        sodium_memzero(secret, sizeof(secret));
        return say(verb, "%s: %s", path, strerror(errno));
    }
    while (lines < RENEW_LINES_MAX && getline(&line, &cap, in) >= 0) {
        line[strcspn(line, "\r\n")] = '\0';
        if (!line[0])
            continue;
        lines++;
        if (cert_parse(line, &c) || c.kind != CERT_MEMBER) {
            say(verb, "line %zu: not a member certificate, skipped", lines);
            refused++;
            continue;
        }
        if ((r = renew_one(verb, a, &c, secret, now, text, sizeof(text))) < 0)
            refused++;
        else if (!r)
            due_not++;
        else if (print_line(verb, text) != CLI_EXIT_OK)
            refused++;
        else
            renewed++;
    }
    sodium_memzero(secret, sizeof(secret));
    free(line);
    if (in != stdin)
        fclose(in);
    fprintf(stderr, "ddpnet authority %s: %zu renewed, %zu not due yet, %zu not renewed\n", verb,
            renewed, due_not, refused);
    return refused ? CLI_EXIT_FAIL : CLI_EXIT_OK;
}

/* --- show ---------------------------------------------------------------------------- */

static void show_lifetime(const struct cert *c, uint64_t now)
{
    char a[48], b[48];

    printf("valid:       %s to %s", time_str(c->not_before, a, sizeof(a)),
           time_str(c->not_after, b, sizeof(b)));
    if (now >= c->not_after)
        printf(" (expired)\n");
    else if (now < c->not_before)
        printf(" (not yet)\n");
    else
        printf(" (%" PRIu64 " days left)\n", (c->not_after - now) / 86400u);
}

/* A member's groups, or those a token's members may carry. */
static void show_groups(const struct cert *c)
{
    printf("groups:     ");
    for (unsigned i = 0; i < c->n_groups; i++)
        printf(" %s", c->groups[i]);
    printf("%s\n", c->n_groups ? "" : " none");
}

static void show_statement(const struct cert *c, bool join)
{
    char key[CERT_KEY_TEXT_LEN + 1], id[2 * CERT_ID_LEN + 1], addr[INET6_ADDRSTRLEN];
    uint8_t bin[CERT_ID_LEN];
    uint64_t now = now_s();

    printf("kind:        %s%s\n", join ? "join token (holds the token's secret key)"
                                       : cert_kind_str(c->kind), "");
    if (c->kind == CERT_MEMBER) {
        printf("name:        %s\n", c->name);
        cert_key_format(c->subject, key);
        printf("public key:  %s\n", key);
        if (c->has_address)
            printf("address:     %s\n", inet_ntop(c->address.family, c->address.bytes, addr,
                                                  sizeof(addr)) ? addr : "?");
        if (c->n_aliases) {
            printf("aliases:    ");
            for (unsigned i = 0; i < c->n_aliases; i++)
                printf(" %s", c->aliases[i]);
            printf("\n");
        }
        show_groups(c);
        print_routes("routes:     ", c->n_routes, c->routes);
        show_lifetime(c, now);
    } else if (c->kind == CERT_TOKEN) {
        printf("names:       starting with %s\n", c->name);
        if (c->max_members)
            printf("members:     at most %" PRIu32 "\n", c->max_members);
        else
            printf("members:     no limit\n");
        show_groups(c);
        if (c->n_routes)
            print_routes("routes:      its members may carry", c->n_routes, c->routes);
        else
            printf("routes:      none (its members carry no route)\n");
        cert_key_format(c->subject, key);
        printf("token key:   %s\n", key);
        show_lifetime(c, now);
    } else {
        hex(c->subject, CERT_ID_LEN, id);
        printf("revokes:     %s\n", id);
        printf("issued:      %s\n", time_str(c->not_before, addr, sizeof(addr)));
    }
    cert_key_format(c->signer, key);
    printf("signed by:   %s%s\n", key, c->has_token ? " (a join token)" : "");
    if (c->has_token) {
        cert_key_format(c->token.signer, key);
        printf("token:       names starting with %s, valid to %s, signed by %s\n",
               c->token.prefix, time_str(c->token.not_after, addr, sizeof(addr)), key);
    }
    cert_id(c, bin);
    hex(bin, CERT_ID_LEN, id);
    printf("id:          %s\n", id);
    if (cert_token_id(c, bin)) {
        hex(bin, CERT_ID_LEN, id);
        printf("token id:    %s\n", id);
    }
}

static int do_show(const char *verb, const struct auth_args *a)
{
    const char *auth = opt_value(a, AUTH_OPT_AUTHORITY);
    char text[INPUT_MAX], err[ERR_MAX];
    uint8_t authority[CERT_PUBKEY_LEN], secret[CERT_SECRET_LEN];
    bool join = false;
    struct cert c;
    enum cert_verdict v;

    if (a->n_positional != 1)
        return say(verb, "which statement? give its line, a file that holds it, or - for "
                   "stdin");
    if (auth && cert_key_parse(auth, authority) != 0)
        return say(verb, "invalid --authority '%s' (expected 44 base64 characters, as "
                   "`ddpnet authority init` prints)", auth);
    if (statement_text(a->positional[0], text, sizeof(text), err, sizeof(err)) != 0)
        return say(verb, "%s", err);
    if (cert_parse(text, &c) != 0) {
        join = cert_join_token_parse(text, &c, secret) == 0;
        sodium_memzero(secret, sizeof(secret));
        if (!join)
            return say(verb, "%s: not a ddpnet statement (a line starting ddpnet-member:, "
                       "ddpnet-token:, ddpnet-revoke: or ddpnet-jointoken:, whole)",
                       a->positional[0]);
    }
    sodium_memzero(text, sizeof(text));
    show_statement(&c, join);
    if (!auth)
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    v = cert_verify(&c, authority, now_s());
    printf("verdict:     %s\n", cert_verdict_str(v));
    if (fflush(stdout) != 0)
        return CLI_EXIT_FAIL;
    if (v != CERT_OK)
        return say(verb, "does not count under authority %s: %s", auth, cert_verdict_str(v));
    return CLI_EXIT_OK;
}

/* --- the sub-verbs ----------------------------------------------------------------------- */

static const struct auth_verb auth_verbs[] = {
    { "init", do_init, AUTH_OPT_OUTPUT, 0, 0, "[-o FILE]",
      "write a new authority secret key file and print its public key" },
    { "pubkey", do_pubkey, AUTH_OPT_SECRET, AUTH_OPT_SECRET, 0, "-a AUTHORITY-KEYFILE",
      "print the public key of an authority secret key file" },
    { "sign", do_sign,
      AUTH_OPT_SECRET | AUTH_OPT_TOKEN | AUTH_OPT_NAME | AUTH_OPT_PUBLIC_KEY | AUTH_OPT_KEY |
          AUTH_OPT_ADDRESS | AUTH_OPT_ALIASES | AUTH_OPT_VALID | AUTH_OPT_NOT_BEFORE |
          AUTH_OPT_GROUPS | AUTH_OPT_ROUTES,
      AUTH_OPT_NAME, 0,
      "(-a AUTHORITY-KEYFILE | --token FILE) --name NAME (--public-key KEY | -k KEYFILE) "
      "[--address ADDR] [--aliases A,B] [--groups A,B] [--routes PREFIX,...] "
      "[--valid DURATION] [--not-before TIME]",
      "print a member certificate, signed by the authority or by a join token" },
    { "token", do_token,
      AUTH_OPT_SECRET | AUTH_OPT_PREFIX | AUTH_OPT_MAX | AUTH_OPT_VALID | AUTH_OPT_NOT_BEFORE |
          AUTH_OPT_GROUPS | AUTH_OPT_ROUTES,
      AUTH_OPT_SECRET | AUTH_OPT_PREFIX, 0,
      "-a AUTHORITY-KEYFILE --name-prefix PREFIX [--max N] [--groups A,B] "
      "[--routes PREFIX,...] [--valid DURATION] [--not-before TIME]",
      "print a join token: a signing key limited to names starting with PREFIX and its "
      "lifetime, for machines that join by themselves" },
    { "revoke", do_revoke,
      AUTH_OPT_SECRET | AUTH_OPT_ID | AUTH_OPT_PUBLIC_KEY | AUTH_OPT_KEY, AUTH_OPT_SECRET, 1,
      "-a AUTHORITY-KEYFILE (STATEMENT | --id HEX | --public-key KEY | -k KEYFILE)",
      "print a revocation of a member certificate, a token, or a member's key: every "
      "certificate for that key, signed before or after (STATEMENT: its line, a file, or - "
      "for stdin)" },
    { "renew", do_renew, AUTH_OPT_SECRET | AUTH_OPT_WITHIN | AUTH_OPT_VALID | AUTH_OPT_AUTHORITY,
      AUTH_OPT_SECRET, 1,
      "-a AUTHORITY-KEYFILE [--within DURATION] [--valid DURATION] [--authority OLD-KEY] "
      "[FILE|-]",
      "print the renewal of each member certificate in FILE (default stdin, as `ddpnet "
      "certs` prints them) that ends within DURATION: the same name, key and address, "
      "signed by the authority, for --valid or the lifetime it had" },
    { "show", do_show, AUTH_OPT_AUTHORITY, 0, 1, "STATEMENT [--authority KEY]",
      "explain a certificate, token, join token or revocation (its line, a file, or - for "
      "stdin) and, given the authority's key, whether it is valid now" },
};
#define N_AUTH_VERBS (sizeof(auth_verbs) / sizeof(auth_verbs[0]))

static void verbs_list(FILE *out)
{
    fprintf(out, "usage: ddpnet authority COMMAND [options]\n\ncommands:\n");
    for (size_t i = 0; i < N_AUTH_VERBS; i++) {
        fprintf(out, "  %-7s ", auth_verbs[i].name);
        cli_args_help_wrap(out, 10, auth_verbs[i].help);
    }
    fprintf(out, "\n'ddpnet authority COMMAND --help' explains a command's options.\n");
}

int cli_authority(int argc, char **argv)
{
    const struct auth_verb *v = NULL;
    struct auth_args a;
    char err[ERR_MAX];

    if (argc < 2) {
        verbs_list(stderr);
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        verbs_list(stdout);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    for (size_t i = 0; i < N_AUTH_VERBS; i++)
        if (!strcmp(auth_verbs[i].name, argv[1]))
            v = &auth_verbs[i];
    if (!v) {
        fprintf(stderr, "ddpnet authority: unknown command '%s' (try 'ddpnet authority "
                "--help')\n", argv[1]);
        return CLI_EXIT_USAGE;
    }
    if (args_parse(v, argc - 1, argv + 1, &a, err, sizeof(err)) != 0) {
        fprintf(stderr, "ddpnet authority %s: %s\nusage: ddpnet authority %s %s\n(ddpnet "
                "authority %s --help explains each option)\n", v->name, err, v->name,
                v->usage, v->name);
        return CLI_EXIT_USAGE;
    }
    if (a.help) {
        verb_help(stdout, v);
        return fflush(stdout) == 0 ? CLI_EXIT_OK : CLI_EXIT_FAIL;
    }
    if (crypto_core_init() != 0)
        return say(v->name, "cannot initialise libsodium");
    return v->run(v->name, &a);
}
