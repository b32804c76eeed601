/*
 * quadheap — the Go runtime's timers (src/runtime/time.go, Go 1.24: the
 * per-P `timers` set of Go 1.23 onwards, here at golang/go 2297c34).
 *
 * Structure.  A 4-ary min-heap (timerHeapN = 4): the children of slot i are
 * 4i+1 .. 4i+4, the parent of i is (i-1)/4.  Each slot is Go's timerWhen, the
 * timer pointer with its deadline inline, so sifting compares inside the
 * array and never loads a timer record.  A wider heap is half as deep as a
 * binary one: a sift-down does log4 n levels of up to four compares, and the
 * four children of a slot fill exactly one cache line (the array is placed
 * so), so each level costs one line where a binary heap's two levels cost
 * two.  Equal deadlines have no tie-break (siftUp stops on >=, siftDown takes
 * the first strictly earlier child), so they do not run in submission order.
 * The array grows as a Go slice grows on append (twice the capacity below
 * 256 slots, then by a quarter plus 192) and never shrinks.  Timers keep no
 * heap index: Go never removes a timer from the middle of the heap.
 *
 * Lazy deletion (timer.stop).  Stopping a timer only marks it a zombie
 * (counted in `zombies` and in pending: TB_CAP_LAZY_CANCEL).  A zombie leaves
 * the heap when it reaches the top (updateHeap, from run or cleanHead), when
 * it is the last slot as a schedule cleans the heap's ends (cleanHead, in
 * maybeAdd), or in one pass over the whole heap (timers.adjust with force)
 * that a check does once zombies exceed a quarter of the heap
 * (zombies > ts.len/4, integer division as Go's); that pass removes every
 * zombie, writes every modified deadline into its slot and re-heapifies in
 * O(n) (initHeap).  ts.len is the heap's length as the last unlock of the
 * timers stored it (a schedule, a run, the end of a check), not the live
 * length: zombies that leave at the head during a check do not lower the
 * threshold of that check's clean-up.  The check's gate: before wakeTime()
 * and with zombies at most a quarter of ts.len it returns at once, so a
 * stopped head that is not due stays in the heap (and in pending), and a
 * head reset later keeps its old slot, until a check is due or forced.
 *
 * Reset (timer.modify, tb_reschedule).  The new time goes into the record at
 * once and the slot keeps the old one: the slot is "modified" (here: its
 * inline deadline differs from the record's, which is Go's timerModified bit
 * without the bit).  minWhenModified keeps a lower bound of the modified
 * records' times.  A reset to a later time is fixed when its old slot
 * surfaces at the top (updateHeap writes the new time there and sifts it
 * down) or by the next adjust pass.  A reset to an earlier time cannot wait
 * for its slot to surface, so the check that reaches minWhenModified runs
 * adjust over the whole heap before running timers: in Go 1.24 an earlier
 * reset is applied when it falls due, by one O(n) pass for all of them, not
 * at the moment of the reset (Go <= 1.13 deleted and re-added the timer;
 * Go 1.14 to 1.22 had separate timerModifiedEarlier/Later states and the
 * same pass, adjusttimers).
 *
 * Runs (timer.unlockAndRun).  A one-shot leaves the heap before its run (it
 * becomes a zombie at the top and updateHeap deletes it at once), so
 * stopping it while it runs answers 0.  A Ticker (fixed rate) stays in the
 * heap with its next time set before the run: next = when + period *
 * (1 + delay / period) with delay = now - when, the next point of its grid
 * after now: missed periods are skipped (TB_CAP_SKIP_MISSED), never run back
 * to back as the JDK's catch-up does.  The division runs only for a run late
 * by a period or more; on time it is when + period.  Go has no fixed-delay
 * timer; the closest is a time.AfterFunc whose function first calls
 * t.Reset(d): next = the start of the run + d.  It is re-armed the way a
 * Ticker is (in place, before the run) rather than deleted and added again.
 *
 * One heap per scheduler: Go keeps one per P (and moves a dead P's timers to
 * another); a scheduler here is one P.  Virtual mode: tb_advance() is one
 * timers.check(now): the gate, adjust if a modified timer is due, run every
 * due timer with the one `now` of the check (a Ticker's grid is reckoned
 * from it), then the forced clean-up when zombies exceed a quarter of
 * ts.len.  A task that
 * resets another timer to a time already passed gets a further adjust and
 * run in the same advance (Go's P would check again at once; the interface
 * promises every due task runs in the advance).  Threaded mode: one thread
 * plays the P's scheduler loop: it runs check, then sleeps until
 * wakeTime() = min(heap[0].when, minWhenModified); a schedule or reset that
 * makes an earlier wake time signals it (wakeNetPoller), and so does the
 * cancel that takes the zombies past a quarter of the heap, since Go's P
 * that stops timers cleans them at its next check.  Tasks run with the lock
 * released, one at a time.
 *
 * Complexity.  schedule O(log4 n) sift-up (O(1) on average for random
 * deadlines) plus cleanHead, which looks at the last slot's and the head's
 * records; cancel O(1); reset O(1), its fix O(log4 n) when it surfaces or
 * O(n) shared by all in an adjust pass; expiry O(log4 n) per run (four
 * compares a level).
 *
 * Deliberate differences from Go.
 *   - Timers are records of the shared pool, addressed by handle, not
 *     caller-owned structs; a stopped or fired timer cannot be Reset back to
 *     life: its handle is no longer pending and tb_reschedule answers 0
 *     (Go's Reset would re-add it and answer false).
 *   - tb_reschedule refuses a periodic task (TB_EINVAL, the interface's
 *     rule); Go's Ticker.Reset would change its period.
 *   - No channel timers (the Go 1.23 unbuffered timer channels, blocked /
 *     isSending / sendLock, asynctimerchan), no synctest fake time, no
 *     netpoller, no lock per timer: one scheduler lock in threaded mode.
 *   - A failing task (non-zero return) is counted and the others go on; a
 *     periodic one stops (it stays a zombie until cleaned) — in Go a panic
 *     in a timer function ends the program.
 *   - tb_shutdown / tb_shutdown_now drop every pending timer; the Go runtime
 *     has no such call.
 *   - Deadlines may be 0 (Go's `when` is always > 0 and 0 means stopped);
 *     a stopped timer is told by its state, not by when == 0.
 *   - The heap slice starts empty and grows by append's rule without the
 *     rounding to malloc size classes.
 *
 * max_pending (DECISIONS.md D1): pending is the heap's length, zombies
 * included (Go's ts.len); a periodic task stays in the heap during its run,
 * so its re-arm is never refused and a schedule from inside the run can get
 * TB_EFULL.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

/* timerWhen: the deadline beside the pointer. */
struct qh_slot {
    int64_t when;
    struct tb_task *t;
};

