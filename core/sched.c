/*
 * core/sched.c — the public entry points: argument checks that are the same
 * for every backend, the clock, creation and destruction, then a call into
 * the backend's ops table.  Keeping validation here is what makes "bad input
 * gets the same error everywhere" true by construction.
 */
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tb_core.h"

const char *tb_strerror(int err)
{
    switch (err) {
    case TB_OK: return "success";
    case TB_EINVAL: return "invalid argument";
    case TB_ESHUTDOWN: return "scheduler is shut down";
    case TB_EFULL: return "too many pending tasks";
    case TB_ENOMEM: return "out of memory";
    case TB_ERANGE: return "delay or period out of range";
    case TB_ENOTSUP: return "operation not supported by this backend";
    case TB_ESTATE: return "wrong clock mode or thread for this call";
    case TB_ETIMEDOUT: return "timed out";
    case TB_ECORRUPT: return "internal invariant broken";
    default: return "unknown error";
    }
}

int64_t tb_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * TB_SEC + ts.tv_nsec;
}

int64_t tb_realtime_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * TB_SEC + ts.tv_nsec;
}

void tb_abstime(struct timespec *ts, int64_t deadline)
{
    if (deadline < 0)
        deadline = 0;
    ts->tv_sec = (time_t)(deadline / TB_SEC);
    ts->tv_nsec = (long)(deadline % TB_SEC);
}

void tb_check_fail(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
}

int tb_cond_init(pthread_cond_t *c)
{
    pthread_condattr_t a;
    if (pthread_condattr_init(&a))
        return TB_ENOMEM;
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    int rc = pthread_cond_init(c, &a);
    pthread_condattr_destroy(&a);
    return rc ? TB_ENOMEM : TB_OK;
}

static void free_ids(struct tb_sched *s, struct tb_threads *t)
{
    if (t->ids != &t->one)
        tb_mem_free(s, t->ids, (size_t)t->cap * sizeof *t->ids);
    t->ids = NULL;
}

int tb_threads_init(struct tb_sched *s, struct tb_threads *t, int cap,
                    pthread_mutex_t *lock, pthread_cond_t *const *conds,
                    int nconds)
{
    memset(t, 0, sizeof *t);
    if (nconds < 0 || nconds > TB_THREADS_MAX_CONDS)
        return TB_EINVAL;
    t->cap = cap < 1 ? 1 : cap;
    t->ids = &t->one;
    if (t->cap > 1) {
        t->ids = tb_mem_calloc(s, (size_t)t->cap, sizeof *t->ids);
        if (!t->ids)
            return TB_ENOMEM;
    }
    if (pthread_mutex_init(lock, NULL)) {
        free_ids(s, t);
        return TB_ENOMEM;
    }
    t->lock = lock;
    /* the threads' own condition first, then the backend's */
    if (tb_cond_init(&t->ended)) {
        pthread_mutex_destroy(lock);
        free_ids(s, t);
        return TB_ENOMEM;
    }
    for (; t->nconds < nconds; t->nconds++) {
        if (tb_cond_init(conds[t->nconds])) {
            tb_threads_fini(s, t);
            return TB_ENOMEM;
        }
        t->conds[t->nconds] = conds[t->nconds];
    }
    return TB_OK;
}

void tb_threads_fini(struct tb_sched *s, struct tb_threads *t)
{
    for (int i = 0; i < t->nconds; i++)
        pthread_cond_destroy(t->conds[i]);
    pthread_cond_destroy(&t->ended);
    pthread_mutex_destroy(t->lock);
    free_ids(s, t);
}

int tb_threads_begin(struct tb_threads *t, bool stopped)
{
    if (t->started)
        return TB_ESTATE;
    if (stopped)
        return TB_ESHUTDOWN;
    t->started = true;
    return TB_OK;
}

int tb_threads_spawn(struct tb_threads *t, void *(*main)(void *), void *arg)
{
    if (t->created == t->cap ||
        pthread_create(&t->ids[t->created], NULL, main, arg))
        return TB_ENOMEM;
    t->created++;
    t->live++;
    return TB_OK;
}

int tb_threads_start(struct tb_threads *t, bool stopped,
                     void *(*main)(void *), void *arg)
{
    int rc = tb_threads_begin(t, stopped);
    while (!rc && t->created < t->cap)
        rc = tb_threads_spawn(t, main, arg);
    return rc;
}

void tb_threads_end(struct tb_threads *t)
{
    if (--t->live == 0)
        pthread_cond_broadcast(&t->ended);
}

