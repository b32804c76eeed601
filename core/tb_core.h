/*
 * core/tb_core.h — what every backend shares: the scheduler base, the ops table
 * a backend fills in, the task record header, the task pool and the
 * allocation helpers that count bytes held.
 *
 * A backend's scheduler struct embeds `struct tb_sched` as its first member,
 * and its task record embeds `struct tb_task` first; the core allocates both
 * with the sizes the ops table gives, so a backend adds exactly the fields its
 * original has and no more.
 */
#ifndef TIMERBENCH_CORE_TB_CORE_H
#define TIMERBENCH_CORE_TB_CORE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "timerbench/scheduler.h"

/* ---- Task records ------------------------------------------------------ */

/* Task states, 3 bits of tb_task.gs (see below). */
enum {
    TB_TASK_FREE = 0,      /* in the pool's free list */
    TB_TASK_WAITING = 1,   /* held by the structure, will run */
    TB_TASK_RUNNING = 2,   /* taken by a runner */
    TB_TASK_CANCELLED = 3, /* cancelled; may still be held (lazy cancel) */
    TB_TASK_DONE = 4,      /* ran or dropped; about to be freed */
};

/* tb_task.gs, one atomic 64-bit word:
 *
 *   bits 63..32  generation   (1 .. 2^32 - 1; 0 is never used)
 *   bits 31..29  state        (TB_TASK_*)
 *   bits 28..0   pool slot    (fixed for the record's life)
 *
 * A handle is generation << 32 | slot, i.e. the word with its state bits
 * cleared, so a FREE record's word is exactly the handle its next user will
 * get, and "does handle h name this live record" is one compare of the word
 * against h.  Packing generation and state in one word makes a lock-free
 * cancel ABA-safe: a CAS on (generation, slot, WAITING) fails once the
 * record was freed and reused.  The generation skips 0 when it wraps, so
 * handle 0 (TB_HANDLE_NONE) never names a record.
 *
 * Limits that follow: at most TB_POOL_MAX_SLOTS (2^29 = 536,870,912)
 * records per scheduler, so at most that many tasks pending or running at
 * once; tb_reserve() answers TB_ERANGE past it and a schedule that would
 * need a record beyond it gets TB_ENOMEM, as for any record the pool cannot
 * provide.  A slot's handle is reused after 2^32 - 1 frees of that slot. */
#define TB_TASK_SLOT_BITS 29
#define TB_TASK_STATE_SHIFT TB_TASK_SLOT_BITS
#define TB_TASK_SLOT_MASK (((uint64_t)1 << TB_TASK_SLOT_BITS) - 1)
#define TB_TASK_STATE_MASK ((uint64_t)7 << TB_TASK_STATE_SHIFT)
#define TB_POOL_MAX_SLOTS ((size_t)1 << TB_TASK_SLOT_BITS)

/** The record header every backend's task starts with (40 bytes).  A
 *  backend keeps its own per-record fields (heap index, links, ...) in its
 *  record after it. */
struct tb_task {
    int64_t deadline;       /* next scheduled time, in the scheduler's clock */
    int64_t period;         /* 0 one-shot, > 0 fixed rate, < 0 fixed delay */
    tb_fn fn;
    void *arg;              /* while FREE: the next free record (pool) */
    _Atomic uint64_t gs;    /* generation, state and slot, see above */
};

_Static_assert(sizeof(struct tb_task) == 40, "the task header is 40 bytes");

static inline uint32_t tb_task_state(uint64_t gs)
{
    return (uint32_t)(gs >> TB_TASK_STATE_SHIFT) & 7;
}
static inline uint32_t tb_task_gen(uint64_t gs) { return (uint32_t)(gs >> 32); }
static inline uint32_t tb_task_slot_of(uint64_t gs)
{
    return (uint32_t)(gs & TB_TASK_SLOT_MASK);
}

/** Says "no task" through a schedule's handle pointer (NULL allowed).  The
 *  core does not clear *handle on the way in, so that a schedule that
 *  succeeds stores its handle once: a backend's schedule path that can fail
 *  calls this first (its slow path; the fast paths only succeed). */
static inline void tb_handle_none(tb_handle *handle)
{
    if (handle)
        *handle = TB_HANDLE_NONE;
}

/** Sets what a task is: its deadline, period and call (every schedule
 *  path of every backend, so that a fast path and its slow twin say it
 *  once). */
