/* SPDX-License-Identifier: MIT */
/* Fuzzes relay_frame_open (crypto/relay_frame.h) on a live key: raw
 * datagrams and edits on a valid frame (mode bit 8: a data frame), whose
 * open must either fail and leave the bytes as they were, or succeed on a
 * frame that seals again to exactly the bytes it came as (one encoding
 * per frame and message); (mode bit 2) the input as an enclosed message,
 * sealed (bit 8: as a data frame where it is a data message) and opened
 * back; (mode bit 4) a batch of valid frames of both types and fuzzed
 * ones, whose batch open must agree with opening each alone. */
#include "crypto/bytes.h"
#include "crypto/relay_frame.h"
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define BATCH_VALID 8u
#define BATCH_MAX   20u            /* more than one 16-frame group */
#define SLOT_CAP    2048u
#define INDEX       7u

static uint8_t key[WG_KEY_LEN], peer[WG_KEY_LEN];
static uint8_t valid[RELAY_FRAME_OVERHEAD + 64], valid_data[RELAY_FRAME_OVERHEAD + 64];
static uint8_t valid_batch[BATCH_VALID][RELAY_FRAME_OVERHEAD + 112];
static size_t valid_batch_len[BATCH_VALID];

static size_t make(uint8_t *out, const uint8_t *msg, size_t n, uint8_t kind, uint64_t counter,
                   bool data)
{
    relay_frame_fill(out, msg, n, kind, peer);
    return relay_frame_seal(key, INDEX, counter, out, n, data);
}

static void setup(void)
{
    uint8_t msg[112];

    if (crypto_core_init())
        abort();
    memset(key, 0x33, sizeof(key));
    memset(peer, 0x5c, sizeof(peer));
    memset(msg, 0xa7, sizeof(msg));
    if (make(valid, msg, 64, RELAY_FRAME_TO, 1, false) != sizeof(valid))
        abort();
    put_le32(msg, WG_MSG_TRANSPORT);
    if (make(valid_data, msg, 64, RELAY_FRAME_TO, 2, true) != sizeof(valid_data) ||
        get_le32(valid_data) != RELAY_FRAME_DATA_TYPE)
        abort();
    for (unsigned i = 0; i < BATCH_VALID; i++) {
        valid_batch_len[i] = make(valid_batch[i], msg, 112 - 11 * i,
                                  i % 2 ? RELAY_FRAME_TO : RELAY_FRAME_FROM, 100 + i, i % 4 < 2);
        if (!valid_batch_len[i])
            abort();
    }
}

/* Valid frames with the fuzzed datagram in the slots data[1] picks: the
 * batch and the one-by-one opens agree on every slot. */
static void batch(const uint8_t *data, size_t size)
{
    static uint8_t fuzzed[SLOT_CAP], one[BATCH_MAX][SLOT_CAP], many[BATCH_MAX][SLOT_CAP];
    struct relay_frame b[BATCH_MAX], s;

    if (size < 3)
        return;
    unsigned n = 1 + data[0] % BATCH_MAX;
    uint32_t which = (uint32_t)data[1] | (uint32_t)data[1] << 8 | (uint32_t)data[1] << 16;
    size_t flen = fuzz_datagram(fuzzed, sizeof(fuzzed), valid, sizeof(valid), data + 3,
                                size - 3, data[2]);
    for (unsigned i = 0; i < n; i++) {
        bool fuzz = (which >> i) & 1;
        size_t len = fuzz ? flen : valid_batch_len[i % BATCH_VALID];
        memcpy(many[i], fuzz ? fuzzed : valid_batch[i % BATCH_VALID], len);
        memcpy(one[i], many[i], len);
        b[i] = (struct relay_frame){ .buf = many[i], .len = (uint32_t)len };
    }
    relay_frame_open_batch(key, b, n);
    for (unsigned i = 0; i < n; i++) {
        int ret = relay_frame_open(key, one[i], b[i].len, &s);
        if (ret != b[i].status ||
            (!ret && (s.kind != b[i].kind || s.counter != b[i].counter || s.data != b[i].data ||
                      s.msg_len != b[i].msg_len || memcmp(s.peer, b[i].peer, WG_KEY_LEN) ||
                      memcmp(one[i], many[i], b[i].len))))
            abort();
    }
}

static void round_trip(const uint8_t *data, size_t size, bool data_frame)
{
    static uint8_t buf[RELAY_FRAME_MAX_LEN];
    struct relay_frame f;

    if (size == 0 || size > RELAY_FRAME_MAX_LEN - RELAY_FRAME_OVERHEAD)
        return;
    bool as_data = data_frame && relay_frame_data_ok(data, size);
    if (make(buf, data, size, RELAY_FRAME_FROM, 9, data_frame) != relay_frame_len(size) ||
        get_le32(buf) != (as_data ? RELAY_FRAME_DATA_TYPE : RELAY_FRAME_TYPE) ||
        relay_frame_open(key, buf, relay_frame_len(size), &f) || f.data != as_data ||
        f.kind != RELAY_FRAME_FROM ||
        f.counter != 9 || f.msg_len != size || memcmp(f.msg, data, size) ||
        memcmp(f.peer, peer, WG_KEY_LEN))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    static uint8_t msg[70000], before[70000], again[70000];

    if (!ready) {
        setup();
        ready = true;
    }
    if (size < 1)
        return 0;
    if (data[0] & 2) {
        round_trip(data + 1, size - 1, data[0] & 8);
        return 0;
    }
    if (data[0] & 4) {
        batch(data + 1, size - 1);
        return 0;
    }
    const uint8_t *base = data[0] & 8 ? valid_data : valid;
    size_t len = fuzz_datagram(msg, sizeof(msg), base, sizeof(valid), data + 1, size - 1,
                               data[0]);
    struct relay_frame f;
    memcpy(before, msg, len);
    if (relay_frame_open(key, msg, len, &f)) {
        if (memcmp(before, msg, len))
            abort();
        return 0;
    }
    /* Authentic: it must be what sealing its contents gives, byte for byte
     * (the receiver index is the sealer's to choose, so it is taken). */
    if (f.msg_len != len - RELAY_FRAME_OVERHEAD || f.msg != msg + WG_TRANSPORT_HEADER_LEN)
        abort();
    relay_frame_fill(again, f.msg, f.msg_len, f.kind, f.peer);
    if (relay_frame_seal(key, (uint32_t)before[4] | (uint32_t)before[5] << 8 |
                                  (uint32_t)before[6] << 16 | (uint32_t)before[7] << 24,
                         f.counter, again, f.msg_len, f.data) != len ||
        memcmp(again, before, len))
        abort();
    return 0;
}
