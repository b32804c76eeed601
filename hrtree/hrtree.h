/*
 * hrtree/hrtree.h — what hrtree exports beside its registry entry: the
 * arithmetic of hrtimer_forward(), so that its overrun count can be held to
 * the kernel's rule exactly by tests (the interface itself has no place for
 * an overrun count: a periodic task just runs at the forwarded time).
 */
#ifndef TIMERBENCH_HRTREE_H
#define TIMERBENCH_HRTREE_H

#include <stdint.h>

/** hrtimer_forward(timer, now, interval) on an expiry: if *expires is
 *  after `now`, nothing changes and the answer is 0.  Otherwise *expires
 *  moves forward by whole intervals to the first point of its grid after
 *  now, and the answer is the number of intervals it moved (the overrun
 *  count: 1 for a run on time, 1 + the periods missed for a late one).
 *  `interval` must be >= 1.  A move that would pass the end of the clock
 *  leaves INT64_MAX in *expires: the kernel saturates too (its last step,
 *  hrtimer_add_expires, is ktime_add_safe, which gives KTIME_SEC_MAX whole
 *  seconds, 854,775,807 ns short of INT64_MAX); here the timer then has no
 *  next run. */
uint64_t tb_hrtree_forward(int64_t *expires, int64_t now, int64_t interval);

#endif
