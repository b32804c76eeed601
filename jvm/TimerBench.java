/*
 * TimerBench.java — the JVM originals the C backends render, measured on
 * the suite's own workloads (issue 32): ScheduledThreadPoolExecutor
 * (removeOnCancel off and on), java.util.Timer, DelayQueue and Netty's
 * HashedWheelTimer.  Insert and cancel into a structure holding N far
 * deadlines, expiry (CPU time per fired task of a batch due inside a short
 * window), and the `timeouts` workload in real time.  Progress on stderr,
 * results as JSON on stdout (or --out FILE); format and method in
 * jvm/README.md.
 */

import com.sun.management.ThreadMXBean;
import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import java.io.FileOutputStream;
import java.io.OutputStreamWriter;
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

    /** What one repetition of one operation measured. */
    static final class Rep {
        double nsPerOp, meanNsPerOp, bytesPerOp, gcMs, jitMs, cpuNsPerTask, spanMs;
        long ops, gcCount, batches, fired;
        String extra = "";
    }

    /** The counters around one phase: GC and JIT time, from its start. */
    static final class Phase {
        final long gc0 = gcMs(), gcc0 = gcCount(), jit0 = jitMs();
        void end(Rep r) {
            r.gcMs = gcMs() - gc0;
            r.gcCount = gcCount() - gcc0;
            r.jitMs = jitMs() - jit0;
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
                s.reps = 3; s.batches = 4; s.maxBatch = 1024;
                s.warmMinMs = 50; s.warmMaxMs = 200;
                break;
            case "standard":
                // the N of the C micro's standard profile (bench/common.c),
                // so that every cell has both sides; timeouts and expire
                // at 10^6 in full only: with them this size took 82 s
                // instead of 32 s, more than the standard report's
                // 20 minutes leave it
                s.ns = new int[] {100, 10000, 1000000};
                s.timeoutsNs = new int[] {100, 10000};
                s.expireNs = new int[] {100, 10000};
                s.reps = 5; s.batches = 10; s.maxBatch = 1024;
                s.warmMinMs = 300; s.warmMaxMs = 1200;
                break;
            case "full":
                // the C micro's full N up to 10^6 (10^7 on the JVM would
                // hold about 1 GB of STPE tasks)
                s.ns = new int[] {100, 1000, 10000, 100000, 1000000};
                s.timeoutsNs = s.ns;
                s.expireNs = new int[] {100, 1000, 10000, 100000, 1000000};
                s.reps = 10; s.batches = 64; s.maxBatch = 1024;
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
        int b = Math.min(sz.maxBatch, Math.max(1, n / 8));
        return s.batchAt(n, b);
    }

    /** Cancels what an insert batch added (untimed), releasing zombies. */
    void undo(Subject s, Object[] hs, int k, int n) {
        for (int i = 0; i < k; i++) s.cancel(hs[i]);
        if (s.lazy) s.zombies += k;
        if (s.purgeable && s.zombies > n / 4) s.purge();
    }

    /** Fills s with n far deadlines (untimed). */
    Object[] fill(Subject s, int n) throws Exception {
        s.open();
        Object[] base = new Object[n];
        for (int i = 0; i < n; i++) base[i] = s.insert(far());
        return base;
    }

    /** insert: batches of inserts into s holding n; each batch undone untimed. */
    Rep insertPhase(Subject s, Object[] base, int n, int batches) {
        int b = batchOf(s, n);
        long[] delays = new long[b];
        Object[] hs = new Object[b];
        Batches m = new Batches(batches);
        for (int k = 0; k < batches; k++) {
            for (int i = 0; i < b; i++) delays[i] = far();
            long a0 = allocated();
            long t0 = System.nanoTime();
            for (int i = 0; i < b; i++) hs[i] = s.insert(delays[i]);
            long t1 = System.nanoTime();
            m.add(b, t0, t1, allocated() - a0);
            undo(s, hs, b, n);
        }
        return m.rep();
    }

    /** cancel: batches of cancels of random pending tasks; each cancelled
     *  task replaced untimed by a fresh far one. */
    Rep cancelPhase(Subject s, Object[] base, int n, int batches) {
        int b = batchOf(s, n);
        int[] idx = new int[b];
        Batches m = new Batches(batches);
        int[] mark = new int[n];     // mark[j] == k + 1: slot j drawn in batch k
        for (int k = 0; k < batches; k++) {
            // b distinct slots (b <= n / 8), drawn outside the timing
            for (int i = 0; i < b; i++) {
                int j;
                do j = rng.nextInt(n); while (mark[j] == k + 1);
                mark[j] = k + 1;
                idx[i] = j;
            }
            long a0 = allocated();
            long t0 = System.nanoTime();
            for (int i = 0; i < b; i++) s.cancel(base[idx[i]]);
            long t1 = System.nanoTime();
            m.add(b, t0, t1, allocated() - a0);
            for (int i = 0; i < b; i++) base[idx[i]] = s.insert(far());
            if (s.lazy) s.zombies += b;
            if (s.purgeable && s.zombies > n / 4) s.purge();
        }
        return m.rep();
    }

    /** timeouts (bench/micro.c, timeout_op) in real time: a ring of n slots;
     *  each operation cancels the slot's previous timeout with p = 0.95 and
     *  sets a new one.  The C workload revisits a slot after half the
     *  timeout (15 s of 30 s); here the ring's pace is the original's own
     *  speed, so the timeout is set to twice the measured time of one pass
     *  of the ring (at least 2 ms: Timer's and Netty's resolution), and the
     *  5 % left uncancelled fire on the worker as they would. */
    Rep timeoutsPhase(Subject s, int n, int batches) throws Exception {
        s.open();
        Object[] ring = new Object[n];
        for (int i = 0; i < n; i++) ring[i] = s.insert(30 * SEC);
        int b = batchOf(s, n);
        long slot = 0;
        // pace: time one warm stretch of the ring with a 30 s timeout
        int w = (int) Math.max(16, Math.min(n, Math.min(4096, (1L << 24) / n)));
        long t0 = System.nanoTime();
        for (int i = 0; i < w; i++, slot++) {
            int k = (int) (slot % n);
            if (rng.nextDouble() < 0.95) s.cancel(ring[k]);
            ring[k] = s.insert(30 * SEC);
        }
        double perOp = (double) (System.nanoTime() - t0) / w;
        long timeout = Math.max(2 * MS, (long) (2 * perOp * n));
        boolean[] coin = new boolean[b];
        Batches m = new Batches(batches);
        long fired0 = s.fired;
        for (int k = 0; k < batches; k++) {
            for (int i = 0; i < b; i++) coin[i] = rng.nextDouble() < 0.95;
            long a0 = allocated();
            long t1 = System.nanoTime();
            for (int i = 0; i < b; i++, slot++) {
                int q = (int) (slot % n);
                if (coin[i]) s.cancel(ring[q]);
                ring[q] = s.insert(timeout);
            }
            long t2 = System.nanoTime();
            m.add(b, t1, t2, allocated() - a0);
            if (s.purgeable) {
                s.zombies += b;          // an upper bound: purge when due
                if (s.zombies > n / 4) s.purge();
            }
        }
        Rep r = m.rep();
        r.fired = s.fired - fired0;
        r.extra = String.format(Locale.ROOT, ", \"timeout_ns\": %d", timeout);
        s.close();
        return r;
    }

    /** expire: k tasks due inside a 10 ms window that opens once they are
     *  all scheduled; the worker's CPU time from before the first schedule
     *  to the last run, per task run.  Real time from the window's start to
     *  the last run is `span_ms`. */
    Rep expirePhase(Subject s, int k) throws Exception {
        s.open();
        s.fired = 0;
        Thread.sleep(5);
        long window = 10 * MS;
        // the window opens after the schedules: 20 ms plus 1 us a task
        long lead = 20 * MS + 1000L * k;
        Rep r = new Rep();
        Phase ph = new Phase();
        long tid = s.worker.getId();
        long cpu0 = THREADS.getThreadCpuTime(tid);
        long base = System.nanoTime() + lead;
        long a0 = allocated();
        for (int i = 0; i < k; i++) {
            long due = base + (window * i) / k;
            s.insert(Math.max(0, due - System.nanoTime()));
        }
        long bytes = allocated() - a0;
        long limit = System.nanoTime() + 120 * SEC;
        while (s.fired < k && System.nanoTime() < limit) Thread.sleep(1);
        long end = System.nanoTime();
        long cpu1 = THREADS.getThreadCpuTime(tid);
        ph.end(r);
        r.ops = k; r.fired = s.fired;
        r.cpuNsPerTask = (double) (cpu1 - cpu0) / Math.max(1, s.fired);
        r.nsPerOp = r.cpuNsPerTask;
        r.meanNsPerOp = r.cpuNsPerTask;
        r.spanMs = (end - base) / 1e6;
        r.bytesPerOp = (double) bytes / k;
        r.batches = 1;
        s.close();
        if (r.fired < k)
            say("expire %s k=%d: only %d of %d ran within 120 s", s.name, k, r.fired, k);
        return r;
    }

    // ---- JIT warm-up ------------------------------------------------------

    /** Runs every operation of s on small structures until a stretch of
     *  100 ms adds under 1 ms of JIT compilation (at least warmMinMs, at
     *  most warmMaxMs); returns what it did, as JSON. */
    String warm(Subject s) throws Exception {
        long t0 = System.nanoTime(), jit0 = jitMs(), last = jit0;
        int rounds = 0;
        boolean settled = false;
        while (true) {
            long stretch = System.nanoTime();
            while (System.nanoTime() - stretch < 100 * MS) {
                Object[] base = fill(s, 10000);
                if (ops.contains("insert")) insertPhase(s, base, 10000, 8);
                if (ops.contains("cancel")) cancelPhase(s, base, 10000, 8);
                s.close();
                if (ops.contains("timeouts")) timeoutsPhase(s, 1000, 8);
                rounds++;
            }
            long now = jitMs();
            long ms = (System.nanoTime() - t0) / MS;
            if (ms >= sz.warmMinMs && now - last < 1) { settled = true; break; }
            if (ms >= sz.warmMaxMs) break;
            last = now;
        }
        // expiry's own code paths (the worker's run loop at volume): a
        // first standard run compiled 25-123 ms inside its 10^5 repetitions
        if (ops.contains("expire"))
            for (int i = 0; i < 2; i++) expirePhase(s, sz.expireNs[sz.expireNs.length - 1] >= 10000 ? 10000 : 1000);
        long ms = (System.nanoTime() - t0) / MS;
        say("warm-up %s: %d ms, %d rounds, JIT %d ms, %s", s.name, ms, rounds,
            jitMs() - jit0, settled ? "settled" : "still compiling at the limit");
        return String.format(Locale.ROOT,
            "{\"subject\": \"%s\", \"ms\": %d, \"rounds\": %d, \"jit_ms\": %d, \"settled\": %b}",
            s.name, ms, rounds, jitMs() - jit0, settled);
    }

    // ---- results ------------------------------------------------------------

    /** results[op][subject][n] -> the repetitions, kept in run order */
    final java.util.Map<String, List<Rep>> cells = new java.util.LinkedHashMap<>();

    void keep(String op, Subject s, int n, Rep r) {
        cells.computeIfAbsent(op + "\u0000" + s.name + "\u0000" + n, x -> new ArrayList<>()).add(r);
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
        o.append("{\n  \"format\": \"timerbench-jvm/1\",\n");
        o.append("  \"size\": ").append(q(sz.name)).append(",\n");
        o.append("  \"java\": {\"version\": ").append(q(System.getProperty("java.version")))
         .append(", \"vm\": ").append(q(System.getProperty("java.vm.name")))
         .append(", \"vm_version\": ").append(q(System.getProperty("java.vm.version")))
         .append(", \"vendor\": ").append(q(System.getProperty("java.vendor")))
         .append(", \"gc\": ").append(q(String.join(",", GCS.stream().map(GarbageCollectorMXBean::getName).toArray(String[]::new))))
         .append(", \"max_heap_mb\": ").append(Runtime.getRuntime().maxMemory() >> 20)
         .append(", \"cpus\": ").append(Runtime.getRuntime().availableProcessors())
         .append(", \"args\": ").append(q(String.join(" ", ManagementFactory.getRuntimeMXBean().getInputArguments())))
         .append("},\n");
        String nv = HashedWheelTimer.class.getPackage().getImplementationVersion();
        o.append("  \"netty\": ").append(q(nv)).append(",\n");
        o.append("  \"n\": ").append(nJson(sz)).append(",\n");
        // what the full size measures, so that a report of a smaller size
        // can say which N it left to full
        o.append("  \"n_full\": ").append(nJson(size("full"))).append(",\n");
        o.append("  \"reps\": ").append(sz.reps).append(", \"batches\": ").append(sz.batches)
         .append(", \"max_batch\": ").append(sz.maxBatch).append(",\n");
        o.append("  \"workload\": {\"insert\": \"uniform 1 ms - 1000 s (h2h uniform)\", ")
         .append("\"cancel\": \"random pending tasks of N uniform 1 ms - 1000 s\", ")
         .append("\"timeouts\": \"ring of N, cancel p = 0.95, timeout 2x the ring's pass\", ")
         .append("\"expire\": \"N tasks due inside a 10 ms window\"},\n");
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
        for (java.util.Map.Entry<String, List<Rep>> e : cells.entrySet()) {
            String[] k = e.getKey().split("\u0000");
            List<Rep> reps = e.getValue();
            double[] v = new double[reps.size()];
            for (int j = 0; j < v.length; j++) v[j] = reps.get(j).nsPerOp;
            o.append(i++ > 0 ? ",\n    " : "\n    ");
            o.append("{\"op\": ").append(q(k[0])).append(", \"subject\": ").append(q(k[1]))
             .append(", \"n\": ").append(k[2]).append(", \"median_ns\": ").append(num(median(v, v.length)))
             .append(", \"reps\": [");
            for (int j = 0; j < reps.size(); j++) {
                Rep r = reps.get(j);
                o.append(j > 0 ? ", " : "").append("{\"ns_per_op\": ").append(num(r.nsPerOp))
                 .append(", \"mean_ns_per_op\": ").append(num(r.meanNsPerOp))
                 .append(", \"bytes_per_op\": ").append(num(r.bytesPerOp))
                 .append(", \"gc_ms\": ").append(r.gcMs < 0 ? "null" : num(r.gcMs))
                 .append(", \"gc_count\": ").append(r.gcCount)
                 .append(", \"jit_ms\": ").append(num(r.jitMs))
                 .append(", \"ops\": ").append(r.ops).append(", \"batches\": ").append(r.batches);
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

    void run(String out) throws Exception {
        say("size %s: N %s, %d repetitions of %d batches, subjects %s, ops %s",
            sz.name, Arrays.toString(sz.ns), sz.reps, sz.batches,
            subjects.stream().map(x -> x.name).toList(), ops);
        List<String> warmups = new ArrayList<>();
        for (Subject s : subjects) warmups.add(warm(s));
        boolean hold = ops.contains("insert") || ops.contains("cancel");
        for (int rep = 0; rep < sz.reps; rep++) {
            List<Integer> ns = new ArrayList<>();
            for (int n : sz.ns) ns.add(n);
            shuffle(ns);
            for (int n : ns) {
                List<Subject> order = new ArrayList<>(subjects);
                shuffle(order);
                for (Subject s : order) {
                    if (hold) {
                        Object[] base = fill(s, n);
                        System.gc();
                        Thread.sleep(20);   // Netty: the inbox into buckets
                        // the two operations in either order, by the coin
                        boolean insFirst = rng.nextBoolean();
                        for (int f = 0; f < 2; f++) {
                            boolean ins = (f == 0) == insFirst;
                            if (ins && ops.contains("insert")) {
                                Rep r = insertPhase(s, base, n, sz.batches);
                                keep("insert", s, n, r);
                                progress("insert", s, n, rep, r);
                            } else if (!ins && ops.contains("cancel")) {
                                Rep r = cancelPhase(s, base, n, sz.batches);
                                keep("cancel", s, n, r);
                                progress("cancel", s, n, rep, r);
                            }
                        }
                        s.close();
                    }
                    if (ops.contains("timeouts") && contains(sz.timeoutsNs, n)) {
                        System.gc();
                        Rep r = timeoutsPhase(s, n, sz.batches);
                        keep("timeouts", s, n, r);
                        progress("timeouts", s, n, rep, r);
                    }
                }
            }
            if (ops.contains("expire")) {
                List<Subject> order = new ArrayList<>(subjects);
                shuffle(order);
                for (int k : sz.expireNs)
                    for (Subject s : order) {
                        System.gc();
                        Rep r = expirePhase(s, k);
                        keep("expire", s, k, r);
                        progress("expire", s, k, rep, r);
                    }
            }
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

    void progress(String op, Subject s, int n, int rep, Rep r) {
        say("[%5.1f s] rep %d/%d %-8s %-10s N=%-7d %9.1f ns/op %7.1f B/op gc %4.0f ms",
            (System.nanoTime() - start) / 1e9, rep + 1, sz.reps, op, s.name, n,
            r.nsPerOp, r.bytesPerOp, r.gcMs);
    }

    static void usage(String why) {
        System.err.println("jvm: " + why);
        System.err.println("usage: TimerBench [--size smoke|standard|full] [--seed N] "
            + "[--subjects a,b] [--ops insert,cancel,timeouts,expire] [--out FILE]");
        System.exit(2);
    }

    public static void main(String[] args) throws Exception {
        String size = "standard", out = null;
        long seed = 0x74696D6572L;
        List<String> names = null;
        List<String> ops = List.of("insert", "cancel", "timeouts", "expire");
        for (int i = 0; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length && !a.equals("--help")) usage(a + " needs a value");
            switch (a) {
                case "--size": size = args[++i]; break;
                case "--seed": seed = Long.decode(args[++i]); break;
                case "--subjects": names = List.of(args[++i].split(",")); break;
                case "--ops": ops = List.of(args[++i].split(",")); break;
                case "--out": out = args[++i]; break;
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
        b.run(out);
    }
}
