/*
 * test_hrtree.c — unit tests of hrtree's fidelity to Linux's hrtimers
 * (6.6: lib/rbtree.c, lib/timerqueue.c, kernel/time/hrtimer.c): order by
 * hard expiry, equal expiries in enqueue order (and why that is not the
 * contract's FIFO ties), the leftmost cache and every red-black invariant
 * after each kind of removal (leftmost, inner, rightmost, root; by cancel,
 * expiry and reschedule), soft/hard ranges (a run of the queue stops at the
 * first timer whose soft expiry has not passed; a ranged timer runs at the
 * earliest hard expiry at or after its soft one; overlapping ranges share
 * one wake-up of the thread where exact timers need one each),
 * hrtimer_forward's overrun count and skipped periods, fixed delay from the
 * end of the run, re-arm in place, the kernel's interrupt (issue 38: the
 * queue runs only at the programmed hard expiry, a cancel of the leftmost
 * reprograms, fixed rate forwards from the callback's own now, a one-shot
 * restarted from its callback stays queued; each in both modes), bad
 * input, and 10^5 random operations with ranges under the checker.
 *
 * Virtual-clock cases assert exact times and counts; monotonic ones only use
 * generous margins and never assert speed.
 */
#include <pthread.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>

#include "../hrtree/hrtree.h"
#include "testlib.h"

/* Ids of the recorded runs, in order. */
static size_t ids_of(struct recorder *r, int *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n && n < cap; i++)
        out[n++] = r->runs[i].id;
    return n;
}

/* ---- Shape ------------------------------------------------------------- */