static inline void tb_task_set(struct tb_task *t, int64_t deadline,
                               int64_t period, tb_fn fn, void *arg)
{
    t->deadline = deadline;
    t->period = period;
    t->fn = fn;
    t->arg = arg;
}

/** The word for (gen, slot, state). */
static inline uint64_t tb_task_word(uint32_t gen, uint32_t slot,
                                    uint32_t state)
{
    return (uint64_t)gen << 32 | (uint64_t)state << TB_TASK_STATE_SHIFT |
           (slot & TB_TASK_SLOT_MASK);
}

/** The handle a word stands for: the word without its state. */
static inline tb_handle tb_task_handle(uint64_t gs)
{
    return gs & ~TB_TASK_STATE_MASK;
}

/** The record's pool slot (fixed: any load of the word will do). */
static inline uint32_t tb_task_slot(const struct tb_task *t)
{
    return tb_task_slot_of(atomic_load_explicit(&t->gs, memory_order_relaxed));
}

/** Current state (acquire read; owners that hold the lock may use it). */
static inline uint32_t tb_task_get_state(const struct tb_task *t)
{
    return tb_task_state(atomic_load_explicit(&t->gs, memory_order_acquire));
}

/** Sets the state keeping generation and slot (owner only). */
static inline void tb_task_set_state(struct tb_task *t, uint32_t state)
{
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
    atomic_store_explicit(&t->gs,
                          (gs & ~TB_TASK_STATE_MASK) |
                              (uint64_t)state << TB_TASK_STATE_SHIFT,
                          memory_order_release);
}

/** Atomically moves the task from `from` to `to` if it is still generation
 *  `gen` (the handle's): a record freed and reused since the caller looked it
 *  up is never touched (no ABA).  False if it was not (gen, from). */
static inline bool tb_task_cas(struct tb_task *t, uint32_t gen, uint32_t from,
                               uint32_t to)
{
    uint32_t slot = tb_task_slot(t);
    uint64_t expect = tb_task_word(gen, slot, from);
    return atomic_compare_exchange_strong_explicit(
        &t->gs, &expect, tb_task_word(gen, slot, to), memory_order_acq_rel,
        memory_order_acquire);
}

/** tb_task_cas for a caller no other thread can race (virtual mode): the
 *  same check, then a plain store instead of a locked instruction. */
static inline bool tb_task_cas_local(struct tb_task *t, uint32_t gen,
                                     uint32_t from, uint32_t to)
{
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
    uint32_t slot = tb_task_slot_of(gs);
    if (gs != tb_task_word(gen, slot, from))
        return false;
    atomic_store_explicit(&t->gs, tb_task_word(gen, slot, to),
                          memory_order_relaxed);
    return true;
}

/** A 64-bit counter that is shared with other threads in monotonic mode
 *  only, as plain memory, for a caller no other thread can race (the
 *  virtual clock): `(*tb_plain_u64(c))++` compiles to one add to memory,
 *  where a relaxed atomic load and store stay a load, an add and a store
 *  (issue 39: the virtual mode's counters without atomics).  An _Atomic
 *  uint64_t has uint64_t's size and alignment on every target timerbench
 *  builds for (asserted below) and its lock-free representation is the
 *  integer's. */
static inline uint64_t *tb_plain_u64(_Atomic uint64_t *c)
{
    return (uint64_t *)(uintptr_t)c;
}

_Static_assert(sizeof(_Atomic uint64_t) == sizeof(uint64_t) &&
                   _Alignof(_Atomic uint64_t) == _Alignof(uint64_t),
               "an atomic counter is laid out as the integer");

/* ---- The task pool ----------------------------------------------------- */

#define TB_POOL_CHUNK_SHIFT 10
#define TB_POOL_CHUNK (1u << TB_POOL_CHUNK_SHIFT)
#define TB_POOL_MAX_CHUNKS (TB_POOL_MAX_SLOTS >> TB_POOL_CHUNK_SHIFT)
#define TB_POOL_NIL NULL /* the end of the free list */
/* Chunks start on a cache line, so a record of 64 bytes or less never
 * straddles two lines (malloc only promises 16) */
#define TB_POOL_ALIGN 64

struct tb_sched;

