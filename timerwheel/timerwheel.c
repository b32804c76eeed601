/*
 * timerwheel — Netty's HashedWheelTimer (4.1): a hashed timing wheel driven
 * by one worker that ticks at a fixed rate, fed by a lock-free inbox.
 *
 * Structure.  A ring of 2^k buckets (cfg.wheel_size rounded up to a power of
 * two, default 512, at most 2^30), indexed by `tick & mask`.  Each bucket is
 * a doubly linked list (head, tail) of timeouts, so a cancel unlinks one in
 * O(1).  Netty's remainingRounds (full revolutions still to wait) is not
 * stored: a timeout due at tick d sits in bucket d & mask, and when the walk
 * of tick k visits it, Netty's counter would be <= 0 exactly when d <= k
 * (it starts at (d - k0) / length when filed at tick k0 <= d and loses one
 * per visit, and visits fall on ticks congruent to d), so the walk compares
 * the deadline with tick k's boundary and counts a round where Netty would
 * decrement.  Which timeouts expire at which tick, in which order, and the
 * visits and rounds counted are Netty's; the record is 64 bytes (one cache
 * line) where a stored counter and bucket index made it 80, and a visit
 * that expires nothing only reads.  The bucket a cancel unlinks from is
 * d & mask, recomputed from the deadline (one multiply by the tick's
 * reciprocal).
 * A bitmap of occupied buckets lets the virtual clock skip idle ticks in bulk
 * (counted exactly as if walked); the threaded worker never skips.  When a
 * whole revolution went by without a run and no entry can expire within the
 * next R revolutions (every entry's rounds >= R), the virtual clock also
 * skips R revolutions at once, and the counters grow by what R walks would
 * have added, so rounds, visits and ticks stay exactly those of the
 * per-tick walk; an advance across the whole clock with a TB_MAX_DELAY
 * timeout on a 1 ms tick costs a few passes, not 9 x 10^9.
 *
 * Time.  Deadlines count from the worker's start time (time 0 in virtual
 * mode).  Tick k is the boundary start + k*tick.  A timeout whose deadline is
 * `rel` ns after the start is due at tick ceil(rel / tick): the first
 * boundary at or after its deadline, never before it.  Netty numbers the same
 * boundary k-1 (it sleeps to start + (tick+1)*tickDuration and files a timeout
 * under floor(deadline/tick)); the schedule of wake-ups is the same, except
 * that a deadline lying exactly on a boundary fires on that boundary here and
 * one tick later in Netty, and that tick 0 (the start instant) exists here so
 * a zero delay at time 0 runs in tb_advance(0).
 *
 * Each tick (run_tick) follows Netty 4.1's Worker.run, in this order:
 *   1. process the cancelled queue: unlink each timeout and drop the pending
 *      count, once (Netty #14959 decremented twice);
 *   2. transfer: move at most 100 000 entries from the inbox into buckets;
 *      cancelled ones are skipped but use up the budget, as in Netty:
 *      bucket = due & mask (Netty's rounds, (due - tick) / wheel length,
 *      are implied by the deadline: above).  An entry
 *      already overdue (due < tick: the budget held it back, or it was
 *      scheduled for a tick already walked) goes straight to the expired
 *      list instead, ahead of the current bucket's entries.  Netty appends
 *      it to the tail of the current bucket (max(due, tick) & mask), where
 *      it runs after entries due at this later tick; the interface's
 *      contract is that wheels run in tick order, so here it runs first
 *      (Netty pull request 15730 proposed the bucket's head; not merged);
 *   3. walk the current bucket: entries due by this tick (Netty: rounds
 *      <= 0) expire, cancelled ones are unlinked, the rest count a round;
 *   4. run the expired timeouts, each claimed by a CAS out of WAITING so a
 *      racing cancel either wins (the task never runs) or loses (returns 0).
 * Netty 4.1 runs each timeout inside the walk (its default executor is
 * ImmediateExecutor); running them right after it gives the same outcome,
 * since a run can only add to the inbox or the cancelled queue, which this
 * tick has already read.  Netty 4.2 (after its pull request 15760)
 * transfers, walks and then processes cancels; a review found no outcome
 * that differs, and 4.1 is followed because it is the version this backend
 * models throughout (with the #14959 pending-count fix), so one Netty
 * version answers every question about its behaviour.
 *
 * Complexity.  schedule O(1) (one exchange on the inbox); cancel O(1) (one
 * CAS on the timeout's state word, one on the cancelled queue; unlinked at
 * the next tick); per tick O(1 + inbox entries + entries in the current
 * bucket): a timeout more than one revolution away is visited once per
 * revolution, which is the price of this design (counted as `visits`).
 *
 * Threads.  Monotonic mode: one worker thread sleeps (timed condition wait)
 * toward start + tick*duration of the next tick, so a stalled worker catches
 * up tick by tick without drift, and wakes every tick even when nothing is
 * due (`empty_ticks`).  It sleeps as Netty's waitForNextTick does: whole
 * milliseconds rounded up, (target - now + 999999) / 1000000 of them,
 * counted from the moment it reads the clock, then it reads the clock
 * again; so a tick starts up to 1 ms after its boundary on top of the wake-up
 * latency, and since each sleep starts where the last tick's work ended,
 * the excess wanders over [0, 1 ms) from tick to tick.  Netty on Windows
 * sleeps in steps of 10 ms (sleepTimeMs / 10 * 10, its issue 356); that is
 * not modelled.  TB_F_EXACT_SLEEP waits to the target's nanosecond
 * instead, to measure what the rounding costs (DECISIONS.md D14).  Tasks run on the worker, as with Netty's default
 * executor.  The wheel, the inbox's front and the list of expired
 * timeouts belong to the worker; it holds `mu` while it works on them and
 * drops it around each task, so a task may call any function of this
 * scheduler.  Producers never take `mu`: schedule pushes onto the inbox, an
 * intrusive multi-producer, single-consumer FIFO (one exchange per push,
 * popped in submission order, see inbox_push); cancel pushes onto a Treiber
 * stack that the worker takes whole with one exchange.  The only lock a
 * producer meets is the core task pool's own short mutex (tb_pool_get,
 * tb_pool_lookup), which the shared pool takes in monotonic mode for every
 * backend.  Shutdown takes
 * `mu` and waits (spinning) for schedules already past their shutdown check
 * to finish their push, so none is stranded in the inbox.
 *
 * Virtual mode runs the same tick code in the caller's thread, with `mu` a
 * no-op and plain loads/stores in place of the atomic read-modify-writes.
 * To keep the interface's catch-up rule (an advance runs everything due by
 * its time), each virtual tick ends with a catch-up pass: entries pushed
 * during the tick that are already due (scheduled by its tasks, or periodic
 * re-arms) are transferred within the same 100 000 budget and run before the
 * next tick; those not yet due are filed relative to the next tick.  The
 * threaded worker, like Netty, leaves them for the next tick.
 *
 * Record lifetime.  Netty relies on the garbage collector; here a cancelled
 * record may be held by the cancelled queue and by one of the worker's
 * singly linked lists (inbox, expired list) at once, so the second
 * of the two to let go frees it (prev == TW_HALF marks that one already
 * did).
 *
 * Deliberate differences from Netty.
 *   - Periodic timers: Netty has none (users re-schedule from run()); the
 *     interface's fixed-rate and fixed-delay tasks re-arm after each run
 *     through the same inbox, using the core's tb_next_deadline.  A periodic
 *     task that fails stops (like a Netty task that throws before re-arming
 *     itself); a one-shot failure is counted and the worker goes on.
 *   - Deadline rounding and tick numbering as described under Time.
 *   - The worker sleeps on a CLOCK_MONOTONIC condition variable (Netty:
 *     Thread.sleep, which a shutdown interrupts as our signal does).
 *   - tb_start() starts the worker (Netty also starts it on first use), and
 *     takes the start time itself instead of waiting for the worker to.
 *   - shutdown_now (Netty's stop()) does not join the worker: it removes and
 *     returns the unrun timeouts itself and the worker exits after its
 *     current task; tb_await_termination() waits.  From inside a task it
 *     fails with TB_ESTATE, as stop() throws.  tb_shutdown() (Netty has no
 *     graceful stop) drops the same timeouts and may be called from a task.
 *   - A cancelled timeout keeps its place under max_pending until the next
 *     tick processes the cancel, exactly as Netty's pendingTimeouts does.
 *   - max_pending also holds for periodic re-arms (DECISIONS D1): a re-arm
 *     that finds the cap reached is refused as a schedule would be (in
 *     Netty the re-arm is run() calling newTimeout, which throws
 *     RejectedExecutionException): the task retires as finished and the
 *     refusal counts once in `rejected`.  The place is taken with a CAS, so
 *     tb_pending() never reads above the cap, not even for an instant.
 *   - shutdown_now's returned timeouts count as `dropped` and leave the
 *     pending count (tb_pending() is 0 afterwards); their handles answer
 *     "not pending".  Netty's stop() cancels them (isCancelled() is true)
 *     and, its worker being gone, never processes those cancels, so
 *     pendingTimeouts() keeps counting them for ever.  The interface's
 *     accounting is shared by every backend (submitted = finished +
 *     cancelled + dropped + pending + running), so the stats follow it.
 *
 * Record: 64 bytes, one cache line (the pool starts records on one): the
 * 40-byte core header, then prev, next and the cancelled-queue link.  The
 * link cannot share a word the way the inbox shares `next`: a canceller
 * writes it while the worker may be writing the timeout's bucket links (a
 * neighbour's unlink), and while the scheduling thread may still be filling
 * the header (the pool publishes the record WAITING before the fill).
 * `prev` also says where a record is when it is in no bucket (TW_QUEUED,
 * TW_HALF); the worker alone reads and writes it.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tb_core.h"
#include "timerwheel_hook.h"

#define TW_DEFAULT_TICK (100 * TB_MS)
#define TW_MIN_TICK TB_MS
#define TW_DEFAULT_WHEEL 512
#define TW_MAX_WHEEL (1 << 30)
#define TW_TRANSFER_LIMIT 100000L

/* One cache line: the pool starts every record on one, so a schedule, a
 * cancel (state word and link) and a visit of the walk (deadline, state
 * word, next) each touch a single line. */
