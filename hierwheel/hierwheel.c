/*
 * hierwheel — Kafka's hierarchical timing wheel: TimingWheel, TimerTaskList,
 * SystemTimer and SystemTimerReaper (server-common,
 * org.apache.kafka.server.util.timer).
 *
 * Levels.  Level 0 has `wheel_size` buckets (default 20) of `tick` each
 * (default 1 ms).  Level L+1 ticks at the whole span of level L (tick_L *
 * wheel_size) and is created the first time a task needs it, then kept
 * (stats.levels).  Every level keeps its own clock, `current`, always the
 * level-0 clock rounded down to the level's tick.  A task goes to the lowest
 * level whose span, counted from that level's clock, holds its expiration;
 * inside the level to bucket (expiration / tick_L) % wheel_size.
 *
 * Granularity and range.  All wheel arithmetic is in whole level-0 ticks, so
 * nothing overflows: a deadline d (ns, at most INT64_MAX) becomes the tick
 * count E = ceil(d / tick), and level L's tick is wheel_size^L of those.  A
 * level whose span would pass 2^64 ticks is the last one ever needed, since
 * no expiration lies 2^63 ticks ahead of any clock.  With 20 buckets of 1 ms:
 *
 *     level  tick        span           level  tick         span
 *       0    1 ms        20 ms            4    2.67 min     53.3 min
 *       1    20 ms       400 ms           5    53.3 min     17.8 h
 *       2    400 ms      8 s              6    17.8 h       14.8 d
 *       3    8 s         2.67 min         9    ...          324 years
 *
 * so 10 levels cover TB_MAX_DELAY (2^62 ns, 146 years).  The add itself
 * (locate) makes the same comparisons and its one division in ns, with
 * every level's clock and span kept in ns as well: exact, with one
 * division where converting to ticks first would take two.
 *
 * Buckets (TimerTaskList).  A circular doubly linked list with a sentinel and
 * its own expiration (-1 when unset).  Adding a task sets the bucket's
 * expiration to its start time; when that changes (setExpiration returns
 * true) the bucket is offered, once, to the delay queue: a binary min-heap of
 * buckets ordered by expiration.  A bucket holds one revolution's tasks at a
 * time, so it is offered once per revolution.
 *
 * Advancing (SystemTimer.advanceClock).  Take the earliest bucket from the
 * delay queue if it is due; move every level's clock to its expiration; empty
 * it and re-add each task, which either drops to a lower level (a cascade,
 * stats.cascades) or is due and goes to the executor.  Time jumps from one
 * bucket that holds (or held) work to the next (stats.ticks counts these
 * polls): there are no empty ticks.  A bucket emptied by cancels stays
 * queued until its time and is then polled for nothing (stats.empty_ticks).
 * Virtual mode: tb_advance(now) repeats this, one bucket at a time, running
 * the due tasks in the caller's thread after each, until no bucket is due
 * by `now`.
 * As in Kafka the clocks move only to polled buckets' times, so after an
 * idle spell they lag the real clock and a short timer added then may land
 * a level higher than its delay suggests and cascade down at once.  Even a
 * delay of 0 goes to the executor at once only while the level-0 clock is
 * current: after 5 s idle at the defaults it lands in a level-2 bucket that
 * is already due, and reaches the executor by cascading through level 1.
 *
 * Complexity.  Insert O(m) for m levels: a compare per level (starting at
 * the lowest level the distance's top bit allows) and one division, by a
 * reciprocal, to find the bucket (m <= 10 for any delay at the defaults).
 * Cancel O(1), an unlink.  Each delay-queue offer and poll is O(log b) over
 * the b <= m * wheel_size buckets queued, independent of the number of
 * tasks.  A task cascades at most once per level on its way down.
 *
 * Threads.  A reaper thread (SystemTimerReaper) loops on a bounded poll of
 * the delay queue (DelayQueue.poll(200 ms), cfg.poll_ns): it sleeps until the
 * head bucket is due or the poll times out, and is woken at once when an
 * offer makes an earlier bucket the head.  It flushes every due bucket in one
 * go, as SystemTimer does under its write lock, and hands due tasks to an
 * executor pool of cfg.threads threads (default 1, as SystemTimer's
 * newFixedThreadPool(1)) through a FIFO queue.  stats.wakeups and
 * timed_waits count the reaper's waits only; the executors wait untimed.
 *
 * Where it departs from Kafka (never early, one mutex, periodic tasks,
 * max_pending, cancel after hand-off, shutdown, the lagging wheel clock) is
 * told for a reader in README.md, "Where it deliberately differs from
 * Kafka".  What the code keeps because of them: E rounds a deadline UP to
 * the tick (never early); clock 0 is the epoch of the tick grid (Kafka:
 * milliseconds since the Unix epoch), both dividing absolute time; a
 * periodic re-arm is an insert and is refused like one (D1); a task is
 * pending (tb_pending, Kafka's size()) only while it sits in a bucket, and
 * running once handed to the executor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"

#define HW_MAX_LEVELS 64          /* wheel_size >= 2: 63 levels pass 2^63 */
#define HW_MAX_WHEEL (1 << 20)
#define HW_DEFAULT_TICK TB_MS
#define HW_DEFAULT_WHEEL 20
#define HW_DEFAULT_POLL (200 * TB_MS)
#define HW_UNSET (-1)             /* TimerTaskList's unset expiration */

struct hw_link {
    struct hw_link *prev, *next;
};

/* 64 bytes: the shared header, the bucket links (TimerTaskEntry) and 8
 * bytes of padding (below).  A task in state RUNNING is still in the
 * executor's queue while its link is set, and executing once take_ready has
 * unlinked it (list_unlink clears the link), so no field says which. */
struct hw_task {
    struct tb_task base;
    struct hw_link link;
    /* one record per cache line: at 56 bytes three records in four
     * straddle two lines, and an expiry at 10^6 took 5.97 D1 and 1.10 LL
     * misses per timer against 3.07 and 0.89 at 64 (bench/cgops) */
    char pad[8];
};

