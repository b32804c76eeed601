/*
 * TimerBench.java — the JVM originals the C backends render, measured on
 * the suite's own workloads (issue 32): ScheduledThreadPoolExecutor
 * (removeOnCancel off and on), java.util.Timer, DelayQueue and Netty's
 * HashedWheelTimer.  Insert and cancel into a structure holding N far
 * deadlines, expiry (the worker's CPU time per fired task of the C micro's
 * `short` workload, its idle cost taken out), and the `timeouts` workload
 * in real time at one timeout for every subject.  The parent process runs
 * every measurement in several fresh JVMs (forks, issue 37) and merges
 * what they measured.  Each fork measures every subject; STPE's two
 * policies (the harness's control) are filled together at each N and
 * measured in alternation (A B, B A, ..., attempt by attempt and, inside
 * an attempt, batch by batch), all insert repetitions on the untouched
 * fill before any cancel repetition, an attempt kept or dropped for JIT
 * as a whole (measure()); at small N a repetition times as many
 * operations as at large N (batchesAt()).  A fork per
 * subject instead was measured and rejected: it left the control's bias
 * where it was, tripled the repetitions dropped for JIT and took a third
 * longer (DECISIONS.md, D36).  A repetition that saw JIT
 * compilation is kept but marked dropped.  Progress on stderr, results as JSON on stdout (or --out
 * FILE); format and method in jvm/README.md.
 */

import com.sun.management.ThreadMXBean;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStreamWriter;
import java.io.Serializable;
import java.io.Writer;
import java.lang.management.CompilationMXBean;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;
import java.util.Timer;
import java.util.TimerTask;
import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

public final class TimerBench {

    // ---- the h2h workload's delays (bench/common.c: BH_UNIFORM) ---------

    static final long MS = 1_000_000L, SEC = 1_000_000_000L;
    /** uniform 1 ms - 1000 s, as the C micro's insert and cancel (h2h). */
    static final long FAR_LO = MS, FAR_HI = 1000 * SEC;

    // ---- the originals ---------------------------------------------------

    /** One original behind the operations the workloads use.  A handle is
     *  what the original hands back (ScheduledFuture, TimerTask, the queued
     *  element, Timeout). */
    abstract static class Subject {
        final String name, original, config, cBackend;
        /** the worker thread whose CPU time expiry reads */
        volatile Thread worker;
        /** tasks run (one writer: the original's single worker) */
        volatile long fired;
        /** cancelled records the original still holds (lazy cancel) */
        long zombies;
        final boolean lazy, purgeable;

        Subject(String name, String original, String config, String cBackend,
                boolean lazy, boolean purgeable) {
            this.name = name; this.original = original; this.config = config;
            this.cBackend = cBackend; this.lazy = lazy; this.purgeable = purgeable;
        }
        abstract void open() throws Exception;
        abstract Object insert(long delayNs);
        abstract boolean cancel(Object h);
        /** Takes back what an insert batch added (untimed): cancels them;
         *  returns whether they stay behind as cancelled records. */
        boolean takeBack(Object[] hs, int k) {
            for (int i = 0; i < k; i++) cancel(hs[i]);
            return lazy;
        }
        /** Releases lazily cancelled records (untimed). */
        void purge() { }
        abstract void close() throws Exception;
        /** Largest batch whose cancels stay cheap enough to time at n. */
        int batchAt(int n, int batch) { return batch; }

        /** The task every original runs: counts its runs. */
        final void ran() { fired++; }
    }

    static ThreadFactory capture(Subject s) {
        return r -> {
            Thread t = new Thread(r, "tb-" + s.name);
            t.setDaemon(true);
            s.worker = t;
            return t;
        };
    }

    /** ScheduledThreadPoolExecutor with one core thread (heapqueue). */
    static final class Stpe extends Subject {
        final boolean roc;
        ScheduledThreadPoolExecutor ex;
        final Runnable task = this::ran;

        Stpe(boolean roc) {
            super(roc ? "stpe-roc" : "stpe",
                  "java.util.concurrent.ScheduledThreadPoolExecutor",
                  "corePoolSize=1, removeOnCancelPolicy=" + roc,
                  roc ? "heapqueue/roc=on" : "heapqueue/roc=off", !roc, !roc);
            this.roc = roc;
        }
        void open() {
            ex = new ScheduledThreadPoolExecutor(1, capture(this));
            ex.setRemoveOnCancelPolicy(roc);
            ex.prestartAllCoreThreads();
            zombies = 0;
        }
        Object insert(long d) { return ex.schedule(task, d, TimeUnit.NANOSECONDS); }
        boolean cancel(Object h) { return ((ScheduledFuture<?>) h).cancel(false); }
        /** Both policies take an insert batch back by removing it (the
         *  policy switched on for the undo, untimed), so they insert into
         *  the same heap of exactly N live tasks: the harness's control
         *  (issue 37).  A purge instead (an O(N) walk over a copy of the
         *  queue before each batch) left the next batch's inserts cold,
         *  1.6x slower at 10^6, and zombies left in place 1.47x. */
        boolean takeBack(Object[] hs, int k) {
            ex.setRemoveOnCancelPolicy(true);
            for (int i = 0; i < k; i++) cancel(hs[i]);
            ex.setRemoveOnCancelPolicy(roc);
            return false;
        }
        void purge() { ex.purge(); zombies = 0; }
        void close() throws Exception {
            ex.shutdownNow();
            ex.awaitTermination(10, TimeUnit.SECONDS);
            ex = null;
        }
    }

    /** java.util.Timer (timerthread).  Its delays are whole milliseconds;
     *  each schedule needs a fresh TimerTask, allocated in the timed part
     *  because the API cannot schedule without one. */
    static final class JTimer extends Subject {
        Timer timer;

        JTimer() {
            super("timer", "java.util.Timer", "one thread, delays in ms",
                  "timerthread", true, true);
        }
        void open() throws Exception {
            timer = new Timer("tb-timer", true);
            Thread[] seen = new Thread[1];
            java.util.concurrent.CountDownLatch l = new java.util.concurrent.CountDownLatch(1);
            timer.schedule(new TimerTask() {
                public void run() { seen[0] = Thread.currentThread(); l.countDown(); }
            }, 0);
            l.await();
            worker = seen[0];
            zombies = 0;
        }
        Object insert(long d) {
            TimerTask t = new TimerTask() { public void run() { ran(); } };
            timer.schedule(t, (d + MS - 1) / MS);
            return t;
        }
        boolean cancel(Object h) { return ((TimerTask) h).cancel(); }
        void purge() { timer.purge(); zombies = 0; }
        void close() { timer.cancel(); timer = null; }
    }

    /** An element of a DelayQueue: its deadline on System.nanoTime(). */
    static final class Item implements Delayed {
        final long at;
        final Subject owner;
        Item(long at, Subject owner) { this.at = at; this.owner = owner; }
        public long getDelay(TimeUnit u) {
            return u.convert(at - System.nanoTime(), TimeUnit.NANOSECONDS);
        }
        public int compareTo(Delayed o) {
            return Long.compare(at, ((Item) o).at);
        }
    }

