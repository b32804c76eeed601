/*
 * libs_check.c — the cross-checks of the event-loop library subjects
 * (libs/tblib.h, issue 40 item 5), run on a real loop of every subject in
 * tblib_all: open and close, never early, exactly once and never a stopped
 * timer, again(), a restart from the timer's own callback, fini() leaving
 * nothing behind (ASan's leak check judges that in the asan setup), bad
 * input, a fixed_only subject's start_any() timers of other delays, and
 * a due timer stopped from another's callback before its own has run.
 * Nothing here names a subject: what differs between them is read from
 * their fields (granularity_ns, fixed_only, a NULL again or start_any).
 *
 * The checks bound earliness only, never lateness: the machines are shared
 * and noisy, so a loop is given seconds to deliver what is due in tens of
 * milliseconds before a check fails, and no check asserts how late a timer
 * was.  Callbacks only record; every assertion is made after the loop has
 * returned, so a failure never unwinds through a library's loop.
 *
 * Exit 77 (skip) when no library was found at build time.
 */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "tblib.h"

#define MS INT64_C(1000000)
#define US INT64_C(1000)

/* The delay every timer of a fixed_only subject's loop has. */
#define FIXED_DELAY (20 * MS)

/* How much older than our clock read just before start() the loop's
 * cached now may be: update_now() refreshes it a few calls earlier, so a
 * library that computes its deadline as cached now + delay may put it a
 * little before start_time + delay.  100 µs is far more than the two
 * calls between take, and covers a clock the library reads at a coarser
 * unit (sd-event's and GLib's microseconds).  Where a preemption between
 * update_now() and the read made the gap longer than that, the read made
 * before update_now() is the bound instead: a clock refreshed after it
 * cannot be older than it. */
#define SLACK (100 * US)

/* A loop that has not delivered what is due in tens of milliseconds after
 * this long has failed to deliver it (far beyond any scheduling noise). */
#define GIVE_UP (5000 * MS)

/* The last resort if a loop never returns at all: the process says which
 * subject and check hung and exits failing. */
#define ALARM_SECONDS 30

/* The subject under test (each cmocka group runs for one). */
static const struct tblib *subject;

/* The subject and check the alarm names, written before each check. */
static char hang_msg[256];
static size_t hang_len;

static void on_alarm(int sig)
{
    (void)sig;
    ssize_t w = write(STDERR_FILENO, hang_msg, hang_len);
    (void)w;
    _exit(1);
}

static void arm_alarm(const char *check)
{
    int n = snprintf(hang_msg, sizeof hang_msg,
                     "libs_check: %s: %s: the loop did not return in %d s\n",
                     subject->name, check, ALARM_SECONDS);
    hang_len = n < 0 ? 0 : (size_t)n < sizeof hang_msg ? (size_t)n
                                                       : sizeof hang_msg - 1;
    alarm(ALARM_SECONDS);
}

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* splitmix64: the delays' seeded PRNG. */
static uint64_t prng_state;

static uint64_t prng(void)
{
    uint64_t z = (prng_state += UINT64_C(0x9e3779b97f4a7c15));
    z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
    return z ^ (z >> 31);
}

/* ---- Loops and timers ------------------------------------------------- */

/* One loop of the subject and the storage of its timers. */
#define MAX_WAITERS 16

struct ctx {
    void *loop;
    unsigned char *store; /* n timers, `stride` bytes apart */
    size_t stride, n;
    /* run_until's own timers: fini()'d after each run, but their storage
     * stays valid until close() (tblib.h: libuv finishes a close only in
     * its loop) */
    void *waiters[MAX_WAITERS];
    size_t nwaiters;
};

/* One timer's record: what its callback saw. */
struct probe {
    struct ctx *c;
    size_t idx;
    int64_t delay;
    int64_t bound;     /* it is early if it fires before this */
    int stopped;
    int fires;
    int64_t fired_at;  /* the first fire */
    int64_t second_at; /* the second fire (restart check) */
    int restart;       /* start() itself again from its first fire */
    int restart_err;
};

