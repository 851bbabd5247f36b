package io.dlock.core;

import io.dlock.Ticker;
import java.time.Duration;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Consumer;

/**
 * Notices that this JVM did not run for longer than the backend's safe suspension time (a long GC
 * pause, SIGSTOP, a suspended VM). During such a stall the server may have expired the session and
 * granted the lock to someone else, while the client library has not yet noticed anything. A timer
 * ticks every {@code period}; {@link Acquisition#isValid()} also checks, so that a thread resuming
 * from a stall sees its lease invalid before the timer thread gets to run.
 *
 * <p>Concurrency: the last tick is an {@link AtomicLong}; whoever advances it by CAS across a gap
 * longer than the bound reports that stall, so each stall is reported once.
 */
final class StallDetector {
    private final Ticker ticker;
    private final long boundNanos;
    private final long periodNanos;
    private final Consumer<Duration> onStall;
    private final AtomicLong lastTick;

    StallDetector(Ticker ticker, Duration bound, Consumer<Duration> onStall) {
        this.ticker = ticker;
        this.boundNanos = bound.toNanos();
        this.periodNanos = Math.max(TimeUnit.MILLISECONDS.toNanos(10),
                Math.min(boundNanos / 4, TimeUnit.MILLISECONDS.toNanos(250)));
        this.onStall = onStall;
        this.lastTick = new AtomicLong(ticker.read());
    }

    void start(ScheduledExecutorService timer) {
        timer.scheduleAtFixedRate(this::check, periodNanos, periodNanos, TimeUnit.NANOSECONDS);
    }

    /** Records that the JVM is running; reports a stall if the previous sign of life is too old. */
    void check() {
        long now = ticker.read();
        long last = lastTick.get();
        long gap = now - last;
        if (gap < periodNanos / 2) {
            return; // recent enough; avoid a shared write on every call
        }
        if (lastTick.compareAndSet(last, now) && gap > boundNanos) {
            onStall.accept(Duration.ofNanos(gap));
        }
    }
}
