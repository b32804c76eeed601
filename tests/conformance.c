/*
 * conformance.c — the contract of include/timerbench/scheduler.h, written
 * once and run for every registered backend (or the one named in argv[1]).
 * A new backend joins by registering; nothing here names a backend.
 *
 * Every scheduler here runs at a 1 ms tick where the backend has one, so the
 * virtual-clock expectations are exact: a task with deadline d runs in the
 * advance that reaches roundup(d, tick), never before d.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testlib.h"

static const struct tb_backend *backend;

static const int64_t TICK = TB_MS;

static struct tb_config base_config(void)
{
    return (struct tb_config){.tick_ns = TICK};
}

/* The time by which a task with deadline d must have run. */
static int64_t due_by(int64_t d)
{
    if (!(backend->caps & TB_CAP_TICKED))
        return d;
    return (d + TICK - 1) / TICK * TICK;
}

/* The same for a task scheduled at 0 with any delay: a granular wheel may
 * add its level's granularity, under 8/63 of the delay. */
static int64_t latest_by(int64_t d)
{
    if (backend->caps & TB_CAP_GRANULAR)
        d += d / 63 * 8 + 8;
    return due_by(d);
}

static struct tb_sched *make(void)
{
    struct tb_config c = base_config();
    return make_sched(backend, &c);
}

/* ---- Never early, exactly once ---------------------------------------- */

static void test_never_early_exactly_once(void **state)
{
    (void)state;
    enum { N = 2000 };
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    static struct probe p[N];
    int64_t deadline[N];
    uint64_t rng = 42;
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        int64_t delay = rng_range(&rng, 0, 3 * TB_SEC);
        if (i % 7 == 0)
            delay = delay / TB_MS * TB_MS; /* some land on tick boundaries */
        deadline[i] = delay;
        assert_int_equal(tb_schedule(s, delay, probe_task, &p[i], NULL),
                         TB_OK);
    }
    int64_t now = 0;
    while (now < 4 * TB_SEC) {
        now += rng_range(&rng, 1, 20 * TB_MS);
        size_t before = rec.n;
        long ran = tb_advance(s, now);
        assert_true(ran >= 0);
        assert_int_equal((size_t)ran, rec.n - before);
        for (size_t k = before; k < rec.n; k++) {
            int id = rec.runs[k].id;
            assert_true(rec.runs[k].at >= deadline[id]); /* never early */
        }
        for (int i = 0; i < N; i++) /* everything due has run, once */
            if (latest_by(deadline[i]) <= now)
                assert_int_equal(p[i].runs, 1);
            else
                assert_true(p[i].runs <= 1);
    }
    finish_ran_once(s, &rec, p, N);
}

/* ---- A lateness budget (tb_schedule_range) ---------------------------- */

/* Never early, with any slack, on every backend; and on a backend that
 * honours a budget (TB_CAP_RANGE) run by the hard expiry on the virtual
 * clock: an advance to soft + slack runs it.  A backend without the cap
 * ignores the slack: it runs the task as tb_schedule would (latest_by). */
static void test_schedule_range_never_early(void **state)
{
    (void)state;
    enum { N = 1500 };
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    static struct probe p[N];
    int64_t soft[N], hard[N];
    uint64_t rng = 27;
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        int64_t delay = rng_range(&rng, 0, 2 * TB_SEC);
        /* slack 0, sub-tick, around a tick, and coarse (up to 100 ms) */
        static const int64_t slacks[] = {0, 1, 50 * TB_US, TB_MS,
                                         TB_MS + 1, 100 * TB_MS};
        int64_t slack = slacks[i % 6];
        if (i % 11 == 0)
            slack = rng_range(&rng, 0, 30 * TB_MS);
        soft[i] = delay;
        hard[i] = delay + slack;
        assert_int_equal(tb_schedule_range(s, delay, slack, probe_task, &p[i],
                                           NULL), TB_OK);
    }
    bool ranged = (backend->caps & TB_CAP_RANGE) != 0;
    int64_t now = 0;
    while (now < 3 * TB_SEC) {
        now += rng_range(&rng, 1, 7 * TB_MS);
        size_t before = rec.n;
        long ran = tb_advance(s, now);
        assert_true(ran >= 0);
        assert_int_equal((size_t)ran, rec.n - before);
        for (size_t k = before; k < rec.n; k++)
            assert_true(rec.runs[k].at >= soft[rec.runs[k].id]);
        for (int i = 0; i < N; i++) {
            int64_t by = ranged ? hard[i] : latest_by(soft[i]);
            if (by <= now)
                assert_int_equal(p[i].runs, 1);
            else
                assert_true(p[i].runs <= 1);
        }
    }
    finish_ran_once(s, &rec, p, N);
}

/* The hard expiry, exactly: with TB_CAP_RANGE an advance to soft + slack
 * runs a task whose soft expiry alone would not (a wheel rounds up to its
 * tick); at soft - 1 nothing has run, on any backend. */
static void test_schedule_range_hard_expiry(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 0}, b = {.rec = &rec, .id = 1};
    /* a: soft 10.3 ms, hard 10.5 ms; b: soft 20 ms + 1 ns, slack 0 */
    int64_t sa = 10 * TB_MS + 300 * TB_US, ha = sa + 200 * TB_US;
    int64_t sb = 20 * TB_MS + 1;
    assert_int_equal(tb_schedule_range(s, sa, ha - sa, probe_task, &a, NULL),
                     TB_OK);
    assert_int_equal(tb_schedule_range(s, sb, 0, probe_task, &b, NULL),
                     TB_OK);
    assert_true(tb_advance(s, sa - 1) >= 0);
    assert_int_equal(a.runs, 0);
    assert_true(tb_advance(s, ha) >= 0);
    if (backend->caps & TB_CAP_RANGE)
        assert_int_equal(a.runs, 1);
    else
        assert_true(a.runs <= 1);
    assert_true(tb_advance(s, sb - 1) >= 0);
    assert_int_equal(b.runs, 0);
    if (backend->caps & TB_CAP_RANGE) {
        assert_true(tb_advance(s, sb) >= 0); /* slack 0: exact */
        assert_int_equal(b.runs, 1);
    }
    assert_true(tb_advance(s, latest_by(sb)) >= 0);
    assert_int_equal(a.runs, 1);
    assert_int_equal(b.runs, 1);
    for (size_t k = 0; k < rec.n; k++)
        assert_true(rec.runs[k].at >= (rec.runs[k].id ? sb : sa));
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A negative slack is TB_EINVAL, one whose hard expiry passes TB_MAX_DELAY
 * (or overflows) TB_ERANGE, on every backend, and nothing is scheduled. */
