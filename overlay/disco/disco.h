/* SPDX-License-Identifier: MIT */
/* Discovery, hole punching and relays: the per-peer state and the
 * decisions taken on it, as pure functions of that state, a few facts the
 * engine supplies and a clock the caller passes in (so a unit test drives
 * them with a fake one). No I/O here: overlay/engine/paths/ carries the
 * decisions out.
 *
 * What a node knows of a peer it may not reach yet: its candidates, the
 * addresses where it might answer -- its own interface addresses as it
 * reported them ("local"), and the address and port other nodes see its
 * packets come from ("observed"). An attempt aims the one handshake
 * initiation at all of them at once, local ones first, several times a
 * second for a few seconds (a punch round: both sides do it, so both NATs
 * open); if no session comes of it within DISCO_RELAY_AFTER_MS, the peer is
 * reached through a relay, a node both reach, while the direct candidates
 * are probed in the background. Once a session exists: pings on the path
 * for the round trip, ENDPOINTS now and then. */
#ifndef DDPNET_DISCO_H
#define DDPNET_DISCO_H

#include <stdbool.h>
#include <stdint.h>

#include "crypto/wg_const.h"
#include "overlay/disco/disco_msg.h"

/* Observed endpoints kept per peer (several introducers may each see a
 * different one, behind a NAT that maps per destination). */
#define DISCO_OBSERVED_MAX   8u
#define DISCO_CANDS_MAX      (DISCO_MAX_LOCAL + DISCO_OBSERVED_MAX)
/* While a peer is being reached, which relay may be tried for it changes
 * with other peers' trials and time: the engine looks at that peer's
 * deadline again at least this often (disco_sched.c: facts_change_at). */
#define DISCO_RECHECK_MS     1000u
/* Pings in flight per peer. */
#define DISCO_PINGS_MAX      8u
/* PING flags (disco_msg.h leaves their meaning to us): a probe of a direct
 * candidate, sent beside the path rather than on it. */
#define DISCO_PING_F_PROBE   0x01u
#define DISCO_PING_F_MTU     0x02u   /* a path MTU probe (padded; pmtu.h) */
/* A challenge of the source we saw the peer at (disco_unproven below):
 * always answered, where the PONG costs no more than it (older nodes
 * carry the bit and answer every PING). */
#define DISCO_PING_F_CHALLENGE 0x04u
/* What a relayed message adds inside the relay's own transport message:
 * the relay's inner IP header (IPv6 at most), the disco header, a key, and
 * the enclosed message's transport header and tag. A packet to a relayed
 * peer is held to the MTU less this, so that the wrapping still fits. */
#define DISCO_RELAY_OVERHEAD (DISCO_IP_HEADER_MAX + DISCO_HEADER_LEN + WG_KEY_LEN + \
                              WG_TRANSPORT_MIN_LEN)

/* Who told us of a candidate or a relay: the engine's id of that peer
 * (never 0), or DISCO_ID_REGISTRY for a registered node's own record
 * (peer ids count up from 1 and never reach it). */
typedef uint32_t disco_id;
#define DISCO_ID_REGISTRY UINT32_MAX

struct disco_cand {
    struct disco_endpoint ep;
    bool local;                /* one of the peer's own interface addresses */
    /* The two latest members that reported it (distinct; 0: none): either
     * may pay for sends to it, so no one member can take the cost of
     * another's honest report onto an empty account of its own. */
    disco_id informant[2];
    uint64_t seen_ns;          /* when it was last reported to us */
    uint64_t answered_ns;      /* the peer's authentic packet came from it; 0: never */
    uint8_t tries;             /* sends since it last answered */
    /* What sends to it may still cost before it answers: each report
     * adds DISCO_CAND_REPORT_BYTES, to twice that. */
    uint16_t allowance;
};

/* Relays that may reach a peer: claimed by a member ("I reach it
 * directly"), tried with one message sent end to end through it, used
 * once that was answered, and failed when an answer did not come. */
