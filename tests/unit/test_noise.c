/* SPDX-License-Identifier: MIT */
/* Tests of the handshake (crypto/noise.c, crypto/noise_ik.c): the Noise
 * IKpsk2 vector, full handshakes between two in-memory parties with and
 * without a pre-shared key, every byte of each message flipped, replayed and
 * flooding initiations, unknown peers, low-order keys, the cookie path under
 * load, no allocation on unauthenticated input, and no secret left behind on
 * the stack. */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/cookie.h"
#include "crypto/noise.h"
#include "crypto/tai64n.h"
#include "crypto/transport.h"
#include "crypto/x25519.h"
#include "tests/unit/alloc_count.h"
#include "tests/unit/vectors.h"

#define SEC WG_NSEC_PER_SEC

struct party {
    uint8_t priv[WG_KEY_LEN], pub[WG_KEY_LEN];
    struct noise_local *local;
    struct noise_handshake hs;           /* towards the other party */
    struct cookie_checker checker;
    struct cookie_maker maker;           /* towards the other party */
    struct noise_keypair kp;
    struct noise_lookup lookup;
    uint64_t clock_sec;                  /* feeds the TAI64N timestamps */
};

struct world {
    struct party a, b;                   /* a initiates */
    uint64_t now;
};

static const uint8_t src_a[] = { 192, 0, 2, 1, 0xca, 0x6c };
static const uint8_t src_b[] = { 192, 0, 2, 2, 0xca, 0x6c };

static struct noise_handshake *by_key(void *ctx, const uint8_t key[WG_KEY_LEN])
{
    struct party *p = ctx;
    return sodium_memcmp(key, p->hs.remote_static, WG_KEY_LEN) == 0 ? &p->hs : NULL;
}

static struct noise_handshake *by_index(void *ctx, uint32_t index)
{
    struct party *p = ctx;
    return p->hs.state != NOISE_STATE_ZEROED && p->hs.local_index == index ? &p->hs : NULL;
}

static void party_keys(struct party *p)
{
    x25519_generate(p->priv, p->pub);
    p->local = noise_local_new(p->priv);
    assert_non_null(p->local);
    p->lookup = (struct noise_lookup){ by_key, by_index, p };
    p->clock_sec = 1700000000;
}

static void party_link(struct party *p, const struct party *peer, const uint8_t *psk)
{
    assert_int_equal(noise_handshake_init(&p->hs, p->local, peer->pub, psk), 0);
    cookie_checker_init(&p->checker, p->pub, 0);
    cookie_maker_init(&p->maker, peer->pub);
}

static struct world *world_new(const uint8_t *psk_a, const uint8_t *psk_b)
{
    struct world *w = calloc(1, sizeof(*w));
    assert_non_null(w);
    party_keys(&w->a);
    party_keys(&w->b);
    party_link(&w->a, &w->b, psk_a);
    party_link(&w->b, &w->a, psk_b);
    w->now = 1000 * SEC;
    return w;
}

static void world_free(struct world *w)
{
    noise_local_free(w->a.local);
    noise_local_free(w->b.local);
    sodium_memzero(w, sizeof(*w));
    free(w);
}

static void timestamp(struct party *p, uint8_t ts[WG_TIMESTAMP_LEN])
{
    tai64n_encode(ts, ++p->clock_sec, 0);
}

/* a writes an initiation with both MACs. */
static void make_initiation(struct world *w, uint8_t msg[WG_INITIATION_LEN])
{
    uint8_t ts[WG_TIMESTAMP_LEN];

    timestamp(&w->a, ts);
    assert_int_equal(noise_create_initiation(&w->a.hs, w->a.local, 0x1111, ts, msg), 0);
    cookie_add_macs(&w->a.maker, msg, WG_INITIATION_LEN, w->now);
}

/* The responder's whole receive path for an initiation. */
static int b_receive_initiation(struct world *w, const uint8_t *msg, size_t len, bool load)
{
    struct noise_handshake *peer = NULL;
    int ret = cookie_validate(&w->b.checker, msg, len, src_a, sizeof(src_a), load);

    if (ret)
        return ret;
    ret = noise_consume_initiation(w->b.local, msg, len, w->now, &w->b.lookup, &peer);
    if (ret == 0)
        assert_ptr_equal(peer, &w->b.hs);
    return ret;
}

