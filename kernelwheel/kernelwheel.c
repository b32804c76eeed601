/*
 * kernelwheel — the Linux kernel's timer wheel since 4.8 (kernel/time/timer.c,
 * Thomas Gleixner's 2016 rework "timers: Switch to a non-cascading wheel"),
 * modelled on the form it has in v6.2 .. v6.8: timer_base with clk,
 * next_expiry, next_expiry_recalc and timers_pending, calc_wheel_index,
 * __mod_timer, collect_expired_timers, __next_timer_interrupt and
 * forward_timer_base.
 *
 * Levels.  LVL_DEPTH levels of LVL_SIZE = 64 buckets (LVL_BITS 6); level n
 * has granularity 8^n ticks (LVL_CLK_SHIFT 3) and holds the timers whose
 * distance from the base clock lies in [LVL_START(n), LVL_START(n + 1)),
 * LVL_START(n) = 63 << 3(n - 1).  At a 1 ms tick (HZ 1000):
 *
 *     level  granularity   range
 *       0    1 ms          0 .. 62 ms
 *       1    8 ms          63 .. 503 ms
 *       2    64 ms         504 ms .. 4.031 s
 *       3    512 ms        4.032 .. 32.255 s
 *       4    4.1 s         32.256 s .. 4.3 min
 *       5    32.8 s        4.3 .. 34.4 min
 *       6    4.4 min       34.4 min .. 4.6 h
 *       7    35 min        4.6 .. 36.7 h
 *
 * and so on, 8x per level.  The kernel stops at 8 or 9 levels (about 12 days
 * at HZ 1000) and files anything longer at the last level's cutoff, early;
 * here the number of levels follows from the tick and the range needed, the
 * whole clock (2^63 ns): the lowest depth whose last level reaches
 * INT64_MAX / tick ticks, 14 at 1 ms, 13 at the default 4 ms, 21 at most.
 *
 * calc_wheel_index.  A deadline d becomes the timer's `expires` in ticks,
 * E = ceil(d / tick) - 1, the tick before the first tick at or after d (see
 * the differences below).  The level is the one whose range holds E - clk;
 * within it the timer goes to bucket ((E >> 3n) + 1) & 63, which expires at
 * ((E >> 3n) + 1) << 3n: the level's granularity rounds up, and the + 1
 * guarantees no early expiry.  So a level-n timer runs less than 8^n ticks
 * after its deadline (the bucket is at most E + 8^n, the deadline after E).
 * Its distance E - clk is at least 63 * 8^(n-1) ticks, so armed on a tick
 * (at the base clock) it runs less than 8^n / (63 * 8^(n-1)) = 8/63 of its
 * delay late, and the bound is approached: delay 63 ms + 1 ns armed at 1 ms
 * on a 1 ms tick has E = 64 and runs at 72 ms, 0.127 of its delay (the
 * "about 1/8" of the rework is a little more than 1/8).  Armed inside a
 * tick the delay can be up to a tick shorter than the distance: less than
 * 8^n / (63 * 8^(n-1) - 1), 8/62 at level 1.  Level 0 (distances under 63
 * ticks) runs a timer at the first tick at or after its deadline.
 * E just below clk (a timer due at the tick clk itself) goes to the current
 * bucket of level 0, due at clk.  The level of a distance comes from its top
 * bit and one compare (a table of 65 entries) instead of the kernel's chain
 * of compares: same answer, fewer branches at 14 levels.
 *
 * No cascading.  A timer stays in its bucket until the bucket expires.  A
 * bitmap of pending buckets (pending_map, one 64-bit word per level) says
 * which buckets hold timers; __next_timer_interrupt finds the next one
 * without scanning buckets: per level one rotate and one count of trailing
 * zeros (the kernel's two find_next_bit calls), stopping at the first level
 * whose next bucket comes before the level above can tick.  The result is
 * next_expiry.  A cancel that empties a bucket clears its bit and marks
 * next_expiry stale (next_expiry_recalc); it is recomputed only after a
 * collected step and on the way to idle (get_next_timer_interrupt), so a run
 * before that collects at the stale tick first and finds nothing (A at
 * 10 ms, B at 20 ms, A cancelled, a wake-up at 30 ms: two steps, one of
 * them empty), as __run_timers does.
 *
 * Running (__run_timers).  While jiffies >= clk and jiffies >= next_expiry:
 * move clk straight to next_expiry (collect_expired_timers), take that
 * tick's bucket from level 0 and, while the clock's lower bits are 0, from
 * each level above; advance clk by one; recompute next_expiry; run the
 * collected timers, highest level first, each bucket from its head (buckets
 * are hlists filled at the head, so a bucket runs newest first).  Empty
 * buckets between two pending ones are never visited: after an idle spell
 * the wheel catches up in one step per pending bucket, not per tick
 * (stats.ticks counts the steps, stats.empty_ticks the steps that found
 * nothing because a cancel had emptied the bucket after next_expiry was
 * computed).
 *
 * Base clock.  clk only moves forward: by running, by forward_timer_base
 * before an enqueue (to jiffies when nothing is due by then, else to
 * next_expiry), and when the wheel goes idle (get_next_timer_interrupt
 * forwards it to jiffies) so that timers armed after an idle spell get the
 * granularity of their real distance.
 *
 * mod_timer (tb_reschedule).  A waiting one-shot whose new expiry is the
 * same tick is left alone; otherwise, after forwarding the clock, the new
 * bucket index is computed and if it is the timer's current bucket only the
 * deadline changes: the timer keeps its place ("the common optimisation
 * triggered by the networking code").  Else it is unlinked and enqueued
 * anew.  Cancel (timer_delete) is an unlink in O(1).
 *
 * Complexity.  Insert O(1): a multiply-high by the tick's reciprocal, a
 * table lookup and a compare for the level, a head insertion and a bit set.
 * Cancel O(1).  Finding the next expiry O(levels) word operations, usually
 * one.  Expiry O(1) per timer plus O(levels) per pending bucket.
 *
 * Threads.  One thread plays the CPU's timer softirq and its NOHZ idle: it
 * runs the due buckets, then sleeps (timed condition wait) until the tick
 * of next_expiry, with no wake-up in between, or untimed when no timer is
 * pending.  An enqueue that makes an earlier next_expiry while the thread
 * sleeps wakes it (trigger_dyntick_cpu's IPI to an idle CPU).  Callbacks
 * run on that thread with the lock released, as the softirq drops the base
 * lock around call_timer_fn.  Virtual mode: tb_advance(now) is a wake-up at
 * now, the same run loop in the caller's thread, then the idle entry.
 *
 * Deliberate differences from the kernel.
 *   - One base.  The kernel keeps a timer_base per CPU, plus a second one
 *     for deferrable timers under NO_HZ_COMMON, and (6.9 on) a hierarchy
 *     that migrates timers of idle CPUs; here there is one base, no
 *     deferrable timers, no migration, no TIMER_PINNED/IRQSAFE, no
 *     timer_reduce or mod_timer_pending variants, no running_timer wait
 *     (timer_delete_sync): a cancel of a running one-shot answers 0.
 *   - Depth from the whole clock, as above, instead of 8 or 9 levels with
 *     timeouts past the cutoff forced to expire early; NEXT_TIMER_MAX_DELTA
 *     (about 12 days) therefore becomes "no timer pending".
 *   - The tick is the configured tick_ns (default 4 ms, HZ 250, the
 *     kernel's Kconfig default and Debian's), counted from clock 0; the
 *     kernel counts jiffies from boot with a wrapping unsigned long.
 *   - Periodic tasks: the kernel has none; its periodic users re-arm with
 *     mod_timer from the callback, and the interface's fixed-rate and
 *     fixed-delay tasks are re-armed the same way after each run.  A run
 *     that fails stops the task; a one-shot failure is counted.
 *   - Exact deadlines.  The kernel arms with expires = jiffies + delay and
 *     runs a level-0 timer at tick expires + 1: armed on a boundary, one
 *     tick after the first boundary that follows its deadline, since
 *     jiffies cannot say how much of the tick has passed.  The interface's
 *     deadline is exact, so E is the tick before the first tick at or after
 *     it and the + 1 lands there, as every wheel of the suite rounds.
 *   - A timer armed for a tick that has already run (E + 1 < clk: a zero
 *     delay on a boundary, from a callback of that tick or after it ran)
 *     goes to an overdue list that the run loop empties first.  The kernel
 *     files it for the next tick (clk is one ahead while timers run, "to
 *     avoid endless requeuing to current jiffies"); tb_advance runs
 *     everything due by its time, including what tasks schedule.
 *   - tb_advance(INT64_MAX) runs every pending timer, also one whose
 *     coarse bucket rounds up past the end of the clock; the kernel's
 *     jiffies wrap instead.
 *   - mod_timer of a timer already collected for expiry but not yet run
 *     (another callback of the same tick runs meanwhile) always moves it:
 *     the kernel compares the stale bucket index and can keep such a timer
 *     in the collected list, so that it runs before its new expiry.
 *   - max_pending caps the timers held (TB_EFULL; a periodic re-arm over it
 *     retires the task, DECISIONS D1); tb_shutdown / tb_shutdown_now drop
 *     every pending timer; the kernel has neither.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

#define LVL_CLK_SHIFT 3
#define LVL_CLK_DIV (1u << LVL_CLK_SHIFT)
#define LVL_CLK_MASK (LVL_CLK_DIV - 1)
#define LVL_BITS 6
#define LVL_SIZE (1u << LVL_BITS)
#define LVL_MASK (LVL_SIZE - 1)
#define LVL_SHIFT(n) ((n) * LVL_CLK_SHIFT)
#define LVL_OFFS(n) ((n) * LVL_SIZE)

/* 63 * 8^20 > 2^63 ticks: a 1 ns tick, the finest, needs 21 levels */
#define KW_MAX_DEPTH 21
#define KW_DEFAULT_TICK (4 * TB_MS)
#define KW_NONE UINT64_MAX /* next_expiry when no timer is pending */
#define KW_OVERDUE UINT32_MAX /* kw_timer.idx of a timer on the overdue list */

