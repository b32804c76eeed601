/*
 * soak.c — the stress suite's producers and cancellers, run against one
 * monotonic scheduler per backend for a configurable time, in rounds, to
 * find what only shows up with time: leaks, a structure that grows a little
 * every round, accounting that drifts, a task lost once in a million.
 *
 * One scheduler lives through every round.  A round is ROUND_MS of load
 * (producers scheduling one-shot and periodic tasks and cancelling recent
 * ones, a canceller thread cancelling other threads' handles, live or long
 * gone) and then a drain to zero pending.  After each drain every task is
 * accounted for exactly, every task record must be back in the pool (its
 * free count a whole number of chunks), and the memory the scheduler
 * holds (stats.bytes_held, cross-checked against a counting allocator) must
 * equal what it held after the warm-up: max_pending bounds the load, so once
 * the pool and the structure have grown to its high-water mark nothing may
 * grow any more.  After the last round shutdown_now must not change it, and
 * tb_destroy must give back every byte.
 *
 * Time per backend: --seconds N (the meson option soak_seconds), overridden
 * by the environment variable TB_SOAK_SECONDS for long runs.  An alarm ends
 * a run that hangs, so the test needs no meson timeout.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tb_core.h" /* TB_POOL_CHUNK: the pool grows a chunk at a time */
#include "testlib.h"

enum {
    PRODUCERS = 3,
    ROUND_MS = 250,
    STABLE_ROUNDS = 4,           /* unchanged rounds that end the warm-up */
    MIN_WARMUP_CAP = 16,         /* rounds the warm-up may take at least */
    MAX_POOL_CHUNKS = 8,         /* records in flight never need more */
    MAX_PENDING = 1536,          /* well inside two pool chunks of 1024 */
    SLOTS = 1 << 18,             /* tasks one producer may make per round */
    WINDOW = 64,                 /* recent handles a producer may cancel */
    SHARED = 1024,               /* handles offered to the canceller */
};

static const struct tb_backend *backend;
static double seconds = 2;

/* ---- A thread-safe counting allocator ---------------------------------- */

static _Atomic int64_t alloc_live;

static void *count_alloc(void *ctx, size_t size)
{
    (void)ctx;
    void *p = malloc(size);
    if (p)
        atomic_fetch_add(&alloc_live, (int64_t)size);
    return p;
}

static void count_free(void *ctx, void *p, size_t size)
{
    (void)ctx;
    atomic_fetch_sub(&alloc_live, (int64_t)size);
    free(p);
}

static const struct tb_allocator counting = {count_alloc, count_free, NULL};

/* ---- Tasks ------------------------------------------------------------- */

struct slot {
    _Atomic int runs;
    _Atomic int cancels;   /* successful cancels, from any thread */
    _Atomic tb_handle h;   /* set once scheduled: the canceller's view */
    int periodic;
};

static int soak_task(void *arg)
{
    atomic_fetch_add_explicit(&((struct slot *)arg)->runs, 1,
                              memory_order_relaxed);
    return 0;
}

/* Tasks producers offer to the canceller; stale ones are the point.  The
 * handle is read from the slot so that handle and slot always match. */
struct shared {
    struct slot *_Atomic slot[SHARED];
};

struct round {
    struct tb_sched *s;
    struct shared *sh;
    _Atomic int stop;
};

