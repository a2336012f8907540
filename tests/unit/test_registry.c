/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/registry.c that need no etcd: the model the
 * device runs (registry_model: the file's nodes first and winning every
 * clash of name, key or address, then registrations in order, an earlier
 * one winning over a later one; this node always there once, as it
 * joined; each node left out counted and said with its reason; the
 * file's settings copied; no registrations giving a copy of the file,
 * a file of no nodes included), and what registry_new refuses before it
 * talks to anyone (a password file others may read, with the chmod that
 * fixes it; a CA, certificate, key or password file that is missing or
 * not a file), each in one line that names the file. registry_join and
 * the threads run against a real etcd in test_etcd.c. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/addr.h"
#include "config/cluster.h"
#include "overlay/registry/registry.h"
#include "tests/unit/registry_fixture.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="
#define K4 "vofb+H8p26CYyRdLZ9bDVFcOCg8L9uPQZkmy7iGBuns="
#define K5 "iNv2EpcsWUosL23eST7xxM0nrbqMNubr0AuJ/xQ6umE="
#define K6 "HZKtS2mH+gNHzF0vts+eR8g/T2yus7Xvb2KXMFKJIcM="

#define HEAD "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\nmtu = 1380\n" \
             "registry = etcd://127.0.0.1:2379/ddpnet/test\nregistry-ttl = 30\n"
#define NA "[node a]\npublic-key = " K1 "\naddress = 10.77.0.1\n"
#define NB "[node b]\npublic-key = " K2 "\naddress = 10.77.0.2\nendpoint = 192.0.2.2:51820\n"

static void parse(const char *text, struct cluster *c)
{
    struct cluster_diag d;
    char line[300];
    int r = cluster_parse(text, strlen(text), c, &d);

    for (size_t i = 0; r && i < d.n; i++) {
        cluster_diag_format(&d, i, "test.conf", line, sizeof(line));
        print_message("  %s\n", line);
    }
    assert_int_equal(r, 0);
}

static struct cluster_node node(const char *name, const char *key, const char *addr)
{
    struct cluster_node n = registry_fixture_node(name, key);

    assert_int_equal(cluster_addr_parse(addr, &n.address), 0);
    return n;
}

/* What the skip callback was told, one "NAME: why" per line. */
struct said {
    char text[1024];
    size_t calls;
};

static void on_skip(void *ctx, const struct cluster_node *n, const char *why)
{
    struct said *s = ctx;
    size_t at = strlen(s->text);

    s->calls++;
    snprintf(s->text + at, sizeof(s->text) - at, "%s: %s\n", n->name, why);
}

/* The names of c's nodes in order, space-separated. */
static const char *names(const struct cluster *c, char *buf, size_t len)
{
    size_t at = 0;

    buf[0] = '\0';
    for (size_t i = 0; i < c->n_nodes; i++)
        at += (size_t)snprintf(buf + at, len - at, "%s%s", i ? " " : "", c->nodes[i].name);
    return buf;
}

static void assert_same_settings(const struct cluster *a, const struct cluster *b)
{
    assert_true(cluster_addr_equal(&a->network, &b->network));
    assert_int_equal(a->prefix, b->prefix);
    assert_int_equal(a->port, b->port);
    assert_int_equal(a->mtu, b->mtu);
    assert_int_equal(a->mtu_set, b->mtu_set);
    assert_int_equal(a->persistent_keepalive, b->persistent_keepalive);
    assert_int_equal(a->busy_poll_us, b->busy_poll_us);
    assert_int_equal(a->hostnames_off, b->hostnames_off);
    assert_memory_equal(&a->metrics, &b->metrics, sizeof(a->metrics));
    assert_memory_equal(&a->registry, &b->registry, sizeof(a->registry));
}

