/*
 * heapqueue — the JDK's ScheduledThreadPoolExecutor and its DelayedWorkQueue.
 *
 * Structure.  A 0-based array binary min-heap of tasks ordered by
 * (deadline, sequence number): equal deadlines run in submission order.  The
 * array starts at 16 slots and grows by half (DelayedWorkQueue.grow).  Every
 * task keeps its heap position (`index`, ScheduledFutureTask.heapIndex), so a
 * cancel with remove-on-cancel is an O(log n) removal, not an O(n) search.
 * Each slot caches its task's deadline beside the pointer (libev's ANHE), so
 * a sift compares inside the array and loads a record only on a tie or to
 * update the moved task's index: at 10^6 tasks a pointer-only heap spent
 * most of an expiry waiting on records (measured: about 7x slower).
 *
 * Complexity.  schedule O(log n) (sift-up, O(1) on average for random
 * deadlines); expiry O(log n) per task (sift-down); cancel O(1) by default —
 * the task only changes state and stays queued, counted in pending, until its
 * time comes and it is skipped (STPE's default, removeOnCancel = false) —
 * or O(log n) with TB_F_REMOVE_ON_CANCEL.
 *
 * Threads.  A pool of cfg.threads workers (default 1) takes tasks with the
 * leader-follower take() of DelayedWorkQueue: at most one worker, the leader,
 * does a timed wait for the head's deadline; the others wait untimed.  A new
 * earliest head clears the leader and signals one waiter, and a thread that
 * leaves take() with the queue not empty and no leader signals a successor
 * (only then, as take()'s finally).  TB_F_NO_LEADER makes every idle worker
 * wait timed instead, so the benchmarks can show the wake-ups the leader
 * saves.  Tasks run outside the lock.  Periodic tasks are re-queued after
 * their run: fixed rate at previous scheduled time + period (a late task
 * catches up back-to-back, never overlapping: it is not in the queue while it
 * runs), fixed delay at end of run + delay.  That re-queue is an insert,
 * refused like a schedule over max_pending or when the array cannot grow:
 * the task then retires as finished, counted in `rejected` (README,
 * DECISIONS.md D1).  A periodic task that fails (non-zero return, Java's
 * exception) stops for good; others go on.  Shutdown follows STPE's
 * policies: existing delayed one-shots still run, periodic tasks are
 * cancelled (TB_F_DROP_DELAYED_ON_SHUTDOWN / TB_F_KEEP_PERIODIC_ON_SHUTDOWN
 * switch them), tasks already cancelled leave at once, later submissions are
 * rejected.
 *
 * Virtual mode runs the same queue code in the caller's thread, without the
 * mutex and condition variable.
 *
 * Deliberate differences from the JDK.  Deadlines are int64 ns of
 * CLOCK_MONOTONIC (System.nanoTime) with overflow answered by TB_ERANGE
 * rather than clamped; a cancel of a running one-shot says "not pending"
 * (FutureTask would answer true yet let the run finish); shutdown_now does
 * not return tasks that were already cancelled (drainQueue does), so every
 * task is counted once; workers are started by tb_start() rather than lazily
 * by the first submission; the pool has a fixed size.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

#define HQ_INITIAL_CAPACITY 16

struct hq_task {
    struct tb_task base;
    uint64_t seq;
    uint32_t index;       /* the heap position (heapIndex) */
};

/* A heap slot: the task and a copy of its deadline. */
struct hq_slot {
    int64_t at;
    struct hq_task *t;
};

struct hq {
    struct tb_sched base;
    struct hq_slot *heap;
    void *heap_mem;          /* the allocation `heap` lies in */
    size_t size, cap;
    uint64_t seq;
    pthread_mutex_t lock;
    pthread_cond_t available;
    pthread_t leader;
    bool has_leader;
    bool shutdown, stopped;
    struct tb_threads workers; /* the pool: cfg.threads of them */
    struct tb_stats st;
};