struct producer {
    struct round *r;
    struct slot *slots;
    int *periodic;         /* slots of this round's periodic tasks */
    int nperiodic;
    int n;                 /* slots used */
    uint64_t seed;
    long schedules, full, errors;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    struct tb_sched *s = p->r->s;
    tb_handle recent[WINDOW] = {0};
    struct slot *recent_slot[WINDOW] = {0};
    while (!atomic_load(&p->r->stop) && p->n < SLOTS) {
        struct slot *sl = &p->slots[p->n];
        uint64_t kind = rng_next(&p->seed) % 100;
        int64_t delay = rng_range(&p->seed, 0, 20 * TB_MS);
        tb_handle h;
        int rc;
        sl->periodic = kind < 3;
        if (sl->periodic) {
            int64_t per = rng_range(&p->seed, 1, 5) * TB_MS;
            rc = kind < 2 ? tb_schedule_fixed_rate(s, delay, soak_task, sl, &h,
                                                   per)
                          : tb_schedule_fixed_delay(s, delay, soak_task, sl, &h,
                                                    per);
        } else {
            rc = tb_schedule(s, delay, soak_task, sl, &h);
        }
        if (rc == TB_EFULL) { /* back-pressure: let the timer catch up */
            p->full++;
            sched_yield();
            continue;
        }
        if (rc != TB_OK) {
            p->errors++;
            continue;
        }
        atomic_store(&sl->h, h);
        if (sl->periodic)
            p->periodic[p->nperiodic++] = p->n;
        p->n++;
        p->schedules++;
        int w = (int)(rng_next(&p->seed) % WINDOW);
        recent[w] = h;
        recent_slot[w] = sl;
        int k = (int)(rng_next(&p->seed) % SHARED);
        atomic_store(&p->r->sh->slot[k], sl);
        if (rng_next(&p->seed) % 2) {
            int c = (int)(rng_next(&p->seed) % WINDOW);
            if (recent[c]) {
                rc = tb_cancel(s, recent[c]);
                if (rc == 1)
                    atomic_fetch_add(&recent_slot[c]->cancels, 1);
                else if (rc != 0)
                    p->errors++;
            }
        }
    }
    return NULL;
}

/* Cancels handles other threads made: live, running or long gone. */
static void *cancel_others(void *arg)
{
    struct round *r = arg;
    uint64_t seed = 77;
    long errors = 0;
    while (!atomic_load(&r->stop)) {
        int k = (int)(rng_next(&seed) % SHARED);
        struct slot *sl = atomic_load(&r->sh->slot[k]);
        tb_handle h = sl ? atomic_load(&sl->h) : TB_HANDLE_NONE;
        if (!h)
            continue;
        int rc = tb_cancel(r->s, h);
        if (rc == 1)
            atomic_fetch_add(&sl->cancels, 1);
        else if (rc != 0)
            errors++;
    }
    return (void *)(intptr_t)errors;
}

static int drained(void *ctx)
{
    struct tb_stats st;
    tb_stats(ctx, &st);
    return st.pending == 0 && st.running == 0 && tb_stats_balanced(&st);
}

struct totals {
    long schedules, cancels, runs, full;
};

