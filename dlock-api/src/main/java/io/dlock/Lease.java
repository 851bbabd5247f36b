package io.dlock;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.function.Consumer;

/**
 * One grant of a lock, a semaphore's permits or a multi-lock. Close it to release:
 *
 * <pre>{@code
 * try (Lease lease = client.lock("orders").acquire()) {
 *     store.write(order, lease.fencingToken());
 * }
 * }</pre>
 *
 * <p>A lease is valid from the grant until it is closed or lost. A lease obtained by a blocking
 * call ({@link DistributedLock#acquire()}, {@link DistributedLock#tryAcquire}) belongs to the thread
 * that acquired it, and a re-entry by that thread returns a nested lease that shares its grant. A
 * lease obtained with {@link DistributedLock#acquireAsync} belongs to itself and may be closed from
 * any thread.
 *
 * <p>Thread-safety: every method is safe from any thread, except that {@link #close()} of a
 * thread-owned lease must come from its owner thread.
 */
public interface Lease extends AutoCloseable {

    /**
     * The name of the lock (or semaphore) this lease grants.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lock's name as given to {@link LockClient#lock(String)}
     */
    String lockName();

    /**
     * The fencing token of this grant: strictly greater than the token of every earlier grant of the
     * same lock name, across all clients and client restarts. Pass it to the resource you protect and
     * have the resource refuse tokens lower than the highest it has seen. Nested reentrant leases
     * share their outer lease's token.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; the token
     * stays readable after the lease is closed or lost.
     *
     * @return the token, a positive number
     */
    long fencingToken();

    /**
     * Whether the backend still guarantees this grant. False once the lease is closed or lost; a
     * lease never becomes valid again.
     *
     * <p>Blocking: never (no server round trip). Thread-safety: safe from any thread. On failure:
     * cannot fail.
     *
     * @return true while the grant is held and guaranteed
     */
    boolean isValid();

    /**
     * Throws if this lease is no longer valid; call it before each step of long work.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, changes nothing.
     *
     * @throws LockLostException if the lease was lost or has been closed
     */
    void checkValid();

    /**
     * Registers a listener that runs once when this lease is lost (not when it is closed
     * normally). Listeners run on the client's own listener thread, which runs nothing else: users'
     * continuations of {@code acquireAsync} futures (which run on the callback pool) cannot delay
     * them. The listeners of all leases of one client run one after another on that thread, so a
     * listener should return quickly and hand long work to an executor of its own. If the lease is
     * already lost, the listener runs at once, on the calling thread. A listener that throws, even
     * an {@link Error}, is logged and does not affect other listeners.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: a null listener is an
     * {@link NullPointerException}, nothing registered.
     *
     * @param listener receives the reason the lease was lost
     * @return this lease
     */
    Lease onLost(Consumer<LockLostException> listener);

    /**
     * Releases the grant. Closing a nested reentrant lease only decrements the hold count; the lock
     * is released when the last lease of the hold is closed. Closing again does nothing.
     *
     * <p>Blocking: until the backend confirms the release or the client's connect timeout passes;
     * after that the release is retried in the background until the backend entry is gone or its
     * session has ended. Thread-safety: a thread-owned lease only from its owner thread; an async
     * lease from any thread. On failure: never throws for backend failures (the lease is invalid
     * either way).
     *
     * @throws IllegalMonitorStateException if a thread other than the owner closes a thread-owned
     *     lease; the lock stays held
     */
    @Override
    void close();

    /**
     * Releases the grant as {@link #close()} does, without waiting for the backend: for a caller
     * that has nothing to do once the release is confirmed. The lease is invalid when this returns;
     * the stage completes once the release has ended, confirmed by the backend or, after a failure,
     * left to the background retry that {@link #close()} leaves it to. Closing a nested reentrant
     * lease only decrements the hold count and returns a completed stage; so does closing again. A
     * client's {@link LockClient#close()} waits for the releases still in flight.
     *
     * <p>Blocking: dlock's leases never wait for the backend here, and send the release from the
     * client's own threads (this default, for other implementations, calls {@link #close()}).
     * Thread-safety: as {@link #close()}. On failure: the stage never completes exceptionally for
     * backend failures (the lease is invalid either way); completing the returned stage yourself
     * changes nothing.
     *
     * @return a stage that completes, with null, once the release has ended
     * @throws IllegalMonitorStateException if a thread other than the owner closes a thread-owned
     *     lease; the lock stays held
     */
    default CompletionStage<Void> closeAsync() {
        close();
        return CompletableFuture.completedFuture(null);
    }
}
