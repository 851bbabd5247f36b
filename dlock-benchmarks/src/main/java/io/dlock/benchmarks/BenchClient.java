package io.dlock.benchmarks;

/**
 * One connection of one implementation under test: a dlock {@code LockClient}, a Curator
 * framework, a Redisson client, or a bare ZooKeeper handle or Lettuce connection.
 *
 * <p>Thread-safety: safe from any thread, as the underlying clients are.
 */
public interface BenchClient extends AutoCloseable {

    /**
     * Returns the lock {@code name} of this client. Handles are cheap but not free (Curator and
     * Redisson allocate per handle), so workloads create them once, outside the measured loop.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: an unchecked exception
     * for a name the implementation refuses.
     *
     * @param name a lock name valid for every implementation ({@code [A-Za-z0-9_-]})
     * @return the lock
     */
    BenchLock lock(String name);

    /**
     * Closes the connection; locks still held end with it.
     *
     * <p>Blocking: until closed. Thread-safety: safe from any thread; idempotent. On failure:
     * never throws.
     */
    @Override
    void close();
}
