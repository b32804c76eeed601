/*
 * bench/micro.c — the virtual-clock micro-benchmarks: what one operation
 * costs in a scheduler holding N tasks, for every registered backend.
 *
 * Operations (the <op> of a result name), each timed per task:
 *   fill      N schedules into an empty scheduler (growth included), then
 *             the memory it holds: bytes_held per task, cross-checked with
 *             the allocator's own count (mallinfo2);
 *   insert    one schedule into a scheduler holding N;
 *   cancel    one cancel, in random order, of N pending (on the worst
 *             workload earliest first: each takes a heap's root);
 *   expire    one task run when N due tasks fire as the clock advances in
 *             the workload's steps, inbox transfers beyond what
 *             tb_advance(s, now) moves included (a batch that outruns the
 *             profile's time budget is cut short and its rate so far
 *             reported, with `completed` < 1 saying so);
 *   timeouts  one server operation: schedule a 30 s timeout, cancel the
 *             one it replaces with probability 0.95, move the clock on;
 *             series=precision (issue 27, the cost-precision front): the
 *             same at the profile's precision_n only, each ticked backend
 *             at ticks 1us..100ms (decades), each exact one once, every
 *             fire's lateness on the virtual clock (tb_now in the task's
 *             callback minus its deadline) recorded by the callback:
 *             counters lateness_max_ns, lateness_p99_ns,
 *             lateness_max_share (the most a fire was late as a share of
 *             its delay) and step_ns, the clock step between operations,
 *             which is the resolution of what the callback can see (the
 *             clock moves only at operations); series=caller (issue 37,
 *             the JVM originals' like for like): the same operations with
 *             the clock moved after each timed batch instead of after each
 *             operation, untimed, so the figure is what the caller's
 *             schedule and cancel cost and the expiry, the tick walk and
 *             the inbox transfer (which the originals' worker threads do
 *             off the caller's thread) are left out;
 *   periodic  one run of N fixed-rate tasks as the clock moves in 1 ms
 *             steps;
 *   reschedule  (issue 40, the idle timeout) one request on a server of N
 *             connections (the idle workload), each holding one pending
 *             10 s idle timeout that every request pushes back: the
 *             connection is drawn at random (untimed, like cancel's
 *             permutation, but with replacement) and after each request
 *             the clock moves by an exponential gap of mean 3 s / N, so
 *             every connection sees requests as a Poisson process of
 *             mean gap 3 s.  A gap past 10 s is a real timeout: e^-10/3,
 *             3.6% of them, enough that the expiry path is exercised
 *             (a timeout that never fires is not an idle timeout) and few
 *             enough that the push-back dominates, as on a busy server;
 *             the connection is then re-armed as a new one (in the
 *             callback).  Three strategies, label key `strategy`:
 *             restart  tb_cancel, then tb_schedule (stop and start again);
 *             again    tb_reschedule on the pending handle, registered only
 *                      where the backend has it (the others answer
 *                      TB_ENOTSUP, and their users restart);
 *             lazy     a store of the request's time; the timer stays as
 *                      it is and, when it fires, its callback re-arms it
 *                      for the rest (last + 10 s - now) if the connection
 *                      was active since, else counts a timeout.
 *             The clock's moves (tb_advance, with the expiry and the
 *             re-arms in callbacks they bring) are inside the timed part
 *             for all three, so what lazy defers is paid where it
 *             happens.  Counters timeouts_per_kop and rearms_per_kop.
 *
 * Every step until a task sits in its final place is inside the timed
 * part: where a backend has an inbox (probed: bh_inbox_of), each fill,
 * insert and cancel batch ends with tb_advance(s, now), which moves no time
 * but lets a wheel move its inbox into buckets (a backend without one is
 * not advanced there: its check would run amortised work such as Go's
 * clean-up of zombies or java.util.Timer dropping cancelled heads, which
 * hold() does untimed); where entries are still in the inbox —
 * Netty moves at most 100 000 per tick, and only at a tick if advancing by
 * 0 does not drain it — the clock is advanced tick by tick, still timed,
 * until every new task has left it (`transferred`, `settle_ticks_per_kop`).
 *
 * Holding N.  Timed batches are short (at most 1024 operations, N/8 for
 * small N) and the state is put back outside the timed part: inserted
 * tasks are cancelled, cancelled ones replaced.  Where a cancel only marks
 * the task (lazy cancel), the marked tasks are released once they exceed
 * N/4 — by tb_purge() where the backend has it, else by advancing the
 * clock to the next tick, which is when a wheel sweeps its cancelled
 * queue; base tasks that fire then are replaced.  So a lazy backend holds
 * between N and 1.25 N records, and the `pending_per_n` counter says so.
 * A lazy backend with neither (Go's heap) cleans its zombies itself at a
 * tb_advance once they pass a quarter of the structure, which the batches'
 * own tb_advance(s, now) already gives it: it holds up to 1.33 N.
 *
 * The interface's floor.  Besides the registry's backends, insert and
 * cancel (uniform workload, series h2h) are registered for
 * tb_backend_floor ("floor", core/floor.c): the interface's checks, its
 * pool and its handles with a structure that does nothing, through this
 * file's batches unchanged, so a backend's figure less the floor's is what
 * its structure costs at that N.  It is not a timer: the report shows it
 * beside the harness's empty operation and never ranks it.
 *
 * Nothing else in the timed part (bench/README.md, "Method").  Set-up
 * reserves the most records an instance will hold (tb_reserve) and runs
 * one untimed cycle of batches up to the first flush, so no pool or array
 * grows, and no fresh page is touched, inside a timed batch.  A short
 * timed part (wall clock) whose thread was switched out is run again
 * (tbb_discard); fill and expire, batches of N, are timed on the thread's
 * CPU clock.  Every result carries the structure's work counted inside
 * its timed parts (tb_stats deltas per operation) and the evidence that
 * nothing else ran there (page faults, context switches, growth).
 */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"

enum op { OP_FILL, OP_INSERT, OP_CANCEL, OP_EXPIRE, OP_TIMEOUTS,
          OP_PERIODIC, OP_RESCHEDULE };

static const char *const op_names[] = {"fill",     "insert",   "cancel",
                                       "expire",   "timeouts", "periodic",
                                       "reschedule"};

/* The reschedule op's ways of pushing an idle timeout back (the file
 * comment), and their `strategy` labels. */
enum strategy { ST_RESTART, ST_AGAIN, ST_LAZY, ST_COUNT };

static const char *const strategy_names[] = {"restart", "again", "lazy"};

/* The idle workload (bench.h, BH_IDLE): the timeout, and the mean time
 * between two requests on one connection. */
#define IDLE_TIMEOUT (10 * TB_SEC)
#define IDLE_GAP (3 * TB_SEC)

/* One registered family: an operation on one backend, workload and
 * configuration.  Lives as long as the process. */
struct micro_def {
    enum op op;
    const struct tb_backend *b;
    enum bh_workload w;
    struct bh_config c;
    enum bh_inbox inbox;
    bool rounds;            /* bh_walks_rounds: pays for every tick */
    bool precision;         /* timeouts, series=precision: lateness kept */
    bool caller;            /* timeouts, series=caller: the clock moved untimed */
    enum strategy strategy; /* reschedule: how a request pushes back */
    char name[256];
};

/* The structure's work and the evidence of anything else, read just outside
 * a timed part (bench/README.md names the counters they become). */
struct work {
    uint64_t sift_levels, visits, rounds, cascades, bucket_offers, ticks,
        transfers;
    int64_t bytes;           /* bytes_held */
    int64_t faults;          /* page faults of this thread */
    int64_t switches;        /* context switches of this thread */
};

struct micro;

/* series=precision: the callback argument of timeout k, in a ring of
 * 4 N records (a timeout lives 30 s, 2 N operations, plus its lateness,
 * which a structure that runs a timer 30 s late would have to exceed). */
struct due_rec {
    struct micro *m;
    int64_t due;
    int64_t delay;
};

/* Lateness samples kept for the p99: the most recent LATE_KEEP fires (a
 * ring, allocated at set-up, so nothing grows in the timed part). */
#define LATE_KEEP 65536

/* The callback argument of a base task: which slot to refill if it runs. */
struct slot {
    struct micro *m;
    uint32_t i;
};