#define DISCO_RELAYS_MAX     4u
struct disco_relay_slot {
    disco_id id;               /* 0: a free slot */
    uint64_t claimed_ns;       /* the latest claim, or when it carried the peer to us */
    uint64_t confirmed_ns;     /* the latest end-to-end answer through it; 0: none */
    uint64_t failed_ns;        /* when a trial or its use failed; 0: never */
};
struct disco_relays {
    struct disco_relay_slot slot[DISCO_RELAYS_MAX];
    disco_id trial;            /* on trial now; 0: none */
    uint64_t trial_ns;
};

/* A byte budget: the device's for sends to addresses that never answered. */
struct disco_bucket {
    uint64_t tokens;
    uint64_t last_ns;
};

struct disco_ping_slot {
    uint64_t txid;
    uint64_t sent_ns;          /* 0: free */
    bool probe;                /* sent to `to` directly, not on the path */
    struct disco_endpoint to;
};

enum disco_path {
    DISCO_PATH_NONE,           /* no endpoint and no relay */
    DISCO_PATH_DIRECT,         /* UDP to the peer's endpoint */
    DISCO_PATH_RELAY,          /* wrapped, through another peer */
};

struct disco_state {
    uint8_t n_cand;
    struct disco_cand cand[DISCO_CANDS_MAX];
    disco_id locals_from;      /* who gave the local candidates; 0: nobody */

    /* An attempt at a session: punch rounds, then a relay. */
    uint64_t attempt_ns;       /* when it began; 0: none */
    uint64_t next_punch_ns;
    unsigned punches;          /* sent in this attempt */
    bool relay_taken;          /* this attempt turned to the relay */

    uint64_t next_probe_ns;    /* direct candidates probed (relayed or upgrading) */
    uint64_t next_ping_ns;
    unsigned unanswered;       /* pings since the last pong */
    unsigned ping_next;        /* ring index of the next slot */
    struct disco_ping_slot pings[DISCO_PINGS_MAX];
    uint64_t rtt_ns;           /* the latest round trip on the path; 0: unknown */
    uint64_t last_pong_ns;     /* the latest answer to any ping; 0: none */

    uint64_t endpoints_sent_ns;
    uint32_t endpoints_gen;    /* the device's generation last sent */
    bool endpoints_stale;      /* what we would tell this peer of itself changed */
    uint8_t spread;            /* periods stretched by this (clock_stretch) */
    /* When another member last introduced the peer to us (PUNCH); 0:
     * never. Within DISCO_INTRO_HEARD_S that introduction is still
     * spreading, and ours would repeat it (disco_intro_news). */
    uint64_t intro_heard_ns;
};

/* What the engine knows that the decisions depend on. */
struct disco_facts {
    bool session;              /* a keypair we can send with */
    bool working;              /* ... and the peer was heard from lately */
    enum disco_path path;
    bool relay_known;          /* a relay that reaches the peer is usable now */
    bool can_upgrade;          /* direct to an address that is not a local
                                * candidate, and local candidates exist */
    unsigned idle_ping_s;      /* no data lately: ping this seldom (0: not idle) */
};

/* What disco_tick asks the engine to do now. */
enum disco_action {
    DISCO_DO_PUNCH     = 1u << 0,  /* the initiation to every candidate */
    DISCO_DO_RELAY     = 1u << 1,  /* take the relay path, initiate through it */
    DISCO_DO_PROBE     = 1u << 2,  /* ping the direct candidates */
    DISCO_DO_PING      = 1u << 3,  /* ping on the path, for the round trip */
    DISCO_DO_ENDPOINTS = 1u << 4,  /* send ENDPOINTS */
};

/* --- candidates ------------------------------------------------------------------ */

/* Records a candidate that `informant` reported (an invalid endpoint, or
 * a loopback, link-local, multicast or unspecified address, is ignored).
 * A known one is refreshed (informant joins its two latest), and an
 * observed one reported as local becomes local. When full, the oldest
 * observed candidate makes room for an observed one; a local one is
 * dropped when all DISCO_MAX_LOCAL are taken. Returns true when the set
 * changed. */
