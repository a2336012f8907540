/* SPDX-License-Identifier: MIT */
/* Tests of `ddpnet authority` (overlay/cli/cli_authority.c), called as
 * main calls it with stdin, stdout and stderr redirected: init writes a
 * key file of mode 0600 and never over another file; what sign, token and
 * revoke print parses and verifies with config/cert.h against the key init
 * printed; show explains and judges a statement (valid, expired, another
 * authority) by its exit status; every bad input exits non-zero with one
 * line saying what is wrong. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "crypto/aead.h"
#include "overlay/cli/cli.h"
#include "overlay/cli/cli_args.h"
#include "tests/unit/cli_capture.h"

/* A WireGuard key pair as `wg genkey | tee k | wg pubkey` printed it. */
#define PRIV_A "ODZ3UHZcW47hcSkJxyygI2pvBXvA2l/QYyTDWAUVr3E="
#define PUB_A  "DNAWmnT2QifBYO65SpqskpErSH6K7lf3IILszNNeZCc="
#define PUB_B  "MfEmnnjWLoTnOcOaQh4knjAGQidLNo6LVdkQByFx+Wo="
#define DAY    86400u
#define PATH_CAP 256

static char tmpdir[64];
static char auth_path[PATH_CAP], other_path[PATH_CAP], node_key[PATH_CAP];
static char auth_pub[CERT_KEY_TEXT_LEN + 1], other_pub[CERT_KEY_TEXT_LEN + 1];
static uint8_t auth_bin[CERT_PUBKEY_LEN];

/* `ddpnet authority ARGS...` with stdin reading in (NULL: empty). */
static void run(const char *const *argv, const char *in, struct captured *c)
{
    const char *args[32] = {"authority"};
    size_t n = 1;

    while (argv[n - 1] != NULL && n < 31) {
        args[n] = argv[n - 1];
        n++;
    }
    capture_verb(cli_authority, args, in, c);
}

#define ARGS(...) ((const char *const[]){ __VA_ARGS__, NULL })

/* Runs, and asserts the exit status and that stderr holds want_err
 * (NULL: stderr empty). */
static void expect(const char *const *argv, const char *in, int rc, const char *want_err,
                   struct captured *c)
{
    run(argv, in, c);
    if (c->rc != rc || (want_err ? !strstr(c->err, want_err) : c->err[0] != '\0'))
        fail_msg("authority %s: rc %d (want %d)\nstdout: %s\nstderr: %s\nwanted in stderr: %s",
                 argv[0], c->rc, rc, c->out, c->err, want_err ? want_err : "(nothing)");
}

static void one_line(const char *out, const char *prefix)
{
    size_t len = strlen(out);

    assert_true(len > 1 && out[len - 1] == '\n' && strchr(out, '\n') == out + len - 1);
    assert_int_equal(strncmp(out, prefix, strlen(prefix)), 0);
}

/* A copy of what a verb printed, to give to the next. */
static void keep(char *dst, size_t cap, const char *src)
{
    size_t len = strlen(src);

    assert_true(len < cap);
    memcpy(dst, src, len + 1);
}

static void write_file(const char *path, const char *content, mode_t mode)
{
    int fd;

    unlink(path);
    fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    assert_int_equal(fchmod(fd, mode), 0);
    close(fd);
}

static const char *tmp(char *buf, const char *name)
{
    snprintf(buf, PATH_CAP, "%s/%s", tmpdir, name);
    return buf;
}

static void init_key(const char *path, char pub[CERT_KEY_TEXT_LEN + 1])
{
    struct captured c;

    expect(ARGS("init", "-o", path), NULL, 0, "wrote the secret key", &c);
    assert_int_equal(strlen(c.out), CERT_KEY_TEXT_LEN + 1);
    memcpy(pub, c.out, CERT_KEY_TEXT_LEN);
    pub[CERT_KEY_TEXT_LEN] = '\0';
}

