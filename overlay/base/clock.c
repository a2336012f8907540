/* SPDX-License-Identifier: MIT */
/* The daemon's clock (see clock.h). */
#include <time.h>

#include "overlay/base/clock.h"

uint64_t clock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}
