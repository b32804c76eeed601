/*
 * bench/common.c — profiles, workloads, configuration series, behavioural
 * probes, timing and the raw-sample CSV shared by every harness.
 *
 * Profiles are data, not code paths: each harness reads the sizes and
 * durations it needs from the active profile, so quick, standard and full
 * measure the same things at different scales.
 */
#include <malloc.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

#include "bench.h"

struct bh_run bh;

/* ---- Profiles ---------------------------------------------------------- */

static const struct bh_profile profiles[] = {
    {
        .name = "smoke",
        .n = {100, 1000},
        .nn = 2,
        .min_time = 0.001,
        .repetitions = 1,
        .wide = true,
        .burst_micro = true,
        .orig_micro = true,
        .cover = true,
        .wide_all = true,
        .precision_n = 1000,
        .precision_reps = 0,
        .batch_budget = 2.0,
        .work_budget = 1000000,
        .spell_wait_seconds = 0,
        .libs_slow_max_n = 1000,
        .runtime_repetitions = 1,
        .light_samples = 20,
        .loaded_pending = 1000,
        .jitter_seconds = 0.1,
        .interference_ms = 250,
        .burst = {1000, 0},
        .idle_seconds = 0.2,
        .producer_tasks = 500,
        .workers_seconds = 0.1,
        .orig_runtime = true,
    },
    {
        /* CI: a few minutes on 2 cores.  The head-to-head series only in
         * the micro-benchmarks, and workloads uniform (the design's targets)
         * and short (the Netty wheel within one revolution). */
        .name = "quick",
        .n = {100, 1000, 10000, 100000, 1000000},
        .nn = 5,
        .min_time = 0.01,
        .repetitions = 3,
        .wide = false,
        .burst_micro = false,
        .orig_micro = false,
        .cover = false,
        .wide_all = false,
        .precision_n = 0,
        .precision_reps = 0,
        .batch_budget = 1.0,
        .work_budget = 2500000,
        .spell_wait_seconds = 10,
        .libs_slow_max_n = 10000,
        .runtime_repetitions = 1,
        .light_samples = 1000,
        .loaded_pending = 100000,
        .jitter_seconds = 1.0,
        .interference_ms = 300,
        .burst = {100000, 0},
        .idle_seconds = 1.0,
        .producer_tasks = 20000,
        .workers_seconds = 0.5,
        .orig_runtime = true,
    },
    {
        .name = "standard",
        /* Issue 27: 10^2, 10^4, 10^6 only; the report's verdicts read the
         * smallest and the largest N (growth, crossovers at both ends,
         * few and many timers), and 10^3, 10^5 cost 110 s of the 20
         * minutes.  Full keeps every decade. */
        .n = {100, 10000, 1000000},
        .nn = 3,
        .min_time = 0.02,
        .repetitions = 5,
        .wide = true,
        /* Issue 27: the micro series and workloads no verdict reads
         * (orig, cover, burst; wide in fill and cancel) are in full only,
         * so the precision sweep fits the 20 minutes (docs/notes/
         * 2026-12-02-profile-costs.md has the measurement: 80 s of 175 s
         * per repetition). */
        .burst_micro = false,
        .orig_micro = false,
        .cover = false,
        .wide_all = false,
        .precision_n = 1000000,
        .precision_reps = 3,
        .batch_budget = 2.0,
        .work_budget = 5000000,
        .spell_wait_seconds = 120,
        .libs_slow_max_n = 10000,
        /* D37: 5,000 probes and periods per configuration over the 5
         * repetitions (a p99 with 50 samples beyond it; the p99.9 is
         * full's), so the purgatory sweep fits the 20 minutes: the
         * lateness, jitter and workers experiments were 336 of the
         * runtime harness's 474 measured seconds at 2,000 probes, 2.1 s
         * and 1 s */
        .runtime_repetitions = 5,
        .light_samples = 1000,
        .loaded_pending = 100000,
        .jitter_seconds = 1.0,      /* 5,000 periods in 5 repetitions */
        .interference_ms = 350,     /* 8 x 350 runs x 5: over 10^4 samples */
        .burst = {100000, 0},       /* D37: 10^6 (66 s) is full's */
        .idle_seconds = 0.5,        /* rates per second: 2.5 s per backend */
        .producer_tasks = 50000,
        .workers_seconds = 0.5,
        .orig_runtime = true,
    },
    {
        .name = "full",
        .n = {100, 1000, 10000, 100000, 1000000, 10000000},
        .nn = 6,
        .min_time = 0.1,
        .repetitions = 10,
        .wide = true,
        .burst_micro = true,
        .orig_micro = true,
        .cover = true,
        .wide_all = true,
        .precision_n = 1000000,
        .precision_reps = 0,
        .batch_budget = 120.0,
        .work_budget = 1000000000,
        .spell_wait_seconds = 600,
        .libs_slow_max_n = 1000000,
        .runtime_repetitions = 10,
        .light_samples = 10000,
        .loaded_pending = 100000,
        .jitter_seconds = 5.0,
        .interference_ms = 1000,
        .burst = {100000, 1000000},
        .idle_seconds = 10.0,
        .producer_tasks = 200000,
        .workers_seconds = 5.0,
        .orig_runtime = true,
    },
};

