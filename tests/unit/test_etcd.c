/* SPDX-License-Identifier: MIT */
/* Tests of overlay/registry/etcd.c and registry_join against a real etcd,
 * started here on loopback by etcd_fixture.h (random free ports, a scratch
 * data directory; killed and removed on every way out: the group's
 * teardown, atexit, a signal, and PR_SET_PDEATHSIG should this process die
 * without either), its tokens living 1 s (test_auth). Each test calls
 * skip() when no etcd binary is found on PATH.
 *
 * The client: create-if-absent (created, then not), compare-and-swap
 * (only over the expected value; never over a missing key), a prefix's
 * range (not its neighbours'), a missing key, delete, leases (grant,
 * keep-alive with TTL left, revoke: keep-alive then says 0 and the key
 * it held is gone; etcd's error for an unknown lease: -ENOENT), the watch
 * (a PUT and a DELETE seen from a revision, history before the watch started,
 * the callback ending it with its value, the stop flag ending it with
 * -ECANCELED within a couple of seconds, a compacted revision giving
 * -ESTALE: compaction with etcdctl), and an endpoint list whose first
 * endpoint refuses connections.
 *
 * registry_join end to end: two keys get different addresses (the file's
 * skipped, an address held for an absent key skipped), what join writes
 * (a record under the lease, the address without one), the same key
 * coming back gets its address again (after leaving, and after a crash
 * while its record still stands), a name held by another key and a key
 * under another name refused in one clear line, a full network; and the
 * watcher: snapshots through the eventfd as nodes join and leave, the
 * state synced at the endpoint, and leave returning promptly; a record
 * another writer deleted or wrote over put back by its node. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/addr.h"
#include "config/cluster.h"
#include "overlay/registry/etcd.h"
#include "overlay/registry/record.h"
#include "overlay/registry/registry.h"
#include "tests/unit/etcd_fixture.h"
#include "tests/unit/registry_fixture.h"

#define K1 "A26Q5W7JpNyTXOVBRND6Qph308L2huZDmGyeb2Z1BjA="
#define K2 "BS4f18GN4bvqBI+9jDNN/jvhYyEO+g1rb8A488uT9hA="
#define K3 "Vn8+av1o9cs0QeHXUAzp4N9q2ltujELleXULv0KQTRo="
#define K4 "vofb+H8p26CYyRdLZ9bDVFcOCg8L9uPQZkmy7iGBuns="
#define K5 "iNv2EpcsWUosL23eST7xxM0nrbqMNubr0AuJ/xQ6umE="

#define WAIT_MS          5000
/* A stopped watch notices at its transfer's next progress call, about
 * once a second when nothing comes. */
#define STOP_WITHIN_MS   2500
#define REQUEST_MS       2000L

/* --- the etcd this test runs (etcd_fixture) ------------------------------------------ */

static int group_setup(void **state)
{
    /* test_auth: tokens that run out while it waits */
    static const char *const extra[] = { "--auth-token-ttl", "1", NULL };

    (void)state;
    return etcd_fixture_start(extra);
}

static int group_teardown(void **state)
{
    (void)state;
    etcd_fixture_stop();
    return 0;
}

static void noop_kv(void *ctx, const struct etcd_kv *kv)
{
    (void)ctx, (void)kv;
}

static struct etcd *client_for(const char *const *urls, size_t n, long timeout_ms)
{
    struct etcd_config c = { .urls = urls, .n_urls = n, .timeout_ms = timeout_ms };

    return etcd_new(&c);
}

static struct etcd *client(void)
{
    const char *urls[] = { etcd_fixture.url };
    struct etcd *e = client_for(urls, 1, REQUEST_MS);

    assert_non_null(e);
    return e;
}

/* --- what calls hand back ------------------------------------------------------------ */

#define SEEN_MAX 32

struct seen {
    size_t n;
    char key[SEEN_MAX][160];
    char value[SEEN_MAX][RECORD_VALUE_MAX + 1];
    int64_t lease[SEEN_MAX], mod_revision[SEEN_MAX], create_revision[SEEN_MAX];
};

static void see(void *ctx, const struct etcd_kv *kv)
{
    struct seen *s = ctx;

    assert_true(s->n < SEEN_MAX);
    snprintf(s->key[s->n], sizeof(s->key[0]), "%.*s", (int)kv->key_len, kv->key);
    snprintf(s->value[s->n], sizeof(s->value[0]), "%.*s", (int)kv->value_len, kv->value);
    s->lease[s->n] = kv->lease;
    s->mod_revision[s->n] = kv->mod_revision;
    s->create_revision[s->n] = kv->create_revision;
    s->n++;
}

/* key's value, or NULL when absent (into s). */
static const char *get(struct etcd *e, const char *key, struct seen *s)
{
    memset(s, 0, sizeof(*s));
    assert_int_equal(etcd_get(e, key, see, s), 0);
    assert_true(s->n <= 1);
    return s->n ? s->value[0] : NULL;
}

static void put(struct etcd *e, const char *key, const char *value)
{
    bool created = false;

    /* A plain put: create, else swap over what is there. */
    assert_int_equal(etcd_create(e, key, value, 0, &created), 0);
    if (!created) {
        struct seen s;
        const char *old = get(e, key, &s);
        bool swapped = false;
        assert_non_null(old);
        assert_int_equal(etcd_replace(e, key, old, value, 0, &swapped), 0);
        assert_true(swapped);
    }
}

static int64_t revision_now(struct etcd *e)
{
    struct seen s = { 0 };
    int64_t rev = 0;

    assert_int_equal(etcd_range_prefix(e, "/nothing-here/", see, &s, &rev), 0);
    assert_true(rev > 0);
    return rev;
}

/* --- the client ----------------------------------------------------------------------- */