static int setup(void **state)
{
    (void)state;
    if (crypto_core_init() != 0)
        return -1;
    snprintf(tmpdir, sizeof(tmpdir), "/tmp/test_cli_auth.XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    init_key(tmp(auth_path, "authority.key"), auth_pub);
    init_key(tmp(other_path, "other.key"), other_pub);
    write_file(tmp(node_key, "node.key"), PRIV_A "\n", 0600);
    return cert_key_parse(auth_pub, auth_bin);
}

static int teardown(void **state)
{
    char cmd[sizeof(tmpdir) + 16];

    (void)state;
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void parse_out(const struct captured *c, struct cert *out)
{
    if (cert_parse(c->out, out) != 0)
        fail_msg("not a statement: %s", c->out);
}

/* --- init and pubkey ---------------------------------------------------------- */

static void test_init(void **state)
{
    char path[PATH_CAP], before[256], after[256];
    struct captured c;
    struct stat st;
    FILE *f;

    (void)state;
    assert_int_equal(stat(auth_path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    f = fopen(auth_path, "r");
    assert_non_null(f);
    assert_non_null(fgets(before, sizeof(before), f));
    fclose(f);
    assert_int_equal(strncmp(before, "ddpnet-authority-secret:", 24), 0);

    /* never over an existing file, whatever it holds */
    expect(ARGS("init", "-o", auth_path), NULL, CLI_EXIT_FAIL,
           "authority.key exists; not overwriting", &c);
    assert_string_equal(c.out, "");
    f = fopen(auth_path, "r");
    assert_non_null(f);
    assert_non_null(fgets(after, sizeof(after), f));
    fclose(f);
    assert_string_equal(before, after);
    expect(ARGS("init", "--output", node_key), NULL, CLI_EXIT_FAIL, "exists", &c);

    /* 0600 whatever the umask; a directory that is not there */
    mode_t old = umask(0);
    init_key(tmp(path, "open-umask.key"), (char[CERT_KEY_TEXT_LEN + 1]){ 0 });
    umask(old);
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 07777, 0600);
    expect(ARGS("init", "-o", "/nonexistent/dir/a.key"), NULL, CLI_EXIT_FAIL,
           "/nonexistent/dir/a.key: No such file or directory", &c);

    /* pubkey prints what init printed */
    expect(ARGS("pubkey", "-a", auth_path), NULL, 0, NULL, &c);
    assert_int_equal(strncmp(c.out, auth_pub, CERT_KEY_TEXT_LEN), 0);
    assert_string_equal(c.out + CERT_KEY_TEXT_LEN, "\n");
}

static void test_secret_file_refusals(void **state)
{
    char path[PATH_CAP], text[256];
    struct captured c;
    FILE *f;

    (void)state;
    f = fopen(auth_path, "r");
    assert_non_null(f);
    assert_non_null(fgets(text, sizeof(text), f));
    fclose(f);
    write_file(tmp(path, "open.key"), text, 0644);
    expect(ARGS("pubkey", "-a", path), NULL, CLI_EXIT_FAIL,
           "permissions 0644 are too open for the authority's secret key; run: chmod 600", &c);
    expect(ARGS("pubkey", "-a", node_key), NULL, CLI_EXIT_FAIL,
           "a WireGuard key, not the authority's secret key", &c);
    write_file(path, "garbage\n", 0600);
    expect(ARGS("pubkey", "-a", path), NULL, CLI_EXIT_FAIL,
           "not an authority secret key", &c);
    expect(ARGS("pubkey", "-a", tmp(path, "missing.key")), NULL, CLI_EXIT_FAIL,
           "missing.key: No such file or directory", &c);
    expect(ARGS("pubkey"), NULL, CLI_EXIT_USAGE, "missing option -a/--authority-key", &c);
}

/* --- sign ---------------------------------------------------------------------- */

static void test_sign_verifies(void **state)
{
    struct captured c;
    struct cert m;
    uint8_t wg[CERT_PUBKEY_LEN];
    uint64_t now = (uint64_t)time(NULL);

    (void)state;
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-1", "--public-key", PUB_B,
                "--address", "10.77.0.9", "--aliases", "gpu-1.lab,trainer"), NULL, 0, NULL, &c);
    one_line(c.out, "ddpnet-member:");
    parse_out(&c, &m);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    assert_string_equal(m.name, "gpu-1");
    assert_int_equal(cert_key_parse(PUB_B, wg), 0);
    assert_memory_equal(m.subject, wg, CERT_PUBKEY_LEN);
    assert_true(m.has_address && m.address.bytes[3] == 9);
    assert_int_equal(m.n_aliases, 2);
    assert_string_equal(m.aliases[1], "trainer");
    /* a year by default, from a little before now */
    assert_true(m.not_before <= now && m.not_before + 600 > now);
    assert_true(m.not_after >= now + 365 * DAY && m.not_after <= now + 365 * DAY + 600);

    /* -k: the public key of the node's private key file */
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-2", "-k", node_key, "--valid", "12h"),
           NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(cert_key_parse(PUB_A, wg), 0);
    assert_memory_equal(m.subject, wg, CERT_PUBKEY_LEN);
    assert_true(m.not_after >= now + 12 * 3600 && m.not_after <= now + 12 * 3600 + 600);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);

    /* show agrees, and says which authority it counts under */
    char line[CERT_TEXT_MAX];
    keep(line, sizeof(line), c.out);
    expect(ARGS("show", line, "--authority", auth_pub), NULL, 0, NULL, &c);
    assert_non_null(strstr(c.out, "kind:        member\n"));
    assert_non_null(strstr(c.out, "name:        gpu-2\n"));
    assert_non_null(strstr(c.out, "public key:  " PUB_A "\n"));
    assert_non_null(strstr(c.out, "verdict:     valid\n"));
    expect(ARGS("show", "-", "--authority", other_pub), line, CLI_EXIT_FAIL,
           "does not count under authority", &c);
    assert_non_null(strstr(c.out, "verdict:     bad signature"));
    expect(ARGS("show", "-"), line, 0, NULL, &c);
    assert_null(strstr(c.out, "verdict:"));
}

