/*
 * testlib.h — helpers shared by the test programs: a recorder of task runs,
 * a failing allocator hook, a seeded PRNG and a wait-with-margin for tests of
 * the monotonic clock; and what every tests/test_<backend>.c uses (its
 * backend's schedulers, stats, soundness, flags).  The assertions themselves
 * are cmocka's.
 */
#ifndef TIMERBENCH_TESTLIB_H
#define TIMERBENCH_TESTLIB_H

#include <setjmp.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "timerbench/scheduler.h"

/** One recorded run: which task, when (scheduler clock), in what order. */
struct run_rec {
    int id;
    int64_t at;
};

/** A log of runs, shared by the tasks of one test (thread-safe). */
struct recorder {
    struct tb_sched *s;
    struct run_rec *runs;
    size_t n, cap;
    void *lock; /* pthread_mutex_t, kept opaque here */
};

/** A task argument: the recorder, an id, and what the run should do. */
struct probe {
    struct recorder *rec;
    int id;
    int fail;          /* return this from the task */
    int64_t spend;     /* virtual ns the run takes (tb_spend) */
    tb_handle self;    /* to cancel itself */
    int cancel_self_at;/* cancel itself on this run number (1-based), 0 never */
    int cancel_result; /* what that cancel answered */
    int runs;
};

/** Prepares an empty recorder for scheduler `s` (s may be set later). */
void rec_init(struct recorder *r, struct tb_sched *s);
/** Frees the recorder's log. */
void rec_free(struct recorder *r);
/** Number of runs recorded so far (thread-safe). */
size_t rec_count(struct recorder *r);
/** How many times task `id` ran. */
size_t rec_runs_of(struct recorder *r, int id);
/** Appends a run of `id` now (thread-safe). */
void rec_add(struct recorder *r, int id);

/** The task the tests schedule: records the run, then does what the probe
 *  says (spend virtual time, cancel itself, fail). */
int probe_task(void *arg);

/** A task that does nothing and succeeds. */
int noop_task(void *arg);

/** The allocator hook used to test allocation failure: succeeds for the
 *  first `budget` allocations after arming, then fails until disarmed. */
struct failing_alloc {
    struct tb_allocator hook;
    long budget;   /* < 0: never fail */
    long calls;
};
/** Sets up a failing allocator that never fails until armed. */
void failing_alloc_init(struct failing_alloc *f);

/** xorshift64* PRNG, seeded explicitly so runs repeat. */
uint64_t rng_next(uint64_t *state);
/** Uniform in [lo, hi]. */
int64_t rng_range(uint64_t *state, int64_t lo, int64_t hi);

/** Monotonic mode: polls `cond(ctx)` every millisecond until it is true or
 *  `timeout_ns` passes (a generous margin, never a speed assertion).  Returns
 *  1 if it became true. */
int wait_until(int (*cond)(void *ctx), void *ctx, int64_t timeout_ns);

/** The backends a test program runs: argv[1] names one, none means all.
 *  Exits with an error message for an unknown name.  Returns the count and
 *  fills list (capacity `cap`). */
size_t backends_from_args(int argc, char **argv,
                          const struct tb_backend **list, size_t cap);

/** Creates a scheduler or fails the test. */
struct tb_sched *make_sched(const struct tb_backend *b,
                            const struct tb_config *cfg);

/** Asserts tb_stats_balanced() and prints the counters when it fails. */
void assert_balanced(struct tb_sched *s);

/* ---- For the per-backend programs (tests/test_<backend>.c) ------------- */

/** Names the backend the program tests (its main() calls this first); fails
 *  if none is registered under `name`. */
void unit_init(const char *name);

/** The backend unit_init() named. */
const struct tb_backend *unit_backend(void);

/** A scheduler of unit_backend() on the virtual clock, its defaults
 *  otherwise, or fails the test. */
struct tb_sched *vsched(void);

/** The same on the monotonic clock (not started). */
struct tb_sched *msched(void);

/** tb_stats(s), asserting it answers TB_OK. */
struct tb_stats stats_of(struct tb_sched *s);

/** Asserts that tb_check() finds the structure sound and the accounting
 *  balanced. */
void assert_sound(struct tb_sched *s);

/** The recorded run times of task `id`, in run order (at most cap). */
size_t starts_of(struct recorder *r, int id, int64_t *out, size_t cap);

/** Memory per pending task: on a virtual scheduler of unit_backend()
 *  holding 20 000 no-op tasks due uniformly in [1 ms, 1000 s] (seeded: the
 *  same draws every run), prints the bytes held per pending task and
 *  asserts lo <= bytes < hi. */
void check_bytes_per_task(double lo, double hi);

/** Schedules n probes p[0..n) on s (ids 0..n-1, recorded by rec), probe i
 *  due (i + 1) * step from now; h (NULL allowed) gets their handles. */
void schedule_probes(struct tb_sched *s, struct recorder *rec,
                     struct probe *p, tb_handle *h, int n, int64_t step);

/** The end of a test whose n probes must each have run exactly once:
 *  asserts it, and that nothing is pending and the accounting balances;
 *  then frees rec and destroys s. */
void finish_ran_once(struct tb_sched *s, struct recorder *rec,
                     const struct probe *p, int n);

/** The binary heaps' tb_reserve case (heapqueue, timerthread), on
 *  unit_backend() with allocation failure: tb_reserve(s, 1000) grows the
 *  heap array by at least `reserved` slots of 16 bytes (a deadline and a
 *  record), so 1000 schedules then succeed with every allocation refused and
 *  the next is refused; allowed again, that schedule grows the array by
 *  `grown` slots (the original's own growth); all 1001 run. */
void check_heap_reserve(size_t reserved, size_t grown);

/** The skip of missed periods (TB_CAP_SKIP_MISSED: Go's Ticker,
 *  hrtimer_forward) driven on virtual scheduler s: probe p, fixed rate 10 ms
 *  from 10 ms (its handle in *handle, NULL allowed), runs 2 ms late (at 12),
 *  35 ms late (at 55: 20, 30, 40 and 50 are skipped), on time at 60, then
 *  10 s late (once) and on time again; asserts each advance's count. */
void advance_skipping_missed(struct tb_sched *s, struct probe *p,
                             tb_handle *handle);

/** On virtual scheduler s: probe p (id 1, recorded by r) at fixed delay
 *  10 ms from 10 ms, each run spending 4 ms of virtual time, the clock moved
 *  1 ms at a time up to `until`. */
void run_slow_fixed_delay(struct tb_sched *s, struct recorder *r,
                          struct probe *p, int64_t until);

/** A flag a task raises on the monotonic clock: how often and when last. */
struct flag {
    _Atomic int runs;
    _Atomic int64_t at;
};

/** The task that raises a flag (arg: the struct flag). */
int flag_task(void *arg);

/** wait_until() condition: the flag (ctx) was raised. */
int flag_set(void *ctx);

/** wait_until() condition: the scheduler's thread (ctx: the scheduler) has
 *  started a timed wait (tb_stats' timed_waits). */
int asleep(void *ctx);

#endif