struct qh {
    struct tb_sched base;
    struct qh_slot *heap;     /* heap[0 .. len-1] */
    void *heap_mem;           /* the allocation `heap` lies in, or NULL */
    size_t len, cap;
    /* ts.len: the heap's length as the last unlock of the timers left it
     * (timers.unlock stores it; a schedule, a run, the end of a check).
     * The clean-up threshold compares zombies with this, not with the live
     * length, so zombies removed at the head during a check do not lower
     * it. */
    size_t ts_len;
    size_t zombies;           /* ts.zombies */
    /* ts.minWhenModified: a lower bound of the record times of modified
     * slots, valid while has_modified (Go's 0 means none; 0 is a valid
     * deadline here) */
    int64_t min_modified;
    bool has_modified;
    /* the periodic task whose run is in progress (still in the heap), or
     * NULL */
    struct tb_task *current;
    pthread_mutex_t lock;
    pthread_cond_t wake;       /* the thread's sleep: new earlier wake time,
                                  zombies to clean, shutdown */
    struct tb_threads thread;  /* the timer thread */
    /* while the thread sleeps: the time it sleeps until (INT64_MAX for an
     * untimed wait); INT64_MIN while it is awake and will look again */
    int64_t sleep_until;
    bool clean_asked;          /* a cancel signalled the sleeper to clean */
    bool stopped;
    struct tb_stats st;
};

static inline struct qh *qh_of(struct tb_sched *s) { return (struct qh *)s; }

