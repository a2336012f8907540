/* SPDX-License-Identifier: MIT */
/* The registry's bounds under a flooded prefix (overlay/registry/), against
 * a real etcd started here by etcd_fixture.h (loopback, random ports,
 * data in /dev/shm, killed and removed on every way out; skipped when no
 * etcd is on PATH). Anyone who may write the prefix may write
 * anything there; what the watcher hands the loop must stay what the
 * headers say:
 *
 *  - a value of RECORD_VALUE_MAX bytes is parsed, one byte more is ignored
 *    with a log line naming the key, and so is one of 64 KiB; one of
 *    10 MiB, larger than any one answer the client takes, is passed over
 *    and its neighbours are still read;
 *  - a flood of FLOOD keys -- BIG_N of them 64 KiB values that would
 *    decode but for their size (about 70 MiB as etcd's gateway sends them,
 *    more than the client ever took in one answer), the rest malformed
 *    every way a record can be, and keys that name no member, beside
 *    VALID_N valid members and one legitimate node -- gives a snapshot of
 *    exactly the valid ones, each with its own key and address, within
 *    SYNC_MS and PEAK_MAX_MIB of peak memory; the same through the watch
 *    changes nothing, a valid member overwritten with an oversized or a
 *    malformed value is dropped, and a legitimate node joining after it
 *    all is applied; the log says so in a few rate-limited lines;
 *  - more valid members than CLUSTER_MAX_NODES: a range of them comes in
 *    pages, every key once and in order; exactly CLUSTER_MAX_NODES are
 *    held, the rest said to be too many in the log; at the cap a new one
 *    is left out, and once a member leaves the next legitimate one is
 *    held; the model from the file and the snapshot is the file's nodes
 *    and the cap;
 *  - a watch that starts behind gets what it missed in one message of the
 *    stream, as large as the writer made it: it is not held whole (the
 *    watch ends with -EMSGSIZE, its owner reads the prefix again in
 *    pages) and memory stays a fraction of it.
 *
 * etcd runs with large transactions (MAX_TXN_OPS puts, MAX_REQUEST bytes)
 * so that the flood is written in a few seconds through the same client.
 * The peak memory checks reset the kernel's high-water mark and are left
 * out under ASan, whose quarantine keeps what was freed. */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "config/addr.h"
#include "config/cert.h"
#include "config/cluster.h"
#include "overlay/base/log.h"
#include "overlay/registry/etcd.h"
#include "overlay/registry/record.h"
#include "overlay/registry/registry.h"
#include "tests/unit/etcd_fixture.h"
#include "tests/unit/registry_fixture.h"

#define FILL_TIMEOUT_MS  20000L
#define MAX_TXN_OPS      1024
#define MAX_REQUEST      (16 << 20)
/* The flood. */
#define FLOOD            20000u
/* 64 KiB each: about 70 MiB as the gateway sends them, more than the
 * client ever took in one answer (64 MiB before it read in pages). */
#define BIG_N            800u
#define BIG_LEN          (64u * 1024u)
#define GIANT_LEN        (10u << 20)
#define VALID_N          5000u
/* The watcher reads the flood and hands over its snapshot within this. */
#define SYNC_MS          15000
/* Peak memory the watcher may add while it reads the flood (not checked
 * under ASan, whose quarantine keeps what was freed): the members take a
 * few MiB, the rest is one page of etcd's answer as text and as parsed
 * JSON. The flood whole, read at once, would be 70 MiB of text alone. */
#define PEAK_MAX_MIB     48
#define WAIT_MS          5000
/* A watch behind by WATCH_REVS revisions of WATCH_PER_REV values each. */
#define WATCH_REVS       6u
#define WATCH_PER_REV    16u
#define WATCH_VALUE      (256u * 1024u)
#define WATCH_MIB        (WATCH_REVS * WATCH_PER_REV * (WATCH_VALUE >> 10) >> 10)

/* --- the etcd this test runs (etcd_fixture) ------------------------------------------ */

static int group_setup(void **state)
{
    /* Big transactions, so that the flood is written in a few. */
    static char ops[16], bytes[16];
    static const char *const extra[] = { "--max-txn-ops", ops, "--max-request-bytes", bytes,
                                         NULL };

    (void)state;
    snprintf(ops, sizeof(ops), "%d", MAX_TXN_OPS);
    snprintf(bytes, sizeof(bytes), "%d", MAX_REQUEST);
    return etcd_fixture_start(extra);
}

static int group_teardown(void **state)
{
    (void)state;
    etcd_fixture_stop();
    return 0;
}

static struct etcd *client(long timeout_ms)
{
    const char *urls[] = { etcd_fixture.url };
    struct etcd_config c = { .urls = urls, .n_urls = 1, .timeout_ms = timeout_ms };
    struct etcd *e = etcd_new(&c);

