// bench/shim.cc — the C++ side of bench/shim.h: registers C benchmarks with
// Google Benchmark and runs their timed loop in batches.
//
// The loop below is the only code between Google Benchmark's iteration
// bookkeeping and the C operation; its cost per iteration is what the
// shim/empty benchmarks measure (the design's budget is 1.5 ns).

#include "shim.h"

#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <cerrno>
#include <deque>
#include <list>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <fcntl.h>
#include <unistd.h>

struct tbb_bench {
    std::string name;
    tbb_ops ops;
    void *ctx;
    unsigned flags;
    size_t nargs;
    std::vector<std::string> arg_names;
    benchmark::internal::Benchmark *gb;
};

struct tbb_state {
    benchmark::State *st;
    tbb_bench *def;
    int64_t batch;
    bool discard;  // tbb_discard(): run the batch again
    // tbb_skip()'s message, held until the run's iterations are used up
    // (finish_failed): Google Benchmark checks that every repetition of an
    // instance reports the same iteration count, failed ones included, and
    // aborts the process when they differ (statistics.cc, ComputeStats).
    std::string skip;
};

namespace {

// Families live as long as the process; a deque keeps their addresses
// stable while more are registered.
std::deque<std::unique_ptr<tbb_bench>> &families()
{
    static std::deque<std::unique_ptr<tbb_bench>> f;
    return f;
}

// Live instances, most recently used first.  Google Benchmark runs one
// instance at a time; with --benchmark_enable_random_interleaving the
// repetitions of an instance are scattered among the others', so a
// TBB_REUSE instance is kept while the process's resident memory stays
// within a budget (TBB_CACHE_MB, default a quarter of the machine's memory,
// at most 4 GiB), the least recently used torn down first: an instance
// holding 10^6 tasks is then not filled again for every repetition.
struct Instance {
    tbb_bench *def = nullptr;
    std::vector<int64_t> args;
    void *inst = nullptr;
    int64_t batch = 1;
    std::string error;   // setup failed: repeat the message, not the work
    bool live = false;
};

std::list<Instance> cache;
const size_t kMaxCached = 512;
bool progress_enabled = false;
size_t instances_started = 0;
std::chrono::steady_clock::time_point run_start;

size_t resident_bytes()
{
    unsigned long size = 0, resident = 0;
    FILE *f = std::fopen("/proc/self/statm", "r");
    if (f) {
        if (std::fscanf(f, "%lu %lu", &size, &resident) != 2)
            resident = 0;
        std::fclose(f);
    }
    return static_cast<size_t>(resident) *
           static_cast<size_t>(sysconf(_SC_PAGESIZE));
}

size_t cache_budget()
{
    static size_t budget = [] {
        const char *env = std::getenv("TBB_CACHE_MB");
        if (env && *env)
            return static_cast<size_t>(std::strtoull(env, nullptr, 10)) << 20;
        long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
        size_t quarter = pages > 0 && page > 0
                             ? static_cast<size_t>(pages) *
                                   static_cast<size_t>(page) / 4
                             : size_t(1) << 30;
        return std::min(quarter, size_t(4) << 30);
    }();
    return budget;
}

void teardown(Instance &in)
{
    if (in.live && in.inst && in.def->ops.teardown)
        in.def->ops.teardown(in.inst);
    in.inst = nullptr;
}

void drop_all()
{
    for (Instance &in : cache)
        teardown(in);
    cache.clear();
}

// Tears down the least recently used instances, never the front one (the
// running instance), while over the budget.
void trim()
{
    while (cache.size() > 1 &&
           (cache.size() > kMaxCached || resident_bytes() > cache_budget())) {
        teardown(cache.back());
        cache.pop_back();
    }
}

std::vector<int64_t> args_of(const tbb_bench *def, benchmark::State &st)
{
    std::vector<int64_t> a;
    for (size_t i = 0; i < def->nargs; i++)
        a.push_back(st.range(static_cast<int>(i)));
    return a;
}

void announce(const tbb_bench *def, const std::vector<int64_t> &args)
{
    instances_started++;
    if (!progress_enabled)
        return;
    double elapsed = std::chrono::duration<double>(
                         std::chrono::steady_clock::now() - run_start)
                         .count();
    std::string name = def->name;
    for (size_t i = 0; i < args.size(); i++) {
        name += "/";
        if (i < def->arg_names.size())
            name += def->arg_names[i] + ":";
        name += std::to_string(args[i]);
    }
    std::fprintf(stderr, "tbb: [%zu] %s, elapsed %.1f s\n", instances_started,
                 name.c_str(), elapsed);
}

// Finds or builds the instance for this run; false if it failed.
bool acquire(tbb_bench *def, benchmark::State &st, tbb_state &w)
{
    std::vector<int64_t> args = args_of(def, st);
    auto it = cache.begin();
    while (it != cache.end() && !(it->def == def && it->args == args))
        ++it;
    bool same = it != cache.end();
    if (same)
        cache.splice(cache.begin(), cache, it);  // most recently used
    else
        cache.emplace_front();
    Instance &current = cache.front();
    if (same && !current.error.empty()) {
        w.skip = current.error;
        w.batch = current.batch;  // the batches the good runs counted in
        return false;
    }
    if (same && (def->flags & TBB_REUSE) && current.inst) {
        w.batch = current.batch;
        return true;
    }
    if (!same)
        announce(def, args);
    else
        teardown(current);  // a new run without TBB_REUSE
    current.def = def;
    current.args = args;
    current.live = true;
    current.inst = nullptr;
    w.batch = 1;
    void *inst = def->ops.setup ? def->ops.setup(def->ctx, &w) : def->ctx;
    if (!inst) {
        current.error = "setup failed";
        current.batch = w.batch;
        if (w.skip.empty())
            w.skip = current.error;
        return false;
    }
    if (!w.skip.empty()) {
        // setup() built something yet marked the run failed: keep it for
        // teardown, but do not time anything with it.
        current.inst = def->ops.setup ? inst : nullptr;
        current.error = "setup reported an error";
        current.batch = w.batch;
        return false;
    }
    current.inst = def->ops.setup ? inst : nullptr;
    current.batch = w.batch;
    trim();
    return true;
}

// ---- The machine's memory latency, beside every repetition ---------------
//
// These VMs share their last-level cache and memory with other tenants, and
// how much of it this one gets moves over seconds to minutes: in one run
// the same repetition of a wheel's expiry at 10^5 (identical work counts,
// 1932 entries visited per task) took from 17.6 to 136 ns per entry.  So
// each repetition records the latency of a dependent load over a 16 MiB
// random cycle, measured just before its timed part: a repetition (or a
// whole run) taken in a slow spell says so (`mem_latency_ns`), and the
// report and compare can tell the machine's state from the code's.  A
// real-time experiment (TBB_NO_CANARY) takes no reading: its own threads,
// and a wheel's tick thread on the other core, slow the load that follows
// it, and redoing those repetitions bought nothing but time.
constexpr size_t kCanaryLines = (16u << 20) / 64;
constexpr int kCanarySteps = 8192;

struct alignas(64) CanaryLine {
    uint32_t next;
    char pad[60];
};

double memory_latency_ns()
{
    static CanaryLine *ring = [] {
        auto *r = static_cast<CanaryLine *>(
            std::aligned_alloc(64, kCanaryLines * sizeof(CanaryLine)));
        if (!r)
            return r;
        // Sattolo's shuffle: one cycle through every line, fixed seed.
        std::vector<uint32_t> order(kCanaryLines);
        for (size_t i = 0; i < kCanaryLines; i++)
            order[i] = static_cast<uint32_t>(i);
        uint64_t x = 0x9e3779b97f4a7c15ULL;
        for (size_t i = kCanaryLines - 1; i > 0; i--) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            std::swap(order[i], order[x % i]);
        }
        for (size_t i = 0; i < kCanaryLines; i++)
            r[order[i]].next = order[(i + 1) % kCanaryLines];
        return r;
    }();
    static uint32_t at = 0;  // each call walks on where the last stopped
    if (!ring)
        return 0;
    uint32_t p = at;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < kCanarySteps; i++)
        p = ring[p].next;
    auto t1 = std::chrono::steady_clock::now();
    at = p;
    return std::chrono::duration<double, std::nano>(t1 - t0).count() /
           kCanarySteps;
}

