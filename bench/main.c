/*
 * bench/main.c — timerbench-bench: the one benchmark binary.
 *
 *   timerbench-bench [--profile smoke|quick|standard|full] [--harness LIST]
 *                    [--backends a,b] [--seed N] [--csv FILE] [--progress]
 *                    [--journal FILE] [--cpu K] [--info] [Google Benchmark flags...]
 *
 * It registers the harnesses named by --harness (shim, micro, runtime, libs;
 * default all) for every registered backend (or those named), records the
 * machine, build and workload facts in the JSON "context", and hands the
 * rest of the command line to Google Benchmark: --benchmark_out=FILE
 * --benchmark_out_format=json writes the results, --benchmark_filter=RE
 * selects.  The profile supplies --benchmark_min_time,
 * --benchmark_repetitions and (with more than one repetition)
 * --benchmark_enable_random_interleaving=true unless they are given, so
 * that a slow spell of the machine spreads over many instances instead of
 * falling on every repetition of one.  --cpu K pins the process to core K
 * (for the single-threaded harnesses: a migration in a timed batch costs
 * its caches); the JSON context records it as `pinned_cpu`.
 * --journal FILE appends each instance's results as it finishes,
 * one JSON document a line, so that an interrupted run keeps them.
 * TB_BENCH_PROFILE and
 * TB_BENCH_SEED set the defaults of --profile and --seed.
 */
#include <malloc.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>

#include "bench.h"
#include "bench_build.h"

#define DEFAULT_SEED 0x74696D6572ULL /* "timer" */

static int pinned_cpu = -1; /* --cpu, -1 if not pinned */

static void usage(FILE *f)
{
    fprintf(f,
            "usage: timerbench-bench [--profile NAME] [--harness LIST] "
            "[--backends LIST]\n"
            "                        [--seed N] [--csv FILE] [--progress] "
            "[--journal FILE] [--info]\n"
            "                        [--benchmark_* flags]\n"
            "  --profile   %s (default standard)\n"
            "  --harness   comma-separated: shim, micro, runtime, libs "
            "(default all)\n"
            "  --backends  comma-separated backend names (default every "
            "registered one)\n"
            "  --seed      base seed of every workload (default %llu)\n"
            "  --csv       file for raw latency samples\n"
            "  --progress  one line per benchmark instance on stderr\n"
            "  --journal   file to append each finished instance to, one "
            "JSON line each\n"
            "  --cpu       pin the process to this core\n"
            "  --info      print build facts as JSON and exit\n",
            bh_profile_names(), (unsigned long long)DEFAULT_SEED);
}

/* True if `item` is in the comma-separated `list`. */
static bool listed(const char *list, const char *item)
{
    size_t n = strlen(item);
    for (const char *p = list; *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, item, n) == 0)
            return true;
        p += len + (end ? 1 : 0);
    }
    return false;
}

/* The flag's value for "--flag=value" or "--flag value"; NULL if argv[*i]
 * is another flag. */
static const char *flag_value(int argc, char **argv, int *i, const char *flag)
{
    size_t n = strlen(flag);
    if (strncmp(argv[*i], flag, n) != 0)
        return NULL;
    if (argv[*i][n] == '=')
        return argv[*i] + n + 1;
    if (argv[*i][n] == '\0' && *i + 1 < argc)
        return argv[++*i];
    return NULL;
}

static bool has_flag(int argc, char **argv, const char *prefix)
{
    for (int i = 1; i < argc; i++)
        if (strncmp(argv[i], prefix, strlen(prefix)) == 0)
            return true;
    return false;
}

static int64_t measure_clock_overhead(int64_t (*now)(void))
{
    enum { ROUNDS = 2001 };
    static int64_t d[ROUNDS];
    for (int i = 0; i < ROUNDS; i++) {
        int64_t a = now();
        int64_t b = now();
        d[i] = b - a;
    }
    bh_sort(d, ROUNDS);
    return d[ROUNDS / 2];
}

