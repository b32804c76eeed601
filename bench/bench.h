/*
 * bench/bench.h — what the C harnesses share: profiles, named and seeded
 * workloads, the configuration series a backend is measured in, result
 * names, timing, percentiles and the CSV of raw samples.
 *
 * The harnesses see only include/timerbench/scheduler.h and the registry
 * (tb_backend_count/tb_backend_at): everything that differs between
 * backends is learned from their capability flags, their resolved
 * configuration (tb_sched_config) and small behavioural probes, so a new
 * backend is measured by every benchmark without an edit here.
 *
 * Result names have one grammar, parsed by the report generator:
 *     <op>/<backend>/<workload>/<config>/N:<n>
 * where <config> is a comma-separated list of key=value pairs that starts
 * with series=h2h|orig|cover (see bh_configs), or series=precision for the
 * timeouts op's tick sweep (bench/micro.c).  Google Benchmark appends
 * its own segments (manual_time, real_time, process_time, iterations:K,
 * repeats:K) and aggregate suffixes (_mean, _median, _stddev, _cv, _BigO,
 * _RMS); bench/README.md lists them.
 */
#ifndef TIMERBENCH_BENCH_BENCH_H
#define TIMERBENCH_BENCH_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "timerbench/scheduler.h"
#include "shim.h"

/* ---- Profiles ---------------------------------------------------------- */

#define BH_MAX_N 8

/** How much a run measures.  quick: CI, a few minutes on 2 cores;
 *  standard: the default, at least 5 repetitions; full: N up to 10^7 and
 *  longer runtime experiments; smoke: tiny sizes for the test suite. */
struct bh_profile {
    const char *name;
    int64_t n[BH_MAX_N];       /* micro-benchmark sizes */
    size_t nn;
    double min_time;           /* --benchmark_min_time, seconds */
    int repetitions;           /* --benchmark_repetitions */
    bool wide;                 /* wide workload in the micro ops */
    bool burst_micro;          /* burst workload in the micro ops */
    bool orig_micro;           /* wheels at the originals' defaults */
    bool cover;                /* wheels sized to cover the workload */
    bool wide_all;             /* wide in fill and cancel too, not only
                                  in insert and expire (which the
                                  report's verdicts read) */
    int64_t precision_n;       /* N of the timeouts precision sweep
                                  (series=precision; 0 = none) */
    int precision_reps;        /* its repetitions (0: `repetitions`) */
    double batch_budget;       /* seconds a moving-clock batch may take
                                  before it is cut short (periodic; expire
                                  only as a safety net, at 5 times it) */
    double work_budget;        /* wheel visits + ticks an expire batch may
                                  do before it is cut short: counted work,
                                  so the cut falls on the same task in
                                  every run */
    int64_t libs_slow_max_n;   /* largest N of the libraries' slow
                                  operations (bench/libs.c: timeouts and
                                  reschedule take T / 2 of wall time per
                                  repetition, 2 s at 10^6; expire at 10^6
                                  takes seconds a batch in sd-event and
                                  GLib) */
    double spell_wait_seconds; /* most time the shim may spend waiting
                                  out slow spells of the machine's memory
                                  before repetitions (bench/shim.cc) */
    /* runtime (monotonic clock) experiments */
    int runtime_repetitions;   /* each is one whole experiment */
    int light_samples;         /* one-shot probes per lateness run */
    int loaded_pending;        /* background tasks of the loaded run */
    double jitter_seconds;     /* length of the 1 ms fixed-rate run */
    int interference_ms;       /* length of the interference run */
    int64_t burst[2];          /* burst sizes (0 = unused) */
    double idle_seconds;       /* idle-cost window */
    int producer_tasks;        /* tasks per producer thread */
    double workers_seconds;    /* leader-follower run */
    bool orig_runtime;         /* wheels at defaults in every runtime run */
};

/** The profile called `name`, or NULL. */
const struct bh_profile *bh_profile_find(const char *name);

/** Names of every profile, comma-separated (for --help). */
const char *bh_profile_names(void);

