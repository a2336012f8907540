/* SPDX-License-Identifier: MIT */
/* Poly1305 for many messages at once (see poly1305_multi.h).
 *
 * Radix 2^44: h = h0 + h1 2^44 + h2 2^88 with h2 holding bits 88..129.
 * With p = 2^130 - 5, 2^132 = 20 (mod p), so the product h * r is
 *   d0 = h0 r0 + h1 (20 r2) + h2 (20 r1)        at 2^0
 *   d1 = h0 r1 + h1 r0      + h2 (20 r2)        at 2^44
 *   d2 = h0 r2 + h1 r1      + h2 r0             at 2^88
 * Each 52x52-bit product comes as a low and a high half (vpmadd52luq,
 * vpmadd52huq), the high half weighing 2^52 more; the carries put both
 * back into 44/44/42-bit limbs, folding what passes 2^130 back as x5.
 * Bounds: clamping keeps r0, r1 < 2^44 and r2 < 2^36; r^2 (for two
 * blocks at a time) has carried limbs, < 2^44, 2^44 + 2 and 2^42, so
 * 20 x its top limb < 2^47. The limbs of h stay below 2^46 after a block
 * is added, so every operand fits 52 bits; a sum gathers at most six
 * products (low halves < 2^52, high halves < 2^41), so every sum fits 64
 * bits, also after the x 2^10 x 5 fold.
 *
 * Messages of different lengths end together: a lane's blocks are placed
 * so that its last one falls on the last row, and the rows before its
 * first hold null blocks (zero, without the 2^128 pad bit), which leave
 * h = 0 as it started. So every row runs on all lanes at once, two rows a
 * step, each lane's block gathered from its ciphertext or its tail. */
#define DDPNET_AEAD_INTERNAL            /* aead_stack_scrub */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/poly1305_multi.h"

#define LIMB_BITS   44u
#define TOP_BITS    42u                  /* limb 2: bits 88..129 */
#define MASK44      ((UINT64_C(1) << LIMB_BITS) - 1)
#define MASK42      ((UINT64_C(1) << TOP_BITS) - 1)
#define HI_SHIFT    8u                   /* 2^52 = 2^8 * 2^44 */
#define FOLD_SHIFT  10u                  /* 2^(52 + 88) = 2^10 * 2^130 */
#define BLOCK       WG_POLY1305_BLOCK_LEN
#define HIBIT       (UINT64_C(1) << 40)  /* 2^128 at limb 2 */

static const uint64_t clamp_lo = UINT64_C(0x0ffffffc0fffffff);
static const uint64_t clamp_hi = UINT64_C(0x0ffffffc0ffffffc);

bool poly1305_multi_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512ifma");
}

/* What a lane hashes: its full ciphertext blocks where they lie, then the
 * zero-padded rest and the length block from here. */
struct lane_blocks {
    size_t full;                         /* whole 16-byte blocks of ct */
    size_t total;                        /* blocks in all */
    uint8_t tail[2][BLOCK];              /* [partial block,] length block */
};

static void lane_prepare(struct lane_blocks *b, const struct poly1305_lane *l)
{
    size_t rest = l->len % BLOCK;
    unsigned t = 0;

    memset(b->tail, 0, sizeof(b->tail));
    b->full = l->len / BLOCK;
    if (rest)
        memcpy(b->tail[t++], l->ct + b->full * BLOCK, rest);
    put_le64(b->tail[t] + 8, (uint64_t)l->len);      /* le64(adlen = 0) || le64(len) */
    b->total = b->full + t + 1;
}

#define VEC_FN __attribute__((target("avx512f,avx512ifma"), always_inline)) static inline

VEC_FN __m512i times5(__m512i x)
{
    return _mm512_add_epi64(_mm512_slli_epi64(x, 2), x);
}

/* A row of blocks: each lane's two little-endian words and its 2^128 pad
 * bit (HIBIT; 0 in a null block). */
struct row {
    __m512i lo, hi, pad;
};

/* The limbs of a row's blocks. */
VEC_FN void block_limbs(__m512i m[3], const struct row *b)
{
    const __m512i m44 = _mm512_set1_epi64((long long)MASK44);

    m[0] = _mm512_and_si512(b->lo, m44);
    m[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(b->lo, 44),
                                            _mm512_slli_epi64(b->hi, 20)),
                            m44);
    m[2] = _mm512_or_si512(_mm512_srli_epi64(b->hi, 24), b->pad);
}