static void print_info(void)
{
    printf("{\n  \"timerbench_version\": \"%s\",\n  \"git_commit\": \"%s\",\n"
           "  \"build_type\": \"%s\",\n  \"optimization\": \"%s\",\n"
           "  \"ndebug\": \"%s\",\n  \"c_compiler\": \"%s\",\n"
           "  \"cpp_compiler\": \"%s\",\n  \"c_args\": \"%s\",\n"
           "  \"google_benchmark\": \"%s\",\n  \"backends\": [",
           TB_VERSION, TB_GIT_COMMIT, TB_BUILD_TYPE, TB_OPTIMIZATION,
           TB_NDEBUG, TB_C_COMPILER, TB_CPP_COMPILER, TB_C_ARGS,
           TB_GBENCH_VERSION);
    for (size_t i = 0; i < tb_backend_count(); i++)
        printf("%s\"%s\"", i ? ", " : "", tb_backend_at(i)->name);
    /* each backend's capabilities, so the report classifies a backend it
     * has never heard of (a heap, a wheel, lazy cancel) from the run */
    static const struct {
        unsigned bit;
        const char *name;
    } caps[] = {{TB_CAP_FIFO_TIES, "fifo_ties"},
                {TB_CAP_TICKED, "ticked"},
                {TB_CAP_PURGE, "purge"},
                {TB_CAP_FAIL_KILLS, "fail_kills"},
                {TB_CAP_LAZY_CANCEL, "lazy_cancel"},
                {TB_CAP_SKIP_MISSED, "skip_missed"},
                {TB_CAP_GRANULAR, "granular"},
                {TB_CAP_WAIT_NANOSLEEP, "wait_nanosleep"},
                {TB_CAP_RANGE, "range"},
                {TB_CAP_TREE, "tree"}};
    printf("],\n  \"backend_caps\": {");
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        printf("%s\"%s\": [", i ? ", " : "", b->name);
        bool first = true;
        for (size_t k = 0; k < sizeof caps / sizeof caps[0]; k++)
            if (b->caps & caps[k].bit) {
                printf("%s\"%s\"", first ? "" : ", ", caps[k].name);
                first = false;
            }
        printf("]");
    }
    printf("},\n  \"timer_slack_ns\": %ld,\n  \"profiles\": {",
           bh_timer_slack());
    /* what each profile measures, so tests and tools can check its sample
     * counts without running it */
    static const char *const names[] = {"smoke", "quick", "standard", "full"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const struct bh_profile *p = bh_profile_find(names[i]);
        printf("%s\n    \"%s\": {\"repetitions\": %d, \"min_time\": %g, "
               "\"runtime_repetitions\": %d, \"light_samples\": %d, "
               "\"work_budget\": %g, \"micro\": {\"orig\": %s, "
               "\"cover\": %s, \"burst\": %s, \"wide\": %s, "
               "\"wide_all\": %s, \"precision_n\": %lld, "
               "\"precision_reps\": %d}, \"libs_slow_max_n\": %lld}",
               i ? "," : "", p->name, p->repetitions, p->min_time,
               p->runtime_repetitions, p->light_samples, p->work_budget,
               p->orig_micro ? "true" : "false", p->cover ? "true" : "false",
               p->burst_micro ? "true" : "false", p->wide ? "true" : "false",
               p->wide_all ? "true" : "false", (long long)p->precision_n,
               p->precision_reps ? p->precision_reps : p->repetitions,
               (long long)p->libs_slow_max_n);
    }
    printf("\n  }\n}\n");
}

