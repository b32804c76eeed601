/*
 * trace_target.c — fuzzing of the trace reader of timerbench-replay
 * (bench/replay.c, included whole with TB_REPLAY_FUZZ: no main, a refusal
 * comes back here instead of exiting).  Each input is a trace file's bytes:
 *
 *   - refused: the message is "fuzz.trace:LINE: why" with LINE at most the
 *     input's line count plus one, short and printable ASCII whatever the
 *     input held (bad fields are echoed at most SHOWN_BYTES bytes, \xNN);
 *   - accepted: every time, delay and period is below 2^62 ns and so is
 *     every deadline and every hard expiry (deadline + slack, format v2;
 *     a v1 trace has no slack), events are in time order, the periodic timers make at
 *     most MAX_PERIODIC_RUNS runs, no line was longer than MAX_LINE; then
 *     the trace is replayed (check pass) on every backend, or the one named
 *     by TB_TRACE_FUZZ_BACKEND, and must pass: a timer that never fires, an
 *     early fire or a signed overflow (UBSan) is a finding.
 *
 * Built twice (tests/fuzz/meson.build): with TB_LIBFUZZER as a libFuzzer
 * target (clang), and without as `trace_fuzz_replay FILE|DIR...`, which
 * runs the committed seeds (trace-corpus/) in every build.
 */
#define TB_REPLAY_FUZZ 1
/* the JSON writer and main's helpers are not used here */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wunused-function"
#include "../../bench/replay.c"
#pragma GCC diagnostic pop

#ifdef TB_LIBFUZZER
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
#endif

static const char FUZZ_PATH[] = "fuzz.trace";
static const struct tb_backend *only;
/* A replay of an accepted trace is skipped above this many periodic runs,
 * so that one input stays well under libFuzzer's timeout. */
#define FUZZ_MAX_RUNS 100000

static void __attribute__((noreturn, format(printf, 1, 2)))
finding(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "trace_target: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

static long count_lines(const uint8_t *data, size_t size)
{
    long n = 0;
    for (size_t i = 0; i < size; i++)
        n += data[i] == '\n';
    return n + 1;
}

/* A refusal's message: "fuzz.trace:LINE: why", printable ASCII, short. */
static void check_refusal(const uint8_t *data, size_t size)
{
    size_t len = strlen(g_refusal);
    for (size_t i = 0; i < len; i++)
        if (g_refusal[i] < 0x20 || g_refusal[i] > 0x7e)
            finding("refusal holds byte 0x%02x at %zu: %s",
                    (unsigned char)g_refusal[i], i, g_refusal);
    if (len + 1 >= sizeof g_refusal || len > 400)
        finding("refusal of %zu bytes: %s", len, g_refusal);
    size_t pl = sizeof FUZZ_PATH - 1;
    char *end;
    long line = strncmp(g_refusal, FUZZ_PATH, pl) || g_refusal[pl] != ':'
                    ? -1 : strtol(g_refusal + pl + 1, &end, 10);
    if (line < 1 || strncmp(end, ": ", 2) != 0)
        finding("refusal not in the form FILE:LINE: why: %s", g_refusal);
    if (line > count_lines(data, size))
        finding("refusal names line %ld of %ld: %s", line,
                count_lines(data, size), g_refusal);
}

/* An accepted trace keeps every bound of the format. */
static void check_accepted(const struct trace *tr)
{
    int64_t prev = 0;
    for (size_t i = 0; i < tr->nev; i++) {
        if (tr->ev[i].t < prev || tr->ev[i].t >= TB_MAX_DELAY)
            finding("event %zu at %" PRId64 " ns", i, tr->ev[i].t);
        prev = tr->ev[i].t;
    }
    for (size_t i = 0; i < tr->nin; i++) {
        const struct inst *in = &tr->in[i];
        if (in->deadline < 0 || in->deadline >= TB_MAX_DELAY ||
            in->period < 0 || in->period >= TB_MAX_DELAY)
            finding("timer of line %ld: deadline %" PRId64 ", period %"
                    PRId64, in->line, in->deadline, in->period);
        /* a slack (format v2) is -1 (none) or keeps its hard expiry on
         * the clock, and it is the timer's budget (no --lateness here) */
        if (in->slack < -1 || (in->slack >= 0 &&
                               in->slack >= TB_MAX_DELAY - in->deadline) ||
            in->budget != in->slack || (tr->version == 1 && in->slack >= 0))
            finding("timer of line %ld: slack %" PRId64 ", budget %" PRId64
                    " (format v%d)", in->line, in->slack, in->budget,
                    tr->version);
    }
    if (tr->periodic_runs > MAX_PERIODIC_RUNS)
        finding("%" PRIu64 " periodic runs accepted", tr->periodic_runs);
    if (tr->t_first > tr->t_last)
        finding("first event at %" PRId64 ", last at %" PRId64, tr->t_first,
                tr->t_last);
}

/* The check pass of the accepted trace on each backend (1 ms tick). */
static void replay_accepted(const struct trace *tr)
{
    if (tr->periodic_runs > FUZZ_MAX_RUNS)
        return;
    struct replay rp = {0};
    for (size_t i = 0; i < tb_backend_count(); i++) {
        struct entry en = {tb_backend_at(i), 0, ""};
        if (only && en.b != only)
            continue;
        snprintf(en.label, sizeof en.label, "%s", en.b->name);
        if (!replay_once(&rp, tr, &en, TB_MS, M_CHECK))
            finding("%s: %s", en.label, rp.error);
    }
    free_replay(&rp);
}

/* The parse, with its refusal as a jump back here. */
static int parse_input(struct trace *tr, FILE *f)
{
    if (setjmp(g_refused))
        return 2;
    parse_stream(tr, FUZZ_PATH, f);
    return 0;
}

static void run_input(const uint8_t *data, size_t size)
{
    /* /dev/null is the empty file (fmemopen wants at least one byte) */
    FILE *f = size ? fmemopen((void *)(uintptr_t)data, size, "r")
                   : fopen("/dev/null", "r");
    if (!f)
        finding("cannot open the input: %s", strerror(errno));
    g_trs = calloc(1, sizeof *g_trs);
    if (!g_trs)
        die_oom();
    g_ntr = 1;
    if (parse_input(g_trs, f)) {
        check_refusal(data, size); /* refuse() has freed the parse */
        return;
    }
    check_accepted(g_trs);
    replay_accepted(g_trs);
    free_parsing();
}

static void init_backend(void)
{
    const char *name = getenv("TB_TRACE_FUZZ_BACKEND");
    if (name && *name && !(only = tb_backend_find(name))) {
        fprintf(stderr, "trace_target: TB_TRACE_FUZZ_BACKEND=%s is not a "
                "registered backend\n", name);
        exit(2);
    }
}

#ifdef TB_LIBFUZZER

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    init_backend();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_input(data, size);
    return 0;
}

#else /* the committed seeds, in every build */

#include "inputs.h"

static long files;

static void run_file(const char *path, const uint8_t *buf, size_t n)
{
    fprintf(stderr, "trace_fuzz_replay: %s\n", path);
    run_input(buf, n);
    files++;
}

int main(int argc, char **argv)
{
    init_backend();
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|DIR...\n", argv[0]);
        return 2;
    }
    fuzz_inputs(argv + 1, argc - 1, run_file);
    if (!files) {
        fprintf(stderr, "trace_fuzz_replay: no inputs found\n");
        return 2;
    }
    printf("trace_fuzz_replay: %ld inputs, every refusal well-formed, "
           "every accepted trace replayed with its checks passing\n", files);
    return 0;
}

#endif