/* 64 bytes, one cache line: the shared header, the hlist links and the
 * bucket index (the kernel keeps it in timer->flags).  pprev points at the
 * previous node's next, or at the bucket's head, so an unlink needs no
 * bucket; NULL when the timer is in no list. */
struct kw_timer {
    struct tb_task base;
    struct kw_timer *next;
    struct kw_timer **pprev;
    uint32_t idx;
    uint32_t pad;
};

_Static_assert(sizeof(struct kw_timer) == 64, "a timer is one cache line");

struct kw {
    struct tb_sched base;
    int64_t tick_ns;
    struct tb_udiv tick_div;
    unsigned depth;             /* LVL_DEPTH */
    uint64_t clk;               /* base->clk: the next tick to process */
    uint64_t next_expiry;       /* the tick of the next pending bucket */
    uint64_t jiffies;           /* virtual: the tick of the clock */
    bool next_expiry_recalc;    /* a cancel emptied a bucket */
    bool timers_pending;
    bool is_idle;               /* threaded: the thread sleeps past a tick */
    /* level_of_bits[b]: the lowest level whose range can hold a distance
     * of bit length b; the distance may still need the level above */
    uint8_t level_of_bits[65];
    uint64_t lvl_start[KW_MAX_DEPTH + 1]; /* LVL_START(n); [depth] = max */
    uint64_t pending_map[KW_MAX_DEPTH];   /* bit b of word n: bucket
                                             LVL_OFFS(n) + b is not empty */
    /* buckets collected for the running tick, not yet run, highest level
     * last; cancels unlink from them under the lock as from a bucket */
    struct kw_timer *heads[KW_MAX_DEPTH];
    uint32_t heads_idx[KW_MAX_DEPTH];
    unsigned nheads;
    /* timers armed for a tick already run (see the design comment) */
    struct kw_timer *overdue;
    size_t size;                /* timers in buckets and collected lists */
    /* threaded mode */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct tb_threads thread;   /* the tick's thread (NOHZ: it sleeps) */
    bool shutdown;
    struct tb_stats st;
    struct kw_timer *vectors[]; /* depth * LVL_SIZE bucket heads */
};

