/* SPDX-License-Identifier: MIT */
/* FNV-1a, for the hashes that pick a table's bucket or a thread (not
 * keyed: nothing an attacker chooses is hashed into a bound). One copy
 * for overlay/; tun/offload.c keeps its own, since tun/ stands alone. */
#ifndef DDPNET_HASH_H
#define DDPNET_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV_BASIS 2166136261u

/* h, continued over n bytes at p. */
static inline uint32_t hash_fnv1a(uint32_t h, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 16777619u;
    return h;
}

/* FNV's low bits depend on its input's low bits alone: a final mix makes
 * each depend on every byte, for work spread by the hash modulo a small
 * count. */
static inline uint32_t hash_mix(uint32_t h)
{
    h ^= h >> 16;
    h *= 0x7feb352du;
    h ^= h >> 15;
    return h;
}

#endif
