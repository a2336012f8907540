/* SPDX-License-Identifier: MIT */
/* The staging store (see stage.h): cells on a free list, one byte FIFO of
 * cells per peer, each packet a 4-byte length and its bytes. */
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "overlay/engine/model/stage.h"

#define CELL_DATA (STAGE_CELL_BYTES - sizeof(uint32_t))
#define LEN_BYTES sizeof(uint32_t)

struct stage_cell {
    uint32_t next;                /* index + 1 of the next cell of the queue; 0: none */
    uint8_t data[CELL_DATA];
};

_Static_assert(sizeof(struct stage_cell) == STAGE_CELL_BYTES, "a cell is STAGE_CELL_BYTES");

static struct stage_cell *cell(struct stage_store *s, uint32_t idx)
{
    return &s->cells[idx - 1];
}

static void cell_free(struct stage_store *s, uint32_t idx)
{
    cell(s, idx)->next = s->free_head;
    s->free_head = idx;
    s->n_free++;
}

static uint32_t cell_take(struct stage_store *s)
{
    uint32_t idx = s->free_head;

    s->free_head = cell(s, idx)->next;
    s->n_free--;
    cell(s, idx)->next = 0;
    return idx;
}

int stage_init(struct stage_store *s, size_t total_bytes, size_t peer_bytes)
{
    memset(s, 0, sizeof(*s));
    s->n_cells = (uint32_t)(total_bytes / STAGE_CELL_BYTES);
    s->peer_cells = (uint32_t)(peer_bytes / STAGE_CELL_BYTES);
    if (!s->n_cells)
        s->n_cells = 1;
    if (!s->peer_cells)
        s->peer_cells = 1;
    if (s->peer_cells > s->n_cells)
        s->peer_cells = s->n_cells;
    s->cells = malloc((size_t)s->n_cells * sizeof(*s->cells));
    if (!s->cells)
        return -ENOMEM;
    for (uint32_t i = s->n_cells; i > 0; i--)
        cell_free(s, i);
    return 0;
}

void stage_destroy(struct stage_store *s)
{
    free(s->cells);
    memset(s, 0, sizeof(*s));
}

static void busy_link(struct stage_store *s, struct stage_queue *q)
{
    q->prev = NULL;
    q->next = s->busy;
    if (s->busy)
        s->busy->prev = q;
    s->busy = q;
}

static void busy_unlink(struct stage_store *s, struct stage_queue *q)
{
    if (q->prev)
        q->prev->next = q->next;
    else
        s->busy = q->next;
    if (q->next)
        q->next->prev = q->prev;
    q->prev = q->next = NULL;
}

/* Appends n bytes at q's tail, taking cells as it goes (the caller made
 * sure there are enough). */
static void put_bytes(struct stage_store *s, struct stage_queue *q, const uint8_t *src, size_t n)
{
    while (n) {
        if (!q->tail || q->tail_off == CELL_DATA) {
            uint32_t idx = cell_take(s);
            if (q->tail)
                cell(s, q->tail)->next = idx;
            else
                q->head = idx, q->head_off = 0;
            q->tail = idx;
            q->tail_off = 0;
            q->cells++;
        }
        size_t chunk = CELL_DATA - q->tail_off;
        if (chunk > n)
            chunk = n;
        memcpy(cell(s, q->tail)->data + q->tail_off, src, chunk);
        q->tail_off += (uint32_t)chunk;
        src += chunk;
        n -= chunk;
    }
}

/* Takes n bytes from q's head into dst (or nowhere, when dst is NULL),
 * giving back each cell it leaves behind. */
static void take_bytes(struct stage_store *s, struct stage_queue *q, uint8_t *dst, size_t n)
{
    while (n) {
        uint32_t end = q->head == q->tail ? q->tail_off : CELL_DATA;
        size_t chunk = end - q->head_off;
        if (chunk > n)
            chunk = n;
        if (dst) {
            memcpy(dst, cell(s, q->head)->data + q->head_off, chunk);
            dst += chunk;
        }
        q->head_off += (uint32_t)chunk;
        n -= chunk;
        if (q->head_off == CELL_DATA && q->head != q->tail) {
            uint32_t next = cell(s, q->head)->next;
            cell_free(s, q->head);
            q->cells--;
            q->head = next;
            q->head_off = 0;
        }
    }
}

/* After the last packet left: the cell it ended in goes too. */
static void settle_empty(struct stage_store *s, struct stage_queue *q)
{
    if (q->packets)
        return;
    if (q->head)
        cell_free(s, q->head);
    busy_unlink(s, q);
    q->head = q->tail = 0;
    q->head_off = q->tail_off = 0;
    q->cells = 0;
}

/* Removes q's oldest packet into out (cap bytes; NULL: dropped). Returns
 * its length, or -ENOSPC when it did not fit (dropped all the same). */
static long take_packet(struct stage_store *s, struct stage_queue *q, uint8_t *out, size_t cap)
{
    uint8_t hdr[LEN_BYTES];
    uint32_t len;

    take_bytes(s, q, hdr, LEN_BYTES);
    memcpy(&len, hdr, LEN_BYTES);
    bool fits = out && len <= cap;
    take_bytes(s, q, fits ? out : NULL, len);
    q->packets--;
    settle_empty(s, q);
    return out && !fits ? -ENOSPC : (long)len;
}

/* Cells q must take to append need bytes. */
static uint32_t cells_needed(const struct stage_queue *q, size_t need)
{
    size_t room = q->tail ? CELL_DATA - q->tail_off : 0;

    return need <= room ? 0 : (uint32_t)((need - room + CELL_DATA - 1) / CELL_DATA);
}

static struct stage_queue *largest(struct stage_store *s)
{
    struct stage_queue *big = s->busy;

    for (struct stage_queue *q = s->busy; q; q = q->next)
        if (q->cells > big->cells)
            big = q;
    return big;
}

int stage_push(struct stage_store *s, struct stage_queue *q, const uint8_t *data, uint32_t len)
{
    size_t need = LEN_BYTES + (size_t)len;
    struct stage_queue empty = { 0 };

    if (cells_needed(&empty, need) > s->peer_cells) {
        s->stats.dropped_too_big++;
        return -EMSGSIZE;
    }
    while (q->packets && q->cells + cells_needed(q, need) > s->peer_cells) {
        take_packet(s, q, NULL, 0);
        s->stats.dropped_peer_full++;
    }
    while (s->n_free < cells_needed(q, need)) {
        struct stage_queue *victim = largest(s);
        take_packet(s, victim, NULL, 0);
        if (victim == q)
            s->stats.dropped_peer_full++;
        else
            s->stats.dropped_store_full++;
    }
    if (!q->packets)
        busy_link(s, q);
    put_bytes(s, q, (const uint8_t *)&len, LEN_BYTES);
    put_bytes(s, q, data, len);
    q->packets++;
    s->stats.staged++;
    return 0;
}

long stage_pop(struct stage_store *s, struct stage_queue *q, uint8_t *out, size_t cap)
{
    if (!q->packets)
        return -ENOENT;
    return take_packet(s, q, out, cap);
}

unsigned stage_clear(struct stage_store *s, struct stage_queue *q)
{
    unsigned n = 0;

    while (q->packets) {
        take_packet(s, q, NULL, 0);
        n++;
    }
    return n;
}
