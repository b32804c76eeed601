/*
 * test_heapqueue.c — fidelity cases for the ScheduledThreadPoolExecutor
 * model: leader-follower wake-up, remove-on-cancel both ways, both shutdown
 * policies both ways, a failing periodic task, fixed-delay from end of run,
 * and the heap checker after a long random sequence.
 */
#include <stdlib.h>
#include <time.h>

#include "testlib.h"

static const struct tb_backend *hq(void)
{
    const struct tb_backend *b = tb_backend_find("heapqueue");
    assert_non_null(b);
    return b;
}

/* A pool sleeping on a far deadline must wake for a new, earlier head: the
 * leader is cleared and signalled (DelayedWorkQueue.offer). */
static _Atomic int64_t early_ran_at;

static int note_time(void *arg)
{
    (void)arg;
    atomic_store(&early_ran_at, tb_monotonic_ns());
    return 0;
}

static int early_ran(void *ctx)
{
    (void)ctx;
    return atomic_load(&early_ran_at) != 0;
}

static void test_leader_wakes_for_earlier_head(void **state)
{
    (void)state;
    for (int leader = 0; leader < 2; leader++) {
        struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 3,
                              .flags = leader ? 0 : TB_F_NO_LEADER};
        struct tb_sched *s = make_sched(hq(), &c);
        assert_int_equal(tb_start(s), TB_OK);
        assert_int_equal(tb_schedule(s, 3600 * TB_SEC, noop_task, NULL, NULL),
                         TB_OK);
        struct timespec ts = {0, 50 * 1000 * 1000};
        nanosleep(&ts, NULL); /* let the pool settle into its waits */
        atomic_store(&early_ran_at, 0);
        int64_t deadline = tb_monotonic_ns() + 20 * TB_MS;
        assert_int_equal(tb_schedule(s, 20 * TB_MS, note_time, NULL, NULL),
                         TB_OK);
        /* generous: it must not wait for the hour-long head */
        assert_true(wait_until(early_ran, NULL, 30 * TB_SEC));
        assert_true(atomic_load(&early_ran_at) >= deadline);
        struct tb_stats st;
        tb_stats(s, &st);
        assert_true(st.timed_waits >= 1);
        assert_true(st.wakeups >= 1);
        assert_int_equal(tb_shutdown_now(s, NULL, NULL), 1);
        tb_destroy(s);
    }
}

/* Leader-follower: of three idle workers only the leader waits timed, so
 * over a run of short timers the pool starts fewer timed waits and wakes
 * fewer threads than the leaderless pool, where every idle worker waits
 * timed and wakes at every deadline. */
enum { LF_TASKS = 40 };

static struct tb_stats leader_run(unsigned flags)
{
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 3,
                          .flags = flags};
    struct tb_sched *s = make_sched(hq(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    for (int i = 1; i <= LF_TASKS; i++)
        assert_int_equal(tb_schedule(s, i * 5 * TB_MS, noop_task, NULL, NULL),
                         TB_OK);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_await_termination(s, 60 * TB_SEC), TB_OK);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.fired, LF_TASKS);
    tb_destroy(s);
    return st;
}

/* Per task the leader wakes once (its timed wait ends) and signals one
 * follower on its way out of take() to lead the next wait: two wake-ups.
 * The JDK signals only there (take()'s finally), never right after the
 * timed wait as well: that extra signal woke a third thread per task, about
 * three wake-ups per task in all.  The bound leaves room for the shutdown's
 * broadcast and exits and for a scheduler's occasional spurious wake-up; a
 * machine so loaded that deadlines pile up only lowers the count (due tasks
 * are taken without waiting). */
static void test_leader_saves_wakeups(void **state)
{
    (void)state;
    struct tb_stats with = leader_run(0), without = leader_run(TB_F_NO_LEADER);
    print_message("per task: leader %.2f wake-ups (%.2f timed waits), "
                  "no leader %.2f (%.2f)\n",
                  (double)with.wakeups / LF_TASKS,
                  (double)with.timed_waits / LF_TASKS,
                  (double)without.wakeups / LF_TASKS,
                  (double)without.timed_waits / LF_TASKS);
    assert_true(with.timed_waits < without.timed_waits);
    assert_true(with.wakeups < without.wakeups);
    assert_true(with.wakeups * 10 <= LF_TASKS * 25); /* <= 2.5 per task */
}

