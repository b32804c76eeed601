/*
 * test_hierwheel.c — fidelity cases for the Kafka hierarchical timing wheel
 * model, most at tick 1 ms and wheel size 3 as Kafka's TimerTest runs: past
 * deadlines skip the wheel, delays 0-500 ms all run and none early, levels
 * appear only when a task needs them, buckets are offered once per
 * revolution, the clock jumps from due bucket to due bucket, cancel unlinks
 * at once, re-scheduling moves a task, shutdown returns exactly what never
 * ran; then the range up to TB_MAX_DELAY, periodic re-arms, the reaper and
 * executor threads, and the checker after a long random sequence.
 */
#include <stdlib.h>
#include <time.h>

#include "testlib.h"

/* Kafka's TimerTest setup: tick 1 ms, 3 buckets per level. */
static struct tb_sched *make_small(void)
{
    struct tb_config c = {.tick_ns = TB_MS, .wheel_size = 3};
    return make_sched(unit_backend(), &c);
}

static void test_defaults(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(unit_backend(), NULL);
    struct tb_config c;
    tb_sched_config(s, &c);
    assert_int_equal(c.tick_ns, TB_MS);
    assert_int_equal(c.wheel_size, 20);
    assert_int_equal(c.poll_ns, 200 * TB_MS);
    assert_int_equal(c.threads, 1);
    assert_int_equal(stats_of(s).levels, 1);
    assert_true(unit_backend()->caps & TB_CAP_TICKED);
    tb_destroy(s);
    struct tb_config one = {.wheel_size = 1};
    assert_int_equal(tb_create(unit_backend(), &one, &s), TB_EINVAL);
    struct tb_config huge = {.wheel_size = (1 << 20) + 1};
    assert_int_equal(tb_create(unit_backend(), &huge, &s), TB_EINVAL);
}

/* TimerTest.testAlreadyExpiredTask: a deadline at or before the wheel's
 * current tick goes straight to the executor, never into a bucket. */
static void test_past_deadlines_skip_wheel(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p[6];
    tb_handle h[6];
    for (int i = 0; i < 5; i++) { /* delays -5 .. -1 ms */
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, (i - 5) * TB_MS, probe_task, &p[i],
                                     &h[i]), TB_OK);
    }
    p[5] = (struct probe){.rec = &rec, .id = 5};
    assert_int_equal(tb_schedule(s, 0, probe_task, &p[5], &h[5]), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.bucket_offers, 0);
    assert_int_equal(st.pending, 0);
    assert_int_equal(st.running, 6); /* handed to the executor */
    assert_sound(s);
    /* handed off: a one-shot can no longer be recalled */
    assert_int_equal(tb_cancel(s, h[2]), 0);
    assert_int_equal(tb_advance(s, 0), 6);
    for (int i = 0; i < 6; i++) {
        assert_int_equal(p[i].runs, 1);
        assert_int_equal(rec.runs[i].id, i); /* executor order: FIFO */
    }
    st = stats_of(s);
    assert_int_equal(st.ticks, 0);
    assert_int_equal(st.running, 0);
    /* once a bucket moved the clock to 7 ms, "now" is past again */
    struct probe q = {.rec = &rec, .id = 7};
    assert_int_equal(tb_schedule(s, 7 * TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 7 * TB_MS), 1);
    uint64_t offers = stats_of(s).bucket_offers;
    assert_int_equal(tb_schedule(s, 0, probe_task, &q, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, -TB_SEC, probe_task, &q, NULL), TB_OK);
    assert_int_equal(stats_of(s).bucket_offers, offers);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_advance(s, 7 * TB_MS), 2);
    assert_int_equal(q.runs, 2);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* TimerTest.testTaskExpiration: 0-4 ms, 10-99 ms twice, 100-499 ms; all
 * run, each exactly at its (whole-tick) deadline. */
