/*
 * hrtree — Linux's high-resolution timers (hrtimers) on one clock base, as
 * in Linux 6.6: lib/rbtree.c and include/linux/rbtree.h (rb_root_cached,
 * rb_add_cached, rb_erase_cached), lib/timerqueue.c (timerqueue_add,
 * timerqueue_del, timerqueue_getnext), include/linux/hrtimer.h (_softexpires
 * beside node.expires, hrtimer_set_expires_range_ns, hrtimer_forward) and
 * kernel/time/hrtimer.c (__hrtimer_start_range_ns, __remove_hrtimer,
 * __hrtimer_run_queues, __run_hrtimer, hrtimer_interrupt, hrtimer_reprogram).
 * Written from the kernel's behaviour, not from its code.
 *
 * The tree.  A red-black tree of timers ordered by their HARD expiry
 * (node.expires, here tb_task.deadline).  Each record carries its node: the
 * parent pointer with two flag bits in its low bits (bit 0 the colour, black
 * = 1 as RB_BLACK; bit 1 "ranged", below) and its two children as an array
 * child[2], so that the left and right cases of insert and erase are one
 * code path indexed by direction.  Insert is timerqueue_add: a descent from
 * the root, left while the new key is strictly earlier, right otherwise, so
 * equal keys queue to the right of each other and run in the order they were
 * enqueued; then the usual red-black repair (recolour up the tree, at most
 * two rotations).  Erase is timerqueue_del: unlink (a node with two children
 * is replaced by its successor), then the repair for a removed black node
 * (at most three rotations).
 *
 * The cache.  rb_root_cached keeps the leftmost node, so the next expiry is
 * one load (timerqueue_getnext).  Insert knows whether it only went left;
 * erase of the leftmost moves the cache to its successor (its right child,
 * which in a red-black tree is then a lone red leaf, or its parent).
 *
 * Soft and hard expiry.  hrtimer_start_range_ns(timer, t, slack) sets
 * _softexpires = t and node.expires = t + slack: the timer may run once its
 * soft expiry has passed and must run by its hard one.  A run of the queue
 * (__hrtimer_run_queues at `now`) takes timers from the left while the
 * leftmost's soft expiry is <= now and stops at the first that is not, even
 * if timers right of it could run: those wait for the interrupt the leftmost
 * will cause anyway.  The clock event device is programmed for the
 * leftmost's hard expiry.  So timers whose ranges overlap run in one
 * wake-up: tb_schedule_range (TB_CAP_RANGE).  The record has no room for a
 * second time (it is one 64-byte line: the 40-byte header and the 24-byte
 * node), and only a ranged one-shot needs one: its soft expiry lives in
 * tb_task.period, which a one-shot does not use, and the "ranged" bit says
 * so.  Every other timer's soft expiry is its hard one.
 *
 * Periodic timers are what kernel callbacks that return HRTIMER_RESTART do.
 * Fixed rate: the callback calls hrtimer_forward_now(timer, period), i.e.
 * hrtimer_forward from the clock it reads as it ends, which moves the
 * expiry by whole periods to the first point of its grid after that and
 * returns the overrun count: missed periods are skipped
 * (TB_CAP_SKIP_MISSED).  Fixed delay: the callback sets its
 * expiry to the time it ends plus the delay.  Either way the timer is off the
 * tree during its run (__run_hrtimer removes it first) and is enqueued again
 * after it, to the right of timers of the same expiry already queued.
 *
 * Re-arm in place (tb_reschedule) is hrtimer_start on a queued timer:
 * remove_hrtimer, the new expiry (soft = hard), enqueue_hrtimer.  The handle
 * stays.  On a one-shot whose callback runs (cpu_base->running) it enqueues
 * the timer, and the run leaves it queued, as __run_hrtimer does.
 *
 * Threads.  One thread plays the CPU's hrtimer interrupt and its clock
 * event device.  It sleeps in a timed condition wait until the programmed
 * event, the leftmost's hard expiry (untimed when the tree is empty), and
 * runs the queue only when that has come: __hrtimer_run_queues at the
 * clock, then, with the clock read anew, again while the new leftmost's
 * hard expiry has passed (hrtimer_interrupt's retry).  Any other wake-up
 * only reprograms: it sleeps again to the leftmost's hard expiry.  An
 * insert that becomes the new leftmost with a hard expiry before the one
 * the thread sleeps to wakes it (hrtimer_reprogram's test against
 * expires_next); a cancel or re-arm after which the leftmost's hard expiry
 * is no longer that one wakes it too (hrtimer_force_reprogram); while the
 * thread is awake nothing is signalled, as the kernel does not reprogram
 * from inside the interrupt.  Callbacks run on the thread with the lock
 * released.  Virtual mode: tb_advance(now) is that thread looking at the
 * clock at `now`, the same code in the caller's thread (DECISIONS D25).
 *
 * Complexity.  Insert O(log n) (a descent of at most 2 log2(n + 1) levels,
 * at most two rotations); cancel O(log n) (the successor search, at most
 * three rotations; O(1) amortised repair); next expiry O(1); expiry of the
 * leftmost O(1) amortised.  stats.visits counts the nodes an insert compares
 * on its way down, the structure's log n work.
 *
 * What it leaves out of the kernel and where it departs (one clock base,
 * callbacks as tb_fn with the re-arm done by the backend, cancel from
 * inside a run, the device as a condition variable, the end of the clock,
 * max_pending
 * and shutdown) is told for a reader in README.md, "Left out, and
 * deliberate differences".  What the code keeps because of them: the tree
 * re-enqueues a re-armed or rescheduled timer behind those of its expiry,
 * so TB_CAP_FIFO_TIES is not declared; an expiry past the clock is
 * TB_ERANGE, never saturated.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hrtree.h"
#include "tb_core.h"

/* The node's low bits (records are 64-byte aligned; the kernel needs 4). */
#define HR_BLACK ((uintptr_t)1)  /* colour: black = 1, red = 0 */
#define HR_RANGED ((uintptr_t)2) /* soft expiry in base.period */
#define HR_LOW (HR_BLACK | HR_RANGED)