static inline void qh_lock(struct qh *q)
{
    if (q->base.threaded)
        pthread_mutex_lock(&q->lock);
}

static inline void qh_unlock(struct qh *q)
{
    if (q->base.threaded)
        pthread_mutex_unlock(&q->lock);
}

static inline bool is_zombie(const struct tb_task *t)
{
    return tb_task_get_state(t) == TB_TASK_CANCELLED;
}

/* ---- The 4-ary heap ---------------------------------------------------- */

/* timers.siftUp: the hole moves up while the parent is later; the entry is
 * written once where it stops. */
static void sift_up(struct qh *q, size_t i)
{
    struct qh_slot *h = q->heap;
    struct qh_slot e = h[i];
    uint64_t levels = 0;
    while (i > 0) {
        size_t p = (i - 1) >> 2;
        if (e.when >= h[p].when)
            break;
        h[i] = h[p];
        i = p;
        levels++;
    }
    h[i] = e;
    q->st.sift_levels += levels;
}

/* timers.siftDown: the hole moves to the earliest of up to four children
 * (the first of equal ones, as Go's loop keeps the first strictly earlier)
 * while it is earlier than the entry.  With all four children present the
 * minimum is a tournament of three compares without a branch on the bound;
 * a last partial family is scanned once after the loop. */
static void sift_down(struct qh *q, size_t i)
{
    struct qh_slot *h = q->heap;
    size_t n = q->len, c;
    struct qh_slot e = h[i];
    uint64_t levels = 0;
    while ((c = (i << 2) + 1) + 3 < n) {
        const struct qh_slot *k = h + c;
        size_t a = k[1].when < k[0].when;
        size_t b = 2 + (k[3].when < k[2].when);
        size_t m = k[b].when < k[a].when ? b : a;
        if (k[m].when >= e.when)
            goto out;
        h[i] = k[m];
        i = c + m;
        levels++;
    }
    if (c < n) {
        size_t m = c;
        for (size_t j = c + 1; j < n; j++)
            if (h[j].when < h[m].when)
                m = j;
        if (h[m].when < e.when) {
            h[i] = h[m];
            i = m;
            levels++;
        }
    }
out:
    h[i] = e;
    q->st.sift_levels += levels;
}

/* timers.initHeap: bottom-up in O(n), from the parent of the last slot. */
static void init_heap(struct qh *q)
{
    if (q->len <= 1)
        return;
    for (size_t i = (q->len - 2) >> 2 ;; i--) {
        sift_down(q, i);
        if (i == 0)
            break;
    }
}

/* The array is placed so that slot 1 starts a cache line: the four children
 * of any slot (4i+1 .. 4i+4, 16 bytes each) then fill exactly one line, so
 * a level of sift-down reads one line. */
#define QH_LINE 64
#define QH_LINE_SLOT 1

static bool heap_resize(struct qh *q, size_t cap)
{
    if (cap > SIZE_MAX / sizeof *q->heap - QH_LINE)
        return false;
    void *mem;
    struct qh_slot *h = tb_mem_alloc_aligned(
        &q->base, cap * sizeof *h, QH_LINE, QH_LINE_SLOT * sizeof *h, &mem);
    if (!h)
        return false;
    if (q->len)
        memcpy(h, q->heap, q->len * sizeof *h);
    memset(h + q->len, 0, (cap - q->len) * sizeof *h);
    if (q->heap_mem)
        tb_mem_free_aligned(&q->base, q->heap_mem, q->cap * sizeof *q->heap,
                            QH_LINE);
    q->heap = h;
    q->heap_mem = mem;
    q->cap = cap;
    return true;
}

/* append's growth (runtime.growslice, Go 1.20 on): double below 256, then
 * grow by a quarter plus 192, smoothly from doubling to 1.25x. */
static size_t grown_cap(size_t cap, size_t need)
{
    size_t c = cap ? cap : 1;
    while (c < need) {
        size_t step = c < 256 ? c : (c + 3 * 256) >> 2;
        if (c > SIZE_MAX - step)
            return need;
        c += step;
    }
    return c;
}

/* Room for one more slot, before a record is taken, so that a failed
 * allocation leaves nothing half-inserted. */
