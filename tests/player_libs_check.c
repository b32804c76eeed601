/*
 * player_libs_check.c — the event-loop library subjects of timerbench-play
 * (bench/player_libs.c, issue 41) on real plays: every library subject in
 * tblib_all is a player subject; a small purgatory play of each shape (2000
 * requests/s for 0.2 s) issues every operation from inside the loop's
 * thread, each with its lag, accounts for every request (fired +
 * cancelled = requests, nothing pending at close, no fire of a cancelled
 * one, none twice), fires about
 * the shape's share, never before its deadline by more than the library's
 * unit (tblib granularity_ns), and the row says what the counts say; a
 * trace far faster than any loop is reported saturated, every request
 * still accounted for; a trace of another delay; bad input.
 *
 * Each subject is wrapped in a subject of this file's own, which counts
 * what passes between the player and it and reads the clock just before
 * each schedule (the library's deadline cannot be earlier than that read
 * plus the delay, less its unit).  Timing is never asserted: only counts,
 * shares within generous margins, and the earliness bound.
 *
 * Exit 77 (skip) when no library was found at build time.
 */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "player.h"
#include "tblib.h"
#include "timerbench/scheduler.h"

#define MS INT64_C(1000000)

/* The library subject under test, and its tblib entry. */
static const struct pl_subject *subject;
static const struct tblib *lib;

/* ---- The wrapper: counts what passes between the player and the subject */

struct wrap {
    void *inner;
    pl_fire_fn fire;
    void *fire_arg;
    uint32_t max_ids;
    int64_t *deadline;      /* per id: our read before schedule + delay */
    uint8_t *fires;         /* per id */
    uint8_t *cancelled;     /* per id: cancel answered 1 */
    int in_play;
    pthread_t loop_thread;
    size_t schedules, cancels_ok, cancels_late, fired, twice, of_cancelled;
    size_t outside;         /* calls or fires not on the loop in play() */
    int64_t lateness_min;
};

/* What the last wrapped play left, read at its close. */
static struct wrap last;
static int64_t last_pending = -2, last_zombies = -2;

static int on_loop(const struct wrap *w)
{
    return w->in_play && pthread_equal(pthread_self(), w->loop_thread);
}

static void w_fire(void *arg, uint32_t id)
{
    struct wrap *w = arg;
    int64_t now = tb_monotonic_ns();
    if (!on_loop(w))
        w->outside++;
    if (id < w->max_ids) {
        if (w->fires[id]++)
            w->twice++;
        if (w->cancelled[id])
            w->of_cancelled++;
        int64_t late = now - w->deadline[id];
        if (late < w->lateness_min)
            w->lateness_min = late;
    }
    w->fired++;
    w->fire(w->fire_arg, id);
}

static void *w_open(const struct pl_subject *s, uint32_t max_ids,
                    pl_fire_fn fire, void *fire_arg, char *err, size_t errlen)
{
    (void)s;
    struct wrap *w = calloc(1, sizeof *w);
    assert_non_null(w);
    w->fire = fire;
    w->fire_arg = fire_arg;
    w->max_ids = max_ids;
    w->lateness_min = INT64_MAX;
    size_t n = max_ids ? max_ids : 1;
    w->deadline = calloc(n, sizeof *w->deadline);
    w->fires = calloc(n, 1);
    w->cancelled = calloc(n, 1);
    assert_true(w->deadline && w->fires && w->cancelled);
    w->inner = subject->open(subject, max_ids, w_fire, w, err, errlen);
    if (!w->inner) {
        free(w->deadline);
        free(w->fires);
        free(w->cancelled);
        free(w);
        return NULL;
    }
    return w;
}

static int w_schedule(void *h, uint32_t id, int64_t delay_ns)
{
    struct wrap *w = h;
    if (!on_loop(w))
        w->outside++;
    int64_t now = tb_monotonic_ns();
    if (id < w->max_ids)
        w->deadline[id] = now + delay_ns;
    int rc = subject->schedule(w->inner, id, delay_ns);
    if (rc == 0)
        w->schedules++;
    return rc;
}

static int w_cancel(void *h, uint32_t id)
{
    struct wrap *w = h;
    if (!on_loop(w))
        w->outside++;
    int rc = subject->cancel(w->inner, id);
    if (rc == 1) {
        w->cancels_ok++;
        if (id < w->max_ids)
            w->cancelled[id] = 1;
    } else if (rc == 0) {
        w->cancels_late++;
    }
    return rc;
}

static void w_stats(void *h, int64_t *pending, int64_t *zombies)
{
    struct wrap *w = h;
    subject->stats(w->inner, pending, zombies);
}

static int w_play(void *h, struct pl_player *p)
{
    struct wrap *w = h;
    w->loop_thread = pthread_self();
    w->in_play = 1;
    int rc = subject->play(w->inner, p);
    w->in_play = 0;
    return rc;
}

