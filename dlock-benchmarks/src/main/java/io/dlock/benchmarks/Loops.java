package io.dlock.benchmarks;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicIntegerArray;
import java.util.concurrent.atomic.AtomicReference;
import java.util.concurrent.locks.LockSupport;

/**
 * The measured loops: W1's single-threaded acquire-release cycle, the contended loop of W2 and W3
 * (several threads on one lock) and its spread form of W5 and W6 (many threads over many locks). Both run inside a window {@code [startAt, endAt)} of {@link
 * System#nanoTime()} readings and count only what completed inside it.
 *
 * <p>Thread-safety: stateless; each call uses its own threads and lists.
 */
final class Loops {
    /** How long contended threads may take to finish their last cycle after the window closes. */
    static final long DRAIN_NANOS = 60_000_000_000L;

    private Loops() {}

    /**
     * W1: acquire, release, repeat, on the caller's thread. The latency is the whole cycle.
     *
     * <p>Blocking: until {@code endAt}. On failure: the implementation's exception.
     */
    static Measurement uncontended(BenchLock lock, long startAt, long endAt) throws InterruptedException {
        waitUntil(startAt);
        LongList latencies = new LongList(1 << 16);
        long ops = 0;
        long begin = System.nanoTime();
        while (true) {
            long t0 = System.nanoTime();
            if (t0 - endAt >= 0) {
                break;
            }
            BenchLock.Held held = lock.acquire();
            held.release();
            long t1 = System.nanoTime();
            if (t1 - endAt > 0) {
                break; // finished outside the window: not counted
            }
            latencies.add(t1 - t0);
            ops++;
        }
        long window = Math.max(1, endAt - Math.max(begin, startAt));
        return new Measurement(ops, window, latencies.toArray(), new long[0], new long[0], 0);
    }

    /** Starts the threads of a loop: platform threads, or virtual ones on JDK 21+ ({@link VirtualThreads}). */
    interface Starter {
        Thread start(Runnable body, String name);
    }

    /** Daemon platform threads. */
    static final Starter PLATFORM = (body, name) -> {
        Thread t = new Thread(body, name);
        t.setDaemon(true);
        t.start();
        return t;
    };

    /**
     * W2 and W3: {@code threads} threads take turns on {@code lock} until {@code endAt}. The latency
     * is the wait for the lock; each critical section is stamped on entry and exit, and an in-JVM
     * counter checks that nobody else is inside.
     *
     * <p>Blocking: until every thread has finished its last cycle, at most {@link #DRAIN_NANOS}
     * after {@code endAt}. On failure: {@link IllegalStateException} if a thread failed or is still
     * waiting then (a lock that never hands over).
     */
    static Measurement contended(BenchLock lock, int threads, long startAt, long endAt, String what)
            throws InterruptedException {
        return spread(List.of(lock), threads, startAt, endAt, what, PLATFORM);
    }

    /**
     * W5 and W6 (and, with one lock, W2 and W3): {@code threads} threads each pick one of {@code
     * locks} at random per cycle and acquire and release it until {@code endAt}. The latency is the
     * wait for the lock; an in-JVM counter per lock checks that nobody else is inside. With one lock
     * the critical sections are also stamped on entry and exit, for the check across processes.
     *
     * <p>Blocking: until every thread has finished its last cycle, at most {@link #DRAIN_NANOS}
     * after {@code endAt}. On failure: {@link IllegalStateException} if a thread failed or is still
     * waiting then (a lock that never hands over).
     */
    static Measurement spread(
            List<BenchLock> locks, int threads, long startAt, long endAt, String what, Starter starter)
            throws InterruptedException {
        Measurement.Collector collector = new Measurement.Collector();
        AtomicIntegerArray inside = new AtomicIntegerArray(locks.size());
        boolean stamps = locks.size() == 1;
        // Thousands of virtual threads: small lists that grow, not 3 x 16,384 longs each.
        int capacity = threads > 256 ? 64 : 1 << 14;
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> workers = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            LongList[] lists = collector.newThread(capacity);
            workers.add(starter.start(
                    () -> {
                        long ops = 0;
                        long overlaps = 0;
                        ThreadLocalRandom random = ThreadLocalRandom.current();
                        try {
                            waitUntil(startAt);
                            while (true) {
                                long t0 = System.nanoTime();
                                if (t0 - endAt >= 0) {
                                    break;
                                }
                                int i = stamps ? 0 : random.nextInt(locks.size());
                                BenchLock.Held held = locks.get(i).acquire();
                                long t1 = System.nanoTime();
                                if (inside.incrementAndGet(i) != 1) {
                                    overlaps++;
                                }
                                inside.decrementAndGet(i);
                                long t2 = System.nanoTime();
                                held.release();
                                if (t1 - endAt > 0) {
                                    break;
                                }
                                lists[0].add(t1 - t0);
                                if (stamps) {
                                    lists[1].add(t1);
                                    lists[2].add(t2);
                                }
                                ops++;
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        } finally {
                            collector.addOps(ops, overlaps);
                        }
                    },
                    "bench-" + what + "-" + t));
        }
        long drainUntil = endAt + DRAIN_NANOS;
        for (Thread worker : workers) {
            long left = drainUntil - System.nanoTime();
            worker.join(Math.max(1, left / 1_000_000));
            if (worker.isAlive()) {
                workers.forEach(Thread::interrupt);
                throw new IllegalStateException(
                        what + ": " + worker.getName() + " still waiting for the lock 60 s after the window closed");
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException(what + " failed: " + failure.get(), failure.get());
        }
        return collector.build(endAt - startAt);
    }

    static void waitUntil(long at) throws InterruptedException {
        long left;
        while ((left = at - System.nanoTime()) > 0) {
            if (Thread.interrupted()) {
                throw new InterruptedException();
            }
            LockSupport.parkNanos(Math.min(left, 10_000_000L));
        }
    }

    /**
     * Takes each of {@code names} once, spread over {@code threads} threads, so that whatever a
     * backend keeps per lock name exists before a measurement (W5, SCALE).
     *
     * <p>Blocking: until done, at most 10 minutes. On failure: {@link IllegalStateException} naming
     * {@code what}, after interrupting the others.
     */
    static void touchAll(List<BenchLock> names, int threads, String what) throws InterruptedException {
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Thread> touching = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int first = t;
            touching.add(PLATFORM.start(
                    () -> {
                        try {
                            for (int i = first; i < names.size(); i += threads) {
                                names.get(i).acquire().release();
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        }
                    },
                    "bench-" + what + "-touch-" + t));
        }
        for (Thread t : touching) {
            t.join(TimeUnit.MINUTES.toMillis(10));
            if (t.isAlive()) {
                touching.forEach(Thread::interrupt);
                throw new IllegalStateException(what + ": taking every name once did not finish in 10 minutes");
            }
        }
        if (failure.get() != null) {
            throw new IllegalStateException(what + " failed: " + failure.get(), failure.get());
        }
    }
}
