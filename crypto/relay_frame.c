/* Relay frames (see relay_frame.h): one AEAD call each, with the header and
 * the enclosed message as associated data. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"

#define RECEIVER_OFFSET 4u
#define COUNTER_OFFSET  8u

static bool kind_ok(uint8_t kind)
{
    return kind == RELAY_FRAME_TO || kind == RELAY_FRAME_FROM;
}

void relay_frame_fill(uint8_t *buf, const uint8_t *msg, size_t n, uint8_t kind,
                      const uint8_t peer[WG_KEY_LEN])
{
    uint8_t *sealed = buf + WG_TRANSPORT_HEADER_LEN + n;

    memcpy(buf + WG_TRANSPORT_HEADER_LEN, msg, n);
    sealed[0] = kind;
    memcpy(sealed + 1, peer, WG_KEY_LEN);
}

size_t relay_frame_seal(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                        uint8_t *buf, size_t n)
{
    size_t ad_len = WG_TRANSPORT_HEADER_LEN + n;
    uint8_t *sealed = buf + ad_len;

    if (n == 0 || n > RELAY_FRAME_MAX_LEN - RELAY_FRAME_OVERHEAD || !kind_ok(sealed[0]))
        return 0;
    put_le32(buf, RELAY_FRAME_TYPE);
    put_le32(buf + RECEIVER_OFFSET, remote_index);
    put_le64(buf + COUNTER_OFFSET, counter);
    aead_seal(sealed, sealed, RELAY_FRAME_SEALED_LEN, buf, ad_len, counter, key);
    return relay_frame_len(n);
}

int relay_frame_open(const uint8_t key[WG_KEY_LEN], uint8_t *buf, size_t len,
                     struct relay_frame *out)
{
    uint8_t plain[RELAY_FRAME_SEALED_LEN];
    size_t ad_len;

    if (len <= RELAY_FRAME_OVERHEAD || len > RELAY_FRAME_MAX_LEN ||
        get_le32(buf) != RELAY_FRAME_TYPE)
        return -EBADMSG;
    ad_len = len - RELAY_FRAME_SEALED_LEN - WG_AEAD_TAG_LEN;
    out->counter = get_le64(buf + COUNTER_OFFSET);
    if (aead_open(plain, buf + ad_len, RELAY_FRAME_SEALED_LEN + WG_AEAD_TAG_LEN, buf, ad_len,
                  out->counter, key) ||
        !kind_ok(plain[0]))
        return -EBADMSG;
    out->kind = plain[0];
    memcpy(out->peer, plain + 1, WG_KEY_LEN);
    out->msg = buf + WG_TRANSPORT_HEADER_LEN;
    out->msg_len = (uint32_t)(ad_len - WG_TRANSPORT_HEADER_LEN);
    return 0;
}
