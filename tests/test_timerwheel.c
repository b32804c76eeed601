/*
 * test_timerwheel.c — fidelity tests of the timerwheel backend against
 * Netty's HashedWheelTimer: tick rounding, rounds across revolutions, the
 * inbox transfer limit, lazy cancel and the pending count (Netty #14959),
 * max_pending (periodic re-arms included, DECISIONS D1), the order of a
 * tick's steps and of overdue entries, stop() semantics, huge delays (Netty
 * #7760) and whole revolutions skipped in bulk, the cancel windows of a
 * lock-free schedule (through timerwheel_hook.h), drift and catch-up after
 * a stall (Netty #1959), and the threaded worker with several producers.
 *
 * Virtual-clock tests are exact; threaded tests wait with generous margins
 * and assert only order and accounting, never speed.  Tasks that run on the
 * worker thread only record; the main thread asserts.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testlib.h"
#include "../timerwheel/timerwheel_hook.h"

static struct tb_sched *virt(int64_t tick, int wheel, size_t max_pending)
{
    struct tb_config c = {.clock = TB_CLOCK_VIRTUAL, .tick_ns = tick,
                          .wheel_size = wheel, .max_pending = max_pending};
    return make_sched(unit_backend(), &c);
}

/* Advances in whole ticks so that each run sees the boundary it ran on. */
static long step_to(struct tb_sched *s, int64_t end, int64_t tick)
{
    long ran = 0;
    for (int64_t t = (tb_now(s) / tick + 1) * tick; t <= end; t += tick) {
        long r = tb_advance(s, t);
        assert_true(r >= 0);
        ran += r;
        assert_int_equal(tb_check(s), TB_OK);
    }
    return ran;
}

/* A task that records when it ran. */
struct shot {
    struct tb_sched *s;
    int runs;
    int64_t at;
};

static int shot_task(void *arg)
{
    struct shot *h = arg;
    h->runs++;
    h->at = tb_now(h->s);
    return 0;
}

/* ---- Configuration ----------------------------------------------------- */

static void *refuse_big(void *ctx, size_t size)
{
    (void)ctx;
    return size > ((size_t)1 << 20) ? NULL : malloc(size);
}

static void plain_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    (void)size;
    free(p);
}

static void test_config(void **state)
{
    (void)state;
    struct tb_config got;
    struct tb_sched *s = make_sched(unit_backend(), NULL);
    tb_sched_config(s, &got);
    assert_int_equal(got.tick_ns, 100 * TB_MS); /* Netty's defaults */
    assert_int_equal(got.wheel_size, 512);
    tb_destroy(s);

    s = virt(10 * TB_US, 1000, 0);
    tb_sched_config(s, &got);
    assert_int_equal(got.tick_ns, TB_MS);  /* under 1 ms: clamped */
    assert_int_equal(got.wheel_size, 1024); /* next power of two */
    tb_destroy(s);

    int sizes[][2] = {{1, 1}, {3, 4}, {512, 512}, {513, 1024}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        s = virt(TB_MS, sizes[i][0], 0);
        tb_sched_config(s, &got);
        assert_int_equal(got.wheel_size, sizes[i][1]);
        tb_destroy(s);
    }

    struct tb_config c = {.wheel_size = (1 << 30) + 1};
    assert_int_equal(tb_create(unit_backend(), &c, &s), TB_EINVAL);
    /* 2^30 is accepted: only the allocation (16 GiB of buckets) fails */
    struct tb_allocator small = {refuse_big, plain_free, NULL};
    c = (struct tb_config){.wheel_size = 1 << 30, .allocator = &small};
    assert_int_equal(tb_create(unit_backend(), &c, &s), TB_ENOMEM);
    /* tick * wheel must not overflow */
    c = (struct tb_config){.tick_ns = INT64_MAX / 512, .wheel_size = 512};
    assert_int_equal(tb_create(unit_backend(), &c, &s), TB_EINVAL);
    c.tick_ns = INT64_MAX / 1024;
    assert_int_equal(tb_create(unit_backend(), &c, &s), TB_OK);
    tb_destroy(s);

    assert_true(unit_backend()->caps & TB_CAP_TICKED);
    assert_true(unit_backend()->caps & TB_CAP_LAZY_CANCEL);
}

/* ---- Tick rounding ----------------------------------------------------- */

static void test_delay_shorter_than_tick(void **state)
{
    (void)state;
    struct tb_sched *s = virt(0, 0, 0); /* 100 ms tick */
    struct shot a = {s, 0, 0}, b = {s, 0, 0};
    assert_int_equal(tb_schedule(s, 30 * TB_MS, shot_task, &a, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 0), 0);
    assert_int_equal(tb_advance(s, 99 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 1);
    assert_int_equal(a.at, 100 * TB_MS);

    /* between boundaries: 150 + 10 ms is due at the 200 ms boundary */
    assert_int_equal(tb_advance(s, 150 * TB_MS), 0);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, shot_task, &b, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 199 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 200 * TB_MS), 1);
    assert_int_equal(b.at, 200 * TB_MS);
    assert_balanced(s);
    tb_destroy(s);
}

/* A deadline on a boundary fires on it (Netty's floor would wait a tick);
 * a zero delay at a boundary already passed runs in the next advance. */
