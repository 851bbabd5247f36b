package io.dlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;

/**
 * A counting semaphore shared across clients: at most {@link #permits()} permits are leased at a
 * time. A holder that dies gives its permits back within the backend's crash-release bound.
 *
 * <p>Thread-safety: safe for use from any thread.
 */
public interface DistributedSemaphore {

    /**
     * The semaphore's name.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name given to {@link LockClient#semaphore(String, int)}
     */
    String name();

    /**
     * The total number of permits.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the number of permits the semaphore was created with
     */
    int permits();

    /**
     * Takes {@code permits} permits, waiting as long as it takes.
     *
     * <p>Blocking: until granted. Thread-safety: safe from any thread. On failure: nothing is held
     * and no queue entry is left behind.
     *
     * @param permits how many permits to take, from 1 to {@link #permits()}
     * @return one lease for all the permits taken
     * @throws IllegalArgumentException if {@code permits} is not between 1 and {@link #permits()}
     * @throws InterruptedException if interrupted while waiting; nothing is held
     * @throws LockBackendException if the backend cannot be reached; nothing is held
     */
    Lease acquire(int permits) throws InterruptedException;

    /**
     * Takes {@code permits} permits if they can be granted within {@code wait}.
     *
     * <p>Blocking: up to {@code wait}. Thread-safety: safe from any thread. On failure or timeout:
     * nothing is held and no queue entry is left behind.
     *
     * @param permits how many permits to take, from 1 to {@link #permits()}
     * @param wait how long to wait; {@link Duration#ZERO} makes one attempt
     * @return the lease, or empty if not granted in time
     * @throws IllegalArgumentException if {@code permits} is out of range or {@code wait} is negative
     * @throws InterruptedException if interrupted while waiting; nothing is held
     * @throws LockBackendException if the backend cannot be reached; nothing is held
     */
    Optional<Lease> tryAcquire(int permits, Duration wait) throws InterruptedException;

    /**
     * Starts taking {@code permits} permits without parking the calling thread, with the same
     * queueing and give-up rules as {@link #tryAcquire(int, Duration)}. The lease is owned by no
     * thread (like every semaphore lease): it may be closed from any thread.
     *
     * <p>Completing the returned future yourself ({@code cancel}, {@code complete}, {@code
     * orTimeout}) withdraws the attempt: a waiting request leaves the queue, and a grant that lands
     * afterwards is released, so nothing stays held.
     *
     * <p>Blocking: never; the future completes on the client's callback thread, so continuations
     * that block should move to an executor of their own. Thread-safety: safe from any thread. On
     * failure: the future fails with {@link LockTimeoutException} when not granted within {@code
     * wait}, with {@link LockBackendException} when the backend cannot be reached, or with {@link
     * java.util.concurrent.CancellationException} when the client closes first; nothing is held and
     * no queue entry is left behind.
     *
     * <p>The default implementation returns a failed future with {@link
     * UnsupportedOperationException}; every semaphore dlock returns overrides it.
     *
     * @param permits how many permits to take, from 1 to {@link #permits()}
     * @param wait how long to wait; {@link Duration#ZERO} makes one attempt
     * @return a future of one lease for all the permits taken
     * @throws IllegalArgumentException if {@code permits} is out of range or {@code wait} is negative
     *     (thrown, not put in the future: nothing was started)
     */
    default CompletableFuture<Lease> acquireAsync(int permits, Duration wait) {
        return CompletableFuture.failedFuture(
                new UnsupportedOperationException(getClass().getName() + " has no asynchronous acquire"));
    }
}
