package io.dlock;

import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.Lock;

/**
 * An exclusive, reentrant lock shared by every client of the same backend and namespace that uses
 * the same name. Obtain one with {@link LockClient#lock(String)}; the handle is cheap and holds no
 * server resources until it is acquired.
 *
 * <p>Reentrancy is per thread for blocking acquisitions: a thread that holds the lock may acquire
 * it again without a server round trip, and the lock is released when its outermost lease closes.
 * Asynchronous acquisitions are owned by their lease, not by a thread, and never re-enter.
 *
 * <p>Thread-safety: safe for use from any thread; many threads may share one handle.
 */
public interface DistributedLock {

    /**
     * The lock's name.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name given to {@link LockClient#lock(String)}
     */
    String name();

    /**
     * Acquires the lock, waiting as long as it takes.
     *
     * <p>Blocking: until granted, interrupted, or the backend fails. Thread-safety: safe from any
     * thread; the lease belongs to the calling thread. On failure: the attempt is withdrawn and no
     * queue entry is left behind.
     *
     * @return the lease; close it to release
     * @throws InterruptedException if the thread is interrupted while waiting; nothing is held
     * @throws LockBackendException if the backend cannot be reached or refuses; nothing is held
     * @throws IllegalStateException if the client is closed
     */
    Lease acquire() throws InterruptedException;

    /**
     * Acquires the lock if it can be granted within {@code wait}.
     *
     * <p>Blocking: up to {@code wait} (plus one backend round trip to withdraw). Thread-safety: safe
     * from any thread; the lease belongs to the calling thread. On failure or timeout: the attempt is
     * withdrawn and no queue entry is left behind.
     *
     * @param wait how long to wait; {@link Duration#ZERO} makes one attempt without waiting
     * @return the lease, or empty if the lock was not granted in time
     * @throws IllegalArgumentException if {@code wait} is negative; nothing is attempted
     * @throws InterruptedException if the thread is interrupted while waiting; nothing is held
     * @throws LockBackendException if the backend cannot be reached or refuses; nothing is held
     * @throws IllegalStateException if the client is closed
     */
    Optional<Lease> tryAcquire(Duration wait) throws InterruptedException;

    /**
     * Starts acquiring the lock without blocking the caller. No thread is parked while waiting: the
     * backend's notification completes the future, on one of the client's callback threads.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread; the lease is owned by itself (no
     * reentrancy; it may be closed from any thread). On failure: the future completes exceptionally
     * with {@link LockTimeoutException} when {@code wait} passes, or {@link LockBackendException}.
     * Any completion of the returned future by the caller ({@code cancel}, {@code
     * completeExceptionally}, {@code orTimeout}, {@code complete}) abandons the attempt: it is
     * withdrawn, and a grant that raced with it is released. In every case no queue entry is left
     * behind. Continuations attached with non-{@code Async} methods run on the client's callback
     * pool ({@link LockOptions#callbackThreads()}); blocking there delays other callers' completions,
     * never {@code onLost} listeners.
     *
     * @param wait how long to wait; {@link Duration#ZERO} makes one attempt
     * @return a future of the lease
     * @throws IllegalArgumentException if {@code wait} is negative; nothing is attempted
     * @throws IllegalStateException if the client is closed
     */
    CompletableFuture<Lease> acquireAsync(Duration wait);

    /**
     * Whether the calling thread holds this lock through a blocking acquisition whose lease is still
     * valid.
     *
     * <p>Blocking: never (no server round trip). Thread-safety: safe from any thread. On failure:
     * cannot fail.
     *
     * @return true if the current thread holds a valid lease of this lock
     */
    boolean isHeldByCurrentThread();

    /**
     * A {@link Lock} view of this lock for code written against {@code java.util.concurrent}:
     * {@code lock()}, {@code lockInterruptibly()}, {@code tryLock()}, {@code tryLock(time, unit)}
     * and {@code unlock()}, owned by the calling thread and reentrant like {@link #acquire()}. {@code
     * newCondition()} throws {@link UnsupportedOperationException}.
     *
     * <p>Blocking: never (the view itself). Thread-safety: safe from any thread. On failure: the
     * view's methods throw {@link LockBackendException} for backend failures and {@link
     * IllegalMonitorStateException} from {@code unlock()} by a thread that does not hold the lock.
     *
     * @return a view sharing this lock's state
     */
    Lock asJavaLock();
}