    assert_non_null(e);
    return e;
}

/* --- the log, caught ---------------------------------------------------------------- */

/* stderr into a file of the scratch directory while a test runs, read
 * back by log_text. */
static struct {
    int saved;
    char path[192];
} caught = { .saved = -1 };

static void catch_log(void)
{
    int fd;

    snprintf(caught.path, sizeof(caught.path), "%s/log", etcd_fixture.dir);
    fd = open(caught.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    assert_true(fd >= 0);
    fflush(stderr);
    caught.saved = dup(STDERR_FILENO);
    assert_true(caught.saved >= 0);
    assert_int_equal(dup2(fd, STDERR_FILENO), STDERR_FILENO);
    close(fd);
    log_init("flood", true, LOG_LVL_WARN);
}

/* Gives stderr back; the lines written meanwhile (malloc'd). */
static char *release_log(void)
{
    FILE *f;
    char *text;
    long len;

    if (caught.saved < 0)
        return NULL;
    fflush(stderr);
    dup2(caught.saved, STDERR_FILENO);
    close(caught.saved);
    caught.saved = -1;
    f = fopen(caught.path, "r");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    len = ftell(f);
    rewind(f);
    text = calloc(1, (size_t)len + 1);
    assert_non_null(text);
    assert_int_equal(fread(text, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    return text;
}

/* After each test: stderr given back if a failure left it caught, with
 * the end of what was logged. */
static int give_back_log(void **state)
{
    char *log = release_log();

    (void)state;
    if (log && log[0]) {
        size_t len = strlen(log);
        print_message("the log's end:\n%s\n", len > 3000 ? log + len - 3000 : log);
    }
    free(log);
    return 0;
}

/* A failure, said where it can be read: stderr given back first. */
#define FAIL(...)                                                                   \
    do {                                                                            \
        give_back_log(NULL);                                                        \
        fail_msg(__VA_ARGS__);                                                      \
    } while (0)

static size_t count_lines(const char *text, const char *needle)
{
    size_t n = 0;

    for (const char *at = text; (at = strstr(at, needle)); at += strlen(needle))
        n++;
    return n;
}

/* --- what goes into etcd ---------------------------------------------------------------- */

/* Valid member i: name v<i>, a key of its own, an address of 10.64/10. */
static void key_b64(unsigned i, uint8_t tag, char out[45])
{
    uint8_t key[CLUSTER_KEY_LEN];

    memset(key, 0x5a, sizeof(key));
    key[0] = tag;
    memcpy(key + 1, &i, sizeof(i));
    sodium_bin2base64(out, 45, key, sizeof(key), sodium_base64_VARIANT_ORIGINAL);
}

static void address_of(unsigned i, char *out, size_t len)
{
    unsigned a = (64u << 16) + 1 + i;       /* 10.64.0.1 onwards */

    snprintf(out, len, "10.%u.%u.%u", (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

static char *valid_value(const char *name, unsigned i, uint8_t tag, const char *extra)
{
    char key[45], addr[32], *v = NULL;

    key_b64(i, tag, key);
    address_of(i, addr, sizeof(addr));
    assert_true(asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\"%s}", name,
                         key, addr, extra ? extra : "") > 0);
    return v;
}

/* A value of exactly len bytes that decodes but for its size: a valid
 * record padded with a field nobody reads. */
static char *padded_value(const char *name, unsigned i, uint8_t tag, size_t len)
{
    char *base = valid_value(name, i, tag, NULL), *v = malloc(len + 1);
    size_t head = strlen(base) - 1;          /* without the closing brace */
    static const char pad_open[] = ",\"pad\":\"", pad_close[] = "\"}";

    assert_non_null(v);
    assert_true(len > head + strlen(pad_open) + strlen(pad_close));
    memcpy(v, base, head);
    memcpy(v + head, pad_open, strlen(pad_open));
    size_t fill = len - head - strlen(pad_open) - strlen(pad_close);
    memset(v + head + strlen(pad_open), 'p', fill);
    memcpy(v + len - strlen(pad_close), pad_close, strlen(pad_close));
    v[len] = '\0';
    free(base);
    return v;
}

/* Malformed record number i (of the kinds below), for a key whose name is
 * name. None may be applied. */
#define MALFORMED_KINDS 20

static char *malformed_value(const char *name, unsigned i)
{
    char key[45], addr[32], *v = NULL;
    int r = -1;

    key_b64(i, 0xbb, key);
    address_of(i, addr, sizeof(addr));
    switch (i % MALFORMED_KINDS) {
    case 0: r = asprintf(&v, "not json at all %u", i); break;
    case 1: r = asprintf(&v, "[\"%s\",\"%s\",\"%s\"]", name, key, addr); break;
    case 2: r = asprintf(&v, "{\"name\":\"%s\",\"address\":\"%s\"}", name, addr); break;
    case 3: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%.40s\",\"address\":\"%s\"}", name,
                         key, addr); break;                                  /* short key */
    case 4: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"192.0.2.%u\"}",
                         name, key, 1 + i % 250); break;                     /* outside */
    case 5: r = asprintf(&v, "{\"name\":\"other%u\",\"public_key\":\"%s\",\"address\":\"%s\"}", i,
                         key, addr); break;                                  /* not its key's */
    case 6: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\"} trailing",
                         name, key, addr); break;
    case 7: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\",", name,
                         key, addr); break;                                  /* cut short */
    case 8: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\","
                         "\"port\":70000}", name, key, addr); break;
    case 9: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\","
                         "\"endpoint\":\"nowhere\"}", name, key, addr); break;
    case 10: r = asprintf(&v, "{\"name\":\"%s\\u0000x\",\"public_key\":\"%s\",\"address\":\"%s\"}",
                          name, key, addr); break;                           /* NUL inside */
    case 11: r = asprintf(&v, "{'name':'%s','public_key':'%s','address':'%s'}", name, key,
                          addr); break;                                      /* JS, not JSON */
    case 12: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"10.0.0.0\"}",
                          name, key); break;                                 /* the network's */
    case 13: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"10.127.255.255\"}",
                          name, key); break;                                 /* its broadcast */
    case 14: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":7,\"address\":\"%s\"}", name,
                          addr); break;
    case 15: r = asprintf(&v, "%s", ""); break;                             /* empty */
    case 16: {                                                               /* deep nesting */
        v = malloc(RECORD_VALUE_MAX + 1);
        assert_non_null(v);
        memset(v, '[', RECORD_VALUE_MAX / 2);
        memset(v + RECORD_VALUE_MAX / 2, ']', RECORD_VALUE_MAX / 2);
        v[RECORD_VALUE_MAX / 2 * 2] = '\0';
        return v;
    }
    case 17: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\","
                          "\"port\":\"51820\"}", name, key, addr); break;
    case 18: r = asprintf(&v, "{\"name\":\"%s\",\"public_key\":\"%s\",\"address\":\"%s\"}", name,
                          key, "10.64.0.999"); break;
    default: r = asprintf(&v, "\xff\xfe{\"name\":\"%s\"}", name); break;   /* not text */
    }
    assert_true(r >= 0);
    return v;
}