// The run's usual latency: the 25th percentile of the readings so far
// (0 until there are 8).  A low quantile, so that a run that starts in a
// slow spell still learns what quiet looks like.
std::vector<double> canaries;

double usual_latency()
{
    if (canaries.size() < 8)
        return 0;
    std::vector<double> v(canaries);
    std::nth_element(v.begin(), v.begin() + v.size() / 4, v.end());
    return v[v.size() / 4];
}

constexpr double kSlowSpell = 1.6;       // latency over usual: a slow spell
constexpr int kSpellWaits = 5;           // waits of kSpellWaitMs at most
constexpr int kSpellWaitMs = 200;
constexpr double kCanaryBatchSeconds = 0.01; // batches long enough to check
// Waiting stops for the rest of the process after this much of it: a spell
// that lasts for minutes is the machine's state, and is only recorded.
int spell_budget_ms = 0;  // tbb_spell_wait()
int spell_waited_ms = 0;

// The latency now, and whether it is usual.  Records the reading.
bool quiet(double *latency)
{
    double usual = usual_latency();
    *latency = memory_latency_ns();
    canaries.push_back(*latency);
    return usual <= 0 || *latency <= kSlowSpell * usual;
}

// Before a repetition: waits out a slow spell, a bounded time, so that the
// repetition starts on a machine in its usual state.  Returns the latency
// it starts with and counts the waits.
double wait_for_quiet(int *waits)
{
    double latency;
    while (!quiet(&latency) && *waits < kSpellWaits &&
           spell_waited_ms < spell_budget_ms) {
        ++*waits;
        spell_waited_ms += kSpellWaitMs;
        usleep(kSpellWaitMs * 1000);
    }
    return latency;
}