_Static_assert(sizeof(struct hw_task) == 64, "a task record is one cache line");

/* TimerTaskList: sentinel and expiration in level-0 ticks.  A bucket is in
 * the delay queue exactly while its expiration is set (not HW_UNSET): it is
 * offered when the expiration is set and leaves only by a poll, which unsets
 * it. */
struct hw_bucket {
    struct hw_link root;
    int64_t expiration;
};

/* A delay-queue slot caches its bucket's expiration, so the sift loops
 * compare keys in the array and never touch a bucket. */
struct hw_dq_entry {
    int64_t expiration;
    struct hw_bucket *bucket;
};

/* One level: what an add reads first (the clock, span and tick in ns, see
 * locate; the bucket index and array; the clock and tick in ticks for the
 * bucket's start), then what only advancing and the slow paths read.
 * Padded to 128 bytes so that a level's address is a shift of its number
 * (at 96 an add took one instruction more and an exp1000 at 10^3 about 6
 * more per timer fired, bench/cgops). */
struct hw_level {
    /* current * tick_ns (below 2^64: current is at most
     * ceil(INT64_MAX / tick_ns)); interval * tick_ns saturated; division
     * by tick * tick_ns (quotient 0 past 2^63, as any offset locate
     * divides is below it) */
    uint64_t current_ns;
    uint64_t interval_ns;
    struct tb_udiv tick_ns_div;
    uint32_t current_idx; /* (current / tick) % wheel_size */
    struct hw_bucket *buckets;
    int64_t current;      /* level clock, a multiple of tick */
    uint64_t tick;        /* in level-0 ticks: wheel_size^level */
    uint64_t interval;    /* tick * wheel_size; UINT64_MAX past 2^64 */
    struct tb_udiv tick_div;
    uint64_t current_q;   /* current / tick */
    char pad[128 - 96];
};

_Static_assert(sizeof(struct hw_level) == 128, "a level is 128 bytes");

struct hw {
    struct tb_sched base;
    int64_t tick_ns;
    struct tb_udiv tick_div;   /* by tick_ns */
    struct tb_udiv wheel_div;  /* by wheel_size */
    uint32_t wheel_size;
    int nlevels;
    uint64_t tick_round;       /* tick_ns - 1 */
    /* first_level_ns[b]: the lowest level whose span passes 2^b ns; a task
     * b bits ahead of the level-0 clock lies in no level below it */
    uint8_t first_level_ns[64];
    struct hw_level levels[HW_MAX_LEVELS];
    struct hw_dq_entry *dq; /* the delay queue: min-heap on expiration */
    size_t dq_size, dq_cap;
    size_t size;           /* tasks in buckets: Kafka's taskCounter */
    struct hw_link ready;  /* the executor's queue, FIFO */
    size_t nready;
    size_t executing;
    pthread_mutex_t lock;
    pthread_cond_t available;  /* the delay queue's head changed */
    pthread_cond_t work;       /* the executor queue got a task */
    struct tb_threads threads; /* the reaper, then cfg.threads executors */
    bool shutdown, stopped;
    struct tb_stats st;
};

static inline struct hw *hw_of(struct tb_sched *s) { return (struct hw *)s; }

static inline void hw_lock(struct hw *w)
{
    if (w->base.threaded)
        pthread_mutex_lock(&w->lock);
}

static inline void hw_unlock(struct hw *w)
{
    if (w->base.threaded)
        pthread_mutex_unlock(&w->lock);
}

static inline struct hw_task *task_of(struct hw_link *l)
{
    return (struct hw_task *)(void *)((char *)l -
                                      offsetof(struct hw_task, link));
}

/* ---- Lists ------------------------------------------------------------- */

static inline void list_init(struct hw_link *root)
{
    root->prev = root->next = root;
}

/* TimerTaskList.add: at the tail, so a bucket flushes in insertion order. */
static inline void list_append(struct hw_link *root, struct hw_link *l)
{
    struct hw_link *tail = root->prev;
    l->next = root;
    l->prev = tail;
    tail->next = l;
    root->prev = l;
}

/* Unlinks l from its ring and leaves its links as they were: for a record
 * about to go back to the pool, where clearing them would be two wasted
 * stores on every cancel. */
static inline void list_unlink_only(struct hw_link *l)
{
    l->next->prev = l->prev;
    l->prev->next = l->next;
}

static inline void list_unlink(struct hw_link *l)
{
    list_unlink_only(l);
    l->next = l->prev = NULL;
}

/* ---- Time -------------------------------------------------------------- */

/* Deadline to expiration in level-0 ticks, rounded up: the tick boundary at
 * or after d, so that no task is filed before its deadline. */
static inline int64_t ticks_up(const struct hw *w, int64_t d)
{
    /* deadlines are never negative: both clocks start at or above 0 */
    uint64_t q = tb_udiv(&w->tick_div, (uint64_t)d);
    return (int64_t)(q + (q * (uint64_t)w->tick_ns != (uint64_t)d));
}

/* Tick count to monotonic ns, saturated: when a bucket falls due. */
static inline int64_t ticks_ns(const struct hw *w, int64_t ticks)
{
    return ticks > INT64_MAX / w->tick_ns ? INT64_MAX : ticks * w->tick_ns;
}

/* ---- The delay queue --------------------------------------------------- */

/* PriorityQueue.siftUp / siftDown on the cached keys, same comparisons as
 * java.util.PriorityQueue; every level moved counts in stats.sift_levels. */
static size_t dq_sift_up(struct hw *w, size_t k, struct hw_dq_entry x)
{
    struct hw_dq_entry *q = w->dq;
    uint64_t moved = 0;
    while (k > 0) {
        size_t parent = (k - 1) >> 1;
        if (q[parent].expiration <= x.expiration)
            break;
        q[k] = q[parent];
        k = parent;
        moved++;
    }
    q[k] = x;
    w->st.sift_levels += moved;
    return k;
}