static void make_response(struct world *w, uint8_t msg[WG_RESPONSE_LEN])
{
    assert_int_equal(noise_create_response(&w->b.hs, 0x2222, msg), 0);
    cookie_add_macs(&w->b.maker, msg, WG_RESPONSE_LEN, w->now);
}

static int a_receive_response(struct world *w, const uint8_t *msg, size_t len)
{
    struct noise_handshake *peer = NULL;
    int ret = cookie_validate(&w->a.checker, msg, len, src_b, sizeof(src_b), false);

    if (ret)
        return ret;
    ret = noise_consume_response(w->a.local, msg, len, &w->a.lookup, &peer);
    if (ret == 0)
        assert_ptr_equal(peer, &w->a.hs);
    return ret;
}

static void full_handshake(struct world *w)
{
    uint8_t init[WG_INITIATION_LEN], resp[WG_RESPONSE_LEN];

    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    make_response(w, resp);
    assert_int_equal(a_receive_response(w, resp, sizeof(resp)), 0);
    assert_int_equal(noise_begin_session(&w->a.hs, &w->a.kp, w->now), 0);
    assert_int_equal(noise_begin_session(&w->b.hs, &w->b.kp, w->now), 0);
}

/* Seals len bytes of pattern at `from`, opens at `to`, checks the bytes. */
static void send_transport(struct noise_keypair *from, struct noise_keypair *to, size_t len,
                           uint64_t now)
{
    uint8_t buf[2048], plain[2048];
    struct transport_packet p = { .buf = buf, .cap = sizeof(buf), .len = len };

    randombytes_buf(plain, len);
    memcpy(buf + WG_TRANSPORT_HEADER_LEN, plain, len);
    assert_int_equal(transport_seal(from, &p, now), 0);
    assert_int_equal(p.len, transport_sealed_len(len));
    assert_int_equal(transport_open(to, &p, now), 0);
    assert_int_equal(p.len, transport_padded_len(len));
    assert_memory_equal(buf + WG_TRANSPORT_HEADER_LEN, plain, len);
}

/* --- the Noise test vector ------------------------------------------------- */

static void vec_key(uint8_t out[WG_KEY_LEN], const struct json *v, const char *name)
{
    hex_decode_to(out, WG_KEY_LEN, json_get_str(v, name));
}

/* Runs one vector through the IKpsk2 pattern code; returns whether every
 * message and the handshake hash matched. */
static bool run_noise_vector(const struct json *v)
{
    uint8_t s_i[32], e_i[32], rs[32], s_r[32], e_r[32], psk[32], hash[32];
    uint8_t s_i_pub[32], s_r_pub[32], ss_dh[32], e_remote[32], s_remote[32];
    uint8_t t1[32], t2[32], out[512], plain[512];
    struct noise_symmetric ini, res;
    const struct json *msgs = json_get(v, "messages"), *psks = json_get(v, "init_psks");
    size_t prologue_len, plen, clen;
    uint8_t *prologue = hex_decode(json_get_str(v, "init_prologue"), &prologue_len);
    bool ok = msgs && msgs->n == 6 && psks && psks->n == 1;

    if (!ok) {
        free(prologue);
        return false;
    }
    vec_key(s_i, v, "init_static");
    vec_key(e_i, v, "init_ephemeral");
    vec_key(rs, v, "init_remote_static");
    vec_key(s_r, v, "resp_static");
    vec_key(e_r, v, "resp_ephemeral");
    vec_key(hash, v, "handshake_hash");
    hex_decode_to(psk, 32, psks->child[0].str);
    assert_int_equal(x25519_public(s_i_pub, s_i), 0);
    assert_int_equal(x25519_public(s_r_pub, s_r), 0);
    ok = ok && sodium_memcmp(rs, s_r_pub, 32) == 0;

    noise_ik_init(&ini, prologue, prologue_len, rs);
    noise_ik_init(&res, prologue, prologue_len, s_r_pub);

    /* message 1: initiator -> responder */
    uint8_t *payload = hex_decode(json_get_str(&msgs->child[0], "payload"), &plen);
    uint8_t *expect = hex_decode(json_get_str(&msgs->child[0], "ciphertext"), &clen);
    assert_int_equal(x25519_shared(ss_dh, s_i, rs), 0);
    ok = ok && clen == NOISE_IK_MSG1_LEN(plen) &&
         noise_ik_write_msg1(&ini, e_i, s_i_pub, rs, ss_dh, payload, plen, out) == 0 &&
         memcmp(out, expect, clen) == 0;
    ok = ok && noise_ik_read_msg1_static(&res, s_r, out, e_remote, s_remote) == 0 &&
         memcmp(s_remote, s_i_pub, 32) == 0 &&
         noise_ik_read_msg1_payload(&res, ss_dh, out, plen, plain) == 0 &&
         memcmp(plain, payload, plen) == 0;
    free(payload);
    free(expect);

    /* message 2: responder -> initiator */
    payload = hex_decode(json_get_str(&msgs->child[1], "payload"), &plen);
    expect = hex_decode(json_get_str(&msgs->child[1], "ciphertext"), &clen);
    ok = ok && clen == NOISE_IK_MSG2_LEN(plen) &&
         noise_ik_write_msg2(&res, e_r, e_remote, s_remote, psk, payload, plen, out) == 0 &&
         memcmp(out, expect, clen) == 0;
    ok = ok && noise_ik_read_msg2(&ini, e_i, s_i, psk, out, plen, plain) == 0 &&
         memcmp(plain, payload, plen) == 0;
    ok = ok && memcmp(ini.h, hash, 32) == 0 && memcmp(res.h, hash, 32) == 0;
    free(payload);
    free(expect);

    /* messages 3..6: transport, alternating, nonces counting per direction */
    noise_ik_split(&ini, t1, t2);
    for (size_t i = 2; i < 6; i++) {
        const uint8_t *key = i % 2 == 0 ? t1 : t2;
        payload = hex_decode(json_get_str(&msgs->child[i], "payload"), &plen);
        expect = hex_decode(json_get_str(&msgs->child[i], "ciphertext"), &clen);
        aead_seal(out, payload, plen, NULL, 0, (i - 2) / 2, key);
        ok = ok && clen == plen + WG_AEAD_TAG_LEN && memcmp(out, expect, clen) == 0;
        free(payload);
        free(expect);
    }
    free(prologue);
    return ok;
}

