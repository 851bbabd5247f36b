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
 * @param primitive what the workers take
 * @param readPercent for {@link Primitive#READ_WRITE}: the share of grants that are reads, 0 to 100
 * @param permits for {@link Primitive#SEMAPHORE}: the semaphore's permits (each worker takes one)
 * @param parts for {@link Primitive#MULTI}: how many names the multi-lock spans
 * @param checkValid whether workers check {@code Lease.isValid()} right before each write and skip
 *     it when the lease is no longer valid (what a careful user without fencing does)
 * @param library whose lock the workers take (dlock, or an anchor library for comparison)
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
        Duration restartMargin,
        Primitive primitive,
        int readPercent,
        int permits,
        int parts,
        boolean checkValid,
        Library library) {

    /** Default {@link #readPercent()}. */
    public static final int DEFAULT_READ_PERCENT = 50;
    /** Default {@link #parts()}. */
    public static final int DEFAULT_PARTS = 3;
    /** The most {@link #parts()}. */
    public static final int MAX_PARTS = 8;

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
        Objects.requireNonNull(primitive, "primitive");
        Objects.requireNonNull(library, "library");
        if (!library.primitives().contains(primitive)) {
            throw new IllegalArgumentException(
                    library.cliName() + " workers take " + library.primitivesText() + ", not " + primitive.cliName());
        }
        if (readPercent < 0 || readPercent > 100) {
            throw new IllegalArgumentException("readPercent must be 0 to 100, was " + readPercent);
        }
        if (permits < 1 || parts < 1 || parts > MAX_PARTS) {
            throw new IllegalArgumentException(
                    "permits must be >= 1 and parts 1 to " + MAX_PARTS + ", was " + permits + " and " + parts);
        }
    }

    /** An exclusive-lock run, as before primitives could be chosen. */
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
            int maxFaults,
            boolean backToBack,
            Duration downtimeMin,
            Duration downtimeMax,
            Duration restartMargin) {
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
                backToBack,
                downtimeMin,
                downtimeMax,
                restartMargin,
                Primitive.EXCLUSIVE,
                DEFAULT_READ_PERCENT,
                Math.max(1, workers - 1),
                DEFAULT_PARTS,
                false,
                Library.DLOCK);
    }

    /**
     * Returns a copy of this run for {@code primitive} with its settings.
     *
     * @param primitive what the workers take
     * @param readPercent the share of reads (read-write)
     * @param permits the semaphore's permits
     * @param parts the multi-lock's names
     * @return the copy
     */
    public TortureConfig with(Primitive primitive, int readPercent, int permits, int parts) {
        return new TortureConfig(
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
                backToBack,
                downtimeMin,
                downtimeMax,
                restartMargin,
                primitive,
                readPercent,
                permits,
                parts,
                checkValid,
                library);
    }

    /**
     * Returns a copy of this run whose workers check {@code isValid()} before each write, or not.
     *
     * @param check whether to check
     * @return the copy
     */
    public TortureConfig withCheckValid(boolean check) {
        return new TortureConfig(
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
                backToBack,
                downtimeMin,
                downtimeMax,
                restartMargin,
                primitive,
                readPercent,
                permits,
                parts,
                check,
                library);
    }

    /**
     * Returns a copy of this run whose workers take {@code lib}'s lock.
     *
     * @param lib whose lock
     * @return the copy
     * @throws IllegalArgumentException if {@code lib} is an anchor and the primitive is not exclusive
     */
    public TortureConfig withLibrary(Library lib) {
        return new TortureConfig(
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
                backToBack,
                downtimeMin,
                downtimeMax,
                restartMargin,
                primitive,
                readPercent,
                permits,
                parts,
                checkValid,
                lib);
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
