/*
 * fuzz_model.c — the differential fuzz engine: bytes become scheduler
 * operations, each one runs against a backend in virtual mode and against a
 * reference model, and the first disagreement aborts with a report.
 *
 * Why a model that follows the run order rather than predicting it.  Heaps
 * without FIFO ties and wheels may run tasks of one deadline (one tick) in
 * any order, and a callback that cancels another task gets an answer that
 * depends on that order.  So the model checks each run as it happens — the
 * task is live, due (never early), in a legal position (deadline order; tick
 * order for wheels; submission order on equal deadlines where the backend
 * has TB_CAP_FIFO_TIES) — then applies it.  After the advance returns,
 * nothing the model holds may still be due: the ran set equals the due set.
 *
 * The model is a plain list of tasks with their next deadline; a task is due
 * at time T when its deadline is <= T, or, on a ticked backend, when the
 * deadline rounded up to the tick is <= T (ticks are multiples of tick_ns
 * from time 0).  Periodic re-arms follow the contract: fixed rate from the
 * previous deadline, fixed delay from the clock after the run, which in
 * virtual mode without tb_spend() is the advance's target for every backend.
 * A re-arm that would reach the end of the clock (INT64_MAX, where the
 * core's tb_next_deadline saturates) retires the task as finished: otherwise
 * tb_advance(INT64_MAX) would run it forever.  A re-arm may also be refused
 * at max_pending (DECISIONS.md D1) when the backend took the task off its
 * structure for the run: it then retires as finished and counts in
 * rejected.  Whether the backend did is its layout, not the contract, so the
 * model notes that the re-arm may be refused and, after the advance (or
 * before a cancel of that task), asks the pool whether the handle is held.
 *
 * After every operation, at a quiet point: the counters (submitted,
 * rejected, fired, failed, lost, and cancelled, dropped, finished until a
 * tb_shutdown) equal the model's, the accounting identity holds
 * (tb_stats_balanced), pending - zombies + running equals the model's live
 * tasks, zombies only with TB_CAP_LAZY_CANCEL, bytes_held equals what a
 * counting allocator hands out, the clock is the model's, and tb_check()
 * passes; after tb_destroy() no byte is held.  Cancel answers must match,
 * with one documented leeway (handed_off: a due one-shot given to an
 * executor, as Kafka's SystemTimer does, cannot be recalled).
 *
 * Input layout.  Byte 0: bit 0 TB_F_REMOVE_ON_CANCEL, bit 1
 * TB_F_DROP_DELAYED_ON_SHUTDOWN, bit 2 TB_F_KEEP_PERIODIC_ON_SHUTDOWN, bit 3
 * max_pending on (byte 2 says how many), bits 4-6 the tick.  Byte 1 the wheel
 * size.  Then one opcode byte per operation, followed by its operands; an
 * input that runs out reads zeros, so every byte string is a valid program.
 *
 * Bounded work.  A fixed-rate task with a 1 ns period and a 2^62 ns advance
 * would ask for 2^62 catch-up runs, and a hashed wheel visits each far
 * timeout once per revolution; before each advance the model bounds the
 * runs and the wheel visits it implies and lowers the target until both
 * fit, so "huge step" stays huge except over such tasks.
 *
 * Left out on purpose: tb_spend() (how a wheel treats tasks that fall due
 * while a run spends time is not part of the contract), and tb_shutdown()
 * is checked loosely (the backends' shutdown policies differ and no
 * capability flag describes them): after it, a live task may still run on
 * time or be gone, but never early, twice, or after a cancel said it was
 * not pending.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_model.h"
#include "tb_core.h" /* tb_pool_lookup: was a refusable re-arm refused? */

enum {
    MAX_TASKS = 1024,  /* model records per input */
    MAX_OPS = 600,     /* operations decoded per input */
    RUN_BUDGET = 4096, /* runs one advance may cause (catch-up bound) */
};

/* Timeout visits one advance, and one whole input, may cost a ticked
 * backend (see wheel_visits). */
#define VISIT_BUDGET ((uint64_t)1 << 15)
#define VISIT_BUDGET_TOTAL ((uint64_t)1 << 18)

enum tstate {
    T_LIVE,      /* held by the scheduler, will run when due */
    T_FINISHED,  /* retired after running */
    T_CANCELLED, /* a cancel answered 1 */
    T_DROPPED,   /* returned by shutdown_now or killed with the timer */
    T_GONE,      /* after tb_shutdown(): the backend let it go unrun */
};

static const char *const state_name[] = {"live", "finished", "cancelled",
                                         "dropped", "gone"};

enum act {
    ACT_NONE,
    ACT_FAIL,        /* return non-zero */
    ACT_CANCEL_SELF, /* tb_cancel on its own handle */
    ACT_CANCEL_TASK, /* tb_cancel on another model task's handle */
    ACT_SPAWN,       /* schedule a one-shot child (no action of its own) */
    ACT_ADVANCE,     /* tb_advance from inside a run: TB_ESTATE */
};

struct fctx;

struct ftask {
    struct fctx *c;
    int id;
    uint64_t seq;    /* submission order among accepted tasks */
    tb_handle h;
    int64_t period;  /* as tb_task.period: > 0 rate, < 0 delay, 0 once */
    int64_t next;    /* deadline of the next run */
    int64_t ref;     /* TB_CAP_GRANULAR: the clock the wheel's own clock is
                        at least at when `next` was set */
    enum tstate st;
    bool uncertain;  /* alive at tb_shutdown(): may run or be gone */
    bool visited;    /* seen by the shutdown_now visitor */
    bool committed;  /* handed to an executor: will run, cannot be recalled */
    bool refusable;  /* its last re-arm may have been refused (D1) */
    int runs;
    enum act act;
    int act_at;      /* run number the action fires on; 0: every run */
    int target;      /* ACT_CANCEL_TASK: model index (mod count) */
    int64_t child_delay;
};

struct rd {
    const uint8_t *p;
    size_t n, i;
};

/* A counting allocator: checks stats.bytes_held against what really is
 * held, and can refuse allocations to test ENOMEM paths. */
struct falloc {
    struct tb_allocator hook;
    int64_t live;
    long budget; /* allocations left before failing; < 0 never fails */
};