static void test_sign_expired(void **state)
{
    struct captured c;
    struct cert m;
    char line[CERT_TEXT_MAX];

    (void)state;
    expect(ARGS("sign", "-a", auth_path, "--name", "old", "--public-key", PUB_A,
                "--not-before", "2020-01-01", "--valid", "1d"), NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(m.not_before, 1577836800u);
    assert_int_equal(m.not_after, 1577836800u + DAY);
    assert_int_equal(cert_verify(&m, auth_bin, (uint64_t)time(NULL)), CERT_EXPIRED);
    keep(line, sizeof(line), c.out);
    expect(ARGS("show", line, "--authority", auth_pub), NULL, CLI_EXIT_FAIL, ": expired", &c);
    assert_non_null(strstr(c.out, "(expired)"));

    /* not yet valid: ten years from now */
    expect(ARGS("sign", "-a", auth_path, "--name", "later", "--public-key", PUB_A,
                "--not-before", "2099-01-01T00:00:00Z", "--valid", "2w"), NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(m.not_after - m.not_before, 14 * DAY);
    keep(line, sizeof(line), c.out);
    expect(ARGS("show", line, "--authority", auth_pub), NULL, CLI_EXIT_FAIL, "not yet valid",
           &c);
}

static void test_sign_bad_inputs(void **state)
{
    static const struct {
        const char *opt, *value, *want;
    } bad[] = {
        { "--name", "-bad", "invalid --name '-bad'" },
        { "--name", "a_b", "invalid --name 'a_b'" },
        { "--public-key", "short", "invalid --public-key 'short'" },
        { "--address", "10.77.0", "invalid --address '10.77.0'" },
        { "--address", "127.0.0.1", "invalid --address '127.0.0.1'" },
        { "--address", "224.0.0.1", "invalid --address '224.0.0.1'" },
        { "--aliases", "a,,b", "invalid --aliases 'a,,b'" },
        { "--aliases", "a_b", "invalid alias 'a_b'" },
        { "--aliases", "a,b,c,d,e", "too many --aliases (at most 4)" },
        { "--valid", "10", "invalid --valid '10'" },
        { "--valid", "0d", "invalid --valid '0d'" },
        { "--valid", "5x", "invalid --valid '5x'" },
        { "--valid", "99999999999d", "invalid --valid" },
        { "--not-before", "yesterday", "invalid --not-before 'yesterday'" },
        { "--not-before", "2020-13-01", "invalid --not-before '2020-13-01'" },
    };
    struct captured c;

    (void)state;
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        const char *name = strcmp(bad[i].opt, "--name") ? "gpu-1" : bad[i].value;
        const char *key = strcmp(bad[i].opt, "--public-key") ? PUB_A : bad[i].value;

        if (!strcmp(bad[i].opt, "--name") || !strcmp(bad[i].opt, "--public-key"))
            expect(ARGS("sign", "-a", auth_path, "--name", name, "--public-key", key), NULL,
                   CLI_EXIT_FAIL, bad[i].want, &c);
        else
            expect(ARGS("sign", "-a", auth_path, "--name", name, "--public-key", key,
                        bad[i].opt, bad[i].value), NULL, CLI_EXIT_FAIL, bad[i].want, &c);
        assert_string_equal(c.out, "");
    }
    expect(ARGS("sign", "-a", auth_path, "--public-key", PUB_A), NULL, CLI_EXIT_USAGE,
           "missing option --name", &c);
    expect(ARGS("sign", "--name", "x", "--public-key", PUB_A), NULL, CLI_EXIT_FAIL,
           "sign with one of -a AUTHORITY-KEYFILE or --token FILE", &c);
    expect(ARGS("sign", "-a", auth_path, "--token", "-", "--name", "x", "--public-key", PUB_A),
           NULL, CLI_EXIT_FAIL, "sign with one of", &c);
    expect(ARGS("sign", "-a", auth_path, "--name", "x"), NULL, CLI_EXIT_FAIL,
           "give the member's key once", &c);
    expect(ARGS("sign", "-a", auth_path, "--name", "x", "--public-key", PUB_A, "-k", node_key),
           NULL, CLI_EXIT_FAIL, "give the member's key once", &c);
    expect(ARGS("sign", "-a", auth_path, "--name", "x", "--public-key", PUB_A, "--max", "3"),
           NULL, CLI_EXIT_USAGE, "unknown option '--max'", &c);
    expect(ARGS("sign", "-a", auth_path, "--name", "x", "--public-key", PUB_A, "extra"), NULL,
           CLI_EXIT_USAGE, "unexpected argument 'extra'", &c);
    expect(ARGS("sign", "-a", auth_path, "--name"), NULL, CLI_EXIT_USAGE,
           "option '--name' needs a value", &c);
    expect(ARGS("nope"), NULL, CLI_EXIT_USAGE, "unknown command 'nope'", &c);
    run((const char *const[]){ NULL }, NULL, &c);
    assert_int_equal(c.rc, CLI_EXIT_USAGE);
    assert_non_null(strstr(c.err, "usage: ddpnet authority COMMAND"));
}

/* --- tokens -------------------------------------------------------------------- */

static void make_token(char *line, size_t cap, const char *prefix, const char *valid)
{
    struct captured c;

    expect(ARGS("token", "-a", auth_path, "--name-prefix", prefix, "--max", "5", "--valid",
                valid), NULL, 0, NULL, &c);
    one_line(c.out, "ddpnet-jointoken:");
    keep(line, cap, c.out);
}

static void test_token_sign(void **state)
{
    char token[CERT_TEXT_MAX], path[PATH_CAP];
    uint8_t secret[CERT_SECRET_LEN];
    struct captured c;
    struct cert t, m;
    uint64_t now = (uint64_t)time(NULL);

    (void)state;
    make_token(token, sizeof(token), "spot-", "7d");
    assert_int_equal(cert_join_token_parse(token, &t, secret), 0);
    assert_int_equal(cert_verify(&t, auth_bin, now), CERT_OK);
    assert_string_equal(t.name, "spot-");
    assert_int_equal(t.max_members, 5);
    assert_true(t.not_after >= now + 7 * DAY && t.not_after <= now + 7 * DAY + 600);

    /* the new machine: its key file and the token on stdin */
    expect(ARGS("sign", "--token", "-", "--name", "spot-1", "-k", node_key), token, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    assert_true(m.has_token);
    assert_true(m.not_after == t.not_after);         /* until the token ends */
    assert_int_equal(cert_verify(&m, auth_bin, t.not_after), CERT_EXPIRED);
    expect(ARGS("show", "-", "--authority", auth_pub), c.out, 0, NULL, &c);
    assert_non_null(strstr(c.out, "(a join token)"));
    assert_non_null(strstr(c.out, "token id:"));

    /* a token others may read: signed, with a warning */
    write_file(tmp(path, "open.token"), token, 0644);
    expect(ARGS("sign", "--token", path, "--name", "spot-2", "--public-key", PUB_B), NULL, 0,
           "is readable by others (mode 0644): whoever reads it can sign members", &c);
    /* the token from a file, a shorter lifetime */
    write_file(tmp(path, "join.token"), token, 0600);
    expect(ARGS("sign", "--token", path, "--name", "spot-2", "--public-key", PUB_B, "--valid",
                "1h"), NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    assert_true(m.not_after <= now + 3600 + 600);

    /* refusals: outside the prefix, outliving the token, not a token */
    expect(ARGS("sign", "--token", path, "--name", "gpu-3", "--public-key", PUB_B), NULL,
           CLI_EXIT_FAIL, "--name 'gpu-3' is outside the token's prefix 'spot-'", &c);
    expect(ARGS("sign", "--token", path, "--name", "spot-3", "--public-key", PUB_B, "--valid",
                "8d"), NULL, CLI_EXIT_FAIL, "--valid 8d outlives the token", &c);
    expect(ARGS("sign", "--token", auth_path, "--name", "spot-3", "--public-key", PUB_B), NULL,
           CLI_EXIT_FAIL, "not a join token", &c);
    expect(ARGS("sign", "--token", "-", "--name", "spot-3", "--public-key", PUB_B), "x", CLI_EXIT_FAIL,
           "-: not a join token", &c);
    /* a token signs a name and a key only (issue 43) */
    expect(ARGS("sign", "--token", path, "--name", "spot-3", "--public-key", PUB_B, "--address",
                "10.77.0.2"), NULL, CLI_EXIT_FAIL, "a join token signs a name and a key only: "
           "--address needs the authority's key", &c);
    expect(ARGS("sign", "--token", path, "--name", "spot-3", "--public-key", PUB_B, "--aliases",
                "metadata.google.internal"), NULL, CLI_EXIT_FAIL, "--aliases needs the "
           "authority's key", &c);

    /* an expired token signs nothing */
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "old-", "--not-before", "2020-01-01",
                "--valid", "1d"), NULL, 0, NULL, &c);
    expect(ARGS("sign", "--token", "-", "--name", "old-1", "--public-key", PUB_B), c.out,
           CLI_EXIT_FAIL, "the join token is expired", &c);
}

/* Issue 60: sign --routes puts them in the certificate (show says them);
 * a token grants none unless `token --routes` says so, and sign --token
 * refuses a prefix outside the token's (the token holder as attacker);
 * bad prefixes refused with the word at fault. */
static void test_routes(void **state)
{
    char token[CERT_TEXT_MAX], path[PATH_CAP];
    uint8_t secret[CERT_SECRET_LEN];
    struct captured c;
    struct cert t, m;
    uint64_t now = (uint64_t)time(NULL);

    (void)state;
    expect(ARGS("sign", "-a", auth_path, "--name", "gw", "--public-key", PUB_B, "--routes",
                "192.168.50.0/24,fd10::/64"), NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    assert_int_equal(m.n_routes, 2);
    assert_int_equal(m.routes[0].prefix, 24);
    expect(ARGS("show", "-", "--authority", auth_pub), c.out, 0, NULL, &c);
    assert_non_null(strstr(c.out, "routes:      192.168.50.0/24 fd10::/64\n"));
    expect(ARGS("sign", "-a", auth_path, "--name", "gw", "--public-key", PUB_B, "--routes",
                "192.168.50.1/24"), NULL, CLI_EXIT_FAIL, "invalid --routes: 192.168.50.1/24: "
           "host bits set", &c);
    expect(ARGS("sign", "-a", auth_path, "--name", "gw", "--public-key", PUB_B, "--routes",
                "10.0.0.0/8,10.1.0.0/16"), NULL, CLI_EXIT_FAIL, "two of them overlap", &c);

    /* A token without --routes: its holder cannot grant itself one. */
    make_token(token, sizeof(token), "spot-", "7d");
    write_file(tmp(path, "routes.token"), token, 0600);
    expect(ARGS("sign", "--token", path, "--name", "spot-1", "--public-key", PUB_B, "--routes",
                "192.168.50.0/24"), NULL, CLI_EXIT_FAIL, "--routes 192.168.50.0/24 is outside "
           "what the token grants (none)", &c);
    expect(ARGS("show", "-"), token, 0, NULL, &c);
    assert_non_null(strstr(c.out, "routes:      none (its members carry no route)\n"));

    /* A token that grants 192.168.50.0/24: inside it, yes; beside or
     * wider, no. */
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "gw-", "--routes", "192.168.50.0/24"),
           NULL, 0, NULL, &c);
    keep(token, sizeof(token), c.out);
    assert_int_equal(cert_join_token_parse(token, &t, secret), 0);
    assert_int_equal(t.n_routes, 1);
    write_file(tmp(path, "gw.token"), token, 0600);
    expect(ARGS("sign", "--token", path, "--name", "gw-1", "--public-key", PUB_B, "--routes",
                "192.168.50.128/25"), NULL, 0, NULL, &c);
    parse_out(&c, &m);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    assert_int_equal(m.n_routes, 1);
    expect(ARGS("sign", "--token", path, "--name", "gw-1", "--public-key", PUB_B, "--routes",
                "192.168.0.0/16"), NULL, CLI_EXIT_FAIL, "outside what the token grants (its "
           "--routes)", &c);
    expect(ARGS("sign", "--token", path, "--name", "gw-1", "--public-key", PUB_B, "--routes",
                "192.168.51.0/24"), NULL, CLI_EXIT_FAIL, "outside what the token grants", &c);
    /* Without --routes, its member carries none. */
    expect(ARGS("sign", "--token", path, "--name", "gw-2", "--public-key", PUB_B), NULL, 0, NULL,
           &c);
    parse_out(&c, &m);
    assert_int_equal(m.n_routes, 0);
}