/** Chunks of fixed-size records plus an intrusive free list (a free
 *  record's `arg` points to the next free record, so the list costs no
 *  memory and a get needs no slot arithmetic); records never move, so a
 *  handle's slot can be read at any time.  No malloc per operation once the
 *  pool has grown to the working set.  Locked only in monotonic mode.
 *
 *  Each of get, put and lookup comes in three forms, named by what they
 *  assume: tb_pool_get() assumes nothing (it picks one of the other two);
 *  tb_pool_get_unlocked() assumes no other thread can touch the pool (an
 *  unlocked pool: virtual clock) and, for get, a non-empty free list;
 *  tb_pool_get_locking() takes the pool's lock itself when the pool has one
 *  (the slow path: monotonic mode, or growth).  The unlocked forms are
 *  inline: they are a few loads and stores on every schedule, cancel and
 *  expiry. */
struct tb_pool {
    struct tb_sched *owner;
    size_t record_size;
    /* chunk i's first record (cache-line aligned) less i * TB_POOL_CHUNK
     * records, so that a slot's record is bases[slot >> SHIFT] + slot *
     * record_size: no mask of the slot's low bits on a lookup */
    uintptr_t *bases;
    void **raw;             /* chunk i as allocated (what to free); the
                             * second half of the bases block */
    size_t nchunks, chunks_cap;
    struct tb_task *free_head; /* first free record, TB_POOL_NIL if none */
    size_t live;
    bool locked;
    pthread_mutex_t lock;
};

static inline struct tb_task *tb_pool_record(const struct tb_pool *p,
                                             uint32_t slot)
{
    return (struct tb_task *)(p->bases[slot >> TB_POOL_CHUNK_SHIFT] +
                              (uintptr_t)slot * p->record_size);
}

/** tb_pool_get from a non-empty free list that no other thread touches. */
static inline struct tb_task *tb_pool_get_unlocked(struct tb_pool *p,
                                                   tb_handle *handle)
{
    struct tb_task *t = p->free_head;
    p->free_head = (struct tb_task *)t->arg;
    /* a FREE word is the handle itself (state 0) */
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
    atomic_store_explicit(
        &t->gs, gs | (uint64_t)TB_TASK_WAITING << TB_TASK_STATE_SHIFT,
        memory_order_release);
    p->live++;
    if (handle)
        *handle = gs;
    return t;
}

/** tb_pool_put_unlocked of a record whose handle the caller holds (it has
 *  just checked that `handle` names it): the word need not be read again. */
static inline void tb_pool_put_handle_unlocked(struct tb_pool *p,
                                               struct tb_task *t,
                                               tb_handle handle)
{
    /* state FREE, next generation: the word is the next user's handle; the
     * add's carry is the generation's wrap, 2^32 to 1, so that handle 0
     * stays invalid */
    uint64_t next;
    if (__builtin_expect(
            __builtin_add_overflow(handle, (uint64_t)1 << 32, &next), 0))
        next += (uint64_t)1 << 32;
    atomic_store_explicit(&t->gs, next, memory_order_release);
    t->arg = p->free_head;
    p->free_head = t;
    p->live--;
}

/** tb_pool_put to a pool no other thread touches. */
static inline void tb_pool_put_unlocked(struct tb_pool *p, struct tb_task *t)
{
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
    tb_pool_put_handle_unlocked(p, t, gs & ~TB_TASK_STATE_MASK);
}

/** tb_pool_get taking the pool's lock if it has one; grows the pool when the
 *  free list is empty (the slow path of tb_pool_get). */
struct tb_task *tb_pool_get_locking(struct tb_pool *p, tb_handle *handle);
/** tb_pool_put under the pool's lock (a locked pool only). */
void tb_pool_put_locking(struct tb_pool *p, struct tb_task *t);
/** tb_pool_lookup under the pool's lock (a locked pool only): the chunk
 *  table may be reallocated meanwhile by a growing pool. */
struct tb_task *tb_pool_lookup_locking(struct tb_pool *p, tb_handle handle);

/** Takes a record: state WAITING (a release store), its fields after the
 *  header 0 in a record never used before (new chunks are zeroed) and
 *  otherwise as the record's last user left them at tb_pool_put, so a
 *  backend that needs a field's value before it can write it (timerwheel's
 *  prev, read by a worker racing the fill) restores it before it puts the
 *  record back; header fields left for the caller to set.
 *  *handle gets its handle.  NULL on allocation failure or when the pool
 *  holds TB_POOL_MAX_SLOTS records already.  The record is WAITING before
 *  the caller fills it, so a lock-free backend must tolerate a cancel racing
 *  with its own schedule of that record. */