bool disco_cand_add(struct disco_state *s, const struct disco_endpoint *ep, bool local,
                    disco_id informant, uint64_t now);
/* Replaces the local candidates with eps[0..n), as `informant` reports
 * them. Returns true when the set changed. */
bool disco_cand_set_local(struct disco_state *s, const struct disco_endpoint *eps,
                          unsigned n, disco_id informant, uint64_t now);
/* Whether the local candidates are the peer's own word (self: its id):
 * then no other member's list replaces them, and only they are passed on. */
bool disco_cand_locals_from(const struct disco_state *s, disco_id self);
/* The candidate at ep, or NULL. */
struct disco_cand *disco_cand_get(struct disco_state *s, const struct disco_endpoint *ep);
/* The peer's authentic packet came from ep: it answers there (its tries
 * start over). */
void disco_cand_answered(struct disco_state *s, const struct disco_endpoint *ep, uint64_t now);
/* Whether c answered within DISCO_CAND_TTL_S: sending to it is free. */
bool disco_cand_answers(const struct disco_cand *c, uint64_t now);
/* Takes len bytes of c's allowance: false (nothing taken) when it has less. */
bool disco_cand_spend(struct disco_cand *c, uint32_t len);
/* Forgets the candidates not reported for DISCO_CAND_TTL_S that did not
 * answer within it either. */
void disco_cand_expire(struct disco_state *s, uint64_t now);
/* The peer came (back): candidates that stopped being tried are tried
 * again. */
void disco_cand_retry(struct disco_state *s);
/* The local candidates, up to max; returns how many. */
unsigned disco_cand_local(const struct disco_state *s, struct disco_endpoint *out,
                          unsigned max);
/* Whether ep is one of the local candidates. */
bool disco_cand_is_local(const struct disco_state *s, const struct disco_endpoint *ep);
/* Where to aim: local candidates first (in the peer's order), then the
 * observed ones, newest first; none tried DISCO_CAND_TRIES_MAX times in
 * vain; never an address of our own (own[0..n_own):
 * it would reach us, or a stranger that shares our private range), no
 * duplicates, up to max. only_local keeps the local ones alone. Returns
 * how many. */
unsigned disco_targets(const struct disco_state *s, const struct disco_endpoint *own,
                       unsigned n_own, bool only_local, struct disco_endpoint *out,
                       unsigned max);

/* Whether an interface address may be offered as a local candidate: not
 * loopback, link-local, unspecified or multicast, not on the overlay's own
 * interface, not the node's overlay address. */
bool disco_local_usable(const struct disco_endpoint *ep, bool loopback_if, bool overlay_if,
                        const struct disco_endpoint *overlay_addr);

/* --- introductions --------------------------------------------------------------- */

/* How long another member's introduction of a peer (PUNCH) stands for
 * ours: it was sent to every member that member reaches, the one who
 * first heard of the peer (the one it came to). A minute covers the
 * sessions that introduction makes on a loaded machine. */
#define DISCO_INTRO_HEARD_S  60u
/* Another member introduced the peer to us now. */
void disco_intro_heard(struct disco_state *s, uint64_t now);
/* Whether our introduction of the peer would be news: no other member
 * introduced it to us within DISCO_INTRO_HEARD_S. Otherwise every member
 * that reaches a newcomer would introduce it to every other, N times the
 * PUNCH of one introducer per newcomer (issue 59). */
bool disco_intro_news(const struct disco_state *s, uint64_t now);
/* The same for keys we have no peer for yet: under an authority a
 * newcomer's introduction can come before its certificate, and its
 * session later (issue 59). The device's, bounded: when full, the oldest
 * is forgotten (an introduction more, no more). */
#define DISCO_INTRO_KEYS_MAX 256u
struct disco_intro_keys {
    struct {
        uint8_t key[WG_KEY_LEN];
        uint64_t at_ns;                   /* 0: a free slot */
    } k[DISCO_INTRO_KEYS_MAX];
};
void disco_intro_key_heard(struct disco_intro_keys *t, const uint8_t key[WG_KEY_LEN],
                           uint64_t now);
