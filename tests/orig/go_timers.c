/*
 * go_timers.c — the Go runtime's per-P timers (Go 1.24 runtime/time.go)
 * transcribed into C for the differential test of quadheap; see
 * go_timers.h for what is kept and what is left out.  Each function names
 * the Go method it follows and does what that method does, in its order;
 * the points where Go calls ts.unlock() store ts.len here.
 */
#include "go_timers.h"

#include <stdio.h>
#include <stdlib.h>

enum {
    TIMER_HEAPED = 1 << 0,
    TIMER_MODIFIED = 1 << 1,
    TIMER_ZOMBIE = 1 << 2,
};

#define GO_MAX_WHEN INT64_MAX
#define GO_HEAP_N 4 /* timerHeapN */

static void bad_timer(const char *why)
{
    fprintf(stderr, "go_timers: timer data corruption: %s\n", why);
    abort();
}

void go_timers_init(struct go_timers *ts)
{
    *ts = (struct go_timers){0};
}

void go_timers_free(struct go_timers *ts)
{
    free(ts->heap);
    *ts = (struct go_timers){0};
}

void go_timer_init(struct go_timer *t, void (*f)(void *, int64_t), void *arg)
{
    *t = (struct go_timer){.f = f, .arg = arg};
}

/* ts.unlock(): the atomic copy of len(ts.heap) is stored only here. */
static void ts_unlock(struct go_timers *ts)
{
    ts->len = (uint32_t)ts->n;
}

/* ---- Heap maintenance -------------------------------------------------- */

/* timers.siftUp */
static void sift_up(struct go_timers *ts, size_t i)
{
    struct go_timer_when *heap = ts->heap;
    if (i >= ts->n)
        bad_timer("siftUp index");
    struct go_timer_when tw = heap[i];
    int64_t when = tw.when;
    if (when <= 0)
        bad_timer("siftUp when");
    while (i > 0) {
        size_t p = (i - 1) / GO_HEAP_N;
        if (when >= heap[p].when)
            break;
        heap[i] = heap[p];
        i = p;
        ts->sift_levels++;
    }
    heap[i] = tw;
}

/* timers.siftDown: the earliest child strictly before `when`, the first of
 * equal ones, takes the hole. */
static void sift_down(struct go_timers *ts, size_t i)
{
    struct go_timer_when *heap = ts->heap;
    size_t n = ts->n;
    if (i >= n)
        bad_timer("siftDown index");
    if (i * GO_HEAP_N + 1 >= n)
        return;
    struct go_timer_when tw = heap[i];
    int64_t when = tw.when;
    if (when <= 0)
        bad_timer("siftDown when");
    for (;;) {
        size_t left = i * GO_HEAP_N + 1;
        if (left >= n)
            break;
        int64_t w = when;
        size_t c = SIZE_MAX;
        size_t end = left + GO_HEAP_N < n ? left + GO_HEAP_N : n;
        for (size_t j = left; j < end; j++) {
            if (heap[j].when < w) {
                w = heap[j].when;
                c = j;
            }
        }
        if (c == SIZE_MAX)
            break;
        heap[i] = heap[c];
        i = c;
        ts->sift_levels++;
    }
    heap[i] = tw;
}

/* timers.initHeap */
static void init_heap(struct go_timers *ts)
{
    if (ts->n <= 1)
        return;
    for (size_t i = (ts->n - 1 - 1) / GO_HEAP_N + 1; i-- > 0;)
        sift_down(ts, i);
}

/* timers.updateMinWhenHeap */
static void update_min_when_heap(struct go_timers *ts)
{
    ts->min_when_heap = ts->n ? ts->heap[0].when : 0;
}

/* timers.updateMinWhenModified */
static void update_min_when_modified(struct go_timers *ts, int64_t when)
{
    int64_t old = ts->min_when_modified;
    if (old != 0 && old < when)
        return;
    ts->min_when_modified = when;
}

/* timers.wakeTime: 0 when there are no timers. */
static int64_t wake_time(const struct go_timers *ts)
{
    int64_t next_when = ts->min_when_modified;
    int64_t when = ts->min_when_heap;
    if (when == 0 || (next_when != 0 && next_when < when))
        when = next_when;
    return when;
}

