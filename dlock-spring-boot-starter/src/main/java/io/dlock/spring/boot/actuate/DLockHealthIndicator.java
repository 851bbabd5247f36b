package io.dlock.spring.boot.actuate;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.core.Diagnostics;
import io.dlock.spi.DataLossFence;
import io.dlock.spring.boot.internal.LazyLockClient;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.health.Health;
import org.springframework.boot.actuate.health.HealthIndicator;

/**
 * Health of the lock backend, as actuator's {@code dlock} component.
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
 * it (with a {@link ReentrantLock}, which does not pin virtual threads).
 */
public final class DLockHealthIndicator implements HealthIndicator {
    /** The probe interval of the older constructor: every call probes. */
    private static final Duration EVERY_CALL = Duration.ZERO;

    private final LockClient client;
    private final String lockName;
    private final Duration timeout;
    private final long probeIntervalNanos;
    private final @Nullable String backend;
    private final @Nullable String redactedUri;
    private final ReentrantLock probing = new ReentrantLock();
    private volatile @Nullable Probe last;

    /** A probe's result and when it was taken ({@link System#nanoTime()}). */
    private record Probe(Health health, long at) {}

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
        this(client, lockName, timeout, EVERY_CALL, null, null);
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
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("dlock.health.timeout must be positive: " + timeout);
        }
        if (probeInterval == null || probeInterval.isNegative()) {
            throw new IllegalArgumentException("dlock.health.probe-interval must not be negative: " + probeInterval);
        }
        client.lock(lockName); // validates the name now rather than at the first check
        this.client = client;
        this.lockName = lockName;
        this.timeout = timeout;
        this.probeIntervalNanos = probeInterval.toNanos();
        this.backend = backend;
        this.redactedUri = redactedUri;
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
    @Override
    public Health health() {
        if (client instanceof LazyLockClient lazy
                && lazy.state() == LazyLockClient.State.CONNECTING
                && !lazy.awaitFirstAttempt(timeout)) {
            return describe(Health.down().withDetail("state", lazy.state().name()))
                    .withDetail("error", "first connection attempt still running after " + timeout)
                    .build();
        }
        if (client instanceof LazyLockClient lazy && lazy.state() != LazyLockClient.State.CONNECTED) {
            Health.Builder down = Health.down().withDetail("state", lazy.state().name());
            lazy.lastError().ifPresent(e -> down.withDetail("error", e.toString()));
            return describe(down).withDetail("connectAttempts", lazy.attempts()).build();
        }
        LockClient real = realClient();
        if (Diagnostics.connectionDown(real)) {
            // Known without a request: the client is reconnecting; a cached UP would hide it.
            return describe(Health.down())
                    .withDetail("state", "reconnecting")
                    .withDetail("error", "the connection to the backend is down")
                    .build();
        }
        Probe p = fresh();
        if (p == null) {
            probing.lock();
            try {
                p = fresh();
                if (p == null) {
                    p = new Probe(probe(), System.nanoTime());
                    last = p;
                }
            } finally {
                probing.unlock();
            }
        }
        Health.Builder b =
                Health.status(p.health().getStatus()).withDetails(p.health().getDetails());
        b.withDetail("probeAgeMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - p.at()));
        // Read on every call: the fence's end passes while a probe result is reused.
        Optional<DataLossFence> fence = Diagnostics.dataLossFence(real);
        if (fence.isPresent()) {
            b.withDetail(
                    "fence",
                    "fenced until " + fence.get().until() + ": " + fence.get().describe());
        }
        return b.build();
    }

    private @Nullable Probe fresh() {
        Probe p = last;
        if (p == null || System.nanoTime() - p.at() >= probeIntervalNanos) {
            return null;
        }
        // A probe refused by a fence that has ended since says nothing about the backend now.
        boolean fenceOver = "fenced".equals(p.health().getDetails().get("probe"))
                && Diagnostics.dataLossFence(realClient()).isEmpty();
        return fenceOver ? null : p;
    }

    private Health probe() {
        long start = System.nanoTime();
        CompletableFuture<Lease> probe;
        try {
            probe = client.lock(lockName).acquireAsync(Duration.ZERO);
        } catch (RuntimeException e) {
            return describe(Health.down(e)).build();
        }
        try {
            Lease lease = probe.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            lease.close();
            return up(start).withDetail("probe", "granted").build();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof LockTimeoutException) {
                // A data-loss fence refuses every grant for a while: not another holder.
                boolean fenced = Diagnostics.dataLossFence(realClient()).isPresent();
                return up(start)
                        .withDetail("probe", fenced ? "fenced" : "held by another client")
                        .build();
            }
            return describe(Health.down().withException(e.getCause())).build();
        } catch (TimeoutException e) {
            probe.cancel(false);
            return describe(Health.down().withDetail("error", "no answer from the backend within " + timeout))
                    .build();
        } catch (InterruptedException e) {
            probe.cancel(false);
            Thread.currentThread().interrupt();
            return describe(Health.unknown().withDetail("error", "interrupted")).build();
        } catch (RuntimeException e) {
            return describe(Health.down(e)).build();
        }
    }

    private Health.Builder up(long start) {
        return describe(Health.up())
                .withDetail("capabilities", client.capabilities())
                .withDetail("latencyMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    private Health.Builder describe(Health.Builder b) {
        if (backend != null) {
            b.withDetail("backend", backend);
        }
        if (redactedUri != null) {
            b.withDetail("uri", redactedUri);
        }
        return b;
    }

    /** dlock's own client under a lazily connecting one, for {@link Diagnostics}. */
    private LockClient realClient() {
        return client instanceof LazyLockClient lazy ? lazy.connectedClient().orElse(client) : client;
    }
}