static void test_caps(void **state)
{
    (void)state;
    const struct tb_backend *b = unit_backend();
    assert_true(b->caps & TB_CAP_RANGE);
    assert_true(b->caps & TB_CAP_SKIP_MISSED);
    /* ties run in enqueue order, not submission order across re-arms */
    assert_false(b->caps & TB_CAP_FIFO_TIES);
    assert_false(b->caps & TB_CAP_TICKED);
    assert_false(b->caps & TB_CAP_GRANULAR);
    assert_false(b->caps & TB_CAP_LAZY_CANCEL);
    assert_false(b->caps & TB_CAP_PURGE);
    assert_false(b->caps & TB_CAP_FAIL_KILLS);
    /* it sleeps in a timed condition wait */
    assert_false(b->caps & TB_CAP_WAIT_NANOSLEEP);
    struct tb_config c = {.threads = 8};
    struct tb_sched *s = make_sched(b, &c);
    tb_sched_config(s, &c);
    assert_int_equal(c.threads, 1); /* one CPU's interrupt */
    assert_int_equal(tb_purge(s), TB_ENOTSUP);
    /* one 64-byte record per timer and nothing else that grows: 64 B and
     * the pool's chunk table per pending timer */
    assert_int_equal(tb_reserve(s, 1u << 16), TB_OK);
    for (int i = 0; i < 1 << 16; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_true(st.bytes_held <= 65u * (1u << 16) + 4096);
    assert_true(st.bytes_held >= 64u * (1u << 16));
    tb_destroy(s);
}

/* ---- Order ------------------------------------------------------------- */

/* Random hard expiries run in order; one-shots of one expiry run in the
 * order they were scheduled (timerqueue_add sends equal keys right). */
static void test_order_and_equal_keys(void **state)
{
    (void)state;
    enum { N = 2000, E = 50 };
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    static struct probe p[N + E];
    static int64_t when[N + E];
    uint64_t rng = 5;
    for (int i = 0; i < N + E; i++) {
        p[i] = (struct probe){.rec = &r, .id = i};
        when[i] = i < N ? rng_range(&rng, 0, TB_SEC) : TB_SEC / 2;
        assert_int_equal(tb_schedule(s, when[i], probe_task, &p[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, TB_SEC), N + E);
    int last_equal = N - 1;
    for (size_t i = 0; i < r.n; i++) {
        int id = r.runs[i].id;
        assert_int_equal(r.runs[i].at, TB_SEC);
        if (i)
            assert_true(when[r.runs[i - 1].id] <= when[id]);
        if (id >= N) {
            assert_true(id > last_equal); /* submission order */
            last_equal = id;
        }
    }
    assert_int_equal(last_equal, N + E - 1);
    rec_free(&r);
    tb_destroy(s);
}

/* Why TB_CAP_FIFO_TIES is not declared: a re-armed periodic timer (and a
 * rescheduled one) is enqueued anew, behind the timers of its new expiry
 * that are already queued, though it was submitted before them.  P (every
 * 10 ms) re-arms for 20 ms at its run at 10 ms; X, scheduled for 20 ms
 * before that, runs first. */
static void test_ties_in_enqueue_order(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p = {.rec = &r, .id = 1}, x = {.rec = &r, .id = 2},
                 y = {.rec = &r, .id = 3}, z = {.rec = &r, .id = 4};
    tb_handle hy;
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, &p,
                                            &p.self, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &x, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &y, &hy), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &z, NULL), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    /* y re-armed to the same expiry goes behind p's re-arm */
    assert_int_equal(tb_reschedule(s, hy, 10 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 4);
    int ids[8];
    assert_int_equal(ids_of(&r, ids, 8), 5);
    assert_int_equal(ids[0], 1);
    assert_int_equal(ids[1], 2); /* x */
    assert_int_equal(ids[2], 4); /* z */
    assert_int_equal(ids[3], 1); /* p, re-armed at 10 ms */
    assert_int_equal(ids[4], 3); /* y, rescheduled after that */
    assert_int_equal(tb_cancel(s, p.self), 1);
    rec_free(&r);
    tb_destroy(s);
}

/* ---- The leftmost cache and the tree after every kind of removal ------- */

/* 15 timers at 1..15 ms inserted in level order (8, 4, 12, 2, 6, ...) make a
 * perfect tree without a rotation: root 8, leftmost 1, rightmost 15, inner
 * nodes 4, 12, 2, 6, 10, 14.  Each kind of removal, then the checker (which
 * holds the cache to the first node in order, and every red-black rule) and
 * the run order of what is left. */
enum { PERFECT = 15 };
static const int level_order[PERFECT] = {8, 4, 12, 2, 6, 10, 14, 1,
                                         3, 5, 7, 9, 11, 13, 15};

struct perfect {
    struct tb_sched *s;
    struct recorder r;
    struct probe p[PERFECT + 1];
    tb_handle h[PERFECT + 1]; /* by key, 1..15 */
};

static void perfect_build(struct perfect *t)
{
    t->s = vsched();
    rec_init(&t->r, t->s);
    for (int i = 0; i < PERFECT; i++) {
        int k = level_order[i];
        t->p[k] = (struct probe){.rec = &t->r, .id = k};
        assert_int_equal(tb_schedule(t->s, k * TB_MS, probe_task, &t->p[k],
                                     &t->h[k]), TB_OK);
        assert_int_equal(tb_check(t->s), TB_OK);
    }
    /* a perfect tree of 15: every insert compared one node per level above
     * it: 2 * 1 + 4 * 2 + 8 * 3 */
    assert_int_equal(stats_of(t->s).visits, 2 + 8 + 24);
}

/* Runs what is left and checks it is exactly `keys` (ascending), each at its
 * own time; then frees. */
static void perfect_finish(struct perfect *t, const int *keys, size_t n)
{
    for (int k = 1; k <= PERFECT; k++) {
        assert_int_equal(tb_check(t->s), TB_OK);
        assert_true(tb_advance(t->s, k * TB_MS) >= 0);
    }
    assert_int_equal(t->r.n, n);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(t->r.runs[i].id, keys[i]);
        assert_int_equal(t->r.runs[i].at, keys[i] * TB_MS);
    }
    assert_int_equal(tb_pending(t->s), 0);
    assert_int_equal(tb_check(t->s), TB_OK);
    assert_balanced(t->s);
    rec_free(&t->r);
    tb_destroy(t->s);
}

/* Keys 1..15 without those in `gone`. */
static size_t keys_without(const int *gone, size_t ngone, int *out)
{
    size_t n = 0;
    for (int k = 1; k <= PERFECT; k++) {
        bool drop = false;
        for (size_t i = 0; i < ngone; i++)
            drop |= gone[i] == k;
        if (!drop)
            out[n++] = k;
    }
    return n;
}

static void test_cache_after_cancels(void **state)
{
    (void)state;
    /* one order per kind first: leftmost, inner, rightmost, root; then
     * every key removed first and a second one after it */
    static const int firsts[][2] = {{1, 2}, {4, 12}, {15, 14}, {8, 9},
                                    {2, 1}, {6, 7}, {3, 8}};
    for (size_t c = 0; c < sizeof firsts / sizeof firsts[0]; c++) {
        struct perfect t;
        perfect_build(&t);
        for (int i = 0; i < 2; i++) {
            assert_int_equal(tb_cancel(t.s, t.h[firsts[c][i]]), 1);
            assert_int_equal(tb_check(t.s), TB_OK);
            assert_int_equal(tb_pending(t.s), PERFECT - 1 - i);
        }
        int left[PERFECT];
        size_t n = keys_without(firsts[c], 2, left);
        perfect_finish(&t, left, n);
    }
    for (int a = 1; a <= PERFECT; a++) {
        for (int b = 1; b <= PERFECT; b++) {
            if (a == b)
                continue;
            struct perfect t;
            perfect_build(&t);
            assert_int_equal(tb_cancel(t.s, t.h[a]), 1);
            assert_int_equal(tb_check(t.s), TB_OK);
            assert_int_equal(tb_cancel(t.s, t.h[b]), 1);
            assert_int_equal(tb_check(t.s), TB_OK);
            assert_int_equal(tb_cancel(t.s, t.h[a]), 0);
            int gone[2] = {a, b}, left[PERFECT];
            size_t n = keys_without(gone, 2, left);
            perfect_finish(&t, left, n);
        }
    }
}

/* Expiry takes the leftmost each time: after every run the cache is the
 * next key.  Cancelling down to one node and then that one empties it. */
static void test_cache_after_expiry_and_to_empty(void **state)
{
    (void)state;
    struct perfect t;
    perfect_build(&t);
    for (int k = 1; k <= 7; k++) {
        assert_int_equal(tb_advance(t.s, k * TB_MS), 1);
        assert_int_equal(tb_check(t.s), TB_OK);
    }
    /* the root (8) is now the leftmost */
    assert_int_equal(tb_cancel(t.s, t.h[8]), 1);
    assert_int_equal(tb_check(t.s), TB_OK);
    for (int k = 15; k >= 10; k--) {
        assert_int_equal(tb_cancel(t.s, t.h[k]), 1);
        assert_int_equal(tb_check(t.s), TB_OK);
    }
    assert_int_equal(tb_pending(t.s), 1); /* 9 */
    assert_int_equal(tb_cancel(t.s, t.h[9]), 1);
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(tb_pending(t.s), 0);
    assert_int_equal(tb_advance(t.s, TB_SEC), 0);
    /* refilled after emptying: a fresh root is the leftmost */
    struct probe q = {.rec = &t.r, .id = 99};
    assert_int_equal(tb_schedule(t.s, 0, probe_task, &q, NULL), TB_OK);
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(tb_advance(t.s, TB_SEC), 1);
    assert_int_equal(t.r.n, 8);
    for (int i = 0; i < 7; i++)
        assert_int_equal(t.r.runs[i].id, i + 1);
    assert_int_equal(t.r.runs[7].id, 99);
    assert_balanced(t.s);
    rec_free(&t.r);
    tb_destroy(t.s);
}

/* Reschedule removes and inserts: the leftmost moved later (the cache goes
 * to its successor), an inner node moved to the front (it becomes the
 * cache), the root and the rightmost moved, each under the checker. */
static void test_cache_after_reschedule(void **state)
{
    (void)state;
    struct perfect t;
    perfect_build(&t);
    tb_handle h1 = t.h[1];
    assert_int_equal(tb_reschedule(t.s, t.h[1], 20 * TB_MS), 1); /* leftmost */
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(tb_reschedule(t.s, t.h[6], 0), 1);        /* inner */
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(tb_reschedule(t.s, t.h[8], 30 * TB_MS), 1); /* root */
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(tb_reschedule(t.s, t.h[15], 5 * TB_MS), 1); /* right */
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_int_equal(t.h[1], h1); /* in place: the handle stays */
    assert_int_equal(tb_pending(t.s), PERFECT);
    assert_int_equal(tb_advance(t.s, 0), 1);
    assert_int_equal(t.r.runs[0].id, 6);
    assert_int_equal(tb_advance(t.s, 30 * TB_MS), PERFECT - 1);
    /* 2 3 4 5, then 15 at 5 ms (queued behind 5), 7, 9..14, 1, 8 */
    static const int want[] = {6, 2, 3, 4, 5, 15, 7, 9, 10, 11, 12, 13, 14,
                               1, 8};
    assert_int_equal(t.r.n, PERFECT);
    for (int i = 0; i < PERFECT; i++)
        assert_int_equal(t.r.runs[i].id, want[i]);
    assert_int_equal(tb_check(t.s), TB_OK);
    assert_balanced(t.s);
    rec_free(&t.r);
    tb_destroy(t.s);
}

/* ---- Soft and hard expiry ---------------------------------------------- */

/* A run of the queue at `now` takes timers from the left while their soft
 * expiry has passed and stops at the first whose has not: B (soft 5, hard
 * 20) waits at 7 behind A (exact at 10), then runs with A at 10, the
 * earliest hard expiry at or after its soft one.  C (soft 12, hard 30) has
 * no earlier hard expiry after its soft one and runs at its own.  D (soft
 * 31, hard 46) and E (soft 33, hard 40) both run at 40, E's hard expiry,
 * E first (it is the leftmost). */
static void test_range_runs_at_earliest_hard(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe a = {.rec = &r, .id = 'A'}, b = {.rec = &r, .id = 'B'},
                 c = {.rec = &r, .id = 'C'}, d = {.rec = &r, .id = 'D'},
                 e = {.rec = &r, .id = 'E'};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &a, NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, 5 * TB_MS, 15 * TB_MS, probe_task,
                                       &b, NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, 12 * TB_MS, 18 * TB_MS, probe_task,
                                       &c, NULL), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 7 * TB_MS), 0); /* A's soft blocks B */
    /* the interrupts come at the leftmost's hard expiry: 10, 30 */
    assert_int_equal(tb_advance(s, 10 * TB_MS), 2);
    assert_int_equal(tb_advance(s, 30 * TB_MS), 1);
    assert_int_equal(tb_schedule_range(s, TB_MS, 15 * TB_MS, probe_task, &d,
                                       NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, 3 * TB_MS, 7 * TB_MS, probe_task,
                                       &e, NULL), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 40 * TB_MS), 2);
    static const int want[] = {'A', 'B', 'C', 'E', 'D'};
    static const int64_t at[] = {10, 10, 30, 40, 40};
    assert_int_equal(r.n, 5);
    for (int i = 0; i < 5; i++) {
        assert_int_equal(r.runs[i].id, want[i]);
        assert_int_equal(r.runs[i].at, at[i] * TB_MS);
    }
    /* a ranged timer never runs before its soft expiry, even when an
     * earlier hard expiry brings an interrupt */
    struct probe f = {.rec = &r, .id = 'F'}, g = {.rec = &r, .id = 'G'};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &f, NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, 11 * TB_MS, TB_MS, probe_task, &g,
                                       NULL), TB_OK);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 1);
    /* nor at its soft expiry: no event is programmed there; the next
     * interrupt is its own hard expiry */
    assert_int_equal(tb_advance(s, 51 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 52 * TB_MS - 1), 0);
    assert_int_equal(tb_advance(s, 52 * TB_MS), 1);
    assert_int_equal(r.runs[6].id, 'G');
    assert_int_equal(r.runs[6].at, 52 * TB_MS);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

