/*
 * test_core.c — unit tests of what the backends share: the registry, error
 * strings, handles and their generations, config checks, the virtual clock,
 * the pool's layout and the wheels' division by a reciprocal; and
 * tb_schedule_range's checks and what a backend without TB_CAP_RANGE does
 * with it (as tb_schedule); the threads' lifecycle (tb_threads) and every
 * backend's threaded create under allocation failure.
 */
#include <pthread.h>
#include <string.h>

#include "tb_core.h"
#include "testlib.h"

static void test_registry(void **state)
{
    (void)state;
    assert_true(tb_backend_count() >= 1);
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        assert_non_null(b);
        assert_ptr_equal(tb_backend_find(b->name), b);
        assert_non_null(b->description);
    }
    assert_null(tb_backend_at(tb_backend_count()));
    assert_null(tb_backend_find("no-such-timer"));
    assert_null(tb_backend_find(NULL));
}

static void count_unrun(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    (void)h;
    (void)fn;
    (void)arg;
    (*(int *)ctx)++;
}

/* The interface's floor (issue 39): not in the registry, the core's checks
 * and the handle's generation check in front of it as in front of any
 * backend, its tasks never run, and its counts balance. */
static void test_floor(void **state)
{
    (void)state;
    const struct tb_backend *f = &tb_backend_floor;
    assert_null(tb_backend_find(f->name));
    for (size_t i = 0; i < tb_backend_count(); i++)
        assert_ptr_not_equal(tb_backend_at(i), f);
    struct tb_config mono = {.clock = TB_CLOCK_MONOTONIC};
    struct tb_sched *s = NULL;
    assert_int_equal(tb_create(f, &mono, &s), TB_ENOTSUP);
    assert_null(s);
    struct tb_config c = {.max_pending = 1500};
    assert_int_equal(tb_create(f, &c, &s), TB_OK);
    tb_handle h[1600];
    /* past one chunk of the pool, to its limit and one refused */
    for (int i = 0; i < 1500; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, &h[i]), TB_OK);
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, &h[1500]), TB_EFULL);
    assert_int_equal(h[1500], TB_HANDLE_NONE);
    assert_int_equal(tb_schedule(s, 1, NULL, NULL, &h[1500]), TB_EINVAL);
    assert_int_equal(tb_pending(s), 1500);
    assert_int_equal(tb_advance(s, TB_SEC), 0); /* nothing ever runs */
    assert_int_equal(tb_now(s), TB_SEC);
    assert_int_equal(tb_cancel(s, h[7]), 1);
    assert_int_equal(tb_cancel(s, h[7]), 0);            /* once */
    assert_int_equal(tb_cancel(s, TB_HANDLE_NONE), 0);
    assert_int_equal(tb_cancel(s, h[8] | TB_TASK_STATE_MASK), 0);
    assert_int_equal(tb_cancel(s, h[8] + ((uint64_t)1 << 32)), 0);
    /* the record comes back with the next generation: the old handle is
     * stale, the new one names it */
    tb_handle again;
    assert_int_equal(tb_schedule(s, 5, noop_task, NULL, &again), TB_OK);
    assert_int_equal((uint32_t)again, (uint32_t)h[7]);
    assert_int_not_equal(again, h[7]);
    assert_int_equal(tb_cancel(s, h[7]), 0);
    assert_int_equal(tb_cancel(s, again), 1);
    struct tb_stats st;
    assert_int_equal(tb_stats(s, &st), TB_OK);
    assert_int_equal(st.submitted, 1501);
    assert_int_equal(st.cancelled, 2);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.pending, 1499);
    assert_true(tb_stats_balanced(&st));
    assert_int_equal(tb_await_termination(s, 0), TB_ESTATE);
    int unrun = 0;
    assert_int_equal(tb_shutdown_now(s, count_unrun, &unrun), 1499);
    assert_int_equal(unrun, 1499);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, &h[0]), TB_ESHUTDOWN);
    assert_int_equal(tb_await_termination(s, 0), TB_OK);
    assert_int_equal(tb_stats(s, &st), TB_OK);
    assert_int_equal(st.dropped, 1499);
    assert_true(tb_stats_balanced(&st));
    tb_destroy(s);
}

/* tb_pool_waiting_unlocked names a WAITING record only, for its own
 * handle only: not a stale one, one with state bits set, nor a record in
 * another state. */