static void test_schedule_range_bad_slack(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe x = {.rec = &rec, .id = 0};
    tb_handle h;
    assert_int_equal(tb_schedule_range(s, TB_MS, -1, probe_task, &x, &h),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_range(s, TB_MS, INT64_MIN, probe_task, &x,
                                       &h), TB_EINVAL);
    assert_int_equal(tb_schedule_range(s, TB_MS, INT64_MAX, probe_task, &x,
                                       &h), TB_ERANGE);
    assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY - TB_MS, TB_MS + 1,
                                       probe_task, &x, &h), TB_ERANGE);
    assert_int_equal(tb_schedule_range(s, 0, TB_MAX_DELAY + 1, probe_task,
                                       &x, &h), TB_ERANGE);
    assert_int_equal(tb_pending(s), 0);
    /* the largest accepted: delay + slack == TB_MAX_DELAY */
    assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY - TB_MS, TB_MS,
                                       probe_task, &x, &h), TB_OK);
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_true(tb_advance(s, TB_SEC) >= 0);
    assert_int_equal(x.runs, 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Cancel ------------------------------------------------------------ */

static void test_cancel_answers(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 1}, b = {.rec = &rec, .id = 2};
    tb_handle ha, hb;
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &b, &hb), TB_OK);
    assert_int_not_equal(ha, TB_HANDLE_NONE);
    assert_int_not_equal(ha, hb);
    assert_int_equal(tb_cancel(s, ha), 1);      /* before run */
    assert_int_equal(tb_cancel(s, ha), 0);      /* twice */
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(a.runs, 0);
    assert_int_equal(b.runs, 1);
    assert_int_equal(tb_cancel(s, hb), 0);      /* after run */
    assert_int_equal(tb_cancel(s, TB_HANDLE_NONE), 0);
    assert_int_equal(tb_cancel(s, 0xffffffff00001234ULL), 0); /* unknown */
    assert_int_equal(tb_cancel(s, (tb_handle)7 << 32 | 0xfffffff0u), 0);
    /* stale: the slot is reused by a new task, the old handle must not
     * cancel it */
    struct probe c = {.rec = &rec, .id = 3};
    tb_handle hc;
    for (int i = 0; i < 4; i++) {
        assert_int_equal(tb_schedule(s, TB_MS, probe_task, &c, &hc), TB_OK);
        assert_int_equal(tb_cancel(s, ha), 0);
        assert_int_equal(tb_cancel(s, hb), 0);
        assert_int_equal(tb_advance(s, tb_now(s) + 2 * TB_MS), 1);
    }
    assert_int_equal(c.runs, 4);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* tb_reschedule: a backend either has no such call (TB_ENOTSUP, for every
 * handle, and nothing changes) or moves a waiting one-shot in place: later
 * and earlier, never early, once, with the same handle; not pending -> 0. */
static void test_reschedule(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 1}, b = {.rec = &rec, .id = 2},
                 p = {.rec = &rec, .id = 3};
    tb_handle ha, hb, hp;
    assert_int_equal(tb_reschedule(NULL, 1, TB_MS), TB_EINVAL);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 50 * TB_MS, probe_task, &b, &hb), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, probe_task, &p, &hp,
                                            5 * TB_MS), TB_OK);
    int rc = tb_reschedule(s, ha, 30 * TB_MS);
    if (rc == TB_ENOTSUP) {
        assert_int_equal(tb_reschedule(s, hb, TB_MS), TB_ENOTSUP);
        assert_int_equal(tb_reschedule(s, TB_HANDLE_NONE, TB_MS), TB_ENOTSUP);
        assert_int_equal(tb_advance(s, 20 * TB_MS), 1 + 4);
        assert_int_equal(a.runs, 1); /* untouched by the refused calls */
    } else {
        assert_int_equal(rc, 1);                           /* later */
        assert_int_equal(tb_reschedule(s, hb, 20 * TB_MS), 1); /* earlier */
        assert_int_equal(tb_reschedule(s, hp, TB_MS), TB_EINVAL);
        assert_int_equal(tb_reschedule(s, ha, TB_MAX_DELAY + 1), TB_ERANGE);
        assert_int_equal(tb_reschedule(s, ha, -5), 1);     /* negative = 0 */
        assert_int_equal(tb_reschedule(s, ha, 30 * TB_MS), 1);
        /* p due at 5, 10, 15: one run where missed periods are skipped */
        assert_int_equal(tb_advance(s, 19 * TB_MS),
                         backend->caps & TB_CAP_SKIP_MISSED ? 1 : 3);
        assert_int_equal(a.runs + b.runs, 0);
        assert_int_equal(tb_advance(s, due_by(20 * TB_MS)), 1 + 1);
        assert_int_equal(b.runs, 1);
        assert_int_equal(tb_reschedule(s, hb, TB_MS), 0);  /* has run */
        assert_int_equal(tb_advance(s, 29 * TB_MS), 1);
        assert_int_equal(a.runs, 0);
        assert_int_equal(tb_advance(s, due_by(30 * TB_MS)), 1 + 1);
        assert_int_equal(a.runs, 1);
        for (size_t k = 0; k < rec.n; k++)
            if (rec.runs[k].id == 1)
                assert_true(rec.runs[k].at >= 30 * TB_MS);
        assert_int_equal(tb_reschedule(s, ha, TB_MS), 0);
        assert_int_equal(tb_reschedule(s, TB_HANDLE_NONE, TB_MS), 0);
        assert_int_equal(tb_cancel(s, ha), 0);
    }
    assert_int_equal(tb_cancel(s, hp), 1);
    assert_int_equal(tb_advance(s, 100 * TB_MS), rc == TB_ENOTSUP ? 1 : 0);
    assert_int_equal(a.runs, 1);
    assert_int_equal(b.runs, 1);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