/* Puts the n pairs in transactions of MAX_TXN_OPS puts and at most
 * MAX_REQUEST / 2 bytes of values (base64 grows them by a third). */
static void put_all(struct etcd *e, char **keys, char **values, size_t n)
{
    struct etcd_put *puts = calloc(MAX_TXN_OPS, sizeof(*puts));
    size_t at = 0;

    assert_non_null(puts);
    while (at < n) {
        size_t k = 0, bytes = 0;
        bool ok = false;
        while (at + k < n && k < MAX_TXN_OPS &&
               (k == 0 || bytes + strlen(values[at + k]) < (size_t)MAX_REQUEST / 2)) {
            puts[k] = (struct etcd_put){ keys[at + k], values[at + k], 0 };
            bytes += strlen(values[at + k]) + strlen(keys[at + k]);
            k++;
        }
        int ret = etcd_txn(e, NULL, 0, puts, k, &ok);
        if (ret || !ok)
            fail_msg("filling etcd: %d: %s", ret, etcd_error(e));
        at += k;
    }
    free(puts);
}

struct batch {
    char **keys, **values;
    size_t n, cap;
};

static void add(struct batch *b, const char *prefix, const char *name, char *value)
{
    if (b->n == b->cap) {
        b->cap = b->cap ? 2 * b->cap : 1024;
        b->keys = realloc(b->keys, b->cap * sizeof(*b->keys));
        b->values = realloc(b->values, b->cap * sizeof(*b->values));
        assert_non_null(b->keys);
        assert_non_null(b->values);
    }
    assert_true(asprintf(&b->keys[b->n], "%s/members/%s", prefix, name) > 0);
    b->values[b->n++] = value;
}

static void flush(struct batch *b, struct etcd *e)
{
    put_all(e, b->keys, b->values, b->n);
    for (size_t i = 0; i < b->n; i++) {
        free(b->keys[i]);
        free(b->values[i]);
    }
    b->n = 0;
}

static void batch_free(struct batch *b)
{
    free(b->keys);
    free(b->values);
    memset(b, 0, sizeof(*b));
}

