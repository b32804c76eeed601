/*
 * bench/counts.c — timerbench-counts: one micro-benchmark operation (insert,
 * cancel or expire) on one backend at one N, with Valgrind's collection
 * switched on around exactly the part the micro-benchmark times, so that
 * `valgrind --tool=callgrind --cache-sim=yes --collect-atstart=no` counts
 * the instructions and simulated cache misses of that part alone.  These
 * counts do not depend on the machine's noise (bench/run.py --profile
 * counts and `./timerbench counts` run it and divide by the operations).
 *
 * It reproduces bench/micro.c's set-up through the public interface only:
 * the head-to-head configuration (bh_configs), the same family name and so
 * the same seed rule (bh_seed_for of the micro family's name and N, so
 * the N base tasks get micro.c's delays), the same fill and random cancel
 * order (earliest first on the worst workload), the inbox settling and
 * refill micro.c uses (bh_settle and bh_refill of bench/common.c),
 * tb_reserve() untimed before anything is measured and
 * an untimed warm-up of two batches.  One batch is measured, of micro.c's
 * size (N/8, at most 1024) for insert and cancel, and all N tasks for
 * expire (into an empty scheduler, as micro.c's expire).
 *
 * `--backend floor` counts the interface's floor (tb_backend_floor: the
 * core's checks, the pool and the handle's check with no structure behind
 * them), insert and cancel only, since it runs nothing.
 *
 * Its one line of JSON on stdout says what ran and the structure's work per
 * operation (tb_stats deltas across the collected part); run outside
 * Valgrind it does the same work and the toggles are no-ops.
 */
#include <stdlib.h>
#include <string.h>

#include <valgrind/callgrind.h>

#include "bench.h"

#define DEFAULT_SEED 0x74696D6572ULL /* "timer": bench/main.c's default */

enum op { OP_INSERT, OP_CANCEL, OP_EXPIRE };
static const char *const op_names[] = {"insert", "cancel", "expire"};

struct run {
    const struct tb_backend *b;
    enum op op;
    enum bh_workload w;
    struct bh_config c;
    enum bh_inbox inbox;
    int64_t n;
    int64_t batch;
    uint64_t rng;
    struct tb_sched *s;
    int64_t tick;
    int64_t clock;
    tb_handle *h;
    uint32_t *fired;
    uint32_t *slot_ids;
    size_t nfired;
    uint64_t runs;
    char name[256];
};

static struct run R;

static void die(const char *what, long rc)
{
    fprintf(stderr, "timerbench-counts: %s: %s\n", what,
            rc < 0 ? tb_strerror((int)rc) : "unexpected result");
    exit(1);
}

static void *xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        die("out of memory", TB_ENOMEM);
    return p;
}

static int count_run(void *arg)
{
    (*(uint64_t *)arg)++;
    return 0;
}

/* A base task that runs is replaced untimed, as micro.c's refill does. */
static int base_fired(void *arg)
{
    R.fired[R.nfired++] = *(uint32_t *)arg;
    return 0;
}

static int put_base(void *ctx, uint32_t i)
{
    (void)ctx;
    return tb_schedule(R.s, bh_draw(R.w, &R.rng), base_fired,
                       &R.slot_ids[i], &R.h[i]);
}

static void schedule_base(uint32_t i)
{
    int rc = put_base(NULL, i);
    if (rc)
        die("tb_schedule", rc);
}

static uint64_t transfers_now(void)
{
    return bh_transfers(R.s);
}

/* The base as bench/common.c holds it, for micro.c's settle and refill. */
static struct bh_hold hold_of(void)
{
    return (struct bh_hold){R.s,      R.inbox, R.tick,    R.n,
                            &R.clock, R.fired, &R.nfired, put_base,
                            NULL};
}

static void settle(uint64_t transfers0, int64_t n)
{
    struct bh_hold h = hold_of();
    long rc = bh_settle(&h, transfers0, n, NULL);
    if (rc < 0)
        die("settle", rc);
}

static void refill(void)
{
    struct bh_hold h = hold_of();
    const char *what = NULL;
    long rc = bh_refill(&h, &what);
    if (rc)
        die(what, rc);
}

static void fill_base(void)
{
    size_t n = (size_t)R.n;
    /* room for the base, the warm-up's records and the measured batch, so
     * that nothing grows inside the measured part (as micro.c reserves) */
    int rc = tb_reserve(R.s, n + 4 * (size_t)R.batch);
    if (rc)
        die("tb_reserve", rc);
    R.h = xcalloc(n, sizeof *R.h);
    R.fired = xcalloc(n, sizeof *R.fired);
    R.slot_ids = xcalloc(n, sizeof *R.slot_ids);
    for (uint32_t i = 0; i < (uint32_t)n; i++) {
        R.slot_ids[i] = i;
        schedule_base(i);
    }
    settle(0, R.n);
    refill();
}

