/*
 * test_timerthread.c — unit tests of timerthread's fidelity to
 * java.util.Timer: the 1-based heap that starts at 128 slots and doubles,
 * equal deadlines without a tie-break, lazy cancel and purge, reschedule
 * before the run (fixed delay start to start, fixed-rate catch-up), a failing
 * task killing the timer, Timer.cancel() from inside a task, cancel after
 * the timer stopped, max_pending with a periodic task queued during its run
 * (DECISIONS.md D1), the one timer thread, and the heap invariant checker
 * after 10^5 random operations.
 *
 * Virtual-clock cases assert exact times; monotonic ones only use generous
 * margins and never assert speed.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

/* ---- Shape ------------------------------------------------------------- */

static void test_caps(void **state)
{
    (void)state;
    const struct tb_backend *b = unit_backend();
    assert_true(b->caps & TB_CAP_PURGE);
    assert_true(b->caps & TB_CAP_FAIL_KILLS);
    assert_true(b->caps & TB_CAP_LAZY_CANCEL);
    assert_false(b->caps & TB_CAP_FIFO_TIES);
    assert_false(b->caps & TB_CAP_TICKED);
    struct tb_config c = {.threads = 8};
    struct tb_sched *s = make_sched(b, &c);
    tb_sched_config(s, &c);
    assert_int_equal(c.threads, 1); /* a Timer has one thread */
    tb_destroy(s);
}

/* No tie-break: three tasks at one time come out as TaskQueue's heap moves
 * them — A, then the last one (C) lifted to the root, then B. */
static void test_equal_deadlines_not_fifo(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p[3];
    for (int i = 0; i < 3; i++) {
        p[i] = (struct probe){.rec = &r, .id = i};
        assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &p[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_advance(s, 10 * TB_MS), 3);
    assert_int_equal(r.runs[0].id, 0);
    assert_int_equal(r.runs[1].id, 2);
    assert_int_equal(r.runs[2].id, 1);
    rec_free(&r);
    tb_destroy(s);
}

/* The array holds 127 tasks in 128 slots, then doubles: 255 in 256, ... */
static void test_heap_starts_at_128_and_doubles(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    /* a heap slot: the cached deadline and the task pointer */
    const uint64_t slot = sizeof(struct { int64_t at; void *t; });
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, NULL), TB_OK);
    uint64_t base = stats_of(s).bytes_held; /* pool chunk now allocated */
    for (int i = 2; i <= 127; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, base);
    assert_int_equal(tb_schedule(s, 128, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, base + 128 * slot);
    for (int i = 129; i <= 255; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, base + 128 * slot);
    assert_int_equal(tb_schedule(s, 256, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, base + 384 * slot);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* A growth that cannot allocate rejects the task and keeps the others. */
static void test_growth_failure_keeps_queue(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    for (int i = 1; i <= 127; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    fa.budget = 0;
    tb_handle h = 1;
    assert_int_equal(tb_schedule(s, 500, noop_task, NULL, &h), TB_ENOMEM);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_pending(s), 127);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(stats_of(s).rejected, 1);
    fa.budget = -1;
    assert_int_equal(tb_schedule(s, 500, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 500), 128);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- A failing task kills the timer ------------------------------------ */

static void test_failure_kills_timer(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe per = {.rec = &r, .id = 0};
    struct probe bad = {.rec = &r, .id = 1, .fail = 1};
    struct probe b = {.rec = &r, .id = 2}, c = {.rec = &r, .id = 3};
    struct probe z = {.rec = &r, .id = 4};
    tb_handle hz;
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, probe_task, &per,
                                            NULL, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 12 * TB_MS, probe_task, &bad, NULL), 0);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &b, NULL), 0);
    assert_int_equal(tb_schedule(s, 30 * TB_MS, probe_task, &c, NULL), 0);
    assert_int_equal(tb_schedule(s, 40 * TB_MS, probe_task, &z, &hz), 0);
    assert_int_equal(tb_cancel(s, hz), 1);

    assert_int_equal(tb_advance(s, 100 * TB_MS), 2); /* per@5, bad@12 */
    assert_int_equal(per.runs, 1);
    assert_int_equal(bad.runs, 1);
    assert_int_equal(b.runs + c.runs + z.runs, 0);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 2);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.finished, 1);  /* the failing one-shot */
    assert_int_equal(st.dropped, 3);   /* per, b, c: lost to the failure */
    assert_int_equal(st.lost, 3);
    assert_int_equal(st.cancelled, 1); /* z, a zombie, simply goes */
    assert_int_equal(st.zombies, 0);
    assert_balanced(s);

    tb_handle h = 1;
    assert_int_equal(tb_schedule(s, 0, probe_task, &b, &h), TB_ESHUTDOWN);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_schedule_fixed_rate(s, 0, probe_task, &b, NULL, 1),
                     TB_ESHUTDOWN);
    assert_int_equal(stats_of(s).rejected, 2);
    assert_int_equal(tb_advance(s, 200 * TB_MS), 0);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 0), TB_OK);
    assert_int_equal(b.runs + c.runs, 0);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

struct fail_at {
    int runs;
    int fail_on; /* fail on this run */
};

static int fail_at_task(void *arg)
{
    struct fail_at *f = arg;
    return ++f->runs == f->fail_on;
}

/* A periodic task that fails is finished; it does not count as dropped. */
static void test_failing_periodic_kills_timer(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct fail_at f = {.fail_on = 2};
    struct fail_at other = {0};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, fail_at_task, &f,
                                            NULL, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 100 * TB_MS, fail_at_task, &other, NULL),
                     TB_OK);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 2);
    assert_int_equal(f.runs, 2);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.pending, 0);
    assert_balanced(s);
    assert_int_equal(tb_advance(s, 500 * TB_MS), 0);
    assert_int_equal(other.runs, 0);
    assert_int_equal(tb_schedule(s, 0, fail_at_task, &other, NULL),
                     TB_ESHUTDOWN);
    tb_destroy(s);
}

static int probe_done(void *ctx)
{
    struct probe *p = ctx;
    return __atomic_load_n(&p->runs, __ATOMIC_ACQUIRE) > 0;
}

/* The failure is counted under the queue lock together with the kill. */
static int timer_killed(void *ctx)
{
    return stats_of(ctx).failed == 1;
}