/* Unreduced product sums: lo[i] and up[i] gather the low and high halves
 * of every 52x52-bit product landing at limb i. */
struct sums {
    __m512i lo[3], up[3];
};

/* sums += x * r, where s = 20 r (see the top of the file). Each sum is a
 * chain of multiply-adds; the chains of one call are independent. */
VEC_FN void mul_add(struct sums *a, const __m512i x[3], const __m512i r[3], const __m512i s[3])
{
#define MADD3(f, acc, a0, b0, a1, b1, a2, b2) acc = f(f(f(acc, a0, b0), a1, b1), a2, b2)
    MADD3(_mm512_madd52lo_epu64, a->lo[0], x[0], r[0], x[1], s[2], x[2], s[1]);
    MADD3(_mm512_madd52hi_epu64, a->up[0], x[0], r[0], x[1], s[2], x[2], s[1]);
    MADD3(_mm512_madd52lo_epu64, a->lo[1], x[0], r[1], x[1], r[0], x[2], s[2]);
    MADD3(_mm512_madd52hi_epu64, a->up[1], x[0], r[1], x[1], r[0], x[2], s[2]);
    MADD3(_mm512_madd52lo_epu64, a->lo[2], x[0], r[2], x[1], r[1], x[2], r[0]);
    MADD3(_mm512_madd52hi_epu64, a->up[2], x[0], r[2], x[1], r[1], x[2], r[0]);
#undef MADD3
}

VEC_FN void sums_zero(struct sums *a)
{
    for (unsigned i = 0; i < 3; i++)
        a->lo[i] = a->up[i] = _mm512_setzero_si512();
}

/* The sums back into 44/44/42-bit limbs: the high halves move up one limb
 * (x 2^8), d2's wrapping past 2^130 (x 5). */
VEC_FN void carry(__m512i h[3], struct sums *a)
{
    const __m512i m44 = _mm512_set1_epi64((long long)MASK44);
    const __m512i m42 = _mm512_set1_epi64((long long)MASK42);
    __m512i l0, l1, l2, c;

    l0 = _mm512_add_epi64(a->lo[0], times5(_mm512_slli_epi64(a->up[2], FOLD_SHIFT)));
    l1 = _mm512_add_epi64(a->lo[1], _mm512_slli_epi64(a->up[0], HI_SHIFT));
    l2 = _mm512_add_epi64(a->lo[2], _mm512_slli_epi64(a->up[1], HI_SHIFT));
    c = _mm512_srli_epi64(l0, LIMB_BITS);
    h[0] = _mm512_and_si512(l0, m44);
    l1 = _mm512_add_epi64(l1, c);
    c = _mm512_srli_epi64(l1, LIMB_BITS);
    h[1] = _mm512_and_si512(l1, m44);
    l2 = _mm512_add_epi64(l2, c);
    c = _mm512_srli_epi64(l2, TOP_BITS);
    h[2] = _mm512_and_si512(l2, m42);
    h[0] = _mm512_add_epi64(h[0], times5(c));
    c = _mm512_srli_epi64(h[0], LIMB_BITS);
    h[0] = _mm512_and_si512(h[0], m44);
    h[1] = _mm512_add_epi64(h[1], c);
}

/* A key's powers as the multiply needs them: r and 20 r. */
struct power {
    __m512i r[3], s[3];
};

VEC_FN void power_of(struct power *p, const __m512i r[3])
{
    for (unsigned i = 0; i < 3; i++) {
        p->r[i] = r[i];
        p->s[i] = _mm512_slli_epi64(times5(r[i]), 2);
    }
}

/* Two blocks in one: h = ((h + m) * r + n) * r = (h + m) * r^2 + n * r.
 * The n * r products do not wait for h, and one carry serves both blocks,
 * so a block costs about half the dependent work of a block at a time.
 * All lanes. */
VEC_FN void step2(__m512i h[3], const struct power *r1, const struct power *r2,
                  const struct row *mb, const struct row *nb)
{
    __m512i m[3], n[3];
    struct sums a;

    block_limbs(m, mb);
    block_limbs(n, nb);
    sums_zero(&a);
    mul_add(&a, n, r1->r, r1->s);
    for (unsigned i = 0; i < 3; i++)
        m[i] = _mm512_add_epi64(h[i], m[i]);
    mul_add(&a, m, r2->r, r2->s);
    carry(h, &a);
}