static void test_pool_waiting_lookup(void **state)
{
    (void)state;
    struct tb_sched *s = NULL;
    assert_int_equal(tb_create(&tb_backend_floor, NULL, &s), TB_OK);
    tb_handle h;
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, &h), TB_OK);
    struct tb_task *t = tb_pool_waiting_unlocked(&s->pool, h);
    assert_non_null(t);
    assert_ptr_equal(t, tb_pool_lookup_unlocked(&s->pool, h));
    for (uint32_t st = 1; st < 8; st++)
        assert_null(tb_pool_waiting_unlocked(
            &s->pool, h | (uint64_t)st << TB_TASK_STATE_SHIFT));
    assert_null(tb_pool_waiting_unlocked(&s->pool, h + ((uint64_t)1 << 32)));
    assert_null(tb_pool_waiting_unlocked(&s->pool, h + TB_POOL_CHUNK));
    tb_task_set_state(t, TB_TASK_RUNNING);
    assert_null(tb_pool_waiting_unlocked(&s->pool, h));
    assert_ptr_equal(tb_pool_lookup_unlocked(&s->pool, h), t);
    tb_task_set_state(t, TB_TASK_WAITING);
    assert_ptr_equal(tb_pool_waiting_unlocked(&s->pool, h), t);
    tb_destroy(s);
}

static void test_strerror(void **state)
{
    (void)state;
    int codes[] = {TB_OK, TB_EINVAL, TB_ESHUTDOWN, TB_EFULL, TB_ENOMEM,
                   TB_ERANGE, TB_ENOTSUP, TB_ESTATE, TB_ETIMEDOUT,
                   TB_ECORRUPT};
    for (size_t i = 0; i < sizeof codes / sizeof codes[0]; i++)
        assert_string_not_equal(tb_strerror(codes[i]), "unknown error");
    assert_string_equal(tb_strerror(-1000), "unknown error");
}

static void test_bad_config(void **state)
{
    (void)state;
    const struct tb_backend *b = tb_backend_at(0);
    struct tb_sched *s = (struct tb_sched *)&s;
    assert_int_equal(tb_create(NULL, NULL, &s), TB_EINVAL);
    assert_int_equal(tb_create(b, NULL, NULL), TB_EINVAL);
    struct tb_config bad[] = {
        {.clock = (enum tb_clock)7},
        {.threads = -1},
        {.tick_ns = -1},
        {.wheel_size = -1},
        {.poll_ns = -5},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        s = (struct tb_sched *)&s;
        assert_int_equal(tb_create(b, &bad[i], &s), TB_EINVAL);
        assert_null(s);
    }
    struct tb_allocator half = {NULL, NULL, NULL};
    struct tb_config c = {.allocator = &half};
    assert_int_equal(tb_create(b, &c, &s), TB_EINVAL);
}

static void test_null_sched(void **state)
{
    (void)state;
    tb_handle h = 1;
    assert_int_equal(tb_schedule(NULL, 0, noop_task, NULL, &h), TB_EINVAL);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_cancel(NULL, 1), TB_EINVAL);
    assert_int_equal(tb_advance(NULL, 1), TB_EINVAL);
    assert_int_equal(tb_start(NULL), TB_EINVAL);
    assert_int_equal(tb_shutdown(NULL), TB_EINVAL);
    assert_int_equal(tb_shutdown_now(NULL, NULL, NULL), TB_EINVAL);
    assert_int_equal(tb_purge(NULL), TB_EINVAL);
    assert_int_equal(tb_check(NULL), TB_EINVAL);
    assert_int_equal(tb_spend(NULL, 1), TB_EINVAL);
    struct tb_stats st;
    assert_int_equal(tb_stats(NULL, &st), TB_EINVAL);
    assert_int_equal(tb_pending(NULL), 0);
    tb_destroy(NULL);
}

/* Handles of reused slots differ in generation: the old one goes stale. */
static void test_generations(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(tb_backend_at(0), NULL);
    tb_handle a, b;
    assert_int_equal(tb_schedule(s, 10, noop_task, NULL, &a), TB_OK);
    assert_int_equal(tb_cancel(s, a), 1);
    assert_int_equal(tb_advance(s, 100), 0);
    assert_int_equal(tb_schedule(s, 10, noop_task, NULL, &b), TB_OK);
    assert_int_equal((uint32_t)a, (uint32_t)b); /* same slot, reused */
    assert_int_not_equal(a, b);
    assert_int_equal(tb_cancel(s, a), 0);
    assert_int_equal(tb_cancel(s, b), 1);
    tb_destroy(s);
}

