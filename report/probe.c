/*
 * report/probe.c — timerbench-probe: the behavioural experiment the report
 * needs and no timing harness measures: what one failing task does to the
 * others (java.util.Timer dies with it, a pool goes on).
 *
 * For every registered backend, on the virtual clock (deterministic, no
 * threads): ten one-shot tasks due at 1, 2, ... 10 ms, the third of which
 * fails (returns non-zero); the clock is advanced far past the last
 * deadline and past any wheel's tick; then one more task is scheduled.
 * The output is Google Benchmark JSON, so the report reads it like every
 * other result: one entry `failure/<backend>/ten/series=h2h/N:10` with the
 * counters
 *   after          tasks due after the failing one (7),
 *   ran_after      how many of those ran,
 *   ran_before     how many tasks due before it ran (2 expected),
 *   accepted_after 1 if the schedule after the failure was accepted,
 *   failed         the scheduler's own failed counter.
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
                 "\"ten one-shot tasks at 1..10 ms on the virtual clock, the "
                 "third fails\"},\n  \"benchmarks\": [");
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
        fprintf(out, "%s\n    {\"name\": ", i ? "," : "");
        json_string(out, name);
        fprintf(out, ", \"run_name\": ");
        json_string(out, name);
        fprintf(out, ", \"run_type\": \"iteration\", \"repetitions\": 1, "
                     "\"repetition_index\": 0, \"threads\": 1, "
                     "\"iterations\": 1");
        if (rc != TB_OK) {
            fprintf(out, ", \"error_occurred\": true, \"error_message\": ");
            json_string(out, tb_strerror(rc));
            fprintf(out, "}");
            continue;
        }
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
    fprintf(out, "\n  ]\n}\n");
    if (out != stdout && fclose(out) != 0) {
        perror(argv[2]);
        return 1;
    }
    return 0;
}
