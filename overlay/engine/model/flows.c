/* SPDX-License-Identifier: MIT */
/* Flows to shards and underlay flows (see flows.h). */
#include <stddef.h>

#include "overlay/engine/model/flows.h"

unsigned flows_turn(struct flows *f, uint32_t hash, uint64_t now)
{
    struct flow_slot *oldest = NULL;

    if (!hash)
        return 0;
    for (unsigned i = 0; i < FLOWS_PROBE; i++) {
        struct flow_slot *s = &f->slot[(hash + i) & (FLOWS_SLOTS - 1u)];
        if (s->hash == hash) {
            s->seen_ns = now;
            return s->turn;
        }
        if (!oldest || !s->hash || (oldest->hash && s->seen_ns < oldest->seen_ns))
            oldest = s;
    }
    oldest->hash = hash;
    oldest->turn = f->next++;
    oldest->seen_ns = now;
    return oldest->turn;
}

unsigned flows_hint(struct flows *f, uint32_t hash, unsigned shards, uint64_t now)
{
    if (shards < 2 || !hash)
        return 0;
    return flows_turn(f, hash, now) % shards;
}
