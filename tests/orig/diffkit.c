/*
 * diffkit.c — the differential tests' shared driver (see diffkit.h): run
 * logs, the comparison of the runs, the mismatch report and the random
 * script of operations.
 */
#include "orig/diffkit.h"

#include <inttypes.h>

struct diff_state diff;

void diff_start(struct tb_sched *s, uint64_t seed, int64_t tick)
{
    diff.s = s;
    diff.ours.n = diff.orig.n = 0;
    diff.nslots = 0;
    diff.seed = seed;
    diff.op = 0;
    diff.now = 0;
    diff.tick = tick;
}

void diff_finish(void)
{
    assert_int_equal(tb_check(diff.s), TB_OK);
    assert_balanced(diff.s);
    tb_destroy(diff.s);
    diff.s = NULL;
}

void diff_log_run(struct diff_log *l, int id, int64_t at)
{
    assert_true(l->n < DIFF_LOG_MAX);
    l->runs[l->n++] = (struct run_rec){id, at};
}

void diff_mismatch(const char *file, int line, const char *fmt, ...)
{
    print_error("%s, seed %" PRIu64, diff.what, diff.seed);
    if (diff.tick)
        print_error(", tick %" PRId64 " ns", diff.tick);
    print_error(", operation %d at %" PRId64 " ns: ", diff.op, diff.now);
    va_list ap;
    va_start(ap, fmt);
    vprint_error(fmt, ap);
    va_end(ap);
    print_error("\n");
    _fail(file, line);
}

void diff_compare_runs(void)
{
    const struct diff_log *a = &diff.ours, *b = &diff.orig;
    if (a->n != b->n)
        DIFF_MISMATCH("%zu runs, %s %zu", a->n, diff.theirs, b->n);
    for (size_t i = 0; i < a->n; i++)
        if (a->runs[i].id != b->runs[i].id || a->runs[i].at != b->runs[i].at)
            DIFF_MISMATCH("run %zu: timer %d at %" PRId64 ", %s timer %d at "
                          "%" PRId64, i, a->runs[i].id, a->runs[i].at,
                          diff.theirs, b->runs[i].id, b->runs[i].at);
}

long diff_advance(int64_t now, void (*orig)(int64_t now),
                  void (*compare_state)(void))
{
    diff.now = now;
    size_t before = diff.orig.n;
    long ran = tb_advance(diff.s, now);
    orig(now);
    if (ran != (long)(diff.orig.n - before))
        DIFF_MISMATCH("the advance ran %ld, %s %zu", ran, diff.theirs,
                      diff.orig.n - before);
    diff_compare_runs();
    compare_state();
    return ran;
}

void diff_random_ops(const struct diff_script *sc, uint64_t *rng)
{
    /* the mix changes per script: some cancel most timers, some reset a
     * lot, some advance rarely */
    int w_sched = (int)rng_range(rng, 20, 40);
    int w_cancel = (int)rng_range(rng, sc->cancel_lo, sc->cancel_lo + 35);
    int w_reset = (int)rng_range(rng, 0, 25);
    int w_adv = (int)rng_range(rng, 8, 30);
    int total = w_sched + w_cancel + w_reset + w_adv;
    int ops = (int)rng_range(rng, 100, sc->ops_max - 1);
    for (diff.op = 0; diff.op < ops; diff.op++) {
        int k = (int)rng_range(rng, 0, total - 1);
        if (k < w_sched) {
            sc->schedule(rng);
        } else if (k < w_sched + w_cancel) {
            if (!diff.nslots)
                continue;
            int i = rng_range(rng, 0, 3) ? sc->pending_one_shot(rng) : -1;
            if (i < 0)
                i = (int)rng_range(rng, 0, diff.nslots - 1);
            sc->cancel(i);
        } else if (k < w_sched + w_cancel + w_reset) {
            int i = sc->pending_one_shot(rng);
            if (i >= 0)
                sc->reset(i, sc->random_delay(rng));
        } else {
            int64_t bound = sc->steps[rng_range(rng, 0, sc->nsteps - 1)];
            sc->advance(diff.now + (bound ? rng_range(rng, 1, bound) : 0));
        }
        if (diff.op % 64 == 0)
            assert_int_equal(tb_check(diff.s), TB_OK);
        if (sc->after_op)
            sc->after_op();
    }
}
