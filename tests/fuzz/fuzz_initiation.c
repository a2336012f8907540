/* SPDX-License-Identifier: MIT */
/* Fuzzes the responder's receive path for handshake initiations: MAC check
 * (with and without load) then noise_consume_initiation. Whatever the
 * input, a refused message must leave the responder's state unchanged. */
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_party a, b;
static uint8_t valid[WG_INITIATION_LEN];
static uint64_t now = 1000 * WG_NSEC_PER_SEC;
static const uint8_t src[6] = { 192, 0, 2, 1, 0xca, 0x6c };

static void setup(void)
{
    uint8_t ts[WG_TIMESTAMP_LEN];
    fuzz_world_init(&a, &b);
    tai64n_encode(ts, 1700000000, 0);
    if (noise_create_initiation(&a.hs, a.local, 1, ts, valid))
        abort();
    cookie_add_macs(&a.maker, valid, sizeof(valid), now);
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
        cookie_add_macs(&a.maker, msg, len, now);

    struct noise_handshake before = b.hs;
    int ret = cookie_validate(&b.checker, msg, len, src, sizeof(src), mode & 4);
    if (ret == 0)
        ret = noise_consume_initiation(b.local, msg, len, now, &b.lookup, &peer);
    if (ret != 0 && memcmp(&before, &b.hs, sizeof(before)) != 0)
        abort();
    if (ret == 0) {
        /* Accepted (the valid message, or edits only to unauthenticated
         * fields): forget it so the next run starts from the same state. */
        if (peer != &b.hs)
            abort();
        b.hs = before;
    }
    return 0;
}