static inline struct hq *hq_of(struct tb_sched *s) { return (struct hq *)s; }

static inline void hq_lock(struct hq *q)
{
    if (q->base.threaded)
        pthread_mutex_lock(&q->lock);
}

static inline void hq_unlock(struct hq *q)
{
    if (q->base.threaded)
        pthread_mutex_unlock(&q->lock);
}

/* ---- The heap ---------------------------------------------------------- */

static inline bool before(struct hq_slot a, struct hq_slot b)
{
    if (a.at != b.at)
        return a.at < b.at;
    return a.t->seq < b.t->seq;
}

static inline void place(struct hq *q, size_t i, struct hq_slot e)
{
    q->heap[i] = e;
    e.t->index = (uint32_t)i;
}

static inline struct hq_slot slot_of(struct hq_task *t)
{
    return (struct hq_slot){t->base.deadline, t};
}

/* The hole moves up from k and x is written once where it stops; each level
 * writes the parent it moved down and its index (DelayedWorkQueue.siftUp's
 * setIndex), and no other record is touched unless deadlines tie. */
static inline __attribute__((always_inline)) void
sift_up(struct hq *q, size_t k, struct hq_slot x)
{
    struct hq_slot *h = q->heap;
    uint64_t levels = 0;
    while (k > 0) {
        size_t parent = (k - 1) >> 1;
        struct hq_slot e = h[parent];
        if (!before(x, e))
            break;
        h[k] = e;
        e.t->index = (uint32_t)k;
        k = parent;
        levels++;
    }
    place(q, k, x);
    q->st.sift_levels += levels;
}

/* The hole moves down from k to the earlier child (the right one only if
 * strictly earlier, as in the JDK) while that child is earlier than x.  The
 * loop runs while both children exist, so choosing one is an add, not a
 * branch on the array bound; a last lone child is looked at once after it.
 * Inlined where a task leaves the heap (poll, remove): a call's saved
 * registers cost a third of a one-level sift. */
static inline __attribute__((always_inline)) void
sift_down(struct hq *q, size_t k, struct hq_slot x)
{
    struct hq_slot *h = q->heap, *hole = h + k;
    size_t n = q->size, child;
    uint64_t levels = 0;
    while ((child = (k << 1) + 1) + 1 < n) {
        struct hq_slot *c = h + child;
        /* the next level's pair is in this line, whichever child wins: at
         * 10^6 tasks the loads of successive levels otherwise wait on each
         * other (a hint only: past the array it does nothing) */
        __builtin_prefetch(
            (const void *)((uintptr_t)h + ((k << 2) + 3) * sizeof *h));
        int64_t l = c[0].at, r = c[1].at;
        /* equal deadlines are rare: only then are the records read */
        size_t right = __builtin_expect(l != r, 1)
                           ? (size_t)(r < l)
                           : (size_t)(c[1].t->seq < c[0].t->seq);
        c += right;
        int64_t at = c->at;
        if (__builtin_expect(at != x.at, 1) ? at > x.at
                                            : c->t->seq >= x.t->seq)
            goto out;
        struct hq_task *t = c->t;
        hole->at = at;
        hole->t = t;
        t->index = (uint32_t)k;
        hole = c;
        k = child + right;
        levels++;
    }
    if (child < n && before(h[child], x)) {
        place(q, k, h[child]);
        k = child;
        levels++;
    }
out:
    place(q, k, x);
    q->st.sift_levels += levels;
}

/* The array is placed so that slot 3 starts a cache line: the two children
 * of any slot (2k + 1, 2k + 2) then share one line, so a level of sift-down
 * reads one line of the array where a malloc'd array may put half the pairs
 * across two, and the four grandchildren (4k + 3 .. 4k + 6) fill exactly one
 * line, which sift-down prefetches a level ahead. */
#define HQ_LINE 64
#define HQ_LINE_SLOT 3

