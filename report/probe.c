/*
 * report/probe.c — timerbench-probe: the behavioural experiments the report
 * needs and no timing harness measures, on the virtual clock
 * (deterministic, no threads), for every registered backend.
 *
 * failure: what one failing task does to the others (java.util.Timer dies
 * with it, a pool goes on).  Ten one-shot tasks due at 1, 2, ... 10 ms, the
 * third of which fails (returns non-zero); the clock is advanced far past
 * the last deadline and past any wheel's tick; then one more task is
 * scheduled.  One entry `failure/<backend>/ten/series=h2h/N:10` with the
 * counters
 *   after          tasks due after the failing one (7),
 *   ran_after      how many of those ran,
 *   ran_before     how many tasks due before it ran (2 expected),
 *   accepted_after 1 if the schedule after the failure was accepted,
 *   failed         the scheduler's own failed counter.
 *
 * wallstep: what setting the system clock does to pending tasks
 * (java.util.Timer schedules on System.currentTimeMillis, the JDK's pool on
 * nanoTime; DECISIONS.md D15).  Three one-shot tasks due at 10, 20, 30 ms;
 * the clock is advanced millisecond by millisecond to 5 ms, the wall clock
 * is stepped by tb_wall_step() (every scheduler has one; only a backend
 * with TB_CAP_WALL_CLOCK schedules on it), and the clock is advanced on
 * to 1 s, past any wheel's tick.  Each step is run beside a control run
 * without it, so a wheel's tick rounding is not taken for the step's
 * effect.  One entry per step, `wallstep/<backend>/<back|forward>/
 * series=h2h/N:3`, with the counters
 *   step_ns        the step (back: -50 ms, forward: +15 ms),
 *   wall_clock     1 if the backend declares TB_CAP_WALL_CLOCK,
 *   resolution_ns  the clock's advance step (1 ms): a run time is known
 *                  to within it,
 *   tasks, ran     tasks scheduled, and how many ran once,
 *   delay_ns_<k>   task k's (1-based) run time minus its planned time,
 *   shift_ns_<k>   its run time minus its run time in the control run.
 *
 *   timerbench-probe [--out FILE]      (default: standard output)
 */
#include <stdio.h>
#include <string.h>

#include "timerbench/scheduler.h"

#define TASKS 10
#define FAILING 3 /* 1-based: the task due at 3 ms fails */

struct run {
    int id;
    int *ran;
};

static int task(void *arg)
{
    struct run *r = arg;
    r->ran[r->id - 1]++;
    return r->id == FAILING ? 1 : 0;
}

static int noop(void *arg)
{
    (void)arg;
    return 0;
}

/* Writes `s` as a JSON string: the names come from the registry, but a
 * backend may be named by anyone who adds one. */
static void json_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Opens one probe's record in Google Benchmark's JSON form (one iteration,
 * one repetition), after `sep`.  A failed probe (rc != TB_OK) gets its error
 * and the record is closed: returns 0.  Else returns 1 and the caller adds
 * its fields and the closing brace. */
static int record_open(FILE *out, const char *sep, const char *name, int rc)
{
    fprintf(out, "%s\n    {\"name\": ", sep);
    json_string(out, name);
    fprintf(out, ", \"run_name\": ");
    json_string(out, name);
    fprintf(out, ", \"run_type\": \"iteration\", \"repetitions\": 1, "
                 "\"repetition_index\": 0, \"threads\": 1, "
                 "\"iterations\": 1");
    if (rc == TB_OK)
        return 1;
    fprintf(out, ", \"error_occurred\": true, \"error_message\": ");
    json_string(out, tb_strerror(rc));
    fprintf(out, "}");
    return 0;
}

/* Runs the experiment on backend b; returns 0, or a TB_E* code when the
 * scheduler could not even be set up (reported as a benchmark error). */
static int probe(const struct tb_backend *b, int ran[TASKS], int *accepted,
                 unsigned long long *failed, double *elapsed_ns)
{
    int64_t t0 = tb_monotonic_ns();
    struct tb_sched *s;
    int rc = tb_create(b, NULL, &s);
    if (rc != TB_OK)
        return rc;
    struct run runs[TASKS];
    memset(ran, 0, sizeof(int) * TASKS);
    for (int i = 0; i < TASKS; i++) {
        runs[i].id = i + 1;
        runs[i].ran = ran;
        rc = tb_schedule(s, (int64_t)(i + 1) * TB_MS, task, &runs[i], NULL);
        if (rc != TB_OK) {
            tb_destroy(s);
            return rc;
        }
    }
    /* Far past the last deadline and any default tick (Netty's 100 ms),
     * in steps, as a running clock would move. */
    for (int64_t now = 100 * TB_MS; now <= 10 * TB_SEC; now += 100 * TB_MS)
        if (tb_advance(s, now) < 0)
            break;
    *accepted = tb_schedule(s, TB_MS, noop, NULL, NULL) == TB_OK;
    struct tb_stats st;
    memset(&st, 0, sizeof st);
    tb_stats(s, &st);
    *failed = (unsigned long long)st.failed;
    tb_destroy(s);
    *elapsed_ns = (double)(tb_monotonic_ns() - t0);
    return TB_OK;
}

/* ---- wallstep ------------------------------------------------------------ */

#define WS_TASKS 3
#define WS_STEP_AT (5 * TB_MS)    /* when the wall clock is stepped */
#define WS_END (1 * TB_SEC)       /* past every deadline and any tick */
#define WS_RES TB_MS              /* the advance step */

struct ws_run {
    struct tb_sched *s;
    int runs;     /* how many times it ran */
    int64_t at;   /* the virtual time of its first run */
};

