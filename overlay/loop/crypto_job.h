/* SPDX-License-Identifier: MIT */
/* A crypto job of the data path: a TUN read's segments to seal, with the
 * counters reserved for them beforehand, or a GRO receive's messages to
 * open, with a copy of the key -- the AEAD over whole buffers, which is
 * most of the cost and needs nothing of the engine. With shards
 * (shard.h) a shard's jobs run outside the engine lock, on its own thread
 * or an idle shard's, and are finished in the order they were made
 * (deferred.h); on one loop they run inline. Replay checks happen after
 * authentication, when the job is finished, in order. */
#ifndef DDPNET_CRYPTO_JOB_H
#define DDPNET_CRYPTO_JOB_H

#include <stdbool.h>
#include <stdint.h>

#include "crypto/wg_const.h"

struct pkt;
struct peer;

#define CRYPTO_JOB_DEPTH 64u   /* jobs in flight on a shard, a power of two */

enum crypto_job_kind { CRYPTO_SEAL, CRYPTO_OPEN };

struct crypto_job {
    enum crypto_job_kind kind;
    struct pkt *pkt;
    struct peer *peer;            /* seal: where it goes */
    uint32_t peer_id;             /* seal: its id, to find it again (shard.h) */
    uint8_t hint;                 /* seal: the shard hint (wg_const.h), 0: none */
    uint8_t sub;                  /* seal: the sub-session (wg_const.h), 0: none */
    uint8_t flow;                 /* seal: the underlay flow (wg_const.h), 0: the port's */
    uint8_t key[WG_KEY_LEN];      /* wiped when the job is taken back */
    uint32_t remote_index;        /* seal */
    uint64_t first_counter;       /* seal: segment i gets first_counter + i */
    uint32_t pad_limit;           /* seal */
    uint32_t seg_size;            /* open: datagram size in pkt->in */
};

/* The work itself, also used inline: seal every segment of the job's pkt,
 * or open every transport message of it (results in pkt->seg_status). */
void crypto_job_run(struct crypto_job *job);

#endif