int tb_threads_await(const struct tb_sched *s, struct tb_threads *t,
                     const bool *stopped, int64_t timeout_ns)
{
    if (!s->threaded)
        return *stopped ? TB_OK : TB_ESTATE;
    struct timespec ts;
    tb_abstime(&ts, tb_deadline_in(timeout_ns));
    pthread_mutex_lock(t->lock);
    int rc = *stopped ? TB_OK : TB_ESTATE;
    while (!rc && t->live > 0)
        if (pthread_cond_timedwait(&t->ended, t->lock, &ts))
            rc = t->live > 0 ? TB_ETIMEDOUT : TB_OK;
    pthread_mutex_unlock(t->lock);
    return rc;
}

void tb_threads_join(const struct tb_sched *s, struct tb_threads *t)
{
    if (!s->threaded)
        return;
    pthread_mutex_lock(t->lock);
    int created = t->joined ? 0 : t->created;
    t->joined = true;
    pthread_mutex_unlock(t->lock);
    for (int i = 0; i < created; i++)
        pthread_join(t->ids[i], NULL);
}

static void *default_alloc(void *ctx, size_t size)
{
    (void)ctx;
    return malloc(size);
}

static void default_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    (void)size;
    free(p);
}

static const struct tb_allocator malloc_allocator = {default_alloc,
                                                     default_free, NULL};

static int schedule_monotonic(struct tb_sched *s, int64_t delay, tb_fn fn,
                              void *arg, tb_handle *handle, int64_t period);
static int cancel_monotonic(struct tb_sched *s, tb_handle handle);

int tb_create(const struct tb_backend *backend, const struct tb_config *config,
              struct tb_sched **out)
{
    if (!backend || !out)
        return TB_EINVAL;
    *out = NULL;
    struct tb_config cfg = {0};
    if (config)
        cfg = *config;
    if ((cfg.clock != TB_CLOCK_VIRTUAL && cfg.clock != TB_CLOCK_MONOTONIC) ||
        cfg.threads < 0 || cfg.tick_ns < 0 || cfg.wheel_size < 0 ||
        cfg.poll_ns < 0)
        return TB_EINVAL;
    if (cfg.allocator &&
        (!cfg.allocator->alloc || !cfg.allocator->free))
        return TB_EINVAL;
    const struct tb_backend_ops *ops = backend->ops;
    int rc = ops->configure(&cfg);
    if (rc)
        return rc;
    const struct tb_allocator *a = cfg.allocator ? cfg.allocator
                                                 : &malloc_allocator;
    struct tb_sched *s = a->alloc(a->ctx, ops->sched_size);
    if (!s)
        return TB_ENOMEM;
    memset(s, 0, ops->sched_size);
    s->backend = backend;
    s->cfg = cfg;
    s->alloc = *a;
    atomic_init(&s->bytes_held, ops->sched_size);
    atomic_init(&s->vnow, 0);
    s->threaded = cfg.clock == TB_CLOCK_MONOTONIC;
    s->wall = (backend->caps & TB_CAP_WALL_CLOCK) &&
              !(cfg.flags & TB_F_MONOTONIC_DEADLINES);
    atomic_init(&s->wall_offset, 0);
    s->pool.owner = s;
    s->schedule = !s->threaded && !cfg.max_pending && ops->schedule_virtual
                      ? ops->schedule_virtual : ops->schedule;
    s->cancel = !s->threaded && ops->cancel_virtual ? ops->cancel_virtual
                                                    : ops->cancel;
    s->enter = s->threaded ? schedule_monotonic : s->schedule;
    s->pool.record_size = ops->task_size;
    s->pool.locked = s->threaded;
    s->pool.free_head = TB_POOL_NIL;
    if (s->pool.locked && pthread_mutex_init(&s->pool.lock, NULL)) {
        a->free(a->ctx, s, ops->sched_size);
        return TB_ENOMEM;
    }
    rc = ops->init(s);
    if (rc) {
        tb_pool_fini(&s->pool);
        a->free(a->ctx, s, ops->sched_size);
        return rc;
    }
    s->cancel_entry = s->threaded ? cancel_monotonic : s->cancel;
    *out = s;
    return TB_OK;
}