static void test_create(void **state)
{
    struct etcd *e;
    struct seen s;
    bool created = false;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    assert_int_equal(etcd_create(e, "/t/create/k", "one", 0, &created), 0);
    assert_true(created);
    assert_string_equal(get(e, "/t/create/k", &s), "one");
    assert_int_equal(s.lease[0], 0);
    assert_true(s.create_revision[0] > 0);
    created = true;
    assert_int_equal(etcd_create(e, "/t/create/k", "two", 0, &created), 0);
    assert_false(created);
    assert_string_equal(get(e, "/t/create/k", &s), "one");
    /* An empty value is a value. */
    assert_int_equal(etcd_create(e, "/t/create/empty", "", 0, &created), 0);
    assert_true(created);
    assert_string_equal(get(e, "/t/create/empty", &s), "");
    assert_int_equal(s.n, 1);
    assert_string_equal(etcd_endpoint(e), etcd_fixture.url);
    etcd_free(e);
}

static void test_replace(void **state)
{
    struct etcd *e;
    struct seen s;
    bool swapped = true, created = false;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    assert_int_equal(etcd_create(e, "/t/replace/k", "one", 0, &created), 0);
    assert_true(created);
    assert_int_equal(etcd_replace(e, "/t/replace/k", "two", "three", 0, &swapped), 0);
    assert_false(swapped);
    assert_string_equal(get(e, "/t/replace/k", &s), "one");
    assert_int_equal(etcd_replace(e, "/t/replace/k", "on", "three", 0, &swapped), 0);
    assert_false(swapped);                              /* a prefix of it is not it */
    assert_int_equal(etcd_replace(e, "/t/replace/k", "one", "three", 0, &swapped), 0);
    assert_true(swapped);
    assert_string_equal(get(e, "/t/replace/k", &s), "three");
    /* The old value no longer matches. */
    assert_int_equal(etcd_replace(e, "/t/replace/k", "one", "four", 0, &swapped), 0);
    assert_false(swapped);
    assert_string_equal(get(e, "/t/replace/k", &s), "three");
    /* Never over a missing key, whatever is expected of it. */
    assert_int_equal(etcd_replace(e, "/t/replace/none", "", "x", 0, &swapped), 0);
    assert_false(swapped);
    assert_int_equal(etcd_replace(e, "/t/replace/none", "one", "x", 0, &swapped), 0);
    assert_false(swapped);
    assert_null(get(e, "/t/replace/none", &s));
    etcd_free(e);
}

static void test_range_prefix(void **state)
{
    struct etcd *e;
    struct seen s = { 0 };
    int64_t rev = 0, before;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    put(e, "/t/range/b", "2");
    put(e, "/t/range/a", "1");
    put(e, "/t/range/", "0");
    put(e, "/t/range", "outside");                      /* the prefix without its '/' */
    put(e, "/t/range0", "outside");                     /* the end of the range itself */
    put(e, "/t/rangeX/c", "outside");
    put(e, "/t/ranga/z", "outside");
    before = revision_now(e);
    assert_int_equal(etcd_range_prefix(e, "/t/range/", see, &s, &rev), 0);
    assert_int_equal(s.n, 3);
    /* In key order. */
    assert_string_equal(s.key[0], "/t/range/");
    assert_string_equal(s.key[1], "/t/range/a");
    assert_string_equal(s.key[2], "/t/range/b");
    assert_string_equal(s.value[1], "1");
    assert_string_equal(s.value[2], "2");
    /* The store's revision, not the keys'. */
    assert_int_equal(rev, before);
    assert_true(s.mod_revision[2] < rev);
    /* Nothing under a prefix: no call, still a revision. */
    memset(&s, 0, sizeof(s));
    rev = 0;
    assert_int_equal(etcd_range_prefix(e, "/t/range/zz/", see, &s, &rev), 0);
    assert_int_equal(s.n, 0);
    assert_int_equal(rev, before);
    etcd_free(e);
}

static void test_get_and_delete(void **state)
{
    struct etcd *e;
    struct seen s;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    assert_null(get(e, "/t/get/missing", &s));
    assert_int_equal(s.n, 0);
    put(e, "/t/get/k", "v");
    put(e, "/t/get/k2", "v2");
    assert_string_equal(get(e, "/t/get/k", &s), "v");   /* the key, not its prefix */
    assert_int_equal(etcd_delete(e, "/t/get/k"), 0);
    assert_null(get(e, "/t/get/k", &s));
    assert_string_equal(get(e, "/t/get/k2", &s), "v2");
    assert_int_equal(etcd_delete(e, "/t/get/k"), 0);    /* deleting nothing is no error */
    etcd_free(e);
}

static void test_lease(void **state)
{
    struct etcd *e;
    struct seen s;
    int64_t id = 0, ttl = -1;
    bool created = false;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    assert_int_equal(etcd_lease_grant(e, 10, &id), 0);
    assert_true(id != 0);
    assert_int_equal(etcd_create(e, "/t/lease/held", "mine", id, &created), 0);
    assert_true(created);
    assert_string_equal(get(e, "/t/lease/held", &s), "mine");
    assert_int_equal(s.lease[0], id);
    assert_int_equal(etcd_lease_keepalive(e, id, &ttl), 0);
    assert_true(ttl > 0 && ttl <= 10);
    /* A swap can move a key to another lease. */
    int64_t id2 = 0;
    bool swapped = false;
    assert_int_equal(etcd_lease_grant(e, 10, &id2), 0);
    assert_true(id2 != id);
    put(e, "/t/lease/moved", "a");
    assert_int_equal(etcd_replace(e, "/t/lease/moved", "a", "b", id2, &swapped), 0);
    assert_true(swapped);
    assert_int_equal(get(e, "/t/lease/moved", &s) ? s.lease[0] : 0, id2);
    /* Revoked: the key it held goes with it, keep-alive says 0. */
    assert_int_equal(etcd_lease_revoke(e, id), 0);
    assert_null(get(e, "/t/lease/held", &s));
    ttl = -1;
    assert_int_equal(etcd_lease_keepalive(e, id, &ttl), 0);
    assert_int_equal(ttl, 0);
    assert_int_equal(etcd_lease_revoke(e, id2), 0);
    assert_null(get(e, "/t/lease/moved", &s));
    /* Revoking it again: etcd's error, said with the endpoint. */
    assert_int_equal(etcd_lease_revoke(e, id), -ENOENT);
    assert_non_null(strstr(etcd_error(e), etcd_fixture.url));
    assert_non_null(strstr(etcd_error(e), "lease not found"));
    /* A lease that was never granted. */
    ttl = -1;
    assert_int_equal(etcd_lease_keepalive(e, 12345, &ttl), 0);
    assert_int_equal(ttl, 0);
    etcd_free(e);
}