static void test_deadline_on_boundary(void **state)
{
    (void)state;
    struct tb_sched *s = virt(10 * TB_MS, 8, 0);
    struct shot a = {s, 0, 0}, z = {s, 0, 0};
    assert_int_equal(tb_schedule(s, 0, shot_task, &z, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 0), 1);
    assert_int_equal(z.at, 0);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, shot_task, &a, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS - 1), 0);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(a.at, 10 * TB_MS);
    assert_int_equal(tb_schedule(s, 0, shot_task, &z, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(z.runs, 2);
    assert_balanced(s);
    tb_destroy(s);
}

/* Exactly k revolutions, and one tick either side of one and two. */
static void test_revolutions(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    const int wheel = 8;
    const int64_t span = wheel * tick;
    int64_t delays[] = {span, 2 * span, 3 * span, span - tick, span + tick,
                        2 * span - tick, 2 * span + tick};
    enum { N = sizeof delays / sizeof delays[0] };
    struct tb_sched *s = virt(tick, wheel, 0);
    struct shot h[N];
    for (int i = 0; i < N; i++) {
        h[i] = (struct shot){s, 0, 0};
        assert_int_equal(tb_schedule(s, delays[i], shot_task, &h[i], NULL),
                         TB_OK);
    }
    assert_int_equal(step_to(s, 4 * span, tick), N);
    for (int i = 0; i < N; i++) {
        assert_int_equal(h[i].runs, 1);
        assert_int_equal(h[i].at, delays[i]);
    }
    assert_balanced(s);
    tb_destroy(s);
}

/* Netty #1959: a task re-arming itself one revolution ahead must not drift,
 * whether it re-schedules itself or is a fixed-rate task. */
struct rearm {
    struct tb_sched *s;
    int64_t delay;
    int runs, limit;
    int64_t at[16];
};

static int rearm_task(void *arg)
{
    struct rearm *r = arg;
    r->at[r->runs++] = tb_now(r->s);
    if (r->runs < r->limit)
        tb_schedule(r->s, r->delay, rearm_task, r, NULL);
    return 0;
}

static void test_no_drift(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    const int64_t span = 8 * tick;
    struct tb_sched *s = virt(tick, 8, 0);
    struct rearm r = {s, span, 0, 10, {0}};
    struct shot p = {s, 0, 0};
    assert_int_equal(tb_schedule(s, span, rearm_task, &r, NULL), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, span, shot_task, &p, NULL, span),
                     TB_OK);
    for (int k = 1; k <= 10; k++) {
        step_to(s, k * span, tick);
        assert_int_equal(r.runs, k);
        assert_int_equal(r.at[k - 1], k * span);
        assert_int_equal(p.runs, k);
        assert_int_equal(p.at, k * span);
    }
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- The inbox --------------------------------------------------------- */

struct on_time {
    struct tb_sched *s;
    int64_t expect;
    long runs, late_or_early;
};

static int on_time_task(void *arg)
{
    struct on_time *o = arg;
    o->runs++;
    o->late_or_early += tb_now(o->s) != o->expect;
    return 0;
}

/* 10^5 timeouts of 125 ms at a 20 ms tick all fire at 140 ms. */
static void test_burst_fires_on_first_boundary(void **state)
{
    (void)state;
    const int64_t tick = 20 * TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct on_time o = {s, 140 * TB_MS, 0, 0};
    for (int i = 0; i < 100000; i++)
        assert_int_equal(tb_schedule(s, 125 * TB_MS, on_time_task, &o, NULL),
                         TB_OK);
    assert_int_equal(step_to(s, 120 * TB_MS, tick), 0);
    assert_int_equal(stats_of(s).transfers, 100000);
    assert_int_equal(tb_advance(s, 140 * TB_MS), 100000);
    assert_int_equal(o.runs, 100000);
    assert_int_equal(o.late_or_early, 0);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* More than 100 000 entries take two ticks to place, then fire together. */
static void test_transfer_limit(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct on_time o = {s, 5 * TB_MS, 0, 0};
    for (int i = 0; i < 100001; i++)
        assert_int_equal(tb_schedule(s, 5 * TB_MS, on_time_task, &o, NULL),
                         TB_OK);
    assert_int_equal(tb_advance(s, 0), 0);
    assert_int_equal(stats_of(s).transfers, 100000);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 0), 0); /* same tick: budget spent */
    assert_int_equal(stats_of(s).transfers, 100000);
    assert_int_equal(tb_advance(s, tick), 0);
    assert_int_equal(stats_of(s).transfers, 100001);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 4 * tick), 0);
    assert_int_equal(tb_advance(s, 5 * tick), 100001);
    assert_int_equal(o.late_or_early, 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Cancel and the pending count -------------------------------------- */

static void test_cancel(void **state)
{
    (void)state;
    struct tb_sched *s = virt(TB_MS, 0, 0);
    struct shot a = {s, 0, 0}, b = {s, 0, 0};
    tb_handle ha, hb;
    assert_int_equal(tb_schedule(s, 3 * TB_MS, shot_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 3 * TB_MS, shot_task, &b, &hb), TB_OK);
    assert_int_equal(tb_advance(s, TB_MS), 0);
    assert_int_equal(tb_cancel(s, ha), 1);
    assert_int_equal(tb_cancel(s, ha), 0);
    assert_int_equal(tb_advance(s, 3 * TB_MS), 1);
    assert_int_equal(a.runs, 0);
    assert_int_equal(b.runs, 1);
    assert_int_equal(tb_cancel(s, hb), 0); /* already ran */
    assert_int_equal(tb_cancel(s, hb ^ ((tb_handle)1 << 32)), 0);
    assert_int_equal(tb_cancel(s, 0xdeadbeefULL), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.fired, 1);
    assert_balanced(s);
    tb_destroy(s);
}

/* A cancelled timeout stays counted (a zombie) until the next tick. */
static void test_pending_drops_next_tick_once(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 0);
    tb_handle h[4];
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_schedule(s, 20 * tick, noop_task, NULL, &h[i]),
                         TB_OK);
    assert_int_equal(tb_cancel(s, h[3]), 1); /* still in the inbox */
    assert_int_equal(tb_pending(s), 4);
    assert_int_equal(tb_advance(s, 0), 0); /* tick 0 */
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(stats_of(s).transfers, 3); /* the cancelled one skipped */
    assert_int_equal(tb_cancel(s, h[0]), 1); /* in a bucket now */
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(stats_of(s).zombies, 1);
    assert_balanced(s);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, tick - 1), 0); /* no tick yet */
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(tb_advance(s, tick), 0);
    assert_int_equal(tb_pending(s), 2);
    assert_int_equal(stats_of(s).zombies, 0);
    assert_int_equal(step_to(s, 19 * tick, tick), 0);
    assert_int_equal(tb_pending(s), 2);
    assert_int_equal(tb_advance(s, 20 * tick), 2);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(step_to(s, 40 * tick, tick), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* Netty #14959: timeouts cancelled in their own due tick, by a task of that
 * tick, leave the pending count once (it went negative there). */
struct canceller {
    struct tb_sched *s;
    tb_handle h[11];
    int runs, cancelled;
};

static int cancel_others_task(void *arg)
{
    struct canceller *c = arg;
    if (c->runs++ == 0)
        for (int i = 0; i < 11; i++)
            c->cancelled += tb_cancel(c->s, c->h[i]) == 1;
    return 0;
}

static void test_cancel_in_due_tick(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct canceller c = {.s = s};
    for (int i = 0; i < 11; i++)
        assert_int_equal(
            tb_schedule(s, 5 * tick, cancel_others_task, &c, &c.h[i]), TB_OK);
    assert_int_equal(tb_advance(s, 5 * tick), 1);
    assert_int_equal(c.runs, 1);
    assert_int_equal(c.cancelled, 10); /* all but the one running */
    assert_int_equal(tb_pending(s), 10); /* until the next tick */
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 6 * tick), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(step_to(s, 20 * tick, tick), 0);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.cancelled, 10);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.zombies, 0);
    assert_balanced(s);
    tb_destroy(s);
}

static void test_max_pending(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 3);
    tb_handle h[3];
    for (int i = 0; i < 3; i++)
        assert_int_equal(tb_schedule(s, 10 * tick, noop_task, NULL, &h[i]),
                         TB_OK);
    tb_handle x = 1;
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, &x), TB_EFULL);
    assert_int_equal(x, TB_HANDLE_NONE);
    assert_int_equal(tb_cancel(s, h[1]), 1);
    /* the cancelled timeout keeps its place until the worker processes it */
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL), TB_EFULL);
    assert_int_equal(tb_advance(s, 0), 0);
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL), TB_EFULL);
    assert_int_equal(tb_advance(s, tick), 1); /* a run frees a place too */
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.rejected, 3);
    assert_int_equal(st.submitted, 5);
    assert_int_equal(st.peak_pending, 3);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Shutdown ---------------------------------------------------------- */

struct seen {
    tb_handle h[8];
    int n;
};

static void visit(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    struct seen *v = ctx;
    (void)arg;
    assert_ptr_equal(fn, noop_task);
    v->h[v->n++] = h;
}

static int seen_has(const struct seen *v, tb_handle h)
{
    for (int i = 0; i < v->n; i++)
        if (v->h[i] == h)
            return 1;
    return 0;
}

static void test_shutdown_now(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 0);
    tb_handle ran, near, far, gone, fresh;
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, &ran), TB_OK);
    assert_int_equal(tb_schedule(s, 5 * tick, noop_task, NULL, &near), TB_OK);
    assert_int_equal(tb_schedule(s, 50 * tick, noop_task, NULL, &far), TB_OK);
    assert_int_equal(tb_schedule(s, 5 * tick, noop_task, NULL, &gone), TB_OK);
    assert_int_equal(tb_advance(s, tick), 1);
    assert_int_equal(tb_cancel(s, gone), 1);
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, &fresh), TB_OK);

    struct seen v = {.n = 0};
    assert_int_equal(tb_shutdown_now(s, visit, &v), 3);
    assert_int_equal(v.n, 3);
    assert_true(seen_has(&v, near) && seen_has(&v, far) &&
                seen_has(&v, fresh));
    assert_int_equal(tb_shutdown_now(s, visit, &v), 0);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL),
                     TB_ESHUTDOWN);
    assert_int_equal(tb_cancel(s, near), 0);
    assert_int_equal(tb_advance(s, 100 * tick), 0);
    assert_int_equal(tb_pending(s), 0);
    /* Deliberately unlike Netty's stop(), which cancels what it returns
     * and leaves pendingTimeouts counting them: returned timeouts are
     * dropped, not cancelled, and leave the pending count (README). */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 3);
    assert_int_equal(st.cancelled, 1); /* `gone` only */
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(st.finished, 1);
    assert_balanced(s);
    assert_int_equal(tb_await_termination(s, 0), TB_OK);
    tb_destroy(s);
}

struct stopper {
    struct tb_sched *s;
    long rc;
    _Atomic int done;
};

static int stop_task(void *arg)
{
    struct stopper *p = arg;
    p->rc = tb_shutdown_now(p->s, NULL, NULL);
    atomic_store(&p->done, 1);
    return 0;
}

/* As HashedWheelTimer.stop() throws from a TimerTask. */
/* stop() hands back the wheel's timeouts bucket by bucket, each bucket
 * head to tail, over buckets in several words of the occupancy bitmap
 * (each search for the next bucket goes on from the last one found). */
