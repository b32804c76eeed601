/*
 * bench/player.c — the open-loop real-time player (bench/player.h): the
 * purgatory workload's generator, the backend and floor subjects, the
 * threaded play and the in-loop pieces, the saturation rule and the row.
 *
 * Nothing is allocated while a play runs: the trace, one lag per
 * operation and, per request id, its deadline, its fire time and its
 * cancel's answer are allocated (and touched) before the first operation.
 */
/* sched_setaffinity and CPU_SET: the build defines _GNU_SOURCE */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"
#include "player.h"

/* Below this gap to the next operation the player spins instead of
 * sleeping: a sleep on this VM wakes some 50 us late, so a gap this short
 * is better met by reading the clock. */
#define SPIN_NS ((int64_t)20000)
/* The subject's pending and zombies are sampled at most this often. */
#define SAMPLE_NS ((int64_t)1000000)
/* Between open() and the first operation: the subject's threads start. */
#define SETTLE_NS ((int64_t)10000000)

/* ---- Small helpers ------------------------------------------------------ */

static void set_err(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

static int64_t cpu_clock(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (int64_t)ts.tv_sec * TB_SEC + ts.tv_nsec;
}

static void sleep_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / TB_SEC), (long)(t % TB_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
        ; /* EINTR: on to the same absolute time */
}

/* The k-th smallest (0-based) of v[0..n), v reordered (quickselect: a
 * sort of 10^6 lags would cost more than the play's analysis needs). */
static int64_t select_k(int64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n - 1;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        /* median of three as the pivot */
        int64_t a = v[lo], b = v[mid], c = v[hi];
        int64_t pv = a < b ? (b < c ? b : (a < c ? c : a))
                           : (a < c ? a : (b < c ? c : b));
        size_t i = lo, j = hi;
        for (;;) {
            while (v[i] < pv)
                i++;
            while (v[j] > pv)
                j--;
            if (i >= j)
                break;
            int64_t x = v[i];
            v[i] = v[j];
            v[j] = x;
            i++;
            j--;
        }
        /* v[lo..j] <= pv <= v[j+1..hi] */
        if (k <= j)
            hi = j;
        else
            lo = j + 1;
    }
    return v[k];
}

/* The q-quantile of v[0..n) by bh_rank's rule (v reordered); 0 if n = 0. */
static int64_t quantile(int64_t *v, size_t n, double q)
{
    return n ? select_k(v, n, bh_rank(n, q) - 1) : 0;
}

static int64_t max_of(const int64_t *v, size_t n)
{
    int64_t m = INT64_MIN;
    for (size_t i = 0; i < n; i++)
        m = v[i] > m ? v[i] : m;
    return n ? m : 0;
}

/* ---- The purgatory workload --------------------------------------------- */

#define PURG_TIMEOUT_NS (200 * TB_MS)
#define Z75 0.674490 /* the 75th percentile of N(0, 1), as tracegen.py */

struct due {
    int64_t t;
    uint32_t id;
};

/* Sorts v[0..n) by t, stably (LSD radix, 16 bits a pass, passes whose
 * digit is the same everywhere skipped; t >= 0): completions are made in
 * id order, so equal times stay in id order, as tracegen.py's heap of
 * (time, id) pops them.  A heap of 10^5 pending completions cost the
 * generator 400 ns a request in its pops' cache misses. */
