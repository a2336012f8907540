/* SPDX-License-Identifier: MIT */
/* TAI64N encoding (see tai64n.h). */
#include "crypto/tai64n.h"

void tai64n_encode(uint8_t out[WG_TIMESTAMP_LEN], uint64_t unix_sec, uint32_t nsec)
{
    uint64_t sec = WG_TAI64_EPOCH + unix_sec;
    uint32_t ns = nsec - nsec % WG_TIMESTAMP_GRAIN_NS;

    for (int i = 0; i < 8; i++)
        out[i] = (uint8_t)(sec >> (56 - 8 * i));
    for (int i = 0; i < 4; i++)
        out[8 + i] = (uint8_t)(ns >> (24 - 8 * i));
}
