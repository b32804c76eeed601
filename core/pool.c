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

void *tb_mem_alloc_aligned(struct tb_sched *s, size_t size, size_t align,
                           size_t lead, void **mem)
{
    *mem = NULL;
    if (size > SIZE_MAX - (align - 1))
        return NULL;
    unsigned char *m = tb_mem_alloc(s, size + align - 1);
    *mem = m;
    if (!m)
        return NULL;
    return m + (-((uintptr_t)m + lead) & (uintptr_t)(align - 1));
}

void tb_mem_free_aligned(struct tb_sched *s, void *mem, size_t size,
                         size_t align)
{
    tb_mem_free(s, mem, size + align - 1);
}

/* Adds one chunk and threads its slots onto the free list, lowest first.
 * Its records start on a cache line. */
static bool pool_grow(struct tb_pool *p)
{
    struct tb_sched *s = p->owner;
    /* the slot has TB_TASK_SLOT_BITS bits in the task's word */
    if (p->nchunks == TB_POOL_MAX_CHUNKS)
        return false;
    if (p->nchunks == p->chunks_cap) {
        /* one block: the record table, then the raw table */
        size_t cap = p->chunks_cap ? p->chunks_cap * 2 : 4;
        void **c = tb_mem_alloc(s, 2 * cap * sizeof *c);
        if (!c)
            return false;
        if (p->nchunks) {
            memcpy(c, p->bases, p->nchunks * sizeof *c);
            memcpy(c + cap, p->raw, p->nchunks * sizeof *c);
        }
        tb_mem_free(s, p->bases, 2 * p->chunks_cap * sizeof *c);
        p->bases = (uintptr_t *)(void *)c;
        p->raw = c + cap;
        p->chunks_cap = cap;
    }
    size_t bytes = (size_t)TB_POOL_CHUNK * p->record_size;
    void *raw;
    unsigned char *chunk =
        tb_mem_alloc_aligned(s, bytes, TB_POOL_ALIGN, 0, &raw);
    if (!chunk)
        return false;
    memset(chunk, 0, (size_t)TB_POOL_CHUNK * p->record_size);
    uint32_t base = (uint32_t)(p->nchunks << TB_POOL_CHUNK_SHIFT);
    p->raw[p->nchunks] = raw;
    p->bases[p->nchunks++] = (uintptr_t)chunk - (uintptr_t)base * p->record_size;
    for (uint32_t i = TB_POOL_CHUNK; i-- > 0;) {
        struct tb_task *t = tb_pool_record(p, base + i);
        atomic_init(&t->gs, tb_task_word(1, base + i, TB_TASK_FREE));
        t->arg = p->free_head;
        p->free_head = t;
    }
    return true;
}

struct tb_task *tb_pool_get_locking(struct tb_pool *p, tb_handle *handle)
{
    if (p->locked)
        pthread_mutex_lock(&p->lock);
    struct tb_task *t = NULL;
    if (p->free_head != TB_POOL_NIL || pool_grow(p))
        t = tb_pool_get_unlocked(p, handle);
    if (p->locked)
        pthread_mutex_unlock(&p->lock);
    return t;
}

int tb_pool_reserve(struct tb_pool *p, size_t n)
{
    if (p->locked)
        pthread_mutex_lock(&p->lock);
    int rc = TB_OK;
    if (n > TB_POOL_MAX_SLOTS - p->live)
        rc = TB_ERANGE;
    while (!rc && p->nchunks * TB_POOL_CHUNK < p->live + n)
        if (!pool_grow(p))
            rc = TB_ENOMEM;
    if (p->locked)
        pthread_mutex_unlock(&p->lock);
    return rc;
}

void tb_pool_put_locking(struct tb_pool *p, struct tb_task *t)
{
    pthread_mutex_lock(&p->lock);
    tb_pool_put_unlocked(p, t);
    pthread_mutex_unlock(&p->lock);
}

/* The chunk table may be reallocated by a growing pool in another thread,
 * so the slot's record is found under the lock; its state word is then read
 * without it (records never move). */
struct tb_task *tb_pool_lookup_locking(struct tb_pool *p, tb_handle handle)
{
    uint32_t slot = (uint32_t)handle;
    pthread_mutex_lock(&p->lock);
    struct tb_task *t = NULL;
    if ((size_t)(slot >> TB_POOL_CHUNK_SHIFT) < p->nchunks)
        t = tb_pool_record(p, slot);
    pthread_mutex_unlock(&p->lock);
    if (!t)
        return NULL;
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_acquire);
    return tb_task_names(gs, handle) ? t : NULL;
}

void tb_pool_fini(struct tb_pool *p)
{
    struct tb_sched *s = p->owner;
    size_t bytes = (size_t)TB_POOL_CHUNK * p->record_size;
    for (size_t i = 0; i < p->nchunks; i++)
        tb_mem_free_aligned(s, p->raw[i], bytes, TB_POOL_ALIGN);
    tb_mem_free(s, p->bases, 2 * p->chunks_cap * sizeof *p->raw);
    p->bases = NULL;
    p->raw = NULL;
    p->nchunks = p->chunks_cap = 0;
    if (p->locked)
        pthread_mutex_destroy(&p->lock);
}