struct batch {
    struct flag f[8];
    int n;
};

static int batch_done(void *arg)
{
    struct batch *b = arg;
    for (int i = 0; i < b->n; i++)
        if (atomic_load(&b->f[i].runs) != 1)
            return 0;
    return 1;
}

/* Coalescing, threaded: 8 timers whose ranges overlap (soft 20..27 ms,
 * hard 300..307 ms) run in one wake-up, at the earliest hard expiry; the
 * same 8 timers exact (slack 0, 40 ms apart) need a wake-up each.  Both
 * are scheduled before tb_start, so no schedule wakes the thread. */
static void test_coalescing_saves_wakeups(void **state)
{
    (void)state;
    enum { N = 8 };
    uint64_t wakeups[2];
    for (int ranged = 1; ranged >= 0; ranged--) {
        struct tb_sched *s = msched();
        struct batch b = {.n = N};
        int64_t t0 = tb_monotonic_ns();
        for (int i = 0; i < N; i++) {
            int rc = ranged
                         ? tb_schedule_range(s, 20 * TB_MS + i * TB_MS,
                                             280 * TB_MS, flag_task, &b.f[i],
                                             NULL)
                         : tb_schedule(s, 40 * TB_MS * (i + 1), flag_task,
                                       &b.f[i], NULL);
            assert_int_equal(rc, TB_OK);
        }
        assert_int_equal(tb_start(s), TB_OK);
        assert_true(wait_until(batch_done, &b, 30 * TB_SEC));
        for (int i = 0; i < N; i++) {
            int64_t soft = ranged ? 20 * TB_MS + i * TB_MS
                                  : 40 * TB_MS * (i + 1);
            assert_true(atomic_load(&b.f[i].at) >= t0 + soft);
        }
        wakeups[ranged] = stats_of(s).wakeups;
        assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
        assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
        assert_balanced(s);
        tb_destroy(s);
    }
    print_message("hrtree coalescing: %llu wake-up(s) for 8 overlapping "
                  "ranges, %llu for 8 exact timers\n",
                  (unsigned long long)wakeups[1],
                  (unsigned long long)wakeups[0]);
    /* one wake-up (two if a spurious one came; none if the thread started
     * after the soft expiries had passed); exact timers 40 ms apart
     * coalesce only when the thread is 40 ms late, so at least half wake
     * on their own even on a loaded machine */
    assert_true(wakeups[1] <= 2);
    assert_true(wakeups[0] >= N / 2);
    assert_true(wakeups[0] > wakeups[1]);
}

