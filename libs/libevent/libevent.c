/*
 * libs/libevent/libevent.c — libevent 2.1 (Debian libevent-dev) as two
 * reference subjects, through event2/event.h only: plain timer events
 * ("libevent": a binary min-heap of struct event pointers,
 * minheap-internal.h, each event keeping its heap index), and the same
 * events on a common timeout ("libevent-common": one FIFO list per
 * duration, made by event_base_init_common_timeout, whose head alone has
 * an internal event in the min-heap).
 *
 * The loop is an event_base of its own, made with
 * EVENT_BASE_FLAG_PRECISE_TIMER: without it libevent reads
 * CLOCK_MONOTONIC_COARSE on Linux (a jiffy, 4 ms here), so a timer could
 * fire up to a jiffy before its delay by the monotonic clock the other
 * subjects and the harnesses read; with it libevent reads CLOCK_MONOTONIC
 * and the epoll backend sleeps on a timerfd (µs) instead of epoll_wait's
 * ms.  Delays are timevals: rounded up to whole µs.
 *
 * What each call costs, read from libevent 2.1.12 (event.c,
 * minheap-internal.h, evutil_time.c):
 *  - evtimer_add (event_add): the base lock, a no-op test here (no
 *    evthread_use_pthreads); min_heap_reserve_ (the pointer array doubles
 *    when full); on an event already pending, removal first
 *    (min_heap_erase_ or TAILQ_REMOVE: 2.1.12 leaves the in-place
 *    event_queue_reinsert_timeout compiled out as "buggy"); then gettime():
 *    the base's cached time, which exists only while the loop runs
 *    (event_base_loop sets it each iteration), else one clock_gettime per
 *    call, plus a gettimeofday every 5 s to keep the wall-clock offset;
 *    then min_heap_push_, a sift up comparing the timevals of the events
 *    the array points at (one dereference per level).  On a common
 *    timeout the deadline carries a magic and the queue's index in
 *    tv_usec's high bits; insert_common_timeout_inorder walks from the
 *    tail (one compare, deadlines arriving in order), and only an event
 *    that becomes the head adds the queue's internal event to the heap.
 *  - event_del: min_heap_erase_ (the last element moved into the hole and
 *    sifted up or down), or TAILQ_REMOVE on a common timeout, O(1); a
 *    removed head leaves the queue's heap event at the old deadline, and
 *    common_timeout_callback then reschedules it for the new head (an
 *    early wake-up, not a missed timer).
 *  - evtimer_pending (event_pending): the lock test and a read of the
 *    event's flags.
 *  - event_base_update_cache_time: refreshes the cache only inside the
 *    loop, a no-op outside it (where every add reads the clock anyway).
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <stdio.h>
#include <stdlib.h>

#include "tblib.h"

struct libevent_loop {
    struct event_base *base;
    /* The common timeout's magic timeval, or NULL for plain events. */
    const struct timeval *common;
    int64_t fixed_delay_ns;
};

struct libevent_timer {
    struct event ev;
    tblib_fire_fn fn;
    void *arg;
};

static void libevent_version(char *buf, size_t size)
{
    snprintf(buf, size, "%s", event_get_version());
}

/* ns to a timeval, rounded up to whole µs. */
static struct timeval libevent_tv(int64_t delay_ns)
{
    int64_t us = (delay_ns + 999) / 1000;
    struct timeval tv = {.tv_sec = (time_t)(us / 1000000),
                         .tv_usec = (suseconds_t)(us % 1000000)};
    return tv;
}

static struct libevent_loop *libevent_new(char *err, size_t errlen)
{
    struct libevent_loop *l = calloc(1, sizeof *l);
    if (!l) {
        snprintf(err, errlen, "out of memory for the loop");
        return NULL;
    }
    struct event_config *cfg = event_config_new();
    if (!cfg) {
        snprintf(err, errlen, "event_config_new failed");
        free(l);
        return NULL;
    }
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);
    l->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    if (!l->base) {
        snprintf(err, errlen, "event_base_new_with_config failed");
        free(l);
        return NULL;
    }
    return l;
}

static void *libevent_open(const struct tblib_options *o, char *err,
                           size_t errlen)
{
    (void)o;
    return libevent_new(err, errlen);
}