static void w_close(void *h)
{
    struct wrap *w = h;
    subject->stats(w->inner, &last_pending, &last_zombies);
    subject->close(w->inner);
    last = *w;
    last.deadline = NULL;
    last.fires = last.cancelled = NULL;
    free(w->deadline);
    free(w->fires);
    free(w->cancelled);
    free(w);
}

/* The subject under test behind the wrapper, as pl_play sees it. */
static struct pl_subject wrapped(void)
{
    return (struct pl_subject){
        .name = subject->name,
        .side = subject->side,
        .open = w_open,
        .schedule = w_schedule,
        .cancel = w_cancel,
        .close = w_close,
        .stats = w_stats,
        .structure = subject->structure,
        .play = w_play,
        .granularity_ns = subject->granularity_ns,
    };
}

/* Every operation's lag of the last play (pl_result.lag_out), -1 where
 * none was recorded. */
static int64_t *lags;

/* Plays t on the wrapped subject, pinned as timerbench-play pins. */
static int play(const struct pl_trace *t, struct pl_result *r, char *err,
                size_t errlen)
{
    struct pl_subject ws = wrapped();
    struct pl_pinning pin;
    pl_pinning_choose(&pin);
    memset(&last, 0, sizeof last);
    last_pending = last_zombies = -2;
    free(lags);
    lags = malloc(t->nops * sizeof *lags);
    assert_non_null(lags);
    for (size_t i = 0; i < t->nops; i++)
        lags[i] = -1;
    memset(r, 0, sizeof *r);
    r->lag_out = lags;
    return pl_play(t, &ws, &pin, r, err, errlen);
}

static size_t count_kind(const struct pl_trace *t, enum pl_kind k)
{
    size_t n = 0;
    for (size_t i = 0; i < t->nops; i++)
        n += t->ops[i].kind == k;
    return n;
}

/* What every completed play must show, whatever its rate: every operation
 * issued from the loop inside play(), every request fired or cancelled
 * (none pending at close), no fire twice or of a cancelled request, none
 * earlier than the library's unit allows, and the row agreeing. */
static void check_accounted(const struct pl_trace *t,
                            const struct pl_result *r)
{
    assert_int_equal(last.outside, 0);
    assert_int_equal(last.schedules, t->requests);
    assert_int_equal(last.schedules + last.cancels_ok + last.cancels_late,
                     t->nops);
    assert_int_equal(last.cancels_ok + last.cancels_late,
                     count_kind(t, PL_CANCEL));
    if (last.fired + last.cancels_ok != t->requests) {
        print_error("%s: %zu fired + %zu cancelled of %zu requests "
                    "(%lld pending at close)\n", subject->name, last.fired,
                    last.cancels_ok, t->requests, (long long)last_pending);
        fail();
    }
    assert_int_equal(last_pending, 0);
    assert_int_equal(last_zombies, 0);
    assert_int_equal(last.twice, 0);
    assert_int_equal(last.of_cancelled, 0);
    assert_int_equal(r->unexpected, 0);
    assert_int_equal(r->early, 0);
    assert_int_equal(r->fired, last.fired);
    assert_int_equal(r->cancels_late, last.cancels_late);
    assert_int_equal(r->requests, t->requests);
    assert_string_equal(r->subject, lib->name);
    assert_string_equal(r->side, "library");
    assert_string_equal(r->structure, lib->structure);
    if (last.fired && last.lateness_min < -lib->granularity_ns) {
        print_error("%s: a timeout fired %.3f ms before its deadline "
                    "(unit %lld ns)\n", subject->name,
                    (double)-last.lateness_min / 1e6,
                    (long long)lib->granularity_ns);
        fail();
    }
    /* a lag for every operation, the row's maximum among them */
    int64_t lag_max = -1;
    for (size_t i = 0; i < t->nops; i++) {
        if (lags[i] < 0) {
            print_error("%s: operation %zu of %zu has no lag (%lld)\n",
                        subject->name, i, t->nops, (long long)lags[i]);
            fail();
        }
        lag_max = lags[i] > lag_max ? lags[i] : lag_max;
    }
    assert_int_equal(r->lag_max_ns, lag_max);
    assert_true(r->lag_p50_ns >= 0);
    assert_true(r->lag_p50_ns <= r->lag_p99_ns);
    assert_true(r->lag_p99_ns <= r->lag_max_ns);
    assert_true(r->peak_pending > 0);
    assert_true(r->peak_pending <= (int64_t)t->requests);
    assert_int_equal(r->peak_zombies, 0);
    assert_true(r->cpu_ns_per_request > 0);
    assert_true(r->player_cpu_ns_per_request > 0);
    if (r->fired) {
        assert_true(r->lateness_p50_ns <= r->lateness_p99_ns);
        assert_true(r->lateness_p50_ns >= -lib->granularity_ns);
    }
}