bool disco_intro_key_news(const struct disco_intro_keys *t, const uint8_t key[WG_KEY_LEN],
                          uint64_t now);

/* --- what hints may cost ----------------------------------------------------------- */

/* A member sent us `bytes`: its credit grows by DISCO_HINT_FACTOR times
 * that, to DISCO_HINT_CREDIT_MAX at most. */
void disco_credit_earn(uint32_t *credit, uint64_t bytes);
/* Takes `bytes` from a credit; false (nothing taken) when it has less. */
bool disco_credit_spend(uint32_t *credit, uint32_t bytes);
/* Takes `bytes` from the device's bucket (DISCO_UNANSWERED_BYTES_PER_SEC,
 * burst DISCO_UNANSWERED_BURST); false (nothing taken) when it has less. */
bool disco_bucket_take(struct disco_bucket *b, uint32_t bytes, uint64_t now);

/* --- relays ---------------------------------------------------------------------- */

/* id says it reaches the peer directly: remembered (its claim renewed).
 * When the slots are full it takes the place of one that failed, or else
 * of the oldest claim never answered through; never of a relay that was
 * answered through. Claims not renewed for DISCO_CAND_TTL_S, and never
 * answered through since, are forgotten. */
void disco_relay_claim(struct disco_relays *rs, disco_id id, uint64_t now);
/* The relay to try next, or 0: among those usable now (usable[i] for
 * slot i, the engine's view: a working direct session with it), not
 * `exclude`, not failed within DISCO_RELAY_PENALTY_S -- the latest
 * answered through first, then in the order they were claimed. One that
 * failed within the penalty is tried again only when no other is left,
 * and REKEY_TIMEOUT after it failed. */
disco_id disco_relay_pick(const struct disco_relays *rs, const bool usable[DISCO_RELAYS_MAX],
                          disco_id exclude, uint64_t now);
/* A message to the peer is sent through id now: it is on trial until an
 * answer comes through it or DISCO_RELAY_TRIAL_MS pass (remembered as a
 * claim if it was not one). */
void disco_relay_trial(struct disco_relays *rs, disco_id id, uint64_t now);
/* The relay on trial now, or 0. */
disco_id disco_relay_on_trial(const struct disco_relays *rs, uint64_t now);
/* A trial that ran out: its relay failed. Returns that relay, or 0. */
disco_id disco_relay_trial_over(struct disco_relays *rs, uint64_t now);
/* An authentic message from the peer came through id. True when id was on
 * trial: the exchange through it succeeded, and it may be used. */
bool disco_relay_answered(struct disco_relays *rs, disco_id id, uint64_t now);
/* The relay id, in use, carried an authentic message from the peer. */
void disco_relay_carried(struct disco_relays *rs, disco_id id, uint64_t now);
/* The relay id, in use, stopped carrying answers (or its own session
 * ended): failed. */
void disco_relay_failed(struct disco_relays *rs, disco_id id, uint64_t now);
/* Forgets id (a peer that left). */
void disco_relay_forget(struct disco_relays *rs, disco_id id);

/* --- the schedule --------------------------------------------------------------- */

/* Begins an attempt unless one is under way. punched: the first punch
 * went out already (with the initiation that prompted the attempt).
 * Returns true when it began. */
bool disco_attempt(struct disco_state *s, bool punched, uint64_t now);
/* A session began: the attempt is over and the count of unanswered pings
 * starts over. A new peer, or one come back: ping and send ENDPOINTS at
 * once. A rekey (rekey: the peer answered lately and nothing changed):
 * both keep their schedule, so that a mesh that rekeys sends no more
 * than one that does not. */
void disco_session_began(struct disco_state *s, bool rekey, uint64_t now);
/* The path changed: probing starts over from its own interval, and the
 * pings still unanswered on the old path are forgotten. */
void disco_path_changed(struct disco_state *s);
/* Where we see the peer changed: its ENDPOINTS go DISCO_ENDPOINTS_MIN_S
 * after the last, as after a change of our own (gen). */
void disco_endpoints_stale(struct disco_state *s);
/* ENDPOINTS are due at once (what went before could not go: the path
 * was not proven). */
