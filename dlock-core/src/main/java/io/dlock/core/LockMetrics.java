package io.dlock.core;

import io.dlock.LockOptions;
import io.dlock.LockTimeoutException;
import io.dlock.spi.LockMode;
import java.util.concurrent.CancellationException;
import org.jspecify.annotations.Nullable;

/**
 * What the engine reports for metrics and observations. The default records nothing; {@link
 * MicrometerLockMetrics} is loaded only when {@link LockOptions#metricsRegistry()} is set and
 * {@link ObservationLockMetrics} only when {@link LockOptions#observationRegistry()} is, so the
 * engine runs without Micrometer on the class path.
 */
interface LockMetrics {
    LockMetrics NONE = new LockMetrics() {};

    /** Why a lease was lost, as the {@code cause} tag says it. */
    enum LossCause {
        SESSION,
        SUSPENDED,
        STALL,
        EXPIRED,
        REMOVED,
        /** An operator removed the grant ({@code dlock release --force}) and the server told us. */
        FORCED;

        final String tag = name().toLowerCase(java.util.Locale.ROOT);
    }

    /** Whether {@link #acquireEnded} wants to hear of acquisitions (so the engine can skip timing them). */
    default boolean timesAcquisitions() {
        return false;
    }

    /**
     * An acquisition starts, on the calling thread (so an observation started here is a child of
     * the caller's current one). Called only when {@link #timesAcquisitions()}.
     *
     * @return what {@link #acquireEnded} gets back as {@code started}, or null
     */
    default @Nullable Object acquireStarted(Acquisition a) {
        return null;
    }

    /**
     * An acquisition's outcome is known (on whichever thread completed it).
     *
     * @param error null if granted
     * @param started what {@link #acquireStarted} returned for it
     */
    default void acquireEnded(Acquisition a, long nanos, @Nullable Throwable error, @Nullable Object started) {}

    default void leaseLost(Acquisition a, LossCause cause) {}

    default void renewal(Acquisition a, boolean ok) {}

    default void localHandOff(Acquisition a) {}

    /** How a term of this client's candidate ended, as the {@code event} tag of {@code dlock.leader.terms} says it. */
    enum TermEnd {
        /** The backend could no longer promise the term (the lease was lost). */
        LOST,
        /** The application closed the term; the candidate rejoined. */
        GIVEN_UP,
        /** The election or the client closed. */
        CLOSED;

        final String tag = name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
    }

    /** A candidate started: its {@code dlock.leader} gauge appears. */
    default void electionStarted(EngineLeaderElection election) {}

    /** A candidate closed: its gauge goes. */
    default void electionClosed(EngineLeaderElection election) {}

    /** The candidate was elected. */
    default void termBegan(EngineLeaderElection election) {}

    /** The candidate's term ended after {@code nanos}. */
    default void termEnded(EngineLeaderElection election, TermEnd how, long nanos) {}

    /** The client closed. */
    default void close() {}

    int ACQUIRED = 0;
    int TIMEOUT = 1;
    int ERROR = 2;
    int CANCELLED = 3;
    /** How many outcomes {@link #outcomeOf} tells apart. */
    int OUTCOME_COUNT = 4;

    /** The {@code outcome} tag value of {@code dlock.acquire} for an index of {@link #outcomeOf}. */
    static String outcomeTag(int outcome) {
        return switch (outcome) {
            case ACQUIRED -> "acquired";
            case TIMEOUT -> "timeout";
            case ERROR -> "error";
            case CANCELLED -> "cancelled";
            default -> throw new IllegalArgumentException("outcome " + outcome);
        };
    }

    /** The outcome index of an acquisition that ended with {@code error} (null: acquired). */
    static int outcomeOf(@Nullable Throwable error) {
        if (error == null) {
            return ACQUIRED;
        }
        Throwable e = Acquisition.unwrap(error);
        if (e instanceof LockTimeoutException) {
            return TIMEOUT;
        }
        if (e instanceof CancellationException
                || (e instanceof IllegalStateException
                        && String.valueOf(e.getMessage()).contains("closed"))) {
            return CANCELLED;
        }
        return ERROR;
    }

    /** The {@code kind} tag value of a lock mode. */
    static String kindOf(LockMode mode) {
        return switch (mode) {
            case EXCLUSIVE -> "lock";
            case READ -> "read";
            case WRITE -> "write";
            case SEMAPHORE -> "semaphore";
        };
    }

    /**
     * Creates the hook the options ask for: Micrometer meters, observations, or both (then the
     * acquire timer is left to the observation registry's handlers, so that it is not recorded
     * twice under one name). Each binding is loaded only when asked for, so the engine runs without
     * Micrometer, and observations alone need only {@code micrometer-observation}.
     */
    static LockMetrics of(LockOptions options, EngineClient client) {
        Object meters = options.metricsRegistry().orElse(null);
        Object observations = options.observationRegistry().orElse(null);
        LockMetrics observing = NONE;
        if (observations != null) {
            try {
                observing = ObservationLockMetrics.bind(observations, options.observationsPerLockName(), client);
            } catch (NoClassDefFoundError e) {
                throw new IllegalArgumentException(
                        "observationRegistry needs Micrometer's observation API (io.micrometer:micrometer-observation)"
                                + " on the class path",
                        e);
            }
        }
        if (meters == null) {
            return observing;
        }
        try {
            return MicrometerLockMetrics.bind(meters, options.metricsPerLockName(), client, observing);
        } catch (NoClassDefFoundError e) {
            throw new IllegalArgumentException(
                    "metricsRegistry needs Micrometer (io.micrometer:micrometer-core) on" + " the class path", e);
        }
    }
}