/* One round of load, then the drain and the exact accounting. */
static void run_round(struct tb_sched *s, struct producer *prod,
                      struct totals *tot, int round)
{
    static struct shared sh;
    memset(&sh, 0, sizeof sh);
    struct round r = {.s = s, .sh = &sh};
    struct tb_stats before;
    tb_stats(s, &before);
    pthread_t th[PRODUCERS], canceller;
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i].r = &r;
        prod[i].n = prod[i].nperiodic = 0;
        prod[i].schedules = prod[i].full = prod[i].errors = 0;
        prod[i].seed = 1000003u * (uint64_t)(round + 1) + (uint64_t)i;
        memset(prod[i].slots, 0, SLOTS * sizeof *prod[i].slots);
        assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
    }
    assert_int_equal(pthread_create(&canceller, NULL, cancel_others, &r), 0);
    struct timespec ts = {0, ROUND_MS * 1000L * 1000L};
    nanosleep(&ts, NULL);
    atomic_store(&r.stop, 1);
    void *cerr;
    pthread_join(canceller, &cerr);
    assert_int_equal((intptr_t)cerr, 0);
    long schedules = 0, cancels = 0, runs = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(prod[i].errors, 0);
        schedules += prod[i].schedules;
        tot->full += prod[i].full;
        /* periodic tasks run until cancelled: stop what is still going */
        for (int k = 0; k < prod[i].nperiodic; k++) {
            struct slot *sl = &prod[i].slots[prod[i].periodic[k]];
            int rc = tb_cancel(s, atomic_load(&sl->h));
            assert_true(rc == 0 || rc == 1);
            if (rc == 1)
                atomic_fetch_add(&sl->cancels, 1);
        }
    }
    /* generous: 20 ms of delays plus whatever a sanitizer costs */
    if (!wait_until(drained, s, 60 * TB_SEC)) {
        /* name what is stuck: the slots nobody accounted for */
        for (int i = 0, shown = 0; i < PRODUCERS && shown < 5; i++)
            for (int k = 0; k < prod[i].n && shown < 5; k++) {
                struct slot *sl = &prod[i].slots[k];
                int rn = atomic_load(&sl->runs);
                int cn = atomic_load(&sl->cancels);
                if (sl->periodic ? cn == 0 : rn + cn == 0) {
                    print_message("  unresolved: producer %d task %d (%s, "
                                  "handle %#llx): %d runs, %d cancels\n",
                                  i, k, sl->periodic ? "periodic"
                                                     : "one-shot",
                                  (unsigned long long)atomic_load(&sl->h),
                                  rn, cn);
                    shown++;
                }
            }
        struct tb_stats st;
        tb_stats(s, &st);
        fail_msg("%s: round %d did not drain in 60 s: pending %llu, zombies "
                 "%llu, running %llu, submitted %llu, finished %llu, "
                 "cancelled %llu, dropped %llu, fired %llu",
                 backend->name, round, (unsigned long long)st.pending,
                 (unsigned long long)st.zombies,
                 (unsigned long long)st.running,
                 (unsigned long long)st.submitted,
                 (unsigned long long)st.finished,
                 (unsigned long long)st.cancelled,
                 (unsigned long long)st.dropped,
                 (unsigned long long)st.fired);
    }
    /* A periodic task ends cancelled, or after a run whose re-arm was
     * refused at max_pending (DECISIONS.md D1: retired as finished, counted
     * in rejected); nothing else may end it. */
    long one_shot_runs = 0, refused = 0, full = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        full += prod[i].full;
        for (int k = 0; k < prod[i].n; k++) {
            struct slot *sl = &prod[i].slots[k];
            int rn = atomic_load(&sl->runs), cn = atomic_load(&sl->cancels);
            bool ok = sl->periodic ? cn == 1 || (cn == 0 && rn >= 1)
                                   : rn + cn == 1;
            if (!ok)
                fail_msg("%s: round %d producer %d task %d (%s) ran %d "
                         "times, cancelled %d", backend->name, round, i, k,
                         sl->periodic ? "periodic" : "one-shot", rn, cn);
            runs += rn;
            cancels += cn;
            if (!sl->periodic)
                one_shot_runs += rn;
            else if (cn == 0)
                refused++;
        }
    }
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.submitted - before.submitted, (uint64_t)schedules);
    assert_int_equal(st.cancelled - before.cancelled, (uint64_t)cancels);
    assert_int_equal(st.fired - before.fired, (uint64_t)runs);
    assert_int_equal(st.finished - before.finished,
                     (uint64_t)(one_shot_runs + refused));
    assert_int_equal(st.rejected - before.rejected, (uint64_t)(full + refused));
    assert_int_equal(st.dropped, 0);
    assert_balanced(s);
    tot->schedules += schedules;
    tot->cancels += cancels;
    tot->runs += runs;
}

static uint64_t bytes_held(struct tb_sched *s)
{
    struct tb_stats st;
    tb_stats(s, &st);
    if ((int64_t)st.bytes_held != atomic_load(&alloc_live))
        fail_msg("%s: bytes_held %llu, the allocator holds %lld",
                 backend->name, (unsigned long long)st.bytes_held,
                 (long long)atomic_load(&alloc_live));
    return st.bytes_held;
}

/* Free records in the task pool: its records less the live ones (what
 * tb_pool_reserve compares).  Drained, every record must be free, so the
 * count is a whole number of chunks; anything else is a record that was
 * never given back.  Read from the pool itself, not probed with tb_reserve
 * under a refusing allocator: tb_reserve also reserves a heap's array, whose
 * free room is not the pool's. */
static size_t free_records(struct tb_sched *s)
{
    struct tb_pool *p = &s->pool;
    if (p->locked)
        pthread_mutex_lock(&p->lock);
    size_t n = p->nchunks * TB_POOL_CHUNK - p->live;
    if (p->locked)
        pthread_mutex_unlock(&p->lock);
    return n;
}

/* A periodic task cancelled at the moment its run ends, while the backend
 * re-arms it, must still be stopped: the cancel answers 1 and no run
 * follows.  A backend whose cancel tries "waiting" and then "running" as two
 * separate steps can miss a task that moves from running back to waiting
 * between them, answer 0, and leave the task running for ever (found by
 * the soak in timerwheel: a round that never drained).  The canceller
 * waits for the run counter to move and cancels at once, which lands in
 * that window far more often than random load does. */
struct rearm {
    _Atomic long runs;
};

