/* SPDX-License-Identifier: MIT */
/* Crypto worker threads (see crypto_pool.h). A ring of jobs: [head, next)
 * taken by workers, [next, tail) waiting, and the loop takes jobs back from
 * head once done. One lock; the work itself runs outside it. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/transport.h"
#include "overlay/loop/crypto_pool.h"
#include "overlay/loop/pkt.h"

/* In runs of TRANSPORT_BATCH segments: the AEAD does many at once. A
 * planned cut is made first, here: the copy that makes the segments
 * leaves them in this core's cache for the AEAD, and off the loop. */
static void run_seal(struct crypto_job *job)
{
    struct transport_packet tp[TRANSPORT_BATCH];
    struct pkt *pkt = job->pkt;

    if (pkt_cut(pkt))
        return;   /* nseg is 0: nothing goes out */
    for (unsigned at = 0; at < pkt->nseg; at += TRANSPORT_BATCH) {
        unsigned n = pkt->nseg - at < TRANSPORT_BATCH ? pkt->nseg - at : TRANSPORT_BATCH;

        for (unsigned i = 0; i < n; i++)
            tp[i] = (struct transport_packet){ .buf = pkt_slot(pkt, at + i), .cap = pkt->stride,
                                               .len = pkt->seg_len[at + i],
                                               .pad_limit = job->pad_limit };
        /* The sizes were checked when the segments were cut: cannot fail. */
        transport_encrypt_batch(job->key, job->remote_index, job->first_counter + at, tp, n);
        for (unsigned i = 0; i < n && (job->hint | job->sub | job->flow); i++) {
            pkt_slot(pkt, at + i)[WG_SHARD_HINT_OFFSET] = job->hint;
            pkt_slot(pkt, at + i)[WG_SHARD_SUB_OFFSET] = job->sub;
            pkt_slot(pkt, at + i)[WG_FLOW_OFFSET] = job->flow;
        }
        if (at + n == pkt->nseg)
            pkt->len = (uint32_t)tp[n - 1].len;
    }
}

/* Whether the opened message's TCP checksums are right, checked while
 * its bytes are in this core's cache: coalescing on the loop then need
 * not read every byte again (offload_pkt.csum_ok). */
static void mark_csum(struct pkt *pkt, unsigned i, const struct transport_packet *tp)
{
    uint64_t bit = UINT64_C(1) << (i % 64);

    if (tp->status == 0 && offload_csum_ok(tp->buf + WG_TRANSPORT_HEADER_LEN, tp->len))
        pkt->seg_csum_ok[i / 64] |= bit;
    else
        pkt->seg_csum_ok[i / 64] &= ~bit;
}

static void run_open(struct crypto_job *job)
{
    struct transport_packet tp[TRANSPORT_BATCH];
    struct pkt *pkt = job->pkt;
    unsigned total = (unsigned)((pkt->len + job->seg_size - 1) / job->seg_size);

    if (total > PKT_MAX_SEGS)
        total = PKT_MAX_SEGS;
    for (unsigned at = 0; at < total; at += TRANSPORT_BATCH) {
        unsigned n = total - at < TRANSPORT_BATCH ? total - at : TRANSPORT_BATCH;

        for (unsigned i = 0; i < n; i++) {
            uint32_t off = (at + i) * job->seg_size;
            uint32_t len = pkt->len - off < job->seg_size ? pkt->len - off : job->seg_size;
            tp[i] = (struct transport_packet){ .buf = pkt->in + off, .cap = len, .len = len };
        }
        transport_decrypt_batch(job->key, tp, n);
        for (unsigned i = 0; i < n; i++) {
            pkt->seg_status[at + i] = tp[i].status;
            pkt->seg_len[at + i] = (uint16_t)tp[i].len;
            pkt->seg_counter[at + i] = tp[i].counter;
            mark_csum(pkt, at + i, &tp[i]);
        }
    }
}

void crypto_job_run(struct crypto_job *job)
{
    if (job->kind == CRYPTO_SEAL)
        run_seal(job);
    else
        run_open(job);
}

