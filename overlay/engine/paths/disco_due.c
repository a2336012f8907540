/* SPDX-License-Identifier: MIT */
/* Discovery's deadlines, set here alone: each peer's (p->disco.due_ns)
 * and the device's earliest (disco.next_check_ns), never later than a
 * peer's, so that the loop looks at the peers only when one is due
 * (disco_sched.c's discovery_run_timers), as timers.c's arm. A leaf of
 * its room: every file of paths/ may arm a peer or wake them all, and
 * this calls none of them back (tests/check_layers.sh: no call circle
 * above 5 files). */
#include "overlay/engine/paths/disco_int.h"

void discovery_set_due(struct peer *p, uint64_t when)
{
    p->disco.due_ns = when;
    if (when < p->dev->disco.next_check_ns)
        p->dev->disco.next_check_ns = when;
}

void discovery_arm(struct peer *p, uint64_t when)
{
    if (when < p->disco.due_ns)
        discovery_set_due(p, when);
}

void discovery_wake(struct device *dev)
{
    dev->disco.next_check_ns = 0;
    dev->disco.wake_all = true;
}
