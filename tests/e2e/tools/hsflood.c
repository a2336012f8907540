/* SPDX-License-Identifier: MIT */
/* hsflood: floods a WireGuard port with handshake initiations, as a
 * stranger who knows the target's public key would (tests/e2e/handshake_flood.sh).
 *
 *   hsflood [--rate PPS] MODE HOST PORT PUBKEY SECONDS SRC-ADDR...
 *
 * MODE is what each 148-byte initiation carries besides random contents:
 *   junk  a wrong mac1 (the target drops it after one BLAKE2s)
 *   mac1  a valid mac1 for PUBKEY, no mac2
 *   mac2  a valid mac1, and a valid mac2 from each source address once the
 *         target has answered that source with a cookie reply (the other
 *         modes count the replies and never take the cookie)
 *   stranger  an authentic initiation (Noise IK) from a fresh key each
 *         time, with a valid mac1 and no mac2 (as from a spoofed source:
 *         cookie replies are counted, never taken): what a stranger with
 *         throwaway keys sends to fill a member's probation table
 * It sends from one socket per SRC-ADDR (IPv4 or IPv6, bound there), in
 * turn, as fast as the sockets take them (or, with --rate, PPS initiations
 * a second in all, paced batch by batch), and reads the cookie replies that
 * come back. A reply is opened with the mac1 of the message it answers
 * (found by its receiver index, which is our sender index), as a real
 * initiator would. At the end it prints one line of counts. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "crypto/blake2s.h"
#include "crypto/bytes.h"
#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "crypto/tai64n.h"
#include "crypto/wg_const.h"

#define BATCH 32u
#define RING  4096u                 /* mac1s remembered per source, by sender index */
#define MAX_SOURCES 64u

enum mode { MODE_JUNK, MODE_MAC1, MODE_MAC2, MODE_STRANGER };

struct source {
    int fd;
    struct cookie_maker maker;
    uint32_t next_index;
    uint8_t mac1_of[RING][WG_MAC_LEN];
    bool cookie_taken;
};

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * WG_NSEC_PER_SEC + (uint64_t)ts.tv_nsec;
}

/* Random contents need not be good random: splitmix64. */
static uint64_t rng_state;
static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

static void fill_random(uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint64_t r = rng_next();
        memcpy(p, &r, 8);
        p += 8;
        len -= 8;
    }
    if (len) {
        uint64_t r = rng_next();
        memcpy(p, &r, len);
    }
}

static uint8_t target_pub[WG_KEY_LEN];

/* An authentic initiation to target_pub from a key made for it. */
static void stranger_initiation(uint32_t index, uint8_t msg[WG_INITIATION_LEN])
{
    uint8_t priv[WG_KEY_LEN], ts[WG_TIMESTAMP_LEN];
    struct noise_handshake hs;
    struct noise_local *local;
    struct timespec wall;

    randombytes_buf(priv, sizeof(priv));
    clock_gettime(CLOCK_REALTIME, &wall);
    tai64n_encode(ts, (uint64_t)wall.tv_sec, (uint32_t)wall.tv_nsec);
    if (!(local = noise_local_new(priv)) ||
        noise_handshake_init(&hs, local, target_pub, NULL) ||
        noise_create_initiation(&hs, local, index, ts, msg))
        fill_random(msg, WG_INITIATION_LEN);
    noise_local_free(local);
    sodium_memzero(priv, sizeof(priv));
    sodium_memzero(&hs, sizeof(hs));
}

