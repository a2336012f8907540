/* SPDX-License-Identifier: MIT */
/* Fuzzes the initiator's receive path for handshake responses: MAC check
 * then noise_consume_response against a handshake in CREATED_INITIATION.
 * A refused message must leave the initiator's state unchanged. */
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_party a, b;
static uint8_t valid[WG_RESPONSE_LEN];
static uint64_t now = 1000 * WG_NSEC_PER_SEC;
static const uint8_t src[6] = { 192, 0, 2, 1, 0xca, 0x6c };

static void setup(void)
{
    uint8_t ts[WG_TIMESTAMP_LEN], init[WG_INITIATION_LEN];
    struct noise_handshake *peer;
    fuzz_world_init(&a, &b);
    tai64n_encode(ts, 1700000000, 0);
    if (noise_create_initiation(&a.hs, a.local, 1, ts, init) ||
        noise_consume_initiation(b.local, init, sizeof(init), now, &b.lookup, &peer) ||
        noise_create_response(&b.hs, 2, valid))
        abort();
    cookie_add_macs(&b.maker, valid, sizeof(valid), now);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    uint8_t msg[512];
    struct noise_handshake *peer = NULL;

    if (!ready) {
        setup();
        ready = true;
    }
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    size_t len = fuzz_datagram(msg, sizeof(msg), valid, sizeof(valid), data + 1, size - 1, mode);
    if ((mode & 2) && len >= WG_MACS_LEN + 4)
        cookie_add_macs(&b.maker, msg, len, now);

    struct noise_handshake before = a.hs;
    int ret = cookie_validate(&a.checker, msg, len, src, sizeof(src), mode & 4);
    if (ret == 0)
        ret = noise_consume_response(a.local, msg, len, &a.lookup, &peer);
    if (ret != 0 && memcmp(&before, &a.hs, sizeof(before)) != 0)
        abort();
    if (ret == 0) {
        struct noise_keypair kp;
        if (peer != &a.hs || noise_begin_session(&a.hs, &kp, now))
            abort();
        a.hs = before;
    }
    return 0;
}