static void test_delays_0_to_500ms(void **state)
{
    (void)state;
    enum { N = 5 + 2 * 90 + 400 };
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    static struct probe p[N];
    static int64_t delay[N];
    int n = 0;
    for (int i = 0; i < 5; i++)
        delay[n++] = i;
    for (int i = 10; i < 100; i++) {
        delay[n++] = i;
        delay[n++] = i;
    }
    for (int i = 100; i < 500; i++)
        delay[n++] = i;
    assert_int_equal(n, N);
    /* submitted in a scrambled order, as TimerTest's "randomly submit" */
    uint64_t rng = 5;
    for (int i = N - 1; i > 0; i--) {
        int k = (int)(rng_next(&rng) % (uint64_t)(i + 1));
        int64_t t = delay[i];
        delay[i] = delay[k];
        delay[k] = t;
    }
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, delay[i] * TB_MS, probe_task, &p[i],
                                     NULL), TB_OK);
    }
    assert_sound(s);
    for (int64_t t = 0; t <= 500; t++) {
        size_t before = rec.n;
        assert_true(tb_advance(s, t * TB_MS) >= 0);
        for (size_t k = before; k < rec.n; k++)
            assert_int_equal(delay[rec.runs[k].id] * TB_MS, rec.runs[k].at);
        if (t % 50 == 0)
            assert_sound(s);
    }
    for (int i = 0; i < N; i++)
        assert_int_equal(p[i].runs, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Deadlines off the tick grid, clock moved in uneven steps: never before
 * the deadline, and by the advance that reaches roundup(d, tick). */
static void test_never_early_off_grid(void **state)
{
    (void)state;
    enum { N = 3000 };
    for (int round = 0; round < 2; round++) {
        int64_t tick = round ? 10 * TB_MS : TB_MS;
        struct tb_config c = {.tick_ns = tick, .wheel_size = 3};
        struct tb_sched *s = make_sched(unit_backend(), &c);
        struct recorder rec;
        rec_init(&rec, s);
        static struct probe p[N];
        static int64_t d[N];
        uint64_t rng = 77 + (uint64_t)round;
        for (int i = 0; i < N; i++) {
            p[i] = (struct probe){.rec = &rec, .id = i};
            d[i] = rng_range(&rng, 0, 2 * TB_SEC);
            assert_int_equal(tb_schedule(s, d[i], probe_task, &p[i], NULL),
                             TB_OK);
        }
        int64_t now = 0;
        while (now < 3 * TB_SEC) {
            now += rng_range(&rng, 1, 3 * tick);
            size_t before = rec.n;
            assert_true(tb_advance(s, now) >= 0);
            for (size_t k = before; k < rec.n; k++)
                assert_true(rec.runs[k].at >= d[rec.runs[k].id]);
            for (int i = 0; i < N; i++)
                if ((d[i] + tick - 1) / tick * tick <= now)
                    assert_int_equal(p[i].runs, 1);
                else
                    assert_int_equal(p[i].runs, 0);
        }
        assert_sound(s);
        rec_free(&rec);
        tb_destroy(s);
    }
}

/* The deliberate difference: Kafka files 15 ms under the bucket starting at
 * 10 ms (tick 10 ms) and fires it 5 ms early; here it waits for 20 ms. */
static void test_rounds_up_not_down(void **state)
{
    (void)state;
    struct tb_config c = {.tick_ns = 10 * TB_MS, .wheel_size = 3};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 1}, b = {.rec = &rec, .id = 2};
    assert_int_equal(tb_schedule(s, 15 * TB_MS, probe_task, &a, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &b, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(b.runs, 1);
    assert_int_equal(tb_advance(s, 15 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 20 * TB_MS - 1), 0);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(a.runs, 1);
    assert_int_equal(rec.runs[1].at, 20 * TB_MS);
    rec_free(&rec);
    tb_destroy(s);
}

/* A level appears only when a task reaches past the span of the levels
 * there are, and stays. */
static void test_levels_created_lazily(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct {
        int64_t delay;
        uint64_t levels;
    } steps[] = {
        {0, 1},             {2 * TB_MS, 1},  {2 * TB_MS + 1, 2}, /* 3 ticks */
        {8 * TB_MS, 2},     {9 * TB_MS, 3},  {26 * TB_MS, 3},
        {27 * TB_MS, 4},    {TB_MS, 4},      {80 * TB_MS, 4},
        {81 * TB_MS, 5},
    };
    tb_handle h[sizeof steps / sizeof steps[0]];
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        assert_int_equal(tb_schedule(s, steps[i].delay, noop_task, NULL,
                                     &h[i]), TB_OK);
        assert_int_equal(stats_of(s).levels, steps[i].levels);
        assert_sound(s);
    }
    for (size_t i = 1; i < sizeof steps / sizeof steps[0]; i++)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_advance(s, TB_SEC), 1); /* the delay-0 one */
    assert_int_equal(stats_of(s).levels, 5);    /* kept */
    assert_sound(s);
    tb_destroy(s);
}

/* A bucket enters the delay queue when its expiration changes: once per
 * revolution, however many tasks it takes. */
static void test_bucket_offered_once_per_revolution(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    for (int i = 0; i < 3; i++)
        assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bucket_offers, 1);
    assert_int_equal(tb_advance(s, TB_MS), 3); /* level-0 clock: 1 ms */
    /* 2 ms and 3 ms: buckets 2 and 0; then 4 ms is bucket 1 again, on its
     * second revolution */
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 2 * TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bucket_offers, 3);
    assert_int_equal(tb_schedule(s, 2 * TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bucket_offers, 3);
    assert_int_equal(tb_advance(s, 3 * TB_MS), 3);
    assert_int_equal(stats_of(s).levels, 1);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bucket_offers, 4);
    assert_sound(s);
    assert_int_equal(tb_advance(s, 4 * TB_MS), 4);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.ticks, 4); /* 1, 2, 3, 4 ms */
    assert_int_equal(st.cascades, 0);
    tb_destroy(s);
}

/* stats.sift_levels counts the levels the delay queue's heap moves (issue
 * 14, D2), by hand: buckets due at 5, 4, 3, 2, 1 ms are offered in that
 * order; each new one is the earliest, so it climbs 0, 1, 1, 2, 2 levels
 * (heap 1 2 4 5 3).  Polling them in order, the last entry sinks 1 level
 * (2 3 4 5), then 1 (3 5 4), then 0, 0, and the last poll has nothing to
 * sift: 6 + 2. */
static void test_sift_levels_exact(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(unit_backend(), NULL);
    for (int d = 5; d >= 1; d--)
        assert_int_equal(tb_schedule(s, d * TB_MS, noop_task, NULL, NULL),
                         TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.bucket_offers, 5);
    assert_int_equal(st.sift_levels, 6);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 5);
    st = stats_of(s);
    assert_int_equal(st.ticks, 5);
    assert_int_equal(st.cascades, 0);
    assert_int_equal(st.bucket_offers, 5);
    assert_int_equal(st.sift_levels, 8);
    assert_sound(s);
    tb_destroy(s);
}

/* One task 10 s out at tick 1 ms, 3 buckets: level 8 (span 19683 ms) takes
 * it, and the clock jumps 6561, 8748, 9477, 9963, 9990, 9999, 10000 ms -
 * seven polls, six cascades - however finely the caller advances. */
static void test_clock_jumps_to_due_buckets(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule(s, 10 * TB_SEC, probe_task, &p, NULL), TB_OK);
    assert_int_equal(stats_of(s).levels, 9);
    const int64_t jumps[] = {6561, 8748, 9477, 9963, 9990, 9999, 10000};
    size_t next = 0;
    for (int64_t t = 1; t <= 10000; t++) {
        assert_true(tb_advance(s, t * TB_MS) >= 0);
        if (next < 7 && t == jumps[next]) {
            next++;
            assert_int_equal(stats_of(s).ticks, next);
            assert_sound(s);
        } else {
            assert_int_equal(stats_of(s).ticks, next);
        }
        assert_int_equal(p.runs, t == 10000);
    }
    assert_int_equal(rec.runs[0].at, 10 * TB_SEC);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.ticks, 7);
    assert_int_equal(st.empty_ticks, 0);
    assert_int_equal(st.cascades, 6);
    assert_int_equal(st.bucket_offers, 7);
    rec_free(&rec);
    tb_destroy(s);
}

