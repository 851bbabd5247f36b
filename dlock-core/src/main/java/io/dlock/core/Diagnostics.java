package io.dlock.core;

import io.dlock.LockClient;
import io.dlock.spi.DataLossFence;
import io.dlock.spi.LockInspector;
import java.util.Optional;

/**
 * What a {@link LockClient} made by dlock can tell about its backend beyond the public API, for
 * health checks, tools and tests: whether its connection is down, a data-loss fence in force, and
 * the backend's operator view. A client dlock did not make (a user's own implementation) answers
 * "unknown": false and empty.
 *
 * <p>Thread-safety: every method is safe from any thread and never blocks.
 */
public final class Diagnostics {
    private Diagnostics() {}

    /**
     * Whether the client knows its connection to the backend is down (suspended and reconnecting): a
     * cheap signal that sends nothing.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client a client from {@link LockClient#connect}
     * @return true while the backend reported the connection suspended and not yet back; false also
     *     for clients dlock did not make
     */
    public static boolean connectionDown(LockClient client) {
        return client instanceof EngineClient e && e.isConnectionDown();
    }

    /**
     * The backend's data-loss fence in force, as the client's own replies reported it (see {@link
     * io.dlock.spi.LockBackend#dataLossFence()}).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client a client from {@link LockClient#connect}
     * @return the fence, or empty when none is known to be in force
     */
    public static Optional<DataLossFence> dataLossFence(LockClient client) {
        return client instanceof EngineClient e ? e.dataLossFence() : Optional.empty();
    }

    /**
     * The backend's operator view, for tools and tests that act on the server's records directly
     * (listing locks and fences, marking a new deployment).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param client a client from {@link LockClient#connect}
     * @return the inspector, or empty where the backend offers none
     */
    public static Optional<LockInspector> inspector(LockClient client) {
        return client instanceof EngineClient e ? e.inspector() : Optional.empty();
    }
}