static struct hq_slot *heap_alloc(struct hq *q, size_t cap, void **mem)
{
    return tb_mem_alloc_aligned(&q->base, cap * sizeof(struct hq_slot),
                                HQ_LINE, HQ_LINE_SLOT * sizeof(struct hq_slot),
                                mem);
}

static void heap_free(struct hq *q)
{
    tb_mem_free_aligned(&q->base, q->heap_mem, q->cap * sizeof *q->heap,
                        HQ_LINE);
}

/* Moves the heap into a zeroed array of `cap` slots (cap >= size), as
 * Arrays.copyOf pads the JDK's: the new pages are touched here, in the
 * growth step (or in tb_reserve), not by the adds that later fill them. */
static bool heap_resize(struct hq *q, size_t cap)
{
    void *mem;
    struct hq_slot *h = heap_alloc(q, cap, &mem);
    if (!h)
        return false;
    memcpy(h, q->heap, q->size * sizeof *h);
    memset(h + q->size, 0, (cap - q->size) * sizeof *h);
    heap_free(q);
    q->heap = h;
    q->heap_mem = mem;
    q->cap = cap;
    return true;
}

/* DelayedWorkQueue.grow: capacity += capacity / 2. */
static bool heap_reserve(struct hq *q)
{
    if (q->size < q->cap)
        return true;
    size_t cap = q->cap + (q->cap >> 1);
    if (cap > UINT32_MAX)
        return false;
    return heap_resize(q, cap);
}

static inline __attribute__((always_inline)) void
heap_push(struct hq *q, struct hq_task *t)
{
    sift_up(q, q->size++, slot_of(t));
    if (q->size > q->st.peak_pending)
        q->st.peak_pending = q->size;
}

static struct hq_task *heap_poll(struct hq *q)
{
    struct hq_task *first = q->heap[0].t;
    struct hq_slot last = q->heap[--q->size];
    q->heap[q->size] = (struct hq_slot){0, NULL};
    if (q->size)
        sift_down(q, 0, last);
    return first;
}

/* DelayedWorkQueue.remove's re-heap, in the JDK's order: siftDown, then
 * siftUp only if siftDown left the last task in slot i.  Comparing with
 * the parent first (libevent's order) picks the same one sift and saves 7
 * instructions per cancel, but reads the parent's line for every removal
 * that siftDown moves: at 10^6 under counts 4.52 -> 4.86 LL misses.
 * Inlined into the cancels: a call of its own saved six registers on every
 * cancel, and the virtual cancel went from 162.8 to 158.6 instructions at
 * 10^3 with it inline (bench/cgops; the lazy cancel 54.0 -> 48.0). */
static inline __attribute__((always_inline)) void
heap_remove_at(struct hq *q, size_t i)
{
    struct hq_slot last = q->heap[--q->size];
    q->heap[q->size] = (struct hq_slot){0, NULL};
    if (i == q->size)
        return;
    sift_down(q, i, last);
    if (q->heap[i].t == last.t)
        sift_up(q, i, last);
}

/* After a filtering pass kept the first `kept` slots: clear the rest and
 * restore heap order bottom-up in O(n) (Floyd). */
static void compact(struct hq *q, size_t kept)
{
    for (size_t i = kept; i < q->size; i++)
        q->heap[i] = (struct hq_slot){0, NULL};
    q->size = kept;
    for (size_t i = q->size >> 1; i-- > 0;)
        sift_down(q, i, q->heap[i]);
}

/* ---- Tasks ------------------------------------------------------------- */

static void retire(struct hq *q, struct hq_task *t)
{
    tb_task_set_state(&t->base, TB_TASK_DONE);
    tb_pool_put(&q->base.pool, &t->base);
}

