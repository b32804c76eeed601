/*
 * diff_hrtree.c — hrtree run side by side with a transcription of Linux's
 * hrtimers (tests/orig/linux_hrtimer.c: lib/rbtree.c, lib/timerqueue.c,
 * kernel/time/hrtimer.c) on the virtual clock: 150 random scripts (seeded,
 * so every run repeats) of hrtimer_start, hrtimer_start_range_ns, timers
 * that forward themselves (fixed rate, hrtimer_forward) or re-arm from the
 * end of their run (fixed delay), hrtimer_try_to_cancel, hrtimer_start on a
 * queued timer, and interrupts (tb_advance: one __hrtimer_run_queues) at
 * random times.  After every operation both sides must agree on the answer,
 * the timers queued and the nodes inserts compared on their way down
 * (stats.visits, which only agree if the trees have the same shape); after
 * every interrupt on the runs, in order, each with its time.  A mismatch
 * prints the seed and the operation.  The driver (logs, comparison,
 * report, script) is tests/orig/diffkit.c.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "orig/diffkit.h"
#include "orig/linux_hrtimer.h"

enum { SCRIPTS = 150, OPS_MAX = 1000 };

enum kind { ONE_SHOT, RANGED, FIXED_RATE, FIXED_DELAY };

struct timer_slot {
    struct lx_hrtimer k;        /* first: the callback finds its slot */
    tb_handle h;
    int id;
    enum kind kind;
    int64_t period;
};

static struct {
    struct lx_hrtimer_base base;
    struct timer_slot slots[OPS_MAX];
    long kqueued;
} D;

static int hr_task(void *arg)
{
    struct timer_slot *t = arg;
    diff_log_run(&diff.ours, t->id, tb_now(diff.s));
    return 0;
}

/* The kernel callback: records; a periodic one forwards itself (fixed rate)
 * or re-arms from the end of its run (fixed delay) and restarts. */
static enum lx_hrtimer_restart lx_task(struct lx_hrtimer *k, int64_t now)
{
    struct timer_slot *t = (struct timer_slot *)(void *)k;
    D.kqueued--;
    diff_log_run(&diff.orig, t->id, now);
    if (t->kind == FIXED_RATE) {
        lx_hrtimer_forward(k, now, t->period);
    } else if (t->kind == FIXED_DELAY) {
        k->expires = k->softexpires = diff.now + t->period;
    } else {
        return LX_HRTIMER_NORESTART;
    }
    D.kqueued++;
    return LX_HRTIMER_RESTART;
}

static void compare_state(void)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(diff.s, &st), TB_OK);
    if (st.pending != (uint64_t)D.kqueued)
        DIFF_MISMATCH("pending %" PRIu64 ", kernel %ld", st.pending, D.kqueued);
    if (st.visits != D.base.visits)
        DIFF_MISMATCH("visits %" PRIu64 ", kernel %" PRIu64, st.visits,
                 D.base.visits);
}

static void op_schedule(enum kind kind, int64_t delay, int64_t extra)
{
    assert_true(diff.nslots < OPS_MAX);
    int i = diff.nslots++;
    struct timer_slot *t = &D.slots[i];
    *t = (struct timer_slot){.id = i, .kind = kind};
    t->k.function = lx_task;
    int rc;
    int64_t slack = 0;
    switch (kind) {
    case RANGED:
        slack = extra;
        rc = tb_schedule_range(diff.s, delay, slack, hr_task, t, &t->h);
        break;
    case FIXED_RATE:
        t->period = extra;
        rc = tb_schedule_fixed_rate(diff.s, delay, hr_task, t, &t->h, extra);
        break;
    case FIXED_DELAY:
        t->period = extra;
        rc = tb_schedule_fixed_delay(diff.s, delay, hr_task, t, &t->h, extra);
        break;
    default:
        rc = tb_schedule(diff.s, delay, hr_task, t, &t->h);
        break;
    }
    if (rc != TB_OK)
        DIFF_MISMATCH("schedule answered %d", rc);
    lx_hrtimer_start_range_ns(&D.base, &t->k, diff.now + delay, slack);
    D.kqueued++;
    compare_state();
}

static void op_cancel(int i)
{
    int got = tb_cancel(diff.s, D.slots[i].h);
    int want = lx_hrtimer_try_to_cancel(&D.base, &D.slots[i].k);
    D.kqueued -= want;
    if (got != want)
        DIFF_MISMATCH("cancel of timer %d answered %d, kernel %d", i, got, want);
    compare_state();
}

