package io.dlock.spring.boot.actuate;

import io.dlock.LockClient;
import io.dlock.spring.boot.internal.HealthCheck;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * Health of the lock backend, as actuator's {@code dlock} component, on Spring Boot 3.5 ({@code
 * org.springframework.boot.actuate.health}); on Spring Boot 4 the starter registers {@link
 * io.dlock.spring.boot.health.DLockHealthIndicator} instead, which reports the same.
 *
 * <p>Each call makes a cheap check only: whether the client is connected yet (a lazily connecting
 * client, {@code dlock.connect=lazy}, is DOWN with its last connection error until it is). The real
 * probe, one attempt without waiting ({@code acquireAsync(Duration.ZERO)}) on a reserved lock name
 * bounded by a timeout, is a write on the backend; it runs at most once per probe interval, and
 * the calls in between report its cached result (detail {@code probeAgeMillis}). The public API
 * has no connection-state accessor for a connected client, so that probe is the signal that a
 * connected backend went away.
 *
 * <p>The probe is UP when the backend answers: granted (and released at once) or refused because
 * another node's check holds the name. DOWN when the attempt fails (backend unreachable, client
 * closed) or no answer comes within the timeout; the attempt is then abandoned, leaving nothing
 * queued. Details name the backend and the URI with its secrets redacted.
 *
 * <p>Thread-safety: safe from any thread; one probe runs at a time, and concurrent calls wait for
 * it (with a {@link java.util.concurrent.locks.ReentrantLock}, which does not pin virtual threads).
 */
public final class DLockHealthIndicator implements HealthIndicator {
    private final HealthCheck check;

    /**
     * Creates an indicator that probes the backend on every call.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure:
     * {@link IllegalArgumentException} for an invalid lock name or a non-positive timeout.
     *
     * @param client the client to probe
     * @param lockName the reserved lock name the probe takes
     * @param timeout how long a check waits for the backend's answer
     */
    public DLockHealthIndicator(LockClient client, String lockName, Duration timeout) {
        this(client, lockName, timeout, Duration.ZERO, null, null);
    }

    /**
     * Creates the indicator.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure:
     * {@link IllegalArgumentException} for an invalid lock name, a non-positive timeout or a negative
     * probe interval.
     *
     * @param client the client to probe
     * @param lockName the reserved lock name the probe takes
     * @param timeout how long a probe waits for the backend's answer
     * @param probeInterval how long a probe's result is reported before the next probe; {@link
     *     Duration#ZERO} probes on every call
     * @param backend the backend's name for the details, or null to leave it out
     * @param redactedUri the backend URI without secrets for the details, or null to leave it out
     */
    public DLockHealthIndicator(
            LockClient client,
            String lockName,
            Duration timeout,
            Duration probeInterval,
            @Nullable String backend,
            @Nullable String redactedUri) {
        this.check = new HealthCheck(client, lockName, timeout, probeInterval, backend, redactedUri);
    }

    /**
     * Reports the backend's health: the connection state on every call, the probe at most once per
     * probe interval.
     *
     * <p>Blocking: while a lazy client's first connection attempt runs, up to the timeout; never
     * while it is not connected after that or a probe result is fresh; otherwise
     * up to the timeout (plus the release of a granted probe, at most the client's {@code
     * connectTimeout}), or as long as a concurrent call's probe. Thread-safety: safe from any
     * thread. On failure: never throws; a failure is reported as DOWN with the error.
     *
     * @return UP or DOWN, with the backend, the redacted URI and the client's capabilities
     */

    /**
     * Adds details read on every call, after the backend's (the starter adds the application's
     * leader elections).
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param details what to add
     * @return this indicator
     */
    public DLockHealthIndicator withDetails(java.util.function.Supplier<? extends java.util.Map<String, ?>> details) {
        check.addDetails(details);
        return this;
    }

    @Override
    public Health health() {
        HealthCheck.Report r = check.check();
        return Health.status(r.status()).withDetails(r.details()).build();
    }
}
