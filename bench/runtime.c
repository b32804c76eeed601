/*
 * bench/runtime.c — the monotonic-clock benchmarks: real threads, real
 * sleeps, the whole design of each backend (locks, wake-ups, tick loops).
 *
 * Each result is one experiment per Google Benchmark run (iterations:1,
 * repeats: the profile's runtime_repetitions); its time is the experiment's
 * measured phase and its findings are counters.  Raw samples go to the
 * CSV (bh_csv_samples).  Experiments, by <op>:
 *
 *   lateness      one-shot probes, delays uniform 1-10 ms, submitted every
 *                 0.5 ms (workload "light", N:0) or the same on top of N
 *                 background tasks 100-1000 s away (workload "loaded");
 *                 lateness = start - (time read before tb_schedule + delay),
 *                 an upper bound by the schedule call's own duration, so a
 *                 negative value is a certain early fire ("early").  Two
 *                 pseudo-backends measure the machine's own wake-up
 *                 latency with the same submitting thread and cadence:
 *                 "floor", one thread waiting with pthread_cond_timedwait
 *                 on CLOCK_MONOTONIC for the earliest probe and signalled
 *                 when a submission becomes the earliest (the primitive
 *                 and the signalling of every backend here: the floor a
 *                 backend is held to, see floor_wait_of), and "nanosleep",
 *                 one thread in clock_nanosleep(TIMER_ABSTIME) to each
 *                 planned time in turn.
 *                 Config slack=default|1ns: the thread's timer slack
 *                 (threads inherit it from the thread that starts them).
 *   jitter        one 1 ms fixed-rate task; lateness against the planned
 *                 schedule first + k ms, period error (start_k - start_k-1
 *                 - 1 ms), total drift, runs against the expected count.
 *                 A backend whose thread sleeps in whole milliseconds
 *                 (TB_CAP_SLEEP_MS: Netty's worker) runs lateness light
 *                 (slack=default) and jitter a second time with
 *                 TB_F_EXACT_SLEEP, labelled sleep=exact.
 *   interference  eight 1 ms fixed-rate tasks and, 100 ms in, one task
 *                 that sleeps 50 ms: the 1 ms tasks' lateness, threads=1
 *                 against threads=4 (a backend with one runner thread
 *                 ignores the count and shows the stall in both).
 *   burst         N tasks with one absolute deadline, submitted at once:
 *                 submit cost, first and last start after the deadline.
 *   idle          one task 60 s away: process CPU time, the backend's
 *                 wake-ups, ticks and the kernel's context switches per
 *                 second.
 *   workers       four threads, a task every 0.5 ms with a 1-10 ms delay:
 *                 timed waits and wake-ups per task, leader=on|off where
 *                 the backend honours TB_F_NO_LEADER.
 *   producers     1, 2, 4 threads each scheduling N tasks (workload short)
 *                 as fast as they can: throughput and lateness.
 *   failing       threads=1: ten one-shot tasks due at 1 .. 10 ms, the
 *                 third fails (returns non-zero); then one more schedule.
 *                 What a failing task does to the others on real threads,
 *                 one runner each (an STPE of one thread goes on, Timer
 *                 dies): counters after (7), ran_after, ran_before (2),
 *                 accepted_after, failed, runners (the resolved thread
 *                 count: "threads" is Google Benchmark's own key).  The
 *                 report's probe (report/probe.c) asks the same on the
 *                 virtual clock.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"

enum kind { K_LATENESS, K_JITTER, K_INTERFERENCE, K_BURST, K_IDLE,
            K_WORKERS, K_PRODUCERS, K_FAILING };

struct rt_def {
    enum kind kind;
    const struct tb_backend *b;   /* NULL: a floor (see `wait`) */
    int wait;                     /* floor: FLOOR_CONDVAR, FLOOR_NANOSLEEP */
    struct bh_config c;
    int64_t n;                    /* background / burst / per producer */
    int producers;
    long slack;                   /* 0: leave the timer slack alone */
    char name[256];               /* family name */
};

/* One counter of the last experiment, set again by report(). */
struct counter {
    char name[48];
    double value;
};

/* A probe task's record: when it should run and when it did. */
struct probe {
    int64_t planned;
    int64_t start;
    struct exp *e;
};

/* What the tasks of one experiment share with the thread that waits. */
struct exp {
    _Atomic uint64_t done;
    uint64_t target;
    pthread_mutex_t lock;
    pthread_cond_t cond;
};

struct rt {
    const struct rt_def *d;
    char name[300];               /* canonical: family/N:n */
    int rep;
    struct counter counters[40];
    size_t ncounters;
};

static void *xmalloc(size_t size)
{
    void *p = calloc(1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "bench: out of memory\n");
        exit(2);
    }
    return p;
}

static void put(struct rt *r, const char *name, double value)
{
    if (r->ncounters == sizeof r->counters / sizeof r->counters[0])
        return;
    struct counter *c = &r->counters[r->ncounters++];
    snprintf(c->name, sizeof c->name, "%s", name);
    c->value = value;
}

/* Percentiles of v (sorted in place) as counters prefix+count, min, p50,
 * p90, p99, p999, max (ns), kept until report(). */
static void put_percentiles(struct rt *r, const char *prefix, int64_t *v,
                            size_t n)
{
    static const struct {
        const char *name;
        double q;
    } qs[] = {{"min", 0.0},  {"p50", 0.5},    {"p90", 0.9},
              {"p99", 0.99}, {"p999", 0.999}, {"max", 1.0}};
    char key[40];
    bh_sort(v, n);
    snprintf(key, sizeof key, "%scount", prefix);
    put(r, key, (double)n);
    for (size_t i = 0; i < sizeof qs / sizeof qs[0]; i++) {
        snprintf(key, sizeof key, "%s%s", prefix, qs[i].name);
        put(r, key, (double)bh_quantile(v, n, qs[i].q));
    }
}

