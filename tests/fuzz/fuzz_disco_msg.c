/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for overlay/disco_msg: arbitrary bytes through the
 * message decoder and the inner IP packet parser. A message that decodes
 * must encode back to exactly the same bytes (the format has one encoding
 * per message), and that encoding must decode again; a disco IP packet
 * that parses must wrap again into one that parses to the same addresses
 * and payload. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "overlay/disco/disco_msg.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct disco_msg first, second;
static uint8_t out[DISCO_MAX_LEN];
static uint8_t pkt[DISCO_IP_HEADER_MAX + UINT16_MAX + 1];

static void check_message(const uint8_t *data, size_t size)
{
    int r = disco_decode(data, size, &first);

    if (r != 0) {
        if (r != -EBADMSG)
            abort();
        return;
    }
    int n = disco_encoded_len(&first);
    if (n < 0 || (size_t)n != size || disco_encode(&first, out, sizeof(out)) != n ||
        memcmp(out, data, size) != 0)
        abort();
    if (disco_decode(out, (size_t)n, &second) != 0 || second.type != first.type)
        abort();
    if (disco_encode(&second, out, sizeof(out)) != n || memcmp(out, data, size) != 0)
        abort();
    /* Where a relayed message points: into the bytes it came from. */
    if ((first.type == DISCO_RELAY || first.type == DISCO_RELAYED) &&
        first.relay.msg != data + DISCO_HEADER_LEN + WG_KEY_LEN)
        abort();
}

static void check_packet(const uint8_t *data, size_t size)
{
    const uint8_t *src, *dst, *payload, *src2, *dst2, *payload2;
    size_t plen, plen2;
    int family, family2;
    int r = disco_ip_parse(data, size, &family, &src, &dst, &payload, &plen);

    if (r != 0) {
        if (r != -ENOENT && r != -EBADMSG)
            abort();
        return;
    }
    size_t alen = family == AF_INET ? 4 : 16;
    if (payload + plen > data + size)
        abort();
    int n = disco_ip_wrap(family, src, dst, payload, plen, pkt, sizeof(pkt));
    if (n < 0 || disco_ip_parse(pkt, (size_t)n, &family2, &src2, &dst2, &payload2, &plen2) != 0 ||
        family2 != family || plen2 != plen || memcmp(src2, src, alen) != 0 ||
        memcmp(dst2, dst, alen) != 0 || memcmp(payload2, payload, plen) != 0)
        abort();
    check_message(payload, plen);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    check_message(data, size);
    check_packet(data, size);
    return 0;
}
