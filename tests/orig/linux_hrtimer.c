/*
 * linux_hrtimer.c — Linux's hrtimers on one clock base transcribed into C
 * for the differential test of hrtree; see linux_hrtimer.h for what is
 * kept.  The red-black tree follows lib/rbtree.c case by case (insert cases
 * 1-3, erase cases 1-3 and the erase repair's cases 1-4, each mirrored), so
 * the tree has the kernel's shape after any sequence, and an insert's
 * descent compares the nodes the kernel's would.
 */
#include "linux_hrtimer.h"

#include <stddef.h>
#include <stdint.h>

#define RB_RED 0
#define RB_BLACK 1

typedef struct lx_rb_node node_t;

static node_t *rb_parent(const node_t *n)
{
    return (node_t *)(n->parent_color & ~(uintptr_t)3);
}

static int rb_color(const node_t *n) { return (int)(n->parent_color & 1); }
static bool rb_is_red(const node_t *n) { return rb_color(n) == RB_RED; }
static bool rb_is_black(const node_t *n) { return rb_color(n) == RB_BLACK; }
static void rb_set_black(node_t *n) { n->parent_color |= RB_BLACK; }

static void rb_set_parent(node_t *n, node_t *p)
{
    n->parent_color = (uintptr_t)rb_color(n) | (uintptr_t)p;
}

static void rb_set_parent_color(node_t *n, node_t *p, int color)
{
    n->parent_color = (uintptr_t)p | (uintptr_t)color;
}

/* __rb_change_child */
static void change_child(node_t *old, node_t *new, node_t *parent,
                         struct lx_hrtimer_base *root)
{
    if (parent) {
        if (parent->left == old)
            parent->left = new;
        else
            parent->right = new;
    } else {
        root->root = new;
    }
}

/* __rb_rotate_set_parents: new takes old's parent and colour; old gets new
 * as parent and `color`. */
static void rotate_set_parents(node_t *old, node_t *new,
                               struct lx_hrtimer_base *root, int color)
{
    node_t *parent = rb_parent(old);
    new->parent_color = old->parent_color;
    rb_set_parent_color(old, new, color);
    change_child(old, new, parent, root);
}

/* __rb_insert: node is linked red under its parent. */
static void rb_insert_color(node_t *node, struct lx_hrtimer_base *root)
{
    node_t *parent = rb_parent(node), *gparent, *tmp;
    for (;;) {
        if (!parent) {
            rb_set_parent_color(node, NULL, RB_BLACK);
            break;
        }
        if (rb_is_black(parent))
            break;
        gparent = rb_parent(parent);
        tmp = gparent->right;
        if (parent != tmp) { /* parent is gparent's left child */
            if (tmp && rb_is_red(tmp)) { /* case 1: colour flips */
                rb_set_parent_color(tmp, gparent, RB_BLACK);
                rb_set_parent_color(parent, gparent, RB_BLACK);
                node = gparent;
                parent = rb_parent(node);
                rb_set_parent_color(node, parent, RB_RED);
                continue;
            }
            tmp = parent->right;
            if (node == tmp) { /* case 2: left rotate at parent */
                parent->right = tmp = node->left;
                node->left = parent;
                if (tmp)
                    rb_set_parent_color(tmp, parent, RB_BLACK);
                rb_set_parent_color(parent, node, RB_RED);
                parent = node;
                tmp = node->right;
            }
            /* case 3: right rotate at gparent */
            gparent->left = tmp;
            parent->right = gparent;
            if (tmp)
                rb_set_parent_color(tmp, gparent, RB_BLACK);
            rotate_set_parents(gparent, parent, root, RB_RED);
            break;
        } else {
            tmp = gparent->left;
            if (tmp && rb_is_red(tmp)) { /* case 1 */
                rb_set_parent_color(tmp, gparent, RB_BLACK);
                rb_set_parent_color(parent, gparent, RB_BLACK);
                node = gparent;
                parent = rb_parent(node);
                rb_set_parent_color(node, parent, RB_RED);
                continue;
            }
            tmp = parent->left;
            if (node == tmp) { /* case 2: right rotate at parent */
                parent->left = tmp = node->right;
                node->right = parent;
                if (tmp)
                    rb_set_parent_color(tmp, parent, RB_BLACK);
                rb_set_parent_color(parent, node, RB_RED);
                parent = node;
                tmp = node->left;
            }
            /* case 3: left rotate at gparent */
            gparent->right = tmp;
            parent->left = gparent;
            if (tmp)
                rb_set_parent_color(tmp, gparent, RB_BLACK);
            rotate_set_parents(gparent, parent, root, RB_RED);
            break;
        }
    }
}

