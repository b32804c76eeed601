/*
 * bench/libs.c — the event-loop libraries C programs link (libs/tblib.h,
 * issue 40) measured on the real clock, on the micro's workloads and N:
 * the `libs` harness of timerbench-bench.  Result names keep the micro's
 * grammar, <op>/<library>/<workload>/series=lib[,strategy=..]/N:<n>.
 *
 * Operations, each timed per operation, the loop never blocking:
 *   insert    one start() into a loop holding N pending timers, delays
 *             uniform 1 ms - 1000 s (workload uniform), the loop not
 *             running, the timers taken in turn from a spare region of
 *             N/4; what was inserted is stopped again untimed;
 *   cancel    one stop(), in random order, of N pending (uniform); the
 *             stopped ones are started again untimed;
 *   expire    N timers due at once: started untimed with delays uniform
 *             1-5 ms (workload due), the harness sleeps until every one
 *             is due, then the loop is run without blocking until all N
 *             have fired, timed on the thread's CPU clock (`passes`: how
 *             many non-blocking runs that took: one for a library that
 *             runs everything due in one iteration, N for sd-event, which
 *             dispatches one source per iteration);
 *   timeouts  one server operation on a ring of N connections: stop the
 *             connection's previous timeout with probability 0.95 (else
 *             leave it to fire), start a new one of the fixed timeout
 *             T = max(20 ms, 4 us x N); every stretch of clamp(N/8, 1,
 *             1024) operations is followed by one non-blocking run of the
 *             loop, both timed (`caller_ns`, `loop_ns` apart).  The ring
 *             is paced on the real clock, an operation due every
 *             T / (2N), so each connection is revisited every T / 2 and
 *             about 5 % of the timeouts fire (`fired_share`), as in the
 *             C micro's timeouts and the JVM harness's (issue 37); an
 *             operation behind its time is done at once and the lag kept
 *             (`lag_max_ns`).  Each connection has three timers used in
 *             turn, so the one left to fire (due T after its start) has
 *             fired long before its turn comes again 1.5 T later (one
 *             still pending then is stopped: `stale_per_kop`);
 *   reschedule  the idle timeout (workload idle): N connections, each
 *             with one pending timer of the idle timeout T (as above); a
 *             request on a random connection, one due every 0.3 T / N, so
 *             each sees a request every 0.3 T on average, as in the
 *             micro's reschedule (3 s against 10 s), and e^-10/3 (3.6 %)
 *             of the gaps exceed T (a real timeout: the connection is
 *             re-armed as a new one in the callback).  strategy=restart:
 *             stop() and start(); strategy=again: the library's restart
 *             in place; strategy=lazy: the request only stores its time,
 *             and the timer, left to fire, re-arms itself in its callback
 *             for the remainder (libev's manual, "Be smart about
 *             timeouts", strategy 3).  A non-blocking run of the loop
 *             follows each stretch, timed: lazy's re-arms are paid there
 *             (`rearms_per_kop`, `timeouts_per_kop`);
 *   lateness  (real time) one loop: a timer every 0.5 ms arms a probe
 *             of 1-10 ms (the runtime harness's light workload), lateness
 *             = the probe's callback time - (time read before start() +
 *             delay); a negative value is an early fire (`early`); the
 *             run ends at the profile's light_samples or after twice the
 *             time they take at that pace, at least 2 s (`count` says how
 *             many it has: sd-event's default accuracy window of 250 ms
 *             batches the submitter's wake-ups too);
 *   idle      (real time) one timer 60 s away and the loop run for the
 *             profile's idle window: the thread's context switches (its
 *             wake-ups) and CPU time per second.
 *
 * Every result carries `handle_bytes` (the timer the caller holds) and,
 * where N timers were pending, `lib_bytes_per_timer` (what the library
 * allocated for them, mallinfo2's count over N).  A library whose loop
 * will not open, or that refuses a timer, fails its results with the
 * library's reason and the run goes on; each library is first tried in a
 * child process (probe()), since some end the process when they cannot
 * initialise, and one that fails there has every result failed with what
 * it said (context `lib_failed.<name>`).  The paced operations and expire
 * run at N up to the profile's libs_slow_max_n: the paced ones' warm-up
 * and repetitions take T / 2 of wall time each (2 s at 10^6), and expire
 * at 10^6 takes seconds a batch in sd-event (one dispatch, and a
 * timerfd_settime, per iteration) and GLib.  expire runs a fixed number
 * of batches, 8192 fires' worth (1 to 16); lateness and idle at most 3
 * repetitions.
 */
#include <dirent.h>
#include <errno.h>
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "tblib.h"

enum lop { L_INSERT, L_CANCEL, L_EXPIRE, L_TIMEOUTS, L_RESCHEDULE,
           L_LATENESS, L_IDLE };
static const char *const lop_names[] = {"insert", "cancel", "expire",
                                        "timeouts", "reschedule",
                                        "lateness", "idle"};
static const char *const lop_workloads[] = {"uniform", "uniform", "due",
                                            "timeouts", "idle", "light",
                                            "far"};

enum strategy { S_NONE, S_RESTART, S_AGAIN, S_LAZY };
static const char *const strategy_names[] = {"", "restart", "again",
                                             "lazy"};

/* One registered family. */
struct ldef {
    enum lop op;
    enum strategy strategy;
    const struct tblib *lib;
    const char *failed;      /* why the library cannot run here, or NULL */
    char name[192];
};

