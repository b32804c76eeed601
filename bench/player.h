/*
 * bench/player.h — the open-loop real-time player of timerbench-play
 * (issue 41): plays a timer workload (Kafka's purgatory, generated here, or
 * any trace file) on the real clock against a subject, and the subject
 * table that backends, the floor and the event-loop libraries fill in.
 *
 * Open loop: every operation of a play has an intended time (CLOCK_MONOTONIC,
 * the play's start plus the operation's offset).  The player waits until it,
 * issues it and records its lag (actual issue time - intended time).  A
 * player behind its schedule issues what is due at once, catching up, and
 * the lag shows it: saturation cannot hide in a slower offered rate.
 *
 * Two run models:
 *   - threaded (backends, floor): pl_play() drives the subject from its own
 *     thread; the subject's own threads fire the timeouts.  Pinning: the
 *     process is moved to the subject CPU before open() (so the threads the
 *     subject starts inherit it), then the playing thread moves itself to
 *     the player CPU (pl_pinning).
 *   - in-loop (libraries, `play` set): a library is single-threaded by
 *     design, so its subject runs the player inside its loop's thread.
 *     pl_play() opens the subject and calls play(h, p) on the playing
 *     thread, which must run the loop in that same thread: the loop blocks
 *     in its own poll, a library timer of its own wakes it at
 *     pl_next_due(p), and that timer's callback calls pl_issue_due(p, ...)
 *     (which calls the subject's schedule/cancel with the due operations,
 *     catching up if late) and re-arms itself at the next pl_next_due(p);
 *     once pl_issued_all(p), it arms for pl_drain_until(p) and, when that
 *     fires, breaks the loop and play() returns 0.  A sketch:
 *
 *         static void tick(struct my_loop *l) {
 *             pl_issue_due(l->p, 0);
 *             int64_t at = pl_issued_all(l->p) ? pl_drain_until(l->p)
 *                                              : pl_next_due(l->p);
 *             if (pl_issued_all(l->p) && tb_monotonic_ns() >= at)
 *                 break_loop(l);
 *             else
 *                 arm_own_timer(l, at - tb_monotonic_ns()); // <= 0: at once
 *         }
 *
 * The fire callback given to open() must be called once for every request
 * whose timeout fires (not for a cancelled one), on whatever thread fires
 * it; it records the fire time (lateness = fire time - deadline, where the
 * deadline is the clock read just before schedule() plus the delay: an
 * upper bound by the schedule call's own duration, as bench/runtime.c
 * measures lateness).
 *
 * Every subject gets the same trace: request ids 0 .. max_ids-1, each
 * scheduled at most once, cancelled at most once after its schedule.
 */
#ifndef TIMERBENCH_BENCH_PLAYER_H
#define TIMERBENCH_BENCH_PLAYER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- The saturation rule ------------------------------------------------ */

/* A play is saturated iff the player fell behind: achieved_rate <
 * (1 - PL_SAT_RATE_SHORTFALL) * offered_rate, or lag_growth_ns >
 * PL_SAT_LAG_GROWTH_NS; or the subject's expiry did (DECISIONS.md D40):
 * fired < (1 - PL_SAT_EXPIRY_SHORTFALL) * timeouts_due when the drain ends
 * (PL_DRAIN_GRACE_NS after the last deadline), or lateness_growth_ns >
 * PL_SAT_LATENESS_GROWTH_NS (measured when each tenth of the fired
 * timeouts holds PL_SAT_MIN_WINDOW).  The same constants are SAT_* in
 * tbkit/purgatory.py and jvm/Purgatory.java: change all three together. */
#define PL_SAT_RATE_SHORTFALL 0.05
#define PL_SAT_LAG_GROWTH_NS ((int64_t)2000000)
#define PL_SAT_EXPIRY_SHORTFALL 0.05
#define PL_SAT_LATENESS_GROWTH_NS ((int64_t)50000000)
#define PL_SAT_MIN_WINDOW 20

/* ---- Traces ------------------------------------------------------------- */

enum pl_kind {
    PL_SCHEDULE = 0,  /* schedule(id, delay) */
    PL_CANCEL = 1,    /* cancel(id) */
};

/** One operation of a play. */
struct pl_op {
    int64_t t;        /* intended time, ns from the play's start (>= 0,
                         non-decreasing along the trace) */
    int64_t delay;    /* PL_SCHEDULE: the timeout, ns (>= 0) */
    uint32_t id;      /* request id, < max_ids */
    uint8_t kind;     /* enum pl_kind */
    uint8_t arrival;  /* 1: a request's arrival (counted in the rates) */
};

/** A whole play, built before it starts (no allocation while playing). */
struct pl_trace {
    struct pl_op *ops;
    size_t nops;
    uint32_t max_ids;   /* ids are 0 .. max_ids-1 */
    size_t requests;    /* operations with arrival = 1 */
    double seconds;     /* intended play length: last intended time of an
                           operation, s (the --seconds asked for, for a
                           generated workload) */
    int64_t max_delay;  /* longest delay scheduled, ns */
    char shape[8];      /* "few", "many", or "" for a trace file */
};