static void test_model_no_registrations(void **state)
{
    struct cluster file, out;
    struct said said = { .text = "" };
    size_t skipped = 99;

    (void)state;
    parse(HEAD NA NB, &file);
    assert_int_equal(registry_model(&file, NULL, NULL, 0, &out, &skipped, on_skip, &said), 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(said.calls, 0);
    assert_same_settings(&out, &file);
    assert_int_equal(out.n_nodes, file.n_nodes);
    assert_ptr_not_equal(out.nodes, file.nodes);          /* a copy of its own */
    assert_memory_equal(out.nodes, file.nodes, file.n_nodes * sizeof(*file.nodes));
    assert_int_equal(out.registry.ttl_s, 30);
    assert_string_equal(out.registry.prefix, "/ddpnet/test");
    cluster_free(&out);
    cluster_free(&file);
}

/* A file with a registry needs no node: the model of no one, then of
 * this node alone. */
static void test_model_file_without_nodes(void **state)
{
    struct cluster file, out;
    struct cluster_node self = node("me", K3, "10.77.0.7");
    size_t skipped = 1;

    (void)state;
    parse(HEAD, &file);
    assert_int_equal(file.n_nodes, 0);
    assert_int_equal(registry_model(&file, NULL, NULL, 0, &out, &skipped, NULL, NULL), 0);
    assert_int_equal(out.n_nodes, 0);
    assert_int_equal(skipped, 0);
    assert_same_settings(&out, &file);
    cluster_free(&out);
    assert_int_equal(registry_model(&file, &self, NULL, 0, &out, &skipped, NULL, NULL), 0);
    assert_int_equal(out.n_nodes, 1);
    assert_memory_equal(&out.nodes[0], &self, sizeof(self));
    assert_ptr_equal(cluster_find_key(&out, self.public_key), &out.nodes[0]);
    cluster_free(&out);
    cluster_free(&file);
}

static void test_model_file_wins(void **state)
{
    struct cluster file, out;
    struct cluster_node self = node("me", K3, "10.77.0.7");
    struct cluster_node reg[] = {
        node("A", K4, "10.77.0.9"),                /* a's name, in other case */
        node("x", K1, "10.77.0.10"),               /* a's key */
        node("y", K5, "10.77.0.2"),                /* b's address */
        node("c", K6, "10.77.0.3"),                /* fits */
    };
    struct said said = { .text = "" };
    size_t skipped = 0;
    char buf[256];

    (void)state;
    parse(HEAD NA NB, &file);
    assert_int_equal(registry_model(&file, &self, reg, 4, &out, &skipped, on_skip, &said), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b me c");
    assert_int_equal(skipped, 3);
    assert_int_equal(said.calls, 3);
    assert_string_equal(said.text, "A: its name is another node's\n"
                                   "x: its key is another node's\n"
                                   "y: its address is another node's\n");
    /* The file's entries as the file has them. */
    assert_memory_equal(&out.nodes[0], &file.nodes[0], sizeof(file.nodes[0]));
    assert_memory_equal(&out.nodes[1], &file.nodes[1], sizeof(file.nodes[1]));
    assert_memory_equal(&out.nodes[3], &reg[3], sizeof(reg[3]));
    assert_same_settings(&out, &file);
    cluster_free(&out);
    /* Without a callback the count is still kept. */
    skipped = 0;
    assert_int_equal(registry_model(&file, &self, reg, 4, &out, &skipped, NULL, NULL), 0);
    assert_int_equal(skipped, 3);
    assert_int_equal(out.n_nodes, 4);
    cluster_free(&out);
    cluster_free(&file);
}

static void test_model_earlier_registration_wins(void **state)
{
    struct cluster file, out;
    struct cluster_node reg[] = {
        node("c", K3, "10.77.0.3"),
        node("C", K4, "10.77.0.4"),                /* c's name */
        node("d", K3, "10.77.0.5"),                /* c's key */
        node("e", K5, "10.77.0.3"),                /* c's address */
        node("f", K6, "10.77.0.6"),
    };
    struct said said = { .text = "" };
    size_t skipped = 0;
    char buf[256];

    (void)state;
    parse(HEAD NA NB, &file);
    assert_int_equal(registry_model(&file, NULL, reg, 5, &out, &skipped, on_skip, &said), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b c f");
    assert_int_equal(skipped, 3);
    assert_string_equal(said.text, "C: its name is another node's\n"
                                   "d: its key is another node's\n"
                                   "e: its address is another node's\n");
    cluster_free(&out);
    /* The order decides: the same nodes the other way round. */
    struct cluster_node rev[] = { reg[4], reg[3], reg[2], reg[1], reg[0] };
    said = (struct said){ .text = "" };
    assert_int_equal(registry_model(&file, NULL, rev, 5, &out, &skipped, on_skip, &said), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b f e d C");
    /* c clashes with C's name, d's key and e's address: the name is said
     * first, then the key, then the address. */
    assert_string_equal(said.text, "c: its name is another node's\n");
    assert_int_equal(skipped, 1);
    cluster_free(&out);
    cluster_free(&file);
}

static void test_model_self(void **state)
{
    struct cluster file, out;
    struct cluster_node self = node("me", K3, "10.77.0.7");
    struct cluster_node reg[] = {
        node("d", K4, "10.77.0.4"),
        node("me", K3, "10.77.0.7"),               /* ourselves, as registered */
        node("ME", K3, "10.77.0.8"),               /* ourselves, as etcd says now */
        node("me", K5, "10.77.0.9"),               /* our name, another key */
        node("z", K6, "10.77.0.7"),                /* our address */
    };
    struct said said = { .text = "" };
    size_t skipped = 0;
    char buf[256];

    (void)state;
    self.has_endpoint = true;
    assert_int_equal(cluster_endpoint_parse("198.51.100.7:51820", &self.endpoint, NULL), 0);
    parse(HEAD NA NB, &file);
    assert_int_equal(registry_model(&file, &self, reg, 5, &out, &skipped, on_skip, &said), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b me d");
    /* Ourselves as we joined: not what etcd holds of us. */
    assert_memory_equal(&out.nodes[2], &self, sizeof(self));
    assert_int_equal(skipped, 2);
    assert_string_equal(said.text, "me: its name is another node's\n"
                                   "z: its address is another node's\n");
    cluster_free(&out);
    /* With no registration at all, or only our own, self is there once. */
    assert_int_equal(registry_model(&file, &self, NULL, 0, &out, &skipped, NULL, NULL), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b me");
    assert_int_equal(skipped, 0);
    cluster_free(&out);
    assert_int_equal(registry_model(&file, &self, &reg[1], 1, &out, &skipped, NULL, NULL), 0);
    assert_string_equal(names(&out, buf, sizeof(buf)), "a b me");
    assert_int_equal(skipped, 0);
    cluster_free(&out);
    cluster_free(&file);
}

/* --- registry_new's refusals ------------------------------------------------- */

struct files {
    char dir[64];
    char password[128], ca[128], cert[128], key[128], missing[128], symlink[128];
};

static int files_setup(void **state)
{
    struct files *f = calloc(1, sizeof(*f));
    FILE *fp;

    assert_non_null(f);
    snprintf(f->dir, sizeof(f->dir), "/tmp/ddpnet-registry-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->password, sizeof(f->password), "%s/password", f->dir);
    snprintf(f->ca, sizeof(f->ca), "%s/ca.pem", f->dir);
    snprintf(f->cert, sizeof(f->cert), "%s/cert.pem", f->dir);
    snprintf(f->key, sizeof(f->key), "%s/key.pem", f->dir);
    snprintf(f->missing, sizeof(f->missing), "%s/missing.pem", f->dir);
    snprintf(f->symlink, sizeof(f->symlink), "%s/password-link", f->dir);
    assert_non_null(fp = fopen(f->password, "w"));
    fputs("s3cret\n", fp);
    fclose(fp);
    /* Not parsed before a connection: any bytes will do here. */
    const char *pem[] = { f->ca, f->cert, f->key };
    for (size_t i = 0; i < 3; i++) {
        assert_non_null(fp = fopen(pem[i], "w"));
        fputs("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", fp);
        fclose(fp);
        assert_int_equal(chmod(pem[i], 0600), 0);
    }
    assert_int_equal(symlink(f->password, f->symlink), 0);
    *state = f;
    return 0;
}

static int files_teardown(void **state)
{
    struct files *f = *state;
    const char *all[] = { f->password, f->ca, f->cert, f->key, f->symlink };

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        unlink(all[i]);
    rmdir(f->dir);
    free(f);
    return 0;
}

/* registry_new on HEAD plus extra [cluster] lines: NULL with err, or a
 * registry (freed here) with err untouched. */
static bool try_new(const char *extra, char *err, size_t len)
{
    char text[1024];
    struct cluster c;
    struct registry *r;

    snprintf(text, sizeof(text), "%s%s", HEAD, extra);
    parse(text, &c);
    snprintf(err, len, "untouched");
    r = registry_new(&c, err, len);
    cluster_free(&c);
    if (!r)
        return false;
    assert_string_equal(err, "untouched");
    registry_free(r);
    return true;
}

static void assert_err_has(const char *err, const char *part)
{
    if (!strstr(err, part))
        fail_msg("'%s' does not say '%s'", err, part);
}

static void test_new_without_files(void **state)
{
    char err[512];
    struct cluster c;
    struct registry *r;
    struct registry_status st;

    (void)state;
    assert_true(try_new("", err, sizeof(err)));
    /* A registry that never ran: connecting, nothing applied, no error. */
    parse(HEAD, &c);
    assert_non_null(r = registry_new(&c, err, sizeof(err)));
    cluster_free(&c);
    registry_status(r, &st);
    assert_int_equal(st.state, REGISTRY_CONNECTING);
    assert_int_equal(st.revision, 0);
    assert_string_equal(st.error, "");
    assert_true(registry_event_fd(r) >= 0);
    struct cluster_node *nodes = NULL;
    size_t n = 0;
    int64_t rev = 0;
    assert_int_equal(registry_take(r, &nodes, &n, &rev), 0);
    assert_null(nodes);
    registry_leave(r);                             /* never joined, never started */
    registry_leave(r);
    registry_free(r);
    assert_string_equal(registry_state_name(REGISTRY_CONNECTING), "connecting");
    assert_string_equal(registry_state_name(REGISTRY_SYNCED), "synced");
    assert_string_equal(registry_state_name(REGISTRY_UNREACHABLE), "unreachable");
    assert_string_equal(registry_state_name((enum registry_state)42), "unknown");
}

static void test_new_password_file(void **state)
{
    struct files *f = *state;
    char extra[512], err[512], want[512];
    static const mode_t refused[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644, 0666, 0660 };

    snprintf(extra, sizeof(extra), "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n",
             f->password);
    assert_int_equal(chmod(f->password, 0600), 0);
    assert_true(try_new(extra, err, sizeof(err)));
    assert_int_equal(chmod(f->password, 0400), 0);
    assert_true(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "registry-password-file %s: readable by group or others; run: "
             "chmod 600 %s", f->password, f->password);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(chmod(f->password, refused[i]), 0);
        assert_false(try_new(extra, err, sizeof(err)));
        assert_string_equal(err, want);
    }
    assert_int_equal(chmod(f->password, 0600), 0);
    /* Missing, a directory, a symbolic link: refused, naming the file. */
    snprintf(extra, sizeof(extra), "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n",
             f->missing);
    assert_false(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "registry-password-file %s: %s", f->missing, strerror(ENOENT));
    assert_string_equal(err, want);
    snprintf(extra, sizeof(extra), "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n", f->dir);
    assert_int_equal(chmod(f->dir, 0700), 0);
    assert_false(try_new(extra, err, sizeof(err)));
    assert_err_has(err, "registry-password-file");
    assert_err_has(err, f->dir);
    snprintf(extra, sizeof(extra), "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n",
             f->symlink);
    assert_false(try_new(extra, err, sizeof(err)));
    assert_err_has(err, f->symlink);
}

static void test_new_tls_files(void **state)
{
    struct files *f = *state;
    char extra[1024], err[512], want[512];

    snprintf(extra, sizeof(extra), "registry-ca = %s\n", f->ca);
    assert_true(try_new(extra, err, sizeof(err)));
    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-cert = %s\nregistry-key = %s\n",
             f->ca, f->cert, f->key);
    assert_true(try_new(extra, err, sizeof(err)));
    snprintf(extra, sizeof(extra), "registry-cert = %s\nregistry-key = %s\n", f->cert, f->key);
    assert_true(try_new(extra, err, sizeof(err)));
    /* Each missing in turn. */
    snprintf(extra, sizeof(extra), "registry-ca = %s\n", f->missing);
    assert_false(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "registry-ca %s: %s", f->missing, strerror(ENOENT));
    assert_string_equal(err, want);
    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-cert = %s\nregistry-key = %s\n",
             f->ca, f->missing, f->key);
    assert_false(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "registry-cert %s: %s", f->missing, strerror(ENOENT));
    assert_string_equal(err, want);
    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-cert = %s\nregistry-key = %s\n",
             f->ca, f->cert, f->missing);
    assert_false(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "registry-key %s: %s", f->missing, strerror(ENOENT));
    assert_string_equal(err, want);
    /* A directory is no file. */
    snprintf(extra, sizeof(extra), "registry-ca = %s\n", f->dir);
    assert_false(try_new(extra, err, sizeof(err)));
    assert_err_has(err, "registry-ca");
    assert_err_has(err, "not a regular file");
    /* The CA file is checked before the password file. */
    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-user = u\n"
             "registry-password-file = %s\n", f->missing, f->missing);
    assert_false(try_new(extra, err, sizeof(err)));
    assert_err_has(err, "registry-ca");
}

/* A secret's file -- the TLS client key's as the password's -- is refused
 * when group or others may use it, when a user other than root or us owns
 * it, and when it is a symbolic link. */
static void secret_file_checks(const char *what, const char *path, const char *extra)
{
    static const mode_t refused[] = { 0640, 0604, 0620, 0602, 0610, 0601, 0644, 0660 };
    char err[512], want[512];

    assert_int_equal(chmod(path, 0600), 0);
    assert_true(try_new(extra, err, sizeof(err)));
    snprintf(want, sizeof(want), "%s %s: readable by group or others; run: chmod 600 %s", what,
             path, path);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        assert_int_equal(chmod(path, refused[i]), 0);
        assert_false(try_new(extra, err, sizeof(err)));
        assert_string_equal(err, want);
    }
    assert_int_equal(chmod(path, 0600), 0);
    if (geteuid() == 0) {                 /* only root gives a file away */
        assert_int_equal(chown(path, 65534, 65534), 0);
        assert_false(try_new(extra, err, sizeof(err)));
        snprintf(want, sizeof(want), "%s %s: owned by uid 65534, not by root; run: chown root %s",
                 what, path, path);
        assert_string_equal(err, want);
        assert_int_equal(chown(path, 0, 0), 0);
        assert_true(try_new(extra, err, sizeof(err)));
    }
}

static void test_new_key_file(void **state)
{
    struct files *f = *state;
    char extra[1024], err[512], link_path[300];

    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-cert = %s\nregistry-key = %s\n",
             f->ca, f->cert, f->key);
    secret_file_checks("registry-key", f->key, extra);
    /* A link to a good key is refused too; a CA or certificate may be one. */
    snprintf(link_path, sizeof(link_path), "%s/key-link", f->dir);
    assert_int_equal(symlink(f->key, link_path), 0);
    snprintf(extra, sizeof(extra), "registry-ca = %s\nregistry-cert = %s\nregistry-key = %s\n",
             f->ca, f->cert, link_path);
    assert_false(try_new(extra, err, sizeof(err)));
    assert_err_has(err, "registry-key");
    assert_err_has(err, "symbolic link");
    unlink(link_path);
    assert_int_equal(chmod(f->cert, 0644), 0);    /* no secret: others may read it */
    snprintf(extra, sizeof(extra), "registry-cert = %s\nregistry-key = %s\n", f->cert, f->key);
    assert_true(try_new(extra, err, sizeof(err)));
}