static void test_shutdown_now_bucket_order(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 256, 0);
    const int64_t at[] = {200, 70, 3, 130, 259, 70};
    tb_handle h[6];
    for (int i = 0; i < 6; i++)
        assert_int_equal(tb_schedule(s, at[i] * tick, noop_task, NULL, &h[i]),
                         TB_OK);
    assert_int_equal(tb_advance(s, tick), 0); /* the inbox moves in */
    struct seen v = {.n = 0};
    assert_int_equal(tb_shutdown_now(s, visit, &v), 6);
    /* buckets 3 (3, then 259 a round later), 70 (both), 130, 200 */
    const int order[] = {2, 4, 1, 5, 3, 0};
    assert_int_equal(v.n, 6);
    for (int i = 0; i < 6; i++)
        assert_true(v.h[i] == h[order[i]]);
    assert_int_equal(tb_pending(s), 0);
    tb_destroy(s);
}

static void test_shutdown_now_inside_task(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct stopper p = {s, 0, 0};
    struct shot later = {s, 0, 0};
    assert_int_equal(tb_schedule(s, tick, stop_task, &p, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 2 * tick, shot_task, &later, NULL), TB_OK);
    assert_int_equal(tb_advance(s, tick), 1);
    assert_int_equal(p.rc, TB_ESTATE);
    assert_int_equal(tb_advance(s, 2 * tick), 1); /* nothing was stopped */
    assert_int_equal(later.runs, 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    tb_destroy(s);
}

struct quitter {
    struct tb_sched *s;
    long dropped;
};

static int shutdown_task(void *arg)
{
    struct quitter *q = arg;
    q->dropped = tb_shutdown(q->s);
    return 0;
}

/* tb_shutdown (no Netty equivalent) may come from a task: it drops the
 * rest, including timeouts of the same tick not run yet. */
static void test_shutdown_inside_task(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct quitter q = {s, -1};
    struct shot p = {s, 0, 0};
    assert_int_equal(tb_schedule(s, tick, shutdown_task, &q, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, tick, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 9 * tick, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 0, shot_task, &p, NULL, tick),
                     TB_OK);
    assert_int_equal(tb_advance(s, 0), 1);
    assert_int_equal(tb_advance(s, tick), 1); /* the shutdown task only */
    assert_int_equal(q.dropped, 3); /* same tick, far one, periodic re-arm */
    assert_int_equal(tb_advance(s, 10 * tick), 0);
    assert_int_equal(p.runs, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Failures, huge delays, periodic tasks ----------------------------- */

static int fail_task(void *arg)
{
    struct shot *h = arg;
    h->runs++;
    return -1;
}

static void test_failing_task(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct shot f = {s, 0, 0}, a = {s, 0, 0}, b = {s, 0, 0}, p = {s, 0, 0};
    assert_int_equal(tb_schedule(s, tick, fail_task, &f, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, tick, shot_task, &a, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 2 * tick, shot_task, &b, NULL), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, tick, fail_task, &p, NULL, tick),
                     TB_OK);
    assert_int_equal(step_to(s, 5 * tick, tick), 4);
    assert_int_equal(f.runs, 1);
    assert_int_equal(a.runs, 1);
    assert_int_equal(b.runs, 1);
    assert_int_equal(p.runs, 1); /* a failing periodic task stops */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 4);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.finished, 4);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* Netty #7760: a huge delay must neither overflow nor fire early. */
static void test_huge_delay(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct shot a = {s, 0, 0}, b = {s, 0, 0};
    assert_int_equal(tb_schedule(s, TB_MAX_DELAY, shot_task, &a, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 5 * TB_SEC + 3), 0);
    assert_int_equal(tb_schedule(s, TB_MAX_DELAY, shot_task, &b, NULL), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 24 * 3600 * TB_SEC), 0);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(a.runs + b.runs, 0);
    assert_int_equal(tb_pending(s), 2);
    /* ticks skipped in bulk are still counted, one by one */
    assert_int_equal(stats_of(s).ticks, 24 * 3600 * 1000 + 1);
    /* (tb_check above proved both are filed for their exact due tick;
     * walking 2^62 ns of 1 ms ticks to see them fire would take hours) */
    assert_int_equal(tb_schedule(s, TB_MAX_DELAY + 1, noop_task, NULL, NULL),
                     TB_ERANGE);
    assert_int_equal(tb_pending(s), 2);
    assert_balanced(s);
    tb_destroy(s);
}

static void test_periodic(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe rate = {.rec = &rec, .id = 1};
    struct probe delay = {.rec = &rec, .id = 2, .spend = 2 * TB_MS};
    struct probe self = {.rec = &rec, .id = 3, .cancel_self_at = 2};
    /* fixed rate with a period of 3 ticks: catch-up within one advance */
    assert_int_equal(tb_schedule_fixed_rate(s, tick, probe_task, &rate,
                                            &rate.self, 3 * tick),
                     TB_OK);
    assert_int_equal(tb_advance(s, 10 * tick), 4); /* 1, 4, 7, 10 */
    assert_int_equal(rec_runs_of(&rec, 1), 4);
    assert_int_equal(tb_cancel(s, rate.self), 1);
    /* fixed delay counts from the end of the run */
    assert_int_equal(tb_schedule_fixed_delay(s, tick, probe_task, &delay,
                                             &delay.self, 5 * tick),
                     TB_OK);
    assert_int_equal(
        tb_schedule_fixed_rate(s, tick, probe_task, &self, &self.self, tick),
        TB_OK);
    for (int64_t t = 11 * tick; t <= 30 * tick; t += tick)
        if (t >= tb_now(s))
            assert_true(tb_advance(s, t) >= 0);
    size_t k = 0;
    int64_t expect[] = {11, 18, 25};
    for (size_t i = 0; i < rec.n; i++)
        if (rec.runs[i].id == 2) {
            assert_true(k < 3);
            assert_int_equal(rec.runs[i].at, expect[k++] * tick);
        }
    assert_int_equal(k, 3);
    assert_int_equal(self.runs, 2);
    assert_int_equal(self.cancel_result, 1);
    assert_int_equal(tb_cancel(s, self.self), 0);
    assert_int_equal(tb_cancel(s, delay.self), 1);
    assert_int_equal(tb_advance(s, tb_now(s) + 10 * tick) >= 0, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Wheels order by tick: within one long advance, a fixed-rate task with a
 * period under a tick runs every repetition due at tick k before anything
 * due at tick k + 1. */
static void test_catch_up_orders_by_tick(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 0, 0);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 1}, b = {.rec = &rec, .id = 2};
    assert_int_equal(
        tb_schedule_fixed_rate(s, 0, probe_task, &a, NULL, tick / 2), TB_OK);
    assert_int_equal(tb_schedule(s, 2 * tick, probe_task, &b, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 2 * tick), 6); /* a at 0, .5, 1, 1.5, 2 */
    assert_int_equal(rec_runs_of(&rec, 1), 5);
    size_t before_b = 0;
    while (before_b < rec.n && rec.runs[before_b].id != 2)
        before_b++;
    assert_true(before_b >= 3); /* a's runs due by tick 1 came first */
    assert_int_equal(tb_check(s), TB_OK);
    rec_free(&rec);
    tb_destroy(s);
}

/* DECISIONS D1: a periodic re-arm that finds max_pending reached is
 * refused like a schedule (Netty's newTimeout throws when run() re-arms):
 * the task retires as finished, the refusal counts once in `rejected`, and
 * the pending count never passes the cap.  A zombie (cancelled, not yet
 * processed) holds its place against a re-arm as against a schedule. */
struct filler {
    struct tb_sched *s;
    int runs, rc;
};

static int fill_once(void *arg)
{
    struct filler *f = arg;
    if (f->runs++ == 0)
        f->rc = tb_schedule(f->s, 50 * TB_MS, noop_task, NULL, NULL);
    return 0;
}

