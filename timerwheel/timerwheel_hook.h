/*
 * timerwheel/timerwheel_hook.h — test hooks into timerwheel's lock-free
 * schedule and re-arm paths, and into its worker's sleep.
 *
 * core/tb_core.h warns that tb_pool_get() publishes a record as WAITING
 * before the backend has filled it or pushed it onto its inbox, so a cancel
 * from another thread can land in between.  Such a race is too rare to hit
 * by chance; the hook lets a test stop the scheduling thread at each window
 * and cancel there, deterministically.  Unset (NULL, the default) it costs
 * one load and a branch that is never taken (about one instruction per
 * schedule, measured with cachegrind); nothing outside tests sets it.
 */
#ifndef TIMERBENCH_TIMERWHEEL_HOOK_H
#define TIMERBENCH_TIMERWHEEL_HOOK_H

#include "timerbench/scheduler.h"

/** Where the hook is called.  Each point lies inside a window in which
 *  another thread may already cancel the task through its handle. */
enum tw_hook_point {
    TW_HOOK_PUBLISHED, /* schedule: record taken (WAITING), not yet filled
                          nor on the inbox; a cancel reads only the state
                          word, so this one point stands for the whole
                          window up to the push */
    TW_HOOK_REARMED,   /* periodic re-arm: WAITING again, not yet on the
                          inbox */
};

/** The hook's type: the scheduler, the point, and the task's handle. */
typedef void (*tw_hook_fn)(struct tb_sched *s, enum tw_hook_point at,
                           tb_handle h);

/** Set by tests only (before the scheduler is used, and back to NULL after);
 *  every timerwheel scheduler in the process calls it. */
extern tw_hook_fn tw_test_hook;

/** The worker's sleep, seen by a test: called by the worker thread, with
 *  the wheel's lock held, each time it is about to sleep toward the next
 *  tick's boundary `target`: it read the clock at `now` and sleeps until
 *  `until` (target itself with TB_F_EXACT_SLEEP; otherwise now plus whole
 *  milliseconds rounded up, as Netty's Thread.sleep).  It must not call
 *  into the scheduler. */
typedef void (*tw_sleep_hook_fn)(struct tb_sched *s, int64_t now,
                                 int64_t until, int64_t target);

/** Set by tests only, as tw_test_hook; NULL (the default) costs one load
 *  and a branch per sleep of the worker, nothing on the schedule path. */
extern tw_sleep_hook_fn tw_sleep_hook;

#endif