static void dq_sift_down(struct hw *w, size_t k, struct hw_dq_entry x)
{
    struct hw_dq_entry *q = w->dq;
    size_t n = w->dq_size, half = n >> 1;
    uint64_t moved = 0;
    while (k < half) {
        size_t child = (k << 1) + 1;
        size_t right = child + 1;
        if (right < n && q[right].expiration < q[child].expiration)
            child = right;
        if (x.expiration <= q[child].expiration)
            break;
        q[k] = q[child];
        k = child;
        moved++;
    }
    q[k] = x;
    w->st.sift_levels += moved;
}

/* DelayQueue.offer.  Capacity never runs out: it grows with the levels to
 * one slot per bucket, and a bucket is queued at most once.  A new head
 * means the reaper is sleeping for the wrong time, so it is woken. */
static void dq_offer(struct hw *w, struct hw_bucket *b)
{
    struct hw_dq_entry x = {b->expiration, b};
    size_t k = dq_sift_up(w, w->dq_size++, x);
    w->st.bucket_offers++;
    if (k == 0 && w->base.threaded)
        pthread_cond_signal(&w->available);
}

/* Takes the head; the caller unsets its expiration once flushed. */
static struct hw_bucket *dq_poll(struct hw *w)
{
    struct hw_bucket *first = w->dq[0].bucket;
    struct hw_dq_entry last = w->dq[--w->dq_size];
    if (w->dq_size)
        dq_sift_down(w, 0, last);
    return first;
}

/* ---- Levels ------------------------------------------------------------ */

static void level_set_clock(struct hw *w, struct hw_level *lv, int64_t time)
{
    uint64_t q = tb_udiv(&lv->tick_div, (uint64_t)time);
    /* the clock only moves forward: within one revolution the index just
     * moves on by the ticks passed, no second division */
    if (q >= lv->current_q && q - lv->current_q < w->wheel_size) {
        uint64_t idx = lv->current_idx + (q - lv->current_q);
        lv->current_idx = (uint32_t)(idx >= w->wheel_size
                                         ? idx - w->wheel_size
                                         : idx);
    } else {
        lv->current_idx =
            (uint32_t)(q - tb_udiv(&w->wheel_div, q) * w->wheel_size);
    }
    lv->current_q = q;
    lv->current = (int64_t)(q * lv->tick);
    lv->current_ns = (uint64_t)lv->current * (uint64_t)w->tick_ns;
}

/* a * b, saturated at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return b && a > UINT64_MAX / b ? UINT64_MAX : a * b;
}

/* TimingWheel's constructor, for level `n`: buckets all unset, the clock
 * the level below's clock rounded down to this level's tick. */
static __attribute__((noinline, cold)) int
level_create(struct hw *w, uint64_t tick, int64_t start)
{
    int n = w->nlevels;
    size_t cap = (size_t)(n + 1) * w->wheel_size;
    struct hw_bucket *b = tb_mem_calloc(&w->base, w->wheel_size, sizeof *b);
    if (!b)
        return TB_ENOMEM;
    struct hw_dq_entry *dq = tb_mem_realloc(&w->base, w->dq,
                                           w->dq_cap * sizeof *dq,
                                           cap * sizeof *dq);
    if (!dq) {
        tb_mem_free(&w->base, b, w->wheel_size * sizeof *b);
        return TB_ENOMEM;
    }
    w->dq = dq;
    w->dq_cap = cap;
    for (uint32_t i = 0; i < w->wheel_size; i++) {
        list_init(&b[i].root);
        b[i].expiration = HW_UNSET;
    }
    struct hw_level *lv = &w->levels[n];
    lv->tick = tick;
    lv->tick_div = tb_udiv_make(tick);
    lv->interval = mul_sat(tick, w->wheel_size);
    lv->interval_ns = mul_sat(lv->interval, (uint64_t)w->tick_ns);
    lv->tick_ns_div = tb_udiv_make(mul_sat(tick, (uint64_t)w->tick_ns));
    lv->buckets = b;
    level_set_clock(w, lv, start);
    w->nlevels = n + 1;
    w->st.levels = (uint64_t)w->nlevels;
    return TB_OK;
}

#define HW_DUE (-1)      /* within the current tick: to the executor */
#define HW_NO_LEVEL (-2) /* a level was needed, memory was not */

/* The level of TimingWheel.add's recursion, in level-0 ticks: the lowest
 * whose span, from its own clock, holds tick e, creating levels on the way
 * as addOverflowWheel does.  Only what locate leaves comes here (a new
 * level, or a distance past 2^63 ns), and tb_check, so it walks up from
 * level 0.  Re-adds from a flush only go down, so they never create one. */
static int find_level(struct hw *w, int64_t e)
{
    if (e <= w->levels[0].current)
        return HW_DUE;
    int l = 0;
    while ((uint64_t)(e - w->levels[l].current) >= w->levels[l].interval) {
        if (l + 1 == w->nlevels &&
            level_create(w, w->levels[l].interval, w->levels[l].current))
            return HW_NO_LEVEL;
        l++;
    }
    return l;
}

#define HW_SLOW (-3) /* locate: take place_slow's path */

/* Where an add files a task: level `level` (or HW_DUE, HW_NO_LEVEL,
 * HW_SLOW), `off` buckets past the level clock's bucket.  Returned by
 * value, in two registers, so that the offset never goes through memory. */
struct hw_place {
    int level;
    uint64_t off;
};

/* find_level and the bucket's division in one step, in ns, for an existing
 * level: TimingWheel.add divides the expiration once, by the level's tick,
 * and so does this, where going through ticks_up and bucket_add divides
 * twice.  With D = d + tick_ns - 1, ceil(d / tick_ns) is floor(D / tick_ns),
 * and floor(floor(x / a) / b) = floor(x / (a * b)), so every comparison and
 * the offset in level-0 ticks carry over to ns exactly: due when D is below
 * (current_0 + 1) * tick_ns, level L holds it when D - current_L * tick_ns
 * is below its span in ns, and the bucket is that difference divided by
 * tick_L * tick_ns.  HW_DUE, a level with `off` its bucket's distance
 * from the clock's in ticks of that level, or HW_SLOW where find_level would
 * create a level (or the difference reaches 2^63, past tb_udiv).  D below
 * current_0 * tick_ns is tested apart so that no sum can overflow. */
