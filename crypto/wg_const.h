/* SPDX-License-Identifier: MIT */
/* Every WireGuard protocol constant, named, in one place: message types and
 * sizes, the Noise strings, the timer and counter limits of the whitepaper
 * (section 6), and the statuses the crypto core returns. No other file
 * spells these numbers. */
#ifndef DDPNET_WG_CONST_H
#define DDPNET_WG_CONST_H

#include <stdint.h>

/* --- primitive sizes ---------------------------------------------------- */
#define WG_KEY_LEN            32u   /* X25519 keys, symmetric keys, psk */
#define WG_HASH_LEN           32u   /* BLAKE2s-256 output */
#define WG_AEAD_TAG_LEN       16u   /* Poly1305 tag */
#define WG_AEAD_NONCE_LEN     12u   /* ChaCha20-Poly1305 (IETF) nonce */
#define WG_XAEAD_NONCE_LEN    24u   /* XChaCha20-Poly1305 nonce (cookie replies) */
#define WG_TIMESTAMP_LEN      12u   /* TAI64N */
#define WG_MAC_LEN            16u   /* mac1, mac2: BLAKE2s-128 */
#define WG_COOKIE_LEN         16u
#define WG_BLAKE2S_BLOCK_LEN  64u

/* --- message types and layout --------------------------------------------- */
#define WG_MSG_INITIATION     1u
#define WG_MSG_RESPONSE       2u
#define WG_MSG_COOKIE_REPLY   3u
#define WG_MSG_TRANSPORT      4u
/* ddpnet's shard bytes, in a transport message's type (bytes 1 to 3:
 * reserved, zero in WireGuard, outside the AEAD), sent only to a peer that
 * said it takes them (disco FEATURES), read from anyone:
 *   1  the shard hint: which shard of the receiver its flow belongs to;
 *      a receiver with shards steers the message to it (hint modulo its
 *      shards: overlay/loop/shard.h); it changes only which thread opens;
 *   2  the sub-session (transport.h: struct transport_hinted) whose keys
 *      and counters sealed it: the sealing shard's, so that each shard's
 *      counters are in order on the wire; modulo WG_SHARD_HINTS, 0 the
 *      keypair itself. A forged one opens nothing (the wrong key);
 *   3  the underlay flow (overlay/engine/paths/path.c: path_flows): 0 from
 *      the sender's port, i from its i-th extra source port; a receiver
 *      takes a message whose byte 3 is not 0 as one more flow of the
 *      peer's, never as the peer roaming there. Forged, it only keeps a
 *      source from being looked at as a roam. */
#define WG_SHARD_HINT_OFFSET  1u
#define WG_SHARD_SUB_OFFSET   2u
#define WG_FLOW_OFFSET        3u
#define WG_SHARD_HINTS        16u    /* sub-sessions of a keypair, a power of two */
/* A transport type with its shard bytes masked out. */
#define WG_TRANSPORT_TYPE_MASK 0x000000ffu

#define WG_INITIATION_LEN     148u
#define WG_RESPONSE_LEN       92u
#define WG_COOKIE_REPLY_LEN   64u
#define WG_TRANSPORT_HEADER_LEN 16u  /* type+reserved, receiver index, counter */
#define WG_TRANSPORT_MIN_LEN  (WG_TRANSPORT_HEADER_LEN + WG_AEAD_TAG_LEN) /* keepalive */
#define WG_PADDING_MULTIPLE   16u    /* plaintext padded to a multiple of this */
/* The two MACs close every handshake message: mac1 then mac2. */
/* Where initiations and responses carry their sender index. */
#define WG_SENDER_INDEX_OFFSET 4u
#define WG_MACS_LEN           (2u * WG_MAC_LEN)

/* --- Noise and WireGuard strings ------------------------------------------ */
#define WG_CONSTRUCTION       "Noise_IKpsk2_25519_ChaChaPoly_BLAKE2s"
#define WG_IDENTIFIER         "WireGuard v1 zx2c4 Jason@zx2c4.com"
#define WG_LABEL_MAC1         "mac1----"
#define WG_LABEL_COOKIE       "cookie--"

/* --- timers (seconds), whitepaper 6.1 --------------------------------------- */
#define WG_REKEY_AFTER_TIME        120u
#define WG_REJECT_AFTER_TIME       180u
#define WG_REKEY_ATTEMPT_TIME      90u
#define WG_REKEY_TIMEOUT           5u
#define WG_KEEPALIVE_TIMEOUT       10u
#define WG_COOKIE_SECRET_MAX_AGE   120u
/* A cookie is used only while its secret cannot yet have rotated at the peer. */
#define WG_COOKIE_SECRET_LATENCY   5u
#define WG_REKEY_TIMEOUT_JITTER_MAX_MS 334u
/* At most this many initiations per second are consumed from one peer. */
#define WG_INITIATIONS_PER_SECOND  50u
#define WG_MAX_TIMER_HANDSHAKES    (WG_REKEY_ATTEMPT_TIME / WG_REKEY_TIMEOUT)