static void test_remove_on_cancel(void **state)
{
    (void)state;
    for (int remove = 0; remove < 2; remove++) {
        struct tb_config c = {.flags = remove ? TB_F_REMOVE_ON_CANCEL : 0};
        struct tb_sched *s = make_sched(hq(), &c);
        struct recorder rec;
        rec_init(&rec, s);
        struct probe p[10];
        tb_handle h[10];
        for (int i = 0; i < 10; i++) {
            p[i] = (struct probe){.rec = &rec, .id = i};
            assert_int_equal(tb_schedule(s, (i + 1) * TB_SEC, probe_task,
                                         &p[i], &h[i]), TB_OK);
        }
        for (int i = 0; i < 10; i += 2)
            assert_int_equal(tb_cancel(s, h[i]), 1);
        struct tb_stats st;
        tb_stats(s, &st);
        assert_int_equal(tb_pending(s), remove ? 5 : 10);
        assert_int_equal(st.zombies, remove ? 0 : 5);
        assert_int_equal(tb_check(s), TB_OK);
        /* past the first cancelled one's time: it is skipped, not run */
        assert_int_equal(tb_advance(s, 1500 * TB_MS), 0);
        assert_int_equal(tb_pending(s), remove ? 5 : 9);
        assert_int_equal(tb_advance(s, 20 * TB_SEC), 5);
        for (int i = 0; i < 10; i++)
            assert_int_equal(p[i].runs, i % 2);
        assert_int_equal(tb_pending(s), 0);
        assert_balanced(s);
        rec_free(&rec);
        tb_destroy(s);
    }
}

static void test_purge(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(hq(), NULL);
    tb_handle h[100];
    for (int i = 0; i < 100; i++)
        assert_int_equal(tb_schedule(s, (100 - i) * TB_MS, noop_task, NULL,
                                     &h[i]), TB_OK);
    for (int i = 0; i < 100; i += 3)
        assert_int_equal(tb_cancel(s, h[i]), 1);
    assert_int_equal(tb_purge(s), 34);
    assert_int_equal(tb_pending(s), 66);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_purge(s), 0);
    assert_int_equal(tb_advance(s, TB_SEC), 66);
    assert_balanced(s);
    tb_destroy(s);
}

/* Default policy: delayed one-shots still run after shutdown, periodic
 * tasks are cancelled.  Each flag turns one policy around. */
static void test_shutdown_policies(void **state)
{
    (void)state;
    for (unsigned mode = 0; mode < 4; mode++) {
        unsigned flags = (mode & 1 ? TB_F_DROP_DELAYED_ON_SHUTDOWN : 0) |
                         (mode & 2 ? TB_F_KEEP_PERIODIC_ON_SHUTDOWN : 0);
        struct tb_config c = {.flags = flags};
        struct tb_sched *s = make_sched(hq(), &c);
        struct recorder rec;
        rec_init(&rec, s);
        struct probe once = {.rec = &rec, .id = 1};
        struct probe per = {.rec = &rec, .id = 2};
        struct probe due = {.rec = &rec, .id = 3};
        assert_int_equal(tb_schedule(s, 10 * TB_MS, probe_task, &once, NULL),
                         TB_OK);
        assert_int_equal(tb_schedule_fixed_rate(s, 5 * TB_MS, 5 * TB_MS,
                                                probe_task, &per, &per.self),
                         TB_OK);
        assert_int_equal(tb_schedule(s, 0, probe_task, &due, NULL), TB_OK);
        bool drop = flags & TB_F_DROP_DELAYED_ON_SHUTDOWN;
        bool keep = flags & TB_F_KEEP_PERIODIC_ON_SHUTDOWN;
        /* the one due at once is kept under both policies */
        assert_int_equal(tb_shutdown(s), drop ? 1 : 0);
        assert_int_equal(tb_schedule(s, 1, noop_task, NULL, NULL),
                         TB_ESHUTDOWN);
        assert_true(tb_advance(s, 30 * TB_MS) >= 0);
        assert_int_equal(due.runs, 1);
        assert_int_equal(once.runs, drop ? 0 : 1);
        assert_int_equal(per.runs, keep ? 6 : 0);
        assert_int_equal(tb_pending(s), keep ? 1 : 0);
        assert_balanced(s);
        rec_free(&rec);
        tb_destroy(s);
    }
}

static void test_failing_periodic_stops(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(hq(), NULL);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe bad = {.rec = &rec, .id = 1, .fail = 1};
    struct probe good = {.rec = &rec, .id = 2};
    struct probe once = {.rec = &rec, .id = 3, .fail = 1};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, 10 * TB_MS,
                                            probe_task, &bad, NULL), TB_OK);
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, 10 * TB_MS,
                                            probe_task, &good, NULL), TB_OK);
    assert_int_equal(tb_schedule(s, 15 * TB_MS, probe_task, &once, NULL),
                     TB_OK);
    for (int64_t t = TB_MS; t <= 100 * TB_MS; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    assert_int_equal(bad.runs, 1);
    assert_int_equal(good.runs, 10);
    assert_int_equal(once.runs, 1);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.failed, 2);
    assert_int_equal(st.finished, 2);
    assert_int_equal(tb_pending(s), 1);
    assert_balanced(s);
    rec_free(&rec);
    tb_destroy(s);
}

