/* SPDX-License-Identifier: MIT */
/* Tests of the device's in-memory state (overlay/engine/model/device.c, device_setup.c, peer.c): peers
 * made from a cluster file, lookup by overlay address (IPv4 and IPv6), by
 * key and by name, endpoints taken from the file, keypair rotation, and the
 * rate estimate. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <cmocka.h>
#include <sodium.h>

#include "crypto/aead.h"
#include "crypto/x25519.h"
#include "overlay/engine/device_setup.h"
#include "overlay/engine/engine.h"

#define NODES 40

struct fixture {
    struct device dev;
    uint8_t priv[NODES][WG_KEY_LEN], pub[NODES][WG_KEY_LEN];
};

static void make_cluster(struct fixture *f, bool ipv6)
{
    size_t cap = 64 * 1024, len = 0;
    char *text = malloc(cap), b64[64];
    assert_non_null(text);
    len += (size_t)snprintf(text + len, cap - len, "[cluster]\nnetwork = %s\nport = 51820\n",
                            ipv6 ? "fd77::/64" : "10.77.0.0/16");
    for (int i = 0; i < NODES; i++) {
        x25519_generate(f->priv[i], f->pub[i]);
        sodium_bin2base64(b64, sizeof(b64), f->pub[i], WG_KEY_LEN,
                          sodium_base64_VARIANT_ORIGINAL);
        len += (size_t)snprintf(text + len, cap - len,
                                ipv6 ? "[node n%d]\npublic-key = %s\naddress = fd77::%x\n%s"
                                     : "[node n%d]\npublic-key = %s\naddress = 10.77.0.%d\n%s",
                                i, b64, i + 1, i % 2 ? "endpoint = 192.0.2.7:4000\n" : "");
    }
    struct cluster_diag diag;
    assert_int_equal(cluster_parse(text, len, &f->dev.cluster, &diag), 0);
    free(text);
    f->dev.self = &f->dev.cluster.nodes[3];
    assert_int_equal(device_init(&f->dev, f->priv[3], 1), 0);
}

static void free_fixture(struct fixture *f)
{
    device_destroy(&f->dev);
    cluster_free(&f->dev.cluster);
    free(f);
}

/* The peer whose name is `name`, in any case (names are case-blind). */
static struct peer *peer_named(struct device *dev, const char *name)
{
    for (size_t i = 0; i < dev->n_peers; i++)
        if (strcasecmp(dev->peers[i]->member.name, name) == 0)
            return dev->peers[i];
    return NULL;
}

static void test_peers_from_cluster(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, false);
    assert_int_equal(f->dev.n_peers, NODES - 1);
    for (size_t i = 0; i < f->dev.n_peers; i++)
        assert_string_not_equal(f->dev.peers[i]->member.name, "n3");   /* self left out */
    /* Endpoints from the file: literal ones known, absent ones unknown. */
    struct peer *p1 = peer_named(&f->dev, "n1"), *p2 = peer_named(&f->dev, "N2");
    assert_non_null(p1);
    assert_non_null(p2);
    assert_int_equal(p1->path.endpoint.sa.sa_family, AF_INET);
    assert_int_equal(ntohs(p1->path.endpoint.in4.sin_port), 4000);
    assert_int_equal(p2->path.endpoint.sa.sa_family, AF_UNSPEC);
    char text[64];
    assert_int_equal(endpoint_format(&p1->path.endpoint, text, sizeof(text)), 0);
    assert_string_equal(text, "192.0.2.7:4000");
    assert_null(peer_named(&f->dev, "n3"));
    assert_null(peer_named(&f->dev, "nope"));
    free_fixture(f);
}

static void test_lookup_by_address_v4(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, false);
    for (int i = 0; i < NODES; i++) {
        uint8_t a[4] = { 10, 77, 0, (uint8_t)(i + 1) };
        struct peer *p = device_peer_by_address(&f->dev, AF_INET, a);
        if (i == 3) {
            assert_null(p);                       /* ourselves */
            continue;
        }
        assert_non_null(p);
        assert_memory_equal(p->public_key, f->pub[i], WG_KEY_LEN);
        assert_ptr_equal(device_peer_by_key(&f->dev, f->pub[i]), p);
    }
    uint8_t outside[4] = { 10, 77, 1, 1 }, v6[16] = { 0xfd, 0x77 };
    assert_null(device_peer_by_address(&f->dev, AF_INET, outside));
    assert_null(device_peer_by_address(&f->dev, AF_INET6, v6));
    assert_null(device_peer_by_key(&f->dev, f->pub[3]));
    free_fixture(f);
}

static void test_lookup_by_address_v6(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, true);
    for (int i = 0; i < NODES; i++) {
        uint8_t a[16] = { 0xfd, 0x77 };
        a[15] = (uint8_t)(i + 1);
        struct peer *p = device_peer_by_address(&f->dev, AF_INET6, a);
        if (i == 3)
            assert_null(p);
        else
            assert_memory_equal(p->public_key, f->pub[i], WG_KEY_LEN);
    }
    free_fixture(f);
}