/* timers.deleteMin */
static void delete_min(struct go_timers *ts)
{
    struct go_timer *t = ts->heap[0].timer;
    if (t->ts != ts)
        bad_timer("wrong timers");
    t->ts = NULL;
    size_t last = ts->n - 1;
    if (last > 0)
        ts->heap[0] = ts->heap[last];
    ts->heap[last] = (struct go_timer_when){0};
    ts->n = last;
    if (last > 0)
        sift_down(ts, 0);
    update_min_when_heap(ts);
    if (last == 0)
        ts->min_when_modified = 0;
}

/* timer.updateHeap: t is ts.heap[0]. */
static bool update_heap(struct go_timer *t)
{
    struct go_timers *ts = t->ts;
    if (!ts || ts->heap[0].timer != t)
        bad_timer("updateHeap not at the head");
    if (t->state & TIMER_ZOMBIE) {
        t->state &= (uint8_t)~(TIMER_HEAPED | TIMER_ZOMBIE | TIMER_MODIFIED);
        ts->zombies--;
        delete_min(ts);
        return true;
    }
    if (t->state & TIMER_MODIFIED) {
        t->state &= (uint8_t)~TIMER_MODIFIED;
        ts->heap[0].when = t->when;
        sift_down(ts, 0);
        update_min_when_heap(ts);
        return true;
    }
    return false;
}

/* timers.addHeap */
static void add_heap(struct go_timers *ts, struct go_timer *t)
{
    if (t->ts)
        bad_timer("ts set in timer");
    t->ts = ts;
    if (ts->n == ts->cap) {
        size_t cap = ts->cap ? 2 * ts->cap : 4;
        struct go_timer_when *h = realloc(ts->heap, cap * sizeof *h);
        if (!h)
            abort();
        ts->heap = h;
        ts->cap = cap;
    }
    ts->heap[ts->n++] = (struct go_timer_when){t, t->when};
    sift_up(ts, ts->n - 1);
    if (t == ts->heap[0].timer)
        update_min_when_heap(ts);
}

/* timers.cleanHead */
static void clean_head(struct go_timers *ts)
{
    for (;;) {
        if (ts->n == 0)
            return;
        size_t n = ts->n;
        struct go_timer *t = ts->heap[n - 1].timer;
        if (t->state & TIMER_ZOMBIE) {
            t->state &= (uint8_t)~(TIMER_HEAPED | TIMER_ZOMBIE |
                                   TIMER_MODIFIED);
            t->ts = NULL;
            ts->zombies--;
            ts->heap[n - 1] = (struct go_timer_when){0};
            ts->n = n - 1;
            continue;
        }
        t = ts->heap[0].timer;
        if (t->ts != ts)
            bad_timer("bad ts");
        if (!(t->state & (TIMER_MODIFIED | TIMER_ZOMBIE)))
            return;
        if (!update_heap(t))
            return;
    }
}

/* timer.needsAdd (a timer without a channel) */
static bool needs_add(const struct go_timer *t)
{
    return !(t->state & TIMER_HEAPED) && t->when > 0;
}

/* timer.maybeAdd on the current P's timers */
static void maybe_add(struct go_timer *t, struct go_timers *ts)
{
    clean_head(ts);
    if (needs_add(t)) {
        t->state |= TIMER_HEAPED;
        add_heap(ts, t);
    }
    ts_unlock(ts);
}

bool go_timer_modify(struct go_timer *t, struct go_timers *ts, int64_t when,
                     int64_t period)
{
    if (when <= 0)
        bad_timer("timer when must be positive");
    if (period < 0)
        bad_timer("timer period must be non-negative");
    t->period = period;
    bool pending = t->when > 0;
    t->when = when;
    if (t->state & TIMER_HEAPED) {
        t->state |= TIMER_MODIFIED;
        if (t->state & TIMER_ZOMBIE) {
            t->ts->zombies--;
            t->state &= (uint8_t)~TIMER_ZOMBIE;
        }
        int64_t min = t->ts->min_when_modified;
        if (min == 0 || when < min)
            update_min_when_modified(t->ts, when);
    }
    if (needs_add(t))
        maybe_add(t, ts);
    return pending;
}

bool go_timer_stop(struct go_timer *t)
{
    if (t->state & TIMER_HEAPED) {
        t->state |= TIMER_MODIFIED;
        if (!(t->state & TIMER_ZOMBIE)) {
            t->state |= TIMER_ZOMBIE;
            t->ts->zombies++;
        }
    }
    bool pending = t->when > 0;
    t->when = 0;
    return pending;
}