/* ---- hrtimer_forward ---------------------------------------------------- */

static void test_forward_overruns(void **state)
{
    (void)state;
    struct {
        int64_t expires, now, interval;
        uint64_t orun;
        int64_t next;
    } cases[] = {
        {100, 95, 10, 0, 100},   /* not expired: untouched */
        {100, 100, 10, 1, 110},  /* on time */
        {100, 109, 10, 1, 110},
        {100, 110, 10, 2, 120},  /* exactly one period late */
        {100, 135, 10, 4, 140},  /* 110, 120, 130 missed */
        {0, 0, 1, 1, 1},
        {7, 1000007, 1, 1000001, 1000008},
        {INT64_MAX - 15, INT64_MAX - 15, 10, 1, INT64_MAX - 5},
        {INT64_MAX - 5, INT64_MAX - 5, 10, 1, INT64_MAX}, /* end of clock */
        {0, INT64_MAX - 1, TB_MAX_DELAY, 2, INT64_MAX},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int64_t e = cases[i].expires;
        assert_int_equal(tb_hrtree_forward(&e, cases[i].now,
                                           cases[i].interval),
                         cases[i].orun);
        assert_int_equal(e, cases[i].next);
    }
}

/* Fixed rate is a callback forwarding with the interrupt's now: a run 35 ms
 * late (overrun 4) skips 30, 40 and 50 and keeps the grid; a run 2 ms late
 * keeps its next; 10 s late it runs once, not a thousand times. */
