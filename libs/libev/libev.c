/*
 * libs/libev/libev.c — libev (Debian libev-dev) as a reference subject:
 * ev_timer watchers in a loop of their own (ev_loop_new), through ev.h
 * only.  libev keeps its timers in a 4-ary heap of (deadline, watcher)
 * pairs, the deadline cached beside the pointer so a sift compares
 * without touching a watcher (ev.c, EV_USE_4HEAP and EV_HEAP_CACHE_AT,
 * both on by default).
 *
 * Restarting in place is ev_timer_again with `repeat` set to the new
 * delay: libev's own idiom for a timeout pushed back on every activity
 * (its manual, "Be smart about timeouts", strategy 2).  A timer so armed
 * repeats, so the callback stops it before calling the caller's, which
 * keeps one-shot semantics for every subject.
 */
#include <ev.h>
#include <errno.h>
#include <stdio.h>

#include "tblib.h"

struct libev_timer {
    ev_timer w;
    tblib_fire_fn fn;
    void *arg;
};

static void libev_version(char *buf, size_t size)
{
    snprintf(buf, size, "%d.%d", ev_version_major(), ev_version_minor());
}

static void *libev_open(const struct tblib_options *o, char *err,
                        size_t errlen)
{
    (void)o;
    struct ev_loop *loop = ev_loop_new(EVFLAG_AUTO);
    if (!loop)
        snprintf(err, errlen, "ev_loop_new failed");
    return loop;
}

static void libev_close(void *loop)
{
    ev_loop_destroy(loop);
}

static void libev_fired(struct ev_loop *loop, ev_timer *w, int revents)
{
    (void)revents;
    struct libev_timer *t = (struct libev_timer *)w;
    ev_timer_stop(loop, w); /* an ev_timer_again'd timer repeats */
    t->fn(t->arg);
}

static int libev_init(void *loop, void *tp, tblib_fire_fn fn, void *arg)
{
    (void)loop;
    struct libev_timer *t = tp;
    ev_timer_init(&t->w, libev_fired, 0., 0.);
    t->fn = fn;
    t->arg = arg;
    return 0;
}

static void libev_fini(void *loop, void *tp)
{
    struct libev_timer *t = tp;
    ev_timer_stop(loop, &t->w);
}

static int libev_start(void *loop, void *tp, int64_t delay_ns)
{
    struct libev_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL; /* libev would take it as due now */
    ev_timer_set(&t->w, (ev_tstamp)delay_ns * 1e-9, 0.);
    ev_timer_start(loop, &t->w);
    return 0;
}

static int libev_stop(void *loop, void *tp)
{
    struct libev_timer *t = tp;
    /* An expired timer is no longer active but pending (in the loop's
     * queue of callbacks to run) until its callback runs; ev_timer_stop
     * clears that too, so the callback never runs: it was pending. */
    int was = ev_is_active(&t->w) || ev_is_pending(&t->w);
    ev_timer_stop(loop, &t->w);
    return was;
}

static int libev_again(void *loop, void *tp, int64_t delay_ns)
{
    struct libev_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL; /* ev_timer_again would stop it (repeat <= 0) */
    t->w.repeat = (ev_tstamp)delay_ns * 1e-9;
    ev_timer_again(loop, &t->w);
    return 0;
}

static void libev_update_now(void *loop)
{
    ev_now_update(loop);
}

static int libev_run_nowait(void *loop)
{
    ev_run(loop, EVRUN_NOWAIT);
    return 0;
}

static int libev_run(void *loop)
{
    ev_run(loop, 0);
    return 0;
}

static void libev_break(void *loop)
{
    ev_break(loop, EVBREAK_ONE);
}

/** libev's ev_timer. */
const struct tblib tblib_libev = {
    .name = "libev",
    .library = "libev-dev",
    .structure = "4-ary heap of (deadline, watcher) pairs, deadline cached",
    .family = "4-ary heap",
    .timer_size = sizeof(struct libev_timer),
    .granularity_ns = 1,
    .version = libev_version,
    .open = libev_open,
    .close = libev_close,
    .init = libev_init,
    .fini = libev_fini,
    .start = libev_start,
    .stop = libev_stop,
    .again = libev_again,
    .update_now = libev_update_now,
    .run_nowait = libev_run_nowait,
    .run = libev_run,
    .break_loop = libev_break,
};