static bool heap_reserve(struct qh *q)
{
    return q->len < q->cap || heap_resize(q, grown_cap(q->cap, q->len + 1));
}

/* ---- Records ----------------------------------------------------------- */

static void retire(struct qh *q, struct tb_task *t)
{
    if (t == q->current)
        q->current = NULL;
    tb_task_set_state(t, TB_TASK_DONE);
    tb_pool_put(&q->base.pool, t);
}

/* Drops slot i's zombie by moving the last slot into it, without restoring
 * order (the callers do, or it is the last slot). */
static void drop_zombie_at(struct qh *q, size_t i)
{
    struct tb_task *t = q->heap[i].t;
    q->heap[i] = q->heap[--q->len];
    q->heap[q->len] = (struct qh_slot){0, NULL};
    q->zombies--;
    retire(q, t);
}

/* timers.deleteMin. */
static void delete_min(struct qh *q)
{
    q->heap[0] = q->heap[--q->len];
    q->heap[q->len] = (struct qh_slot){0, NULL};
    if (q->len > 1)
        sift_down(q, 0);
    if (!q->len)
        q->has_modified = false; /* no timers, so none modified */
}

/* timer.updateHeap on the head: a zombie leaves, a modified slot takes its
 * record's time and sinks.  False if the head needed nothing. */
static bool update_head(struct qh *q)
{
    struct tb_task *t = q->heap[0].t;
    if (is_zombie(t)) {
        delete_min(q);
        q->zombies--;
        retire(q, t);
        return true;
    }
    if (q->heap[0].when != t->deadline) {
        q->heap[0].when = t->deadline;
        sift_down(q, 0);
        return true;
    }
    return false;
}

/* timers.cleanHead (every add goes through it, in maybeAdd): zombies at the
 * end of the array leave without any sifting, which also makes the slot
 * that replaces a head zombie less likely to be one; then the head is fixed
 * until it needs nothing. */
static void clean_ends(struct qh *q)
{
    while (q->len) {
        if (is_zombie(q->heap[q->len - 1].t)) {
            drop_zombie_at(q, q->len - 1);
            continue;
        }
        if (!update_head(q))
            return;
    }
}

/* Whether cleanHead has anything to do: a zombie last, or a head that is a
 * zombie or modified. */
static inline bool ends_dirty(const struct qh *q)
{
    return q->len && (is_zombie(q->heap[q->len - 1].t) ||
                      is_zombie(q->heap[0].t) ||
                      q->heap[0].when != q->heap[0].t->deadline);
}

static inline void clean_head(struct qh *q)
{
    if (ends_dirty(q))
        clean_ends(q);
}

/* timers.adjust: when forced, or when the earliest modified time is due,
 * one pass over every slot removes the zombies and writes the modified
 * times, then the heap is rebuilt once if anything changed.  Every slot's
 * record is read (Go's t.astate load): `visits` counts them. */
static void adjust(struct qh *q, int64_t now, bool force)
{
    if (!force && (!q->has_modified || q->min_modified > now))
        return;
    q->has_modified = false;
    bool changed = false;
    q->st.visits += q->len;
    for (size_t i = 0; i < q->len; i++) {
        struct qh_slot *e = &q->heap[i];
        struct tb_task *t = e->t;
        if (is_zombie(t)) {
            drop_zombie_at(q, i);
            i--;
            changed = true;
        } else if (e->when != t->deadline) {
            e->when = t->deadline;
            changed = true;
        }
    }
    if (changed)
        init_heap(q);
}

/* ---- Schedule, cancel, reset ------------------------------------------- */

/* Signals the sleeping thread if `when` is before the time it sleeps to
 * (wakeNetPoller).  Lock held. */
static inline void wake_for(struct qh *q, int64_t when)
{
    if (q->base.threaded && when < q->sleep_until)
        pthread_cond_signal(&q->wake);
}

/* Fills a record taken from the pool and adds it (timers.addHeap). */
static inline void add_heap(struct qh *q, struct tb_task *t, int64_t deadline,
                            int64_t period, tb_fn fn, void *arg)
{
    tb_task_set(t, deadline, period, fn, arg);
    q->heap[q->len] = (struct qh_slot){deadline, t};
    sift_up(q, q->len++);
    if (q->len > q->st.peak_pending)
        q->st.peak_pending = q->len;
    q->st.submitted++;
}