/* Issue 56: renew re-signs, with the authority's key, each certificate
 * due (within --within, default a third of its lifetime) for the same
 * name, key and address and the lifetime it had (or --valid); leaves out
 * one not due; a token's member becomes the authority's; one that no
 * longer counts (expired, another authority's) exits 1. */
static void test_renew(void **state)
{
    char gpu[CERT_TEXT_MAX], spot[CERT_TEXT_MAX], old[CERT_TEXT_MAX], token[CERT_TEXT_MAX];
    char both[2 * CERT_TEXT_MAX + 4], path[PATH_CAP];
    uint64_t now = (uint64_t)time(NULL);
    struct captured c;
    struct cert m, o;

    (void)state;
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-1", "--public-key", PUB_A, "--address",
                "10.77.0.5", "--valid", "30d"), NULL, 0, NULL, &c);
    keep(gpu, sizeof(gpu), c.out);
    make_token(token, sizeof(token), "spot-", "1h");
    expect(ARGS("sign", "--token", "-", "--name", "spot-1", "--public-key", PUB_B), token, 0,
           NULL, &c);
    keep(spot, sizeof(spot), c.out);
    snprintf(both, sizeof(both), "%s\n%s\n", gpu, spot);
    /* Nothing due: a 30-day certificate and a token's of an hour, new. */
    expect(ARGS("renew", "-a", auth_path), both, 0, "0 renewed, 2 not due yet, 0 not renewed",
           &c);
    assert_string_equal(c.out, "");
    /* Within 2 hours: the token's member is due, the other not. */
    write_file(tmp(path, "held.certs"), both, 0600);
    expect(ARGS("renew", "-a", auth_path, "--within", "2h", path), NULL, 0,
           "1 renewed, 1 not due yet", &c);
    parse_out(&c, &m);
    assert_int_equal(cert_parse(spot, &o), 0);
    assert_true(cert_renews(&m, &o));
    assert_false(m.has_token);                        /* the authority's now */
    assert_memory_equal(m.signer, auth_bin, CERT_PUBKEY_LEN);
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    /* Within 31 days, for 90 days: the fixed address kept. */
    expect(ARGS("renew", "-a", auth_path, "--within", "31d", "--valid", "90d", "-"), gpu, 0,
           "1 renewed", &c);
    parse_out(&c, &m);
    assert_int_equal(cert_parse(gpu, &o), 0);
    assert_true(cert_renews(&m, &o));
    assert_true(m.has_address && cluster_addr_equal(&m.address, &o.address));
    assert_true(m.not_after >= now + 90 * DAY && m.not_after <= now + 90 * DAY + 600);
    /* One that no longer counts: not renewed, exit 1, the others still are. */
    expect(ARGS("sign", "-a", auth_path, "--name", "old", "--public-key", PUB_A,
                "--not-before", "2020-01-01", "--valid", "1d"), NULL, 0, NULL, &c);
    keep(old, sizeof(old), c.out);
    snprintf(both, sizeof(both), "%s\n%s\n", old, gpu);
    expect(ARGS("renew", "-a", auth_path, "--within", "31d"), both, CLI_EXIT_FAIL,
           "old: not renewed: expired", &c);
    parse_out(&c, &m);
    assert_string_equal(m.name, "gpu-1");
    expect(ARGS("renew", "-a", other_path, "--within", "31d"), gpu, CLI_EXIT_FAIL,
           "gpu-1: not renewed: bad signature", &c);
    expect(ARGS("renew", "-a", auth_path), "ddpnet-revoke:x\n", CLI_EXIT_FAIL,
           "line 1: not a member certificate", &c);
    /* A rotation: the other key's certificate renewed by this one, given
     * the other's public key. */
    expect(ARGS("sign", "-a", other_path, "--name", "gpu-2", "--public-key", PUB_B, "--valid",
                "30d"), NULL, 0, NULL, &c);
    keep(old, sizeof(old), c.out);
    expect(ARGS("renew", "-a", auth_path, "--authority", other_pub, "--within", "31d"), old, 0,
           "1 renewed", &c);
    parse_out(&c, &m);
    assert_string_equal(m.name, "gpu-2");
    assert_int_equal(cert_verify(&m, auth_bin, now), CERT_OK);
    expect(ARGS("renew", "-a", auth_path, "--authority", "nope", "--within", "31d"), old,
           CLI_EXIT_FAIL, "invalid --authority 'nope'", &c);
}

