package io.dlock.spring.boot.internal;

import io.dlock.Lease;
import io.dlock.LockClient;
import io.dlock.LockTimeoutException;
import io.dlock.core.Diagnostics;
import io.dlock.spi.DataLossFence;
import java.time.Duration;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The health check behind both Spring Boot lines' {@code dlock} health indicators, free of Spring
 * Boot's health types (they moved from {@code org.springframework.boot.actuate.health} in Boot 3 to
 * {@code org.springframework.boot.health.contributor} in Boot 4); each line's indicator turns a
 * {@link Report} into its own {@code Health}.
 *
 * <p>Each call makes a cheap check only: whether the client is connected yet (a lazily connecting
 * client is DOWN with its last connection error until it is). The real probe, one attempt without
 * waiting ({@code acquireAsync(Duration.ZERO)}) on a reserved lock name bounded by a timeout, is a
 * write on the backend; it runs at most once per probe interval, and the calls in between report
 * its cached result (detail {@code probeAgeMillis}).
 *
 * <p>Concurrency: one probe runs at a time, under {@link #probing} (a {@link ReentrantLock}, which
 * does not pin virtual threads); {@link #last} is volatile and read without it, so a fresh cached
 * result costs no lock.
 *
 * <p>Thread-safety: safe from any thread.
 */
public final class HealthCheck {
    /** Spring Boot's {@code Status.UP} code, the same on both lines. */
    public static final String UP = "UP";

    /** Spring Boot's {@code Status.DOWN} code. */
    public static final String DOWN = "DOWN";

    /** Spring Boot's {@code Status.UNKNOWN} code. */
    public static final String UNKNOWN = "UNKNOWN";

    private final LockClient client;
    private final String lockName;
    private final Duration timeout;
    private final long probeIntervalNanos;
    private final @Nullable String backend;
    private final @Nullable String redactedUri;
    private final ReentrantLock probing = new ReentrantLock();
    private volatile @Nullable Probe last;

    /**
     * A health result: a Spring Boot status code and the details in the order they were added.
     *
     * @param status {@link #UP}, {@link #DOWN} or {@link #UNKNOWN}
     * @param details the details, unmodifiable
     */
    public record Report(String status, Map<String, Object> details) {}

    private volatile Supplier<? extends Map<String, ?>> extra = Map::of;

    /** A probe's result and when it was taken ({@link System#nanoTime()}). */
    private record Probe(Report report, long at) {}

    /** Collects a report's details, as Spring Boot's {@code Health.Builder} does. */
    private static final class Builder {
        private final String status;
        private final Map<String, Object> details = new LinkedHashMap<>();

        Builder(String status) {
            this.status = status;
        }

        Builder detail(String key, Object value) {
            details.put(key, value);
            return this;
        }

        /** The detail {@code Health.Builder.withException} adds. */
        Builder exception(Throwable e) {
            return detail("error", e.getClass().getName() + ": " + e.getMessage());
        }

        Report build() {
            return new Report(status, Collections.unmodifiableMap(new LinkedHashMap<>(details)));
        }
    }

    /**
     * Creates the check.
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
    public HealthCheck(
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
     * Checks the backend: the connection state on every call, the probe at most once per probe
     * interval.
     *
     * <p>Blocking: while a lazy client's first connection attempt runs, up to the timeout; never
     * while it is not connected after that or a probe result is fresh; otherwise up to the timeout
     * (plus the release of a granted probe, at most the client's {@code connectTimeout}), or as long
     * as a concurrent call's probe. Thread-safety: safe from any thread. On failure: never throws;
     * a failure is reported as DOWN with the error.
     *
     * @return UP or DOWN, with the backend, the redacted URI and the client's capabilities
     */
    public Report check() {
        Report r = checkBackend();
        Map<String, ?> more = extra.get();
        if (more.isEmpty()) {
            return r;
        }
        Builder b = new Builder(r.status());
        r.details().forEach(b::detail);
        more.forEach(b::detail);
        return b.build();
    }

    /**
     * Adds details read on every check (the application's leader elections), after the backend's.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail; a supplier
     * that throws fails the check it runs in.
     *
     * @param details what to add; an empty map adds nothing
     */
    public void addDetails(Supplier<? extends Map<String, ?>> details) {
        extra = Objects.requireNonNull(details, "details");
    }

    private Report checkBackend() {
        if (client instanceof LazyLockClient lazy
                && lazy.state() == LazyLockClient.State.CONNECTING
                && !lazy.awaitFirstAttempt(timeout)) {
            return describe(new Builder(DOWN).detail("state", lazy.state().name()))
                    .detail("error", "first connection attempt still running after " + timeout)
                    .build();
        }
        if (client instanceof LazyLockClient lazy && lazy.state() != LazyLockClient.State.CONNECTED) {
            Builder down = new Builder(DOWN).detail("state", lazy.state().name());
            lazy.lastError().ifPresent(e -> down.detail("error", e.toString()));
            return describe(down).detail("connectAttempts", lazy.attempts()).build();
        }
        LockClient real = realClient();
        if (Diagnostics.connectionDown(real)) {
            // Known without a request: the client is reconnecting; a cached UP would hide it.
            return describe(new Builder(DOWN))
                    .detail("state", "reconnecting")
                    .detail("error", "the connection to the backend is down")
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
        Builder b = new Builder(p.report().status());
        p.report().details().forEach(b::detail);
        b.detail("probeAgeMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - p.at()));
        // Read on every call: the fence's end passes while a probe result is reused.
        Optional<DataLossFence> fence = Diagnostics.dataLossFence(real);
        if (fence.isPresent()) {
            b.detail(
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
        boolean fenceOver = "fenced".equals(p.report().details().get("probe"))
                && Diagnostics.dataLossFence(realClient()).isEmpty();
        return fenceOver ? null : p;
    }

    private Report probe() {
        long start = System.nanoTime();
        CompletableFuture<Lease> probe;
        try {
            probe = client.lock(lockName).acquireAsync(Duration.ZERO);
        } catch (RuntimeException e) {
            return describe(new Builder(DOWN).exception(e)).build();
        }
        try {
            Lease lease = probe.get(timeout.toNanos(), TimeUnit.NANOSECONDS);
            lease.close();
            return up(start).detail("probe", "granted").build();
        } catch (ExecutionException e) {
            if (e.getCause() instanceof LockTimeoutException) {
                // A data-loss fence refuses every grant for a while: not another holder.
                boolean fenced = Diagnostics.dataLossFence(realClient()).isPresent();
                return up(start)
                        .detail("probe", fenced ? "fenced" : "held by another client")
                        .build();
            }
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return describe(new Builder(DOWN).exception(cause)).build();
        } catch (TimeoutException e) {
            probe.cancel(false);
            return describe(new Builder(DOWN).detail("error", "no answer from the backend within " + timeout))
                    .build();
        } catch (InterruptedException e) {
            probe.cancel(false);
            Thread.currentThread().interrupt();
            return describe(new Builder(UNKNOWN).detail("error", "interrupted")).build();
        } catch (RuntimeException e) {
            return describe(new Builder(DOWN).exception(e)).build();
        }
    }

    private Builder up(long start) {
        return describe(new Builder(UP))
                .detail("capabilities", client.capabilities())
                .detail("latencyMillis", TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start));
    }

    private Builder describe(Builder b) {
        if (backend != null) {
            b.detail("backend", backend);
        }
        if (redactedUri != null) {
            b.detail("uri", redactedUri);
        }
        return b;
    }

    /** dlock's own client under a lazily connecting one, for {@link Diagnostics}. */
    private LockClient realClient() {
        return client instanceof LazyLockClient lazy ? lazy.connectedClient().orElse(client) : client;
    }
}
