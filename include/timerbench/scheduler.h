/*
 * timerbench/scheduler.h — the one scheduler interface every backend keeps.
 *
 * This header is the manual.  A backend (heapqueue, timerthread, timerwheel,
 * hierwheel, ...) is a `struct tb_backend` found by name in the registry; a
 * scheduler is created from it with a `struct tb_config`, and from then on the
 * same calls work for every backend.
 *
 * Time is in nanoseconds, as signed 64-bit integers (`int64_t`).
 *
 * Two clocks:
 *   - TB_CLOCK_VIRTUAL: nothing runs on its own.  The clock starts at 0 and
 *     moves only when the caller calls tb_advance(), which runs, in the
 *     caller's thread, every task due by the new time.  No threads, no locks,
 *     no sleeping: tests and micro-benchmarks use this mode.
 *   - TB_CLOCK_MONOTONIC: CLOCK_MONOTONIC.  tb_start() starts the backend's own
 *     threads, modelled on the original's threading; tasks run on them.
 *
 * Both modes run the same structure code; the monotonic mode adds the
 * original's way of waiting and its locks around the same expiry path.
 *
 * A second clock, the wall clock (tb_wall_now()), stands for Java's
 * System.currentTimeMillis: CLOCK_REALTIME in monotonic mode; in virtual
 * mode the virtual time plus an offset that tb_wall_step() moves, so a test
 * can set the "system clock" back and forth without touching the machine's.
 * Only a backend with TB_CAP_WALL_CLOCK (java.util.Timer) keeps its deadlines
 * on it; every other backend ignores it, as the JDK's pool does (nanoTime).
 *
 * Contract (every backend, checked by the conformance suite):
 *   - Never early: a task never starts before its deadline.  Wheels round
 *     deadlines up to their tick (TB_CAP_GRANULAR: to their level's
 *     granularity, at most 8/63 of the delay past the tick).
 *   - Exactly once: a one-shot task that is not cancelled runs once; a
 *     successful cancel means it never runs.  At every quiescent moment
 *       submitted == finished + cancelled + dropped + (pending - zombies) + running
 *     (see struct tb_stats).
 *   - Ordering: where the backend has TB_CAP_FIFO_TIES, equal deadlines run in
 *     submission order; wheels order by tick only.
 *   - Errors are negative TB_E* codes, the same for every backend; bad input
 *     leaves the scheduler and its pending tasks untouched.
 *
 * Thread safety: in monotonic mode every call may be made from any thread,
 * including from inside a running task, except tb_destroy() (never from a
 * task).  In virtual mode the scheduler is single-threaded by contract.
 *
 * fork(): a child process gets a copy of every scheduler but none of its
 * threads (fork copies only the calling thread).  A virtual-mode scheduler
 * is unaffected: the child's copy is its own and works.  A monotonic one
 * created but not yet started is the child's to start.  A monotonic one
 * started before the fork (shut down since or not) is dead in the child:
 * nothing would run its tasks and its locks may be held by threads that are
 * gone, so in the child every call on it answers TB_ESTATE (tb_pending()
 * 0), and tb_destroy() only forgets it, touching neither its locks nor its
 * memory (the child's copy, freed at exit or exec).  The parent's scheduler
 * carries on as before.  Create and start a fresh scheduler in the child
 * instead.
 */
#ifndef TIMERBENCH_SCHEDULER_H
#define TIMERBENCH_SCHEDULER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- Errors ------------------------------------------------------------ */

enum {
    TB_OK = 0,
    TB_EINVAL = -1,     /* bad argument: NULL callback, period <= 0, ... */
    TB_ESHUTDOWN = -2,  /* the scheduler was shut down (or killed) */
    TB_EFULL = -3,      /* more than config.max_pending tasks */
    TB_ENOMEM = -4,     /* the allocator failed */
    TB_ERANGE = -5,     /* delay or period past TB_MAX_DELAY / the clock */
    TB_ENOTSUP = -6,    /* this backend has no such operation */
    TB_ESTATE = -7,     /* wrong mode or thread for this call */
    TB_ETIMEDOUT = -8,  /* tb_await_termination() ran out of time */
    TB_ECORRUPT = -9,   /* tb_check() found a broken invariant */
};

/** Returns a short static English description of a TB_* code. */
const char *tb_strerror(int err);

/* ---- Time -------------------------------------------------------------- */