static void test_noise_vector(void **state)
{
    (void)state;
    const char *path = vectors_path("noise/IKpsk2_25519_ChaChaPoly_BLAKE2s.json");
    struct json *doc = json_load(path);
    if (!doc) {
        printf("noise ikpsk2: skipped (no %s)\n", path);
        skip();
    }
    const struct json *vecs = json_get(doc, "vectors");
    assert_non_null(vecs);
    size_t passed = 0;
    for (size_t i = 0; i < vecs->n; i++)
        passed += run_noise_vector(&vecs->child[i]);
    vectors_report("noise ikpsk2", passed, vecs->n);
    assert_true(vecs->n > 0);
    assert_int_equal(passed, vecs->n);
    json_free(doc);
}

/* --- handshakes ----------------------------------------------------------- */

static void check_session(struct world *w)
{
    assert_memory_equal(w->a.kp.send_key, w->b.kp.recv_key, WG_KEY_LEN);
    assert_memory_equal(w->a.kp.recv_key, w->b.kp.send_key, WG_KEY_LEN);
    assert_memory_not_equal(w->a.kp.send_key, w->a.kp.recv_key, WG_KEY_LEN);
    assert_true(w->a.kp.is_initiator);
    assert_false(w->b.kp.is_initiator);
    assert_int_equal(w->a.kp.local_index, 0x1111);
    assert_int_equal(w->a.kp.remote_index, 0x2222);
    assert_int_equal(w->b.kp.local_index, 0x2222);
    assert_int_equal(w->b.kp.remote_index, 0x1111);
    /* The handshakes are reset and hold no session secrets. */
    assert_int_equal(w->a.hs.state, NOISE_STATE_ZEROED);
    assert_int_equal(w->b.hs.state, NOISE_STATE_ZEROED);
    assert_true(sodium_is_zero(w->a.hs.ephemeral_private, WG_KEY_LEN));
    assert_true(sodium_is_zero((const uint8_t *)&w->b.hs.sym, sizeof(w->b.hs.sym)));
    /* Transport both ways, keepalives and full packets. */
    for (size_t len = 0; len <= 1420; len += 71) {
        send_transport(&w->a.kp, &w->b.kp, len, w->now);
        send_transport(&w->b.kp, &w->a.kp, len, w->now);
    }
}