static void build(struct source *s, enum mode mode, uint8_t msg[WG_INITIATION_LEN],
                  uint64_t now)
{
    uint32_t index = s->next_index++;

    if (mode == MODE_STRANGER) {
        stranger_initiation(index, msg);
    } else {
        fill_random(msg, WG_INITIATION_LEN);
        put_le32(msg, WG_MSG_INITIATION);
        put_le32(msg + 4, index);
    }
    cookie_add_macs(&s->maker, msg, WG_INITIATION_LEN, now);
    memcpy(s->mac1_of[index % RING], s->maker.last_mac1, WG_MAC_LEN);
    /* Every mode costs the sender the same, so that all go as fast: both
     * MACs are computed (mac2 under a made-up key until a cookie is
     * taken), then each mode keeps what it sends. */
    if (!s->maker.have_cookie) {
        uint8_t spare[WG_MAC_LEN];
        blake2s(spare, WG_MAC_LEN, msg, WG_INITIATION_LEN - WG_MAC_LEN, s->maker.cookie_key,
                WG_COOKIE_LEN);
    }
    if (mode == MODE_JUNK)
        msg[WG_INITIATION_LEN - WG_MACS_LEN] ^= 0xff;   /* a wrong mac1 */
}

/* Reads what came back on s; returns the number of cookie replies. */
static unsigned read_replies(struct source *s, enum mode mode, unsigned *cookies,
                             uint64_t now)
{
    uint8_t buf[256];
    unsigned replies = 0;

    for (;;) {
        ssize_t n = recv(s->fd, buf, sizeof(buf), MSG_DONTWAIT);
        if (n < 0)
            return replies;
        if (n != WG_COOKIE_REPLY_LEN || get_le32(buf) != WG_MSG_COOKIE_REPLY)
            continue;
        replies++;
        if (mode != MODE_MAC2)
            continue;               /* counted, never taken: no mac2 follows */
        /* The reply's associated data is the mac1 of the message it answers. */
        memcpy(s->maker.last_mac1, s->mac1_of[cookie_reply_receiver(buf) % RING], WG_MAC_LEN);
        s->maker.have_last_mac1 = true;
        if (cookie_consume_reply(&s->maker, buf, (size_t)n, now) == 0 && !s->cookie_taken) {
            s->cookie_taken = true;
            (*cookies)++;
        }
    }
}

static int open_source(const char *src, const char *host, unsigned port)
{
    struct sockaddr_storage from = {0}, to = {0};
    socklen_t len;
    int family = strchr(host, ':') ? AF_INET6 : AF_INET;

    if (family == AF_INET6) {
        struct sockaddr_in6 *f = (struct sockaddr_in6 *)&from, *t = (struct sockaddr_in6 *)&to;
        f->sin6_family = t->sin6_family = AF_INET6;
        t->sin6_port = htons((uint16_t)port);
        if (inet_pton(AF_INET6, src, &f->sin6_addr) != 1 ||
            inet_pton(AF_INET6, host, &t->sin6_addr) != 1)
            return -1;
        len = sizeof(struct sockaddr_in6);
    } else {
        struct sockaddr_in *f = (struct sockaddr_in *)&from, *t = (struct sockaddr_in *)&to;
        f->sin_family = t->sin_family = AF_INET;
        t->sin_port = htons((uint16_t)port);
        if (inet_pton(AF_INET, src, &f->sin_addr) != 1 ||
            inet_pton(AF_INET, host, &t->sin_addr) != 1)
            return -1;
        len = sizeof(struct sockaddr_in);
    }
    int fd = socket(family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (bind(fd, (struct sockaddr *)&from, len) || connect(fd, (struct sockaddr *)&to, len)) {
        close(fd);
        return -1;
    }
    return fd;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: hsflood [--rate PPS] junk|mac1|mac2|stranger HOST PORT PUBKEY SECONDS "
            "SRC-ADDR...\n");
    return 2;
}

