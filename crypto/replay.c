/* SPDX-License-Identifier: MIT */
/* The transport anti-replay window (RFC 6479's sliding bitmap): which
 * counters behind the highest accepted one were already seen. Counter c
 * lives in ring word (c >> shift) & (words - 1), bit c & 63. `greatest` is
 * the highest accepted counter + 1, so 0 means nothing accepted yet and
 * needs no separate flag; every counter is then "newer". The ring keeps one
 * word more than the window needs, so the top word can fill up while the
 * oldest WG_REPLAY_WINDOW counters are still remembered. */
#include <stddef.h>
#include <string.h>

#include "crypto/replay.h"

#define REPLAY_WORDS      (WG_REPLAY_BITS_TOTAL / WG_REPLAY_WORD_BITS)
#define REPLAY_WORD_MASK  ((uint64_t)REPLAY_WORDS - 1u)
#define REPLAY_BIT_MASK   ((uint64_t)WG_REPLAY_WORD_BITS - 1u)
/* log2 of the word size, derived so that no other number is spelled. */
#define REPLAY_WORD_SHIFT ((unsigned)__builtin_ctz(WG_REPLAY_WORD_BITS))

_Static_assert(WG_REPLAY_WORD_BITS == 8u * sizeof(uint64_t),
               "a bitmap word is one uint64_t");
_Static_assert((WG_REPLAY_BITS_TOTAL & (WG_REPLAY_BITS_TOTAL - 1u)) == 0,
               "the ring index is a mask, so its size is a power of two");
_Static_assert(WG_REPLAY_WINDOW + WG_REPLAY_WORD_BITS <= WG_REPLAY_BITS_TOTAL,
               "the window plus a filling top word fit in the ring");
_Static_assert(WG_REJECT_AFTER_MESSAGES <= UINT64_MAX - WG_REPLAY_BITS_TOTAL,
               "counter + window cannot overflow below the reject limit");

void replay_init(struct replay_window *w)
{
    memset(w, 0, sizeof(*w));
}

/* Makes counter the highest one: the ring words from the old top word
 * (exclusive) up to the new one (inclusive) held counters of a previous lap
 * or none, so they are cleared. A jump of a whole ring or more clears every
 * word once, so even a jump of 2^60 costs at most REPLAY_WORDS stores. */
static void replay_advance(struct replay_window *w, uint64_t counter)
{
    uint64_t top = counter >> REPLAY_WORD_SHIFT;
    uint64_t n = REPLAY_WORDS;

    if (w->greatest != 0) {
        uint64_t old_top = (w->greatest - 1u) >> REPLAY_WORD_SHIFT;

        if (top - old_top < n)
            n = top - old_top;
    }
    for (uint64_t i = 0; i < n; i++)
        w->bitmap[(top - i) & REPLAY_WORD_MASK] = 0;
    w->greatest = counter + 1u;
}

int replay_check(struct replay_window *w, uint64_t counter)
{
    /* Beyond the limit the keypair is dead; also keeps counter + window
     * below overflow in the test after it. */
    if (counter >= WG_REJECT_AFTER_MESSAGES)
        return -WG_EREPLAY;
    /* More than WG_REPLAY_WINDOW behind the highest (greatest - 1): its
     * ring word may already hold a newer lap, so it cannot be judged. */
    if (w->greatest != 0 && counter + WG_REPLAY_WINDOW + 1u < w->greatest)
        return -WG_EREPLAY;
    if (counter >= w->greatest)
        replay_advance(w, counter);

    uint64_t *word = &w->bitmap[(counter >> REPLAY_WORD_SHIFT) & REPLAY_WORD_MASK];
    uint64_t bit = UINT64_C(1) << (counter & REPLAY_BIT_MASK);

    if (*word & bit)
        return -WG_EREPLAY;
    *word |= bit;
    return 0;
}