/* One instance: the scheduler and everything the batches reuse. */
struct micro {
    const struct micro_def *d;
    int64_t n;
    int64_t batch;
    uint64_t rng;
    struct tb_sched *s;
    int64_t tick;            /* resolved tick, 0 for unticked backends */
    int64_t clock;           /* virtual time the harness moved to */
    /* the N base tasks (insert, cancel, timeouts) */
    tb_handle *h;
    struct slot *slots;
    uint32_t *fired;
    size_t nfired;
    uint32_t *perm;          /* cancel: random order of slots */
    size_t perm_pos;
    /* reschedule: each connection's last request, the batch's requests */
    int64_t *last;
    uint32_t *conn;
    uint64_t timeouts, rearms;   /* callbacks, ever */
    uint64_t rep_timeouts, rep_rearms; /* of kept timed parts, reported */
    int cb_err;              /* a callback's failed tb_schedule */
    /* batch scratch */
    int64_t *delays;
    tb_handle *tmp;
    uint8_t *coin;
    /* counted since the last report */
    uint64_t runs;           /* callbacks of counted tasks, ever */
    uint64_t ops, flushes, transfers, steps, period_runs;
    uint64_t fired_ops, cancels;
    uint64_t ring;           /* timeouts: operations done, warm-up included */
    uint64_t completed;      /* expire: tasks that ran within the budget */
    uint64_t time_cuts;      /* expire: batches cut by the safety net */
    uint64_t redone;         /* batches run again: switched out while timed */
    uint64_t settle_ticks;   /* ticks taken to drain an inbox, timed */
    /* series=precision (timeouts): deadlines and the fires' lateness */
    struct due_rec *dues;
    size_t ndues;
    int64_t *late;           /* ring of LATE_KEEP samples */
    uint64_t nlate;          /* fires recorded since the last report */
    int64_t late_max;
    double late_share_max;
    /* fill: memory of the last fill */
    double bytes_per_task, malloc_per_task;
    /* work inside the timed parts since the last report, and the
     * operations it stands for */
    struct work work;
    uint64_t work_ops;
    /* growth of bytes_held inside timed parts since setup, never reset:
     * Google Benchmark reports only the last run of its iteration search,
     * and growth in an earlier run must still show */
    int64_t timed_growth;
};

static int count_run(void *arg)
{
    (*(uint64_t *)arg)++;
    return 0;
}

/* series=precision: a timeout ran; its lateness on the virtual clock. */
static int late_run(void *arg)
{
    struct due_rec *r = arg;
    struct micro *m = r->m;
    int64_t late = tb_now(m->s) - r->due;
    m->runs++;
    m->late[m->nlate++ % LATE_KEEP] = late;
    if (late > m->late_max)
        m->late_max = late;
    double share = (double)late / (double)r->delay;
    if (share > m->late_share_max)
        m->late_share_max = share;
    return 0;
}

static int base_fired(void *arg)
{
    struct slot *sl = arg;
    sl->m->fired[sl->m->nfired++] = sl->i;
    return 0;
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    return p;
}


