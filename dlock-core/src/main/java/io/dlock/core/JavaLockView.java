package io.dlock.core;

import io.dlock.DistributedLock;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/** {@link Lock} over a {@link DistributedLock}: thread-owned holds, released by {@code unlock}. */
final class JavaLockView implements Lock {
    private final DistributedLock lock;
    private final String backendName;
    private final Runnable unlock;

    /**
     * @param unlock drops one hold of the calling thread, or throws IllegalMonitorStateException
     */
    JavaLockView(DistributedLock lock, String backendName, Runnable unlock) {
        this.lock = lock;
        this.backendName = backendName;
        this.unlock = unlock;
    }

    @Override
    public void lock() {
        boolean interrupted = false;
        while (true) {
            try {
                lock.acquire();
                break;
            } catch (InterruptedException e) {
                interrupted = true; // Lock.lock() is uninterruptible: keep waiting, restore the flag after.
            }
        }
        if (interrupted) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void lockInterruptibly() throws InterruptedException {
        lock.acquire();
    }

    @Override
    public boolean tryLock() {
        try {
            return lock.tryAcquire(Duration.ZERO).isPresent();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    @Override
    public boolean tryLock(long time, TimeUnit unit) throws InterruptedException {
        long nanos = Math.max(0, unit.toNanos(time));
        return lock.tryAcquire(Duration.ofNanos(nanos)).isPresent();
    }

    @Override
    public void unlock() {
        unlock.run();
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("lock '" + lock.name() + "' on " + backendName
                + ": conditions are not supported by distributed locks");
    }
}
