/*
 * libs/sdevent/sdevent.c — systemd's sd-event (Debian libsystemd-dev) as
 * a reference subject: CLOCK_MONOTONIC time sources in a loop of their
 * own (sd_event_new, never sd_event_default), through sd-event.h only.
 *
 * sd-event keeps each clock's time sources in two binary heaps (prioq.c,
 * an array of (source, index pointer) items with the comparison reading
 * the source): "earliest" by the source's time and "latest" by its time
 * plus its accuracy window, every source in both from sd_event_add_time
 * until it is freed, enabled or not; a disabled source sorts after every
 * enabled one, so stopping a timer is a sift to the bottom, not a
 * removal.  Before it sleeps, the loop arms the clock's timerfd at a point
 * between the earliest heap's top and the latest heap's top, aligned to a
 * per-boot perturbation (sd-event.c of systemd 252, sleep_between), so a
 * timer fires up to its accuracy late: 250 ms unless set
 * (DEFAULT_ACCURACY_USEC).
 *
 * Where this adapter departs from plain use (libs/sdevent/README.md):
 * start and again take the later of sd_event_now and the last
 * update_now's clock reading as now, since sd_event_now returns the last
 * iteration's time and nothing public refreshes it; run() iterates until
 * break_loop() rather than calling sd_event_loop and sd_event_exit, which
 * end the loop for good; run_nowait() repeats sd_event_run(e, 0), which
 * dispatches one source per call, while it dispatches.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <systemd/sd-event.h>
#include <time.h>

#include "tblib.h"

#ifndef TBLIB_SDEVENT_VERSION
#error "libs/sdevent/meson.build passes libsystemd's version"
#endif

struct sdevent_loop {
    sd_event *e;
    uint64_t accuracy_us; /* 0: sd-event's default */
    uint64_t now_us;      /* the last update_now's CLOCK_MONOTONIC */
    size_t timers;        /* init'd and not yet fini'd */
    bool stop;            /* break_loop was called */
};

struct sdevent_timer {
    sd_event_source *s;
    tblib_fire_fn fn;
    void *arg;
};

static void sdevent_version(char *buf, size_t size)
{
    /* sd-event has no run-time version call: this is pkg-config's
     * version of libsystemd at build time. */
    snprintf(buf, size, "%s", TBLIB_SDEVENT_VERSION);
}

static void *sdevent_open(const struct tblib_options *o, char *err,
                          size_t errlen)
{
    struct sdevent_loop *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory");
        return NULL;
    }
    int r = sd_event_new(&l->e);
    if (r < 0) {
        snprintf(err, errlen, "sd_event_new: errno %d", -r);
        free(l);
        return NULL;
    }
    if (o && o->accuracy_ns > 0)
        l->accuracy_us = (uint64_t)(o->accuracy_ns + 999) / 1000;
    return l;
}

static void sdevent_close(void *loop)
{
    struct sdevent_loop *l = loop;
    sd_event_unref(l->e);
    free(l);
}

/* ONESHOT: sd-event has disabled the source before calling this. */
static int sdevent_fired(sd_event_source *s, uint64_t usec, void *userdata)
{
    (void)s;
    (void)usec;
    struct sdevent_timer *t = userdata;
    t->fn(t->arg);
    return 0;
}

static int sdevent_init(void *loop, void *tp, tblib_fire_fn fn, void *arg)
{
    struct sdevent_loop *l = loop;
    struct sdevent_timer *t = tp;
    t->fn = fn;
    t->arg = arg;
    int r = sd_event_add_time(l->e, &t->s, CLOCK_MONOTONIC, UINT64_MAX,
                              l->accuracy_us, sdevent_fired, t);
    if (r < 0)
        return r;
    r = sd_event_source_set_enabled(t->s, SD_EVENT_OFF);
    if (r < 0) {
        t->s = sd_event_source_unref(t->s);
        return r;
    }
    l->timers++;
    return 0;
}

static void sdevent_fini(void *loop, void *tp)
{
    struct sdevent_loop *l = loop;
    struct sdevent_timer *t = tp;
    t->s = sd_event_source_disable_unref(t->s);
    l->timers--;
}

/* The loop's now: sd_event_now gives the time of the last iteration (the
 * current time before the first), update_now a later reading. */
static uint64_t sdevent_now(struct sdevent_loop *l)
{
    uint64_t now = 0;
    if (sd_event_now(l->e, CLOCK_MONOTONIC, &now) < 0)
        now = 0;
    return now > l->now_us ? now : l->now_us;
}

static int sdevent_arm(void *loop, void *tp, int64_t delay_ns)
{
    struct sdevent_loop *l = loop;
    struct sdevent_timer *t = tp;
    if (delay_ns < 0)
        delay_ns = 0;
    uint64_t at = sdevent_now(l) + ((uint64_t)delay_ns + 999) / 1000;
    int r = sd_event_source_set_time(t->s, at);
    if (r < 0)
        return r;
    r = sd_event_source_set_enabled(t->s, SD_EVENT_ONESHOT);
    return r < 0 ? r : 0;
}

static int sdevent_start(void *loop, void *tp, int64_t delay_ns)
{
    if (delay_ns < 0)
        return -EINVAL; /* tblib.h: a negative delay is refused */
    return sdevent_arm(loop, tp, delay_ns);
}

static int sdevent_stop(void *loop, void *tp)
{
    (void)loop;
    struct sdevent_timer *t = tp;
    int was = sd_event_source_get_enabled(t->s, NULL) > 0;
    sd_event_source_set_enabled(t->s, SD_EVENT_OFF);
    return was;
}

/* sd-event restarts a source in place by setting its time: the source
 * stays in both heaps and is sifted to its new place. */
static int sdevent_again(void *loop, void *tp, int64_t delay_ns)
{
    if (delay_ns < 0)
        return -EINVAL;
    return sdevent_arm(loop, tp, delay_ns);
}

static void sdevent_update_now(void *loop)
{
    struct sdevent_loop *l = loop;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    l->now_us = (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int sdevent_run_nowait(void *loop)
{
    struct sdevent_loop *l = loop;
    /* One source per sd_event_run: as many passes as there are timers at
     * most, so a callback re-arming for now cannot keep this going. */
    for (size_t i = 0; i <= l->timers; i++) {
        int r = sd_event_run(l->e, 0);
        if (r < 0)
            return r;
        if (r == 0)
            break;
    }
    return 0;
}

static int sdevent_run(void *loop)
{
    struct sdevent_loop *l = loop;
    l->stop = false;
    while (!l->stop) {
        int r = sd_event_run(l->e, UINT64_MAX);
        if (r < 0)
            return r;
    }
    return 0;
}

static void sdevent_break(void *loop)
{
    struct sdevent_loop *l = loop;
    l->stop = true;
}

/** sd-event's CLOCK_MONOTONIC time sources. */
const struct tblib tblib_sdevent = {
    .name = "sd-event",
    .library = "libsystemd-dev",
    .structure = "two binary heaps per clock (earliest time, time + "
                 "accuracy), every source in both",
    .family = "binary heap",
    .timer_size = sizeof(struct sdevent_timer),
    .granularity_ns = 1000,
    .version = sdevent_version,
    .open = sdevent_open,
    .close = sdevent_close,
    .init = sdevent_init,
    .fini = sdevent_fini,
    .start = sdevent_start,
    .stop = sdevent_stop,
    .again = sdevent_again,
    .update_now = sdevent_update_now,
    .run_nowait = sdevent_run_nowait,
    .run = sdevent_run,
    .break_loop = sdevent_break,
};
