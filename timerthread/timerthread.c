/*
 * timerthread — the JDK's java.util.Timer (Timer, TimerThread, TaskQueue,
 * TimerTask).
 *
 * Structure.  TaskQueue: a 1-based array binary min-heap of tasks (children
 * of slot n are 2n and 2n+1, slot 0 unused) ordered by next execution time
 * only.  Each slot caches its task's deadline next to the pointer, so a
 * sift compares inside the array instead of loading one record per
 * comparison: at 10^6 tasks that halves the cost of an expiry, for 8 more
 * bytes a slot (the JDK compares through the references).  Equal deadlines
 * have no tie-break, so they do not run in submission order (A, B, C at one
 * time run A, C, B).  The array starts at 128 slots and doubles when the
 * next add would fill it; it never shrinks.  Tasks keep no heap index: the
 * original never removes from the middle.
 *
 * Cancel only marks the record (TimerTask.cancel): the task stays in the
 * heap, counted in pending as a zombie, until it reaches the top — the timer
 * loop drops a cancelled head whenever it looks at the queue, due or not —
 * or until purge, which moves the last element into every cancelled slot and
 * re-heapifies bottom-up.
 *
 * Complexity.  schedule O(log n) (sift-up, O(1) on average for random
 * deadlines); cancel O(1); expiry O(log n) per run (removeMin or, for a
 * periodic task, rescheduleMin: one sift-down either way); purge O(n).
 *
 * Runs.  The reschedule happens before the run (TimerThread.mainLoop): a
 * one-shot is taken off the heap and marked executed, so cancelling it while
 * it runs prevents nothing; a periodic task gets its next time while it stays
 * queued — fixed rate: previous scheduled time + period (a late timer catches
 * up in a burst, runs never overlap since one thread runs them); fixed delay:
 * the time it was taken off the queue + period, i.e. start to start, not
 * heapqueue's end to start.  Because it stays queued, a periodic task in its
 * run counts in pending and not in stats.running, and cancelling it from
 * inside its run leaves a zombie that is dropped when it next reaches the top.
 *
 * A failing task (non-zero return, Java's uncaught exception) kills the
 * timer: the loop ends, every queued task is dropped (stats.dropped; the
 * failing task itself counts as finished), and every later schedule gets
 * TB_ESHUTDOWN.  tb_shutdown() and tb_shutdown_now() are Timer.cancel(): the
 * queue is discarded and no later task is accepted; called from inside a task
 * they make that run the last.
 *
 * Clock.  Deadlines are on the wall clock, as the JDK's are on
 * System.currentTimeMillis (TB_CAP_WALL_CLOCK; DECISIONS.md D15): a task's
 * time is the wall clock at its schedule plus its delay, and the loop
 * compares the head's time with the wall clock read when it looks.  Between
 * looks the thread is in queue.wait(executionTime - currentTime), a wait of
 * a duration, which a step of the clock does not shorten or lengthen.  So a
 * step back by d keeps every pending task waiting d longer (the head: one
 * more wait when the first ends), and a step forward by d leaves the
 * awaited head on time but runs every task behind it up to d early; after a
 * step, fixed rate (next = executionTime + period) runs the periods the step
 * skipped back to back, fixed delay (next = currentTime + period) does not.
 * Monotonic mode reads CLOCK_REALTIME and waits on the CLOCK_MONOTONIC
 * condition for the relative time; virtual mode reads the virtual time plus
 * the steps of tb_wall_step() and keeps, in vwake, when the modelled wait
 * ends.  TB_F_MONOTONIC_DEADLINES puts the deadlines back on the
 * scheduler's own clock, where no step can reach them.
 *
 * Threads.  Monotonic mode has one timer thread that runs every task, with
 * the queue lock released: a slow task delays all the others.  It waits
 * untimed on an empty queue and timed for the head's deadline otherwise; a
 * schedule that makes a new head signals it (queue.notify()), a cancel does
 * not.  Virtual mode does the same loop in tb_advance(), with no lock and no
 * condition variable: one look per call with TB_F_MONOTONIC_DEADLINES; on
 * the wall clock a look only when the modelled wait has ended or a new head
 * notified it (so a cancelled head waits for that look to leave, as in
 * Java).
 *
 * Deliberate differences from the JDK.
 *   - Resolution: nanoseconds on both clocks; Java's Timer counts in
 *     milliseconds (currentTimeMillis, Object.wait(ms)).
 *   - Cancel takes the queue lock to keep the counters consistent under it;
 *     TimerTask.cancel synchronises on the task only.  It is O(1) all the
 *     same.
 *   - The thread starts in tb_start() rather than in the constructor, and
 *     there is no reaper ending it when the Timer becomes unreachable.
 *   - Deadlines past the clock are TB_ERANGE (core) instead of Java's
 *     halving of huge periods; a first time in the past cannot be given
 *     (negative delays are 0), so no missed runs are replayed.
 *   - A periodic task whose run is in progress when the timer is cancelled
 *     is counted as cancelled, not passed to the shutdown_now visitor: it is
 *     running, and a visitor that frees its argument must not see it.
 *   - A cancel after the timer stopped answers 0 (the records are gone, the
 *     tasks counted as dropped); the JDK's TimerTask.cancel() answers true,
 *     since Timer.cancel() leaves every task SCHEDULED.
 *
 * max_pending (DECISIONS.md D1): a periodic task stays queued during its run
 * and counts as pending, so a schedule from inside the run can get TB_EFULL;
 * its own re-arm takes no new place and is never refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

/* TaskQueue's initial array length: 127 tasks before the first doubling. */
#define TT_INITIAL_CAPACITY 128