struct lm;

/* The callback argument of one timer slot. */
struct larg {
    struct lm *m;
    uint32_t i;
};

/* One instance. */
struct lm {
    const struct ldef *d;
    const struct tblib *lib;
    int64_t n;
    int64_t batch;
    uint64_t rng;
    void *loop;
    char *timers;            /* nslots timers of `stride` bytes */
    size_t stride, nslots, ninit;
    struct larg *args;
    uint8_t *pending;        /* 1 while the slot's timer is armed */
    uint32_t *perm;
    size_t perm_pos;
    size_t nspare, spare_pos; /* insert: the spare region and its window */
    int64_t *delays;
    uint8_t *coin;           /* timeouts: stop the previous one (p 0.95) */
    uint32_t *pick;          /* reschedule: the batch's connections */
    int64_t *last;           /* reschedule: each connection's last request */
    int64_t t_fixed;         /* timeouts, reschedule: T */
    int64_t spacing;         /* the paced ring's ns between operations */
    int64_t origin;          /* time the ring's operation 0 was due */
    uint64_t k;              /* operations of the ring done, warm-up too */
    int64_t now;             /* the clock read before the stretch */
    int failed_rc;           /* a start() in a callback that failed */
    /* counted since the last report */
    uint64_t ops, fired, timeouts, rearms, redone, passes, batches, stale;
    int64_t caller_ns, loop_ns, lag_max;
    double lib_bytes;        /* per pending timer, at setup (-1: none) */
    /* lateness */
    int64_t *late, *intended;
    size_t nlate, want;
    int64_t end;             /* the run stops here with what it has */
};

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fprintf(stderr, "timerbench-bench: out of memory\n");
        abort();
    }
    return p;
}


static int64_t switches_now(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (int64_t)(ru.ru_nvcsw + ru.ru_nivcsw);
}


/* The paced operations' fixed timeout at N: 20 ms, or 4 us per connection
 * when that is longer (so that the ring's pace, T / 2N, stays above what
 * one operation costs at every N). */
static int64_t paced_timeout(int64_t n)
{
    int64_t t = 4 * TB_US * n;
    return t > 20 * TB_MS ? t : 20 * TB_MS;
}

static void *timer_at(const struct lm *m, size_t i)
{
    return m->timers + i * m->stride;
}

static double fail_lib(tbb_state *st, const char *what, int rc)
{
    char msg[160];
    snprintf(msg, sizeof msg, "%s: %s", what, strerror(rc < 0 ? -rc : rc));
    tbb_skip(st, msg);
    return -1;
}

/* ---- Callbacks --------------------------------------------------------- */

static int arm(struct lm *m, uint32_t i, int64_t delay)
{
    int rc = m->lib->start(m->loop, timer_at(m, i), delay);
    if (rc == 0)
        m->pending[i] = 1;
    return rc;
}

/* Every timer's callback: what a fire means depends on the operation. */
static void on_fire(void *arg)
{
    struct larg *a = arg;
    struct lm *m = a->m;
    m->pending[a->i] = 0;
    m->fired++;
    if (m->d->op != L_RESCHEDULE)
        return;
    int64_t delay = m->t_fixed;
    if (m->d->strategy == S_LAZY) {
        int64_t now = tb_monotonic_ns();
        int64_t left = m->last[a->i] + m->t_fixed - now;
        if (left > 0) {
            delay = left; /* active since: re-arm for the remainder */
            m->rearms++;
        } else {
            m->timeouts++;
            m->last[a->i] = now;
        }
    } else {
        m->timeouts++;
        m->last[a->i] = tb_monotonic_ns();
    }
    int rc = arm(m, a->i, delay); /* a new connection, or the remainder */
    if (rc && !m->failed_rc)
        m->failed_rc = rc;
}

/* ---- Set-up ------------------------------------------------------------ */

static void lm_teardown(void *inst)
{
    struct lm *m = inst;
    if (m->loop) {
        for (size_t i = 0; i < m->ninit; i++)
            m->lib->fini(m->loop, timer_at(m, i));
        m->lib->close(m->loop);
    }
    free(m->timers);
    free(m->args);
    free(m->pending);
    free(m->perm);
    free(m->delays);
    free(m->coin);
    free(m->pick);
    free(m->last);
    free(m->late);
    free(m->intended);
    free(m);
}

static void shuffle(struct lm *m)
{
    for (size_t i = (size_t)m->n - 1; i > 0; i--) {
        size_t j = (size_t)(bh_rand(&m->rng) % (i + 1));
        uint32_t t = m->perm[i];
        m->perm[i] = m->perm[j];
        m->perm[j] = t;
    }
    m->perm_pos = 0;
}

/* Sleeps (or, for less than 50 us, spins) until time t. */
static void wait_until(int64_t t)
{
    int64_t now = tb_monotonic_ns();
    if (t - now > 50 * TB_US)
        bh_sleep_until(t);
    else
        while (tb_monotonic_ns() < t)
            ;
}

static double run_ring(struct lm *m, tbb_state *st, int64_t n, bool timed);
static void light_fire(void *arg);
static void idle_fire(void *arg);

/* Descriptors a loop may need (epoll, eventfd, timerfd, signal pipes):
 * libevent exits and GLib aborts when they run out while opening one, so
 * the harness stops short of that with a reason of its own. */
#define LOOP_FDS 16

static void lm_teardown(void *inst);

