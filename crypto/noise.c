/* SPDX-License-Identifier: MIT */
/* WireGuard handshake messages over the IKpsk2 patterns (see noise.h).
 *
 * initiation: type | sender | ephemeral 32 | static 32+16 | timestamp 12+16 | mac1 | mac2
 * response:   type | sender | receiver | ephemeral 32 | empty 0+16 | mac1 | mac2
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "crypto/bytes.h"
#include "crypto/noise.h"
#include "crypto/x25519.h"

#define INIT_SENDER_OFFSET   WG_SENDER_INDEX_OFFSET
#define INIT_BODY_OFFSET     8
#define RESP_SENDER_OFFSET   WG_SENDER_INDEX_OFFSET
#define RESP_RECEIVER_OFFSET 8
#define RESP_BODY_OFFSET     12

_Static_assert(INIT_BODY_OFFSET + NOISE_IK_MSG1_LEN(WG_TIMESTAMP_LEN) + WG_MACS_LEN
               == WG_INITIATION_LEN, "initiation layout");
_Static_assert(RESP_BODY_OFFSET + NOISE_IK_MSG2_LEN(0) + WG_MACS_LEN == WG_RESPONSE_LEN,
               "response layout");

/* The response carries an empty payload; AEAD calls still want a pointer. */
static const uint8_t no_payload[1];

uint32_t noise_message_type(const uint8_t *msg, size_t len)
{
    uint32_t type;

    if (len < 4)
        return 0;
    type = get_le32(msg);
    /* A transport message with shard bytes is a transport message. */
    return (type & WG_TRANSPORT_TYPE_MASK) == WG_MSG_TRANSPORT ? WG_MSG_TRANSPORT : type;
}

struct noise_local *noise_local_new(const uint8_t private_key[WG_KEY_LEN])
{
    struct noise_local *local = sodium_malloc(sizeof(*local));

    if (!local)
        return NULL;
    memcpy(local->private_key, private_key, WG_KEY_LEN);
    if (x25519_public(local->public_key, local->private_key)) {
        sodium_free(local);
        return NULL;
    }
    /* Nothing writes the identity after this; make a stray write fault. */
    sodium_mprotect_readonly(local);
    return local;
}

void noise_local_free(struct noise_local *local)
{
    if (local)
        sodium_free(local);   /* wipes */
}

int noise_handshake_init(struct noise_handshake *hs, const struct noise_local *local,
                         const uint8_t remote_static[WG_KEY_LEN],
                         const uint8_t psk[WG_KEY_LEN])
{
    sodium_memzero(hs, sizeof(*hs));
    memcpy(hs->remote_static, remote_static, WG_KEY_LEN);
    if (psk)
        memcpy(hs->psk, psk, WG_KEY_LEN);
    if (x25519_shared(hs->precomputed_ss, local->private_key, remote_static)) {
        sodium_memzero(hs, sizeof(*hs));
        return -EINVAL;
    }
    return 0;
}

void noise_handshake_reset(struct noise_handshake *hs)
{
    sodium_memzero(&hs->sym, sizeof(hs->sym));
    sodium_memzero(hs->ephemeral_private, sizeof(hs->ephemeral_private));
    sodium_memzero(hs->remote_ephemeral, sizeof(hs->remote_ephemeral));
    hs->local_index = 0;
    hs->remote_index = 0;
    hs->state = NOISE_STATE_ZEROED;
}

static void new_ephemeral(uint8_t priv[WG_KEY_LEN])
{
    randombytes_buf(priv, WG_KEY_LEN);
    x25519_clamp(priv);
}

static void init_symmetric(struct noise_symmetric *sym, const uint8_t responder[WG_KEY_LEN])
{
    noise_ik_init(sym, (const uint8_t *)WG_IDENTIFIER, sizeof(WG_IDENTIFIER) - 1, responder);
}

int noise_create_initiation(struct noise_handshake *hs, const struct noise_local *local,
                            uint32_t local_index, const uint8_t timestamp[WG_TIMESTAMP_LEN],
                            uint8_t out[WG_INITIATION_LEN])
{
    struct noise_symmetric sym;
    uint8_t e_priv[WG_KEY_LEN];
    int ret;

    new_ephemeral(e_priv);
    init_symmetric(&sym, hs->remote_static);
    memset(out, 0, WG_INITIATION_LEN);
    put_le32(out, WG_MSG_INITIATION);
    put_le32(out + INIT_SENDER_OFFSET, local_index);
    ret = noise_ik_write_msg1(&sym, e_priv, local->public_key, hs->remote_static,
                              hs->precomputed_ss, timestamp, WG_TIMESTAMP_LEN,
                              out + INIT_BODY_OFFSET);
    if (ret == 0) {
        hs->sym = sym;
        memcpy(hs->ephemeral_private, e_priv, WG_KEY_LEN);
        hs->local_index = local_index;
        hs->state = NOISE_STATE_CREATED_INITIATION;
    }
    sodium_memzero(&sym, sizeof(sym));
    sodium_memzero(e_priv, sizeof(e_priv));
    return ret;
}

/* Checks of a decrypted initiation against the peer's history. */
static int check_initiation_fresh(const struct noise_handshake *hs,
                                  const uint8_t timestamp[WG_TIMESTAMP_LEN], uint64_t now_ns)
{
    /* TAI64N is big-endian: byte order is time order. Not secret. */
    if (memcmp(timestamp, hs->latest_timestamp, WG_TIMESTAMP_LEN) <= 0)
        return -WG_ETIMESTAMP;
    if (hs->consumed_initiation_before &&
        now_ns < hs->last_initiation_ns + WG_NSEC_PER_SEC / WG_INITIATIONS_PER_SECOND)
        return -WG_EFLOOD;
    return 0;
}