/* --- the watch ------------------------------------------------------------------------ */

struct watch {
    struct etcd *e;
    const char *prefix;
    int64_t start;
    int end_after;                        /* return 42 at this many events; 0: never */
    atomic_bool stop, done;
    int ret;
    bool created;                         /* etcd_watch_created when it ended */
    char error[256];                      /* etcd_error() as the watch ended */
    pthread_t thread;
    pthread_mutex_t lock;
    size_t n;
    bool deleted[SEEN_MAX];
    char key[SEEN_MAX][160], value[SEEN_MAX][64];
    int64_t revision[SEEN_MAX];           /* the answer's (header) revision */
    int64_t mod_revision[SEEN_MAX];       /* the event's own */
};

static int on_event(void *ctx, bool deleted, const struct etcd_kv *kv, int64_t revision)
{
    struct watch *w = ctx;
    int ret = 0;

    pthread_mutex_lock(&w->lock);
    if (w->n < SEEN_MAX) {
        w->deleted[w->n] = deleted;
        snprintf(w->key[w->n], sizeof(w->key[0]), "%.*s", (int)kv->key_len, kv->key);
        snprintf(w->value[w->n], sizeof(w->value[0]), "%.*s", (int)kv->value_len, kv->value);
        w->revision[w->n] = revision;
        w->mod_revision[w->n] = kv->mod_revision;
        w->n++;
    }
    if (w->end_after && w->n >= (size_t)w->end_after)
        ret = 42;
    pthread_mutex_unlock(&w->lock);
    return ret;
}

static void *watch_run(void *arg)
{
    struct watch *w = arg;

    w->ret = etcd_watch_prefix(w->e, w->prefix, w->start, on_event, w, &w->stop);
    atomic_store(&w->done, true);
    return NULL;
}

static void watch_start_with(struct watch *w, struct etcd *e, const char *prefix,
                             int64_t start, int end_after)
{
    memset(w, 0, sizeof(*w));
    w->e = e;
    w->prefix = prefix;
    w->start = start;
    w->end_after = end_after;
    pthread_mutex_init(&w->lock, NULL);
    assert_int_equal(pthread_create(&w->thread, NULL, watch_run, w), 0);
}

static void watch_start(struct watch *w, const char *prefix, int64_t start, int end_after)
{
    watch_start_with(w, client(), prefix, start, end_after);
}

/* Waits until the watch saw n events or ended (false when neither came). */
static bool watch_wait(struct watch *w, size_t n)
{
    int64_t deadline = etcd_fixture_now_ms() + WAIT_MS;

    while (etcd_fixture_now_ms() < deadline) {
        pthread_mutex_lock(&w->lock);
        bool enough = w->n >= n;
        pthread_mutex_unlock(&w->lock);
        if (enough || atomic_load(&w->done))
            return enough;
        etcd_fixture_sleep_ms(10);
    }
    return false;
}

/* Stops the watch (if still running) and returns what it returned, and
 * in *took_ms how long the stop took. */
static int watch_end(struct watch *w, int64_t *took_ms)
{
    int64_t t0 = etcd_fixture_now_ms();

    atomic_store(&w->stop, true);
    pthread_join(w->thread, NULL);
    if (took_ms)
        *took_ms = etcd_fixture_now_ms() - t0;
    snprintf(w->error, sizeof(w->error), "%s", etcd_error(w->e));
    w->created = etcd_watch_created(w->e);
    etcd_free(w->e);
    pthread_mutex_destroy(&w->lock);
    return w->ret;
}

static void test_watch_put_delete(void **state)
{
    struct watch *w = calloc(1, sizeof(*w));
    struct etcd *e;
    int64_t rev, took = 0;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_non_null(w);
    e = client();
    put(e, "/t/watch/before", "old");                   /* before the start: not seen */
    rev = revision_now(e);
    watch_start(w, "/t/watch/", rev + 1, 0);
    etcd_fixture_sleep_ms(200);                         /* either way, from rev + 1 */
    put(e, "/t/watch/k", "v1");
    put(e, "/t/watchX", "neighbour");                   /* outside the prefix */
    assert_int_equal(etcd_delete(e, "/t/watch/k"), 0);
    assert_true(watch_wait(w, 2));
    etcd_fixture_sleep_ms(100);                         /* nothing more comes */
    pthread_mutex_lock(&w->lock);
    assert_int_equal(w->n, 2);
    assert_false(w->deleted[0]);
    assert_string_equal(w->key[0], "/t/watch/k");
    assert_string_equal(w->value[0], "v1");
    assert_int_equal(w->mod_revision[0], rev + 1);
    assert_true(w->revision[0] >= rev + 1);
    assert_true(w->deleted[1]);
    assert_string_equal(w->key[1], "/t/watch/k");
    assert_string_equal(w->value[1], "");
    assert_int_equal(w->mod_revision[1], rev + 3);      /* the neighbour's put was rev + 2 */
    assert_true(w->revision[1] >= rev + 3);
    pthread_mutex_unlock(&w->lock);
    assert_false(atomic_load(&w->done));
    assert_int_equal(watch_end(w, &took), -ECANCELED);
    assert_string_equal(w->error, "stopped");
    assert_true(w->created);          /* etcd set it up: a cut one may resume */
    assert_true(took < STOP_WITHIN_MS);
    print_message("watch stopped in %lld ms\n", (long long)took);
    etcd_free(e);
    free(w);
}

/* A watch from an earlier revision replays what happened since; the
 * callback's non-zero value ends it. */
