/* SPDX-License-Identifier: MIT */
/* Transport data messages (see transport.h). Layout of a message:
 * type (1 byte, 4) | reserved (3, zero) | receiver index (4, LE) |
 * counter (8, LE) | ChaCha20-Poly1305(padded plaintext). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/blake2s.h"
#include "crypto/bytes.h"
#include "crypto/transport.h"

#define HDR_TYPE_OFFSET     0
#define HDR_RECEIVER_OFFSET 4
#define HDR_COUNTER_OFFSET  8

size_t transport_padded_len(size_t len)
{
    return (len + WG_PADDING_MULTIPLE - 1) & ~(size_t)(WG_PADDING_MULTIPLE - 1);
}

size_t transport_sealed_len(size_t len)
{
    return WG_TRANSPORT_HEADER_LEN + transport_padded_len(len) + WG_AEAD_TAG_LEN;
}

static size_t padded_limited(size_t len, uint32_t pad_limit)
{
    size_t padded = transport_padded_len(len);

    if (pad_limit && padded > pad_limit && len <= pad_limit)
        padded = pad_limit;
    return padded;
}

size_t transport_sealed_len_limited(size_t len, uint32_t pad_limit)
{
    return WG_TRANSPORT_HEADER_LEN + padded_limited(len, pad_limit) + WG_AEAD_TAG_LEN;
}

uint32_t transport_receiver(const uint8_t *msg)
{
    return get_le32(msg + HDR_RECEIVER_OFFSET);
}

static uint64_t age_ns(const struct noise_keypair *kp, uint64_t now_ns)
{
    return now_ns > kp->birth_ns ? now_ns - kp->birth_ns : 0;
}

static bool expired(const struct noise_keypair *kp, uint64_t now_ns)
{
    return age_ns(kp, now_ns) >= WG_REJECT_AFTER_TIME * WG_NSEC_PER_SEC;
}

bool transport_expired(const struct noise_keypair *kp, uint64_t now_ns)
{
    return expired(kp, now_ns);
}

bool transport_needs_rekey(const struct noise_keypair *kp, uint64_t now_ns)
{
    return kp->send_counter >= WG_REKEY_AFTER_MESSAGES ||
           (kp->is_initiator && age_ns(kp, now_ns) >= WG_REKEY_AFTER_TIME * WG_NSEC_PER_SEC);
}

static bool fits(const struct transport_packet *p)
{
    return p->len <= p->cap && transport_sealed_len_limited(p->len, p->pad_limit) <= p->cap;
}

/* Header and padding of a message to seal; returns the padded plaintext
 * length, or 0 with p->status = -EMSGSIZE when it does not fit. */
static size_t frame(uint32_t remote_index, uint64_t counter, struct transport_packet *p)
{
    size_t padded = padded_limited(p->len, p->pad_limit);
    uint8_t *body = p->buf + WG_TRANSPORT_HEADER_LEN;

    p->status = 0;
    if (!fits(p)) {
        p->status = -EMSGSIZE;
        return 0;
    }
    memset(body + p->len, 0, padded - p->len);
    put_le32(p->buf + HDR_TYPE_OFFSET, WG_MSG_TRANSPORT);
    put_le32(p->buf + HDR_RECEIVER_OFFSET, remote_index);
    put_le64(p->buf + HDR_COUNTER_OFFSET, counter);
    return padded;
}

static void sealed(struct transport_packet *p, uint64_t counter, size_t padded)
{
    p->counter = counter;
    p->len = WG_TRANSPORT_HEADER_LEN + padded + WG_AEAD_TAG_LEN;
    p->status = 0;
}

int transport_encrypt(const uint8_t key[WG_KEY_LEN], uint32_t remote_index, uint64_t counter,
                      struct transport_packet *p)
{
    size_t padded = frame(remote_index, counter, p);

    if (p->status)
        return p->status;
    aead_seal(p->buf + WG_TRANSPORT_HEADER_LEN, p->buf + WG_TRANSPORT_HEADER_LEN, padded,
              NULL, 0, counter, key);
    sealed(p, counter, padded);
    return 0;
}

void transport_encrypt_batch(const uint8_t key[WG_KEY_LEN], uint32_t remote_index,
                             uint64_t first_counter, struct transport_packet *pkts, unsigned n)
{
    struct aead_msg msgs[TRANSPORT_BATCH];
    unsigned idx[TRANSPORT_BATCH];

    for (unsigned at = 0; at < n; at += TRANSPORT_BATCH) {
        unsigned k = n - at < TRANSPORT_BATCH ? n - at : TRANSPORT_BATCH, m = 0;

        for (unsigned i = at; i < at + k; i++) {
            size_t padded = frame(remote_index, first_counter + i, &pkts[i]);
            if (pkts[i].status)
                continue;
            msgs[m] = (struct aead_msg){ pkts[i].buf + WG_TRANSPORT_HEADER_LEN, padded,
                                         first_counter + i, 0 };
            idx[m++] = i;
        }
        aead_seal_batch(msgs, m, key);
        for (unsigned j = 0; j < m; j++)
            sealed(&pkts[idx[j]], msgs[j].counter, msgs[j].len);
    }
}