const struct bh_profile *bh_profile_find(const char *name)
{
    for (size_t i = 0; i < sizeof profiles / sizeof profiles[0]; i++)
        if (strcmp(profiles[i].name, name) == 0)
            return &profiles[i];
    return NULL;
}

const char *bh_profile_names(void)
{
    return "smoke, quick, standard, full";
}

/* ---- Random numbers and workloads -------------------------------------- */

uint64_t bh_mix(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ULL;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
    return x ^ (x >> 31);
}

uint64_t bh_seed_for(const char *name, int64_t n)
{
    uint64_t h = 0xCBF29CE484222325ULL; /* FNV-1a */
    for (const char *p = name; *p; p++)
        h = (h ^ (unsigned char)*p) * 0x100000001B3ULL;
    uint64_t s = bh_mix(bh.seed ^ h ^ bh_mix((uint64_t)n));
    return s ? s : 1; /* xorshift never leaves 0 */
}

int64_t bh_uniform(uint64_t *s, int64_t lo, int64_t hi)
{
    uint64_t span = (uint64_t)(hi - lo) + 1;
    return lo + (int64_t)(bh_rand(s) % span);
}

int64_t bh_log_uniform(uint64_t *s, int64_t lo, int64_t hi)
{
    double a = log((double)lo), b = log((double)hi);
    int64_t v = (int64_t)exp(a + (b - a) * bh_unit(s));
    return v < lo ? lo : v > hi ? hi : v;
}

const struct bh_workload_def bh_workloads[BH_NWORKLOADS] = {
    [BH_UNIFORM] = {"uniform", TB_MS, 1000 * TB_SEC, TB_SEC,
                    "one-shot delays uniform over 1 ms - 1000 s"},
    [BH_SHORT] = {"short", TB_MS, 500 * TB_MS, TB_MS,
                  "one-shot delays uniform over 1 ms - 500 ms (within one "
                  "revolution of 512 buckets at 1 ms)"},
    [BH_WIDE] = {"wide", TB_MS, 86400 * TB_SEC, 100 * TB_SEC,
                 "one-shot delays log-uniform over 1 ms - 1 day"},
    [BH_BURST] = {"burst", TB_SEC, TB_SEC, TB_SEC,
                  "every task at one delay, 1 s"},
    [BH_TIMEOUTS] = {"timeouts", 30 * TB_SEC, 30 * TB_SEC, 0,
                     "fixed 30 s timeouts, 95% cancelled before they fire, "
                     "clock moving"},
    [BH_PERIODIC] = {"periodic", 10 * TB_MS, 10 * TB_SEC, TB_MS,
                     "fixed-rate tasks, periods log-uniform over "
                     "10 ms - 10 s, first run uniform within one period"},
    [BH_WORST] = {"worst", TB_SEC, 1000 * TB_SEC, TB_SEC,
                  "the heaps' worst case (Varghese & Lauck's bound): "
                  "one-shot delays in strictly decreasing order from "
                  "1000 s, each 1-1024 ns (seeded) shorter than the one "
                  "before, so every insert is earlier than every pending "
                  "task and climbs to a heap's root; cancels earliest "
                  "first, each taking the root (insert and cancel only)"},
    [BH_IDLE] = {"idle", 10 * TB_SEC, 10 * TB_SEC, 0,
                 "N connections, each with one pending 10 s idle timeout "
                 "pushed back on every request; requests on connections "
                 "drawn at random, exponential gaps of 3 s mean per "
                 "connection, so about e^-10/3 = 3.6% of the gaps time "
                 "out and re-arm as new connections, clock moving "
                 "(reschedule only)"},
};

