/* SPDX-License-Identifier: MIT */
/* Relay frames (see relay_frame.h): batches of aead_seal_part_batch and
 * aead_open_part_batch, the whole frame authenticated and only the kind
 * and key encrypted. */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"

#define RECEIVER_OFFSET 4u
#define COUNTER_OFFSET  8u
#define CHUNK           16u     /* frames per aead call: bounds the stack */

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

/* The part of a frame of n enclosed bytes at buf that the AEAD covers. */
static struct aead_part part_of(uint8_t *buf, size_t n, uint64_t counter)
{
    return (struct aead_part){ .buf = buf, .len = relay_frame_len(n) - WG_AEAD_TAG_LEN,
                               .enc_off = WG_TRANSPORT_HEADER_LEN + n,
                               .enc_len = RELAY_FRAME_SEALED_LEN, .counter = counter };
}

int relay_frame_seal_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t first,
                           uint8_t *area, size_t stride, const uint16_t *msg_lens, unsigned n)
{
    struct aead_part parts[CHUNK];

    for (unsigned i = 0; i < n; i++) {
        size_t len = msg_lens[i];
        if (len == 0 || len > RELAY_FRAME_MAX_LEN - RELAY_FRAME_OVERHEAD ||
            (i + 1 < n && relay_frame_len(len) > stride) ||
            !kind_ok(area[i * stride + WG_TRANSPORT_HEADER_LEN + len]))
            return -EINVAL;
    }
    for (unsigned at = 0; at < n; at += CHUNK) {
        unsigned k = n - at < CHUNK ? n - at : CHUNK;
        for (unsigned j = 0; j < k; j++) {
            uint8_t *buf = area + (size_t)(at + j) * stride;
            put_le32(buf, RELAY_FRAME_TYPE);
            put_le32(buf + RECEIVER_OFFSET, remote_index);
            put_le64(buf + COUNTER_OFFSET, first + at + j);
            parts[j] = part_of(buf, msg_lens[at + j], first + at + j);
        }
        aead_seal_part_batch(parts, k, key);
    }
    return 0;
}

size_t relay_frame_seal(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                        uint8_t *buf, size_t n)
{
    uint16_t len = (uint16_t)n;

    if (n > UINT16_MAX || relay_frame_seal_batch(key, remote_index, counter, buf, 0, &len, 1))
        return 0;
    return relay_frame_len(n);
}

void relay_frame_open_batch(const uint8_t key[WG_KEY_LEN], struct relay_frame *frames,
                            unsigned n)
{
    struct aead_part parts[CHUNK];
    unsigned idx[CHUNK];

    for (unsigned at = 0; at < n; at += CHUNK) {
        unsigned k = n - at < CHUNK ? n - at : CHUNK, m = 0;
        for (unsigned j = 0; j < k; j++) {
            struct relay_frame *f = &frames[at + j];
            f->status = -EBADMSG;
            if (f->len <= RELAY_FRAME_OVERHEAD || f->len > RELAY_FRAME_MAX_LEN ||
                get_le32(f->buf) != RELAY_FRAME_TYPE)
                continue;
            f->counter = get_le64(f->buf + COUNTER_OFFSET);
            f->msg_len = f->len - RELAY_FRAME_OVERHEAD;
            idx[m] = at + j;
            parts[m++] = part_of(f->buf, f->msg_len, f->counter);
        }
        aead_open_part_batch(parts, m, key);
        for (unsigned i = 0; i < m; i++) {
            struct relay_frame *f = &frames[idx[i]];
            const uint8_t *sealed = f->buf + WG_TRANSPORT_HEADER_LEN + f->msg_len;
            if (parts[i].status || !kind_ok(sealed[0]))
                continue;
            f->status = 0;
            f->kind = sealed[0];
            memcpy(f->peer, sealed + 1, WG_KEY_LEN);
            f->msg = f->buf + WG_TRANSPORT_HEADER_LEN;
        }
    }
}

int relay_frame_open(const uint8_t key[WG_KEY_LEN], uint8_t *buf, size_t len,
                     struct relay_frame *out)
{
    *out = (struct relay_frame){ .buf = buf, .len = len > RELAY_FRAME_MAX_LEN ? 0 : (uint32_t)len };
    relay_frame_open_batch(key, out, 1);
    return out->status;
}