/* timer.maybeAdd + timers.addHeap, the general path: locks, cleans the
 * heap's ends, grows the slice and the pool, refuses. */
static __attribute__((noinline)) int schedule_slow(
    struct tb_sched *s, int64_t deadline, int64_t period, tb_fn fn,
    void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    struct qh *q = qh_of(s);
    int rc = TB_OK;
    qh_lock(q);
    if (q->stopped) {
        rc = TB_ESHUTDOWN;
        goto out;
    }
    clean_head(q);
    if (s->cfg.max_pending && q->len >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else if (!heap_reserve(q)) {
        rc = TB_ENOMEM;
    } else {
        struct tb_task *t = tb_pool_get(&s->pool, handle);
        if (!t) {
            rc = TB_ENOMEM;
        } else {
            add_heap(q, t, deadline, period, fn, arg);
            wake_for(q, deadline);
        }
    }
out:
    if (rc)
        q->st.rejected++;
    q->ts_len = q->len; /* ts.unlock */
    qh_unlock(q);
    return rc;
}

/* The schedule of the virtual clock with nothing to clean, grow or refuse:
 * no lock and no growth to prepare for, the general path a tail call away
 * (7 instructions of 152 per add under cgops, measured before the store of
 * ts.len was added: one more store since, not measured again). */
static inline __attribute__((always_inline)) int
qh_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct qh *q = qh_of(s);
    /* virt: not stopped either (after a shutdown the core calls
     * qh_schedule instead, D48) */
    if (__builtin_expect((!virt && (s->threaded || q->stopped)) || q->len == q->cap ||
                             s->pool.free_head == TB_POOL_NIL ||
                             (!virt && s->cfg.max_pending &&
                              q->len >= s->cfg.max_pending),
                         0))
        return schedule_slow(s, deadline, period, fn, arg, handle);
    if (ends_dirty(q))
        return schedule_slow(s, deadline, period, fn, arg, handle);
    add_heap(q, tb_pool_get_unlocked(&s->pool, handle), deadline, period, fn,
             arg);
    q->ts_len = q->len; /* ts.unlock */
    return TB_OK;
}

static int qh_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return qh_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* qh_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int qh_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return qh_schedule_on(s, deadline, fn, arg, handle, period, true);
}

/* timer.stop (deltimer): marks only.  Lock held, or `virt` (a constant:
 * the virtual path then makes no call at all). */
static inline __attribute__((always_inline)) int
cancel_locked(struct qh *q, tb_handle h, bool virt)
{
    /* WAITING: in the heap (a one-shot waiting, or a periodic task even
     * during its run); a running one-shot is RUNNING and left the heap */
    if (!tb_pool_mark_cancelled(&q->base.pool, h, virt))
        return 0;
    q->zombies++;
    q->st.cancelled++;
    if (!virt && q->zombies > q->ts_len >> 2 && !q->clean_asked &&
        q->sleep_until != INT64_MIN) {
        q->clean_asked = true;
        pthread_cond_signal(&q->wake);
    }
    return 1;
}

