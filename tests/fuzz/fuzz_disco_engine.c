/* SPDX-License-Identifier: MIT */
/* libFuzzer harness for discovery's handling of messages (overlay/engine/paths/disco_recv.c,
 * path.c): a disco message, as any peer of a small cluster may send it
 * inside its session (directly or through another), goes to discovery_receive,
 * and then every peer's schedule runs at a later time picked by the input
 * (punches, relay switches, probes, pings, ENDPOINTS, introductions, a
 * relay's forwarding). Nothing leaves (the sockets are absent), but every
 * message is built and sealed. Checked: no crash, no sanitizer report, no
 * packet buffer kept after the input is done (the pool is full again),
 * and, as every member's credit is 0 (and nothing authentic arrives to
 * earn some), no byte sent on a member's word (hint_bytes stays 0) and no
 * credit left anywhere.
 *
 * Input: byte 0 picks the sender (bits 0-1) and whether it came through
 * another peer (bit 2, the next peer); byte 1 how far the clock moves
 * before the schedule runs (in 50 ms steps); the rest is the message. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/engine.h"
#include "overlay/loop/loop.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define NODES      4u
#define POOL       8u
#define STEP_NS    (50u * (WG_NSEC_PER_SEC / 1000u))
#define START_NS   (1000u * WG_NSEC_PER_SEC)

static struct device dev;
static struct loop loop;
static struct disco_msg msg;
static union endpoint src;         /* where a direct message came from */
static bool ready;

static void make_cluster(void)
{
    char text[2048], b64[64];
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    size_t len = (size_t)snprintf(text, sizeof(text),
                                  "[cluster]\nnetwork = 10.77.0.0/16\nport = 51820\n");

    for (unsigned i = 0; i < NODES; i++) {
        memset(priv, (int)(0x31 + i), sizeof(priv));
        crypto_scalarmult_base(pub, priv);
        sodium_bin2base64(b64, sizeof(b64), pub, WG_KEY_LEN, sodium_base64_VARIANT_ORIGINAL);
        len += (size_t)snprintf(text + len, sizeof(text) - len,
                                "[node n%u]\npublic-key = %s\naddress = 10.77.0.%u\n", i, b64,
                                i + 1);
    }
    if (cluster_parse(text, len, &dev.cluster, NULL))
        abort();
    dev.self = &dev.cluster.nodes[0];
    memset(priv, 0x31, sizeof(priv));
    if (device_init(&dev, priv, START_NS))
        abort();
}

static void setup(void)
{
    if (crypto_core_init())
        abort();
    make_cluster();
    if (pkt_pool_init(&loop.pool, POOL, POOL))
        abort();
    loop.udp_fd[0] = loop.udp_fd[1] = loop.tun_fd = -1;
    loop.name = "ddp0";
    loop.max_datagram = 1420 + WG_TRANSPORT_MIN_LEN;
    dev.loop = &loop;
    dev.mtu = 1420;
    dev.listen_port = 51820;
    src.in4.sin_family = AF_INET;
    src.in4.sin_port = htons(4000);
    src.in4.sin_addr.s_addr = htonl(0x64400909u);
    dev.disco.n_local = 1;
    dev.disco.local[0] = (struct disco_endpoint){ .family = DISCO_FAMILY_IPV4,
                                                  .addr = { 172, 31, 1, 10 }, .port = 51820 };
    ready = true;
}

/* Every peer as at the start: a session (keys that seal, if nothing
 * else), the first two direct (the first at an endpoint not proven),
 * the last with no endpoint and silent. */
static void reset_peers(void)
{
    for (size_t i = 0; i < dev.n_peers; i++) {
        struct peer *p = dev.peers[i];
        memset(&p->disco.state, 0, sizeof(p->disco.state));
        memset(&p->disco.relays, 0, sizeof(p->disco.relays));
        p->disco.hint_credit = 0;
        p->path.via = NULL;
        p->disco.introduced = false;
        p->disco.introduced_ns = 0;
        p->disco.speaks_disco = i != 1;
        /* The first's endpoint is taken as WireGuard roams, not proven
         * (nothing of discovery's goes there but challenges); the
         * others' as the operator gives them. */
        p->path.endpoint_proven = i != 0;
        memset(&p->path.unproven, 0, sizeof(p->path.unproven));
        p->wg.keypairs[0] = (struct noise_keypair){ .birth_ns = START_NS, .remote_index = 7 };
        p->wg.current = &p->wg.keypairs[0];
        /* The last not heard from: not working, so what others say of
         * it is tried (punches, probes: paid for by hint credit). */
        p->live.last_received_ns = i + 1 < dev.n_peers ? START_NS : 0;
        memset(&p->path.endpoint, 0, sizeof(p->path.endpoint));
        if (i + 1 < dev.n_peers) {
            p->path.endpoint.in4.sin_family = AF_INET;
            p->path.endpoint.in4.sin_port = htons((uint16_t)(51820 + i));
            p->path.endpoint.in4.sin_addr.s_addr = htonl(0x64400001u + (uint32_t)i);
        } else {
            p->path.endpoint.sa.sa_family = AF_UNSPEC;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!ready)
        setup();
    if (size < 2)
        return 0;
    reset_peers();
    struct peer *from = dev.peers[data[0] % dev.n_peers];
    struct peer *via = (data[0] & 4) ? dev.peers[(data[0] + 1u) % dev.n_peers] : NULL;
    uint64_t now = START_NS + WG_NSEC_PER_SEC, later = now + (uint64_t)data[1] * STEP_NS;

    if (via == from)
        via = NULL;
    if (disco_decode(data + 2, size - 2, &msg) || msg.type == DISCO_RELAYED)
        return 0;
    discovery_receive(from, from->wg.current, via ? NULL : &src, via, &msg, now);
    path_flush(&dev, now);
    for (size_t i = 0; i < dev.n_peers; i++)
        discovery_timers(dev.peers[i], later);
    path_flush(&dev, later);
    if (loop.pool.n_free != POOL)
        abort();    /* a buffer was kept */
    if (dev.stats.hint_bytes)
        abort();    /* a send paid by no credit */
    for (size_t i = 0; i < dev.n_peers; i++)
        if (dev.peers[i]->disco.hint_credit)
            abort();
    return 0;
}
