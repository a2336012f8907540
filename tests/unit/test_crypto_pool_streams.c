/* SPDX-License-Identifier: MIT */
/* The crypto workers under 8 interleaved streams (issue 19's unit half of
 * tests/e2e/multistream.sh): the loop's way of using the pool, kept up for
 * many jobs -- reserve until the ring is full, take back whatever is done,
 * wait on the eventfd only when neither moves -- with 8 workers, 8 peers'
 * keypairs taking turns job by job, jobs of random sizes (so workers finish
 * out of order) and every sealed job opened again through the same pool,
 * seals and opens in flight together. Checked: jobs come back exactly in
 * the order they were handed out (the ring wraps around many times);
 * never more than CRYPTO_POOL_DEPTH in flight; each stream's counters are
 * used once each, in order, and open back to the plaintext under that
 * stream's key; the replay check, run in take-back order as the loop runs
 * it, accepts every message once; each stream's send counter ends at the
 * number of segments it sealed. */
#include <poll.h>
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
#include "overlay/loop/crypto_pool.h"
#include "overlay/loop/pkt.h"

#define STREAMS   8u
#define WORKERS   8u
#define SEALS     3000u                      /* jobs sealed, then each opened */
#define MAX_SEGS  24u
#define MAX_LEN   1380u
#define BUFFERS   (CRYPTO_POOL_DEPTH + 8u)
#define FIFO      (2u * CRYPTO_POOL_DEPTH)  /* a power of two, > in flight */

/* What was handed out, in order: what must come back next. */
struct expect {
    enum crypto_job_kind kind;
    struct pkt *pkt;
    unsigned stream, id, len, last_len;        /* segments' plaintext lengths */
    uint64_t first;
};

struct state {
    struct pkt_pool pool;
    struct crypto_pool cp;
    struct noise_keypair tx[STREAMS], rx[STREAMS];
    uint64_t last_counter[STREAMS];          /* +1: 0 is none yet */
    uint64_t sealed_segs[STREAMS];
    struct expect fifo[FIFO];
    uint64_t fifo_head, fifo_tail;            /* in flight: [head, tail) */
    struct expect to_open[FIFO];              /* sealed, not yet handed back to open */
    uint64_t open_head, open_tail;
    unsigned seals_out, opens_done;
    uint32_t rng;
};

static uint32_t rnd(struct state *s)
{
    s->rng = s->rng * 1103515245u + 12345u;
    return s->rng >> 8;
}

static uint8_t fill_byte(unsigned id, unsigned seg, unsigned at)
{
    return (uint8_t)(id * 131u + seg * 7u + at);
}

static void hand_out(struct state *s, struct crypto_job *job, const struct expect *e)
{
    assert_true(s->fifo_tail - s->fifo_head < CRYPTO_POOL_DEPTH);
    s->fifo[s->fifo_tail++ % FIFO] = *e;
    crypto_pool_submit(&s->cp, job);
}

/* A new job for stream id % STREAMS: random segments, counters reserved
 * here (on "the loop"), sealed by a worker. */
static void submit_seal(struct state *s, struct crypto_job *job)
{
    unsigned id = s->seals_out++, st = id % STREAMS;
    unsigned nseg = 1 + rnd(s) % MAX_SEGS, len = 1 + rnd(s) % MAX_LEN;
    unsigned last = 1 + rnd(s) % len;
    struct pkt *p = pkt_get(&s->pool);
    uint64_t first;

    assert_non_null(p);
    p->nseg = (uint16_t)nseg;
    p->stride = (uint32_t)transport_sealed_len(len);
    for (unsigned i = 0; i < nseg; i++) {
        p->seg_len[i] = (uint16_t)(i + 1 == nseg ? last : len);
        for (unsigned k = 0; k < p->seg_len[i]; k++)
            pkt_seg_plain(p, i)[k] = fill_byte(id, i, k);
    }
    assert_int_equal(transport_reserve(&s->tx[st], nseg, 1, &first), 0);
    s->sealed_segs[st] += nseg;
    *job = (struct crypto_job){ .kind = CRYPTO_SEAL, .pkt = p, .remote_index = st,
                                .first_counter = first };
    memcpy(job->key, s->tx[st].send_key, WG_KEY_LEN);
    hand_out(s, job, &(struct expect){ .kind = CRYPTO_SEAL, .pkt = p, .stream = st, .id = id,
                                       .len = len, .last_len = last, .first = first });
}

/* A sealed job back to the workers to open, its messages laid back to back
 * as a GRO receive holds them. */
static void submit_open(struct state *s, struct crypto_job *job)
{
    struct expect e = s->to_open[s->open_head++ % FIFO];
    struct pkt *p = e.pkt;

    p->len = (uint32_t)((p->nseg - 1u) * p->stride + transport_sealed_len(e.last_len));
    memcpy(p->in, p->area, p->len);
    *job = (struct crypto_job){ .kind = CRYPTO_OPEN, .pkt = p, .seg_size = p->stride };
    memcpy(job->key, s->rx[e.stream].recv_key, WG_KEY_LEN);
    e.kind = CRYPTO_OPEN;
    hand_out(s, job, &e);
}

