/*
 * test_quadheap.c — unit tests of quadheap's fidelity to the Go runtime's
 * timers (src/runtime/time.go, Go 1.24): the 4-ary heap (sift levels of a
 * base-4 tree, Go's order among equal deadlines), the slice growth of append,
 * lazy deletion (zombies counted in pending, cleaned at the top by a check
 * that is due, at the tail by a schedule, and by one pass when they exceed a
 * quarter of ts.len, the length the last unlock stored; issue 29's two
 * scripts with Go's numbers), Reset later fixed when its slot surfaces and
 * Reset earlier fixed by the adjust pass when it falls due, the Ticker's
 * skipped periods, fixed delay from the start of the run, failures, the one
 * timer thread (woken by an earlier reset and by zombies past a quarter), and
 * the invariant checker after 10^5 random operations with resets.
 *
 * Virtual-clock cases assert exact times and counts; monotonic ones only use
 * generous margins and never assert speed.
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
    assert_true(b->caps & TB_CAP_LAZY_CANCEL);
    assert_true(b->caps & TB_CAP_SKIP_MISSED);
    assert_false(b->caps & TB_CAP_FIFO_TIES);
    assert_false(b->caps & TB_CAP_TICKED);
    assert_false(b->caps & TB_CAP_PURGE);
    assert_false(b->caps & TB_CAP_FAIL_KILLS);
    struct tb_config c = {.threads = 8};
    struct tb_sched *s = make_sched(b, &c);
    tb_sched_config(s, &c);
    assert_int_equal(c.threads, 1); /* one P */
    assert_int_equal(tb_purge(s), TB_ENOTSUP); /* Go has no purge */
    tb_destroy(s);
}

/* Depth of slot i in a 4-ary heap: slots 0 | 1-4 | 5-20 | 21-84 | ... */
static uint64_t depth4(uint64_t i)
{
    uint64_t d = 0, first = 0, width = 1;
    while (i >= first + width) {
        first += width;
        width *= 4;
        d++;
    }
    return d;
}

/* Each new timer earlier than all others climbs from its slot to the root:
 * its depth in a base-4 tree (a binary heap would climb log2).  Slot depths
 * of 1000 slots: 1 at 0, 4 at 1, 16 at 2, 64 at 3, 256 at 4, 659 at 5. */
static void test_four_children_per_slot(void **state)
{
    (void)state;
    enum { N = 1000 };
    struct tb_sched *s = vsched();
    uint64_t expect = 0;
    for (int i = 0; i < N; i++) {
        assert_int_equal(tb_schedule(s, TB_SEC - i, noop_task, NULL, NULL),
                         TB_OK);
        expect += depth4((uint64_t)i);
    }
    assert_int_equal(depth4(4), 1);
    assert_int_equal(depth4(5), 2);
    assert_int_equal(depth4(21), 3);
    assert_int_equal(expect, 4 + 2 * 16 + 3 * 64 + 4 * 256 + 5 * 659);
    assert_int_equal(stats_of(s).sift_levels, expect);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
    /* ascending inserts do not move; the first expiry lifts the latest
     * timer to the root and it sinks through the first child of each
     * level, 0 -> 1 -> 5 -> 21 -> 85 -> 341: 5 levels for 999 timers,
     * where a binary heap sinks 9 */
    s = vsched();
    for (int i = 0; i < N; i++)
        assert_int_equal(tb_schedule(s, TB_MS + i, noop_task, NULL, NULL),
                         TB_OK);
    assert_int_equal(stats_of(s).sift_levels, 0);
    assert_int_equal(tb_advance(s, TB_MS), 1);
    assert_int_equal(stats_of(s).sift_levels, 5);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* Equal deadlines: siftUp stops on >=, siftDown takes only a strictly
 * earlier child, so each expiry lifts the last slot to the root and it
 * stays: A B C D E F at one time run A F E D C B. */
static void test_equal_deadlines_order(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p[6];
    for (int i = 0; i < 6; i++) {
        p[i] = (struct probe){.rec = &r, .id = i};
        assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &p[i], NULL),
                         TB_OK);
    }
    assert_int_equal(tb_advance(s, 10 * TB_MS), 6);
    static const int order[6] = {0, 5, 4, 3, 2, 1};
    for (int i = 0; i < 6; i++)
        assert_int_equal(r.runs[i].id, order[i]);
    rec_free(&r);
    tb_destroy(s);
}

