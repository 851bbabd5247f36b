package io.dlock.core;

import io.dlock.Ticker;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Consumer;

/**
 * Notices that this JVM did not run for longer than the backend's safe suspension time (a long GC
 * pause, SIGSTOP, a suspended VM). During such a stall the server may have expired the session and
 * granted the lock to someone else, while the client library has not yet noticed anything. A timer
 * ticks every {@code period}; {@link Acquisition#isValid()} also checks, so that a thread resuming
 * from a stall sees its lease invalid before the timer thread gets to run.
 *
 * <p>Concurrency: the fast path only reads the volatile last tick. The slow path runs under a lock
 * and reports a stall before it publishes the new tick, so a caller that sees a fresh tick knows any
 * stall before it has already been reported (and its leases marked lost). The reporting does not
 * block, so the lock is never held across a wait.
 */
final class StallDetector {
    private final Ticker ticker;
    private final long boundNanos;
    private final long periodNanos;
    private final Consumer<Duration> onStall;
    private final ReentrantLock lock = new ReentrantLock();
    private volatile long lastTick;

    StallDetector(Ticker ticker, Duration bound, Consumer<Duration> onStall) {
        this.ticker = ticker;
        this.boundNanos = bound.toNanos();
        this.periodNanos = Math.max(
                TimeUnit.MILLISECONDS.toNanos(10), Math.min(boundNanos / 4, TimeUnit.MILLISECONDS.toNanos(250)));
        this.onStall = onStall;
        this.lastTick = ticker.read();
    }

    void start(ScheduledExecutorService timer) {
        ScheduledFuture<?> unused =
                timer.scheduleAtFixedRate(this::check, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }

    /** Records that the JVM is running; reports a stall first if the previous sign of life is too old. */
    void check() {
        if (ticker.read() - lastTick < periodNanos / 2) {
            return; // recent enough; avoid a shared write on every call
        }
        lock.lock();
        try {
            long now = ticker.read();
            long gap = now - lastTick;
            if (gap > boundNanos) {
                onStall.accept(Duration.ofNanos(gap));
            }
            lastTick = now;
        } finally {
            lock.unlock();
        }
    }
}
