/*
 * bench/player_trace.c — pl_trace_read (bench/player.h): a trace file as a
 * play, read by timerbench-replay's own reader.  bench/replay.c is
 * included whole with TB_REPLAY_PARSER (its main left out), as the trace
 * fuzzer includes it, so the player and the replay accept and refuse
 * exactly the same files with the same "FILE:LINE: why" (exit 2).
 */
#define TB_REPLAY_PARSER 1
/* the replay's passes and JSON writer are not used here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "replay.c"
#pragma GCC diagnostic pop

#include <math.h>

#include "player.h"

int pl_trace_read(struct pl_trace *t, const char *path, double scale,
                  char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (!(scale > 0) || !isfinite(scale)) {
        snprintf(err, errlen, "scale must be a number above 0, got %g",
                 scale);
        return -1;
    }
    struct trace tr;
    parse_trace(&tr, path); /* a refusal exits 2 */
    if (tr.ops[K_PERIODIC]) {
        const struct inst *in = NULL;
        for (size_t i = 0; i < tr.nin && !in; i++)
            if (tr.in[i].period)
                in = &tr.in[i];
        snprintf(err, errlen, "%s:%ld: periodic timer id %" PRIu64 " (and "
                 "%" PRIu64 " periodic lines in all): the player plays "
                 "one-shot timeouts only (schedule, cancel, reschedule)",
                 path, in ? in->line : 0L, in ? in->id : 0,
                 tr.ops[K_PERIODIC]);
        free_trace(&tr);
        return -1;
    }
    if (tr.nin > UINT32_MAX - 1) {
        snprintf(err, errlen, "%s: more than 2^32 timers", path);
        free_trace(&tr);
        return -1;
    }
    size_t n = tr.nev;
    for (size_t i = 0; i < tr.nev; i++)
        n += tr.ev[i].kind == K_RESCHEDULE; /* a cancel and a schedule */
    t->ops = malloc((n ? n : 1) * sizeof *t->ops);
    if (!t->ops) {
        snprintf(err, errlen, "%s: out of memory for %zu operations", path,
                 n);
        free_trace(&tr);
        return -1;
    }
    for (size_t i = 0; i < tr.nev; i++) {
        const struct event *e = &tr.ev[i];
        int64_t at = (int64_t)((double)(e->t - tr.t_first) / scale);
        int64_t delay = (int64_t)((double)e->delay / scale);
        if (e->kind == K_RESCHEDULE)
            t->ops[t->nops++] = (struct pl_op){.t = at, .id = e->old,
                                               .kind = PL_CANCEL};
        if (e->kind == K_CANCEL) {
            t->ops[t->nops++] = (struct pl_op){.t = at, .id = e->inst,
                                               .kind = PL_CANCEL};
            continue;
        }
        t->ops[t->nops++] = (struct pl_op){.t = at, .delay = delay,
                                           .id = e->inst,
                                           .kind = PL_SCHEDULE,
                                           .arrival = 1};
        t->requests++;
        t->max_delay = delay > t->max_delay ? delay : t->max_delay;
    }
    /* a time rounded down after scaling never goes backwards: the
     * division is monotonic */
    t->max_ids = (uint32_t)tr.nin;
    t->seconds = t->nops ? (double)t->ops[t->nops - 1].t / 1e9 : 0;
    free_trace(&tr);
    return 0;
}
