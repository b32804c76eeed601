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
 * prints the seed and the operation.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "orig/linux_hrtimer.h"

enum { SCRIPTS = 150, OPS_MAX = 1000, LOG_MAX = 1 << 16 };

enum kind { ONE_SHOT, RANGED, FIXED_RATE, FIXED_DELAY };

struct timer_slot {
    struct lx_hrtimer k;        /* first: the callback finds its slot */
    tb_handle h;
    int id;
    enum kind kind;
    int64_t period;
};

struct run_log {
    struct run_rec runs[LOG_MAX];
    size_t n;
};

static struct {
    struct tb_sched *s;
    struct lx_hrtimer_base base;
    struct timer_slot slots[OPS_MAX];
    int nslots;
    long kqueued;
    struct run_log hr, lx;
    uint64_t seed;
    int op;
    int64_t now;
} D;

static void log_run(struct run_log *l, int id, int64_t at)
{
    assert_true(l->n < LOG_MAX);
    l->runs[l->n++] = (struct run_rec){id, at};
}

static int hr_task(void *arg)
{
    struct timer_slot *t = arg;
    log_run(&D.hr, t->id, tb_now(D.s));
    return 0;
}

/* The kernel callback: records; a periodic one forwards itself (fixed rate)
 * or re-arms from the end of its run (fixed delay) and restarts. */
static enum lx_hrtimer_restart lx_task(struct lx_hrtimer *k, int64_t now)
{
    struct timer_slot *t = (struct timer_slot *)(void *)k;
    D.kqueued--;
    log_run(&D.lx, t->id, now);
    if (t->kind == FIXED_RATE) {
        lx_hrtimer_forward(k, now, t->period);
    } else if (t->kind == FIXED_DELAY) {
        k->expires = k->softexpires = D.now + t->period;
    } else {
        return LX_HRTIMER_NORESTART;
    }
    D.kqueued++;
    return LX_HRTIMER_RESTART;
}

#define MISMATCH(...)                                                       \
    do {                                                                    \
        print_error("hrtree vs Linux hrtimers, seed %" PRIu64 ", operation " \
                    "%d at %" PRId64 " ns: ", D.seed, D.op, D.now);         \
        print_error(__VA_ARGS__);                                           \
        print_error("\n");                                                  \
        fail();                                                             \
    } while (0)

static void compare_state(void)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(D.s, &st), TB_OK);
    if (st.pending != (uint64_t)D.kqueued)
        MISMATCH("pending %" PRIu64 ", kernel %ld", st.pending, D.kqueued);
    if (st.visits != D.base.visits)
        MISMATCH("visits %" PRIu64 ", kernel %" PRIu64, st.visits,
                 D.base.visits);
}

static void compare_runs(void)
{
    if (D.hr.n != D.lx.n)
        MISMATCH("%zu runs, kernel %zu", D.hr.n, D.lx.n);
    for (size_t i = 0; i < D.hr.n; i++)
        if (D.hr.runs[i].id != D.lx.runs[i].id ||
            D.hr.runs[i].at != D.lx.runs[i].at)
            MISMATCH("run %zu: timer %d at %" PRId64 ", kernel timer %d at "
                     "%" PRId64, i, D.hr.runs[i].id, D.hr.runs[i].at,
                     D.lx.runs[i].id, D.lx.runs[i].at);
}

static void op_schedule(enum kind kind, int64_t delay, int64_t extra)
{
    assert_true(D.nslots < OPS_MAX);
    int i = D.nslots++;
    struct timer_slot *t = &D.slots[i];
    *t = (struct timer_slot){.id = i, .kind = kind};
    t->k.function = lx_task;
    int rc;
    int64_t slack = 0;
    switch (kind) {
    case RANGED:
        slack = extra;
        rc = tb_schedule_range(D.s, delay, slack, hr_task, t, &t->h);
        break;
    case FIXED_RATE:
        t->period = extra;
        rc = tb_schedule_fixed_rate(D.s, delay, hr_task, t, &t->h, extra);
        break;
    case FIXED_DELAY:
        t->period = extra;
        rc = tb_schedule_fixed_delay(D.s, delay, hr_task, t, &t->h, extra);
        break;
    default:
        rc = tb_schedule(D.s, delay, hr_task, t, &t->h);
        break;
    }
    if (rc != TB_OK)
        MISMATCH("schedule answered %d", rc);
    lx_hrtimer_start_range_ns(&D.base, &t->k, D.now + delay, slack);
    D.kqueued++;
    compare_state();
}

static void op_cancel(int i)
{
    int got = tb_cancel(D.s, D.slots[i].h);
    int want = lx_hrtimer_try_to_cancel(&D.base, &D.slots[i].k);
    D.kqueued -= want;
    if (got != want)
        MISMATCH("cancel of timer %d answered %d, kernel %d", i, got, want);
    compare_state();
}

