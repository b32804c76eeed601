/*
 * diff_quadheap.c — quadheap run side by side with a transcription of Go
 * 1.24's timers (tests/orig/go_timers.c) on the virtual clock: issue 29's
 * two scripts with Go's numbers, then 200 random scripts (seeded, so every
 * run repeats) of NewTimer, NewTicker, Stop, Reset and checks at random
 * times.  After every operation both sides must agree on the answer, the
 * pending count (len(ts.heap)), the zombies, the slots adjust passes read
 * (visits) and the sift levels; after every advance on the runs, in order,
 * each with its time.  A mismatch prints the seed and the operation.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"
#include "orig/go_timers.h"

enum { SCRIPTS = 200, OPS_MAX = 1200, LOG_MAX = 1 << 16 };

struct timer_slot {
    struct go_timer g;
    tb_handle h;
    int id;
    bool ticker;
};

struct run_log {
    struct run_rec runs[LOG_MAX];
    size_t n;
};

static struct {
    struct tb_sched *s;
    struct go_timers ts;
    struct timer_slot slots[OPS_MAX];
    int nslots;
    struct run_log qh, go;
    uint64_t seed;
    int op;
    int64_t now;
} D;

static void log_run(struct run_log *l, int id, int64_t at)
{
    assert_true(l->n < LOG_MAX);
    l->runs[l->n++] = (struct run_rec){id, at};
}

static int qh_task(void *arg)
{
    struct timer_slot *t = arg;
    log_run(&D.qh, t->id, tb_now(D.s));
    return 0;
}

static void go_task(void *arg, int64_t now)
{
    struct timer_slot *t = arg;
    log_run(&D.go, t->id, now);
}

#define MISMATCH(...)                                                       \
    do {                                                                    \
        print_error("quadheap vs Go, seed %" PRIu64 ", operation %d at "    \
                    "%" PRId64 " ns: ", D.seed, D.op, D.now);               \
        print_error(__VA_ARGS__);                                           \
        print_error("\n");                                                  \
        fail();                                                             \
    } while (0)

/* The state both sides must share after every operation. */
static void compare_state(void)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(D.s, &st), TB_OK);
    if (st.pending != D.ts.n)
        MISMATCH("pending %" PRIu64 ", Go's len(heap) %zu", st.pending,
                 D.ts.n);
    if (st.zombies != (uint64_t)D.ts.zombies)
        MISMATCH("zombies %" PRIu64 ", Go %d", st.zombies, D.ts.zombies);
    if (st.visits != D.ts.visits)
        MISMATCH("visits %" PRIu64 ", Go %" PRIu64, st.visits, D.ts.visits);
    if (st.sift_levels != D.ts.sift_levels)
        MISMATCH("sift levels %" PRIu64 ", Go %" PRIu64, st.sift_levels,
                 D.ts.sift_levels);
}

static void compare_runs(void)
{
    if (D.qh.n != D.go.n)
        MISMATCH("%zu runs, Go %zu", D.qh.n, D.go.n);
    for (size_t i = 0; i < D.qh.n; i++)
        if (D.qh.runs[i].id != D.go.runs[i].id ||
            D.qh.runs[i].at != D.go.runs[i].at)
            MISMATCH("run %zu: timer %d at %" PRId64 ", Go timer %d at "
                     "%" PRId64, i, D.qh.runs[i].id, D.qh.runs[i].at,
                     D.go.runs[i].id, D.go.runs[i].at);
}

static void start(uint64_t seed)
{
    D.s = make_sched(tb_backend_find("quadheap"), NULL);
    go_timers_init(&D.ts);
    D.nslots = 0;
    D.qh.n = D.go.n = 0;
    D.seed = seed;
    D.op = 0;
    D.now = 0;
}

static void finish(void)
{
    assert_int_equal(tb_check(D.s), TB_OK);
    assert_balanced(D.s);
    tb_destroy(D.s);
    go_timers_free(&D.ts);
}

/* NewTimer / NewTicker (period > 0) at now + delay; returns the slot. */
static int op_schedule(int64_t delay, int64_t period)
{
    assert_true(D.nslots < OPS_MAX);
    int i = D.nslots++;
    struct timer_slot *t = &D.slots[i];
    t->id = i;
    t->ticker = period > 0;
    go_timer_init(&t->g, go_task, t);
    int rc = period > 0
                 ? tb_schedule_fixed_rate(D.s, delay, qh_task, t, &t->h, period)
                 : tb_schedule(D.s, delay, qh_task, t, &t->h);
    if (rc != TB_OK)
        MISMATCH("schedule answered %d", rc);
    go_timer_modify(&t->g, &D.ts, D.now + delay, period);
    compare_state();
    return i;
}