/* The heap is a Go slice grown by append: capacity 1, 2, 4, ... 256, then
 * by (cap + 768) / 4: 512, 832, 1232, 1732, 2357.  Each growth shows in
 * bytes_held as 16 B per added slot (pointer + inline deadline). */
static void test_heap_grows_as_append(void **state)
{
    (void)state;
    static const size_t caps[] = {1,  2,   4,   8,   16,   32,   64,  128,
                                  256, 512, 832, 1232, 1732, 2357};
    const uint64_t slot = sizeof(struct { int64_t when; void *t; });
    struct tb_sched *s = vsched();
    assert_int_equal(tb_schedule(s, 1, noop_task, NULL, NULL), TB_OK);
    size_t k = 1; /* caps[k] is the next capacity */
    for (size_t len = 2; len <= 2357; len++) {
        uint64_t before = stats_of(s).bytes_held;
        assert_int_equal(tb_schedule(s, (int64_t)len, noop_task, NULL, NULL),
                         TB_OK);
        uint64_t delta = stats_of(s).bytes_held - before;
        if (len == caps[k - 1] + 1) {
            assert_int_equal(delta, (caps[k] - caps[k - 1]) * slot);
            k++;
        } else if ((len - 1) % 1024) { /* else the pool's next chunk */
            if (delta)
                fail_msg("bytes_held grew by %llu at length %zu",
                         (unsigned long long)delta, len);
        }
    }
    assert_int_equal(k, sizeof caps / sizeof *caps);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* tb_reserve grows the slice once to what is asked; a failed growth rejects
 * the schedule and keeps the heap. */
static void test_reserve_and_growth_failure(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    assert_int_equal(tb_reserve(s, 1000), TB_OK);
    uint64_t held = stats_of(s).bytes_held;
    for (int i = 1; i <= 1000; i++)
        assert_int_equal(tb_schedule(s, i, noop_task, NULL, NULL), TB_OK);
    assert_int_equal(stats_of(s).bytes_held, held);
    fa.budget = 0;
    tb_handle h = 1;
    assert_int_equal(tb_schedule(s, 5000, noop_task, NULL, &h), TB_ENOMEM);
    assert_int_equal(h, TB_HANDLE_NONE);
    assert_int_equal(tb_pending(s), 1000);
    assert_int_equal(stats_of(s).rejected, 1);
    assert_int_equal(tb_check(s), TB_OK);
    fa.budget = -1;
    assert_int_equal(tb_advance(s, 1000), 1000);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Lazy deletion ----------------------------------------------------- */

/* 100 far timers; zombies in the middle of the heap stay (and count in
 * pending) while they are at most a quarter (25 of 100); the 26th makes
 * the next check clean all of them in one pass over the 100 slots. */
static void test_zombies_cleaned_past_a_quarter(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h[100];
    for (int i = 0; i < 100; i++)
        assert_int_equal(tb_schedule(s, TB_SEC + i * TB_MS, noop_task, NULL,
                                     &h[i]), TB_OK);
    for (int i = 10; i < 35; i++)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    assert_int_equal(tb_advance(s, TB_MS), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.zombies, 25);
    assert_int_equal(tb_pending(s), 100);
    assert_int_equal(st.visits, 0);
    assert_int_equal(st.cancelled, 25);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_cancel(s, h[35]), 1);
    assert_int_equal(stats_of(s).zombies, 26); /* a cancel only marks */
    assert_int_equal(tb_pending(s), 100);
    assert_int_equal(tb_advance(s, 2 * TB_MS), 0);
    st = stats_of(s);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(tb_pending(s), 74);
    assert_int_equal(st.visits, 100);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 2 * TB_SEC), 74);
    assert_balanced(s);
    tb_destroy(s);
}

/* Zombies leave without a pass where Go's cleanHead and run meet them: the
 * last slot at the next schedule, the head at the first check that is due
 * (timers.check returns at once before the wake time unless zombies exceed
 * a quarter, so a stopped head that is not due stays). */