static size_t count_negative(const int64_t *v, size_t n)
{
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        k += v[i] < 0;
    return k;
}

/* A run's lateness samples: the count of early starts, the samples for the
 * CDFs (samples.csv) and the percentiles. */
static void put_lateness(struct rt *r, int64_t *late, size_t n)
{
    put(r, "early", (double)count_negative(late, n));
    bh_csv_samples(r->name, "lateness", r->rep, late, n, 20000);
    put_percentiles(r, "", late, n);
}

/* ---- Waiting for tasks ------------------------------------------------- */

static void exp_init(struct exp *e, uint64_t target)
{
    atomic_init(&e->done, 0);
    e->target = target;
    pthread_mutex_init(&e->lock, NULL);
    /* timed waits measured on the clock the deadlines come from */
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&e->cond, &a);
    pthread_condattr_destroy(&a);
}

static void exp_fini(struct exp *e)
{
    pthread_mutex_destroy(&e->lock);
    pthread_cond_destroy(&e->cond);
}

static void exp_one_done(struct exp *e)
{
    if (atomic_fetch_add_explicit(&e->done, 1, memory_order_acq_rel) + 1 ==
        e->target) {
        pthread_mutex_lock(&e->lock);
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
    }
}

/* Waits until every task ran or `deadline` passes; returns how many ran. */
static uint64_t exp_wait(struct exp *e, int64_t deadline)
{
    struct timespec ts = {(time_t)(deadline / TB_SEC),
                          (long)(deadline % TB_SEC)};
    pthread_mutex_lock(&e->lock);
    while (atomic_load_explicit(&e->done, memory_order_acquire) < e->target)
        if (pthread_cond_timedwait(&e->cond, &e->lock, &ts))
            break;
    pthread_mutex_unlock(&e->lock);
    return atomic_load_explicit(&e->done, memory_order_acquire);
}

static int probe_task(void *arg)
{
    struct probe *p = arg;
    p->start = tb_monotonic_ns();
    exp_one_done(p->e);
    return 0;
}

static int noop_task(void *arg)
{
    (void)arg;
    return 0;
}

/* ---- Schedulers -------------------------------------------------------- */

static struct tb_sched *start_sched(const struct rt_def *d, tbb_state *st)
{
    struct tb_sched *s;
    struct tb_config cfg = d->c.cfg;
    cfg.clock = TB_CLOCK_MONOTONIC;
    int rc = tb_create(d->b, &cfg, &s);
    if (rc == TB_OK && (rc = tb_start(s)) != TB_OK)
        tb_destroy(s);
    if (rc != TB_OK) {
        char msg[128];
        snprintf(msg, sizeof msg, "tb_create/tb_start: %s", tb_strerror(rc));
        tbb_skip(st, msg);
        return NULL;
    }
    return s;
}

static int64_t tick_of(const struct tb_sched *s)
{
    struct tb_config c;
    tb_sched_config(s, &c);
    return (tb_sched_backend(s)->caps & TB_CAP_TICKED) ? c.tick_ns : 0;
}

static void skip_ran(tbb_state *st, uint64_t ran, uint64_t of)
{
    char msg[128];
    snprintf(msg, sizeof msg, "only %llu of %llu tasks ran in time",
             (unsigned long long)ran, (unsigned long long)of);
    tbb_skip(st, msg);
}

/* Background tasks that stay pending through the experiment. */
static bool load(struct tb_sched *s, int64_t n, uint64_t *rng, tbb_state *st)
{
    for (int64_t i = 0; i < n; i++) {
        int rc = tb_schedule(s, bh_uniform(rng, 100 * TB_SEC, 1000 * TB_SEC),
                             noop_task, NULL, NULL);
        if (rc) {
            tbb_skip(st, tb_strerror(rc));
            return false;
        }
    }
    return true;
}

/* ---- lateness ---------------------------------------------------------- */

/* 0.5 ms between probes: 2000 a second, so the standard profile's 10^4
 * samples per configuration take 5 s, and about 11 probes of 1-10 ms are
 * pending at a time: still a light load. */
#define LIGHT_SPACING (TB_MS / 2)

enum { FLOOR_CONDVAR, FLOOR_NANOSLEEP };

static const char *const floor_names[] = {[FLOOR_CONDVAR] = "floor",
                                          [FLOOR_NANOSLEEP] = "nanosleep"};

/* The floor a backend is held to: the wait primitive its threads sleep in,
 * as the backend declares it (TB_CAP_WAIT_NANOSLEEP: clock_nanosleep; else
 * pthread_cond_timedwait on CLOCK_MONOTONIC, what every backend here
 * waits in, read from their sources). */
static const char *floor_wait_of(const struct tb_backend *b)
{
    return floor_names[b->caps & TB_CAP_WAIT_NANOSLEEP ? FLOOR_NANOSLEEP
                                                       : FLOOR_CONDVAR];
}

/* The condition-variable floor: probes in a min-heap of planned times,
 * one waiter, signalled when a submission becomes the earliest (as
 * DelayedWorkQueue signals a new head). */
struct cv_floor {
    pthread_mutex_t lock;
    pthread_cond_t cond;
    struct probe **heap;
    size_t n, left;
};

static void cvf_push(struct cv_floor *f, struct probe *p)
{
    size_t k = f->n++;
    while (k > 0 && f->heap[(k - 1) / 2]->planned > p->planned) {
        f->heap[k] = f->heap[(k - 1) / 2];
        k = (k - 1) / 2;
    }
    f->heap[k] = p;
}

static struct probe *cvf_pop(struct cv_floor *f)
{
    struct probe *top = f->heap[0], *x = f->heap[--f->n];
    size_t k = 0;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= f->n)
            break;
        if (c + 1 < f->n && f->heap[c + 1]->planned < f->heap[c]->planned)
            c++;
        if (x->planned <= f->heap[c]->planned)
            break;
        f->heap[k] = f->heap[c];
        k = c;
    }
    if (f->n)
        f->heap[k] = x;
    return top;
}

