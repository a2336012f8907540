/* SPDX-License-Identifier: MIT */
/* The AEAD dispatch: which backend serves (crypto_core_init's choice,
 * aead_set_backend), WireGuard's nonce layouts, the length limits, and
 * XChaCha20 on top of whichever IETF AEAD is selected. Everything a backend
 * could get wrong about its input is checked here once, so that the
 * backends (crypto/aead_sodium.c, crypto/aead_openssl.c) only do the
 * cryptography and both give byte-for-byte the same results. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#define DDPNET_AEAD_INTERNAL
#include "crypto/aead.h"
#include "crypto/bytes.h"
#include "crypto/chacha_multi.h"
#include "crypto/poly1305_multi.h"

/* The 12-byte IETF nonce ends with a 64-bit field: WireGuard's counter, or
 * the tail of an XChaCha20 nonce. What precedes it stays zero. */
#define NONCE_PREFIX_LEN (WG_AEAD_NONCE_LEN - sizeof(uint64_t))
/* The part of an XChaCha20 nonce that HChaCha20 consumes. */
#define XNONCE_HEAD_LEN  crypto_core_hchacha20_INPUTBYTES
/* Tags are compared with crypto_verify_16: constant time, as
 * sodium_memcmp, and cheaper (that one takes its bytes one at a time
 * through a volatile), a cost paid on every message opened. */
_Static_assert(WG_AEAD_TAG_LEN == crypto_verify_16_BYTES, "tags are 16 bytes");

static const char *const backend_names[AEAD_BACKEND_COUNT] = {
    [AEAD_BACKEND_SODIUM] = "sodium",
    [AEAD_BACKEND_OPENSSL] = "openssl",
};

/* Read on every seal and open, from any thread; written by set_backend.
 * Atomic so that a switch while traffic flows is a clean hand-over: each
 * call runs wholly on the one backend it loaded. `small` serves messages
 * under AEAD_SMALL_LEN: the same as `active` when a backend was named,
 * libsodium under the default choice. */
static const struct aead_ops *active = &aead_sodium_backend;
static const struct aead_ops *small = &aead_sodium_backend;
/* Set once crypto_core_init has applied $DDPNET_AEAD or the default. */
static int backend_chosen;

/* Largest plaintext either AEAD accepts: the IETF block counter is 32 bits
 * (XChaCha20 runs through the same IETF stream here), and len + tag must
 * still fit a size_t. */
static int aead_len_ok(size_t len)
{
    return len <= SIZE_MAX - WG_AEAD_TAG_LEN &&
           (uint64_t)len <= (uint64_t)crypto_aead_chacha20poly1305_ietf_MESSAGEBYTES_MAX;
}

static const struct aead_ops *backend_ops(enum aead_backend backend)
{
    switch (backend) {
    case AEAD_BACKEND_SODIUM:
        return &aead_sodium_backend;
    case AEAD_BACKEND_OPENSSL:
        return aead_openssl_ops();
    default:
        return NULL;
    }
}

static int backend_valid(enum aead_backend backend)
{
    return (unsigned)backend < AEAD_BACKEND_COUNT;
}

const char *aead_backend_name(enum aead_backend backend)
{
    return backend_valid(backend) ? backend_names[backend] : NULL;
}

int aead_backend_parse(const char *name, enum aead_backend *out)
{
    if (!name)
        return -EINVAL;
    for (unsigned i = 0; i < AEAD_BACKEND_COUNT; i++) {
        if (strcmp(name, backend_names[i]) == 0) {
            *out = (enum aead_backend)i;
            return 0;
        }
    }
    return -EINVAL;
}

int aead_backend_available(enum aead_backend backend)
{
    return backend_valid(backend) && backend_ops(backend) != NULL;
}

int aead_set_backend(enum aead_backend backend)
{
    const struct aead_ops *ops;
    int ret;

    if (!backend_valid(backend))
        return -EINVAL;
    ops = backend_ops(backend);
    if (!ops)
        return -EOPNOTSUPP;
    /* The caller's own thread learns of -ENOMEM now, not on a packet. */
    ret = ops->thread_init();
    if (ret)
        return ret;
    __atomic_store_n(&small, ops, __ATOMIC_RELEASE);
    __atomic_store_n(&active, ops, __ATOMIC_RELEASE);
    return 0;
}