// Ends a failed run: its remaining iterations are used up in the batches
// a good run counts in, and only then is the run marked failed.  Marked at
// once, it would report fewer iterations than the repetitions before it
// (SkipWithError empties the iteration budget), and Google Benchmark,
// which checks that every repetition of an instance reports the same
// count, failed ones included, would abort the whole process: a micro
// instance that failed in its third of five repetitions stopped the
// harness with "ComputeStats: Check `(run_iterations) == (run.iterations)'
// failed" (issue 42).
void finish_failed(benchmark::State &st, const tbb_state &w, int64_t batch)
{
    while (st.KeepRunningBatch(batch)) {
    }
    st.SkipWithError(w.skip.c_str());
}

void run(benchmark::State &st, tbb_bench *def)
{
    tbb_state w{&st, def, 1, false, std::string()};
    if (!acquire(def, st, w)) {
        finish_failed(st, w, w.batch);
        return;
    }
    Instance &current = cache.front();
    void *inst = def->ops.setup ? current.inst : def->ctx;
    int waits = 0, spells = 0;
    const bool canary = !(def->flags & TBB_NO_CANARY);
    const double latency = canary ? wait_for_quiet(&waits) : 0;
    const int64_t batch = w.batch;
    double (*const fn)(void *, tbb_state *, int64_t) = def->ops.batch;
    if (def->flags & TBB_MANUAL_TIME) {
        while (st.KeepRunningBatch(batch)) {
            double seconds;
            int tries = 0;
            do {
                w.discard = false;
                seconds = fn(inst, &w, batch);
                // A long batch is checked after the fact: one that ended
                // in a slow spell is run again once the spell has passed.
                double after;
                if (canary && !w.discard && seconds >= kCanaryBatchSeconds &&
                    w.skip.empty() && spells < kSpellWaits &&
                    spell_waited_ms < spell_budget_ms && !quiet(&after)) {
                    ++spells;
                    wait_for_quiet(&waits);
                    w.discard = true;
                }
            } while (w.discard && seconds >= 0 && w.skip.empty() &&
                     ++tries < 16);
            if (seconds < 0 || !w.skip.empty()) {
                if (w.skip.empty())
                    w.skip = "batch failed";
                break;
            }
            st.SetIterationTime(seconds);
        }
    } else {
        while (w.skip.empty() && st.KeepRunningBatch(batch))
            fn(inst, &w, batch);
    }
    if (!w.skip.empty())
        finish_failed(st, w, batch);
    if (def->ops.report && !st.error_occurred())
        def->ops.report(inst, &w);
    if (!w.skip.empty() && !st.error_occurred())
        st.SkipWithError(w.skip.c_str());  // from report(): iterations done
    if (canary && !st.error_occurred()) {
        st.counters["mem_latency_ns"] = latency;
        st.counters["slow_spell_waits"] = waits;
        st.counters["slow_spell_redone"] = spells;
    }
    if (!(def->flags & TBB_REUSE) || st.error_occurred()) {
        if (current.inst && def->ops.teardown)
            def->ops.teardown(current.inst);
        current.inst = nullptr;
        if (st.error_occurred() && current.error.empty())
            current.error = "failed in an earlier run";
    }
}

