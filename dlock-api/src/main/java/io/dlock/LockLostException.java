package io.dlock;

import org.jspecify.annotations.Nullable;

/**
 * A lease stopped being valid before it was closed: the backend can no longer promise mutual
 * exclusion (session expired, lease not renewed in time, connection lost beyond the safety margin,
 * or the client was closed).
 *
 * <p>Passed to {@link Lease#onLost} listeners and thrown by {@link Lease#checkValid()}. Work done
 * under the lease after this point may overlap with another holder; a resource that checks {@link
 * Lease#fencingToken()} will refuse it.
 *
 * <p>Thread-safety: immutable.
 */
public class LockLostException extends DistributedLockException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param lockName the lock whose lease was lost
     * @param backend the backend's name
     * @param reason why the lease is no longer valid
     * @param cause the underlying failure, or null
     */
    public LockLostException(String lockName, String backend, String reason, @Nullable Throwable cause) {
        super(lockName, backend, "lease lost: " + reason, cause);
    }
}