static void test_watch_history_and_callback_end(void **state)
{
    struct watch *w = calloc(1, sizeof(*w));
    struct etcd *e;
    int64_t rev;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_non_null(w);
    e = client();
    rev = revision_now(e);
    put(e, "/t/history/a", "1");
    put(e, "/t/history/b", "2");
    put(e, "/t/history/c", "3");
    watch_start(w, "/t/history/", rev + 1, 2);
    assert_true(watch_wait(w, 2));
    int64_t t0 = etcd_fixture_now_ms();
    while (!atomic_load(&w->done) && etcd_fixture_now_ms() - t0 < WAIT_MS)
        etcd_fixture_sleep_ms(10);
    assert_true(atomic_load(&w->done));
    assert_int_equal(watch_end(w, NULL), 42);
    assert_int_equal(w->n, 2);
    assert_string_equal(w->key[0], "/t/history/a");
    assert_string_equal(w->key[1], "/t/history/b");
    assert_int_equal(w->mod_revision[0], rev + 1);
    assert_int_equal(w->mod_revision[1], rev + 2);
    /* Replayed history comes in one answer: one header revision, the
     * store's when it was sent. */
    assert_true(w->revision[0] >= rev + 3);
    assert_true(w->revision[1] >= w->revision[0]);
    etcd_free(e);
    free(w);
}

