/*
 * linux_timer.c — the Linux timer wheel (kernel/time/timer.c) transcribed
 * into C for the differential test of kernelwheel; see linux_timer.h for
 * what is kept.  Each function names the kernel function it follows and
 * does what that function does, in its order, for one base.
 */
#include "linux_timer.h"

#include <stdio.h>
#include <stdlib.h>

#define LVL_CLK_SHIFT 3
#define LVL_CLK_DIV (1ul << LVL_CLK_SHIFT)
#define LVL_CLK_MASK (LVL_CLK_DIV - 1)
#define LVL_SHIFT(n) ((n) * LVL_CLK_SHIFT)
#define LVL_GRAN(n) (1ul << LVL_SHIFT(n))
#define LVL_START(n) ((LX_LVL_SIZE - 1) << (((n) - 1) * LVL_CLK_SHIFT))
#define LVL_MASK (LX_LVL_SIZE - 1)
#define LVL_OFFS(n) ((n) * LX_LVL_SIZE)
#define NEXT_TIMER_MAX_DELTA ((1ul << 30) - 1)
#define NO_IDX 0xffffffffu

static bool time_before(unsigned long a, unsigned long b)
{
    return (long)(a - b) < 0;
}

static bool time_after(unsigned long a, unsigned long b)
{
    return time_before(b, a);
}

/* ---- hlists ------------------------------------------------------------ */

static void hlist_add_head(struct lx_timer *n, struct lx_timer **h)
{
    struct lx_timer *first = *h;
    n->next = first;
    if (first)
        first->pprev = &n->next;
    *h = n;
    n->pprev = h;
}

static void hlist_del(struct lx_timer *n)
{
    struct lx_timer *next = n->next;
    *n->pprev = next;
    if (next)
        next->pprev = n->pprev;
}

static void hlist_move_list(struct lx_timer **old, struct lx_timer **new)
{
    *new = *old;
    if (*new)
        (*new)->pprev = new;
    *old = NULL;
}

static bool hlist_is_singular_node(const struct lx_timer *n,
                                   struct lx_timer *const *h)
{
    return !n->next && n->pprev == h;
}

/* ---- The wheel --------------------------------------------------------- */

void lx_base_init(struct lx_base *base, unsigned long hz,
                  unsigned long jiffies)
{
    *base = (struct lx_base){0};
    base->depth = hz > 100 ? 9 : 8;
    base->jiffies = jiffies;
    base->clk = jiffies;
    base->next_expiry = base->clk + NEXT_TIMER_MAX_DELTA;
}

bool lx_timer_pending(const struct lx_timer *timer)
{
    return timer->pprev != NULL;
}

/* calc_index */
static unsigned calc_index(unsigned long expires, unsigned lvl,
                           unsigned long *bucket_expiry)
{
    expires = (expires >> LVL_SHIFT(lvl)) + 1;
    *bucket_expiry = expires << LVL_SHIFT(lvl);
    return (unsigned)(LVL_OFFS(lvl) + (expires & LVL_MASK));
}

/* calc_wheel_index: the chain of compares up to the last level, a timer
 * already due to the current bucket, and the cutoff. */
static unsigned calc_wheel_index(const struct lx_base *base,
                                 unsigned long expires, unsigned long clk,
                                 unsigned long *bucket_expiry)
{
    unsigned long delta = expires - clk;
    for (unsigned lvl = 0; lvl + 1 < base->depth; lvl++)
        if (delta < LVL_START(lvl + 1))
            return calc_index(expires, lvl, bucket_expiry);
    if ((long)delta < 0) {
        *bucket_expiry = clk;
        return (unsigned)(clk & LVL_MASK);
    }
    unsigned long cutoff = LVL_START(base->depth);
    if (delta >= cutoff)
        expires = clk + (cutoff - LVL_GRAN(base->depth - 1));
    return calc_index(expires, base->depth - 1, bucket_expiry);
}

static void set_bit(struct lx_base *base, unsigned idx)
{
    base->pending_map[idx / LX_LVL_SIZE] |= 1ull << (idx % LX_LVL_SIZE);
}

static void clear_bit(struct lx_base *base, unsigned idx)
{
    base->pending_map[idx / LX_LVL_SIZE] &= ~(1ull << (idx % LX_LVL_SIZE));
}

