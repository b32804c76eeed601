/*
 * bench/player_libs.c — the event-loop libraries (libs/tblib.h) as subjects
 * of timerbench-play (issue 41, bench/player.h): one subject per library
 * subject in tblib_all, side "library", run by the in-loop model.
 *
 * A library is single-threaded by design, so the player runs inside the
 * loop's thread, as a program on that loop would: the loop blocks in its
 * own poll (tblib run()); a library timer of the player's own, the pacer,
 * is armed for the next operation's intended time (pl_next_due) and wakes
 * it; the pacer's callback issues every operation due (pl_issue_due, which
 * calls this file's schedule and cancel and records each one's lag from
 * its intended time), at most LP_BATCH of them before the loop gets a turn
 * again (a player behind its schedule catches up in batches, each followed
 * by a non-blocking pass of the loop that fires what is due, as a server's
 * loop interleaves its ready events with its timers), and re-arms for the
 * next one.  Once every operation is issued the play ends, as the
 * threaded one does, when nothing is left to fire (the last fire or cancel
 * breaks the loop at once) or at pl_drain_until (the last deadline plus a
 * grace), where the pacer is armed; a loop that has timeouts still pending
 * there (it stalled past them, or has found them due and not yet run
 * them: libevent runs its due callbacks after the pacer's, sd-event one a
 * pass) gets a pass at a time, re-armed at once, until none is pending,
 * for at most LP_DRAIN_LIMIT_NS more; what is left then is not fired.
 *
 * Per request id: schedule is init() of the id's storage (ids are never
 * reused), update_now() and start(delay); cancel is stop(); a request's
 * timer is fini()'d as soon as it is cancelled or has fired, as a server
 * releases a completed request's timer (sd-event's source is freed there,
 * not kept in its heaps for the rest of the play).  The storage of every
 * id is one array of max_ids slots made (and touched, so the play pays no
 * page faults) at open, and freed only after the loop's close(): libuv
 * finishes a uv_close only in its loop (tblib.h, fini).  update_now()
 * before each start() makes the library's now no older than the player's
 * clock read before schedule() (the deadline lateness is measured from),
 * as a backend's schedule reads the clock itself; a library counting in
 * ms (libuv, GLib) may still fire up to its granularity_ns before that
 * deadline, its cached now truncated to its unit (the subject's
 * granularity_ns, which the player does not count as early).
 *
 * Loop options: libevent's common timeouts (libevent-common) fit the
 * purgatory, whose every timeout is the one delay LP_FIXED_DELAY_NS; a
 * schedule of another delay fails the play with that reason.  Its pacer,
 * of varying delays, is a plain event of the same base (tblib start_any).
 * sd-event gets an accuracy window of 1 µs (its "maximum accuracy"): one
 * window serves every timer of a loop, the pacer among them, and its
 * default of 250 ms would batch the pacer's wake-ups into 250 ms steps.
 *
 * CPU and pinning: pl_play() calls play() on its playing thread, so the
 * loop thread is the playing thread, and the process has no other busy
 * thread: the process's CPU time and the player's are the same time
 * (cpu_ns_per_request and player_cpu_ns_per_request measure one thread).
 * play() moves that thread to the subject's CPU (pl_play's pinning):
 * player and timers share the loop's core by design.  pending is counted
 * here (started - stopped - fired); zombies are 0, every library removing
 * a timer on stop.
 */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "player.h"
#include "tblib.h"
#include "timerbench/scheduler.h"

/* The purgatory's timeout (pl_purgatory: every request a 200 ms one): the
 * one delay a fixed_only subject's loop is opened with. */
#define LP_FIXED_DELAY_NS ((int64_t)200000000)

/* sd-event's accuracy window for every timer of the loop: 1 µs. */
#define LP_ACCURACY_NS ((int64_t)1000)

/* Operations the pacer issues before the loop gets a pass (a loop's own
 * batch: libuv polls at most 1024 events an iteration). */
#define LP_BATCH 1024