static void test_cancel_periodic_from_inside(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe rate = {.rec = &rec, .id = 1, .cancel_self_at = 3};
    struct probe delay = {.rec = &rec, .id = 2, .cancel_self_at = 2};
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, probe_task, &rate,
                                            &rate.self, 5 * TB_MS),
                     TB_OK);
    assert_int_equal(tb_schedule_fixed_delay(s, 5 * TB_MS, probe_task, &delay,
                                             &delay.self, 5 * TB_MS),
                     TB_OK);
    for (int64_t t = TB_MS; t <= 100 * TB_MS; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    assert_int_equal(rate.runs, 3);
    assert_int_equal(rate.cancel_result, 1);
    assert_int_equal(delay.runs, 2);
    assert_int_equal(delay.cancel_result, 1);
    assert_int_equal(tb_cancel(s, rate.self), 0);
    assert_int_equal(tb_advance(s, 200 * TB_MS), 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A callback that schedules one task and cancels another. */
struct meddler {
    struct tb_sched *s;
    tb_handle victim;
    struct probe *child;
    int cancel_result, schedule_result;
};

static int meddle(void *arg)
{
    struct meddler *m = arg;
    m->cancel_result = tb_cancel(m->s, m->victim);
    m->schedule_result = tb_schedule(m->s, 10 * TB_MS, probe_task, m->child,
                                     NULL);
    return 0;
}

static void test_schedule_and_cancel_from_callback(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe victim = {.rec = &rec, .id = 1};
    struct probe child = {.rec = &rec, .id = 2};
    struct meddler m = {.s = s, .child = &child};
    assert_int_equal(tb_schedule(s, 50 * TB_MS, probe_task, &victim,
                                 &m.victim), TB_OK);
    assert_int_equal(tb_schedule(s, 5 * TB_MS, meddle, &m, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 1);
    assert_int_equal(m.cancel_result, 1);
    assert_int_equal(m.schedule_result, TB_OK);
    assert_int_equal(tb_advance(s, 14 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 15 * TB_MS), 1); /* child at 5 + 10 */
    assert_int_equal(child.runs, 1);
    assert_int_equal(rec.runs[0].at, 15 * TB_MS);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 0);
    assert_int_equal(victim.runs, 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Ordering ---------------------------------------------------------- */

static void test_equal_deadlines(void **state)
{
    (void)state;
    enum { N = 300 };
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    static struct probe p[N];
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, 7 * TB_MS, probe_task, &p[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_advance(s, 7 * TB_MS), N);
    if (backend->caps & TB_CAP_FIFO_TIES)
        for (int i = 0; i < N; i++)
            assert_int_equal(rec.runs[i].id, i);
    for (int i = 0; i < N; i++)
        assert_int_equal(p[i].runs, 1);
    rec_free(&rec);
    tb_destroy(s);
}

/* Deadlines in different ticks always run in deadline order. */
static void test_order_across_ticks(void **state)
{
    (void)state;
    enum { N = 1000 };
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    static struct probe p[N];
    int64_t deadline[N];
    uint64_t rng = 7;
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        deadline[i] = rng_range(&rng, 1, 2000) * TB_MS;
        assert_int_equal(tb_schedule(s, deadline[i], probe_task, &p[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_advance(s, 3 * TB_SEC), N);
    /* a granular wheel runs a coarse bucket's tasks in any order */
    for (int i = 1; i < N && !(backend->caps & TB_CAP_GRANULAR); i++)
        assert_true(deadline[rec.runs[i - 1].id] <= deadline[rec.runs[i].id]);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Periodic ---------------------------------------------------------- */

static void test_fixed_rate_no_drift(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    const int64_t period = 10 * TB_MS;
    assert_int_equal(tb_schedule_fixed_rate(s, period, probe_task, &p, &p.self,
                                            period), TB_OK);
    for (int64_t t = TB_MS; t <= 1000 * period; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    assert_int_equal(p.runs, 1000);
    for (size_t i = 0; i < rec.n; i++)
        assert_int_equal(rec.runs[i].at, (int64_t)(i + 1) * period);
    assert_int_equal(tb_cancel(s, p.self), 1);
    assert_int_equal(tb_advance(s, 1100 * period), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A late clock: fixed rate catches up the missed runs back-to-back. */
static void test_fixed_rate_catch_up(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, &p, NULL,
                                            10 * TB_MS), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    if (backend->caps & TB_CAP_SKIP_MISSED) {
        /* the run due at 20 runs late at 55; 30, 40 and 50 are skipped and
         * the grid is kept: the next run is at 60 */
        assert_int_equal(tb_advance(s, 55 * TB_MS), 1);
        assert_int_equal(tb_advance(s, 59 * TB_MS), 0);
    } else {
        assert_int_equal(tb_advance(s, 55 * TB_MS), 4); /* 20, 30, 40, 50 */
    }
    assert_int_equal(tb_advance(s, 60 * TB_MS), 1);
    rec_free(&rec);
    tb_destroy(s);
}

static void test_fixed_delay_spacing(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    const int64_t d = 7 * TB_MS;
    assert_int_equal(tb_schedule_fixed_delay(s, 3 * TB_MS, probe_task, &p, NULL,
                                             d), TB_OK);
    for (int64_t t = TB_MS; t <= 3 * TB_MS + 100 * d; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    assert_int_equal(p.runs, 101);
    for (size_t i = 0; i < rec.n; i++)
        assert_int_equal(rec.runs[i].at, 3 * TB_MS + (int64_t)i * d);
    rec_free(&rec);
    tb_destroy(s);
}

/* A periodic task whose next run would reach the end of the clock has no
 * next run: it finishes.  Re-armed at INT64_MAX instead, it would be due
 * again at once and tb_advance(INT64_MAX) would never return, or, on a
 * ticked backend, stay pending for ever (found by the fuzz suite:
 * tests/fuzz/regressions/rearm-at-end-of-clock).  The clock gets near its
 * end while the scheduler is empty, which costs every structure little. */
static void test_periodic_end_of_clock(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    /* each cancels itself on a 5th run, so a backend that re-arms at
     * INT64_MAX fails here instead of hanging */
    struct probe rate = {.rec = &rec, .id = 1, .cancel_self_at = 5};
    struct probe huge_rate = {.rec = &rec, .id = 2, .cancel_self_at = 5};
    struct probe huge_delay = {.rec = &rec, .id = 3, .cancel_self_at = 5};
    assert_int_equal(tb_advance(s, INT64_MAX - 3 * TB_SEC), 0);
    /* at end - 2.5 s, - 1.5 s, - 0.5 s; the next would be past the end */
    assert_int_equal(tb_schedule_fixed_rate(s, TB_SEC / 2, probe_task, &rate,
                                            &rate.self, TB_SEC), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 0, probe_task, &huge_rate,
                                            &huge_rate.self, TB_MAX_DELAY),
                     TB_OK);
    assert_int_equal(tb_schedule_fixed_delay(s, 0, probe_task, &huge_delay,
                                             &huge_delay.self, TB_MAX_DELAY),
                     TB_OK);
    bool skip = backend->caps & TB_CAP_SKIP_MISSED;
    assert_int_equal(tb_advance(s, INT64_MAX), skip ? 3 : 5);
    assert_int_equal(tb_advance(s, INT64_MAX), 0);
    assert_int_equal(rate.runs, skip ? 1 : 3);
    assert_int_equal(huge_rate.runs, 1);
    assert_int_equal(huge_delay.runs, 1);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.finished, 3);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* The end of the clock (issue 42): with the clock at INT64_MAX a task
 * scheduled with delay 0 is due at INT64_MAX, which the clock reaches, so
 * tb_advance(INT64_MAX) runs it; so does it a task whose deadline lies in
 * the last, partial tick before the end (a wheel's tick boundaries stop
 * short of INT64_MAX unless the tick divides it).  A later deadline
 * overflows the clock: TB_ERANGE at the schedule.  Before the fix Netty's
 * and Kafka's wheels took both and never ran them. */
static void test_end_of_clock(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe early = {.rec = &rec, .id = 1};
    struct probe at_end = {.rec = &rec, .id = 2};
    struct probe again = {.rec = &rec, .id = 3};
    tb_handle h;
    /* the last tick boundary before the end lies 775 807 ns before it at
     * a 1 ms tick: INT64_MAX - 1000 is in the partial tick after it */
    assert_int_equal(tb_advance(s, INT64_MAX - TB_SEC), 0);
    assert_int_equal(tb_schedule(s, TB_SEC - 1000, probe_task, &early, NULL),
                     TB_OK);
    assert_int_equal(tb_advance(s, INT64_MAX - 1001), 0);
    assert_int_equal(tb_advance(s, INT64_MAX), 1);
    assert_int_equal(early.runs, 1);
    assert_true(rec.runs[0].at >= INT64_MAX - 1000);
    /* at the end: delay 0 runs at the next advance to the end */
    assert_int_equal(tb_now(s), INT64_MAX);
    assert_int_equal(tb_schedule(s, 0, probe_task, &at_end, &h), TB_OK);
    assert_int_equal(tb_advance(s, INT64_MAX), 1);
    assert_int_equal(at_end.runs, 1);
    assert_int_equal(rec.runs[1].at, INT64_MAX);
    assert_int_equal(tb_cancel(s, h), 0); /* it ran */
    /* and again, after the end's tick has been walked; a negative delay
     * means 0 */
    assert_int_equal(tb_schedule(s, -5, probe_task, &again, NULL), TB_OK);
    assert_int_equal(tb_advance(s, INT64_MAX), 1);
    assert_int_equal(again.runs, 1);
    /* past the end: refused, nothing pending */
    assert_int_equal(tb_schedule(s, 1, probe_task, &again, &h), TB_ERANGE);
    assert_int_equal(tb_schedule_fixed_rate(s, 1, probe_task, &again, &h,
                                            TB_SEC), TB_ERANGE);
    assert_int_equal(tb_advance(s, INT64_MAX), 0);
    assert_int_equal(again.runs, 1);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.finished, 3);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A task due at once, scheduled after an advance that ended on an idle tick
 * boundary, runs in the next advance to that same time: due tasks run in
 * the advance that reaches their (rounded) deadline, whether or not the
 * structure had work at that boundary (found by the fuzz suite:
 * tests/fuzz/regressions/due-after-idle-tick). */
static void test_due_after_idle_advance(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe first = {.rec = &rec, .id = 1};
    struct probe later = {.rec = &rec, .id = 2};
    assert_int_equal(tb_advance(s, 0), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &first, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 0), 1);
    assert_int_equal(tb_advance(s, 5 * TICK), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &later, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 5 * TICK), 1);
    assert_int_equal(first.runs, 1);
    assert_int_equal(later.runs, 1);
    assert_int_equal(rec.runs[1].at, 5 * TICK);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A task scheduled at a tick boundary whose tick has already run is due at
 * that tick, so the next advance runs it before anything of a later tick
 * (found by the fuzz suite:
 * tests/fuzz/regressions/overdue-after-later-tick). */
static void test_overdue_runs_in_tick_order(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe tick5 = {.rec = &rec, .id = 1}, next = {.rec = &rec, .id = 2},
                 overdue = {.rec = &rec, .id = 3};
    assert_int_equal(tb_schedule(s, 5 * TICK, probe_task, &tick5, NULL),
                     TB_OK);
    assert_int_equal(tb_advance(s, 5 * TICK), 1);   /* tick 5 has run */
    assert_int_equal(tb_schedule(s, 1, probe_task, &next, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 5 * TICK), 0);   /* next: not yet due */
    assert_int_equal(tb_schedule(s, 0, probe_task, &overdue, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TICK), 2);
    assert_int_equal(rec.runs[1].id, 3);            /* deadline 5 ticks */
    assert_int_equal(rec.runs[2].id, 2);            /* 5 ticks + 1 ns */
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Accounting under a random sequence -------------------------------- */

static void test_accounting_random(void **state)
{
    (void)state;
    enum { OPS = 100000, MAXH = 4096 };
    struct tb_sched *s = make();
    static tb_handle handles[MAXH];
    size_t nh = 0;
    uint64_t rng = 1234, submitted = 0, cancels = 0;
    int64_t now = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rng_next(&rng) % 100;
        tb_handle h = TB_HANDLE_NONE;
        if (r < 45) {
            int64_t delay = rng_range(&rng, 0, 2 * TB_SEC);
            assert_int_equal(tb_schedule(s, delay, noop_task, NULL, &h), TB_OK);
            submitted++;
        } else if (r < 48) {
            int64_t per = rng_range(&rng, 1, 300) * TB_MS;
            int rc = r < 47 ? tb_schedule_fixed_rate(s, per, noop_task, NULL,
                                                     &h, per)
                            : tb_schedule_fixed_delay(s, per, noop_task, NULL,
                                                      &h, per);
            assert_int_equal(rc, TB_OK);
            submitted++;
        } else if (r < 80) {
            if (nh) {
                int rc = tb_cancel(s, handles[rng_next(&rng) % nh]);
                assert_true(rc == 0 || rc == 1);
                cancels += (uint64_t)rc;
            }
        } else {
            now += rng_range(&rng, 0, 30 * TB_MS);
            assert_true(tb_advance(s, now) >= 0);
        }
        if (h != TB_HANDLE_NONE)
            handles[nh < MAXH ? nh++ : rng_next(&rng) % MAXH] = h;
        struct tb_stats st;
        tb_stats(s, &st);
        assert_int_equal(st.submitted, submitted);
        assert_int_equal(st.cancelled, cancels);
        assert_int_equal(st.pending, tb_pending(s));
        assert_balanced(s);
        if (op % 5000 == 0) {
            int rc = tb_check(s);
            assert_true(rc == TB_OK || rc == TB_ENOTSUP);
        }
    }
    long left = tb_shutdown_now(s, NULL, NULL);
    assert_true(left >= 0);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Bad input --------------------------------------------------------- */

static void test_bad_input(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe keep = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule(s, 5 * TB_MS, probe_task, &keep, NULL), TB_OK);
    tb_handle h = 99;
    assert_int_equal(tb_schedule(s, 1, NULL, NULL, &h), TB_EINVAL);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_schedule_fixed_rate(s, 1, noop_task, NULL, &h, 0),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_fixed_rate(s, 1, noop_task, NULL, &h, -5),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_fixed_delay(s, 1, noop_task, NULL, &h, 0),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_fixed_delay(s, 1, noop_task, NULL, &h,
                                             TB_MAX_DELAY + 1), TB_ERANGE);
    h = 99; /* every refusal says "no task" through the handle */
    assert_int_equal(tb_schedule(s, TB_MAX_DELAY + 1, noop_task, NULL, &h),
                     TB_ERANGE);
    assert_int_equal(h, TB_HANDLE_NONE);
    h = 99;
    assert_int_equal(tb_schedule(s, INT64_MAX, noop_task, NULL, &h),
                     TB_ERANGE);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_advance(s, TB_MS), 0);
    assert_int_equal(tb_advance(s, 0), TB_EINVAL);         /* backwards */
    assert_int_equal(tb_await_termination(s, -1), TB_EINVAL);
    /* a negative delay is "now" */
    struct probe neg = {.rec = &rec, .id = 2};
    assert_int_equal(tb_schedule(s, -TB_SEC, probe_task, &neg, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 1);
    assert_int_equal(neg.runs, 1);
    /* the clock near its end: a delay that overflows it is refused */
    struct tb_sched *late = make();
    assert_int_equal(tb_advance(late, INT64_MAX - TB_SEC), 0);
    h = 99;
    assert_int_equal(tb_schedule(late, 2 * TB_SEC, noop_task, NULL, &h),
                     TB_ERANGE);
    assert_int_equal(h, TB_HANDLE_NONE);
    tb_destroy(late);
    /* the first task is intact after all that */
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(keep.runs, 1);
    assert_balanced(s);
    /* after shutdown: rejected */
    assert_true(tb_shutdown(s) >= 0);
    h = 99;
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, &h), TB_ESHUTDOWN);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_schedule_fixed_rate(s, 1, noop_task, NULL, &h, 1),
                     TB_ESHUTDOWN);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_true(st.rejected >= 2);
    rec_free(&rec);
    tb_destroy(s);
}

static void test_max_pending(void **state)
{
    (void)state;
    struct tb_config c = base_config();
    c.max_pending = 8;
    struct tb_sched *s = make_sched(backend, &c);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p[8];
    for (int i = 0; i < 8; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, (i + 1) * TB_MS, probe_task, &p[i],
                                     NULL), TB_OK);
    }
    tb_handle h = 5;
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, &h), TB_EFULL);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_pending(s), 8);
    assert_int_equal(tb_advance(s, 3 * TB_MS), 3);  /* runs free places */
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, &h), TB_OK);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 6);
    for (int i = 0; i < 8; i++)
        assert_int_equal(p[i].runs, 1);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.rejected, 1);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* DECISIONS D1: max_pending holds at every moment, periodic re-arms
 * included.  A 1 ms fixed-rate task whose first run schedules a one-shot,
 * with room for one task: either the re-arm is refused (the task retires
 * as finished, counted once in `rejected`) or, where the original keeps the
 * periodic task queued during its run, the inner schedule gets TB_EFULL. */
