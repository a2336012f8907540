/* SPDX-License-Identifier: MIT */
/* Busy polling after an idle spell (see busy_poll.h). */
#include "overlay/base/clock.h"
#include "overlay/loop/busy_poll.h"


void busy_poll_init(struct busy_poll *bp, unsigned window_us)
{
    if (window_us == BUSY_POLL_ALWAYS)
        *bp = (struct busy_poll){ .always = true,
                                  .window_ns = BUSY_POLL_ALWAYS_WINDOW_US * NS_PER_US };
    else
        *bp = (struct busy_poll){ .window_ns = window_us * NS_PER_US };
}

void busy_poll_packet(struct busy_poll *bp, uint64_t now)
{
    bool after_idle = !bp->last_packet || now - bp->last_packet > BUSY_POLL_IDLE_NS;

    bp->last_packet = now;
    if (!bp->window_ns)
        return;
    if (after_idle) {
        bp->packets = 1;
        bp->opened = now;
        bp->others_ns = 0;
        bp->until = now + bp->window_ns;
    } else if (now < bp->until) {
        /* A bulk flow: stop until the next idle spell. */
        bp->until = ++bp->packets > BUSY_POLL_MAX_PACKETS ? 0 : now + bp->window_ns;
    }
}

void busy_poll_unawaited(struct busy_poll *bp)
{
    if (bp->packets == 1)
        bp->until = 0;
}

void busy_poll_yielded(struct busy_poll *bp, uint64_t now, uint64_t took_ns)
{
    if (bp->always || took_ns <= BUSY_POLL_SWITCH_NS)
        return;
    bp->others_ns += took_ns;
    if (bp->others_ns > BUSY_POLL_WANTED_NS + (now - bp->opened) / 2)
        bp->until = 0;
}

bool busy_poll_active(const struct busy_poll *bp, uint64_t now)
{
    return bp->always || now < bp->until;
}

uint64_t busy_poll_window_end(const struct busy_poll *bp)
{
    return bp->until;
}