static void test_rearm_refused_at_cap(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 2);
    tb_handle far, hp;
    assert_int_equal(tb_schedule(s, 100 * tick, noop_task, NULL, &far), TB_OK);
    struct filler f = {.s = s, .rc = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, tick, fill_once, &f, &hp, tick),
                     TB_OK);
    for (int64_t t = tick; t <= 10 * tick; t += tick) {
        assert_true(tb_advance(s, t) >= 0);
        assert_true(tb_pending(s) <= 2);
        assert_int_equal(tb_check(s), TB_OK);
    }
    assert_int_equal(f.rc, TB_OK);   /* the run's own schedule got the place */
    assert_int_equal(f.runs, 1);     /* ... so its re-arm was refused */
    assert_int_equal(tb_cancel(s, hp), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.peak_pending, 2);
    assert_int_equal(tb_pending(s), 2);
    assert_balanced(s);
    /* a zombie keeps its place until the next tick */
    assert_int_equal(tb_cancel(s, far), 1);  /* pending 2: one zombie */
    assert_int_equal(tb_schedule_fixed_rate(s, 0, noop_task, NULL, NULL, tick),
                     TB_EFULL);
    assert_int_equal(tb_advance(s, 11 * tick), 0); /* zombie processed */
    assert_int_equal(tb_pending(s), 1);
    /* with a place free, a periodic task's re-arm always finds its own */
    struct recorder rec;
    rec_init(&rec, s);
    struct probe g = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, tick, probe_task, &g, &hp,
                                            tick), TB_OK);
    assert_int_equal(tb_advance(s, 15 * tick), 4); /* 12, 13, 14, 15 */
    assert_int_equal(g.runs, 4);
    assert_int_equal(tb_pending(s), 2);
    assert_int_equal(tb_cancel(s, hp), 1);
    rec_free(&rec);
    st = stats_of(s);
    assert_int_equal(st.rejected, 2);
    assert_true(st.peak_pending <= 2);
    assert_balanced(s);
    tb_destroy(s);
}

/* Defects 4 and the budget: 100 000 cancelled inbox entries use up the
 * tick's transfer budget, as in Netty, so a live entry behind them waits a
 * tick in the inbox and is overdue when placed.  It then runs ahead of the
 * entry that is due at that later tick (Netty would append it to the
 * bucket's tail and run it after): wheels run in tick order. */
static void test_overdue_runs_before_bucket(void **state)
{
    (void)state;
    enum { N = 100000 };
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 0);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe later = {.rec = &rec, .id = 1}, held = {.rec = &rec, .id = 2};
    assert_int_equal(tb_schedule(s, 2 * tick, probe_task, &later, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 0), 0); /* `later` sits in bucket 2 */
    assert_int_equal(stats_of(s).transfers, 1);
    tb_handle *h = malloc(N * sizeof *h);
    assert_non_null(h);
    for (int i = 0; i < N; i++)
        assert_int_equal(tb_schedule(s, 5 * tick, noop_task, NULL, &h[i]),
                         TB_OK);
    for (int i = 0; i < N; i++)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    free(h);
    assert_int_equal(tb_schedule(s, tick, probe_task, &held, NULL), TB_OK);
    /* tick 1: the cancelled entries take the whole budget */
    assert_int_equal(tb_advance(s, tick), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.transfers, 1);
    assert_int_equal(held.runs, 0);
    assert_int_equal(tb_pending(s), 2);
    assert_int_equal(tb_check(s), TB_OK);
    /* tick 2: `held` (due at tick 1) first, then the bucket's `later` */
    assert_int_equal(tb_advance(s, 2 * tick), 2);
    assert_int_equal(rec.n, 2);
    assert_int_equal(rec.runs[0].id, 2);
    assert_int_equal(rec.runs[1].id, 1);
    st = stats_of(s);
    assert_int_equal(st.transfers, 2);
    assert_int_equal(st.visits, 1); /* only `later` was walked */
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Defect 5: the tick processes cancels before it walks (Netty 4.1), so a
 * timeout cancelled before its bucket's turn is never visited; 4.2's order
 * (cancels after the walk) would visit and unlink it there. */
static void test_cancel_processed_before_walk(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 0);
    tb_handle h;
    struct shot keep = {s, 0, 0};
    /* due at tick 11: bucket 3, one round to wait */
    assert_int_equal(tb_schedule(s, 11 * tick, noop_task, NULL, &h), TB_OK);
    assert_int_equal(tb_schedule(s, 3 * tick, shot_task, &keep, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 2 * tick), 0);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_int_equal(tb_pending(s), 2);
    assert_int_equal(tb_advance(s, 3 * tick), 1); /* bucket 3's turn */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.visits, 1);  /* `keep` only */
    assert_int_equal(st.rounds, 0);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- The cancel windows of a lock-free schedule ------------------------ */

/* tb_pool_get publishes a record as WAITING before schedule has filled it
 * and pushed it (core/tb_core.h), and a re-arm is WAITING again before its
 * push; another thread may cancel in either window.  The hook stops the
 * scheduling thread there and cancels, each window in turn. */
static enum tw_hook_point window;
static int window_hits, window_cancel;

static void cancel_in_window(struct tb_sched *s, enum tw_hook_point at,
                             tb_handle h)
{
    if (at != window || window_hits++)
        return;
    window_cancel = tb_cancel(s, h);
}

static void arm_window(enum tw_hook_point at)
{
    window = at;
    window_hits = 0;
    window_cancel = -1;
    tw_test_hook = cancel_in_window;
}

static void test_cancel_in_schedule_window(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    /* once on its own, once with another task already in the inbox */
    for (int k = 0; k < 2; k++) {
        struct tb_sched *s = virt(tick, 8, 0);
        struct shot w = {s, 0, 0};
        if (k)
            assert_int_equal(tb_schedule(s, 5 * tick, shot_task, &w, NULL),
                             TB_OK);
        struct shot x = {s, 0, 0}, y = {s, 0, 0};
        tb_handle hx, hy;
        arm_window(TW_HOOK_PUBLISHED);
        assert_int_equal(tb_schedule(s, 5 * tick, shot_task, &x, &hx), TB_OK);
        tw_test_hook = NULL;
        assert_int_equal(window_hits, 1);
        assert_int_equal(window_cancel, 1); /* it prevented the run */
        assert_int_not_equal(hx, TB_HANDLE_NONE);
        assert_int_equal(tb_cancel(s, hx), 0);
        struct tb_stats st = stats_of(s);
        assert_int_equal(st.cancelled, 1);
        assert_int_equal(st.zombies, 1);
        assert_int_equal(tb_pending(s), 1 + k); /* until the next tick */
        assert_balanced(s);
        assert_int_equal(tb_check(s), TB_OK);
        /* the slot is not freed under the inbox: a new task is unharmed */
        assert_int_equal(tb_schedule(s, 5 * tick, shot_task, &y, &hy), TB_OK);
        assert_int_equal(tb_advance(s, 0), 0);
        assert_int_equal(tb_pending(s), 1 + k);
        assert_int_equal(stats_of(s).transfers, 1 + k);
        assert_int_equal(tb_advance(s, 10 * tick), 1 + k);
        assert_int_equal(x.runs, 0);
        assert_int_equal(y.runs, 1);
        assert_int_equal(w.runs, k);
        assert_int_equal(tb_cancel(s, hx), 0);
        st = stats_of(s);
        assert_int_equal(st.zombies, 0);
        assert_int_equal(st.cancelled, 1);
        assert_int_equal(tb_pending(s), 0);
        assert_balanced(s);
        assert_int_equal(tb_check(s), TB_OK);
        tb_destroy(s);
    }
}

static void test_cancel_in_rearm_window(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 8, 0);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    arm_window(TW_HOOK_REARMED);
    assert_int_equal(tb_schedule_fixed_rate(s, tick, probe_task, &p, &p.self,
                                            tick), TB_OK);
    assert_int_equal(tb_advance(s, tick), 1);
    tw_test_hook = NULL;
    assert_int_equal(window_hits, 1);
    assert_int_equal(window_cancel, 1);
    assert_int_equal(tb_cancel(s, p.self), 0);
    assert_int_equal(tb_pending(s), 1); /* the re-armed zombie */
    assert_balanced(s);
    assert_int_equal(tb_advance(s, 10 * tick), 0);
    assert_int_equal(p.runs, 1);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.finished, 0);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    assert_int_equal(tb_check(s), TB_OK);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Whole revolutions skipped in bulk --------------------------------- */

/* The virtual clock across the whole clock: a TB_MAX_DELAY timeout on a
 * 1 ms tick waits about 9 x 10^9 revolutions of 512 buckets; walking them
 * one by one would take hours (main did).  Skipped in bulk, the counters
 * are still those of the per-tick walk, and the timeout fires on its tick. */