/* libcrypto pays a larger set-up a call than libsodium (its EVP parameter
 * machinery): below AEAD_SMALL_LEN bytes (TCP ACKs, handshakes,
 * keepalives) libsodium is the faster one, above it libcrypto
 * (bench/README.md). */
int aead_set_default_backend(void)
{
    int ret = aead_set_backend(AEAD_BACKEND_OPENSSL);

    if (ret)
        return aead_set_backend(AEAD_BACKEND_SODIUM);
    __atomic_store_n(&small, &aead_sodium_backend, __ATOMIC_RELEASE);
    return 0;
}

static const struct aead_ops *active_ops(void)
{
    return __atomic_load_n(&active, __ATOMIC_ACQUIRE);
}

static const struct aead_ops *ops_for(size_t len)
{
    return len < AEAD_SMALL_LEN ? __atomic_load_n(&small, __ATOMIC_ACQUIRE) : active_ops();
}

enum aead_backend aead_backend_for(size_t len)
{
    return ops_for(len)->id;
}

/* From the table itself, so it names what really serves. */
enum aead_backend aead_get_backend(void)
{
    return active_ops()->id;
}

int aead_thread_init(void)
{
    return active_ops()->thread_init();
}

/* Every backend, not only the active one: a thread may hold state from
 * before a switch. */
void aead_thread_cleanup(void)
{
    for (unsigned i = 0; i < AEAD_BACKEND_COUNT; i++) {
        const struct aead_ops *ops = backend_ops((enum aead_backend)i);

        if (ops)
            ops->thread_cleanup();
    }
}

/* $DDPNET_AEAD when set, else the fastest built in for each size
 * (aead_set_default_backend; bench/aead_bench.c measures both). */
static int backend_choose(const char *env)
{
    enum aead_backend backend;

    if (env && *env) {
        if (aead_backend_parse(env, &backend))
            return -EINVAL;
        return aead_set_backend(backend);
    }
    return aead_set_default_backend();
}

int crypto_core_init(void)
{
    /* 1 means an earlier call already initialised the library. */
    int ret = sodium_init();

    if (ret != 0 && ret != 1)
        return -EIO;
    if (__atomic_load_n(&backend_chosen, __ATOMIC_ACQUIRE))
        return 0;
    /* getenv, not secure_getenv: a binary with file capabilities should
     * still obey it, and either value only picks between correct backends. */
    ret = backend_choose(getenv(AEAD_BACKEND_ENV));
    if (ret == 0)
        __atomic_store_n(&backend_chosen, 1, __ATOMIC_RELEASE);
    return ret;
}

/* --- shared by the backends ------------------------------------------------ */

/* Its frame takes the place of the frames that ran before it. */
__attribute__((noinline))
void aead_stack_scrub(size_t len)
{
    uint8_t area[len];

    sodium_memzero(area, len);
    __asm__ __volatile__("" : : "r"(area) : "memory");
}

size_t aead_pad_len(size_t len)
{
    return (WG_POLY1305_BLOCK_LEN - len % WG_POLY1305_BLOCK_LEN) % WG_POLY1305_BLOCK_LEN;
}

void aead_length_block(uint8_t out[WG_POLY1305_BLOCK_LEN], size_t adlen, size_t ctlen)
{
    put_le64(out, (uint64_t)adlen);
    put_le64(out + sizeof(uint64_t), (uint64_t)ctlen);
}

/* --- nonces and the checked entry points --------------------------------------- */

static void counter_nonce(uint8_t nonce[WG_AEAD_NONCE_LEN], uint64_t counter)
{
    memset(nonce, 0, NONCE_PREFIX_LEN);
    put_le64(nonce + NONCE_PREFIX_LEN, counter);
}

/* XChaCha20: the first 16 nonce bytes and the key give a subkey; the last 8
 * nonce bytes become the IETF nonce, behind four zero bytes. */
