package io.dlock;

import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * The root of every exception dlock defines.
 *
 * <p><b>Exception policy:</b> everything dlock throws is unchecked, except {@link
 * InterruptedException} from blocking calls (dlock restores the interrupt flag before it ever turns
 * an interrupt into something else); misuse gets the JDK's {@link IllegalArgumentException} and
 * {@link IllegalMonitorStateException}; failures of the coordination server or its client library
 * become a {@link LockBackendException} with the original as the cause.
 *
 * <p>Every instance names the lock (when there is one) and the backend, and its message starts with
 * both, for example {@code lock 'orders' on zookeeper: not acquired within PT2S}.
 *
 * <p>Thread-safety: immutable.
 */
public class DistributedLockException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    private final @Nullable String lockName;
    private final String backend;

    /**
     * Creates an exception about one lock (or about the client, when {@code lockName} is null).
     *
     * @param lockName the lock concerned, or null when the failure concerns the whole client
     * @param backend the backend's name, such as {@code zookeeper}
     * @param detail what went wrong
     * @param cause the underlying failure, or null
     */
    public DistributedLockException(
            @Nullable String lockName, String backend, String detail, @Nullable Throwable cause) {
        super(describe(lockName, backend, detail), cause);
        this.lockName = lockName;
        this.backend = Objects.requireNonNull(backend, "backend");
    }

    /**
     * The lock this exception is about.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lock's name, or null when the failure concerns the whole client (for example a
     *     failed connect)
     */
    public @Nullable String lockName() {
        return lockName;
    }

    /**
     * The backend that raised this exception.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the backend's name, such as {@code zookeeper} or {@code redis}
     */
    public String backend() {
        return backend;
    }

    private static String describe(@Nullable String lockName, String backend, String detail) {
        String subject = lockName == null ? backend : "lock '" + lockName + "' on " + backend;
        return subject + ": " + detail;
    }
}
