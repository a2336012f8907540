/* SPDX-License-Identifier: MIT */
/* WireGuard's timers (see timers.h), after the Linux module's timers.c. */
#include <stdio.h>

#include <sodium.h>

#include "crypto/wg_const.h"
#include "overlay/base/log.h"
#include "overlay/engine/engine.h"
#include "overlay/engine/timers.h"

static uint64_t jitter(void)
{
    return (uint64_t)randombytes_uniform(WG_REKEY_TIMEOUT_JITTER_MAX_MS) * NS_PER_MS;
}

static uint64_t secs(uint64_t s)
{
    return s * WG_NSEC_PER_SEC;
}

/* Every deadline is set here, so that the device's earliest one
 * (dev->timers_next_ns) is never later than a peer's: the loop then looks
 * at the peers only when one is due (timers_run_device). */
static void arm(struct peer *p, uint64_t *deadline, uint64_t when)
{
    *deadline = when;
    if (when && when < p->dev->timers_next_ns)
        p->dev->timers_next_ns = when;
}

void timers_data_sent(struct peer *p, uint64_t now)
{
    p->live.last_data_ns = now;
    if (!p->wg.timers.new_handshake)
        arm(p, &p->wg.timers.new_handshake,
            now + secs(WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT) + jitter());
}

void timers_data_received(struct peer *p, uint64_t now)
{
    p->live.last_data_ns = now;
    if (!p->wg.timers.send_keepalive)
        arm(p, &p->wg.timers.send_keepalive, now + secs(WG_KEEPALIVE_TIMEOUT));
    else
        p->wg.timers.need_another_keepalive = true;
}

void timers_any_authenticated_packet_sent(struct peer *p, uint64_t now)
{
    (void)now;
    p->wg.timers.send_keepalive = 0;
}

void timers_any_authenticated_packet_received(struct peer *p, uint64_t now)
{
    (void)now;
    p->wg.timers.new_handshake = 0;
}

void timers_any_authenticated_packet_traversal(struct peer *p, uint64_t now)
{
    if (p->wg.persistent_keepalive)
        arm(p, &p->wg.timers.persistent_keepalive, now + secs(p->wg.persistent_keepalive));
}

void timers_handshake_initiated(struct peer *p, uint64_t now)
{
    arm(p, &p->wg.timers.retransmit_handshake, now + secs(WG_REKEY_TIMEOUT) + jitter());
}

void timers_handshake_complete(struct peer *p, uint64_t now)
{
    (void)now;
    p->wg.timers.retransmit_handshake = 0;
    p->wg.timers.handshake_attempts = 0;
    p->wg.timers.sent_lastminute_handshake = false;
    clock_gettime(CLOCK_REALTIME, &p->wg.last_handshake);
}

void timers_session_derived(struct peer *p, uint64_t now)
{
    arm(p, &p->wg.timers.zero_key_material, now + secs(3 * WG_REJECT_AFTER_TIME));
}

static void expired_retransmit_handshake(struct peer *p, uint64_t now)
{
    if (p->wg.timers.handshake_attempts > WG_MAX_TIMER_HANDSHAKES) {
        char why[64];
        snprintf(why, sizeof(why), "no answer to %u handshake initiations",
                 WG_MAX_TIMER_HANDSHAKES + 2);
        p->wg.timers.send_keepalive = 0;
        peer_give_up(p, why, now);   /* the warning, once per time it goes away */
        if (!p->wg.timers.zero_key_material)
            arm(p, &p->wg.timers.zero_key_material, now + secs(3 * WG_REJECT_AFTER_TIME));
        return;
    }
    p->wg.timers.handshake_attempts++;
    log_debug_rl("peer %s: handshake did not complete after %u seconds, retrying (try %u)",
                 p->member.name, WG_REKEY_TIMEOUT, p->wg.timers.handshake_attempts + 1);
    handshake_send_initiation(p, true, now);
}