/* One cache line: the shared header (its deadline is the hard expiry, the
 * key) and the rb_node. */
struct hr_timer {
    struct tb_task base;
    uintptr_t pc;               /* parent | HR_RANGED | HR_BLACK */
    struct hr_timer *child[2];  /* [0] left (earlier), [1] right */
};

_Static_assert(sizeof(struct hr_timer) == 64, "a timer is one cache line");

struct hr {
    struct tb_sched base;
    struct hr_timer *root;      /* rb_root_cached.rb_root */
    struct hr_timer *leftmost;  /* rb_root_cached.rb_leftmost */
    size_t size;                /* timers in the tree */
    /* threaded mode */
    pthread_mutex_t lock;
    pthread_cond_t wake;
    struct tb_threads thread;   /* the hrtimer interrupt */
    /* cpu_base->expires_next: the hard expiry the thread sleeps until,
     * INT64_MAX for an untimed sleep, INT64_MIN while it is awake (inside
     * the interrupt: nobody reprograms) */
    int64_t expires_next;
    /* cpu_base->running: the timer whose callback runs now, NULL if none
     * (one interrupt thread, or tb_advance's caller: at most one) */
    struct hr_timer *running;
    bool stopped;
    struct tb_stats st;
};

static inline struct hr *hr_of(struct tb_sched *s) { return (struct hr *)s; }

static inline struct hr_timer *hr_timer_of(struct tb_task *t)
{
    return (struct hr_timer *)(void *)t;
}

static inline void hr_lock(struct hr *q)
{
    if (q->base.threaded)
        pthread_mutex_lock(&q->lock);
}

static inline void hr_unlock(struct hr *q)
{
    if (q->base.threaded)
        pthread_mutex_unlock(&q->lock);
}

/* ---- Expiries ---------------------------------------------------------- */

/* hrtimer_get_softexpires */
static inline int64_t soft_of(const struct hr_timer *t)
{
    return t->pc & HR_RANGED ? t->base.period : t->base.deadline;
}

/* Whether the timer is periodic (a ranged one-shot's period is its soft
 * expiry). */
static inline bool is_periodic(const struct hr_timer *t)
{
    return !(t->pc & HR_RANGED) && t->base.period != 0;
}

uint64_t tb_hrtree_forward(int64_t *expires, int64_t now, int64_t interval)
{
    int64_t delta = now - *expires; /* both >= 0: no overflow */
    if (delta < 0)
        return 0;
    uint64_t orun = 1;
    if (delta >= interval) {
        /* whole intervals up to now; the grid point they reach is <= now,
         * so one more follows (the kernel's "correction for exact") */
        orun = (uint64_t)(delta / interval);
        *expires += (int64_t)orun * interval;
        orun++;
    }
    if (*expires > INT64_MAX - interval)
        *expires = INT64_MAX;
    else
        *expires += interval;
    return orun;
}

/* ---- The red-black tree ------------------------------------------------ */