static void xnonce_derive(uint8_t subkey[WG_KEY_LEN], uint8_t nonce[WG_AEAD_NONCE_LEN],
                          const uint8_t xnonce[WG_XAEAD_NONCE_LEN],
                          const uint8_t key[WG_KEY_LEN])
{
    crypto_core_hchacha20(subkey, xnonce, key, NULL);
    memset(nonce, 0, NONCE_PREFIX_LEN);
    memcpy(nonce + NONCE_PREFIX_LEN, xnonce + XNONCE_HEAD_LEN,
           WG_XAEAD_NONCE_LEN - XNONCE_HEAD_LEN);
}

/* One message through the backend, which leaves key words on the stack
 * below: the caller wipes it (aead_stack_scrub), after each message or,
 * in a batch, once after a group of them. */
static int seal_unscrubbed(uint8_t *dst, const uint8_t *src, size_t len,
                           const uint8_t *ad, size_t adlen,
                           const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    if (!aead_len_ok(len))
        return -EMSGSIZE;
    return ops_for(len)->seal(dst, src, len, ad, adlen, nonce, key);
}

static int open_unscrubbed(uint8_t *dst, const uint8_t *src, size_t len,
                           const uint8_t *ad, size_t adlen,
                           const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    size_t mlen;

    if (len < WG_AEAD_TAG_LEN)
        return -EBADMSG;
    mlen = len - WG_AEAD_TAG_LEN;
    if (!aead_len_ok(mlen))
        return -EMSGSIZE;
    return ops_for(mlen)->open(dst, src, mlen, ad, adlen, nonce, key);
}

static int seal_ietf(uint8_t *dst, const uint8_t *src, size_t len,
                     const uint8_t *ad, size_t adlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    int ret = seal_unscrubbed(dst, src, len, ad, adlen, nonce, key);

    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
    return ret;
}

static int open_ietf(uint8_t *dst, const uint8_t *src, size_t len,
                     const uint8_t *ad, size_t adlen,
                     const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN])
{
    int ret = open_unscrubbed(dst, src, len, ad, adlen, nonce, key);

    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
    return ret;
}

/* aead_seal without the wipe, for a batch's group (its caller wipes). No
 * caller can own a dst too large to seal, and there is no status to
 * return: that is treated as libsodium treats misuse (its handler, then
 * abort), rather than hand back a buffer that was never written. */
static void seal_counter_unscrubbed(uint8_t *dst, const uint8_t *src, size_t len,
                                    const uint8_t *ad, size_t adlen, uint64_t counter,
                                    const uint8_t key[WG_KEY_LEN])
{
    uint8_t nonce[WG_AEAD_NONCE_LEN];

    counter_nonce(nonce, counter);
    if (seal_unscrubbed(dst, src, len, ad, adlen, nonce, key) != 0)
        sodium_misuse();
}

static int open_counter_unscrubbed(uint8_t *dst, const uint8_t *src, size_t len,
                                   const uint8_t *ad, size_t adlen, uint64_t counter,
                                   const uint8_t key[WG_KEY_LEN])
{
    uint8_t nonce[WG_AEAD_NONCE_LEN];

    counter_nonce(nonce, counter);
    return open_unscrubbed(dst, src, len, ad, adlen, nonce, key);
}

void aead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen, uint64_t counter,
               const uint8_t key[WG_KEY_LEN])
{
    seal_counter_unscrubbed(dst, src, len, ad, adlen, counter, key);
    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
}

int aead_open(uint8_t *dst, const uint8_t *src, size_t len,
              const uint8_t *ad, size_t adlen, uint64_t counter,
              const uint8_t key[WG_KEY_LEN])
{
    int ret = open_counter_unscrubbed(dst, src, len, ad, adlen, counter, key);

    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
    return ret;
}

/* --- batches (see aead_seal_batch) ----------------------------------------------- */

/* The multi-message paths in use: what this CPU runs, asked once, less
 * what $DDPNET_AEAD_MULTI=0, $DDPNET_CPU=baseline or aead_multi_paths
 * turned off. */
static int multi_usable = -1;