/* --- message counters ------------------------------------------------------- */
#define WG_REKEY_AFTER_MESSAGES    (UINT64_C(1) << 60)
/* 2^64 - 2^13 - 1: a counter at or above this is never sent nor accepted. */
#define WG_REJECT_AFTER_MESSAGES   (UINT64_MAX - (UINT64_C(1) << 13))

/* --- replay window ------------------------------------------------------------ */
#define WG_REPLAY_WORD_BITS        64u
#define WG_REPLAY_BITS_TOTAL       8192u  /* bitmap size, a power of two */
/* The last word is kept for the window's advance, as in RFC 6479. */
#define WG_REPLAY_WINDOW           (WG_REPLAY_BITS_TOTAL - WG_REPLAY_WORD_BITS) /* 8128 */

/* --- time units ------------------------------------------------------------------- */
#define WG_NSEC_PER_SEC            UINT64_C(1000000000)
/* TAI64 label of the Unix epoch (2^62 + 10 leap seconds), as WireGuard uses. */
#define WG_TAI64_EPOCH             UINT64_C(0x400000000000000a)
/* Timestamps are rounded down to this many ns (the largest power of two
 * below 1 s / WG_INITIATIONS_PER_SECOND), so they leak no fine timing. */
#define WG_TIMESTAMP_GRAIN_NS      UINT32_C(16777216)

/* --- statuses beyond errno ----------------------------------------------------------
 * Functions return 0 or a negative value: -errno for ordinary failures
 * (-EBADMSG: malformed or failed authentication, -EINVAL: bad argument) and
 * these for outcomes the caller acts on differently. */
#define WG_EREPLAY     4001  /* counter already seen or left behind the window */
#define WG_ESTALE      4002  /* keypair too old or used up: rekey, drop */
#define WG_ETIMESTAMP  4003  /* initiation not newer than the last accepted one */
#define WG_EFLOOD      4004  /* initiations from one peer arrive too fast */
#define WG_ENOPEER     4005  /* static key not one of ours */
#define WG_ESTATE      4006  /* message does not fit the handshake's state */
#define WG_ECOOKIE     4007  /* under load and mac2 missing or wrong: send a cookie */

/* A one-line description of a status above or of an errno value. */
const char *wg_strerror(int status);

/* --- AEAD construction (RFC 8439 section 2.8) ------------------------------- */
/* Poly1305 consumes 16-byte blocks; AD and ciphertext are zero-padded to them. */
#define WG_POLY1305_BLOCK_LEN      16u
/* ChaCha20 makes 64-byte keystream blocks; block 0's first 32 bytes are the
 * Poly1305 one-time key, and the payload is XORed from block 1 on. */
#define WG_CHACHA20_BLOCK_LEN      64u
#define WG_POLY1305_KEY_LEN        32u
/* ChaCha20's state: the constant "expand 32-byte k" as four little-endian
 * words, then 8 key words, the block counter and 3 nonce words; 20 rounds. */
#define WG_CHACHA20_SIGMA0         0x61707865u
#define WG_CHACHA20_SIGMA1         0x3320646eu
#define WG_CHACHA20_SIGMA2         0x79622d32u
#define WG_CHACHA20_SIGMA3         0x6b206574u
#define WG_CHACHA20_ROUNDS         20u

/* --- discovery, NAT traversal and relays (ddpnet's disco: overlay/disco*.c) --
 * Not WireGuard's: the schedule of the messages ddpnet nodes exchange inside
 * the tunnel (overlay/disco/disco_msg.h) and of the handshakes they aim at each
 * other's candidate addresses. */
/* Interface addresses (local candidates) are read again this often (s). */
#define DISCO_LOCAL_REFRESH_S        30u
/* ENDPOINTS go to a peer when its session begins, then again at most this
 * often while something changed, and at least this often anyway (s). */
#define DISCO_ENDPOINTS_MIN_S        10u
#define DISCO_ENDPOINTS_MAX_S        30u
/* A punch round: the same initiation to every candidate of a peer, every
 * DISCO_PUNCH_INTERVAL_MS, DISCO_PUNCH_COUNT times (not paced by
 * REKEY_TIMEOUT: these are aimed, and each is the one handshake). */