static void work_read(const struct micro *m, struct work *w)
{
    struct tb_stats s;
    struct rusage ru;
    memset(w, 0, sizeof *w);
    if (m->s && tb_stats(m->s, &s) == TB_OK) {
        w->sift_levels = s.sift_levels;
        w->visits = s.visits;
        w->rounds = s.rounds;
        w->cascades = s.cascades;
        w->bucket_offers = s.bucket_offers;
        w->ticks = s.ticks;
        w->transfers = s.transfers;
        w->bytes = (int64_t)s.bytes_held;
    }
    if (getrusage(RUSAGE_THREAD, &ru) == 0) {
        w->faults = (int64_t)(ru.ru_minflt + ru.ru_majflt);
        w->switches = (int64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
    }
}

/* Adds what happened between two work_read()s taken around a timed part
 * that did `ops` operations. */
static void work_add(struct micro *m, const struct work *a,
                     const struct work *b, uint64_t ops)
{
    struct work *w = &m->work;
    w->sift_levels += b->sift_levels - a->sift_levels;
    w->visits += b->visits - a->visits;
    w->rounds += b->rounds - a->rounds;
    w->cascades += b->cascades - a->cascades;
    w->bucket_offers += b->bucket_offers - a->bucket_offers;
    w->ticks += b->ticks - a->ticks;
    w->transfers += b->transfers - a->transfers;
    w->bytes += b->bytes - a->bytes;
    m->timed_growth += b->bytes - a->bytes;
    w->faults += b->faults - a->faults;
    w->switches += b->switches - a->switches;
    m->work_ops += ops;
}

/* The end of a short timed part (insert, cancel, timeouts, periodic, timed
 * by the wall clock): if the thread was switched out inside it — another
 * process took the core — its time is not the operation's, and the shim
 * runs the batch again (tbb_discard); else its work counts. */
static bool timed_ok(struct micro *m, tbb_state *st, const struct work *a,
                     const struct work *b, uint64_t ops)
{
    if (b->switches != a->switches) {
        m->redone++;
        tbb_discard(st);
        return false;
    }
    work_add(m, a, b, ops);
    return true;
}

static bool make_sched(struct micro *m, tbb_state *st)
{
    int rc = tb_create(m->d->b, &m->d->c.cfg, &m->s);
    if (rc != TB_OK) {
        char msg[128];
        snprintf(msg, sizeof msg, "tb_create: %s", tb_strerror(rc));
        tbb_skip(st, msg);
        return false;
    }
    struct tb_config r;
    tb_sched_config(m->s, &r);
    m->tick = (m->d->b->caps & TB_CAP_TICKED) ? r.tick_ns : 0;
    m->clock = tb_now(m->s);
    return true;
}

static bool fail(tbb_state *st, const char *what, long rc)
{
    char msg[160];
    snprintf(msg, sizeof msg, "%s: %s", what,
             rc < 0 ? tb_strerror((int)rc) : "unexpected result");
    tbb_skip(st, msg);
    return false;
}

/* fail() for a batch: the shim takes a negative time as "failed". */
static double bad(tbb_state *st, const char *what, long rc)
{
    fail(st, what, rc);
    return -1;
}

/* ---- Holding N --------------------------------------------------------- */

static int put_base(void *ctx, uint32_t i)
{
    struct micro *m = ctx;
    return tb_schedule(m->s, bh_draw(m->d->w, &m->rng), base_fired,
                       &m->slots[i], &m->h[i]);
}

static bool schedule_base(struct micro *m, uint32_t i, tbb_state *st)
{
    int rc = put_base(m, i);
    return rc == TB_OK || fail(st, "tb_schedule", rc);
}

static int64_t next_tick(const struct micro *m)
{
    int64_t now = tb_now(m->s);
    return (now / m->tick + 1) * m->tick;
}

static uint64_t transfers_now(struct micro *m)
{
    return bh_transfers(m->s);
}

/* The instance's base as bench/common.c holds it. */
static struct bh_hold hold_of(struct micro *m)
{
    return (struct bh_hold){m->s,      m->d->inbox, m->tick,  m->n,
                            &m->clock, m->fired,    &m->nfired, put_base,
                            m};
}

/* bh_settle at the end of a timed insert (timed: its ticks are counted),
 * and untimed, so that tasks the harness put back do not wait in the inbox
 * for the next timed batch to move them.  Returns a TB_E* code or 0. */
static long settle(struct micro *m, uint64_t transfers0, int64_t n,
                   bool timed)
{
    struct bh_hold h = hold_of(m);
    return bh_settle(&h, transfers0, n, timed ? &m->settle_ticks : NULL);
}

/* Replaces base tasks that ran, until none is left to replace (moving the
 * clock to drain an inbox may run more). */
static bool refill(struct micro *m, tbb_state *st)
{
    struct bh_hold h = hold_of(m);
    const char *what = NULL;
    long rc = bh_refill(&h, &what);
    if (rc == BH_CANNOT_HOLD) {
        tbb_skip(st, what);
        return false;
    }
    return rc == 0 || fail(st, what, rc);
}

/* Whether the backend releases its cancelled tasks on its own, at a look at
 * the structure (tb_advance), rather than by a purge or a tick: Go's heap
 * cleans its zombies once they pass a quarter of it. */
static bool self_cleaning(const struct micro *m)
{
    unsigned caps = m->d->b->caps;
    return (caps & TB_CAP_LAZY_CANCEL) && !(caps & TB_CAP_PURGE) &&
           m->tick <= 0;
}

/* How many records a lazy backend may hold before hold() releases the
 * cancelled ones: N and a quarter (at least two batches); N and a third for
 * a self-cleaning one, whose zombies pass a quarter of the whole just past
 * a third of N: Go cleans once zombies > len/4, and with N live that is
 * z > (N + z)/4, so a heap its check leaves uncleaned holds at most
 * N + N/3 (integer division, as Go's). */
static size_t hold_limit(const struct micro *m)
{
    int64_t part = self_cleaning(m) ? m->n / 3 : m->n / 4;
    size_t slack = (size_t)(part > 2 * m->batch ? part : 2 * m->batch);
    return (size_t)m->n + slack;
}

/* Brings a lazy backend back to about N records (see the file comment). */
static bool hold(struct micro *m, tbb_state *st)
{
    size_t limit = hold_limit(m);
    if (tb_pending(m->s) > limit) {
        m->flushes++;
        if (m->d->b->caps & TB_CAP_PURGE) {
            long rc = tb_purge(m->s);
            if (rc < 0)
                return fail(st, "tb_purge", rc);
        } else if (m->tick > 0) {
            m->clock = next_tick(m);
            long rc = tb_advance(m->s, m->clock);
            if (rc < 0)
                return fail(st, "tb_advance", rc);
        } else if (self_cleaning(m)) {
            /* Its own check, again while a check removes some but leaves
             * too many: Go compares the zombies with the length the last
             * unlock stored, so zombies met at the head during a check
             * (they leave one by one) do not lower that check's threshold,
             * and the clean-up they made due waits for the next check
             * (pending 136, 2 at the head: 134 left with 34 zombies, over
             * N + N/3 = 133 at N = 100; issue 42).  That next check
             * compares with the length this one stored, so it cleans. */
            size_t before;
            do {
                before = tb_pending(m->s);
                long rc = tb_advance(m->s, tb_now(m->s));
                if (rc < 0)
                    return fail(st, "tb_advance", rc);
            } while (tb_pending(m->s) > limit && tb_pending(m->s) < before);
        }
        if (tb_pending(m->s) > limit) {
            tbb_skip(st, "cannot hold N: cancelled tasks stay in the "
                         "structure and no purge or tick releases them");
            return false;
        }
    }
    return refill(m, st);
}

static bool fill_base(struct micro *m, tbb_state *st)
{
    for (uint32_t i = 0; i < (uint32_t)m->n; i++) {
        m->slots[i].m = m;
        m->slots[i].i = i;
        if (!schedule_base(m, i, st))
            return false;
    }
    /* draining a large inbox moves the clock: replace what ran meanwhile */
    long rc = settle(m, 0, m->n, false);
    return rc >= 0 ? refill(m, st) : fail(st, "settle", rc);
}

/* The worst workload's cancel order: the n slots scheduled last, the
 * last-scheduled (the earliest pending, a heap's root) first.  fill_base
 * schedules the slots in index order, and cancel_batch reschedules a
 * batch's slots in the opposite order of their cancels, so the first
 * batch's slots stay the n earliest in that order: every cancel takes
 * the earliest pending task.  No random draw: the state m->rng holds the
 * workload's sequence (bench.h, bh_draw). */
static void worst_order(struct micro *m)
{
    for (size_t i = 0; i < (size_t)m->n; i++)
        m->perm[i] = (uint32_t)((size_t)m->n - 1 - i);
    m->perm_pos = 0;
}

static void shuffle(struct micro *m)
{
    for (size_t i = (size_t)m->n; i > 1; i--) {
        size_t j = (size_t)(bh_rand(&m->rng) % i);
        uint32_t t = m->perm[i - 1];
        m->perm[i - 1] = m->perm[j];
        m->perm[j] = t;
    }
    m->perm_pos = 0;
}

/* ---- Setup and teardown ------------------------------------------------ */


/* Operations in one timed batch of `op` at N (micro_setup's rule). */
static int64_t ops_per_batch(enum op op, int64_t n)
{
    switch (op) {
    case OP_FILL:
    case OP_EXPIRE:
        return n;
    case OP_INSERT:
    case OP_CANCEL:
    case OP_RESCHEDULE:
        return bh_clamp_batch(n);
    case OP_TIMEOUTS:
    case OP_PERIODIC:
        break;
    }
    return 1024;
}

static void micro_teardown(void *inst)
{
    struct micro *m = inst;
    tb_destroy(m->s);
    free(m->h);
    free(m->slots);
    free(m->fired);
    free(m->perm);
    free(m->last);
    free(m->conn);
    free(m->delays);
    free(m->tmp);
    free(m->coin);
    free(m->dues);
    free(m->late);
    free(m);
}

/* The timeouts op: one server operation on ring slot k. */
static inline int timeout_op(struct micro *m, uint64_t k, uint8_t coin,
                             int64_t dt)
{
    uint32_t i = (uint32_t)(k % (uint64_t)m->n);
    if (coin)
        m->cancels += (uint64_t)tb_cancel(m->s, m->h[i]);
    int rc;
    if (m->dues) {
        struct due_rec *r = &m->dues[k % m->ndues];
        r->due = m->clock + 30 * TB_SEC;
        rc = tb_schedule(m->s, 30 * TB_SEC, late_run, r, &m->h[i]);
    } else {
        rc = tb_schedule(m->s, 30 * TB_SEC, count_run, &m->runs, &m->h[i]);
    }
    m->clock += dt;
    long ran = tb_advance(m->s, m->clock);
    return rc ? rc : ran < 0 ? (int)ran : 0;
}

/* The ring is revisited every 15 s, half the timeout: a slot's previous
 * timeout is cancelled (p = 0.95) or left to fire 15 s later. */
static int64_t timeout_dt(const struct micro *m)
{
    int64_t dt = 15 * TB_SEC / m->n;
    return dt > 0 ? dt : 1;
}

static void draw_coins(struct micro *m, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        m->coin[i] = bh_unit(&m->rng) < 0.95;
}

/* ---- The reschedule op (idle timeouts) --------------------------------- */

/* An exponential draw of mean `mean` ns, rounded to the nanosecond. */
static int64_t exp_draw(uint64_t *rng, int64_t mean)
{
    return (int64_t)(-(double)mean * log1p(-bh_unit(rng)) + 0.5);
}

/* A connection's idle timeout ran.  Under restart and again every request
 * pushed it back, so it ran because the connection was idle for 10 s: a
 * real timeout, and the connection is re-armed as a new one.  Under lazy
 * it ran 10 s after it was armed; if a request came since, it is re-armed
 * for what is left of 10 s after that request, else it is a timeout. */
static int idle_fired(void *arg)
{
    struct slot *sl = arg;
    struct micro *m = sl->m;
    int64_t now = tb_now(m->s);
    int64_t delay = IDLE_TIMEOUT;
    if (m->d->strategy == ST_LAZY && m->last[sl->i] + IDLE_TIMEOUT > now) {
        delay = m->last[sl->i] + IDLE_TIMEOUT - now;
        m->rearms++;
    } else {
        m->timeouts++;
        m->last[sl->i] = now;
    }
    int rc = tb_schedule(m->s, delay, idle_fired, sl, &m->h[sl->i]);
    if (rc && !m->cb_err)
        m->cb_err = rc;
    return 0;
}

/* One request on connection i, its timeout pushed back by the family's
 * strategy: 0, a TB_E* code, or 1 if the timer was not pending (which the
 * callbacks' re-arming rules out: a bug). */
static inline int idle_request(struct micro *m, uint32_t i)
{
    int rc;
    switch (m->d->strategy) {
    case ST_RESTART:
        rc = tb_cancel(m->s, m->h[i]);
        if (rc != 1)
            return rc < 0 ? rc : 1;
        return tb_schedule(m->s, IDLE_TIMEOUT, idle_fired, &m->slots[i],
                           &m->h[i]);
    case ST_AGAIN:
        rc = tb_reschedule(m->s, m->h[i], IDLE_TIMEOUT);
        return rc == 1 ? 0 : rc < 0 ? rc : 1;
    case ST_LAZY:
    case ST_COUNT:
        break;
    }
    m->last[i] = m->clock;
    return 0;
}

/* One connection's state at time 0 in the steady state of its strategy:
 * its history simulated on its own, untimed and without a scheduler, with
 * the rules of idle_request and idle_fired, from a new connection some
 * timeouts before: *last is its last request (or timeout), and the return
 * value the deadline its timer has at 0 (>= 0).  Under restart and again
 * that is last + 10 s, and two timeouts of history settle it; under lazy
 * it is 10 s after the request before the timer's previous run, a chain
 * that settles slowly: at 10^6 a repetition covers well under one timeout
 * of virtual time, and the re-arms per 1000 requests measured there were
 * 804 starting from fresh timers and 250-320 after 20 s of history,
 * against 344 at 10^2 and 10^4 (where the run covers minutes); a model of
 * this loop (per-connection Poisson requests) gives 242, 324, 343 and 347
 * in the first second after 20, 40, 60 and 100 s of history, so lazy
 * takes 60 s. */
static int64_t idle_history(uint64_t *rng, bool lazy, int64_t *last)
{
    int64_t t = -(lazy ? 6 : 2) * IDLE_TIMEOUT;
    int64_t due = t + IDLE_TIMEOUT, next = t + exp_draw(rng, IDLE_GAP);
    *last = t;
    while (due < 0 || next < 0) {
        if (due <= next) {          /* the timer runs first */
            if (lazy && *last + IDLE_TIMEOUT > due) {
                due = *last + IDLE_TIMEOUT;  /* re-armed for the rest */
            } else {
                *last = due;                 /* a timeout: a new one */
                due += IDLE_TIMEOUT;
            }
        } else {                    /* a request */
            *last = next;
            if (!lazy)
                due = next + IDLE_TIMEOUT;
            next += exp_draw(rng, IDLE_GAP);
        }
    }
    return due;
}

/* The N connections at the start, each in its steady state (above). */
static bool idle_fill(struct micro *m, tbb_state *st)
{
    const bool lazy = m->d->strategy == ST_LAZY;
    for (uint32_t i = 0; i < (uint32_t)m->n; i++) {
        int64_t last;
        int64_t due = idle_history(&m->rng, lazy, &last);
        m->slots[i].m = m;
        m->slots[i].i = i;
        m->last[i] = m->clock + last;
        int rc = tb_schedule(m->s, due, idle_fired, &m->slots[i], &m->h[i]);
        if (rc)
            return fail(st, "tb_schedule", rc);
    }
    long rc = settle(m, 0, m->n, false);
    if (rc < 0)
        return fail(st, "settle", rc);
    return m->cb_err == 0 || fail(st, "tb_schedule in a callback", m->cb_err);
}

static double reschedule_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    /* the requests' connections and the gaps after them, untimed; a
     * request on a connection at random: each sees requests as a Poisson
     * process of mean gap IDLE_GAP (a thinning of the whole stream's) */
    const int64_t mean = IDLE_GAP / m->n;
    for (int64_t j = 0; j < n; j++) {
        m->conn[j] = (uint32_t)(bh_rand(&m->rng) % (uint64_t)m->n);
        m->delays[j] = exp_draw(&m->rng, mean);
    }
    const uint64_t to0 = m->timeouts, re0 = m->rearms;
    int rc = 0;
    long ran = 0;
    struct work w0, w1;
    work_read(m, &w0);
    int64_t t0 = tb_monotonic_ns();
    for (int64_t j = 0; j < n; j++) {
        rc = idle_request(m, m->conn[j]);
        if (rc)
            break;
        m->clock += m->delays[j];
        ran = tb_advance(m->s, m->clock);
        if (ran < 0)
            break;
    }
    int64_t t1 = tb_monotonic_ns();
    work_read(m, &w1);
    if (rc == 1) {
        tbb_skip(st, "a connection's idle timeout was not pending");
        return -1;
    }
    if (rc)
        return bad(st, m->d->strategy == ST_AGAIN ? "tb_reschedule"
                                                  : "tb_cancel/tb_schedule",
                   rc);
    if (ran < 0)
        return bad(st, "tb_advance", ran);
    if (m->cb_err)
        return bad(st, "tb_schedule in a callback", m->cb_err);
    if (timed_ok(m, st, &w0, &w1, (uint64_t)n)) {
        m->rep_timeouts += m->timeouts - to0;
        m->rep_rearms += m->rearms - re0;
    }
    m->ops += (uint64_t)n;
    return hold(m, st) ? bh_seconds(t0, t1) : -1;
}