static void test_virtual_clock(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(tb_backend_at(0), NULL);
    assert_int_equal(tb_now(s), 0);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 0);
    assert_int_equal(tb_now(s), 5 * TB_MS);
    assert_int_equal(tb_advance(s, 4 * TB_MS), TB_EINVAL);
    assert_int_equal(tb_spend(s, -1), TB_EINVAL);
    assert_int_equal(tb_spend(s, INT64_MAX), TB_EINVAL);
    assert_int_equal(tb_spend(s, TB_MS), TB_OK);
    assert_int_equal(tb_now(s), 6 * TB_MS);
    assert_int_equal(tb_start(s), TB_ESTATE);
    tb_destroy(s);
}

/* tb_reserve grows the pool once; the schedules after it allocate nothing.
 * hierwheel is used because its level-0 buckets exist from the start, so a
 * 1 ms task needs no memory but its record. */
static void test_reserve(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    const struct tb_backend *b = tb_backend_find("hierwheel");
    if (!b)
        skip();
    struct tb_sched *s = make_sched(b, &c);
    assert_int_equal(tb_reserve(NULL, 1), TB_EINVAL);
    assert_int_equal(tb_reserve(s, (size_t)UINT32_MAX), TB_ERANGE);
    assert_int_equal(tb_reserve(s, 3000), TB_OK);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_true(st.bytes_held > 3000 * 48);
    fa.budget = 0;
    for (int i = 0; i < 3000; i++) /* records come from the reserve */
        assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_reserve(s, 100000), TB_ENOMEM);
    fa.budget = -1;
    assert_int_equal(tb_advance(s, TB_SEC), 3000);
    tb_destroy(s);
}

/* The task word packs generation, state and slot; each comes back out
 * unchanged at the edges of its range, and the handle is the word without
 * its state. */
static void test_task_word(void **state)
{
    (void)state;
    uint32_t gens[] = {1, 2, 0x7fffffffu, 0x80000000u, UINT32_MAX};
    uint32_t slots[] = {0, 1, 1023, 1024, (uint32_t)TB_POOL_MAX_SLOTS - 1};
    uint32_t states[] = {TB_TASK_FREE, TB_TASK_WAITING, TB_TASK_RUNNING,
                         TB_TASK_CANCELLED, TB_TASK_DONE};
    for (size_t g = 0; g < sizeof gens / sizeof gens[0]; g++)
        for (size_t k = 0; k < sizeof slots / sizeof slots[0]; k++)
            for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
                uint64_t w = tb_task_word(gens[g], slots[k], states[i]);
                assert_int_equal(tb_task_gen(w), gens[g]);
                assert_int_equal(tb_task_slot_of(w), slots[k]);
                assert_int_equal(tb_task_state(w), states[i]);
                tb_handle h = tb_task_handle(w);
                assert_int_equal(h, (uint64_t)gens[g] << 32 | slots[k]);
                assert_int_not_equal(h, TB_HANDLE_NONE);
                /* a live word names its handle; a free one names nothing */
                assert_int_equal(tb_task_names(w, h),
                                 states[i] != TB_TASK_FREE);
                assert_false(tb_task_names(w, h ^ (uint64_t)1 << 32));
                assert_false(tb_task_names(w, TB_HANDLE_NONE));
            }
    assert_int_equal(TB_POOL_MAX_SLOTS, (size_t)1 << 29);
    assert_int_equal(sizeof(struct tb_task), 40);
}

/* Records taken and given straight from a scheduler's pool: a handle goes
 * stale once its record is given back and taken again, and the
 * generation's wrap skips 0, so no handle is ever TB_HANDLE_NONE. */