static void *timer_at(struct ctx *c, size_t i)
{
    return c->store + i * c->stride;
}

/* The options every check opens with: the fixed delay where the subject
 * needs one. */
static struct tblib_options options(void)
{
    return (struct tblib_options){
        .fixed_delay_ns = subject->fixed_only ? FIXED_DELAY : 0,
    };
}

/* Opens a loop with room for n timers; a failure to open is a test
 * failure, with the subject's reason. */
static void ctx_open(struct ctx *c, size_t n)
{
    struct tblib_options o = options();
    char err[256] = "";
    c->loop = subject->open(&o, err, sizeof err);
    if (!c->loop) {
        print_error("%s: open failed: %s\n", subject->name,
                    err[0] ? err : "(no reason given)");
        fail();
    }
    const size_t align = 16;
    c->stride = (subject->timer_size + align - 1) / align * align;
    c->n = n;
    c->nwaiters = 0;
    c->store = calloc(n ? n : 1, c->stride ? c->stride : align);
    assert_non_null(c->store);
}

/* Closes the loop (every timer already fini()'d) and frees the storage. */
static void ctx_close(struct ctx *c)
{
    subject->close(c->loop);
    free(c->store);
    for (size_t i = 0; i < c->nwaiters; i++)
        free(c->waiters[i]);
    c->nwaiters = 0;
}

/* The earliest a timer started delay_ns after the reads t_before (before
 * update_now()) and t_start (just before start()) may fire (see SLACK). */
static int64_t earliest(int64_t t_before, int64_t t_start, int64_t delay_ns)
{
    int64_t from = t_start - SLACK < t_before ? t_start - SLACK : t_before;
    return from + delay_ns - subject->granularity_ns;
}

static void probe_fired(void *arg)
{
    struct probe *p = arg;
    int64_t t = now_ns();
    if (p->fires == 0)
        p->fired_at = t;
    else if (p->fires == 1)
        p->second_at = t;
    p->fires++;
    if (p->restart && p->fires == 1)
        p->restart_err = subject->start(p->c->loop, timer_at(p->c, p->idx),
                                        p->delay);
}

/* Starts timer i of c delay_ns from now with `start` (the subject's
 * start() or start_any()), as every check does: the loop's time
 * refreshed, our clock read just before it. */
static void start_probe_with(struct probe *p, int64_t delay_ns,
                             int (*start)(void *, void *, int64_t))
{
    int64_t t_before = now_ns();
    subject->update_now(p->c->loop);
    int64_t t_start = now_ns();
    p->delay = delay_ns;
    p->bound = earliest(t_before, t_start, delay_ns);
    int rc = start(p->c->loop, timer_at(p->c, p->idx), delay_ns);
    if (rc != 0) {
        print_error("%s: start(%lld ns) answered %d\n", subject->name,
                    (long long)delay_ns, rc);
        fail();
    }
}

static void start_probe(struct probe *p, int64_t delay_ns)
{
    start_probe_with(p, delay_ns, subject->start);
}

static void init_probes(struct ctx *c, struct probe *p, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        p[i] = (struct probe){.c = c, .idx = i};
        int rc = subject->init(c->loop, timer_at(c, i), probe_fired, &p[i]);
        if (rc != 0) {
            print_error("%s: init answered %d\n", subject->name, rc);
            fail();
        }
    }
}

static void fini_all(struct ctx *c)
{
    for (size_t i = 0; i < c->n; i++)
        subject->fini(c->loop, timer_at(c, i));
}

/* The timer that ends a run(): it re-arms itself until done(ctx) holds or
 * GIVE_UP has passed, then breaks the loop.  With a fixed_only subject it
 * has the loop's one delay, so it works there too: a timer started after
 * the ones waited for fires after them or is re-armed behind them. */
struct waiter {
    struct ctx *c;
    unsigned char *t;
    int (*done)(const void *ctx);
    const void *dctx;
    int64_t again_delay;
    int64_t give_up_at;
    int timed_out;
    int start_err;
};