/* Cancel unlinks at once; a bucket emptied by cancels still gets polled,
 * for nothing; a task cancelled after a cascade moved it never runs. */
static void test_cancel_unlinks_at_once(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe a = {.rec = &rec, .id = 1}, b = {.rec = &rec, .id = 2},
                 c = {.rec = &rec, .id = 3};
    tb_handle ha, hb, hc;
    assert_int_equal(tb_schedule(s, 2 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 5 * TB_MS, probe_task, &b, &hb), TB_OK);
    assert_int_equal(tb_schedule(s, 5 * TB_MS, probe_task, &c, &hc), TB_OK);
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(tb_cancel(s, ha), 1);
    assert_int_equal(tb_pending(s), 2);
    assert_sound(s);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.ticks, 1);
    assert_int_equal(st.empty_ticks, 1);
    /* 5 ms sits in level 1's bucket [3, 6); at 3 ms both drop to level 0 */
    assert_int_equal(tb_advance(s, 3 * TB_MS), 0);
    assert_int_equal(stats_of(s).cascades, 2);
    assert_int_equal(tb_cancel(s, hb), 1);
    assert_int_equal(tb_pending(s), 1);
    assert_sound(s);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(a.runs + b.runs, 0);
    assert_int_equal(c.runs, 1);
    assert_int_equal(tb_cancel(s, hc), 0);
    st = stats_of(s);
    assert_int_equal(st.cancelled, 2);
    assert_int_equal(st.zombies, 0);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Cancel unlinks at the middle, head and tail of one bucket: the others
 * keep their order and run, and each freed record (whose links cancel no
 * longer clears) is taken again by the next schedule and filed cleanly. */
static void test_cancel_within_bucket(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p[8];
    tb_handle h[8];
    for (int i = 0; i < 5; i++) { /* all in level 0's bucket for 2 ms */
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, 2 * TB_MS, probe_task, &p[i], &h[i]),
                         TB_OK);
    }
    assert_int_equal(tb_cancel(s, h[2]), 1); /* middle */
    assert_sound(s);
    assert_int_equal(tb_cancel(s, h[0]), 1); /* head */
    assert_sound(s);
    assert_int_equal(tb_cancel(s, h[4]), 1); /* tail */
    assert_sound(s);
    assert_int_equal(tb_cancel(s, h[2]), 0);
    for (int i = 5; i < 8; i++) { /* reuse the three freed records */
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, 2 * TB_MS, probe_task, &p[i], &h[i]),
                         TB_OK);
        assert_sound(s);
    }
    assert_int_equal(tb_pending(s), 5);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 5);
    static const int order[] = {1, 3, 5, 6, 7};
    assert_int_equal(rec.n, 5);
    for (int k = 0; k < 5; k++)
        assert_int_equal(rec.runs[k].id, order[k]);
    assert_int_equal(stats_of(s).cancelled, 3);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Cancel + schedule moves a task: it runs at the new time only, and the
 * old handle no longer names it. */
static void test_reschedule_moves(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe p = {.rec = &rec, .id = 1};
    tb_handle h1, h2, h3;
    assert_int_equal(tb_schedule(s, 8 * TB_MS, probe_task, &p, &h1), TB_OK);
    assert_int_equal(tb_cancel(s, h1), 1);
    assert_int_equal(tb_schedule(s, 2 * TB_MS, probe_task, &p, &h2), TB_OK);
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 1);
    /* and later: moved out past the current level */
    assert_int_equal(tb_schedule(s, TB_MS, probe_task, &p, &h3), TB_OK);
    assert_int_equal(tb_cancel(s, h3), 1);
    assert_int_equal(tb_schedule(s, 40 * TB_MS, probe_task, &p, &h3), TB_OK);
    assert_int_equal(tb_advance(s, 41 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 42 * TB_MS), 1);
    assert_int_equal(tb_advance(s, TB_SEC), 0);
    assert_int_equal(p.runs, 2);
    assert_int_equal(rec.runs[0].at, 2 * TB_MS);
    assert_int_equal(rec.runs[1].at, 42 * TB_MS);
    assert_int_equal(tb_cancel(s, h1), 0);
    assert_int_equal(tb_cancel(s, h2), 0);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

struct seen {
    void *arg[32];
    tb_handle h[32];
    int n;
};

static void collect(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    struct seen *v = ctx;
    (void)fn;
    v->h[v->n] = h;
    v->arg[v->n++] = arg;
}

/* shutdown_now returns exactly the tasks that never ran: every level's
 * buckets and the executor's queue; not what ran, not what was cancelled. */
