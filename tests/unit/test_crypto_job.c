/* SPDX-License-Identifier: MIT */
/* Tests of a crypto job's work (overlay/loop/crypto_job.c): a seal uses
 * the counters reserved for it, each once, and what it sealed opens back
 * to the plaintext and passes the replay check once, and a second time
 * never. A read whose cut was planned is cut by the job that seals it; an
 * open says which TCP segments' checksums it verified. (The order of jobs
 * run on several threads: test_deferred.c.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/replay.h"
#include "crypto/transport.h"
#include "overlay/loop/crypto_job.h"
#include "overlay/loop/pkt.h"
#include "tests/unit/tso_read.h"

#define JOBS      48u
#define SEGS      40u
#define SEG_LEN   1380u
#define ROUNDS    6

struct fixture {
    struct pkt_pool pool;
    struct noise_keypair tx, rx;
    struct pkt *pkts[JOBS];
};

static void fill_segments(struct pkt *p, unsigned job)
{
    p->nseg = SEGS;
    p->stride = (uint32_t)transport_sealed_len(SEG_LEN);
    for (unsigned i = 0; i < SEGS; i++) {
        p->seg_len[i] = SEG_LEN;
        memset(pkt_seg_plain(p, i), (int)(job * SEGS + i), SEG_LEN);
    }
}

static void seal_round(struct fixture *f)
{
    for (unsigned j = 0; j < JOBS; j++) {
        uint64_t first;
        fill_segments(f->pkts[j], j);
        assert_int_equal(transport_reserve(&f->tx, SEGS, 1, &first), 0);
        struct crypto_job job = { .kind = CRYPTO_SEAL, .pkt = f->pkts[j], .remote_index = 7,
                                  .first_counter = first };
        memcpy(job.key, f->tx.send_key, WG_KEY_LEN);
        crypto_job_run(&job);
    }
}

/* Opens what seal_round made: one job per pkt, the datagrams laid back to
 * back as a GRO receive would have them. */
static void open_round(struct fixture *f, bool expect_replay)
{
    uint32_t stride = f->pkts[0]->stride;
    for (unsigned j = 0; j < JOBS; j++) {
        struct pkt *p = f->pkts[j];
        if (!expect_replay) {
            memcpy(p->in, p->area, (size_t)SEGS * stride);
            p->len = SEGS * stride;
        }
        struct crypto_job job = { .kind = CRYPTO_OPEN, .pkt = p, .seg_size = stride };
        memcpy(job.key, f->rx.recv_key, WG_KEY_LEN);
        crypto_job_run(&job);
    }
    /* As the job is finished: replay checks in order. */
    for (unsigned j = 0; j < JOBS; j++) {
        struct pkt *p = f->pkts[j];
        for (unsigned i = 0; i < SEGS; i++) {
            assert_int_equal(p->seg_status[i], 0);
            assert_int_equal(p->seg_len[i], transport_padded_len(SEG_LEN));
            int accepted = transport_accept(&f->rx, p->seg_counter[i]);
            assert_int_equal(accepted, expect_replay ? -WG_EREPLAY : 0);
        }
    }
}

static void test_counters_and_replay(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    assert_int_equal(pkt_pool_init(&f->pool, JOBS, 1), 0);
    for (unsigned j = 0; j < JOBS; j++)
        f->pkts[j] = pkt_get(&f->pool);
    randombytes_buf(f->tx.send_key, WG_KEY_LEN);
    memcpy(f->rx.recv_key, f->tx.send_key, WG_KEY_LEN);
    f->tx.birth_ns = f->rx.birth_ns = 1;
    replay_init(&f->rx.replay);

    for (int r = 0; r < ROUNDS; r++) {
        seal_round(f);
        /* Every counter of the round, exactly once, in job order. */
        for (unsigned j = 0; j < JOBS; j++)
            for (unsigned i = 0; i < SEGS; i++) {
                const uint8_t *msg = pkt_slot(f->pkts[j], i);
                uint64_t c = 0;
                for (int b = 7; b >= 0; b--)
                    c = c << 8 | msg[8 + b];
                assert_int_equal(c, (uint64_t)r * JOBS * SEGS + j * SEGS + i);
            }
        open_round(f, false);
        for (unsigned j = 0; j < JOBS; j++)
            for (unsigned i = 0; i < SEGS; i++) {
                /* Plaintext intact after a seal and an open. */
                const uint8_t *plain = f->pkts[j]->in + (size_t)i * f->pkts[j]->stride +
                                       WG_TRANSPORT_HEADER_LEN;
                for (unsigned k = 0; k < SEG_LEN; k += 97)
                    assert_int_equal(plain[k], (uint8_t)(j * SEGS + i));
            }
    }
    assert_int_equal(f->tx.send_counter, (uint64_t)ROUNDS * JOBS * SEGS);
    /* The same messages again (re-sealed contents are gone; reopen the
     * ciphertexts kept in `area`): authentic, but replays. */
    for (unsigned j = 0; j < JOBS; j++) {
        memcpy(f->pkts[j]->in, f->pkts[j]->area, (size_t)SEGS * f->pkts[j]->stride);
        f->pkts[j]->len = SEGS * f->pkts[j]->stride;
    }
    open_round(f, true);
    pkt_pool_destroy(&f->pool);
    free(f);
}

