package io.dlock.spring.boot.actuate;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * Health of the lock backend, as actuator's {@code dlock} component: one attempt without waiting
 * ({@code acquireAsync(Duration.ZERO)}) on a reserved lock name, bounded by a timeout.
 *
 * <p>UP when the backend answers: granted (and released at once) or refused because another node's
 * check holds the name. DOWN when the attempt fails (backend unreachable, client closed) or no answer
 * comes within the timeout; the attempt is then abandoned, leaving nothing queued. The public API has
 * no connection-state accessor, so this probe is the signal.
 *
 * <p>Thread-safety: safe from any thread; concurrent checks each make their own attempt.
 */
public final class DLockHealthIndicator implements HealthIndicator {
    private final LockClient client;
    private final String lockName;
    private final Duration timeout;

    /**
     * Creates the indicator.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure:
     * {@link IllegalArgumentException} for an invalid lock name or a non-positive timeout.
     *
     * @param client the client to probe
     * @param lockName the reserved lock name the probe takes
     * @param timeout how long a check waits for the backend's answer
     */
    public DLockHealthIndicator(LockClient client, String lockName, Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("dlock.health.timeout must be positive: " + timeout);
        }
        client.lock(lockName); // validates the name now rather than at the first check
        this.client = client;
        this.lockName = lockName;
        this.timeout = timeout;
    }

    /**
     * Probes the backend.
     *
     * <p>Blocking: up to the timeout (plus the release of a granted probe, at most the client's
     * {@code connectTimeout}). Thread-safety: safe from any thread. On failure: never throws; a
     * failure is reported as DOWN with the error.
     *
     * @return UP or DOWN, with the client's capabilities
     */
    @Override
    public Health health() {
        long start = System.nanoTime();
        CompletableFuture<Lease> probe;
        try {
            probe = client.lock(lockName).acquireAsync(Duration.ZERO);
        } catch (RuntimeException e) {
            return Health.down(e).build();
        }
        try {
            Lease lease = probe.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            lease.close();
            return up(start).withDetail("probe", "granted").build();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof LockTimeoutException) {
                return up(start).withDetail("probe", "held by another client").build();
            }
            return Health.down().withException(e.getCause()).build();
        } catch (TimeoutException e) {
            probe.cancel(false);
            return Health.down()
                    .withDetail("error", "no answer from the backend within " + timeout)
                    .build();
        } catch (InterruptedException e) {
            probe.cancel(false);
            Thread.currentThread().interrupt();
            return Health.unknown().withDetail("error", "interrupted").build();
        } catch (RuntimeException e) {
            return Health.down(e).build();
        }
    }

    private Health.Builder up(long start) {
        return Health.up()
                .withDetail("capabilities", client.capabilities())
                .withDetail("latencyMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }
}
