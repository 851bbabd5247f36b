package io.dlock.core;

import java.time.Duration;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.Lock;

/** {@link Lock} over a {@link EngineLock}: thread-owned, reentrant, sharing the lock's holds. */
final class JavaLockView implements Lock {
    private final EngineLock lock;
    private final EngineClient client;

    JavaLockView(EngineLock lock, EngineClient client) {
        this.lock = lock;
        this.client = client;
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
        Acquisition held = client.heldBy(lock.name(), Thread.currentThread());
        if (held == null || held.holds() == 0) {
            throw new IllegalMonitorStateException("lock '" + lock.name() + "' on " + client.backendName
                    + " is not held by thread '" + Thread.currentThread().getName() + "'");
        }
        EngineLease.awaitRelease(held.exit(), client);
    }

    @Override
    public Condition newCondition() {
        throw new UnsupportedOperationException("lock '" + lock.name() + "' on " + client.backendName
                + ": conditions are not supported by distributed locks");
    }
}
