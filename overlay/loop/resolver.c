/* SPDX-License-Identifier: MIT */
/* Lookups on threads of their own, answers through an eventfd
 * (resolver.h). One mutex guards the table of names; the threads take the
 * oldest queued name, run the lookup unlocked, and post its answer. */
#include <errno.h>
#include <netdb.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "overlay/loop/resolver.h"

enum slot_state { SLOT_FREE, SLOT_QUEUED, SLOT_RUNNING, SLOT_DONE };

struct slot {
    enum slot_state state;
    uint64_t order;                   /* queued first, looked up first */
    struct resolver_answer answer;
};

struct resolver {
    pthread_mutex_t lock;
    pthread_cond_t work;
    resolver_lookup_fn lookup;
    void *ctx;
    int event_fd;
    bool stop;
    unsigned refs;                    /* the owner's and each thread's */
    uint64_t next_order;
    struct slot slots[RESOLVER_NAMES];
};

static int lookup_getaddrinfo(void *ctx, const char *host, union endpoint *out)
{
    struct addrinfo hints = { .ai_socktype = SOCK_DGRAM }, *res, *ai;
    int ret;

    (void)ctx;
    if ((ret = getaddrinfo(host, NULL, &hints, &res)))
        return ret;
    ret = EAI_NODATA;
    for (ai = res; ai; ai = ai->ai_next) {
        if ((ai->ai_family == AF_INET || ai->ai_family == AF_INET6) &&
            ai->ai_addrlen <= sizeof(*out)) {
            memset(out, 0, sizeof(*out));
            memcpy(out, ai->ai_addr, ai->ai_addrlen);
            ret = 0;
            break;
        }
    }
    freeaddrinfo(res);
    return ret;
}

struct resolver *resolver_new(resolver_lookup_fn fn, void *ctx)
{
    struct resolver *r = calloc(1, sizeof(*r));

    if (!r)
        return NULL;
    r->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (r->event_fd < 0) {
        free(r);
        return NULL;
    }
    pthread_mutex_init(&r->lock, NULL);
    pthread_cond_init(&r->work, NULL);
    r->lookup = fn ? fn : lookup_getaddrinfo;
    r->ctx = ctx;
    r->refs = 1;
    return r;
}

static void destroy(struct resolver *r)
{
    close(r->event_fd);
    pthread_cond_destroy(&r->work);
    pthread_mutex_destroy(&r->lock);
    free(r);
}

/* Drops one reference, r->lock held; frees r when it was the last. */
static void unref_locked(struct resolver *r)
{
    bool last = --r->refs == 0;

    pthread_mutex_unlock(&r->lock);
    if (last)
        destroy(r);
}

static struct slot *oldest_queued(struct resolver *r)
{
    struct slot *best = NULL;

    for (unsigned i = 0; i < RESOLVER_NAMES; i++)
        if (r->slots[i].state == SLOT_QUEUED && (!best || r->slots[i].order < best->order))
            best = &r->slots[i];
    return best;
}

static void *worker(void *arg)
{
    struct resolver *r = arg;
    struct slot *s;

    pthread_mutex_lock(&r->lock);
    for (;;) {
        while (!r->stop && !(s = oldest_queued(r)))
            pthread_cond_wait(&r->work, &r->lock);
        if (r->stop)
            break;
        char host[RESOLVER_HOST_MAX + 1];
        union endpoint addr;
        memcpy(host, s->answer.host, sizeof(host));
        s->state = SLOT_RUNNING;
        pthread_mutex_unlock(&r->lock);
        memset(&addr, 0, sizeof(addr));
        int err = r->lookup(r->ctx, host, &addr);
        pthread_mutex_lock(&r->lock);
        s->answer.err = err;
        s->answer.addr = addr;
        s->state = SLOT_DONE;
        if (!r->stop)
            (void)!write(r->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
    }
    unref_locked(r);
    return NULL;
}

int resolver_start(struct resolver *r, unsigned threads)
{
    pthread_attr_t attr;
    int ret = 0;

    if (threads == 0 || threads > RESOLVER_THREADS)
        return -EINVAL;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    for (unsigned i = 0; i < threads && !ret; i++) {
        pthread_t t;
        pthread_mutex_lock(&r->lock);
        r->refs++;
        pthread_mutex_unlock(&r->lock);
        if ((ret = -pthread_create(&t, &attr, worker, r))) {
            pthread_mutex_lock(&r->lock);
            r->refs--;
            pthread_mutex_unlock(&r->lock);
        }
    }
    pthread_attr_destroy(&attr);
    return ret;
}

int resolver_fd(const struct resolver *r)
{
    return r->event_fd;
}

int resolver_submit(struct resolver *r, const char *host)
{
    struct slot *free_slot = NULL;
    size_t len = strlen(host);

    if (len == 0 || len > RESOLVER_HOST_MAX)
        return -ENAMETOOLONG;
    pthread_mutex_lock(&r->lock);
    for (unsigned i = 0; i < RESOLVER_NAMES; i++) {
        struct slot *s = &r->slots[i];
        if (s->state == SLOT_FREE) {
            if (!free_slot)
                free_slot = s;
        } else if (!strcasecmp(s->answer.host, host)) {
            pthread_mutex_unlock(&r->lock);
            return 0;                     /* asked already: one answer serves both */
        }
    }
    if (free_slot) {
        memset(free_slot, 0, sizeof(*free_slot));
        memcpy(free_slot->answer.host, host, len + 1);
        free_slot->order = r->next_order++;
        free_slot->state = SLOT_QUEUED;
        pthread_cond_signal(&r->work);
    }
    pthread_mutex_unlock(&r->lock);
    return free_slot ? 0 : -ENOSPC;
}

size_t resolver_take(struct resolver *r, struct resolver_answer *out, size_t max)
{
    uint64_t count;
    size_t n = 0;
    bool more = false;

    /* Read under the lock: a worker writes under it too, so a count read
     * here never stands for an answer this call takes (no empty wake-up). */
    pthread_mutex_lock(&r->lock);
    (void)!read(r->event_fd, &count, sizeof(count));
    for (unsigned i = 0; i < RESOLVER_NAMES; i++) {
        struct slot *s = &r->slots[i];
        if (s->state != SLOT_DONE)
            continue;
        if (n == max) {
            more = true;
            break;
        }
        out[n++] = s->answer;
        s->state = SLOT_FREE;
    }
    /* What did not fit keeps the fd readable for the next poll. */
    if (more)
        (void)!write(r->event_fd, &(uint64_t){ 1 }, sizeof(uint64_t));
    pthread_mutex_unlock(&r->lock);
    return n;
}

void resolver_free(struct resolver *r)
{
    if (!r)
        return;
    pthread_mutex_lock(&r->lock);
    r->stop = true;
    pthread_cond_broadcast(&r->work);
    unref_locked(r);
}
