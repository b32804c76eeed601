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

/* enqueue_hrtimer / __remove_hrtimer */
static void enqueue_hrtimer(struct lx_hrtimer_base *base,
                            struct lx_hrtimer *timer)
{
    timer->enqueued = true;
    timerqueue_add(base, timer);
}

static void remove_hrtimer(struct lx_hrtimer_base *base,
                           struct lx_hrtimer *timer)
{
    timer->enqueued = false;
    timerqueue_del(base, timer);
}

void lx_hrtimer_start_range_ns(struct lx_hrtimer_base *base,
                               struct lx_hrtimer *timer, int64_t tim,
                               int64_t delta)
{
    if (timer->enqueued)
        remove_hrtimer(base, timer);
    timer->softexpires = tim;
    timer->expires = tim + delta; /* hrtimer_set_expires_range_ns */
    enqueue_hrtimer(base, timer);
}

int lx_hrtimer_try_to_cancel(struct lx_hrtimer_base *base,
                             struct lx_hrtimer *timer)
{
    if (!timer->enqueued)
        return 0;
    remove_hrtimer(base, timer);
    return 1;
}

long lx_hrtimer_run_queues(struct lx_hrtimer_base *base, int64_t now)
{
    long ran = 0;
    node_t *node;
    while ((node = base->leftmost) != NULL) {
        struct lx_hrtimer *timer = timer_of(node);
        if (now < timer->softexpires)
            break;
        /* __run_hrtimer */
        remove_hrtimer(base, timer);
        enum lx_hrtimer_restart restart = timer->function(timer, now);
        if (restart != LX_HRTIMER_NORESTART && !timer->enqueued)
            enqueue_hrtimer(base, timer);
        ran++;
    }
    return ran;
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
    timer->expires += interval; /* hrtimer_add_expires */
    timer->softexpires += interval;
    return orun;
}