/* The worst workload (bench.h, bh_draw) on a heap that cleans zombies at
 * its head when a task is added (Go's cleanHead, quadheap): micro.c's
 * sweep_head, so that the measured inserts do not clean the warm-up's
 * cancelled inserts, which are the earliest tasks and sit at the head. */
static void sweep_head(void)
{
    unsigned caps = R.b->caps;
    if (R.w != BH_WORST || !(caps & TB_CAP_LAZY_CANCEL) ||
        (caps & TB_CAP_PURGE) || R.tick > 0)
        return;
    tb_handle h;
    int rc = tb_schedule(R.s, bh_workloads[BH_WORST].hi + TB_SEC, count_run,
                         &R.runs, &h);
    if (rc)
        die("tb_schedule", rc);
    tb_cancel(R.s, h);
}

/* Untimed, like micro.c's warm-up: two batches of the operation with the
 * state put back (inserted tasks cancelled; cancelled base tasks
 * rescheduled), so the measured batch finds warm caches and free lists
 * rather than the fill's leftovers. */
static void warm_up(void)
{
    int64_t k = R.batch;
    tb_handle *tmp = xcalloc((size_t)k, sizeof *tmp);
    for (int round = 0; round < 2; round++) {
        if (R.op == OP_INSERT) {
            uint64_t tr0 = R.inbox ? transfers_now() : 0;
            for (int64_t i = 0; i < k; i++) {
                int rc = tb_schedule(R.s, bh_draw(R.w, &R.rng), count_run,
                                     &R.runs, &tmp[i]);
                if (rc)
                    die("tb_schedule", rc);
            }
            settle(tr0, k);
            for (int64_t i = 0; i < k; i++)
                tb_cancel(R.s, tmp[i]);
            sweep_head();
        } else if (R.w == BH_WORST) {
            /* micro.c's order: the k slots scheduled last, earliest
             * first, put back in the opposite order (no random draw: the
             * generator's state holds the workload's sequence) */
            uint64_t tr0 = R.inbox ? transfers_now() : 0;
            for (int64_t i = 0; i < k; i++)
                if (tb_cancel(R.s, R.h[R.n - 1 - i]) != 1)
                    die("a pending task could not be cancelled", 0);
            for (int64_t i = k - 1; i >= 0; i--)
                schedule_base((uint32_t)(R.n - 1 - i));
            settle(tr0, k);
        } else {
            uint64_t tr0 = R.inbox ? transfers_now() : 0;
            for (int64_t i = 0; i < k; i++) {
                uint32_t slot = (uint32_t)(bh_rand(&R.rng) % (uint64_t)R.n);
                if (tb_cancel(R.s, R.h[slot]) == 1)
                    schedule_base(slot);
            }
            settle(tr0, 0);
        }
        refill();
    }
    free(tmp);
}

/* The structure's work counters, as the micro JSON names them. */
struct work {
    uint64_t v[7];
};
static const char *const work_names[] = {
    "sift_levels", "visits", "rounds", "cascades", "bucket_offers", "ticks",
    "transfers"};

static struct work work_now(void)
{
    struct tb_stats s;
    tb_stats(R.s, &s);
    struct work w = {{s.sift_levels, s.visits, s.rounds, s.cascades,
                      s.bucket_offers, s.ticks, s.transfers}};
    return w;
}

/* The collected part of each operation; returns the operations done. */
static int64_t measure_insert(void)
{
    int64_t n = R.batch;
    int64_t *delays = xcalloc((size_t)n, sizeof *delays);
    tb_handle *tmp = xcalloc((size_t)n, sizeof *tmp);
    for (int64_t i = 0; i < n; i++)
        delays[i] = bh_draw(R.w, &R.rng);
    int rc = tb_reserve(R.s, (size_t)n);
    if (rc)
        die("tb_reserve", rc);
    uint64_t tr0 = R.inbox ? transfers_now() : 0;
    CALLGRIND_TOGGLE_COLLECT;
    for (int64_t i = 0; i < n; i++) {
        rc = tb_schedule(R.s, delays[i], count_run, &R.runs, &tmp[i]);
        if (rc)
            break;
    }
    settle(tr0, n);
    CALLGRIND_TOGGLE_COLLECT;
    if (rc)
        die("tb_schedule", rc);
    free(delays);
    free(tmp);
    return n;
}

