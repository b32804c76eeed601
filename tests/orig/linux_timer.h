/*
 * linux_timer.h — a transcription into C of the Linux timer wheel
 * (kernel/time/timer.c, v6.2 .. v6.8 form, read at torvalds/linux
 * 0010b838), for the differential test of kernelwheel
 * (tests/diff_kernelwheel.c).  One timer_base: clk, next_expiry,
 * next_expiry_recalc, timers_pending, pending_map and the hlist buckets;
 * calc_index, calc_wheel_index (with the cutoff at LVL_DEPTH levels),
 * enqueue_timer, forward_timer_base, __mod_timer (mod_timer, add_timer),
 * timer_delete, collect_expired_timers, __next_timer_interrupt,
 * __run_timers with expire_timers, and the base bookkeeping of
 * get_next_timer_interrupt on the way to idle.  Jiffies is whatever the
 * caller passes; no locks, CPUs, migration or deferrable base.
 */
#ifndef TB_ORIG_LINUX_TIMER_H
#define TB_ORIG_LINUX_TIMER_H

#include <stdbool.h>
#include <stdint.h>

#define LX_LVL_BITS 6
#define LX_LVL_SIZE (1ul << LX_LVL_BITS)
#define LX_MAX_DEPTH 9

struct lx_timer;

/** A timer_list: the hlist node, expires in jiffies, the bucket index
 *  (timer->flags' array bits) and the callback. */
struct lx_timer {
    struct lx_timer *next;
    struct lx_timer **pprev;    /* NULL: not pending */
    unsigned long expires;
    unsigned idx;
    void (*function)(struct lx_timer *);
};

/** A timer_base, with the counts of __run_timers' loop for the
 *  comparison: steps (collect_expired_timers calls) and empty steps. */
struct lx_base {
    unsigned long jiffies;
    unsigned long clk;
    unsigned long next_expiry;
    bool next_expiry_recalc;
    bool timers_pending;
    unsigned depth;             /* LVL_DEPTH: 9 if HZ > 100, else 8 */
    uint64_t pending_map[LX_MAX_DEPTH];
    struct lx_timer *vectors[LX_MAX_DEPTH * LX_LVL_SIZE];
    uint64_t steps, empty_steps;
};

/** init_timer_cpu at `jiffies` with LVL_DEPTH for `hz`. */
void lx_base_init(struct lx_base *base, unsigned long hz,
                  unsigned long jiffies);

/** timer_pending(). */
bool lx_timer_pending(const struct lx_timer *timer);

/** mod_timer(timer, expires): 0 if the timer was inactive, 1 if pending. */
int lx_mod_timer(struct lx_base *base, struct lx_timer *timer,
                 unsigned long expires);

/** add_timer(timer) with timer->expires set. */
void lx_add_timer(struct lx_base *base, struct lx_timer *timer);

/** timer_delete(timer): 1 if it was pending. */
int lx_timer_delete(struct lx_base *base, struct lx_timer *timer);

/** A wake-up at `jiffies`: run_timer_softirq's __run_timers, then the base
 *  bookkeeping of get_next_timer_interrupt(jiffies) as the CPU goes idle. */
void lx_wake(struct lx_base *base, unsigned long jiffies);

#endif
