/* SPDX-License-Identifier: MIT */
/* The names block's writer thread, its pacing, and the resolver's word on
 * claimed names (hosts_writer.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "config/addr.h"
#include "overlay/base/log.h"
#include "overlay/membership/hosts_writer.h"

/* --- the system's resolver, asked without waiting -------------------------------- */

struct lookup {
    char name[64];
    struct addrinfo hints;
    struct gaicb cb;
};

struct gai_lookups {
    struct lookup *in_flight[HOSTS_LOOKUPS_MAX];
    size_t n;
};

static void answer_add(struct hosts_answer *a, const struct sockaddr *sa)
{
    struct cluster_addr *to;

    if (a->n == HOSTS_ANSWER_MAX) {
        a->too_many = true;
        return;
    }
    to = &a->addr[a->n];
    memset(to, 0, sizeof(*to));
    if (sa->sa_family == AF_INET) {
        to->family = AF_INET;
        memcpy(to->bytes, &((const struct sockaddr_in *)sa)->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
        to->family = AF_INET6;
        memcpy(to->bytes, &((const struct sockaddr_in6 *)sa)->sin6_addr, 16);
    } else {
        return;
    }
    for (unsigned i = 0; i < a->n; i++)
        if (cluster_addr_equal(&a->addr[i], to))
            return;                       /* one per socket type: once */
    a->n++;
}

/* A finished lookup's answer. Any failure but a name that does not exist
 * (no DNS server reachable, a server that gave up) is an answer of no
 * address too: nothing resolves the name otherwise now. */
static void lookup_answer(struct lookup *l, int err, struct hosts_answer *a)
{
    memset(a, 0, sizeof(*a));
    if (err == 0) {
        for (const struct addrinfo *ai = l->cb.ar_result; ai; ai = ai->ai_next)
            answer_add(a, ai->ai_addr);
        freeaddrinfo(l->cb.ar_result);
    } else {
        log_info("names: %s does not resolve (%s): a member may claim it", l->name,
                 gai_strerror(err));
    }
}

static int resolve_gai(void *ctx, const char *name, struct hosts_answer *a)
{
    struct gai_lookups *g = ctx;
    struct gaicb *list[1];
    struct lookup *l;
    int err;

    for (size_t i = 0; i < g->n; i++) {
        l = g->in_flight[i];
        if (strcasecmp(l->name, name))
            continue;
        if ((err = gai_error(&l->cb)) == EAI_INPROGRESS)
            return -EAGAIN;
        lookup_answer(l, err, a);
        g->in_flight[i] = g->in_flight[--g->n];
        free(l);
        return 0;
    }
    if (g->n == HOSTS_LOOKUPS_MAX || !(l = calloc(1, sizeof(*l))))
        return -EAGAIN;                   /* asked on a later pass */
    snprintf(l->name, sizeof(l->name), "%s", name);
    l->hints.ai_socktype = SOCK_STREAM;
    l->cb = (struct gaicb){ .ar_name = l->name, .ar_request = &l->hints };
    list[0] = &l->cb;
    if (getaddrinfo_a(GAI_NOWAIT, list, 1, NULL)) {
        free(l);
        return -EAGAIN;
    }
    g->in_flight[g->n++] = l;
    return -EAGAIN;
}

/* Lookups still in flight at the end: cancelled, else left to the C
 * library (their memory is still its to write). */
static void gai_lookups_free(struct gai_lookups *g)
{
    for (size_t i = 0; i < g->n; i++) {
        struct lookup *l = g->in_flight[i];
        int err = gai_cancel(&l->cb);
        if (err == EAI_ALLDONE || err == EAI_CANCELED) {
            if (gai_error(&l->cb) == 0)
                freeaddrinfo(l->cb.ar_result);
            free(l);
        }
    }
    free(g);
}

/* --- answers kept ------------------------------------------------------------------ */

struct known {
    char name[64];
    bool answered;                        /* a has an answer (perhaps an old one) */
    bool asking;                          /* a new answer is asked for */
    uint64_t at_ns;                       /* when a came */
    struct hosts_answer a;
};

struct hosts_writer {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop;
    struct hosts_entry *next;             /* handed over, not taken yet */
    size_t n_next;
    bool fresh;                           /* next is newer than cur */
    /* The thread's own from here. */
    int fd;
    char ifname[32];
    struct cluster_addr network;
    unsigned prefix;
    hosts_resolve_fn resolve;
    void *resolve_ctx;
    struct gai_lookups *gai;              /* resolve_ctx when the system's */
    struct hosts_entry *cur;              /* the entries the passes write */
    size_t n_cur;
    struct known *known;                  /* sorted by name */
    size_t n_known;
    uint64_t writes;                      /* under lock */
    int last_err;
};

static uint64_t mono_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int by_known(const void *a, const void *b)
{
    return strcasecmp(((const struct known *)a)->name, ((const struct known *)b)->name);
}

static struct known *known_find(struct hosts_writer *w, const char *name)
{
    struct known key;

    snprintf(key.name, sizeof(key.name), "%s", name);
    return w->n_known ? bsearch(&key, w->known, w->n_known, sizeof(*w->known), by_known)
                      : NULL;
}

/* Keeps what the current entries name and whatever is being asked (an
 * answer on its way is taken even when no entry wants it any more); adds
 * what they name that is new. -ENOMEM leaves it as it was. */
static int known_refresh(struct hosts_writer *w)
{
    size_t cap = w->n_known + w->n_cur, n = 0, kept = 0;
    struct known *k = calloc(cap + 1, sizeof(*k)), *old;

    if (!k)
        return -ENOMEM;
    for (size_t i = 0; i < w->n_cur; i++) {
        if (!w->cur[i].claimed)
            continue;
        if ((old = known_find(w, w->cur[i].name))) {
            k[n] = *old;
        } else {
            snprintf(k[n].name, sizeof(k[n].name), "%s", w->cur[i].name);
            k[n].asking = true;
        }
        n++;
    }
    qsort(k, n, sizeof(*k), by_known);
    for (size_t i = 0; i < n; i++)        /* a name claimed twice: once */
        if (!kept || strcasecmp(k[kept - 1].name, k[i].name))
            k[kept++] = k[i];
    n = kept;
    for (size_t i = 0; i < w->n_known; i++)
        if (w->known[i].asking &&
            !bsearch(&w->known[i], k, kept, sizeof(*k), by_known))
            k[n++] = w->known[i];
    qsort(k, n, sizeof(*k), by_known);
    free(w->known);
    w->known = k;
    w->n_known = n;
    return 0;
}

/* Asks what is due; true when an answer is still awaited. */
static bool known_ask(struct hosts_writer *w, uint64_t now)
{
    bool waiting = false;

    for (size_t i = 0; i < w->n_known; i++) {
        struct known *k = &w->known[i];
        struct hosts_answer a;
        if (k->answered && !k->asking && now - k->at_ns >= HOSTS_ANSWER_TTL_NS)
            k->asking = true;
        if (!k->asking)
            continue;
        if (w->resolve(w->resolve_ctx, k->name, &a) == -EAGAIN) {
            waiting |= !k->answered;
            continue;
        }
        k->a = a;
        k->answered = true;
        k->asking = false;
        k->at_ns = now;
    }
    return waiting;
}

static bool member_address(const struct hosts_writer *w, const struct hosts_entry *e,
                           const struct cluster_addr *a)
{
    char text[INET6_ADDRSTRLEN];

    if (cluster_addr_in_network(a, &w->network, w->prefix))
        return true;
    return e->own[0] && cluster_addr_format(a, text, sizeof(text)) == 0 &&
           !strcmp(text, e->own);
}

/* Whether the resolver lets e stand: answered, with members' addresses
 * only. */
static bool resolver_allows(struct hosts_writer *w, const struct hosts_entry *e)
{
    const struct known *k = known_find(w, e->name);

    if (!k || !k->answered || k->a.too_many)
        return false;
    for (unsigned i = 0; i < k->a.n; i++)
        if (!member_address(w, e, &k->a.addr[i]))
            return false;
    return true;
}

/* One pass: the current entries, less the claims the resolver refuses
 * or has not answered, written. True when an answer is awaited. */
static bool pass(struct hosts_writer *w, uint64_t now)
{
    struct hosts_entry *e = calloc(w->n_cur + 1, sizeof(*e));
    bool waiting, wrote = false;
    size_t n = 0;
    int ret;

    if (!e || known_refresh(w)) {
        free(e);
        log_warn("names: out of memory for the names block");
        return true;
    }
    waiting = known_ask(w, now);
    /* Answers that come at once (the hosts file, a DNS server that
     * answers) go into this very write rather than the next one, a
     * second later; a silent server delays it HOSTS_ANSWER_WAIT_NS. */
    for (uint64_t waited = 0; waiting && waited < HOSTS_ANSWER_WAIT_NS;
         waited += HOSTS_ANSWER_POLL_NS) {
        struct timespec nap = { 0, (long)HOSTS_ANSWER_POLL_NS };
        nanosleep(&nap, NULL);
        waiting = known_ask(w, now);
    }
    for (size_t i = 0; i < w->n_cur; i++) {
        if (!w->cur[i].claimed || resolver_allows(w, &w->cur[i]))
            e[n++] = w->cur[i];
    }
    ret = hosts_write_fd(w->fd, w->ifname, e, n, &wrote);
    free(e);
    if (wrote) {
        pthread_mutex_lock(&w->lock);
        w->writes++;
        pthread_mutex_unlock(&w->lock);
    }
    if (ret && ret != w->last_err)
        log_warn("the names block was not updated: %s", strerror(-ret));
    w->last_err = ret;
    return waiting;
}

static void *run(void *arg)
{
    struct hosts_writer *w = arg;
    uint64_t not_before = 0;
    bool waiting = false;

    pthread_mutex_lock(&w->lock);
    for (;;) {
        uint64_t now;
        if (w->stop)
            break;
        if (!w->fresh && !waiting) {
            pthread_cond_wait(&w->wake, &w->lock);
            continue;
        }
        if ((now = mono_ns()) < not_before) {
            struct timespec until = { (time_t)(not_before / 1000000000ull),
                                      (long)(not_before % 1000000000ull) };
            pthread_cond_timedwait(&w->wake, &w->lock, &until);
            continue;
        }
        if (w->fresh) {
            free(w->cur);
            w->cur = w->next;
            w->n_cur = w->n_next;
            w->next = NULL;
            w->n_next = 0;
            w->fresh = false;
        }
        pthread_mutex_unlock(&w->lock);
        waiting = pass(w, now);
        pthread_mutex_lock(&w->lock);
        not_before = now + HOSTS_WRITE_INTERVAL_NS;
    }
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

int hosts_writer_start(struct hosts_writer **out, const struct hosts_writer_config *cfg)
{
    struct hosts_writer *w = calloc(1, sizeof(*w));
    pthread_condattr_t attr;
    int ret;

    if (!w)
        return -ENOMEM;
    w->fd = cfg->fd;
    snprintf(w->ifname, sizeof(w->ifname), "%s", cfg->ifname);
    w->network = cfg->network;
    w->prefix = cfg->prefix;
    w->resolve = cfg->resolve;
    w->resolve_ctx = cfg->resolve_ctx;
    if (!w->resolve) {
        if (!(w->gai = calloc(1, sizeof(*w->gai)))) {
            free(w);
            return -ENOMEM;
        }
        w->resolve = resolve_gai;
        w->resolve_ctx = w->gai;
    }
    pthread_mutex_init(&w->lock, NULL);
    pthread_condattr_init(&attr);
    pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
    pthread_cond_init(&w->wake, &attr);
    pthread_condattr_destroy(&attr);
    if ((ret = pthread_create(&w->thread, NULL, run, w))) {
        pthread_cond_destroy(&w->wake);
        pthread_mutex_destroy(&w->lock);
        free(w->gai);
        free(w);
        return -ret;
    }
    *out = w;
    return 0;
}

void hosts_writer_submit(struct hosts_writer *w, struct hosts_entry *e, size_t n)
{
    pthread_mutex_lock(&w->lock);
    free(w->next);
    w->next = e;
    w->n_next = e ? n : 0;
    w->fresh = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
}

uint64_t hosts_writer_writes(struct hosts_writer *w)
{
    uint64_t n;

    pthread_mutex_lock(&w->lock);
    n = w->writes;
    pthread_mutex_unlock(&w->lock);
    return n;
}

void hosts_writer_stop(struct hosts_writer *w)
{
    if (!w)
        return;
    pthread_mutex_lock(&w->lock);
    w->stop = true;
    pthread_cond_signal(&w->wake);
    pthread_mutex_unlock(&w->lock);
    pthread_join(w->thread, NULL);
    if (w->gai)
        gai_lookups_free(w->gai);
    pthread_cond_destroy(&w->wake);
    pthread_mutex_destroy(&w->lock);
    free(w->next);
    free(w->cur);
    free(w->known);
    free(w);
}