static inline struct kw *kw_of(struct tb_sched *s) { return (struct kw *)s; }

static inline void kw_lock(struct kw *w)
{
    if (w->base.threaded)
        pthread_mutex_lock(&w->lock);
}

static inline void kw_unlock(struct kw *w)
{
    if (w->base.threaded)
        pthread_mutex_unlock(&w->lock);
}

/* ---- Time -------------------------------------------------------------- */

/* The tick an instant falls in (jiffies at that instant).  Both clocks are
 * never negative. */
static inline uint64_t tick_of(const struct kw *w, int64_t t)
{
    return tb_udiv(&w->tick_div, (uint64_t)t);
}

/* The first tick at or after a deadline: the kernel's expires + 1. */
static inline uint64_t due_tick(const struct kw *w, int64_t d)
{
    uint64_t q = tick_of(w, d);
    return q + (q * (uint64_t)w->tick_ns != (uint64_t)d);
}

/* The instant a tick starts, saturated: when a bucket falls due. */
static inline int64_t tick_start(const struct kw *w, uint64_t tick)
{
    return tick > (uint64_t)(INT64_MAX / w->tick_ns)
               ? INT64_MAX
               : (int64_t)tick * w->tick_ns;
}

/* jiffies: the virtual clock's tick (set by tb_advance), or now's. */
static inline uint64_t jiffies_now(const struct kw *w)
{
    return w->base.threaded ? tick_of(w, tb_monotonic_ns()) : w->jiffies;
}

/* ---- hlists ------------------------------------------------------------ */

static inline void hlist_add_head(struct kw_timer *t, struct kw_timer **head)
{
    struct kw_timer *first = *head;
    t->next = first;
    if (first)
        first->pprev = &t->next;
    *head = t;
    t->pprev = head;
}

static inline void hlist_del(struct kw_timer *t)
{
    struct kw_timer *next = t->next;
    *t->pprev = next;
    if (next)
        next->pprev = t->pprev;
}

/* ---- The wheel --------------------------------------------------------- */

/* calc_index: the bucket of tick `expires` in level `lvl`, rounded up to
 * the level's granularity and one step more, so never early. */
static inline uint32_t calc_index(uint64_t expires, unsigned lvl,
                                  uint64_t *bucket_expiry)
{
    expires = (expires >> LVL_SHIFT(lvl)) + 1;
    *bucket_expiry = expires << LVL_SHIFT(lvl);
    return LVL_OFFS(lvl) + (uint32_t)(expires & LVL_MASK);
}

/* The level whose range holds distance `delta` (< LVL_START(depth)). */
static inline unsigned level_of(const struct kw *w, uint64_t delta)
{
    unsigned bits = delta ? 64u - (unsigned)__builtin_clzll(delta) : 0;
    unsigned lvl = w->level_of_bits[bits];
    return lvl + (delta >= w->lvl_start[lvl + 1]);
}

/* calc_wheel_index for the timer whose first tick at or after its deadline
 * is `due` (the kernel's expires + 1, see the design comment). */
static inline uint32_t calc_wheel_index(const struct kw *w, uint64_t due,
                                        uint64_t clk, uint64_t *bucket_expiry)
{
    if (due < clk) { /* its tick has run: due now */
        *bucket_expiry = due;
        return KW_OVERDUE;
    }
    if (due == clk) { /* expires < clk */
        *bucket_expiry = clk;
        return (uint32_t)(clk & LVL_MASK);
    }
    uint64_t expires = due - 1;
    return calc_index(expires, level_of(w, expires - clk), bucket_expiry);
}

static inline void set_bit(struct kw *w, uint32_t idx)
{
    w->pending_map[idx >> LVL_BITS] |= (uint64_t)1 << (idx & LVL_MASK);
}