    /** java.util.concurrent.DelayQueue drained by one consumer thread (no C
     *  rendering: the structure Kafka's purgatory used before its wheel).
     *  remove(Object) searches the array: cancel is linear in N. */
    static final class DQ extends Subject {
        DelayQueue<Item> q;
        Thread consumer;

        DQ() {
            super("delayqueue", "java.util.concurrent.DelayQueue",
                  "one consumer thread in take(), cancel = remove(Object)",
                  null, false, false);
        }
        void open() {
            q = new DelayQueue<>();
            DelayQueue<Item> mine = q;
            consumer = new Thread(() -> {
                try {
                    for (;;) { mine.take(); ran(); }
                } catch (InterruptedException e) { /* closed */ }
            }, "tb-delayqueue");
            consumer.setDaemon(true);
            worker = consumer;
            consumer.start();
        }
        Object insert(long d) {
            Item it = new Item(System.nanoTime() + d, this);
            q.offer(it);
            return it;
        }
        boolean cancel(Object h) { return q.remove(h); }
        void close() throws Exception {
            consumer.interrupt();
            consumer.join(10_000);
            q = null;
        }
        /** Keeps a batch of linear removes near 2^22 element visits. */
        int batchAt(int n, int batch) {
            return (int) Math.max(1, Math.min(batch, (1L << 22) / Math.max(1, n)));
        }
    }

    /** Netty's HashedWheelTimer at the h2h configuration: 1 ms tick, 512
     *  buckets (timerwheel, series=h2h). */
    static final class Netty extends Subject {
        HashedWheelTimer t;
        final io.netty.util.TimerTask task = to -> ran();

        Netty() {
            super("netty", "io.netty.util.HashedWheelTimer",
                  "tickDuration=1ms, ticksPerWheel=512, leakDetection=false",
                  "timerwheel", true, false);
        }
        void open() {
            t = new HashedWheelTimer(capture(this), 1, TimeUnit.MILLISECONDS,
                                     512, false, -1);
            t.start();
        }
        Object insert(long d) { return t.newTimeout(task, d, TimeUnit.NANOSECONDS); }
        boolean cancel(Object h) { return ((Timeout) h).cancel(); }
        void close() { t.stop(); t = null; }
    }

    // ---- the JVM's own counters -------------------------------------------

    static final ThreadMXBean THREADS =
        (ThreadMXBean) ManagementFactory.getThreadMXBean();
    static final CompilationMXBean JIT = ManagementFactory.getCompilationMXBean();
    static final List<GarbageCollectorMXBean> GCS =
        ManagementFactory.getGarbageCollectorMXBeans();

    static long allocated() {
        return THREADS.getThreadAllocatedBytes(Thread.currentThread().getId());
    }
    static long gcMs() {
        long t = 0;
        for (GarbageCollectorMXBean g : GCS) t += Math.max(0, g.getCollectionTime());
        return t;
    }
    static long gcCount() {
        long c = 0;
        for (GarbageCollectorMXBean g : GCS) c += Math.max(0, g.getCollectionCount());
        return c;
    }
    static long jitMs() {
        return JIT.isCompilationTimeMonitoringSupported() ? JIT.getTotalCompilationTime() : 0;
    }

    /** HotSpot's count of finished compilations (sun.management's
     *  HotspotCompilationMBean, reached by reflection: the jar is built
     *  with --release 17, which cannot name the package).  It needs
     *  `--add-exports java.management/sun.management=ALL-UNNAMED`, which
     *  the parent gives every fork; without it COMPILES is null and a
     *  repetition is judged by compilation time alone, whose millisecond
     *  resolution misses short compilations. */
    static final Object COMPILES = compilationBean();
    static final java.lang.reflect.Method COMPILE_COUNT = compileCountMethod();

    static Object compilationBean() {
        try {
            return Class.forName("sun.management.ManagementFactoryHelper")
                .getMethod("getHotspotCompilationMBean").invoke(null);
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return null;
        }
    }
    static java.lang.reflect.Method compileCountMethod() {
        if (COMPILES == null) return null;
        try {
            java.lang.reflect.Method m = Class.forName("sun.management.HotspotCompilationMBean")
                .getMethod("getTotalCompileCount");
            m.invoke(COMPILES);
            return m;
        } catch (ReflectiveOperationException | RuntimeException | LinkageError e) {
            return null;
        }
    }
    /** Compilations finished so far, or -1 when this JVM does not say. */
    static long compiles() {
        if (COMPILE_COUNT == null) return -1;
        try {
            return ((Number) COMPILE_COUNT.invoke(COMPILES)).longValue();
        } catch (ReflectiveOperationException | RuntimeException e) {
            return -1;
        }
    }

    /** What one repetition of one operation measured (serialised from a
     *  fork to the parent). */
    static final class Rep implements Serializable {
        private static final long serialVersionUID = 2L;
        double nsPerOp, meanNsPerOp, bytesPerOp, gcMs, jitMs, cpuNsPerTask, spanMs;
        long ops, gcCount, batches, fired, compiles;
        /** the fork's compilations finished before it began (-1: unknown) */
        long compiledBefore = -1;
        /** insert, cancel: the compilations finished over the whole
         *  attempt of its group (every subject's phase of it, -1:
         *  unknown); one > 0 drops every repetition of the attempt */
        long attemptCompiles = -1;
        int fork, attempt;
        /** JIT compilation finished inside it: kept, not used */
        boolean dropped;
        String extra = "";
    }

    /** The counters around one phase: GC and JIT time and compilations,
     *  from its start; the repetition is dropped when a compilation
     *  finished inside it (or, where the count is unavailable, when the
     *  compilation time moved). */
    static final class Phase {
        final long gc0 = gcMs(), gcc0 = gcCount(), jit0 = jitMs(), c0 = compiles();
        void end(Rep r) {
            r.compiledBefore = c0;
            r.gcMs = gcMs() - gc0;
            r.gcCount = gcCount() - gcc0;
            r.jitMs = jitMs() - jit0;
            long c1 = compiles();
            r.compiles = c0 < 0 || c1 < 0 ? -1 : c1 - c0;
            r.dropped = r.compiles > 0 || r.jitMs > 0;
        }
    }

    /** The timed batches of one phase: each batch's ns per operation and
     *  the totals, the phase's GC and JIT counters from construction. */
    static final class Batches {
        final Phase ph = new Phase();
        final double[] per;
        long ops, nanos, bytes;
        int n;
        Batches(int batches) { per = new double[batches]; }
        /** One batch of b operations timed from t0 to t1, allocating bytes. */
        void add(int b, long t0, long t1, long allocated) {
            per[n++] = (double) (t1 - t0) / b;
            nanos += t1 - t0;
            ops += b;
            bytes += allocated;
        }
        /** What the batches measured: median and mean ns per operation,
         *  bytes per operation, the phase's counters ended now. */
        Rep rep() {
            Rep r = new Rep();
            ph.end(r);
            r.ops = ops; r.batches = n;
            r.nsPerOp = median(per, n);
            r.meanNsPerOp = (double) nanos / ops;
            r.bytesPerOp = (double) bytes / ops;
            return r;
        }
    }