struct fctx {
    const struct tb_backend *b;
    unsigned caps;
    struct tb_sched *s;
    struct tb_config cfg; /* resolved */
    int64_t tick;         /* ticked backends; 1 otherwise */
    struct falloc fa;
    struct rd r;
    struct ftask *tasks;
    int ntasks;
    uint64_t seq;
    int64_t now;
    int64_t prev;         /* the clock before the advance in progress */
    int op;
    const char *opname;
    /* the advance in progress */
    bool in_adv;
    int64_t T;
    long adv_runs;
    bool have_last;
    int64_t last_key;
    uint64_t last_seq;
    struct ftask *in_cb;
    int committed;        /* tasks with .committed set */
    uint64_t visits_left; /* of VISIT_BUDGET_TOTAL */
    /* what the counters must say */
    uint64_t submitted, rejected, fired, failed, finished, cancelled,
        dropped, lost;
    bool shut;    /* shutdown, shutdown_now or killed: schedules refused */
    bool stopped; /* shutdown_now or killed: nothing runs any more */
    bool killed;
    bool relaxed; /* after tb_shutdown(): see the head comment */
};

static const char *label;
static int trace;

void tbf_set_label(const char *l) { label = l; }
void tbf_set_trace(int on) { trace = on; }

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3), noreturn))
#endif
static void diverge(const struct fctx *c, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "tbfuzz: DIVERGENCE in backend '%s'%s%s, op #%d (%s): ",
            c->b->name, label ? " on " : "", label ? label : "", c->op,
            c->opname ? c->opname : "setup");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fprintf(stderr, "\n  model: now=%" PRId64 " tasks=%d submitted=%" PRIu64
            " fired=%" PRIu64 " cancelled=%" PRIu64 " shut=%d stopped=%d "
            "killed=%d relaxed=%d tick=%" PRId64 "\n",
            c->now, c->ntasks, c->submitted, c->fired, c->cancelled, c->shut,
            c->stopped, c->killed, c->relaxed, c->tick);
    fflush(stderr);
    abort();
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void note(const struct fctx *c, const char *fmt, ...)
{
    if (!trace)
        return;
    va_list ap;
    fprintf(stderr, "[%s #%d] ", c->b->name, c->op);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

/* ---- Input ------------------------------------------------------------- */

static uint8_t rd_u8(struct rd *r) { return r->i < r->n ? r->p[r->i++] : 0; }

static uint64_t rd_bytes(struct rd *r, int k)
{
    uint64_t v = 0;
    for (int i = 0; i < k; i++)
        v |= (uint64_t)rd_u8(r) << (8 * i);
    return v;
}

static bool rd_done(const struct rd *r) { return r->i >= r->n; }

/* ---- Time arithmetic without overflow ---------------------------------- */

static int64_t sat_add(int64_t a, int64_t b)
{
    return b > 0 && a > INT64_MAX - b ? INT64_MAX : a + b;
}

/* d rounded up to a multiple of `unit`; INT64_MAX when that is past the
 * clock (such a deadline can never be reached). */
static int64_t ceil_to(int64_t d, int64_t unit)
{
    int64_t r = d % unit;
    if (r == 0)
        return d;
    return d > INT64_MAX - (unit - r) ? INT64_MAX : d + (unit - r);
}

static bool ticked(const struct fctx *c) { return c->caps & TB_CAP_TICKED; }

static bool granular(const struct fctx *c)
{
    return ticked(c) && (c->caps & TB_CAP_GRANULAR);
}

/* The latest deadline that must have run once the clock reads T: at the
 * end of the clock every deadline, since none lies later and a wheel runs
 * the partial tick the end falls in (issue 42). */
static int64_t effective(const struct fctx *c, int64_t T)
{
    return ticked(c) && T != INT64_MAX ? T / c->tick * c->tick : T;
}

/* Where a task armed now counts its distance from: the clock, or inside an
 * advance the previous target, which a wheel catching up may lag at. */
static int64_t arm_ref(const struct fctx *c)
{
    return c->in_adv ? c->prev : c->now;
}

/* Whether task t must have run once the clock reads T.  On a granular
 * wheel its level (distance E - clk >= 63 * 8^(n-1) ticks) may add up to
 * 8^n ticks, under 8 * (next - ref + tick) / 63, past its tick. */
static bool must_have_run(const struct fctx *c, const struct ftask *t,
                          int64_t T)
{
    if (!granular(c))
        return t->next <= effective(c, T);
    int64_t slack = 2 * c->tick + (t->next - t->ref) / 63 * 8 +
                    c->tick / 63 * 8 + 16;
    int64_t latest = t->next > INT64_MAX - slack
                         ? INT64_MAX
                         : ceil_to(t->next + slack, c->tick);
    return latest <= T;
}

/* The time unit deadlines snap to: the tick, or 1 ms for unticked heaps so
 * that "on a boundary" still means something to them. */
static int64_t unit(const struct fctx *c)
{
    return ticked(c) ? c->tick : TB_MS;
}

/* ---- The allocator ----------------------------------------------------- */

static void *fa_alloc(void *ctx, size_t size)
{
    struct falloc *f = ctx;
    if (f->budget == 0)
        return NULL;
    if (f->budget > 0)
        f->budget--;
    void *p = malloc(size);
    if (p)
        f->live += (int64_t)size;
    return p;
}

static void fa_free(void *ctx, void *p, size_t size)
{
    struct falloc *f = ctx;
    f->live -= (int64_t)size;
    free(p);
}

/* ---- Model bookkeeping ------------------------------------------------- */

static struct ftask *find(struct fctx *c, tb_handle h)
{
    if (h == TB_HANDLE_NONE)
        return NULL;
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].h == h)
            return &c->tasks[i];
    return NULL;
}

static int live_count(const struct fctx *c)
{
    int n = 0;
    for (int i = 0; i < c->ntasks; i++)
        n += c->tasks[i].st == T_LIVE;
    return n;
}

static void set_state(struct fctx *c, struct ftask *t, enum tstate st)
{
    if (t->committed) {
        t->committed = false;
        c->committed--;
    }
    t->st = st;
    if (st == T_FINISHED)
        c->finished++;
    else if (st == T_CANCELLED)
        c->cancelled++;
    else if (st == T_DROPPED)
        c->dropped++;
}

/* A failing task on a TB_CAP_FAIL_KILLS backend: every other live task is
 * dropped and the timer refuses new work. */
