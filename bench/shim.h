/*
 * bench/shim.h — Google Benchmark for C: the thin layer the harnesses use.
 *
 * Why a shim and not a C benchmark loop: Google Benchmark already does what
 * the report needs (iteration-count search, repetitions with median and
 * coefficient of variation, BigO fits, JSON output), but it is C++ and its
 * `for (auto _ : state)` loop would cost a call back into C for every
 * iteration, which is more than a wheel insert.  So the timed loop runs on
 * the C++ side in batches: the C function is told "do n operations" and
 * does them in a plain C loop.
 *
 * A benchmark is an ops table (setup / batch / report / teardown) plus a
 * context pointer, registered under a name with argument tuples.  For each
 * instance (one tuple of arguments) the shim calls setup() once, then
 * batch() as often as Google Benchmark asks, then report() at the end of
 * every run so the C side can attach its counters.  With TBB_REUSE the
 * instance survives from one run to the next (Google Benchmark runs a
 * benchmark several times while it searches for an iteration count, and
 * once per repetition): an expensive setup such as filling a scheduler
 * with 10^6 tasks is then paid once.  Repetitions interleaved with other
 * benchmarks' find their instance still alive while the process's resident
 * memory stays within TBB_CACHE_MB (environment; default a quarter of the
 * machine's memory, at most 4 GiB): the least recently used instances are
 * torn down first, and all at tbb_run()'s end.
 *
 * Timing.  Without TBB_MANUAL_TIME Google Benchmark times the whole batch
 * call.  With it, batch() returns the seconds its timed part took and
 * whatever it does outside that part (restoring the state to N pending,
 * building the next input) is not counted: this is how the harnesses avoid
 * PauseTiming, which costs hundreds of nanoseconds per call.
 */
#ifndef TIMERBENCH_BENCH_SHIM_H
#define TIMERBENCH_BENCH_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** One run of one benchmark instance (wraps benchmark::State). */
typedef struct tbb_state tbb_state;

/** A registered benchmark family (wraps benchmark::internal::Benchmark). */
typedef struct tbb_bench tbb_bench;

/** What a C benchmark provides.  Only batch is required. */
struct tbb_ops {
    /** Builds the state of one instance (its arguments via tbb_arg()).
     *  Returns the instance pointer handed to the other calls; NULL after
     *  tbb_skip() marks the instance as failed.  May call tbb_set_batch().
     *  If NULL, the registration context itself is the instance. */
    void *(*setup)(void *ctx, tbb_state *st);
    /** Performs exactly n operations.  With TBB_MANUAL_TIME returns the
     *  seconds its timed part took (negative after tbb_skip()); otherwise
     *  the return value is ignored. */
    double (*batch)(void *inst, tbb_state *st, int64_t n);
    /** Called after every run: sets counters from what the batches of that
     *  run accumulated (and resets those accumulators).  Optional. */
    void (*report)(void *inst, tbb_state *st);
    /** Frees what setup() built.  Optional. */
    void (*teardown)(void *inst);
};

/** Registration flags. */
enum {
    TBB_MANUAL_TIME = 1u << 0,  /* batch() returns the timed seconds */
    TBB_REAL_TIME = 1u << 1,    /* wall time instead of thread CPU time */
    TBB_PROCESS_CPU = 1u << 2,  /* CPU time of every thread of the process */
    TBB_REUSE = 1u << 3,        /* keep the instance between runs */
    TBB_COMPLEXITY = 1u << 4,   /* fit BigO over the family (see
                                   tbb_complexity_n) */
    TBB_NO_CANARY = 1u << 5,    /* no memory-latency reading around its
                                   repetitions, so no wait for a slow spell
                                   and no batch run again after one: for
                                   real-time experiments, whose own threads
                                   load the machine (see bench/shim.cc) */
};

/** Counter flags (benchmark::Counter::Flags). */
enum {
    TBB_C_PLAIN = 0,
    TBB_C_RATE = 1u << 0,       /* divided by the run's time */
    TBB_C_AVG_ITER = 1u << 1,   /* divided by the run's iterations */
    TBB_C_INVARIANT = 1u << 2,  /* multiplied by the iterations */
};

/** Time units for display and JSON. */
enum tbb_unit {
    TBB_NS = 0,
    TBB_US = 1,
    TBB_MS = 2,
    TBB_S = 3,
};

/** Registers a benchmark family.  `name` and the ops table are copied or
 *  must outlive the run; `ctx` is passed to setup().  Never NULL (allocation
 *  failure aborts: there is nothing to measure without memory). */
tbb_bench *tbb_register(const char *name, const struct tbb_ops *ops,
                        void *ctx, unsigned flags);