/* --- the registry ------------------------------------------------------------------------- */

static struct registry *registry_on(const char *prefix)
{
    char text[512], err[256] = "";
    struct cluster c;
    struct cluster_diag d;
    struct registry *r;

    snprintf(text, sizeof(text), "[cluster]\nnetwork = 10.64.0.0/10\nport = 51820\n"
             "registry = etcd://%s%s\n", etcd_fixture.url + strlen("http://"), prefix);
    assert_int_equal(cluster_parse(text, strlen(text), &c, &d), 0);
    r = registry_new(&c, err, sizeof(err));
    if (!r)
        fail_msg("registry_new: %s", err);
    cluster_free(&c);
    return r;
}

/* The next snapshot within ms (NULL when none came; *n its size). */
static struct cluster_node *take_within(struct registry *r, int ms, size_t *n)
{
    struct cluster_node *nodes = NULL;
    int64_t rev;

    return registry_fixture_take(r, ms, &nodes, n, &rev) ? nodes : NULL;
}

/* Snapshots until one passes ok(ctx, nodes, n) within ms: that one (to
 * free), or NULL; *n: the size of the last one taken. */
static struct cluster_node *take_until(struct registry *r, int ms,
                                       bool (*ok)(const void *ctx,
                                                  const struct cluster_node *nodes, size_t n),
                                       const void *ctx, size_t *n)
{
    int64_t deadline = etcd_fixture_now_ms() + ms;

    while (etcd_fixture_now_ms() < deadline) {
        struct cluster_node *nodes = take_within(r, (int)(deadline - etcd_fixture_now_ms()), n);
        if (!nodes)
            return NULL;
        if (ok(ctx, nodes, *n))
            return nodes;
        free(nodes);
    }
    return NULL;
}

static const struct cluster_node *find(const struct cluster_node *nodes, size_t n,
                                       const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(nodes[i].name, name))
            return &nodes[i];
    return NULL;
}

/* A figure of /proc/self/status in KiB (format: "VmHWM: %ld kB"); -1
 * when not found. */
static long status_kib(const char *format)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kib = -1;

    while (f && fgets(line, sizeof(line), f))
        if (sscanf(line, format, &kib) == 1)
            break;
    if (f)
        fclose(f);
    return kib;
}

static long peak_kib(void)
{
    return status_kib("VmHWM: %ld kB");
}

static long rss_kib(void)
{
    return status_kib("VmRSS: %ld kB");
}

/* Starts the peak over from now (the kernel's high-water mark), from a
 * heap that holds no freed memory of earlier steps (which later ones
 * would reuse unseen). */
static bool reset_peak(void)
{
    malloc_trim(0);
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && write(fd, "5", 1) == 1;

    if (fd >= 0)
        close(fd);
    return ok;
}

static void registry_stop(struct registry *r)
{
    int64_t t0 = etcd_fixture_now_ms();

    registry_free(r);
    assert_true(etcd_fixture_now_ms() - t0 < WAIT_MS);
}

/* --- 1 KiB, and one byte more ------------------------------------------------------------- */

static bool has_exact(const void *ctx, const struct cluster_node *nodes, size_t n)
{
    const char *const *names = ctx;
    size_t want = 0;

    for (; names[want]; want++)
        if (!find(nodes, n, names[want]))
            return false;
    return n == want;
}

static void test_value_size_boundary(void **state)
{
    struct etcd *e;
    struct batch b = { 0 };
    struct registry *r;
    size_t n = 0;
    char *log;
    static const char *const want[] = { "at-max", "small", NULL };

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client(FILL_TIMEOUT_MS);
    add(&b, "/b", "at-max", padded_value("at-max", 1, 0x01, RECORD_VALUE_MAX));
    add(&b, "/b", "one-over", padded_value("one-over", 2, 0x01, RECORD_VALUE_MAX + 1));
    add(&b, "/b", "huge", padded_value("huge", 3, 0x01, BIG_LEN));
    add(&b, "/b", "small", valid_value("small", 4, 0x01, NULL));
    flush(&b, e);
    /* A value larger than any one answer of etcd the client takes (as
     * large as this etcd lets anyone write): passed over, its neighbours
     * read. */
    add(&b, "/b", "giant", padded_value("giant", 5, 0x01, GIANT_LEN));
    flush(&b, e);
    catch_log();
    r = registry_on("/b");
    assert_int_equal(registry_start(r), 0);
    struct cluster_node *nodes = take_until(r, WAIT_MS, has_exact, want, &n);
    if (!nodes)
        FAIL("no snapshot of exactly at-max and small (last had %zu)", n);
    free(nodes);
    registry_stop(r);
    log = release_log();
    /* Each one left out is named, with why. */
    assert_non_null(strstr(log, "registry: ignored /b/members/one-over: a value too long"));
    assert_non_null(strstr(log, "registry: ignored /b/members/huge: a value too long"));
    assert_null(strstr(log, "/b/members/at-max"));
    free(log);
    batch_free(&b);
    etcd_free(e);
}