static void *cvf_waiter(void *arg)
{
    struct cv_floor *f = arg;
    pthread_mutex_lock(&f->lock);
    while (f->left) {
        if (!f->n) {
            pthread_cond_wait(&f->cond, &f->lock);
            continue;
        }
        int64_t due = f->heap[0]->planned;
        if (tb_monotonic_ns() >= due) {
            struct probe *p = cvf_pop(f);
            f->left--;
            pthread_mutex_unlock(&f->lock);
            p->start = tb_monotonic_ns();
            pthread_mutex_lock(&f->lock);
            continue;
        }
        struct timespec ts = {(time_t)(due / TB_SEC), (long)(due % TB_SEC)};
        pthread_cond_timedwait(&f->cond, &f->lock, &ts);
    }
    pthread_mutex_unlock(&f->lock);
    return NULL;
}

/* The clock_nanosleep floor's waiter: each planned time in turn. */
struct ns_floor {
    struct probe *p;   /* sorted by planned time */
    size_t n;
};

static void *nsf_waiter(void *arg)
{
    struct ns_floor *f = arg;
    for (size_t i = 0; i < f->n; i++) {
        bh_sleep_until(f->p[i].planned);
        f->p[i].start = tb_monotonic_ns();
    }
    return NULL;
}

/* Runs a floor: the submitting loop of the backends' experiment in this
 * thread, the waiting in another.  False if the thread cannot start. */
static bool run_floor(int wait, struct probe *p, const int64_t *delay,
                      size_t n, int64_t base, int64_t *scratch)
{
    pthread_t th;
    if (wait == FLOOR_NANOSLEEP) {
        /* planned times fixed in advance (a sleeping thread cannot be told
         * of an earlier one): the ideal submission times plus the delays */
        for (size_t i = 0; i < n; i++)
            scratch[i] = base + (int64_t)i * LIGHT_SPACING + delay[i];
        bh_sort(scratch, n);
        for (size_t i = 0; i < n; i++)
            p[i].planned = scratch[i];
        struct ns_floor f = {p, n};
        if (pthread_create(&th, NULL, nsf_waiter, &f))
            return false;
        for (size_t i = 0; i < n; i++) /* the same cadence of wake-ups */
            bh_sleep_until(base + (int64_t)i * LIGHT_SPACING);
        pthread_join(th, NULL);
        return true;
    }
    struct cv_floor f = {.heap = calloc(n ? n : 1, sizeof *f.heap),
                         .left = n};
    if (!f.heap)
        return false;
    pthread_mutex_init(&f.lock, NULL);
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&f.cond, &a);
    pthread_condattr_destroy(&a);
    bool ok = pthread_create(&th, NULL, cvf_waiter, &f) == 0;
    for (size_t i = 0; ok && i < n; i++) {
        bh_sleep_until(base + (int64_t)i * LIGHT_SPACING);
        pthread_mutex_lock(&f.lock);
        p[i].planned = tb_monotonic_ns() + delay[i];
        cvf_push(&f, &p[i]);
        if (f.heap[0] == &p[i])
            pthread_cond_signal(&f.cond);
        pthread_mutex_unlock(&f.lock);
    }
    if (ok)
        pthread_join(th, NULL);
    pthread_cond_destroy(&f.cond);
    pthread_mutex_destroy(&f.lock);
    free(f.heap);
    return ok;
}

static double lateness(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    size_t n = (size_t)bh.profile->light_samples;
    uint64_t rng = bh_seed_for(d->name, d->n);
    long saved_slack = bh_timer_slack();
    if (d->slack)
        bh_set_timer_slack(d->slack);
    long slack = bh_timer_slack();
    struct probe *p = xmalloc(n * sizeof *p);
    int64_t *delay = xmalloc(n * sizeof *delay);
    int64_t *late = xmalloc(n * sizeof *late);
    for (size_t i = 0; i < n; i++)
        delay[i] = bh_uniform(&rng, TB_MS, 10 * TB_MS);
    struct exp e;
    exp_init(&e, n);
    double seconds = -1;
    struct tb_sched *s = NULL;
    int64_t tick = 0;
    if (d->b) {
        if (!(s = start_sched(d, st)))
            goto out;
        tick = tick_of(s);
        if (!load(s, d->n, &rng, st))
            goto out;
    }
    int64_t base = tb_monotonic_ns() + 10 * TB_MS;
    int64_t t0 = tb_monotonic_ns();
    if (d->b) {
        for (size_t i = 0; i < n; i++) {
            bh_sleep_until(base + (int64_t)i * LIGHT_SPACING);
            p[i].e = &e;
            p[i].planned = tb_monotonic_ns() + delay[i];
            int rc = tb_schedule(s, delay[i], probe_task, &p[i], NULL);
            if (rc) {
                tbb_skip(st, tb_strerror(rc));
                goto out;
            }
        }
        uint64_t ran = exp_wait(&e, tb_monotonic_ns() + 10 * TB_MS + 2 * tick +
                                        2 * TB_SEC);
        if (ran < n) {
            skip_ran(st, ran, n);
            goto out;
        }
    } else if (!run_floor(d->wait, p, delay, n, base, late)) {
        tbb_skip(st, "the floor's waiting thread did not start");
        goto out;
    }
    seconds = bh_seconds(t0, tb_monotonic_ns());
    for (size_t i = 0; i < n; i++)
        late[i] = p[i].start - p[i].planned;
    put(r, "early", (double)count_negative(late, n));
    put(r, "slack_ns", (double)slack);
    put(r, "background", (double)d->n);
    bh_csv_samples(r->name, "lateness", r->rep, late, n, 20000);
    put_percentiles(r, "", late, n);
out:
    tb_destroy(s);
    exp_fini(&e);
    bh_set_timer_slack(saved_slack);
    free(p);
    free(delay);
    free(late);
    return seconds;
}