static inline struct hr_timer *parent_of(const struct hr_timer *n)
{
    return (struct hr_timer *)(n->pc & ~HR_LOW);
}

static inline bool is_red(const struct hr_timer *n)
{
    return !(n->pc & HR_BLACK);
}

/* NULL children are black. */
static inline bool red_node(const struct hr_timer *n)
{
    return n && is_red(n);
}

static inline void set_black(struct hr_timer *n) { n->pc |= HR_BLACK; }
static inline void set_red(struct hr_timer *n) { n->pc &= ~HR_BLACK; }

static inline void set_parent(struct hr_timer *n, struct hr_timer *p)
{
    n->pc = (uintptr_t)p | (n->pc & HR_LOW);
}

/* Puts `new` where `old` hangs under p (or at the root). */
static inline void replace_child(struct hr *q, struct hr_timer *p,
                                 struct hr_timer *old, struct hr_timer *new)
{
    if (!p)
        q->root = new;
    else
        p->child[p->child[1] == old] = new;
}

/* Rotates x down towards side d: its child on the other side rises into
 * x's place, and that child's d-side subtree moves under x. */
static inline void rotate(struct hr *q, struct hr_timer *x, int d)
{
    struct hr_timer *y = x->child[!d];
    struct hr_timer *b = y->child[d];
    struct hr_timer *p = parent_of(x);
    x->child[!d] = b;
    if (b)
        set_parent(b, x);
    y->child[d] = x;
    set_parent(y, p);
    set_parent(x, y);
    replace_child(q, p, x, y);
}

/* The red-black repair after linking the red node n. */
static inline void insert_repair(struct hr *q, struct hr_timer *n)
{
    struct hr_timer *p;
    while ((p = parent_of(n)) != NULL) {
        if (!is_red(p))
            return;
        /* p is red, so it is not the root: g exists and is black */
        struct hr_timer *g = parent_of(p);
        int d = g->child[1] == p;
        struct hr_timer *u = g->child[!d];
        if (red_node(u)) {
            /* red uncle: push the black down from g and go on above */
            set_black(p);
            set_black(u);
            set_red(g);
            n = g;
            continue;
        }
        if (p->child[!d] == n) {
            /* inner grandchild: make it the outer one */
            rotate(q, p, d);
            p = n;
        }
        rotate(q, g, !d);
        set_black(p);
        set_red(g);
        return;
    }
    set_black(n); /* the root */
}

/* timerqueue_add (rb_add_cached): left while strictly earlier, so equal
 * keys go right of each other.  Returns whether n became the leftmost.
 * rb_add_cached clears a flag at every step to the right; here the test is
 * made once at the end: a new node is the first in order exactly when it
 * hangs left of the old first one (or the tree was empty). */
static inline bool tq_add(struct hr *q, struct hr_timer *n, uintptr_t flags)
{
    struct hr_timer **link = &q->root, *parent = NULL;
    int64_t key = n->base.deadline;
    uint64_t depth = 0;
    int right = 0;
    while (*link) {
        parent = *link;
        right = key >= parent->base.deadline;
        link = &parent->child[right];
        depth++;
    }
    n->pc = (uintptr_t)parent | flags; /* red */
    n->child[0] = n->child[1] = NULL;
    *link = n;
    bool leftmost = parent == q->leftmost && !right;
    if (leftmost)
        q->leftmost = n;
    insert_repair(q, n);
    q->st.visits += depth;
    if (++q->size > q->st.peak_pending)
        q->st.peak_pending = q->size;
    return leftmost;
}

/* The repair after a black node left from under p on the side where x (a
 * black node or NULL) now hangs: that side is one black short. */
static void erase_repair(struct hr *q, struct hr_timer *x, struct hr_timer *p)
{
    do {
        /* with x NULL its side is the one without a child: the other
         * side, one black taller, cannot be empty */
        int d = p->child[1] == x;
        struct hr_timer *w = p->child[!d];
        if (is_red(w)) {
            /* red sibling: rotate it above p, a black sibling follows */
            set_black(w);
            set_red(p);
            rotate(q, p, d);
            w = p->child[!d];
        }
        struct hr_timer *near = w->child[d], *far = w->child[!d];
        if (!red_node(near) && !red_node(far)) {
            /* both nephews black: the sibling turns red, p is short now */
            set_red(w);
            x = p;
            p = parent_of(x);
            if (is_red(x)) {
                set_black(x);
                return;
            }
            continue;
        }
        if (!red_node(far)) {
            /* near red, far black: turn it into the far case */
            set_black(near);
            set_red(w);
            rotate(q, w, !d);
            far = w;
            w = near;
        }
        /* far red: w rises above p with p's colour */
        w->pc = (w->pc & ~HR_BLACK) | (p->pc & HR_BLACK);
        set_black(p);
        set_black(far);
        rotate(q, p, d);
        return;
    } while (p);
}