/* --- the flood ------------------------------------------------------------------------------ */

struct flood_want {
    size_t valid;                             /* exactly this many */
    const char *legit, *absent;
};

static bool flood_ok(const void *ctx, const struct cluster_node *nodes, size_t n)
{
    const struct flood_want *w = ctx;

    return n == w->valid && (!w->legit || find(nodes, n, w->legit)) &&
           (!w->absent || !find(nodes, n, w->absent));
}

/* Every node of the snapshot is one of the valid ones: v<i> with i's key
 * and address, or the legitimate nodes. */
static void expect_only_valid(const struct cluster_node *nodes, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned k;
        char key[45], addr[32], got[45], gaddr[64];
        if (!strncmp(nodes[i].name, "legit", 5))
            continue;
        if (sscanf(nodes[i].name, "v%u", &k) != 1 || k >= VALID_N)
            FAIL("a node that is no valid member's: %s", nodes[i].name);
        key_b64(k, 0xaa, key);
        address_of(k, addr, sizeof(addr));
        sodium_bin2base64(got, sizeof(got), nodes[i].public_key, CLUSTER_KEY_LEN,
                          sodium_base64_VARIANT_ORIGINAL);
        assert_true(cluster_addr_format(&nodes[i].address, gaddr, sizeof(gaddr)) >= 0);
        assert_string_equal(got, key);
        assert_string_equal(gaddr, addr);
    }
}

static void test_flood(void **state)
{
    struct etcd *e;
    struct batch b = { 0 };
    struct registry *r;
    struct cluster_node *nodes;
    size_t n = 0, malformed = 0;
    char name[64];
    int64_t t0;
    long before, peak;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client(FILL_TIMEOUT_MS);
    t0 = etcd_fixture_now_ms();
    /* FLOOD keys: BIG_N oversized, VALID_N valid, the rest malformed,
     * interleaved in key order; and one legitimate node. */
    for (unsigned i = 0; i < FLOOD; i++) {
        if (i % 20 == 0 && i / 20 < BIG_N) {
            snprintf(name, sizeof(name), "f%05u-big", i);
            add(&b, "/f", name, padded_value(name, i, 0xcc, BIG_LEN));
        } else if (i % 4 == 1 && i / 4 < VALID_N) {
            snprintf(name, sizeof(name), "v%u", i / 4);
            add(&b, "/f", name, valid_value(name, i / 4, 0xaa, NULL));
        } else {
            snprintf(name, sizeof(name), "f%05u-bad", i);
            add(&b, "/f", name, malformed_value(name, i));
            malformed++;
        }
        if (b.n == MAX_TXN_OPS)
            flush(&b, e);
    }
    /* Keys that are not a member's name at all. */
    add(&b, "/f", "a/b", valid_value("a/b", 900001, 0xdd, NULL));
    add(&b, "/f", "name-longer-than-any-node-may-have-xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx",
        valid_value("x", 900002, 0xdd, NULL));
    add(&b, "/f", "legit1", valid_value("legit1", 900003, 0xee, NULL));
    flush(&b, e);
    print_message("flood: %u keys (%u of %u KiB, %u valid, %zu malformed) written in %lld ms\n",
                  FLOOD + 3, BIG_N, BIG_LEN / 1024, VALID_N, malformed,
                  (long long)(etcd_fixture_now_ms() - t0));

    /* The watcher reads it whole: the valid ones and the legitimate node,
     * nothing else, in bounded time and memory. */
    struct flood_want want = { .valid = VALID_N + 1, .legit = "legit1" };
    catch_log();
    bool peak_known = reset_peak();
    before = rss_kib();
    r = registry_on("/f");
    t0 = etcd_fixture_now_ms();
    assert_int_equal(registry_start(r), 0);
    nodes = take_until(r, SYNC_MS, flood_ok, &want, &n);
    int64_t took = etcd_fixture_now_ms() - t0;
    peak = peak_kib();
    if (!nodes) {
        struct registry_status st;
        registry_status(r, &st);
        FAIL("no snapshot of the %zu valid members within %d ms (last: %zu; state %s, "
                 "error: %s)", want.valid, SYNC_MS, n, registry_state_name(st.state), st.error);
    }
    expect_only_valid(nodes, n);
    free(nodes);
    print_message("synced in %lld ms; peak memory %+ld MiB (%s)\n", (long long)took,
                  (peak - before) / 1024, peak_known ? "since the start" : "high-water mark");
#ifndef __SANITIZE_ADDRESS__           /* its quarantine keeps what was freed */
    if (peak_known && peak - before > PEAK_MAX_MIB * 1024L)
        FAIL("reading the flood took %ld MiB at its peak (at most %d)", (peak - before) / 1024,
             PEAK_MAX_MIB);
#endif

    /* More of the same through the watch: a valid member overwritten with
     * an oversized value is dropped, another with a malformed one too, a
     * flood of new bad keys changes nothing else, and a legitimate node
     * joining after all that is applied. */
    add(&b, "/f", "v1", padded_value("v1", 1, 0xaa, BIG_LEN));
    add(&b, "/f", "v2", malformed_value("v2", 7));
    for (unsigned i = 0; i < 50; i++) {
        snprintf(name, sizeof(name), "w%05u-big", i);
        add(&b, "/f", name, padded_value(name, 100000 + i, 0xcc, BIG_LEN));
        snprintf(name, sizeof(name), "w%05u-bad", i);
        add(&b, "/f", name, malformed_value(name, i));
    }
    flush(&b, e);
    add(&b, "/f", "legit2", valid_value("legit2", 900004, 0xee, NULL));
    flush(&b, e);
    struct flood_want after = { .valid = VALID_N + 1 - 2 + 1, .legit = "legit2", .absent = "v1" };
    nodes = take_until(r, WAIT_MS, flood_ok, &after, &n);
    if (!nodes)
        FAIL("no snapshot with legit2 and without v1, v2 within %d ms (last: %zu)", WAIT_MS, n);
    registry_stop(r);
    /* The nodes are the right ones, each as its record says. */
    expect_only_valid(nodes, n);
    assert_null(find(nodes, n, "v2"));
    assert_non_null(find(nodes, n, "v3"));
    const struct cluster_node *l = find(nodes, n, "legit1");
    char key[45], got[45];
    assert_non_null(l);
    key_b64(900003, 0xee, key);
    sodium_bin2base64(got, sizeof(got), l->public_key, CLUSTER_KEY_LEN,
                      sodium_base64_VARIANT_ORIGINAL);
    assert_string_equal(got, key);
    free(nodes);
    char *log = release_log();
    /* Said in the log, rate-limited: some lines, not one per key. */
    size_t lines = count_lines(log, "registry: ignored /f/members/");
    print_message("log: %zu lines of ignored keys\n", lines);
    assert_true(lines > 0);
    assert_true(lines < 200);
    free(log);
    batch_free(&b);
    etcd_free(e);
}

