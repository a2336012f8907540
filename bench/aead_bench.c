/* SPDX-License-Identifier: MIT */
/* AEAD throughput per crypto backend on one core: ChaCha20-Poly1305 seal
 * and open as the data path calls them (aead_seal/aead_open: counter
 * nonce, no AD) at 64, 1420 and 8192 bytes, then the AEAD floor of a
 * tunnel per backend, which `make bench` (bench/report.sh) compares the
 * daemons' CPU cost with.
 *
 * Each figure is the median of BENCH_RUNS runs of about 0.3 s of this
 * thread's CPU time (CLOCK_THREAD_CPUTIME_ID, so that other work on a shared
 * machine stretches the wall clock, not the figure), in Gbit/s of
 * plaintext. Before timing, every backend's output is checked against
 * libsodium's, so a fast wrong backend cannot win.
 *
 * Usage: aead_bench [SECONDS_PER_RUN]. Output, one fact per line:
 *   aead_bench: 5 runs of 0.30 CPU-s per figure, median, Gbit/s of plaintext
 *   aead seal (sodium) 1420 B: 7.40 Gbit/s
 *   aead open (sodium) 1420 B: 7.10 Gbit/s
 *   aead floor (sodium): 2.21 CPU-s per GB through a tunnel (seal+open)
 *   aead backend (openssl): not available
 *   aead fastest: sodium (2.21 CPU-s per GB)
 * The floor is (1/seal rate + 1/open rate) at 1420 bytes: the CPU seconds
 * that sealing at one end and opening at the other cost per GB moved.
 *
 * The data path seals and opens in batches (aead_seal_batch and
 * aead_open_batch: a super-packet's segments, a GRO receive's datagrams),
 * so each backend is also measured that way, in batches of
 * BENCH_BATCH_MSGS messages of 1420 bytes, in place:
 *   aead seal batch (openssl) 1420 B: 14.10 Gbit/s
 *   aead open batch (openssl) 1420 B: 13.90 Gbit/s
 *   aead floor (openssl, batches): 1.14 CPU-s per GB through a tunnel (seal+open)
 * An open in place leaves plaintext, so the open figure comes from rounds
 * of open then seal back, less the seal's share; the batch floor is that
 * round trip's CPU time per GB. The floor `make bench` uses is the lowest
 * of all, so batching can never flatter the daemons' ratio to it. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sodium.h>

#include "crypto/aead.h"

#define BENCH_RUNS        5
#define BENCH_RUN_SECONDS 0.3
#define BENCH_MAX_LEN     8192
/* The packet size of the floor: the tunnel MTU the issue measures with. */
#define BENCH_FLOOR_LEN   1420
#define BENCH_COUNTER     UINT64_C(1000)
/* Messages per batch: about one 64 KiB super-packet of 1420-byte segments. */
#define BENCH_BATCH_MSGS  44u
/* Calls between two reads of the CPU clock (a system call): about 1 MB. */
#define BENCH_BATCH_BYTES (1u << 20)
#define BITS_PER_BYTE     8.0
#define GIGA              1e9

static const size_t sizes[] = { 64, BENCH_FLOOR_LEN, BENCH_MAX_LEN };
#define NSIZES (sizeof(sizes) / sizeof(sizes[0]))

enum op { OP_SEAL, OP_OPEN };
static const char *const op_names[] = { "seal", "open" };

struct bench {
    uint8_t key[WG_KEY_LEN];
    uint8_t plain[BENCH_MAX_LEN];
    uint8_t sealed[BENCH_MAX_LEN + WG_AEAD_TAG_LEN];
    uint8_t out[BENCH_MAX_LEN + WG_AEAD_TAG_LEN];
    uint8_t msg_buf[BENCH_BATCH_MSGS][BENCH_FLOOR_LEN + WG_AEAD_TAG_LEN];
    struct aead_msg msgs[BENCH_BATCH_MSGS];
    double run_seconds;
};

static double cpu_seconds(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / GIGA;
}

/* n calls of one operation; returns non-zero if any open failed. */
static int batch(struct bench *b, enum op op, size_t len, size_t n, uint64_t *counter)
{
    int bad = 0;

    for (size_t i = 0; i < n; i++) {
        if (op == OP_SEAL)
            aead_seal(b->out, b->plain, len, NULL, 0, (*counter)++, b->key);
        else
            bad |= aead_open(b->out, b->sealed, len + WG_AEAD_TAG_LEN, NULL, 0,
                             BENCH_COUNTER, b->key);
    }
    return bad;
}

/* One run: Gbit/s of plaintext per CPU second, or a negative value if an
 * open failed. */