/* After pl_drain_until, how long the pacer gives timeouts still pending
 * (the loop stalled past their deadline plus the grace, or has found them
 * due but not yet run them): a pass of the loop at a time, re-armed at
 * once, until none is pending or this has passed. */
#define LP_DRAIN_LIMIT_NS ((int64_t)200000000)

/* The most library subjects tblib_all may hold. */
#define LP_MAX_SUBJECTS 16

/* A slot: the play's handle, then the timer's storage at LP_TIMER_OFF. */
#define LP_TIMER_OFF 16

enum lp_state { LP_NEW = 0, LP_PENDING = 1, LP_DONE = 2 };

struct lp {
    const struct tblib *lib;
    void *loop;
    pl_fire_fn fire;
    void *fire_arg;
    struct pl_player *p;     /* the play, while play() runs */
    unsigned char *slots;    /* max_ids + 1 slots, `stride` bytes apart */
    unsigned char *state;    /* per id: enum lp_state */
    size_t stride;
    uint32_t max_ids;
    unsigned char *pacer;    /* the pacer's slot, the last one */
    bool pacer_init;
    cpu_set_t cpus;          /* the opening thread's CPUs: the subject's */
    bool cpus_known;
    int64_t pending;         /* started - stopped - fired */
    int run_err;             /* the pacer's own failure, a negative errno */
};

/* The subjects, and the library subject each one plays. */
static struct pl_subject lp_subjects[LP_MAX_SUBJECTS];
static const struct tblib *lp_libs[LP_MAX_SUBJECTS];
static const struct pl_subject *lp_ptrs[LP_MAX_SUBJECTS];
static size_t lp_nsubjects;
static bool lp_ready;

static unsigned char *lp_slot(struct lp *h, uint32_t id)
{
    return h->slots + (size_t)id * h->stride;
}

static void *lp_timer(unsigned char *slot)
{
    return slot + LP_TIMER_OFF;
}

static struct lp *lp_of(const unsigned char *slot)
{
    struct lp *h;
    memcpy(&h, slot, sizeof h);
    return h;
}

/* Once every operation is issued and nothing is pending, the play is
 * over: the loop returns after this callback. */
static void lp_maybe_done(struct lp *h)
{
    if (h->p && h->pending == 0 && pl_issued_all(h->p))
        h->lib->break_loop(h->loop);
}

/* A request's timeout fired: reported first (its fire time), then the
 * timer released. */
static void lp_fired(void *arg)
{
    unsigned char *slot = arg;
    struct lp *h = lp_of(slot);
    uint32_t id = (uint32_t)((size_t)(slot - h->slots) / h->stride);
    h->pending--;
    h->state[id] = LP_DONE;
    h->fire(h->fire_arg, id);
    h->lib->fini(h->loop, lp_timer(slot));
    lp_maybe_done(h);
}

static void lp_free(struct lp *h)
{
    free(h->slots);
    free(h->state);
    free(h);
}

static void *lp_open(const struct pl_subject *s, uint32_t max_ids,
                     pl_fire_fn fire, void *fire_arg, char *err,
                     size_t errlen)
{
    size_t i = 0;
    while (i < lp_nsubjects && s != &lp_subjects[i])
        i++;
    if (i == lp_nsubjects) {
        snprintf(err, errlen, "%s: not a library subject", s->name);
        return NULL;
    }
    const struct tblib *lib = lp_libs[i];
    struct lp *h = calloc(1, sizeof *h);
    if (!h) {
        snprintf(err, errlen, "%s: out of memory", lib->name);
        return NULL;
    }
    h->lib = lib;
    h->fire = fire;
    h->fire_arg = fire_arg;
    h->max_ids = max_ids;
    h->stride = (LP_TIMER_OFF + lib->timer_size + 15) / 16 * 16;
    size_t n = (size_t)max_ids + 1; /* the last slot is the pacer's */
    if (n > SIZE_MAX / h->stride) {
        snprintf(err, errlen, "%s: %u timers do not fit in memory",
                 lib->name, (unsigned)max_ids);
        free(h);
        return NULL;
    }
    h->slots = malloc(n * h->stride);
    h->state = calloc(n, 1);
    if (!h->slots || !h->state) {
        snprintf(err, errlen, "%s: out of memory for %u timers of %zu "
                 "bytes", lib->name, (unsigned)max_ids, h->stride);
        lp_free(h);
        return NULL;
    }
    memset(h->slots, 0, n * h->stride); /* touched now, not while playing */
    h->pacer = lp_slot(h, max_ids);
    CPU_ZERO(&h->cpus);
    h->cpus_known = sched_getaffinity(0, sizeof h->cpus, &h->cpus) == 0;
    struct tblib_options o = {
        .fixed_delay_ns = lib->fixed_only ? LP_FIXED_DELAY_NS : 0,
        .accuracy_ns = LP_ACCURACY_NS,
    };
    char why[200] = "";
    h->loop = lib->open(&o, why, sizeof why);
    if (!h->loop) {
        snprintf(err, errlen, "%s: open: %s", lib->name,
                 why[0] ? why : "(no reason given)");
        lp_free(h);
        return NULL;
    }
    return h;
}