void disco_endpoints_due(struct disco_state *s);
/* Runs what is due: returns DISCO_DO_* flags and moves each deadline on.
 * gen is the device's generation of what ENDPOINTS says of this node
 * itself (its local candidates): a change there goes to every peer soon.
 * What they say of third peers is not pushed when it changes (that would
 * cost every node a message to every peer whenever one node joins): it
 * goes with the periodic ENDPOINTS, and the news that cannot wait goes as
 * introductions (PUNCH) to the peers it concerns. */
unsigned disco_tick(struct disco_state *s, const struct disco_facts *f, uint32_t gen,
                    uint64_t now);
/* The time of the next action disco_tick would take (UINT64_MAX: none). */
uint64_t disco_next(const struct disco_state *s, const struct disco_facts *f, uint32_t gen);

/* --- pings ---------------------------------------------------------------------- */

/* Remembers a ping (to: the candidate probed, NULL for one on the path). */
void disco_ping_sent(struct disco_state *s, uint64_t txid, const struct disco_endpoint *to,
                     uint64_t now);
/* Pings on the path sent since the last pong and unanswered for
 * DISCO_PING_LOST_MS: lost in a row. */
unsigned disco_pings_lost(const struct disco_state *s, uint64_t now);
/* A pong: true when it answers a ping of ours younger than
 * DISCO_PING_TIMEOUT_S (copied to *out and forgotten; last_pong_ns is
 * now); the round trip of a ping on the path becomes rtt_ns. */
bool disco_pong(struct disco_state *s, uint64_t txid, uint64_t now,
                struct disco_ping_slot *out);

/* A source of a peer's authentic packets that never answered us (not its
 * endpoint, or an endpoint taken as WireGuard roams, unproven). A member
 * can forge its UDP source, so nothing goes there but a challenge -- a
 * probe PING, whose PONG from there proves it -- and the PONG to a
 * challenge that came from there, each paid from the bytes that came from
 * it (credit), a challenge per DISCO_CHALLENGE_MS at most: a victim named
 * as the source gets no more than the forger sent. Any other PING from
 * there is answered by our challenge, not a PONG (a peer that moved and
 * only pings is followed). A stock WireGuard peer never answers: it gets
 * DISCO_CHALLENGES_MAX per source. */
#define DISCO_CHALLENGE_MS         1000u
#define DISCO_CHALLENGES_MAX       3u
#define DISCO_UNPROVEN_CREDIT_MAX  4096u
struct disco_unproven {
    struct disco_endpoint src;   /* family 0: none */
    uint32_t credit;             /* bytes that came from src, not yet spent on it */
    uint64_t challenge_ns;       /* the last challenge to it; 0: none yet */
    uint8_t challenges;          /* sent to it, unanswered */
};

/* len authentic bytes came from src, which never answered: credited (a
 * new source starts with no credit and no challenge sent to it, the last
 * one forgotten; the pace of challenges stays). */
void disco_unproven_heard(struct disco_unproven *u, const struct disco_endpoint *src,
                          uint32_t len);
/* Whether len bytes may go to `to`, the unproven source: taken from its
 * credit when they may. */
bool disco_unproven_spend(struct disco_unproven *u, const struct disco_endpoint *to,
                          uint32_t len);
/* When a challenge of len bytes may go to the unproven source (now at the
 * soonest; UINT64_MAX: not until more comes from it, or none is known).
 * speaks: the peer ever sent a disco message. */
uint64_t disco_challenge_at(const struct disco_unproven *u, bool speaks, uint32_t len);
/* A challenge went out now, paid (disco_unproven_spend). */
void disco_challenge_sent(struct disco_unproven *u, uint64_t now);
/* The source answered, or is no longer of interest: forgotten. */
void disco_unproven_clear(struct disco_unproven *u);
/* The last challenge could not count (the peer was a stranger on
 * probation, whose PONG is refused): the next may go at once, still paid
 * from the credit. Once per promotion, so the pace holds. */
void disco_challenge_void(struct disco_unproven *u);

#endif