/* A heap slot caches its task's deadline so that sifting compares within the
 * array instead of loading a record per comparison (libev's ANHE). */
struct tt_slot {
    int64_t at;
    struct tb_task *t;
};

struct tt {
    struct tb_sched base;
    struct tt_slot *heap;    /* heap[1..size]; every other slot zeroed */
    void *heap_mem;          /* the allocation `heap` lies in */
    size_t size, cap;        /* cap is the array length */
    /* the periodic task whose run is in progress, while it is still queued;
     * NULL otherwise */
    struct tb_task *current;
    /* virtual mode, deadlines on the wall clock: the virtual time at which
     * the timer thread's queue.wait(executionTime - currentTime) ends, so
     * that it looks at the queue again; INT64_MIN when it looks at the next
     * tb_advance (notified, or just back from a run) */
    int64_t vwake;
    pthread_mutex_t lock;
    pthread_cond_t available;  /* the queue's monitor: new head, shutdown */
    struct tb_threads thread;  /* the timer thread */
    bool stopped;            /* !TimerThread.newTasksMayBeScheduled */
    struct tb_stats st;
};

static inline struct tt *tt_of(struct tb_sched *s) { return (struct tt *)s; }

/* TimerThread's currentTime: the wall clock (System.currentTimeMillis) by
 * default, the scheduler's own clock with TB_F_MONOTONIC_DEADLINES. */
static inline int64_t tt_clock(const struct tt *q)
{
    return q->base.wall ? tb_wall_clock(&q->base) : tb_clock_now(&q->base);
}

static inline void tt_lock(struct tt *q)
{
    if (q->base.threaded)
        pthread_mutex_lock(&q->lock);
}

static inline void tt_unlock(struct tt *q)
{
    if (q->base.threaded)
        pthread_mutex_unlock(&q->lock);
}

/* ---- TaskQueue: the 1-based heap --------------------------------------- */

/* The element at k may be earlier than its parent: move it up.  The hole
 * moves and the element is written once where it stops. */
static inline __attribute__((always_inline)) void
fix_up(struct tt *q, size_t k)
{
    struct tt_slot *h = q->heap;
    struct tt_slot e = h[k];
    uint64_t levels = 0;
    while (k > 1) {
        size_t j = k >> 1;
        if (h[j].at <= e.at)
            break;
        h[k] = h[j];
        k = j;
        levels++;
    }
    h[k] = e;
    q->st.sift_levels += levels;
}

/* The element at k may be later than its children: move it down.  On equal
 * children the left one wins, as in the JDK, which is part of why equal
 * deadlines come out in no particular order.  The loop runs while both
 * children exist, so the choice is an add rather than a branch on the
 * bound; a last lone child is looked at once after it. */