static inline void clear_bit(struct kw *w, uint32_t idx)
{
    w->pending_map[idx >> LVL_BITS] &= ~((uint64_t)1 << (idx & LVL_MASK));
}

/* trigger_dyntick_cpu: the thread sleeps past the new first expiry */
static __attribute__((noinline, cold)) void wake_idle(struct kw *w)
{
    pthread_cond_signal(&w->wake);
}

/* enqueue_timer: at the head of the bucket, marked pending; a new first
 * expiry wakes the sleeping thread.  `virt` (a constant) says no thread
 * sleeps, so the virtual insert makes no call and stays a leaf. */
static inline __attribute__((always_inline)) void
enqueue_timer(struct kw *w, struct kw_timer *t, uint32_t idx,
              uint64_t bucket_expiry, bool virt)
{
    if (__builtin_expect(idx == KW_OVERDUE, 0)) {
        hlist_add_head(t, &w->overdue);
        t->idx = idx;
        if (!virt && w->is_idle)
            wake_idle(w);
        return;
    }
    hlist_add_head(t, &w->vectors[idx]);
    set_bit(w, idx);
    t->idx = idx;
    if (bucket_expiry < w->next_expiry) {
        w->next_expiry = bucket_expiry;
        w->timers_pending = true;
        w->next_expiry_recalc = false;
        if (!virt && w->is_idle)
            wake_idle(w);
    }
}

/* forward_timer_base: a clock that lags jiffies (the thread slept, or the
 * wheel was idle) moves up to it, or to the next expiry if that is due, so
 * the timer about to be armed gets the granularity of its real distance. */
static inline void forward_timer_base(struct kw *w, uint64_t jnow)
{
    if (jnow <= w->clk)
        return;
    w->clk = w->next_expiry > jnow ? jnow : w->next_expiry;
}

/* internal_add_timer, with the pending count */
static inline __attribute__((always_inline)) void
add_timer(struct kw *w, struct kw_timer *t, bool virt)
{
    uint64_t bucket_expiry;
    uint32_t idx = calc_wheel_index(w, due_tick(w, t->base.deadline), w->clk,
                                    &bucket_expiry);
    enqueue_timer(w, t, idx, bucket_expiry, virt);
    if (++w->size > w->st.peak_pending)
        w->st.peak_pending = w->size;
}

/* detach_if_pending for a timer known to be pending: the last timer of a
 * bucket (not of a collected list) clears its bit and makes next_expiry
 * stale. */
static inline void detach_timer(struct kw *w, struct kw_timer *t)
{
    if (!t->next && t->idx != KW_OVERDUE &&
        t->pprev == &w->vectors[t->idx]) {
        clear_bit(w, t->idx);
        w->next_expiry_recalc = true;
    }
    hlist_del(t);
    w->size--;
}

/* next_pending_bucket: how many buckets after `clk` (0..63) the next
 * pending one of level `lvl` lies, wrapping; -1 if none. */
static inline int next_pending_bucket(const struct kw *w, unsigned lvl,
                                      unsigned clk)
{
    uint64_t m = w->pending_map[lvl];
    if (!m)
        return -1;
    m = clk ? m >> clk | m << (LVL_SIZE - clk) : m;
    return __builtin_ctzll(m);
}

/* The search of __next_timer_interrupt: the tick of the first pending
 * bucket, KW_NONE if there is none.  A level's clock is the one below's
 * shifted down, plus one when the lower bits are not 0 (its current bucket
 * is behind). */
static uint64_t find_next_expiry(const struct kw *w)
{
    uint64_t clk = w->clk, next = KW_NONE;
    for (unsigned lvl = 0; lvl < w->depth; lvl++) {
        int pos = next_pending_bucket(w, lvl, (unsigned)(clk & LVL_MASK));
        uint64_t lvl_clk = clk & LVL_CLK_MASK;
        if (pos >= 0) {
            uint64_t tmp = (clk + (uint64_t)pos) << LVL_SHIFT(lvl);
            if (tmp < next)
                next = tmp;
            /* due before this level's clock moves the one above on */
            if ((unsigned)pos <= ((LVL_CLK_DIV - lvl_clk) & LVL_CLK_MASK))
                break;
        }
        clk = (clk >> LVL_CLK_SHIFT) + (lvl_clk != 0);
    }
    return next;
}

/* __next_timer_interrupt: the search, and the flags it settles. */
static uint64_t next_timer_interrupt(struct kw *w)
{
    uint64_t next = find_next_expiry(w);
    w->next_expiry_recalc = false;
    w->timers_pending = next != KW_NONE;
    return next;
}

/* collect_expired_timers: clk jumps to next_expiry, over every empty
 * bucket; the buckets of that tick move whole to the collected lists. */
static unsigned collect_expired_timers(struct kw *w)
{
    uint64_t clk = w->clk = w->next_expiry;
    unsigned levels = 0;
    for (unsigned i = 0; i < w->depth; i++) {
        uint32_t idx = (uint32_t)(clk & LVL_MASK) + LVL_OFFS(i);
        uint64_t bit = (uint64_t)1 << (idx & LVL_MASK);
        if (w->pending_map[i] & bit) {
            w->pending_map[i] &= ~bit;
            struct kw_timer *first = w->vectors[idx];
            w->vectors[idx] = NULL;
            w->heads[levels] = first;
            first->pprev = &w->heads[levels];
            w->heads_idx[levels] = idx;
            levels++;
        }
        if (clk & LVL_CLK_MASK)
            break;
        clk >>= LVL_CLK_SHIFT;
    }
    w->nheads = levels;
    return levels;
}

