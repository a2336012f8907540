/* SPDX-License-Identifier: MIT */
/* The daemon's clock (see clock.h). */
#include <stdio.h>
#include <time.h>

#include "overlay/base/clock.h"

uint64_t clock_now_ns(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_BOOTTIME, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

void clock_span_text(char *buf, size_t len, uint64_t s)
{
    if (s >= 86400)
        snprintf(buf, len, "%llud %lluh", (unsigned long long)(s / 86400),
                 (unsigned long long)(s % 86400 / 3600));
    else if (s >= 3600)
        snprintf(buf, len, "%lluh %llum", (unsigned long long)(s / 3600),
                 (unsigned long long)(s % 3600 / 60));
    else
        snprintf(buf, len, "%llum %llus", (unsigned long long)(s / 60),
                 (unsigned long long)(s % 60));
}
