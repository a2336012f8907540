/* SPDX-License-Identifier: MIT */
/* The receive side's drop reasons, each counted in its one counter
 * (drops.h). */
#include "overlay/engine/model/drops.h"

#include "overlay/engine/model/device.h"

void rx_drop(struct device *dev, enum rx_drop why, uint64_t n)
{
    struct device_stats *st = &dev->stats;

    switch (why) {
    case RX_DROP_BAD:             st->dropped_bad_packet += n;      break;
    case RX_DROP_REPLAY:          st->dropped_replay += n;          break;
    case RX_DROP_SOURCE:          st->dropped_source += n;          break;
    case RX_DROP_PENDING:         st->dropped_pending += n;         break;
    case RX_DROP_UNKNOWN_PEER:    st->dropped_unknown_peer += n;    break;
    case RX_DROP_RATELIMITED:     st->dropped_ratelimited += n;     break;
    case RX_DROP_DISCO:
    case RX_DROP_STRANGER:        st->disco_bad += n;               break;
    case RX_DROP_TWO_HOPS:
    case RX_DROP_UNFORWARDABLE:   st->relay_refused += n;           break;
    case RX_DROP_NO_BUFFER:       st->dropped_no_buffer += n;       break;
    case RX_DROP_SOCKET_OVERFLOW: st->dropped_socket_overflow += n; break;
    case RX_DROP_QUEUE_DELAY:     st->dropped_queue_delay += n;     break;
    case RX_DROP_RULE:            st->dropped_rule += n;            break;
    case RX_DROP_COUNT:                                             break;
    }
}