/* hrtimer_start on a queued one-shot (ranged or not): soft = hard = new */
static void op_reset(int i, int64_t delay)
{
    int got = tb_reschedule(diff.s, D.slots[i].h, delay);
    lx_hrtimer_start_range_ns(&D.base, &D.slots[i].k, diff.now + delay, 0);
    if (got != 1)
        DIFF_MISMATCH("restart of queued timer %d answered %d", i, got);
    compare_state();
}

static long op_advance(int64_t now)
{
    diff.now = now;
    size_t before = diff.orig.n;
    long ran = tb_advance(diff.s, now);
    long want = lx_hrtimer_run_queues(&D.base, now);
    if (ran != want || (size_t)want != diff.orig.n - before)
        DIFF_MISMATCH("the interrupt ran %ld, kernel %ld", ran, want);
    diff_compare_runs();
    compare_state();
    return ran;
}

/* Delays: short, on a coarse grid (equal expiries, which run in the order
 * they were queued), another timer's expiry exactly, or long. */
static int64_t random_delay(uint64_t *rng)
{
    int k = (int)rng_range(rng, 0, 99);
    if (k < 15 && diff.nslots) {
        const struct timer_slot *o = &D.slots[rng_range(rng, 0,
                                                        diff.nslots - 1)];
        if (o->k.enqueued && o->k.expires > diff.now)
            return o->k.expires - diff.now;
    }
    if (k < 40)
        return rng_range(rng, 1, 20 * TB_MS);
    if (k < 70)
        return rng_range(rng, 1, 20) * TB_MS;
    if (k < 92)
        return rng_range(rng, 1, TB_SEC);
    return rng_range(rng, 1, 30 * TB_SEC);
}

static int queued_one_shot(uint64_t *rng)
{
    for (int tries = 0; tries < 8 && diff.nslots; tries++) {
        int i = (int)rng_range(rng, 0, diff.nslots - 1);
        if ((D.slots[i].kind == ONE_SHOT || D.slots[i].kind == RANGED) &&
            D.slots[i].k.enqueued)
            return i;
    }
    return -1;
}

/* Fixed rate and fixed delay one time in twenty each, ranged one time in
 * five, else a one-shot. */
static void random_schedule(uint64_t *rng)
{
    switch (rng_range(rng, 0, 19)) {
    case 0:
        op_schedule(FIXED_RATE, random_delay(rng), rng_range(rng, 1, 20) * TB_MS);
        break;
    case 1:
        op_schedule(FIXED_DELAY, random_delay(rng), rng_range(rng, 1, 20 * TB_MS));
        break;
    case 2: case 3: case 4: case 5:
        op_schedule(RANGED, random_delay(rng), rng_range(rng, 1, 5 * TB_MS));
        break;
    default:
        op_schedule(ONE_SHOT, random_delay(rng), 0);
        break;
    }
}

static const struct diff_script script = {
    .ops_max = OPS_MAX,
    .cancel_lo = 5,
    .steps = {0, TB_MS, 20 * TB_MS, 500 * TB_MS, 10 * TB_SEC},
    .nsteps = 5,
    .schedule = random_schedule,
    .pending_one_shot = queued_one_shot,
    .random_delay = random_delay,
    .cancel = op_cancel,
    .reset = op_reset,
    .advance = op_advance,
};

static void random_script(uint64_t seed)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 3;
    diff.what = "hrtree vs Linux hrtimers";
    diff.theirs = "kernel";
    diff_start(make_sched(tb_backend_find("hrtree"), NULL), seed, 0);
    memset(&D.base, 0, sizeof D.base);
    D.kqueued = 0;
    diff_random_ops(&script, &rng);
    op_advance(diff.now + 31 * TB_SEC); /* every one-shot left runs */
    diff_finish();
}

static void test_random_scripts(void **state)
{
    (void)state;
    size_t runs = 0;
    uint64_t visits = 0;
    for (uint64_t seed = 1; seed <= SCRIPTS; seed++) {
        random_script(seed);
        runs += diff.orig.n;
        visits += D.base.visits;
    }
    print_message("hrtree = Linux hrtimers on %d random scripts: %zu runs, "
                  "%" PRIu64 " nodes compared by inserts\n", SCRIPTS, runs,
                  visits);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_scripts),
    };
    return cmocka_run_group_tests_name("diff-hrtree", tests, NULL, NULL);
}
