package io.dlock.benchmarks;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordingFile;
import org.jspecify.annotations.Nullable;

/**
 * W6's tools, in a worker JVM of JDK 21 or newer (this module is compiled to Java 17, so virtual
 * threads are reached through a method handle): a {@link Loops.Starter} of virtual threads, the
 * heap a waiting virtual thread costs, and JFR's {@code jdk.VirtualThreadPinned} events counted
 * while a workload runs, with those whose stack has a dlock frame counted apart.
 *
 * <p>Thread-safety: the starter is safe from any thread; a {@link Pins} recording is used by one
 * thread.
 */
final class VirtualThreads {
    static final String PINNED = "jdk.VirtualThreadPinned";

    private static final @Nullable MethodHandle START = startHandle();

    private VirtualThreads() {}

    private static @Nullable MethodHandle startHandle() {
        try {
            return MethodHandles.publicLookup()
                    .findStatic(
                            Thread.class, "startVirtualThread", MethodType.methodType(Thread.class, Runnable.class));
        } catch (ReflectiveOperationException e) {
            return null; // JDK 17-20
        }
    }

    /** Starts virtual threads; names them. Fails on a JDK without them. */
    static Loops.Starter starter() {
        MethodHandle start = START;
        if (start == null) {
            throw new IllegalStateException("virtual threads need JDK 21 or newer, this is " + Runtime.version());
        }
        return (body, name) -> {
            try {
                Thread t = (Thread) start.invoke(body);
                t.setName(name);
                return t;
            } catch (RuntimeException | Error e) {
                throw e;
            } catch (Throwable e) {
                throw new IllegalStateException(e);
            }
        };
    }

    /**
     * Heap per waiting virtual thread: {@code locks} virtual threads take one lock each and hold
     * it; {@code threads - locks} more wait for them (thread {@code i} on lock {@code i % locks}).
     * The heap in use after a collection with them all waiting, less the same once the holders let
     * go and every waiter had its turn and ended, divided by their number.
     *
     * <p>Blocking: until every waiter had its turn, at most a few minutes. On failure: {@link
     * IllegalStateException} if a thread failed or a phase did not finish in time.
     *
     * @return bytes per waiting virtual thread
     */
    static double heapPerWaiter(List<BenchLock> locks, int threads) throws InterruptedException {
        Loops.Starter starter = starter();
        int n = locks.size();
        int waiters = threads - n;
        if (waiters <= 0) {
            throw new IllegalArgumentException("W6 needs more threads (" + threads + ") than locks (" + n + ")");
        }
        AtomicReference<Throwable> failure = new AtomicReference<>();
        CountDownLatch holding = new CountDownLatch(n);
        CountDownLatch letGo = new CountDownLatch(1);
        CountDownLatch done = new CountDownLatch(threads);
        for (int i = 0; i < n; i++) {
            BenchLock lock = locks.get(i);
            starter.start(
                    () -> {
                        try {
                            BenchLock.Held held = lock.acquire();
                            holding.countDown();
                            letGo.await();
                            held.release();
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                            holding.countDown();
                        } finally {
                            done.countDown();
                        }
                    },
                    "w6-holder-" + i);
        }
        await(holding, Duration.ofMinutes(2), "the holders did not get their locks", failure);
        AtomicInteger entered = new AtomicInteger();
        for (int i = 0; i < waiters; i++) {
            BenchLock lock = locks.get(i % n);
            starter.start(
                    () -> {
                        try {
                            entered.incrementAndGet();
                            lock.acquire().release();
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        } finally {
                            done.countDown();
                        }
                    },
                    "w6-waiter-" + i);
        }
        long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(2);
        while (entered.get() < waiters && System.nanoTime() - deadline < 0) {
            Thread.sleep(10);
        }
        // Let the last ones reach their queue (a request to the server, a local wait) before counting.
        Thread.sleep(2_000);
        long waiting = Workloads.usedHeapAfterGc();
        letGo.countDown();
        await(done, Duration.ofMinutes(5), "the waiters did not all get their turn", failure);
        // Measured against the state after they all left rather than before they came: what the
        // first waiters made once (caches, larger buffers) stays and is not counted, and what the
        // workload before left behind is gone by then (counted from before, it showed as negative).
        long after = Workloads.usedHeapAfterGc();
        return (waiting - after) / (double) waiters;
    }

    private static void await(CountDownLatch latch, Duration limit, String what, AtomicReference<Throwable> failure)
            throws InterruptedException {
        boolean finished = latch.await(limit.toMillis(), TimeUnit.MILLISECONDS);
        Throwable e = failure.get();
        if (e != null) {
            throw new IllegalStateException("W6 failed: " + e, e);
        }
        if (!finished) {
            throw new IllegalStateException("W6: " + what + " in " + limit.toSeconds() + " s");
        }
    }

    /** Counts {@value #PINNED} events from its start to {@link #stop()}. */
    static final class Pins {
        private final Recording recording = new Recording();
        private final List<String> dlockStacks = new ArrayList<>();

        Pins() {
            recording.enable(PINNED).withThreshold(Duration.ZERO).withStackTrace();
            recording.start();
        }

        /**
         * Stops recording and counts.
         *
         * @return {every pin, pins while a class was loaded or initialized (the JVM pins a virtual
         *     thread there whoever asked for the class), other pins with a dlock frame (outside this
         *     module)}
         */
        long[] stop() {
            recording.stop();
            long all = 0;
            long loading = 0;
            long byDlock = 0;
            try {
                Path file = Files.createTempFile("dlock-bench-w6-", ".jfr");
                try {
                    recording.dump(file);
                    for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                        if (!e.getEventType().getName().equals(PINNED)) {
                            continue;
                        }
                        all++;
                        List<RecordedFrame> frames = e.getStackTrace() == null
                                ? List.of()
                                : e.getStackTrace().getFrames();
                        if (frames.stream().anyMatch(Pins::isClassLoading)) {
                            loading++;
                        } else if (frames.stream().anyMatch(Pins::isDlock)) {
                            byDlock++;
                            if (dlockStacks.size() < 3) {
                                dlockStacks.add(frames.stream()
                                        .limit(40)
                                        .map(f -> f.getMethod().getType().getName() + "."
                                                + f.getMethod().getName() + ":" + f.getLineNumber())
                                        .collect(Collectors.joining(" <- ")));
                            }
                        }
                    }
                } finally {
                    Files.deleteIfExists(file);
                    recording.close();
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read the JFR recording of pinned threads", e);
            }
            return new long[] {all, loading, byDlock};
        }

        private static boolean isClassLoading(RecordedFrame f) {
            String method = f.getMethod().getName();
            return method.equals("<clinit>")
                    || (method.startsWith("loadClass")
                            && f.getMethod().getType().getName().contains("ClassLoader"));
        }

        /** Up to three stacks of pins with a dlock frame, innermost frame first, after {@link #stop()}. */
        List<String> dlockStacks() {
            return dlockStacks;
        }

        private static boolean isDlock(RecordedFrame f) {
            String type = f.getMethod().getType().getName();
            return type.startsWith("io.dlock.") && !type.startsWith("io.dlock.benchmarks.");
        }
    }
}
