"""tbkit.claimtable — the classic claims as a table (claims layer): per
claim id its title (what the write-ups say), its source, the experiment
that tests it, its rule, and its place in the summary; and every threshold
a rule holds a measurement to, named, substituted into the rule's text so
the words and the code cannot disagree.

tbkit.claims decides each claim by these constants; tbkit.claimtext says
the verdicts; the report's order, the summary's findings and the source
articles' list of claims are all read from CLAIMS.
"""

from tbkit import libs as L
from tbkit import numbers as A
from tbkit import precision as P
from tbkit import purgatory as PG
from tbkit import stats as S
from tbkit import verdict as V

UNDECIDED = V.UNDECIDED

# ---- the thresholds -----------------------------------------------------------
#
# Every number a rule holds a measurement to, named; the rules' texts
# (CLAIMS) are made from these same constants, so the words and the code
# cannot disagree.  The shared ones are tbkit.stats's (ALPHA, MIN_EFFECT)
# and tbkit.numbers's (CLEAR_FACTOR, GROW_RATIO, FLAT_RATIO).

# How many children a slot has in each heap, read from its source: no
# capability says it, so a heap not listed here takes no part in claim 9.
HEAP_ARITY = {"heapqueue": 2, "timerthread": 2, "quadheap": 4}

# The 2016 rework's bound: a timer in level n waits for a bucket of 8^n ticks
# and lies at least 63 * 8^(n-1) ticks away, so beyond the tick every wheel
# rounds to it runs less than 8/63 of its delay late (about 1/8, as the
# write-ups round it; kernelwheel/README.md, D11): tbkit.precision's bound.
KERNEL_LATENESS_BOUND = P.GRANULAR_SHARE

# The wake-ups per task a leader with signal() leaves: the leader's own
# timed wake-up and the one successor it signals, with half a wake-up of
# margin (tests/test_heapqueue.c test_leader_saves_wakeups bounds it so).
LEADER_WAKEUPS_MAX = 2.5

# Netty's ticks: an idle wheel ticks at least this share of once per tick,
# and at least this share of its ticks are empty; its p50 lateness is more
# than the floor's by at least NETTY_P50_TICKS of a tick, its p99 not
# significantly more than the floor's plus NETTY_P99_TICKS ticks.
NETTY_IDLE_TICK_SHARE = 0.5
NETTY_EMPTY_SHARE = 0.5
NETTY_P50_TICKS = 0.25
NETTY_P99_TICKS = 1.0


# ---- the claims' metadata -------------------------------------------------------
#
# One row per claim: what the write-ups say (title), where (source), the
# experiment that tests it, and the rule, its thresholds substituted from
# the constants above.  The report lists the claims in this order; every
# row has its function below (registered by @claim under the same id), and
# `summary` places a claim among the summary's findings (None: the summary
# does not quote it).

class Meta:
    """A claim's fixed text and its place in the summary."""

    def __init__(self, title, source, experiment, rule, summary=None):
        self.title, self.source, self.experiment, self.rule = title, source, experiment, rule
        self.summary = summary