static inline struct tb_task *tb_pool_get(struct tb_pool *p, tb_handle *handle)
{
    if (p->locked || p->free_head == TB_POOL_NIL)
        return tb_pool_get_locking(p, handle);
    return tb_pool_get_unlocked(p, handle);
}

/** Grows the pool until `n` more records can be taken without allocating.
 *  TB_ERANGE if live + n would pass TB_POOL_MAX_SLOTS (nothing done),
 *  TB_ENOMEM on allocation failure (what was added stays), else TB_OK. */
int tb_pool_reserve(struct tb_pool *p, size_t n);

/** Returns a record; its generation moves on, so old handles go stale. */
static inline void tb_pool_put(struct tb_pool *p, struct tb_task *t)
{
    if (p->locked)
        tb_pool_put_locking(p, t);
    else
        tb_pool_put_unlocked(p, t);
}

/** Whether word `gs` is the live record `handle` names: same generation and
 *  slot, any state but FREE. */
static inline bool tb_task_names(uint64_t gs, tb_handle handle)
{
    /* they may differ in the state bits only, and must differ there */
    uint64_t x = gs ^ handle;
    return !(x & ~TB_TASK_STATE_MASK) && x;
}

/** tb_pool_lookup for a pool no other thread touches (virtual clock), so
 *  none can grow it: no lock and no call, so a backend's virtual path can
 *  be a leaf function. */
static inline struct tb_task *
tb_pool_lookup_unlocked(const struct tb_pool *p, tb_handle handle)
{
    uint32_t slot = (uint32_t)handle;
    /* past the chunks, or a slot above the slot bits: no record */
    if ((size_t)(slot >> TB_POOL_CHUNK_SHIFT) >= p->nchunks)
        return NULL;
    struct tb_task *t = tb_pool_record(p, slot);
    /* a record of a chunk is never NULL: said so that a caller's test of
     * the result is the test of the word alone */
    if (!t)
        __builtin_unreachable();
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_acquire);
    return tb_task_names(gs, handle) ? t : NULL;
}

/** tb_pool_lookup_unlocked for the common case of a cancel: the record
 *  `handle` names if it is WAITING, else NULL (stale, not a handle, or in
 *  any other state).  One compare of the word: past the chunk test the
 *  handle's state bits are 0 (they are bits 29..31 of the slot, and a slot
 *  with any of them set is past TB_POOL_MAX_CHUNKS chunks), so the word of
 *  a WAITING record it names is the handle with WAITING in them. */
static inline struct tb_task *
tb_pool_waiting_unlocked(const struct tb_pool *p, tb_handle handle)
{
    uint32_t slot = (uint32_t)handle;
    if ((size_t)(slot >> TB_POOL_CHUNK_SHIFT) >= p->nchunks)
        return NULL;
    struct tb_task *t = tb_pool_record(p, slot);
    if (!t) /* as in tb_pool_lookup_unlocked */
        __builtin_unreachable();
    uint64_t gs = atomic_load_explicit(&t->gs, memory_order_acquire);
    /* + rather than |, the same here: one lea instead of a move and an or */
    return gs == handle + ((uint64_t)TB_TASK_WAITING << TB_TASK_STATE_SHIFT)
               ? t
               : NULL;
}

_Static_assert(TB_POOL_MAX_CHUNKS << TB_POOL_CHUNK_SHIFT ==
                   (size_t)1 << TB_TASK_SLOT_BITS,
               "a slot with state bits set is past the last chunk");

/** The record a handle names if its generation still matches (any state but
 *  FREE), else NULL.  Safe from any thread. */
static inline struct tb_task *tb_pool_lookup(struct tb_pool *p,
                                             tb_handle handle)
{
    if (p->locked)
        return tb_pool_lookup_locking(p, handle);
    return tb_pool_lookup_unlocked(p, handle);
}

/** A lazy cancel's mark: if `handle` names a WAITING task, that task is
 *  now CANCELLED (it stays in the structure as a zombie) and true; else
 *  false.  `unlocked`: a pool no other thread touches (a constant at the
 *  call, so that the virtual path makes no call). */