/** Generates the purgatory workload (tbkit/tracegen.py `purgatory`, the
 *  same definitions): Poisson arrivals at `rate` requests/s for `seconds`,
 *  each a schedule of a 200 ms timeout; its completion is log-normal
 *  (mu = ln p50, sigma = (ln p75 - ln p50) / 0.674490; shape "few": p50
 *  20 ms, p75 60 ms; "many": p50 200 ms, p75 400 ms) and a completion
 *  before the timeout cancels it at that time.  Times in whole ns.
 *  Seeded (`seed`): the same arguments give the same trace.  0, or -1 with
 *  a one-line reason in err (bad shape, rate <= 0 or not finite, seconds
 *  <= 0, more than 2^31 requests, out of memory). */
int pl_purgatory(struct pl_trace *t, const char *shape, double rate,
                 double seconds, uint64_t seed, char *err, size_t errlen);

/** Reads a timerbench trace file (the D4 format, parsed by
 *  timerbench-replay's own reader, bench/replay.c) into *t, its times
 *  (and delays) divided by `scale` (> 0: 2 plays it twice as fast),
 *  measured from its first event.  Schedules of a one-shot are arrivals;
 *  a reschedule of a live timer is a cancel and a schedule of a new id at
 *  the same time (an arrival); a cancel of a timer that is not live is
 *  left out, as the replay does.  A trace with periodic timers is refused.
 *  A trace the reader refuses is reported as "FILE:LINE: why" on stderr
 *  and the process exits 2 (the replay's own refusal); otherwise 0, or -1
 *  with a one-line reason in err (periodic timers, bad scale). */
int pl_trace_read(struct pl_trace *t, const char *path, double scale,
                  char *err, size_t errlen);

/** Frees what pl_purgatory or pl_trace_read allocated; NULL-safe. */
void pl_trace_free(struct pl_trace *t);

/* ---- Subjects ----------------------------------------------------------- */

/** A timeout fired: `arg` as given to open(), `id` the request's. */
typedef void (*pl_fire_fn)(void *arg, uint32_t id);

struct pl_player;

/** A subject: what is measured.  Fill it with designated initializers
 *  (fields may be added at the end). */
struct pl_subject {
    const char *name;       /* result name: backend name, "floor", library
                               subject name */
    const char *side;       /* "backend", "library" ("floor" for the floor) */
    /* Opens for a play of up to `max_ids` live requests (ids 0 ..
     * max_ids-1); fire(fire_arg, id) is called when a timeout fires (on the
     * subject's thread).  NULL with a one-line reason in err on failure. */
    void *(*open)(const struct pl_subject *s, uint32_t max_ids,
                  pl_fire_fn fire, void *fire_arg, char *err, size_t errlen);
    /* Arms request id's timeout delay_ns from now.  0 or -errno. */
    int (*schedule)(void *h, uint32_t id, int64_t delay_ns);
    /* Cancels request id's timeout: 1 cancelled, 0 already fired. */
    int (*cancel)(void *h, uint32_t id);
    /* Stops the subject's threads (no fire after it returns) and frees. */
    void (*close)(void *h);
    /* Timeouts held (-1 if unknown) and, of them, cancelled ones still held
     * (a lazy cancel's zombies; -1 if unknown).  Called by the player while
     * it plays (from the playing thread). */
    void (*stats)(void *h, int64_t *pending, int64_t *zombies);
    /* What holds its timers, one line (the row's "structure"). */
    const char *structure;
    /* NULL: the threaded model.  Else the in-loop model: runs the play p
     * inside the subject's loop on the calling thread (see the top of this
     * file) and returns once pl_drain_until(p) has passed: 0, or -errno
     * (p's error, if the play failed, via pl_fail). */
    int (*play)(void *h, struct pl_player *p);
    /* How much before its deadline a timeout may fire by the subject's
     * documented unit, not counted as early (a library counting whole ms
     * from a now truncated to ms: libuv, GLib; libs/tblib.h
     * granularity_ns); 0: never before it. */
    int64_t granularity_ns;
};

/** Every subject timerbench-play knows: the registered backends (side
 *  "backend", in registry order), "floor", then the library subjects. */
size_t pl_subject_count(void);

/** The i-th subject (0 <= i < pl_subject_count()), else NULL. */
const struct pl_subject *pl_subject_at(size_t i);

/** The subject called `name`, or NULL. */
const struct pl_subject *pl_subject_find(const char *name);

/** The library subjects (bench/player_libs.c): sets *out to an array of
 *  them and returns how many.  Defined weakly as none in player.c, so the
 *  player builds before (or without) the libraries' file; player_libs.c
 *  defines it for real. */