static void kill_timer(struct fctx *c, struct ftask *culprit)
{
    c->killed = c->shut = c->stopped = true;
    for (int i = 0; i < c->ntasks; i++)
        if (&c->tasks[i] != culprit && c->tasks[i].st == T_LIVE) {
            set_state(c, &c->tasks[i], T_DROPPED);
            c->lost++;
        }
}

/* ---- Checks at quiet points ------------------------------------------- */

static void check_quiet(struct fctx *c)
{
    struct tb_stats st;
    if (tb_stats(c->s, &st) != TB_OK)
        diverge(c, "tb_stats failed");
    size_t pending = tb_pending(c->s);
    if (st.pending != pending)
        diverge(c, "stats.pending %" PRIu64 " != tb_pending %zu", st.pending,
                pending);
    if (!tb_stats_balanced(&st))
        diverge(c, "accounting broken: submitted %" PRIu64 " != finished %"
                PRIu64 " + cancelled %" PRIu64 " + dropped %" PRIu64
                " + (pending %" PRIu64 " - zombies %" PRIu64 ") + running %"
                PRIu64, st.submitted, st.finished, st.cancelled, st.dropped,
                st.pending, st.zombies, st.running);
    /* only a task already due can be handed to an executor between
     * advances (see do_cancel) */
    uint64_t due_now = 0;
    for (int i = 0; i < c->ntasks; i++)
        due_now += c->tasks[i].st == T_LIVE &&
                   c->tasks[i].next <= effective(c, c->now);
    if (st.running > due_now)
        diverge(c, "%" PRIu64 " tasks running at a quiet point, %" PRIu64
                " due", st.running, due_now);
    if (st.submitted != c->submitted)
        diverge(c, "submitted %" PRIu64 ", model %" PRIu64, st.submitted,
                c->submitted);
    if (st.rejected != c->rejected)
        diverge(c, "rejected %" PRIu64 ", model %" PRIu64, st.rejected,
                c->rejected);
    if (st.fired != c->fired)
        diverge(c, "fired %" PRIu64 ", model %" PRIu64, st.fired, c->fired);
    if (st.failed != c->failed)
        diverge(c, "failed %" PRIu64 ", model %" PRIu64, st.failed,
                c->failed);
    if (st.lost != c->lost)
        diverge(c, "lost %" PRIu64 ", model %" PRIu64, st.lost, c->lost);
    uint64_t live = (uint64_t)live_count(c);
    if (st.zombies && !(c->caps & TB_CAP_LAZY_CANCEL))
        diverge(c, "%" PRIu64 " zombies without TB_CAP_LAZY_CANCEL",
                st.zombies);
    if (!c->relaxed) {
        if (st.cancelled != c->cancelled)
            diverge(c, "cancelled %" PRIu64 ", model %" PRIu64, st.cancelled,
                    c->cancelled);
        if (st.dropped != c->dropped)
            diverge(c, "dropped %" PRIu64 ", model %" PRIu64, st.dropped,
                    c->dropped);
        if (st.finished != c->finished)
            diverge(c, "finished %" PRIu64 ", model %" PRIu64, st.finished,
                    c->finished);
        if (st.pending - st.zombies + st.running != live)
            diverge(c, "pending %" PRIu64 " - zombies %" PRIu64
                    " + running %" PRIu64 " != %" PRIu64
                    " live tasks in the model", st.pending, st.zombies,
                    st.running, live);
    } else {
        if (st.cancelled < c->cancelled || st.dropped < c->dropped)
            diverge(c, "cancelled %" PRIu64 " / dropped %" PRIu64
                    " below the model's %" PRIu64 " / %" PRIu64,
                    st.cancelled, st.dropped, c->cancelled, c->dropped);
        if (st.pending - st.zombies + st.running > live)
            diverge(c, "pending %" PRIu64 " - zombies %" PRIu64
                    " + running %" PRIu64 " exceeds %" PRIu64
                    " tasks that may be live", st.pending, st.zombies,
                    st.running, live);
    }
    if (c->stopped && (st.pending != 0 || st.running != 0))
        diverge(c, "%" PRIu64 " pending, %" PRIu64 " running after "
                "shutdown_now / kill", st.pending, st.running);
    if (st.peak_pending < st.pending)
        diverge(c, "peak_pending %" PRIu64 " < pending %" PRIu64,
                st.peak_pending, st.pending);
    if ((int64_t)st.bytes_held != c->fa.live)
        diverge(c, "bytes_held %" PRIu64 " but the allocator holds %" PRId64,
                st.bytes_held, c->fa.live);
    if (tb_now(c->s) != c->now)
        diverge(c, "clock %" PRId64 ", model %" PRId64, tb_now(c->s), c->now);
    int rc = tb_check(c->s);
    if (rc != TB_OK && rc != TB_ENOTSUP)
        diverge(c, "tb_check: %s", tb_strerror(rc));
}

/* ---- Cancel ------------------------------------------------------------ */

/* A backend modelled on a timer with an executor (Kafka's SystemTimer)
 * hands a due task over at once, even between advances; from then on it
 * counts in stats.running and a one-shot cannot be recalled, so a cancel
 * answers 0 though the task has not started.  Accepted only for a due
 * one-shot and only while the backend counts more tasks running than the
 * run in progress and those already accepted: a backend without an
 * executor never gets this leeway.  The task must then run in this or the
 * next advance. */
static bool handed_off(struct fctx *c, const struct ftask *t)
{
    if (t->period || t->committed || t == c->in_cb ||
        t->next > effective(c, c->now))
        return false;
    struct tb_stats st;
    tb_stats(c->s, &st);
    return st.running > (uint64_t)c->committed + (c->in_cb ? 1u : 0u);
}

/* Whether the run in progress is a periodic task's last: its re-arm would
 * reach the end of the clock (see the head comment). */
static bool last_run(const struct fctx *c, const struct ftask *t)
{
    int64_t from = t->period > 0 ? t->next : c->T;
    int64_t step = t->period > 0 ? t->period : -t->period;
    if (t->period > 0 && (c->caps & TB_CAP_SKIP_MISSED) && c->T - from >= step) {
        int64_t k = 1 + (c->T - from) / step;
        if (k > INT64_MAX / step) step = INT64_MAX; else step *= k;
    }
    return from >= INT64_MAX - step;
}

