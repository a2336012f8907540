/* SPDX-License-Identifier: MIT */
/* Tests of the anti-replay window (crypto/replay.c): a numbered table in
 * the style of the Linux module's selftest, full-window sweeps at tops that
 * make the ring wrap, a long sequential run, and a comparison with a plain
 * reference model (a set of seen counters and the highest one). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "crypto/replay.h"

#define W      ((uint64_t)WG_REPLAY_WINDOW)
#define B      ((uint64_t)WG_REPLAY_BITS_TOTAL)
#define LIMIT  WG_REJECT_AFTER_MESSAGES
#define OK     0
#define REJ    (-WG_EREPLAY)

/* splitmix64: a fixed-seed generator so every run draws the same numbers. */
static uint64_t rng_next(uint64_t *state)
{
    uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));

    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void expect(struct replay_window *w, uint64_t counter, int want,
                   const char *what, uint64_t index)
{
    int got = replay_check(w, counter);

    if (got != want)
        fail_msg("%s %" PRIu64 ": counter %" PRIu64 ": got %d, want %d",
                 what, index, counter, got, want);
}

/* --- 1. the numbered table ------------------------------------------------ */

struct row {
    uint64_t counter;
    int want;
};

/* Tops after the jumps of exactly, one less than and one more than a ring. */
#define H1 (W + 10 + B)
#define H2 (H1 + B - 1)
#define H3 (H2 + B + 1)
#define P32 (UINT64_C(1) << 32)
#define P60 (UINT64_C(1) << 60)

static const struct row table[] = {
    /*  1 */ { 0, OK },                /* first packet may be counter 0 */
    /*  2 */ { 0, REJ },               /* duplicate */
    /*  3 */ { 1, OK },
    /*  4 */ { 1, REJ },
    /*  5 */ { 2, OK },
    /*  6 */ { 9, OK },                /* gap ahead */
    /*  7 */ { 8, OK },                /* out of order, within window */
    /*  8 */ { 7, OK },
    /*  9 */ { 7, REJ },
    /* 10 */ { 3, OK },
    /* 11 */ { W + 9, OK },            /* 9 now exactly W behind */
    /* 12 */ { 9, REJ },               /* exactly W behind, but seen */
    /* 13 */ { 8, REJ },               /* W + 1 behind */
    /* 14 */ { W + 10, OK },           /* 10 now exactly W behind */
    /* 15 */ { 10, OK },               /* exactly W behind, unseen */
    /* 16 */ { 10, REJ },
    /* 17 */ { 11, OK },               /* W - 1 behind */
    /* 18 */ { H1, OK },               /* jump of exactly BITS_TOTAL: same ring word */
    /* 19 */ { W + 10, REJ },          /* BITS_TOTAL behind */
    /* 20 */ { H1 - W, OK },           /* same bit as 10, which row 15 set */
    /* 21 */ { H1 - W - 1, REJ },
    /* 22 */ { H1 - 1, OK },           /* same bit as W + 9 (row 11) */
    /* 23 */ { H2, OK },               /* jump of BITS_TOTAL - 1 */
    /* 24 */ { H1, REJ },              /* BITS_TOTAL - 1 behind */
    /* 25 */ { H2 - W, OK },
    /* 26 */ { H3, OK },               /* jump of BITS_TOTAL + 1 */
    /* 27 */ { H2 + 1, REJ },          /* BITS_TOTAL behind */
    /* 28 */ { H3 - 1, OK },
    /* 29 */ { H3, REJ },
    /* 30 */ { P32, OK },              /* far jump */
    /* 31 */ { P32, REJ },
    /* 32 */ { P32 - 1, OK },
    /* 33 */ { P32 - W, OK },
    /* 34 */ { P32 - W - 1, REJ },
    /* 35 */ { P60, OK },              /* farther jump: must not loop per word */
    /* 36 */ { P32 + 1, REJ },
    /* 37 */ { P60 - W, OK },
    /* 38 */ { P60 - 64, OK },
    /* 39 */ { P60 - W, REJ },
    /* 40 */ { LIMIT - 1, OK },        /* the last counter ever accepted */
    /* 41 */ { LIMIT, REJ },
    /* 42 */ { UINT64_MAX, REJ },
    /* 43 */ { LIMIT + 1, REJ },
    /* 44 */ { LIMIT - 2, OK },        /* the rejections above moved nothing */
    /* 45 */ { LIMIT - 1, REJ },
    /* 46 */ { LIMIT - 1 - W, OK },
    /* 47 */ { LIMIT - 2 - W, REJ },
    /* 48 */ { P60, REJ },             /* older ones */
    /* 49 */ { P32, REJ },
    /* 50 */ { 0, REJ },
};

static void test_table(void **state)
{
    struct replay_window w;

    (void)state;
    replay_init(&w);
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        expect(&w, table[i].counter, table[i].want, "row", i + 1);
}

/* --- 2. full-window sweeps -------------------------------------------------- */

