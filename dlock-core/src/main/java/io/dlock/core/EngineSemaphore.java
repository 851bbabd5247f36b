package io.dlock.core;

import io.dlock.DistributedSemaphore;
import io.dlock.Lease;
import io.dlock.LockTimeoutException;
import io.dlock.spi.LockMode;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import org.jspecify.annotations.Nullable;

/**
 * A counting semaphore. Its leases own themselves (like {@link java.util.concurrent.Semaphore}
 * permits, they may be returned from any thread) and never re-enter: each acquisition takes its own
 * permits.
 */
final class EngineSemaphore implements DistributedSemaphore {
    private final EngineClient client;
    private final String name;
    private final int permits;

    EngineSemaphore(EngineClient client, String name, int permits) {
        this.client = client;
        this.name = name;
        this.permits = permits;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    public int permits() {
        return permits;
    }

    @Override
    public Lease acquire(int count) throws InterruptedException {
        return take(count, null).orElseThrow();
    }

    @Override
    public Optional<Lease> tryAcquire(int count, Duration wait) throws InterruptedException {
        return take(count, EngineLock.checkWait(wait));
    }

    @Override
    public CompletableFuture<Lease> acquireAsync(int count, Duration wait) {
        checkCount(count);
        Acquisition a = client.newAcquisition(
                name, LockMode.SEMAPHORE, count, permits, null, false, EngineLock.checkWait(wait));
        return EngineLock.startAsync(client, a);
    }

    private void checkCount(int count) {
        if (count < 1 || count > permits) {
            throw new IllegalArgumentException("semaphore '" + name + "' on " + client.backendName + ": cannot take "
                    + count + " permits; it has " + permits);
        }
    }

    private Optional<Lease> take(int count, @Nullable Duration wait) throws InterruptedException {
        checkCount(count);
        if (Thread.interrupted()) {
            throw new InterruptedException("interrupted before acquiring semaphore '" + name + "'");
        }
        Acquisition a = client.newAcquisition(name, LockMode.SEMAPHORE, count, permits, null, false, wait);
        a.start();
        try {
            return Optional.of(new EngineLease(a.await(true)));
        } catch (LockTimeoutException e) {
            return Optional.empty();
        }
    }

    @Override
    public String toString() {
        return "DistributedSemaphore[" + name + ", " + permits + " permits on " + client.backendName + "]";
    }
}