int64_t bh_draw(enum bh_workload w, uint64_t *s)
{
    const struct bh_workload_def *d = &bh_workloads[w];
    switch (w) {
    case BH_WIDE:
    case BH_PERIODIC:
        return bh_log_uniform(s, d->lo, d->hi);
    case BH_UNIFORM:
    case BH_SHORT:
        return bh_uniform(s, d->lo, d->hi);
    case BH_WORST: {
        /* *s holds the next delay once the sequence has started (see
         * bench.h); the gap to the one after is taken from the delay
         * itself, so the sequence is a function of the seed alone */
        uint64_t x = *s;
        int64_t cur = x >= (uint64_t)d->lo && x <= (uint64_t)d->hi
                          ? (int64_t)x
                          : d->hi - (int64_t)(x & 0xFFFFF);
        int64_t next = cur - 1 - (int64_t)(bh_mix(x) & 1023);
        *s = (uint64_t)(next >= d->lo ? next : d->hi);
        return cur;
    }
    case BH_BURST:
    case BH_TIMEOUTS:
    case BH_IDLE:
    case BH_NWORKLOADS:
        break;
    }
    return d->lo;
}

/* ---- Configuration series ---------------------------------------------- */

void bh_fmt_ns(char *buf, size_t size, int64_t ns)
{
    if (ns && ns % TB_SEC == 0)
        snprintf(buf, size, "%llds", (long long)(ns / TB_SEC));
    else if (ns && ns % TB_MS == 0)
        snprintf(buf, size, "%lldms", (long long)(ns / TB_MS));
    else if (ns && ns % TB_US == 0)
        snprintf(buf, size, "%lldus", (long long)(ns / TB_US));
    else
        snprintf(buf, size, "%lldns", (long long)ns);
}

void bh_label_add(struct bh_config *c, const char *key, const char *value)
{
    size_t len = strlen(c->label);
    snprintf(c->label + len, sizeof c->label - len, "%s%s=%s",
             len ? "," : "", key, value);
}

/* Fills in the defaults a backend would choose, by asking it. */
static bool resolve(const struct tb_backend *b, const struct tb_config *in,
                    struct tb_config *out)
{
    struct tb_config probe = *in;
    probe.clock = TB_CLOCK_VIRTUAL; /* no threads just to read defaults */
    struct tb_sched *s;
    if (tb_create(b, &probe, &s) != TB_OK)
        return false;
    tb_sched_config(s, out);
    out->clock = in->clock;
    tb_destroy(s);
    return true;
}

static void ticked_label(struct bh_config *c, const char *series,
                         const struct tb_config *r)
{
    char v[32];
    c->label[0] = '\0';
    bh_label_add(c, "series", series);
    bh_fmt_ns(v, sizeof v, r->tick_ns);
    bh_label_add(c, "tick", v);
    snprintf(v, sizeof v, "%d", r->wheel_size);
    bh_label_add(c, "wheel", v);
}

