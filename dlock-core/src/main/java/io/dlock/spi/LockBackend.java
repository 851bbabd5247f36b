package io.dlock.spi;

import io.dlock.Capability;
import java.time.Duration;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * One connection to a coordination server, as the engine sees it.
 *
 * <p>Thread-safety: implementations must be safe for use from any thread.
 */
public interface LockBackend extends AutoCloseable {

    /**
     * The backend's short name, used in exceptions, logs and metrics.
     *
     * @return for example {@code zookeeper}
     */
    String name();

    /**
     * What this backend supports; the engine refuses the rest with a clear exception.
     *
     * @return an unmodifiable set
     */
    Set<Capability> capabilities();

    /**
     * The backend's queue protocol, for every mode its capabilities cover.
     *
     * @return the protocol, shared by every lock of this backend
     */
    LockProtocol protocol();

    /**
     * Registers the engine's listener for connection state changes. Called once, before any lock is
     * used. Events must be delivered in order, without blocking the client library's I/O.
     *
     * @param listener receives every state change
     */
    void onConnectionState(Consumer<ConnectionState> listener);

    /**
     * Registers the engine's listener for this client's grants that the server removed by force
     * (an operator's {@link LockInspector#forceRelease}), on backends whose server can tell the
     * holder at once (a watch, a published message, a notification). The engine turns the lease
     * that holds the entry invalid and runs its {@code onLost} listeners, as for a renewal that
     * found the grant gone. Called once, before any lock is used. A backend calls the listener
     * only for a grant of its own that was removed while it held it, never for its own release.
     *
     * <p>Blocking: never; the listener must be called without blocking the client library's I/O,
     * and never blocks itself. Thread-safety: safe from any thread. On failure: cannot fail; the
     * default ignores the listener, and such a holder finds the removal at its next renewal
     * ({@link LockInspector#holderNoticesForcedRelease()}).
     *
     * @param listener receives the removed entry (its lock name and key identify it)
     */
    default void onForcedRelease(Consumer<QueueEntry> listener) {}

    /**
     * How long the connection may stay {@link ConnectionState#SUSPENDED} before the engine must
     * assume grants are gone: the time during which the server is still guaranteed to keep them,
     * counted from the moment the client notices the drop.
     *
     * @return the safe suspension time
     */
    Duration maxSuspension();

    /**
     * The backend's operator view ({@code dlock inspect|release|watch}), if it offers one.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; a backend
     * without one returns empty.
     *
     * @return the inspector, or empty by default
     */
    default Optional<LockInspector> inspector() {
        return Optional.empty();
    }

    /**
     * The data-loss fence this client last saw in force, if it has not ended yet: nothing is granted
     * under its scope until it ends (see {@link DataLossFence}). The engine names it when a wait ends
     * without a grant; health checks report it.
     *
     * <p>Blocking: never (what the client's own replies reported; no request is sent). Thread-safety:
     * safe from any thread. On failure: cannot fail.
     *
     * @return the fence, or empty by default and for backends that keep no fence
     */
    default Optional<DataLossFence> dataLossFence() {
        return Optional.empty();
    }

    /** Closes the connection; entries tied to it are removed by the server. Idempotent. */
    @Override
    void close();
}
