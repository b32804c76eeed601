/*
 * diff_quadheap.c — quadheap run side by side with a transcription of Go
 * 1.24's timers (tests/orig/go_timers.c) on the virtual clock: issue 29's
 * two scripts with Go's numbers, then 200 random scripts (seeded, so every
 * run repeats) of NewTimer, NewTicker, Stop, Reset and checks at random
 * times.  After every operation both sides must agree on the answer, the
 * pending count (len(ts.heap)), the zombies, the slots adjust passes read
 * (visits) and the sift levels; after every advance on the runs, in order,
 * each with its time.  A mismatch prints the seed and the operation.  The
 * driver (logs, comparison, report, script) is tests/orig/diffkit.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "orig/diffkit.h"
#include "orig/go_timers.h"

enum { SCRIPTS = 200, OPS_MAX = 1200 };

struct timer_slot {
    struct go_timer g;
    tb_handle h;
    int id;
    bool ticker;
};

static struct {
    struct go_timers ts;
    struct timer_slot slots[OPS_MAX];
} D;

static int qh_task(void *arg)
{
    struct timer_slot *t = arg;
    diff_log_run(&diff.ours, t->id, tb_now(diff.s));
    return 0;
}

static void go_task(void *arg, int64_t now)
{
    struct timer_slot *t = arg;
    diff_log_run(&diff.orig, t->id, now);
}

/* The state both sides must share after every operation. */
static void compare_state(void)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(diff.s, &st), TB_OK);
    if (st.pending != D.ts.n)
        DIFF_MISMATCH("pending %" PRIu64 ", Go's len(heap) %zu", st.pending,
                 D.ts.n);
    if (st.zombies != (uint64_t)D.ts.zombies)
        DIFF_MISMATCH("zombies %" PRIu64 ", Go %d", st.zombies, D.ts.zombies);
    if (st.visits != D.ts.visits)
        DIFF_MISMATCH("visits %" PRIu64 ", Go %" PRIu64, st.visits, D.ts.visits);
    if (st.sift_levels != D.ts.sift_levels)
        DIFF_MISMATCH("sift levels %" PRIu64 ", Go %" PRIu64, st.sift_levels,
                 D.ts.sift_levels);
}

static void start(uint64_t seed)
{
    diff.what = "quadheap vs Go";
    diff.theirs = "Go";
    diff_start(make_sched(tb_backend_find("quadheap"), NULL), seed, 0);
    go_timers_init(&D.ts);
}

static void finish(void)
{
    diff_finish();
    go_timers_free(&D.ts);
}

/* NewTimer / NewTicker (period > 0) at now + delay; returns the slot. */
static int op_schedule(int64_t delay, int64_t period)
{
    assert_true(diff.nslots < OPS_MAX);
    int i = diff.nslots++;
    struct timer_slot *t = &D.slots[i];
    t->id = i;
    t->ticker = period > 0;
    go_timer_init(&t->g, go_task, t);
    int rc = period > 0
                 ? tb_schedule_fixed_rate(diff.s, delay, qh_task, t, &t->h, period)
                 : tb_schedule(diff.s, delay, qh_task, t, &t->h);
    if (rc != TB_OK)
        DIFF_MISMATCH("schedule answered %d", rc);
    go_timer_modify(&t->g, &D.ts, diff.now + delay, period);
    compare_state();
    return i;
}

static void op_cancel(int i)
{
    int got = tb_cancel(diff.s, D.slots[i].h);
    int want = go_timer_stop(&D.slots[i].g);
    if (got != want)
        DIFF_MISMATCH("stop of timer %d answered %d, Go %d", i, got, want);
    compare_state();
}

/* Reset of a pending one-shot (Go's Reset of a fired or stopped timer would
 * add it again; quadheap's handle is gone then: a declared difference). */
static void op_reset(int i, int64_t delay)
{
    int got = tb_reschedule(diff.s, D.slots[i].h, delay);
    int want = go_timer_modify(&D.slots[i].g, &D.ts, diff.now + delay, 0);
    if (got != want)
        DIFF_MISMATCH("reset of timer %d answered %d, Go %d", i, got, want);
    compare_state();
}

/* Go's check of the timers at `now` (what a P does when it looks). */
static void go_check(int64_t now)
{
    go_timers_check(&D.ts, now);
}

static long op_advance(int64_t now)
{
    return diff_advance(now, go_check, compare_state);
}

/* ---- Issue 29's scripts: the transcription gives the issue's numbers and
 * quadheap agrees ------------------------------------------------------- */

