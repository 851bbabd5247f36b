package io.dlock.core;

import io.dlock.DistributedLock;
import io.dlock.Lease;
import io.dlock.LockTimeoutException;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;

/**
 * The exclusive lock handle. Stateless apart from its name: holds live in the client, keyed by
 * name and thread, so every handle of one name in one client shares them.
 */
final class EngineLock implements DistributedLock {
    private final EngineClient client;
    private final String name;

    EngineLock(EngineClient client, String name) {
        this.client = client;
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public Lease acquire() throws InterruptedException {
        return acquireBlocking(null).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(Duration wait) throws InterruptedException {
        return acquireBlocking(checkWait(wait));
    }

    private Optional<Lease> acquireBlocking(Duration wait) throws InterruptedException {
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring lock '" + name + "'");
        }
        Thread me = Thread.currentThread();
        Acquisition held = client.heldBy(name, me);
        if (held != null) {
            if (held.reenter()) {
                return Optional.of(new EngineLease(held));
            }
            if (held.state() == LockState.LOST) {
                client.onEnded(held);
                EngineLease.awaitRelease(held.cleanupAfterLoss(), client);
            }
        }
        Acquisition a = client.newAcquisition(name, me, wait);
        a.start();
        try {
            return Optional.of(new EngineLease(a.await()));
        } catch (LockTimeoutException e) {
            return Optional.empty();
        }
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(Duration wait) {
        Acquisition a = client.newAcquisition(name, null, checkWait(wait));
        CompletableFuture<Lease> result = new CompletableFuture<>();
        a.outcome.whenCompleteAsync(
                (granted, error) -> {
                    if (error != null) {
                        result.completeExceptionally(Acquisition.unwrap(error));
                    } else if (!result.complete(new EngineLease(granted))) {
                        granted.release(); // cancelled by the user just as it was granted
                    }
                },
                client.callbacks);
        result.whenComplete((lease, error) -> {
            if (result.isCancelled()) {
                a.cancel(new CancellationException("acquireAsync cancelled"));
            }
        });
        a.start();
        return result;
    }

    @Override
    public boolean isHeldByCurrentThread() {
        Acquisition held = client.heldBy(name, Thread.currentThread());
        return held != null && held.isValid();
    }

    @Override
    public Lock asJavaLock() {
        return new JavaLockView(this, client);
    }

    static Duration checkWait(Duration wait) {
        Objects.requireNonNull(wait, "wait");
        if (wait.isNegative()) {
            throw new IllegalArgumentException("wait must not be negative: " + wait);
        }
        return wait;
    }

    @Override
    public String toString() {
        return "DistributedLock[" + name + " on " + client.backendName + "]";
    }
}