static inline bool tb_pool_mark_cancelled(struct tb_pool *p, tb_handle handle,
                                          bool unlocked)
{
    if (unlocked) {
        /* the word is the handle with WAITING in its state bits; it
         * becomes the handle with CANCELLED there, no read again */
        struct tb_task *t = tb_pool_waiting_unlocked(p, handle);
        if (!t)
            return false;
        atomic_store_explicit(
            &t->gs,
            handle | (uint64_t)TB_TASK_CANCELLED << TB_TASK_STATE_SHIFT,
            memory_order_release);
        return true;
    }
    struct tb_task *t = tb_pool_lookup(p, handle);
    if (!t || tb_task_get_state(t) != TB_TASK_WAITING)
        return false;
    tb_task_set_state(t, TB_TASK_CANCELLED);
    return true;
}

/** The handle of a live record. */
static inline tb_handle tb_pool_handle(const struct tb_pool *p,
                                       const struct tb_task *t)
{
    (void)p;
    return tb_task_handle(atomic_load_explicit(&t->gs, memory_order_relaxed));
}

/** Frees every chunk and the chunk tables (at destruction). */
void tb_pool_fini(struct tb_pool *p);

/* ---- Division by a run-time constant ----------------------------------- */

/* A wheel divides by its tick on every insert and clock move; a 64-bit DIV
 * costs tens of cycles, a multiply-high and a shift a few.  The divisor is
 * fixed at creation, so its reciprocal is computed once (Granlund and
 * Montgomery, "Division by invariant integers using multiplication").  The
 * wheels only divide non-negative int64 values, and with numerators below
 * 2^63 a 64-bit magic always suffices: no branch, no 65-bit fix-up. */

__extension__ typedef unsigned __int128 tb_u128;

/** A divisor d >= 1 as its reciprocal: n / d = mulhi(magic, 2n) >> shift
 *  for every n < 2^63. */
struct tb_udiv {
    uint64_t magic; /* ceil(2^(63 + shift) / d) */
    unsigned shift; /* ceil(log2 d) */
};

/** Prepares division by d (d >= 1). */
static inline struct tb_udiv tb_udiv_make(uint64_t d)
{
    struct tb_udiv u = {0, 0};
    if (d > (uint64_t)1 << 63)
        return u; /* every quotient is 0: magic 0 */
    unsigned l = d == 1 ? 0 : 64u - (unsigned)__builtin_clzll(d - 1);
    tb_u128 num = (tb_u128)1 << (63 + l);
    u.magic = (uint64_t)((num + d - 1) / d);
    u.shift = l;
    return u;
}

/** n / d for 0 <= n < 2^63 (any non-negative int64). */
static inline uint64_t tb_udiv(const struct tb_udiv *u, uint64_t n)
{
    return (uint64_t)(((tb_u128)u->magic * (n << 1)) >> 64) >> u->shift;
}

/* ---- Backend ops ------------------------------------------------------- */

/** What a backend implements.  The core validates arguments (NULL sched or
 *  callback, period, delay range, clock mode) before calling in, and passes
 *  absolute deadlines in the scheduler's clock. */