/* --- the cap ---------------------------------------------------------------------------------- */

struct order {
    size_t n;
    char last[64];
    bool disorder;
};

static void in_order(void *ctx, const struct etcd_kv *kv)
{
    struct order *o = ctx;
    char key[64];

    snprintf(key, sizeof(key), "%.*s", (int)kv->key_len, kv->key);
    if (o->n && strcmp(o->last, key) >= 0)
        o->disorder = true;
    memcpy(o->last, key, sizeof(key));
    o->n++;
}

static bool cap_ok(const void *ctx, const struct cluster_node *nodes, size_t n)
{
    const char *legit = ctx;

    return n == CLUSTER_MAX_NODES && (!legit || find(nodes, n, legit));
}

static void test_cap(void **state)
{
    struct etcd *e;
    struct batch b = { 0 };
    struct registry *r;
    struct cluster_node *nodes;
    size_t n = 0, over = 1000;
    char name[64];
    int64_t t0;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_int_equal(CLUSTER_MAX_NODES, 16384);
    e = client(FILL_TIMEOUT_MS);
    t0 = etcd_fixture_now_ms();
    for (unsigned i = 0; i < CLUSTER_MAX_NODES + over; i++) {
        snprintf(name, sizeof(name), "c%05u", i);
        add(&b, "/c", name, valid_value(name, i, 0xab, NULL));
        if (b.n == MAX_TXN_OPS)
            flush(&b, e);
    }
    flush(&b, e);
    print_message("cap: %zu valid members written in %lld ms\n", CLUSTER_MAX_NODES + over,
                  (long long)(etcd_fixture_now_ms() - t0));
    /* Read in pages, every key comes once, in order, at one revision. */
    struct order o = { 0 };
    int64_t rev = 0;
    assert_int_equal(etcd_range_prefix(e, "/c/members/", in_order, &o, &rev), 0);
    assert_int_equal(o.n, CLUSTER_MAX_NODES + over);
    assert_false(o.disorder);
    assert_true(rev > 0);
    catch_log();
    r = registry_on("/c");
    t0 = etcd_fixture_now_ms();
    assert_int_equal(registry_start(r), 0);
    nodes = take_until(r, SYNC_MS, cap_ok, NULL, &n);
    if (!nodes) {
        struct registry_status st;
        registry_status(r, &st);
        FAIL("no snapshot of %u members within %d ms (last: %zu; state %s, error: %s)",
                 CLUSTER_MAX_NODES, SYNC_MS, n, registry_state_name(st.state), st.error);
    }
    free(nodes);
    print_message("synced %u of %zu in %lld ms\n", CLUSTER_MAX_NODES, CLUSTER_MAX_NODES + over,
                  (long long)(etcd_fixture_now_ms() - t0));
    /* At the cap, a new one is not taken (the snapshot that follows its
     * put is the same); one leaving frees a slot that the next legitimate
     * one takes. */
    add(&b, "/c", "legit-early", valid_value("legit-early", 900010, 0xee, NULL));
    flush(&b, e);
    nodes = take_within(r, WAIT_MS, &n);
    assert_non_null(nodes);
    assert_int_equal(n, CLUSTER_MAX_NODES);
    assert_null(find(nodes, n, "legit-early"));
    free(nodes);
    snprintf(name, sizeof(name), "/c/members/c%05u", 5u);
    assert_int_equal(etcd_delete(e, name), 0);
    add(&b, "/c", "legit-late", valid_value("legit-late", 900011, 0xee, NULL));
    flush(&b, e);
    nodes = take_until(r, WAIT_MS, cap_ok, "legit-late", &n);
    if (!nodes)
        FAIL("no snapshot with legit-late at the cap within %d ms (last %zu)", WAIT_MS, n);
    /* (legit-early, refused while the cap was full, is not looked at
     * again when a slot frees: only its next put or a new read would.) */
    print_message("legit-early, refused at the cap, after a slot freed: %s\n",
                  find(nodes, n, "legit-early") ? "held" : "still left out");
    registry_stop(r);
    char *log = release_log();
    assert_non_null(strstr(log, ": too many members"));
    free(log);

    /* The model the device would run from it: the file's node, then every
     * one held (none clashes): the file's nodes and the cap at most. */
    struct cluster file, model;
    char text[512], fkey[45];
    size_t skipped = 0;
    key_b64(900020, 0xef, fkey);
    snprintf(text, sizeof(text), "[cluster]\nnetwork = 10.64.0.0/10\nport = 51820\n"
             "registry = etcd://%s/c\n[node filed]\npublic-key = %s\naddress = 10.127.0.1\n",
             etcd_fixture.url + strlen("http://"), fkey);
    assert_int_equal(cluster_parse(text, strlen(text), &file, NULL), 0);
    assert_int_equal(registry_model(&file, NULL, nodes, n, &model, &skipped, NULL, NULL), 0);
    assert_int_equal(skipped, 0);
    assert_int_equal(model.n_nodes, 1 + CLUSTER_MAX_NODES);
    assert_string_equal(model.nodes[0].name, "filed");
    cluster_free(&model);
    cluster_free(&file);
    free(nodes);
    batch_free(&b);
    etcd_free(e);
}