struct d1_task {
    struct tb_sched *s;
    struct probe *child;
    int runs, inner_rc;
};

static int d1_rate(void *arg)
{
    struct d1_task *d = arg;
    if (++d->runs == 1)
        d->inner_rc = tb_schedule(d->s, 20 * TB_MS, probe_task, d->child,
                                  NULL);
    return 0;
}

static void test_max_pending_periodic_rearm(void **state)
{
    (void)state;
    struct tb_config c = base_config();
    c.max_pending = 1;
    struct tb_sched *s = make_sched(backend, &c);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe child = {.rec = &rec, .id = 1};
    struct d1_task d = {.s = s, .child = &child, .inner_rc = 1};
    tb_handle h;
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, d1_rate, &d, &h, TB_MS),
                     TB_OK);
    struct tb_stats st;
    for (int64_t t = TB_MS; t <= 10 * TB_MS; t += TB_MS) {
        assert_true(tb_advance(s, t) >= 0);
        assert_true(tb_pending(s) <= 1);
        tb_stats(s, &st);
        assert_true(st.peak_pending <= 1);
        assert_balanced(s);
    }
    assert_true(d.runs >= 1);
    if (d.inner_rc == TB_OK) {
        /* the re-arm was refused: the task stopped after its first run */
        assert_int_equal(d.runs, 1);
        assert_int_equal(st.rejected, 1);
        assert_int_equal(st.finished, 1);
        assert_int_equal(tb_cancel(s, h), 0);
        assert_int_equal(tb_advance(s, 30 * TB_MS), 1);
        assert_int_equal(child.runs, 1);
    } else {
        /* the task kept its place: the inner schedule was refused */
        assert_int_equal(d.inner_rc, TB_EFULL);
        assert_int_equal(d.runs, 10);
        assert_true(st.rejected >= 1);
        assert_int_equal(child.runs, 0);
        assert_int_equal(tb_cancel(s, h), 1);
    }
    tb_stats(s, &st);
    assert_true(st.peak_pending <= 1);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