/* timerqueue_del (rb_erase_cached): the cache moves to the successor. */
static void tq_del(struct hr *q, struct hr_timer *z)
{
    struct hr_timer *zp = parent_of(z), *child, *parent;
    uintptr_t removed_black;
    if (z == q->leftmost) {
        /* no left child: the successor is the right subtree's leftmost
         * (a lone red leaf in a valid tree), else the parent */
        struct hr_timer *r = z->child[1];
        if (r)
            while (r->child[0])
                r = r->child[0];
        q->leftmost = r ? r : zp;
    }
    if (!z->child[0] || !z->child[1]) {
        child = z->child[0] ? z->child[0] : z->child[1];
        parent = zp;
        removed_black = z->pc & HR_BLACK;
        replace_child(q, zp, z, child);
        if (child)
            set_parent(child, zp);
    } else {
        /* two children: the successor y takes z's place and colour */
        struct hr_timer *y = z->child[1];
        if (!y->child[0]) {
            parent = y;
            child = y->child[1];
        } else {
            do
                y = y->child[0];
            while (y->child[0]);
            parent = parent_of(y);
            child = y->child[1];
            parent->child[0] = child;
            if (child)
                set_parent(child, parent);
            y->child[1] = z->child[1];
            set_parent(z->child[1], y);
        }
        removed_black = y->pc & HR_BLACK;
        y->child[0] = z->child[0];
        set_parent(z->child[0], y);
        y->pc = (z->pc & ~HR_RANGED) | (y->pc & HR_RANGED);
        replace_child(q, zp, z, y);
    }
    q->size--;
    if (!removed_black)
        return;
    if (red_node(child))
        set_black(child);
    else if (parent)
        erase_repair(q, child, parent);
}

/* tq_del of the leftmost, the expiry path: it has no left child, and a
 * right child only as a lone red leaf under a black node. */
static inline void tq_del_leftmost(struct hr *q, struct hr_timer *z)
{
    struct hr_timer *p = parent_of(z), *r = z->child[1];
    q->size--;
    if (r) {
        if (p)
            p->child[0] = r;
        else
            q->root = r;
        r->pc = (uintptr_t)p | HR_BLACK | (r->pc & HR_RANGED);
        q->leftmost = r;
        return;
    }
    q->leftmost = p;
    if (!p) {
        q->root = NULL;
        return;
    }
    p->child[0] = NULL;
    if (!is_red(z))
        erase_repair(q, NULL, p);
}

/* ---- Records ----------------------------------------------------------- */

static inline void retire(struct hr *q, struct hr_timer *t)
{
    tb_task_set_state(&t->base, TB_TASK_DONE);
    tb_pool_put(&q->base.pool, &t->base);
}

/* hrtimer_reprogram from an enqueue: a new leftmost earlier than the
 * expiry the sleeping thread waits for wakes it. */
static inline void reprogram(struct hr *q, int64_t hard)
{
    if (q->base.threaded && hard < q->expires_next)
        pthread_cond_signal(&q->wake);
}

/* hrtimer_force_reprogram after a removal or a re-arm: the device follows
 * the leftmost's hard expiry, later as well as earlier, so a sleeping
 * thread whose programmed event is no longer it is woken to sleep to the
 * new one (INT64_MAX: none).  While the thread is awake (expires_next is
 * INT64_MIN) it programs the device itself before it sleeps. */
static inline void force_reprogram(struct hr *q)
{
    if (q->expires_next == INT64_MIN)
        return;
    int64_t next = q->leftmost ? q->leftmost->base.deadline : INT64_MAX;
    if (next != q->expires_next)
        pthread_cond_signal(&q->wake);
}

/* ---- Schedule, cancel, restart ----------------------------------------- */

/* __hrtimer_start_range_ns for a new timer, every check; lock taken here.
 * soft < hard makes a ranged one-shot. */