static void test_new_password_owner(void **state)
{
    struct files *f = *state;
    char extra[512];

    snprintf(extra, sizeof(extra), "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n", f->password);
    secret_file_checks("registry-password-file", f->password, extra);
}

/* The keeper's keep-alives on a slow etcd (issue 59), with the default
 * 15 s lease: every 5 s while etcd answers; after a failure again in 1 s,
 * then 2, 4, and no further apart than 5 s; each waits as long as the
 * lease has left (10 s right after an answer, not 3 s), and 3 s at least
 * once our clock says it ran out (etcd's word decides). */
static void test_keepalive_plan(void **state)
{
    (void)state;
    const uint64_t t = 100000;

    assert_int_equal(registry_keepalive_next_ms(15, 0, t), t + 5000);
    assert_int_equal(registry_keepalive_next_ms(15, 1, t), t + REGISTRY_KEEPALIVE_RETRY_MS);
    assert_int_equal(registry_keepalive_next_ms(15, 2, t), t + 2000);
    assert_int_equal(registry_keepalive_next_ms(15, 3, t), t + 4000);
    assert_int_equal(registry_keepalive_next_ms(15, 4, t), t + 5000);
    assert_int_equal(registry_keepalive_next_ms(15, 1000, t), t + 5000);
    assert_int_equal(registry_keepalive_next_ms(2, 1, t), t + 666);   /* a short lease */
    /* A keep-alive 5 s into a 15 s lease waits the 10 s it has left. */
    assert_int_equal(registry_keepalive_wait_ms(t + 15000, t + 5000), 10000);
    assert_int_equal(registry_keepalive_wait_ms(t + 15000, t + 13000), REGISTRY_TIMEOUT_MS);
    assert_int_equal(registry_keepalive_wait_ms(t, t + 60000), REGISTRY_TIMEOUT_MS);
}