    static double median(double[] v, int n) {
        double[] c = Arrays.copyOf(v, n);
        Arrays.sort(c);
        return n == 0 ? Double.NaN : n % 2 == 1 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
    }

    // ---- the sizes ------------------------------------------------------------

    static final class Size {
        String name;
        int[] ns;           // insert, cancel
        int[] timeoutsNs;   // the timeouts workload
        int[] expireNs;     // expiry batch sizes
        int reps, batches, maxBatch;
        /** fresh JVMs; each measures every cell reps times (clean) */
        int forks;
        long warmMinMs, warmMaxMs;
    }

    /** The N of each operation at size s, as a JSON object. */
    static String nJson(Size s) {
        return "{\"insert\": " + Arrays.toString(s.ns)
            + ", \"cancel\": " + Arrays.toString(s.ns)
            + ", \"timeouts\": " + Arrays.toString(s.timeoutsNs)
            + ", \"expire\": " + Arrays.toString(s.expireNs) + "}";
    }

    static Size size(String name) {
        Size s = new Size();
        s.name = name;
        switch (name) {
            case "smoke":
                s.ns = new int[] {1000, 10000}; s.timeoutsNs = s.ns;
                s.expireNs = new int[] {1000};
                s.reps = 2; s.forks = 2; s.batches = 4; s.maxBatch = 1024;
                s.warmMinMs = 50; s.warmMaxMs = 200;
                break;
            case "standard":
                // the N of the C micro's standard profile (bench/common.c),
                // so that every cell has both sides; timeouts at 10^6 in
                // full only, and expire (half a second a repetition, the
                // workload's 500 ms) at the ranking's N, 10^4, only: the
                // standard report's 20 minutes leave this size about a
                // minute
                s.ns = new int[] {100, 10000, 1000000};
                s.timeoutsNs = new int[] {100, 10000};
                s.expireNs = new int[] {10000};
                // three forks of two clean repetitions: six per cell
                s.reps = 2; s.forks = 3; s.batches = 10; s.maxBatch = 1024;
                s.warmMinMs = 200; s.warmMaxMs = 600;
                break;
            case "full":
                // the C micro's full N up to 10^6 (10^7 on the JVM would
                // hold about 1 GB of STPE tasks)
                s.ns = new int[] {100, 1000, 10000, 100000, 1000000};
                s.timeoutsNs = s.ns;
                s.expireNs = new int[] {100, 1000, 10000, 100000, 1000000};
                s.reps = 4; s.forks = 3; s.batches = 64; s.maxBatch = 1024;
                s.warmMinMs = 1000; s.warmMaxMs = 5000;
                break;
            default:
                throw new IllegalArgumentException("unknown size '" + name
                    + "' (smoke, standard, full)");
        }
        return s;
    }

    // ---- the harness ---------------------------------------------------------

    final Size sz;
    final SplittableRandom rng;
    final List<Subject> subjects = new ArrayList<>();
    final List<String> ops;
    final StringBuilder results = new StringBuilder();
    int nresults;
    final long start = System.nanoTime();
    /** this process's fork number (the parent: -1), how many forks the
     *  parent runs, where the forks' GC and JIT logs go (null: none), the
     *  JVM options a fork runs with */
    int fork = -1, forks;
    String logs;
    List<String> forkArgs = ManagementFactory.getRuntimeMXBean().getInputArguments();
    /** every fork could count compilations (HotSpot's counter) */
    boolean compileCountSeen = true;

    TimerBench(Size sz, long seed, List<String> subjectNames, List<String> ops) {
        this.sz = sz;
        this.rng = new SplittableRandom(seed);
        this.ops = ops;
        for (Subject s : new Subject[] {new Stpe(false), new Stpe(true), new JTimer(),
                                        new DQ(), new Netty()})
            if (subjectNames == null || subjectNames.contains(s.name))
                subjects.add(s);
    }

    static void say(String fmt, Object... a) {
        System.err.println("jvm: " + String.format(Locale.ROOT, fmt, a));
    }

    long far() { return FAR_LO + rng.nextLong(FAR_HI - FAR_LO + 1); }

    int batchOf(Subject s, int n) {
        return s.batchAt(n, batchRule(n));
    }

    /** The batch rule of the C micro (bench/common.c, bh_clamp_batch): N/8
     *  operations, 1 to maxBatch. */
    int batchRule(int n) {
        return Math.min(sz.maxBatch, Math.max(1, n / 8));
    }

    /** Timed batches per insert or cancel repetition at n: sz.batches at
     *  full batches, more where the batch rule makes them short, so that
     *  every N times about sz.batches x maxBatch operations (at 10^2:
     *  860 batches of 12, not 10).  Ten batches of 12 were 120 operations,
     *  about 10 us of timed work, and a repetition about 7 % noisy: the
     *  two STPE policies' ratio within one attempt spread 0.105 on a log
     *  scale at 10^2, 0.013-0.027 with 860 batches (DECISIONS.md, the
     *  control at 10^2).  The C micro gets the same: a few thousand batches a
     *  repetition at every N (its minimum time scaled by the batch's
     *  share of 1024 operations, bench/README.md).  A subject's own cut
     *  (DelayQueue's linear remove at 10^6) does not add batches: the
     *  scale follows the rule, not the cut. */
    int batchesAt(int n) {
        int b = batchRule(n);
        return sz.batches * ((sz.maxBatch + b - 1) / b);
    }

    /** Takes back what an insert batch added (untimed), releasing
     *  zombies past n/4 as the C harness does. */
    void undo(Subject s, Object[] hs, int k, int n) {
        if (s.takeBack(hs, k)) s.zombies += k;
        if (s.purgeable && s.zombies > n / 4) s.purge();
    }

    /** Fills s with n far deadlines (untimed). */
    Object[] fill(Subject s, int n) throws Exception {
        s.open();
        Object[] base = new Object[n];
        for (int i = 0; i < n; i++) base[i] = s.insert(far());
        return base;
    }

    /** One subject's timed batches of one phase (insert or cancel), a
     *  batch at a time, so that a group's subjects can take turns batch by
     *  batch (measure()); rep() ends the phase. */
    abstract static class Steps {
        final Subject s;
        final Batches m;
        Steps(Subject s, int batches) { this.s = s; this.m = new Batches(batches); }
        /** Runs timed batch k (0, 1, ... in order) and puts the state back. */
        abstract void batch(int k);
        Rep rep() { return m.rep(); }
        /** All batches, one after the other: the subject alone. */
        Rep all(int batches) {
            for (int k = 0; k < batches; k++) batch(k);
            return rep();
        }
    }