/* ---- jitter ------------------------------------------------------------ */

struct rate_task {
    int64_t *starts;
    size_t cap;
    _Atomic size_t n;
};

static int rate_run(void *arg)
{
    struct rate_task *t = arg;
    int64_t now = tb_monotonic_ns();
    size_t k = atomic_fetch_add_explicit(&t->n, 1, memory_order_relaxed);
    if (k < t->cap)
        t->starts[k] = now;
    return 0;
}

/* The planned time each run of a fixed-rate task served, into `served`:
 * the k-th period (first + k period) where late runs catch up; with
 * TB_CAP_SKIP_MISSED (Go's Ticker) a late run is followed by the next point
 * of the grid after it (when + period (1 + (now - when) / period)), so the
 * runs serve a subsequence of the grid and the periods skipped are neither
 * runs nor lateness.  The runner's `now` is a little before the run's
 * start, so a served time is never taken past the run's own start (nothing
 * runs early). */
static void served_times(const int64_t *starts, size_t n, int64_t first,
                         int64_t period, bool skip, int64_t *served)
{
    for (size_t k = 0; k < n; k++) {
        if (!skip || k == 0) {
            served[k] = first + (int64_t)k * period;
            continue;
        }
        int64_t when = served[k - 1];
        int64_t next = when + period * (1 + (starts[k - 1] - when) / period);
        int64_t last = first + (starts[k] - first) / period * period;
        served[k] = next < last ? next : last;
        if (served[k] <= when)
            served[k] = when + period;
    }
}

static double jitter(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    const int64_t period = TB_MS;
    int64_t length = (int64_t)(bh.profile->jitter_seconds * 1e9);
    struct rate_task t = {.starts = NULL};
    atomic_init(&t.n, 0);
    double seconds = -1;
    struct tb_sched *s = start_sched(d, st);
    if (!s)
        goto out;
    /* at least 20 ticks, so a coarse wheel shows more than one burst */
    if (length < 20 * tick_of(s))
        length = 20 * tick_of(s);
    t.cap = (size_t)(length / period) + 1000;
    t.starts = xmalloc(t.cap * sizeof *t.starts);
    tb_handle h;
    int64_t first = tb_monotonic_ns() + period;
    int rc = tb_schedule_fixed_rate(s, period, rate_run, &t, &h, period);
    if (rc) {
        tbb_skip(st, tb_strerror(rc));
        goto out;
    }
    bh_sleep_until(first + length);
    tb_cancel(s, h);
    tb_destroy(s); /* joins the runner: no run is still writing */
    s = NULL;
    size_t n = atomic_load(&t.n);
    if (n > t.cap)
        n = t.cap;
    if (n < 2) {
        skip_ran(st, n, (uint64_t)(length / period));
        goto out;
    }
    int64_t *late = xmalloc(n * sizeof *late);
    int64_t *perr = xmalloc(n * sizeof *perr);
    int64_t *served = xmalloc(n * sizeof *served);
    served_times(t.starts, n, first, period,
                 d->b->caps & TB_CAP_SKIP_MISSED, served);
    for (size_t k = 0; k < n; k++)
        late[k] = t.starts[k] - served[k];
    for (size_t k = 1; k < n; k++)
        perr[k - 1] = t.starts[k] - t.starts[k - 1] -
                      (served[k] - served[k - 1]);
    int64_t span = t.starts[n - 1] - t.starts[0];
    put(r, "runs", (double)n);
    put(r, "expected_runs", (double)(length / period));
    put(r, "drift_ns", (double)(span - (served[n - 1] - served[0])));
    free(served);
    put(r, "early", (double)count_negative(late, n));
    bh_csv_samples(r->name, "lateness", r->rep, late, n, 20000);
    bh_csv_samples(r->name, "period_error", r->rep, perr, n - 1, 20000);
    put_percentiles(r, "late_", late, n);
    put_percentiles(r, "perr_", perr, n - 1);
    free(late);
    free(perr);
    seconds = (double)length * 1e-9;
out:
    tb_destroy(s);
    free(t.starts);
    return seconds;
}

/* ---- interference ------------------------------------------------------ */

#define FAST_TASKS 8

static int sleepy_task(void *arg)
{
    bh_sleep_until(tb_monotonic_ns() + 50 * TB_MS);
    exp_one_done(arg);
    return 0;
}