static void waiter_fired(void *arg)
{
    struct waiter *w = arg;
    if (w->done && !w->done(w->dctx)) {
        if (now_ns() < w->give_up_at) {
            w->start_err = subject->start(w->c->loop, w->t, w->again_delay);
            if (w->start_err == 0)
                return;
        } else {
            w->timed_out = 1;
        }
    }
    subject->break_loop(w->c->loop);
}

/* run()s the loop until done(dctx) holds (or, with done NULL, for
 * first_delay), checked each time the waiter fires: first after
 * first_delay, then every again_delay (both the fixed delay with a
 * fixed_only subject).  Fails if the loop has not got there in GIVE_UP. */
static void run_until(struct ctx *c, int64_t first_delay, int64_t again_delay,
                      int (*done)(const void *), const void *dctx,
                      const char *what)
{
    if (subject->fixed_only)
        first_delay = again_delay = FIXED_DELAY;
    struct waiter w = {
        .c = c, .done = done, .dctx = dctx, .again_delay = again_delay,
        .give_up_at = now_ns() + GIVE_UP,
    };
    w.t = calloc(1, c->stride ? c->stride : 16);
    assert_non_null(w.t);
    assert_true(c->nwaiters < MAX_WAITERS);
    c->waiters[c->nwaiters++] = w.t; /* freed after close(), in ctx_close */
    assert_int_equal(subject->init(c->loop, w.t, waiter_fired, &w), 0);
    subject->update_now(c->loop);
    assert_int_equal(subject->start(c->loop, w.t, first_delay), 0);
    int rc = subject->run(c->loop);
    subject->fini(c->loop, w.t);
    if (rc != 0) {
        print_error("%s: run() answered %d\n", subject->name, rc);
        fail();
    }
    if (w.start_err != 0) {
        print_error("%s: start() from a callback answered %d\n",
                    subject->name, w.start_err);
        fail();
    }
    if (w.timed_out) {
        print_error("%s: %s: not after %lld ms on the loop\n", subject->name,
                    what, (long long)(GIVE_UP / MS));
        fail();
    }
}

/* What run_until waits for: every probe of a set not stopped has fired. */
struct probe_set {
    const struct probe *p;
    size_t n;
};

static int all_unstopped_fired(const void *arg)
{
    const struct probe_set *s = arg;
    for (size_t i = 0; i < s->n; i++)
        if (!s->p[i].stopped && s->p[i].fires == 0)
            return 0;
    return 1;
}

/* ---- 1. Opens and closes ---------------------------------------------- */

static void test_open_close(void **state)
{
    (void)state;
    arm_alarm("open and close");
    char version[128] = "";
    subject->version(version, sizeof version);
    assert_true(version[0] != '\0');
    print_message("# %s %s (%s): granularity %lld ns%s%s\n", subject->name,
                  version, subject->library,
                  (long long)subject->granularity_ns,
                  subject->fixed_only ? ", fixed delay only" : "",
                  subject->again ? "" : ", again not supported (NULL)");
    assert_true(subject->granularity_ns >= 1);
    struct ctx c;
    ctx_open(&c, 0);
    ctx_close(&c);
    /* And a second loop after the first is gone. */
    ctx_open(&c, 0);
    ctx_close(&c);
    alarm(0);
}

/* ---- 2 and 3. Never early; exactly once, never a stopped one ---------- */

enum { N_SCENARIO = 200 };

/* 200 timers of 1-40 ms (all the fixed delay with a fixed_only subject),
 * every third stopped right after all are started, the loop run until
 * every other one has fired (the waiter's first look at 150 ms). */
static void scenario(struct ctx *c, struct probe *p)
{
    ctx_open(c, N_SCENARIO);
    init_probes(c, p, N_SCENARIO);
    prng_state = UINT64_C(40005); /* issue 40, item 5 */
    for (size_t i = 0; i < N_SCENARIO; i++)
        start_probe(&p[i], subject->fixed_only
                               ? FIXED_DELAY
                               : (int64_t)(1 + prng() % 40) * MS);
    for (size_t i = 0; i < N_SCENARIO; i += 3) {
        int first = subject->stop(c->loop, timer_at(c, i));
        int second = subject->stop(c->loop, timer_at(c, i));
        if (first != 1 || second != 0) {
            print_error("%s: stop of pending timer %zu answered %d, then "
                        "%d (want 1, then 0)\n", subject->name, i, first,
                        second);
            fail();
        }
        p[i].stopped = 1;
    }
    struct probe_set set = {p, N_SCENARIO};
    run_until(c, 150 * MS, 10 * MS, all_unstopped_fired, &set,
              "every unstopped timer fired");
}