static __attribute__((noinline)) int cancel_threaded(struct qh *q,
                                                     tb_handle h)
{
    pthread_mutex_lock(&q->lock);
    int rc = cancel_locked(q, h, false);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

static int qh_cancel(struct tb_sched *s, tb_handle h)
{
    struct qh *q = qh_of(s);
    if (s->threaded)
        return cancel_threaded(q, h);
    return cancel_locked(q, h, true);
}

/* qh_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int qh_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_locked(qh_of(s), h, true);
}

/* timer.modify (Timer.Reset) on a waiting one-shot: the record takes the
 * new time, the slot keeps the old one until it is fixed. */
static int qh_reschedule(struct tb_sched *s, tb_handle h, int64_t deadline)
{
    struct qh *q = qh_of(s);
    int rc = 0;
    qh_lock(q);
    struct tb_task *t = tb_pool_lookup(&s->pool, h);
    if (q->stopped) {
        rc = TB_ESHUTDOWN;
    } else if (t && tb_task_get_state(t) == TB_TASK_WAITING) {
        if (t->period) {
            rc = TB_EINVAL;
        } else {
            t->deadline = deadline;
            if (!q->has_modified || deadline < q->min_modified) {
                q->has_modified = true;
                q->min_modified = deadline;
                wake_for(q, deadline);
            }
            rc = 1;
        }
    }
    qh_unlock(q);
    return rc;
}

static size_t qh_pending(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    qh_lock(q);
    size_t n = q->len;
    qh_unlock(q);
    return n;
}

/* ---- timers.check and timers.run --------------------------------------- */

/* A Ticker's next time after a run at `now`: the next point of its grid
 * after now; INT64_MAX when that reaches the end of the clock (the task
 * then has no next run). */
static int64_t ticker_next(int64_t when, int64_t period, int64_t now)
{
    int64_t late = now - when;
    int64_t k = late < period ? 1 : 1 + late / period;
    int64_t step;
    if (__builtin_mul_overflow(period, k, &step) || step >= INT64_MAX - when)
        return INT64_MAX;
    return when + step;
}

/* timer.unlockAndRun: the head is due and clean.  A one-shot (or a
 * periodic task without a next run) leaves the heap first; a periodic one
 * gets its next time in place.  The task runs with the lock released; a
 * periodic record may be cleaned (and even reused) meanwhile, so nothing of
 * it is read afterwards unless q->current still names it. */
static void run_head(struct qh *q, int64_t now)
{
    struct tb_task *t = q->heap[0].t;
    int64_t next = INT64_MAX;
    if (t->period > 0)
        next = ticker_next(t->deadline, t->period, now);
    else if (t->period < 0)
        next = tb_next_deadline(t->deadline, t->period,
                                tb_clock_now(&q->base));
    tb_fn fn = t->fn;
    void *arg = t->arg;
    bool periodic = next != INT64_MAX;
    if (periodic) {
        t->deadline = next;
        q->heap[0].when = next;
        sift_down(q, 0);
        q->current = t;
    } else {
        t->period = 0;
        delete_min(q);
        tb_task_set_state(t, TB_TASK_RUNNING);
        q->st.running++;
    }
    q->ts_len = q->len; /* ts.unlock in unlockAndRun */
    qh_unlock(q);
    bool failed = fn(arg) != 0;
    qh_lock(q);
    q->st.fired++;
    if (failed)
        q->st.failed++;
    if (!periodic) {
        q->st.running--;
        q->st.finished++;
        retire(q, t);
    } else if (failed && q->current == t && !is_zombie(t)) {
        /* a failing periodic task stops: it ran, so it is finished, and it
         * leaves the heap as zombies do */
        tb_task_set_state(t, TB_TASK_CANCELLED);
        q->zombies++;
        q->st.finished++;
    }
    q->current = NULL;
}

/* timers.run: false when the head is not due (or there is none), else the
 * head was cleaned or run. */
static bool run_one(struct qh *q, int64_t now, long *ran)
{
    for (;;) {
        if (!q->len)
            return false;
        if (update_head(q))
            continue;
        if (q->heap[0].when > now)
            return false;
        run_head(q, now);
        ++*ran;
        return true;
    }
}

/* ts.wakeTime(): the head's time or the earliest modified one, whichever
 * is first; INT64_MAX for none. */
static int64_t wake_time(const struct qh *q)
{
    int64_t w = q->len ? q->heap[0].when : INT64_MAX;
    if (q->has_modified && q->min_modified < w)
        w = q->min_modified;
    return w;
}

/* The forced clean-up's condition: zombies > ts.len / 4, ts.len as the
 * last unlock stored it (integer division, as Go's). */
static inline bool too_many_zombies(const struct qh *q)
{
    return q->zombies > q->ts_len >> 2;
}

/* timers.check(now): returns the runs.  Its gate first: before the wake
 * time, and with zombies at most a quarter of ts.len, it returns at once
 * and touches nothing, so a stopped or reset head stays in place (a
 * zombie still counts in pending) until a check is due or forced. */
static long check(struct qh *q, int64_t now)
{
    long ran = 0;
    if (!q->len && !q->has_modified) { /* wakeTime() == 0: no timers */
        q->clean_asked = false;
        return 0;
    }
    if (now < wake_time(q) && !too_many_zombies(q)) {
        q->clean_asked = false;
        return 0;
    }
    do {
        adjust(q, now, false);
        while (!q->stopped && run_one(q, now, &ran))
            ;
        /* a task reset another to a time already passed: Go's P checks
         * again; the interface wants it run in this advance */
    } while (!q->stopped && q->has_modified && q->min_modified <= now);
    /* force is computed again after the runs, still against ts.len: a run
     * stored the length it left, the zombies met at the head since then do
     * not lower it */
    if (!q->stopped && too_many_zombies(q))
        adjust(q, now, true);
    q->ts_len = q->len; /* ts.unlock */
    q->clean_asked = false;
    return ran;
}

static long qh_advance(struct tb_sched *s, int64_t now)
{
    struct qh *q = qh_of(s);
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    return check(q, now);
}

/* The P's scheduler loop, as far as timers go: check, then sleep in the
 * poller until the wake time. */
static void *timer_main(void *arg)
{
    struct qh *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->stopped) {
        check(q, tb_monotonic_ns());
        if (q->stopped)
            break;
        int64_t w = wake_time(q);
        if (w <= tb_monotonic_ns())
            continue;
        q->sleep_until = w;
        if (w == INT64_MAX) {
            pthread_cond_wait(&q->wake, &q->lock);
        } else {
            struct timespec ts;
            tb_abstime(&ts, w);
            q->st.timed_waits++;
            pthread_cond_timedwait(&q->wake, &q->lock, &ts);
        }
        q->sleep_until = INT64_MIN;
        q->st.wakeups++;
    }
    tb_threads_end(&q->thread);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static int qh_start(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    pthread_mutex_lock(&q->lock);
    int rc = tb_threads_start(&q->thread, q->stopped, timer_main, q);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* ---- Shutdown (not in Go: every pending timer is dropped) -------------- */

static long qh_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct qh *q = qh_of(s);
    long n = 0;
    qh_lock(q);
    q->stopped = true;
    while (q->len) {
        struct tb_task *t = q->heap[--q->len].t;
        q->heap[q->len] = (struct qh_slot){0, NULL};
        if (is_zombie(t)) {
            q->zombies--;
        } else if (t == q->current) {
            q->st.cancelled++; /* running: stopped, not shown to visit */
        } else {
            if (visit)
                visit(ctx, tb_pool_handle(&s->pool, t), t->fn, t->arg);
            q->st.dropped++;
            n++;
        }
        retire(q, t);
    }
    q->has_modified = false;
    q->ts_len = 0;
    if (s->threaded)
        pthread_cond_broadcast(&q->wake);
    qh_unlock(q);
    return n;
}

static long qh_shutdown(struct tb_sched *s)
{
    return qh_shutdown_now(s, NULL, NULL);
}

static int qh_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct qh *q = qh_of(s);
    return tb_threads_await(s, &q->thread, &q->stopped, timeout_ns);
}