static double interference(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    const int64_t period = TB_MS;
    int64_t length = (int64_t)bh.profile->interference_ms * TB_MS;
    struct rate_task t[FAST_TASKS];
    int64_t first[FAST_TASKS];
    tb_handle h[FAST_TASKS];
    for (int i = 0; i < FAST_TASKS; i++) {
        t[i].cap = (size_t)(length / period) + 1000;
        t[i].starts = xmalloc(t[i].cap * sizeof *t[i].starts);
        atomic_init(&t[i].n, 0);
    }
    struct exp e;
    exp_init(&e, 1);
    double seconds = -1;
    int64_t *late = NULL;
    struct tb_sched *s = start_sched(d, st);
    if (!s)
        goto out;
    int64_t t0 = tb_monotonic_ns();
    for (int i = 0; i < FAST_TASKS; i++) {
        /* phases spread over one period */
        int64_t delay = period + i * period / FAST_TASKS;
        first[i] = tb_monotonic_ns() + delay;
        int rc = tb_schedule_fixed_rate(s, delay, rate_run, &t[i], &h[i],
                                        period);
        if (rc) {
            tbb_skip(st, tb_strerror(rc));
            goto out;
        }
    }
    int rc = tb_schedule(s, 100 * TB_MS, sleepy_task, &e, NULL);
    if (rc) {
        tbb_skip(st, tb_strerror(rc));
        goto out;
    }
    bh_sleep_until(t0 + length);
    for (int i = 0; i < FAST_TASKS; i++)
        tb_cancel(s, h[i]);
    uint64_t slow = exp_wait(&e, tb_monotonic_ns() + 2 * TB_SEC);
    tb_destroy(s);
    s = NULL;
    if (!slow) {
        skip_ran(st, 0, 1);
        goto out;
    }
    size_t total = 0;
    for (int i = 0; i < FAST_TASKS; i++) {
        size_t n = atomic_load(&t[i].n);
        total += n < t[i].cap ? n : t[i].cap;
    }
    late = xmalloc((total ? total : 1) * sizeof *late);
    size_t k = 0, over = 0;
    bool skip = d->b->caps & TB_CAP_SKIP_MISSED;
    for (int i = 0; i < FAST_TASKS; i++) {
        size_t n = atomic_load(&t[i].n);
        if (n > t[i].cap)
            n = t[i].cap;
        int64_t *served = xmalloc((n ? n : 1) * sizeof *served);
        served_times(t[i].starts, n, first[i], period, skip, served);
        for (size_t j = 0; j < n; j++) {
            late[k] = t[i].starts[j] - served[j];
            over += late[k] > 10 * TB_MS;
            k++;
        }
        free(served);
    }
    /* runs planned before the cancel that never started count as missed:
     * a runner stalled past the end leaves them behind */
    int64_t planned = 0;
    for (int i = 0; i < FAST_TASKS; i++)
        planned += (t0 + length - first[i]) / period + 1;
    put(r, "runs", (double)k);
    put(r, "expected_runs", (double)planned);
    put(r, "missed", (double)(planned > (int64_t)k ? planned - (int64_t)k
                                                   : 0));
    put(r, "late_over_10ms", (double)over);
    put_lateness(r, late, k);
    seconds = (double)length * 1e-9;
out:
    tb_destroy(s);
    exp_fini(&e);
    for (int i = 0; i < FAST_TASKS; i++)
        free(t[i].starts);
    free(late);
    return seconds;
}

/* ---- burst and workers ----------------------------------------------- */

/* n probes counted by one expectation, and their lateness: what burst and
 * workers set up and free alike. */
struct batch {
    struct probe *p;
    int64_t *late;
    struct exp e;
};

/* Prepares the batch and starts the scheduler (NULL: skipped). */
static struct tb_sched *batch_start(struct batch *b, size_t n,
                                    const struct rt_def *d, tbb_state *st)
{
    b->p = xmalloc(n * sizeof *b->p);
    b->late = xmalloc(n * sizeof *b->late);
    exp_init(&b->e, n);
    return start_sched(d, st);
}

static void batch_fini(struct batch *b)
{
    exp_fini(&b->e);
    free(b->p);
    free(b->late);
}

static double burst(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    size_t n = (size_t)d->n;
    struct batch b;
    double seconds = -1;
    struct tb_sched *s = batch_start(&b, n, d, st);
    if (!s)
        goto out;
    int64_t tick = tick_of(s);
    /* room to submit them all before the deadline at 1 us per task */
    int64_t t0 = tb_monotonic_ns();
    int64_t deadline = t0 + 50 * TB_MS + (int64_t)n * TB_US;
    size_t after = 0;
    for (size_t i = 0; i < n; i++) {
        int64_t now = tb_monotonic_ns();
        b.p[i].e = &b.e;
        b.p[i].planned = deadline;
        after += now >= deadline;
        int rc = tb_schedule(s, deadline - now, probe_task, &b.p[i], NULL);
        if (rc) {
            tbb_skip(st, tb_strerror(rc));
            goto out;
        }
    }
    int64_t t1 = tb_monotonic_ns();
    uint64_t ran = exp_wait(&b.e, deadline + 2 * tick + 10 * TB_SEC +
                                    (int64_t)n * 10 * TB_US);
    if (ran < n) {
        skip_ran(st, ran, n);
        goto out;
    }
    int64_t last = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        b.late[i] = b.p[i].start - deadline;
        if (b.p[i].start > last)
            last = b.p[i].start;
    }
    put(r, "submit_ns_per_task", (double)(t1 - t0) / (double)n);
    put(r, "submitted_after_deadline", (double)after);
    put(r, "drain_ns", (double)(last - deadline));
    put_lateness(r, b.late, n);
    seconds = bh_seconds(t0, last);
out:
    tb_destroy(s);
    batch_fini(&b);
    return seconds;
}

/* ---- idle -------------------------------------------------------------- */

static int64_t cpu_ns(const struct rusage *u)
{
    return (int64_t)(u->ru_utime.tv_sec + u->ru_stime.tv_sec) * TB_SEC +
           (int64_t)(u->ru_utime.tv_usec + u->ru_stime.tv_usec) * TB_US;
}

static double idle(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    int64_t window = (int64_t)(bh.profile->idle_seconds * 1e9);
    struct tb_sched *s = start_sched(d, st);
    if (!s)
        return -1;
    int rc = tb_schedule(s, 60 * TB_SEC, noop_task, NULL, NULL);
    if (rc) {
        tbb_skip(st, tb_strerror(rc));
        tb_destroy(s);
        return -1;
    }
    /* threads settle into waiting */
    bh_sleep_until(tb_monotonic_ns() + 50 * TB_MS);
    struct rusage u0, u1;
    struct tb_stats s0, s1;
    tb_stats(s, &s0);
    getrusage(RUSAGE_SELF, &u0);
    int64_t t0 = tb_monotonic_ns();
    bh_sleep_until(t0 + window);
    int64_t t1 = tb_monotonic_ns();
    getrusage(RUSAGE_SELF, &u1);
    tb_stats(s, &s1);
    tb_destroy(s);
    double secs = (double)(t1 - t0) * 1e-9;
    long ctx = (u1.ru_nvcsw + u1.ru_nivcsw) - (u0.ru_nvcsw + u0.ru_nivcsw);
    put(r, "cpu_ns_per_s", (double)(cpu_ns(&u1) - cpu_ns(&u0)) / secs);
    put(r, "wakeups_per_s", (double)(s1.wakeups - s0.wakeups) / secs);
    put(r, "timed_waits_per_s",
        (double)(s1.timed_waits - s0.timed_waits) / secs);
    put(r, "ticks_per_s", (double)(s1.ticks - s0.ticks) / secs);
    put(r, "empty_ticks_per_s",
        (double)(s1.empty_ticks - s0.empty_ticks) / secs);
    put(r, "ctx_switches_per_s", (double)ctx / secs);
    return secs;
}

