/* SPDX-License-Identifier: MIT */
/* Fuzzes transport_open on a live keypair: raw datagrams, edits on valid
 * messages, (mode bit 2) a seal/open round trip of the input as
 * plaintext, which must give back the input, and (mode bit 4) a batch of
 * valid and fuzzed messages through transport_decrypt_batch, which must
 * agree with transport_decrypt on each. A refused message must not move
 * the replay window. */
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct noise_keypair tx, rx;
static uint8_t valid[WG_TRANSPORT_HEADER_LEN + 64 + WG_AEAD_TAG_LEN];
static const uint64_t now = 1000 * WG_NSEC_PER_SEC;

#define BATCH_VALID 8u
#define BATCH_MAX   20u            /* more than one 16-message group */
#define SLOT_CAP    2048u
static uint8_t valid_batch[BATCH_VALID][WG_TRANSPORT_HEADER_LEN + 112 + WG_AEAD_TAG_LEN];
static size_t valid_batch_len[BATCH_VALID];

static void setup(void)
{
    if (crypto_core_init())
        abort();
    memset(tx.send_key, 0x33, WG_KEY_LEN);
    memcpy(rx.recv_key, tx.send_key, WG_KEY_LEN);
    tx.remote_index = rx.local_index = 7;
    tx.birth_ns = rx.birth_ns = now;
    replay_init(&rx.replay);
    struct transport_packet p = { .buf = valid, .cap = sizeof(valid), .len = 64 };
    if (transport_seal(&tx, &p, now) || p.len != sizeof(valid))
        abort();
    for (unsigned i = 0; i < BATCH_VALID; i++) {
        struct transport_packet v = { .buf = valid_batch[i], .cap = sizeof(valid_batch[i]),
                                      .len = 100 - 11 * i };
        if (transport_encrypt(tx.send_key, 7, 100 + i, &v))
            abort();
        valid_batch_len[i] = v.len;
    }
}

/* Valid messages with the fuzzed datagram in the slots data[0]'s bits
 * pick: the batch and one-by-one opens must agree on every slot. */
static void batch(const uint8_t *data, size_t size)
{
    static uint8_t fuzzed[SLOT_CAP], one[BATCH_MAX][SLOT_CAP], many[BATCH_MAX][SLOT_CAP];
    struct transport_packet b[BATCH_MAX], s1;

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
        b[i] = (struct transport_packet){ .buf = many[i], .cap = SLOT_CAP, .len = len };
    }
    transport_decrypt_batch(rx.recv_key, b, n);
    for (unsigned i = 0; i < n; i++) {
        size_t len = (which >> i) & 1 ? flen : valid_batch_len[i % BATCH_VALID];
        s1 = (struct transport_packet){ .buf = one[i], .cap = SLOT_CAP, .len = len };
        int ret = transport_decrypt(rx.recv_key, &s1);
        if (ret != b[i].status || (!ret && (s1.len != b[i].len || s1.counter != b[i].counter ||
                                            memcmp(one[i], many[i], len) != 0)))
            abort();
    }
}

static void round_trip(const uint8_t *data, size_t size)
{
    static uint8_t buf[70000];
    struct noise_keypair r = rx;
    struct transport_packet p = { .buf = buf, .cap = sizeof(buf), .len = size };
    if (transport_sealed_len(size) > sizeof(buf))
        return;
    memcpy(buf + WG_TRANSPORT_HEADER_LEN, data, size);
    if (transport_seal(&tx, &p, now) || transport_open(&r, &p, now) ||
        p.len != transport_padded_len(size) ||
        memcmp(buf + WG_TRANSPORT_HEADER_LEN, data, size) != 0)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    static uint8_t msg[70000];

    if (!ready) {
        setup();
        ready = true;
    }
    if (size < 1)
        return 0;
    if (data[0] & 2) {
        round_trip(data + 1, size - 1);
        return 0;
    }
    if (data[0] & 4) {
        batch(data + 1, size - 1);
        return 0;
    }
    size_t len = fuzz_datagram(msg, sizeof(msg), valid, sizeof(valid), data + 1, size - 1,
                               data[0]);
    struct noise_keypair before = rx;
    struct transport_packet p = { .buf = msg, .cap = sizeof(msg), .len = len };
    int ret = transport_open(&rx, &p, now);
    if (ret != 0 && memcmp(&before.replay, &rx.replay, sizeof(rx.replay)) != 0)
        abort();
    rx = before;
    return 0;
}