int main(int argc, char **argv)
{
    static struct source sources[MAX_SOURCES];
    static uint8_t msgs[BATCH][WG_INITIATION_LEN];
    uint8_t pub[WG_KEY_LEN];
    size_t pub_len;
    enum mode mode;
    unsigned nsrc, cookies = 0;
    uint64_t sent = 0, refused = 0, replies = 0, with_mac2 = 0;
    double rate = 0;            /* initiations a second; 0: as fast as the sockets take them */

    if (argc > 2 && !strcmp(argv[1], "--rate")) {
        char *end;
        rate = strtod(argv[2], &end);
        if (*end || !(rate > 0))
            return usage();
        argc -= 2;
        argv += 2;
    }
    if (argc < 7 || argc - 6 > (int)MAX_SOURCES)
        return usage();
    if (!strcmp(argv[1], "junk"))
        mode = MODE_JUNK;
    else if (!strcmp(argv[1], "mac1"))
        mode = MODE_MAC1;
    else if (!strcmp(argv[1], "mac2"))
        mode = MODE_MAC2;
    else if (!strcmp(argv[1], "stranger"))
        mode = MODE_STRANGER;
    else
        return usage();
    unsigned port = (unsigned)strtoul(argv[3], NULL, 10);
    double seconds = strtod(argv[5], NULL);
    if (sodium_init() < 0 || port == 0 || port > 65535 || !(seconds > 0) ||
        sodium_base642bin(pub, sizeof(pub), argv[4], strlen(argv[4]), NULL, &pub_len, NULL,
                          sodium_base64_VARIANT_ORIGINAL) || pub_len != WG_KEY_LEN)
        return usage();
    memcpy(target_pub, pub, WG_KEY_LEN);
    nsrc = (unsigned)(argc - 6);
    randombytes_buf(&rng_state, sizeof(rng_state));
    for (unsigned i = 0; i < nsrc; i++) {
        sources[i].fd = open_source(argv[6 + i], argv[2], port);
        if (sources[i].fd < 0) {
            fprintf(stderr, "hsflood: cannot send from %s to %s port %u: %s\n", argv[6 + i],
                    argv[2], port, strerror(errno));
            return 1;
        }
        cookie_maker_init(&sources[i].maker, pub);
        sources[i].next_index = (uint32_t)rng_next();
    }

    struct mmsghdr mm[BATCH];
    struct iovec iov[BATCH];
    memset(mm, 0, sizeof(mm));
    for (unsigned i = 0; i < BATCH; i++) {
        iov[i] = (struct iovec){ .iov_base = msgs[i], .iov_len = WG_INITIATION_LEN };
        mm[i].msg_hdr.msg_iov = &iov[i];
        mm[i].msg_hdr.msg_iovlen = 1;
    }
    /* A stranger's initiation costs a key and two X25519s: one at a turn,
     * so that each source's share stays under the target's rate limit. */
    unsigned batch = mode == MODE_STRANGER ? 1u : BATCH;
    uint64_t start = now_ns(), end = start + (uint64_t)(seconds * 1e9), now = start;
    for (unsigned turn = 0; now < end; turn++) {
        struct source *s = &sources[turn % nsrc];
        for (unsigned i = 0; i < batch; i++)
            build(s, mode, msgs[i], now);
        if (mode == MODE_MAC2 && s->maker.have_cookie)
            with_mac2 += batch;
        int n = sendmmsg(s->fd, mm, batch, 0);
        if (n > 0)
            sent += (unsigned)n;
        else
            refused += batch;
        replies += read_replies(s, mode, &cookies, now);
        now = now_ns();
        if (rate > 0) {
            /* Paced: sleep until the batches sent so far are due. */
            uint64_t due = start + (uint64_t)((double)(sent + refused) / rate * 1e9);
            if (due > end)
                due = end;
            if (due > now) {
                struct timespec ts = { .tv_sec = (time_t)(due / WG_NSEC_PER_SEC),
                                       .tv_nsec = (long)(due % WG_NSEC_PER_SEC) };
                clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
                now = now_ns();
            }
        }
    }
    double secs = (double)(now - start) / 1e9;
    printf("hsflood: %s: sent %llu initiations in %.1f s (%.0f/s) from %u sources; "
           "%llu not taken by the socket; %llu cookie replies; %u sources took a cookie; "
           "%llu carried a mac2\n",
           argv[1], (unsigned long long)sent, secs, (double)sent / secs, nsrc,
           (unsigned long long)refused, (unsigned long long)replies, cookies,
           (unsigned long long)with_mac2);
    for (unsigned i = 0; i < nsrc; i++)
        close(sources[i].fd);
    return sent ? 0 : 1;
}