/* Whether a timer whose bucket index is idx may sit in a collected list
 * (then its index says nothing about where it will run). */
static inline bool maybe_collected(const struct kw *w, uint32_t idx)
{
    for (unsigned i = 0; i < w->nheads; i++)
        if (w->heads_idx[i] == idx)
            return true;
    return false;
}

/* ---- Running ----------------------------------------------------------- */

static void retire(struct kw *w, struct kw_timer *t)
{
    tb_task_set_state(&t->base, TB_TASK_DONE);
    tb_pool_put(&w->base.pool, &t->base);
}

/* After a run: retire the timer or re-arm a periodic one, as a kernel
 * callback re-arms its own timer.  Lock held. */
static void after_run(struct kw *w, struct kw_timer *t, bool failed,
                      int64_t end)
{
    if (tb_run_ends(&t->base, failed, w->shutdown, &w->st)) {
        retire(w, t);
        return;
    }
    t->base.deadline = tb_next_deadline(t->base.deadline, t->base.period, end);
    size_t max = w->base.cfg.max_pending;
    if (t->base.deadline == INT64_MAX || (max && w->size >= max)) {
        /* the end of the clock, or refused at max_pending (D1) */
        if (t->base.deadline != INT64_MAX)
            w->st.rejected++;
        w->st.finished++;
        retire(w, t);
        return;
    }
    tb_task_set_state(&t->base, TB_TASK_WAITING);
    forward_timer_base(w, jiffies_now(w));
    add_timer(w, t, false);
}

/* expire_timers for one list (a collected bucket, or the overdue list):
 * each timer is detached, then runs with the lock released.  Returns the
 * runs. */
static long expire_timers(struct kw *w, struct kw_timer **head)
{
    long ran = 0;
    struct kw_timer *t;
    while ((t = *head) != NULL) {
        hlist_del(t);
        t->pprev = NULL;
        w->size--;
        tb_task_set_state(&t->base, TB_TASK_RUNNING);
        w->st.running++;
        kw_unlock(w);
        bool failed = t->base.fn(t->base.arg) != 0;
        int64_t end = tb_clock_now(&w->base);
        kw_lock(w);
        w->st.running--;
        w->st.fired++;
        w->st.failed += failed;
        ran++;
        after_run(w, t, failed, end);
    }
    return ran;
}

/* __run_timers: every bucket due by tick `jnow`, one collected tick at a
 * time.  At the end of the clock (`end`: the virtual clock at INT64_MAX)
 * every pending timer is due, since no deadline lies later, also one whose
 * coarse bucket rounds up past the end.  Lock held. */
static long run_timers(struct kw *w, uint64_t jnow, bool end)
{
    long ran = 0;
    for (;;) {
        if (w->overdue) {
            ran += expire_timers(w, &w->overdue);
            continue;
        }
        if (!w->timers_pending ||
            (!end && (jnow < w->clk || jnow < w->next_expiry)))
            break;
        unsigned levels = collect_expired_timers(w);
        w->st.ticks++;
        w->st.empty_ticks += levels == 0;
        w->clk++;
        w->next_expiry = next_timer_interrupt(w);
        while (levels--)
            ran += expire_timers(w, &w->heads[levels]);
        w->nheads = 0;
    }
    return ran;
}

/* get_next_timer_interrupt's bookkeeping on the way to idle: a fresh next
 * expiry, and the clock forwarded to jiffies if nothing is due by then. */
static void go_idle(struct kw *w, uint64_t jnow)
{
    if (w->next_expiry_recalc)
        w->next_expiry = next_timer_interrupt(w);
    if (jnow > w->clk) {
        if (w->next_expiry > jnow)
            w->clk = jnow;
        else if (w->next_expiry > w->clk)
            w->clk = w->next_expiry;
    }
}

/* ---- Operations -------------------------------------------------------- */

static inline int schedule_locked(struct kw *w, int64_t deadline,
                                  int64_t period, tb_fn fn, void *arg,
                                  tb_handle *handle)
{
    struct tb_sched *s = &w->base;
    int rc = TB_OK;
    if (w->shutdown) {
        rc = TB_ESHUTDOWN;
    } else if (s->cfg.max_pending && w->size >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else {
        struct kw_timer *t =
            (struct kw_timer *)(void *)tb_pool_get(&s->pool, handle);
        if (!t) {
            rc = TB_ENOMEM;
        } else {
            tb_task_set(&t->base, deadline, period, fn, arg);
            w->st.submitted++;
            forward_timer_base(w, jiffies_now(w));
            add_timer(w, t, false);
        }
    }
    if (rc)
        w->st.rejected++;
    return rc;
}

static __attribute__((noinline)) int
schedule_slow(struct kw *w, int64_t deadline, int64_t period, tb_fn fn,
              void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    kw_lock(w);
    int rc = schedule_locked(w, deadline, period, fn, arg, handle);
    kw_unlock(w);
    return rc;
}

/* add_timer on the virtual clock with a free record at hand, as a leaf
 * function; everything else (threads, shutdown, max_pending, pool growth)
 * takes schedule_slow, the same insert with every check. */
static inline __attribute__((always_inline)) int
kw_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct kw *w = kw_of(s);
    /* virt: not shut down either (after a shutdown the core calls
     * kw_schedule instead, D48) */
    if ((!virt && (s->threaded || s->cfg.max_pending || w->shutdown)) ||
        s->pool.free_head == TB_POOL_NIL)
        return schedule_slow(w, deadline, period, fn, arg, handle);
    struct kw_timer *t =
        (struct kw_timer *)(void *)tb_pool_get_unlocked(&s->pool, handle);
    tb_task_set(&t->base, deadline, period, fn, arg);
    w->st.submitted++;
    forward_timer_base(w, w->jiffies);
    add_timer(w, t, true);
    return TB_OK;
}

