package io.dlock.core;

import io.dlock.LockOptions;

/**
 * What the engine reports for metrics. The default records nothing; {@link MicrometerLockMetrics}
 * is loaded only when {@link LockOptions#metricsRegistry()} is set, so the engine runs without
 * Micrometer on the class path.
 */
interface LockMetrics {
    LockMetrics NONE = new LockMetrics() {};

    /** Why a lease was lost, as the {@code cause} tag says it. */
    enum LossCause {
        SESSION,
        SUSPENDED,
        STALL,
        EXPIRED,
        REMOVED;

        final String tag = name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Whether {@link #acquireEnded} wants to hear of acquisitions (so the engine can skip timing them). */
    default boolean timesAcquisitions() {
        return false;
    }

    /**
     * An acquisition's outcome is known.
     *
     * @param error null if granted
     */
    default void acquireEnded(Acquisition a, long nanos, Throwable error) {}

    default void leaseLost(Acquisition a, LossCause cause) {}

    default void renewal(Acquisition a, boolean ok) {}

    default void localHandOff(Acquisition a) {}

    /** The client closed. */
    default void close() {}

    /** Creates the hook the options ask for. */
    static LockMetrics of(LockOptions options, EngineClient client) {
        Object registry = options.metricsRegistry().orElse(null);
        if (registry == null) {
            return NONE;
        }
        try {
            return MicrometerLockMetrics.bind(registry, options.metricsPerLockName(), client);
        } catch (NoClassDefFoundError e) {
            throw new IllegalArgumentException(
                    "metricsRegistry needs Micrometer (io.micrometer:micrometer-core) on" + " the class path", e);
        }
    }
}