/* hrtimer_start on a queued one-shot (ranged or not): soft = hard = new */
static void op_reset(int i, int64_t delay)
{
    int got = tb_reschedule(D.s, D.slots[i].h, delay);
    lx_hrtimer_start_range_ns(&D.base, &D.slots[i].k, D.now + delay, 0);
    if (got != 1)
        MISMATCH("restart of queued timer %d answered %d", i, got);
    compare_state();
}

static void op_advance(int64_t now)
{
    D.now = now;
    size_t before = D.lx.n;
    long ran = tb_advance(D.s, now);
    long want = lx_hrtimer_run_queues(&D.base, now);
    if (ran != want || (size_t)want != D.lx.n - before)
        MISMATCH("the interrupt ran %ld, kernel %ld", ran, want);
    compare_runs();
    compare_state();
}

/* Delays: short, on a coarse grid (equal expiries, which run in the order
 * they were queued), another timer's expiry exactly, or long. */
static int64_t random_delay(uint64_t *rng)
{
    int k = (int)rng_range(rng, 0, 99);
    if (k < 15 && D.nslots) {
        const struct timer_slot *o = &D.slots[rng_range(rng, 0,
                                                        D.nslots - 1)];
        if (o->k.enqueued && o->k.expires > D.now)
            return o->k.expires - D.now;
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
    for (int tries = 0; tries < 8 && D.nslots; tries++) {
        int i = (int)rng_range(rng, 0, D.nslots - 1);
        if ((D.slots[i].kind == ONE_SHOT || D.slots[i].kind == RANGED) &&
            D.slots[i].k.enqueued)
            return i;
    }
    return -1;
}

static void random_script(uint64_t seed)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 3;
    D.s = make_sched(tb_backend_find("hrtree"), NULL);
    memset(&D.base, 0, sizeof D.base);
    D.nslots = 0;
    D.kqueued = 0;
    D.hr.n = D.lx.n = 0;
    D.seed = seed;
    D.now = 0;
    int w_sched = (int)rng_range(&rng, 20, 40);
    int w_del = (int)rng_range(&rng, 5, 40);
    int w_mod = (int)rng_range(&rng, 0, 25);
    int w_irq = (int)rng_range(&rng, 8, 30);
    int total = w_sched + w_del + w_mod + w_irq;
    int ops = (int)rng_range(&rng, 100, OPS_MAX - 1);
    for (D.op = 0; D.op < ops; D.op++) {
        int k = (int)rng_range(&rng, 0, total - 1);
        if (k < w_sched) {
            switch (rng_range(&rng, 0, 19)) {
            case 0:
                op_schedule(FIXED_RATE, random_delay(&rng),
                            rng_range(&rng, 1, 20) * TB_MS);
                break;
            case 1:
                op_schedule(FIXED_DELAY, random_delay(&rng),
                            rng_range(&rng, 1, 20 * TB_MS));
                break;
            case 2: case 3: case 4: case 5:
                op_schedule(RANGED, random_delay(&rng),
                            rng_range(&rng, 1, 5 * TB_MS));
                break;
            default:
                op_schedule(ONE_SHOT, random_delay(&rng), 0);
                break;
            }
        } else if (k < w_sched + w_del) {
            if (!D.nslots)
                continue;
            int i = rng_range(&rng, 0, 3) ? queued_one_shot(&rng) : -1;
            if (i < 0)
                i = (int)rng_range(&rng, 0, D.nslots - 1);
            op_cancel(i);
        } else if (k < w_sched + w_del + w_mod) {
            int i = queued_one_shot(&rng);
            if (i >= 0)
                op_reset(i, random_delay(&rng));
        } else {
            int64_t step;
            switch (rng_range(&rng, 0, 4)) {
            case 0: step = 0; break;
            case 1: step = rng_range(&rng, 1, TB_MS); break;
            case 2: step = rng_range(&rng, 1, 20 * TB_MS); break;
            case 3: step = rng_range(&rng, 1, 500 * TB_MS); break;
            default: step = rng_range(&rng, 1, 10 * TB_SEC); break;
            }
            op_advance(D.now + step);
        }
        if (D.op % 64 == 0)
            assert_int_equal(tb_check(D.s), TB_OK);
    }
    op_advance(D.now + 31 * TB_SEC); /* every one-shot left runs */
    assert_int_equal(tb_check(D.s), TB_OK);
    assert_balanced(D.s);
    tb_destroy(D.s);
}

static void test_random_scripts(void **state)
{
    (void)state;
    size_t runs = 0;
    uint64_t visits = 0;
    for (uint64_t seed = 1; seed <= SCRIPTS; seed++) {
        random_script(seed);
        runs += D.lx.n;
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