/** What the harnesses were asked to run: profile, seed, backends, CSV. */
struct bh_run {
    const struct bh_profile *profile;
    uint64_t seed;
    const struct tb_backend *backends[32];
    size_t nbackends;
    FILE *csv;                 /* raw samples, may be NULL */
    int64_t clock_overhead_ns; /* cost of one timing pair, subtracted */
    int64_t cpu_clock_overhead_ns; /* the same for bh_cpu_now() */
    long timer_slack_ns;       /* the main thread's, at start */
    bool user_min_time;        /* --benchmark_min_time given: used as is */
};

extern struct bh_run bh;

/* ---- Random numbers and workloads -------------------------------------- */

/** splitmix64: seeds derived from the base seed and a name. */
uint64_t bh_mix(uint64_t x);

/** The seed of one benchmark instance: base seed, name and N, so results
 *  do not depend on which other benchmarks ran. */
uint64_t bh_seed_for(const char *name, int64_t n);

/** xorshift64*: a fast generator whose whole state is one non-zero word. */
static inline uint64_t bh_rand(uint64_t *s)
{
    uint64_t x = *s;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *s = x;
    return x * 0x2545F4914F6CDD1DULL;
}

/** Uniform double in [0, 1). */
static inline double bh_unit(uint64_t *s)
{
    return (double)(bh_rand(s) >> 11) * 0x1.0p-53;
}

/** Uniform integer in [lo, hi]. */
int64_t bh_uniform(uint64_t *s, int64_t lo, int64_t hi);

/** Log-uniform integer in [lo, hi] (lo > 0). */
int64_t bh_log_uniform(uint64_t *s, int64_t lo, int64_t hi);

/** The named workloads: delays in ns, never in ticks. */
enum bh_workload {
    BH_UNIFORM,   /* uniform 1 ms - 1000 s */
    BH_SHORT,     /* uniform 1 ms - 500 ms: one revolution of 512 x 1 ms */
    BH_WIDE,      /* log-uniform 1 ms - 1 day */
    BH_BURST,     /* every task at one delay, 1 s */
    BH_TIMEOUTS,  /* fixed 30 s, 95% cancelled before they fire */
    BH_PERIODIC,  /* fixed-rate, periods log-uniform 10 ms - 10 s */
    BH_WORST,     /* the heaps' worst case: delays in strictly decreasing
                     order, 1 s - 1000 s (insert and cancel only) */
    BH_IDLE,      /* idle timeouts: N connections, one fixed 10 s timeout
                     each, pushed back on every request; requests 3 s
                     apart on average per connection, exponential gaps
                     (reschedule only; bench/micro.c) */
    BH_NWORKLOADS
};

struct bh_workload_def {
    const char *name;
    int64_t lo, hi;        /* delay (or period) range */
    int64_t expire_step;   /* clock step of the expire benchmark */
    const char *what;      /* one line, recorded in the JSON context */
};

extern const struct bh_workload_def bh_workloads[BH_NWORKLOADS];

/** One delay (one period for BH_PERIODIC) of workload w.  *s is the
 *  instance's generator state (bh_seed_for, then bh_rand or bh_draw).
 *  BH_WORST keeps its next delay in *s instead: a state inside its range
 *  [lo, hi] is that delay, and anything else (a fresh seed) starts the
 *  sequence at hi less up to 2^20 ns taken from the seed.  Each draw is
 *  1 to 1024 ns (seeded) shorter than the one before, so the delays
 *  strictly decrease for some 2*10^9 draws before they would reach lo and
 *  start again at hi.  A caller must not give such a state to bh_rand
 *  (that would start the sequence afresh). */
int64_t bh_draw(enum bh_workload w, uint64_t *s);

/* ---- Configuration series ---------------------------------------------- */

/** Which series a configuration belongs to. */
enum bh_series {
    BH_H2H,    /* head-to-head: wheels at a common 1 ms tick, default size */
    BH_ORIG,   /* every field left to the original's default */
    BH_COVER,  /* wheels at 1 ms with a wheel that spans the workload */
};

#define BH_LABEL_MAX 160

/** A scheduler configuration and its name (the <config> segment). */
struct bh_config {
    struct tb_config cfg;
    char label[BH_LABEL_MAX];
    enum bh_series series;
};

#define BH_MAX_CONFIGS 4

