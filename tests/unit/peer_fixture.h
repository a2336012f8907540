/* SPDX-License-Identifier: MIT */
/* Test support: the peers of a device built by hand (test_control,
 * test_metrics), where a test reads what a device shows without running
 * one. Tests only. */
#ifndef DDPNET_TEST_PEER_FIXTURE_H
#define DDPNET_TEST_PEER_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "overlay/engine/model/device.h"

/* One zeroed peer for each of dev->cluster's nodes 1..n (node 0 is the
 * device's self): its name, public key and address, no endpoint; stored
 * in peers[0..n-1] and installed as dev->peers. Fails the test when out
 * of memory. */
void peer_fixture_fill(struct device *dev, struct peer **peers, size_t n);
/* Frees what peer_fixture_fill made. */
void peer_fixture_free(struct peer **peers, size_t n);
/* Sets p's endpoint to the IPv4 address addr, port port. */
void peer_fixture_endpoint4(struct peer *p, const char *addr, uint16_t port);

#endif