static int lp_schedule(void *hp, uint32_t id, int64_t delay_ns)
{
    struct lp *h = hp;
    if (id >= h->max_ids || h->state[id] != LP_NEW)
        return -EINVAL; /* out of range, or scheduled before */
    if (delay_ns < 0)
        return -EINVAL;
    if (h->lib->fixed_only && delay_ns != LP_FIXED_DELAY_NS) {
        if (h->p) {
            char why[160];
            snprintf(why, sizeof why, "%s takes only the purgatory's "
                     "%lld ms timeout (one delay per loop), not %lld ns",
                     h->lib->name, (long long)(LP_FIXED_DELAY_NS / 1000000),
                     (long long)delay_ns);
            pl_fail(h->p, why);
        }
        return -EINVAL;
    }
    unsigned char *slot = lp_slot(h, id);
    memcpy(slot, &h, sizeof h);
    int rc = h->lib->init(h->loop, lp_timer(slot), lp_fired, slot);
    if (rc != 0)
        return rc < 0 ? rc : -EIO;
    h->lib->update_now(h->loop);
    rc = h->lib->start(h->loop, lp_timer(slot), delay_ns);
    if (rc != 0) {
        h->lib->fini(h->loop, lp_timer(slot));
        h->state[id] = LP_DONE; /* init'd once: never again */
        return rc < 0 ? rc : -EIO;
    }
    h->state[id] = LP_PENDING;
    h->pending++;
    return 0;
}

static int lp_cancel(void *hp, uint32_t id)
{
    struct lp *h = hp;
    if (id >= h->max_ids || h->state[id] == LP_NEW)
        return -EINVAL; /* never scheduled */
    if (h->state[id] != LP_PENDING)
        return 0; /* fired (or cancelled) already */
    void *t = lp_timer(lp_slot(h, id));
    /* single-threaded: a timer whose callback has not run is pending */
    int was = h->lib->stop(h->loop, t);
    h->lib->fini(h->loop, t);
    h->state[id] = LP_DONE;
    h->pending--;
    lp_maybe_done(h);
    return was ? 1 : 0;
}

static void lp_stats(void *hp, int64_t *pending, int64_t *zombies)
{
    struct lp *h = hp;
    *pending = h->pending;
    *zombies = 0; /* every library removes a timer on stop */
}

/* Arms the pacer for `at` (absolute ns), at once if that has passed. */
static int lp_arm_pacer(struct lp *h, int64_t at)
{
    h->lib->update_now(h->loop);
    int64_t delay = at - tb_monotonic_ns();
    if (delay < 0)
        delay = 0;
    void *t = lp_timer(h->pacer);
    return h->lib->fixed_only ? h->lib->start_any(h->loop, t, delay)
                              : h->lib->start(h->loop, t, delay);
}

/* The pacer's callback: issues what is due, then re-arms for the next
 * operation or the drain's end, or ends the play. */