struct tb_backend_ops {
    size_t sched_size;  /* sizeof the backend's struct (tb_sched first) */
    size_t task_size;   /* sizeof the backend's record (tb_task first) */
    /* fill unset config fields with the original's defaults; TB_EINVAL on
     * values out of range */
    int (*configure)(struct tb_config *cfg);
    int (*init)(struct tb_sched *s);      /* after the pool is ready */
    void (*fini)(struct tb_sched *s);     /* threads already stopped */
    int (*start)(struct tb_sched *s);
    /* insert a new task: deadline absolute, period as tb_task.period.
     * The first five arguments are tb_schedule's own, in its registers,
     * so the core's call passes them on untouched. */
    int (*schedule)(struct tb_sched *s, int64_t deadline, tb_fn fn,
                    void *arg, tb_handle *handle, int64_t period);
    int (*cancel)(struct tb_sched *s, tb_handle handle);
    /* optional: schedule for the virtual clock and no max_pending, cancel
     * for the virtual clock, neither testing what they assume (tb_create
     * takes them for such a scheduler, so that the mode and the limit are
     * tested once, not on every call), nor a shutdown: after tb_shutdown
     * or tb_shutdown_now of a virtual scheduler the core calls schedule
     * and cancel instead; NULL: schedule and cancel serve every
     * scheduler */
    int (*schedule_virtual)(struct tb_sched *s, int64_t deadline, tb_fn fn,
                            void *arg, tb_handle *handle, int64_t period);
    int (*cancel_virtual)(struct tb_sched *s, tb_handle handle);
    /* optional (TB_CAP_RANGE): insert a one-shot that may run anywhere in
     * [soft, hard], absolute times in the scheduler's clock, soft <= hard
     * (tb_schedule_range).  Absolute, as schedule's deadline, so that the
     * core reads the clock once and both ends come from that one reading;
     * NULL: the core calls schedule with the soft time */
    int (*schedule_range)(struct tb_sched *s, int64_t soft, int64_t hard,
                          tb_fn fn, void *arg, tb_handle *handle);
    /* optional: move a waiting one-shot task to an absolute deadline in
     * place (tb_reschedule); NULL answers TB_ENOTSUP */
    int (*reschedule)(struct tb_sched *s, tb_handle handle, int64_t deadline);
    size_t (*pending)(struct tb_sched *s);
    long (*advance)(struct tb_sched *s, int64_t now);
    long (*shutdown)(struct tb_sched *s);
    long (*shutdown_now)(struct tb_sched *s, tb_unrun_fn visit, void *ctx);
    int (*await_termination)(struct tb_sched *s, int64_t timeout_ns);
    /* join every thread the backend started (from tb_destroy) */
    void (*join)(struct tb_sched *s);
    void (*stats)(struct tb_sched *s, struct tb_stats *out);
    long (*purge)(struct tb_sched *s);    /* optional */
    /* optional: make room for n more tasks in the structure's own arrays
     * (the pool is reserved by the core first); TB_OK or TB_ENOMEM */
    int (*reserve)(struct tb_sched *s, size_t n);
    int (*check)(struct tb_sched *s);     /* optional */
};

/** The base every backend's scheduler embeds first. */
struct tb_sched {
    const struct tb_backend *backend;
    /* the ops every schedule and cancel calls, copied out of the ops table
     * so the entry path loads one pointer instead of three in a chain (the
     * virtual ones where the backend has them and the clock is virtual;
     * a backend's init may put a variant for its configuration in their
     * place) */
    int (*schedule)(struct tb_sched *s, int64_t deadline, tb_fn fn,
                    void *arg, tb_handle *handle, int64_t period);
    int (*cancel)(struct tb_sched *s, tb_handle handle);
    /* what tb_schedule tail-calls with vnow + delay, chosen once at
     * tb_create so that the call tests no clock mode: `schedule` on the
     * virtual clock; on the monotonic one, where vnow stays 0 (only
     * tb_advance and tb_spend move it, and both refuse that mode), the
     * core's step that reads the clock instead */
    int (*enter)(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                 tb_handle *handle, int64_t period);
    /* what tb_cancel tail-calls, chosen once at tb_create after the
     * backend's init: `cancel` on the virtual clock, where no thread was
     * started and so no fork can have lost one; on the monotonic one the
     * core's step that tests for a forked copy first */
    int (*cancel_entry)(struct tb_sched *s, tb_handle handle);
    struct tb_config cfg;          /* resolved: defaults filled in */
    struct tb_allocator alloc;
    _Atomic uint64_t bytes_held;
    _Atomic int64_t vnow;          /* virtual clock */
    bool threaded;                 /* cfg.clock == TB_CLOCK_MONOTONIC */
    /* deadlines on the wall clock (TB_CAP_WALL_CLOCK without
     * TB_F_MONOTONIC_DEADLINES): see tb_clock_now */
    bool wall;
    _Atomic int64_t wall_offset;   /* virtual wall clock - virtual time */
    bool in_advance;               /* virtual: inside tb_advance() */
    /* monotonic: the process's fork count + 1 when tb_start() ran, 0
     * before; another count means this is a forked child's copy, whose
     * threads did not come along (core/sched.c, forked) */
    unsigned started_epoch;
    struct tb_pool pool;
};

/** Allocates through the scheduler's allocator and counts the bytes. */
void *tb_mem_alloc(struct tb_sched *s, size_t size);

/** Zeroed tb_mem_alloc(). */
void *tb_mem_calloc(struct tb_sched *s, size_t n, size_t size);

/** Frees what tb_mem_alloc() gave (size must be the allocated size). */
void tb_mem_free(struct tb_sched *s, void *p, size_t size);

/** Grows or shrinks a block, copying min(old, new) bytes; NULL on failure
 *  (the old block is untouched then). */