static void expired_send_keepalive(struct peer *p, uint64_t now)
{
    datapath_send_keepalive(p, now);
    if (p->wg.timers.need_another_keepalive) {
        p->wg.timers.need_another_keepalive = false;
        arm(p, &p->wg.timers.send_keepalive, now + secs(WG_KEEPALIVE_TIMEOUT));
    }
}

static void expired_new_handshake(struct peer *p, uint64_t now)
{
    log_debug_rl("peer %s: no reply for %u seconds, retrying handshake", p->member.name,
                 WG_KEEPALIVE_TIMEOUT + WG_REKEY_TIMEOUT);
    handshake_send_initiation(p, false, now);
}

static void expired_zero_key_material(struct peer *p, uint64_t now)
{
    (void)now;
    log_debug_rl("peer %s: zeroing keys after %u seconds without a new session", p->member.name,
                 3 * WG_REJECT_AFTER_TIME);
    peer_clear_keys(p);
}

/* Packets waited their time for a session: a session that came up took
 * them already, so there is none. */
static void expired_stage(struct peer *p, uint64_t now)
{
    if (datapath_ready(p, now)) {
        datapath_send_staged(p, now);
        return;
    }
    char why[64];
    snprintf(why, sizeof(why), "no handshake within %u s while packets waited",
             PEER_STAGE_HOLD_SEC);
    peer_give_up(p, why, now);
}

/* Disarms a deadline that has passed and reports whether it had. */
static bool due(uint64_t *deadline, uint64_t now)
{
    if (!*deadline || *deadline > now)
        return false;
    *deadline = 0;
    return true;
}

void timers_run(struct peer *p, uint64_t now)
{
    if (due(&p->wg.timers.retransmit_handshake, now))
        expired_retransmit_handshake(p, now);
    if (due(&p->wg.timers.send_keepalive, now))
        expired_send_keepalive(p, now);
    if (due(&p->wg.timers.new_handshake, now))
        expired_new_handshake(p, now);
    if (due(&p->wg.timers.stage_expiry, now))
        expired_stage(p, now);
    if (due(&p->wg.timers.zero_key_material, now))
        expired_zero_key_material(p, now);
    if (due(&p->wg.timers.persistent_keepalive, now) && p->wg.persistent_keepalive)
        datapath_send_keepalive(p, now);
}

uint64_t timers_next(const struct peer *p)
{
    const uint64_t all[] = { p->wg.timers.retransmit_handshake, p->wg.timers.send_keepalive,
                             p->wg.timers.new_handshake, p->wg.timers.zero_key_material,
                             p->wg.timers.persistent_keepalive, p->wg.timers.stage_expiry };
    uint64_t next = UINT64_MAX;

    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        if (all[i] && all[i] < next)
            next = all[i];
    return next;
}

void timers_staged(struct peer *p, uint64_t now)
{
    if (!p->wg.timers.stage_expiry)
        arm(p, &p->wg.timers.stage_expiry, now + secs(PEER_STAGE_HOLD_SEC));
}

void timers_persistent_keepalive_set(struct peer *p, uint64_t now)
{
    arm(p, &p->wg.timers.persistent_keepalive,
        p->wg.persistent_keepalive ? now + secs(p->wg.persistent_keepalive) : 0);
}

uint64_t timers_run_device(struct device *dev, uint64_t now)
{
    if (now < dev->timers_next_ns)
        return dev->timers_next_ns;
    /* Deadlines armed while the peers run (one peer's timer may start
     * another's handshake) lower it again through arm(). */
    dev->timers_next_ns = UINT64_MAX;
    uint64_t next = UINT64_MAX, t;
    for (size_t i = 0; i < dev->n_peers; i++) {
        struct peer *p = dev->peers[i];
        if (timers_next(p) <= now)
            timers_run(p, now);
        if ((t = timers_next(p)) < next)
            next = t;
    }
    if (next < dev->timers_next_ns)
        dev->timers_next_ns = next;
    return dev->timers_next_ns;
}
