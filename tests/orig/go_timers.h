/*
 * go_timers.h — a transcription into C of the Go runtime's per-P timers
 * (src/runtime/time.go, Go 1.24, golang/go 2297c34), for the differential
 * test of quadheap (tests/diff_quadheap.c).  It keeps Go's names and state
 * bits (timerHeaped, timerModified, timerZombie), the timerWhen slots of a
 * 4-ary heap, ts.len stored at each unlock, zombies, minWhenHeap and
 * minWhenModified, and the operations modify (NewTimer, Reset), stop,
 * maybeAdd with cleanHead, check with its gate, adjust, run and
 * unlockAndRun.  One P, one goroutine: the locks are left out (the points
 * where Go unlocks ts are kept, since ts.len is stored there), as are
 * channel timers, synctest and the netpoller.  Timer functions are the
 * caller's: f(arg, now) runs where Go calls t.f.
 */
#ifndef TB_ORIG_GO_TIMERS_H
#define TB_ORIG_GO_TIMERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct go_timers;

/** A timer (runtime.timer): when, period, state bits, its timers set. */
struct go_timer {
    int64_t when;
    int64_t period;
    uint8_t state;
    struct go_timers *ts;       /* non-NULL while in a heap */
    void (*f)(void *arg, int64_t now);
    void *arg;
};

/** A timerWhen slot: the timer and the time the heap orders it by. */
struct go_timer_when {
    struct go_timer *timer;
    int64_t when;
};

/** A P's timers, with counters for the comparison: slots read by adjust
 *  passes (visits) and levels moved by siftUp / siftDown (sift_levels). */
struct go_timers {
    struct go_timer_when *heap;
    size_t n, cap;              /* len(ts.heap), cap(ts.heap) */
    uint32_t len;               /* ts.len: len(heap) at the last unlock */
    int32_t zombies;
    int64_t min_when_heap;      /* 0: no timers */
    int64_t min_when_modified;  /* 0: no modified timers */
    uint64_t visits;
    uint64_t sift_levels;
};

/** An empty timers set. */
void go_timers_init(struct go_timers *ts);

/** Frees the heap (timers are the caller's). */
void go_timers_free(struct go_timers *ts);

/** timer.init: a stopped timer with function f(arg, now). */
void go_timer_init(struct go_timer *t, void (*f)(void *, int64_t),
                   void *arg);

/** timer.modify (NewTimer, Ticker, Reset): sets when (> 0) and period and
 *  adds the timer to `ts` (the current P's set) if it needs it.  Returns
 *  whether the timer was pending before. */
bool go_timer_modify(struct go_timer *t, struct go_timers *ts, int64_t when,
                     int64_t period);

/** timer.stop: marks it a zombie if it is in a heap.  Returns whether it was
 *  pending (t.when > 0). */
bool go_timer_stop(struct go_timer *t);

/** timers.check(now) on the local P: returns whether a timer ran. */
bool go_timers_check(struct go_timers *ts, int64_t now);

#endif