/* True when a loop can still be opened: the descriptors in use (the
 * loops of cached instances hold theirs) leave LOOP_FDS under the limit. */
static bool fds_left(struct lm *m, tbb_state *st)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return true;
    size_t used = 0;
    DIR *dir = opendir("/proc/self/fd");
    if (!dir)
        return true;
    while (readdir(dir))
        used++;
    closedir(dir);
    if (used + LOOP_FDS <= (size_t)rl.rlim_cur)
        return true;
    char msg[200];
    snprintf(msg, sizeof msg, "%s: too few file descriptors left to open a "
             "loop (%zu in use of the limit %llu)", m->lib->name, used,
             (unsigned long long)rl.rlim_cur);
    tbb_skip(st, msg);
    lm_teardown(m);
    return false;
}

static void *lm_setup(void *ctx, tbb_state *st)
{
    const struct ldef *d = ctx;
    if (d->failed) {
        tbb_skip(st, d->failed);
        return NULL;
    }
    struct lm *m = xcalloc(1, sizeof *m);
    m->d = d;
    m->lib = d->lib;
    m->n = tbb_arg(st, 0);
    m->rng = bh_seed_for(d->name, m->n);
    m->lib_bytes = -1;
    const bool paced = d->op == L_TIMEOUTS || d->op == L_RESCHEDULE;
    m->t_fixed = paced ? paced_timeout(m->n) : 0;
    if (!fds_left(m, st))
        return NULL;
    struct tblib_options o = {.fixed_delay_ns = m->t_fixed};
    char err[160] = "";
    m->loop = m->lib->open(&o, err, sizeof err);
    if (!m->loop) {
        char msg[200];
        snprintf(msg, sizeof msg, "%s will not open a loop: %s",
                 m->lib->name, err[0] ? err : "no reason given");
        tbb_skip(st, msg);
        lm_teardown(m);
        return NULL;
    }
    switch (d->op) {
    case L_INSERT:
    case L_CANCEL:
        m->batch = bh_clamp_batch(m->n);
        /* insert's timers come from a spare region of N/4 + a batch,
         * a window of it per batch in turn: as the micro's inserts take
         * records from a pool that a lazy backend's last N/4 cancelled
         * tasks still hold, so neither side inserts the same few records,
         * hot in the cache, batch after batch */
        m->nspare = (size_t)(m->n / 4 + m->batch);
        m->nslots = (size_t)m->n + m->nspare;
        break;
    case L_EXPIRE:
        m->batch = m->n;
        m->nslots = (size_t)m->n;
        break;
    case L_TIMEOUTS:
        m->batch = bh_clamp_batch(m->n);
        m->nslots = 3 * (size_t)m->n;
        break;
    case L_RESCHEDULE:
        m->batch = bh_clamp_batch(m->n);
        m->nslots = (size_t)m->n;
        break;
    case L_LATENESS:
        m->batch = 1;
        m->nslots = 65; /* the submitter and a ring of 64 probes */
        break;
    case L_IDLE:
        m->batch = 1;
        m->nslots = 2;
        break;
    }
    tbb_set_batch(st, m->batch);
    m->stride = (m->lib->timer_size + 15) & ~(size_t)15;
    m->timers = xcalloc(m->nslots, m->stride);
    m->args = xcalloc(m->nslots, sizeof *m->args);
    m->pending = xcalloc(m->nslots, 1);
    m->delays = xcalloc((size_t)m->batch, sizeof *m->delays);
    m->coin = xcalloc((size_t)m->batch, 1);
    m->perm = xcalloc((size_t)m->n, sizeof *m->perm);
    for (uint32_t i = 0; i < (uint32_t)m->n; i++)
        m->perm[i] = i;
    /* what the library allocates per timer: from before init to after N
     * are pending (the caller's own storage is allocated already) */
    tblib_fire_fn fn = d->op == L_LATENESS ? light_fire
                       : d->op == L_IDLE   ? idle_fire
                                           : on_fire;
    size_t mem0 = bh_malloc_in_use();
    for (size_t i = 0; i < m->nslots; i++) {
        m->args[i] = (struct larg){m, (uint32_t)i};
        int rc = m->lib->init(m->loop, timer_at(m, i), fn, &m->args[i]);
        if (rc) {
            fail_lib(st, "init", rc);
            lm_teardown(m);
            return NULL;
        }
        m->ninit++;
    }
    m->lib->update_now(m->loop);
    if (d->op == L_INSERT || d->op == L_CANCEL) {
        for (uint32_t i = 0; i < (uint32_t)m->n; i++) {
            int rc = arm(m, i, bh_draw(BH_UNIFORM, &m->rng));
            if (rc) {
                fail_lib(st, "start (holding N)", rc);
                lm_teardown(m);
                return NULL;
            }
        }
        m->lib_bytes = (double)(bh_malloc_in_use() - mem0) / (double)m->n;
        shuffle(m);
    } else if (paced) {
        /* timeouts: each connection revisited every T / 2; reschedule: a
         * connection's requests 0.3 T apart on average, as the micro's
         * 3 s against its 10 s idle timeout (e^-10/3, 3.6 %, of the gaps
         * time out) */
        m->spacing = d->op == L_TIMEOUTS ? m->t_fixed / (2 * m->n)
                                         : 3 * m->t_fixed / (10 * m->n);
        if (m->spacing < 1)
            m->spacing = 1;
        if (d->op == L_RESCHEDULE) {
            m->pick = xcalloc((size_t)m->batch, sizeof *m->pick);
            m->last = xcalloc((size_t)m->n, sizeof *m->last);
            /* each connection's last request as long ago as in the
             * steady state (exponential, mean 0.3 T, a connection idle
             * for T having just been re-armed as new), so that their
             * timeouts do not all fall due together */
            int64_t now = tb_monotonic_ns();
            for (uint32_t i = 0; i < (uint32_t)m->n; i++) {
                double u = 1.0 - bh_unit(&m->rng);
                int64_t age = (int64_t)(-0.3 * (double)m->t_fixed * log(u));
                int64_t left = age < m->t_fixed ? m->t_fixed - age : m->t_fixed;
                if (m->lib->fixed_only) {
                    /* one delay only: the connections arrive one by one
                     * over T instead */
                    wait_until(now + (int64_t)i * (m->t_fixed / m->n));
                    left = m->t_fixed;
                    m->lib->update_now(m->loop);
                }
                m->last[i] = tb_monotonic_ns() - (m->t_fixed - left);
                int rc = arm(m, i, left);
                if (rc) {
                    fail_lib(st, "start (holding N)", rc);
                    lm_teardown(m);
                    return NULL;
                }
            }
            m->lib_bytes = (double)(bh_malloc_in_use() - mem0) / (double)m->n;
        }
        /* warm-up, untimed: timeouts' ring for one T, so every
         * connection has been revisited twice and the first timeouts left
         * have fired; reschedule's requests for 1.2 T */
        m->origin = tb_monotonic_ns();
        if (run_ring(m, st, d->op == L_TIMEOUTS ? 2 * m->n : 4 * m->n, false) < 0) {
            lm_teardown(m);
            return NULL;
        }
        if (d->op == L_TIMEOUTS)
            m->lib_bytes = (double)(bh_malloc_in_use() - mem0) / (double)m->n;
    } else if (d->op == L_LATENESS) {
        m->want = (size_t)bh.profile->light_samples;
        m->late = xcalloc(m->want, sizeof *m->late);
        m->intended = xcalloc(m->nslots, sizeof *m->intended);
    }
    m->ops = m->fired = m->timeouts = m->rearms = m->passes = 0;
    m->caller_ns = m->loop_ns = m->lag_max = 0;
    m->stale = m->redone = m->batches = 0;
    return m;
}