static void scenario_end(struct ctx *c)
{
    fini_all(c);
    ctx_close(c);
}

static void test_never_early(void **state)
{
    (void)state;
    arm_alarm("never early");
    struct ctx c;
    static struct probe p[N_SCENARIO];
    scenario(&c, p);
    size_t early = 0, first = 0;
    for (size_t i = 0; i < N_SCENARIO; i++)
        if (p[i].fires && p[i].fired_at < p[i].bound && !early++)
            first = i;
    scenario_end(&c);
    alarm(0);
    if (early) {
        print_error("%s: %zu timers fired early; the first, timer %zu of "
                    "%lld ns, %.3f ms before its earliest (granularity "
                    "%lld ns, slack %lld ns)\n", subject->name, early, first,
                    (long long)p[first].delay,
                    (double)(p[first].bound - p[first].fired_at) / 1e6,
                    (long long)subject->granularity_ns, (long long)SLACK);
        fail();
    }
}

static void test_exactly_once(void **state)
{
    (void)state;
    arm_alarm("exactly once");
    struct ctx c;
    static struct probe p[N_SCENARIO];
    scenario(&c, p);
    /* A fired timer is no longer pending: stop answers 0. */
    int fired_stop = -1;
    for (size_t i = 0; i < N_SCENARIO && fired_stop < 0; i++)
        if (!p[i].stopped)
            fired_stop = subject->stop(c.loop, timer_at(&c, i));
    scenario_end(&c);
    alarm(0);
    for (size_t i = 0; i < N_SCENARIO; i++) {
        int want = p[i].stopped ? 0 : 1;
        if (p[i].fires != want) {
            print_error("%s: timer %zu (%s) fired %d times, want %d\n",
                        subject->name, i,
                        p[i].stopped ? "stopped" : "not stopped",
                        p[i].fires, want);
            fail();
        }
    }
    assert_int_equal(fired_stop, 0);
}

/* ---- 4. again() ------------------------------------------------------- */

static int probe_fired_once(const void *arg)
{
    return ((const struct probe *)arg)->fires > 0;
}

static void test_again(void **state)
{
    (void)state;
    if (!subject->again) {
        print_message("# %s: again not supported (NULL): skipped\n",
                      subject->name);
        skip();
    }
    arm_alarm("again");
    struct ctx c;
    struct probe p[2];
    ctx_open(&c, 2);
    init_probes(&c, p, 2);

    /* A pending timer moved: 10 ms to 60 ms, or, with one fixed delay,
     * moved 15 ms on by again() with that delay. */
    int64_t first = subject->fixed_only ? FIXED_DELAY : 10 * MS;
    int64_t moved = subject->fixed_only ? FIXED_DELAY : 60 * MS;
    start_probe(&p[0], first);
    if (subject->fixed_only) {
        struct timespec ts = {0, 15 * MS};
        nanosleep(&ts, NULL);
    }
    int64_t t_before = now_ns();
    subject->update_now(c.loop);
    int64_t t_again = now_ns();
    p[0].bound = earliest(t_before, t_again, moved);
    assert_int_equal(subject->again(c.loop, timer_at(&c, 0), moved), 0);
    run_until(&c, 10 * MS, 10 * MS, probe_fired_once, &p[0],
              "the moved timer fired");
    /* And not again: the loop run on past it. */
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");

    /* A stopped timer armed by again(). */
    start_probe(&p[1], first);
    assert_int_equal(subject->stop(c.loop, timer_at(&c, 1)), 1);
    t_before = now_ns();
    subject->update_now(c.loop);
    int64_t t_armed = now_ns();
    p[1].bound = earliest(t_before, t_armed, first);
    assert_int_equal(subject->again(c.loop, timer_at(&c, 1), first), 0);
    run_until(&c, 10 * MS, 10 * MS, probe_fired_once, &p[1],
              "the stopped timer armed by again() fired");
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");

    fini_all(&c);
    ctx_close(&c);
    alarm(0);
    for (int i = 0; i < 2; i++) {
        if (p[i].fires != 1) {
            print_error("%s: the %s timer fired %d times, want 1\n",
                        subject->name, i ? "stopped, again()'d" : "moved",
                        p[i].fires);
            fail();
        }
        if (p[i].fired_at < p[i].bound) {
            print_error("%s: the %s timer fired %.3f ms early\n",
                        subject->name, i ? "stopped, again()'d" : "moved",
                        (double)(p[i].bound - p[i].fired_at) / 1e6);
            fail();
        }
    }
}