/** Names the arguments, as in "insert/.../N:1000". */
void tbb_arg_names(tbb_bench *b, size_t n, const char *const *names);

/** Adds one instance with the given argument tuple. */
void tbb_args(tbb_bench *b, size_t n, const int64_t *args);

/** Adds instances for every combination of the ranges (lo[i]..hi[i], each
 *  stepped by the range multiplier, default 8), as Benchmark::Ranges. */
void tbb_ranges(tbb_bench *b, size_t n, const int64_t *lo, const int64_t *hi);

/** Step of tbb_ranges(). */
void tbb_range_multiplier(tbb_bench *b, int multiplier);

/** Minimum (timed) seconds per run; 0 keeps the command-line default. */
void tbb_min_time(tbb_bench *b, double seconds);

/** Fixed iteration count per run (disables the iteration search). */
void tbb_iterations(tbb_bench *b, int64_t n);

/** Repetitions of each instance; aggregates (mean, median, stddev, cv) are
 *  reported when > 1.  0 keeps the command-line default. */
void tbb_repetitions(tbb_bench *b, int n);

/** Display and JSON unit of the time columns. */
void tbb_unit(tbb_bench *b, enum tbb_unit unit);

/** The i-th argument of the running instance. */
int64_t tbb_arg(const tbb_state *st, size_t i);

/** Operations per batch() call for this instance (default 1).  Call from
 *  setup(); larger batches amortise the call from C++. */
void tbb_set_batch(tbb_state *st, int64_t n);

/** Iterations done so far in this run. */
int64_t tbb_iterations_done(const tbb_state *st);

/** Sets (or replaces) a user counter of this run. */
void tbb_counter(tbb_state *st, const char *name, double value,
                 unsigned flags);

/** The N of this run for the BigO fit of a TBB_COMPLEXITY family. */
void tbb_complexity_n(tbb_state *st, int64_t n);

/** A free-text label shown beside the result. */
void tbb_label(tbb_state *st, const char *label);

/** Marks the run as failed with a message; the result carries
 *  "error_occurred" and the message instead of timings.  The first message
 *  of a run is kept.  The run stops calling batch() at once, but is marked
 *  failed only once its remaining iterations are used up without work, so
 *  that it reports the iteration count of the instance's good repetitions:
 *  Google Benchmark aborts the process when repetitions differ in it.
 *  Later runs of the instance fail with "failed in an earlier run". */
void tbb_skip(tbb_state *st, const char *message);

/** The most time, in seconds, the process may spend waiting out slow
 *  spells of the machine's memory (0: never wait, only record the latency
 *  each repetition starts with).  Before each repetition the shim times a
 *  dependent load over 16 MiB (counter mem_latency_ns); when it is over 1.6
 *  times the run's 25th percentile it waits 200 ms and measures again, up
 *  to 5 times (slow_spell_waits), and a batch of 10 ms or more that ends in
 *  such a spell is run again once it has passed (slow_spell_redone). */
void tbb_spell_wait(double seconds);

/** Called from batch(): the time this batch returns does not stand for its
 *  operations (its thread was switched out while timed, say), so the shim
 *  runs batch() again, up to 16 times, and keeps the last time.  The
 *  iteration count is unchanged: the discarded operations are not counted. */
void tbb_discard(tbb_state *st);

/** True if the run was marked failed. */
int tbb_failed(const tbb_state *st);

/** Adds a key to the "context" object of the JSON output (machine, build,
 *  workload seeds).  Call before tbb_run(). */
void tbb_context(const char *key, const char *value);

/** Passes the command line to Google Benchmark, which removes the
 *  --benchmark_* flags it knows.  Returns 0, or -1 if an argument is left
 *  that nobody understood (it has been reported on stderr). */
int tbb_init(int *argc, char **argv);

/** Appends every instance's results to the file at `path` the moment
 *  Google Benchmark reports them, one line each, every line a whole Google
 *  Benchmark JSON document (the first holds only the context), so that a
 *  run killed at any moment leaves each finished instance readable.  Call
 *  before tbb_run().  Returns 0, or -1 with errno set if the file cannot be
 *  opened. */
int tbb_journal(const char *path);

/** Progress lines on stderr ("tbb: [k] name, elapsed s") as each instance
 *  starts, for runners that show progress on long runs. */
void tbb_progress(int enabled);

/** Runs every registered benchmark that matches --benchmark_filter and
 *  writes the reports.  Returns how many instances ran. */
size_t tbb_run(void);

/** Frees Google Benchmark's state after tbb_run(). */
void tbb_shutdown(void);

#ifdef __cplusplus
}
#endif

#endif
