/*
 * core/pool.c — the task record pool shared by every backend, and the
 * allocation helpers that count every byte a scheduler holds.
 *
 * Records live in chunks of TB_POOL_CHUNK that are never moved or freed
 * before the scheduler is destroyed, so a handle (slot index + generation)
 * can be checked from any thread without a lock: the worst a racing reader
 * sees is a generation that no longer matches.
 */
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

void *tb_mem_alloc(struct tb_sched *s, size_t size)
{
    void *p = s->alloc.alloc(s->alloc.ctx, size);
    if (p)
        atomic_fetch_add_explicit(&s->bytes_held, size, memory_order_relaxed);
    return p;
}

void *tb_mem_calloc(struct tb_sched *s, size_t n, size_t size)
{
    if (size && n > SIZE_MAX / size)
        return NULL;
    void *p = tb_mem_alloc(s, n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void tb_mem_free(struct tb_sched *s, void *p, size_t size)
{
    if (!p)
        return;
    s->alloc.free(s->alloc.ctx, p, size);
    atomic_fetch_sub_explicit(&s->bytes_held, size, memory_order_relaxed);
}

void *tb_mem_realloc(struct tb_sched *s, void *p, size_t old_size,
                     size_t new_size)
{
    void *q = tb_mem_alloc(s, new_size);
    if (!q)
        return NULL;
    if (p)
        memcpy(q, p, old_size < new_size ? old_size : new_size);
    tb_mem_free(s, p, old_size);
    return q;
}

/* Adds one chunk and threads its slots onto the free list, lowest first.
 * The chunk is over-allocated by one cache line less a byte and its records
 * start at the first line boundary inside it. */
static bool pool_grow(struct tb_pool *p)
{
    struct tb_sched *s = p->owner;
    /* 2^32 - 1 slots at most: the handle's index is 32 bits, and NIL */
    if (p->nchunks == ((size_t)1 << (32 - TB_POOL_CHUNK_SHIFT)) - 1)
        return false;
    if (p->nchunks == p->chunks_cap) {
        /* one block: the record table, then the raw table */
        size_t cap = p->chunks_cap ? p->chunks_cap * 2 : 4;
        void **c = tb_mem_alloc(s, 2 * cap * sizeof *c);
        if (!c)
            return false;
        if (p->nchunks) {
            memcpy(c, p->chunks, p->nchunks * sizeof *c);
            memcpy(c + cap, p->raw, p->nchunks * sizeof *c);
        }
        tb_mem_free(s, p->chunks, 2 * p->chunks_cap * sizeof *c);
        p->chunks = (unsigned char **)c;
        p->raw = c + cap;
        p->chunks_cap = cap;
    }
    size_t bytes = (size_t)TB_POOL_CHUNK * p->record_size + TB_POOL_ALIGN - 1;
    void *raw = tb_mem_alloc(s, bytes);
    if (!raw)
        return false;
    unsigned char *chunk =
        (unsigned char *)raw +
        (-(uintptr_t)raw & (uintptr_t)(TB_POOL_ALIGN - 1));
    memset(chunk, 0, (size_t)TB_POOL_CHUNK * p->record_size);
    uint32_t base = (uint32_t)(p->nchunks << TB_POOL_CHUNK_SHIFT);
    p->raw[p->nchunks] = raw;
    p->chunks[p->nchunks++] = chunk;
    for (uint32_t i = TB_POOL_CHUNK; i-- > 0;) {
        struct tb_task *t = tb_pool_record(p, base + i);
        atomic_init(&t->gs, tb_task_gs(1, TB_TASK_FREE));
        t->slot = base + i;
        t->index = p->free_head;
        p->free_head = base + i;
    }
    return true;
}

struct tb_task *tb_pool_get_slow(struct tb_pool *p, tb_handle *handle)
{
    if (p->locked)
        pthread_mutex_lock(&p->lock);
    struct tb_task *t = NULL;
    if (p->free_head != TB_POOL_NIL || pool_grow(p))
        t = tb_pool_take(p, handle);
    if (p->locked)
        pthread_mutex_unlock(&p->lock);
    return t;
}

bool tb_pool_reserve(struct tb_pool *p, size_t n)
{
    if (p->locked)
        pthread_mutex_lock(&p->lock);
    bool ok = true;
    while (ok && p->nchunks * TB_POOL_CHUNK < p->live + n)
        ok = pool_grow(p);
    if (p->locked)
        pthread_mutex_unlock(&p->lock);
    return ok;
}

tb_handle tb_pool_handle(struct tb_pool *p, const struct tb_task *t)
{
    (void)p;
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
    return (uint64_t)tb_task_gen(gs) << 32 | t->slot;
}

void tb_pool_put_locked(struct tb_pool *p, struct tb_task *t)
{
    pthread_mutex_lock(&p->lock);
    tb_pool_give(p, t);
    pthread_mutex_unlock(&p->lock);
}

/* The chunk table may be reallocated by a growing pool in another thread,
 * so the slot's record is found under the lock; its state word is then read
 * without it (records never move). */
struct tb_task *tb_pool_lookup_locked(struct tb_pool *p, tb_handle handle)
{
    uint32_t slot = (uint32_t)handle;
    uint32_t gen = (uint32_t)(handle >> 32);
    if (gen == 0)
        return NULL;
    pthread_mutex_lock(&p->lock);
    struct tb_task *t = NULL;
    if ((size_t)(slot >> TB_POOL_CHUNK_SHIFT) < p->nchunks)
        t = tb_pool_record(p, slot);
    pthread_mutex_unlock(&p->lock);
    if (!t)
        return NULL;
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_acquire);
    if (tb_task_gen(gs) != gen || tb_task_state(gs) == TB_TASK_FREE)
        return NULL;
    return t;
}

void tb_pool_fini(struct tb_pool *p)
{
    struct tb_sched *s = p->owner;
    size_t bytes = (size_t)TB_POOL_CHUNK * p->record_size + TB_POOL_ALIGN - 1;
    for (size_t i = 0; i < p->nchunks; i++)
        tb_mem_free(s, p->raw[i], bytes);
    tb_mem_free(s, p->chunks, 2 * p->chunks_cap * sizeof *p->raw);
    p->chunks = NULL;
    p->raw = NULL;
    p->nchunks = p->chunks_cap = 0;
    if (p->locked)
        pthread_mutex_destroy(&p->lock);
}
