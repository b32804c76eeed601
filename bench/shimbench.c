/*
 * bench/shimbench.c — what the shim itself costs, and self-tests of its
 * plumbing that the bench test suite checks in the JSON.
 *
 * shim/empty/none/timing=auto/N:<batch> times a batch of empty operations
 * (an empty asm statement the compiler must keep): the time per iteration
 * is the shim's overhead, i.e. Google Benchmark's bookkeeping plus one
 * indirect call into C, spread over the batch.  N:1 shows why the loop runs
 * in batches; the design's budget (1.5 ns) applies to the batch sizes the
 * harnesses use.  timing=manual adds the two clock readings a manual-time
 * batch takes (their calibrated cost is subtracted, so what is left is the
 * error of that correction).
 *
 * The selftest/... benchmarks (smoke profile only) have results known in
 * advance: manual time of exactly k ns per operation, a BigO that must come
 * out as N, an operation count that must equal the iteration count, a
 * setup that must run once per instance under TBB_REUSE, a setup that
 * fails on purpose, and an instance that fails in its third run (issue 42:
 * with repetitions, tests/hold_test.py checks that the process survives it
 * and that every repetition reports the same iteration count; with the
 * smoke profile's one repetition it never fails).
 */
#include <string.h>

#include "bench.h"

static double empty_batch(void *inst, tbb_state *st, int64_t n)
{
    (void)inst;
    (void)st;
    for (int64_t i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
    return 0;
}

static double empty_manual_batch(void *inst, tbb_state *st, int64_t n)
{
    (void)inst;
    (void)st;
    int64_t t0 = tb_monotonic_ns();
    for (int64_t i = 0; i < n; i++)
        __asm__ volatile("" ::: "memory");
    int64_t t1 = tb_monotonic_ns();
    return bh_seconds(t0, t1);
}

static void *batch_from_arg(void *ctx, tbb_state *st)
{
    tbb_set_batch(st, tbb_arg(st, 0));
    return ctx;
}

static int dummy;

/* ---- Self-tests -------------------------------------------------------- */

struct selftest {
    int64_t arg;
    uint64_t ops;       /* operations seen since the last report */
    int setups;         /* setups of this instance */
};

static struct selftest selftests[8];
static size_t nselftests;

static void *counting_setup(void *ctx, tbb_state *st)
{
    struct selftest *t = ctx;
    t->arg = tbb_arg(st, 0);
    t->setups++;
    tbb_set_batch(st, t->arg);
    return t;
}

static double counting_batch(void *inst, tbb_state *st, int64_t n)
{
    struct selftest *t = inst;
    (void)st;
    t->ops += (uint64_t)n;
    /* k ns per operation, exactly: the reported time must say k */
    return (double)n * (double)t->arg * 1e-9;
}

static void counting_report(void *inst, tbb_state *st)
{
    struct selftest *t = inst;
    tbb_counter(st, "ops_seen", (double)t->ops, TBB_C_PLAIN);
    tbb_counter(st, "setups", (double)t->setups, TBB_C_PLAIN);
    tbb_counter(st, "ops_rate", (double)t->ops, TBB_C_RATE);
    tbb_complexity_n(st, t->arg);
    t->ops = 0;
}

static void *failing_setup(void *ctx, tbb_state *st)
{
    (void)ctx;
    tbb_skip(st, "deliberate setup failure");
    return NULL;
}

/* selftest/lateerror: each batch is one whole run (its 5 ms of manual
 * time pass any min_time up to that, so Google Benchmark's iteration
 * search stops at its first round), and the third batch fails: with
 * --benchmark_repetitions=4, two good repetitions, then one failing inside
 * its batch, then one failing for the earlier one. */
static double late_failing_batch(void *inst, tbb_state *st, int64_t n)
{
    struct selftest *t = inst;
    (void)n;
    if (++t->ops == 3) {
        tbb_skip(st, "deliberate failure in the third run (error)");
        return -1;
    }
    return 0.005;
}

static struct selftest *new_selftest(void)
{
    return &selftests[nselftests++];
}

static void register_selftests(void)
{
    static const struct tbb_ops counting = {counting_setup, counting_batch,
                                            counting_report, NULL};
    static const struct tbb_ops failing = {failing_setup, empty_batch, NULL,
                                           NULL};
    static const struct tbb_ops late = {counting_setup, late_failing_batch,
                                        NULL, NULL};
    static const char *const n_name[] = {"N"};
    /* manual time k ns/op for k = 1, 8, 64, 512: linear in N */
    tbb_bench *b = tbb_register("selftest/manual/none/timing=manual",
                                &counting, new_selftest(),
                                TBB_MANUAL_TIME | TBB_COMPLEXITY);
    tbb_arg_names(b, 1, n_name);
    for (int64_t k = 1; k <= 512; k *= 8)
        tbb_args(b, 1, &k);
    /* reuse: one setup however many runs */
    b = tbb_register("selftest/reuse/none/timing=manual", &counting,
                     new_selftest(), TBB_MANUAL_TIME | TBB_REUSE);
    tbb_arg_names(b, 1, n_name);
    int64_t k = 37;
    tbb_args(b, 1, &k);
    /* an odd batch under automatic timing: ops_seen == iterations */
    b = tbb_register("selftest/ops/none/timing=auto", &counting,
                     new_selftest(), 0);
    tbb_arg_names(b, 1, n_name);
    tbb_args(b, 1, &k);
    b = tbb_register("selftest/error/none/timing=auto", &failing, NULL, 0);
    tbb_arg_names(b, 1, n_name);
    k = 1;
    tbb_args(b, 1, &k);
    /* no memory-latency canary: it could run a batch again */
    b = tbb_register("selftest/lateerror/none/timing=manual", &late,
                     new_selftest(),
                     TBB_MANUAL_TIME | TBB_REUSE | TBB_NO_CANARY);
    tbb_arg_names(b, 1, n_name);
    k = 37;
    tbb_args(b, 1, &k);
}

void bh_register_shim(void)
{
    static const struct tbb_ops automatic = {batch_from_arg, empty_batch,
                                             NULL, NULL};
    static const struct tbb_ops manual = {batch_from_arg, empty_manual_batch,
                                          NULL, NULL};
    static const char *const n_name[] = {"N"};
    static const int64_t batches[] = {1, 64, 1024};
    tbb_bench *a = tbb_register("shim/empty/none/timing=auto", &automatic,
                                &dummy, 0);
    tbb_bench *m = tbb_register("shim/empty/none/timing=manual", &manual,
                                &dummy, TBB_MANUAL_TIME);
    tbb_arg_names(a, 1, n_name);
    tbb_arg_names(m, 1, n_name);
    for (size_t i = 0; i < sizeof batches / sizeof batches[0]; i++) {
        tbb_args(a, 1, &batches[i]);
        if (batches[i] > 1)
            tbb_args(m, 1, &batches[i]);
    }
    if (strcmp(bh.profile->name, "smoke") == 0)
        register_selftests();
}
