/*
 * bench/replay.c — timerbench-replay: replays timer traces (the D4 format,
 * bench/README.md "Replay") on every backend's virtual clock and writes
 * what each backend did with them as JSON (replay.json).
 *
 *     timerbench-replay [--backends a,b] [--reps R] [--tick NS] [--out FILE]
 *                       [--lateness SPEC] [--no-sweep] [--sweep-reps R]
 *                       [--parse-only] [--quiet] TRACE...
 *   (--skip-cancel K[@NAME], for the tests only, withholds the K-th cancel
 *   of each pass (on backend NAME only) from the backend, to show that the
 *   checks catch the extra run and that one backend's failure spares the
 *   others;
 *   --total-only runs one checked total pass per trace and backend and
 *   writes no JSON: what bench/replay.py --counts runs under Valgrind)
 *
 * A trace is parsed whole first: every rule of the format is checked there
 * (errors name FILE:LINE, exit 2) and every id is resolved to one timer
 * instance, so that all backends get exactly the same calls.  "Live" is
 * decided by the trace's own clock: a one-shot is live until its deadline
 * (the replay advances to an event's time before its op, so a timer due at
 * that very time has fired), a periodic timer until it is cancelled.  A
 * cancel of an id that is not live is counted (cancel_unknown) and not
 * issued; a reschedule of one is counted (reschedule_unknown) and issued as
 * a schedule; a reschedule of a live id is the backend's own re-arm
 * (tb_reschedule: Go's Timer.Reset, the kernel's mod_timer) where it has
 * one and the timer is a one-shot, else tb_cancel + tb_schedule with the new
 * delay (one-shot, as D4 says), timed as one operation either way.
 *
 * Per backend (wheels at a common 1 ms tick by default, as the benchmarks'
 * head-to-head series; heaps with their originals' policies) three kinds of
 * pass run, each on a fresh scheduler:
 *   - check (once): advances in fine steps (to every expected deadline, and
 *     tick by tick while something due has not fired), so each fire is
 *     seen at the first moment the backend runs it: its lateness, in ns and
 *     in the backend's ticks, is exact (0 for the heaps, as measured, not
 *     assumed); pending is sampled over the trace's time and the bytes held
 *     are read whenever pending reaches a new peak.
 *   - total (R times): advances to each event's time, then the op, with
 *     no clock read inside: wall and thread CPU time of the whole replay.
 *   - per kind (R times): the same calls, with runs of consecutive ops of
 *     one kind at one instant timed as one batch (two monotonic clock
 *     reads, their calibrated cost subtracted once per batch), and each
 *     advance timed alone (its time divided by the timers it fired gives
 *     the expiry cost).  Splitting the passes keeps the clock reads out of
 *     the total.
 * The repetitions interleave backends (rep 1 of every backend, then rep 2,
 * ...) so that a slow phase of the machine hits all of them.
 * After the last event the clock moves on until every uncancelled one-shot
 * has fired; each periodic timer still live is cancelled at the trace's end
 * time plus its period (its fires are counted).
 *
 * Budgets (issue 27, format v2): a timer's lateness budget is its trace
 * slack, or the --lateness SPEC for every timer when given; a one-shot
 * with a budget is scheduled with tb_schedule_range, and on a backend that
 * honours budgets (TB_CAP_RANGE) the check pass waits for it until its
 * hard expiry (deadline + budget) rather than its deadline, as the
 * hrtimer interrupt is programmed for the hard expiry; a reschedule of such
 * a timer there is a cancel and a ranged schedule (the in-place re-arm has
 * no range).  Every fire is compared with its budget (beyond_budget).
 * The tick sweep then replays each ticked backend at ticks 1 us .. 100 ms,
 * and kernelwheel also at the jiffy of a kernel trace that names its HZ
 * (a check pass and --sweep-reps total passes per point; run_sweep).
 *
 * Every pass is checked: a one-shot the trace leaves uncancelled fires
 * exactly once, a cancelled one never, no fire is early, and every cancel
 * of a live timer succeeds.  A failed check fails that backend only: its
 * entry in the JSON carries the error instead of numbers, the other
 * backends are replayed and written as usual, and the exit status is 1.
 *
 * Bounds, so that no trace can take unbounded time or memory: a line is at
 * most MAX_LINE bytes, a field at most MAX_DIGITS digits, every time, delay
 * and period below 2^62 ns, and the periodic timers of one trace may make
 * at most MAX_PERIODIC_RUNS runs between them (counted at parse time, as
 * the replay runs them); a path that is not a regular file is refused
 * before it is opened for reading.  Waiting for a timer that is due but has
 * not run steps tick by tick, then in doubling strides (STRIDE_STEPS), so
 * that a coarse level of the kernel's wheel (32.8 s for a 2 h timer at a
 * 1 ms tick) costs thousands of steps, not millions.  The strides follow
 * the latest deadline waited for and stop at the next expected one
 * (next_wait_step), so a timer due meanwhile is still seen at its tick.
 */
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <inttypes.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

#define MAX_BACKENDS 32
#define PENDING_SAMPLES 400   /* points of the pending-over-time series */
#define DELAY_CDF_POINTS 200  /* points of the delay distribution */
/* After the last deadline, a timer a backend has not run within this many
 * of its ticks (or ms for a backend without ticks), plus 1/7 of its delay
 * for a backend whose levels are coarser than its tick (TB_CAP_GRANULAR:
 * at most 8/63 of the delay), never will: error. */
#define DRAIN_STEPS 4096
/* While a due timer has not run, the clock moves tick by tick for this many
 * steps, then by 2 ticks for as many, then 4, ...: each stride ends on a
 * multiple of itself (ticks counted from 0, as the wheels count them), so a
 * wheel whose coarse levels run on multiples of a power of two ticks (the
 * kernel's: 8^n) is still seen at the exact tick it runs a timer. */
#define STRIDE_STEPS 4096
/* The trace format's bounds (bench/README.md, "The format"); the Python
 * reader (tbkit/trace.py, command tools/tb_trace.py) keeps the same. */
#define MAX_LINE 4096            /* bytes of a line, without its LF or CR LF */
#define MAX_DIGITS 20            /* digits of a field */
#define MAX_PERIODIC_RUNS 10000000 /* runs of all periodic timers, a trace */
#define SHOWN_BYTES 40           /* of a bad field, echoed in its error */
/* The tick sweep (bench/README.md, "The tick sweep"): every ticked backend
 * at each of SWEEP_TICKS.  What a point costs, measured (development
 * machine): crossing empty ticks is cheap (Netty's wheel, which visits
 * each, under 3 ns a tick; the others jump them), but the check pass
 * waits for a granular wheel (the kernel's) tick by tick, then in strides,
 * for every timer its level holds back: 1.2 10^8 such steps took 3.9 s
 * (30,000 timers of 50 ms at a 1 us tick).  So a point is skipped when
 * the check pass's steps, estimated before it runs (sweep_steps), pass
 * SWEEP_MAX_STEPS (about 0.6 s), or its clock would cross more than
 * SWEEP_MAX_TICKS ticks (about 0.6 s a pass on Netty's wheel). */
#define SWEEP_MAX_STEPS 20000000   /* the default of --sweep-max-steps */
#define SWEEP_MAX_TICKS 200000000  /* the default of --sweep-max-ticks */
static const int64_t SWEEP_TICKS[] = {TB_US, 10 * TB_US, 100 * TB_US, TB_MS,
                                      10 * TB_MS, 100 * TB_MS};
static const char *const SWEEP_TICK_NAMES[] = {"1us", "10us", "100us", "1ms",
                                               "10ms", "100ms"};
#define NSWEEP_TICKS (sizeof SWEEP_TICKS / sizeof SWEEP_TICKS[0])
/* and, for kernelwheel, the jiffy of a kernel trace (own_jiffy) */
#define SWEEP_POINTS (NSWEEP_TICKS + 1)

/* K_ADVANCE: a clock advance, per call (the tasks it runs included);
 * K_EXPIRE: the same time per timer fired. */
enum kind { K_SCHEDULE, K_PERIODIC, K_CANCEL, K_RESCHEDULE, K_EXPIRE,
            K_ADVANCE, K_COUNT };
static const char *const kind_names[K_COUNT] = {
    "schedule", "periodic", "cancel", "reschedule", "expire", "advance"};

/* ---- The parsed trace --------------------------------------------------- */

struct event {
    int64_t t;        /* ns */
    int64_t delay;    /* ns, schedules */
    uint32_t inst;    /* timer scheduled (or cancelled, for K_CANCEL) */
    uint32_t old;     /* K_RESCHEDULE: the timer it cancels */
    uint8_t kind;     /* K_SCHEDULE .. K_RESCHEDULE */
};

struct inst {
    int64_t deadline; /* first due time, ns */
    int64_t period;   /* ns, 0 for one-shots */
    int64_t slack;    /* the trace's slack (v2), ns; -1 = none given */
    int64_t budget;   /* the lateness budget applied (the slack, or
                         --lateness), ns; -1 = none */
    uint64_t id;      /* the trace's id */
    long line;        /* where it was scheduled */
    int64_t ended;    /* trace time it was cancelled, -1 if never */
};

struct trace {
    const char *path;
    int version;                /* 1, or 2 (the slack column) */
    char unit[4];
    int64_t unit_ns;
    char **comments;
    size_t ncomments;
    struct event *ev;
    size_t nev, cev;
    struct inst *in;
    size_t nin, cin;
    uint64_t ops[4];            /* schedule, periodic, cancel, reschedule
                                   as lines of the trace */
    uint64_t cancel_unknown, reschedule_unknown;
    uint64_t cancelled;         /* timers ended by a cancel or reschedule */
    int64_t *delays;            /* every scheduled delay, ns */
    size_t ndelays;
    long lines;
    int64_t t_first, t_last;    /* times of the first and last event lines
                                   (replayed or not), ns */
    uint64_t periodic_runs;     /* the runs its periodic timers will make */
    int64_t horizon;            /* the latest time the replay's clock must
                                   reach: deadlines, periodic stops, ns */
};

static void die_oom(void)
{
    fprintf(stderr, "timerbench-replay: out of memory\n");
    exit(1);
}

static void *xrealloc(void *p, size_t n)
{
    p = realloc(p, n ? n : 1);
    if (!p)
        die_oom();
    return p;
}

/* id -> instance (+1; 0 = empty): open addressing, never shrinks; a reused
 * id overwrites its entry. */
struct idmap {
    uint64_t *keys;
    uint32_t *vals;
    size_t cap, n;
};

static size_t id_hash(uint64_t k, size_t cap)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & (cap - 1);
}

static uint32_t *idmap_slot(struct idmap *m, uint64_t k, bool insert)
{
    if (insert && (m->n + 1) * 2 > m->cap) {
        struct idmap g = {0};
        g.cap = m->cap ? m->cap * 2 : 1024;
        g.keys = xrealloc(NULL, g.cap * sizeof *g.keys);
        g.vals = calloc(g.cap, sizeof *g.vals);
        if (!g.vals)
            die_oom();
        for (size_t i = 0; i < m->cap; i++)
            if (m->vals[i])
                *idmap_slot(&g, m->keys[i], true) = m->vals[i];
        g.n = m->n;
        free(m->keys);
        free(m->vals);
        *m = g;
    }
    if (!m->cap)
        return NULL;
    for (size_t i = id_hash(k, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (!m->vals[i]) {
            if (!insert)
                return NULL;
            m->keys[i] = k;
            m->n++;
            return &m->vals[i];
        }
        if (m->keys[i] == k)
            return &m->vals[i];
    }
}

static const char *g_path;
static long g_line;
/* What parse_trace holds, so that an error exit frees it (the sanitizer
 * builds run the bad-trace tests with leak detection on). */
static struct trace *g_trs;
static size_t g_ntr;
static struct idmap g_ids;
static char g_buf[MAX_LINE + 2]; /* a line, its CR, and the NUL */
static FILE *g_file;

static void free_trace(struct trace *tr)
{
    for (size_t i = 0; i < tr->ncomments; i++)
        free(tr->comments[i]);
    free(tr->comments);
    free(tr->ev);
    free(tr->in);
    free(tr->delays);
    memset(tr, 0, sizeof *tr);
}

static void free_parsing(void)
{
    for (size_t t = 0; t < g_ntr; t++)
        free_trace(&g_trs[t]);
    free(g_trs);
    g_trs = NULL;
    g_ntr = 0;
    free(g_ids.keys);
    free(g_ids.vals);
    memset(&g_ids, 0, sizeof g_ids);
    if (g_file)
        fclose(g_file);
    g_file = NULL;
}

/* A refused trace: "FILE:LINE: why" (g_refusal) on stderr, exit 2.  The
 * trace reader's fuzz target (tests/fuzz/trace_target.c) includes this file
 * with TB_REPLAY_FUZZ defined: there main is left out, nothing is printed
 * and a refusal jumps back to the target (g_refused), which checks the
 * message. */
static char g_refusal[1024];
#ifdef TB_REPLAY_FUZZ
static jmp_buf g_refused;
#endif

static void __attribute__((noreturn)) refuse(void)
{
    free_parsing();
#ifdef TB_REPLAY_FUZZ
    longjmp(g_refused, 2);
#else
    fprintf(stderr, "%s\n", g_refusal);
    exit(2);
#endif
}

static void __attribute__((noreturn, format(printf, 1, 2)))
bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(g_refusal, sizeof g_refusal, "%s:%ld: ", g_path,
                     g_line);
    if (n >= 0 && (size_t)n < sizeof g_refusal)
        vsnprintf(g_refusal + n, sizeof g_refusal - (size_t)n, fmt, ap);
    va_end(ap);
    refuse();
}

