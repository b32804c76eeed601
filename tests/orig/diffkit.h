/*
 * diffkit.h — the driver the differential tests (tests/diff_<backend>.c)
 * share: one backend run side by side with a transcription of its original
 * (tests/orig/), the two run logs, the comparison of the runs, the report
 * of a mismatch (seed, operation, time) and the random script of schedule,
 * cancel, reset and advance operations.  What is specific to a backend (its
 * timers, how an operation maps to the original, the state both sides must
 * share) stays in its diff test, which hands it in as callbacks.
 */
#ifndef TIMERBENCH_DIFFKIT_H
#define TIMERBENCH_DIFFKIT_H

#include <stddef.h>
#include <stdint.h>

#include "testlib.h"

enum { DIFF_LOG_MAX = 1 << 16 };

/** The runs one side made, in order, each with its time. */
struct diff_log {
    struct run_rec runs[DIFF_LOG_MAX];
    size_t n;
};

/** The state of the script being run: the backend's scheduler, both run
 *  logs, the timers made so far and where the script is (for a mismatch's
 *  report).  One script at a time. */
struct diff_state {
    const char *what;   /* "quadheap vs Go": how a mismatch report opens */
    const char *theirs; /* "Go": the original, in a mismatch's details */
    struct tb_sched *s;
    struct diff_log ours, orig;
    int nslots;
    uint64_t seed;
    int op;
    int64_t now;
    int64_t tick;       /* reported when not 0 */
};

/** The one script state of a diff test. */
extern struct diff_state diff;

/** Starts a script on the scheduler s (whose ownership passes to the
 *  script): empty logs, no timers, operation 0 at time 0; `tick` (0 for
 *  none) is quoted in a mismatch's report. */
void diff_start(struct tb_sched *s, uint64_t seed, int64_t tick);

/** Ends a script: the backend's invariants hold, its accounting balances,
 *  and the scheduler is destroyed. */
void diff_finish(void);

/** Appends a run of timer `id` at `at` to log l. */
void diff_log_run(struct diff_log *l, int id, int64_t at);

/** Reports a mismatch (the script's seed, tick, operation and time, then
 *  the printf-formatted details) and fails the test at file:line. */
void diff_mismatch(const char *file, int line, const char *fmt, ...)
    CMOCKA_PRINTF_ATTRIBUTE(3, 4);

/** diff_mismatch at the caller's line. */
#define DIFF_MISMATCH(...) diff_mismatch(__FILE__, __LINE__, __VA_ARGS__)

/** Both logs hold the same runs, in the same order, at the same times. */
void diff_compare_runs(void);

/** An advance of both sides to `now`: tb_advance, then orig(now), the
 *  original's own (which logs its runs); both must run as many timers, the
 *  same runs at the same times, and compare_state() must pass.  Returns
 *  how many ran. */
long diff_advance(int64_t now, void (*orig)(int64_t now),
                  void (*compare_state)(void));

/** What a random script does with a backend: each callback compares the
 *  state both sides share after its operation. */
struct diff_script {
    int ops_max;            /* a script has 100 .. ops_max - 1 operations */
    int cancel_lo;          /* cancels weigh cancel_lo .. cancel_lo + 35 */
    /* an advance steps by 0 (a bound of 0) or 1 .. bound, the bound drawn
     * from these */
    int64_t steps[8];
    int nsteps;
    void (*schedule)(uint64_t *rng);        /* a new timer, of any kind */
    int (*pending_one_shot)(uint64_t *rng); /* a pending one-shot, or -1 */
    int64_t (*random_delay)(uint64_t *rng);
    void (*cancel)(int i);
    void (*reset)(int i, int64_t delay);    /* of a pending one-shot */
    long (*advance)(int64_t now);
    void (*after_op)(void);                 /* or NULL */
};

/** Runs the operations of one random script (drawn from rng: the weights
 *  of the four kinds, how many, which): schedule; cancel (three times in
 *  four a pending one-shot, else any timer made); reset of a pending
 *  one-shot; advance.  tb_check every 64 operations. */
void diff_random_ops(const struct diff_script *sc, uint64_t *rng);

#endif
