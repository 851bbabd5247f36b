package io.dlock.spi;

import com.google.errorprone.annotations.concurrent.GuardedBy;
import java.time.Clock;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What one client knows of its backend's data-loss fences, for backends that keep them: each fence
 * a reply reported is recorded here, logged at WARN once, and offered to the engine ({@link
 * LockBackend#dataLossFence()}) so that timeouts, health and operators can say why nothing is
 * granted.
 *
 * <p>Logging: one WARN per fence, naming its scope, its end and why; where a backend has many scopes
 * (a Redis Cluster has one per hash slot), the first scope's WARN is followed by at most one summary
 * line per second ("fences on N more slots …"), never one line per scope. A scope is counted once
 * per run of fences however often replies report it, and the scopes a summary held back are logged
 * a second later even if no further notice comes (or before the next run's WARN), so none goes
 * unsaid.
 *
 * <p>Thread-safety: safe from any thread; every method is short and never blocks.
 */
public final class DataLossFences {
    private static final Logger log = LoggerFactory.getLogger(DataLossFences.class);
    private static final long SUMMARY_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final String backend;
    private final String scopeKind;
    private final Clock clock;
    /** Runs a deferred summary once its second has come (the JDK's shared delay thread). */
    private final Executor later;

    @GuardedBy("this")
    private @Nullable DataLossFence latest;

    @GuardedBy("this")
    private long lastSummaryNanos;
    /** Every scope noticed during the current run of fences (the first WARN's and the summarised). */
    @GuardedBy("this")
    private final Set<String> scopes = new HashSet<>();
    /** Scopes noticed but not yet in a log line, in the order noticed. */
    @GuardedBy("this")
    private final Set<String> unlogged = new LinkedHashSet<>();
    /** The latest fence among {@link #unlogged}, named by the summary. */
    @GuardedBy("this")
    private @Nullable DataLossFence lastUnlogged;

    @GuardedBy("this")
    private boolean flushScheduled;

    /**
     * Creates the record of one backend client.
     *
     * @param backend the backend's name, for log lines
     * @param scopeKind what a scope is, plural, for summary lines (for example {@code slots})
     */
    public DataLossFences(String backend, String scopeKind) {
        this(backend, scopeKind, Clock.systemUTC());
    }

    DataLossFences(String backend, String scopeKind, Clock clock) {
        this.backend = backend;
        this.scopeKind = scopeKind;
        this.clock = clock;
        this.later = CompletableFuture.delayedExecutor(SUMMARY_INTERVAL_NANOS, TimeUnit.NANOSECONDS);
    }

    /**
     * Records that a reply found {@code scope} fenced for {@code remainingMillis} more, logging it as
     * described in the class comment.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param scope what the fence covers
     * @param remainingMillis how long it still lasts, as the server reported it; ignored if not
     *     positive
     * @param reason why it exists
     */
    public void noticed(String scope, long remainingMillis, String reason) {
        if (remainingMillis <= 0) {
            return;
        }
        DataLossFence fence = new DataLossFence(scope, clock.instant().plusMillis(remainingMillis), reason);
        long now = System.nanoTime();
        String leftOver = null;
        String warn = null;
        String summary = null;
        boolean schedule = false;
        synchronized (this) {
            DataLossFence before = latest;
            boolean runOver = before == null || !before.until().isAfter(clock.instant());
            if (before == null || runOver || before.until().isBefore(fence.until())) {
                latest = fence;
            }
            if (runOver) {
                leftOver = takeSummary(); // the last run's scopes not yet logged: said before the new WARN
                scopes.clear();
                scopes.add(scope);
                lastSummaryNanos = now;
                warn = fence.describe();
            } else if (scopes.add(scope)) { // a scope seen again in this run is not counted twice
                unlogged.add(scope);
                lastUnlogged = fence;
                if (now - lastSummaryNanos >= SUMMARY_INTERVAL_NANOS) {
                    summary = takeSummary();
                    lastSummaryNanos = now;
                } else if (!flushScheduled) {
                    flushScheduled = true;
                    schedule = true;
                }
            }
        }
        if (leftOver != null) {
            log.warn("[backend={}] {}", backend, leftOver);
        }
        if (warn != null) {
            log.warn("[backend={}] {}; nothing is granted there until then", backend, warn);
        } else if (summary != null) {
            log.warn("[backend={}] {}", backend, summary);
        }
        if (schedule) {
            try {
                later.execute(this::flush);
            } catch (RuntimeException e) { // a JVM shutting down: the next notice says it instead
                synchronized (this) {
                    flushScheduled = false;
                }
            }
        }
    }

    /**
     * Logs the scopes noticed since the last line, if any: run a second after a notice the rate
     * limit held back, so that the last scopes of a run of fences are said even if no notice follows.
     */
    private void flush() {
        String summary;
        synchronized (this) {
            flushScheduled = false;
            summary = takeSummary();
            if (summary != null) {
                lastSummaryNanos = System.nanoTime();
            }
        }
        if (summary != null) {
            log.warn("[backend={}] {}", backend, summary);
        }
    }

    /** The summary line of {@link #unlogged}, which it empties; null when there is nothing to say. */
    @GuardedBy("this")
    private @Nullable String takeSummary() {
        DataLossFence last = lastUnlogged;
        if (unlogged.isEmpty() || last == null) {
            return null;
        }
        String line = "data-loss fences on " + unlogged.size() + " more " + scopeKind + " (the last " + last.scope()
                + " until " + last.until() + ")";
        unlogged.clear();
        lastUnlogged = null;
        return line;
    }

    /**
     * The fence that ends last among those noticed, if it has not ended yet.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return the fence, or empty when none is known to be in force
     */
    public Optional<DataLossFence> current() {
        DataLossFence f;
        synchronized (this) {
            f = latest;
        }
        return f != null && f.until().isAfter(clock.instant()) ? Optional.of(f) : Optional.empty();
    }
}