static bool test_and_clear_bit(struct lx_base *base, unsigned idx)
{
    uint64_t bit = 1ull << (idx % LX_LVL_SIZE);
    bool was = base->pending_map[idx / LX_LVL_SIZE] & bit;
    base->pending_map[idx / LX_LVL_SIZE] &= ~bit;
    return was;
}

/* find_next_bit over the pending map: the first set bit in
 * [start, end), or end. */
static unsigned find_next_bit(const struct lx_base *base, unsigned end,
                              unsigned start)
{
    for (unsigned i = start; i < end; i++)
        if (base->pending_map[i / LX_LVL_SIZE] >> (i % LX_LVL_SIZE) & 1)
            return i;
    return end;
}

/* enqueue_timer */
static void enqueue_timer(struct lx_base *base, struct lx_timer *timer,
                          unsigned idx, unsigned long bucket_expiry)
{
    hlist_add_head(timer, &base->vectors[idx]);
    set_bit(base, idx);
    timer->idx = idx;
    if (time_before(bucket_expiry, base->next_expiry)) {
        base->next_expiry = bucket_expiry;
        base->timers_pending = true;
        base->next_expiry_recalc = false;
    }
}

/* internal_add_timer */
static void internal_add_timer(struct lx_base *base, struct lx_timer *timer)
{
    unsigned long bucket_expiry;
    unsigned idx = calc_wheel_index(base, timer->expires, base->clk,
                                    &bucket_expiry);
    enqueue_timer(base, timer, idx, bucket_expiry);
}

/* detach_timer */
static void detach_timer(struct lx_timer *timer, bool clear_pending)
{
    hlist_del(timer);
    if (clear_pending)
        timer->pprev = NULL;
    timer->next = NULL; /* LIST_POISON2 */
}

/* detach_if_pending */
static int detach_if_pending(struct lx_base *base, struct lx_timer *timer,
                             bool clear_pending)
{
    unsigned idx = timer->idx;
    if (!lx_timer_pending(timer))
        return 0;
    if (hlist_is_singular_node(timer, &base->vectors[idx])) {
        clear_bit(base, idx);
        base->next_expiry_recalc = true;
    }
    detach_timer(timer, clear_pending);
    return 1;
}

/* forward_timer_base */
static void forward_timer_base(struct lx_base *base)
{
    unsigned long jnow = base->jiffies;
    if ((long)(jnow - base->clk) < 1)
        return;
    if (time_after(base->next_expiry, jnow)) {
        base->clk = jnow;
    } else {
        if (time_before(base->next_expiry, base->clk)) {
            fprintf(stderr, "linux_timer: next_expiry before clk\n");
            abort(); /* the kernel's WARN_ON_ONCE */
        }
        base->clk = base->next_expiry;
    }
}

/* __mod_timer with options 0 (mod_timer) or MOD_TIMER_NOTPENDING
 * (add_timer) */
static int mod_timer(struct lx_base *base, struct lx_timer *timer,
                     unsigned long expires, bool notpending)
{
    unsigned long clk = 0, bucket_expiry = 0;
    unsigned idx = NO_IDX;
    if (!notpending && lx_timer_pending(timer)) {
        long diff = (long)(timer->expires - expires);
        if (!diff)
            return 1;
        forward_timer_base(base);
        clk = base->clk;
        idx = calc_wheel_index(base, expires, clk, &bucket_expiry);
        if (idx == timer->idx) {
            timer->expires = expires;
            return 1;
        }
    } else {
        forward_timer_base(base);
    }
    int ret = detach_if_pending(base, timer, false);
    timer->expires = expires;
    if (idx != NO_IDX && clk == base->clk)
        enqueue_timer(base, timer, idx, bucket_expiry);
    else
        internal_add_timer(base, timer);
    return ret;
}

int lx_mod_timer(struct lx_base *base, struct lx_timer *timer,
                 unsigned long expires)
{
    return mod_timer(base, timer, expires, false);
}

void lx_add_timer(struct lx_base *base, struct lx_timer *timer)
{
    if (lx_timer_pending(timer))
        abort(); /* BUG_ON */
    mod_timer(base, timer, timer->expires, true);
}