static int kw_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return kw_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* kw_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int kw_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return kw_schedule_on(s, deadline, fn, arg, handle, period, true);
}

/* timer_delete: an unlink.  A periodic task cancelled from inside its own
 * run is marked, and its runner retires it.  Lock held, or `virt` (a
 * constant: the virtual path makes no call). */
static inline __attribute__((always_inline)) int
cancel_locked(struct kw *w, tb_handle h, bool virt)
{
    struct tb_sched *s = &w->base;
    /* the virtual clock's common case first: a handle naming a WAITING
     * record, found in one compare of its word */
    struct kw_timer *t = (struct kw_timer *)(void *)(
        virt ? tb_pool_waiting_unlocked(&s->pool, h) : NULL);
    uint32_t state = TB_TASK_WAITING;
    if (!t) {
        t = (struct kw_timer *)(void *)(virt ? tb_pool_lookup_unlocked(
                                                   &s->pool, h)
                                             : tb_pool_lookup(&s->pool, h));
        if (!t)
            return 0;
        state = tb_task_get_state(&t->base);
    }
    if (state == TB_TASK_WAITING) {
        detach_timer(w, t);
        w->st.cancelled++;
        if (virt)
            tb_pool_put_handle_unlocked(&s->pool, &t->base, h);
        else
            tb_pool_put(&s->pool, &t->base);
        return 1;
    }
    if (state == TB_TASK_RUNNING && t->base.period) {
        tb_task_set_state(&t->base, TB_TASK_CANCELLED);
        w->st.cancelled++;
        return 1;
    }
    return 0;
}