// ---- BigO from the reported time --------------------------------------
//
// Google Benchmark 1.7 chooses a family's BigO curve by fitting CPU time
// and then forces that curve on real time.  Under manual time the CPU time
// also counts the untimed work between batches (refilling the scheduler),
// so its curve says nothing about the operation.  The reporters below
// redo the fit on the reported (real or manual) time — the same least
// squares over the same candidate curves, lowest normalised RMS wins — and
// fit CPU time with the curve found.

using Run = benchmark::BenchmarkReporter::Run;

struct Fit {
    benchmark::BigO curve;
    double coef;
    double rms;  // normalised by the mean time
};

double curve_at(benchmark::BigO c, double n)
{
    switch (c) {
    case benchmark::oN: return n;
    case benchmark::oNSquared: return n * n;
    case benchmark::oNCubed: return n * n * n;
    case benchmark::oLogN: return std::log2(n);
    case benchmark::oNLogN: return n * std::log2(n);
    default: return 1.0;
    }
}

Fit fit_curve(const std::vector<double> &n, const std::vector<double> &t,
              benchmark::BigO c)
{
    double ff = 0, tf = 0, mean = 0;
    for (size_t i = 0; i < n.size(); i++) {
        double f = curve_at(c, n[i]);
        ff += f * f;
        tf += t[i] * f;
        mean += t[i];
    }
    mean /= static_cast<double>(n.size());
    Fit r{c, ff > 0 ? tf / ff : 0.0, 0.0};
    double sq = 0;
    for (size_t i = 0; i < n.size(); i++) {
        double e = t[i] - r.coef * curve_at(c, n[i]);
        sq += e * e;
    }
    r.rms = mean > 0 ? std::sqrt(sq / static_cast<double>(n.size())) / mean
                     : 0.0;
    return r;
}

Fit best_fit(const std::vector<double> &n, const std::vector<double> &t)
{
    static const benchmark::BigO curves[] = {
        benchmark::oLogN, benchmark::oN, benchmark::oNLogN,
        benchmark::oNSquared, benchmark::oNCubed};
    Fit best = fit_curve(n, t, benchmark::o1);
    for (benchmark::BigO c : curves) {
        Fit f = fit_curve(n, t, c);
        if (f.rms < best.rms)
            best = f;
    }
    return best;
}

class RefitBigO {
  public:
    // Rewrites the BigO and RMS entries of `runs` in place.
    void apply(std::vector<Run> &runs)
    {
        for (const Run &r : runs) {
            if (r.run_type != Run::RT_Iteration || r.error_occurred ||
                r.complexity == benchmark::oNone || r.complexity_n <= 0 ||
                r.iterations <= 0)
                continue;
            if (r.family_index != family_) {
                family_ = r.family_index;
                n_.clear();
                real_.clear();
                cpu_.clear();
            }
            double it = static_cast<double>(r.iterations);
            n_.push_back(static_cast<double>(r.complexity_n));
            real_.push_back(r.real_accumulated_time / it);
            cpu_.push_back(r.cpu_accumulated_time / it);
        }
        Fit real{}, cpu{};
        bool fitted = false;
        for (Run &r : runs) {
            if (!r.report_big_o && !r.report_rms)
                continue;
            if (r.family_index != family_ || n_.empty() ||
                r.complexity == benchmark::oLambda)
                continue;
            if (!fitted) {
                real = best_fit(n_, real_);
                cpu = fit_curve(n_, cpu_, real.curve);
                fitted = true;
            }
            double mult = benchmark::GetTimeUnitMultiplier(r.time_unit);
            r.complexity = real.curve;
            if (r.report_big_o) {
                r.real_accumulated_time = real.coef;
                r.cpu_accumulated_time = cpu.coef;
            } else {
                // the JSON reporter prints the CPU field as "rms"
                r.real_accumulated_time = real.rms / mult;
                r.cpu_accumulated_time = real.rms / mult;
            }
        }
    }

  private:
    int64_t family_ = -1;
    std::vector<double> n_, real_, cpu_;
};

template <class Base> class Refitting : public Base {
  public:
    using Base::Base;
    void ReportRuns(const std::vector<Run> &runs) override
    {
        std::vector<Run> copy(runs);
        refit_.apply(copy);
        Base::ReportRuns(copy);
    }

  private:
    RefitBigO refit_;
};

// ---- the journal --------------------------------------------------------
//
// Google Benchmark writes --benchmark_out as one JSON document that is
// complete only when the process exits: a run killed in its 13th minute
// leaves a truncated file.  The journal tees the display reporter into a
// file that holds, one line each, the context and then every instance the
// moment it is reported, each line a whole Google Benchmark JSON document
// ({"context": ..., "benchmarks": []}, then {"benchmarks": [...]}).  Each
// line goes out in one write(), so a kill at any moment leaves every
// finished instance readable and at most a torn last line.