static void add_context(const char *harness)
{
    char buf[512];
    tbb_context("timerbench_version", TB_VERSION);
    tbb_context("git_commit", TB_GIT_COMMIT);
    tbb_context("build_type", TB_BUILD_TYPE);
    tbb_context("optimization", TB_OPTIMIZATION);
    tbb_context("ndebug", TB_NDEBUG);
    tbb_context("c_compiler", TB_C_COMPILER);
    tbb_context("c_args", TB_C_ARGS);
    tbb_context("google_benchmark", TB_GBENCH_VERSION);
    struct utsname u;
    if (uname(&u) == 0) {
        snprintf(buf, sizeof buf, "%s %s %s", u.sysname, u.release,
                 u.machine);
        tbb_context("kernel", buf);
    }
    tbb_context("profile", bh.profile->name);
    tbb_context("harness", harness);
    snprintf(buf, sizeof buf, "%llu", (unsigned long long)bh.seed);
    tbb_context("seed", buf);
    tbb_context("seed_rule", "splitmix64(seed ^ fnv1a(family name) ^ "
                             "splitmix64(N)) per instance");
    snprintf(buf, sizeof buf, "%ld", bh.timer_slack_ns);
    tbb_context("timer_slack_ns", buf);
    snprintf(buf, sizeof buf, "%d", pinned_cpu);
    tbb_context("pinned_cpu", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)bh.clock_overhead_ns);
    tbb_context("clock_overhead_ns", buf);
    snprintf(buf, sizeof buf, "%lld", (long long)bh.cpu_clock_overhead_ns);
    tbb_context("cpu_clock_overhead_ns", buf);
    buf[0] = '\0';
    for (size_t i = 0; i < bh.nbackends; i++) {
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, "%s%s", i ? "," : "",
                 bh.backends[i]->name);
    }
    tbb_context("backends", buf);
    /* the backends measured under reschedule's strategy=again */
    buf[0] = '\0';
    for (size_t i = 0; i < bh.nbackends; i++) {
        if (!bh_reschedules_in_place(bh.backends[i]))
            continue;
        size_t len = strlen(buf);
        snprintf(buf + len, sizeof buf - len, "%s%s", len ? "," : "",
                 bh.backends[i]->name);
    }
    tbb_context("reschedule_in_place", buf);
    for (size_t i = 0; i < bh.nbackends; i++) {
        char key[64];
        snprintf(key, sizeof key, "backend.%s", bh.backends[i]->name);
        snprintf(buf, sizeof buf, "%s%s", bh.backends[i]->description,
                 (bh.backends[i]->caps & TB_CAP_TICKED) ? " [ticked]" : "");
        tbb_context(key, buf);
    }
    for (int w = 0; w < BH_NWORKLOADS; w++) {
        char key[64];
        snprintf(key, sizeof key, "workload.%s", bh_workloads[w].name);
        tbb_context(key, bh_workloads[w].what);
    }
}

static int run(char **rest, int nrest, const char *profile,
               const char *seed, const char *harness, const char *backends,
               const char *csv, const char *journal, bool progress);

/* Pins the whole process (threads it starts inherit the mask) to `cpu`. */
static bool pin(const char *cpu)
{
    char *end;
    long k = strtol(cpu, &end, 10);
    cpu_set_t set;
    if (*cpu == '\0' || *end != '\0' || k < 0 || k >= CPU_SETSIZE)
        return false;
    CPU_ZERO(&set);
    CPU_SET((int)k, &set);
    if (sched_setaffinity(0, sizeof set, &set) != 0)
        return false;
    pinned_cpu = (int)k;
    return true;
}

int main(int argc, char **argv)
{
    const char *profile = getenv("TB_BENCH_PROFILE");
    const char *seed = getenv("TB_BENCH_SEED");
    const char *harness = "shim,micro,runtime,libs";
    const char *backends = NULL;
    const char *csv = NULL;
    const char *journal = NULL;
    bool progress = false;
    /* our flags out, the rest (Google Benchmark's) kept in order */
    char **rest = calloc((size_t)argc + 4, sizeof *rest);
    if (!rest)
        return 2;
    int nrest = 0;
    rest[nrest++] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = flag_value(argc, argv, &i, "--profile")))
            profile = v;
        else if ((v = flag_value(argc, argv, &i, "--harness")))
            harness = v;
        else if ((v = flag_value(argc, argv, &i, "--backends")))
            backends = v;
        else if ((v = flag_value(argc, argv, &i, "--seed")))
            seed = v;
        else if ((v = flag_value(argc, argv, &i, "--csv")))
            csv = v;
        else if ((v = flag_value(argc, argv, &i, "--journal")))
            journal = v;
        else if ((v = flag_value(argc, argv, &i, "--cpu"))) {
            if (!pin(v)) {
                fprintf(stderr, "timerbench-bench: cannot pin to core "
                                "'%s'\n", v);
                free(rest);
                return 2;
            }
        }
        else if (strcmp(argv[i], "--progress") == 0)
            progress = true;
        else if (strcmp(argv[i], "--info") == 0) {
            print_info();
            free(rest);
            return 0;
        } else if (strcmp(argv[i], "--help") == 0 ||
                   strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            free(rest);
            return 0;
        } else
            rest[nrest++] = argv[i];
    }
    int status = run(rest, nrest, profile, seed, harness, backends, csv,
                     journal, progress);
    free(rest);
    return status;
}