struct tw_timeout {
    struct tb_task base;
    struct tw_timeout *prev;   /* bucket list; out of a bucket: TW_QUEUED or
                                  TW_HALF (below) */
    struct tw_timeout *next;   /* bucket list; also inbox, backlog, expired */
    struct tw_timeout *cnext;  /* cancelled queue */
};

_Static_assert(sizeof(struct tw_timeout) == 64,
               "a timeout record is one cache line");

/* Where a record is, from the worker's point of view, read from `prev`:
 * a bucket's first entry has TW_HEAD there, a later one its predecessor;
 * out of a bucket it is one of the other two.  The marks are addresses
 * that no record has; only compared, never read. */
static struct tw_timeout tw_marks[2];
#define TW_QUEUED NULL         /* in the inbox, the backlog or the expired
                                  list (NULL: what a record has when the
                                  pool hands it out, see retire) */
#define TW_HEAD (&tw_marks[0]) /* first in its bucket */
#define TW_HALF (&tw_marks[1]) /* cancelled, and one of its two holders (the
                                  cancelled queue, or a list) has let go */

struct tw_bucket {
    struct tw_timeout *head, *tail;
};

/* A FIFO of timeouts linked through `next`, owned by the worker. */
struct tw_list {
    struct tw_timeout *head, *tail;
};

struct tw {
    struct tb_sched base;
    struct tw_bucket *wheel;
    uint64_t *occupied;         /* bit b set iff bucket b is not empty */
    size_t nwords;
    uint32_t mask;
    unsigned len_shift;         /* log2 of the wheel length */
    int64_t tick_ns;
    struct tb_udiv tick_div;    /* due_tick without a division */
    int64_t start_ns;           /* the worker's start: tick 0 */
    int64_t next_tick;          /* the next tick to process */
    long budget;                /* transfers left in the current tick */
    int64_t quiet;              /* virtual: ticks in a row that ran nothing */
    size_t in_wheel;            /* entries in buckets */
    struct tw_list expired;     /* unlinked by the walk, not yet run */
    /* the inbox: an intrusive MPSC FIFO (see inbox_push) */
    _Atomic(struct tw_timeout *) inbox; /* producers' end: last pushed */
    struct tw_timeout *inbox_head;      /* the worker's end */
    /* the MPSC queue's permanent first node (Vyukov's design): the queue
     * is never empty, so push and pop need no special case */
    struct tw_timeout sentinel;
    _Atomic(struct tw_timeout *) cancelled;
    /* counters producers touch (Netty's pendingTimeouts is one of them);
     * ncancelled and zombies, which a virtual cancel bumps together, not
     * side by side: adjacent, gcc made the two adds one unaligned vector
     * load, add and store (3 instructions for 2 under callgrind) */
    _Atomic uint64_t zombies, pending, peak, submitted, rejected, ncancelled;
    _Atomic int shut;
    _Atomic long producers;     /* schedules between shutdown check and push */
    /* threaded mode */
    pthread_mutex_t mu;
    pthread_cond_t wake;
    struct tb_threads thread;   /* the worker */
    struct tb_stats st;         /* the worker's counters, under mu */
};

/* The scheduler whose task runs on this thread, if any: the worker thread,
 * or the caller of tb_advance() while it runs tasks. */
static _Thread_local struct tw *tw_self;

static inline struct tw *tw_of(struct tb_sched *s) { return (struct tw *)s; }

static inline void tw_lock(struct tw *q)
{
    if (q->base.threaded)
        pthread_mutex_lock(&q->mu);
}

static inline void tw_unlock(struct tw *q)
{
    if (q->base.threaded)
        pthread_mutex_unlock(&q->mu);
}

/* Adds n (which may be a wrapped negative) to a shared counter: an atomic
 * read-modify-write in threaded mode, plain arithmetic in virtual mode. */
static inline uint64_t ctr_add(const struct tw *q, _Atomic uint64_t *c,
                               uint64_t n)
{
    if (q->base.threaded)
        return atomic_fetch_add_explicit(c, n, memory_order_relaxed) + n;
    return *tb_plain_u64(c) += n;
}

static inline uint64_t ctr_get(_Atomic uint64_t *c)
{
    return atomic_load_explicit(c, memory_order_relaxed);
}

/* ctr_add(q, c, 1) where the caller already knows the mode is virtual:
 * one add to memory (tb_plain_u64). */
static inline void vctr_inc(_Atomic uint64_t *c)
{
    (*tb_plain_u64(c))++;
}

static void note_peak(struct tw *q, uint64_t n)
{
    uint64_t peak = atomic_load_explicit(&q->peak, memory_order_relaxed);
    if (!q->base.threaded) {
        /* no other thread: a locked CAS per schedule would cost more than
         * the rest of the insert */
        if (n > peak)
            atomic_store_explicit(&q->peak, n, memory_order_relaxed);
        return;
    }
    while (n > peak &&
           !atomic_compare_exchange_weak_explicit(&q->peak, &peak, n,
                                                  memory_order_relaxed,
                                                  memory_order_relaxed))
        ;
}