static void test_advance_across_the_clock(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 512, 0);
    struct shot a = {s, 0, 0};
    assert_int_equal(tb_schedule(s, TB_MAX_DELAY, shot_task, &a, NULL), TB_OK);
    const int64_t due = (TB_MAX_DELAY + tick - 1) / tick; /* filed at tick 0 */
    const int64_t b = due & 511;
    const int64_t last = (TB_MAX_DELAY - TB_SEC) / tick;
    assert_int_equal(tb_advance(s, TB_MAX_DELAY - TB_SEC), 0);
    assert_int_equal(tb_check(s), TB_OK); /* rounds left match the due tick */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.ticks, last + 1);
    assert_int_equal(st.empty_ticks, last + 1);
    assert_int_equal(st.visits, (last - b) / 512 + 1); /* bucket b's turns */
    assert_int_equal(st.rounds, st.visits);
    assert_int_equal(tb_advance(s, due * tick - 1), 0);
    assert_int_equal(tb_advance(s, due * tick), 1);
    assert_int_equal(a.runs, 1);
    assert_int_equal(a.at, due * tick);
    st = stats_of(s);
    assert_int_equal(st.rounds, due / 512);  /* every one of its rounds */
    assert_int_equal(st.visits, due / 512 + 1);
    assert_int_equal(st.ticks, due + 1);
    assert_int_equal(st.empty_ticks, due);
    assert_balanced(s);
    tb_destroy(s);
}

/* One scheduler advances in long jumps (whole revolutions skipped), the
 * other in steps shorter than a revolution (never skipped): every counter,
 * every run and its time agree, and the checker holds at each step. */
static int twin_run(void *arg)
{
    struct probe *p = arg;
    return probe_task(p);
}

static void test_bulk_skip_matches_walk(void **state)
{
    (void)state;
    enum { N = 24 };
    const int64_t tick = TB_MS;
    struct tb_sched *s[2] = {virt(tick, 8, 0), virt(tick, 8, 0)};
    struct recorder rec[2];
    static struct probe p[2][N];
    for (int k = 0; k < 2; k++) {
        rec_init(&rec[k], s[k]);
        uint64_t rng = 5;
        for (int i = 0; i < N; i++) {
            p[k][i] = (struct probe){.rec = &rec[k], .id = i};
            int64_t d = rng_range(&rng, 1, 3000) * tick + (i % 3);
            int rc = i % 8 == 0
                         ? tb_schedule_fixed_rate(s[k], d, twin_run, &p[k][i],
                                                  NULL, 700 * tick)
                         : tb_schedule(s[k], d, twin_run, &p[k][i], NULL);
            assert_int_equal(rc, TB_OK);
        }
    }
    int64_t jumps[] = {0, 5, 400, 401, 2999, 3001, 6000, 20000};
    for (size_t j = 0; j < sizeof jumps / sizeof *jumps; j++) {
        int64_t to = jumps[j] * tick;
        assert_true(tb_advance(s[0], to) >= 0);
        for (int64_t t = tb_now(s[1]) + 3 * tick; t < to; t += 3 * tick)
            assert_true(tb_advance(s[1], t) >= 0);
        assert_true(tb_advance(s[1], to) >= 0);
        assert_int_equal(tb_check(s[0]), TB_OK);
        assert_int_equal(tb_check(s[1]), TB_OK);
        struct tb_stats a = stats_of(s[0]), b = stats_of(s[1]);
        assert_int_equal(a.ticks, b.ticks);
        assert_int_equal(a.empty_ticks, b.empty_ticks);
        assert_int_equal(a.visits, b.visits);
        assert_int_equal(a.rounds, b.rounds);
        assert_int_equal(a.fired, b.fired);
        assert_int_equal(a.transfers, b.transfers);
        assert_int_equal(rec[0].n, rec[1].n);
    }
    assert_true(stats_of(s[0]).rounds > 0);
    /* the same runs in the same order (the recorded times differ: a
     * virtual run sees the time its advance was called with) */
    for (size_t i = 0; i < rec[0].n; i++)
        assert_int_equal(rec[0].runs[i].id, rec[1].runs[i].id);
    for (int k = 0; k < 2; k++) {
        assert_balanced(s[k]);
        rec_free(&rec[k]);
        tb_destroy(s[k]);
    }
}

/* ---- Ticks, visits and the invariant checker --------------------------- */

static void test_ticks_and_visits(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *a = virt(tick, 8, 0), *b = virt(tick, 8, 0);
    assert_int_equal(tb_advance(a, 10 * tick), 0);
    struct tb_stats st = stats_of(a);
    assert_int_equal(st.ticks, 11); /* ticks 0 .. 10 */
    assert_int_equal(st.empty_ticks, 11);
    /* due at 100 ms on an 8-tick wheel, filed at tick 11: bucket 4,
     * 11 rounds, one visit per turn */
    struct shot x = {a, 0, 0}, y = {b, 0, 0};
    assert_int_equal(tb_schedule(a, 90 * tick, shot_task, &x, NULL), TB_OK);
    assert_int_equal(tb_advance(b, 10 * tick), 0);
    assert_int_equal(tb_schedule(b, 90 * tick, shot_task, &y, NULL), TB_OK);
    /* one scheduler jumps, the other steps: same counters */
    assert_int_equal(tb_advance(a, 60 * tick), 0);
    step_to(b, 60 * tick, tick);
    struct tb_stats sa = stats_of(a), sb = stats_of(b);
    assert_int_equal(sa.ticks, sb.ticks);
    assert_int_equal(sa.ticks, 61);
    assert_int_equal(sa.empty_ticks, sb.empty_ticks);
    assert_int_equal(sa.visits, 7); /* ticks 12, 20, .. 60 */
    assert_int_equal(sb.visits, 7);
    assert_int_equal(tb_advance(a, 100 * tick), 1);
    assert_int_equal(x.at, 100 * tick);
    assert_int_equal(stats_of(a).visits, 12); /* 11 decrements, 1 expiry */
    assert_int_equal(stats_of(a).empty_ticks, 100);
    tb_destroy(a);
    tb_destroy(b);
}

/* DECISIONS D2: exact work counters for a case checked by hand.  Wheel of
 * 4 one-millisecond buckets, everything scheduled at time 0 and moved in at
 * tick 0 (transfers 4: D is cancelled in the inbox and skipped):
 *   A due 1: bucket 1, rounds 0     B due 9: bucket 1, rounds 2
 *   C due 6: bucket 2, rounds 1     E due 7: bucket 3, rounds 1
 * Walks: tick 1 A expires, B 2 -> 1; tick 2 C 1 -> 0; tick 3 E 1 -> 0;
 * E is cancelled at 4 ms and unlinked at tick 5, never walked again;
 * tick 5 B 1 -> 0; tick 6 C expires; tick 9 B expires.
 * visits 7 (A, B, C, E, B, C, B), rounds 4 (B, C, E, B). */
static void test_work_counters(void **state)
{
    (void)state;
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 4, 0);
    struct shot a = {s, 0, 0}, b = {s, 0, 0}, c = {s, 0, 0}, d = {s, 0, 0},
                e = {s, 0, 0};
    tb_handle hd, he;
    assert_int_equal(tb_schedule(s, 1 * tick, shot_task, &a, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 9 * tick, shot_task, &b, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 6 * tick, shot_task, &c, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 6 * tick, shot_task, &d, &hd), TB_OK);
    assert_int_equal(tb_schedule(s, 7 * tick, shot_task, &e, &he), TB_OK);
    assert_int_equal(tb_cancel(s, hd), 1);
    assert_int_equal(step_to(s, 4 * tick, tick), 1);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.transfers, 4);
    assert_int_equal(st.visits, 4);
    assert_int_equal(st.rounds, 3);
    assert_int_equal(tb_cancel(s, he), 1);
    assert_int_equal(step_to(s, 10 * tick, tick), 2);
    st = stats_of(s);
    assert_int_equal(st.ticks, 11);
    assert_int_equal(st.transfers, 4);
    assert_int_equal(st.visits, 7);
    assert_int_equal(st.rounds, 4);
    assert_int_equal(st.fired, 3);
    assert_int_equal(st.cancelled, 2);
    assert_int_equal(st.pending, 0);
    assert_int_equal(a.at, 1 * tick);
    assert_int_equal(c.at, 6 * tick);
    assert_int_equal(b.at, 9 * tick);
    assert_int_equal(d.runs + e.runs, 0);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* The due tick comes from a precomputed reciprocal of the tick, not a
 * division: on a tick that is no round number, every deadline one below,
 * on and one above a boundary fires on the first boundary at or after it. */
