/* The daemon's one clock, and the units its deadlines are written in. */
#ifndef DDPNET_CLOCK_H
#define DDPNET_CLOCK_H

#include <stdint.h>

#include "crypto/wg_const.h"

#define NS_PER_MS (WG_NSEC_PER_SEC / 1000u)

/* The monotonic clock in ns (CLOCK_BOOTTIME: it runs through suspend). */
uint64_t clock_now_ns(void);

#endif