CLAIMS = {
    "heap_vs_wheel_growth": Meta(
        title="Heap insert and removal grow as log n while a timing wheel's stay constant",
        source="Varghese & Lauck, \"Hashed and Hierarchical Timing Wheels\" (SOSP 1987); "
               "Netty HashedWheelTimer Javadoc",
        experiment="micro-benchmarks insert and cancel, series h2h: the worst case (workload "
                   "worst, deadlines in decreasing order, and its Valgrind counts) and the "
                   "average (main workload, uniform deadlines), judged separately",
        rule="the bound is a worst-case bound, so the verdict is the worst case's and the "
             "average is said beside it. For each case and each of work and time, an "
             "operation holds when every heap line grows "
             "(largest N against smallest: at least %s) and every wheel line stays flat "
             "(under %s); holds only in part when every heap grows more than every wheel "
             "but a wheel is not flat. Time is judged by the %d %% confidence interval of "
             "the ratio over the repetitions (Mann-Whitney): a line whose interval straddles "
             "the threshold leaves its operation %s, and the time part too unless another "
             "operation does not hold and none holds even in part. Work is the sum of the work counters "
             "per operation (counted, not timed). The worst case is judged on work (the "
             "micro's counters, else Valgrind's counts of the same workload): its time is "
             "shown, not decisive, because decreasing deadlines climb one path to the "
             "root, whose slots stay in cache, so the time need not follow the count. The "
             "average is judged on work and time, as before. Removal is a cancel that "
             "takes the task out of the heap (remove-on-cancel on), since a lazy cancel "
             "only marks it"
             % (A.fmt_ratio(A.GROW_RATIO), A.fmt_ratio(A.FLAT_RATIO),
             round(100 * (1 - S.ALPHA)), UNDECIDED),
        summary=13,
    ),
    "slow_task": Meta(
        title="A slow task in java.util.Timer delays every other task; a pool does not",
        source="java.util.Timer Javadoc (\"timer tasks should complete quickly\"); "
               "Goetz et al., Java Concurrency in Practice, 6.2.5",
        experiment="interference",
        rule="holds when the single-thread backend's maximum lateness of the fast "
             "tasks, with a pool size of more than one requested, is at least %s "
             "that of the pool backend with the same request, by a Mann-Whitney U "
             "test over the repetitions (p < %s)" % (A.fmt_ratio(A.CLEAR_FACTOR),
             A.fmt_num(S.ALPHA)),
        summary=18,
    ),
    "failing_task": Meta(
        title="A task that throws kills a java.util.Timer, but not a thread pool",
        source="java.util.Timer Javadoc; Goetz et al., Java Concurrency in Practice, 6.2.5 "
               "(\"thread leakage\")",
        experiment="failure (probe, virtual clock)",
        rule="holds when, after one failing task, the Timer backend runs none of the "
             "tasks due after it and refuses new ones, while the pool backend runs all "
             "of them and accepts new ones",
    ),
    "timer_wall_clock": Meta(
        title="java.util.Timer schedules on absolute system time, so setting the system "
              "clock moves its pending tasks; a ScheduledThreadPoolExecutor, on nanoTime, "
              "is not moved",
        source="the source articles (Timer's scheduling rests on absolute time and is "
               "sensitive to the system time); java.util.Timer's TimerThread.mainLoop "
               "(System.currentTimeMillis)",
        experiment="wallstep (probe, virtual clock): one-shots due at 10, 20, 30 ms, the wall "
                   "clock stepped back by 50 ms at 5 ms (tb_wall_step; DECISIONS.md D15); a "
                   "step forward by 15 ms is shown beside it",
        rule="holds when, after the step back by \u0394, every pending timerthread task "
             "runs \u0394 late and every heapqueue task on time (run time minus planned "
             "time, to within the probe's clock step); the step forward is shown, not "
             "judged",
    ),
    "netty_ticks": Meta(
        title="Netty's HashedWheelTimer wakes every tick even when idle, and fires up to a tick late",
        source="Netty HashedWheelTimer Javadoc (\"does not execute the scheduled TimerTask on time\")",
        experiment="idle; lateness (light load)",
        rule="the idle part holds when the wheel's ticks per second are at least %s of "
             "one per tick and at least %s of them are empty; the lateness part holds when "
             "its p50 lateness is more than the floor's p50 plus %s of a tick, by a "
             "Mann-Whitney U test over the repetitions (p < %s), and its p99 is not "
             "significantly more than the floor's p99 plus %s tick (\"up to a tick\" is a "
             "bound: only a significant excess refutes it), with enough samples for a p99; "
             "it does not hold when the p50 is not over that mark or the p99 is "
             "significantly over its bound. The lateness judged is timerwheel's as Netty "
             "sleeps, in whole milliseconds rounded up (the default); the nanosecond "
             "wait (sleep=exact, DECISIONS D14) is shown beside it, not judged"
             % (A.fmt_pct(NETTY_IDLE_TICK_SHARE), A.fmt_pct(NETTY_EMPTY_SHARE),
                A.fmt_num(NETTY_P50_TICKS), A.fmt_num(S.ALPHA), A.fmt_num(NETTY_P99_TICKS)),
        summary=19,
    ),
    "kafka_no_empty_advances": Meta(
        title="Kafka's delay queue of buckets removes the empty clock advances of a ticking wheel",
        source="Yasuhiro Matsuda, \"Apache Kafka, Purgatory, and Hierarchical Timing Wheels\" "
               "(Confluent blog, 2015)",
        experiment="idle",
        rule="holds when the hierarchical wheel has no empty ticks while idle and wakes at "
             "most 1/%s as often as the ticking wheel at the same tick (Mann-Whitney U "
             "test over the repetitions, p < %s)" % (A.fmt_num(A.CLEAR_FACTOR),
             A.fmt_num(S.ALPHA)),
    ),
    "hierarchy": Meta(
        title="Hierarchical levels cover long ranges with few buckets, at the price of cascades",
        source="Varghese & Lauck 1987 (scheme 7); Matsuda, Confluent blog, 2015",
        experiment="micro-benchmarks insert and expire, workloads short and wide, series h2h",
        rule="holds when the hierarchical wheel's insert on the wide workload costs under "
             "%s its insert on the short one at the largest N (the range is covered), "
             "and its expire per task on wide costs at least %s more than on short (the "
             "cascades), each by a Mann-Whitney U test over the repetitions (p < %s); a "
             "part whose medians miss its mark, whatever the p-value, is not there"
             % (A.fmt_ratio(A.CLEAR_FACTOR), A.fmt_pct(S.MIN_EFFECT), A.fmt_num(S.ALPHA)),
    ),
    "leader_follower": Meta(
        title="The leader-follower protocol saves timed waits in a pool",
        source="ScheduledThreadPoolExecutor.DelayedWorkQueue source comments (JDK)",
        experiment="workers, leader=on against leader=off",
        rule="holds when turning the leader off makes at least %s as many timed waits "
             "per task; holds only in part when there are more, but fewer than that; "
             "does not hold when there are fewer or the same (p >= 0.5); each by a "
             "Mann-Whitney U test over the repetitions (p < %s)"
             % (A.fmt_ratio(A.CLEAR_FACTOR), A.fmt_num(S.ALPHA)),
    ),
    "crossover": Meta(
        title="Heaps suit few timers and wheels suit many: there is a crossover N",
        source="Varghese & Lauck 1987; Matsuda, Confluent blog, 2015",
        experiment="micro-benchmark timeouts (schedule, mostly cancel, clock moves on), series h2h",
        rule="holds when the fastest heap beats the fastest wheel at the smallest N and "
             "the fastest wheel beats the fastest heap at the largest N, both by a "
             "Mann-Whitney U test over the repetitions (p < %s); the crossover is "
             "interpolated on log N" % A.fmt_num(S.ALPHA),
        summary=12,
    ),
    "four_ary_heap": Meta(
        title="A 4-ary heap beats a binary heap at large N",
        source="libev documentation (EV_USE_4HEAP: \"faster for large heaps\"); "
               "Go runtime, runtime/time.go (timerHeapN = 4)",
        experiment="micro-benchmark expire (cost per task as N due tasks fire), series h2h, "
                   "main workload; heaps by their arity (%s)" % ", ".join(
                   "%s %d" % kv for kv in sorted(HEAP_ARITY.items())),
        rule="holds when, at the largest N both were measured at, every 4-ary heap's expire "
             "per task is at least %s less than the fastest binary heap's, by a "
             "Mann-Whitney U test over the repetitions (p < %s); does not hold when its "
             "median is not that much less, whatever the p-value (a smaller difference "
             "does not come back in a rerun). The fastest binary heap, because the claim "
             "is about the arity: a slower binary heap may be slow for other reasons "
             "(the JDK's index write-back). Expire is the delete-min that the arity "
             % (A.fmt_pct(S.MIN_EFFECT), A.fmt_num(S.ALPHA)) +
             "changes (half the levels, four compares each); insert with random deadlines "
             "climbs about one level in either",
    ),
    "lazy_deletion": Meta(
        title="Lazy deletion makes cancel cheap but keeps memory until the zombies are cleaned",
        source="Go runtime, runtime/time.go (zombies, cleaned past a quarter of the heap); "
               "java.util.Timer and ScheduledThreadPoolExecutor Javadoc (purge, "
               "setRemoveOnCancelPolicy)",
        experiment="micro-benchmarks cancel (series h2h, main workload) and timeouts (schedule, "
                   "mostly cancel, clock moves on; counters zombies_per_n, bytes_per_live, "
                   "bytes_per_pending)",
        rule="holds when, at the largest N, every heap that cancels lazily (lazy_cancel, "
             "remove-on-cancel off) cancels faster than every heap line that removes the "
             "task (remove-on-cancel on, or no lazy_cancel), each pair by a Mann-Whitney U "
             "test over the repetitions (p < %s), and every lazy heap still holds zombies "
             "in the timeouts steady state at that N (zombies_per_n above 0, so its bytes "
             "per live task exceed its bytes per pending task); holds only in part when "
             "one of the two shows; does not hold when a lazy cancel is significantly "
             "slower and no zombies are held" % A.fmt_num(S.ALPHA),
    ),
    "non_cascading": Meta(
        title="A non-cascading wheel keeps expiry cost flat across delay ranges, at the "
              "price of lateness up to about 1/8 of the delay (8/63 by the kernel's "
              "arithmetic)",
        source="Gleixner, \"timers: Switch to a non-cascading wheel\" (Linux 4.8, 2016); "
               "LWN, \"Reinventing the timer wheel\" (2015)",
        experiment="micro-benchmark expire, workloads short and wide, series h2h; lateness of "
                   "every timer of the replayed traces (exact, virtual clock)",
        rule="flat: the kernel wheel's expire per task on the wide workload costs under "
             "%s its cost on the short one at the largest N, by a Mann-Whitney U test over "
             "the repetitions (p < %s); the price: on every replayed trace its largest "
             "lateness beyond one tick is at most %s of the timer's delay. Holds when both "
             "do; holds only in part when one does"
             % (A.fmt_ratio(A.CLEAR_FACTOR), A.fmt_num(S.ALPHA),
             A.fmt_num(KERNEL_LATENESS_BOUND)),
    ),
    "tree_and_wheel": Meta(
        title="Timeouts, which are mostly cancelled, suit a timer wheel; timers that mostly "
              "expire and need exact expiry suit a tree",
        source="Linux, Documentation/timers/hrtimers.rst (Gleixner and Molnar: why hrtimers "
               "keep a red-black tree beside the timer wheel)",
        experiment="replay of the kernel's two timer streams recorded together (perf2trace: "
                   "timer-list and hrtimer), each with its own lateness budgets",
        rule="on the timer-list stream (timeouts: more than half of its timers cancelled), "
             "the budget-respecting verdict recommends wheels only (a wheel tied with "
             "another structure leaves it undecided); on the hrtimer stream (more "
             "than half of its timers expire), the tree keeps every budget while every wheel "
             "at the common tick misses some, and no wheel at any swept tick keeps them all "
             "at a CPU cost per event below the tree's (Mann-Whitney U test over the "
             "repetitions, p < %s, and at least %s apart). Holds when both streams agree; "
             "holds only in part when one does" % (A.fmt_num(S.ALPHA),
             A.fmt_pct(S.MIN_EFFECT)),
    ),
    "jvm_ranking": Meta(
        title="The C renderings rank the originals as the originals rank themselves",
        source="this suite's premise: the report's findings about heapqueue, timerthread and "
               "timerwheel stand for ScheduledThreadPoolExecutor, java.util.Timer and Netty's "
               "HashedWheelTimer (issue 32)",
        experiment="the JVM harness (jvm/TimerBench.java: jvm.json) beside micro's h2h series",
        rule="per operation at the largest N both sides measured, every pair of "
             "originals with a C rendering is ordered on each side: 'faster' or "
             "'slower' when the two-sided Mann-Whitney U test over the repetitions, "
             "its p corrected by Holm's method over the operation's pairs, gives "
             "p < %g and the medians differ by at least %d %%, 'same' when they "
             "differ by less than %d %% (whatever p), else undecided; a pair is a "
             "contradiction when the two sides order it oppositely, or one side "
             "orders it and the other's %d %% interval of the ratio rules that "
             "order out (lies within %d %% of 1 or beyond it the other way); an operation "
             "holds when every pair is ordered alike, does "
             "not hold when some pair is a contradiction, is not tested when a side "
             "has too few repetitions, and is otherwise undecided at this noise, "
             "naming each pair whose point estimates go opposite ways without "
             "significance; the control (STPE's insert with removeOnCancel off "
             "against on, the same schedule() call) must come out the same at "
             "every N, or the claim is undecided with that reason"
             "; over the operations: holds when every tested operation holds, "
             "holds only in part when some hold and some do not, does not hold when none "
             "holds and some does not"
             % (S.ALPHA, S.MIN_EFFECT * 100, S.MIN_EFFECT * 100, round(100 * (1 - S.ALPHA)),
                S.MIN_EFFECT * 100),
        summary=20,
    ),
    "rendering_vs_library": Meta(
        title="Each rendering costs no more than the installed library of its structure",
        source="this suite's premise: a finding about a rendering is a finding about its "
               "structure only if the rendering is as good as the C code programs link "
               "for that structure (issue 40)",
        experiment="the libs harness (bench/libs.c: libs.json) beside micro's h2h series: "
                   "insert and cancel, workload uniform, each rendering against every "
                   "installed library of its structure (binary heaps: heapqueue and "
                   "timerthread against libuv, libevent and sd-event; the 4-ary heap: "
                   "quadheap against libev)",
        rule="per operation (%s) at the largest N both sides measured, a pair does not "
             "hold when the rendering's time per operation is above the library's by at "
             "least %s and the two-sided Mann-Whitney U test over the repetitions gives "
             "p < %s; it holds when the rendering's median is less than %s above the "
             "library's (or below it); otherwise it is undecided. The claim holds when "
             "every pair holds, does not hold when some pair does not (each named), and "
             "is otherwise undecided at this noise; not tested when no rendering has an "
             "installed library of its structure"
             % (", ".join(L.JUDGED), A.fmt_pct(S.MIN_EFFECT), A.fmt_num(S.ALPHA),
                A.fmt_pct(S.MIN_EFFECT)),
        summary=21,
    ),
    "purgatory_saturation": Meta(
        title="A delay queue of requests saturates before a timing wheel over a delay "
              "queue of buckets, and worse when timeouts are frequent",
        source="Kafka's purgatory redesign proposal (Apache Kafka wiki, \"Purgatory "
               "Redesign Proposal\": the old purgatory \"saturated around 60,000 "
               "requests per second\"); the source articles' \"frequent inserts and "
               "deletes with many tasks\" (003_fde2585c5daaecda.txt)",
        experiment="the purgatory experiment on real threads (timerbench-play: "
                   "purgatory.json; jvm/Purgatory.java: purgatory-jvm.json): Poisson "
                   "arrivals at target rates stepped up on a log grid, a %g ms timeout "
                   "per request, completion at a log-normal time (few: p50 %g ms, p75 "
                   "%g ms; many: p50 %g ms, p75 %g ms); C: heapqueue (the JDK's delay "
                   "queue: the old purgatory's binary heap of requests, with lazy "
                   "cancel and without its purge) against hierwheel (Kafka's wheel "
                   "over a delay queue of buckets); JVM: DelayQueue with Kafka 0.8.2's "
                   "purge (the old purgatory itself) against Netty's HashedWheelTimer "
                   "(a wheel, not over a delay queue, not Kafka's own)" % ((PG.TIMEOUT_MS,) + PG.SHAPE_P50_P75_MS["few"]
                                         + PG.SHAPE_P50_P75_MS["many"]),
        rule="a play is saturated when the player fell behind (its achieved rate "
             "more than %s below the offered rate, or its lag grown by more than %s "
             "from the first tenth of its operations to the last) or the subject's "
             "expiry did (more than %s of the timeouts due unfired %s after the last "
             "deadline, or the median lateness of the last tenth of the fired "
             "timeouts more than %s above the first tenth's, each tenth at least %d); "
             "a target rate is saturated when more than half "
             "of its plays are, and a subject's saturation rate is the interval from the "
             "rate below its first saturated rate to that rate, its lower end taken "
             "below the first rate at which any play saturated (the repetitions' "
             "spread). Per pair and shape the part holds when "
             "the delay queue saturated at a rate at which every play of the wheel "
             "ran unsaturated (its interval wholly below), does not hold when the "
             "wheel saturated at a rate at which every play of the delay queue ran "
             "unsaturated, and is undecided when the "
             "intervals overlap, neither saturated, or the one that would rank higher "
             "saturated where the floor (the player doing nothing) did: the player's "
             "own limit. Worse when timeouts are frequent (many fires six times the "
             "timeouts of few, which costs every timer): the delay queue's interval "
             "in many wholly below its interval in few while the wheel's is not; "
             "failing that, its CPU per request in many over few, divided by the "
             "wheel's, at the highest rate both ran unsaturated in both shapes: "
             "worse at %s or more, not worse below %s, undecided between. Each part "
             "holds when it holds for every pair tested, holds only in part when it "
             "holds for some and not others. The saturation part decides: the claim "
             "does not hold, or is undecided, when that part does not hold or is "
             "undecided; when it holds (or in part), the claim holds when the "
             "frequent part holds too, holds only in part when it does not, and is "
             "undecided when it is"
             % (A.fmt_pct(PG.SAT_RATE_SHORTFALL), A.fmt_ns(PG.SAT_LAG_GROWTH_NS),
                A.fmt_pct(PG.SAT_EXPIRY_SHORTFALL), A.fmt_ns(PG.DRAIN_NS),
                A.fmt_ns(PG.SAT_LATENESS_GROWTH_NS), PG.SAT_MIN_WINDOW,
                A.fmt_ratio(PG.FREQUENT_CPU_WORSE), A.fmt_ratio(PG.FREQUENT_CPU_SAME)),
        summary=14,
    ),
    "single_runner_delay": Meta(
        title="A slow task delays every other task in every single-runner design, not "
              "only in java.util.Timer",
        source="the source articles on Netty's HashedWheelTimer (\"a slow task blocks the "
               "next one\") and java.util.Timer; Go's and the kernel's timers also run on "
               "one runner",
        experiment="interference with one runner (threads=1) on every backend, against "
                   "heapqueue's pool (threads=4)",
        rule="holds when every backend's maximum lateness of the fast 1 ms tasks with "
             "one runner (threads=1) is at least %s the pool's (heapqueue, the most "
             "threads measured), each by a Mann-Whitney U test over the repetitions "
             "(p < %s); holds only in part when some are and the others significantly "
             "are not; does not hold when none is. The maximum, because quadheap and "
             "hrtree skip the periods a late run missed (as Go's Ticker and hrtimer_forward "
             "do), so few of their runs are late and their percentiles hide the stall"
             % (A.fmt_ratio(A.CLEAR_FACTOR), A.fmt_num(S.ALPHA)),
    ),
    "stpe_one_thread_like_timer": Meta(
        title="A ScheduledThreadPoolExecutor with one thread behaves like java.util.Timer on "
              "a slow task, and differs on a failing one",
        source="java.util.Timer Javadoc, quoted in the source articles (\"equivalent to "
               "Timer\"); Goetz et al., Java Concurrency in Practice, 6.2.5",
        experiment="interference and failing (real threads), heapqueue threads=1 against "
                   "timerthread",
        rule="the slow-task part holds when heapqueue's maximum lateness of the fast tasks "
             "with one thread is within %s of timerthread's (medians, either way; a "
             "larger difference significant by a Mann-Whitney U test over the "
             "repetitions, p < %s, refutes it); the failing part holds when, after the "
             "third of ten tasks fails, heapqueue with one thread runs every later task "
             "and accepts a new one while timerthread runs none and refuses it. Holds "
             "when both parts do; holds only in part when one does"
             % (A.fmt_pct(S.MIN_EFFECT), A.fmt_num(S.ALPHA)),
    ),
    "heap_maintenance_precision": Meta(
        title="Heap maintenance makes a ScheduledThreadPoolExecutor's timing less precise "
              "under load",
        source="the source articles on ScheduledThreadPoolExecutor (\"有出入队调整堆等操作，"
               "所以定时并不是非常非常精确\")",
        experiment="lateness: heapqueue at light load against 10^5 pending tasks (workload "
                   "loaded), default timer slack; the floor's spread over its repetitions",
        rule="holds when heapqueue's p99 lateness with 10^5 pending is above its p99 at "
             "light load by more than the floor's own spread (the range of the floor's "
             "p99 over its repetitions: how much the machine's wake-up moves from one "
             "repetition to the next), by a Mann-Whitney U test over the repetitions "
             "(p < %s); does not hold when the loaded p99 is not %s above the light one's "
             "(medians, whatever the p-value); undecided in between: an effect the "
             "floor's own noise could make. The p50 is shown beside it"
             % (A.fmt_num(S.ALPHA), A.fmt_pct(S.MIN_EFFECT)),
    ),
    "leader_wakes_one": Meta(
        title="The leader wakes one waiting thread when it leaves take() (signal(), not "
              "signalAll())",
        source="ScheduledThreadPoolExecutor.DelayedWorkQueue.take() source, quoted in "
               "the source articles",
        experiment="workers, leader=on against leader=off (four threads, a task every 0.5 ms)",
        rule="holds when, with the leader, the pool's wake-ups per task are at most %s "
             "(the leader's timed wake-up and the one successor it signals; waking "
             "every idle worker would make one per idle worker) and fewer than without "
             "the leader (every idle worker waiting timed) by at least %s, by a "
             "Mann-Whitney U test over the repetitions (p < %s); timed waits per task "
             "shown beside" % (A.fmt_num(LEADER_WAKEUPS_MAX), A.fmt_pct(S.MIN_EFFECT),
             A.fmt_num(S.ALPHA)),
    ),
}