static void op_cancel(int i)
{
    int got = tb_cancel(D.s, D.slots[i].h);
    int want = go_timer_stop(&D.slots[i].g);
    if (got != want)
        MISMATCH("stop of timer %d answered %d, Go %d", i, got, want);
    compare_state();
}

/* Reset of a pending one-shot (Go's Reset of a fired or stopped timer would
 * add it again; quadheap's handle is gone then: a declared difference). */
static void op_reset(int i, int64_t delay)
{
    int got = tb_reschedule(D.s, D.slots[i].h, delay);
    int want = go_timer_modify(&D.slots[i].g, &D.ts, D.now + delay, 0);
    if (got != want)
        MISMATCH("reset of timer %d answered %d, Go %d", i, got, want);
    compare_state();
}

static long op_advance(int64_t now)
{
    D.now = now;
    size_t before = D.go.n;
    long ran = tb_advance(D.s, now);
    go_timers_check(&D.ts, now);
    if (ran != (long)(D.go.n - before))
        MISMATCH("the advance ran %ld, Go %zu", ran, D.go.n - before);
    compare_runs();
    compare_state();
    return ran;
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
    if (k < 75 && D.nslots) {
        int64_t w = D.slots[rng_range(rng, 0, D.nslots - 1)].g.when;
        if (w > D.now)
            return w - D.now;
    }
    if (k < 92)
        return rng_range(rng, 1, 2 * TB_SEC);
    return rng_range(rng, 1, 60 * TB_SEC);
}

/* A timer that Go still holds pending as a one-shot, or -1. */
static int pending_one_shot(uint64_t *rng)
{
    for (int tries = 0; tries < 8 && D.nslots; tries++) {
        int i = (int)rng_range(rng, 0, D.nslots - 1);
        if (!D.slots[i].ticker && D.slots[i].g.when > 0)
            return i;
    }
    return -1;
}

static uint64_t total_visits, total_zombie_peak;

static void random_script(uint64_t seed)
{
    uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
    start(seed);
    /* the mix changes per script: some stop most timers (zombie-heavy),
     * some reset a lot, some advance rarely */
    int w_sched = (int)rng_range(&rng, 20, 40);
    int w_stop = (int)rng_range(&rng, 10, 45);
    int w_reset = (int)rng_range(&rng, 0, 25);
    int w_adv = (int)rng_range(&rng, 8, 30);
    int total = w_sched + w_stop + w_reset + w_adv;
    int ops = (int)rng_range(&rng, 100, OPS_MAX - 1);
    for (D.op = 0; D.op < ops; D.op++) {
        int k = (int)rng_range(&rng, 0, total - 1);
        if (k < w_sched) {
            if (rng_range(&rng, 0, 19) == 0)
                op_schedule(rng_range(&rng, 1, 50 * TB_MS),
                            rng_range(&rng, 1, 30) * TB_MS);
            else
                op_schedule(random_delay(&rng), 0);
        } else if (k < w_sched + w_stop) {
            if (!D.nslots)
                continue;
            int i = rng_range(&rng, 0, 3) ? pending_one_shot(&rng) : -1;
            if (i < 0)
                i = (int)rng_range(&rng, 0, D.nslots - 1);
            op_cancel(i);
        } else if (k < w_sched + w_stop + w_reset) {
            int i = pending_one_shot(&rng);
            if (i >= 0)
                op_reset(i, random_delay(&rng));
        } else {
            int64_t step;
            switch (rng_range(&rng, 0, 5)) {
            case 0: step = 0; break;
            case 1: step = rng_range(&rng, 1, TB_MS); break;
            case 2: step = rng_range(&rng, 1, 20 * TB_MS); break;
            case 3: step = rng_range(&rng, 1, 200 * TB_MS); break;
            case 4: step = rng_range(&rng, 1, 2 * TB_SEC); break;
            default: step = rng_range(&rng, 1, 30 * TB_SEC); break;
            }
            op_advance(D.now + step);
        }
        if (D.op % 64 == 0)
            assert_int_equal(tb_check(D.s), TB_OK);
        if ((uint64_t)D.ts.zombies > total_zombie_peak)
            total_zombie_peak = (uint64_t)D.ts.zombies;
    }
    op_advance(D.now + 61 * TB_SEC); /* every one-shot left runs */
    total_visits += D.ts.visits;
    finish();
}

static void test_random_scripts(void **state)
{
    (void)state;
    size_t runs = 0;
    for (uint64_t seed = 1; seed <= SCRIPTS; seed++) {
        random_script(seed);
        runs += D.go.n;
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
