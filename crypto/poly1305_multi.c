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
 * bits, also after the x 2^10 x 5 fold. */
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

static const uint8_t *block_at(const struct lane_blocks *b, const struct poly1305_lane *l,
                               size_t row)
{
    return row < b->full ? l->ct + row * BLOCK : b->tail[row - b->full];
}

#define VEC_FN __attribute__((target("avx512f,avx512ifma"), always_inline)) static inline

VEC_FN __m512i times5(__m512i x)
{
    return _mm512_add_epi64(_mm512_slli_epi64(x, 2), x);
}

/* The limbs of a block (its two little-endian words, lo and hi), with
 * the 2^128 pad bit. */
VEC_FN void block_limbs(__m512i m[3], __m512i lo, __m512i hi)
{
    const __m512i m44 = _mm512_set1_epi64((long long)MASK44);

    m[0] = _mm512_and_si512(lo, m44);
    m[1] = _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(lo, 44), _mm512_slli_epi64(hi, 20)),
                            m44);
    m[2] = _mm512_or_si512(_mm512_srli_epi64(hi, 24), _mm512_set1_epi64((long long)HIBIT));
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

/* h = (h + m) * r, for the lanes in mask. */
VEC_FN void step(__m512i h[3], const struct power *r1, __m512i lo, __m512i hi, __mmask8 mask)
{
    __m512i m[3], x[3], out[3];
    struct sums a;

    block_limbs(m, lo, hi);
    for (unsigned i = 0; i < 3; i++)
        x[i] = _mm512_add_epi64(h[i], m[i]);
    sums_zero(&a);
    mul_add(&a, x, r1->r, r1->s);
    carry(out, &a);
    for (unsigned i = 0; i < 3; i++)
        h[i] = _mm512_mask_mov_epi64(h[i], mask, out[i]);
}

/* Two blocks in one: h = ((h + m) * r + n) * r = (h + m) * r^2 + n * r.
 * The n * r products do not wait for h, and one carry serves both blocks,
 * so a block costs about half the dependent work of step(). All lanes. */
VEC_FN void step2(__m512i h[3], const struct power *r1, const struct power *r2, __m512i mlo,
                  __m512i mhi, __m512i nlo, __m512i nhi)
{
    __m512i m[3], n[3];
    struct sums a;

    block_limbs(m, mlo, mhi);
    block_limbs(n, nlo, nhi);
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

__attribute__((target("avx512f,avx512ifma"), noinline))
static void hash_lanes(const struct poly1305_lane *lanes, unsigned n, uintptr_t *deepest)
{
    struct lane_blocks blk[POLY1305_MULTI_LANES];
    uint64_t rl[3][POLY1305_MULTI_LANES] = { { 0 } }, mlo[POLY1305_MULTI_LANES],
             mhi[POLY1305_MULTI_LANES], hv[3][POLY1305_MULTI_LANES];
    __m512i h[3], r[3], rr[3];
    struct power r1, r2;
    struct sums sq;
    size_t rows = 0, common = SIZE_MAX;
    long long base[POLY1305_MULTI_LANES] = { 0 };
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
        if (blk[j].full < common)
            common = blk[j].full;
        base[j] = (long long)(uintptr_t)lanes[j].ct;
    }
    for (unsigned i = 0; i < 3; i++) {
        r[i] = _mm512_loadu_si512(rl[i]);
        h[i] = _mm512_setzero_si512();
    }
    power_of(&r1, r);
    sums_zero(&sq);
    mul_add(&sq, r, r1.r, r1.s);
    carry(rr, &sq);                                 /* r^2, limbs as after a step */
    power_of(&r2, rr);
    /* Rows where every lane has a whole ciphertext block: gathered. */
    __m512i at = _mm512_loadu_si512(base);
    const __m512i next = _mm512_set1_epi64(BLOCK);
    size_t row = 0;
    const __m512i eight = _mm512_set1_epi64(8);
#define GATHER(off) _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), all, \
                                                _mm512_add_epi64(at, off), NULL, 1)
    for (; row + 2 <= common; row += 2) {
        step2(h, &r1, &r2, GATHER(_mm512_setzero_si512()), GATHER(eight), GATHER(next),
              GATHER(_mm512_add_epi64(next, eight)));
        at = _mm512_add_epi64(at, _mm512_add_epi64(next, next));
    }
    if (row < common) {
        step(h, &r1, GATHER(_mm512_setzero_si512()), GATHER(eight), all);
        row++;
    }
#undef GATHER
    /* The rest, lane by lane: tails, length blocks, longer messages. */
    for (; row < rows; row++) {
        __mmask8 mask = 0;
        for (unsigned j = 0; j < n; j++) {
            if (row >= blk[j].total) {
                mlo[j] = mhi[j] = 0;
                continue;
            }
            const uint8_t *b = block_at(&blk[j], &lanes[j], row);
            memcpy(&mlo[j], b, 8);
            memcpy(&mhi[j], b + 8, 8);
            mask |= (__mmask8)(1u << j);
        }
        step(h, &r1, _mm512_loadu_si512(mlo), _mm512_loadu_si512(mhi), mask);
    }
    for (unsigned i = 0; i < 3; i++)
        _mm512_storeu_si512(hv[i], h[i]);
    for (unsigned j = 0; j < n; j++)
        finish(lanes[j].tag, hv[0][j], hv[1][j], hv[2][j], lanes[j].key + 16);
    sodium_memzero(rl, sizeof(rl));
    sodium_memzero(hv, sizeof(hv));
    sodium_memzero(blk, sizeof(blk));
    sodium_memzero(mlo, sizeof(mlo));
    sodium_memzero(mhi, sizeof(mhi));
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