static void test_handshake_without_psk(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    full_handshake(w);
    check_session(w);
    /* A second handshake gives fresh keys. */
    uint8_t old[WG_KEY_LEN];
    memcpy(old, w->a.kp.send_key, WG_KEY_LEN);
    w->now += SEC;
    full_handshake(w);
    check_session(w);
    assert_memory_not_equal(old, w->a.kp.send_key, WG_KEY_LEN);
    world_free(w);
}

static void test_handshake_with_psk(void **state)
{
    (void)state;
    uint8_t psk[WG_KEY_LEN];
    randombytes_buf(psk, sizeof(psk));
    struct world *w = world_new(psk, psk);
    full_handshake(w);
    check_session(w);
    world_free(w);
}

static void test_psk_mismatch(void **state)
{
    (void)state;
    uint8_t psk_a[WG_KEY_LEN], psk_b[WG_KEY_LEN], init[WG_INITIATION_LEN], resp[WG_RESPONSE_LEN];
    randombytes_buf(psk_a, sizeof(psk_a));
    memcpy(psk_b, psk_a, sizeof(psk_b));
    psk_b[7] ^= 1;
    struct world *w = world_new(psk_a, psk_b);
    make_initiation(w, init);
    /* The psk enters only with the response, which the initiator refuses. */
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    make_response(w, resp);
    struct noise_handshake before = w->a.hs;
    assert_int_equal(a_receive_response(w, resp, sizeof(resp)), -EBADMSG);
    assert_memory_equal(&before, &w->a.hs, sizeof(before));
    world_free(w);
}

/* --- bad input ---------------------------------------------------------------- */

/* Every byte up to mac2, flipped, is refused (mac2 is not checked when not
 * under load), and the responder's state does not move. With mac1 fixed up
 * (an attacker who knows the public key) the AEADs refuse the same bytes,
 * except the sender index, which only mac1 covers, as in WireGuard. */
static void test_initiation_flip_every_byte(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], bad[WG_INITIATION_LEN];
    make_initiation(w, init);
    struct noise_handshake hs_before = w->b.hs;
    struct cookie_checker checker_before = w->b.checker;

    for (size_t i = 0; i < WG_INITIATION_LEN - WG_MAC_LEN; i++) {
        memcpy(bad, init, sizeof(bad));
        bad[i] ^= 0xff;
        assert_int_not_equal(b_receive_initiation(w, bad, sizeof(bad), false), 0);
        assert_memory_equal(&hs_before, &w->b.hs, sizeof(hs_before));
        assert_memory_equal(&checker_before, &w->b.checker, sizeof(checker_before));

        bool sender_index = i >= 4 && i < 8;
        if (i >= WG_INITIATION_LEN - WG_MACS_LEN || sender_index)
            continue;
        cookie_add_macs(&w->a.maker, bad, sizeof(bad), w->now);
        assert_int_not_equal(b_receive_initiation(w, bad, sizeof(bad), false), 0);
        assert_memory_equal(&hs_before, &w->b.hs, sizeof(hs_before));
    }
    /* The untouched message is still good: the refusals were for the flips. */
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    world_free(w);
}

static void test_response_flip_every_byte(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], resp[WG_RESPONSE_LEN], bad[WG_RESPONSE_LEN];
    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    make_response(w, resp);
    struct noise_handshake hs_before = w->a.hs;

    for (size_t i = 0; i < WG_RESPONSE_LEN - WG_MAC_LEN; i++) {
        memcpy(bad, resp, sizeof(bad));
        bad[i] ^= 0xff;
        assert_int_not_equal(a_receive_response(w, bad, sizeof(bad)), 0);
        assert_memory_equal(&hs_before, &w->a.hs, sizeof(hs_before));

        bool sender_index = i >= 4 && i < 8;
        if (i >= WG_RESPONSE_LEN - WG_MACS_LEN || sender_index)
            continue;
        cookie_add_macs(&w->b.maker, bad, sizeof(bad), w->now);
        assert_int_not_equal(a_receive_response(w, bad, sizeof(bad)), 0);
        assert_memory_equal(&hs_before, &w->a.hs, sizeof(hs_before));
    }
    assert_int_equal(a_receive_response(w, resp, sizeof(resp)), 0);
    world_free(w);
}

