package io.dlock.cli.internal.torture;

import java.time.Duration;
import java.util.Objects;
import java.util.Set;

/**
 * What one {@code dlock torture} run does.
 *
 * @param uri {@code embedded} or a backend URI (see {@link BackendTargets})
 * @param workers how many worker JVMs take the lock, at least 2
 * @param duration how long faults are injected; the run adds start-up, the last recovery and
 *     the shutdown checks
 * @param faults the kinds to inject, possibly none
 * @param fenced whether the store refuses stale tokens
 * @param seed the seed of the fault schedule, so a run can be repeated
 * @param sessionTimeout the workers' session timeout (ZooKeeper) or lease time
 * @param recoveryMargin what recovery may take beyond {@code sessionTimeout}
 * @param workMs how long each critical section works, in milliseconds
 * @param maxFaults the most faults injected, whatever the duration
 * @param backToBack whether the next fault follows the quiet gap without waiting for the lock to
 *     recover from the last one (server restarts close together); recoveries are then read from the
 *     store's history after the schedule
 * @param downtimeMin the shortest time a restarted server stays down
 * @param downtimeMax the longest time a restarted server stays down
 * @param restartMargin what recovery after a server restart may take beyond the session timeout,
 *     counted from the moment the server serves again (so the bound from the kill is downtime +
 *     session timeout + this)
 */
public record TortureConfig(
        String uri,
        int workers,
        Duration duration,
        Set<FaultKind> faults,
        boolean fenced,
        long seed,
        Duration sessionTimeout,
        Duration recoveryMargin,
        long workMs,
        int maxFaults,
        boolean backToBack,
        Duration downtimeMin,
        Duration downtimeMax,
        Duration restartMargin) {

    /** Default for {@link #restartMargin()}: the bound issue 17 sets for every backend. */
    public static final Duration DEFAULT_RESTART_MARGIN = Duration.ofSeconds(1);

    /** Checks the ranges; the command has already reported bad options to the user. */
    public TortureConfig {
        Objects.requireNonNull(uri, "uri");
        faults = Set.copyOf(faults);
        if (workers < 2) {
            throw new IllegalArgumentException("workers must be >= 2, was " + workers);
        }
        if (duration.isNegative() || duration.isZero()) {
            throw new IllegalArgumentException("duration must be positive, was " + duration);
        }
        if (sessionTimeout.isNegative() || sessionTimeout.isZero()) {
            throw new IllegalArgumentException("sessionTimeout must be positive, was " + sessionTimeout);
        }
        if (recoveryMargin.isNegative()) {
            throw new IllegalArgumentException("recoveryMargin must be >= 0, was " + recoveryMargin);
        }
        if (workMs < 0 || maxFaults < 0) {
            throw new IllegalArgumentException("workMs and maxFaults must be >= 0");
        }
        Objects.requireNonNull(downtimeMin, "downtimeMin");
        Objects.requireNonNull(downtimeMax, "downtimeMax");
        Objects.requireNonNull(restartMargin, "restartMargin");
        if (downtimeMin.isNegative() || downtimeMax.compareTo(downtimeMin) < 0) {
            throw new IllegalArgumentException(
                    "downtime must be a range from >= 0, was " + downtimeMin + ".." + downtimeMax);
        }
        if (restartMargin.isNegative()) {
            throw new IllegalArgumentException("restartMargin must be >= 0, was " + restartMargin);
        }
    }

    /**
     * A run that waits for recovery after every fault, with restarts down for 0 to 1.5 session
     * timeouts and the default restart margin.
     */
    public TortureConfig(
            String uri,
            int workers,
            Duration duration,
            Set<FaultKind> faults,
            boolean fenced,
            long seed,
            Duration sessionTimeout,
            Duration recoveryMargin,
            long workMs,
            int maxFaults) {
        this(
                uri,
                workers,
                duration,
                faults,
                fenced,
                seed,
                sessionTimeout,
                recoveryMargin,
                workMs,
                maxFaults,
                false,
                Duration.ZERO,
                sessionTimeout.multipliedBy(3).dividedBy(2),
                DEFAULT_RESTART_MARGIN);
    }

    /**
     * Returns how long after a fault clears the lock must be usable again: session timeout plus
     * margin.
     *
     * @return the bound
     */
    public Duration recoveryBound() {
        return sessionTimeout.plus(recoveryMargin);
    }

    /**
     * Returns how long after a fault of {@code kind} clears the lock must be usable again: after a
     * server restart (cleared when the server serves again) session timeout plus {@link
     * #restartMargin()}, after the other faults {@link #recoveryBound()}.
     *
     * @param kind the fault
     * @return the bound
     */
    public Duration recoveryBound(FaultKind kind) {
        return kind == FaultKind.SERVER_RESTART ? sessionTimeout.plus(restartMargin) : recoveryBound();
    }
}