static void test_due_tick_reciprocal(void **state)
{
    (void)state;
    const int64_t tick = TB_MS + 7; /* odd, not a power of two */
    const int64_t ks[] = {1, 2, 3, 511, 512, 513, 100000};
    enum { NK = sizeof ks / sizeof ks[0] };
    for (int i = 0; i < NK; i++) {
        for (int64_t off = -1; off <= 1; off++) {
            struct tb_sched *s = virt(tick, 512, 0);
            struct shot x = {s, 0, 0};
            int64_t delay = ks[i] * tick + off;
            assert_int_equal(tb_schedule(s, delay, shot_task, &x, NULL),
                             TB_OK);
            int64_t due = off > 0 ? ks[i] + 1 : ks[i];
            assert_int_equal(tb_advance(s, (due - 1) * tick), 0);
            assert_int_equal(tb_advance(s, due * tick), 1);
            assert_int_equal(x.at, due * tick);
            assert_int_equal(tb_check(s), TB_OK);
            tb_destroy(s);
        }
    }
}

struct rnd_task {
    struct tb_sched *s;
    int64_t deadline;
    int runs;
    int early;
};

static int rnd_run(void *arg)
{
    struct rnd_task *t = arg;
    t->runs++;
    t->early += tb_now(t->s) < t->deadline;
    return 0;
}

/* A seeded mix of schedules, cancels and advances, checked after every
 * step: never early, exactly once, and the structure stays consistent. */
static void test_random_workload(void **state)
{
    (void)state;
    enum { N = 3000 };
    const int64_t tick = TB_MS;
    struct tb_sched *s = virt(tick, 16, 0);
    struct rnd_task *t = calloc(N, sizeof *t);
    tb_handle *h = calloc(N, sizeof *h);
    int *cancelled = calloc(N, sizeof *cancelled);
    assert_non_null(t);
    assert_non_null(h);
    assert_non_null(cancelled);
    uint64_t seed = 42;
    int n = 0;
    while (n < N) {
        int64_t op = rng_range(&seed, 0, 9);
        if (op < 6) {
            int64_t delay = rng_range(&seed, 0, 60 * tick);
            t[n] = (struct rnd_task){s, tb_now(s) + delay, 0, 0};
            assert_int_equal(tb_schedule(s, delay, rnd_run, &t[n], &h[n]),
                             TB_OK);
            n++;
        } else if (op < 8) {
            int i = (int)rng_range(&seed, 0, n - 1);
            int r = tb_cancel(s, h[i]);
            assert_true(r == 0 || (r == 1 && t[i].runs == 0 && !cancelled[i]));
            cancelled[i] |= r;
        } else {
            assert_true(
                tb_advance(s, tb_now(s) + rng_range(&seed, 0, 3 * tick)) >= 0);
        }
        assert_int_equal(tb_check(s), TB_OK);
    }
    assert_true(tb_advance(s, tb_now(s) + 200 * tick) >= 0);
    for (int i = 0; i < N; i++) {
        assert_int_equal(t[i].early, 0);
        assert_int_equal(t[i].runs + cancelled[i], 1);
    }
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    free(t);
    free(h);
    free(cancelled);
    tb_destroy(s);
}

/* ---- Threaded mode ----------------------------------------------------- */

static struct tb_sched *threaded(int64_t tick)
{
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = tick,
                          .wheel_size = 64};
    return make_sched(unit_backend(), &c);
}

struct rt_task {
    struct tb_sched *s;
    int64_t not_before;
    _Atomic int runs;
    _Atomic int early;
};

static int rt_run(void *arg)
{
    struct rt_task *t = arg;
    atomic_fetch_add(&t->runs, 1);
    if (tb_now(t->s) < t->not_before)
        atomic_fetch_add(&t->early, 1);
    return 0;
}

struct count_ctx {
    struct tb_sched *s;
    struct rt_task *t;
    int n;
};

/* Every timeout ran to its end or was cancelled, and none is pending. */
static int all_settled(void *arg)
{
    struct count_ctx *c = arg;
    struct tb_stats st;
    tb_stats(c->s, &st);
    return st.fired + st.cancelled == (uint64_t)c->n && st.pending == 0;
}

static int some_empty_ticks(void *arg)
{
    struct tb_stats st;
    tb_stats(((struct count_ctx *)arg)->s, &st);
    return st.empty_ticks >= 3;
}

static int some_wakeups(void *arg)
{
    struct tb_stats st;
    tb_stats(((struct count_ctx *)arg)->s, &st);
    return st.wakeups >= 1;
}

static void test_threaded_basic(void **state)
{
    (void)state;
    enum { N = 20 };
    struct tb_sched *s = threaded(TB_MS);
    struct rt_task t[N];
    /* scheduled before the worker starts: deadlines wait for it */
    for (int i = 0; i < N; i++) {
        t[i].s = s;
        t[i].not_before = tb_now(s) + i * TB_MS;
        atomic_init(&t[i].runs, 0);
        atomic_init(&t[i].early, 0);
        assert_int_equal(tb_schedule(s, i * TB_MS, rt_run, &t[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_pending(s), N);
    assert_int_equal(tb_advance(s, 1), TB_ESTATE);
    assert_int_equal(tb_start(s), TB_OK);
    assert_int_equal(tb_start(s), TB_ESTATE);
    struct count_ctx c = {s, t, N};
    assert_true(wait_until(all_settled, &c, 10 * TB_SEC));
    assert_true(wait_until(some_empty_ticks, &c, 10 * TB_SEC));
    /* a worker that was behind until now may still be in its first wait */
    assert_true(wait_until(some_wakeups, &c, 10 * TB_SEC));
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&t[i].runs), 1);
        assert_int_equal(atomic_load(&t[i].early), 0);
    }
    assert_int_equal(tb_check(s), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_true(st.ticks > 0);
    assert_true(st.timed_waits > 0);
    assert_true(st.wakeups > 0);
    assert_int_equal(st.fired, N);
    assert_int_equal(tb_await_termination(s, 0), TB_ESTATE);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_int_equal(tb_start(s), TB_ESTATE); /* started once already */
    assert_balanced(s);
    tb_destroy(s);
}

/* Netty's waitForNextTick (4.1) sleeps Thread.sleep((deadline - currentTime
 * + 999999) / 1000000): whole milliseconds rounded up, counted from its
 * reading of the clock.  The sleep hook shows every sleep the worker takes:
 * by default each lasts a whole number of milliseconds and ends at or
 * after the tick's boundary, less than 1 ms past it; with TB_F_EXACT_SLEEP
 * each ends on the boundary itself.  Either way no timeout runs before the
 * first boundary at or after its deadline.  Times are asserted only as
 * order and arithmetic of the worker's own readings, never as speed. */
enum { SLEEPS_MAX = 512, SLEEP_TASKS = 8 };

static struct {
    struct tb_sched *s;
    _Atomic size_t n;         /* the entries are written by the worker, and
                                 read after it has terminated */
    int64_t now[SLEEPS_MAX], until[SLEEPS_MAX], target[SLEEPS_MAX];
} sleeps;

static void record_sleep(struct tb_sched *s, int64_t now, int64_t until,
                         int64_t target)
{
    size_t n = atomic_load(&sleeps.n);
    if (s != sleeps.s || n == SLEEPS_MAX)
        return;
    sleeps.now[n] = now;
    sleeps.until[n] = until;
    sleeps.target[n] = target;
    atomic_store(&sleeps.n, n + 1);
}

struct sleep_task {
    int64_t not_before;       /* read before the schedule: <= its deadline */
    _Atomic int64_t at;       /* monotonic time of its run, 0 before */
    _Atomic int runs;
};

static int sleep_task_run(void *arg)
{
    struct sleep_task *t = arg;
    atomic_store(&t->at, tb_monotonic_ns());
    atomic_fetch_add(&t->runs, 1);
    return 0;
}

/* Every task ran, and the worker has slept a few times (a worker held up
 * by a loaded machine runs overdue ticks without sleeping; it sleeps again
 * once it has caught up, every tick). */
static int sleep_tasks_ran(void *arg)
{
    struct sleep_task *t = arg;
    for (int i = 0; i < SLEEP_TASKS; i++)
        if (!atomic_load(&t[i].runs))
            return 0;
    return atomic_load(&sleeps.n) >= 5;
}

static void check_worker_sleep(bool exact)
{
    const int64_t tick = 10 * TB_MS;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = tick,
                          .wheel_size = 64,
                          .flags = exact ? TB_F_EXACT_SLEEP : 0};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    memset(&sleeps, 0, sizeof sleeps);
    atomic_init(&sleeps.n, 0);
    sleeps.s = s;
    tw_sleep_hook = record_sleep;
    assert_int_equal(tb_start(s), TB_OK);
    struct sleep_task t[SLEEP_TASKS];
    for (int i = 0; i < SLEEP_TASKS; i++) {
        /* off the tick and off the millisecond */
        int64_t delay = (int64_t)i * 7 * TB_MS + 1300 * TB_US;
        t[i].not_before = tb_monotonic_ns() + delay;
        atomic_init(&t[i].at, 0);
        atomic_init(&t[i].runs, 0);
        assert_int_equal(tb_schedule(s, delay, sleep_task_run, &t[i], NULL),
                         TB_OK);
    }
    assert_true(wait_until(sleep_tasks_ran, t, 10 * TB_SEC));
    assert_true(tb_shutdown_now(s, NULL, NULL) >= 0);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    tw_sleep_hook = NULL;
    size_t n = atomic_load(&sleeps.n);
    assert_true(n >= 5);
    size_t past = 0;
    for (size_t k = 0; k < n; k++) {
        int64_t now = sleeps.now[k], until = sleeps.until[k];
        int64_t target = sleeps.target[k];
        assert_true(now < target);
        assert_true(until >= target);
        if (k) /* boundaries lie whole ticks apart from the start */
            assert_int_equal((target - sleeps.target[0]) % tick, 0);
        if (exact) {
            assert_int_equal(until, target);
        } else {
            assert_int_equal((until - now) % TB_MS, 0);
            assert_true(until - target < TB_MS);
            past += until > target;
        }
    }
    /* the rounding shows: a clock read exactly a whole number of
     * milliseconds before each boundary is the only way to miss it */
    if (!exact)
        assert_true(past > 0);
    /* each run waited for the first boundary at or after its deadline.  The
     * boundaries are start + j * tick, so they are sleeps.target[0] plus or
     * minus whole ticks; not_before was read after tb_start() and before
     * the schedule, so it lies after the start and at or before the
     * deadline, and the first boundary at or after it is no later than the
     * task's own */
    int64_t first = sleeps.target[0];
    for (int i = 0; i < SLEEP_TASKS; i++) {
        assert_int_equal(atomic_load(&t[i].runs), 1);
        int64_t nb = t[i].not_before, boundary = first;
        while (boundary - tick >= nb)
            boundary -= tick;
        while (boundary < nb)
            boundary += tick;
        assert_true(atomic_load(&t[i].at) >= boundary);
    }
    assert_balanced(s);
    tb_destroy(s);
}