static inline uint32_t gen_of(const struct tw_timeout *t)
{
    return tb_task_gen(atomic_load_explicit(&t->base.gs,
                                            memory_order_relaxed));
}

static inline bool tw_cas(struct tw_timeout *t, uint32_t gen, uint32_t from,
                          uint32_t to)
{
    return tb_task_cas(&t->base, gen, from, to);
}

/* tw_cas for the hot paths (cancel, expiry).  Virtual mode is
 * single-threaded by contract, so the check and the store need no locked
 * instruction there. */
static inline bool tw_claim(const struct tw *q, struct tw_timeout *t,
                            uint32_t gen, uint32_t from, uint32_t to)
{
    if (q->base.threaded)
        return tw_cas(t, gen, from, to);
    return tb_task_cas_local(&t->base, gen, from, to);
}

static inline bool is_cancelled(const struct tw_timeout *t)
{
    return tb_task_get_state(&t->base) == TB_TASK_CANCELLED;
}

/* Back to the pool with prev TW_QUEUED, as the record's next schedule
 * needs it before it can write it (see tb_pool_get; new chunks are zero). */
static void retire(struct tw *q, struct tw_timeout *t)
{
    t->prev = TW_QUEUED;
    tb_pool_put(&q->base.pool, &t->base);
}

/* Takes a place under max_pending: the new pending count, or 0 when the cap
 * is reached.  A CAS rather than Netty's add-then-undo, so that no reader
 * ever sees the count above the cap (DECISIONS D1); without a cap it is the
 * plain add. */
static inline uint64_t pending_take(struct tw *q)
{
    uint64_t max = q->base.cfg.max_pending;
    if (!max)
        return ctr_add(q, &q->pending, 1);
    uint64_t n = atomic_load_explicit(&q->pending, memory_order_relaxed);
    if (!q->base.threaded) {
        if (n >= max)
            return 0;
        atomic_store_explicit(&q->pending, n + 1, memory_order_relaxed);
        return n + 1;
    }
    do
        if (n >= max)
            return 0;
    while (!atomic_compare_exchange_weak_explicit(
        &q->pending, &n, n + 1, memory_order_relaxed, memory_order_relaxed));
    return n + 1;
}

tw_hook_fn tw_test_hook;
tw_sleep_hook_fn tw_sleep_hook;

/* The test hook, if set: lets a test act inside a window that another
 * thread could hit (see timerwheel_hook.h).  One load and a branch never
 * taken outside tests, the call kept out of line so that it does not
 * change how the schedule path is compiled (cachegrind: about one
 * instruction per schedule). */
__attribute__((noinline, cold)) static void
call_hook(struct tw *q, enum tw_hook_point at, const struct tw_timeout *t)
{
    tw_test_hook(&q->base, at, tb_pool_handle(&q->base.pool, &t->base));
}

static inline void hook(struct tw *q, enum tw_hook_point at,
                        const struct tw_timeout *t)
{
    if (__builtin_expect(tw_test_hook != NULL, 0))
        call_hook(q, at, t);
}

/* ---- The inbox and the cancelled stack --------------------------------- */

/* The inbox is an intrusive multi-producer single-consumer FIFO (Vyukov's
 * queue, the shape of the JCTools MPSC queue Netty uses): a producer swaps
 * itself in as the last entry with one exchange, then links the previous
 * last entry to itself.  The worker pops from the front in submission
 * order, so the transfer reads each entry once (a stack taken whole would
 * need a second pass over every entry to reverse it).  `next` is written by
 * one producer while the worker may read it, so those two accesses are
 * atomic; once popped, the entry is the worker's and `next` is a plain
 * bucket or list link again. */
static inline struct tw_timeout *inbox_next(const struct tw *q,
                                            struct tw_timeout *t)
{
    return q->base.threaded ? __atomic_load_n(&t->next, __ATOMIC_ACQUIRE)
                            : t->next;
}

static void inbox_push(struct tw *q, struct tw_timeout *t)
{
    t->next = NULL; /* t is ours until the exchange publishes it */
    if (!q->base.threaded) {
        struct tw_timeout *last =
            atomic_load_explicit(&q->inbox, memory_order_relaxed);
        atomic_store_explicit(&q->inbox, t, memory_order_relaxed);
        last->next = t;
        return;
    }
    struct tw_timeout *last =
        atomic_exchange_explicit(&q->inbox, t, memory_order_acq_rel);
    __atomic_store_n(&last->next, t, __ATOMIC_RELEASE);
}

/* inbox_pop's rare case: `head` has no successor yet. */
static struct tw_timeout *inbox_successor(struct tw *q,
                                          struct tw_timeout *head)
{
    struct tw_timeout *next;
    if (head == atomic_load_explicit(&q->inbox, memory_order_acquire))
        inbox_push(q, &q->sentinel); /* the last entry: give it a successor */
    /* Linked by now, or its producer is between its exchange and its link,
     * a few instructions away: wait for it, as the JCTools queue's poll()
     * does (virtual mode never waits). */
    while (!(next = inbox_next(q, head)))
        sched_yield();
    return next;
}

/* The oldest entry, or NULL if there is none.  Worker only. */
static inline struct tw_timeout *inbox_pop(struct tw *q)
{
    struct tw_timeout *head = q->inbox_head;
    struct tw_timeout *next = inbox_next(q, head);
    if (head == &q->sentinel) {
        if (!next)
            return NULL;
        q->inbox_head = head = next;
        next = inbox_next(q, head);
    }
    if (!next)
        next = inbox_successor(q, head);
    q->inbox_head = next;
    return head;
}

/* True if the inbox holds nothing the worker could pop. */
static bool inbox_empty(const struct tw *q)
{
    return q->inbox_head == &q->sentinel && !inbox_next(q, q->inbox_head);
}

/* seq_cst in threaded mode: pairs with the shutdown flag (see tw_cancel). */
static void cancelled_push(struct tw *q, struct tw_timeout *t)
{
    struct tw_timeout *top =
        atomic_load_explicit(&q->cancelled, memory_order_relaxed);
    if (!q->base.threaded) {
        t->cnext = top;
        atomic_store_explicit(&q->cancelled, t, memory_order_relaxed);
        return;
    }
    do
        t->cnext = top;
    while (!atomic_compare_exchange_weak_explicit(
        &q->cancelled, &top, t, memory_order_seq_cst, memory_order_relaxed));
}

static struct tw_timeout *stack_take(struct tw *q,
                                     _Atomic(struct tw_timeout *) *top)
{
    if (!q->base.threaded) {
        struct tw_timeout *t = atomic_load_explicit(top, memory_order_relaxed);
        atomic_store_explicit(top, NULL, memory_order_relaxed);
        return t;
    }
    if (!atomic_load_explicit(top, memory_order_relaxed))
        return NULL; /* an idle tick costs no locked instruction */
    return atomic_exchange_explicit(top, NULL, memory_order_seq_cst);
}

/* ---- Worker lists and buckets ------------------------------------------ */

static void list_append(struct tw_list *l, struct tw_timeout *t)
{
    t->next = NULL;
    if (l->tail)
        l->tail->next = t;
    else
        l->head = t;
    l->tail = t;
}

static struct tw_timeout *list_pop(struct tw_list *l)
{
    struct tw_timeout *t = l->head;
    if (t) {
        l->head = t->next;
        if (!l->head)
            l->tail = NULL;
        t->next = NULL;
    }
    return t;
}

