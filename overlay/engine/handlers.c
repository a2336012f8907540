/* SPDX-License-Identifier: MIT */
/* What the core registers with others: its side of the event loop, what
 * each completion means (engine.h: engine_loop_handlers; the loop knows no
 * peers and calls these with the device as its context), and the
 * operations paths and discovery may call back (paths.h: struct
 * core_ops). */
#include "overlay/engine/engine.h"
#include "overlay/engine/timers.h"

static void on_udp(void *ctx, struct pkt *pkt, uint32_t seg_size, uint64_t now)
{
    datapath_from_udp(ctx, pkt, seg_size, now);
}

static void on_socket_drops(void *ctx, uint64_t n)
{
    struct device *dev = ctx;

    rx_drop(dev, RX_DROP_SOCKET_OVERFLOW, n);
}

static void on_tun(void *ctx, struct pkt *pkt, uint64_t now)
{
    datapath_from_tun(ctx, pkt, now);
}

static void on_crypto_done(void *ctx, struct crypto_job *job, uint64_t now)
{
    datapath_crypto_done(ctx, job, now);
}

/* WireGuard's timers and discovery's; then what they queued for relays. */
static uint64_t on_timers(void *ctx, uint64_t now)
{
    struct device *dev = ctx;
    uint64_t next, t;

    cookie_checker_rotate(&dev->checker, now);
    next = timers_run_device(dev, now);
    if ((t = discovery_run_timers(dev, now)) < next)
        next = t;
    path_flush(dev, now);
    return next;
}

/* What on_timers would run next, without running it (shards wake the
 * timer loop when their work made it earlier). */
static uint64_t next_deadline(void *ctx)
{
    const struct device *dev = ctx;

    return dev->timers_next_ns < dev->disco.next_check_ns ? dev->timers_next_ns
                                                           : dev->disco.next_check_ns;
}

void engine_loop_handlers(struct device *dev, struct loop_handlers *h)
{
    h->ctx = dev;
    h->udp = on_udp;
    h->socket_drops = on_socket_drops;
    h->tun = on_tun;
    h->crypto_done = on_crypto_done;
    h->timers = on_timers;
    h->next_deadline = next_deadline;
}

const struct core_ops engine_core_ops = {
    .seal = datapath_seal,
    .sent = peer_sent,
    .send_initiation = handshake_send_initiation,
    .initiate = handshake_initiate,
    .punch = handshake_punch,
};