size_t bh_configs(const struct tb_backend *b, enum bh_workload w,
                  const struct tb_config *base, bool orig, bool cover,
                  struct bh_config out[BH_MAX_CONFIGS])
{
    size_t n = 0;
    struct tb_config r;
    if (!(b->caps & TB_CAP_TICKED)) {
        if (!resolve(b, base, &r))
            return 0;
        out[n].cfg = *base;
        out[n].series = BH_H2H;
        out[n].label[0] = '\0';
        bh_label_add(&out[n], "series", "h2h");
        return n + 1;
    }
    struct tb_config h2h = *base;
    h2h.tick_ns = TB_MS;
    h2h.wheel_size = 0;
    int default_wheel = 0;
    if (resolve(b, &h2h, &r)) {
        out[n].cfg = h2h;
        out[n].series = BH_H2H;
        ticked_label(&out[n], "h2h", &r);
        default_wheel = r.wheel_size;
        n++;
    }
    if (orig) {
        struct tb_config o = *base;
        o.tick_ns = 0;
        o.wheel_size = 0;
        if (resolve(b, &o, &r) &&
            !(r.tick_ns == TB_MS && r.wheel_size == default_wheel)) {
            out[n].cfg = o;
            out[n].series = BH_ORIG;
            ticked_label(&out[n], "orig", &r);
            n++;
        }
    }
    int64_t need = bh_workloads[w].hi / TB_MS + 1;
    if (cover && need <= (1 << 20) && bh_walks_rounds(b)) {
        int size = 1;
        while (size < need)
            size <<= 1;
        struct tb_config c = h2h;
        c.wheel_size = size;
        if (size != default_wheel && resolve(b, &c, &r)) {
            out[n].cfg = c;
            out[n].series = BH_COVER;
            ticked_label(&out[n], "cover", &r);
            n++;
        }
    }
    return n;
}

static int probe_noop(void *arg)
{
    (void)arg;
    return 0;
}

enum bh_inbox bh_inbox_of(const struct tb_backend *b,
                          const struct tb_config *c)
{
    struct tb_config v = *c;
    v.clock = TB_CLOCK_VIRTUAL;
    struct tb_sched *s;
    struct tb_stats st = {0};
    enum bh_inbox kind = BH_INBOX_NONE;
    if (tb_create(b, &v, &s) != TB_OK)
        return kind;
    struct tb_config r;
    tb_sched_config(s, &r);
    if (tb_schedule(s, TB_SEC, probe_noop, NULL, NULL) == TB_OK &&
        tb_advance(s, 0) >= 0 && tb_stats(s, &st) == TB_OK &&
        st.transfers > 0) {
        kind = BH_INBOX_ADVANCE;
    } else if ((b->caps & TB_CAP_TICKED) && r.tick_ns > 0 &&
               tb_advance(s, r.tick_ns) >= 0 && tb_stats(s, &st) == TB_OK &&
               st.transfers > 0) {
        kind = BH_INBOX_TICK;
    }
    tb_destroy(s);
    return kind;
}

bool bh_walks_rounds(const struct tb_backend *b)
{
    struct tb_config c = {0};
    c.tick_ns = TB_MS;
    struct tb_sched *s;
    struct tb_stats st = {0};
    if (!(b->caps & TB_CAP_TICKED) || tb_create(b, &c, &s) != TB_OK)
        return false;
    struct tb_config r;
    tb_sched_config(s, &r);
    /* one task 64 revolutions of the default wheel away */
    int64_t delay = 64 * (int64_t)r.wheel_size * r.tick_ns + r.tick_ns;
    if (tb_schedule(s, delay, probe_noop, NULL, NULL) == TB_OK)
        tb_advance(s, delay + 2 * r.tick_ns);
    tb_stats(s, &st);
    tb_destroy(s);
    return st.visits >= 32;
}

bool bh_honours_remove_on_cancel(const struct tb_backend *b)
{
    size_t left[2] = {0, 0};
    for (int with = 0; with < 2; with++) {
        struct tb_config c = {0};
        c.flags = with ? TB_F_REMOVE_ON_CANCEL : 0;
        struct tb_sched *s;
        tb_handle h;
        if (tb_create(b, &c, &s) != TB_OK)
            return false;
        if (tb_schedule(s, TB_SEC, probe_noop, NULL, &h) == TB_OK &&
            tb_cancel(s, h) == 1)
            left[with] = tb_pending(s);
        else
            left[with] = SIZE_MAX;
        tb_destroy(s);
    }
    return left[0] == 1 && left[1] == 0;
}