/** Largest accepted delay or period: 2^62 ns, about 146 years.  Longer
 *  delays, and deadlines that would overflow the clock, get TB_ERANGE rather
 *  than being clamped, so that a caller's arithmetic error is visible.
 *  Negative delays are treated as 0 (as the JDK does). */
#define TB_MAX_DELAY ((int64_t)1 << 62)

#define TB_US ((int64_t)1000)
#define TB_MS ((int64_t)1000000)
#define TB_SEC ((int64_t)1000000000)

/** CLOCK_MONOTONIC in nanoseconds. */
int64_t tb_monotonic_ns(void);

/** CLOCK_REALTIME in nanoseconds (the wall clock of monotonic mode). */
int64_t tb_realtime_ns(void);

/* ---- Tasks and handles ------------------------------------------------- */

/** A task.  Returning non-zero is the C analogue of a thrown exception; each
 *  backend reacts as its original does (counted and ignored, periodic task
 *  stopped, or the whole timer killed). */
typedef int (*tb_fn)(void *arg);

/** A 64-bit handle: pool slot index (low 32 bits) and the slot's generation
 *  (high 32 bits).  0 is never a valid handle.  A handle stays safe to pass
 *  to tb_cancel() forever: once its task has run or been cancelled the
 *  generation no longer matches and the answer is "not pending". */
typedef uint64_t tb_handle;

#define TB_HANDLE_NONE ((tb_handle)0)

/* ---- Configuration ----------------------------------------------------- */

enum tb_clock {
    TB_CLOCK_VIRTUAL = 0,
    TB_CLOCK_MONOTONIC = 1,
};

/** Policy flags (struct tb_config.flags).  Zero means the original's
 *  behaviour; each flag switches one policy away from it. */
enum {
    /** heapqueue: remove a cancelled task from the heap at once
     *  (STPE setRemoveOnCancelPolicy(true)); default keeps it queued. */
    TB_F_REMOVE_ON_CANCEL = 1u << 0,
    /** heapqueue: no leader; every idle worker does its own timed wait
     *  (to measure what leader-follower saves). */
    TB_F_NO_LEADER = 1u << 1,
    /** heapqueue: on tb_shutdown(), drop delayed one-shot tasks
     *  (STPE setExecuteExistingDelayedTasksAfterShutdownPolicy(false)). */
    TB_F_DROP_DELAYED_ON_SHUTDOWN = 1u << 2,
    /** heapqueue: on tb_shutdown(), keep periodic tasks running
     *  (STPE setContinueExistingPeriodicTasksAfterShutdownPolicy(true)). */
    TB_F_KEEP_PERIODIC_ON_SHUTDOWN = 1u << 3,
    /** timerwheel: the worker sleeps to the next tick's boundary to the
     *  nanosecond.  By default it sleeps as Netty's waitForNextTick does,
     *  in whole milliseconds rounded up from when it reads the clock
     *  ((deadline - now + 999999) / 1000000), so a tick starts up to 1 ms
     *  past its boundary on top of the wake-up latency.  The flag is there
     *  to measure the rounding's share of the lateness. */
    TB_F_EXACT_SLEEP = 1u << 4,
    /** timerthread: deadlines on the monotonic (or virtual) clock.  By
     *  default they are on the wall clock, as java.util.Timer's are on
     *  System.currentTimeMillis (TB_CAP_WALL_CLOCK), so setting the clock
     *  moves them: a step back by d delays every pending task by d, a step
     *  forward runs them early.  The flag keeps the suite's measurements
     *  free of that when a run must not depend on the machine's clock. */
    TB_F_MONOTONIC_DEADLINES = 1u << 5,
};

/** Allocator hook: every byte a scheduler holds comes through it, which is
 *  how bytes_held is counted and how allocation failure is tested. */
struct tb_allocator {
    void *(*alloc)(void *ctx, size_t size);       /* NULL on failure */
    void (*free)(void *ctx, void *ptr, size_t size);
    void *ctx;
};

/** Scheduler configuration.  Zero-initialise it and set what you need: every
 *  field left 0 (or NULL) takes the original's default. */