    /** insert: batches of inserts into s holding n live tasks; each batch
     *  taken back untimed (Subject.takeBack: STPE removes it whatever its
     *  policy, so its two policies are the harness's control). */
    Steps insertSteps(Subject s, Object[] base, int n, int batches) {
        int b = batchOf(s, n);
        long[] delays = new long[b];
        Object[] hs = new Object[b];
        return new Steps(s, batches) {
            void batch(int k) {
                for (int i = 0; i < b; i++) delays[i] = far();
                long a0 = allocated();
                long t0 = System.nanoTime();
                for (int i = 0; i < b; i++) hs[i] = s.insert(delays[i]);
                long t1 = System.nanoTime();
                m.add(b, t0, t1, allocated() - a0);
                undo(s, hs, b, n);
            }
        };
    }

    /** insertSteps' batches one after the other (the warm-up). */
    Rep insertPhase(Subject s, Object[] base, int n, int batches) {
        return insertSteps(s, base, n, batches).all(batches);
    }

    /** cancel: batches of cancels of random pending tasks; each cancelled
     *  task replaced untimed by a fresh far one.  rep() releases what the
     *  batches left cancelled, so that the next phase on this fill starts
     *  from exactly N live tasks (measure() runs the insert phases before
     *  any cancel phase). */
    Steps cancelSteps(Subject s, Object[] base, int n, int batches) {
        int b = batchOf(s, n);
        int[] idx = new int[b];
        Object[] hs = new Object[b];
        int[] mark = new int[n];     // mark[j] == k + 1: slot j drawn in batch k
        return new Steps(s, batches) {
            void batch(int k) {
                // b distinct slots (b <= n / 8), drawn outside the timing
                for (int i = 0; i < b; i++) {
                    int j;
                    do j = rng.nextInt(n); while (mark[j] == k + 1);
                    mark[j] = k + 1;
                    idx[i] = j;
                }
                // the handles gathered untimed, as the C harness has them:
                // the timed loop reads one array in order, not base[] at
                // random
                for (int i = 0; i < b; i++) hs[i] = base[idx[i]];
                long a0 = allocated();
                long t0 = System.nanoTime();
                for (int i = 0; i < b; i++) s.cancel(hs[i]);
                long t1 = System.nanoTime();
                m.add(b, t0, t1, allocated() - a0);
                for (int i = 0; i < b; i++) base[idx[i]] = s.insert(far());
                if (s.lazy) s.zombies += b;
                if (s.purgeable && s.zombies > n / 4) s.purge();
            }
            Rep rep() {
                Rep r = m.rep();
                if (s.purgeable) s.purge();
                return r;
            }
        };
    }

    /** cancelSteps' batches one after the other (the warm-up). */
    Rep cancelPhase(Subject s, Object[] base, int n, int batches) {
        return cancelSteps(s, base, n, batches).all(batches);
    }

    /** The timeouts workload's one timeout at n, the same for every
     *  subject: 4 us a slot (so a ring of 10^4 is revisited every 20 ms),
     *  at least 20 ms (ten of Timer's and Netty's 1 ms ticks below it). */
    static long timeoutAt(int n) { return Math.max(20 * MS, 4000L * n); }

    /** Parks the caller until System.nanoTime() reaches t (untimed). */
    static void until(long t) {
        for (long d; (d = t - System.nanoTime()) > 0; )
            LockSupport.parkNanos(Math.min(d, 10 * MS));
    }

    /** timeouts (bench/micro.c, timeout_op) in real time: a ring of n
     *  slots; each operation cancels the slot's previous timeout with
     *  p = 0.95 and sets a new one of timeoutAt(n), the same for every
     *  subject.  As in C, a slot is revisited after half the timeout: the
     *  ring is paced (batch k starts at its slot's time, the wait
     *  untimed), so the structure holds the same mix of live and
     *  uncancelled timeouts whatever the subject's speed, and about 5 % of
     *  the operations' timeouts fire.  Steady state as in C: whole passes
     *  of the ring, at least three and at least 1.5 timeouts' worth,
     *  before anything is timed.  Measured: the caller's time per
     *  operation (batch median, and the repetition's sum over its
     *  operations), and the caller's plus the worker's CPU time per
     *  operation over the timed stretch (the worker runs the fires and,
     *  in Netty, the wheel walk off the caller's thread). */
    Rep timeoutsPhase(Subject s, int n, int batches) throws Exception {
        s.open();
        final long timeout = timeoutAt(n);
        final double slotNs = timeout / 2.0 / n;    // a pass in half the timeout
        Object[] ring = new Object[n];
        long t00 = System.nanoTime();
        for (int i = 0; i < n; i++) {
            ring[i] = s.insert(timeout);
            if ((i & 255) == 255) until(t00 + (long) (slotNs * (i + 1)));
        }
        int b = batchOf(s, n);
        long slot = n;
        long warm = Math.max(3L * n, (long) Math.ceil(1.5 * timeout / slotNs));
        warm = (warm + n - 1) / n * n;           // whole passes
        boolean[] coin = new boolean[b];
        long lagMax = 0;
        long[] lags = new long[batches];
        for (; slot < n + warm; ) {
            until(t00 + (long) (slotNs * slot));
            for (int i = 0; i < b && slot < n + warm; i++, slot++) {
                int q = (int) (slot % n);
                if (rng.nextDouble() < 0.95) s.cancel(ring[q]);
                ring[q] = s.insert(timeout);
            }
            if (s.purgeable) {
                s.zombies += b;          // an upper bound: purge when due
                if (s.zombies > n / 4) s.purge();
            }
        }
        Batches m = new Batches(batches);
        long fired0 = s.fired;
        long tid = s.worker.getId();
        long w0 = THREADS.getThreadCpuTime(tid), callerCpu = 0;
        long s0 = System.nanoTime();
        for (int k = 0; k < batches; k++) {
            for (int i = 0; i < b; i++) coin[i] = rng.nextDouble() < 0.95;
            long due = t00 + (long) (slotNs * slot);
            lags[k] = Math.max(0, System.nanoTime() - due);
            lagMax = Math.max(lagMax, lags[k]);
            until(due);
            long a0 = allocated();
            long c1 = THREADS.getCurrentThreadCpuTime();
            long t1 = System.nanoTime();
            for (int i = 0; i < b; i++, slot++) {
                int q = (int) (slot % n);
                if (coin[i]) s.cancel(ring[q]);
                ring[q] = s.insert(timeout);
            }
            long t2 = System.nanoTime();
            callerCpu += THREADS.getCurrentThreadCpuTime() - c1;
            m.add(b, t1, t2, allocated() - a0);
            if (s.purgeable) {
                s.zombies += b;
                if (s.zombies > n / 4) s.purge();
            }
        }
        long s1 = System.nanoTime();
        long worker = THREADS.getThreadCpuTime(tid) - w0;
        Rep r = m.rep();
        r.fired = s.fired - fired0;
        double ops = r.ops;
        // behind: the caller could not keep the pace (its batches started,
        // at the median, more than a quarter of a pass late), so its ring
        // was not revisited at half the timeout and the mix differs; the
        // analysis leaves it out.  A single late batch (the thread switched
        // out, then caught up) is not falling behind.
        Arrays.sort(lags);
        long lagMedian = lags[batches / 2];
        boolean paced = lagMedian <= (long) (slotNs * n) / 4;
        r.extra = String.format(Locale.ROOT,
            ", \"timeout_ns\": %d, \"fired_share\": %s, \"caller_cpu_ns_per_op\": %s"
            + ", \"worker_cpu_ns_per_op\": %s, \"cpu_ns_per_op\": %s, \"stretch_ms\": %s"
            + ", \"lag_max_ms\": %s, \"lag_median_ms\": %s, \"paced\": %b",
            timeout, num(r.fired / ops), num(callerCpu / ops), num(worker / ops),
            num((callerCpu + worker) / ops), num((s1 - s0) / 1e6), num(lagMax / 1e6), num(lagMedian / 1e6), paced);
        s.close();
        return r;
    }

