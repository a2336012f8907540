/* SPDX-License-Identifier: MIT */
/* TAI64N timestamps for handshake initiations: 8 bytes of big-endian TAI64
 * seconds, 4 of big-endian nanoseconds, so that later stamps compare greater
 * byte-wise. The caller owns the clock and passes the time in. */
#ifndef DDPNET_TAI64N_H
#define DDPNET_TAI64N_H

#include <stdint.h>

#include "crypto/wg_const.h"

/* Encodes Unix time (seconds, nanoseconds < 1e9), with the nanoseconds
 * rounded down to WG_TIMESTAMP_GRAIN_NS. */
void tai64n_encode(uint8_t out[WG_TIMESTAMP_LEN], uint64_t unix_sec, uint32_t nsec);

#endif