/* DECISIONS.md D1: a periodic task off the structure during its run (in
 * stats.running, beyond the executor hand-offs) re-arms as an insert, which
 * is refused with pending at max_pending.  Called at the end of its run. */
static bool rearm_refusable(struct fctx *c)
{
    if (!c->cfg.max_pending)
        return false;
    struct tb_stats st;
    tb_stats(c->s, &st);
    return st.running > (uint64_t)c->committed &&
           st.pending >= c->cfg.max_pending;
}

/* A refusable re-arm was refused if the backend no longer holds the
 * handle: the task retired as finished, the refusal counted in rejected. */
static void resolve_refused(struct fctx *c, struct ftask *t)
{
    if (!t->refusable)
        return;
    t->refusable = false;
    if (t->st != T_LIVE || tb_pool_lookup(&c->s->pool, t->h))
        return;
    note(c, "  task %d: re-arm refused at max_pending", t->id);
    set_state(c, t, T_FINISHED);
    c->rejected++;
}

static void do_cancel(struct fctx *c, tb_handle h, const char *how)
{
    struct ftask *t = find(c, h);
    if (t)
        resolve_refused(c, t);
    int expect = 0;
    bool either = false;
    if (t && t->st == T_LIVE && !t->committed) {
        /* a running one-shot cannot be prevented; a periodic one can */
        expect = t == c->in_cb ? t->period != 0 : 1;
        either = t->uncertain && t != c->in_cb;
        /* in a periodic task's last run there is nothing left to prevent,
         * which a backend may or may not know yet (fixed delay counts from
         * the end of the run): either answer is right */
        if (t == c->in_cb && t->period && last_run(c, t))
            either = true;
    }
    int rc = tb_cancel(c->s, h);
    note(c, "cancel %s h=%#" PRIx64 " (task %d, %s) -> %d", how, h,
         t ? t->id : -1, t ? state_name[t->st] : "unknown", rc);
    if (rc == 0 && expect == 1 && handed_off(c, t)) {
        t->committed = true;
        c->committed++;
        note(c, "  task %d was handed to the executor", t->id);
        return;
    }
    if (either ? rc != 0 && rc != 1 : rc != expect)
        diverge(c, "tb_cancel(%s handle %#" PRIx64 ", task %d %s%s%s) = %d, "
                "expected %d", how, h, t ? t->id : -1,
                t ? state_name[t->st] : "unknown",
                t == c->in_cb && t ? " running" : "",
                t && t->period ? " periodic" : "", rc, expect);
    if (rc == 1)
        set_state(c, t, T_CANCELLED);
    else if (either && t != c->in_cb)
        set_state(c, t, T_GONE);
}

/* ---- Schedule ---------------------------------------------------------- */

static int ftask_run(void *arg);

/* kind: 0 one-shot, 1 fixed rate, 2 fixed delay.  Returns the new model task
 * or NULL when refused. */
static struct ftask *do_schedule(struct fctx *c, int kind, int64_t delay,
                                 int64_t period, enum act act, int act_at,
                                 int target, int64_t child_delay, long nomem)
{
    if (c->ntasks == MAX_TASKS)
        return NULL;
    int expect_err = TB_OK;
    int64_t d = delay < 0 ? 0 : delay;
    if (kind && period <= 0)
        expect_err = TB_EINVAL;
    else if (kind && period > TB_MAX_DELAY)
        expect_err = TB_ERANGE;
    else if (d > TB_MAX_DELAY || d > INT64_MAX - c->now)
        expect_err = TB_ERANGE;
    struct ftask *t = &c->tasks[c->ntasks];
    *t = (struct ftask){.c = c, .id = c->ntasks, .act = act,
                        .act_at = act_at, .target = target,
                        .child_delay = child_delay};
    size_t pending = tb_pending(c->s);
    bool full = c->cfg.max_pending && pending >= c->cfg.max_pending;
    /* at the cap, a lazy backend that drops zombies as it schedules (Go's
     * cleanHead, before every add) may make room for the new task */
    struct tb_stats zs;
    tb_stats(c->s, &zs);
    bool may_clean = (c->caps & TB_CAP_LAZY_CANCEL) && zs.zombies > 0;
    tb_handle h = (tb_handle)0x5eed;
    c->fa.budget = nomem;
    int rc = kind == 0 ? tb_schedule(c->s, delay, ftask_run, t, &h)
             : kind == 1 ? tb_schedule_fixed_rate(c->s, delay, ftask_run, t, &h,
                                                  period)
                         : tb_schedule_fixed_delay(c->s, delay, ftask_run, t,
                                                   &h, period);
    c->fa.budget = -1;
    static const char *const kinds[] = {"once", "rate", "delay"};
    note(c, "schedule %s delay=%" PRId64 " period=%" PRId64 " act=%d@%d "
         "nomem=%ld -> %d h=%#" PRIx64 " task %d", kinds[kind], delay, period,
         act, act_at, nomem, rc, h, c->ntasks);
    bool ok;
    if (expect_err)
        ok = rc == expect_err;
    else if (c->shut)
        ok = rc == TB_ESHUTDOWN || (full && rc == TB_EFULL);
    else if (full)
        ok = rc == TB_EFULL || (nomem >= 0 && rc == TB_ENOMEM) ||
             (may_clean && rc == TB_OK);
    else
        ok = rc == TB_OK || (nomem >= 0 && rc == TB_ENOMEM);
    if (!ok)
        diverge(c, "schedule %s delay %" PRId64 " period %" PRId64
                " at clock %" PRId64 " (pending %zu, max %zu, nomem %ld) "
                "returned %d (%s), expected %d", kinds[kind], delay, period,
                c->now, pending, c->cfg.max_pending, nomem, rc,
                tb_strerror(rc), expect_err);
    if (rc != TB_OK) {
        if (h != TB_HANDLE_NONE)
            diverge(c, "failed schedule left handle %#" PRIx64, h);
        if (rc == TB_ESHUTDOWN || rc == TB_EFULL || rc == TB_ENOMEM)
            c->rejected++;
        return NULL;
    }
    if (h == TB_HANDLE_NONE || find(c, h))
        diverge(c, "schedule returned handle %#" PRIx64 ", %s", h,
                h == TB_HANDLE_NONE ? "none" : "already given out");
    t->h = h;
    t->seq = c->seq++;
    t->period = kind == 0 ? 0 : kind == 1 ? period : -period;
    t->next = c->now + d;
    t->ref = arm_ref(c);
    t->st = T_LIVE;
    c->ntasks++;
    c->submitted++;
    return t;
}

