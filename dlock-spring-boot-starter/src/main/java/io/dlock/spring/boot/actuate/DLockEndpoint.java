package io.dlock.spring.boot.actuate;

import io.dlock.spring.boot.annotation.ActiveLocks;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.springframework.boot.actuate.endpoint.annotation.Endpoint;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;

/**
 * The {@code /actuator/dlock} endpoint: this application's held and waiting locks, as taken by
 * {@code @DistributedLock}/{@code @ScheduledLock} methods, with their fencing tokens. Expose it with
 * {@code management.endpoints.web.exposure.include=dlock}.
 *
 * <p>Thread-safety: safe from any thread; each read is a weakly consistent snapshot.
 */
@Endpoint(id = "dlock")
public final class DLockEndpoint {
    private final ActiveLocks active;

    /**
     * Creates the endpoint.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @param active the tracker the aspect fills
     */
    public DLockEndpoint(ActiveLocks active) {
        this.active = active;
    }

    /**
     * The held and waiting locks now.
     *
     * <p>Blocking: never. Thread-safety: safe from any thread. On failure: cannot fail.
     *
     * @return {@code held} and {@code waiting}, each a list oldest first
     */
    @ReadOperation
    public Map<String, List<ActiveLocks.Entry>> locks() {
        Map<String, List<ActiveLocks.Entry>> out = new LinkedHashMap<>();
        out.put("held", active.held());
        out.put("waiting", active.waiting());
        return out;
    }
}
