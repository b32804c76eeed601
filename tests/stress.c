/*
 * stress.c — producers on four threads schedule and cancel 10^5 tasks each
 * against a running monotonic scheduler; at the end every task is accounted
 * for exactly: each ran once or was cancelled, never both, and the
 * scheduler's own counters agree.  Runs for every registered backend (or the
 * one named in argv[1]).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "testlib.h"

enum { PRODUCERS = 4, PER_PRODUCER = 100000 };

static const struct tb_backend *backend;

struct slot {
    _Atomic int runs;
    int cancelled; /* written by its producer only */
};

struct producer {
    struct tb_sched *s;
    struct slot *slots;
    uint64_t seed;
    long cancels, schedules;
    int errors;
};

static int stress_task(void *arg)
{
    atomic_fetch_add(&((struct slot *)arg)->runs, 1);
    return 0;
}

static void *produce(void *arg)
{
    struct producer *p = arg;
    enum { WINDOW = 64 };
    tb_handle recent[WINDOW] = {0};
    int recent_idx[WINDOW] = {0};
    for (int i = 0; i < PER_PRODUCER; i++) {
        int64_t delay = rng_range(&p->seed, 0, 20 * TB_MS);
        tb_handle h;
        if (tb_schedule(p->s, delay, stress_task, &p->slots[i], &h) != TB_OK) {
            p->errors++;
            continue;
        }
        p->schedules++;
        int w = i % WINDOW;
        recent[w] = h;
        recent_idx[w] = i;
        if (rng_next(&p->seed) % 2) { /* cancel a recent task, maybe run */
            int k = (int)(rng_next(&p->seed) % WINDOW);
            int rc = tb_cancel(p->s, recent[k]);
            if (rc < 0)
                p->errors++;
            if (rc == 1) {
                p->slots[recent_idx[k]].cancelled++;
                p->cancels++;
            }
            recent[k] = TB_HANDLE_NONE;
        }
    }
    return NULL;
}

struct drained {
    struct tb_sched *s;
};

static int drained(void *ctx)
{
    struct tb_stats st;
    tb_stats(((struct drained *)ctx)->s, &st);
    return st.pending == 0 && st.running == 0;
}

static void test_producers(void **state)
{
    (void)state;
    struct tb_config c = {.clock = TB_CLOCK_MONOTONIC, .tick_ns = TB_MS,
                          .threads = 2};
    struct tb_sched *s = make_sched(backend, &c);
    assert_int_equal(tb_start(s), TB_OK);
    struct producer prod[PRODUCERS];
    pthread_t th[PRODUCERS];
    for (int i = 0; i < PRODUCERS; i++) {
        prod[i] = (struct producer){.s = s, .seed = 1000 + (uint64_t)i};
        prod[i].slots = calloc(PER_PRODUCER, sizeof(struct slot));
        assert_non_null(prod[i].slots);
        assert_int_equal(pthread_create(&th[i], NULL, produce, &prod[i]), 0);
    }
    long cancels = 0, schedules = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(prod[i].errors, 0);
        cancels += prod[i].cancels;
        schedules += prod[i].schedules;
    }
    assert_int_equal(schedules, PRODUCERS * PER_PRODUCER);
    struct drained d = {s};
    assert_true(wait_until(drained, &d, 60 * TB_SEC));
    assert_int_equal(tb_shutdown_now(s, NULL, NULL), 0);
    assert_int_equal(tb_await_termination(s, 30 * TB_SEC), TB_OK);
    long runs = 0;
    for (int i = 0; i < PRODUCERS; i++) {
        for (int k = 0; k < PER_PRODUCER; k++) {
            struct slot *sl = &prod[i].slots[k];
            int r = atomic_load(&sl->runs);
            if (r + sl->cancelled != 1)
                fail_msg("%s: producer %d task %d ran %d times, cancelled %d",
                         backend->name, i, k, r, sl->cancelled);
            runs += r;
        }
        free(prod[i].slots);
    }
    struct tb_stats st;
    tb_stats(s, &st);
    assert_int_equal(st.submitted, (uint64_t)schedules);
    assert_int_equal(st.cancelled, (uint64_t)cancels);
    assert_int_equal(st.fired, (uint64_t)runs);
    assert_int_equal(st.finished, (uint64_t)runs);
    assert_int_equal(runs + cancels, schedules);
    assert_balanced(s);
    tb_destroy(s);
}

int main(int argc, char **argv)
{
    const struct tb_backend *list[64];
    size_t n = backends_from_args(argc, argv, list, 64);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_producers),
    };
    int failed = 0;
    for (size_t i = 0; i < n; i++) {
        backend = list[i];
        char name[128];
        snprintf(name, sizeof name, "stress/%s", backend->name);
        failed += cmocka_run_group_tests_name(name, tests, NULL, NULL);
    }
    return failed ? 1 : 0;
}
