/*
 * testlib.h — helpers shared by the test programs: a recorder of task runs,
 * a failing allocator hook, a seeded PRNG and a wait-with-margin for tests of
 * the monotonic clock.  The assertions themselves are cmocka's.
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

#endif