/* ---- 1. Registered ------------------------------------------------------ */

static void test_registered(void **state)
{
    (void)state;
    assert_ptr_equal(pl_subject_find(lib->name), subject);
    assert_string_equal(subject->side, "library");
    assert_string_equal(subject->structure, lib->structure);
    assert_int_equal(subject->granularity_ns, lib->granularity_ns);
    assert_non_null(subject->play);
    /* listed after the backends and the floor */
    size_t n = pl_subject_count(), at = n;
    for (size_t i = 0; i < n; i++)
        if (pl_subject_at(i) == subject)
            at = i;
    assert_true(at < n);
    assert_non_null(pl_subject_find("floor"));
}

/* ---- 2. A small purgatory play of each shape ---------------------------- */

/* The share of requests whose log-normal completion is at or beyond the
 * 200 ms timeout (pl_purgatory's model). */
static double expected_share(double p50, double p75)
{
    double sigma = (log(p75) - log(p50)) / 0.674490;
    double z = (log(200.0) - log(p50)) / sigma;
    return 0.5 * erfc(z / sqrt(2.0));
}

static void purgatory_play(const char *shape, double p50, double p75)
{
    struct pl_trace t;
    char err[256] = "";
    assert_int_equal(pl_purgatory(&t, shape, 2000, 0.2, 41, err, sizeof err),
                     0);
    struct pl_result r;
    int rc = play(&t, &r, err, sizeof err);
    if (rc != 0) {
        print_error("%s: the play failed: %s\n", subject->name, err);
        fail();
    }
    check_accounted(&t, &r);
    assert_string_equal(r.shape, shape);
    /* the shape's share, within five standard deviations and 5 points */
    double want = expected_share(p50, p75), n = (double)t.requests;
    double margin = 5 * sqrt(want * (1 - want) / n) + 0.05;
    print_message("# %s %s: %zu requests, fired %.3f (model %.3f), lag p99 "
                  "%.0f us, lateness min %.0f us\n", subject->name, shape,
                  t.requests, r.fired_share, want, (double)r.lag_p99_ns / 1e3,
                  (double)last.lateness_min / 1e3);
    if (fabs(r.fired_share - want) > margin) {
        print_error("%s %s: fired share %.3f, the model's %.3f +- %.3f\n",
                    subject->name, shape, r.fired_share, want, margin);
        fail();
    }
    assert_true(fabs(r.fired_share - (double)r.fired / n) < 1e-9);
    pl_trace_free(&t);
}

static void test_few(void **state)
{
    (void)state;
    purgatory_play("few", 20.0, 60.0);
}

static void test_many(void **state)
{
    (void)state;
    purgatory_play("many", 200.0, 400.0);
}

/* ---- 3. Far too fast: saturated, still accounted for -------------------- */

/* 20000 requests in 0.2 ms (10^8 per second): no loop issues a schedule
 * in 10 ns, so the play falls behind, catches up, and says so. */
static void test_too_fast(void **state)
{
    (void)state;
    struct pl_trace t;
    char err[256] = "";
    assert_int_equal(pl_purgatory(&t, "few", 1e8, 0.0002, 42, err,
                                  sizeof err), 0);
    struct pl_result r;
    int rc = play(&t, &r, err, sizeof err);
    if (rc != 0) {
        print_error("%s: the play failed: %s\n", subject->name, err);
        fail();
    }
    check_accounted(&t, &r);
    print_message("# %s at 10^8/s: achieved %.0f/s, lag max %.1f ms: %s\n",
                  subject->name, r.achieved_rate, (double)r.lag_max_ns / 1e6,
                  r.why);
    assert_true(r.saturated);
    assert_non_null(strstr(r.why, "below offered"));
    assert_true(r.achieved_rate < 0.95 * r.offered_rate);
    assert_true(r.lag_max_ns > 0);
    pl_trace_free(&t);
}

/* ---- 4. A trace of another delay ---------------------------------------- */

/* Two requests of a 30 ms timeout, 1 ms apart, never cancelled: both fire
 * where the library takes any delay; a fixed_only library (one delay per
 * loop, the purgatory's) refuses the play with its reason. */