static inline __attribute__((always_inline)) struct hw_place
locate(const struct hw *w, int64_t deadline)
{
    uint64_t d = (uint64_t)deadline + w->tick_round;
    uint64_t c0 = w->levels[0].current_ns;
    if (d < c0 || d - c0 < (uint64_t)w->tick_ns)
        return (struct hw_place){HW_DUE, 0};
    int l = w->first_level_ns[63 - __builtin_clzll(d - c0)];
    if (l >= w->nlevels)
        return (struct hw_place){HW_SLOW, 0};
    while (d - w->levels[l].current_ns >= w->levels[l].interval_ns)
        if (++l == w->nlevels)
            return (struct hw_place){HW_SLOW, 0};
    uint64_t x = d - w->levels[l].current_ns;
    if (x >> 63)
        return (struct hw_place){HW_SLOW, 0};
    return (struct hw_place){l, tb_udiv(&w->levels[l].tick_ns_div, x)};
}

/* locate's HW_SLOW cases, in ticks: find_level (which may create a level)
 * and the bucket's distance by the level's tick. */
static __attribute__((noinline, cold)) struct hw_place
place_slow(struct hw *w, int64_t deadline)
{
    int64_t e = ticks_up(w, deadline);
    int l = find_level(w, e);
    if (l < 0)
        return (struct hw_place){l, 0};
    const struct hw_level *lv = &w->levels[l];
    return (struct hw_place){
        l, tb_udiv(&lv->tick_div, (uint64_t)(e - lv->current))};
}

/* Where TimingWheel.add files a task due at `deadline`: HW_DUE, a level
 * (see locate), or HW_NO_LEVEL. */
static inline __attribute__((always_inline)) struct hw_place
place(struct hw *w, int64_t deadline)
{
    struct hw_place p = locate(w, deadline);
    return __builtin_expect(p.level != HW_SLOW, 1) ? p
                                                   : place_slow(w, deadline);
}

/* TimingWheel.advanceClock: each level moves on when the time has reached
 * its next tick; a level that does not move holds the ones above it too. */
static void advance_clock(struct hw *w, int64_t time)
{
    for (int l = 0; l < w->nlevels; l++) {
        struct hw_level *lv = &w->levels[l];
        if ((uint64_t)(time - lv->current) < lv->tick)
            break;
        level_set_clock(w, lv, time);
    }
}

/* ---- Tasks ------------------------------------------------------------- */

static void retire(struct hw *w, struct hw_task *t)
{
    tb_task_set_state(&t->base, TB_TASK_DONE);
    tb_pool_put(&w->base.pool, &t->base);
}

/* SystemTimer.addTimerTaskEntry's "already expired" branch: the task goes
 * to the executor, and from now on counts as running. */
static void hand_off(struct hw *w, struct hw_task *t)
{
    tb_task_set_state(&t->base, TB_TASK_RUNNING);
    list_append(&w->ready, &t->link);
    w->nready++;
    w->st.running++;
    if (w->base.threaded)
        pthread_cond_signal(&w->work);
}

/* The bucket half of TimingWheel.add: files the task in level l `off`
 * buckets past the clock's and offers the bucket if its expiration changed
 * (TimerTaskList.setExpiration).  (e / tick) % size is found from the
 * clock's bucket: the clock is a multiple of the tick, so one division
 * (place's) gives both bucket and start time. */
static inline __attribute__((always_inline)) void
bucket_add_off(struct hw *w, struct hw_task *t, int l, uint64_t off)
{
    struct hw_level *lv = &w->levels[l];
    uint64_t idx = lv->current_idx + off;
    if (idx >= w->wheel_size)
        idx -= w->wheel_size;
    struct hw_bucket *b = &lv->buckets[idx];
    list_append(&b->root, &t->link);
    w->size++;
    if (w->size > w->st.peak_pending)
        w->st.peak_pending = w->size;
    int64_t start = lv->current + (int64_t)(off * lv->tick);
    if (b->expiration != start) {
        b->expiration = start;
        dq_offer(w, b);
    }
}

/* SystemTimer.addTimerTaskEntry, the insert path of new tasks, periodic
 * re-arms and flushes alike: as `place` said, into level l's bucket `off`
 * buckets past the clock's, or to the executor. */
static inline __attribute__((always_inline)) void
insert(struct hw *w, struct hw_task *t, struct hw_place p)
{
    if (p.level == HW_DUE)
        hand_off(w, t);
    else
        bucket_add_off(w, t, p.level, p.off);
}

/* TimerTaskList.flush with SystemTimer.addTimerTaskEntry as the action:
 * each task drops to a lower level or, due now, goes to the executor. */
static void flush(struct hw *w, struct hw_bucket *b)
{
    w->st.ticks++;
    if (b->root.next == &b->root)
        w->st.empty_ticks++;
    /* detach the whole list, then re-add one by one in list order (each
     * re-add rewrites the task's links, so unlinking each first is wasted
     * stores); no re-add can land in b, whose time has come */
    struct hw_link *k = b->root.next;
    list_init(&b->root);
    while (k != &b->root) {
        struct hw_task *t = task_of(k);
        k = k->next;
        w->size--;
        struct hw_place p = place(w, t->base.deadline); /* never NO_LEVEL */
        w->st.cascades += p.level != HW_DUE;
        insert(w, t, p);
    }
    b->expiration = HW_UNSET;
}

/* Polls one due bucket (its expiration <= now_ticks), advances the clocks
 * to it and flushes it.  False if none is due. */
static bool expire_one(struct hw *w, int64_t now_ticks)
{
    if (!w->dq_size || w->dq[0].expiration > now_ticks)
        return false;
    struct hw_bucket *b = dq_poll(w);
    advance_clock(w, b->expiration);
    flush(w, b);
    return true;
}