struct tb_config {
    enum tb_clock clock;        /* default TB_CLOCK_VIRTUAL */
    int threads;                /* worker / executor threads (heapqueue: 1;
                                   hierwheel executor: 1); others ignore it */
    int64_t tick_ns;            /* wheels: Netty 100 ms, Kafka 1 ms */
    int wheel_size;             /* wheels: Netty 512, Kafka 20 */
    int64_t poll_ns;            /* hierwheel reaper's bounded wait: 200 ms */
    size_t max_pending;         /* 0 = unlimited; tb_pending() never
                                   exceeds it: a schedule over it gets
                                   TB_EFULL, and a periodic task whose
                                   re-arm would exceed it is retired
                                   (finished, counted in rejected) */
    unsigned flags;             /* TB_F_* */
    const struct tb_allocator *allocator; /* NULL = malloc/free */
};

/* ---- Backends and the registry ----------------------------------------- */

/** Capability flags (struct tb_backend.caps). */
enum {
    TB_CAP_FIFO_TIES = 1u << 0,  /* equal deadlines run in submission order */
    TB_CAP_TICKED = 1u << 1,     /* deadlines are rounded up to a tick */
    TB_CAP_PURGE = 1u << 2,      /* tb_purge() compacts lazily held tasks */
    TB_CAP_FAIL_KILLS = 1u << 3, /* a failing task kills the whole timer */
    TB_CAP_LAZY_CANCEL = 1u << 4,/* a cancelled task may stay counted in
                                    tb_pending() until a later step */
    TB_CAP_SKIP_MISSED = 1u << 5,/* fixed rate skips the periods a late run
                                    missed (Go's Ticker) instead of running
                                    them back to back (the JDK's) */
    TB_CAP_GRANULAR = 1u << 6,   /* with TB_CAP_TICKED: a task may wait past
                                    its tick for its level's granularity,
                                    under 8/63 of its distance from the
                                    wheel's clock (Linux's wheel), and one
                                    bucket's tasks run in any order */
    TB_CAP_WAIT_NANOSLEEP = 1u << 7, /* its threads sleep in clock_nanosleep
                                    (the lateness floor it is held to);
                                    without it, pthread_cond_timedwait */
    TB_CAP_RANGE = 1u << 8,      /* honours a lateness budget:
                                    tb_schedule_range() may run a task
                                    anywhere in [soft, hard], coalescing
                                    runs as hrtimers do */
    TB_CAP_TREE = 1u << 9,       /* a balanced search tree ordered by
                                    deadline: neither a heap nor a wheel
                                    (the report's third family; without
                                    this or TB_CAP_TICKED, a heap) */
    TB_CAP_SLEEP_MS = 1u << 10,  /* its thread sleeps in whole
                                    milliseconds rounded up, as Netty's
                                    worker does, unless TB_F_EXACT_SLEEP:
                                    the runtime benchmarks measure it both
                                    ways (sleep=exact) */
    TB_CAP_WALL_CLOCK = 1u << 11,/* its deadlines are on the wall clock
                                    (tb_wall_now(); java.util.Timer's
                                    System.currentTimeMillis) unless
                                    TB_F_MONOTONIC_DEADLINES: a clock step
                                    moves them */
};

struct tb_backend_ops; /* internal: core/tb_core.h */

/** A backend: its name, one line on what it models, capabilities and ops. */
struct tb_backend {
    const char *name;
    const char *description;
    unsigned caps;
    const struct tb_backend_ops *ops;
};

/** Number of registered backends. */
size_t tb_backend_count(void);

/** The i-th registered backend (0 <= i < tb_backend_count()), else NULL. */
const struct tb_backend *tb_backend_at(size_t i);

/** Looks a backend up by name; NULL if there is none. */
const struct tb_backend *tb_backend_find(const char *name);

/** The interface's floor (issue 39): the core's checks, the task pool and
 *  the handle's generation check, with no structure behind them, so that
 *  what a schedule and a cancel cost before any structure works can be
 *  counted.  Not a timer: its tasks never run, tb_advance only moves the
 *  clock, shutdown drops every pending task, and only the virtual clock is
 *  accepted (tb_create answers TB_ENOTSUP for the monotonic one).  It is
 *  not in the registry (tb_backend_count, tb_backend_at and
 *  tb_backend_find never give it), so no suite, ranking or report treats
 *  it as one of the backends; only what names it uses it. */
extern const struct tb_backend tb_backend_floor;

/* ---- Lifecycle --------------------------------------------------------- */

struct tb_sched;

/** Creates a scheduler.  `config` may be NULL (all defaults).  Returns TB_OK
 *  and sets *out, or TB_EINVAL (NULL backend/out, negative fields, tick or
 *  wheel size out of range), TB_ENOMEM. */