/** The configurations backend b is measured in for workload w:
 *   - every backend: series=h2h (wheels, TB_CAP_TICKED, at tick=1ms with
 *     their default wheel size; the others at their defaults);
 *   - ticked backends, if `orig`: series=orig, every field at the
 *     original's default (the label shows the resolved tick and size);
 *     (left out where the defaults are the head-to-head configuration);
 *   - ticked backends that walk rounds (bh_walks_rounds), if `cover`:
 *     series=cover, tick 1 ms and the smallest power-of-two wheel whose
 *     one revolution spans the workload's longest delay, when that takes
 *     at most 2^20 buckets (not for `wide`: a day is 2^27 of them) and
 *     differs from the default size.  A hierarchical wheel covers any
 *     delay with its levels already.
 *  `base` supplies the clock, threads and flags.  Returns the count. */
size_t bh_configs(const struct tb_backend *b, enum bh_workload w,
                  const struct tb_config *base, bool orig, bool cover,
                  struct bh_config out[BH_MAX_CONFIGS]);

/** Appends ",key=value" to a label. */
void bh_label_add(struct bh_config *c, const char *key, const char *value);

/** Formats a duration in the label style: 1ms, 100ms, 30s, 1500us. */
void bh_fmt_ns(char *buf, size_t size, int64_t ns);

/** Where a backend's inserts wait before they reach their place. */
enum bh_inbox {
    BH_INBOX_NONE,     /* none: tb_schedule files the task directly */
    BH_INBOX_ADVANCE,  /* an inbox that tb_advance(s, now) drains */
    BH_INBOX_TICK,     /* an inbox drained only when a tick passes */
};

/** Probes how configuration c of backend b handles new tasks, from the
 *  `transfers` counter (inbox entries moved into buckets). */
enum bh_inbox bh_inbox_of(const struct tb_backend *b,
                          const struct tb_config *c);

/* ---- Holding N base tasks (micro.c, counts.c) -------------------------- */

/** The N base tasks a micro-benchmark keeps pending while it measures, as
 *  micro.c and counts.c hold them: a view of the harness's own fields. */
struct bh_hold {
    struct tb_sched *s;
    enum bh_inbox inbox;
    int64_t tick;         /* resolved tick, 0 for an unticked backend */
    int64_t n;            /* the base's size */
    int64_t *clock;       /* the virtual time the harness moved to */
    uint32_t *fired;      /* slots whose base task ran, to be put back */
    size_t *nfired;
    /* schedules slot's base task again: TB_OK or a TB_E* code */
    int (*put)(void *ctx, uint32_t slot);
    void *ctx;
};

/** bh_refill's answer when the structure cannot hold N: each tick that
 *  drains the inbox runs more of the base than it moves in. */
#define BH_CANNOT_HOLD 1

/** The scheduler's `transfers` counter (tb_stats). */
uint64_t bh_transfers(struct tb_sched *s);

/** The end of an insert: tb_advance(s, now), and where the backend has an
 *  inbox, ticks (moving *clock) until `n` tasks have left it since the
 *  counter read `transfers0` (Netty moves at most 100 000 per tick).
 *  *ticks (NULL allowed) counts the ticks taken.  0 or a TB_E* code
 *  (TB_ESTATE: the inbox does not drain). */
long bh_settle(const struct bh_hold *h, uint64_t transfers0, int64_t n,
               uint64_t *ticks);

/** Puts back the base tasks that ran until none is left to put back
 *  (settling the inbox may run more).  0; a TB_E* code with *what naming the
 *  call that failed; or BH_CANNOT_HOLD with *what saying why. */
long bh_refill(const struct bh_hold *h, const char **what);


/** True if a task many revolutions away costs backend b a visit per
 *  revolution (a hashed wheel's rounds, counted in `visits`), so that a
 *  wheel sized to the workload changes the structure's work. */
bool bh_walks_rounds(const struct tb_backend *b);

/** True if TB_F_REMOVE_ON_CANCEL changes what backend b does: a cancelled
 *  task leaves tb_pending() at once with the flag and not without it. */
bool bh_honours_remove_on_cancel(const struct tb_backend *b);

/** True if TB_F_NO_LEADER changes backend b's waits: with four threads and
 *  one far task, more timed waits start without a leader than with one. */