static void test_other_delay(void **state)
{
    (void)state;
    struct pl_op ops[] = {
        {.t = 0, .delay = 30 * MS, .id = 0, .kind = PL_SCHEDULE,
         .arrival = 1},
        {.t = 1 * MS, .delay = 30 * MS, .id = 1, .kind = PL_SCHEDULE,
         .arrival = 1},
    };
    struct pl_trace t = {.ops = ops, .nops = 2, .max_ids = 2, .requests = 2,
                         .seconds = 0.001, .max_delay = 30 * MS};
    struct pl_result r;
    char err[256] = "";
    int rc = play(&t, &r, err, sizeof err);
    if (lib->fixed_only) {
        assert_int_equal(rc, -1);
        print_message("# %s refuses a 30 ms timeout: %s\n", subject->name,
                      err);
        assert_non_null(strstr(err, "takes only the purgatory's 200 ms "
                                    "timeout"));
        return;
    }
    if (rc != 0) {
        print_error("%s: the play failed: %s\n", subject->name, err);
        fail();
    }
    check_accounted(&t, &r);
    assert_int_equal(r.fired, 2);
}

/* ---- 5. Bad input, straight to the subject ------------------------------ */

static size_t bad_fires;

static void count_fire(void *arg, uint32_t id)
{
    (void)arg;
    (void)id;
    bad_fires++;
}

static void test_bad_input(void **state)
{
    (void)state;
    char err[256] = "";
    void *h = subject->open(subject, 4, count_fire, NULL, err, sizeof err);
    if (!h) {
        print_error("%s: open failed: %s\n", subject->name, err);
        fail();
    }
    const int64_t d = 200 * MS; /* every subject's delay */
    assert_int_equal(subject->schedule(h, 4, d), -EINVAL);   /* no id 4 */
    assert_int_equal(subject->schedule(h, 0, -1), -EINVAL);  /* negative */
    assert_int_equal(subject->cancel(h, 1), -EINVAL);   /* never scheduled */
    assert_int_equal(subject->cancel(h, 7), -EINVAL);   /* no id 7 */
    if (lib->fixed_only)
        assert_int_equal(subject->schedule(h, 0, 30 * MS), -EINVAL);
    assert_int_equal(subject->schedule(h, 0, d), 0);
    assert_int_equal(subject->schedule(h, 0, d), -EINVAL);  /* twice */
    int64_t pending = -1, zombies = -1;
    subject->stats(h, &pending, &zombies);
    assert_int_equal(pending, 1);
    assert_int_equal(zombies, 0);
    assert_int_equal(subject->cancel(h, 0), 1);
    assert_int_equal(subject->cancel(h, 0), 0);  /* once only */
    assert_int_equal(subject->schedule(h, 0, d), -EINVAL);  /* ids: once */
    subject->stats(h, &pending, &zombies);
    assert_int_equal(pending, 0);
    /* closed with one pending: released (ASan's leak check), never fired */
    assert_int_equal(subject->schedule(h, 2, d), 0);
    subject->close(h);
    assert_int_equal(bad_fires, 0);
    /* the subject's open refuses what is not one of its own */
    struct pl_subject other = *subject;
    h = subject->open(&other, 4, count_fire, NULL, err, sizeof err);
    assert_null(h);
    assert_non_null(strstr(err, "not a library subject"));
}

int main(void)
{
    const struct pl_subject *const *libs;
    size_t n = pl_library_subjects(&libs);
    if (tblib_count == 0) {
        printf("# no event-loop library was found at build time\n");
        return 77;
    }
    /* every library subject is a player subject (a fixed_only one through
     * its start_any) */
    int failed = 0;
    for (size_t i = 0; i < tblib_count; i++) {
        const struct tblib *l = tblib_all[i];
        const struct pl_subject *s = pl_subject_find(l->name);
        if (!s || strcmp(s->side, "library") != 0) {
            printf("not a player subject: %s\n", l->name);
            failed = 1;
        }
    }
    if (n != tblib_count) {
        printf("%zu player subjects for %zu library subjects\n", n,
               tblib_count);
        failed = 1;
    }
    static const struct {
        const char *what;
        CMUnitTestFunction fn;
    } checks[] = {
        {"registered", test_registered},
        {"purgatory few", test_few},
        {"purgatory many", test_many},
        {"far too fast: saturated", test_too_fast},
        {"a trace of another delay", test_other_delay},
        {"bad input", test_bad_input},
    };
    enum { N_CHECKS = sizeof checks / sizeof checks[0] };
    for (size_t s = 0; s < n; s++) {
        subject = libs[s];
        lib = tblib_find(subject->name);
        if (!lib) {
            printf("player subject %s is no library subject\n",
                   subject->name);
            failed = 1;
            continue;
        }
        char names[N_CHECKS][160];
        struct CMUnitTest tests[N_CHECKS];
        for (size_t k = 0; k < N_CHECKS; k++) {
            snprintf(names[k], sizeof names[k], "%s: %s", subject->name,
                     checks[k].what);
            tests[k] = (struct CMUnitTest){.name = names[k],
                                           .test_func = checks[k].fn};
        }
        char group[160];
        snprintf(group, sizeof group, "play/%s", subject->name);
        failed += cmocka_run_group_tests_name(group, tests, NULL, NULL);
    }
    free(lags);
    return failed ? 1 : 0;
}