int tb_create(const struct tb_backend *backend, const struct tb_config *config,
              struct tb_sched **out);

/** Stops the scheduler's threads (as tb_shutdown_now() would, dropping what
 *  is pending), waits for them and frees everything.  NULL is a no-op.  Must
 *  not be called from inside a task.  In a child forked after tb_start() it
 *  only forgets the scheduler (see "fork()" above). */
void tb_destroy(struct tb_sched *s);

/** The backend this scheduler was created from. */
const struct tb_backend *tb_sched_backend(const struct tb_sched *s);

/** The configuration with every default filled in (tick, wheel size, ...). */
void tb_sched_config(const struct tb_sched *s, struct tb_config *out);

/** Monotonic mode: starts the backend's threads.  TB_ESTATE in virtual mode
 *  or if already started (shut down since or not; in a forked child too:
 *  see "fork()" above); TB_ESHUTDOWN if shut down before it was started;
 *  TB_ENOMEM if the fork handler could not be registered.  Tasks scheduled
 *  before tb_start() wait for it. */
int tb_start(struct tb_sched *s);

/** The scheduler's clock: the virtual time, or tb_monotonic_ns(). */
int64_t tb_now(const struct tb_sched *s);

/** The scheduler's wall clock, Java's System.currentTimeMillis in ns: in
 *  monotonic mode tb_realtime_ns(); in virtual mode tb_now() plus the sum
 *  of every tb_wall_step() so far (0 at creation, so both clocks start
 *  together).  Every scheduler has one; only a backend with
 *  TB_CAP_WALL_CLOCK (and without TB_F_MONOTONIC_DEADLINES) schedules on
 *  it.  0 for a NULL scheduler. */
int64_t tb_wall_now(const struct tb_sched *s);

/** Virtual mode: sets the wall clock `delta_ns` forward (negative: back),
 *  as an administrator or NTP stepping the system clock would, without
 *  moving the virtual time and without running anything: a backend whose
 *  deadlines are on the wall clock sees the step the next time it reads
 *  the clock (java.util.Timer: when its thread next wakes up; a step does
 *  not wake it, as it does not end Java's Object.wait).  May be called from
 *  inside a task.  TB_OK; TB_ESTATE in monotonic mode (the machine's clock
 *  is never touched); TB_EINVAL for a NULL scheduler, or when the total
 *  offset would pass +-TB_MAX_DELAY or the wall clock leave the int64
 *  range. */
int tb_wall_step(struct tb_sched *s, int64_t delta_ns);

/* ---- Scheduling -------------------------------------------------------- */

/* Every schedule call takes its arguments in one order, and so do the core
 * and the backends' ops table: the scheduler, when (a delay, or a delay and
 * a slack), what (fn, arg), where the handle goes, and last, for a periodic
 * task, its period (DECISIONS.md D18). */

/** Runs fn(arg) once, `delay_ns` from now.  *handle (may be NULL) receives
 *  the handle.  Errors: TB_EINVAL (NULL s or fn), TB_ERANGE (delay past
 *  TB_MAX_DELAY or the clock), TB_ESHUTDOWN, TB_EFULL, TB_ENOMEM. */
int tb_schedule(struct tb_sched *s, int64_t delay_ns, tb_fn fn, void *arg,
                tb_handle *handle);

/** Runs fn(arg) once, never before `delay_ns` from now (the soft expiry)
 *  and, on a backend with TB_CAP_RANGE, by `delay_ns + slack_ns` (the hard
 *  expiry) plus its wake-up latency: Linux's hrtimer_start_range_ns().  Such
 *  a backend may run the task anywhere in [soft, hard], so that tasks whose
 *  ranges overlap share one wake-up.  A backend without TB_CAP_RANGE ignores
 *  slack_ns and behaves as tb_schedule().  Errors as tb_schedule(), plus
 *  TB_EINVAL for slack_ns < 0 and TB_ERANGE when delay + slack passes
 *  TB_MAX_DELAY (or the clock).
 *
 *  The lateness budget of a task is slack_ns (issue 27's precision axis).
 *  tb_schedule() is this call with slack 0, but keeps its own entry: it is
 *  the most measured path of the suite and takes no extra argument or
 *  check for a budget it never has.  Backends receive absolute soft and
 *  hard times (see core/tb_core.h, schedule_range). */
int tb_schedule_range(struct tb_sched *s, int64_t delay_ns, int64_t slack_ns,
                      tb_fn fn, void *arg, tb_handle *handle);