static void lp_pace(void *arg)
{
    struct lp *h = lp_of(arg);
    struct pl_player *p = h->p;
    if (!pl_issued_all(p))
        pl_issue_due(p, LP_BATCH);
    if (pl_error(p)[0] != '\0') {
        h->lib->break_loop(h->loop);
        return;
    }
    int64_t at = pl_issued_all(p) ? pl_drain_until(p) : pl_next_due(p);
    if (pl_issued_all(p)) {
        int64_t now = tb_monotonic_ns();
        if (h->pending == 0 || now >= at + LP_DRAIN_LIMIT_NS) {
            h->lib->break_loop(h->loop); /* drained, or given up */
            return;
        }
        if (now >= at)
            at = now; /* one more pass: what is due runs before the end */
    }
    int rc = lp_arm_pacer(h, at);
    if (rc != 0) {
        h->run_err = rc < 0 ? rc : -EIO;
        pl_fail(p, "the pacer's start() failed");
        h->lib->break_loop(h->loop);
    }
}

static int lp_play(void *hp, struct pl_player *p)
{
    struct lp *h = hp;
    /* pl_play moved this thread to the player's CPU after open(); the
     * in-loop player is the loop, so it goes back to the subject's. */
    if (h->cpus_known &&
        sched_setaffinity(0, sizeof h->cpus, &h->cpus) != 0)
        return pl_fail(p, "sched_setaffinity: cannot move the loop's "
                          "thread back to the subject's CPU");
    memcpy(h->pacer, &h, sizeof h);
    int rc = h->lib->init(h->loop, lp_timer(h->pacer), lp_pace, h->pacer);
    if (rc != 0) {
        pl_fail(p, "the pacer's init() failed");
        return rc < 0 ? rc : -EIO;
    }
    h->pacer_init = true;
    h->p = p;
    rc = lp_arm_pacer(h, pl_next_due(p));
    if (rc != 0) {
        h->p = NULL;
        pl_fail(p, "the pacer's start() failed");
        return rc < 0 ? rc : -EIO;
    }
    rc = h->lib->run(h->loop);
    h->p = NULL;
    if (rc != 0) {
        pl_fail(p, "the loop's run() failed");
        return rc < 0 ? rc : -EIO;
    }
    if (h->run_err != 0)
        return h->run_err;
    return pl_error(p)[0] != '\0' ? -EIO : 0;
}

static void lp_close(void *hp)
{
    struct lp *h = hp;
    /* fini() once per init(): the pending ones here, the others were in
     * lp_fired, lp_cancel or a failed schedule */
    for (uint32_t id = 0; id < h->max_ids; id++)
        if (h->state[id] == LP_PENDING) {
            void *t = lp_timer(lp_slot(h, id));
            h->lib->stop(h->loop, t);
            h->lib->fini(h->loop, t);
        }
    if (h->pacer_init) {
        h->lib->stop(h->loop, lp_timer(h->pacer));
        h->lib->fini(h->loop, lp_timer(h->pacer));
    }
    h->lib->close(h->loop); /* the storage stays valid until here */
    lp_free(h);
}

size_t pl_library_subjects(const struct pl_subject *const **out)
{
    if (!lp_ready) {
        lp_ready = true;
        for (size_t i = 0; i < tblib_count; i++) {
            const struct tblib *l = tblib_all[i];
            /* a fixed_only library's pacer needs start_any */
            if ((l->fixed_only && !l->start_any) ||
                lp_nsubjects == LP_MAX_SUBJECTS)
                continue;
            lp_libs[lp_nsubjects] = l;
            lp_subjects[lp_nsubjects] = (struct pl_subject){
                .name = l->name,
                .side = "library",
                .open = lp_open,
                .schedule = lp_schedule,
                .cancel = lp_cancel,
                .close = lp_close,
                .stats = lp_stats,
                .structure = l->structure,
                .play = lp_play,
                .granularity_ns = l->granularity_ns,
            };
            lp_ptrs[lp_nsubjects] = &lp_subjects[lp_nsubjects];
            lp_nsubjects++;
        }
    }
    *out = lp_ptrs;
    return lp_nsubjects;
}