/* --- one watch message ------------------------------------------------------------------ */

struct counted {
    size_t events, bytes, want, messages;
    int64_t last_header;
};

static int count_event(void *ctx, bool deleted, const struct etcd_kv *kv, int64_t revision)
{
    struct counted *c = ctx;

    (void)deleted, (void)revision;
    c->events++;
    c->bytes += kv->value_len;
    if (revision != c->last_header)
        c->messages++;
    c->last_header = revision;
    return c->events >= c->want ? 1 : 0;
}

static void rev_of(void *ctx, const struct etcd_kv *kv)
{
    (void)ctx, (void)kv;
}

/* A watch that starts behind gets what it missed in one message of the
 * stream (etcd sends up to 1000 revisions at once), as large as what was
 * written: reading it must not take memory in proportion. */
static void test_watch_message_bounded(void **state)
{
    struct etcd *e, *w;
    struct batch b = { 0 };
    int64_t rev = 0;
    char name[64];
    atomic_bool stop = false;
    struct counted c = { .want = WATCH_REVS * WATCH_PER_REV };

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client(FILL_TIMEOUT_MS);
    assert_int_equal(etcd_range_prefix(e, "/m/", rev_of, NULL, &rev), 0);
    for (unsigned i = 0; i < WATCH_REVS; i++) {
        for (unsigned j = 0; j < WATCH_PER_REV; j++) {
            snprintf(name, sizeof(name), "m%02u-%02u", i, j);
            add(&b, "/m", name, padded_value(name, i * 100 + j, 0x77, WATCH_VALUE));
        }
        flush(&b, e);                     /* one revision each */
    }
    bool peak_known = reset_peak();
    long before = rss_kib();
    w = client(FILL_TIMEOUT_MS);
    int64_t t0 = etcd_fixture_now_ms();
    int ret = etcd_watch_prefix(w, "/m/members/", rev + 1, count_event, &c, &stop);
    long peak = peak_kib(), grew = (peak - before) / 1024;
    print_message("a watch %u revisions behind (%u MiB of values): %d (%s) after %lld ms, %zu "
                  "events in %zu messages, peak memory %+ld MiB\n", WATCH_REVS, WATCH_MIB, ret,
                  etcd_error(w), (long long)(etcd_fixture_now_ms() - t0), c.events, c.messages,
                  grew);
    /* Not read whole: the watch ends, saying why, so that its owner reads
     * the prefix again (in pages) and watches on from there. */
    assert_int_equal(ret, -EMSGSIZE);
    assert_non_null(strstr(etcd_error(w), "watch: a message larger than"));
    assert_true(etcd_fixture_now_ms() - t0 < SYNC_MS);
#ifndef __SANITIZE_ADDRESS__
    if (peak_known && grew > WATCH_MIB * 2 / 3)
        fail_msg("the watch took %ld MiB at its peak for %u MiB of values", grew, WATCH_MIB);
#endif
    (void)peak_known;
    etcd_free(w);
    batch_free(&b);
    etcd_free(e);
}