/* Runs one job with this key. */
static void run_job(const struct crypto_job *filled, const uint8_t key[WG_KEY_LEN])
{
    struct crypto_job job = *filled;

    memcpy(job.key, key, WG_KEY_LEN);
    crypto_job_run(&job);
}

/* A TUN read whose cut was planned goes to its job uncut; the job cuts
 * and seals it, each segment with its reserved counter; opened by a job,
 * every segment's TCP checksum is marked verified but one that was
 * spoiled. */
static void test_cut_and_checksums_in_the_job(void **state)
{
    (void)state;
    struct pkt_pool pool;
    struct noise_keypair tx = { .birth_ns = 1 }, rx = { .birth_ns = 1 };
    const unsigned nseg = 5, gso = 1000;
    uint64_t first;

    assert_int_equal(pkt_pool_init(&pool, 3, 1), 0);
    struct pkt *p = pkt_get(&pool), *q = pkt_get(&pool);
    randombytes_buf(tx.send_key, WG_KEY_LEN);
    memcpy(rx.recv_key, tx.send_key, WG_KEY_LEN);
    replay_init(&rx.replay);

    struct vnet_hdr h = tso_read(p, (size_t)nseg * gso - 10, (uint16_t)gso);
    uint32_t stride = (uint32_t)transport_sealed_len(TSO_READ_HDRS + gso);
    assert_int_equal(pkt_plan_cut(p, &h, stride), (int)nseg);
    assert_int_equal(transport_reserve(&tx, nseg, 1, &first), 0);
    run_job(&(struct crypto_job){ .kind = CRYPTO_SEAL, .pkt = p, .remote_index = 7,
                                  .first_counter = first },
            tx.send_key);
    assert_false(p->cut_pending);
    assert_int_equal(p->nseg, nseg);

    /* The sealed segments, back to back as GRO hands them over; the
     * payload of segment 3 spoiled after sealing, then sealed again as a
     * sender whose stack got its checksum wrong would have. */
    for (unsigned i = 0; i < nseg; i++)
        memcpy(q->in + (size_t)i * stride, pkt_slot(p, i), stride);
    q->len = (nseg - 1) * stride + p->len;
    struct pkt *r = pkt_get(&pool);   /* the same cut, here, for its plaintext */
    struct vnet_hdr hr = tso_read(r, (size_t)nseg * gso - 10, (uint16_t)gso);
    assert_int_equal(pkt_plan_cut(r, &hr, stride), (int)nseg);
    assert_int_equal(pkt_cut(r), 0);
    struct transport_packet bad = { .buf = q->in + 3 * stride, .cap = stride,
                                    .len = (size_t)r->seg_len[3] };
    memcpy(bad.buf + WG_TRANSPORT_HEADER_LEN, pkt_seg_plain(r, 3), bad.len);
    bad.buf[WG_TRANSPORT_HEADER_LEN + TSO_READ_HDRS + 5] ^= 1;
    assert_int_equal(transport_reserve(&tx, 1, 1, &first), 0);
    transport_encrypt_batch(tx.send_key, 7, first, &bad, 1);
    assert_int_equal(bad.len, stride);
    memset(q->seg_csum_ok, 0xff, sizeof(q->seg_csum_ok));   /* stale: all set */
    run_job(&(struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = q, .seg_size = stride }, rx.recv_key);
    for (unsigned i = 0; i < nseg; i++) {
        assert_int_equal(q->seg_status[i], 0);
        assert_int_equal(q->seg_counter[i], i == 3 ? nseg : i);
        assert_int_equal(q->seg_csum_ok[0] >> i & 1, i != 3);
        /* The cut's bytes: the payload where the read had it. */
        const uint8_t *ip = q->in + (size_t)i * stride + WG_TRANSPORT_HEADER_LEN;
        size_t at = (size_t)i * gso + 17;
        uint8_t want = (uint8_t)(at * 7 + 1) ^ (i == 3 && at % gso == 5 ? 1 : 0);
        assert_int_equal(ip[TSO_READ_HDRS + 17], want);
    }
    pkt_pool_destroy(&pool);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counters_and_replay),
        cmocka_unit_test(test_cut_and_checksums_in_the_job),
    };
    if (crypto_core_init())
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