/* timers.adjust: every slot read once (visits); zombies removed by moving
 * the last slot in, modified times written; the heap rebuilt once. */
static void adjust(struct go_timers *ts, int64_t now, bool force)
{
    if (!force) {
        int64_t first = ts->min_when_modified;
        if (first == 0 || first > now)
            return;
    }
    ts->min_when_heap = wake_time(ts);
    ts->min_when_modified = 0;
    ts->visits += ts->n;
    bool changed = false;
    for (size_t i = 0; i < ts->n; i++) {
        struct go_timer_when *tw = &ts->heap[i];
        struct go_timer *t = tw->timer;
        if (t->ts != ts)
            bad_timer("bad ts");
        if (!(t->state & (TIMER_MODIFIED | TIMER_ZOMBIE)))
            continue;
        if (!(t->state & TIMER_HEAPED)) {
            bad_timer("not heaped");
        } else if (t->state & TIMER_ZOMBIE) {
            ts->zombies--;
            t->state &= (uint8_t)~(TIMER_HEAPED | TIMER_ZOMBIE |
                                   TIMER_MODIFIED);
            size_t n = ts->n;
            ts->heap[i] = ts->heap[n - 1];
            ts->heap[n - 1] = (struct go_timer_when){0};
            ts->n = n - 1;
            t->ts = NULL;
            i--; /* wraps at 0; the loop's i++ brings it back */
            changed = true;
        } else if (t->state & TIMER_MODIFIED) {
            tw->when = t->when;
            t->state &= (uint8_t)~TIMER_MODIFIED;
            changed = true;
        }
    }
    if (changed)
        init_heap(ts);
    update_min_when_heap(ts);
}

/* timer.unlockAndRun: the head is due and clean. */
static void unlock_and_run(struct go_timer *t, int64_t now)
{
    if (t->state & (TIMER_MODIFIED | TIMER_ZOMBIE))
        bad_timer("unlockAndRun of a modified timer");
    void (*f)(void *, int64_t) = t->f;
    void *arg = t->arg;
    int64_t next;
    int64_t delay = now - t->when;
    if (t->period > 0) {
        next = t->when + t->period * (1 + delay / t->period);
        if (next < 0)
            next = GO_MAX_WHEN;
    } else {
        next = 0;
    }
    struct go_timers *ts = t->ts;
    t->when = next;
    if (t->state & TIMER_HEAPED) {
        t->state |= TIMER_MODIFIED;
        if (next == 0) {
            t->state |= TIMER_ZOMBIE;
            t->ts->zombies++;
        }
        update_heap(t);
    }
    if (ts)
        ts_unlock(ts);
    f(arg, now);
    /* ts.lock() again: nothing to record */
}

/* timers.run: 0 if it ran a timer, -1 if there are none, else the time the
 * first one is due. */
static int64_t run(struct go_timers *ts, int64_t now)
{
    for (;;) {
        if (ts->n == 0)
            return -1;
        struct go_timer_when tw = ts->heap[0];
        struct go_timer *t = tw.timer;
        if (t->ts != ts)
            bad_timer("bad ts");
        if (!(t->state & (TIMER_MODIFIED | TIMER_ZOMBIE)) && tw.when > now)
            return tw.when;
        if (update_heap(t))
            continue; /* Redo */
        if (!(t->state & TIMER_HEAPED) || (t->state & TIMER_MODIFIED))
            bad_timer("run");
        if (t->when > now)
            return t->when;
        unlock_and_run(t, now);
        return 0;
    }
}

bool go_timers_check(struct go_timers *ts, int64_t now)
{
    int64_t next = wake_time(ts);
    if (next == 0)
        return false;
    int32_t zombies = ts->zombies;
    if (zombies < 0)
        bad_timer("zombies < 0");
    bool force = (int64_t)zombies > (int64_t)ts->len / 4;
    if (now < next && !force)
        return false;
    bool ran = false;
    if (ts->n > 0) {
        adjust(ts, now, false);
        while (ts->n > 0) {
            if (run(ts, now) != 0)
                break;
            ran = true;
        }
        force = (int64_t)ts->zombies > (int64_t)ts->len / 4;
        if (force)
            adjust(ts, now, true);
    }
    ts_unlock(ts);
    return ran;
}
