/* SPDX-License-Identifier: MIT */
/* Test support: a read from ddp0 as the kernel hands it over, for the
 * tests of what is done with one (cut, sealed). */
#ifndef DDPNET_TEST_TSO_READ_H
#define DDPNET_TEST_TSO_READ_H

#include <stddef.h>
#include <stdint.h>

#include "overlay/loop/pkt.h"

#define TSO_READ_HDRS 40u    /* IPv4 and TCP, no options */

/* Writes into p->in (and p->len) a TCP/IPv4 super-packet from 10.77.0.1
 * to 10.77.0.2 with `payload` bytes (byte i is i * 7 + 1) and its vnet
 * header: NEEDS_CSUM, TSO at gso_size. Returns that header. */
struct vnet_hdr tso_read(struct pkt *p, size_t payload, uint16_t gso_size);

#endif