static void fix_down(struct tt *q, size_t k)
{
    struct tt_slot *h = q->heap, *hole = h + k;
    struct tt_slot e = *hole;
    size_t n = q->size, j;
    uint64_t levels = 0;
    while ((j = k << 1) < n) {
        struct tt_slot *c = h + j;
        /* the next level's pair is in this line, whichever child wins: at
         * 10^6 tasks the loads of successive levels otherwise wait on each
         * other (a hint only: past the array it does nothing) */
        __builtin_prefetch(
            (const void *)((uintptr_t)h + (k << 2) * sizeof *h));
        size_t right = c[0].at > c[1].at;
        c += right;
        if (e.at <= c->at)
            goto out;
        *hole = *c;
        hole = c;
        k = j + right;
        levels++;
    }
    if (j == n && h[j].at < e.at) {
        *hole = h[j];
        hole = h + j;
        levels++;
    }
out:
    *hole = e;
    q->st.sift_levels += levels;
}

/* The array is placed on a cache line boundary: the two children of any
 * slot (2k, 2k + 1) then share one line, so a level of fix_down reads one
 * line of the array where a malloc'd array may put half the pairs across
 * two, and the four grandchildren (4k .. 4k + 3) fill exactly one line,
 * which fix_down prefetches a level ahead. */
#define TT_LINE 64

static struct tt_slot *heap_alloc(struct tt *q, size_t cap, void **mem)
{
    return tb_mem_alloc_aligned(&q->base, cap * sizeof(struct tt_slot),
                                TT_LINE, 0, mem);
}

static void heap_free(struct tt *q)
{
    tb_mem_free_aligned(&q->base, q->heap_mem, q->cap * sizeof *q->heap,
                        TT_LINE);
}

/* Moves the heap into a zeroed array of `cap` slots (cap > size). */
static bool heap_resize(struct tt *q, size_t cap)
{
    void *mem;
    struct tt_slot *h = heap_alloc(q, cap, &mem);
    if (!h)
        return false;
    memcpy(h, q->heap, (q->size + 1) * sizeof *h);
    memset(h + q->size + 1, 0, (cap - q->size - 1) * sizeof *h);
    heap_free(q);
    q->heap = h;
    q->heap_mem = mem;
    q->cap = cap;
    return true;
}

/* TaskQueue.add's growth, done before the record is taken so that a failed
 * allocation leaves nothing half-inserted. */
static bool heap_reserve(struct tt *q)
{
    if (q->size + 1 < q->cap)
        return true;
    if (q->cap > SIZE_MAX / 2 / sizeof *q->heap)
        return false;
    return heap_resize(q, q->cap * 2);
}

static inline __attribute__((always_inline)) void
heap_add(struct tt *q, struct tb_task *t)
{
    q->heap[++q->size] = (struct tt_slot){t->deadline, t};
    fix_up(q, q->size);
    if (q->size > q->st.peak_pending)
        q->st.peak_pending = q->size;
}

static void remove_min(struct tt *q)
{
    q->heap[1] = q->heap[q->size];
    q->heap[q->size--] = (struct tt_slot){0, NULL};
    if (q->size)
        fix_down(q, 1);
}

static void reschedule_min(struct tt *q, int64_t deadline)
{
    q->heap[1].t->deadline = deadline;
    q->heap[1].at = deadline;
    fix_down(q, 1);
}

/* ---- Task records ------------------------------------------------------ */

static void retire(struct tt *q, struct tb_task *t)
{
    if (t == q->current)
        q->current = NULL;
    tb_task_set_state(t, TB_TASK_DONE);
    tb_pool_put(&q->base.pool, t);
}

/* The loop found a cancelled task on top: it leaves without running. */
static void drop_zombie_head(struct tt *q)
{
    struct tb_task *t = q->heap[1].t;
    remove_min(q);
    q->st.zombies--;
    retire(q, t);
}

/* Empties the queue once the timer is dead or cancelled.  `failing` is the
 * periodic task whose failure killed the timer (NULL otherwise): it ran, so
 * it is finished rather than dropped.  The periodic task whose run is in
 * progress is stopped, so it counts as cancelled.  Everything else that was
 * waiting never runs: dropped, and shown to `visit`; when `killed` (a
 * failure, not a shutdown) also counted as lost.  Lock held. */