/* The watcher's rules (issue 59): a watch etcd set up that ended is taken
 * up from its revision unless its history is gone (-ESTALE) or it fell
 * too far behind for one message (-EMSGSIZE), or the watcher stops; a read of
 * the prefix that failed waits twice as long the next time, up to the
 * most a join's request waits. */
static void test_watch_plan(void **state)
{
    (void)state;
    assert_true(registry_watch_resumes(-EIO));
    assert_true(registry_watch_resumes(-EPIPE));
    assert_true(registry_watch_resumes(-ETIMEDOUT));
    assert_true(registry_watch_resumes(-ECONNREFUSED));
    assert_false(registry_watch_resumes(-ESTALE));
    assert_false(registry_watch_resumes(-EMSGSIZE));
    assert_false(registry_watch_resumes(-ECANCELED));
    assert_int_equal(registry_read_timeout_next(REGISTRY_JOIN_REQUEST_MIN_MS),
                     2 * REGISTRY_JOIN_REQUEST_MIN_MS > REGISTRY_JOIN_REQUEST_MAX_MS
                         ? REGISTRY_JOIN_REQUEST_MAX_MS : 2 * REGISTRY_JOIN_REQUEST_MIN_MS);
    assert_int_equal(registry_read_timeout_next(REGISTRY_JOIN_REQUEST_MAX_MS),
                     REGISTRY_JOIN_REQUEST_MAX_MS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_keepalive_plan),
        cmocka_unit_test(test_watch_plan),
        cmocka_unit_test(test_model_no_registrations),
        cmocka_unit_test(test_model_file_without_nodes),
        cmocka_unit_test(test_model_file_wins),
        cmocka_unit_test(test_model_earlier_registration_wins),
        cmocka_unit_test(test_model_self),
        cmocka_unit_test(test_new_without_files),
        cmocka_unit_test_setup_teardown(test_new_password_file, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_new_tls_files, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_new_key_file, files_setup, files_teardown),
        cmocka_unit_test_setup_teardown(test_new_password_owner, files_setup, files_teardown),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