/* ---- Fork (issue 42) ----------------------------------------------------
 *
 * A child forked after tb_start() gets a copy of the scheduler's memory but
 * none of its threads: nothing would run what it schedules, a lock a
 * vanished thread held stays held, and joining or waking the threads on
 * tb_destroy() hung.  A pthread_atfork() handler counts the forks in the
 * child; a started scheduler remembers the count at its start, and every
 * entry point of a copy started before a fork answers TB_ESTATE (tb_destroy
 * forgets it without touching its locks, threads or memory).  A scheduler
 * created but not started before the fork is the child's to start. */

static _Atomic unsigned fork_epoch;
static pthread_once_t fork_once = PTHREAD_ONCE_INIT;
static int fork_hook_rc;

static void fork_child(void)
{
    atomic_fetch_add_explicit(&fork_epoch, 1, memory_order_relaxed);
}

static void fork_hook(void)
{
    fork_hook_rc = pthread_atfork(NULL, NULL, fork_child);
}

/* Whether s is a forked child's copy of a scheduler started before the
 * fork.  0 in virtual mode, which has no threads to lose. */
static inline bool forked(const struct tb_sched *s)
{
    return s->started_epoch &&
           s->started_epoch !=
               atomic_load_explicit(&fork_epoch, memory_order_relaxed) + 1;
}

/* tb_cancel's entry on the monotonic clock (s->cancel_entry there): a
 * forked copy answers TB_ESTATE, as every entry point does. */
static int cancel_monotonic(struct tb_sched *s, tb_handle handle)
{
    if (forked(s))
        return TB_ESTATE;
    return s->cancel(s, handle);
}

void tb_destroy(struct tb_sched *s)
{
    if (!s || forked(s))
        return;
    const struct tb_backend_ops *ops = s->backend->ops;
    ops->shutdown_now(s, NULL, NULL);
    ops->join(s);
    ops->fini(s);
    tb_pool_fini(&s->pool);
    struct tb_allocator a = s->alloc;
    a.free(a.ctx, s, ops->sched_size);
}

const struct tb_backend *tb_sched_backend(const struct tb_sched *s)
{
    return s ? s->backend : NULL;
}

void tb_sched_config(const struct tb_sched *s, struct tb_config *out)
{
    if (s && out)
        *out = s->cfg;
}

int tb_start(struct tb_sched *s)
{
    if (!s)
        return TB_EINVAL;
    /* started once already (the epoch is put back when a start fails):
     * every backend refuses a second start, and writing the epoch again
     * while the first start's threads read it (a task's tb_shutdown_now
     * tests for a fork) was a data race (TSan, unit-timerthread's
     * test_shutdown_now_inside_task_threaded) */
    if (!s->threaded || s->started_epoch)
        return TB_ESTATE;
    pthread_once(&fork_once, fork_hook);
    if (fork_hook_rc)
        return TB_ENOMEM;
    /* set before the threads exist, so that they (and tasks calling back
     * in) read it after it was written */
    unsigned before = s->started_epoch;
    s->started_epoch =
        atomic_load_explicit(&fork_epoch, memory_order_relaxed) + 1;
    int rc = s->backend->ops->start(s);
    if (rc != TB_OK)
        s->started_epoch = before;
    return rc;
}

int64_t tb_now(const struct tb_sched *s)
{
    if (!s)
        return 0;
    return s->threaded ? tb_monotonic_ns()
                       : atomic_load_explicit(&s->vnow, memory_order_relaxed);
}

int64_t tb_wall_now(const struct tb_sched *s)
{
    return s ? tb_wall_clock(s) : 0;
}

int tb_wall_step(struct tb_sched *s, int64_t delta_ns)
{
    if (!s)
        return TB_EINVAL;
    if (s->threaded)
        return TB_ESTATE;
    int64_t off = atomic_load_explicit(&s->wall_offset, memory_order_relaxed);
    int64_t now = atomic_load_explicit(&s->vnow, memory_order_relaxed);
    int64_t next, wall;
    if (__builtin_add_overflow(off, delta_ns, &next) ||
        next > TB_MAX_DELAY || next < -TB_MAX_DELAY ||
        __builtin_add_overflow(now, next, &wall))
        return TB_EINVAL;
    atomic_store_explicit(&s->wall_offset, next, memory_order_relaxed);
    return TB_OK;
}

/* The monotonic half of schedule(), s->enter in that mode: reached with
 * vnow + delay, which is the delay itself there (vnow stays 0), it adds the
 * clock instead. */
