package io.dlock;

/**
 * The calling thread was interrupted while waiting for a lock in a call that cannot throw the
 * checked {@link InterruptedException}, such as {@link LockClient#withLock}.
 *
 * <p>When this is thrown, the attempt has been withdrawn (no queue entry is left on the backend),
 * the action did not run, and the thread's interrupt flag is set again.
 *
 * <p>Thread-safety: immutable.
 */
public class LockInterruptedException extends DistributedLockException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param lockName the lock that was being waited for
     * @param backend the backend's name
     * @param cause the interrupt
     */
    public LockInterruptedException(String lockName, String backend, InterruptedException cause) {
        super(lockName, backend, "interrupted while waiting for the lock", cause);
    }
}