static void test_shutdown_now_exact(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    static const int64_t delay[] = {1, 2, 4, 9, 30, 100, 1000, 7, 3};
    enum { N = sizeof delay / sizeof delay[0] };
    struct probe p[N + 1];
    tb_handle h[N + 1];
    for (int i = 0; i < N; i++) {
        p[i] = (struct probe){.rec = &rec, .id = i};
        assert_int_equal(tb_schedule(s, delay[i] * TB_MS, probe_task, &p[i],
                                     &h[i]), TB_OK);
    }
    assert_int_equal(tb_cancel(s, h[7]), 1);
    assert_int_equal(tb_advance(s, 3 * TB_MS), 3); /* 1, 2 and 3 ms */
    /* handed to the executor, not yet run */
    p[N] = (struct probe){.rec = &rec, .id = N};
    assert_int_equal(tb_schedule(s, -TB_MS, probe_task, &p[N], &h[N]), TB_OK);
    struct seen v = {0};
    assert_int_equal(tb_shutdown_now(s, collect, &v), 6);
    int expect[] = {2, 3, 4, 5, 6, N};
    for (size_t k = 0; k < 6; k++) {
        int found = 0;
        for (int j = 0; j < v.n; j++)
            found += v.arg[j] == &p[expect[k]] && v.h[j] == h[expect[k]];
        assert_int_equal(found, 1);
    }
    assert_int_equal(tb_shutdown_now(s, collect, &v), 0);
    assert_int_equal(v.n, 6);
    assert_int_equal(tb_advance(s, 10 * TB_SEC), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 6);
    assert_int_equal(st.running, 0);
    assert_int_equal(st.pending, 0);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* tb_shutdown drops the wheel and says how many; what the executor already
 * holds still runs (Kafka closes its executor gracefully). */
static void test_shutdown_drops_wheel(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe q = {.rec = &rec, .id = 1};
    for (int i = 1; i <= 5; i++)
        assert_int_equal(tb_schedule(s, i * 7 * TB_MS, noop_task, NULL, NULL),
                         TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 0, probe_task, &q, NULL,
                                            TB_MS), TB_OK);
    assert_int_equal(tb_shutdown(s), 5);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_schedule(s, 0, noop_task, NULL, NULL), TB_ESHUTDOWN);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 1); /* no re-arm after it */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 5);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(tb_await_termination(s, 0), TB_OK);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Once handed to the executor a one-shot cannot be stopped, even by a task
 * of the same bucket that runs first; a periodic one is recalled. */
struct canceller {
    struct tb_sched *s;
    tb_handle victim;
    int result;
};

static int cancel_victim(void *arg)
{
    struct canceller *c = arg;
    c->result = tb_cancel(c->s, c->victim);
    return 0;
}

static void test_cancel_after_handoff(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe victim = {.rec = &rec, .id = 1};
    struct canceller c = {.s = s, .result = -1};
    assert_int_equal(tb_schedule(s, 2 * TB_MS, cancel_victim, &c, NULL),
                     TB_OK);
    assert_int_equal(tb_schedule(s, 2 * TB_MS, probe_task, &victim,
                                 &c.victim), TB_OK);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 2);
    assert_int_equal(c.result, 0);
    assert_int_equal(victim.runs, 1);
    /* a periodic task in the executor's queue: cancel recalls it */
    struct probe per = {.rec = &rec, .id = 2};
    tb_handle hp;
    assert_int_equal(tb_schedule_fixed_delay(s, 0, probe_task, &per, &hp,
                                             TB_MS), TB_OK);
    assert_int_equal(stats_of(s).running, 1);
    assert_int_equal(tb_cancel(s, hp), 1);
    assert_int_equal(stats_of(s).running, 0);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 0);
    assert_int_equal(per.runs, 0);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* A failing task is counted and the rest go on; a failing periodic task
 * stops (the JDK executor's rule, Kafka having no periodic tasks). */
static void test_failing_task(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe bad = {.rec = &rec, .id = 1, .fail = 1};
    struct probe badper = {.rec = &rec, .id = 2, .fail = 1};
    struct probe ok[5];
    for (int i = 0; i < 5; i++) {
        ok[i] = (struct probe){.rec = &rec, .id = 10 + i};
        assert_int_equal(tb_schedule(s, (i + 1) * TB_MS, probe_task, &ok[i],
                                     NULL), TB_OK);
    }
    assert_int_equal(tb_schedule(s, TB_MS, probe_task, &bad, NULL), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, probe_task, &badper, NULL,
                                            TB_MS), TB_OK);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 7);
    for (int i = 0; i < 5; i++)
        assert_int_equal(ok[i].runs, 1);
    assert_int_equal(bad.runs, 1);
    assert_int_equal(badper.runs, 1);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 7);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.finished, 7);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Periodic tasks re-enter through the insert path, across levels: at 3
 * buckets a 50 ms period passes through level 3 each time, 20 ms level 2. */
static void test_periodic_across_levels(void **state)
{
    (void)state;
    struct tb_sched *s = make_small();
    struct recorder rec;
    rec_init(&rec, s);
    struct probe rate = {.rec = &rec, .id = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, 50 * TB_MS, probe_task, &rate,
                                            NULL, 50 * TB_MS), TB_OK);
    for (int64_t t = 1; t <= 1000; t++)
        assert_true(tb_advance(s, t * TB_MS) >= 0);
    assert_int_equal(rate.runs, 20);
    for (size_t i = 0; i < rec.n; i++)
        assert_int_equal(rec.runs[i].at, (int64_t)(i + 1) * 50 * TB_MS);
    assert_true(stats_of(s).cascades >= 20);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);

    /* fixed delay counts from the end of a run that spends 3 ms: starts at
     * 10, 33, 56, ... ms */
    s = make_small();
    rec_init(&rec, s);
    struct probe delay = {.rec = &rec, .id = 2, .spend = 3 * TB_MS};
    assert_int_equal(tb_schedule_fixed_delay(s, 10 * TB_MS, probe_task, &delay,
                                             NULL, 20 * TB_MS), TB_OK);
    for (int64_t t = 1; t <= 1000; t++)
        if (t * TB_MS >= tb_now(s)) /* a run may have moved the clock on */
            assert_true(tb_advance(s, t * TB_MS) >= 0);
    assert_int_equal(delay.runs, 44); /* 10 + 23 * 43 = 999 */
    for (size_t i = 0; i < rec.n; i++)
        assert_int_equal(rec.runs[i].at, (10 + 23 * (int64_t)i) * TB_MS);
    assert_true(stats_of(s).cascades >= 44);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* The far end of the range: 2^62 ns takes every level it needs, with
 * overflow-free arithmetic, and still runs on time; a deadline whose tick
 * boundary lies past INT64_MAX never comes. */
