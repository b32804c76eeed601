"""tbkit.texts — the report's section introductions and method texts, written
once (base layer, issue 36): each fragment is a named constant, named after
the section and place it appears in (`MICRO_INTRO`, `METHOD_REPLAY`, ...),
so that prose is read and edited here and the section modules (tbkit.sec_*)
only compute what goes into it.

A fragment is plain text, or a template whose named fields `{name}` the
section fills with what it computed (numbers already formatted by
tbkit.numbers, names, links); `spans(template, **fields)` turns one into
the spans of a paragraph, with `**bold**` and `` `code` `` marked up in the
template itself.  Verdicts are said elsewhere (tbkit.claimtext); the
reference manual of the results is bench/README.md, which a fragment points
to rather than copies.
"""

import re

from tbkit.doc import Bold, Code

_MARK = re.compile(r"\*\*(.+?)\*\*|`([^`]+)`|\{(\w+)\}")


def spans(template, **fields):
    """The spans of `template`: its text, `**x**` as Bold, `` `x` `` as
    Code, and each `{name}` replaced by fields[name] (a span, or a list or
    tuple of spans put in flat)."""
    out, at = [], 0
    for m in _MARK.finditer(template):
        if m.start() > at:
            out.append(template[at:m.start()])
        bold, code, name = m.groups()
        if bold is not None:
            out.append(Bold(bold))
        elif code is not None:
            out.append(Code(code))
        else:
            v = fields[name]
            out.extend(v if isinstance(v, (list, tuple)) else (v,))
        at = m.end()
    if at < len(template):
        out.append(template[at:])
    return tuple(out)


# ---- the summary's "How to read this report" and "Method" (tbkit.sec_summary)

HOW_TO_READ_NUMBERS = (
    "Every number in this report is computed from the results directory it was generated "
    "from; nothing is typed in. Times are medians over the repetitions of each benchmark; "
    "the spread is the coefficient of variation (standard deviation divided by the mean, "
    "as a percentage) of those repetitions, and error bars in the figures run from the "
    "fastest to the slowest repetition. Lower is better for every time.")

HOW_TO_READ_CLOCKS = (
    "Micro-benchmarks run on the virtual clock: no threads, no sleeping, so they measure "
    "the data structure. Runtime benchmarks run on the monotonic clock with the backends' "
    "own threads, so they measure the whole design, locks and wake-ups included.")

# fields: flat, grow (ratios), slope (the log-log slope's bound), clear (a factor)
HOW_TO_READ_WORDS = (
    "Words in findings follow fixed rules. A series is **flat** when its time at the "
    "largest N is under {flat} its time at the smallest N, and **grows** at or above "
    "{grow}; growth whose log-log slope is under {slope} is called sub-linear (what log n "
    "looks like on real caches), otherwise near-linear. Two medians differ only where the "
    "Mann-Whitney U test below says so; a crossover is reported only where the two lines "
    "differ significantly at both ends of N. A behavioural claim needs a factor of at "
    "least {clear} between the compared numbers to hold.")

# fields: alpha, few (repetitions per side that cannot reach it), min_p,
# confidence (a percentage), grow, flat
HOW_TO_READ_SIGNIFICANCE = (
    "**Significance.** Where a verdict compares two measured sets, it decides \"different\" "
    "with a two-sided Mann-Whitney U test over their repetitions at p < {alpha} and prints "
    "the p-value; a claim whose decisive comparison is not significant is **undecided at "
    "this noise** rather than given a side. With fewer repetitions than any ordering needs "
    "to reach p < {alpha} ({few} against {few} gives at best p = {min_p}) the comparison is "
    "too few repetitions to test. Growth is judged by the {confidence} % confidence interval "
    "of the ratio of the times at the largest and smallest N (the interval that inverts the "
    "same test): it grows when the whole interval is at or above {grow}, is flat when the "
    "whole interval is under {flat}, and is undecided otherwise; the structure's work "
    "counters (levels sifted, entries visited, ...) are counted, not timed, and are judged "
    "on their medians.")

# fields: tail (samples beyond a percentile), p50, p90, p99, p999 (samples
# each needs), rms (the largest RMS error a fit may have)
HOW_TO_READ_PERCENTILES = (
    "**Percentiles and fits.** A percentile q is printed only where at least {tail} / "
    "(1 − q) samples back it (p50: {p50}, p90: {p90}, p99: {p99}, p99.9: {p999} samples), so "
    "that at least {tail} samples lie beyond it; otherwise its cell says how many samples "
    "there were. A complexity fit (Google Benchmark's curves, least squares over the "
    "medians at each N) is shown only when its RMS error is at most {rms}; otherwise the "
    "finding says \"no fit\".")

