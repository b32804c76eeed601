/*
 * linux_hrtimer.h — a transcription into C of Linux's hrtimers on one clock
 * base, for the differential test of hrtree (tests/diff_hrtree.c): the
 * red-black tree of lib/rbtree.c (__rb_insert, __rb_erase,
 * __rb_erase_color, rb_next) with the cached leftmost of rb_add_cached and
 * rb_erase_cached, lib/timerqueue.c (timerqueue_add, timerqueue_del), and of
 * kernel/time/hrtimer.c hrtimer_start_range_ns, hrtimer_try_to_cancel,
 * __hrtimer_run_queues with __run_hrtimer, and hrtimer_forward.  One base,
 * no locks, no clock event device: the caller says when the queue runs.
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

/** struct hrtimer: the timerqueue node (rb node and hard expiry), the soft
 *  expiry, the enqueued state and the callback. */
struct lx_hrtimer {
    struct lx_rb_node node;     /* first */
    int64_t expires;            /* node.expires: the hard expiry */
    int64_t softexpires;        /* _softexpires */
    bool enqueued;              /* HRTIMER_STATE_ENQUEUED */
    enum lx_hrtimer_restart (*function)(struct lx_hrtimer *, int64_t now);
};

/** A clock base's timerqueue_head (rb_root_cached), with the count of
 *  nodes compared by inserts (hrtree's stats.visits). */
struct lx_hrtimer_base {
    struct lx_rb_node *root;
    struct lx_rb_node *leftmost;
    uint64_t visits;
};

/** hrtimer_start_range_ns(timer, tim, delta): soft tim, hard tim + delta;
 *  a queued timer is removed first. */
void lx_hrtimer_start_range_ns(struct lx_hrtimer_base *base,
                               struct lx_hrtimer *timer, int64_t tim,
                               int64_t delta);

/** hrtimer_try_to_cancel: 1 if the timer was queued, else 0. */
int lx_hrtimer_try_to_cancel(struct lx_hrtimer_base *base,
                             struct lx_hrtimer *timer);

/** __hrtimer_run_queues(now): the leftmost runs while its soft expiry has
 *  passed.  Returns the runs. */
long lx_hrtimer_run_queues(struct lx_hrtimer_base *base, int64_t now);

/** hrtimer_forward(timer, now, interval): the overrun count. */
uint64_t lx_hrtimer_forward(struct lx_hrtimer *timer, int64_t now,
                            int64_t interval);

#endif
