/*
 * CrossCheck.java — the behaviour scripts of issue 32 item 2, run on the
 * JVM originals: each prints the lines jvm/crosscheck.c prints for the C
 * rendering on the same script, and tests/jvm_crosscheck.py compares them.
 *
 *   ties      STPE: equal deadlines run in submission order
 *   fail      a throwing task kills java.util.Timer, spares STPE's pool
 *   catchup   fixed rate after a stall: the missed periods run back to back
 *   maxpending  Netty's maxPendingTimeouts refuses the schedule over it
 *   tick      Netty runs a timeout at the first tick past its deadline,
 *             never earlier
 *
 * `ties` builds STPE's own ScheduledFutureTask with equal trigger times
 * (java.util.concurrent opened by --add-opens): through schedule() two
 * trigger times are two readings of System.nanoTime() and never tie.
 */

import io.netty.util.HashedWheelTimer;
import io.netty.util.Timeout;
import java.lang.reflect.Constructor;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Timer;
import java.util.TimerTask;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.RunnableScheduledFuture;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.ScheduledThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

public final class CrossCheck {

    static final long MS = 1_000_000L;

    /** The script of `ties`: deadlines in ms, in submission order (shared
     *  with crosscheck.c). */
    static final int[] TIES = {30, 10, 30, 20, 10, 30, 20, 10, 30, 10, 20, 30};