/* Issue 56, a renewal's lifetime and when it is due: by default the
 * lifetime the certificate had (sign's backdating not counted: a token's
 * member of an hour is renewed for an hour), due in the last third of it
 * (9 of 30 days left is, 11 is not); --valid shorter than what is left
 * still ends later than the old, by a second (a renewal ends later, or
 * it is none). */
static void test_renew_lifetimes(void **state)
{
    char token[CERT_TEXT_MAX], held[CERT_TEXT_MAX], from[32];
    uint64_t now = (uint64_t)time(NULL);
    struct captured c;
    struct cert m, o;

    (void)state;
    make_token(token, sizeof(token), "spot-", "1h");
    expect(ARGS("sign", "--token", "-", "--name", "spot-1", "--public-key", PUB_B), token, 0,
           NULL, &c);
    keep(held, sizeof(held), c.out);
    expect(ARGS("renew", "-a", auth_path, "--within", "2h", "-"), held, 0, "1 renewed", &c);
    parse_out(&c, &m);
    assert_in_range(m.not_after, now + 3600 - 10, now + 3600 + 10);
    assert_in_range(m.not_before, now - 300 - 10, now - 300 + 10);
    /* --valid of a day for one with 30 days left. */
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-1", "--public-key", PUB_A, "--valid",
                "30d"), NULL, 0, NULL, &c);
    keep(held, sizeof(held), c.out);
    expect(ARGS("renew", "-a", auth_path, "--within", "31d", "--valid", "1d", "-"), held, 0,
           "1 renewed", &c);
    parse_out(&c, &m);
    assert_int_equal(cert_parse(held, &o), 0);
    assert_int_equal(cert_end(&m), cert_end(&o) + 1);
    assert_true(cert_renews(&m, &o));
    /* The last third by default: 30 days from 21 days ago, then 19. */
    snprintf(from, sizeof(from), "%llu", (unsigned long long)(now - 21 * DAY));
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-1", "--public-key", PUB_A,
                "--not-before", from, "--valid", "30d"), NULL, 0, NULL, &c);
    keep(held, sizeof(held), c.out);
    expect(ARGS("renew", "-a", auth_path, "-"), held, 0, "1 renewed, 0 not due yet", &c);
    parse_out(&c, &m);
    assert_in_range(m.not_after, now + 30 * DAY - 400, now + 30 * DAY + 10);
    snprintf(from, sizeof(from), "%llu", (unsigned long long)(now - 19 * DAY));
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-1", "--public-key", PUB_A,
                "--not-before", from, "--valid", "30d"), NULL, 0, NULL, &c);
    keep(held, sizeof(held), c.out);
    expect(ARGS("renew", "-a", auth_path, "-"), held, 0, "0 renewed, 1 not due yet", &c);
    assert_string_equal(c.out, "");
}

