/* SPDX-License-Identifier: MIT */
/* Busy polling after an idle spell (see busy_poll.h). */
#include "overlay/base/clock.h"
#include "overlay/loop/busy_poll.h"


void busy_poll_init(struct busy_poll *bp, unsigned window_us)
{
    if (window_us == BUSY_POLL_ALWAYS)
        *bp = (struct busy_poll){ .always = true };   /* no windows: it polls anyway */
    else
        *bp = (struct busy_poll){ .window_ns = window_us * NS_PER_US };
}

/* Meters one packet against a sparse exchange's rate. An answer (a
 * packet going the other way within BUSY_POLL_ANSWER_NS of the one
 * before, which was alone on its side) is not metered, and takes back what the packet it answers
 * cost: a request-response exchange, at any rate, costs nothing, while a
 * flow's packets mostly follow one going the same way (a bulk stream, its
 * acks in bursts or every other segment, two streams crossing) or come long after the other
 * way's (a slow stream's sends and the acks a round trip later). Past
 * the bucket the packets are a flow until half of it has drained, so that
 * a stream whose rate hovers near the line does not open a window every
 * other packet. */
static void meter(struct busy_poll *bp, uint64_t now, bool answer)
{
    uint64_t most = now + 2 * BUSY_POLL_FLOW_NS;   /* a flow's end seen soon */

    if (bp->paced < now)
        bp->paced = now;
    if (!answer) {
        bp->paced += BUSY_POLL_PACKET_NS;
        bp->metered = true;
    } else if (bp->metered) {
        /* Never below now (nor below zero on an early clock). */
        bp->paced = bp->paced - now > BUSY_POLL_PACKET_NS ? bp->paced - BUSY_POLL_PACKET_NS : now;
        bp->metered = false;
    }
    if (bp->paced > most)
        bp->paced = most;
    if (bp->paced > now + BUSY_POLL_FLOW_NS)
        bp->flow = true;
    else if (bp->paced <= now + BUSY_POLL_FLOW_NS / 2)
        bp->flow = false;
}

/* A long window ran out before this packet came: it waited for nothing.
 * Counted once; windows closed for other reasons (the CPU wanted, upkeep)
 * are no lapse. */
static void note_lapse(struct busy_poll *bp, uint64_t now)
{
    if (!bp->long_window || !bp->until || bp->until > now)
        return;
    bp->lapses += BUSY_POLL_LAPSE_WEIGHT;
    if (bp->lapses > BUSY_POLL_LAPSES_MAX)
        bp->lapses = BUSY_POLL_LAPSES_MAX;
    bp->lapsed = bp->until;
    bp->long_window = false;
}

/* Lapses outweighing the windows that paid hold long windows off for a
 * time that doubles with each further lapse: one or two lapses (an
 * exchange or two that ended, as a tunnel's first pings) hold nothing
 * off. */
static bool held_off(const struct busy_poll *bp, uint64_t now)
{
    if (bp->lapses <= BUSY_POLL_LAPSES_FREE)
        return false;
    return now - bp->lapsed < BUSY_POLL_HOLDOFF_NS << (bp->lapses - BUSY_POLL_LAPSES_FREE - 1);
}

static void open_window(struct busy_poll *bp, uint64_t now, bool long_window)
{
    uint64_t len = bp->window_ns;

    if (!long_window && len > BUSY_POLL_SHORT_NS)
        len = BUSY_POLL_SHORT_NS;
    bp->packets = 1;
    bp->opened = now;
    bp->others_ns = 0;
    bp->until = now + len;
    bp->long_window = long_window;
}

void busy_poll_packet(struct busy_poll *bp, uint64_t now, enum busy_poll_way way)
{
    bool after_idle = !bp->last_packet || now - bp->last_packet > BUSY_POLL_IDLE_NS;
    bool caught = now < bp->until;
    bool turn = bp->last_packet && way != bp->last_way;
    /* An answer answers one packet, alone on its side (a run of several
     * one way, then one the other, is a stream and its ack). */
    bool answer = turn && now - bp->last_packet <= BUSY_POLL_ANSWER_NS && bp->began;

    bp->began = !bp->last_packet || turn || after_idle;
    bp->last_packet = now;
    bp->last_way = way;
    if (!bp->window_ns)
        return;
    note_lapse(bp, now);
    meter(bp, now, answer);
    if (bp->flow) {
        bp->until = 0;
    } else if (after_idle) {
        /* A long window that spanned the idle spell and caught its end
         * paid; one that did not, or a hold-off, leaves a short window,
         * for the answer a short path gives at once. */
        bool bridged = caught && bp->long_window;

        if (bridged && bp->lapses)
            bp->lapses--;
        open_window(bp, now, bridged || !held_off(bp, now));
    } else if (caught && bp->long_window) {
        bp->packets++;
        bp->until = now + bp->window_ns;
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
