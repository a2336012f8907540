/* SPDX-License-Identifier: MIT */
/* The packet pool (see pkt.h), and what a receive's control messages say. The buffers are large but mostly untouched
 * until used, so the pool costs address space more than memory. */
#include <errno.h>
#include <netinet/udp.h>
#include <stdlib.h>
#include <string.h>

#include "crypto/transport.h"
#include "overlay/loop/pkt.h"

int pkt_pool_init(struct pkt_pool *pool, unsigned n, unsigned n_writes)
{
    memset(pool, 0, sizeof(*pool));
    pool->all = aligned_alloc(16, sizeof(struct pkt) * n);
    pool->writes = calloc(n_writes, sizeof(struct tun_write));
    if (!pool->all || !pool->writes) {
        pkt_pool_destroy(pool);
        return -ENOMEM;
    }
    pool->n = n;
    for (unsigned i = 0; i < n; i++) {
        pool->all[i].home = pool;
        pkt_put(pool, &pool->all[i]);
    }
    for (unsigned i = 0; i < n_writes; i++)
        tun_write_put(pool, &pool->writes[i]);
    return 0;
}

void pkt_pool_destroy(struct pkt_pool *pool)
{
    free(pool->all);
    free(pool->writes);
    memset(pool, 0, sizeof(*pool));
}

struct pkt *pkt_get(struct pkt_pool *pool)
{
    struct pkt *p = pool->free;

    if (!p)
        return NULL;
    pool->free = p->next;
    pool->n_free--;
    p->next = NULL;
    p->len = 0;
    p->refs = 0;
    p->nseg = p->sent = 0;
    p->cut_pending = false;
    p->congested = false;
    p->flow_hint = -1;
    p->flow = 0;
    p->via = p->relay_src = NULL;
    return p;
}

void pkt_put(struct pkt_pool *pool, struct pkt *p)
{
    if (p->home)
        pool = p->home;
    p->op = PKT_IDLE;
    p->next = pool->free;
    pool->free = p;
    pool->n_free++;
}

struct tun_write *tun_write_get(struct pkt_pool *pool)
{
    struct tun_write *w = pool->free_writes;

    if (w)
        pool->free_writes = w->next;
    return w;
}

void tun_write_put(struct pkt_pool *pool, struct tun_write *w)
{
    w->op = PKT_HELD;
    w->owner = NULL;
    w->next = pool->free_writes;
    pool->free_writes = w;
}

void pkt_single(struct pkt *p, uint16_t len)
{
    p->nseg = 1;
    p->sent = 0;
    p->stride = (uint32_t)(WG_TRANSPORT_HEADER_LEN + len + WG_PADDING_MULTIPLE + WG_AEAD_TAG_LEN);
    p->seg_len[0] = len;
}

/* Where p's segments of `stride` bytes go: room for the transport header
 * before each, and for padding (within what the stride leaves after a
 * full segment) and tag after. */
static struct offload_area area_of(struct pkt *p, uint32_t stride)
{
    size_t slots = PKT_AREA_CAP / stride;

    return (struct offload_area){ .base = p->area, .stride = stride,
                                  .headroom = WG_TRANSPORT_HEADER_LEN,
                                  .tailroom = WG_AEAD_TAG_LEN,
                                  .slots = slots < PKT_MAX_SEGS ? slots : PKT_MAX_SEGS,
                                  .lens = p->seg_len };
}

int pkt_plan_cut(struct pkt *p, const struct vnet_hdr *h, uint32_t stride)
{
    struct offload_area area;
    size_t last;

    if (p->len < OFFLOAD_VNET_HDR_LEN || stride == 0)
        return -EINVAL;
    area = area_of(p, stride);
    int n = offload_segment_count(h, p->in + OFFLOAD_VNET_HDR_LEN,
                                  p->len - OFFLOAD_VNET_HDR_LEN, &area, &last);
    if (n <= 0)
        return n;
    p->nseg = (uint16_t)n;
    p->sent = 0;
    p->stride = stride;
    p->seg_len[n - 1] = (uint16_t)last;
    p->cut_vnet = *h;
    p->cut_pending = true;
    return n;
}

int pkt_cut(struct pkt *p)
{
    struct offload_area area;
    uint16_t last;

    if (!p->cut_pending)
        return 0;
    p->cut_pending = false;
    area = area_of(p, p->stride);
    area.slots = p->nseg;
    last = p->seg_len[p->nseg - 1];
    int n = offload_segment(&p->cut_vnet, p->in + OFFLOAD_VNET_HDR_LEN,
                            p->len - OFFLOAD_VNET_HDR_LEN, &area);
    if (n != p->nseg || p->seg_len[n - 1] != last) {
        p->nseg = 0;
        return -EIO;
    }
    return 0;
}

unsigned pkt_gso_segments(unsigned mtu)
{
    size_t n = PKT_GSO_MAX_BYTES / transport_sealed_len_limited(mtu, mtu);

    return n < 1 ? 1 : n > PKT_GSO_MAX_SEGS ? PKT_GSO_MAX_SEGS : (unsigned)n;
}

struct pkt_recv_info pkt_recv_info(struct pkt *p)
{
    struct pkt_recv_info ri = { .seg_size = p->len };

    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&p->msg); cm; cm = CMSG_NXTHDR(&p->msg, cm)) {
        if (cm->cmsg_level == SOL_UDP && cm->cmsg_type == UDP_GRO &&
            cm->cmsg_len >= CMSG_LEN(sizeof(int))) {
            int size;
            memcpy(&size, CMSG_DATA(cm), sizeof(size));
            if (size > 0)
                ri.seg_size = (uint32_t)size;
        } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SO_RXQ_OVFL &&
                   cm->cmsg_len >= CMSG_LEN(sizeof(uint32_t))) {
            memcpy(&ri.drops, CMSG_DATA(cm), sizeof(ri.drops));
            ri.has_drops = true;
        } else if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS &&
                   cm->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
            struct timespec ts;
            memcpy(&ts, CMSG_DATA(cm), sizeof(ts));
            ri.stamp_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
            ri.has_stamp = true;
        }
    }
    return ri;
}

uint32_t pkt_drops_grew(uint32_t *seen, uint32_t total)
{
    int32_t grew = (int32_t)(total - *seen);

    if (grew <= 0)
        return 0;
    *seen = total;
    return (uint32_t)grew;
}