static __attribute__((noinline)) int schedule_slow(
    struct hr *q, int64_t soft, int64_t hard, int64_t period, tb_fn fn,
    void *arg, tb_handle *handle)
{
    struct tb_sched *s = &q->base;
    int rc = TB_OK;
    tb_handle_none(handle);
    hr_lock(q);
    if (q->stopped) {
        rc = TB_ESHUTDOWN;
    } else if (s->cfg.max_pending && q->size >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else {
        struct tb_task *rec = tb_pool_get(&s->pool, handle);
        if (!rec) {
            rc = TB_ENOMEM;
        } else {
            struct hr_timer *t = hr_timer_of(rec);
            bool ranged = soft < hard;
            tb_task_set(rec, hard, ranged ? soft : period, fn, arg);
            q->st.submitted++;
            if (tq_add(q, t, ranged ? HR_RANGED : 0))
                reprogram(q, hard);
        }
    }
    if (rc)
        q->st.rejected++;
    hr_unlock(q);
    return rc;
}

/* hrtimer_start on the virtual clock with a free record at hand; the rest
 * (threads, shutdown, max_pending, pool growth) takes schedule_slow. */
static inline __attribute__((always_inline)) int
hr_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct hr *q = hr_of(s);
    /* virt: not stopped either (after a shutdown the core calls
     * hr_schedule instead, D48) */
    if (__builtin_expect((!virt && (s->threaded || s->cfg.max_pending ||
                                    q->stopped)) ||
                             s->pool.free_head == TB_POOL_NIL,
                         0))
        return schedule_slow(q, deadline, deadline, period, fn, arg, handle);
    struct tb_task *rec = tb_pool_get_unlocked(&s->pool, handle);
    tb_task_set(rec, deadline, period, fn, arg);
    q->st.submitted++;
    tq_add(q, hr_timer_of(rec), 0);
    return TB_OK;
}

static int hr_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return hr_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* hr_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int hr_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return hr_schedule_on(s, deadline, fn, arg, handle, period, true);
}

/* hrtimer_start_range_ns: [soft, hard]. */
static int hr_schedule_range(struct tb_sched *s, int64_t soft, int64_t hard,
                             tb_fn fn, void *arg, tb_handle *handle)
{
    return schedule_slow(hr_of(s), soft, hard, 0, fn, arg, handle);
}

/* hrtimer_try_to_cancel: a queued timer leaves the tree at once.  A
 * periodic task cancelled from inside its own run is marked, and its
 * runner retires it.  Lock held, or `virt` (a constant: no call). */
static inline __attribute__((always_inline)) int
cancel_locked(struct hr *q, tb_handle h, bool virt)
{
    struct tb_sched *s = &q->base;
    /* the virtual clock's common case first: a handle naming a WAITING
     * record, found in one compare of its word */
    struct tb_task *rec = virt ? tb_pool_waiting_unlocked(&s->pool, h) : NULL;
    uint32_t state = TB_TASK_WAITING;
    if (!rec) {
        rec = virt ? tb_pool_lookup_unlocked(&s->pool, h)
                   : tb_pool_lookup(&s->pool, h);
        if (!rec)
            return 0;
        state = tb_task_get_state(rec);
    }
    if (state == TB_TASK_WAITING) {
        tq_del(q, hr_timer_of(rec));
        q->st.cancelled++;
        if (__builtin_expect(hr_timer_of(rec) == q->running, 0)) {
            /* restarted from its own run, which still holds the record:
             * the runner retires it */
            tb_task_set_state(rec, TB_TASK_CANCELLED);
            return 1;
        }
        if (virt)
            tb_pool_put_handle_unlocked(&s->pool, rec, h);
        else
            tb_pool_put(&s->pool, rec);
        return 1;
    }
    if (state == TB_TASK_RUNNING && is_periodic(hr_timer_of(rec))) {
        tb_task_set_state(rec, TB_TASK_CANCELLED);
        q->st.cancelled++;
        return 1;
    }
    return 0;
}