static void test_pool_generation_wrap(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(tb_backend_at(0), NULL);
    struct tb_pool *p = &s->pool;
    tb_handle a, b;
    struct tb_task *t = tb_pool_get(p, &a);
    assert_non_null(t);
    assert_ptr_equal(tb_pool_lookup(p, a), t);
    assert_int_equal(tb_pool_handle(p, t), a);
    assert_int_equal(tb_task_get_state(t), TB_TASK_WAITING);
    uint32_t slot = tb_task_slot(t);
    assert_int_equal((uint32_t)a, slot);
    tb_pool_put(p, t);
    assert_null(tb_pool_lookup(p, a)); /* free: names nothing */
    assert_ptr_equal(tb_pool_get(p, &b), t); /* the free list is LIFO */
    assert_int_equal((uint32_t)b, slot);
    assert_int_equal(tb_task_gen(b), tb_task_gen(a) + 1);
    assert_null(tb_pool_lookup(p, a)); /* stale after reuse */
    assert_ptr_equal(tb_pool_lookup(p, b), t);
    /* as if the slot had been reused 2^32 - 2 times */
    tb_pool_put(p, t);
    atomic_store(&t->gs, tb_task_word(UINT32_MAX, slot, TB_TASK_FREE));
    assert_ptr_equal(tb_pool_get(p, &a), t);
    assert_int_equal(a, (uint64_t)UINT32_MAX << 32 | slot);
    tb_pool_put(p, t);
    assert_ptr_equal(tb_pool_get(p, &b), t);
    assert_int_equal(b, (uint64_t)1 << 32 | slot); /* 1, never 0 */
    assert_null(tb_pool_lookup(p, a));
    assert_null(tb_pool_lookup(p, TB_HANDLE_NONE));
    assert_null(tb_pool_lookup(p, (uint64_t)slot)); /* generation 0 */
    /* slots beyond the pool, and beyond the slot bits, name nothing */
    assert_null(tb_pool_lookup(p, (uint64_t)1 << 32 | (uint32_t)p->nchunks
                                                          << TB_POOL_CHUNK_SHIFT));
    assert_null(tb_pool_lookup(p, b | (uint64_t)1 << TB_TASK_SLOT_BITS));
    assert_null(tb_pool_lookup(p, UINT64_MAX));
    tb_pool_put(p, t);
    tb_destroy(s);
}

/* Past TB_POOL_MAX_SLOTS records the pool refuses: tb_reserve with
 * TB_ERANGE before allocating anything, counting the records already live,
 * and a schedule that would need a new chunk beyond the last with
 * TB_ENOMEM (the pool is made to look full, since 2^29 real records would
 * not fit in a test machine). */
static void test_slot_limit(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    for (size_t b = 0; b < tb_backend_count(); b++) {
        struct tb_sched *s = make_sched(tb_backend_at(b), &c);
        struct tb_stats st;
        tb_stats(s, &st);
        uint64_t held = st.bytes_held;
        assert_int_equal(tb_reserve(s, TB_POOL_MAX_SLOTS + 1), TB_ERANGE);
        assert_int_equal(tb_reserve(s, SIZE_MAX), TB_ERANGE);
        tb_stats(s, &st);
        assert_int_equal(st.bytes_held, held);
        /* exactly the limit is allowed: it fails only for memory */
        fa.budget = 0;
        assert_int_equal(tb_reserve(s, TB_POOL_MAX_SLOTS), TB_ENOMEM);
        fa.budget = -1;
        tb_handle h;
        assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, &h), TB_OK);
        assert_int_equal(tb_reserve(s, TB_POOL_MAX_SLOTS), TB_ERANGE);
        fa.budget = 0;
        assert_int_equal(tb_reserve(s, TB_POOL_MAX_SLOTS - 1), TB_ENOMEM);
        fa.budget = -1;
        /* a full pool: no free record and no chunk left to add */
        struct tb_pool *p = &s->pool;
        struct tb_task *free_head = p->free_head;
        size_t nchunks = p->nchunks;
        p->free_head = TB_POOL_NIL;
        p->nchunks = TB_POOL_MAX_CHUNKS;
        tb_handle g = 1;
        assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, &g),
                         TB_ENOMEM);
        assert_int_equal(g, TB_HANDLE_NONE);
        p->free_head = free_head;
        p->nchunks = nchunks;
        assert_int_equal(tb_pending(s), 1);
        assert_int_equal(tb_cancel(s, h), 1);
        tb_destroy(s);
    }
}

/* tb_mem_alloc_aligned places byte `lead` of the block on the boundary,
 * counts what it allocated (size + align - 1) and gives it all back; an
 * allocator failure is NULL with nothing counted. */
