/* SPDX-License-Identifier: MIT */
/* Fuzzes cookie_consume_reply on a maker that has a message outstanding.
 * A refused reply must leave the maker unchanged. */
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct fuzz_party a, b;
static uint8_t valid[WG_COOKIE_REPLY_LEN];
static const uint8_t src[6] = { 192, 0, 2, 1, 0xca, 0x6c };

static void setup(void)
{
    uint8_t init[WG_INITIATION_LEN] = { WG_MSG_INITIATION };
    fuzz_world_init(&a, &b);
    cookie_add_macs(&a.maker, init, sizeof(init), 0);
    if (cookie_create_reply(&b.checker, init, sizeof(init), 1, src, sizeof(src), valid))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static bool ready;
    uint8_t msg[512];

    if (!ready) {
        setup();
        ready = true;
    }
    if (size < 1)
        return 0;
    size_t len = fuzz_datagram(msg, sizeof(msg), valid, sizeof(valid), data + 1, size - 1,
                               data[0]);
    struct cookie_maker before = a.maker;
    int ret = cookie_consume_reply(&a.maker, msg, len, 0);
    if (ret != 0 && memcmp(&before, &a.maker, sizeof(before)) != 0)
        abort();
    a.maker = before;
    return 0;
}