static __attribute__((noinline)) int cancel_threaded(struct kw *w,
                                                     tb_handle h)
{
    pthread_mutex_lock(&w->lock);
    int rc = cancel_locked(w, h, false);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static int kw_cancel(struct tb_sched *s, tb_handle h)
{
    struct kw *w = kw_of(s);
    if (s->threaded)
        return cancel_threaded(w, h);
    return cancel_locked(w, h, true);
}

/* kw_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int kw_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_locked(kw_of(s), h, true);
}

/* __mod_timer(timer, expires, 0) on a waiting one-shot. */
static int kw_reschedule(struct tb_sched *s, tb_handle h, int64_t deadline)
{
    struct kw *w = kw_of(s);
    int rc = 1;
    kw_lock(w);
    struct kw_timer *t =
        (struct kw_timer *)(void *)tb_pool_lookup(&s->pool, h);
    if (w->shutdown) {
        rc = TB_ESHUTDOWN;
    } else if (!t) {
        rc = 0;
    } else if (t->base.period) {
        rc = TB_EINVAL;
    } else if (tb_task_get_state(&t->base) != TB_TASK_WAITING) {
        rc = 0;
    } else {
        uint64_t due = due_tick(w, deadline);
        bool same = due == due_tick(w, t->base.deadline);
        uint64_t bucket_expiry = 0;
        uint32_t idx = 0;
        if (!same) {
            forward_timer_base(w, jiffies_now(w));
            idx = calc_wheel_index(w, due, w->clk, &bucket_expiry);
            same = idx == t->idx && !maybe_collected(w, idx);
        }
        t->base.deadline = deadline;
        if (!same) {
            detach_timer(w, t);
            enqueue_timer(w, t, idx, bucket_expiry, false);
            w->size++;
        }
    }
    kw_unlock(w);
    return rc;
}

static size_t kw_pending(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    kw_lock(w);
    size_t n = w->size;
    kw_unlock(w);
    return n;
}

/* Virtual mode: a wake-up at `now` (jiffies moves on), the softirq's run
 * loop in the caller's thread, then the idle entry. */
static long kw_advance(struct tb_sched *s, int64_t now)
{
    struct kw *w = kw_of(s);
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    uint64_t jnow = w->jiffies = tick_of(w, now);
    /* next_expiry as it stands, stale or not: __run_timers collects there
     * first (an empty step if a cancel emptied that bucket); only the idle
     * entry recomputes it */
    long ran = run_timers(w, jnow, now == INT64_MAX);
    go_idle(w, jnow);
    return ran;
}

/* ---- Threaded mode: the softirq and NOHZ idle --------------------------- */

static void *timer_thread(void *arg)
{
    struct kw *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->shutdown) {
        uint64_t jnow = tick_of(w, tb_monotonic_ns());
        /* the tick's check (run_local_timers) against next_expiry as it
         * stands: a stale one wakes the softirq for an empty step, as the
         * event programmed for it still fires in the kernel */
        if (w->overdue || (w->timers_pending && w->next_expiry <= jnow)) {
            run_timers(w, jnow, false);
            continue;
        }
        go_idle(w, jnow);
        /* sleep to the next pending bucket, through every empty tick */
        w->is_idle = true;
        if (w->timers_pending) {
            struct timespec ts;
            tb_abstime(&ts, tick_start(w, w->next_expiry));
            w->st.timed_waits++;
            pthread_cond_timedwait(&w->wake, &w->lock, &ts);
        } else {
            pthread_cond_wait(&w->wake, &w->lock);
        }
        w->is_idle = false;
        w->st.wakeups++;
    }
    tb_threads_end(&w->thread);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static int kw_start(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    pthread_mutex_lock(&w->lock);
    int rc = tb_threads_start(&w->thread, w->shutdown, timer_thread, w);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ---- Shutdown ---------------------------------------------------------- */

static long drop_list(struct kw *w, struct kw_timer **head, tb_unrun_fn visit,
                      void *ctx)
{
    long n = 0;
    struct kw_timer *t;
    while ((t = *head) != NULL) {
        hlist_del(t);
        t->pprev = NULL;
        if (visit)
            visit(ctx, tb_pool_handle(&w->base.pool, &t->base), t->base.fn,
                  t->base.arg);
        w->st.dropped++;
        retire(w, t);
        n++;
    }
    return n;
}

/* Empties every bucket and collected list; returns how many were dropped. */
static long drop_all(struct kw *w, tb_unrun_fn visit, void *ctx)
{
    long n = drop_list(w, &w->overdue, visit, ctx);
    for (unsigned i = 0; i < w->nheads; i++)
        n += drop_list(w, &w->heads[i], visit, ctx);
    for (unsigned lvl = 0; lvl < w->depth; lvl++) {
        uint64_t m = w->pending_map[lvl];
        while (m) {
            unsigned b = (unsigned)__builtin_ctzll(m);
            m &= m - 1;
            n += drop_list(w, &w->vectors[LVL_OFFS(lvl) + b], visit, ctx);
        }
        w->pending_map[lvl] = 0;
    }
    w->size = 0;
    w->next_expiry = KW_NONE;
    w->timers_pending = false;
    w->next_expiry_recalc = false;
    return n;
}

static long kw_shutdown(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    long n = 0;
    kw_lock(w);
    if (!w->shutdown) {
        w->shutdown = true;
        n = drop_all(w, NULL, NULL);
        if (s->threaded)
            pthread_cond_broadcast(&w->wake);
    }
    kw_unlock(w);
    return n;
}

static long kw_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct kw *w = kw_of(s);
    kw_lock(w);
    w->shutdown = true;
    long n = drop_all(w, visit, ctx);
    if (s->threaded)
        pthread_cond_broadcast(&w->wake);
    kw_unlock(w);
    return n;
}

static int kw_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct kw *w = kw_of(s);
    return tb_threads_await(s, &w->thread, &w->shutdown, timeout_ns);
}

static void kw_join(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    tb_threads_join(s, &w->thread);
}

/* ---- Setup and introspection ------------------------------------------- */

/* LVL_DEPTH for a tick: the fewest levels whose last one reaches the whole
 * clock, INT64_MAX / tick ticks away. */
static unsigned depth_for(int64_t tick)
{
    uint64_t need = (uint64_t)(INT64_MAX / tick);
    unsigned d = 1;
    while (d < KW_MAX_DEPTH &&
           ((uint64_t)LVL_MASK << LVL_SHIFT(d - 1)) <= need)
        d++;
    return d;
}

static int kw_configure(struct tb_config *cfg)
{
    if (cfg->tick_ns == 0)
        cfg->tick_ns = KW_DEFAULT_TICK;
    if (cfg->wheel_size == 0)
        cfg->wheel_size = LVL_SIZE;
    /* LVL_BITS is the kernel's constant, not a setting */
    if (cfg->wheel_size != LVL_SIZE)
        return TB_EINVAL;
    return TB_OK;
}

static int kw_init(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    w->tick_ns = s->cfg.tick_ns;
    w->tick_div = tb_udiv_make((uint64_t)w->tick_ns);
    w->depth = depth_for(w->tick_ns);
    w->lvl_start[0] = 0;
    for (unsigned n = 1; n < w->depth; n++)
        w->lvl_start[n] = (uint64_t)LVL_MASK << LVL_SHIFT(n - 1);
    w->lvl_start[w->depth] = UINT64_MAX;
    for (unsigned b = 0; b <= 64; b++) {
        /* the lowest level reaching past 2^(b-1), the smallest distance of
         * bit length b */
        uint64_t low = b ? (uint64_t)1 << (b - 1) : 0;
        unsigned lvl = 0;
        while (lvl + 1 < w->depth && low >= w->lvl_start[lvl + 1])
            lvl++;
        w->level_of_bits[b] = (uint8_t)lvl;
    }
    /* init_timer_cpu: the clock at the creation time */
    w->clk = w->jiffies = tick_of(w, tb_clock_now(s));
    w->next_expiry = KW_NONE;
    w->st.levels = w->depth;
    if (!s->threaded)
        return TB_OK;
    return tb_threads_init(s, &w->thread, 1, &w->lock,
                           (pthread_cond_t *[]){&w->wake}, 1);
}

