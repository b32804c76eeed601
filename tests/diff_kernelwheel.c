/*
 * diff_kernelwheel.c — kernelwheel run side by side with a transcription of
 * the Linux timer wheel (tests/orig/linux_timer.c) on the virtual clock:
 * issue 29's script with the kernel's counts, then 160 random scripts
 * (seeded, so every run repeats) at ticks of 1, 3, 4 and 10 ms of
 * add_timer, mod_timer, timer_delete, timers that re-arm themselves from
 * their callback (tb_schedule_fixed_delay), and wake-ups at random times.
 *
 * The mapping is kernelwheel's declared one: a deadline d is the kernel's
 * expires = ceil(d / tick) - 1, and tb_advance(now) is a wake-up at jiffies
 * = now / tick (the run loop, then the idle entry).  Deadlines always lie
 * after the current time, so the declared difference for a timer armed for
 * a tick that has run (the overdue list) is not met.  After every
 * operation both sides must agree on the answer, the pending count and the
 * run loop's steps and empty steps; after every wake-up on the runs, in
 * order, each with its time.  A mismatch prints the seed and the
 * operation.  The driver (logs, comparison, report, script) is
 * tests/orig/diffkit.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "orig/diffkit.h"
#include "orig/linux_timer.h"

enum { SCRIPTS = 160, OPS_MAX = 1000 };

struct timer_slot {
    struct lx_timer k;          /* first: the callback finds its slot */
    tb_handle h;
    int id;
    int64_t period;             /* re-arm delay after each run, or 0 */
};

static struct {
    struct lx_base base;
    struct timer_slot slots[OPS_MAX];
    long kpending;              /* timers pending in the kernel's base */
} D;

/* The kernel's expires for a deadline: the tick before the first tick at
 * or after it (kernelwheel's declared mapping). */
static unsigned long expires_of(int64_t d)
{
    return (unsigned long)((d + diff.tick - 1) / diff.tick) - 1;
}

static int kw_task(void *arg)
{
    struct timer_slot *t = arg;
    diff_log_run(&diff.ours, t->id, tb_now(diff.s));
    return 0;
}

/* The kernel callback: records, and a periodic user re-arms its timer with
 * mod_timer, as the kernel's periodic users do. */
static void lx_task(struct lx_timer *k)
{
    struct timer_slot *t = (struct timer_slot *)(void *)k;
    D.kpending--;
    diff_log_run(&diff.orig, t->id, diff.now);
    if (t->period) {
        lx_mod_timer(&D.base, k, expires_of(diff.now + t->period));
        D.kpending++;
    }
}

static void compare_state(void)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(diff.s, &st), TB_OK);
    if (st.pending != (uint64_t)D.kpending)
        DIFF_MISMATCH("pending %" PRIu64 ", kernel %ld", st.pending, D.kpending);
    if (st.ticks != D.base.steps)
        DIFF_MISMATCH("steps %" PRIu64 ", kernel %" PRIu64, st.ticks,
                 D.base.steps);
    if (st.empty_ticks != D.base.empty_steps)
        DIFF_MISMATCH("empty steps %" PRIu64 ", kernel %" PRIu64, st.empty_ticks,
                 D.base.empty_steps);
}

static void start(uint64_t seed, int64_t tick)
{
    struct tb_config c = {.tick_ns = tick};
    diff.what = "kernelwheel vs Linux";
    diff.theirs = "kernel";
    diff_start(make_sched(tb_backend_find("kernelwheel"), &c), seed, tick);
    lx_base_init(&D.base, (unsigned long)(TB_SEC / tick), 0);
    D.kpending = 0;
}

/* add_timer at now + delay (> 0); a periodic user re-arms `period` after
 * each run. */
static int op_schedule(int64_t delay, int64_t period)
{
    assert_true(diff.nslots < OPS_MAX);
    int i = diff.nslots++;
    struct timer_slot *t = &D.slots[i];
    *t = (struct timer_slot){.id = i, .period = period};
    t->k.function = lx_task;
    int rc = period ? tb_schedule_fixed_delay(diff.s, delay, kw_task, t, &t->h, period)
                    : tb_schedule(diff.s, delay, kw_task, t, &t->h);
    if (rc != TB_OK)
        DIFF_MISMATCH("schedule answered %d", rc);
    t->k.expires = expires_of(diff.now + delay);
    lx_add_timer(&D.base, &t->k);
    D.kpending++;
    compare_state();
    return i;
}

static void op_cancel(int i)
{
    int got = tb_cancel(diff.s, D.slots[i].h);
    int want = lx_timer_delete(&D.base, &D.slots[i].k);
    D.kpending -= want;
    if (got != want)
        DIFF_MISMATCH("timer_delete of timer %d answered %d, kernel %d", i, got,
                 want);
    compare_state();
}