static void test_full_range(void **state)
{
    (void)state;
    struct {
        int64_t tick;
        int size;
        uint64_t levels;
    } cfg[] = {
        {1, 2, 63},       /* 2^62 ticks: levels 0..62 */
        {1, 3, 40},       /* 3^40 > 2^62 > 3^39 */
        {TB_MS, 20, 10},  /* 4.6e12 ticks: 20^10 > it > 20^9 */
    };
    for (size_t i = 0; i < sizeof cfg / sizeof cfg[0]; i++) {
        struct tb_config c = {.tick_ns = cfg[i].tick,
                              .wheel_size = cfg[i].size};
        struct tb_sched *s = make_sched(unit_backend(), &c);
        assert_int_equal(tb_schedule(s, TB_MAX_DELAY, noop_task, NULL, NULL),
                         TB_OK);
        assert_int_equal(tb_schedule(s, TB_MAX_DELAY / 3, noop_task, NULL,
                                     NULL), TB_OK);
        assert_int_equal(stats_of(s).levels, cfg[i].levels);
        assert_sound(s);
        assert_int_equal(tb_advance(s, TB_MAX_DELAY / 3 - 1), 0);
        assert_int_equal(tb_advance(s, TB_MAX_DELAY / 3 + cfg[i].tick), 1);
        /* the boundary at or after 2^62 ns */
        int64_t due = (TB_MAX_DELAY + cfg[i].tick - 1) / cfg[i].tick *
                      cfg[i].tick;
        assert_int_equal(tb_advance(s, due - 1), 0);
        assert_sound(s);
        assert_int_equal(tb_advance(s, due), 1);
        /* each poll moves a task down at least one level */
        assert_true(stats_of(s).ticks <= 2 * cfg[i].levels);
        /* the clock near its end */
        assert_int_equal(tb_advance(s, INT64_MAX - 10), 0);
        assert_int_equal(tb_schedule(s, 5, noop_task, NULL, NULL), TB_OK);
        assert_sound(s);
        /* roundup(INT64_MAX - 5, tick) fits only at tick 1 ns, but at the
         * end of the clock its partial tick runs too (issue 42) */
        assert_int_equal(tb_advance(s, INT64_MAX), 1);
        assert_int_equal(tb_pending(s), 0);
        assert_sound(s);
        tb_destroy(s);
    }
}

/* The virtual schedule's leaf fast path and the general schedule path
 * (taken by every schedule when max_pending is set) must file every task
 * alike: two schedulers fed the same operations, one of each kind, must
 * agree on every counter (the placement decides offers, levels, cascades
 * and polls) and on each advance's runs, for ticks that do not divide 2^k
 * and wheel sizes from 2 to 1000.  Both place a task by one division in
 * ns (locate); the checker, run every 64 operations, holds that to the
 * same add computed in level-0 ticks for every pending task.  Each also
 * ends at the clock's far end with the clock still at 0, where the
 * difference in ns passes 2^63 and the add is done in ticks. */
static void test_fast_path_files_as_slow_path(void **state)
{
    (void)state;
    const int64_t ticks[] = {1, 7, 1000, 999983, TB_MS, ((int64_t)1 << 40) + 3};
    const int sizes[] = {2, 3, 20, 64, 1000};
    for (size_t ti = 0; ti < sizeof ticks / sizeof ticks[0]; ti++) {
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            struct tb_config cf = {.tick_ns = ticks[ti],
                                   .wheel_size = sizes[si]};
            struct tb_config cs = cf;
            cs.max_pending = (size_t)1 << 40; /* never reached: slow path */
            struct tb_sched *f = make_sched(unit_backend(), &cf);
            struct tb_sched *sl = make_sched(unit_backend(), &cs);
            uint64_t rng = 77 + ti * 10 + si;
            int64_t now = 0;
            for (int op = 0; op < 3000; op++) {
                uint64_t r = rng_next(&rng) % 10;
                if (r < 7) {
                    /* log-uniform delays up to 2^62, some on and next to a
                     * tick boundary */
                    int bits = (int)(rng_next(&rng) % 62);
                    int64_t d = rng_range(&rng, 0, ((int64_t)1 << bits));
                    if (r == 0)
                        d = d / ticks[ti] * ticks[ti] +
                            rng_range(&rng, -1, 1);
                    if (d < 0)
                        d = 0;
                    if (d > TB_MAX_DELAY)
                        d = TB_MAX_DELAY;
                    assert_int_equal(tb_schedule(f, d, noop_task, NULL, NULL),
                                     TB_OK);
                    assert_int_equal(tb_schedule(sl, d, noop_task, NULL,
                                                 NULL), TB_OK);
                } else {
                    int bits = (int)(rng_next(&rng) % 48);
                    now += rng_range(&rng, 0, (int64_t)1 << bits);
                    assert_int_equal(tb_advance(f, now), tb_advance(sl, now));
                }
                /* every counter, offers, cascades and polls included
                 * (all uint64_t: no padding to differ in) */
                struct tb_stats a = stats_of(f), b = stats_of(sl);
                assert_memory_equal(&a, &b, sizeof a);
                if (op % 64 == 0) {
                    assert_sound(f);
                    assert_sound(sl);
                }
            }
            assert_sound(f);
            assert_sound(sl);
            tb_destroy(f);
            tb_destroy(sl);
        }
        /* the far end: nothing pending, so the clocks stay at 0 */
        struct tb_config c = {.tick_ns = ticks[ti], .wheel_size = 2};
        struct tb_sched *s = make_sched(unit_backend(), &c);
        assert_int_equal(tb_advance(s, INT64_MAX - 10), 0);
        /* the first creates the levels, the second finds them in place */
        for (int k = 0; k < 2; k++)
            assert_int_equal(tb_schedule(s, 5, noop_task, NULL, NULL), TB_OK);
        assert_sound(s);
        /* they run whether or not roundup(INT64_MAX - 5, tick) is still a
         * time: at the end of the clock its partial tick runs too (issue
         * 42) */
        assert_int_equal(tb_advance(s, INT64_MAX), 2);
        assert_int_equal(tb_pending(s), 0);
        assert_sound(s);
        tb_destroy(s);
    }
}

/* Memory per pending task: a 64-byte record (one cache line) plus the
 * unused end of the pool's last chunk (20 480 slots for 20 000 tasks:
 * 1.5 B a task), the chunk table and the buckets; a grown record would
 * pass 68. */