static __attribute__((noinline)) int cancel_threaded(struct hr *q,
                                                     tb_handle h)
{
    pthread_mutex_lock(&q->lock);
    int rc = cancel_locked(q, h, false);
    if (rc == 1)
        force_reprogram(q);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

static int hr_cancel(struct tb_sched *s, tb_handle h)
{
    struct hr *q = hr_of(s);
    if (s->threaded)
        return cancel_threaded(q, h);
    return cancel_locked(q, h, true);
}

/* hr_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int hr_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_locked(hr_of(s), h, true);
}

/* hrtimer_start on a queued one-shot: remove_hrtimer, the new expiry (no
 * range: hrtimer_start is hrtimer_start_range_ns with slack 0),
 * enqueue_hrtimer, and the device reprogrammed to the new leftmost's hard
 * expiry (hrtimer_force_reprogram when the timer was the first).  The
 * record, and so the handle, stays.  On a one-shot whose callback runs now
 * (from that callback or another thread) it enqueues the timer, as
 * hrtimer_start on a timer in its callback does, and __run_hrtimer then
 * leaves it queued: 1. */
static int hr_reschedule(struct tb_sched *s, tb_handle h, int64_t deadline)
{
    struct hr *q = hr_of(s);
    int rc = 0;
    hr_lock(q);
    struct tb_task *rec = tb_pool_lookup(&s->pool, h);
    if (q->stopped) {
        rc = TB_ESHUTDOWN;
    } else if (rec) {
        struct hr_timer *t = hr_timer_of(rec);
        if (is_periodic(t)) {
            rc = TB_EINVAL;
        } else {
            uint32_t state = tb_task_get_state(rec);
            bool restart = state == TB_TASK_RUNNING && t == q->running;
            if (state == TB_TASK_WAITING || restart) {
                if (!restart)
                    tq_del(q, t);
                else
                    tb_task_set_state(rec, TB_TASK_WAITING);
                rec->deadline = deadline;
                rec->period = 0;
                tq_add(q, t, 0);
                if (s->threaded)
                    force_reprogram(q);
                rc = 1;
            }
        }
    }
    hr_unlock(q);
    return rc;
}

static size_t hr_pending(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    hr_lock(q);
    size_t n = q->size;
    hr_unlock(q);
    return n;
}

/* ---- The hrtimer interrupt --------------------------------------------- */

/* After a run: what the callback's return value does.  A periodic task is
 * forwarded from `end`, the clock read when its run ended (fixed rate:
 * hrtimer_forward_now, to the grid point after it; fixed delay: end plus
 * the delay) and enqueued again.  A one-shot restarted during its run is
 * queued already and stays so (__run_hrtimer enqueues only a timer that
 * is not).  Lock held. */
static void after_run(struct hr *q, struct hr_timer *t, bool failed,
                      int64_t end)
{
    struct tb_task *rec = &t->base;
    uint32_t state = tb_task_get_state(rec);
    if (state == TB_TASK_CANCELLED) {
        /* a periodic task cancelled during its run, or a one-shot
         * restarted in it and then cancelled or dropped */
        retire(q, t);
        return;
    }
    if (state == TB_TASK_WAITING)
        return; /* restarted during its run: it is in the tree */
    if (!is_periodic(t) || failed) {
        q->st.finished++;
        retire(q, t);
        return;
    }
    if (q->stopped) {
        q->st.cancelled++;
        retire(q, t);
        return;
    }
    if (rec->period > 0)
        tb_hrtree_forward(&rec->deadline, end, rec->period);
    else
        rec->deadline = tb_next_deadline(rec->deadline, rec->period, end);
    size_t max = q->base.cfg.max_pending;
    if (rec->deadline == INT64_MAX || (max && q->size >= max)) {
        /* the end of the clock, or refused at max_pending (D1) */
        if (rec->deadline != INT64_MAX)
            q->st.rejected++;
        q->st.finished++;
        retire(q, t);
        return;
    }
    tb_task_set_state(rec, TB_TASK_WAITING);
    tq_add(q, t, 0);
}

/* __run_hrtimer: the leftmost leaves the tree and runs with the lock
 * released; cpu_base->running names it meanwhile. */
static void run_timer(struct hr *q, struct hr_timer *t)
{
    tq_del_leftmost(q, t);
    tb_task_set_state(&t->base, TB_TASK_RUNNING);
    q->st.running++;
    q->running = t;
    tb_fn fn = t->base.fn;
    void *arg = t->base.arg;
    hr_unlock(q);
    bool failed = fn(arg) != 0;
    int64_t end = tb_clock_now(&q->base); /* hrtimer_forward_now's clock */
    hr_lock(q);
    q->running = NULL;
    q->st.running--;
    q->st.fired++;
    q->st.failed += failed;
    after_run(q, t, failed, end);
}

/* __hrtimer_run_queues(now): from the left while the leftmost's soft
 * expiry is at or before `now`, the interrupt's entry time (timers that
 * callbacks enqueue meanwhile run in the same pass if that holds for them).
 * Returns the runs.  Lock held. */
static long run_queues(struct hr *q, int64_t now)
{
    long ran = 0;
    struct hr_timer *t;
    while (!q->stopped && (t = q->leftmost) != NULL && soft_of(t) <= now) {
        run_timer(q, t);
        ran++;
    }
    return ran;
}

/* hrtimer_interrupt, if the programmed event has come: the thread (or
 * tb_advance's caller) looks at the clock, and if the leftmost's hard
 * expiry is at or before it, runs the queue at that clock; then, reading
 * the clock anew, again while the new leftmost's hard expiry is already
 * past (the retry when tick_program_event finds the event in the past).
 * If the event has not come, nothing runs: the caller only programs the
 * device for it.  Returns the runs.  Lock held. */
static long interrupt(struct hr *q)
{
    long ran = 0;
    struct hr_timer *first;
    int64_t now;
    while (!q->stopped && (first = q->leftmost) != NULL &&
           first->base.deadline <= (now = tb_clock_now(&q->base)))
        ran += run_queues(q, now);
    return ran;
}

/* tb_advance(now) is the interrupt thread looking at the clock at `now`
 * (DECISIONS, issue 38): the same code as the monotonic mode's wake-up,
 * so the queue runs at `now` only if the programmed event has come by
 * then, and a callback reads `now` (or what its tb_spend made of it). */
static long hr_advance(struct tb_sched *s, int64_t now)
{
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    return interrupt(hr_of(s));
}

/* The hrtimer interrupt on its own thread.  It sleeps until the
 * programmed event, the leftmost's hard expiry (programming the clock
 * event device), and runs the queue only when that has come (interrupt);
 * any other wake-up (a new earlier leftmost, a removed or re-armed one, a
 * spurious or early return of the wait) only reprograms and sleeps
 * again. */
static void *interrupt_thread(void *arg)
{
    struct hr *q = arg;
    pthread_mutex_lock(&q->lock);
    while (!q->stopped) {
        interrupt(q);
        if (q->stopped)
            break;
        struct hr_timer *first = q->leftmost;
        q->expires_next = first ? first->base.deadline : INT64_MAX;
        if (first) {
            struct timespec ts;
            tb_abstime(&ts, q->expires_next);
            q->st.timed_waits++;
            pthread_cond_timedwait(&q->wake, &q->lock, &ts);
        } else {
            pthread_cond_wait(&q->wake, &q->lock);
        }
        q->expires_next = INT64_MIN;
        q->st.wakeups++;
    }
    tb_threads_end(&q->thread);
    pthread_mutex_unlock(&q->lock);
    return NULL;
}

static int hr_start(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    pthread_mutex_lock(&q->lock);
    int rc = tb_threads_start(&q->thread, q->stopped, interrupt_thread, q);
    pthread_mutex_unlock(&q->lock);
    return rc;
}

/* ---- Shutdown (not in the kernel: every queued timer is dropped) ------- */

/* Empties the tree bottom-up in O(n), with no repair; returns how many. */
static long drop_all(struct hr *q, tb_unrun_fn visit, void *ctx)
{
    long n = 0;
    struct hr_timer *t = q->root;
    while (t) {
        if (t->child[0]) {
            t = t->child[0];
            continue;
        }
        if (t->child[1]) {
            t = t->child[1];
            continue;
        }
        struct hr_timer *p = parent_of(t);
        if (p)
            p->child[p->child[1] == t] = NULL;
        if (visit)
            visit(ctx, tb_pool_handle(&q->base.pool, &t->base), t->base.fn,
                  t->base.arg);
        q->st.dropped++;
        if (t == q->running) /* restarted in its run: its runner retires */
            tb_task_set_state(&t->base, TB_TASK_CANCELLED);
        else
            retire(q, t);
        n++;
        t = p;
    }
    q->root = q->leftmost = NULL;
    q->size = 0;
    return n;
}

static long hr_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct hr *q = hr_of(s);
    hr_lock(q);
    q->stopped = true;
    long n = drop_all(q, visit, ctx);
    if (s->threaded)
        pthread_cond_broadcast(&q->wake);
    hr_unlock(q);
    return n;
}