/* STPE.canRunInCurrentRunState. */
static bool can_run(const struct hq *q, const struct hq_task *t, int64_t now)
{
    if (!q->shutdown)
        return true;
    if (q->stopped)
        return false;
    if (t->base.period)
        return q->base.cfg.flags & TB_F_KEEP_PERIODIC_ON_SHUTDOWN;
    return !(q->base.cfg.flags & TB_F_DROP_DELAYED_ON_SHUTDOWN) ||
           t->base.deadline <= now;
}

static __attribute__((noinline)) int
schedule_slow(struct hq *q, int64_t deadline, int64_t period, tb_fn fn,
              void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    struct tb_sched *s = &q->base;
    int rc = TB_OK;
    hq_lock(q);
    if (q->shutdown) {
        rc = TB_ESHUTDOWN;
    } else if (s->cfg.max_pending && q->size >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else if (!heap_reserve(q)) {
        rc = TB_ENOMEM;
    } else {
        struct hq_task *t =
            (struct hq_task *)(void *)tb_pool_get(&s->pool, handle);
        if (!t) {
            rc = TB_ENOMEM;
        } else {
            tb_task_set(&t->base, deadline, period, fn, arg);
            t->seq = q->seq++;
            heap_push(q, t);
            q->st.submitted++;
            /* a new head: whoever leads is waiting for the wrong time */
            if (q->heap[0].t == t && q->base.threaded) {
                q->has_leader = false;
                pthread_cond_signal(&q->available);
            }
        }
    }
    if (rc)
        q->st.rejected++;
    hq_unlock(q);
    return rc;
}

/* The common case of a virtual-clock schedule, as a leaf function: a free
 * record at hand and room in the array (DelayedWorkQueue.offer without its
 * growth; no leader to wake).  Anything else (threads, shutdown,
 * max_pending, growth) takes schedule_slow, the same offer with every
 * check. */
static inline __attribute__((always_inline)) int
hq_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct hq *q = hq_of(s);
    /* virt: not shut down either (after a shutdown the core calls
     * hq_schedule instead, D48) */
    if ((!virt && (s->threaded || s->cfg.max_pending || q->shutdown)) ||
        q->size >= q->cap || s->pool.free_head == TB_POOL_NIL)
        return schedule_slow(q, deadline, period, fn, arg, handle);
    struct hq_task *t =
        (struct hq_task *)(void *)tb_pool_get_unlocked(&s->pool, handle);
    tb_task_set(&t->base, deadline, period, fn, arg);
    t->seq = q->seq++;
    heap_push(q, t);
    q->st.submitted++;
    return TB_OK;
}

static int hq_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return hq_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* hq_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int hq_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return hq_schedule_on(s, deadline, fn, arg, handle, period, true);
}

static __attribute__((noinline)) int cancel_slow(struct hq *q, tb_handle h)
{
    struct tb_sched *s = &q->base;
    int rc = 0;
    hq_lock(q);
    struct hq_task *t = (struct hq_task *)(void *)tb_pool_lookup(&s->pool, h);
    if (t) {
        uint32_t state = tb_task_get_state(&t->base);
        if (state == TB_TASK_WAITING) {
            tb_task_set_state(&t->base, TB_TASK_CANCELLED);
            q->st.cancelled++;
            rc = 1;
            if (s->cfg.flags & TB_F_REMOVE_ON_CANCEL) {
                heap_remove_at(q, t->index);
                retire(q, t);
            } else {
                q->st.zombies++;
            }
        } else if (state == TB_TASK_RUNNING && t->base.period) {
            /* stops the runs after this one; the runner retires it */
            tb_task_set_state(&t->base, TB_TASK_CANCELLED);
            q->st.cancelled++;
            rc = 1;
        }
    }
    hq_unlock(q);
    return rc;
}

/* The common case of a virtual-clock cancel, a waiting task: with no lock
 * and no other thread to see the record, a removed task goes straight back
 * to the pool without passing CANCELLED and DONE.  Anything else (threads,
 * a stale handle, a running periodic task) takes cancel_slow. */
