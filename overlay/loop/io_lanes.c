/* SPDX-License-Identifier: MIT */
/* Lanes: threads that make the data path's sends and ddp0 writes
 * (io_lanes.h). */
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "overlay/base/clock.h"
#include "overlay/loop/io_lanes.h"

/* Work a lane takes from its queue at once: one lock per batch. */
#define LANE_BATCH 32u

/* Waits until fd is readable: 0, or -ECANCELED once the lanes stop. Until
 * spin_until it looks without sleeping, yielding the CPU between looks
 * to whatever it waits for. */
static int wait_readable(struct io_lanes *set, int fd)
{
    struct pollfd pfd[2] = { { fd, POLLIN, 0 }, { set->stop_fd, POLLIN, 0 } };

    for (;;) {
        bool spin = clock_now_ns() <
                    atomic_load_explicit(&set->spin_until, memory_order_relaxed);
        int ret = poll(pfd, 2, spin ? 0 : -1);
        if (ret < 0 && errno != EINTR)
            return -errno;
        if (ret == 0) {
            sched_yield();
            continue;
        }
        if (pfd[1].revents)
            return -ECANCELED;
        if (pfd[0].revents)
            return 0;
    }
}

static int run_call(struct io_lanes *set, const struct io_lane_work *w)
{
    ssize_t ret;

    switch (w->op) {
    case IO_LANE_SENDMSG:
        ret = sendmsg(w->fd, w->msg, 0);
        break;
    case IO_LANE_WRITEV:
        ret = writev(w->fd, w->iov, w->iovcnt);
        break;
    default:
        do {
            int wait = wait_readable(set, w->fd);
            if (wait)
                return wait;
            ret = w->op == IO_LANE_READ ? read(w->fd, w->buf, w->cap)
                                        : recvmsg(w->fd, w->msg, MSG_DONTWAIT);
        } while (ret < 0 && (errno == EAGAIN || errno == EINTR));
    }
    return ret < 0 ? -errno : (int)ret;
}

/* Appends finished calls to the done ring; the first since the loop last
 * took them signals the eventfd. */
static void post_done(struct io_lanes *set, const struct io_lane_done *d, unsigned n)
{
    bool signal;

    pthread_mutex_lock(&set->done_lock);
    for (unsigned i = 0; i < n; i++)
        set->done[set->done_tail++ % IO_LANE_DEPTH] = d[i];
    signal = !set->signalled;
    set->signalled = true;
    pthread_mutex_unlock(&set->done_lock);
    if (signal) {
        uint64_t one = 1;
        (void)!write(set->event_fd, &one, sizeof(one));
    }
}

/* Takes up to LANE_BATCH items, sleeping while there are none; 0 when
 * stopping. */
static unsigned next_batch(struct io_lane *lane, struct io_lane_work *out)
{
    unsigned n = 0;

    pthread_mutex_lock(&lane->lock);
    while (lane->head == lane->tail && !lane->stopping) {
        lane->waiting = true;
        pthread_cond_wait(&lane->wake, &lane->lock);
    }
    lane->waiting = false;
    if (!lane->stopping)
        while (lane->head != lane->tail && n < LANE_BATCH)
            out[n++] = lane->work[lane->head++ % IO_LANE_DEPTH];
    pthread_mutex_unlock(&lane->lock);
    return n;
}

static void *lane_main(void *arg)
{
    struct io_lane *lane = arg;
    struct io_lane_work batch[LANE_BATCH];
    struct io_lane_done done[LANE_BATCH];
    unsigned n;

    while ((n = next_batch(lane, batch))) {
        unsigned k = 0;
        for (unsigned i = 0; i < n; i++) {
            done[k++] = (struct io_lane_done){ batch[i].owner, run_call(lane->set, &batch[i]),
                                               lane->index };
            /* A read is handed back at once: the next may wait for long. */
            if (batch[i].op == IO_LANE_READ || batch[i].op == IO_LANE_RECVMSG) {
                post_done(lane->set, done, k);
                k = 0;
            }
        }
        if (k)
            post_done(lane->set, done, k);
    }
    return NULL;
}

