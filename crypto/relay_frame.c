/* SPDX-License-Identifier: MIT */
/* Relay frames (see relay_frame.h): batches of aead_seal_part_batch and
 * aead_open_part_batch, only the kind and key encrypted; a 0x44 frame
 * authenticated whole, in place, a data frame through the 97 bytes its
 * tag covers, gathered aside (struct covered). */
#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"

#define RECEIVER_OFFSET 4u
#define COUNTER_OFFSET  8u
#define CHUNK           16u     /* frames per aead call: bounds the stack */

/* What a data frame's tag covers (relay_frame.h), gathered, with room for
 * the tag after it. */
#define COVERED_MSG_HEAD 16u
#define COVERED_MSG_TAIL 32u
#define COVERED_LEN      48u
#define COVERED_SEALED   64u
#define COVERED_AUTH     (COVERED_SEALED + RELAY_FRAME_SEALED_LEN)
struct covered {
    uint8_t b[COVERED_AUTH + WG_AEAD_TAG_LEN];
};

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

bool relay_frame_data_ok(const uint8_t *msg, size_t n)
{
    return n >= WG_TRANSPORT_MIN_LEN &&
           (get_le32(msg) & WG_TRANSPORT_TYPE_MASK) == WG_MSG_TRANSPORT;
}

/* The part of a 0x44 frame of n enclosed bytes at buf that the AEAD covers. */
static struct aead_part part_of(uint8_t *buf, size_t n, uint64_t counter)
{
    return (struct aead_part){ .buf = buf, .len = relay_frame_len(n) - WG_AEAD_TAG_LEN,
                               .enc_off = WG_TRANSPORT_HEADER_LEN + n,
                               .enc_len = RELAY_FRAME_SEALED_LEN, .counter = counter };
}

/* A data frame's covered bytes, gathered from the frame at buf (n
 * enclosed bytes; its kind, key and tag as they stand), and their part. */
static struct aead_part cover(struct covered *c, const uint8_t *buf, size_t n, uint64_t counter)
{
    const uint8_t *m = buf + WG_TRANSPORT_HEADER_LEN;

    memcpy(c->b, buf, WG_TRANSPORT_HEADER_LEN);
    memcpy(c->b + COVERED_MSG_HEAD, m, WG_TRANSPORT_HEADER_LEN);
    memcpy(c->b + COVERED_MSG_TAIL, m + n - WG_AEAD_TAG_LEN, WG_AEAD_TAG_LEN);
    put_le64(c->b + COVERED_LEN, n);
    memset(c->b + COVERED_LEN + 8, 0, 8);
    memcpy(c->b + COVERED_SEALED, m + n, RELAY_FRAME_SEALED_LEN + WG_AEAD_TAG_LEN);
    return (struct aead_part){ .buf = c->b, .len = COVERED_AUTH, .enc_off = COVERED_SEALED,
                               .enc_len = RELAY_FRAME_SEALED_LEN, .counter = counter };
}

int relay_frame_seal_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t first,
                           uint8_t *area, size_t stride, const uint16_t *msg_lens, unsigned n,
                           bool data)
{
    struct aead_part parts[CHUNK];
    struct covered cov[CHUNK];
    bool is_data[CHUNK];
    int n_data = 0;

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
            size_t len = msg_lens[at + j];
            is_data[j] = data && relay_frame_data_ok(buf + WG_TRANSPORT_HEADER_LEN, len);
            n_data += is_data[j];
            put_le32(buf, is_data[j] ? RELAY_FRAME_DATA_TYPE : RELAY_FRAME_TYPE);
            put_le32(buf + RECEIVER_OFFSET, remote_index);
            put_le64(buf + COUNTER_OFFSET, first + at + j);
            parts[j] = is_data[j] ? cover(&cov[j], buf, len, first + at + j)
                                  : part_of(buf, len, first + at + j);
        }
        aead_seal_part_batch(parts, k, key);
        for (unsigned j = 0; j < k; j++) {
            uint8_t *sealed = area + (size_t)(at + j) * stride + WG_TRANSPORT_HEADER_LEN +
                              msg_lens[at + j];
            if (is_data[j])
                memcpy(sealed, cov[j].b + COVERED_SEALED, RELAY_FRAME_SEALED_LEN + WG_AEAD_TAG_LEN);
        }
        sodium_memzero(cov, k * sizeof(cov[0]));
    }
    return n_data;
}

size_t relay_frame_seal(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                        uint8_t *buf, size_t n, bool data)
{
    uint16_t len = (uint16_t)n;

    if (n > UINT16_MAX ||
        relay_frame_seal_batch(key, remote_index, counter, buf, 0, &len, 1, data) < 0)
        return 0;
    return relay_frame_len(n);
}

void relay_frame_open_batch(const uint8_t key[WG_KEY_LEN], struct relay_frame *frames,
                            unsigned n)
{
    struct aead_part parts[CHUNK];
    struct covered cov[CHUNK];
    unsigned idx[CHUNK];

    for (unsigned at = 0; at < n; at += CHUNK) {
        unsigned k = n - at < CHUNK ? n - at : CHUNK, m = 0;
        for (unsigned j = 0; j < k; j++) {
            struct relay_frame *f = &frames[at + j];
            uint32_t type = f->len >= 4 ? get_le32(f->buf) : 0;
            f->status = -EBADMSG;
            if (f->len <= RELAY_FRAME_OVERHEAD || f->len > RELAY_FRAME_MAX_LEN ||
                !relay_frame_type(type))
                continue;
            f->data = type == RELAY_FRAME_DATA_TYPE;
            f->counter = get_le64(f->buf + COUNTER_OFFSET);
            f->msg_len = f->len - RELAY_FRAME_OVERHEAD;
            if (f->data && !relay_frame_data_ok(f->buf + WG_TRANSPORT_HEADER_LEN, f->msg_len))
                continue;
            idx[m] = at + j;
            parts[m] = f->data ? cover(&cov[m], f->buf, f->msg_len, f->counter)
                               : part_of(f->buf, f->msg_len, f->counter);
            m++;
        }
        aead_open_part_batch(parts, m, key);
        for (unsigned i = 0; i < m; i++) {
            struct relay_frame *f = &frames[idx[i]];
            const uint8_t *sealed = f->data ? cov[i].b + COVERED_SEALED
                                            : f->buf + WG_TRANSPORT_HEADER_LEN + f->msg_len;
            if (parts[i].status || !kind_ok(sealed[0]))
                continue;
            f->status = 0;
            f->kind = sealed[0];
            memcpy(f->peer, sealed + 1, WG_KEY_LEN);
            f->msg = f->buf + WG_TRANSPORT_HEADER_LEN;
        }
        sodium_memzero(cov, m * sizeof(cov[0]));
    }
}

int relay_frame_open(const uint8_t key[WG_KEY_LEN], uint8_t *buf, size_t len,
                     struct relay_frame *out)
{
    *out = (struct relay_frame){ .buf = buf, .len = len > RELAY_FRAME_MAX_LEN ? 0 : (uint32_t)len };
    relay_frame_open_batch(key, out, 1);
    return out->status;
}