/* With real threads: the timer thread ends by itself, no shutdown needed. */
static void test_failure_ends_thread(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct recorder r;
    rec_init(&r, s);
    struct probe bad = {.rec = &r, .id = 1, .fail = 1};
    struct probe late = {.rec = &r, .id = 2};
    assert_int_equal(tb_schedule(s, TB_MS, probe_task, &bad, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 60 * TB_SEC, probe_task, &late, NULL),
                     TB_OK);
    assert_int_equal(tb_await_termination(s, 0), TB_ESTATE);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(timer_killed, s, 10 * TB_SEC));
    /* nobody called shutdown: the thread ends on its own */
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_int_equal(rec_runs_of(&r, 1), 1);
    assert_int_equal(rec_runs_of(&r, 2), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &late, NULL),
                     TB_ESHUTDOWN);
    assert_int_equal(tb_start(s), TB_ESTATE); /* started once already */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.dropped, 1);
    assert_balanced(s);
    tb_destroy(s);
    rec_free(&r);
}

/* ---- Lazy cancel and purge --------------------------------------------- */

static void test_lazy_cancel_then_purge(void **state)
{
    (void)state;
    enum { N = 1000 };
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    static struct probe p[N];
    static int64_t deadline[N];
    tb_handle h[N];
    uint64_t rng = 0x7173;
    for (int i = 0; i < N; i++)
        deadline[i] = (int64_t)(i + 1) * TB_MS;
    for (int i = N - 1; i > 0; i--) { /* distinct deadlines, random order */
        int j = (int)rng_range(&rng, 0, i);
        int64_t d = deadline[i];
        deadline[i] = deadline[j];
        deadline[j] = d;
    }
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &r, .id = i};
        assert_int_equal(tb_schedule(s, deadline[i], probe_task, &p[i], &h[i]),
                         TB_OK);
    }
    int k = 0;
    for (int i = 0; i < N; i += 3, k++)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    assert_int_equal(tb_cancel(s, h[0]), 0); /* already cancelled */
    assert_int_equal(tb_pending(s), N);      /* only marked */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.zombies, k);
    assert_int_equal(st.cancelled, k);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);

    assert_int_equal(tb_purge(s), k);
    assert_int_equal(tb_pending(s), N - k);
    st = stats_of(s);
    assert_int_equal(st.purged, k);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_purge(s), 0);
    assert_balanced(s);

    assert_int_equal(tb_advance(s, (N + 1) * TB_MS), N - k);
    assert_int_equal(r.n, (size_t)(N - k));
    for (size_t i = 0; i < r.n; i++) {
        assert_int_not_equal(r.runs[i].id % 3, 0);
        if (i)
            assert_true(deadline[r.runs[i - 1].id] < deadline[r.runs[i].id]);
    }
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* A cancelled task leaves when it reaches the top, without running; the loop
 * drops it there even before its time. */
static void test_cancelled_head_dropped(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe a = {.rec = &r, .id = 0}, b = {.rec = &r, .id = 1},
                 c = {.rec = &r, .id = 2};
    tb_handle ha, hc;
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &b, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 30 * TB_MS, probe_task, &c, &hc), TB_OK);
    assert_int_equal(tb_cancel(s, ha), 1);
    assert_int_equal(tb_cancel(s, hc), 1);
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(stats_of(s).zombies, 2);

    assert_int_equal(tb_advance(s, 5 * TB_MS), 0);
    assert_int_equal(tb_pending(s), 2); /* a went from the top; c stays */
    assert_int_equal(stats_of(s).zombies, 1);
    assert_int_equal(tb_check(s), TB_OK);

    assert_int_equal(tb_advance(s, 20 * TB_MS), 1); /* b, then c on top */
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(stats_of(s).zombies, 0);
    assert_int_equal(a.runs + c.runs, 0);
    assert_int_equal(b.runs, 1);
    assert_int_equal(stats_of(s).purged, 0);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

struct self_purge {
    struct tb_sched *s;
    tb_handle self;
    long purged;
    int check;
    int runs;
    struct probe *next;
};

/* Cancels itself, purges itself out of the queue while running, and
 * schedules a one-shot that may reuse its record. */
static int self_purge_task(void *arg)
{
    struct self_purge *x = arg;
    x->runs++;
    assert_int_equal(tb_cancel(x->s, x->self), 1);
    x->purged = tb_purge(x->s);
    x->check = tb_check(x->s);
    assert_int_equal(tb_schedule(x->s, 5 * TB_MS, probe_task, x->next, NULL),
                     TB_OK);
    return 0;
}

static void test_purge_inside_own_run(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe next = {.rec = &r, .id = 9};
    struct self_purge x = {.s = s, .next = &next};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, self_purge_task, &x,
                                            &x.self, 10 * TB_MS),
                     TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(x.purged, 1);
    assert_int_equal(x.check, TB_OK);
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 14 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 15 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 0);
    assert_int_equal(x.runs, 1);
    assert_int_equal(next.runs, 1);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.purged, 1);
    assert_int_equal(st.pending, 0);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* ---- Reschedule before the run ----------------------------------------- */

struct inside {
    struct tb_sched *s;
    tb_handle self;
    int cancel_on; /* run number that cancels itself */
    int cancel_rc;
    size_t pending;
    int runs;
};

static int inside_task(void *arg)
{
    struct inside *x = arg;
    x->runs++;
    x->pending = tb_pending(x->s);
    if (x->runs == x->cancel_on)
        x->cancel_rc = tb_cancel(x->s, x->self);
    return 0;
}

/* A one-shot leaves the queue before it runs (cancelling it then prevents
 * nothing); a periodic task is already rescheduled and still queued, so a
 * cancel from inside prevents every later run and leaves a zombie, which
 * goes as soon as it is on top — at once if nothing is due before it. */
