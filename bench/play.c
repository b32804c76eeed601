/*
 * bench/play.c — timerbench-play: one open-loop real-time play of a timer
 * workload against one subject (bench/player.h), written as one row of
 * the purgatory experiment (bench/README.md, "The purgatory experiment").
 *
 *   timerbench-play --subject NAME (--model purgatory --shape few|many
 *                   --rate R --seconds S [--seed N] | --trace FILE
 *                   [--scale F]) [--repetition K] [--no-pin] [--json OUT]
 *   timerbench-play --list       every subject: name, side, structure
 *   timerbench-play --pinning    the pinning a play would use, as JSON
 *   --lags FILE writes each operation's intended time and lag (CSV: op,
 *   kind, id, intended_ns from the play's start, lag_ns), for the tests.
 *   --dump FILE writes the workload as a trace file (format v1, unit=ns)
 *   instead of playing it: what the tests check the generator with, and a
 *   trace --trace plays back.
 *
 * Exit 0 after a play (saturated or not), 1 when the play failed (the
 * subject could not open, a schedule failed, or its checks found a fire of
 * a cancelled request or one before its deadline), 2 for bad usage or a
 * trace the reader refuses.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "player.h"

static void usage(FILE *o)
{
    fprintf(o,
            "usage: timerbench-play --subject NAME (--model purgatory "
            "--shape few|many --rate R --seconds S [--seed N] | --trace FILE "
            "[--scale F]) [--repetition K] [--no-pin] [--json OUT] [--lags FILE] | --dump FILE\n"
            "       timerbench-play --list | --pinning\n");
}

static void __attribute__((noreturn, format(printf, 1, 2)))
die_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("timerbench-play: ", stderr);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    usage(stderr);
    exit(2);
}

static double number(const char *opt, const char *v)
{
    char *end;
    errno = 0;
    double x = strtod(v, &end);
    if (!*v || *end || errno || !isfinite(x))
        die_usage("%s wants a number, got '%s'", opt, v);
    return x;
}

static void json_escaped(FILE *o, const char *s)
{
    fputc('"', o);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(o, "\\u%04x", (unsigned char)*s);
        else
            fputc(*s, o);
    }
    fputc('"', o);
}

/* Opens `path` to be written whole: a temporary file beside it (tmp),
 * renamed onto it by done(); a path that exists and is no regular file
 * (/dev/null, /dev/stdout, a FIFO) is written to directly (tmp ""), since
 * a rename would put a file in its place.  NULL with a message. */
static FILE *begin(const char *path, char *tmp, size_t size)
{
    struct stat st;
    tmp[0] = '\0';
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        FILE *o = fopen(path, "w");
        if (!o)
            fprintf(stderr, "timerbench-play: cannot write %s: %s\n", path,
                    strerror(errno));
        return o;
    }
    if (snprintf(tmp, size, "%s.tmp%ld", path, (long)getpid()) >=
        (int)size) {
        fprintf(stderr, "timerbench-play: path too long: %s\n", path);
        return NULL;
    }
    FILE *o = fopen(tmp, "w");
    if (!o)
        fprintf(stderr, "timerbench-play: cannot write %s: %s\n", tmp,
                strerror(errno));
    return o;
}

/* Closes what begin() opened and renames its temporary file onto path:
 * 0, or -1 with a message (the temporary file removed). */
static int done(FILE *o, const char *path, const char *tmp)
{
    if (fclose(o) || (tmp[0] && rename(tmp, path))) {
        fprintf(stderr, "timerbench-play: cannot write %s: %s\n", path,
                strerror(errno));
        if (tmp[0])
            remove(tmp);
        return -1;
    }
    return 0;
}

/* Writes the row to `path` whole. */
static int write_row(const char *path, const struct pl_result *r)
{
    char tmp[4096];
    FILE *o = begin(path, tmp, sizeof tmp);
    if (!o)
        return -1;
    pl_row_json(o, r);
    fputc('\n', o);
    return done(o, path, tmp);
}