static long discard(struct tt *q, bool killed, struct tb_task *failing,
                    tb_unrun_fn visit, void *ctx)
{
    long n = 0;
    q->stopped = true;
    for (size_t i = q->size; i >= 1; i--) {
        struct tb_task *t = q->heap[i].t;
        q->heap[i] = (struct tt_slot){0, NULL};
        if (tb_task_get_state(t) == TB_TASK_CANCELLED) {
            q->st.zombies--;
        } else if (t == failing) {
            q->st.finished++;
        } else if (t == q->current) {
            q->st.cancelled++;
        } else {
            if (visit)
                visit(ctx, tb_pool_handle(&q->base.pool, t), t->fn, t->arg);
            q->st.dropped++;
            q->st.lost += killed;
            n++;
        }
        retire(q, t);
    }
    q->size = 0;
    if (q->base.threaded)
        pthread_cond_broadcast(&q->available);
    return n;
}

static __attribute__((noinline)) int
schedule_slow(struct tt *q, int64_t deadline, int64_t period, tb_fn fn,
              void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    struct tb_sched *s = &q->base;
    struct tb_task *t = NULL;
    int rc = TB_OK;
    tt_lock(q);
    if (q->stopped) {
        rc = TB_ESHUTDOWN; /* "Timer already cancelled." */
    } else if (s->cfg.max_pending && q->size >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else if (!heap_reserve(q) || !(t = tb_pool_get(&s->pool, handle))) {
        rc = TB_ENOMEM; /* no room in the array, or no record */
    } else {
        tb_task_set(t, deadline, period, fn, arg);
        heap_add(q, t);
        q->st.submitted++;
        if (q->heap[1].t == t) {
            /* queue.notify(): the thread looks at the new head */
            if (s->threaded)
                pthread_cond_signal(&q->available);
            else
                q->vwake = INT64_MIN;
        }
    }
    if (rc)
        q->st.rejected++;
    tt_unlock(q);
    return rc;
}

/* The common case of a virtual-clock schedule, as a leaf function: a free
 * record at hand and room in the array (TaskQueue.add without its growth).
 * Anything else (threads, a stopped timer, max_pending, growth) takes
 * schedule_slow, which is the same add with every check. */
static inline __attribute__((always_inline)) int
tt_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct tt *q = tt_of(s);
    /* on the virtual clock the core's deadline is on the virtual time
     * (tb_clock_now): the wall clock is that plus the steps taken */
    if ((virt || !s->threaded) && s->wall &&
        __builtin_add_overflow(
            deadline,
            atomic_load_explicit(&s->wall_offset, memory_order_relaxed),
            &deadline)) {
        tb_handle_none(handle);
        return TB_ERANGE;
    }
    if ((!virt && (s->threaded || s->cfg.max_pending)) || q->stopped ||
        q->size + 1 >= q->cap || s->pool.free_head == TB_POOL_NIL)
        return schedule_slow(q, deadline, period, fn, arg, handle);
    struct tb_task *t = tb_pool_get_unlocked(&s->pool, handle);
    tb_task_set(t, deadline, period, fn, arg);
    heap_add(q, t);
    q->st.submitted++;
    if (q->heap[1].t == t)
        q->vwake = INT64_MIN; /* queue.notify() */
    return TB_OK;
}

static int tt_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return tt_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* tt_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int tt_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return tt_schedule_on(s, deadline, fn, arg, handle, period, true);
}

/* TimerTask.cancel.  Lock held, or `virt` (a constant: the virtual path
 * then makes no call at all). */
static inline __attribute__((always_inline)) int
cancel_locked(struct tt *q, tb_handle h, bool virt)
{
    /* WAITING is TimerTask.SCHEDULED: a queued one-shot, or a periodic task
     * even while it runs; a running one-shot is RUNNING (EXECUTED). */
    if (!tb_pool_mark_cancelled(&q->base.pool, h, virt))
        return 0;
    q->st.cancelled++;
    q->st.zombies++;
    return 1;
}