static void test_zombies_at_the_ends(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h[10];
    for (int i = 0; i < 10; i++)
        assert_int_equal(tb_schedule(s, (i + 1) * TB_SEC, noop_task, NULL,
                                     &h[i]), TB_OK);
    /* ascending inserts: slot i holds timer i, so h[0] heads, h[9] is last */
    assert_int_equal(tb_cancel(s, h[9]), 1);
    assert_int_equal(tb_pending(s), 10);
    assert_int_equal(tb_schedule(s, 20 * TB_SEC, noop_task, NULL, NULL),
                     TB_OK);
    assert_int_equal(tb_pending(s), 10); /* the tail zombie left first */
    assert_int_equal(stats_of(s).zombies, 0);
    assert_int_equal(tb_cancel(s, h[0]), 1);
    assert_int_equal(tb_pending(s), 10);
    assert_int_equal(tb_advance(s, TB_MS), 0); /* not due: the gate */
    assert_int_equal(tb_pending(s), 10);
    assert_int_equal(stats_of(s).zombies, 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, TB_SEC), 0); /* due: run meets it */
    assert_int_equal(tb_pending(s), 9);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(st.visits, 0); /* no pass over the heap */
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 30 * TB_SEC), 9);
    assert_balanced(s);
    tb_destroy(s);
}

/* Issue 29's first script, with Go 1.24's numbers: timers at 100 .. 500 ms,
 * the first stopped, a check at 50 ms.  Go's check sees now < wakeTime()
 * (100 ms, the stopped head's slot) and 1 zombie <= 5 / 4, and returns at
 * once: pending 5, zombies 1.  A head reset later stays likewise: its slot
 * keeps 100 ms until a check at 100 ms sinks it without a run. */
static void test_check_gate_leaves_head(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle h[5];
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, (i + 1) * 100 * TB_MS, noop_task,
                                     NULL, &h[i]), TB_OK);
    assert_int_equal(tb_cancel(s, h[0]), 1);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 0);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.pending, 5);
    assert_int_equal(st.zombies, 1);
    assert_int_equal(st.visits, 0);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);

    s = vsched();
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, (i + 1) * 100 * TB_MS, noop_task,
                                     NULL, &h[i]), TB_OK);
    uint64_t levels = stats_of(s).sift_levels;
    assert_int_equal(tb_reschedule(s, h[0], 600 * TB_MS), 1);
    assert_int_equal(tb_advance(s, 50 * TB_MS), 0);
    assert_int_equal(stats_of(s).sift_levels, levels); /* not touched */
    assert_int_equal(tb_advance(s, 100 * TB_MS), 0);    /* sunk, not run */
    assert_int_equal(stats_of(s).sift_levels, levels + 1);
    assert_int_equal(tb_advance(s, 600 * TB_MS), 5);
    assert_balanced(s);
    tb_destroy(s);
}

/* Issue 29's second script, with Go 1.24's numbers: A at 10 ms, Z1..Z4 at
 * 11..14 ms, four live timers at 1 s, D1, D2 at 2 s (inserted in that
 * order); the Zs and Ds stopped; a check at 20 ms.  The gate passes (6
 * zombies > 11 / 4); A runs, and its unlock stores ts.len = 10; Z1..Z4 then
 * leave at the head; the forced clean-up compares 2 zombies with 10 / 4 and
 * does not run: ran 1, pending 6, zombies 2, no pass.  The next check (the
 * end of this one stored ts.len = 6) is forced and cleans both: one pass
 * over 6 slots. */
static void test_cleanup_threshold_stored_len(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    tb_handle z[4], d[2];
    assert_int_equal(tb_schedule(s, 10 * TB_MS, noop_task, NULL, NULL),
                     TB_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_schedule(s, (11 + i) * TB_MS, noop_task, NULL,
                                     &z[i]), TB_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, NULL),
                         TB_OK);
    for (int i = 0; i < 2; i++)
        assert_int_equal(tb_schedule(s, 2 * TB_SEC, noop_task, NULL, &d[i]),
                         TB_OK);
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_cancel(s, z[i]), 1);
    for (int i = 0; i < 2; i++)
        assert_int_equal(tb_cancel(s, d[i]), 1);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.pending, 6);
    assert_int_equal(st.zombies, 2);
    assert_int_equal(st.visits, 0);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 21 * TB_MS), 0);
    st = stats_of(s);
    assert_int_equal(st.pending, 4);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(st.visits, 6);
    assert_int_equal(tb_advance(s, 2 * TB_SEC), 4);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Reset (tb_reschedule = Timer.Reset) ------------------------------- */

/* Later: the slot keeps the old time and surfaces then; it is fixed there
 * (sinks) without running.  minWhenModified then still says 30 ms, so the
 * check at 30 ms makes one pass over the heap (1 slot) before A runs. */