/* ---- insert, cancel, expire -------------------------------------------- */

static double insert_batch(void *inst, tbb_state *st, int64_t n)
{
    struct lm *m = inst;
    for (int64_t i = 0; i < n; i++)
        m->delays[i] = bh_draw(BH_UNIFORM, &m->rng);
    void *const lp = m->loop;
    const struct tblib *lib = m->lib;
    if (m->spare_pos + (size_t)n > m->nspare)
        m->spare_pos = 0;
    const size_t base = (size_t)m->n + m->spare_pos;
    m->spare_pos += (size_t)n;
    int64_t sw = switches_now();
    int64_t t0 = tb_monotonic_ns();
    for (int64_t i = 0; i < n; i++) {
        int rc = lib->start(lp, timer_at(m, base + (size_t)i), m->delays[i]);
        if (rc)
            return fail_lib(st, "start", rc);
    }
    int64_t t1 = tb_monotonic_ns();
    if (switches_now() != sw) {
        m->redone++;
        tbb_discard(st);
    }
    for (int64_t i = 0; i < n; i++)
        lib->stop(lp, timer_at(m, base + (size_t)i));
    m->ops += (uint64_t)n;
    return bh_seconds(t0, t1);
}

static double cancel_batch(void *inst, tbb_state *st, int64_t n)
{
    struct lm *m = inst;
    if (m->perm_pos + (size_t)n > (size_t)m->n)
        shuffle(m);
    const uint32_t *slots = m->perm + m->perm_pos;
    m->perm_pos += (size_t)n;
    void *const lp = m->loop;
    const struct tblib *lib = m->lib;
    int64_t ok = 0;
    int64_t sw = switches_now();
    int64_t t0 = tb_monotonic_ns();
    for (int64_t i = 0; i < n; i++)
        ok += lib->stop(lp, timer_at(m, slots[i]));
    int64_t t1 = tb_monotonic_ns();
    if (switches_now() != sw) {
        m->redone++;
        tbb_discard(st);
    }
    if (ok != n) {
        tbb_skip(st, "a pending timer could not be stopped");
        return -1;
    }
    for (int64_t i = 0; i < n; i++) {
        int rc = arm(m, slots[i], bh_draw(BH_UNIFORM, &m->rng));
        if (rc)
            return fail_lib(st, "start", rc);
    }
    m->ops += (uint64_t)n;
    return bh_seconds(t0, t1);
}