static void bucket_add(struct tw *q, uint32_t b, struct tw_timeout *t)
{
    struct tw_bucket *bk = &q->wheel[b];
    t->next = NULL;
    t->prev = bk->tail ? bk->tail : TW_HEAD;
    if (bk->tail) {
        bk->tail->next = t;
    } else {
        bk->head = t;
        q->occupied[b >> 6] |= (uint64_t)1 << (b & 63);
    }
    bk->tail = t;
    q->in_wheel++;
}

/* HashedWheelBucket.remove: unlinks t from bucket b (its own) and returns
 * the next entry.  Out of line: inlined into the walk, the compiler set up
 * its bitmap arithmetic before every walk of an occupied bucket, which
 * costs more than the call on the rare expiry (callgrind: about 72 600 ->
 * 69 360 instructions per timer in the expiry at 10^3, 1000 walks each). */
static __attribute__((noinline)) struct tw_timeout *
bucket_remove(struct tw *q, struct tw_timeout *t, uint32_t b)
{
    struct tw_bucket *bk = &q->wheel[b];
    struct tw_timeout *next = t->next;
    struct tw_timeout *prev = t->prev == TW_HEAD ? NULL : t->prev;
    if (prev)
        prev->next = next;
    else
        bk->head = next;
    if (next)
        next->prev = t->prev;
    else
        bk->tail = prev;
    if (!bk->head)
        q->occupied[b >> 6] &= ~((uint64_t)1 << (b & 63));
    t->next = NULL;
    t->prev = TW_QUEUED;
    q->in_wheel--;
    return next;
}

/* First occupied bucket at or after `from`, going round; the wheel must not
 * be empty. */
static uint32_t next_occupied(const struct tw *q, uint32_t from)
{
    size_t w = from >> 6;
    uint64_t bits = q->occupied[w] & (~(uint64_t)0 << (from & 63));
    for (size_t i = 0; i <= q->nwords; i++) {
        if (bits)
            return (uint32_t)(w << 6) + (uint32_t)__builtin_ctzll(bits);
        w = w + 1 == q->nwords ? 0 : w + 1;
        bits = q->occupied[w];
    }
    return from;
}

/* A list lets go of a cancelled record: the second holder to let go frees
 * it (the other holder is the cancelled queue). */
static void let_go(struct tw *q, struct tw_timeout *t)
{
    if (t->prev == TW_HALF)
        retire(q, t);
    else
        t->prev = TW_HALF;
}

/* ---- The tick ---------------------------------------------------------- */

/* The tick at or after the deadline: ceil((deadline - start) / tick). */
static inline int64_t due_tick(const struct tw *q, int64_t deadline)
{
    int64_t rel = deadline - q->start_ns;
    if (rel <= 0)
        return 0;
    /* (rel - 1) / tick_ns + 1, by the core's reciprocal (rel - 1 < 2^63) */
    return (int64_t)tb_udiv(&q->tick_div, (uint64_t)rel - 1) + 1;
}

/* The bucket a timeout in the wheel sits in: its due tick's (filed there,
 * since only timeouts not yet due are filed, and its deadline changes only
 * out of the wheel). */
static inline uint32_t bucket_of(const struct tw *q,
                                 const struct tw_timeout *t)
{
    return (uint32_t)due_tick(q, t->base.deadline) & q->mask;
}

/* Worker.transferTimeoutsToBuckets.  Before the walk of `tick` (after_walk
 * false) this is Netty's rule.  After it (virtual catch-up), entries already
 * due go straight to the expired list and the rest are filed as if the
 * transfer ran at tick + 1, since this tick's walk is over. */
static void transfer(struct tw *q, int64_t tick, bool after_walk)
{
    struct tw_timeout *t;
    while (q->budget > 0 && (t = inbox_pop(q))) {
        q->budget--;
        if (is_cancelled(t)) {
            let_go(q, t);
            continue;
        }
        q->st.transfers++;
        int64_t due = due_tick(q, t->base.deadline);
        /* due at a tick already walked: it runs now, ahead of this tick's
         * later entries, rather than behind them in the bucket */
        if (after_walk ? due <= tick : due < tick) {
            list_append(&q->expired, t);
            continue;
        }
        /* due >= ref (the tick filed against: tick, or tick + 1 after the
         * walk) here, so Netty's bucket max(due, ref) & mask is due's, and
         * its rounds (due - ref) / length are what the walk infers */
        bucket_add(q, (uint32_t)due & q->mask, t);
    }
}

/* Worker.processCancelledTasks: the pending count drops here and only
 * here for a cancelled timeout. */
static void process_cancelled(struct tw *q)
{
    struct tw_timeout *t = stack_take(q, &q->cancelled);
    while (t) {
        struct tw_timeout *n = t->cnext;
        ctr_add(q, &q->pending, (uint64_t)-1);
        ctr_add(q, &q->zombies, (uint64_t)-1);
        if (t->prev == TW_QUEUED) {
            t->prev = TW_HALF; /* its list will free it */
        } else {
            if (t->prev != TW_HALF)
                bucket_remove(q, t, bucket_of(q, t));
            retire(q, t);
        }
        t = n;
    }
}

/* HashedWheelBucket.expireTimeouts, minus the running: expired entries are
 * unlinked into q->expired and run by run_expired.  Netty's remainingRounds
 * <= 0 is "due by this tick" (see Structure); where Netty decrements, a
 * round is counted. */
static void walk(struct tw *q, int64_t tick)
{
    uint32_t b = (uint32_t)tick & q->mask;
    struct tw_timeout *t = q->wheel[b].head;
    if (!t)
        return;
    /* the last deadline due by this tick: due_tick(d) <= tick iff d <=
     * end.  The boundary is at most the clock's now, except for the end of
     * the clock's partial tick (tw_advance), whose boundary would pass
     * INT64_MAX: saturated there, every deadline is due */
    int64_t end = tick > (INT64_MAX - q->start_ns) / q->tick_ns
                      ? INT64_MAX
                      : q->start_ns + tick * q->tick_ns;
    uint64_t visits = 0, rounds = 0; /* DECISIONS D2 */
    while (t) {
        struct tw_timeout *next = t->next;
        visits++;
        if (t->base.deadline <= end) {
            bucket_remove(q, t, b);
            list_append(&q->expired, t);
        } else if (is_cancelled(t)) {
            bucket_remove(q, t, b);
            let_go(q, t);
        } else {
            rounds++;
        }
        t = next;
    }
    q->st.visits += visits;
    q->st.rounds += rounds;
}

/* After a run: retire the task, or re-arm a periodic one through the inbox.
 * Lock held. */
static void finish_run(struct tw *q, struct tw_timeout *t, bool failed,
                       int64_t end)
{
    q->st.running--;
    q->st.fired++;
    if (failed)
        q->st.failed++;
    if (!t->base.period) {
        q->st.finished++;
        retire(q, t);
        return;
    }
    uint32_t gen = gen_of(t);
    if (failed || atomic_load(&q->shut)) {
        /* a cancel during the run already counted it */
        if (tw_cas(t, gen, TB_TASK_RUNNING, TB_TASK_DONE)) {
            if (failed)
                q->st.finished++;
            else
                ctr_add(q, &q->ncancelled, 1); /* stopped by shutdown */
        }
        retire(q, t);
        return;
    }
    t->base.deadline = tb_next_deadline(t->base.deadline, t->base.period, end);
    if (t->base.deadline == INT64_MAX) {
        /* the next run would fall at the end of the clock: this was the
         * last, as for a one-shot */
        if (tw_cas(t, gen, TB_TASK_RUNNING, TB_TASK_DONE))
            q->st.finished++;
        retire(q, t);
        return;
    }
    uint64_t n = pending_take(q); /* prev is TW_QUEUED: it was listed */
    if (!n) {
        /* D1: the re-arm is refused like a schedule (Netty's newTimeout
         * throws), and the task retires; a cancel that won the race has
         * counted it already */
        if (tw_cas(t, gen, TB_TASK_RUNNING, TB_TASK_DONE)) {
            q->st.finished++;
            ctr_add(q, &q->rejected, 1);
        }
        retire(q, t);
        return;
    }
    note_peak(q, n);
    if (!tw_cas(t, gen, TB_TASK_RUNNING, TB_TASK_WAITING)) {
        ctr_add(q, &q->pending, (uint64_t)-1); /* cancelled during its run */
        retire(q, t);
        return;
    }
    hook(q, TW_HOOK_REARMED, t);
    inbox_push(q, t);
}