    /** The worker's CPU time per millisecond while s holds nothing due
     *  (Netty's worker still ticks; a heap's worker is parked), over
     *  `ms` of real time. */
    double idleCpuPerMs(Subject s, long ms) throws Exception {
        s.open();
        Thread.sleep(5);
        long tid = s.worker.getId();
        long c0 = THREADS.getThreadCpuTime(tid), t0 = System.nanoTime();
        Thread.sleep(ms);
        long c1 = THREADS.getThreadCpuTime(tid), t1 = System.nanoTime();
        s.close();
        return (c1 - c0) / ((t1 - t0) / 1e6);
    }

    /** expire on the C micro's `short` workload (bench/common.c): k tasks
     *  with delays uniform over 1 ms - 500 ms, scheduled back to back; the
     *  worker's CPU time from before the first schedule to the last run,
     *  less what the same worker spends idle over the same span
     *  (idleCpuPerMs, measured before: Netty's ticks), per task run.
     *  `span_ms` is the real time from the first schedule to the last
     *  run; `idle_cpu_ns_per_task` the part taken out. */
    Rep expirePhase(Subject s, int k, double idlePerMs) throws Exception {
        s.open();
        s.fired = 0;
        Thread.sleep(5);
        long[] delays = new long[k];
        for (int i = 0; i < k; i++) delays[i] = MS + rng.nextLong(500 * MS - MS + 1);
        Rep r = new Rep();
        Phase ph = new Phase();
        long tid = s.worker.getId();
        long cpu0 = THREADS.getThreadCpuTime(tid);
        long t0 = System.nanoTime();
        long a0 = allocated();
        for (int i = 0; i < k; i++) s.insert(delays[i]);
        long bytes = allocated() - a0;
        long limit = System.nanoTime() + 120 * SEC;
        while (s.fired < k && System.nanoTime() < limit) Thread.sleep(1);
        long end = System.nanoTime();
        long cpu1 = THREADS.getThreadCpuTime(tid);
        ph.end(r);
        double idle = idlePerMs * ((end - t0) / 1e6);
        r.ops = k; r.fired = s.fired;
        r.cpuNsPerTask = Math.max(0, cpu1 - cpu0 - idle) / Math.max(1, s.fired);
        r.nsPerOp = r.cpuNsPerTask;
        r.meanNsPerOp = r.cpuNsPerTask;
        r.spanMs = (end - t0) / 1e6;
        r.bytesPerOp = (double) bytes / k;
        r.batches = 1;
        r.extra = String.format(Locale.ROOT, ", \"idle_cpu_ns_per_task\": %s",
                                num(idle / Math.max(1, s.fired)));
        s.close();
        if (r.fired < k)
            say("expire %s k=%d: only %d of %d ran within 120 s", s.name, k, r.fired, k);
        return r;
    }

    // ---- JIT warm-up ------------------------------------------------------

    /** Runs every operation of s on small structures until a stretch of
     *  100 ms finishes no compilation (where the count is unavailable:
     *  adds under 1 ms of compilation time), at least warmMinMs, at most
     *  warmMaxMs; returns what it did, as JSON.  This only brings the
     *  code near its steady state: each cell's own first repetitions at
     *  its N finish what is left, and are dropped (run()). */
    String warm(Subject s) throws Exception {
        long t0 = System.nanoTime(), jit0 = jitMs(), c0 = compiles();
        int rounds = 0;
        boolean settled = false;
        while (true) {
            long stretch = System.nanoTime(), j1 = jitMs(), c1 = compiles();
            while (System.nanoTime() - stretch < 100 * MS) {
                Object[] base = fill(s, 10000);
                if (ops.contains("insert")) insertPhase(s, base, 10000, 8);
                if (ops.contains("cancel")) cancelPhase(s, base, 10000, 8);
                s.close();
                if (ops.contains("timeouts")) timeoutsPhase(s, 1000, 8);
                rounds++;
            }
            long ms = (System.nanoTime() - t0) / MS;
            boolean quiet = c1 >= 0 ? compiles() == c1 : jitMs() - j1 < 1;
            if (ms >= sz.warmMinMs && quiet) { settled = true; break; }
            if (ms >= sz.warmMaxMs) break;
        }
        long ms = (System.nanoTime() - t0) / MS;
        long nc = c0 >= 0 ? compiles() - c0 : -1;
        say("warm-up %s (fork %d): %d ms, %d rounds, JIT %d ms, %d compilations, %s", s.name,
            fork, ms, rounds, jitMs() - jit0, nc, settled ? "settled" : "still compiling at the limit");
        return String.format(Locale.ROOT,
            "{\"subject\": \"%s\", \"fork\": %d, \"ms\": %d, \"rounds\": %d, \"jit_ms\": %d, "
            + "\"compiles\": %d, \"settled\": %b}",
            s.name, fork, ms, rounds, jitMs() - jit0, nc, settled);
    }

    // ---- results ------------------------------------------------------------

    /** results[op][subject][n] -> the repetitions, kept in run order
     *  (every fork's, dropped ones included) */
    java.util.LinkedHashMap<String, ArrayList<Rep>> cells = new java.util.LinkedHashMap<>();

    static String cell(String op, Subject s, int n) {
        return op + "\u0000" + s.name + "\u0000" + n;
    }

    void keep(String op, Subject s, int n, Rep r) {
        r.fork = fork;
        cells.computeIfAbsent(cell(op, s, n), x -> new ArrayList<>()).add(r);
    }

    /** Repetitions of a cell not dropped, in this process. */
    int clean(String op, Subject s, int n) {
        int k = 0;
        for (Rep r : cells.getOrDefault(cell(op, s, n), new ArrayList<>()))
            if (!r.dropped) k++;
        return k;
    }

    /** Whether op at n still wants a clean repetition of s in this fork:
     *  fewer than sz.reps clean ones, and fewer attempts than attempts(op)
     *  (a cell still compiling after them is left short, and the JSON
     *  shows it). */
    boolean wants(String op, Subject s, int n) {
        int[] at = op.equals("timeouts") ? sz.timeoutsNs : op.equals("expire") ? sz.expireNs : sz.ns;
        return ops.contains(op) && contains(at, n) && clean(op, s, n) < sz.reps
            && cells.getOrDefault(cell(op, s, n), new ArrayList<>()).size() < attempts(op);
    }