static void test_mem_alloc_aligned(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(tb_backend_at(0), &c);
    struct tb_stats st;
    tb_stats(s, &st);
    uint64_t base = st.bytes_held;
    size_t leads[] = {0, 8, 48, 63};
    for (size_t i = 0; i < sizeof leads / sizeof leads[0]; i++)
        for (size_t size = 1; size < 4000; size = size * 3 + 5) {
            void *mem = NULL;
            unsigned char *p =
                tb_mem_alloc_aligned(s, size, 64, leads[i], &mem);
            assert_non_null(p);
            assert_non_null(mem);
            assert_int_equal(((uintptr_t)p + leads[i]) % 64, 0);
            assert_true(p >= (unsigned char *)mem &&
                        p + size <= (unsigned char *)mem + size + 63);
            memset(p, 0xa5, size); /* all of it is ours (ASan checks) */
            tb_stats(s, &st);
            assert_int_equal(st.bytes_held, base + size + 63);
            tb_mem_free_aligned(s, mem, size, 64);
            tb_stats(s, &st);
            assert_int_equal(st.bytes_held, base);
        }
    fa.budget = 0;
    void *mem = &mem;
    assert_null(tb_mem_alloc_aligned(s, 100, 64, 0, &mem));
    assert_null(mem);
    mem = &mem;
    assert_null(tb_mem_alloc_aligned(s, SIZE_MAX - 10, 64, 0, &mem));
    assert_null(mem);
    fa.budget = -1;
    tb_stats(s, &st);
    assert_int_equal(st.bytes_held, base);
    tb_destroy(s);
}

/* A task run by tb_advance may not advance the clock itself. */
static struct tb_sched *reentrant_sched;
static long reentrant_result;

static int advance_inside(void *arg)
{
    (void)arg;
    reentrant_result = tb_advance(reentrant_sched, tb_now(reentrant_sched) + 1);
    return 0;
}

static void test_advance_not_reentrant(void **state)
{
    (void)state;
    for (size_t i = 0; i < tb_backend_count(); i++) {
        struct tb_sched *s = make_sched(tb_backend_at(i), NULL);
        reentrant_sched = s;
        reentrant_result = 0;
        assert_int_equal(tb_schedule(s, 0, advance_inside, NULL, NULL), TB_OK);
        assert_int_equal(tb_advance(s, TB_SEC), 1);
        assert_int_equal(reentrant_result, TB_ESTATE);
        assert_int_equal(tb_advance(s, 2 * TB_SEC), 0); /* usable after */
        tb_destroy(s);
    }
}