static double expire_batch(void *inst, tbb_state *st, int64_t n)
{
    struct lm *m = inst;
    m->lib->update_now(m->loop);
    for (int64_t i = 0; i < n; i++) {
        int rc = arm(m, (uint32_t)i, bh_uniform(&m->rng, TB_MS, 5 * TB_MS));
        if (rc)
            return fail_lib(st, "start", rc);
    }
    /* every one due, with the library's rounding to its unit: counted from
     * the end of the arming, since the last timer armed is due up to 5 ms
     * after it was armed and a preempted arming can take longer than the
     * margin (GLib's expire once skipped with timers still pending after
     * the n + 64 passes below, which are soon spent once only the late
     * ones are left) */
    wait_until(tb_monotonic_ns() + 5 * TB_MS + m->lib->granularity_ns + TB_MS);
    uint64_t target = m->fired + (uint64_t)n, passes = 0;
    const uint64_t most = (uint64_t)n + 64;
    int64_t t0 = bh_cpu_now();
    while (m->fired < target && passes < most) {
        int rc = m->lib->run_nowait(m->loop);
        passes++;
        if (rc)
            return fail_lib(st, "run (non-blocking)", rc);
    }
    int64_t t1 = bh_cpu_now();
    if (m->fired < target) {
        tbb_skip(st, "timers due did not fire in non-blocking runs");
        return -1;
    }
    m->passes += passes;
    m->batches++;
    m->ops += (uint64_t)n;
    return bh_cpu_seconds(t0, t1);
}

/* ---- timeouts and reschedule: the paced ring --------------------------- */

/* One stretch of `n` ring operations from operation m->k, then one
 * non-blocking run of the loop.  Returns the ns of the operations and of
 * the run (*loop_ns), or a negative errno. */
static int64_t stretch(struct lm *m, int64_t n, int64_t *loop_ns)
{
    void *const lp = m->loop;
    const struct tblib *lib = m->lib;
    const enum strategy s = m->d->strategy;
    int64_t t0 = 0, t1 = 0;
    if (m->d->op == L_TIMEOUTS) {
        /* coin flips and slots untimed */
        uint64_t k = m->k;
        for (int64_t j = 0; j < n; j++)
            m->coin[j] = bh_unit(&m->rng) < 0.95;
        t0 = tb_monotonic_ns();
        for (int64_t j = 0; j < n; j++, k++) {
            uint32_t c = (uint32_t)(k % (uint64_t)m->n);
            uint32_t visit = (uint32_t)((k / (uint64_t)m->n) % 3);
            uint32_t prev = 3 * c + (visit + 2) % 3, next = 3 * c + visit;
            if (m->coin[j] && m->pending[prev]) {
                lib->stop(lp, timer_at(m, prev));
                m->pending[prev] = 0;
            }
            if (m->pending[next]) { /* left to fire, not fired yet */
                lib->stop(lp, timer_at(m, next));
                m->stale++;
            }
            int rc = lib->start(lp, timer_at(m, next), m->t_fixed);
            if (rc)
                return rc < 0 ? rc : -rc;
            m->pending[next] = 1;
        }
        t1 = tb_monotonic_ns();
    } else {
        for (int64_t j = 0; j < n; j++)
            m->pick[j] = (uint32_t)(bh_rand(&m->rng) % (uint64_t)m->n);
        m->now = tb_monotonic_ns();
        const int64_t now = m->now, t = m->t_fixed;
        t0 = tb_monotonic_ns();
        for (int64_t j = 0; j < n; j++) {
            uint32_t c = m->pick[j];
            int rc = 0;
            if (s == S_RESTART) {
                lib->stop(lp, timer_at(m, c));
                rc = lib->start(lp, timer_at(m, c), t);
            } else if (s == S_AGAIN) {
                rc = lib->again(lp, timer_at(m, c), t);
            }
            m->last[c] = now;
            if (rc)
                return rc < 0 ? rc : -rc;
            m->pending[c] = 1;
        }
        t1 = tb_monotonic_ns();
    }
    m->k += (uint64_t)n;
    int rc = lib->run_nowait(lp);
    int64_t t2 = tb_monotonic_ns();
    if (rc)
        return rc < 0 ? rc : -rc;
    if (m->failed_rc)
        return m->failed_rc < 0 ? m->failed_rc : -m->failed_rc;
    *loop_ns = t2 - t1;
    return t1 - t0;
}

/* n ring operations at the ring's pace, in stretches of m->batch; timed
 * or not (warm-up).  Returns the timed seconds or -1 after tbb_skip. */
static double run_ring(struct lm *m, tbb_state *st, int64_t n, bool timed)
{
    int64_t ns = 0;
    for (int64_t j0 = 0; j0 < n; j0 += m->batch) {
        int64_t w = n - j0 < m->batch ? n - j0 : m->batch;
        int64_t due = m->origin + (int64_t)m->k * m->spacing;
        int64_t lag = tb_monotonic_ns() - due;
        if (lag < 0)
            wait_until(due);
        else if (timed && lag > m->lag_max)
            m->lag_max = lag;
        int64_t sw = switches_now(), loop = 0;
        int64_t c = stretch(m, w, &loop);
        if (c < 0)
            return fail_lib(st, m->d->op == L_TIMEOUTS ? "timeouts"
                                                       : "reschedule",
                            (int)c);
        if (!timed)
            continue;
        if (switches_now() != sw)
            m->redone++; /* kept: the ring cannot be run again */
        ns += c + loop;
        m->caller_ns += c;
        m->loop_ns += loop;
    }
    if (timed)
        m->ops += (uint64_t)n;
    return (double)ns * 1e-9;
}

static double ring_batch(void *inst, tbb_state *st, int64_t n)
{
    return run_ring(inst, st, n, true);
}

/* ---- lateness and idle (real time) ------------------------------------- */

#define LIGHT_SPACING (TB_MS / 2)
/* A lateness run stops after twice the time its samples take at the
 * submitter's pace (at least 2 s), with the samples it has (`count`): a
 * loop that batches its wake-ups into a wide window (sd-event's default
 * accuracy, 250 ms) submits once per window and would otherwise take
 * minutes. */