static void qh_join(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    tb_threads_join(s, &q->thread);
}

/* ---- Setup and introspection ------------------------------------------- */

static int qh_configure(struct tb_config *cfg)
{
    cfg->threads = 1; /* one P */
    return TB_OK;
}

static int qh_init(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    q->sleep_until = INT64_MIN;
    if (!s->threaded)
        return TB_OK;
    return tb_threads_init(s, &q->thread, 1, &q->lock,
                           (pthread_cond_t *[]){&q->wake}, 1);
}

static void qh_fini(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    if (q->heap_mem)
        tb_mem_free_aligned(s, q->heap_mem, q->cap * sizeof *q->heap,
                            QH_LINE);
    if (s->threaded)
        tb_threads_fini(s, &q->thread);
}

static void qh_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct qh *q = qh_of(s);
    qh_lock(q);
    *out = q->st;
    out->pending = q->len;
    /* ts.zombies is the count the statistics give: kept once, not twice
     * on every stop (issue 39) */
    out->zombies = q->zombies;
    qh_unlock(q);
}

/* Room for n more timers: one resize to at least len + n, by append's
 * rule (growslice jumps straight to the needed length when it is more
 * than double). */
static int qh_reserve(struct tb_sched *s, size_t n)
{
    struct qh *q = qh_of(s);
    int rc = TB_OK;
    qh_lock(q);
    if (n > q->cap - q->len) {
        size_t need = q->len + n;
        size_t cap = need > 2 * q->cap ? need : grown_cap(q->cap, need);
        if (!heap_resize(q, cap))
            rc = TB_ENOMEM;
    }
    qh_unlock(q);
    return rc;
}

