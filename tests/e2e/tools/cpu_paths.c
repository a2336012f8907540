/* SPDX-License-Identifier: MIT */
/* cpu_paths: one line saying which of ddpnet's CPU-specific paths this
 * machine runs, as the daemon would choose them (honouring DDPNET_CPU and
 * DDPNET_AEAD_MULTI). `make test` prints it first: the unit tests run
 * every path the CPU has and each fallback, so a path this CPU lacks is
 * tested only on a machine that has it (docs/testing.md). */
#include <stdio.h>

#include "crypto/aead.h"
#include "tun/offload.h"

static const char *on(unsigned paths, unsigned bit)
{
    return (paths & bit) ? "yes" : "no";
}

int main(void)
{
    aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
    unsigned aead = aead_multi_paths(AEAD_MULTI_CHACHA | AEAD_MULTI_POLY);
    offload_simd_paths(OFFLOAD_SIMD_AVX2);
    unsigned simd = offload_simd_paths(OFFLOAD_SIMD_AVX2);

    printf("CPU paths on this machine: 16-lane ChaCha20 (AVX-512F/BW) %s, "
           "8-lane Poly1305 (AVX-512 IFMA) %s, checksum and segmenting on AVX2 %s; "
           "the fallbacks are tested everywhere\n",
           on(aead, AEAD_MULTI_CHACHA), on(aead, AEAD_MULTI_POLY), on(simd, OFFLOAD_SIMD_AVX2));
    return 0;
}
