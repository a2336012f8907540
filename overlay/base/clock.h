/* SPDX-License-Identifier: MIT */
/* The daemon's one clock, and the units its deadlines are written in. */
#ifndef DDPNET_CLOCK_H
#define DDPNET_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

/* The units, once: seconds in ns are WireGuard's WG_NSEC_PER_SEC. */
#define NS_PER_MS (WG_NSEC_PER_SEC / 1000u)
#define NS_PER_S WG_NSEC_PER_SEC
#define MS_PER_S 1000u
#define US_PER_MS 1000u
#define NS_PER_US (NS_PER_MS / 1000u)

/* The monotonic clock in ns (CLOCK_BOOTTIME: it runs through suspend). */
uint64_t clock_now_ns(void);

/* "2d 3h", "1h 5m", "59m 2s": a span of seconds for a person, its two
 * largest units (the journal's warnings, `status`). */
void clock_span_text(char *buf, size_t len, uint64_t secs);

/* A period lengthened by spread/1024 of itself (a quarter at most). Each
 * peer's periodic work (pings, ENDPOINTS, path MTU confirmations) runs on
 * periods stretched by a spread of its own, drawn when it is made: the
 * peers of a cluster that came up together drift apart within a few
 * periods instead of being pinged in step, 64 at once, for ever. */
static inline uint64_t clock_stretch(uint64_t ns, uint8_t spread)
{
    return ns + ns / 1024u * spread;
}

#endif