static void test_reschedule_before_run(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct inside once = {.s = s, .cancel_on = 1, .cancel_rc = -1};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, inside_task, &once,
                                 &once.self), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(once.pending, 0);
    assert_int_equal(once.cancel_rc, 0);
    assert_int_equal(stats_of(s).finished, 1);

    /* per: 20, 30 (cancels itself; next would be 40); b at 35 stays on top */
    struct inside per = {.s = s, .cancel_on = 2, .cancel_rc = -1};
    struct fail_at b = {0};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, inside_task, &per,
                                            &per.self, 10 * TB_MS),
                     TB_OK);
    assert_int_equal(tb_schedule(s, 25 * TB_MS, fail_at_task, &b, NULL), 0);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(per.pending, 2);
    assert_int_equal(tb_advance(s, 30 * TB_MS), 1);
    assert_int_equal(per.cancel_rc, 1);
    assert_int_equal(per.pending, 2);
    assert_int_equal(tb_pending(s), 2); /* b, and per as a zombie */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.zombies, 1);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.running, 0);
    assert_balanced(s);
    assert_int_equal(tb_cancel(s, per.self), 0);
    assert_int_equal(tb_advance(s, 35 * TB_MS), 1); /* b; then per on top */
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(stats_of(s).zombies, 0);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 0);
    assert_int_equal(per.runs, 2);
    assert_int_equal(b.runs, 1);
    assert_balanced(s);

    /* alone in the queue, a self-cancelled task goes right after its run */
    struct inside solo = {.s = s, .cancel_on = 1, .cancel_rc = -1};
    assert_int_equal(tb_schedule_fixed_delay(s, 0, inside_task, &solo,
                                             &solo.self, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 1);
    assert_int_equal(solo.cancel_rc, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* Starts of a fixed-delay task (period 10 ms, each run 6 ms) on `backend`,
 * with the clock stepped by 1 ms to 60 ms. */
static size_t fixed_delay_starts(const char *backend, int64_t *starts,
                                 size_t cap)
{
    const struct tb_backend *b = tb_backend_find(backend);
    assert_non_null(b);
    struct tb_sched *s = make_sched(b, NULL);
    struct recorder r;
    rec_init(&r, s);
    struct probe p = {.rec = &r, .id = 0, .spend = 6 * TB_MS};
    assert_int_equal(tb_schedule_fixed_delay(s, 10 * TB_MS, probe_task, &p,
                                             NULL, 10 * TB_MS), TB_OK);
    for (int64_t t = 0; t <= 60 * TB_MS; t += TB_MS)
        if (t >= tb_now(s))
            assert_true(tb_advance(s, t) >= 0);
    size_t n = starts_of(&r, 0, starts, cap);
    rec_free(&r);
    tb_destroy(s);
    return n;
}

/* Timer measures fixed delay from start to start (the next time is set when
 * the task is taken, before it runs); STPE from end to start. */
static void test_fixed_delay_start_to_start(void **state)
{
    (void)state;
    int64_t got[16];
    const int64_t timer[] = {10, 20, 30, 40, 50, 60};
    size_t n = fixed_delay_starts("timerthread", got, 16);
    assert_int_equal(n, 6);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], timer[i] * TB_MS);

    const int64_t stpe[] = {10, 26, 42, 58};
    n = fixed_delay_starts("heapqueue", got, 16);
    assert_int_equal(n, 4);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(got[i], stpe[i] * TB_MS);
}

/* A stall makes a fixed-rate task catch up back to back, never overlapping,
 * then return to its grid; fixed delay skips instead. */
static void test_fixed_rate_catch_up(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe rate = {.rec = &r, .id = 0, .spend = 2 * TB_MS};
    struct probe stall = {.rec = &r, .id = 1, .spend = 40 * TB_MS};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, &rate,
                                            NULL, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 15 * TB_MS, probe_task, &stall, NULL),
                     TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 15 * TB_MS), 1); /* stalls to 55 ms */
    assert_int_equal(tb_now(s), 55 * TB_MS);
    assert_int_equal(tb_advance(s, 55 * TB_MS), 4); /* 20, 30, 40, 50 */
    assert_int_equal(tb_advance(s, tb_now(s)), 1);  /* 60, at 63 */
    assert_int_equal(tb_advance(s, 69 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 70 * TB_MS), 1); /* back on the grid */
    int64_t got[16];
    const int64_t want[] = {10, 55, 57, 59, 61, 63, 70};
    size_t n = starts_of(&r, 0, got, 16);
    assert_int_equal(n, 7);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(got[i], want[i] * TB_MS);
        if (i) /* each run starts after the previous one ended */
            assert_true(got[i] >= got[i - 1] + rate.spend);
    }
    assert_int_equal(stall.runs, 1);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

