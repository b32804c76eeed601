/*
 * testlib.c — the shared test helpers declared in testlib.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"

void rec_init(struct recorder *r, struct tb_sched *s)
{
    memset(r, 0, sizeof *r);
    r->s = s;
    pthread_mutex_t *m = malloc(sizeof *m);
    assert_non_null(m);
    pthread_mutex_init(m, NULL);
    r->lock = m;
}

void rec_free(struct recorder *r)
{
    pthread_mutex_destroy(r->lock);
    free(r->lock);
    free(r->runs);
    memset(r, 0, sizeof *r);
}

void rec_add(struct recorder *r, int id)
{
    int64_t at = tb_now(r->s);
    pthread_mutex_lock(r->lock);
    if (r->n == r->cap) {
        r->cap = r->cap ? r->cap * 2 : 64;
        r->runs = realloc(r->runs, r->cap * sizeof *r->runs);
        if (!r->runs)
            abort();
    }
    r->runs[r->n++] = (struct run_rec){id, at};
    pthread_mutex_unlock(r->lock);
}

size_t rec_count(struct recorder *r)
{
    pthread_mutex_lock(r->lock);
    size_t n = r->n;
    pthread_mutex_unlock(r->lock);
    return n;
}

size_t rec_runs_of(struct recorder *r, int id)
{
    size_t k = 0;
    pthread_mutex_lock(r->lock);
    for (size_t i = 0; i < r->n; i++)
        k += r->runs[i].id == id;
    pthread_mutex_unlock(r->lock);
    return k;
}

int probe_task(void *arg)
{
    struct probe *p = arg;
    p->runs++;
    rec_add(p->rec, p->id);
    if (p->spend)
        tb_spend(p->rec->s, p->spend);
    if (p->cancel_self_at && p->runs == p->cancel_self_at)
        p->cancel_result = tb_cancel(p->rec->s, p->self);
    return p->fail;
}

int noop_task(void *arg)
{
    (void)arg;
    return 0;
}

static void *fa_alloc(void *ctx, size_t size)
{
    struct failing_alloc *f = ctx;
    f->calls++;
    if (f->budget == 0)
        return NULL;
    if (f->budget > 0)
        f->budget--;
    return malloc(size);
}

static void fa_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    (void)size;
    free(p);
}

void failing_alloc_init(struct failing_alloc *f)
{
    f->hook = (struct tb_allocator){fa_alloc, fa_free, f};
    f->budget = -1;
    f->calls = 0;
}

uint64_t rng_next(uint64_t *x)
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

int64_t rng_range(uint64_t *x, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(span ? rng_next(x) % span : rng_next(x));
}

int wait_until(int (*cond)(void *), void *ctx, int64_t timeout_ns)
{
    int64_t end = tb_monotonic_ns() + timeout_ns;
    while (!cond(ctx)) {
        if (tb_monotonic_ns() > end)
            return 0;
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    return 1;
}

size_t backends_from_args(int argc, char **argv,
                          const struct tb_backend **list, size_t cap)
{
    size_t n = 0;
    if (argc > 1) {
        const struct tb_backend *b = tb_backend_find(argv[1]);
        if (!b) {
            fprintf(stderr, "%s: no backend named '%s'; registered:",
                    argv[0], argv[1]);
            for (size_t i = 0; i < tb_backend_count(); i++)
                fprintf(stderr, " %s", tb_backend_at(i)->name);
            fprintf(stderr, "\n");
            exit(2);
        }
        list[n++] = b;
    } else {
        for (size_t i = 0; i < tb_backend_count() && n < cap; i++)
            list[n++] = tb_backend_at(i);
    }
    return n;
}

struct tb_sched *make_sched(const struct tb_backend *b,
                            const struct tb_config *cfg)
{
    struct tb_sched *s = NULL;
    int rc = tb_create(b, cfg, &s);
    if (rc)
        fail_msg("tb_create(%s): %s", b->name, tb_strerror(rc));
    return s;
}

void assert_balanced(struct tb_sched *s)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(s, &st), TB_OK);
    if (!tb_stats_balanced(&st))
        fail_msg("%s: accounting broken: submitted %llu != finished %llu + "
                 "cancelled %llu + dropped %llu + (pending %llu - zombies "
                 "%llu) + running %llu",
                 tb_sched_backend(s)->name,
                 (unsigned long long)st.submitted,
                 (unsigned long long)st.finished,
                 (unsigned long long)st.cancelled,
                 (unsigned long long)st.dropped,
                 (unsigned long long)st.pending,
                 (unsigned long long)st.zombies,
                 (unsigned long long)st.running);
}

static const struct tb_backend *unit;

void unit_init(const char *name)
{
    unit = tb_backend_find(name);
    if (!unit) {
        fprintf(stderr, "no backend named '%s' is registered\n", name);
        exit(2);
    }
}

const struct tb_backend *unit_backend(void)
{
    assert_non_null(unit);
    return unit;
}

struct tb_sched *vsched(void)
{
    return make_sched(unit_backend(), NULL);
}

struct tb_sched *msched(void)
{
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC};
    return make_sched(unit_backend(), &c);
}

struct tb_stats stats_of(struct tb_sched *s)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(s, &st), TB_OK);
    return st;
}

void assert_sound(struct tb_sched *s)
{
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
}

size_t starts_of(struct recorder *r, int id, int64_t *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        if (r->runs[i].id == id && n < cap)
            out[n++] = r->runs[i].at;
    return n;
}

int flag_task(void *arg)
{
    struct flag *f = arg;
    atomic_store(&f->at, tb_monotonic_ns());
    atomic_fetch_add(&f->runs, 1);
    return 0;
}

int flag_set(void *ctx)
{
    return atomic_load(&((struct flag *)ctx)->runs) > 0;
}

int asleep(void *ctx)
{
    struct tb_stats st;
    tb_stats(ctx, &st);
    return st.timed_waits >= 1;
}

void check_bytes_per_task(double lo, double hi)
{
    enum { N = 20000 };
    struct tb_sched *s = vsched();
    uint64_t empty = stats_of(s).bytes_held;
    uint64_t rng = 3;
    for (int i = 0; i < N; i++)
        assert_int_equal(tb_schedule(s, rng_range(&rng, TB_MS, 1000 * TB_SEC),
                                     noop_task, NULL, NULL), TB_OK);
    double per = (double)(stats_of(s).bytes_held - empty) / N;
    print_message("%s: %.1f bytes per pending task (%d tasks)\n",
                  unit_backend()->name, per, N);
    assert_true(per >= lo);
    assert_true(per < hi);
    tb_destroy(s);
}

void schedule_probes(struct tb_sched *s, struct recorder *rec,
                     struct probe *p, tb_handle *h, int n, int64_t step)
{
    for (int i = 0; i < n; i++) {
        p[i] = (struct probe){.rec = rec, .id = i};
        assert_int_equal(tb_schedule(s, (i + 1) * step, probe_task, &p[i],
                                     h ? &h[i] : NULL), TB_OK);
    }
}

void finish_ran_once(struct tb_sched *s, struct recorder *rec,
                     const struct probe *p, int n)
{
    for (int i = 0; i < n; i++)
        assert_int_equal(p[i].runs, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(rec);
    tb_destroy(s);
}

void check_heap_reserve(size_t reserved, size_t grown)
{
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    const uint64_t slot = sizeof(struct { int64_t at; void *t; });
    uint64_t before = stats_of(s).bytes_held;
    assert_int_equal(tb_reserve(s, 1000), TB_OK);
    assert_true(stats_of(s).bytes_held >= before + reserved * slot);
    fa.budget = 0;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tb_schedule(s, (i % 7 + 1) * TB_MS, noop_task, NULL,
                                     NULL), TB_OK);
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_ENOMEM);
    assert_int_equal(tb_reserve(s, 1), TB_ENOMEM);
    fa.budget = -1;
    uint64_t full = stats_of(s).bytes_held;
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, full + grown * slot);
    assert_int_equal(tb_reserve(s, 0), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, TB_SEC), 1001);
    assert_balanced(s);
    tb_destroy(s);
}

void advance_skipping_missed(struct tb_sched *s, struct probe *p,
                             tb_handle *handle)
{
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, p,
                                            handle, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_advance(s, 12 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 19 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 55 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 59 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 60 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 10 * TB_SEC + 5), 1);
    assert_int_equal(tb_advance(s, 10 * TB_SEC + 10 * TB_MS - 1), 0);
    assert_int_equal(tb_advance(s, 10 * TB_SEC + 10 * TB_MS), 1);
}

void run_slow_fixed_delay(struct tb_sched *s, struct recorder *r,
                          struct probe *p, int64_t until)
{
    *p = (struct probe){.rec = r, .id = 1, .spend = 4 * TB_MS};
    assert_int_equal(tb_schedule_fixed_delay(s, 10 * TB_MS, probe_task, p, NULL,
                                             10 * TB_MS), TB_OK);
    for (int64_t t = TB_MS; t <= until; t += TB_MS)
        assert_true(tb_advance(s, t > tb_now(s) ? t : tb_now(s)) >= 0);
}
