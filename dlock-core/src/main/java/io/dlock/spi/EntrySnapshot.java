package io.dlock.spi;

import java.time.Duration;
import java.time.Instant;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * One entry of a lock's queue as an inspection saw it: a holder or a waiter.
 *
 * <p>Thread-safety: immutable.
 *
 * @param key the backend's address of the entry (a znode path, a key and entry id, a row id); what
 *     {@link LockInspector#forceRelease} takes
 * @param mode what the entry asks for or holds
 * @param permits the entry's permits ({@link LockMode#SEMAPHORE}); 1 otherwise
 * @param clientId the holding client as the backend knows it (a session id, a client id), or null
 *     where the backend does not record it
 * @param host the client's host name, or null where the backend does not record it
 * @param pid the client's process id, or -1 where the backend does not record it
 * @param connected whether the client is still connected to the server (a holder that is not will
 *     lose the grant when its session or lease ends), or null where the backend cannot tell
 * @param backendToken the backend's fencing token of a granted entry; 0 for a waiter or where the
 *     backend fixes no token before the grant
 * @param since when the entry was granted, or where the backend cannot tell, when it entered the
 *     queue (see {@link LockInspector}); null if unknown
 * @param leaseLeft how long the grant or wait lives without renewal (lease backends), or null where
 *     validity is tied to a session instead
 */
public record EntrySnapshot(
        String key,
        LockMode mode,
        int permits,
        @Nullable String clientId,
        @Nullable String host,
        long pid,
        @Nullable Boolean connected,
        long backendToken,
        @Nullable Instant since,
        @Nullable Duration leaseLeft) {

    /** How many bits the engine shifts a backend token by to make a lease's token. */
    private static final int LOCAL_BITS = 10;

    /** Checks the required components. */
    public EntrySnapshot {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(mode, "mode");
    }

    /**
     * The token the holder's {@code Lease.fencingToken()} reported at this grant: the backend's
     * token shifted left by ten bits (JVM-local hand-offs of the same grant add 1 each).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the lease's token, or 0 for a waiter
     */
    public long leaseToken() {
        return backendToken << LOCAL_BITS;
    }
}
