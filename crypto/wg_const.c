/* SPDX-License-Identifier: MIT */
/* Text for the crypto core's statuses (wg_const.h). */
#include <string.h>

#include "crypto/wg_const.h"

const char *wg_strerror(int status)
{
    switch (-status) {
    case 0:             return "ok";
    case WG_EREPLAY:    return "replayed or too old counter";
    case WG_ESTALE:     return "keypair expired or used up";
    case WG_ETIMESTAMP: return "handshake timestamp not newer than the last one";
    case WG_EFLOOD:     return "handshake initiations arrive too fast";
    case WG_ENOPEER:    return "unknown peer key";
    case WG_ESTATE:     return "message does not fit the handshake state";
    case WG_ECOOKIE:    return "under load: cookie required";
    default:            return strerror(-status);
    }
}
