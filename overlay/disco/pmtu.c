/* SPDX-License-Identifier: MIT */
/* The path MTU search (see pmtu.h). */
#include "crypto/wg_const.h"
#include "overlay/base/clock.h"
#include "overlay/disco/pmtu.h"


/* The next size to try, or 0 when the search is over. */
static uint16_t next_size(const struct pmtu *m)
{
    if (m->hi == m->max && m->lo < m->max)
        return m->max;   /* the full size first: one round trip on most paths */
    if (m->hi < m->lo + PMTU_PRECISION)
        return 0;
    return (uint16_t)((m->lo + m->hi + 1u) / 2u);
}

/* Idle until the next confirmation, or the raise if sooner. */
static void idle(struct pmtu *m, uint64_t now)
{
    uint64_t confirm = now + clock_stretch(PMTU_CONFIRM_SEC * WG_NSEC_PER_SEC, m->spread);

    m->probe_size = 0;
    m->confirming = false;
    m->deadline_ns = confirm < m->raise_ns ? confirm : m->raise_ns;
}

static void search_ends(struct pmtu *m, uint64_t now)
{
    m->current = m->lo;
    m->found = true;
    m->raise_ns = now + (m->told ? PMTU_TOLD_RAISE_SEC : PMTU_RAISE_SEC) * WG_NSEC_PER_SEC;
    idle(m, now);
}

/* Moves to the next size, or ends the search. */
static void advance(struct pmtu *m, uint64_t now)
{
    m->probe_size = next_size(m);
    m->tries = 0;
    m->deadline_ns = now;
    if (!m->probe_size)
        search_ends(m, now);
}

static void search(struct pmtu *m, uint64_t now)
{
    m->confirming = false;
    m->told = false;
    m->lo = m->found ? m->current : m->base;
    m->hi = m->max;
    advance(m, now);
}

void pmtu_reset(struct pmtu *m, uint16_t base, uint16_t max, uint64_t now)
{
    *m = (struct pmtu){ .base = base < max ? base : max, .max = max, .spread = m->spread };
    m->current = m->base;
    search(m, now);
}

bool pmtu_only_confirm(const struct pmtu *m)
{
    return m->found && !m->probe_size && m->deadline_ns < m->raise_ns;
}

uint16_t pmtu_due(struct pmtu *m, uint64_t id, uint64_t rtt_ns, uint64_t now)
{
    uint64_t wait = PMTU_PROBE_TIMEOUT_MS * NS_PER_MS;

    if (!m->deadline_ns || now < m->deadline_ns)
        return 0;
    if (!m->probe_size) {
        if (now >= m->raise_ns) {    /* the raise timer: search again */
            search(m, now);
            if (!m->probe_size)
                return 0;
        } else if (m->current > m->base) {
            m->confirming = true;    /* does the size in use still pass? */
            m->probe_size = m->current;
            m->tries = 0;
        } else {
            idle(m, now);
            return 0;
        }
    }
    if (m->tries == PMTU_PROBE_TRIES && m->confirming) {
        /* The path narrowed under us (a route changed): back to what
         * surely passes, and search below what no longer does. */
        m->confirming = false;
        m->found = false;
        m->current = m->base;
        m->lo = m->base;
        m->hi = (uint16_t)(m->probe_size - 1u);
        advance(m, now);
        if (!m->probe_size)
            return 0;
    } else if (m->tries == PMTU_PROBE_TRIES) {
        /* No answer to any of them: too big. */
        m->hi = (uint16_t)(m->probe_size - 1u);
        advance(m, now);
        if (!m->probe_size)
            return 0;
    }
    if (3 * rtt_ns > wait)
        wait = 3 * rtt_ns;
    m->tries++;
    m->probe_id = id;
    m->deadline_ns = now + wait;
    return m->probe_size;
}

void pmtu_told(struct pmtu *m, uint16_t most, uint64_t now)
{
    /* Below what every path carries: not believed (ICMP can be forged). */
    if (most < m->base)
        most = m->base;
    if (most >= m->hi)
        return;
    m->hi = most;
    m->told = true;
    if (m->lo > most)
        m->lo = m->base;
    if (m->current > most)
        m->current = m->base;   /* it is being dropped: what surely passes, until confirmed */
    /* Try what it said at once: one round trip, if it is right. */
    m->confirming = false;
    m->probe_size = most;
    m->tries = 0;
    m->deadline_ns = now;
}

bool pmtu_acked(struct pmtu *m, uint64_t id, uint64_t now)
{
    if (!m->probe_size || id != m->probe_id)
        return false;
    if (m->confirming) {
        idle(m, now);
        return true;
    }
    m->lo = m->probe_size;
    if (m->found && m->lo > m->current)
        m->current = m->lo;   /* grown: use it now */
    advance(m, now);
    return true;
}