static double insert_batch(void *inst, tbb_state *st, int64_t n);
static double cancel_batch(void *inst, tbb_state *st, int64_t n);
static uint64_t w_units(const struct micro *m);

/* Runs the instance's batches, untimed, through one whole cycle of what
 * the timed batches will do: a lazy backend fills up with cancelled tasks
 * until hold() releases them (the flush), so every array reaches the
 * largest size it will have, and every page of it is touched, before
 * anything is timed.  A backend that cancels at once holds N throughout:
 * two batches warm its free list.  The counters start afresh. */
static bool warm_up(struct micro *m, tbb_state *st)
{
    double (*batch)(void *, tbb_state *, int64_t) =
        m->d->op == OP_INSERT ? insert_batch : cancel_batch;
    int64_t most = (int64_t)(hold_limit(m) - (size_t)m->n) / m->batch + 2;
    if (m->d->op == OP_RESCHEDULE) {
        /* N requests (idle_fill starts in the steady state): a restart
         * on a lazy backend has been through hold()'s release of its
         * cancelled timers (at N/4 or N/3), every array is at its size */
        batch = reschedule_batch;
        most = (m->n + m->batch - 1) / m->batch;
        most = most < 2 ? 2 : most;
    }
    for (int64_t k = 0; k < most && (k < 2 || m->flushes == 0 ||
                                      m->d->op == OP_RESCHEDULE); k++)
        if (batch(m, st, m->batch) < 0)
            return false;
    m->ops = m->flushes = m->transfers = m->settle_ticks = m->redone = 0;
    m->rep_timeouts = m->rep_rearms = 0;
    memset(&m->work, 0, sizeof m->work);
    m->work_ops = 0;
    m->timed_growth = 0;
    return true;
}

/* One untimed fill, freed at once, before the timed ones: glibc keeps the
 * memory (main.c turns trimming off), so each timed fill grows into pages
 * this process has touched already, in the same order of allocations.
 * Without it, whether a fill took page faults depended on what the
 * benchmarks interleaved before it had left free: with 5 repetitions,
 * fill/timerwheel/uniform/orig at 10^6 had a median of 133 ns per task
 * (7.6 faults per 1000 tasks) in one run and 16.6 ns (none) in the next,
 * and within one process the first fill took 235-253 ns and the later
 * ones 15-20 ns.  First-touch faults are the kernel's cost, not the
 * structure's: the `fill` numbers exclude them, and page_faults_per_kop
 * shows any that remain. */
static bool warm_fill(struct micro *m, tbb_state *st)
{
    int64_t *delays = xcalloc((size_t)m->n, sizeof *delays);
    struct tb_sched *s;
    int rc = tb_create(m->d->b, &m->d->c.cfg, &s);
    if (rc != TB_OK) {
        free(delays);
        return fail(st, "tb_create", rc);
    }
    uint64_t rng = m->rng; /* the timed fills draw the same delays */
    uint64_t runs = 0;
    for (int64_t i = 0; i < m->n && rc == TB_OK; i++) {
        delays[i] = bh_draw(m->d->w, &rng);
        rc = tb_schedule(s, delays[i], count_run, &runs, NULL);
    }
    if (rc == TB_OK)
        rc = (int)(tb_advance(s, tb_now(s)) < 0 ? TB_EINVAL : TB_OK);
    tb_destroy(s);
    free(delays);
    return rc == TB_OK || fail(st, "warm-up fill", rc);
}

static void *micro_setup(void *ctx, tbb_state *st)
{
    const struct micro_def *d = ctx;
    struct micro *m = xcalloc(1, sizeof *m);
    m->d = d;
    m->n = tbb_arg(st, 0);
    m->rng = bh_seed_for(d->name, m->n);
    size_t n = (size_t)m->n;
    m->batch = ops_per_batch(d->op, m->n);
    m->delays = xcalloc((size_t)m->batch, sizeof *m->delays);
    m->tmp = xcalloc((size_t)m->batch, sizeof *m->tmp);
    m->coin = xcalloc((size_t)m->batch, sizeof *m->coin);
    tbb_set_batch(st, m->batch);
    if (d->op == OP_FILL) {
        if (!warm_fill(m, st))
            goto fail;
        return m; /* a fresh scheduler per batch */
    }
    if (!make_sched(m, st))
        goto fail;
    const bool based = d->op == OP_INSERT || d->op == OP_CANCEL ||
                       d->op == OP_TIMEOUTS || d->op == OP_RESCHEDULE;
    if (based) {
        m->h = xcalloc(n, sizeof *m->h);
        m->slots = xcalloc(n, sizeof *m->slots);
        m->fired = xcalloc(n, sizeof *m->fired);
    }
    if (d->op == OP_RESCHEDULE) {
        m->last = xcalloc(n, sizeof *m->last);
        m->conn = xcalloc((size_t)m->batch, sizeof *m->conn);
    }
    if (based) {
        /* Room for the most records the instance will hold (a lazy
         * backend's N and a quarter, and a batch on top), so the pool and
         * a heap's array never grow inside a timed batch.  Where the
         * backend's own arrays have no ops.reserve, the warm-up below
         * grows them. */
        size_t most = hold_limit(m) + 2 * (size_t)m->batch;
        if (d->op == OP_TIMEOUTS)
            most = 2 * n + (size_t)m->batch;
        int rc = tb_reserve(m->s, most);
        if (rc != TB_OK) {
            fail(st, "tb_reserve", rc);
            goto fail;
        }
    }
    if (d->op == OP_INSERT || d->op == OP_CANCEL) {
        if (!fill_base(m, st))
            goto fail;
    } else if (d->op == OP_RESCHEDULE) {
        if (!idle_fill(m, st))
            goto fail;
    } else if (d->op == OP_TIMEOUTS) {
        if (d->precision) {
            m->ndues = 4 * n;
            m->dues = xcalloc(m->ndues, sizeof *m->dues);
            for (size_t i = 0; i < m->ndues; i++) {
                m->dues[i].m = m;
                m->dues[i].delay = 30 * TB_SEC;
            }
            m->late = xcalloc(LATE_KEEP, sizeof *m->late);
        }
        /* warm up for 45 s of virtual time: past one timeout, so the
         * structure holds the steady mix of live and cancelled tasks */
        int64_t dt = timeout_dt(m);
        /* A sweep point whose wheel pays for its fine tick beyond the
         * profile's work budget (counted: visits + ticks, the same in
         * every run) is skipped, as an expire batch is cut: a 1 us Netty
         * wheel of 512 buckets would visit every far timer 30 000 times.
         * Only ticked backends: a tree's visits are its own cost. */
        const uint64_t units0 = w_units(m);
        while (m->ring < 3 * (uint64_t)m->n) {
            if (d->precision && m->tick > 0 &&
                w_units(m) - units0 > 20 * (uint64_t)bh.profile->work_budget) {
                tbb_skip(st, "skipped: the warm-up (45 s of virtual time) "
                             "took more wheel visits and ticks than 20 "
                             "times the profile's work budget");
                goto fail;
            }
            draw_coins(m, m->batch);
            for (int64_t j = 0; j < m->batch; j++) {
                /* a slot never scheduled has handle 0: cancel answers 0 */
                int rc = timeout_op(m, m->ring++, m->coin[j], dt);
                if (rc) {
                    fail(st, "timeouts warm-up", rc);
                    goto fail;
                }
            }
        }
        m->cancels = 0;
        m->fired_ops = m->runs;
        m->nlate = 0;
        m->late_max = 0;
        m->late_share_max = 0;
    } else if (d->op == OP_PERIODIC) {
        for (int64_t i = 0; i < m->n; i++) {
            int64_t period = bh_draw(BH_PERIODIC, &m->rng);
            int64_t first = bh_uniform(&m->rng, 0, period - 1);
            int rc = tb_schedule_fixed_rate(m->s, first, count_run, &m->runs,
                                            NULL, period);
            if (rc) {
                fail(st, "tb_schedule_fixed_rate", rc);
                goto fail;
            }
        }
        /* A step runs every run that is due, so on a coarse tick one step
         * of a batch runs far more than the batch asks (Netty's 100 ms
         * tick, 10^5 tasks: 145 000 runs where 1024 were asked).  The
         * time per run is scaled right (periodic_batch), but Google
         * Benchmark counts the batch's 1024, and 140 such batches ran
         * for each one needed: seconds per repetition.  One untimed step
         * sequence shows how many runs a tick brings; half of that is the
         * batch, so one tick completes most batches. */
        uint64_t r0 = m->runs;
        while (m->runs - r0 < (uint64_t)m->batch) {
            m->clock += TB_MS;
            long rc = tb_advance(m->s, m->clock);
            if (rc < 0) {
                fail(st, "tb_advance", rc);
                goto fail;
            }
        }
        int64_t half = (int64_t)((m->runs - r0) / 2);
        if (half > m->batch)
            tbb_set_batch(st, half);
    }
    if (d->op == OP_CANCEL) {
        m->perm = xcalloc(n, sizeof *m->perm);
        for (size_t i = 0; i < n; i++)
            m->perm[i] = (uint32_t)i;
        if (d->w == BH_WORST)
            worst_order(m);
        else
            shuffle(m);
    }
    if ((d->op == OP_INSERT || d->op == OP_CANCEL ||
         d->op == OP_RESCHEDULE) && !warm_up(m, st))
        goto fail;
    return m;
fail:
    micro_teardown(m);
    return NULL;
}