static __attribute__((noinline)) int cancel_threaded(struct tt *q,
                                                     tb_handle h)
{
    pthread_mutex_lock(&q->lock);
    int rc = cancel_locked(q, h, false);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

static int tt_cancel(struct tb_sched *s, tb_handle h)
{
    struct tt *q = tt_of(s);
    if (s->threaded)
        return cancel_threaded(q, h);
    return cancel_locked(q, h, true);
}

/* tt_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int tt_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_locked(tt_of(s), h, true);
}

static size_t tt_pending(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    tt_lock(q);
    size_t n = q->size;
    tt_unlock(q);
    return n;
}

/* ---- TimerThread.mainLoop ---------------------------------------------- */

/* The head is due at `now` and not cancelled: take it for running.  A
 * one-shot leaves the heap; a periodic task is given its next time and stays.
 * Lock held. */
static struct tb_task *take_due(struct tt *q, int64_t now)
{
    struct tb_task *t = q->heap[1].t;
    int64_t next = t->period ? tb_next_deadline(t->deadline, t->period, now)
                             : INT64_MAX;
    if (next == INT64_MAX) {
        /* a one-shot, or a periodic task whose next run would fall at the
         * end of the clock: this run is its last, so it leaves like a
         * one-shot and is retired as finished */
        t->period = 0;
        remove_min(q);
        tb_task_set_state(t, TB_TASK_RUNNING);
        q->st.running++;
    } else {
        reschedule_min(q, next);
        q->current = t;
    }
    return t;
}

/* Runs a taken task with the lock released, then accounts for it.  A
 * periodic record may have been purged or discarded (and even reused) during
 * its run, so nothing of it is read afterwards; q->current says whether it is
 * still queued.  Lock held on entry and exit. */
static void run_task(struct tt *q, struct tb_task *t)
{
    tb_fn fn = t->fn;
    void *arg = t->arg;
    bool periodic = t->period != 0;
    tt_unlock(q);
    bool failed = fn(arg) != 0;
    tt_lock(q);
    q->st.fired++;
    if (!periodic) {
        q->st.running--;
        q->st.finished++;
        retire(q, t);
    }
    if (failed) {
        /* the exception leaves mainLoop: TimerThread.run's finally */
        q->st.failed++;
        discard(q, true, periodic ? q->current : NULL, NULL, NULL);
    }
    q->current = NULL;
}

/* Virtual mode.  With deadlines on the wall clock the timer thread is
 * modelled as Java's: after looking at a head that is not due it waits
 * queue.wait(executionTime - currentTime), a relative wait that a step of
 * the wall clock neither shortens nor lengthens, and looks again only when
 * that wait ends (q->vwake) or a schedule of a new head notifies it.  So a
 * step forward runs the head it is waiting for on time and the tasks
 * behind it early; a step back keeps it waiting once more, by the step.
 * Without wall deadlines each advance is one look, as before. */
static long tt_advance(struct tb_sched *s, int64_t now)
{
    struct tt *q = tt_of(s);
    long ran = 0;
    bool wall = s->wall;
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    if (wall && q->vwake > now)
        return 0; /* still in queue.wait(); after a look or a run it
                   * loops straight on, so only the first look waits */
    while (!q->stopped && q->size) {
        if (tb_task_get_state(q->heap[1].t) == TB_TASK_CANCELLED) {
            drop_zombie_head(q);
            continue;
        }
        int64_t off = wall ? atomic_load_explicit(&s->wall_offset,
                                                  memory_order_relaxed)
                           : 0;
        /* the virtual time at which the wall clock reaches the head's
         * deadline if it is not stepped again: wait(at - (vnow + off))
         * from vnow ends at at - off */
        int64_t due;
        if (__builtin_sub_overflow(q->heap[1].at, off, &due))
            due = off < 0 ? INT64_MAX : INT64_MIN;
        if (due > now) {
            q->vwake = due; /* read only on the wall clock */
            break;
        }
        /* the clock, not `now`: earlier runs may have spent time, and fixed
         * delay counts from when the task is taken */
        run_task(q, take_due(q, tb_add_sat(atomic_load_explicit(
                                                   &s->vnow,
                                                   memory_order_relaxed),
                                               off)));
        ran++;
    }
    return ran;
}

static void *timer_main(void *arg)
{
    struct tt *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->stopped) {
        if (q->size == 0) {
            pthread_cond_wait(&q->available, &q->lock);
            q->st.wakeups++;
            continue;
        }
        struct tb_task *head = q->heap[1].t;
        if (tb_task_get_state(head) == TB_TASK_CANCELLED) {
            drop_zombie_head(q);
            continue;
        }
        int64_t now = tt_clock(q);
        if (head->deadline > now) {
            /* queue.wait(executionTime - currentTime): relative, so a step
             * of the wall clock during the wait changes nothing until the
             * thread looks again */
            int64_t until = head->deadline;
            if (q->base.wall) {
                int64_t m = tb_monotonic_ns(), rel = head->deadline - now;
                until = rel > INT64_MAX - m ? INT64_MAX : m + rel;
            }
            struct timespec ts;
            tb_abstime(&ts, until);
            q->st.timed_waits++;
            pthread_cond_timedwait(&q->available, &q->lock, &ts);
            q->st.wakeups++;
            continue;
        }
        run_task(q, take_due(q, now));
    }
    tb_threads_end(&q->thread);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static int tt_start(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    pthread_mutex_lock(&q->lock);
    int rc = tb_threads_start(&q->thread, q->stopped, timer_main, q);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* ---- Timer.cancel() ---------------------------------------------------- */

static long tt_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct tt *q = tt_of(s);
    tt_lock(q);
    long n = discard(q, false, NULL, visit, ctx);
    tt_unlock(q);
    return n;
}

/* Timer has one way to stop, and it discards the queue. */
static long tt_shutdown(struct tb_sched *s)
{
    return tt_shutdown_now(s, NULL, NULL);
}

static int tt_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct tt *q = tt_of(s);
    return tb_threads_await(s, &q->thread, &q->stopped, timeout_ns);
}