/* roc: 1 remove-on-cancel, 0 lazy, -1 as the scheduler's flag says (a
 * constant at each call: the virtual cancels are chosen once per
 * scheduler, so the lazy one saves no registers for the removal it never
 * does) */
static inline __attribute__((always_inline)) int
hq_cancel_on(struct tb_sched *s, tb_handle h, bool virt, int roc)
{
    struct hq *q = hq_of(s);
    if (!virt && s->threaded)
        return cancel_slow(q, h);
    struct hq_task *t =
        (struct hq_task *)(void *)tb_pool_waiting_unlocked(&s->pool, h);
    if (!t)
        return cancel_slow(q, h);
    q->st.cancelled++;
    if (roc > 0 || (roc < 0 && (s->cfg.flags & TB_F_REMOVE_ON_CANCEL))) {
        heap_remove_at(q, t->index);
        tb_pool_put_handle_unlocked(&s->pool, &t->base, h);
    } else {
        /* the word was the handle with WAITING in its state bits */
        atomic_store_explicit(&t->base.gs,
                              h | (uint64_t)TB_TASK_CANCELLED
                                      << TB_TASK_STATE_SHIFT,
                              memory_order_release);
        q->st.zombies++;
    }
    return 1;
}

static int hq_cancel(struct tb_sched *s, tb_handle h)
{
    return hq_cancel_on(s, h, false, -1);
}

/* hq_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode; lazy, as the JDK's default. */
static int hq_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return hq_cancel_on(s, h, true, 0);
}

/* hq_cancel_virtual with remove-on-cancel (hq_init puts it in its place). */
static int hq_cancel_virtual_roc(struct tb_sched *s, tb_handle h)
{
    return hq_cancel_on(s, h, true, 1);
}

static size_t hq_pending(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    hq_lock(q);
    size_t n = q->size;
    hq_unlock(q);
    return n;
}

/* Takes the head off the queue for running; NULL if it was a zombie (a lazily
 * cancelled task, now dropped).  Lock held. */
static struct hq_task *take_head(struct hq *q)
{
    struct hq_task *t = heap_poll(q);
    if (tb_task_get_state(&t->base) == TB_TASK_CANCELLED) {
        q->st.zombies--;
        retire(q, t);
        return NULL;
    }
    tb_task_set_state(&t->base, TB_TASK_RUNNING);
    q->st.running++;
    return t;
}

/* Runs a taken task with the lock released, then re-queues or retires it
 * (ScheduledFutureTask.run).  Lock held on entry and exit. */
static void run_task(struct hq *q, struct hq_task *t)
{
    int64_t now = tb_clock_now(&q->base);
    if (!can_run(q, t, now)) {
        q->st.running--;
        q->st.cancelled++;
        retire(q, t);
        return;
    }
    hq_unlock(q);
    int failed = t->base.fn(t->base.arg) != 0;
    int64_t end = tb_clock_now(&q->base);
    hq_lock(q);
    q->st.running--;
    q->st.fired++;
    if (failed)
        q->st.failed++;
    /* a shutdown is seen below, after the next time (can_run) */
    if (tb_run_ends(&t->base, failed, false, &q->st)) {
        retire(q, t);
        return;
    }
    int64_t next = tb_next_deadline(t->base.deadline, t->base.period, end);
    if (next == INT64_MAX) {
        /* no next run before the clock ends; re-armed at INT64_MAX it would
         * run forever in tb_advance(INT64_MAX) */
        q->st.finished++;
        retire(q, t);
        return;
    }
    t->base.deadline = next;
    if (!can_run(q, t, end)) { /* reExecutePeriodic after shutdown */
        q->st.cancelled++;
        retire(q, t);
        return;
    }
    /* The slot the poll freed may have been taken during the run (by a
     * schedule from inside the task, or from another thread), so the re-arm
     * is a new insert and is refused like a schedule: over max_pending
     * (DECISIONS.md D1, Netty's RejectedExecutionException from newTimeout)
     * or when the array cannot grow (the JDK's OutOfMemoryError from
     * reExecutePeriodic's add, which loses the task as well).  The task ran,
     * so it retires as finished. */
    if ((q->base.cfg.max_pending && q->size >= q->base.cfg.max_pending) ||
        !heap_reserve(q)) {
        q->st.rejected++;
        q->st.finished++;
        retire(q, t);
        return;
    }
    tb_task_set_state(&t->base, TB_TASK_WAITING);
    heap_push(q, t);
    if (q->heap[0].t == t && q->base.threaded) {
        q->has_leader = false;
        pthread_cond_signal(&q->available);
    }
}