# fields: reps, p50, p90, max (the probe's latencies), over (the factor
# over the 25th percentile), waits, redone
METHOD_MACHINE_STATE = (
    "**The machine during the run.** Before each repetition of a micro-benchmark the "
    "harness times a dependent load over a 16 MiB random cycle: this VM shares its "
    "last-level cache and memory with other tenants, and how much it gets moves over "
    "seconds to minutes. Over {reps} repetitions the latency was {p50} median, {p90} at the "
    "90th percentile, {max} at most. A repetition that found it over {over} times the run's "
    "25th percentile waited for the spell to pass (200 ms at a time, at most 1 s, at most "
    "2 min in a run): {waits} waits; a batch of 10 ms or more that ended in a spell was run "
    "again: {redone}. Times of instances whose data misses the cache are comparable "
    "between two runs only when their latencies agree (`timerbench compare` prints both); "
    "the work counts and the instruction counts below do not depend on it.")

METHOD_PEERS_DRIVER = (
    "**Against the side-by-side driver.** `../shared/peers` times the same backends through "
    "the same interface beside four reference C timers. Its figures and these differ by "
    "design: its add fills an empty structure with N timers (so the structure holds N/2 "
    "on average, and the first touch of its own handle array is in the timed part), while "
    "`insert` here adds a batch to a structure that already holds N; a lazy-cancel backend "
    "(heapqueue with remove-on-cancel off, timerthread) holds N to 1.25 N records here, the "
    "cancelled ones included until a purge, and none in the driver, so their insert costs "
    "more here at large N; its cancel takes all N in random order down to an empty "
    "structure, each first loading its handle from a random place of that array (a "
    "dependent miss that the reference timers' intrusive nodes do not make; "
    "docs/notes/2026-12-02-peers-driver-and-targets.md measures both costs), while "
    "`cancel` here holds N throughout; its delays are uniform over 10^6 ticks of each "
    "backend, the workloads here are defined in time (`uniform`: 1 ms to 1000 s).")


# ---- the micro-benchmarks and memory (tbkit.sec_micro) ---------------------

MICRO_INTRO = (
    "Virtual clock, one scheduler per backend, time per operation against the number of "
    "tasks N it holds; log-log axes, one line per backend (dashed: a policy variant of the "
    "same backend).")

# fields: profile (Code), left (what it leaves out, joined)
MICRO_LEFT_TO_FULL = (
    "This run's profile ({profile}) does not measure {left}: no verdict of this report reads "
    "them, and they are left to `--profile full` so that the profile keeps its time budget "
    "with the precision sweep.")

MICRO_CELLS = "Cells: median ns per operation (coefficient of variation of the repetitions)."

# fields: floor (Code, the floor's name), times (its times at each N, joined)
MICRO_INTERFACE_FLOOR = (
    "The interface alone ({floor}: the same calls reaching a structure that does nothing, "
    "tb_backend_floor; not a timer, so in no table, figure, finding or ranking of the "
    "backends): {times}. Every backend's time above includes it.")

MICRO_WORK_CELLS = (
    "Cells: the structure's work per operation, counted by the backend (median over the "
    "repetitions; 0: none of its counters moved). Counted, not timed, so free of the "
    "machine's noise: where the time grows with N and the work does not, the growth is the "
    "memory hierarchy's, not the structure's.")

# fields: ops (the benchmarks, Code, joined)
MEMORY_INTRO = (
    "Bytes the scheduler holds from its allocator divided by the number of pending tasks, "
    "against N, as counted by benchmark {ops}.")

OTHER_INTRO = "Benchmarks in the results that no section above describes, shown as measured."


# ---- Valgrind's counts (tbkit.sec_counts) ----------------------------------

COUNTS_NONE = (
    "This run has no `counts.json`: run `bench/run.py --profile counts --out <this directory>` "
    "(needs valgrind) and re-render with `./timerbench report --from` to add instructions "
    "and simulated cache misses per operation.")

METHOD_COUNTS = (
    "Each figure is one batch of the micro-benchmark's operation, on the head-to-head "
    "configuration with the same seeded delays, run by `bench/counts.c` under "
    "`valgrind --tool=callgrind --cache-sim=yes` with collection switched on around the "
    "timed part only, divided by the operations in it. These counts are deterministic: they "
    "do not move between runs or machines.")

# fields: model (the simulated caches, tbkit.countsdata.cache_model_text)
METHOD_COUNTS_CACHES = " Simulated caches: {model}."