static struct hw_task *take_ready(struct hw *w)
{
    struct hw_task *t = task_of(w->ready.next);
    list_unlink(&t->link);
    w->nready--;
    return t;
}

/* Runs a task taken from the executor's queue with the lock released, then
 * re-arms a periodic one through the insert path or retires it.  Lock held
 * on entry and exit. */
static void run_task(struct hw *w, struct hw_task *t)
{
    w->executing++;
    hw_unlock(w);
    int failed = t->base.fn(t->base.arg) != 0;
    int64_t end = tb_clock_now(&w->base);
    hw_lock(w);
    w->executing--;
    w->st.running--;
    w->st.fired++;
    if (failed)
        w->st.failed++;
    /* cancelled during its run, done, failed, or no re-arm after shutdown */
    if (tb_run_ends(&t->base, failed, w->shutdown, &w->st)) {
        retire(w, t);
        return;
    }
    t->base.deadline = tb_next_deadline(t->base.deadline, t->base.period, end);
    if (t->base.deadline == INT64_MAX) {
        /* the next run would fall at the end of the clock: this was the
         * last, as for a one-shot */
        w->st.finished++;
        retire(w, t);
        return;
    }
    /* D1: a full timer refuses the re-arm as it refuses a schedule (Kafka's
     * add has no cap; the interface's is checked the same way for both) */
    size_t max = w->base.cfg.max_pending;
    struct hw_place p = {HW_NO_LEVEL, 0};
    if (!max || w->size < max)
        p = place(w, t->base.deadline);
    if (p.level == HW_NO_LEVEL) {
        w->st.rejected++;
        w->st.finished++;
        retire(w, t);
        return;
    }
    tb_task_set_state(&t->base, TB_TASK_WAITING);
    insert(w, t, p);
}

/* ---- Operations -------------------------------------------------------- */

/* SystemTimer.add, lock held (or virtual). */
static inline int schedule_locked(struct hw *w, int64_t deadline,
                                  int64_t period, tb_fn fn, void *arg,
                                  tb_handle *handle)
{
    struct tb_sched *s = &w->base;
    int rc = TB_OK;
    struct hw_place p;
    if (w->shutdown) {
        rc = TB_ESHUTDOWN;
    } else if (s->cfg.max_pending && w->size >= s->cfg.max_pending) {
        rc = TB_EFULL;
    } else if ((p = place(w, deadline)).level == HW_NO_LEVEL) {
        rc = TB_ENOMEM;
    } else {
        struct hw_task *t =
            (struct hw_task *)(void *)tb_pool_get(&s->pool, handle);
        if (!t) {
            rc = TB_ENOMEM;
        } else {
            tb_task_set(&t->base, deadline, period, fn, arg);
            w->st.submitted++;
            insert(w, t, p);
        }
    }
    if (rc)
        w->st.rejected++;
    return rc;
}

static __attribute__((noinline)) int
schedule_slow(struct hw *w, int64_t deadline, int64_t period, tb_fn fn,
              void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    if (!w->base.threaded)
        return schedule_locked(w, deadline, period, fn, arg, handle);
    pthread_mutex_lock(&w->lock);
    int rc = schedule_locked(w, deadline, period, fn, arg, handle);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* The common case of a virtual-clock schedule, as a leaf function: a free
 * record at hand and an existing level that holds the task.  Anything else
 * (threads, shutdown, max_pending, due now, a new level, pool growth) takes
 * schedule_slow, which is the same insert with every check. */
static inline __attribute__((always_inline)) int
hw_schedule_on(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
                tb_handle *handle, int64_t period, bool virt)
{
    struct hw *w = hw_of(s);
    struct hw_place p;
    /* virt: not shut down either (after a shutdown the core calls
     * hw_schedule instead, D48) */
    if ((!virt && (s->threaded || s->cfg.max_pending || w->shutdown)) ||
        s->pool.free_head == TB_POOL_NIL ||
        (p = locate(w, deadline)).level < 0)
        return schedule_slow(w, deadline, period, fn, arg, handle);
    struct hw_task *t =
        (struct hw_task *)(void *)tb_pool_get_unlocked(&s->pool, handle);
    tb_task_set(&t->base, deadline, period, fn, arg);
    w->st.submitted++;
    bucket_add_off(w, t, p.level, p.off);
    return TB_OK;
}

static int hw_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return hw_schedule_on(s, deadline, fn, arg, handle, period, false);
}

/* hw_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): the clock mode and the limit are tested once, at creation,
 * not on every call. */
static int hw_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return hw_schedule_on(s, deadline, fn, arg, handle, period, true);
}

/* TimerTask.cancel: unlinks the entry from its bucket at once.  Lock held,
 * or `virt` (a constant: the virtual path then makes no call at all). */
static inline __attribute__((always_inline)) int
cancel_locked(struct hw *w, tb_handle h, bool virt)
{
    struct tb_sched *s = &w->base;
    int rc = 0;
    /* the virtual clock's common case first: a handle naming a WAITING
     * record, found in one compare of its word */
    struct hw_task *t = (struct hw_task *)(void *)(
        virt ? tb_pool_waiting_unlocked(&s->pool, h) : NULL);
    uint32_t state = TB_TASK_WAITING;
    if (!t) {
        t = (struct hw_task *)(void *)(virt ? tb_pool_lookup_unlocked(
                                                  &s->pool, h)
                                            : tb_pool_lookup(&s->pool, h));
        if (t)
            state = tb_task_get_state(&t->base);
    }
    if (t) {
        if (state == TB_TASK_WAITING) {
            list_unlink_only(&t->link);
            w->size--;
            w->st.cancelled++;
            /* no other thread can see the record (lock or virtual), so it
             * goes straight back to the pool without passing DONE */
            if (virt)
                tb_pool_put_handle_unlocked(&s->pool, &t->base, h);
            else
                tb_pool_put(&s->pool, &t->base);
            rc = 1;
        } else if (state == TB_TASK_RUNNING && t->base.period) {
            w->st.cancelled++;
            rc = 1;
            if (t->link.next) { /* still queued, not started: recall it */
                list_unlink(&t->link);
                w->nready--;
                w->st.running--;
                retire(w, t);
            } else { /* running: the runner retires it */
                tb_task_set_state(&t->base, TB_TASK_CANCELLED);
            }
        }
    }
    return rc;
}