static double run_once(struct bench *b, enum op op, size_t len)
{
    size_t n = 1 + BENCH_BATCH_BYTES / len, calls = 0;
    uint64_t counter = 0;
    double t0 = cpu_seconds(), t;

    do {
        if (batch(b, op, len, n, &counter))
            return -1.0;
        calls += n;
        t = cpu_seconds() - t0;
    } while (t < b->run_seconds);
    return (double)calls * (double)len * BITS_PER_BYTE / t / GIGA;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;

    return (x > y) - (x < y);
}

static double measure(struct bench *b, enum op op, size_t len)
{
    double rates[BENCH_RUNS];

    aead_seal(b->sealed, b->plain, len, NULL, 0, BENCH_COUNTER, b->key);
    for (size_t i = 0; i < BENCH_RUNS; i++) {
        rates[i] = run_once(b, op, len);
        if (rates[i] < 0)
            return -1.0;
    }
    qsort(rates, BENCH_RUNS, sizeof(rates[0]), cmp_double);
    return rates[BENCH_RUNS / 2];
}

/* --- batches ------------------------------------------------------------------------ */

enum batch_op { BATCH_SEAL, BATCH_ROUND_TRIP };

/* BENCH_BATCH_MSGS messages of len bytes, sealed in place. */
static void batch_prepare(struct bench *b, size_t len)
{
    for (unsigned i = 0; i < BENCH_BATCH_MSGS; i++) {
        memcpy(b->msg_buf[i], b->plain, len);
        b->msgs[i] = (struct aead_msg){ b->msg_buf[i], len, BENCH_COUNTER + i, 0 };
    }
    aead_seal_batch(b->msgs, BENCH_BATCH_MSGS, b->key);
}

/* One batch: sealed again (its ciphertext is then sealed once more: the
 * cost is the same), or opened and sealed back. Non-zero if an open failed. */
static int batch_once(struct bench *b, enum batch_op op)
{
    int bad = 0;

    if (op == BATCH_ROUND_TRIP) {
        aead_open_batch(b->msgs, BENCH_BATCH_MSGS, b->key);
        for (unsigned i = 0; i < BENCH_BATCH_MSGS; i++)
            bad |= b->msgs[i].status;
    }
    aead_seal_batch(b->msgs, BENCH_BATCH_MSGS, b->key);
    return bad;
}

/* Median Gbit/s of plaintext per CPU second over BENCH_RUNS runs; < 0 if
 * an open failed. */
static double measure_batch(struct bench *b, enum batch_op op, size_t len)
{
    double rates[BENCH_RUNS];

    batch_prepare(b, len);
    for (size_t r = 0; r < BENCH_RUNS; r++) {
        size_t msgs = 0;
        double t0 = cpu_seconds(), t;
        do {
            if (batch_once(b, op))
                return -1.0;
            msgs += BENCH_BATCH_MSGS;
            t = cpu_seconds() - t0;
        } while (t < b->run_seconds);
        rates[r] = (double)msgs * (double)len * BITS_PER_BYTE / t / GIGA;
    }
    qsort(rates, BENCH_RUNS, sizeof(rates[0]), cmp_double);
    return rates[BENCH_RUNS / 2];
}

/* Prints one backend's batch figures; returns its batch floor, or < 0. */
static double bench_batches(struct bench *b, const char *name)
{
    double seal = measure_batch(b, BATCH_SEAL, BENCH_FLOOR_LEN);
    double trip = measure_batch(b, BATCH_ROUND_TRIP, BENCH_FLOOR_LEN);

    if (seal <= 0 || trip <= 0 || trip >= seal) {
        fprintf(stderr, "aead_bench: %s batches: no figure (seal %.2f, open+seal %.2f)\n",
                name, seal, trip);
        return -1.0;
    }
    /* Seconds per Gbit add up: open = round trip - seal. */
    double open = 1.0 / (1.0 / trip - 1.0 / seal);
    double floor_s = BITS_PER_BYTE / trip;

    printf("aead seal batch (%s) %u B: %.2f Gbit/s\n", name, (unsigned)BENCH_FLOOR_LEN, seal);
    printf("aead open batch (%s) %u B: %.2f Gbit/s\n", name, (unsigned)BENCH_FLOOR_LEN, open);
    printf("aead floor (%s, batches): %.2f CPU-s per GB through a tunnel (seal+open)\n",
           name, floor_s);
    fflush(stdout);
    return floor_s;
}

/* The selected backend must agree byte for byte with libsodium, and its
 * output must open under both. Leaves the selected backend in place. */
