/* SPDX-License-Identifier: MIT */
/* CoDel's control law on one socket's waits (codel.h). */
#include "overlay/loop/codel.h"

void codel_init(struct codel *c, uint64_t target_ns, uint64_t interval_ns)
{
    *c = (struct codel){ .target_ns = target_ns, .interval_ns = interval_ns };
}

/* floor(sqrt(x)), by Newton's method from above. */
static uint64_t isqrt(uint64_t x)
{
    uint64_t r = x, y;

    if (x < 2)
        return x;
    y = x / 2 + 1;   /* never overflows, unlike (r + 1) / 2 at r = 2^64 - 1 */
    while (y < r) {
        r = y;
        y = (r + x / r) / 2;
    }
    return r;
}

uint64_t codel_gap(uint64_t interval_ns, uint32_t count)
{
    /* sqrt(count) in units of 1/1024: interval / that, times 1024. */
    uint64_t root = isqrt((uint64_t)(count ? count : 1) << 20);

    return interval_ns * 1024u / root;
}

/* Whether the wait has stood above target for a whole interval. */
static bool standing(struct codel *c, uint64_t wait_ns, uint64_t now)
{
    if (wait_ns < c->target_ns) {
        c->first_above = 0;
        return false;
    }
    if (!c->first_above) {
        c->first_above = now + c->interval_ns;
        return false;
    }
    return now >= c->first_above;
}

bool codel_signal(struct codel *c, uint64_t wait_ns, uint64_t now)
{
    if (!c->target_ns)
        return false;
    bool stand = standing(c, wait_ns, now);
    if (c->signalling) {
        if (!stand) {
            c->signalling = false;
            return false;
        }
        if (now < c->drop_next)
            return false;
        c->count++;
        c->drop_next += codel_gap(c->interval_ns, c->count);
        /* Read late (a descheduled loop): the next signal from now. */
        if (c->drop_next < now)
            c->drop_next = now + codel_gap(c->interval_ns, c->count);
        return true;
    }
    if (!stand)
        return false;
    /* Back in the signalling state soon after leaving it: resume near the
     * rate that held the queue down then, not from one. */
    uint32_t delta = c->count - c->last_count;
    c->count = delta > 1 && (int64_t)(now - c->drop_next) < (int64_t)(16 * c->interval_ns) ? delta
                                                                                          : 1;
    c->signalling = true;
    c->drop_next = now + codel_gap(c->interval_ns, c->count);
    c->last_count = c->count;
    return true;
}