/* bytes_held counts what the scheduler holds and returns to its base. */
static void test_bytes_held(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(tb_backend_at(0), NULL);
    struct tb_stats st;
    tb_stats(s, &st);
    uint64_t empty = st.bytes_held;
    assert_true(empty > 0);
    for (int i = 0; i < 5000; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    tb_stats(s, &st);
    assert_true(st.bytes_held > empty + 5000 * 40);
    tb_destroy(s);
}

/* tb_udiv agrees with the DIV instruction for every divisor kind (1, powers
 * of two, odd, above 2^63) at the edges of its domain (numerators below
 * 2^63) and on random numerators. */
static void test_udiv(void **state)
{
    (void)state;
    const uint64_t top = (uint64_t)INT64_MAX;
    uint64_t ds[] = {1, 2, 3, 5, 7, 10, 20, 641, 1000, 160000, 1000000,
                     3u * 1000 * 1000 * 1000, (uint64_t)1 << 32,
                     ((uint64_t)1 << 32) + 1, top - 1, top,
                     (uint64_t)1 << 63, ((uint64_t)1 << 63) + 1,
                     UINT64_MAX - 1, UINT64_MAX};
    uint64_t x = 0x9e3779b97f4a7c15u;
    for (size_t i = 0; i < sizeof ds / sizeof ds[0] + 300; i++) {
        uint64_t d;
        if (i < sizeof ds / sizeof ds[0]) {
            d = ds[i];
        } else { /* random divisors of every width */
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            d = x >> (x % 64);
            if (!d)
                d = 1;
        }
        struct tb_udiv u = tb_udiv_make(d);
        uint64_t ns[] = {0, 1, d - 1, d, d + 1, 2 * d - 1, 2 * d, top - 1,
                         top, top - d, top / 2};
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            if (ns[k] <= top)
                assert_int_equal(tb_udiv(&u, ns[k]), ns[k] / d);
        for (int k = 0; k < 2000; k++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            uint64_t n = (x >> 1) >> (k % 63);
            assert_int_equal(tb_udiv(&u, n), n / d);
        }
    }
}

/* Records start on a cache line, so a 64-byte record touches one line. */
static void test_pool_alignment(void **state)
{
    (void)state;
    for (size_t b = 0; b < tb_backend_count(); b++) {
        struct tb_sched *s = make_sched(tb_backend_at(b), NULL);
        assert_int_equal(tb_reserve(s, 3 * TB_POOL_CHUNK), TB_OK);
        for (size_t c = 0; c < s->pool.nchunks; c++)
            assert_int_equal(
                (uintptr_t)tb_pool_record(
                    &s->pool, (uint32_t)(c << TB_POOL_CHUNK_SHIFT)) %
                    TB_POOL_ALIGN,
                0);
        tb_destroy(s);
    }
}

/* tb_schedule_range's own checks, the same on every backend: a negative
 * slack, a NULL scheduler or callback, a delay or a range past TB_MAX_DELAY
 * or past the end of the clock; each answers its error, says "no task"
 * through the handle and leaves the pending tasks as they were. */
static void test_schedule_range_bad_input(void **state)
{
    (void)state;
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        struct tb_sched *s = make_sched(b, NULL);
        tb_handle h = 5, first;
        assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, &first),
                         TB_OK);
        struct {
            struct tb_sched *s;
            int64_t delay, slack;
            tb_fn fn;
            int rc;
        } bad[] = {
            {NULL, TB_MS, 0, noop_task, TB_EINVAL},
            {s, TB_MS, 0, NULL, TB_EINVAL},
            {s, TB_MS, -1, noop_task, TB_EINVAL},
            {s, TB_MS, INT64_MIN, noop_task, TB_EINVAL},
            {s, TB_MAX_DELAY + 1, 0, noop_task, TB_ERANGE},
            {s, TB_MAX_DELAY, 1, noop_task, TB_ERANGE},
            {s, 1, TB_MAX_DELAY, noop_task, TB_ERANGE},
            {s, 0, INT64_MAX, noop_task, TB_ERANGE},
            {s, -5, TB_MAX_DELAY + 1, noop_task, TB_ERANGE},
        };
        for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
            h = 5;
            assert_int_equal(tb_schedule_range(bad[k].s, bad[k].delay,
                                               bad[k].slack, bad[k].fn, NULL,
                                               &h), bad[k].rc);
            assert_int_equal(h, TB_HANDLE_NONE);
        }
        assert_int_equal(tb_pending(s), 1);
        /* the edges are accepted: the whole budget, a negative delay */
        assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY - 7, 7, noop_task,
                                           NULL, &h), TB_OK);
        assert_int_not_equal(h, TB_HANDLE_NONE);
        assert_int_equal(tb_cancel(s, h), 1);
        assert_int_equal(tb_schedule_range(s, -3, 0, noop_task, NULL, &h),
                         TB_OK);
        /* due at once: Kafka's timer hands it to its executor already */
        int rc = tb_cancel(s, h);
        assert_true(rc == 0 || rc == 1);
        /* near the end of the clock (reached empty, which costs a wheel
         * nothing): the hard end may not pass it */
        assert_int_equal(tb_cancel(s, first), 1);
        assert_true(tb_advance(s, INT64_MAX - TB_SEC) >= 0);
        h = 5;
        assert_int_equal(tb_schedule_range(s, TB_SEC - 3, 4, noop_task, NULL,
                                           &h), TB_ERANGE);
        assert_int_equal(h, TB_HANDLE_NONE);
        assert_int_equal(tb_schedule_range(s, TB_SEC, 1, noop_task, NULL,
                                           &h), TB_ERANGE);
        assert_int_equal(tb_schedule_range(s, TB_SEC - 3, 3, noop_task, NULL,
                                           &h), TB_OK);
        assert_int_equal(tb_cancel(s, h), 1);
        struct tb_stats st;
        assert_int_equal(tb_stats(s, &st), TB_OK);
        assert_int_equal(st.rejected, 0); /* bad input is not a rejection */
        assert_int_not_equal(tb_check(s), TB_ECORRUPT);
        assert_balanced(s);
        tb_destroy(s);
    }
}

struct twin_count {
    int runs;
};

static int twin_task(void *arg)
{
    ((struct twin_count *)arg)->runs++;
    return 0;
}