static void test_token_bad_inputs(void **state)
{
    struct captured c;

    (void)state;
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "-x"), NULL, CLI_EXIT_FAIL,
           "invalid --name-prefix '-x'", &c);
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "a..b"), NULL, CLI_EXIT_FAIL,
           "invalid --name-prefix 'a..b'", &c);
    expect(ARGS("token", "-a", auth_path, "--name-prefix",
                "a23456789-123456789-123456789-123456789-123456789-123456789-123"), NULL,
           CLI_EXIT_FAIL, "is too long (at most 62 characters)", &c);
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "spot-", "--max", "-1"), NULL,
           CLI_EXIT_FAIL, "invalid --max '-1'", &c);
    expect(ARGS("token", "-a", auth_path, "--name-prefix", "spot-", "--max", "4294967296"),
           NULL, CLI_EXIT_FAIL, "invalid --max", &c);
    expect(ARGS("token", "-a", auth_path), NULL, CLI_EXIT_USAGE,
           "missing option --name-prefix", &c);
    expect(ARGS("token", "-a", node_key, "--name-prefix", "spot-"), NULL, CLI_EXIT_FAIL,
           "a WireGuard key, not the authority's secret key", &c);
}

/* --- revoke and show ------------------------------------------------------------ */

static void test_revoke(void **state)
{
    char cert_line[CERT_TEXT_MAX], token[CERT_TEXT_MAX], path[PATH_CAP], idhex[80];
    uint8_t id[CERT_ID_LEN], secret[CERT_SECRET_LEN];
    struct captured c;
    struct cert m, r, t;

    (void)state;
    expect(ARGS("sign", "-a", auth_path, "--name", "gpu-9", "--public-key", PUB_A), NULL, 0,
           NULL, &c);
    keep(cert_line, sizeof(cert_line), c.out);
    parse_out(&c, &m);
    cert_id(&m, id);

    /* by its line, by a file, on stdin, by --id: the same id revoked */
    write_file(tmp(path, "gpu-9.cert"), cert_line, 0644);
    const char *const *ways[] = {
        ARGS("revoke", "-a", auth_path, cert_line),
        ARGS("revoke", "-a", auth_path, path),
        ARGS("revoke", "-a", auth_path, "-"),
    };
    for (size_t i = 0; i < 3; i++) {
        expect(ways[i], cert_line, 0, NULL, &c);
        one_line(c.out, "ddpnet-revoke:");
        parse_out(&c, &r);
        assert_int_equal(r.kind, CERT_REVOCATION);
        assert_memory_equal(r.subject, id, CERT_ID_LEN);
        assert_int_equal(cert_verify(&r, auth_bin, 0), CERT_OK);
    }
    sodium_bin2hex(idhex, sizeof(idhex), id, CERT_ID_LEN);
    expect(ARGS("revoke", "-a", auth_path, "--id", idhex), NULL, 0, NULL, &c);
    parse_out(&c, &r);
    assert_memory_equal(r.subject, id, CERT_ID_LEN);
    /* by key: the revocation names the WireGuard key itself */
    expect(ARGS("revoke", "-a", auth_path, "--public-key", PUB_A), NULL, 0, NULL, &c);
    parse_out(&c, &r);
    assert_memory_equal(r.subject, m.subject, CERT_PUBKEY_LEN);
    assert_int_equal(cert_verify(&r, auth_bin, 0), CERT_OK);
    expect(ARGS("revoke", "-a", auth_path, "--public-key", PUB_A, "--id", idhex), NULL,
           CLI_EXIT_FAIL, "name what to revoke once", &c);
    expect(ARGS("revoke", "-a", auth_path, "--public-key", "nope"), NULL, CLI_EXIT_FAIL,
           "invalid --public-key 'nope'", &c);
    /* show prints the id revoke takes */
    expect(ARGS("show", cert_line), NULL, 0, NULL, &c);
    assert_non_null(strstr(c.out, idhex));

    /* a join token: its token's id */
    make_token(token, sizeof(token), "spot-", "1d");
    assert_int_equal(cert_join_token_parse(token, &t, secret), 0);
    cert_id(&t, id);
    expect(ARGS("revoke", "-a", auth_path, "-"), token, 0, NULL, &c);
    parse_out(&c, &r);
    assert_memory_equal(r.subject, id, CERT_ID_LEN);

    /* refusals */
    expect(ARGS("revoke", "-a", auth_path), NULL, CLI_EXIT_FAIL, "name what to revoke once", &c);
    expect(ARGS("revoke", "-a", auth_path, path, "--id", idhex), NULL, CLI_EXIT_FAIL,
           "name what to revoke once", &c);
    expect(ARGS("revoke", "-a", auth_path, "--id", "abc"), NULL, CLI_EXIT_FAIL,
           "invalid --id 'abc' (expected 64 hex digits", &c);
    idhex[0] = 'g';
    expect(ARGS("revoke", "-a", auth_path, "--id", idhex), NULL, CLI_EXIT_FAIL, "invalid --id",
           &c);
    expect(ARGS("revoke", "-a", auth_path, "ddpnet-member:AAAA"), NULL, CLI_EXIT_FAIL,
           "not a member certificate, token or join token", &c);
    expect(ARGS("revoke", "-a", auth_path, "-"), c.out, CLI_EXIT_FAIL, "-: not a member", &c);
    expect(ARGS("revoke", "-a", auth_path, "--id", "00"), NULL, CLI_EXIT_FAIL, "invalid --id",
           &c);
    expect(ARGS("revoke", "-a", auth_path, tmp(path, "none")), NULL, CLI_EXIT_FAIL,
           "none: No such file or directory", &c);
    /* a revocation is not revoked */
    expect(ARGS("revoke", "-a", auth_path, cert_line), NULL, 0, NULL, &c);
    keep(cert_line, sizeof(cert_line), c.out);
    expect(ARGS("revoke", "-a", auth_path, cert_line), NULL, CLI_EXIT_FAIL,
           "a revocation cannot be revoked", &c);
}