static __attribute__((noinline)) int cancel_threaded(struct hw *w,
                                                     tb_handle h)
{
    pthread_mutex_lock(&w->lock);
    int rc = cancel_locked(w, h, false);
    pthread_mutex_unlock(&w->lock);
    return rc;
}

static int hw_cancel(struct tb_sched *s, tb_handle h)
{
    struct hw *w = hw_of(s);
    if (s->threaded)
        return cancel_threaded(w, h);
    return cancel_locked(w, h, true);
}

/* hw_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int hw_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_locked(hw_of(s), h, true);
}

static size_t hw_pending(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    hw_lock(w);
    size_t n = w->size;
    hw_unlock(w);
    return n;
}

/* Virtual mode: the reaper's loop and the executor in the caller's thread,
 * one bucket at a time so that runs keep tick order. */
static long hw_advance(struct tb_sched *s, int64_t now)
{
    struct hw *w = hw_of(s);
    long ran = 0;
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    /* Buckets due by the last tick boundary the clock has reached; at the
     * end of the clock also the one it falls in, which is partial unless
     * the tick divides INT64_MAX: no later time reaches its boundary, and
     * a task in it (delay 0 at INT64_MAX among them) would otherwise never
     * run (issue 42).  The level clocks are made for it (struct hw_level:
     * current is at most ceil(INT64_MAX / tick_ns)).  Kafka has no such
     * end: its millisecond clock is a long far from its limit. */
    int64_t now_ticks = now == INT64_MAX ? ticks_up(w, now)
                                         : now / w->tick_ns;
    for (;;) {
        while (w->nready) {
            run_task(w, take_ready(w));
            ran++;
        }
        if (!expire_one(w, now_ticks))
            break;
    }
    return ran;
}

/* ---- Threaded mode: reaper and executors ------------------------------- */

/* One DelayQueue.poll(poll_ns): true when a bucket is due, false when the
 * poll timed out or the timer shut down.  Lock held. */
static bool reaper_poll(struct hw *w)
{
    int64_t now = tb_monotonic_ns();
    int64_t limit = now > INT64_MAX - w->base.cfg.poll_ns
                        ? INT64_MAX
                        : now + w->base.cfg.poll_ns;
    for (;;) {
        if (w->shutdown)
            return false;
        if (w->dq_size && w->dq[0].expiration <= now / w->tick_ns)
            return true;
        if (now >= limit)
            return false;
        int64_t wake = limit;
        if (w->dq_size) {
            int64_t due = ticks_ns(w, w->dq[0].expiration);
            if (due < wake)
                wake = due;
        }
        struct timespec ts;
        tb_abstime(&ts, wake);
        w->st.timed_waits++;
        pthread_cond_timedwait(&w->available, &w->lock, &ts);
        w->st.wakeups++;
        now = tb_monotonic_ns();
    }
}

/* SystemTimerReaper.Reaper.doWork in a loop: advanceClock(poll_ns), which
 * flushes every due bucket before it polls again. */
static void *reaper_main(void *arg)
{
    struct hw *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->shutdown) {
        if (!reaper_poll(w))
            continue;
        while (expire_one(w, tb_monotonic_ns() / w->tick_ns))
            ;
    }
    tb_threads_end(&w->threads);
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

/* An executor thread: takes tasks in hand-off order.  After tb_shutdown it
 * finishes the queue; after tb_shutdown_now it stops after its current
 * run. */
static void *executor_main(void *arg)
{
    struct hw *w = arg;
    pthread_mutex_lock(&w->lock);
    while (!w->stopped) {
        if (w->nready)
            run_task(w, take_ready(w));
        else if (w->shutdown)
            break;
        else
            pthread_cond_wait(&w->work, &w->lock);
    }
    tb_threads_end(&w->threads);
    pthread_cond_broadcast(&w->work); /* let the others see the exit */
    pthread_mutex_unlock(&w->lock);
    return NULL;
}

static int hw_start(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    pthread_mutex_lock(&w->lock);
    int rc = tb_threads_begin(&w->threads, w->shutdown);
    if (!rc)
        rc = tb_threads_spawn(&w->threads, reaper_main, w);
    while (!rc && w->threads.created < w->threads.cap)
        rc = tb_threads_spawn(&w->threads, executor_main, w);
    if (rc == TB_ENOMEM) { /* stop the ones that did start */
        w->shutdown = w->stopped = true;
        pthread_cond_broadcast(&w->available);
        pthread_cond_broadcast(&w->work);
    }
    pthread_mutex_unlock(&w->lock);
    return rc;
}

/* ---- Shutdown ---------------------------------------------------------- */

/* Empties every bucket and the delay queue; each task is dropped (and shown
 * to `visit`).  Returns how many. */
static long drop_wheel(struct hw *w, tb_unrun_fn visit, void *ctx)
{
    long n = 0;
    for (int l = 0; l < w->nlevels; l++) {
        for (uint32_t i = 0; i < w->wheel_size; i++) {
            struct hw_bucket *b = &w->levels[l].buckets[i];
            while (b->root.next != &b->root) {
                struct hw_task *t = task_of(b->root.next);
                list_unlink(&t->link);
                if (visit)
                    visit(ctx, tb_pool_handle(&w->base.pool, &t->base),
                          t->base.fn, t->base.arg);
                w->st.dropped++;
                retire(w, t);
                n++;
            }
            b->expiration = HW_UNSET;
        }
    }
    w->dq_size = 0;
    w->size = 0;
    return n;
}