static void test_truncated_and_wrong_type(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN + 1], resp[WG_RESPONSE_LEN + 1];
    struct noise_handshake *peer = NULL;
    make_initiation(w, init);
    for (size_t len = 0; len <= sizeof(init); len++)
        if (len != WG_INITIATION_LEN)
            assert_int_equal(noise_consume_initiation(w->b.local, init, len, w->now,
                                                      &w->b.lookup, &peer), -EBADMSG);
    assert_int_equal(b_receive_initiation(w, init, WG_INITIATION_LEN, false), 0);
    make_response(w, resp);
    for (size_t len = 0; len <= sizeof(resp); len++)
        if (len != WG_RESPONSE_LEN)
            assert_int_equal(noise_consume_response(w->a.local, resp, len, &w->a.lookup,
                                                    &peer), -EBADMSG);
    /* A response offered as an initiation and the other way round. */
    assert_int_equal(noise_consume_initiation(w->b.local, resp, WG_INITIATION_LEN, w->now,
                                              &w->b.lookup, &peer), -EBADMSG);
    assert_int_equal(noise_consume_response(w->a.local, init, WG_RESPONSE_LEN, &w->a.lookup,
                                            &peer), -EBADMSG);
    assert_null(peer);
    world_free(w);
}

static void test_initiation_replay_rejected(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], older[WG_INITIATION_LEN];
    make_initiation(w, older);
    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    struct noise_handshake before = w->b.hs;
    w->now += SEC;   /* well past the flood limit: only the timestamp refuses */
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), -WG_ETIMESTAMP);
    assert_int_equal(b_receive_initiation(w, older, sizeof(older), false), -WG_ETIMESTAMP);
    assert_memory_equal(&before, &w->b.hs, sizeof(before));
    /* A fresh one is taken. */
    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    world_free(w);
}

static void test_initiation_flood_rejected(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN];
    uint64_t gap = WG_NSEC_PER_SEC / WG_INITIATIONS_PER_SECOND;
    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    struct noise_handshake before = w->b.hs;
    make_initiation(w, init);
    w->now += gap - 1;
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), -WG_EFLOOD);
    assert_memory_equal(&before, &w->b.hs, sizeof(before));
    w->now += 1;
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    world_free(w);
}

static void test_unknown_peer(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    struct party stranger = { 0 };
    uint8_t ts[WG_TIMESTAMP_LEN], init[WG_INITIATION_LEN];
    struct noise_handshake *peer = NULL;
    party_keys(&stranger);
    party_link(&stranger, &w->b, NULL);
    tai64n_encode(ts, 1800000000, 0);
    assert_int_equal(noise_create_initiation(&stranger.hs, stranger.local, 7, ts, init), 0);
    cookie_add_macs(&stranger.maker, init, sizeof(init), w->now);
    /* mac1 is right (it knows b's key), but b has no such peer. */
    assert_int_equal(cookie_validate(&w->b.checker, init, sizeof(init), src_a, sizeof(src_a),
                                     false), 0);
    struct noise_handshake before = w->b.hs;
    assert_int_equal(noise_consume_initiation(w->b.local, init, sizeof(init), w->now,
                                              &w->b.lookup, &peer), -WG_ENOPEER);
    assert_null(peer);
    assert_memory_equal(&before, &w->b.hs, sizeof(before));
    noise_local_free(stranger.local);
    world_free(w);
}

static void test_response_state_and_index(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], resp[WG_RESPONSE_LEN];
    struct noise_handshake *peer = NULL;
    struct noise_keypair kp;

    assert_int_equal(noise_begin_session(&w->a.hs, &kp, w->now), -WG_ESTATE);
    assert_int_equal(noise_create_response(&w->b.hs, 5, resp), -WG_ESTATE);
    make_initiation(w, init);
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    assert_int_equal(noise_begin_session(&w->b.hs, &kp, w->now), -WG_ESTATE);
    make_response(w, resp);
    /* Unknown receiver index. */
    resp[8] ^= 0x55;
    assert_int_equal(noise_consume_response(w->a.local, resp, sizeof(resp), &w->a.lookup,
                                            &peer), -WG_ENOPEER);
    resp[8] ^= 0x55;
    assert_int_equal(a_receive_response(w, resp, sizeof(resp)), 0);
    /* The same response again: the handshake has moved on. */
    assert_int_equal(noise_consume_response(w->a.local, resp, sizeof(resp), &w->a.lookup,
                                            &peer), -WG_ESTATE);
    world_free(w);
}