static struct tb_sched *idle_pool(const struct tb_backend *b, unsigned flags)
{
    struct tb_config c = {0};
    c.clock = TB_CLOCK_MONOTONIC;
    c.threads = 4;
    c.flags = flags;
    struct tb_sched *s;
    if (tb_create(b, &c, &s) != TB_OK)
        return NULL;
    /* The task goes in before the workers start, so each finds it and
     * waits timed if the flag lets it: started first, idle workers wait
     * untimed and the schedule's signal wakes only one of them. */
    if (tb_schedule(s, 60 * TB_SEC, probe_noop, NULL, NULL) != TB_OK ||
        tb_start(s) != TB_OK) {
        tb_destroy(s);
        return NULL;
    }
    return s;
}

static uint64_t timed_waits(struct tb_sched *s)
{
    struct tb_stats st = {0};
    if (s)
        tb_stats(s, &st);
    return st.timed_waits;
}

/* With a leader one worker waits timed for the one pending task; without,
 * every idle worker does.  The answer decides which benchmark instances
 * exist, so it must not depend on the machine's load or on timed waits
 * the backend makes anyway (a reaper's): a yes needs two more timed waits
 * without the leader than with it, and the probe polls both pools for up
 * to a second for them instead of sampling once. */
bool bh_honours_no_leader(const struct tb_backend *b)
{
    struct tb_sched *with = idle_pool(b, 0);
    struct tb_sched *without = idle_pool(b, TB_F_NO_LEADER);
    int64_t t0 = tb_monotonic_ns();
    bool yes = false;
    while (with && without) {
        bh_sleep_until(tb_monotonic_ns() + 10 * TB_MS);
        uint64_t l = timed_waits(with), nl = timed_waits(without);
        if (l >= 1 && nl >= l + 2) {
            yes = true;
            break;
        }
        if (tb_monotonic_ns() - t0 >= TB_SEC)
            break;
    }
    if (with)
        tb_destroy(with);
    if (without)
        tb_destroy(without);
    return yes;
}

/* ---- Names ------------------------------------------------------------- */

void bh_name(char *buf, size_t size, const char *op, const char *backend,
             const char *workload, const char *config)
{
    snprintf(buf, size, "%s/%s/%s/%s", op, backend, workload, config);
}

/* ---- Holding N base tasks --------------------------------------------- */

uint64_t bh_transfers(struct tb_sched *s)
{
    struct tb_stats st;
    tb_stats(s, &st);
    return st.transfers;
}

long bh_settle(const struct bh_hold *h, uint64_t transfers0, int64_t n,
               uint64_t *ticks)
{
    if (h->inbox == BH_INBOX_NONE)
        return 0; /* filed in place: nothing to move, no check to run */
    long rc = tb_advance(h->s, tb_now(h->s));
    if (rc < 0)
        return rc;
    for (int guard = 0; bh_transfers(h->s) - transfers0 < (uint64_t)n;
         guard++) {
        if (guard > 100000)
            return TB_ESTATE;
        *h->clock = (tb_now(h->s) / h->tick + 1) * h->tick;
        if (ticks)
            ++*ticks;
        rc = tb_advance(h->s, *h->clock);
        if (rc < 0)
            return rc;
    }
    return 0;
}

long bh_refill(const struct bh_hold *h, const char **what)
{
    int64_t total = 0;
    while (*h->nfired) {
        uint64_t tr0 = h->inbox ? bh_transfers(h->s) : 0;
        int64_t k = 0;
        while (*h->nfired) {
            int rc = h->put(h->ctx, h->fired[--*h->nfired]);
            if (rc) {
                *what = "tb_schedule";
                return rc;
            }
            k++;
        }
        /* A treadmill: each tick that drains the inbox runs more of the
         * base than it moves in (Netty at 100 ms, 100 000 a tick, holding
         * 10^6 timers under 500 ms).  The structure cannot hold this N. */
        total += k;
        if (total > 4 * h->n) {
            *what = "cannot hold N: tasks that run while the inbox drains "
                    "outnumber what a tick moves in";
            return BH_CANNOT_HOLD;
        }
        long rc = bh_settle(h, tr0, k, NULL);
        if (rc < 0) {
            *what = "settle";
            return rc;
        }
    }
    return 0;
}

/* ---- Time and statistics ----------------------------------------------- */

