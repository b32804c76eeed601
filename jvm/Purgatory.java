/*
 * Purgatory.java — issue 41's purgatory experiment on the JVM: an open-loop
 * real-time player issuing Kafka's purgatory workload (Poisson arrivals,
 * a 200 ms timeout per request, completion = cancel at a log-normal time)
 * against the JVM's own timer structures, rates stepped up until each one
 * saturates, all inside one JVM.  Subjects: DelayQueue as Kafka 0.8.2's
 * RequestPurgatory used it (a reaper thread, completed requests left in the
 * queue and purged by iterating it), ScheduledThreadPoolExecutor with
 * removeOnCancel off and on, and Netty's HashedWheelTimer at its defaults.
 * The same method, row schema and saturation rule as the C player
 * (bench/player.c; the shared design in jvm/README.md, "The purgatory
 * experiment"); writes purgatory-jvm.json (tbkit/purgjvm.py runs it).
 *
 * JIT warm-up: before the measured sweep each subject plays one discarded
 * play at the grid's lowest rate, shape `many`, for the grid's play length
 * (at the standard grid 10,000/s for 0.5 s: about 5,000 requests and
 * 7,600 operations, about 0.8 s of wall time per subject; at full, 2 s
 * plays, about 2.3 s), which gets the player loop and the subject's
 * schedule, cancel and fire paths compiled; the progress says how long
 * each took.
 *
 *   java -cp timerbench-jvm.jar:/usr/share/java/netty-common.jar Purgatory
 *       [--shapes few,many] [--rates r1,r2,...] [--seconds S]
 *       [--repetitions K] [--stop first|two] [--confirm C] [--subjects a,b,...]
 *       [--seed N] [--profile NAME] [--out FILE]
 *
 * Rates go up the grid for every subject and shape, each played K times
 * (the same plan, from the seed, for every subject), interleaved: at each
 * rate every subject still sweeping plays in a shuffled order.  A rate is
 * saturated when more than half of its plays are; --confirm C plays up to
 * C more of a rate while its plays so far are (C = 1, K = 1: saturated only
 * if two plays in a row are, so that one stall of a shared machine does
 * not end a sweep); a subject's sweep of a shape ends at its first
 * saturated rate (--stop first) or after two in a row (--stop two), the
 * rule of the C sweep (tbkit/purgrun.py).
 *
 * Progress on stderr (one line per play), the JSON in FILE (written whole,
 * through a temporary name) or on stdout.  Exit 2 on a bad argument.
 */

import java.io.File;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;

public final class Purgatory {

    // ---- the workload (tbkit/tracegen.py `purgatory`, the same model) ----

    /** Every request's timeout. */
    static final long TIMEOUT_NS = 200_000_000L;
    /** The 75th percentile of N(0, 1) (tracegen.py Z75). */
    static final double Z75 = 0.674490;
    /** The shapes: completion p50 and p75 in ms (tracegen.py MIXES low/high). */
    static final String[] SHAPES = {"few", "many"};
    static final double[][] SHAPE_MS = {{20.0, 60.0}, {200.0, 400.0}};

    // ---- the saturation rule ----------------------------------------------
    // The same constants as tbkit/purgatory.py (SAT_RATE_SHORTFALL,
    // SAT_LAG_GROWTH_NS: the report re-checks the rule from the raw fields)
    // and bench/player.h (the C player); change all three together.

    /** Saturated when the achieved rate is more than this share below the offered. */
    static final double SAT_RATE_SHORTFALL = 0.05;
    /** ... or when the player's lag grew by more than this through the play. */
    static final long SAT_LAG_GROWTH_NS = 2_000_000L;
    /** The expiry side (tbkit/purgatory.py SAT_EXPIRY_SHORTFALL,
     *  SAT_LATENESS_GROWTH_NS, SAT_MIN_WINDOW; bench/player.h): a subject
     *  whose own threads fall behind while the player keeps up leaves due
     *  timeouts unfired at the drain's end, or fires them later and later. */
    static final double SAT_EXPIRY_SHORTFALL = 0.05;
    static final long SAT_LATENESS_GROWTH_NS = 50_000_000L;
    static final int SAT_MIN_WINDOW = 20;

    // ---- the player ---------------------------------------------------------

    /** The first operation is due this long after the play starts. */
    static final long LEAD_NS = 20_000_000L;
    /** Park until this long before an operation is due, then spin. */
    static final long SPIN_NS = 100_000L;
    /** The player samples the subject's pending and zombies this often. */
    static final long SAMPLE_NS = 1_000_000L;
    /** After the last deadline, wait at most this long for timeouts to fire:
     *  the purgatory's own timeout, as bench/player.h PL_DRAIN_GRACE_NS (a
     *  subject whose own thread is this far behind, such as DelayQueue's
     *  reaper at high rates, leaves the rest unfired: fired + cancelled <
     *  requests, said on stderr, and the rule's expiry side, D40, calls the
     *  play saturated; its rows keep the lateness of those that fired). */
    static final long DRAIN_NS = 200_000_000L;
    /** Kafka's purgeInterval default (0.8.2: the broker's *.purgatory.purge.interval.requests). */
    static final int PURGE_INTERVAL = 1000;
    /** Plans hold at most this many requests (ids and the cancels' sort key). */
    static final long MAX_REQUESTS = 1L << 24;
    static final double MAX_SECONDS = 300.0;