/* Each operation's intended time and lag, CSV, written whole. */
static int write_lags(const char *path, const struct pl_trace *t,
                      const int64_t *lag)
{
    char tmp[4096];
    FILE *o = begin(path, tmp, sizeof tmp);
    if (!o)
        return -1;
    fputs("op,kind,id,intended_ns,lag_ns\n", o);
    for (size_t i = 0; i < t->nops; i++)
        fprintf(o, "%zu,%s,%u,%lld,%lld\n", i,
                t->ops[i].kind == PL_SCHEDULE ? "schedule" : "cancel",
                t->ops[i].id, (long long)t->ops[i].t, (long long)lag[i]);
    return done(o, path, tmp);
}

/* The play as a trace file (v1, ns), written whole (rename). */
static int write_trace(const char *path, struct pl_trace *t)
{
    char tmp[4096];
    FILE *o = begin(path, tmp, sizeof tmp);
    if (!o) {
        pl_trace_free(t);
        return 1;
    }
    fprintf(o, "#timerbench-trace v1 unit=ns\n# timerbench-play --dump "
            "(shape %s, %zu requests, %g s)\n"
            "time,op,id,delay,period\n",
            t->shape[0] ? t->shape : "trace", t->requests, t->seconds);
    for (size_t i = 0; i < t->nops; i++) {
        const struct pl_op *op = &t->ops[i];
        if (op->kind == PL_SCHEDULE)
            fprintf(o, "%lld,schedule,%u,%lld,\n", (long long)op->t, op->id,
                    (long long)op->delay);
        else
            fprintf(o, "%lld,cancel,%u,,\n", (long long)op->t, op->id);
    }
    pl_trace_free(t);
    return done(o, path, tmp) ? 1 : 0;
}