/* Everything after the command line is split: our flags are in the
 * arguments, Google Benchmark's in rest[0..nrest). */
static int run(char **rest, int nrest, const char *profile,
               const char *seed, const char *harness, const char *backends,
               const char *csv, const char *journal, bool progress)
{
    bh.profile = bh_profile_find(profile ? profile : "standard");
    if (!bh.profile) {
        fprintf(stderr, "timerbench-bench: unknown profile '%s'\n", profile);
        usage(stderr);
        return 2;
    }
    bh.seed = seed ? strtoull(seed, NULL, 0) : DEFAULT_SEED;
    tbb_spell_wait(bh.profile->spell_wait_seconds);
    for (size_t i = 0; i < tb_backend_count(); i++) {
        const struct tb_backend *b = tb_backend_at(i);
        if ((!backends || listed(backends, b->name)) &&
            bh.nbackends < sizeof bh.backends / sizeof bh.backends[0])
            bh.backends[bh.nbackends++] = b;
    }
    if (backends)
        for (const char *p = backends; *p;) {
            const char *end = strchr(p, ',');
            size_t len = end ? (size_t)(end - p) : strlen(p);
            char name[64];
            snprintf(name, sizeof name, "%.*s", (int)len, p);
            if (!tb_backend_find(name)) {
                fprintf(stderr, "timerbench-bench: no backend '%s'\n", name);
                return 2;
            }
            p += len + (end ? 1 : 0);
        }
    if (csv) {
        bh.csv = fopen(csv, "w");
        if (!bh.csv) {
            perror(csv);
            return 2;
        }
        fprintf(bh.csv, "benchmark,metric,rep,seq,value_ns,weight\n");
    }
    /* Memory freed by one benchmark stays in the process for the next:
     * no mmap'd blocks (glibc returns those to the kernel at free) and no
     * trimming.  Otherwise whether a fill's growth touched fresh pages
     * (page faults inside the timed part) depended on what the interleaved
     * benchmarks before it had freed: fill at 10^5 took 25-35 ns per task
     * without faults and 250-450 ns with 19 per 1000 tasks, in the same
     * run. */
    mallopt(M_MMAP_MAX, 0);
    mallopt(M_TRIM_THRESHOLD, -1);
    bh.timer_slack_ns = bh_timer_slack();
    bh.clock_overhead_ns = measure_clock_overhead(tb_monotonic_ns);
    bh.cpu_clock_overhead_ns = measure_clock_overhead(bh_cpu_now);

    char min_time[64], reps[64];
    char interleave[] = "--benchmark_enable_random_interleaving=true";
    bh.user_min_time = has_flag(nrest, rest, "--benchmark_min_time");
    if (!bh.user_min_time) {
        snprintf(min_time, sizeof min_time, "--benchmark_min_time=%g",
                 bh.profile->min_time);
        rest[nrest++] = min_time;
    }
    if (!has_flag(nrest, rest, "--benchmark_repetitions")) {
        snprintf(reps, sizeof reps, "--benchmark_repetitions=%d",
                 bh.profile->repetitions);
        rest[nrest++] = reps;
    }
    if (!has_flag(nrest, rest, "--benchmark_enable_random_interleaving") &&
        bh.profile->repetitions > 1)
        rest[nrest++] = interleave;
    rest[nrest] = NULL;
    if (tbb_init(&nrest, rest) != 0) {
        usage(stderr);
        return 2;
    }
    if (journal && tbb_journal(journal) != 0) {
        perror(journal);
        return 2;
    }
    tbb_progress(progress);
    add_context(harness);
    if (listed(harness, "shim"))
        bh_register_shim();
    if (listed(harness, "micro"))
        bh_register_micro();
    if (listed(harness, "runtime"))
        bh_register_runtime();
    if (listed(harness, "libs"))
        bh_register_libs();
    tbb_run();
    tbb_shutdown();
    bh_release_all();
    if (bh.csv)
        fclose(bh.csv);
    return 0;
}