/** Runs fn(arg) first after `delay_ns`, then every `period_ns` measured from
 *  the previous *scheduled* time: late runs catch up, runs never overlap
 *  (with TB_CAP_SKIP_MISSED, as Go's Ticker, a late run is followed by the
 *  next point of the same grid after it, and the missed ones are skipped).
 *  A periodic task (this or fixed delay) whose next run would reach the end
 *  of the clock (INT64_MAX) has no next run: it finishes after this one.
 *  Errors as tb_schedule(), plus TB_EINVAL for period <= 0. */
int tb_schedule_fixed_rate(struct tb_sched *s, int64_t delay_ns, tb_fn fn,
                           void *arg, tb_handle *handle, int64_t period_ns);

/** Runs fn(arg) first after `delay_ns`, then again `period_ns` after each run
 *  (heapqueue: after the run ends; timerthread: after it started, as
 *  java.util.Timer).  Errors as tb_schedule_fixed_rate(). */
int tb_schedule_fixed_delay(struct tb_sched *s, int64_t delay_ns, tb_fn fn,
                            void *arg, tb_handle *handle, int64_t period_ns);

/** Cancels a task.  Returns 1 if this call prevented a run (a waiting task,
 *  or the future runs of a periodic task, even from inside its own run), 0 if
 *  the handle is not pending (stale, unknown, already run, running one-shot
 *  or one already handed to an executor, already cancelled), TB_EINVAL for
 *  a NULL scheduler. */
int tb_cancel(struct tb_sched *s, tb_handle handle);

/** Moves a waiting one-shot task so that it runs `delay_ns` from now, in
 *  place, as Go's Timer.Reset and the kernel's mod_timer() do; the handle
 *  stays valid.  Backends whose original has no such call (the JDK's, Netty's
 *  and Kafka's timers) answer TB_ENOTSUP, and their callers cancel and
 *  schedule anew, as users of those originals do.  Returns 1 if the task was
 *  waiting and now runs at the new time (never early), 0 if the handle is
 *  not pending (nothing is scheduled then), TB_EINVAL for a NULL scheduler
 *  or a periodic task, TB_ERANGE as tb_schedule(), TB_ESHUTDOWN after
 *  shutdown, TB_ENOTSUP. */
int tb_reschedule(struct tb_sched *s, tb_handle handle, int64_t delay_ns);

/** Makes room for `n` more tasks now, so the next n schedules allocate
 *  nothing: the task pool's records and, where the backend has them, the
 *  structure's own arrays (a heap's array; wheels have none that grow per
 *  task).  Growth the original does on its own stays what the `fill`
 *  benchmark measures; benchmarks of insert call this untimed.  TB_OK,
 *  TB_ENOMEM (what was reserved stays), TB_ERANGE (the tasks
 *  live now plus n would pass 2^29, the most one scheduler holds), TB_EINVAL. */
int tb_reserve(struct tb_sched *s, size_t n);

/** Tasks held by the structure, as the original counts them: with lazy
 *  cancel (TB_CAP_LAZY_CANCEL) cancelled tasks are counted until removed. */
size_t tb_pending(struct tb_sched *s);

/* ---- Driving and stopping ---------------------------------------------- */

/** Virtual mode: moves the clock to `now_ns` and runs, in this thread, every
 *  task due by then (including tasks they schedule that are due by then).
 *  At the end of the clock (now_ns = INT64_MAX) every pending task is due,
 *  on every backend: a wheel runs the partial tick the end falls in too,
 *  so a task scheduled with delay 0 at INT64_MAX runs at the next such
 *  advance (a later deadline is TB_ERANGE at the schedule).
 *  Returns the number of task runs, TB_EINVAL if now_ns is before the
 *  current time, TB_ESTATE in monotonic mode or from inside a task run by
 *  tb_advance (re-entry would run tasks inside a task). */
long tb_advance(struct tb_sched *s, int64_t now_ns);

/** Virtual mode, from inside a running task: the run takes `ns` of virtual
 *  time, so the clock moves on by that much before the task returns (nothing
 *  else runs meanwhile).  This is how tests model slow tasks and stalls.
 *  TB_EINVAL for ns < 0 or overflow, TB_ESTATE in monotonic mode. */
int tb_spend(struct tb_sched *s, int64_t ns);