/* ---- A run ------------------------------------------------------------- */

static int ftask_run(void *arg)
{
    struct ftask *t = arg;
    struct fctx *c = t->c;
    if (!c->in_adv)
        diverge(c, "task %d ran outside tb_advance", t->id);
    if (c->in_cb)
        diverge(c, "task %d started inside the run of task %d", t->id,
                c->in_cb->id);
    if (c->stopped)
        diverge(c, "task %d ran after %s", t->id,
                c->killed ? "a failing task killed the timer"
                          : "shutdown_now");
    if (t->st != T_LIVE)
        diverge(c, "task %d ran, but it is %s (run %d)", t->id,
                state_name[t->st], t->runs + 1);
    int64_t clock = tb_now(c->s);
    if (clock != c->T)
        diverge(c, "clock %" PRId64 " inside a run of the advance to %" PRId64,
                clock, c->T);
    int64_t key = ticked(c) ? ceil_to(t->next, c->tick) : t->next;
    if (t->next > c->T || key > c->T)
        diverge(c, "task %d ran early: deadline %" PRId64 " (tick %" PRId64
                ") at clock %" PRId64, t->id, t->next, key, c->T);
    if (c->have_last && !granular(c)) {
        bool fifo = (c->caps & TB_CAP_FIFO_TIES) && !ticked(c);
        if (key < c->last_key ||
            (fifo && key == c->last_key && t->seq < c->last_seq))
            diverge(c, "task %d (%s %" PRId64 ", seq %" PRIu64 ") ran after "
                    "one at %" PRId64 " seq %" PRIu64, t->id,
                    ticked(c) ? "tick" : "deadline", key, t->seq,
                    c->last_key, c->last_seq);
    }
    c->have_last = true;
    c->last_key = key;
    c->last_seq = t->seq;
    if (t->committed) {
        t->committed = false;
        c->committed--;
    }
    t->runs++;
    t->refusable = false; /* it runs: its last re-arm was done */
    c->fired++;
    c->adv_runs++;
    note(c, "  run task %d #%d deadline %" PRId64, t->id, t->runs, t->next);

    int ret = 0;
    c->in_cb = t;
    if (t->act != ACT_NONE && (t->act_at == 0 || t->act_at == t->runs)) {
        switch (t->act) {
        case ACT_FAIL:
            ret = 1;
            break;
        case ACT_CANCEL_SELF:
            do_cancel(c, t->h, "self");
            break;
        case ACT_CANCEL_TASK:
            do_cancel(c, c->tasks[t->target % c->ntasks].h, "in-run");
            break;
        case ACT_SPAWN:
            do_schedule(c, 0, t->child_delay, 0, ACT_NONE, 0, 0, 0, -1);
            break;
        case ACT_ADVANCE: {
            long rc = tb_advance(c->s, sat_add(c->T, t->child_delay));
            note(c, "  advance from inside a run -> %ld", rc);
            if (rc != TB_ESTATE)
                diverge(c, "tb_advance inside the run of task %d returned "
                        "%ld, expected TB_ESTATE", t->id, rc);
            break;
        }
        case ACT_NONE:
            break;
        }
    }
    c->in_cb = NULL;

    if (ret)
        c->failed++;
    if (t->st == T_CANCELLED) {
        /* a periodic task that cancelled itself: retired, already counted */
    } else if (t->period == 0 || ret) {
        set_state(c, t, T_FINISHED);
    } else {
        /* the model's own arithmetic, not the core's tb_next_deadline, so a
         * bug there shows up as a divergence */
        int64_t from = t->period > 0 ? t->next : c->T;
        int64_t step = t->period > 0 ? t->period : -t->period;
        if (t->period > 0 && (c->caps & TB_CAP_SKIP_MISSED) && c->T - from >= step) {
            int64_t k = 1 + (c->T - from) / step;
            if (k > INT64_MAX / step) step = INT64_MAX; else step *= k;
        }
        if (from >= INT64_MAX - step) {
            set_state(c, t, T_FINISHED); /* past the end of the clock */
        } else {
            t->next = from + step;
            t->ref = arm_ref(c);
            t->refusable = rearm_refusable(c);
        }
    }
    if (ret && (c->caps & TB_CAP_FAIL_KILLS))
        kill_timer(c, t);
    return ret;
}

/* ---- Advance ----------------------------------------------------------- */

/* Upper bound of the runs an advance to T causes. */
static uint64_t runs_implied(const struct fctx *c, int64_t T)
{
    int64_t e = effective(c, T);
    uint64_t n = 0;
    for (int i = 0; i < c->ntasks; i++) {
        const struct ftask *t = &c->tasks[i];
        if (t->st != T_LIVE || t->next > e)
            continue;
        uint64_t k = 1;
        if (t->period > 0)
            k = (uint64_t)(e - t->next) / (uint64_t)t->period + 1;
        if (t->act == ACT_SPAWN)
            k = k > UINT64_MAX / 2 ? UINT64_MAX : 2 * k;
        n = n > UINT64_MAX - k ? UINT64_MAX : n + k;
    }
    return n;
}

/* Upper bound of the timeout visits an advance to T costs a hashed wheel:
 * each live timeout is looked at once per revolution (Netty's
 * remainingRounds), so 2^62 ns over one far timeout at a 1 ms tick is 10^10
 * visits — the design's price, not a fault, but no fuzz run can wait for
 * it.  Only counted while something is live: an idle wheel skips ahead. */
static uint64_t wheel_visits(const struct fctx *c, int64_t T)
{
    if (!ticked(c))
        return 0;
    uint64_t live = (uint64_t)live_count(c);
    uint64_t len = c->cfg.wheel_size > 0 ? (uint64_t)c->cfg.wheel_size : 1;
    uint64_t revs = (uint64_t)(T / c->tick - c->now / c->tick) / len;
    return live && revs > UINT64_MAX / live ? UINT64_MAX : revs * live;
}