static unsigned cpu_paths(void)
{
    const char *env = getenv(AEAD_MULTI_ENV), *cpu = getenv(AEAD_CPU_ENV);

    if ((env && strcmp(env, "0") == 0) || (cpu && strcmp(cpu, AEAD_CPU_BASELINE) == 0))
        return 0;
    return (chacha_multi_available() ? AEAD_MULTI_CHACHA : 0) |
           (poly1305_multi_available() ? AEAD_MULTI_POLY : 0);
}

static unsigned multi(void)
{
    int usable = __atomic_load_n(&multi_usable, __ATOMIC_RELAXED);

    if (usable < 0) {
        usable = (int)cpu_paths();
        __atomic_store_n(&multi_usable, usable, __ATOMIC_RELAXED);
    }
    return (unsigned)usable;
}

unsigned aead_multi_paths(unsigned mask)
{
    unsigned before = multi();

    __atomic_store_n(&multi_usable, (int)(mask & cpu_paths()), __ATOMIC_RELAXED);
    return before;
}

static bool use_multi(unsigned n)
{
    return (multi() & AEAD_MULTI_CHACHA) && n >= AEAD_BATCH_MIN;
}

/* tags[j] = the AEAD tag (no AD) of msgs[j]'s first len bytes, under the
 * Poly1305 key in block0[j]: eight at a time where the CPU can, else
 * from the backend. Returns 0, or the backend's error. */
static int group_tags(const struct aead_msg *msgs, unsigned n,
                      uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN], uint8_t (*tags)[WG_AEAD_TAG_LEN])
{
    const struct aead_ops *ops = active_ops();
    int ret = 0;

    if (multi() & AEAD_MULTI_POLY) {
        struct poly1305_lane lanes[POLY1305_MULTI_LANES];
        for (unsigned at = 0; at < n; at += POLY1305_MULTI_LANES) {
            unsigned k = n - at < POLY1305_MULTI_LANES ? n - at : POLY1305_MULTI_LANES;
            for (unsigned j = 0; j < k; j++)
                lanes[j] = (struct poly1305_lane){ block0[at + j], msgs[at + j].buf,
                                                   msgs[at + j].len, tags[at + j] };
            poly1305_multi_aead(lanes, k);         /* wipes its own stack */
        }
        return 0;
    }
    for (unsigned j = 0; j < n && !ret; j++)
        ret = ops->mac(tags[j], block0[j], NULL, 0, msgs[j].buf, msgs[j].len);
    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
    return ret;
}

static void lane_of(struct chacha_lane *lane, const struct aead_msg *m, size_t len)
{
    lane->dst = m->buf;
    lane->src = m->buf;
    lane->len = len;
    counter_nonce(lane->nonce, m->counter);
}

/* Up to CHACHA_MULTI_LANES messages: encrypt all, then each one's tag. */
static void seal_group(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    struct chacha_lane lanes[CHACHA_MULTI_LANES];
    uint8_t block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    uint8_t tags[CHACHA_MULTI_LANES][WG_AEAD_TAG_LEN];

    for (unsigned j = 0; j < n; j++) {
        if (!aead_len_ok(msgs[j].len))
            sodium_misuse();
        lane_of(&lanes[j], &msgs[j], msgs[j].len);
    }
    chacha_multi(key, lanes, n, block0);
    if (group_tags(msgs, n, block0, tags))
        sodium_misuse();
    for (unsigned j = 0; j < n; j++) {
        memcpy(msgs[j].buf + msgs[j].len, tags[j], WG_AEAD_TAG_LEN);
        msgs[j].status = 0;
    }
    sodium_memzero(block0, sizeof(block0));
}

/* Up to CHACHA_MULTI_LANES messages: block 0 of each, every tag checked,
 * and only then the authentic ones decrypted. */