/* ---- 5. Restarted from its own callback -------------------------------- */

static int probe_fired_twice(const void *arg)
{
    return ((const struct probe *)arg)->fires > 1;
}

static void test_restart_from_callback(void **state)
{
    (void)state;
    arm_alarm("restart from its callback");
    struct ctx c;
    struct probe p;
    ctx_open(&c, 1);
    init_probes(&c, &p, 1);
    p.restart = 1;
    start_probe(&p, subject->fixed_only ? FIXED_DELAY : 5 * MS);
    run_until(&c, 20 * MS, 10 * MS, probe_fired_twice, &p,
              "the timer restarted from its callback fired again");
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");
    fini_all(&c);
    ctx_close(&c);
    alarm(0);
    assert_int_equal(p.restart_err, 0);
    assert_int_equal(p.fires, 2);
    /* Restarted from the loop's now at the first fire, which was not
     * before the first's earliest. */
    int64_t second_bound = p.bound + p.delay - subject->granularity_ns;
    if (p.second_at < second_bound) {
        print_error("%s: the restarted timer fired %.3f ms early\n",
                    subject->name,
                    (double)(second_bound - p.second_at) / 1e6);
        fail();
    }
}

/* ---- 6. fini() on pending and fired timers ----------------------------- */

enum { N_FINI = 40 };

static void test_fini_leaves_nothing(void **state)
{
    (void)state;
    arm_alarm("fini");
    struct ctx c;
    struct probe p[N_FINI];
    ctx_open(&c, N_FINI + 1); /* the last one is never started */
    init_probes(&c, p, N_FINI);
    assert_int_equal(subject->init(c.loop, timer_at(&c, N_FINI), probe_fired,
                                   &p[0]), 0);
    /* The first half fire... */
    for (size_t i = 0; i < N_FINI / 2; i++)
        start_probe(&p[i], subject->fixed_only ? FIXED_DELAY
                                               : (int64_t)(1 + i % 5) * MS);
    struct probe_set fired = {p, N_FINI / 2};
    run_until(&c, 10 * MS, 10 * MS, all_unstopped_fired, &fired,
              "the first half fired");
    /* ...the second is pending when fini()'d, so never fires, though due
     * well inside the run that follows (a fini() that left it armed would
     * show here, not only as a leak). */
    for (size_t i = N_FINI / 2; i < N_FINI; i++)
        start_probe(&p[i], subject->fixed_only ? FIXED_DELAY
                                               : (int64_t)(1 + i % 5) * MS);
    for (size_t i = N_FINI / 2; i < N_FINI; i++)
        subject->fini(c.loop, timer_at(&c, i));
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");
    for (size_t i = 0; i < N_FINI / 2; i++)
        subject->fini(c.loop, timer_at(&c, i));
    subject->fini(c.loop, timer_at(&c, N_FINI));
    ctx_close(&c);
    alarm(0);
    for (size_t i = 0; i < N_FINI; i++) {
        int want = i < N_FINI / 2 ? 1 : 0;
        if (p[i].fires != want) {
            print_error("%s: timer %zu (%s) fired %d times, want %d\n",
                        subject->name, i,
                        want ? "fired, then fini()'d" : "fini()'d pending",
                        p[i].fires, want);
            fail();
        }
    }
}