static int schedule_monotonic(struct tb_sched *s, int64_t delay, tb_fn fn,
                              void *arg, tb_handle *handle, int64_t period)
{
    int64_t deadline;
    if (forked(s)) {
        tb_handle_none(handle);
        return TB_ESTATE;
    }
    if (__builtin_add_overflow(tb_clock_now(s), delay, &deadline)) {
        tb_handle_none(handle);
        return TB_ERANGE;
    }
    return s->schedule(s, deadline, fn, arg, handle, period);
}

/* Shared checks of every schedule call; computes the absolute deadline.
 * *handle is cleared only where the call fails: the backend's success
 * stores the handle, and its failing paths clear it (tb_handle_none).
 * The common path is a handful of compares and a tail call: one unsigned
 * compare sends both a negative delay (which means 0) and one past
 * TB_MAX_DELAY aside, and since the clock and the delay are both >= 0 the
 * deadline overflows exactly when their sum passes INT64_MAX.  The clock
 * mode is not tested here: s->enter was chosen for it at tb_create. */
static inline int schedule(struct tb_sched *s, int64_t delay, tb_fn fn,
                           void *arg, tb_handle *handle, int64_t period)
{
    if (__builtin_expect(!s || !fn, 0)) {
        tb_handle_none(handle);
        return TB_EINVAL;
    }
    if (__builtin_expect((uint64_t)delay > (uint64_t)TB_MAX_DELAY, 0)) {
        if (delay > 0) {
            tb_handle_none(handle);
            return TB_ERANGE;
        }
        delay = 0;
    }
    int64_t deadline;
    if (__builtin_add_overflow(
            atomic_load_explicit(&s->vnow, memory_order_relaxed), delay,
            &deadline)) {
        tb_handle_none(handle);
        return TB_ERANGE;
    }
    return s->enter(s, deadline, fn, arg, handle, period);
}

int tb_schedule(struct tb_sched *s, int64_t delay_ns, tb_fn fn, void *arg,
                tb_handle *handle)
{
    return schedule(s, delay_ns, fn, arg, handle, 0);
}

/* tb_schedule_range: its own entry, so that tb_schedule's path stays as it
 * is.  The same checks as schedule(), plus the slack's; both ends of the
 * range are computed from one reading of the clock. */
int tb_schedule_range(struct tb_sched *s, int64_t delay_ns, int64_t slack_ns,
                      tb_fn fn, void *arg, tb_handle *handle)
{
    if (!s || !fn || slack_ns < 0) {
        tb_handle_none(handle);
        return TB_EINVAL;
    }
    if (forked(s)) {
        tb_handle_none(handle);
        return TB_ESTATE;
    }
    if ((uint64_t)delay_ns > (uint64_t)TB_MAX_DELAY) {
        if (delay_ns > 0) {
            tb_handle_none(handle);
            return TB_ERANGE;
        }
        delay_ns = 0;
    }
    int64_t now = tb_clock_now(s), soft, hard;
    if (slack_ns > TB_MAX_DELAY - delay_ns ||
        __builtin_add_overflow(now, delay_ns, &soft) ||
        __builtin_add_overflow(soft, slack_ns, &hard)) {
        tb_handle_none(handle);
        return TB_ERANGE;
    }
    const struct tb_backend_ops *ops = s->backend->ops;
    if (!ops->schedule_range)
        return s->schedule(s, soft, fn, arg, handle, 0);
    return ops->schedule_range(s, soft, hard, fn, arg, handle);
}

/* The periodic schedules: the period checked, then schedule() with it
 * signed as tb_task.period (> 0 fixed rate, < 0 fixed delay). */
static int schedule_periodic(struct tb_sched *s, int64_t delay, tb_fn fn,
                             void *arg, tb_handle *handle, int64_t period,
                             bool fixed_rate)
{
    if (period <= 0 || period > TB_MAX_DELAY) {
        tb_handle_none(handle);
        return period <= 0 ? TB_EINVAL : TB_ERANGE;
    }
    return schedule(s, delay, fn, arg, handle, fixed_rate ? period : -period);
}

int tb_schedule_fixed_rate(struct tb_sched *s, int64_t delay_ns, tb_fn fn,
                           void *arg, tb_handle *handle, int64_t period_ns)
{
    return schedule_periodic(s, delay_ns, fn, arg, handle, period_ns, true);
}

int tb_schedule_fixed_delay(struct tb_sched *s, int64_t delay_ns, tb_fn fn,
                            void *arg, tb_handle *handle, int64_t period_ns)
{
    return schedule_periodic(s, delay_ns, fn, arg, handle, period_ns, false);
}