/* At most SHOWN_BYTES bytes of `s` for an error message, every byte that
 * is not printable ASCII as \xNN, "..." after a cut: an error is always
 * short ASCII, whatever the file holds.  Two buffers in turn, so that one
 * message can show two fields. */
static const char *shown(const char *s)
{
    static char bufs[2][SHOWN_BYTES * 4 + 4];
    static int turn;
    char *out = bufs[turn ^= 1], *o = out;
    const unsigned char *p = (const unsigned char *)s;
    for (size_t n = 0; *p && n < SHOWN_BYTES; p++, n++) {
        if (*p >= 0x20 && *p < 0x7f) {
            *o++ = (char)*p;
        } else {
            static const char hex[] = "0123456789abcdef";
            *o++ = '\\';
            *o++ = 'x';
            *o++ = hex[*p >> 4];
            *o++ = hex[*p & 15];
        }
    }
    if (*p)
        o = stpcpy(o, "...");
    *o = '\0';
    return out;
}

/* A non-negative integer field: digits only (no sign, no space), at most
 * MAX_DIGITS of them, at most `max`; `what` names it in the error. */
static int64_t parse_int(const char *f, const char *what, int64_t max)
{
    if (!*f)
        bad("%s is empty", what);
    size_t n = strspn(f, "0123456789");
    if (f[n]) {
        if (f[0] == '-' && f[1] && !f[1 + strspn(f + 1, "0123456789")] &&
            f[1 + strspn(f + 1, "0")])
            bad("%s %s is negative", what, shown(f));
        bad("%s '%s' is not an integer (digits only: no sign, space or "
            "point)", what, shown(f));
    }
    if (n > MAX_DIGITS)
        bad("%s %s is out of range (%zu digits, more than %d)", what,
            shown(f), n, MAX_DIGITS);
    uint64_t v = 0;
    bool over = false;
    for (const char *q = f; *q; q++) {
        over |= __builtin_mul_overflow(v, 10, &v);
        over |= __builtin_add_overflow(v, (uint64_t)(*q - '0'), &v);
    }
    if (over || v > (uint64_t)max)
        bad("%s %s is out of range (at most %" PRId64 ")", what, shown(f),
            max);
    return (int64_t)v;
}

/* A value in the trace's unit, to ns: it must be below 2^62 ns, the
 * library's TB_MAX_DELAY, so that no sum of two overflows the clock. */
static int64_t to_ns(const struct trace *tr, int64_t v, const char *what)
{
    if (v > (TB_MAX_DELAY - 1) / tr->unit_ns)
        bad("%s %" PRId64 " %s is too large (it must be below 2^62 ns)", what,
            v, tr->unit);
    return v * tr->unit_ns;
}

static struct event *push_event(struct trace *tr)
{
    if (tr->nev == tr->cev) {
        tr->cev = tr->cev ? tr->cev * 2 : 1024;
        tr->ev = xrealloc(tr->ev, tr->cev * sizeof *tr->ev);
    }
    struct event *e = &tr->ev[tr->nev++];
    memset(e, 0, sizeof *e);
    return e;
}

static uint32_t new_inst(struct trace *tr, uint64_t id, int64_t t,
                         int64_t delay, int64_t period, int64_t slack)
{
    if (tr->nin == tr->cin) {
        tr->cin = tr->cin ? tr->cin * 2 : 1024;
        tr->in = xrealloc(tr->in, tr->cin * sizeof *tr->in);
        tr->delays = xrealloc(tr->delays, tr->cin * sizeof *tr->delays);
    }
    if (tr->nin >= UINT32_MAX - 1)
        bad("more than 2^32 timers in one trace");
    /* a deadline near the end of the clock would be rounded past it by a
     * wheel's tick, and then never run */
    if (delay > TB_MAX_DELAY - 1 - t)
        bad("deadline (time + delay) %" PRId64 " ns is too large (it must "
            "be below 2^62 ns)", t + delay);
    /* so is its hard expiry (a budget's end), which tb_schedule_range
     * must be able to reach */
    if (slack > 0 && slack > TB_MAX_DELAY - 1 - t - delay)
        bad("deadline + slack %" PRId64 " + %" PRId64 " ns is too large (it "
            "must be below 2^62 ns)", t + delay, slack);
    struct inst *in = &tr->in[tr->nin];
    in->deadline = t + delay;
    in->period = period;
    in->slack = slack;
    in->budget = slack;
    in->id = id;
    in->line = g_line;
    in->ended = -1;
    tr->delays[tr->ndelays++] = delay;
    return (uint32_t)tr->nin++;
}

static bool live_at(const struct inst *in, int64_t t)
{
    return in->ended < 0 && (in->period > 0 || in->deadline > t);
}

static const char HEADER[] = "time,op,id,delay,period";
static const char HEADER_V2[] = "time,op,id,delay,period,slack";

/* The runs periodic timer `in` makes in the replay: one at each multiple
 * of its period from its first deadline up to its end, that included (the
 * replay advances to an event's time before its op), where the end is its
 * cancel or reschedule, or one period after the trace's last event line for
 * a timer the trace leaves running (the drain stops it there).  Every time
 * and period is below 2^62 ns, so the end is below 2^63. */
static uint64_t periodic_runs(const struct trace *tr, const struct inst *in)
{
    int64_t end = in->ended >= 0 ? in->ended : tr->t_last + in->period;
    if (end < in->deadline)
        return 0;
    return (uint64_t)((end - in->deadline) / in->period) + 1;
}

/* Refuses a trace whose periodic timers would make more than
 * MAX_PERIODIC_RUNS runs between them (a 1 ns period left running for
 * 1000 s would make 10^12): named at the line of the timer that takes the
 * sum over the limit. */
static void check_periodic_runs(struct trace *tr)
{
    uint64_t total = 0;
    for (size_t i = 0; i < tr->nin; i++) {
        const struct inst *in = &tr->in[i];
        if (!in->period)
            continue;
        uint64_t runs = periodic_runs(tr, in);
        if (__builtin_add_overflow(total, runs, &total))
            total = UINT64_MAX;
        if (total > MAX_PERIODIC_RUNS) {
            g_line = in->line;
            bad("periodic timer id %" PRIu64 " (every %" PRId64 " ns, %s) "
                "makes %" PRIu64 " runs, %" PRIu64 " with the periodic "
                "timers before it: more than the %d runs a trace may make",
                in->id, in->period,
                in->ended >= 0 ? "until the trace ends it"
                               : "left running: stopped one period past "
                                 "the trace's end",
                runs, total, MAX_PERIODIC_RUNS);
        }
    }
    tr->periodic_runs = total;
}

static void __attribute__((noreturn, format(printf, 2, 3)))
refuse_file(const char *path, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(g_refusal, sizeof g_refusal, "%s: ", path);
    if (n >= 0 && (size_t)n < sizeof g_refusal)
        vsnprintf(g_refusal + n, sizeof g_refusal - (size_t)n, fmt, ap);
    va_end(ap);
    refuse();
}

/* The trace file, opened for reading only if it is a regular file: a FIFO
 * would block the replay until something writes to it, a device such as
 * /dev/zero never ends.  O_NONBLOCK makes the open of a FIFO return at
 * once, so that it can be refused by its type. */
static FILE *open_trace(const char *path)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        refuse_file(path, "cannot open: %s", strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        refuse_file(path, "cannot open: %s", strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        refuse_file(path, "not a regular file (%s)",
                    S_ISFIFO(st.st_mode) ? "a FIFO" :
                    S_ISDIR(st.st_mode) ? "a directory" :
                    S_ISCHR(st.st_mode) ? "a character device" :
                    S_ISBLK(st.st_mode) ? "a block device" :
                    S_ISSOCK(st.st_mode) ? "a socket" : "of another kind");
    }
    int fl = fcntl(fd, F_GETFL);
    FILE *f = fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0
                  ? NULL : fdopen(fd, "r");
    if (!f) {
        int e = errno;
        close(fd);
        refuse_file(path, "cannot open: %s", strerror(e));
    }
    return f;
}

/* The next line of f into g_buf, without its LF or CR LF (a CR is taken as
 * part of the line end only before an LF, or at the end of the file): its
 * length, or -1 at the end of the file.  *nl says whether an LF ended it.
 * A line longer than MAX_LINE bytes is an error at once, before the rest
 * of it is read. */
static ssize_t read_line(FILE *f, bool *nl)
{
    size_t len = 0;
    int c;
    *nl = false;
    while ((c = getc_unlocked(f)) != EOF) {
        if (c == '\n') {
            *nl = true;
            break;
        }
        if (len > MAX_LINE) /* MAX_LINE bytes and a CR are held already */
            bad("line longer than %d bytes", MAX_LINE);
        g_buf[len++] = (char)c;
    }
    if (c == EOF && len == 0)
        return -1;
    if (len > 0 && g_buf[len - 1] == '\r')
        len--;
    if (len > MAX_LINE)
        bad("line longer than %d bytes", MAX_LINE);
    g_buf[len] = '\0';
    return (ssize_t)len;
}

/* Reads and checks the trace `path` from f (which it closes); a broken
 * rule is refused (bad). */
static void parse_stream(struct trace *tr, const char *path, FILE *f)
{
    memset(tr, 0, sizeof *tr);
    tr->path = path;
    g_path = path;
    g_line = 0;
    g_file = f;
    ssize_t len;
    bool header = false, nl;
    int64_t prev_t = -1;
    long prev_line = 0;
    for (;;) {
        g_line++; /* read_line's errors name the line being read */
        if ((len = read_line(f, &nl)) < 0) {
            g_line--;
            break;
        }
        if (strlen(g_buf) != (size_t)len)
            bad("line holds a NUL byte");
        if (g_line == 1 && !strncmp(g_buf, "\xef\xbb\xbf", 3))
            bad("starts with a UTF-8 byte-order mark; save the file "
                "without it");
        if (g_line == 1) {
            /* "#timerbench-trace v1 unit=" or its v2 */
            static const char magic[] = "#timerbench-trace v1 unit=";
            const char *unit = g_buf + sizeof magic - 1;
            bool v2 = !strncmp(g_buf, magic, 19) && g_buf[19] == '2' &&
                      !strncmp(g_buf + 20, magic + 20, sizeof magic - 21);
            if ((!v2 && strncmp(g_buf, magic, sizeof magic - 1)) ||
                (strcmp(unit, "ns") && strcmp(unit, "us") &&
                 strcmp(unit, "ms")))
                bad("not a timerbench trace: the first line must be "
                    "'#timerbench-trace v1 unit=<ns|us|ms>' (or v2, with "
                    "the slack column), got '%s'", shown(g_buf));
            tr->version = v2 ? 2 : 1;
            strcpy(tr->unit, unit);
            tr->unit_ns = unit[0] == 'n' ? 1 : unit[0] == 'u' ? 1000
                                                              : 1000000;
            continue;
        }
        if (len == 0)
            continue;
        if (!header) {
            if (g_buf[0] == '#') {
                tr->comments = xrealloc(tr->comments,
                    (tr->ncomments + 1) * sizeof *tr->comments);
                tr->comments[tr->ncomments] = strdup(g_buf);
                if (!tr->comments[tr->ncomments++])
                    die_oom();
                continue;
            }
            const char *want = tr->version == 2 ? HEADER_V2 : HEADER;
            if (strcmp(g_buf, want)) {
                if (tr->version == 1 && !strcmp(g_buf, HEADER_V2))
                    bad("a slack column needs format v2 (the first line "
                        "says v1): expected the header line '%s'", HEADER);
                bad("expected the header line '%s' (after the first line "
                    "and '#' comments), got '%s'", want, shown(g_buf));
            }
            header = true;
            continue;
        }
        if (g_buf[0] == '#')
            continue; /* a comment among the events says nothing */
        char *fld[7];
        int nf = 0;
        for (char *p = g_buf;; p++) {
            if (nf < 7)
                fld[nf] = p;
            nf++;
            p = strchr(p, ',');
            if (!p)
                break;
            *p = '\0';
        }
        int want = tr->version == 2 ? 6 : 5;
        if (nf != want) {
            if (!nl && nf < want && feof(f))
                bad("truncated last line: no newline and %d of %d fields "
                    "(the file was cut short?)", nf, want);
            if (tr->version == 1 && nf == 6)
                bad("a slack column needs format v2 (the first line says "
                    "v1): expected 5 fields (time,op,id,delay,period), "
                    "got 6");
            bad("expected %d fields (%s), got %d", want,
                tr->version == 2 ? HEADER_V2 : HEADER, nf);
        }
        int64_t t = to_ns(tr, parse_int(fld[0], "time", INT64_MAX), "time");
        const char *op = fld[1];
        uint64_t id = (uint64_t)parse_int(fld[2], "id", INT64_MAX);
        int k;
        if (!strcmp(op, "schedule"))
            k = K_SCHEDULE;
        else if (!strcmp(op, "periodic"))
            k = K_PERIODIC;
        else if (!strcmp(op, "cancel"))
            k = K_CANCEL;
        else if (!strcmp(op, "reschedule"))
            k = K_RESCHEDULE;
        else
            bad("unknown op '%s' (schedule, cancel, reschedule, periodic)",
                shown(op));
        int64_t delay = 0, period = 0;
        if (k != K_CANCEL) {
            if (!*fld[3])
                bad("%s needs a delay", op);
            delay = to_ns(tr, parse_int(fld[3], "delay", INT64_MAX), "delay");
        } else if (*fld[3]) {
            parse_int(fld[3], "delay", INT64_MAX); /* checked, unused */
        }
        if (k == K_PERIODIC) {
            if (!*fld[4])
                bad("periodic needs a period");
            period = to_ns(tr, parse_int(fld[4], "period", INT64_MAX),
                           "period");
            if (period <= 0)
                bad("period must be > 0");
        } else if (*fld[4]) {
            parse_int(fld[4], "period", INT64_MAX);
        }
        /* the lateness budget the trace gives this timer (v2): empty is
         * none; a cancel has no timer to give one to */
        int64_t slack = -1;
        if (nf == 6 && *fld[5]) {
            if (k == K_CANCEL)
                bad("cancel takes no slack (got '%s'): a slack belongs to "
                    "a schedule, reschedule or periodic", shown(fld[5]));
            slack = to_ns(tr, parse_int(fld[5], "slack", INT64_MAX),
                          "slack");
        }
        if (t < prev_t)
            bad("time %s goes backwards (line %ld was at %" PRId64 " %s)",
                shown(fld[0]), prev_line, prev_t / tr->unit_ns, tr->unit);
        if (!prev_line)
            tr->t_first = t;
        tr->t_last = t;
        prev_t = t;
        prev_line = g_line;
        tr->ops[k]++;
        uint32_t *slot = idmap_slot(&g_ids, id, false);
        struct inst *cur = slot ? &tr->in[*slot - 1] : NULL;
        bool live = cur && live_at(cur, t);
        struct event *e;
        switch (k) {
        case K_SCHEDULE:
        case K_PERIODIC:
            if (live)
                bad("%s of id %" PRIu64 ", which is still live (scheduled "
                    "on line %ld%s); a re-arm is a reschedule", op, id,
                    cur->line, cur->period ? ", periodic" : "");
            e = push_event(tr);
            e->t = t;
            e->kind = (uint8_t)k;
            e->delay = delay;
            e->inst = new_inst(tr, id, t, delay, period, slack);
            *idmap_slot(&g_ids, id, true) = e->inst + 1;
            break;
        case K_CANCEL:
            if (!live) {
                tr->cancel_unknown++;
                break;
            }
            e = push_event(tr);
            e->t = t;
            e->kind = K_CANCEL;
            e->inst = *slot - 1;
            cur->ended = t;
            tr->cancelled++;
            break;
        case K_RESCHEDULE:
            e = push_event(tr);
            e->t = t;
            e->delay = delay;
            if (live) {
                e->kind = K_RESCHEDULE;
                e->old = *slot - 1;
                cur->ended = t;
                tr->cancelled++;
            } else {
                tr->reschedule_unknown++;
                e->kind = K_SCHEDULE;
            }
            e->inst = new_inst(tr, id, t, delay, 0, slack);
            *idmap_slot(&g_ids, id, true) = e->inst + 1;
            break;
        }
    }
    tr->lines = g_line;
    if (ferror(f))
        bad("read error: %s", strerror(errno));
    fclose(f);
    g_file = NULL;
    free(g_ids.keys);
    free(g_ids.vals);
    memset(&g_ids, 0, sizeof g_ids);
    if (g_line == 0) {
        g_line = 1;
        bad("empty file: not a timerbench trace");
    }
    if (!header)
        bad("no header line '%s' before the end of the file",
            tr->version == 2 ? HEADER_V2 : HEADER);
    if (tr->ops[0] + tr->ops[1] + tr->ops[2] + tr->ops[3] == 0)
        bad("no events after the header");
    check_periodic_runs(tr);
    tr->horizon = tr->t_last;
    for (size_t i = 0; i < tr->nin; i++) {
        const struct inst *in = &tr->in[i];
        int64_t end = in->period ? (in->ended >= 0 ? in->ended
                                                   : tr->t_last + in->period)
                                 : in->deadline;
        if (end > tr->horizon)
            tr->horizon = end;
    }
}