static bool sort_dues(struct due *v, size_t n)
{
    struct due *tmp = malloc((n ? n : 1) * sizeof *tmp);
    size_t *count = malloc(65536 * sizeof *count);
    if (!tmp || !count) {
        free(tmp);
        free(count);
        return false;
    }
    struct due *from = v, *to = tmp;
    for (int shift = 0; shift < 64; shift += 16) {
        memset(count, 0, 65536 * sizeof *count);
        for (size_t i = 0; i < n; i++)
            count[(uint64_t)from[i].t >> shift & 0xffff]++;
        if (n && count[(uint64_t)from[0].t >> shift & 0xffff] == n)
            continue; /* one digit everywhere: nothing moves */
        size_t sum = 0;
        for (size_t d = 0; d < 65536; d++) {
            size_t c = count[d];
            count[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            to[count[(uint64_t)from[i].t >> shift & 0xffff]++] = from[i];
        struct due *x = from;
        from = to;
        to = x;
    }
    if (from != v)
        memcpy(v, from, n * sizeof *v);
    free(tmp);
    free(count);
    return true;
}

/* A standard normal draw (Box-Muller, one of the pair). */
static double std_normal(uint64_t *rng)
{
    double u1 = 1.0 - bh_unit(rng); /* (0, 1]: log is finite */
    double u2 = bh_unit(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

int pl_purgatory(struct pl_trace *t, const char *shape, double rate,
                 double seconds, uint64_t seed, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    double p50, p75;
    if (shape && !strcmp(shape, "few")) {
        p50 = 20.0;
        p75 = 60.0;
    } else if (shape && !strcmp(shape, "many")) {
        p50 = 200.0;
        p75 = 400.0;
    } else {
        set_err(err, errlen, "unknown shape '%s' (few, many)",
                shape ? shape : "(null)");
        return -1;
    }
    if (!(rate > 0) || !isfinite(rate)) {
        set_err(err, errlen, "rate must be a number above 0, got %g", rate);
        return -1;
    }
    if (!(seconds > 0) || !isfinite(seconds) || seconds > 1e6) {
        set_err(err, errlen, "seconds must be above 0 and at most 10^6, "
                "got %g", seconds);
        return -1;
    }
    if (rate * seconds > (double)(INT32_MAX / 2)) {
        set_err(err, errlen, "%g requests/s for %g s is more than 2^30 "
                "requests", rate, seconds);
        return -1;
    }
    double mu = log(p50 * 1e6); /* ns */
    double sigma = (log(p75) - log(p50)) / Z75;
    int64_t end = (int64_t)(seconds * 1e9);
    uint64_t rng = bh_mix(seed ^ 0x7075726761746f72ULL); /* "purgator" */
    if (!rng)
        rng = 1;
    /* room for the expected count and 8 standard deviations (Poisson) */
    double want = rate * seconds;
    size_t cap = (size_t)(want + 8 * sqrt(want) + 64);
    int64_t *arr = malloc(cap * sizeof *arr);
    struct due *cancels = malloc(cap * sizeof *cancels);
    size_t n = 0, nc = 0;
    bool ok = arr && cancels;
    double tt = 0;
    snprintf(t->shape, sizeof t->shape, "%s", shape);
    while (ok) {
        /* Poisson arrivals: exponential gaps of mean 1/rate */
        tt += -log(1.0 - bh_unit(&rng)) / rate * 1e9;
        int64_t now = (int64_t)tt;
        if (now >= end)
            break;
        if (n == cap) {
            size_t c = 2 * cap;
            int64_t *a2 = realloc(arr, c * sizeof *a2);
            if (a2)
                arr = a2;
            struct due *c2 = a2 ? realloc(cancels, c * sizeof *c2) : NULL;
            if (c2)
                cancels = c2;
            ok = a2 && c2;
            if (!ok)
                break;
            cap = c;
        }
        uint32_t id = (uint32_t)n;
        arr[n++] = now;
        int64_t latency = (int64_t)exp(mu + sigma * std_normal(&rng));
        /* a completion before the timeout cancels it then */
        if (latency < PURG_TIMEOUT_NS)
            cancels[nc++] = (struct due){now + latency, id};
    }
    ok = ok && sort_dues(cancels, nc);
    t->ops = ok ? malloc((n + nc ? n + nc : 1) * sizeof *t->ops) : NULL;
    if (!t->ops) {
        free(arr);
        free(cancels);
        pl_trace_free(t);
        set_err(err, errlen, "out of memory generating %g requests",
                rate * seconds);
        return -1;
    }
    /* merged in time order, a cancel before an arrival at the same time
     * (tracegen.py pops the completions due by an arrival's time first) */
    size_t i = 0, j = 0;
    while (i < n || j < nc) {
        if (j < nc && (i == n || (cancels[j].t <= arr[i] &&
                                  cancels[j].id < i))) {
            t->ops[t->nops++] = (struct pl_op){.t = cancels[j].t,
                                               .id = cancels[j].id,
                                               .kind = PL_CANCEL};
            j++;
        } else {
            t->ops[t->nops++] = (struct pl_op){.t = arr[i],
                                               .delay = PURG_TIMEOUT_NS,
                                               .id = (uint32_t)i,
                                               .kind = PL_SCHEDULE,
                                               .arrival = 1};
            i++;
        }
    }
    free(arr);
    free(cancels);
    t->requests = n;
    t->max_ids = (uint32_t)n;
    t->seconds = seconds;
    t->max_delay = PURG_TIMEOUT_NS;
    return 0;
}

void pl_trace_free(struct pl_trace *t)
{
    if (!t)
        return;
    free(t->ops);
    memset(t, 0, sizeof *t);
}

/* ---- Backend subjects --------------------------------------------------- */

struct bslot {
    struct bsub *b;
};

struct bsub {
    struct tb_sched *s;
    pl_fire_fn fire;
    void *fire_arg;
    struct bslot *slots;   /* per id: the task's argument */
    tb_handle *handles;    /* per id */
    uint32_t max_ids;
};

static int b_task(void *arg)
{
    struct bslot *sl = arg;
    struct bsub *b = sl->b;
    b->fire(b->fire_arg, (uint32_t)(sl - b->slots));
    return 0;
}

static void *b_open(const struct pl_subject *s, uint32_t max_ids,
                    pl_fire_fn fire, void *fire_arg, char *err, size_t errlen)
{
    const struct tb_backend *be = tb_backend_find(s->name);
    if (!be) {
        set_err(err, errlen, "no backend '%s'", s->name);
        return NULL;
    }
    struct bsub *b = calloc(1, sizeof *b);
    if (b) {
        b->slots = malloc((max_ids ? max_ids : 1) * sizeof *b->slots);
        b->handles = calloc(max_ids ? max_ids : 1, sizeof *b->handles);
    }
    if (!b || !b->slots || !b->handles) {
        if (b) {
            free(b->slots);
            free(b->handles);
        }
        free(b);
        set_err(err, errlen, "out of memory for %u requests", max_ids);
        return NULL;
    }
    for (uint32_t i = 0; i < max_ids; i++)
        b->slots[i].b = b;
    b->fire = fire;
    b->fire_arg = fire_arg;
    b->max_ids = max_ids;
    /* the wheels at Kafka's 1 ms tick (the purgatory timer's), as the
     * replay's head-to-head; the heaps at their originals' policies */
    struct tb_config cfg = {.clock = TB_CLOCK_MONOTONIC};
    if (be->caps & TB_CAP_TICKED)
        cfg.tick_ns = TB_MS;
    int rc = tb_create(be, &cfg, &b->s);
    if (rc == TB_OK && (rc = tb_start(b->s)) != TB_OK)
        tb_destroy(b->s);
    if (rc != TB_OK) {
        set_err(err, errlen, "%s: tb_create/tb_start: %s", s->name,
                tb_strerror(rc));
        free(b->slots);
        free(b->handles);
        free(b);
        return NULL;
    }
    return b;
}

static int b_schedule(void *h, uint32_t id, int64_t delay_ns)
{
    struct bsub *b = h;
    int rc = tb_schedule(b->s, delay_ns, b_task, &b->slots[id],
                         &b->handles[id]);
    return rc == TB_OK ? 0 : rc == TB_ENOMEM ? -ENOMEM
                       : rc == TB_EFULL ? -ENOSPC : -EINVAL;
}

static int b_cancel(void *h, uint32_t id)
{
    struct bsub *b = h;
    int rc = tb_cancel(b->s, b->handles[id]);
    return rc < 0 ? -EINVAL : rc;
}

static void b_close(void *h)
{
    struct bsub *b = h;
    tb_destroy(b->s);
    free(b->slots);
    free(b->handles);
    free(b);
}

static void b_stats(void *h, int64_t *pending, int64_t *zombies)
{
    struct bsub *b = h;
    struct tb_stats st;
    if (tb_stats(b->s, &st) != TB_OK) {
        *pending = *zombies = -1;
        return;
    }
    *pending = (int64_t)st.pending;
    *zombies = (int64_t)st.zombies;
}

/* ---- The floor ---------------------------------------------------------- */

/* Nothing: schedule and cancel return at once, no timeout ever fires.  What
 * is left is the player's own cost and limit. */
struct fsub {
    int unused;
};

static void *f_open(const struct pl_subject *s, uint32_t max_ids,
                    pl_fire_fn fire, void *fire_arg, char *err, size_t errlen)
{
    (void)s;
    (void)max_ids;
    (void)fire;
    (void)fire_arg;
    struct fsub *f = calloc(1, sizeof *f);
    if (!f)
        set_err(err, errlen, "out of memory");
    return f;
}

static int f_schedule(void *h, uint32_t id, int64_t delay_ns)
{
    (void)h;
    (void)id;
    (void)delay_ns;
    return 0;
}

static int f_cancel(void *h, uint32_t id)
{
    (void)h;
    (void)id;
    return 1;
}

static void f_close(void *h)
{
    free(h);
}

static void f_stats(void *h, int64_t *pending, int64_t *zombies)
{
    (void)h;
    *pending = *zombies = -1; /* holds nothing it could count */
}

static const struct pl_subject floor_subject = {
    .name = "floor",
    .side = "floor",
    .open = f_open,
    .schedule = f_schedule,
    .cancel = f_cancel,
    .close = f_close,
    .stats = f_stats,
    .structure = "nothing: schedule and cancel return at once (the "
                 "player's own limit)",
};

/* ---- The registry of subjects ------------------------------------------- */

#define MAX_BACKEND_SUBJECTS 64

static struct pl_subject backend_subjects[MAX_BACKEND_SUBJECTS];
static size_t nbackend_subjects;
static bool subjects_ready;

__attribute__((weak)) size_t
pl_library_subjects(const struct pl_subject *const **out)
{
    *out = NULL;
    return 0;
}

static void subjects_init(void)
{
    if (subjects_ready)
        return;
    subjects_ready = true;
    size_t n = tb_backend_count();
    for (size_t i = 0; i < n && i < MAX_BACKEND_SUBJECTS; i++) {
        const struct tb_backend *b = tb_backend_at(i);
        backend_subjects[nbackend_subjects++] = (struct pl_subject){
            .name = b->name,
            .side = "backend",
            .open = b_open,
            .schedule = b_schedule,
            .cancel = b_cancel,
            .close = b_close,
            .stats = b_stats,
            .structure = b->description,
        };
    }
}

size_t pl_subject_count(void)
{
    subjects_init();
    const struct pl_subject *const *libs;
    return nbackend_subjects + 1 + pl_library_subjects(&libs);
}

const struct pl_subject *pl_subject_at(size_t i)
{
    subjects_init();
    if (i < nbackend_subjects)
        return &backend_subjects[i];
    if (i == nbackend_subjects)
        return &floor_subject;
    const struct pl_subject *const *libs;
    size_t nl = pl_library_subjects(&libs);
    i -= nbackend_subjects + 1;
    return i < nl ? libs[i] : NULL;
}

const struct pl_subject *pl_subject_find(const char *name)
{
    for (size_t i = 0, n = pl_subject_count(); i < n; i++) {
        const struct pl_subject *s = pl_subject_at(i);
        if (!strcmp(s->name, name))
            return s;
    }
    return NULL;
}

/* ---- The player --------------------------------------------------------- */

enum { C_NONE = 0, C_CANCELLED = 1, C_LATE = 2 };

struct pl_player {
    const struct pl_trace *t;
    const struct pl_subject *s;
    void *h;
    int64_t t0;                 /* the play's start: intended times are
                                   t0 + op.t */
    size_t next;                /* the next operation */
    int64_t *lag;               /* per operation */
    int64_t *deadline;          /* per id: clock before schedule + delay */
    _Atomic int64_t *fire_ns;   /* per id: when it fired, 0 = not */
    uint8_t *cstate;            /* per id: C_* */
    _Atomic uint64_t fired;
    _Atomic uint64_t fired_twice;
    uint64_t scheduled, cancelled_ok, cancels_late;
    int64_t call_ns;            /* time inside the subject's schedule and
                                   cancel, read around each call */
    int64_t first_arrival_due;  /* intended time of the first arrival */
    int64_t last_arrival_due;
    int64_t last_arrival_at;    /* actual issue time of the last arrival */
    int64_t max_deadline;
    int64_t drain_until;        /* INT64_MAX until every op is issued */
    int64_t drain_end;          /* when the play ended: no fire after it
                                   counts */
    int64_t last_sample;
    int64_t peak_pending, peak_zombies;
    bool pending_known, zombies_known;
    char error[200];
};

static void on_fire(void *arg, uint32_t id)
{
    struct pl_player *p = arg;
    int64_t now = tb_monotonic_ns();
    if (id >= p->t->max_ids) {
        atomic_fetch_add_explicit(&p->fired_twice, 1, memory_order_relaxed);
        return;
    }
    if (atomic_exchange_explicit(&p->fire_ns[id], now, memory_order_relaxed))
        atomic_fetch_add_explicit(&p->fired_twice, 1, memory_order_relaxed);
    else
        atomic_fetch_add_explicit(&p->fired, 1, memory_order_relaxed);
}

static void sample(struct pl_player *p, int64_t now)
{
    int64_t pending = -1, zombies = -1;
    p->s->stats(p->h, &pending, &zombies);
    if (pending >= 0) {
        p->pending_known = true;
        p->peak_pending = pending > p->peak_pending ? pending
                                                    : p->peak_pending;
    }
    if (zombies >= 0) {
        p->zombies_known = true;
        p->peak_zombies = zombies > p->peak_zombies ? zombies
                                                    : p->peak_zombies;
    }
    p->last_sample = now;
}

int pl_fail(struct pl_player *p, const char *why)
{
    if (!p->error[0])
        snprintf(p->error, sizeof p->error, "%s", why);
    p->drain_until = tb_monotonic_ns();
    p->next = p->t->nops;
    return -1;
}

const char *pl_error(const struct pl_player *p)
{
    return p->error;
}

int64_t pl_next_due(const struct pl_player *p)
{
    return p->next < p->t->nops ? p->t0 + p->t->ops[p->next].t : INT64_MAX;
}

bool pl_issued_all(const struct pl_player *p)
{
    return p->next >= p->t->nops;
}

int64_t pl_drain_until(const struct pl_player *p)
{
    return p->drain_until;
}

/* Issues operation i, due at `due`, at `now` (the clock just read). */
static void issue(struct pl_player *p, size_t i, int64_t due, int64_t now)
{
    const struct pl_op *o = &p->t->ops[i];
    p->lag[i] = now - due;
    if (o->kind == PL_SCHEDULE) {
        int64_t dl = now + o->delay;
        p->deadline[o->id] = dl;
        p->max_deadline = dl > p->max_deadline ? dl : p->max_deadline;
        int rc = p->s->schedule(p->h, o->id, o->delay);
        p->call_ns += tb_monotonic_ns() - now;
        if (rc) {
            char why[160];
            snprintf(why, sizeof why, "schedule of request %u failed: %s",
                     o->id, strerror(-rc));
            pl_fail(p, why);
            return;
        }
        p->scheduled++;
        if (o->arrival)
            p->last_arrival_at = now;
    } else {
        int rc = p->s->cancel(p->h, o->id);
        p->call_ns += tb_monotonic_ns() - now;
        if (rc < 0) {
            char why[160];
            snprintf(why, sizeof why, "cancel of request %u failed: %s",
                     o->id, strerror(-rc));
            pl_fail(p, why);
            return;
        }
        p->cstate[o->id] = rc ? C_CANCELLED : C_LATE;
        if (rc)
            p->cancelled_ok++;
        else
            p->cancels_late++;
    }
}

size_t pl_issue_due(struct pl_player *p, size_t max)
{
    size_t n = 0;
    const struct pl_op *ops = p->t->ops;
    while (p->next < p->t->nops && (!max || n < max)) {
        int64_t due = p->t0 + ops[p->next].t;
        int64_t now = tb_monotonic_ns();
        if (due > now)
            break;
        size_t i = p->next++;
        issue(p, i, due, now);
        n++;
        if (now - p->last_sample >= SAMPLE_NS)
            sample(p, now);
    }
    if (p->next >= p->t->nops && p->drain_until == INT64_MAX)
        p->drain_until = p->max_deadline + PL_DRAIN_GRACE_NS;
    return n;
}

/* The threaded model: this thread plays, the subject's threads fire. */
static void play_threaded(struct pl_player *p)
{
    while (!pl_issued_all(p)) {
        int64_t due = pl_next_due(p);
        int64_t now = tb_monotonic_ns();
        if (due - now > SPIN_NS) {
            /* wake for the next sample if it comes first */
            int64_t at = p->last_sample + SAMPLE_NS;
            if (at < due && at > now) {
                sleep_until(at);
                sample(p, tb_monotonic_ns());
                continue;
            }
            sleep_until(due);
        } else {
            while (tb_monotonic_ns() < due)
                ; /* spin the last few us */
        }
        pl_issue_due(p, 0);
    }
    /* drain: every timeout not cancelled fires by its deadline plus the
     * grace, or is counted as not fired */
    while (!p->error[0]) {
        int64_t now = tb_monotonic_ns();
        if (now >= p->drain_until)
            break;
        uint64_t fired = atomic_load_explicit(&p->fired,
                                              memory_order_relaxed);
        if (fired + p->cancelled_ok >= p->scheduled)
            break; /* nothing is left to fire */
        sample(p, now);
        int64_t at = now + SAMPLE_NS;
        sleep_until(at < p->drain_until ? at : p->drain_until);
    }
    sample(p, tb_monotonic_ns());
}

/* ---- Pinning ------------------------------------------------------------ */

void pl_pinning_choose(struct pl_pinning *pin)
{
    cpu_set_t set;
    CPU_ZERO(&set);
    pin->player_cpu = pin->subject_cpu = -1;
    if (sched_getaffinity(0, sizeof set, &set)) {
        snprintf(pin->note, sizeof pin->note,
                 "not pinned: sched_getaffinity failed (%s)",
                 strerror(errno));
        return;
    }
    int first = -1, second = -1;
    for (int c = 0; c < CPU_SETSIZE && second < 0; c++)
        if (CPU_ISSET(c, &set)) {
            if (first < 0)
                first = c;
            else
                second = c;
        }
    if (second < 0) {
        snprintf(pin->note, sizeof pin->note,
                 "not pinned: the process may run on one CPU only");
        return;
    }
    pin->player_cpu = first;
    pin->subject_cpu = second;
    snprintf(pin->note, sizeof pin->note,
             "player on CPU %d, the subject's threads on CPU %d "
             "(sched_setaffinity; threads inherit it at creation); a "
             "library's player runs in its loop's thread on CPU %d, one "
             "core by design",
             first, second, second);
}

static int pin_to(int cpu, char *err, size_t errlen)
{
    if (cpu < 0)
        return 0;
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(cpu, &set);
    if (sched_setaffinity(0, sizeof set, &set)) {
        set_err(err, errlen, "sched_setaffinity(CPU %d): %s", cpu,
                strerror(errno));
        return -1;
    }
    return 0;
}

/* ---- Results ------------------------------------------------------------ */

/* Appends one reason to r->why ("; " between them), as far as it fits. */
static void why_add(struct pl_result *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void why_add(struct pl_result *r, const char *fmt, ...)
{
    size_t len = strlen(r->why);
    if (len && len + 2 < sizeof r->why) {
        memcpy(r->why + len, "; ", 3);
        len += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why + len, sizeof r->why - len, fmt, ap);
    va_end(ap);
}

void pl_saturation(struct pl_result *r)
{
    r->why[0] = '\0';
    r->saturated = false;
    if (r->offered_rate < 0) {
        /* every arrival at one instant: no rate is offered at all */
        r->saturated = true;
        why_add(r, "every arrival at one instant: no rate offered");
    } else if (r->achieved_rate < 0 ||
               r->achieved_rate < (1 - PL_SAT_RATE_SHORTFALL) *
                                      r->offered_rate) {
        r->saturated = true;
        why_add(r, "achieved %.1f%% below offered",
                r->achieved_rate < 0
                    ? 100.0
                    : 100.0 * (1 - r->achieved_rate / r->offered_rate));
    }
    if (r->lag_growth_ns > PL_SAT_LAG_GROWTH_NS) {
        r->saturated = true;
        why_add(r, "lag grew %.1f ms", (double)r->lag_growth_ns / 1e6);
    }
    if ((double)r->fired <
        (1 - PL_SAT_EXPIRY_SHORTFALL) * (double)r->timeouts_due) {
        r->saturated = true;
        why_add(r, "%.1f%% of the due timeouts unfired",
                100.0 * (1 - (double)r->fired / (double)r->timeouts_due));
    }
    if (r->lateness_growth_ns != INT64_MIN &&
        r->lateness_growth_ns > PL_SAT_LATENESS_GROWTH_NS) {
        r->saturated = true;
        why_add(r, "lateness grew %.1f ms",
                (double)r->lateness_growth_ns / 1e6);
    }
}

/* Fired timeouts by deadline, for the lateness growth. */
struct fire { int64_t deadline, late; };

static int cmp_fire(const void *a, const void *b)
{
    const struct fire *x = a, *y = b;
    return (x->deadline > y->deadline) - (x->deadline < y->deadline);
}

/* The median lateness of the last tenth of the fired timeouts, in deadline
 * order, less the first tenth's (f reordered); INT64_MIN with fewer than
 * PL_SAT_MIN_WINDOW in a tenth. */
static int64_t lateness_growth(struct fire *f, size_t nf, int64_t *scratch)
{
    size_t tenth = nf / 10;
    if (tenth < PL_SAT_MIN_WINDOW)
        return INT64_MIN;
    qsort(f, nf, sizeof *f, cmp_fire);
    for (size_t i = 0; i < tenth; i++) {
        scratch[i] = f[i].late;
        scratch[tenth + i] = f[nf - tenth + i].late;
    }
    return quantile(scratch + tenth, tenth, 0.5) -
           quantile(scratch, tenth, 0.5);
}

/* Fills r from the play p (after close: every fire is in). */
static void results(struct pl_player *p, struct pl_result *r,
                    int64_t cpu_process, int64_t cpu_thread)
{
    const struct pl_trace *t = p->t;
    const struct pl_subject *s = p->s;
    snprintf(r->subject, sizeof r->subject, "%s", s->name);
    snprintf(r->side, sizeof r->side, "%s", s->side);
    /* one line */
    snprintf(r->structure, sizeof r->structure, "%s",
             s->structure ? s->structure : "");
    for (char *c = r->structure; *c; c++)
        if (*c == '\n' || *c == '\r' || *c == '\t')
            *c = ' ';
    snprintf(r->shape, sizeof r->shape, "%s", t->shape);
    r->requests = t->requests;
    r->seconds = t->seconds;
    double span = (double)(p->last_arrival_due - p->first_arrival_due) / 1e9;
    r->offered_rate = t->requests >= 2 && span > 0
                          ? (double)t->requests / span : -1;
    double done = (double)(p->last_arrival_at - p->first_arrival_due) / 1e9;
    r->achieved_rate = t->requests >= 2 && done > 0
                           ? (double)t->requests / done : -1;
    size_t n = t->nops, n10 = n / 10 ? n / 10 : 1;
    if (r->lag_out) /* before the selections reorder them */
        memcpy(r->lag_out, p->lag, n * sizeof *p->lag);
    int64_t first = quantile(p->lag, n10, 0.5);
    int64_t last = quantile(p->lag + (n - n10), n10, 0.5);
    r->lag_growth_ns = last - first;
    r->lag_max_ns = max_of(p->lag, n);
    r->lag_p50_ns = quantile(p->lag, n, 0.5);
    r->lag_p99_ns = quantile(p->lag, n, 0.99);
    double req = t->requests ? (double)t->requests : 1;
    r->cpu_ns_per_request = (double)cpu_process / req;
    r->player_cpu_ns_per_request = (double)cpu_thread / req;
    /* the timer's own: its threads' CPU and the time the player spent in
     * its calls, not the player's pacing (a spin between close arrivals);
     * an in-loop subject's thread is its loop, which blocks in its poll
     * between operations, so all of its CPU is the loop's */
    r->subject_cpu_ns_per_request =
        s->play ? (double)cpu_process / req
                : (double)(cpu_process - cpu_thread + p->call_ns) / req;
    if (r->subject_cpu_ns_per_request < 0)
        r->subject_cpu_ns_per_request = 0;
    /* lateness of the fires, in the deadline array (no longer needed) */
    size_t nf = 0;
    r->unexpected = atomic_load_explicit(&p->fired_twice,
                                         memory_order_relaxed);
    r->early = 0;
    for (uint32_t id = 0; id < t->max_ids; id++) {
        int64_t f = atomic_load_explicit(&p->fire_ns[id],
                                         memory_order_relaxed);
        /* a fire after the drain's end was not served (D40): the subject
         * closed late, not in time; not counted, as the JVM player's */
        if (f > p->drain_end) {
            atomic_store_explicit(&p->fire_ns[id], 0, memory_order_relaxed);
            f = 0;
        }
        if (!f)
            continue;
        if (p->cstate[id] == C_CANCELLED)
            r->unexpected++;
        if (f < p->deadline[id] - s->granularity_ns)
            r->early++; /* before the subject's unit allows */
        p->deadline[nf++] = f - p->deadline[id];
    }
    r->fired = nf;
    r->fired_share = (double)nf / req;
    /* the timeouts the workload lets fire: every schedule never cancelled
     * (the floor runs nothing, so it has none) */
    size_t schedules = 0;
    for (size_t i = 0; i < n; i++)
        schedules += t->ops[i].kind == PL_SCHEDULE;
    r->timeouts_due = strcmp(s->side, "floor") == 0 ? 0
                                                    : schedules - (n - schedules);
    r->lateness_growth_ns = INT64_MIN;
    struct fire *fs = nf / 10 >= PL_SAT_MIN_WINDOW ? malloc(nf * sizeof *fs)
                                                   : NULL;
    int64_t *scratch = fs ? malloc(2 * (nf / 10) * sizeof *scratch) : NULL;
    if (fs && scratch) {
        /* p->deadline[0..nf) holds the lateness of the fired ids in id
         * order now; each one's deadline is its fire time less that */
        size_t k = 0;
        for (uint32_t id = 0; id < t->max_ids && k < nf; id++) {
            int64_t f = atomic_load_explicit(&p->fire_ns[id],
                                             memory_order_relaxed);
            if (f) {
                fs[k] = (struct fire){f - p->deadline[k], p->deadline[k]};
                k++;
            }
        }
        r->lateness_growth_ns = lateness_growth(fs, nf, scratch);
    }
    free(fs);
    free(scratch);
    r->lateness_p50_ns = nf ? quantile(p->deadline, nf, 0.5) : -1;
    r->lateness_p99_ns = nf ? quantile(p->deadline, nf, 0.99) : -1;
    r->peak_pending = p->pending_known ? p->peak_pending : -1;
    r->peak_zombies = p->zombies_known ? p->peak_zombies : -1;
    r->cancels_late = p->cancels_late;
    pl_saturation(r);
}

int pl_play(const struct pl_trace *t, const struct pl_subject *s,
            const struct pl_pinning *pin, struct pl_result *r, char *err,
            size_t errlen)
{
    int64_t *lag_out = r->lag_out;
    memset(r, 0, sizeof *r);
    r->lag_out = lag_out;
    if (!t->nops || !t->requests) {
        set_err(err, errlen, "nothing to play: no request in the trace");
        return -1;
    }
    struct pl_player p = {.t = t, .s = s, .drain_until = INT64_MAX};
    size_t ids = t->max_ids ? t->max_ids : 1;
    p.lag = malloc(t->nops * sizeof *p.lag);
    p.deadline = malloc(ids * sizeof *p.deadline);
    p.fire_ns = malloc(ids * sizeof *p.fire_ns);
    p.cstate = malloc(ids);
    int rc = -1;
    if (!p.lag || !p.deadline || !p.fire_ns || !p.cstate) {
        set_err(err, errlen, "out of memory for %zu operations", t->nops);
        goto out;
    }
    /* touched now, not in the play */
    memset(p.lag, 0, t->nops * sizeof *p.lag);
    memset(p.deadline, 0, ids * sizeof *p.deadline);
    memset(p.cstate, 0, ids);
    for (size_t i = 0; i < ids; i++)
        atomic_init(&p.fire_ns[i], 0);
    atomic_init(&p.fired, 0);
    atomic_init(&p.fired_twice, 0);
    for (size_t i = 0; i < t->nops; i++)
        if (t->ops[i].arrival) {
            p.first_arrival_due = t->ops[i].t;
            break;
        }
    for (size_t i = t->nops; i-- > 0;)
        if (t->ops[i].arrival) {
            p.last_arrival_due = t->ops[i].t;
            break;
        }
    int subject_cpu = pin ? pin->subject_cpu : -1;
    int player_cpu = pin ? pin->player_cpu : -1;
    /* the subject's threads inherit the CPU of the thread that opens it */
    if (pin_to(subject_cpu, err, errlen))
        goto out;
    p.h = s->open(s, t->max_ids, on_fire, &p, err, errlen);
    if (!p.h)
        goto out;
    if (pin_to(player_cpu, err, errlen)) {
        s->close(p.h);
        goto out;
    }
    long slack = bh_timer_slack();
    bh_set_timer_slack(1); /* the player's own sleeps: to the ns */
    p.t0 = tb_monotonic_ns() + SETTLE_NS;
    p.first_arrival_due += p.t0;
    p.last_arrival_due += p.t0;
    p.last_arrival_at = p.first_arrival_due;
    p.last_sample = p.t0;
    sleep_until(p.t0);
    int64_t c0 = cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
    int64_t th0 = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
    if (s->play) {
        int prc = s->play(p.h, &p);
        if (prc && !p.error[0])
            snprintf(p.error, sizeof p.error, "%s: play failed: %s",
                     s->name, strerror(prc < 0 ? -prc : prc));
        if (!p.error[0] && !pl_issued_all(&p))
            snprintf(p.error, sizeof p.error, "%s: play returned with %zu "
                     "of %zu operations issued", s->name, p.next, t->nops);
    } else {
        play_threaded(&p);
    }
    int64_t c1 = cpu_clock(CLOCK_PROCESS_CPUTIME_ID);
    int64_t th1 = cpu_clock(CLOCK_THREAD_CPUTIME_ID);
    p.drain_end = tb_monotonic_ns();
    if (p.drain_end > p.drain_until)
        p.drain_end = p.drain_until;
    s->close(p.h); /* no fire after this */
    bh_set_timer_slack(slack);
    if (p.error[0]) {
        set_err(err, errlen, "%s", p.error);
        goto out;
    }
    results(&p, r, c1 - c0, th1 - th0);
    rc = 0;
out:
    free(p.lag);
    free(p.deadline);
    free(p.fire_ns);
    free(p.cstate);
    return rc;
}

/* ---- The row ------------------------------------------------------------ */

static void json_str(FILE *o, const char *str)
{
    fputc('"', o);
    for (const unsigned char *c = (const unsigned char *)str; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(o, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(o, "\\u%04x", *c);
        else
            fputc(*c, o);
    }
    fputc('"', o);
}

static void json_num(FILE *o, double v)
{
    if (v < 0 || !isfinite(v))
        fputs("null", o);
    else
        fprintf(o, "%.10g", v);
}

static void json_int_or_null(FILE *o, int64_t v)
{
    if (v < 0)
        fputs("null", o);
    else
        fprintf(o, "%lld", (long long)v);
}

void pl_row_json(FILE *o, const struct pl_result *r)
{
    fputs("{\"subject\": ", o);
    json_str(o, r->subject);
    fputs(", \"side\": ", o);
    json_str(o, r->side);
    fputs(", \"structure\": ", o);
    json_str(o, r->structure);
    fputs(", \"shape\": ", o);
    json_str(o, r->shape);
    fprintf(o, ", \"repetition\": %d, \"target_rate\": ", r->repetition);
    json_num(o, r->target_rate);
    fputs(", \"offered_rate\": ", o);
    json_num(o, r->offered_rate);
    fputs(", \"achieved_rate\": ", o);
    json_num(o, r->achieved_rate);
    fprintf(o, ", \"requests\": %zu, \"seconds\": %.6g", r->requests,
            r->seconds);
    fprintf(o, ", \"lag_p50_ns\": %lld, \"lag_p99_ns\": %lld, "
            "\"lag_max_ns\": %lld, \"lag_growth_ns\": %lld",
            (long long)r->lag_p50_ns, (long long)r->lag_p99_ns,
            (long long)r->lag_max_ns, (long long)r->lag_growth_ns);
    fprintf(o, ", \"saturated\": %s, \"why\": ",
            r->saturated ? "true" : "false");
    json_str(o, r->why);
    fprintf(o, ", \"cpu_ns_per_request\": %.1f, "
            "\"player_cpu_ns_per_request\": %.1f, "
            "\"subject_cpu_ns_per_request\": %.1f",
            r->cpu_ns_per_request, r->player_cpu_ns_per_request,
            r->subject_cpu_ns_per_request);
    fprintf(o, ", \"fired\": %llu, \"fired_share\": %.6f",
            (unsigned long long)r->fired, r->fired_share);
    fprintf(o, ", \"timeouts_due\": %llu, \"lateness_growth_ns\": ",
            (unsigned long long)r->timeouts_due);
    if (r->lateness_growth_ns == INT64_MIN) /* too few fired to tell */
        fputs("null", o);
    else
        fprintf(o, "%lld", (long long)r->lateness_growth_ns);
    if (r->fired) /* null when nothing fired */
        fprintf(o, ", \"lateness_p50_ns\": %lld, \"lateness_p99_ns\": %lld",
                (long long)r->lateness_p50_ns, (long long)r->lateness_p99_ns);
    else
        fputs(", \"lateness_p50_ns\": null, \"lateness_p99_ns\": null", o);
    fputs(", \"peak_pending\": ", o);
    json_int_or_null(o, r->peak_pending);
    fputs(", \"peak_zombies\": ", o);
    json_int_or_null(o, r->peak_zombies);
    fputc('}', o);
}