/* A backend without TB_CAP_RANGE ignores the slack: the same delays through
 * tb_schedule_range with random slack and through tb_schedule, into two
 * schedulers of one configuration, run the same tasks in every step of the
 * clock, and cancels answer the same.  A backend with it runs each task
 * once, never before its soft end, and by the step that reaches its hard
 * end (a ticked one: by the step after the tick past it). */
static void test_schedule_range_by_caps(void **state)
{
    (void)state;
    enum { N = 400 };
    static struct twin_count plain[N], ranged[N];
    static int64_t soft[N], hard[N];
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        struct tb_sched *a = make_sched(b, NULL), *r = make_sched(b, NULL);
        struct tb_config cfg;
        tb_sched_config(a, &cfg);
        int64_t tick = cfg.tick_ns > 0 ? cfg.tick_ns : 1;
        tb_handle ha[N], hr[N];
        uint64_t rng = 11 + i;
        memset(plain, 0, sizeof plain);
        memset(ranged, 0, sizeof ranged);
        for (int k = 0; k < N; k++) {
            int64_t d = rng_range(&rng, 0, 2 * TB_SEC);
            int64_t slack = k % 4 ? rng_range(&rng, 0, 500 * TB_MS) : 0;
            soft[k] = d;
            hard[k] = d + slack;
            assert_int_equal(tb_schedule(a, d, twin_task, &plain[k], &ha[k]),
                             TB_OK);
            assert_int_equal(tb_schedule_range(r, d, slack, twin_task,
                                               &ranged[k], &hr[k]), TB_OK);
        }
        for (int k = 0; k < N; k += 7)
            assert_int_equal(tb_cancel(a, ha[k]), tb_cancel(r, hr[k]));
        bool range = b->caps & TB_CAP_RANGE;
        int64_t step = 7 * TB_MS;
        for (int64_t t = step; t <= 4 * TB_SEC; t += step) {
            long na = tb_advance(a, t), nr = tb_advance(r, t);
            assert_true(na >= 0 && nr >= 0);
            if (!range)
                assert_int_equal(na, nr);
            for (int k = 0; k < N; k++) {
                if (!range) {
                    assert_int_equal(plain[k].runs, ranged[k].runs);
                    continue;
                }
                assert_true(ranged[k].runs <= 1);
                if (ranged[k].runs)
                    assert_true(soft[k] <= t);
                if (k % 7 && hard[k] + tick + step <= t &&
                    !(b->caps & TB_CAP_GRANULAR))
                    assert_int_equal(ranged[k].runs, 1);
            }
        }
        for (int k = 0; k < N; k++)
            assert_int_equal(ranged[k].runs, k % 7 ? 1 : 0);
        assert_int_equal(tb_pending(r), 0);
        assert_balanced(a);
        assert_balanced(r);
        tb_destroy(a);
        tb_destroy(r);
    }
}

/* ---- tb_threads: the lifecycle every threaded backend runs on ---------- */

struct gate {
    struct tb_threads *t;
    pthread_mutex_t *lock;
    bool open;
    pthread_cond_t *cond;
};

/* Waits at the gate, then ends as a backend's thread does (lock held). */
static void *gate_thread(void *arg)
{
    struct gate *g = arg;
    pthread_mutex_lock(g->lock);
    while (!g->open)
        pthread_cond_wait(g->cond, g->lock);
    tb_threads_end(g->t);
    pthread_mutex_unlock(g->lock);
    return NULL;
}