static void test_threaded_sleep_whole_ms(void **state)
{
    (void)state;
    check_worker_sleep(false);
}

static void test_threaded_sleep_exact(void **state)
{
    (void)state;
    check_worker_sleep(true);
}

/* Netty's waitForNextTick sleeps to start + (tick + 1) * duration, an
 * absolute target: after a task stalls the worker, the ticks it missed run
 * back to back without sleeping, and later ticks keep their original
 * times.  A worker that slept one tick after each tick would sleep once per
 * missed tick and drift by the stall for good.  Judged by counting the
 * worker's timed waits, never by timing it. */
struct stall_probe {
    struct tb_sched *s;
    int stalls;               /* this run holds the worker until `until` */
    _Atomic int64_t until;    /* monotonic ns; 0 while not yet known */
    _Atomic int64_t at;       /* monotonic time at the end of the run */
    _Atomic uint64_t waits;   /* the worker's timed waits by then */
};

static int stall_run(void *arg)
{
    struct stall_probe *p = arg;
    if (p->stalls) {
        int64_t until;
        while ((until = atomic_load(&p->until)) == 0 ||
               tb_monotonic_ns() < until) {
            struct timespec ts = {0, 1000 * 1000};
            nanosleep(&ts, NULL);
        }
    }
    struct tb_stats st;
    tb_stats(p->s, &st);
    atomic_store(&p->waits, st.timed_waits);
    atomic_store(&p->at, tb_monotonic_ns());
    return 0;
}

static int marker_ran(void *arg)
{
    return atomic_load(&((struct stall_probe *)arg)->at) != 0;
}

static void test_threaded_catch_up_after_stall(void **state)
{
    (void)state;
    enum { FILL = 18 };
    const int64_t tick = 5 * TB_MS;
    struct tb_sched *s = threaded(tick);
    assert_int_equal(tb_start(s), TB_OK);
    static struct stall_probe stall, fill[FILL], marker;
    stall = (struct stall_probe){.s = s, .stalls = 1};
    marker = (struct stall_probe){.s = s};
    int64_t t0 = tb_monotonic_ns();
    assert_int_equal(tb_schedule(s, 10 * TB_MS, stall_run, &stall, NULL),
                     TB_OK);
    /* due at 15 .. 100 ms, inside the stall: the stall lasts until a tick
     * after the last of them is due, however late this thread schedules
     * them on a loaded machine, so every one of them is missed */
    int64_t last_due = 0;
    for (int i = 0; i < FILL; i++) {
        fill[i] = (struct stall_probe){.s = s};
        int64_t delay = (15 + 5 * i) * TB_MS;
        assert_int_equal(tb_schedule(s, delay, stall_run, &fill[i], NULL),
                         TB_OK);
        last_due = tb_monotonic_ns() + delay; /* an upper bound */
    }
    assert_int_equal(tb_schedule(s, 150 * TB_MS, stall_run, &marker, NULL),
                     TB_OK);
    int64_t t1 = tb_monotonic_ns();
    atomic_store(&stall.until, last_due + 2 * tick);
    assert_true(wait_until(marker_ran, &marker, 30 * TB_SEC));
    int64_t stall_end = atomic_load(&stall.at);
    uint64_t w_stall = atomic_load(&stall.waits);
    assert_true(stall_end >= t0 + 110 * TB_MS);
    /* every missed tick ran without a wait, right after the stall */
    for (int i = 0; i < FILL; i++) {
        assert_true(atomic_load(&fill[i].at) >= stall_end);
        assert_int_equal(atomic_load(&fill[i].waits), w_stall);
    }
    /* after the catch-up the worker waits only for the tick targets left
     * before the marker's: at most one per tick boundary in (stall end,
     * marker deadline + tick], plus a spare for a spurious wake-up.  A
     * worker drifting by the stall would also wait once per missed tick
     * (FILL of them) on top. */
    int64_t marker_due = t1 + 150 * TB_MS;
    int64_t left = marker_due + tick - stall_end;
    uint64_t targets = left > 0 ? (uint64_t)(left / tick + 1) : 1;
    uint64_t w_marker = atomic_load(&marker.waits);
    assert_true(atomic_load(&marker.at) >= t0 + 150 * TB_MS); /* not early */
    assert_true(w_marker - w_stall <= targets + 2);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, FILL + 2);
    assert_balanced(s);
    tb_destroy(s);
}

/* D1 holds at every moment: schedules that find the cap reached never push
 * the pending count above it, even for the instant between Netty's
 * increment and its undo.  Producers keep hitting a full timer while the
 * main thread samples tb_pending(). */
struct cap_producer {
    struct tb_sched *s;
    _Atomic int *stop;
    _Atomic long full; /* read by the sampling thread while this one runs */
};

static void *hit_cap(void *arg)
{
    struct cap_producer *p = arg;
    while (!atomic_load(p->stop))
        if (tb_schedule(p->s, 3600 * TB_SEC, noop_task, NULL, NULL) ==
            TB_EFULL)
            atomic_fetch_add(&p->full, 1);
    return NULL;
}

static void test_threaded_pending_never_above_cap(void **state)
{
    (void)state;
    enum { CAP = 64, SAMPLES = 200000, HITS = 1000 };
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = TB_MS,
                          .wheel_size = 64, .max_pending = CAP};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    for (int i = 0; i < CAP; i++)
        assert_int_equal(tb_schedule(s, 3600 * TB_SEC, noop_task, NULL, NULL),
                         TB_OK);
    _Atomic int stop = 0;
    struct cap_producer p[2] = {{s, &stop, 0}, {s, &stop, 0}};
    pthread_t th[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&th[i], NULL, hit_cap, &p[i]), 0);
    /* Sample until both producers have hit the cap many times, not for a
     * fixed count: on a loaded machine the producers may not have run at
     * all by the time a fixed count of samples is done.  No time limit
     * here; the test's own timeout catches a producer that never runs. */
    size_t most = 0;
    for (long i = 0; i < SAMPLES || atomic_load(&p[0].full) < HITS ||
                     atomic_load(&p[1].full) < HITS;
         i++) {
        size_t n = tb_pending(s);
        most = n > most ? n : most;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    long full = atomic_load(&p[0].full) + atomic_load(&p[1].full);
    assert_true(full >= 2 * HITS);
    assert_int_equal(most, CAP);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.peak_pending, CAP);
    assert_int_equal(st.rejected, (uint64_t)full);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), CAP);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