/* HashedWheelTimeout.expire for each expired entry: the CAS out of WAITING
 * decides between this run and a racing cancel.  Lock held, dropped around
 * each task. */
static long run_expired(struct tw *q)
{
    long ran = 0;
    struct tw_timeout *t;
    while ((t = list_pop(&q->expired))) {
        /* a running one-shot is DONE, so cancel can answer 0 without
         * reading `period` */
        uint32_t to = t->base.period ? TB_TASK_RUNNING : TB_TASK_DONE;
        if (!tw_claim(q, t, gen_of(t), TB_TASK_WAITING, to)) {
            let_go(q, t);
            continue;
        }
        ctr_add(q, &q->pending, (uint64_t)-1);
        q->st.running++;
        tb_fn fn = t->base.fn;
        void *arg = t->base.arg;
        tw_unlock(q);
        bool failed = fn(arg) != 0;
        int64_t end = tb_clock_now(&q->base);
        tw_lock(q);
        finish_run(q, t, failed, end);
        ran++;
    }
    return ran;
}

/* Virtual mode: after tick `tick`, run what became due during it. */
static long catch_up(struct tw *q, int64_t tick)
{
    long ran = 0;
    while (!atomic_load_explicit(&q->shut, memory_order_relaxed)) {
        if (inbox_empty(q) || q->budget <= 0)
            break;
        transfer(q, tick, true);
        ran += run_expired(q);
    }
    return ran;
}

/* One tick of Worker.run.  Lock held. */
static long run_tick(struct tw *q)
{
    int64_t tick = q->next_tick;
    q->st.ticks++;
    q->budget = TW_TRANSFER_LIMIT;
    /* Most ticks have no cancels, nothing expired and nothing pushed since
     * the transfer: each step is entered only when it has work, which
     * its own first check would find anyway (cachegrind: a third of an
     * idle tick's instructions were these calls) */
    if (atomic_load_explicit(&q->cancelled, memory_order_relaxed))
        process_cancelled(q);
    transfer(q, tick, false);
    walk(q, tick);
    q->next_tick = tick + 1;
    long ran = q->expired.head ? run_expired(q) : 0;
    if (!q->base.threaded && !inbox_empty(q))
        ran += catch_up(q, tick);
    if (!ran)
        q->st.empty_ticks++;
    q->quiet = ran ? 0 : q->quiet + 1;
    return ran;
}

/* Virtual mode: when a whole revolution has passed without a run and the
 * span to `last` holds whole revolutions, skips as many as no entry can
 * expire in.  R walks would take R rounds from every entry (none reaches 0
 * first, since each has at least R: an entry due at d has (d - next_tick)
 * / length left) and visit each entry R times in ticks that run nothing;
 * one pass over the entries finds R, and the counters take the rest.  The
 * quiet revolution that must come first pays for the pass, so a wheel
 * whose entries keep expiring never scans. */
static void skip_revolutions(struct tw *q, int64_t last)
{
    int64_t len = (int64_t)q->mask + 1;
    int64_t span = last + 1 - q->next_tick;
    if (!q->in_wheel || q->quiet < len || span < len)
        return;
    q->quiet = 0;
    int64_t r = span / len;
    for (size_t w = 0; w < q->nwords && r > 0; w++)
        for (uint64_t bits = q->occupied[w]; bits && r > 0;
             bits &= bits - 1) {
            size_t b = w << 6 | (size_t)__builtin_ctzll(bits);
            for (const struct tw_timeout *t = q->wheel[b].head; t;
                 t = t->next) {
                if (is_cancelled(t)) /* its walk would unlink it */
                    return;
                int64_t left = (due_tick(q, t->base.deadline) -
                                q->next_tick) >> q->len_shift;
                if (left < r)
                    r = left;
            }
        }
    if (r <= 0)
        return;
    uint64_t n = (uint64_t)(r * len);
    uint64_t walked = (uint64_t)r * q->in_wheel;
    q->st.ticks += n;
    q->st.empty_ticks += n;
    q->st.visits += walked;
    q->st.rounds += walked;
    q->next_tick += r * len;
}

/* Virtual mode: jump over ticks that would do nothing (no inbox, no
 * cancels, empty bucket), counting them as walked. */
static void skip_idle(struct tw *q, int64_t last)
{
    if (!inbox_empty(q) ||
        atomic_load_explicit(&q->cancelled, memory_order_relaxed))
        return;
    skip_revolutions(q, last);
    int64_t to = last + 1;
    if (q->in_wheel) {
        uint32_t from = (uint32_t)(q->next_tick & q->mask);
        uint32_t b = next_occupied(q, from);
        int64_t t = q->next_tick + ((b - from) & q->mask);
        if (t < to)
            to = t;
    }
    if (to > q->next_tick) {
        uint64_t n = (uint64_t)(to - q->next_tick);
        q->st.ticks += n;
        q->st.empty_ticks += n;
        q->quiet += (int64_t)n;
        q->next_tick = to;
        /* the skipped ticks' transfers had nothing to move: the tick we
         * land on starts with a full budget, so a task due at once is
         * filed now rather than a tick late */
        q->budget = TW_TRANSFER_LIMIT;
    }
}

/* False when skip_idle could not skip anything: the next tick's bucket is
 * occupied (so no idle tick precedes it) and no quiet revolution has gone
 * by (so no revolution can be skipped either).  Checked before the call
 * because on a well-filled wheel that is almost every tick. */
static inline bool may_skip(const struct tw *q)
{
    uint32_t b = (uint32_t)(q->next_tick & q->mask);
    return q->quiet > (int64_t)q->mask ||
           !(q->occupied[b >> 6] >> (b & 63) & 1);
}

static long tw_advance(struct tb_sched *s, int64_t now)
{
    struct tw *q = tw_of(s);
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    struct tw *outer = tw_self;
    tw_self = q;
    long ran = 0;
    /* At the end of the clock the tick it falls in, which is partial
     * unless the tick divides INT64_MAX, runs too: no later time will
     * reach its boundary, and a deadline in it (delay 0 at INT64_MAX
     * among them) would otherwise never run (issue 42).  Netty has no
     * such end: its nanoTime arithmetic wraps. */
    const bool end = now == INT64_MAX;
    int64_t last = end ? due_tick(q, INT64_MAX) : now / q->tick_ns;
    while (!atomic_load_explicit(&q->shut, memory_order_relaxed)) {
        if (may_skip(q))
            skip_idle(q, last);
        if (q->next_tick > last)
            break;
        ran += run_tick(q);
    }
    /* entries scheduled since the current tick ran (at its very time); at
     * the end of the clock with a fresh budget until none is left, since
     * no later tick will move them */
    if (q->next_tick > 0)
        ran += catch_up(q, q->next_tick - 1);
    while (end && q->next_tick > 0 && !inbox_empty(q) &&
           !atomic_load_explicit(&q->shut, memory_order_relaxed)) {
        q->budget = TW_TRANSFER_LIMIT;
        ran += catch_up(q, q->next_tick - 1);
    }
    tw_self = outer;
    return ran;
}