static void *libevent_common_open(const struct tblib_options *o, char *err,
                                  size_t errlen)
{
    if (o->fixed_delay_ns <= 0) {
        snprintf(err, errlen, "common timeouts need one fixed delay "
                 "(fixed_delay_ns is %lld)", (long long)o->fixed_delay_ns);
        return NULL;
    }
    struct libevent_loop *l = libevent_new(err, errlen);
    if (!l)
        return NULL;
    struct timeval tv = libevent_tv(o->fixed_delay_ns);
    l->common = event_base_init_common_timeout(l->base, &tv);
    if (!l->common) {
        snprintf(err, errlen, "event_base_init_common_timeout failed");
        event_base_free(l->base);
        free(l);
        return NULL;
    }
    l->fixed_delay_ns = o->fixed_delay_ns;
    return l;
}

static void libevent_close(void *lp)
{
    struct libevent_loop *l = lp;
    event_base_free(l->base);
    free(l);
}

static void libevent_fired(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    struct libevent_timer *t = arg;
    t->fn(t->arg);
}

static int libevent_init(void *lp, void *tp, tblib_fire_fn fn, void *arg)
{
    struct libevent_loop *l = lp;
    struct libevent_timer *t = tp;
    t->fn = fn;
    t->arg = arg;
    return evtimer_assign(&t->ev, l->base, libevent_fired, t) == 0
               ? 0 : -EINVAL;
}

static void libevent_fini(void *lp, void *tp)
{
    (void)lp;
    struct libevent_timer *t = tp;
    event_del(&t->ev);
}

static int libevent_start(void *lp, void *tp, int64_t delay_ns)
{
    (void)lp;
    struct libevent_timer *t = tp;
    if (delay_ns < 0)
        return -EINVAL;
    struct timeval tv = libevent_tv(delay_ns);
    return evtimer_add(&t->ev, &tv) == 0 ? 0 : -ENOMEM;
}

static int libevent_common_start(void *lp, void *tp, int64_t delay_ns)
{
    struct libevent_loop *l = lp;
    struct libevent_timer *t = tp;
    if (delay_ns != l->fixed_delay_ns)
        return -EINVAL;
    return evtimer_add(&t->ev, l->common) == 0 ? 0 : -ENOMEM;
}

static int libevent_stop(void *lp, void *tp)
{
    (void)lp;
    struct libevent_timer *t = tp;
    int was = evtimer_pending(&t->ev, NULL) != 0;
    event_del(&t->ev);
    return was;
}

static void libevent_update_now(void *lp)
{
    struct libevent_loop *l = lp;
    event_base_update_cache_time(l->base);
}

static int libevent_run_nowait(void *lp)
{
    struct libevent_loop *l = lp;
    return event_base_loop(l->base, EVLOOP_NONBLOCK) < 0 ? -EIO : 0;
}

static int libevent_run(void *lp)
{
    struct libevent_loop *l = lp;
    /* Returns on event_base_loopbreak, or (1) as soon as nothing is
     * pending: a loop with no timer left does not block. */
    return event_base_loop(l->base, 0) < 0 ? -EIO : 0;
}

static void libevent_break(void *lp)
{
    struct libevent_loop *l = lp;
    event_base_loopbreak(l->base);
}

/** libevent's timer events, in its min-heap. */
const struct tblib tblib_libevent = {
    .name = "libevent",
    .library = "libevent-dev",
    .structure = "min-heap of event pointers (minheap-internal.h)",
    .family = "binary heap",
    .timer_size = sizeof(struct libevent_timer),
    .granularity_ns = 1000,
    .version = libevent_version,
    .open = libevent_open,
    .close = libevent_close,
    .init = libevent_init,
    .fini = libevent_fini,
    .start = libevent_start,
    .stop = libevent_stop,
    /* evtimer_add on a pending event is libevent's restart in place. */
    .again = libevent_start,
    .update_now = libevent_update_now,
    .run_nowait = libevent_run_nowait,
    .run = libevent_run,
    .break_loop = libevent_break,
};

/** libevent's timer events on one common timeout. */
const struct tblib tblib_libevent_common = {
    .name = "libevent-common",
    .library = "libevent-dev",
    .structure = "common-timeout queue: one FIFO list per duration "
                 "(event_base_init_common_timeout), its head alone in the "
                 "min-heap",
    .family = "fifo per duration",
    .timer_size = sizeof(struct libevent_timer),
    .granularity_ns = 1000,
    .fixed_only = 1,
    .version = libevent_version,
    .open = libevent_common_open,
    .close = libevent_close,
    .init = libevent_init,
    .fini = libevent_fini,
    .start = libevent_common_start,
    .stop = libevent_stop,
    .again = libevent_common_start,
    .update_now = libevent_update_now,
    .run_nowait = libevent_run_nowait,
    .run = libevent_run,
    .break_loop = libevent_break,
    /* a plain event of the same base, in its min-heap */
    .start_any = libevent_start,
};
