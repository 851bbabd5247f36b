package io.dlock.spring.boot.actuate;

import io.dlock.spring.boot.annotation.ActiveLocks;
import io.dlock.spring.boot.leader.LeaderElections;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * The {@code /actuator/dlock} endpoint: this application's held and waiting locks, as taken by
 * {@code @DistributedLock}/{@code @ScheduledLock} methods, with their fencing tokens, and its part
 * in each leader election. Expose it with
 * {@code management.endpoints.web.exposure.include=dlock}.
 *
 * <p>Thread-safety: safe from any thread; each read is a weakly consistent snapshot.
 */
@Endpoint(id = "dlock")
public final class DLockEndpoint {
    private final ActiveLocks active;
    private final @Nullable LeaderElections elections;

    /**
     * Creates the endpoint.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param active the tracker the aspect fills
     */
    public DLockEndpoint(ActiveLocks active) {
        this(active, null);
    }

    /**
     * Creates the endpoint with the application's leader elections.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param active the tracker the aspect fills
     * @param elections the elections, or null for none
     */
    public DLockEndpoint(ActiveLocks active, @Nullable LeaderElections elections) {
        this.active = active;
        this.elections = elections;
    }

    /**
     * The held and waiting locks now.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return {@code held} and {@code waiting}, each a list oldest first, and {@code elections}:
     *     per election this instance takes part in, {@code leader} (whether it leads) and {@code
     *     term} (its term number while it leads, else null)
     */
    @ReadOperation
    public Map<String, Object> locks() {
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("held", active.held());
        out.put("waiting", active.waiting());
        Map<String, Map<String, Object>> parts = new LinkedHashMap<>();
        if (elections != null) {
            elections.terms().forEach((name, term) -> {
                Map<String, Object> part = new LinkedHashMap<>();
                part.put("leader", term != 0);
                part.put("term", term == 0 ? null : term);
                parts.put(name, part);
            });
        }
        out.put("elections", parts);
        return out;
    }
}
