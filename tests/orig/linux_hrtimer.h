/*
 * linux_hrtimer.h — a transcription into C of Linux's hrtimers on one clock
 * base, for the differential test of hrtree (tests/diff_hrtree.c): the
 * red-black tree of lib/rbtree.c (__rb_insert, __rb_erase,
 * __rb_erase_color, rb_next) with the cached leftmost of rb_add_cached and
 * rb_erase_cached, lib/timerqueue.c (timerqueue_add, timerqueue_del), and of
 * kernel/time/hrtimer.c hrtimer_start_range_ns, hrtimer_try_to_cancel,
 * hrtimer_reprogram and hrtimer_force_reprogram (the one event the clock
 * event device is programmed for), hrtimer_interrupt with its retry,
 * __hrtimer_run_queues with __run_hrtimer, hrtimer_forward and
 * hrtimer_forward_now.  One base, no locks.  The caller is the clock event
 * device: it calls lx_hrtimer_interrupt once the time reaches
 * lx_hrtimer_next_event.  Callbacks get no time; they read the base's
 * clock (get_time), as a kernel callback does.
 */
#ifndef TB_ORIG_LINUX_HRTIMER_H
#define TB_ORIG_LINUX_HRTIMER_H

#include <stdbool.h>
#include <stdint.h>

/** struct rb_node: parent and colour in one word, two children. */
struct lx_rb_node {
    uintptr_t parent_color;
    struct lx_rb_node *right;
    struct lx_rb_node *left;
};

enum lx_hrtimer_restart { LX_HRTIMER_NORESTART, LX_HRTIMER_RESTART };

struct lx_hrtimer_base;

/** struct hrtimer: the timerqueue node (rb node and hard expiry), the soft
 *  expiry, the enqueued state, the base it was started on and the
 *  callback. */
struct lx_hrtimer {
    struct lx_rb_node node;     /* first */
    int64_t expires;            /* node.expires: the hard expiry */
    int64_t softexpires;        /* _softexpires */
    bool enqueued;              /* HRTIMER_STATE_ENQUEUED */
    struct lx_hrtimer_base *base;
    enum lx_hrtimer_restart (*function)(struct lx_hrtimer *);
};

/** A clock base's timerqueue_head (rb_root_cached) and the part of its
 *  hrtimer_cpu_base that programs the device, with the count of nodes
 *  compared by inserts (hrtree's stats.visits) and of timers queued.
 *  Zeroed, then get_time set and lx_hrtimer_base_init called. */
struct lx_hrtimer_base {
    struct lx_rb_node *root;
    struct lx_rb_node *leftmost;
    uint64_t visits;
    long queued;
    int64_t (*get_time)(void *ctx); /* the clock base's get_time */
    void *ctx;
    int64_t expires_next;           /* cpu_base->expires_next */
    struct lx_hrtimer *next_timer;  /* cpu_base->next_timer */
    bool in_hrtirq;                 /* cpu_base->in_hrtirq */
    uint64_t interrupts;            /* hrtimer_interrupt calls */
};

/** An empty base, nothing programmed (expires_next KTIME_MAX). */
void lx_hrtimer_base_init(struct lx_hrtimer_base *base);

/** hrtimer_start_range_ns(timer, tim, delta): soft tim, hard tim + delta;
 *  a queued timer is removed first; the device is reprogrammed as the
 *  kernel does (earlier for a new first timer, to the new first one when
 *  the removed timer was the one programmed). */
void lx_hrtimer_start_range_ns(struct lx_hrtimer_base *base,
                               struct lx_hrtimer *timer, int64_t tim,
                               int64_t delta);

/** hrtimer_try_to_cancel: 1 if the timer was queued, else 0 (the timer
 *  whose callback runs is not queued unless restarted: -1 is not
 *  modelled, as no callback cancels itself here); a removed programmed
 *  timer reprograms the device. */
int lx_hrtimer_try_to_cancel(struct lx_hrtimer_base *base,
                             struct lx_hrtimer *timer);

/** The event the device is programmed for: the hard expiry at which it
 *  calls lx_hrtimer_interrupt (INT64_MAX: none). */
int64_t lx_hrtimer_next_event(const struct lx_hrtimer_base *base);

/** hrtimer_interrupt: __hrtimer_run_queues at the clock, then the device
 *  programmed for the new first timer's hard expiry, or, if that has
 *  passed by the clock read anew, the queue run again (the retry).  The
 *  kernel gives up after three retries (hang detection); this retries
 *  until nothing is due, as hrtree does.  Returns the runs. */
long lx_hrtimer_interrupt(struct lx_hrtimer_base *base);

/** hrtimer_forward(timer, now, interval): the overrun count. */
uint64_t lx_hrtimer_forward(struct lx_hrtimer *timer, int64_t now,
                            int64_t interval);

/** hrtimer_forward_now: hrtimer_forward from the timer's base's clock. */
uint64_t lx_hrtimer_forward_now(struct lx_hrtimer *timer, int64_t interval);

/** hrtimer_cb_get_time: the clock of the timer's base. */
int64_t lx_hrtimer_cb_get_time(const struct lx_hrtimer *timer);

#endif
