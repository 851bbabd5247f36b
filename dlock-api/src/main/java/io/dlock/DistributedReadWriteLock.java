package io.dlock;

/**
 * A pair of locks with one name: many holders of {@link #readLock()} at once, or one holder of
 * {@link #writeLock()}.
 *
 * <p>Thread-safety: safe for use from any thread.
 */
public interface DistributedReadWriteLock {

    /**
     * The name shared by both locks.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the name given to {@link LockClient#readWriteLock(String)}
     */
    String name();

    /**
     * The shared side.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return a lock that many clients may hold at once while no one holds the write lock
     */
    DistributedLock readLock();

    /**
     * The exclusive side.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return a lock that excludes every reader and every other writer
     */
    DistributedLock writeLock();
}