static void tt_join(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    tb_threads_join(s, &q->thread);
}

/* ---- Setup and introspection ------------------------------------------- */

static int tt_configure(struct tb_config *cfg)
{
    cfg->threads = 1; /* a Timer has exactly one thread */
    return TB_OK;
}

static int tt_init(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    q->cap = TT_INITIAL_CAPACITY;
    q->vwake = INT64_MIN;
    q->heap = heap_alloc(q, q->cap, &q->heap_mem);
    if (!q->heap)
        return TB_ENOMEM;
    memset(q->heap, 0, q->cap * sizeof *q->heap);
    if (s->threaded) {
        if (tb_threads_init(s, &q->thread, 1, &q->lock,
                            (pthread_cond_t *[]){&q->available}, 1)) {
            heap_free(q);
            return TB_ENOMEM;
        }
    }
    return TB_OK;
}

static void tt_fini(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    heap_free(q);
    if (s->threaded)
        tb_threads_fini(s, &q->thread);
}

static void tt_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct tt *q = tt_of(s);
    tt_lock(q);
    *out = q->st;
    out->pending = q->size;
    tt_unlock(q);
}

/* Room for n more tasks without a doubling: TaskQueue keeps slot 0 unused
 * and one slot free after an add, so n more need size + n + 1 slots; at
 * least one doubling, as libevent's min_heap_reserve grows. */
static int tt_reserve(struct tb_sched *s, size_t n)
{
    struct tt *q = tt_of(s);
    int rc = TB_OK;
    tt_lock(q);
    size_t need = q->size + n + 1;
    if (need > q->cap) {
        size_t cap = q->cap <= SIZE_MAX / 2 / sizeof *q->heap &&
                             q->cap * 2 > need
                         ? q->cap * 2
                         : need;
        if (cap > SIZE_MAX / sizeof *q->heap - TT_LINE ||
            !heap_resize(q, cap))
            rc = TB_ENOMEM;
    }
    tt_unlock(q);
    return rc;
}

/* Timer.purge(): walk down from the last slot, move the last element into
 * every cancelled one, then heapify once if anything went. */