#define LIGHT_BUDGET(want) \
    ((int64_t)(want) * 2 * LIGHT_SPACING > 2 * TB_SEC \
         ? (int64_t)(want) * 2 * LIGHT_SPACING : 2 * TB_SEC)

static double lateness_batch(void *inst, tbb_state *st, int64_t n)
{
    struct lm *m = inst;
    (void)n;
    m->nlate = 0;
    m->failed_rc = 0;
    for (size_t i = 0; i < m->nslots; i++)
        if (m->pending[i]) {
            m->lib->stop(m->loop, timer_at(m, i));
            m->pending[i] = 0;
        }
    /* slot 0 submits; its arg tells light_fire which it is */
    m->lib->update_now(m->loop);
    int rc = arm(m, 0, LIGHT_SPACING);
    if (rc)
        return fail_lib(st, "start", rc);
    int64_t t0 = tb_monotonic_ns();
    m->end = t0 + LIGHT_BUDGET(m->want);
    rc = m->lib->run(m->loop);
    int64_t t1 = tb_monotonic_ns();
    if (rc)
        return fail_lib(st, "run", rc);
    if (m->failed_rc)
        return fail_lib(st, "start (in a callback)", m->failed_rc);
    m->ops++;
    return bh_seconds(t0, t1);
}

/* lateness: the submitter (slot 0) re-arms itself and starts a probe in
 * the next free slot of 1..64; a probe records its lateness; the last
 * sample stops the loop. */
static void light_fire(void *arg)
{
    struct larg *a = arg;
    struct lm *m = a->m;
    int64_t now = tb_monotonic_ns();
    m->pending[a->i] = 0;
    if (a->i != 0) {
        if (m->nlate < m->want)
            m->late[m->nlate++] = now - m->intended[a->i];
        if (m->nlate == m->want || now > m->end) {
            for (size_t i = 0; i < m->nslots; i++)
                if (m->pending[i]) {
                    m->lib->stop(m->loop, timer_at(m, i));
                    m->pending[i] = 0;
                }
            m->lib->break_loop(m->loop);
        }
        return;
    }
    int rc = arm(m, 0, LIGHT_SPACING);
    for (uint32_t i = 1; rc == 0 && i < m->nslots; i++)
        if (!m->pending[i]) {
            int64_t delay = bh_uniform(&m->rng, TB_MS, 10 * TB_MS);
            m->intended[i] = tb_monotonic_ns() + delay;
            rc = arm(m, i, delay);
            break;
        }
    if (rc) {
        m->failed_rc = rc;
        m->lib->break_loop(m->loop);
    }
}

static void idle_fire(void *arg)
{
    struct larg *a = arg;
    a->m->pending[a->i] = 0;
    if (a->i == 1)
        a->m->lib->break_loop(a->m->loop);
}

static int64_t cpu_ns(const struct rusage *u)
{
    return ((int64_t)u->ru_utime.tv_sec + (int64_t)u->ru_stime.tv_sec) *
               TB_SEC +
           ((int64_t)u->ru_utime.tv_usec + (int64_t)u->ru_stime.tv_usec) *
               TB_US;
}

static double idle_batch(void *inst, tbb_state *st, int64_t n)
{
    struct lm *m = inst;
    (void)n;
    const int64_t window = (int64_t)(bh.profile->idle_seconds * 1e9);
    for (size_t i = 0; i < 2; i++)
        if (m->pending[i]) {
            m->lib->stop(m->loop, timer_at(m, i));
            m->pending[i] = 0;
        }
    m->lib->update_now(m->loop);
    int rc = arm(m, 0, 60 * TB_SEC);
    if (!rc)
        rc = arm(m, 1, window);
    if (rc)
        return fail_lib(st, "start", rc);
    struct rusage u0, u1;
    getrusage(RUSAGE_THREAD, &u0);
    int64_t t0 = tb_monotonic_ns();
    rc = m->lib->run(m->loop);
    int64_t t1 = tb_monotonic_ns();
    getrusage(RUSAGE_THREAD, &u1);
    if (rc)
        return fail_lib(st, "run", rc);
    double secs = (double)(t1 - t0) * 1e-9;
    /* the window's own end is one wake-up, not the idle loop's */
    long ctx = (u1.ru_nvcsw + u1.ru_nivcsw) - (u0.ru_nvcsw + u0.ru_nivcsw);
    tbb_counter(st, "wakeups_per_s", (double)(ctx > 0 ? ctx - 1 : 0) / secs,
                TBB_C_PLAIN);
    tbb_counter(st, "cpu_ns_per_s", (double)(cpu_ns(&u1) - cpu_ns(&u0)) / secs,
                TBB_C_PLAIN);
    m->ops++;
    return secs;
}

/* ---- Reports and registration ------------------------------------------ */