static int stopper_done(void *arg)
{
    return atomic_load(&((struct stopper *)arg)->done);
}

static void test_threaded_shutdown_now(void **state)
{
    (void)state;
    struct tb_sched *s = threaded(TB_MS);
    struct stopper p = {s, 0, 0};
    assert_int_equal(tb_schedule(s, 0, stop_task, &p, NULL), TB_OK);
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(stopper_done, &p, 10 * TB_SEC));
    assert_int_equal(p.rc, TB_ESTATE); /* from the worker thread */
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 5);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_schedule(s, 0, noop_task, NULL, NULL), TB_ESHUTDOWN);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* Several producers schedule and cancel while the worker ticks: exercises
 * the lock-free inbox and cancelled queue (run under ThreadSanitizer). */
enum { PRODUCERS = 4, PER_PRODUCER = 4000 };

struct producer {
    struct tb_sched *s;
    struct rt_task *t;
    tb_handle *h;
    int cancelled;
    uint64_t seed;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (int i = 0; i < PER_PRODUCER; i++) {
        int64_t delay = rng_range(&p->seed, 0, 20 * TB_MS);
        p->t[i].s = p->s;
        p->t[i].not_before = tb_now(p->s) + delay;
        if (tb_schedule(p->s, delay, rt_run, &p->t[i], &p->h[i]) != TB_OK)
            abort();
        if (i % 3 == 1) {
            int j = (int)rng_range(&p->seed, 0, i);
            p->cancelled += tb_cancel(p->s, p->h[j]) == 1;
        }
    }
    return NULL;
}

static void test_threaded_producers(void **state)
{
    (void)state;
    struct tb_sched *s = threaded(TB_MS);
    assert_int_equal(tb_start(s), TB_OK);
    struct producer p[PRODUCERS];
    pthread_t th[PRODUCERS];
    for (int k = 0; k < PRODUCERS; k++) {
        p[k] = (struct producer){s, calloc(PER_PRODUCER, sizeof(struct rt_task)),
                                 calloc(PER_PRODUCER, sizeof(tb_handle)), 0,
                                 (uint64_t)k + 7};
        assert_non_null(p[k].t);
        assert_non_null(p[k].h);
        assert_int_equal(pthread_create(&th[k], NULL, produce, &p[k]), 0);
    }
    for (int k = 0; k < PRODUCERS; k++)
        pthread_join(th[k], NULL);
    struct count_ctx c = {s, NULL, PRODUCERS * PER_PRODUCER};
    assert_true(wait_until(all_settled, &c, 20 * TB_SEC));
    int ran = 0, cancelled = 0;
    for (int k = 0; k < PRODUCERS; k++) {
        cancelled += p[k].cancelled;
        for (int i = 0; i < PER_PRODUCER; i++) {
            int r = atomic_load(&p[k].t[i].runs);
            assert_true(r <= 1);
            assert_int_equal(atomic_load(&p[k].t[i].early), 0);
            ran += r;
        }
    }
    assert_int_equal(ran + cancelled, PRODUCERS * PER_PRODUCER);
    assert_int_equal(tb_check(s), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.submitted, PRODUCERS * PER_PRODUCER);
    assert_int_equal(st.cancelled, cancelled);
    assert_int_equal(st.fired, ran);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_balanced(s);
    tb_destroy(s);
    for (int k = 0; k < PRODUCERS; k++) {
        free(p[k].t);
        free(p[k].h);
    }
}

/* shutdown_now while producers push: every accepted timeout is either run,
 * returned, or cancelled; none is stranded in the inbox. */
struct racer {
    struct tb_sched *s;
    _Atomic int *runs;
    long accepted, cancelled;
    uint64_t seed;
};

static int count_run(void *arg)
{
    atomic_fetch_add((_Atomic int *)arg, 1);
    return 0;
}

static void *race_produce(void *arg)
{
    struct racer *r = arg;
    for (;;) {
        tb_handle h;
        int rc = tb_schedule(r->s, rng_range(&r->seed, 0, 3 * TB_MS),
                             count_run, r->runs, &h);
        if (rc == TB_ESHUTDOWN)
            return NULL;
        if (rc != TB_OK)
            abort();
        r->accepted++;
        if (rng_range(&r->seed, 0, 3) == 0)
            r->cancelled += tb_cancel(r->s, h) == 1;
    }
}

static void count_visit(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    (void)h;
    (void)fn;
    (void)arg;
    ++*(long *)ctx;
}

static void test_threaded_shutdown_race(void **state)
{
    (void)state;
    struct tb_sched *s = threaded(TB_MS);
    _Atomic int runs;
    atomic_init(&runs, 0);
    assert_int_equal(tb_start(s), TB_OK);
    struct racer r[2];
    pthread_t th[2];
    for (int k = 0; k < 2; k++) {
        r[k] = (struct racer){s, &runs, 0, 0, (uint64_t)k + 99};
        assert_int_equal(pthread_create(&th[k], NULL, race_produce, &r[k]), 0);
    }
    struct timespec pause = {0, 20 * 1000 * 1000};
    nanosleep(&pause, NULL);
    long visited = 0;
    long dropped = tb_shutdown_now(s, count_visit, &visited);
    for (int k = 0; k < 2; k++)
        pthread_join(th[k], NULL);
    assert_int_equal(tb_await_termination(s, 10 * TB_SEC), TB_OK);
    assert_int_equal(dropped, visited);
    long accepted = r[0].accepted + r[1].accepted;
    long cancelled = r[0].cancelled + r[1].cancelled;
    assert_int_equal(atomic_load(&runs) + dropped + cancelled, accepted);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.submitted, accepted);
    assert_int_equal(st.zombies, 0);
    assert_balanced(s);
    tb_destroy(s);
}

int main(void)
{
    unit_init("timerwheel");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_config),
        cmocka_unit_test(test_delay_shorter_than_tick),
        cmocka_unit_test(test_deadline_on_boundary),
        cmocka_unit_test(test_revolutions),
        cmocka_unit_test(test_no_drift),
        cmocka_unit_test(test_burst_fires_on_first_boundary),
        cmocka_unit_test(test_transfer_limit),
        cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_pending_drops_next_tick_once),
        cmocka_unit_test(test_cancel_in_due_tick),
        cmocka_unit_test(test_max_pending),
        cmocka_unit_test(test_rearm_refused_at_cap),
        cmocka_unit_test(test_overdue_runs_before_bucket),
        cmocka_unit_test(test_cancel_processed_before_walk),
        cmocka_unit_test(test_cancel_in_schedule_window),
        cmocka_unit_test(test_cancel_in_rearm_window),
        cmocka_unit_test(test_advance_across_the_clock),
        cmocka_unit_test(test_bulk_skip_matches_walk),
        cmocka_unit_test(test_shutdown_now),
        cmocka_unit_test(test_shutdown_now_bucket_order),
        cmocka_unit_test(test_shutdown_now_inside_task),
        cmocka_unit_test(test_shutdown_inside_task),
        cmocka_unit_test(test_failing_task),
        cmocka_unit_test(test_huge_delay),
        cmocka_unit_test(test_periodic),
        cmocka_unit_test(test_catch_up_orders_by_tick),
        cmocka_unit_test(test_ticks_and_visits),
        cmocka_unit_test(test_work_counters),
        cmocka_unit_test(test_due_tick_reciprocal),
        cmocka_unit_test(test_random_workload),
        cmocka_unit_test(test_threaded_basic),
        cmocka_unit_test(test_threaded_catch_up_after_stall),
        cmocka_unit_test(test_threaded_sleep_whole_ms),
        cmocka_unit_test(test_threaded_sleep_exact),
        cmocka_unit_test(test_threaded_pending_never_above_cap),
        cmocka_unit_test(test_threaded_shutdown_now),
        cmocka_unit_test(test_threaded_producers),
        cmocka_unit_test(test_threaded_shutdown_race),
    };
    return cmocka_run_group_tests_name("timerwheel", tests, NULL, NULL);
}