int lx_timer_delete(struct lx_base *base, struct lx_timer *timer)
{
    if (!lx_timer_pending(timer))
        return 0;
    return detach_if_pending(base, timer, true);
}

/* ---- Expiry ------------------------------------------------------------ */

/* expire_timers: each timer detached, then its function called (which may
 * re-arm it) */
static void expire_timers(struct lx_timer **head)
{
    while (*head) {
        struct lx_timer *timer = *head;
        detach_timer(timer, true);
        timer->function(timer);
    }
}

/* collect_expired_timers */
static int collect_expired_timers(struct lx_base *base,
                                  struct lx_timer **heads)
{
    unsigned long clk = base->clk = base->next_expiry;
    int levels = 0;
    for (unsigned i = 0; i < base->depth; i++) {
        unsigned idx = (unsigned)((clk & LVL_MASK) + i * LX_LVL_SIZE);
        if (test_and_clear_bit(base, idx)) {
            hlist_move_list(&base->vectors[idx], heads++);
            levels++;
        }
        if (clk & LVL_CLK_MASK)
            break;
        clk >>= LVL_CLK_SHIFT;
    }
    return levels;
}

/* next_pending_bucket */
static int next_pending_bucket(const struct lx_base *base, unsigned offset,
                               unsigned clk)
{
    unsigned pos, start = offset + clk;
    unsigned end = offset + (unsigned)LX_LVL_SIZE;
    pos = find_next_bit(base, end, start);
    if (pos < end)
        return (int)(pos - start);
    pos = find_next_bit(base, start, offset);
    return pos < start ? (int)(pos + LX_LVL_SIZE - start) : -1;
}

/* __next_timer_interrupt */
static unsigned long next_timer_interrupt(struct lx_base *base)
{
    unsigned long clk, next, adj;
    unsigned lvl, offset = 0;
    next = base->clk + NEXT_TIMER_MAX_DELTA;
    clk = base->clk;
    for (lvl = 0; lvl < base->depth; lvl++, offset += LX_LVL_SIZE) {
        int pos = next_pending_bucket(base, offset,
                                      (unsigned)(clk & LVL_MASK));
        unsigned long lvl_clk = clk & LVL_CLK_MASK;
        if (pos >= 0) {
            unsigned long tmp = clk + (unsigned long)pos;
            tmp <<= LVL_SHIFT(lvl);
            if (time_before(tmp, next))
                next = tmp;
            if ((unsigned long)pos <= ((LVL_CLK_DIV - lvl_clk) &
                                       LVL_CLK_MASK))
                break;
        }
        adj = lvl_clk ? 1 : 0;
        clk >>= LVL_CLK_SHIFT;
        clk += adj;
    }
    base->next_expiry_recalc = false;
    base->timers_pending = !(next == base->clk + NEXT_TIMER_MAX_DELTA);
    return next;
}

/* __run_timers */
static void run_timers(struct lx_base *base)
{
    struct lx_timer *heads[LX_MAX_DEPTH];
    if (time_before(base->jiffies, base->next_expiry))
        return;
    while (!time_before(base->jiffies, base->clk) &&
           !time_before(base->jiffies, base->next_expiry)) {
        int levels = collect_expired_timers(base, heads);
        base->steps++;
        base->empty_steps += levels == 0;
        base->clk++;
        base->next_expiry = next_timer_interrupt(base);
        while (levels--)
            expire_timers(&heads[levels]);
    }
}

/* get_next_timer_interrupt(basej): the base's part (a fresh next_expiry,
 * the clock forwarded) */
static void go_idle(struct lx_base *base, unsigned long basej)
{
    if (base->next_expiry_recalc)
        base->next_expiry = next_timer_interrupt(base);
    unsigned long nextevt = base->next_expiry;
    if (time_after(basej, base->clk)) {
        if (time_after(nextevt, basej))
            base->clk = basej;
        else if (time_after(nextevt, base->clk))
            base->clk = nextevt;
    }
}

void lx_wake(struct lx_base *base, unsigned long jiffies)
{
    base->jiffies = jiffies;
    run_timers(base);
    go_idle(base, jiffies);
}
