/*
 * libs/tblib.h — the event-loop libraries C programs link, as reference
 * subjects on the real clock (issue 40): one adapter per library, each in
 * its own folder (libs/<name>/), driving the library only through its
 * installed public API and headers.
 *
 * They are not backends of the scheduler interface: a library keeps its
 * own clock (the loop's cached time, read from CLOCK_MONOTONIC) and runs
 * its callbacks only inside its loop, so none can run on the virtual
 * clock.  The harnesses (bench/libs.c for the operations, bench/runtime.c
 * for lateness and idle wake-ups) and the cross-checks (tests/libs_check.c)
 * see only this table.
 *
 * A timer lives in storage the caller owns, `timer_size` bytes (the handle
 * a program would embed in its connection struct: a uv_timer_t, a struct
 * event, an ev_timer, or a pointer to the library's own source object);
 * init() prepares it once, start()/stop() arm and disarm it any number of
 * times, fini() releases what init() or start() allocated.  Delays are in
 * nanoseconds from the loop's idea of now; a library that counts in
 * milliseconds rounds up (`granularity_ns` says by how much it may).
 *
 * Every call is made from the one thread that opened the loop.
 */
#ifndef TIMERBENCH_LIBS_TBLIB_H
#define TIMERBENCH_LIBS_TBLIB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/** A timer's callback: `arg` as given to init(). */
typedef void (*tblib_fire_fn)(void *arg);

/** What a loop is opened with. */
struct tblib_options {
    /** The one delay every timer of this loop will have, or 0 if delays
     *  vary.  Only subjects with `fixed_only` need it (libevent's common
     *  timeouts: one queue per duration, made at open). */
    int64_t fixed_delay_ns;
    /** How late a timer may fire, when the workload gives a lateness
     *  budget (sd-event's accuracy window); 0: the library's default. */
    int64_t accuracy_ns;
};

/** One library (or one configuration of it) as a subject. */
struct tblib {
    const char *name;        /**< result name: "libuv", "libevent-common" */
    const char *library;     /**< the Debian package it comes from */
    const char *structure;   /**< what holds its timers, one line */
    const char *family;      /**< "binary heap", "4-ary heap", "list",
                                  "fifo per duration" (report's families) */
    size_t timer_size;       /**< bytes of one timer in the caller's storage */
    int64_t granularity_ns;  /**< the unit it counts delays in (1 for ns) */
    int fixed_only;          /**< only for workloads of one fixed delay */
    /** Writes the library's version, as it reports it at run time. */
    void (*version)(char *buf, size_t size);
    /** Opens a loop.  NULL with a one-line reason in err on failure. */
    void *(*open)(const struct tblib_options *o, char *err, size_t errlen);
    /** Closes a loop whose timers have all been fini()'d (their storage
     *  may be freed once this returns). */
    void (*close)(void *loop);
    /** Prepares the timer at t (timer_size bytes) to call fn(arg).
     *  0 or a negative errno. */
    int (*init)(void *loop, void *t, tblib_fire_fn fn, void *arg);
    /** Releases the stopped or fired timer at t.  Its storage must stay
     *  valid, and not be init()'d again, until close(): libuv finishes a
     *  handle's uv_close only inside its loop, which close() runs once. */
    void (*fini)(void *loop, void *t);
    /** Arms the stopped (or fired) timer t delay_ns from the loop's now.
     *  0 or a negative errno; a negative delay_ns is -EINVAL for every
     *  subject, and leaves t as it was. */
    int (*start)(void *loop, void *t, int64_t delay_ns);
    /** Disarms t: 1 if it was pending, 0 if it was not. */
    int (*stop)(void *loop, void *t);
    /** Moves a pending (or stopped) timer to delay_ns from the loop's now
     *  in the library's own idiom for restarting in place (uv_timer_again,
     *  ev_timer_again, evtimer_add on a pending event,
     *  g_source_set_ready_time, sd_event_source_set_time).  0 or a
     *  negative errno; a negative delay_ns is -EINVAL, as for start(). */
    int (*again)(void *loop, void *t, int64_t delay_ns);
    /** Refreshes the loop's cached time from the clock (uv_update_time,
     *  ev_now_update, ...); a no-op where it reads the clock per call. */
    void (*update_now)(void *loop);
    /** One pass of the loop that does not block: runs the callbacks of
     *  what is due.  0 or a negative errno. */
    int (*run_nowait)(void *loop);
    /** Runs the loop, blocking in its poll, until break_loop() is called
     *  from one of its callbacks.  0 or a negative errno. */
    int (*run)(void *loop);
    /** From a callback: makes run() return after this callback. */
    void (*break_loop)(void *loop);
    /** A fixed_only subject's timer of any other delay, NULL where every
     *  delay is start()'s: arms the stopped (or fired) timer t delay_ns
     *  from the loop's now as a timer of the library's general kind in the
     *  same loop (libevent-common: a plain event in the base's min-heap),
     *  for a caller's own timer beside the fixed-delay ones (the purgatory
     *  player's pacer, bench/player_libs.c).  0 or a negative errno; a
     *  negative delay_ns is -EINVAL, as for start(). */
    int (*start_any)(void *loop, void *t, int64_t delay_ns);
};

/** The subjects of every library found at build time, in report order. */
extern const struct tblib *const tblib_all[];
/** How many there are. */
extern const size_t tblib_count;

/** The libraries looked for at build time and not found, each
 *  "name: why", NULL-terminated (the report says which are left out). */
extern const char *const tblib_missing[];

/** The subject called `name`, or NULL. */
const struct tblib *tblib_find(const char *name);

#ifdef __cplusplus
}
#endif

#endif