static void open_group(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    struct chacha_lane lanes[CHACHA_MULTI_LANES];
    uint8_t block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    uint8_t tags[CHACHA_MULTI_LANES][WG_AEAD_TAG_LEN];
    unsigned good = 0;

    for (unsigned j = 0; j < n; j++)
        lane_of(&lanes[j], &msgs[j], 0);
    chacha_multi(key, lanes, n, block0);
    int ret = group_tags(msgs, n, block0, tags);
    for (unsigned j = 0; j < n; j++) {
        struct aead_msg *m = &msgs[j];
        bool ok = !ret && crypto_verify_16(tags[j], m->buf + m->len) == 0;
        m->status = ok ? 0 : -EBADMSG;
        if (ok)
            lane_of(&lanes[good++], m, m->len);
    }
    if (good)
        chacha_multi(key, lanes, good, NULL);
    sodium_memzero(block0, sizeof(block0));
    sodium_memzero(tags, sizeof(tags));
}

void aead_seal_batch(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    while (n) {
        unsigned k = n < CHACHA_MULTI_LANES ? n : CHACHA_MULTI_LANES;

        if (use_multi(k)) {
            seal_group(msgs, k, key);
        } else {
            for (unsigned j = 0; j < k; j++) {
                seal_counter_unscrubbed(msgs[j].buf, msgs[j].buf, msgs[j].len, NULL, 0,
                                        msgs[j].counter, key);
                msgs[j].status = 0;
            }
            aead_stack_scrub(AEAD_STACK_SCRUB_LEN);   /* once for the group's seals */
        }
        msgs += k;
        n -= k;
    }
}

/* A length no buffer can have sends its group the one-message way,
 * which refuses it. */
static bool lengths_ok(const struct aead_msg *msgs, unsigned n)
{
    for (unsigned j = 0; j < n; j++)
        if (!aead_len_ok(msgs[j].len))
            return false;
    return true;
}

void aead_open_batch(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    while (n) {
        unsigned k = n < CHACHA_MULTI_LANES ? n : CHACHA_MULTI_LANES;

        if (use_multi(k) && lengths_ok(msgs, k)) {
            open_group(msgs, k, key);
        } else {
            for (unsigned j = 0; j < k; j++)
                msgs[j].status = open_counter_unscrubbed(msgs[j].buf, msgs[j].buf,
                                                         msgs[j].len + WG_AEAD_TAG_LEN, NULL, 0,
                                                         msgs[j].counter, key)
                                     ? -EBADMSG : 0;
            aead_stack_scrub(AEAD_STACK_SCRUB_LEN);   /* once for the group's opens */
        }
        msgs += k;
        n -= k;
    }
}

/* --- messages encrypted in part (see aead_seal_part_batch) ------------------------ */

static bool part_ok(const struct aead_part *m)
{
    return aead_len_ok(m->len) && m->enc_off <= m->len && m->enc_len <= m->len - m->enc_off;
}

/* block0[j] for each message, and, when `crypt` says so for message j,
 * its part XORed with the keystream from block 1: in one pass of the
 * multi-lane ChaCha20 where the CPU runs it, else message by message. */
static void part_keystream(struct aead_part *msgs, unsigned n, const bool *crypt,
                           uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN], const uint8_t key[WG_KEY_LEN])
{
    struct chacha_lane lanes[CHACHA_MULTI_LANES];

    for (unsigned j = 0; j < n; j++) {
        uint8_t *part = msgs[j].buf + msgs[j].enc_off;
        lanes[j] = (struct chacha_lane){ .dst = part, .src = part,
                                         .len = crypt && !crypt[j] ? 0 : msgs[j].enc_len };
        counter_nonce(lanes[j].nonce, msgs[j].counter);
    }
    if (multi() & AEAD_MULTI_CHACHA) {
        chacha_multi(key, lanes, n, block0);
        return;
    }
    for (unsigned j = 0; j < n; j++) {
        if (block0)
            crypto_stream_chacha20_ietf(block0[j], WG_CHACHA20_BLOCK_LEN, lanes[j].nonce, key);
        crypto_stream_chacha20_ietf_xor_ic(lanes[j].dst, lanes[j].src, lanes[j].len,
                                           lanes[j].nonce, 1, key);
    }
    aead_stack_scrub(AEAD_STACK_SCRUB_LEN);
}