/* ---- Threaded mode: the worker ----------------------------------------- */

static void *worker_main(void *arg)
{
    struct tw *q = arg;
    tw_self = q;
    pthread_mutex_lock(&q->mu);
    bool exact = q->base.cfg.flags & TB_F_EXACT_SLEEP;
    while (!atomic_load(&q->shut)) {
        /* waitForNextTick: absolute target, so a late tick never drifts */
        int64_t target = q->start_ns + q->next_tick * q->tick_ns;
        int64_t now = tb_monotonic_ns();
        if (now < target) {
            /* Netty: Thread.sleep((deadline - currentTime + 999999) /
             * 1000000), whole milliseconds rounded up, from now; then it
             * reads the clock again.  TB_F_EXACT_SLEEP: to the target. */
            int64_t until = exact ? target
                                  : now + (target - now + TB_MS - 1) /
                                              TB_MS * TB_MS;
            if (__builtin_expect(tw_sleep_hook != NULL, 0))
                tw_sleep_hook(&q->base, now, until, target);
            struct timespec ts;
            tb_abstime(&ts, until);
            q->st.timed_waits++;
            pthread_cond_timedwait(&q->wake, &q->mu, &ts);
            q->st.wakeups++;
            continue;
        }
        run_tick(q);
    }
    tb_threads_end(&q->thread);
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

static int tw_start(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    pthread_mutex_lock(&q->mu);
    int rc = tb_threads_begin(&q->thread, atomic_load(&q->shut));
    if (!rc) {
        q->start_ns = tb_monotonic_ns();
        rc = tb_threads_spawn(&q->thread, worker_main, q);
    }
    pthread_mutex_unlock(&q->mu);
    return rc;
}

/* ---- Scheduling and cancelling ----------------------------------------- */

/* The virtual schedule's publication: fill the record, push it onto the
 * inbox (single-threaded: plain stores), count it; n is the new pending
 * count.  Inline in both the leaf fast path and schedule_virtual. */
static inline __attribute__((always_inline)) void
push_virtual(struct tw *q, struct tw_timeout *t, int64_t deadline,
             int64_t period, tb_fn fn, void *arg, uint64_t n)
{
    tb_task_set(&t->base, deadline, period, fn, arg);
    t->next = NULL;
    struct tw_timeout *last =
        atomic_load_explicit(&q->inbox, memory_order_relaxed);
    atomic_store_explicit(&q->inbox, t, memory_order_relaxed);
    last->next = t;
    atomic_store_explicit(&q->pending, n, memory_order_relaxed);
    vctr_inc(&q->submitted);
    if (n > ctr_get(&q->peak))
        atomic_store_explicit(&q->peak, n, memory_order_relaxed);
}

/* tw_schedule in virtual mode: the same steps, straight through.  The mode
 * is single-threaded by contract, so no step needs a locked instruction and
 * the counters are plain adds; the insert then costs what the structure
 * costs (one push onto the inbox), not what the threaded mode's handshakes
 * cost. */
static int schedule_virtual(struct tw *q, int64_t deadline, int64_t period,
                            tb_fn fn, void *arg, tb_handle *handle)
{
    uint64_t n = ctr_get(&q->pending) + 1;
    size_t max = q->base.cfg.max_pending;
    int rc;
    if (atomic_load_explicit(&q->shut, memory_order_relaxed)) {
        rc = TB_ESHUTDOWN;
    } else if (max && n > max) {
        rc = TB_EFULL;
    } else {
        struct tw_timeout *t =
            (struct tw_timeout *)(void *)tb_pool_get(&q->base.pool, handle);
        if (t) {
            hook(q, TW_HOOK_PUBLISHED, t);
            push_virtual(q, t, deadline, period, fn, arg, n);
            return TB_OK;
        }
        rc = TB_ENOMEM;
    }
    vctr_inc(&q->rejected);
    return rc;
}

static __attribute__((noinline)) int
schedule_virtual_slow(struct tw *q, int64_t deadline, int64_t period,
                      tb_fn fn, void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    return schedule_virtual(q, deadline, period, fn, arg, handle);
}

/* The common virtual schedule as a leaf function: a free record at hand,
 * no cap, no shutdown, no test hook.  Anything else is schedule_virtual,
 * the same steps with every check; a call on the fast path would make the
 * compiler save registers on every schedule (cachegrind: 18 of 90
 * instructions).  `limitless`: the caller is tw_schedule_virtual, which
 * tb_create takes only with no max_pending and the core replaces by
 * tw_schedule after a shutdown, so neither is tested. */
static inline int schedule_virtual_fast(struct tw *q, int64_t deadline,
                                        int64_t period, tb_fn fn, void *arg,
                                        tb_handle *handle, bool limitless)
{
    struct tb_pool *p = &q->base.pool;
    if ((!limitless && q->base.cfg.max_pending) ||
        p->free_head == TB_POOL_NIL ||
        (!limitless && atomic_load_explicit(&q->shut, memory_order_relaxed)) ||
        __builtin_expect(tw_test_hook != NULL, 0))
        return schedule_virtual_slow(q, deadline, period, fn, arg, handle);
    struct tw_timeout *t =
        (struct tw_timeout *)(void *)tb_pool_get_unlocked(p, handle);
    push_virtual(q, t, deadline, period, fn, arg, ctr_get(&q->pending) + 1);
    return TB_OK;
}

/* tw_schedule in threaded mode: lock-free push onto the inbox. */
static __attribute__((noinline)) int
schedule_threaded(struct tw *q, int64_t deadline, int64_t period, tb_fn fn,
                  void *arg, tb_handle *handle)
{
    tb_handle_none(handle);
    struct tb_sched *s = &q->base;
    int rc = TB_OK;
    /* Dekker with shutdown: either we see the flag, or it sees us */
    if (s->threaded)
        atomic_fetch_add_explicit(&q->producers, 1, memory_order_seq_cst);
    if (atomic_load_explicit(&q->shut, memory_order_seq_cst)) {
        rc = TB_ESHUTDOWN;
    } else {
        uint64_t n = pending_take(q);
        if (!n) {
            rc = TB_EFULL;
        } else {
            struct tw_timeout *t =
                (struct tw_timeout *)(void *)tb_pool_get(&s->pool, handle);
            if (!t) {
                rc = TB_ENOMEM;
            } else {
                hook(q, TW_HOOK_PUBLISHED, t);
                tb_task_set(&t->base, deadline, period, fn, arg);
                inbox_push(q, t);
                ctr_add(q, &q->submitted, 1);
                note_peak(q, n);
            }
        }
        if (rc && n)
            ctr_add(q, &q->pending, (uint64_t)-1);
    }
    if (s->threaded)
        atomic_fetch_sub_explicit(&q->producers, 1, memory_order_release);
    if (rc)
        ctr_add(q, &q->rejected, 1);
    return rc;
}

static int tw_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    struct tw *q = tw_of(s);
    if (s->threaded)
        return schedule_threaded(q, deadline, period, fn, arg, handle);
    return schedule_virtual_fast(q, deadline, period, fn, arg, handle, false);
}

/* tw_schedule for a virtual scheduler with no max_pending (tb_create
 * picks it): neither is tested on the call. */
