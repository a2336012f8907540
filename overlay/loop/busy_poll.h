/* SPDX-License-Identifier: MIT */
/* Busy polling after an idle spell: when to poll the ring instead of
 * sleeping in it.
 *
 * Why: on the VMs that clusters run on, waking a sleeping process on an
 * idle vCPU costs an IPI and a VM exit, and a request-response exchange
 * through the tunnel wakes the daemons up to four times, so a ping costs
 * many times the bare link's (bench/README.md). A daemon that
 * keeps polling for a short window after a packet catches the answer
 * without being woken. It yields the CPU on every empty poll, so the
 * processes it waits for still run.
 *
 * When: only a packet that follows an idle spell (BUSY_POLL_IDLE_NS
 * without packets) opens a window; each packet inside it extends it.
 * An exchange that someone waits on is sparse: a request and its answer,
 * then quiet until the next, and a window pays when it spans that quiet
 * and catches the next request (echoes 10 ms apart: every window does).
 * A flow does not pay, whatever its pace. A bulk transfer keeps the loop
 * busy anyway: the packets are metered against a sparse exchange's rate
 * (BUSY_POLL_PACKET_NS each, a token bucket), and more than
 * BUSY_POLL_MAX_PACKETS beyond it close the window and open none until
 * they have been sparse again for a while (half the bucket drained).
 * Answers are not metered: a packet going the other way (received after
 * a read from ddp0, or read after a receive) within BUSY_POLL_ANSWER_NS
 * of the last, when that one was alone on its side (not the end of a run
 * of several one way: a stream's segments and their ack); an answer also
 * takes back what the packet it answers cost. So
 * a request-response exchange keeps its window at any rate (echoes 2 ms
 * apart are 1000 packets a second at each daemon), while a bulk flow,
 * one way, both ways with no turns, or a stream's segments and acks, is
 * still one. A stream clocked one
 * packet per ack (an ack in, a segment out at once) looks like an
 * exchange here and polls like one, given up when the CPU is wanted. A
 * slow stream over a long path may be sparse, but its quiet spells last
 * longer than a window (a burst of sends, then the acks a round trip
 * later): its windows run out empty, often as not. Each such lapse
 * weighs BUSY_POLL_LAPSE_WEIGHT windows that paid; once more than two
 * lapses are left over, an idle spell's first packet opens only a short
 * window (BUSY_POLL_SHORT_NS, enough for the answer of a short path) for
 * a hold-off that doubles with each further lapse (BUSY_POLL_HOLDOFF_NS,
 * up to 16 times). An idle daemon never polls. Nor does a daemon whose
 * CPU is wanted: the loop times its yields, and once others have had more than half of its CPU since the
 * window opened (busy_poll_yielded), the window closes, so the loop sleeps
 * and leaves the CPU to that work (an all_reduce's ranks on a small
 * machine, which a long window without this slowed: bench/README.md). Pure logic over a caller's clock, so it tests
 * without a ring. */
#ifndef DDPNET_BUSY_POLL_H
#define DDPNET_BUSY_POLL_H

#include <stdbool.h>
#include <stdint.h>

#define BUSY_POLL_IDLE_NS     1000000ull  /* 1 ms without packets is an idle spell */
#define BUSY_POLL_MAX_PACKETS 16u
/* A sparse exchange's share of time per packet (400 packets a second:
 * echoes 10 ms apart and their answers are 200). */
#define BUSY_POLL_PACKET_NS   2500000ull
/* A packet going the other way this soon after the last answers it: not
 * metered, nor is what it answers (an echo's answer comes within tens or
 * hundreds of microseconds on a short path). */
#define BUSY_POLL_ANSWER_NS   BUSY_POLL_IDLE_NS
/* The bucket: a flow once packets run this far ahead of that rate. */
#define BUSY_POLL_FLOW_NS     (BUSY_POLL_MAX_PACKETS * BUSY_POLL_PACKET_NS)
/* A window after lapses: an answer on a short path comes within it
 * (the old default window). */
#define BUSY_POLL_SHORT_NS    300000ull
#define BUSY_POLL_LAPSE_WEIGHT 2u
#define BUSY_POLL_LAPSES_FREE  (2 * BUSY_POLL_LAPSE_WEIGHT)   /* two lapses hold nothing off */
#define BUSY_POLL_HOLDOFF_NS   100000000ull  /* 100 ms, doubled per lapse beyond */
#define BUSY_POLL_LAPSES_MAX   (BUSY_POLL_LAPSES_FREE + 5u)   /* up to 1.6 s */
#define BUSY_POLL_SWITCH_NS   10000ull   /* a yield this long: someone else ran */
#define BUSY_POLL_WANTED_NS   100000ull  /* others' time that always leaves polling on */
/* A window_us that means: always poll, never sleep (`busy-poll = always`:
 * the config's CLUSTER_BUSY_POLL_ALWAYS, the same number). The loop then
 * takes a core (yielding it on every empty poll) for the round trip of a
 * daemon that is never woken. */
#define BUSY_POLL_ALWAYS      65535u

/* Which way a packet goes: received from the network, or read from ddp0
 * (to be sent). An exchange takes turns between them. */
enum busy_poll_way { BUSY_POLL_IN, BUSY_POLL_OUT };

struct busy_poll {
    uint64_t window_ns;      /* from the cluster file's busy-poll; 0 = never */
    bool always;             /* BUSY_POLL_ALWAYS: poll whatever came when */
    uint64_t until;          /* poll, do not sleep, while now < until */
    uint64_t last_packet;    /* when the last packet came; 0 = never */
    enum busy_poll_way last_way;   /* and which way it went */
    bool metered;            /* and it was metered (no answer) */
    bool began;              /* and it began a run one way (the other way or an idle spell before it) */
    unsigned packets;        /* packets in the current window */
    uint64_t paced;          /* the bucket: how far the packets ran ahead of the rate */
    bool flow;               /* they make a flow: no window */
    bool long_window;        /* the window is window_ns, not BUSY_POLL_SHORT_NS */
    unsigned lapses;         /* long windows run out empty, less those that paid */
    uint64_t lapsed;         /* when the last one did */
    uint64_t opened;         /* when the current window opened */
    uint64_t others_ns;      /* others' time on our CPU since (busy_poll_yielded) */
};

void busy_poll_init(struct busy_poll *bp, unsigned window_us);
/* A packet came (read from ddp0: OUT, or received: IN) at now. */
void busy_poll_packet(struct busy_poll *bp, uint64_t now, enum busy_poll_way way);
/* The packet just counted asks no answer that anyone waits for (the
 * network's upkeep: discovery, keepalives, handshakes): a window it
 * opened closes, so an idle daemon does not poll after each of them. */
void busy_poll_unawaited(struct busy_poll *bp);
/* The loop yielded its CPU on an empty poll at now - took_ns and had it
 * back at now. Yields longer than BUSY_POLL_SWITCH_NS count as others'
 * time; once that passes BUSY_POLL_WANTED_NS plus half the window's age,
 * the window closes (not under BUSY_POLL_ALWAYS, which never sleeps). */
void busy_poll_yielded(struct busy_poll *bp, uint64_t now, uint64_t took_ns);
/* Whether the loop should poll rather than sleep at now. */
bool busy_poll_active(const struct busy_poll *bp, uint64_t now);

#endif