/* Fixed delay counts from the end of the run (STPE), fixed rate from the
 * previous scheduled time, overlapping never. */
static void test_periodic_with_slow_runs(void **state)
{
    (void)state;
    struct tb_sched *s = make_sched(hq(), NULL);
    struct recorder rec;
    rec_init(&rec, s);
    struct probe fd = {.rec = &rec, .id = 1, .spend = 6 * TB_MS};
    assert_int_equal(tb_schedule_fixed_delay(s, 10 * TB_MS, 10 * TB_MS,
                                             probe_task, &fd, NULL), TB_OK);
    for (int64_t t = TB_MS; t <= 60 * TB_MS; t = tb_now(s) + TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    /* starts at 10, ends 16, next 26, ends 32, next 42, ends 48, next 58 */
    assert_int_equal(fd.runs, 4);
    int64_t want[] = {10, 26, 42, 58};
    for (int i = 0; i < 4; i++)
        assert_int_equal(rec.runs[i].at, want[i] * TB_MS);
    tb_destroy(s);
    rec_free(&rec);

    s = make_sched(hq(), NULL);
    rec_init(&rec, s);
    struct probe fr = {.rec = &rec, .id = 2, .spend = 25 * TB_MS};
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, 10 * TB_MS,
                                            probe_task, &fr, NULL), TB_OK);
    assert_true(tb_advance(s, 10 * TB_MS) >= 1);
    /* each run takes 25 ms of a 10 ms period: the next starts when the
     * previous ends, never on top of it */
    for (size_t i = 1; i < rec.n; i++)
        assert_true(rec.runs[i].at >= rec.runs[i - 1].at + 25 * TB_MS);
    tb_destroy(s);
    rec_free(&rec);
}

/* A periodic task whose run schedules one task (records the answer). */
struct sched_inside {
    struct tb_sched *s;
    int64_t delay;
    int runs;
    int rc; /* what the schedule from inside the first run answered */
    tb_handle inner;
};

static int sched_inside_task(void *arg)
{
    struct sched_inside *x = arg;
    if (++x->runs == 1)
        x->rc = tb_schedule(x->s, x->delay, noop_task, NULL, &x->inner);
    return 0;
}

static struct tb_stats stats_of(struct tb_sched *s)
{
    struct tb_stats st;
    assert_int_equal(tb_stats(s, &st), TB_OK);
    return st;
}

/* Issue 12, defect 1: the slot a periodic task frees when it is taken can be
 * used during its run; if the array then cannot grow, the re-queue must not
 * write past it.  The re-arm is refused like a schedule: the task retires as
 * finished and the refusal counts in `rejected` (README).  Under ASan the old
 * code was a heap-buffer-overflow in sift_up <- heap_push <- run_task. */
static void test_requeue_when_growth_fails(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(hq(), &c);
    for (int i = 0; i < 15; i++)
        assert_int_equal(tb_schedule(s, TB_SEC, noop_task, NULL, NULL), TB_OK);
    struct sched_inside x = {.s = s, .delay = TB_SEC, .rc = -100};
    tb_handle h;
    assert_int_equal(tb_schedule_fixed_rate(s, 10 * TB_MS, 10 * TB_MS,
                                            sched_inside_task, &x, &h), TB_OK);
    assert_int_equal(tb_pending(s), 16); /* the array's 16 slots are full */
    uint64_t held = stats_of(s).bytes_held;
    fa.budget = 0;
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    assert_int_equal(x.rc, TB_OK); /* took the slot the periodic task left */
    assert_int_equal(tb_pending(s), 16);
    assert_int_equal(tb_check(s), TB_OK);
    struct tb_stats st = stats_of(s);
    assert_int_equal(st.bytes_held, held);
    assert_int_equal(st.fired, 1);
    assert_int_equal(st.finished, 1);
    assert_int_equal(st.rejected, 1);
    assert_int_equal(st.peak_pending, 16);
    assert_balanced(s);
    assert_int_equal(tb_cancel(s, h), 0); /* retired: not pending */
    fa.budget = -1;
    assert_int_equal(tb_advance(s, 2 * TB_SEC), 16);
    assert_int_equal(x.runs, 1);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);
}