static void lm_report(void *inst, tbb_state *st)
{
    struct lm *m = inst;
    tbb_counter(st, "handle_bytes", (double)m->lib->timer_size, TBB_C_PLAIN);
    if (m->lib_bytes >= 0)
        tbb_counter(st, "lib_bytes_per_timer", m->lib_bytes, TBB_C_PLAIN);
    tbb_counter(st, "redone", (double)m->redone, TBB_C_PLAIN);
    double ops = m->ops ? (double)m->ops : 1;
    switch (m->d->op) {
    case L_EXPIRE:
        tbb_counter(st, "fired_per_op", (double)m->fired / ops, TBB_C_PLAIN);
        tbb_counter(st, "passes", m->batches ? (double)m->passes /
                                                   (double)m->batches : 0,
                    TBB_C_PLAIN);
        break;
    case L_TIMEOUTS:
    case L_RESCHEDULE:
        tbb_counter(st, "fired_share", (double)m->fired / ops, TBB_C_PLAIN);
        tbb_counter(st, "caller_ns", (double)m->caller_ns / ops, TBB_C_PLAIN);
        tbb_counter(st, "loop_ns", (double)m->loop_ns / ops, TBB_C_PLAIN);
        tbb_counter(st, "lag_max_ns", (double)m->lag_max, TBB_C_PLAIN);
        tbb_counter(st, "timeout_ns", (double)m->t_fixed, TBB_C_PLAIN);
        if (m->d->op == L_TIMEOUTS)
            tbb_counter(st, "stale_per_kop", 1e3 * (double)m->stale / ops,
                        TBB_C_PLAIN);
        else {
            tbb_counter(st, "timeouts_per_kop",
                        1e3 * (double)m->timeouts / ops, TBB_C_PLAIN);
            tbb_counter(st, "rearms_per_kop", 1e3 * (double)m->rearms / ops,
                        TBB_C_PLAIN);
        }
        break;
    case L_LATENESS: {
        size_t k = m->nlate, early = 0;
        for (size_t i = 0; i < k; i++)
            early += m->late[i] < 0;
        bh_csv_samples(m->d->name, "lateness", 0, m->late, k, 20000);
        bh_sort(m->late, k);
        tbb_counter(st, "count", (double)k, TBB_C_PLAIN);
        tbb_counter(st, "early", (double)early, TBB_C_PLAIN);
        tbb_counter(st, "p50", (double)bh_quantile(m->late, k, 0.5),
                    TBB_C_PLAIN);
        tbb_counter(st, "p99", (double)bh_quantile(m->late, k, 0.99),
                    TBB_C_PLAIN);
        tbb_counter(st, "max", (double)bh_quantile(m->late, k, 1.0),
                    TBB_C_PLAIN);
        break;
    }
    default:
        break;
    }
    m->ops = m->fired = m->timeouts = m->rearms = m->passes = 0;
    m->caller_ns = m->loop_ns = m->lag_max = 0;
    m->stale = m->redone = m->batches = 0;
}

static const struct tbb_ops lops[] = {
    [L_INSERT] = {lm_setup, insert_batch, lm_report, lm_teardown},
    [L_CANCEL] = {lm_setup, cancel_batch, lm_report, lm_teardown},
    [L_EXPIRE] = {lm_setup, expire_batch, lm_report, lm_teardown},
    [L_TIMEOUTS] = {lm_setup, ring_batch, lm_report, lm_teardown},
    [L_RESCHEDULE] = {lm_setup, ring_batch, lm_report, lm_teardown},
    [L_LATENESS] = {lm_setup, lateness_batch, lm_report, lm_teardown},
    [L_IDLE] = {lm_setup, idle_batch, lm_report, lm_teardown},
};

static void add(enum lop op, const struct tblib *lib, enum strategy s,
                const char *failed)
{
    struct ldef *d = bh_keep(xcalloc(1, sizeof *d));
    d->op = op;
    d->lib = lib;
    d->failed = failed;
    d->strategy = s;
    char label[64] = "series=lib";
    if (s != S_NONE) {
        size_t len = strlen(label);
        snprintf(label + len, sizeof label - len, ",strategy=%s",
                 strategy_names[s]);
    }
    bh_name(d->name, sizeof d->name, lop_names[op], lib->name,
            lop_workloads[op], label);
    static const char *const arg_names[] = {"N"};
    const bool realtime = op == L_LATENESS || op == L_IDLE;
    const bool paced = op == L_TIMEOUTS || op == L_RESCHEDULE;
    unsigned flags = TBB_MANUAL_TIME | TBB_REUSE;
    if (realtime)
        flags |= TBB_NO_CANARY;
    for (size_t i = 0; i < bh.profile->nn; i++) {
        int64_t n = realtime ? (op == L_IDLE) : bh.profile->n[i];
        if (realtime && i > 0)
            break;
        if ((paced || op == L_EXPIRE) && n > bh.profile->libs_slow_max_n)
            continue;
        tbb_bench *f = tbb_register(d->name, &lops[op], d, flags);
        tbb_arg_names(f, 1, arg_names);
        tbb_args(f, 1, &n);
        if (realtime) {
            /* at most 3: a loop's lateness and idle cost are the runtime
             * harness's own experiments, here beside them (issue 40) */
            int reps = bh.profile->runtime_repetitions;
            tbb_iterations(f, 1);
            tbb_repetitions(f, reps < 3 ? reps : 3);
        } else if (op == L_EXPIRE) {
            /* a fixed number of batches: each waits untimed for its
             * timers to fall due (about 7 ms), so an iteration search
             * at N = 100 (10 us of timed work a batch) ran 200 of them a
             * repetition; 8192 fires or one batch, at most 16 batches */
            int64_t k = 8192 / n;
            k = k < 1 ? 1 : k > 16 ? 16 : k;
            tbb_iterations(f, k * n);
        } else if (paced) {
            /* a repetition is the ring once round (T / 2 of wall time) */
            int64_t b = bh_clamp_batch(n);
            int64_t it = (n > 1024 ? n : 1024) / b * b;
            tbb_iterations(f, it);
        } else if (!bh.user_min_time) {
            double share = (double)bh_clamp_batch(n) / 1024.0;
            tbb_min_time(f, bh.profile->min_time * (share < 1 ? share : 1));
        }
    }
}