int tb_cancel(struct tb_sched *s, tb_handle handle)
{
    if (!s)
        return TB_EINVAL;
    /* TB_HANDLE_NONE needs no test: no record's word has generation 0, so
     * every backend's lookup answers "not pending" for it.  The fork test
     * is the monotonic entry's (cancel_monotonic): a virtual scheduler is
     * never started, so it cannot be a forked copy of a started one. */
    return s->cancel_entry(s, handle);
}

int tb_reschedule(struct tb_sched *s, tb_handle handle, int64_t delay_ns)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    if (!s->backend->ops->reschedule)
        return TB_ENOTSUP;
    if ((uint64_t)delay_ns > (uint64_t)TB_MAX_DELAY) {
        if (delay_ns > 0)
            return TB_ERANGE;
        delay_ns = 0;
    }
    int64_t now = tb_clock_now(s);
    int64_t deadline;
    if (__builtin_add_overflow(now, delay_ns, &deadline))
        return TB_ERANGE;
    return s->backend->ops->reschedule(s, handle, deadline);
}

int tb_reserve(struct tb_sched *s, size_t n)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    int rc = tb_pool_reserve(&s->pool, n);
    if (rc)
        return rc;
    return s->backend->ops->reserve ? s->backend->ops->reserve(s, n) : TB_OK;
}

size_t tb_pending(struct tb_sched *s)
{
    return s && !forked(s) ? s->backend->ops->pending(s) : 0;
}

long tb_advance(struct tb_sched *s, int64_t now_ns)
{
    if (!s)
        return TB_EINVAL;
    if (s->threaded)
        return TB_ESTATE;
    if (s->in_advance)
        return TB_ESTATE;
    if (now_ns < atomic_load_explicit(&s->vnow, memory_order_relaxed))
        return TB_EINVAL;
    s->in_advance = true;
    long ran = s->backend->ops->advance(s, now_ns);
    s->in_advance = false;
    return ran;
}

int tb_spend(struct tb_sched *s, int64_t ns)
{
    if (!s)
        return TB_EINVAL;
    if (s->threaded)
        return TB_ESTATE;
    int64_t now = atomic_load_explicit(&s->vnow, memory_order_relaxed);
    if (ns < 0 || ns > INT64_MAX - now)
        return TB_EINVAL;
    atomic_store_explicit(&s->vnow, now + ns, memory_order_relaxed);
    return TB_OK;
}

/* After a virtual scheduler's shutdown every later schedule and cancel
 * takes the backend's general ops, which test for it: the virtual fast
 * paths tb_create chose (schedule_virtual, cancel_virtual, a variant an
 * init put in their place) are then never called again, so they need not
 * test for a shutdown on every call.  One thread only on the virtual
 * clock (a task calling tb_shutdown runs inside tb_advance, on it), so
 * the pointers change under no other caller. */
static void stopped_virtual(struct tb_sched *s)
{
    if (s->threaded)
        return;
    const struct tb_backend_ops *ops = s->backend->ops;
    s->schedule = s->enter = ops->schedule;
    s->cancel = s->cancel_entry = ops->cancel;
}

long tb_shutdown(struct tb_sched *s)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    long n = s->backend->ops->shutdown(s);
    stopped_virtual(s);
    return n;
}

long tb_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    long n = s->backend->ops->shutdown_now(s, visit, ctx);
    stopped_virtual(s);
    return n;
}

int tb_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    if (!s || timeout_ns < 0)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    return s->backend->ops->await_termination(s, timeout_ns);
}

int tb_stats(struct tb_sched *s, struct tb_stats *out)
{
    if (!s || !out)
        return TB_EINVAL;
    memset(out, 0, sizeof *out);
    if (forked(s))
        return TB_ESTATE;
    s->backend->ops->stats(s, out);
    out->bytes_held =
        atomic_load_explicit(&s->bytes_held, memory_order_relaxed);
    return TB_OK;
}

bool tb_stats_balanced(const struct tb_stats *st)
{
    if (st->zombies > st->pending)
        return false;
    return st->submitted == st->finished + st->cancelled + st->dropped +
                                (st->pending - st->zombies) + st->running;
}

long tb_purge(struct tb_sched *s)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    if (!s->backend->ops->purge)
        return TB_ENOTSUP;
    return s->backend->ops->purge(s);
}

int tb_check(struct tb_sched *s)
{
    if (!s)
        return TB_EINVAL;
    if (forked(s))
        return TB_ESTATE;
    if (!s->backend->ops->check)
        return TB_ENOTSUP;
    return s->backend->ops->check(s);
}