static long hw_shutdown(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    long n = 0;
    hw_lock(w);
    if (!w->shutdown) {
        w->shutdown = true;
        n = drop_wheel(w, NULL, NULL);
        if (w->base.threaded) {
            pthread_cond_broadcast(&w->available);
            pthread_cond_broadcast(&w->work);
        }
    }
    hw_unlock(w);
    return n;
}

static long hw_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct hw *w = hw_of(s);
    hw_lock(w);
    w->shutdown = w->stopped = true;
    long n = drop_wheel(w, visit, ctx);
    while (w->nready) { /* handed off but not started */
        struct hw_task *t = take_ready(w);
        if (visit)
            visit(ctx, tb_pool_handle(&s->pool, &t->base), t->base.fn,
                  t->base.arg);
        w->st.running--;
        w->st.dropped++;
        retire(w, t);
        n++;
    }
    if (w->base.threaded) {
        pthread_cond_broadcast(&w->available);
        pthread_cond_broadcast(&w->work);
    }
    hw_unlock(w);
    return n;
}

static int hw_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct hw *w = hw_of(s);
    return tb_threads_await(s, &w->threads, &w->shutdown, timeout_ns);
}

static void hw_join(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    tb_threads_join(s, &w->threads);
}

/* ---- Setup and introspection ------------------------------------------- */

static int hw_configure(struct tb_config *cfg)
{
    if (cfg->threads == 0)
        cfg->threads = 1;
    if (cfg->tick_ns == 0)
        cfg->tick_ns = HW_DEFAULT_TICK;
    if (cfg->wheel_size == 0)
        cfg->wheel_size = HW_DEFAULT_WHEEL;
    if (cfg->poll_ns == 0)
        cfg->poll_ns = HW_DEFAULT_POLL;
    /* one bucket per level would never widen the span */
    if (cfg->threads > 1024 || cfg->wheel_size < 2 ||
        cfg->wheel_size > HW_MAX_WHEEL)
        return TB_EINVAL;
    return TB_OK;
}

static int hw_init(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    w->tick_ns = s->cfg.tick_ns;
    w->wheel_size = (uint32_t)s->cfg.wheel_size;
    w->tick_div = tb_udiv_make((uint64_t)w->tick_ns);
    w->wheel_div = tb_udiv_make(w->wheel_size);
    w->tick_round = (uint64_t)w->tick_ns - 1;
    for (int b = 0; b < 64; b++) {
        /* level l spans wheel_size^(l+1) * tick_ns ns, saturating */
        int l = 0;
        for (uint64_t span = mul_sat(w->wheel_size, (uint64_t)w->tick_ns);
             span <= (uint64_t)1 << b; l++)
            span = mul_sat(span, w->wheel_size);
        w->first_level_ns[b] = (uint8_t)l;
    }
    list_init(&w->ready);
    /* Kafka starts the wheel at the creation time, rounded down */
    int rc = level_create(w, 1, tb_clock_now(s) / w->tick_ns);
    if (rc)
        return rc;
    if (s->threaded &&
        tb_threads_init(s, &w->threads, 1 + s->cfg.threads, &w->lock,
                        (pthread_cond_t *[]){&w->available, &w->work}, 2)) {
        tb_mem_free(s, w->levels[0].buckets,
                    w->wheel_size * sizeof *w->levels[0].buckets);
        tb_mem_free(s, w->dq, w->dq_cap * sizeof *w->dq);
        return TB_ENOMEM;
    }
    return TB_OK;
}

static void hw_fini(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    for (int l = 0; l < w->nlevels; l++)
        tb_mem_free(s, w->levels[l].buckets,
                    w->wheel_size * sizeof *w->levels[l].buckets);
    tb_mem_free(s, w->dq, w->dq_cap * sizeof *w->dq);
    if (s->threaded)
        tb_threads_fini(s, &w->threads);
}

static void hw_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct hw *w = hw_of(s);
    hw_lock(w);
    *out = w->st;
    out->pending = w->size;
    hw_unlock(w);
}

/* ---- The invariant checker --------------------------------------------- */

static int check_levels(struct hw *w)
{
    TB_CHECK(w->nlevels >= 1 && (uint64_t)w->nlevels == w->st.levels,
             "%d levels, counted %llu", w->nlevels,
             (unsigned long long)w->st.levels);
    for (int l = 0; l < w->nlevels; l++) {
        const struct hw_level *lv = &w->levels[l];
        uint64_t tick = l ? w->levels[l - 1].interval : 1;
        TB_CHECK(lv->tick == tick, "level %d ticks %llu, not %llu", l,
                 (unsigned long long)lv->tick, (unsigned long long)tick);
        TB_CHECK(l + 1 == w->nlevels || lv->interval != UINT64_MAX,
                 "level %d spans everything yet has a level above", l);
        int64_t want = w->levels[0].current -
                       (int64_t)((uint64_t)w->levels[0].current % lv->tick);
        TB_CHECK(lv->current == want,
                 "level %d clock %lld, not level 0's rounded down (%lld)", l,
                 (long long)lv->current, (long long)want);
        TB_CHECK(lv->current_idx ==
                     ((uint64_t)lv->current / lv->tick) % w->wheel_size,
                 "level %d clock index %u is stale", l, lv->current_idx);
        uint64_t t0 = (uint64_t)w->tick_ns;
        TB_CHECK(lv->current_ns == (uint64_t)lv->current * t0 &&
                     lv->interval_ns == mul_sat(lv->interval, t0),
                 "level %d: clock or span in ns disagrees with its ticks", l);
    }
    return TB_OK;
}

/* Every task sits in the bucket and level its expiration names, inside its
 * level's span; bucket links are whole; expirations match. */
