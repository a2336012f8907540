/* SPDX-License-Identifier: MIT */
/* The crypto of a job (see crypto_job.h): the AEAD over its buffer. */
#include "crypto/transport.h"
#include "overlay/loop/crypto_job.h"
#include "overlay/loop/pkt.h"

/* In runs of TRANSPORT_BATCH segments: the AEAD does many at once. A
 * planned cut is made first, here: the copy that makes the segments
 * leaves them in this core's cache for the AEAD, and outside the engine
 * lock (with shards). */
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
 * its bytes are in this core's cache: coalescing in the engine then need
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