# fields: floor (Code, the floor's name)
COUNTS_FLOOR = (
    "{floor}: the interface alone (tb_backend_floor: the core's checks, the pool and the "
    "handle's check reaching a structure that does nothing; not a timer). A backend's row "
    "less the floor's at the same N is what its structure costs.")


# ---- the runtime experiments (tbkit.sec_runtime) ---------------------------

RUNTIME_INTRO = (
    "Each experiment runs once per repetition with real threads; its counters are medians "
    "over the repetitions.")

# What each runtime experiment measures, after "What is measured: ".
RUNTIME_WHAT = {
    "lateness": "one-shot tasks with short delays, at light load and with many tasks "
                "pending; lateness is the start of the run minus its deadline. The floors "
                "wait for the same planned times in the same run, one per wait primitive: "
                "floor in pthread_cond_timedwait, signalled by each new earliest probe (what "
                "every backend here waits in, so the floor they are held to), nanosleep in "
                "clock_nanosleep",
    "jitter": "one fixed-rate task with a short period (workload rate1ms): lateness against "
              "the planned schedule, period error and total drift",
    "interference": "several fast fixed-rate tasks and one slow task: how late the fast ones "
                    "run, with one thread and with a pool",
    "burst": "N tasks with one deadline, submitted at once: submit cost and the time from the "
             "deadline until the last one started",
    "idle": "one task far in the future: CPU time and wake-ups per second while nothing is due",
    "workers": "a pool of threads and a steady trickle of tasks: timed waits and wake-ups per "
               "task, with the leader-follower protocol on and off",
    "producers": "several threads scheduling at once as fast as they can: throughput and "
                 "lateness",
    "failing": "one runner (threads=1), real threads: ten one-shot tasks due at 1 to 10 ms, "
               "the third of which fails, then one more schedule: what a failing task does "
               "to the others (an STPE of one thread goes on, Timer dies)",
}

# fields: n (instances not measured), s ("s" for several)
RUNTIME_PARTIAL = (
    "**Partial:** {n} instance{s} of this experiment were not measured (the run stopped "
    "first; see Limitations): the tables show what was, and no finding from it goes to the "
    "summary.")

# fields: pooled (RUNTIME_PERCENTILES_POOLED or nothing), tail (samples beyond)
RUNTIME_PERCENTILES = (
    "Percentiles: {pooled}the median over the repetitions of each repetition's own; shown "
    "only where at least {tail} / (1 − q) samples back them.")
RUNTIME_PERCENTILES_POOLED = (
    "over every repetition's samples pooled (samples.csv) where there were several "
    "repetitions, else ")

RUNTIME_FAILURE_WHAT = (
    "What is measured (virtual clock, report/probe.c): a row of one-shot tasks due one after "
    "another, one of which fails (the C analogue of a thrown exception); then one more task "
    "is scheduled.")

RUNTIME_WALLSTEP_WHAT = (
    "What is measured (virtual clock, report/probe.c): one-shot tasks due at 10, 20 and "
    "30 ms; at 5 ms the wall clock (java.util.Timer's System.currentTimeMillis) is stepped "
    "back by 50 ms, and in a second run forward by 15 ms. A task's shift is its run time "
    "against the same run without the step, so a wheel's tick does not count as the step's "
    "effect.")


# ---- replayed traces (tbkit.sec_replay) -------------------------------------

# fields: tick (the wheels' tick, or "common"), reps (repetitions)
METHOD_REPLAY = (
    "Each trace is replayed on each backend's virtual clock by `bench/replay.c`: the clock "
    "advances to each event's time, then the operation runs; after the last event the clock "
    "moves on until every uncancelled timer has fired (periodic timers stop one period "
    "after the end). The wheels run at a {tick} tick (the head-to-head series), the heaps "
    "with their originals' policies (remove-on-cancel off: cancelled timers stay queued "
    "until their time; a backend that has the policy is replayed with it on as well, as "
    "NAME+roc). Every replay is checked: each timer the trace leaves uncancelled fires "
    "exactly once, none early. Time per event is the whole replay's time over the trace's "
    "events (the replay thread's CPU time, and the wall time beside it), median and range "
    "of {reps} repetitions, backends interleaved; per-kind costs come from a second pass "
    "that times runs of one kind at one instant as a batch (clock cost subtracted), so they "
    "are coarser than the total. Lateness is the delay between a timer's deadline and its "
    "run on the virtual clock, in the backend's ticks (0 for the heaps).")