static void test_late_rate_vs_delay(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe rate = {.rec = &r, .id = 0}, delay = {.rec = &r, .id = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, &rate,
                                            NULL, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule_fixed_delay(s, 10 * TB_MS, probe_task, &delay,
                                             NULL, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_advance(s, 25 * TB_MS), 3); /* rate 10, 20; delay 10 */
    assert_int_equal(rate.runs, 2);
    assert_int_equal(delay.runs, 1);
    assert_int_equal(tb_advance(s, 29 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 30 * TB_MS), 1); /* rate: 20 + 10 */
    assert_int_equal(tb_advance(s, 34 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 35 * TB_MS), 1); /* delay: taken 25 + 10 */
    assert_int_equal(delay.runs, 2);
    rec_free(&r);
    tb_destroy(s);
}

/* ---- Timer.cancel() ---------------------------------------------------- */

struct stopper {
    struct tb_sched *s;
    long result;
    int visited;
    tb_handle seen[8];
    int runs;
    int stop_on;
};

/* ---- The wall clock (System.currentTimeMillis) ------------------------- */

/* Advances a scheduler millisecond by millisecond up to `end`. */
static void ms_to(struct tb_sched *s, int64_t end)
{
    for (int64_t t = tb_now(s) + TB_MS; t <= end; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
}

/* Timer (timerthread, virtual time) beside the JDK's pool (heapqueue),
 * each with three tasks due at 10, 20 and 30 ms, for the wall-clock step
 * cases. */
struct side_by_side {
    struct tb_sched *t, *p;
    struct recorder rt, rp;
    struct probe pt[3], pp[3];
};

/* Builds `sb`, runs both millisecond by millisecond to `at`, steps both
 * wall clocks by `d`, runs both to 60 ms, and checks that every task ran
 * and the pool's on time (the pool reads nanoTime, which no step moves).
 * Timer's times are the caller's to check; side_by_side_free ends it. */
static void side_by_side_step(struct side_by_side *sb, int64_t at, int64_t d)
{
    sb->t = vsched();
    sb->p = make_sched(tb_backend_find("heapqueue"), NULL);
    rec_init(&sb->rt, sb->t);
    rec_init(&sb->rp, sb->p);
    for (int i = 0; i < 3; i++) {
        sb->pt[i] = (struct probe){.rec = &sb->rt, .id = i};
        sb->pp[i] = (struct probe){.rec = &sb->rp, .id = i};
        assert_int_equal(tb_schedule(sb->t, (i + 1) * 10 * TB_MS, probe_task,
                                     &sb->pt[i], NULL), TB_OK);
        assert_int_equal(tb_schedule(sb->p, (i + 1) * 10 * TB_MS, probe_task,
                                     &sb->pp[i], NULL), TB_OK);
    }
    ms_to(sb->t, at);
    ms_to(sb->p, at);
    assert_int_equal(tb_wall_step(sb->t, d), TB_OK);
    assert_int_equal(tb_wall_step(sb->p, d), TB_OK);
    ms_to(sb->t, 60 * TB_MS);
    ms_to(sb->p, 60 * TB_MS);
    assert_int_equal(sb->rt.n, 3);
    assert_int_equal(sb->rp.n, 3);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sb->rp.runs[i].at, (int64_t)(i + 1) * 10 * TB_MS);
}

/* Frees what side_by_side_step made. */
static void side_by_side_free(struct side_by_side *sb)
{
    rec_free(&sb->rt);
    rec_free(&sb->rp);
    tb_destroy(sb->t);
    tb_destroy(sb->p);
}

static void test_wall_clock_api(void **state)
{
    (void)state;
    assert_true(unit_backend()->caps & TB_CAP_WALL_CLOCK);
    const struct tb_backend *hq = tb_backend_find("heapqueue");
    assert_non_null(hq);
    assert_false(hq->caps & TB_CAP_WALL_CLOCK);
    struct tb_sched *s = vsched();
    assert_int_equal(tb_wall_now(s), 0);
    assert_int_equal(tb_advance(s, 7 * TB_MS), 0);
    assert_int_equal(tb_wall_now(s), 7 * TB_MS);
    assert_int_equal(tb_wall_step(s, -10 * TB_MS), TB_OK);
    assert_int_equal(tb_wall_now(s), -3 * TB_MS);
    assert_int_equal(tb_now(s), 7 * TB_MS); /* the virtual time stays */
    assert_int_equal(tb_wall_step(s, TB_MAX_DELAY + 11 * TB_MS), TB_EINVAL);
    assert_int_equal(tb_wall_step(s, INT64_MIN), TB_EINVAL);
    assert_int_equal(tb_wall_now(s), -3 * TB_MS);
    assert_int_equal(tb_wall_step(NULL, 1), TB_EINVAL);
    assert_int_equal(tb_wall_now(NULL), 0);
    tb_destroy(s);
    /* monotonic mode: CLOCK_REALTIME, and the machine's clock is never set */
    s = msched();
    int64_t before = tb_realtime_ns();
    int64_t wall = tb_wall_now(s);
    assert_true(wall >= before && wall <= tb_realtime_ns());
    assert_int_equal(tb_wall_step(s, TB_MS), TB_ESTATE);
    tb_destroy(s);
}

/* Timer's deadlines are System.currentTimeMillis() + delay and its thread
 * compares them with currentTimeMillis(), while the JDK's pool reads
 * nanoTime: a step back by d delays every pending Timer task by d and no
 * pool task. */
static void test_wall_step_back_delays_timer_not_pool(void **state)
{
    (void)state;
    const int64_t d = 5 * TB_MS;
    struct side_by_side sb;
    side_by_side_step(&sb, 2 * TB_MS, -d);
    for (size_t i = 0; i < 3; i++)
        assert_int_equal(sb.rt.runs[i].at, (int64_t)(i + 1) * 10 * TB_MS + d);
    assert_balanced(sb.t);
    side_by_side_free(&sb);
}

/* A step forward: the thread is in queue.wait(executionTime - currentTime)
 * for the head, a relative wait the step does not shorten, so the head runs
 * on time; the tasks behind it are compared with the stepped clock when it
 * looks again, and run early by the step (or at once, when the step passed
 * them).  A schedule that makes a new head notifies the thread, which then
 * sees the stepped clock at once.  The pool beside it does not move. */
static void test_wall_step_forward_runs_early(void **state)
{
    (void)state;
    const int64_t d = 15 * TB_MS;
    struct side_by_side sb;
    side_by_side_step(&sb, 5 * TB_MS, d); /* wall 20 ms at 5 ms */
    /* 10: the awaited head on time; 20 (wall 25 at 10 ms): at once with
     * it, 10 ms early; 30: 15 ms early, at 15 ms */
    assert_int_equal(sb.rt.runs[0].id, 0);
    assert_int_equal(sb.rt.runs[0].at, 10 * TB_MS);
    assert_int_equal(sb.rt.runs[1].id, 1);
    assert_int_equal(sb.rt.runs[1].at, 10 * TB_MS);
    assert_int_equal(sb.rt.runs[2].id, 2);
    assert_int_equal(sb.rt.runs[2].at, 15 * TB_MS);
    side_by_side_free(&sb);

    /* the same step, then a schedule 1 ms away: its wall deadline (22 ms)
     * lies after the awaited head's (10 ms), so it is no new head and
     * notifies nothing; it waits with the head and runs at 10 ms, 3 ms
     * late, where the step alone would have run it early */
    struct tb_sched *t = vsched();
    struct recorder rt;
    rec_init(&rt, t);
    struct probe a = {.rec = &rt, .id = 0}, b = {.rec = &rt, .id = 1};
    assert_int_equal(tb_schedule(t, 10 * TB_MS, probe_task, &a, NULL), TB_OK);
    ms_to(t, 5 * TB_MS);
    assert_int_equal(tb_wall_step(t, d), TB_OK);
    assert_int_equal(tb_advance(t, 6 * TB_MS), 0);
    assert_int_equal(tb_schedule(t, TB_MS, probe_task, &b, NULL), TB_OK);
    ms_to(t, 9 * TB_MS);
    assert_int_equal(rt.n, 0); /* still in queue.wait() */
    ms_to(t, 10 * TB_MS);
    assert_int_equal(rt.n, 2);
    assert_int_equal(rt.runs[0].id, 0);
    assert_int_equal(rt.runs[1].id, 1);
    assert_int_equal(rt.runs[1].at, 10 * TB_MS);
    rec_free(&rt);
    tb_destroy(t);

    /* a new head does notify: after a step back by 15 ms the thread waits
     * 15 ms more for `a`; a task scheduled 1 ms away is due before it on
     * the wall clock, so the thread looks at once, runs it on time and
     * then waits for `a` again */
    t = vsched();
    rec_init(&rt, t);
    a = (struct probe){.rec = &rt, .id = 0};
    b = (struct probe){.rec = &rt, .id = 1};
    assert_int_equal(tb_schedule(t, 10 * TB_MS, probe_task, &a, NULL), TB_OK);
    ms_to(t, 5 * TB_MS);
    assert_int_equal(tb_wall_step(t, -d), TB_OK); /* wall -10 ms */
    ms_to(t, 12 * TB_MS); /* at 10 it looked: wall -5, waits until 25 */
    assert_int_equal(rt.n, 0);
    assert_int_equal(tb_schedule(t, TB_MS, probe_task, &b, NULL), TB_OK);
    ms_to(t, 13 * TB_MS);
    assert_int_equal(rt.n, 1);
    assert_int_equal(rt.runs[0].id, 1);
    assert_int_equal(rt.runs[0].at, 13 * TB_MS);
    ms_to(t, 30 * TB_MS);
    assert_int_equal(rt.n, 2);
    assert_int_equal(rt.runs[1].at, 25 * TB_MS); /* 10 + the step */
    rec_free(&rt);
    tb_destroy(t);
}

/* Periodic tasks after a step, as TimerThread.mainLoop computes their next
 * time: fixed rate executionTime + period, fixed delay currentTime +
 * period (both on the wall clock).  A step forward by 30 ms makes fixed
 * rate run the periods it "missed" back to back (4 runs at once) and fixed
 * delay run once; a step back by 30 ms delays the next run of both by 30
 * ms, after which both keep their period.  Every time below was worked out
 * by hand from mainLoop. */
static void test_wall_step_periodic(void **state)
{
    (void)state;
    static const int64_t rate_ms[] = {10, 20, 30, 30, 30, 30, 40, 80, 90, 100};
    static const int64_t delay_ms[] = {10, 20, 30, 40, 80, 90, 100};
    for (int fixed_rate = 0; fixed_rate <= 1; fixed_rate++) {
        struct tb_sched *t = vsched();
        struct recorder r;
        rec_init(&r, t);
        struct probe pr = {.rec = &r, .id = 0};
        int rc = fixed_rate ? tb_schedule_fixed_rate(t, 10 * TB_MS, probe_task, &pr, NULL, 10 * TB_MS)
                            : tb_schedule_fixed_delay(t, 10 * TB_MS, probe_task, &pr, NULL, 10 * TB_MS);
        assert_int_equal(rc, TB_OK);
        ms_to(t, 25 * TB_MS);
        assert_int_equal(tb_wall_step(t, 30 * TB_MS), TB_OK); /* wall 55 */
        ms_to(t, 45 * TB_MS);
        assert_int_equal(tb_wall_step(t, -30 * TB_MS), TB_OK); /* wall 45 */
        ms_to(t, 100 * TB_MS);
        const int64_t *want = fixed_rate ? rate_ms : delay_ms;
        size_t n = fixed_rate ? sizeof rate_ms / sizeof rate_ms[0]
                              : sizeof delay_ms / sizeof delay_ms[0];
        assert_int_equal(r.n, n);
        for (size_t i = 0; i < n; i++)
            assert_int_equal(r.runs[i].at, want[i] * TB_MS);
        assert_int_equal(tb_check(t), TB_OK);
        rec_free(&r);
        tb_destroy(t);
    }
}

/* TB_F_MONOTONIC_DEADLINES: the clock the suite measures with; a step of
 * the wall clock changes nothing. */
static void test_monotonic_deadlines_flag(void **state)
{
    (void)state;
    struct tb_config c = {.flags = TB_F_MONOTONIC_DEADLINES};
    struct tb_sched *t = make_sched(unit_backend(), &c);
    struct recorder r;
    rec_init(&r, t);
    struct probe a = {.rec = &r, .id = 0}, b = {.rec = &r, .id = 1};
    assert_int_equal(tb_schedule(t, 10 * TB_MS, probe_task, &a, NULL), TB_OK);
    assert_int_equal(tb_schedule(t, 20 * TB_MS, probe_task, &b, NULL), TB_OK);
    ms_to(t, 5 * TB_MS);
    assert_int_equal(tb_wall_step(t, -5 * TB_MS), TB_OK);
    ms_to(t, 15 * TB_MS);
    assert_int_equal(tb_wall_step(t, 50 * TB_MS), TB_OK);
    ms_to(t, 40 * TB_MS);
    assert_int_equal(r.n, 2);
    assert_int_equal(r.runs[0].at, 10 * TB_MS);
    assert_int_equal(r.runs[1].at, 20 * TB_MS);
    rec_free(&r);
    tb_destroy(t);
}

static void count_unrun(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    (void)fn;
    (void)arg;
    struct stopper *x = ctx;
    if (x->visited < 8)
        x->seen[x->visited] = h;
    x->visited++;
}

static int stopper_task(void *arg)
{
    struct stopper *x = arg;
    if (++x->runs == x->stop_on)
        x->result = tb_shutdown_now(x->s, count_unrun, x);
    return 0;
}

static void test_shutdown_now_inside_task(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct stopper x = {.s = s, .result = -100, .stop_on = 1};
    struct probe b = {.rec = &r, .id = 1}, per = {.rec = &r, .id = 2};
    struct probe z = {.rec = &r, .id = 3};
    tb_handle hb, hper, hz;
    assert_int_equal(tb_schedule(s, 10 * TB_MS, stopper_task, &x, NULL), 0);
    assert_int_equal(tb_schedule(s, 11 * TB_MS, probe_task, &b, &hb), 0);
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, probe_task, &per,
                                            &hper, 10 * TB_MS), 0);
    assert_int_equal(tb_schedule(s, 12 * TB_MS, probe_task, &z, &hz), 0);
    assert_int_equal(tb_cancel(s, hz), 1);

    assert_int_equal(tb_advance(s, 100 * TB_MS), 2); /* per@5, x@10: last */
    assert_int_equal(x.result, 2);                   /* b and per */
    assert_int_equal(x.visited, 2);
    assert_true((x.seen[0] == hb && x.seen[1] == hper) ||
                (x.seen[0] == hper && x.seen[1] == hb));
    assert_int_equal(b.runs, 0);
    assert_int_equal(per.runs, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &b, NULL), TB_ESHUTDOWN);
    assert_int_equal(tb_shutdown_now(s, count_unrun, &x), 0);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_advance(s, 200 * TB_MS), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.cancelled, 1);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* From a periodic task: that run is the last; the task itself is running, so
 * it is stopped (cancelled), not returned as never run. */