/* ---- 7. Bad input ------------------------------------------------------ */

static void test_bad_input(void **state)
{
    (void)state;
    arm_alarm("bad input");
    struct ctx c;
    struct probe p;
    ctx_open(&c, 1);
    init_probes(&c, &p, 1);
    subject->update_now(c.loop);
    static const int64_t bad[] = {-1, -20 * MS, INT64_MIN};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = subject->start(c.loop, timer_at(&c, 0), bad[i]);
        if (rc != -EINVAL) {
            print_error("%s: start(%lld ns) answered %d, want -EINVAL\n",
                        subject->name, (long long)bad[i], rc);
            fail();
        }
        if (subject->again) {
            rc = subject->again(c.loop, timer_at(&c, 0), bad[i]);
            if (rc != -EINVAL) {
                print_error("%s: again(%lld ns) answered %d, want -EINVAL\n",
                            subject->name, (long long)bad[i], rc);
                fail();
            }
        }
    }
    /* Refused, so not armed. */
    assert_int_equal(subject->stop(c.loop, timer_at(&c, 0)), 0);
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");
    fini_all(&c);
    ctx_close(&c);
    alarm(0);
    assert_int_equal(p.fires, 0);

    /* A fixed_only subject cannot open without its delay. */
    if (subject->fixed_only) {
        struct tblib_options o = {.fixed_delay_ns = 0};
        char err[256] = "";
        void *loop = subject->open(&o, err, sizeof err);
        if (loop) {
            subject->close(loop);
            print_error("%s: fixed_only, yet opened with fixed_delay_ns 0\n",
                        subject->name);
            fail();
        }
        if (!err[0]) {
            print_error("%s: refused fixed_delay_ns 0 without a reason\n",
                        subject->name);
            fail();
        }
        print_message("# %s: fixed_delay_ns 0 refused: %s\n", subject->name,
                      err);
    }
}

/* ---- 8. start_any: a fixed_only subject's timers of other delays ------ */

enum { N_ANY = 20 };

/* 20 timers of 1, 3, .. 39 ms (never the fixed delay) by start_any(),
 * beside one of the fixed delay by start(): each fires once, none early;
 * a negative delay is refused and arms nothing. */
static void test_start_any(void **state)
{
    (void)state;
    if (!subject->start_any) {
        print_message("# %s: no start_any (start() takes every delay): "
                      "skipped\n", subject->name);
        return;
    }
    arm_alarm("start_any");
    struct ctx c;
    static struct probe p[N_ANY + 1];
    ctx_open(&c, N_ANY + 1);
    init_probes(&c, p, N_ANY + 1);
    subject->update_now(c.loop);
    assert_int_equal(subject->start_any(c.loop, timer_at(&c, 0), -1),
                     -EINVAL);
    assert_int_equal(subject->stop(c.loop, timer_at(&c, 0)), 0);
    for (size_t i = 0; i < N_ANY; i++)
        start_probe_with(&p[i], (int64_t)(1 + 2 * i) * MS,
                         subject->start_any);
    start_probe(&p[N_ANY], subject->fixed_only ? FIXED_DELAY : 20 * MS);
    struct probe_set set = {p, N_ANY + 1};
    run_until(&c, 60 * MS, 10 * MS, all_unstopped_fired, &set,
              "every start_any timer fired");
    fini_all(&c);
    ctx_close(&c);
    alarm(0);
    for (size_t i = 0; i <= N_ANY; i++) {
        if (p[i].fires != 1) {
            print_error("%s: timer %zu (%lld ms, %s) fired %d times, want "
                        "1\n", subject->name, i, (long long)(p[i].delay / MS),
                        i < N_ANY ? "start_any" : "start", p[i].fires);
            fail();
        }
        if (p[i].fired_at < p[i].bound) {
            print_error("%s: timer %zu (%lld ms) fired %.3f ms early\n",
                        subject->name, i, (long long)(p[i].delay / MS),
                        (double)(p[i].bound - p[i].fired_at) / 1e6);
            fail();
        }
    }
}