static void test_low_order_keys(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    struct noise_handshake hs;
    uint8_t zero[WG_KEY_LEN] = { 0 }, init[WG_INITIATION_LEN];

    assert_int_equal(noise_handshake_init(&hs, w->a.local, zero, NULL), -EINVAL);
    assert_true(sodium_is_zero((const uint8_t *)&hs, sizeof(hs)));
    /* An initiation whose ephemeral key has low order (mac1 fixed up). */
    make_initiation(w, init);
    memset(init + 8, 0, WG_KEY_LEN);
    cookie_add_macs(&w->a.maker, init, sizeof(init), w->now);
    struct noise_handshake before = w->b.hs;
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), -EBADMSG);
    assert_memory_equal(&before, &w->b.hs, sizeof(before));
    world_free(w);
}

/* --- under load: cookies ---------------------------------------------------- */

static void test_cookie_round_trip(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], reply[WG_COOKIE_REPLY_LEN];

    make_initiation(w, init);
    struct noise_handshake before = w->b.hs;
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), true), -WG_ECOOKIE);
    assert_memory_equal(&before, &w->b.hs, sizeof(before));
    assert_int_equal(cookie_create_reply(&w->b.checker, init, sizeof(init), 0x1111, src_a,
                                         sizeof(src_a), reply), 0);
    assert_int_equal(cookie_reply_receiver(reply), 0x1111);
    assert_int_equal(cookie_consume_reply(&w->a.maker, reply, sizeof(reply), w->now), 0);

    /* The retry carries mac2 and passes; flipping any byte of mac2 fails. */
    w->now += SEC;
    make_initiation(w, init);
    for (size_t i = WG_INITIATION_LEN - WG_MAC_LEN; i < WG_INITIATION_LEN; i++) {
        init[i] ^= 0xff;
        assert_int_equal(b_receive_initiation(w, init, sizeof(init), true), -WG_ECOOKIE);
        assert_memory_equal(&before, &w->b.hs, sizeof(before));
        init[i] ^= 0xff;
    }
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), true), 0);
    world_free(w);
}

/* --- resources and secrets ----------------------------------------------------- */

static void test_no_allocation_on_receive(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t init[WG_INITIATION_LEN], resp[WG_RESPONSE_LEN], junk[WG_INITIATION_LEN];
    struct noise_handshake *peer;
    make_initiation(w, init);
    randombytes_buf(junk, sizeof(junk));
    junk[0] = WG_MSG_INITIATION;
    junk[1] = junk[2] = junk[3] = 0;

    size_t before = alloc_count();
    for (int i = 0; i < 100; i++) {
        (void)b_receive_initiation(w, junk, sizeof(junk), i % 2);
        (void)noise_consume_initiation(w->b.local, junk, sizeof(junk), w->now, &w->b.lookup,
                                       &peer);
    }
    assert_int_equal(b_receive_initiation(w, init, sizeof(init), false), 0);
    assert_int_equal(alloc_count(), before);
    make_response(w, resp);
    assert_int_equal(a_receive_response(w, resp, sizeof(resp)), 0);
    assert_int_equal(alloc_count(), before);
    world_free(w);
}

/* Secrets left on the stack: each step of a handshake runs on a scratch
 * stack of its own (ucontext), which is then searched for the secrets that
 * step handled. Nothing else runs on that stack, so a secret found there
 * was left by the step itself. */
#define SCRATCH_STACK_BYTES (256 * 1024)
static uint8_t scratch_stack[SCRATCH_STACK_BYTES] __attribute__((aligned(16)));
static ucontext_t main_context, step_context;
static void (*step_fn)(struct world *);
static struct world *step_world;

static void step_trampoline(void)
{
    step_fn(step_world);
}

static void run_on_scratch_stack(void (*fn)(struct world *), struct world *w)
{
    memset(scratch_stack, 0, sizeof(scratch_stack));
    step_fn = fn;
    step_world = w;
    assert_int_equal(getcontext(&step_context), 0);
    step_context.uc_stack.ss_sp = scratch_stack;
    step_context.uc_stack.ss_size = sizeof(scratch_stack);
    step_context.uc_link = &main_context;
    makecontext(&step_context, step_trampoline, 0);
    assert_int_equal(swapcontext(&main_context, &step_context), 0);
}

static void assert_not_on_scratch_stack(const uint8_t *secret, const char *what)
{
    if (memmem(scratch_stack, sizeof(scratch_stack), secret, WG_KEY_LEN))
        fail_msg("%s left on the stack", what);
}