static void test_reset_later_fixed_when_it_surfaces(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe a = {.rec = &r, .id = 1}, b = {.rec = &r, .id = 2};
    tb_handle ha;
    assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &b, NULL), TB_OK);
    uint64_t levels = stats_of(s).sift_levels;
    assert_int_equal(tb_reschedule(s, ha, 30 * TB_MS), 1);
    assert_int_equal(stats_of(s).sift_levels, levels); /* nothing moved */
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 0);   /* surfaced, fixed */
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.sift_levels, levels + 1);
    assert_int_equal(st.visits, 0);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(b.runs, 1);
    assert_int_equal(tb_advance(s, 29 * TB_MS), 0);
    assert_int_equal(tb_advance(s, 30 * TB_MS), 1);
    assert_int_equal(a.runs, 1);
    assert_int_equal(r.runs[1].at, 30 * TB_MS);
    assert_int_equal(stats_of(s).visits, 1);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* Earlier: the slot stays at 50 ms; nothing happens until the new time, and
 * the check that reaches it adjusts the whole heap (3 slots read) and runs
 * it.  Two earlier resets share one pass. */
static void test_reset_earlier_fixed_by_adjust(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe a = {.rec = &r, .id = 1}, b = {.rec = &r, .id = 2},
                 c = {.rec = &r, .id = 3};
    tb_handle ha, hc;
    assert_int_equal(tb_schedule(s, 50 * TB_MS, probe_task, &a, &ha), TB_OK);
    assert_int_equal(tb_schedule(s, 20 * TB_MS, probe_task, &b, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 40 * TB_MS, probe_task, &c, &hc), TB_OK);
    assert_int_equal(tb_reschedule(s, ha, 10 * TB_MS), 1);
    assert_int_equal(tb_reschedule(s, hc, 12 * TB_MS), 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, 9 * TB_MS), 0);
    assert_int_equal(stats_of(s).visits, 0);
    assert_int_equal(tb_advance(s, 12 * TB_MS), 2);
    assert_int_equal(stats_of(s).visits, 3);
    assert_int_equal(r.runs[0].id, 1);
    assert_int_equal(r.runs[1].id, 3);
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(stats_of(s).visits, 3);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

struct resetter {
    struct tb_sched *s;
    tb_handle target, self;
    int self_rc, target_rc;
};

static int reset_task(void *arg)
{
    struct resetter *x = arg;
    x->self_rc = tb_reschedule(x->s, x->self, TB_MS);
    x->target_rc = tb_reschedule(x->s, x->target, 0);
    return 0;
}

/* A running one-shot has left the heap: resetting it answers 0.  A task
 * that resets another to now gets it run in the same advance.  Periodic
 * tasks and zombies are refused. */
static void test_reset_answers(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe far = {.rec = &r, .id = 1};
    struct resetter x = {.s = s, .self_rc = -100, .target_rc = -100};
    assert_int_equal(tb_schedule(s, TB_SEC, probe_task, &far, &x.target),
                     TB_OK);
    assert_int_equal(tb_schedule(s, 5 * TB_MS, reset_task, &x, &x.self),
                     TB_OK);
    assert_int_equal(tb_advance(s, 5 * TB_MS), 2);
    assert_int_equal(x.self_rc, 0);
    assert_int_equal(x.target_rc, 1);
    assert_int_equal(far.runs, 1);
    assert_int_equal(r.runs[0].at, 5 * TB_MS);
    tb_handle hp, hz;
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, noop_task, NULL, &hp,
                                            TB_MS), TB_OK);
    assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, &hz), TB_OK);
    assert_int_equal(tb_reschedule(s, hp, TB_MS), TB_EINVAL);
    assert_int_equal(tb_cancel(s, hz), 1);
    assert_int_equal(tb_reschedule(s, hz, TB_MS), 0); /* no revival */
    assert_int_equal(stats_of(s).zombies, 1);
    assert_int_equal(tb_shutdown(s), 1);
    assert_int_equal(tb_reschedule(s, hp, TB_MS), TB_ESHUTDOWN);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* ---- Periodic ---------------------------------------------------------- */

/* Ticker: next = when + period * (1 + delay / period): a run 35 ms late
 * skips three periods and keeps the grid; a run 2 ms late keeps its next. */
static void test_ticker_skips_missed(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p = {.rec = &r, .id = 1};
    /* 10 runs at 12, 20 at 55, the one 10 s late once, not 994 times */
    advance_skipping_missed(s, &p, NULL);
    int64_t at[8];
    assert_int_equal(starts_of(&r, 1, at, 8), 5);
    assert_int_equal(at[1], 55 * TB_MS);
    assert_int_equal(at[3], 10 * TB_SEC + 5);
    assert_int_equal(p.runs, 5);
    rec_free(&r);
    tb_destroy(s);
}