static void test_memory_per_task(void **state)
{
    (void)state;
    check_bytes_per_task(64.0, 68.0);
}

/* Cascades per task for delays log-uniform over 1 ms .. 1 day at the
 * defaults: each task cascades at most once per level below its first.
 * Log-uniform without libm: a uniform exponent x in [0, log2(1 day / 1 ms)),
 * 2^floor(x) * (1 + frac(x)) ms, linear within each octave. */
static void test_cascades_per_task(void **state)
{
    (void)state;
    enum { N = 100000 };
    struct tb_sched *s = make_sched(unit_backend(), NULL);
    uint64_t rng = 11;
    const int64_t day_ms = 86400 * 1000;
    const double octaves = 26.3645; /* log2(86 400 000) */
    for (int i = 0; i < N; i++) {
        double u = (double)(rng_next(&rng) >> 11) / 9007199254740992.0;
        double x = u * octaves;
        int k = (int)x;
        int64_t ms = (int64_t)((double)((int64_t)1 << k) * (1.0 + (x - k)));
        if (ms > day_ms)
            ms = day_ms;
        int64_t d = ms * TB_MS + rng_range(&rng, 0, TB_MS - 1);
        assert_int_equal(tb_schedule(s, d, noop_task, NULL, NULL), TB_OK);
    }
    struct tb_stats st = stats_of(s);
    uint64_t levels = st.levels;
    assert_int_equal(levels, 7); /* 20^6 ms < 1 day < 20^7 ms */
    int64_t now = 0;
    while (tb_pending(s)) { /* the clock moves 1 s per step */
        now += TB_SEC;
        assert_true(tb_advance(s, now) >= 0);
    }
    st = stats_of(s);
    assert_int_equal(st.fired, N);
    assert_true(st.cascades <= (uint64_t)N * (levels - 1));
    print_message("hierwheel: %.3f cascades per task, %.3f bucket polls per "
                  "task, %llu polls (%llu empty), delays 1 ms .. 1 day\n",
                  (double)st.cascades / N, (double)st.ticks / N,
                  (unsigned long long)st.ticks,
                  (unsigned long long)st.empty_ticks);
    assert_sound(s);
    tb_destroy(s);
}

/* Long random sequence over many levels, the checker after each step. */
static void test_check_random(void **state)
{
    (void)state;
    enum { OPS = 60000, MAXH = 1024 };
    struct tb_sched *s = make_small();
    static tb_handle handles[MAXH];
    size_t nh = 0;
    uint64_t rng = 2024;
    int64_t now = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rng_next(&rng) % 100;
        tb_handle h = TB_HANDLE_NONE;
        if (r < 50) {
            int64_t d = r < 10 ? rng_range(&rng, -TB_MS, 3 * TB_MS)
                               : rng_range(&rng, 0, 5 * TB_SEC);
            assert_int_equal(tb_schedule(s, d, noop_task, NULL, &h), TB_OK);
        } else if (r < 53) {
            int64_t per = rng_range(&rng, 1, 500 * TB_MS);
            assert_int_equal(tb_schedule_fixed_rate(s, per, noop_task, NULL, &h,
                                                    per), TB_OK);
        } else if (r < 80) {
            if (nh)
                assert_true(tb_cancel(s, handles[rng_next(&rng) % nh]) >= 0);
        } else {
            now += rng_range(&rng, 0, 40 * TB_MS);
            assert_true(tb_advance(s, now) >= 0);
        }
        if (h != TB_HANDLE_NONE)
            handles[nh < MAXH ? nh++ : rng_next(&rng) % MAXH] = h;
        if (op % 16 == 0)
            assert_sound(s);
    }
    assert_sound(s);
    tb_destroy(s);
}

/* The wheel's clocks move only to polled buckets' times (as in Kafka), so
 * after 5 s idle at the defaults (1 ms, 20 buckets) a delay of 0 does not go
 * straight to the executor: level 0's clock still reads 0, the task lands
 * in a level-2 bucket (400 ms ticks) that is already due, cascades once to
 * level 1 and only then reaches the executor, all within one advance.
 * Once the clocks have caught up, a delay of 0 is handed off at once. */