static bool fits(const struct fctx *c, int64_t T)
{
    uint64_t v = wheel_visits(c, T);
    return runs_implied(c, T) <= RUN_BUDGET && v <= VISIT_BUDGET &&
           v <= c->visits_left;
}

/* The latest target <= T whose work fits the budgets. */
static int64_t within_budget(const struct fctx *c, int64_t T)
{
    if (fits(c, T))
        return T;
    int64_t lo = c->now, hi = T; /* lo fits: see MAX_TASKS */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (fits(c, mid))
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

static void do_advance(struct fctx *c, int64_t T)
{
    if (T < c->now) {
        long rc = tb_advance(c->s, T);
        note(c, "advance back to %" PRId64 " -> %ld", T, rc);
        if (rc != TB_EINVAL)
            diverge(c, "advance backwards to %" PRId64 " from %" PRId64
                    " returned %ld, expected TB_EINVAL", T, c->now, rc);
        return;
    }
    T = within_budget(c, T);
    c->visits_left -= wheel_visits(c, T);
    c->T = T;
    c->prev = c->now;
    c->now = T; /* the clock moves first: callbacks schedule from T */
    c->in_adv = true;
    c->adv_runs = 0;
    c->have_last = false;
    note(c, "advance to %" PRId64, T);
    long rc = tb_advance(c->s, T);
    c->in_adv = false;
    note(c, "advance -> %ld", rc);
    if (rc != c->adv_runs)
        diverge(c, "tb_advance(%" PRId64 ") returned %ld, %ld runs seen", T,
                rc, c->adv_runs);
    for (int i = 0; i < c->ntasks; i++)
        resolve_refused(c, &c->tasks[i]);
    for (int i = 0; i < c->ntasks; i++) {
        struct ftask *t = &c->tasks[i];
        if (t->st != T_LIVE || !must_have_run(c, t, T))
            continue;
        if (t->uncertain) {
            set_state(c, t, T_GONE); /* shut down, let go unrun */
            continue;
        }
        diverge(c, "task %d (%s, deadline %" PRId64 ", %d runs) is due at %"
                PRId64 " but did not run", t->id,
                t->period > 0 ? "fixed rate" : t->period ? "fixed delay"
                                                         : "one-shot",
                t->next, t->runs, T);
    }
}

/* ---- Shutdown ---------------------------------------------------------- */

static void visit(void *ctx, tb_handle h, tb_fn fn, void *arg)
{
    struct fctx *c = ctx;
    struct ftask *t = arg;
    if (fn != ftask_run || t < c->tasks || t >= c->tasks + c->ntasks)
        diverge(c, "shutdown_now visited a task the model never made");
    if (t->h != h)
        diverge(c, "shutdown_now visited task %d with handle %#" PRIx64
                ", it has %#" PRIx64, t->id, h, t->h);
    if (t->st != T_LIVE || t->visited)
        diverge(c, "shutdown_now visited task %d (%s)%s", t->id,
                state_name[t->st], t->visited ? " twice" : "");
    t->visited = true;
}

static void do_shutdown_now(struct fctx *c)
{
    int live = live_count(c);
    for (int i = 0; i < c->ntasks; i++)
        c->tasks[i].visited = false;
    long rc = tb_shutdown_now(c->s, visit, c);
    note(c, "shutdown_now -> %ld (model live %d)", rc, live);
    int visited = 0;
    for (int i = 0; i < c->ntasks; i++)
        visited += c->tasks[i].visited;
    if (rc != visited)
        diverge(c, "shutdown_now returned %ld, visited %d", rc, visited);
    if (!c->relaxed && rc != live)
        diverge(c, "shutdown_now returned %ld, %d tasks were pending", rc,
                live);
    for (int i = 0; i < c->ntasks; i++) {
        struct ftask *t = &c->tasks[i];
        if (t->visited)
            set_state(c, t, T_DROPPED);
        else if (t->st == T_LIVE)
            set_state(c, t, T_GONE); /* let go at tb_shutdown() */
    }
    c->shut = c->stopped = true;
}

static void do_shutdown(struct fctx *c)
{
    struct tb_stats before, after;
    tb_stats(c->s, &before);
    long rc = tb_shutdown(c->s);
    tb_stats(c->s, &after);
    note(c, "shutdown -> %ld", rc);
    if (rc < 0 || (uint64_t)rc != after.dropped - before.dropped)
        diverge(c, "tb_shutdown returned %ld, dropped went %" PRIu64
                " -> %" PRIu64, rc, before.dropped, after.dropped);
    c->dropped += (uint64_t)rc;
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].st == T_LIVE)
            c->tasks[i].uncertain = true;
    c->shut = c->relaxed = true;
}

static void do_purge(struct fctx *c)
{
    struct tb_stats before, after;
    tb_stats(c->s, &before);
    long rc = tb_purge(c->s);
    tb_stats(c->s, &after);
    note(c, "purge -> %ld (zombies %" PRIu64 ")", rc, before.zombies);
    if (!(c->caps & TB_CAP_PURGE)) {
        if (rc != TB_ENOTSUP)
            diverge(c, "tb_purge returned %ld without TB_CAP_PURGE", rc);
        return;
    }
    if (rc < 0 || (uint64_t)rc != before.zombies || after.zombies != 0)
        diverge(c, "tb_purge returned %ld with %" PRIu64 " zombies, %" PRIu64
                " left", rc, before.zombies, after.zombies);
}

/* ---- Decoding ---------------------------------------------------------- */

static int64_t rd_delay(struct fctx *c)
{
    struct rd *r = &c->r;
    int64_t u = unit(c);
    switch (rd_u8(r) % 12) {
    case 0: return 0;
    case 1: return rd_u8(r);
    case 2: return (int64_t)rd_bytes(r, 2) * TB_US;
    case 3: { /* on, or one ns either side of, a tick boundary */
        int64_t at = sat_add(ceil_to(c->now, u),
                             (int64_t)rd_u8(r) * u);
        at = sat_add(at, rd_u8(r) % 3);
        at = at > 0 ? at - 1 : at;
        return at - c->now;
    }
    case 4: return (int64_t)(rd_bytes(r, 4) % (uint64_t)(10 * TB_SEC));
    case 5: return (int64_t)(rd_bytes(r, 8) % ((uint64_t)TB_MAX_DELAY + 1));
    case 6: return TB_MAX_DELAY;
    case 7: return TB_MAX_DELAY + 1 + rd_u8(r);
    case 8: return INT64_MAX - c->now; /* the clock's last instant */
    case 9: return c->now ? INT64_MAX - c->now + 1 : INT64_MAX;
    case 10: return rd_u8(r) & 1 ? INT64_MIN : -(int64_t)rd_bytes(r, 4) - 1;
    default: return (int64_t)1 << (rd_u8(r) % 63);
    }
}

