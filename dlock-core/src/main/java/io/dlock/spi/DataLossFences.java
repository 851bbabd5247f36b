package io.dlock.spi;

import java.time.Clock;
import java.util.Optional;
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
 * line per second ("fences on N more slots …"), never one line per scope.
 *
 * <p>Thread-safety: safe from any thread; every method is short and never blocks.
 */
public final class DataLossFences {
    private static final Logger log = LoggerFactory.getLogger(DataLossFences.class);
    private static final long SUMMARY_INTERVAL_NANOS = TimeUnit.SECONDS.toNanos(1);

    private final String backend;
    private final String scopeKind;
    private final Clock clock;

    private @Nullable DataLossFence latest;
    private long lastSummaryNanos;
    private int unloggedScopes;
    private @Nullable String lastScope;

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
        String warn = null;
        String summary = null;
        synchronized (this) {
            DataLossFence before = latest;
            boolean runOver = before == null || !before.until().isAfter(clock.instant());
            if (before == null || runOver || before.until().isBefore(fence.until())) {
                latest = fence;
            }
            if (runOver) {
                lastSummaryNanos = now;
                unloggedScopes = 0;
                lastScope = scope;
                warn = fence.describe();
            } else if (!scope.equals(lastScope)) {
                lastScope = scope;
                unloggedScopes++;
                if (now - lastSummaryNanos >= SUMMARY_INTERVAL_NANOS) {
                    summary = "data-loss fences on " + unloggedScopes + " more " + scopeKind + " (the last " + scope
                            + " until " + fence.until() + ")";
                    unloggedScopes = 0;
                    lastSummaryNanos = now;
                }
            }
        }
        if (warn != null) {
            log.warn("[backend={}] {}; nothing is granted there until then", backend, warn);
        } else if (summary != null) {
            log.warn("[backend={}] {}", backend, summary);
        }
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