/* The steps record their results instead of asserting: a failed assert
 * would jump out of the scratch context. */
static int step_ret;
static uint8_t step_init[WG_INITIATION_LEN], step_resp[WG_RESPONSE_LEN];
static uint8_t step_bad_init[WG_INITIATION_LEN], step_bad_resp[WG_RESPONSE_LEN];
static struct noise_handshake *step_peer;

/* Each step is one call of the code under test, so that no later call
 * overwrites what it left behind. */
static void step_create_initiation(struct world *w)
{
    uint8_t ts[WG_TIMESTAMP_LEN] = { 0 };
    ts[0] = (uint8_t)++w->a.clock_sec;
    step_ret = noise_create_initiation(&w->a.hs, w->a.local, 0x1111, ts, step_init);
}

static void step_consume_bad_initiation(struct world *w)
{
    step_ret = noise_consume_initiation(w->b.local, step_bad_init, sizeof(step_bad_init),
                                        w->now, &w->b.lookup, &step_peer);
}

static void step_consume_initiation(struct world *w)
{
    step_ret = noise_consume_initiation(w->b.local, step_init, sizeof(step_init), w->now,
                                        &w->b.lookup, &step_peer);
}

static void step_create_response(struct world *w)
{
    step_ret = noise_create_response(&w->b.hs, 0x2222, step_resp);
}

static void step_consume_bad_response(struct world *w)
{
    step_ret = noise_consume_response(w->a.local, step_bad_resp, sizeof(step_bad_resp),
                                      &w->a.lookup, &step_peer);
}

static void step_consume_response(struct world *w)
{
    step_ret = noise_consume_response(w->a.local, step_resp, sizeof(step_resp), &w->a.lookup,
                                      &step_peer);
}

static void step_begin_session(struct world *w)
{
    step_ret = noise_begin_session(&w->a.hs, &w->a.kp, w->now);
}

static uint8_t step_buf[256];
static void step_seal(struct world *w)
{
    struct transport_packet p = { .buf = step_buf, .cap = sizeof(step_buf), .len = 100 };
    step_ret = transport_seal(&w->a.kp, &p, w->now);
}

static void step_open(struct world *w)
{
    struct transport_packet p = { .buf = step_buf, .cap = sizeof(step_buf),
                                  .len = transport_sealed_len(100) };
    step_ret = transport_open(&w->b.kp, &p, w->now);
}

__attribute__((noinline))
static void step_leave_secret(struct world *w)
{
    volatile uint8_t copy[WG_KEY_LEN];
    for (size_t i = 0; i < WG_KEY_LEN; i++)
        copy[i] = w->a.kp.send_key[i];
    (void)copy[0];
}