static struct crypto_job *slot(struct crypto_pool *pool, uint64_t n)
{
    return &pool->jobs[n % CRYPTO_POOL_DEPTH];
}

static void *worker(void *arg)
{
    struct crypto_pool *pool = arg;

    /* The AEAD's per-thread state is made now, not on the first packet
     * (a failure here is tried again there). */
    (void)aead_thread_init();
    pthread_mutex_lock(&pool->lock);
    for (;;) {
        while (pool->next == pool->tail && !pool->stopping)
            pthread_cond_wait(&pool->work, &pool->lock);
        if (pool->stopping)
            break;
        uint64_t n = pool->next++;
        struct crypto_job *job = slot(pool, n);
        pthread_mutex_unlock(&pool->lock);
        crypto_job_run(job);
        pthread_mutex_lock(&pool->lock);
        job->done = true;
        /* The loop only wants to hear when the oldest job can go. */
        if (n == pool->head) {
            uint64_t one = 1;
            (void)!write(pool->event_fd, &one, sizeof(one));
        }
    }
    pthread_mutex_unlock(&pool->lock);
    aead_thread_cleanup();
    return NULL;
}

int crypto_pool_start(struct crypto_pool *pool, unsigned n_threads)
{
    memset(pool, 0, sizeof(*pool));
    pool->event_fd = -1;
    if (n_threads == 0)
        return 0;
    if (n_threads > CRYPTO_POOL_MAX_THREADS)
        n_threads = CRYPTO_POOL_MAX_THREADS;
    pool->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (pool->event_fd < 0)
        return -errno;
    pthread_mutex_init(&pool->lock, NULL);
    pthread_cond_init(&pool->work, NULL);
    for (unsigned i = 0; i < n_threads; i++) {
        int ret = pthread_create(&pool->threads[i], NULL, worker, pool);
        if (ret) {
            crypto_pool_stop(pool);
            return -ret;
        }
        /* Named, so that top -H and the benches tell workers apart. */
        char name[16];
        snprintf(name, sizeof(name), "ddpnet-crypto%u", i);
        pthread_setname_np(pool->threads[i], name);
        pool->n_threads++;
    }
    return 0;
}

void crypto_pool_stop(struct crypto_pool *pool)
{
    if (pool->event_fd < 0)
        return;
    pthread_mutex_lock(&pool->lock);
    pool->stopping = true;
    pthread_cond_broadcast(&pool->work);
    pthread_mutex_unlock(&pool->lock);
    for (unsigned i = 0; i < pool->n_threads; i++)
        pthread_join(pool->threads[i], NULL);
    for (unsigned i = 0; i < CRYPTO_POOL_DEPTH; i++)
        sodium_memzero(pool->jobs[i].key, WG_KEY_LEN);
    close(pool->event_fd);
    pool->event_fd = -1;
    pool->n_threads = 0;
}

struct crypto_job *crypto_pool_reserve(struct crypto_pool *pool)
{
    /* Only the loop's thread moves tail and head. */
    if (!pool->n_threads || pool->tail - pool->head == CRYPTO_POOL_DEPTH)
        return NULL;
    struct crypto_job *job = slot(pool, pool->tail);
    job->done = false;
    return job;
}

void crypto_pool_submit(struct crypto_pool *pool, struct crypto_job *job)
{
    (void)job;
    pthread_mutex_lock(&pool->lock);
    pool->tail++;
    pthread_cond_signal(&pool->work);
    pthread_mutex_unlock(&pool->lock);
}

struct crypto_job *crypto_pool_take(struct crypto_pool *pool)
{
    struct crypto_job *job = NULL;

    pthread_mutex_lock(&pool->lock);
    if (pool->head != pool->next && slot(pool, pool->head)->done) {
        job = slot(pool, pool->head);
        pool->head++;
    }
    pthread_mutex_unlock(&pool->lock);
    if (job)
        sodium_memzero(job->key, WG_KEY_LEN);
    return job;
}
