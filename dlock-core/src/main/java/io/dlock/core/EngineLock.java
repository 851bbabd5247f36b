package io.dlock.core;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockTimeoutException;
import io.dlock.spi.LockMode;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;
import org.jspecify.annotations.Nullable;

/**
 * An exclusive lock, or one side of a read-write lock. Stateless apart from its name and mode:
 * holds live in the client, keyed by name, mode and thread, so every handle of one name in one
 * client shares them.
 *
 * <p>Reentrant handles let the owner thread re-enter without a round trip and only it may close
 * the lease. Non-reentrant handles (Curator's semaphore mutex) make a re-entry wait like any other
 * acquirer, and their leases may be closed from any thread.
 */
final class EngineLock implements DistributedLock, JavaLockView.Acquirer {
    private final EngineClient client;
    private final String name;
    private final LockMode mode;
    private final boolean reentrant;

    EngineLock(EngineClient client, String name, LockMode mode, boolean reentrant) {
        this.client = client;
        this.name = name;
        this.mode = mode;
        this.reentrant = reentrant;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Lease acquire() throws InterruptedException {
        return acquire(null, true).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration wait) throws InterruptedException {
        return acquire(checkWait(wait), true);
    }

    @Override
    public Optional<Lease> acquire(@Nullable Duration wait, boolean interruptible) throws InterruptedException {
        if (interruptible && Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring lock '" + name + "'");
        }
        Thread me = Thread.currentThread();
        if (reentrant) {
            Acquisition held = client.heldBy(name, mode, me);
            if (held != null) {
                if (held.reenter()) {
                    return Optional.of(new EngineLease(held));
                }
                if (held.state() == LockState.LOST) {
                    client.onEnded(held);
                    EngineLease.awaitRelease(held.cleanupAfterLoss(), client);
                }
            }
        }
        if (mode == LockMode.WRITE) {
            refuseUpgrade(me);
        }
        Acquisition write = mode == LockMode.READ ? client.heldBy(name, LockMode.WRITE, me) : null;
        if (write != null && write.holds() > 0 && !write.isValid()) {
            // A read would queue behind this thread's own lost write entry, which the server may
            // still have: it would wait for itself.
            throw new IllegalStateException("lock '" + name + "' on " + client.backendName
                    + ": this thread's write lock was lost; close its lease before taking the read lock");
        }
        Acquisition a = client.newAcquisition(name, mode, 1, 1, me, reentrant, wait);
        if (write != null && write.isValid()) {
            a.downgradeOf(write); // a read under this thread's own write lock is not blocked by it
        }
        client.begin(a);
        try {
            return Optional.of(new EngineLease(a.await(interruptible)));
        } catch (LockTimeoutException e) {
            return Optional.empty();
        }
    }

    /**
     * A read holder asking for the write lock would wait for itself (and for other upgraders); so
     * would one whose read lease was lost but not closed, behind its own entry the server may keep.
     */
    private void refuseUpgrade(Thread me) {
        Acquisition read = client.heldBy(name, LockMode.READ, me);
        if (read != null && read.holds() > 0) {
            throw new IllegalStateException("lock '" + name + "' on " + client.backendName
                    + ": cannot upgrade a read lock to a write lock (two upgrading readers would wait for each"
                    + " other for ever); release the read lock first"
                    + (read.isValid() ? "" : " (it was lost: close its lease)"));
        }
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(Duration wait) {
        Acquisition a = client.newAcquisition(name, mode, 1, 1, null, false, checkWait(wait));
        return startAsync(client, a);
    }

    @Override
    public boolean isHeldByCurrentThread() {
        Acquisition held = client.heldBy(name, mode, Thread.currentThread());
        return held != null && held.isValid();
    }

    @Override
    public Lock asJavaLock() {
        return new JavaLockView(this, client.backendName, () -> {
            if (!unlockCurrentThread()) {
                throw new IllegalMonitorStateException("lock '" + name + "' on " + client.backendName
                        + " is not held by thread '" + Thread.currentThread().getName() + "'");
            }
        });
    }

    /**
     * Drops one hold of the calling thread, valid or lost (a lost grant still has a hold until its
     * owner lets go of it). False if the thread has no hold.
     */
    boolean unlockCurrentThread() {
        Acquisition held = client.heldBy(name, mode, Thread.currentThread());
        if (held == null || held.holds() == 0) {
            return false;
        }
        long start = System.nanoTime();
        EngineLease.awaitRelease(held.exit(true), client, start);
        return true;
    }

    /** Whether the calling thread has a hold, valid or lost, that {@link #unlockCurrentThread} would drop. */
    boolean hasHoldOfCurrentThread() {
        Acquisition held = client.heldBy(name, mode, Thread.currentThread());
        return held != null && held.holds() > 0;
    }

    /** Waits longer than this (about 73 years) count as this, so that a deadline never overflows. */
    private static final long MAX_WAIT_NANOS = Long.MAX_VALUE / 4;

    /** The wait's nanoseconds, saturated: a ticker reading plus the result never overflows. */
    static long saturatedNanos(Duration wait) {
        try {
            return Math.min(wait.toNanos(), MAX_WAIT_NANOS);
        } catch (ArithmeticException e) {
            return MAX_WAIT_NANOS;
        }
    }

    static Duration checkWait(Duration wait) {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
        return wait;
    }

    /**
     * Runs {@code a} and completes the returned future with its lease on a callback thread. Any
     * other completion of the future (the caller's cancel, completeExceptionally, orTimeout or
     * complete) abandons the attempt: a waiting acquisition is withdrawn, and a grant that lands
     * later is released.
     */
    static CompletableFuture<Lease> startAsync(EngineClient client, Acquisition a) {
        CompletableFuture<Lease> result = new CompletableFuture<>();
        CompletableFuture<?> unused = a.outcome()
                .whenCompleteAsync(
                        (granted, error) -> {
                            if (error != null) {
                                result.completeExceptionally(Acquisition.unwrap(error));
                            } else if (!result.complete(new EngineLease(granted))) {
                                // The caller gave up just as it was granted; a failed release ends with the lease.
                                CompletableFuture<Void> unusedRelease = granted.release();
                            }
                        },
                        client.callbacks);
        CompletableFuture<?> unusedToo = result.whenComplete((lease, error) -> {
            if (!(lease instanceof EngineLease l && l.acquisition() == a)) {
                a.cancel(new CancellationException("acquireAsync's future was completed by the caller"));
            }
        });
        client.begin(a);
        return result;
    }

    @Override
    public String toString() {
        return "DistributedLock[" + name + (mode == LockMode.EXCLUSIVE ? "" : " " + mode) + " on " + client.backendName
                + "]";
    }
}
