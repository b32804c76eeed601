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
 * over a run of short timers the pool starts fewer timed waits than the
 * leaderless pool, where every idle worker does. */
static uint64_t timed_waits_for(unsigned flags)
{
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .threads = 3,
                          .flags = flags};
    struct tb_sched *s = make_sched(hq(), &c);
    assert_int_equal(tb_start(s), TB_OK);
    for (int i = 1; i <= 40; i++)
        assert_int_equal(tb_schedule(s, i * 5 * TB_MS, noop_task, NULL, NULL),
                         TB_OK);
    assert_int_equal(tb_shutdown(s), 0);
    assert_int_equal(tb_await_termination(s, 60 * TB_SEC), TB_OK);
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.fired, 40);
    tb_destroy(s);
    return st.timed_waits;
}

static void test_leader_saves_timed_waits(void **state)
{
    (void)state;
    uint64_t with = timed_waits_for(0), without = timed_waits_for(TB_F_NO_LEADER);
    print_message("timed waits: leader %llu, no leader %llu\n",
                  (unsigned long long)with, (unsigned long long)without);
    assert_true(with < without);
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

/* D2's sift_levels, counted by hand on a 0-based heap (children of k are
 * 2k + 1 and 2k + 2).  Each new task is the earliest, so it climbs to the
 * root: 50 -> 0, 40 -> 1, 30 -> 1, 20 -> 2, 10 -> 2 levels, heap
 * [10 20 40 50 30].  Running 10 moves 30 to the root and down past 20: 1.
 * Removing 40 (slot 2) puts 50 there, which stays: 0; removing 20 (the root)
 * puts 50 there, which goes down past 30: 1. */
static void test_sift_levels_counted(void **state)
{
    (void)state;
    struct tb_config c = {.flags = TB_F_REMOVE_ON_CANCEL};
    struct tb_sched *s = make_sched(hq(), &c);
    tb_handle h[5];
    struct tb_stats st;
    for (int i = 0; i < 5; i++)
        assert_int_equal(tb_schedule(s, (50 - 10 * i) * TB_MS, noop_task,
                                     NULL, &h[i]), TB_OK);
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 6);
    assert_int_equal(tb_advance(s, 10 * TB_MS), 1);
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 7);
    assert_int_equal(tb_cancel(s, h[1]), 1); /* 40 */
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 7);
    assert_int_equal(tb_cancel(s, h[3]), 1); /* 20 */
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 8);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);

    /* A removal whose replacement climbs: [10 100 20 110 120 30] costs no
     * level to build; removing 110 (slot 3) puts 30 there, which goes up
     * past 100 and stops under 10: 1 level. */
    s = make_sched(hq(), &c);
    static const int at[] = {10, 100, 20, 110, 120, 30};
    for (int i = 0; i < 6; i++)
        assert_int_equal(tb_schedule(s, at[i] * TB_MS, noop_task, NULL,
                                     &h[i % 5]), TB_OK);
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 0);
    assert_int_equal(tb_cancel(s, h[3]), 1); /* 110 */
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 1);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);

    /* Purge's heapify counts too: 10, 40, 20, 30 build [10 30 20 40] (30
     * climbs past 40: 1); purging the cancelled 10 leaves [30 20 40], and
     * heapifying moves 30 down past 20: 1 more. */
    s = make_sched(hq(), NULL);
    static const int at2[] = {10, 40, 20, 30};
    for (int i = 0; i < 4; i++)
        assert_int_equal(tb_schedule(s, at2[i] * TB_MS, noop_task, NULL,
                                     &h[i]), TB_OK);
    assert_int_equal(tb_cancel(s, h[0]), 1);
    assert_int_equal(tb_purge(s), 1);
    tb_stats(s, &st);
    assert_int_equal(st.sift_levels, 2);
    assert_int_equal(tb_check(s), TB_OK);
    tb_destroy(s);
}

/* tb_reserve(n) makes room in the heap array for n more tasks, so they
 * schedule with every allocation refused; the one after them needs the
 * original's growth by half again (1000 -> 1500 slots). */
static void test_reserve_heap(void **state)
{
    (void)state;
    struct failing_alloc fa;
    failing_alloc_init(&fa);
    struct tb_config c = {.allocator = &fa.hook};
    struct tb_sched *s = make_sched(hq(), &c);
    const uint64_t slot = sizeof(struct { int64_t at; void *t; });
    struct tb_stats st;
    tb_stats(s, &st);
    uint64_t before = st.bytes_held;
    assert_int_equal(tb_reserve(s, 1000), TB_OK);
    tb_stats(s, &st);
    assert_true(st.bytes_held >= before + (1000 - 16) * slot);
    fa.budget = 0;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(tb_schedule(s, (i % 7 + 1) * TB_MS, noop_task, NULL,
                                     NULL), TB_OK);
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_ENOMEM);
    assert_int_equal(tb_reserve(s, 1), TB_ENOMEM);
    fa.budget = -1;
    tb_stats(s, &st);
    uint64_t full = st.bytes_held;
    assert_int_equal(tb_schedule(s, TB_MS, noop_task, NULL, NULL), TB_OK);
    tb_stats(s, &st);
    assert_int_equal(st.bytes_held, full + 500 * slot);
    assert_int_equal(tb_reserve(s, 0), TB_OK);
    assert_int_equal(tb_check(s), TB_OK);
    assert_int_equal(tb_advance(s, TB_SEC), 1001);
    assert_balanced(s);
    tb_destroy(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_leader_wakes_for_earlier_head),
        cmocka_unit_test(test_sift_levels_counted),
        cmocka_unit_test(test_reserve_heap),
        cmocka_unit_test(test_leader_saves_timed_waits),
        cmocka_unit_test(test_remove_on_cancel),
        cmocka_unit_test(test_purge),
        cmocka_unit_test(test_shutdown_policies),
        cmocka_unit_test(test_failing_periodic_stops),
        cmocka_unit_test(test_periodic_with_slow_runs),
        cmocka_unit_test(test_heap_checker_random),
    };
    return cmocka_run_group_tests_name("heapqueue", tests, NULL, NULL);
}