int transport_reserve(struct noise_keypair *kp, unsigned n, uint64_t now_ns, uint64_t *first)
{
    if (expired(kp, now_ns) || n > WG_REJECT_AFTER_MESSAGES - kp->send_counter)
        return -WG_ESTALE;
    *first = kp->send_counter;
    kp->send_counter += n;
    return 0;
}

static int seal_one(struct noise_keypair *kp, struct transport_packet *p)
{
    if (!fits(p))
        return -EMSGSIZE;
    if (kp->send_counter >= WG_REJECT_AFTER_MESSAGES)
        return -WG_ESTALE;
    return transport_encrypt(kp->send_key, kp->remote_index, kp->send_counter++, p);
}

unsigned transport_seal_batch(struct noise_keypair *kp, struct transport_packet *pkts,
                              unsigned n, uint64_t now_ns)
{
    bool stale = expired(kp, now_ns);
    unsigned sealed = 0;

    for (unsigned i = 0; i < n; i++) {
        pkts[i].status = stale ? -WG_ESTALE : seal_one(kp, &pkts[i]);
        sealed += pkts[i].status == 0;
    }
    return sealed;
}

/* The form of a message to open: 0 with its counter, or -EBADMSG. */
static int parse(const struct transport_packet *p, uint64_t *counter)
{
    if (p->len < WG_TRANSPORT_MIN_LEN || p->len > p->cap ||
        (get_le32(p->buf + HDR_TYPE_OFFSET) & WG_TRANSPORT_TYPE_MASK) != WG_MSG_TRANSPORT)
        return -EBADMSG;
    *counter = get_le64(p->buf + HDR_COUNTER_OFFSET);
    return *counter >= WG_REJECT_AFTER_MESSAGES ? -EBADMSG : 0;
}

static void opened(struct transport_packet *p, uint64_t counter)
{
    p->counter = counter;
    p->len = p->len - WG_TRANSPORT_HEADER_LEN - WG_AEAD_TAG_LEN;
}

int transport_decrypt(const uint8_t key[WG_KEY_LEN], struct transport_packet *p)
{
    uint64_t counter;
    uint8_t *body = p->buf + WG_TRANSPORT_HEADER_LEN;

    if (parse(p, &counter) ||
        aead_open(body, body, p->len - WG_TRANSPORT_HEADER_LEN, NULL, 0, counter, key))
        return -EBADMSG;
    opened(p, counter);
    return 0;
}

void transport_decrypt_batch(const uint8_t key[WG_KEY_LEN], struct transport_packet *pkts,
                             unsigned n)
{
    struct aead_msg msgs[TRANSPORT_BATCH];
    unsigned idx[TRANSPORT_BATCH];

    for (unsigned at = 0; at < n; at += TRANSPORT_BATCH) {
        unsigned k = n - at < TRANSPORT_BATCH ? n - at : TRANSPORT_BATCH, m = 0;

        for (unsigned i = at; i < at + k; i++) {
            uint64_t counter;
            pkts[i].status = parse(&pkts[i], &counter);
            if (pkts[i].status)
                continue;
            msgs[m] = (struct aead_msg){ pkts[i].buf + WG_TRANSPORT_HEADER_LEN,
                                         pkts[i].len - WG_TRANSPORT_HEADER_LEN - WG_AEAD_TAG_LEN,
                                         counter, 0 };
            idx[m++] = i;
        }
        aead_open_batch(msgs, m, key);
        for (unsigned j = 0; j < m; j++) {
            struct transport_packet *p = &pkts[idx[j]];
            p->status = msgs[j].status;
            if (!p->status)
                opened(p, msgs[j].counter);
        }
    }
}

int transport_accept(struct noise_keypair *kp, uint64_t counter)
{
    return replay_check(&kp->replay, counter);
}

/* Everything before the AEAD touches no state: the counter and the replay
 * window move only for packets that authenticated. */