/* h mod p, plus s, mod 2^128: the tag. Constant time. */
static void finish(uint8_t tag[WG_AEAD_TAG_LEN], uint64_t h0, uint64_t h1, uint64_t h2,
                   const uint8_t s[16])
{
    unsigned __int128 v, g, sv;
    uint64_t c, top, gtop, mask;

    /* Proper limbs, then fold what lies at or above 2^130 once more. */
    c = h0 >> LIMB_BITS; h0 &= MASK44; h1 += c;
    c = h1 >> LIMB_BITS; h1 &= MASK44; h2 += c;
    c = h2 >> TOP_BITS;  h2 &= MASK42; h0 += c * 5;
    c = h0 >> LIMB_BITS; h0 &= MASK44; h1 += c;
    c = h1 >> LIMB_BITS; h1 &= MASK44; h2 += c;
    /* v = h mod 2^128, top = bits 128.. (h < 2^130 + small) */
    v = (unsigned __int128)h0 | (unsigned __int128)h1 << LIMB_BITS |
        (unsigned __int128)h2 << (2 * LIMB_BITS);
    top = h2 >> (128 - 2 * LIMB_BITS);
    /* g = h + 5 - 2^130: the reduced value when h >= p. */
    g = v + 5;
    gtop = top + (g < v);
    mask = (uint64_t)0 - (gtop >> 2);    /* all ones when h + 5 >= 2^130 */
    v = (v & ~(((unsigned __int128)mask << 64) | mask)) |
        (g & (((unsigned __int128)mask << 64) | mask));
    sv = (unsigned __int128)get_le64(s) | (unsigned __int128)get_le64(s + 8) << 64;
    v += sv;
    put_le64(tag, (uint64_t)v);
    put_le64(tag + 8, (uint64_t)(v >> 64));
}

/* Where each lane's blocks lie, as hash_lanes places them (see the top of
 * the file): row t of lane j is null before start, then ct, then tail. */
struct placing {
    __m512i start, tail_row;             /* first row with a block, first in tail */
    __m512i ct_at, tail_at;              /* the address of row 0 if in ct, in tail */
};

/* Row t of every lane, where each lane has its block from ct there: no
 * lane's null block nor tail (unused lanes load nothing, mask all). */
VEC_FN void row_in_ct(struct row *b, const struct placing *pl, size_t t, __mmask8 all)
{
    const __m512i at = _mm512_add_epi64(pl->ct_at, _mm512_set1_epi64((long long)(t * BLOCK)));

    b->lo = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), all, at, NULL, 1);
    b->hi = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), all,
                                        _mm512_add_epi64(at, _mm512_set1_epi64(8)), NULL, 1);
    b->pad = _mm512_set1_epi64((long long)HIBIT);
}

/* Row t of every lane, whatever it is. */
VEC_FN void row_at(struct row *b, const struct placing *pl, size_t t)
{
    const __m512i tv = _mm512_set1_epi64((long long)t);
    const __m512i off = _mm512_slli_epi64(tv, 4);               /* t * BLOCK */
    const __m512i eight = _mm512_set1_epi64(8);
    __mmask8 live = _mm512_cmpge_epi64_mask(tv, pl->start);
    __mmask8 in_ct = _mm512_cmplt_epi64_mask(tv, pl->tail_row);
    __m512i at = _mm512_add_epi64(_mm512_mask_blend_epi64(in_ct, pl->tail_at, pl->ct_at), off);

    b->lo = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live, at, NULL, 1);
    b->hi = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), live,
                                        _mm512_add_epi64(at, eight), NULL, 1);
    b->pad = _mm512_maskz_mov_epi64(live, _mm512_set1_epi64((long long)HIBIT));
}