static long hq_advance(struct tb_sched *s, int64_t now)
{
    struct hq *q = hq_of(s);
    long ran = 0;
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    while (q->size && q->heap[0].at <= now) {
        struct hq_task *t = take_head(q);
        if (!t)
            continue;
        uint64_t fired = q->st.fired;
        run_task(q, t);
        ran += (long)(q->st.fired - fired);
    }
    return ran;
}

/* ---- Threaded mode: the worker pool ------------------------------------ */

static void timed_wait(struct hq *q, int64_t deadline)
{
    struct timespec ts;
    tb_abstime(&ts, deadline);
    q->st.timed_waits++;
    pthread_cond_timedwait(&q->available, &q->lock, &ts);
    q->st.wakeups++;
}

static void untimed_wait(struct hq *q)
{
    pthread_cond_wait(&q->available, &q->lock);
    q->st.wakeups++;
}

/* DelayedWorkQueue.take() plus ThreadPoolExecutor.getTask()'s exit rule:
 * returns a task ready to run, or NULL when the worker should exit.  Lock
 * held. */
static struct hq_task *take(struct hq *q)
{
    bool leader_mode = !(q->base.cfg.flags & TB_F_NO_LEADER);
    pthread_t self = pthread_self();
    for (;;) {
        if (q->stopped || (q->shutdown && q->size == 0))
            return NULL;
        if (q->size == 0) {
            untimed_wait(q);
            continue;
        }
        int64_t deadline = q->heap[0].at;
        if (deadline <= tb_monotonic_ns()) {
            struct hq_task *t = take_head(q);
            /* take()'s finally: the only place a leaving thread hands the
             * timed wait on (a zombie is returned and run by the JDK, so it
             * leaves take() too) */
            if (leader_mode && !q->has_leader && q->size)
                pthread_cond_signal(&q->available);
            if (t)
                return t;
            continue;
        }
        if (!leader_mode) {
            timed_wait(q, deadline);
        } else if (q->has_leader) {
            untimed_wait(q);
        } else {
            q->has_leader = true;
            q->leader = self;
            timed_wait(q, deadline);
            if (q->has_leader && pthread_equal(q->leader, self))
                q->has_leader = false;
            /* no signal here: this thread loops and either takes the head
             * (and signals a successor on its way out, as take()'s finally
             * does) or leads again; a signal now would wake a follower only
             * to find this thread leading (a third wake-up per task) */
        }
    }
}