/* ---- Batches ----------------------------------------------------------- */

static double fill_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    /* the delays are drawn first so the allocator count below sees only
     * what the scheduler takes */
    int64_t *delays = xcalloc((size_t)n, sizeof *delays);
    for (int64_t i = 0; i < n; i++)
        delays[i] = bh_draw(m->d->w, &m->rng);
    size_t before = bh_malloc_in_use();
    if (!make_sched(m, st)) {
        free(delays);
        return -1;
    }
    struct work w0, w1;
    work_read(m, &w0);
    int64_t t0 = bh_cpu_now();
    for (int64_t i = 0; i < n; i++) {
        int rc = tb_schedule(m->s, delays[i], count_run, &m->runs, NULL);
        if (rc) {
            free(delays);
            return bad(st, "tb_schedule", rc);
        }
    }
    long rc = settle(m, 0, n, true);
    int64_t t1 = bh_cpu_now();
    work_read(m, &w1);
    if (rc < 0) {
        free(delays);
        return bad(st, "settle", rc);
    }
    work_add(m, &w0, &w1, (uint64_t)n);
    struct tb_stats s;
    tb_stats(m->s, &s);
    size_t after = bh_malloc_in_use();
    m->bytes_per_task = (double)s.bytes_held / (double)n;
    m->malloc_per_task = (double)(after - before) / (double)n;
    m->transfers += s.transfers;
    m->ops += (uint64_t)n;
    free(delays);
    tb_destroy(m->s);
    m->s = NULL;
    return bh_cpu_seconds(t0, t1);
}

/* The worst workload on a heap that cleans zombies at its head when a
 * task is added (Go's cleanHead in maybeAdd, quadheap): the batch's
 * cancelled inserts are the earliest tasks, so they all sit at the head,
 * and the next timed insert would sift each of them out — this batch's
 * cancels, which the harness does untimed.  One untimed add of a task
 * later than every draw cleans them here; it is cancelled at once and,
 * being the latest, its zombie is the heap's last slot, which the next
 * add drops without sifting (the uniform workload's inserts leave such
 * zombies at the end too). */
static bool sweep_head(struct micro *m, tbb_state *st)
{
    tb_handle h;
    int rc = tb_schedule(m->s, bh_workloads[BH_WORST].hi + TB_SEC,
                         count_run, &m->runs, &h);
    if (rc)
        return fail(st, "tb_schedule", rc);
    tb_cancel(m->s, h);
    return true;
}

static double insert_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    for (int64_t i = 0; i < n; i++)
        m->delays[i] = bh_draw(m->d->w, &m->rng);
    uint64_t tr0 = m->d->inbox ? transfers_now(m) : 0;
    struct work w0, w1;
    work_read(m, &w0);
    int64_t t0 = tb_monotonic_ns();
    for (int64_t i = 0; i < n; i++) {
        int rc = tb_schedule(m->s, m->delays[i], count_run, &m->runs,
                             &m->tmp[i]);
        if (rc)
            return bad(st, "tb_schedule", rc);
    }
    long ran = settle(m, tr0, n, true);
    int64_t t1 = tb_monotonic_ns();
    work_read(m, &w1);
    if (ran < 0)
        return bad(st, "settle", ran);
    timed_ok(m, st, &w0, &w1, (uint64_t)n);
    if (m->d->inbox)
        m->transfers += transfers_now(m) - tr0;
    for (int64_t i = 0; i < n; i++)
        tb_cancel(m->s, m->tmp[i]);
    /* Those cancels are the harness putting the state back, not the next
     * batch's work: what a backend defers for them happens here, untimed.
     * Netty unlinks cancelled timeouts at its next tick, which for an
     * inbox drained only at a tick would otherwise be the next timed
     * batch's settling tick. */
    if (m->d->inbox == BH_INBOX_TICK && m->tick > 0) {
        m->clock = next_tick(m);
        long rc = tb_advance(m->s, m->clock);
        if (rc < 0)
            return bad(st, "tb_advance", rc);
    }
    if (m->d->w == BH_WORST && self_cleaning(m) && !sweep_head(m, st))
        return -1;
    m->ops += (uint64_t)n;
    return hold(m, st) ? bh_seconds(t0, t1) : -1;
}

static double cancel_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    const bool worst = m->d->w == BH_WORST;
    if (worst)
        m->perm_pos = 0; /* the same n slots, earliest first */
    else if (m->perm_pos + (size_t)n > (size_t)m->n)
        shuffle(m);
    const uint32_t *slots = m->perm + m->perm_pos;
    m->perm_pos += (size_t)n;
    for (int64_t i = 0; i < n; i++)
        m->tmp[i] = m->h[slots[i]];
    int64_t ok = 0;
    struct work w0, w1;
    work_read(m, &w0);
    int64_t t0 = tb_monotonic_ns();
    for (int64_t i = 0; i < n; i++)
        ok += tb_cancel(m->s, m->tmp[i]) == 1;
    long ran = m->d->inbox == BH_INBOX_NONE ? 0
                                            : tb_advance(m->s, tb_now(m->s));
    int64_t t1 = tb_monotonic_ns();
    work_read(m, &w1);
    timed_ok(m, st, &w0, &w1, (uint64_t)n);
    if (ran < 0)
        return bad(st, "tb_advance", ran);
    if (ok != n) {
        tbb_skip(st, "a pending task could not be cancelled");
        return -1;
    }
    uint64_t tr0 = m->d->inbox ? transfers_now(m) : 0;
    for (int64_t i = 0; i < n; i++)
        /* worst: in reverse, so slots[0] is again the earliest */
        if (!schedule_base(m, slots[worst ? n - 1 - i : i], st))
            return -1;
    long rc = settle(m, tr0, n, false);
    if (rc < 0)
        return bad(st, "settle", rc);
    m->ops += (uint64_t)n;
    return hold(m, st) ? bh_seconds(t0, t1) : -1;
}

/* Whether a moving-clock loop reads the clock after step `steps`: at
 * 1, 2, 4, ... 64, then every 64th, so a loop of cheap steps pays little
 * for the check and one of costly steps (a wheel walking rounds) is still
 * stopped within twice its budget. */
static inline bool check_now(uint64_t steps)
{
    return steps < 64 ? (steps & (steps - 1)) == 0 : (steps & 63) == 0;
}

/* The work an expire batch's cut counts: wheel entries visited and ticks. */
static uint64_t w_units(const struct micro *m)
{
    struct tb_stats s;
    return tb_stats(m->s, &s) == TB_OK ? s.visits + s.ticks : 0;
}