static int check_backend(struct bench *b, enum aead_backend backend)
{
    static uint8_t ref[BENCH_MAX_LEN + WG_AEAD_TAG_LEN];
    int ok = 1;

    for (size_t i = 0; i < NSIZES && ok; i++) {
        size_t len = sizes[i], total = len + WG_AEAD_TAG_LEN;

        aead_seal(b->sealed, b->plain, len, NULL, 0, BENCH_COUNTER, b->key);
        ok = aead_open(b->out, b->sealed, total, NULL, 0, BENCH_COUNTER, b->key) == 0 &&
             memcmp(b->out, b->plain, len) == 0;
        ok = ok && aead_set_backend(AEAD_BACKEND_SODIUM) == 0;
        if (ok)
            aead_seal(ref, b->plain, len, NULL, 0, BENCH_COUNTER, b->key);
        ok = ok && memcmp(ref, b->sealed, total) == 0 &&
             aead_set_backend(backend) == 0;
    }
    return ok;
}

/* Prints one backend's figures and sets *floor_s. Returns 0, 1 when the
 * backend is not available (said on stdout), -1 when it failed (stderr). */
static int bench_backend(struct bench *b, enum aead_backend backend, double *floor_s)
{
    const char *name = aead_backend_name(backend);
    double floor_rate[2] = { 0, 0 };

    if (aead_set_backend(backend) != 0) {
        printf("aead backend (%s): not available\n", name);
        return 1;
    }
    if (!check_backend(b, backend)) {
        fprintf(stderr, "aead_bench: %s disagrees with libsodium\n", name);
        return -1;
    }
    for (size_t i = 0; i < NSIZES; i++) {
        for (int op = OP_SEAL; op <= OP_OPEN; op++) {
            double rate = measure(b, (enum op)op, sizes[i]);

            if (rate <= 0) {
                fprintf(stderr, "aead_bench: %s refused its own %zu-byte message\n", name, sizes[i]);
                return -1;
            }
            printf("aead %s (%s) %zu B: %.2f Gbit/s\n", op_names[op], name, sizes[i], rate);
            fflush(stdout);
            if (sizes[i] == BENCH_FLOOR_LEN)
                floor_rate[op] = rate;
        }
    }
    /* A GB is 8 Gbit: seconds per GB = 8 / (Gbit/s), once per end. */
    *floor_s = BITS_PER_BYTE / floor_rate[OP_SEAL] + BITS_PER_BYTE / floor_rate[OP_OPEN];
    printf("aead floor (%s): %.2f CPU-s per GB through a tunnel (seal+open)\n", name, *floor_s);
    double batch_floor = bench_batches(b, name);
    if (batch_floor < 0)
        return -1;
    if (batch_floor < *floor_s)
        *floor_s = batch_floor;
    return 0;
}

static int parse_args(int argc, char **argv, double *seconds)
{
    char *end;

    *seconds = BENCH_RUN_SECONDS;
    if (argc == 1)
        return 0;
    if (argc == 2) {
        errno = 0;
        *seconds = strtod(argv[1], &end);
        if (!errno && end != argv[1] && !*end && *seconds > 0 && *seconds <= 60)
            return 0;
    }
    fprintf(stderr, "usage: %s [SECONDS_PER_RUN]   (0 < seconds <= 60, default %.1f)\n",
            argv[0], BENCH_RUN_SECONDS);
    return -EINVAL;
}

int main(int argc, char **argv)
{
    static struct bench b;
    int best = -1, failed = 0;
    double best_floor = 0;

    if (parse_args(argc, argv, &b.run_seconds))
        return 2;
    if (crypto_core_init() != 0) {
        fprintf(stderr, "aead_bench: crypto_core_init failed (check $%s)\n", AEAD_BACKEND_ENV);
        return 1;
    }
    randombytes_buf(b.key, sizeof(b.key));
    randombytes_buf(b.plain, sizeof(b.plain));
    printf("aead_bench: %d runs of %.2f CPU-s per figure, median, Gbit/s of plaintext\n",
           BENCH_RUNS, b.run_seconds);
    for (int i = 0; i < AEAD_BACKEND_COUNT; i++) {
        double f = 0;
        int ret = bench_backend(&b, (enum aead_backend)i, &f);

        failed |= ret < 0;
        if (ret == 0 && (best < 0 || f < best_floor)) {
            best = i;
            best_floor = f;
        }
    }
    if (best >= 0)
        printf("aead fastest: %s (%.2f CPU-s per GB)\n",
               aead_backend_name((enum aead_backend)best), best_floor);
    sodium_memzero(b.key, sizeof(b.key));
    return failed || best < 0;
}