static void test_allocation_failure(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = base_config();
    c.allocator = &fa.hook;
    /* creation itself fails cleanly at every allocation it makes */
    for (long budget = 0;; budget++) {
        fa.budget = budget;
        struct tb_sched *s = NULL;
        int rc = tb_create(backend, &c, &s);
        if (rc == TB_OK) {
            tb_destroy(s);
            break;
        }
        assert_int_equal(rc, TB_ENOMEM);
        assert_null(s);
        assert_true(budget < 64);
    }
    fa.budget = -1;
    struct tb_sched *s = make_sched(backend, &c);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule(s, 5 * TB_MS, probe_task, &p, NULL), TB_OK);
    /* fill until the structure must allocate, then refuse it memory */
    fa.budget = 0;
    int rc = TB_OK;
    size_t accepted = 1;
    for (int i = 0; i < 100000 && rc == TB_OK; i++) {
        rc = tb_schedule(s, 10 * TB_MS + i, noop_task, NULL, NULL);
        accepted += rc == TB_OK;
    }
    assert_int_equal(rc, TB_ENOMEM);
    fa.budget = -1;
    assert_int_equal(tb_pending(s), accepted);
    assert_int_equal(tb_advance(s, TB_SEC), (long)accepted);
    assert_int_equal(p.runs, 1);
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Reserved memory is ready ------------------------------------------ */

