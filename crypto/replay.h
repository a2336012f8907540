/* SPDX-License-Identifier: MIT */
/* The anti-replay window of transport counters (RFC 6479's bitmap, as the
 * Linux module and wireguard-go): WG_REPLAY_BITS_TOTAL bits in 64-bit words,
 * of which WG_REPLAY_WINDOW counters behind the highest one seen are
 * remembered. The caller checks only counters of packets that have already
 * authenticated, so an attacker cannot move the window. Not thread-safe:
 * callers serialise per keypair. */
#ifndef DDPNET_REPLAY_H
#define DDPNET_REPLAY_H

#include <stdbool.h>
#include <stdint.h>

#include "crypto/wg_const.h"

struct replay_window {
    uint64_t greatest;    /* highest counter accepted + 1; 0: none yet */
    uint64_t bitmap[WG_REPLAY_BITS_TOTAL / WG_REPLAY_WORD_BITS];
};

void replay_init(struct replay_window *w);
/* Accepts counter (and remembers it) or refuses it. Returns 0, or
 * -WG_EREPLAY when it was seen before, fell behind the window, or is at or
 * above WG_REJECT_AFTER_MESSAGES. */
int replay_check(struct replay_window *w, uint64_t counter);

#endif