static double expire_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    for (int64_t i = 0; i < n; i++) {
        int rc = tb_schedule(m->s, bh_draw(m->d->w, &m->rng), count_run,
                             &m->runs, NULL);
        if (rc)
            return bad(st, "tb_schedule", rc);
    }
    /* What an inbox lets through without a tick moves untimed (insert's
     * work).  The rest cannot be moved apart from the clock: Netty takes
     * 100 000 a tick, and at its 100 ms default 10^6 short timers would
     * all expire while they trickle in, so those transfers are part of
     * the timed expiry, as they are in the original. */
    uint64_t first = m->runs, target = m->runs + (uint64_t)n;
    long rc = tb_advance(m->s, m->clock);
    if (rc < 0)
        return bad(st, "tb_advance", rc);
    uint64_t settled = m->runs;
    const int64_t step = bh_workloads[m->d->w].expire_step;
    /* A wheel may run a timer late by a share of its delay (the kernel's
     * levels: up to 1/8), so a batch is stuck only when nothing ran for a
     * while after twice the delay range */
    const int64_t end = m->clock + 2 * bh_workloads[m->d->w].hi + 2 * step +
                        2 * (m->tick > 0 ? m->tick : 0);
    /* The cut is decided on counted work (wheel visits and ticks: what
     * grows without tasks firing), never on elapsed time, so it falls on
     * the same task in every run whatever the machine's load; elapsed time
     * only stops a batch gone 5 times over the profile's budget. */
    const int64_t budget = (int64_t)(5 * bh.profile->batch_budget * 1e9);
    const uint64_t work_budget = (uint64_t)bh.profile->work_budget;
    const uint64_t units0 = w_units(m);
    const int64_t stall = 10 * (step > m->tick ? step : m->tick);
    /* A wheel that walks rounds pays every tick of a step whatever its
     * length, so cutting a long step into 1 s pieces costs it nothing and
     * lets the budget be checked in between (one 100 s step of a 1 ms
     * Netty wheel holding 10^6 timers takes minutes). */
    const int64_t piece = m->d->rounds && step > TB_SEC ? TB_SEC : step;
    const int64_t start = m->clock;
    uint64_t seen = m->runs;
    int64_t progress = m->clock;
    struct work w0, w1;
    work_read(m, &w0);
    const int64_t wall0 = tb_monotonic_ns();
    int64_t t0 = bh_cpu_now(), t1 = t0;
    uint64_t pieces = 0;
    bool cut = false;
    while (m->runs < target) {
        m->clock += piece;
        rc = tb_advance(m->s, m->clock);
        if (rc < 0)
            return bad(st, "tb_advance", rc);
        if (check_now(++pieces) &&
            (w_units(m) - units0 > work_budget ||
             (tb_monotonic_ns() - wall0 > budget && ++m->time_cuts))) {
            cut = true;
            t1 = bh_cpu_now();
            break;
        }
        /* late is allowed (an inbox may hold tasks back), stuck is not */
        if (m->runs != seen) {
            seen = m->runs;
            progress = m->clock;
        } else if (m->clock > end && m->clock - progress > stall) {
            tbb_skip(st, "tasks did not run by their deadline");
            return -1;
        }
    }
    if (!cut)
        t1 = bh_cpu_now();
    work_read(m, &w1);
    work_add(m, &w0, &w1, m->runs - settled);
    m->steps += (uint64_t)((m->clock - start + step - 1) / step);
    m->ops += (uint64_t)n;
    m->completed += m->runs - first;
    /* the cost per task of the tasks that ran in the timed loop (all but
     * those the untimed settle let run) stands for the batch */
    uint64_t timed = m->runs - settled;
    if (!cut)
        return timed ? bh_cpu_seconds(t0, t1) * (double)n / (double)timed
                     : bh_cpu_seconds(t0, t1);
    /* Over the profile's time budget (a wheel walking its rounds, say):
     * the rate so far stands for the batch, `completed` says how much of
     * it ran, and the rest is dropped with a fresh scheduler. */
    if (!timed) {
        tbb_skip(st, "no task fired within the profile's time budget");
        return -1;
    }
    tb_destroy(m->s);
    m->s = NULL;
    if (!make_sched(m, st))
        return -1;
    return bh_cpu_seconds(t0, t1) * (double)n / (double)timed;
}

/* series=caller: a batch of timeout operations (cancel, schedule) in
 * stretches of at most bh_clamp_batch(N), each timed with the clock standing,
 * the clock moved untimed between them (a stretch of the whole batch
 * would revisit a slot within it at small N and then jump past every
 * timeout: the JVM side's batches are N/8 for the same reason).  Returns
 * the timed nanoseconds, or a negative error. */
static int64_t timeouts_caller(struct micro *m, uint64_t k0, int64_t n,
                               int64_t dt)
{
    const int64_t w = bh_clamp_batch(m->n);
    int64_t ns = 0;
    for (int64_t j0 = 0; j0 < n; j0 += w) {
        const int64_t j1 = j0 + w < n ? j0 + w : n;
        int64_t t0 = tb_monotonic_ns();
        for (int64_t j = j0; j < j1; j++) {
            uint32_t i = (uint32_t)((k0 + (uint64_t)j) % (uint64_t)m->n);
            if (m->coin[j])
                m->cancels += (uint64_t)tb_cancel(m->s, m->h[i]);
            int rc = tb_schedule(m->s, 30 * TB_SEC, count_run, &m->runs,
                                 &m->h[i]);
            if (rc)
                return rc;
        }
        ns += tb_monotonic_ns() - t0;
        /* the stretch's time, the expiry and tick walk it brings, untimed */
        m->clock += (j1 - j0) * dt;
        long ran = tb_advance(m->s, m->clock);
        if (ran < 0)
            return (int)ran;
    }
    return ns;
}

static double timeouts_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    draw_coins(m, n);
    const int64_t dt = timeout_dt(m);
    const uint64_t k0 = m->ring;
    m->ring += (uint64_t)n;
    struct work w0, w1;
    if (m->d->caller) {
        /* the structure's work counted over the whole batch, the untimed
         * advances included: visits and ticks are then the workload's */
        work_read(m, &w0);
        int64_t ns = timeouts_caller(m, k0, n, dt);
        if (ns < 0)
            return bad(st, "timeouts", (int)ns);
        work_read(m, &w1);
        timed_ok(m, st, &w0, &w1, (uint64_t)n);
        m->ops += (uint64_t)n;
        return (double)ns * 1e-9;
    }
    work_read(m, &w0);
    int64_t t0 = tb_monotonic_ns();
    for (int64_t j = 0; j < n; j++) {
        int rc = timeout_op(m, k0 + (uint64_t)j, m->coin[j], dt);
        if (rc)
            return bad(st, "timeouts", rc);
    }
    int64_t t1 = tb_monotonic_ns();
    work_read(m, &w1);
    timed_ok(m, st, &w0, &w1, (uint64_t)n);
    m->ops += (uint64_t)n;
    return bh_seconds(t0, t1);
}

static double periodic_batch(void *inst, tbb_state *st, int64_t n)
{
    struct micro *m = inst;
    const int64_t budget = (int64_t)(bh.profile->batch_budget * 1e9);
    uint64_t r0 = m->runs, steps = 0;
    struct work w0, w1;
    work_read(m, &w0);
    int64_t t0 = tb_monotonic_ns();
    while (m->runs - r0 < (uint64_t)n) {
        m->clock += TB_MS;
        long rc = tb_advance(m->s, m->clock);
        if (rc < 0)
            return bad(st, "tb_advance", rc);
        /* over budget: the runs so far stand for the batch (scaled below) */
        if (check_now(++steps) && tb_monotonic_ns() - t0 > budget &&
            m->runs > r0)
            break;
    }
    int64_t t1 = tb_monotonic_ns();
    work_read(m, &w1);
    uint64_t runs = m->runs - r0;
    timed_ok(m, st, &w0, &w1, runs);
    m->steps += steps;
    m->period_runs += runs;
    m->ops += (uint64_t)n;
    /* a step runs every task it reaches, so a batch may overshoot n runs:
     * scale the time so the result is the cost per run */
    return bh_seconds(t0, t1) * (double)n / (double)runs;
}

/* ---- Counters ---------------------------------------------------------- */

/* The structure's work per operation, counted inside the timed parts only
 * (D2 of the lead's decisions), and the evidence that nothing else ran
 * there: page faults and growth of the memory held. */
