/* SPDX-License-Identifier: MIT */
/* Endpoints as text (see endpoint.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "overlay/base/endpoint.h"

int endpoint_format(const union endpoint *e, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN];
    int n;

    if (e->sa.sa_family == AF_INET) {
        inet_ntop(AF_INET, &e->in4.sin_addr, host, sizeof(host));
        n = snprintf(buf, len, "%s:%u", host, ntohs(e->in4.sin_port));
    } else if (e->sa.sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &e->in6.sin6_addr, host, sizeof(host));
        n = snprintf(buf, len, "[%s]:%u", host, ntohs(e->in6.sin6_port));
    } else {
        n = snprintf(buf, len, "(none)");
    }
    return n < 0 || (size_t)n >= len ? -ENOSPC : 0;
}

bool endpoint_equal(const union endpoint *a, const union endpoint *b)
{
    if (a->sa.sa_family != b->sa.sa_family)
        return false;
    if (a->sa.sa_family == AF_INET)
        return a->in4.sin_port == b->in4.sin_port &&
               a->in4.sin_addr.s_addr == b->in4.sin_addr.s_addr;
    if (a->sa.sa_family != AF_INET6)
        return true;                      /* both unset */
    return a->in6.sin6_port == b->in6.sin6_port &&
           !memcmp(&a->in6.sin6_addr, &b->in6.sin6_addr, sizeof(a->in6.sin6_addr)) &&
           a->in6.sin6_scope_id == b->in6.sin6_scope_id;
}