/* ---- Lateness budgets (--lateness) -------------------------------------- */

/* --lateness SPEC: an absolute budget (<int><ns|us|ms|s>) or a share of
 * each timer's delay (<number>%, 0 < pct <= 100, at most 6 decimals), the
 * grammar of tbkit/precision.py parse_spec.  A share is held exactly,
 * in units of 10^-8 of the delay, so that C and Python floor alike. */
struct lateness_spec {
    int kind;           /* 0 none, 1 absolute, 2 share of the delay */
    int64_t abs_ns;     /* kind 1 */
    int64_t share_e8;   /* kind 2: the share times 10^8 (1% = 10^6) */
    const char *text;
};

#define SHARE_ONE 100000000 /* share_e8 of the whole delay (100%) */

/* Reads SPEC into *ls; false (and *why set) when it is not one of the
 * accepted forms. */
static bool parse_lateness(const char *spec, struct lateness_spec *ls,
                           const char **why)
{
    memset(ls, 0, sizeof *ls);
    ls->text = spec;
    size_t n = strspn(spec, "0123456789");
    const char *rest = spec + n;
    if (n && *rest == '.') {
        size_t m = strspn(rest + 1, "0123456789");
        if (!m || rest[1 + m] != '%' || rest[2 + m]) {
            *why = "a fraction is only for a share (12.5%)";
            return false;
        }
        rest += 1 + m;
    }
    if (!n) {
        *why = "it does not start with a digit";
        return false;
    }
    if (n > MAX_DIGITS) {
        *why = "more than 20 digits";
        return false;
    }
    if (*rest == '%' && !rest[1]) {
        /* integer part, then up to 6 decimals: share_e8 = pct * 10^6 */
        const char *dot = strchr(spec, '.');
        size_t dec = dot ? (size_t)(rest - dot - 1) : 0;
        if (dec > 6) {
            *why = "a share has at most 6 decimals";
            return false;
        }
        if (n > 3) {
            *why = "a share is at most 100%";
            return false;
        }
        int64_t v = 0;
        for (const char *q = spec; q < rest; q++)
            if (*q != '.')
                v = v * 10 + (*q - '0');
        for (size_t i = dec; i < 6; i++)
            v *= 10;
        if (v <= 0 || v > SHARE_ONE) {
            *why = "a share must be above 0% and at most 100%";
            return false;
        }
        ls->kind = 2;
        ls->share_e8 = v;
        return true;
    }
    static const struct { const char *u; int64_t ns; } units[] = {
        {"ns", 1}, {"us", TB_US}, {"ms", TB_MS}, {"s", TB_SEC}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(rest, units[i].u))
            continue;
        uint64_t v = 0;
        bool over = false;
        for (const char *q = spec; q < rest; q++) {
            over |= __builtin_mul_overflow(v, 10, &v);
            over |= __builtin_add_overflow(v, (uint64_t)(*q - '0'), &v);
        }
        if (over || v > (uint64_t)(TB_MAX_DELAY - 1) / (uint64_t)units[i].ns) {
            *why = "it must be below 2^62 ns";
            return false;
        }
        ls->kind = 1;
        ls->abs_ns = (int64_t)v * units[i].ns;
        return true;
    }
    if (!*rest && n) {
        *why = "an absolute budget needs its unit (ns, us, ms or s)";
        return false;
    }
    *why = "unknown unit";
    return false;
}

/* The budget of every timer of `tr`: its slack, or the --lateness spec for
 * every timer when one is given (a share of its delay, of its period for a
 * periodic timer: the delay each of its runs is armed with).  A budget that
 * would reach past the clock's end (2^62 ns) is cut there. */
static void apply_budgets(struct trace *tr, const struct lateness_spec *ls)
{
    for (size_t i = 0; i < tr->nin; i++) {
        struct inst *in = &tr->in[i];
        int64_t b = in->slack;
        if (ls->kind == 1) {
            b = ls->abs_ns;
        } else if (ls->kind == 2) {
            int64_t base = in->period ? in->period : tr->delays[i];
            /* floor(base * share / 10^8) without overflow: base is
             * q 10^8 + r, and r * share stays below 10^16 */
            int64_t q = base / SHARE_ONE, r = base % SHARE_ONE;
            b = q * ls->share_e8 + r * ls->share_e8 / SHARE_ONE;
        }
        if (b > TB_MAX_DELAY - 1 - in->deadline)
            b = TB_MAX_DELAY - 1 - in->deadline;
        in->budget = b;
    }
}

static void parse_trace(struct trace *tr, const char *path)
{
    g_path = path;
    g_line = 0;
    parse_stream(tr, path, open_trace(path));
}

/* ---- Numbers ------------------------------------------------------------ */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_dbl(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_d(double *v, size_t n)
{
    qsort(v, n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Cost of one pair of tb_monotonic_ns() reads: the median of many empty
 * batches. */
static int64_t clock_overhead(void)
{
    enum { N = 2001 };
    static int64_t d[N];
    for (int i = 0; i < N; i++) {
        int64_t a = tb_monotonic_ns();
        int64_t b = tb_monotonic_ns();
        d[i] = b - a;
    }
    qsort(d, N, sizeof *d, cmp_i64);
    return d[N / 2];
}

/* ---- One replay --------------------------------------------------------- */

enum mode { M_CHECK, M_TOTAL, M_KINDS };

struct run_timer {
    tb_handle h;
    int64_t due;      /* next expected deadline */
    int64_t armed;    /* when that deadline was set: its delay is due - armed */
    int64_t wake;     /* check mode: when the backend must have run it: the
                         deadline, or its hard expiry (deadline + budget)
                         where the backend honours a budget (TB_CAP_RANGE)
                         and got it */
    uint32_t fires;
    /* a re-armed in place task keeps the argument of its first schedule:
     * that instance's fwd (index + 1) names the one it now fires for, and
     * origin (index + 1, 0 = itself) leads a later re-arm back to it */
    uint32_t fwd, origin;
    uint8_t state;    /* 0 unscheduled, 1 live, 2 fired, 3 cancelled */
};

struct due { int64_t at; uint32_t inst; };

struct replay {
    const struct trace *tr;
    const struct tb_backend *b;
    const char *label;      /* backend, or backend+roc */
    int64_t tick;           /* backend's tick, 0 for heaps */
    enum mode mode;
    bool no_resched;        /* the backend answered TB_ENOTSUP */
    uint64_t in_place;      /* reschedules done by tb_reschedule */
    struct tb_sched *s;
    struct run_timer *rt;
    int64_t now;
    uint64_t live_oneshots;
    uint64_t fires, early;
    long early_line;
    int64_t early_by;
    /* check mode: expected deadlines (min-heap, stale entries skipped) */
    struct due *dh;
    size_t ndh, cdh;
    /* check mode: expected deadlines that have passed while their timer
     * has not run (moved from dh by dh_future: the timers waited for,
     * min-heap), and the latest of them moved (the wait the stride
     * follows) */
    struct due *wh;
    size_t nwh, cwh;
    int64_t wait_latest;
    int64_t *late;          /* lateness of every fire, ns */
    size_t nlate, clate;
    /* the most a fire was late beyond one tick, as a fraction of its delay:
     * rounding to the tick is every wheel's (at most one tick), the rest is
     * a coarser granularity, such as the kernel wheel's levels (1/8) */
    double beyond_tick_frac;
    /* budgets: fires of timers with a budget and beyond it, fires of
     * timers without; (lateness - budget) of every fire beyond, lateness /
     * budget of every fire with budget > 0; fires later than 1/8 of their
     * delay (the precision class of Linux's wheel) */
    uint64_t budget_fires, beyond_budget, no_budget_fires, beyond_eighth;
    int64_t *over;
    size_t nover, cover;
    double *rel;
    size_t nrel, crel;
    bool ranged;            /* the backend honours budgets (TB_CAP_RANGE) */
    /* check mode: the distinct instants at which the backend ran
     * something (its thread's wake-ups, with a ticked backend's empty
     * ticks added by wakeups_of), and the last of them */
    uint64_t run_instants;
    int64_t last_run_at;
    uint64_t peak_seen, bytes_at_peak;
    int64_t (*samples)[2];
    size_t nsamples;
    /* kinds mode */
    int64_t overhead;
    int64_t k_ns[K_COUNT];
    uint64_t k_ops[K_COUNT];
    uint64_t advances;
    /* totals */
    int64_t wall_ns, cpu_ns;
    struct tb_stats st;
    /* waiting for a due timer that has not run: the deadline waited for
     * and the steps taken (STRIDE_STEPS) */
    int64_t wait_due;
    uint64_t wait_steps;
    struct due *stops;      /* drain: periodic timers to stop */
    size_t cstops;
    /* a failed check: fail() writes the error and jumps back to
     * replay_once, which returns false */
    jmp_buf failed;
    char error[512];
};

static struct replay *g_rp; /* the replay whose tasks are running */
/* --skip-cancel K[@NAME] (tests only): the K-th cancel of each pass (on
 * the backend labelled NAME only, if given) is not passed to the backend,
 * so the timer runs although the trace cancelled it: the check must catch
 * it. */
static uint64_t g_skip_cancel, g_cancels;
static const char *g_skip_on;

/* A min-heap of expected deadlines (dh, wh): push, pop of the top. */
static void heap_push(struct due **h, size_t *n, size_t *cap, int64_t at,
                      uint32_t inst)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 1024;
        *h = xrealloc(*h, *cap * sizeof **h);
    }
    size_t i = (*n)++;
    while (i) {
        size_t p = (i - 1) / 2;
        if ((*h)[p].at <= at)
            break;
        (*h)[i] = (*h)[p];
        i = p;
    }
    (*h)[i] = (struct due){at, inst};
}

static void heap_pop(struct due *h, size_t *np)
{
    struct due x = h[--*np];
    size_t i = 0, n = *np;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && h[c + 1].at < h[c].at)
            c++;
        if (h[c].at >= x.at)
            break;
        h[i] = h[c];
        i = c;
    }
    if (n)
        h[i] = x;
}