/* ---- 9. Stopped by another timer's callback, both due ----------------- */

/* Two timers due in the same pass of the loop (both started, then the
 * thread sleeps past their deadline before the loop runs): the callback
 * that runs first stops the other, which must answer 1 (its callback had
 * not run: it was pending) and never fire.  A library that has moved an
 * expired timer to its queue of callbacks to run (libev's pending queue,
 * libevent's active list) still holds it pending until it runs: the
 * purgatory player cancels requests from its pacer's callback. */
static struct {
    struct ctx *c;
    int fires[2];
    int stop_rc;
} pair;
static int pair_idx[2] = {0, 1};

static void pair_fired(void *arg)
{
    int i = *(const int *)arg;
    pair.fires[i]++;
    if (pair.stop_rc == -2)
        pair.stop_rc = subject->stop(pair.c->loop, timer_at(pair.c, 1 - i));
}

static void test_stopped_by_another(void **state)
{
    (void)state;
    arm_alarm("stopped by another's callback");
    struct ctx c;
    ctx_open(&c, 2);
    pair.c = &c;
    pair.fires[0] = pair.fires[1] = 0;
    pair.stop_rc = -2;
    int64_t d = subject->fixed_only ? FIXED_DELAY : 2 * MS;
    for (int i = 0; i < 2; i++)
        assert_int_equal(subject->init(c.loop, timer_at(&c, (size_t)i),
                                       pair_fired, &pair_idx[i]), 0);
    subject->update_now(c.loop);
    for (int i = 0; i < 2; i++)
        assert_int_equal(subject->start(c.loop, timer_at(&c, (size_t)i), d),
                         0);
    struct timespec ts = {0, (long)(d + 5 * MS)};
    while (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    nanosleep(&ts, NULL);
    run_until(&c, 30 * MS, 30 * MS, NULL, NULL, "a 30 ms run");
    fini_all(&c);
    ctx_close(&c);
    alarm(0);
    if (pair.stop_rc != 1 || pair.fires[0] + pair.fires[1] != 1) {
        print_error("%s: two timers due together, the first callback's "
                    "stop() of the other answered %d (want 1); fires %d "
                    "and %d (want one in all)\n", subject->name,
                    pair.stop_rc, pair.fires[0], pair.fires[1]);
        fail();
    }
}

int main(void)
{
    if (tblib_count == 0) {
        printf("# no event-loop library was found at build time:\n");
        for (size_t i = 0; tblib_missing[i]; i++)
            printf("#   %s\n", tblib_missing[i]);
        return 77;
    }
    for (size_t i = 0; tblib_missing[i]; i++)
        printf("# left out: %s\n", tblib_missing[i]);
    signal(SIGALRM, on_alarm);

    static const struct {
        const char *what;
        CMUnitTestFunction fn;
    } checks[] = {
        {"opens and closes", test_open_close},
        {"never early", test_never_early},
        {"exactly once, never a stopped one", test_exactly_once},
        {"again", test_again},
        {"restart from its own callback", test_restart_from_callback},
        {"fini leaves nothing behind", test_fini_leaves_nothing},
        {"bad input", test_bad_input},
        {"start_any", test_start_any},
        {"stopped by another's callback", test_stopped_by_another},
    };
    enum { N_CHECKS = sizeof checks / sizeof checks[0] };
    int failed = 0;
    for (size_t s = 0; s < tblib_count; s++) {
        subject = tblib_all[s];
        char names[N_CHECKS][160];
        struct CMUnitTest tests[N_CHECKS];
        for (size_t k = 0; k < N_CHECKS; k++) {
            snprintf(names[k], sizeof names[k], "%s: %s", subject->name,
                     checks[k].what);
            tests[k] = (struct CMUnitTest){.name = names[k],
                                           .test_func = checks[k].fn};
        }
        char group[160];
        snprintf(group, sizeof group, "libs/%s", subject->name);
        failed += cmocka_run_group_tests_name(group, tests, NULL, NULL);
    }
    return failed ? 1 : 0;
}