    static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();
    static final com.sun.management.OperatingSystemMXBean OS =
        (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();

    /** One play's operations in intended order: at[i] ns after the start;
     *  op[i] = id for the schedule of request id, ~id for its cancel. */
    static final class Plan {
        final int shape;
        final double rate, seconds;
        final long[] at;
        final int[] op;
        final long[] arrival;     // intended arrival of each request
        final int requests;
        final int cancels;        // requests that complete before their timeout

        Plan(int shape, double rate, double seconds, long seed) {
            this.shape = shape;
            this.rate = rate;
            this.seconds = seconds;
            double mu = Math.log(SHAPE_MS[shape][0]);
            double sigma = (Math.log(SHAPE_MS[shape][1]) - mu) / Z75;
            SplittableRandom rng = new SplittableRandom(seed);
            int cap = (int) Math.min(MAX_REQUESTS, (long) (rate * seconds * 1.1 + 64));
            long[] arr = new long[cap];
            long[] cancels = new long[cap];   // (time << 24) | id, sorted below
            int n = 0, nc = 0;
            double t = 0.0;
            long end = (long) (seconds * 1e9);
            for (;;) {
                t += rng.nextExponential() / rate * 1e9;
                long now = (long) t;
                if (now >= end)
                    break;
                if (n == arr.length) {
                    if (n >= MAX_REQUESTS)
                        throw new IllegalArgumentException("more than " + MAX_REQUESTS + " requests in a play");
                    arr = Arrays.copyOf(arr, (int) Math.min(MAX_REQUESTS, 2L * n));
                    cancels = Arrays.copyOf(cancels, arr.length);
                }
                arr[n] = now;
                long latency = Math.max(1L, (long) (Math.exp(mu + sigma * rng.nextGaussian()) * 1e6));
                if (latency < TIMEOUT_NS)
                    cancels[nc++] = ((now + latency) << 24) | n;
                n++;
            }
            Arrays.sort(cancels, 0, nc);
            requests = n;
            this.cancels = nc;
            arrival = Arrays.copyOf(arr, n);
            at = new long[n + nc];
            op = new int[n + nc];
            int i = 0, a = 0, c = 0;
            // a completion due at or before an arrival comes first, as in tracegen.py
            while (a < n || c < nc) {
                if (c < nc && (a == n || (cancels[c] >>> 24) <= arr[a])) {
                    at[i] = cancels[c] >>> 24;
                    op[i++] = ~(int) (cancels[c++] & 0xFFFFFF);
                } else {
                    at[i] = arr[a];
                    op[i++] = a++;
                }
            }
        }
    }

    /** A subject: one timer structure, armed and cancelled by the player,
     *  firing on its own thread into the play's fire(). */
    interface Subject {
        String name();
        /** One line: what the structure is and how it is configured. */
        String structure();
        void open(Play play, int maxIds) throws Exception;
        /** Arms request id's timeout (TIMEOUT_NS from now). */
        void schedule(int id);
        /** true when the timeout was cancelled, false when it had fired. */
        boolean cancel(int id);
        /** Entries the structure holds (live and zombies), -1 if unknown. */
        long held();
        /** Stops the subject's threads; waits for them. */
        void close() throws Exception;
    }

    /** What a play records; fire() runs on the subject's thread.  Each
     *  request ends once, fired or cancelled, decided by its state: a fire
     *  always counts (its callback ran), a cancel only if no fire came
     *  first.  STPE's future.cancel(false) returns true for a task whose
     *  run has begun (FutureTask's state stays NEW while the callable
     *  runs), so a fire can follow a "successful" cancel: that request
     *  counts as fired, not cancelled. */
    static final class Play {
        static final int LIVE = 0, CANCELLED = 1, FIRED = 2;
        final long[] deadline;    // the player's issue time of the schedule + TIMEOUT_NS
        final long[] late;        // fire time - deadline, Long.MIN_VALUE until fired
        /** The drain's end: a fire after it is not served (D40), not counted. */
        volatile long drainEnd = Long.MAX_VALUE;
        final AtomicIntegerArray state;
        final AtomicLong fired = new AtomicLong();
        final AtomicLong firedAfterCancel = new AtomicLong();
        final AtomicLong firedTwice = new AtomicLong();

        Play(int n) {
            deadline = new long[n];
            late = new long[n];
            Arrays.fill(late, Long.MIN_VALUE);
            state = new AtomicIntegerArray(n);
        }

        void fire(int id) {
            long now = System.nanoTime();
            if (now > drainEnd)
                return;
            int prev = state.getAndSet(id, FIRED);
            if (prev == FIRED) {
                firedTwice.incrementAndGet();
                return;
            }
            late[id] = now - deadline[id];
            if (prev == CANCELLED)
                firedAfterCancel.incrementAndGet();
            fired.incrementAndGet();
        }

        /** The player's cancel returned true: true if the request is cancelled. */
        boolean cancelled(int id) {
            return state.compareAndSet(id, LIVE, CANCELLED);
        }
    }

    // ---- the subjects -------------------------------------------------------

    /** Kafka 0.8.2's RequestPurgatory (and the DelayedOperationPurgatory that
     *  replaced it before the wheel), its delay queue part: each request a
     *  Delayed in one DelayQueue; an expiration reaper thread poll()s it with
     *  a 200 ms timeout and completes the expired request if nothing else
     *  has; completion by the player only sets the request's flag (the
     *  request stays in the queue, a zombie); after every poll the reaper
     *  purges completed requests by iterating the queue when it holds
     *  purgeInterval (1000) requests or more — 0.8.2's rule, on the queue's
     *  size, not on the completed count (0.8.0 purged after every 10,000 new
     *  requests).  The watch lists by key are not modelled. */
    static final class DelayQueueSubject implements Subject {
        static final class Req implements Delayed {
            final int id;
            final long due;
            final AtomicInteger done = new AtomicInteger();

            Req(int id, long due) {
                this.id = id;
                this.due = due;
            }

            @Override public long getDelay(TimeUnit unit) {
                return unit.convert(due - System.nanoTime(), TimeUnit.NANOSECONDS);
            }

            @Override public int compareTo(Delayed o) {
                return Long.compare(due, ((Req) o).due);
            }

            boolean complete() {
                return done.compareAndSet(0, 1);
            }
        }

        DelayQueue<Req> queue;
        Req[] reqs;
        Thread reaper;
        volatile boolean running;
        Play play;

        public String name() {
            return "DelayQueue";
        }

        public String structure() {
            return "java.util.concurrent.DelayQueue of requests + reaper thread poll(200 ms) "
                + "+ purge of completed requests whenever the queue holds >= " + PURGE_INTERVAL
                + " (Kafka 0.8.2 RequestPurgatory)";
        }

        public void open(Play p, int maxIds) {
            play = p;
            queue = new DelayQueue<>();
            reqs = new Req[maxIds];
            running = true;
            reaper = new Thread(this::reap, "purgatory-reaper");
            reaper.setDaemon(true);
            reaper.start();
        }

        void reap() {
            while (running) {
                Req r;
                try {
                    // Kafka 0.8.2's pollExpired: past the completed requests
                    // to an expired one (or the 200 ms poll's end), so the
                    // purge below is checked once per expiry, not per poll
                    do {
                        r = queue.poll(200, TimeUnit.MILLISECONDS);
                    } while (r != null && !r.complete() && running);
                } catch (InterruptedException e) {
                    return;
                }
                if (r != null)
                    play.fire(r.id);
                if (queue.size() >= PURGE_INTERVAL) {
                    for (Iterator<Req> it = queue.iterator(); it.hasNext();)
                        if (it.next().done.get() != 0)
                            it.remove();
                }
            }
        }

        public void schedule(int id) {
            Req r = new Req(id, System.nanoTime() + TIMEOUT_NS);
            reqs[id] = r;
            queue.add(r);
        }

        public boolean cancel(int id) {
            Req r = reqs[id];
            reqs[id] = null;
            return r.complete();
        }

        public long held() {
            return queue.size();
        }

        public void close() throws InterruptedException {
            running = false;
            reaper.interrupt();
            reaper.join();
        }
    }

    /** ScheduledThreadPoolExecutor with one thread; cancel = cancel(false). */
    static final class StpeSubject implements Subject {
        final boolean roc;
        ScheduledThreadPoolExecutor ex;
        ScheduledFuture<?>[] futures;
        Play play;

        StpeSubject(boolean roc) {
            this.roc = roc;
        }

        final class Fire implements Runnable {
            final int id;

            Fire(int id) {
                this.id = id;
            }

            @Override public void run() {
                play.fire(id);
            }
        }

        public String name() {
            return roc ? "STPE-roc" : "STPE";
        }

        public String structure() {
            return "java.util.concurrent.ScheduledThreadPoolExecutor, 1 thread, removeOnCancel "
                + (roc ? "on" : "off") + " (cancel = future.cancel(false))";
        }

        public void open(Play p, int maxIds) {
            play = p;
            futures = new ScheduledFuture<?>[maxIds];
            ex = new ScheduledThreadPoolExecutor(1, r -> {
                Thread t = new Thread(r, "purgatory-stpe");
                t.setDaemon(true);
                return t;
            });
            ex.setRemoveOnCancelPolicy(roc);
            ex.prestartAllCoreThreads();
        }

        public void schedule(int id) {
            futures[id] = ex.schedule(new Fire(id), TIMEOUT_NS, TimeUnit.NANOSECONDS);
        }

        public boolean cancel(int id) {
            ScheduledFuture<?> f = futures[id];
            futures[id] = null;
            return f.cancel(false);
        }

        public long held() {
            return ex.getQueue().size();
        }

        public void close() throws InterruptedException {
            ex.shutdownNow();
            if (!ex.awaitTermination(10, TimeUnit.SECONDS))
                throw new IllegalStateException("the executor did not stop in 10 s");
        }
    }

    /** Netty's HashedWheelTimer at its defaults (100 ms tick, 512 buckets);
     *  cancel = timeout.cancel().  Loaded only when Netty is on the class path. */
    static final class NettySubject implements Subject {
        io.netty.util.HashedWheelTimer timer;
        io.netty.util.Timeout[] timeouts;
        Play play;

        final class Fire implements io.netty.util.TimerTask {
            final int id;

            Fire(int id) {
                this.id = id;
            }

            @Override public void run(io.netty.util.Timeout t) {
                play.fire(id);
            }
        }

        public String name() {
            return "Netty";
        }

        public String structure() {
            String v = io.netty.util.HashedWheelTimer.class.getPackage().getImplementationVersion();
            return "io.netty.util.HashedWheelTimer" + (v != null ? " " + v : "")
                + ", defaults: tick 100 ms, 512 buckets (cancel = timeout.cancel())";
        }

        public void open(Play p, int maxIds) {
            play = p;
            timeouts = new io.netty.util.Timeout[maxIds];
            timer = new io.netty.util.HashedWheelTimer(r -> {
                Thread t = new Thread(r, "purgatory-netty");
                t.setDaemon(true);
                return t;
            });
            timer.start();
        }

        public void schedule(int id) {
            timeouts[id] = timer.newTimeout(new Fire(id), TIMEOUT_NS, TimeUnit.NANOSECONDS);
        }

        public boolean cancel(int id) {
            io.netty.util.Timeout t = timeouts[id];
            timeouts[id] = null;
            return t.cancel();
        }

        public long held() {
            return timer.pendingTimeouts();
        }

        public void close() {
            timer.stop();
        }
    }

    /** The player alone: schedule and cancel return at once, nothing ever
     *  fires.  Where it saturates is this player's own limit (the C
     *  player's `floor` subject), so a JVM subject saturating there is not
     *  ranked above anything (tbkit/purgatory.py). */
    static final class FloorSubject implements Subject {
        public String name() {
            return "floor";
        }

        public String structure() {
            return "nothing: schedule and cancel return at once (the player's own limit)";
        }

        public void open(Play p, int maxIds) {
        }

        public void schedule(int id) {
        }

        public boolean cancel(int id) {
            return true;
        }

        public long held() {
            return -1;
        }

        public void close() {
        }
    }

    static boolean isFloor(Subject s) {
        return s instanceof FloorSubject;
    }

    static final String[] SUBJECTS = {"DelayQueue", "STPE", "STPE-roc", "Netty", "floor"};

    static Subject make(String name) {
        switch (name) {
            case "DelayQueue": return new DelayQueueSubject();
            case "STPE": return new StpeSubject(false);
            case "STPE-roc": return new StpeSubject(true);
            case "Netty": return new NettySubject();
            case "floor": return new FloorSubject();
            default: throw new IllegalArgumentException(name);
        }
    }

    static boolean nettyPresent() {
        try {
            Class.forName("io.netty.util.HashedWheelTimer", false, Purgatory.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    // ---- one play -------------------------------------------------------------

    /** The row of one play (the schema's keys, in its order). */
    static final class Row {
        String subject, side, structure, shape, why;
        int repetition, requests;
        double targetRate, offeredRate, achievedRate, seconds, cpuNs, playerCpuNs, subjectCpuNs,
            firedShare;
        long lagP50, lagP99, lagMax, lagGrowth, fired, cancelled, timeoutsDue;
        Long lateP50, lateP99, lateGrowth, peakPending, peakZombies;
        boolean saturated;
    }

    static void waitUntil(long due) {
        for (;;) {
            long left = due - System.nanoTime();
            if (left <= SPIN_NS)
                break;
            LockSupport.parkNanos(left - SPIN_NS);
        }
        while (System.nanoTime() < due)
            Thread.onSpinWait();
    }

    static Row play(Subject s, Plan p, int repetition) throws Exception {
        final int nops = p.op.length, n = p.requests;
        Play play = new Play(n);
        long[] lag = new long[nops];
        s.open(play, n);
        try {
            return play(s, p, repetition, play, lag);
        } finally {
            // a play that failed midway must not leave its subject's threads
            // running into the next one (closing twice is harmless)
            s.close();
        }
    }

    static Row play(Subject s, Plan p, int repetition, Play play, long[] lag) throws Exception {
        final int nops = p.op.length, n = p.requests;
        long scheduled = 0, cancelled = 0, peakHeld = -1, peakZombies = -1;
        long lastArrivalIssue = 0;
        long callNs = 0;            // time inside the subject's schedule and cancel
        long base = System.nanoTime() + LEAD_NS;
        long cpu0 = processCpuNs(), pcpu0 = THREADS.getCurrentThreadCpuTime();
        long nextSample = base;
        for (int i = 0; i < nops; i++) {
            long due = base + p.at[i];
            long now = System.nanoTime();
            if (now < due) {
                waitUntil(due);
                now = System.nanoTime();
            }
            int op = p.op[i];
            if (op >= 0) {
                play.deadline[op] = now + TIMEOUT_NS;
                s.schedule(op);
                callNs += System.nanoTime() - now;
                scheduled++;
                lastArrivalIssue = now;
            } else {
                boolean ok = s.cancel(~op);
                callNs += System.nanoTime() - now;
                if (ok && play.cancelled(~op))
                    cancelled++;
            }
            lag[i] = now - due;
            if (now >= nextSample) {
                long held = s.held();
                if (held >= 0) {
                    long zombies = Math.max(0, held - (scheduled - cancelled - play.fired.get()));
                    peakHeld = Math.max(peakHeld, held);
                    peakZombies = Math.max(peakZombies, zombies);
                }
                nextSample = now + SAMPLE_NS;
            }
        }
        // the drain: every request cancelled or fired, or DRAIN_NS past the last deadline
        long lastDeadline = 0;
        for (int id = 0; id < n; id++)
            lastDeadline = Math.max(lastDeadline, play.deadline[id]);
        while (!isFloor(s) && cancelled - play.firedAfterCancel.get() + play.fired.get() < n
               && System.nanoTime() < lastDeadline + DRAIN_NS) {
            LockSupport.parkNanos(SAMPLE_NS);
            long held = s.held();
            if (held >= 0) {
                peakHeld = Math.max(peakHeld, held);
                peakZombies = Math.max(peakZombies,
                    Math.max(0, held - (scheduled - cancelled - play.fired.get())));
            }
        }
        long cpu = processCpuNs() - cpu0, pcpu = THREADS.getCurrentThreadCpuTime() - pcpu0;
        play.drainEnd = Math.min(System.nanoTime(), lastDeadline + DRAIN_NS);
        s.close();
        cancelled -= play.firedAfterCancel.get();
        if (play.firedTwice.get() > 0)
            throw new IllegalStateException(play.firedTwice.get() + " timeouts fired twice");

        Row r = new Row();
        r.subject = s.name();
        r.structure = s.structure();
        r.shape = SHAPES[p.shape];
        r.repetition = repetition;
        r.targetRate = p.rate;
        r.requests = n;
        r.seconds = p.seconds;
        double span = (p.arrival[n - 1] - p.arrival[0]) / 1e9;
        r.offeredRate = n / span;
        r.achievedRate = n / ((lastArrivalIssue - (base + p.arrival[0])) / 1e9);
        long[] sorted = lag.clone();
        Arrays.sort(sorted);
        r.lagP50 = rank(sorted, 0.50);
        r.lagP99 = rank(sorted, 0.99);
        r.lagMax = sorted[nops - 1];
        int tenth = Math.max(1, nops / 10);
        r.lagGrowth = median(lag, nops - tenth, nops) - median(lag, 0, tenth);
        r.cpuNs = (double) cpu / n;
        r.playerCpuNs = (double) pcpu / n;
        // the timer's own: its threads' CPU (and the JVM's: JIT, GC) and the
        // player's time in its calls, not the player's pacing (a spin between
        // close arrivals), as bench/player.c's subject_cpu_ns_per_request
        r.subjectCpuNs = Math.max(0.0, (double) (cpu - pcpu + callNs) / n);
        r.fired = play.fired.get();
        r.cancelled = cancelled;
        r.firedShare = (double) r.fired / n;
        r.timeoutsDue = isFloor(s) ? 0 : n - p.cancels;   // the floor runs nothing
        r.side = isFloor(s) ? "floor" : "jvm";
        r.lateGrowth = latenessGrowth(play, n);
        long[] late = new long[n];
        int nl = 0;
        for (long v : play.late)
            if (v != Long.MIN_VALUE)
                late[nl++] = v;
        if (nl > 0) {
            Arrays.sort(late, 0, nl);
            long[] l = Arrays.copyOf(late, nl);
            r.lateP50 = rank(l, 0.50);
            r.lateP99 = rank(l, 0.99);
        }
        r.peakPending = peakHeld >= 0 ? Long.valueOf(peakHeld) : null;
        r.peakZombies = peakZombies >= 0 ? Long.valueOf(peakZombies) : null;
        saturation(r);
        if (!isFloor(s) && r.fired + cancelled != n)
            System.err.printf(Locale.ROOT, "purgatory: %s %s %s/s: %d of %d requests neither fired "
                + "nor cancelled %.1f s after the last deadline%n", r.subject, r.shape, fmt(p.rate),
                n - r.fired - cancelled, n, DRAIN_NS / 1e9);
        return r;
    }

    /** The saturation rule (SAT_RATE_SHORTFALL, SAT_LAG_GROWTH_NS above). */
    static void saturation(Row r) {
        List<String> why = new ArrayList<>();
        if (r.achievedRate < (1.0 - SAT_RATE_SHORTFALL) * r.offeredRate)
            why.add(String.format(Locale.ROOT, "achieved %.1f%% below offered",
                100.0 * (1.0 - r.achievedRate / r.offeredRate)));
        if (r.lagGrowth > SAT_LAG_GROWTH_NS)
            why.add(String.format(Locale.ROOT, "lag grew %.1f ms", r.lagGrowth / 1e6));
        if (r.fired < (1.0 - SAT_EXPIRY_SHORTFALL) * r.timeoutsDue)
            why.add(String.format(Locale.ROOT, "%.1f%% of the due timeouts unfired",
                100.0 * (1.0 - (double) r.fired / r.timeoutsDue)));
        if (r.lateGrowth != null && r.lateGrowth > SAT_LATENESS_GROWTH_NS)
            why.add(String.format(Locale.ROOT, "lateness grew %.1f ms", r.lateGrowth / 1e6));
        r.saturated = !why.isEmpty();
        r.why = String.join("; ", why);
    }

    /** The median lateness of the last tenth of the fired timeouts, in
     *  deadline order, less that of the first tenth; null with fewer than
     *  SAT_MIN_WINDOW in a tenth. */
    static Long latenessGrowth(Play play, int n) {
        int nl = 0;
        for (int id = 0; id < n; id++)
            if (play.late[id] != Long.MIN_VALUE)
                nl++;
        long[][] byDeadline = new long[nl][];
        nl = 0;
        for (int id = 0; id < n; id++)
            if (play.late[id] != Long.MIN_VALUE)
                byDeadline[nl++] = new long[] {play.deadline[id], play.late[id]};
        int tenth = nl / 10;
        if (tenth < SAT_MIN_WINDOW)
            return null;
        Arrays.sort(byDeadline, (a, b) -> Long.compare(a[0], b[0]));
        long[] late = new long[nl];
        for (int i = 0; i < nl; i++)
            late[i] = byDeadline[i][1];
        return median(late, nl - tenth, nl) - median(late, 0, tenth);
    }

    /** The process's CPU time in ns: the sum of every thread's
     *  /proc/self/task/<tid>/schedstat run time (its first field), exact to
     *  the ns.  OperatingSystemMXBean.getProcessCpuTime reads times(2) on
     *  Linux and steps by 10 ms, the size of a whole play's subject CPU at
     *  the lowest rates.  A thread that ends between the two readings takes
     *  its time with it (the players' threads live through the play);
     *  falls back to the MXBean where /proc cannot be read. */
    static long processCpuNs() {
        File[] tasks = new File("/proc/self/task").listFiles();
        if (tasks == null)
            return OS.getProcessCpuTime();
        long sum = 0;
        for (File t : tasks) {
            try {
                String line = new String(Files.readAllBytes(new File(t, "schedstat").toPath()),
                                         StandardCharsets.US_ASCII);
                sum += Long.parseLong(line.substring(0, line.indexOf(' ')));
            } catch (IOException | RuntimeException e) {
                // the thread ended since the listing: its time is gone either way
            }
        }
        return sum;
    }

    /** The nearest-rank q-quantile of a sorted array. */
    static long rank(long[] sorted, double q) {
        int k = (int) Math.ceil(q * sorted.length) - 1;
        return sorted[Math.max(0, Math.min(sorted.length - 1, k))];
    }

    static long median(long[] v, int from, int to) {
        long[] part = Arrays.copyOfRange(v, from, to);
        Arrays.sort(part);
        return rank(part, 0.5);
    }

    // ---- the sweep -------------------------------------------------------------

    static final class Options {
        int[] shapes = {0, 1};
        double[] rates = {10_000, 20_000, 40_000};
        double seconds = 0.4;
        int repetitions = 1;
        int stop = 1;               // saturated rates in a row that end a sweep
        int confirm = 0;            // plays more of a rate found saturated
        List<String> subjects = new ArrayList<>(Arrays.asList(SUBJECTS));
        long seed = 1;
        String profile = "custom";
        String out;
    }

    static long playSeed(long seed, int shape, int rate, int rep) {
        return seed * 0x9E3779B97F4A7C15L + ((shape * 1_000_003L + rate) * 1_000_033L + rep);
    }

    public static void main(String[] args) throws Exception {
        Options o = parse(args);
        long t0 = System.nanoTime();
        List<Subject> subjects = new ArrayList<>();
        List<String[]> skipped = new ArrayList<>();
        for (String name : o.subjects) {
            if (name.equals("Netty") && !nettyPresent())
                skipped.add(new String[] {name, "io.netty.util.HashedWheelTimer is not on the class "
                    + "path (Debian's libnetty-java: /usr/share/java/netty-common.jar)"});
            else
                subjects.add(make(name));
        }
        String cpus = cpusAllowed();
        progress("purgatory: JVM %s, %d subjects, shapes %s, rates %s, %.2f s plays x %d, "
            + "+ %d to confirm, stop after %d saturated, CPUs %s", System.getProperty("java.version"),
            subjects.size(), shapeNames(o.shapes), rateList(o.rates), o.seconds, o.repetitions,
            o.confirm, o.stop, cpus);

        // JIT warm-up: a discarded play per subject (the class comment)
        Plan warm = new Plan(1, o.rates[0], o.seconds, playSeed(o.seed, 7, 0, 0));
        for (Iterator<Subject> it = subjects.iterator(); it.hasNext();) {
            Subject s = it.next();
            long w0 = System.nanoTime();
            try {
                System.gc();
                play(s, warm, 0);
            } catch (Exception | LinkageError e) {
                skipped.add(new String[] {s.name(), "its warm-up play failed: " + e});
                it.remove();
                continue;
            }
            progress("purgatory: %s warmed up: one play of %d requests at %s/s, %.2f s",
                s.name(), warm.requests, fmt(o.rates[0]), (System.nanoTime() - w0) / 1e9);
        }
        warm = null;

        List<Row> rows = new ArrayList<>();
        // per shape and subject: still sweeping, and saturated rates in a row
        boolean[][] active = new boolean[SHAPES.length][subjects.size()];
        int[][] inRow = new int[SHAPES.length][subjects.size()];
        for (int sh : o.shapes)
            Arrays.fill(active[sh], true);
        SplittableRandom order = new SplittableRandom(o.seed);
        for (int ri = 0; ri < o.rates.length; ri++) {
            // per shape and subject at this rate: plays, saturated plays
            int[][] played = new int[SHAPES.length][subjects.size()];
            int[][] sat = new int[SHAPES.length][subjects.size()];
            boolean any = false;
            for (int rep = 0; rep < o.repetitions + o.confirm; rep++) {
                for (int sh : o.shapes) {
                    int[] who = shuffled(subjects.size(), order);
                    Plan plan = null;
                    for (int k : who) {
                        // a confirmation (rep >= repetitions) only of a rate
                        // its plays so far found saturated
                        if (!active[sh][k] || (rep >= o.repetitions && 2 * sat[sh][k] <= played[sh][k]))
                            continue;
                        if (plan == null)
                            plan = new Plan(sh, o.rates[ri], o.seconds, playSeed(o.seed, sh, ri, rep));
                        any = true;
                        Subject s = subjects.get(k);
                        long p0 = System.nanoTime();
                        Row r;
                        try {
                            System.gc();
                            r = play(s, plan, rep);
                        } catch (Exception | OutOfMemoryError e) {
                            skipped.add(new String[] {s.name(), String.format(Locale.ROOT,
                                "its sweep ended at shape %s, %s/s: %s", SHAPES[sh], fmt(o.rates[ri]), e)});
                            for (boolean[] a : active)
                                a[k] = false;
                            continue;
                        }
                        rows.add(r);
                        played[sh][k]++;
                        if (r.saturated)
                            sat[sh][k]++;
                        progress("purgatory: %s %s %s/s rep %d: %d requests, achieved %s/s of %s/s, "
                            + "lag p99 %.3f ms, fired %d cancelled %d, %s (%.2f s)", r.subject, r.shape,
                            fmt(r.targetRate), rep, r.requests, fmt(r.achievedRate), fmt(r.offeredRate),
                            r.lagP99 / 1e6, r.fired, r.cancelled,
                            r.saturated ? "SATURATED: " + r.why : "ok", (System.nanoTime() - p0) / 1e9);
                    }
                }
            }
            if (!any)
                break;
            // a rate is saturated when more than half of its plays were
            // (tbkit/purgrun.py rate_saturated, the C sweep's rule)
            for (int sh : o.shapes)
                for (int k = 0; k < subjects.size(); k++) {
                    if (!active[sh][k])
                        continue;
                    inRow[sh][k] = 2 * sat[sh][k] > played[sh][k] ? inRow[sh][k] + 1 : 0;
                    if (inRow[sh][k] >= o.stop) {
                        active[sh][k] = false;
                        progress("purgatory: %s %s: saturated at %s/s, its sweep stops",
                            subjects.get(k).name(), SHAPES[sh], fmt(o.rates[ri]));
                    }
                }
        }
        String doc = json(o, rows, skipped, cpus);
        if (o.out == null) {
            System.out.print(doc);
        } else {
            Path out = Paths.get(o.out);
            if (Files.exists(out) && !Files.isRegularFile(out)) {
                // /dev/null, /dev/stdout, a FIFO: a rename would put a file in its place
                Files.write(out, doc.getBytes(StandardCharsets.UTF_8));
            } else {
                Path tmp = out.resolveSibling(out.getFileName() + ".tmp");
                Files.write(tmp, doc.getBytes(StandardCharsets.UTF_8));
                Files.move(tmp, out, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
            }
        }
        progress("purgatory: %d rows in %.1f s", rows.size(), (System.nanoTime() - t0) / 1e9);
    }

    static int[] shuffled(int n, SplittableRandom rng) {
        int[] v = new int[n];
        for (int i = 0; i < n; i++)
            v[i] = i;
        for (int i = n - 1; i > 0; i--) {
            int j = rng.nextInt(i + 1), t = v[i];
            v[i] = v[j];
            v[j] = t;
        }
        return v;
    }

    /** The CPUs this process may run on (/proc/self/status), or "unknown". */
    static String cpusAllowed() {
        try {
            for (String line : Files.readAllLines(Paths.get("/proc/self/status")))
                if (line.startsWith("Cpus_allowed_list:"))
                    return line.substring(line.indexOf(':') + 1).trim();
        } catch (IOException e) {
            // not Linux: say so in the note
        }
        return "unknown";
    }

    static void progress(String f, Object... a) {
        System.err.println(String.format(Locale.ROOT, f, a));
    }

    static String fmt(double rate) {
        return rate == Math.rint(rate) && Math.abs(rate) < 1e15 ? Long.toString((long) rate)
            : String.format(Locale.ROOT, "%.1f", rate);
    }

    static String shapeNames(int[] shapes) {
        StringBuilder b = new StringBuilder();
        for (int s : shapes)
            b.append(b.length() > 0 ? "," : "").append(SHAPES[s]);
        return b.toString();
    }

    static String rateList(double[] rates) {
        StringBuilder b = new StringBuilder();
        for (double r : rates)
            b.append(b.length() > 0 ? "," : "").append(fmt(r));
        return b.toString();
    }

    // ---- the document --------------------------------------------------------------

    static String json(Options o, List<Row> rows, List<String[]> skipped, String cpus) {
        StringBuilder b = new StringBuilder(4096 + 1024 * rows.size());
        b.append("{\"format\": 1, \"profile\": ").append(str(o.profile));
        b.append(",\n \"pinning\": {\"player_cpu\": null, \"subject_cpu\": null, \"note\": ")
            .append(str("not pinned per thread (the JVM gives no thread affinity without native "
                + "code): the player thread, the subject's thread and the JVM's own threads (JIT "
                + "compilers, GC) ran on CPUs " + cpus + " (the process's affinity), "
                + "placed by the OS scheduler")).append("}");
        b.append(",\n \"grid\": {\"rates\": [").append(rateList(o.rates).replace(",", ", "))
            .append("], \"seconds\": ").append(num(o.seconds))
            .append(", \"repetitions\": ").append(o.repetitions).append("}");
        b.append(",\n \"rows\": [");
        for (int i = 0; i < rows.size(); i++) {
            Row r = rows.get(i);
            b.append(i > 0 ? ",\n  " : "\n  ").append('{');
            b.append("\"subject\": ").append(str(r.subject));
            b.append(", \"side\": ").append(str(r.side));
            b.append(", \"structure\": ").append(str(r.structure));
            b.append(", \"shape\": ").append(str(r.shape));
            b.append(", \"repetition\": ").append(r.repetition);
            b.append(", \"target_rate\": ").append(num(r.targetRate));
            b.append(", \"offered_rate\": ").append(num(r.offeredRate));
            b.append(", \"achieved_rate\": ").append(num(r.achievedRate));
            b.append(", \"requests\": ").append(r.requests);
            b.append(", \"seconds\": ").append(num(r.seconds));
            b.append(", \"lag_p50_ns\": ").append(r.lagP50);
            b.append(", \"lag_p99_ns\": ").append(r.lagP99);
            b.append(", \"lag_max_ns\": ").append(r.lagMax);
            b.append(", \"lag_growth_ns\": ").append(r.lagGrowth);
            b.append(", \"saturated\": ").append(r.saturated);
            b.append(", \"why\": ").append(str(r.why));
            b.append(", \"cpu_ns_per_request\": ").append(num(r.cpuNs));
            b.append(", \"player_cpu_ns_per_request\": ").append(num(r.playerCpuNs));
            b.append(", \"subject_cpu_ns_per_request\": ").append(num(r.subjectCpuNs));
            b.append(", \"fired\": ").append(r.fired);
            b.append(", \"fired_share\": ").append(num(r.firedShare));
            b.append(", \"timeouts_due\": ").append(r.timeoutsDue);
            b.append(", \"lateness_growth_ns\": ").append(r.lateGrowth);
            b.append(", \"lateness_p50_ns\": ").append(r.lateP50);
            b.append(", \"lateness_p99_ns\": ").append(r.lateP99);
            b.append(", \"peak_pending\": ").append(r.peakPending);
            b.append(", \"peak_zombies\": ").append(r.peakZombies);
            b.append('}');
        }
        b.append(rows.isEmpty() ? "]" : "\n ]");
        b.append(",\n \"skipped\": [");
        for (int i = 0; i < skipped.size(); i++)
            b.append(i > 0 ? ", " : "").append("{\"subject\": ").append(str(skipped.get(i)[0]))
                .append(", \"why\": ").append(str(skipped.get(i)[1])).append('}');
        b.append("]}\n");
        return b.toString();
    }

    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v))
            return "null";
        return v == Math.rint(v) && Math.abs(v) < 1e15 ? Long.toString((long) v)
            : String.format(Locale.ROOT, "%.6g", v);
    }

    static String str(String s) {
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\')
                b.append('\\').append(c);
            else if (c < 0x20)
                b.append(String.format(Locale.ROOT, "\\u%04x", (int) c));
            else
                b.append(c);
        }
        return b.append('"').toString();
    }

    // ---- arguments -----------------------------------------------------------------

    static void usage(String why) {
        System.err.println("Purgatory: " + why);
        System.err.println("usage: Purgatory [--shapes few,many] [--rates r1,r2,...] [--seconds S] "
            + "[--repetitions K] [--stop first|two] [--confirm C] [--subjects " + String.join(",", SUBJECTS)
            + "] [--seed N] [--profile NAME] [--out FILE]");
        System.exit(2);
    }

    static Options parse(String[] args) {
        Options o = new Options();
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (a.equals("--help")) {
                System.err.println("usage: Purgatory [--shapes few,many] [--rates r1,r2,...] "
                    + "[--seconds S] [--repetitions K] [--stop first|two] [--confirm C] [--subjects a,b] "
                    + "[--seed N] [--profile NAME] [--out FILE]  (jvm/README.md)");
                System.exit(0);
            }
            if (!a.startsWith("--"))
                usage("unexpected argument '" + a + "'");
            if (i + 1 >= args.length)
                usage(a + " needs a value");
            String v = args[++i];
            switch (a) {
                case "--shapes": {
                    List<Integer> l = new ArrayList<>();
                    for (String s : v.split(",", -1)) {
                        int k = Arrays.asList(SHAPES).indexOf(s);
                        if (k < 0)
                            usage("unknown shape '" + s + "' (few, many)");
                        if (l.contains(k))
                            usage("shape '" + s + "' given twice");
                        l.add(k);
                    }
                    o.shapes = l.stream().mapToInt(Integer::intValue).toArray();
                    break;
                }
                case "--rates": {
                    String[] p = v.split(",", -1);
                    o.rates = new double[p.length];
                    for (int k = 0; k < p.length; k++) {
                        o.rates[k] = number(a, p[k]);
                        if (!(o.rates[k] > 0))
                            usage("--rates: '" + p[k] + "' is not a rate above 0 requests/s");
                        if (k > 0 && !(o.rates[k] > o.rates[k - 1]))
                            usage("--rates must rise: " + p[k] + " after " + p[k - 1]);
                    }
                    break;
                }
                case "--seconds":
                    o.seconds = number(a, v);
                    if (!(o.seconds > 0 && o.seconds <= MAX_SECONDS))
                        usage("--seconds takes a play length above 0 and at most " + MAX_SECONDS + " s, not " + v);
                    break;
                case "--repetitions":
                    o.repetitions = (int) whole(a, v, 1, 1000);
                    break;
                case "--stop":
                    if (v.equals("first"))
                        o.stop = 1;
                    else if (v.equals("two"))
                        o.stop = 2;
                    else
                        usage("--stop takes first or two, not '" + v + "'");
                    break;
                case "--subjects": {
                    List<String> l = new ArrayList<>();
                    for (String s : v.split(",", -1)) {
                        String found = null;
                        for (String k : SUBJECTS)
                            if (k.equalsIgnoreCase(s))
                                found = k;
                        if (found == null)
                            usage("unknown subject '" + s + "' (" + String.join(", ", SUBJECTS) + ")");
                        if (l.contains(found))
                            usage("subject '" + s + "' given twice");
                        l.add(found);
                    }
                    o.subjects = l;
                    break;
                }
                case "--confirm":
                    o.confirm = (int) whole(a, v, 0, 10);
                    break;
                case "--seed":
                    o.seed = whole(a, v, 0, Long.MAX_VALUE);
                    break;
                case "--profile":
                    if (v.isEmpty())
                        usage("--profile needs a name");
                    o.profile = v;
                    break;
                case "--out":
                    if (v.isEmpty())
                        usage("--out needs a file name");
                    o.out = v;
                    break;
                default:
                    usage("unknown option '" + a + "'");
            }
        }
        for (double r : o.rates) {
            if (r * o.seconds < 20)
                usage(String.format(Locale.ROOT, "rate %s/s for %s s gives fewer than 20 requests",
                    fmt(r), num(o.seconds)));
            if (r * o.seconds * 1.1 + 64 > MAX_REQUESTS)
                usage(String.format(Locale.ROOT, "rate %s/s for %s s gives more than %d requests",
                    fmt(r), num(o.seconds), (long) (MAX_REQUESTS / 1.1)));
        }
        return o;
    }

    static double number(String opt, String v) {
        try {
            double d = Double.parseDouble(v);
            if (Double.isNaN(d) || Double.isInfinite(d))
                usage(opt + ": '" + v + "' is not a finite number");
            return d;
        } catch (NumberFormatException e) {
            usage(opt + ": '" + v + "' is not a number");
            return 0;
        }
    }

    static long whole(String opt, String v, long lo, long hi) {
        try {
            long x = Long.parseLong(v);
            if (x < lo || x > hi)
                usage(opt + " takes a whole number from " + lo + " to " + hi + ", not " + v);
            return x;
        } catch (NumberFormatException e) {
            usage(opt + " takes a whole number, not '" + v + "'");
            return 0;
        }
    }
}