/* ---- workers ----------------------------------------------------------- */

static double workers(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    const int64_t spacing = 500 * TB_US;
    int64_t length = (int64_t)(bh.profile->workers_seconds * 1e9);
    size_t n = (size_t)(length / spacing);
    struct batch b;
    double seconds = -1;
    struct tb_sched *s = batch_start(&b, n, d, st);
    if (!s)
        goto out;
    uint64_t rng = bh_seed_for(d->name, d->n);
    int64_t tick = tick_of(s);
    bh_sleep_until(tb_monotonic_ns() + 20 * TB_MS);
    struct rusage u0, u1;
    struct tb_stats s0, s1;
    tb_stats(s, &s0);
    getrusage(RUSAGE_SELF, &u0);
    int64_t t0 = tb_monotonic_ns();
    for (size_t i = 0; i < n; i++) {
        bh_sleep_until(t0 + (int64_t)i * spacing);
        int64_t delay = bh_uniform(&rng, TB_MS, 10 * TB_MS);
        b.p[i].e = &b.e;
        b.p[i].planned = tb_monotonic_ns() + delay;
        int rc = tb_schedule(s, delay, probe_task, &b.p[i], NULL);
        if (rc) {
            tbb_skip(st, tb_strerror(rc));
            goto out;
        }
    }
    uint64_t ran = exp_wait(&b.e, tb_monotonic_ns() + 10 * TB_MS + 2 * tick +
                                    2 * TB_SEC);
    int64_t t1 = tb_monotonic_ns();
    getrusage(RUSAGE_SELF, &u1);
    tb_stats(s, &s1);
    if (ran < n) {
        skip_ran(st, ran, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        b.late[i] = b.p[i].start - b.p[i].planned;
    long ctx = (u1.ru_nvcsw + u1.ru_nivcsw) - (u0.ru_nvcsw + u0.ru_nivcsw);
    put(r, "tasks", (double)n);
    put(r, "timed_waits_per_task",
        (double)(s1.timed_waits - s0.timed_waits) / (double)n);
    put(r, "wakeups_per_task", (double)(s1.wakeups - s0.wakeups) / (double)n);
    put(r, "ctx_switches_per_task", (double)ctx / (double)n);
    put(r, "cpu_ns_per_task", (double)(cpu_ns(&u1) - cpu_ns(&u0)) /
                                  (double)n);
    put_lateness(r, b.late, n);
    seconds = bh_seconds(t0, t1);
out:
    tb_destroy(s);
    batch_fini(&b);
    return seconds;
}

/* ---- producers --------------------------------------------------------- */

/* Holds producer threads until all exist, so they start together. */
struct gate {
    pthread_mutex_t lock;
    pthread_cond_t open_cond;
    bool open;
};

struct producer {
    pthread_t thread;
    struct tb_sched *s;
    struct probe *p;
    int64_t *delay;
    size_t n;
    int64_t begin, end;
    int rc;
    struct gate *gate;
};

static void *produce(void *arg)
{
    struct producer *q = arg;
    pthread_mutex_lock(&q->gate->lock);
    while (!q->gate->open)
        pthread_cond_wait(&q->gate->open_cond, &q->gate->lock);
    pthread_mutex_unlock(&q->gate->lock);
    q->begin = tb_monotonic_ns();
    for (size_t i = 0; i < q->n && !q->rc; i++) {
        q->p[i].planned = tb_monotonic_ns() + q->delay[i];
        q->rc = tb_schedule(q->s, q->delay[i], probe_task, &q->p[i], NULL);
    }
    q->end = tb_monotonic_ns();
    return NULL;
}

static double producers(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    int np = d->producers;
    size_t per = (size_t)d->n, n = per * (size_t)np;
    uint64_t rng = bh_seed_for(d->name, d->n);
    struct probe *p = xmalloc(n * sizeof *p);
    int64_t *delay = xmalloc(n * sizeof *delay);
    int64_t *late = xmalloc(n * sizeof *late);
    struct producer q[4];
    struct gate gate = {.open = false};
    struct exp e;
    exp_init(&e, n);
    double seconds = -1;
    for (size_t i = 0; i < n; i++) {
        delay[i] = bh_draw(BH_SHORT, &rng);
        p[i].e = &e;
    }
    struct tb_sched *s = start_sched(d, st);
    if (!s)
        goto out;
    int64_t tick = tick_of(s);
    pthread_mutex_init(&gate.lock, NULL);
    pthread_cond_init(&gate.open_cond, NULL);
    bool started[4] = {false, false, false, false};
    for (int i = 0; i < np; i++) {
        q[i] = (struct producer){.s = s, .p = p + (size_t)i * per,
                                 .delay = delay + (size_t)i * per, .n = per,
                                 .gate = &gate};
        started[i] = pthread_create(&q[i].thread, NULL, produce, &q[i]) == 0;
        if (!started[i])
            q[i].rc = TB_ENOMEM;
    }
    pthread_mutex_lock(&gate.lock);
    gate.open = true;
    pthread_cond_broadcast(&gate.open_cond);
    pthread_mutex_unlock(&gate.lock);
    for (int i = 0; i < np; i++)
        if (started[i])
            pthread_join(q[i].thread, NULL);
    pthread_mutex_destroy(&gate.lock);
    pthread_cond_destroy(&gate.open_cond);
    int64_t begin = INT64_MAX, end = INT64_MIN;
    for (int i = 0; i < np; i++) {
        if (q[i].rc) {
            tbb_skip(st, tb_strerror(q[i].rc));
            goto out;
        }
        begin = q[i].begin < begin ? q[i].begin : begin;
        end = q[i].end > end ? q[i].end : end;
    }
    uint64_t ran = exp_wait(&e, tb_monotonic_ns() + bh_workloads[BH_SHORT].hi +
                                    2 * tick + 5 * TB_SEC);
    if (ran < n) {
        skip_ran(st, ran, n);
        goto out;
    }
    for (size_t i = 0; i < n; i++)
        late[i] = p[i].start - p[i].planned;
    double secs = (double)(end - begin) * 1e-9;
    put(r, "producers", (double)np);
    put(r, "schedules_per_s", (double)n / secs);
    put_lateness(r, late, n);
    seconds = secs;
out:
    tb_destroy(s);
    exp_fini(&e);
    free(p);
    free(delay);
    free(late);
    return seconds;
}

/* ---- failing ----------------------------------------------------------- */

#define FAIL_TASKS 10
#define FAIL_AT 3 /* 1-based: the task due at 3 ms fails */

struct fail_task {
    int id;
    _Atomic int ran;
    struct exp *e;
};

static int fail_run(void *arg)
{
    struct fail_task *f = arg;
    atomic_fetch_add_explicit(&f->ran, 1, memory_order_relaxed);
    exp_one_done(f->e);
    return f->id == FAIL_AT;
}

static double failing(struct rt *r, tbb_state *st)
{
    const struct rt_def *d = r->d;
    struct fail_task f[FAIL_TASKS];
    struct exp e;
    exp_init(&e, FAIL_TASKS);
    double seconds = -1;
    struct tb_sched *s = start_sched(d, st);
    if (!s)
        goto out;
    int64_t tick = tick_of(s);
    struct tb_config c;
    tb_sched_config(s, &c);
    int64_t t0 = tb_monotonic_ns();
    for (int i = 0; i < FAIL_TASKS; i++) {
        f[i].id = i + 1;
        atomic_init(&f[i].ran, 0);
        f[i].e = &e;
        int rc = tb_schedule(s, (i + 1) * TB_MS, fail_run, &f[i], NULL);
        if (rc) {
            tbb_skip(st, tb_strerror(rc));
            goto out;
        }
    }
    /* every task that will run has run by then, on any backend here: the
     * last deadline, two ticks, and half a second of margin */
    exp_wait(&e, t0 + FAIL_TASKS * TB_MS + 2 * tick + TB_SEC / 2);
    int accepted = tb_schedule(s, TB_MS, noop_task, NULL, NULL) == TB_OK;
    struct tb_stats stats;
    tb_stats(s, &stats);
    tb_destroy(s); /* joins the runners: no run is still counting */
    s = NULL;
    seconds = bh_seconds(t0, tb_monotonic_ns());
    int before = 0, after = 0;
    for (int i = 0; i < FAIL_TASKS; i++) {
        int ran = atomic_load_explicit(&f[i].ran, memory_order_relaxed);
        if (i + 1 < FAIL_AT)
            before += ran;
        else if (i + 1 > FAIL_AT)
            after += ran;
    }
    put(r, "runners", (double)c.threads);
    put(r, "after", (double)(FAIL_TASKS - FAIL_AT));
    put(r, "ran_after", (double)after);
    put(r, "ran_before", (double)before);
    put(r, "accepted_after", (double)accepted);
    put(r, "failed", (double)stats.failed);
out:
    tb_destroy(s);
    exp_fini(&e);
    return seconds;
}

/* ---- The shim side ----------------------------------------------------- */

static void *rt_setup(void *ctx, tbb_state *st)
{
    const struct rt_def *d = ctx;
    struct rt *r = xmalloc(sizeof *r);
    r->d = d;
    snprintf(r->name, sizeof r->name, "%s/N:%lld", d->name,
             (long long)tbb_arg(st, 0));
    return r;
}

static double rt_batch(void *inst, tbb_state *st, int64_t n)
{
    struct rt *r = inst;
    double total = 0;
    for (int64_t i = 0; i < n; i++) {
        double (*run)(struct rt *, tbb_state *) = NULL;
        switch (r->d->kind) {
        case K_LATENESS: run = lateness; break;
        case K_JITTER: run = jitter; break;
        case K_INTERFERENCE: run = interference; break;
        case K_BURST: run = burst; break;
        case K_IDLE: run = idle; break;
        case K_WORKERS: run = workers; break;
        case K_PRODUCERS: run = producers; break;
        case K_FAILING: run = failing; break;
        }
        r->ncounters = 0;
        double secs = run(r, st);
        if (secs < 0 || tbb_failed(st))
            return -1;
        total += secs;
    }
    return total;
}

static void rt_report(void *inst, tbb_state *st)
{
    struct rt *r = inst;
    for (size_t i = 0; i < r->ncounters; i++)
        tbb_counter(st, r->counters[i].name, r->counters[i].value,
                    TBB_C_PLAIN);
    r->rep++;
}

static const struct tbb_ops rt_ops = {rt_setup, rt_batch, rt_report, free};

/* ---- Registration ------------------------------------------------------ */

static const char *const kind_names[] = {
    [K_LATENESS] = "lateness", [K_JITTER] = "jitter",
    [K_INTERFERENCE] = "interference", [K_BURST] = "burst",
    [K_IDLE] = "idle", [K_WORKERS] = "workers",
    [K_PRODUCERS] = "producers", [K_FAILING] = "failing",
};

/* Registers one experiment family; `wait` picks the floor when b is NULL. */
static void add_exp(enum kind kind, const struct tb_backend *b,
                    const char *workload, const struct bh_config *c,
                    int64_t n, int producers_count, long slack, int wait)
{
    struct rt_def *d = bh_keep(xmalloc(sizeof *d));
    d->kind = kind;
    d->b = b;
    d->c = *c;
    d->n = n;
    d->producers = producers_count;
    d->slack = slack;
    d->wait = wait;
    bh_name(d->name, sizeof d->name, kind_names[kind],
            b ? b->name : floor_names[wait], workload, c->label);
    /* no memory canary: an experiment's own threads (and a wheel's tick
     * thread on the other core) slowed the reading after one in five
     * repetitions of the 9f44775 report, and redoing those cost 215 s */
    tbb_bench *f = tbb_register(d->name, &rt_ops, d,
                                TBB_MANUAL_TIME | TBB_REUSE | TBB_NO_CANARY);
    static const char *const arg_names[] = {"N"};
    tbb_arg_names(f, 1, arg_names);
    tbb_args(f, 1, &n);
    tbb_iterations(f, 1);
    tbb_repetitions(f, bh.profile->runtime_repetitions);
    tbb_unit(f, TBB_MS);
}

static void add(enum kind kind, const struct tb_backend *b,
                const char *workload, const struct bh_config *c, int64_t n,
                int producers_count, long slack)
{
    add_exp(kind, b, workload, c, n, producers_count, slack, FLOOR_CONDVAR);
}

/* The configurations of backend b in the runtime series. */
static size_t runtime_configs(const struct tb_backend *b, unsigned flags,
                              int threads, struct bh_config out[])
{
    struct tb_config base = {0};
    base.clock = TB_CLOCK_MONOTONIC;
    base.flags = flags;
    base.threads = threads;
    return bh_configs(b, BH_SHORT, &base, bh.profile->orig_runtime, false,
                      out);
}

void bh_register_runtime(void)
{
    const struct bh_profile *p = bh.profile;
    struct bh_config cs[BH_MAX_CONFIGS];
    static const long slacks[] = {0, 1};
    for (int wait = FLOOR_CONDVAR; wait <= FLOOR_NANOSLEEP; wait++)
        for (size_t k = 0; k < 2; k++) {
            struct bh_config floor = {.label = ""};
            bh_label_add(&floor, "slack", slacks[k] ? "1ns" : "default");
            add_exp(K_LATENESS, NULL, "light", &floor, 0, 0, slacks[k], wait);
        }
    for (size_t i = 0; i < bh.nbackends; i++) {
        const struct tb_backend *b = bh.backends[i];
        char key[64], fv[96];
        const char *fl = floor_wait_of(b);
        snprintf(key, sizeof key, "floor_of.%s", b->name);
        snprintf(fv, sizeof fv, "%s%s", fl,
                 b->caps & TB_CAP_WAIT_NANOSLEEP
                     ? " (clock_nanosleep, TIMER_ABSTIME)"
                     : " (pthread_cond_timedwait, CLOCK_MONOTONIC)");
        tbb_context(key, fv);
        size_t nc = runtime_configs(b, 0, 0, cs);
        for (size_t j = 0; j < nc; j++) {
            for (size_t k = 0; k < 2; k++) {
                struct bh_config c = cs[j];
                bh_label_add(&c, "slack", slacks[k] ? "1ns" : "default");
                add(K_LATENESS, b, "light", &c, 0, 0, slacks[k]);
                if (!slacks[k])
                    add(K_LATENESS, b, "loaded", &c, p->loaded_pending, 0, 0);
            }
            add(K_JITTER, b, "rate1ms", &cs[j], 1, 0, 0);
            /* the same with the worker's sleep exact to the ns, beside
             * Netty's whole milliseconds (TB_CAP_SLEEP_MS), to show the
             * rounding's share of the lateness and the jitter */
            if (b->caps & TB_CAP_SLEEP_MS) {
                struct bh_config x = cs[j];
                x.cfg.flags |= TB_F_EXACT_SLEEP;
                bh_label_add(&x, "sleep", "exact");
                struct bh_config xs = x;
                bh_label_add(&xs, "slack", "default");
                add(K_LATENESS, b, "light", &xs, 0, 0, 0);
                add(K_JITTER, b, "rate1ms", &x, 1, 0, 0);
            }
            for (size_t k = 0; k < 2 && p->burst[k]; k++)
                add(K_BURST, b, "burst", &cs[j], p->burst[k], 0, 0);
            add(K_IDLE, b, "far", &cs[j], 1, 0, 0);
            for (int np = 1; np <= 4; np *= 2) {
                struct bh_config c = cs[j];
                char v[12]; /* any int, so no -Wformat-truncation */
                snprintf(v, sizeof v, "%d", np);
                bh_label_add(&c, "producers", v);
                add(K_PRODUCERS, b, "short", &c, p->producer_tasks, np, 0);
            }
        }
        for (int threads = 1; threads <= 4; threads *= 4) {
            nc = runtime_configs(b, 0, threads, cs);
            for (size_t j = 0; j < nc; j++) {
                char v[12]; /* any int, so no -Wformat-truncation */
                snprintf(v, sizeof v, "%d", threads);
                bh_label_add(&cs[j], "threads", v);
                add(K_INTERFERENCE, b, "mixed", &cs[j], FAST_TASKS, 0, 0);
                /* one runner everywhere: STPE with one thread against
                 * Timer on a failing task */
                if (threads == 1)
                    add(K_FAILING, b, "ten", &cs[j], FAIL_TASKS, 0, 0);
            }
        }
        /* leader=on|off only where the flag changes something */
        bool leaderless = bh_honours_no_leader(b);
        for (int off = 0; off <= (leaderless ? 1 : 0); off++) {
            nc = runtime_configs(b, off ? TB_F_NO_LEADER : 0, 4, cs);
            for (size_t j = 0; j < nc; j++) {
                bh_label_add(&cs[j], "threads", "4");
                if (leaderless)
                    bh_label_add(&cs[j], "leader", off ? "off" : "on");
                add(K_WORKERS, b, "steady", &cs[j], 4, 0, 0);
            }
        }
    }
}