static void test_shutdown_now_inside_periodic(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct stopper x = {.s = s, .result = -100, .stop_on = 2};
    struct fail_at other = {0};
    tb_handle hx;
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, stopper_task, &x,
                                            &hx, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 100 * TB_MS, fail_at_task, &other, NULL),
                     TB_OK);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 2);
    assert_int_equal(x.runs, 2);
    assert_int_equal(x.result, 1);
    assert_int_equal(x.visited, 1);
    assert_int_equal(tb_cancel(s, hx), 0);
    assert_int_equal(tb_advance(s, 500 * TB_MS), 0);
    assert_int_equal(x.runs, 2);
    assert_int_equal(other.runs, 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.dropped, 1);
    assert_balanced(s);
    tb_destroy(s);
}

/* The drops are counted under the queue lock by the shutdown itself. */
static int two_dropped(void *ctx)
{
    return stats_of(ctx).dropped == 2;
}

static void test_shutdown_now_inside_task_threaded(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct recorder r;
    rec_init(&r, s);
    struct stopper x = {.s = s, .result = -100, .stop_on = 1};
    struct probe late = {.rec = &r, .id = 1}, per = {.rec = &r, .id = 2};
    assert_int_equal(tb_schedule(s, TB_MS, stopper_task, &x, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 60 * TB_SEC, probe_task, &late, NULL), 0);
    assert_int_equal(tb_schedule_fixed_rate(s, 30 * TB_SEC, probe_task, &per,
                                            NULL, TB_MS), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_int_equal(tb_start(s), TB_ESTATE);
    assert_true(wait_until(two_dropped, s, 10 * TB_SEC));
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_int_equal(x.runs, 1);
    assert_int_equal(x.result, 2);
    assert_int_equal(rec_count(&r), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &late, NULL),
                     TB_ESHUTDOWN);
    assert_balanced(s);
    tb_destroy(s);
    rec_free(&r);
}