/* Fixed delay as an AfterFunc that first calls Reset(d): from the start of
 * the run, so a run that takes 4 ms does not push the next one. */
static void test_fixed_delay_from_start(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe p;
    run_slow_fixed_delay(s, &r, &p, 45 * TB_MS);
    int64_t at[8];
    assert_int_equal(starts_of(&r, 1, at, 8), 4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(at[i], (i + 1) * 10 * TB_MS);
    rec_free(&r);
    tb_destroy(s);
}

/* A periodic task stays in the heap during its run, re-armed before it:
 * cancelling itself leaves a zombie; a failing one stops the same way and
 * counts finished. */
static void test_periodic_stays_in_heap(void **state)
{
    (void)state;
    struct tb_sched *s = vsched();
    struct recorder r;
    rec_init(&r, s);
    struct probe self = {.rec = &r, .id = 1, .cancel_self_at = 2};
    struct probe bad = {.rec = &r, .id = 2, .fail = 1};
    struct probe other = {.rec = &r, .id = 3};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, probe_task, &self,
                                            &self.self, 10 * TB_MS),
                     TB_OK);
    assert_int_equal(tb_schedule_fixed_delay(s, 15 * TB_MS, probe_task, &bad,
                                             NULL, 10 * TB_MS), TB_OK);
    for (int i = 0; i < 20; i++)
        assert_int_equal(tb_schedule(s, TB_SEC + i, probe_task, &other, NULL),
                         TB_OK);
    assert_int_equal(tb_advance(s, 15 * TB_MS), 2);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.failed, 1);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.zombies, 1);  /* bad, stopped */
    assert_int_equal(tb_pending(s), 22);
    /* self runs at 20 and cancels itself; the check then meets both
     * zombies at the head (bad's slot at 25, self's at 30) and drops them,
     * though neither is due */
    assert_int_equal(tb_advance(s, 20 * TB_MS), 1);
    assert_int_equal(self.cancel_result, 1);
    st = stats_of(s);
    assert_int_equal(st.zombies, 0);
    assert_int_equal(st.cancelled, 1);
    assert_int_equal(st.visits, 0);
    assert_int_equal(tb_pending(s), 20);
    assert_int_equal(self.runs, 2);
    assert_int_equal(bad.runs, 1);
    assert_int_equal(tb_check(s), TB_OK);
    assert_balanced(s);
    rec_free(&r);
    tb_destroy(s);
}

/* DECISIONS.md D1: a Ticker holds its place while it runs, so a schedule
 * from inside its run is refused at max_pending and its own re-arm is not. */
struct d1 {
    struct tb_sched *s;
    int runs, inner_rc;
};

static int d1_task(void *arg)
{
    struct d1 *d = arg;
    d->runs++;
    d->inner_rc = tb_schedule(d->s, TB_MS, noop_task, NULL, NULL);
    return 0;
}

static void test_max_pending_with_ticker(void **state)
{
    (void)state;
    struct tb_config c = {.max_pending = 1};
    struct tb_sched *s = make_sched(unit_backend(), &c);
    struct d1 d = {.s = s, .inner_rc = 1};
    tb_handle h;
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, d1_task, &d, &h, TB_MS),
                     TB_OK);
    assert_int_equal(tb_advance(s, 3 * TB_MS), 1); /* one run: skipped 2, 3 */
    assert_int_equal(d.inner_rc, TB_EFULL);
    assert_int_equal(tb_advance(s, 4 * TB_MS), 1);
    assert_int_equal(d.runs, 2);
    assert_int_equal(tb_pending(s), 1);
    assert_int_equal(tb_cancel(s, h), 1);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- Threads ----------------------------------------------------------- */

static int zombies_gone(void *ctx)
{
    struct tb_stats st;
    tb_stats(ctx, &st);
    return st.zombies == 0;
}

/* The thread sleeps until the head, an hour from now (its one timed wait,
 * read under the lock, so it is in it).  Zombies past a quarter of the heap
 * wake it and it cleans them though nothing is due; a reset to 1 ms wakes
 * it (the wake time moved earlier) and the timer runs, never early.
 * Without those wake-ups either would wait an hour. */
