/* Fuzzes transport_open on a live keypair: raw datagrams, edits on valid
 * messages, and (mode bit 2) a seal/open round trip of the input as
 * plaintext, which must give back the input. A refused message must not
 * move the replay window. */
#include "tests/fuzz/fuzz_world.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct noise_keypair tx, rx;
static uint8_t valid[WG_TRANSPORT_HEADER_LEN + 64 + WG_AEAD_TAG_LEN];
static const uint64_t now = 1000 * WG_NSEC_PER_SEC;

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