static void test_threads_lifecycle(void **state)
{
    (void)state;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC};
    struct tb_sched *s = make_sched(tb_backend_at(0), &c);
    struct tb_stats st;
    tb_stats(s, &st);
    uint64_t before = st.bytes_held;
    struct tb_threads t;
    pthread_mutex_t lock;
    pthread_cond_t cond;
    assert_int_equal(tb_threads_init(s, &t, 3, &lock, (pthread_cond_t *[]){
                                         &cond, &cond, &cond, &cond, &cond},
                                     TB_THREADS_MAX_CONDS + 1),
                     TB_EINVAL);
    assert_int_equal(
        tb_threads_init(s, &t, 3, &lock, (pthread_cond_t *[]){&cond}, 1),
        TB_OK);
    tb_stats(s, &st);
    assert_int_equal(st.bytes_held, before + 3 * sizeof(pthread_t));
    struct gate g = {&t, &lock, false, &cond};
    bool stopped = false;
    pthread_mutex_lock(&lock);
    assert_int_equal(tb_threads_start(&t, false, gate_thread, &g), TB_OK);
    assert_int_equal(t.live, 3);
    assert_int_equal(tb_threads_start(&t, false, gate_thread, &g), TB_ESTATE);
    assert_int_equal(tb_threads_spawn(&t, gate_thread, &g), TB_ENOMEM);
    pthread_mutex_unlock(&lock);
    /* not shut down: refused at once; shut down: waits for all three */
    assert_int_equal(tb_threads_await(s, &t, &stopped, TB_SEC), TB_ESTATE);
    pthread_mutex_lock(&lock);
    stopped = true;
    pthread_mutex_unlock(&lock);
    assert_int_equal(tb_threads_await(s, &t, &stopped, TB_MS), TB_ETIMEDOUT);
    pthread_mutex_lock(&lock);
    g.open = true;
    pthread_cond_broadcast(&cond);
    pthread_mutex_unlock(&lock);
    assert_int_equal(tb_threads_await(s, &t, &stopped, 60 * TB_SEC), TB_OK);
    assert_int_equal(t.live, 0);
    tb_threads_join(s, &t);
    tb_threads_join(s, &t); /* once only */
    tb_threads_fini(s, &t);
    tb_stats(s, &st);
    assert_int_equal(st.bytes_held, before);
    /* a shut-down backend's start is refused before any thread exists */
    assert_int_equal(
        tb_threads_init(s, &t, 1, &lock, (pthread_cond_t *[]){&cond}, 1),
        TB_OK);
    assert_int_equal(tb_threads_start(&t, true, gate_thread, &g), TB_ESHUTDOWN);
    assert_int_equal(t.created, 0);
    tb_threads_fini(s, &t);
    /* the ids' allocation failing leaves nothing to undo */
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    c.allocator = &fa.hook;
    struct tb_sched *f = make_sched(tb_backend_at(0), &c);
    tb_stats(f, &st);
    before = st.bytes_held;
    fa.budget = 0;
    assert_int_equal(
        tb_threads_init(f, &t, 2, &lock, (pthread_cond_t *[]){&cond}, 1),
        TB_ENOMEM);
    tb_stats(f, &st);
    assert_int_equal(st.bytes_held, before);
    fa.budget = -1;
    tb_destroy(f);
    tb_destroy(s);
}

/* Every backend's threaded create fails cleanly at each allocation it
 * makes, and its error reaches the caller of tb_create. */
static void test_threaded_create_failure(void **state)
{
    (void)state;
    for (size_t i = 0; i < tb_backend_count(); i++) {
        struct failing_alloc fa;
        failing_alloc_init(&fa);
        struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 3,
                              .allocator = &fa.hook};
        for (long budget = 0;; budget++) {
            fa.budget = budget;
            struct tb_sched *s = NULL;
            int rc = tb_create(tb_backend_at(i), &c, &s);
            if (rc == TB_OK) {
                fa.budget = -1;
                assert_int_equal(tb_start(s), TB_OK);
                tb_destroy(s);
                break;
            }
            assert_int_equal(rc, TB_ENOMEM);
            assert_null(s);
            assert_true(budget < 64);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registry),
        cmocka_unit_test(test_strerror),
        cmocka_unit_test(test_floor),
        cmocka_unit_test(test_pool_waiting_lookup),
        cmocka_unit_test(test_bad_config),
        cmocka_unit_test(test_null_sched),
        cmocka_unit_test(test_generations),
        cmocka_unit_test(test_task_word),
        cmocka_unit_test(test_pool_generation_wrap),
        cmocka_unit_test(test_slot_limit),
        cmocka_unit_test(test_mem_alloc_aligned),
        cmocka_unit_test(test_virtual_clock),
        cmocka_unit_test(test_bytes_held),
        cmocka_unit_test(test_advance_not_reentrant),
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_udiv),
        cmocka_unit_test(test_pool_alignment),
        cmocka_unit_test(test_schedule_range_bad_input),
        cmocka_unit_test(test_schedule_range_by_caps),
        cmocka_unit_test(test_threads_lifecycle),
        cmocka_unit_test(test_threaded_create_failure),
    };
    return cmocka_run_group_tests_name("core", tests, NULL, NULL);
}