static int open_one(struct noise_keypair *kp, struct transport_packet *p)
{
    uint8_t key[WG_KEY_LEN];
    unsigned h;
    int ret;

    if (p->len >= WG_TRANSPORT_MIN_LEN && transport_receiver(p->buf) != kp->local_index)
        return -EBADMSG;
    if (p->len < WG_TRANSPORT_MIN_LEN || !(h = transport_sub_of(p->buf)))
        return (ret = transport_decrypt(kp->recv_key, p)) ? ret : transport_accept(kp, p->counter);
    transport_recv_key(kp, h, key);
    ret = transport_decrypt(key, p);
    sodium_memzero(key, sizeof(key));
    return ret ? ret : transport_accept_hinted(kp, h, p->counter);
}

unsigned transport_open_batch(struct noise_keypair *kp, struct transport_packet *pkts,
                              unsigned n, uint64_t now_ns)
{
    bool stale = expired(kp, now_ns);
    unsigned opened = 0;

    for (unsigned i = 0; i < n; i++) {
        pkts[i].status = stale ? -WG_ESTALE : open_one(kp, &pkts[i]);
        opened += pkts[i].status == 0;
    }
    return opened;
}

int transport_seal(struct noise_keypair *kp, struct transport_packet *pkt, uint64_t now_ns)
{
    transport_seal_batch(kp, pkt, 1, now_ns);
    return pkt->status;
}

int transport_open(struct noise_keypair *kp, struct transport_packet *pkt, uint64_t now_ns)
{
    transport_open_batch(kp, pkt, 1, now_ns);
    return pkt->status;
}

void transport_keypair_clear(struct noise_keypair *kp)
{
    if (kp->hinted) {
        sodium_memzero(kp->hinted, sizeof(*kp->hinted));
        free(kp->hinted);
    }
    sodium_memzero(kp, sizeof(*kp));
}

/* --- sub-sessions per shard hint ------------------------------------------------ */

static const char HINT_LABEL[] = "ddpnet shard hint";

unsigned transport_sub_of(const uint8_t *msg)
{
    return msg[WG_SHARD_SUB_OFFSET] & (WG_SHARD_HINTS - 1u);
}

void transport_hint_key(const uint8_t base[WG_KEY_LEN], unsigned h, uint8_t out[WG_KEY_LEN])
{
    uint8_t in[sizeof(HINT_LABEL)];

    memcpy(in, HINT_LABEL, sizeof(HINT_LABEL) - 1);
    in[sizeof(HINT_LABEL) - 1] = (uint8_t)h;
    blake2s(out, WG_KEY_LEN, in, sizeof(in), base, WG_KEY_LEN);
}

static struct transport_hinted *hinted(struct noise_keypair *kp)
{
    if (kp->hinted)
        return kp->hinted;
    kp->hinted = calloc(1, sizeof(*kp->hinted));
    if (!kp->hinted)
        return NULL;
    for (unsigned h = 1; h < WG_SHARD_HINTS; h++) {
        transport_hint_key(kp->send_key, h, kp->hinted->send_key[h]);
        transport_hint_key(kp->recv_key, h, kp->hinted->recv_key[h]);
        replay_init(&kp->hinted->replay[h]);
    }
    return kp->hinted;
}

int transport_reserve_hinted(struct noise_keypair *kp, unsigned h, unsigned n, uint64_t now_ns,
                             uint64_t *first)
{
    struct transport_hinted *x;

    h &= WG_SHARD_HINTS - 1u;
    if (!h)
        return transport_reserve(kp, n, now_ns, first);
    if (expired(kp, now_ns))
        return -WG_ESTALE;
    if (!(x = hinted(kp)))
        return -ENOMEM;
    if (n > WG_REJECT_AFTER_MESSAGES - x->send_counter[h])
        return -WG_ESTALE;
    *first = x->send_counter[h];
    x->send_counter[h] += n;
    return 0;
}

const uint8_t *transport_send_key(const struct noise_keypair *kp, unsigned h)
{
    h &= WG_SHARD_HINTS - 1u;
    return h && kp->hinted ? kp->hinted->send_key[h] : kp->send_key;
}

void transport_recv_key(const struct noise_keypair *kp, unsigned h, uint8_t out[WG_KEY_LEN])
{
    h &= WG_SHARD_HINTS - 1u;
    if (!h)
        memcpy(out, kp->recv_key, WG_KEY_LEN);
    else if (kp->hinted)
        memcpy(out, kp->hinted->recv_key[h], WG_KEY_LEN);
    else
        transport_hint_key(kp->recv_key, h, out);
}

int transport_accept_hinted(struct noise_keypair *kp, unsigned h, uint64_t counter)
{
    struct transport_hinted *x;

    h &= WG_SHARD_HINTS - 1u;
    if (!h)
        return transport_accept(kp, counter);
    if (!(x = hinted(kp)))
        return -ENOMEM;
    return replay_check(&x->replay[h], counter);
}
