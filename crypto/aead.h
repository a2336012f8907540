/* SPDX-License-Identifier: MIT */
/* The two AEADs of the protocol: ChaCha20-Poly1305 (RFC 8439) for handshake
 * fields and transport data, XChaCha20-Poly1305 for cookie replies, behind
 * one small interface with two backends chosen at run time: libsodium
 * (crypto/aead_sodium.c, always built) and OpenSSL's libcrypto
 * (crypto/aead_openssl.c, built when DDPNET_HAVE_OPENSSL is defined). The
 * dispatch, the nonce layouts and the length limits live in crypto/aead.c,
 * so both backends see the same checked input and give the same output.
 *
 * Opening never writes to dst unless the tag verifies, with either backend
 * and in place or not: both compute the tag over the ciphertext first and
 * decrypt only after it matched.
 *
 * XChaCha20-Poly1305 is HChaCha20 from libsodium (OpenSSL 3.0 has neither
 * HChaCha20 nor an XChaCha AEAD), then the IETF AEAD of the selected backend. */
#ifndef DDPNET_AEAD_H
#define DDPNET_AEAD_H

#include <stddef.h>
#include <stdint.h>

#include "crypto/wg_const.h"

enum aead_backend {
    AEAD_BACKEND_SODIUM,
    AEAD_BACKEND_OPENSSL,
    AEAD_BACKEND_COUNT       /* not a backend: how many there are */
};

/* Environment variable that picks the backend: "sodium" or "openssl". */
#define AEAD_BACKEND_ENV "DDPNET_AEAD"

/* Must be called once before any other crypto function (sodium_init). Its
 * first successful call also selects the AEAD backend: $DDPNET_AEAD when
 * set and not empty, else aead_set_default_backend(); later calls keep
 * whatever is selected by then. Returns 0, -EIO when
 * libsodium cannot start, -EINVAL when $DDPNET_AEAD names no backend,
 * -EOPNOTSUPP when it names one that is not built in or not usable. */
int crypto_core_init(void);

/* Selects the backend for every later call, in every thread. Returns 0,
 * -EINVAL for a value that is no backend, -EOPNOTSUPP for one not built in
 * (or whose library lacks ChaCha20-Poly1305, as a FIPS-only OpenSSL does),
 * -ENOMEM when the calling thread's context cannot be allocated. On error
 * the selection is unchanged. */
int aead_set_backend(enum aead_backend backend);
/* The default: OpenSSL when built in and usable, except for messages under
 * AEAD_SMALL_LEN bytes, which libsodium serves faster; else libsodium for
 * all. Returns 0, or -ENOMEM as aead_set_backend. */
#define AEAD_SMALL_LEN 384u
int aead_set_default_backend(void);
/* Test seams (the daemon only sets a backend; the tests and the benchmark
 * ask which): the backend of messages of AEAD_SMALL_LEN bytes and more
 * (the one set, or OpenSSL under the default); aead_backend_for(len): the
 * one that serves a message of len bytes; aead_backend_available: 1 when
 * the backend is built in and usable, else 0; aead_backend_name:
 * "sodium", "openssl", NULL for a value that is no backend. */
enum aead_backend aead_get_backend(void);
enum aead_backend aead_backend_for(size_t len);
int aead_backend_available(enum aead_backend backend);
const char *aead_backend_name(enum aead_backend backend);
/* The inverse of aead_backend_name: 0, or -EINVAL (out untouched) when name
 * (exact, lower case) is none of them or NULL. */
int aead_backend_parse(const char *name, enum aead_backend *out);

/* A backend may keep per-thread state (OpenSSL: its cipher and MAC
 * contexts, made on first use). aead_thread_init makes it now, so that a
 * worker thread learns of -ENOMEM at its start rather than on a packet
 * (where aead_seal, which has no status, would abort). aead_thread_cleanup
 * frees it, wiping the key it last held; it also runs by itself when a
 * thread exits. Both are no-ops for libsodium. */
int aead_thread_init(void);
void aead_thread_cleanup(void);