double bh_seconds(int64_t t0, int64_t t1)
{
    int64_t d = t1 - t0 - bh.clock_overhead_ns;
    return d > 0 ? (double)d * 1e-9 : 0.0;
}

int64_t bh_cpu_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * TB_SEC + ts.tv_nsec;
}

double bh_cpu_seconds(int64_t t0, int64_t t1)
{
    int64_t d = t1 - t0 - bh.cpu_clock_overhead_ns;
    return d > 0 ? (double)d * 1e-9 : 0.0;
}

void bh_sleep_until(int64_t t)
{
    struct timespec ts = {(time_t)(t / TB_SEC), (long)(t % TB_SEC)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL))
        ; /* EINTR: sleep on to the same absolute time */
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int64_t bh_clamp_batch(int64_t n)
{
    int64_t b = n / 8;
    return b < 1 ? 1 : b > 1024 ? 1024 : b;
}

size_t bh_malloc_in_use(void)
{
    struct mallinfo2 mi = mallinfo2();
    return mi.uordblks + mi.hblkhd;
}

void bh_sort(int64_t *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_i64);
}

size_t bh_rank(size_t n, double q)
{
    if (!n)
        return 0;
    /* q in millionths, then ceil(q_u n / 10^6) in 128 bits */
    double qu = q * 1e6 + 0.5;
    uint64_t u = qu <= 0 ? 0 : qu >= 1e6 ? 1000000 : (uint64_t)qu;
    __extension__ unsigned __int128 rank =
        ((unsigned __int128)u * n + 999999) / 1000000;
    return rank < 1 ? 1 : rank > n ? n : (size_t)rank;
}

int64_t bh_quantile(const int64_t *sorted, size_t n, double q)
{
    return n ? sorted[bh_rank(n, q) - 1] : 0;
}

double bh_quantile_d(const double *sorted, size_t n, double q)
{
    return n ? sorted[bh_rank(n, q) - 1] : 0;
}

void bh_csv_samples(const char *benchmark, const char *metric, int rep,
                    int64_t *v, size_t n, size_t limit)
{
    if (!bh.csv || !n)
        return;
    if (n <= limit) {
        for (size_t i = 0; i < n; i++)
            fprintf(bh.csv, "\"%s\",%s,%d,%zu,%lld,1\n", benchmark, metric,
                    rep, i, (long long)v[i]);
        fflush(bh.csv);
        return;
    }
    /* Thinned: sorted, one row per `step` samples, the last row carrying
     * the remainder, so the weights still add up to n and the CDF is the
     * samples' own at every row. */
    bh_sort(v, n);
    size_t step = (n + limit - 1) / limit;
    for (size_t i = step - 1; i < n; i += step)
        fprintf(bh.csv, "\"%s\",%s,%d,%zu,%lld,%zu\n", benchmark, metric,
                rep, i, (long long)v[i], step);
    size_t rest = n % step;
    if (rest)
        fprintf(bh.csv, "\"%s\",%s,%d,%zu,%lld,%zu\n", benchmark, metric,
                rep, n - 1, (long long)v[n - 1], rest);
    /* Out now, not at exit: an interrupted run keeps the samples of every
     * repetition that finished (bench/run.py keeps those of finished
     * instances). */
    fflush(bh.csv);
}

static void **kept;
static size_t nkept, kept_cap;

void *bh_keep(void *p)
{
    if (nkept == kept_cap) {
        size_t cap = kept_cap ? 2 * kept_cap : 256;
        void **k = realloc(kept, cap * sizeof *k);
        if (!k) {
            fprintf(stderr, "bench: out of memory\n");
            exit(2);
        }
        kept = k;
        kept_cap = cap;
    }
    kept[nkept++] = p;
    return p;
}

void bh_release_all(void)
{
    for (size_t i = 0; i < nkept; i++)
        free(kept[i]);
    free(kept);
    kept = NULL;
    nkept = kept_cap = 0;
}

long bh_timer_slack(void)
{
    return (long)prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
}

void bh_set_timer_slack(long ns)
{
    prctl(PR_SET_TIMERSLACK, (unsigned long)ns, 0, 0, 0);
}