    /** The attempts a cell gets in a fork: 2 reps + 2 for expire, whose
     *  repetition is the workload's 500 ms; 4 reps + 4 for the others,
     *  whose repetitions take milliseconds (on a loaded machine the JIT's
     *  threads are starved and compilations keep finishing: a standard
     *  run beside a test run left STPE's insert at 10^6 with 2 clean
     *  repetitions of 18 at 6 attempts a fork).  Insert and cancel get
     *  8 reps + 8: a compilation anywhere in an attempt drops the whole
     *  group's attempt (measure()), and the repetitions at small N are
     *  batchesAt()'s longer ones, so about half their attempts see one
     *  (at 4 reps + 4, STPE's insert at 10^2 came out with 1 clean
     *  repetition of 12 in a fork); an attempt costs milliseconds. */
    int attempts(String op) {
        return op.equals("expire") ? 2 * sz.reps + 2
            : op.equals("timeouts") ? 4 * sz.reps + 4 : 8 * sz.reps + 8;
    }

    static String num(double v) {
        if (Double.isNaN(v) || Double.isInfinite(v)) return "null";
        return String.format(Locale.ROOT, "%.4g", v);
    }

    static String q(String s) {
        return s == null ? "null" : "\"" + s.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    String json(List<String> warmups) {
        StringBuilder o = new StringBuilder();
        o.append("{\n  \"format\": \"timerbench-jvm/2\",\n");
        o.append("  \"size\": ").append(q(sz.name)).append(",\n");
        o.append("  \"java\": {\"version\": ").append(q(System.getProperty("java.version")))
         .append(", \"vm\": ").append(q(System.getProperty("java.vm.name")))
         .append(", \"vm_version\": ").append(q(System.getProperty("java.vm.version")))
         .append(", \"vendor\": ").append(q(System.getProperty("java.vendor")))
         .append(", \"gc\": ").append(q(String.join(",", GCS.stream().map(GarbageCollectorMXBean::getName).toArray(String[]::new))))
         .append(", \"max_heap_mb\": ").append(Runtime.getRuntime().maxMemory() >> 20)
         .append(", \"cpus\": ").append(Runtime.getRuntime().availableProcessors())
         .append(", \"args\": ").append(q(String.join(" ", forkArgs)))
         .append("},\n");
        o.append("  \"forks\": ").append(forks)
         .append(", \"compile_count\": ").append(compileCountSeen).append(",\n");
        // the subjects filled together and measured in alternation
        o.append("  \"groups\": [");
        List<List<Subject>> gs = groups();
        for (int g = 0; g < gs.size(); g++)
            o.append(g > 0 ? ", " : "").append("[")
             .append(String.join(", ", gs.get(g).stream().map(x -> q(x.name)).toList())).append("]");
        o.append("],\n");
        if (logs != null)
            o.append("  \"logs\": ").append(q(logs)).append(",\n");
        String nv = HashedWheelTimer.class.getPackage().getImplementationVersion();
        o.append("  \"netty\": ").append(q(nv)).append(",\n");
        o.append("  \"n\": ").append(nJson(sz)).append(",\n");
        // what the full size measures, so that a report of a smaller size
        // can say which N it left to full
        o.append("  \"n_full\": ").append(nJson(size("full"))).append(",\n");
        o.append("  \"reps\": ").append(sz.reps * forks).append(", \"reps_per_fork\": ").append(sz.reps)
         .append(", \"batches\": ").append(sz.batches)
         .append(", \"max_batch\": ").append(sz.maxBatch).append(",\n");
        o.append("  \"workload\": {\"insert\": \"uniform 1 ms - 1000 s (h2h uniform)\", ")
         .append("\"cancel\": \"random pending tasks of N uniform 1 ms - 1000 s\", ")
         .append("\"timeouts\": \"ring of N paced to a pass in half the timeout, cancel p = 0.95, ")
         .append("timeout max(20 ms, 4 us x N) for every subject\", ")
         .append("\"expire\": \"N tasks uniform 1 ms - 500 ms (short), the idle worker's CPU taken out\"},\n");
        o.append("  \"subjects\": [");
        for (int i = 0; i < subjects.size(); i++) {
            Subject s = subjects.get(i);
            o.append(i > 0 ? ",\n    " : "\n    ")
             .append("{\"name\": ").append(q(s.name)).append(", \"original\": ").append(q(s.original))
             .append(", \"config\": ").append(q(s.config)).append(", \"c_backend\": ").append(q(s.cBackend))
             .append("}");
        }
        o.append("\n  ],\n  \"warmup\": [");
        for (int i = 0; i < warmups.size(); i++)
            o.append(i > 0 ? ",\n    " : "\n    ").append(warmups.get(i));
        o.append("\n  ],\n  \"results\": [");
        int i = 0;
        for (java.util.Map.Entry<String, ArrayList<Rep>> e : cells.entrySet()) {
            String[] k = e.getKey().split("\u0000");
            List<Rep> reps = e.getValue();
            double[] v = new double[reps.size()];
            int nc = 0, dropped = 0;
            java.util.Set<Integer> fs = new java.util.TreeSet<>();
            for (Rep r : reps) {
                if (r.dropped) { dropped++; continue; }
                v[nc++] = r.nsPerOp;
                fs.add(r.fork);
            }
            o.append(i++ > 0 ? ",\n    " : "\n    ");
            o.append("{\"op\": ").append(q(k[0])).append(", \"subject\": ").append(q(k[1]))
             .append(", \"n\": ").append(k[2]).append(", \"median_ns\": ").append(num(median(v, nc)))
             .append(", \"dropped\": ").append(dropped).append(", \"forks\": ").append(fs.size())
             .append(", \"reps\": [");
            for (int j = 0; j < reps.size(); j++) {
                Rep r = reps.get(j);
                o.append(j > 0 ? ", " : "").append("{\"fork\": ").append(r.fork)
                 .append(", \"dropped\": ").append(r.dropped)
                 .append(", \"compiles\": ").append(r.compiles)
                 .append(", \"compiled_before\": ").append(r.compiledBefore)
                 .append(", \"ns_per_op\": ").append(num(r.nsPerOp))
                 .append(", \"mean_ns_per_op\": ").append(num(r.meanNsPerOp))
                 .append(", \"bytes_per_op\": ").append(num(r.bytesPerOp))
                 .append(", \"gc_ms\": ").append(r.gcMs < 0 ? "null" : num(r.gcMs))
                 .append(", \"gc_count\": ").append(r.gcCount)
                 .append(", \"jit_ms\": ").append(num(r.jitMs))
                 .append(", \"ops\": ").append(r.ops).append(", \"batches\": ").append(r.batches);
                if (k[0].equals("insert") || k[0].equals("cancel"))
                    o.append(", \"attempt\": ").append(r.attempt)
                     .append(", \"attempt_compiles\": ").append(r.attemptCompiles);
                if (k[0].equals("expire"))
                    o.append(", \"cpu_ns_per_task\": ").append(num(r.cpuNsPerTask))
                     .append(", \"span_ms\": ").append(num(r.spanMs));
                if (k[0].equals("expire") || k[0].equals("timeouts"))
                    o.append(", \"fired\": ").append(r.fired);
                o.append(r.extra).append("}");
            }
            o.append("]}");
        }
        o.append("\n  ],\n  \"elapsed_s\": ")
         .append(num((System.nanoTime() - start) / 1e9)).append("\n}\n");
        return o.toString();
    }

    // ---- the run ---------------------------------------------------------------

    static boolean contains(int[] a, int v) {
        for (int x : a) if (x == v) return true;
        return false;
    }

    <T> void shuffle(List<T> l) {
        for (int i = l.size() - 1; i > 0; i--) {
            int j = rng.nextInt(i + 1);
            T t = l.get(i); l.set(i, l.get(j)); l.set(j, t);
        }
    }

    /** One fork's measurements: every cell until it has sz.reps clean
     *  repetitions (a repetition that finished a compilation is kept,
     *  marked dropped, and measured again), in rounds that visit the N
     *  and the groups (groups()) in a shuffled order, each cell at most
     *  attempts(op) attempts (wants()).  The first attempts at each N
     *  are that N's own warm-up.  At each N a group's subjects are filled
     *  together; all their insert attempts run first, on the fill as it
     *  was made (an insert phase takes its batches back), then the
     *  cancel attempts, which change it; within each, the subjects
     *  alternate in an order reversed every attempt (A B, B A, A B, ...)
     *  and, inside an attempt, batch by batch in an order reversed every
     *  batch; a compilation finished anywhere in an attempt drops all of
     *  its repetitions.  So STPE's two policies, the harness's control,
     *  insert into fills no cancel phase has touched, at the same moments
     *  of the same fork, on the same compiled code.
     *  (An insert phase after a cancel phase on the same fill, as the
     *  coin once chose, met a heap the policy's own cancels had
     *  reshaped: removeOnCancel's inserts 1.15-1.25x slower at 10^2.) */
    void measure(List<String> warmups) throws Exception {
        for (Subject s : subjects) warmups.add(warm(s));
        java.util.Map<String, Double> idle = new java.util.HashMap<>();
        if (ops.contains("expire"))
            for (Subject s : subjects) idle.put(s.name, idleCpuPerMs(s, 200));
        java.util.TreeSet<Integer> all = new java.util.TreeSet<>();
        for (int n : sz.ns) all.add(n);
        for (int n : sz.timeoutsNs) all.add(n);
        for (int round = 0; ; round++) {
            boolean any = false;
            List<Integer> ns = new ArrayList<>(all);
            shuffle(ns);
            for (int n : ns) {
                List<Subject> order = new ArrayList<>(subjects);
                shuffle(order);
                // one fill per subject for the fork's repetitions of both
                // operations at n (a fill of 10^6 costs more than all of
                // them; the forks bring the fresh starts); the subjects of
                // a group (STPE's two policies) filled together
                List<List<Subject>> gs = groups();
                shuffle(gs);
                for (List<Subject> g : gs) {
                    List<Subject> filled = new ArrayList<>();
                    for (Subject s : order)
                        if (g.contains(s) && (wants("insert", s, n) || wants("cancel", s, n)))
                            filled.add(s);
                    if (filled.isEmpty()) continue;
                    any = true;
                    Object[][] base = new Object[filled.size()][];
                    for (int j = 0; j < filled.size(); j++) base[j] = fill(filled.get(j), n);
                    System.gc();
                    Thread.sleep(20);   // Netty: the inbox into buckets
                    // the insert phases first, on the fill as it was made
                    // (each takes its batches back), then the cancel
                    // phases, which change it
                    for (String op : new String[] {"insert", "cancel"})
                        for (int t = 0; t < attempts(op); t++) {
                            // one attempt: each subject of the group once,
                            // A B, B A, A B, ...; a compilation finished
                            // anywhere in it drops all of its repetitions
                            // (attemptCompiles), so that the group's
                            // subjects are measured on the same compiled
                            // code: at 10^2 a compilation that finished
                            // between two phases was in neither, yet left
                            // one policy's repetitions on other code than
                            // the other's (DECISIONS.md)
                            // the attempt's count spans every phase's own
                            long c0 = compiles();
                            List<Subject> who = new ArrayList<>();
                            List<Steps> steps = new ArrayList<>();
                            int nb = batchesAt(n);
                            for (int jj = 0; jj < filled.size(); jj++) {
                                int j = t % 2 == 0 ? jj : filled.size() - 1 - jj;
                                Subject s = filled.get(j);
                                if (!wants(op, s, n)) continue;
                                who.add(s);
                                steps.add(op.equals("insert") ? insertSteps(s, base[j], n, nb)
                                                              : cancelSteps(s, base[j], n, nb));
                            }
                            if (who.isEmpty()) break;
                            // the subjects take turns batch by batch, in an
                            // order reversed every batch (A B, B A, ...),
                            // so that a slow spell of the machine falls on
                            // both sides of the control alike
                            for (int k = 0; k < nb; k++)
                                for (int i = 0; i < steps.size(); i++)
                                    steps.get(k % 2 == 0 ? i : steps.size() - 1 - i).batch(k);
                            List<Rep> got = new ArrayList<>();
                            for (Steps st : steps) got.add(st.rep());
                            long c1 = compiles();
                            boolean drop = false;
                            for (Rep r : got) drop |= r.dropped;
                            for (int i = 0; i < who.size(); i++) {
                                Rep r = got.get(i);
                                r.attempt = t;
                                r.attemptCompiles = c0 < 0 || c1 < 0 ? -1 : c1 - c0;
                                r.dropped = drop || r.attemptCompiles > 0;
                                keep(op, who.get(i), n, r);
                                progress(op, who.get(i), n, t, r);
                            }
                        }
                    for (Subject s : filled) s.close();
                }
                for (Subject s : order)
                    if (wants("timeouts", s, n)) {
                        any = true;
                        System.gc();
                        Rep r = timeoutsPhase(s, n, sz.batches);
                        keep("timeouts", s, n, r);
                        progress("timeouts", s, n, round, r);
                    }
            }
            List<Subject> order = new ArrayList<>(subjects);
            shuffle(order);
            for (int k : sz.expireNs)
                for (Subject s : order)
                    if (wants("expire", s, k)) {
                        any = true;
                        System.gc();
                        Rep r = expirePhase(s, k, idle.get(s.name));
                        keep("expire", s, k, r);
                        progress("expire", s, k, round, r);
                    }
            if (!any) break;
        }
        compileCountSeen = compiles() >= 0;
    }

    /** The groups measure() fills together at each N and whose insert and
     *  cancel attempts it interleaves: STPE's two policies (the harness's
     *  control, which must meet the same fork state), every other subject
     *  alone. */
    List<List<Subject>> groups() {
        List<List<Subject>> g = new ArrayList<>();
        List<Subject> stpe = new ArrayList<>();
        for (Subject s : subjects)
            if (s instanceof Stpe) stpe.add(s);
        if (!stpe.isEmpty()) g.add(stpe);
        for (Subject s : subjects)
            if (!(s instanceof Stpe)) g.add(List.of(s));
        return g;
    }

    /** The parent: runs `forks` fresh JVMs of this class one after the
     *  other (each with its own seed, so its own order of N and
     *  subjects), each with the parent's JVM options plus
     *  -XX:+AlwaysPreTouch, access to HotSpot's compilation count and,
     *  with --logs, GC and compilation logs; merges what they measured
     *  and writes the one document. */
    void run(String out, String size, long seed, List<String> names) throws Exception {
        say("size %s: N %s, %d forks of %d clean repetitions of %d batches, subjects %s, ops %s",
            sz.name, Arrays.toString(sz.ns), forks, sz.reps, sz.batches,
            subjects.stream().map(x -> x.name).toList(), ops);
        List<String> warmups = new ArrayList<>();
        String java = System.getProperty("java.home") + File.separator + "bin" + File.separator + "java";
        List<String> base = new ArrayList<>(ManagementFactory.getRuntimeMXBean().getInputArguments());
        base.add("-XX:+AlwaysPreTouch");
        base.add("--add-exports=java.management/sun.management=ALL-UNNAMED");
        if (logs != null) new File(logs).mkdirs();
        for (int f = 0; f < forks; f++) {
            List<String> cmd = new ArrayList<>();
            cmd.add(java);
            cmd.addAll(base);
            if (logs != null) {
                cmd.add("-Xlog:gc:file=" + new File(logs, "fork" + f + "-gc.log").getPath());
                cmd.add("-Xlog:jit+compilation=debug:file=" + new File(logs, "fork" + f + "-jit.log").getPath());
            }
            if (f == 0) forkArgs = new ArrayList<>(cmd.subList(1, cmd.size()));
            File tmp = File.createTempFile("timerbench-jvm-fork", ".bin");
            tmp.deleteOnExit();
            cmd.addAll(List.of("-cp", System.getProperty("java.class.path"), "TimerBench",
                               "--child", Integer.toString(f), "--size", size,
                               "--seed", Long.toString(seed + 7919L * (f + 1)),
                               "--ops", String.join(",", ops), "--out", tmp.getPath()));
            if (names != null) cmd.addAll(List.of("--subjects", String.join(",", names)));
            Process p = new ProcessBuilder(cmd).redirectOutput(ProcessBuilder.Redirect.DISCARD)
                .redirectError(ProcessBuilder.Redirect.INHERIT).start();
            Thread reaper = new Thread(p::destroyForcibly);
            Runtime.getRuntime().addShutdownHook(reaper);
            int st = p.waitFor();
            Runtime.getRuntime().removeShutdownHook(reaper);
            if (st != 0) {
                tmp.delete();
                say("fork %d exited with %d", f, st);
                System.exit(st == 2 ? 2 : 1);
            }
            try (ObjectInputStream in = new ObjectInputStream(new FileInputStream(tmp))) {
                @SuppressWarnings("unchecked")
                List<String> w = (List<String>) in.readObject();
                @SuppressWarnings("unchecked")
                java.util.LinkedHashMap<String, ArrayList<Rep>> c =
                    (java.util.LinkedHashMap<String, ArrayList<Rep>>) in.readObject();
                compileCountSeen &= in.readBoolean();
                warmups.addAll(w);
                for (java.util.Map.Entry<String, ArrayList<Rep>> e : c.entrySet())
                    cells.computeIfAbsent(e.getKey(), x -> new ArrayList<>()).addAll(e.getValue());
            }
            tmp.delete();
        }
        String doc = json(warmups);
        if (out == null) {
            System.out.print(doc);
            System.out.flush();
        } else {
            try (Writer w = new OutputStreamWriter(new FileOutputStream(out), StandardCharsets.UTF_8)) {
                w.write(doc);
            }
        }
        say("done in %.1f s", (System.nanoTime() - start) / 1e9);
    }

    /** A fork: measures, then hands its warm-ups and cells to the parent
     *  through `out` (Java serialisation: one writer, one reader, the same
     *  class). */
    void child(String out) throws Exception {
        List<String> warmups = new ArrayList<>();
        measure(warmups);
        try (ObjectOutputStream o = new ObjectOutputStream(new FileOutputStream(out))) {
            o.writeObject(new ArrayList<>(warmups));
            o.writeObject(cells);
            o.writeBoolean(compileCountSeen);
        }
    }

    void progress(String op, Subject s, int n, int round, Rep r) {
        say("[%5.1f s] fork %d rep %d %-8s %-10s N=%-7d %9.1f ns/op %7.1f B/op gc %4.0f ms%s",
            (System.nanoTime() - start) / 1e9, fork, round + 1, op, s.name, n,
            r.nsPerOp, r.bytesPerOp, r.gcMs, r.dropped ? " (dropped: JIT)" : "");
    }

    static void usage(String why) {
        System.err.println("jvm: " + why);
        System.err.println("usage: TimerBench [--size smoke|standard|full] [--seed N] "
            + "[--subjects a,b] [--ops insert,cancel,timeouts,expire] [--forks K] "
            + "[--logs DIR] [--out FILE]");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        String size = "standard", out = null;
        long seed = 0x74696D6572L;
        List<String> names = null;
        List<String> ops = List.of("insert", "cancel", "timeouts", "expire");
        int forks = 0, child = -1;
        String logs = null;
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length && !a.equals("--help")) usage(a + " needs a value");
            switch (a) {
                case "--size": size = args[++i]; break;
                case "--seed": seed = Long.decode(args[++i]); break;
                case "--subjects": names = List.of(args[++i].split(",")); break;
                case "--ops": ops = List.of(args[++i].split(",")); break;
                case "--out": out = args[++i]; break;
                case "--logs": logs = args[++i]; break;
                case "--forks":
                case "--child":
                    int v;
                    try {
                        v = Integer.parseInt(args[++i]);
                    } catch (NumberFormatException e) {
                        v = -1;
                    }
                    if (v < (a.equals("--forks") ? 1 : 0) || v > 64)
                        usage(a + " takes a whole number " + (a.equals("--forks") ? "1" : "0")
                              + "-64, not '" + args[i] + "'");
                    if (a.equals("--forks")) forks = v; else child = v;
                    break;
                default: usage("unknown argument '" + a + "'");
            }
        }
        for (String o : ops)
            if (!List.of("insert", "cancel", "timeouts", "expire").contains(o))
                usage("unknown op '" + o + "'");
        Size sz;
        try {
            sz = size(size);
        } catch (IllegalArgumentException e) {
            usage(e.getMessage());
            return;
        }
        if (!THREADS.isThreadAllocatedMemorySupported()) usage("this JVM cannot count allocation");
        THREADS.setThreadAllocatedMemoryEnabled(true);
        THREADS.setThreadCpuTimeEnabled(true);
        TimerBench b = new TimerBench(sz, seed, names, ops);
        if (b.subjects.isEmpty()) usage("--subjects selects none of stpe, stpe-roc, timer, delayqueue, netty");
        b.forks = forks > 0 ? forks : sz.forks;
        b.logs = logs;
        if (child >= 0) {
            if (out == null) usage("--child needs --out");
            b.fork = child;
            b.child(out);
        } else {
            b.run(out, size, seed, names);
        }
    }
}