/* __rb_erase_color: the paths through parent on node's side are one black
 * short. */
static void rb_erase_color(node_t *parent, struct lx_hrtimer_base *root)
{
    node_t *node = NULL, *sibling, *tmp1, *tmp2;
    for (;;) {
        sibling = parent->right;
        if (node != sibling) { /* node is parent's left child */
            if (rb_is_red(sibling)) { /* case 1: left rotate at parent */
                parent->right = tmp1 = sibling->left;
                sibling->left = parent;
                rb_set_parent_color(tmp1, parent, RB_BLACK);
                rotate_set_parents(parent, sibling, root, RB_RED);
                sibling = tmp1;
            }
            tmp1 = sibling->right;
            if (!tmp1 || rb_is_black(tmp1)) {
                tmp2 = sibling->left;
                if (!tmp2 || rb_is_black(tmp2)) { /* case 2: flip */
                    rb_set_parent_color(sibling, parent, RB_RED);
                    if (rb_is_red(parent)) {
                        rb_set_black(parent);
                    } else {
                        node = parent;
                        parent = rb_parent(node);
                        if (parent)
                            continue;
                    }
                    break;
                }
                /* case 3: right rotate at sibling */
                sibling->left = tmp1 = tmp2->right;
                tmp2->right = sibling;
                parent->right = tmp2;
                if (tmp1)
                    rb_set_parent_color(tmp1, sibling, RB_BLACK);
                tmp1 = sibling;
                sibling = tmp2;
            }
            /* case 4: left rotate at parent, colour flips */
            parent->right = tmp2 = sibling->left;
            sibling->left = parent;
            rb_set_parent_color(tmp1, sibling, RB_BLACK);
            if (tmp2)
                rb_set_parent(tmp2, parent);
            rotate_set_parents(parent, sibling, root, RB_BLACK);
            break;
        } else {
            sibling = parent->left;
            if (rb_is_red(sibling)) { /* case 1: right rotate at parent */
                parent->left = tmp1 = sibling->right;
                sibling->right = parent;
                rb_set_parent_color(tmp1, parent, RB_BLACK);
                rotate_set_parents(parent, sibling, root, RB_RED);
                sibling = tmp1;
            }
            tmp1 = sibling->left;
            if (!tmp1 || rb_is_black(tmp1)) {
                tmp2 = sibling->right;
                if (!tmp2 || rb_is_black(tmp2)) { /* case 2 */
                    rb_set_parent_color(sibling, parent, RB_RED);
                    if (rb_is_red(parent)) {
                        rb_set_black(parent);
                    } else {
                        node = parent;
                        parent = rb_parent(node);
                        if (parent)
                            continue;
                    }
                    break;
                }
                /* case 3: left rotate at sibling */
                sibling->right = tmp1 = tmp2->left;
                tmp2->left = sibling;
                parent->left = tmp2;
                if (tmp1)
                    rb_set_parent_color(tmp1, sibling, RB_BLACK);
                tmp1 = sibling;
                sibling = tmp2;
            }
            /* case 4: right rotate at parent, colour flips */
            parent->left = tmp2 = sibling->right;
            sibling->right = parent;
            rb_set_parent_color(tmp1, sibling, RB_BLACK);
            if (tmp2)
                rb_set_parent(tmp2, parent);
            rotate_set_parents(parent, sibling, root, RB_BLACK);
            break;
        }
    }
}