int noise_consume_initiation(const struct noise_local *local, const uint8_t *msg, size_t len,
                             uint64_t now_ns, const struct noise_lookup *lookup,
                             struct noise_handshake **peer)
{
    struct noise_symmetric sym;
    uint8_t e_remote[WG_KEY_LEN], s_remote[WG_KEY_LEN], timestamp[WG_TIMESTAMP_LEN];
    struct noise_handshake *hs = NULL;
    int ret = -EBADMSG;

    if (len != WG_INITIATION_LEN || noise_message_type(msg, len) != WG_MSG_INITIATION)
        return -EBADMSG;

    init_symmetric(&sym, local->public_key);
    if (noise_ik_read_msg1_static(&sym, local->private_key, msg + INIT_BODY_OFFSET,
                                  e_remote, s_remote))
        goto out;
    hs = lookup->by_key(lookup->ctx, s_remote);
    if (!hs) {
        ret = -WG_ENOPEER;
        goto out;
    }
    if (noise_ik_read_msg1_payload(&sym, hs->precomputed_ss, msg + INIT_BODY_OFFSET,
                                   WG_TIMESTAMP_LEN, timestamp))
        goto out;
    ret = check_initiation_fresh(hs, timestamp, now_ns);
    if (ret)
        goto out;

    /* Every check passed: commit. */
    hs->sym = sym;
    memcpy(hs->remote_ephemeral, e_remote, WG_KEY_LEN);
    memcpy(hs->latest_timestamp, timestamp, WG_TIMESTAMP_LEN);
    hs->remote_index = get_le32(msg + INIT_SENDER_OFFSET);
    hs->last_initiation_ns = now_ns;
    hs->consumed_initiation_before = true;
    hs->state = NOISE_STATE_CONSUMED_INITIATION;
    *peer = hs;
out:
    sodium_memzero(&sym, sizeof(sym));
    sodium_memzero(e_remote, sizeof(e_remote));
    sodium_memzero(s_remote, sizeof(s_remote));
    sodium_memzero(timestamp, sizeof(timestamp));
    return ret;
}

int noise_create_response(struct noise_handshake *hs, uint32_t local_index,
                          uint8_t out[WG_RESPONSE_LEN])
{
    struct noise_symmetric sym;
    uint8_t e_priv[WG_KEY_LEN];
    int ret;

    if (hs->state != NOISE_STATE_CONSUMED_INITIATION)
        return -WG_ESTATE;
    new_ephemeral(e_priv);
    sym = hs->sym;
    memset(out, 0, WG_RESPONSE_LEN);
    put_le32(out, WG_MSG_RESPONSE);
    put_le32(out + RESP_SENDER_OFFSET, local_index);
    put_le32(out + RESP_RECEIVER_OFFSET, hs->remote_index);
    ret = noise_ik_write_msg2(&sym, e_priv, hs->remote_ephemeral, hs->remote_static, hs->psk,
                              no_payload, 0, out + RESP_BODY_OFFSET);
    if (ret == 0) {
        hs->sym = sym;
        memcpy(hs->ephemeral_private, e_priv, WG_KEY_LEN);
        hs->local_index = local_index;
        hs->state = NOISE_STATE_CREATED_RESPONSE;
    }
    sodium_memzero(&sym, sizeof(sym));
    sodium_memzero(e_priv, sizeof(e_priv));
    return ret;
}

int noise_consume_response(const struct noise_local *local, const uint8_t *msg, size_t len,
                           const struct noise_lookup *lookup, struct noise_handshake **peer)
{
    struct noise_symmetric sym;
    uint8_t payload[1];
    struct noise_handshake *hs;
    uint32_t receiver;
    int ret;

    if (len != WG_RESPONSE_LEN || noise_message_type(msg, len) != WG_MSG_RESPONSE)
        return -EBADMSG;
    receiver = get_le32(msg + RESP_RECEIVER_OFFSET);
    hs = lookup->by_index(lookup->ctx, receiver);
    if (!hs)
        return -WG_ENOPEER;
    if (hs->state != NOISE_STATE_CREATED_INITIATION || hs->local_index != receiver)
        return -WG_ESTATE;

    sym = hs->sym;
    ret = noise_ik_read_msg2(&sym, hs->ephemeral_private, local->private_key, hs->psk,
                             msg + RESP_BODY_OFFSET, 0, payload);
    if (ret == 0) {
        hs->sym = sym;
        hs->remote_index = get_le32(msg + RESP_SENDER_OFFSET);
        hs->state = NOISE_STATE_CONSUMED_RESPONSE;
        *peer = hs;
    } else {
        ret = -EBADMSG;
    }
    sodium_memzero(&sym, sizeof(sym));
    return ret;
}

int noise_begin_session(struct noise_handshake *hs, struct noise_keypair *kp, uint64_t now_ns)
{
    bool initiator;

    if (hs->state == NOISE_STATE_CONSUMED_RESPONSE)
        initiator = true;
    else if (hs->state == NOISE_STATE_CREATED_RESPONSE)
        initiator = false;
    else
        return -WG_ESTATE;

    sodium_memzero(kp, sizeof(*kp));
    if (initiator)
        noise_ik_split(&hs->sym, kp->send_key, kp->recv_key);
    else
        noise_ik_split(&hs->sym, kp->recv_key, kp->send_key);
    replay_init(&kp->replay);
    kp->birth_ns = now_ns;
    kp->local_index = hs->local_index;
    kp->remote_index = hs->remote_index;
    kp->is_initiator = initiator;
    noise_handshake_reset(hs);
    return 0;
}
