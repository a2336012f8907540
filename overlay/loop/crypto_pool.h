/* SPDX-License-Identifier: MIT */
/* Parallel crypto for the data path.
 *
 * Why this shape: the daemon's state (peers, keypairs, counters, replay
 * windows, timers, the index table) lives on the event loop's one thread,
 * and stays there. What can run elsewhere is the AEAD over bytes, which is
 * most of the cost. So the loop hands whole buffers to worker threads -- a
 * TUN read's segments to seal, with counters it reserved beforehand, or a
 * GRO receive's messages to open, with a copy of the key -- and takes them
 * back strictly in the order it handed them out, so the packets of a flow
 * keep their order and no replay window sees a reordered burst. Replay
 * checks happen back on the loop, after authentication, as before.
 *
 * The alternative, a multi-queue TUN with a full engine per core, splits
 * flows across cores but not one peer's traffic (all of it arrives on one
 * UDP 4-tuple, so on one socket), and would spread the state over threads.
 * With zero workers everything runs inline on the loop (see loop.h for how
 * the count is chosen). */
#ifndef DDPNET_CRYPTO_POOL_H
#define DDPNET_CRYPTO_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "crypto/wg_const.h"

struct pkt;
struct peer;

#define CRYPTO_POOL_MAX_THREADS 16u
#define CRYPTO_POOL_DEPTH       64u   /* jobs in flight, a power of two */

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
    bool done;
};

struct crypto_pool {
    unsigned n_threads;
    pthread_t threads[CRYPTO_POOL_MAX_THREADS];
    pthread_mutex_t lock;
    pthread_cond_t work;
    struct crypto_job jobs[CRYPTO_POOL_DEPTH];
    uint64_t head;                /* oldest job not yet taken back */
    uint64_t next;                /* next job for a worker */
    uint64_t tail;                /* next free slot */
    int event_fd;                 /* readable when a job at head is done */
    bool stopping;
};

/* Starts n_threads workers (0: none; every job must then be run inline by
 * the caller). Returns 0 or -errno. */
int crypto_pool_start(struct crypto_pool *pool, unsigned n_threads);
void crypto_pool_stop(struct crypto_pool *pool);
/* A free job slot to fill, or NULL when CRYPTO_POOL_DEPTH are in flight
 * (then the caller runs the work inline). */
struct crypto_job *crypto_pool_reserve(struct crypto_pool *pool);
/* Hands the filled job over to the workers. */
void crypto_pool_submit(struct crypto_pool *pool, struct crypto_job *job);
/* The oldest job if it is done, in submission order; NULL otherwise. The
 * job stays valid until the next call. */
struct crypto_job *crypto_pool_take(struct crypto_pool *pool);

/* The work itself, also used inline: seal every segment of the job's pkt,
 * or open every transport message of it (results in pkt->seg_status). */
void crypto_job_run(struct crypto_job *job);

#endif