static long minor_faults(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

/* After tb_reserve(n) the next n schedules touch no fresh page: records and
 * the structure's own arrays were touched when they were reserved, so a
 * timed fill does not pay the kernel for zero pages (at 10^6 in the peers
 * driver, 3900 faults cost heapqueue's adds some 25 ns each).  Counted, not
 * timed.  Sanitizer runtimes map shadow pages on first use, so only the
 * plain build can count. */
static void test_reserve_touches_pages(void **state)
{
    (void)state;
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    skip();
#endif
    enum { N = 100000 };
    struct tb_sched *s = make();
    /* one task first, so lazily made parts (levels, a first array) exist */
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_reserve(s, N), TB_OK);
    long before = minor_faults();
    for (int i = 0; i < N; i++) {
        int64_t d = (int64_t)(i * 7919 % 4096 + 1) * TB_MS;
        assert_int_equal(tb_schedule(s, d, noop_task, NULL, NULL), TB_OK);
    }
    long faults = minor_faults() - before;
    /* 16 bytes of array per task alone would be 390 pages */
    assert_true(faults <= 8);
    assert_int_equal(tb_advance(s, 5000 * TB_SEC), N + 1);
    assert_balanced(s);
    tb_destroy(s);
}

static void test_mode_errors(void **state)
{
    (void)state;
    struct tb_sched *v = make();
    assert_int_equal(tb_start(v), TB_ESTATE);
    tb_destroy(v);
    struct tb_config c = base_config();
    c.clock = TB_CLOCK_MONOTONIC;
    struct tb_sched *m = make_sched(backend, &c);
    assert_int_equal(tb_advance(m, 1), TB_ESTATE);
    assert_int_equal(tb_spend(m, 1), TB_ESTATE);
    assert_int_equal(tb_start(m), TB_OK);
    assert_int_equal(tb_start(m), TB_ESTATE);
    assert_true(tb_shutdown(m) >= 0);
    assert_int_equal(tb_start(m), TB_ESTATE);
    /* the longest timeout there is must not overflow the clock */
    assert_int_equal(tb_await_termination(m, INT64_MAX), TB_OK);
    tb_destroy(m);
    /* shut down before it ever started: it cannot start any more */
    m = make_sched(backend, &c);
    assert_true(tb_shutdown(m) >= 0);
    assert_int_equal(tb_start(m), TB_ESHUTDOWN);
    tb_destroy(m);
}

/* ---- Shutdown ---------------------------------------------------------- */

struct collected {
    tb_handle h[64];
    void *arg[64];
    int n;
};

static void collect(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    struct collected *c = ctx;
    assert_ptr_equal(fn, probe_task);
    c->h[c->n] = h;
    c->arg[c->n++] = arg;
}

static void test_shutdown_now_returns_unrun(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p[10];
    tb_handle h[10];
    schedule_probes(s, &rec, p, h, 10, 10 * TB_MS);
    assert_int_equal(tb_cancel(s, h[9]), 1);
    assert_int_equal(tb_advance(s, 40 * TB_MS), 4);
    struct collected c = {0};
    assert_int_equal(tb_shutdown_now(s, collect, &c), 5);
    assert_int_equal(c.n, 5);
    for (int i = 4; i < 9; i++) {
        int found = 0;
        for (int k = 0; k < c.n; k++)
            found += c.arg[k] == &p[i] && c.h[k] == h[i];
        assert_int_equal(found, 1);
    }
    assert_int_equal(tb_shutdown_now(s, collect, &c), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_cancel(s, h[5]), 0);
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, NULL), TB_ESHUTDOWN);
    assert_int_equal(tb_advance(s, TB_SEC), 0);
    for (int i = 4; i < 10; i++)
        assert_int_equal(p[i].runs, 0);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.dropped, 5);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- What the capability flags promise -------------------------------- */

/* A failing task kills a TB_CAP_FAIL_KILLS timer (java.util.Timer); any other
 * backend counts the failure and runs the rest. */
