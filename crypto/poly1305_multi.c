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
 * Bounds: clamping keeps r0, r1 < 2^44 and r2 < 2^36; the limbs stay
 * below 2^46 after a block is added, so every operand fits 52 bits and
 * every sum 64. */
#include <immintrin.h>
#include <stdint.h>
#include <string.h>

#include <sodium.h>

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

static uint64_t load_le64(const uint8_t *p)
{
    uint64_t v = 0;

    for (unsigned i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static void store_le64(uint8_t *p, uint64_t v)
{
    for (unsigned i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
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
    store_le64(b->tail[t] + 8, (uint64_t)l->len);      /* le64(adlen = 0) || le64(len) */
    b->total = b->full + t + 1;
}

static const uint8_t *block_at(const struct lane_blocks *b, const struct poly1305_lane *l,
                               size_t row)
{
    return row < b->full ? l->ct + row * BLOCK : b->tail[row - b->full];
}

__attribute__((target("avx512f")))
static inline __m512i times5(__m512i x)
{
    return _mm512_add_epi64(_mm512_slli_epi64(x, 2), x);
}

/* h = (h + m) * r, for the lanes in mask. */
__attribute__((target("avx512f,avx512ifma")))
static void step(__m512i h[3], const __m512i r[3], const __m512i s[3], __m512i lo, __m512i hi,
                 __mmask8 mask)
{
    const __m512i m44 = _mm512_set1_epi64((long long)MASK44);
    const __m512i m42 = _mm512_set1_epi64((long long)MASK42);
    const __m512i zero = _mm512_setzero_si512();
    __m512i h0, h1, h2, l0, l1, l2, u0, u1, u2, c;

    h0 = _mm512_add_epi64(h[0], _mm512_and_si512(lo, m44));
    h1 = _mm512_add_epi64(h[1], _mm512_and_si512(_mm512_or_si512(_mm512_srli_epi64(lo, 44),
                                                                 _mm512_slli_epi64(hi, 20)), m44));
    h2 = _mm512_add_epi64(h[2], _mm512_or_si512(_mm512_srli_epi64(hi, 24),
                                                _mm512_set1_epi64((long long)HIBIT)));

    /* Three independent multiply-adds per sum, added after: a shorter
     * dependency chain than one accumulator. */
#define SUM3(f, a0, b0, a1, b1, a2, b2)                                       \
    _mm512_add_epi64(_mm512_add_epi64(f(zero, a0, b0), f(zero, a1, b1)), f(zero, a2, b2))
    l0 = SUM3(_mm512_madd52lo_epu64, h0, r[0], h1, s[2], h2, s[1]);
    u0 = SUM3(_mm512_madd52hi_epu64, h0, r[0], h1, s[2], h2, s[1]);
    l1 = SUM3(_mm512_madd52lo_epu64, h0, r[1], h1, r[0], h2, s[2]);
    u1 = SUM3(_mm512_madd52hi_epu64, h0, r[1], h1, r[0], h2, s[2]);
    l2 = SUM3(_mm512_madd52lo_epu64, h0, r[2], h1, r[1], h2, r[0]);
    u2 = SUM3(_mm512_madd52hi_epu64, h0, r[2], h1, r[1], h2, r[0]);
#undef SUM3

    /* The high halves move up one limb (x 2^8); d2's wraps past 2^130. */
    l0 = _mm512_add_epi64(l0, times5(_mm512_slli_epi64(u2, FOLD_SHIFT)));
    l1 = _mm512_add_epi64(l1, _mm512_slli_epi64(u0, HI_SHIFT));
    l2 = _mm512_add_epi64(l2, _mm512_slli_epi64(u1, HI_SHIFT));
    c = _mm512_srli_epi64(l0, LIMB_BITS);
    h0 = _mm512_and_si512(l0, m44);
    l1 = _mm512_add_epi64(l1, c);
    c = _mm512_srli_epi64(l1, LIMB_BITS);
    h1 = _mm512_and_si512(l1, m44);
    l2 = _mm512_add_epi64(l2, c);
    c = _mm512_srli_epi64(l2, TOP_BITS);
    h2 = _mm512_and_si512(l2, m42);
    h0 = _mm512_add_epi64(h0, times5(c));
    c = _mm512_srli_epi64(h0, LIMB_BITS);
    h0 = _mm512_and_si512(h0, m44);
    h1 = _mm512_add_epi64(h1, c);

    h[0] = _mm512_mask_mov_epi64(h[0], mask, h0);
    h[1] = _mm512_mask_mov_epi64(h[1], mask, h1);
    h[2] = _mm512_mask_mov_epi64(h[2], mask, h2);
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
    sv = (unsigned __int128)load_le64(s) | (unsigned __int128)load_le64(s + 8) << 64;
    v += sv;
    store_le64(tag, (uint64_t)v);
    store_le64(tag + 8, (uint64_t)(v >> 64));
}

__attribute__((target("avx512f,avx512ifma")))
void poly1305_multi_aead(const struct poly1305_lane *lanes, unsigned n)
{
    struct lane_blocks blk[POLY1305_MULTI_LANES];
    uint64_t rl[3][POLY1305_MULTI_LANES] = { { 0 } }, mlo[POLY1305_MULTI_LANES],
             mhi[POLY1305_MULTI_LANES], hv[3][POLY1305_MULTI_LANES];
    __m512i h[3], r[3], s[3];
    size_t rows = 0, common = SIZE_MAX;
    long long base[POLY1305_MULTI_LANES] = { 0 };
    __mmask8 all = (__mmask8)((1u << n) - 1);

    if (n == 0 || n > POLY1305_MULTI_LANES)
        return;
    for (unsigned j = 0; j < n; j++) {
        uint64_t k0 = load_le64(lanes[j].key) & clamp_lo;
        uint64_t k1 = load_le64(lanes[j].key + 8) & clamp_hi;
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
        s[i] = _mm512_slli_epi64(times5(r[i]), 2);            /* 20 r */
        h[i] = _mm512_setzero_si512();
    }
    /* Rows where every lane has a whole ciphertext block: gathered. */
    __m512i at = _mm512_loadu_si512(base);
    const __m512i next = _mm512_set1_epi64(BLOCK);
    size_t row = 0;
    for (; row < common; row++) {
        __m512i lo = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), all, at, NULL, 1);
        __m512i hi = _mm512_mask_i64gather_epi64(_mm512_setzero_si512(), all,
                                                 _mm512_add_epi64(at, _mm512_set1_epi64(8)),
                                                 NULL, 1);
        step(h, r, s, lo, hi, all);
        at = _mm512_add_epi64(at, next);
    }
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
        step(h, r, s, _mm512_loadu_si512(mlo), _mm512_loadu_si512(mhi), mask);
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
}
