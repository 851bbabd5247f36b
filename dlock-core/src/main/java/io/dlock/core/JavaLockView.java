package io.dlock.core;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;
import org.jspecify.annotations.Nullable;

/**
 * {@link Lock} over a {@link DistributedLock}: thread-owned holds, released by {@code unlock}.
 * {@code lock()} and {@code tryLock()} are not interruptible, as {@link Lock} specifies: an
 * interrupt neither ends the wait nor costs the waiter its place in the queue; the flag is set
 * again when the call returns.
 */
final class JavaLockView implements Lock {

    /** A lock the view can acquire with or without responding to interrupts. */
    interface Acquirer extends DistributedLock {
        /**
         * Acquires the lock, blocking up to {@code wait}.
         *
         * @param wait null to wait as long as it takes
         * @param interruptible false to keep waiting through interrupts, restoring the flag after
         */
        Optional<Lease> acquire(@Nullable Duration wait, boolean interruptible) throws InterruptedException;
    }

    private final Acquirer lock;
    private final String backendName;
    private final Runnable unlock;

    /**
     * @param unlock drops one hold of the calling thread, or throws IllegalMonitorStateException
     */
    JavaLockView(Acquirer lock, String backendName, Runnable unlock) {
        this.lock = lock;
        this.backendName = backendName;
        this.unlock = unlock;
    }

    @Override
    public void lock() {
        uninterruptibly(null);
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.acquire(null, true);
    }

    @Override
    public boolean tryLock() {
        return uninterruptibly(Duration.ZERO);
    }

    private boolean uninterruptibly(@Nullable Duration wait) {
        try {
            return lock.acquire(wait, false).isPresent();
        } catch (InterruptedException e) {
            throw new AssertionError("an uninterruptible acquisition was interrupted", e);
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        long nanos = Math.max(0, unit.toNanos(time));
        return lock.acquire(Duration.ofNanos(nanos), true).isPresent();
    }

    @Override
    public void unlock() {
        unlock.run();
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException(
                "lock '" + lock.name() + "' on " + backendName + ": conditions are not supported by distributed locks");
    }
}
