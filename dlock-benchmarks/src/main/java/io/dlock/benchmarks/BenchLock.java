package io.dlock.benchmarks;

/**
 * One lock of one implementation under test, reduced to what every workload needs: acquire
 * (blocking) and release what was acquired.
 *
 * <p>Thread-safety: implementations are safe from any thread. Locks that are owned by a thread
 * (dlock's reentrant locks, Curator's {@code InterProcessMutex}, Redisson's {@code RLock}) must be
 * released by the thread that acquired them, and every workload does so.
 */
public interface BenchLock {

    /**
     * Acquires the lock, waiting as long as it takes.
     *
     * <p>Blocking: until granted. Thread-safety: safe from any thread. On failure: an unchecked
     * exception from the implementation (wrapped if it was checked); nothing is held.
     *
     * @return what to release
     * @throws InterruptedException if interrupted while waiting; nothing is held
     */
    Held acquire() throws InterruptedException;

    /**
     * A lock that implements {@link java.util.concurrent.locks.Lock} (Redisson's {@code RLock},
     * Spring Integration's registries): acquire is {@code lockInterruptibly()}, release {@code
     * unlock()}.
     *
     * <p>Blocking: no (the returned lock's {@link #acquire()} blocks). Thread-safety: as {@code
     * lock}. On failure: nothing to fail.
     *
     * @param lock the lock to adapt
     * @return the adapted lock
     */
    static BenchLock of(java.util.concurrent.locks.Lock lock) {
        Held held = lock::unlock;
        return () -> {
            lock.lockInterruptibly();
            return held;
        };
    }

    /** What one successful {@link #acquire()} holds. Thread-safety: release from the acquiring thread. */
    interface Held {
        /**
         * Releases the lock.
         *
         * <p>Blocking: until the server confirmed (for every implementation here). Thread-safety:
         * the acquiring thread only. On failure: an unchecked exception; the server-side entry
         * then ends with the session or lease.
         */
        void release();
    }
}
