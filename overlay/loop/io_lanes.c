/* SPDX-License-Identifier: MIT */
/* Lanes: threads that make the data path's sends and ddp0 writes
 * (io_lanes.h). */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "overlay/loop/io_lanes.h"

/* Work a lane takes from its queue at once: one lock per batch. */
#define LANE_BATCH 32u

static int run_call(const struct io_lane_work *w)
{
    ssize_t ret;

    if (w->op == IO_LANE_SENDMSG)
        ret = sendmsg(w->fd, w->msg, 0);
    else
        ret = writev(w->fd, w->iov, w->iovcnt);
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
        for (unsigned i = 0; i < n; i++)
            done[i] = (struct io_lane_done){ batch[i].owner, run_call(&batch[i]), lane->index };
        post_done(lane->set, done, n);
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

int io_lanes_start(struct io_lanes *set, unsigned n)
{
    int ret;

    memset(set, 0, sizeof(*set));
    set->event_fd = -1;
    if (n == 0)
        return 0;
    if (n > IO_LANES_MAX)
        return -EINVAL;
    if ((set->event_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0)
        return -errno;
    pthread_mutex_init(&set->done_lock, NULL);
    for (unsigned i = 0; i < n; i++) {
        struct io_lane *lane = &set->lane[i];
        lane->set = set;
        lane->index = i;
        pthread_mutex_init(&lane->lock, NULL);
        pthread_cond_init(&lane->wake, NULL);
        if ((ret = pthread_create(&lane->thread, NULL, lane_main, lane))) {
            pthread_cond_destroy(&lane->wake);
            pthread_mutex_destroy(&lane->lock);
            return -ret;
        }
        /* Named, so that top -H and the benches tell lanes apart. */
        char name[16];
        snprintf(name, sizeof(name), "ddpnet-lane%u", i);
        pthread_setname_np(lane->thread, name);
        set->n++;
    }
    return 0;
}

void io_lanes_stop(struct io_lanes *set)
{
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
    if (set->event_fd >= 0) {
        pthread_mutex_destroy(&set->done_lock);
        close(set->event_fd);
    }
    set->n = 0;
    set->event_fd = -1;
}