static int run_etcdctl(const char *const argv[])
{
    int status;
    pid_t pid = fork();

    if (pid < 0)
        return -1;
    if (pid == 0) {
        int fd = open("/dev/null", O_WRONLY);
        if (fd >= 0)
            dup2(fd, STDOUT_FILENO);
        setenv("ETCDCTL_API", "3", 1);
        execv(etcd_fixture.etcdctl, (char *const *)(uintptr_t)argv);
        _exit(127);
    }
    if (waitpid(pid, &status, 0) != pid)
        return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_watch_compacted(void **state)
{
    struct watch *w = calloc(1, sizeof(*w));
    struct etcd *e;
    char endpoints[96], rev_text[24];
    int64_t rev, took = 0;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_non_null(w);
    if (!etcd_fixture.etcdctl[0]) {
        free(w);
        print_message("skipped: no etcdctl on PATH (Debian: etcd-client)\n");
        skip();
    }
    e = client();
    rev = revision_now(e);
    put(e, "/t/compact/k", "1");
    put(e, "/t/compact/k", "2");
    put(e, "/t/compact/k", "3");
    snprintf(endpoints, sizeof(endpoints), "--endpoints=%s", etcd_fixture.url);
    snprintf(rev_text, sizeof(rev_text), "%lld", (long long)revision_now(e));
    const char *const argv[] = { "etcdctl", endpoints, "compact", rev_text, NULL };
    assert_int_equal(run_etcdctl(argv), 0);
    watch_start(w, "/t/compact/", rev + 1, 0);
    int64_t t0 = etcd_fixture_now_ms();
    while (!atomic_load(&w->done) && etcd_fixture_now_ms() - t0 < WAIT_MS)
        etcd_fixture_sleep_ms(10);
    assert_true(atomic_load(&w->done));                 /* by itself, not by the stop */
    assert_int_equal(watch_end(w, &took), -ESTALE);
    assert_int_equal(w->n, 0);
    assert_non_null(strstr(w->error, "compacted"));
    assert_non_null(strstr(w->error, etcd_fixture.url));
    /* From the compaction on, a watch works again. */
    watch_start(w, "/t/compact/", revision_now(e), 0);
    assert_true(watch_wait(w, 1));
    assert_int_equal(watch_end(w, NULL), -ECANCELED);
    assert_string_equal(w->value[0], "3");
    etcd_free(e);
    free(w);
}

/* --- endpoints ------------------------------------------------------------------------ */

static void test_first_endpoint_dead(void **state)
{
    char dead[64], dead2[64];
    struct etcd *e;
    struct seen s;
    int64_t t0;

    (void)state;
    ETCD_FIXTURE_NEED();
    snprintf(dead, sizeof(dead), "http://127.0.0.1:%d", etcd_fixture_free_port());
    snprintf(dead2, sizeof(dead2), "http://127.0.0.1:%d", etcd_fixture_free_port());
    const char *urls[] = { dead, etcd_fixture.url };
    assert_non_null(e = client_for(urls, 2, REQUEST_MS));
    t0 = etcd_fixture_now_ms();
    put(e, "/t/failover/k", "v");
    assert_true(etcd_fixture_now_ms() - t0 < 1000);     /* refused at once, not timed out */
    assert_string_equal(etcd_endpoint(e), etcd_fixture.url);
    assert_string_equal(get(e, "/t/failover/k", &s), "v");
    assert_string_equal(etcd_endpoint(e), etcd_fixture.url); /* and stays there */
    etcd_free(e);
    /* Every endpoint dead: refused, said of an endpoint. */
    const char *none[] = { dead, dead2 };
    assert_non_null(e = client_for(none, 2, REQUEST_MS));
    assert_int_equal(etcd_get(e, "/t/failover/k", noop_kv, NULL), -ECONNREFUSED);
    assert_non_null(strstr(etcd_error(e), "http://127.0.0.1:"));
    etcd_free(e);
}

/* --- registry_join ---------------------------------------------------------------------- */

#define JOIN_NET "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\nregistry-ttl = 10\n"
#define JOIN_NET29 "[cluster]\nnetwork = 10.77.0.0/29\nport = 51820\nregistry-ttl = 10\n"
#define JOIN_FILE_NODE "[node filed]\npublic-key = " K5 "\naddress = 10.77.0.1\n"

static struct registry *registry_at(const char *prefix, const char *head, const char *nodes)
{
    char text[1024], err[256] = "";
    struct cluster c;
    struct cluster_diag d;
    struct registry *r;

    snprintf(text, sizeof(text), "%sregistry = etcd://%s%s\n%s", head,
             etcd_fixture.url + strlen("http://"), prefix, nodes);
    assert_int_equal(cluster_parse(text, strlen(text), &c, &d), 0);
    r = registry_new(&c, err, sizeof(err));
    if (!r)
        fail_msg("registry_new: %s", err);
    cluster_free(&c);
    return r;
}

static struct cluster_node self_of(const char *name, const char *key, const char *endpoint)
{
    struct cluster_node n = registry_fixture_node(name, key);

    if (endpoint) {
        assert_int_equal(cluster_endpoint_parse(endpoint, &n.endpoint, NULL), 0);
        n.has_endpoint = true;
    }
    return n;
}

/* Joins as name/key; the address it got as text, or "" with err. */
static int join(struct registry *r, const char *name, const char *key, char *addr, size_t len,
                char *err, size_t errlen)
{
    struct cluster_node self = self_of(name, key, "198.51.100.7:51820");
    int ret = registry_join(r, &self, err, errlen);

    addr[0] = '\0';
    if (ret == 0)
        assert_int_equal(cluster_addr_format(&self.address, addr, len), 0);
    return ret;
}

/* A new address (the pick among the free ones is registry.c's to make):
 * inside net, neither its own nor its broadcast address, none of not[]. */
static void assert_picked(const char *addr, const char *net, const char *const not[])
{
    struct cluster_addr a, n;
    unsigned prefix;
    const char *why = NULL;

    assert_int_equal(cluster_addr_parse(addr, &a), 0);
    assert_int_equal(cluster_prefix_parse(net, &n, &prefix, &why), 0);
    assert_true(cluster_addr_in_network(&a, &n, prefix));
    assert_false(cluster_addr_equal(&a, &n));
    assert_false(cluster_addr_is_broadcast(&a, prefix));
    for (size_t i = 0; not && not[i]; i++)
        if (!strcmp(addr, not[i]))
            fail_msg("joined at %s, which was not free", addr);
}

static void test_join(void **state)
{
    struct registry *r1, *r2, *r3;
    struct etcd *e;
    struct seen s;
    char addr[64], err[512];
    struct cluster net = { 0 };
    struct cluster_node rec;
    const char *why = NULL;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    /* An address held for a key that is not registered now is not free;
     * nor is the file's node's. A /29 leaves .2, .4, .5 and .6. */
    put(e, "/t/join/addresses/10.77.0.3", K4);
    r1 = registry_at("/t/join", JOIN_NET29, JOIN_FILE_NODE);
    r2 = registry_at("/t/join", JOIN_NET29, JOIN_FILE_NODE);
    assert_int_equal(join(r1, "n1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_picked(addr, "10.77.0.0/29", (const char *const[]){ "10.77.0.1", "10.77.0.3", NULL });
    char a1[64], a2[64], akey[96];
    snprintf(a1, sizeof(a1), "%s", addr);
    assert_int_equal(join(r2, "n2", K2, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_picked(addr, "10.77.0.0/29", (const char *const[]){ "10.77.0.1", "10.77.0.3", a1,
                                                               NULL });
    snprintf(a2, sizeof(a2), "%s", addr);

    /* What a join leaves in etcd. */
    snprintf(akey, sizeof(akey), "/t/join/addresses/%s", a1);
    assert_string_equal(get(e, akey, &s), K1);
    assert_int_equal(s.lease[0], 0);                    /* kept for the key's return */
    assert_non_null(get(e, "/t/join/members/n1", &s));
    assert_true(s.lease[0] != 0);
    net.network.family = 0;
    assert_int_equal(cluster_addr_parse("10.77.0.0", &net.network), 0);
    net.prefix = 29;
    assert_int_equal(record_decode(s.value[0], strlen(s.value[0]), &net, &rec, &why), 0);
    assert_string_equal(rec.name, "n1");
    assert_true(rec.has_endpoint);
    assert_string_equal(rec.endpoint.host, "198.51.100.7");
    char n1_value[RECORD_VALUE_MAX + 1];
    snprintf(n1_value, sizeof(n1_value), "%s", s.value[0]);
    int64_t lease = s.lease[0], ttl = 0;
    assert_int_equal(etcd_lease_keepalive(e, lease, &ttl), 0);
    assert_true(ttl > 0 && ttl <= 10);

    /* A name held by another key; a key held under another name. */
    r3 = registry_at("/t/join", JOIN_NET29, JOIN_FILE_NODE);
    assert_int_equal(join(r3, "n1", K3, addr, sizeof(addr), err, sizeof(err)), -EEXIST);
    assert_string_equal(err, "registry: the name n1 is registered with another key; choose "
                             "another with --name");
    assert_int_equal(join(r3, "N1", K3, addr, sizeof(addr), err, sizeof(err)), -EEXIST);
    assert_int_equal(join(r3, "n9", K1, addr, sizeof(addr), err, sizeof(err)), -EEXIST);
    assert_string_equal(err, "registry: this key is registered as n1; run `ddpnet down` there "
                             "first (or wait 10 s for its lease to run out)");
    assert_null(get(e, "/t/join/members/n9", &s));      /* nothing was written */
    assert_string_equal(get(e, "/t/join/members/n1", &s), n1_value);
    assert_int_equal(s.lease[0], lease);
    registry_free(r3);

    /* n1 leaves (its lease revoked): its record goes, its address stays
     * its own; joining again gives the same address, under a new lease. */
    registry_free(r1);
    assert_null(get(e, "/t/join/members/n1", &s));
    assert_string_equal(get(e, akey, &s), K1);
    r1 = registry_at("/t/join", JOIN_NET29, JOIN_FILE_NODE);
    assert_int_equal(join(r1, "n1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, a1);
    assert_non_null(get(e, "/t/join/members/n1", &s));
    assert_true(s.lease[0] != 0 && s.lease[0] != lease);

    /* n2 crashed (its record still stands under its old lease) and comes
     * back: its record is replaced, its address the same. */
    assert_non_null(get(e, "/t/join/members/n2", &s));
    int64_t old_lease = s.lease[0];
    r3 = registry_at("/t/join", JOIN_NET29, JOIN_FILE_NODE);
    assert_int_equal(join(r3, "n2", K2, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, a2);
    assert_non_null(get(e, "/t/join/members/n2", &s));
    assert_true(s.lease[0] != old_lease);
    registry_free(r3);
    registry_free(r2);                                   /* its lease: no key left to take */
    registry_free(r1);
    etcd_free(e);
}

static void test_join_full(void **state)
{
    struct registry *r1, *r2;
    char addr[64], err[512];

    (void)state;
    ETCD_FIXTURE_NEED();
    /* A /30 has two host addresses; the file holds one. */
    static const char head[] = "[cluster]\nnetwork = 10.78.0.0/30\nport = 51820\n";
    static const char file[] = "[node filed]\npublic-key = " K5 "\naddress = 10.78.0.1\n";
    r1 = registry_at("/t/full", head, file);
    r2 = registry_at("/t/full", head, file);
    assert_int_equal(join(r1, "n1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, "10.78.0.2");
    assert_int_equal(join(r2, "n2", K2, addr, sizeof(addr), err, sizeof(err)), -ENOSPC);
    assert_string_equal(err, "registry: no free address left in the network");
    registry_free(r2);
    registry_free(r1);
}

/* A full network gives back an address whose key left: n1 joins and
 * leaves, n2 takes its address over (never-used ones first: there are
 * none); n1's key comes back to a network whose every address a live
 * member holds. */
static void test_join_reclaims(void **state)
{
    struct registry *r1, *r2, *r3;
    char addr[64], err[512];

    (void)state;
    ETCD_FIXTURE_NEED();
    static const char head[] = "[cluster]\nnetwork = 10.78.0.0/30\nport = 51820\n";
    static const char file[] = "[node filed]\npublic-key = " K5 "\naddress = 10.78.0.1\n";
    r1 = registry_at("/t/reclaim", head, file);
    assert_int_equal(join(r1, "n1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, "10.78.0.2");
    registry_leave(r1);                      /* its record goes; its address record stays */
    r2 = registry_at("/t/reclaim", head, file);
    assert_int_equal(join(r2, "n2", K2, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_string_equal(addr, "10.78.0.2");
    r3 = registry_at("/t/reclaim", head, file);
    assert_int_equal(join(r3, "n1", K1, addr, sizeof(addr), err, sizeof(err)), -ENOSPC);
    assert_string_equal(err, "registry: no free address left in the network");
    registry_free(r3);
    registry_free(r2);
    registry_free(r1);
}

/* --- the watcher ---------------------------------------------------------------------------- */

/* Takes snapshots until one has exactly the names given ("a b"), in any
 * order; false when none did within WAIT_MS. */
static bool take_until(struct registry *r, const char *want, int64_t *rev)
{
    int64_t deadline = etcd_fixture_now_ms() + WAIT_MS;

    char padded[256], pat[CLUSTER_NAME_MAX + 3];
    size_t words = 0;

    snprintf(padded, sizeof(padded), " %s ", want);
    for (const char *p = want; *p; p++)
        words += *p != ' ' && (p == want || p[-1] == ' ');
    while (etcd_fixture_now_ms() < deadline) {
        struct cluster_node *nodes = NULL;
        size_t n = 0;
        bool all = true;
        if (!registry_fixture_take(r, WAIT_MS, &nodes, &n, rev))
            return false;
        for (size_t i = 0; i < n; i++) {
            snprintf(pat, sizeof(pat), " %s ", nodes[i].name);
            all = all && strstr(padded, pat);
        }
        free(nodes);
        if (all && n == words)
            return true;
    }
    return false;
}

static void test_watcher(void **state)
{
    struct registry *r1, *r2;
    struct registry_status st;
    char addr[64], err[512];
    int64_t rev = 0, rev2 = 0, t0;

    (void)state;
    ETCD_FIXTURE_NEED();
    r1 = registry_at("/t/watcher", JOIN_NET, "");
    assert_int_equal(join(r1, "w1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_picked(addr, "10.77.0.0/24", NULL);
    char w1[64];
    snprintf(w1, sizeof(w1), "%s", addr);
    registry_status(r1, &st);
    assert_int_equal(st.state, REGISTRY_CONNECTING);
    assert_int_equal(registry_start(r1), 0);
    assert_true(take_until(r1, "w1", &rev));
    assert_true(rev > 0);
    /* The watcher says synced just after it hands over its first
     * snapshot: allow it that moment. */
    t0 = etcd_fixture_now_ms();
    do {
        registry_status(r1, &st);
    } while (st.state != REGISTRY_SYNCED && etcd_fixture_now_ms() - t0 < WAIT_MS &&
             (etcd_fixture_sleep_ms(5), 1));
    assert_int_equal(st.state, REGISTRY_SYNCED);
    assert_int_equal(st.revision, rev);
    assert_string_equal(st.endpoint, etcd_fixture.url);
    assert_string_equal(st.error, "");
    /* Another joins: a new snapshot with both; it leaves: without it. */
    r2 = registry_at("/t/watcher", JOIN_NET, "");
    assert_int_equal(join(r2, "w2", K2, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_picked(addr, "10.77.0.0/24", (const char *const[]){ w1, NULL });
    assert_true(take_until(r1, "w1 w2", &rev2));
    assert_true(rev2 > rev);
    registry_free(r2);
    assert_true(take_until(r1, "w1", &rev));
    assert_true(rev > rev2);
    registry_status(r1, &st);
    assert_int_equal(st.revision, rev);
    /* Nothing new: nothing to take. */
    struct cluster_node *nodes = NULL;
    size_t n = 0;
    assert_int_equal(registry_take(r1, &nodes, &n, &rev2), 0);
    /* Leaving stops the watch and the keeper promptly. */
    t0 = etcd_fixture_now_ms();
    registry_leave(r1);
    assert_true(etcd_fixture_now_ms() - t0 < STOP_WITHIN_MS);
    print_message("leave took %lld ms\n", (long long)(etcd_fixture_now_ms() - t0));
    registry_free(r1);
    struct etcd *e = client();
    struct seen s;
    assert_null(get(e, "/t/watcher/members/w1", &s));
    etcd_free(e);
}

/* Every member may write the prefix: a record another writer deleted or
 * wrote over is put back by its node (its keeper) within a second or so,
 * under its lease; its own leave is not undone. */
static bool record_is(struct etcd *e, const char *key, const char *want)
{
    int64_t deadline = etcd_fixture_now_ms() + WAIT_MS;
    struct seen s;

    for (;;) {
        const char *v = get(e, key, &s);
        if (v && !strcmp(v, want))
            return true;
        if (etcd_fixture_now_ms() >= deadline)
            return false;
        etcd_fixture_sleep_ms(20);
    }
}

static void test_record_put_back(void **state)
{
    struct registry *r;
    struct etcd *e;
    struct seen s;
    char addr[64], err[256], value[RECORD_VALUE_MAX + 1];
    const char *key = "/t/putback/members/pb";
    int64_t t0;

    (void)state;
    ETCD_FIXTURE_NEED();
    r = registry_at("/t/putback", JOIN_NET, "");
    assert_int_equal(join(r, "pb", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_int_equal(registry_start(r), 0);
    e = client();
    /* The watcher follows the prefix, and the keeper has put the record
     * with its candidates (the join's names none): that is the record. */
    etcd_fixture_sleep_ms(300);
    assert_non_null(get(e, key, &s));
    snprintf(value, sizeof(value), "%s", s.value[0]);
    assert_non_null(strstr(value, "\"candidates\""));
    int64_t lease = s.lease[0];
    assert_true(lease != 0);
    t0 = etcd_fixture_now_ms();
    assert_int_equal(etcd_delete(e, key), 0);
    assert_true(record_is(e, key, value));
    print_message("deleted record put back in %lld ms\n",
                  (long long)(etcd_fixture_now_ms() - t0));
    assert_non_null(get(e, key, &s));
    assert_int_equal(s.lease[0], lease);  /* under its own lease */
    etcd_fixture_sleep_ms(1100);          /* one put back a second at most */
    put(e, key, "{\"name\":\"pb\",\"written\":\"over\"}");
    assert_true(record_is(e, key, value));
    /* Its own leave stays a leave. */
    registry_free(r);
    etcd_fixture_sleep_ms(1500);
    assert_null(get(e, key, &s));
    etcd_free(e);
}

/* etcd let the node's lease run out (on a loaded etcd, keep-alives it
 * had not answered yet; here revoked, which deletes the record the
 * same way): the node sees its record go and joins again at once, under
 * a fresh lease, not at its next keep-alive (a third of registry-ttl,
 * 20 s here; on a starved etcd, minutes: issue 59), so that its record
 * is back within the members' grace. */
static void test_lease_gone_rejoined(void **state)
{
    struct registry *r;
    struct etcd *e;
    struct seen s;
    char addr[64], err[256], value[RECORD_VALUE_MAX + 1];
    const char *key = "/t/leasegone/members/lg";
    int64_t t0;

    (void)state;
    ETCD_FIXTURE_NEED();
    r = registry_at("/t/leasegone",
                    "[cluster]\nnetwork = 10.77.0.0/24\nport = 51820\nregistry-ttl = 60\n", "");
    assert_int_equal(join(r, "lg", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_int_equal(registry_start(r), 0);
    e = client();
    etcd_fixture_sleep_ms(300);          /* the keeper's record, with its candidates */
    assert_non_null(get(e, key, &s));
    snprintf(value, sizeof(value), "%s", s.value[0]);
    assert_non_null(strstr(value, "\"candidates\""));
    int64_t lease = s.lease[0];
    assert_true(lease != 0);
    t0 = etcd_fixture_now_ms();
    assert_int_equal(etcd_lease_revoke(e, lease), 0);
    bool back = record_is(e, key, value);
    print_message("record back %s %lld ms after its lease went\n", back ? "within" : "not within",
                  (long long)(etcd_fixture_now_ms() - t0));
    assert_true(back);
    assert_non_null(get(e, key, &s));
    assert_true(s.lease[0] != 0 && s.lease[0] != lease);   /* a fresh lease */
    int64_t ttl = 0;
    assert_int_equal(etcd_lease_keepalive(e, s.lease[0], &ttl), 0);
    assert_true(ttl > 0);
    /* Its own leave stays a leave. */
    registry_free(r);
    etcd_fixture_sleep_ms(1500);
    assert_null(get(e, key, &s));
    etcd_free(e);
}

/* --- authentication (last: it turns auth on for the whole etcd) ------------------------- */

static struct etcd *client_as(const char *user, const char *password)
{
    const char *urls[] = { etcd_fixture.url };
    struct etcd_config c = { .urls = urls, .n_urls = 1, .timeout_ms = REQUEST_MS,
                             .user = user, .password = password };
    struct etcd *e = etcd_new(&c);

    assert_non_null(e);
    return e;
}

static void test_auth(void **state)
{
    char endpoints[96], pwfile[192], text[1024], err[256], addr[64];
    struct etcd *e, *idle, *watcher;
    struct watch *w = calloc(1, sizeof(*w));
    struct seen s;
    FILE *f;

    (void)state;
    ETCD_FIXTURE_NEED();
    assert_non_null(w);
    if (!etcd_fixture.etcdctl[0]) {
        free(w);
        print_message("skipped: no etcdctl on PATH (Debian: etcd-client)\n");
        skip();
    }
    snprintf(endpoints, sizeof(endpoints), "--endpoints=%s", etcd_fixture.url);
    /* root, and ddp who may read and write /t/auth/ alone. */
    const char *const steps[][8] = {
        { "etcdctl", endpoints, "user", "add", "root:rootpw", NULL },
        { "etcdctl", endpoints, "user", "grant-role", "root", "root", NULL },
        { "etcdctl", endpoints, "user", "add", "ddp:s3cret", NULL },
        { "etcdctl", endpoints, "role", "add", "ddp", NULL },
        { "etcdctl", endpoints, "role", "grant-permission", "ddp", "--prefix=true", "readwrite",
          "/t/auth/" },
        { "etcdctl", endpoints, "user", "grant-role", "ddp", "ddp", NULL },
        { "etcdctl", endpoints, "auth", "enable", NULL },
    };
    for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        const char *argv[10] = { 0 };
        memcpy(argv, steps[i], sizeof(steps[i]));
        if (run_etcdctl(argv) != 0)
            fail_msg("etcdctl %s %s failed", steps[i][2], steps[i][3]);
    }
    e = client_as("ddp", "s3cret");
    put(e, "/t/auth/k", "v");
    assert_string_equal(get(e, "/t/auth/k", &s), "v");
    /* Outside its prefix: etcd's refusal, as an error answer. */
    assert_int_equal(etcd_get(e, "/t/other", noop_kv, NULL), -EACCES);
    assert_non_null(strstr(etcd_error(e), "permission denied"));
    /* A wrong password; none at all. */
    struct etcd *bad = client_as("ddp", "wrong");
    assert_int_equal(etcd_get(bad, "/t/auth/k", noop_kv, NULL), -EINVAL);
    assert_non_null(strstr(etcd_error(bad), "authentication failed"));
    etcd_free(bad);
    bad = client();
    assert_int_equal(etcd_get(bad, "/t/auth/k", noop_kv, NULL), -EINVAL);
    etcd_free(bad);

    /* Tokens live 1 s here: after a pause a call authenticates again. A
     * watch begun on a stale token ends at once with an error (it does
     * not authenticate again itself), and the range the registry's
     * watcher makes first renews the token for the watch after it. */
    idle = client_as("ddp", "s3cret");
    watcher = client_as("ddp", "s3cret");
    assert_non_null(get(idle, "/t/auth/k", &s));
    assert_non_null(get(watcher, "/t/auth/k", &s));
    etcd_fixture_sleep_ms(2200);
    assert_string_equal(get(idle, "/t/auth/k", &s), "v");
    int64_t rev = 0;
    memset(&s, 0, sizeof(s));
    assert_int_equal(etcd_range_prefix(e, "/t/auth/", see, &s, &rev), 0);
    watch_start_with(w, watcher, "/t/auth/", rev + 1, 0);
    int64_t t0 = etcd_fixture_now_ms();
    while (!atomic_load(&w->done) && etcd_fixture_now_ms() - t0 < WAIT_MS)
        etcd_fixture_sleep_ms(10);
    assert_true(atomic_load(&w->done));
    int ret = watch_end(w, NULL);
    assert_true(ret < 0 && ret != -ECANCELED);
    print_message("a watch on a stale token: %s\n", w->error);
    watcher = client_as("ddp", "s3cret");
    etcd_fixture_sleep_ms(1200);
    memset(&s, 0, sizeof(s));
    assert_int_equal(etcd_range_prefix(watcher, "/t/auth/", see, &s, &rev), 0);
    watch_start_with(w, watcher, "/t/auth/", rev + 1, 0);
    etcd_fixture_sleep_ms(200);
    put(e, "/t/auth/w", "x");
    assert_true(watch_wait(w, 1));
    assert_int_equal(watch_end(w, NULL), -ECANCELED);
    assert_string_equal(w->value[0], "x");
    etcd_free(idle);

    /* registry_join with a user and its password file (the file's last
     * newline is not part of the password). */
    snprintf(pwfile, sizeof(pwfile), "%s/password", etcd_fixture.dir);
    assert_non_null(f = fopen(pwfile, "w"));
    fputs("s3cret\n", f);
    fclose(f);
    assert_int_equal(chmod(pwfile, 0600), 0);
    snprintf(text, sizeof(text), JOIN_NET "registry-user = ddp\nregistry-password-file = %s\n"
             "registry-insecure = yes\n",
             pwfile);
    struct registry *r = registry_at("/t/auth", text, "");
    assert_int_equal(join(r, "a1", K1, addr, sizeof(addr), err, sizeof(err)), 0);
    assert_picked(addr, "10.77.0.0/24", NULL);
    assert_non_null(get(e, "/t/auth/members/a1", &s));
    registry_free(r);
    assert_null(get(e, "/t/auth/members/a1", &s));     /* left: revoked with auth too */
    etcd_free(e);
    free(w);
}

/* A join made in another process (the daemon's unprivileged child) and
 * taken over here: the record is this one's to keep and to take away --
 * leaving revokes the lease the child was granted. */
static void test_join_handed_over(void **state)
{
    struct registry *r;
    struct registry_joined j, none = { 0 };
    struct etcd *e;
    struct seen s;
    int fds[2], status;
    pid_t pid;

    (void)state;
    ETCD_FIXTURE_NEED();
    e = client();
    r = registry_at("/t/hand", JOIN_NET, "");
    assert_int_equal(pipe(fds), 0);
    assert_true((pid = fork()) >= 0);
    if (pid == 0) {
        char addr[64], err[512];
        struct registry_joined out;
        memset(&out, 0, sizeof(out));
        if (join(r, "h1", K1, addr, sizeof(addr), err, sizeof(err)) == 0)
            registry_joined_get(r, &out);
        _exit(write(fds[1], &out, sizeof(out)) == (ssize_t)sizeof(out) ? 0 : 1);
    }
    close(fds[1]);
    assert_int_equal(read(fds[0], &j, sizeof(j)), (ssize_t)sizeof(j));
    close(fds[0]);
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    assert_true(j.lease != 0);
    assert_string_equal(j.self.name, "h1");
    assert_int_equal(registry_joined_set(r, &none), -EINVAL);
    assert_int_equal(registry_joined_set(r, &j), 0);
    assert_non_null(get(e, "/t/hand/members/h1", &s));
    registry_free(r);                                  /* leaves with the child's lease */
    assert_null(get(e, "/t/hand/members/h1", &s));
    etcd_free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_create),
        cmocka_unit_test(test_replace),
        cmocka_unit_test(test_range_prefix),
        cmocka_unit_test(test_get_and_delete),
        cmocka_unit_test(test_lease),
        cmocka_unit_test(test_watch_put_delete),
        cmocka_unit_test(test_watch_history_and_callback_end),
        cmocka_unit_test(test_watch_compacted),
        cmocka_unit_test(test_first_endpoint_dead),
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_join_full),
        cmocka_unit_test(test_join_reclaims),
        cmocka_unit_test(test_join_handed_over),
        cmocka_unit_test(test_watcher),
        cmocka_unit_test(test_record_put_back),
        cmocka_unit_test(test_lease_gone_rejoined),
        cmocka_unit_test(test_auth),
    };

    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