void *tb_mem_realloc(struct tb_sched *s, void *p, size_t old_size,
                     size_t new_size);

/** tb_mem_alloc() of `size` bytes placed so that byte `lead` of the block
 *  starts an `align` boundary (align a power of two): malloc promises only
 *  16, and a heap array or a chunk of records laid on cache lines touches
 *  fewer of them.  The block is over-allocated by align - 1 bytes; *mem gets
 *  the allocation itself, for tb_mem_free_aligned().  NULL on failure. */
void *tb_mem_alloc_aligned(struct tb_sched *s, size_t size, size_t align,
                           size_t lead, void **mem);

/** Frees what tb_mem_alloc_aligned() gave (`mem`, with the same size and
 *  align). */
void tb_mem_free_aligned(struct tb_sched *s, void *mem, size_t size,
                         size_t align);

/** a + b, saturating at the ends of int64 (a clock plus an offset). */
static inline int64_t tb_add_sat(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b < 0 ? INT64_MIN : INT64_MAX;
    return r;
}

/** The clock the core adds a delay to, to give a backend its deadline: the
 *  virtual time, or CLOCK_MONOTONIC; CLOCK_REALTIME for a threaded
 *  scheduler whose deadlines are on the wall clock (s->wall).  A virtual
 *  wall scheduler gets deadlines on the virtual time like any other (so
 *  that the virtual schedule path stays one load and an add for every
 *  backend) and adds s->wall_offset itself. */
static inline int64_t tb_clock_now(const struct tb_sched *s)
{
    if (!s->threaded)
        return atomic_load_explicit(&s->vnow, memory_order_relaxed);
    return s->wall ? tb_realtime_ns() : tb_monotonic_ns();
}

/** The wall clock (tb_wall_now): CLOCK_REALTIME, or the virtual time plus
 *  the offset tb_wall_step() moves. */
static inline int64_t tb_wall_clock(const struct tb_sched *s)
{
    if (s->threaded)
        return tb_realtime_ns();
    return tb_add_sat(atomic_load_explicit(&s->vnow, memory_order_relaxed),
                      atomic_load_explicit(&s->wall_offset,
                                           memory_order_relaxed));
}

/** Next deadline of a periodic task after a run: fixed rate counts from the
 *  previous scheduled time, fixed delay from `base` (end of run for STPE,
 *  start for Timer).  INT64_MAX means the next run would reach the end of
 *  the clock: the task has no next run and must be retired as finished, not
 *  re-armed (at INT64_MAX it would be due again at once, and
 *  tb_advance(INT64_MAX) would run it forever). */
static inline int64_t tb_next_deadline(int64_t deadline, int64_t period,
                                       int64_t base)
{
    int64_t from = period > 0 ? deadline : base;
    int64_t step = period > 0 ? period : -period;
    return from > INT64_MAX - step ? INT64_MAX : from + step;
}

/** After a task's run, lock held: whether the task ends there, with the
 *  reason counted in *st: cancelled during its run (its cancel counted it),
 *  a one-shot or a failed periodic task (finished), or a periodic task of a
 *  scheduler `stopped` meanwhile (cancelled).  The caller retires a task
 *  that ends and re-arms any other. */
static inline bool tb_run_ends(const struct tb_task *t, bool failed,
                               bool stopped, struct tb_stats *st)
{
    if (tb_task_get_state(t) == TB_TASK_CANCELLED)
        return true;
    if (!t->period || failed) {
        st->finished++;
        return true;
    }
    if (stopped) {
        st->cancelled++;
        return true;
    }
    return false;
}

/** The monotonic time `ns` from now, saturating at INT64_MAX (for waits
 *  with a caller's timeout, which may be anything up to INT64_MAX). */
static inline int64_t tb_deadline_in(int64_t ns)
{
    int64_t now = tb_monotonic_ns();
    return ns > INT64_MAX - now ? INT64_MAX : now + ns;
}

/** Fills a timespec with a CLOCK_MONOTONIC deadline, for condition waits. */
struct timespec;
void tb_abstime(struct timespec *ts, int64_t monotonic_deadline_ns);

/** pthread condition variable on CLOCK_MONOTONIC. */
int tb_cond_init(pthread_cond_t *c);

/* ---- The invariant checkers ------------------------------------------- */

/** Prints "<file>:<line>: " and a printf-style message on stderr, with a
 *  newline (what TB_CHECK reports a broken invariant with). */