/* tb_shutdown() is Timer.cancel(): the queue is discarded at once. */
static void test_shutdown_discards(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h;
    for (int i = 1; i <= 3; i++)
        assert_int_equal(tb_schedule(s, i * TB_MS, noop_task, NULL, NULL), 0);
    assert_int_equal(tb_schedule_fixed_delay(s, TB_MS, noop_task, NULL, &h,
                                             TB_MS), TB_OK);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_int_equal(tb_await_termination(s, 0), TB_ESTATE);
    assert_int_equal(tb_shutdown(s), 3);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_schedule(s, 0, noop_task, NULL, NULL), TB_ESHUTDOWN);
    assert_int_equal(tb_advance(s, TB_SEC), 0);
    assert_int_equal(tb_await_termination(s, 0), TB_OK);
    assert_int_equal(stats_of(s).dropped, 3);
    assert_balanced(s);
    tb_destroy(s);
}

/* After Timer.cancel() (or a failure that killed the timer) the JDK leaves
 * every task SCHEDULED, so TimerTask.cancel() still answers true.  Ours
 * answers 0 (README): tb_cancel says whether the call prevented a run, and
 * after the stop nothing can run; the tasks were already counted as dropped
 * and their records freed, so counting them cancelled too would count them
 * twice. */
static void test_cancel_after_stop(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle once, per, gone;
    assert_int_equal(tb_schedule(s, 10 * TB_MS, noop_task, NULL, &once), 0);
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, noop_task, NULL, &per,
                                            10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, noop_task, NULL, &gone), 0);
    assert_int_equal(tb_cancel(s, gone), 1); /* a zombie when it stops */
    assert_int_equal(tb_shutdown(s), 2);
    assert_int_equal(tb_cancel(s, once), 0);
    assert_int_equal(tb_cancel(s, per), 0);
    assert_int_equal(tb_cancel(s, gone), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.dropped, 2);
    assert_balanced(s);
    tb_destroy(s);

    /* the same after a failing task killed the timer */
    s = vsched();
    struct fail_at bad = {.fail_on = 1};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, fail_at_task, &bad, NULL), 0);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, noop_task, NULL, &once), 0);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(tb_cancel(s, once), 0);
    st = stats_of(s);
    assert_int_equal(st.cancelled, 0);
    assert_int_equal(st.lost, 1);
    assert_balanced(s);
    tb_destroy(s);
}

/* A periodic task whose run schedules one task (records the answer). */
struct sched_inside {
    struct tb_sched *s;
    int runs;
    int rc; /* what the schedule from inside the first run answered */
};

static int sched_inside_task(void *arg)
{
    struct sched_inside *x = arg;
    if (++x->runs == 1)
        x->rc = tb_schedule(x->s, 500 * TB_US, noop_task, NULL, NULL);
    return 0;
}

/* DECISIONS.md D1: pending never exceeds max_pending.  Timer reschedules a
 * periodic task before its run and keeps it queued meanwhile, so it counts
 * as pending: with max_pending = 1 a schedule from inside its run gets
 * TB_EFULL and the task itself goes on (its re-arm takes no new place). */
static void test_max_pending_counts_running_periodic(void **state)
{
    (void)state;
    for (size_t cap = 1; cap <= 2; cap++) {
        struct tb_config c = {.max_pending = cap};
        struct tb_sched *s = make_sched(unit_backend(), &c);
        struct sched_inside x = {.s = s, .rc = -100};
        assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, sched_inside_task, &x,
                                                NULL, TB_MS),
                         TB_OK);
        long ran = 0;
        for (int64_t t = TB_MS; t <= 5 * TB_MS; t += TB_MS) {
            long n = tb_advance(s, t);
            assert_true(n >= 1);
            ran += n;
            assert_true(tb_pending(s) <= cap);
        }
        assert_int_equal(x.runs, 5);
        assert_int_equal(ran, cap == 1 ? 5 : 6); /* + the inner one-shot */
        assert_int_equal(x.rc, cap == 1 ? TB_EFULL : TB_OK);
        struct tb_stats st = stats_of(s);
        assert_int_equal(st.peak_pending, cap);
        assert_int_equal(st.rejected, cap == 1 ? 1 : 0);
        assert_int_equal(tb_pending(s), 1);
        assert_balanced(s);
        tb_destroy(s);
    }
}