static void test_delay0_after_idle_cascades(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(unit_backend(), NULL);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe late = {.rec = &rec, .id = 1}, now = {.rec = &rec, .id = 2};
    assert_int_equal(tb_advance(s, 5 * TB_SEC), 0);
    assert_int_equal(tb_schedule(s, 0, probe_task, &late, NULL), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.levels, 3);         /* levels 1 and 2 created */
    assert_int_equal(tb_pending(s), 1);     /* in a bucket, not handed off */
    assert_int_equal(st.running, 0);
    assert_int_equal(st.bucket_offers, 1);
    assert_sound(s);
    assert_int_equal(tb_advance(s, 5 * TB_SEC), 1);
    assert_int_equal(late.runs, 1);
    assert_int_equal(rec.runs[0].at, 5 * TB_SEC); /* not late */
    st = stats_of(s);
    assert_int_equal(st.cascades, 1);       /* level 2 -> level 1 */
    assert_int_equal(st.ticks, 2);          /* the level-2, then level-1 bucket */
    assert_int_equal(st.bucket_offers, 2);
    /* the clocks now read 5 s: straight to the executor */
    assert_int_equal(tb_schedule(s, 0, probe_task, &now, NULL), TB_OK);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(stats_of(s).running, 1);
    assert_int_equal(tb_advance(s, 5 * TB_SEC), 1);
    st = stats_of(s);
    assert_int_equal(st.cascades, 1);
    assert_int_equal(st.bucket_offers, 2);
    assert_int_equal(now.runs, 1);
    assert_sound(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* ---- Threaded mode ----------------------------------------------------- */

static struct flag ran;

/* The reaper sleeps on a far bucket with a 10 s poll; an offer of an
 * earlier bucket wakes it at once (DelayQueue.offer signals on a new
 * head), so the task does not wait for the poll to time out. */
static void test_reaper_wakes_for_earlier_bucket(void **state)
{
    (void)state;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .poll_ns = 10 * TB_SEC};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    assert_int_equal(tb_schedule(s, 3600 * TB_SEC, noop_task, NULL, NULL),
                     TB_OK);
    struct timespec ts = {0, 50 * 1000 * 1000};
    nanosleep(&ts, NULL);
    atomic_store(&ran.at, 0);
    atomic_store(&ran.runs, 0);
    int64_t start = tb_monotonic_ns();
    int64_t deadline = start + 20 * TB_MS;
    assert_int_equal(tb_schedule(s, 20 * TB_MS, flag_task, &ran, NULL), TB_OK);
    /* generous: well short of the 10 s poll, far above 20 ms */
    assert_true(wait_until(flag_set, &ran, 5 * TB_SEC));
    assert_true(atomic_load(&ran.at) >= deadline);
    assert_true(atomic_load(&ran.at) - start < 5 * TB_SEC);
    struct tb_stats st = stats_of(s);
    assert_true(st.timed_waits >= 1);
    assert_true(st.wakeups >= 1);
    assert_int_equal(st.fired, 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 1);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    tb_destroy(s);
}

static int polls_timed_out(void *ctx)
{
    struct tb_stats st;
    tb_stats(ctx, &st);
    return st.wakeups >= 3 && st.timed_waits >= 3;
}

/* With one far task the reaper still wakes at every poll timeout (Kafka's
 * 200 ms, here 20 ms); nothing runs and no bucket is polled. */
static void test_reaper_bounded_poll(void **state)
{
    (void)state;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .poll_ns = 20 * TB_MS};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_schedule(s, 3600 * TB_SEC, noop_task, NULL, NULL),
                     TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(polls_timed_out, s, 10 * TB_SEC));
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 0);
    assert_int_equal(st.ticks, 0);
    assert_int_equal(tb_shutdown(s), 1);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_sound(s);
    tb_destroy(s);
}

/* cfg.threads executors: a task waiting for another task of the same
 * bucket finishes only if a second executor runs it meanwhile. */
static _Atomic int partner_ran;
static _Atomic int waiter_saw_partner;

static int waiter(void *arg)
{
    (void)arg;
    int64_t end = tb_monotonic_ns() + 10 * TB_SEC;
    while (!atomic_load(&partner_ran) && tb_monotonic_ns() < end) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    atomic_store(&waiter_saw_partner, atomic_load(&partner_ran) ? 1 : -1);
    return 0;
}

static int partner(void *arg)
{
    (void)arg;
    atomic_store(&partner_ran, 1);
    return 0;
}

static int waiter_done(void *ctx)
{
    (void)ctx;
    return atomic_load(&waiter_saw_partner) != 0;
}

static void test_executor_pool(void **state)
{
    (void)state;
    atomic_store(&partner_ran, 0);
    atomic_store(&waiter_saw_partner, 0);
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 2};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, waiter, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 10 * TB_MS, partner, NULL, NULL), TB_OK);
    assert_true(wait_until(waiter_done, NULL, 30 * TB_SEC));
    assert_int_equal(atomic_load(&waiter_saw_partner), 1);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 2);
    assert_int_equal(st.running, 0);
    assert_sound(s);
    tb_destroy(s);
}

/* Threaded cancel and periodic runs, then a graceful shutdown. */
static _Atomic int ticks_seen;

static int count_tick(void *arg)
{
    (void)arg;
    atomic_fetch_add(&ticks_seen, 1);
    return 0;
}

static int five_ticks(void *ctx)
{
    (void)ctx;
    return atomic_load(&ticks_seen) >= 5;
}

static void test_threaded_periodic_and_cancel(void **state)
{
    (void)state;
    atomic_store(&ticks_seen, 0);
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .wheel_size = 3};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    tb_handle hp, hc;
    assert_int_equal(tb_schedule_fixed_rate(s, 2 * TB_MS, count_tick, NULL, &hp,
                                            5 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 60 * TB_SEC, noop_task, NULL, &hc), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(five_ticks, NULL, 30 * TB_SEC));
    assert_int_equal(tb_cancel(s, hc), 1);
    assert_int_equal(tb_cancel(s, hp), 1);
    assert_int_equal(tb_cancel(s, hp), 0);
    int seen = atomic_load(&ticks_seen);
    struct timespec ts = {0, 30 * 1000 * 1000};
    nanosleep(&ts, NULL);
    /* at most the run that was under way when cancel answered */
    assert_true(atomic_load(&ticks_seen) <= seen + 1);
    assert_int_equal(tb_pending(s), 0);
    assert_sound(s);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_sound(s);
    tb_destroy(s);
}

/* Never early with many tasks through the threads: 2000 tasks with delays
 * up to 300 ms on 3-bucket levels (so most cascade on the way down), each
 * noting when it ran.  A task's deadline is at least the time read before
 * its schedule plus its delay. */
enum { NE_N = 2000 };
static int64_t ne_due[NE_N];
static _Atomic int64_t ne_ran[NE_N];
static _Atomic int ne_count;

static int ne_task(void *arg)
{
    int i = (int)(intptr_t)arg;
    atomic_store(&ne_ran[i], tb_monotonic_ns());
    atomic_fetch_add(&ne_count, 1);
    return 0;
}

static int ne_all_ran(void *ctx)
{
    (void)ctx;
    return atomic_load(&ne_count) == NE_N;
}