/* WireGuard's nonce: 32 zero bits then the 64-bit counter, little-endian.
 * dst receives len + WG_AEAD_TAG_LEN bytes; dst may equal src. Aborts (no
 * status to return) on a length no buffer can have, or if the backend
 * fails inside, which only a failed allocation can cause. */
void aead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen, uint64_t counter,
               const uint8_t key[WG_KEY_LEN]);
/* len includes the tag. Returns 0; -EBADMSG (dst untouched) when
 * authentication fails or len < tag; -EMSGSIZE for a length beyond the
 * AEAD's limit; -ENOMEM or -EIO (dst untouched) when the OpenSSL backend
 * cannot allocate its thread context or libcrypto fails inside. */
int aead_open(uint8_t *dst, const uint8_t *src, size_t len,
              const uint8_t *ad, size_t adlen, uint64_t counter,
              const uint8_t key[WG_KEY_LEN]);

/* A batch of transport messages sealed or opened in place under one key
 * (no AD; the nonce is WireGuard's counter nonce): the segments of one
 * super-packet, or the datagrams of one GRO receive. */
struct aead_msg {
    uint8_t *buf;          /* seal: plaintext, the tag is written after it;
                            * open: ciphertext, followed by its tag */
    size_t len;            /* without the tag */
    uint64_t counter;
    int status;            /* open: 0, or -EBADMSG with buf untouched */
};

/* The same results as aead_seal / aead_open on each message, in place.
 * On a CPU with AVX-512 and at least AEAD_BATCH_MIN messages, the ChaCha20
 * of up to 16 of them runs at once (crypto/chacha_multi.h) and, with IFMA,
 * their Poly1305 eight at a time (crypto/poly1305_multi.h), else from the
 * selected backend; without AVX-512, one backend call per message. An open
 * verifies every tag before it decrypts anything. Seal aborts as aead_seal
 * does on a length no buffer can have. */
#define AEAD_BATCH_MIN 4u
/* The multi-message paths the batch calls may take where the CPU runs
 * them: all by default; $DDPNET_AEAD_MULTI=0 or $DDPNET_CPU=baseline in
 * the environment (read at the first batch) turns them off, so every
 * message goes to the backend.
 * aead_multi_paths sets the mask (ANDed with what the CPU runs) for tests
 * and benchmarks, and returns the one before. */
#define AEAD_MULTI_ENV    "DDPNET_AEAD_MULTI"
#define AEAD_CPU_ENV      "DDPNET_CPU"
#define AEAD_CPU_BASELINE "baseline"
#define AEAD_MULTI_CHACHA 1u
#define AEAD_MULTI_POLY   2u
unsigned aead_multi_paths(unsigned mask);
void aead_seal_batch(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN]);
void aead_open_batch(struct aead_msg *msgs, unsigned n, const uint8_t key[WG_KEY_LEN]);

/* Messages authenticated whole but encrypted only in part (relay frames,
 * crypto/relay_frame.h): the tag is RFC 8439's with no AD over buf[0..len)
 * taken as ciphertext, written at buf + len; the bytes [enc_off, enc_off +
 * enc_len) of buf, within len, are encrypted with the keystream from block
 * 1 on (block 0 is the Poly1305 key, as in the AEAD). So a message costs a
 * Poly1305 pass over len bytes and ChaCha20 over enc_len, where a sealed
 * one costs both over all of it. Nonce: the counter, as above. Batched as
 * aead_seal_batch is (ChaCha20 16 at a time, Poly1305 8 at a time where
 * the CPU runs them); an open checks the tag before it decrypts. */
struct aead_part {
    uint8_t *buf;
    size_t len;            /* authenticated bytes; the tag follows them */
    size_t enc_off, enc_len;
    uint64_t counter;
    int status;            /* open: 0, or -EBADMSG with buf untouched */
};
/* Seal aborts as aead_seal does on a length no buffer can have, or an
 * encrypted part outside len. */
void aead_seal_part_batch(struct aead_part *msgs, unsigned n, const uint8_t key[WG_KEY_LEN]);
void aead_open_part_batch(struct aead_part *msgs, unsigned n, const uint8_t key[WG_KEY_LEN]);