void tb_check_fail(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** In a backend's check op and its helpers: unless `cond`, reports the
 *  message (a printf format and its arguments) with its place in the source
 *  and returns TB_ECORRUPT from the calling function. */
#define TB_CHECK(cond, ...)                                                  \
    do {                                                                     \
        if (!(cond)) {                                                       \
            tb_check_fail(__FILE__, __LINE__, __VA_ARGS__);                  \
            return TB_ECORRUPT;                                              \
        }                                                                    \
    } while (0)

/* ---- A backend's threads ---------------------------------------------- */

/** The threads a backend runs in monotonic mode: ScheduledThreadPoolExecutor's
 *  workers, Kafka's reaper and executors, the one thread of
 *  java.util.Timer, of Netty's worker, of Go's timer loop and of the
 *  kernel's tick.  Whether they were started, how many still run, and the
 *  condition their end is announced on; and the backend's own lock and
 *  conditions, so that one call initialises (and checks) every one of them
 *  and one call destroys them.  Every field is read and written under the
 *  backend's lock. */
#define TB_THREADS_MAX_CONDS 4

struct tb_threads {
    pthread_t *ids;        /* `cap` ids: `one` when cap is 1 */
    pthread_t one;
    int cap;               /* how many ids there is room for */
    int created;           /* created so far, joined by tb_threads_join() */
    int live;              /* created and not yet at their end */
    pthread_cond_t ended;  /* broadcast when `live` reaches 0 */
    bool started;          /* tb_threads_begin() passed: a second start is
                            * refused */
    bool joined;           /* tb_threads_join() has taken them */
    pthread_mutex_t *lock; /* the backend's lock */
    pthread_cond_t *conds[TB_THREADS_MAX_CONDS]; /* the backend's conditions */
    int nconds;
};

/** Prepares room for `cap` threads (cap >= 1; more than one allocates
 *  through the scheduler), initialises the backend's `lock` and its `nconds`
 *  (at most TB_THREADS_MAX_CONDS) condition variables `conds` (on
 *  CLOCK_MONOTONIC, as tb_cond_init) and the threads' own: all or none,
 *  TB_OK, or TB_ENOMEM (TB_EINVAL past the bound) with nothing left to undo.
 *  For the backend's create call, which passes the error on.
 *  tb_threads_fini() undoes. */
int tb_threads_init(struct tb_sched *s, struct tb_threads *t, int cap,
                    pthread_mutex_t *lock, pthread_cond_t *const *conds,
                    int nconds);

/** Destroys the lock and the conditions and frees what tb_threads_init()
 *  made (the threads were joined or never started). */
void tb_threads_fini(struct tb_sched *s, struct tb_threads *t);

/** The checks of tb_start, lock held: TB_ESTATE if started before, else
 *  TB_ESHUTDOWN if `stopped` (the backend was shut down first), else the
 *  threads count as started and TB_OK. */
int tb_threads_begin(struct tb_threads *t, bool stopped);

/** Creates one more thread running main(arg), lock held (after
 *  tb_threads_begin): TB_OK, or TB_ENOMEM if pthread_create fails or there
 *  is no room left.  On failure the backend stops the ones already created
 *  (they end through tb_threads_end() as usual). */
int tb_threads_spawn(struct tb_threads *t, void *(*main)(void *), void *arg);

/** tb_threads_begin(), then `cap` threads running main(arg), lock held:
 *  the first error stops the creation and is returned. */
int tb_threads_start(struct tb_threads *t, bool stopped,
                     void *(*main)(void *), void *arg);

/** Called by each thread itself at its end, lock held: one fewer alive, and
 *  when none is left every tb_threads_await() learns it. */
void tb_threads_end(struct tb_threads *t);

/** tb_await_termination: TB_ESTATE unless *stopped (the backend's
 *  shut-down flag, read under the backend's lock), then waits up to
 *  timeout_ns for the last thread's end (TB_OK, or TB_ETIMEDOUT).  In
 *  virtual mode there are no threads and only *stopped is asked. */
int tb_threads_await(const struct tb_sched *s, struct tb_threads *t,
                     const bool *stopped, int64_t timeout_ns);

/** Joins every thread created, once (the backend's join op; a no-op in
 *  virtual mode, where tb_threads_init() was not called). */
void tb_threads_join(const struct tb_sched *s, struct tb_threads *t);

#endif