/* The tags of up to CHACHA_MULTI_LANES messages under their block 0. */
static int part_tags(const struct aead_part *msgs, unsigned n,
                     uint8_t (*block0)[WG_CHACHA20_BLOCK_LEN], uint8_t (*tags)[WG_AEAD_TAG_LEN])
{
    struct aead_msg whole[CHACHA_MULTI_LANES];

    for (unsigned j = 0; j < n; j++)
        whole[j] = (struct aead_msg){ .buf = msgs[j].buf, .len = msgs[j].len };
    return group_tags(whole, n, block0, tags);
}

void aead_seal_part_batch(struct aead_part *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    uint8_t block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    uint8_t tags[CHACHA_MULTI_LANES][WG_AEAD_TAG_LEN];

    while (n) {
        unsigned k = n < CHACHA_MULTI_LANES ? n : CHACHA_MULTI_LANES;

        for (unsigned j = 0; j < k; j++)
            if (!part_ok(&msgs[j]))
                sodium_misuse();
        part_keystream(msgs, k, NULL, block0, key);
        if (part_tags(msgs, k, block0, tags))
            sodium_misuse();
        for (unsigned j = 0; j < k; j++) {
            memcpy(msgs[j].buf + msgs[j].len, tags[j], WG_AEAD_TAG_LEN);
            msgs[j].status = 0;
        }
        msgs += k;
        n -= k;
    }
    sodium_memzero(block0, sizeof(block0));
}

void aead_open_part_batch(struct aead_part *msgs, unsigned n, const uint8_t key[WG_KEY_LEN])
{
    uint8_t block0[CHACHA_MULTI_LANES][WG_CHACHA20_BLOCK_LEN];
    uint8_t tags[CHACHA_MULTI_LANES][WG_AEAD_TAG_LEN];
    struct aead_part view[CHACHA_MULTI_LANES];
    bool good[CHACHA_MULTI_LANES];

    while (n) {
        unsigned k = n < CHACHA_MULTI_LANES ? n : CHACHA_MULTI_LANES, any = 0;
        bool none[CHACHA_MULTI_LANES] = { false };

        /* One whose lengths no buffer can have is hashed as empty, and
         * fails. */
        for (unsigned j = 0; j < k; j++) {
            view[j] = msgs[j];
            if (!part_ok(&view[j]))
                view[j].len = view[j].enc_off = view[j].enc_len = 0;
        }
        part_keystream(view, k, none, block0, key);
        int ret = part_tags(view, k, block0, tags);
        for (unsigned j = 0; j < k; j++) {
            good[j] = !ret && view[j].len &&
                      crypto_verify_16(tags[j], view[j].buf + view[j].len) == 0;
            msgs[j].status = good[j] ? 0 : -EBADMSG;
            any += good[j];
        }
        if (any)
            part_keystream(view, k, good, NULL, key);
        msgs += k;
        n -= k;
    }
    sodium_memzero(block0, sizeof(block0));
    sodium_memzero(tags, sizeof(tags));
}

int aead_seal_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN])
{
    if (noncelen != WG_AEAD_NONCE_LEN)
        return -EINVAL;
    return seal_ietf(dst, src, len, ad, adlen, nonce, key);
}

int aead_open_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN])
{
    if (noncelen != WG_AEAD_NONCE_LEN)
        return -EINVAL;
    return open_ietf(dst, src, len, ad, adlen, nonce, key);
}

int xaead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN])
{
    uint8_t subkey[WG_KEY_LEN], inonce[WG_AEAD_NONCE_LEN];
    int ret;

    if (noncelen != WG_XAEAD_NONCE_LEN)
        return -EINVAL;
    xnonce_derive(subkey, inonce, nonce, key);
    ret = seal_ietf(dst, src, len, ad, adlen, inonce, subkey);
    sodium_memzero(subkey, sizeof(subkey));
    return ret;
}

int xaead_open(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN])
{
    uint8_t subkey[WG_KEY_LEN], inonce[WG_AEAD_NONCE_LEN];
    int ret;

    if (noncelen != WG_XAEAD_NONCE_LEN)
        return -EINVAL;
    xnonce_derive(subkey, inonce, nonce, key);
    ret = open_ietf(dst, src, len, ad, adlen, inonce, subkey);
    sodium_memzero(subkey, sizeof(subkey));
    return ret;
}