#define CORRUPT(...)                                                       \
    do {                                                                   \
        fprintf(stderr, "quadheap: " __VA_ARGS__);                         \
        fputc('\n', stderr);                                               \
        rc = TB_ECORRUPT;                                                  \
        goto out;                                                          \
    } while (0)

/* timers.verify, and the bookkeeping around it. */
static int qh_check(struct tb_sched *s)
{
    struct qh *q = qh_of(s);
    int rc = TB_OK;
    size_t zombies = 0;
    bool current_queued = false;
    qh_lock(q);
    if (q->len > q->cap)
        CORRUPT("length %zu over capacity %zu", q->len, q->cap);
    for (size_t i = 0; i < q->len; i++) {
        struct tb_task *t = q->heap[i].t;
        if (!t)
            CORRUPT("slot %zu of %zu is empty", i, q->len);
        uint32_t state = tb_task_get_state(t);
        if (state != TB_TASK_WAITING && state != TB_TASK_CANCELLED)
            CORRUPT("slot %zu holds a task in state %u", i, state);
        if (i && q->heap[(i - 1) >> 2].when > q->heap[i].when)
            CORRUPT("slot %zu (%lld) is earlier than its parent (%lld)", i,
                    (long long)q->heap[i].when,
                    (long long)q->heap[(i - 1) >> 2].when);
        /* an earlier reset must be covered by minWhenModified, or no check
         * would ever fix its slot in time */
        if (state == TB_TASK_WAITING && t->deadline < q->heap[i].when &&
            (!q->has_modified || q->min_modified > t->deadline))
            CORRUPT("slot %zu waits at %lld for a reset to %lld that "
                    "minWhenModified does not cover", i,
                    (long long)q->heap[i].when, (long long)t->deadline);
        zombies += state == TB_TASK_CANCELLED;
        current_queued |= t == q->current;
    }
    for (size_t i = q->len; i < q->cap; i++)
        if (q->heap[i].t)
            CORRUPT("slot %zu past the end is not cleared", i);
    if (zombies != q->zombies)
        CORRUPT("%zu zombies in the heap, %zu counted", zombies, q->zombies);
    if (q->current && !current_queued)
        CORRUPT("the running periodic task is not in the heap");
    if (s->pool.live != q->len + q->st.running)
        CORRUPT("%zu records live, %zu in the heap + %llu running",
                s->pool.live, q->len, (unsigned long long)q->st.running);
out:
    qh_unlock(q);
    return rc;
}

static const struct tb_backend_ops qh_ops = {
    .sched_size = sizeof(struct qh),
    .task_size = sizeof(struct tb_task),
    .configure = qh_configure,
    .init = qh_init,
    .fini = qh_fini,
    .start = qh_start,
    .schedule = qh_schedule,
    .cancel = qh_cancel,
    .schedule_virtual = qh_schedule_virtual,
    .cancel_virtual = qh_cancel_virtual,
    .reschedule = qh_reschedule,
    .pending = qh_pending,
    .advance = qh_advance,
    .shutdown = qh_shutdown,
    .shutdown_now = qh_shutdown_now,
    .await_termination = qh_await_termination,
    .join = qh_join,
    .stats = qh_stats,
    .reserve = qh_reserve,
    .check = qh_check,
};

const struct tb_backend tb_backend_quadheap = {
    .name = "quadheap",
    .description = "Go runtime timers: 4-ary heap with deadlines inline, "
                   "lazy deletion, one timer thread",
    .caps = TB_CAP_LAZY_CANCEL | TB_CAP_SKIP_MISSED,
    .ops = &qh_ops,
};
