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
        int maxFaults) {

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
}