static void work_report(struct micro *m, tbb_state *st)
{
    const struct work *w = &m->work;
    double ops = m->work_ops ? (double)m->work_ops : 1.0;
    tbb_counter(st, "sift_levels_per_op", (double)w->sift_levels / ops,
                TBB_C_PLAIN);
    tbb_counter(st, "visits_per_op", (double)w->visits / ops, TBB_C_PLAIN);
    tbb_counter(st, "rounds_per_op", (double)w->rounds / ops, TBB_C_PLAIN);
    tbb_counter(st, "cascades_per_op", (double)w->cascades / ops,
                TBB_C_PLAIN);
    tbb_counter(st, "bucket_offers_per_op", (double)w->bucket_offers / ops,
                TBB_C_PLAIN);
    tbb_counter(st, "ticks_per_op", (double)w->ticks / ops, TBB_C_PLAIN);
    tbb_counter(st, "transfers_per_op", (double)w->transfers / ops,
                TBB_C_PLAIN);
    tbb_counter(st, "page_faults_per_kop", 1000.0 * (double)w->faults / ops,
                TBB_C_PLAIN);
    tbb_counter(st, "ctx_switches_per_kop",
                1000.0 * (double)w->switches / ops, TBB_C_PLAIN);
    if (m->d->op != OP_FILL && m->d->op != OP_EXPIRE)
        tbb_counter(st, "redone_batches", (double)m->redone, TBB_C_PLAIN);
    m->redone = 0;
    tbb_counter(st, "timed_growth_bytes", (double)m->timed_growth,
                TBB_C_PLAIN);
    tbb_counter(st, "grown_bytes_per_op", (double)w->bytes / ops,
                TBB_C_PLAIN);
    memset(&m->work, 0, sizeof m->work);
    m->work_ops = 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* series=precision: the lateness of the fires since the last report (the
 * p99 over the most recent LATE_KEEP of them), and the clock step. */
static void precision_report(struct micro *m, tbb_state *st)
{
    size_t k = m->nlate < LATE_KEEP ? (size_t)m->nlate : LATE_KEEP;
    double p99 = 0;
    if (k) {
        qsort(m->late, k, sizeof *m->late, cmp_i64);
        size_t at = (size_t)(0.99 * (double)(k - 1) + 0.5);
        p99 = (double)m->late[at];
    }
    tbb_counter(st, "lateness_max_ns", (double)m->late_max, TBB_C_PLAIN);
    tbb_counter(st, "lateness_p99_ns", p99, TBB_C_PLAIN);
    tbb_counter(st, "lateness_max_share", m->late_share_max, TBB_C_PLAIN);
    tbb_counter(st, "lateness_fires", (double)m->nlate, TBB_C_PLAIN);
    tbb_counter(st, "step_ns", (double)timeout_dt(m), TBB_C_PLAIN);
    tbb_counter(st, "tick_ns", (double)m->tick, TBB_C_PLAIN);
    m->nlate = 0;
    m->late_max = 0;
    m->late_share_max = 0;
}

static void micro_report(void *inst, tbb_state *st)
{
    struct micro *m = inst;
    const struct micro_def *d = m->d;
    double n = (double)m->n;
    double ops = m->ops ? (double)m->ops : 1.0;
    if (d->op == OP_FILL) {
        tbb_counter(st, "bytes_per_task", m->bytes_per_task, TBB_C_PLAIN);
        tbb_counter(st, "malloc_bytes_per_task", m->malloc_per_task,
                    TBB_C_PLAIN);
    } else {
        struct tb_stats s;
        tb_stats(m->s, &s);
        tbb_counter(st, "pending_per_n", (double)s.pending / n, TBB_C_PLAIN);
        if (d->op == OP_TIMEOUTS) {
            double live = (double)(s.pending - s.zombies);
            tbb_counter(st, "zombies_per_n", (double)s.zombies / n,
                        TBB_C_PLAIN);
            tbb_counter(st, "bytes_per_pending",
                        s.pending ? (double)s.bytes_held / (double)s.pending
                                  : 0.0, TBB_C_PLAIN);
            tbb_counter(st, "bytes_per_live",
                        live > 0 ? (double)s.bytes_held / live : 0.0,
                        TBB_C_PLAIN);
            tbb_counter(st, "cancelled_per_op", (double)m->cancels / ops,
                        TBB_C_PLAIN);
            tbb_counter(st, "fired_per_op",
                        (double)(m->runs - m->fired_ops) / ops, TBB_C_PLAIN);
            m->cancels = 0;
            m->fired_ops = m->runs;
        }
        if (d->precision)
            precision_report(m, st);
        if (d->op == OP_INSERT || d->op == OP_CANCEL ||
            d->op == OP_RESCHEDULE)
            tbb_counter(st, "flushes_per_kop", 1000.0 * (double)m->flushes /
                        ops, TBB_C_PLAIN);
        if (d->op == OP_RESCHEDULE) {
            /* per request of the kept timed parts, as the work counters */
            double kept = m->work_ops ? (double)m->work_ops : 1.0;
            tbb_counter(st, "timeouts_per_kop",
                        1000.0 * (double)m->rep_timeouts / kept, TBB_C_PLAIN);
            tbb_counter(st, "rearms_per_kop",
                        1000.0 * (double)m->rep_rearms / kept, TBB_C_PLAIN);
            tbb_counter(st, "zombies_per_n", (double)s.zombies / n,
                        TBB_C_PLAIN);
            m->rep_timeouts = m->rep_rearms = 0;
        }
        if (d->op == OP_EXPIRE || d->op == OP_PERIODIC)
            tbb_counter(st, "steps_per_kop", 1000.0 * (double)m->steps / ops,
                        TBB_C_PLAIN);
        if (d->op == OP_EXPIRE) {
            tbb_counter(st, "completed", (double)m->completed / ops,
                        TBB_C_PLAIN);
            tbb_counter(st, "time_cuts", (double)m->time_cuts, TBB_C_PLAIN);
        }
        if (d->op == OP_PERIODIC)
            tbb_counter(st, "runs_per_step",
                        m->steps ? (double)m->period_runs / (double)m->steps
                                 : 0.0, TBB_C_PLAIN);
    }
    work_report(m, st);
    if (d->inbox && (d->op == OP_INSERT || d->op == OP_FILL)) {
        tbb_counter(st, "transferred", (double)m->transfers / ops,
                    TBB_C_PLAIN);
        tbb_counter(st, "settle_ticks_per_kop",
                    1000.0 * (double)m->settle_ticks / ops, TBB_C_PLAIN);
    }
    m->ops = m->flushes = m->transfers = m->steps = m->period_runs = 0;
    m->completed = m->settle_ticks = m->time_cuts = 0;
}

static const struct tbb_ops batch_ops[] = {
    [OP_FILL] = {micro_setup, fill_batch, micro_report, micro_teardown},
    [OP_INSERT] = {micro_setup, insert_batch, micro_report, micro_teardown},
    [OP_CANCEL] = {micro_setup, cancel_batch, micro_report, micro_teardown},
    [OP_EXPIRE] = {micro_setup, expire_batch, micro_report, micro_teardown},
    [OP_TIMEOUTS] = {micro_setup, timeouts_batch, micro_report,
                     micro_teardown},
    [OP_PERIODIC] = {micro_setup, periodic_batch, micro_report,
                     micro_teardown},
    [OP_RESCHEDULE] = {micro_setup, reschedule_batch, micro_report,
                       micro_teardown},
};

/* ---- Registration ------------------------------------------------------ */

static void add_family(enum op op, const struct tb_backend *b,
                       enum bh_workload w, const struct bh_config *c)
{
    struct micro_def *d = bh_keep(xcalloc(1, sizeof *d));
    d->precision = op == OP_TIMEOUTS && strncmp(c->label, "series=precision",
                                                16) == 0;
    d->caller = op == OP_TIMEOUTS && strncmp(c->label, "series=caller", 13) == 0;
    if (op == OP_RESCHEDULE)
        for (enum strategy k = ST_RESTART; k < ST_COUNT; k++) {
            char kv[32];
            snprintf(kv, sizeof kv, "strategy=%s", strategy_names[k]);
            if (strstr(c->label, kv))
                d->strategy = k;
        }
    d->op = op;
    d->b = b;
    d->w = w;
    d->c = *c;
    d->inbox = bh_inbox_of(b, &c->cfg);
    d->rounds = bh_walks_rounds(b);
    char label[BH_LABEL_MAX + 32];
    snprintf(label, sizeof label, "%s", c->label);
    if (op == OP_EXPIRE) {
        char step[32];
        bh_fmt_ns(step, sizeof step, bh_workloads[w].expire_step);
        size_t len = strlen(label);
        snprintf(label + len, sizeof label - len, ",step=%s", step);
    }
    bh_name(d->name, sizeof d->name, op_names[op], b->name,
            bh_workloads[w].name, label);
    /* One family per N, each with its own minimum time: a repetition
     * runs batches until min_time of timed work, and a batch's untimed
     * part (restoring the state, the rusage and stats reads around it)
     * costs microseconds whatever its size.  At N = 100 a batch is 12
     * inserts, so a flat min_time meant 10^5 batches and 20x more untimed
     * than timed time.  Scaled by the batch's share of 1024 operations,
     * every N gets about the same number of batches.  Google Benchmark
     * then fits no complexity across N (one N per family); the report
     * fits the medians itself (tbkit/results.py, fit_complexity). */
    static const char *const arg_names[] = {"N"};
    for (size_t i = 0; i < bh.profile->nn; i++) {
        int64_t n = d->precision ? bh.profile->precision_n : bh.profile->n[i];
        if (d->precision && i > 0)
            break; /* one N: the sweep is over the tick */
        tbb_bench *f = tbb_register(d->name, &batch_ops[op], d,
                                    TBB_MANUAL_TIME | TBB_REUSE);
        tbb_arg_names(f, 1, arg_names);
        tbb_args(f, 1, &n);
        if (d->precision && bh.profile->precision_reps)
            tbb_repetitions(f, bh.profile->precision_reps);
        if (!bh.user_min_time) {
            double share = (double)ops_per_batch(op, n) / 1024.0;
            tbb_min_time(f, bh.profile->min_time * (share < 1 ? share : 1));
        }
    }
}

static void add_op(enum op op, const struct tb_backend *b, enum bh_workload w)
{
    struct tb_config base = {0};
    struct bh_config cs[BH_MAX_CONFIGS];
    const bool h2h_only = w == BH_WORST; /* a heap's case, not a wheel's */
    size_t nc = bh_configs(b, w, &base, bh.profile->orig_micro && !h2h_only,
                           bh.profile->cover && !h2h_only, cs);
    bool roc = op == OP_CANCEL && bh_honours_remove_on_cancel(b);
    /* A heap's worst removal needs a cancel that removes: a lazy cancel
     * only marks the task, and its zombies, always the heap's earliest
     * here, pile up until the hold limit fails the run, after a number of
     * batches that depends on the machine's speed (a STPE without
     * remove-on-cancel drops them only when due, and the clock stands).
     * A wheel's lazy cancel (Netty's, unlinked at the next tick) is kept. */
    bool lazy_worst = op == OP_CANCEL && w == BH_WORST &&
                      (b->caps & TB_CAP_LAZY_CANCEL) &&
                      !(b->caps & TB_CAP_TICKED);
    if (lazy_worst && !roc)
        return;
    for (size_t i = 0; i < nc; i++) {
        /* a fill builds a fresh scheduler per batch: with 2^20 buckets that
         * is the whole run, and a covering wheel's memory already shows in
         * the timeouts results */
        if (op == OP_FILL && cs[i].series == BH_COVER)
            continue;
        if (!roc) {
            add_family(op, b, w, &cs[i]);
            continue;
        }
        struct bh_config off = cs[i], on = cs[i];
        bh_label_add(&off, "roc", "off");
        bh_label_add(&on, "roc", "on");
        on.cfg.flags |= TB_F_REMOVE_ON_CANCEL;
        if (!lazy_worst)
            add_family(op, b, w, &off);
        add_family(op, b, w, &on);
    }
}

/* series=precision of the timeouts op (the file comment): each ticked
 * backend at ticks 1us..100ms, each exact backend once. */
static void add_precision(enum op op, const struct tb_backend *b,
                          enum bh_workload w)
{
    struct bh_config c;
    memset(&c, 0, sizeof c);
    c.series = BH_H2H;
    if (!(b->caps & TB_CAP_TICKED)) {
        bh_label_add(&c, "series", "precision");
        add_family(op, b, w, &c);
        return;
    }
    for (int64_t tick = TB_US; tick <= 100 * TB_MS; tick *= 10) {
        char v[32];
        c.label[0] = '\0';
        c.cfg.tick_ns = tick;
        c.cfg.wheel_size = 0;
        bh_label_add(&c, "series", "precision");
        bh_fmt_ns(v, sizeof v, tick);
        bh_label_add(&c, "tick", v);
        struct tb_sched *s;
        struct tb_config probe = c.cfg;
        probe.clock = TB_CLOCK_VIRTUAL;
        if (tb_create(b, &probe, &s) != TB_OK)
            continue; /* a tick the backend refuses */
        struct tb_config r;
        tb_sched_config(s, &r);
        tb_destroy(s);
        if (r.tick_ns != tick)
            continue; /* a tick it rounds to another (Netty's 1 ms floor) */
        add_family(op, b, w, &c);
    }
}

/* series=caller of the timeouts op (the file comment): the h2h
 * configuration, relabelled. */
static void add_caller(enum op op, const struct tb_backend *b,
                       enum bh_workload w)
{
    struct tb_config base = {0};
    struct bh_config cs[BH_MAX_CONFIGS];
    if (bh_configs(b, w, &base, false, false, cs) == 0)
        return;
    struct bh_config c = cs[0]; /* series=h2h[,tick=..,wheel=..] */
    const char *rest = strchr(cs[0].label, ',');
    c.label[0] = '\0';
    bh_label_add(&c, "series", "caller");
    if (rest) /* ",tick=1ms,wheel=512": the h2h label's keys after its series */
        strncat(c.label, rest, sizeof c.label - strlen(c.label) - 1);
    add_family(op, b, w, &c);
}

bool bh_reschedules_in_place(const struct tb_backend *b)
{
    struct tb_config cfg = {0};
    struct tb_sched *s;
    if (tb_create(b, &cfg, &s) != TB_OK)
        return false;
    uint64_t runs = 0;
    tb_handle h;
    int rc = tb_schedule(s, TB_SEC, count_run, &runs, &h);
    bool in_place = rc == TB_OK && tb_reschedule(s, h, 2 * TB_SEC) == 1;
    tb_destroy(s);
    return in_place;
}

/* The reschedule op (the file comment): series h2h only, one family per
 * strategy, `again` only where tb_reschedule moves a task in place. */
static void add_reschedule(enum op op, const struct tb_backend *b,
                           enum bh_workload w)
{
    struct tb_config base = {0};
    struct bh_config cs[BH_MAX_CONFIGS];
    if (bh_configs(b, w, &base, false, false, cs) == 0)
        return;
    const bool in_place = bh_reschedules_in_place(b);
    for (enum strategy k = ST_RESTART; k < ST_COUNT; k++) {
        if (k == ST_AGAIN && !in_place)
            continue;
        struct bh_config c = cs[0];
        bh_label_add(&c, "strategy", strategy_names[k]);
        add_family(op, b, w, &c);
    }
}

/* What a row of micro_plan needs of the profile (struct bh_profile): a
 * row is registered when every bit it names is set. */
enum {
    NEED_WIDE = 1u << 0,      /* p->wide: the wide workload at all */
    NEED_WIDE_ALL = 1u << 1,  /* p->wide_all: wide in fill and cancel too */
    NEED_BURST = 1u << 2,     /* p->burst_micro: the burst workload */
    NEED_PRECISION = 1u << 3, /* p->precision_n != 0: the precision sweep */
};

static unsigned profile_has(const struct bh_profile *p)
{
    return (p->wide ? NEED_WIDE : 0u) | (p->wide_all ? NEED_WIDE_ALL : 0u) |
           (p->burst_micro ? NEED_BURST : 0u) |
           (p->precision_n ? NEED_PRECISION : 0u);
}

/* The micro harness's plan: which operation runs on which workload in
 * which profile, and how its families are made (add_op: every
 * configuration bh_configs gives the backend; the others a series of
 * their own, above).  bh_register_micro walks it in this order for each
 * backend, then the floor's rows once; the order is the order of the
 * registered benchmarks. */
static const struct micro_plan {
    enum op op;
    enum bh_workload w;
    void (*add)(enum op, const struct tb_backend *, enum bh_workload);
    unsigned when;  /* NEED_* bits the profile must have; 0: every profile */
    bool floor;     /* for tb_backend_floor alone, not for each backend */
} micro_plan[] = {
    /* The placed workloads: uniform and short in every profile. */
    {OP_FILL, BH_UNIFORM, add_op, 0, false},
    {OP_FILL, BH_SHORT, add_op, 0, false},
    /* wide in fill only with wide_all: the verdicts read wide insert and
     * expire */
    {OP_FILL, BH_WIDE, add_op, NEED_WIDE | NEED_WIDE_ALL, false},
    {OP_FILL, BH_BURST, add_op, NEED_BURST, false},
    {OP_INSERT, BH_UNIFORM, add_op, 0, false},
    {OP_INSERT, BH_SHORT, add_op, 0, false},
    /* the verdicts read wide insert and expire: wherever wide is */
    {OP_INSERT, BH_WIDE, add_op, NEED_WIDE, false},
    {OP_INSERT, BH_BURST, add_op, NEED_BURST, false},
    {OP_CANCEL, BH_UNIFORM, add_op, 0, false},
    {OP_CANCEL, BH_SHORT, add_op, 0, false},
    /* wide in cancel only with wide_all, as fill */
    {OP_CANCEL, BH_WIDE, add_op, NEED_WIDE | NEED_WIDE_ALL, false},
    /* no cancel on burst: cancel order is random, burst adds nothing */
    {OP_EXPIRE, BH_UNIFORM, add_op, 0, false},
    {OP_EXPIRE, BH_SHORT, add_op, 0, false},
    {OP_EXPIRE, BH_WIDE, add_op, NEED_WIDE, false},
    {OP_EXPIRE, BH_BURST, add_op, NEED_BURST, false},
    /* The heaps' worst case (issue 29): insert and cancel, series h2h, in
     * every profile at its N, so that the growth claim can judge the bound
     * it states apart from the average (uniform). */
    {OP_INSERT, BH_WORST, add_op, 0, false},
    {OP_CANCEL, BH_WORST, add_op, 0, false},
    /* The server's timeouts in every profile; series=caller (issue 37) the
     * JVM originals' like for like; series=precision (issue 27) the
     * cost-precision front, at precision_n where the profile has one. */
    {OP_TIMEOUTS, BH_TIMEOUTS, add_op, 0, false},
    {OP_TIMEOUTS, BH_TIMEOUTS, add_caller, 0, false},
    {OP_TIMEOUTS, BH_TIMEOUTS, add_precision, NEED_PRECISION, false},
    {OP_PERIODIC, BH_PERIODIC, add_op, 0, false},
    /* The idle timeout (issue 40): one family per strategy, h2h only. */
    {OP_RESCHEDULE, BH_IDLE, add_reschedule, 0, false},
    /* The interface's floor (issue 39, tb_backend_floor: not in the
     * registry, so not in bh.backends): insert and cancel at every N of
     * the profile, through the same families, batches and tb_schedule /
     * tb_cancel calls as every backend's, so that each small-N figure has
     * beside it what the interface alone costs.  Registered whenever a
     * backend is; its name's backend is "floor", which the report keeps
     * apart from the timers (tbkit/results.py, Results.floor). */
    {OP_INSERT, BH_UNIFORM, add_op, 0, true},
    {OP_CANCEL, BH_UNIFORM, add_op, 0, true},
};

/* The rows of micro_plan for b (floor: the floor's rows) that the
 * profile has, in the table's order. */
static void add_plan(const struct tb_backend *b, bool floor, unsigned has)
{
    for (size_t r = 0; r < sizeof micro_plan / sizeof micro_plan[0]; r++) {
        const struct micro_plan *row = &micro_plan[r];
        if (row->floor == floor && (row->when & ~has) == 0)
            row->add(row->op, b, row->w);
    }
}

void bh_register_micro(void)
{
    const unsigned has = profile_has(bh.profile);
    for (size_t i = 0; i < bh.nbackends; i++)
        add_plan(bh.backends[i], false, has);
    if (bh.nbackends > 0)
        add_plan(&tb_backend_floor, true, has);
}