static int ws_task(void *arg)
{
    struct ws_run *r = arg;
    if (r->runs++ == 0)
        r->at = tb_now(r->s);
    return 0;
}

/* The planned (virtual) time of task k, 0-based: 10, 20, 30 ms. */
static int64_t ws_planned(int k)
{
    return (int64_t)(k + 1) * 10 * TB_MS;
}

/* Runs the three tasks on backend b with a wall-clock step of `step_ns` at
 * WS_STEP_AT (0: the control run); returns 0 or a TB_E* code. */
static int ws_probe(const struct tb_backend *b, int64_t step_ns,
                    struct ws_run runs[WS_TASKS])
{
    struct tb_sched *s;
    int rc = tb_create(b, NULL, &s);
    if (rc != TB_OK)
        return rc;
    for (int k = 0; k < WS_TASKS; k++) {
        runs[k] = (struct ws_run){.s = s, .runs = 0, .at = -1};
        rc = tb_schedule(s, ws_planned(k), ws_task, &runs[k], NULL);
        if (rc != TB_OK)
            goto out;
    }
    for (int64_t now = WS_RES; now <= WS_STEP_AT; now += WS_RES)
        if (tb_advance(s, now) < 0) {
            rc = TB_ESTATE;
            goto out;
        }
    if (step_ns != 0 && (rc = tb_wall_step(s, step_ns)) != TB_OK)
        goto out;
    for (int64_t now = WS_STEP_AT + WS_RES; now <= WS_END; now += WS_RES)
        if (tb_advance(s, now) < 0) {
            rc = TB_ESTATE;
            goto out;
        }
out:
    tb_destroy(s);
    return rc;
}

/* Writes the entry of one step on backend b: the step and its control run. */
static void ws_entry(FILE *out, const struct tb_backend *b, const char *case_,
                     int64_t step_ns)
{
    char name[256];
    snprintf(name, sizeof name, "wallstep/%s/%s/series=h2h/N:%d", b->name,
             case_, WS_TASKS);
    int64_t t0 = tb_monotonic_ns();
    struct ws_run ctl[WS_TASKS], stp[WS_TASKS];
    int rc = ws_probe(b, 0, ctl);
    if (rc == TB_OK)
        rc = ws_probe(b, step_ns, stp);
    double ns = (double)(tb_monotonic_ns() - t0);
    if (!record_open(out, ",", name, rc))
        return;
    int ran = 0;
    for (int k = 0; k < WS_TASKS; k++)
        ran += stp[k].runs == 1;
    fprintf(out, ", \"real_time\": %.0f, \"cpu_time\": %.0f, "
                 "\"time_unit\": \"ns\", \"step_ns\": %lld, "
                 "\"wall_clock\": %d, \"resolution_ns\": %lld, "
                 "\"tasks\": %d, \"ran\": %d",
            ns, ns, (long long)step_ns, (b->caps & TB_CAP_WALL_CLOCK) ? 1 : 0,
            (long long)WS_RES, WS_TASKS, ran);
    /* a task that did not run (or ran more than once) has no delay */
    for (int k = 0; k < WS_TASKS; k++)
        if (stp[k].runs == 1)
            fprintf(out, ", \"delay_ns_%d\": %lld", k + 1,
                    (long long)(stp[k].at - ws_planned(k)));
    for (int k = 0; k < WS_TASKS; k++)
        if (stp[k].runs == 1 && ctl[k].runs == 1)
            fprintf(out, ", \"shift_ns_%d\": %lld", k + 1,
                    (long long)(stp[k].at - ctl[k].at));
    fprintf(out, "}");
}

int main(int argc, char **argv)
{
    FILE *out = stdout;
    if (argc == 3 && strcmp(argv[1], "--out") == 0) {
        out = fopen(argv[2], "w");
        if (!out) {
            perror(argv[2]);
            return 1;
        }
    } else if (argc != 1) {
        fprintf(stderr, "usage: timerbench-probe [--out FILE]\n");
        return 2;
    }
    fprintf(out, "{\n  \"context\": {\"harness\": \"probe\", \"probe\": "
                 "\"virtual clock; failure: ten one-shot tasks at 1..10 ms, the "
                 "third fails; wallstep: one-shots at 10, 20, 30 ms, the wall "
                 "clock stepped at 5 ms\"},\n  \"benchmarks\": [");
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        char name[256];
        snprintf(name, sizeof name, "failure/%s/ten/series=h2h/N:%d", b->name,
                 TASKS);
        int ran[TASKS];
        int accepted = 0;
        unsigned long long failed = 0;
        double ns = 0;
        int rc = probe(b, ran, &accepted, &failed, &ns);
        if (!record_open(out, i ? "," : "", name, rc))
            continue;
        int before = 0, after = 0;
        for (int k = 0; k < TASKS; k++) {
            if (k + 1 < FAILING)
                before += ran[k] > 0;
            else if (k + 1 > FAILING)
                after += ran[k] > 0;
        }
        fprintf(out, ", \"real_time\": %.0f, \"cpu_time\": %.0f, "
                     "\"time_unit\": \"ns\", \"after\": %d, "
                     "\"ran_after\": %d, \"ran_before\": %d, "
                     "\"accepted_after\": %d, \"failed\": %llu}",
                ns, ns, TASKS - FAILING, after, before, accepted, failed);
    }
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        ws_entry(out, b, "back", -50 * TB_MS);
        ws_entry(out, b, "forward", 15 * TB_MS);
    }
    fprintf(out, "\n  ]\n}\n");
    if (out != stdout && fclose(out) != 0) {
        perror(argv[2]);
        return 1;
    }
    return 0;
}
