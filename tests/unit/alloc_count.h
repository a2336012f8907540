/* SPDX-License-Identifier: MIT */
/* Test support: counts heap allocations made by the project's code. The
 * unit tests are linked with -Wl,--wrap for malloc, calloc, realloc and
 * sodium_malloc, so every call from our statically linked objects passes
 * through here (calls inside shared libraries are not seen). */
#ifndef DDPNET_TEST_ALLOC_COUNT_H
#define DDPNET_TEST_ALLOC_COUNT_H

#include <stddef.h>

/* Number of allocation calls since the program started. */
size_t alloc_count(void);

#endif