static void check_sealed(struct state *s, const struct expect *e)
{
    for (unsigned i = 0; i < e->pkt->nseg; i++) {
        const uint8_t *msg = pkt_slot(e->pkt, i);
        uint64_t c = 0;
        for (int b = 7; b >= 0; b--)
            c = c << 8 | msg[8 + b];
        assert_int_equal(c, e->first + i);
        assert_int_equal(transport_receiver(msg), e->stream);
    }
    s->to_open[s->open_tail++ % FIFO] = *e;
}

/* As the loop does after a worker opened: replay check in take-back order. */
static void check_opened(struct state *s, const struct expect *e)
{
    struct pkt *p = e->pkt;

    for (unsigned i = 0; i < p->nseg; i++) {
        unsigned len = i + 1u == p->nseg ? e->last_len : e->len;
        const uint8_t *plain = p->in + (size_t)i * p->stride + WG_TRANSPORT_HEADER_LEN;

        assert_int_equal(p->seg_status[i], 0);
        assert_int_equal(p->seg_counter[i], e->first + i);
        /* Strictly after the stream's previous message: order kept. */
        assert_true(p->seg_counter[i] + 1 > s->last_counter[e->stream]);
        s->last_counter[e->stream] = p->seg_counter[i] + 1;
        assert_int_equal(transport_accept(&s->rx[e->stream], p->seg_counter[i]), 0);
        assert_int_equal(p->seg_len[i], transport_padded_len(len));
        for (unsigned k = 0; k < len; k += 53)
            assert_int_equal(plain[k], fill_byte(e->id, i, k));
        assert_int_equal(plain[len - 1], fill_byte(e->id, i, len - 1));
    }
    pkt_put(&s->pool, p);
    s->opens_done++;
}

/* Takes back whatever is done; each must be the oldest handed out. */
static unsigned take_done(struct state *s)
{
    struct crypto_job *job;
    unsigned n = 0;

    while ((job = crypto_pool_take(&s->cp))) {
        assert_true(s->fifo_head < s->fifo_tail);
        const struct expect *e = &s->fifo[s->fifo_head++ % FIFO];
        assert_int_equal(job->kind, e->kind);
        assert_ptr_equal(job->pkt, e->pkt);
        if (e->kind == CRYPTO_SEAL)
            check_sealed(s, e);
        else
            check_opened(s, e);
        n++;
    }
    return n;
}

/* Hands out opens first (they free buffers), then new seals, until the
 * ring is full or nothing is left to hand out. */
static unsigned hand_out_more(struct state *s)
{
    unsigned n = 0;
    struct crypto_job *job;

    while ((s->open_head != s->open_tail || s->seals_out < SEALS) &&
           (job = crypto_pool_reserve(&s->cp))) {
        if (s->open_head != s->open_tail)
            submit_open(s, job);
        else
            submit_seal(s, job);
        n++;
    }
    return n;
}

static void test_streams_keep_order(void **state)
{
    (void)state;
    struct state *s = calloc(1, sizeof(*s));
    unsigned waits = 0;

    assert_non_null(s);
    s->rng = 0x19u;
    assert_int_equal(pkt_pool_init(&s->pool, BUFFERS, 1), 0);
    for (unsigned i = 0; i < STREAMS; i++) {
        randombytes_buf(s->tx[i].send_key, WG_KEY_LEN);
        memcpy(s->rx[i].recv_key, s->tx[i].send_key, WG_KEY_LEN);
        s->tx[i].birth_ns = s->rx[i].birth_ns = 1;
        replay_init(&s->rx[i].replay);
    }
    assert_int_equal(crypto_pool_start(&s->cp, WORKERS), 0);
    assert_int_equal(s->cp.n_threads, WORKERS);

    while (s->opens_done < SEALS) {
        unsigned moved = take_done(s);
        moved += hand_out_more(s);
        if (!moved) {
            struct pollfd pfd = { s->cp.event_fd, POLLIN, 0 };
            uint64_t v;
            assert_int_equal(poll(&pfd, 1, 5000), 1);   /* a worker must finish */
            (void)!read(s->cp.event_fd, &v, sizeof(v));
            waits++;
        }
    }
    assert_int_equal(s->fifo_head, s->fifo_tail);
    assert_int_equal(s->fifo_tail, 2u * SEALS);
    for (unsigned i = 0; i < STREAMS; i++) {
        assert_int_equal(s->tx[i].send_counter, s->sealed_segs[i]);
        assert_int_equal(s->last_counter[i], s->sealed_segs[i]);
    }
    /* The ring wrapped around many times. */
    assert_true(s->fifo_tail > 10u * CRYPTO_POOL_DEPTH);
    print_message("%u jobs, %u waits for a worker\n", (unsigned)s->fifo_tail, waits);
    crypto_pool_stop(&s->cp);
    for (unsigned i = 0; i < STREAMS; i++) {
        sodium_memzero(s->tx[i].send_key, WG_KEY_LEN);
        sodium_memzero(s->rx[i].recv_key, WG_KEY_LEN);
    }
    pkt_pool_destroy(&s->pool);
    free(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_streams_keep_order),
    };
    if (crypto_core_init())
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