static void test_fixed_rate_skips_missed(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p = {.rec = &r, .id = 1};
    advance_skipping_missed(s, &p, &p.self);
    assert_int_equal(p.runs, 5);
    /* off the tree during its run, on it between runs */
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_cancel(s, p.self), 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* Fixed delay: the callback sets its expiry to the end of its run plus the
 * delay, so a run that takes 4 ms pushes the next one by 4 ms. */
static void test_fixed_delay_from_end(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p;
    run_slow_fixed_delay(s, &r, &p, 60 * TB_MS);
    /* 10, 24, 38, 52 */
    assert_int_equal(r.n, 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(r.runs[i].at, (10 + 14 * i) * TB_MS);
    rec_free(&r);
    tb_destroy(s);
}

/* A periodic task that fails stops; one cancelled from inside its run
 * stops; neither is re-armed. */
static void test_periodic_stops(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe fail = {.rec = &r, .id = 1, .fail = 1};
    struct probe self = {.rec = &r, .id = 2, .cancel_self_at = 2};
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, probe_task, &fail, NULL,
                                            TB_MS), TB_OK);
    assert_int_equal(tb_schedule_fixed_delay(s, TB_MS, probe_task, &self,
                                             &self.self, TB_MS), TB_OK);
    for (int k = 1; k <= 5; k++)
        assert_true(tb_advance(s, k * TB_MS) >= 0);
    assert_int_equal(fail.runs, 1);
    assert_int_equal(self.runs, 2);
    assert_int_equal(self.cancel_result, 1);
    assert_int_equal(tb_pending(s), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* ---- Re-arm in place ---------------------------------------------------- */

static void test_rearm_in_place(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe a = {.rec = &r, .id = 1}, b = {.rec = &r, .id = 2},
                 p = {.rec = &r, .id = 3};
    tb_handle ha, hb, hp;
    assert_int_equal(tb_schedule_range(s, 10 * TB_MS, 90 * TB_MS, probe_task,
                                       &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 50 * TB_MS, probe_task, &b, &hb), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, probe_task, &p, &hp,
                                            5 * TB_MS), TB_OK);
    assert_int_equal(tb_reschedule(s, hp, TB_MS), TB_EINVAL);
    assert_int_equal(tb_reschedule(s, ha, TB_MAX_DELAY + 1), TB_ERANGE);
    /* hrtimer_start has no range: a's soft expiry becomes its hard one, so
     * the interrupt at 50 ms (b) no longer takes it */
    assert_int_equal(tb_reschedule(s, ha, 60 * TB_MS), 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_cancel(s, hp), 1);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 1);
    assert_int_equal(tb_reschedule(s, hb, TB_MS), 0); /* has run */
    assert_int_equal(tb_advance(s, 60 * TB_MS - 1), 0);
    assert_int_equal(tb_advance(s, 60 * TB_MS), 1);
    assert_int_equal(r.runs[1].id, 1);
    assert_int_equal(tb_reschedule(s, ha, TB_MS), 0);
    assert_int_equal(tb_reschedule(s, TB_HANDLE_NONE, TB_MS), 0);
    /* after shutdown: refused */
    struct probe c = {.rec = &r, .id = 4};
    assert_int_equal(tb_schedule(s, TB_MS, probe_task, &c, &c.self), TB_OK);
    assert_int_equal(tb_shutdown(s), 1);
    assert_int_equal(tb_reschedule(s, c.self, TB_MS), TB_ESHUTDOWN);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* Threaded: an hour-away timer rescheduled to 1 ms becomes the leftmost,
 * before the expiry the thread sleeps to, and wakes it; a ranged timer
 * whose hard expiry is later than the leftmost's does not. */
static void test_new_leftmost_wakes_thread(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct flag f = {0}, g = {0};
    tb_handle h;
    assert_int_equal(tb_schedule(s, 3600 * TB_SEC, flag_task, &f, &h), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(asleep, s, 30 * TB_SEC));
    uint64_t w0 = stats_of(s).wakeups;
    /* soft now, hard in two hours: queued right of the leftmost */
    assert_int_equal(tb_schedule_range(s, 0, 7200 * TB_SEC, flag_task, &g,
                                       NULL), TB_OK);
    int64_t t0 = tb_monotonic_ns();
    assert_int_equal(tb_reschedule(s, h, TB_MS), 1);
    assert_true(wait_until(flag_set, &f, 30 * TB_SEC));
    assert_true(atomic_load(&f.at) >= t0 + TB_MS);
    /* the same interrupt took g, whose soft expiry had passed */
    assert_true(wait_until(flag_set, &g, 30 * TB_SEC));
    assert_true(stats_of(s).wakeups >= w0 + 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- The kernel's interrupt (issue 38) ---------------------------------- */

/* A timer of the scenarios below, in either mode: when it ran (from t0),
 * how long its first run takes, and whether that run restarts it. */
struct ktimer {
    struct tb_sched *s;
    int64_t t0;
    int64_t spend;           /* the first run takes this long */
    int64_t restart;         /* > 0: the first run restarts it this far on */
    int restart_result;      /* what that tb_reschedule answered */
    int cancel_after_restart;/* the first run then cancels it, too */
    int cancel_result;
    tb_handle self;
    _Atomic int runs;
    _Atomic int64_t at[4];   /* start of each run, ns after t0 */
    _Atomic int64_t end0;    /* end of the first run, ns after t0 */
};

static int ktimer_task(void *arg)
{
    struct ktimer *k = arg;
    int n = atomic_load(&k->runs);
    int64_t start = tb_now(k->s);
    if (n < 4)
        atomic_store(&k->at[n], start - k->t0);
    if (n == 0 && k->spend) {
        if (tb_spend(k->s, k->spend) == TB_ESTATE) {
            /* monotonic: the run really takes that long */
            while (tb_monotonic_ns() < start + k->spend) {
                struct timespec ts = {0, 1000000};
                nanosleep(&ts, NULL);
            }
        }
    }
    if (n == 0 && k->restart) {
        k->restart_result = tb_reschedule(k->s, k->self, k->restart);
        if (k->cancel_after_restart)
            k->cancel_result = tb_cancel(k->s, k->self);
    }
    if (n == 0)
        atomic_store(&k->end0, tb_now(k->s) - k->t0);
    atomic_store(&k->runs, n + 1);
    return 0;
}

static int ktimer_ran(void *ctx)
{
    return atomic_load(&((struct ktimer *)ctx)->runs) > 0;
}

static int ktimer_ran_twice(void *ctx)
{
    return atomic_load(&((struct ktimer *)ctx)->runs) > 1;
}

static void sleep_until(int64_t t)
{
    while (tb_monotonic_ns() < t) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
}

/* Steps the virtual clock 1 ms at a time from its time to `to`; nothing may
 * run on the way. */
static void step_idle(struct tb_sched *s, int64_t to)
{
    for (int64_t t = tb_now(s) + TB_MS; t <= to; t += TB_MS)
        assert_int_equal(tb_advance(s, t), 0);
}

/* X with range [50, 900] ms and, at 200 ms, Z with range [200, 700] ms: a
 * new leftmost only reprograms the device; the interrupt comes at Z's hard
 * expiry, 700 ms, and runs Z and X (whose soft expiry has long passed).
 * The old model ran both at 200 ms, when Z's insert woke the thread. */
static void test_range_joined_runs_at_hard(void **state)
{
    (void)state;
    /* virtual, exactly */
    struct tb_sched *s = vsched();
    struct ktimer x = {.s = s}, z = {.s = s};
    assert_int_equal(tb_schedule_range(s, 50 * TB_MS, 850 * TB_MS,
                                       ktimer_task, &x, NULL), TB_OK);
    step_idle(s, 200 * TB_MS);
    assert_int_equal(tb_schedule_range(s, 0, 500 * TB_MS, ktimer_task, &z,
                                       NULL), TB_OK);
    step_idle(s, 699 * TB_MS);
    assert_int_equal(tb_advance(s, 700 * TB_MS), 2);
    assert_int_equal(atomic_load(&z.at[0]), 700 * TB_MS);
    assert_int_equal(atomic_load(&x.at[0]), 700 * TB_MS);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);

    /* monotonic: never before the programmed event, generous after */
    s = msched();
    int64_t t0 = tb_monotonic_ns();
    x = (struct ktimer){.s = s, .t0 = t0};
    z = (struct ktimer){.s = s, .t0 = t0};
    assert_int_equal(tb_schedule_range(s, 50 * TB_MS, 850 * TB_MS,
                                       ktimer_task, &x, NULL), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    sleep_until(t0 + 200 * TB_MS);
    int64_t zs = tb_monotonic_ns() - t0;
    assert_int_equal(tb_schedule_range(s, 0, 500 * TB_MS, ktimer_task, &z,
                                       NULL), TB_OK);
    assert_true(wait_until(ktimer_ran, &x, 30 * TB_SEC));
    assert_true(wait_until(ktimer_ran, &z, 30 * TB_SEC));
    /* the interrupt: Z's hard expiry, or X's if Z came late */
    int64_t event = zs + 500 * TB_MS < 900 * TB_MS ? zs + 500 * TB_MS
                                                   : 900 * TB_MS;
    print_message("hrtree: [50, 900] joined at %.1f ms by [200, 700]: ran "
                  "at %.1f and %.1f ms (programmed %.1f)\n", zs / 1e6,
                  atomic_load(&x.at[0]) / 1e6, atomic_load(&z.at[0]) / 1e6,
                  event / 1e6);
    assert_true(atomic_load(&x.at[0]) >= event);
    assert_true(atomic_load(&z.at[0]) >= event);
    assert_true(atomic_load(&x.at[0]) < event + 5 * TB_SEC);
    assert_true(atomic_load(&z.at[0]) < event + 5 * TB_SEC);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* A at 300 ms (exact) and B with range [100, 900] ms; A cancelled at 50
 * ms: the device is reprogrammed to B's hard expiry (hrtimer_force_reprogram
 * of the removed next timer), and B runs at 900 ms, not at 300. */
static void test_cancel_leftmost_reprograms(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct ktimer a = {.s = s}, b = {.s = s};
    tb_handle ha;
    assert_int_equal(tb_schedule(s, 300 * TB_MS, ktimer_task, &a, &ha),
                     TB_OK);
    assert_int_equal(tb_schedule_range(s, 100 * TB_MS, 800 * TB_MS,
                                       ktimer_task, &b, NULL), TB_OK);
    step_idle(s, 50 * TB_MS);
    assert_int_equal(tb_cancel(s, ha), 1);
    step_idle(s, 899 * TB_MS);
    assert_int_equal(tb_advance(s, 900 * TB_MS), 1);
    assert_int_equal(atomic_load(&b.at[0]), 900 * TB_MS);
    assert_int_equal(atomic_load(&a.runs), 0);
    /* the same for a reschedule of the leftmost to later */
    struct ktimer c = {.s = s}, d = {.s = s};
    tb_handle hc;
    assert_int_equal(tb_schedule(s, 300 * TB_MS, ktimer_task, &c, &hc),
                     TB_OK);
    assert_int_equal(tb_schedule_range(s, 100 * TB_MS, 800 * TB_MS,
                                       ktimer_task, &d, NULL), TB_OK);
    c.t0 = d.t0 = 900 * TB_MS;
    step_idle(s, 950 * TB_MS);
    assert_int_equal(tb_reschedule(s, hc, 2 * TB_SEC), 1);
    step_idle(s, 1799 * TB_MS);
    assert_int_equal(tb_advance(s, 1800 * TB_MS), 1);
    assert_int_equal(atomic_load(&d.at[0]), 900 * TB_MS);
    assert_int_equal(atomic_load(&c.runs), 0);
    assert_int_equal(tb_cancel(s, hc), 1);
    assert_balanced(s);
    tb_destroy(s);

    s = msched();
    int64_t t0 = tb_monotonic_ns();
    a = (struct ktimer){.s = s, .t0 = t0};
    b = (struct ktimer){.s = s, .t0 = t0};
    assert_int_equal(tb_schedule(s, 300 * TB_MS, ktimer_task, &a, &ha),
                     TB_OK);
    assert_int_equal(tb_schedule_range(s, 100 * TB_MS, 800 * TB_MS,
                                       ktimer_task, &b, NULL), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    sleep_until(t0 + 50 * TB_MS);
    int cancelled = tb_cancel(s, ha);
    assert_true(wait_until(ktimer_ran, &b, 30 * TB_SEC));
    print_message("hrtree: leftmost cancelled at %.1f ms (%d): [100, 900] "
                  "ran at %.1f ms\n", (tb_monotonic_ns() - t0) / 1e6,
                  cancelled, atomic_load(&b.at[0]) / 1e6);
    if (cancelled == 1) /* else the machine stalled 250 ms: A ran first */
        assert_true(atomic_load(&b.at[0]) >= 900 * TB_MS);
    assert_true(atomic_load(&b.at[0]) < 900 * TB_MS + 5 * TB_SEC);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* A 10 ms fixed-rate timer whose first run spends 25 ms: the callback's
 * hrtimer_forward_now reads the clock at its end, 35 ms, and forwards to
 * 40 ms (overrun 3); forwarding from the interrupt's 10 ms would leave 20
 * ms, overdue, and run at 35. */
static void test_fixed_rate_forwards_from_callback_now(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct ktimer p = {.s = s, .spend = 25 * TB_MS};
    tb_handle h;
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, ktimer_task, &p,
                                            &h, 10 * TB_MS), TB_OK);
    step_idle(s, 9 * TB_MS);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(tb_now(s), 35 * TB_MS);
    step_idle(s, 39 * TB_MS);
    assert_int_equal(tb_advance(s, 40 * TB_MS), 1);
    assert_int_equal(atomic_load(&p.at[0]), 10 * TB_MS);
    assert_int_equal(atomic_load(&p.at[1]), 40 * TB_MS);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 1); /* the grid kept */
    assert_int_equal(atomic_load(&p.at[2]), 50 * TB_MS);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_balanced(s);
    tb_destroy(s);

    s = msched();
    int64_t t0 = tb_monotonic_ns();
    p = (struct ktimer){.s = s, .t0 = t0, .spend = 25 * TB_MS};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, ktimer_task, &p,
                                            &h, 10 * TB_MS), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(ktimer_ran_twice, &p, 30 * TB_SEC));
    int64_t end0 = atomic_load(&p.end0), at1 = atomic_load(&p.at[1]);
    print_message("hrtree: 10 ms fixed rate, first run %.1f..%.1f ms, next "
                  "at %.1f ms\n", atomic_load(&p.at[0]) / 1e6, end0 / 1e6,
                  at1 / 1e6);
    /* never before the grid point after the run's end (t0 is read before
     * the schedule, so the grid is at most a little later than t0's) */
    assert_true(end0 >= 35 * TB_MS);
    assert_true(at1 >= 40 * TB_MS);
    assert_true(at1 >= (end0 / (10 * TB_MS)) * 10 * TB_MS);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* A one-shot restarted from its own callback (hrtimer_start on a timer in
 * its callback) is queued again and stays queued: it runs at the new time;
 * restarted and then cancelled in the same run, it does not. */
static void test_restart_from_own_callback(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct ktimer k = {.s = s, .restart = 20 * TB_MS};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, ktimer_task, &k, &k.self),
                     TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(k.restart_result, 1);
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_check(s), TB_OK);
    step_idle(s, 29 * TB_MS);
    assert_int_equal(tb_advance(s, 30 * TB_MS), 1);
    assert_int_equal(atomic_load(&k.at[1]), 30 * TB_MS);
    assert_int_equal(tb_advance(s, 100 * TB_MS), 0);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_reschedule(s, k.self, TB_MS), 0); /* has run */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.fired, 2);
    assert_int_equal(st.finished, 1);
    assert_balanced(s);

    struct ktimer c = {.s = s, .restart = 5 * TB_MS,
                       .cancel_after_restart = 1};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, ktimer_task, &c, &c.self),
                     TB_OK);
    assert_int_equal(tb_advance(s, 110 * TB_MS), 1);
    assert_int_equal(c.restart_result, 1);
    assert_int_equal(c.cancel_result, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_int_equal(tb_advance(s, TB_SEC), 0);
    assert_int_equal(atomic_load(&c.runs), 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
    tb_destroy(s);

    /* threaded: the same restart, and a shutdown with it queued */
    s = msched();
    int64_t t0 = tb_monotonic_ns();
    k = (struct ktimer){.s = s, .t0 = t0, .restart = 20 * TB_MS};
    assert_int_equal(tb_schedule(s, 10 * TB_MS, ktimer_task, &k, &k.self),
                     TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    assert_true(wait_until(ktimer_ran_twice, &k, 30 * TB_SEC));
    assert_int_equal(k.restart_result, 1);
    assert_true(atomic_load(&k.at[1]) >= atomic_load(&k.at[0]) + 20 * TB_MS);
    c = (struct ktimer){.s = s, .t0 = t0, .restart = 3600 * TB_SEC};
    assert_int_equal(tb_schedule(s, TB_MS, ktimer_task, &c, &c.self), TB_OK);
    assert_true(wait_until(ktimer_ran, &c, 30 * TB_SEC));
    while (tb_pending(s) != 1) {
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
    }
    assert_int_equal(c.restart_result, 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 1);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Bad input ---------------------------------------------------------- */

static void test_bad_input(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h = 77;
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, TB_MS, -1, noop_task, NULL, &h),
                     TB_EINVAL);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_schedule_range(s, TB_MS, 0, NULL, NULL, NULL),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_range(NULL, TB_MS, 0, noop_task, NULL, NULL),
                     TB_EINVAL);
    assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY, 1, noop_task, NULL,
                                       NULL), TB_ERANGE);
    assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY + 1, 0, noop_task,
                                       NULL, NULL), TB_ERANGE);
    assert_int_equal(tb_schedule_range(s, 0, INT64_MAX, noop_task, NULL,
                                       NULL), TB_ERANGE);
    /* at the edge: accepted, and a negative delay means 0 */
    assert_int_equal(tb_schedule_range(s, TB_MAX_DELAY - 5, 5, noop_task,
                                       NULL, NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, -9, 5, noop_task, NULL, &h), TB_OK);
    assert_int_equal(tb_pending(s), 3);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 5), 1); /* the negative one, at its hard */
    /* near the end of the clock, a range past it */
    assert_int_equal(tb_advance(s, INT64_MAX - TB_SEC), 2);
    assert_int_equal(tb_schedule_range(s, TB_SEC - 10, 11, noop_task, NULL,
                                       NULL), TB_ERANGE);
    assert_int_equal(tb_schedule_range(s, TB_SEC - 10, 10, noop_task, NULL,
                                       NULL), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, INT64_MAX), 1);
    assert_balanced(s);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.rejected, 0); /* bad input is not a rejection */
    tb_destroy(s);

    /* refusals: max_pending, allocation failure, shutdown */
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.max_pending = 2, .allocator = &fa.hook};
    s = make_sched(unit_backend(), &c);
    fa.budget = 0; /* the pool's first chunk cannot be had */
    h = 77;
    assert_int_equal(tb_schedule_range(s, 2 * TB_MS, TB_MS, noop_task, NULL,
                                       &h), TB_ENOMEM);
    assert_int_equal(h, TB_HANDLE_NONE);
    fa.budget = -1;
    assert_int_equal(tb_schedule_range(s, TB_MS, TB_MS, noop_task, NULL, &h),
                     TB_OK);
    assert_int_equal(tb_schedule_range(s, 2 * TB_MS, TB_MS, noop_task, NULL,
                                       NULL), TB_OK);
    assert_int_equal(tb_schedule_range(s, 3 * TB_MS, TB_MS, noop_task, NULL,
                                       &h), TB_EFULL);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_shutdown(s), 2);
    assert_int_equal(tb_schedule_range(s, 3 * TB_MS, TB_MS, noop_task, NULL,
                                       &h), TB_ESHUTDOWN);
    st = stats_of(s);
    assert_int_equal(st.rejected, 3);
    assert_int_equal(st.dropped, 2);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- 10^5 random operations with ranges, then the checker -------------- */

