"""tbkit.texts — the report's section introductions and method texts, written
once (base layer, issue 36): each fragment is a named constant, named after
the section and place it appears in (`MICRO_INTRO`, `METHOD_REPLAY`, ...),
so that prose is read and edited here and the section modules (tbkit.sec_*)
only compute what goes into it.

A fragment is plain text, or a template whose named fields `{name}` the
section fills with what it computed (numbers already formatted by
tbkit.numbers, names, links); `spans(template, **fields)` turns one into
the spans of a paragraph, with `**bold**` and `` `code` `` marked up in the
template itself.  Verdicts are said elsewhere (tbkit.claimtext).  The
reference manual of the harnesses and their results is bench/README.md: a
fragment points to it rather than repeating it, except the purgatory
fragments below, which still say what its "Reading the purgatory section"
says (see the note there).
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
# The section when the originals were not measured: {why} (tbkit.claimtext's
# jvm_absent_why), {claim} the claim's title (tbkit.claimtable).
JVM_ABSENT = (
    "The JVM originals (ScheduledThreadPoolExecutor, java.util.Timer, "
    "DelayQueue, Netty's HashedWheelTimer) were not measured: {why}. The JDK "
    "(default-jdk-headless) and Netty (libnetty-java) come from Debian, and "
    "both README commands install them as root; the standard and full "
    "profiles then run the harness into jvm.json (jvm/README.md). Everything "
    "else in this report ran as usual. The claim \"{claim}\" is not tested.")
JVM_ABSENT_WHY = "the JDK (default-jdk-headless) or Netty (libnetty-java) is not installed"

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


# ---- the event-loop libraries (tbkit.sec_libs) ------------------------------

LIBS_INTRO = (
    "An engineer choosing a timer for an event loop in C picks a library, not a structure. "
    "These are the loops Debian ships, each driven only through its installed public API "
    "(`libs/`, one adapter per library), measured by the `libs` harness on the real clock "
    "in the micro's own workloads, sizes, batches and repetitions (pinned, interleaved, "
    "medians with min-max). They cannot run on the virtual clock, so they are subjects "
    "beside the backends, not backends.")

# fields: n (the largest N of the slow operations)
LIBS_SLOW = (
    "timeouts and reschedule run paced on the real clock (each repetition is the ring once "
    "round, T/2 of wall time), and expire at 10^6 takes seconds a batch in sd-event and "
    "GLib: this profile runs these three at N up to {n}; `--profile full` runs every N.")

# What one operation is, per operation, libraries and renderings (bench/README.md,
# "The libraries", has the harness's side of it).
LIBS_OP_TEXT = {
    "insert": "one start of a timer into a loop holding N (delays uniform 1 ms - 1000 s, "
              "the loop not running); renderings: the micro's insert, same workload",
    "cancel": "one stop, in random order, of N pending; renderings: the micro's cancel "
              "(heapqueue with removeOnCancel on, since every library's stop removes at "
              "once; timerthread and quadheap cancel lazily, as java.util.Timer and Go do: "
              "their cancel only marks the task and the removal comes later, so they beat "
              "any removal by construction)",
    "expire": "CPU time per fired timer when N timers are due at once and the loop runs "
              "without blocking until all have fired (libraries: delays 1-5 ms, real "
              "clock; renderings: the micro's expire on workload short, virtual clock)",
    "timeouts": "one server operation on a ring of N connections paced on the real clock "
                "(stop the previous timeout with p = 0.95, start a new one of T = max(20 ms, "
                "4 us x N)), a non-blocking loop run after every stretch, both timed; "
                "renderings: the micro's timeouts (30 s, virtual clock)",
    "reschedule": "the idle timeout: a request on a random one of N connections pushes its "
                  "timeout back, by the strategy named (restart: stop and start; again: "
                  "the library's restart in place; lazy: store the time, re-arm for the "
                  "remainder when the timer fires); renderings: the micro's reschedule "
                  "(virtual clock)",
}

LIBS_CHEAPEST = "The cheapest strategy per subject, and by how much over the next:"

STRATEGIES_INTRO = (
    "N connections, each with one pending idle timeout pushed back on every request (the "
    "micro's `reschedule` on the virtual clock: 10 s timeouts, a connection's requests 3 s "
    "apart on average; the libraries' on the real clock with T = max(20 ms, 4 us x N) and "
    "requests 0.3 T apart). Strategies, after libev's manual (\"Be smart about timeouts\"): "
    "`restart` stops the timer and starts it again; `again` restarts it in place (where the "
    "structure or library has such a call); `lazy` only stores the request's time and lets "
    "the timer fire, its callback re-arming for the remainder (paid in the timed advances "
    "and loop runs). libevent's common timeouts (`libevent-common`) are the fourth: one "
    "FIFO per duration. Time per request, medians over the repetitions; the cheapest "
    "strategy per subject, and by how much over the next. A restart on a lazy-cancel "
    "rendering (heapqueue, timerthread) leaves a cancelled record per request, which the "
    "harness releases outside the timed part as for insert, so its figure leaves that "
    "purge out:")

LIBS_LATENESS = (
    "One loop in the harness's thread: a timer every 0.5 ms arms a probe of 1-10 ms (the "
    "runtime harness's light workload); lateness is the probe's callback time less the time "
    "read before its start plus its delay, so a negative one is an early fire. A library "
    "that counts in milliseconds (libuv, GLib) or waits in milliseconds (epoll_wait, poll) "
    "rounds its wake-ups to them; one that arms against the time its loop read when the "
    "iteration began (libev, libevent, sd-event) fires early by as much as that time is "
    "stale when the arming callback runs.")

LIBS_IDLE = (
    "An idle loop with one timer 60 s away, for the profile's idle window: the thread's "
    "context switches (its wake-ups) and CPU time per second.")


# ---- the purgatory experiment (tbkit.sec_purgatory) -------------------------
# bench/README.md, "Reading the purgatory section", says the same for the
# manual's reader (the saturation rule, the table, the prediction): the
# report does not point there yet, so the two are kept in step by hand.

# fields: timeout, few_p50, few_p75, many_p50, many_p75 (ms), rate_shortfall,
# lag_growth, expiry_shortfall, drain, lateness_growth (the saturation rule)
PURGATORY_INTRO = (
    "Kafka replaced its request purgatory, a `java.util.concurrent.DelayQueue` of requests, "
    "by a hierarchical timing wheel over a delay queue of buckets on one experiment: "
    "requests arriving at a target rate, each with a timeout, most completed (their timeout "
    "cancelled) before it fires. Its proposal reports the old purgatory saturated around "
    "60,000 requests per second while the wheel showed no significant degradation, the old "
    "one worse when timeouts were frequent. Here the same workload is played open loop on "
    "the real clock: every operation is due at its intended time, a player that falls "
    "behind catches up, and its lag is measured from the intended times, so a subject that "
    "cannot keep up shows as saturated, never as a slower rate. Poisson arrivals; a "
    "{timeout} ms timeout per request; completion after a log-normal time, shape `few` (p50 "
    "{few_p50} ms, p75 {few_p75} ms: most requests complete) and `many` (p50 {many_p50} ms, "
    "p75 {many_p75} ms: about half time out). A play is saturated when the player fell "
    "behind (the achieved rate more than {rate_shortfall} below the offered one, or its lag "
    "grown by more than {lag_growth} through the play) or the subject's expiry did (more "
    "than {expiry_shortfall} of the due timeouts unfired {drain} after the last deadline, or "
    "their lateness grown by more than {lateness_growth}); target rates step up on a log "
    "grid until a subject saturates. The floor subject does nothing with the operations: "
    "where it saturates is the player's own limit, and a subject saturating there is "
    "limited by the player, not ranked.")

PURGATORY_RATE_CAPTION = (
    "Achieved against offered request rate, one panel per shape, one line per subject (JVM "
    "subjects marked), log-log: the median over repetitions, error bars from the lowest to "
    "the highest; the grey line is achieved = offered, where a subject that keeps up stays. "
    "The floor (black) is the player doing nothing: no subject can keep up beyond it.")

PURGATORY_CPU_CAPTION = (
    "The subject's CPU time per request (its own threads' CPU and the time the player spent "
    "inside its schedule and cancel calls, not the player's pacing; a library's loop thread "
    "whole) against the offered rate, one panel per shape, log-log, median and spread over "
    "repetitions.")

PURGATORY_SATURATION = (
    "**Saturation rate** per subject and shape: a rate is saturated when more than half of "
    "its plays are; the interval runs from the rate below the first saturated rate to that "
    "rate, \"not reached\" when it kept up at every rate it ran, and names the rates whose "
    "plays disagreed (the claim takes the lower end below the first of them). Kafka's "
    "proposal, for comparison: the old purgatory around 60k/s, the wheel not saturated.")

PURGATORY_AT_TOP = (
    "At the highest rate each subject ran unsaturated (or the lowest, when it saturated at "
    "every rate): CPU time per request of the subject (its threads' CPU and the player's "
    "time inside its calls, not the player's pacing) and of the whole process, the share of "
    "timeouts that fired, the p99 lateness of those, and the most tasks pending and "
    "cancelled-but-kept (zombies: what a lazy cancel holds) the player sampled (n/a where "
    "the subject cannot say):")

PURGATORY_PREDICTION = (
    "**What the micro-benchmarks predicted**: this run's insert and cancel (series h2h, "
    "workload uniform, virtual clock) at the micro's N nearest the most requests the delay "
    "queue held pending at its highest unsaturated rate, a request costing one insert and, "
    "for the share the play cancelled, one cancel (expiry left out: the micro's expire "
    "workload is not this one's). The measured subject CPU per request above holds the "
    "expiry, the subject's threads' wake-ups and the time of each call as the player read "
    "it (the floor's figure is that reading's own cost).")


# ---- the source articles (tbkit.sec_articles) -------------------------------

# fields: count (Bold, the count per status)
ARTICLES_INTRO = (
    "{count} The five articles (in Chinese) that timerbench was started from make these "
    "testable statements about the timers they describe; a statement several articles make "
    "is one row, quoted from the one that says it most plainly. Each row says where the "
    "suite answers it: a claim of this report (with this run's verdict), a test that "
    "asserts it (`meson test`), a deliberate difference a backend's README declares, with "
    "its reason, or nothing, and why.")


# ---- the claims and the limitations (tbkit.sec_claims) ----------------------

CLAIMS_INTRO = (
    "Each claim is checked against this run's measurements; the verdict is decided by the "
    "rule shown, never typed in.")

LIMITATIONS_CLOCKS = (
    "Virtual-clock micro-benchmarks leave out locks and threads by design; the runtime "
    "experiments include them, and their numbers depend on the kernel's scheduler and timer "
    "slack of this machine.")