/** Stops accepting tasks.  What happens to pending ones is the original's
 *  shutdown (heapqueue: delayed one-shots still run, periodic ones are
 *  cancelled, both switchable by TB_F_*; the others drop them).  Does not
 *  wait.  Returns the number of tasks dropped, or a TB_E* code. */
long tb_shutdown(struct tb_sched *s);

/** Visitor for tb_shutdown_now(): one call per task that never ran.  It runs
 *  under the scheduler's lock and must not call back into the scheduler. */
typedef void (*tb_unrun_fn)(void *ctx, tb_handle handle, tb_fn fn, void *arg);

/** Stops at once: no new tasks, pending tasks removed and passed to `visit`
 *  (may be NULL), threads told to stop after their current run.  Returns how
 *  many tasks never ran (0 on a second call), or a TB_E* code (timerwheel:
 *  TB_ESTATE from inside a task, as Netty's stop()). */
long tb_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx);

/** Monotonic mode: waits up to `timeout_ns` for the threads to finish after a
 *  shutdown.  TB_OK, TB_ETIMEDOUT, or TB_ESTATE if not shut down. */
int tb_await_termination(struct tb_sched *s, int64_t timeout_ns);

/* ---- Introspection ----------------------------------------------------- */

/** Counters.  Backends fill those that apply and leave the rest 0. */
struct tb_stats {
    uint64_t submitted;     /* schedules accepted */
    uint64_t rejected;      /* schedules refused (shutdown, full, nomem),
                               and periodic re-arms refused at max_pending
                               or when the structure could not grow */
    uint64_t fired;         /* task runs, periodic repetitions included */
    uint64_t failed;        /* runs that returned non-zero */
    uint64_t finished;      /* tasks retired after running: one-shots,
                               periodic tasks stopped by a failure, and
                               periodic tasks whose re-arm was refused */
    uint64_t cancelled;     /* successful cancels (incl. periodic stopped
                               by shutdown policy) */
    uint64_t dropped;       /* tasks never run: shutdown, killed timer */
    uint64_t lost;          /* of `dropped`, those lost because a failing
                               task killed the timer (TB_CAP_FAIL_KILLS) */
    uint64_t pending;       /* = tb_pending() */
    uint64_t zombies;       /* cancelled tasks still counted in pending */
    uint64_t running;       /* tasks taken off the structure: executing, or
                               queued for an executor (a task the original
                               keeps queued while it runs counts in pending
                               instead) */
    uint64_t peak_pending;  /* highest pending seen */
    uint64_t wakeups;       /* thread wake-ups (threaded mode) */
    uint64_t timed_waits;   /* timed condition waits / sleeps started */
    uint64_t ticks;         /* wheel ticks processed (hierwheel: buckets
                               polled from its delay queue) */
    uint64_t empty_ticks;   /* ticks that expired nothing (hierwheel:
                               buckets polled empty) */
    uint64_t transfers;     /* inbox entries moved into buckets */
    uint64_t visits;        /* timerwheel: entries visited, round decrements */
    uint64_t rounds;        /* timerwheel: of `visits`, round decrements */
    uint64_t sift_levels;   /* heaps (and hierwheel's delay queue of
                               buckets): levels an entry moved in sift-up and
                               sift-down, the structure's log n work */
    uint64_t cascades;      /* hierwheel: re-adds that moved down a level */
    uint64_t bucket_offers; /* hierwheel: buckets offered to the delay queue */
    uint64_t levels;        /* hierwheel: levels created */
    uint64_t purged;        /* tasks removed by tb_purge() */
    uint64_t bytes_held;    /* bytes the scheduler holds from its allocator */
};

/** Fills *out.  Consistent under the scheduler's lock; exact when quiet. */
int tb_stats(struct tb_sched *s, struct tb_stats *out);

/** True if the accounting identity holds for these counters. */
bool tb_stats_balanced(const struct tb_stats *st);

/** Removes lazily held cancelled tasks (java.util.Timer.purge(),
 *  ThreadPoolExecutor.purge()); returns how many.  TB_ENOTSUP where the
 *  backend does not hold cancelled tasks (TB_CAP_PURGE unset). */
long tb_purge(struct tb_sched *s);

/** Checks the structure's invariants (heap order and indexes, bucket links,
 *  counts).  TB_OK, TB_ECORRUPT (the broken invariant is printed to stderr),
 *  or TB_ENOTSUP.  Takes the lock; meant for tests. */
int tb_check(struct tb_sched *s);

#ifdef __cplusplus
}
#endif

#endif