#define DISCO_PUNCH_INTERVAL_MS      250u
#define DISCO_PUNCH_COUNT            12u
/* No session this long after an attempt began: go through a relay (ms). */
#define DISCO_RELAY_AFTER_MS         3000u
/* An attempt that brought no session ends after this long (s); new
 * candidates or a handshake the data path wants start another. */
#define DISCO_ATTEMPT_S              10u
/* Relayed: the direct candidates are probed again this often (s). */
#define DISCO_PROBE_INTERVAL_S       12u
/* Direct to a public address: the peer's local ones are tried this often (s). */
#define DISCO_UPGRADE_INTERVAL_S     30u
/* Round-trip pings on the path (s); slower once this many went unanswered
 * (a plain WireGuard peer never answers). */
#define DISCO_PING_INTERVAL_S        5u
#define DISCO_PING_SLOW_S            30u
#define DISCO_PING_UNANSWERED_MAX    4u
/* A peer this node exchanged no data with for DISCO_IDLE_AFTER_S is idle:
 * it is pinged only to keep its path known, and less often the larger the
 * cluster -- every DISCO_PING_INTERVAL_S per DISCO_IDLE_PEERS_PER_STEP
 * peers (twice that at least), DISCO_IDLE_PING_MAX_S at most -- so what
 * idle peers cost a node stays about the same whatever the cluster's
 * size. Its ENDPOINTS go every DISCO_IDLE_ENDPOINTS_FACTOR pings. */
#define DISCO_IDLE_AFTER_S           30u
#define DISCO_IDLE_PEERS_PER_STEP    8u
#define DISCO_IDLE_PING_MAX_S        60u
#define DISCO_IDLE_ENDPOINTS_FACTOR  3u
/* This many pings on the path unanswered in a row: the path is taken for
 * broken (an attempt begins: punches, then the relay). */
#define DISCO_PING_LOST_MAX          2u
/* A ping without an answer for this long is lost (ms). */
#define DISCO_PING_LOST_MS           1000u
/* A pong is matched to a ping at most this old (s). */
#define DISCO_PING_TIMEOUT_S         10u
/* When two initiations cross, ours wins if it is younger than this and our
 * public key is the larger: the peer answers ours, we drop theirs (ms). */
#define DISCO_CROSSING_WINDOW_MS     1000u
/* A direct path that carried nothing authentic for this long gives way to
 * a relay the peer now uses (s). */
#define DISCO_DIRECT_STALE_S         8u
/* What a member says about others is a hint (issue 15). A candidate not
 * reported again for this long, and not answering, is forgotten (s). */
#define DISCO_CAND_TTL_S             120u
/* Sends to a candidate that never answered: after this many it is no
 * longer tried (until it answers, or the peer comes back). */
#define DISCO_CAND_TRIES_MAX         32u
/* Bytes sent to an address that has not answered are paid for by the
 * member that told us of it: it earns this many times the bytes it sent
 * us, up to DISCO_HINT_CREDIT_MAX; and the device sends no more than
 * DISCO_UNANSWERED_BYTES_PER_SEC (burst DISCO_UNANSWERED_BURST) to such
 * addresses in all. */
#define DISCO_HINT_FACTOR            2u
/* Each report of a candidate lets it cost this much more (two handshake
 * initiations: enough for both sides of a punch to open their NATs), to
 * twice that at most; a node that passes a peer's local addresses on pays
 * as much per address and per recipient from that peer's credit. */
#define DISCO_CAND_REPORT_BYTES      (2u * WG_INITIATION_LEN)
#define DISCO_HINT_CREDIT_MAX        8192u
#define DISCO_UNANSWERED_BYTES_PER_SEC 32768u
#define DISCO_UNANSWERED_BURST       65536u
/* A registered node's record says where it may be reached: a hint as a
 * member's word, whoever wrote the record, paid from the registry's own
 * credit, which refills at this rate to this much (a join of a few dozen
 * nodes at once, each tried at a few addresses). */
#define DISCO_REGISTRY_CREDIT_PER_SEC 8192u
#define DISCO_REGISTRY_CREDIT_MAX    65536u
/* A relay is used only once a message sent through it was answered end to
 * end; a relay on trial that brings no answer within this long has failed
 * (ms), and a failed one is not tried again for DISCO_RELAY_PENALTY_S (s)
 * while another may be. A claim to reach a peer that is not renewed for
 * DISCO_CAND_TTL_S is forgotten. */
#define DISCO_RELAY_TRIAL_MS         2000u
#define DISCO_RELAY_PENALTY_S        60u

#endif
