package io.dlock;

import java.time.Duration;

/**
 * A lock, semaphore or multi-lock was not granted within the time the caller allowed.
 *
 * <p>When this is thrown, the attempt has been withdrawn: no queue entry is left on the backend.
 *
 * <p>Thread-safety: immutable.
 */
public class LockTimeoutException extends DistributedLockException {
    private static final long serialVersionUID = 1L;

    private final Duration wait;

    /**
     * Creates the exception.
     *
     * @param lockName the lock that was not granted
     * @param backend the backend's name
     * @param wait how long the caller allowed
     */
    public LockTimeoutException(String lockName, String backend, Duration wait) {
        super(lockName, backend, "not acquired within " + wait, null);
        this.wait = wait;
    }

    /**
     * Creates the exception with what held the grant back, when that is more than another holder
     * (for example a data-loss fence: the backend grants nothing until a lease after it lost its
     * data).
     *
     * @param lockName the lock that was not granted
     * @param backend the backend's name
     * @param wait how long the caller allowed
     * @param why what held the grant back, appended to the message
     */
    public LockTimeoutException(String lockName, String backend, Duration wait, String why) {
        super(lockName, backend, "not acquired within " + wait + ": " + why, null);
        this.wait = wait;
    }

    /**
     * How long the caller was prepared to wait.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the wait the acquisition was given
     */
    public Duration waitTime() {
        return wait;
    }
}