static void test_show_refusals(void **state)
{
    struct captured c;

    (void)state;
    expect(ARGS("show"), NULL, CLI_EXIT_FAIL, "which statement?", &c);
    expect(ARGS("show", "-"), "hello\n", CLI_EXIT_FAIL, "-: not a ddpnet statement", &c);
    expect(ARGS("show", "ddpnet-member:AQE"), NULL, CLI_EXIT_FAIL, "not a ddpnet statement", &c);
    expect(ARGS("show", "-", "--authority", "nokey"), "x", CLI_EXIT_FAIL,
           "invalid --authority 'nokey'", &c);
    expect(ARGS("show", "a", "b"), NULL, CLI_EXIT_USAGE, "unexpected argument 'b'", &c);
}

/* Each sub-verb's --help: its usage, and each option with its default. */
static void test_help(void **state)
{
    static const struct {
        const char *verb;
        const char *want[3];
    } cases[] = {
        { "init", { "usage: ddpnet authority init [-o FILE]", "(default authority.key)" } },
        { "sign", { "--public-key KEY", "sign 365d", "-k, --key FILE" } },
        { "token", { "--name-prefix PREFIX", "(required)", "(default 0: 256, the most a member holds for one token)" } },
        { "revoke", { "--id HEX", "-a, --authority-key FILE" } },
        { "show", { "--authority KEY", "(default: not verified)" } },
        { "pubkey", { "-a, --authority-key FILE" } },
    };
    struct captured c;

    (void)state;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char flat[CAPTURE_MAX];
        size_t k = 0;

        expect(ARGS(cases[i].verb, "--help"), NULL, 0, NULL, &c);
        /* the text is wrapped: compare with the line breaks made blanks */
        for (const char *p = c.out; *p && k + 1 < sizeof(flat); p++) {
            if (*p == '\n' && p[1] == ' ') {
                flat[k++] = ' ';
                p += strspn(p + 1, " ");
            } else {
                flat[k++] = *p;
            }
        }
        flat[k] = '\0';
        for (size_t j = 0; j < 3 && cases[i].want[j]; j++)
            if (!strstr(flat, cases[i].want[j]))
                fail_msg("authority %s --help lacks '%s':\n%s", cases[i].verb, cases[i].want[j],
                         c.out);
    }
    expect(ARGS("--help"), NULL, 0, NULL, &c);
    assert_non_null(strstr(c.out, "  sign    print a member certificate"));
}