/* mod_timer of a pending one-shot */
static void op_reset(int i, int64_t delay)
{
    int got = tb_reschedule(diff.s, D.slots[i].h, delay);
    int want = lx_mod_timer(&D.base, &D.slots[i].k,
                            expires_of(diff.now + delay));
    if (got != want)
        DIFF_MISMATCH("mod_timer of timer %d answered %d, kernel %d", i, got,
                 want);
    compare_state();
}

/* The kernel's wake-up at jiffies = now / tick. */
static void lx_wake_at(int64_t now)
{
    lx_wake(&D.base, (unsigned long)(now / diff.tick));
}

static long op_advance(int64_t now)
{
    return diff_advance(now, lx_wake_at, compare_state);
}

/* ---- Issue 29's script ------------------------------------------------- */

static void test_issue_script(void **state)
{
    (void)state;
    /* 1 ms tick, A at 10 ms, B at 20 ms, A cancelled, a wake-up at 30 ms:
     * the kernel collects at the stale next_expiry (10) first */
    start(0, TB_MS);
    op_schedule(10 * TB_MS, 0);
    op_schedule(20 * TB_MS, 0);
    op_cancel(0);
    assert_int_equal(op_advance(30 * TB_MS), 1);
    assert_int_equal(D.base.steps, 2);
    assert_int_equal(D.base.empty_steps, 1);
    diff_finish();
}

/* ---- Random scripts ---------------------------------------------------- */

/* A delay after now: mostly level 0 and 1, some to level 4, with sub-tick
 * parts; sometimes another timer's deadline exactly (a shared bucket, run
 * newest first). */
static int64_t random_delay(uint64_t *rng)
{
    int k = (int)rng_range(rng, 0, 99);
    int64_t ticks;
    if (k < 15 && diff.nslots) {
        const struct timer_slot *o = &D.slots[rng_range(rng, 0,
                                                        diff.nslots - 1)];
        int64_t d = ((int64_t)o->k.expires + 1) * diff.tick;
        if (lx_timer_pending(&o->k) && d > diff.now)
            return d - diff.now;
    }
    if (k < 45)
        ticks = rng_range(rng, 0, 70);
    else if (k < 75)
        ticks = rng_range(rng, 0, 600);
    else if (k < 92)
        ticks = rng_range(rng, 0, 5000);
    else
        ticks = rng_range(rng, 0, 300000);
    int64_t sub = rng_range(rng, 0, 2) ? rng_range(rng, 1, diff.tick) : diff.tick;
    return ticks * diff.tick + sub; /* >= 1 ns */
}

static int pending_one_shot(uint64_t *rng)
{
    for (int tries = 0; tries < 8 && diff.nslots; tries++) {
        int i = (int)rng_range(rng, 0, diff.nslots - 1);
        if (!D.slots[i].period && lx_timer_pending(&D.slots[i].k))
            return i;
    }
    return -1;
}

/* A timer that re-arms itself one time in fifteen, else a one-shot. */
static void random_schedule(uint64_t *rng)
{
    if (rng_range(rng, 0, 14) == 0)
        op_schedule(random_delay(rng), rng_range(rng, 1, 100 * diff.tick));
    else
        op_schedule(random_delay(rng), 0);
}

static void random_script(uint64_t seed)
{
    static const int64_t ticks[] = {TB_MS, 3 * TB_MS, 4 * TB_MS,
                                    10 * TB_MS};
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 7;
    start(seed, ticks[rng_range(&rng, 0, 3)]);
    const int64_t t = diff.tick;
    const struct diff_script script = {
        .ops_max = OPS_MAX,
        .cancel_lo = 5,
        .steps = {0, t, 8 * t, 100 * t, 2000 * t, 50000 * t},
        .nsteps = 6,
        .schedule = random_schedule,
        .pending_one_shot = pending_one_shot,
        .random_delay = random_delay,
        .cancel = op_cancel,
        .reset = op_reset,
        .advance = op_advance,
    };
    diff_random_ops(&script, &rng);
    op_advance(diff.now + 400000 * diff.tick); /* every one-shot left runs */
    diff_finish();
}

static void test_random_scripts(void **state)
{
    (void)state;
    size_t runs = 0;
    uint64_t steps = 0, empty = 0;
    for (uint64_t seed = 1; seed <= SCRIPTS; seed++) {
        random_script(seed);
        runs += diff.orig.n;
        steps += D.base.steps;
        empty += D.base.empty_steps;
    }
    print_message("kernelwheel = Linux timer wheel on %d random scripts: %zu "
                  "runs, %" PRIu64 " steps, %" PRIu64 " of them empty\n",
                  SCRIPTS, runs, steps, empty);
    assert_true(empty > 0); /* the scripts meet stale next_expiry values */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_issue_script),
        cmocka_unit_test(test_random_scripts),
    };
    return cmocka_run_group_tests_name("diff-kernelwheel", tests, NULL,
                                       NULL);
}
