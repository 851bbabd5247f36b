package io.dlock.core;

import io.dlock.LockClient;
import io.dlock.LockOptions;
import io.dlock.spi.LockBackend;
import java.util.Objects;

/**
 * For backend modules: wraps a connected {@link LockBackend} in the engine and returns the {@link
 * LockClient} users see. Applications call {@link LockClient#connect(String)} instead.
 *
 * <p>Thread-safety: stateless; safe from any thread.
 */
public final class LockEngine {
    private LockEngine() {}

    /**
     * Creates a client over {@code backend}. The client owns the backend and closes it.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: throws and closes
     * {@code backend}, so nothing is left open.
     *
     * @param backend a connected backend
     * @param options the client's options
     * @return the client
     * @throws IllegalArgumentException if {@link LockOptions#metricsRegistry()} is not a Micrometer
     *     {@code MeterRegistry}, or Micrometer is missing
     */
    public static LockClient newClient(LockBackend backend, LockOptions options) {
        return new EngineClient(Objects.requireNonNull(backend, "backend"), Objects.requireNonNull(options, "options"));
    }
}