static int rearm_task(void *arg)
{
    atomic_fetch_add(&((struct rearm *)arg)->runs, 1);
    return 0;
}

static void test_cancel_while_rearming(void **state)
{
    (void)state;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = TB_MS,
                          .threads = 1};
    struct tb_sched *s = make_sched(backend, &c);
    assert_int_equal(tb_start(s), TB_OK);
    uint64_t seed = 5;
    long tries = 0, missed = 0;
    int64_t end = tb_monotonic_ns() +
                  (int64_t)(seconds / 4 * (double)TB_SEC);
    static struct rearm r;
    while (tries < 50 || tb_monotonic_ns() < end) {
        atomic_store(&r.runs, 0);
        tb_handle h;
        int rc = tries % 2
                     ? tb_schedule_fixed_rate(s, 0, rearm_task, &r, &h, TB_MS)
                     : tb_schedule_fixed_delay(s, 0, rearm_task, &r, &h, TB_MS);
        assert_int_equal(rc, TB_OK);
        long target = 1 + (long)(rng_next(&seed) % 3);
        int64_t give_up = tb_monotonic_ns() + 10 * TB_SEC;
        while (atomic_load(&r.runs) < target && tb_monotonic_ns() < give_up)
            ;
        /* sweep the moment of the cancel across the end of the run */
        for (volatile unsigned spin = (unsigned)(rng_next(&seed) % 512);
             spin > 0; spin--)
            ;
        rc = tb_cancel(s, h);
        tries++;
        if (rc != 1) {
            missed++;
            /* stop it anyway, so the next try starts clean */
            while (tb_cancel(s, h) != 1 && tb_monotonic_ns() < give_up)
                ;
        }
        while (!drained(s) && tb_monotonic_ns() < give_up)
            sched_yield();
        assert_true(drained(s));
    }
    tb_destroy(s);
    print_message("cancel while re-arming %s: %ld tries, %ld cancels of a "
                  "live periodic task answered 0\n", backend->name, tries,
                  missed);
    assert_int_equal(missed, 0);
}