static void probe_fire(void *arg)
{
    (void)arg;
}

/* Opens a loop of `l` with one timer started, stopped and released, in a
 * child process: a library that cannot initialise may end the process
 * that tried (libevent's event_err exits, GLib's g_error aborts: both
 * seen with too few file descriptors), and then only the child goes.
 * NULL when it works (or cannot be probed: the run will say), else why,
 * kept for the run. */
static const char *probe(const struct tblib *l)
{
    int fds[2];
    if (pipe(fds) != 0)
        return NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        return NULL;
    }
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        struct tblib_options o = {.fixed_delay_ns = 20 * TB_MS};
        char err[160] = "";
        void *loop = l->open(&o, err, sizeof err);
        if (!loop) {
            fprintf(stderr, "%s\n", err[0] ? err : "open failed");
            _exit(3);
        }
        void *t = calloc(1, l->timer_size + 16);
        int rc = t ? l->init(loop, t, probe_fire, NULL) : -ENOMEM;
        if (rc == 0) {
            rc = l->start(loop, t, 20 * TB_MS);
            if (rc == 0)
                l->stop(loop, t);
            l->fini(loop, t);
        }
        l->close(loop);
        free(t); /* after close(): tblib.h */
        if (rc) {
            fprintf(stderr, "a timer: %s\n", strerror(rc < 0 ? -rc : rc));
            _exit(4);
        }
        _exit(0);
    }
    close(fds[1]);
    /* the child's last words, whatever their length */
    char out[512];
    size_t len = 0;
    char chunk[256];
    ssize_t r;
    while ((r = read(fds[0], chunk, sizeof chunk)) > 0) {
        if (len + (size_t)r >= sizeof out) {
            size_t keep = sizeof out / 2;
            memmove(out, out + len - (len > keep ? keep : len),
                    len > keep ? keep : len);
            len = len > keep ? keep : len;
        }
        size_t n = (size_t)r < sizeof out - 1 - len ? (size_t)r
                                                    : sizeof out - 1 - len;
        memcpy(out + len, chunk, n);
        len += n;
    }
    close(fds[0]);
    out[len] = '\0';
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
        return NULL;
    while (len && (out[len - 1] == '\n' || out[len - 1] == ' '))
        out[--len] = '\0';
    const char *last = strrchr(out, '\n');
    last = last ? last + 1 : out;
    char how[48];
    if (WIFSIGNALED(status))
        snprintf(how, sizeof how, "was killed by signal %d",
                 WTERMSIG(status));
    else
        snprintf(how, sizeof how, "exited with %d", WEXITSTATUS(status));
    char *why = bh_keep(xcalloc(1, 1024));
    snprintf(why, 1024, "%s could not initialise: a loop opened in a child "
             "process %s (%.300s)", l->name, how, *last ? last : "no message");
    return why;
}

void bh_register_libs(void)
{
    char buf[256];
    /* every cached instance holds a loop and its descriptors: the soft
     * limit raised to the hard one, as a server linking these would */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    for (size_t i = 0; i < tblib_count; i++) {
        const struct tblib *l = tblib_all[i];
        char v[64], key[64];
        l->version(v, sizeof v);
        snprintf(key, sizeof key, "lib.%s", l->name);
        snprintf(buf, sizeof buf, "%s %s (%s): %s; family %s", l->library, v,
                 l->name, l->structure, l->family);
        tbb_context(key, buf);
        snprintf(key, sizeof key, "lib_version.%s", l->name);
        tbb_context(key, v);
        snprintf(key, sizeof key, "lib_family.%s", l->name);
        tbb_context(key, l->family);
        snprintf(key, sizeof key, "lib_structure.%s", l->name);
        tbb_context(key, l->structure);
        snprintf(key, sizeof key, "lib_package.%s", l->name);
        tbb_context(key, l->library);
        snprintf(key, sizeof key, "lib_granularity_ns.%s", l->name);
        snprintf(v, sizeof v, "%lld", (long long)l->granularity_ns);
        tbb_context(key, v);
        const char *failed = probe(l);
        if (failed) {
            snprintf(key, sizeof key, "lib_failed.%s", l->name);
            tbb_context(key, failed);
        }
        if (!l->fixed_only) {
            add(L_INSERT, l, S_NONE, failed);
            add(L_CANCEL, l, S_NONE, failed);
            add(L_EXPIRE, l, S_NONE, failed);
            add(L_LATENESS, l, S_NONE, failed);
            add(L_IDLE, l, S_NONE, failed);
        }
        add(L_TIMEOUTS, l, S_NONE, failed);
        add(L_RESCHEDULE, l, S_RESTART, failed);
        add(L_RESCHEDULE, l, S_AGAIN, failed);
        if (!l->fixed_only)
            add(L_RESCHEDULE, l, S_LAZY, failed);
    }
    buf[0] = '\0';
    for (size_t i = 0; tblib_missing[i]; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, "%s%s", i ? "; " : "",
                 tblib_missing[i]);
    }
    tbb_context("libs_missing", buf);
}