/* Through cli_main, as main.c's table dispatches it. */
static int run_main(int argc, char **argv)
{
    static const struct cli_verb verbs[] = {
        { "authority", cli_authority, "the cluster authority" },
    };

    return cli_main(verbs, 1, "9.8.7", argc, argv);
}

static void test_dispatch(void **state)
{
    char *argv[] = { (char *)(uintptr_t)"ddpnet", (char *)(uintptr_t)"help",
                     (char *)(uintptr_t)"authority", NULL };
    FILE *fo = tmpfile();
    char out[CAPTURE_MAX];
    int saved, rc;

    (void)state;
    fflush(stdout);
    saved = dup(STDOUT_FILENO);
    dup2(fileno(fo), STDOUT_FILENO);
    rc = run_main(3, argv);
    fflush(stdout);
    dup2(saved, STDOUT_FILENO);
    close(saved);
    capture_read(fo, out, sizeof(out));
    assert_int_equal(rc, 0);
    assert_non_null(strstr(out, "usage: ddpnet authority COMMAND"));
    assert_non_null(strstr(out, "  revoke  "));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_secret_file_refusals),
        cmocka_unit_test(test_sign_verifies),
        cmocka_unit_test(test_sign_expired),
        cmocka_unit_test(test_sign_bad_inputs),
        cmocka_unit_test(test_token_sign),
        cmocka_unit_test(test_routes),
        cmocka_unit_test(test_token_bad_inputs),
        cmocka_unit_test(test_revoke),
        cmocka_unit_test(test_renew),
        cmocka_unit_test(test_renew_lifetimes),
        cmocka_unit_test(test_show_refusals),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_dispatch),
    };

    return cmocka_run_group_tests(tests, setup, teardown);
}