int main(int argc, char **argv)
{
    const char *subject = NULL, *model = NULL, *shape = NULL;
    const char *trace = NULL, *json = NULL, *dump = NULL, *lags = NULL;
    double rate = nan(""), seconds = nan(""), scale = nan("");
    unsigned long long seed = 1;
    long repetition = 0;
    bool pin = true, list = false, pinning = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--list")) {
            list = true;
            continue;
        }
        if (!strcmp(a, "--pinning")) {
            pinning = true;
            continue;
        }
        if (!strcmp(a, "--no-pin")) {
            pin = false;
            continue;
        }
        if (strncmp(a, "--", 2))
            die_usage("unexpected argument '%s'", a);
        if (i + 1 >= argc)
            die_usage("%s needs a value", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--subject"))
            subject = v;
        else if (!strcmp(a, "--model"))
            model = v;
        else if (!strcmp(a, "--shape"))
            shape = v;
        else if (!strcmp(a, "--trace"))
            trace = v;
        else if (!strcmp(a, "--json"))
            json = v;
        else if (!strcmp(a, "--dump"))
            dump = v;
        else if (!strcmp(a, "--lags"))
            lags = v;
        else if (!strcmp(a, "--rate"))
            rate = number(a, v);
        else if (!strcmp(a, "--seconds"))
            seconds = number(a, v);
        else if (!strcmp(a, "--scale"))
            scale = number(a, v);
        else if (!strcmp(a, "--seed") || !strcmp(a, "--repetition")) {
            char *end;
            errno = 0;
            unsigned long long x = strtoull(v, &end, 10);
            if (!*v || *end || errno || *v == '-' ||
                (!strcmp(a, "--repetition") && x > 1000000))
                die_usage("%s wants a whole number%s, got '%s'", a,
                          strcmp(a, "--seed") ? " up to 10^6" : "", v);
            if (!strcmp(a, "--seed"))
                seed = x;
            else
                repetition = (long)x;
        } else
            die_usage("unknown option '%s'", a);
    }
    if (list) {
        for (size_t i = 0, n = pl_subject_count(); i < n; i++) {
            const struct pl_subject *s = pl_subject_at(i);
            printf("%s\t%s\t%s\n", s->name, s->side,
                   s->structure ? s->structure : "");
        }
        return 0;
    }
    struct pl_pinning pn;
    pl_pinning_choose(&pn);
    if (!pin) {
        pn.player_cpu = pn.subject_cpu = -1;
        snprintf(pn.note, sizeof pn.note, "not pinned: --no-pin");
    }
    if (pinning) {
        printf("{\"player_cpu\": ");
        pn.player_cpu < 0 ? printf("null") : printf("%d", pn.player_cpu);
        printf(", \"subject_cpu\": ");
        pn.subject_cpu < 0 ? printf("null") : printf("%d", pn.subject_cpu);
        printf(", \"note\": ");
        json_escaped(stdout, pn.note);
        printf("}\n");
        return 0;
    }
    if (!subject && !dump)
        die_usage("--subject is required (--list shows them)");
    const struct pl_subject *s = subject ? pl_subject_find(subject) : NULL;
    if (subject && !s)
        die_usage("unknown subject '%s' (--list shows them)", subject);
    if (dump && json)
        die_usage("--dump writes the workload and plays nothing: no --json");
    if (!!model == !!trace)
        die_usage("give either --model purgatory or --trace FILE");
    char err[512] = "";
    struct pl_trace t;
    double target;
    if (model) {
        if (strcmp(model, "purgatory"))
            die_usage("unknown model '%s' (purgatory)", model);
        if (!shape)
            die_usage("--model purgatory needs --shape few|many");
        if (isnan(rate) || isnan(seconds))
            die_usage("--model purgatory needs --rate and --seconds");
        if (!isnan(scale))
            die_usage("--scale is for --trace");
        if (pl_purgatory(&t, shape, rate, seconds, seed, err, sizeof err))
            die_usage("%s", err);
        target = rate;
    } else {
        if (shape || !isnan(rate) || !isnan(seconds))
            die_usage("--shape, --rate and --seconds are for --model "
                      "purgatory (a trace is scaled with --scale)");
        if (pl_trace_read(&t, trace, isnan(scale) ? 1.0 : scale, err,
                          sizeof err)) {
            fprintf(stderr, "timerbench-play: %s\n", err);
            return 2;
        }
        target = -1; /* the trace's own: its offered rate */
    }
    if (dump)
        return write_trace(dump, &t);
    struct pl_result r = {.lag_out = NULL};
    if (lags && !(r.lag_out = malloc(t.nops * sizeof *r.lag_out))) {
        fprintf(stderr, "timerbench-play: out of memory\n");
        pl_trace_free(&t);
        return 1;
    }
    int rc = pl_play(&t, s, &pn, &r, err, sizeof err);
    if (!rc && lags)
        rc = write_lags(lags, &t, r.lag_out);
    else if (rc)
        fprintf(stderr, "timerbench-play: %s: %s\n", subject, err);
    free(r.lag_out);
    pl_trace_free(&t);
    if (rc)
        return 1;
    r.repetition = (int)repetition;
    r.target_rate = target >= 0 ? target : r.offered_rate;
    if (r.early || r.unexpected) {
        fprintf(stderr, "timerbench-play: %s: %llu fires before their "
                "deadline, %llu fires of a cancelled or already fired "
                "request: the subject broke its contract\n", subject,
                (unsigned long long)r.early,
                (unsigned long long)r.unexpected);
        return 1;
    }
    fprintf(stderr, "%s %s: offered %.0f/s achieved %.0f/s lag p50 %.1f us "
            "p99 %.1f us growth %.1f us%s%s\n", r.subject,
            r.shape[0] ? r.shape : "trace", r.offered_rate, r.achieved_rate,
            (double)r.lag_p50_ns / 1e3, (double)r.lag_p99_ns / 1e3,
            (double)r.lag_growth_ns / 1e3, r.saturated ? ": saturated, " : "",
            r.why);
    if (json)
        return write_row(json, &r) ? 1 : 0;
    pl_row_json(stdout, &r);
    fputc('\n', stdout);
    return 0;
}