static void test_thread_wakes_for_zombies_and_reset(void **state)
{
    (void)state;
    struct tb_sched *s = msched();
    struct flag f = {0};
    tb_handle h, far[100];
    assert_int_equal(tb_schedule(s, 3600 * TB_SEC, flag_task, &f, &h), TB_OK);
    for (int i = 0; i < 100; i++)
        assert_int_equal(tb_schedule(s, 7200 * TB_SEC + i, noop_task, NULL,
                                     &far[i]), TB_OK);
    assert_int_equal(tb_start(s), TB_OK);
    /* generous margins: 30 s for what takes a millisecond */
    assert_true(wait_until(asleep, s, 30 * TB_SEC));
    for (int i = 10; i < 36; i++)
        assert_int_equal(tb_cancel(s, far[i]), 1);
    assert_true(wait_until(zombies_gone, s, 30 * TB_SEC));
    assert_int_equal(tb_pending(s), 75);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.visits, 101);
    assert_true(st.wakeups >= 1);
    int64_t t0 = tb_monotonic_ns();
    assert_int_equal(tb_reschedule(s, h, TB_MS), 1);
    assert_true(wait_until(flag_set, &f, 30 * TB_SEC));
    assert_true(atomic_load(&f.at) >= t0 + TB_MS);
    assert_int_equal(atomic_load(&f.runs), 1);
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 74);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    assert_balanced(s);
    tb_destroy(s);
}

/* ---- 10^5 random operations with resets, then the checker -------------- */

static void test_random_ops_then_check(void **state)
{
    (void)state;
    enum { OPS = 100000, MAXH = 2048 };
    struct tb_sched *s = vsched();
    static tb_handle hs[MAXH];
    size_t nh = 0;
    uint64_t rng = 0x90;
    int64_t now = 0;
    for (int op = 0; op < OPS; op++) {
        uint64_t r = rng_next(&rng) % 100;
        tb_handle h = TB_HANDLE_NONE;
        if (r < 35) {
            assert_int_equal(tb_schedule(s, rng_range(&rng, 0, 50 * TB_MS),
                                         noop_task, NULL, &h), TB_OK);
        } else if (r < 38) {
            int64_t p = rng_range(&rng, TB_US, 5 * TB_MS);
            assert_int_equal(r & 1 ? tb_schedule_fixed_rate(s, p, noop_task,
                                                            NULL, &h, p)
                                   : tb_schedule_fixed_delay(s, p, noop_task,
                                                             NULL, &h,
                                                             p), TB_OK);
        } else if (r < 60) {
            if (nh) {
                int rc = tb_cancel(s, hs[rng_next(&rng) % nh]);
                assert_true(rc == 0 || rc == 1);
            }
        } else if (r < 85) {
            if (nh) {
                int rc = tb_reschedule(s, hs[rng_next(&rng) % nh],
                                       rng_range(&rng, 0, 50 * TB_MS));
                assert_true(rc == 0 || rc == 1 || rc == TB_EINVAL);
            }
        } else {
            now += rng_range(&rng, 0, 2 * TB_MS);
            assert_true(tb_advance(s, now) >= 0);
            struct tb_stats st = stats_of(s);
            /* after a check the zombies are at most a quarter */
            assert_true(st.zombies <= st.pending / 4);
        }
        if (h != TB_HANDLE_NONE)
            hs[nh < MAXH ? nh++ : rng_next(&rng) % MAXH] = h;
        if (op % 1000 == 0)
            assert_int_equal(tb_check(s), TB_OK);
        assert_balanced(s);
    }
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

int main(void)
{
    unit_init("quadheap");
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caps),
        cmocka_unit_test(test_four_children_per_slot),
        cmocka_unit_test(test_equal_deadlines_order),
        cmocka_unit_test(test_heap_grows_as_append),
        cmocka_unit_test(test_reserve_and_growth_failure),
        cmocka_unit_test(test_zombies_cleaned_past_a_quarter),
        cmocka_unit_test(test_zombies_at_the_ends),
        cmocka_unit_test(test_check_gate_leaves_head),
        cmocka_unit_test(test_cleanup_threshold_stored_len),
        cmocka_unit_test(test_reset_later_fixed_when_it_surfaces),
        cmocka_unit_test(test_reset_earlier_fixed_by_adjust),
        cmocka_unit_test(test_reset_answers),
        cmocka_unit_test(test_ticker_skips_missed),
        cmocka_unit_test(test_fixed_delay_from_start),
        cmocka_unit_test(test_periodic_stays_in_heap),
        cmocka_unit_test(test_max_pending_with_ticker),
        cmocka_unit_test(test_thread_wakes_for_zombies_and_reset),
        cmocka_unit_test(test_random_ops_then_check),
    };
    return cmocka_run_group_tests_name("quadheap", tests, NULL, NULL);
}