static int check_buckets(struct hw *w)
{
    size_t tasks = 0, set = 0;
    for (int l = 0; l < w->nlevels; l++) {
        const struct hw_level *lv = &w->levels[l];
        for (uint32_t i = 0; i < w->wheel_size; i++) {
            struct hw_bucket *b = &lv->buckets[i];
            set += b->expiration != HW_UNSET;
            for (struct hw_link *k = b->root.next; k != &b->root;
                 k = k->next) {
                TB_CHECK(k->next && k->prev && k->next->prev == k &&
                             k->prev->next == k,
                         "level %d bucket %u: broken links", l, i);
                struct hw_task *t = task_of(k);
                int64_t e = ticks_up(w, t->base.deadline);
                uint64_t vid = (uint64_t)e / lv->tick;
                TB_CHECK(tb_task_get_state(&t->base) == TB_TASK_WAITING,
                         "level %d bucket %u: task in state %u", l, i,
                         tb_task_get_state(&t->base));
                TB_CHECK(vid % w->wheel_size == i &&
                             b->expiration == (int64_t)(vid * lv->tick),
                         "level %d bucket %u (expiration %lld): task expiring "
                         "at tick %lld does not belong",
                         l, i, (long long)b->expiration, (long long)e);
                TB_CHECK(e >= lv->current &&
                             (uint64_t)(e - lv->current) < lv->interval,
                         "level %d: task at tick %lld outside the span", l,
                         (long long)e);
                /* locate's arithmetic in ns against the same add in ticks,
                 * for this deadline and the present clocks (find_level
                 * creates nothing here: level l holds e) */
                struct hw_place ns = locate(w, t->base.deadline);
                struct hw_place tk = place_slow(w, t->base.deadline);
                TB_CHECK(ns.level == HW_SLOW ||
                             (ns.level == tk.level && ns.off == tk.off),
                         "deadline %lld: locate says level %d bucket +%llu, "
                         "ticks say %d +%llu",
                         (long long)t->base.deadline, ns.level,
                         (unsigned long long)ns.off, tk.level,
                         (unsigned long long)tk.off);
                if (++tasks > w->size)
                    break;
            }
            TB_CHECK(b->root.prev->next == &b->root,
                     "level %d bucket %u: tail does not close the ring", l, i);
        }
    }
    TB_CHECK(tasks == w->size, "%zu tasks in buckets, size says %zu", tasks,
             w->size);
    /* with check_queues (distinct queued buckets, each with its expiration
     * set): the queued buckets are exactly those with an expiration */
    TB_CHECK(set == w->dq_size, "%zu buckets have an expiration, %zu queued",
             set, w->dq_size);
    return TB_OK;
}

static int cmp_addr(const void *a, const void *b)
{
    uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
    return (x > y) - (x < y);
}

static int check_queues(struct hw *w)
{
    TB_CHECK(w->dq_size <= w->dq_cap, "delay queue overflows");
    /* no bucket queued twice: sorted addresses (a debug check, so plain
     * malloc, which bytes_held does not see) */
    uintptr_t *seen = malloc((w->dq_size + 1) * sizeof *seen);
    if (seen) {
        for (size_t i = 0; i < w->dq_size; i++)
            seen[i] = (uintptr_t)(void *)w->dq[i].bucket;
        qsort(seen, w->dq_size, sizeof *seen, cmp_addr);
        size_t dup = 0;
        for (size_t i = 1; i < w->dq_size; i++)
            dup += seen[i] == seen[i - 1];
        free(seen);
        TB_CHECK(dup == 0, "%zu buckets queued twice", dup);
    }
    for (size_t i = 0; i < w->dq_size; i++) {
        TB_CHECK(w->dq[i].expiration != HW_UNSET,
                 "delay-queue slot %zu holds a bucket with no expiration", i);
        TB_CHECK(w->dq[i].expiration == w->dq[i].bucket->expiration,
                 "delay-queue slot %zu caches expiration %lld, bucket has %lld",
                 i, (long long)w->dq[i].expiration,
                 (long long)w->dq[i].bucket->expiration);
        TB_CHECK(!i || w->dq[(i - 1) >> 1].expiration <= w->dq[i].expiration,
                 "delay-queue slot %zu precedes its parent", i);
    }
    size_t ready = 0;
    for (struct hw_link *k = w->ready.next; k != &w->ready; k = k->next) {
        struct hw_task *t = task_of(k);
        TB_CHECK(k->next->prev == k, "executor queue: broken links");
        TB_CHECK(tb_task_get_state(&t->base) == TB_TASK_RUNNING,
                 "executor queue: task in state %u",
                 tb_task_get_state(&t->base));
        if (++ready > w->nready)
            break;
    }
    TB_CHECK(ready == w->nready, "executor queue holds %zu, counted %zu", ready,
             w->nready);
    TB_CHECK(w->st.running == w->nready + w->executing,
             "running %llu != queued %zu + executing %zu",
             (unsigned long long)w->st.running, w->nready, w->executing);
    TB_CHECK(w->st.zombies == 0, "zombies counted, but cancel unlinks");
    return TB_OK;
}

static int hw_check(struct tb_sched *s)
{
    struct hw *w = hw_of(s);
    hw_lock(w);
    int rc = check_levels(w);
    if (!rc)
        rc = check_queues(w);
    if (!rc)
        rc = check_buckets(w);
    hw_unlock(w);
    return rc;
}

static const struct tb_backend_ops hw_ops = {
    .sched_size = sizeof(struct hw),
    .task_size = sizeof(struct hw_task),
    .configure = hw_configure,
    .init = hw_init,
    .fini = hw_fini,
    .start = hw_start,
    .schedule = hw_schedule,
    .cancel = hw_cancel,
    .schedule_virtual = hw_schedule_virtual,
    .cancel_virtual = hw_cancel_virtual,
    .pending = hw_pending,
    .advance = hw_advance,
    .shutdown = hw_shutdown,
    .shutdown_now = hw_shutdown_now,
    .await_termination = hw_await_termination,
    .join = hw_join,
    .stats = hw_stats,
    .check = hw_check,
};

const struct tb_backend tb_backend_hierwheel = {
    .name = "hierwheel",
    .description = "Kafka TimingWheel + SystemTimer: lazily grown levels of "
                   "wheels, buckets in a delay queue, reaper + executor",
    .caps = TB_CAP_TICKED,
    .ops = &hw_ops,
};