static void kw_fini(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    if (s->threaded)
        tb_threads_fini(s, &w->thread);
}

static void kw_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct kw *w = kw_of(s);
    kw_lock(w);
    *out = w->st;
    out->pending = w->size;
    kw_unlock(w);
}

/* ---- The invariant checker --------------------------------------------- */

/* One list: links whole, every timer waiting; in a bucket, the bucket its
 * index names, due exactly at the bucket's next expiry and not before its
 * deadline. */
static int check_list(struct kw *w, struct kw_timer **head, long idx,
                      size_t *count)
{
    for (struct kw_timer *t = *head, **pp = head; t; pp = &t->next,
                          t = t->next) {
        TB_CHECK(t->pprev == pp, "bucket %ld: broken links", idx);
        TB_CHECK(tb_task_get_state(&t->base) == TB_TASK_WAITING,
                 "bucket %ld: timer in state %u", idx,
                 tb_task_get_state(&t->base));
        if (++*count > w->size)
            return TB_OK; /* the count check reports it */
        if (idx < 0)
            continue;
        TB_CHECK(t->idx == (uint32_t)idx, "bucket %ld holds a timer of %u", idx,
                 t->idx);
        /* the bucket's next visit: the first tick at or after clk whose
         * level bits name this slot, with the lower levels' bits zero */
        unsigned lvl = (unsigned)idx >> LVL_BITS;
        uint64_t c = (w->clk + ((uint64_t)1 << LVL_SHIFT(lvl)) - 1) >>
                     LVL_SHIFT(lvl);
        uint64_t at = (c + (((uint64_t)idx - c) & LVL_MASK))
                      << LVL_SHIFT(lvl);
        TB_CHECK(at >= due_tick(w, t->base.deadline),
                 "bucket %ld runs at tick %llu, before its timer's tick %llu",
                 idx, (unsigned long long)at,
                 (unsigned long long)due_tick(w, t->base.deadline));
    }
    return TB_OK;
}

static int kw_check(struct tb_sched *s)
{
    struct kw *w = kw_of(s);
    int rc = TB_OK;
    size_t count = 0;
    kw_lock(w);
    rc = check_list(w, &w->overdue, -1, &count);
    for (unsigned i = 0; !rc && i < w->nheads; i++)
        rc = check_list(w, &w->heads[i], -1, &count);
    for (uint32_t i = 0; !rc && i < w->depth * LVL_SIZE; i++) {
        bool bit = w->pending_map[i >> LVL_BITS] >> (i & LVL_MASK) & 1;
        if (bit != (w->vectors[i] != NULL)) {
            fprintf(stderr, "kernelwheel: bucket %u %s but its bit is %s\n",
                    i, w->vectors[i] ? "holds timers" : "is empty",
                    bit ? "set" : "clear");
            rc = TB_ECORRUPT;
            break;
        }
        rc = check_list(w, &w->vectors[i], (long)i, &count);
    }
    if (!rc && count != w->size) {
        fprintf(stderr, "kernelwheel: %zu timers held, size says %zu\n",
                count, w->size);
        rc = TB_ECORRUPT;
    }
    if (!rc && !w->next_expiry_recalc) {
        uint64_t want = find_next_expiry(w);
        if (want != w->next_expiry) {
            fprintf(stderr, "kernelwheel: next_expiry %llu, buckets say "
                    "%llu\n", (unsigned long long)w->next_expiry,
                    (unsigned long long)want);
            rc = TB_ECORRUPT;
        }
    }
    if (!rc && w->timers_pending != (w->next_expiry != KW_NONE)) {
        fprintf(stderr, "kernelwheel: timers_pending %d, next_expiry %llu\n",
                w->timers_pending, (unsigned long long)w->next_expiry);
        rc = TB_ECORRUPT;
    }
    if (!rc && w->next_expiry != KW_NONE && w->next_expiry < w->clk) {
        fprintf(stderr, "kernelwheel: next_expiry %llu before clk %llu\n",
                (unsigned long long)w->next_expiry,
                (unsigned long long)w->clk);
        rc = TB_ECORRUPT;
    }
    kw_unlock(w);
    return rc;
}

static const struct tb_backend_ops kw_ops = {
    .sched_size = sizeof(struct kw) +
                  KW_MAX_DEPTH * LVL_SIZE * sizeof(struct kw_timer *),
    .task_size = sizeof(struct kw_timer),
    .configure = kw_configure,
    .init = kw_init,
    .fini = kw_fini,
    .start = kw_start,
    .schedule = kw_schedule,
    .cancel = kw_cancel,
    .schedule_virtual = kw_schedule_virtual,
    .cancel_virtual = kw_cancel_virtual,
    .reschedule = kw_reschedule,
    .pending = kw_pending,
    .advance = kw_advance,
    .shutdown = kw_shutdown,
    .shutdown_now = kw_shutdown_now,
    .await_termination = kw_await_termination,
    .join = kw_join,
    .stats = kw_stats,
    .check = kw_check,
};

const struct tb_backend tb_backend_kernelwheel = {
    .name = "kernelwheel",
    .description = "Linux kernel/time/timer.c (4.8+): levels of 64 buckets, "
                   "8x granularity per level, no cascading, pending bitmap",
    .caps = TB_CAP_TICKED | TB_CAP_GRANULAR,
    .ops = &kw_ops,
};