enum order { ASCENDING, DESCENDING, SHUFFLED };

/* Puts the window at top t after a history that dirtied every ring word:
 * every counter of the two rings below the window was accepted first. */
static void sweep_setup(struct replay_window *w, uint64_t t)
{
    uint64_t from = t - W > 2 * B ? t - W - 2 * B : 0;

    replay_init(w);
    for (uint64_t c = from; c + W < t; c++)
        expect(w, c, OK, "history", c);
    expect(w, t, OK, "top", t);
}

static void sweep_fill(uint64_t *c, uint64_t t, enum order order, uint64_t *seed)
{
    for (uint64_t i = 0; i < W; i++)
        c[i] = order == DESCENDING ? t - 1 - i : t - W + i;
    if (order != SHUFFLED)
        return;
    for (uint64_t i = W - 1; i > 0; i--) {
        uint64_t j = rng_next(seed) % (i + 1);
        uint64_t tmp = c[i];

        c[i] = c[j];
        c[j] = tmp;
    }
}

static void sweep_one(uint64_t t, enum order order, uint64_t *seed)
{
    static uint64_t c[WG_REPLAY_WINDOW];
    struct replay_window w;

    sweep_setup(&w, t);
    sweep_fill(c, t, order, seed);
    for (uint64_t i = 0; i < W; i++)
        expect(&w, c[i], OK, "first pass, index", i);
    for (uint64_t i = 0; i < W; i++)
        expect(&w, c[i], REJ, "second pass, index", i);
    expect(&w, t, REJ, "top", t);
    /* Below the window: the ring's worth right under it, and the oldest. */
    for (uint64_t d = 1; d <= B && d <= t - W; d++)
        expect(&w, t - W - d, REJ, "below window by", d);
    if (t > W)
        expect(&w, 0, REJ, "counter", 0);
}

static const uint64_t sweep_tops[] = {
    W, W + 1, B - 1, B, B + 63, B + 64, B * 3 + 17, B * 5 + 8191,
    (UINT64_C(1) << 40) + 5, LIMIT - 1,
};

static void sweep_all(enum order order)
{
    uint64_t seed = UINT64_C(0x5eed0001);

    for (size_t i = 0; i < sizeof(sweep_tops) / sizeof(sweep_tops[0]); i++)
        sweep_one(sweep_tops[i], order, &seed);
}

static void test_sweep_ascending(void **state)
{
    (void)state;
    sweep_all(ASCENDING);
}

static void test_sweep_descending(void **state)
{
    (void)state;
    sweep_all(DESCENDING);
}

static void test_sweep_shuffled(void **state)
{
    (void)state;
    sweep_all(SHUFFLED);
}

/* --- 3. a long sequential run ------------------------------------------------- */

#define SEQ_COUNT UINT64_C(100000)

static void test_sequential(void **state)
{
    struct replay_window w;

    (void)state;
    replay_init(&w);
    for (uint64_t c = 0; c < SEQ_COUNT; c++) {
        expect(&w, c, OK, "counter", c);
        expect(&w, c, REJ, "immediate repeat of", c);
    }
    /* Recent ones are duplicates, the rest have fallen behind. */
    for (uint64_t c = 0; c < SEQ_COUNT; c++)
        expect(&w, c, REJ, "later repeat of", c);
    expect(&w, SEQ_COUNT, OK, "next counter", SEQ_COUNT);
}

/* --- 4. init ---------------------------------------------------------------------- */

static void test_init(void **state)
{
    struct replay_window w;

    (void)state;
    memset(&w, 0xa5, sizeof(w));    /* init must not rely on prior contents */
    replay_init(&w);
    assert_int_equal(w.greatest, 0);
    for (size_t i = 0; i < sizeof(w.bitmap) / sizeof(w.bitmap[0]); i++)
        assert_int_equal(w.bitmap[i], 0);
    expect(&w, 0, OK, "counter", 0);
    expect(&w, 0, REJ, "counter", 0);
}

/* Counters at or past the limit are refused even as a first packet, and
 * refusing them leaves the state untouched. */
static void test_limit_on_fresh_window(void **state)
{
    struct replay_window w, before;

    (void)state;
    replay_init(&w);
    before = w;
    expect(&w, UINT64_MAX, REJ, "counter", UINT64_MAX);
    expect(&w, LIMIT, REJ, "counter", LIMIT);
    assert_memory_equal(&w, &before, sizeof(w));
    expect(&w, LIMIT - 1, OK, "counter", LIMIT - 1);
    expect(&w, LIMIT - 1 - W, OK, "counter", LIMIT - 1 - W);
}

/* A refusal (too old or duplicate) changes nothing in the window. */
static void test_reject_leaves_state(void **state)
{
    struct replay_window w, before;

    (void)state;
    replay_init(&w);
    expect(&w, 5 * B, OK, "counter", 5 * B);
    before = w;
    expect(&w, 5 * B - W - 1, REJ, "counter", 5 * B - W - 1);
    expect(&w, 5 * B, REJ, "counter", 5 * B);
    assert_memory_equal(&w, &before, sizeof(w));
}