static void dh_push(struct replay *rp, int64_t at, uint32_t inst)
{
    heap_push(&rp->dh, &rp->ndh, &rp->cdh, at, inst);
}

/* The top of heap h whose timer has not fired (stale entries dropped), or
 * -1. */
static int64_t heap_live_top(struct replay *rp, struct due *h, size_t *n)
{
    while (*n) {
        struct due d = h[0];
        const struct run_timer *r = &rp->rt[d.inst];
        if (r->state == 1 && r->wake == d.at)
            return d.at;
        heap_pop(h, n);
    }
    return -1;
}

/* The earliest expected deadline of a timer not yet fired, or -1. */
static int64_t dh_top(struct replay *rp)
{
    int64_t w = heap_live_top(rp, rp->wh, &rp->nwh);
    int64_t d = heap_live_top(rp, rp->dh, &rp->ndh);
    return w < 0 || (d >= 0 && d < w) ? d : w;
}

/* The earliest expected deadline after the clock of a timer not yet fired,
 * or -1; the passed ones met on the way move to wh, the latest of them
 * into wait_latest. */
static int64_t dh_future(struct replay *rp)
{
    int64_t d;
    while ((d = heap_live_top(rp, rp->dh, &rp->ndh)) >= 0 && d <= rp->now) {
        heap_push(&rp->wh, &rp->nwh, &rp->cwh, d, rp->dh[0].inst);
        heap_pop(rp->dh, &rp->ndh);
        if (d > rp->wait_latest)
            rp->wait_latest = d;
    }
    return d;
}

/* a + b for a, b >= 0, INT64_MAX where it would overflow. */
static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

/* How often the backend's thread would wake over a check pass (the
 * replay's third axis beside CPU and lateness): a backend without ticks
 * wakes at each distinct instant at which it runs something; a ticked one
 * at every tick from the trace's first event to its last run, empty or
 * not (the instants it runs something are among them). */
static uint64_t wakeups_of(const struct replay *rp)
{
    if (!rp->tick || !rp->run_instants)
        return rp->run_instants;
    int64_t from = rp->tr->t_first > 0 ? rp->tr->t_first : 0;
    int64_t ticks = rp->last_run_at / rp->tick - from / rp->tick;
    /* a run at the very first tick is a wake-up too */
    return ticks > 0 ? (uint64_t)ticks : 1;
}

static int on_fire(void *arg)
{
    struct replay *rp = g_rp;
    struct run_timer *r = arg;
    if (r->fwd)
        r = &rp->rt[r->fwd - 1];
    int64_t now = tb_now(rp->s);
    if (now < r->due && rp->early++ == 0) {
        rp->early_line = rp->tr->in[r - rp->rt].line;
        rp->early_by = r->due - now;
    }
    if (rp->mode == M_CHECK) {
        if (rp->run_instants == 0 || now != rp->last_run_at) {
            rp->run_instants++;
            rp->last_run_at = now;
        }
        if (rp->nlate == rp->clate) {
            rp->clate = rp->clate ? rp->clate * 2 : 4096;
            rp->late = xrealloc(rp->late, rp->clate * sizeof *rp->late);
        }
        int64_t late = now - r->due;
        rp->late[rp->nlate++] = late;
        int64_t beyond = now - r->due - rp->tick, delay = r->due - r->armed;
        if (beyond > 0 && delay > 0 &&
            (double)beyond / (double)delay > rp->beyond_tick_frac)
            rp->beyond_tick_frac = (double)beyond / (double)delay;
        if (late > delay / 8)
            rp->beyond_eighth++;
        int64_t budget = rp->tr->in[r - rp->rt].budget;
        if (budget < 0) {
            rp->no_budget_fires++;
        } else {
            rp->budget_fires++;
            if (late > budget) {
                rp->beyond_budget++;
                if (rp->nover == rp->cover) {
                    rp->cover = rp->cover ? rp->cover * 2 : 1024;
                    rp->over = xrealloc(rp->over, rp->cover * sizeof *rp->over);
                }
                rp->over[rp->nover++] = late - budget;
            }
            if (budget > 0) {
                if (rp->nrel == rp->crel) {
                    rp->crel = rp->crel ? rp->crel * 2 : 1024;
                    rp->rel = xrealloc(rp->rel, rp->crel * sizeof *rp->rel);
                }
                rp->rel[rp->nrel++] = (double)late / (double)budget;
            }
        }
    }
    rp->fires++;
    r->fires++;
    int64_t period = rp->tr->in[r - rp->rt].period;
    int64_t step = period;
    if (period && (rp->b->caps & TB_CAP_SKIP_MISSED) &&
        now - r->due >= period &&
        __builtin_mul_overflow(period, 1 + (now - r->due) / period, &step))
        step = INT64_MAX; /* Go's Ticker: the next run after now */
    if (period && r->due >= INT64_MAX - step) {
        /* its next run would reach the end of the clock: every backend
         * retires it as finished (tb_next_deadline), so the drain has no
         * cancel to make */
        r->due = INT64_MAX;
        r->state = 2;
    } else if (period) {
        r->due += step;
        r->wake = r->due; /* a periodic run is armed without its range */
        r->armed = now; /* the backend re-arms it after this run */
        if (rp->mode == M_CHECK)
            dh_push(rp, r->wake, (uint32_t)(r - rp->rt));
    } else if (r->state == 1) {
        r->state = 2;
        rp->live_oneshots--;
    }
    return 0;
}

/* A failed check: the error goes to stderr and into rp->error, the
 * scheduler is destroyed and replay_once returns false; the other backends
 * go on.  Never called from inside the backend (a task or tb_advance), so
 * the jump leaves no backend call half done. */