static void test_soak(void **state)
{
    (void)state;
    atomic_store(&alloc_live, 0);
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = TB_MS,
                          .threads = 2, .max_pending = MAX_PENDING,
                          .allocator = &counting};
    struct tb_sched *s = make_sched(backend, &c);
    uint64_t start = bytes_held(s);
    assert_int_equal(tb_start(s), TB_OK);
    struct producer prod[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (struct producer){0};
        prod[i].slots = calloc(SLOTS, sizeof *prod[i].slots);
        prod[i].periodic = calloc(SLOTS, sizeof *prod[i].periodic);
        assert_non_null(prod[i].slots);
        assert_non_null(prod[i].periodic);
    }
    int64_t t0 = tb_monotonic_ns();
    int64_t end = t0 + (int64_t)(seconds * (double)TB_SEC);
    /* The warm-up lasts until bytes_held has not moved for STABLE_ROUNDS
     * rounds: the pool and the structure grow to the load's high-water
     * mark, which thread timing decides (an executor's queue, zombies
     * waiting for their deadline, cancels a wheel has not processed yet),
     * and then stay.  After it, every round must end where the warm-up
     * did, with one exception that is not a leak: a new high-water mark of
     * records in flight adds a pool chunk, which the record probe shows
     * (more free records, all of them free).  Memory that moves without
     * that, records not given back, or a pool that keeps growing fail. */
    int64_t warm_limit = t0 + (end - t0) / 2;
    struct totals tot = {0};
    uint64_t warm = 0, first_warm = 0, prev = 0, lo = UINT64_MAX, hi = 0;
    size_t free_warm = 0;
    int rounds = 0, stable = 0, warm_rounds = 0, pool_growths = 0;
    for (;;) {
        run_round(s, prod, &tot, rounds);
        rounds++;
        uint64_t b = bytes_held(s);
        size_t fr = free_records(s);
        if (fr % TB_POOL_CHUNK)
            fail_msg("%s: round %d: %zu task records free after the drain, "
                     "not a whole number of %u-record chunks: records were "
                     "not given back", backend->name, rounds, fr,
                     TB_POOL_CHUNK);
        if (fr > MAX_POOL_CHUNKS * TB_POOL_CHUNK)
            fail_msg("%s: round %d: the pool holds %zu records for at most "
                     "%d pending: it keeps growing", backend->name, rounds,
                     fr, MAX_PENDING);
        if (!warm_rounds) {
            stable = rounds > 1 && b == prev ? stable + 1 : 0;
            if (stable == STABLE_ROUNDS) {
                warm_rounds = rounds;
                warm = first_warm = b;
                free_warm = fr;
            } else if (rounds >= MIN_WARMUP_CAP &&
                       tb_monotonic_ns() > warm_limit) {
                fail_msg("%s: bytes_held still moving after %d rounds (%llu "
                         "now): memory grows round after round",
                         backend->name, rounds, (unsigned long long)b);
            }
        } else if (fr > free_warm && b > warm) {
            print_message("  %s: round %d: a new high-water mark of records "
                          "in flight, the pool grew to %zu records (%llu "
                          "bytes held)\n", backend->name, rounds, fr,
                          (unsigned long long)b);
            pool_growths++;
            warm = b;
            free_warm = fr;
        } else if (b != warm || fr != free_warm) {
            fail_msg("%s: round %d holds %llu bytes (%zu free records), "
                     "%llu (%zu) after the %d-round warm-up: the structure "
                     "%s across rounds", backend->name, rounds,
                     (unsigned long long)b, fr, (unsigned long long)warm,
                     free_warm, warm_rounds, b >= warm ? "grows" : "shrinks");
        }
        if (warm_rounds && rounds > warm_rounds) {
            lo = b < lo ? b : lo;
            hi = b > hi ? b : hi;
        }
        prev = b;
        if (warm_rounds && rounds >= warm_rounds + 2 &&
            tb_monotonic_ns() >= end)
            break;
    }
    double took = (double)(tb_monotonic_ns() - t0) / (double)TB_SEC;
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    uint64_t after_shutdown = bytes_held(s);
    assert_int_equal(after_shutdown, warm);
    assert_balanced(s);
    struct tb_stats st;
    tb_stats(s, &st);
    tb_destroy(s);
    int64_t after_destroy = atomic_load(&alloc_live);
    print_message("soak %s: %d rounds in %.1f s; %ld schedules, %ld cancels, "
                  "%ld runs, %ld max_pending refusals; peak pending %llu; "
                  "bytes held: created %llu, after the %d-round warm-up "
                  "%llu, later rounds %llu..%llu (%d pool growths; %zu task "
                  "records, all free), after shutdown %llu, after destroy "
                  "%lld\n",
                  backend->name, rounds, took, tot.schedules, tot.cancels,
                  tot.runs, tot.full, (unsigned long long)st.peak_pending,
                  (unsigned long long)start, warm_rounds,
                  (unsigned long long)first_warm, (unsigned long long)lo,
                  (unsigned long long)hi, pool_growths, free_warm,
                  (unsigned long long)after_shutdown,
                  (long long)after_destroy);
    assert_int_equal(after_destroy, 0);
    for (int i = 0; i < PRODUCERS; i++) {
        free(prod[i].slots);
        free(prod[i].periodic);
    }
}

int main(int argc, char **argv)
{
    int argi = 1;
    char *name = NULL;
    while (argi < argc) {
        if (strcmp(argv[argi], "--seconds") == 0 && argi + 1 < argc) {
            seconds = atof(argv[argi + 1]);
            argi += 2;
        } else {
            name = argv[argi++];
        }
    }
    const char *env = getenv("TB_SOAK_SECONDS");
    if (env && *env)
        seconds = atof(env);
    if (!(seconds > 0)) {
        fprintf(stderr, "soak: the time must be positive\n");
        return 2;
    }
    char *args[2] = {argv[0], name};
    const struct tb_backend *list[64];
    size_t n = backends_from_args(name ? 2 : 1, args, list, 64);
    /* a hang (a deadlock, a drain that never ends) fails the run instead of
     * blocking it: the load is time-bound, the drains have 60 s each */
    alarm((unsigned)(seconds * (double)n) + 600);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cancel_while_rearming),
        cmocka_unit_test(test_soak),
    };
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        backend = list[i];
        char title[128];
        snprintf(title, sizeof title, "soak/%s", backend->name);
        failed += cmocka_run_group_tests_name(title, tests, NULL, NULL);
    }
    return failed ? 1 : 0;
}
