/* The event loop: one io_uring drives everything the daemon does. Reads
 * from ddp0 and receives on the UDP sockets are kept in flight, each in a
 * buffer of the packet pool; sends and TUN writes are queued from the same
 * buffers; the control socket and the signal fd are polled; timers are the
 * wait's timeout, computed from the peers' earliest deadline. An idle
 * daemon sleeps in io_uring_enter until the next timer; only for a short
 * window after a packet that ends an idle spell does it poll instead
 * (busy_poll.h), so that the answer to a request finds it awake. */
#ifndef DDPNET_LOOP_H
#define DDPNET_LOOP_H

#include <liburing.h>
#include <stdbool.h>

#include "overlay/busy_poll.h"
#include "overlay/crypto_pool.h"
#include "overlay/device.h"
#include "overlay/pkt.h"

/* Buffers in the pool, and how many reads each source keeps in flight. */
#define LOOP_POOL_SIZE     192u
#define LOOP_TUN_WRITES    1024u
#define LOOP_TUN_READS     4u
#define LOOP_UDP_RECVS     8u
#define LOOP_RING_ENTRIES  1024u

struct loop {
    struct io_uring ring;
    struct pkt_pool pool;
    struct device *dev;
    int tun_fd, udp_fd[2], control_fd, signal_fd;
    unsigned tun_reads, udp_recvs[2];     /* in flight */
    bool control_polled, signal_polled, crypto_polled;
    struct crypto_pool crypto;
    struct busy_poll busy;
    bool stop;
    bool tun_gone;                        /* ddp0 was deleted under us */
};

/* Fds: the TUN device, the IPv4 and IPv6 sockets (-1 if absent), the
 * listening control socket and a signalfd for SIGTERM/SIGINT;
 * crypto_threads workers for the AEAD (crypto_pool.h), 0 for none. */
int loop_init(struct loop *l, struct device *dev, int tun_fd, int udp4_fd, int udp6_fd,
              int control_fd, int signal_fd, unsigned crypto_threads);
/* Runs until a stop signal or the loss of the TUN device. */
int loop_run(struct loop *l);
void loop_destroy(struct loop *l);

#endif