/* ---- The one timer thread ---------------------------------------------- */

struct on_thread {
    pthread_mutex_t lock;
    pthread_t tid[64];
    int n;
    struct tb_sched *s;
    size_t pending_inside; /* what the first run saw */
    int nested_rc;         /* its schedule from inside */
};

static int on_thread_task(void *arg)
{
    struct on_thread *o = arg;
    pthread_mutex_lock(&o->lock);
    if (o->n < 64)
        o->tid[o->n] = pthread_self();
    o->n++;
    bool first = o->n == 1;
    pthread_mutex_unlock(&o->lock);
    /* the queue lock is not held while a task runs, or these would hang;
     * the results are checked on the test's thread */
    if (first) {
        o->pending_inside = tb_pending(o->s);
        o->nested_rc = tb_schedule(o->s, 0, on_thread_task, o, NULL);
    }
    return 0;
}

static int on_thread_enough(void *ctx)
{
    struct on_thread *o = ctx;
    pthread_mutex_lock(&o->lock);
    int n = o->n;
    pthread_mutex_unlock(&o->lock);
    return n >= 12;
}

static void test_one_timer_thread(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct on_thread o = {.s = s, .nested_rc = -100};
    pthread_mutex_init(&o.lock, NULL);
    tb_handle hp;
    for (int i = 1; i <= 5; i++)
        assert_int_equal(tb_schedule(s, i * TB_MS, on_thread_task, &o, NULL),
                         TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 2 * TB_MS, on_thread_task, &o,
                                            &hp, 2 * TB_MS), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(on_thread_enough, &o, 10 * TB_SEC));
    assert_int_equal(tb_cancel(s, hp), 1);
    assert_int_equal(tb_cancel(s, hp), 0);
    assert_true(tb_shutdown(s) >= 0);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);

    pthread_mutex_lock(&o.lock);
    int n = o.n < 64 ? o.n : 64;
    for (int i = 0; i < n; i++) {
        assert_true(pthread_equal(o.tid[i], o.tid[0]));
        assert_false(pthread_equal(o.tid[i], pthread_self()));
    }
    pthread_mutex_unlock(&o.lock);
    assert_true(o.pending_inside >= 4); /* 4 one-shots + the periodic */
    assert_int_equal(o.nested_rc, TB_OK);
    struct tb_stats st = stats_of(s);
    assert_true(st.timed_waits > 0);
    assert_true(st.wakeups > 0);
    assert_int_equal(st.running, 0);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
    pthread_mutex_destroy(&o.lock);
}

/* A thread that was never started: shutdown needs no thread to end. */
static void test_never_started(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct probe p = {0};
    assert_int_equal(tb_schedule(s, TB_MS, probe_task, &p, NULL), TB_OK);
    assert_int_equal(tb_advance(s, TB_MS), TB_ESTATE);
    assert_int_equal(tb_shutdown(s), 1);
    assert_int_equal(tb_await_termination(s, TB_SEC), TB_OK);
    assert_int_equal(tb_start(s), TB_ESHUTDOWN);
    assert_false(probe_done(&p));
    tb_destroy(s);
}

/* ---- 10^5 random operations, then the invariant checker ---------------- */

enum { RND_OPS = 100000, RND_TASKS = 2 * RND_OPS };

struct rnd;

struct rnd_task {
    struct rnd *ctx;
    int64_t first;   /* first deadline */
    int64_t period;  /* as tb_task.period */
    int runs;
    bool cancelled;  /* a cancel answered 1 */
    tb_handle h;
};

struct rnd {
    struct tb_sched *s;
    struct rnd_task *t;
    size_t n;
    uint64_t rng;
    int live_periodic;
};

static int rnd_run(void *arg);

static void rnd_add(struct rnd *x, int64_t delay, int64_t period)
{
    if (x->n == RND_TASKS)
        return;
    struct rnd_task *t = &x->t[x->n];
    *t = (struct rnd_task){.ctx = x, .period = period,
                           .first = tb_now(x->s) + delay};
    int rc = period > 0   ? tb_schedule_fixed_rate(x->s, delay, rnd_run, t,
                                                   &t->h, period)
             : period < 0 ? tb_schedule_fixed_delay(x->s, delay, rnd_run, t,
                                                    &t->h, -period)
                          : tb_schedule(x->s, delay, rnd_run, t, &t->h);
    assert_int_equal(rc, TB_OK);
    x->n++;
    x->live_periodic += period != 0;
}

static int rnd_run(void *arg)
{
    struct rnd_task *t = arg;
    struct rnd *x = t->ctx;
    int64_t now = tb_now(x->s);
    assert_false(t->cancelled);
    assert_true(now >= t->first); /* never early */
    if (t->period > 0) /* fixed rate: the k-th run is due at first + k p */
        assert_true(now >= t->first + (int64_t)t->runs * t->period);
    t->runs++;
    if (!t->period)
        assert_int_equal(t->runs, 1);
    if (rng_next(&x->rng) % 8 == 0)
        rnd_add(x, rng_range(&x->rng, 0, 300), 0);
    return 0;
}