static long hr_shutdown(struct tb_sched *s)
{
    return hr_shutdown_now(s, NULL, NULL);
}

static int hr_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct hr *q = hr_of(s);
    return tb_threads_await(s, &q->thread, &q->stopped, timeout_ns);
}

static void hr_join(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    tb_threads_join(s, &q->thread);
}

/* ---- Setup and introspection ------------------------------------------- */

static int hr_configure(struct tb_config *cfg)
{
    cfg->threads = 1; /* one CPU's interrupt */
    return TB_OK;
}

static int hr_init(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    q->expires_next = INT64_MIN;
    q->running = NULL;
    if (!s->threaded)
        return TB_OK;
    return tb_threads_init(s, &q->thread, 1, &q->lock,
                           (pthread_cond_t *[]){&q->wake}, 1);
}

static void hr_fini(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    if (s->threaded)
        tb_threads_fini(s, &q->thread);
}

static void hr_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct hr *q = hr_of(s);
    hr_lock(q);
    *out = q->st;
    out->pending = q->size;
    hr_unlock(q);
}

/* ---- The invariant checker --------------------------------------------- */

struct walk {
    size_t count;
    bool have_prev;
    int64_t prev;
    const struct hr_timer *first;
};

/* The subtree under n (whose parent must be p), in order: links, colours,
 * order, records.  Returns its black height (NULL: 0), below 0 if broken
 * (TB_CHECK's TB_ECORRUPT). */
