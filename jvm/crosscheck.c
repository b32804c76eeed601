/*
 * jvm/crosscheck.c — the C side of the behaviour cross-checks of issue 32:
 * the scripts of CrossCheck.java run on the C renderings (heapqueue for
 * ScheduledThreadPoolExecutor, timerthread for java.util.Timer, timerwheel
 * for Netty's HashedWheelTimer) over the public API on the virtual clock,
 * printing the lines the Java side prints, so that tests/jvm_crosscheck.py
 * can compare them line by line.
 *
 * usage: jvm-crosscheck ties|fail|catchup|maxpending|tick
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "timerbench/scheduler.h"

/* Stops with a message when a call of the script fails. */
static void must(int rc, const char *what)
{
    if (rc < 0) {
        fprintf(stderr, "jvm-crosscheck: %s: %s\n", what, tb_strerror(rc));
        exit(1);
    }
}

static struct tb_sched *make(const char *backend, const struct tb_config *c)
{
    const struct tb_backend *b = tb_backend_find(backend);
    if (!b) {
        fprintf(stderr, "jvm-crosscheck: no backend %s\n", backend);
        exit(1);
    }
    struct tb_sched *s = NULL;
    must(tb_create(b, c, &s), "tb_create");
    return s;
}

/* Moves the virtual clock tick by tick up to `end`, so that each run sees
 * the boundary it ran on. */
static void step_to(struct tb_sched *s, int64_t end, int64_t tick)
{
    for (int64_t t = (tb_now(s) / tick + 1) * tick; t <= end; t += tick)
        must((int)tb_advance(s, t), "tb_advance");
}

/* ---- ties: the script of CrossCheck.TIES ---------------------------------- */

static const int ties_ms[] = {30, 10, 30, 20, 10, 30, 20, 10, 30, 10, 20, 30};
#define NTIES (sizeof ties_ms / sizeof ties_ms[0])

struct order {
    int ids[64];
    size_t n;
};

struct tagged {
    struct order *o;
    int id;
};

static int record_id(void *arg)
{
    struct tagged *t = arg;
    if (t->o->n < 64)
        t->o->ids[t->o->n++] = t->id;
    return 0;
}

static void ties(void)
{
    struct tb_sched *s = make("heapqueue", NULL);
    struct order o = {.n = 0};
    struct tagged tag[NTIES];
    for (size_t i = 0; i < NTIES; i++) {
        tag[i] = (struct tagged){&o, (int)i};
        must(tb_schedule(s, ties_ms[i] * TB_MS, record_id, &tag[i], NULL),
             "tb_schedule");
    }
    must((int)tb_advance(s, 100 * TB_MS), "tb_advance");
    printf("stpe order ");
    for (size_t i = 0; i < o.n; i++)
        printf("%s%d", i ? "," : "", o.ids[i]);
    printf("\n");
    tb_destroy(s);
}

/* ---- fail: A at 10 ms, B at 20 ms fails, C at 30 ms, then D ------------- */

struct named {
    char *ran;  /* the names run so far */
    char name;
};

static int named_task(void *arg)
{
    struct named *t = arg;
    size_t len = strlen(t->ran);
    t->ran[len] = t->name;
    t->ran[len + 1] = '\0';
    return t->name == 'B' ? -1 : 0; /* B is the throwing task */
}

static void fail(void)
{
    const char *who[] = {"stpe", "timer"};
    const char *backend[] = {"heapqueue", "timerthread"};
    for (int k = 0; k < 2; k++) {
        struct tb_sched *s = make(backend[k], NULL);
        char ran[8] = "";
        struct named t[4];
        for (int i = 0; i < 4; i++)
            t[i] = (struct named){ran, (char)('A' + i)};
        for (int i = 0; i < 3; i++)
            must(tb_schedule(s, 10 * (i + 1) * TB_MS, named_task, &t[i], NULL),
                 "tb_schedule");
        tb_advance(s, 300 * TB_MS); /* Timer: TB_ESTATE-like codes once dead */
        int rc = tb_schedule(s, 10 * TB_MS, named_task, &t[3], NULL);
        if (rc == TB_OK)
            tb_advance(s, 600 * TB_MS);
        printf("%s ran ", who[k]);
        for (size_t i = 0; ran[i]; i++)
            printf("%s%c", i ? "," : "", ran[i]);
        printf(" after %s\n", rc == TB_OK ? "accepted" : "refused");
        tb_destroy(s);
    }
}

/* ---- catchup: fixed rate 100 ms, the first run stalls 450 ms ------------ */

struct rate {
    struct tb_sched *s;
    int64_t starts[16];
    int n;
};

static int rate_task(void *arg)
{
    struct rate *r = arg;
    if (r->n < 16)
        r->starts[r->n++] = tb_now(r->s);
    if (r->n == 1)
        must(tb_spend(r->s, 450 * TB_MS), "tb_spend");
    return 0;
}

