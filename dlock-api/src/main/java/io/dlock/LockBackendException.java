package io.dlock;

import org.jspecify.annotations.Nullable;

/**
 * The coordination server could not be reached, refused a request, or its client library failed.
 * The original exception (from Curator, Lettuce, JDBC, jetcd, ...) is the cause.
 *
 * <p>When an acquisition fails with this exception, the attempt has been withdrawn, or is being
 * withdrawn in the background where the server is unreachable; it is never reported as held.
 *
 * <p>Thread-safety: immutable.
 */
public class LockBackendException extends DistributedLockException {
    private static final long serialVersionUID = 1L;

    /**
     * Creates the exception.
     *
     * @param lockName the lock concerned, or null when the failure concerns the whole client
     * @param backend the backend's name
     * @param detail what failed
     * @param cause the client library's exception, or null
     */
    public LockBackendException(@Nullable String lockName, String backend, String detail, @Nullable Throwable cause) {
        super(lockName, backend, detail, cause);
    }
}
