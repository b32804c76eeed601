/* cgops.c — one implementation of ../shared/peers, one N, under callgrind:
 * the add, exp1000 and cancel phases each dumped separately (collection on
 * only inside the phase; the cache simulator sees everything, so the
 * caches are warm as in the driver).  Same delays and cancel order as the
 * driver's main.c (run 0).  Run it through cgops.sh. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <valgrind/callgrind.h>
#include "common.h"
#include "timerbench/scheduler.h"

struct fire_state g_fire;
static uint64_t sm_state;
static uint64_t splitmix64(void) {
	uint64_t z = (sm_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
int fire_poll(void) { return 0; }
static void fire_arm(void) {
	g_fire.fired = 0; g_fire.min_late = INT64_MAX; g_fire.max_late = INT64_MIN;
	g_fire.cut = 0; g_fire.deadline_ns = 1e300;
}
/* "floor": the interface alone (tb_backend_floor, not in the registry, so
 * the peers adapter never sees it), driven by the same loops as
 * adapt_timerbench.c's fill and cancel, so that its count is what every
 * backend's row there pays before its structure works.  It runs nothing:
 * no exp1000 phase (set CGOPS_NOEXP). */
struct fctx { struct tb_sched *s; tb_handle *h; int64_t scale; long errs; };
static int f_task(void *arg) { (void)arg; return 0; }
static void *f_create(size_t n) {
	struct fctx *c = calloc(1, sizeof *c);
	struct tb_config cfg = { .clock = TB_CLOCK_VIRTUAL };
	if (!c || tb_create(&tb_backend_floor, &cfg, &c->s) != TB_OK || tb_reserve(c->s, n) != TB_OK) abort();
	if (!(c->h = calloc(n ? n : 1, sizeof *c->h))) abort();
	c->scale = 1; /* kept, as the adapter keeps a ticked backend's */
	return c;
}
static void f_fill(void *ctx, const uint64_t *delay, size_t n) {
	struct fctx *c = ctx;
	struct tb_sched *s = c->s;
	int64_t scale = c->scale, base = tb_now(s);
	long errs = 0;
	for (size_t i = 0; i < n; i++) {
		int64_t d = (int64_t)delay[i] * scale;
		errs += tb_schedule(s, d, f_task, (void *)(intptr_t)(base + d), &c->h[i]) != TB_OK;
	}
	c->errs += errs;
}
static void f_cancel(void *ctx, const uint32_t *perm, size_t n) {
	struct fctx *c = ctx;
	struct tb_sched *s = c->s;
	long errs = 0;
	for (size_t i = 0; i < n; i++) errs += tb_cancel(s, c->h[perm[i]]) != 1;
	c->errs += errs;
}
static void f_expire(void *ctx, uint64_t step, size_t n, struct exp_result *r) {
	(void)ctx; (void)step; (void)n; (void)r;
	fprintf(stderr, "floor: no expiry (set CGOPS_NOEXP=1)\n");
	exit(2);
}
static size_t f_pending(void *ctx) { return tb_pending(((struct fctx *)ctx)->s); }
static int f_errors(void *ctx) { return ((struct fctx *)ctx)->errs != 0; }
static void f_destroy(void *ctx) {
	struct fctx *c = ctx;
	tb_destroy(c->s);
	free(c->h);
	free(c);
}
static const struct impl impl_floor = {
	.name = "floor", .create = f_create, .fill = f_fill, .cancel = f_cancel,
	.expire = f_expire, .pending = f_pending, .destroy = f_destroy,
	.node_size = 0, .errors = f_errors,
};

int main(int argc, char **argv) {
	if (argc < 3) { fprintf(stderr, "usage: cgops IMPL N [add|exp1000|cancel]\n"); return 2; }
	const struct impl *all[40]; size_t k = 0;
	all[k++] = &impl_wahern; all[k++] = &impl_ratas; all[k++] = &impl_libevent; all[k++] = &impl_libuv;
	all[k++] = &impl_bsdtree; all[k++] = &impl_floor;
	int m = tb_adapters_init(all + k, 40 - k);
	if (m < 0) return 1;
	k += (size_t)m;
	const struct impl *im = NULL;
	for (size_t i = 0; i < k; i++) if (!strcmp(all[i]->name, argv[1])) im = all[i];
	if (!im) { fprintf(stderr, "no impl %s\n", argv[1]); return 2; }
	size_t n = strtoul(argv[2], NULL, 10);
	const char *only = argc > 3 ? argv[3] : NULL; /* one phase, no dumps */
#define PH(name) (!only || !strcmp(only, name))
#define DUMP(name) do { if (!only) CALLGRIND_DUMP_STATS_AT(name); } while (0)
	uint64_t *delay = malloc(n * sizeof *delay);
	uint32_t *perm = malloc(n * sizeof *perm);
	sm_state = 0x1234567ull + n;
	for (size_t i = 0; i < n; i++) delay[i] = 1 + splitmix64() % MAXDELAY;
	for (size_t i = 0; i < n; i++) perm[i] = (uint32_t)i;
	for (size_t i = n - 1; i > 0; i--) { size_t j = splitmix64() % (i + 1); uint32_t t = perm[i]; perm[i] = perm[j]; perm[j] = t; }
	struct exp_result er;
	void *c = im->create(n);
	if (PH("add")) CALLGRIND_TOGGLE_COLLECT;
	im->fill(c, delay, n);
	if (PH("add")) CALLGRIND_TOGGLE_COLLECT;
	DUMP("add");
	fire_arm();
	/* CGOPS_NOEXP set: no exp1000 phase (a wheel whose delays span
	 * thousands of revolutions, timerwheel at 10^6, takes hours under
	 * callgrind there; add and cancel are unaffected) */
	int noexp = getenv("CGOPS_NOEXP") != NULL;
	if (!noexp) {
		if (PH("exp1000")) CALLGRIND_TOGGLE_COLLECT;
		im->expire(c, 1000, n, &er);
		if (PH("exp1000")) CALLGRIND_TOGGLE_COLLECT;
		DUMP("exp1000");
		if (er.fired != n || er.min_late < 0) { fprintf(stderr, "FAIL exp %zu\n", er.fired); return 1; }
	}
	im->destroy(c);
	c = im->create(n);
	im->fill(c, delay, n);
	if (PH("cancel")) CALLGRIND_TOGGLE_COLLECT;
	im->cancel(c, perm, n);
	if (PH("cancel")) CALLGRIND_TOGGLE_COLLECT;
	DUMP("cancel");
	if (im->pending(c) != 0 || (im->errors && im->errors(c))) { fprintf(stderr, "FAIL cancel\n"); return 1; }
	im->destroy(c);
	printf("%s N=%zu ok\n", im->name, n);
	return 0;
}