static void *worker_main(void *arg)
{
    struct hq *q = arg;
    pthread_mutex_lock(&q->lock);
    struct hq_task *t;
    while ((t = take(q)))
        run_task(q, t);
    tb_threads_end(&q->workers);
    pthread_cond_broadcast(&q->available); /* let the others see the exit */
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static int hq_start(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    pthread_mutex_lock(&q->lock);
    int rc = tb_threads_start(&q->workers, q->shutdown, worker_main, q);
    if (rc == TB_ENOMEM) { /* stop the ones that did start */
        q->stopped = q->shutdown = true;
        pthread_cond_broadcast(&q->available);
    }
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* ---- Shutdown ---------------------------------------------------------- */

/* STPE.onShutdown: remove what the policies say must not run, and zombies. */
static long hq_shutdown(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    long dropped = 0;
    hq_lock(q);
    if (!q->shutdown) {
        q->shutdown = true;
        bool keep_delayed = !(s->cfg.flags & TB_F_DROP_DELAYED_ON_SHUTDOWN);
        bool keep_periodic = s->cfg.flags & TB_F_KEEP_PERIODIC_ON_SHUTDOWN;
        int64_t now = tb_clock_now(s);
        size_t j = 0;
        for (size_t i = 0; i < q->size; i++) {
            struct hq_task *t = q->heap[i].t;
            bool zombie = tb_task_get_state(&t->base) == TB_TASK_CANCELLED;
            bool keep = t->base.period ? keep_periodic
                                       : keep_delayed || t->base.deadline <= now;
            if (!zombie && keep) {
                place(q, j++, q->heap[i]);
                continue;
            }
            if (zombie) {
                q->st.zombies--;
            } else if (t->base.period) {
                q->st.cancelled++; /* STPE cancels periodic tasks */
            } else {
                q->st.dropped++;
                dropped++;
            }
            retire(q, t);
        }
        compact(q, j);
        if (q->base.threaded)
            pthread_cond_broadcast(&q->available);
    }
    hq_unlock(q);
    return dropped;
}

static long hq_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct hq *q = hq_of(s);
    long n = 0;
    hq_lock(q);
    q->shutdown = q->stopped = true;
    while (q->size) {
        struct hq_task *t = q->heap[--q->size].t;
        q->heap[q->size] = (struct hq_slot){0, NULL};
        if (tb_task_get_state(&t->base) == TB_TASK_CANCELLED) {
            q->st.zombies--;
        } else {
            if (visit)
                visit(ctx, tb_pool_handle(&s->pool, &t->base), t->base.fn,
                      t->base.arg);
            q->st.dropped++;
            n++;
        }
        retire(q, t);
    }
    if (q->base.threaded)
        pthread_cond_broadcast(&q->available);
    hq_unlock(q);
    return n;
}

static int hq_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct hq *q = hq_of(s);
    return tb_threads_await(s, &q->workers, &q->shutdown, timeout_ns);
}

static void hq_join(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    tb_threads_join(s, &q->workers);
}

/* ---- Setup and introspection ------------------------------------------- */

static int hq_configure(struct tb_config *cfg)
{
    if (cfg->threads == 0)
        cfg->threads = 1;
    if (cfg->threads > 1024)
        return TB_EINVAL;
    return TB_OK;
}

static int hq_init(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    q->cap = HQ_INITIAL_CAPACITY;
    q->heap = heap_alloc(q, q->cap, &q->heap_mem);
    if (!q->heap)
        return TB_ENOMEM;
    /* the policy is fixed at creation: tested once, here */
    if (!s->threaded && (s->cfg.flags & TB_F_REMOVE_ON_CANCEL))
        s->cancel = hq_cancel_virtual_roc;
    if (s->threaded &&
        tb_threads_init(s, &q->workers, s->cfg.threads, &q->lock,
                        (pthread_cond_t *[]){&q->available}, 1)) {
        heap_free(q);
        return TB_ENOMEM;
    }
    return TB_OK;
}

static void hq_fini(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    heap_free(q);
    if (s->threaded)
        tb_threads_fini(s, &q->workers);
}

static void hq_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct hq *q = hq_of(s);
    hq_lock(q);
    *out = q->st;
    out->pending = q->size;
    hq_unlock(q);
}

/* Room for n more tasks without a growth step; at least one step of the
 * original's own growth, as libevent's min_heap_reserve does. */