void io_lane_push(struct io_lane *lane, const struct io_lane_work *w)
{
    bool wake;

    pthread_mutex_lock(&lane->lock);
    lane->work[lane->tail++ % IO_LANE_DEPTH] = *w;
    wake = lane->waiting;
    pthread_mutex_unlock(&lane->lock);
    if (wake)
        pthread_cond_signal(&lane->wake);
    lane->in_flight++;
}

unsigned io_lanes_take(struct io_lanes *set, struct io_lane_done *out, unsigned max)
{
    unsigned n = 0;
    uint64_t count;

    pthread_mutex_lock(&set->done_lock);
    if (set->signalled) {
        (void)!read(set->event_fd, &count, sizeof(count));
        set->signalled = false;
    }
    while (set->done_head != set->done_tail && n < max)
        out[n++] = set->done[set->done_head++ % IO_LANE_DEPTH];
    pthread_mutex_unlock(&set->done_lock);
    for (unsigned i = 0; i < n; i++)
        set->lane[out[i].lane].in_flight--;
    return n;
}

int io_lanes_start(struct io_lanes *set, unsigned n, const char *name)
{
    int ret;

    memset(set, 0, sizeof(*set));
    set->event_fd = set->stop_fd = -1;
    if (n == 0)
        return 0;
    if (n > IO_LANES_MAX)
        return -EINVAL;
    if (!(set->done = calloc(IO_LANE_DEPTH, sizeof(*set->done))))
        return -ENOMEM;
    if ((set->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return -errno;
    if ((set->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
        ret = -errno;
        close(set->event_fd);
        set->event_fd = -1;
        return ret;
    }
    pthread_mutex_init(&set->done_lock, NULL);
    for (unsigned i = 0; i < n; i++) {
        struct io_lane *lane = &set->lane[i];
        lane->set = set;
        lane->index = i;
        if (!(lane->work = calloc(IO_LANE_DEPTH, sizeof(*lane->work))))
            return -ENOMEM;
        pthread_mutex_init(&lane->lock, NULL);
        pthread_cond_init(&lane->wake, NULL);
        if ((ret = pthread_create(&lane->thread, NULL, lane_main, lane))) {
            pthread_cond_destroy(&lane->wake);
            pthread_mutex_destroy(&lane->lock);
            free(lane->work);
            lane->work = NULL;
            return -ret;
        }
        /* Named, so that top -H and the benches tell lanes apart. */
        char thread_name[16];
        snprintf(thread_name, sizeof(thread_name), "%.11s%u", name, i);
        pthread_setname_np(lane->thread, thread_name);
        set->n++;
    }
    return 0;
}

void io_lanes_stop(struct io_lanes *set)
{
    if (set->event_fd >= 0) {   /* started: stop_fd is open too */
        uint64_t one = 1;
        (void)!write(set->stop_fd, &one, sizeof(one));
    }
    for (unsigned i = 0; i < set->n; i++) {
        pthread_mutex_lock(&set->lane[i].lock);
        set->lane[i].stopping = true;
        pthread_cond_signal(&set->lane[i].wake);
        pthread_mutex_unlock(&set->lane[i].lock);
    }
    for (unsigned i = 0; i < set->n; i++) {
        pthread_join(set->lane[i].thread, NULL);
        pthread_cond_destroy(&set->lane[i].wake);
        pthread_mutex_destroy(&set->lane[i].lock);
    }
    /* Lanes that never started a thread hold at most their queue. */
    for (unsigned i = 0; i < IO_LANES_MAX; i++) {
        free(set->lane[i].work);
        set->lane[i].work = NULL;
    }
    free(set->done);
    set->done = NULL;
    if (set->event_fd >= 0) {
        pthread_mutex_destroy(&set->done_lock);
        close(set->event_fd);
        close(set->stop_fd);
    }
    set->n = 0;
    set->event_fd = set->stop_fd = -1;
}