/* --- the reference model ------------------------------------------------------- */

#define SET_BITS   19u
#define SET_SLOTS  (1u << SET_BITS)
#define SET_EMPTY  UINT64_MAX      /* never accepted, so never stored */
#define MODEL_OPS  200000u
/* Once the top passes this, the run starts over after a few hundred more
 * operations, so the limit is visited without ending every later draw. */
#define MODEL_HIGH   (UINT64_C(1) << 62)
#define MODEL_LINGER 300u

#define MODEL_RECENT 64u         /* accepted counters kept to replay */

struct model {
    uint64_t *seen;                /* open addressing, linear probing */
    uint64_t highest;
    int any;
    uint64_t recent[MODEL_RECENT];
    uint64_t n_accepted;
};

static size_t model_slot(const struct model *m, uint64_t c)
{
    size_t i = (size_t)((c * UINT64_C(0x9e3779b97f4a7c15)) >> (64 - SET_BITS));

    while (m->seen[i] != SET_EMPTY && m->seen[i] != c)
        i = (i + 1) & (SET_SLOTS - 1);
    return i;
}

static void model_reset(struct model *m)
{
    for (size_t i = 0; i < SET_SLOTS; i++)
        m->seen[i] = SET_EMPTY;
    m->highest = 0;
    m->any = 0;
    memset(m->recent, 0, sizeof(m->recent));
}

/* The intended semantics, written plainly: below the limit, not more than
 * W behind the highest accepted (or itself, for the first packet), new. */
static int model_check(struct model *m, uint64_t c)
{
    uint64_t highest = m->any && m->highest > c ? m->highest : c;
    size_t slot;

    if (c >= LIMIT || c + W < highest)
        return REJ;
    slot = model_slot(m, c);
    if (m->seen[slot] == c)
        return REJ;
    m->seen[slot] = c;
    m->highest = highest;
    m->any = 1;
    m->recent[m->n_accepted++ % MODEL_RECENT] = c;
    return OK;
}

static uint64_t model_draw(const struct model *m, uint64_t *seed)
{
    uint64_t r = rng_next(seed), h = m->highest, k = r >> 8;
    static const uint64_t edges[] = { LIMIT - 1, LIMIT, LIMIT - 2, UINT64_MAX,
                                      LIMIT - 1 - W, LIMIT + 1 };

    switch (r % 1000) {
    case 0:
        return edges[k % (sizeof(edges) / sizeof(edges[0]))];
    case 1 ... 10:
        return h + (k >> 12);                           /* far ahead */
    case 11 ... 80: {
        static const int64_t d[] = { -(int64_t)W, -(int64_t)W - 1, -(int64_t)W + 1,
                                     (int64_t)B, (int64_t)B - 1, (int64_t)B + 1 };
        return h + (uint64_t)d[k % (sizeof(d) / sizeof(d[0]))];
    }
    case 81 ... 400:
        return h - 64 + k % 160;                        /* around the top */
    case 401 ... 700:
        return h - k % (W + 300);                       /* behind */
    case 701 ... 800:
        return m->recent[k % MODEL_RECENT];             /* a replay */
    default:
        return h + 1 + k % (2 * B + 100);               /* ahead */
    }
}

static void test_model(void **state)
{
    struct model m = { .seen = malloc(SET_SLOTS * sizeof(uint64_t)) };
    struct replay_window w;
    uint64_t seed = UINT64_C(0xdd9e7), accepted = 0, resets = 0;
    uint64_t beyond_limit = 0;
    unsigned linger = 0;

    (void)state;
    assert_non_null(m.seen);
    model_reset(&m);
    replay_init(&w);
    for (uint64_t op = 0; op < MODEL_OPS; op++) {
        uint64_t c = model_draw(&m, &seed);
        int want = model_check(&m, c);

        expect(&w, c, want, "operation", op);
        accepted += want == OK;
        beyond_limit += c >= LIMIT;
        if (m.highest >= MODEL_HIGH && ++linger == MODEL_LINGER) {
            model_reset(&m);
            replay_init(&w);
            linger = 0;
            resets++;
        }
    }
    free(m.seen);
    /* Both outcomes, and the limit, must have been exercised. */
    assert_in_range(accepted, MODEL_OPS / 20, MODEL_OPS - MODEL_OPS / 20);
    assert_true(resets > 0);
    assert_true(beyond_limit > 0);
    print_message("model: %" PRIu64 " accepted, %" PRIu64 " resets, %" PRIu64
                  " beyond the limit\n", accepted, resets, beyond_limit);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),
        cmocka_unit_test(test_sweep_ascending),
        cmocka_unit_test(test_sweep_descending),
        cmocka_unit_test(test_sweep_shuffled),
        cmocka_unit_test(test_sequential),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_limit_on_fresh_window),
        cmocka_unit_test(test_reject_leaves_state),
        cmocka_unit_test(test_model),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