int journal_fd = -1;

void journal_append(std::string text)
{
    // JSON escapes newlines inside strings, so every raw newline in the
    // reporter's text is whitespace between tokens and may go.
    std::string line;
    line.reserve(text.size() + 1);
    for (char c : text)
        if (c != '\n')
            line += c;
    line += '\n';
    const char *p = line.data();
    size_t left = line.size();
    while (left > 0) {
        ssize_t n = ::write(journal_fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            std::perror("timerbench: journal");
            return;
        }
        p += n;
        left -= static_cast<size_t>(n);
    }
}

class Journal : public benchmark::BenchmarkReporter {
  public:
    explicit Journal(benchmark::BenchmarkReporter *display) : display_(display)
    {
        json_.SetOutputStream(&buf_);
        json_.SetErrorStream(&buf_);
    }

    bool ReportContext(const Context &context) override
    {
        bool ok = display_->ReportContext(context);
        json_.ReportContext(context);
        // JSONReporter leaves its "benchmarks" list open for the runs.
        journal_append(take() + "]}");
        return ok;
    }

    void ReportRuns(const std::vector<Run> &runs) override
    {
        display_->ReportRuns(runs);
        json_.ReportRuns(runs);
        std::string text = take();
        // JSONReporter separates this call's runs from the last call's.
        size_t start = text.find_first_not_of(", \n");
        if (start == std::string::npos)
            return;
        journal_append("{\"benchmarks\": [" + text.substr(start) + "]}");
    }

    void Finalize() override { display_->Finalize(); }

  private:
    std::string take()
    {
        std::string s = buf_.str();
        buf_.str("");
        buf_.clear();
        return s;
    }

    benchmark::BenchmarkReporter *display_;
    Refitting<benchmark::JSONReporter> json_;
    std::ostringstream buf_;
};

bool json_out = false;      // --benchmark_out given, in JSON
bool json_display = false;  // --benchmark_format=json
bool csv_display = false;   // --benchmark_format=csv

benchmark::TimeUnit unit_of(enum tbb_unit u)
{
    switch (u) {
    case TBB_US: return benchmark::kMicrosecond;
    case TBB_MS: return benchmark::kMillisecond;
    case TBB_S: return benchmark::kSecond;
    case TBB_NS: break;
    }
    return benchmark::kNanosecond;
}

}  // namespace