/* Issue 43: every member can write the prefix; one putting an old
 * revocation under more keys than the registry holds fills nothing: the
 * authority's next revocation is still read, and the old one held once. */
static void test_stale_revocations(void **state)
{
    const size_t copies = REGISTRY_REVOKED_MAX + 64;
    uint8_t pub[CERT_PUBKEY_LEN], sec[CERT_SECRET_LEN];
    char old[CERT_TEXT_MAX], fresh[CERT_TEXT_MAX], b64[64], text[512], err[256] = "";
    char **keys = calloc(copies + 1, sizeof(*keys)), **values = calloc(copies + 1, sizeof(*values));
    struct cert rev = { .kind = CERT_REVOCATION, .not_before = 1000 };
    struct cluster_node *nodes = NULL;
    struct cluster_diag d;
    struct cluster c;
    struct registry *r;
    struct etcd *e;
    int64_t revision;
    size_t n = 0;
    char *st;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_non_null(keys);
    assert_non_null(values);
    assert_int_equal(cert_keypair(pub, sec), 0);
    memset(rev.subject, 1, sizeof(rev.subject));
    assert_int_equal(cert_sign(&rev, sec, old, sizeof(old)), 0);
    memset(rev.subject, 2, sizeof(rev.subject));
    assert_int_equal(cert_sign(&rev, sec, fresh, sizeof(fresh)), 0);
    for (size_t i = 0; i < copies; i++) {
        assert_true(asprintf(&keys[i], "/s/members-revoked/copy-%zu", i) > 0);
        assert_non_null(values[i] = strdup(old));
    }
    assert_true(asprintf(&keys[copies], "/s/members-revoked/zz-new") > 0);
    assert_non_null(values[copies] = strdup(fresh));
    e = client(FILL_TIMEOUT_MS);
    put_all(e, keys, values, copies + 1);
    sodium_bin2base64(b64, sizeof(b64), pub, sizeof(pub), sodium_base64_VARIANT_ORIGINAL);
    snprintf(text, sizeof(text), "[cluster]\nnetwork = 10.64.0.0/10\nport = 51820\n"
             "registry = etcd://%s/s\nauthority = %s\n", etcd_fixture.url + strlen("http://"),
             b64);
    assert_int_equal(cluster_parse(text, strlen(text), &c, &d), 0);
    if (!(r = registry_new(&c, err, sizeof(err))))
        fail_msg("registry_new: %s", err);
    cluster_free(&c);
    catch_log();
    assert_int_equal(registry_start(r), 0);
    assert_true(registry_fixture_take(r, SYNC_MS, &nodes, &n, &revision));
    free(nodes);
    assert_non_null(st = registry_statements(r));
    assert_non_null(strstr(st, fresh));
    assert_int_equal(count_lines(st, old), 1);
    free(st);
    registry_stop(r);
    free(release_log());
    for (size_t i = 0; i <= copies; i++) {
        free(keys[i]);
        free(values[i]);
    }
    free(keys);
    free(values);
    etcd_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_value_size_boundary, give_back_log),
        cmocka_unit_test_teardown(test_flood, give_back_log),
        cmocka_unit_test_teardown(test_cap, give_back_log),
        cmocka_unit_test_teardown(test_watch_message_bounded, give_back_log),
        cmocka_unit_test_teardown(test_stale_revocations, give_back_log),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