static void catchup(void)
{
    const char *who[] = {"stpe", "timer"};
    const char *backend[] = {"heapqueue", "timerthread"};
    const int64_t period = 100 * TB_MS, stall = 450 * TB_MS;
    for (int k = 0; k < 2; k++) {
        struct tb_sched *s = make(backend[k], NULL);
        struct rate r = {.s = s, .n = 0};
        must(tb_schedule_fixed_rate(s, period, rate_task, &r, NULL, period),
             "tb_schedule_fixed_rate");
        for (int64_t t = TB_MS; r.n < 8 && t <= 2000 * TB_MS; t += TB_MS)
            if (t >= tb_now(s))
                must((int)tb_advance(s, t), "tb_advance");
        /* CrossCheck.catchup counts the runs whose scheduled time is
         * before the stall's end.  On the virtual clock an on-time run
         * starts at its scheduled time, a grid point, so those are the runs
         * that start at the stall's end, off the grid. */
        int64_t stall_end = r.starts[0] + stall;
        int up = 0, later = 0;
        for (int i = 1; i < 8 && i < r.n; i++) {
            if (r.starts[i] == stall_end && (r.starts[i] - r.starts[0]) % period)
                up++;
            else
                later++;
        }
        printf("%s catchup %d later %d\n", who[k], up, later);
        tb_destroy(s);
    }
}

/* ---- maxpending: Netty's maxPendingTimeouts = 3, tick 10 ms -------------- */

static int flag_task(void *arg)
{
    *(int *)arg = 1;
    return 0;
}

static void maxpending(void)
{
    const int64_t tick = 10 * TB_MS;
    struct tb_config c = {.tick_ns = tick, .wheel_size = 64, .max_pending = 3};
    struct tb_sched *s = make("timerwheel", &c);
    const char names[] = "ABCDEFGH";
    const int64_t delay[] = {30, 10000, 10000, 10000, 10000, 10000, 10000, 10000};
    tb_handle h[8] = {0};
    int a_ran = 0, other = 0;
    printf("netty");
    for (int i = 0; i < 8; i++) {
        if (i == 4) { /* A has run and left the count */
            while (!a_ran || tb_pending(s) != 2) {
                if (tb_now(s) > 10 * TB_SEC) {
                    fprintf(stderr, "jvm-crosscheck: A did not run\n");
                    exit(1);
                }
                step_to(s, tb_now(s) + tick, tick);
            }
        }
        if (i == 6) { /* B cancelled; it leaves the count (at a tick) */
            tb_cancel(s, h[1]);
            while (tb_pending(s) != 2) {
                if (tb_now(s) > 10 * TB_SEC) {
                    fprintf(stderr, "jvm-crosscheck: B stayed pending\n");
                    exit(1);
                }
                step_to(s, tb_now(s) + tick, tick);
            }
        }
        int rc = tb_schedule(s, delay[i] * TB_MS, flag_task,
                             i == 0 ? &a_ran : &other, &h[i]);
        if (rc != TB_OK && rc != TB_EFULL)
            must(rc, "tb_schedule");
        printf(" %c=%s", names[i], rc == TB_OK ? "accepted" : "refused");
    }
    printf("\n");
    tb_destroy(s);
}

/* ---- tick: timeouts of 30, 230, 450, 820, 1555 ms at a 200 ms tick ------ */

struct shot {
    struct tb_sched *s;
    int64_t at;
};

static int shot_task(void *arg)
{
    struct shot *t = arg;
    t->at = tb_now(t->s);
    return 0;
}

static void tick(void)
{
    const int64_t tick = 200 * TB_MS;
    const int64_t delays[] = {30, 230, 450, 820, 1555};
    struct tb_config c = {.tick_ns = tick, .wheel_size = 512};
    struct tb_sched *s = make("timerwheel", &c);
    struct shot t[5];
    for (int i = 0; i < 5; i++) {
        t[i] = (struct shot){s, -1};
        must(tb_schedule(s, delays[i] * TB_MS, shot_task, &t[i], NULL),
             "tb_schedule");
    }
    step_to(s, 2000 * TB_MS, tick);
    for (int i = 0; i < 5; i++) {
        int64_t deadline = delays[i] * TB_MS; /* scheduled at 0 */
        /* Netty's tick for a deadline: floor(d / tick) + 1 (CrossCheck.tick) */
        int64_t want = deadline / tick + 1, got = t[i].at / tick;
        printf("netty timeout %lldms tick_offset %lld early %s\n",
               (long long)delays[i], (long long)(t[i].at < 0 ? -999 : got - want),
               t[i].at >= 0 && t[i].at < deadline ? "yes" : "no");
    }
    tb_destroy(s);
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: jvm-crosscheck ties|fail|catchup|maxpending|tick\n");
        return 2;
    }
    if (!strcmp(argv[1], "ties"))
        ties();
    else if (!strcmp(argv[1], "fail"))
        fail();
    else if (!strcmp(argv[1], "catchup"))
        catchup();
    else if (!strcmp(argv[1], "maxpending"))
        maxpending();
    else if (!strcmp(argv[1], "tick"))
        tick();
    else {
        fprintf(stderr, "jvm-crosscheck: unknown check %s\n", argv[1]);
        return 2;
    }
    return 0;
}
