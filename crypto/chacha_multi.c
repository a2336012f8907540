/* SPDX-License-Identifier: MIT */
/* ChaCha20 for many messages at once (see chacha_multi.h). The state is
 * word-sliced: vector i holds state word i of every lane (message), so a
 * quarter round is four vector operations on 16 messages, and a pass over
 * the 20 rounds yields the same block index of all of them. A 16x16
 * transpose then turns the 16 word vectors into 16 lane vectors, each one
 * a lane's 64 keystream bytes in order. */
#define DDPNET_AEAD_INTERNAL            /* aead_stack_scrub */
#include <immintrin.h>
#include <string.h>

#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/chacha_multi.h"

#define WORDS      16u                 /* state words, and lanes per vector */
#define KEY_WORDS  8u
#define NONCE_WORDS 3u
#define WORD_KEY   4u                  /* where the key words start */
#define WORD_CTR   12u                 /* the block counter */
#define WORD_NONCE 13u                 /* where the nonce words start */
#define WORD_BITS  32u

_Static_assert(CHACHA_MULTI_LANES == WORDS, "one lane per word of a vector");

typedef uint32_t lanes16 __attribute__((vector_size(64)));

bool chacha_multi_available(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

#define ROTL(x, n) (((x) << (n)) | ((x) >> (WORD_BITS - (n))))
#define QUARTER(a, b, c, d)                                     \
    do {                                                        \
        a += b; d ^= a; d = ROTL(d, 16);                        \
        c += d; b ^= c; b = ROTL(b, 12);                        \
        a += b; d ^= a; d = ROTL(d, 8);                         \
        c += d; b ^= c; b = ROTL(b, 7);                         \
    } while (0)

/* Stage k of the transpose swaps bit k of the row and column index of
 * every element: rows r and r | 2^k trade the elements whose column has
 * that bit set against those whose column has it clear. Four stages swap
 * all four bits. Indices >= 16 pick from the second vector. Unrolled, so
 * that the rows stay in registers. */
#define STAGE(v, bit, keep_idx, swap_idx)                                   \
    do {                                                                    \
        _Pragma("GCC unroll 16")                                            \
        for (unsigned r = 0; r < WORDS; r++) {                              \
            if (r & (bit))                                                  \
                continue;                                                   \
            lanes16 a = (v)[r], b = (v)[r | (bit)];                         \
            (v)[r] = __builtin_shufflevector(a, b, keep_idx);               \
            (v)[r | (bit)] = __builtin_shufflevector(a, b, swap_idx);       \
        }                                                                   \
    } while (0)

#define KEEP1 0, 16, 2, 18, 4, 20, 6, 22, 8, 24, 10, 26, 12, 28, 14, 30
#define SWAP1 1, 17, 3, 19, 5, 21, 7, 23, 9, 25, 11, 27, 13, 29, 15, 31
#define KEEP2 0, 1, 16, 17, 4, 5, 20, 21, 8, 9, 24, 25, 12, 13, 28, 29
#define SWAP2 2, 3, 18, 19, 6, 7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31
#define KEEP4 0, 1, 2, 3, 16, 17, 18, 19, 8, 9, 10, 11, 24, 25, 26, 27
#define SWAP4 4, 5, 6, 7, 20, 21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31
#define KEEP8 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18, 19, 20, 21, 22, 23
#define SWAP8 8, 9, 10, 11, 12, 13, 14, 15, 24, 25, 26, 27, 28, 29, 30, 31

/* Block `block` of every lane: out[j] is lane j's 64 keystream bytes. The
 * working state is local and indexed by constants only, so it lives in
 * registers; out is the caller's, wiped when all passes are done. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void keystream_pass(const lanes16 init[WORDS], uint32_t block, lanes16 out[WORDS])
{
    lanes16 x[WORDS];

    _Pragma("GCC unroll 16")
    for (unsigned i = 0; i < WORDS; i++)
        x[i] = init[i];
    x[WORD_CTR] += block;
    for (unsigned i = 0; i < WG_CHACHA20_ROUNDS / 2; i++) {
        QUARTER(x[0], x[4], x[8], x[12]);
        QUARTER(x[1], x[5], x[9], x[13]);
        QUARTER(x[2], x[6], x[10], x[14]);
        QUARTER(x[3], x[7], x[11], x[15]);
        QUARTER(x[0], x[5], x[10], x[15]);
        QUARTER(x[1], x[6], x[11], x[12]);
        QUARTER(x[2], x[7], x[8], x[13]);
        QUARTER(x[3], x[4], x[9], x[14]);
    }
    _Pragma("GCC unroll 16")
    for (unsigned i = 0; i < WORDS; i++)
        x[i] += init[i];
    x[WORD_CTR] += block;
    STAGE(x, 1u, KEEP1, SWAP1);
    STAGE(x, 2u, KEEP2, SWAP2);
    STAGE(x, 4u, KEEP4, SWAP4);
    STAGE(x, 8u, KEEP8, SWAP8);
    _Pragma("GCC unroll 16")
    for (unsigned i = 0; i < WORDS; i++)
        out[i] = x[i];
}

/* The first pass's state, block counter 0: constants, key, nonces. */
__attribute__((target("avx512f")))
static void state_init(lanes16 init[WORDS], const uint8_t key[WG_KEY_LEN],
                       const struct chacha_lane *lanes, unsigned n)
{
    static const uint32_t sigma[4] = { WG_CHACHA20_SIGMA0, WG_CHACHA20_SIGMA1,
                                       WG_CHACHA20_SIGMA2, WG_CHACHA20_SIGMA3 };

    memset(init, 0, WORDS * sizeof(*init));
    for (unsigned i = 0; i < 4; i++)
        init[i] += sigma[i];
    for (unsigned i = 0; i < KEY_WORDS; i++)
        init[WORD_KEY + i] += get_le32(key + 4 * i);
    for (unsigned j = 0; j < n; j++)
        for (unsigned i = 0; i < NONCE_WORDS; i++)
            init[WORD_NONCE + i][j] = get_le32(lanes[j].nonce + 4 * i);
}

/* XORs keystream block b (>= 1) of a lane into its bytes, if it has any
 * there; a last partial block through a byte mask. */
__attribute__((target("avx512f,avx512bw"), always_inline))
static inline void xor_block(const struct chacha_lane *lane, uint32_t b, lanes16 ks)
{
    size_t off = (size_t)(b - 1) * WG_CHACHA20_BLOCK_LEN;

    if (off >= lane->len)
        return;
    size_t m = lane->len - off;
    __mmask64 k = m >= WG_CHACHA20_BLOCK_LEN ? ~(__mmask64)0 : (((__mmask64)1 << m) - 1);
    __m512i d = _mm512_maskz_loadu_epi8(k, lane->src + off);
    d = _mm512_xor_si512(d, (__m512i)ks);
    _mm512_mask_storeu_epi8(lane->dst + off, k, d);
}

__attribute__((target("avx512f,avx512bw"), noinline))
static void keystream_lanes(const uint8_t key[WG_KEY_LEN], const struct chacha_lane *lanes,
                            unsigned n, uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN],
                            uintptr_t *deepest)
{
    lanes16 init[WORDS], ks[WORDS];
    size_t longest = 0;

    for (unsigned j = 0; j < n; j++)
        if (lanes[j].len > longest)
            longest = lanes[j].len;
    uint32_t blocks = 1u + (uint32_t)((longest + WG_CHACHA20_BLOCK_LEN - 1) / WG_CHACHA20_BLOCK_LEN);

    state_init(init, key, lanes, n);
    if (block0) {
        keystream_pass(init, 0, ks);
        for (unsigned j = 0; j < n; j++)
            memcpy(block0[j], &ks[j], WG_CHACHA20_BLOCK_LEN);
    }
    for (uint32_t b = 1; b < blocks; b++) {
        keystream_pass(init, b, ks);
        _Pragma("GCC unroll 16")
        for (unsigned j = 0; j < WORDS; j++)
            if (j < n)
                xor_block(&lanes[j], b, ks[j]);
    }
    AEAD_STACK_POINTER(*deepest);
}

/* keystream_lanes keeps the state in vector registers and spills what
 * does not fit (key words among it) into its frame, whose size depends on
 * the compiler and its flags: it says how deep it went, and that much is
 * wiped, its state and keystream arrays with it. */
void chacha_multi(const uint8_t key[WG_KEY_LEN], const struct chacha_lane *lanes, unsigned n,
                  uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN])
{
    uintptr_t here, deepest;

    if (n == 0 || n > CHACHA_MULTI_LANES)
        return;
    AEAD_STACK_POINTER(here);
    keystream_lanes(key, lanes, n, block0, &deepest);
    aead_stack_scrub(here - deepest + AEAD_WIPE_MARGIN);
}