static int check_subtree(const struct hr *q, const struct hr_timer *n,
                         const struct hr_timer *p, struct walk *w,
                         unsigned depth)
{
    if (!n)
        return 0;
    TB_CHECK(depth <= 128, "deeper than any red-black tree of 2^64 nodes");
    TB_CHECK(parent_of(n) == p, "a node's parent pointer is not its parent");
    TB_CHECK(!(is_red(n) && p && is_red(p)), "a red node has a red parent");
    TB_CHECK(++w->count <= q->size, "more nodes than size (%zu)", q->size);
    int lh = check_subtree(q, n->child[0], n, w, depth + 1);
    if (lh < 0)
        return -1;
    /* in order: keys never decrease */
    TB_CHECK(!w->have_prev || w->prev <= n->base.deadline,
             "key %lld follows %lld in order", (long long)n->base.deadline,
             (long long)w->prev);
    if (!w->have_prev)
        w->first = n;
    w->have_prev = true;
    w->prev = n->base.deadline;
    uint32_t state = tb_task_get_state(&n->base);
    TB_CHECK(state == TB_TASK_WAITING, "a queued timer is in state %u", state);
    TB_CHECK(!(n->pc & HR_RANGED) || n->base.period < n->base.deadline,
             "a ranged timer's soft expiry %lld is not before its hard %lld",
             (long long)n->base.period, (long long)n->base.deadline);
    int rh = check_subtree(q, n->child[1], n, w, depth + 1);
    if (rh < 0)
        return -1;
    TB_CHECK(lh == rh, "black heights %d and %d under one node", lh, rh);
    return lh + !is_red(n);
}

static int hr_check(struct tb_sched *s)
{
    struct hr *q = hr_of(s);
    struct walk w = {0, false, 0, NULL};
    int rc = TB_OK;
    hr_lock(q);
    if (q->root && (parent_of(q->root) || is_red(q->root))) {
        fprintf(stderr, "hrtree: the root has a parent or is red\n");
        rc = TB_ECORRUPT;
    } else if (check_subtree(q, q->root, NULL, &w, 0) < 0) {
        rc = TB_ECORRUPT;
    } else if (w.count != q->size) {
        fprintf(stderr, "hrtree: %zu nodes, size says %zu\n", w.count,
                q->size);
        rc = TB_ECORRUPT;
    } else if (w.first != q->leftmost) {
        fprintf(stderr, "hrtree: the cached leftmost is not the first node\n");
        rc = TB_ECORRUPT;
    } else if (s->pool.live != q->size + q->st.running) {
        fprintf(stderr, "hrtree: %zu records live, %zu queued + %llu "
                "running\n", s->pool.live, q->size,
                (unsigned long long)q->st.running);
        rc = TB_ECORRUPT;
    }
    hr_unlock(q);
    return rc;
}

static const struct tb_backend_ops hr_ops = {
    .sched_size = sizeof(struct hr),
    .task_size = sizeof(struct hr_timer),
    .configure = hr_configure,
    .init = hr_init,
    .fini = hr_fini,
    .start = hr_start,
    .schedule = hr_schedule,
    .schedule_range = hr_schedule_range,
    .cancel = hr_cancel,
    .schedule_virtual = hr_schedule_virtual,
    .cancel_virtual = hr_cancel_virtual,
    .reschedule = hr_reschedule,
    .pending = hr_pending,
    .advance = hr_advance,
    .shutdown = hr_shutdown,
    .shutdown_now = hr_shutdown_now,
    .await_termination = hr_await_termination,
    .join = hr_join,
    .stats = hr_stats,
    .check = hr_check,
};

const struct tb_backend tb_backend_hrtree = {
    .name = "hrtree",
    .description = "Linux hrtimers (6.6): red-black tree by hard expiry, "
                   "leftmost cached, soft/hard expiry ranges, one thread",
    .caps = TB_CAP_SKIP_MISSED | TB_CAP_RANGE | TB_CAP_TREE,
    .ops = &hr_ops,
};