static int tw_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    return schedule_virtual_fast(tw_of(s), deadline, period, fn, arg, handle,
                                 true);
}

/* HashedWheelTimeout.cancel, every case: CAS to CANCELLED, then queue it
 * for the worker, which unlinks it and drops the pending count at its next
 * tick.  t is the record h names (looked up by the caller). */
static __attribute__((noinline)) int
cancel_slow(struct tw *q, struct tw_timeout *t, tb_handle h)
{
    uint32_t gen = (uint32_t)(h >> 32);
    /* A periodic task moves RUNNING -> WAITING when it re-arms; a cancel
     * whose CAS loses that race tries again, or a live task could answer
     * "not pending" and run for ever (found by the soak). */
    for (;;) {
        uint64_t gs = atomic_load_explicit(&t->base.gs, memory_order_acquire);
        if (tb_task_gen(gs) != gen)
            return 0;
        uint32_t state = tb_task_state(gs);
        if (state == TB_TASK_WAITING) {
            if (!tw_claim(q, t, gen, TB_TASK_WAITING, TB_TASK_CANCELLED))
                continue;
            ctr_add(q, &q->ncancelled, 1);
            ctr_add(q, &q->zombies, 1);
            cancelled_push(q, t);
            /* No worker will tick again: process it here.  The seq_cst
             * push and load pair with shutdown's store and final take, so
             * a cancel is processed by one side or the other. */
            if (atomic_load_explicit(&q->shut, memory_order_seq_cst)) {
                tw_lock(q);
                process_cancelled(q);
                tw_unlock(q);
            }
            return 1;
        }
        if (state == TB_TASK_RUNNING) {
            /* only periodic tasks run in state RUNNING: stop their future
             * runs */
            if (!tw_cas(t, gen, TB_TASK_RUNNING, TB_TASK_CANCELLED))
                continue;
            ctr_add(q, &q->ncancelled, 1);
            return 1;
        }
        return 0;
    }
}

/* tb_cancel.  The virtual common case (a waiting timeout, no shutdown) runs
 * straight through as a leaf function: no other thread, so the CAS is a
 * store and the push a plain link; everything else is cancel_slow. */
static __attribute__((noinline)) int cancel_threaded(struct tw *q,
                                                     tb_handle h)
{
    struct tw_timeout *t =
        (struct tw_timeout *)(void *)tb_pool_lookup(&q->base.pool, h);
    return t ? cancel_slow(q, t, h) : 0;
}

/* The virtual clock's cancel: a handle naming a WAITING timeout is found
 * in one compare of its word, which then becomes the handle with CANCELLED
 * in its state bits (no other thread, so no CAS).  `running`: the caller
 * is tw_cancel_virtual, which the core replaces by tw_cancel after a
 * shutdown, so the scheduler is known not to be shut. */
static inline int cancel_virtual(struct tw *q, tb_handle h, bool running)
{
    struct tb_sched *s = &q->base;
    struct tw_timeout *t =
        (struct tw_timeout *)(void *)tb_pool_waiting_unlocked(&s->pool, h);
    if (!t ||
        (!running && atomic_load_explicit(&q->shut, memory_order_relaxed))) {
        t = (struct tw_timeout *)(void *)tb_pool_lookup_unlocked(&s->pool, h);
        return t ? cancel_slow(q, t, h) : 0;
    }
    atomic_store_explicit(&t->base.gs,
                          h | (uint64_t)TB_TASK_CANCELLED
                                  << TB_TASK_STATE_SHIFT,
                          memory_order_relaxed);
    vctr_inc(&q->ncancelled);
    vctr_inc(&q->zombies);
    t->cnext = atomic_load_explicit(&q->cancelled, memory_order_relaxed);
    atomic_store_explicit(&q->cancelled, t, memory_order_relaxed);
    return 1;
}

static int tw_cancel(struct tb_sched *s, tb_handle h)
{
    struct tw *q = tw_of(s);
    if (s->threaded)
        return cancel_threaded(q, h);
    return cancel_virtual(q, h, false);
}

/* tw_cancel for a virtual scheduler (tb_create picks it): no test of the
 * clock mode. */
static int tw_cancel_virtual(struct tb_sched *s, tb_handle h)
{
    return cancel_virtual(tw_of(s), h, true);
}

static size_t tw_pending(struct tb_sched *s)
{
    return (size_t)ctr_get(&tw_of(s)->pending);
}

/* ---- Shutdown ---------------------------------------------------------- */

/* Removes an unrun timeout for good; 1 if it was one (visited). */
static long drop(struct tw *q, struct tw_timeout *t, tb_unrun_fn visit,
                 void *ctx)
{
    if (!tw_cas(t, gen_of(t), TB_TASK_WAITING, TB_TASK_DONE)) {
        let_go(q, t); /* cancelled: the cancelled queue still holds it */
        return 0;
    }
    if (visit)
        visit(ctx, tb_pool_handle(&q->base.pool, &t->base), t->base.fn,
              t->base.arg);
    ctr_add(q, &q->pending, (uint64_t)-1);
    q->st.dropped++;
    retire(q, t);
    return 1;
}

/* Worker's exit path plus stop(): every timeout in buckets, backlog, inbox
 * or expired list is returned.  Lock held. */
static long drain(struct tw *q, tb_unrun_fn visit, void *ctx)
{
    if (atomic_load(&q->shut))
        return 0;
    atomic_store_explicit(&q->shut, 1, memory_order_seq_cst);
    if (q->base.threaded)
        while (atomic_load_explicit(&q->producers, memory_order_seq_cst))
            sched_yield(); /* a push is a few instructions away */
    process_cancelled(q);
    long n = 0;
    /* bucket order, as Netty's stop(); each scan goes on from the last
     * bucket found, which the loop has emptied along with all before it
     * (from 0 each time, a 2^20-bucket wheel holding 10^6 took seconds) */
    uint32_t b = 0;
    while (q->in_wheel) {
        b = next_occupied(q, b);
        struct tw_timeout *t = q->wheel[b].head;
        bucket_remove(q, t, b);
        n += drop(q, t, visit, ctx);
    }
    struct tw_timeout *t;
    while ((t = inbox_pop(q)))
        n += drop(q, t, visit, ctx);
    while ((t = list_pop(&q->expired)))
        n += drop(q, t, visit, ctx);
    process_cancelled(q);
    if (q->base.threaded)
        pthread_cond_broadcast(&q->wake);
    return n;
}

static long tw_shutdown(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    tw_lock(q);
    long n = drain(q, NULL, NULL);
    tw_unlock(q);
    return n;
}

static long tw_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct tw *q = tw_of(s);
    if (tw_self == q)
        return TB_ESTATE; /* HashedWheelTimer.stop() from a TimerTask */
    tw_lock(q);
    long n = drain(q, visit, ctx);
    tw_unlock(q);
    return n;
}

static int tw_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    struct tw *q = tw_of(s);
    bool shut = atomic_load(&q->shut); /* set once, never cleared */
    return tb_threads_await(s, &q->thread, &shut, timeout_ns);
}

static void tw_join(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    tb_threads_join(s, &q->thread);
}

/* ---- Setup and introspection ------------------------------------------- */