static long tt_purge(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    long n = 0;
    tt_lock(q);
    for (size_t i = q->size; i >= 1; i--) {
        struct tb_task *t = q->heap[i].t;
        if (tb_task_get_state(t) != TB_TASK_CANCELLED)
            continue;
        retire(q, t);
        q->heap[i] = q->heap[q->size];
        q->heap[q->size--] = (struct tt_slot){0, NULL};
        n++;
    }
    if (n)
        for (size_t i = q->size >> 1; i >= 1; i--)
            fix_down(q, i);
    q->st.zombies -= (uint64_t)n;
    q->st.purged += (uint64_t)n;
    tt_unlock(q);
    return n;
}

#define CORRUPT(...)                                                       \
    do {                                                                   \
        fprintf(stderr, "timerthread: " __VA_ARGS__);                      \
        fputc('\n', stderr);                                               \
        rc = TB_ECORRUPT;                                                  \
        goto out;                                                          \
    } while (0)

static int tt_check(struct tb_sched *s)
{
    struct tt *q = tt_of(s);
    int rc = TB_OK;
    uint64_t zombies = 0;
    bool current_queued = false;
    tt_lock(q);
    if (q->cap < TT_INITIAL_CAPACITY)
        CORRUPT("capacity %zu is below the initial 128", q->cap);
    if (q->size >= q->cap)
        CORRUPT("size %zu leaves no room in %zu slots", q->size, q->cap);
    if (q->heap[0].t)
        CORRUPT("slot 0 is used");
    for (size_t i = 1; i <= q->size; i++) {
        struct tb_task *t = q->heap[i].t;
        if (!t)
            CORRUPT("slot %zu of %zu is empty", i, q->size);
        uint32_t state = tb_task_get_state(t);
        if (state != TB_TASK_WAITING && state != TB_TASK_CANCELLED)
            CORRUPT("slot %zu holds a task in state %u", i, state);
        if (q->heap[i].at != t->deadline)
            CORRUPT("slot %zu caches %lld for a task due at %lld", i,
                    (long long)q->heap[i].at, (long long)t->deadline);
        if (i > 1 && q->heap[i >> 1].at > q->heap[i].at)
            CORRUPT("slot %zu (%lld) is earlier than its parent (%lld)", i,
                    (long long)q->heap[i].at,
                    (long long)q->heap[i >> 1].at);
        zombies += state == TB_TASK_CANCELLED;
        current_queued |= t == q->current;
    }
    for (size_t i = q->size + 1; i < q->cap; i++)
        if (q->heap[i].t)
            CORRUPT("slot %zu past the end is not cleared", i);
    if (zombies != q->st.zombies)
        CORRUPT("%llu cancelled tasks queued, %llu counted",
                (unsigned long long)zombies,
                (unsigned long long)q->st.zombies);
    if (q->current && !current_queued)
        CORRUPT("the running periodic task is not queued");
    /* every live record is queued or is a one-shot being run */
    if (s->pool.live != q->size + q->st.running)
        CORRUPT("%zu records live, %zu queued + %llu running", s->pool.live,
                q->size, (unsigned long long)q->st.running);
out:
    tt_unlock(q);
    return rc;
}

static const struct tb_backend_ops tt_ops = {
    .sched_size = sizeof(struct tt),
    .task_size = sizeof(struct tb_task),
    .configure = tt_configure,
    .init = tt_init,
    .fini = tt_fini,
    .start = tt_start,
    .schedule = tt_schedule,
    .cancel = tt_cancel,
    .schedule_virtual = tt_schedule_virtual,
    .cancel_virtual = tt_cancel_virtual,
    .pending = tt_pending,
    .advance = tt_advance,
    .shutdown = tt_shutdown,
    .shutdown_now = tt_shutdown_now,
    .await_termination = tt_await_termination,
    .join = tt_join,
    .stats = tt_stats,
    .purge = tt_purge,
    .reserve = tt_reserve,
    .check = tt_check,
};

const struct tb_backend tb_backend_timerthread = {
    .name = "timerthread",
    .description = "JDK java.util.Timer: 1-based binary heap, lazy cancel, "
                   "one timer thread",
    .caps = TB_CAP_PURGE | TB_CAP_FAIL_KILLS | TB_CAP_LAZY_CANCEL |
            TB_CAP_WALL_CLOCK,
    .ops = &tt_ops,
};
