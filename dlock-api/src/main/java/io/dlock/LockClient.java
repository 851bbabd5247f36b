package io.dlock;

import java.time.Duration;
import java.util.Collection;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * A connection to one coordination backend, handing out locks, read-write locks, semaphores,
 * multi-locks and leader elections. Create one per backend and share it:
 *
 * <pre>{@code
 * try (LockClient client = LockClient.connect("zookeeper://127.0.0.1:2181/myapp")) {
 *     DistributedLock lock = client.lock("orders");
 *     try (Lease lease = lock.acquire()) {
 *         store.write(order, lease.fencingToken());
 *     }
 * }
 * }</pre>
 *
 * <p>Handles returned by {@link #lock(String)} and the others with the same name share their state
 * within this client (one reentrancy count per thread and name).
 *
 * <p>Thread-safety: safe for use from any thread; one client is meant to be shared by the whole
 * application.
 */
public interface LockClient extends AutoCloseable {

    /**
     * Connects to the backend named by {@code uri} with {@link LockOptions#defaults()}.
     *
     * <p>Blocking: until connected or the connect timeout passes. Thread-safety: safe from any
     * thread. On failure: throws, and nothing stays open.
     *
     * @param uri for example {@code zookeeper://127.0.0.1:2181/myapp?sessionTimeout=10s}; see
     *     docs/api.md (options) and docs/backends/ for every backend's form and parameters
     * @return a connected client; close it when done
     * @throws IllegalArgumentException if the URI is malformed, has an unknown parameter, or its
     *     backend module is not on the classpath (the message names the module to add)
     * @throws LockBackendException if the server cannot be reached in time or refuses
     */
    static LockClient connect(String uri) {
        return connect(uri, LockOptions.defaults());
    }

    /**
     * Connects to the backend named by {@code uri}; parameters in the URI's query override {@code
     * options}.
     *
     * <p>Blocking: until connected or the connect timeout passes. Thread-safety: safe from any
     * thread. On failure: throws, and nothing stays open.
     *
     * @param uri the backend's URI
     * @param options the client's options
     * @return a connected client; close it when done
     * @throws IllegalArgumentException if the URI is malformed, has an unknown parameter, or its
     *     backend module is not on the classpath (the message names the module to add)
     * @throws LockBackendException if the server cannot be reached in time or refuses
     */
    static LockClient connect(String uri, LockOptions options) {
        return ProviderLookup.connect(uri, options);
    }

    /**
     * An exclusive, reentrant lock; FIFO where the backend can queue ({@link Capability#FAIR}).
     *
     * <p>Blocking: never (no server round trip until the lock is acquired). Thread-safety: safe
     * from any thread. On failure: throws, nothing created.
     *
     * @param name the lock's name: 1 to 200 characters from {@code A-Z a-z 0-9 _ - . :}, not {@code
     *     .} or {@code ..}
     * @return a handle to the lock
     * @throws IllegalArgumentException if the name is empty, too long, or has a character outside
     *     the alphabet
     * @throws IllegalStateException if the client is closed
     */
    DistributedLock lock(String name);

    /**
     * A read-write lock: many readers or one writer.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param name the lock's name (same rules as {@link #lock(String)})
     * @return a handle to the pair of locks
     * @throws IllegalArgumentException if the name is invalid
     * @throws UnsupportedOperationException if the backend lacks {@link Capability#READ_WRITE}
     */
    DistributedReadWriteLock readWriteLock(String name);

    /**
     * A counting semaphore with {@code permits} permits.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param name the semaphore's name (same rules as {@link #lock(String)})
     * @param permits the total number of permits, at least 1
     * @return a handle to the semaphore
     * @throws IllegalArgumentException if the name is invalid or {@code permits < 1}
     * @throws UnsupportedOperationException if the backend lacks {@link Capability#SEMAPHORE}
     */
    DistributedSemaphore semaphore(String name, int permits);

    /**
     * One lock over several names, granted all or nothing, acquired in a global order so that
     * overlapping multi-locks cannot deadlock.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws, nothing created.
     *
     * @param names the locks' names, at least one, no duplicates
     * @return a handle whose lease holds every named lock
     * @throws IllegalArgumentException if {@code names} is empty, has duplicates or an invalid name
     * @throws UnsupportedOperationException if the backend lacks {@link Capability#MULTI_LOCK}
     */
    DistributedLock multiLock(Collection<String> names);

    /**
     * Runs {@code action} while holding the lock {@code name}, then releases it.
     *
     * <p>Blocking: up to {@code wait} for the lock, then for as long as {@code action} runs.
     * Thread-safety: safe from any thread. On failure: the lock is released whatever the action
     * does; the action's unchecked exceptions propagate as they are, checked ones wrapped in a
     * {@link java.util.concurrent.CompletionException}.
     *
     * @param name the lock's name
     * @param wait how long to wait for the lock; {@link Duration#ZERO} makes one attempt
     * @param action the work to do under the lock
     * @param <T> the action's result type
     * @return what the action returned
     * @throws LockTimeoutException if the lock was not acquired within {@code wait}; the action did
     *     not run
     * @throws LockInterruptedException if the thread was interrupted while waiting for the lock; the
     *     attempt was withdrawn, the action did not run, and the interrupt flag is set again
     * @throws IllegalArgumentException if the name is invalid or {@code wait} is negative
     * @throws LockBackendException if the backend cannot be reached
     */
    <T> T withLock(String name, Duration wait, Callable<T> action);

    /**
     * A candidate of this client for the leader election {@code name}; see {@link LeaderElection}.
     * Each call makes a new candidate; several candidates of one client compete like candidates of
     * different clients.
     *
     * <p>An election is the backend's exclusive lock named {@code election:} followed by {@code
     * name}: lock names that start with {@code election:} are reserved for elections, so an election
     * {@code orders} never collides with the lock {@code orders}. The term's {@link
     * Lease#lockName()} is that reserved name.
     *
     * <p>Blocking: never (nothing is sent until {@link LeaderElection#start()}). Thread-safety: safe
     * from any thread. On failure: throws, nothing created. This default, for other implementations,
     * throws {@link UnsupportedOperationException}; every dlock backend overrides it.
     *
     * @param name the election's name (the rules of {@link #lock(String)}, at most 191 characters so
     *     that the reserved name fits)
     * @return a candidate, not yet started
     * @throws IllegalArgumentException if the name is invalid
     * @throws IllegalStateException if the client is closed
     * @throws UnsupportedOperationException if this client has no leader election
     */
    default LeaderElection leaderElection(String name) {
        throw new UnsupportedOperationException(
                "leader election is not available on " + getClass().getName());
    }

    /**
     * What this client's backend can do.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return an unmodifiable set of capabilities
     */
    Set<Capability> capabilities();

    /**
     * Releases every lease this client holds (their {@code onLost} listeners do not run), fails
     * pending acquisitions, and disconnects. Closing again does nothing.
     *
     * <p>Blocking: until the releases are sent and the connection is closed. Thread-safety: safe
     * from any thread. On failure: never throws; backend entries of a client whose server is
     * unreachable are removed by the backend's crash-release bound.
     */
    @Override
    void close();
}