static int tw_configure(struct tb_config *cfg)
{
    if (cfg->tick_ns == 0)
        cfg->tick_ns = TW_DEFAULT_TICK;
    else if (cfg->tick_ns < TW_MIN_TICK)
        cfg->tick_ns = TW_MIN_TICK; /* Netty clamps to 1 ms with a warning */
    if (cfg->wheel_size == 0)
        cfg->wheel_size = TW_DEFAULT_WHEEL;
    if (cfg->wheel_size > TW_MAX_WHEEL)
        return TB_EINVAL;
    int n = 1;
    while (n < cfg->wheel_size)
        n <<= 1;
    cfg->wheel_size = n;
    if (cfg->tick_ns >= INT64_MAX / n)
        return TB_EINVAL; /* Netty: tickDuration too long for the wheel */
    return TB_OK;
}

static int tw_init(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    size_t len = (size_t)s->cfg.wheel_size;
    q->mask = (uint32_t)(len - 1);
    q->len_shift = (unsigned)__builtin_ctzll(len);
    q->tick_ns = s->cfg.tick_ns;
    q->tick_div = tb_udiv_make((uint64_t)q->tick_ns);
    q->nwords = (len + 63) / 64;
    q->wheel = tb_mem_calloc(s, len, sizeof *q->wheel);
    q->occupied = tb_mem_calloc(s, q->nwords, sizeof *q->occupied);
    if (!q->wheel || !q->occupied) {
        tb_mem_free(s, q->wheel, len * sizeof *q->wheel);
        tb_mem_free(s, q->occupied, q->nwords * sizeof *q->occupied);
        return TB_ENOMEM;
    }
    atomic_init(&q->inbox, &q->sentinel);
    q->inbox_head = &q->sentinel;
    atomic_init(&q->cancelled, NULL);
    if (s->threaded &&
        tb_threads_init(s, &q->thread, 1, &q->mu,
                        (pthread_cond_t *[]){&q->wake}, 1)) {
        tb_mem_free(s, q->wheel, len * sizeof *q->wheel);
        tb_mem_free(s, q->occupied, q->nwords * sizeof *q->occupied);
        return TB_ENOMEM;
    }
    return TB_OK;
}

static void tw_fini(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    tb_mem_free(s, q->wheel, ((size_t)q->mask + 1) * sizeof *q->wheel);
    tb_mem_free(s, q->occupied, q->nwords * sizeof *q->occupied);
    if (s->threaded)
        tb_threads_fini(s, &q->thread);
}

static void tw_stats(struct tb_sched *s, struct tb_stats *out)
{
    struct tw *q = tw_of(s);
    tw_lock(q);
    *out = q->st;
    out->submitted = ctr_get(&q->submitted);
    out->rejected = ctr_get(&q->rejected);
    out->cancelled = ctr_get(&q->ncancelled);
    out->zombies = ctr_get(&q->zombies);
    out->pending = ctr_get(&q->pending);
    out->peak_pending = ctr_get(&q->peak);
    tw_unlock(q);
}

static int corrupt(const char *what, unsigned long long a,
                   unsigned long long b)
{
    fprintf(stderr, "timerwheel: %s (%llu, %llu)\n", what, a, b);
    return TB_ECORRUPT;
}

/* Counts a worker list; `live` gets the entries still counted in pending
 * (a TW_HALF entry's cancel was processed already). */
static int check_list(const struct tw_list *l, size_t *live)
{
    const struct tw_timeout *t = l->head, *last = NULL;
    for (; t; last = t, t = t->next) {
        if (t->prev != TW_QUEUED && t->prev != TW_HALF)
            return corrupt("listed entry claims a bucket", 0, 0);
        *live += t->prev == TW_QUEUED;
    }
    if (last != l->tail)
        return corrupt("list tail is not its last entry", 0, 0);
    return TB_OK;
}

static int check_locked(struct tw *q)
{
    size_t count = 0;
    for (uint32_t b = 0; b <= q->mask; b++) {
        const struct tw_bucket *bk = &q->wheel[b];
        const struct tw_timeout *prev = NULL;
        for (const struct tw_timeout *t = bk->head; t; prev = t, t = t->next) {
            if (t->prev != (prev ? prev : TW_HEAD))
                return corrupt("broken prev link in bucket", b, count);
            int64_t due = due_tick(q, t->base.deadline);
            if (((uint32_t)due & q->mask) != b)
                return corrupt("entry sits in another bucket than its due "
                               "tick's", b, (unsigned long long)due);
            uint32_t st = tb_task_get_state(&t->base);
            if (st != TB_TASK_WAITING && st != TB_TASK_CANCELLED)
                return corrupt("bucket entry in a bad state", b, st);
            /* the walk of its tick must come: not due before the next one */
            if (st == TB_TASK_WAITING && due < q->next_tick)
                return corrupt("entry's tick has been walked",
                               (unsigned long long)due,
                               (unsigned long long)q->next_tick);
            count++;
        }
        if (bk->tail != prev)
            return corrupt("bucket tail is not its last entry", b, 0);
        bool bit = q->occupied[b >> 6] >> (b & 63) & 1;
        if (bit != (bk->head != NULL))
            return corrupt("occupancy bit disagrees with bucket", b, bit);
    }
    if (count != q->in_wheel)
        return corrupt("bucket entries miscounted", count, q->in_wheel);
    size_t live = count;
    int rc = check_list(&q->expired, &live);
    if (rc || q->base.threaded)
        return rc; /* producers push concurrently: no exact totals */
    /* Virtual mode: every pending timeout is somewhere, and every zombie is
     * in the cancelled queue. */
    const struct tw_timeout *last = NULL;
    for (const struct tw_timeout *t = q->inbox_head; t;
         last = t, t = t->next) {
        if (t == &q->sentinel)
            continue;
        if (t->prev != TW_QUEUED && t->prev != TW_HALF)
            return corrupt("inbox entry claims a bucket", 0, 0);
        live += t->prev == TW_QUEUED;
    }
    if (last != atomic_load(&q->inbox))
        return corrupt("inbox end is not its last entry", 0, 0);
    size_t zombies = 0;
    for (const struct tw_timeout *t = atomic_load(&q->cancelled); t;
         t = t->cnext) {
        zombies++;
        live += t->prev == TW_HALF; /* let go by its list */
    }
    if (live != ctr_get(&q->pending))
        return corrupt("pending count disagrees with the structure", live,
                       ctr_get(&q->pending));
    if (zombies != ctr_get(&q->zombies))
        return corrupt("zombie count disagrees with the cancelled queue",
                       zombies, ctr_get(&q->zombies));
    return TB_OK;
}

static int tw_check(struct tb_sched *s)
{
    struct tw *q = tw_of(s);
    tw_lock(q);
    int rc = check_locked(q);
    tw_unlock(q);
    return rc;
}

static const struct tb_backend_ops tw_ops = {
    .sched_size = sizeof(struct tw),
    .task_size = sizeof(struct tw_timeout),
    .configure = tw_configure,
    .init = tw_init,
    .fini = tw_fini,
    .start = tw_start,
    .schedule = tw_schedule,
    .cancel = tw_cancel,
    .schedule_virtual = tw_schedule_virtual,
    .cancel_virtual = tw_cancel_virtual,
    .pending = tw_pending,
    .advance = tw_advance,
    .shutdown = tw_shutdown,
    .shutdown_now = tw_shutdown_now,
    .await_termination = tw_await_termination,
    .join = tw_join,
    .stats = tw_stats,
    .check = tw_check,
};

const struct tb_backend tb_backend_timerwheel = {
    .name = "timerwheel",
    .description = "Netty HashedWheelTimer: power-of-two ring of doubly "
                   "linked buckets with remainingRounds, one ticking worker, "
                   "lock-free MPSC inbox",
    .caps = TB_CAP_TICKED | TB_CAP_LAZY_CANCEL | TB_CAP_SLEEP_MS,
    .ops = &tw_ops,
};