/* __rb_erase */
static void rb_erase(node_t *node, struct lx_hrtimer_base *root)
{
    node_t *child = node->right, *tmp = node->left;
    node_t *parent, *rebalance;
    uintptr_t pc;
    if (!tmp) { /* case 1: at most a right child */
        pc = node->parent_color;
        parent = (node_t *)(pc & ~(uintptr_t)3);
        change_child(node, child, parent, root);
        if (child) {
            child->parent_color = pc;
            rebalance = NULL;
        } else {
            rebalance = (pc & 1) == RB_BLACK ? parent : NULL;
        }
    } else if (!child) { /* case 1 with the left child */
        tmp->parent_color = pc = node->parent_color;
        parent = (node_t *)(pc & ~(uintptr_t)3);
        change_child(node, tmp, parent, root);
        rebalance = NULL;
    } else {
        node_t *successor = child, *child2;
        tmp = child->left;
        if (!tmp) { /* case 2: the successor is the right child */
            parent = successor;
            child2 = successor->right;
        } else { /* case 3: the leftmost of the right subtree */
            do {
                parent = successor;
                successor = tmp;
                tmp = tmp->left;
            } while (tmp);
            parent->left = child2 = successor->right;
            successor->right = child;
            rb_set_parent(child, successor);
        }
        successor->left = tmp = node->left;
        rb_set_parent(tmp, successor);
        pc = node->parent_color;
        tmp = (node_t *)(pc & ~(uintptr_t)3);
        change_child(node, successor, tmp, root);
        if (child2) {
            successor->parent_color = pc;
            rb_set_parent_color(child2, parent, RB_BLACK);
            rebalance = NULL;
        } else {
            uintptr_t pc2 = successor->parent_color;
            successor->parent_color = pc;
            rebalance = (pc2 & 1) == RB_BLACK ? parent : NULL;
        }
    }
    if (rebalance)
        rb_erase_color(rebalance, root);
}

/* rb_next */
static node_t *rb_next(node_t *node)
{
    node_t *parent;
    if (node->right) {
        node = node->right;
        while (node->left)
            node = node->left;
        return node;
    }
    while ((parent = rb_parent(node)) && node == parent->right)
        node = parent;
    return parent;
}

static struct lx_hrtimer *timer_of(node_t *n)
{
    return (struct lx_hrtimer *)(void *)n;
}

/* timerqueue_add: rb_add_cached with __timerqueue_less (strictly earlier
 * goes left; equal goes right). */
static void timerqueue_add(struct lx_hrtimer_base *base,
                           struct lx_hrtimer *timer)
{
    node_t **link = &base->root, *parent = NULL, *node = &timer->node;
    bool leftmost = true;
    while (*link) {
        parent = *link;
        base->visits++;
        if (timer->expires < timer_of(parent)->expires) {
            link = &parent->left;
        } else {
            link = &parent->right;
            leftmost = false;
        }
    }
    node->parent_color = (uintptr_t)parent; /* rb_link_node: red */
    node->left = node->right = NULL;
    *link = node;
    if (leftmost)
        base->leftmost = node;
    rb_insert_color(node, base);
}

/* timerqueue_del: rb_erase_cached */
static void timerqueue_del(struct lx_hrtimer_base *base,
                           struct lx_hrtimer *timer)
{
    node_t *node = &timer->node;
    if (base->leftmost == node)
        base->leftmost = rb_next(node);
    rb_erase(node, base);
}

void lx_hrtimer_base_init(struct lx_hrtimer_base *base)
{
    base->expires_next = INT64_MAX;
    base->next_timer = NULL;
}

/* hrtimer_update_next_event: the first timer's hard expiry, and which
 * timer that is (cpu_base->next_timer). */
static int64_t update_next_event(struct lx_hrtimer_base *base)
{
    if (!base->leftmost) {
        base->next_timer = NULL;
        return INT64_MAX;
    }
    base->next_timer = timer_of(base->leftmost);
    return base->next_timer->expires;
}

/* hrtimer_force_reprogram(cpu_base, skip_equal = 1): the device follows
 * the first timer, later as well as earlier. */
static void force_reprogram(struct lx_hrtimer_base *base)
{
    int64_t next = update_next_event(base);
    if (next == base->expires_next)
        return;
    base->expires_next = next;
}

/* hrtimer_reprogram: an enqueued timer earlier than the programmed event
 * becomes it; not from inside the interrupt, which reprograms at its end. */
static void reprogram(struct lx_hrtimer_base *base, struct lx_hrtimer *timer)
{
    if (base->in_hrtirq || timer->expires >= base->expires_next)
        return;
    base->next_timer = timer;
    base->expires_next = timer->expires;
}

/* enqueue_hrtimer: returns whether the timer is the new first one */
static bool enqueue_hrtimer(struct lx_hrtimer_base *base,
                            struct lx_hrtimer *timer)
{
    timer->enqueued = true;
    timer->base = base;
    base->queued++;
    timerqueue_add(base, timer);
    return base->leftmost == &timer->node;
}

/* __remove_hrtimer: a removed programmed timer reprograms (not inside the
 * interrupt: __run_hrtimer removes with reprogram = 0, and the interrupt
 * reprograms at its end) */