static void test_random_ops_then_check(void **state)
{
    (void)state;
    struct rnd x = {.s = vsched(), .rng = 0x5eed};
    x.t = calloc(RND_TASKS, sizeof *x.t);
    assert_non_null(x.t);
    for (int op = 0; op < RND_OPS; op++) {
        uint64_t r = rng_next(&x.rng) % 100;
        if (r < 40 || (r < 45 && x.live_periodic >= 40)) {
            rnd_add(&x, rng_range(&x.rng, 0, 2 * TB_MS), 0);
        } else if (r < 45) {
            int64_t period = rng_range(&x.rng, TB_US, 50 * TB_US);
            rnd_add(&x, rng_range(&x.rng, 0, TB_MS),
                    rng_next(&x.rng) & 1 ? period : -period);
        } else if (r < 75) {
            if (!x.n)
                continue;
            /* mostly recent tasks, which are more likely still queued */
            size_t back = x.n;
            if (rng_next(&x.rng) & 1 && back > 2048)
                back = 2048;
            struct rnd_task *t = &x.t[x.n - 1 - rng_next(&x.rng) % back];
            bool could = !t->cancelled && (t->period || t->runs == 0);
            int rc = tb_cancel(x.s, t->h);
            assert_int_equal(rc, could ? 1 : 0);
            if (rc == 1) {
                t->cancelled = true;
                x.live_periodic -= t->period != 0;
            }
        } else if (r < 97) {
            int64_t step = rng_range(&x.rng, 0, 2 * TB_US);
            assert_true(tb_advance(x.s, tb_now(x.s) + step) >= 0);
        } else if (r < 99) {
            uint64_t zombies = stats_of(x.s).zombies;
            assert_int_equal(tb_purge(x.s), (long)zombies);
        } else {
            assert_int_equal(tb_check(x.s), TB_OK);
        }
        if (op % 1000 == 999) {
            assert_int_equal(tb_check(x.s), TB_OK);
            assert_balanced(x.s);
        }
    }
    assert_int_equal(tb_check(x.s), TB_OK);
    assert_balanced(x.s);

    /* stop the periodic tasks; every one-shot left must then run once */
    for (size_t i = 0; i < x.n; i++)
        if (x.t[i].period && !x.t[i].cancelled) {
            assert_int_equal(tb_cancel(x.s, x.t[i].h), 1);
            x.t[i].cancelled = true;
        }
    assert_true(tb_advance(x.s, tb_now(x.s) + 10 * TB_SEC) >= 0);
    /* runs may have scheduled one-shots just past the clock, which may
     * schedule more: a chain that ends with probability 1 */
    for (int i = 0; i < 1000 && tb_pending(x.s); i++)
        assert_true(tb_advance(x.s, tb_now(x.s) + TB_US) >= 0);
    assert_int_equal(tb_pending(x.s), 0);
    for (size_t i = 0; i < x.n; i++)
        if (!x.t[i].period)
            assert_int_equal(x.t[i].runs, x.t[i].cancelled ? 0 : 1);
    assert_int_equal(tb_check(x.s), TB_OK);
    assert_balanced(x.s);
    struct tb_stats st = stats_of(x.s);
    assert_int_equal(st.submitted, x.n);
    assert_int_equal(st.dropped, 0);
    tb_destroy(x.s);
    free(x.t);
}

/* D2's sift_levels, counted by hand on the 1-based heap (children of k are
 * 2k and 2k + 1).  Each new task is the earliest, so it climbs to the root:
 * 50 -> 0, 40 -> 1, 30 -> 1, 20 -> 2, 10 -> 2 levels, heap [10 20 40 50 30].
 * Running 10 moves 30 to the root and down past 20: 1.  Cancelling 20 (now
 * the root) costs nothing until the loop drops it, which moves 50 to the
 * root and down past 30: 1.  A periodic task at the root rescheduled past
 * both others goes down one level. */
static void test_sift_levels_counted(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, (50 - 10 * i) * TB_MS, noop_task,
                                     NULL, &h[i]), TB_OK);
    assert_int_equal(stats_of(s).sift_levels, 6);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(stats_of(s).sift_levels, 7);
    assert_int_equal(tb_cancel(s, h[3]), 1); /* 20, the root */
    assert_int_equal(stats_of(s).sift_levels, 7);
    assert_int_equal(tb_advance(s, 25 * TB_MS), 0);
    assert_int_equal(stats_of(s).sift_levels, 8);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);

    /* [5 (every 100) 30 40]: the run re-arms it at 105, below both: 1. */
    s = vsched();
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, noop_task, NULL, NULL,
                                            100 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 30 * TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 40 * TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).sift_levels, 0);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 1);
    assert_int_equal(stats_of(s).sift_levels, 1);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* tb_reserve(n) makes room for n more tasks (size + n + 1 slots: slot 0 is
 * unused and TaskQueue doubles when an add would fill the array), so they
 * schedule with every allocation refused; the next one doubles the array
 * again (1001 -> 2002 slots). */
static void test_reserve_heap(void **state)
{
    (void)state;
    check_heap_reserve(1001 - 128, 1001);
}

int main(void)
{
    unit_init("timerthread");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_equal_deadlines_not_fifo),
        cmocka_unit_test(test_heap_starts_at_128_and_doubles),
        cmocka_unit_test(test_sift_levels_counted),
        cmocka_unit_test(test_reserve_heap),
        cmocka_unit_test(test_growth_failure_keeps_queue),
        cmocka_unit_test(test_failure_kills_timer),
        cmocka_unit_test(test_failing_periodic_kills_timer),
        cmocka_unit_test(test_failure_ends_thread),
        cmocka_unit_test(test_lazy_cancel_then_purge),
        cmocka_unit_test(test_cancelled_head_dropped),
        cmocka_unit_test(test_purge_inside_own_run),
        cmocka_unit_test(test_reschedule_before_run),
        cmocka_unit_test(test_fixed_delay_start_to_start),
        cmocka_unit_test(test_fixed_rate_catch_up),
        cmocka_unit_test(test_wall_clock_api),
        cmocka_unit_test(test_wall_step_back_delays_timer_not_pool),
        cmocka_unit_test(test_wall_step_forward_runs_early),
        cmocka_unit_test(test_wall_step_periodic),
        cmocka_unit_test(test_monotonic_deadlines_flag),
        cmocka_unit_test(test_late_rate_vs_delay),
        cmocka_unit_test(test_shutdown_now_inside_task),
        cmocka_unit_test(test_shutdown_now_inside_periodic),
        cmocka_unit_test(test_shutdown_now_inside_task_threaded),
        cmocka_unit_test(test_shutdown_discards),
        cmocka_unit_test(test_cancel_after_stop),
        cmocka_unit_test(test_max_pending_counts_running_periodic),
        cmocka_unit_test(test_one_timer_thread),
        cmocka_unit_test(test_never_started),
        cmocka_unit_test(test_random_ops_then_check),
    };
    return cmocka_run_group_tests_name("timerthread", tests, NULL, NULL);
}