static int hq_reserve(struct tb_sched *s, size_t n)
{
    struct hq *q = hq_of(s);
    int rc = TB_OK;
    hq_lock(q);
    if (n > q->cap - q->size) {
        size_t need = q->size + n, step = q->cap + (q->cap >> 1);
        size_t cap = step > need && step <= UINT32_MAX ? step : need;
        if (cap > UINT32_MAX || !heap_resize(q, cap))
            rc = TB_ENOMEM; /* heap positions are 32 bits */
    }
    hq_unlock(q);
    return rc;
}

/* ThreadPoolExecutor.purge(): drop the cancelled tasks still queued, then
 * restore heap order in O(n). */
static long hq_purge(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    long n = 0;
    hq_lock(q);
    size_t j = 0;
    for (size_t i = 0; i < q->size; i++) {
        struct hq_task *t = q->heap[i].t;
        if (tb_task_get_state(&t->base) == TB_TASK_CANCELLED) {
            retire(q, t);
            n++;
        } else {
            place(q, j++, q->heap[i]);
        }
    }
    compact(q, j);
    q->st.zombies -= (uint64_t)n;
    q->st.purged += (uint64_t)n;
    hq_unlock(q);
    return n;
}

static int hq_check(struct tb_sched *s)
{
    struct hq *q = hq_of(s);
    int rc = TB_OK;
    uint64_t zombies = 0;
    hq_lock(q);
    if (q->size > q->cap) {
        fprintf(stderr, "heapqueue: size %zu > capacity %zu\n", q->size,
                q->cap);
        rc = TB_ECORRUPT;
    }
    for (size_t i = 0; !rc && i < q->size; i++) {
        struct hq_task *t = q->heap[i].t;
        uint32_t state = tb_task_get_state(&t->base);
        if (q->heap[i].at != t->base.deadline) {
            fprintf(stderr, "heapqueue: slot %zu caches a stale deadline\n",
                    i);
            rc = TB_ECORRUPT;
        } else if (t->index != i) {
            fprintf(stderr, "heapqueue: slot %zu holds index %u\n", i,
                    t->index);
            rc = TB_ECORRUPT;
        } else if (i && before(q->heap[i], q->heap[(i - 1) >> 1])) {
            fprintf(stderr, "heapqueue: slot %zu precedes its parent\n", i);
            rc = TB_ECORRUPT;
        } else if (state != TB_TASK_WAITING && state != TB_TASK_CANCELLED) {
            fprintf(stderr, "heapqueue: slot %zu in state %u\n", i, state);
            rc = TB_ECORRUPT;
        }
        zombies += state == TB_TASK_CANCELLED;
    }
    if (!rc && zombies != q->st.zombies) {
        fprintf(stderr, "heapqueue: %llu cancelled queued, counted %llu\n",
                (unsigned long long)zombies,
                (unsigned long long)q->st.zombies);
        rc = TB_ECORRUPT;
    }
    hq_unlock(q);
    return rc;
}

static const struct tb_backend_ops hq_ops = {
    .sched_size = sizeof(struct hq),
    .task_size = sizeof(struct hq_task),
    .configure = hq_configure,
    .init = hq_init,
    .fini = hq_fini,
    .start = hq_start,
    .schedule = hq_schedule,
    .cancel = hq_cancel,
    .schedule_virtual = hq_schedule_virtual,
    .cancel_virtual = hq_cancel_virtual,
    .pending = hq_pending,
    .advance = hq_advance,
    .shutdown = hq_shutdown,
    .shutdown_now = hq_shutdown_now,
    .await_termination = hq_await_termination,
    .join = hq_join,
    .stats = hq_stats,
    .purge = hq_purge,
    .reserve = hq_reserve,
    .check = hq_check,
};

const struct tb_backend tb_backend_heapqueue = {
    .name = "heapqueue",
    .description = "JDK ScheduledThreadPoolExecutor: array binary heap, "
                   "leader-follower worker pool",
    .caps = TB_CAP_FIFO_TIES | TB_CAP_PURGE | TB_CAP_LAZY_CANCEL,
    .ops = &hq_ops,
};