/* Keypair slots: as initiator the new one is current and the old one
 * previous; as responder the new one waits as next until it is used. */
static void test_keypair_rotation(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, false);
    struct peer *p = f->dev.peers[0];
    struct noise_keypair kp;
    uint32_t idx[4];

    for (int i = 0; i < 4; i++) {
        memset(&kp, 0, sizeof(kp));
        kp.is_initiator = i != 2;
        kp.local_index = idx[i] = index_add(&f->dev.indices, p, NULL);
        kp.send_key[0] = (uint8_t)(i + 1);
        peer_install_keypair(p, &kp);
        assert_true(sodium_is_zero((const uint8_t *)&kp, sizeof(kp)));
        /* The index now names the keypair. */
        assert_non_null(index_find(&f->dev.indices, idx[i])->keypair);
    }
    /* i=0 current; i=1 current, 0 previous; i=2 (responder) next, previous
     * dropped; i=3 (initiator) current, the unconfirmed next previous. */
    assert_int_equal(p->wg.current->send_key[0], 4);
    assert_int_equal(p->wg.previous->send_key[0], 3);
    assert_null(p->wg.next);
    assert_null(index_find(&f->dev.indices, idx[0]));
    assert_null(index_find(&f->dev.indices, idx[1]));
    /* Responder confirmation: next promoted on first use. */
    memset(&kp, 0, sizeof(kp));
    kp.local_index = index_add(&f->dev.indices, p, NULL);
    kp.send_key[0] = 5;
    peer_install_keypair(p, &kp);
    assert_false(peer_received_with_keypair(p, p->wg.current));
    assert_true(peer_received_with_keypair(p, p->wg.next));
    assert_int_equal(p->wg.current->send_key[0], 5);
    assert_int_equal(p->wg.previous->send_key[0], 4);
    peer_clear_keys(p);
    assert_null(p->wg.current);
    assert_null(p->wg.previous);
    assert_int_equal(f->dev.indices.used, 0);
    free_fixture(f);
}

static void test_rate(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, false);
    struct peer *p = f->dev.peers[0];
    uint64_t t = 100 * WG_NSEC_PER_SEC;
    peer_count_rx(p, 1000, t);                       /* opens a window */
    for (int i = 1; i < 20; i++)
        peer_count_rx(p, 1000, t + (uint64_t)i * WG_NSEC_PER_SEC / 10);
    peer_count_rx(p, 1, t + PEER_RATE_WINDOW_NS);    /* closes it: 20000 B in 2 s */
    assert_int_equal(rate_read(&p->live.rx_rate, t + PEER_RATE_WINDOW_NS), 10000);
    assert_int_equal(p->live.rx_bytes, 20001);
    /* Silence: the rate falls to zero. */
    assert_int_equal(rate_read(&p->live.rx_rate, t + 5 * PEER_RATE_WINDOW_NS), 0);
    free_fixture(f);
}

/* Peers are made and removed in one place (device_setup.h): ids from one
 * counter, whoever makes the peer; a removed peer is no relay of those
 * that stay, neither in use nor on trial. */
static void test_peer_create_remove(void **state)
{
    (void)state;
    struct fixture *f = calloc(1, sizeof(*f));
    make_cluster(f, false);
    struct device *dev = &f->dev;

    assert_int_equal(dev->next_peer_id, dev->n_peers);
    for (size_t i = 0; i < dev->n_peers; i++)
        assert_int_equal(dev->peers[i]->id, i + 1);
    /* A peer made later (membership's) takes the next id. */
    struct peer *made = peer_create(dev, &dev->cluster, &dev->cluster.nodes[7]);
    assert_non_null(made);
    assert_int_equal(made->id, dev->n_peers + 1);
    peer_free(made);

    /* peers[0] relays through `gone`; peers[2] has it on trial. */
    struct peer *stay = dev->peers[0], *gone = dev->peers[1], *trying = dev->peers[2];
    uint64_t now = 10 * WG_NSEC_PER_SEC;
    stay->path.via = gone;
    disco_relay_trial(&trying->disco.relays, gone->id, now);
    assert_int_equal(disco_relay_on_trial(&trying->disco.relays, now), gone->id);
    dev->peers[1] = dev->peers[--dev->n_peers];   /* out of the device, as membership does */
    peer_remove(gone, dev->peers, dev->n_peers, now);
    assert_null(stay->path.via);
    assert_int_equal(disco_relay_on_trial(&trying->disco.relays, now), 0);
    device_remap(dev);
    free_fixture(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_peers_from_cluster),
        cmocka_unit_test(test_lookup_by_address_v4),
        cmocka_unit_test(test_lookup_by_address_v6),
        cmocka_unit_test(test_keypair_rotation),
        cmocka_unit_test(test_rate),
        cmocka_unit_test(test_peer_create_remove),
    };
    if (crypto_core_init())
        return 1;
    return cmocka_run_group_tests(tests, NULL, NULL);
}