extern "C" {

tbb_bench *tbb_register(const char *name, const struct tbb_ops *ops,
                        void *ctx, unsigned flags)
{
    auto def = std::make_unique<tbb_bench>();
    def->name = name;
    def->ops = *ops;
    def->ctx = ctx;
    def->flags = flags;
    def->nargs = 0;
    tbb_bench *d = def.get();
    d->gb = benchmark::RegisterBenchmark(
        name, [d](benchmark::State &st) { run(st, d); });
    if (flags & TBB_MANUAL_TIME)
        d->gb->UseManualTime();
    if (flags & TBB_REAL_TIME)
        d->gb->UseRealTime();
    if (flags & TBB_PROCESS_CPU)
        d->gb->MeasureProcessCPUTime();
    if (flags & TBB_COMPLEXITY)
        d->gb->Complexity(benchmark::oAuto);
    families().push_back(std::move(def));
    return d;
}

void tbb_arg_names(tbb_bench *b, size_t n, const char *const *names)
{
    std::vector<std::string> v(names, names + n);
    b->gb->ArgNames(v);
    b->arg_names = v;
}

void tbb_args(tbb_bench *b, size_t n, const int64_t *args)
{
    b->gb->Args(std::vector<int64_t>(args, args + n));
    if (n > b->nargs)
        b->nargs = n;
}

void tbb_ranges(tbb_bench *b, size_t n, const int64_t *lo, const int64_t *hi)
{
    std::vector<std::pair<int64_t, int64_t>> r;
    for (size_t i = 0; i < n; i++)
        r.emplace_back(lo[i], hi[i]);
    b->gb->Ranges(r);
    if (n > b->nargs)
        b->nargs = n;
}

void tbb_range_multiplier(tbb_bench *b, int multiplier)
{
    b->gb->RangeMultiplier(multiplier);
}

void tbb_min_time(tbb_bench *b, double seconds)
{
    if (seconds > 0)
        b->gb->MinTime(seconds);
}

void tbb_iterations(tbb_bench *b, int64_t n)
{
    b->gb->Iterations(n);
}

void tbb_repetitions(tbb_bench *b, int n)
{
    if (n > 0)
        b->gb->Repetitions(n);
}

void tbb_unit(tbb_bench *b, enum tbb_unit unit)
{
    b->gb->Unit(unit_of(unit));
}

int64_t tbb_arg(const tbb_state *st, size_t i)
{
    return st->st->range(static_cast<int>(i));
}

void tbb_set_batch(tbb_state *st, int64_t n)
{
    st->batch = n > 0 ? n : 1;
}

int64_t tbb_iterations_done(const tbb_state *st)
{
    return static_cast<int64_t>(st->st->iterations());
}

void tbb_counter(tbb_state *st, const char *name, double value,
                 unsigned flags)
{
    int f = benchmark::Counter::kDefaults;
    if (flags & TBB_C_RATE)
        f |= benchmark::Counter::kIsRate;
    if (flags & TBB_C_AVG_ITER)
        f |= benchmark::Counter::kAvgIterations;
    if (flags & TBB_C_INVARIANT)
        f |= benchmark::Counter::kIsIterationInvariant;
    st->st->counters[name] =
        benchmark::Counter(value, static_cast<benchmark::Counter::Flags>(f));
}

void tbb_complexity_n(tbb_state *st, int64_t n)
{
    st->st->SetComplexityN(n);
}

void tbb_label(tbb_state *st, const char *label)
{
    st->st->SetLabel(label);
}

void tbb_skip(tbb_state *st, const char *message)
{
    if (st->skip.empty() && !st->st->error_occurred())
        st->skip = message && *message ? message : "skipped";
}

void tbb_spell_wait(double seconds)
{
    spell_budget_ms = seconds > 0 ? static_cast<int>(seconds * 1000) : 0;
}

void tbb_discard(tbb_state *st)
{
    st->discard = true;
}

int tbb_failed(const tbb_state *st)
{
    return !st->skip.empty() || st->st->error_occurred();
}

void tbb_context(const char *key, const char *value)
{
    benchmark::AddCustomContext(key, value);
}

int tbb_init(int *argc, char **argv)
{
    bool out = false, json = true;
    for (int i = 1; i < *argc; i++) {
        if (std::strncmp(argv[i], "--benchmark_out=", 16) == 0)
            out = true;
        else if (std::strncmp(argv[i], "--benchmark_out_format=", 23) == 0)
            json = std::strcmp(argv[i] + 23, "json") == 0;
        else if (std::strncmp(argv[i], "--benchmark_format=", 19) == 0) {
            json_display = std::strcmp(argv[i] + 19, "json") == 0;
            csv_display = std::strcmp(argv[i] + 19, "csv") == 0;
        }
    }
    json_out = out && json;
    benchmark::Initialize(argc, argv);
    return benchmark::ReportUnrecognizedArguments(*argc, argv) ? -1 : 0;
}

int tbb_journal(const char *path)
{
    int fd = ::open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd < 0)
        return -1;
    if (journal_fd >= 0)
        ::close(journal_fd);
    journal_fd = fd;
    return 0;
}

void tbb_progress(int enabled)
{
    progress_enabled = enabled != 0;
}

size_t tbb_run(void)
{
    run_start = std::chrono::steady_clock::now();
    instances_started = 0;
    using Console = benchmark::ConsoleReporter;
    Refitting<Console> console(isatty(STDOUT_FILENO) ? Console::OO_Color
                                                     : Console::OO_None);
    Refitting<benchmark::JSONReporter> json, json_console;
    // CSV display: the library's own reporter for --benchmark_format.
    std::unique_ptr<benchmark::BenchmarkReporter> csv;
    benchmark::BenchmarkReporter *display = &console;
    if (json_display)
        display = &json_console;
    else if (csv_display)
        display = (csv.reset(benchmark::CreateDefaultDisplayReporter()),
                   csv.get());
    Journal journal(display);
    if (journal_fd >= 0)
        display = &journal;
    size_t n = benchmark::RunSpecifiedBenchmarks(display,
                                                 json_out ? &json : nullptr);
    drop_all();
    if (journal_fd >= 0) {
        ::close(journal_fd);
        journal_fd = -1;
    }
    return n;
}

void tbb_shutdown(void)
{
    benchmark::Shutdown();
}

}  // extern "C"
