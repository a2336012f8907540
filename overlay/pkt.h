/* Packet buffers: a pool preallocated at start-up, so the data path never
 * allocates. One buffer carries one packet through its whole life (TUN read
 * -> seal in place -> UDP send, or UDP receive -> open in place -> TUN
 * write); the I/O in flight on it is described in the same struct, which is
 * also what io_uring hands back on completion. */
#ifndef DDPNET_PKT_H
#define DDPNET_PKT_H

#include <stdint.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "overlay/device.h"

enum pkt_op {
    PKT_IDLE,
    PKT_TUN_READ,
    PKT_TUN_WRITE,
    PKT_UDP_RECV,
    PKT_UDP_SEND,
};

struct pkt {
    enum pkt_op op;
    struct pkt *next;            /* free list or a peer's staged queue */
    uint32_t len;                /* bytes of data in use (see the op) */
    int fd;                      /* socket of a receive or send */
    union endpoint addr;         /* source of a receive, destination of a send */
    struct msghdr msg;
    struct iovec iov;
    /* Plaintext sits at data + WG_TRANSPORT_HEADER_LEN, leaving room to seal
     * in place; messages start at data. */
    uint8_t data[DEVICE_PKT_CAP] __attribute__((aligned(16)));
};

struct pkt_pool {
    struct pkt *all;
    struct pkt *free;
    unsigned n, n_free;
};

int pkt_pool_init(struct pkt_pool *pool, unsigned n);
void pkt_pool_destroy(struct pkt_pool *pool);
/* NULL when every buffer is in use. */
struct pkt *pkt_get(struct pkt_pool *pool);
void pkt_put(struct pkt_pool *pool, struct pkt *p);
/* Plaintext pointer of a buffer. */
static inline uint8_t *pkt_plain(struct pkt *p)
{
    return p->data + WG_TRANSPORT_HEADER_LEN;
}

#endif