static void test_secrets_wiped_from_stack(void **state)
{
    (void)state;
    struct world *w = world_new(NULL, NULL);
    uint8_t e_a[WG_KEY_LEN], e_b[WG_KEY_LEN], e_a_pub[WG_KEY_LEN], e_b_pub[WG_KEY_LEN];
    uint8_t es[WG_KEY_LEN], ee[WG_KEY_LEN], se[WG_KEY_LEN], ss[WG_KEY_LEN];
    memcpy(ss, w->a.hs.precomputed_ss, WG_KEY_LEN);

    run_on_scratch_stack(step_create_initiation, w);
    assert_int_equal(step_ret, 0);
    memcpy(e_a, w->a.hs.ephemeral_private, WG_KEY_LEN);
    assert_int_equal(x25519_public(e_a_pub, e_a), 0);
    assert_int_equal(x25519_shared(es, e_a, w->b.pub), 0);
    assert_not_on_scratch_stack(e_a, "initiator ephemeral key");
    assert_not_on_scratch_stack(es, "es");
    assert_not_on_scratch_stack(ss, "ss");
    assert_not_on_scratch_stack(w->a.priv, "initiator static key");
    assert_not_on_scratch_stack(w->a.hs.sym.ck, "chaining key");
    cookie_add_macs(&w->a.maker, step_init, sizeof(step_init), w->now);

    /* A forged timestamp (mac1 fixed up) fails after every DH was done. */
    memcpy(step_bad_init, step_init, sizeof(step_init));
    step_bad_init[100] ^= 1;
    cookie_add_macs(&w->a.maker, step_bad_init, sizeof(step_bad_init), w->now);
    run_on_scratch_stack(step_consume_bad_initiation, w);
    assert_int_equal(step_ret, -EBADMSG);
    assert_not_on_scratch_stack(es, "es");
    assert_not_on_scratch_stack(ss, "ss");
    assert_not_on_scratch_stack(w->b.priv, "responder static key");
    run_on_scratch_stack(step_consume_initiation, w);
    assert_int_equal(step_ret, 0);
    assert_not_on_scratch_stack(es, "es");
    assert_not_on_scratch_stack(ss, "ss");
    assert_not_on_scratch_stack(w->b.priv, "responder static key");
    assert_not_on_scratch_stack(w->b.hs.sym.ck, "chaining key");

    run_on_scratch_stack(step_create_response, w);
    assert_int_equal(step_ret, 0);
    memcpy(e_b, w->b.hs.ephemeral_private, WG_KEY_LEN);
    assert_int_equal(x25519_public(e_b_pub, e_b), 0);
    assert_int_equal(x25519_shared(ee, e_b, e_a_pub), 0);
    assert_int_equal(x25519_shared(se, e_b, w->a.pub), 0);
    assert_not_on_scratch_stack(e_b, "responder ephemeral key");
    assert_not_on_scratch_stack(ee, "ee");
    assert_not_on_scratch_stack(se, "se");
    assert_not_on_scratch_stack(w->b.hs.sym.ck, "chaining key");
    cookie_add_macs(&w->b.maker, step_resp, sizeof(step_resp), w->now);

    memcpy(step_bad_resp, step_resp, sizeof(step_resp));
    step_bad_resp[50] ^= 1;
    run_on_scratch_stack(step_consume_bad_response, w);
    assert_int_equal(step_ret, -EBADMSG);
    assert_not_on_scratch_stack(ee, "ee");
    assert_not_on_scratch_stack(se, "se");
    run_on_scratch_stack(step_consume_response, w);
    assert_int_equal(step_ret, 0);
    assert_not_on_scratch_stack(ee, "ee");
    assert_not_on_scratch_stack(se, "se");
    assert_not_on_scratch_stack(e_a, "initiator ephemeral key");
    assert_not_on_scratch_stack(w->a.hs.sym.ck, "chaining key");

    run_on_scratch_stack(step_begin_session, w);
    assert_int_equal(step_ret, 0);
    assert_int_equal(noise_begin_session(&w->b.hs, &w->b.kp, w->now), 0);
    assert_not_on_scratch_stack(w->a.kp.send_key, "sending key");
    assert_not_on_scratch_stack(w->a.kp.recv_key, "receiving key");
    memset(step_buf, 0x42, sizeof(step_buf));
    run_on_scratch_stack(step_seal, w);
    assert_int_equal(step_ret, 0);
    assert_not_on_scratch_stack(w->a.kp.send_key, "sending key");
    run_on_scratch_stack(step_open, w);
    assert_int_equal(step_ret, 0);
    assert_not_on_scratch_stack(w->b.kp.recv_key, "receiving key");

    /* The scan itself works: a step that leaves a key behind is caught. */
    run_on_scratch_stack(step_leave_secret, w);
    assert_non_null(memmem(scratch_stack, sizeof(scratch_stack), w->a.kp.send_key, WG_KEY_LEN));

    sodium_memzero(es, sizeof(es));
    sodium_memzero(ee, sizeof(ee));
    sodium_memzero(se, sizeof(se));
    world_free(w);
}

static int setup(void **state)
{
    (void)state;
    return crypto_core_init();
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_noise_vector),
        cmocka_unit_test(test_handshake_without_psk),
        cmocka_unit_test(test_handshake_with_psk),
        cmocka_unit_test(test_psk_mismatch),
        cmocka_unit_test(test_initiation_flip_every_byte),
        cmocka_unit_test(test_response_flip_every_byte),
        cmocka_unit_test(test_truncated_and_wrong_type),
        cmocka_unit_test(test_initiation_replay_rejected),
        cmocka_unit_test(test_initiation_flood_rejected),
        cmocka_unit_test(test_unknown_peer),
        cmocka_unit_test(test_response_state_and_index),
        cmocka_unit_test(test_low_order_keys),
        cmocka_unit_test(test_cookie_round_trip),
        cmocka_unit_test(test_no_allocation_on_receive),
        cmocka_unit_test(test_secrets_wiped_from_stack),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
