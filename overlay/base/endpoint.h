/* SPDX-License-Identifier: MIT */
/* Where a UDP datagram comes from or goes: an IPv4 or IPv6 socket
 * address, the one type every folder of overlay/ passes around. */
#ifndef DDPNET_ENDPOINT_H
#define DDPNET_ENDPOINT_H

#include <stdbool.h>
#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

union endpoint {
    struct sockaddr sa;
    struct sockaddr_in in4;
    struct sockaddr_in6 in6;
};

/* The bytes of e that the socket calls take (sendmsg, bind, memcpy). */
static inline socklen_t endpoint_sockaddr_len(const union endpoint *e)
{
    return e->sa.sa_family == AF_INET6 ? sizeof(e->in6) : sizeof(e->in4);
}

/* "192.0.2.1:51820" or "[2001:db8::1]:51820"; "(none)" when unset.
 * 0, or -ENOSPC when buf is too small. */
int endpoint_format(const union endpoint *e, char *buf, size_t len);
/* The same family, address and port (and IPv6 scope). */
bool endpoint_equal(const union endpoint *a, const union endpoint *b);

#endif