static void test_failure_reaction(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe bad = {.rec = &rec, .id = 1, .fail = 1};
    struct probe later = {.rec = &rec, .id = 2};
    assert_int_equal(tb_schedule(s, 5 * TB_MS, probe_task, &bad, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 50 * TB_MS, probe_task, &later, NULL),
                     TB_OK);
    assert_true(tb_advance(s, 100 * TB_MS) >= 1);
    assert_int_equal(bad.runs, 1);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.failed, 1);
    bool kills = backend->caps & TB_CAP_FAIL_KILLS;
    assert_int_equal(later.runs, kills ? 0 : 1);
    assert_int_equal(st.lost, kills ? 1 : 0);
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, NULL),
                     kills ? TB_ESHUTDOWN : TB_OK);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Lazy cancel keeps the task counted until a later step; eager cancel
 * drops it at once.  Purge, where supported, removes exactly the zombies. */
static void test_cancel_accounting_by_caps(void **state)
{
    (void)state;
    struct tb_sched *s = make();
    tb_handle h[30];
    for (int i = 0; i < 30; i++)
        assert_int_equal(tb_schedule(s, (i + 1) * 10 * TB_MS, noop_task, NULL,
                                     &h[i]), TB_OK);
    for (int i = 0; i < 30; i += 3)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    struct tb_stats st;
    tb_stats(s, &st);
    if (!(backend->caps & TB_CAP_LAZY_CANCEL)) {
        assert_int_equal(tb_pending(s), 20);
        assert_int_equal(st.zombies, 0);
    } else {
        assert_int_equal(tb_pending(s), 20 + st.zombies);
    }
    long purged = tb_purge(s);
    if (backend->caps & TB_CAP_PURGE) {
        assert_int_equal(purged, (long)st.zombies);
        assert_int_equal(tb_pending(s), 20);
    } else {
        assert_int_equal(purged, TB_ENOTSUP);
    }
    assert_int_equal(tb_advance(s, TB_SEC), 20);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Monotonic clock --------------------------------------------------- */

enum { MONO_N = 1000 };

struct mono {
    struct tb_sched *s;
    int64_t deadline[MONO_N];
    _Atomic int64_t ran_at[MONO_N];
    _Atomic int runs[MONO_N];
    _Atomic int total;
    int idx[MONO_N];
};

static struct mono *mono_ctx;

static int mono_task(void *arg)
{
    int i = *(int *)arg;
    int64_t now = tb_monotonic_ns();
    atomic_store(&mono_ctx->ran_at[i], now);
    atomic_fetch_add(&mono_ctx->runs[i], 1);
    atomic_fetch_add(&mono_ctx->total, 1);
    return 0;
}

static int all_ran(void *ctx)
{
    return atomic_load(&((struct mono *)ctx)->total) == MONO_N;
}

static struct mono *mono_setup(void)
{
    struct mono *m = calloc(1, sizeof *m);
    assert_non_null(m);
    mono_ctx = m;
    struct tb_config c = base_config();
    c.clock = TB_CLOCK_MONOTONIC;
    m->s = make_sched(backend, &c);
    assert_int_equal(tb_start(m->s), TB_OK);
    uint64_t rng = 99;
    for (int i = 0; i < MONO_N; i++) {
        m->idx[i] = i;
        int64_t delay = rng_range(&rng, 0, 50 * TB_MS);
        m->deadline[i] = tb_monotonic_ns() + delay;
        assert_int_equal(tb_schedule(m->s, delay, mono_task, &m->idx[i], NULL),
                         TB_OK);
    }
    return m;
}

static void test_monotonic_all_run(void **state)
{
    (void)state;
    struct mono *m = mono_setup();
    /* a generous margin: 30 s for 50 ms of timers on a loaded machine */
    assert_true(wait_until(all_ran, m, 30 * TB_SEC));
    for (int i = 0; i < MONO_N; i++) {
        assert_int_equal(atomic_load(&m->runs[i]), 1);
        assert_true(atomic_load(&m->ran_at[i]) >= m->deadline[i]);
    }
    assert_int_equal(tb_shutdown_now(m->s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(m->s, 30 * TB_SEC), TB_OK);
    assert_balanced(m->s);
    tb_destroy(m->s);
    free(m);
}

struct returned {
    int seen[MONO_N];
    int n;
};

static void note_returned(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    (void)h;
    (void)fn;
    struct returned *r = ctx;
    r->seen[*(int *)arg]++;
    r->n++;
}

static void test_monotonic_shutdown_now(void **state)
{
    (void)state;
    struct mono *m = mono_setup();
    struct timespec ts = {0, 25 * 1000 * 1000};
    nanosleep(&ts, NULL);
    static struct returned r;
    memset(&r, 0, sizeof r);
    long n = tb_shutdown_now(m->s, note_returned, &r);
    assert_int_equal(n, r.n);
    assert_int_equal(tb_await_termination(m->s, 30 * TB_SEC), TB_OK);
    /* after termination nothing more runs: ran and returned partition all */
    int ran = atomic_load(&m->total);
    ts.tv_nsec = 60 * 1000 * 1000;
    nanosleep(&ts, NULL);
    assert_int_equal(atomic_load(&m->total), ran);
    for (int i = 0; i < MONO_N; i++) {
        int runs = atomic_load(&m->runs[i]);
        assert_int_equal(runs + r.seen[i], 1);
        if (runs)
            assert_true(atomic_load(&m->ran_at[i]) >= m->deadline[i]);
    }
    assert_int_equal(ran + n, MONO_N);
    assert_balanced(m->s);
    tb_destroy(m->s);
    free(m);
}

/* ---- fork() (issue 42) ------------------------------------------------- */

static int count_task(void *arg)
{
    atomic_fetch_add((atomic_int *)arg, 1);
    return 0;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, ms % 1000 * 1000000L};
    nanosleep(&ts, NULL);
}

/* Waits up to `seconds` (a generous bound, never a timing assertion) for
 * *n to reach `want`. */
static bool wait_count(atomic_int *n, int want, int seconds)
{
    for (int i = 0; i < seconds * 100 && atomic_load(n) < want; i++)
        sleep_ms(10);
    return atomic_load(n) >= want;
}

#if defined(__SANITIZE_THREAD__)
#define TB_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TB_TSAN 1
#endif
#endif

/* The child's side: each failed check exits with its own number. */
static int fork_child_checks(struct tb_sched *m, struct tb_sched *idle,
                             struct tb_sched *v, tb_handle far,
                             atomic_int *ran)
{
    atomic_int runs = 0;
    tb_handle h = 12345;
    struct tb_stats st;
    if (tb_schedule(m, 0, count_task, &runs, &h) != TB_ESTATE ||
        h != TB_HANDLE_NONE)
        return 10;
    if (tb_schedule_fixed_rate(m, 0, count_task, &runs, NULL, TB_MS) !=
            TB_ESTATE ||
        tb_schedule_fixed_delay(m, 0, count_task, &runs, NULL, TB_MS) !=
            TB_ESTATE ||
        tb_schedule_range(m, 0, TB_MS, count_task, &runs, NULL) != TB_ESTATE)
        return 11;
    if (tb_cancel(m, far) != TB_ESTATE)
        return 12;
    int rs = tb_reschedule(m, far, 0);
    if (rs != TB_ESTATE)
        return 13;
    if (tb_pending(m) != 0 || tb_stats(m, &st) != TB_ESTATE ||
        tb_reserve(m, 10) != TB_ESTATE || tb_purge(m) != TB_ESTATE ||
        tb_check(m) != TB_ESTATE)
        return 14;
    if (tb_start(m) != TB_ESTATE || tb_shutdown(m) != TB_ESTATE ||
        tb_shutdown_now(m, NULL, NULL) != TB_ESTATE ||
        tb_await_termination(m, TB_MS) != TB_ESTATE)
        return 15;
    tb_destroy(m); /* returns: the parent kills a child that hangs here */
    sleep_ms(20);
    if (atomic_load(&runs) != 0 || atomic_load(ran) != 0)
        return 16;
    /* a virtual scheduler's copy is the child's own */
    if (tb_schedule(v, 0, count_task, &runs, NULL) != TB_OK ||
        tb_advance(v, 1) != 1 || atomic_load(&runs) != 1)
        return 17;
    tb_destroy(v);
#ifndef TB_TSAN
    /* one created but not started before the fork is the child's to
     * start (TSan does not let a child of a threaded process start
     * threads) */
    if (tb_start(idle) != TB_OK ||
        tb_schedule(idle, TB_MS, count_task, &runs, NULL) != TB_OK ||
        !wait_count(&runs, 2, 30))
        return 18;
#endif
    tb_destroy(idle);
    return 0;
}

/* fork() after tb_start(): in the child the started scheduler answers
 * TB_ESTATE to everything and tb_destroy() returns at once; before, its
 * tb_schedule() answered 0, the task never ran and tb_destroy() hung.  The
 * parent's scheduler carries on. */
static void test_fork_after_start(void **state)
{
    (void)state;
    struct tb_config c = base_config();
    c.clock = TB_CLOCK_MONOTONIC;
    struct tb_sched *m = make_sched(backend, &c);
    struct tb_sched *idle = make_sched(backend, &c);
    struct tb_sched *v = make();
    assert_int_equal(tb_start(m), TB_OK);
    atomic_int ran = 0;
    tb_handle far;
    assert_int_equal(tb_schedule(m, 3600 * TB_SEC, count_task, &ran, &far),
                     TB_OK);
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        _exit(fork_child_checks(m, idle, v, far, &ran));
    int status = 0;
    pid_t w = 0;
    for (int i = 0; i < 6000 && (w = waitpid(pid, &status, WNOHANG)) == 0;
         i++)
        sleep_ms(10);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the forked child hung (60 s)");
    }
    assert_int_equal(w, pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    /* the parent's scheduler is untouched by the child's calls */
    atomic_int soon = 0;
    assert_int_equal(tb_schedule(m, TB_MS, count_task, &soon, NULL), TB_OK);
    assert_true(wait_count(&soon, 1, 30));
    assert_int_equal(tb_cancel(m, far), 1);
    assert_int_equal(atomic_load(&ran), 0);
    tb_destroy(m);
    tb_destroy(idle);
    tb_destroy(v);
}

int main(int argc, char **argv)
{
    const struct tb_backend *list[64];
    size_t n = backends_from_args(argc, argv, list, 64);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_never_early_exactly_once),
        cmocka_unit_test(test_schedule_range_never_early),
        cmocka_unit_test(test_schedule_range_hard_expiry),
        cmocka_unit_test(test_schedule_range_bad_slack),
        cmocka_unit_test(test_cancel_answers),
        cmocka_unit_test(test_reschedule),
        cmocka_unit_test(test_cancel_periodic_from_inside),
        cmocka_unit_test(test_schedule_and_cancel_from_callback),
        cmocka_unit_test(test_equal_deadlines),
        cmocka_unit_test(test_order_across_ticks),
        cmocka_unit_test(test_fixed_rate_no_drift),
        cmocka_unit_test(test_fixed_rate_catch_up),
        cmocka_unit_test(test_fixed_delay_spacing),
        cmocka_unit_test(test_periodic_end_of_clock),
        cmocka_unit_test(test_end_of_clock),
        cmocka_unit_test(test_due_after_idle_advance),
        cmocka_unit_test(test_overdue_runs_in_tick_order),
        cmocka_unit_test(test_accounting_random),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_max_pending),
        cmocka_unit_test(test_max_pending_periodic_rearm),
        cmocka_unit_test(test_allocation_failure),
        cmocka_unit_test(test_reserve_touches_pages),
        cmocka_unit_test(test_mode_errors),
        cmocka_unit_test(test_shutdown_now_returns_unrun),
        cmocka_unit_test(test_failure_reaction),
        cmocka_unit_test(test_cancel_accounting_by_caps),
        cmocka_unit_test(test_monotonic_all_run),
        cmocka_unit_test(test_monotonic_shutdown_now),
        cmocka_unit_test(test_fork_after_start),
    };
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        backend = list[i];
        char name[128];
        snprintf(name, sizeof name, "conformance/%s", backend->name);
        failed += cmocka_run_group_tests_name(name, tests, NULL, NULL);
    }
    return failed ? 1 : 0;
}