__attribute__((target("avx512f,avx512ifma"), noinline))
static void hash_lanes(const struct poly1305_lane *lanes, unsigned n, uintptr_t *deepest)
{
    struct lane_blocks blk[POLY1305_MULTI_LANES];
    uint64_t rl[3][POLY1305_MULTI_LANES] = { { 0 } }, hv[3][POLY1305_MULTI_LANES];
    long long start[POLY1305_MULTI_LANES], tail_row[POLY1305_MULTI_LANES],
              ct_at[POLY1305_MULTI_LANES] = { 0 }, tail_at[POLY1305_MULTI_LANES] = { 0 };
    __m512i h[3], r[3], rr[3];
    struct power r1, r2;
    struct placing pl;
    struct sums sq;
    size_t rows = 0, in_ct_from = 0, in_ct_to = SIZE_MAX;
    __mmask8 all = (__mmask8)((1u << n) - 1);

    for (unsigned j = 0; j < n; j++) {
        uint64_t k0 = get_le64(lanes[j].key) & clamp_lo;
        uint64_t k1 = get_le64(lanes[j].key + 8) & clamp_hi;
        rl[0][j] = k0 & MASK44;
        rl[1][j] = ((k0 >> LIMB_BITS) | (k1 << (64 - LIMB_BITS))) & MASK44;
        rl[2][j] = k1 >> (2 * LIMB_BITS - 64);
        lane_prepare(&blk[j], &lanes[j]);
        if (blk[j].total > rows)
            rows = blk[j].total;
    }
    rows += rows % 2;                               /* whole steps of two rows */
    for (unsigned j = 0; j < POLY1305_MULTI_LANES; j++) {
        if (j >= n) {                               /* an unused lane: never live */
            start[j] = tail_row[j] = (long long)rows;
            continue;
        }
        start[j] = (long long)(rows - blk[j].total);
        tail_row[j] = start[j] + (long long)blk[j].full;
        /* Addresses as integers: row t's block is at X_at + t * BLOCK. */
        ct_at[j] = (long long)((uintptr_t)lanes[j].ct - (uintptr_t)start[j] * BLOCK);
        tail_at[j] = (long long)((uintptr_t)blk[j].tail[0] - (uintptr_t)tail_row[j] * BLOCK);
        if ((size_t)start[j] > in_ct_from)
            in_ct_from = (size_t)start[j];
        if ((size_t)tail_row[j] < in_ct_to)
            in_ct_to = (size_t)tail_row[j];
    }
    pl.start = _mm512_loadu_si512(start);
    pl.tail_row = _mm512_loadu_si512(tail_row);
    pl.ct_at = _mm512_loadu_si512(ct_at);
    pl.tail_at = _mm512_loadu_si512(tail_at);
    for (unsigned i = 0; i < 3; i++) {
        r[i] = _mm512_loadu_si512(rl[i]);
        h[i] = _mm512_setzero_si512();
    }
    power_of(&r1, r);
    sums_zero(&sq);
    mul_add(&sq, r, r1.r, r1.s);
    carry(rr, &sq);                                 /* r^2, limbs as after a step */
    power_of(&r2, rr);
    for (size_t t = 0; t < rows; t += 2) {
        struct row mb, nb;
        if (t >= in_ct_from && t + 2 <= in_ct_to) {      /* the common case, cheaper */
            row_in_ct(&mb, &pl, t, all);
            row_in_ct(&nb, &pl, t + 1, all);
        } else {
            row_at(&mb, &pl, t);
            row_at(&nb, &pl, t + 1);
        }
        step2(h, &r1, &r2, &mb, &nb);
    }
    for (unsigned i = 0; i < 3; i++)
        _mm512_storeu_si512(hv[i], h[i]);
    for (unsigned j = 0; j < n; j++)
        finish(lanes[j].tag, hv[0][j], hv[1][j], hv[2][j], lanes[j].key + 16);
    sodium_memzero(rl, sizeof(rl));
    sodium_memzero(hv, sizeof(hv));
    sodium_memzero(blk, sizeof(blk));
    AEAD_STACK_POINTER(*deepest);
}

/* hash_lanes spills r, r^2 and the accumulators from vector registers into
 * its frame, whose size depends on the compiler and its flags (three times
 * larger under ASan): it says how deep it went, and that much is wiped. */
void poly1305_multi_aead(const struct poly1305_lane *lanes, unsigned n)
{
    uintptr_t here, deepest;

    if (n == 0 || n > POLY1305_MULTI_LANES)
        return;
    AEAD_STACK_POINTER(here);
    hash_lanes(lanes, n, &deepest);
    aead_stack_scrub(here - deepest + AEAD_WIPE_MARGIN);
}