struct rtask {
    struct tb_sched *s;
    int64_t soft, hard;
    int runs;
    bool live;
};

static int rtask_run(void *arg)
{
    struct rtask *t = arg;
    int64_t now = tb_now(t->s);
    if (!t->live || now < t->soft)
        fail_msg("a task ran %s (soft %lld, now %lld)",
                 t->live ? "early" : "twice", (long long)t->soft,
                 (long long)now);
    t->runs++;
    t->live = false;
    return 0;
}

static void test_random_ops_then_check(void **state)
{
    (void)state;
    enum { OPS = 100000, MAXT = 4096 };
    struct tb_sched *s = vsched();
    static struct rtask tasks[MAXT];
    static tb_handle hs[MAXT];
    uint64_t rng = 0x28;
    int64_t now = 0;
    size_t nt = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rng_next(&rng) % 100;
        size_t i = nt < MAXT ? nt : rng_next(&rng) % MAXT;
        if (r < 40 && (nt < MAXT || !tasks[i].live)) {
            int64_t d = rng_range(&rng, -TB_MS, 50 * TB_MS);
            int64_t slack = r < 20 ? 0 : rng_range(&rng, 0, 20 * TB_MS);
            tasks[i] = (struct rtask){s, (d < 0 ? 0 : d) + now, 0, 0, true};
            tasks[i].hard = tasks[i].soft + slack;
            assert_int_equal(tb_schedule_range(s, d, slack, rtask_run,
                                               &tasks[i], &hs[i]), TB_OK);
            if (i == nt)
                nt++;
        } else if (r < 65 && nt) {
            i = rng_next(&rng) % nt;
            int rc = tb_cancel(s, hs[i]);
            assert_int_equal(rc, tasks[i].live ? 1 : 0);
            tasks[i].live = false;
        } else if (r < 85 && nt) {
            i = rng_next(&rng) % nt;
            int64_t d = rng_range(&rng, 0, 50 * TB_MS);
            int rc = tb_reschedule(s, hs[i], d);
            assert_int_equal(rc, tasks[i].live ? 1 : 0);
            if (rc)
                tasks[i].soft = tasks[i].hard = now + d;
        } else {
            now += rng_range(&rng, 0, 3 * TB_MS);
            assert_true(tb_advance(s, now) >= 0);
            /* nothing whose hard expiry has passed is still waiting */
            for (size_t k = 0; k < nt; k++)
                if (tasks[k].live && tasks[k].hard <= now)
                    fail_msg("task %zu (hard %lld) waits at %lld", k,
                             (long long)tasks[k].hard, (long long)now);
        }
        if (op % 500 == 0)
            assert_int_equal(tb_check(s), TB_OK);
        assert_balanced(s);
    }
    assert_int_equal(tb_check(s), TB_OK);
    size_t live = 0;
    for (size_t k = 0; k < nt; k++)
        live += tasks[k].live;
    assert_int_equal(tb_pending(s), live);
    assert_int_equal(tb_advance(s, INT64_MAX), (long)live);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

int main(void)
{
    unit_init("hrtree");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_order_and_equal_keys),
        cmocka_unit_test(test_ties_in_enqueue_order),
        cmocka_unit_test(test_cache_after_cancels),
        cmocka_unit_test(test_cache_after_expiry_and_to_empty),
        cmocka_unit_test(test_cache_after_reschedule),
        cmocka_unit_test(test_range_runs_at_earliest_hard),
        cmocka_unit_test(test_coalescing_saves_wakeups),
        cmocka_unit_test(test_forward_overruns),
        cmocka_unit_test(test_fixed_rate_skips_missed),
        cmocka_unit_test(test_fixed_delay_from_end),
        cmocka_unit_test(test_periodic_stops),
        cmocka_unit_test(test_rearm_in_place),
        cmocka_unit_test(test_new_leftmost_wakes_thread),
        cmocka_unit_test(test_range_joined_runs_at_hard),
        cmocka_unit_test(test_cancel_leftmost_reprograms),
        cmocka_unit_test(test_fixed_rate_forwards_from_callback_now),
        cmocka_unit_test(test_restart_from_own_callback),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_random_ops_then_check),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