bool bh_honours_no_leader(const struct tb_backend *b);

/* ---- Names ------------------------------------------------------------- */

/** Builds "<op>/<backend>/<workload>/<config>" into buf. */
void bh_name(char *buf, size_t size, const char *op, const char *backend,
             const char *workload, const char *config);

/* ---- Time and statistics ----------------------------------------------- */

/* The wall clock is the backends' own, tb_monotonic_ns() (CLOCK_MONOTONIC
 * in ns): the one reader every program of the suite uses. */

/** Seconds between two tb_monotonic_ns() readings, minus the measured cost
 *  of a reading pair (never below 0). */
double bh_seconds(int64_t t0, int64_t t1);

/** CPU time of the calling thread in ns (CLOCK_THREAD_CPUTIME_ID): the
 *  clock of the micro-benchmarks' timed parts, which do not count the time
 *  the thread spent preempted by other processes. */
int64_t bh_cpu_now(void);

/** bh_seconds() for two bh_cpu_now() readings. */
double bh_cpu_seconds(int64_t t0, int64_t t1);

/** Sleeps until the absolute CLOCK_MONOTONIC time `t` (ns). */
void bh_sleep_until(int64_t t);

/** Operations in one timed batch of insert, cancel and the rings at N:
 *  N/8, at least 1 and at most 1024 (the micro's rule, which the libs
 *  harness keeps so that both sides time the same batches). */
int64_t bh_clamp_batch(int64_t n);

/** Bytes the allocator has handed out and not taken back (mallinfo2). */
size_t bh_malloc_in_use(void);

/** Sorts v ascending. */
void bh_sort(int64_t *v, size_t n);

/** The 1-based rank of the q-quantile (0..1) among n sorted values, by
 *  nearest rank: ceil(q n), at least 1 and at most n (0 for n = 0).  q is
 *  taken to six decimals and the rank computed in integers, so no
 *  floating-point error moves it (DECISIONS.md D17). */
size_t bh_rank(size_t n, double q);

/** The q-quantile (0..1) of sorted v: v[bh_rank(n, q) - 1], 0 if n = 0. */
int64_t bh_quantile(const int64_t *sorted, size_t n, double q);

/** bh_quantile for sorted doubles. */
double bh_quantile_d(const double *sorted, size_t n, double q);


/** Writes samples to the CSV: in their order with weight 1 if there are
 *  at most `limit`, else sorted and thinned to about `limit` rows, each
 *  weighing for the samples it stands for.  Columns:
 *  benchmark,metric,rep,seq,value_ns,weight; the benchmark name is quoted
 *  (its config holds commas). */
void bh_csv_samples(const char *benchmark, const char *metric, int rep,
                    int64_t *v, size_t n, size_t limit);

/** The timer slack of the calling thread (prctl PR_GET_TIMERSLACK), ns. */
long bh_timer_slack(void);

/** Sets the calling thread's timer slack; threads it starts inherit it. */
void bh_set_timer_slack(long ns);

/** Keeps a registration context (malloc'd) until bh_release_all(). */
void *bh_keep(void *p);

/** Frees every context kept with bh_keep (after tbb_run). */
void bh_release_all(void);

/* ---- The harnesses ----------------------------------------------------- */

/** Registers shim self-tests and the shim-overhead (empty op) benchmarks. */
void bh_register_shim(void);

/** Registers the virtual-clock micro-benchmarks for every backend. */
void bh_register_micro(void);

/** True if backend b moves a waiting one-shot task in place
 *  (tb_reschedule answers 1 on a virtual-clock probe); the others answer
 *  TB_ENOTSUP, and the micro-benchmarks' reschedule op measures them
 *  without its strategy=again (bench/micro.c). */
bool bh_reschedules_in_place(const struct tb_backend *b);

/** Registers the memory benchmarks for every backend. */
void bh_register_memory(void);

/** Registers the monotonic-clock runtime benchmarks for every backend. */
void bh_register_runtime(void);

/** Registers the event-loop libraries' benchmarks (bench/libs.c) for every
 *  library found at build time (libs/tblib.h). */
void bh_register_libs(void);

#endif