static int64_t measure_cancel(void)
{
    size_t n = (size_t)R.n;
    uint32_t *perm = xcalloc(n, sizeof *perm);
    for (size_t i = 0; i < n; i++)
        perm[i] = (uint32_t)(R.w == BH_WORST ? n - 1 - i : i);
    for (size_t i = R.w == BH_WORST ? 0 : n; i > 1; i--) {
        /* micro.c's shuffle, same draws; worst: earliest first */
        size_t j = (size_t)(bh_rand(&R.rng) % i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
    int64_t k = R.batch;
    tb_handle *tmp = xcalloc((size_t)k, sizeof *tmp);
    for (int64_t i = 0; i < k; i++)
        tmp[i] = R.h[perm[i]];
    int64_t ok = 0;
    CALLGRIND_TOGGLE_COLLECT;
    for (int64_t i = 0; i < k; i++)
        ok += tb_cancel(R.s, tmp[i]) == 1;
    long ran = R.inbox == BH_INBOX_NONE ? 0 : tb_advance(R.s, tb_now(R.s));
    CALLGRIND_TOGGLE_COLLECT;
    if (ran < 0)
        die("tb_advance", ran);
    if (ok != k)
        die("a pending task could not be cancelled", 0);
    free(perm);
    free(tmp);
    return k;
}

static int64_t measure_expire(void)
{
    int64_t n = R.n;
    for (int64_t i = 0; i < n; i++) {
        int rc = tb_schedule(R.s, bh_draw(R.w, &R.rng), count_run, &R.runs,
                             NULL);
        if (rc)
            die("tb_schedule", rc);
    }
    long rc = tb_advance(R.s, R.clock);
    if (rc < 0)
        die("tb_advance", rc);
    uint64_t settled = R.runs, target = (uint64_t)n;
    const int64_t step = bh_workloads[R.w].expire_step;
    /* a granular wheel (Linux's) may run a task up to its level's
     * granularity late, under 8/63 of its delay (TB_CAP_GRANULAR) */
    const int64_t hi = bh_workloads[R.w].hi;
    const int64_t slack = (R.b->caps & TB_CAP_GRANULAR) ? hi / 63 * 8 : 0;
    const int64_t end = R.clock + hi + slack + 2 * step +
                        2 * (R.tick > 0 ? R.tick : 0) + 10 * step;
    CALLGRIND_TOGGLE_COLLECT;
    while (R.runs < target && R.clock <= end) {
        R.clock += step;
        rc = tb_advance(R.s, R.clock);
        if (rc < 0)
            break;
    }
    CALLGRIND_TOGGLE_COLLECT;
    if (rc < 0)
        die("tb_advance", rc);
    if (R.runs < target)
        die("tasks did not run by their deadline", 0);
    /* as micro.c: the cost per task of those that ran in the timed loop */
    return (int64_t)(R.runs - settled);
}

static int usage(void)
{
    fprintf(stderr,
            "usage: timerbench-counts --list | --backend NAME "
            "--op insert|cancel|expire --n N\n"
            "                         [--workload W] [--roc on|off] "
            "[--seed S]\n"
            "Runs under valgrind --tool=callgrind --collect-atstart=no; "
            "see bench/COUNTS.md.\n");
    return 2;
}

static const char *arg_value(int argc, char **argv, int *i, const char *flag)
{
    size_t len = strlen(flag);
    if (strncmp(argv[*i], flag, len) != 0)
        return NULL;
    if (argv[*i][len] == '=')
        return argv[*i] + len + 1;
    if (argv[*i][len] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

int main(int argc, char **argv)
{
    const char *backend = NULL, *op = NULL, *workload = "uniform",
               *roc = NULL, *seed = NULL;
    long long n = 0;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if (strcmp(argv[i], "--list") == 0) {
            /* name, and "roc" where remove-on-cancel changes what the
             * backend does (its cancel is then measured both ways) */
            for (size_t k = 0; k < tb_backend_count(); k++)
                printf("%s%s\n", tb_backend_at(k)->name,
                       bh_honours_remove_on_cancel(tb_backend_at(k))
                           ? " roc" : "");
            /* last, marked: the interface's floor, insert and cancel only */
            printf("%s floor\n", tb_backend_floor.name);
            return 0;
        }
        if ((v = arg_value(argc, argv, &i, "--backend")))
            backend = v;
        else if ((v = arg_value(argc, argv, &i, "--op")))
            op = v;
        else if ((v = arg_value(argc, argv, &i, "--n"))) {
            char *end;
            n = strtoll(v, &end, 10);
            if (*end || n < 1 || n > 100000000)
                return usage();
        } else if ((v = arg_value(argc, argv, &i, "--workload")))
            workload = v;
        else if ((v = arg_value(argc, argv, &i, "--roc")))
            roc = v;
        else if ((v = arg_value(argc, argv, &i, "--seed")))
            seed = v;
        else
            return usage();
    }
    if (!backend || !op || !n)
        return usage();
    /* the floor is not in the registry (it is not a timer): named here */
    R.b = strcmp(backend, tb_backend_floor.name) == 0 ? &tb_backend_floor
                                                      : tb_backend_find(backend);
    if (!R.b) {
        fprintf(stderr, "timerbench-counts: no backend '%s'\n", backend);
        return 2;
    }
    int o = -1;
    for (int k = 0; k < 3; k++)
        if (strcmp(op, op_names[k]) == 0)
            o = k;
    int w = -1;
    for (int k = 0; k < BH_NWORKLOADS; k++)
        if (strcmp(workload, bh_workloads[k].name) == 0)
            w = k;
    /* timeouts, periodic and idle are operations of their own in micro.c */
    if (o < 0 || w < 0 || w == BH_TIMEOUTS || w == BH_PERIODIC ||
        w == BH_IDLE ||
        (w == BH_WORST && o == OP_EXPIRE) || /* micro.c has none either */
        /* the floor runs nothing, so it has no expiry to count */
        (R.b == &tb_backend_floor && o == OP_EXPIRE) ||
        (roc && strcmp(roc, "on") != 0 && strcmp(roc, "off") != 0))
        return usage();
    R.op = (enum op)o;
    R.w = (enum bh_workload)w;
    bh.seed = seed ? strtoull(seed, NULL, 0) : DEFAULT_SEED;
    R.n = n;

    struct tb_config base = {0};
    struct bh_config cs[BH_MAX_CONFIGS];
    if (bh_configs(R.b, R.w, &base, false, false, cs) == 0) {
        fprintf(stderr, "timerbench-counts: %s has no head-to-head "
                        "configuration\n", backend);
        return 1;
    }
    R.c = cs[0];
    if (R.op == OP_CANCEL && bh_honours_remove_on_cancel(R.b)) {
        bool on = roc && strcmp(roc, "on") == 0;
        bh_label_add(&R.c, "roc", on ? "on" : "off");
        if (on)
            R.c.cfg.flags |= TB_F_REMOVE_ON_CANCEL;
    }
    if (R.op == OP_EXPIRE) {
        char step[32];
        bh_fmt_ns(step, sizeof step, bh_workloads[R.w].expire_step);
        bh_label_add(&R.c, "step", step);
    }
    R.inbox = bh_inbox_of(R.b, &R.c.cfg);
    bh_name(R.name, sizeof R.name, op_names[R.op], R.b->name,
            bh_workloads[R.w].name, R.c.label);
    R.rng = bh_seed_for(R.name, R.n);
    int64_t b8 = R.n / 8;
    R.batch = b8 < 1 ? 1 : b8 > 1024 ? 1024 : b8;

    int rc = tb_create(R.b, &R.c.cfg, &R.s);
    if (rc)
        die("tb_create", rc);
    struct tb_config r;
    tb_sched_config(R.s, &r);
    R.tick = (R.b->caps & TB_CAP_TICKED) ? r.tick_ns : 0;
    R.clock = tb_now(R.s);
    if (R.op != OP_EXPIRE) {
        fill_base();
        warm_up();
    }

    struct work w0 = work_now();
    int64_t ops = R.op == OP_INSERT ? measure_insert()
                : R.op == OP_CANCEL ? measure_cancel() : measure_expire();
    struct work w1 = work_now();

    printf("{\"name\": \"%s/N:%lld\", \"op\": \"%s\", \"backend\": \"%s\", "
           "\"workload\": \"%s\", \"config\": \"%s\", \"n\": %lld, "
           "\"ops\": %lld, \"seed\": %llu, \"valgrind\": %s, \"work_per_op\": {",
           R.name, (long long)R.n, op_names[R.op], R.b->name,
           bh_workloads[R.w].name, R.c.label, (long long)R.n, (long long)ops,
           (unsigned long long)bh.seed,
           RUNNING_ON_VALGRIND ? "true" : "false");
    for (size_t k = 0; k < sizeof work_names / sizeof work_names[0]; k++)
        printf("%s\"%s\": %.6g", k ? ", " : "", work_names[k],
               ops ? (double)(w1.v[k] - w0.v[k]) / (double)ops : 0.0);
    printf("}}\n");
    tb_destroy(R.s);
    free(R.h);
    free(R.fired);
    free(R.slot_ids);
    return 0;
}