static void test_issue_scripts(void **state)
{
    (void)state;
    /* timers at 100 .. 500 ms, the first stopped, a check at 50 ms */
    start(0);
    for (int i = 0; i < 5; i++)
        op_schedule((i + 1) * 100 * TB_MS, 0);
    op_cancel(0);
    assert_int_equal(op_advance(50 * TB_MS), 0);
    assert_int_equal(D.ts.n, 5);
    assert_int_equal(D.ts.zombies, 1);
    finish();

    /* A at 10 ms, Z1..Z4 at 11..14 ms, four at 1 s, D1, D2 at 2 s; the Zs
     * and Ds stopped; a check at 20 ms */
    start(0);
    op_schedule(10 * TB_MS, 0);
    for (int i = 0; i < 4; i++)
        op_schedule((11 + i) * TB_MS, 0);
    for (int i = 0; i < 4; i++)
        op_schedule(TB_SEC, 0);
    op_schedule(2 * TB_SEC, 0);
    op_schedule(2 * TB_SEC, 0);
    for (int i = 1; i <= 4; i++)
        op_cancel(i);
    op_cancel(9);
    op_cancel(10);
    assert_int_equal(op_advance(20 * TB_MS), 1);
    assert_int_equal(D.ts.n, 6);
    assert_int_equal(D.ts.zombies, 2);
    assert_int_equal(D.ts.visits, 0);
    op_advance(21 * TB_MS); /* forced now: ts.len is 6 */
    assert_int_equal(D.ts.n, 4);
    assert_int_equal(D.ts.visits, 6);
    finish();
}

/* ---- Random scripts ---------------------------------------------------- */

/* A delay: mostly short, often on a coarse grid (equal deadlines, where the
 * heap's order without a tie-break shows), sometimes equal to another
 * timer's, sometimes long. */
static int64_t random_delay(uint64_t *rng)
{
    int k = (int)rng_range(rng, 0, 99);
    if (k < 35)
        return rng_range(rng, 1, 50 * TB_MS);
    if (k < 60)
        return rng_range(rng, 1, 20) * 5 * TB_MS;
    if (k < 75 && diff.nslots) {
        int64_t w = D.slots[rng_range(rng, 0, diff.nslots - 1)].g.when;
        if (w > diff.now)
            return w - diff.now;
    }
    if (k < 92)
        return rng_range(rng, 1, 2 * TB_SEC);
    return rng_range(rng, 1, 60 * TB_SEC);
}

/* A timer that Go still holds pending as a one-shot, or -1. */
static int pending_one_shot(uint64_t *rng)
{
    for (int tries = 0; tries < 8 && diff.nslots; tries++) {
        int i = (int)rng_range(rng, 0, diff.nslots - 1);
        if (!D.slots[i].ticker && D.slots[i].g.when > 0)
            return i;
    }
    return -1;
}

static uint64_t total_visits, total_zombie_peak;

/* NewTicker one time in twenty, else NewTimer. */
static void random_schedule(uint64_t *rng)
{
    if (rng_range(rng, 0, 19) == 0)
        op_schedule(rng_range(rng, 1, 50 * TB_MS), rng_range(rng, 1, 30) * TB_MS);
    else
        op_schedule(random_delay(rng), 0);
}

static void zombie_peak(void)
{
    if ((uint64_t)D.ts.zombies > total_zombie_peak)
        total_zombie_peak = (uint64_t)D.ts.zombies;
}

static const struct diff_script script = {
    .ops_max = OPS_MAX,
    .cancel_lo = 10,
    .steps = {0, TB_MS, 20 * TB_MS, 200 * TB_MS, 2 * TB_SEC, 30 * TB_SEC},
    .nsteps = 6,
    .schedule = random_schedule,
    .pending_one_shot = pending_one_shot,
    .random_delay = random_delay,
    .cancel = op_cancel,
    .reset = op_reset,
    .advance = op_advance,
    .after_op = zombie_peak,
};

static void random_script(uint64_t seed)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    start(seed);
    diff_random_ops(&script, &rng);
    op_advance(diff.now + 61 * TB_SEC); /* every one-shot left runs */
    total_visits += D.ts.visits;
    finish();
}

static void test_random_scripts(void **state)
{
    (void)state;
    size_t runs = 0;
    for (uint64_t seed = 1; seed <= SCRIPTS; seed++) {
        random_script(seed);
        runs += diff.orig.n;
    }
    print_message("quadheap = Go 1.24 timers on %d random scripts: %zu runs, "
                  "%" PRIu64 " slots read by adjust passes, up to %" PRIu64
                  " zombies\n", SCRIPTS, runs, total_visits,
                  total_zombie_peak);
    /* the scripts reach the clean-up pass */
    assert_true(total_visits > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_scripts),
        cmocka_unit_test(test_random_scripts),
    };
    return cmocka_run_group_tests_name("diff-quadheap", tests, NULL, NULL);
}