static int64_t rd_period(struct fctx *c)
{
    struct rd *r = &c->r;
    int64_t u = unit(c);
    switch (rd_u8(r) % 10) {
    case 0: return 0;
    case 1: return -1 - rd_u8(r);
    case 2: return 1 + rd_u8(r) % 8;
    case 3: return (1 + (int64_t)rd_u8(r)) * u;
    case 4: return 1 + (int64_t)(rd_bytes(r, 4) % (uint64_t)(10 * TB_SEC));
    case 5: return 1 + (int64_t)(rd_bytes(r, 8) % (uint64_t)TB_MAX_DELAY);
    case 6: return TB_MAX_DELAY;
    case 7: return TB_MAX_DELAY + 1;
    case 8: return INT64_MAX;
    default: return u - 1 + rd_u8(r) % 3;
    }
}

struct action {
    enum act act;
    int at, target;
    int64_t child_delay;
};

static struct action rd_action(struct fctx *c)
{
    struct rd *r = &c->r;
    uint8_t a = rd_u8(r);
    struct action x = {.at = (a >> 3) % 4};
    switch (a % 8) {
    case 2: x.act = ACT_ADVANCE; x.child_delay = rd_u8(r); break;
    case 3: x.act = ACT_FAIL; break;
    case 4: x.act = ACT_CANCEL_SELF; break;
    case 5: x.act = ACT_CANCEL_TASK; x.target = rd_u8(r); break;
    case 6:
        x.act = ACT_SPAWN;
        switch (rd_u8(r) % 4) {
        case 0: x.child_delay = 0; break;
        case 1: x.child_delay = rd_u8(r); break;
        case 2: x.child_delay = unit(c) * (rd_u8(r) % 4); break;
        default: x.child_delay = (int64_t)rd_bytes(r, 2) * TB_US; break;
        }
        break;
    default: x.act = ACT_NONE; break;
    }
    return x;
}

static void op_schedule(struct fctx *c, int kind)
{
    int64_t delay = rd_delay(c);
    int64_t period = kind ? rd_period(c) : 0;
    struct action a = rd_action(c);
    do_schedule(c, kind, delay, period, a.act, a.at, a.target,
                a.child_delay, -1);
}

/* Many one-shots at once: equal deadlines (FIFO ties), one tick, or spread. */
static void op_burst(struct fctx *c)
{
    struct rd *r = &c->r;
    int n = 2 + rd_u8(r) % 63;
    int64_t delay = rd_delay(c);
    uint8_t mode = rd_u8(r) % 4;
    uint64_t x = rd_u8(r) | 0x100u;
    for (int i = 0; i < n; i++) {
        int64_t d = delay;
        if (mode == 1)
            d = sat_add(delay, i);
        else if (mode == 2)
            d = sat_add(delay, i * unit(c));
        else if (mode == 3) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            d = sat_add(delay, (int64_t)(x % (uint64_t)(8 * unit(c))));
        }
        do_schedule(c, 0, d, 0, ACT_NONE, 0, 0, 0, -1);
    }
}

static void op_cancel_live(struct fctx *c)
{
    int live = live_count(c);
    uint8_t k = rd_u8(&c->r);
    if (!live)
        return;
    int pick = k % live;
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].st == T_LIVE && pick-- == 0) {
            do_cancel(c, c->tasks[i].h, "live");
            return;
        }
}

/* A handle that was valid once, or one a generation off a valid one. */
static void op_cancel_stale(struct fctx *c)
{
    struct rd *r = &c->r;
    uint8_t k = rd_u8(r), how = rd_u8(r) % 4;
    if (!c->ntasks)
        return;
    tb_handle h = c->tasks[k % c->ntasks].h;
    if (how == 1)
        h += (tb_handle)1 << 32;          /* a later generation */
    else if (how == 2)
        h -= (tb_handle)1 << 32;          /* an earlier one (maybe 0) */
    else if (how == 3)
        h ^= (tb_handle)(1u << (rd_u8(r) % 32)); /* another slot */
    do_cancel(c, h, "stale");
}

static void op_cancel_all(struct fctx *c)
{
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].st == T_LIVE)
            do_cancel(c, c->tasks[i].h, "all");
}

static void op_advance_edge(struct fctx *c)
{
    struct rd *r = &c->r;
    uint8_t k = rd_u8(r), where = rd_u8(r) % 6;
    int live = live_count(c);
    if (!live)
        return;
    int pick = k % live;
    struct ftask *t = NULL;
    for (int i = 0; i < c->ntasks && !t; i++)
        if (c->tasks[i].st == T_LIVE && pick-- == 0)
            t = &c->tasks[i];
    int64_t d = t->next, up = ceil_to(d, unit(c)), T;
    switch (where) {
    case 0: T = d - 1; break;
    case 1: T = d; break;
    case 2: T = sat_add(d, 1); break;
    case 3: T = up - 1; break;
    case 4: T = up; break;
    default: T = sat_add(up, unit(c)); break;
    }
    do_advance(c, T < c->now ? c->now : T);
}

static void op_advance_first(struct fctx *c)
{
    int64_t first = INT64_MAX;
    for (int i = 0; i < c->ntasks; i++)
        if (c->tasks[i].st == T_LIVE && c->tasks[i].next < first)
            first = c->tasks[i].next;
    if (first == INT64_MAX)
        return; /* nothing pending: "advance-end" covers the clock's end */
    if (ticked(c))
        first = ceil_to(first, c->tick);
    do_advance(c, first);
}

/* tb_reserve: room for n more records, maybe with a failing allocator; a
 * count the handle cannot hold is TB_ERANGE whatever the memory. */