# fields: failed (each backend and trace, joined)
REPLAY_FAILED = (
    "**Failed checks:** {failed}. A backend that failed its check on a trace has no numbers "
    "for it and is left out of that trace's verdict; the other backends' results stand.")

REPLAY_DELAYS_CAPTION = (
    "Delay distribution of every replayed trace (cumulative, log scale), its cancel ratio "
    "(timers cancelled or re-armed before they fired, of all timers) in the legend.")

REPLAY_SWEEP = "The ticked backends swept over their tick (the cost-precision front):"

REPLAY_FRONT_AXES = (
    "The front's three axes: CPU per event, lateness, and how often the backend's thread "
    "would wake (the distinct instants at which it runs something, and a ticked backend's "
    "every tick up to its last run, counted in the check pass), which is what a lateness "
    "budget saves where the CPU per event does not show it:")

# fields: effect (the smallest effect that is not a tie, a percentage)
REPLAY_RULE = (
    "Rule: among the backends, and the ticked backends at each tick of their sweep, that "
    "ran no timer later than its budget, the one with the lowest median CPU time per event "
    "wins, unless others are within {effect} of it or not significantly different "
    "(Mann-Whitney over the repetitions): then they are named together as tied. Where none "
    "kept every budget, those that missed the smallest share are named, with every "
    "candidate's share. A trace without budgets is decided on cost alone, among the "
    "backends. CPU time, not wall time, because a repetition whose thread the machine's "
    "other load descheduled has a wall time several times the others'.")


# ---- the originals on the JVM (tbkit.sec_jvm) -------------------------------

# fields: jvms (JVM_FORKS or JVM_ONE), size (Code), vm, version, netty,
# max_batch, dropped (JVM_DROPPED or nothing), elapsed (JVM_ELAPSED or nothing)
JVM_INTRO = (
    "Four backends render JVM classes in C: `heapqueue` is `ScheduledThreadPoolExecutor` "
    "(removeOnCancel off and on), `timerthread` is `java.util.Timer`, `timerwheel` is "
    "Netty's `HashedWheelTimer`; `DelayQueue` (Kafka's purgatory before its wheel) has no "
    "rendering and is shown for reference. The originals ran in {jvms} "
    "(`jvm/TimerBench.java`, size {size}, {vm}, {version}, Netty {netty}) on the C micro's "
    "own workloads, with JIT warm-up, shuffled repetitions and batches of at most "
    "{max_batch} operations; {dropped} a repetition's figure is the median of its batches "
    "(timeouts: its operations' sum, where the worker contends with the caller), a cell's "
    "the median over repetitions with min-max beside (jvm/README.md, \"Why not JMH\"). The C "
    "side is this run's micro, series h2h (insert and cancel on uniform, timeouts on "
    "timeouts, expire on short). The two sides differ in what a figure holds: the JVM runs "
    "in real time with the originals' own worker threads and measures what the caller's "
    "thread pays; the C micro runs on a virtual clock; expire is the worker's CPU time per "
    "fired task on the JVM, its idle ticking taken out.{elapsed}")
JVM_FORKS = "{forks} fresh JVMs per cell"
JVM_ONE = "one JVM"
# fields: dropped, all (repetitions)
JVM_DROPPED = ("a repetition in which a JIT compilation finished is dropped and measured "
               "again ({dropped} of {all} dropped);")
# fields: seconds
JVM_ELAPSED = " The harness took {seconds} s."

JVM_TIMEOUTS_WHOLE = (
    "The table's timeouts are the caller's part on both sides (C: series `caller`, the "
    "clock moved untimed after each batch; JVM: the caller's time, the worker's work off "
    "its thread). With the rest of the work counted too (C: series `h2h`, every operation "
    "moving the clock through `tb_advance`; JVM: the caller's and the worker's CPU time "
    "over the timed stretch), per operation:")

# fields: which (subject at N (count), joined)
JVM_UNPACED = (
    "Left out: {which} (the caller could not keep the ring's pace, so its timeouts were not "
    "revisited at half the timeout as in C).")

JVM_NO_GC = (
    "No garbage collection fell in a measured repetition (the heap is fixed and "
    "pre-touched, and each structure's fill is followed by a collection).")
# fields: n (collections)
JVM_GC = "{n} garbage collections fell in measured repetitions (the GC column)."

JVM_COVERAGE = "N on each side (a side lacking an N shows \"not measured\" above):"

# fields: cases (per N, joined)
JVM_CONTROL = (
    "The control: STPE's insert with removeOnCancel off against on (the same `schedule()` "
    "call, so the harness must measure them alike): {cases}.")

