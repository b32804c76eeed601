/*
 * libs/libuv/libuv.c — libuv (Debian libuv1-dev) as a reference subject:
 * uv_timer_t handles in a uv_loop_t of its own, through uv.h only.  libuv
 * keeps its timers in a binary min-heap of pointer-linked nodes
 * (heap-inl.h), one node inside each uv_timer_t, ordered by (deadline,
 * start_id); inserting and removing walk the path from the root to the
 * last node by the bits of the heap's size, so both chase log2(n)
 * pointers through handles scattered in the caller's memory.
 *
 * libuv counts in milliseconds from its cached loop time (uv_now, the
 * monotonic clock truncated to ms): a delay is rounded up to whole ms.
 *
 * Restarting in place is uv_timer_set_repeat + uv_timer_again, libuv's
 * idiom for an inactivity timeout (uv_timer_again stops and restarts a
 * timer whose repeat is set).  A timer so armed repeats, so the callback
 * stops it before calling the caller's, which keeps one-shot semantics
 * for every subject.
 *
 * A handle is freed only by uv_close and its close callback, which libuv
 * runs inside uv_run.  fini() only uv_close()s (no loop run per handle:
 * that would also run other timers' due callbacks from inside fini, and
 * uv_run may not be called from a callback); close() runs the loop once,
 * which finishes every pending close, so the storage of a fini'd timer
 * must stay valid until close() (tblib.h, fini).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <uv.h>

#include "tblib.h"

struct libuv_timer {
    uv_timer_t h;
    tblib_fire_fn fn;
    void *arg;
};

static void libuv_version(char *buf, size_t size)
{
    snprintf(buf, size, "%s", uv_version_string());
}

static void *libuv_open(const struct tblib_options *o, char *err,
                        size_t errlen)
{
    (void)o;
    uv_loop_t *loop = malloc(sizeof *loop);
    if (!loop) {
        snprintf(err, errlen, "out of memory for a uv_loop_t");
        return NULL;
    }
    int r = uv_loop_init(loop);
    if (r != 0) {
        snprintf(err, errlen, "uv_loop_init: %s", uv_strerror(r));
        free(loop);
        return NULL;
    }
    return loop;
}

/* uv_walk callback: closes what a caller left open, so the loop can close. */
static void libuv_close_left(uv_handle_t *h, void *arg)
{
    (void)arg;
    if (!uv_is_closing(h))
        uv_close(h, NULL);
}

static void libuv_close(void *lp)
{
    uv_loop_t *loop = lp;
    uv_walk(loop, libuv_close_left, NULL);
    /* One pass runs every pending close callback (uv__run_closing_handles
     * takes the whole list); nothing is active any more, so this does not
     * block and fires no timer. */
    int r;
    while ((r = uv_loop_close(loop)) == UV_EBUSY)
        uv_run(loop, UV_RUN_NOWAIT);
    if (r != 0)
        fprintf(stderr, "libuv: uv_loop_close: %s\n", uv_strerror(r));
    free(loop);
}

static void libuv_fired(uv_timer_t *h)
{
    struct libuv_timer *t = (struct libuv_timer *)h;
    uv_timer_stop(h); /* a uv_timer_again'd timer repeats */
    t->fn(t->arg);
}

static int libuv_init(void *lp, void *tp, tblib_fire_fn fn, void *arg)
{
    struct libuv_timer *t = tp;
    t->fn = fn;
    t->arg = arg;
    return uv_timer_init(lp, &t->h);
}

static void libuv_fini(void *lp, void *tp)
{
    (void)lp;
    struct libuv_timer *t = tp;
    uv_close((uv_handle_t *)&t->h, NULL); /* stops it; finished in close() */
}

/* ns to libuv's ms, rounded up. */
static uint64_t libuv_ms(int64_t delay_ns)
{
    return ((uint64_t)delay_ns + 999999u) / 1000000u;
}

static int libuv_start(void *lp, void *tp, int64_t delay_ns)
{
    (void)lp;
    struct libuv_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL;
    return uv_timer_start(&t->h, libuv_fired, libuv_ms(delay_ns), 0);
}

static int libuv_stop(void *lp, void *tp)
{
    (void)lp;
    struct libuv_timer *t = tp;
    int was = uv_is_active((uv_handle_t *)&t->h) != 0;
    uv_timer_stop(&t->h);
    return was;
}

static int libuv_again(void *lp, void *tp, int64_t delay_ns)
{
    (void)lp;
    struct libuv_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL;
    uint64_t ms = libuv_ms(delay_ns);
    /* uv_timer_again does nothing when repeat is 0, and fails (UV_EINVAL)
     * on a timer never started: both are a plain start instead. */
    if (ms == 0)
        return uv_timer_start(&t->h, libuv_fired, 0, 0);
    uv_timer_set_repeat(&t->h, ms);
    int r = uv_timer_again(&t->h);
    if (r == UV_EINVAL)
        r = uv_timer_start(&t->h, libuv_fired, ms, ms);
    return r;
}

static void libuv_update_now(void *lp)
{
    uv_update_time(lp);
}

static int libuv_run_nowait(void *lp)
{
    uv_run(lp, UV_RUN_NOWAIT); /* nonzero only says more is pending */
    return 0;
}

static int libuv_run(void *lp)
{
    uv_run(lp, UV_RUN_DEFAULT);
    return 0;
}

static void libuv_break(void *lp)
{
    uv_stop(lp);
}

/** libuv's uv_timer_t. */
const struct tblib tblib_libuv = {
    .name = "libuv",
    .library = "libuv1-dev",
    .structure = "binary min-heap of pointer-linked nodes (heap-inl.h), "
                 "one node in each uv_timer_t",
    .family = "binary heap",
    .timer_size = sizeof(struct libuv_timer),
    .granularity_ns = 1000000,
    .version = libuv_version,
    .open = libuv_open,
    .close = libuv_close,
    .init = libuv_init,
    .fini = libuv_fini,
    .start = libuv_start,
    .stop = libuv_stop,
    .again = libuv_again,
    .update_now = libuv_update_now,
    .run_nowait = libuv_run_nowait,
    .run = libuv_run,
    .break_loop = libuv_break,
};