size_t pl_library_subjects(const struct pl_subject *const **out);

/* ---- The in-loop player's pieces ----------------------------------------- */

/** Absolute CLOCK_MONOTONIC time (ns) the next operation is due at, or
 *  INT64_MAX once every operation is issued. */
int64_t pl_next_due(const struct pl_player *p);

/** Issues every operation due by now (the clock is read first, and again
 *  after each operation while more may have become due), at most `max`
 *  of them (0: no limit), through the subject's schedule/cancel, each
 *  with its lag recorded; samples the subject's stats every so often.
 *  Returns how many were issued.  An error of schedule() ends the play:
 *  pl_issued_all() turns true and pl_error() says why. */
size_t pl_issue_due(struct pl_player *p, size_t max);

/** True once every operation is issued (or the play failed). */
bool pl_issued_all(const struct pl_player *p);

/** Absolute time (ns) the play ends at, once every operation is issued:
 *  the last schedule's deadline plus a grace (PL_DRAIN_GRACE_NS), so that
 *  the timeouts still pending have fired.  INT64_MAX before. */
int64_t pl_drain_until(const struct pl_player *p);

/** Fails the play with a reason (an in-loop subject's own error); the
 *  first reason is kept.  Returns -1. */
int pl_fail(struct pl_player *p, const char *why);

/** The play's error, "" if none. */
const char *pl_error(const struct pl_player *p);

/* A timeout not fired this long after its deadline (the purgatory's own
 * timeout: 200 ms) is counted as not served; the drain ends sooner when
 * every request is accounted for.  jvm/Purgatory.java DRAIN_NS. */
#define PL_DRAIN_GRACE_NS ((int64_t)200000000)   /* 200 ms */

/* ---- Playing ------------------------------------------------------------ */

/** Where the player and the subject's threads run. */
struct pl_pinning {
    int player_cpu;    /* -1: not pinned */
    int subject_cpu;   /* -1: not pinned */
    char note[256];    /* why, one line */
};

/** Chooses the pinning: the player on CPU 0 and the subject on CPU 1 when
 *  the process may run on both; no pinning (and the note says so) on a
 *  machine, or in an affinity mask, of fewer than two CPUs. */
void pl_pinning_choose(struct pl_pinning *pin);

/** One play's row (the schema of issue 41, bench/README.md "The purgatory
 *  experiment"); times in ns.  Fields that may be null are -1 when so
 *  (lateness with no fire, pending/zombies the subject cannot say). */
struct pl_result {
    char subject[64];
    char side[16];
    char structure[200];
    char shape[8];
    int repetition;
    double target_rate;
    double offered_rate;
    double achieved_rate;
    size_t requests;
    double seconds;
    int64_t lag_p50_ns, lag_p99_ns, lag_max_ns, lag_growth_ns;
    bool saturated;
    char why[160];
    double cpu_ns_per_request;
    double player_cpu_ns_per_request;
    double subject_cpu_ns_per_request; /* the subject's threads' CPU plus
                                          the player's time in its calls */
    uint64_t fired;
    double fired_share;
    uint64_t timeouts_due;     /* schedules the trace never cancels (the
                                  floor: 0, it runs nothing) */
    int64_t lateness_growth_ns; /* INT64_MIN: too few fired to tell */
    int64_t lateness_p50_ns, lateness_p99_ns;  /* -1: none fired */
    int64_t peak_pending, peak_zombies;        /* -1: unknown */
    /* not in the row: what the play checked */
    uint64_t cancels_late;   /* cancels that found the timeout fired */
    uint64_t early;          /* fires before their deadline (a bug) */
    uint64_t unexpected;     /* fires of a cancelled or unknown id */
    /* in (kept by pl_play): NULL, or room for the trace's nops lags, filled
     * in operation order (what the tests check each operation with) */
    int64_t *lag_out;
};

/** Plays t on subject s (threaded or in-loop model, see the top), pinned
 *  as `pin` says (NULL: not pinned), and fills *r (target_rate and
 *  repetition are the caller's to set) with the saturation rule applied.
 *  0, or -1 with a one-line reason in err (open failed, a schedule
 *  failed, a pinning call failed). */
int pl_play(const struct pl_trace *t, const struct pl_subject *s,
            const struct pl_pinning *pin, struct pl_result *r, char *err,
            size_t errlen);

/** Applies the saturation rule to r's rates, lag growth, fired against
 *  due timeouts and lateness growth: sets r->saturated and r->why ("" or
 *  e.g. "achieved 12.3% below offered", "lag grew 41.2 ms", "60.0% of the
 *  due timeouts unfired", "lateness grew 81.0 ms", joined by "; "). */
void pl_saturation(struct pl_result *r);

/** Writes r as one JSON object (the row's keys exactly, no newline). */
void pl_row_json(FILE *o, const struct pl_result *r);

#ifdef __cplusplus
}
#endif

#endif