/* DECISIONS.md D1: pending never exceeds max_pending, re-arms included.  A
 * heapqueue task is off the queue while it runs (STPE), so the schedule from
 * inside its run is accepted and the re-arm, which would make two, is
 * refused: the task retires as finished, counted once in `rejected`. */
static void test_max_pending_refuses_rearm(void **state)
{
    (void)state;
    struct tb_config c = {.max_pending = 1};
    struct tb_sched *s = make_sched(hq(), &c);
    struct sched_inside x = {.s = s, .delay = 500 * TB_US, .rc = -100};
    tb_handle h;
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, TB_MS, sched_inside_task,
                                            &x, &h), TB_OK);
    assert_int_equal(tb_schedule(s, 0, noop_task, NULL, NULL), TB_EFULL);
    for (int64_t t = TB_MS; t <= 5 * TB_MS; t += TB_MS) {
        assert_true(tb_advance(s, t) >= 0);
        assert_true(tb_pending(s) <= 1);
    }
    assert_int_equal(x.rc, TB_OK);
    assert_int_equal(x.runs, 1); /* stopped: its re-arm was refused */
    assert_int_equal(tb_cancel(s, h), 0);
    struct tb_stats st = stats_of(s);
    assert_true(st.peak_pending <= 1);
    assert_int_equal(st.rejected, 2); /* the EFULL above, and the re-arm */
    assert_int_equal(st.finished, 2); /* the periodic task, the one-shot */
    assert_int_equal(st.fired, 2);
    assert_int_equal(tb_pending(s), 0);
    assert_balanced(s);
    tb_destroy(s);

    /* with room for both, nothing is refused and the task goes on */
    c.max_pending = 2;
    s = make_sched(hq(), &c);
    x = (struct sched_inside){.s = s, .delay = 500 * TB_US, .rc = -100};
    assert_int_equal(tb_schedule_fixed_rate(s, TB_MS, TB_MS, sched_inside_task,
                                            &x, NULL), TB_OK);
    for (int64_t t = TB_MS; t <= 5 * TB_MS; t += TB_MS)
        assert_true(tb_advance(s, t) >= 0);
    assert_int_equal(x.rc, TB_OK);
    assert_int_equal(x.runs, 5);
    struct tb_stats st2 = stats_of(s);
    assert_int_equal(st2.rejected, 0);
    assert_int_equal(st2.peak_pending, 2);
    assert_balanced(s);
    tb_destroy(s);
}

static void test_heap_checker_random(void **state)
{
    (void)state;
    for (int remove = 0; remove < 2; remove++) {
        struct tb_config c = {.flags = remove ? TB_F_REMOVE_ON_CANCEL : 0};
        struct tb_sched *s = make_sched(hq(), &c);
        enum { MAXH = 2048 };
        static tb_handle h[MAXH];
        size_t nh = 0;
        uint64_t rng = 77 + (uint64_t)remove;
        int64_t now = 0;
        for (int op = 0; op < 100000; op++) {
            uint64_t r = rng_next(&rng) % 10;
            if (r < 5) {
                tb_handle x;
                assert_int_equal(tb_schedule(s, rng_range(&rng, 0, TB_SEC),
                                             noop_task, NULL, &x), TB_OK);
                h[nh < MAXH ? nh++ : rng_next(&rng) % MAXH] = x;
            } else if (r < 8 && nh) {
                assert_true(tb_cancel(s, h[rng_next(&rng) % nh]) >= 0);
            } else if (r < 9) {
                now += rng_range(&rng, 0, 20 * TB_MS);
                assert_true(tb_advance(s, now) >= 0);
            } else if (rng_next(&rng) % 50 == 0) {
                assert_true(tb_purge(s) >= 0);
            }
            if (op % 97 == 0)
                assert_int_equal(tb_check(s), TB_OK);
        }
        assert_int_equal(tb_check(s), TB_OK);
        assert_balanced(s);
        tb_destroy(s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_wakes_for_earlier_head),
        cmocka_unit_test(test_leader_saves_wakeups),
        cmocka_unit_test(test_remove_on_cancel),
        cmocka_unit_test(test_purge),
        cmocka_unit_test(test_shutdown_policies),
        cmocka_unit_test(test_failing_periodic_stops),
        cmocka_unit_test(test_periodic_with_slow_runs),
        cmocka_unit_test(test_requeue_when_growth_fails),
        cmocka_unit_test(test_max_pending_refuses_rearm),
        cmocka_unit_test(test_heap_checker_random),
    };
    return cmocka_run_group_tests_name("heapqueue", tests, NULL, NULL);
}