static void test_threaded_never_early_many(void **state)
{
    (void)state;
    atomic_store(&ne_count, 0);
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .wheel_size = 3,
                          .threads = 2};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    uint64_t rng = 99;
    for (int i = 0; i < NE_N; i++) {
        int64_t delay = rng_range(&rng, 0, 300 * TB_MS);
        atomic_store(&ne_ran[i], 0);
        ne_due[i] = tb_monotonic_ns() + delay;
        assert_int_equal(tb_schedule(s, delay, ne_task, (void *)(intptr_t)i,
                                     NULL), TB_OK);
    }
    assert_true(wait_until(ne_all_ran, NULL, 60 * TB_SEC));
    for (int i = 0; i < NE_N; i++)
        assert_true(atomic_load(&ne_ran[i]) >= ne_due[i]);
    struct tb_stats st = stats_of(s);
    assert_true(st.cascades > 0);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    st = stats_of(s);
    assert_int_equal(st.fired, NE_N);
    assert_int_equal(st.finished, NE_N);
    assert_sound(s);
    tb_destroy(s);
}

/* A task that holds the only executor until released, so that tasks due
 * meanwhile wait in the executor's queue (handed off, no longer pending). */
static _Atomic int blocker_in, blocker_go, queued_runs;

static int blocker(void *arg)
{
    (void)arg;
    atomic_store(&blocker_in, 1);
    int64_t end = tb_monotonic_ns() + 30 * TB_SEC;
    while (!atomic_load(&blocker_go) && tb_monotonic_ns() < end) {
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

static int queued_task(void *arg)
{
    (void)arg;
    atomic_fetch_add(&queued_runs, 1);
    return 0;
}

static int blocker_running(void *ctx)
{
    (void)ctx;
    return atomic_load(&blocker_in);
}

static int five_queued(void *ctx)
{
    struct tb_stats st;
    tb_stats(ctx, &st);
    return st.running == 6; /* the blocker and five in the queue */
}

/* Blocks the executor, then has five tasks handed off behind it and one
 * far task in the wheel. */
static struct tb_sched *executor_backlog(tb_handle h[5])
{
    atomic_store(&blocker_in, 0);
    atomic_store(&blocker_go, 0);
    atomic_store(&queued_runs, 0);
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 1};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    assert_int_equal(tb_schedule(s, 0, blocker, NULL, NULL), TB_OK);
    assert_true(wait_until(blocker_running, NULL, 30 * TB_SEC));
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, 2 * TB_MS, queued_task, NULL, &h[i]),
                         TB_OK);
    assert_int_equal(tb_schedule(s, 3600 * TB_SEC, queued_task, NULL, NULL),
                     TB_OK);
    assert_true(wait_until(five_queued, s, 30 * TB_SEC));
    assert_int_equal(tb_pending(s), 1);
    return s;
}

struct returned {
    tb_handle h[8];
    int n;
};

static void note_returned(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    struct returned *r = ctx;
    assert_ptr_equal(fn, queued_task);
    (void)arg;
    if (r->n < 8)
        r->h[r->n] = h;
    r->n++;
}

/* shutdown_now returns the tasks already handed to the executor but not
 * started, with the wheel's; none of them runs. */
static void test_threaded_shutdown_now_returns_queued(void **state)
{
    (void)state;
    tb_handle h[5];
    struct tb_sched *s = executor_backlog(h);
    struct returned r = {0};
    assert_int_equal(tb_shutdown_now(s, note_returned, &r), 6);
    assert_int_equal(r.n, 6);
    for (int i = 0; i < 5; i++) {
        int found = 0;
        for (int k = 0; k < r.n; k++)
            found += r.h[k] == h[i];
        assert_int_equal(found, 1);
    }
    atomic_store(&blocker_go, 1);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_int_equal(atomic_load(&queued_runs), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 6);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.running, 0);
    assert_sound(s);
    tb_destroy(s);
}

/* tb_shutdown drops the wheel's task but the executor still runs the five
 * handed to it, after the blocker. */
static void test_threaded_shutdown_runs_queued(void **state)
{
    (void)state;
    tb_handle h[5];
    struct tb_sched *s = executor_backlog(h);
    assert_int_equal(tb_shutdown(s), 1);
    assert_int_equal(tb_schedule(s, 0, queued_task, NULL, NULL),
                     TB_ESHUTDOWN);
    atomic_store(&blocker_go, 1);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_int_equal(atomic_load(&queued_runs), 5);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.fired, 6);
    assert_int_equal(st.running, 0);
    assert_sound(s);
    tb_destroy(s);
}

int main(void)
{
    unit_init("hierwheel");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_past_deadlines_skip_wheel),
        cmocka_unit_test(test_cancel_within_bucket),
        cmocka_unit_test(test_delays_0_to_500ms),
        cmocka_unit_test(test_never_early_off_grid),
        cmocka_unit_test(test_rounds_up_not_down),
        cmocka_unit_test(test_levels_created_lazily),
        cmocka_unit_test(test_bucket_offered_once_per_revolution),
        cmocka_unit_test(test_clock_jumps_to_due_buckets),
        cmocka_unit_test(test_cancel_unlinks_at_once),
        cmocka_unit_test(test_reschedule_moves),
        cmocka_unit_test(test_shutdown_now_exact),
        cmocka_unit_test(test_shutdown_drops_wheel),
        cmocka_unit_test(test_cancel_after_handoff),
        cmocka_unit_test(test_failing_task),
        cmocka_unit_test(test_periodic_across_levels),
        cmocka_unit_test(test_full_range),
        cmocka_unit_test(test_fast_path_files_as_slow_path),
        cmocka_unit_test(test_memory_per_task),
        cmocka_unit_test(test_cascades_per_task),
        cmocka_unit_test(test_delay0_after_idle_cascades),
        cmocka_unit_test(test_sift_levels_exact),
        cmocka_unit_test(test_check_random),
        cmocka_unit_test(test_reaper_wakes_for_earlier_bucket),
        cmocka_unit_test(test_reaper_bounded_poll),
        cmocka_unit_test(test_executor_pool),
        cmocka_unit_test(test_threaded_periodic_and_cancel),
        cmocka_unit_test(test_threaded_never_early_many),
        cmocka_unit_test(test_threaded_shutdown_now_returns_queued),
        cmocka_unit_test(test_threaded_shutdown_runs_queued),
    };
    return cmocka_run_group_tests_name("hierwheel", tests, NULL, NULL);
}