static void __attribute__((noreturn, format(printf, 2, 3)))
fail(struct replay *rp, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = snprintf(rp->error, sizeof rp->error, "check failed: ");
    vsnprintf(rp->error + n, sizeof rp->error - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(stderr, "timerbench-replay: %s on %s: %s\n", rp->label,
            rp->tr->path, rp->error);
    g_rp = NULL;
    if (rp->s)
        tb_destroy(rp->s);
    rp->s = NULL;
    longjmp(rp->failed, 1);
}

/* Waiting for due timer `due` (already reached) to run: the next instant
 * to advance to.  Tick by tick (ms for a backend without ticks) for
 * STRIDE_STEPS steps, then in strides of 2, 4, 8, ... ticks, each ending
 * on a multiple of itself; a new deadline to wait for starts again at one
 * tick.  A backend that runs a late timer at such a multiple (the kernel's
 * wheel: 8^n ticks at level n) is seen at that exact tick; waiting W ticks
 * takes about STRIDE_STEPS * log2(W / STRIDE_STEPS) steps. */
static int64_t stride_target(struct replay *rp, int64_t due)
{
    if (due != rp->wait_due) {
        rp->wait_due = due;
        rp->wait_steps = 0;
    }
    uint64_t shift = rp->wait_steps++ / STRIDE_STEPS;
    int64_t unit = rp->tick ? rp->tick : TB_MS;
    if (shift > 62 || unit > INT64_MAX >> shift)
        return INT64_MAX;
    int64_t stride = unit << shift;
    int64_t q = rp->now / stride + 1;
    return q > INT64_MAX / stride ? INT64_MAX : q * stride;
}

/* Waiting, in check mode, for timers due that have not run: the next
 * instant to advance to.  The strides follow the latest deadline waited
 * for (a timer just due is watched tick by tick, whatever older ones wait
 * in coarse buckets), and never pass the next expected deadline, so each
 * fire is still seen at the tick the backend makes it (issue 38: a stride
 * over a level-0 timer's tick saw it up to a stride late). */
static int64_t next_wait_step(struct replay *rp)
{
    int64_t future = dh_future(rp);
    int64_t target = stride_target(rp, rp->wait_latest >= 0 ? rp->wait_latest
                                                            : dh_top(rp));
    return future >= 0 && future < target ? future : target;
}

static void advance(struct replay *rp, int64_t to)
{
    long ran;
    if (rp->mode == M_KINDS) {
        int64_t a = tb_monotonic_ns();
        ran = tb_advance(rp->s, to);
        int64_t d = tb_monotonic_ns() - a - rp->overhead;
        rp->k_ns[K_EXPIRE] += d;
        rp->k_ns[K_ADVANCE] += d;
        rp->k_ops[K_ADVANCE]++;
        rp->advances++;
    } else {
        ran = tb_advance(rp->s, to);
    }
    if (ran < 0)
        fail(rp, "tb_advance(%" PRId64 ") failed: %s", to,
             tb_strerror((int)ran));
    rp->k_ops[K_EXPIRE] += (uint64_t)ran;
    rp->now = to;
}

/* Check mode: reaches `limit` through every moment a timer may fire: each
 * expected deadline, the current instant again (a timer scheduled with no
 * delay is due at once, but only an advance runs it), then tick by tick
 * while something due has not run. */
static void step_to(struct replay *rp, int64_t limit)
{
    bool again = false; /* the current instant was advanced to again */
    for (;;) {
        int64_t d = dh_top(rp);
        if (d < 0 || d > limit)
            break;
        int64_t target;
        if (d > rp->now)
            target = d;
        else if (!again)
            target = rp->now;
        else
            target = next_wait_step(rp); /* a heap should never get here */
        if (target > limit)
            target = limit;
        if (target < rp->now || (target == rp->now && again))
            break;
        again = target == rp->now;
        advance(rp, target);
    }
    if (limit > rp->now)
        advance(rp, limit);
}

static void move_to(struct replay *rp, int64_t t)
{
    if (t < rp->now || (t == rp->now && rp->mode != M_CHECK))
        return;
    if (rp->mode == M_CHECK)
        step_to(rp, t);
    else
        advance(rp, t);
}

static void sched_one(struct replay *rp, uint32_t i, long line)
{
    const struct inst *in = &rp->tr->in[i];
    struct run_timer *r = &rp->rt[i];
    int64_t delay = in->deadline - rp->now;
    /* a one-shot with a budget goes through tb_schedule_range (a backend
     * without TB_CAP_RANGE ignores the slack); a periodic timer's budget
     * is checked on each run, its call is the usual one */
    int rc = in->period
        ? tb_schedule_fixed_rate(rp->s, delay, on_fire, r, &r->h, in->period)
        : in->budget >= 0
        ? tb_schedule_range(rp->s, delay, in->budget, on_fire, r, &r->h)
        : tb_schedule(rp->s, delay, on_fire, r, &r->h);
    if (rc != TB_OK)
        fail(rp, "line %ld: schedule of id %" PRIu64 " failed: %s", line,
             in->id, tb_strerror(rc));
    r->due = in->deadline;
    r->wake = r->due;
    if (rp->ranged && !in->period && in->budget > 0)
        r->wake = r->due + in->budget; /* below 2^62: apply_budgets */
    r->armed = rp->now;
    r->state = 1;
    if (!in->period)
        rp->live_oneshots++;
    if (rp->mode == M_CHECK)
        dh_push(rp, r->wake, i);
}

static void cancel_one(struct replay *rp, uint32_t i)
{
    struct run_timer *r = &rp->rt[i];
    bool skip = ++g_cancels == g_skip_cancel &&
                (!g_skip_on || !strcmp(g_skip_on, rp->label));
    int rc = skip ? 1 : tb_cancel(rp->s, r->h);
    if (rc != 1)
        fail(rp, "cancel of id %" PRIu64 " (scheduled on line %ld), live "
             "in the trace, returned %d: it %s", rp->tr->in[i].id,
             rp->tr->in[i].line, rc,
             r->fires ? "had already fired, early" : "was not pending");
    if (!rp->tr->in[i].period && r->state == 1)
        rp->live_oneshots--;
    r->state = 3;
}

/* The backend's own re-arm of live one-shot `old` as `inst`; false (and
 * never again for this replay) when the backend has none. */
static bool resched_one(struct replay *rp, uint32_t old, uint32_t inst)
{
    struct run_timer *o = &rp->rt[old], *r = &rp->rt[inst];
    int64_t deadline = rp->tr->in[inst].deadline;
    int rc = tb_reschedule(rp->s, o->h, deadline - rp->now);
    if (rc == TB_ENOTSUP) {
        rp->no_resched = true;
        return false;
    }
    if (rc != 1)
        fail(rp, "reschedule of id %" PRIu64 " (scheduled on line %ld), "
             "live in the trace, returned %d: it %s", rp->tr->in[old].id,
             rp->tr->in[old].line, rc,
             o->fires ? "had already fired, early" : "was not pending");
    uint32_t origin = o->origin ? o->origin : old + 1;
    rp->rt[origin - 1].fwd = inst + 1;
    r->origin = origin;
    r->h = o->h;
    r->due = deadline;
    r->wake = deadline;
    r->armed = rp->now;
    r->state = 1;
    o->state = 3;
    rp->in_place++;
    if (rp->mode == M_CHECK)
        dh_push(rp, r->wake, inst);
    return true;
}

static void do_op(struct replay *rp, const struct event *e)
{
    switch (e->kind) {
    case K_SCHEDULE:
    case K_PERIODIC:
        sched_one(rp, e->inst, rp->tr->in[e->inst].line);
        break;
    case K_CANCEL:
        cancel_one(rp, e->inst);
        break;
    case K_RESCHEDULE:
        /* in place where the backend can (its re-arm has no range: on a
         * backend that honours budgets a timer with one is cancelled and
         * scheduled in its range instead, as hrtimer_start_range_ns) */
        if (!rp->no_resched && !rp->tr->in[e->old].period &&
            !(rp->ranged && rp->tr->in[e->inst].budget >= 0) &&
            resched_one(rp, e->old, e->inst))
            break;
        cancel_one(rp, e->old);
        sched_one(rp, e->inst, rp->tr->in[e->inst].line);
        break;
    }
}

static void sample(struct replay *rp)
{
    size_t p = tb_pending(rp->s);
    if (p > rp->peak_seen) {
        struct tb_stats st;
        tb_stats(rp->s, &st);
        rp->peak_seen = p;
        rp->bytes_at_peak = st.bytes_held;
    }
}

static int cmp_end(const void *a, const void *b)
{
    const struct due *x = a, *y = b;
    return (x->at > y->at) - (x->at < y->at);
}

/* After the last event: periodic timers stop one period after the end,
 * then the clock moves until every one-shot has run: to the last deadline,
 * then (stride_target) for as long as the backend may be late: DRAIN_STEPS
 * of its ticks past a timer's deadline, and 1/7 of its delay more where its
 * levels are coarser than its tick (TB_CAP_GRANULAR: at most 8/63). */
static void drain(struct replay *rp)
{
    const struct trace *tr = rp->tr;
    int64_t end = tr->t_last;
    size_t nstops = 0;
    int64_t last = end, bound = end;
    int64_t step = rp->tick ? rp->tick : TB_MS;
    bool granular = (rp->b->caps & TB_CAP_GRANULAR) != 0;
    for (size_t i = 0; i < tr->nin; i++) {
        const struct run_timer *r = &rp->rt[i];
        if (r->state != 1)
            continue;
        if (tr->in[i].period) {
            if (nstops == rp->cstops) {
                rp->cstops = rp->cstops ? rp->cstops * 2 : 64;
                rp->stops = xrealloc(rp->stops,
                                     rp->cstops * sizeof *rp->stops);
            }
            /* end and period are below 2^62 ns: no overflow */
            rp->stops[nstops++] = (struct due){end + tr->in[i].period,
                                               (uint32_t)i};
            continue;
        }
        /* wake: a timer in its range may run as late as its hard expiry */
        if (r->wake > last)
            last = r->wake;
        int64_t by = sat_add(r->wake, step > INT64_MAX / DRAIN_STEPS
                                         ? INT64_MAX : step * DRAIN_STEPS);
        if (granular)
            by = sat_add(by, (r->due - r->armed) / 7);
        if (by > bound)
            bound = by;
    }
    if (nstops > 1)
        qsort(rp->stops, nstops, sizeof *rp->stops, cmp_end);
    for (size_t i = 0; i < nstops; i++) {
        move_to(rp, rp->stops[i].at);
        if (rp->rt[rp->stops[i].inst].state == 1) /* not retired meanwhile */
            cancel_one(rp, rp->stops[i].inst);
    }
    if (rp->live_oneshots)
        move_to(rp, last);
    /* every one-shot left is due: wait for it, in strides */
    while (rp->live_oneshots && rp->now < bound) {
        int64_t t = rp->mode == M_CHECK ? next_wait_step(rp)
                                        : stride_target(rp, last);
        advance(rp, t < bound ? t : bound);
    }
    if (rp->live_oneshots)
        fail(rp, "%" PRIu64 " timers the trace leaves uncancelled never "
             "fired (the clock reached %" PRId64 " ns: %d steps of %" PRId64
             " ns past each deadline%s)", rp->live_oneshots, rp->now,
             DRAIN_STEPS, step, granular ? ", and 1/7 of its delay" : "");
}

/* The total pass: every event, then the drain, nothing else.  Its own
 * function, never inlined, so that Valgrind can count exactly it:
 *   valgrind --tool=callgrind --toggle-collect=total_pass \
 *       timerbench-replay --reps R --backends B TRACE
 * gives the instructions of R replays of TRACE on B (divide by R times the
 * events for instructions per event, a figure that does not move with the
 * machine's load). */
static __attribute__((noinline)) void total_pass(struct replay *rp)
{
    const struct trace *tr = rp->tr;
    for (size_t i = 0; i < tr->nev; i++) {
        const struct event *e = &tr->ev[i];
        if (e->t > rp->now)
            move_to(rp, e->t);
        do_op(rp, e);
    }
    drain(rp);
}

/* One entry of the replay: a backend, with the policy flags of its
 * variant (remove-on-cancel, for the backends that honour it). */
struct entry {
    const struct tb_backend *b;
    unsigned flags;
    char label[64];
};

static void replay_body(struct replay *rp, const struct trace *tr,
                        const struct entry *en, int64_t tick,
                        enum mode mode)
{
    const struct tb_backend *b = en->b;
    struct tb_config cfgv = {0};
    cfgv.tick_ns = tick; /* heaps ignore it */
    cfgv.flags = en->flags;
    const struct tb_config *cfg = &cfgv;
    rp->label = en->label;
    memset(rp->k_ns, 0, sizeof rp->k_ns);
    memset(rp->k_ops, 0, sizeof rp->k_ops);
    rp->tr = tr;
    rp->b = b;
    rp->mode = mode;
    rp->now = 0;
    rp->live_oneshots = rp->fires = rp->early = rp->advances = 0;
    g_cancels = 0;
    rp->ndh = rp->nlate = rp->nsamples = 0;
    rp->beyond_tick_frac = 0;
    rp->budget_fires = rp->beyond_budget = rp->no_budget_fires = 0;
    rp->beyond_eighth = 0;
    rp->nover = rp->nrel = 0;
    rp->run_instants = 0;
    rp->last_run_at = 0;
    rp->ranged = (b->caps & TB_CAP_RANGE) != 0;
    rp->peak_seen = rp->bytes_at_peak = 0;
    rp->rt = xrealloc(rp->rt, tr->nin * sizeof *rp->rt);
    memset(rp->rt, 0, tr->nin * sizeof *rp->rt);
    rp->no_resched = false;
    rp->in_place = 0;
    rp->wait_due = -1;
    rp->wait_steps = 0;
    rp->nwh = 0;
    rp->wait_latest = -1;
    rp->error[0] = '\0';
    rp->s = NULL;
    int rc = tb_create(b, cfg, &rp->s);
    if (rc != TB_OK) {
        rp->s = NULL;
        fail(rp, "tb_create: %s", tb_strerror(rc));
    }
    struct tb_config real;
    tb_sched_config(rp->s, &real);
    rp->tick = (b->caps & TB_CAP_TICKED) ? real.tick_ns : 0;
    g_rp = rp;
    size_t every = tr->nev / PENDING_SAMPLES + 1;
    if (mode == M_CHECK) {
        rp->samples = xrealloc(rp->samples,
            (tr->nev / every + 2) * sizeof *rp->samples);
    }
    int64_t w0 = tb_monotonic_ns(), c0 = bh_cpu_now();
    if (mode == M_KINDS) {
        /* Runs of one kind at one instant are one timed batch; an advance
         * between two instants is timed alone. */
        for (size_t i = 0; i < tr->nev;) {
            move_to(rp, tr->ev[i].t);
            size_t j = i + 1;
            while (j < tr->nev && tr->ev[j].t == tr->ev[i].t &&
                   tr->ev[j].kind == tr->ev[i].kind)
                j++;
            int64_t a = tb_monotonic_ns();
            for (size_t k = i; k < j; k++)
                do_op(rp, &tr->ev[k]);
            int64_t d = tb_monotonic_ns() - a - rp->overhead;
            rp->k_ns[tr->ev[i].kind] += d;
            rp->k_ops[tr->ev[i].kind] += j - i;
            i = j;
        }
    } else if (mode == M_TOTAL) {
        total_pass(rp);
    } else {
        for (size_t i = 0; i < tr->nev; i++) {
            const struct event *e = &tr->ev[i];
            if (e->t > rp->now)
                move_to(rp, e->t);
            do_op(rp, e);
            sample(rp);
            if (i % every == 0 || i + 1 == tr->nev) {
                rp->samples[rp->nsamples][0] = e->t;
                rp->samples[rp->nsamples++][1] = (int64_t)tb_pending(rp->s);
            }
        }
    }
    if (mode != M_TOTAL)
        drain(rp);
    rp->wall_ns = tb_monotonic_ns() - w0;
    rp->cpu_ns = bh_cpu_now() - c0;
    g_rp = NULL;
    if (mode == M_CHECK)
        sample(rp);
    tb_stats(rp->s, &rp->st);
    tb_destroy(rp->s);
    rp->s = NULL;
    /* every pass is checked the same way */
    if (rp->early)
        fail(rp, "%" PRIu64 " fires were early (the first: the timer of line "
             "%ld, by %" PRId64 " ns)", rp->early, rp->early_line,
             rp->early_by);
    for (size_t i = 0; i < tr->nin; i++) {
        const struct run_timer *r = &rp->rt[i];
        if (tr->in[i].period)
            continue;
        bool cancelled = tr->in[i].ended >= 0;
        if (cancelled ? r->fires != 0 : r->fires != 1)
            fail(rp, "the timer of line %ld (id %" PRIu64 ") fired %u "
                 "times; %s", tr->in[i].line, tr->in[i].id, r->fires,
                 cancelled ? "the trace cancels it" :
                             "the trace leaves it uncancelled");
    }
    if (rp->st.fired != rp->fires)
        fail(rp, "the backend counts %" PRIu64 " runs, the replay saw "
             "%" PRIu64, rp->st.fired, rp->fires);
}

static void free_replay(struct replay *rp)
{
    free(rp->rt);
    free(rp->dh);
    free(rp->wh);
    free(rp->late);
    free(rp->samples);
    free(rp->stops);
    free(rp->over);
    free(rp->rel);
    rp->over = NULL;
    rp->rel = NULL;
    rp->cover = rp->crel = 0;
    rp->rt = NULL;
    rp->dh = NULL;
    rp->wh = NULL;
    rp->cwh = 0;
    rp->late = NULL;
    rp->samples = NULL;
    rp->stops = NULL;
    rp->cdh = rp->clate = rp->cstops = 0;
}

/* One pass of `tr` on `en` in `mode`, checked: false when a check failed
 * (rp->error says which). */
static bool replay_once(struct replay *rp, const struct trace *tr,
                        const struct entry *en, int64_t tick,
                        enum mode mode)
{
    rp->tr = tr;
    rp->label = en->label;
    if (setjmp(rp->failed))
        return false;
    replay_body(rp, tr, en, tick, mode);
    return true;
}

/* ---- Output ------------------------------------------------------------- */

/* Length of the well-formed UTF-8 sequence at s, or 0. */
static int utf8_len(const unsigned char *s)
{
    int n = s[0] < 0x80 ? 1 : (s[0] & 0xE0) == 0xC0 ? 2
          : (s[0] & 0xF0) == 0xE0 ? 3 : (s[0] & 0xF8) == 0xF0 ? 4 : 0;
    if (n == 2 && s[0] < 0xC2)
        return 0; /* overlong */
    for (int i = 1; i < n; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return n;
}

/* A JSON string; bytes that are not UTF-8 (a comment in another
 * encoding) become U+FFFD, so that the file stays readable JSON. */
static void json_str(FILE *o, const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    fputc('"', o);
    while (*s) {
        unsigned char c = *s;
        int n = utf8_len(s);
        if (c == '"' || c == '\\')
            fprintf(o, "\\%c", c);
        else if (c < 0x20)
            fprintf(o, "\\u%04x", c);
        else if (n == 0)
            fputs("\\ufffd", o);
        else
            fwrite(s, 1, (size_t)n, o);
        s += n ? n : 1;
    }
    fputc('"', o);
}

/* {"median": m, "min": lo, "max": hi, "reps": [...]} of R values. */
static void json_spread(FILE *o, const double *v, size_t n)
{
    double s[64];
    memcpy(s, v, n * sizeof *v);
    double med = median_d(s, n);
    fprintf(o, "{\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"reps\": [",
            med, s[0], s[n - 1]);
    for (size_t i = 0; i < n; i++)
        fprintf(o, "%s%.6g", i ? ", " : "", v[i]);
    fprintf(o, "]}");
}

static const double QS[] = {0.5, 0.9, 0.99, 0.999, 1.0};
static const char *const QN[] = {"p50", "p90", "p99", "p999", "max"};

struct bres {
    const struct entry *e;
    struct tb_config cfg;     /* resolved */
    int64_t tick;
    double total_ns[64], cpu_ms_per_m[64];
    double kind_ns[K_COUNT][64];
    uint64_t kind_ops[K_COUNT];
    uint64_t advances;
    struct replay check;      /* the check pass, kept for its numbers */
    bool failed;              /* a pass failed its check: error says how */
    char error[512];
};

/* A backend's pass failed: its entry keeps the error, not its numbers. */
static void failed_pass(struct bres *r, const struct replay *rp)
{
    r->failed = true;
    snprintf(r->error, sizeof r->error, "%s", rp->error);
}

/* One-shot timers the trace leaves uncancelled. */
static uint64_t oneshots_kept(const struct trace *tr)
{
    uint64_t n = 0;
    for (size_t i = 0; i < tr->nin; i++)
        n += !tr->in[i].period && tr->in[i].ended < 0;
    return n;
}

/* The budget fields of a check pass's "lateness" (after its other
 * fields): fires beyond their own budget, fires with and without one,
 * fires later than 1/8 of their delay, and the distributions of (lateness
 * - budget) over the fires beyond and of lateness / budget over the fires
 * with a budget above 0 (each absent when it has no fire). */
static void json_budget(FILE *o, struct replay *c)
{
    fprintf(o, ", \"beyond_budget\": %" PRIu64 ", \"budget_fires\": %" PRIu64
            ", \"no_budget_fires\": %" PRIu64 ", \"beyond_eighth_of_delay\": %"
            PRIu64, c->beyond_budget, c->budget_fires, c->no_budget_fires,
            c->beyond_eighth);
    if (c->nover) {
        qsort(c->over, c->nover, sizeof *c->over, cmp_i64);
        fprintf(o, ", \"over_budget_ns\": {\"p50\": %" PRId64 ", \"p99\": %"
                PRId64 ", \"max\": %" PRId64 "}",
                bh_quantile(c->over, c->nover, 0.5),
                bh_quantile(c->over, c->nover, 0.99), c->over[c->nover - 1]);
    }
    if (c->nrel) {
        qsort(c->rel, c->nrel, sizeof *c->rel, cmp_dbl);
        fprintf(o, ", \"relative\": {\"p50\": %.6g, \"p99\": %.6g, "
                "\"max\": %.6g}", bh_quantile_d(c->rel, c->nrel, 0.5),
                bh_quantile_d(c->rel, c->nrel, 0.99), c->rel[c->nrel - 1]);
    }
}

/* One point of the tick sweep: a ticked backend at one tick. */
struct sres {
    const struct tb_backend *b;
    int64_t tick;             /* asked for */
    int64_t tick_real;        /* as the backend resolved it */
    char name[64];            /* "<backend> tick=<T>" */
    char skipped[200];        /* why it was not run, or "" */
    double total_ns[64], cpu_ms_per_m[64];
    int reps;
    int64_t late_max, late_p99;
    uint64_t beyond_budget, budget_fires, beyond_eighth;
    uint64_t wakeups, run_instants;  /* wakeups_of its check pass */
    int64_t hz;               /* the trace's HZ when the tick is its jiffy */
    double check_s, total_s;  /* wall time of its check pass, of its total
                                 passes together */
    bool failed;
    char error[512];
};

static void write_sweep(FILE *o, const struct sres *sw, size_t nsw)
{
    fprintf(o, ",\n     \"sweep\": [");
    for (size_t i = 0; i < nsw; i++) {
        const struct sres *p = &sw[i];
        fprintf(o, "%s\n      {\"name\": ", i ? "," : "");
        json_str(o, p->name);
        fprintf(o, ", \"backend\": ");
        json_str(o, p->b->name);
        fprintf(o, ", \"tick_ns\": %" PRId64, p->tick);
        if (p->hz)
            fprintf(o, ", \"trace_hz\": %" PRId64, p->hz);
        if (p->skipped[0]) {
            fprintf(o, ", \"skipped\": ");
            json_str(o, p->skipped);
            fprintf(o, "}");
            continue;
        }
        if (p->tick_real != p->tick)
            fprintf(o, ", \"tick_ns_resolved\": %" PRId64, p->tick_real);
        if (p->failed) {
            fprintf(o, ", \"checks\": {\"passed\": false, \"error\": ");
            json_str(o, p->error);
            fprintf(o, "}}");
            continue;
        }
        fprintf(o, ",\n       \"cpu_ms_per_million_events\": ");
        json_spread(o, p->cpu_ms_per_m, (size_t)p->reps);
        fprintf(o, ",\n       \"ns_per_event\": ");
        json_spread(o, p->total_ns, (size_t)p->reps);
        fprintf(o, ",\n       \"lateness\": {\"max_ns\": %" PRId64
                ", \"p99_ns\": %" PRId64 ", \"beyond_budget\": %" PRIu64
                ", \"budget_fires\": %" PRIu64 ", \"beyond_eighth_of_delay\": %"
                PRIu64 "},\n       \"wakeups\": %" PRIu64 ", \"run_instants\": %"
                PRIu64 ",\n       \"seconds\": {\"check\": %.3g, \"total_passes\": "
                "%.3g}, \"checks\": {\"passed\": true}}", p->late_max,
                p->late_p99, p->beyond_budget, p->budget_fires,
                p->beyond_eighth, p->wakeups, p->run_instants, p->check_s,
                p->total_s);
    }
    fprintf(o, "%s]", nsw ? "\n     " : "");
}

/* The trace's budgets: where they come from, how many timers have one, and
 * their distribution (absent when none has). */
static void write_budget(FILE *o, const struct trace *tr,
                         const struct lateness_spec *ls)
{
    int64_t *b = xrealloc(NULL, (tr->nin ? tr->nin : 1) * sizeof *b);
    size_t n = 0;
    for (size_t i = 0; i < tr->nin; i++)
        if (tr->in[i].budget >= 0)
            b[n++] = tr->in[i].budget;
    fprintf(o, "     \"format_version\": %d, \"budget\": {\"source\": \"%s\", "
            "\"timers_with_budget\": %zu, \"timers\": %zu", tr->version,
            ls->kind ? "override" : n ? "trace" : "none", n, tr->nin);
    if (n) {
        qsort(b, n, sizeof *b, cmp_i64);
        fprintf(o, ", \"slack_ns\": {\"min\": %" PRId64 ", \"p50\": %" PRId64
                ", \"p90\": %" PRId64 ", \"p99\": %" PRId64 ", \"max\": %"
                PRId64 "}", b[0], bh_quantile(b, n, 0.5),
                bh_quantile(b, n, 0.9), bh_quantile(b, n, 0.99), b[n - 1]);
    }
    fprintf(o, "},\n");
    free(b);
}

static void write_trace(FILE *o, const struct trace *tr, struct bres *br,
                        size_t nb, int reps, const struct lateness_spec *ls,
                        const struct sres *sw, size_t nsw)
{
    fprintf(o, "    {\"file\": ");
    json_str(o, tr->path);
    const char *base = strrchr(tr->path, '/');
    fprintf(o, ", \"name\": ");
    json_str(o, base ? base + 1 : tr->path);
    fprintf(o, ", \"unit\": \"%s\", \"lines\": %ld,\n     \"comments\": [",
            tr->unit, tr->lines);
    for (size_t i = 0; i < tr->ncomments; i++) {
        if (i)
            fprintf(o, ", ");
        json_str(o, tr->comments[i]);
    }
    uint64_t events = tr->ops[0] + tr->ops[1] + tr->ops[2] + tr->ops[3];
    fprintf(o, "],\n     \"events\": %" PRIu64 ", \"ops\": {\"schedule\": %"
            PRIu64 ", \"periodic\": %" PRIu64 ", \"cancel\": %" PRIu64
            ", \"reschedule\": %" PRIu64 "},\n", events, tr->ops[0],
            tr->ops[1], tr->ops[2], tr->ops[3]);
    fprintf(o, "     \"cancel_unknown\": %" PRIu64 ", \"reschedule_unknown\": %"
            PRIu64 ", \"timers\": %zu, \"cancelled\": %" PRIu64
            ", \"cancel_ratio\": %.6g,\n", tr->cancel_unknown,
            tr->reschedule_unknown, tr->nin, tr->cancelled,
            tr->nin ? (double)tr->cancelled / (double)tr->nin : 0.0);
    fprintf(o, "     \"start_ns\": %" PRId64 ", \"end_ns\": %" PRId64 ",\n",
            tr->t_first, tr->t_last);
    write_budget(o, tr, ls);
    int64_t *d = xrealloc(NULL, tr->ndelays * sizeof *d);
    if (tr->ndelays)
        memcpy(d, tr->delays, tr->ndelays * sizeof *d);
    qsort(d, tr->ndelays, sizeof *d, cmp_i64);
    static const double DQ[] = {0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.99, 1.0};
    static const char *const DN[] = {"min", "p10", "p25", "p50", "p75",
                                     "p90", "p99", "max"};
    /* no delays (a trace of cancels of ids never scheduled): {} */
    fprintf(o, "     \"delay_ns\": {");
    for (size_t i = 0; i < 8 && tr->ndelays; i++)
        fprintf(o, "%s\"%s\": %" PRId64, i ? ", " : "", DN[i],
                i == 0 ? d[0] : bh_quantile(d, tr->ndelays, DQ[i]));
    fprintf(o, "},\n     \"delay_cdf\": [");
    size_t pts = tr->ndelays < DELAY_CDF_POINTS ? tr->ndelays
                                                : DELAY_CDF_POINTS;
    for (size_t i = 1; i <= pts; i++) {
        size_t idx = (i * tr->ndelays) / pts; /* rank, 1-based */
        fprintf(o, "%s[%" PRId64 ", %.6g]", i > 1 ? ", " : "", d[idx - 1],
                (double)idx / (double)tr->ndelays);
    }
    free(d);
    fprintf(o, "],\n     \"backends\": [\n");
    for (size_t bi = 0; bi < nb; bi++) {
        struct bres *r = &br[bi];
        struct replay *c = &r->check;
        fprintf(o, "      {\"name\": ");
        json_str(o, r->e->label);
        fprintf(o, ", \"backend\": ");
        json_str(o, r->e->b->name);
        fprintf(o, ", \"variant\": \"%s\"",
                r->e->flags & TB_F_REMOVE_ON_CANCEL ? "roc=on" : "");
        fprintf(o, ", \"ticked\": %s, \"tick_ns\": %" PRId64
                ", \"wheel_size\": %d, \"flags\": %u,\n",
                r->tick ? "true" : "false", r->tick,
                r->tick ? r->cfg.wheel_size : 0, r->cfg.flags);
        if (r->failed) {
            /* no numbers: those of a failed pass would mislead */
            fprintf(o, "       \"error\": ");
            json_str(o, r->error);
            fprintf(o, ",\n       \"checks\": {\"passed\": false, "
                    "\"error\": ");
            json_str(o, r->error);
            fprintf(o, "}}%s\n", bi + 1 < nb ? "," : "");
            continue;
        }
        fprintf(o, "       \"reschedules_in_place\": %" PRIu64 ",\n",
                c->in_place);
        fprintf(o, "       \"ns_per_event\": ");
        json_spread(o, r->total_ns, (size_t)reps);
        fprintf(o, ",\n       \"cpu_ms_per_million_events\": ");
        json_spread(o, r->cpu_ms_per_m, (size_t)reps);
        fprintf(o, ",\n       \"ns_per_op\": {");
        bool firstk = true;
        for (int k = 0; k < K_COUNT; k++) {
            if (!r->kind_ops[k])
                continue;
            fprintf(o, "%s\n        \"%s\": {\"count\": %" PRIu64 ", \"ns\": ",
                    firstk ? "" : ",", kind_names[k], r->kind_ops[k]);
            json_spread(o, r->kind_ns[k], (size_t)reps);
            fprintf(o, "}");
            firstk = false;
        }
        fprintf(o, "},\n       \"advances\": %" PRIu64 ", \"fires\": %" PRIu64
                ", \"peak_pending\": %" PRIu64 ", \"bytes_at_peak\": %" PRIu64
                ", \"bytes_at_end\": %" PRIu64 ",\n", r->advances, c->fires,
                c->st.peak_pending, c->bytes_at_peak, c->st.bytes_held);
        fprintf(o, "       \"wakeups\": %" PRIu64 ", \"run_instants\": %"
                PRIu64 ",\n", wakeups_of(c), c->run_instants);
        fprintf(o, "       \"stats\": {\"submitted\": %" PRIu64
                ", \"fired\": %" PRIu64 ", \"cancelled\": %" PRIu64
                ", \"ticks\": %" PRIu64 ", \"empty_ticks\": %" PRIu64
                ", \"visits\": %" PRIu64 ", \"sift_levels\": %" PRIu64
                ", \"cascades\": %" PRIu64 "},\n", c->st.submitted,
                c->st.fired, c->st.cancelled, c->st.ticks, c->st.empty_ticks,
                c->st.visits, c->st.sift_levels, c->st.cascades);
        if (c->nlate)
            qsort(c->late, c->nlate, sizeof *c->late, cmp_i64);
        int64_t sum = 0;
        for (size_t i = 0; i < c->nlate; i++)
            sum = sat_add(sum, c->late[i]);
        fprintf(o, "       \"lateness\": {\"fires\": %zu, \"sum_ns\": %"
                PRId64 ", \"beyond_tick_of_delay_max\": %.6g, \"ns\": {",
                c->nlate, sum, c->beyond_tick_frac);
        for (size_t q = 0; q < 5; q++)
            fprintf(o, "%s\"%s\": %" PRId64, q ? ", " : "", QN[q],
                    bh_quantile(c->late, c->nlate, QS[q]));
        /* a backend without ticks: 0 ticks when it is never late, else
         * there is no tick to count in (null) */
        fprintf(o, "}, \"ticks\": {");
        for (size_t q = 0; q < 5; q++) {
            int64_t v = bh_quantile(c->late, c->nlate, QS[q]);
            fprintf(o, "%s\"%s\": ", q ? ", " : "", QN[q]);
            if (r->tick)
                fprintf(o, "%.6g", (double)v / (double)r->tick);
            else
                fprintf(o, v ? "null" : "0");
        }
        /* whole ticks late: 0, 1, 2, 3 and more (for the heaps all 0) */
        uint64_t h[4] = {0};
        for (size_t i = 0; i < c->nlate; i++) {
            int64_t t = r->tick ? c->late[i] / r->tick : (c->late[i] ? 3 : 0);
            h[t > 3 ? 3 : t]++;
        }
        fprintf(o, "}, \"whole_ticks_hist\": [%" PRIu64 ", %" PRIu64 ", %"
                PRIu64 ", %" PRIu64 "]", h[0], h[1], h[2], h[3]);
        json_budget(o, c);
        fprintf(o, "},\n");
        fprintf(o, "       \"pending_samples\": [");
        for (size_t i = 0; i < c->nsamples; i++)
            fprintf(o, "%s[%" PRId64 ", %" PRId64 "]", i ? ", " : "",
                    c->samples[i][0], c->samples[i][1]);
        fprintf(o, "],\n       \"checks\": {\"uncancelled_fired_once\": %"
                PRIu64 ", \"cancelled_never_fired\": %" PRIu64
                ", \"early\": 0, \"passed\": true}}%s\n",
                oneshots_kept(tr), tr->cancelled,
                bi + 1 < nb ? "," : "");
    }
    fprintf(o, "     ]");
    write_sweep(o, sw, nsw);
    fprintf(o, "}");
}

/* The tick sweep of one trace: each backend of `swb` at each of
 * SWEEP_TICKS, a check pass (lateness against the budgets) and `reps`
 * total passes (CPU per event), repetitions interleaved over the points;
 * a point whose clock would cross more than SWEEP_MAX_TICKS ticks is
 * skipped, its reason kept. */
/* The steps of a check pass of `tr` on `b` at `tick`, estimated before it
 * runs: one per timer that runs and per periodic run, plus, on a granular
 * wheel (TB_CAP_GRANULAR), the wait for each timer its level holds back:
 * up to 1/8 of its delay, in ticks, the first STRIDE_STEPS of them one by
 * one and then in doubling strides (stride_target). */
static double sweep_steps(const struct trace *tr, const struct tb_backend *b,
                          int64_t tick)
{
    double steps = (double)tr->periodic_runs;
    for (size_t i = 0; i < tr->nin; i++) {
        const struct inst *in = &tr->in[i];
        if (in->period || in->ended >= 0)
            continue;
        steps += 1;
        if (!(b->caps & TB_CAP_GRANULAR))
            continue;
        double w = (double)(tr->delays[i] / 8 / tick);
        for (double lim = STRIDE_STEPS; w > lim; lim *= 2)
            w = lim + (w - lim) / 2; /* the next STRIDE_STEPS steps cover
                                        twice as many ticks */
        steps += w;
    }
    return steps;
}

/* The HZ the importer measured for a kernel timer-list trace (its comment
 * line "# HZ=<n> ..."), or 0 when the trace names none. */
static int64_t trace_hz(const struct trace *tr)
{
    for (size_t i = 0; i < tr->ncomments; i++) {
        const char *c = tr->comments[i];
        if (strncmp(c, "# HZ=", 5) != 0)
            continue;
        char *end;
        long long hz = strtoll(c + 5, &end, 10);
        if (end != c + 5 && hz > 0 && hz <= 100000)
            return hz;
    }
    return 0;
}

/* The extra point of kernelwheel's sweep: the jiffy of the trace it
 * replays (issue 38), so that Linux's wheel is judged at its own tick
 * against the budgets that tick defines; 0 when the trace has no HZ or
 * the jiffy is one of SWEEP_TICKS already. */
static int64_t own_jiffy(const struct trace *tr, const struct tb_backend *b)
{
    int64_t hz = trace_hz(tr);
    if (!hz || strcmp(b->name, "kernelwheel") != 0)
        return 0;
    int64_t jiffy = TB_SEC / hz;
    for (size_t k = 0; k < NSWEEP_TICKS; k++)
        if (SWEEP_TICKS[k] == jiffy)
            return 0;
    return jiffy;
}

/* Runs the sweep of one trace into sw (room for nswb * SWEEP_POINTS);
 * returns the points made. */
static size_t run_sweep(const struct trace *tr, const struct tb_backend **swb,
                        size_t nswb, struct sres *sw, int reps,
                        int64_t max_ticks, double max_steps, int64_t overhead,
                        bool quiet, int64_t t0)
{
    uint64_t events = tr->ops[0] + tr->ops[1] + tr->ops[2] + tr->ops[3];
    struct replay rp = {0};
    rp.overhead = overhead;
    struct entry en[MAX_BACKENDS * SWEEP_POINTS];
    size_t n = 0;
    for (size_t bi = 0; bi < nswb; bi++) {
        for (size_t k = 0; k < SWEEP_POINTS; k++) {
            int64_t jiffy = k == NSWEEP_TICKS ? own_jiffy(tr, swb[bi]) : 0;
            if (k == NSWEEP_TICKS && !jiffy)
                continue;
            size_t at = n++;
            struct sres *p = &sw[at];
            memset(p, 0, sizeof *p);
            p->b = swb[bi];
            p->tick = jiffy ? jiffy : SWEEP_TICKS[k];
            p->hz = jiffy ? trace_hz(tr) : 0;
            p->reps = reps;
            if (jiffy)
                snprintf(p->name, sizeof p->name, "%s tick=%" PRId64 "%s",
                         swb[bi]->name,
                         jiffy % TB_MS == 0 ? jiffy / TB_MS : jiffy / TB_US,
                         jiffy % TB_MS == 0 ? "ms" : "us");
            else
                snprintf(p->name, sizeof p->name, "%s tick=%s", swb[bi]->name,
                         SWEEP_TICK_NAMES[k]);
            en[at] = (struct entry){.b = swb[bi]};
            snprintf(en[at].label, sizeof en[at].label, "%s", p->name);
            /* the tick the backend makes of it (Netty's wheel clamps to
             * 1 ms): a point that would repeat another is not run */
            struct tb_config cfg = {.tick_ns = p->tick};
            struct tb_sched *s;
            p->tick_real = p->tick;
            if (tb_create(swb[bi], &cfg, &s) == TB_OK) {
                tb_sched_config(s, &cfg);
                p->tick_real = cfg.tick_ns;
                tb_destroy(s);
            }
            if (p->tick_real != p->tick) {
                snprintf(p->skipped, sizeof p->skipped, "%s makes a %s tick "
                         "%.6g ms (as its original does): the point would "
                         "repeat another", swb[bi]->name,
                         strchr(p->name, '=') + 1, (double)p->tick_real / 1e6);
                continue;
            }
            int64_t ticks = tr->horizon / p->tick;
            if (ticks > max_ticks) {
                snprintf(p->skipped, sizeof p->skipped, "%" PRId64 " ticks "
                         "from 0 to the trace's last deadline (%.3g s), more "
                         "than the %" PRId64 " a sweep point may cross",
                         ticks, (double)tr->horizon / 1e9, max_ticks);
                continue;
            }
            double steps = sweep_steps(tr, swb[bi], p->tick);
            if (steps > max_steps) {
                snprintf(p->skipped, sizeof p->skipped, "its check pass "
                         "would take about %.3g steps (waiting tick by tick "
                         "for what the wheel's levels hold back), more than "
                         "the %.3g a sweep point may take", steps, max_steps);
                continue;
            }
            int64_t c0 = tb_monotonic_ns();
            bool ok = replay_once(&rp, tr, &en[at], p->tick, M_CHECK);
            p->check_s = (double)(tb_monotonic_ns() - c0) / 1e9;
            if (!ok) {
                p->failed = true;
                snprintf(p->error, sizeof p->error, "%s", rp.error);
                continue;
            }
            p->tick_real = rp.tick;
            if (rp.nlate)
                qsort(rp.late, rp.nlate, sizeof *rp.late, cmp_i64);
            p->late_max = rp.nlate ? rp.late[rp.nlate - 1] : 0;
            p->late_p99 = bh_quantile(rp.late, rp.nlate, 0.99);
            p->beyond_budget = rp.beyond_budget;
            p->budget_fires = rp.budget_fires;
            p->beyond_eighth = rp.beyond_eighth;
            p->wakeups = wakeups_of(&rp);
            p->run_instants = rp.run_instants;
        }
    }
    for (int r = 0; r < reps; r++) {
        for (size_t i = 0; i < n; i++) {
            struct sres *p = &sw[i];
            if (p->skipped[0] || p->failed)
                continue;
            int64_t c0 = tb_monotonic_ns();
            bool ok = replay_once(&rp, tr, &en[i], p->tick, M_TOTAL);
            p->total_s += (double)(tb_monotonic_ns() - c0) / 1e9;
            if (!ok) {
                p->failed = true;
                snprintf(p->error, sizeof p->error, "%s", rp.error);
                continue;
            }
            p->total_ns[r] = (double)rp.wall_ns / (double)events;
            p->cpu_ms_per_m[r] = (double)rp.cpu_ns / 1e6 /
                                 ((double)events / 1e6);
        }
        if (!quiet && n)
            fprintf(stderr, "replay: %s: sweep repetition %d of %d done, "
                    "%.1f s\n", tr->path, r + 1, reps,
                    (double)(tb_monotonic_ns() - t0) / 1e9);
    }
    free_replay(&rp);
    return n;
}

/* ---- main --------------------------------------------------------------- */

static void usage(FILE *o)
{
    fprintf(o,
        "usage: timerbench-replay [--backends a,b] [--reps R] [--tick NS]\n"
        "                         [--lateness SPEC] [--no-sweep] "
        "[--sweep-reps R]\n"
        "                         [--out FILE] [--parse-only] [--quiet] "
        "TRACE...\n"
        "Replays timerbench traces (format v1 or v2, bench/README.md) on "
        "each backend's\nvirtual clock; writes JSON to --out (default "
        "stdout).\n"
        "--lateness SPEC gives every timer the budget SPEC, over the "
        "trace's own:\n"
        "  <int><ns|us|ms|s> (absolute) or <number>%% (of each delay, "
        "0 < pct <= 100).\n"
        "--no-sweep leaves out the tick sweep of the ticked backends; "
        "--sweep-reps R\n"
        "  repetitions of each sweep point (default 3); --sweep-max-ticks N "
        "and\n  --sweep-max-steps N skip a point whose clock would cross "
        "more ticks\n  (default 2 10^8) or whose check pass would take more "
        "steps (2 10^7).\n");
}

static void add_entry(struct entry *es, size_t *n,
                      const struct tb_backend *b, unsigned flags)
{
    if (*n >= MAX_BACKENDS)
        return;
    es[*n].b = b;
    es[*n].flags = flags;
    snprintf(es[*n].label, sizeof es[*n].label, "%s%s", b->name,
             flags & TB_F_REMOVE_ON_CANCEL ? "+roc" : "");
    (*n)++;
}

/* TB_REPLAY_PARSER (bench/player_trace.c): the reader only, for the
 * real-time player; a refusal prints and exits 2 as here. */
#if !defined(TB_REPLAY_FUZZ) && !defined(TB_REPLAY_PARSER)
/* Whether every selected backend takes the --tick: each is created with
 * it, as replay_body creates it, and destroyed at once.  One that refuses
 * it (timerwheel: tick * wheel size past INT64_MAX) is the argument's
 * fault, said here before any trace is read (exit 2), not a failed check
 * of the backend after the others have run.  The heaps ignore the tick. */
static bool ticks_taken(const struct entry *bs, size_t nb, int64_t tick)
{
    bool ok = true;
    for (size_t i = 0; i < nb; i++) {
        if (!(bs[i].b->caps & TB_CAP_TICKED))
            continue;
        struct tb_config cfg = {0};
        cfg.tick_ns = tick;
        cfg.flags = bs[i].flags;
        struct tb_sched *s = NULL;
        int rc = tb_create(bs[i].b, &cfg, &s);
        if (rc == TB_OK) {
            tb_destroy(s);
            continue;
        }
        if (rc == TB_ENOMEM)
            die_oom();
        fprintf(stderr, "timerbench-replay: --tick %" PRId64 ": %s does not "
                "take this tick (tb_create: %s); choose a smaller one, or "
                "leave %s out with --backends\n", tick, bs[i].label,
                tb_strerror(rc), bs[i].label);
        ok = false;
    }
    return ok;
}

int main(int argc, char **argv)
{
    static struct entry bs[MAX_BACKENDS];
    size_t nb = 0;
    int reps = 5;
    int64_t tick = TB_MS;
    /* Every repetition builds a fresh scheduler; keep freed memory in the
     * process (as timerbench-bench does), so that a repetition does not
     * fault in pages its predecessor handed back to the kernel.  Between
     * two standard runs the hold trace's timerwheel figure moved 1.7x
     * (55.3 and 32.9 ns per event) with glibc trimming. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    const char *out = NULL;
    bool parse_only = false, quiet = false, total_only = false;
    bool sweep = true;
    int sweep_reps = 3;
    int64_t sweep_max_ticks = SWEEP_MAX_TICKS;
    double sweep_max_steps = SWEEP_MAX_STEPS;
    struct lateness_spec ls = {0};
    /* the trace paths, kept in argv itself over the arguments already read
     * (argv is at least as long): no limit on their number */
    char **traces = argv;
    size_t ntr = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = NULL;
        if (!strcmp(a, "--backends") || !strcmp(a, "--reps") ||
            !strcmp(a, "--tick") || !strcmp(a, "--out") ||
            !strcmp(a, "--lateness") || !strcmp(a, "--sweep-reps") ||
            !strcmp(a, "--sweep-max-ticks") ||
            !strcmp(a, "--sweep-max-steps")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "timerbench-replay: %s needs a value\n", a);
                return 2;
            }
            v = argv[++i];
        }
        if (!strcmp(a, "--backends")) {
            /* an empty name ('' or a,,b) is a mistake, not every backend */
            size_t vl = strlen(v);
            if (!vl || v[0] == ',' || v[vl - 1] == ',' || strstr(v, ",,")) {
                fprintf(stderr, "timerbench-replay: --backends '%.60s' has an "
                        "empty name\n", v);
                return 2;
            }
            char *list = strdup(v), *save = NULL;
            if (!list)
                die_oom();
            for (char *n = strtok_r(list, ",", &save); n;
                 n = strtok_r(NULL, ",", &save)) {
                /* NAME+roc: the backend with remove-on-cancel on */
                size_t len = strlen(n);
                bool roc = len > 4 && !strcmp(n + len - 4, "+roc");
                if (roc)
                    n[len - 4] = '\0';
                const struct tb_backend *b = tb_backend_find(n);
                if (b && roc && !bh_honours_remove_on_cancel(b)) {
                    fprintf(stderr, "timerbench-replay: %s has no "
                            "remove-on-cancel policy: no '%s+roc'\n", n, n);
                    free(list);
                    return 2;
                }
                if (!b) {
                    fprintf(stderr, "timerbench-replay: no backend '%s'; the "
                            "registered backends are:", n);
                    for (size_t k = 0; k < tb_backend_count(); k++)
                        fprintf(stderr, " %s", tb_backend_at(k)->name);
                    fputc('\n', stderr);
                    free(list);
                    return 2;
                }
                unsigned fl = roc ? TB_F_REMOVE_ON_CANCEL : 0;
                for (size_t k = 0; k < nb; k++)
                    if (bs[k].b == b && bs[k].flags == fl) {
                        /* it would be replayed, and ranked, twice */
                        fprintf(stderr, "timerbench-replay: --backends "
                                "names '%s' more than once\n", bs[k].label);
                        free(list);
                        return 2;
                    }
                add_entry(bs, &nb, b, fl);
            }
            free(list);
        } else if (!strcmp(a, "--reps")) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 64) {
                fprintf(stderr, "timerbench-replay: --reps takes 1..64, got "
                        "'%s'\n", v);
                return 2;
            }
            reps = (int)r;
        } else if (!strcmp(a, "--tick")) {
            char *end;
            errno = 0;
            long long t = strtoll(v, &end, 10);
            if (*end || end == v || t < 1 || errno == ERANGE) {
                /* strtoll clamps an overflow to LLONG_MAX: refused, not
                 * read as INT64_MAX */
                fprintf(stderr, "timerbench-replay: --tick takes a positive "
                        "number of ns up to %" PRId64 ", got '%s'\n",
                        INT64_MAX, v);
                return 2;
            }
            tick = t;
        } else if (!strcmp(a, "--out")) {
            out = v;
        } else if (!strcmp(a, "--lateness")) {
            const char *why;
            if (!parse_lateness(v, &ls, &why)) {
                fprintf(stderr, "timerbench-replay: --lateness '%s': %s; "
                        "accepted: <int><ns|us|ms|s> (an absolute budget, "
                        "e.g. 50us, 1ms) or <number>%% (a share of each "
                        "delay, 0 < pct <= 100, e.g. 1%%, 12.5%%)\n",
                        shown(v), why);
                return 2;
            }
        } else if (!strcmp(a, "--sweep-reps")) {
            char *end;
            long r = strtol(v, &end, 10);
            if (*end || r < 1 || r > 64) {
                fprintf(stderr, "timerbench-replay: --sweep-reps takes 1..64, "
                        "got '%s'\n", v);
                return 2;
            }
            sweep_reps = (int)r;
        } else if (!strcmp(a, "--sweep-max-ticks") ||
                   !strcmp(a, "--sweep-max-steps")) {
            char *end;
            long long m = strtoll(v, &end, 10);
            if (*end || m < 1) {
                fprintf(stderr, "timerbench-replay: %s takes a positive "
                        "number, got '%s'\n", a, v);
                return 2;
            }
            if (a[12] == 't')
                sweep_max_ticks = m;
            else
                sweep_max_steps = (double)m;
        } else if (!strcmp(a, "--no-sweep")) {
            sweep = false;
        } else if (!strcmp(a, "--skip-cancel") && i + 1 < argc) {
            char *at;
            g_skip_cancel = strtoull(argv[++i], &at, 10);
            g_skip_on = *at == '@' ? at + 1 : NULL;
        } else if (!strcmp(a, "--total-only")) {
            total_only = true;
        } else if (!strcmp(a, "--parse-only")) {
            parse_only = true;
        } else if (!strcmp(a, "--quiet")) {
            quiet = true;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' && a[1]) {
            fprintf(stderr, "timerbench-replay: unknown option '%s'\n", a);
            usage(stderr);
            return 2;
        } else {
            traces[ntr++] = argv[i]; /* ntr < i: already read */
        }
    }
    if (!ntr) {
        usage(stderr);
        return 2;
    }
    /* by default every backend, and beside a backend that honours it its
     * remove-on-cancel variant: on a cancel-heavy trace the policy decides
     * how much a heap holds */
    if (!nb)
        for (size_t k = 0; k < tb_backend_count(); k++) {
            add_entry(bs, &nb, tb_backend_at(k), 0);
            if (bh_honours_remove_on_cancel(tb_backend_at(k)))
                add_entry(bs, &nb, tb_backend_at(k), TB_F_REMOVE_ON_CANCEL);
        }
    if (!ticks_taken(bs, nb, tick))
        return 2;
    struct trace *trs = calloc(ntr, sizeof *trs);
    if (!trs)
        die_oom();
    g_trs = trs;
    for (size_t t = 0; t < ntr; t++) {
        g_ntr = t + 1;
        parse_trace(&trs[t], traces[t]);
        apply_budgets(&trs[t], &ls);
    }
    if (parse_only) {
        for (size_t t = 0; t < ntr; t++)
            printf("%s: %" PRIu64 " events (%zu replayed), %zu timers, "
                   "cancel_unknown %" PRIu64 ", reschedule_unknown %" PRIu64
                   "\n", trs[t].path, trs[t].ops[0] + trs[t].ops[1] +
                   trs[t].ops[2] + trs[t].ops[3], trs[t].nev, trs[t].nin,
                   trs[t].cancel_unknown, trs[t].reschedule_unknown);
        free_parsing();
        return 0;
    }
    if (total_only) {
        /* one checked total pass per trace and backend, no JSON: what
         * bench/replay.py --counts runs under callgrind */
        struct replay rp = {0};
        int status = 0;
        for (size_t t = 0; t < ntr; t++) {
            for (size_t bi = 0; bi < nb; bi++) {
                if (!replay_once(&rp, &trs[t], &bs[bi], tick, M_TOTAL)) {
                    status = 1;
                    continue;
                }
                printf("%s %s %" PRIu64 " events %" PRIu64 " fires\n",
                       trs[t].path, bs[bi].label, trs[t].ops[0] +
                       trs[t].ops[1] + trs[t].ops[2] + trs[t].ops[3],
                       rp.fires);
            }
        }
        free_replay(&rp);
        free_parsing();
        return status;
    }
    int64_t overhead = clock_overhead();
    FILE *o = stdout;
    if (out && !(o = fopen(out, "w"))) {
        fprintf(stderr, "timerbench-replay: %s: %s\n", out, strerror(errno));
        return 1;
    }
    struct bres *br = calloc(nb, sizeof *br);
    if (!br)
        die_oom();
    fprintf(o, "{\"format\": \"timerbench-replay\", \"version\": 1,\n"
            " \"reps\": %d, \"tick_ns\": %" PRId64
            ", \"clock_overhead_ns\": %" PRId64 ",\n"
            " \"method\": \"check pass once per backend (fine steps: exact "
            "lateness, pending, bytes); total pass R times (no clock reads "
            "inside); per-kind pass R times (runs of one kind at one instant "
            "timed as a batch, calibrated clock cost subtracted per batch; "
            "expire = advance time / timers fired); backends interleaved per "
            "repetition\",\n", reps, tick, overhead);
    if (ls.kind) {
        fprintf(o, " \"lateness_override\": {\"spec\": ");
        json_str(o, ls.text);
        if (ls.kind == 1)
            fprintf(o, ", \"kind\": \"abs\", \"value\": %" PRId64 "},\n",
                    ls.abs_ns);
        else
            fprintf(o, ", \"kind\": \"pct\", \"value\": %.8g},\n",
                    (double)ls.share_e8 / 1e6);
    } else {
        fprintf(o, " \"lateness_override\": null,\n");
    }
    fprintf(o, " \"sweep\": {\"run\": %s, \"reps\": %d, \"max_ticks\": %"
            PRId64 ", \"max_steps\": %.0f},\n \"traces\": [\n",
            sweep ? "true" : "false", sweep_reps, sweep_max_ticks,
            sweep_max_steps);
    /* the sweep's points: every ticked backend given, at each tick */
    const struct tb_backend *swb[MAX_BACKENDS];
    size_t nswb = 0;
    for (size_t bi = 0; sweep && bi < nb; bi++) {
        const struct tb_backend *b = bs[bi].b;
        bool seen = false;
        for (size_t k = 0; k < nswb; k++)
            seen |= swb[k] == b;
        if ((b->caps & TB_CAP_TICKED) && !seen)
            swb[nswb++] = b;
    }
    size_t nsw = nswb * SWEEP_POINTS;
    struct sres *sw = calloc(nsw ? nsw : 1, sizeof *sw);
    if (!sw)
        die_oom();
    int64_t t0 = tb_monotonic_ns();
    size_t nfailed = 0;
    for (size_t t = 0; t < ntr; t++) {
        const struct trace *tr = &trs[t];
        uint64_t events = tr->ops[0] + tr->ops[1] + tr->ops[2] + tr->ops[3];
        memset(br, 0, nb * sizeof *br);
        struct replay rp = {0};
        rp.overhead = overhead;
        for (size_t bi = 0; bi < nb; bi++) {
            br[bi].e = &bs[bi];
            struct tb_config cfg = {0};
            cfg.tick_ns = tick;
            cfg.flags = bs[bi].flags;
            struct tb_sched *s;
            if (tb_create(bs[bi].b, &cfg, &s) == TB_OK) {
                tb_sched_config(s, &br[bi].cfg);
                tb_destroy(s);
            }
            br[bi].check.overhead = overhead;
            if (!replay_once(&br[bi].check, tr, &bs[bi], tick, M_CHECK))
                failed_pass(&br[bi], &br[bi].check);
            br[bi].tick = br[bi].check.tick;
            if (!quiet && !br[bi].failed)
                fprintf(stderr, "replay: [%zu/%zu] %s: %s checked: %" PRIu64
                        " fires, peak %" PRIu64 " pending, %.1f s\n", t + 1,
                        ntr, tr->path, bs[bi].label, br[bi].check.fires,
                        br[bi].check.st.peak_pending,
                        (double)(tb_monotonic_ns() - t0) / 1e9);
        }
        for (int r = 0; r < reps; r++) {
            for (size_t bi = 0; bi < nb; bi++) {
                if (br[bi].failed)
                    continue;
                if (!replay_once(&rp, tr, &bs[bi], tick, M_TOTAL)) {
                    failed_pass(&br[bi], &rp);
                    continue;
                }
                br[bi].total_ns[r] = (double)rp.wall_ns / (double)events;
                br[bi].cpu_ms_per_m[r] = (double)rp.cpu_ns / 1e6 /
                                         ((double)events / 1e6);
                if (!replay_once(&rp, tr, &bs[bi], tick, M_KINDS)) {
                    failed_pass(&br[bi], &rp);
                    continue;
                }
                for (int k = 0; k < K_COUNT; k++) {
                    br[bi].kind_ops[k] = rp.k_ops[k];
                    br[bi].kind_ns[k][r] = rp.k_ops[k]
                        ? (double)rp.k_ns[k] / (double)rp.k_ops[k] : 0.0;
                }
                br[bi].advances = rp.advances;
            }
            if (!quiet)
                fprintf(stderr, "replay: [%zu/%zu] %s: repetition %d of %d "
                        "done, %.1f s\n", t + 1, ntr, tr->path, r + 1, reps,
                        (double)(tb_monotonic_ns() - t0) / 1e9);
        }
        size_t made = run_sweep(tr, swb, nswb, sw, sweep_reps,
                                sweep_max_ticks, sweep_max_steps, overhead,
                                quiet, t0);
        write_trace(o, tr, br, nb, reps, &ls, sw, made);
        fprintf(o, "%s\n", t + 1 < ntr ? "," : "");
        for (size_t bi = 0; bi < nb; bi++) {
            nfailed += br[bi].failed;
            free_replay(&br[bi].check);
        }
        free_replay(&rp);
    }
    fprintf(o, " ]}\n");
    free(br);
    free(sw);
    free_parsing();
    if (o != stdout && fclose(o) != 0) {
        fprintf(stderr, "timerbench-replay: %s: write failed\n", out);
        return 1;
    }
    if (nfailed)
        fprintf(stderr, "timerbench-replay: %zu replays of a trace on a "
                "backend failed their checks; the others are written\n",
                nfailed);
    return nfailed ? 1 : 0;
}
#endif /* TB_REPLAY_FUZZ, TB_REPLAY_PARSER */
