package io.dlock.spring.boot.annotation;

/**
 * What a {@link DistributedLock @DistributedLock} method does when the lock is not acquired in time.
 *
 * <p>Thread-safety: immutable.
 */
public enum OnTimeout {
    /** Throw {@link io.dlock.LockTimeoutException} (an async method's stage fails with it); the method does not run. */
    THROW,
    /**
     * Do not run the method and return {@code null}, {@code Optional.empty()} for an {@code Optional}
     * return type, or a stage completed with {@code null} for an async method. Not allowed on methods
     * returning a primitive (a startup error).
     */
    SKIP
}
