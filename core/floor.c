/*
 * core/floor.c — the interface's floor (issue 39): a backend whose structure
 * does nothing, so that what a call costs before any structure works can be
 * counted on its own.  tb_schedule reaches it through the core's checks and
 * its virtual fast path takes a record from the pool and says what the task
 * is, as every backend's does; tb_cancel decodes the handle, checks its
 * generation and puts the record back.  Nothing is ordered and nothing ever
 * runs: it is not a timer, so it is not in the registry (tb_backend_find
 * does not know it, the conformance suite, the report and the peers driver
 * never see it); bench/counts.c names it on its own (DECISIONS.md, issue
 * 39's floor entry).  Virtual clock only.
 */
#include "tb_core.h"

struct fl {
    struct tb_sched base;
    bool stopped;
    struct tb_stats st;
};

static struct fl *fl_of(struct tb_sched *s) { return (struct fl *)s; }

static int fl_configure(struct tb_config *cfg)
{
    /* no threads: a floor has nothing to wait for */
    return cfg->clock == TB_CLOCK_VIRTUAL ? TB_OK : TB_ENOTSUP;
}

static int fl_init(struct tb_sched *s)
{
    (void)s;
    return TB_OK;
}

static void fl_fini(struct tb_sched *s) { (void)s; }

static int fl_start(struct tb_sched *s)
{
    (void)s;
    return TB_ESTATE;
}

/* Refused or grown: the pool's locking get grows it. */
static __attribute__((noinline)) int
schedule_slow(struct tb_sched *s, int64_t deadline, tb_fn fn, void *arg,
              tb_handle *handle, int64_t period)
{
    struct fl *f = fl_of(s);
    tb_handle_none(handle);
    int rc = f->stopped ? TB_ESHUTDOWN : TB_OK;
    if (!rc && s->cfg.max_pending && s->pool.live >= s->cfg.max_pending)
        rc = TB_EFULL;
    struct tb_task *t = rc ? NULL : tb_pool_get(&s->pool, handle);
    if (!rc && !t)
        rc = TB_ENOMEM;
    if (rc) {
        f->st.rejected++;
        return rc;
    }
    tb_task_set(t, deadline, period, fn, arg);
    f->st.submitted++;
    return TB_OK;
}

/* The path a backend's virtual schedule takes, and nothing after it (no
 * max_pending: tb_create takes fl_schedule for a scheduler with one; not
 * stopped: after a shutdown the core calls fl_schedule instead). */
static int fl_schedule_virtual(struct tb_sched *s, int64_t deadline, tb_fn fn,
                               void *arg, tb_handle *handle, int64_t period)
{
    struct fl *f = fl_of(s);
    if (__builtin_expect(s->pool.free_head == TB_POOL_NIL, 0))
        return schedule_slow(s, deadline, fn, arg, handle, period);
    tb_task_set(tb_pool_get_unlocked(&s->pool, handle), deadline, period, fn,
                arg);
    f->st.submitted++;
    return TB_OK;
}

/* The path a backend's virtual cancel of a waiting task takes: the record
 * goes straight back to the pool, its generation moving on. */
/* With max_pending, or any other case: every check. */
static int fl_schedule(struct tb_sched *s, int64_t deadline, tb_fn fn,
                       void *arg, tb_handle *handle, int64_t period)
{
    return schedule_slow(s, deadline, fn, arg, handle, period);
}

static int fl_cancel(struct tb_sched *s, tb_handle h)
{
    struct tb_task *t = tb_pool_waiting_unlocked(&s->pool, h);
    if (!t)
        return 0;
    fl_of(s)->st.cancelled++;
    tb_pool_put_handle_unlocked(&s->pool, t, h);
    return 1;
}

static size_t fl_pending(struct tb_sched *s) { return s->pool.live; }

/* Moves the clock; nothing is due, because nothing is ordered. */
static long fl_advance(struct tb_sched *s, int64_t now)
{
    atomic_store_explicit(&s->vnow, now, memory_order_relaxed);
    return 0;
}

/* Every waiting record back to the pool, visited and counted dropped. */
static long drop_all(struct fl *f, tb_unrun_fn visit, void *ctx)
{
    struct tb_pool *p = &f->base.pool;
    long n = 0;
    for (size_t slot = 0; slot < p->nchunks * (size_t)TB_POOL_CHUNK; slot++) {
        struct tb_task *t = tb_pool_record(p, (uint32_t)slot);
        uint64_t gs = atomic_load_explicit(&t->gs, memory_order_relaxed);
        if (tb_task_state(gs) != TB_TASK_WAITING)
            continue;
        if (visit)
            visit(ctx, tb_task_handle(gs), t->fn, t->arg);
        tb_pool_put_unlocked(p, t);
        f->st.dropped++;
        n++;
    }
    return n;
}

static long fl_shutdown(struct tb_sched *s)
{
    struct fl *f = fl_of(s);
    f->stopped = true;
    return drop_all(f, NULL, NULL);
}

static long fl_shutdown_now(struct tb_sched *s, tb_unrun_fn visit, void *ctx)
{
    struct fl *f = fl_of(s);
    f->stopped = true;
    return drop_all(f, visit, ctx);
}

static int fl_await_termination(struct tb_sched *s, int64_t timeout_ns)
{
    (void)timeout_ns;
    return fl_of(s)->stopped ? TB_OK : TB_ESTATE;
}

static void fl_join(struct tb_sched *s) { (void)s; }

static void fl_stats(struct tb_sched *s, struct tb_stats *out)
{
    *out = fl_of(s)->st;
    out->pending = s->pool.live;
    out->peak_pending = 0; /* not kept: it would be work on every schedule */
}

static const struct tb_backend_ops fl_ops = {
    .sched_size = sizeof(struct fl),
    .task_size = sizeof(struct tb_task),
    .configure = fl_configure,
    .init = fl_init,
    .fini = fl_fini,
    .start = fl_start,
    .schedule = fl_schedule,
    .schedule_virtual = fl_schedule_virtual,
    .cancel = fl_cancel,
    .pending = fl_pending,
    .advance = fl_advance,
    .shutdown = fl_shutdown,
    .shutdown_now = fl_shutdown_now,
    .await_termination = fl_await_termination,
    .join = fl_join,
    .stats = fl_stats,
};

const struct tb_backend tb_backend_floor = {
    .name = "floor",
    .description = "the interface alone: no structure, tasks never run "
                   "(not a timer; not in the registry)",
    .caps = 0,
    .ops = &fl_ops,
};