static void remove_hrtimer(struct lx_hrtimer_base *base,
                           struct lx_hrtimer *timer, bool reprogram_dev)
{
    timer->enqueued = false;
    base->queued--;
    timerqueue_del(base, timer);
    if (reprogram_dev && !base->in_hrtirq && timer == base->next_timer)
        force_reprogram(base);
}

void lx_hrtimer_start_range_ns(struct lx_hrtimer_base *base,
                               struct lx_hrtimer *timer, int64_t tim,
                               int64_t delta)
{
    /* __hrtimer_start_range_ns: the programmed timer is removed without a
     * reprogram and the device is force-reprogrammed after the enqueue
     * (force_local); any other is removed (no reprogram: not the next
     * timer) and enqueued, and hrtimer_reprogram runs if it is first */
    bool force_local = timer->enqueued && timer == base->next_timer;
    if (timer->enqueued)
        remove_hrtimer(base, timer, !force_local);
    timer->softexpires = tim;
    timer->expires = tim + delta; /* hrtimer_set_expires_range_ns */
    bool first = enqueue_hrtimer(base, timer);
    if (force_local) {
        if (!base->in_hrtirq)
            force_reprogram(base);
    } else if (first) {
        reprogram(base, timer);
    }
}

int lx_hrtimer_try_to_cancel(struct lx_hrtimer_base *base,
                             struct lx_hrtimer *timer)
{
    if (!timer->enqueued)
        return 0;
    remove_hrtimer(base, timer, true);
    return 1;
}

int64_t lx_hrtimer_next_event(const struct lx_hrtimer_base *base)
{
    return base->expires_next;
}

/* __hrtimer_run_queues(now) with __run_hrtimer: the first timer runs while
 * its soft expiry is not after `now`; a timer its callback restarted is
 * queued already and stays so. */
static long run_queues(struct lx_hrtimer_base *base, int64_t now)
{
    long ran = 0;
    node_t *node;
    while ((node = base->leftmost) != NULL) {
        struct lx_hrtimer *timer = timer_of(node);
        if (now < timer->softexpires)
            break;
        remove_hrtimer(base, timer, false);
        enum lx_hrtimer_restart restart = timer->function(timer);
        if (restart != LX_HRTIMER_NORESTART && !timer->enqueued)
            enqueue_hrtimer(base, timer);
        ran++;
    }
    return ran;
}

long lx_hrtimer_interrupt(struct lx_hrtimer_base *base)
{
    long ran = 0;
    base->interrupts++;
    int64_t now = base->get_time(base->ctx); /* hrtimer_update_base */
    for (;;) {
        base->in_hrtirq = true;
        base->expires_next = INT64_MAX;
        ran += run_queues(base, now);
        int64_t next = update_next_event(base);
        base->expires_next = next;
        base->in_hrtirq = false;
        /* tick_program_event(next, 0) fails for an event not in the
         * future: retry with the clock read anew */
        now = base->get_time(base->ctx);
        if (next == INT64_MAX || next > now)
            return ran;
    }
}

/* ktime_add_safe: a sum that overflows becomes KTIME_SEC_MAX seconds */
static int64_t add_safe(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r) || r < 0)
        return INT64_MAX / 1000000000 * 1000000000;
    return r;
}

uint64_t lx_hrtimer_forward(struct lx_hrtimer *timer, int64_t now,
                            int64_t interval)
{
    uint64_t orun = 1;
    int64_t delta = now - timer->expires;
    if (delta < 0)
        return 0;
    if (delta >= interval) {
        orun = (uint64_t)(delta / interval);
        timer->expires += interval * (int64_t)orun;
        timer->softexpires += interval * (int64_t)orun;
        if (timer->expires > now)
            return orun;
        orun++;
    }
    /* hrtimer_add_expires: ktime_add_safe, which saturates at
     * ktime_set(KTIME_SEC_MAX, 0) */
    timer->expires = add_safe(timer->expires, interval);
    timer->softexpires = add_safe(timer->softexpires, interval);
    return orun;
}

uint64_t lx_hrtimer_forward_now(struct lx_hrtimer *timer, int64_t interval)
{
    return lx_hrtimer_forward(timer, lx_hrtimer_cb_get_time(timer), interval);
}

int64_t lx_hrtimer_cb_get_time(const struct lx_hrtimer *timer)
{
    return timer->base->get_time(timer->base->ctx);
}