static void op_reserve(struct fctx *c)
{
    struct rd *r = &c->r;
    uint8_t k = rd_u8(r);
    bool huge = k & 1;
    size_t n = huge ? (size_t)UINT32_MAX + (k >> 1)
                    : (size_t)(k >> 1) * 32;
    long budget = huge ? -1 : (long)(rd_u8(r) % 5) - 1;
    c->fa.budget = budget;
    int rc = tb_reserve(c->s, n);
    c->fa.budget = -1;
    note(c, "reserve %zu nomem=%ld -> %d", n, budget, rc);
    if (huge ? rc != TB_ERANGE
             : rc != TB_OK && !(budget >= 0 && rc == TB_ENOMEM))
        diverge(c, "tb_reserve(%zu) with allocator budget %ld returned %d",
                n, budget, rc);
}

static void op_misc(struct fctx *c)
{
    struct rd *r = &c->r;
    switch (rd_u8(r) % 6) {
    case 0:
        c->opname = "shutdown";
        do_shutdown(c);
        break;
    case 1:
        c->opname = "purge";
        do_purge(c);
        break;
    case 2: {
        c->opname = "schedule-nomem";
        long budget = rd_u8(r) % 4;
        int64_t delay = rd_delay(c);
        do_schedule(c, rd_u8(r) % 3, delay, TB_MS, ACT_NONE, 0, 0, 0,
                    budget);
        break;
    }
    case 3:
        c->opname = "cancel-all";
        op_cancel_all(c);
        break;
    case 4:
        c->opname = "reserve";
        op_reserve(c);
        break;
    default:
        c->opname = "advance-end";
        do_advance(c, INT64_MAX);
        break;
    }
}

static void run_op(struct fctx *c, uint8_t code)
{
    struct rd *r = &c->r;
    switch (code % 16) {
    case 0:
    case 1: c->opname = "once"; op_schedule(c, 0); break;
    case 2: c->opname = "rate"; op_schedule(c, 1); break;
    case 3: c->opname = "delay"; op_schedule(c, 2); break;
    case 4: c->opname = "burst"; op_burst(c); break;
    case 5: c->opname = "cancel-live"; op_cancel_live(c); break;
    case 6: c->opname = "cancel-stale"; op_cancel_stale(c); break;
    case 7:
        c->opname = "cancel-random";
        do_cancel(c, rd_bytes(r, 8), "random");
        break;
    case 8:
    case 9: {
        c->opname = "advance-small";
        uint8_t k = rd_u8(r);
        int64_t step = k < 128 ? k : (int64_t)(k - 128) * unit(c) / 16;
        do_advance(c, sat_add(c->now, step));
        break;
    }
    case 10: {
        c->opname = "advance-huge";
        uint8_t shift = rd_u8(r) % 64;
        uint64_t v = rd_bytes(r, 8) >> shift;
        do_advance(c, sat_add(c->now, (int64_t)(v >> 1)));
        break;
    }
    case 11: c->opname = "advance-edge"; op_advance_edge(c); break;
    case 12: {
        c->opname = "advance-back";
        uint8_t k = rd_u8(r);
        do_advance(c, k == 0 ? INT64_MIN : c->now - k);
        break;
    }
    case 13: c->opname = "shutdown-now"; do_shutdown_now(c); break;
    case 14: op_misc(c); break;
    default: c->opname = "advance-first"; op_advance_first(c); break;
    }
}

/* ---- Setup ------------------------------------------------------------- */

static const int64_t ticks[8] = {TB_MS, TB_MS, TB_MS, TB_US,
                                 7 * TB_MS, 100 * TB_MS, TB_SEC, 3};
static const int wheel_sizes[8] = {0, 0, 1, 2, 3, 8, 16, 64};

void tbf_run(const struct tb_backend *b, const uint8_t *data, size_t size)
{
    struct fctx *c = calloc(1, sizeof *c);
    struct ftask *tasks = calloc(MAX_TASKS, sizeof *tasks);
    if (!c || !tasks) {
        fprintf(stderr, "tbfuzz: out of memory\n");
        abort();
    }
    c->b = b;
    c->caps = b->caps;
    c->tasks = tasks;
    c->r = (struct rd){data, size, 0};
    c->visits_left = VISIT_BUDGET_TOTAL;
    c->fa = (struct falloc){{fa_alloc, fa_free, NULL}, 0, -1};
    c->fa.hook.ctx = &c->fa;

    uint8_t flags = rd_u8(&c->r), wheel = rd_u8(&c->r), maxp = rd_u8(&c->r);
    struct tb_config cfg = {
        .clock = TB_CLOCK_VIRTUAL,
        .tick_ns = ticks[(flags >> 4) & 7],
        .wheel_size = wheel_sizes[wheel % 8],
        .max_pending = flags & 8 ? 1 + maxp % 64u : 0,
        .flags = (flags & 1 ? TB_F_REMOVE_ON_CANCEL : 0) |
                 (flags & 2 ? TB_F_DROP_DELAYED_ON_SHUTDOWN : 0) |
                 (flags & 4 ? TB_F_KEEP_PERIODIC_ON_SHUTDOWN : 0),
        .allocator = &c->fa.hook,
    };
    int rc = tb_create(b, &cfg, &c->s);
    if (rc == TB_EINVAL) { /* a size or tick this backend does not take */
        cfg.tick_ns = TB_MS;
        cfg.wheel_size = 0;
        rc = tb_create(b, &cfg, &c->s);
    }
    if (rc != TB_OK)
        diverge(c, "tb_create: %s", tb_strerror(rc));
    tb_sched_config(c->s, &c->cfg);
    c->tick = ticked(c) ? c->cfg.tick_ns : 1;
    if (c->tick <= 0)
        diverge(c, "ticked backend resolved tick %" PRId64, c->tick);
    note(c, "create tick=%" PRId64 " wheel=%d max_pending=%zu flags=%#x",
         c->cfg.tick_ns, c->cfg.wheel_size, c->cfg.max_pending,
         c->cfg.flags);
    check_quiet(c);

    for (c->op = 1; c->op <= MAX_OPS && !rd_done(&c->r); c->op++) {
        run_op(c, rd_u8(&c->r));
        check_quiet(c);
    }
    c->opname = "final shutdown-now";
    do_shutdown_now(c);
    check_quiet(c);
    tb_destroy(c->s);
    if (c->fa.live != 0)
        diverge(c, "%" PRId64 " bytes still held after tb_destroy",
                c->fa.live);
    free(tasks);
    free(c);
}
