/* SPDX-License-Identifier: MIT */
/* Allocation counter behind -Wl,--wrap (see alloc_count.h). */
#include <stddef.h>

#include "tests/unit/alloc_count.h"

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void *__real_sodium_malloc(size_t size);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void *__wrap_sodium_malloc(size_t size);

static size_t allocations;

size_t alloc_count(void)
{
    return allocations;
}

void *__wrap_malloc(size_t size)
{
    allocations++;
    return __real_malloc(size);
}

void *__wrap_calloc(size_t n, size_t size)
{
    allocations++;
    return __real_calloc(n, size);
}

void *__wrap_realloc(void *p, size_t size)
{
    allocations++;
    return __real_realloc(p, size);
}

void *__wrap_sodium_malloc(size_t size)
{
    allocations++;
    return __real_sodium_malloc(size);
}