/* The same with an explicit nonce of noncelen bytes; -EINVAL unless
 * noncelen is WG_AEAD_NONCE_LEN. A test seam: the RFC vectors' nonces
 * are not WireGuard's counters; the daemon calls aead_seal/aead_open. */
int aead_seal_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN]);
int aead_open_nonce(uint8_t *dst, const uint8_t *src, size_t len,
                    const uint8_t *ad, size_t adlen,
                    const uint8_t *nonce, size_t noncelen,
                    const uint8_t key[WG_KEY_LEN]);

/* XChaCha20-Poly1305; -EINVAL unless noncelen is WG_XAEAD_NONCE_LEN. */
int xaead_seal(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN]);
int xaead_open(uint8_t *dst, const uint8_t *src, size_t len,
               const uint8_t *ad, size_t adlen,
               const uint8_t *nonce, size_t noncelen,
               const uint8_t key[WG_KEY_LEN]);

#ifdef DDPNET_AEAD_INTERNAL
/* --- between crypto/aead.c, its backends and poly1305_multi.c (for the
 * stack scrub); no other file defines DDPNET_AEAD_INTERNAL. The dispatch has checked every length: len (the
 * plaintext, without the tag) fits the AEAD, and the tag of an open lies at
 * src + len. Each returns 0 or a negative errno. seal and open leave the
 * stack below them as their library left it: aead.c wipes it after each
 * call, or after a batch's group of calls (aead_stack_scrub). */
struct aead_ops {
    enum aead_backend id;
    int (*seal)(uint8_t *dst, const uint8_t *src, size_t len,
                const uint8_t *ad, size_t adlen,
                const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN]);
    int (*open)(uint8_t *dst, const uint8_t *src, size_t len,
                const uint8_t *ad, size_t adlen,
                const uint8_t nonce[WG_AEAD_NONCE_LEN], const uint8_t key[WG_KEY_LEN]);
    /* The RFC 8439 tag over ad and ct under a Poly1305 key (keystream
     * block 0), for the batch path; the caller wipes the stack after a
     * group of them (aead_stack_scrub). */
    int (*mac)(uint8_t tag[WG_AEAD_TAG_LEN], const uint8_t polykey[WG_POLY1305_KEY_LEN],
               const uint8_t *ad, size_t adlen, const uint8_t *ct, size_t ctlen);
    int (*thread_init)(void);
    void (*thread_cleanup)(void);
};

/* libsodium is always there; OpenSSL's table is NULL when it is not built
 * in or its libcrypto cannot serve ChaCha20 and Poly1305. */
extern const struct aead_ops aead_sodium_backend;
const struct aead_ops *aead_openssl_ops(void);

/* Zeroes len bytes of stack below the caller's frame: the vector ChaCha20
 * code of both libraries leaves key words there (libcrypto the whole key
 * on its one-block path; both, as broadcast words, on their AVX2 paths)
 * and wipes nothing. Called with AEAD_STACK_SCRUB_LEN by aead.c after
 * each backend call (or, in batches, each group of them), one or two small
 * frames above the depth the library calls ran at; their deepest use
 * measured here is about 1 KiB. About 30 ns; once a group, not once a
 * message, since it showed as 1.5-3% of a daemon's samples. poly1305_multi passes the depth it measured itself. */
#define AEAD_STACK_SCRUB_LEN 4096u
void aead_stack_scrub(size_t len);
/* The vector code of our own (chacha_multi, poly1305_multi) measures
 * instead: its worker says how deep its frame went (the stack pointer,
 * x86-64 like the rest), and its caller wipes that much and a margin for
 * the wipe's own frame and a return address. */
#define AEAD_STACK_POINTER(sp) __asm__ __volatile__("mov %%rsp, %0" : "=r"(sp))
#define AEAD_WIPE_MARGIN 256u

/* Shared by the backends: the padding that brings len to a whole Poly1305
 * block, and the closing block le64(adlen) || le64(ctlen). */
size_t aead_pad_len(size_t len);
void aead_length_block(uint8_t out[WG_POLY1305_BLOCK_LEN], size_t adlen, size_t ctlen);
#endif

#endif
