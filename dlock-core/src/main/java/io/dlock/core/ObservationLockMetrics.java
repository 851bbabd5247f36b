package io.dlock.core;

import static io.dlock.LockMetricNames.ACQUIRE;
import static io.dlock.LockMetricNames.TAG_BACKEND;
import static io.dlock.LockMetricNames.TAG_KIND;
import static io.dlock.LockMetricNames.TAG_LOCK;
import static io.dlock.LockMetricNames.TAG_OUTCOME;

import io.dlock.spi.LockMode;
import io.micrometer.common.KeyValue;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;
import java.util.EnumMap;
import java.util.Objects;
import org.jspecify.annotations.Nullable;

/**
 * Each acquisition as a Micrometer observation named {@code dlock.acquire}: started on the calling
 * thread, so that it is a child of the caller's current observation (its span, with a tracing
 * handler), and stopped with the {@code outcome} key on whichever thread learned the outcome.
 * Errors (a backend failure, anything but an answer) are set as the observation's error; a
 * timeout (someone else holds the lock) and a cancelled attempt are not.
 * The key values are built once per client; only the lock name, when asked for, is per call.
 *
 * <p>Concurrency: the registry and observations are thread-safe; one observation is started by the
 * caller and stopped once, by the outcome's single completion.
 */
final class ObservationLockMetrics implements LockMetrics {
    private final ObservationRegistry registry;
    private final boolean perLockName;
    private final KeyValue backend;
    private final EnumMap<LockMode, KeyValue> kinds = new EnumMap<>(LockMode.class);
    /** By {@link LockMetrics#outcomeOf}. */
    private final KeyValue[] outcomes;

    private ObservationLockMetrics(ObservationRegistry registry, boolean perLockName, EngineClient client) {
        this.registry = registry;
        this.perLockName = perLockName;
        this.backend = KeyValue.of(TAG_BACKEND, client.backendName);
        for (LockMode m : LockMode.values()) {
            kinds.put(m, KeyValue.of(TAG_KIND, LockMetrics.kindOf(m)));
        }
        this.outcomes = new KeyValue[OUTCOME_COUNT];
        for (int i = 0; i < OUTCOME_COUNT; i++) {
            outcomes[i] = KeyValue.of(TAG_OUTCOME, LockMetrics.outcomeTag(i));
        }
    }

    /** Binds to {@code registry}, which must be a Micrometer {@code ObservationRegistry}. */
    static LockMetrics bind(Object registry, boolean perLockName, EngineClient client) {
        if (!(registry instanceof ObservationRegistry r)) {
            throw new IllegalArgumentException(
                    "observationRegistry must be an io.micrometer.observation.ObservationRegistry, not "
                            + registry.getClass().getName());
        }
        return new ObservationLockMetrics(r, perLockName, client);
    }

    @Override
    public boolean timesAcquisitions() {
        return true;
    }

    @Override
    public @Nullable Object acquireStarted(Acquisition a) {
        // Checked per call: handlers may be registered after the client connected.
        if (registry.isNoop()) {
            return null;
        }
        Observation o = Observation.createNotStarted(ACQUIRE, registry)
                .lowCardinalityKeyValue(backend)
                .lowCardinalityKeyValue(Objects.requireNonNull(kinds.get(a.mode)));
        if (perLockName) {
            o.highCardinalityKeyValue(TAG_LOCK, a.name);
        }
        return o.start();
    }

    @Override
    public void acquireEnded(Acquisition a, long nanos, @Nullable Throwable error, @Nullable Object started) {
        if (!(started instanceof Observation o)) {
            return;
        }
        int outcome = LockMetrics.outcomeOf(error);
        o.lowCardinalityKeyValue(outcomes[outcome]);
        // A timeout means someone else holds the lock (a skipped scheduled run, a busy resource): an
        // answer, not a failure, so it carries no error; only backend and other failures do.
        if (error != null && outcome == ERROR) {
            o.error(Acquisition.unwrap(error));
        }
        o.stop();
    }
}
