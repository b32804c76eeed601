/*
 * libs/glib/glib.c — GLib's main loop (Debian libglib2.0-dev) as a
 * reference subject: timeout sources attached to a GMainContext of its
 * own (g_main_context_new, never the default one), through glib.h only.
 *
 * GLib keeps no timer structure at all: a context holds its sources in
 * one doubly linked list per priority (the lists themselves in a GList
 * ordered by priority), each source appended at its list's tail when
 * attached, and a hash table from source id to source.  Every iteration's
 * prepare and check walk those lists and compare each source's ready time
 * with the context's time (gmain.c of GLib 2.74: g_main_context_prepare,
 * g_main_context_check; a timeout source has no prepare or check of its
 * own and is driven by its ready time alone).  Attaching and destroying a
 * source are O(1); an iteration is O(sources).
 *
 * start is g_timeout_source_new, the call a GLib program makes for a
 * timeout on a context other than the default one (g_timeout_add's own
 * body): whole milliseconds, the delay rounded up.  Restarting in place is
 * g_source_set_ready_time on the pending source, in microseconds from
 * g_get_monotonic_time (the clock g_timeout_source_new reads), since
 * g_source_get_time would return the context's time of its last check,
 * which nothing public refreshes between iterations.
 */
#include <errno.h>
#include <glib.h>
#include <stdio.h>
#include <stdlib.h>

#include "tblib.h"

struct glib_loop {
    GMainContext *ctx;
    GMainLoop *ml;
};

/* src is the adapter's own reference to a pending source, NULL when the
 * timer is stopped or has fired; the context holds another while the
 * source is attached. */
struct glib_timer {
    GSource *src;
    tblib_fire_fn fn;
    void *arg;
};

static void glib_version(char *buf, size_t size)
{
    snprintf(buf, size, "%u.%u.%u", glib_major_version, glib_minor_version,
             glib_micro_version);
}

static void *glib_open(const struct tblib_options *o, char *err,
                       size_t errlen)
{
    (void)o;
    struct glib_loop *l = malloc(sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    l->ctx = g_main_context_new();
    l->ml = g_main_loop_new(l->ctx, FALSE);
    return l;
}

static void glib_close(void *loop)
{
    struct glib_loop *l = loop;
    g_main_loop_unref(l->ml);
    g_main_context_unref(l->ctx);
    free(l);
}

/* The source's callback: the timer is no longer pending once it runs, so
 * the adapter's reference goes before the caller's function (which may
 * start the timer again); the context still holds the source through the
 * dispatch and destroys it on G_SOURCE_REMOVE. */
static gboolean glib_fired(gpointer data)
{
    struct glib_timer *t = data;
    GSource *src = t->src;
    t->src = NULL;
    g_source_unref(src);
    t->fn(t->arg);
    return G_SOURCE_REMOVE;
}

static int glib_init(void *loop, void *tp, tblib_fire_fn fn, void *arg)
{
    (void)loop;
    struct glib_timer *t = tp;
    t->src = NULL;
    t->fn = fn;
    t->arg = arg;
    return 0;
}

static int glib_stop(void *loop, void *tp)
{
    (void)loop;
    struct glib_timer *t = tp;
    if (!t->src)
        return 0;
    g_source_destroy(t->src);
    g_source_unref(t->src);
    t->src = NULL;
    return 1;
}

static void glib_fini(void *loop, void *tp)
{
    glib_stop(loop, tp);
}

static int glib_start(void *loop, void *tp, int64_t delay_ns)
{
    struct glib_loop *l = loop;
    struct glib_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL; /* tblib.h: a negative delay is refused */
    int64_t ms = (delay_ns + 999999) / 1000000;
    if (ms > (int64_t)G_MAXUINT)
        return -ERANGE;
    if (t->src)
        glib_stop(loop, tp);
    t->src = g_timeout_source_new((guint)ms);
    g_source_set_callback(t->src, glib_fired, t, NULL);
    g_source_attach(t->src, l->ctx);
    return 0;
}

static int glib_again(void *loop, void *tp, int64_t delay_ns)
{
    struct glib_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL; /* tblib.h: a negative delay is refused */
    if (!t->src)
        return glib_start(loop, tp, delay_ns);
    g_source_set_ready_time(t->src,
                            g_get_monotonic_time() + (delay_ns + 999) / 1000);
    return 0;
}

/* GLib caches no time outside an iteration that a timer is started from:
 * g_timeout_source_new and again() read the clock themselves. */
static void glib_update_now(void *loop)
{
    (void)loop;
}

static int glib_run_nowait(void *loop)
{
    struct glib_loop *l = loop;
    g_main_context_iteration(l->ctx, FALSE);
    return 0;
}

static int glib_run(void *loop)
{
    struct glib_loop *l = loop;
    g_main_loop_run(l->ml);
    return 0;
}

static void glib_break(void *loop)
{
    struct glib_loop *l = loop;
    g_main_loop_quit(l->ml);
}

/** GLib's timeout sources on a GMainContext of the loop's own. */
const struct tblib tblib_glib = {
    .name = "glib",
    .library = "libglib2.0-dev",
    .structure = "sources in per-priority linked lists, every one visited "
                 "by each iteration's prepare and check",
    .family = "list",
    .timer_size = sizeof(struct glib_timer),
    .granularity_ns = 1000000,
    .version = glib_version,
    .open = glib_open,
    .close = glib_close,
    .init = glib_init,
    .fini = glib_fini,
    .start = glib_start,
    .stop = glib_stop,
    .again = glib_again,
    .update_now = glib_update_now,
    .run_nowait = glib_run_nowait,
    .run = glib_run,
    .break_loop = glib_break,
};