    static void ties() throws Exception {
        ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1);
        ex.prestartAllCoreThreads();
        Class<?> sft = Class.forName(
            "java.util.concurrent.ScheduledThreadPoolExecutor$ScheduledFutureTask");
        Constructor<?> mk = sft.getDeclaredConstructor(
            ScheduledThreadPoolExecutor.class, Runnable.class, Object.class,
            long.class, long.class);
        mk.setAccessible(true);
        Field seqf = ScheduledThreadPoolExecutor.class.getDeclaredField("sequencer");
        seqf.setAccessible(true);
        AtomicLong sequencer = (AtomicLong) seqf.get(null);
        Method delayed = ScheduledThreadPoolExecutor.class.getDeclaredMethod(
            "delayedExecute", RunnableScheduledFuture.class);
        delayed.setAccessible(true);
        List<Integer> order = Collections.synchronizedList(new ArrayList<>());
        CountDownLatch done = new CountDownLatch(TIES.length);
        // the worker waits behind a gate until every task is queued, so a
        // slow submission cannot let an early one run before a later one
        CountDownLatch gate = new CountDownLatch(1);
        ex.execute(() -> {
            try { gate.await(); } catch (InterruptedException e) { /* none */ }
        });
        long base = System.nanoTime() + 50 * MS;
        for (int i = 0; i < TIES.length; i++) {
            int id = i;
            Runnable r = () -> { order.add(id); done.countDown(); };
            // what schedule() does, with the trigger time given
            Object t = mk.newInstance(ex, r, null, base + TIES[i] * MS,
                                      sequencer.getAndIncrement());
            delayed.invoke(ex, t);
        }
        gate.countDown();
        done.await();
        ex.shutdown();
        StringBuilder b = new StringBuilder();
        for (int id : order) b.append(b.length() > 0 ? "," : "").append(id);
        System.out.println("stpe order " + b);
    }

    /** A at 10 ms, B at 20 ms throws, C at 30 ms; then D once all is
     *  over (STPE: C has run; Timer: its thread has died): what ran, and
     *  whether D was accepted and ran. */
    static void fail() throws Exception {
        Thread.setDefaultUncaughtExceptionHandler((t, e) -> { /* Timer's thread dies */ });
        for (String who : new String[] {"stpe", "timer"}) {
            List<String> ran = Collections.synchronizedList(new ArrayList<>());
            String[] names = {"A", "B", "C", "D"};
            CountDownLatch[] did = new CountDownLatch[4];
            Thread[] thread = new Thread[1];
            Runnable[] body = new Runnable[4];
            for (int i = 0; i < 4; i++) {
                String n = names[i];
                CountDownLatch l = did[i] = new CountDownLatch(1);
                body[i] = () -> {
                    ran.add(n);
                    thread[0] = Thread.currentThread();
                    l.countDown();
                    if (n.equals("B")) throw new IllegalStateException("task B fails");
                };
            }
            String after;
            if (who.equals("stpe")) {
                ScheduledThreadPoolExecutor ex = new ScheduledThreadPoolExecutor(1);
                for (int i = 0; i < 3; i++) ex.schedule(body[i], 10 * (i + 1), TimeUnit.MILLISECONDS);
                did[2].await(60, TimeUnit.SECONDS);
                try {
                    ex.schedule(body[3], 10, TimeUnit.MILLISECONDS);
                    after = "accepted";
                    did[3].await(60, TimeUnit.SECONDS);
                } catch (RejectedExecutionException e) {
                    after = "refused";
                }
                ex.shutdownNow();
            } else {
                Timer t = new Timer(true);
                for (int i = 0; i < 3; i++) {
                    Runnable r = body[i];
                    t.schedule(new TimerTask() { public void run() { r.run(); } }, 10 * (i + 1));
                }
                did[1].await(60, TimeUnit.SECONDS);
                thread[0].join(60_000);      // B's exception ends the thread
                Thread.sleep(50);            // C's time (30 ms) has passed
                try {
                    Runnable r = body[3];
                    t.schedule(new TimerTask() { public void run() { r.run(); } }, 10);
                    after = "accepted";
                    did[3].await(60, TimeUnit.SECONDS);
                } catch (IllegalStateException e) {
                    after = "refused";
                }
            }
            System.out.println(who + " ran " + String.join(",", ran) + " after " + after);
        }
    }

    /** Fixed rate, period 100 ms; the first run stalls until 450 ms past
     *  its scheduled time.  Catch-up runs: those after it whose scheduled
     *  time is before the stall's end (100, 200, 300, 400 ms past the
     *  first: 4, run back to back as soon as it ends); later: the rest of
     *  the first 8 runs (500, 600, 700 ms: 3).  Scheduled times are the
     *  originals' own (STPE's getDelay, Timer's scheduledExecutionTime),
     *  so the count does not depend on how late the worker woke. */
    static void catchup() throws Exception {
        final long period = 100, stall = 450;
        for (String who : new String[] {"stpe", "timer"}) {
            // scheduled times in ms: STPE's on nanoTime, Timer's on currentTimeMillis
            List<Double> sched = Collections.synchronizedList(new ArrayList<>());
            CountDownLatch eight = new CountDownLatch(8);
            ScheduledFuture<?>[] self = new ScheduledFuture<?>[1];
            CountDownLatch set = new CountDownLatch(1);
            ScheduledThreadPoolExecutor ex = null;
            Timer t = null;
            if (who.equals("stpe")) {
                ex = new ScheduledThreadPoolExecutor(1);
                Runnable body = () -> {
                    try { set.await(); } catch (InterruptedException e) { return; }
                    double at = (System.nanoTime() + self[0].getDelay(TimeUnit.NANOSECONDS)) / 1e6;
                    sched.add(at);
                    if (sched.size() == 1) pause(at + stall - System.nanoTime() / 1e6);
                    eight.countDown();
                };
                self[0] = ex.scheduleAtFixedRate(body, period, period, TimeUnit.MILLISECONDS);
                set.countDown();
            } else {
                t = new Timer(true);
                t.scheduleAtFixedRate(new TimerTask() {
                    public void run() {
                        double at = scheduledExecutionTime();
                        sched.add(at);
                        if (sched.size() == 1) pause(at + stall - System.currentTimeMillis());
                        eight.countDown();
                    }
                }, period, period);
            }
            eight.await();
            if (ex != null) ex.shutdownNow(); else t.cancel();
            double end = sched.get(0) + stall;
            int catchup = 0, later = 0;
            for (int i = 1; i < 8; i++) {
                if (sched.get(i) < end) catchup++;
                else later++;
            }
            System.out.println(who + " catchup " + catchup + " later " + later);
        }
    }

    static void pause(double ms) {
        try {
            if (ms > 0) Thread.sleep((long) Math.ceil(ms));
        } catch (InterruptedException e) { /* shut down */ }
    }

    /** maxPendingTimeouts = 3, tick 10 ms: A (30 ms), B, C (10 s) accepted,
     *  D refused; once A has run, E accepted, F refused; once B's cancel
     *  has left the count (Netty: at the worker's next tick), G accepted, H
     *  refused. */
    static void waitPending(HashedWheelTimer t, long want) throws InterruptedException {
        long limit = System.nanoTime() + 60_000 * MS;
        while (t.pendingTimeouts() != want && System.nanoTime() < limit) Thread.sleep(1);
    }

    static void maxpending() throws Exception {
        HashedWheelTimer t = new HashedWheelTimer(Thread::new, 10, TimeUnit.MILLISECONDS, 64,
                                                  false, 3);
        CountDownLatch aRan = new CountDownLatch(1);
        StringBuilder out = new StringBuilder("netty");
        Timeout[] kept = new Timeout[8];
        String[] names = {"A", "B", "C", "D", "E", "F", "G", "H"};
        long[] delay = {30, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000, 10_000};
        for (int i = 0; i < 8; i++) {
            if (i == 4) {
                aRan.await();       // A left the count before it ran
                waitPending(t, 2);
            }
            if (i == 6) {
                kept[1].cancel();   // the worker drops it at its next tick
                waitPending(t, 3 - 1);
            }
            try {
                kept[i] = t.newTimeout(i == 0 ? to -> aRan.countDown() : to -> { },
                                       delay[i], TimeUnit.MILLISECONDS);
                out.append(' ').append(names[i]).append("=accepted");
            } catch (RejectedExecutionException e) {
                out.append(' ').append(names[i]).append("=refused");
            }
        }
        t.stop();
        System.out.println(out);
    }

    /** Tick 200 ms: timeouts of 30, 230, 450, 820 and 1555 ms.  Each must
     *  run at the first tick boundary past its deadline (Netty's bucket for
     *  deadline d is floor(d / tick), expired when the worker wakes at the
     *  end of that tick), never before its deadline.  The worker may wake
     *  up to a tick late before the offset reads 1 instead of 0. */
    static void tick() throws Exception {
        final long tick = 200;
        long[] delays = {30, 230, 450, 820, 1555};
        HashedWheelTimer t = new HashedWheelTimer(Thread::new, tick, TimeUnit.MILLISECONDS, 512);
        t.start();
        Field startf = HashedWheelTimer.class.getDeclaredField("startTime");
        startf.setAccessible(true);
        long start = (long) startf.get(t);
        long[] fired = new long[delays.length];
        Timeout[] ts = new Timeout[delays.length];
        CountDownLatch all = new CountDownLatch(delays.length);
        for (int i = 0; i < delays.length; i++) {
            int id = i;
            ts[i] = t.newTimeout(to -> { fired[id] = System.nanoTime(); all.countDown(); },
                                 delays[i], TimeUnit.MILLISECONDS);
        }
        all.await();
        t.stop();
        Field dl = ts[0].getClass().getDeclaredField("deadline");
        dl.setAccessible(true);
        for (int i = 0; i < delays.length; i++) {
            long deadline = (long) dl.get(ts[i]);        // from the timer's start
            long at = fired[i] - start;
            long wantTick = Math.floorDiv(deadline, tick * MS) + 1;
            long gotTick = Math.floorDiv(at, tick * MS);
            System.out.println("netty timeout " + delays[i] + "ms tick_offset "
                + (gotTick - wantTick) + " early " + (at < deadline ? "yes" : "no"));
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: CrossCheck ties|fail|catchup|maxpending|tick");
            System.exit(2);
        }
        switch (args[0]) {
            case "ties": ties(); break;
            case "fail": fail(); break;
            case "catchup": catchup(); break;
            case "maxpending": maxpending(); break;
            case "tick": tick(); break;
            default:
                System.err.println("unknown check " + args[0]);
                System.exit(2);
        }
    }
}
